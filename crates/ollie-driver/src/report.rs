//! What `ollie optimize` leaves in its output directory — the kernel (`NAME.c`, `NAME.h`,
//! `libNAME.so`), a numpy loader (`NAME.py`), `certificate.json`, and the report (`report.md`,
//! `report.json`, `progress.svg`, `roofline.svg`) — and `ollie runs` / `ollie report DIR`, which
//! read the store.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use ollie_graph::{DType, Graph};
use ollie_runner::{Floor, Machine};
use ollie_store::{Candidate, LlmCall, Location, Run, Sources, Store, Worker};
use ollie_search::cost_model::{pairwise, spearman, Timed};
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use crate::stored::{Tally, STORE_FILE};
use crate::tried;
use crate::{user_error, Error};

/// The outcome of a finished run, kept in the store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub candidate: i64,
    /// The proposer the best kernel came from (`naive`, `mutate`, `llm`).
    #[serde(default)]
    pub proposer: String,
    /// Its schedule's text; empty for a kernel written whole.
    pub schedule: String,
    /// The text of the graph its schedule is of, when rewriting found it (a variant of the
    /// spec's graph); empty for the spec's own graph.
    #[serde(default)]
    pub graph: String,
    pub flags: String,
    /// The naive kernel's median in the same final interleaved timing.
    pub naive_seconds: f64,
    pub best_seconds: f64,
    pub best_p10: f64,
    pub best_p90: f64,
    /// Naive time over best time, from interleaved pairs (median, and p10..p90 of the pairs);
    /// 1 over no pairs when the result is the naive kernel.
    pub speedup: f64,
    pub speedup_p10: f64,
    pub speedup_p90: f64,
    pub pairs: usize,
    /// The fresh seed the best kernel was re-verified with.
    pub verify_seed: u64,
    pub search_seconds: f64,
    /// No candidate beat the naive kernel in the final timing: the result is the naive kernel,
    /// not re-verified (its outputs are the baseline), its speedup 1 over no pairs.
    #[serde(default)]
    pub naive_is_best: bool,
    /// When the naive kernel is the result: the candidate whose final timing measured its time
    /// (it lost, or failed re-verification); `None`: timed alone.
    #[serde(default)]
    pub naive_timed_with: Option<i64>,
    /// The naive kernel's time before the search and how it was found; the result's ratio is
    /// against it when the final timing could not pair with the naive kernel.
    #[serde(default)]
    pub naive: Option<NaiveTime>,
    /// What errors were measured against besides the reference (`naive-kernel`,
    /// `rounded-reference`).
    #[serde(default)]
    pub baseline: String,
    /// The final verification's tests: (ran, planned); fewer ran when the budget ended first.
    #[serde(default)]
    pub tests: Option<(usize, usize)>,
}

/// The naive kernel's time as the search measured it before it began.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NaiveTime {
    pub seconds: f64,
    /// `measured, median of 7 calls`, or `estimated: 16 of its 2048 rows timed and scaled`.
    pub how: String,
    /// Scaled from a slice of its rows, not measured whole.
    pub estimated: bool,
    /// Whether the final timing interleaved the result with the naive kernel (else the result
    /// was timed alone and its speedup is over `seconds`).
    pub paired: bool,
}

impl Summary {
    /// Whether the speedup is over the naive kernel's time measured before the search (or
    /// estimated from a slice of it) rather than over pairs measured side by side.
    pub fn estimated(&self) -> bool {
        !self.naive_is_best && self.naive.as_ref().is_some_and(|n| !n.paired)
    }

    /// How the result's time was measured, for the report.
    fn timed(&self) -> String {
        let before = |n: &NaiveTime| format!("the naive kernel's {} before the search ({})", seconds(n.seconds), n.how);
        match (self.naive_is_best, self.naive_timed_with, &self.naive) {
            (false, _, Some(n)) if !n.paired => format!("timed alone, its speedup over {}: too slow to time side by side in the budget", before(n)),
            (false, _, _) => format!("timed against the naive kernel over {} interleaved pairs", self.pairs),
            (true, None, Some(n)) => format!("its time is {}", before(n)),
            (true, None, None) => "timed alone".to_string(),
            (true, Some(c), _) => format!("timed in candidate {c}'s final timing"),
        }
    }

    /// What the final verification ran, when the budget cut it short.
    fn partial(&self) -> Option<String> {
        let (ran, planned) = self.tests?;
        (ran < planned).then(|| format!("re-verified on {ran} of its {planned} tests: the rest did not fit in the budget (a longer --time, or `ollie check`, runs them all)"))
    }
}

