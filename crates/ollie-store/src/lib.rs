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

use ::postgres::error::SqlState;

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
    /// A verdict came after its lease expired (another worker may have taken the candidate up):
    /// it is not written.
    #[error("the lease on the candidate judged ({0}) expired before its verdict was written")]
    LeaseLost(i64),
    #[error("the store has no worker {0}")]
    NoWorker(i64),
}

impl StoreError {
    /// A failure that the same statements may not meet again: the connection lost (a server
    /// restarted), a deadlock or serialization failure the server resolved by aborting us.
    fn transient(&self) -> bool {
        self.lost_connection() || matches!(self, StoreError::Postgres(e) if e.code().is_some_and(|c| *c == SqlState::T_R_DEADLOCK_DETECTED || *c == SqlState::T_R_SERIALIZATION_FAILURE))
    }

    /// The server went away: the connection closed or failed, or the server is shutting down
    /// (class 57: operator intervention) or unreachable (class 08).
    fn lost_connection(&self) -> bool {
        match self {
            StoreError::Postgres(e) => {
                let io = std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
                e.is_closed() || io || e.code().is_some_and(|c| c.code().starts_with("57") || c.code().starts_with("08"))
            }
            _ => false,
        }
    }
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

/// A chain searching a run: the one `ollie optimize` runs, and each `ollie worker` that joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkerId(pub i64);

/// A worker and where its chain stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Worker {
    pub id: WorkerId,
    pub host: String,
    pub pid: u32,
    pub seed: u64,
    /// The store server's clock, Unix seconds.
    pub joined_at: f64,
    /// Its last heartbeat or recorded evaluation.
    pub seen_at: f64,
    /// When it stopped searching (`None`: searching, or killed).
    pub left_at: Option<f64>,
    pub evaluations: usize,
    pub best: Option<CandidateId>,
    pub current: Option<CandidateId>,
    /// Its search time, over all sessions.
    pub elapsed_seconds: f64,
}

/// A candidate in judgement: held by one worker until `expires_at` (renewed by its heartbeat);
/// its verdict is written only while the token is still the lease's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lease {
    pub id: i64,
    pub token: i64,
}

/// A lease as the store keeps it: who holds it, how often it was taken over, and the candidate
/// its verdict is (`None`: not judged yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseRecord {
    pub id: i64,
    pub worker: WorkerId,
    pub takeovers: usize,
    pub candidate: Option<CandidateId>,
}

/// What a lease holds: the kernel as a store keeps one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Work {
    pub schedule: String,
    pub graph: String,
    pub flags: String,
    /// A written kernel's source (empty for a scheduled one: emitted again from its schedule).
    pub source: String,
}

/// One finished evaluation of a worker's chain, as [`Store::record`] writes it.
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    pub candidate: &'a Candidate,
    pub counterexample: Option<&'a Counterexample>,
    /// The lease the candidate was judged under (`None`: the naive kernel, never leased).
    pub lease: Option<Lease>,
    /// The chain's best and current candidates after this step (`None`: this candidate).
    pub best: Option<CandidateId>,
    pub current: Option<CandidateId>,
    /// The worker's search time after it.
    pub elapsed_seconds: f64,
}

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
    /// Who claimed the final phase: a worker and its host.
    pub finisher: Option<String>,
    /// The outcome written when the run finished (JSON, the driver's own format).
    pub summary: Option<String>,
}

/// What a candidate's source is cut at into blocks, each stored once per store.
const BLOCK_SEPARATOR: &str = "\n\n";

