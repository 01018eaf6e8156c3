//! `ollie optimize`: the search end to end — kernels proposed by `mutate` (schedules, flags) and
//! `llm` (whole sources), built in parallel, verified and timed serially, every evaluation and
//! LLM call written to the store; at the end the best kernel is re-verified on inputs the search never saw,
//! timed against the naive one and written out with its report.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use ollie_graph::{Graph, Tensor};
use ollie_loops::LoopNest;
use ollie_runner::{Compiler, Runner};
use ollie_search::{Evaluate, Evaluation, Kernel, Mutate, Propose, Search, SearchConfig};
use ollie_store::{Candidate, CandidateId, Counterexample, NewRun, Run, RunId, Store, TimingRecord};
use ollie_verify::{BenchConfig, EarlyStop, Oracle, Rejection, VerifyConfig};
use sha2::Digest;

use crate::llm::{LlmOptions, LlmProposer, Setup};
use crate::{check, counterexamples, load, report, user_error, Failure, LlmArgs, SpecArgs};

pub struct Options {
    pub spec: SpecArgs,
    pub time: f64,
    pub evals: usize,
    pub roofline_target: Option<f64>,
    pub out: PathBuf,
    pub resume: bool,
    pub seed: Option<u64>,
    pub timeout: f64,
    pub proposers: Option<Vec<String>>,
    pub llm: LlmArgs,
    pub key: Option<ollie_llm::ApiKey>,
}

/// The proposers `optimize` knows.
const PROPOSERS: &[&str] = &["mutate", "llm"];

/// The proposers asked for, checked, and the LLM's options if `llm` is among them.
fn proposers(o: &Options) -> Result<(Vec<String>, Option<LlmOptions>), Failure> {
    let names = o.proposers.clone().unwrap_or_else(|| if o.llm.url.is_some() { vec!["mutate".into(), "llm".into()] } else { vec!["mutate".into()] });
    let mut unique: Vec<String> = Vec::new();
    for n in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if !PROPOSERS.contains(&n) {
            return Err(user_error(format!("error: unknown proposer `{n}` (known: {})", PROPOSERS.join(", "))));
        }
        if !unique.iter().any(|u| u == n) {
            unique.push(n.to_string());
        }
    }
    if unique.is_empty() {
        return Err(user_error(format!("error: --proposers names none (known: {})", PROPOSERS.join(", "))));
    }
    if !unique.iter().any(|n| n == "llm") {
        return Ok((unique, None));
    }
    let a = &o.llm;
    let url = a.url.clone().ok_or_else(|| user_error("error: the llm proposer needs --llm-url, an OpenAI-compatible endpoint's base URL such as http://localhost:8000/v1"))?;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(user_error(format!("error: --llm-url `{url}` is not an http:// or https:// URL")));
    }
    let model = a.model.clone().ok_or_else(|| user_error("error: the llm proposer needs --llm-model, the model name the endpoint serves"))?;
    if a.concurrency == 0 || a.timeout.is_nan() || a.timeout <= 0.0 {
        return Err(user_error("error: --llm-concurrency and --llm-timeout must be positive"));
    }
    let options = LlmOptions {
        url,
        model,
        key: o.key.clone(),
        concurrency: a.concurrency,
        calls: a.calls,
        tokens: a.tokens,
        timeout: Duration::from_secs_f64(a.timeout),
        repairs: a.repairs,
        prompts: ollie_llm::Prompts::load(a.prompts.as_deref()).map_err(|e| user_error(format!("error: {e}")))?,
        price: a.price,
    };
    Ok((unique, Some(options)))
}

/// The store's file in the output directory.
pub const STORE_FILE: &str = "ollie.db";

/// A built candidate: its C source, flags and library, or why it could not be built.
type Build = Result<(String, Vec<String>, PathBuf), (String, String)>;

/// What the evaluator learned about the last candidate, for the store.
#[derive(Default)]
struct Details {
    source: String,
    flags: Vec<String>,
    reason: Option<(String, String)>,
    timing: Option<TimingRecord>,
    counterexample: Option<Vec<Tensor>>,
}

struct Evaluator<'a> {
    naive: &'a LoopNest,
    compiler: &'a Compiler,
    oracle: Oracle<'a>,
    builds: HashMap<Kernel, Build>,
    /// Kernels rejected (not merely slower), with the reason.
    rejected: HashMap<Kernel, (String, String)>,
    /// Time of each kernel timed so far, on the chain's scale.
    seconds: HashMap<Kernel, f64>,
    verify: VerifyConfig,
    bench_seed: u64,
    /// The least time a kernel can take (a faster call is rejected as `too-fast`).
    fastest: f64,
    last: Rc<RefCell<Option<Details>>>,
    /// What the final verification and timing will take, as last estimated.
    reserve: Rc<Cell<f64>>,
    /// Seconds per test of the last full verification that passed.
    per_test: Cell<Option<f64>>,
    /// The final verification's configuration, the naive kernel's time and the inputs' largest
    /// rank, for that estimate.
    final_config: VerifyConfig,
    naive_seconds: f64,
    max_rank: usize,
}

