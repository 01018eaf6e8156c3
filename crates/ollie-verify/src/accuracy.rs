//! The accuracy rule: the candidate's error against the float64 reference may not exceed a
//! fixed multiple of the naive kernel's error, normwise and elementwise. There is no absolute
//! tolerance that an all-zero output could pass; the one absolute term is what underflow may
//! cost, a few multiples of the smallest normal number carried through the computation.

use std::borrow::Cow;
use std::fmt;

use ollie_graph::{DType, ErrorBound, Tensor};

use crate::values::Values;

/// The constants of the rule: `α` (how many times the baseline's error a candidate may make),
/// the unit roundoff `u` and the smallest normal number `λ` of the dtype the output is computed
/// in, and for a 16-bit output the rounding where it is stored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    pub alpha: f64,
    pub unit_roundoff: f64,
    pub smallest_normal: f64,
    pub storage: Option<Storage>,
}

/// A 16-bit output, computed in float32 and rounded once where it is stored: the rounding may
/// move it by `unit·|y|` (half an ulp), or by `spacing` among the subnormals. That rounding is
/// allowed once, not `α` times, so a kernel that rounds twice (an intermediate to bfloat16,
/// then the result) is told apart from one that rounds once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Storage {
    pub dtype: DType,
    pub unit: f64,
    pub spacing: f64,
}

impl Tolerance {
    /// Where a value `v` a kernel computes may lie, given its bounds `E` (`rounding`) and `A`
    /// (`underflow`): `[v − w, v + w]` with `w = α·(u·E + λ·A)`, the whole line where `w` is
    /// unknown. The index judges' rule (`index.rs`, `order.rs`).
    pub fn interval(&self, v: f64, rounding: f64, underflow: f64) -> (f64, f64) {
        let w = self.alpha * (self.unit_roundoff * rounding + self.smallest_normal * underflow);
        if w.is_finite() { (v - w, v + w) } else { (f64::NEG_INFINITY, f64::INFINITY) }
    }

    /// α = 16, u = 2⁻²⁴, λ = 2⁻¹²⁶: float32 outputs.
    pub const F32: Tolerance = Tolerance { alpha: 16.0, unit_roundoff: 1.0 / 16_777_216.0, smallest_normal: f32::MIN_POSITIVE as f64, storage: None };
    /// α = 16, u = 2⁻⁵³, λ = 2⁻¹⁰²²: float64 outputs.
    pub const F64: Tolerance = Tolerance { alpha: 16.0, unit_roundoff: 1.0 / 9_007_199_254_740_992.0, smallest_normal: f64::MIN_POSITIVE, storage: None };

    /// The tolerance of an output of `dtype`: float32's for a 16-bit float (computed in
    /// float32), with its storage rounding of 2⁻¹¹ (float16; subnormal spacing 2⁻²⁴) or 2⁻⁸
    /// (bfloat16; 2⁻¹³³).
    pub fn of(dtype: DType) -> Tolerance {
        let storage = |spacing: f64| Some(Storage { dtype, unit: dtype.unit_roundoff(), spacing: spacing / 2.0 });
        match dtype {
            DType::F64 => Tolerance::F64,
            DType::F16 => Tolerance { storage: storage(2f64.powi(-24)), ..Tolerance::F32 },
            DType::BF16 => Tolerance { storage: storage(2f64.powi(-133)), ..Tolerance::F32 },
            _ => Tolerance::F32,
        }
    }

    /// Whether targets may be kept in float32 (where that is sound: see [`Target::fold`]).
    fn narrow(&self) -> bool {
        self.unit_roundoff == Tolerance::F32.unit_roundoff
    }

