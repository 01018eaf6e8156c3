//! The accuracy rule: the candidate's error against the float64 reference may not exceed a
//! fixed multiple of the naive kernel's error, normwise and elementwise. There is no absolute
//! tolerance that an all-zero output could pass; the one absolute term is what underflow may
//! cost, a few multiples of the smallest normal number carried through the computation.

use std::fmt;

use ollie_graph::{ErrorBound, Tensor};

/// The constants of the rule: `α` (how many times the baseline's error a candidate may make),
/// the unit roundoff `u` and the smallest normal number `λ` of the output's dtype.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    pub alpha: f64,
    pub unit_roundoff: f64,
    pub smallest_normal: f64,
}

impl Tolerance {
    /// α = 16, u = 2⁻²⁴, λ = 2⁻¹²⁶: float32 outputs.
    pub const F32: Tolerance = Tolerance { alpha: 16.0, unit_roundoff: 1.0 / 16_777_216.0, smallest_normal: f32::MIN_POSITIVE as f64 };
    /// α = 16, u = 2⁻⁵³, λ = 2⁻¹⁰²²: float64 outputs.
    pub const F64: Tolerance = Tolerance { alpha: 16.0, unit_roundoff: 1.0 / 9_007_199_254_740_992.0, smallest_normal: f64::MIN_POSITIVE };
}

/// Why an output is not accurate enough.
#[derive(Debug, Clone, PartialEq)]
pub enum Inaccuracy {
    /// Not finite where the reference and the naive kernel are, or not the reference's NaN or
    /// infinity where it has one.
    NonFinite { index: Vec<usize>, value: f64, reference: f64 },
    /// The worst element (by error over bound) breaks `|y−r| ≤ α·(max(|b−r|, u·E) + λ·A)`.
    Elementwise { index: Vec<usize>, value: f64, reference: f64, error: f64, bound: f64 },
    /// `‖y−r‖ ≤ α·(max(‖b−r‖, u·‖r‖) + λ·‖A‖)` fails.
    Normwise { error: f64, bound: f64 },
}

impl fmt::Display for Inaccuracy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inaccuracy::NonFinite { index, value, reference } => {
                write!(f, "element {index:?} is {value}, the reference is {reference}")
            }
            Inaccuracy::Elementwise { index, value, reference, error, bound } => write!(
                f,
                "element {index:?} is {value:e}, the reference is {reference:e}: error {error:.3e} exceeds the bound {bound:.3e}"
            ),
            Inaccuracy::Normwise { error, bound } => {
                write!(f, "normwise error {error:.3e} exceeds the bound {bound:.3e}")
            }
        }
    }
}

/// Judges one output `y` against the reference `r` (with its error bounds from
/// `ollie_graph::evaluate_with_error_bounds`: `E` in units of `u`, `A` in units of `λ`) and the
/// naive kernel's output `b` on the same inputs.
///
/// Where `r` is NaN, `y` must be NaN; where `r` is infinite, `y` must be the same infinity (or
/// match `b` there); where `r` is finite but the naive kernel is not, `y` may be finite or match
/// `b`; elsewhere `y` must be finite and within `α·(max(|b−r|, u·E) + λ·A)` elementwise, and
/// within `α·(max(‖b−r‖, u·‖r‖) + λ·‖A‖)` in the Euclidean norm over the finite elements. `E`
/// covers what a different order of summation typically costs and each function's float32
/// allowance, so reassociation and a 3-ulp `exp` pass elementwise; `A` covers flush-to-zero and
/// clamped results at the bottom of the range; the normwise rule keeps the candidate as
/// accurate as the baseline overall.
pub fn judge(tolerance: Tolerance, r: &Tensor, bound: &ErrorBound, b: &Tensor, y: &Tensor) -> Result<Figures, Inaccuracy> {
    assert_eq!(r.shape(), y.shape(), "the candidate's output has the reference's shape");
    let Tolerance { alpha, unit_roundoff: u, smallest_normal: lambda } = tolerance;
    let (m, a) = (&bound.rounding, &bound.underflow);
    let index_of = |flat: usize| -> Vec<usize> {
        let mut index = vec![0; r.ndim()];
        let mut rest = flat;
        for (d, &n) in r.shape().iter().enumerate().rev() {
            index[d] = rest % n.max(1);
            rest /= n.max(1);
        }
        index
    };
    let (mut err2, mut base2, mut ref2, mut under2) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    // The element with the largest error over its bound: (ratio, index, error, bound).
    let mut worst: (f64, usize, f64, f64) = (0.0, 0, 0.0, 0.0);
    for (i, ((((&rv, &mv), &av), &bv), &yv)) in r.iter().zip(m.iter()).zip(a.iter()).zip(b.iter()).zip(y.iter()).enumerate() {
        let same = |target: f64| (target.is_nan() && yv.is_nan()) || yv == target;
        let acceptable = if !rv.is_finite() {
            // The reference's NaN or infinity; the baseline's, if it differs, is as good.
            same(rv) || same(bv)
        } else if !bv.is_finite() {
            // The naive kernel fails here itself: no worse than it is any finite value or its own.
            yv.is_finite() || same(bv)
        } else {
            yv.is_finite()
        };
        if !acceptable {
            return Err(Inaccuracy::NonFinite { index: index_of(i), value: yv, reference: rv });
        }
        if !rv.is_finite() || !bv.is_finite() {
            continue;
        }
        let error = (yv - rv).abs();
        let bound = alpha * ((bv - rv).abs().max(u * mv) + lambda * av);
        let ratio = if error == 0.0 { 0.0 } else if bound > 0.0 { error / bound } else { f64::INFINITY };
        if ratio > worst.0 {
            worst = (ratio, i, error, bound);
        }
        err2 += error * error;
        base2 += (bv - rv) * (bv - rv);
        ref2 += rv * rv;
        under2 += av * av;
    }
    let (ratio, i, error, bound) = worst;
    if ratio > 1.0 {
        return Err(Inaccuracy::Elementwise { index: index_of(i), value: y.iter().nth(i).copied().unwrap(), reference: r.iter().nth(i).copied().unwrap(), error, bound });
    }
    let (error, bound) = (err2.sqrt(), alpha * (base2.sqrt().max(u * ref2.sqrt()) + lambda * under2.sqrt()));
    if error > bound {
        return Err(Inaccuracy::Normwise { error, bound });
    }
    Ok(Figures { worst_elementwise: ratio, normwise: if bound > 0.0 { error / bound } else { 0.0 } })
}

/// How close an accepted output came to the bounds (1 would be on them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// The largest error over its elementwise bound.
    pub worst_elementwise: f64,
    /// The normwise error over its bound.
    pub normwise: f64,
}