/// The kernel's C source (a schedule applied to the naive nest) and flags, or why it has none:
/// (reason, detail).
fn emit(naive: &LoopNest, kernel: &Kernel) -> Result<(String, Vec<String>), (String, String)> {
    kernel.emit(naive).map_err(|e| (e.kind().to_string(), e.to_string()))
}

/// [`emit`], then compile (the compiler's cache makes a rebuild cheap). A kernel written outside
/// ollie passes the static screen first.
fn build(compiler: &Compiler, naive: &LoopNest, kernel: &Kernel) -> Build {
    let (source, flags) = emit(naive, kernel)?;
    if let Kernel::Written { .. } = kernel {
        match ollie_verify::screen(compiler, &source, &flags) {
            Ok(Ok(())) => {}
            Ok(Err(screened)) => return Err((screened.kind().into(), screened.to_string())),
            Err(e) => return Err(("compile-error".into(), e.to_string())),
        }
    }
    match compiler.compile(&source, &flags) {
        Ok(c) => Ok((source, flags, c.library)),
        Err(Ok(outcome)) => Err(("compile-error".into(), outcome.summary())),
        Err(Err(e)) => Err(("compile-error".into(), e.to_string())),
    }
}

impl Evaluator<'_> {
    fn build(&mut self, kernel: &Kernel) -> Build {
        if let Some(b) = self.builds.get(kernel) {
            return b.clone();
        }
        let b = build(self.compiler, self.naive, kernel);
        self.builds.insert(kernel.clone(), b.clone());
        b
    }

    fn judge(&mut self, candidate: &Kernel, current: &Kernel) -> Result<Details, anyhow::Error> {
        let (source, flags, library) = match self.build(candidate) {
            Ok(b) => b,
            Err(reason) => {
                let (source, flags) = emit(self.naive, candidate).unwrap_or_default();
                return Ok(Details { source, flags, reason: Some(reason), timing: None, counterexample: None });
            }
        };
        let mut details = Details { source, flags, reason: None, timing: None, counterexample: None };
        let current_library = match self.build(current) {
            Ok((_, _, lib)) => lib,
            Err((_, detail)) => anyhow::bail!("the current kernel no longer builds: {detail}"),
        };
        // Another way to the same source and flags (a schedule whose steps change nothing, a
        // model repeating itself): timing a kernel against itself teaches nothing.
        if library == current_library {
            details.reason = Some(("unchanged".into(), "the same source and flags as the current kernel".into()));
            return Ok(details);
        }
        // The first tier: the saved counterexamples, then interleaved timing against the
        // current kernel on normal inputs, every timed call's outputs checked.
        if !self.verify.saved.is_empty() {
            let screen = VerifyConfig { families: Some(Vec::new()), ..self.verify.clone() };
            if !self.passes(&library, &screen, &mut details)? {
                return Ok(details);
            }
        }
        // Pairs until the ratio is clear (5 at least, 21 at most), within about 30 of the
        // current kernel's calls.
        let guess = self.seconds.get(current).copied().unwrap_or(1e-3).max(self.fastest);
        let early = EarlyStop { min_pairs: 5, seconds: (30.0 * guess).max(0.05) };
        let config = BenchConfig { seed: self.bench_seed, sets: 1, warmups: 1, calls: 21, floor: Some(self.fastest), early: Some(early) };
        let started = Instant::now();
        let timed = ollie_verify::bench_with(&mut self.oracle, &[&library, &current_library], &config)?;
        tracing::debug!(seconds = started.elapsed().as_secs_f64(), pairs = timed.ratios.as_ref().map_or(0, |r| r.samples.len()), "timed");
        match (&timed.kernels[0], &timed.ratios) {
            (Ok(t), Some(ratio)) => {
                let estimate = self.seconds.get(current).copied().unwrap_or(t.median) * ratio.median;
                self.seconds.insert(candidate.clone(), estimate);
                details.timing = Some(TimingRecord { estimate, seconds: t.median, p10: t.p10, p90: t.p90, ratio: ratio.median, ratio_p10: ratio.p10, ratio_p90: ratio.p90 });
            }
            (Err(r), _) => details.reason = Some(rejection_reason(r)),
            (Ok(_), None) => anyhow::bail!("the current kernel failed while timing"),
        }
        Ok(details)
    }
}

impl Evaluator<'_> {
    /// Runs the verifier; a rejection goes into `details` (its inputs saved as a counterexample).
    fn passes(&mut self, library: &Path, config: &VerifyConfig, details: &mut Details) -> Result<bool, anyhow::Error> {
        let started = Instant::now();
        let report = ollie_verify::verify_with(&mut self.oracle, library, config)?;
        let (seconds, tests) = (started.elapsed().as_secs_f64(), report.certificate.tests.len());
        tracing::debug!(seconds, calls = tests, "verified");
        if report.accepted && config.families.is_none() && tests > 0 {
            self.per_test.set(Some(seconds / tests as f64));
        }
        let Some(r) = &report.rejection else { return Ok(true) };
        details.reason = Some(rejection_reason(r));
        if let Some(inputs) = report.counterexample {
            if self.verify.saved.len() < MAX_SAVED {
                self.verify.saved.push(inputs.clone());
            }
            details.counterexample = Some(inputs);
        }
        Ok(false)
    }
}

