//! What became of a candidate kernel: values, not errors.

use std::time::Duration;

use ollie_graph::Tensor;

/// The result of compiling and running a kernel once.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The C compiler rejected the source; `log` is its output.
    CompileError { log: String },
    /// The kernel's process died of `signal` (e.g. 11 for a segmentation fault).
    Crashed { signal: i32 },
    /// The kernel did not return within the time limit and was killed.
    Timeout { limit: Duration },
    /// The kernel could not be run: its library does not load, the symbol is missing, or the
    /// process exited abnormally without a signal.
    Failed { reason: String },
    /// The kernel returned; its outputs in float64, in ABI order.
    Ran { outputs: Vec<Tensor>, elapsed: Duration },
}

impl Outcome {
    /// A one-line description for logs and reports.
    pub fn summary(&self) -> String {
        match self {
            Outcome::CompileError { log } => format!("compile error: {}", log.lines().find(|l| l.contains("error")).unwrap_or("").trim()),
            Outcome::Crashed { signal } => format!("crashed with signal {signal}"),
            Outcome::Timeout { limit } => format!("timed out after {limit:?}"),
            Outcome::Failed { reason } => format!("failed: {reason}"),
            Outcome::Ran { elapsed, .. } => format!("ran in {elapsed:?}"),
        }
    }
}
