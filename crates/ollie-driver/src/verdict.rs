//! `Reason`: why a candidate is not the search's next kernel, typed from where it was decided (the
//! schedule's replay, the static screen, the compiler, the verifier, the chain) to the store, the
//! report and the `llm` proposer, with a stable code each (the store keeps the code).

use ollie_search::EmitError;
use ollie_verify::{Rejection, Screened};

macro_rules! reasons {
    ($($(#[$doc:meta])* $name:ident = $code:literal,)*) => {
        /// Why a candidate was not taken.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Reason {
            $($(#[$doc])* $name,)*
        }

        impl Reason {
            /// Every reason, in declaration order.
            pub const ALL: &'static [Reason] = &[$(Reason::$name,)*];

            /// The stable code the store records and the report shows (`inaccurate`, `slower`).
            pub fn code(self) -> &'static str {
                match self {
                    $(Reason::$name => $code,)*
                }
            }
        }
    };
}

reasons! {
    /// The schedule does not replay on the naive nest.
    IllegalSchedule = "illegal-schedule",
    /// The scheduled nest fails the loop IR's checker.
    InvalidNest = "invalid-nest",
    /// A written kernel asked for a compiler flag outside the allowlist.
    ForbiddenFlag = "forbidden-flag",
    /// A written kernel includes a file that is not a system header.
    ForbiddenInclude = "forbidden-include",
    /// A written kernel uses `asm`, constructors, sections and the like.
    ForbiddenCode = "forbidden-code",
    CompileError = "compile-error",
    /// The same source and flags as the current kernel: nothing to time.
    Unchanged = "unchanged",
    /// The verifier's verdicts (`Rejection`).
    Inaccurate = "inaccurate",
    Unwritten = "unwritten",
    ChangedAfterReturn = "changed-after-return",
    StaleOutput = "stale-output",
    OutOfBounds = "out-of-bounds",
    InputModified = "input-modified",
    Forbidden = "forbidden",
    Crashed = "crashed",
    Timeout = "timeout",
    TooFast = "too-fast",
    Failed = "failed",
    /// Passed the first tier, slower than the current kernel, and the chain declined it.
    Slower = "slower",
    /// Passed the first tier, but its full verification would not have ended within the budget.
    OutOfTime = "out-of-time",
    /// ollie itself failed while judging it (not the candidate's fault).
    Internal = "internal",
}

impl Reason {
    /// The reason a stored code names (`None` for a code this ollie does not know).
    pub fn from_code(code: &str) -> Option<Reason> {
        Reason::ALL.iter().copied().find(|r| r.code() == code)
    }

    /// Whether it is the kernel's own fault, for good: the same kernel would be rejected again
    /// (so it is not judged twice), and a model learns from seeing it. Being slower, unchanged or
    /// caught in ollie's own failure or the budget's end says nothing wrong about the code.
    pub fn is_defect(self) -> bool {
        !matches!(self, Reason::Slower | Reason::OutOfTime | Reason::Unchanged | Reason::Internal)
    }

    /// Whether the verifier (its static screen or its protocol) rejected it, rather than the
    /// build or the chain: what a model is shown as a recent rejection.
    pub fn is_verdict(self) -> bool {
        self.is_defect() && !matches!(self, Reason::IllegalSchedule | Reason::InvalidNest | Reason::CompileError)
    }
}

impl From<&EmitError> for Reason {
    fn from(e: &EmitError) -> Reason {
        match e {
            EmitError::IllegalSchedule(_) => Reason::IllegalSchedule,
            EmitError::InvalidNest(_) => Reason::InvalidNest,
        }
    }
}

impl From<&Screened> for Reason {
    fn from(s: &Screened) -> Reason {
        match s {
            Screened::Flag(_) => Reason::ForbiddenFlag,
            Screened::Include(_) => Reason::ForbiddenInclude,
            Screened::Token { .. } => Reason::ForbiddenCode,
        }
    }
}

impl From<&Rejection> for Reason {
    fn from(r: &Rejection) -> Reason {
        match r {
            Rejection::Inaccurate { .. } => Reason::Inaccurate,
            Rejection::Unwritten { .. } => Reason::Unwritten,
            Rejection::ChangedAfterReturn { .. } => Reason::ChangedAfterReturn,
            Rejection::StaleOutput { .. } => Reason::StaleOutput,
            Rejection::OutOfBounds { .. } => Reason::OutOfBounds,
            Rejection::InputModified { .. } => Reason::InputModified,
            Rejection::Forbidden { .. } => Reason::Forbidden,
            Rejection::Crashed { .. } => Reason::Crashed,
            Rejection::Timeout { .. } => Reason::Timeout,
            Rejection::TooFast { .. } => Reason::TooFast,
            Rejection::CompileError { .. } => Reason::CompileError,
            Rejection::Failed { .. } => Reason::Failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_read_back() {
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(Reason::from_code(r.code()), Some(*r));
            assert!(Reason::ALL[..i].iter().all(|o| o.code() != r.code()), "{} twice", r.code());
        }
        assert_eq!(Reason::from_code("no-such-reason"), None);
    }

    #[test]
    fn the_verifiers_rejections_keep_the_codes_their_json_has() {
        for r in &Rejection::one_of_each() {
            assert_eq!(Reason::from(r).code(), r.kind());
            // A kernel that does not build is the build's verdict, not the verifier's.
            assert_eq!(Reason::from(r).is_verdict(), !matches!(r, Rejection::CompileError { .. }));
        }
    }
}
