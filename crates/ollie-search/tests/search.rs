//! The search on a toy problem whose answer is known: candidates are integers, the "time" of n
//! is 1 + |n − 42| (with ±2% noise bands), one proposer steps by ±1 or ±5, another only offers
//! what it was given. The search must find 42, reproducibly, favour the useful proposer, and
//! never take a rejected candidate.

use ollie_search::{Evaluate, Evaluation, Event, Proposal, Propose, Search, SearchConfig, StopReason};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// Steps by ±1..=±10 (twenty proposals): enough for rounds of eight distinct ones.
struct WideSteps;
impl Propose<i64, Why> for WideSteps {
    fn name(&self) -> &str {
        "wide steps"
    }
    fn propose(&mut self, current: &i64, rng: &mut ChaCha8Rng) -> Proposal<i64> {
        let step = rng.random_range(1..=10) * if rng.random_range(0..2) == 0 { -1 } else { 1 };
        Proposal::Candidate(current + step)
    }
}

struct Steps;
impl Propose<i64, Why> for Steps {
    fn name(&self) -> &str {
        "steps"
    }
    fn propose(&mut self, current: &i64, rng: &mut ChaCha8Rng) -> Proposal<i64> {
        let step = [-5, -1, 1, 5][rng.random_range(0..4)];
        Proposal::Candidate(current + step)
    }
}

struct Same;
impl Propose<i64, Why> for Same {
    fn name(&self) -> &str {
        "same"
    }
    fn propose(&mut self, current: &i64, _: &mut ChaCha8Rng) -> Proposal<i64> {
        Proposal::Candidate(*current)
    }
}

/// The toy evaluator's note: why a candidate was rejected.
type Why = Option<String>;

/// Times n as 1 + |n − 42|; multiples of 7 other than 42 are rejected.
struct Toy;
impl Evaluate<i64> for Toy {
    type Note = Why;
    fn evaluate(&mut self, c: &i64, current: &i64) -> (Evaluation, Why) {
        if c % 7 == 0 && *c != 42 {
            return (Evaluation::Rejected, Some(format!("{c} is a multiple of 7")));
        }
        let t = |n: i64| 1.0 + (n - 42).abs() as f64;
        let r = t(*c) / t(*current);
        (Evaluation::Timed { seconds: t(*c), ratio: (r, r * 0.98, r * 1.02) }, None)
    }
}

/// The best, every step, and the proposers' record.
type Outcome = (i64, Vec<Event<i64, Why>>, Vec<(usize, usize)>);

fn run(seed: u64) -> Outcome {
    let mut search = Search::new(SearchConfig { seed, max_evaluations: 400, ..Default::default() }, 0i64, 43.0);
    let mut events = Vec::new();
    let (mut steps, mut same) = (Steps, Same);
    let reason = search.run(&mut [&mut steps, &mut same], &mut Toy, |_| false, |e| events.push(e));
    assert_eq!(reason, StopReason::EvaluationBudget);
    (search.best, events, search.proposer_record().to_vec())
}

#[test]
fn the_search_finds_the_optimum_reproducibly() {
    let (best, events, record) = run(7);
    assert_eq!(best, 42);
    assert_eq!(events.len(), 400);
    let (again, events_again, _) = run(7);
    assert_eq!((again, events_again), (best, events.clone()), "same seed, same search");
    // The useful proposer gets most of the effort and all the improvements.
    assert!(record[0].0 > record[1].0, "{record:?}");
    assert!(record[0].1 > 0 && record[1].1 == 0, "{record:?}");
    // Rejected candidates never move the chain; bests only improve.
    let rejected: Vec<_> = events.iter().filter(|e| e.outcome == Evaluation::Rejected).collect();
    assert!(!rejected.is_empty());
    assert!(rejected.iter().all(|e| !e.moved && !e.new_best && e.note.as_ref().is_some_and(|why| why.ends_with("is a multiple of 7"))), "the step carries the evaluator's note");
    let bests: Vec<i64> = events.iter().filter(|e| e.new_best).map(|e| (e.candidate - 42).abs()).collect();
    assert!(bests.windows(2).all(|w| w[1] < w[0]), "{bests:?}");
}

