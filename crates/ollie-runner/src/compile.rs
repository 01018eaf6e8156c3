//! Compiling C source to a shared library with the system compiler, cached by content hash.

use std::path::{Path, PathBuf};
use std::process::Command;

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
}

impl Compiler {
    /// The compiler from `$CC` (default `cc`), caching in `cache_dir`.
    pub fn new(cache_dir: impl Into<PathBuf>) -> Compiler {
        Compiler { cc: std::env::var("CC").unwrap_or_else(|_| "cc".into()), cache_dir: cache_dir.into() }
    }

    /// The user's cache directory for compiled kernels: `kernels/` under [`cache_root`].
    pub fn default_cache_dir() -> PathBuf {
        cache_root().join("kernels")
    }

    /// Compiles `source` with `flags` (plus `-shared -fPIC`); a rejected source is
    /// `Err(Ok(Outcome::CompileError))`, a failure of ollie's own (no compiler, no disk) is
    /// `Err(Err(RunnerError))`.
    pub fn compile(&self, source: &str, flags: &[String]) -> Result<Compiled, Result<Outcome, RunnerError>> {
        let mut hasher = Sha256::new();
        for part in [self.cc.as_str(), "\0", &flags.join("\u{1}"), "\0", source] {
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
        let partial = self.cache_dir.join(format!("{key}.{}.tmp", std::process::id()));
        // Libraries go after the source, where the linker looks for them.
        let (libraries, options): (Vec<&String>, Vec<&String>) = flags.iter().partition(|f| f.starts_with("-l"));
        let out = Command::new(&self.cc)
            .args(options)
            .args(["-shared", "-fPIC", "-o"])
            .arg(&partial)
            .arg(&src)
            .args(libraries)
            .arg("-lm")
            .output()
            .map_err(|e| Err(RunnerError::Io(format!("running the C compiler `{}`", self.cc), e)))?;
        if !out.status.success() {
            let _ = std::fs::remove_file(&partial);
            let mut log = String::from_utf8_lossy(&out.stderr).into_owned();
            log.push_str(&String::from_utf8_lossy(&out.stdout));
            return Err(Ok(Outcome::CompileError { log }));
        }
        std::fs::rename(&partial, &library).map_err(|e| Err(RunnerError::Io(format!("storing {}", library.display()), e)))?;
        tracing::debug!(library = %library.display(), "compiled");
        Ok(Compiled { library, cached: false })
    }
}
