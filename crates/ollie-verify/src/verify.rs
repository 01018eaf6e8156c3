//! The verification protocol: the candidate and the naive kernel each run in one sandboxed
//! process; the candidate is called on every input family with fresh seeds, on the same buffers
//! refilled, and on a copy with one element changed; each output is checked against the
//! reference (accuracy, every element written, nothing changing after return).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ollie_graph::{Graph, Tensor};
use ollie_runner::{BufferSpec, Call, OutputData, Outcome, Runner, Session};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::accuracy::{Figures, Inaccuracy, Tolerance};
use crate::error::VerifyError;
use crate::family::Family;
use crate::input_sets::{Change, InputSet};
use crate::oracle::{Baseline, Expected, Fetched, Oracle};
use crate::values::cast;


/// How thoroughly to verify.
#[derive(Debug, Clone)]
pub struct VerifyConfig {
    /// The master seed; every input set's seed derives from it (record it to reproduce).
    pub seed: u64,
    /// Input sets per family.
    pub sets_per_family: usize,
    /// How long after a call returns its outputs are read a second time.
    pub reread_delay: Duration,
    /// Input sets that made earlier candidates fail; they are tried first.
    pub saved: Vec<Vec<Tensor>>,
    /// No call can be faster than this (seconds): the machine's `Floor::fastest`.
    pub floor: Option<f64>,
    /// Only these families (a search's quick screen); `None`: every family.
    pub families: Option<Vec<Family>>,
    /// When the verification must end: no input set is begun that would not be done by then
    /// (judged by what the sets so far took), though the first always is. The certificate says
    /// how many of the planned tests ran.
    pub deadline: Option<std::time::Instant>,
}

impl VerifyConfig {
    /// What names this configuration's input sets besides the graph (its seed, sets per family
    /// and families; saved counterexamples aside), for [`Oracle::knows_plan`].
    pub fn plan(&self) -> String {
        format!("seed {} sets {} families {:?}", self.seed, self.sets_per_family, self.families)
    }

    /// How many input sets a verification of `graph` goes through (each family's sets, each
    /// also with one element changed, and the saved counterexamples).
    pub fn input_sets(&self, graph: &Graph) -> usize {
        let families = self.families.as_ref().map_or_else(|| Family::of(graph).len(), Vec::len);
        self.saved.len() + 2 * families * self.sets_per_family
    }
}

impl Default for VerifyConfig {
    fn default() -> VerifyConfig {
        VerifyConfig { seed: 0, sets_per_family: 2, reread_delay: Duration::from_millis(20), saved: Vec::new(), floor: None, families: None, deadline: None }
    }
}

/// Why a candidate is rejected.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Rejection {
    /// Too far from the reference (or non-finite where it must not be).
    Inaccurate { test: TestId, output: usize, detail: String, element: Option<Vec<usize>>, value: f64, reference: f64, bound: Option<f64> },
    /// Output elements still hold the NaN they were poisoned with.
    Unwritten { test: TestId, output: usize, count: usize },
    /// Outputs changed after the call had returned.
    ChangedAfterReturn { test: TestId, output: usize },
    /// The output is exactly the previous call's, though the inputs changed: a cache.
    StaleOutput { test: TestId, output: usize },
    /// Touched memory past the end of a buffer (`buffer` counts inputs first, then outputs).
    OutOfBounds { test: TestId, buffer: usize },
    /// Wrote to an input.
    InputModified { test: TestId, buffer: usize },
    /// Made a system call the sandbox forbids.
    Forbidden { test: TestId, syscall: String },
    Crashed { test: TestId, signal: i32 },
    Timeout { test: TestId, seconds: f64 },
    /// Returned sooner than any kernel doing the work can (`Floor::fastest`).
    TooFast { test: TestId, seconds: f64, floor: f64 },
    /// Did not compile or link (the compiler's log).
    CompileError { log: String },
    /// Could not be loaded or run at all.
    Failed { reason: String },
}

