//! Loading a spec from the command line: reads the file, compiles it, renders diagnostics.

use ollie_spec::{split_selector, Options, Spec};

use crate::{user_error, Failure, SpecArgs};

/// Reads and compiles the spec; warnings go to stderr, an error becomes a rendered `Failure`.
pub fn load(args: &SpecArgs) -> Result<Spec, Failure> {
    let (path, kernel) = split_selector(&args.spec);
    let source = std::fs::read_to_string(path).map_err(|e| user_error(format!("error: cannot read spec `{path}`: {e}")))?;
    compile(path, &source, &Options { kernel: kernel.map(str::to_string), dims: args.dims.clone() })
}

/// Compiles a spec's text (read from `path`, or kept by a store); as [`load`] renders.
pub fn compile(path: &str, source: &str, options: &Options) -> Result<Spec, Failure> {
    match ollie_spec::compile(source, options) {
        Ok(spec) => {
            for w in &spec.warnings {
                eprint!("{}", w.render(path, source));
            }
            Ok(spec)
        }
        Err(d) => Err(Failure::Spec { code: d.code.name(), rendered: d.render(path, source) }),
    }
}
