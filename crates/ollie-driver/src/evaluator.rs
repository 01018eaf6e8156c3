//! The evaluator: builds candidates (two at a time, the next round's in the background while
//! this one is judged), judges them in two tiers — saved
//! counterexamples and adaptive interleaved timing against the current kernel for every
//! candidate, the whole verification protocol only for one the chain takes — and keeps the
//! estimate of what the final phase will cost, so the search stops in time for it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lru::LruCache;
use ollie_graph::Tensor;
use ollie_loops::LoopNest;
use ollie_runner::Compiler;
use ollie_search::cost_model::{features, CostModel, Timed};
use ollie_search::physics::Roof;
use ollie_search::{Evaluate, Evaluation, Kernel};
use ollie_store::{Prediction, TimingRecord};
use ollie_verify::{BenchConfig, EarlyStop, Oracle, Timing, VerifyConfig, FAR_PAIRS};

use crate::final_timing::FinalTiming;
use crate::training::Writer;
use crate::Reason;

/// What the evaluator learned about a candidate, carried by the search's step to the store and
/// the proposers.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Note {
    /// Its C source and flags (empty when it has none: a schedule that does not replay).
    pub source: String,
    pub flags: Vec<String>,
    /// Why it was rejected, and what exactly went wrong; `None` if it passed every tier it ran.
    pub rejected: Option<(Reason, String)>,
    /// Its interleaved timing against the current kernel, if it got that far.
    pub timing: Option<TimingRecord>,
    /// The inputs it failed on, if the verifier rejected it on some.
    pub counterexample: Option<Vec<Tensor>>,
    /// What the final verification and timing will take, as estimated after this candidate
    /// (the search stops in time for them).
    pub reserve: f64,
    /// Seconds its evaluation spent computing expected outputs: paid once per input set (a later
    /// evaluation reads them back), so not what the next evaluation will cost.
    pub computing: f64,
}

impl Note {
    fn rejected(source: String, flags: Vec<String>, reason: Reason, detail: String) -> Note {
        Note { source, flags, rejected: Some((reason, detail)), ..Note::default() }
    }
}

/// A candidate as built: its C source and flags (empty if its schedule does not replay), and its
/// library or why it has none.
#[derive(Clone)]
pub(crate) struct Built {
    pub source: String,
    pub flags: Vec<String>,
    pub library: Result<PathBuf, (Reason, String)>,
}

impl Built {
    /// A note with its source and flags (and, if it could not be built, why).
    fn note(&self) -> Note {
        Note { source: self.source.clone(), flags: self.flags.clone(), rejected: self.library.as_ref().err().cloned(), ..Note::default() }
    }
}

/// [`Kernel::emit`], then compile (the compiler's cache makes a rebuild cheap). A kernel written
/// outside ollie passes the static screen first.
pub(crate) fn build(compiler: &Compiler, naive: &LoopNest, kernel: &Kernel) -> Built {
    let started = Instant::now();
    let (source, flags) = match kernel.emit(naive) {
        Ok(emitted) => emitted,
        Err(e) => return Built { source: String::new(), flags: Vec::new(), library: Err((Reason::from(&e), e.to_string())) },
    };
    let seconds = started.elapsed().as_secs_f64();
    if seconds > 1.0 {
        tracing::debug!(seconds, schedule = %kernel.schedule_text(), "slow to emit");
    }
    let screened = match kernel {
        Kernel::Written { .. } => match ollie_verify::screen(compiler, &source, &flags) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(screened)) => Err((Reason::from(&screened), screened.to_string())),
            Err(e) => Err((Reason::CompileError, e.to_string())),
        },
        Kernel::Scheduled(_) | Kernel::Rewritten { .. } => Ok(()),
    };
    let library = screened.and_then(|()| match compiler.compile(&source, &flags) {
        Ok(c) => Ok(c.library),
        Err(Ok(outcome)) => Err((Reason::CompileError, outcome.summary())),
        Err(Err(e)) => Err((Reason::CompileError, e.to_string())),
    });
    tracing::trace!(seconds = started.elapsed().as_secs_f64(), ok = library.is_ok(), "built");
    Built { source, flags, library }
}

/// Counterexamples tried first by every verification, at most.
const MAX_SAVED: usize = 8;

