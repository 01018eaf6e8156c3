//! The judge of an index output (`argmax`, `argmin`): per element, the indices as right as
//! numpy's, given how far the values they point at may err.
//!
//! numpy's index is the first of the largest (smallest) element of a lane, or of its first NaN.
//! Where the lane's values come straight from the inputs they are exact, and only numpy's index
//! is right. Where a kernel computes them, each value `v` may err by its bound `w = α·(u·E +
//! λ·A)` (the accuracy rule's, see `accuracy.rs`), so it lies in `[v − w, v + w]`. An index `j`
//! is then as right as numpy's when `v_j + w_j ≥ max_i (v_i − w_i)` (it may be the largest) and
//! no earlier `i` has `v_i − w_i ≥ v_j + w_j` (no earlier element is surely at least as large,
//! which numpy's first-index rule would pick). With every `w` zero this is numpy's index alone.
//! A lane with a NaN has one right index: its first NaN's.

use ndarray::Axis;
use ollie_graph::{ErrorBound, ReduceOp, Tensor};

use crate::accuracy::{Figures, Inaccuracy, Tolerance};

/// The indices an index output may hold: per element (in standard order), numpy's index first,
/// then any other as right, ascending.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexTarget {
    shape: Vec<usize>,
    /// Element `e`'s indices are `indices[starts[e]..starts[e + 1]]`.
    starts: Vec<u32>,
    indices: Vec<u32>,
}

impl IndexTarget {
    /// The target of an output holding `op`'s index along `axis` of `values` (the operand, with
    /// its error bounds `bound` and the tolerance of its dtype); `lanes` gives, per element of
    /// the output in standard order, the lane (in the order `values.lanes(axis)` takes them)
    /// whose index it holds, and `reference` numpy's index there; the output has `shape`.
    pub fn new(tolerance: Tolerance, op: ReduceOp, axis: usize, values: &Tensor, bound: &ErrorBound, lanes: &[usize], reference: &Tensor) -> IndexTarget {
        let sign = if op == ReduceOp::Min { -1.0 } else { 1.0 };
        // The other right indices of each lane.
        let mut others: Vec<Vec<u32>> = Vec::new();
        let all = values.lanes(Axis(axis)).into_iter().zip(bound.rounding.lanes(Axis(axis))).zip(bound.underflow.lanes(Axis(axis)));
        for ((lane, e), a) in all {
            let numpy = ollie_graph::first_extreme(lane.iter().copied(), op);
            let mut right = Vec::new();
            if lane.iter().all(|v| !v.is_nan()) {
                // Each value's interval, in the direction that maximizes.
                let interval = |i: usize| tolerance.interval(sign * lane[i], e[i], a[i]);
                let top = (0..lane.len()).map(|i| interval(i).0).fold(f64::NEG_INFINITY, f64::max);
                let mut surely = f64::NEG_INFINITY;
                for j in 0..lane.len() {
                    let (low, high) = interval(j);
                    if high >= top && surely < high && j != numpy {
                        right.push(j as u32);
                    }
                    surely = surely.max(low);
                }
            }
            others.push(right);
        }
        let (mut starts, mut indices) = (vec![0u32], Vec::with_capacity(reference.len()));
        for (&lane, &numpy) in lanes.iter().zip(reference.iter()) {
            indices.push(numpy as u32);
            indices.extend(&others[lane]);
            starts.push(indices.len() as u32);
        }
        IndexTarget { shape: reference.shape().to_vec(), starts, indices }
    }

    /// Judges the candidate's output `y` (in standard order): each element one of its indices.
    pub fn judge_slice<Y: Copy + Into<f64>>(&self, y: &[Y]) -> Result<Figures, Inaccuracy> {
        assert_eq!(y.len() + 1, self.starts.len(), "the candidate's output has the reference's size");
        for (e, &value) in y.iter().enumerate() {
            let value: f64 = value.into();
            let right = &self.indices[self.starts[e] as usize..self.starts[e + 1] as usize];
            if !right.iter().any(|&i| f64::from(i) == value) {
                let index = crate::accuracy::unflatten(&self.shape, e);
                return Err(Inaccuracy::Index { index, value, reference: right[0] as usize, right: right.len() });
            }
        }
        Ok(Figures { worst_elementwise: 0.0, normwise: 0.0 })
    }

