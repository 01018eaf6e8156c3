//! The search loop.

use std::collections::HashSet;
use std::hash::Hash;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Makes a new candidate from the current one (a random legal mutation, a rewrite, an LLM's
/// kernel). `N` is the evaluator's note on each step (`Evaluate::Note`).
pub trait Propose<C, N> {
    fn name(&self) -> &str;
    fn propose(&mut self, current: &C, rng: &mut ChaCha8Rng) -> Proposal<C>;
    /// Sees every step of the search, whoever proposed it: what was accepted, rejected and why.
    fn observe(&mut self, _event: &Event<C, N>) {}
    /// Whether its candidates cost much to make (a language model's): they are always measured,
    /// never dropped for a proposal the cost model likes better.
    fn costly(&self) -> bool {
        false
    }
    /// Whether its next proposal from `current` is expected to be far faster than anything the
    /// others offer (a sketch while the chain is still at the naive kernel; a graph rewriting
    /// made orders of magnitude cheaper): it is then asked first in a round, whatever the
    /// bandit's weights, and its proposal is measured first.
    fn leading(&self, _current: &C) -> bool {
        false
    }
}

/// A proposer's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Proposal<C> {
    Candidate(C),
    /// Nothing this time (an LLM's reply has not come yet, no mutation applied); ask again later.
    NotNow,
    /// Nothing ever again (its budget is spent, its endpoint is gone).
    Exhausted,
}

/// How long the search sleeps when no proposer has a candidate ready.
const IDLE: Duration = Duration::from_millis(20);

/// Judges a candidate in two tiers, as STOKE does: a cheap first look at every candidate
/// (built, screened, timed against the current one), and the full verification only for a
/// candidate the chain is about to take.
pub trait Evaluate<C> {
    /// What the evaluator learned about a candidate beyond what the search needs (its source,
    /// why it was rejected, its failing inputs): carried by the step's [`Event`] to the
    /// proposers and the caller.
    type Note;
    /// Predicted times of a round's proposals (on any scale that orders them), so that the most
    /// promising are measured; `None` while the evaluator cannot tell (too little measured yet).
    fn rank(&mut self, _proposals: &[C]) -> Option<Vec<f64>> {
        None
    }
    /// Whether [`Evaluate::rank`] would answer now (so that a round may draw more proposals,
    /// [`SearchConfig::ranked_pool`]).
    fn ranks(&self) -> bool {
        false
    }
    /// Called with each batch before its candidates are evaluated one by one: the place to build
    /// them in parallel (timing stays serial).
    fn prepare(&mut self, _batch: &[C]) {}
    /// Called with a batch that may come next (drawn ahead, see [`SearchConfig::ahead`]) before
    /// the current batch is evaluated: the place to start building it in the background.
    fn prefetch(&mut self, _batch: &[C]) {}
    /// The first tier: `Timed` if the candidate passed the screen, with its interleaved time
    /// against `current`; `Rejected` otherwise.
    fn evaluate(&mut self, candidate: &C, current: &C) -> (Evaluation, Self::Note);
    /// The second tier, for a candidate the first passed and the chain is about to move to (or
    /// record as its best): the full verification. `false` if it rejected the candidate (why is
    /// written into the note).
    fn confirm(&mut self, _candidate: &C, _note: &mut Self::Note) -> bool {
        true
    }
}

/// What became of a candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Evaluation {
    /// Verified in full (both tiers); its median time, and the interleaved time ratio
    /// candidate/current as (median, p10, p90) over pairs.
    Timed { seconds: f64, ratio: (f64, f64, f64) },
    /// Passed the first tier but slower than the current kernel, and the chain did not move to
    /// it: not verified in full. Its time and ratio as for `Timed`.
    Slower { seconds: f64, ratio: (f64, f64, f64) },
    /// Not a valid kernel (illegal schedule, compile error, rejected by the verifier in either
    /// tier); the evaluator's note says why.
    Rejected,
}

