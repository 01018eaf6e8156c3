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
/// naive kernel's output `b` on the same inputs: [`Target::new`] then [`Target::judge`].
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
    Target::new(tolerance, r, bound, b).judge(y.iter().copied())
}

/// What one output must be, folded once from the reference, its error bounds and the naive
/// kernel's output, so that judging a call reads two numbers per element: the reference and the
/// elementwise bound. Elements where the reference or the naive output is not finite are kept
/// apart, with both values, for the rule's special cases.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    shape: Vec<usize>,
    /// The reference, then per element `α·(max(|b−r|, u·E) + λ·A)` (NaN where the element is
    /// special): one allocation, which the oracle's files hold as it is.
    values: Vec<f64>,
    /// By increasing index: elements where `r` or `b` is NaN or infinite.
    specials: Vec<Special>,
    /// `α·(max(‖b−r‖, u·‖r‖) + λ·‖A‖)` over the elements that are not special.
    norm_bound: f64,
}

/// An element where the reference or the naive kernel's output is NaN or infinite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Special {
    pub index: usize,
    pub reference: f64,
    pub baseline: f64,
}

impl Target {
    pub fn new(tolerance: Tolerance, r: &Tensor, bound: &ErrorBound, b: &Tensor) -> Target {
        let Tolerance { alpha, unit_roundoff: u, smallest_normal: lambda } = tolerance;
        let (m, a) = (&bound.rounding, &bound.underflow);
        let n = r.len();
        let mut values = Vec::with_capacity(2 * n);
        values.extend(r.iter());
        let mut specials = Vec::new();
        let (mut base2, mut ref2, mut under2) = (0.0f64, 0.0f64, 0.0f64);
        for (i, (((&rv, &mv), &av), &bv)) in r.iter().zip(m.iter()).zip(a.iter()).zip(b.iter()).enumerate() {
            if !rv.is_finite() || !bv.is_finite() {
                values.push(f64::NAN);
                specials.push(Special { index: i, reference: rv, baseline: bv });
                continue;
            }
            let bound = alpha * ((bv - rv).abs().max(u * mv) + lambda * av);
            // A bound that is NaN (an infinite derivative times a zero bound) constrains nothing.
            values.push(if bound.is_nan() { f64::INFINITY } else { bound });
            base2 += (bv - rv) * (bv - rv);
            ref2 += rv * rv;
            under2 += av * av;
        }
        let norm_bound = alpha * (base2.sqrt().max(u * ref2.sqrt()) + lambda * under2.sqrt());
        Target { shape: r.shape().to_vec(), values, specials, norm_bound }
    }

    /// Judges the candidate's output, its elements `y` in the reference's (standard) order.
    pub fn judge(&self, y: impl Iterator<Item = f64>) -> Result<Figures, Inaccuracy> {
        let (reference, bounds) = self.values.split_at(self.values.len() / 2);
        let mut err2 = 0.0f64;
        // The element with the largest error over its bound: (ratio, index, value, error, bound).
        let mut worst: (f64, usize, f64, f64, f64) = (0.0, 0, 0.0, 0.0, 0.0);
        let mut count = 0;
        for (i, ((&rv, &tv), yv)) in reference.iter().zip(bounds).zip(y).enumerate() {
            count += 1;
            let error = (yv - rv).abs();
            if error <= tv {
                err2 += error * error;
                if error > 0.0 && error > worst.0 * tv {
                    worst = (error / tv, i, yv, error, tv);
                }
                continue;
            }
            if tv.is_nan() {
                let s = self.specials[self.specials.binary_search_by_key(&i, |s| s.index).expect("a NaN bound marks a special element")];
                let same = |target: f64| (target.is_nan() && yv.is_nan()) || yv == target;
                let acceptable = if !s.reference.is_finite() {
                    // The reference's NaN or infinity; the baseline's, if it differs, is as good.
                    same(s.reference) || same(s.baseline)
                } else {
                    // The naive kernel fails here itself: no worse than it is any finite value or its own.
                    yv.is_finite() || same(s.baseline)
                };
                if !acceptable {
                    return Err(Inaccuracy::NonFinite { index: self.index_of(i), value: yv, reference: rv });
                }
                continue;
            }
            if !yv.is_finite() {
                return Err(Inaccuracy::NonFinite { index: self.index_of(i), value: yv, reference: rv });
            }
            let ratio = if tv > 0.0 { error / tv } else { f64::INFINITY };
            if ratio > worst.0 {
                worst = (ratio, i, yv, error, tv);
            }
            err2 += error * error;
        }
        assert_eq!(count, reference.len(), "the candidate's output has the reference's size");
        let (ratio, i, value, error, bound) = worst;
        if ratio > 1.0 {
            return Err(Inaccuracy::Elementwise { index: self.index_of(i), value, reference: reference[i], error, bound });
        }
        let (error, bound) = (err2.sqrt(), self.norm_bound);
        if error > bound {
            return Err(Inaccuracy::Normwise { error, bound });
        }
        Ok(Figures { worst_elementwise: ratio, normwise: if bound > 0.0 { error / bound } else { 0.0 } })
    }

    /// The reference's values, in standard order.
    pub fn reference(&self) -> &[f64] {
        &self.values[..self.values.len() / 2]
    }

    /// The memory the target holds.
    pub fn bytes(&self) -> usize {
        8 * self.values.len() + std::mem::size_of::<Special>() * self.specials.len()
    }

    fn index_of(&self, flat: usize) -> Vec<usize> {
        let mut index = vec![0; self.shape.len()];
        let mut rest = flat;
        for (d, &n) in self.shape.iter().enumerate().rev() {
            index[d] = rest % n.max(1);
            rest /= n.max(1);
        }
        index
    }

    /// The parts the oracle's files store: shape, reference then bounds, special elements and
    /// the normwise bound.
    pub(crate) fn parts(&self) -> (&[usize], &[f64], &[Special], f64) {
        (&self.shape, &self.values, &self.specials, self.norm_bound)
    }

    /// A target from [`Target::parts`] read back; `None` if they cannot be one.
    pub(crate) fn from_parts(shape: Vec<usize>, values: Vec<f64>, specials: Vec<Special>, norm_bound: f64) -> Option<Target> {
        let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        if values.len() != 2 * n {
            return None;
        }
        // Every special element, and only those, has a NaN bound (so `judge` finds each).
        let bounds = &values[n..];
        let increasing = specials.windows(2).all(|w| w[0].index < w[1].index);
        let marked = specials.iter().all(|s| bounds.get(s.index).is_some_and(|b| b.is_nan()));
        if !increasing || !marked || bounds.iter().filter(|b| b.is_nan()).count() != specials.len() {
            return None;
        }
        Some(Target { shape, values, specials, norm_bound })
    }
}

/// How close an accepted output came to the bounds (1 would be on them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// The largest error over its elementwise bound.
    pub worst_elementwise: f64,
    /// The normwise error over its bound.
    pub normwise: f64,
}
