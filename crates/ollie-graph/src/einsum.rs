//! Einstein summations with explicit output labels, and their float64 evaluation by pairwise
//! contraction into batched matrix products — and, for the error bounds' magnitudes, an upper
//! bound of a summation of nonnegative operands computed in float32 where that is safe.

use std::fmt;

use ndarray::linalg::{general_mat_mul, general_mat_vec_mul};
use ndarray::{ArrayD, ArrayViewD, Axis, CowArray, Ix3, IxDyn, LinalgScalar};

use crate::ty::{DType, TensorType};

/// An einsum with explicit output: one label string per operand, and the output's labels.
/// Labels are ASCII letters; none repeats within one operand or within the output, and every
/// output label appears in some operand. Labels absent from the output are summed over.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EinsumSpec {
    pub inputs: Vec<Vec<u8>>,
    pub output: Vec<u8>,
}

impl EinsumSpec {
    /// Reads the explicit form `"bhd,btd->bht"`.
    pub fn parse(text: &str) -> Result<EinsumSpec, String> {
        let (lhs, rhs) = text.split_once("->").ok_or_else(|| format!("einsum `{text}` has no `->`"))?;
        let labels = |s: &str| -> Result<Vec<u8>, String> {
            let s = s.trim();
            match s.bytes().find(|b| !b.is_ascii_alphabetic()) {
                Some(b) => Err(format!("einsum label `{}` is not a letter", b as char)),
                None => Ok(s.as_bytes().to_vec()),
            }
        };
        let inputs = lhs.split(',').map(labels).collect::<Result<Vec<_>, _>>()?;
        let spec = EinsumSpec { inputs, output: labels(rhs)? };
        spec.check_labels()?;
        Ok(spec)
    }

    /// The same contraction with its labels renamed `a`, `b`, ... in order of first appearance
    /// (operands, then the output): equal contractions written with other letters compare equal.
    pub fn canonical(&self) -> EinsumSpec {
        let mut map = [0u8; 128];
        let mut next = 0u8;
        let mut rename = |l: u8| {
            if map[l as usize] == 0 {
                map[l as usize] = if next < 26 { b'a' + next } else { b'A' + next - 26 };
                next += 1;
            }
            map[l as usize]
        };
        let inputs = self.inputs.iter().map(|labels| labels.iter().map(|&l| rename(l)).collect()).collect();
        let output = self.output.iter().map(|&l| rename(l)).collect();
        EinsumSpec { inputs, output }
    }

    /// The product of the extents of the labels `which` keeps (each label once), for operands of
    /// shapes `shapes`: with every label, the terms of the contraction; with the labels not in
    /// the output, the length of each output element's sum.
    pub fn extent(&self, shapes: &[&[usize]], which: impl Fn(u8) -> bool) -> usize {
        let mut size = [None; 128];
        for (labels, shape) in self.inputs.iter().zip(shapes) {
            for (&l, &n) in labels.iter().zip(shape.iter()) {
                size[l as usize] = Some(n);
            }
        }
        (0..128u8).filter(|&l| which(l)).filter_map(|l| size[l as usize]).product()
    }

    fn check_labels(&self) -> Result<(), String> {
        for labels in self.inputs.iter().chain([&self.output]) {
            if let Some(l) = labels.iter().find(|&l| labels.iter().filter(|&m| m == l).count() > 1) {
                return Err(format!("einsum label `{}` repeats within `{}`", *l as char, self.show(labels)));
            }
        }
        if let Some(l) = self.output.iter().find(|l| !self.inputs.iter().any(|i| i.contains(l))) {
            return Err(format!("einsum output label `{}` appears in no operand", *l as char));
        }
        Ok(())
    }

    fn show(&self, labels: &[u8]) -> String {
        String::from_utf8_lossy(labels).into_owned()
    }

