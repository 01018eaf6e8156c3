//! The oracle: what a correct kernel must produce on an input set — per output, the reference
//! folded with its error bounds and the naive kernel's output into one [`Target`] — computed
//! once per input set and remembered: in memory within a byte budget, and (when given a
//! directory) on disk, so that another candidate, a resumed search or a later `ollie check` on
//! the same inputs computes nothing again.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use ollie_graph::{Graph, Op};
use ollie_runner::{BufferSpec, Call, OutputData, Runner, Session};
use sha2::Digest;
use xxhash_rust::xxh3::Xxh3;

use crate::accuracy::{Figures, Inaccuracy, Special, Target, Tolerance};
use crate::index::IndexTarget;
use crate::order::{OrderParts, OrderTarget};
use crate::input_sets::InputSet;
use crate::values::{cast, Values};
use crate::error::VerifyError;

/// What the oracle keeps in memory at most, in bytes, unless told otherwise: each input set
/// costs 8 bytes per float32 output element (the reference and the elementwise bound), 16 per
/// float64 one. At least one set is kept whatever its size; with a directory, the others are
/// read back from disk (on another core, while the candidate runs: see `verify`).
pub const ORACLE_BYTES: usize = 256 << 20;

/// What the files of a directory given to [`Oracle::keep_on_disk`] may hold together, in bytes:
/// beyond it, the files used longest ago are removed.
pub const DISK_BYTES: u64 = 8 << 30;

/// What a candidate's error is measured against besides the float64 reference: the naive
/// kernel's own output `b` on the same inputs (its float32 error, which the accuracy rule lets a
/// candidate make α times over), or — where running the naive kernel on every input set costs
/// more than can be paid — nothing but the a-priori bound: the reference rounded to the
/// output's dtype stands for `b` (no float32 output is closer to the reference, so every
/// elementwise bound is as strict or stricter than the naive kernel's would make it), and the
/// normwise rule takes the a-priori bound's norm for the naive kernel's measured error (see
/// [`crate::Target`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Baseline {
    /// The naive kernel's library.
    Naive(PathBuf),
    /// The reference rounded to each output's dtype.
    Rounded,
}

impl Baseline {
    /// How certificates and reports name it.
    pub fn name(&self) -> &'static str {
        match self {
            Baseline::Naive(_) => "naive-kernel",
            Baseline::Rounded => "rounded-reference",
        }
    }
}

/// Remembers, by input, what a correct call must produce.
pub struct Oracle<'a> {
    pub(crate) graph: &'a Graph,
    pub(crate) runner: &'a Runner,
    pub(crate) baseline: Baseline,
    session: Option<Session>,
    /// By the input set's key: the expected outputs and when they were last used.
    cache: HashMap<u128, (Arc<Expected>, u64)>,
    /// Bytes the cache may hold.
    capacity: usize,
    clock: u64,
    disk: Option<Arc<Disk>>,
    costs: Costs,
    /// The last input set timing asked for, by seed: a search times every candidate on the same.
    timing: Option<(u64, Arc<InputSet>)>,
}

/// What the oracle's work has cost so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Costs {
    /// Input sets whose expected outputs were computed, and the seconds that took.
    pub computed: usize,
    pub compute_seconds: f64,
    /// Input sets read back from disk, and the seconds that took.
    pub read: usize,
    pub read_seconds: f64,
    /// Seconds per input set computed, as an earlier run with the same directory recorded it
    /// (the same graph, naive kernel and build of ollie).
    pub computed_before: Option<f64>,
}

impl Costs {
    /// Seconds per input set computed, if any was — in this run, or else in an earlier one.
    pub fn per_computed(&self) -> Option<f64> {
        (self.computed > 0).then(|| self.compute_seconds / self.computed as f64).or(self.computed_before)
    }

    /// Seconds per input set read from disk, if any was.
    pub fn per_read(&self) -> Option<f64> {
        (self.read > 0).then(|| self.read_seconds / self.read as f64)
    }
}

