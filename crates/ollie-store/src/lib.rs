//! The search's record: runs, candidates (source hash, source, flags, schedule, parent,
//! proposer; a source's blank-line-separated blocks each stored once), verdicts, timings,
//! counterexamples, and the LLM calls made (prompt by hash, with each distinct prompt's text
//! once; reply, tokens, outcome). The queries live here, once; the
//! schema in `schema.rs`; a database behind `backend::Backend`: SQLite in the output directory
//! (`sqlite.rs`, the default) or a PostgreSQL server (`postgres.rs`).
//!
//! Every evaluation is written in one transaction, together with the run's progress (elapsed
//! time, evaluations, best and current candidate), so a search killed at any moment resumes from
//! its last finished evaluation with nothing lost.

mod backend;
mod postgres;
mod schema;
mod sqlite;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use backend::{Backend, Dialect, Row, Value};
pub use schema::LATEST as SCHEMA_VERSION;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the store (SQLite): {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the store (PostgreSQL): {0}")]
    Postgres(#[from] ::postgres::Error),
    #[error("the store has no run {0}")]
    NoRun(i64),
    #[error("the store's column {column} is not {wanted}")]
    Column { column: usize, wanted: &'static str },
    #[error("the store is at schema version {found}, written by a newer ollie (this one knows up to {known})")]
    Newer { found: i64, known: i64 },
    #[error("the store lacks the source block {0} a candidate names")]
    MissingText(String),
}

/// Where a store lives: `--store` (or `OLLIE_STORE`) as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string (`postgresql://user@host/db`).
    Postgres(String),
}

impl Location {
    /// `postgres://...` or `postgresql://...` is a server; anything else a file path.
    pub fn parse(text: &str) -> Location {
        if text.starts_with("postgresql://") || text.starts_with("postgres://") {
            Location::Postgres(text.to_string())
        } else {
            Location::Sqlite(PathBuf::from(text))
        }
    }

    pub fn is_shared(&self) -> bool {
        matches!(self, Location::Postgres(_))
    }
}

impl std::fmt::Display for Location {
    /// A server's address without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => match (url.find("://"), url.rfind('@')) {
                (Some(scheme), Some(at)) if at > scheme => {
                    let user = &url[scheme + 3..at];
                    let user = user.split(':').next().unwrap_or("");
                    write!(f, "{}{user}@{}", &url[..scheme + 3], &url[at + 1..])
                }
                _ => write!(f, "{url}"),
            },
        }
    }
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

/// What a candidate's source is cut at into blocks, each stored once per store.
const BLOCK_SEPARATOR: &str = "\n\n";

/// Stores each of the source's blocks the store lacks; returns their hashes, space-separated, as
/// the candidate's `blocks` (joined by [`BLOCK_SEPARATOR`] they are the source again, exactly).
fn store_blocks(db: &mut dyn Backend, source: &str) -> Result<String, StoreError> {
    let mut hashes = Vec::new();
    for block in source.split(BLOCK_SEPARATOR) {
        let hash = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(block.as_bytes()));
        db.execute("INSERT INTO texts (hash, text) VALUES ($1, $2) ON CONFLICT DO NOTHING", &[hash.as_str().into(), block.into()])?;
        hashes.push(hash);
    }
    Ok(hashes.join(" "))
}

/// Which candidates' sources [`Store::candidates`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sources {
    /// Every candidate's.
    All,
    /// Only those of kernels written whole (an empty schedule): one with a schedule is emitted
    /// again from it, identically, and a long run's sources are most of its store (38 KB a
    /// candidate on a softmax: 500 MB held in memory by a resumed 13,000-candidate run).
    Written,
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
    db: Box<dyn Backend>,
}

/// A run's columns, in the order [`run_of`] reads them.
const RUN_COLUMNS: &str = "id, spec_path, spec_source, kernel, options, seed, naive_seconds, floor_seconds, started_at, elapsed_seconds, evaluations, finished, best, current, summary";