    /// The result type: sizes must agree for each label across operands.
    pub fn infer(&self, args: &[&TensorType]) -> Result<TensorType, String> {
        self.check_labels()?;
        if args.len() != self.inputs.len() {
            return Err(format!("`{self}` takes {} operands, got {}", self.inputs.len(), args.len()));
        }
        let mut size = [None::<usize>; 128];
        let mut dtype: Option<DType> = None;
        for (labels, ty) in self.inputs.iter().zip(args) {
            if labels.len() != ty.rank() {
                return Err(format!("operand `{}` of `{self}` has rank {}, not {}", self.show(labels), ty.rank(), labels.len()));
            }
            for (&l, &n) in labels.iter().zip(&ty.shape) {
                match size[l as usize] {
                    Some(m) if m != n => {
                        return Err(format!("einsum label `{}` has size {m} and {n}", l as char));
                    }
                    _ => size[l as usize] = Some(n),
                }
            }
            dtype = Some(dtype.map_or(ty.dtype, |d| d.promote(ty.dtype)));
        }
        let dtype = match dtype.unwrap_or(DType::F64) {
            DType::Bool => DType::I64,
            d => d,
        };
        let shape = self.output.iter().map(|&l| size[l as usize].unwrap_or(0)).collect();
        Ok(TensorType::new(dtype, shape))
    }
}

impl fmt::Display for EinsumSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inputs: Vec<String> = self.inputs.iter().map(|l| self.show(l)).collect();
        write!(f, "{}->{}", inputs.join(","), self.show(&self.output))
    }
}

/// An upper bound of the einsum of nonnegative float64 `operands` (magnitudes, and errors
/// weighted by them: what the error bounds sum), at most `(n + 2)·2⁻²³` above it relatively for
/// `n` summed terms: computed in float32 — half the work of float64 for a large contraction, and
/// these bounds need no more — then raised by that much, where float32 holds every term as a
/// normal number; else in float64. An operand whose largest element is below 1 is first scaled
/// up by a power of two (exact), and the result scaled back: tiny operands keep their terms
/// normal. A term that would be subnormal in float32 (an outlier among tiny elements, say)
/// would both lose precision and put the contraction on the processor's slow path for
/// subnormal arithmetic, 20 times slower: a 2048² product's bounds took 19 s.
pub(crate) fn evaluate_magnitudes(spec: &EinsumSpec, operands: &[ArrayViewD<'_, f64>]) -> ArrayD<f64> {
    let shapes: Vec<&[usize]> = operands.iter().map(|t| t.shape()).collect();
    let terms = spec.extent(&shapes, |l| !spec.output.contains(&l)).max(1) as f64;
    // Each operand's largest and smallest nonzero element.
    let ranges: Vec<(f64, f64)> = operands.iter().map(|t| t.iter().fold((0.0f64, f64::INFINITY), |(hi, lo), &x| (hi.max(x), if x > 0.0 { lo.min(x) } else { lo }))).collect();
    // Each operand's power of two up, at most 2^200 (the product of the scales stays far inside
    // float64's range).
    let exponents: Vec<i32> = ranges.iter().map(|&(hi, _)| if hi > 0.0 && hi < 1.0 { (-hi.log2().ceil() as i32).clamp(0, 200) } else { 0 }).collect();
    let up = |e: i32| 2f64.powi(e);
    // The largest term times the number of terms, with room for rounding, and the smallest
    // nonzero term: within float32's normal numbers.
    let largest: f64 = ranges.iter().zip(&exponents).map(|(&(hi, _), &e)| hi * up(e)).product();
    let smallest: f64 = ranges.iter().zip(&exponents).map(|(&(_, lo), &e)| if lo.is_finite() { lo * up(e) } else { 1.0 }).product();
    if !(largest * terms < f64::from(f32::MAX) / 4.0 && smallest >= f64::from(f32::MIN_POSITIVE)) {
        return evaluate(spec, operands.iter().map(|t| CowArray::from(t.view())).collect());
    }
    let narrow: Vec<ArrayD<f32>> = operands.iter().zip(&exponents).map(|(t, &e)| t.mapv(|x| (x * up(e)) as f32)).collect();
    let raise = (1.0 + (terms + 2.0) * f64::from(f32::EPSILON)) * up(-exponents.iter().sum::<i32>());
    evaluate(spec, narrow.iter().map(|t| CowArray::from(t.view())).collect()).mapv(|x| f64::from(x) * raise)
}

/// Evaluates the einsum on operands whose shapes satisfy [`EinsumSpec::infer`].
pub(crate) fn evaluate<A: LinalgScalar>(spec: &EinsumSpec, operands: Vec<CowArray<'_, A, IxDyn>>) -> ArrayD<A> {
    let n = operands.len();
    // needed[k]: labels still wanted after operands 0..k have been folded in.
    let needed = |k: usize| -> Vec<u8> {
        let mut labels = spec.output.clone();
        for input in &spec.inputs[k.min(n)..] {
            labels.extend_from_slice(input);
        }
        labels
    };
    let mut operands = operands.into_iter();
    let first = operands.next().expect("einsum has at least one operand");
    let (mut acc, mut acc_labels) = sum_out(first, spec.inputs[0].clone(), &needed(1));
    for (k, b) in operands.enumerate().map(|(i, b)| (i + 1, b)) {
        let mut keep_b = needed(k + 1);
        keep_b.extend_from_slice(&acc_labels);
        let (b, b_labels) = sum_out(b, spec.inputs[k].clone(), &keep_b);
        let keep = needed(k + 1);
        (acc, acc_labels) = contract(acc, &acc_labels, b, &b_labels, &keep);
    }
    let perm: Vec<usize> =
        spec.output.iter().map(|l| acc_labels.iter().position(|m| m == l).expect("output label")).collect();
    acc.permuted_axes(IxDyn(&perm)).as_standard_layout().into_owned()
}

/// Sums `array` over every label not in `keep`.
fn sum_out<'a, A: LinalgScalar>(mut array: CowArray<'a, A, IxDyn>, mut labels: Vec<u8>, keep: &[u8]) -> (CowArray<'a, A, IxDyn>, Vec<u8>) {
    for axis in (0..labels.len()).rev() {
        if !keep.contains(&labels[axis]) {
            array = CowArray::from(array.sum_axis(Axis(axis)));
            labels.remove(axis);
        }
    }
    (array, labels)
}

