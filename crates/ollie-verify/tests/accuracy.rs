//! The accuracy rule on small hand-made outputs: what it accepts and what it rejects, and why.

use ndarray::{arr1, ArrayD};
use ollie_graph::{DType, ErrorBound};
use ollie_verify::{judge, Figures, Inaccuracy, Tolerance};

fn t(v: &[f64]) -> ArrayD<f64> {
    arr1(v).into_dyn()
}

/// Judges with rounding bounds `e` and no underflow allowance.
fn check(r: &[f64], e: &[f64], b: &[f64], y: &[f64]) -> Result<Figures, Inaccuracy> {
    check_with_underflow(r, e, &vec![0.0; r.len()], b, y)
}

fn check_with_underflow(r: &[f64], e: &[f64], a: &[f64], b: &[f64], y: &[f64]) -> Result<Figures, Inaccuracy> {
    judge(Tolerance::F32, &t(r), &ErrorBound { rounding: t(e), underflow: t(a) }, &t(b), &t(y))
}

/// float32's smallest normal number, 2⁻¹²⁶.
const LAMBDA: f64 = f32::MIN_POSITIVE as f64;

const U: f64 = 1.0 / 16_777_216.0;

#[test]
fn the_baseline_and_the_rounded_reference_pass() {
    let r = [1.0, -2.5, 1e-3, 0.0];
    let e = [4.0, 10.0, 1e-2, 1.0];
    let b = [1.0 + 2.0 * U, -2.5, 1e-3 * (1.0 + U), 0.0];
    let figures = check(&r, &e, &b, &b).unwrap();
    // The baseline's own error is at most 1/α of its bound.
    assert!(figures.worst_elementwise > 0.0 && figures.worst_elementwise <= 1.0 / 16.0, "{figures:?}");
    assert!(figures.normwise <= 1.0 / 16.0, "{figures:?}");
    check(&r, &e, &b, &r.map(|v| v as f32 as f64)).unwrap();
}

#[test]
fn an_all_zero_output_fails_however_small_the_values() {
    let r = [1e-20, 2e-20, -3e-20];
    let e = r.map(f64::abs);
    let err = check(&r, &e, &r, &[0.0; 3]).unwrap_err();
    assert!(matches!(err, Inaccuracy::Elementwise { .. }), "{err}");
}

#[test]
fn error_beyond_the_bound_names_the_worst_element() {
    let r = [1.0, 1.0, 1.0];
    let e = [1.0, 1.0, 1.0];
    // bound: 16 · max(|b − r|, u · 1) = 16u for the first two, 16 · 1e-3 for the last
    let b = [1.0, 1.0, 1.001];
    let y = [1.0 + 10.0 * U, 1.0 + 40.0 * U, 1.01];
    match check(&r, &e, &b, &y).unwrap_err() {
        Inaccuracy::Elementwise { index, .. } => assert_eq!(index, vec![1]),
        other => panic!("{other}"),
    }
}

#[test]
fn normwise_catches_what_each_element_hides() {
    // Each element within 16x the baseline's own error, but the baseline is exact nearly
    // everywhere: the norm of the candidate's error is far larger than the baseline's.
    let n = 1000;
    let r = vec![1.0; n];
    let e = vec![1e6; n]; // loose elementwise floor: u · 1e6 ≈ 0.06
    let mut b = r.clone();
    b[0] = 1.0 + 1e-3;
    let y: Vec<f64> = (0..n).map(|i| 1.0 + if i % 2 == 0 { 0.01 } else { -0.01 }).collect();
    let err = check(&r, &e, &b, &y).unwrap_err();
    assert!(matches!(err, Inaccuracy::Normwise { .. }), "{err}");
}

#[test]
fn non_finite_values_follow_the_reference_or_the_baseline() {
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    // NaN where the reference has NaN; not where it is finite.
    check(&[nan, 1.0], &[0.0, 1.0], &[nan, 1.0], &[nan, 1.0]).unwrap();
    assert!(matches!(check(&[nan, 1.0], &[0.0, 1.0], &[nan, 1.0], &[0.0, 1.0]), Err(Inaccuracy::NonFinite { .. })));
    assert!(matches!(check(&[1.0], &[1.0], &[1.0], &[nan]), Err(Inaccuracy::NonFinite { .. })));
    assert!(matches!(check(&[inf], &[0.0], &[inf], &[-inf]), Err(Inaccuracy::NonFinite { .. })));
    // Where float32 itself overflows in the naive kernel, matching it or being finite is fine.
    check(&[1e39], &[1e39], &[inf], &[inf]).unwrap();
    check(&[1e39], &[1e39], &[inf], &[3.0e38]).unwrap();
    assert!(matches!(check(&[1e39], &[1e39], &[inf], &[nan]), Err(Inaccuracy::NonFinite { .. })));
}