/// [`Toy`] whose second tier rejects 38 (a kernel that passes the screen but not the full
/// verification), counting what reaches that tier.
struct Tiered {
    confirmed: Vec<i64>,
}
impl Evaluate<i64> for Tiered {
    type Note = Why;
    fn evaluate(&mut self, c: &i64, current: &i64) -> (Evaluation, Why) {
        Toy.evaluate(c, current)
    }
    fn confirm(&mut self, c: &i64, why: &mut Why) -> bool {
        self.confirmed.push(*c);
        if *c == 38 {
            *why = Some("fails the full protocol".into());
            return false;
        }
        true
    }
}

#[test]
fn only_candidates_the_chain_takes_are_verified_in_full_and_a_failure_there_is_a_rejection() {
    let mut search = Search::new(SearchConfig { seed: 3, max_evaluations: 300, ..Default::default() }, 0i64, 43.0);
    let mut events = Vec::new();
    let mut tiered = Tiered { confirmed: Vec::new() };
    search.run(&mut [&mut Steps], &mut tiered, |_| false, |e| events.push(e));
    assert_eq!(search.best, 42);
    // The second tier saw exactly the candidates that moved the chain, and those it rejected.
    let taken: Vec<i64> = events.iter().filter(|e| e.moved || (e.outcome == Evaluation::Rejected && e.note.as_deref() == Some("fails the full protocol"))).map(|e| e.candidate).collect();
    assert_eq!(tiered.confirmed, taken);
    assert!(tiered.confirmed.contains(&38), "38 was proposed and would have been taken");
    assert!(events.iter().filter(|e| e.candidate == 38).all(|e| !e.moved && !e.new_best && matches!(e.outcome, Evaluation::Rejected | Evaluation::Slower { .. })));
    // A slower candidate the chain declined was never verified in full, and moved nothing.
    let slower: Vec<&Event<i64, Why>> = events.iter().filter(|e| matches!(e.outcome, Evaluation::Slower { .. })).collect();
    assert!(!slower.is_empty());
    assert!(slower.iter().all(|e| !e.moved && !e.new_best));
    assert!(events.iter().all(|e| matches!(e.outcome, Evaluation::Timed { .. }) == e.moved));
}

#[test]
fn the_stop_condition_ends_the_search() {
    let mut search = Search::new(SearchConfig { seed: 1, ..Default::default() }, 0i64, 43.0);
    let mut steps = Steps;
    let reason = search.run(&mut [&mut steps], &mut Toy, |s| s.evaluations() >= 10, |_| {});
    assert_eq!(reason, StopReason::Stopped);
    assert_eq!(search.evaluations(), 10);
}

/// Offers a jump straight to the answer only every third time it is asked, and gives out after
/// `left` candidates, telling what it saw.
struct Slow {
    asked: usize,
    left: usize,
    seen: Vec<(i64, bool)>,
}
impl Propose<i64, Why> for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn propose(&mut self, current: &i64, _: &mut ChaCha8Rng) -> Proposal<i64> {
        if self.left == 0 {
            return Proposal::Exhausted;
        }
        self.asked += 1;
        if !self.asked.is_multiple_of(3) {
            return Proposal::NotNow;
        }
        self.left -= 1;
        Proposal::Candidate(if self.left == 0 { 42 } else { current + 1 })
    }
    fn observe(&mut self, event: &Event<i64, Why>) {
        self.seen.push((event.candidate, event.new_best));
    }
}

#[test]
fn a_proposer_with_nothing_ready_costs_no_evaluation_and_an_exhausted_one_ends_the_search() {
    let mut search = Search::new(SearchConfig { seed: 3, max_evaluations: 100, ..Default::default() }, 0i64, 43.0);
    let mut slow = Slow { asked: 0, left: 4, seen: Vec::new() };
    let reason = search.run(&mut [&mut slow], &mut Toy, |_| false, |_| {});
    assert_eq!(reason, StopReason::Exhausted);
    assert_eq!(search.evaluations(), 4, "only candidates count as evaluations");
    assert_eq!(search.best, 42);
    assert_eq!(slow.seen, vec![(1, true), (2, true), (3, true), (42, true)], "the proposer observes every step");
}

