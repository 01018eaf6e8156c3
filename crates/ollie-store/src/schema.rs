//! The store's schema, as numbered migrations both backends apply in order. A store records the
//! version it is at; opening it applies what it lacks, in one transaction, so two processes
//! opening one new PostgreSQL store at once do not both create it. A store written by a newer
//! ollie is refused, not altered.

use crate::backend::{Backend, Dialect};
use crate::StoreError;

/// Migration `k` (from 0) takes a store from version `k` to `k + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: a run, its candidates with their verdicts and timings, its counterexamples and LLM calls.
    "
CREATE TABLE runs (
    id {id},
    spec_path TEXT NOT NULL,
    spec_source TEXT NOT NULL,
    kernel TEXT NOT NULL,
    options TEXT NOT NULL,
    seed BIGINT NOT NULL,
    naive_seconds DOUBLE PRECISION NOT NULL,
    floor_seconds DOUBLE PRECISION NOT NULL,
    started_at BIGINT NOT NULL,
    elapsed_seconds DOUBLE PRECISION NOT NULL DEFAULT 0,
    evaluations BIGINT NOT NULL DEFAULT 0,
    finished BIGINT NOT NULL DEFAULT 0,
    best BIGINT,
    current BIGINT,
    summary TEXT
);
CREATE TABLE candidates (
    id {id},
    run BIGINT NOT NULL REFERENCES runs(id),
    evaluation BIGINT NOT NULL,
    source_hash TEXT NOT NULL,
    source TEXT NOT NULL,
    flags TEXT NOT NULL,
    schedule TEXT NOT NULL,
    graph TEXT NOT NULL DEFAULT '',
    parent BIGINT REFERENCES candidates(id),
    proposer TEXT NOT NULL,
    at_seconds DOUBLE PRECISION NOT NULL,
    moved BIGINT NOT NULL,
    new_best BIGINT NOT NULL
);
CREATE TABLE verdicts (
    candidate BIGINT PRIMARY KEY REFERENCES candidates(id),
    accepted BIGINT NOT NULL,
    reason TEXT,
    detail TEXT
);
CREATE TABLE timings (
    candidate BIGINT PRIMARY KEY REFERENCES candidates(id),
    estimate DOUBLE PRECISION NOT NULL,
    seconds DOUBLE PRECISION NOT NULL, p10 DOUBLE PRECISION NOT NULL, p90 DOUBLE PRECISION NOT NULL,
    ratio DOUBLE PRECISION NOT NULL, ratio_p10 DOUBLE PRECISION NOT NULL, ratio_p90 DOUBLE PRECISION NOT NULL
);
CREATE TABLE counterexamples (
    id {id},
    run BIGINT NOT NULL REFERENCES runs(id),
    candidate BIGINT NOT NULL REFERENCES candidates(id),
    shapes TEXT NOT NULL,
    data {blob} NOT NULL
);
CREATE TABLE prompts (
    hash TEXT PRIMARY KEY,
    text TEXT NOT NULL
);
CREATE TABLE llm_calls (
    id {id},
    run BIGINT NOT NULL REFERENCES runs(id),
    conversation BIGINT NOT NULL,
    turn BIGINT NOT NULL,
    prompt_hash TEXT NOT NULL REFERENCES prompts(hash),
    model TEXT NOT NULL,
    reply TEXT,
    prompt_tokens BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    cost DOUBLE PRECISION,
    seconds DOUBLE PRECISION NOT NULL,
    attempts BIGINT NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT,
    source_hash TEXT,
    at_seconds DOUBLE PRECISION NOT NULL
);
",
    // 2: sources kept as blocks, each distinct block once: a candidate's source is the texts its
    // `blocks` name, joined by blank lines (most of a generated kernel is a prelude every
    // candidate shares: 38 KB a candidate before, 2 KB after on a softmax). Rows written before
    // keep theirs in `source`.
    "
CREATE TABLE texts (
    hash TEXT PRIMARY KEY,
    text TEXT NOT NULL
);
ALTER TABLE candidates ADD COLUMN blocks TEXT;
",
    // 3: workers, each with its own chain (a run's best, current and evaluation count move here
    // from `runs`, whose columns for them stay unread), and leases on the candidates being
    // judged; the host that claimed the final phase.
    "
