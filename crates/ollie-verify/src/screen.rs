//! The static screen: what a kernel written outside ollie (by an LLM, by hand) must pass before
//! it is compiled for real. The compiler runs in ollie's own process context and the library's
//! initializers run in the sandbox before its lockdown, so the screen refuses what would act
//! there: flags outside an allowlist (plugins, specs files, linker options, profile files,
//! include paths), headers from outside the system's include directories, and, in the kernel's
//! own code after preprocessing (so that no macro hides them), inline assembly, constructors,
//! destructors, ifuncs and section placement.

use ollie_runner::{Compiler, RunnerError};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Screened {
    #[error("the flag `{0}` is not allowed (optimization, target, warning and -D flags are; see the ABI)")]
    Flag(String),
    #[error("it includes `{0}`, which is not a system header")]
    Include(String),
    #[error("line {line} uses `{token}`, which kernels may not use (no inline assembly, constructors, destructors, ifuncs or sections)")]
    Token { token: String, line: usize },
}

impl Screened {
    pub fn kind(&self) -> &'static str {
        match self {
            Screened::Flag(_) => "forbidden-flag",
            Screened::Include(_) => "forbidden-include",
            Screened::Token { .. } => "forbidden-code",
        }
    }
}

/// `-f` flags that read or write files, load code, or need a runtime of their own.
const FORBIDDEN_F: &[&str] = &[
    "plugin",
    "profile",
    "auto-profile",
    "branch-probabilities",
    "dump",
    "save-optimization-record",
    "callgraph-info",
    "stack-usage",
    "coverage",
    "test-coverage",
    "create-profile",
    "sanitize",
    "debug-prefix-map",
    "file-prefix-map",
    "macro-prefix-map",
    "record-gcc-switches",
    "diagnostics",
];

const LIBRARIES: &[&str] = &["-lm", "-lmvec", "-lgomp"];

/// Whether `flag` may be given to the compiler.
pub fn flag_allowed(flag: &str) -> bool {
    let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    let value = |s: &str| match s.split_once('=') {
        Some((name, v)) => word(name) && (v.is_empty() || word(v)) && !v.contains(".."),
        None => word(s),
    };
    if LIBRARIES.contains(&flag) || matches!(flag, "-pthread" | "-w" | "-shared" | "-fPIC" | "-fpic") {
        return true;
    }
    if let Some(level) = flag.strip_prefix("-O") {
        return matches!(level, "" | "0" | "1" | "2" | "3" | "s" | "fast" | "g" | "z");
    }
    if let Some(f) = flag.strip_prefix("-f") {
        let name = f.strip_prefix("no-").unwrap_or(f);
        return value(f) && !FORBIDDEN_F.iter().any(|p| name.starts_with(p));
    }
    if let Some(m) = flag.strip_prefix("-m") {
        return value(m);
    }
    if let Some(d) = flag.strip_prefix("-D").or_else(|| flag.strip_prefix("-U")) {
        return value(d) && d.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    }
    if let Some(std) = flag.strip_prefix("-std=") {
        return word(std);
    }
    if let Some(w) = flag.strip_prefix("-W") {
        // -Wl, -Wa, -Wp pass options to the linker, assembler and preprocessor.
        return !w.contains(',') && value(w);
    }
    if let Some(p) = flag.strip_prefix("--param=") {
        return value(p);
    }
    false
}

/// Where a header may come from.
const SYSTEM: &[&str] = &["/usr/include/", "/usr/lib/gcc/", "/usr/local/include/", "/usr/lib/llvm", "/usr/lib/clang/"];

/// Identifiers a kernel's own code may not contain.
const FORBIDDEN_TOKENS: &[&str] = &[
    "asm",
    "__asm",
    "__asm__",
    "constructor",
    "__constructor__",
    "destructor",
    "__destructor__",
    "ifunc",
    "__ifunc__",
    "section",
    "__section__",
    "init_priority",
    "__init_priority__",
    "symver",
    "__symver__",
];