/// A verification that cannot run whole in these shares of the budget (the search's second
/// tier; the final one), or in the time left, runs the input sets that fit (every family's
/// first set first), if that holds at least [`MIN_TESTS`] of its tests: one input set and its
/// copy with one element changed. The second tier's share is small: judging follows what a
/// candidate costs, and the final verification runs the contract (a 300 MB decode attention's
/// first candidate spent 28 s of a 120 s budget computing expected outputs; capped, a search
/// made 30 evaluations where it made 2).
const TIER2_SHARE: f64 = 0.1;
const FINAL_SHARE: f64 = 1.0 / 3.0;
const MIN_TESTS: usize = 2;

/// How many times the current kernel's time a candidate's call may take in the first tier.
const SLOWER: f64 = 4.0;

/// How far apart a chain estimate and the time just measured may be, as a factor, before the
/// measurement wins (see [`Evaluator::chain_estimate`]): more than the load of a shared machine
/// moves a kernel's time, less than a broken measurement does.
const DRIFT: f64 = 4.0;

/// Builds started ahead of their turn ([`Evaluate::prefetch`]), each on a thread of its own;
/// joined when their kernel is needed, or stopped when the search is over (through the
/// compiler's cancel flag, if it has one: a compilation can take many seconds).
#[derive(Default)]
struct Background {
    running: HashMap<Kernel, std::thread::JoinHandle<Built>>,
    cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Background {
    /// The build of `kernel`, if one is running: waits for it.
    fn take(&mut self, kernel: &Kernel) -> Option<Built> {
        Some(self.running.remove(kernel)?.join().expect("building does not panic"))
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(cancel) = &self.cancel {
            cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        self.running.drain().for_each(|(_, h)| drop(h.join()));
    }
}

/// Builds kept (each with its source, tens of KiB): a round's, the current and best kernels,
/// and room for the next few rounds.
const BUILDS: std::num::NonZeroUsize = std::num::NonZeroUsize::new(256).unwrap();

/// Rejections and times remembered, so that a repeated proposal costs nothing: the latest
/// ten minutes' or so (a soak's memory grew for an hour with room for 16,384).
const REMEMBERED: std::num::NonZeroUsize = std::num::NonZeroUsize::new(2048).unwrap();

pub(crate) struct Evaluator<'a> {
    pub naive: &'a LoopNest,
    pub compiler: &'a Compiler,
    pub oracle: Oracle<'a>,
    /// The latest builds (a long search's every source, kept, grew its memory by the store's
    /// size: 360 MiB in 45 minutes); one evicted is rebuilt from the compiler's cache.
    builds: LruCache<Kernel, Built>,
    background: Background,
    /// The naive nest, for builds in the background.
    shared_naive: std::sync::Arc<LoopNest>,
    /// The latest kernels rejected for a defect of their own, with the reason.
    rejected: LruCache<Kernel, (Reason, String)>,
    /// Time of the latest kernels timed, on the chain's scale.
    seconds: LruCache<Kernel, f64>,
    /// Fitted on those times and earlier searches'; ranks each round's proposals (unless
    /// `ranking` is off), and predicts each kernel's time before it is measured.
    model: CostModel,
    ranking: bool,
    /// The machine and the work, as the model's roofline estimate sees them.
    roof: Roof,
    /// Where this search's timings are kept for later searches.
    training: Writer,
    /// The search's verification: its input sets, and the counterexamples found so far.
    verify: VerifyConfig,
    bench_seed: u64,
    /// The least time a kernel can take (a faster call is rejected as `too-fast`).
    fastest: f64,
    /// Seconds per test of the last full verification that passed, with its expected outputs
    /// computed (`[0]`) or all on disk (`[1]`, a plan that ran to its end before).
    per_test: [Option<f64>; 2],
    /// When the whole command must be done (the final phase included).
    deadline: Option<Instant>,
    /// For that estimate: the final verification's configuration and the naive kernel's time.
    final_config: VerifyConfig,
    naive_seconds: f64,
    /// The fastest kernel verified in full (on the chain's scale): the one the final phase will
    /// time first.
    best_seconds: f64,
    /// Whether computing a set's expected outputs runs the naive kernel (its outputs are the
    /// baseline), the whole budget, and how the final phase will time.
    naive_runs: bool,
    budget: f64,
    timing: FinalTiming,
}

/// Where the evaluator starts: the kernels the chain holds and the verifications it runs.
pub(crate) struct Start {
    /// Kernels already timed, on the chain's scale (a resumed run's history, the current and
    /// the best).
    pub seconds: Vec<(Kernel, f64)>,
    pub verify: VerifyConfig,
    pub bench_seed: u64,
    pub fastest: f64,
    pub final_config: VerifyConfig,
    pub naive_seconds: f64,
    /// The best kernel's time, on the chain's scale.
    pub best_seconds: f64,
    /// When the whole command must be done.
    pub deadline: Option<Instant>,
    /// Whether computing a set's expected outputs runs the naive kernel (its outputs are the
    /// baseline).
    pub naive_runs: bool,
    /// The whole budget, in seconds.
    pub budget: f64,
    pub timing: FinalTiming,
    /// The cost model's start: the roofline as it sees it, earlier searches' timings, where
    /// this search's go, and whether it ranks proposals (`--no-cost-model`: it only predicts).
    pub roof: Roof,
    pub prior: Vec<Timed>,
    pub training: Writer,
    pub ranking: bool,
}

impl<'a> Evaluator<'a> {
    /// Ends the search's evaluations: builds still running in the background are stopped
    /// (where the compiler can be), and the oracle goes on to the final phase.
    pub fn into_oracle(self) -> Oracle<'a> {
        let Evaluator { oracle, background, .. } = self;
        drop(background);
        oracle
    }

