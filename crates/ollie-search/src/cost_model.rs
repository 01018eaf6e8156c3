//! The cost model: features of a candidate (its scheduled loop nest and its compiler flags) and
//! a random forest (smartcore's) fitted on the times measured so far, predicting a candidate's
//! log time, so that of several proposals the search measures the most promising first.

use ollie_graph::UnaryOp;
use ollie_loops::{BufferKind, Expr, LoopKind, LoopNest, Stmt, VarId};
use smartcore::ensemble::random_forest_regressor::{RandomForestRegressor, RandomForestRegressorParameters};
use smartcore::linalg::basic::matrix::DenseMatrix;

use crate::{Form, Kernel};

/// The features' names, in the order [`features`] gives them.
pub const FEATURES: &[&str] = &[
    "log2 loads",
    "log2 stores",
    "log2 arithmetic",
    "log2 transcendental",
    "log2 temporary elements",
    "passes over memory",
    "loops",
    "log2 parallel regions entered",
    "log2 outermost parallel extent",
    "share under explicit vectors",
    "log2 vector width",
    "share under simd",
    "share under unroll",
    "share of contiguous loads",
    "share of invariant loads",
    "schedule steps",
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
    parallel_entries: f64,
    parallel_extent: f64,
    vector: f64,
    vector_width: f64,
    simd: f64,
    unrolled: f64,
    contiguous: f64,
    invariant: f64,
}

/// What encloses a statement: how often it runs, the innermost loop's variable, and the kinds of
/// the loops around it.
#[derive(Clone, Copy)]
struct Around {
    trips: f64,
    innermost: Option<VarId>,
    parallel: bool,
    vector: Option<u32>,
    simd: bool,
    unrolled: bool,
}