    /// `x` as the output's dtype stores it.
    fn stored(&self, x: f64) -> f64 {
        match self.storage {
            Some(s) => s.dtype.round(x),
            None if self.narrow() => f64::from(x as f32),
            None => x,
        }
    }
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
    /// An index output's element is none of the `right` indices as right as numpy's
    /// `reference` (see `index.rs`).
    Index { index: Vec<usize>, value: f64, reference: usize, right: usize },
    /// An `argsort` output's element breaks the order numpy's could be (see `order.rs`), for
    /// the reason `why`; numpy's index there is `reference`.
    Order { index: Vec<usize>, value: f64, reference: usize, why: &'static str },
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
            Inaccuracy::Index { index, value, reference, right: 1 } => {
                write!(f, "element {index:?} is {value}, numpy's index is {reference}")
            }
            Inaccuracy::Index { index, value, reference, right } => write!(
                f,
                "element {index:?} is {value}, numpy's index is {reference} ({} others are as right within the values' error bounds)",
                right - 1
            ),
            Inaccuracy::Order { index, value, reference, why } => write!(f, "element {index:?} is {value}: {why} (numpy's index there is {reference})"),
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
    values: Values,
    /// By increasing index: elements where `r` or `b` is NaN or infinite.
    specials: Vec<Special>,
    /// `α·(max(‖b−r‖, u·‖r‖) + λ·‖A‖)` over the elements that are not special (less what
    /// rounding the reference to float32 cost, when it is kept in float32).
    norm_bound: f64,
}

impl Values {
    /// The indices of the NaN bounds (which mark special elements), in increasing order.
    fn nan_bounds(&self) -> Vec<usize> {
        fn nans<T: Copy + Into<f64>>(v: &[T]) -> Vec<usize> {
            let bounds = &v[v.len() / 2..];
            // Whole chunks without a NaN are passed over in one comparison each.
            let mut out = Vec::new();
            for (c, chunk) in bounds.chunks(256).enumerate() {
                if chunk.iter().fold(false, |any, &x| any | x.into().is_nan()) {
                    out.extend(chunk.iter().enumerate().filter(|(_, &x)| x.into().is_nan()).map(|(i, _)| 256 * c + i));
                }
            }
            out
        }
        match self {
            Values::F32(v) => nans(v),
            Values::F64(v) => nans(v),
            Values::F16(_) | Values::BF16(_) | Values::I8(_) | Values::U8(_) | Values::I32(_) | Values::I64(_) => unreachable!("targets are float32 or float64"),
        }
    }
}

/// `x` rounded to a float32 no larger than it.
fn f32_at_most(x: f64) -> f32 {
    let y = x as f32;
    if f64::from(y) > x {
        f32::from_bits(if y > 0.0 { y.to_bits() - 1 } else if y == 0.0 { 0x8000_0001 } else { y.to_bits() + 1 })
    } else {
        y
    }
}

/// Relative slack for the float64 arithmetic of a lowered bound, so that it rounds down.
const SLACK: f64 = 1.0 - 1.0 / (1u64 << 50) as f64;

/// An element where the reference or the naive kernel's output is NaN or infinite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Special {
    pub index: usize,
    pub reference: f64,
    pub baseline: f64,
}

impl Target {
    /// The target of an output: in float32 where the output is float32 and that is sound.
    pub fn new(tolerance: Tolerance, r: &Tensor, bound: &ErrorBound, b: &Tensor) -> Target {
        let flat = |t: &Tensor| t.as_standard_layout().iter().copied().collect::<Vec<f64>>();
        let b = flat(b);
        Target::from_reference(tolerance, r, bound, Some(&b[..]))
    }

    /// [`Target::new`] with the naive kernel's output `b` as it lies in memory (float32 or
    /// float64, in standard order) — or, without one, the a-priori target: the reference
    /// rounded to the output's dtype stands for `b` elementwise (`|b − r|` is then as small as
    /// any kernel's rounding can make it), and the normwise bound is
    /// `α·(max(‖r₃₂ − r‖, u·‖E‖) + λ·‖A‖)`, the a-priori bound's norm, in place of the naive kernel's measured error
    /// (which the elementwise rule then implies).
    pub(crate) fn from_reference<B: Copy + Into<f64>>(tolerance: Tolerance, r: &Tensor, bound: &ErrorBound, b: Option<&[B]>) -> Target {
        assert!(b.is_none_or(|b| b.len() == r.len()), "the naive output has the reference's size");
        let (r, m, a) = (r.as_standard_layout(), bound.rounding.as_standard_layout(), bound.underflow.as_standard_layout());
        let slice = |t: &ndarray::CowArray<'_, f64, ndarray::IxDyn>| -> Vec<f64> { t.iter().copied().collect() };
        let (rs, ms, as_) = (r.as_slice().map(Cow::Borrowed), m.as_slice().map(Cow::Borrowed), a.as_slice().map(Cow::Borrowed));
        let (rs, ms, as_) = (rs.unwrap_or_else(|| Cow::Owned(slice(&r))), ms.unwrap_or_else(|| Cow::Owned(slice(&m))), as_.unwrap_or_else(|| Cow::Owned(slice(&a))));
        let shape = r.shape().to_vec();
        let narrow = if tolerance.narrow() { Target::fold(tolerance, &shape, &rs, &ms, &as_, b, true) } else { None };
        narrow.or_else(|| Target::fold(tolerance, &shape, &rs, &ms, &as_, b, false)).expect("a float64 target always folds")
    }

