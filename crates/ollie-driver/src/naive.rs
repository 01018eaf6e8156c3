//! The naive kernel's cost, known before it is ever run whole: the a-priori worst case from the
//! graph's FLOPs and bytes at scalar speed, then a measurement — of the whole kernel where that
//! is cheap, else of a slice of its rows, scaled — from which every time limit is derived, and
//! the choice of what candidates' errors are measured against (the naive kernel's outputs, or
//! the rounded reference where computing them would cost more than the budget can pay).

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use ollie_graph::{Chunks, Graph};
use ollie_runner::{BufferSpec, Call, Compiler, Machine, Runner};
use ollie_verify::{Baseline, Family, VerifyError};
use serde::{Deserialize, Serialize};

use crate::{setup, user_error, Error};

/// The share of one thread's FMA peak a naive loop nest reaches at worst: scalar code, each
/// addition of a reduction waiting on the last (the 2048³ product's triple loop ran at 2.4
/// GFLOP/s on a core whose peak is 115, about 1/48; 1/64 leaves room below).
const SCALAR_SHARE: f64 = 1.0 / 64.0;

/// How far past the worst-case estimate a call may run before it is stopped, as a factor: the
/// estimate is of arithmetic and compulsory traffic, not of cache misses a strided loop makes.
const WORST_MARGIN: f64 = 10.0;

/// Above this worst case (seconds), the naive kernel is measured on a slice of its rows, when the
/// graph splits into rows, rather than whole.
const SLICE_ABOVE: f64 = 1.0;

/// What a slice is meant to cost at worst, in seconds.
const SLICE_SECONDS: f64 = 0.25;

/// Timed calls of a measurement, at most, and the seconds they may take together.
const CALLS: usize = 7;
const CALLS_SECONDS: f64 = 1.0;

/// How many times the naive kernel's measured time a call of it may take before it is stopped:
/// a shared machine's load moves a kernel's time, not by this much.
const NAIVE_MARGIN: f64 = 5.0;

/// How many times the naive kernel's time a candidate's call may take: anything slower is of no
/// use, and a hung one costs no more.
const CANDIDATE_MARGIN: f64 = 20.0;

/// Calls of the naive kernel a search makes on its first run: its outputs on every input set the
/// two tiers and the final phase verify on (about 60), and its share of the final timing. When
/// they would take more than half the budget, candidates are judged against the rounded
/// reference instead.
const SEARCH_CALLS: f64 = 90.0;

/// Without a budget (`ollie check`, `ollie bench`), the naive kernel's outputs are the baseline
/// while a call of it takes at most this long (seconds).
const CHECK_SECONDS: f64 = 2.0;

/// How the naive kernel's time was found.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Measured {
    /// Timed whole: the median of these calls.
    Whole { calls: usize },
    /// Timed on `rows` of its `of` rows and scaled: an estimate.
    Slice { rows: usize, of: usize },
}

/// The naive kernel's cost on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NaiveCost {
    /// Seconds a call takes, as measured (or scaled from a slice).
    pub seconds: f64,
    pub measured: Measured,
    /// The a-priori worst case: the graph's FLOPs at [`SCALAR_SHARE`] of one thread's FMA peak
    /// plus its compulsory bytes at one thread's memory bandwidth.
    pub worst: f64,
}

impl NaiveCost {
    /// Whether the time is an estimate (scaled from a slice), not a measurement of the whole.
    pub fn estimated(&self) -> bool {
        matches!(self.measured, Measured::Slice { .. })
    }

    /// How a report says where the time comes from.
    pub fn how(&self) -> String {
        match self.measured {
            Measured::Whole { calls } => format!("measured, median of {calls} call{}", if calls == 1 { "" } else { "s" }),
            Measured::Slice { rows, of } => format!("estimated: {rows} of its {of} rows timed and scaled"),
        }
    }

    /// The time limit of a call of the naive kernel: `timeout` if the user gave one, else a
    /// margin over its measured time.
    pub fn naive_limit(&self, timeout: Option<f64>) -> Duration {
        within(timeout.unwrap_or((NAIVE_MARGIN * self.seconds).max(2.0)))
    }

    /// The time limit of a candidate's call: `timeout` if the user gave one, else 20 times the
    /// naive kernel's time — within an eighth of `budget`, if there is one (a candidate slower
    /// than that cannot be verified in it) — and a quarter second at least. Where the naive
    /// kernel's outputs are the baseline, its calls share this limit: they then cost at most a
    /// 180th of the budget each ([`NaiveCost::baseline`]), far less than either bound.
    pub fn candidate_limit(&self, timeout: Option<f64>, budget: Option<f64>) -> Duration {
        let margin = CANDIDATE_MARGIN * self.seconds;
        let limit = budget.map_or(margin, |b| margin.min(b / 8.0)).max(0.25);
        within(timeout.unwrap_or(limit))
    }