impl Rejection {
    /// One rejection of every kind, for tests that must cover them all.
    pub fn one_of_each() -> Vec<Rejection> {
        let test = TestId { family: "normal".into(), seed: 1, kind: "fresh".into(), call: 1 };
        vec![
            Rejection::Inaccurate { test: test.clone(), output: 0, detail: String::new(), element: None, value: 0.0, reference: 0.0, bound: None },
            Rejection::Unwritten { test: test.clone(), output: 0, count: 1 },
            Rejection::ChangedAfterReturn { test: test.clone(), output: 0 },
            Rejection::StaleOutput { test: test.clone(), output: 0 },
            Rejection::OutOfBounds { test: test.clone(), buffer: 0 },
            Rejection::InputModified { test: test.clone(), buffer: 0 },
            Rejection::Forbidden { test: test.clone(), syscall: "openat".into() },
            Rejection::Crashed { test: test.clone(), signal: 11 },
            Rejection::Timeout { test: test.clone(), seconds: 1.0 },
            Rejection::TooFast { test, seconds: 1.0, floor: 2.0 },
            Rejection::CompileError { log: String::new() },
            Rejection::Failed { reason: String::new() },
        ]
    }

    /// The short kind a store records, as the JSON form tags it (`inaccurate`, `too-fast`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Rejection::Inaccurate { .. } => "inaccurate",
            Rejection::Unwritten { .. } => "unwritten",
            Rejection::ChangedAfterReturn { .. } => "changed-after-return",
            Rejection::StaleOutput { .. } => "stale-output",
            Rejection::OutOfBounds { .. } => "out-of-bounds",
            Rejection::InputModified { .. } => "input-modified",
            Rejection::Forbidden { .. } => "forbidden",
            Rejection::Crashed { .. } => "crashed",
            Rejection::Timeout { .. } => "timeout",
            Rejection::TooFast { .. } => "too-fast",
            Rejection::CompileError { .. } => "compile-error",
            Rejection::Failed { .. } => "failed",
        }
    }
}

/// What went wrong, for a person: the rejection with the test it happened in.
impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = |t: &TestId| format!("on {} inputs (seed {}, call {}, {})", t.family, t.seed, t.call, t.kind);
        match self {
            Rejection::Inaccurate { test, output, detail, .. } => write!(f, "inaccurate output {output} {}:\n  {detail}", at(test)),
            Rejection::Unwritten { test, output, count } => write!(f, "{count} elements of output {output} were never written {}", at(test)),
            Rejection::ChangedAfterReturn { test, output } => write!(f, "output {output} changed after the kernel returned {}", at(test)),
            Rejection::StaleOutput { test, output } => write!(f, "output {output} is the previous call's, though the inputs changed (a cache), {}", at(test)),
            Rejection::OutOfBounds { test, buffer } => write!(f, "touched memory past the end of buffer {buffer} {}", at(test)),
            Rejection::InputModified { test, buffer } => write!(f, "wrote to input {buffer} {}", at(test)),
            Rejection::Forbidden { test, syscall } => write!(f, "made a forbidden system call, {syscall}, {}", at(test)),
            Rejection::Crashed { test, signal } => write!(f, "crashed with signal {signal} {}", at(test)),
            Rejection::Timeout { test, seconds } => write!(f, "did not return within {seconds} s {}", at(test)),
            Rejection::TooFast { test, seconds, floor } => {
                write!(f, "returned in {seconds:.3e} s, faster than any kernel can be on this machine ({floor:.3e} s, with its data in cache), {}", at(test))
            }
            Rejection::CompileError { log } => write!(f, "does not compile: {}", ollie_runner::first_compile_error(log)),
            Rejection::Failed { reason } => write!(f, "could not be run: {reason}"),
        }
    }
}

/// Which test a rejection happened in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestId {
    pub family: String,
    pub seed: u64,
    /// What the call was: `fresh` inputs, or `one-element-changed` from the previous call's.
    pub kind: String,
    /// The call's number within the candidate's process (from 1).
    pub call: usize,
}

/// What was run, for `certificate.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Certificate {
    pub kernel: String,
    pub seed: u64,
    pub alpha: f64,
    /// What the errors were measured against besides the reference ([`Baseline::name`]).
    pub baseline: &'static str,
    /// The tests the plan held; fewer ran when its deadline came first (`tests` lists those that
    /// ran, in order).
    pub planned: usize,
    pub tests: Vec<TestRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestRecord {
    pub id: TestId,
    /// Per output: the largest error over its elementwise bound (accepted when ≤ 1), and the
    /// normwise error over its bound.
    pub worst_elementwise: Vec<f64>,
    pub normwise: Vec<f64>,
    pub elapsed_seconds: f64,
}

