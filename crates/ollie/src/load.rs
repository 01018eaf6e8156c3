//! Loading a spec from the command line: reads the file, compiles it, renders diagnostics.

use ollie_spec::{split_selector, Options, Spec};

use crate::{user_error, Failure, SpecArgs};

/// Reads and compiles the spec; warnings go to stderr, an error becomes a rendered `Failure`.
pub fn load(args: &SpecArgs) -> Result<Spec, Failure> {
    let (path, kernel) = split_selector(&args.spec);
    let source = std::fs::read_to_string(path).map_err(|e| user_error(format!("error: cannot read spec `{path}`: {e}")))?;
    let options = Options { kernel: kernel.map(str::to_string), dims: args.dims.clone() };
    match ollie_spec::compile(&source, &options) {
        Ok(spec) => {
            for w in &spec.warnings {
                eprint!("{}", w.render(path, &source));
            }
            Ok(spec)
        }
        Err(d) => Err(user_error(d.render(path, &source))),
    }
}

/// Refuses, with the figures, a problem whose verification would need more memory than the
/// machine has available: a clear error before anything runs, not the out-of-memory killer.
pub fn ensure_fits(graph: &ollie_graph::Graph) -> Result<(), Failure> {
    let needed = ollie_verify::memory_needed(graph);
    match ollie_runner::available_memory() {
        Some(available) if needed > available => Err(user_error(format!(
            "error: `{}` is too large for this machine: verifying and timing its kernels needs up to {:.1} GB (its tensors in float64 and float32 several times over), and {:.1} GB is available\n  help: make it smaller with --dim, or run on a machine with more memory",
            graph.name,
            needed as f64 / 1e9,
            available as f64 / 1e9
        ))),
        _ => Ok(()),
    }
}
