//! The cost model: features of a candidate (the roofline's estimate of its scheduled loop nest,
//! what makes up that estimate, and its compiler flags), all relative to the work's floor so
//! that they mean the same on any spec, and a random forest (smartcore's) that learns how far
//! measured times lie from that estimate — on this search's timings and on those of earlier
//! searches on the same machine class — so that of many proposals the search measures the few
//! most promising.

use ollie_loops::{BufferKind, Expr, LoopKind, LoopNest, Stmt, VarId};
use smartcore::ensemble::random_forest_regressor::{RandomForestRegressor, RandomForestRegressorParameters};
use smartcore::linalg::basic::matrix::DenseMatrix;

use crate::physics::{estimate, Roof};
use crate::{Form, Kernel};

/// The features' names, in the order [`features`] gives them. Rows kept from earlier searches
/// are used only while these names are what they were written with.
pub const FEATURES: &[&str] = &[
    "log2 estimate over floor",
    "log2 compute estimate over floor",
    "log2 memory estimate over floor",
    "log2 bytes into L1 over compulsory",
    "log2 bytes into L2 over compulsory",
    "log2 bytes from memory over compulsory",
    "log2 operations over FLOPs",
    "parallel share",
    "vector share",
    "log2 parallel regions entered",
    "log2 outermost parallel extent",
    "share under explicit vectors",
    "log2 vector width",
    "share under simd",
    "share under unroll",
    "share of contiguous loads",
    "share of invariant loads",
    "share of transcendental operations",
    "log2 temporary bytes over compulsory",
    "passes over memory",
    "loops",
    "schedule steps",
    "log2 floor seconds",
    "log2 FLOPs over compulsory bytes",
    "share in accumulation chains",
    "log2 chains a loop body carries",
    "log2 unroll factor",
    "log2 innermost extent",
    "share in vector tails",
    "share of stores streamed",
    "prefetches over loads",
    "-O3",
    "-funroll-loops",
    "-fno-math-errno",
    "-fno-trapping-math",
    "-fno-tree-vectorize",
    "vector math (libmvec)",
    "written whole",
];

/// What a walk over the nest counts, each weighted by how often it runs.
#[derive(Default)]
struct Counts {
    loads: f64,
    stores: f64,
    arithmetic: f64,
    transcendental: f64,
    loops: f64,
    parallel_extent: f64,
    vector: f64,
    vector_width: f64,
    simd: f64,
    unrolled: f64,
    contiguous: f64,
    invariant: f64,
    /// Stores accumulating into one element along their innermost loop (each waits for the
    /// last: a chain of latencies), and the log2 of how many such chains their loop's body
    /// carries side by side (independent chains hide each other's latency).
    chained: f64,
    chains: f64,
    unroll: f64,
    innermost_extent: f64,
    tail: f64,
    /// Stores past the caches (`stream`): no read for ownership, but how they fare against
    /// cached stores is the machine's (slower on some, in either order).
    streamed: f64,
    prefetches: f64,
}

/// What encloses a statement: how often it runs, the innermost loop's variable and extent, and
/// the kinds of the loops around it.
#[derive(Clone, Copy)]
struct Around {
    trips: f64,
    innermost: Option<VarId>,
    extent: f64,
    parallel: bool,
    vector: Option<u32>,
    simd: bool,
    /// The log2 of the unrolling factor asked for by the nearest unrolled loop around.
    unroll: f64,
    /// The share of the nearest vector loop's iterations its scalar tail runs.
    tail: f64,
    /// Whether the nearest vector loop streams its stores.
    streamed: bool,
    /// Chained stores directly in the innermost loop's body.
    chains: usize,
}

/// Whether `s` stores into an element it reads, which does not move with `v`: a reduction along
/// `v` carried in one accumulator.
fn chained(s: &Stmt, v: VarId) -> bool {
    fn reads(e: &Expr, buffer: ollie_loops::BufferId, offset: &ollie_loops::Affine) -> bool {
        match e {
            Expr::Load { buffer: b, offset: o } => *b == buffer && o == offset,
            Expr::Gather { indices, .. } => indices.iter().any(|d| reads(&d.value, buffer, offset)),
            Expr::Const(_) | Expr::Index(_) => false,
            Expr::Unary(_, a) | Expr::Cast(_, a) => reads(a, buffer, offset),
            Expr::Binary(_, a, b) | Expr::Compare(_, a, b) => reads(a, buffer, offset) || reads(b, buffer, offset),
            Expr::Select(s, a, b) => reads(s, buffer, offset) || reads(a, buffer, offset) || reads(b, buffer, offset),
            Expr::Within { inside, outside, .. } => reads(inside, buffer, offset) || reads(outside, buffer, offset),
        }
    }
    matches!(s, Stmt::Store { buffer, offset, value } if offset.coefficient(v) == 0 && reads(value, *buffer, offset))
}

