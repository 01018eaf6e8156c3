//! Schedules: the text form reads back, legal steps apply and keep the nest valid, illegal ones
//! (a reduction run in parallel or in SIMD lanes, nested parallel loops, a race on a buffer) are
//! refused with the reason.

use std::path::Path;

use ollie_loops::{check, lower, Schedule, ScheduleError, Step, VarId};

fn softmax() -> ollie_loops::LoopNest {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/loops/softmax.py");
    let source = std::fs::read_to_string(path).unwrap();
    lower(&ollie_spec::compile(&source, &Default::default()).unwrap().graph).unwrap()
}

fn apply(text: &str) -> Result<ollie_loops::LoopNest, ScheduleError> {
    Schedule::parse(text).unwrap().apply(&softmax())
}

#[test]
fn schedules_print_and_read_back() {
    let s = Schedule {
        steps: vec![Step::Split { var: VarId(3), factor: 4 }, Step::Parallel { var: VarId(0) }, Step::Simd { var: VarId(8) }, Step::Unroll { var: VarId(8), factor: 2 }],
        flags: vec!["-O3".into(), "-fopenmp".into()],
    };
    let text = s.to_string();
    assert_eq!(text, "split i3 4\nparallel i0\nsimd i8\nunroll i8 2\nflags -O3 -fopenmp\n");
    assert_eq!(Schedule::parse(&text).unwrap(), s);
    assert!(matches!(Schedule::parse("twist i0"), Err(ScheduleError::Syntax { line: 1, .. })));
}

#[test]
fn legal_steps_apply_and_keep_the_nest_valid() {
    // softmax's nests: i0/i1 the row max (a reduction over i1), i2/i3 exp, i4/i5 the row sum,
    // i6/i7 the division.
    let nest = apply("parallel i0\nsplit i3 4\nsimd i8\nparallel i2\nunroll i7 4\n").unwrap();
    check(&nest).unwrap();
    let text = nest.to_string();
    assert!(text.contains("for parallel i0 in 0..4 {"), "{text}");
    assert!(text.contains("for i3 in 0..2 {") && text.contains("for simd i8 in 0..4 {"), "{text}");
    assert!(text.contains("t5[8 * i2 + 4 * i3 + i8]"), "{text}");
    assert!(text.contains("for unroll4 i7 in 0..8 {"), "{text}");
    assert_eq!(ollie_loops::parse(&text).unwrap(), nest, "kinds read back");
    let c = ollie_loops::emit_c(&nest);
    assert!(c.contains("#pragma omp parallel for schedule(static)\n    for (long i0") && c.contains("#pragma omp simd") && c.contains("#pragma GCC unroll 4"), "{c}");
}

#[test]
fn illegal_steps_are_refused_with_the_reason() {
    let reason = |text: &str| apply(text).unwrap_err().to_string();
    assert_eq!(reason("parallel i1"), "cannot parallel i1: every iteration writes the same elements (a reduction over this loop)");
    assert_eq!(reason("simd i5"), "cannot simd i5: every iteration writes the same elements (a reduction over this loop)");
    assert_eq!(reason("simd i0"), "cannot simd i0: only an innermost loop runs in SIMD lanes");
    assert_eq!(reason("parallel i2\nparallel i3"), "cannot parallel i3: parallel loops do not nest");
    assert_eq!(reason("split i1 7"), "`i1` has 8 iterations, which 7 does not divide");
    assert_eq!(reason("parallel i42"), "there is no loop `i42`");
}

#[test]
fn a_loop_whose_iterations_read_each_others_writes_is_not_parallel() {
    let nest = ollie_loops::parse(
        "kernel k(x: f32[5]) -> (out: f32[4])\ntemp t: f32[5]\nfor i0 in 0..5 {\n  t[i0] = x[i0]\n}\nfor i1 in 0..4 {\n  t[i1] = mul(t[i1 + 1], 2.0)\n  out[i1] = t[i1]\n}\n",
    )
    .unwrap();
    check(&nest).unwrap();
    let err = Schedule::parse("parallel i1").unwrap().apply(&nest).unwrap_err();
    assert_eq!(err.to_string(), "cannot parallel i1: an iteration reads elements another iteration writes");
    assert!(Schedule::parse("parallel i0").unwrap().apply(&nest).is_ok());
}

#[test]
fn every_step_prints_and_reads_back() {
    let text = "split i3 4\nreorder i0 i1\ndistribute i2\nfuse i0 i2\naccumulators i1 4\nparallel i0\nsimd i8\nvectorize i9 8\nunroll i8 2\nflags -O3\n";
    assert_eq!(Schedule::parse(text).unwrap().to_string(), text);
}

