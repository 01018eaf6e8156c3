//! The search's candidate, `Kernel`: a schedule of the spec's naive loop nest, or C source
//! written whole (by an LLM), each with its compile flags.

use ollie_loops::{LoopError, LoopNest, Schedule, ScheduleError};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Steps and flags replayed on the naive loop nest (what `mutate` proposes).
    Scheduled(Schedule),
    /// A whole C source for the kernel ABI, with the flags it is compiled with.
    Written { source: String, flags: Vec<String> },
}

/// Why a scheduled kernel has no C source.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EmitError {
    #[error("{0}")]
    IllegalSchedule(#[from] ScheduleError),
    #[error("{0}")]
    InvalidNest(#[from] LoopError),
}

impl EmitError {
    /// The short kind a verdict records.
    pub fn kind(&self) -> &'static str {
        match self {
            EmitError::IllegalSchedule(_) => "illegal-schedule",
            EmitError::InvalidNest(_) => "invalid-nest",
        }
    }
}

impl Kernel {
    /// The C source and compile flags: a schedule applied to `naive`, checked and emitted; a
    /// written kernel as it is.
    pub fn emit(&self, naive: &LoopNest) -> Result<(String, Vec<String>), EmitError> {
        match self {
            Kernel::Scheduled(schedule) => {
                let nest = schedule.apply(naive)?;
                ollie_loops::check(&nest)?;
                Ok((ollie_loops::emit_c(&nest), schedule.compile_flags(&nest)))
            }
            Kernel::Written { source, flags } => Ok((source.clone(), flags.clone())),
        }
    }

    /// The schedule's text as a store keeps it; empty for a written kernel, whose source and
    /// flags are the whole of it.
    pub fn schedule_text(&self) -> String {
        match self {
            Kernel::Scheduled(schedule) => schedule.to_string(),
            Kernel::Written { .. } => String::new(),
        }
    }

    /// The kernel a store kept as (schedule text, source, flags) — the inverse of
    /// [`Kernel::schedule_text`].
    pub fn from_stored(schedule: &str, source: &str, flags: &str) -> Result<Kernel, ScheduleError> {
        if schedule.trim().is_empty() {
            return Ok(Kernel::Written { source: source.to_string(), flags: flags.split_whitespace().map(str::to_string).collect() });
        }
        Schedule::parse(schedule).map(Kernel::Scheduled)
    }
}
