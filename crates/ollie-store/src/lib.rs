//! The search's record in SQLite (`ollie.db` in the output directory): runs, candidates (source
//! hash, source, flags, schedule, parent, proposer), verdicts, timings, counterexamples, and the
//! LLM calls made (prompt by hash, with each distinct prompt's text once; reply, tokens, outcome).
//!
//! Every evaluation is written in one transaction, together with the run's progress (elapsed
//! time, evaluations, best and current candidate), so a search killed at any moment resumes from
//! its last finished evaluation with nothing lost.

use std::path::Path;

use rusqlite::{params, Connection};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the store: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("the store has no run {0}")]
    NoRun(i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(pub i64);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CandidateId(pub i64);

/// What a run was started with.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    pub spec_path: String,
    pub spec_source: String,
    pub kernel: String,
    /// The command's options as JSON (budgets, seed, targets), for `--resume` and the report.
    pub options: String,
    pub seed: u64,
    pub naive_seconds: f64,
    pub floor_seconds: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub id: RunId,
    pub new: NewRun,
    /// Unix time the run started.
    pub started_at: i64,
    /// Search time spent so far, over all sessions.
    pub elapsed_seconds: f64,
    pub evaluations: usize,
    pub finished: bool,
    pub best: Option<CandidateId>,
    pub current: Option<CandidateId>,
    /// The outcome written when the run finished (JSON, the driver's own format).
    pub summary: Option<String>,
}

/// A candidate and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub evaluation: usize,
    pub source_hash: String,
    pub source: String,
    pub flags: String,
    pub schedule: String,
    /// The text of the graph the schedule is of, when it is a variant of the spec's (found by
    /// rewriting); empty for the spec's own graph.
    pub graph: String,
    pub parent: Option<CandidateId>,
    pub proposer: String,
    /// Search time when its evaluation finished.
    pub at_seconds: f64,
    pub accepted: bool,
    /// Why it was rejected: a short kind (`compile-error`, `inaccurate`, ...).
    pub reason: Option<String>,
    pub detail: Option<String>,
    pub timing: Option<TimingRecord>,
    /// The chain moved to it.
    pub moved: bool,
    pub new_best: bool,
}

/// The candidate's median call time and its interleaved ratio against the chain's current
/// candidate (median, p10, p90), and its time on the chain's scale: the current candidate's
/// estimate times the ratio (interleaved ratios are steadier than times measured minutes apart
/// on a shared machine).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimingRecord {
    pub estimate: f64,
    pub seconds: f64,
    pub p10: f64,
    pub p90: f64,
    pub ratio: f64,
    pub ratio_p10: f64,
    pub ratio_p90: f64,
}

/// Inputs that made a candidate fail, as raw little-endian f64 with their shapes.
#[derive(Debug, Clone, PartialEq)]
pub struct Counterexample {
    pub shapes: Vec<Vec<usize>>,
    pub data: Vec<Vec<f64>>,
}

/// One call to an LLM endpoint and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmCall {
    /// Calls of one conversation (a shot and its repair turns) share it.
    pub conversation: u64,
    pub turn: u32,
    pub prompt_hash: String,
    /// The whole request's messages, as JSON.
    pub prompt: String,
    pub model: String,
    pub reply: Option<String>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// In dollars, where known.
    pub cost: Option<f64>,
    pub seconds: f64,
    pub attempts: u32,
    /// `kernel` (a candidate was extracted), `duplicate` (the same kernel as one awaiting its
    /// verdict), or why there is none: `no-code`, `wrong-symbol`, `timeout`, ...
    pub outcome: String,
    pub detail: Option<String>,
    /// The extracted candidate's source hash (its verdict is the candidate's).
    pub source_hash: Option<String>,
    pub at_seconds: f64,
}

pub struct Store {
    conn: Connection,
}

const SCHEMA: &str = "
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
";

