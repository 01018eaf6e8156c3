//! Loop IR stage tests: `test_data/loops/NAME.py` lowers to the loop IR in `NAME.loops` and the C
//! in `NAME.c` (`UPDATE_EXPECT=1` rewrites them); every corpus kernel lowers to a nest that
//! passes the checker; and the checker rejects broken nests.

use std::path::{Path, PathBuf};

use expect_test::expect_file;
use ollie_graph::{BinaryOp, DType};
use ollie_loops::{check, emit_c, lower, parse, Affine, Buffer, BufferId, BufferKind, Dynamic, Expr, LoopKind, LoopNest, Stmt, VarId};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn specs(dirs: &[&str]) -> Vec<PathBuf> {
    let mut specs: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(root().join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    specs.sort();
    specs
}

fn lower_file(path: &Path) -> LoopNest {
    let source = std::fs::read_to_string(path).unwrap();
    let spec = ollie_spec::compile(&source, &Default::default()).unwrap_or_else(|d| panic!("{}", d.render("spec", &source)));
    lower(&spec.graph).unwrap()
}

#[test]
fn golden_loop_ir_and_c() {
    let specs = specs(&["test_data/loops"]);
    assert!(specs.len() >= 5);
    for path in specs {
        let nest = lower_file(&path);
        expect_file![path.with_extension("loops")].assert_eq(&nest.to_string());
        expect_file![path.with_extension("c")].assert_eq(&emit_c(&nest));
    }
}

#[test]
fn every_corpus_kernel_lowers_to_a_valid_nest_whose_text_reads_back() {
    for path in specs(&["test_data/corpus", "examples", "test_data/loops"]) {
        let nest = lower_file(&path);
        check(&nest).unwrap_or_else(|e| panic!("{}: {e}\n{nest}", path.display()));
        let text = nest.to_string();
        let reread = parse(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()));
        // Compared by their debug forms: a NaN constant (`np.where(m, np.nan, x)`) equals itself there.
        assert_eq!(format!("{reread:?}"), format!("{nest:?}"), "{}: the loop IR text does not read back", path.display());
    }
}

#[test]
fn reader_rejects_bad_text() {
    let bad = |text: &str, want: &str| assert_eq!(parse(text).unwrap_err().to_string(), want);
    bad("", "line 1: empty loop IR");
    bad("kernel k(x: f32[2]) -> (out: f32[2])\nfor i0 in 0..2 {\n  out[i0] = x[i0]\n", "line 3: a loop is not closed");
    bad("kernel k(x: f32[2]) -> (out: f32[2])\nout[0] = y[0]\n", "line 2: no buffer `y`");
    bad("kernel k(x: f32[2]) -> (out: f32[2])\nout[0] = frob(x[0])\n", "line 2: unknown operation `frob`");
    bad("kernel k(x: f32[2]) -> (out: f32[2])\n}\n", "line 2: unmatched `}`");
    let ok = parse("kernel k(x: f32[2]) -> (out: f32[2])\nfor i0 in 0..2 {\n  out[i0] = select(lt(x[-1 * i0 + 1], -inf), cast<f32>(index(i0)), NaN)\n}\n").unwrap();
    check(&ok).unwrap();
}

/// `out[i] = x[i + shift]` over `n` iterations, with an optional temporary.
fn nest(n: usize, shift: i64, body: impl FnOnce(VarId) -> Vec<Stmt>) -> LoopNest {
    let _ = shift;
    LoopNest {
        name: "k".into(),
        buffers: vec![
            Buffer { name: "x".into(), kind: BufferKind::Input(0), dtype: DType::F32, shape: vec![4], scope: None, registers: None },
            Buffer { name: "out".into(), kind: BufferKind::Output(0), dtype: DType::F32, shape: vec![4], scope: None, registers: None },
            Buffer { name: "t".into(), kind: BufferKind::Temp, dtype: DType::F32, shape: vec![4], scope: None, registers: None },
        ],
        body: vec![Stmt::Loop { var: VarId(0), extent: n, kind: LoopKind::Serial, body: body(VarId(0)) }],
    }
}

fn load(b: u32, a: Affine) -> Expr {
    Expr::Load { buffer: BufferId(b), offset: a }
}

fn store(b: u32, a: Affine, value: Expr) -> Stmt {
    Stmt::Store { buffer: BufferId(b), offset: a, value }
}

fn err(n: LoopNest) -> String {
    check(&n).unwrap_err().to_string()
}

#[test]
fn checker_rejects_broken_nests() {
    let i = |v: VarId| Affine::var(v);
    let ok = nest(4, 0, |v| vec![store(1, i(v), load(0, i(v)))]);
    check(&ok).unwrap();
    let past_end = nest(4, 0, |v| vec![store(1, i(v), load(0, i(v).add_scaled(&Affine::constant(1), 1)))]);
    assert_eq!(err(past_end), "a load of `x` reaches offsets 1..=4, outside 0..4");
    let short = nest(3, 0, |v| vec![store(1, i(v), load(0, i(v)))]);
    assert_eq!(err(short), "1 elements of output `out` are never stored");
    let unwritten_temp = nest(4, 0, |v| vec![store(1, i(v), load(2, i(v)))]);
    assert_eq!(err(unwritten_temp), "`t` is read at offset 0 before that element is written");
    let into_input = nest(4, 0, |v| vec![store(0, i(v), Expr::Const(0.0)), store(1, i(v), Expr::Const(0.0))]);
    assert_eq!(err(into_input), "the kernel stores into input `x`");
    let unbound = nest(4, 0, |v| vec![store(1, i(v), Expr::Index(Affine::var(VarId(7))))]);
    assert_eq!(err(unbound), "`i7` is used outside a loop that binds it");
    let temp_ok = nest(4, 0, |v| {
        vec![
            store(2, i(v), Expr::Const(1.0)),
            store(1, i(v), Expr::Binary(BinaryOp::Add, Box::new(load(2, i(v))), Box::new(load(0, i(v))))),
        ]
    });
    check(&temp_ok).unwrap();
    // Gathers read inputs alone, and every index they can take lies in the buffer.
    let gather = |b: u32, extent: usize, v: VarId| Expr::Gather { buffer: BufferId(b), offset: Affine::constant(0), indices: vec![Dynamic { value: load(0, i(v)), stride: 1, extent }] };
    check(&nest(4, 0, |v| vec![store(1, i(v), gather(0, 4, v))])).unwrap();
    let from_temp = nest(4, 0, |v| vec![store(2, i(v), Expr::Const(1.0)), store(1, i(v), gather(2, 4, v))]);
    assert_eq!(err(from_temp), "a gather from `t`: only inputs are gathered from");
    let too_far = nest(4, 0, |v| vec![store(1, i(v), gather(0, 5, v))]);
    assert_eq!(err(too_far), "a gather of `x` reaches offsets 0..=4, outside 0..4");
}
