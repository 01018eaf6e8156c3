//! Timing as the search times: each kernel in its own sandboxed process, warm-up calls, then
//! many calls interleaved across kernels (A B A B ...) on rotating input sets, every timed call's
//! output checked, and no call faster than the roofline floor.

use std::path::Path;

use ollie_graph::Graph;
use ollie_runner::{BufferSpec, Runner, Session};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::input_sets::InputSet;
use crate::oracle::{Baseline, Expected, Oracle};
use crate::error::VerifyError;
use crate::verify::{checked_call, rejection, Rejection, TestId};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub seed: u64,
    /// Input sets the calls rotate through.
    pub sets: usize,
    pub warmups: usize,
    /// Timed calls per kernel.
    pub calls: usize,
    /// No call can be faster than this (seconds): the machine's `Floor::fastest`.
    pub floor: Option<f64>,
    /// With two kernels, fewer than `calls` pairs when they settle the question earlier.
    pub early: Option<EarlyStop>,
    /// A shorter time limit than the runner's for the first kernel's calls: a candidate far
    /// slower than the kernel it is timed against is of no use, and is stopped early.
    pub first_limit: Option<std::time::Duration>,
}

/// When interleaved timing of two kernels may stop before its `calls` pairs: after at least
/// `min_pairs`, as soon as the interval of the median ratio ([`median_interval`]) lies wholly
/// on one side of 1 (which is faster is clear) or within [`NEGLIGIBLE`] of it (a difference too
/// small to matter; more pairs would not make it clear), or once the timed calls have taken
/// `seconds` together; and after [`CLEAR_PAIRS`] already, if every ratio is beyond [`CLEAR`]
/// the same way (more than the noise of this machine), or after [`FAR_PAIRS`], if beyond
/// [`FAR`]. A `patient` stop (the final timing, whose ratio is the reported speedup) waits for
/// `seconds` to be spent, then stops as soon as one of those holds: as many pairs as the time
/// allows, a settled ratio at least. Timing one kernel alone stops once its timed calls have
/// taken `seconds`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EarlyStop {
    pub min_pairs: usize,
    pub seconds: f64,
    pub patient: bool,
}

impl EarlyStop {
    /// Whether timing may stop after these `ratios` (first kernel's time over the second's),
    /// their calls having taken `spent` seconds.
    pub fn settled(&self, ratios: &[f64], spent: f64) -> bool {
        // Every pair far apart the same way: clear before the usual minimum.
        let apart = |pairs: usize, by: f64| ratios.len() >= pairs && (ratios.iter().all(|&r| r > by) || ratios.iter().all(|&r| r < 1.0 / by));
        if self.patient {
            return spent >= self.seconds && (apart(FAR_PAIRS, FAR) || apart(CLEAR_PAIRS, CLEAR) || ratios.len() >= self.min_pairs);
        }
        apart(FAR_PAIRS, FAR)
            || apart(CLEAR_PAIRS, CLEAR)
            || ratios.len() >= self.min_pairs && {
                let (lo, hi) = median_interval(ratios);
                hi < 1.0 || lo > 1.0 || (lo > 1.0 - NEGLIGIBLE && hi < 1.0 + NEGLIGIBLE) || spent >= self.seconds
            }
    }
}

/// Pairs after which timing stops if the kernels are far apart ...
pub const CLEAR_PAIRS: usize = 3;
/// ... every ratio more than this (or less than its inverse).
pub const CLEAR: f64 = 1.15;
/// Pairs after which timing stops if the kernels are very far apart ...
pub const FAR_PAIRS: usize = 2;
/// ... every ratio more than this (or less than its inverse): no noise of this machine's.
pub const FAR: f64 = 1.5;

/// How close to 1 a median ratio's whole interval must lie for the difference not to matter.
pub const NEGLIGIBLE: f64 = 0.02;

/// A distribution-free interval of about 90% for the median of `samples`: the order statistics
/// `k` in from either end, `k = ⌊(n − 1.645·√n) / 2⌋` (the sign test's normal approximation;
/// with 5 samples, their least and greatest).
pub fn median_interval(samples: &[f64]) -> (f64, f64) {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let k = ((n as f64 - 1.645 * (n as f64).sqrt()) / 2.0).floor().max(0.0) as usize;
    (sorted[k.min(n - 1)], sorted[(n - 1).saturating_sub(k)])
}

impl Default for BenchConfig {
    fn default() -> BenchConfig {
        BenchConfig { seed: 0, sets: 4, warmups: 3, calls: 21, floor: None, early: None, first_limit: None }
    }
}

/// Call times of one kernel, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timing {
    pub samples: Vec<f64>,
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
}