#[test]
fn differences_within_the_subnormal_range_pass() {
    // Flush-to-zero: a subnormal result read back as 0 (allowance: one rounding, A = 1).
    let r = [3.0e-39, -1.0e-40, 1.0];
    let e = r.map(f64::abs);
    let a = [1.0, 1.0, 1.0];
    check_with_underflow(&r, &e, &a, &r, &[0.0, 0.0, 1.0]).unwrap();
    // A clamped exp: the smallest normal number where the exact result is far below it.
    check_with_underflow(&[0.0, 1.0], &[0.0, 1.0], &[1.0, 1.0], &[0.0, 1.0], &[LAMBDA, 1.0]).unwrap();
    // ... amplified where the computation amplifies it (A carries the derivatives).
    check_with_underflow(&[1e-10], &[1e-10], &[1e30], &[1e-10], &[0.0]).unwrap();
    // The normwise rule allows the same: every element flushed, none of them normal.
    let tiny = vec![1e-40; 1000];
    check_with_underflow(&tiny, &tiny, &vec![1.0; 1000], &tiny, &vec![0.0; 1000]).unwrap();
}

#[test]
fn flushing_normal_numbers_fails() {
    // α·λ·A = 16λ here: a value 32 times the smallest normal number may not vanish.
    let r = [32.0 * LAMBDA, 1.0];
    let err = check_with_underflow(&r, &r, &[1.0, 1.0], &r, &[0.0, 1.0]).unwrap_err();
    assert!(matches!(err, Inaccuracy::Elementwise { ref index, .. } if index == &vec![0]), "{err}");
    // Without an underflow allowance (a computation that cannot underflow), nothing is flushed.
    assert!(check(&[1e-39], &[1e-39], &[1e-39], &[0.0]).is_err());
}

/// A bfloat16 output of an accurate float32 computation: values spread over many binades, the
/// naive kernel's float32 value a few ulps off the reference, then rounded.
fn bf16_case() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let r: Vec<f64> = (0..4096).map(|_| (next() - 0.5) * 2f64.powf(16.0 * next() - 8.0)).collect();
    let e = vec![8.0; r.len()];
    let b: Vec<f64> = r.iter().map(|&v| DType::BF16.round(((v * (1.0 + 3.0 * U)) as f32) as f64)).collect();
    (r, e, b)
}

fn judge_bf16(r: &[f64], e: &[f64], b: &[f64], y: &[f64]) -> Result<Figures, Inaccuracy> {
    judge(Tolerance::of(DType::BF16), &t(r), &ErrorBound { rounding: t(e), underflow: t(&vec![0.0; r.len()]) }, &t(b), &t(y))
}

#[test]
fn a_16_bit_output_may_round_once_but_not_twice_nor_toward_zero() {
    let (r, e, b) = bf16_case();
    // The naive kernel, the rounded reference, and another accurate float32 value rounded.
    judge_bf16(&r, &e, &b, &b).unwrap();
    judge_bf16(&r, &e, &b, &r.iter().map(|&v| DType::BF16.round(v)).collect::<Vec<_>>()).unwrap();
    judge_bf16(&r, &e, &b, &r.iter().map(|&v| DType::BF16.round(v * (1.0 - 5.0 * U))).collect::<Vec<_>>()).unwrap();
    // Rounded twice: the value before its last product (by a bfloat16 weight w) rounded too.
    let w = [0.75, 1.25, 1.5, 0.875];
    let twice: Vec<f64> = r.iter().enumerate().map(|(i, &v)| DType::BF16.round(DType::BF16.round(v / w[i % 4]) * w[i % 4])).collect();
    assert!(matches!(judge_bf16(&r, &e, &b, &twice), Err(Inaccuracy::Elementwise { .. })));
    // Truncated: the float32 value's low half dropped.
    let truncated: Vec<f64> = r.iter().map(|&v| f32::from_bits((v as f32).to_bits() & 0xffff_0000) as f64).collect();
    assert!(matches!(judge_bf16(&r, &e, &b, &truncated), Err(Inaccuracy::Elementwise { .. })));
}
