//! The optimize pipeline as a library: what `ollie optimize` does between reading the spec and
//! writing the kernel — the evaluator's two tiers over the sandboxed runner and the verifier, the
//! chain's bookkeeping in the store, the `llm` proposer, the final re-verification and timing, the
//! report — and the setup `check` and `bench` share with it (the naive kernel, the roofline, the
//! oracle, the seeds). The CLI parses arguments, renders diagnostics and picks exit codes.

pub mod cache;
pub mod counterexamples;
mod evaluator;
mod final_timing;
mod finish;
pub mod llm;
pub mod naive;
pub mod npy;
pub mod pipeline;
pub mod progress;
pub mod report;
pub mod setup;
pub mod stored;
pub mod training;
mod tried;
mod verdict;
pub mod workers;

pub use ollie_store::Location;

pub use evaluator::Note;
pub use verdict::Reason;
/// The sketches `optimize` starts from (`ollie lower --sketch N` prints one).
pub use ollie_search::{explain, sketches};

/// What the sketches are built for on this machine: vectors of `lanes` floats and the data
/// caches the kernel reports (without them, no cache-blocked sketches).
pub fn sketch_target(lanes: u32) -> ollie_search::Target {
    let caches = ollie_runner::data_cache_bytes().map(|(l1d, l2)| ollie_search::Caches { l1d_bytes: l1d as usize, l2_bytes: l2 as usize });
    ollie_search::Target { lanes, caches }
}

/// Why a driver function failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user's input or options are at fault; the message is written for them, ready to print.
    #[error("{0}")]
    User(String),
    /// Something in ollie or its environment failed.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// An [`Error::User`] with this message.
pub fn user_error(message: impl Into<String>) -> Error {
    Error::User(message.into())
}