#[test]
fn other_proposers_go_on_while_one_has_nothing_ready() {
    let mut search = Search::new(SearchConfig { seed: 5, max_evaluations: 60, ..Default::default() }, 0i64, 43.0);
    let mut slow = Slow { asked: 0, left: 2, seen: Vec::new() };
    let mut steps = Steps;
    let mut events = Vec::new();
    let reason = search.run(&mut [&mut slow, &mut steps], &mut Toy, |_| false, |e| events.push(e.proposer.clone()));
    assert_eq!(reason, StopReason::EvaluationBudget);
    assert_eq!(events.len(), 60);
    assert_eq!(events.iter().filter(|p| *p == "slow").count(), 2);
    assert_eq!(slow.seen.len(), 60, "it saw the other proposer's steps too");
}

/// [`Toy`] that also ranks proposals by their true time, remembering each round it was asked
/// about and what it then measured.
#[derive(Default)]
struct Ranked {
    rounds: Vec<Vec<i64>>,
    measured: Vec<i64>,
}
impl Evaluate<i64> for Ranked {
    type Note = Why;
    fn rank(&mut self, proposals: &[i64]) -> Option<Vec<f64>> {
        self.rounds.push(proposals.to_vec());
        Some(proposals.iter().map(|c| (c - 42).abs() as f64).collect())
    }
    fn evaluate(&mut self, c: &i64, current: &i64) -> (Evaluation, Why) {
        self.measured.push(*c);
        Toy.evaluate(c, current)
    }
}

/// Offers a poor kernel (1000) every time, as a language model might: a costly proposal, which
/// the ranking would drop if it could.
#[derive(Default)]
struct Costly {
    offered: usize,
}
impl Propose<i64, Why> for Costly {
    fn name(&self) -> &str {
        "costly"
    }
    fn propose(&mut self, _: &i64, _: &mut ChaCha8Rng) -> Proposal<i64> {
        self.offered += 1;
        Proposal::Candidate(1000)
    }
    fn costly(&self) -> bool {
        true
    }
}

#[test]
fn of_a_pool_of_proposals_only_the_most_promising_is_measured_and_counted() {
    let config = SearchConfig { seed: 11, max_evaluations: 30, batch: 1, pool: 4, ..Default::default() };
    let mut search = Search::new(config, 0i64, 43.0);
    let mut ranked = Ranked::default();
    let mut events = 0;
    search.run(&mut [&mut Steps], &mut ranked, |_| false, |_| events += 1);
    assert_eq!((events, search.evaluations()), (30, 30), "dropped proposals cost no evaluation");
    assert_eq!(ranked.rounds.len(), 30);
    // Of four draws, each proposal once; the best of those not measured before is measured.
    let mut before = std::collections::HashSet::from([0i64]);
    for (round, measured) in ranked.rounds.iter().zip(&ranked.measured) {
        assert!(!round.is_empty() && round.len() <= 4 && round.iter().collect::<std::collections::HashSet<_>>().len() == round.len(), "{round:?}");
        let fresh: Vec<i64> = round.iter().copied().filter(|c| !before.contains(c)).collect();
        let from = if fresh.is_empty() { round } else { &fresh };
        let best = from.iter().map(|c| (c - 42).abs()).min().unwrap();
        assert_eq!((measured - 42).abs(), best, "{measured} measured of {round:?} ({before:?} before)");
        before.insert(*measured);
    }
    // Measuring the best of four steps reaches 42 in about 9 rounds (steps of 5 toward it).
    assert_eq!(search.best, 42);
}