#[derive(Debug, Clone)]
pub struct SearchConfig {
    pub seed: u64,
    /// Metropolis–Hastings temperature on log time: a candidate `r` times slower than the
    /// current one is accepted with probability `exp(−ln r / T)`. At 0.05 a 5% slower step is
    /// taken about a third of the time.
    pub temperature: f64,
    /// Evaluations without a new best before the chain restarts from the best.
    pub restart_after: usize,
    pub max_evaluations: usize,
    /// Candidates proposed from the same current one and prepared together.
    pub batch: usize,
    /// Proposals drawn per round: when more than `batch`, the evaluator ranks them
    /// (`Evaluate::rank`) and only the `batch` most promising are measured; the others are
    /// dropped unmeasured and cost no evaluation.
    pub pool: usize,
    /// Proposals drawn per round while the evaluator ranks them ([`Evaluate::ranks`]): a
    /// trusted model lets the search build many and measure few.
    pub ranked_pool: usize,
    /// The share of ranked rounds measured whole, an ablation: the first `batch` of a round are
    /// what the model picked, and the round's best measured time against theirs is its regret
    /// ([`Ablation`]). At most `pool` proposals are measured in such a round.
    pub ablation: f64,
    /// Draw the next round from the current candidate before this round is measured, and hand it
    /// to [`Evaluate::prefetch`] (its builds overlap this round's measuring). Its candidates are
    /// measured against the chain's current candidate when their turn comes, as the second of
    /// a batch is when the first moved the chain. Costly proposers are not asked ahead (their
    /// proposals are made from the incumbent of the moment).
    pub ahead: bool,
}

impl Default for SearchConfig {
    fn default() -> SearchConfig {
        SearchConfig { seed: 0, temperature: 0.05, restart_after: 40, max_evaluations: 200, batch: 1, pool: 1, ranked_pool: 1, ablation: 0.0, ahead: false }
    }
}

/// Why the search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EvaluationBudget,
    /// Every proposer is exhausted.
    Exhausted,
    /// The caller's stop condition (wall time, roofline target, Ctrl-C).
    Stopped,
}

/// One step of the search, for the store and the progress display.
#[derive(Debug, Clone, PartialEq)]
pub struct Event<C, N> {
    pub evaluation: usize,
    pub proposer: String,
    pub candidate: C,
    pub outcome: Evaluation,
    /// Whether the chain moved to the candidate.
    pub moved: bool,
    /// Whether it is a new best (faster beyond the noise: the p90 ratio against the best is
    /// below 1).
    pub new_best: bool,
    /// Whether the chain, long without a new best, went back to the best after this step.
    pub restarted: bool,
    /// The evaluator's note on the candidate.
    pub note: N,
    /// Set when the candidate was measured in a round measured whole ([`SearchConfig::ablation`]).
    pub ablation: Option<Ablation>,
}

/// A candidate's place in a round measured whole: the round (a random number, the same for its
/// candidates) and whether it was among those the ranking picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ablation {
    pub round: u64,
    pub picked: bool,
}

/// A proposal chosen to be measured: its proposer, itself, and its place in a round measured
/// whole.
type Chosen<C> = (usize, C, Option<Ablation>);

pub struct Search<C> {
    pub config: SearchConfig,
    pub best: C,
    pub best_seconds: f64,
    current: C,
    current_seconds: f64,
    rng: ChaCha8Rng,
    /// Per proposer: (tries, improvements).
    record: Vec<(usize, usize)>,
    evaluations: usize,
    since_best: usize,
    /// Every candidate chosen to be measured in this session, and the start: a proposal among
    /// them is measured again only when a round has too few others (see [`Search::choose`]).
    measured: HashSet<C>,
}

/// Draws a round may make per proposal it wants, at most (proposals made twice are not kept).
const DRAWS: usize = 4;

/// Adds a proposal to a round unless the round holds it already; a costly proposer's is always
/// added (each of its proposals is measured, see [`Propose::costly`]).
fn push<C: Eq>(proposed: &mut Vec<(usize, C)>, k: usize, candidate: C, costly: bool) {
    if costly || !proposed.iter().any(|(_, c)| *c == candidate) {
        proposed.push((k, candidate));
    }
}

impl<C: Clone + Eq + Hash> Search<C> {
    /// Starts from `start` (the naive kernel) taking `seconds`.
    pub fn new(config: SearchConfig, start: C, seconds: f64) -> Search<C> {
        Search::resume(config, (start.clone(), seconds), (start, seconds), 0, Vec::new())
    }