fn walk(body: &[Stmt], at: Around, c: &mut Counts) {
    for s in body {
        match s {
            Stmt::Loop { var, extent, kind, body } => {
                c.loops += 1.0;
                let chains = body.iter().filter(|s| chained(s, *var)).count();
                let mut inner = Around { trips: at.trips * *extent as f64, innermost: Some(*var), extent: *extent as f64, chains, ..at };
                match kind {
                    LoopKind::Parallel if !at.parallel => {
                        c.parallel_extent = c.parallel_extent.max(*extent as f64);
                        inner.parallel = true;
                    }
                    LoopKind::Vector(w) | LoopKind::Stream(w) => {
                        inner.vector = Some(*w);
                        inner.streamed = matches!(kind, LoopKind::Stream(_));
                        inner.tail = (*extent % *w as usize) as f64 / (*extent).max(1) as f64;
                    }
                    LoopKind::Simd => inner.simd = true,
                    LoopKind::Unrolled(f) => inner.unroll = f64::from(*f).log2(),
                    // About `n log₂ n` steps of a merge sort.
                    // A whole sort costs n log n; a selection of k, about n.
                    LoopKind::Sort(ollie_loops::Keep::All) | LoopKind::ArgSort(ollie_loops::Keep::All) => inner.trips *= (*extent as f64).log2().max(1.0),
                    LoopKind::Sort(_) | LoopKind::ArgSort(_) => {}
                    _ => {}
                }
                walk(body, inner, c);
            }
            Stmt::Prefetch { .. } => c.prefetches += at.trips,
            Stmt::Store { value, .. } => {
                let n = at.trips;
                c.stores += n;
                if let Some(w) = at.vector {
                    c.vector += n;
                    c.vector_width += n * f64::from(w).log2();
                    c.tail += n * at.tail;
                    c.streamed += if at.streamed { n } else { 0.0 };
                }
                c.simd += if at.simd { n } else { 0.0 };
                c.unrolled += if at.unroll > 0.0 { n } else { 0.0 };
                c.unroll += n * at.unroll;
                c.innermost_extent += n * at.extent.max(1.0).log2();
                if at.innermost.is_some_and(|v| chained(s, v)) {
                    c.chained += n;
                    c.chains += n * (at.chains as f64).log2();
                }
                expr(value, at, c);
            }
        }
    }
}

fn expr(e: &Expr, at: Around, c: &mut Counts) {
    let n = at.trips;
    match e {
        Expr::Load { offset, .. } => {
            c.loads += n;
            match at.innermost.map(|v| offset.coefficient(v)) {
                Some(1) => c.contiguous += n,
                Some(0) | None => c.invariant += n,
                _ => {}
            }
        }
        // A gather is a load at a computed offset: contiguous when only its row moves.
        Expr::Gather { offset, indices, .. } => {
            c.loads += n;
            let moves = |v| indices.iter().any(|d| d.value.depends_on(v));
            match at.innermost.map(|v| (offset.coefficient(v), moves(v))) {
                Some((1, false)) => c.contiguous += n,
                Some((0, false)) | None => c.invariant += n,
                _ => {}
            }
            indices.iter().for_each(|d| expr(&d.value, at, c));
        }
        Expr::Const(_) | Expr::Index(_) => {}
        Expr::Unary(op, a) => {
            if op.is_function() {
                c.transcendental += n;
            } else {
                c.arithmetic += n;
            }
            expr(a, at, c);
        }
        Expr::Cast(_, a) => expr(a, at, c),
        Expr::Binary(_, a, b) | Expr::Compare(_, a, b) => {
            c.arithmetic += n;
            expr(a, at, c);
            expr(b, at, c);
        }
        Expr::Select(s, a, b) => {
            c.arithmetic += n;
            expr(s, at, c);
            expr(a, at, c);
            expr(b, at, c);
        }
        Expr::Within { inside, .. } => {
            c.arithmetic += 2.0 * n;
            expr(inside, at, c);
        }
    }
}

