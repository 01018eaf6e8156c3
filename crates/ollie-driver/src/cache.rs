//! The kernel cache the command line and the Python package share: for each spec graph, the
//! fastest verified kernel any search has found for it on this machine, under `best/KEY/` in
//! ollie's cache directory (the kernel's files as `ollie optimize --out` writes them, and
//! `entry.json`).
//!
//! The key hashes what decides whether a kernel is right and runs here: the spec's graph in its
//! text form (its meaning at its dims and dtypes, whatever file or whitespace it came from), the
//! CPU's model and feature flags (a `-march=native` build faults on another CPU, and one model
//! name covers machines with different features), the C compiler's identity and ollie's version.
//! A lookup recomputes the key and checks the entry's recorded features against this CPU's
//! again. Entries are written whole into a temporary directory and renamed into place.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use ollie_graph::Graph;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::report::Summary;
use crate::Error;

/// What an entry records besides the kernel's files.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    pub key: String,
    pub kernel: String,
    /// The spec file and dims of the search that found it (informative: the key is the graph).
    pub spec: String,
    pub dims: Vec<(String, i64)>,
    pub seconds: f64,
    pub speedup: f64,
    pub fraction_of_roofline: f64,
    pub cpu: String,
    pub features: String,
    pub compiler: String,
    pub ollie: String,
    /// Seconds since the Unix epoch.
    pub stored_at: u64,
    /// The entry's directory (not stored: where it was found).
    #[serde(skip)]
    pub dir: PathBuf,
}

/// The identity of this machine and toolchain, as keys use it.
#[derive(Debug, Clone)]
pub struct Toolchain {
    pub cpu: String,
    pub features: String,
    pub compiler: String,
}

impl Toolchain {
    /// This CPU (from `/proc/cpuinfo`) and the compiler `cc` (its `--version`'s first line).
    pub fn current(cc: &str) -> Toolchain {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| info.lines().find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == name).map(|(_, v)| v.trim().to_string())).unwrap_or_default();
        let mut flags: Vec<&str> = Vec::new();
        let line = field("flags");
        flags.extend(line.split_whitespace());
        flags.sort_unstable();
        let compiler = Command::new(cc)
            .arg("--version")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.lines().next().map(str::to_string))
            .unwrap_or_else(|| cc.to_string());
        Toolchain { cpu: field("model name"), features: flags.join(" "), compiler }
    }

    /// The key of `graph`'s entry.
    pub fn key(&self, graph: &Graph) -> String {
        let mut h = Sha256::new();
        for part in [graph.to_string().as_str(), &self.cpu, &self.features, &self.compiler, env!("CARGO_PKG_VERSION")] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        h.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect()
    }
}

/// The cache's directory: `best/` under ollie's cache directory.
pub fn root() -> PathBuf {
    ollie_runner::cache_root().join("best")
}

/// The entry for `graph` on this machine, if a search stored one and it was stored for this
/// CPU's features.
pub fn lookup(root: &Path, toolchain: &Toolchain, graph: &Graph) -> Option<Entry> {
    let key = toolchain.key(graph);
    let entry = read(&root.join(&key))?;
    (entry.features == toolchain.features && entry.compiler == toolchain.compiler).then_some(entry)
}

/// Every entry, newest first.
pub fn list(root: &Path) -> Vec<Entry> {
    let mut entries: Vec<Entry> = std::fs::read_dir(root).into_iter().flatten().flatten().filter_map(|e| read(&e.path())).collect();
    entries.sort_by(|a, b| b.stored_at.cmp(&a.stored_at).then(a.key.cmp(&b.key)));
    entries
}

/// Removes the entries whose key starts with `prefix` (every entry for an empty one); returns
/// the keys removed.
pub fn remove(root: &Path, prefix: &str) -> Result<Vec<String>, Error> {
    let mut removed = Vec::new();
    for entry in list(root).into_iter().filter(|e| e.key.starts_with(prefix)) {
        std::fs::remove_dir_all(&entry.dir).with_context(|| format!("removing {}", entry.dir.display()))?;
        removed.push(entry.key);
    }
    Ok(removed)
}

fn read(dir: &Path) -> Option<Entry> {
    let text = std::fs::read_to_string(dir.join("entry.json")).ok()?;
    let mut entry: Entry = serde_json::from_str(&text).ok()?;
    entry.dir = dir.to_path_buf();
    Some(entry)
}

/// What a finished search offers the cache.
pub struct Found<'a> {
    /// The output directory holding the kernel's files.
    pub out: &'a Path,
    pub graph: &'a Graph,
    pub spec: &'a str,
    pub dims: &'a [(String, i64)],
    pub summary: &'a Summary,
    pub floor_seconds: f64,
}

/// Stores a search's result unless the naive kernel is the result or the entry already holds a
/// faster kernel; returns the entry's directory when it was written.
pub fn store(root: &Path, toolchain: &Toolchain, found: &Found) -> Result<Option<PathBuf>, Error> {
    let s = found.summary;
    if s.naive_is_best {
        return Ok(None);
    }
    let key = toolchain.key(found.graph);
    let dir = root.join(&key);
    if read(&dir).is_some_and(|old| old.features == toolchain.features && old.seconds <= s.best_seconds) {
        return Ok(None);
    }
    let name = &found.graph.name;
    let entry = Entry {
        key: key.clone(),
        kernel: name.clone(),
        spec: found.spec.to_string(),
        dims: found.dims.to_vec(),
        seconds: s.best_seconds,
        speedup: s.speedup,
        fraction_of_roofline: found.floor_seconds / s.best_seconds,
        cpu: toolchain.cpu.clone(),
        features: toolchain.features.clone(),
        compiler: toolchain.compiler.clone(),
        ollie: env!("CARGO_PKG_VERSION").to_string(),
        stored_at: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        dir: PathBuf::new(),
    };
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let staging = tempfile::Builder::new().prefix(&format!(".{key}-")).tempdir_in(root).context("creating a staging directory")?;
    for file in [format!("{name}.c"), format!("{name}.h"), format!("lib{name}.so"), format!("{name}.py"), "report.json".into(), "report.md".into(), "certificate.json".into()] {
        std::fs::copy(found.out.join(&file), staging.path().join(&file)).with_context(|| format!("copying {file} into the kernel cache"))?;
    }
    std::fs::write(staging.path().join("entry.json"), serde_json::to_string_pretty(&entry).expect("serializable")).context("writing entry.json")?;
    // Replace the old entry (if any) by a rename of the whole directory.
    let staged = staging.keep();
    if dir.exists() {
        let old = root.join(format!(".{key}-old-{}", std::process::id()));
        std::fs::rename(&dir, &old).context("moving the old entry aside")?;
        let _ = std::fs::remove_dir_all(&old);
    }
    std::fs::rename(&staged, &dir).with_context(|| format!("renaming the entry into {}", dir.display()))?;
    Ok(Some(dir))
}