/// Mixed into the spec's seed for the search's own input sets.
const SEARCH_SETS: u64 = 0x5ea7_c4ed_0f5e_75e7;

/// Counterexamples tried first by every verification, at most.
const MAX_SAVED: usize = 8;

impl Evaluate<Kernel> for Evaluator<'_> {
    fn prepare(&mut self, batch: &[Kernel]) {
        let mut todo: Vec<&Kernel> = Vec::new();
        for k in batch.iter().filter(|k| !self.builds.contains_key(*k)) {
            if !todo.contains(&k) {
                todo.push(k);
            }
        }
        let (compiler, naive) = (self.compiler, self.naive);
        let started = Instant::now();
        let built: Vec<(Kernel, Build)> = std::thread::scope(|scope| {
            let handles: Vec<_> = todo.into_iter().map(|s| scope.spawn(move || (s.clone(), build(compiler, naive, s)))).collect();
            handles.into_iter().map(|h| h.join().expect("compiling does not panic")).collect()
        });
        tracing::debug!(seconds = started.elapsed().as_secs_f64(), count = built.len(), "compiled");
        self.builds.extend(built);
    }

    fn evaluate(&mut self, candidate: &Kernel, current: &Kernel) -> Evaluation {
        // A kernel rejected before is rejected again (proposals repeat), without rerunning.
        if let Some((reason, detail)) = self.rejected.get(candidate) {
            let (source, flags) = emit(self.naive, candidate).unwrap_or_default();
            let detail = format!("as before: {detail}");
            *self.last.borrow_mut() = Some(Details { source, flags, reason: Some((reason.clone(), detail.clone())), timing: None, counterexample: None });
            return Evaluation::Rejected { reason: reason.clone(), detail };
        }
        let details = match self.judge(candidate, current) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!("evaluation failed: {e:#}");
                Details { reason: Some(("internal".into(), format!("{e:#}"))), ..Details::default() }
            }
        };
        if let Some(reason) = details.reason.as_ref().filter(|r| !matches!(r.0.as_str(), "slower" | "internal" | "unchanged")) {
            self.rejected.insert(candidate.clone(), reason.clone());
        }
        let evaluation = match (&details.reason, &details.timing) {
            (None, Some(t)) => Evaluation::Timed { seconds: t.estimate, ratio: (t.ratio, t.ratio_p10, t.ratio_p90) },
            (reason, _) => {
                let (reason, detail) = reason.clone().unwrap_or_else(|| ("untimed".into(), String::new()));
                Evaluation::Rejected { reason, detail }
            }
        };
        *self.last.borrow_mut() = Some(details);
        self.estimate_reserve();
        evaluation
    }

    /// The second tier: the whole protocol, for a candidate the chain is about to take.
    fn confirm(&mut self, candidate: &Kernel) -> Result<(), Evaluation> {
        let library = match self.build(candidate) {
            Ok((_, _, library)) => library,
            Err((reason, detail)) => return Err(Evaluation::Rejected { reason, detail }),
        };
        let mut last = self.last.borrow_mut().take().unwrap_or_default();
        let verify = self.verify.clone();
        let passed = self.passes(&library, &verify, &mut last);
        let outcome = match passed {
            Ok(true) => Ok(()),
            Ok(false) => {
                let reason = last.reason.clone().expect("a rejection gives its reason");
                self.rejected.insert(candidate.clone(), reason.clone());
                Err(Evaluation::Rejected { reason: reason.0, detail: reason.1 })
            }
            Err(e) => {
                tracing::warn!("verification failed: {e:#}");
                last.reason = Some(("internal".into(), format!("{e:#}")));
                Err(Evaluation::Rejected { reason: "internal".into(), detail: format!("{e:#}") })
            }
        };
        if outcome.is_err() {
            last.timing = None;
        }
        *self.last.borrow_mut() = Some(last);
        self.estimate_reserve();
        outcome
    }
}

