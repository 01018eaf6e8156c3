//! The accuracy rule on softmax, against the real naive kernel: float32 computations in other
//! orders are accepted on every input family; an all-zero output, a crude exp, one perturbed
//! element, a NaN, and a dropped max-subtraction on large inputs are rejected.

use std::time::Duration;

use ndarray::{ArrayD, Axis, IxDyn};
use ollie_graph::{evaluate_with_error_bounds, DType, ErrorBound, Tensor};
use ollie_runner::{BufferSpec, Compiler, Outcome, Runner};
use ollie_verify::{judge, Inaccuracy, Tolerance};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SPEC: &str = "import numpy as np\n\ndef softmax(x: \"f32[16, 300]\"):\n    e = np.exp(x - x.max(axis=-1, keepdims=True))\n    return e / e.sum(axis=-1, keepdims=True)\n";

struct Case {
    x: Tensor,
    r: Tensor,
    m: ErrorBound,
    b: Tensor,
}

fn cases() -> Vec<Case> {
    let graph = ollie_spec::compile(SPEC, &Default::default()).unwrap().graph;
    let c = ollie_loops::emit_c(&ollie_loops::lower(&graph).unwrap());
    let cache = tempfile::tempdir().unwrap();
    let library = Compiler::new(cache.path()).compile(&c, &["-O2".into()]).unwrap().library;
    let runner = Runner::new(env!("CARGO_BIN_EXE_ollie"), Duration::from_secs(30));
    let spec = BufferSpec { dtype: DType::F32, shape: vec![16, 300] };
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut out = Vec::new();
    // Families: standard normal, uniform, large magnitude, tiny, and rows with a constant value.
    for family in 0..5 {
        for _ in 0..3 {
            let x = ArrayD::from_shape_simple_fn(IxDyn(&[16, 300]), || {
                let v: f64 = match family {
                    0 => rng.random_range(-3.0..3.0),
                    1 => rng.random_range(0.0..1.0),
                    2 => rng.random_range(-300.0..300.0),
                    3 => rng.random_range(-1e-30..1e-30),
                    _ => 2.5,
                };
                v as f32 as f64
            });
            let (r, m) = evaluate_with_error_bounds(&graph, std::slice::from_ref(&x)).unwrap();
            let Outcome::Ran { outputs, .. } = runner.run(&library, "softmax", &[(spec.clone(), &x)], std::slice::from_ref(&spec)).unwrap() else { panic!() };
            out.push(Case { x, r: r[0].clone(), m: m[0].clone(), b: outputs[0].clone() });
        }
    }
    out
}

/// Softmax in float32 with the row sum in `order` (`pairwise` or 8 strided accumulators) and
/// `exp` given.
fn softmax_f32(x: &Tensor, pairwise: bool, exp: impl Fn(f32) -> f32, subtract_max: bool) -> Tensor {
    let mut y = x.mapv(|v| v as f32 as f64);
    for mut row in y.axis_iter_mut(Axis(0)) {
        let v: Vec<f32> = row.iter().map(|&a| a as f32).collect();
        let m = if subtract_max { v.iter().copied().fold(f32::NEG_INFINITY, f32::max) } else { 0.0 };
        let e: Vec<f32> = v.iter().map(|&a| exp(a - m)).collect();
        let s = if pairwise { pairwise_sum(&e) } else {
            let mut acc = [0f32; 8];
            for (i, &t) in e.iter().enumerate() {
                acc[i % 8] += t;
            }
            acc.iter().sum()
        };
        for (o, &t) in row.iter_mut().zip(&e) {
            *o = (t * (1.0 / s)) as f64;
        }
    }
    y
}

fn pairwise_sum(v: &[f32]) -> f32 {
    if v.len() <= 4 {
        return v.iter().sum();
    }
    let (a, b) = v.split_at(v.len() / 2);
    pairwise_sum(a) + pairwise_sum(b)
}

#[test]
fn other_orders_and_reciprocals_are_accepted_on_every_family() {
    for (k, c) in cases().iter().enumerate() {
        for pairwise in [true, false] {
            let y = softmax_f32(&c.x, pairwise, f32::exp, true);
            judge(Tolerance::F32, &c.r, &c.m, &c.b, &y).unwrap_or_else(|e| panic!("case {k}, pairwise {pairwise}: {e}"));
        }
        let rounded = c.r.mapv(|v| v as f32 as f64);
        judge(Tolerance::F32, &c.r, &c.m, &c.b, &rounded).unwrap();
        judge(Tolerance::F32, &c.r, &c.m, &c.b, &c.b).unwrap();
    }
}

#[test]
fn wrong_outputs_are_rejected() {
    let cases = cases();
    let c = &cases[0];
    let zeros = ArrayD::zeros(c.r.raw_dim());
    assert!(matches!(judge(Tolerance::F32, &c.r, &c.m, &c.b, &zeros), Err(Inaccuracy::Elementwise { .. })));
    // A crude exp: right to about three digits.
    let crude = softmax_f32(&c.x, true, |a| a.exp() * (1.0 + 1e-3 * (a * 7.0).sin()), true);
    assert!(judge(Tolerance::F32, &c.r, &c.m, &c.b, &crude).is_err());
    let mut one_off = c.b.clone();
    one_off[[3, 17]] *= 1.0 + 1e-4;
    let err = judge(Tolerance::F32, &c.r, &c.m, &c.b, &one_off).unwrap_err();
    assert!(matches!(&err, Inaccuracy::Elementwise { index, .. } if index == &vec![3, 17]), "{err}");
    let mut nan = c.b.clone();
    nan[[0, 0]] = f64::NAN;
    assert!(matches!(judge(Tolerance::F32, &c.r, &c.m, &c.b, &nan), Err(Inaccuracy::NonFinite { .. })));
    // Large-magnitude inputs: without the max subtraction exp overflows.
    let large = &cases[6];
    let unsafe_softmax = softmax_f32(&large.x, true, f32::exp, false);
    assert!(matches!(judge(Tolerance::F32, &large.r, &large.m, &large.b, &unsafe_softmax), Err(Inaccuracy::NonFinite { .. })));
}
