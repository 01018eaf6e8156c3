//! `optimize`: the search end to end — kernels proposed by `mutate` (schedules, flags) and `llm`
//! (whole sources), built two at a time, judged by the evaluator's two tiers, every step and LLM
//! call written to the store as it happens; at the end the final phase (`finish.rs`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use ollie_graph::{Graph, Tensor};
use ollie_runner::{Compiler, Runner};
use ollie_search::{Evaluation, Event, Kernel, Mutate, Propose, Rewrite, Search, SearchConfig, Sketch};
use ollie_store::{Candidate, CandidateId, Counterexample, Location, NewRun, Run, RunId, Sources, Step, Store, TimingRecord, WorkerId};
use ollie_verify::{Baseline, VerifyConfig};

use crate::cache;
use crate::evaluator::{Evaluator, Start};
use crate::finish::{final_verification, finish, FinishContext};
use crate::final_timing::FinalTiming;
use crate::naive::{self, NaiveCost};
use crate::llm::{LlmOptions, LlmProposer, LlmWatch, Setup};
use crate::progress::Progress;
use crate::workers::{self, Heartbeat, Held, Leased, Shared};
use crate::stored::{self, Tally, STORE_FILE};
use crate::{counterexamples, report, setup, user_error, Error, Note, Reason};

/// The proposers `optimize` knows.
pub const PROPOSERS: &[&str] = &["mutate", "sketch", "rewrite", "llm"];

/// What a search is asked to do.
pub struct Options {
    /// The spec file as given (without a `::kernel` selector), its text and the `--dim` values
    /// it was compiled with: what the store records and `--resume` matches.
    pub spec_path: String,
    pub spec_source: String,
    pub dims: Vec<(String, i64)>,
    /// The budget in seconds, for the whole call (the final phase included).
    pub time: f64,
    pub evals: usize,
    /// Stop once the best reaches this fraction of the roofline.
    pub roofline_target: Option<f64>,
    pub out: PathBuf,
    /// Where the store is: `None` for `ollie.db` in the output directory.
    pub store: Option<Location>,
    pub resume: bool,
    /// Join this run of the store as another worker (its own chain and seed) instead of starting
    /// one: `ollie worker`.
    pub join: Option<RunId>,
    /// Seconds a lease on a candidate in judgement lasts unless renewed.
    pub lease: f64,
    /// The seed of the proposals (a fresh one if `None`).
    pub seed: Option<u64>,
    /// Seconds a single call may take, at most (`None`: derived from the naive kernel's time,
    /// see [`NaiveCost::candidate_limit`]).
    pub timeout: Option<f64>,
    /// The proposers to use, names from [`PROPOSERS`], and the LLM's options if `llm` is among them.
    pub proposers: Vec<String>,
    /// Whether the cost model chooses which proposals are measured (`--no-cost-model`: it
    /// only predicts, and its predictions are judged in the report).
    pub cost_model: bool,
    pub llm: Option<LlmOptions>,
    /// Set to stop after the evaluation in flight (Ctrl-C).
    pub interrupted: Arc<AtomicBool>,
}

/// Proposals drawn per round, of which the cost model picks the two to measure.
const POOL: usize = 6;

/// Proposals drawn per round once the cost model is trusted: built many (their features, not
/// their code: nothing is compiled before it is chosen), measured few.
const RANKED_POOL: usize = 24;

/// The share of ranked rounds measured whole (up to [`POOL`] proposals), so that the report can
/// say what the model's choices cost: its regret.
const ABLATION: f64 = 0.125;

/// Mixed into the spec's seed for the search's own input sets.
const SEARCH_SETS: u64 = 0x5ea7_c4ed_0f5e_75e7;

/// Counterexamples tried first by every verification, at most: half from `ollie check`, half
/// this run's own.
const SAVED: usize = 4;

