//! End to end: every corpus spec and example is lowered, emitted as C, compiled with the system
//! C compiler (`-O3 -march=native -Wall -Werror`), run in a child process on random inputs, and
//! compared with the float64 reference.
//!
//! The bound: on standard-normal inputs (rounded to float32, which the reference sees too), the
//! naive float32 kernel must satisfy ‖y − r‖ ≤ 1e-5 · ‖r‖ per output, and be finite exactly where
//! the reference is (NaN where it is NaN). Float32 rounds each operation to 2⁻²⁴ ≈ 6e-8; the
//! longest sums here (4096 terms) grow that to ~1e-6 in the worst case, so 1e-5 leaves room for
//! honest rounding while any indexing or semantic slip (typically an O(1) error) fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use ndarray::{ArrayD, IxDyn};
use ndarray_npy::{ReadNpyExt, WriteNpyExt};
use ollie_graph::DType;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// Shrinks the examples whose full size makes the naive kernel slow in a debug test run.
const OVERRIDES: &[(&str, &[(&str, i64)])] = &[
    ("mla_decode.py", &[("T", 256)]),
    ("attention_decode.py", &[("T", 256)]),
    ("matmul.py", &[("M", 128)]),
];

const BOUND: f64 = 1e-5;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn type_arg(name: &str, dtype: DType, shape: &[usize]) -> String {
    let d = if dtype == DType::F64 { "f64" } else { "f32" };
    format!("{name}:{d}:{}", shape.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(","))
}

#[test]
fn naive_kernels_agree_with_the_reference() {
    let mut specs: Vec<PathBuf> = ["test_data/corpus", "examples", "test_data/loops"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root().join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    specs.sort();
    let mut failures = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        if let Err(e) = check(spec, i as u64) {
            failures.push(format!("{}: {e}", spec.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(failures.is_empty(), "{} of {} specs failed:\n{}", failures.len(), specs.len(), failures.join("\n"));
}

fn check(spec: &Path, seed: u64) -> Result<(), String> {
    let file = spec.file_name().unwrap().to_str().unwrap();
    let dims: Vec<(String, i64)> =
        OVERRIDES.iter().filter(|(f, _)| *f == file).flat_map(|(_, d)| d.iter().map(|(n, v)| (n.to_string(), *v))).collect();
    let source = std::fs::read_to_string(spec).unwrap();
    let graph = ollie_spec::compile(&source, &ollie_spec::Options { kernel: None, dims }).map_err(|d| d.render(file, &source))?.graph;
    let nest = ollie_loops::lower(&graph).map_err(|e| e.to_string())?;
    ollie_loops::check(&nest).map_err(|e| format!("the lowered nest is invalid: {e}"))?;
    let c = ollie_loops::emit_c(&nest);
    let tmp = tempfile::tempdir().unwrap();
    let (src, lib) = (tmp.path().join("k.c"), tmp.path().join("k.so"));
    std::fs::write(&src, &c).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-O3", "-march=native", "-shared", "-fPIC", "-Wall", "-Werror", "-o"])
        .arg(&lib)
        .arg(&src)
        .arg("-lm")
        .output()
        .map_err(|e| format!("cannot run {cc}: {e}"))?;
    if !out.status.success() {
        return Err(format!("C does not compile:\n{}\n{c}", String::from_utf8_lossy(&out.stderr)));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (in_dir, out_dir) = (tmp.path().join("in"), tmp.path().join("out"));
    std::fs::create_dir_all(&in_dir).unwrap();
    let mut inputs = Vec::new();
    let mut run = Command::new("python3");
    run.arg(root().join("crates/ollie/tests/run_kernel.py")).arg(&lib).arg(&graph.name).arg(&in_dir).arg(&out_dir);
    for p in &graph.params {
        let a = ArrayD::from_shape_simple_fn(IxDyn(&p.ty.shape), || {
            let x: f64 = StandardNormal.sample(&mut rng);
            if p.ty.dtype == DType::F64 { x } else { x as f32 as f64 }
        });
        a.write_npy(std::fs::File::create(in_dir.join(format!("{}.npy", p.name))).unwrap()).unwrap();
        run.arg(type_arg(&p.name, p.ty.dtype, &p.ty.shape));
        inputs.push(a);
    }
    run.arg("--");
    let names: Vec<String> = (0..graph.outputs.len()).map(|k| if graph.outputs.len() == 1 { "out".into() } else { format!("out{k}") }).collect();
    for (k, &o) in graph.outputs.iter().enumerate() {
        let ty = graph.ty(o);
        run.arg(type_arg(&names[k], ty.dtype, &ty.shape));
    }
    let out = run.output().map_err(|e| format!("cannot run python3: {e}"))?;
    if !out.status.success() {
        return Err(format!("the kernel's run failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    let reference = ollie_graph::evaluate(&graph, &inputs).map_err(|e| e.to_string())?;
    for (k, r) in reference.iter().enumerate() {
        let path = out_dir.join(format!("{}.npy", names[k]));
        let file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let y: ArrayD<f64> = match graph.ty(graph.outputs[k]).dtype {
            DType::F64 => ArrayD::<f64>::read_npy(file).map_err(|e| e.to_string())?,
            _ => ArrayD::<f32>::read_npy(file).map_err(|e| e.to_string())?.mapv(f64::from),
        };
        let (mut err, mut norm) = (0.0f64, 0.0f64);
        for (i, (&yv, &rv)) in y.iter().zip(r.iter()).enumerate() {
            if rv.is_finite() != yv.is_finite() || rv.is_nan() != yv.is_nan() || (rv.is_infinite() && rv != yv) {
                return Err(format!("{}: element {i} is {yv}, the reference has {rv}", names[k]));
            }
            if rv.is_finite() {
                err += (yv - rv) * (yv - rv);
                norm += rv * rv;
            }
        }
        let (err, norm) = (err.sqrt(), norm.sqrt());
        if err > BOUND * norm {
            return Err(format!("{}: ‖y − r‖ = {err:e} exceeds {BOUND:e} · ‖r‖ = {:e}", names[k], BOUND * norm));
        }
    }
    Ok(())
}