/// Stores each of the source's blocks the store lacks; returns their hashes, space-separated, as
/// the candidate's `blocks` (joined by [`BLOCK_SEPARATOR`] they are the source again, exactly).
fn store_blocks(db: &mut dyn Backend, source: &str) -> Result<String, StoreError> {
    let blocks: Vec<(String, &str)> = source.split(BLOCK_SEPARATOR).map(|b| (format!("{:032x}", xxhash_rust::xxh3::xxh3_128(b.as_bytes())), b)).collect();
    // Inserted in the order of their hashes: two workers' transactions writing blocks in common
    // take their locks in one order, and never deadlock.
    let mut sorted: Vec<&(String, &str)> = blocks.iter().collect();
    sorted.sort();
    sorted.dedup();
    for (hash, block) in sorted {
        db.execute("INSERT INTO texts (hash, text) VALUES ($1, $2) ON CONFLICT DO NOTHING", &[hash.into(), (*block).into()])?;
    }
    Ok(blocks.iter().map(|(h, _)| h.as_str()).collect::<Vec<_>>().join(" "))
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

impl Candidate {
    /// Its time on its chain's scale; infinite where it was not timed.
    pub fn estimate(&self) -> f64 {
        self.timing.map_or(f64::INFINITY, |t| t.estimate)
    }
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
    /// The cost model's prediction of the candidate's time before it was measured (the natural
    /// log of its time over the work's roofline floor), and the timings it was fitted on then.
    pub predicted: Option<Prediction>,
}

impl TimingRecord {
    /// How far its estimate may be off, as factors below and above it: its interleaved ratio's
    /// p10 and p90 over the median, or, timed alone (no ratio), its calls'.
    pub fn noise(&self) -> (f64, f64) {
        if self.ratio > 0.0 && self.ratio_p10 > 0.0 {
            (self.ratio_p10 / self.ratio, self.ratio_p90 / self.ratio)
        } else {
            (self.p10 / self.seconds, self.p90 / self.seconds)
        }
    }
}

/// A prediction of the cost model (see [`TimingRecord::predicted`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub log_time: f64,
    pub trained_on: u64,
    /// Set when the candidate was measured in a round the search measured whole (an ablation
    /// of the model's choice): the round, and whether the model picked the candidate.
    pub round: Option<u64>,
    pub picked: bool,
}

/// A timing's prediction, from its row's columns 23..=26.
fn prediction(r: &Row) -> Result<Option<Prediction>, StoreError> {
    Ok(match (r.opt_f64(23)?, r.opt_i64(24)?) {
        (Some(log_time), Some(trained_on)) => Some(Prediction { log_time, trained_on: trained_on as u64, round: r.opt_i64(25)?.map(|r| r as u64), picked: r.opt_i64(26)? == Some(1) }),
        _ => None,
    })
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
    location: Location,
}

/// How long a store that lost its server keeps trying to reach it again before an operation
/// fails: a restarting server is back well within it.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(120);

/// A run's columns, in the order [`run_of`] reads them.
const RUN_COLUMNS: &str = "id, spec_path, spec_source, kernel, options, seed, naive_seconds, floor_seconds, started_at, elapsed_seconds, evaluations, finished, finisher, summary";

/// A worker's columns, in the order [`worker_of`] reads them.
const WORKER_COLUMNS: &str = "id, host, pid, seed, joined_at, seen_at, left_at, evaluations, best, current, elapsed_seconds";

fn worker_of(r: &Row) -> Result<Worker, StoreError> {
    Ok(Worker {
        id: WorkerId(r.i64(0)?),
        host: r.text(1)?,
        pid: r.i64(2)? as u32,
        seed: r.i64(3)? as u64,
        joined_at: r.f64(4)?,
        seen_at: r.f64(5)?,
        left_at: r.opt_f64(6)?,
        evaluations: r.i64(7)? as usize,
        best: r.opt_i64(8)?.map(CandidateId),
        current: r.opt_i64(9)?.map(CandidateId),
        elapsed_seconds: r.f64(10)?,
    })
}

/// A counterexample row (id, shapes, data) read back.
fn counterexample_of(row: &Row) -> Result<(i64, Counterexample), StoreError> {
    let (id, shapes, bytes) = (row.i64(0)?, row.text(1)?, row.blob(2)?);
    // `[64x4096][]`: one bracketed shape per input, `[]` for a scalar.
    let shapes: Vec<Vec<usize>> = shapes
        .split(']')
        .filter_map(|s| s.strip_prefix('['))
        .map(|s| s.split('x').filter(|d| !d.is_empty()).filter_map(|d| d.parse().ok()).collect())
        .collect();
    let mut values = bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")));
    let data = shapes.iter().map(|s| values.by_ref().take(s.iter().product()).collect()).collect();
    Ok((id, Counterexample { shapes, data }))
}