/// The oracle's directory and what names its files: everything the expected outputs depend on
/// besides the inputs (the graph, the naive kernel's library, this build of ollie).
/// Files are written by a thread of their own, and removed (the least recently used first)
/// when they hold more than the limit.
struct Disk {
    dir: PathBuf,
    context: [u8; 32],
    writes: Option<std::sync::mpsc::SyncSender<(PathBuf, Arc<Expected>)>>,
    /// Files sent to the writer and not yet on disk.
    pending: Arc<(std::sync::Mutex<usize>, std::sync::Condvar)>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl<'a> Oracle<'a> {
    pub fn new(graph: &'a Graph, runner: &'a Runner, baseline: Baseline) -> Oracle<'a> {
        Oracle::with_capacity(graph, runner, baseline, ORACLE_BYTES)
    }

    /// An oracle that keeps at most `capacity` bytes of expected outputs in memory.
    pub fn with_capacity(graph: &'a Graph, runner: &'a Runner, baseline: Baseline, capacity: usize) -> Oracle<'a> {
        Oracle { graph, runner, baseline, session: None, cache: HashMap::new(), capacity, clock: 0, disk: None, costs: Costs::default(), timing: None }
    }

    /// The graph whose outputs the oracle expects.
    pub fn graph(&self) -> &'a Graph {
        self.graph
    }

    /// Also keeps every input set's expected outputs as a file in `dir` (at most `limit` bytes
    /// of them), and reads them from there before computing them. A file that does not read
    /// back whole and intact is computed anew. The directory is made if it is missing; if it
    /// cannot be, the oracle keeps to memory.
    pub fn keep_on_disk(mut self, dir: &Path, limit: u64) -> Oracle<'a> {
        if let Err(e) = std::fs::create_dir_all(dir) {
            tracing::warn!("expected outputs stay in memory: cannot make {}: {e}", dir.display());
            return self;
        }
        let mut context = sha2::Sha256::new();
        context.update(FORMAT);
        context.update(self.graph.to_string());
        match &self.baseline {
            Baseline::Naive(path) => match std::fs::read(path) {
                Ok(library) => context.update(sha2::Sha256::digest(&library)),
                Err(e) => {
                    tracing::warn!("expected outputs stay in memory: cannot read the naive kernel: {e}");
                    return self;
                }
            },
            Baseline::Rounded => context.update(Baseline::Rounded.name()),
        }
        // This build of ollie (its reference interpreter and bounds): the executable's identity.
        let exe = std::env::current_exe().and_then(std::fs::metadata).map(|m| (m.len(), m.modified().ok()));
        context.update(format!("{} {exe:?}", env!("CARGO_PKG_VERSION")));
        let disk = Disk::new(dir.to_path_buf(), context.finalize().into(), limit);
        self.costs.computed_before = std::fs::read_to_string(disk.cost_path()).ok().and_then(|s| s.trim().parse().ok()).filter(|s: &f64| s.is_finite() && *s >= 0.0);
        self.disk = Some(Arc::new(disk));
        self
    }

    /// Waits until the files being written are on disk: timing must have the machine to
    /// itself.
    pub fn settle(&self) {
        if let Some(d) = &self.disk {
            d.settle();
        }
    }

    /// What candidates' errors are measured against besides the reference.
    pub fn baseline(&self) -> &Baseline {
        &self.baseline
    }

    /// What computing and reading expected outputs has cost so far.
    pub fn costs(&self) -> Costs {
        self.costs
    }

    /// Whether a verification `plan` (see [`crate::VerifyConfig::plan`]) ran to its end before
    /// with this oracle's directory: then every one of its input sets is on disk (unless the
    /// directory was trimmed since).
    pub fn knows_plan(&self, plan: &str) -> bool {
        self.disk.as_ref().is_some_and(|d| d.plan_path(plan).exists())
    }

    /// Notes that `plan` ran to its end.
    pub(crate) fn remember_plan(&self, plan: &str) {
        if let Some(d) = &self.disk {
            let _ = std::fs::write(d.plan_path(plan), plan);
        }
    }

    /// Bytes the input sets remembered in memory hold now.
    pub fn bytes(&self) -> usize {
        self.cache.values().map(|(e, _)| e.bytes()).sum()
    }

    /// The input set timing uses for `seed` (normal values), made once for a run of timings
    /// on the same seed if it fits the oracle's memory budget.
    pub(crate) fn timing_set(&mut self, seed: u64) -> Arc<InputSet> {
        match &self.timing {
            Some((s, set)) if *s == seed => set.clone(),
            _ => {
                // The old one goes first: two large sets need not be alive at once.
                self.timing = None;
                let set = Arc::new(crate::Family::Normal.inputs(self.graph, seed));
                if set.bytes() <= self.capacity {
                    self.timing = Some((seed, set.clone()));
                }
                set
            }
        }
    }

    /// The expected outputs for `set`.
    pub(crate) fn expected(&mut self, set: &InputSet) -> Result<Arc<Expected>, VerifyError> {
        self.expected_read(set, None)
    }

    /// What gets expected outputs ready on another thread, ahead of their turn, for the sets not
    /// in memory now (see [`Oracle::expected_read`]): it reads them from the oracle's directory
    /// or, where they are not there, computes them with the oracle's naive kernel, whose process
    /// it borrows until [`Oracle::rejoin`].
    pub(crate) fn ahead(&mut self) -> Ahead<'a> {
        Ahead {
            graph: self.graph,
            runner: self.runner,
            baseline: self.baseline.clone(),
            session: self.session.take(),
            started: false,
            disk: self.disk.clone(),
            in_memory: self.cache.keys().copied().collect(),
            read: self.costs.per_read(),
            computed: self.costs.per_computed(),
        }
    }

    /// Takes back the naive kernel's process lent to `ahead`. One `ahead` started itself is not
    /// kept: a sandbox ends with the thread that started it.
    pub(crate) fn rejoin(&mut self, ahead: Ahead) {
        if self.session.is_none() && !ahead.started {
            self.session = ahead.session;
        }
    }

    /// [`Oracle::expected`], given what an [`Ahead`] got ready for `set` (if it did).
    pub(crate) fn expected_read(&mut self, set: &InputSet, fetched: Option<Fetched>) -> Result<Arc<Expected>, VerifyError> {
        let key = set.key();
        self.clock += 1;
        if let Some((e, used)) = self.cache.get_mut(&key) {
            *used = self.clock;
            return Ok(e.clone());
        }
        let started = std::time::Instant::now();
        let read = match fetched {
            Some(r) if r.key == key => Some(r),
            _ => self.disk.as_ref().and_then(|d| d.read(key)).map(|(expected, seconds)| Fetched { key, expected, seconds, computed: false }),
        };
        let fetched = match read {
            Some(fetched) => fetched,
            None => {
                let expected = compute(self.graph, self.runner, &self.baseline, &mut self.session, set)?;
                Fetched { key, expected, seconds: started.elapsed().as_secs_f64(), computed: true }
            }
        };
        let expected = Arc::new(fetched.expected);
        if fetched.computed {
            self.costs.computed += 1;
            self.costs.compute_seconds += fetched.seconds;
            tracing::debug!(seconds = fetched.seconds, "expected outputs computed");
            if let Some(d) = &self.disk {
                d.write(key, expected.clone());
                // What a set costs to compute, for the estimates of a later run that reads these
                // sets back but must compute others (its final verification's, say).
                let _ = std::fs::write(d.cost_path(), format!("{}\n", self.costs.compute_seconds / self.costs.computed as f64));
            }
        } else {
            self.costs.read += 1;
            self.costs.read_seconds += fetched.seconds;
        }
        // The least recently used go until the new set fits.
        let mut held = self.bytes();
        while held + expected.bytes() > self.capacity && !self.cache.is_empty() {
            let oldest = *self.cache.iter().min_by_key(|(_, (_, used))| *used).expect("not empty").0;
            held -= self.cache.remove(&oldest).expect("present").0.bytes();
        }
        self.cache.insert(key, (expected.clone(), self.clock));
        Ok(expected)
    }
}