    pub fn new(naive: &'a LoopNest, compiler: &'a Compiler, oracle: Oracle<'a>, start: Start) -> Evaluator<'a> {
        Evaluator {
            naive,
            compiler,
            oracle,
            builds: LruCache::new(BUILDS),
            background: Background { running: HashMap::new(), cancel: compiler.stop.as_ref().map(|s| s.cancel.clone()) },
            shared_naive: std::sync::Arc::new(naive.clone()),
            rejected: LruCache::new(REMEMBERED),
            model: {
                let mut model = CostModel::with_prior(start.prior);
                // A resumed run's times, known without their noise.
                for (k, t) in &start.seconds {
                    if let Some(timed) = Timed::new(features(k, naive, &start.roof), log_time(*t, &start.roof), (1.0, 1.0)) {
                        model.add(timed);
                    }
                }
                model
            },
            ranking: start.ranking,
            roof: start.roof,
            training: start.training,
            seconds: {
                let mut seconds = LruCache::new(REMEMBERED);
                for (k, t) in start.seconds {
                    seconds.put(k, t);
                }
                seconds
            },
            verify: start.verify,
            bench_seed: start.bench_seed,
            fastest: start.fastest,
            per_test: [None; 2],
            deadline: start.deadline,
            final_config: start.final_config,
            naive_seconds: start.naive_seconds,
            best_seconds: start.best_seconds,
            naive_runs: start.naive_runs,
            budget: start.budget,
            timing: start.timing,
        }
    }

    fn build(&mut self, kernel: &Kernel) -> Built {
        if let Some(b) = self.builds.get(kernel) {
            return b.clone();
        }
        let b = self.background.take(kernel).unwrap_or_else(|| build(self.compiler, self.naive, kernel));
        self.builds.put(kernel.clone(), b.clone());
        b
    }

    /// The first tier.
    fn judge(&mut self, candidate: &Kernel, current: &Kernel) -> Result<Note, anyhow::Error> {
        let built = self.build(candidate);
        let mut note = built.note();
        let Ok(library) = &built.library else { return Ok(note) };
        let current_library = match self.build(current).library {
            Ok(library) => library,
            Err((_, detail)) => anyhow::bail!("the current kernel no longer builds: {detail}"),
        };
        // Another way to the same source and flags (a schedule whose steps change nothing, a
        // model repeating itself): timing a kernel against itself teaches nothing.
        if *library == current_library {
            note.rejected = Some((Reason::Unchanged, "the same source and flags as the current kernel".into()));
            return Ok(note);
        }
        // The saved counterexamples, then interleaved timing against the current kernel on
        // normal inputs, every timed call's outputs checked.
        if !self.verify.saved.is_empty() {
            let screen = VerifyConfig { families: Some(Vec::new()), ..self.verify.clone() };
            if !self.passes(library, &screen, &mut note)? {
                return Ok(note);
            }
        }
        // Pairs until the ratio is clear (5 at least, 21 at most), within about 30 of the
        // current kernel's calls and an eighth of the search time left: with a tight budget,
        // more candidates judged less finely.
        let guess = self.seconds.get(current).copied().unwrap_or(1e-3).max(self.fastest);
        let left = self.deadline.map_or(f64::INFINITY, |d| d.saturating_duration_since(Instant::now()).as_secs_f64() - self.estimate_reserve(self.best_seconds));
        let early = EarlyStop { min_pairs: 5, seconds: (30.0 * guess).min(left / 8.0).max(0.05), patient: false };
        let started = Instant::now();
        // Pairing costs a warm-up and at least two pairs of the current kernel's calls; where that
        // is more than the first tier may spend, or more than a twentieth of the budget (a naive
        // kernel of seconds a call: 3.5 s for a 300 MB decode attention, 13 s of a 120 s search
        // to time its first candidate), the candidate is timed alone and its ratio is against
        // the current kernel's estimate.
        let alone = (1 + FAR_PAIRS) as f64 * guess > early.seconds.min(self.budget / 20.0);
        let libraries: Vec<&Path> = if alone { vec![library] } else { vec![library, &current_library] };
        // Alone, a few calls tell a kernel far faster than the current one (the only kind worth
        // taking from a kernel that slow).
        // Paired, a call of the candidate taking more than four times the current kernel's is
        // stopped: such a candidate would not be taken.
        let first_limit = (!alone).then(|| Duration::from_secs_f64((SLOWER * guess).max(0.25)));
        let config = BenchConfig { seed: self.bench_seed, sets: 1, warmups: 1, calls: if alone { 3 } else { 21 }, floor: Some(self.fastest), early: Some(early), first_limit };
        let timed = ollie_verify::bench_with(&mut self.oracle, &libraries, &config)?;
        tracing::debug!(seconds = started.elapsed().as_secs_f64(), alone, pairs = timed.ratios.as_ref().map_or(0, |r| r.samples.len()), "timed");
        let measured = match (&timed.kernels[..], &timed.ratios) {
            ([Ok(t)], _) => Ok((t.clone(), t.median, Timing::from_samples(t.samples.iter().map(|s| s / guess).collect()))),
            ([Ok(t), Ok(now)], Some(ratio)) => Ok((t.clone(), self.chain_estimate(current, t.median, now.median, ratio.median), ratio.clone())),
            ([Err(r), ..], _) => Err(r),
            ([_, Err(r)], _) => anyhow::bail!("the current kernel failed while timing: {r}"),
            _ => anyhow::bail!("the current kernel failed while timing"),
        };
        match measured {
            Ok((t, estimate, ratio)) => {
                self.seconds.put(candidate.clone(), estimate);
                let mut timing = TimingRecord { estimate, seconds: t.median, p10: t.p10, p90: t.p90, ratio: ratio.median, ratio_p10: ratio.p10, ratio_p90: ratio.p90, predicted: None };
                if let Some(timed) = Timed::new(features(candidate, self.naive, &self.roof), log_time(estimate, &self.roof), timing.noise()) {
                    self.training.write(&timed);
                    timing.predicted = self.model.add(timed).map(|log_time| Prediction { log_time, trained_on: self.model.fitted_on() as u64, round: None, picked: false });
                }
                note.timing = Some(timing);
            }
            Err(r) => note.rejected = Some((Reason::from(r), r.to_string())),
        }
        Ok(note)
    }

    /// Runs the verifier; a rejection goes into `note` (its inputs saved as a counterexample).
    fn passes(&mut self, library: &Path, config: &VerifyConfig, note: &mut Note) -> Result<bool, anyhow::Error> {
        let (started, known) = (Instant::now(), self.oracle.knows_plan(&config.plan()));
        let report = ollie_verify::verify_with(&mut self.oracle, library, config)?;
        let (seconds, tests) = (started.elapsed().as_secs_f64(), report.certificate.tests.len());
        tracing::debug!(seconds, calls = tests, known, "verified");
        if report.accepted && config.families.is_none() && tests > 0 {
            self.per_test[usize::from(known)] = Some(seconds / tests as f64);
        }
        let Some(r) = &report.rejection else { return Ok(true) };
        note.rejected = Some((Reason::from(r), r.to_string()));
        if let Some(inputs) = report.counterexample {
            self.learn(inputs.clone());
            note.counterexample = Some(inputs);
        }
        Ok(false)
    }

    /// Trains the cost model on a kernel timed elsewhere (by another worker), its time on the
    /// chain's scale.
    pub fn learn_timing(&mut self, kernel: &Kernel, estimate: f64) {
        if let Some(timed) = Timed::new(features(kernel, self.naive, &self.roof), log_time(estimate, &self.roof), (1.0, 1.0)) {
            self.model.add(timed);
        }
    }

    /// Tries `inputs` first in every later verification (a counterexample found here or by
    /// another worker), while fewer than [`MAX_SAVED`] are kept.
    pub fn learn(&mut self, inputs: Vec<Tensor>) {
        if self.verify.saved.len() < MAX_SAVED {
            self.verify.saved.push(inputs);
        }
    }

    /// A candidate's time on the chain's scale: the current kernel's estimate times the
    /// interleaved ratio — unless what was just measured disagrees with them by more than a
    /// shared machine's drift ([`DRIFT`]): then the current kernel's median of these pairs is the
    /// scale, and the ratio of the two medians the ratio. Compounded unchecked, a few ratios
    /// wrecked by a descheduled thread (0.009 between two kernels of 19 µs each) sank the
    /// scale of a prefix-sum search 10¹⁶-fold in 200 steps, until slow kernels ranked first.
    fn chain_estimate(&self, current: &Kernel, candidate: f64, now: f64, ratio: f64) -> f64 {
        let within = |a: f64, b: f64| a > 0.0 && b > 0.0 && (a / b).max(b / a) <= DRIFT;
        let scale = self.seconds.peek(current).copied().filter(|&s| within(s, now)).unwrap_or(now);
        let medians = candidate / now;
        scale * if within(ratio, medians) { ratio } else { medians }
    }

    /// What verifying in full with `config` a kernel taking `seconds` a call will take: its
    /// tests, and what each costs — what a test of one of the search's full verifications did
    /// (making the inputs, their expected outputs computed — or read back, if that plan ran to
    /// its end before — the call and its checks), or else what the oracle's sets have cost and a
    /// call.
    fn estimate_verification(&self, config: &VerifyConfig, seconds: f64) -> (usize, f64) {
        let costs = self.oracle.costs();
        let read = costs.per_read().unwrap_or(0.0);
        // Before any set was computed in this run: at least its reference, and the naive
        // kernel's call where its outputs are the baseline.
        let naive = if self.naive_runs { 2.0 * self.naive_seconds } else { 0.0 };
        let computed = costs.per_computed().unwrap_or((10.0 * read).max(read + naive));
        let known = self.oracle.knows_plan(&config.plan());
        let per_set = if known { read } else { computed };
        let per_test = self.per_test[usize::from(known)].unwrap_or(per_set + read + seconds);
        (config.input_sets(self.oracle.graph()), per_test)
    }

    /// Estimates what the final phase will take with the fastest verified kernel taking `best`
    /// seconds: its final timing against the naive kernel (or alone, where pairing costs too
    /// much) and its final verification — whole, or the share of the budget it may take when the
    /// whole does not fit; should it not be faster there or fail, the naive kernel is the result
    /// with the time that timing measured; or, when nothing beat the naive kernel, nothing: the
    /// naive kernel is neither re-verified (it is the baseline) nor timed again (its time before
    /// the search is the result's).
    fn estimate_reserve(&self, best: f64) -> f64 {
        let evict = self.eviction_seconds();
        let phase = if best < self.naive_seconds {
            let (tests, per_test) = self.estimate_verification(&self.final_config, best);
            let verification = (tests as f64 * per_test).min((FINAL_SHARE * self.budget).max(MIN_TESTS.min(tests) as f64 * per_test));
            let timing = self.timing.cost(best, evict);
            tracing::trace!(tests, per_test, verification, timing, "reserve");
            timing + verification
        } else {
            0.0
        };
        phase + 1.0
    }

    /// What verifying with the search's configuration will cost, and the budget that would let
    /// the search verify every candidate it takes in full and the final phase verify the result
    /// in full — for the user, before the search begins, where the budget is too small for that.
    pub fn plan(&self) -> Option<String> {
        // A kernel as fast as the machine allows: the inputs and expected outputs are the cost.
        let (tests, per_test) = self.estimate_verification(&self.verify, self.fastest);
        let (final_tests, final_per_test) = self.estimate_verification(&self.final_config, self.fastest);
        let (search, last) = (tests as f64 * per_test, final_tests as f64 * final_per_test);
        let left = self.deadline.map_or(f64::INFINITY, |d| d.saturating_duration_since(Instant::now()).as_secs_f64());
        let timing = self.timing.cost(self.naive_seconds.min(self.best_seconds), self.eviction_seconds());
        if search + last + timing <= left / 2.0 {
            return None;
        }
        let needed = self.budget - left + 2.0 * (search + last + timing);
        Some(format!(
            "a full verification needs about {search:.0} s ({tests} tests at {per_test:.2} s each, their expected outputs computed once) and the final one about {last:.0} s ({final_tests} tests): with --time {:.0}s, candidates the search takes and its result are verified on as many input sets as fit (every family's first set first), and the report says how many; --time {:.0}s would fit them whole",
            self.budget,
            needed.ceil()
        ))
    }

    /// Gets the expected outputs of the input set the first tier times on ready (reading or
    /// computing them), so that what a set costs is known before the first candidate.
    pub fn prime(&mut self) -> Result<(), ollie_verify::VerifyError> {
        ollie_verify::prepare(&mut self.oracle, &BenchConfig { seed: self.bench_seed, sets: 1, ..BenchConfig::default() })
    }

    /// Wall seconds a timed call spends before the kernel runs, pushing the kernel's buffers out
    /// of the caches (`Session::evict`).
    fn eviction_seconds(&self) -> f64 {
        let bytes: usize = self.naive.inputs().chain(self.naive.outputs()).map(|(_, b)| b.bytes()).sum();
        ollie_runner::eviction_seconds(bytes)
    }
}

/// The log of a time on the chain's scale over the floor: what the cost model learns.
fn log_time(seconds: f64, roof: &Roof) -> f64 {
    (seconds / roof.floor_seconds).ln()
}

impl Evaluate<Kernel> for Evaluator<'_> {
    type Note = Note;