/// The features of `kernel` (a schedule replayed on `naive`, or a kernel written whole, which is
/// described by the naive nest and its flags) on `roof`, in the order of [`FEATURES`].
pub fn features(kernel: &Kernel, naive: &LoopNest, roof: &Roof) -> Vec<f64> {
    let (nest, flags, steps, written) = match kernel.form(naive) {
        Form::Scheduled { schedule: s, naive } => match s.apply(naive) {
            Ok(nest) => (nest, &s.flags[..], s.steps.len(), false),
            Err(_) => (naive.clone(), &s.flags[..], s.steps.len(), false),
        },
        Form::Written { flags, .. } => (naive.clone(), flags, 0, true),
    };
    let mut c = Counts::default();
    let top = Around { trips: 1.0, innermost: None, extent: 1.0, parallel: false, vector: None, simd: false, unroll: 0.0, tail: 0.0, streamed: false, chains: 0 };
    walk(&nest.body, top, &mut c);
    let e = estimate(&nest, flags, roof);
    let log2 = |x: f64| (1.0 + x).log2();
    let over = |x: f64, of: f64| (x.max(f64::MIN_POSITIVE) / of.max(f64::MIN_POSITIVE)).log2();
    let share = |x: f64, of: f64| if of > 0.0 { x / of } else { 0.0 };
    let temporaries: usize = nest.buffers.iter().filter(|b| b.kind == BufferKind::Temp && b.registers.is_none()).map(|b| b.bytes()).sum();
    let has = |flag: &str| f64::from(u8::from(flags.iter().any(|f| f == flag)));
    let (floor, bytes) = (roof.floor_seconds, roof.bytes.max(1.0));
    let features = vec![
        over(e.seconds, floor),
        over(e.compute_seconds, floor),
        over(e.memory_seconds, floor),
        over(e.traffic[0], bytes),
        over(e.traffic[1], bytes),
        over(e.traffic[2], bytes),
        over(e.operations, roof.flops.max(1.0)),
        e.parallel_share,
        e.vector_share,
        log2(e.parallel_entries),
        log2(c.parallel_extent),
        share(c.vector, c.stores),
        share(c.vector_width, c.vector),
        share(c.simd, c.stores),
        share(c.unrolled, c.stores),
        share(c.contiguous, c.loads),
        share(c.invariant, c.loads),
        share(c.transcendental, c.arithmetic + c.transcendental),
        log2(temporaries as f64 / bytes),
        nest.body.len() as f64,
        c.loops,
        steps as f64,
        floor.max(f64::MIN_POSITIVE).log2(),
        log2(roof.flops / bytes),
        share(c.chained, c.stores),
        share(c.chains, c.chained),
        share(c.unroll, c.stores),
        share(c.innermost_extent, c.stores),
        share(c.tail, c.vector),
        share(c.streamed, c.stores),
        share(c.prefetches, c.loads),
        has("-O3"),
        has("-funroll-loops"),
        has("-fno-math-errno"),
        has("-fno-trapping-math"),
        has("-fno-tree-vectorize"),
        has("-lmvec"),
        f64::from(u8::from(written)),
    ];
    debug_assert_eq!(features.len(), FEATURES.len());
    features
}

type Forest = RandomForestRegressor<f64, f64, DenseMatrix<f64>, Vec<f64>>;

/// Timings the model needs before it ranks anything.
pub const MIN_SAMPLES: usize = 12;

/// Recent predictions a model is judged on before it is trusted by its own record.
const TRIAL: usize = 24;

/// Timings of this search the model fits on, at most: the latest. A forest grown on n timings
/// holds about n nodes a tree, so the window bounds the model's memory (a few MiB) as well as a
/// fit's cost, and a long search reaches that bound in its first minutes.
const WINDOW: usize = 1024;

/// Timings of earlier searches the model fits on, at most (the latest).
pub const PRIOR: usize = 3072;

/// How many times each of this search's timings is counted in a fit (smartcore's forest takes
/// no sample weights, so they are repeated): the search's own timings say most about how its
/// candidates order, the earlier searches' fill in where it has none.
const OWN_WEIGHT: usize = 2;