/// Evaluates the reference on `set` and, with the naive kernel as the baseline, runs it on the
/// set in `session` (its own sandboxed process, started on first use and kept; dropped if the
/// kernel failed).
fn compute(graph: &Graph, runner: &Runner, baseline: &Baseline, session: &mut Option<Session>, set: &InputSet) -> Result<Expected, VerifyError> {
    let Baseline::Naive(library) = baseline else { return Expected::new(graph, None, set) };
    if session.is_none() {
        let (inputs, outputs) = BufferSpec::of(graph);
        match runner.start(library, &graph.name, &inputs, &outputs)? {
            Ok(s) => *session = Some(s),
            Err(outcome) => return Err(VerifyError::baseline(&outcome)),
        }
    }
    let result = Expected::new(graph, session.as_mut(), set);
    if result.is_err() {
        *session = None;
    }
    result
}

/// Gets expected outputs ready on another thread: see [`Oracle::ahead`].
pub(crate) struct Ahead<'a> {
    graph: &'a Graph,
    runner: &'a Runner,
    baseline: Baseline,
    session: Option<Session>,
    /// Whether `session` was started here, not lent.
    started: bool,
    disk: Option<Arc<Disk>>,
    /// The sets the oracle held in memory when this was made: nothing to do for them.
    in_memory: std::collections::HashSet<u128>,
    /// Seconds reading a set's expected outputs from disk, and computing them, took last (or
    /// on average before this was made), if known.
    read: Option<f64>,
    computed: Option<f64>,
}

