//! Compiling C source to a shared library with the system compiler, cached by content hash.

use std::path::{Path, PathBuf};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use crate::outcome::Outcome;
use crate::run::RunnerError;

/// ollie's cache directory: `$XDG_CACHE_HOME/ollie`, else `~/.cache/ollie`, else under the
/// system temporary directory.
pub fn cache_root() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("ollie")
}

/// A compiled kernel library.
#[derive(Debug, Clone, PartialEq)]
pub struct Compiled {
    pub library: PathBuf,
    /// Whether the library came from the cache.
    pub cached: bool,
}

/// Compiles kernels with `$CC` (or `cc`) into a cache directory.
#[derive(Debug, Clone)]
pub struct Compiler {
    pub cc: String,
    pub cache_dir: PathBuf,
    /// A compilation taking longer is stopped and reported as a compile error (compilers do
    /// sometimes take forever on generated loop nests).
    pub timeout: std::time::Duration,
    /// When compilations stop whatever their time so far: past a deadline (a search's budget),
    /// or once the flag is raised (the search is over and its builds ahead are not wanted). A
    /// stopped compilation is a compile error saying so.
    pub stop: Option<CompileStop>,
}

/// See [`Compiler::stop`].
#[derive(Debug, Clone, Default)]
pub struct CompileStop {
    pub deadline: Option<std::time::Instant>,
    pub cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl CompileStop {
    /// Why a compilation must stop now, if it must.
    fn now(&self) -> Option<&'static str> {
        if self.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Some("its build was no longer wanted");
        }
        self.deadline.filter(|d| std::time::Instant::now() >= *d).map(|_| "the time given to the search was up")
    }
}

/// How every kernel is linked: a shared library whose every symbol is defined (`-z defs`), so that
/// a call of a function the source never defines is a compile error, not a library that fails
/// to load inside the sandbox.
const LINK: [&str; 3] = ["-shared", "-fPIC", "-Wl,-z,defs"];

impl Compiler {
    /// The compiler from `$CC` (default `cc`), caching in `cache_dir`.
    pub fn new(cache_dir: impl Into<PathBuf>) -> Compiler {
        Compiler { cc: std::env::var("CC").unwrap_or_else(|_| "cc".into()), cache_dir: cache_dir.into(), timeout: std::time::Duration::from_secs(60), stop: None }
    }

    /// The user's cache directory for compiled kernels: `kernels/` under [`cache_root`].
    pub fn default_cache_dir() -> PathBuf {
        cache_root().join("kernels")
    }

    /// Compiles `source` with `flags` (and [`LINK`]); a rejected source is
    /// `Err(Ok(Outcome::CompileError))`, a failure of ollie's own (no compiler, no disk) is
    /// `Err(Err(RunnerError))`.
    pub fn compile(&self, source: &str, flags: &[String]) -> Result<Compiled, Result<Outcome, RunnerError>> {
        let mut hasher = Sha256::new();
        for part in [self.cc.as_str(), "\0", &flags.join("\u{1}"), "\0", &LINK.join("\u{1}"), "\0", source] {
            hasher.update(part.as_bytes());
        }
        let key: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
        let library = self.cache_dir.join(format!("{key}.so"));
        if library.exists() {
            return Ok(Compiled { library, cached: true });
        }
        std::fs::create_dir_all(&self.cache_dir).map_err(|e| Err(RunnerError::Io(format!("creating {}", self.cache_dir.display()), e)))?;
        let src = self.cache_dir.join(format!("{key}.c"));
        std::fs::write(&src, source).map_err(|e| Err(RunnerError::Io(format!("writing {}", src.display()), e)))?;
        // Two threads may build the same source at once: each writes its own file, and the
        // rename makes whichever finishes last the library (the same bytes).
        let unique = unique_stem();
        let partial = self.cache_dir.join(format!("{key}.{unique}.tmp"));
        // Libraries go after the source, where the linker looks for them.
        let (libraries, options): (Vec<&String>, Vec<&String>) = flags.iter().partition(|f| f.starts_with("-l"));
        let mut command = Command::new(&self.cc);
        command.args(options).args(LINK).arg("-o").arg(&partial).arg(&src).args(libraries).arg("-lm");
        let failure = self.run(command, &self.cache_dir.join(format!("{key}.{unique}.log"))).map_err(Err)?;
        if let Some(log) = failure {
            let _ = std::fs::remove_file(&partial);
            return Err(Ok(Outcome::CompileError { log }));
        }
        std::fs::rename(&partial, &library).map_err(|e| Err(RunnerError::Io(format!("storing {}", library.display()), e)))?;
        tracing::debug!(library = %library.display(), "compiled");
        Ok(Compiled { library, cached: false })
    }