/// Contracts two operands over their shared labels that are not in `keep`; the result's labels
/// are the shared kept ones (batch), then `a`'s own, then `b`'s own.
fn contract<'a, A: LinalgScalar>(a: CowArray<'_, A, IxDyn>, al: &[u8], b: CowArray<'_, A, IxDyn>, bl: &[u8], keep: &[u8]) -> (CowArray<'a, A, IxDyn>, Vec<u8>) {
    let batch: Vec<u8> = al.iter().copied().filter(|l| bl.contains(l) && keep.contains(l)).collect();
    let sum: Vec<u8> = al.iter().copied().filter(|l| bl.contains(l) && !keep.contains(l)).collect();
    let free_a: Vec<u8> = al.iter().copied().filter(|l| !bl.contains(l)).collect();
    let free_b: Vec<u8> = bl.iter().copied().filter(|l| !al.contains(l)).collect();
    let mut label_size = [1usize; 128];
    for (labels, shape) in [(al, a.shape()), (bl, b.shape())] {
        for (l, &extent) in labels.iter().zip(shape) {
            label_size[*l as usize] = extent;
        }
    }
    let size = |labels: &[u8]| -> usize { labels.iter().map(|l| label_size[*l as usize]).product() };
    let (nb, m, k, n) = (size(&batch), size(&free_a), size(&sum), size(&free_b));
    let a3 = arrange(a.view(), al, [&batch, &free_a, &sum], [nb, m, k]);
    let b3 = arrange(b.view(), bl, [&batch, &sum, &free_b], [nb, k, n]);
    let mut c = ndarray::Array3::<A>::zeros((nb, m, n));
    if k == 1 {
        c.assign(&(&a3 * &b3));
    } else {
        for i in 0..nb {
            let (a, b, mut c) = (a3.index_axis(Axis(0), i), b3.index_axis(Axis(0), i), c.index_axis_mut(Axis(0), i));
            // Matrix-vector products stream the matrix once instead of packing it for GEMM.
            if m == 1 {
                general_mat_vec_mul(A::one(), &b.t(), &a.row(0), A::zero(), &mut c.row_mut(0));
            } else if n == 1 {
                general_mat_vec_mul(A::one(), &a, &b.column(0), A::zero(), &mut c.column_mut(0));
            } else {
                general_mat_mul(A::one(), &a, &b, A::zero(), &mut c);
            }
        }
    }
    let mut labels = batch.clone();
    labels.extend_from_slice(&free_a);
    labels.extend_from_slice(&free_b);
    let shape: Vec<usize> = labels.iter().map(|l| label_size[*l as usize]).collect();
    let c = c.into_shape_with_order(shape).expect("sizes multiply out");
    (CowArray::from(c), labels)
}