/// Expected outputs an [`Ahead`] got ready, and what that took.
pub(crate) struct Fetched {
    key: u128,
    expected: Expected,
    seconds: f64,
    /// Computed, not read from disk.
    computed: bool,
}

impl Ahead<'_> {
    /// The expected outputs of `set`, read from disk or else computed, if the oracle did not
    /// hold them in memory. A failed computation gives `None`: the oracle computes them again
    /// in their turn and reports the failure.
    pub(crate) fn fetch(&mut self, set: &InputSet) -> Option<Fetched> {
        let key = set.key();
        if self.in_memory.contains(&key) {
            return None;
        }
        if let Some((expected, seconds)) = self.disk.as_ref().and_then(|d| d.read(key)) {
            self.read = Some(seconds);
            return Some(Fetched { key, expected, seconds, computed: false });
        }
        let started = std::time::Instant::now();
        self.started |= self.session.is_none();
        match compute(self.graph, self.runner, &self.baseline, &mut self.session, set) {
            Ok(expected) => {
                let seconds = started.elapsed().as_secs_f64();
                self.computed = Some(seconds);
                Some(Fetched { key, expected, seconds, computed: true })
            }
            Err(e) => {
                tracing::debug!("expected outputs not computed ahead: {e}");
                None
            }
        }
    }

    /// What [`Ahead::fetch`] of `set` would take, as the last reads and computations took
    /// (nothing for a set in memory); `None` where it must be computed and no computation has
    /// been timed yet. A set read back from disk costs far less than one computed (a 2048²
    /// product's: 0.1 s against 1 s and more), so a deadline judged by the sets read before it
    /// would begin a computation it cannot wait for.
    pub(crate) fn estimate(&self, set: &InputSet) -> Option<f64> {
        let key = set.key();
        if self.in_memory.contains(&key) {
            return Some(0.0);
        }
        match &self.disk {
            Some(d) if d.path(key).exists() => Some(self.read.unwrap_or(0.0)),
            _ => self.computed,
        }
    }
}

/// What a correct call on some inputs must produce: a target per output.
pub(crate) struct Expected {
    pub targets: Vec<OutputTarget>,
}

/// What one output must hold: values near the reference ([`Target`]), or for an index output
/// indices as right as numpy's: an `argmax`'s ([`IndexTarget`]), an `argsort`'s
/// ([`OrderTarget`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OutputTarget {
    Values(Target),
    Index(IndexTarget),
    Order(OrderTarget),
}

impl OutputTarget {
    fn bytes(&self) -> usize {
        match self {
            OutputTarget::Values(t) => t.bytes(),
            OutputTarget::Index(t) => t.bytes(),
            OutputTarget::Order(t) => t.bytes(),
        }
    }

    /// The reference's bytes (numpy's indices for an index output).
    pub fn reference_bytes(&self) -> Cow<'_, [u8]> {
        match self {
            OutputTarget::Values(t) => Cow::Borrowed(t.reference_bytes()),
            OutputTarget::Index(t) => Cow::Owned(t.reference_bytes()),
            OutputTarget::Order(t) => Cow::Owned(t.reference_bytes()),
        }
    }

    /// Whether an element's reference or naive output is NaN or infinite (where the poison a
    /// kernel left could pass for a right value).
    pub fn has_specials(&self) -> bool {
        matches!(self, OutputTarget::Values(t) if t.has_specials())
    }

    pub fn judge_slice<Y: Copy + Into<f64>>(&self, y: &[Y]) -> Result<Figures, Inaccuracy> {
        match self {
            OutputTarget::Values(t) => t.judge_slice(y),
            OutputTarget::Index(t) => t.judge_slice(y),
            OutputTarget::Order(t) => t.judge_slice(y),
        }
    }
}