    /// The preprocessed text of `source` under `flags` (`cc -E`, line markers included), or the
    /// compiler's complaint (`Ok(Err(log))`).
    pub fn preprocess(&self, source: &str, flags: &[String]) -> Result<Result<String, String>, RunnerError> {
        let dir = self.cache_dir.join("preprocess");
        std::fs::create_dir_all(&dir).map_err(|e| RunnerError::Io(format!("creating {}", dir.display()), e))?;
        let stem = unique_stem();
        let (src, out) = (dir.join(format!("{stem}.c")), dir.join(format!("{stem}.i")));
        std::fs::write(&src, source).map_err(|e| RunnerError::Io(format!("writing {}", src.display()), e))?;
        let mut command = Command::new(&self.cc);
        command.args(flags.iter().filter(|f| !f.starts_with("-l"))).args(["-E", "-o"]).arg(&out).arg(&src);
        let failure = self.run(command, &dir.join(format!("{stem}.log")));
        let text = std::fs::read_to_string(&out);
        let _ = (std::fs::remove_file(&src), std::fs::remove_file(&out));
        if let Some(log) = failure? {
            return Ok(Err(log));
        }
        text.map(Ok).map_err(|e| RunnerError::Io(format!("reading {}", out.display()), e))
    }

    /// Runs the compiler command with its output to a log, within the time limit: `None` when it
    /// succeeded, else the log of its failure.
    fn run(&self, mut command: Command, log_path: &Path) -> Result<Option<String>, RunnerError> {
        let io = |what: &str, e| RunnerError::Io(format!("{what} {}", log_path.display()), e);
        let log_file = std::fs::File::create(log_path).map_err(|e| io("creating", e))?;
        let mut child = command
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().map_err(|e| io("opening", e))?)
            .stderr(log_file)
            // Its own process group, so that a timeout stops the compiler's children too.
            .process_group(0)
            .spawn()
            .map_err(|e| RunnerError::Io(format!("running the C compiler `{}`", self.cc), e))?;
        // Stopped while kernels are timed; that time is not the compiler's.
        let registered = crate::quiet::Registered::new(child.id() as i32);
        let (started, quiet) = (std::time::Instant::now(), crate::quiet::quiet_so_far());
        let mut stopped = None;
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| RunnerError::Io("waiting for the C compiler".into(), e))? {
                break Some(status);
            }
            stopped = self.stop.as_ref().and_then(CompileStop::now);
            if stopped.is_some() || started.elapsed().saturating_sub(crate::quiet::quiet_so_far() - quiet) > self.timeout {
                // SAFETY: signals the process group the compiler leads.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        drop(registered);
        let log = std::fs::read_to_string(log_path).unwrap_or_default();
        let _ = std::fs::remove_file(log_path);
        Ok(match status {
            Some(s) if s.success() => None,
            Some(_) => Some(log),
            None => match stopped {
                Some(why) => Some(format!("the C compiler was stopped: {why}\n{log}")),
                None => Some(format!("the C compiler did not finish within {} s\n{log}", self.timeout.as_secs())),
            },
        })
    }
}

/// A name no other build of this process, in any thread, uses at the same time.
fn unique_stem() -> String {
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    format!("{}-{}", std::process::id(), BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}
