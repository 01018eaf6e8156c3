//! Stage tests: every spec in `test_data/corpus/` and `examples/` is compiled and its graph text
//! compared with `NAME.graph` (beside a corpus spec, under `test_data/examples/` for an example;
//! `UPDATE_EXPECT=1` rewrites them); the text must read back into the same graph.

use std::path::{Path, PathBuf};

use expect_test::expect_file;
use ollie_spec::{compile, Options};

fn specs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    let mut specs: Vec<PathBuf> = ["test_data/corpus", "examples"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    specs.sort();
    specs
}

#[test]
fn corpus_graphs_match_their_text_and_read_back() {
    for path in specs() {
        let source = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        let spec = compile(&source, &Options::default()).unwrap_or_else(|d| panic!("{}", d.render(name, &source)));
        let text = spec.graph.to_string();
        // Corpus expectations sit beside their specs; the examples' live under test_data/examples.
        let stem = path.file_stem().unwrap().to_str().unwrap();
        let expected = if path.parent().unwrap().ends_with("examples") {
            path.parent().unwrap().join("../test_data/examples").join(format!("{stem}.graph"))
        } else {
            path.with_file_name(format!("{stem}.graph"))
        };
        expect_file![expected].assert_eq(&text);
        let reread = ollie_graph::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(reread, spec.graph, "{name}: the graph text does not read back to the same graph");
    }
}

#[test]
fn dim_overrides_and_kernel_selection() {
    let source = "import numpy as np\nT = 8\nD = T * 2\n\ndef a(x: \"f32[T, D]\"):\n    return x.sum(axis=-1)\n\ndef b(x: \"f32[D]\"):\n    return x * T\n";
    let options = Options { kernel: Some("a".into()), dims: vec![("T".into(), 3)] };
    let spec = compile(source, &options).unwrap();
    assert_eq!(spec.graph.params[0].ty.shape, vec![3, 6], "D follows the overridden T");
    assert_eq!(spec.graph.ty(spec.graph.outputs[0]).shape, vec![3]);
    let spec = compile(source, &Options { kernel: Some("b".into()), dims: vec![] }).unwrap();
    assert_eq!(spec.graph.name, "b");
    assert_eq!(spec.graph.params[0].ty.shape, vec![16]);
}

#[test]
fn selector_splits_file_and_kernel() {
    assert_eq!(ollie_spec::split_selector("dir/k.py::softmax"), ("dir/k.py", Some("softmax")));
    assert_eq!(ollie_spec::split_selector("k.py"), ("k.py", None));
}

#[test]
fn the_corpus_exercises_every_graph_op() {
    use ollie_graph::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
    let mut wanted: Vec<&str> = vec!["input", "const", "iota", "select", "cast", "broadcast", "reshape", "transpose", "slice", "concat", "einsum"];
    wanted.extend(UnaryOp::ALL.iter().map(|o| o.name()));
    wanted.extend(BinaryOp::ALL.iter().map(|o| o.name()));
    wanted.extend(CmpOp::ALL.iter().map(|o| o.name()));
    wanted.extend(ReduceOp::ALL.iter().map(|o| o.name()));
    let mut seen = std::collections::HashSet::new();
    for path in specs() {
        let source = std::fs::read_to_string(&path).unwrap();
        let spec = compile(&source, &Options::default()).unwrap();
        seen.extend(spec.graph.nodes.iter().map(|n| n.op.name()));
    }
    let missing: Vec<&&str> = wanted.iter().filter(|w| !seen.contains(*w)).collect();
    assert!(missing.is_empty(), "no corpus spec uses {missing:?}");
}
