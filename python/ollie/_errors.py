"""The exceptions the package raises."""


class OllieError(Exception):
    """ollie itself failed (an internal error, or the executable is missing)."""


class UsageError(OllieError, ValueError):
    """A request ollie refuses: a bad option, an unreadable file, arrays of the wrong shape or
    dtype. The message is the one the command line prints."""


class SpecError(UsageError):
    """The spec is outside the subset ollie reads. `code` is the diagnostic's stable code
    (`unsupported-call`, `shape-mismatch`, ...); `rendered` the diagnostic as the command line
    prints it, pointing at the source."""

    def __init__(self, code, rendered):
        super().__init__(rendered)
        self.code = code
        self.rendered = rendered


class Rejected(OllieError):
    """`check` found a kernel that the verifier can tell apart from the spec. `verdict` is the
    rejection's kind (`inaccurate`, `crashed`, ...), `report` the whole report (as
    `ollie check --json` gives it), `counterexample` the inputs that showed it, as numpy arrays
    by parameter name (empty when the kernel did not get as far as running)."""

    def __init__(self, message, verdict, report, counterexample):
        super().__init__(message)
        self.verdict = verdict
        self.report = report
        self.counterexample = counterexample