/// Screens `source` compiled with `flags`: the flags first, then its preprocessed text. A source
/// that does not preprocess passes here (compiling it fails with the compiler's own message).
pub fn screen(compiler: &Compiler, source: &str, flags: &[String]) -> Result<Result<(), Screened>, RunnerError> {
    if let Some(f) = flags.iter().find(|f| !flag_allowed(f)) {
        return Ok(Err(Screened::Flag(f.clone())));
    }
    match compiler.preprocess(source, flags)? {
        Ok(text) => Ok(screen_preprocessed(&text)),
        Err(_) => Ok(Ok(())),
    }
}

/// Screens `cc -E` output: every file named in a line marker must be the source itself or a
/// system header, and the source's own lines may not hold a forbidden identifier.
pub fn screen_preprocessed(text: &str) -> Result<(), Screened> {
    // The first line marker names the source file.
    let mut main: Option<String> = None;
    let mut in_main = false;
    let mut line = 0usize;
    for l in text.lines() {
        if let Some(marker) = l.strip_prefix("# ") {
            let mut parts = marker.splitn(2, ' ');
            let number = parts.next().and_then(|n| n.parse::<usize>().ok());
            let file = parts.next().and_then(|rest| rest.strip_prefix('"')).and_then(|rest| rest.split('"').next());
            if let (Some(n), Some(file)) = (number, file) {
                let main = main.get_or_insert_with(|| file.to_string());
                in_main = file == main;
                line = n;
                let known = in_main || file.starts_with('<') || SYSTEM.iter().any(|s| file.starts_with(s));
                if !known {
                    return Err(Screened::Include(file.to_string()));
                }
                continue;
            }
        }
        if in_main {
            let forbidden = l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).find(|w| FORBIDDEN_TOKENS.contains(w));
            if let Some(token) = forbidden {
                return Err(Screened::Token { token: token.to_string(), line });
            }
        }
        line += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_outside_the_allowlist_are_refused() {
        for ok in ["-O3", "-march=native", "-mavx2", "-mprefer-vector-width=512", "-fopenmp", "-fno-math-errno", "-ffast-math", "-funroll-loops", "-fvect-cost-model=unlimited", "-DN=4", "-D__FAST_MATH__", "-lmvec", "-lgomp", "-std=c11", "-Wall", "-Wno-unused", "--param=max-unroll-times=8"] {
            assert!(flag_allowed(ok), "{ok}");
        }
        for bad in ["-fplugin=/tmp/x.so", "-fprofile-generate", "-fprofile-use=/tmp/p", "-fdump-tree-all", "-B/tmp", "-specs=/tmp/s", "-Wl,-rpath,/tmp", "-Wa,-adhln=/tmp/x", "-I/etc", "-include/etc/passwd", "@/tmp/args", "-o", "/tmp/x.so", "-L/tmp", "-lcurl", "-fsanitize=address", "-DX=$(id)", "-x", "-wrapper", "-fstack-usage", "-DX=../../a"] {
            assert!(!flag_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn includes_from_elsewhere_and_forbidden_code_are_refused() {
        let ok = "# 1 \"/tmp/k.c\"\n# 1 \"<built-in>\"\n# 1 \"/usr/include/math.h\" 1 3 4\nextern double exp(double) __asm__ (\"exp\");\n# 2 \"/tmp/k.c\" 2\nvoid k(float *out) { out[0] = 1; }\n";
        assert_eq!(screen_preprocessed(ok), Ok(()), "a system header may use asm");
        let include = "# 1 \"/tmp/k.c\"\n# 1 \"/etc/passwd\" 1\nroot:x:0:0\n";
        assert_eq!(screen_preprocessed(include), Err(Screened::Include("/etc/passwd".into())));
        let ctor = "# 1 \"/tmp/k.c\"\n\n\n__attribute__((constructor)) static void steal(void) {}\n";
        assert_eq!(screen_preprocessed(ctor), Err(Screened::Token { token: "constructor".into(), line: 3 }));
        let asm = "# 1 \"/tmp/k.c\"\nvoid k(float *out) { __asm__ volatile (\"syscall\"); }\n";
        assert_eq!(screen_preprocessed(asm).unwrap_err().kind(), "forbidden-code");
    }
}