#[test]
fn reorder_interchanges_and_moves_the_statements_beside_the_inner_loop_out() {
    // The row max: `t1[i0] = -inf` beside the reduction over i1.
    let nest = apply("reorder i0 i1\n").unwrap();
    check(&nest).unwrap();
    let text = nest.to_string();
    assert!(text.contains("for i8 in 0..4 {\n  t1[i8] = -inf\n}\nfor i1 in 0..8 {\n  for i0 in 0..4 {\n    t1[i0] = max(t1[i0], x[8 * i0 + i1])"), "{text}");
    let reason = |text: &str| apply(text).unwrap_err().to_string();
    assert_eq!(reason("reorder i1 i0"), "cannot reorder i1 i0: `i0` is not a loop directly inside it");
}

#[test]
fn distribute_gives_each_statement_its_own_loop() {
    let nest = apply("distribute i0\n").unwrap();
    check(&nest).unwrap();
    assert!(nest.to_string().starts_with("kernel softmax(x: f32[4,8]) -> (out: f32[4,8])\ntemp t1: f32[4]\ntemp t5: f32[4,8]\ntemp t6: f32[4]\nfor i0 in 0..4 {\n  t1[i0] = -inf\n}\nfor i8 in 0..4 {\n  for i1 in 0..8 {\n    t1[i8] = max(t1[i8], x[i1 + 8 * i8])"), "{nest}");
    assert_eq!(apply("distribute i1").unwrap_err().to_string(), "cannot distribute i1: the loop's body is a single statement");
}

#[test]
fn fuse_computes_a_producer_at_its_consumer_when_iterations_stay_independent() {
    let nest = apply("fuse i0 i2\nfuse i0 i4\nfuse i0 i6\nparallel i0\n").unwrap();
    check(&nest).unwrap();
    let text = nest.to_string();
    assert_eq!(text.matches("for parallel i0 in 0..4 {").count(), 1, "{text}");
    assert!(text.contains("t5[8 * i0 + i3] = exp(sub(x[8 * i0 + i3], t1[i0]))"), "{text}");
    let reason = |text: &str| apply(text).unwrap_err().to_string();
    assert_eq!(reason("fuse i0 i4"), "cannot fuse i0 i4: the loop after it is `i2`");
    assert_eq!(reason("fuse i1 i3"), "cannot fuse i1 i3: no loop follows it");
    // A consumer reading an element another iteration writes would see it too early.
    let racy = ollie_loops::parse(
        "kernel k(x: f32[4]) -> (out: f32[3])\ntemp t: f32[4]\nfor i0 in 0..3 {\n  t[i0 + 1] = x[i0 + 1]\n}\nfor i1 in 0..3 {\n  out[i1] = add(t[i1 + 1], t[1])\n}\n",
    )
    .unwrap();
    let err = Schedule::parse("fuse i0 i1").unwrap().apply(&racy).unwrap_err();
    assert_eq!(err.to_string(), "cannot fuse i0 i1: an iteration reads elements another iteration writes");
}

#[test]
fn accumulators_split_a_reduction_and_refuse_anything_else() {
    let nest = apply("accumulators i1 4\nvectorize i9 4\n").unwrap();
    check(&nest).unwrap();
    let text = nest.to_string();
    assert!(text.contains("temp acc5: f32[16]"), "{text}");
    assert!(text.contains("for i8 in 0..4 {\n    acc5[4 * i0 + i8] = -inf\n  }"), "{text}");
    assert!(text.contains("for i1 in 0..2 {\n    for vector4 i9 in 0..4 {\n      acc5[4 * i0 + i9] = max(acc5[4 * i0 + i9], x[8 * i0 + 4 * i1 + i9])"), "{text}");
    assert!(text.contains("for i10 in 0..4 {\n    t1[i0] = max(t1[i0], acc5[4 * i0 + i10])"), "{text}");
    let reason = |text: &str| apply(text).unwrap_err().to_string();
    assert_eq!(reason("accumulators i3 2"), "cannot accumulators i3 2: the loop is not a reduction `a[k] = op(a[k], ...)`");
    assert_eq!(reason("accumulators i1 3"), "`i1` has 8 iterations, which 3 does not divide");
}