    /// numpy's indices' bytes, in standard order.
    pub fn reference_bytes(&self) -> Vec<u8> {
        self.starts[..self.starts.len() - 1].iter().flat_map(|&s| self.indices[s as usize].to_le_bytes()).collect()
    }

    /// The memory the target holds.
    pub fn bytes(&self) -> usize {
        4 * (self.starts.len() + self.indices.len())
    }

    /// The parts the oracle's files store: shape, starts, indices.
    pub(crate) fn parts(&self) -> (&[usize], &[u32], &[u32]) {
        (&self.shape, &self.starts, &self.indices)
    }

    /// A target from [`IndexTarget::parts`] read back; `None` if they cannot be one.
    pub(crate) fn from_parts(shape: Vec<usize>, starts: Vec<u32>, indices: Vec<u32>) -> Option<IndexTarget> {
        let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        let ordered = starts.first() == Some(&0) && starts.windows(2).all(|w| w[0] < w[1]) && starts.last() == Some(&(indices.len() as u32));
        (starts.len() == n + 1 && ordered).then_some(IndexTarget { shape, starts, indices })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn};

    fn target(values: &[f64], rounding: &[f64], op: ReduceOp) -> Vec<u32> {
        let t = |v: &[f64]| ArrayD::from_shape_vec(IxDyn(&[1, v.len()]), v.to_vec()).unwrap();
        let bound = ErrorBound { rounding: t(rounding), underflow: t(&vec![0.0; values.len()]) };
        let numpy = ollie_graph::first_extreme(values.iter().copied(), op) as f64;
        let reference = ArrayD::from_shape_vec(IxDyn(&[1]), vec![numpy]).unwrap();
        IndexTarget::new(Tolerance::F32, op, 1, &t(values), &bound, &[0], &reference).indices
    }

    #[test]
    fn exact_values_leave_numpys_index_alone() {
        assert_eq!(target(&[1.0, 3.0, 3.0, 2.0], &[0.0; 4], ReduceOp::Max), [1]);
        assert_eq!(target(&[1.0, 0.5, 0.5, 2.0], &[0.0; 4], ReduceOp::Min), [1]);
        assert_eq!(target(&[1.0, f64::NAN, 5.0, f64::NAN], &[0.0; 4], ReduceOp::Max), [1]);
        assert_eq!(target(&[f64::INFINITY, 1.0, f64::INFINITY], &[0.0; 3], ReduceOp::Max), [0]);
    }

    #[test]
    fn a_computed_near_tie_admits_either_index_but_not_a_later_equal() {
        // 3 and 3 + 1e-7: within 16·2⁻²⁴·E of each other for E = 1.
        let near = 3.0 + 1e-7;
        assert_eq!(target(&[3.0, near, 1.0], &[1.0, 1.0, 1.0], ReduceOp::Max), [1, 0]);
        // Far apart: only the largest.
        assert_eq!(target(&[3.0, 4.0, 1.0], &[1.0, 1.0, 1.0], ReduceOp::Max), [1]);
        // Exact equals after a bounded one: the later exact equal is never first.
        assert_eq!(target(&[2.0, 2.0, 2.0], &[0.0, 0.0, 0.0], ReduceOp::Max), [0]);
        // An unbounded value may be anything.
        assert_eq!(target(&[0.0, 5.0], &[f64::INFINITY, 0.0], ReduceOp::Max), [1, 0]);
    }

    #[test]
    fn the_judge_takes_any_right_index_and_names_a_wrong_one() {
        let t = IndexTarget::from_parts(vec![2], vec![0, 2, 3], vec![4, 1, 0]).unwrap();
        assert!(t.judge_slice(&[1.0f32, 0.0]).is_ok());
        assert!(t.judge_slice(&[4.0f32, 0.0]).is_ok());
        let Err(Inaccuracy::Index { index, value, reference, right }) = t.judge_slice(&[4.0f32, 2.0]) else { panic!("judged right") };
        assert_eq!((index, value, reference, right), (vec![1], 2.0, 0, 1));
        assert!(t.judge_slice(&[f32::NAN, 0.0]).is_err());
        assert!(IndexTarget::from_parts(vec![2], vec![0, 2, 2], vec![4, 1]).is_none());
    }
}