    /// What candidates' errors are measured against: the naive kernel's outputs while computing
    /// them on every input set fits half the `budget` (at most [`CHECK_SECONDS`] a call without
    /// one), else the rounded reference.
    pub fn baseline(&self, library: &Path, budget: Option<f64>) -> Baseline {
        let affordable = match budget {
            Some(b) => SEARCH_CALLS * self.seconds <= 0.5 * b,
            None => self.seconds <= CHECK_SECONDS,
        };
        if affordable { Baseline::Naive(library.to_path_buf()) } else { Baseline::Rounded }
    }

    /// The user-facing error, one line, for a call of `what` (the naive kernel, or a slice of
    /// it) that outlived `limit` seconds.
    pub fn timed_out(&self, name: &str, what: &str, limit: f64) -> Error {
        let slice = match self.measured {
            Measured::Slice { rows, of } => format!(" for {rows} of its {of} rows"),
            Measured::Whole { .. } => String::new(),
        };
        user_error(format!(
            "error: {what} of `{name}` did not return within {}, the time a call may take (estimated at {} at scalar speed from its FLOPs and bytes{slice}); allow longer calls with --timeout SECONDS",
            crate::report::seconds(limit),
            crate::report::seconds(self.worst),
        ))
    }

    /// A verifier's error, with a naive kernel that outlived its time limit made the user's error
    /// it is (the problem is larger than the limit allows), and so an index the verifier's inputs
    /// could not keep in range (computed by arithmetic the range analysis does not follow);
    /// anything else ollie's.
    pub fn verify_error(&self, name: &str, e: VerifyError, context: &str) -> Error {
        match e {
            VerifyError::BaselineTimeout { limit } => self.timed_out(name, "the naive kernel", limit),
            VerifyError::Reference(e @ ollie_graph::GraphError::Op { op: "gather", .. }) => user_error(format!(
                "error: the inputs the verifier drew for `{name}` index out of range ({e}): an integer parameter is drawn from the range of the axis it indexes, as itself or plus or minus a constant; index with it that way (the arithmetic `{name}` does on it is not followed)"
            )),
            other => anyhow::Error::from(other).context(context.to_string()).into(),
        }
    }
}

/// The a-priori worst case of `graph`'s naive kernel on `machine` (see [`NaiveCost::worst`]).
pub fn worst_case(graph: &Graph, machine: &Machine) -> f64 {
    let cost = graph.work();
    let Some(one) = machine.ceiling(1) else { return 1.0 };
    cost.flops / (SCALAR_SHARE * one.peak_gflops * 1e9) + cost.min_bytes / (one.bandwidth_gbs * 1e9)
}

/// Measures the naive kernel of `graph` (whose library, `library`, is compiled already): whole
/// where its worst case is at most [`SLICE_ABOVE`] or the graph does not split into rows, else
/// on the fewest rows whose worst case is about [`SLICE_SECONDS`], scaled to all of them. Every
/// call's time limit is `timeout` or [`WORST_MARGIN`] times the worst case of what is run; a call
/// that outlives it is the user's error, naming the flag.
pub fn measure(graph: &Graph, library: &Path, compiler: &Compiler, machine: &Machine, timeout: Option<f64>) -> Result<NaiveCost, Error> {
    let worst = worst_case(graph, machine);
    let slice = Chunks::of(graph).filter(|_| worst > SLICE_ABOVE).and_then(|chunks| {
        let rows = ((chunks.rows as f64 * SLICE_SECONDS / worst).ceil() as usize).max(1);
        (rows < chunks.rows).then_some((chunks, rows))
    });
    let (seconds, measured) = match slice {
        None => {
            // A slow kernel that does not split is called once; a fast one a few times, warm.
            let (warmups, calls) = if worst > SLICE_ABOVE { (0, 1) } else { (1, CALLS) };
            let (median, calls) = time(graph, library, warmups, calls, limit(timeout, worst)).map_err(|e| timed_out(e, graph, worst, "the naive kernel"))?;
            (median, Measured::Whole { calls })
        }
        Some((chunks, rows)) => {
            let part = chunks.graph(graph, rows).context("slicing the spec's rows")?;
            let part_library = setup::compile_naive(compiler, &part)?;
            let part_worst = worst_case(&part, machine);
            let (median, _) = time(&part, &part_library, 1, 5, limit(timeout, part_worst)).map_err(|e| match e {
                Timing::TimedOut(limit) => NaiveCost { seconds: part_worst, measured: Measured::Slice { rows, of: chunks.rows }, worst: part_worst }.timed_out(&graph.name, "a slice of the naive kernel", limit),
                Timing::Failed(e) => e,
            })?;
            (median * chunks.rows as f64 / rows as f64, Measured::Slice { rows, of: chunks.rows })
        }
    };
    tracing::info!(seconds, worst, ?measured, "the naive kernel's cost");
    Ok(NaiveCost { seconds, measured, worst })
}