    fn rank(&mut self, proposals: &[Kernel]) -> Option<Vec<f64>> {
        if !self.ranking {
            return None;
        }
        let features: Vec<Vec<f64>> = proposals.iter().map(|k| features(k, self.naive, &self.roof)).collect();
        self.model.rank(&features)
    }

    fn ranks(&self) -> bool {
        self.ranking && self.model.trusted()
    }

    /// Builds the batch, in parallel: what was not started ahead starts now, then each is
    /// waited for.
    fn prepare(&mut self, batch: &[Kernel]) {
        self.prefetch(batch);
        let started = Instant::now();
        for k in batch {
            if !self.rejected.contains(k) {
                self.build(k);
            }
        }
        tracing::debug!(seconds = started.elapsed().as_secs_f64(), "compiled");
    }

    /// Starts building, in the background, the kernels of a round that may come next (stopped
    /// while kernels are timed: see `ollie_runner`'s `quiet.rs`).
    fn prefetch(&mut self, batch: &[Kernel]) {
        for k in batch {
            if self.builds.contains(k) || self.rejected.contains(k) || self.background.running.contains_key(k) {
                continue;
            }
            let (compiler, naive, kernel) = (self.compiler.clone(), self.shared_naive.clone(), k.clone());
            self.background.running.insert(k.clone(), std::thread::spawn(move || build(&compiler, &naive, &kernel)));
        }
    }