    /// The target from the reference `r`, its bounds `m` (rounding) and `a` (underflow) and the
    /// naive output `b`, all flat in standard order: with its values in float32 if `narrow`
    /// (`None` where that would not be sound: a finite reference beyond float32's range, a bound
    /// that would go negative), else in float64. One pass, no float64 copy on the way to float32.
    ///
    /// A target's reference-then-bounds values are kept in float32 for a float32 output, where that
    /// is sound (half the bytes to keep, read and judge), else in float64.
    ///
    /// Rounding the reference `r` to `r₃₂` moves it by `d = |r − r₃₂|`, so each bound is lowered by
    /// `d` (and rounded down): `|y − r₃₂| ≤ t − d` implies `|y − r| ≤ t`, and likewise the normwise
    /// bound is lowered by `‖r − r₃₂‖`. Judging against float32 values is never looser than against
    /// the float64 ones, and at most an eighth stricter: the naive kernel's own float32 output is at
    /// least `d` from `r`, every bound at least α = 16 times that, and `|y − r₃₂|` at most `d` more
    /// than `|y − r|`.
    fn fold<B: Copy + Into<f64>>(tolerance: Tolerance, shape: &[usize], r: &[f64], m: &[f64], a: &[f64], b: Option<&[B]>, narrow: bool) -> Option<Target> {
        let Tolerance { alpha, unit_roundoff: u, smallest_normal: lambda, storage } = tolerance;
        let n = r.len();
        let (mut wide, mut thin) = if narrow { (Vec::new(), vec![0f32; 2 * n]) } else { ([r, &vec![0.0; n]].concat(), Vec::new()) };
        let mut specials = Vec::new();
        let (mut base2, mut ref2, mut under2, mut moved2, mut bound2, mut finite) = (0.0f64, 0.0f64, 0.0f64, 0.0f64, 0.0f64, 0usize);
        // A 16-bit output's storage rounding: `unit·|x| + spacing` at most.
        let (store_unit, store_spacing) = storage.map_or((0.0, 0.0), |s| (s.unit, s.spacing));
        for (i, ((&rv, &mv), &av)) in r.iter().zip(m).zip(a).enumerate() {
            // Without the naive output, the reference rounded to the output's dtype stands for it.
            let bv: f64 = b.map_or_else(|| tolerance.stored(rv), |b| b[i].into());
            let t = if !rv.is_finite() || !bv.is_finite() {
                specials.push(Special { index: i, reference: rv, baseline: bv });
                f64::NAN
            } else {
                // The naive kernel's error less what storing its result may have cost: its error
                // in float32, which a candidate may make α times; then its own storage rounding.
                let deviation = ((bv - rv).abs() - (store_unit * bv.abs() * (1.0 + 2.0 * store_unit) + store_spacing)).max(0.0);
                let computed = alpha * (deviation.max(u * mv) + lambda * av);
                let bound = if storage.is_some() { computed + store_unit * (rv.abs() + computed) + store_spacing } else { computed };
                finite += 1;
                base2 += deviation * deviation;
                ref2 += rv * rv;
                bound2 += mv * mv;
                under2 += av * av;
                // A bound that is NaN (an infinite derivative times a zero bound) constrains nothing.
                if bound.is_nan() { f64::INFINITY } else { bound }
            };
            if !narrow {
                wide[n + i] = t;
                continue;
            }
            let r32 = rv as f32;
            thin[i] = r32;
            thin[n + i] = if t.is_nan() || t == f64::INFINITY {
                t as f32
            } else {
                if !r32.is_finite() {
                    return None;
                }
                let d = (rv - f64::from(r32)).abs();
                moved2 += d * d;
                let lowered = (t - d) * SLACK;
                if lowered.is_nan() || lowered < 0.0 {
                    return None;
                }
                f32_at_most(lowered)
            };
        }
        // The naive kernel's error overall, or without it the a-priori bound's norm.
        let base = if b.is_some() { base2.sqrt() } else { base2.sqrt().max(u * bound2.sqrt()) };
        let computed = alpha * (base.max(u * ref2.sqrt()) + lambda * under2.sqrt());
        let norm_bound = if storage.is_some() { computed + store_unit * (ref2.sqrt() + computed) + store_spacing * (finite as f64).sqrt() } else { computed };
        let shape = shape.to_vec();
        if !narrow {
            return Some(Target { shape, values: Values::F64(wide), specials, norm_bound });
        }
        let lowered = (norm_bound - moved2.sqrt()) * SLACK;
        (lowered >= 0.0 || norm_bound.is_infinite()).then_some(Target { shape, values: Values::F32(thin), specials, norm_bound: lowered })
    }