impl Timing {
    /// The samples' median and 10th and 90th percentiles (not a number, without samples).
    pub fn from_samples(mut samples: Vec<f64>) -> Timing {
        if samples.is_empty() {
            return Timing { samples, median: f64::NAN, p10: f64::NAN, p90: f64::NAN };
        }
        let sorted = {
            let mut s = samples.clone();
            s.sort_by(f64::total_cmp);
            s
        };
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
        let (median, p10, p90) = (at(0.5), at(0.1), at(0.9));
        samples.shrink_to_fit();
        Timing { samples, median, p10, p90 }
    }
}

/// Per kernel, its timing or why it was stopped; with two kernels, the per-round ratios
/// (first over second) of interleaved calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    pub kernels: Vec<Result<Timing, Rejection>>,
    pub ratios: Option<Timing>,
}

/// An input set the calls rotate through: its seed (it is made again when its turn comes, so
/// that one set is alive at a time) and its expected outputs (known before any call is timed).
struct Set {
    seed: u64,
    expected: Arc<Expected>,
}

/// Gets the expected outputs of the input sets a timing with `config` rotates through ready in
/// `oracle` (computed, or read from its directory), so that what they cost is paid, and known,
/// before anything is timed.
pub fn prepare(oracle: &mut Oracle, config: &BenchConfig) -> Result<(), VerifyError> {
    prepare_sets(oracle, config).map(drop)
}

/// The sets a timing with `config` rotates through, their expected outputs ready, and the first.
fn prepare_sets(oracle: &mut Oracle, config: &BenchConfig) -> Result<(Vec<Set>, Arc<InputSet>), VerifyError> {
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut sets = Vec::new();
    let mut first = None;
    for _ in 0..config.sets.max(1) {
        let seed: u64 = rng.random();
        let values = oracle.timing_set(seed);
        sets.push(Set { seed, expected: oracle.expected(&values)? });
        first.get_or_insert(values);
    }
    Ok((sets, first.expect("at least one set")))
}

/// Times the kernels in `libraries` (all implementing `graph`), interleaved.
pub fn bench(graph: &Graph, runner: &Runner, baseline: Baseline, libraries: &[&Path], config: &BenchConfig) -> Result<BenchReport, VerifyError> {
    bench_with(&mut Oracle::new(graph, runner, baseline), libraries, config)
}