    fn evaluate(&mut self, candidate: &Kernel, current: &Kernel) -> (Evaluation, Note) {
        // A kernel rejected before is rejected again (proposals repeat), without rerunning.
        if let Some((reason, detail)) = self.rejected.get(candidate).cloned() {
            let (source, flags) = candidate.emit(self.naive).unwrap_or_default();
            let note = Note { reserve: self.estimate_reserve(self.best_seconds), ..Note::rejected(source, flags, reason, format!("as before: {detail}")) };
            return (Evaluation::Rejected, note);
        }
        let computed = self.oracle.costs().compute_seconds;
        let mut note = self.judge(candidate, current).unwrap_or_else(|e| {
            tracing::warn!("evaluation failed: {e:#}");
            Note { rejected: Some((Reason::Internal, format!("{e:#}"))), ..Note::default() }
        });
        note.computing = self.oracle.costs().compute_seconds - computed;
        if let Some(rejected) = note.rejected.as_ref().filter(|r| r.0.is_defect()) {
            self.rejected.put(candidate.clone(), rejected.clone());
        }
        let evaluation = match (&note.rejected, &note.timing) {
            (None, Some(t)) => Evaluation::Timed { seconds: t.estimate, ratio: (t.ratio, t.ratio_p10, t.ratio_p90) },
            _ => Evaluation::Rejected,
        };
        note.reserve = self.estimate_reserve(self.best_seconds);
        (evaluation, note)
    }

