//! Chunked evaluation of the reference gives what evaluating it whole gives: for every corpus
//! spec and example, the outputs and both error bounds, chunk by chunk of a few rows (on every
//! core) against all at once. And the split is found where it exists and refused where rows mix.

use std::path::{Path, PathBuf};

use ollie_graph::{evaluate_with_error_bounds, evaluate_with_error_bounds_chunked, Chunks, Tensor};
use ollie_verify::Family;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The specs under `dirs`, as graphs at sizes a debug build evaluates quickly.
fn graphs(dirs: &[&str]) -> Vec<(String, ollie_graph::Graph)> {
    let small: &[(&str, &[(&str, i64)])] = &[("mla_decode.py", &[("T", 64)]), ("attention_decode.py", &[("T", 64)]), ("matmul.py", &[("M", 48), ("N", 48), ("K", 48)])];
    let mut specs: Vec<PathBuf> = dirs.iter().flat_map(|d| std::fs::read_dir(root().join(d)).unwrap()).map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "py")).collect();
    specs.sort();
    specs
        .into_iter()
        .map(|spec| {
            let file = spec.file_name().unwrap().to_str().unwrap().to_string();
            let dims = small.iter().filter(|(f, _)| *f == file).flat_map(|(_, d)| d.iter().map(|(n, v)| (n.to_string(), *v))).collect();
            let source = std::fs::read_to_string(&spec).unwrap();
            let graph = ollie_spec::compile(&source, &ollie_spec::Options { kernel: None, dims }).unwrap_or_else(|d| panic!("{}", d.render(&file, &source))).graph;
            (file, graph)
        })
        .collect()
}

/// Whether `a` and `b` agree to `relative` (a few float64 roundings for values: a chunk's sums
/// may be ordered differently by the matrix product; float32 ones for bounds, whose
/// contractions' magnitudes are summed in float32 and raised by `(n + 2)·2⁻²³`, so a chunk's
/// may differ by twice that: 2.3e-5 for kv_cache_f16's 96 terms, where 1.2e-5 was seen) and in
/// where they are not finite.
fn agree(a: &Tensor, b: &Tensor, relative: f64) -> Result<(), String> {
    if a.shape() != b.shape() {
        return Err(format!("shapes {:?} and {:?}", a.shape(), b.shape()));
    }
    for (i, (&x, &y)) in a.iter().zip(b.iter()).enumerate() {
        let same = (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= relative * x.abs().max(y.abs());
        if !same {
            return Err(format!("element {i}: {x} and {y}"));
        }
    }
    Ok(())
}

#[test]
fn chunks_give_what_the_whole_gives() {
    let mut failures = Vec::new();
    let mut split = Vec::new();
    for (file, graph) in graphs(&["test_data/corpus", "examples"]) {
        let chunks = Chunks::of(&graph);
        if chunks.is_some() {
            split.push(file.clone());
        }
        for family in [Family::Normal, Family::Wide] {
            let inputs = family.inputs(&graph, 5);
            let (r, b) = evaluate_with_error_bounds(&graph, &inputs.to_tensors()).unwrap();
            // Small chunks: as many as there are rows, most of the time.
            let (rc, bc) = evaluate_with_error_bounds_chunked(&graph, 1, |k, rows| inputs.tensor(k, rows)).unwrap();
            for k in 0..r.len() {
                let checks = [("value", &r[k], &rc[k], 1e-12), ("rounding bound", &b[k].rounding, &bc[k].rounding, 1e-4), ("underflow bound", &b[k].underflow, &bc[k].underflow, 1e-4)];
                for (what, whole, chunked, relative) in checks {
                    if let Err(e) = agree(whole, chunked, relative) {
                        failures.push(format!("{file} ({family}), output {k} {what}: {e}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The examples that have rows of their own are split.
    for file in ["softmax.py", "layernorm.py", "rmsnorm.py", "silu_mul.py", "attention_decode.py", "mla_decode.py", "matmul.py"] {
        assert!(split.iter().any(|f| f == file), "{file} is not split; split: {split:?}");
    }
}

/// Where rows mix, the graph is evaluated whole: a sum over the leading axis, a cumulative
/// product with a lower-triangular mask along it, a slice of it.
#[test]
fn rows_that_mix_are_not_split() {
    for source in [
        "import numpy as np\n\ndef k(x: \"f32[8, 4]\"):\n    return x.sum(axis=0)\n",
        "import numpy as np\n\ndef k(x: \"f32[8, 4]\"):\n    return x - x.mean(axis=0, keepdims=True)\n",
        "import numpy as np\n\ndef k(x: \"f32[8, 8]\"):\n    return np.tril(x)\n",
        "import numpy as np\n\ndef k(x: \"f32[8, 4]\"):\n    return x[1:] - x[:-1]\n",
        "import numpy as np\n\ndef k(x: \"f32[8, 4]\", w: \"f32[8, 4]\"):\n    return np.einsum(\"ij,ij->j\", x, w)\n",
    ] {
        let graph = ollie_spec::compile(source, &ollie_spec::Options::default()).unwrap().graph;
        assert_eq!(Chunks::of(&graph), None, "{source}");
    }
    // Square operands: the left one alone holds the rows.
    let square = "import numpy as np\n\ndef k(a: \"f32[8, 8]\", b: \"f32[8, 8]\"):\n    return a @ b\n";
    let graph = ollie_spec::compile(square, &ollie_spec::Options::default()).unwrap().graph;
    assert_eq!(Chunks::of(&graph).map(|c| c.split), Some(vec![true, false]));
    let rows = "import numpy as np\n\ndef k(x: \"f32[8, 4]\", w: \"f32[4]\"):\n    return x * w / x.sum(axis=-1, keepdims=True)\n";
    let graph = ollie_spec::compile(rows, &ollie_spec::Options::default()).unwrap().graph;
    let chunks = Chunks::of(&graph).expect("rows apart");
    assert_eq!((chunks.rows, chunks.split.clone(), chunks.outputs.clone()), (8, vec![true, false], vec![0]));
}