impl Evaluator<'_> {
    /// Estimates what `finish` will take from what the oracle's input sets have cost so far:
    /// every input set of the final verification computed (or read back, if that verification
    /// ran to its end before) and called once, then the final timing's calls.
    fn estimate_reserve(&self) {
        let costs = self.oracle.costs();
        let read = costs.per_read().unwrap_or(0.0);
        let computed = costs.per_computed().unwrap_or(10.0 * read);
        let per_set = if self.oracle.knows_plan(&self.final_config.plan()) { read } else { computed };
        let best = self.seconds.values().copied().fold(self.naive_seconds, f64::min);
        // Each test of the final verification costs what one of the search's full
        // verifications did (making the inputs, their expected outputs computed or read, the
        // call and its checks: its sets are cached alike), or else what the oracle's sets cost.
        let per_test = self.per_test.get().unwrap_or(per_set + read + best);
        let sets = self.final_config.input_sets(self.max_rank) as f64;
        let timing = FINAL_TIMING.sets as f64 * computed + (FINAL_TIMING.warmups + FINAL_TIMING.calls) as f64 * (best + self.naive_seconds);
        self.reserve.set(sets * per_test + timing + 1.0);
    }
}

/// The final verification: every family, two input sets each, from the spec's seed (inputs the
/// search never saw; the same a later `ollie check` of the result tests by default).
fn final_verification(graph: &Graph, floor: &ollie_runner::Floor) -> VerifyConfig {
    VerifyConfig { seed: check::spec_seed(graph), floor: Some(floor.fastest), ..VerifyConfig::default() }
}

/// The final timing against the naive kernel, as reported: 21 interleaved pairs.
const FINAL_TIMING: BenchConfig = BenchConfig { seed: 0, sets: 4, warmups: 2, calls: 21, floor: None, early: None };

/// A rejection's kind (`inaccurate`, `too-fast`, ...) and its description.
fn rejection_reason(r: &Rejection) -> (String, String) {
    (r.kind().to_string(), check::describe(r))
}