    /// The second tier: the whole protocol, for a candidate the chain is about to take — unless
    /// it would not end before the final phase must start.
    fn confirm(&mut self, candidate: &Kernel, note: &mut Note) -> bool {
        let mut verify = self.verify.clone();
        if let Some(deadline) = self.deadline {
            // The final phase as it would be with this candidate taken (perhaps as the best).
            let best = note.timing.map_or(self.best_seconds, |t| t.estimate.min(self.best_seconds));
            let reserve = self.estimate_reserve(best);
            let left = deadline.saturating_duration_since(Instant::now()).as_secs_f64() - reserve;
            let seconds = note.timing.map_or(self.best_seconds, |t| t.seconds);
            // The whole protocol where it fits in the time left and its share of the budget;
            // else the sets that fit (at least MIN_TESTS of them); else out of time.
            let (tests, per_test) = self.estimate_verification(&verify, seconds);
            let (whole, least) = (tests as f64 * per_test, MIN_TESTS.min(tests) as f64 * per_test);
            if least > left {
                tracing::debug!(whole, reserve, left, "out of time");
                note.rejected = Some((Reason::OutOfTime, format!("its full verification (about {whole:.0} s), or enough of it, would not end before the final phase must start")));
                note.timing = None;
                note.reserve = self.estimate_reserve(self.best_seconds);
                return false;
            }
            let allowed = left.min((TIER2_SHARE * self.budget).max(least));
            if whole > allowed {
                tracing::debug!(allowed, left, "the full verification does not fit, or takes more than its share: the sets that do");
                verify.deadline = Some(Instant::now() + Duration::from_secs_f64(allowed));
            }
        }
        let computed = self.oracle.costs().compute_seconds;
        let passed = match self.build(candidate).library {
            Ok(library) => self.passes(&library, &verify, note).unwrap_or_else(|e| {
                tracing::warn!("verification failed: {e:#}");
                note.rejected = Some((Reason::Internal, format!("{e:#}")));
                false
            }),
            Err(failed) => {
                note.rejected = Some(failed);
                false
            }
        };
        if let Some(rejected) = note.rejected.as_ref().filter(|r| r.0.is_defect()) {
            self.rejected.put(candidate.clone(), rejected.clone());
        }
        note.computing += self.oracle.costs().compute_seconds - computed;
        match note.timing {
            Some(t) if passed => self.best_seconds = self.best_seconds.min(t.estimate),
            _ => note.timing = None,
        }
        note.reserve = self.estimate_reserve(self.best_seconds);
        passed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ollie_verify::Baseline;

    /// Where the tests' evaluator starts: `kernel` timed at `seconds`, the naive kernel at 1 ms.
    fn start(kernel: &Kernel, seconds: f64, deadline: Option<Instant>) -> Start {
        Start {
            seconds: vec![(kernel.clone(), seconds)],
            verify: VerifyConfig::default(),
            bench_seed: 0,
            fastest: 0.0,
            final_config: VerifyConfig::default(),
            naive_seconds: 1e-3,
            best_seconds: 1e-3,
            deadline,
            naive_runs: true,
            budget: 60.0,
            timing: FinalTiming::new(1e-3, 60.0),
            roof: Roof { threads: 1.0, lanes: 8.0, peak_flops_per_thread: 50e9, memory_bandwidth: 10e9, memory_bandwidth_one: 10e9, cache_bandwidth: 50e9, l1_bytes: 32768.0, l2_bytes: 1048576.0, last_level_bytes: 8388608.0, floor_seconds: 1e-6, flops: 64.0, bytes: 512.0 },
            prior: Vec::new(),
            training: Writer::none(),
            ranking: true,
        }
    }

    /// A candidate the chain would take, when the session's deadline leaves no time for its full
    /// verification, is declined as `out-of-time` before anything runs (no sandbox is started:
    /// the runner here names a program that does not exist).
    #[test]
    fn a_full_verification_that_cannot_end_in_time_is_not_begun() {
        let source = "import numpy as np\n\ndef double(x: \"f32[64]\"):\n    return x * 2.0\n";
        let graph = ollie_spec::compile(source, &ollie_spec::Options::default()).unwrap().graph;
        let naive = ollie_loops::lower(&graph).unwrap();
        let runner = ollie_runner::Runner::new("/nonexistent/ollie", Duration::from_secs(1));
        let compiler = Compiler::new(std::env::temp_dir().join("ollie-driver-test"));
        let oracle = Oracle::new(&graph, &runner, Baseline::Naive("/nonexistent/libnaive.so".into()));
        let kernel = Kernel::Scheduled(ollie_search::initial_schedule());
        let mut evaluator = Evaluator::new(&naive, &compiler, oracle, start(&kernel, 1e-3, Some(Instant::now())));
        let timing = TimingRecord { estimate: 1e-3, seconds: 1e-3, p10: 1e-3, p90: 1e-3, ratio: 0.5, ratio_p10: 0.5, ratio_p90: 0.5, predicted: None };
        let mut note = Note { timing: Some(timing), ..Note::default() };
        assert!(!evaluator.confirm(&kernel, &mut note));
        assert_eq!(note.rejected.as_ref().map(|r| r.0), Some(Reason::OutOfTime), "{note:?}");
        assert_eq!(note.timing, None, "a candidate not verified in full keeps no timing");
        assert!(note.reserve > 0.0);
        // Not a defect: the same kernel is judged again later, not rejected as before.
        assert!(evaluator.rejected.is_empty());
    }

    /// The chain's scale follows the interleaved ratio while it agrees with what the pairs
    /// measured, within 4×; beyond, the measurement wins — the current kernel's median as the
    /// scale, the ratio of the two medians as the ratio.
    #[test]
    fn a_chain_estimate_far_from_what_was_measured_is_rebased_on_the_measurement() {
        let source = "import numpy as np\n\ndef double(x: \"f32[64]\"):\n    return x * 2.0\n";
        let graph = ollie_spec::compile(source, &ollie_spec::Options::default()).unwrap().graph;
        let naive = ollie_loops::lower(&graph).unwrap();
        let runner = ollie_runner::Runner::new("/nonexistent/ollie", Duration::from_secs(1));
        let compiler = Compiler::new(std::env::temp_dir().join("ollie-driver-test"));
        let oracle = Oracle::new(&graph, &runner, Baseline::Naive("/nonexistent/libnaive.so".into()));
        let current = Kernel::Scheduled(ollie_search::initial_schedule());
        let evaluator = Evaluator::new(&naive, &compiler, oracle, start(&current, 2e-5, None));
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b;
        // Agreeing: the chain's estimate times the ratio (the load moved the medians 2×).
        assert!(close(evaluator.chain_estimate(&current, 3.6e-5, 4e-5, 0.8), 1.6e-5));
        // A wrecked ratio (0.009 between two kernels of about 19 µs): the medians' ratio.
        assert!(close(evaluator.chain_estimate(&current, 1.9e-5, 2e-5, 0.009), 1.9e-5));
        // A chain scale 10× below the current kernel's median now: re-based on the median.
        assert!(close(evaluator.chain_estimate(&current, 1e-4, 2e-4, 0.5), 1e-4));
        // A current kernel the chain has no estimate of: its median.
        let other = Kernel::Written { source: String::new(), flags: Vec::new() };
        assert!(close(evaluator.chain_estimate(&other, 1e-4, 2e-4, 0.5), 1e-4));
    }
}