/// A refit is due once this search has timed `1/REFIT_SHARE` as many kernels again as it had
/// at the last fit, and never before [`REFIT_MIN`] new ones: early in a search every pair of
/// timings changes the order most, later a fit (tens of milliseconds on the full prior) would
/// cost more than it buys.
const REFIT_SHARE: usize = 16;
const REFIT_MIN: usize = 2;

/// Pairwise accuracy, on the pairs its timings' noise tells apart, that a model needs to be
/// trusted: on its latest predictions within the search, or before it has made [`TRIAL`] of
/// them, on the latest earlier search when fitted on those before it.
pub const TRUSTED: f64 = 0.65;

/// A timed kernel as the model learns from it and is judged on: its features, the log of its
/// time over the work's floor, the log bounds its measurement's noise puts around that (p10..p90
/// of its timing), and the search it was timed in.
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    pub features: Vec<f64>,
    pub log_time: f64,
    pub log_low: f64,
    pub log_high: f64,
    pub search: u64,
}

impl Timed {
    /// A timing of `log_time` whose noise puts it between `noise.0` and `noise.1` times itself
    /// (factors), timed in this search; `None` where any of them is not finite.
    pub fn new(features: Vec<f64>, log_time: f64, noise: (f64, f64)) -> Option<Timed> {
        let t = Timed { features, log_time, log_low: log_time + noise.0.ln(), log_high: log_time + noise.1.ln(), search: u64::MAX };
        (t.log_time.is_finite() && t.log_low.is_finite() && t.log_high.is_finite()).then_some(t)
    }

    /// What the forest learns: how far the time lies from the roofline's estimate (in natural
    /// log, as the time).
    fn residual(&self) -> f64 {
        self.log_time - physics(&self.features)
    }
}

/// The roofline's estimate over the floor, in natural log (the first feature is its log2).
fn physics(features: &[f64]) -> f64 {
    features.first().copied().unwrap_or(0.0) * std::f64::consts::LN_2
}

/// A random forest over [`features`], refitted as timings come in, on this search's latest and
/// earlier searches' (`prior`). It earns the right to choose which proposals are measured (see
/// [`TRUSTED`]): each kernel measured is first predicted, before its time is known.
#[derive(Default)]
pub struct CostModel {
    prior: Vec<Timed>,
    /// The prior's own record: fitted on its earlier searches, its pairwise accuracy on the
    /// latest one.
    prior_accuracy: Option<f64>,
    samples: std::collections::VecDeque<Timed>,
    forest: Option<Forest>,
    /// Timings the forest was fitted on.
    fitted_on: usize,
    /// Samples added since the forest was fitted.
    since_fit: usize,
    /// Predictions made before the times were known, with the timings.
    trial: std::collections::VecDeque<(f64, Timed)>,
}

impl CostModel {
    /// A model that starts from earlier searches' timings on this machine class (the latest
    /// [`PRIOR`] of them are kept).
    pub fn with_prior(mut prior: Vec<Timed>) -> CostModel {
        prior.retain(|t| t.features.len() == FEATURES.len() && t.log_time.is_finite());
        if prior.len() > PRIOR {
            prior.drain(..prior.len() - PRIOR);
        }
        let prior_accuracy = prior.last().and_then(|last| {
            let latest = last.search;
            let (earlier, tested): (Vec<Timed>, Vec<Timed>) = prior.iter().cloned().partition(|t| t.search != latest);
            held_out(&earlier, &tested)?.pairwise_accuracy
        });
        CostModel { prior, prior_accuracy, ..CostModel::default() }
    }

    /// A measured kernel: predicted first (the prediction is returned, and judged in the
    /// trial), then learnt from.
    pub fn add(&mut self, timed: Timed) -> Option<f64> {
        if !timed.log_time.is_finite() {
            return None;
        }
        let predicted = self.predict(std::slice::from_ref(&timed.features)).and_then(|p| p.first().copied());
        if let Some(p) = predicted {
            self.trial.push_back((p, timed.clone()));
            if self.trial.len() > TRIAL {
                self.trial.pop_front();
            }
        }
        self.samples.push_back(timed);
        self.since_fit += 1;
        // A long search ranks by its latest timings: the chain's neighbourhood, and a fit that
        // costs the same in the second hour as in the first.
        if self.samples.len() > WINDOW {
            self.samples.pop_front();
        }
        predicted
    }