#[test]
fn vectorize_emits_vector_code_with_a_scalar_tail() {
    let nest = apply("vectorize i7 8\n").unwrap();
    let c = ollie_loops::emit_c(&nest);
    assert!(c.contains("typedef float ollie_v8 __attribute__((vector_size(32)));"), "{c}");
    assert!(c.contains("for (long i7 = 0; i7 < 8; i7 += 8) {"), "{c}");
    assert!(c.contains("ollie_store8(&out[8 * i6 + i7], (ollie_load8(&t5[8 * i6 + i7]) / ollie_splat8(t6[i6])));"), "{c}");
    assert!(!c.contains("i7++"), "8 lanes cover 8 iterations: no tail\n{c}");
    // Ten iterations in four lanes: two vector steps, then a scalar tail of two; every other
    // element by two overlapping loads and a shuffle, a gather where the index moves by more.
    let nest = ollie_loops::parse("kernel k(x: f32[30]) -> (out: f32[10])\nfor i0 in 0..10 {\n  out[i0] = add(exp(x[2 * i0]), x[3 * i0])\n}\n").unwrap();
    let c = ollie_loops::emit_c(&Schedule::parse("vectorize i0 4").unwrap().apply(&nest).unwrap());
    assert!(c.contains("for (long i0 = 0; i0 < 8; i0 += 4) {\n        ollie_store4(&out[i0], (ollie_vexp4(ollie_even4(&x[2 * i0])) + ((ollie_v4){x[3 * i0], x[3 * i0 + 3], x[3 * i0 + 6], x[3 * i0 + 9]})));"), "{c}");
    assert!(c.contains("static inline ollie_v4 ollie_even4(const float *p) { ollie_v4 lo = ollie_load4(p), hi = ollie_load4(p + 4 - 1); return __builtin_shuffle(lo, hi, (ollie_m4){0, 2, 5, 7}); }"), "{c}");
    assert!(c.contains("for (long i0 = 8; i0 < 10; i0++) {\n        out[i0] = (expf(x[2 * i0]) + x[3 * i0]);"), "{c}");
    let reason = |text: &str| apply(text).unwrap_err().to_string();
    // A reduction into one element: each vector's lanes reduced by a tree, then into it; OpenMP
    // `simd` would need a reduction clause, and stays refused.
    let c = ollie_loops::emit_c(&apply("vectorize i1 8\n").unwrap());
    assert!(c.contains("static inline float ollie_reduce_max8(ollie_v8 v) {\n    v = ollie_vmax8(v, __builtin_shuffle(v, (ollie_m8){4, 5, 6, 7, 0, 1, 2, 3}));"), "{c}");
    assert!(c.contains("t1[i0] = ollie_max(t1[i0], ollie_reduce_max8(ollie_load8(&x[8 * i0 + i1])));"), "{c}");
    assert!(!c.contains("ollie_reduce_add8"), "only the reductions a kernel makes get their helper\n{c}");
    assert_eq!(reason("simd i1"), "cannot simd i1: every iteration writes the same elements (a reduction over this loop)");
    assert_eq!(reason("vectorize i7 3"), "cannot vectorize i7 3: the vector width must be 2, 4, 8 or 16");
    assert_eq!(reason("vectorize i7 16"), "cannot vectorize i7 16: the loop has fewer iterations than vector lanes");
}

/// A value a vector loop does not move, computed by a math function (a log-softmax's `log` of the
/// row's sum), is vector math on broadcast operands — pure code that GCC hoists — never a libm call
/// inside the loop, which `errno` would keep there, once per vector.
#[test]
fn invariant_math_in_a_vector_loop_is_vector_math() {
    let source = "import numpy as np\n\ndef f(x: \"f32[4, 32]\") -> \"f32[4, 32]\":\n    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))\n";
    let nest = lower(&ollie_spec::compile(source, &Default::default()).unwrap().graph).unwrap();
    let Some(ollie_loops::Stmt::Loop { body, .. }) = nest.body.last() else { panic!("the output's nest comes last:\n{nest}") };
    let Some(ollie_loops::Stmt::Loop { var, .. }) = body.last() else { panic!("a loop over the row:\n{nest}") };
    let mut vectorized = nest.clone();
    ollie_loops::apply_step(&mut vectorized, &Step::Vectorize { var: *var, width: 16 }).unwrap();
    let c = ollie_loops::emit_c(&vectorized);
    let body = &c[c.find("void f(").expect("the kernel")..];
    assert!(body.contains("ollie_vlog16(ollie_splat16(") && !body.contains("logf("), "{body}");
    // Where the loop stays scalar, the scalar call is right.
    let c = ollie_loops::emit_c(&nest);
    assert!(c[c.find("void f(").unwrap()..].contains("logf("), "{c}");
}