/// [`Ranked`] that says it ranks, so that rounds draw the larger pool.
#[derive(Default)]
struct Trusted(Ranked);
impl Evaluate<i64> for Trusted {
    type Note = Why;
    fn rank(&mut self, proposals: &[i64]) -> Option<Vec<f64>> {
        self.0.rank(proposals)
    }
    fn ranks(&self) -> bool {
        true
    }
    fn evaluate(&mut self, c: &i64, current: &i64) -> (Evaluation, Why) {
        self.0.evaluate(c, current)
    }
}

#[test]
fn a_trusted_ranking_draws_the_larger_pool_and_a_share_of_rounds_is_measured_whole() {
    let config = SearchConfig { seed: 7, max_evaluations: 200, batch: 1, pool: 3, ranked_pool: 8, ablation: 0.25, ..Default::default() };
    let mut search = Search::new(config, 0i64, 43.0);
    let mut trusted = Trusted::default();
    let mut events = Vec::new();
    search.run(&mut [&mut WideSteps], &mut trusted, |_| false, |e| events.push((e.candidate, e.ablation)));
    assert!(trusted.0.rounds.iter().all(|r| r.len() == 8), "every round drew the ranked pool");
    // Rounds measured whole: `pool` proposals in the ranking's order (those measured before
    // last), the first one picked.
    let mut whole: std::collections::BTreeMap<u64, Vec<(i64, bool, bool)>> = Default::default();
    let mut before = std::collections::HashSet::from([0i64]);
    for (c, a) in &events {
        if let Some(a) = a {
            whole.entry(a.round).or_default().push((*c, a.picked, before.contains(c)));
        }
        before.insert(*c);
    }
    let rounds = trusted.0.rounds.len();
    assert!(whole.len() >= rounds / 8 && whole.len() <= rounds / 2, "{} of {rounds} rounds measured whole", whole.len());
    // (The budget may cut the last one short.)
    assert!(whole.values().filter(|m| m.len() != 3).count() <= 1, "{whole:?}");
    for measured in whole.values() {
        assert_eq!(measured.iter().map(|m| m.1).collect::<Vec<_>>(), [true, false, false][..measured.len()]);
        let order: Vec<(bool, i64)> = measured.iter().map(|m| (m.2, (m.0 - 42).abs())).collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "in the ranking's order: {measured:?}");
    }
    assert_eq!(events.len(), 200);
}

/// Ranks the largest proposal first, whatever it measured: a model with a favourite.
#[derive(Default)]
struct Favouring(Ranked);
impl Evaluate<i64> for Favouring {
    type Note = Why;
    fn rank(&mut self, proposals: &[i64]) -> Option<Vec<f64>> {
        self.0.rounds.push(proposals.to_vec());
        Some(proposals.iter().map(|&c| -(c as f64)).collect())
    }
    fn ranks(&self) -> bool {
        true
    }
    fn evaluate(&mut self, c: &i64, current: &i64) -> (Evaluation, Why) {
        self.0.evaluate(c, current)
    }
}

#[test]
fn a_ranking_measures_its_favourite_once_while_the_round_holds_others() {
    // From the optimum every step is slower: the chain stays at 42, and its rounds draw from the
    // same twenty proposals; the ranking's favourite, 52, is in nearly every one.
    let config = SearchConfig { seed: 9, max_evaluations: 12, batch: 1, pool: 2, ranked_pool: 8, ..Default::default() };
    let mut search = Search::new(config, 42i64, 1.0);
    let mut favouring = Favouring::default();
    search.run(&mut [&mut WideSteps], &mut favouring, |_| false, |_| {});
    let measured = &favouring.0.measured;
    assert_eq!(measured.len(), 12);
    assert_eq!(measured.iter().collect::<std::collections::HashSet<_>>().len(), 12, "each measured once: {measured:?}");
    // Each the favourite of its round's proposals not measured before.
    for (i, (round, m)) in favouring.0.rounds.iter().zip(measured).enumerate() {
        assert_eq!(round.iter().filter(|c| !measured[..i].contains(c)).max(), Some(m), "{round:?}");
    }
}