/// The verifier's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub accepted: bool,
    pub rejection: Option<Rejection>,
    pub certificate: Certificate,
    /// The inputs of the failing call, to save as a counterexample.
    #[serde(skip)]
    pub counterexample: Option<Vec<Tensor>>,
}

/// Verifies the kernel in `candidate` against `graph`, with `baseline`.
pub fn verify(graph: &Graph, runner: &Runner, baseline: Baseline, candidate: &Path, config: &VerifyConfig) -> Result<Report, VerifyError> {
    let mut oracle = Oracle::new(graph, runner, baseline);
    verify_with(&mut oracle, candidate, config)
}

/// [`verify`] with the expected outputs from (and remembered in) `oracle`.
pub fn verify_with(oracle: &mut Oracle, candidate: &Path, config: &VerifyConfig) -> Result<Report, VerifyError> {
    let graph = oracle.graph;
    let (inputs, outputs) = BufferSpec::of(graph);
    let mut certificate = Certificate { kernel: graph.name.clone(), seed: config.seed, alpha: Tolerance::F32.alpha, baseline: oracle.baseline.name(), planned: 0, tests: Vec::new() };
    let reject = |certificate: Certificate, rejection: Rejection, inputs: Option<Vec<Tensor>>| {
        Ok(Report { accepted: false, rejection: Some(rejection), certificate, counterexample: inputs })
    };
    let mut cand = match oracle.runner.start(candidate, &graph.name, &inputs, &outputs)? {
        Ok(s) => s,
        Err(outcome) => return reject(certificate, rejection(&outcome, None), None),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    // Saved counterexamples first, then every family: fresh inputs, then one element changed.
    // Each family's seeds are drawn in turn, and the sets run round by round — the first of every
    // family, then the second —, so that a verification cut short by its deadline has covered
    // every family it could.
    let mut plan: Vec<(Option<Family>, u64)> = (0..config.saved.len()).map(|i| (None, i as u64)).collect();
    let families = config.families.clone().unwrap_or_else(|| Family::of(graph));
    let seeds: Vec<Vec<u64>> = families.iter().map(|_| (0..config.sets_per_family).map(|_| rng.random()).collect()).collect();
    for round in 0..config.sets_per_family {
        plan.extend(families.iter().zip(&seeds).map(|(&family, seeds)| (Some(family), seeds[round])));
    }
    certificate.planned = config.input_sets(graph);
    let (deadline, sets) = (config.deadline, plan.len());
    // The next set is made, and its expected outputs read from disk or computed, on another core
    // while the candidate runs on this one: at most two sets are alive.
    let (params, saved, mut ahead) = (&graph.params, &config.saved, oracle.ahead());
    std::thread::scope(|scope| {
        let (sender, prepared) = std::sync::mpsc::sync_channel::<Prepared>(0);
        let helper = scope.spawn(move || {
            // A set that could not be got ready and tested by the deadline (twice what getting
            // it ready is estimated to take, from now) is not begun (the first always is): the
            // verification waits for a set begun before it ends.
            let mut first = true;
            for (family, seed) in plan {
                let mut set = match family {
                    Some(f) => f.inputs(graph, seed),
                    None => InputSet::from_tensors(params, &saved[seed as usize]),
                };
                let change = family.and_then(|_| set.one_element_changed(&mut ChaCha8Rng::seed_from_u64(seed ^ CHANGE_SEED)));
                if let (Some(deadline), false) = (deadline, first) {
                    let changed = change.as_ref().map(|c| {
                        set.change(c);
                        let estimate = ahead.estimate(&set);
                        set.revert(c);
                        estimate
                    });
                    let estimate = [Some(ahead.estimate(&set)), changed].into_iter().flatten().sum::<Option<f64>>();
                    if estimate.is_none_or(|e| std::time::Instant::now() + Duration::from_secs_f64(2.0 * e) > deadline) {
                        tracing::debug!(?estimate, "the next input set would not be ready by the verification's deadline");
                        break;
                    }
                }
                first = false;
                let sums = set.checksums();
                let fresh = ahead.fetch(&set);
                let (changed, changed_sums) = match change {
                    Some(c) => {
                        set.change(&c);
                        let done = (ahead.fetch(&set), Some(set.checksums_changed(&sums, &c)));
                        set.revert(&c);
                        done
                    }
                    None => (None, None),
                };
                let prepared = Prepared { family, seed, set, change, fetched: [fresh, changed], sums: [Some(sums), changed_sums] };
                if sender.send(prepared).is_err() {
                    break;
                }
            }
            ahead
        });
        let result = run_plan(oracle, &mut cand, prepared, config, &mut certificate);
        cand.finish();
        // Dropping the receiver (in `run_plan`) stops the helper.
        oracle.rejoin(helper.join().expect("preparing input sets does not panic"));
        match result? {
            Ended::Rejected(rejection, inputs) => reject(certificate, rejection, Some(inputs)),
            Ended::Passed { sets: ran } => {
                if ran == sets {
                    oracle.remember_plan(&config.plan());
                }
                Ok(Report { accepted: true, rejection: None, certificate, counterexample: None })
            }
        }
    })
}

/// How a plan's run ended.
enum Ended {
    /// The first rejection, with the inputs it was found on.
    Rejected(Rejection, Vec<Tensor>),
    /// Every test that ran passed: the input sets of the plan that ran (fewer than all when the
    /// deadline came).
    Passed { sets: usize },
}

/// Calls the candidate on every set `prepared` sends until the deadline, checking each call,
/// each passed test into `certificate`.
fn run_plan(oracle: &mut Oracle, cand: &mut Session, prepared: std::sync::mpsc::Receiver<Prepared>, config: &VerifyConfig, certificate: &mut Certificate) -> Result<Ended, VerifyError> {
    let mut sets = 0;
    let mut calls = 0;
    // The last call's expected outputs (shared with the oracle, not copied) and its outputs'
    // checksums.
    let mut previous: Option<(Arc<Expected>, Vec<u64>)> = None;
    // The longest an input set (its calls and checks, and any expected outputs computed in its
    // turn) took so far: a set that would not be done by the deadline is not begun.
    let mut longest: Option<Duration> = None;
    for Prepared { family, seed, mut set, change, fetched, sums } in prepared {
        if let (Some(deadline), Some(longest)) = (config.deadline, longest) {
            if std::time::Instant::now() + longest > deadline {
                tracing::debug!(ran = certificate.tests.len(), planned = certificate.planned, "the verification's deadline came");
                break;
            }
        }
        let started = std::time::Instant::now();
        let family = family.map_or_else(|| "saved-counterexample".to_string(), |f| f.to_string());
        for ((kind, fetched), sums) in ["fresh", "one-element-changed"].into_iter().zip(fetched).zip(sums) {
            // Fresh inputs are written whole; the changed copy only where it differs from the
            // fresh ones, which the last call left as they were (or it was rejected).
            let refill = kind == "fresh";
            if !refill {
                let Some(change) = &change else { continue };
                set.change(change);
                set.load_change(cand, change)?;
            }
            calls += 1;
            let id = TestId { family: family.clone(), seed, kind: kind.to_string(), call: calls };
            let expected = oracle.expected_read(&set, fetched)?;
            match checked_call(cand, &set, refill, sums.as_deref(), &expected, None, &id, config.floor, Some(config.reread_delay), previous.as_ref().map(|(e, y)| (&**e, &y[..])))? {
                Ok(checked) => {
                    certificate.tests.push(TestRecord {
                        id,
                        worst_elementwise: checked.figures.iter().map(|f| f.worst_elementwise).collect(),
                        normwise: checked.figures.iter().map(|f| f.normwise).collect(),
                        elapsed_seconds: checked.elapsed.as_secs_f64(),
                    });
                    previous = Some((expected.clone(), checked.checksums));
                }
                Err(rejection) => return Ok(Ended::Rejected(rejection, set.to_tensors())),
            }
        }
        longest = longest.max(Some(started.elapsed()));
        sets += 1;
    }
    Ok(Ended::Passed { sets })
}

/// Mixed into an input set's seed for the choice of the element its second call changes.
const CHANGE_SEED: u64 = 0xc4a9_6e0f_e1e3_e17a;

/// An input set ready to be tested: made, the element to change chosen, and for both (fresh,
/// changed) the expected outputs, got ready where they were not in memory, and the inputs'
/// checksums.
struct Prepared {
    family: Option<Family>,
    seed: u64,
    set: InputSet,
    change: Option<Change>,
    fetched: [Option<Fetched>; 2],
    sums: [Option<Vec<u64>>; 2],
}

/// A call that passed every check.
pub(crate) struct Checked {
    pub elapsed: Duration,
    /// Per output, a checksum of its bits.
    pub checksums: Vec<u64>,
    /// Per input, its checksum after the call (the same as before it).
    pub inputs: Vec<u64>,
    pub figures: Vec<Figures>,
}

/// Calls the candidate once on `set` (written to its buffers first if `refill`; otherwise it is
/// there already; `inputs` are the checksums of `set`'s inputs, if known) and checks
/// the call as the contract says (an output whose checksums are `judged`, those of outputs
/// already found accurate on the same inputs, is not judged again): returned, not faster than
/// `floor`, memory around the buffers and the inputs untouched, (`reread_delay` after its
/// return, if given) outputs unchanged since return, every element written, accurate. An
/// inaccurate output bit-identical to `previous` (the last call's expected outputs and its
/// outputs' checksums) is named a stale cache. Verification and timing both check every call
/// through here; outputs are read where the kernel wrote them, never copied.
#[allow(clippy::too_many_arguments)]
pub(crate) fn checked_call(
    cand: &mut Session,
    set: &InputSet,
    refill: bool,
    inputs: Option<&[u64]>,
    expected: &Expected,
    judged: Option<&[u64]>,
    id: &TestId,
    floor: Option<f64>,
    reread_delay: Option<Duration>,
    previous: Option<(&Expected, &[u64])>,
) -> Result<Result<Checked, Rejection>, VerifyError> {
    if refill {
        set.load(cand)?;
    }
    cand.poison_outputs();
    // Inputs whose checksums are known (hashed from the set, or as the last checked call left
    // them) need not be hashed again: any difference shows in the checksum after this call.
    let inputs: Vec<u64> = match inputs {
        Some(known) => known.to_vec(),
        None => (0..set.len()).map(|k| cand.input_checksum(k)).collect(),
    };
    let elapsed = match cand.call()? {
        Call::Returned { elapsed } => elapsed,
        Call::Died(outcome) => return Ok(Err(rejection(&outcome, Some(id)))),
    };
    let returned = std::time::Instant::now();
    if let Some(floor) = floor {
        if elapsed.as_secs_f64() < floor {
            return Ok(Err(Rejection::TooFast { test: id.clone(), seconds: elapsed.as_secs_f64(), floor }));
        }
    }
    if let Some(buffer) = cand.damaged_canary() {
        return Ok(Err(Rejection::OutOfBounds { test: id.clone(), buffer }));
    }
    if let Some(buffer) = (0..set.len()).find(|&k| cand.input_checksum(k) != inputs[k]) {
        return Ok(Err(Rejection::InputModified { test: id.clone(), buffer }));
    }
    let outputs = expected.targets.len();
    let checksums: Vec<u64> = (0..outputs).map(|k| cand.output_checksum(k)).collect();
    // Judged while the reread delay runs; a change after return, found when it is over, is the
    // verdict whatever the judging found.
    let verdict = if judged == Some(&checksums[..]) {
        // Bit for bit what an earlier call on these same inputs produced and passed.
        Ok(Vec::new())
    } else {
        judge_outputs(cand, expected, id, &checksums, previous)
    };
    if let Some(delay) = reread_delay {
        std::thread::sleep(delay.saturating_sub(returned.elapsed()));
        if let Some(k) = (0..outputs).find(|&k| cand.output_checksum(k) != checksums[k]) {
            return Ok(Err(Rejection::ChangedAfterReturn { test: id.clone(), output: k }));
        }
    }
    Ok(verdict.map(|figures| Checked { elapsed, checksums, inputs, figures }))
}

/// Judges every output of the call that just returned in `cand` against `expected`: every
/// element written (the poison left nowhere), then accurate. An output is scanned for the
/// poison only where judging cannot tell it from a right value (an element whose reference or
/// naive output is NaN or infinite) or has already failed (to name the failure rightly).
#[allow(clippy::result_large_err)] // a rejection, once per candidate
fn judge_outputs(cand: &Session, expected: &Expected, id: &TestId, checksums: &[u64], previous: Option<(&Expected, &[u64])>) -> Result<Vec<Figures>, Rejection> {
    let mut figures = Vec::new();
    for (k, target) in expected.targets.iter().enumerate() {
        let unwritten = || match cand.unwritten(k) {
            0 => Ok(()),
            count => Err(Rejection::Unwritten { test: id.clone(), output: k, count }),
        };
        if target.has_specials() {
            unwritten()?;
        }
        let judged = match cand.output_data(k) {
            OutputData::F32(bytes) => target.judge_slice(&cast::<f32>(bytes)),
            OutputData::F64(bytes) => target.judge_slice(&cast::<f64>(bytes)),
            data => target.judge_slice(&data.widened().expect("a 16-bit output widens")),
        };
        match judged {
            Ok(f) => figures.push(f),
            Err(inaccuracy) => {
                unwritten()?;
                // Bit for bit the last call's output, though what it should be changed: a cache.
                if let Some((last, last_checksums)) = previous {
                    if last_checksums[k] == checksums[k] && last.targets[k].reference_bytes() != target.reference_bytes() {
                        return Err(Rejection::StaleOutput { test: id.clone(), output: k });
                    }
                }
                return Err(inaccurate(id, k, inaccuracy));
            }
        }
    }
    Ok(figures)
}

pub(crate) fn inaccurate(id: &TestId, output: usize, i: Inaccuracy) -> Rejection {
    let detail = i.to_string();
    match i {
        Inaccuracy::NonFinite { index, value, reference } => Rejection::Inaccurate { test: id.clone(), output, detail, element: Some(index), value, reference, bound: None },
        Inaccuracy::Elementwise { index, value, reference, bound, .. } => Rejection::Inaccurate { test: id.clone(), output, detail, element: Some(index), value, reference, bound: Some(bound) },
        Inaccuracy::Normwise { error, bound } => Rejection::Inaccurate { test: id.clone(), output, detail, element: None, value: error, reference: 0.0, bound: Some(bound) },
        Inaccuracy::Index { index, value, reference, .. } | Inaccuracy::Order { index, value, reference, .. } => Rejection::Inaccurate { test: id.clone(), output, detail, element: Some(index), value, reference: reference as f64, bound: None },
    }
}

pub(crate) fn rejection(outcome: &Outcome, id: Option<&TestId>) -> Rejection {
    let id = || id.cloned().unwrap_or(TestId { family: "none".into(), seed: 0, kind: "load".into(), call: 0 });
    match outcome {
        Outcome::Crashed { signal } => Rejection::Crashed { test: id(), signal: *signal },
        Outcome::Timeout { limit } => Rejection::Timeout { test: id(), seconds: limit.as_secs_f64() },
        Outcome::Forbidden { syscall } => Rejection::Forbidden { test: id(), syscall: ollie_runner::syscall_name(*syscall) },
        Outcome::OutOfBounds { buffer, write_to_input: true } => Rejection::InputModified { test: id(), buffer: *buffer },
        Outcome::OutOfBounds { buffer, .. } => Rejection::OutOfBounds { test: id(), buffer: *buffer },
        Outcome::CompileError { log } => Rejection::CompileError { log: log.clone() },
        Outcome::Failed { reason } => Rejection::Failed { reason: reason.clone() },
        Outcome::Ran { .. } => Rejection::Failed { reason: "unexpected outcome".into() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejections_kind_is_its_json_tag() {
        for r in Rejection::one_of_each() {
            assert_eq!(serde_json::to_value(&r).unwrap()["kind"], r.kind());
        }
    }
}