    /// Continues a search that had made `evaluations` evaluations, with its best and current
    /// candidates and its proposers' record, as a store keeps them.
    pub fn resume(config: SearchConfig, best: (C, f64), current: (C, f64), evaluations: usize, record: Vec<(usize, usize)>) -> Search<C> {
        // A different stream than the interrupted session's, reproducible from the same seed.
        let rng = ChaCha8Rng::seed_from_u64(config.seed ^ (evaluations as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let measured = HashSet::from([best.0.clone(), current.0.clone()]);
        Search { config, best: best.0, best_seconds: best.1, current: current.0, current_seconds: current.1, rng, record, evaluations, since_best: 0, measured }
    }

    /// Runs until the evaluation budget is spent or `stop` says so; `on_event` sees every step.
    pub fn run<E: Evaluate<C>>(
        &mut self,
        proposers: &mut [&mut dyn Propose<C, E::Note>],
        evaluator: &mut E,
        mut stop: impl FnMut(&Search<C>) -> bool,
        mut on_event: impl FnMut(Event<C, E::Note>),
    ) -> StopReason {
        self.record.resize(proposers.len(), (0, 0));
        let mut exhausted = vec![false; proposers.len()];
        // A round drawn ahead.
        let mut ahead: Option<Vec<Chosen<C>>> = None;
        loop {
            if self.evaluations >= self.config.max_evaluations {
                return StopReason::EvaluationBudget;
            }
            if stop(self) {
                return StopReason::Stopped;
            }
            let wanted = self.config.batch.clamp(1, self.config.max_evaluations - self.evaluations);
            let chosen = match ahead.take() {
                Some(mut round) => {
                    // A round measured whole keeps its proposals (within the budget).
                    let whole = round.first().is_some_and(|c| c.2.is_some());
                    round.truncate(if whole { self.config.max_evaluations - self.evaluations } else { wanted });
                    round
                }
                None => self.draw(proposers, evaluator, &mut exhausted, wanted, true),
            };
            let mut chosen = chosen;
            chosen.truncate(self.config.max_evaluations - self.evaluations);
            if chosen.is_empty() {
                if exhausted.iter().all(|&e| e) {
                    return StopReason::Exhausted;
                }
                std::thread::sleep(IDLE);
                continue;
            }
            let mut batch = Vec::new();
            for (k, candidate, ablation) in chosen {
                self.record[k].0 += 1;
                self.evaluations += 1;
                batch.push((k, self.evaluations, candidate, ablation));
            }
            let candidates: Vec<C> = batch.iter().map(|(_, _, c, _)| c.clone()).collect();
            evaluator.prepare(&candidates);
            if self.config.ahead && self.evaluations < self.config.max_evaluations {
                let wanted = self.config.batch.clamp(1, self.config.max_evaluations - self.evaluations);
                let round = self.draw(proposers, evaluator, &mut exhausted, wanted, false);
                if !round.is_empty() {
                    evaluator.prefetch(&round.iter().map(|(_, c, _)| c.clone()).collect::<Vec<C>>());
                    ahead = Some(round);
                }
            }
            for (k, evaluation, candidate, ablation) in batch {
                if stop(self) {
                    return StopReason::Stopped;
                }
                let mut event = self.step(k, evaluation, proposers[k].name(), candidate, evaluator);
                event.ablation = ablation;
                for p in proposers.iter_mut() {
                    p.observe(&event);
                }
                on_event(event);
            }
        }
    }

    /// A round's proposals from the current candidate, the `wanted` most promising of them (see
    /// [`Search::choose`]); empty if no proposer had one. Costly proposers are asked only if
    /// `costly`; an exhausted proposer is marked in `exhausted`.
    fn draw<E: Evaluate<C>>(&mut self, proposers: &mut [&mut dyn Propose<C, E::Note>], evaluator: &mut E, exhausted: &mut [bool], wanted: usize, costly: bool) -> Vec<Chosen<C>> {
        let mut proposed: Vec<(usize, C)> = Vec::new();
        // Proposers with nothing to offer in this round.
        let mut idle: Vec<bool> = exhausted.iter().zip(proposers.iter()).map(|(&e, p)| e || (!costly && p.costly())).collect();
        // Leading proposers first, once each: their proposals head the round.
        let mut leads = 0;
        for k in 0..proposers.len() {
            if idle[k] || !proposers[k].leading(&self.current) {
                continue;
            }
            match proposers[k].propose(&self.current, &mut self.rng) {
                Proposal::Candidate(candidate) => push(&mut proposed, k, candidate, proposers[k].costly()),
                Proposal::NotNow => idle[k] = true,
                Proposal::Exhausted => {
                    exhausted[k] = true;
                    idle[k] = true;
                }
            }
            leads = proposed.len();
        }
        let pool = if evaluator.ranks() { self.config.ranked_pool.max(self.config.pool) } else { self.config.pool }.max(wanted);
        // Proposals made twice count once: a few more draws make up for them.
        let mut draws = 0;
        while proposed.len() < pool && draws < DRAWS * pool {
            draws += 1;
            let Some(k) = self.choose_proposer(&idle) else { break };
            match proposers[k].propose(&self.current, &mut self.rng) {
                Proposal::Candidate(candidate) => push(&mut proposed, k, candidate, proposers[k].costly()),
                Proposal::NotNow => idle[k] = true,
                Proposal::Exhausted => {
                    tracing::info!(proposer = proposers[k].name(), "proposer exhausted");
                    exhausted[k] = true;
                    idle[k] = true;
                }
            }
        }
        if proposed.is_empty() {
            return Vec::new();
        }
        self.choose(proposed, leads, wanted, proposers, evaluator)
    }

    /// The `wanted` proposals to measure: a costly proposer's first, then the `leads` first
    /// proposals (leading proposers', in their order), then the most promising by the evaluator's
    /// ranking for half the round (rounded up) and in the order proposed for the rest (all of it
    /// while it cannot rank); one measured before in this session, but for a lead, comes after all
    /// that were not (a ranking would pick the same favourite round after round, and each time
    /// learn nothing).
    /// A share of ranked rounds ([`SearchConfig::ablation`]) is measured whole, up to `pool`
    /// proposals, in that order.
    fn choose<E: Evaluate<C>>(&mut self, proposed: Vec<(usize, C)>, leads: usize, wanted: usize, proposers: &[&mut dyn Propose<C, E::Note>], evaluator: &mut E) -> Vec<Chosen<C>> {
        let chosen = self.order(proposed, leads, wanted, proposers, evaluator);
        self.measured.extend(chosen.iter().map(|(_, c, _)| c.clone()));
        chosen
    }

    fn order<E: Evaluate<C>>(&mut self, proposed: Vec<(usize, C)>, leads: usize, wanted: usize, proposers: &[&mut dyn Propose<C, E::Note>], evaluator: &mut E) -> Vec<Chosen<C>> {
        // A costly proposal is never dropped: the round grows to hold them all.
        let wanted = wanted.max(proposed.iter().filter(|(k, _)| proposers[*k].costly()).count());
        if proposed.len() <= wanted {
            return proposed.into_iter().map(|(k, c)| (k, c, None)).collect();
        }
        let candidates: Vec<C> = proposed.iter().map(|(_, c)| c.clone()).collect();
        let predicted = evaluator.rank(&candidates).filter(|p| p.len() == proposed.len());
        // Costly first; then leading ones in the order they were asked (the order of the
        // proposers), measured before or not (a lead is owed its measurement: a lease taken over
        // from a killed worker is judged, whoever timed that kernel already); then, of the rest,
        // those not measured before by predicted time (or as proposed), then those measured
        // before, in the same order.
        let class = |i: usize| if proposers[proposed[i].0].costly() { (false, false, 0) } else { (true, i >= leads && self.measured.contains(&proposed[i].1), i.min(leads)) };
        let mut order: Vec<usize> = (0..proposed.len()).collect();
        order.sort_by(|&a, &b| class(a).cmp(&class(b)).then_with(|| predicted.as_ref().map_or(std::cmp::Ordering::Equal, |p| p[a].total_cmp(&p[b]))));
        if predicted.is_some() {
            // The ranking fills half the round (rounded up), the proposers' own order the rest: a
            // model confidently wrong about a whole region (its prior from other specs said
            // streamed stores pay; on gelu_tanh they took twice the time) would otherwise keep
            // every round out of it.
            let mut as_proposed: Vec<usize> = (0..proposed.len()).collect();
            as_proposed.sort_by_key(|&i| class(i));
            let ranked: Vec<usize> = order.iter().copied().take(wanted.div_ceil(2)).collect();
            let own: Vec<usize> = as_proposed.into_iter().filter(|i| !ranked.contains(i)).take(wanted - ranked.len()).collect();
            let rest = order.iter().copied().filter(|i| !ranked.contains(i) && !own.contains(i));
            order = ranked.iter().chain(&own).copied().chain(rest).collect();
        }
        let mut slots: Vec<Option<(usize, C)>> = proposed.into_iter().map(Some).collect();
        let mut chosen: Vec<(usize, C)> = order.into_iter().map(|i| slots[i].take().expect("each index once")).collect();
        let whole = predicted.is_some() && self.config.ablation > 0.0 && self.rng.random_range(0.0..1.0) < self.config.ablation;
        tracing::debug!(proposed = chosen.len(), wanted, leads, ranked = predicted.is_some(), whole, "chose the most promising proposals");
        if whole {
            chosen.truncate(self.config.pool.max(wanted));
            // Random, so that workers' rounds in one store stay apart.
            let round = self.rng.random::<u64>() >> 16;
            return chosen.into_iter().enumerate().map(|(i, (k, c))| (k, c, Some(Ablation { round, picked: i < wanted }))).collect();
        }
        chosen.truncate(wanted);
        chosen.into_iter().map(|(k, c)| (k, c, None)).collect()
    }

    /// Evaluates one candidate and moves the chain: the first tier, the Metropolis–Hastings
    /// decision on its interleaved time ratio, and the second tier only if the chain takes it.
    fn step<E: Evaluate<C>>(&mut self, k: usize, evaluation: usize, proposer: &str, candidate: C, evaluator: &mut E) -> Event<C, E::Note> {
        let (mut outcome, mut note) = evaluator.evaluate(&candidate, &self.current);
        let (mut moved, mut new_best, mut restarted) = (false, false, false);
        if let Evaluation::Timed { seconds, ratio } = outcome {
            // Metropolis–Hastings on log time, with the interleaved ratio as the measure.
            let log_ratio = ratio.0.ln();
            let moves = log_ratio <= 0.0 || self.rng.random_range(0.0..1.0) < (-log_ratio / self.config.temperature).exp();
            // A new best must be faster than the current one beyond the noise, and faster
            // than the best so far.
            let best = ratio.2 < 1.0 && seconds < self.best_seconds;
            if !(moves || best) {
                outcome = Evaluation::Slower { seconds, ratio };
            } else if !evaluator.confirm(&candidate, &mut note) {
                outcome = Evaluation::Rejected;
            } else {
                (moved, new_best) = (moves, best);
            }
            if new_best {
                self.best = candidate.clone();
                self.best_seconds = seconds;
                self.record[k].1 += 1;
                self.since_best = 0;
            }
            if moved {
                self.current = candidate.clone();
                self.current_seconds = seconds;
            }
        }
        if !new_best {
            self.since_best += 1;
            if self.since_best >= self.config.restart_after {
                self.current = self.best.clone();
                self.current_seconds = self.best_seconds;
                self.since_best = 0;
                restarted = true;
            }
        }
        tracing::debug!(evaluation, proposer, moved, new_best, "search step");
        Event { evaluation, proposer: proposer.to_string(), candidate, outcome, moved, new_best, restarted, note, ablation: None }
    }

    /// A bandit: each proposer not `idle` is drawn with weight (improvements + 1) / (tries + 2).
    fn choose_proposer(&mut self, idle: &[bool]) -> Option<usize> {
        let weights: Vec<f64> = self.record.iter().zip(idle).map(|(&(tries, wins), &idle)| if idle { 0.0 } else { (wins as f64 + 1.0) / (tries as f64 + 2.0) }).collect();
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return None;
        }
        let mut x = self.rng.random_range(0.0..total);
        for (k, w) in weights.iter().enumerate() {
            if x < *w {
                return Some(k);
            }
            x -= w;
        }
        weights.iter().rposition(|&w| w > 0.0)
    }

    /// Tries and improvements per proposer, in the order they were given.
    pub fn proposer_record(&self) -> &[(usize, usize)] {
        &self.record
    }

    pub fn evaluations(&self) -> usize {
        self.evaluations
    }
}