fn run_of(r: &Row) -> Result<Run, StoreError> {
    Ok(Run {
        id: RunId(r.i64(0)?),
        new: NewRun {
            spec_path: r.text(1)?,
            spec_source: r.text(2)?,
            kernel: r.text(3)?,
            options: r.text(4)?,
            seed: r.i64(5)? as u64,
            naive_seconds: r.f64(6)?,
            floor_seconds: r.f64(7)?,
        },
        started_at: r.i64(8)?,
        elapsed_seconds: r.f64(9)?,
        evaluations: r.i64(10)? as usize,
        finished: r.bool(11)?,
        best: r.opt_i64(12)?.map(CandidateId),
        current: r.opt_i64(13)?.map(CandidateId),
        summary: r.opt_text(14)?,
    })
}

impl Store {
    /// Opens (creating if needed) the SQLite store at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::on(Box::new(sqlite::Sqlite::open(path)?))
    }

    /// Opens (creating if needed) the store at `location`.
    pub fn connect(location: &Location) -> Result<Store, StoreError> {
        match location {
            Location::Sqlite(path) => Store::open(path),
            Location::Postgres(url) => Store::on(Box::new(postgres::Postgres::connect(url)?)),
        }
    }

    fn on(mut db: Box<dyn Backend>) -> Result<Store, StoreError> {
        schema::migrate(db.as_mut())?;
        Ok(Store { db })
    }

    /// The schema version the store is at.
    pub fn version(&mut self) -> Result<i64, StoreError> {
        self.db.query("SELECT version FROM ollie_schema", &[])?.first().map_or(Ok(0), |r| r.i64(0))
    }

    /// Every table's name and number of rows.
    pub fn table_rows(&mut self) -> Result<Vec<(&'static str, i64)>, StoreError> {
        schema::TABLES.iter().map(|t| Ok((*t, self.db.query(&format!("SELECT COUNT(*) FROM {t}"), &[])?.first().map_or(Ok(0), |r| r.i64(0))?))).collect()
    }

    /// Runs `f` in one transaction: all its writes or none.
    fn transaction<T>(&mut self, f: impl FnOnce(&mut dyn Backend) -> Result<T, StoreError>) -> Result<T, StoreError> {
        self.db.begin()?;
        match f(self.db.as_mut()) {
            Ok(v) => {
                self.db.script("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                // The error that matters is the first; a failed rollback adds nothing to it.
                let _ = self.db.script("ROLLBACK");
                Err(e)
            }
        }
    }

    /// An `INSERT ... RETURNING id`'s id.
    fn insert(db: &mut dyn Backend, sql: &str, params: &[Value]) -> Result<i64, StoreError> {
        db.query(sql, params)?.first().ok_or(StoreError::Column { column: 0, wanted: "a returned id" })?.i64(0)
    }

    pub fn create_run(&mut self, run: &NewRun, started_at: i64) -> Result<RunId, StoreError> {
        let id = Store::insert(
            self.db.as_mut(),
            "INSERT INTO runs (spec_path, spec_source, kernel, options, seed, naive_seconds, floor_seconds, started_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            &[(&run.spec_path).into(), (&run.spec_source).into(), (&run.kernel).into(), (&run.options).into(), (run.seed as i64).into(), run.naive_seconds.into(), run.floor_seconds.into(), started_at.into()],
        )?;
        Ok(RunId(id))
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
        self.transaction(|db| {
            let blocks = store_blocks(db, &candidate.source)?;
            let id = CandidateId(Store::insert(
                db,
                "INSERT INTO candidates (run, evaluation, source_hash, source, blocks, flags, schedule, graph, parent, proposer, at_seconds, moved, new_best) VALUES ($1, $2, $3, '', $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
                &[
                    run.0.into(),
                    (candidate.evaluation as i64).into(),
                    (&candidate.source_hash).into(),
                    (&blocks).into(),
                    (&candidate.flags).into(),
                    (&candidate.schedule).into(),
                    (&candidate.graph).into(),
                    candidate.parent.map(|p| p.0).into(),
                    (&candidate.proposer).into(),
                    candidate.at_seconds.into(),
                    candidate.moved.into(),
                    candidate.new_best.into(),
                ],
            )?);
            db.execute(
                "INSERT INTO verdicts (candidate, accepted, reason, detail) VALUES ($1, $2, $3, $4)",
                &[id.0.into(), candidate.accepted.into(), candidate.reason.as_ref().into(), candidate.detail.as_ref().into()],
            )?;
            if let Some(t) = &candidate.timing {
                db.execute(
                    "INSERT INTO timings (candidate, estimate, seconds, p10, p90, ratio, ratio_p10, ratio_p90) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    &[id.0.into(), t.estimate.into(), t.seconds.into(), t.p10.into(), t.p90.into(), t.ratio.into(), t.ratio_p10.into(), t.ratio_p90.into()],
                )?;
            }
            if let Some(c) = counterexample {
                let shapes = c.shapes.iter().map(|s| format!("[{}]", s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x"))).collect::<String>();
                let data: Vec<u8> = c.data.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
                db.execute("INSERT INTO counterexamples (run, candidate, shapes, data) VALUES ($1, $2, $3, $4)", &[run.0.into(), id.0.into(), shapes.as_str().into(), data.into()])?;
            }
            db.execute(
                "UPDATE runs SET elapsed_seconds = $2, evaluations = CASE WHEN evaluations > $3 THEN evaluations ELSE $3 END, best = $4, current = $5 WHERE id = $1",
                &[run.0.into(), elapsed_seconds.into(), (candidate.evaluation as i64).into(), best.unwrap_or(id).0.into(), current.unwrap_or(id).0.into()],
            )?;
            Ok(id)
        })
    }

    /// Marks the run finished with its total search time and its outcome.
    pub fn finish(&mut self, run: RunId, elapsed_seconds: f64, summary: &str) -> Result<(), StoreError> {
        self.db.execute("UPDATE runs SET finished = 1, elapsed_seconds = $2, summary = $3 WHERE id = $1", &[run.0.into(), elapsed_seconds.into(), summary.into()])?;
        Ok(())
    }

    pub fn runs(&mut self) -> Result<Vec<Run>, StoreError> {
        self.db.query(&format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY id"), &[])?.iter().map(run_of).collect()
    }

    pub fn run(&mut self, id: RunId) -> Result<Run, StoreError> {
        let rows = self.db.query(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"), &[id.0.into()])?;
        rows.first().map(run_of).unwrap_or(Err(StoreError::NoRun(id.0)))
    }

    /// The run's candidates in the order they were evaluated, with the sources `sources` asks for
    /// (the others' `source` empty).
    pub fn candidates(&mut self, run: RunId, sources: Sources) -> Result<Vec<(CandidateId, Candidate)>, StoreError> {
        let (source, blocks) = match sources {
            Sources::All => ("c.source", "c.blocks"),
            Sources::Written => ("CASE WHEN c.schedule = '' THEN c.source ELSE '' END", "CASE WHEN c.schedule = '' THEN c.blocks END"),
        };
        let rows = self.db.query(
            &format!("SELECT c.id, c.evaluation, c.source_hash, {source}, c.flags, c.schedule, c.parent, c.proposer, c.at_seconds, c.moved, c.new_best,
                    v.accepted, v.reason, v.detail, t.seconds, t.p10, t.p90, t.ratio, t.ratio_p10, t.ratio_p90, t.estimate, c.graph, {blocks}
             FROM candidates c JOIN verdicts v ON v.candidate = c.id LEFT JOIN timings t ON t.candidate = c.id
             WHERE c.run = $1 ORDER BY c.id"),
            &[run.0.into()],
        )?;
        let mut texts = HashMap::new();
        rows.iter()
            .map(|r| {
                let source = match r.opt_text(22)? {
                    Some(blocks) => self.assemble(&blocks, &mut texts)?,
                    None => r.text(3)?,
                };
                let timing = match r.opt_f64(14)? {
                    Some(seconds) => Some(TimingRecord { estimate: r.f64(20)?, seconds, p10: r.f64(15)?, p90: r.f64(16)?, ratio: r.f64(17)?, ratio_p10: r.f64(18)?, ratio_p90: r.f64(19)? }),
                    None => None,
                };
                Ok((
                    CandidateId(r.i64(0)?),
                    Candidate {
                        evaluation: r.i64(1)? as usize,
                        source_hash: r.text(2)?,
                        source,
                        flags: r.text(4)?,
                        schedule: r.text(5)?,
                        graph: r.text(21)?,
                        parent: r.opt_i64(6)?.map(CandidateId),
                        proposer: r.text(7)?,
                        at_seconds: r.f64(8)?,
                        moved: r.bool(9)?,
                        new_best: r.bool(10)?,
                        accepted: r.bool(11)?,
                        reason: r.opt_text(12)?,
                        detail: r.opt_text(13)?,
                        timing,
                    },
                ))
            })
            .collect()
    }

    /// A source from its blocks' hashes, reading each block once per call of `candidates`.
    fn assemble(&mut self, blocks: &str, texts: &mut HashMap<String, String>) -> Result<String, StoreError> {
        let mut source = String::new();
        for (k, hash) in blocks.split(' ').enumerate() {
            if !texts.contains_key(hash) {
                let rows = self.db.query("SELECT text FROM texts WHERE hash = $1", &[hash.into()])?;
                let text = rows.first().ok_or_else(|| StoreError::MissingText(hash.to_string()))?.text(0)?;
                texts.insert(hash.to_string(), text);
            }
            if k > 0 {
                source.push_str(BLOCK_SEPARATOR);
            }
            source.push_str(&texts[hash]);
        }
        Ok(source)
    }

    /// The run's saved counterexamples, oldest first.
    pub fn counterexamples(&mut self, run: RunId) -> Result<Vec<Counterexample>, StoreError> {
        let rows = self.db.query("SELECT shapes, data FROM counterexamples WHERE run = $1 ORDER BY id", &[run.0.into()])?;
        let mut out = Vec::new();
        for row in rows {
            let (shapes, bytes) = (row.text(0)?, row.blob(1)?);
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
        self.transaction(|db| {
            db.execute("INSERT INTO prompts (hash, text) VALUES ($1, $2) ON CONFLICT DO NOTHING", &[(&call.prompt_hash).into(), (&call.prompt).into()])?;
            db.execute(
                "INSERT INTO llm_calls (run, conversation, turn, prompt_hash, model, reply, prompt_tokens, completion_tokens, cost, seconds, attempts, outcome, detail, source_hash, at_seconds)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
                &[
                    run.0.into(),
                    (call.conversation as i64).into(),
                    i64::from(call.turn).into(),
                    (&call.prompt_hash).into(),
                    (&call.model).into(),
                    call.reply.as_ref().into(),
                    (call.prompt_tokens as i64).into(),
                    (call.completion_tokens as i64).into(),
                    call.cost.into(),
                    call.seconds.into(),
                    i64::from(call.attempts).into(),
                    (&call.outcome).into(),
                    call.detail.as_ref().into(),
                    call.source_hash.as_ref().into(),
                    call.at_seconds.into(),
                ],
            )?;
            Ok(())
        })
    }

    /// The run's LLM calls in the order they finished.
    pub fn llm_calls(&mut self, run: RunId) -> Result<Vec<LlmCall>, StoreError> {
        let rows = self.db.query(
            "SELECT l.conversation, l.turn, l.prompt_hash, p.text, l.model, l.reply, l.prompt_tokens, l.completion_tokens, l.cost, l.seconds, l.attempts, l.outcome, l.detail, l.source_hash, l.at_seconds
             FROM llm_calls l JOIN prompts p ON p.hash = l.prompt_hash WHERE l.run = $1 ORDER BY l.id",
            &[run.0.into()],
        )?;
        rows.iter()
            .map(|r| {
                Ok(LlmCall {
                    conversation: r.i64(0)? as u64,
                    turn: r.i64(1)? as u32,
                    prompt_hash: r.text(2)?,
                    prompt: r.text(3)?,
                    model: r.text(4)?,
                    reply: r.opt_text(5)?,
                    prompt_tokens: r.i64(6)? as u64,
                    completion_tokens: r.i64(7)? as u64,
                    cost: r.opt_f64(8)?,
                    seconds: r.f64(9)?,
                    attempts: r.i64(10)? as u32,
                    outcome: r.text(11)?,
                    detail: r.opt_text(12)?,
                    source_hash: r.opt_text(13)?,
                    at_seconds: r.f64(14)?,
                })
            })
            .collect()
    }
}