impl Expected {
    fn bytes(&self) -> usize {
        self.targets.iter().map(OutputTarget::bytes).sum()
    }

    /// Evaluates the reference on `set` and runs the naive kernel in `base` on it; without one,
    /// the reference rounded to each output's dtype stands for the naive output.
    fn new(graph: &Graph, base: Option<&mut Session>, set: &InputSet) -> Result<Expected, VerifyError> {
        let base = match base {
            Some(base) => {
                set.load(base)?;
                base.poison_outputs();
                if let Call::Died(outcome) = base.call()? {
                    return Err(VerifyError::baseline(&outcome));
                }
                Some(&*base)
            }
            None => None,
        };
        let started = std::time::Instant::now();
        // An index output is judged by the values it points at: the operand of its `argmax` or
        // `argsort` is evaluated as one more output.
        let mut evaluated = graph.clone();
        let index_operands: Vec<Option<(Op, Vec<usize>, usize)>> = graph
            .outputs
            .iter()
            .map(|&o| {
                let (source, positions) = ollie_graph::index_positions(graph, o)?;
                evaluated.outputs.push(graph.node(source).args[0]);
                Some((graph.node(source).op.clone(), positions, evaluated.outputs.len() - 1))
            })
            .collect();
        // A few rows at a time where the graph allows: float64 copies of the inputs by the chunk.
        let (reference, bounds) = ollie_graph::evaluate_with_error_bounds_chunked(&evaluated, ollie_graph::CHUNK_ELEMENTS, |k, rows| set.tensor(k, rows))?;
        tracing::debug!(seconds = started.elapsed().as_secs_f64(), "reference evaluated");
        let targets = graph
            .outputs
            .iter()
            .enumerate()
            .map(|(k, &o)| {
                if let Some((op, positions, operand)) = &index_operands[k] {
                    let tolerance = Tolerance::of(evaluated.ty(evaluated.outputs[*operand]).dtype);
                    let (values, bound) = (&reference[*operand], &bounds[*operand]);
                    return match *op {
                        Op::ArgReduce { op, axis } => OutputTarget::Index(IndexTarget::new(tolerance, op, axis, values, bound, positions, &reference[k])),
                        Op::ArgSort { axis, stable } => OutputTarget::Order(OrderTarget::new(tolerance, axis, stable, values, bound, positions, &reference[k])),
                        _ => unreachable!("an index source is an argmax, argmin or argsort"),
                    };
                }
                let tolerance = Tolerance::of(graph.ty(o).dtype);
                OutputTarget::Values(match base.map(|b| b.output_data(k)) {
                    Some(OutputData::F32(bytes)) => Target::from_reference(tolerance, &reference[k], &bounds[k], Some(&cast::<f32>(bytes)[..])),
                    Some(OutputData::F64(bytes)) => Target::from_reference(tolerance, &reference[k], &bounds[k], Some(&cast::<f64>(bytes)[..])),
                    Some(data) => Target::from_reference(tolerance, &reference[k], &bounds[k], data.widened().as_deref()),
                    None => Target::from_reference::<f64>(tolerance, &reference[k], &bounds[k], None),
                })
            })
            .collect();
        Ok(Expected { targets })
    }
}

/// The first bytes of an oracle file, and part of every file's name: a change of the format or
/// of what a target means changes it.
const FORMAT: &[u8] = b"ollie expected outputs, format 8\n";

/// The first word of an output's part of an oracle file: which kind of target follows.
const VALUES_TARGET: u64 = 0;
const INDEX_TARGET: u64 = 1;
const ORDER_TARGET: u64 = 2;

/// Expected outputs waiting to be written, at most: the oracle goes on while they are.
const PENDING_WRITES: usize = 2;

impl Disk {
    fn new(dir: PathBuf, context: [u8; 32], limit: u64) -> Disk {
        let (sender, receiver) = std::sync::mpsc::sync_channel::<(PathBuf, Arc<Expected>)>(PENDING_WRITES);
        let writer_dir = dir.clone();
        let pending = Arc::new((std::sync::Mutex::new(0usize), std::sync::Condvar::new()));
        let done = pending.clone();
        let writer = std::thread::spawn(move || {
            for (path, expected) in receiver {
                match write(&writer_dir, &path, &expected) {
                    Ok(()) => trim(&writer_dir, limit),
                    Err(e) => tracing::warn!("cannot store expected outputs in {}: {e}", writer_dir.display()),
                }
                let (count, changed) = &*done;
                *count.lock().expect("not poisoned") -= 1;
                changed.notify_all();
            }
        });
        Disk { dir, context, writes: Some(sender), pending, writer: Some(writer) }
    }

