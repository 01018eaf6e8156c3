//! The `rewrite` proposer: kernels for graphs that algebraic rewriting (`ollie-rewrite`) found
//! equal to the spec's and cheaper by its cost model. It carries the current kernel's schedule
//! over to another graph — a variant or the spec's own — where it replays: loops are named in
//! the order the lowering meets them, so a schedule of the shared part of two graphs usually
//! carries over. First, each time the chain moves to a kernel of the spec's own graph, that
//! kernel's schedule on the cheapest variant; between those, each variant's first sketches (and
//! its naive nest) in turn until each has been measured; then the current schedule on a graph
//! drawn at random.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use std::collections::HashMap;

use ollie_loops::{BufferKind, LoopNest, Schedule};

use crate::offers::Offers;
use crate::sketch::sketches;
use crate::space::Target;
use crate::{initial_schedule, Event, Kernel, Proposal, Propose, Variant};

/// Sketches offered per variant, besides its naive nest.
const SKETCHES: usize = 3;

/// A variant whose cost is at most this share of the spec's (rewriting's model of FLOPs and
/// bytes) leads: its first sketch is measured before anything else.
const FAR_CHEAPER: f64 = 0.1;

pub struct Rewrite {
    /// The spec's own naive nest.
    naive: LoopNest,
    variants: Vec<Variant>,
    /// Kernels not yet measured.
    offers: Offers,
    /// The first sketches of the variants far cheaper than the spec.
    leads: Vec<Kernel>,
    /// Kernels the search has measured (or rejected): the carried-over schedules not to offer
    /// again; the latest [`MEASURED`], so that a day-long search's memory stays flat.
    measured: (std::collections::HashSet<Kernel>, std::collections::VecDeque<Kernel>),
    /// The carried-over kernel offered in this round (a round offers it once).
    carried: Option<Kernel>,
}

/// Measured kernels remembered, at most.
const MEASURED: usize = 2048;

impl Rewrite {
    /// Proposes kernels for `variants` (cheapest first, each with its cost as a share of the
    /// spec's) of the graph whose naive nest is `naive`, sketched for `target`.
    pub fn new(naive: LoopNest, variants: Vec<(Variant, f64)>, target: &Target) -> Rewrite {
        let (variants, shares): (Vec<Variant>, Vec<f64>) = variants.into_iter().unzip();
        let per_variant: Vec<Vec<Kernel>> = variants
            .iter()
            .map(|v| {
                let mut schedules = sketches(v.naive(), target);
                schedules.truncate(SKETCHES);
                schedules.push(initial_schedule());
                schedules.dedup();
                schedules.into_iter().map(|schedule| Kernel::Rewritten { variant: v.clone(), schedule }).collect()
            })
            .collect();
        // Every variant's first sketch, then every variant's second, and so on.
        let mut pending = Vec::new();
        for rank in 0..=SKETCHES {
            pending.extend(per_variant.iter().filter_map(|ks| ks.get(rank).cloned()));
        }
        let leads = per_variant.iter().zip(&shares).filter(|(_, &share)| share <= FAR_CHEAPER).filter_map(|(ks, _)| ks.first().cloned()).collect();
        tracing::debug!(variants = variants.len(), kernels = pending.len(), "rewrite proposer ready");
        Rewrite { naive, variants, offers: Offers::new(pending), leads, measured: Default::default(), carried: None }
    }

    /// The variants [`ollie_rewrite::variants`] found, lowered (one that does not lower is left
    /// out, with a warning), each with its cost as a share of the spec's.
    pub fn lowered(rewritten: &ollie_rewrite::Rewritten) -> Vec<(Variant, f64)> {
        rewritten
            .variants
            .iter()
            .filter_map(|v| match Variant::new(v.graph.clone()) {
                Ok(lowered) => Some((lowered, v.cost / rewritten.original_cost)),
                Err(e) => {
                    tracing::warn!(error = %e, "a rewritten graph does not lower; left out");
                    None
                }
            })
            .collect()
    }

    /// The schedule of `current`, a scheduled kernel of the spec's own graph, on the cheapest
    /// variant, unless it does not replay there, has been measured or was offered in this round:
    /// a schedule the chain moved to is worth trying on the graph that does less, before any
    /// other variant's sketches.
    fn carry_to_cheapest(&self, current: &Kernel) -> Option<Kernel> {
        let Kernel::Scheduled(schedule) = current else { return None };
        if *schedule == initial_schedule() {
            return None;
        }
        let next = self.on_graph(Some(self.variants.first()?), schedule, &self.naive)?;
        (!self.measured.0.contains(&next) && self.carried.as_ref() != Some(&next)).then_some(next)
    }

    /// `current`'s schedule on another graph, where it replays.
    fn carry_over(&self, current: &Kernel, rng: &mut ChaCha8Rng) -> Option<Kernel> {
        let (schedule, from) = current.scheduled(&self.naive)?;
        // The spec's own graph is the choice past the last variant.
        let k = rng.random_range(0..self.variants.len() + 1);
        self.on_graph(self.variants.get(k), schedule, from).filter(|next| next != current)
    }

    /// `schedule`, written for the naive nest `from`, on `variant` (the spec's own graph for
    /// `None`), if it replays there.
    fn on_graph(&self, variant: Option<&Variant>, schedule: &Schedule, from: &LoopNest) -> Option<Kernel> {
        let next = match variant {
            Some(v) => Kernel::Rewritten { variant: v.clone(), schedule: carried(schedule, from, v.naive()) },
            None => Kernel::Scheduled(carried(schedule, from, &self.naive)),
        };
        let (s, naive) = next.scheduled(&self.naive)?;
        s.apply(naive).is_ok().then_some(next)
    }
}

