//! The schedule space `mutate` and `sketch` both move in: where every schedule starts, and the
//! machine facts that size its steps.

use ollie_loops::Schedule;

/// The compiler flags every schedule starts from.
pub const BASE_FLAGS: &[&str] = &["-O3", "-march=native"];

/// The schedule every search starts from: the naive nest at the base flags.
pub fn initial_schedule() -> Schedule {
    Schedule { steps: Vec::new(), flags: BASE_FLAGS.iter().map(|f| f.to_string()).collect() }
}

/// What schedules are built for: the floats in a vector register, and the data caches that size
/// the cache blocks of contractions (none: no blocked variant).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    pub lanes: u32,
    pub caches: Option<Caches>,
}

/// Per-core data cache sizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Caches {
    pub l1d_bytes: usize,
    pub l2_bytes: usize,
}
