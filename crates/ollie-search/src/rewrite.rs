//! The `rewrite` proposer: kernels for graphs that algebraic rewriting (`ollie-rewrite`) found
//! equal to the spec's and cheaper by its cost model. It offers each variant's first sketches
//! (and its naive nest) in turn until each has been measured, then carries the current
//! kernel's schedule over to another graph — a variant or the spec's own — where it replays:
//! loops are named in the order the lowering meets them, so a schedule of the shared part of
//! two graphs usually carries over.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use ollie_loops::LoopNest;

use crate::offers::Offers;
use crate::sketch::{sketches, Target};
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
}

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
        Rewrite { naive, variants, offers: Offers::new(pending), leads }
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

    /// `current`'s schedule on another graph, where it replays.
    fn carry_over(&self, current: &Kernel, rng: &mut ChaCha8Rng) -> Option<Kernel> {
        let (schedule, _) = current.scheduled(&self.naive)?;
        // The spec's own graph is the choice past the last variant.
        let k = rng.random_range(0..self.variants.len() + 1);
        let next = match self.variants.get(k) {
            Some(v) => Kernel::Rewritten { variant: v.clone(), schedule: schedule.clone() },
            None => Kernel::Scheduled(schedule.clone()),
        };
        let (s, naive) = next.scheduled(&self.naive).expect("scheduled");
        (next != *current && s.apply(naive).is_ok()).then_some(next)
    }
}

impl<N> Propose<Kernel, N> for Rewrite {
    fn name(&self) -> &str {
        "rewrite"
    }

    fn propose(&mut self, current: &Kernel, rng: &mut ChaCha8Rng) -> Proposal<Kernel> {
        if self.variants.is_empty() {
            return Proposal::Exhausted;
        }
        if !self.offers.is_empty() {
            return self.offers.offer();
        }
        self.carry_over(current, rng).map_or(Proposal::NotNow, Proposal::Candidate)
    }

    fn observe(&mut self, event: &Event<Kernel, N>) {
        self.offers.seen(&event.candidate);
    }

    /// Leads while a far cheaper variant's first sketch has not been measured.
    fn leading(&self, _current: &Kernel) -> bool {
        self.leads.iter().any(|k| self.offers.holds(k))
    }
}