/// A candidate's identity in the store: its flags and source, hashed.
pub(crate) fn hash(source: &str, flags: &[String]) -> String {
    let digest = sha2::Sha256::digest(format!("{}\n{source}", flags.join(" ")).as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Running totals for the progress line and the final table.
#[derive(Default)]
pub struct Tally {
    pub evaluations: usize,
    pub accepted: usize,
    pub rejected: std::collections::BTreeMap<String, usize>,
}

impl Tally {
    pub fn add(&mut self, c: &Candidate) {
        if c.proposer == "naive" {
            return;
        }
        self.evaluations += 1;
        match &c.reason {
            None => self.accepted += 1,
            Some(r) => *self.rejected.entry(r.clone()).or_default() += 1,
        }
    }

    pub fn rejected_text(&self) -> String {
        if self.rejected.is_empty() {
            return "none".into();
        }
        self.rejected.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ")
    }
}

pub fn run(o: &Options) -> Result<(), Failure> {
    // The budget counts from here: loading, the naive kernel's timing and the final phase too.
    let session = Instant::now();
    if o.time.is_nan() || o.time <= 0.0 {
        return Err(user_error("error: --time must be positive"));
    }
    if let Some(t) = o.roofline_target {
        if !(t > 0.0 && t <= 1.0) {
            return Err(user_error("error: --roofline-target is a fraction of the roofline, in (0, 1]"));
        }
    }
    let (names, llm_options) = proposers(o)?;
    let spec = load::load(&o.spec)?;
    load::ensure_fits(&spec.graph)?;
    let graph = &spec.graph;
    let naive = ollie_loops::lower(graph).context("lowering the spec")?;
    // A candidate's compilation gets 20 s: gcc sometimes never finishes on a generated nest.
    let compiler = Compiler { timeout: Duration::from_secs(20), ..Compiler::new(Compiler::default_cache_dir()) };
    let baseline = check::compile_naive(&compiler, graph)?;
    let patient = Runner::current_exe(Duration::from_secs_f64(o.timeout)).context("locating ollie's executable")?;
    let (machine, floor) = check::roofline_floor(graph)?;
    std::fs::create_dir_all(&o.out).map_err(|e| user_error(format!("error: cannot create `{}`: {e}", o.out.display())))?;
    let mut store = Store::open(&o.out.join(STORE_FILE)).context("opening the store")?;
    let (spec_path, _) = ollie_spec::split_selector(&o.spec.spec);
    let spec_path = spec_path.to_string();

    let (run, history) = if o.resume {
        // The latest run of this kernel searched on the same spec text with the same --dim
        // values (the file may be named differently, relative to another directory).
        let source = std::fs::read_to_string(&spec_path).unwrap_or_default();
        let same = |r: &Run| r.new.kernel == graph.name && r.new.spec_source == source && stored_dims(r) == o.spec.dims;
        let runs = store.runs().context("reading the store")?;
        let run = runs.into_iter().rfind(|r| same(r)).ok_or_else(|| {
            user_error(format!(
                "error: `{}` holds no search of `{}` from this spec text and these --dim values to resume (start a new one without --resume)",
                o.out.display(),
                graph.name
            ))
        })?;
        let history = store.candidates(run.id).context("reading the store")?;
        eprintln!("resuming run {} of `{}`: {} evaluations, {:.1} s searched", run.id.0, graph.name, run.evaluations, run.elapsed_seconds);
        (run, history)
    } else {
        let seed = o.seed.unwrap_or_else(check::fresh_seed);
        let naive_seconds = time_alone(&mut check::oracle(graph, &patient, &baseline), &baseline, seed, floor.fastest)?;
        let llm = llm_options.as_ref().map(|l| serde_json::json!({ "url": l.url, "model": l.model, "calls": l.calls, "tokens": l.tokens, "concurrency": l.concurrency }));
        let options = serde_json::json!({ "time_seconds": o.time, "evals": o.evals, "roofline_target": o.roofline_target, "timeout_seconds": o.timeout, "dims": o.spec.dims, "proposers": names, "llm": llm });
        let new = NewRun {
            spec_path: spec_path.clone(),
            spec_source: std::fs::read_to_string(&spec_path).unwrap_or_default(),
            kernel: graph.name.clone(),
            options: options.to_string(),
            seed,
            naive_seconds,
            floor_seconds: floor.seconds,
        };
        let id = store.create_run(&new, unix_now()).context("writing the store")?;
        let initial = Kernel::Scheduled(ollie_search::initial_schedule());
        let (source, flags) = initial.emit(&naive).context("emitting the naive kernel")?;
        let start = Candidate {
            evaluation: 0,
            source_hash: hash(&source, &flags),
            source,
            flags: flags.join(" "),
            schedule: initial.schedule_text(),
            parent: None,
            proposer: "naive".into(),
            at_seconds: 0.0,
            accepted: true,
            reason: None,
            detail: None,
            timing: Some(TimingRecord { estimate: naive_seconds, seconds: naive_seconds, p10: naive_seconds, p90: naive_seconds, ratio: 1.0, ratio_p10: 1.0, ratio_p90: 1.0 }),
            moved: true,
            new_best: true,
        };
        let cid = store.record(id, &start, None, None, None, 0.0).context("writing the store")?;
        let run = store.run(id).context("reading the store")?;
        (run, vec![(cid, start)])
    };

    // A candidate's call may take 20 times the naive kernel's (at least a quarter second, at most
    // --timeout): anything slower is of no use, and a hung one costs no more.
    let limit = (20.0 * run.new.naive_seconds).max(0.25).min(o.timeout);
    let runner = Runner::current_exe(Duration::from_secs_f64(limit)).context("locating ollie's executable")?;
    let oracle = check::oracle(graph, &runner, &baseline);
    // The chain's state, from the store.
    let by_id: HashMap<CandidateId, &Candidate> = history.iter().map(|(id, c)| (*id, c)).collect();
    let kernel_of = |id: Option<CandidateId>| -> Result<(Kernel, f64, CandidateId), Failure> {
        let id = id.context("the store's run has no candidate")?;
        let c = by_id.get(&id).context("the store's run names a missing candidate")?;
        Ok((stored_kernel(c)?, c.timing.map_or(f64::INFINITY, |t| t.estimate), id))
    };
    let (best, best_seconds, best_id) = kernel_of(run.best)?;
    let (current, current_seconds, current_id) = kernel_of(run.current)?;
    let best_proposer = by_id.get(&best_id).map_or("naive", |c| c.proposer.as_str()).to_string();
    drop(by_id);
    let mut mutate = Mutate::new(naive.clone());
    let mut llm = match llm_options {
        Some(options) => {
            let calls = store.llm_calls(run.id).context("reading the store")?;
            let setup = Setup {
                graph,
                spec_source: &run.new.spec_source,
                machine: &machine,
                floor: &floor,
                naive_seconds: run.new.naive_seconds,
                best: (&best, best_seconds, &best_proposer),
                history: &history,
                calls: &calls,
            };
            Some(LlmProposer::new(options, &naive, setup))
        }
        None => None,
    };
    let llm_log = llm.as_ref().map(|l| l.log.clone());
    let mut list: Vec<&mut dyn Propose<Kernel>> = Vec::new();
    if names.iter().any(|n| n == "mutate") {
        list.push(&mut mutate);
    }
    if let Some(l) = llm.as_mut() {
        list.push(l);
    }
    // The bandit's record per proposer (tries, improvements), from the store.
    let table = report::proposer_table(history.iter().map(|(_, c)| c));
    let record: Vec<(usize, usize)> = list.iter().map(|p| table.iter().find(|r| r.0 == p.name()).map_or((0, 0), |r| (r.1, r.2))).collect();

    // The search's input sets are fixed per spec too (others than the final verification's):
    // a later search of the same spec reads their expected outputs from disk. The run's seed
    // drives the proposals.
    let sets_seed = check::spec_seed(graph) ^ SEARCH_SETS;
    let mut verify = VerifyConfig { seed: sets_seed, sets_per_family: 1, reread_delay: Duration::from_millis(5), floor: Some(floor.fastest), ..VerifyConfig::default() };
    // The latest few counterexamples `ollie check` saved, then this run's own.
    let saved = counterexamples::load(graph);
    verify.saved = saved[saved.len().saturating_sub(MAX_SAVED / 2)..].to_vec();
    for c in store.counterexamples(run.id).context("reading the store")?.into_iter().take(MAX_SAVED / 2) {
        verify.saved.push(c.shapes.into_iter().zip(c.data).map(|(s, d)| Tensor::from_shape_vec(s, d).expect("stored with its shape")).collect());
    }
    let last = Rc::new(RefCell::new(None));
    let reserve = Rc::new(Cell::new(0.0));
    let mut evaluator = Evaluator {
        naive: &naive,
        compiler: &compiler,
        oracle,
        builds: HashMap::new(),
        rejected: HashMap::new(),
        seconds: HashMap::from([(current.clone(), current_seconds), (best.clone(), best_seconds)]),
        verify,
        bench_seed: sets_seed ^ 0x5eed,
        fastest: floor.fastest,
        last: last.clone(),
        reserve: reserve.clone(),
        per_test: Cell::new(None),
        final_config: final_verification(graph, &floor),
        naive_seconds: run.new.naive_seconds,
        max_rank: graph.params.iter().map(|p| p.ty.rank()).max().unwrap_or(0),
    };
    let config = SearchConfig { seed: run.new.seed, max_evaluations: o.evals, batch: 2, ..SearchConfig::default() };
    let mut search = Search::resume(config, (best, best_seconds), (current, current_seconds), run.evaluations, record);

    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        let _ = ctrlc::set_handler(move || {
            if flag.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
            eprintln!("\nstopping after this evaluation (Ctrl-C again to quit at once)");
        });
    }
    let mut tally = Tally::default();
    history.iter().for_each(|(_, c)| tally.add(c));
    let progress = Progress::new(o.time, run.elapsed_seconds, tally, (search.best_seconds, run.new.naive_seconds, floor.seconds), llm_log.clone());
    let elapsed = |run: &Run| run.elapsed_seconds + session.elapsed().as_secs_f64();
    let (mut best_id, mut current_id) = (best_id, current_id);
    // A failed write stops the search: what is not stored could not be resumed.
    let store_error = RefCell::new(None);
    let store = RefCell::new(store);
    // The LLM calls finished since the last look, into the store.
    let store_calls = || {
        let Some(log) = &llm_log else { return };
        for mut call in std::mem::take(&mut log.borrow_mut().calls) {
            call.at_seconds = elapsed(&run);
            if let Err(e) = store.borrow_mut().record_llm_call(run.id, &call) {
                *store_error.borrow_mut() = Some(e);
            }
        }
    };
    let target = o.roofline_target;
    let stop_reason = search.run(
        &mut list,
        &mut evaluator,
        |s| {
            store_calls();
            progress.tick(elapsed(&run));
            // The budget covers the whole command: the search stops early enough for the final
            // verification and timing to fit.
            store_error.borrow().is_some() || elapsed(&run) + reserve.get() >= o.time || interrupted.load(Ordering::SeqCst) || target.is_some_and(|t| floor.seconds / s.best_seconds >= t)
        },
        |event| {
            store_calls();
            let Some(d) = last.borrow_mut().take() else { return };
            // What the search made of it: taken after the full verification, declined as
            // slower (first tier only), or rejected in either tier.
            let (reason, timing) = match &event.outcome {
                Evaluation::Timed { .. } => (None, d.timing),
                Evaluation::Slower { ratio: (median, p10, p90), .. } => (Some(("slower".to_string(), format!("{median:.2}x the current kernel's time (p10..p90 {p10:.2}..{p90:.2})"))), d.timing),
                Evaluation::Rejected { reason, detail } => (Some((reason.clone(), detail.clone())), None),
            };
            let candidate = Candidate {
                evaluation: event.evaluation,
                source_hash: hash(&d.source, &d.flags),
                source: d.source,
                flags: d.flags.join(" "),
                schedule: event.candidate.schedule_text(),
                parent: Some(current_id),
                proposer: event.proposer.clone(),
                at_seconds: elapsed(&run),
                accepted: reason.is_none(),
                detail: reason.as_ref().map(|r| r.1.clone()),
                reason: reason.map(|r| r.0),
                timing,
                moved: event.moved,
                new_best: event.new_best,
            };
            let cex = d.counterexample.map(|inputs| Counterexample { shapes: inputs.iter().map(|t| t.shape().to_vec()).collect(), data: inputs.iter().map(|t| t.iter().copied().collect()).collect() });
            // The chain after this step (`None`: this candidate). A restart, which only follows a
            // step without a new best, goes back to the best.
            let next_best = if event.new_best { None } else { Some(best_id) };
            let next_current = if event.restarted { Some(best_id) } else if event.moved { None } else { Some(current_id) };
            let recorded = store.borrow_mut().record(run.id, &candidate, cex.as_ref(), next_best, next_current, elapsed(&run));
            match recorded {
                Ok(id) => {
                    best_id = next_best.unwrap_or(id);
                    current_id = next_current.unwrap_or(id);
                }
                Err(e) => *store_error.borrow_mut() = Some(e),
            }
            let best = match (event.new_best, &event.outcome) {
                (true, Evaluation::Timed { seconds, .. }) => Some(*seconds),
                _ => None,
            };
            progress.add(&candidate, best);
            progress.show(elapsed(&run));
        },
    );
    drop(list);
    if let Some(l) = llm.as_mut() {
        l.abandon();
    }
    drop(llm);
    store_calls();
    progress.finish();
    if let Some(why) = llm_log.as_ref().and_then(|l| l.borrow().gave_up.clone()) {
        eprintln!("the llm proposer stopped early: {why}");
    }
    let mut store = store.into_inner();
    if let Some(e) = store_error.into_inner() {
        return Err(anyhow::Error::from(e).context("writing the store").into());
    }
    tracing::info!(?stop_reason, evaluations = search.evaluations(), "search stopped");
    let elapsed_total = elapsed(&run);
    let oracle = evaluator.oracle;
    finish(FinishContext { graph, naive: &naive, compiler: &compiler, baseline: &baseline, machine: &machine, floor: &floor, out: &o.out, store: &mut store, run: run.id, elapsed: elapsed_total }, oracle)
}

/// The kernel a stored candidate is.
fn stored_kernel(c: &Candidate) -> Result<Kernel, Failure> {
    Ok(Kernel::from_stored(&c.schedule, &c.source, &c.flags).context("a stored schedule does not parse")?)
}

/// An option a run was started with, as stored in its options (the default where it is missing
/// or of another shape).
pub fn stored_option<T: serde::de::DeserializeOwned + Default>(run: &Run, key: &str) -> T {
    serde_json::from_str::<serde_json::Value>(&run.new.options).ok().and_then(|v| serde_json::from_value(v[key].clone()).ok()).unwrap_or_default()
}

/// The `--dim` values a run was started with.
pub fn stored_dims(run: &Run) -> Vec<(String, i64)> {
    stored_option(run, "dims")
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// The naive kernel's median time, timed alone.
fn time_alone(oracle: &mut Oracle, library: &Path, seed: u64, floor: f64) -> Result<f64, Failure> {
    let config = BenchConfig { seed, sets: 2, warmups: 1, calls: 7, floor: Some(floor), early: None };
    let report = ollie_verify::bench_with(oracle, &[library], &config).context("timing the naive kernel")?;
    match &report.kernels[0] {
        Ok(t) => Ok(t.median),
        Err(r) => Err(anyhow::anyhow!("the naive kernel failed while timing: {}", check::describe(r)).into()),
    }
}

pub struct FinishContext<'a> {
    pub graph: &'a Graph,
    pub naive: &'a LoopNest,
    pub compiler: &'a Compiler,
    pub baseline: &'a Path,
    pub machine: &'a ollie_runner::Machine,
    pub floor: &'a ollie_runner::Floor,
    pub out: &'a Path,
    pub store: &'a mut Store,
    pub run: RunId,
    pub elapsed: f64,
}

/// Re-verifies the fastest candidates on inputs the search never saw until one passes, times it against the
/// naive kernel, and writes every output.
fn finish(cx: FinishContext, mut oracle: Oracle) -> Result<(), Failure> {
    let history = cx.store.candidates(cx.run).context("reading the store")?;
    let mut timed: Vec<&(CandidateId, Candidate)> = history.iter().filter(|(_, c)| c.accepted && c.timing.is_some()).collect();
    let estimate = |c: &Candidate| c.timing.map_or(f64::INFINITY, |t| t.estimate);
    timed.sort_by(|a, b| estimate(&a.1).total_cmp(&estimate(&b.1)));
    let config = final_verification(cx.graph, cx.floor);
    let seed = config.seed;
    // The fastest few, each re-verified on those inputs and timed against the naive kernel:
    // the first that passes and is not slower than naive is the result (the naive kernel always
    // qualifies, last).
    let naive_candidate = timed.iter().find(|(_, c)| c.proposer == "naive").copied();
    let mut chosen = None;
    for (id, c) in timed.iter().filter(|(_, c)| c.proposer != "naive").take(3).chain(naive_candidate.iter()) {
        let (source, flags, library) = match build(cx.compiler, cx.naive, &stored_kernel(c)?) {
            Ok(built) => built,
            Err((_, detail)) => {
                eprintln!("candidate {} no longer builds: {detail}", id.0);
                continue;
            }
        };
        let report = ollie_verify::verify_with(&mut oracle, &library, &config).context("re-verifying the best kernel")?;
        if !report.accepted {
            eprintln!("candidate {} failed re-verification: {}", id.0, report.rejection.as_ref().map(check::describe).unwrap_or_default());
            continue;
        }
        let bench = BenchConfig { seed, floor: Some(cx.floor.fastest), ..FINAL_TIMING };
        let timing = ollie_verify::bench_with(&mut oracle, &[&library, cx.baseline], &bench).context("timing the best kernel against the naive one")?;
        let (best, naive, ratio) = match (&timing.kernels[0], &timing.kernels[1], &timing.ratios) {
            (Ok(b), Ok(n), Some(r)) => (b.clone(), n.median, r.clone()),
            (Err(r), _, _) => {
                eprintln!("candidate {} failed while timing: {}", id.0, check::describe(r));
                continue;
            }
            _ => return Err(anyhow::anyhow!("the naive kernel failed while timing").into()),
        };
        if ratio.median > 1.0 && c.proposer != "naive" {
            eprintln!("candidate {} is not faster than the naive kernel in the final timing ({:.2}x its time)", id.0, ratio.median);
            continue;
        }
        chosen = Some((*id, c, source, flags, library, report, best, naive, ratio));
        break;
    }
    let Some((id, c, source, flags, library, report, best, naive, ratio)) = chosen else {
        return Err(anyhow::anyhow!("no candidate, not even the naive kernel, passed re-verification").into());
    };
    let summary = report::Summary {
        candidate: id.0,
        schedule: c.schedule.clone(),
        proposer: c.proposer.clone(),
        flags: flags.join(" "),
        naive_seconds: naive,
        best_seconds: best.median,
        best_p10: best.p10,
        best_p90: best.p90,
        speedup: 1.0 / ratio.median,
        speedup_p10: 1.0 / ratio.p90,
        speedup_p90: 1.0 / ratio.p10,
        pairs: ratio.samples.len(),
        verify_seed: seed,
        search_seconds: cx.elapsed,
        naive_is_best: c.proposer == "naive",
    };
    cx.store.finish(cx.run, cx.elapsed, &serde_json::to_string(&summary).expect("serializable")).context("writing the store")?;
    let prototype = ollie_loops::prototype(cx.naive);
    let files = report::Files { source: &source, prototype: &prototype, library: &library, certificate: &report };
    let run = cx.store.run(cx.run).context("reading the store")?;
    let history: Vec<Candidate> = history.into_iter().map(|(_, c)| c).collect();
    let calls = cx.store.llm_calls(cx.run).context("reading the store")?;
    report::write(cx.out, cx.graph, cx.machine, cx.floor, &run, &history, &calls, &summary, Some(files))
}

/// The progress bar: search time against the budget, and the tallies.
struct Progress {
    bar: indicatif::ProgressBar,
    tally: RefCell<Tally>,
    /// The best time (on the chain's scale), the naive kernel's and the roofline floor.
    best: Cell<f64>,
    naive: f64,
    floor: f64,
    llm: Option<Rc<RefCell<crate::llm::LlmLog>>>,
    shown: Cell<Instant>,
}

impl Progress {
    fn new(budget: f64, done: f64, tally: Tally, (best, naive, floor): (f64, f64, f64), llm: Option<Rc<RefCell<crate::llm::LlmLog>>>) -> Progress {
        let bar = indicatif::ProgressBar::new((budget * 10.0).round() as u64).with_elapsed(Duration::from_secs_f64(done));
        bar.set_style(indicatif::ProgressStyle::with_template("{elapsed:>4} of {prefix} [{bar:24}] {msg}").expect("valid template").progress_chars("=> "));
        bar.set_position((done * 10.0) as u64);
        bar.set_prefix(format!("{budget:.0}s"));
        bar.enable_steady_tick(Duration::from_millis(500));
        let progress = Progress { bar, tally: RefCell::new(tally), best: best.into(), naive, floor, llm, shown: Instant::now().into() };
        progress.show(done);
        progress
    }

    /// Counts a stored candidate, and its time if it is the new best.
    fn add(&self, c: &Candidate, best: Option<f64>) {
        self.tally.borrow_mut().add(c);
        if let Some(b) = best {
            self.best.set(b);
        }
    }

    /// [`Progress::show`] if it has not been for a second: while no evaluation comes (a slow
    /// model), the LLM's counts still move.
    fn tick(&self, elapsed: f64) {
        if self.shown.get().elapsed() > Duration::from_secs(1) {
            self.show(elapsed);
        }
    }

    /// The search time so far, the tallies and the best time.
    fn show(&self, elapsed: f64) {
        self.shown.set(Instant::now());
        let (tally, best, naive, floor) = (self.tally.borrow(), self.best.get(), self.naive, self.floor);
        self.bar.set_position((elapsed * 10.0) as u64);
        let llm = self.llm.as_ref().map_or_else(String::new, |l| {
            let l = l.borrow();
            let cost = if l.cost > 0.0 { format!(", ${:.2}", l.cost) } else { String::new() };
            format!(" | llm {} calls, {} tokens{cost}", l.made, l.tokens)
        });
        self.bar.set_message(format!(
            "{} evals, {} accepted, rejected: {} | best {} = {:.2}x naive, {:.1}% of roofline{llm}",
            tally.evaluations,
            tally.accepted,
            tally.rejected_text(),
            report::seconds(best),
            naive / best,
            100.0 * floor / best
        ));
    }

    fn finish(&self) {
        self.bar.finish();
    }
}