/// [`bench`] with the expected outputs from (and remembered in) `oracle`.
pub fn bench_with(oracle: &mut Oracle, libraries: &[&Path], config: &BenchConfig) -> Result<BenchReport, VerifyError> {
    let (graph, runner) = (oracle.graph, oracle.runner);
    let (inputs, outputs) = BufferSpec::of(graph);
    let (sets, first) = prepare_sets(oracle, config)?;
    // The set the calls are on now: the first, kept from here.
    let mut current: Option<(usize, Arc<InputSet>)> = Some((0, first));
    let mut sessions: Vec<Result<Session, Rejection>> = Vec::new();
    let first = config.first_limit.map(|limit| Runner { timeout: limit.min(runner.timeout), ..runner.clone() });
    for (k, lib) in libraries.iter().enumerate() {
        let runner = first.as_ref().filter(|_| k == 0).unwrap_or(runner);
        sessions.push(match runner.start_for_timing(lib, &graph.name, &inputs, &outputs)? {
            Ok(s) => Ok(s),
            Err(outcome) => Err(rejection(&outcome, None)),
        });
    }
    // Nothing of ollie's own runs while kernels are timed.
    oracle.settle();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); libraries.len()];
    let mut ratios = Vec::new();
    let mut spent = 0.0;
    // Each set serves a block of consecutive rounds, and a kernel's inputs are written only when
    // its set changes: refilling them between calls from ollie's process (on the other core)
    // would leave them in that core's cache, which a caller calling the kernel again and again on
    // its own buffers does not pay.
    let rounds = config.warmups + config.calls;
    let per_set = rounds.div_ceil(sets.len());
    let mut loaded: Vec<Option<usize>> = vec![None; libraries.len()];
    // Per kernel, the checksums of outputs it produced and the accuracy rule accepted on the
    // inputs it holds: a later call producing the very same bits needs no judging again.
    let mut judged: Vec<Option<Vec<u64>>> = vec![None; libraries.len()];
    // Per kernel, its inputs' checksums as its last checked call left them.
    let mut input_sums: Vec<Option<Vec<u64>>> = vec![None; libraries.len()];
    for round in 0..rounds {
        let call = round + 1;
        let which = round / per_set;
        let set = &sets[which];
        if current.as_ref().is_none_or(|(w, _)| *w != which) {
            // The last set goes before the next is made: one alive at a time.
            drop(current.take());
            current = Some((which, oracle.timing_set(set.seed)));
        }
        let values = &current.as_ref().expect("made above").1;
        let mut times = vec![None; sessions.len()];
        // Each kernel goes first in every other round: whatever the position in a round costs
        // (caches, clocks), it costs both alike.
        let mut order: Vec<usize> = (0..sessions.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for k in order {
            let Ok(s) = &mut sessions[k] else { continue };
            let id = TestId { family: "normal".into(), seed: set.seed, kind: if round < config.warmups { "warm-up" } else { "timed" }.into(), call };
            let refill = loaded[k] != Some(which);
            if refill {
                (judged[k], input_sums[k]) = (None, None);
            }
            loaded[k] = Some(which);
            let checked = checked_call(s, values, refill, input_sums[k].as_deref(), &set.expected, judged[k].as_deref(), &id, config.floor, None, None)?;
            // Stopped until its next call (see `Runner::start_for_timing`).
            s.pause();
            match checked {
                Ok(checked) => {
                    judged[k] = Some(checked.checksums.clone());
                    input_sums[k] = Some(checked.inputs.clone());
                    let seconds = checked.elapsed.as_secs_f64();
                    if round >= config.warmups {
                        samples[k].push(seconds);
                        times[k] = Some(seconds);
                    }
                }
                Err(r) => sessions[k] = Err(r),
            }
        }
        // With an early stop (the search's timings, which want a ratio), a kernel stopped (too
        // slow, failed, rejected) leaves none to measure: calling the others on alone would only
        // spend time (22 calls of a 300 MB kernel, 7 s, after a candidate's first call was
        // stopped). Their timings then hold the calls made so far, perhaps none.
        if config.early.is_some() && sessions.iter().any(Result::is_err) {
            break;
        }
        match times[..] {
            [Some(a), Some(b)] => {
                ratios.push(a / b);
                spent += a + b;
                if config.early.is_some_and(|early| early.settled(&ratios, spent)) {
                    break;
                }
            }
            [Some(a)] => {
                spent += a;
                if config.early.is_some_and(|early| spent >= early.seconds) {
                    break;
                }
            }
            _ => {}
        }
    }
    let kernels = sessions
        .into_iter()
        .zip(samples)
        .map(|(s, samples)| match s {
            Ok(session) => {
                session.finish();
                Ok(Timing::from_samples(samples))
            }
            Err(r) => Err(r),
        })
        .collect();
    let ratios = (libraries.len() == 2 && !ratios.is_empty()).then(|| Timing::from_samples(ratios));
    Ok(BenchReport { kernels, ratios })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_stops_once_the_pairs_settle_which_is_faster() {
        let early = EarlyStop { min_pairs: 5, seconds: 10.0, patient: false };
        // Very far apart: two pairs; far apart: three; else the minimum of five.
        assert!(!early.settled(&[2.0], 0.0));
        assert!(early.settled(&[2.0, 1.6], 0.0) && early.settled(&[0.5, 0.6], 0.0));
        assert!(!early.settled(&[2.0, 1.4], 0.0) && !early.settled(&[2.0, 0.5], 0.0));
        assert!(early.settled(&[1.2, 1.3, 1.2], 0.0) && early.settled(&[0.8, 0.85, 0.8], 0.0));
        assert!(!early.settled(&[1.2, 1.1, 1.2], 0.0));
        // At five pairs: the interval of the median (with five, the least and greatest) on one
        // side of 1, or within 2% of it; else more pairs, until the time is spent.
        assert!(early.settled(&[1.05, 1.02, 1.10, 1.01, 1.03], 0.0));
        assert!(early.settled(&[0.99, 1.01, 1.0, 1.005, 0.995], 0.0));
        assert!(!early.settled(&[1.05, 0.97, 1.10, 1.01, 0.99], 0.0));
        assert!(early.settled(&[1.05, 0.97, 1.10, 1.01, 0.99], 10.0));
        assert!(!early.settled(&[1.05, 0.97, 1.10, 1.01], 10.0), "never before the minimum, unless far apart");
        // Patient: nothing stops it before its time is spent; then the same rules, and the
        // minimum of pairs whatever their interval.
        let patient = EarlyStop { patient: true, ..early };
        assert!(!patient.settled(&[2.0, 1.6], 9.0) && !patient.settled(&[1.05, 1.02, 1.10, 1.01, 1.03], 9.0));
        assert!(patient.settled(&[2.0, 1.6], 10.0) && patient.settled(&[1.2, 1.3, 1.2], 10.0));
        assert!(!patient.settled(&[2.0, 1.4], 10.0) && patient.settled(&[1.05, 0.97, 1.10, 1.01, 0.99], 10.0));
    }

    #[test]
    fn the_median_interval_narrows_with_more_samples() {
        let five = [1.04, 0.97, 1.10, 1.01, 0.99];
        assert_eq!(median_interval(&five), (0.97, 1.10), "five samples: their least and greatest");
        // 21 samples 0, 1, ..., 20 (shuffled): the 7th and 15th.
        let many: Vec<f64> = (0..21).map(|i| f64::from((i * 8) % 21)).collect();
        assert_eq!(median_interval(&many), (6.0, 14.0));
        assert_eq!(median_interval(&[0.5]), (0.5, 0.5));
    }
}