/// Runs a search of `graph`'s kernel as `o` asks (a new one, or the latest of this spec in the
/// output directory with `resume`), then the final phase; returns the result's table, the files
/// already written.
pub fn optimize(graph: &Graph, o: &Options) -> Result<String, Error> {
    // The budget counts from here: the naive kernel's timing and the final phase too.
    let session = Instant::now();
    if o.time.is_nan() || o.time <= 0.0 {
        return Err(user_error("error: --time must be positive"));
    }
    if let Some(t) = o.roofline_target {
        if !(t > 0.0 && t <= 1.0) {
            return Err(user_error("error: --roofline-target is a fraction of the roofline, in (0, 1]"));
        }
    }
    setup::ensure_fits(graph)?;
    let naive = ollie_loops::lower(graph).context("lowering the spec")?;
    // A candidate's compilation gets 20 s: gcc sometimes never finishes on a generated nest.
    let compiler = Compiler { timeout: Duration::from_secs(20), ..Compiler::new(Compiler::default_cache_dir()) };
    let baseline = setup::compile_naive(&compiler, graph)?;
    // Rewriting saturates once (a few seconds at most): its variants floor the roofline and feed
    // the `rewrite` proposer.
    let rewritten = ollie_rewrite::variants(graph);
    tracing::info!(variants = rewritten.variants.len(), stop = %rewritten.stop, fired = ?rewritten.fired, "rewriting saturated");
    let (machine, floor) = setup::roofline_floor_of(graph, &rewritten)?;
    let target = crate::sketch_target(machine.float_lanes());
    // A new run's naive kernel is measured before anything is written (on a slice of its rows
    // when it is slow): what it costs decides every time limit and whether its outputs are the
    // accuracy rule's baseline.
    let measured = if o.resume || o.join.is_some() { None } else { Some(naive::measure(graph, &baseline, &compiler, &machine, o.timeout)?) };
    std::fs::create_dir_all(&o.out).map_err(|e| user_error(format!("error: cannot create `{}`: {e}", o.out.display())))?;
    let location = o.store.clone().unwrap_or_else(|| Location::Sqlite(o.out.join(STORE_FILE)));
    let mut store = Store::connect(&location).with_context(|| format!("opening the store {location}"))?;
    let host = workers::host_name();
    let seed = o.seed.unwrap_or_else(setup::fresh_seed);

    // The search's input sets are fixed per spec too (others than the final verification's):
    // a later search of the same spec reads their expected outputs from disk. The first tier
    // times on the first of them (the second tier's normal set). The run's seed drives the
    // proposals.
    let sets_seed = setup::spec_seed(graph) ^ SEARCH_SETS;
    let (run, worker, history) = if let Some(id) = o.join {
        let run = store.run(id).context("reading the store")?;
        let worker = store.join(run.id, &host, seed).context("writing the store")?;
        let history = store.candidates(run.id, Sources::Written).context("reading the store")?;
        (run, worker, history)
    } else if o.resume {
        // The latest run of this kernel searched on the same spec text with the same --dim
        // values (the file may be named differently, relative to another directory).
        let same = |r: &Run| r.new.kernel == graph.name && r.new.spec_source == o.spec_source && stored::dims(r) == o.dims;
        let runs = store.runs().context("reading the store")?;
        let run = runs.into_iter().rfind(|r| same(r)).ok_or_else(|| {
            user_error(format!(
                "error: `{}` holds no search of `{}` from this spec text and these --dim values to resume (start a new one without --resume)",
                o.out.display(),
                graph.name
            ))
        })?;
        let history = store.candidates(run.id, Sources::Written).context("reading the store")?;
        // The chain goes on as the worker it was (the last to join, in a store of several).
        let worker = store.workers(run.id).context("reading the store")?.last().map(|w| w.id).context("the store's run has no worker")?;
        (run, worker, history)
    } else {
        let cost = measured.expect("measured for a new run");
        let against = cost.baseline(&baseline, Some(o.time));
        let llm = o.llm.as_ref().map(|l| serde_json::json!({ "url": l.url, "model": l.model, "calls": l.calls, "tokens": l.tokens, "concurrency": l.concurrency }));
        // What the sketch rules did and what rewriting found, for a report that must say why
        // the search found what it found.
        let rules = ollie_search::explain(&naive, &target);
        let rewriting = crate::tried::Rewriting::of(&rewritten);
        let options = serde_json::json!({ "time_seconds": o.time, "evals": o.evals, "roofline_target": o.roofline_target, "timeout_seconds": o.timeout, "dims": o.dims, "proposers": o.proposers, "llm": llm, "naive": cost, "baseline": against.name(), "rules": rules, "rewriting": rewriting, "class": workers::machine_class(&machine), "no_cost_model": !o.cost_model });
        let new = NewRun {
            spec_path: o.spec_path.clone(),
            spec_source: o.spec_source.clone(),
            kernel: graph.name.clone(),
            options: options.to_string(),
            seed,
            naive_seconds: cost.seconds,
            floor_seconds: floor.seconds,
        };
        let id = store.create_run(&new, stored::unix_now()).context("writing the store")?;
        let worker = store.join(id, &host, seed).context("writing the store")?;
        let initial = Kernel::Scheduled(ollie_search::initial_schedule());
        let (source, flags) = initial.emit(&naive).context("emitting the naive kernel")?;
        let start = Candidate {
            evaluation: 0,
            source_hash: stored::hash(&source, &flags),
            source,
            flags: flags.join(" "),
            schedule: initial.schedule_text(),
            graph: String::new(),
            parent: None,
            proposer: "naive".into(),
            at_seconds: 0.0,
            accepted: true,
            reason: None,
            detail: None,
            timing: Some(TimingRecord { estimate: cost.seconds, seconds: cost.seconds, p10: cost.seconds, p90: cost.seconds, ratio: 1.0, ratio_p10: 1.0, ratio_p90: 1.0, predicted: None }),
            moved: true,
            new_best: true,
        };
        let step = Step { candidate: &start, counterexample: None, lease: None, best: None, current: None, elapsed_seconds: 0.0 };
        let cid = store.record(id, worker, &step).context("writing the store")?;
        let run = store.run(id).context("reading the store")?;
        (run, worker, vec![(cid, start)])
    };
    // Where the chain stands: a worker that joined starts at the run's best so far (its own
    // seed takes it elsewhere), and its search time is the run's wall time since it started.
    let (chain_best, chain_current, evaluations, searched) = if o.join.is_some() {
        let best = history.iter().filter(|(_, c)| c.accepted && c.timing.is_some()).min_by(|a, b| a.1.estimate().total_cmp(&b.1.estimate())).map(|(id, _)| *id);
        (best, best, 0, (stored::unix_now() - run.started_at).max(0) as f64)
    } else {
        let me = store.worker(worker).context("reading the store")?;
        (me.best, me.current, me.evaluations, me.elapsed_seconds)
    };
    // The naive kernel's cost and the baseline as the run's first session found them (a run
    // stored before either was recorded: measured whole, the naive kernel's outputs).
    let cost = stored::option::<Option<NaiveCost>>(&run, "naive").unwrap_or(NaiveCost { seconds: run.new.naive_seconds, measured: naive::Measured::Whole { calls: 7 }, worst: run.new.naive_seconds });
    let against = if stored::option::<String>(&run, "baseline") == Baseline::Rounded.name() { Baseline::Rounded } else { Baseline::Naive(baseline.clone()) };
    let mut notes = Vec::new();
    if cost.estimated() || against == Baseline::Rounded {
        notes.push(format!("the naive kernel takes {} a call ({})", report::seconds(cost.seconds), cost.how()));
    }
    if against == Baseline::Rounded {
        notes.push("computing its outputs on every input set would cost more than half the budget: candidates' errors are measured against the reference rounded to float32 instead (stricter; docs/verification.md)".into());
    }
    let runner = Runner::current_exe(cost.candidate_limit(o.timeout, Some(o.time))).context("locating ollie's executable")?;
    let naive_runs = matches!(against, Baseline::Naive(_));
    let oracle = setup::oracle(graph, &runner, against);
    // The chain's state, from the store.
    let by_id: HashMap<CandidateId, &Candidate> = history.iter().map(|(id, c)| (*id, c)).collect();
    let kernel_of = |id: Option<CandidateId>| -> Result<(Kernel, f64, CandidateId), Error> {
        let id = id.context("the store's run has no candidate")?;
        let c = by_id.get(&id).context("the store's run names a missing candidate")?;
        Ok((stored::kernel(c)?, c.estimate(), id))
    };
    let (best, best_seconds, best_id) = kernel_of(chain_best)?;
    let (current, current_seconds, current_id) = kernel_of(chain_current)?;
    let best_proposer = by_id.get(&best_id).map_or("naive", |c| c.proposer.as_str()).to_string();
    drop(by_id);
    let mut mutate = Mutate::new(naive.clone()).with_tiles(target);
    let mut sketch = Sketch::new(&naive, &target);
    let mut rewrite = o.proposers.iter().any(|n| n == "rewrite").then(|| Rewrite::new(naive.clone(), Rewrite::lowered(&rewritten), &target));
    let (mut llm, llm_watch) = match o.llm.clone() {
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
            let (proposer, watch) = LlmProposer::new(options, &naive, setup);
            (Some(proposer), Some(watch))
        }
        None => (None, None),
    };
    // What other workers (or this run's earlier sessions) left first: candidates whose lease
    // expired unjudged (owed a verdict: when it leads, its proposal heads the round), and faster
    // kernels found by other chains.
    let held = Rc::new(RefCell::new(Held::new(best_seconds)));
    let mut shared = Shared { held: held.clone(), alone: !location.is_shared() };
    let mut list: Vec<&mut dyn Propose<Kernel, Note>> = vec![&mut shared];
    if o.proposers.iter().any(|n| n == "mutate") {
        list.push(&mut mutate);
    }
    // The rewrite proposer before the sketches: where both lead, a far cheaper algorithm is
    // measured before schedules of the costly one (a 1 s triangular product's scan came second
    // in the first round, and a loaded machine's 40 s budget had room for one evaluation).
    if let Some(r) = rewrite.as_mut() {
        list.push(r);
    }
    if o.proposers.iter().any(|n| n == "sketch") {
        list.push(&mut sketch);
    }
    if let Some(l) = llm.as_mut() {
        list.push(l);
    }
    // The bandit's record per proposer (tries, improvements), from the store.
    let table = crate::tried::verdicts(history.iter().map(|(_, c)| c), run.new.naive_seconds);
    let record: Vec<(usize, usize)> = list.iter().map(|p| table.iter().find(|r| r.proposer == p.name()).map_or((0, 0), |r| (r.evaluations, r.improvements))).collect();

    let mut verify = VerifyConfig { seed: sets_seed, sets_per_family: 1, reread_delay: Duration::from_millis(5), floor: Some(floor.fastest), ..VerifyConfig::default() };
    // The latest few counterexamples `ollie check` saved, then this run's own.
    let saved = counterexamples::load(graph);
    verify.saved = saved[saved.len().saturating_sub(SAVED)..].to_vec();
    for c in store.counterexamples(run.id).context("reading the store")?.into_iter().take(SAVED) {
        verify.saved.push(c.shapes.into_iter().zip(c.data).map(|(s, d)| Tensor::from_shape_vec(s, d).expect("stored with its shape")).collect());
    }
    // Every kernel timed so far (a resumed run's), for the cost model.
    let mut timed: Vec<(Kernel, f64)> = history.iter().filter_map(|(_, c)| Some((stored::kernel(c).ok()?, c.timing?.estimate))).collect();
    timed.extend([(current.clone(), current_seconds), (best.clone(), best_seconds)]);
    // This session's share of the budget (a resumed run has spent some already; a worker that
    // joined, the run's time since it started).
    let deadline = session + Duration::from_secs_f64((o.time - searched).max(0.0));
    let timing = FinalTiming::new(cost.seconds, o.time);
    // The cost model starts from earlier searches' timings on this machine class.
    let class = workers::machine_class(&machine);
    let (prior, prior_searches) = crate::training::prior(&class);
    tracing::info!(timings = prior.len(), searches = prior_searches, "the cost model starts from earlier searches");
    let start = Start {
        seconds: timed,
        verify,
        bench_seed: sets_seed,
        fastest: floor.fastest,
        final_config: final_verification(graph, &floor),
        naive_seconds: run.new.naive_seconds,
        best_seconds,
        deadline: Some(deadline),
        naive_runs,
        budget: o.time,
        timing,
        roof: crate::training::roof(&machine, &floor, &target),
        prior,
        training: crate::training::Writer::create(&class, &graph.name),
        ranking: o.cost_model,
    };
    // The search's compilations end with its budget, and take at most a quarter of it (gcc
    // took 22 s on one generated nest of a 30 s search): a kernel that slow to build is not
    // worth the search's time.
    let stop = ollie_runner::CompileStop { deadline: Some(deadline), ..Default::default() };
    let search_compiler = Compiler { stop: Some(stop), timeout: compiler.timeout.min(Duration::from_secs_f64((o.time / 4.0).max(5.0))), ..compiler.clone() };
    let mut evaluator = Evaluator::new(&naive, &search_compiler, oracle, start);
    // What a set costs is known before the first candidate: if verifying whole does not fit the
    // budget, the user hears it now.
    evaluator.prime().map_err(|e| cost.verify_error(&graph.name, e, "computing the expected outputs the search times on"))?;
    notes.extend(evaluator.plan());
    // Two candidates measured per round (built in parallel), the most promising of six
    // proposals once the cost model has enough timings to rank them; the next round is drawn
    // ahead and built while this one is measured.
    let config = SearchConfig { seed: run.new.seed, max_evaluations: o.evals, batch: 2, pool: POOL, ranked_pool: RANKED_POOL, ablation: ABLATION, ahead: true, ..SearchConfig::default() };
    let mut search = Search::resume(config, (best, best_seconds), (current, current_seconds), evaluations, record);

    let mut tally = Tally::default();
    history.iter().for_each(|(_, c)| tally.add(c));
    // What a long run stored is not held through the session.
    let seen = history.iter().map(|(id, _)| *id).max().unwrap_or(CandidateId(0));
    drop(history);
    let progress = Progress::new(o.time, searched, tally, (search.best_seconds, run.new.naive_seconds, floor.seconds), llm_watch.as_ref().map(|w| w.totals().clone()));
    if o.resume {
        progress.say(&format!("resuming run {} of `{}`: {} evaluations, {:.1} s searched", run.id.0, graph.name, evaluations, searched));
    }
    if o.join.is_some() {
        progress.say(&format!("joined run {} of `{}` as worker {} on {host}: {} evaluations stored, {:.0} s of {:.0} searched", run.id.0, graph.name, worker.0, run.evaluations, searched, o.time));
    }
    notes.iter().for_each(|n| progress.say(n));
    let heartbeat = Heartbeat::start(&store, worker, o.lease)?;
    let lease_error = RefCell::new(None);
    let mut evaluator = Leased::new(evaluator, store.reopen().context("opening the store")?, run.id, worker, o.lease, held.clone(), &lease_error, seen).context("reading the store")?;
    let chain = RefCell::new(Chain { store, run: run.id, worker, searched, session, best_id, current_id, held, reserve: 0.0, steps: (Instant::now(), Vec::new()), llm: llm_watch, progress, error: None });
    let target = o.roofline_target;
    let stop_reason = search.run(
        &mut list,
        &mut evaluator,
        |s| {
            let mut chain = chain.borrow_mut();
            chain.store_llm_calls();
            let elapsed = chain.elapsed();
            chain.progress.tick(elapsed);
            // The budget covers the whole command: the search stops early enough for the final
            // verification and timing to fit, and for the evaluation it would begin.
            chain.error.is_some() || lease_error.borrow().is_some() || elapsed + chain.reserve + chain.next_step() >= o.time || o.interrupted.load(Ordering::SeqCst) || target.is_some_and(|t| floor.seconds / s.best_seconds >= t)
        },
        |event| chain.borrow_mut().record(event),
    );
    drop(list);
    if let Some(l) = llm.as_mut() {
        l.abandon();
    }
    drop(llm);
    let mut chain = chain.into_inner();
    chain.store_llm_calls();
    chain.progress.finish();
    if let Some(why) = chain.llm.as_ref().and_then(|l| l.totals().gave_up.clone()) {
        chain.progress.say(&format!("the llm proposer stopped early: {why}"));
    }
    drop(heartbeat);
    if let Some(e) = chain.error.take().or(lease_error.take()) {
        return Err(anyhow::Error::from(e).context("writing the store").into());
    }
    tracing::info!(?stop_reason, evaluations = search.evaluations(), "search stopped");
    let elapsed = chain.elapsed();
    let Chain { mut store, progress, .. } = chain;
    store.leave(worker).context("writing the store")?;
    // One host runs the final phase: the first worker to claim it (a resumed run's own chain
    // claims it again). The others say who has it, and stop.
    let who = format!("worker {} on {host}", worker.0);
    if let Some(other) = store.claim_finish(run.id, &who).context("writing the store")? {
        if other != who {
            return Ok(format!("run {}: this worker ({who}) made {} evaluations; the final phase is {other}'s\n", run.id.0, search.evaluations() - evaluations));
        }
    }
    workers::wait_for_others(&mut store, run.id, worker, o.lease, Duration::from_secs(15))?;
    let cx = FinishContext { graph, naive: &naive, compiler: &compiler, baseline: &baseline, machine: &machine, floor: &floor, out: &o.out, store: &mut store, run: run.id, elapsed, deadline, cost: &cost, timing };
    let (mut table, summary) = finish(cx, evaluator.inner.into_oracle(), &|message| progress.say(&message))?;
    // The result joins the kernel cache the Python package's `@ollie.kernel` reads; a cache that
    // cannot be written costs the search nothing.
    let found = cache::Found { out: &o.out, graph, spec: &o.spec_path, dims: &o.dims, summary: &summary, floor_seconds: floor.seconds };
    match cache::store(&cache::root(), &cache::Toolchain::current(&compiler.cc), &found) {
        Ok(Some(dir)) => table.push_str(&format!("kernel cache: {}\n", dir.display())),
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "the kernel cache was not written"),
    }
    Ok(table)
}

