//! What stops verification before any verdict: the runner, the naive kernel or the reference failed.
//! Its own module because the oracle (which runs the naive kernel) and the verifier both return it.

use ollie_runner::{Outcome, RunnerError};

/// Verification could not reach a verdict (a candidate's failure is a verdict, never this).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Runner(#[from] RunnerError),
    #[error("the naive kernel failed, which is a bug in ollie: {0}")]
    Baseline(String),
    /// The naive kernel outlived the runner's time limit: the problem is larger than the limit
    /// allows, not a bug.
    #[error("the naive kernel did not return within the time limit of {limit:.3} s a call")]
    BaselineTimeout { limit: f64 },
    #[error("the reference failed: {0}")]
    Reference(#[from] ollie_graph::GraphError),
}

impl VerifyError {
    /// The naive kernel's call ended in `outcome`.
    pub(crate) fn baseline(outcome: &Outcome) -> VerifyError {
        match outcome {
            Outcome::Timeout { limit } => VerifyError::BaselineTimeout { limit: limit.as_secs_f64() },
            other => VerifyError::Baseline(other.summary()),
        }
    }
}