fn walk(body: &[Stmt], at: Around, c: &mut Counts) {
    for s in body {
        match s {
            Stmt::Loop { var, extent, kind, body } => {
                c.loops += 1.0;
                let mut inner = Around { trips: at.trips * *extent as f64, innermost: Some(*var), ..at };
                match kind {
                    LoopKind::Parallel if !at.parallel => {
                        c.parallel_entries += at.trips;
                        c.parallel_extent = c.parallel_extent.max(*extent as f64);
                        inner.parallel = true;
                    }
                    LoopKind::Vector(w) | LoopKind::Stream(w) => inner.vector = Some(*w),
                    LoopKind::Simd => inner.simd = true,
                    LoopKind::Unrolled(_) => inner.unrolled = true,
                    // About `n log₂ n` steps of a merge sort.
                    // A whole sort costs n log n; a selection of k, about n.
                    LoopKind::Sort(ollie_loops::Keep::All) | LoopKind::ArgSort(ollie_loops::Keep::All) => inner.trips *= (*extent as f64).log2().max(1.0),
                    LoopKind::Sort(_) | LoopKind::ArgSort(_) => {}
                    _ => {}
                }
                walk(body, inner, c);
            }
            // Not a feature yet: the model tells schedules with and without prefetches apart only
            // by their other steps.
            Stmt::Prefetch { .. } => {}
            Stmt::Store { value, .. } => {
                let n = at.trips;
                c.stores += n;
                if let Some(w) = at.vector {
                    c.vector += n;
                    c.vector_width += n * f64::from(w).log2();
                }
                c.simd += if at.simd { n } else { 0.0 };
                c.unrolled += if at.unrolled { n } else { 0.0 };
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
            match op {
                UnaryOp::Exp | UnaryOp::Log | UnaryOp::Tanh | UnaryOp::Sqrt | UnaryOp::Log1p | UnaryOp::Expm1 | UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Erf | UnaryOp::Atan => {
                    c.transcendental += n
                }
                UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => c.arithmetic += n,
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
    }
}

/// The features of `kernel` (a schedule replayed on `naive`, or a kernel written whole, which is
/// described by the naive nest and its flags), in the order of [`FEATURES`].
pub fn features(kernel: &Kernel, naive: &LoopNest) -> Vec<f64> {
    let (nest, flags, steps, written) = match kernel.form(naive) {
        Form::Scheduled { schedule: s, naive } => match s.apply(naive) {
            Ok(nest) => (nest, &s.flags[..], s.steps.len(), false),
            Err(_) => (naive.clone(), &s.flags[..], s.steps.len(), false),
        },
        Form::Written { flags, .. } => (naive.clone(), flags, 0, true),
    };
    let mut c = Counts::default();
    let top = Around { trips: 1.0, innermost: None, parallel: false, vector: None, simd: false, unrolled: false };
    walk(&nest.body, top, &mut c);
    let log2 = |x: f64| (1.0 + x).log2();
    let share = |x: f64, of: f64| if of > 0.0 { x / of } else { 0.0 };
    let temporaries: usize = nest.buffers.iter().filter(|b| b.kind == BufferKind::Temp).map(|b| b.len()).sum();
    let has = |flag: &str| f64::from(u8::from(flags.iter().any(|f| f == flag)));
    let features = vec![
        log2(c.loads),
        log2(c.stores),
        log2(c.arithmetic),
        log2(c.transcendental),
        log2(temporaries as f64),
        nest.body.len() as f64,
        c.loops,
        log2(c.parallel_entries),
        log2(c.parallel_extent),
        share(c.vector, c.stores),
        share(c.vector_width, c.vector),
        share(c.simd, c.stores),
        share(c.unrolled, c.stores),
        share(c.contiguous, c.loads),
        share(c.invariant, c.loads),
        steps as f64,
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

/// Recent predictions a model is judged on before it is trusted to choose.
const TRIAL: usize = 24;

/// Timings the model fits on, at most: the latest. A forest grown on n timings holds about n
/// nodes a tree, so the window bounds the model's memory (a few MiB) as well as a fit's cost,
/// and a long search reaches that bound in its first minutes.
const WINDOW: usize = 1024;

/// Spearman's ρ over its recent predictions that a model needs to be trusted.
pub const TRUSTED: f64 = 0.5;

/// A random forest over [`features`], refitted as timings come in. It earns the right to choose
/// which proposals are measured: each measured kernel is first predicted (before its time is
/// known), and only while the last [`TRIAL`] predictions rank the measured times with
/// Spearman's ρ of at least [`TRUSTED`] does [`CostModel::rank`] answer.
#[derive(Default)]
pub struct CostModel {
    samples: Vec<(Vec<f64>, f64)>,
    forest: Option<Forest>,
    /// Samples added since the forest was fitted.
    since_fit: usize,
    /// (predicted, measured) log times of the latest kernels, predicted before they were measured.
    trial: std::collections::VecDeque<(f64, f64)>,
}

impl CostModel {
    /// A measured kernel: its features and the log of its time (predicted first, for the trial).
    pub fn add(&mut self, features: Vec<f64>, log_seconds: f64) {
        if !log_seconds.is_finite() {
            return;
        }
        if let Some(p) = self.predict(std::slice::from_ref(&features)).and_then(|p| p.first().copied()) {
            self.trial.push_back((p, log_seconds));
            if self.trial.len() > TRIAL {
                self.trial.pop_front();
            }
        }
        self.samples.push((features, log_seconds));
        self.since_fit += 1;
        // A long search ranks by its latest timings: the chain's neighbourhood, and a fit that
        // costs the same in the second hour as in the first.
        if self.samples.len() > WINDOW {
            self.samples.drain(..self.samples.len() - WINDOW);
        }
    }

    /// Spearman's ρ of the latest predictions made before the times were known, once there are
    /// [`TRIAL`] of them.
    pub fn trial(&self) -> Option<f64> {
        if self.trial.len() < TRIAL {
            return None;
        }
        let (p, m): (Vec<f64>, Vec<f64>) = self.trial.iter().copied().unzip();
        spearman(&p, &m)
    }

    /// Predicted log times of proposals, if the model has earned trust ([`CostModel::trial`]
    /// at least [`TRUSTED`]); `None` otherwise, and the search measures them as proposed.
    pub fn rank(&mut self, features: &[Vec<f64>]) -> Option<Vec<f64>> {
        if self.trial()? < TRUSTED {
            return None;
        }
        self.predict(features)
    }

    pub fn samples(&self) -> usize {
        self.samples.len()
    }

    /// Predicted log times, or `None` while there are too few timings to fit on. Refits once a
    /// fifth of the timings it would fit on are new since the last fit.
    pub fn predict(&mut self, features: &[Vec<f64>]) -> Option<Vec<f64>> {
        if self.samples.len() >= MIN_SAMPLES && (self.forest.is_none() || 5 * self.since_fit >= self.samples.len()) {
            // The old forest goes before the new one grows: never two in memory.
            self.forest = None;
            self.forest = fit(&self.samples);
            self.since_fit = 0;
        }
        predict(self.forest.as_ref()?, features)
    }
}

fn fit(samples: &[(Vec<f64>, f64)]) -> Option<Forest> {
    let x = DenseMatrix::from_2d_vec(&samples.iter().map(|s| s.0.clone()).collect()).ok()?;
    let y: Vec<f64> = samples.iter().map(|s| s.1).collect();
    let parameters = RandomForestRegressorParameters::default().with_n_trees(48).with_min_samples_leaf(2).with_seed(7);
    match RandomForestRegressor::fit(&x, &y, parameters) {
        Ok(forest) => Some(forest),
        Err(e) => {
            tracing::debug!("the cost model could not be fitted: {e}");
            None
        }
    }
}

fn predict(forest: &Forest, features: &[Vec<f64>]) -> Option<Vec<f64>> {
    if features.is_empty() {
        return Some(Vec::new());
    }
    let x = DenseMatrix::from_2d_vec(&features.to_vec()).ok()?;
    forest.predict(&x).ok()
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

/// A timed kernel as the model is judged on it: its features, the log of its time, and the log
/// bounds its measurement's noise puts around that (p10..p90 of its timing).
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    pub features: Vec<f64>,
    pub log_seconds: f64,
    pub log_low: f64,
    pub log_high: f64,
}

/// How well the model ranks what it has not seen: fitted on the first timings in the order
/// they came, it predicts the last `held_back` share of them. Judged on the pairs of those whose
/// noise bounds do not overlap (`pairs`: which of the two is faster is known): the share it
/// orders right (a tie in prediction counts half). Spearman's ρ over all of them beside it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeldBack {
    pub pairwise_accuracy: Option<f64>,
    pub pairs: usize,
    pub spearman: Option<f64>,
    pub held_back: usize,
    pub trained_on: usize,
}

pub fn held_back(timed: &[Timed], share: f64) -> Option<HeldBack> {
    let held = ((timed.len() as f64 * share).round() as usize).max(3);
    let trained_on = timed.len().checked_sub(held)?;
    if trained_on < MIN_SAMPLES {
        return None;
    }
    let samples: Vec<(Vec<f64>, f64)> = timed[..trained_on].iter().map(|t| (t.features.clone(), t.log_seconds)).collect();
    let forest = fit(&samples)?;
    let tail = &timed[trained_on..];
    let predicted = predict(&forest, &tail.iter().map(|t| t.features.clone()).collect::<Vec<_>>())?;
    let measured: Vec<f64> = tail.iter().map(|t| t.log_seconds).collect();
    let (pairwise_accuracy, pairs) = pairwise(&predicted, tail);
    Some(HeldBack { pairwise_accuracy, pairs, spearman: spearman(&predicted, &measured), held_back: held, trained_on })
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
                let (p, m) = (predicted[i] - predicted[j], a.log_seconds - b.log_seconds);
                right += if p == 0.0 { 0.5 } else if (p < 0.0) == (m < 0.0) { 1.0 } else { 0.0 };
            }
        }
    }
    ((pairs > 0).then(|| right / pairs as f64), pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairwise_accuracy_counts_only_pairs_the_noise_tells_apart() {
        let timed = |t: f64, noise: f64| Timed { features: Vec::new(), log_seconds: t, log_low: t - noise, log_high: t + noise };
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

    #[test]
    fn the_forest_learns_a_time_that_its_features_decide() {
        // The "time" doubles with feature 0 and halves with feature 3: a forest fitted on
        // some points ranks others in the same order.
        let point = |i: usize| {
            let f: Vec<f64> = (0..FEATURES.len()).map(|k| ((i * (k + 3)) % 7) as f64).collect();
            let t = f[0] - f[3];
            (f, t)
        };
        let samples: Vec<(Vec<f64>, f64)> = (0..60).map(point).collect();
        let timed: Vec<Timed> = samples.iter().map(|(f, t)| Timed { features: f.clone(), log_seconds: *t, log_low: t - 0.1, log_high: t + 0.1 }).collect();
        let h = held_back(&timed, 0.25).unwrap();
        assert_eq!((h.held_back, h.trained_on), (15, 45));
        assert!(h.spearman.is_some_and(|rho| rho > 0.8), "{h:?}");
        assert!(h.pairs > 0 && h.pairwise_accuracy.is_some_and(|a| a > 0.8), "{h:?}");
        let mut model = CostModel::default();
        assert_eq!(model.predict(&[samples[0].0.clone()]), None, "no model before any timing");
        for (f, t) in samples.iter().take(40) {
            model.add(f.clone(), *t);
        }
        let p = model.predict(&[point(100).0, point(101).0]).unwrap();
        assert_eq!(p.len(), 2);
        // It has predicted the last timings before seeing them, and ranked them well: trusted.
        assert!(model.trial().is_some_and(|rho| rho >= TRUSTED), "{:?}", model.trial());
        assert!(model.rank(&[point(100).0]).is_some());
    }

    #[test]
    fn a_model_that_ranks_poorly_is_not_trusted_to_choose() {
        // Times unrelated to the features (a hash of the index): it fits, but cannot rank.
        let mut model = CostModel::default();
        for i in 0..80usize {
            let f: Vec<f64> = (0..FEATURES.len()).map(|k| ((i * (k + 3)) % 7) as f64).collect();
            model.add(f, ((i.wrapping_mul(2_654_435_761) >> 7) % 1000) as f64);
        }
        assert!(model.predict(&[vec![0.0; FEATURES.len()]]).is_some(), "fitted");
        assert!(model.trial().is_some_and(|rho| rho < TRUSTED), "{:?}", model.trial());
        assert_eq!(model.rank(&[vec![0.0; FEATURES.len()]]), None);
    }
}
