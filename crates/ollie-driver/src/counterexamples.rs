//! Counterexamples: the inputs on which a kernel was rejected, kept per spec in ollie's cache
//! (`counterexamples/NAME-HASH/N/PARAM.npy`) and tried first by every later check of that spec.

use std::path::PathBuf;

use ollie_graph::{Graph, Tensor};
use sha2::{Digest, Sha256};

/// The directory of this graph's counterexamples (the hash keeps specs with the same kernel
/// name apart).
fn dir(graph: &Graph) -> PathBuf {
    let hash: String = Sha256::digest(graph.to_string().as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect();
    ollie_runner::cache_root().join("counterexamples").join(format!("{}-{hash}", graph.name))
}

/// At most this many counterexamples are kept per spec; later ones are not saved.
const KEEP: usize = 32;

/// Saves one input set; returns its directory (or `None` when the spec already has [`KEEP`]).
pub fn save(graph: &Graph, inputs: &[Tensor]) -> anyhow::Result<Option<PathBuf>> {
    let base = dir(graph);
    std::fs::create_dir_all(&base)?;
    let n = std::fs::read_dir(&base)?.count();
    if n >= KEEP {
        return Ok(None);
    }
    let at = base.join(n.to_string());
    std::fs::create_dir_all(&at)?;
    for (p, t) in graph.params.iter().zip(inputs) {
        crate::npy::write_npy(&at.join(format!("{}.npy", p.name)), t, p.ty.dtype)?;
    }
    Ok(Some(at))
}

/// Every saved input set of this graph whose files still match its parameters.
pub fn load(graph: &Graph) -> Vec<Vec<Tensor>> {
    let Ok(entries) = std::fs::read_dir(dir(graph)) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs.iter()
        .filter_map(|d| {
            let files: Vec<(String, PathBuf)> = graph.params.iter().map(|p| (p.name.clone(), d.join(format!("{}.npy", p.name)))).collect();
            crate::npy::from_files(&graph.params, &files).ok()
        })
        .collect()
}
