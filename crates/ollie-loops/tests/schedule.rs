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
    assert!(c.contains("#pragma omp parallel for\n    for (long i0") && c.contains("#pragma omp simd") && c.contains("#pragma GCC unroll 4"), "{c}");
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