    /// How well the model has ranked: its pairwise accuracy on its latest [`TRIAL`]
    /// predictions (on the pairs their noise tells apart), or, before it has made that many,
    /// the prior's record.
    pub fn trial(&self) -> Option<f64> {
        if self.trial.len() < TRIAL {
            return self.prior_accuracy;
        }
        let (p, m): (Vec<f64>, Vec<Timed>) = self.trial.iter().cloned().unzip();
        pairwise(&p, &m).0
    }

    /// Whether the model is trusted to choose ([`CostModel::trial`] at least [`TRUSTED`]).
    pub fn trusted(&self) -> bool {
        self.trial().is_some_and(|a| a >= TRUSTED)
    }

    /// Predicted log times (over the floor) of proposals, if the model is trusted; `None`
    /// otherwise, and the search measures them as proposed.
    pub fn rank(&mut self, features: &[Vec<f64>]) -> Option<Vec<f64>> {
        if !self.trusted() {
            return None;
        }
        self.predict(features)
    }

    /// Timings the model learns from: this search's and earlier searches'.
    pub fn samples(&self) -> usize {
        self.samples.len() + self.prior.len()
    }

    /// Timings the latest fit was fitted on.
    pub fn fitted_on(&self) -> usize {
        self.fitted_on
    }

    /// Predicted log times over the floor, or `None` while there are too few timings to fit on.
    /// Refits as this search's timings come in (see [`REFIT_SHARE`]).
    pub fn predict(&mut self, features: &[Vec<f64>]) -> Option<Vec<f64>> {
        let due = self.since_fit >= REFIT_MIN.max(self.samples.len() / REFIT_SHARE);
        if self.samples() >= MIN_SAMPLES && (self.forest.is_none() || due) {
            // The old forest goes before the new one grows: never two in memory.
            self.forest = None;
            let own = (0..OWN_WEIGHT).flat_map(|_| self.samples.iter());
            let rows: Vec<&Timed> = self.prior.iter().chain(own).collect();
            self.forest = fit(&rows);
            self.fitted_on = self.samples();
            self.since_fit = 0;
        }
        predict(self.forest.as_ref()?, features)
    }
}

fn fit(rows: &[&Timed]) -> Option<Forest> {
    let x = DenseMatrix::from_2d_vec(&rows.iter().map(|t| t.features.clone()).collect()).ok()?;
    let y: Vec<f64> = rows.iter().map(|t| t.residual()).collect();
    let parameters = RandomForestRegressorParameters::default().with_n_trees(32).with_min_samples_leaf(3).with_seed(7);
    match RandomForestRegressor::fit(&x, &y, parameters) {
        Ok(forest) => Some(forest),
        Err(e) => {
            tracing::debug!("the cost model could not be fitted: {e}");
            None
        }
    }
}

/// Predicted log times over the floor: the roofline's estimate, corrected by the forest.
fn predict(forest: &Forest, features: &[Vec<f64>]) -> Option<Vec<f64>> {
    if features.is_empty() {
        return Some(Vec::new());
    }
    let x = DenseMatrix::from_2d_vec(&features.to_vec()).ok()?;
    let corrections = forest.predict(&x).ok()?;
    Some(features.iter().zip(corrections).map(|(f, c)| physics(f) + c).collect())
}

/// Spearman's rank correlation of two equally long series (ties share their mean rank); `None`
/// for fewer than three pairs or a constant series.
pub fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    fn ranks(x: &[f64]) -> Vec<f64> {
        let mut order: Vec<usize> = (0..x.len()).collect();
        order.sort_by(|&i, &j| x[i].total_cmp(&x[j]));
        let mut r = vec![0.0; x.len()];
        let mut i = 0;
        while i < order.len() {
            let mut j = i;
            while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
                j += 1;
            }
            for &k in &order[i..=j] {
                r[k] = (i + j) as f64 / 2.0;
            }
            i = j + 1;
        }
        r
    }
    if a.len() != b.len() || a.len() < 3 {
        return None;
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let mean = (a.len() - 1) as f64 / 2.0;
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        cov += (x - mean) * (y - mean);
        va += (x - mean) * (x - mean);
        vb += (y - mean) * (y - mean);
    }
    (va > 0.0 && vb > 0.0).then(|| cov / (va * vb).sqrt())
}