#[test]
fn a_ranking_fills_half_a_round_and_the_proposers_order_the_rest() {
    let config = SearchConfig { seed: 5, max_evaluations: 12, batch: 2, pool: 2, ranked_pool: 8, ..Default::default() };
    let mut search = Search::new(config, 42i64, 1.0);
    let mut favouring = Favouring::default();
    search.run(&mut [&mut WideSteps], &mut favouring, |_| false, |_| {});
    let measured = &favouring.0.measured;
    assert_eq!((measured.len(), favouring.0.rounds.len()), (12, 6));
    // Each round: the ranking's favourite of the proposals not measured before, then the first
    // of the others as they were proposed.
    let mut before = vec![42];
    for (round, pair) in favouring.0.rounds.iter().zip(measured.chunks(2)) {
        let fresh: Vec<i64> = round.iter().copied().filter(|c| !before.contains(c)).collect();
        let favourite = *fresh.iter().max().unwrap();
        let own = *fresh.iter().find(|&&c| c != favourite).unwrap();
        assert_eq!(pair, [favourite, own], "of {round:?}, {before:?} measured before");
        before.extend_from_slice(pair);
    }
}

#[test]
fn a_costly_proposal_is_always_measured() {
    let config = SearchConfig { seed: 2, max_evaluations: 40, batch: 1, pool: 3, ..Default::default() };
    let mut search = Search::new(config, 0i64, 43.0);
    let mut ranked = Ranked::default();
    let mut measured = 0;
    let (mut steps, mut costly) = (Steps, Costly::default());
    search.run(&mut [&mut steps, &mut costly], &mut ranked, |_| false, |e| measured += usize::from(e.proposer == "costly"));
    assert!(ranked.rounds.iter().any(|r| r.contains(&1000) && r.len() > 1), "it was ranked against better proposals");
    assert!(measured > 0);
    assert_eq!(measured, costly.offered, "every costly proposal was measured, though ranked last");
}

