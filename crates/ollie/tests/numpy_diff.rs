//! Differential test: ollie's float64 reference against real numpy running the very same `.py`
//! file, on the same random inputs, for every spec in `test_data/corpus/` and `examples/`.
//!
//! A spec with float16 or bfloat16 arrays runs under numpy (and ml_dtypes) as it is: numpy rounds
//! every 16-bit intermediate where ollie's reference is exact, so those agree to a few units of
//! the 16-bit roundoff, and each 16-bit result must have the dtype numpy gives it.
//!
//! Needs `python3` with numpy, ml_dtypes and scipy (specs call `scipy.special`); when any is
//! missing the test fails (it never skips).

use std::path::{Path, PathBuf};
use std::process::Command;

use ndarray::{ArrayD, IxDyn};
use ollie_graph::DType;
use ndarray_npy::{ReadNpyExt, WriteNpyExt};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// Examples whose full size would make numpy's (BLAS-less) einsum slow; shrunk for the test.
const OVERRIDES: &[(&str, &[(&str, i64)])] = &[
    ("mla_decode.py", &[("T", 256), ("H", 16)]),
    ("attention_decode.py", &[("T", 256)]),
];

/// Agreement required between ollie and numpy: max |diff| / max |ref|.
const TOLERANCE: f64 = 1e-12;

/// The same for a spec with 16-bit arrays, in units of the coarsest 16-bit roundoff among them.
const HALF_TOLERANCE: f64 = 16.0;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn specs() -> Vec<PathBuf> {
    let mut specs = Vec::new();
    for dir in ["test_data/corpus", "examples"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "py") {
                specs.push(path);
            }
        }
    }
    specs.sort();
    specs
}

#[test]
fn reference_agrees_with_numpy_on_the_corpus() {
    let specs = specs();
    assert!(specs.len() >= 30, "the corpus must hold at least 30 specs, found {}", specs.len());
    let mut failures = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        if let Err(e) = check_spec(spec, i as u64) {
            failures.push(format!("{}: {e}", spec.display()));
        }
    }
    assert!(failures.is_empty(), "{} of {} specs disagree with numpy:\n{}", failures.len(), specs.len(), failures.join("\n"));
}

fn check_spec(spec: &Path, seed: u64) -> Result<(), String> {
    let file = spec.file_name().unwrap().to_str().unwrap();
    let dims: Vec<(String, i64)> = OVERRIDES
        .iter()
        .filter(|(f, _)| *f == file)
        .flat_map(|(_, d)| d.iter().map(|(n, v)| (n.to_string(), *v)))
        .collect();
    let source = std::fs::read_to_string(spec).unwrap();
    let compiled = ollie_spec::compile(&source, &ollie_spec::Options { kernel: None, dims: dims.clone() })
        .map_err(|d| d.render(file, &source))?;
    let graph = compiled.graph;
    let tmp = tempfile::tempdir().unwrap();
    let (inputs, ours, theirs) = (tmp.path().join("in"), tmp.path().join("ollie"), tmp.path().join("numpy"));
    std::fs::create_dir_all(&inputs).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut eval = Command::new(env!("CARGO_BIN_EXE_ollie"));
    eval.arg("eval").arg(spec).arg("--f64").arg("--out").arg(&ours);
    for (k, param) in graph.params.iter().enumerate() {
        // An integer parameter (an index) is drawn from its range, negative indices included
        // where numpy takes them.
        let range = graph.index_range(k);
        let array = ArrayD::from_shape_simple_fn(IxDyn(&param.ty.shape), || -> f64 {
            match range {
                Some(r) => r.value(rng.random_range(if r.negative { -(r.extent as i64) } else { 0 }..r.extent as i64)),
                None => StandardNormal.sample(&mut rng),
            }
        });
        let path = inputs.join(format!("{}.npy", param.name));
        // Float32 parameters in float64 (the values are exact either way); the others in
        // their own dtype: 16-bit floats, integers, booleans.
        if matches!(param.ty.dtype, DType::F32 | DType::F64) {
            array.write_npy(std::fs::File::create(&path).unwrap()).unwrap();
        } else {
            ollie_driver::npy::write_npy(&path, &array, param.ty.dtype).unwrap();
        }
        eval.arg("--input").arg(format!("{}={}", param.name, path.display()));
    }
    let dtypes = graph.params.iter().map(|p| p.ty.dtype).chain(graph.outputs.iter().map(|&o| graph.ty(o).dtype));
    let tolerance = dtypes.filter(|d| d.is_half()).map(|d| HALF_TOLERANCE * d.unit_roundoff()).fold(TOLERANCE, f64::max);
    let mut oracle = Command::new("python3");
    oracle.arg(root().join("crates/ollie/tests/numpy_oracle.py")).arg(spec).arg(&graph.name).arg(&inputs).arg(&theirs);
    for (name, value) in &dims {
        eval.arg("--dim").arg(format!("{name}={value}"));
        oracle.arg(format!("{name}={value}"));
    }
    run(&mut eval)?;
    run(&mut oracle)?;
    for k in 0..graph.outputs.len() {
        let name = graph.output_name(k);
        let read = |dir: &Path| {
            let path = dir.join(format!("{name}.npy"));
            let file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            ArrayD::<f64>::read_npy(file).map_err(|e| format!("{}: {e}", path.display()))
        };
        let (actual, expected) = (read(&ours)?, read(&theirs)?);
        compare(&name, &actual, &expected, tolerance)?;
        // numpy's dtype for the result, where ollie's or numpy's is a 16-bit float.
        let dtype_path = theirs.join(format!("{name}.dtype"));
        let numpy_dtype = std::fs::read_to_string(&dtype_path).map_err(|e| format!("{}: {e}", dtype_path.display()))?;
        let ours_dtype = graph.ty(graph.outputs[k]).dtype;
        let half = |n: &str| match n.trim() {
            "float16" => Some("f16"),
            "bfloat16" => Some("bf16"),
            _ => None,
        };
        let ours_half = ours_dtype.is_half().then(|| ours_dtype.name());
        if half(&numpy_dtype) != ours_half {
            return Err(format!("{name}: ollie's dtype is {ours_dtype}, numpy's {}", numpy_dtype.trim()));
        }
    }
    Ok(())
}

fn run(command: &mut Command) -> Result<(), String> {
    let out = command.output().map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{command:?} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    Ok(())
}

fn compare(name: &str, actual: &ArrayD<f64>, expected: &ArrayD<f64>, tolerance: f64) -> Result<(), String> {
    if actual.shape() != expected.shape() {
        return Err(format!("{name}: shape {:?}, numpy {:?}", actual.shape(), expected.shape()));
    }
    let scale = expected.iter().filter(|x| x.is_finite()).fold(0.0f64, |m, x| m.max(x.abs()));
    let mut worst = 0.0f64;
    for (i, (&a, &e)) in actual.iter().zip(expected.iter()).enumerate() {
        if e.is_nan() || a.is_nan() || e.is_infinite() || a.is_infinite() {
            let same = (e.is_nan() && a.is_nan()) || a == e;
            if !same {
                return Err(format!("{name}: element {i} is {a}, numpy has {e}"));
            }
            continue;
        }
        worst = worst.max((a - e).abs());
    }
    if worst > tolerance * scale.max(f64::MIN_POSITIVE) {
        return Err(format!("{name}: max |diff| {worst:e} exceeds {tolerance:e} x max |ref| {scale:e}"));
    }
    if scale == 0.0 && worst > 0.0 {
        return Err(format!("{name}: numpy is all zero, ollie differs by {worst:e}"));
    }
    Ok(())
}
