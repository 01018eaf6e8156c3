//! How the final phase times a kernel against the naive one, sized by the naive kernel's time and
//! the budget; the evaluator plans its verifications around it.

use ollie_runner::Floor;
use ollie_verify::{BenchConfig, EarlyStop, FAR_PAIRS};

/// The final timing against the naive kernel, as reported: up to 21 interleaved pairs on the
/// final verification's two normal input sets (their expected outputs serve both).
const FINAL_TIMING: BenchConfig = BenchConfig { seed: 0, sets: 2, warmups: 2, calls: 21, floor: None, early: None, first_limit: None };

/// How the final phase times a kernel, given the naive kernel's time and the whole budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FinalTiming {
    /// The pairs (or, alone, the calls) go on until they have taken this long, then until the
    /// ratio is settled (see [`EarlyStop`]'s patient stop), 21 at most.
    pub seconds: f64,
    /// Interleaved with the naive kernel: its warm-ups and the fewest pairs that can settle a
    /// ratio fit in `seconds`. Else the kernel is timed alone, and its ratio is against the
    /// naive kernel's time as measured before the search (an estimate: the report says so).
    pub paired: bool,
    naive: f64,
}

impl FinalTiming {
    pub fn new(naive: f64, budget: f64) -> FinalTiming {
        let seconds = (budget / 20.0).clamp(1.0, 30.0);
        let paired = (FINAL_TIMING.warmups + FAR_PAIRS) as f64 * naive <= seconds;
        FinalTiming { seconds, paired, naive }
    }

    /// The timing's configuration on the final verification's input sets (`seed`): its two
    /// normal sets, or the first alone where computing a set's expected outputs (`per_set`
    /// seconds) costs more than half the timing itself.
    pub fn config(&self, seed: u64, floor: &Floor, per_set: f64) -> BenchConfig {
        let sets = if per_set > self.seconds / 2.0 { 1 } else { FINAL_TIMING.sets };
        BenchConfig { seed, sets, floor: Some(floor.fastest), early: Some(EarlyStop { min_pairs: 5, seconds: self.seconds, patient: true }), ..FINAL_TIMING }
    }

    /// What timing a kernel of `best` seconds takes, each call costing `evict` more (the flush
    /// of its buffers): its warm-ups, then calls (and the naive kernel's, if paired) until
    /// [`FinalTiming::seconds`] are spent and a few more settle the ratio, 21 at most.
    pub fn cost(&self, best: f64, evict: f64) -> f64 {
        let per = if self.paired { best + self.naive + 2.0 * evict } else { best + evict };
        let calls = FINAL_TIMING.calls as f64 * per;
        FINAL_TIMING.warmups as f64 * per + calls.min(self.seconds + FAR_PAIRS as f64 * per)
    }
}