/// How well a model fitted on some timings ranks others: the share of the pairs of them their
/// noise tells apart that it orders right (a tie in prediction counts half), how many such pairs
/// there are, and Spearman's ρ over all of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeldOut {
    pub pairwise_accuracy: Option<f64>,
    pub pairs: usize,
    pub spearman: Option<f64>,
    pub tested: usize,
    pub trained_on: usize,
}

/// [`HeldOut`] of a model fitted on `trained` and tested on `tested`; `None` with fewer than
/// [`MIN_SAMPLES`] to fit on or nothing to test.
pub fn held_out(trained: &[Timed], tested: &[Timed]) -> Option<HeldOut> {
    if trained.len() < MIN_SAMPLES || tested.is_empty() {
        return None;
    }
    let forest = fit(&trained.iter().collect::<Vec<_>>())?;
    let predicted = predict(&forest, &tested.iter().map(|t| t.features.clone()).collect::<Vec<_>>())?;
    let measured: Vec<f64> = tested.iter().map(|t| t.log_time).collect();
    let (pairwise_accuracy, pairs) = pairwise(&predicted, tested);
    Some(HeldOut { pairwise_accuracy, pairs, spearman: spearman(&predicted, &measured), tested: tested.len(), trained_on: trained.len() })
}

/// A search replayed as it ran: a model started from `earlier` predicts each of `timed` before
/// learning it, in order, refitting as it would have; the pairwise accuracy of those
/// predictions and its pairs (the search's own `cost_model` figure, had it timed these kernels).
pub fn replay(earlier: &[Timed], timed: &[Timed]) -> (Option<f64>, usize) {
    let mut model = CostModel::with_prior(earlier.to_vec());
    let (predicted, measured): (Vec<f64>, Vec<Timed>) = timed.iter().filter_map(|t| Some((model.add(t.clone())?, t.clone()))).unzip();
    pairwise(&predicted, &measured)
}