/// A lease's token: unguessable enough that no two attempts share one.
fn token() -> i64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let seed = format!("{nanos} {} {}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
    (xxhash_rust::xxh3::xxh3_64(seed.as_bytes()) >> 1) as i64
}

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
        finisher: r.opt_text(12)?,
        summary: r.opt_text(13)?,
    })
}

impl Store {
    /// Opens (creating if needed) the SQLite store at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::connect(&Location::Sqlite(path.to_path_buf()))
    }

    /// Opens (creating if needed) the store at `location`.
    pub fn connect(location: &Location) -> Result<Store, StoreError> {
        let mut db = Store::backend(location)?;
        schema::migrate(db.as_mut())?;
        Ok(Store { db, location: location.clone() })
    }

    fn backend(location: &Location) -> Result<Box<dyn Backend>, StoreError> {
        Ok(match location {
            Location::Sqlite(path) => Box::new(sqlite::Sqlite::open(path)?),
            Location::Postgres(url) => Box::new(postgres::Postgres::connect(url)?),
        })
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Another connection to the same store (a heartbeat's own).
    pub fn reopen(&self) -> Result<Store, StoreError> {
        Ok(Store { db: Store::backend(&self.location)?, location: self.location.clone() })
    }

    /// The schema version the store is at.
    pub fn version(&mut self) -> Result<i64, StoreError> {
        self.db.query("SELECT version FROM ollie_schema", &[])?.first().map_or(Ok(0), |r| r.i64(0))
    }

    /// Every table's name and number of rows.
    pub fn table_rows(&mut self) -> Result<Vec<(&'static str, i64)>, StoreError> {
        schema::TABLES.iter().map(|t| Ok((*t, self.db.query(&format!("SELECT COUNT(*) FROM {t}"), &[])?.first().map_or(Ok(0), |r| r.i64(0))?))).collect()
    }

    /// Runs `f` in one transaction: all its writes or none. A transient failure (the server
    /// restarted, a deadlock) runs it again, reconnecting first for up to [`PATIENCE`].
    fn transaction<T>(&mut self, mut f: impl FnMut(&mut dyn Backend) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let started = std::time::Instant::now();
        loop {
            match self.attempt(&mut f) {
                Err(e) if e.transient() && started.elapsed() < PATIENCE => {
                    tracing::warn!(error = %e, store = %self.location, "the store failed; trying again");
                    if e.lost_connection() || self.db.closed() {
                        self.reconnect(started)?;
                    }
                }
                result => return result,
            }
        }
    }

    fn attempt<T>(&mut self, f: &mut impl FnMut(&mut dyn Backend) -> Result<T, StoreError>) -> Result<T, StoreError> {
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

    /// A new connection once the old one is lost, tried every second until [`PATIENCE`] since
    /// `started` is spent.
    fn reconnect(&mut self, started: std::time::Instant) -> Result<(), StoreError> {
        loop {
            match Store::backend(&self.location) {
                Ok(db) => {
                    tracing::info!(store = %self.location, "reconnected to the store");
                    self.db = db;
                    return Ok(());
                }
                Err(e) if started.elapsed() < PATIENCE => {
                    tracing::debug!(error = %e, "the store is still unreachable");
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
                Err(e) => return Err(e),
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

    /// Records one finished evaluation of `worker`'s chain and the chain's state after it,
    /// atomically: nothing if the step's lease is no longer held ([`StoreError::LeaseLost`]).
    pub fn record(&mut self, run: RunId, worker: WorkerId, step: &Step) -> Result<CandidateId, StoreError> {
        let Step { candidate, counterexample, lease, best, current, elapsed_seconds } = *step;
        let now = self.db.dialect().now();
        self.transaction(|db| {
            let blocks = store_blocks(db, &candidate.source)?;
            let id = CandidateId(Store::insert(
                db,
                "INSERT INTO candidates (run, evaluation, source_hash, source, blocks, flags, schedule, graph, parent, proposer, at_seconds, moved, new_best, worker) VALUES ($1, $2, $3, '', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id",
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
                    worker.0.into(),
                ],
            )?);
            db.execute(
                "INSERT INTO verdicts (candidate, accepted, reason, detail) VALUES ($1, $2, $3, $4)",
                &[id.0.into(), candidate.accepted.into(), candidate.reason.as_ref().into(), candidate.detail.as_ref().into()],
            )?;
            if let Some(t) = &candidate.timing {
                db.execute(
                    "INSERT INTO timings (candidate, estimate, seconds, p10, p90, ratio, ratio_p10, ratio_p90, predicted, trained_on, ablation_round, picked) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                    &[id.0.into(), t.estimate.into(), t.seconds.into(), t.p10.into(), t.p90.into(), t.ratio.into(), t.ratio_p10.into(), t.ratio_p90.into(),
                        t.predicted.map(|p| p.log_time).into(), t.predicted.map(|p| p.trained_on as i64).into(), t.predicted.and_then(|p| p.round).map(|r| r as i64).into(), t.predicted.map(|p| p.picked).into()],
                )?;
            }
            if let Some(c) = counterexample {
                let shapes = c.shapes.iter().map(|s| format!("[{}]", s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x"))).collect::<String>();
                let data: Vec<u8> = c.data.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
                db.execute("INSERT INTO counterexamples (run, candidate, shapes, data) VALUES ($1, $2, $3, $4)", &[run.0.into(), id.0.into(), shapes.as_str().into(), data.into()])?;
            }
            if let Some(lease) = lease {
                let held = db.execute(&format!("UPDATE leases SET candidate = $3 WHERE id = $1 AND token = $2 AND candidate IS NULL AND expires_at > {now}"), &[lease.id.into(), lease.token.into(), id.0.into()])?;
                if held == 0 {
                    return Err(StoreError::LeaseLost(lease.id));
                }
            }
            db.execute(
                &format!("UPDATE workers SET elapsed_seconds = $2, evaluations = CASE WHEN evaluations > $3 THEN evaluations ELSE $3 END, best = $4, current = $5, seen_at = {now} WHERE id = $1"),
                &[worker.0.into(), elapsed_seconds.into(), (candidate.evaluation as i64).into(), best.unwrap_or(id).0.into(), current.unwrap_or(id).0.into()],
            )?;
            // The run's elapsed time is its longest-searching worker's; its evaluations all of theirs.
            db.execute(
                "UPDATE runs SET elapsed_seconds = CASE WHEN elapsed_seconds > $2 THEN elapsed_seconds ELSE $2 END, evaluations = evaluations + $3 WHERE id = $1",
                &[run.0.into(), elapsed_seconds.into(), i64::from(candidate.evaluation > 0).into()],
            )?;
            Ok(id)
        })
    }

    /// Registers a worker's chain on `run`, searching from now.
    pub fn join(&mut self, run: RunId, host: &str, seed: u64) -> Result<WorkerId, StoreError> {
        let now = self.db.dialect().now();
        let sql = format!("INSERT INTO workers (run, host, pid, seed, joined_at, seen_at) VALUES ($1, $2, $3, $4, {now}, {now}) RETURNING id");
        let (pid, seed) = (i64::from(std::process::id()), seed as i64);
        self.transaction(|db| Ok(WorkerId(Store::insert(db, &sql, &[run.0.into(), host.into(), pid.into(), seed.into()])?)))
    }

    /// A run's workers, in the order they joined.
    pub fn workers(&mut self, run: RunId) -> Result<Vec<Worker>, StoreError> {
        self.db.query(&format!("SELECT {WORKER_COLUMNS} FROM workers WHERE run = $1 ORDER BY id"), &[run.0.into()])?.iter().map(worker_of).collect()
    }

    pub fn worker(&mut self, id: WorkerId) -> Result<Worker, StoreError> {
        let rows = self.db.query(&format!("SELECT {WORKER_COLUMNS} FROM workers WHERE id = $1"), &[id.0.into()])?;
        rows.first().map(worker_of).unwrap_or(Err(StoreError::NoWorker(id.0)))
    }

    /// Marks the worker gone and gives up the leases it holds on candidates it will not judge
    /// (a round drawn ahead): they were proposals, not work anyone owes.
    pub fn leave(&mut self, worker: WorkerId) -> Result<(), StoreError> {
        let now = self.db.dialect().now();
        self.transaction(|db| {
            db.execute("DELETE FROM leases WHERE worker = $1 AND candidate IS NULL", &[worker.0.into()])?;
            db.execute(&format!("UPDATE workers SET left_at = {now}, seen_at = {now} WHERE id = $1"), &[worker.0.into()])?;
            Ok(())
        })
    }

    /// Leases `work` to `worker` for `seconds`, before it is judged.
    pub fn lease(&mut self, run: RunId, worker: WorkerId, work: &Work, seconds: f64) -> Result<Lease, StoreError> {
        let now = self.db.dialect().now();
        let token = token();
        let sql = format!("INSERT INTO leases (run, worker, token, expires_at, schedule, graph, flags, source) VALUES ($1, $2, $3, {now} + $4, $5, $6, $7, $8) RETURNING id");
        self.transaction(|db| {
            let id = Store::insert(db, &sql, &[run.0.into(), worker.0.into(), token.into(), seconds.into(), (&work.schedule).into(), (&work.graph).into(), (&work.flags).into(), (&work.source).into()])?;
            Ok(Lease { id, token })
        })
    }

    /// Takes over, for `worker`, the oldest lease of `run` that expired before its verdict was
    /// written (its worker was killed, or lost the store): a new token, so a late verdict of the
    /// old holder is refused. Leases others are taking over at the same moment are skipped.
    pub fn take_over(&mut self, run: RunId, worker: WorkerId, seconds: f64) -> Result<Option<(Lease, Work)>, StoreError> {
        let dialect = self.db.dialect();
        let now = dialect.now();
        let skip = dialect.skip_locked();
        let token = token();
        let sql = format!(
            "UPDATE leases SET worker = $2, token = $3, expires_at = {now} + $4, takeovers = takeovers + 1
             WHERE id = (SELECT id FROM leases WHERE run = $1 AND candidate IS NULL AND expires_at < {now} ORDER BY id LIMIT 1 {skip})
               AND candidate IS NULL AND expires_at < {now}
             RETURNING id, schedule, graph, flags, source"
        );
        self.transaction(|db| {
            let rows = db.query(&sql, &[run.0.into(), worker.0.into(), token.into(), seconds.into()])?;
            rows.first()
                .map(|r| Ok((Lease { id: r.i64(0)?, token }, Work { schedule: r.text(1)?, graph: r.text(2)?, flags: r.text(3)?, source: r.text(4)? })))
                .transpose()
        })
    }

    /// The heartbeat: extends by `seconds` every lease `worker` still holds (not one that has
    /// expired: another worker may have it now); returns how many.
    pub fn renew(&mut self, worker: WorkerId, seconds: f64) -> Result<u64, StoreError> {
        let now = self.db.dialect().now();
        self.transaction(|db| {
            db.execute(&format!("UPDATE workers SET seen_at = {now} WHERE id = $1"), &[worker.0.into()])?;
            db.execute(&format!("UPDATE leases SET expires_at = {now} + $2 WHERE worker = $1 AND candidate IS NULL AND expires_at > {now}"), &[worker.0.into(), seconds.into()])
        })
    }

    /// The run's leases, oldest first.
    pub fn leases(&mut self, run: RunId) -> Result<Vec<LeaseRecord>, StoreError> {
        let rows = self.db.query("SELECT id, worker, takeovers, candidate FROM leases WHERE run = $1 ORDER BY id", &[run.0.into()])?;
        rows.iter().map(|r| Ok(LeaseRecord { id: r.i64(0)?, worker: WorkerId(r.i64(1)?), takeovers: r.i64(2)? as usize, candidate: r.opt_i64(3)?.map(CandidateId) })).collect()
    }

    /// Claims the run's final phase for `who` (a worker and its host), unless another has:
    /// `None` if claimed now, else who holds it.
    pub fn claim_finish(&mut self, run: RunId, who: &str) -> Result<Option<String>, StoreError> {
        self.transaction(|db| {
            if db.execute("UPDATE runs SET finisher = $2 WHERE id = $1 AND finisher IS NULL", &[run.0.into(), who.into()])? == 1 {
                return Ok(None);
            }
            let rows = db.query("SELECT finisher FROM runs WHERE id = $1", &[run.0.into()])?;
            Ok(Some(rows.first().ok_or(StoreError::NoRun(run.0))?.opt_text(0)?.unwrap_or_default()))
        })
    }

    /// The kernels other workers of `run` timed after candidate `after`, oldest first, at most
    /// `limit`: (candidate, its estimate, whether it was its chain's new best, the kernel).
    /// Their timings train this worker's cost model; their bests are migrants to its chain.
    pub fn others_timed(&mut self, run: RunId, worker: WorkerId, after: CandidateId, limit: usize) -> Result<Vec<(CandidateId, f64, bool, Work)>, StoreError> {
        let rows = self.db.query(
            "SELECT c.id, t.estimate, c.new_best, c.schedule, c.graph, c.flags, CASE WHEN c.schedule = '' THEN c.source ELSE '' END, CASE WHEN c.schedule = '' THEN c.blocks END
             FROM candidates c JOIN timings t ON t.candidate = c.id
             WHERE c.run = $1 AND c.worker <> $2 AND c.id > $3 ORDER BY c.id LIMIT $4",
            &[run.0.into(), worker.0.into(), after.0.into(), (limit as i64).into()],
        )?;
        let mut texts = HashMap::new();
        rows.iter()
            .map(|r| {
                let source = match r.opt_text(7)? {
                    Some(blocks) => self.assemble(&blocks, &mut texts)?,
                    None => r.text(6)?,
                };
                Ok((CandidateId(r.i64(0)?), r.f64(1)?, r.bool(2)?, Work { schedule: r.text(3)?, graph: r.text(4)?, flags: r.text(5)?, source }))
            })
            .collect()
    }

    /// Marks the run finished with its total search time and its outcome.
    pub fn finish(&mut self, run: RunId, elapsed_seconds: f64, summary: &str) -> Result<(), StoreError> {
        self.transaction(|db| {
            db.execute("UPDATE runs SET finished = 1, elapsed_seconds = $2, summary = $3 WHERE id = $1", &[run.0.into(), elapsed_seconds.into(), summary.into()])?;
            Ok(())
        })
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
                    v.accepted, v.reason, v.detail, t.seconds, t.p10, t.p90, t.ratio, t.ratio_p10, t.ratio_p90, t.estimate, c.graph, {blocks}, t.predicted, t.trained_on, t.ablation_round, t.picked
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
                    Some(seconds) => Some(TimingRecord { estimate: r.f64(20)?, seconds, p10: r.f64(15)?, p90: r.f64(16)?, ratio: r.f64(17)?, ratio_p10: r.f64(18)?, ratio_p90: r.f64(19)?, predicted: prediction(r)? }),
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
        let rows = self.db.query("SELECT id, shapes, data FROM counterexamples WHERE run = $1 ORDER BY id", &[run.0.into()])?;
        rows.iter().map(|r| Ok(counterexample_of(r)?.1)).collect()
    }

    /// The counterexamples other workers of `run` found after the one numbered `after`, with
    /// their numbers, oldest first.
    pub fn others_counterexamples(&mut self, run: RunId, worker: WorkerId, after: i64) -> Result<Vec<(i64, Counterexample)>, StoreError> {
        let rows = self.db.query(
            "SELECT x.id, x.shapes, x.data FROM counterexamples x JOIN candidates c ON c.id = x.candidate WHERE x.run = $1 AND x.id > $2 AND c.worker <> $3 ORDER BY x.id",
            &[run.0.into(), after.into(), worker.0.into()],
        )?;
        rows.iter().map(counterexample_of).collect()
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