/// `schedule`, written for the naive nest `from`, with the temporaries it names renamed to
/// those of `to`: temporaries are named after their graph node, which rewriting renumbers, so
/// the k-th temporary of one nest is taken for the k-th of the other where their shapes agree
/// (whether the result replays, and computes the graph, is for replay and the verifier).
fn carried(schedule: &Schedule, from: &LoopNest, to: &LoopNest) -> Schedule {
    let temps = |nest: &'_ LoopNest| nest.buffers.iter().filter(|b| b.kind == BufferKind::Temp).map(|b| (b.name.clone(), b.shape.clone())).collect::<Vec<_>>();
    let names: HashMap<String, String> = temps(from).into_iter().zip(temps(to)).filter(|(a, b)| a.1 == b.1).map(|(a, b)| (a.0, b.0)).collect();
    let rename = |name: &mut String| {
        if let Some(new) = names.get(name) {
            name.clone_from(new);
        }
    };
    let mut schedule = schedule.clone();
    for step in &mut schedule.steps {
        if let Some(buffer) = step.buffer_mut() {
            rename(buffer);
        }
    }
    schedule
}

impl<N> Propose<Kernel, N> for Rewrite {
    fn name(&self) -> &str {
        "rewrite"
    }

    fn propose(&mut self, current: &Kernel, rng: &mut ChaCha8Rng) -> Proposal<Kernel> {
        if self.variants.is_empty() {
            return Proposal::Exhausted;
        }
        if let Some(kernel) = self.carry_to_cheapest(current) {
            // Offered here until measured, not among the sketches too.
            self.offers.withdraw(&kernel);
            self.carried = Some(kernel.clone());
            return Proposal::Candidate(kernel);
        }
        if !self.offers.is_empty() {
            return self.offers.offer();
        }
        self.carry_over(current, rng).map_or(Proposal::NotNow, Proposal::Candidate)
    }

    fn observe(&mut self, event: &Event<Kernel, N>) {
        self.offers.seen(&event.candidate);
        self.carried = None;
        if matches!(event.candidate, Kernel::Rewritten { .. }) && self.measured.0.insert(event.candidate.clone()) {
            self.measured.1.push_back(event.candidate.clone());
            if self.measured.1.len() > MEASURED {
                let oldest = self.measured.1.pop_front().expect("longer than MEASURED");
                self.measured.0.remove(&oldest);
            }
        }
    }

    /// Leads while a far cheaper variant's first sketch has not been measured.
    fn leading(&self, _current: &Kernel) -> bool {
        self.leads.iter().any(|k| self.offers.holds(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Evaluation;
    use ollie_loops::Step;
    use rand::SeedableRng;

    /// RMSNorm in float32, whose cheapest variant multiplies by each row's reciprocal.
    const RMSNORM: &str = "kernel rms(x: f32[8,32]) {
  %0: f32[8,32] = input[x]
  %1: f32[8,32] = mul %0, %0
  %2: f32[8] = reduce_sum[1] %1
  %3: f32[8,1] = reshape %2
  %4: f32[] = const[1e-6]
  %5: f32[8,1] = broadcast %4
  %6: f32[8,1] = add %3, %5
  %7: f32[8,1] = sqrt %6
  %8: f32[8,32] = broadcast %7
  %9: f32[8,32] = div %0, %8
  return %9
}
";

    /// A schedule the chain moves to on the spec's graph is offered on the cheapest variant at
    /// once, once a round, and not again after it was measured.
    #[test]
    fn the_current_schedule_is_carried_to_the_cheapest_variant_first() {
        let graph = ollie_graph::parse(RMSNORM).unwrap();
        let naive = ollie_loops::lower(&graph).unwrap();
        let variants = Rewrite::lowered(&ollie_rewrite::variants(&graph));
        assert!(!variants.is_empty(), "no variant of\n{graph}");
        let target = Target { lanes: 8, caches: None };
        let mut rewrite = Rewrite::new(naive.clone(), variants, &target);
        let current = Kernel::Scheduled(sketches(&naive, &target).remove(0));
        let Kernel::Scheduled(schedule) = &current else { unreachable!() };
        let variant = rewrite.variants[0].clone();
        let carried = Kernel::Rewritten { schedule: carried(schedule, &naive, variant.naive()), variant };
        assert!(matches!(&carried, Kernel::Rewritten { schedule, .. } if schedule.steps.iter().any(|s| matches!(s, Step::Fold { buffer, .. } if buffer == "t2"))), "{carried:?}");
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let propose = |r: &mut Rewrite, rng: &mut ChaCha8Rng| match Propose::<Kernel, ()>::propose(r, &current, rng) {
            Proposal::Candidate(k) => Some(k),
            _ => None,
        };
        assert_eq!(propose(&mut rewrite, &mut rng).as_ref(), Some(&carried));
        assert_ne!(propose(&mut rewrite, &mut rng).as_ref(), Some(&carried), "offered twice in a round");
        let measured = Event { evaluation: 1, proposer: "rewrite".into(), candidate: carried.clone(), outcome: Evaluation::Rejected, moved: false, new_best: false, restarted: false, note: (), ablation: None };
        Propose::<Kernel, ()>::observe(&mut rewrite, &measured);
        for _ in 0..20 {
            assert_ne!(propose(&mut rewrite, &mut rng).as_ref(), Some(&carried), "offered after it was measured");
        }
    }
}
