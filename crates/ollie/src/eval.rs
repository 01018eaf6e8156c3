//! `ollie eval`: the float64 reference on given or random inputs, outputs as .npy and checksums.

use std::path::{Path, PathBuf};

use anyhow::Context;
use ollie_driver::npy;
use ollie_graph::DType;

use crate::{load, user_error, Failure, SpecArgs};

pub fn run(args: &SpecArgs, files: &[(String, PathBuf)], seed: Option<u64>, out: Option<&Path>, keep_f64: bool) -> Result<(), Failure> {
    let spec = load::load(args)?;
    let graph = &spec.graph;
    let inputs = match seed {
        Some(seed) => npy::random(graph, seed),
        None => npy::from_files(&graph.params, files)?,
    };
    let start = std::time::Instant::now();
    let outputs = match ollie_graph::evaluate(graph, &inputs) {
        // An index out of range in the given inputs: numpy raises too.
        Err(e @ ollie_graph::GraphError::Op { op: "gather", .. }) => return Err(user_error(format!("error: {e} in the given inputs (numpy raises IndexError)"))),
        other => other.context("evaluating the reference")?,
    };
    tracing::info!(elapsed = ?start.elapsed(), "reference evaluated");
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).map_err(|e| user_error(format!("error: cannot create {}: {e}", dir.display())))?;
    }
    for (k, value) in outputs.iter().enumerate() {
        let name = graph.output_name(k);
        let ty = graph.ty(graph.outputs[k]);
        if let Some(dir) = out {
            let path = dir.join(format!("{name}.npy"));
            npy::write_npy(&path, value, if keep_f64 { DType::F64 } else { ty.dtype }).with_context(|| format!("writing {}", path.display()))?;
        }
        crate::stdout(&format!("{name}: {ty} sum={:.12e} abs_sum={:.12e}\n", value.sum(), value.mapv(f64::abs).sum()))?;
    }
    Ok(())
}