CREATE TABLE workers (
    id {id},
    run BIGINT NOT NULL REFERENCES runs(id),
    host TEXT NOT NULL,
    pid BIGINT NOT NULL,
    seed BIGINT NOT NULL,
    joined_at DOUBLE PRECISION NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL,
    left_at DOUBLE PRECISION,
    evaluations BIGINT NOT NULL DEFAULT 0,
    best BIGINT,
    current BIGINT,
    elapsed_seconds DOUBLE PRECISION NOT NULL DEFAULT 0
);
INSERT INTO workers (run, host, pid, seed, joined_at, seen_at, left_at, evaluations, best, current, elapsed_seconds)
    SELECT id, '', 0, seed, started_at, started_at, started_at, evaluations, best, current, elapsed_seconds FROM runs;
ALTER TABLE candidates ADD COLUMN worker BIGINT REFERENCES workers(id);
UPDATE candidates SET worker = (SELECT w.id FROM workers w WHERE w.run = candidates.run);
CREATE INDEX candidates_run ON candidates (run);
CREATE TABLE leases (
    id {id},
    run BIGINT NOT NULL REFERENCES runs(id),
    worker BIGINT NOT NULL REFERENCES workers(id),
    token BIGINT NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    schedule TEXT NOT NULL,
    graph TEXT NOT NULL,
    flags TEXT NOT NULL,
    source TEXT NOT NULL,
    takeovers BIGINT NOT NULL DEFAULT 0,
    candidate BIGINT REFERENCES candidates(id)
);
CREATE INDEX leases_open ON leases (run, candidate);
ALTER TABLE runs ADD COLUMN finisher TEXT;
",
    // 4: what the cost model predicted of a timed candidate before it was measured, how many
    // timings it had been fitted on then, and, in a round measured whole to judge the model's
    // choice, the round and whether the model picked the candidate.
    "
ALTER TABLE timings ADD COLUMN predicted DOUBLE PRECISION;
ALTER TABLE timings ADD COLUMN trained_on BIGINT;
ALTER TABLE timings ADD COLUMN ablation_round BIGINT;
ALTER TABLE timings ADD COLUMN picked BIGINT;
",
];

/// Every table, in the order they were created.
pub(crate) const TABLES: &[&str] = &["ollie_schema", "runs", "candidates", "verdicts", "timings", "counterexamples", "prompts", "llm_calls", "texts", "workers", "leases"];

/// The version a store is at once this ollie has opened it.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// Brings the store to [`LATEST`].
pub(crate) fn migrate(db: &mut dyn Backend) -> Result<i64, StoreError> {
    db.begin()?;
    match upgrade(db) {
        Ok(version) => {
            db.script("COMMIT")?;
            Ok(version)
        }
        Err(e) => {
            // The error that matters is the first; a failed rollback adds nothing to it.
            let _ = db.script("ROLLBACK");
            Err(e)
        }
    }
}

fn upgrade(db: &mut dyn Backend) -> Result<i64, StoreError> {
    let dialect = db.dialect();
    if dialect == Dialect::Postgres {
        // Processes opening one store at once wait here for the first to finish migrating.
        db.query("SELECT pg_advisory_xact_lock(7011)", &[])?;
    }
    db.script("CREATE TABLE IF NOT EXISTS ollie_schema (version BIGINT NOT NULL)")?;
    let found = match db.query("SELECT version FROM ollie_schema", &[])?.first() {
        Some(row) => row.i64(0)?,
        None => {
            let version = unversioned(db)?;
            db.execute("INSERT INTO ollie_schema (version) VALUES ($1)", &[version.into()])?;
            version
        }
    };
    if found > LATEST {
        return Err(StoreError::Newer { found, known: LATEST });
    }
    for (k, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tracing::info!(version = k + 1, "migrating the store");
        db.script(&dialect.ddl(sql))?;
    }
    db.execute("UPDATE ollie_schema SET version = $1", &[LATEST.into()])?;
    Ok(LATEST)
}

/// The version of a store from before stores recorded theirs: 0 if it is empty, 1 if it holds
/// the first schema's tables (SQLite only; the oldest of them lack `candidates.graph`, added
/// here as version 1 has it).
fn unversioned(db: &mut dyn Backend) -> Result<i64, StoreError> {
    if db.dialect() != Dialect::Sqlite || db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'", &[])?.is_empty() {
        return Ok(0);
    }
    if db.query("SELECT 1 FROM pragma_table_info('candidates') WHERE name = 'graph'", &[])?.is_empty() {
        db.script("ALTER TABLE candidates ADD COLUMN graph TEXT NOT NULL DEFAULT ''")?;
    }
    Ok(1)
}
