//! Counterexamples: the inputs on which a kernel was rejected, kept per spec in ollie's cache
//! (`counterexamples/NAME-HASH/N/PARAM.npy`) and tried first by every later check of that spec.

use std::path::PathBuf;

use ndarray::ArrayD;
use ndarray_npy::{ReadNpyExt, WriteNpyExt};
use ollie_graph::{DType, Graph, Tensor};
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
        let file = std::io::BufWriter::new(std::fs::File::create(at.join(format!("{}.npy", p.name)))?);
        if p.ty.dtype == DType::F64 {
            t.write_npy(file)?;
        } else {
            t.mapv(|v| v as f32).write_npy(file)?;
        }
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
            graph
                .params
                .iter()
                .map(|p| {
                    let file = std::fs::File::open(d.join(format!("{}.npy", p.name))).ok()?;
                    let t = if p.ty.dtype == DType::F64 {
                        ArrayD::<f64>::read_npy(file).ok()?
                    } else {
                        ArrayD::<f32>::read_npy(file).ok()?.mapv(f64::from)
                    };
                    (t.shape() == p.ty.shape.as_slice()).then_some(t)
                })
                .collect::<Option<Vec<Tensor>>>()
        })
        .collect()
}