/// The chain's bookkeeping while the search runs: every step into the store (one transaction
/// each, with the chain's best and current candidates), the LLM's calls as they finish, the
/// progress display.
struct Chain {
    store: Store,
    run: RunId,
    worker: WorkerId,
    /// The search time before this session.
    searched: f64,
    session: Instant,
    best_id: CandidateId,
    current_id: CandidateId,
    /// The leases on candidates being judged.
    held: Rc<RefCell<Held>>,
    /// What the final phase will take, as the evaluator last estimated.
    reserve: f64,
    /// When the last step was recorded, and how long the last few took (each from the step
    /// before it).
    steps: (Instant, Vec<f64>),
    llm: Option<LlmWatch>,
    progress: Progress,
    /// A failed write stops the search: what is not stored could not be resumed.
    error: Option<ollie_store::StoreError>,
}

impl Chain {
    /// What the next evaluation will take: the median of the last three (the lesser of two, the
    /// one after the first; nothing before it), each without the expected outputs it computed.
    fn next_step(&self) -> f64 {
        let mut last = self.steps.1.clone();
        last.sort_by(f64::total_cmp);
        match last.len() {
            0 => 0.0,
            2 => last[0],
            n => last[n / 2],
        }
    }

    /// The run's search time: earlier sessions' and this one's.
    fn elapsed(&self) -> f64 {
        self.searched + self.session.elapsed().as_secs_f64()
    }