    /// Judges the candidate's output, its elements `y` in the reference's (standard) order.
    pub fn judge(&self, y: impl Iterator<Item = f64>) -> Result<Figures, Inaccuracy> {
        self.judge_slice(&y.collect::<Vec<f64>>())
    }

    /// Whether some element's reference or naive output is NaN or infinite.
    pub fn has_specials(&self) -> bool {
        !self.specials.is_empty()
    }

    /// [`Target::judge`] on the output as it lies in memory (float32 or float64).
    pub fn judge_slice<Y: Copy + Into<f64>>(&self, y: &[Y]) -> Result<Figures, Inaccuracy> {
        match &self.values {
            Values::F32(v) => self.judge_against(v, y),
            Values::F64(v) => self.judge_against(v, y),
            Values::F16(_) | Values::BF16(_) | Values::I8(_) | Values::U8(_) | Values::I32(_) | Values::I64(_) => unreachable!("targets are float32 or float64"),
        }
    }

    fn judge_against<T: Copy + Into<f64>, Y: Copy + Into<f64>>(&self, values: &[T], y: &[Y]) -> Result<Figures, Inaccuracy> {
        let (reference, bounds) = values.split_at(values.len() / 2);
        assert_eq!(y.len(), reference.len(), "the candidate's output has the reference's size");
        let mut err2 = 0.0f64;
        // The element with the largest error over its bound: (ratio, index, value, error, bound).
        let mut worst: (f64, usize, f64, f64, f64) = (0.0, 0, 0.0, 0.0, 0.0);
        // The position in `specials` of the last special element met.
        let mut special = 0;
        // Blocks of elements all within their bounds, none beating the worst so far, take one
        // pass without branches (which the compiler vectorizes); any other block is judged
        // element by element.
        const LANES: usize = 8;
        const BLOCK: usize = 8 * LANES;
        let mut start = 0;
        while start < reference.len() {
            let end = (start + BLOCK).min(reference.len());
            if end - start == BLOCK {
                let (r, t, yy) = (&reference[start..end], &bounds[start..end], &y[start..end]);
                let (mut within, mut beats, mut sums) = (true, false, [0.0f64; LANES]);
                for ((r, t), yy) in r.chunks_exact(LANES).zip(t.chunks_exact(LANES)).zip(yy.chunks_exact(LANES)) {
                    for k in 0..LANES {
                        let (rv, tv, yv): (f64, f64, f64) = (r[k].into(), t[k].into(), yy[k].into());
                        let error = (yv - rv).abs();
                        within &= error <= tv;
                        beats |= error > worst.0 * tv;
                        sums[k] += error * error;
                    }
                }
                if within && !beats {
                    err2 += sums.iter().sum::<f64>();
                    start = end;
                    continue;
                }
            }
            for i in start..end {
                let (rv, tv, yv): (f64, f64, f64) = (reference[i].into(), bounds[i].into(), y[i].into());
                let error = (yv - rv).abs();
                if error <= tv {
                    err2 += error * error;
                    if error > 0.0 && error > worst.0 * tv {
                        worst = (error / tv, i, yv, error, tv);
                    }
                    continue;
                }
                if tv.is_nan() {
                    // Elements are judged in order: the special sought is at or after the last
                    // (a walk, not a search: a whole output of them costs one pass).
                    while self.specials[special].index < i {
                        special += 1;
                    }
                    let s = self.specials[special];
                    assert_eq!(s.index, i, "a NaN bound marks a special element");
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
            start = end;
        }
        let (ratio, i, value, error, bound) = worst;
        if ratio > 1.0 {
            return Err(Inaccuracy::Elementwise { index: self.index_of(i), value, reference: reference[i].into(), error, bound });
        }
        let (error, bound) = (err2.sqrt(), self.norm_bound);
        if error > bound {
            return Err(Inaccuracy::Normwise { error, bound });
        }
        Ok(Figures { worst_elementwise: ratio, normwise: if bound > 0.0 { error / bound } else { 0.0 } })
    }

    /// The reference's values' bytes (float32 or float64), in standard order.
    pub fn reference_bytes(&self) -> &[u8] {
        let bytes = self.values.bytes();
        &bytes[..bytes.len() / 2]
    }

    /// The memory the target holds.
    pub fn bytes(&self) -> usize {
        self.values.width() * self.values.len() + std::mem::size_of::<Special>() * self.specials.len()
    }

    fn index_of(&self, flat: usize) -> Vec<usize> {
        unflatten(&self.shape, flat)
    }

    /// The parts the oracle's files store: shape, reference then bounds, special elements and
    /// the normwise bound.
    pub(crate) fn parts(&self) -> (&[usize], &Values, &[Special], f64) {
        (&self.shape, &self.values, &self.specials, self.norm_bound)
    }

    /// A target from [`Target::parts`] read back; `None` if they cannot be one.
    pub(crate) fn from_parts(shape: Vec<usize>, values: Values, specials: Vec<Special>, norm_bound: f64) -> Option<Target> {
        let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        if values.len() != 2 * n {
            return None;
        }
        // Every special element, and only those, has a NaN bound (so `judge` finds each).
        if !values.nan_bounds().into_iter().eq(specials.iter().map(|s| s.index)) {
            return None;
        }
        Some(Target { shape, values, specials, norm_bound })
    }
}

/// The index of the element at `flat` in standard order of an array of `shape`.
pub(crate) fn unflatten(shape: &[usize], flat: usize) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    let mut rest = flat;
    for (d, &n) in shape.iter().enumerate().rev() {
        index[d] = rest % n.max(1);
        rest /= n.max(1);
    }
    index
}

/// How close an accepted output came to the bounds (1 would be on them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// The largest error over its elementwise bound.
    pub worst_elementwise: f64,
    /// The normwise error over its bound.
    pub normwise: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    /// A float32 output's reference, bounds and naive output over many magnitudes, and the same
    /// target kept in float64.
    fn targets(seed: u64) -> (Tensor, Target, Target) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let n = 4000;
        let r: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0) * 2f64.powi(rng.random_range(-140..120))).collect();
        // The naive kernel's float32 output: r rounded, then a few ulps off.
        let b: Vec<f64> = r.iter().map(|&x| f64::from((x as f32) * (1.0 + rng.random_range(-3.0..3.0) * f32::EPSILON))).collect();
        let e: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..8.0) * 2f64.powi(rng.random_range(-4..4))).collect();
        let a: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..2.0)).collect();
        let t = |v: Vec<f64>| Tensor::from_shape_vec(vec![n], v).unwrap();
        let bound = ErrorBound { rounding: t(e), underflow: t(a) };
        let (r, b) = (t(r), t(b));
        let slice = |t: &Tensor| t.as_slice().unwrap().to_vec();
        let wide = Target::fold(Tolerance::F32, &[n], &slice(&r), &slice(&bound.rounding), &slice(&bound.underflow), Some(&slice(&b)[..]), false).unwrap();
        let narrow = Target::new(Tolerance::F32, &r, &bound, &b);
        (r, narrow, wide)
    }

    /// Special elements (an infinite reference or naive output) among ordinary ones, judged in
    /// one walk: each found at its own index, whichever blocks they fall in.
    #[test]
    fn every_special_element_is_judged_at_its_own_index() {
        let n = 1000;
        let special = |i: usize| i.is_multiple_of(3) || (500..700).contains(&i);
        let r: Vec<f64> = (0..n).map(|i| if special(i) { f64::INFINITY } else { i as f64 }).collect();
        let zeros = vec![0.0; n];
        for narrow in [true, false] {
            let target = Target::fold(Tolerance::F32, &[n], &r, &r.iter().map(|x| x.abs().min(1e3)).collect::<Vec<_>>(), &zeros, None::<&[f64]>, narrow).unwrap();
            assert!(target.judge(r.iter().copied()).is_ok(), "the reference itself is accepted");
            for wrong in [0, 3, 501, 699, 999] {
                let mut y = r.clone();
                y[wrong] = 1.0;
                match target.judge(y.iter().copied()) {
                    Err(Inaccuracy::NonFinite { index, .. }) => assert_eq!(index, vec![wrong]),
                    other => panic!("a finite value where the reference is infinite, at {wrong}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn a_float32_target_is_half_the_bytes_and_never_looser() {
        for seed in 0..4 {
            let (r, narrow, wide) = targets(seed);
            assert!(matches!(narrow.values, Values::F32(_)), "float32 outputs keep float32 targets");
            assert_eq!(2 * narrow.bytes(), wide.bytes());
            let Values::F64(w) = &wide.values else { unreachable!() };
            let (reference, bounds) = w.split_at(r.len());
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed + 100);
            let (mut accepted, mut both) = (0, 0);
            for _ in 0..200 {
                // Every element at a random fraction of its float64 bound, as a float32.
                let scale = rng.random_range(0.0..1.2);
                let y: Vec<f64> = reference.iter().zip(bounds).map(|(&r, &t)| f64::from((r + scale * t * if rng.random() { 1.0 } else { -1.0 }) as f32)).collect();
                let narrow_ok = narrow.judge(y.iter().copied()).is_ok();
                let wide_figures = wide.judge(y.iter().copied());
                let wide_ok = wide_figures.is_ok();
                // Sound: what the float32 target accepts, the float64 one accepts.
                assert!(!narrow_ok || wide_ok, "seed {seed}, scale {scale}: float32 target looser");
                accepted += usize::from(wide_ok);
                both += usize::from(narrow_ok && wide_ok);
                // At most an eighth stricter: well inside the float64 bounds, both accept.
                if let Some(f) = wide_figures.ok().filter(|f| f.worst_elementwise < 0.87 && f.normwise < 0.87) {
                    assert!(narrow_ok, "seed {seed}, scale {scale}: float32 target rejects what is well inside ({f:?})");
                }
            }
            assert!(accepted > 0 && both > 0);
        }
    }

    /// Without the naive output, every elementwise bound is at most what any float32 naive
    /// output would give (the rounded reference is the closest float32 to it), and the normwise
    /// bound is the a-priori bound's norm.
    #[test]
    fn the_a_priori_target_is_never_looser_elementwise() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let n = 4000;
        let t = |v: Vec<f64>| Tensor::from_shape_vec(vec![n], v).unwrap();
        let r: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0) * 2f64.powi(rng.random_range(-140..120))).collect();
        let e: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..8.0)).collect();
        let bound = ErrorBound { rounding: t(e.clone()), underflow: t((0..n).map(|_| rng.random_range(0.0..2.0)).collect()) };
        let r = t(r);
        let a_priori = Target::from_reference::<f64>(Tolerance::F32, &r, &bound, None);
        let Values::F32(ours) = &a_priori.values else { unreachable!() };
        for _ in 0..8 {
            // Any float32 output near the reference, as a naive kernel's might be.
            let b: Vec<f32> = r.iter().map(|&x| (x as f32) * (1.0 + rng.random_range(-8.0..8.0) * f32::EPSILON)).collect();
            let naive = Target::from_reference(Tolerance::F32, &r, &bound, Some(&b[..]));
            let Values::F32(theirs) = &naive.values else { unreachable!() };
            for i in n..2 * n {
                assert!(ours[i].is_nan() || ours[i] <= theirs[i] || theirs[i].is_nan(), "element {}: {} above {}", i - n, ours[i], theirs[i]);
            }
        }
        let norm_e = e.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!(a_priori.norm_bound >= Tolerance::F32.alpha * Tolerance::F32.unit_roundoff * norm_e * 0.99, "the a-priori bound's norm");
    }
}
