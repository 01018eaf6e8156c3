//! The final phase of a search: the fastest candidates timed against the naive kernel —
//! interleaved pairs while its calls are cheap, else alone against its measured time — and
//! re-verified on inputs the search never saw (as many as the budget leaves time for) until one
//! is faster and passes (else the naive kernel is the result), and every output written.

use std::path::Path;

use anyhow::Context;
use ollie_graph::Graph;
use ollie_loops::LoopNest;
use ollie_runner::{Compiler, Floor, Machine};
use ollie_store::{Candidate, CandidateId, RunId, Sources, Store};
use ollie_verify::{BenchConfig, Oracle, Timing, VerifyConfig};

use crate::evaluator::{build, Built};
use crate::naive::NaiveCost;
use crate::stored;
use crate::final_timing::FinalTiming;
use crate::{report, setup, Error};

/// The final verification: every family, two input sets each, from the spec's seed (inputs the
/// search never saw; the same a later `ollie check` of the result tests by default).
pub(crate) fn final_verification(graph: &Graph, floor: &Floor) -> VerifyConfig {
    VerifyConfig { seed: setup::spec_seed(graph), floor: Some(floor.fastest), ..VerifyConfig::default() }
}

pub(crate) struct FinishContext<'a> {
    pub graph: &'a Graph,
    pub naive: &'a LoopNest,
    pub compiler: &'a Compiler,
    pub baseline: &'a Path,
    pub machine: &'a Machine,
    pub floor: &'a Floor,
    pub out: &'a Path,
    pub store: &'a mut Store,
    pub run: RunId,
    pub elapsed: f64,
    /// When the command must be done: past it, no further candidate is tried, and the final
    /// verification runs the input sets that fit before it (the first always).
    pub deadline: std::time::Instant,
    /// The naive kernel's time as measured before the search, and how.
    pub cost: &'a NaiveCost,
    pub timing: FinalTiming,
}