fn limit(timeout: Option<f64>, worst: f64) -> Duration {
    within(timeout.unwrap_or((WORST_MARGIN * worst).max(2.0)))
}

/// `seconds` as a time limit, at most a day: an estimate on a machine whose ceilings say it can
/// barely compute is no reason for a duration that overflows.
fn within(seconds: f64) -> Duration {
    Duration::from_secs_f64(seconds.clamp(0.0, 86_400.0))
}

fn timed_out(e: Timing, graph: &Graph, worst: f64, what: &str) -> Error {
    match e {
        Timing::TimedOut(limit) => NaiveCost { seconds: worst, measured: Measured::Whole { calls: 0 }, worst }.timed_out(&graph.name, what, limit),
        Timing::Failed(e) => e,
    }
}

/// Why a measurement did not end.
enum Timing {
    /// A call outlived this many seconds.
    TimedOut(f64),
    Failed(Error),
}

impl From<anyhow::Error> for Timing {
    fn from(e: anyhow::Error) -> Timing {
        Timing::Failed(e.into())
    }
}

/// The median of up to `calls` calls (after `warmups`) of `graph`'s kernel in `library`, as the
/// search times (a timing session: buffers out of the caches before each call), on normal
/// inputs; stops early once the calls have taken [`CALLS_SECONDS`]. Also says how many calls
/// were timed.
fn time(graph: &Graph, library: &Path, warmups: usize, calls: usize, limit: Duration) -> Result<(f64, usize), Timing> {
    let runner = Runner::current_exe(limit).context("locating ollie's executable")?;
    let (inputs, outputs) = BufferSpec::of(graph);
    let mut session = match runner.start_for_timing(library, &graph.name, &inputs, &outputs).context("starting the naive kernel")? {
        Ok(s) => s,
        Err(outcome) => return Err(Timing::Failed(anyhow::anyhow!("the naive kernel does not load, which is a bug in ollie: {}", outcome.summary()).into())),
    };
    Family::Normal.inputs(graph, setup::spec_seed(graph)).load(&mut session).context("writing the naive kernel's inputs")?;
    let mut samples = Vec::new();
    let mut spent = 0.0;
    for call in 0..warmups + calls {
        match session.call().context("calling the naive kernel")? {
            Call::Returned { elapsed } => {
                if call >= warmups {
                    samples.push(elapsed.as_secs_f64());
                    spent += elapsed.as_secs_f64();
                }
            }
            Call::Died(ollie_runner::Outcome::Timeout { limit }) => return Err(Timing::TimedOut(limit.as_secs_f64())),
            Call::Died(outcome) => return Err(Timing::Failed(anyhow::anyhow!("the naive kernel failed, which is a bug in ollie: {}", outcome.summary()).into())),
        }
        session.pause();
        if spent >= CALLS_SECONDS {
            break;
        }
    }
    session.finish();
    let timing = ollie_verify::Timing::from_samples(samples);
    Ok((timing.median, timing.samples.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(seconds: f64) -> NaiveCost {
        NaiveCost { seconds, measured: Measured::Whole { calls: 7 }, worst: seconds }
    }

    /// The naive kernel's outputs are the baseline while a search can pay for them on every set
    /// (half the budget), or, without a budget, while a call takes at most two seconds.
    #[test]
    fn the_baseline_follows_what_the_naive_kernel_costs() {
        let library = Path::new("/x/libnaive.so");
        assert_eq!(cost(0.1).baseline(library, Some(60.0)), Baseline::Naive(library.into()));
        assert_eq!(cost(1.0).baseline(library, Some(60.0)), Baseline::Rounded);
        assert_eq!(cost(1.0).baseline(library, Some(600.0)), Baseline::Naive(library.into()));
        assert_eq!(cost(1.5).baseline(library, None), Baseline::Naive(library.into()));
        assert_eq!(cost(7.0).baseline(library, None), Baseline::Rounded);
    }

    /// Time limits follow the naive kernel's time, within the budget, unless given.
    #[test]
    fn limits_follow_the_naive_kernel() {
        assert_eq!(cost(0.001).candidate_limit(None, Some(60.0)), Duration::from_secs_f64(0.25));
        assert_eq!(cost(0.1).candidate_limit(None, Some(60.0)), Duration::from_secs_f64(2.0));
        // 20 × 7 s would outlive the budget: an eighth of it.
        assert_eq!(cost(7.0).candidate_limit(None, Some(60.0)), Duration::from_secs_f64(7.5));
        assert_eq!(cost(7.0).candidate_limit(None, None), Duration::from_secs_f64(140.0));
        assert_eq!(cost(7.0).candidate_limit(Some(3.0), Some(60.0)), Duration::from_secs_f64(3.0));
        assert_eq!(cost(7.0).naive_limit(None), Duration::from_secs_f64(35.0));
        assert_eq!(cost(0.01).naive_limit(None), Duration::from_secs_f64(2.0));
    }
}