/// [`Toy`] that logs what it was asked to build ahead and what it measured, in order.
#[derive(Default)]
struct Prefetching {
    log: Vec<(&'static str, Vec<i64>)>,
}
impl Evaluate<i64> for Prefetching {
    type Note = Why;
    fn prefetch(&mut self, batch: &[i64]) {
        self.log.push(("ahead", batch.to_vec()));
    }
    fn evaluate(&mut self, c: &i64, current: &i64) -> (Evaluation, Why) {
        self.log.push(("measured", vec![*c]));
        Toy.evaluate(c, current)
    }
}

#[test]
fn drawn_ahead_each_round_is_handed_over_before_the_round_before_it_is_measured() {
    let config = SearchConfig { seed: 4, max_evaluations: 200, batch: 2, ahead: true, ..Default::default() };
    let mut search = Search::new(config, 0i64, 43.0);
    let mut evaluator = Prefetching::default();
    assert_eq!(search.run(&mut [&mut Steps], &mut evaluator, |_| false, |_| {}), StopReason::EvaluationBudget);
    let measured: Vec<i64> = evaluator.log.iter().filter(|e| e.0 == "measured").map(|e| e.1[0]).collect();
    let ahead: Vec<i64> = evaluator.log.iter().filter(|e| e.0 == "ahead").flat_map(|e| e.1.clone()).collect();
    assert_eq!(measured.len(), 200);
    // Every round but the first was drawn ahead, none past the budget, and measured as drawn.
    assert_eq!(ahead, measured[2..]);
    // The log: ahead(round 2), round 1 measured, ahead(round 3), round 2 measured, ...
    for (i, entry) in evaluator.log.iter().enumerate() {
        let expected = if i == 3 * 99 { "measured" } else if i % 3 == 0 { "ahead" } else { "measured" };
        assert_eq!(entry.0, expected, "entry {i} of {:?}", &evaluator.log[..i.min(8)]);
    }
    // Drawn from the chain's candidate of a round before, the search still finds the answer.
    assert_eq!(search.best, 42);
}

#[test]
fn costly_proposers_are_not_asked_ahead_and_none_of_their_proposals_is_lost() {
    let config = SearchConfig { seed: 2, max_evaluations: 40, batch: 2, pool: 3, ahead: true, ..Default::default() };
    let mut search = Search::new(config, 0i64, 43.0);
    let mut evaluator = Prefetching::default();
    let (mut steps, mut costly) = (Steps, Costly::default());
    let mut measured = 0;
    search.run(&mut [&mut steps, &mut costly], &mut evaluator, |_| false, |e| measured += usize::from(e.proposer == "costly"));
    assert!(measured > 0);
    assert_eq!(measured, costly.offered, "every costly proposal was measured");
    assert!(evaluator.log.iter().filter(|e| e.0 == "ahead").all(|e| !e.1.contains(&1000)), "none was drawn ahead");
}

/// Leads while the chain is at 0: offers 40 (far better than a step from 0), the bandit aside.
#[derive(Default)]
struct Leader {
    offered: usize,
}
impl Propose<i64, Why> for Leader {
    fn name(&self) -> &str {
        "leader"
    }
    fn propose(&mut self, _: &i64, _: &mut ChaCha8Rng) -> Proposal<i64> {
        self.offered += 1;
        Proposal::Candidate(40)
    }
    fn leading(&self, current: &i64) -> bool {
        *current == 0
    }
}

/// [`Ranked`] with its ranking upside down: it predicts the worst proposal the fastest.
#[derive(Default)]
struct Contrary(Ranked);
impl Evaluate<i64> for Contrary {
    type Note = Why;
    fn rank(&mut self, proposals: &[i64]) -> Option<Vec<f64>> {
        self.0.rank(proposals).map(|p| p.into_iter().map(|t| -t).collect())
    }
    fn evaluate(&mut self, c: &i64, current: &i64) -> (Evaluation, Why) {
        self.0.evaluate(c, current)
    }
}

/// A leading proposer is asked first and its proposal measured first, even where the ranking
/// prefers every other proposal; once it stops leading (the chain left 0), the ranking decides.
#[test]
fn a_leading_proposal_is_measured_first() {
    let config = SearchConfig { seed: 4, max_evaluations: 20, batch: 1, pool: 4, ..Default::default() };
    let mut search = Search::new(config, 0i64, 43.0);
    let mut contrary = Contrary::default();
    let mut events = Vec::new();
    let (mut steps, mut leader) = (Steps, Leader::default());
    search.run(&mut [&mut steps, &mut leader], &mut contrary, |_| false, |e| events.push((e.proposer, e.candidate)));
    assert_eq!(events[0], ("leader".to_string(), 40), "{events:?}");
    assert_eq!(contrary.0.rounds[0][0], 40, "asked before the bandit draws: {:?}", contrary.0.rounds[0]);
    // Once the chain has left 0, nothing leads: the contrary ranking picks what it likes.
    assert!(contrary.0.rounds[1..].iter().zip(&contrary.0.measured[1..]).any(|(round, m)| round[0] != *m), "{:?}", contrary.0.rounds);
}

/// Leads from 42 with 30, a kernel owed a verdict again and again (as a lease taken over from a
/// killed worker is, whoever timed that kernel before).
struct Owed;
impl Propose<i64, Why> for Owed {
    fn name(&self) -> &str {
        "owed"
    }
    fn propose(&mut self, _: &i64, _: &mut ChaCha8Rng) -> Proposal<i64> {
        Proposal::Candidate(30)
    }
    fn leading(&self, current: &i64) -> bool {
        *current == 42
    }
}

#[test]
fn a_leading_proposal_is_measured_though_measured_before() {
    let config = SearchConfig { seed: 6, max_evaluations: 5, batch: 1, pool: 4, ranked_pool: 8, ..Default::default() };
    let mut search = Search::new(config, 42i64, 1.0);
    let mut favouring = Favouring::default();
    let (mut steps, mut owed) = (WideSteps, Owed);
    search.run(&mut [&mut steps, &mut owed], &mut favouring, |_| false, |_| {});
    assert_eq!(favouring.0.measured, [30; 5], "the chain stays at 42, and 30 leads every round");
}