    fn path(&self, key: u128) -> PathBuf {
        let mut name = sha2::Sha256::new();
        name.update(self.context);
        name.update(key.to_le_bytes());
        let hex: String = name.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{hex}.expected"))
    }

    /// Where the seconds an input set took to compute are kept.
    fn cost_path(&self) -> PathBuf {
        let hex: String = sha2::Sha256::digest(self.context).iter().take(16).map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{hex}.cost"))
    }

    fn plan_path(&self, plan: &str) -> PathBuf {
        let mut name = sha2::Sha256::new();
        name.update(self.context);
        name.update(plan);
        let hex: String = name.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{hex}.plan"))
    }

    /// The expected outputs stored for `key`, if a file holds them whole and intact, and the
    /// seconds reading them took.
    fn read(&self, key: u128) -> Option<(Expected, f64)> {
        let path = self.path(key);
        let file = std::fs::File::open(&path).ok()?;
        let started = std::time::Instant::now();
        match read(file) {
            Some(e) => {
                // Used now: the last to be removed when the directory is over its limit.
                let _ = std::fs::File::options().write(true).open(&path).and_then(|f| f.set_modified(SystemTime::now()));
                let seconds = started.elapsed().as_secs_f64();
                tracing::debug!(path = %path.display(), seconds, "expected outputs read from disk");
                Some((e, seconds))
            }
            None => {
                tracing::warn!("{} is damaged; computing its expected outputs anew", path.display());
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Stores `expected` under `key` on the writer thread (the oracle goes on meanwhile).
    /// Failing to store costs only time later.
    fn write(&self, key: u128, expected: Arc<Expected>) {
        if let Some(writes) = &self.writes {
            *self.pending.0.lock().expect("not poisoned") += 1;
            if writes.send((self.path(key), expected)).is_err() {
                *self.pending.0.lock().expect("not poisoned") -= 1;
            }
        }
    }

    /// Waits until every file sent to the writer is on disk (synced).
    fn settle(&self) {
        let (count, changed) = &*self.pending;
        let mut n = count.lock().expect("not poisoned");
        while *n > 0 {
            n = changed.wait(n).expect("not poisoned");
        }
    }
}

impl Drop for Disk {
    /// Waits for the pending writes: a file is written whole or not at all.
    fn drop(&mut self) {
        drop(self.writes.take());
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// Writes `expected` to `path` through a temporary file in `dir`, so that no reader sees half
/// of one: [`FORMAT`], the number of outputs, per output its kind and shape, then for values
/// its element count, bytes per value (4 or 8), special count, normwise bound, values and
/// special elements (all little-endian 64-bit words but the values), for indices their count,
/// each element's start and the indices (32-bit words), then an XXH3-128 checksum of everything before it (the values
/// counted by their [`ollie_runner::checksum128`], which hashes a large buffer on two cores).
fn write(dir: &Path, path: &Path, expected: &Expected) -> std::io::Result<()> {
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    {
        let mut out = Checksummed { inner: std::io::BufWriter::with_capacity(1 << 20, file.as_file_mut()), hash: Xxh3::new() };
        out.put(FORMAT)?;
        out.put(&(expected.targets.len() as u64).to_le_bytes())?;
        for t in &expected.targets {
            let t = match t {
                OutputTarget::Values(t) => t,
                OutputTarget::Index(t) => {
                    let (shape, starts, indices) = t.parts();
                    let mut header = vec![INDEX_TARGET, shape.len() as u64];
                    header.extend(shape.iter().map(|&n| n as u64));
                    header.push(indices.len() as u64);
                    out.put(bytemuck::cast_slice(&header))?;
                    out.put(bytemuck::cast_slice(starts))?;
                    out.put(bytemuck::cast_slice(indices))?;
                    continue;
                }
                OutputTarget::Order(t) => {
                    let p = t.parts();
                    let mut header = vec![ORDER_TARGET, p.shape.len() as u64];
                    header.extend(p.shape.iter().map(|&n| n as u64));
                    header.extend([p.n as u64, p.stable as u64, p.low.len() as u64]);
                    out.put(bytemuck::cast_slice(&header))?;
                    out.put(bytemuck::cast_slice(p.low))?;
                    out.put(bytemuck::cast_slice(p.high))?;
                    out.put(bytemuck::cast_slice(p.cells))?;
                    out.put(bytemuck::cast_slice(p.reference))?;
                    continue;
                }
            };
            let (shape, values, specials, norm_bound) = t.parts();
            let mut header = vec![VALUES_TARGET, shape.len() as u64];
            header.extend(shape.iter().map(|&n| n as u64));
            header.extend([values.len() as u64, values.width() as u64, specials.len() as u64, norm_bound.to_bits()]);
            out.put(bytemuck::cast_slice(&header))?;
            // The values, the bulk of the file, are summed apart, on two cores.
            out.inner.write_all(values.bytes())?;
            out.hash.update(&ollie_runner::checksum128(values.bytes()).to_le_bytes());
            let specials: Vec<u64> = specials.iter().flat_map(|s| [s.index as u64, s.reference.to_bits(), s.baseline.to_bits()]).collect();
            out.put(bytemuck::cast_slice(&specials))?;
        }
        let sum = out.hash.digest128().to_le_bytes();
        out.inner.write_all(&sum)?;
        out.inner.flush()?;
    }
    // On disk before the oracle says it is settled: the kernel's write-back would otherwise
    // come later, perhaps while a kernel is being timed.
    file.as_file().sync_data()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// What [`write`] wrote, if it is whole and its checksum holds. Values are read straight into
/// the target's own allocation.
fn read(file: std::fs::File) -> Option<Expected> {
    let mut input = Checksummed { inner: std::io::BufReader::with_capacity(1 << 16, file), hash: Xxh3::new() };
    let mut format = vec![0u8; FORMAT.len()];
    input.take(&mut format)?;
    if format != FORMAT {
        return None;
    }
    let count = input.word()?;
    let mut targets = Vec::new();
    for _ in 0..count.min(1 << 20) {
        let kind = input.word()?;
        let rank = input.word()?;
        let shape = (0..rank.min(64)).map(|_| input.word().map(|n| n as usize)).collect::<Option<Vec<_>>>()?;
        let elements = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if shape.len() as u64 != rank || elements.is_none() {
            return None;
        }
        if kind == INDEX_TARGET {
            let count = input.word()? as usize;
            let mut starts = vec![0u32; elements? + 1];
            input.take(bytemuck::cast_slice_mut(&mut starts))?;
            let mut indices = vec![0u32; count.min(starts.last().copied()? as usize)];
            input.take(bytemuck::cast_slice_mut(&mut indices))?;
            targets.push(OutputTarget::Index(IndexTarget::from_parts(shape, starts, indices)?));
            continue;
        }
        if kind == ORDER_TARGET {
            let (n, stable, values) = (input.word()? as usize, input.word()? != 0, input.word()? as usize);
            // No more values than the file holds (a damaged header allocates nothing large).
            if values as u64 > input.inner.get_ref().metadata().ok()?.len() / 16 {
                return None;
            }
            let mut low = vec![0f64; values];
            input.take(bytemuck::cast_slice_mut(&mut low))?;
            let mut high = vec![0f64; low.len()];
            input.take(bytemuck::cast_slice_mut(&mut high))?;
            let mut cells = vec![0u64; elements?];
            input.take(bytemuck::cast_slice_mut(&mut cells))?;
            let mut reference = vec![0u32; cells.len()];
            input.take(bytemuck::cast_slice_mut(&mut reference))?;
            let parts = OrderParts { shape: &shape, n, stable, low: &low, high: &high, cells: &cells, reference: &reference };
            targets.push(OutputTarget::Order(OrderTarget::from_parts(parts)?));
            continue;
        }
        if kind != VALUES_TARGET {
            return None;
        }
        let (n, width, specials, norm_bound) = (input.word()? as usize, input.word()?, input.word()? as usize, f64::from_bits(input.word()?));
        if elements.and_then(|e| e.checked_mul(2)) != Some(n) {
            return None;
        }
        let values = match width {
            4 => {
                let mut v = vec![0f32; n];
                input.take_values(bytemuck::cast_slice_mut(&mut v))?;
                Values::F32(v)
            }
            8 => {
                let mut v = vec![0f64; n];
                input.take_values(bytemuck::cast_slice_mut(&mut v))?;
                Values::F64(v)
            }
            _ => return None,
        };
        let mut words = vec![0u64; specials.min(n).checked_mul(3)?];
        input.take(bytemuck::cast_slice_mut(&mut words))?;
        let specials = words.chunks_exact(3).map(|w| Special { index: w[0] as usize, reference: f64::from_bits(w[1]), baseline: f64::from_bits(w[2]) }).collect();
        targets.push(OutputTarget::Values(Target::from_parts(shape, values, specials, norm_bound)?));
    }
    let computed = input.hash.digest128();
    let mut sum = [0u8; 16];
    input.inner.read_exact(&mut sum).ok()?;
    let mut rest = [0u8; 1];
    let at_end = matches!(input.inner.read(&mut rest), Ok(0));
    (targets.len() as u64 == count && u128::from_le_bytes(sum) == computed && at_end).then_some(Expected { targets })
}

/// A reader or writer that hashes what passes through it.
struct Checksummed<T> {
    inner: T,
    hash: Xxh3,
}

impl<W: Write> Checksummed<W> {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.hash.update(bytes);
        self.inner.write_all(bytes)
    }
}

impl Checksummed<std::io::BufReader<std::fs::File>> {
    /// Reads a target's values into `bytes`, the two halves on two cores, straight from the
    /// file (past the reader's buffer), and sums them as [`write`] did.
    fn take_values(&mut self, bytes: &mut [u8]) -> Option<()> {
        use std::io::Seek;
        use std::os::unix::fs::FileExt;
        let at = self.inner.stream_position().ok()?;
        let file = self.inner.get_ref();
        let (a, b) = bytes.split_at_mut(bytes.len() / 2);
        let half = a.len() as u64;
        let (ra, rb) = std::thread::scope(|s| {
            let ra = s.spawn(|| file.read_exact_at(a, at).ok());
            (ra.join().expect("reading does not panic"), file.read_exact_at(b, at + half).ok())
        });
        ra.and(rb)?;
        self.inner.seek_relative(bytes.len() as i64).ok()?;
        self.hash.update(&ollie_runner::checksum128(bytes).to_le_bytes());
        Some(())
    }
}

impl<R: Read> Checksummed<R> {
    fn take(&mut self, bytes: &mut [u8]) -> Option<()> {
        self.inner.read_exact(bytes).ok()?;
        self.hash.update(bytes);
        Some(())
    }

    fn word(&mut self) -> Option<u64> {
        let mut w = [0u8; 8];
        self.take(&mut w)?;
        Some(u64::from_le_bytes(w))
    }
}

/// Removes the files used longest ago until `dir`'s oracle files hold at most `limit` bytes.
fn trim(dir: &Path, limit: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut files: Vec<(SystemTime, u64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "expected"))
        .filter_map(|e| e.metadata().ok().map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len(), e.path())))
        .collect();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort();
    for (_, len, path) in files {
        if total <= limit {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

/// Bytes the verifier needs at most to verify or time kernels of `graph`, beyond ollie itself:
/// two input sets as the kernel takes them (the one being tested, the one timing uses), one in
/// float64 while the reference evaluates it with its bounds (working values, and the magnitudes
/// a contraction takes of its operands), each tensor again in the shared buffers of up to three
/// kernel processes (the candidate, the kernel it is timed against, the naive one), and the
/// oracle's budget. An estimate from above (counting every element as float32 where the kernel
/// holds it, float64 in the reference), so that a problem too large for the machine is refused
/// before anything runs rather than ended by the out-of-memory killer. An index output's operand
/// counts as one more output (the reference evaluates it, with its bounds, to judge the index).
pub fn memory_needed(graph: &Graph) -> u64 {
    let elements = |t: &ollie_graph::TensorType| t.shape.iter().product::<usize>() as u64;
    let inputs: u64 = graph.params.iter().map(|p| elements(&p.ty)).sum();
    let outputs: u64 = graph.outputs.iter().map(|&o| elements(graph.ty(o))).sum();
    let operands: u64 = graph.outputs.iter().filter_map(|&o| graph.index_source(o)).map(|a| elements(graph.ty(graph.node(a).args[0]))).sum();
    let f64s = 2 * inputs + 6 * (outputs + operands);
    let f32s = 2 * inputs + 3 * (inputs + outputs);
    8 * f64s + 4 * f32s + ORACLE_BYTES as u64
}