impl Store {
    /// Opens (creating if needed) the store at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.execute_batch(SCHEMA)?;
        // Stores written before candidates recorded their graph variant: every candidate there
        // is of the spec's own graph.
        let has_graph: bool = conn.prepare("SELECT 1 FROM pragma_table_info('candidates') WHERE name = 'graph'")?.exists([])?;
        if !has_graph {
            conn.execute_batch("ALTER TABLE candidates ADD COLUMN graph TEXT NOT NULL DEFAULT ''")?;
        }
        Ok(Store { conn })
    }

    pub fn create_run(&mut self, run: &NewRun, started_at: i64) -> Result<RunId, StoreError> {
        self.conn.execute(
            "INSERT INTO runs (spec_path, spec_source, kernel, options, seed, naive_seconds, floor_seconds, started_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![run.spec_path, run.spec_source, run.kernel, run.options, run.seed as i64, run.naive_seconds, run.floor_seconds, started_at],
        )?;
        Ok(RunId(self.conn.last_insert_rowid()))
    }

    /// Records one finished evaluation and the run's progress after it, atomically. `best` and
    /// `current` name the chain's state after this evaluation (`None`: this candidate).
    pub fn record(
        &mut self,
        run: RunId,
        candidate: &Candidate,
        counterexample: Option<&Counterexample>,
        best: Option<CandidateId>,
        current: Option<CandidateId>,
        elapsed_seconds: f64,
    ) -> Result<CandidateId, StoreError> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO candidates (run, evaluation, source_hash, source, flags, schedule, graph, parent, proposer, at_seconds, moved, new_best) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                run.0,
                candidate.evaluation as i64,
                candidate.source_hash,
                candidate.source,
                candidate.flags,
                candidate.schedule,
                candidate.graph,
                candidate.parent.map(|p| p.0),
                candidate.proposer,
                candidate.at_seconds,
                candidate.moved,
                candidate.new_best
            ],
        )?;
        let id = CandidateId(tx.last_insert_rowid());
        tx.execute("INSERT INTO verdicts (candidate, accepted, reason, detail) VALUES (?1, ?2, ?3, ?4)", params![id.0, candidate.accepted, candidate.reason, candidate.detail])?;
        if let Some(t) = &candidate.timing {
            tx.execute(
                "INSERT INTO timings (candidate, estimate, seconds, p10, p90, ratio, ratio_p10, ratio_p90) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![id.0, t.estimate, t.seconds, t.p10, t.p90, t.ratio, t.ratio_p10, t.ratio_p90],
            )?;
        }
        if let Some(c) = counterexample {
            let shapes = c.shapes.iter().map(|s| format!("[{}]", s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x"))).collect::<String>();
            let data: Vec<u8> = c.data.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
            tx.execute("INSERT INTO counterexamples (run, candidate, shapes, data) VALUES (?1, ?2, ?3, ?4)", params![run.0, id.0, shapes, data])?;
        }
        tx.execute(
            "UPDATE runs SET elapsed_seconds = ?2, evaluations = MAX(evaluations, ?3), best = ?4, current = ?5 WHERE id = ?1",
            params![run.0, elapsed_seconds, candidate.evaluation as i64, best.unwrap_or(id).0, current.unwrap_or(id).0],
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// Marks the run finished with its total search time and its outcome.
    pub fn finish(&mut self, run: RunId, elapsed_seconds: f64, summary: &str) -> Result<(), StoreError> {
        self.conn.execute("UPDATE runs SET finished = 1, elapsed_seconds = ?2, summary = ?3 WHERE id = ?1", params![run.0, elapsed_seconds, summary])?;
        Ok(())
    }

    pub fn runs(&self) -> Result<Vec<Run>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, spec_path, spec_source, kernel, options, seed, naive_seconds, floor_seconds, started_at, elapsed_seconds, evaluations, finished, best, current, summary FROM runs ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(Run {
                id: RunId(r.get(0)?),
                new: NewRun {
                    spec_path: r.get(1)?,
                    spec_source: r.get(2)?,
                    kernel: r.get(3)?,
                    options: r.get(4)?,
                    seed: r.get::<_, i64>(5)? as u64,
                    naive_seconds: r.get(6)?,
                    floor_seconds: r.get(7)?,
                },
                started_at: r.get(8)?,
                elapsed_seconds: r.get(9)?,
                evaluations: r.get::<_, i64>(10)? as usize,
                finished: r.get(11)?,
                best: r.get::<_, Option<i64>>(12)?.map(CandidateId),
                current: r.get::<_, Option<i64>>(13)?.map(CandidateId),
                summary: r.get(14)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn run(&self, id: RunId) -> Result<Run, StoreError> {
        self.runs()?.into_iter().find(|r| r.id == id).ok_or(StoreError::NoRun(id.0))
    }

    /// The run's candidates in the order they were evaluated.
    pub fn candidates(&self, run: RunId) -> Result<Vec<(CandidateId, Candidate)>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT c.id, c.evaluation, c.source_hash, c.source, c.flags, c.schedule, c.parent, c.proposer, c.at_seconds, c.moved, c.new_best,
                    v.accepted, v.reason, v.detail, t.seconds, t.p10, t.p90, t.ratio, t.ratio_p10, t.ratio_p90, t.estimate, c.graph
             FROM candidates c JOIN verdicts v ON v.candidate = c.id LEFT JOIN timings t ON t.candidate = c.id
             WHERE c.run = ?1 ORDER BY c.id",
        )?;
        let rows = stmt.query_map([run.0], |r| {
            let timing = match r.get::<_, Option<f64>>(14)? {
                Some(seconds) => Some(TimingRecord { estimate: r.get(20)?, seconds, p10: r.get(15)?, p90: r.get(16)?, ratio: r.get(17)?, ratio_p10: r.get(18)?, ratio_p90: r.get(19)? }),
                None => None,
            };
            Ok((
                CandidateId(r.get(0)?),
                Candidate {
                    evaluation: r.get::<_, i64>(1)? as usize,
                    source_hash: r.get(2)?,
                    source: r.get(3)?,
                    flags: r.get(4)?,
                    schedule: r.get(5)?,
                    graph: r.get(21)?,
                    parent: r.get::<_, Option<i64>>(6)?.map(CandidateId),
                    proposer: r.get(7)?,
                    at_seconds: r.get(8)?,
                    moved: r.get(9)?,
                    new_best: r.get(10)?,
                    accepted: r.get(11)?,
                    reason: r.get(12)?,
                    detail: r.get(13)?,
                    timing,
                },
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The run's saved counterexamples, oldest first.
    pub fn counterexamples(&self, run: RunId) -> Result<Vec<Counterexample>, StoreError> {
        let mut stmt = self.conn.prepare("SELECT shapes, data FROM counterexamples WHERE run = ?1 ORDER BY id")?;
        let rows = stmt.query_map([run.0], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?)))?;
        let mut out = Vec::new();
        for row in rows {
            let (shapes, bytes) = row?;
            // `[64x4096][]`: one bracketed shape per input, `[]` for a scalar.
            let shapes: Vec<Vec<usize>> = shapes
                .split(']')
                .filter_map(|s| s.strip_prefix('['))
                .map(|s| s.split('x').filter(|d| !d.is_empty()).filter_map(|d| d.parse().ok()).collect())
                .collect();
            let mut values = bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")));
            let data = shapes.iter().map(|s| values.by_ref().take(s.iter().product()).collect()).collect();
            out.push(Counterexample { shapes, data });
        }
        Ok(out)
    }

    /// Records one LLM call (its prompt's text once per distinct prompt).
    pub fn record_llm_call(&mut self, run: RunId, call: &LlmCall) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        tx.execute("INSERT OR IGNORE INTO prompts (hash, text) VALUES (?1, ?2)", params![call.prompt_hash, call.prompt])?;
        tx.execute(
            "INSERT INTO llm_calls (run, conversation, turn, prompt_hash, model, reply, prompt_tokens, completion_tokens, cost, seconds, attempts, outcome, detail, source_hash, at_seconds)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            params![
                run.0,
                call.conversation as i64,
                call.turn,
                call.prompt_hash,
                call.model,
                call.reply,
                call.prompt_tokens as i64,
                call.completion_tokens as i64,
                call.cost,
                call.seconds,
                call.attempts,
                call.outcome,
                call.detail,
                call.source_hash,
                call.at_seconds
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The run's LLM calls in the order they finished.
    pub fn llm_calls(&self, run: RunId) -> Result<Vec<LlmCall>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT l.conversation, l.turn, l.prompt_hash, p.text, l.model, l.reply, l.prompt_tokens, l.completion_tokens, l.cost, l.seconds, l.attempts, l.outcome, l.detail, l.source_hash, l.at_seconds
             FROM llm_calls l JOIN prompts p ON p.hash = l.prompt_hash WHERE l.run = ?1 ORDER BY l.id",
        )?;
        let rows = stmt.query_map([run.0], |r| {
            Ok(LlmCall {
                conversation: r.get::<_, i64>(0)? as u64,
                turn: r.get(1)?,
                prompt_hash: r.get(2)?,
                prompt: r.get(3)?,
                model: r.get(4)?,
                reply: r.get(5)?,
                prompt_tokens: r.get::<_, i64>(6)? as u64,
                completion_tokens: r.get::<_, i64>(7)? as u64,
                cost: r.get(8)?,
                seconds: r.get(9)?,
                attempts: r.get(10)?,
                outcome: r.get(11)?,
                detail: r.get(12)?,
                source_hash: r.get(13)?,
                at_seconds: r.get(14)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
