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
    /// The kernel made a system call the sandbox forbids (opening a file, a socket, a new
    /// process, ...); `syscall` is its number (x86_64).
    Forbidden { syscall: i64 },
    /// The kernel touched memory past the end of buffer `buffer` (inputs first, then outputs),
    /// or wrote to input `buffer` when `write_to_input`.
    OutOfBounds { buffer: usize, write_to_input: bool },
    /// The kernel could not be run: its library does not load, the symbol is missing, or the
    /// process ended without returning from the kernel.
    Failed { reason: String },
    /// The kernel returned; its outputs in float64, in ABI order.
    Ran { outputs: Vec<Tensor>, elapsed: Duration },
}

/// The line of a compiler's log that says what went wrong: its first error (or the linker's first
/// undefined symbol), else the log's first line (a compiler stopped for taking too long says so
/// there).
pub fn first_compile_error(log: &str) -> &str {
    log.lines()
        .find(|l| l.contains("error") || l.contains("undefined reference"))
        .or_else(|| log.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("")
        .trim()
}

impl Outcome {
    /// A one-line description for logs and reports.
    pub fn summary(&self) -> String {
        match self {
            Outcome::CompileError { log } => format!("compile error: {}", first_compile_error(log)),
            Outcome::Crashed { signal } => format!("crashed with signal {signal}"),
            Outcome::Timeout { limit } => format!("timed out after {limit:?}"),
            Outcome::Forbidden { syscall } => format!("made a forbidden system call: {}", syscall_name(*syscall)),
            Outcome::OutOfBounds { buffer, write_to_input: true } => format!("wrote to input buffer {buffer}"),
            Outcome::OutOfBounds { buffer, .. } => format!("touched memory past the end of buffer {buffer}"),
            Outcome::Failed { reason } => format!("failed: {reason}"),
            Outcome::Ran { elapsed, .. } => format!("ran in {elapsed:?}"),
        }
    }
}

/// The name of an x86_64 system call ollie is likely to see refused.
pub fn syscall_name(nr: i64) -> String {
    let name = match nr {
        0 => "read",
        1 => "write",
        2 => "open",
        41 => "socket",
        42 => "connect",
        56 => "clone",
        57 => "fork",
        58 => "vfork",
        59 => "execve",
        62 => "kill",
        101 => "ptrace",
        257 => "openat",
        322 => "execveat",
        437 => "openat2",
        _ => return format!("system call {nr}"),
    };
    format!("{name} ({nr})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compile_errors_summary_names_the_first_error_or_undefined_symbol_or_else_the_first_line() {
        let log = "x.c: In function 'f':\nx.c:3:5: error: expected ';'\n";
        assert_eq!(Outcome::CompileError { log: log.into() }.summary(), "compile error: x.c:3:5: error: expected ';'");
        let log = "/usr/bin/ld: /tmp/ccX.o: in function `f':\nk.c:(.text+0xb6): undefined reference to `g'\ncollect2: error: ld returned 1 exit status\n";
        assert_eq!(Outcome::CompileError { log: log.into() }.summary(), "compile error: k.c:(.text+0xb6): undefined reference to `g'");
        let log = "the C compiler did not finish within 20 s\n";
        assert_eq!(Outcome::CompileError { log: log.into() }.summary(), "compile error: the C compiler did not finish within 20 s");
    }
}