/// The kernel's files, written once at the end of a search.
pub struct Files<'a> {
    pub source: &'a str,
    /// The ABI's prototype, for `NAME.h` (whoever wrote the source).
    pub prototype: &'a str,
    pub library: &'a Path,
    /// The final verification's report; `None` for the naive kernel, which is not re-verified.
    pub verified: Option<&'a ollie_verify::Report>,
}

/// `certificate.json` for the naive kernel as the result.
#[derive(Serialize)]
struct BaselineCertificate<'a> {
    kernel: &'a str,
    accepted: bool,
    baseline: bool,
    why: &'a str,
}

/// Writes `contents` to `path` through a temporary file, so a kill never leaves half a file.
fn write_file(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("ollie-tmp");
    std::fs::write(&tmp, contents).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

/// The LLM's part of a run, from its stored calls.
#[derive(Debug, Default, Serialize)]
pub struct LlmTally {
    pub calls: usize,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Dollars, where the endpoint or --llm-price gave a price.
    pub cost: Option<f64>,
    /// Calls by outcome: `kernel`, `no-code`, `timeout`, `abandoned`, ...
    pub outcomes: std::collections::BTreeMap<String, usize>,
    /// How long each call still in flight when the search ended had waited.
    pub abandoned_seconds: Vec<f64>,
}

impl LlmTally {
    pub fn of(calls: &[LlmCall]) -> Option<LlmTally> {
        if calls.is_empty() {
            return None;
        }
        let mut t = LlmTally::default();
        for c in calls {
            t.calls += 1;
            t.prompt_tokens += c.prompt_tokens;
            t.completion_tokens += c.completion_tokens;
            if let Some(cost) = c.cost {
                t.cost = Some(t.cost.unwrap_or(0.0) + cost);
            }
            *t.outcomes.entry(c.outcome.clone()).or_default() += 1;
            if c.outcome == "abandoned" {
                t.abandoned_seconds.push(c.seconds);
            }
        }
        Some(t)
    }

    fn line(&self) -> String {
        let outcomes: Vec<String> = self.outcomes.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let cost = self.cost.map_or_else(String::new, |c| format!(", ${c:.4}"));
        let abandoned = if self.abandoned_seconds.is_empty() {
            String::new()
        } else {
            let waits: Vec<String> = self.abandoned_seconds.iter().map(|s| format!("{s:.1} s")).collect();
            format!("; still waiting for a reply when the budget ended: {} (waited {})", self.abandoned_seconds.len(), waits.join(", "))
        };
        format!(
            "llm: {} calls ({}), {} tokens ({} prompt, {} completion){cost}{abandoned}",
            self.calls,
            if outcomes.is_empty() { "none made".to_string() } else { outcomes.join(", ") },
            self.prompt_tokens + self.completion_tokens,
            self.prompt_tokens,
            self.completion_tokens
        )
    }
}

#[allow(clippy::too_many_arguments)]
/// Writes the report (and the kernel's files, if given) into `out`; returns the result's table
/// and what was written, for the user.
pub fn write(out: &Path, graph: &Graph, machine: &Machine, floor: &Floor, r: &Run, workers: &[Worker], history: &[Candidate], calls: &[LlmCall], summary: &Summary, files: Option<Files>) -> Result<String, Error> {
    let name = &graph.name;
    if let Some(f) = files {
        write_file(&out.join(format!("{name}.c")), f.source.as_bytes())?;
        write_file(&out.join(format!("{name}.h")), header(name, f.prototype).as_bytes())?;
        let library = std::fs::read(f.library).context("reading the compiled kernel")?;
        write_file(&out.join(format!("lib{name}.so")), &library)?;
        write_file(&out.join(format!("{name}.py")), loader(graph).as_bytes())?;
        let certificate = match f.verified {
            Some(report) => serde_json::to_string_pretty(report),
            None => serde_json::to_string_pretty(&BaselineCertificate { kernel: name, accepted: true, baseline: true, why: BASELINE }),
        };
        write_file(&out.join("certificate.json"), certificate.expect("serializable").as_bytes())?;
    }
    let mut tally = Tally::default();
    history.iter().for_each(|c| tally.add(c));
    let cost = graph.work();
    // Every proposer the run asked for has its row, those that produced no candidate too.
    let requested: Vec<String> = crate::stored::option(r, "proposers");
    let mut proposers = tried::verdicts(history, r.new.naive_seconds);
    for p in &requested {
        if !proposers.iter().any(|row| &row.proposer == p) {
            proposers.push(tried::Verdicts { proposer: p.clone(), ..tried::Verdicts::default() });
        }
    }
    let rules: Vec<ollie_search::RuleNote> = crate::stored::option(r, "rules");
    let rewriting: Option<tried::Rewriting> = crate::stored::option(r, "rewriting");
    let why_naive = summary.naive_is_best.then(|| tried::why_naive(&rules, rewriting.as_ref(), &proposers));
    let llm = LlmTally::of(calls).or_else(|| requested.iter().any(|p| p == "llm").then(LlmTally::default));
    let model = cost_model(history);
    let json = serde_json::json!({
        "kernel": name,
        "spec": r.new.spec_path,
        "run": r.id.0,
        "search_seconds": summary.search_seconds,
        "evaluations": tally.evaluations,
        "accepted": tally.accepted,
        "rejected": tally.rejected,
        "naive_seconds": summary.naive_seconds,
        "best": summary,
        "floor_seconds": floor.seconds,
        "memory_bound": floor.memory_bound,
        "fraction_of_roofline": floor.seconds / summary.best_seconds,
        "flops": cost.flops,
        "compulsory_bytes": cost.min_bytes,
        "signature": signature(graph),
        // What the verifier drew each integer parameter from (its index range).
        "index_ranges": (0..graph.params.len()).filter_map(|k| graph.index_range(k).map(|r| (graph.params[k].name.clone(), serde_json::json!({ "extent": r.extent, "negative": r.negative, "shift": r.shift })))).collect::<serde_json::Map<String, serde_json::Value>>(),
        "machine": { "cpu": machine.cpu, "isa": machine.isa, "threads": floor.ceiling.threads, "peak_gflops": floor.ceiling.peak_gflops, "bandwidth_gbs": floor.ceiling.bandwidth_gbs, "measured": machine.measured_date(), "measurements": machine.measurements, "pinned": machine.pinned },
        "proposers": proposers,
        "rules": rules,
        "rewriting": rewriting,
        "why_naive": why_naive,
        "llm": llm,
        "cost_model": model.map(|m| serde_json::json!({ "pairwise_accuracy": m.pairwise_accuracy, "pairs": m.pairs, "trained_on": m.trained_on, "predicted": m.predicted, "spearman": m.spearman, "regret_median": m.regret_median, "rounds_measured_whole": m.rounds })),
        "workers": workers.iter().map(|w| serde_json::json!({ "worker": w.id.0, "host": w.host, "pid": w.pid, "seed": w.seed, "evaluations": w.evaluations, "searched_seconds": w.elapsed_seconds })).collect::<Vec<_>>(),
        "final_phase": r.finisher,
    });
    write_file(&out.join("report.json"), serde_json::to_string_pretty(&json).expect("serializable").as_bytes())?;
    let table = table(graph, summary, floor, &tally, llm.as_ref(), model, why_naive.as_deref());
    let mut md = format!("# ollie: `{name}`\n\nSpec `{}`, run {} ({:.0} s of search).\n\n```text\n{table}```\n\n", r.new.spec_path, r.id.0, summary.search_seconds);
    writeln!(
        md,
        "The roofline: {} ({}), {} threads, {:.1} GB/s and {:.0} GFLOP/s, measured {} (the best of {}; `ollie machine` shows them).\n",
        machine.cpu,
        machine.isa,
        floor.ceiling.threads,
        floor.ceiling.bandwidth_gbs,
        floor.ceiling.peak_gflops,
        machine.measured_date(),
        machine.measurements
    )
    .unwrap();
    if let [only] = workers {
        writeln!(md, "Searched by one chain (worker {} on {}); the final phase ran there.\n", only.id.0, only.host).unwrap();
    } else {
        md.push_str("## Workers\n\nEach its own chain and seed, sharing through the store.\n\n| worker | host | pid | seed | evaluations | searched |\n|---|---|---|---|---|---|\n");
        for w in workers {
            writeln!(md, "| {} | {} | {} | {} | {} | {:.0} s |", w.id.0, w.host, w.pid, w.seed, w.evaluations, w.elapsed_seconds).unwrap();
        }
        writeln!(md, "\nThe final phase ran on {}.\n", r.finisher.as_deref().unwrap_or("an unrecorded worker")).unwrap();
    }
    if summary.schedule.trim().is_empty() {
        writeln!(md, "## Best kernel (candidate {}, from `{}`)\n\nWritten whole, not a schedule of the naive loop nest: its source is `{name}.c`.\n\nCompiled with `{}`.\n", summary.candidate, summary.proposer, summary.flags).unwrap();
    } else if summary.graph.trim().is_empty() {
        writeln!(md, "## Best kernel (candidate {}, from `{}`)\n\nSchedule, applied to the naive loop nest (`ollie lower SPEC --schedule FILE` replays it):\n\n```text\n{}```\n\nCompiled with `{}`.\n", summary.candidate, summary.proposer, summary.schedule, summary.flags).unwrap();
    } else {
        writeln!(
            md,
            "## Best kernel (candidate {}, from `{}`)\n\nComputed by a graph algebraic rewriting found equal to the spec's (`ollie rewrite SPEC` lists the variants):\n\n```text\n{}```\n\nSchedule, applied to that graph's naive loop nest:\n\n```text\n{}```\n\nCompiled with `{}`.\n",
            summary.candidate, summary.proposer, summary.graph, summary.schedule, summary.flags
        )
        .unwrap();
    }
    if summary.naive_is_best {
        writeln!(md, "The naive kernel: {BASELINE}; {}.\n", summary.timed()).unwrap();
    } else {
        writeln!(md, "Re-verified with fresh seed {} (see `certificate.json`); {}.\n", summary.verify_seed, summary.timed()).unwrap();
        if let Some(partial) = summary.partial() {
            writeln!(md, "The final verification {partial}.\n").unwrap();
        }
    }
    if summary.baseline == ollie_verify::Baseline::Rounded.name() {
        writeln!(md, "Errors were measured against the reference rounded to float32, not the naive kernel's outputs: computing those on every input set would have cost more than the budget (the a-priori rule of docs/verification.md).\n").unwrap();
    }
    md.push_str(&tried::markdown(&rules, rewriting.as_ref(), &proposers));
    md.push_str("## Improvements\n\nTimes on the chain's scale: the naive kernel's time multiplied by the interleaved ratios along the way.\n\n| evaluation | at | estimated time | proposer | schedule |\n|---|---|---|---|---|\n");
    for c in history.iter().filter(|c| c.new_best) {
        let t = c.timing.map(|t| seconds(t.estimate)).unwrap_or_default();
        let kernel = if c.schedule.trim().is_empty() { format!("written whole, flags `{}`", c.flags) } else { format!("`{}`", c.schedule.trim().replace('\n', "; ")) };
        let kernel = if c.graph.trim().is_empty() { kernel } else { format!("{kernel} on a rewritten graph") };
        writeln!(md, "| {} | {:.1} s | {t} | {} | {kernel} |", c.evaluation, c.at_seconds, c.proposer).unwrap();
    }
    md.push_str(&format!("\n![progress](progress.svg)\n\n![roofline](roofline.svg)\n\nUse it from Python: `from {name} import {name}` in this directory.\n"));
    write_file(&out.join("report.md"), md.as_bytes())?;
    progress_svg(&out.join("progress.svg"), history, r.new.naive_seconds).context("drawing progress.svg")?;
    roofline_svg(&out.join("roofline.svg"), floor, cost.flops, cost.min_bytes, r.new.naive_seconds, summary.best_seconds).context("drawing roofline.svg")?;
    Ok(format!("{table}\nwrote {}: {name}.c {name}.h lib{name}.so {name}.py certificate.json report.md report.json progress.svg roofline.svg\n", out.display()))
}

/// Why the naive kernel as the result is not re-verified.
const BASELINE: &str = "not re-verified, as its outputs are the baseline every candidate was judged against (it passes by construction)";

/// The short table printed at the end and placed in the report.
fn table(graph: &Graph, s: &Summary, floor: &Floor, tally: &Tally, llm: Option<&LlmTally>, model: Option<ModelRecord>, why_naive: Option<&str>) -> String {
    let cost = graph.work();
    let mut t = String::new();
    writeln!(t, "{:<10} {:>11} {:>23} {:>9} {:>9}", "kernel", "median", "p10..p90", "GFLOP/s", "roofline").unwrap();
    let naive = if s.naive.as_ref().is_some_and(|n| n.estimated) { "estimated".to_string() } else { String::new() };
    for (label, median, range) in [("naive", s.naive_seconds, naive), ("best", s.best_seconds, format!("{}..{}", seconds(s.best_p10), seconds(s.best_p90)))] {
        writeln!(t, "{label:<10} {:>11} {range:>23} {:>9.2} {:>8.1}%", seconds(median), cost.flops / median / 1e9, 100.0 * floor.seconds / median).unwrap();
    }
    if s.naive_is_best {
        writeln!(t, "no candidate beat the naive kernel: the result is the naive kernel ({})", s.timed()).unwrap();
        if let Some(why) = why_naive {
            writeln!(t, "why: {why}").unwrap();
        }
    } else {
        let on = if s.graph.trim().is_empty() { "" } else { " on a rewritten graph" };
        let how = if s.estimated() { "estimated: timed alone against the naive kernel's time before the search".to_string() } else { format!("{} interleaved pairs", s.pairs) };
        writeln!(t, "speedup {:.2}x (p10..p90 {:.2}..{:.2}, {how}); the best kernel is from `{}`{on}", s.speedup, s.speedup_p10, s.speedup_p90, s.proposer).unwrap();
        if let Some(partial) = s.partial() {
            writeln!(t, "{partial}").unwrap();
        }
    }
    writeln!(t, "{} evaluations: {} accepted, rejected: {}", tally.evaluations, tally.accepted, tally.rejected_text()).unwrap();
    if let Some(llm) = llm {
        writeln!(t, "{}", llm.line()).unwrap();
    }
    match model {
        Some(m) => {
            let accuracy = match m.pairwise_accuracy {
                Some(a) => format!("ordered {:.0}% of the {} pairs", 100.0 * a, m.pairs),
                None => "had no pairs".to_string(),
            };
            let rho = m.spearman.map_or(String::new(), |rho| format!("; Spearman's rho {rho:.2}"));
            let regret = m.regret_median.map_or(String::new(), |r| format!("; in {} rounds measured whole, its picks took {r:.2}x the round's best (median)", m.rounds));
            writeln!(t, "cost model: {accuracy} of the {} candidates it predicted before they were timed that their timings' noise tells apart (fitted on up to {} timings){rho}{regret}", m.predicted, m.trained_on).unwrap()
        }
        None => writeln!(t, "cost model: too few timings to predict any candidate before it was timed").unwrap(),
    }
    t
}

/// How well the cost model predicted the run's timed candidates, each before it was measured:
/// the share of the pairs of them that their timings' noise tells apart that it ordered right,
/// Spearman's ρ over all of them, and the most timings it had been fitted on.
#[derive(Debug, Clone, Copy)]
struct ModelRecord {
    pairwise_accuracy: Option<f64>,
    pairs: usize,
    spearman: Option<f64>,
    predicted: usize,
    trained_on: u64,
    /// Over the rounds measured whole: the median of the best time of those the model picked
    /// over the best time of them all (1: it picked the best), and how many rounds.
    regret_median: Option<f64>,
    rounds: usize,
}

/// The run's [`ModelRecord`]; `None` where it predicted nothing. A timing's noise is
/// [`TimingRecord::noise`](ollie_store::TimingRecord::noise), around its estimate.
fn cost_model(history: &[Candidate]) -> Option<ModelRecord> {
    let (predicted, measured): (Vec<f64>, Vec<Timed>) = history
        .iter()
        .filter_map(|c| {
            let timing = c.timing?;
            let prediction = timing.predicted?;
            Some((prediction.log_time, Timed::new(Vec::new(), timing.estimate.ln(), timing.noise())?))
        })
        .unzip();
    if predicted.is_empty() {
        return None;
    }
    let trained_on = history.iter().filter_map(|c| Some(c.timing?.predicted?.trained_on)).max().unwrap_or(0);
    let (pairwise_accuracy, pairs) = pairwise(&predicted, &measured);
    let times: Vec<f64> = measured.iter().map(|t| t.log_time).collect();
    let regrets = regrets(history);
    Some(ModelRecord { pairwise_accuracy, pairs, spearman: spearman(&predicted, &times), predicted: predicted.len(), trained_on, regret_median: median(&regrets), rounds: regrets.len() })
}

/// Per round measured whole (with a pick timed and another candidate): the best time the
/// model's picks took over the best of the round.
fn regrets(history: &[Candidate]) -> Vec<f64> {
    let mut rounds: std::collections::BTreeMap<u64, (f64, f64, usize)> = Default::default();
    for c in history {
        let Some(timing) = c.timing else { continue };
        let Some(p) = timing.predicted else { continue };
        let Some(round) = p.round else { continue };
        let r = rounds.entry(round).or_insert((f64::INFINITY, f64::INFINITY, 0));
        r.1 = r.1.min(timing.estimate);
        r.2 += 1;
        if p.picked {
            r.0 = r.0.min(timing.estimate);
        }
    }
    rounds.values().filter(|(picked, best, n)| picked.is_finite() && *best > 0.0 && *n >= 2).map(|(picked, best, _)| picked / best).collect()
}

fn median(x: &[f64]) -> Option<f64> {
    let mut x = x.to_vec();
    x.sort_by(f64::total_cmp);
    match x.len() {
        0 => None,
        n if n % 2 == 1 => Some(x[n / 2]),
        n => Some((x[n / 2 - 1] + x[n / 2]) / 2.0),
    }
}

/// The kernel's arrays in ABI order, for callers other than the generated loader (the Python
/// package): each one's name, shape, the spec's dtype and the dtype the C kernel takes (integer
/// and boolean results are written as float, see docs/abi.md).
fn signature(graph: &Graph) -> serde_json::Value {
    let array = |name: &str, ty: &ollie_graph::TensorType, abi: DType| serde_json::json!({ "name": name, "shape": ty.shape, "dtype": ty.dtype.name(), "abi": abi.name() });
    let inputs: Vec<_> = graph.params.iter().map(|p| array(&p.name, &p.ty, p.ty.dtype)).collect();
    let outputs: Vec<_> = (0..graph.outputs.len())
        .map(|k| {
            let ty = graph.ty(graph.outputs[k]);
            array(&graph.output_name(k), ty, ty.dtype.result())
        })
        .collect();
    serde_json::json!({ "inputs": inputs, "outputs": outputs })
}

/// `NAME.h`: the kernel's prototype.
fn header(name: &str, prototype: &str) -> String {
    let guard = format!("OLLIE_{}_H", name.to_uppercase());
    format!("/* {name}: the kernel ollie found; see report.md. */\n#ifndef {guard}\n#define {guard}\n\n{prototype};\n\n#endif\n")
}

/// `NAME.py`: `from NAME import NAME; y = NAME(x)` with numpy arrays, shapes and dtypes checked.
fn loader(graph: &Graph) -> String {
    let name = &graph.name;
    let np = |d: DType| match d {
        DType::F32 => "np.float32",
        DType::F64 => "np.float64",
        DType::I64 => "np.int64",
        DType::I32 => "np.int32",
        DType::I8 => "np.int8",
        DType::U8 => "np.uint8",
        DType::Bool => "np.bool_",
        DType::F16 => "np.float16",
        DType::BF16 => "ml_dtypes.bfloat16",
    };
    // The ABI passes float64 as double, 16-bit floats as their bits, integer inputs as
    // themselves, every other dtype (integer and boolean results) as float.
    let abi = |d: DType| np(d.result());
    let types = || graph.params.iter().map(|p| p.ty.dtype).chain(graph.outputs.iter().map(|&o| graph.ty(o).dtype));
    let ml_dtypes = if types().any(|d| d == DType::BF16) { "import ml_dtypes\n" } else { "" };
    let spec = |name: &str, ty: &ollie_graph::TensorType, abi: &str| {
        let shape: Vec<String> = ty.shape.iter().map(|d| d.to_string()).collect();
        let shape = if shape.len() == 1 { format!("({},)", shape[0]) } else { format!("({})", shape.join(", ")) };
        format!("    ({name:?}, {shape}, {}, {abi}),\n", np(ty.dtype))
    };
    let inputs: String = graph.params.iter().map(|p| spec(&p.name, &p.ty, np(p.ty.dtype))).collect();
    let outputs: String = (0..graph.outputs.len()).map(|k| { let ty = graph.ty(graph.outputs[k]); spec(&graph.output_name(k), ty, abi(ty.dtype)) }).collect();
    let params: Vec<&str> = graph.params.iter().map(|p| p.name.as_str()).collect();
    format!(
        r#""""{name}: the kernel ollie found, callable with numpy arrays.

    from {name} import {name}
    y = {name}({args})
"""
import ctypes
import os

{ml_dtypes}import numpy as np

_lib = ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib{name}.so"))
_kernel = _lib.{name}
_kernel.restype = None
_kernel.argtypes = [ctypes.c_void_p] * {count}

# (name, shape, dtype the spec declares, dtype the C kernel takes)
_INPUTS = [
{inputs}]
_OUTPUTS = [
{outputs}]


def _aligned(shape, dtype, align=64):
    """An uninitialized array of `shape` whose data starts on an `align`-byte boundary."""
    size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    raw = np.empty(size + align, dtype=np.uint8)
    at = -raw.ctypes.data % align
    return raw[at:at + size].view(dtype).reshape(shape)


def {name}(*args):
    """Runs the kernel; returns its output (a tuple when there are several). The kernel's ABI
    takes inputs 16-byte aligned (numpy's arrays are; others are copied) and outputs 64-byte
    aligned (allocated so here)."""
    if len(args) != len(_INPUTS):
        raise TypeError(f"{name}() takes {{len(_INPUTS)}} arrays ({params}), got {{len(args)}}")
    buffers = []
    for (arg_name, shape, dtype, abi), value in zip(_INPUTS, args):
        a = np.asarray(value)
        if a.shape != shape:
            raise ValueError(f"{name}: `{{arg_name}}` must have shape {{shape}}, got {{a.shape}}")
        if a.dtype != np.dtype(dtype):
            raise TypeError(f"{name}: `{{arg_name}}` must be {{np.dtype(dtype).name}}, got {{a.dtype.name}}")
        a = np.ascontiguousarray(a, dtype=abi)
        if a.ctypes.data % 16:
            aligned = _aligned(shape, abi, 16)
            aligned[...] = a
            a = aligned
        buffers.append(a)
    outputs = [_aligned(shape, abi) for (_, shape, _, abi) in _OUTPUTS]
    _kernel(*[b.ctypes.data for b in buffers + outputs])
    results = tuple(o.astype(dtype, copy=False) for o, (_, _, dtype, _) in zip(outputs, _OUTPUTS))
    return results[0] if len(results) == 1 else results
"#,
        args = params.join(", "),
        params = params.join(", "),
        count = graph.params.len() + graph.outputs.len(),
    )
}

/// Best time over search time, with a mark per accepted candidate coloured by proposer.
fn progress_svg(path: &Path, history: &[Candidate], naive: f64) -> anyhow::Result<()> {
    let timed: Vec<(f64, f64, &str)> = history.iter().filter_map(|c| c.timing.filter(|_| c.accepted).map(|t| (c.at_seconds, t.estimate * 1e3, c.proposer.as_str()))).collect();
    let end = history.iter().map(|c| c.at_seconds).fold(1.0, f64::max);
    let hi = timed.iter().map(|t| t.1).fold(naive * 1e3, f64::max) * 1.1;
    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("best kernel time during the search", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..end * 1.02, 0.0..hi)?;
    chart.configure_mesh().x_desc("search time (s)").y_desc("time per call (ms)").draw()?;
    let mut best = naive * 1e3;
    let mut steps = vec![(0.0, best)];
    for &(t, ms, _) in &timed {
        if ms < best {
            steps.push((t, best));
            best = ms;
            steps.push((t, best));
        }
    }
    steps.push((end, best));
    chart.draw_series(LineSeries::new(steps, BLACK.stroke_width(2)))?.label("best so far").legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK));
    let mut proposers: Vec<&str> = timed.iter().map(|t| t.2).collect();
    proposers.sort_unstable();
    proposers.dedup();
    for (i, p) in proposers.iter().enumerate() {
        let colour = Palette99::pick(i).to_rgba();
        chart
            .draw_series(timed.iter().filter(|t| t.2 == *p).map(|&(t, ms, _)| Circle::new((t, ms), 4, colour.filled())))?
            .label(*p)
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, colour.filled()));
    }
    chart.configure_series_labels().border_style(BLACK).background_style(WHITE).draw()?;
    root.present()?;
    Ok(())
}

/// The machine's roofline (all threads) with the naive and best kernels placed on it.
fn roofline_svg(path: &Path, floor: &Floor, flops: f64, bytes: f64, naive: f64, best: f64) -> anyhow::Result<()> {
    let (peak, bandwidth) = (floor.ceiling.peak_gflops, floor.ceiling.bandwidth_gbs);
    let intensity = (flops / bytes.max(1.0)).max(1e-3);
    let (x_lo, x_hi) = ((intensity / 10.0).min(peak / bandwidth / 10.0), (intensity * 10.0).max(peak / bandwidth * 10.0));
    let points = [("naive", flops / naive / 1e9), ("best", flops / best / 1e9)];
    let y_lo = points.iter().map(|p| p.1).fold(bandwidth * x_lo, f64::min) / 2.0;
    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("roofline: {} threads, {peak:.0} GFLOP/s, {bandwidth:.1} GB/s", floor.ceiling.threads), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo.max(1e-6)..peak * 2.0).log_scale())?;
    chart.configure_mesh().x_desc("arithmetic intensity (FLOP/byte)").y_desc("GFLOP/s").draw()?;
    let roof: Vec<(f64, f64)> = (0..=100).map(|i| x_lo * (x_hi / x_lo).powf(i as f64 / 100.0)).map(|x| (x, (bandwidth * x).min(peak))).collect();
    chart.draw_series(LineSeries::new(roof, BLACK.stroke_width(2)))?.label("roofline").legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK));
    for (i, (label, gflops)) in points.iter().enumerate() {
        let colour = if i == 0 { RED } else { BLUE };
        chart.draw_series([Circle::new((intensity, *gflops), 6, colour.filled())])?.label(format!("{label}: {gflops:.2} GFLOP/s")).legend(move |(x, y)| Circle::new((x + 8, y), 5, colour.filled()));
    }
    chart.configure_series_labels().border_style(BLACK).background_style(WHITE).draw()?;
    root.present()?;
    Ok(())
}

/// A duration in the unit that reads best.
pub fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.3} µs", s * 1e6)
    }
}

/// `ollie runs [DIR]`: the searches stored in DIR, as a table.
pub fn runs(dir: &Path, store: Option<Location>) -> Result<String, Error> {
    let mut store = open(dir, store)?;
    let mut text = format!("{:>4} {:<16} {:<28} {:>6} {:>8} {:>11} {:>9} {:<7} {}\n", "run", "kernel", "spec", "evals", "searched", "best", "speedup", "from", "state");
    for r in store.runs().context("reading the store")? {
        let summary: Option<Summary> = r.summary.as_deref().and_then(|s| serde_json::from_str(s).ok());
        let (best, speedup, from) = match &summary {
            Some(s) if s.naive_is_best => (seconds(s.best_seconds), "none".to_string(), "naive"),
            Some(s) => (seconds(s.best_seconds), format!("{:.2}x", s.speedup), s.proposer.as_str()),
            None => ("-".into(), "-".into(), "-"),
        };
        writeln!(
            text,
            "{:>4} {:<16} {:<28} {:>6} {:>7.1}s {:>11} {:>9} {:<7} {}",
            r.id.0,
            r.new.kernel,
            r.new.spec_path,
            r.evaluations,
            r.elapsed_seconds,
            best,
            speedup,
            from,
            if r.finished {
                "finished"
            } else if store.location().is_shared() {
                "open (`ollie worker` joins it)"
            } else {
                "interrupted (--resume continues it)"
            }
        )
        .unwrap();
    }
    Ok(text)
}

/// The store `--store` names, else the output directory's.
fn open(dir: &Path, store: Option<Location>) -> Result<Store, Error> {
    let location = match store {
        Some(location) => location,
        None => {
            let path = dir.join(STORE_FILE);
            if !path.exists() {
                return Err(user_error(format!("error: `{}` holds no ollie store ({STORE_FILE})", dir.display())));
            }
            Location::Sqlite(path)
        }
    };
    Ok(Store::connect(&location).with_context(|| format!("opening the store {location}"))?)
}

/// `ollie report DIR`: rebuilds report.md, report.json and the plots from the store; returns
/// what [`write`] does.
pub fn rebuild(dir: &Path, store: Option<Location>) -> Result<String, Error> {
    let mut store = open(dir, store)?;
    let run = store.runs().context("reading the store")?.into_iter().rfind(|r| r.finished).ok_or_else(|| {
        user_error(format!("error: `{}` holds no finished search (resume an interrupted one with `ollie optimize ... --resume`)", dir.display()))
    })?;
    let summary: Summary = serde_json::from_str(run.summary.as_deref().unwrap_or_default()).context("the stored summary does not parse")?;
    // The spec as it was searched, from the store (the file may have changed since).
    let options = ollie_spec::Options { kernel: Some(run.new.kernel.clone()), dims: crate::stored::dims(&run) };
    let spec = ollie_spec::compile(&run.new.spec_source, &options).map_err(|d| user_error(d.render(&run.new.spec_path, &run.new.spec_source)))?;
    let (machine, floor) = crate::setup::roofline_floor(&spec.graph)?;
    let history: Vec<Candidate> = store.candidates(run.id, Sources::Written).context("reading the store")?.into_iter().map(|(_, c)| c).collect();
    let calls = store.llm_calls(run.id).context("reading the store")?;
    let workers = store.workers(run.id).context("reading the store")?;
    std::fs::create_dir_all(dir).map_err(|e| user_error(format!("error: cannot create `{}`: {e}", dir.display())))?;
    write(dir, &spec.graph, &machine, &floor, &run, &workers, &history, &calls, &summary, None)
}
