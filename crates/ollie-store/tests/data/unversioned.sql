-- A store as ollie wrote it before stores recorded their schema version (the schema of
-- commit 7638464), with one run, the naive candidate and one rejected candidate.
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    spec_path TEXT NOT NULL,
    spec_source TEXT NOT NULL,
    kernel TEXT NOT NULL,
    options TEXT NOT NULL,
    seed INTEGER NOT NULL,
    naive_seconds REAL NOT NULL,
    floor_seconds REAL NOT NULL,
    started_at INTEGER NOT NULL,
    elapsed_seconds REAL NOT NULL DEFAULT 0,
    evaluations INTEGER NOT NULL DEFAULT 0,
    finished INTEGER NOT NULL DEFAULT 0,
    best INTEGER,
    current INTEGER,
    summary TEXT
);
CREATE TABLE IF NOT EXISTS candidates (
    id INTEGER PRIMARY KEY,
    run INTEGER NOT NULL REFERENCES runs(id),
    evaluation INTEGER NOT NULL,
    source_hash TEXT NOT NULL,
    source TEXT NOT NULL,
    flags TEXT NOT NULL,
    schedule TEXT NOT NULL,
    graph TEXT NOT NULL DEFAULT '',
    parent INTEGER REFERENCES candidates(id),
    proposer TEXT NOT NULL,
    at_seconds REAL NOT NULL,
    moved INTEGER NOT NULL,
    new_best INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS verdicts (
    candidate INTEGER PRIMARY KEY REFERENCES candidates(id),
    accepted INTEGER NOT NULL,
    reason TEXT,
    detail TEXT
);
CREATE TABLE IF NOT EXISTS timings (
    candidate INTEGER PRIMARY KEY REFERENCES candidates(id),
    estimate REAL NOT NULL,
    seconds REAL NOT NULL, p10 REAL NOT NULL, p90 REAL NOT NULL,
    ratio REAL NOT NULL, ratio_p10 REAL NOT NULL, ratio_p90 REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS counterexamples (
    id INTEGER PRIMARY KEY,
    run INTEGER NOT NULL REFERENCES runs(id),
    candidate INTEGER NOT NULL REFERENCES candidates(id),
    shapes TEXT NOT NULL,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS prompts (
    hash TEXT PRIMARY KEY,
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS llm_calls (
    id INTEGER PRIMARY KEY,
    run INTEGER NOT NULL REFERENCES runs(id),
    conversation INTEGER NOT NULL,
    turn INTEGER NOT NULL,
    prompt_hash TEXT NOT NULL REFERENCES prompts(hash),
    model TEXT NOT NULL,
    reply TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost REAL,
    seconds REAL NOT NULL,
    attempts INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT,
    source_hash TEXT,
    at_seconds REAL NOT NULL
);
INSERT INTO runs (id, spec_path, spec_source, kernel, options, seed, naive_seconds, floor_seconds, started_at, elapsed_seconds, evaluations, finished, best, current, summary)
VALUES (1, 'softmax.py', 'def softmax(x): ...', 'softmax', '{"dims": []}', 42, 0.002, 0.0001, 1764000000, 12.5, 1, 0, 1, 1, NULL);
INSERT INTO candidates (id, run, evaluation, source_hash, source, flags, schedule, graph, parent, proposer, at_seconds, moved, new_best)
VALUES (1, 1, 0, 'aaaa', 'void softmax(void) {}', '-O3', '', '', NULL, 'naive', 0.0, 1, 1),
       (2, 1, 1, 'bbbb', 'void softmax(void) { /* 1 */ }', '-O3', 'parallel i0', '', 1, 'mutate', 3.5, 0, 0);
INSERT INTO verdicts (candidate, accepted, reason, detail) VALUES (1, 1, NULL, NULL), (2, 0, 'inaccurate', 'off by one');
INSERT INTO timings (candidate, estimate, seconds, p10, p90, ratio, ratio_p10, ratio_p90) VALUES (1, 0.002, 0.002, 0.002, 0.002, 1.0, 1.0, 1.0);
INSERT INTO counterexamples (id, run, candidate, shapes, data) VALUES (1, 1, 2, '[]', X'000000000000F03F');