/// Times the fastest candidates against the naive kernel and re-verifies them on inputs the
/// search never saw until one is faster and passes, and writes every output. Returns the
/// result's table and summary.
pub(crate) fn finish(cx: FinishContext, mut oracle: Oracle, say: &dyn Fn(String)) -> Result<(String, report::Summary), Error> {
    let history = cx.store.candidates(cx.run, Sources::Written).context("reading the store")?;
    let mut timed: Vec<&(CandidateId, Candidate)> = history.iter().filter(|(_, c)| c.accepted && c.timing.is_some()).collect();
    let estimate = Candidate::estimate;
    timed.sort_by(|a, b| estimate(&a.1).total_cmp(&estimate(&b.1)));
    let config = VerifyConfig { deadline: Some(cx.deadline), ..final_verification(cx.graph, cx.floor) };
    let seed = config.seed;
    let name = &cx.graph.name;
    // The fastest few, each timed against the naive kernel and then re-verified on those inputs:
    // the first not slower than naive that passes is the result (the naive kernel always
    // qualifies, last).
    let naive_candidate = timed.iter().find(|(_, c)| c.proposer == "naive").copied();
    // A kernel the chain took while it was slower than the naive kernel is not tried.
    let naive_estimate = naive_candidate.map_or(f64::INFINITY, |(_, c)| estimate(c));
    // The naive kernel's time as the last final timing of another candidate measured it.
    let mut naive_timed: Option<(CandidateId, Timing)> = None;
    let mut chosen = None;
    let bench = cx.timing.config(seed, cx.floor, oracle.costs().per_computed().unwrap_or(0.0));
    for (tried, (id, c)) in timed.iter().filter(|(_, c)| c.proposer != "naive" && estimate(c) < naive_estimate).take(3).chain(naive_candidate.iter()).enumerate() {
        // The budget covers the whole command: once it is spent, the naive kernel is the result.
        let is_naive = c.proposer == "naive";
        if tried > 0 && !is_naive && std::time::Instant::now() >= cx.deadline {
            say(format!("candidate {} not tried: the time is up", id.0));
            continue;
        }
        let built = build(cx.compiler, cx.naive, &stored::kernel(c)?);
        let library = match &built.library {
            Ok(library) => library.clone(),
            Err((_, detail)) => {
                say(format!("candidate {} no longer builds: {detail}", id.0));
                continue;
            }
        };
        let started = std::time::Instant::now();
        if is_naive {
            // The naive kernel as the result: its time from a candidate's final timing if one was
            // made, else as measured before the search (timing it again would need the final
            // sets' expected outputs for nothing: 20 s for a 1 GB layer norm). It is not
            // re-verified: it is ollie's own lowering of the spec, the baseline of the rule.
            let (timing, with) = match naive_timed.take() {
                Some((with, timing)) => (timing, Some(with)),
                None => (Timing::from_samples(vec![cx.cost.seconds]), None),
            };
            tracing::debug!(seconds = started.elapsed().as_secs_f64(), "final timing of the naive kernel");
            chosen = Some(Chosen { id: *id, candidate: c, built, library, verified: None, naive: timing.median, best: timing, ratio: Timing::from_samples(vec![1.0]), naive_timed_with: with });
            break;
        }
        let Some((mut best, mut naive, mut ratio)) = final_timing(&cx, &mut oracle, &library, &bench, id, say)? else { continue };
        // A burst of the shared machine's load during the pairs can turn a kernel the search
        // measured at a fraction of the naive kernel's time into a loss: a verdict that
        // contradicts the search's by more than twice is measured once more, where the budget
        // leaves the time, and the second timing stands.
        let searched = estimate(c) / naive_estimate;
        let again = std::time::Duration::from_secs_f64(cx.timing.cost(best.median.min(estimate(c)), 0.0));
        if ratio.median > 1.0 && naive_estimate.is_finite() && searched < 0.5 && std::time::Instant::now() + again < cx.deadline {
            say(format!("candidate {} took {:.2}x the naive kernel's time in the final timing against {searched:.2}x in the search: timed again", id.0, ratio.median));
            let Some(second) = final_timing(&cx, &mut oracle, &library, &bench, id, say)? else { continue };
            (best, naive, ratio) = second;
        }
        tracing::debug!(candidate = id.0, seconds = started.elapsed().as_secs_f64(), paired = cx.timing.paired, "final timing");
        if cx.timing.paired {
            naive_timed = Some((*id, naive.clone()));
        }
        if ratio.median > 1.0 {
            say(format!("candidate {} is not faster than the naive kernel in the final timing ({:.2}x its time)", id.0, ratio.median));
            continue;
        }
        // Verified only once it is known to be the result if it passes (the timing is the
        // cheaper; its calls are checked on normal inputs, and nothing is written out unverified).
        let started = std::time::Instant::now();
        let report = ollie_verify::verify_with(&mut oracle, &library, &config).map_err(|e| cx.cost.verify_error(name, e, "re-verifying the best kernel"))?;
        tracing::debug!(candidate = id.0, seconds = started.elapsed().as_secs_f64(), calls = report.certificate.tests.len(), "final verification");
        if let Some(r) = &report.rejection {
            say(format!("candidate {} failed re-verification: {r}", id.0));
            continue;
        }
        chosen = Some(Chosen { id: *id, candidate: c, built, library, verified: Some(report), naive: naive.median, best, ratio, naive_timed_with: None });
        break;
    }
    let Some(Chosen { id, candidate: c, built, library, verified, naive, best, ratio, naive_timed_with }) = chosen else {
        return Err(anyhow::anyhow!("no candidate passed re-verification and the naive kernel was not among the timed ones").into());
    };
    let naive_is_best = verified.is_none();
    let tests = verified.as_ref().map(|r| (r.certificate.tests.len(), r.certificate.planned));
    let summary = report::Summary {
        candidate: id.0,
        schedule: c.schedule.clone(),
        graph: c.graph.clone(),
        proposer: c.proposer.clone(),
        flags: built.flags.join(" "),
        naive_seconds: naive,
        best_seconds: best.median,
        best_p10: best.p10,
        best_p90: best.p90,
        speedup: 1.0 / ratio.median,
        speedup_p10: 1.0 / ratio.p90,
        speedup_p90: 1.0 / ratio.p10,
        pairs: if naive_is_best || !cx.timing.paired { 0 } else { ratio.samples.len() },
        verify_seed: seed,
        search_seconds: cx.elapsed,
        naive_is_best,
        naive_timed_with: naive_timed_with.map(|c| c.0),
        naive: Some(report::NaiveTime { seconds: cx.cost.seconds, how: cx.cost.how(), estimated: cx.cost.estimated(), paired: cx.timing.paired }),
        baseline: oracle.baseline().name().to_string(),
        tests,
    };    cx.store.finish(cx.run, cx.elapsed, &serde_json::to_string(&summary).expect("serializable")).context("writing the store")?;
    let prototype = ollie_loops::prototype(cx.naive);
    let files = report::Files { source: &built.source, prototype: &prototype, library: &library, verified: verified.as_ref() };
    let run = cx.store.run(cx.run).context("reading the store")?;
    let history: Vec<Candidate> = history.into_iter().map(|(_, c)| c).collect();
    let calls = cx.store.llm_calls(cx.run).context("reading the store")?;
    let workers = cx.store.workers(cx.run).context("reading the store")?;
    let table = report::write(cx.out, cx.graph, cx.machine, cx.floor, &run, &workers, &history, &calls, &summary, Some(files))?;
    Ok((table, summary))
}