/// Permutes `array` so its axes follow the concatenated label `groups`, then views it as three
/// axes (one per group) of the given sizes; copies only when the strides cannot express that.
fn arrange<'a, A: LinalgScalar>(array: ArrayViewD<'a, A>, labels: &[u8], groups: [&[u8]; 3], dims: [usize; 3]) -> CowArray<'a, A, Ix3> {
    let perm: Vec<usize> = groups
        .iter()
        .flat_map(|g| g.iter())
        .map(|l| labels.iter().position(|m| m == l).unwrap())
        .collect();
    let permuted = array.permuted_axes(IxDyn(&perm));
    let mut merged = permuted.clone();
    let mut kept = Vec::new();
    let mut start = 0;
    let mut ok = true;
    for g in groups {
        if g.is_empty() {
            kept.push(None);
            continue;
        }
        let last = start + g.len() - 1;
        for ax in (start..last).rev() {
            ok &= merged.merge_axes(Axis(ax), Axis(last));
        }
        kept.push(Some(last));
        start += g.len();
    }
    // Zero-size arrays have no strides worth keeping; the copy below is empty anyway.
    if ok && !permuted.is_empty() {
        for ax in (0..merged.ndim()).rev() {
            if !kept.contains(&Some(ax)) {
                merged = merged.index_axis_move(Axis(ax), 0);
            }
        }
        for (g, k) in kept.iter().enumerate() {
            if k.is_none() {
                merged = merged.insert_axis(Axis(g));
            }
        }
        return CowArray::from(merged.into_dimensionality::<Ix3>().expect("three axes"));
    }
    let owned = permuted.as_standard_layout().into_owned().into_shape_with_order(dims.to_vec()).expect("sizes multiply out");
    CowArray::from(owned.into_dimensionality::<Ix3>().expect("three axes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nonnegative operands over many magnitudes: the float32 magnitudes are never below the
    /// float64 contraction and at most twice `(n + 2)·2⁻²³` above it; operands whose sums would
    /// overflow float32 are contracted in float64, exactly as `evaluate` does.
    #[test]
    fn magnitudes_bound_the_contraction_from_above() {
        let spec = EinsumSpec::parse("ik,kj->ij").unwrap();
        let (m, k, n) = (7, 300, 5);
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        // Tiny operands are scaled up before float32 sees them: nothing of theirs is flushed.
        for scale in [1e-30, 1e-42, 1.0, 1e6] {
            let a = ArrayD::from_shape_fn(IxDyn(&[m, k]), |_| scale * next() * 10f64.powf(4.0 * next() - 2.0));
            let b = ArrayD::from_shape_fn(IxDyn(&[k, n]), |_| next() * 10f64.powf(4.0 * next() - 2.0));
            let exact = evaluate(&spec, vec![CowArray::from(a.view()), CowArray::from(b.view())]);
            let bound = evaluate_magnitudes(&spec, &[a.view(), b.view()]);
            for (&e, &u) in exact.iter().zip(&bound) {
                assert!(u >= e, "scale {scale}: {u} below {e}");
                assert!(u <= e * (1.0 + (k as f64 + 2.0) * 2.0 * f64::from(f32::EPSILON)), "scale {scale}: {u} far above {e}");
            }
        }
        let huge = ArrayD::from_elem(IxDyn(&[m, k]), 1e30);
        let exact = evaluate(&spec, vec![CowArray::from(huge.view()), CowArray::from(huge.t().view())]);
        assert_eq!(evaluate_magnitudes(&spec, &[huge.view(), huge.t().view()]), exact, "beyond float32: float64");
        // One element of 1 among elements of 1e-30 (and of 1e-12): no scale keeps the terms
        // normal in float32.
        let mut outlier = ArrayD::from_shape_fn(IxDyn(&[m, k]), |_| 1e-30 * next());
        outlier[[0, 0]] = 1.0;
        let mut tiny = ArrayD::from_shape_fn(IxDyn(&[k, n]), |_| 1e-12 * next());
        tiny[[0, 0]] = 1.0;
        let exact = evaluate(&spec, vec![CowArray::from(outlier.view()), CowArray::from(tiny.view())]);
        assert_eq!(evaluate_magnitudes(&spec, &[outlier.view(), tiny.view()]), exact, "subnormal terms: float64");
    }
}