/// Of the pairs of `measured` kernels whose noise bounds do not overlap, the share `predicted`
/// orders as they measured (ties in prediction half right), and how many such pairs there are.
pub fn pairwise(predicted: &[f64], measured: &[Timed]) -> (Option<f64>, usize) {
    let (mut right, mut pairs) = (0.0, 0usize);
    for i in 0..measured.len() {
        for j in i + 1..measured.len() {
            let (a, b) = (&measured[i], &measured[j]);
            if a.log_high < b.log_low || b.log_high < a.log_low {
                pairs += 1;
                let (p, m) = (predicted[i] - predicted[j], a.log_time - b.log_time);
                right += if p == 0.0 {
                    0.5
                } else if (p < 0.0) == (m < 0.0) {
                    1.0
                } else {
                    0.0
                };
            }
        }
    }
    ((pairs > 0).then(|| right / pairs as f64), pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(features: Vec<f64>, t: f64, noise: f64, search: u64) -> Timed {
        Timed { features, log_time: t, log_low: t - noise, log_high: t + noise, search }
    }

    fn roof() -> Roof {
        Roof { threads: 2.0, lanes: 16.0, peak_flops_per_thread: 100e9, memory_bandwidth: 20e9, memory_bandwidth_one: 12e9, cache_bandwidth: 100e9, l1_bytes: 32e3, l2_bytes: 1e6, last_level_bytes: 8e6, floor_seconds: 1e-3, flops: 4096.0 * 4096.0, bytes: 4096.0 * 4097.0 * 4.0 }
    }

    /// The named features of `schedule` replayed on `naive`.
    fn named(schedule: &str, naive: &LoopNest) -> std::collections::HashMap<&'static str, f64> {
        let kernel = Kernel::Scheduled(ollie_loops::Schedule::parse(schedule).unwrap());
        FEATURES.iter().copied().zip(features(&kernel, naive, &roof())).collect()
    }

    #[test]
    fn a_reduction_in_one_accumulator_is_a_chain_that_partial_sums_break() {
        // Row sums of a 4096×n matrix.
        let sum = |n: usize| ollie_loops::parse(&format!("kernel sum(x: f32[4096,{n}]) -> (y: f32[4096])\nfor i0 in 0..4096 {{\n  y[i0] = 0.0\n  for i1 in 0..{n} {{\n    y[i0] = add(y[i0], x[{n} * i0 + i1])\n  }}\n}}\n")).unwrap();
        let naive = sum(4096);
        let plain = named("", &naive);
        assert!(plain["share in accumulation chains"] > 0.99, "{plain:?}");
        assert_eq!(plain["log2 chains a loop body carries"], 0.0, "one chain");
        assert_eq!((plain["log2 unroll factor"], plain["log2 innermost extent"]), (0.0, 12.0));
        let partials = named("accumulators i1 8\n", &naive);
        assert!(partials["share in accumulation chains"] < 0.2, "{partials:?}");
        let unrolled = named("unroll i1 4\n", &naive);
        assert_eq!(unrolled["log2 unroll factor"], unrolled["share under unroll"] * 2.0);
        let scale = ollie_loops::parse("kernel scale(x: f32[4100]) -> (y: f32[4100])\nfor i0 in 0..4100 {\n  y[i0] = mul(x[i0], 2.0)\n}\n").unwrap();
        let vector = named("vectorize i0 16\n", &scale);
        assert!(vector["share in vector tails"] > 0.0, "4100 = 256·16 + 4: {vector:?}");
    }

    #[test]
    fn streamed_stores_are_told_from_cached_ones() {
        // The roofline's estimate is the same for both: only this feature tells them apart.
        let scale = ollie_loops::parse("kernel scale(x: f32[4096]) -> (y: f32[4096])\nfor i0 in 0..4096 {\n  y[i0] = mul(x[i0], 2.0)\n}\n").unwrap();
        let cached = named("vectorize i0 16\n", &scale);
        let streamed = named("vectorize i0 16\nstream i0\n", &scale);
        assert_eq!((cached["share of stores streamed"], streamed["share of stores streamed"]), (0.0, 1.0));
    }

    #[test]
    fn pairwise_accuracy_counts_only_pairs_the_noise_tells_apart() {
        let timed = |t: f64, noise: f64| timed(Vec::new(), t, noise, 0);
        // 1.0 and 1.1 overlap (noise 0.2): not a pair. The other pairs: (1.0, 3.0), (1.1, 3.0).
        let measured = [timed(1.0, 0.2), timed(1.1, 0.2), timed(3.0, 0.2)];
        assert_eq!(pairwise(&[0.0, 5.0, 1.0], &measured), (Some(0.5), 2), "(1.0, 3.0) right, (1.1, 3.0) wrong");
        assert_eq!(pairwise(&[0.0, 0.0, 1.0], &measured), (Some(1.0), 2));
        assert_eq!(pairwise(&[1.0, 1.0, 1.0], &measured), (Some(0.5), 2), "a constant prediction is a coin");
        assert_eq!(pairwise(&[0.0, 1.0], &[timed(1.0, 1.0), timed(1.5, 1.0)]), (None, 0), "nothing told apart");
    }

    #[test]
    fn spearman_is_one_for_the_same_order_and_minus_one_for_the_reverse() {
        let a = [1.0, 2.0, 3.0, 10.0];
        assert_eq!(spearman(&a, &[0.1, 0.2, 0.3, 0.4]), Some(1.0));
        assert_eq!(spearman(&a, &[4.0, 3.0, 2.0, 1.0]), Some(-1.0));
        assert_eq!(spearman(&a, &[1.0, 1.0, 1.0, 1.0]), None);
        let tied = spearman(&[1.0, 1.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!(tied > 0.9 && tied < 1.0, "{tied}");
    }

    /// A point whose "time" doubles with feature 1 and halves with feature 3 (the roofline's
    /// estimate, feature 0, is off by them): a forest fitted on some points ranks others.
    fn point(i: usize, search: u64) -> Timed {
        let f: Vec<f64> = (0..FEATURES.len()).map(|k| ((i * (k + 3)) % 7) as f64).collect();
        let t = physics(&f) + f[1] - f[3];
        timed(f, t, 0.1, search)
    }

    #[test]
    fn the_forest_learns_how_far_times_lie_from_the_estimate() {
        let points: Vec<Timed> = (0..60).map(|i| point(i, 0)).collect();
        let h = held_out(&points[..45], &points[45..]).unwrap();
        assert_eq!((h.tested, h.trained_on), (15, 45));
        assert!(h.spearman.is_some_and(|rho| rho > 0.8), "{h:?}");
        assert!(h.pairs > 0 && h.pairwise_accuracy.is_some_and(|a| a > 0.8), "{h:?}");
        let mut model = CostModel::default();
        assert_eq!(model.predict(&[points[0].features.clone()]), None, "no model before any timing");
        for p in points.iter().take(40) {
            model.add(p.clone());
        }
        let p = model.predict(&[point(100, 0).features, point(101, 0).features]).unwrap();
        assert_eq!(p.len(), 2);
        // It has predicted the last timings before seeing them, and ranked them well: trusted.
        assert!(model.trusted(), "{:?}", model.trial());
        assert!(model.rank(&[point(100, 0).features]).is_some());
    }

    #[test]
    fn this_searchs_timings_overrule_earlier_searches_where_they_disagree() {
        // Earlier searches (another spec: another floor) where feature 1 slows and feature 3
        // speeds; in this one the reverse. After four dozen of its own timings the model
        // orders this search's kernels as this search measures them.
        let floor = FEATURES.iter().position(|&n| n == "log2 floor seconds").unwrap();
        let here = |i: usize| {
            let mut p = point(i, u64::MAX);
            p.features[floor] = 5.0;
            p.log_time = physics(&p.features) - p.features[1] + p.features[3];
            timed(p.features, p.log_time, 0.1, u64::MAX)
        };
        let earlier = (0..300).map(|i| {
            let mut p = point(i, i as u64 / 100);
            p.features[floor] = -5.0;
            p
        });
        let earlier: Vec<Timed> = earlier.collect();
        let mut model = CostModel::with_prior(earlier.clone());
        for i in 0..48 {
            model.add(here(i));
        }
        let tested: Vec<Timed> = (300..340).map(here).collect();
        let predicted = model.predict(&tested.iter().map(|t| t.features.clone()).collect::<Vec<_>>()).unwrap();
        let (accuracy, pairs) = pairwise(&predicted, &tested);
        assert!(pairs > 0 && accuracy.is_some_and(|a| a > 0.8), "{accuracy:?} of {pairs}");
        // `ollie model`'s replay of such a search credits that; the earlier searches' model
        // alone orders it backwards.
        let search: Vec<Timed> = (0..96).map(here).collect();
        let alone = held_out(&earlier, &search).unwrap().pairwise_accuracy.unwrap();
        let replayed = replay(&earlier, &search).0.unwrap();
        assert!(alone < 0.5 && replayed > alone + 0.2, "alone {alone}, replayed {replayed}");
    }

    #[test]
    fn a_model_that_ranks_poorly_is_not_trusted_to_choose() {
        // Times unrelated to the features (a hash of the index): it fits, but cannot rank.
        let mut model = CostModel::default();
        for i in 0..80usize {
            let f: Vec<f64> = (0..FEATURES.len()).map(|k| ((i * (k + 3)) % 7) as f64).collect();
            model.add(timed(f, ((i.wrapping_mul(2_654_435_761) >> 7) % 1000) as f64, 0.1, 0));
        }
        assert!(model.predict(&[vec![0.0; FEATURES.len()]]).is_some(), "fitted");
        assert!(!model.trusted(), "{:?}", model.trial());
        assert_eq!(model.rank(&[vec![0.0; FEATURES.len()]]), None);
    }

    #[test]
    fn earlier_searches_make_a_model_that_is_trusted_before_this_one_has_timed_anything() {
        // Three earlier searches whose times the features decide; the latest tests the others.
        let prior: Vec<Timed> = (0..90).map(|i| point(i, i as u64 / 30)).collect();
        let mut model = CostModel::with_prior(prior);
        assert!(model.trusted(), "{:?}", model.trial());
        let ranked = model.rank(&[point(200, 9).features, point(201, 9).features]).unwrap();
        assert_eq!(ranked.len(), 2);
        // Earlier searches whose times are noise do not earn trust.
        let noise: Vec<Timed> = (0..90usize).map(|i| timed(point(i, 0).features, ((i.wrapping_mul(2_654_435_761) >> 7) % 1000) as f64, 0.1, i as u64 / 30)).collect();
        assert!(!CostModel::with_prior(noise).trusted());
    }
}