/// One final timing of `library` against the naive kernel (paired, or alone against the naive
/// kernel's time before the search): the kernel's times, the naive kernel's and their ratios;
/// `None` when the kernel failed while timed (said).
fn final_timing(cx: &FinishContext, oracle: &mut Oracle, library: &Path, bench: &BenchConfig, id: &CandidateId, say: &dyn Fn(String)) -> Result<Option<(Timing, Timing, Timing)>, Error> {
    let name = &cx.graph.name;
    if cx.timing.paired {
        let timing = ollie_verify::bench_with(oracle, &[library, cx.baseline], bench).map_err(|e| cx.cost.verify_error(name, e, "timing the best kernel against the naive one"))?;
        match (&timing.kernels[0], &timing.kernels[1], &timing.ratios) {
            (Ok(b), Ok(n), Some(r)) => Ok(Some((b.clone(), n.clone(), r.clone()))),
            (Err(r), _, _) => {
                say(format!("candidate {} failed while timing: {r}", id.0));
                Ok(None)
            }
            _ => Err(anyhow::anyhow!("the naive kernel failed while timing").into()),
        }
    } else {
        let timing = ollie_verify::bench_with(oracle, &[library], bench).map_err(|e| cx.cost.verify_error(name, e, "timing the best kernel"))?;
        match &timing.kernels[0] {
            Ok(b) => Ok(Some((b.clone(), Timing::from_samples(vec![cx.cost.seconds]), Timing::from_samples(b.samples.iter().map(|t| t / cx.cost.seconds).collect())))),
            Err(r) => {
                say(format!("candidate {} failed while timing: {r}", id.0));
                Ok(None)
            }
        }
    }
}

/// The result of the final phase.
struct Chosen<'h> {
    id: CandidateId,
    candidate: &'h Candidate,
    built: Built,
    library: std::path::PathBuf,
    /// The final verification's report; `None` for the naive kernel, which is not re-verified.
    verified: Option<ollie_verify::Report>,
    /// The naive kernel's median in the final timing.
    naive: f64,
    best: Timing,
    ratio: Timing,
    /// The candidate whose final timing measured the naive kernel's time, when the naive kernel
    /// is the result and was not timed alone.
    naive_timed_with: Option<CandidateId>,
}