    /// The LLM calls finished since the last look, into the store.
    fn store_llm_calls(&mut self) {
        let Some(watch) = self.llm.as_mut() else { return };
        let calls = watch.calls();
        self.progress.set_llm(watch.totals());
        let at = self.elapsed();
        for mut call in calls {
            call.at_seconds = at;
            if let Err(e) = self.store.record_llm_call(self.run, &call) {
                self.error = Some(e);
            }
        }
    }

    /// One step of the search, into the store and the display.
    fn record(&mut self, event: Event<Kernel, Note>) {
        self.store_llm_calls();
        let note = event.note;
        self.reserve = note.reserve;
        // What it cost beyond expected outputs computed once (the first evaluation computes the
        // second tier's sets; later ones read them).
        let took = (self.steps.0.elapsed().as_secs_f64() - note.computing).max(0.0);
        self.steps.1.push(took);
        if self.steps.1.len() > 3 {
            self.steps.1.remove(0);
        }
        self.steps.0 = Instant::now();
        // What the search made of it: taken after the full verification, declined as slower
        // (first tier only), or rejected in either tier.
        let (rejected, mut timing) = match event.outcome {
            Evaluation::Timed { .. } => (None, note.timing),
            Evaluation::Slower { ratio: (median, p10, p90), .. } => (Some((Reason::Slower, format!("{median:.2}x the current kernel's time (p10..p90 {p10:.2}..{p90:.2})"))), note.timing),
            Evaluation::Rejected => (Some(note.rejected.unwrap_or((Reason::Internal, "rejected without a reason".into()))), None),
        };
        if let (Some(prediction), Some(a)) = (timing.as_mut().and_then(|t| t.predicted.as_mut()), event.ablation) {
            (prediction.round, prediction.picked) = (Some(a.round), a.picked);
        }
        let candidate = Candidate {
            evaluation: event.evaluation,
            source_hash: stored::hash(&note.source, &note.flags),
            source: note.source,
            flags: note.flags.join(" "),
            schedule: event.candidate.schedule_text(),
            graph: event.candidate.graph_text(),
            parent: Some(self.current_id),
            proposer: event.proposer,
            at_seconds: self.elapsed(),
            accepted: rejected.is_none(),
            detail: rejected.as_ref().map(|r| r.1.clone()),
            reason: rejected.map(|r| r.0.code().to_string()),
            timing,
            moved: event.moved,
            new_best: event.new_best,
        };
        let cex = note.counterexample.map(|inputs| Counterexample { shapes: inputs.iter().map(|t| t.shape().to_vec()).collect(), data: inputs.iter().map(|t| t.iter().copied().collect()).collect() });
        // The chain after this step (`None`: this candidate). A restart, which only follows a
        // step without a new best, goes back to the best.
        let next_best = if event.new_best { None } else { Some(self.best_id) };
        let next_current = if event.restarted { Some(self.best_id) } else if event.moved { None } else { Some(self.current_id) };
        let lease = self.held.borrow_mut().settle(&event.candidate);
        let step = Step { candidate: &candidate, counterexample: cex.as_ref(), lease, best: next_best, current: next_current, elapsed_seconds: self.elapsed() };
        match self.store.record(self.run, self.worker, &step) {
            Ok(id) => {
                self.best_id = next_best.unwrap_or(id);
                self.current_id = next_current.unwrap_or(id);
            }
            // Judged too late: another worker took the candidate over; its verdict stands.
            Err(ollie_store::StoreError::LeaseLost(lease)) => tracing::warn!(lease, evaluation = candidate.evaluation, "a verdict came after its lease expired: dropped"),
            Err(e) => self.error = Some(e),
        }
        let best = match (event.new_best, event.outcome) {
            (true, Evaluation::Timed { seconds, .. }) => Some(seconds),
            _ => None,
        };
        self.progress.add(&candidate, best);
        self.progress.show(self.elapsed());
    }
}

