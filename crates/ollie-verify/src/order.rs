//! The judge of an `argsort` output, whole or the run of it a top-k keeps: per lane, an order
//! numpy could have given, given how far the values it orders may err.
//!
//! numpy's `argsort` orders a lane ascending with NaNs last; its default kinds leave the order
//! of equal elements to numpy, `kind="stable"` puts them in index order. Each value `v` of a
//! lane may err by its bound `w = α·(u·E + λ·A)` (the accuracy rule's, see `accuracy.rs`; zero
//! where the values are the inputs'), so it lies in `[v − w, v + w]`; a NaN of the reference is
//! a NaN. An output holding positions `a..b` of the order (`q_a, …, q_{b−1}`) is right when some
//! choice of values, each in its interval, has an order (ties by index when stable) whose
//! positions `a..b` are the `q`: the `q` in order, and the lane's other elements split into
//! `a` that may come before them and `n − b` that may come after. With every `w` zero this is
//! numpy's order, up to the order of ties its kind leaves open.
//!
//! The check compares keys `(is NaN, value, index)` (the index only when stable): the `q`
//! chain takes the smallest values it can (`E` its last), the first of them may rise to `S`
//! (the smallest upper end of the chain); an element left out may go before at a start `s` if
//! its lower end is at most `s`, after at an end `e` if its upper end is at least `e`. Either
//! the start rises to `min(S, E)` and the end stays `E`, or start and end meet at one `t` in
//! `[E, S]`: the `a`-th smallest lower end of the others and the `(n − b)`-th largest upper end
//! must leave room for it.

use ollie_graph::{ErrorBound, Tensor};

use crate::accuracy::{unflatten, Figures, Inaccuracy, Tolerance};

/// The values a lane's order is judged against, and which position of which lane each output
/// element holds.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderTarget {
    shape: Vec<usize>,
    /// The lanes' length.
    n: usize,
    stable: bool,
    /// Each value's interval, lane after lane (`lane · n + i`); NaN at the reference's NaNs.
    low: Vec<f64>,
    high: Vec<f64>,
    /// Per output element (standard order), `lane · n + position`.
    cells: Vec<u64>,
    /// numpy's (stable) index per output element.
    reference: Vec<u32>,
}

/// `(is NaN, value, index)`: the order the judge compares elements in.
type Key = (u8, f64, u64);

impl OrderTarget {
    /// The target of an output of `argsort` along `axis` of `values` (the operand, with its
    /// error bounds `bound` and the tolerance of its dtype); `positions` gives, per element of
    /// the output in standard order, the flat position in the `argsort`'s result whose index it
    /// holds, and `reference` numpy's index there.
    pub fn new(tolerance: Tolerance, axis: usize, stable: bool, values: &Tensor, bound: &ErrorBound, positions: &[usize], reference: &Tensor) -> OrderTarget {
        let shape = values.shape().to_vec();
        let n = shape[axis];
        // The axis last: lanes are then rows.
        let mut perm: Vec<usize> = (0..shape.len()).filter(|&d| d != axis).collect();
        perm.push(axis);
        let rows = |t: &Tensor| t.view().permuted_axes(perm.clone()).as_standard_layout().into_owned();
        let (v, e, a) = (rows(values), rows(&bound.rounding), rows(&bound.underflow));
        let (mut low, mut high) = (Vec::with_capacity(v.len()), Vec::with_capacity(v.len()));
        for ((&v, &e), &a) in v.iter().zip(&e).zip(&a) {
            let (lo, hi) = if v.is_nan() { (f64::NAN, f64::NAN) } else { tolerance.interval(v, e, a) };
            low.push(lo);
            high.push(hi);
        }
        // A position's lane: its coordinates but the axis', in row-major order.
        let cells = positions
            .iter()
            .map(|&p| {
                let index = unflatten(&shape, p);
                let lane = (0..shape.len()).filter(|&d| d != axis).fold(0u64, |l, d| l * shape[d] as u64 + index[d] as u64);
                lane * n as u64 + index[axis] as u64
            })
            .collect();
        OrderTarget { shape: reference.shape().to_vec(), n, stable, low, high, cells, reference: reference.iter().map(|&r| r as u32).collect() }
    }

    fn lo_key(&self, lane: usize, i: usize) -> Key {
        self.key(self.low[lane * self.n + i], i)
    }

    fn hi_key(&self, lane: usize, i: usize) -> Key {
        self.key(self.high[lane * self.n + i], i)
    }

    fn key(&self, v: f64, i: usize) -> Key {
        let index = if self.stable { i as u64 } else { 0 };
        if v.is_nan() { (1, 0.0, index) } else { (0, v, index) }
    }

    /// The smallest key element `i` of `lane` may take at or above `at`: its lower end, or
    /// `at`'s value with its own index — or just above `at`'s value (`u64::MAX`), where its
    /// index would come before `at`'s.
    fn raise(&self, at: Key, lane: usize, i: usize) -> Key {
        let low = self.lo_key(lane, i);
        if low >= at {
            return low;
        }
        let index = if self.stable { i as u64 } else { 0 };
        (at.0, at.1, if index >= at.2 { index } else { u64::MAX })
    }

    /// Judges the candidate's output `y` (in standard order): per lane, its indices a run of an
    /// order numpy could have given (see the module's documentation).
    pub fn judge_slice<Y: Copy + Into<f64>>(&self, y: &[Y]) -> Result<Figures, Inaccuracy> {
        assert_eq!(y.len(), self.cells.len(), "the candidate's output has the reference's size");
        let fail = |e: usize, why: &'static str| Inaccuracy::Order { index: unflatten(&self.shape, e), value: y[e].into(), reference: self.reference[e] as usize, why };
        let n = self.n as u64;
        let mut elements: Vec<usize> = (0..y.len()).collect();
        elements.sort_unstable_by_key(|&e| self.cells[e]);
        let mut seen = vec![false; self.n];
        for run in elements.chunk_by(|&e, &f| self.cells[e] / n == self.cells[f] / n) {
            let lane = (self.cells[run[0]] / n) as usize;
            let first = (self.cells[run[0]] % n) as usize;
            if run.iter().enumerate().any(|(k, &e)| (self.cells[e] % n) as usize != first + k) {
                return Err(fail(run[0], "the output keeps positions of the sorted order that are not one run, which ollie does not judge"));
            }
            let mut q = Vec::with_capacity(run.len());
            let mut repeated = None;
            for &e in run {
                let v: f64 = y[e].into();
                if !(v >= 0.0 && v < self.n as f64 && v.fract() == 0.0) {
                    repeated = repeated.or(Some((e, "not an index of the lane")));
                    break;
                }
                let i = v as usize;
                if std::mem::replace(&mut seen[i], true) {
                    repeated = repeated.or(Some((e, "an index the lane's order already holds")));
                    break;
                }
                q.push(i);
            }
            let result = match repeated {
                Some(failure) => Err(failure),
                None => self.judge_run(lane, first, &q, &seen).map_err(|k| match k {
                    Some(k) => (run[k], "out of order: it cannot follow the index before it"),
                    None => (run[0], "an index left out of these belongs among them"),
                }),
            };
            q.iter().for_each(|&i| seen[i] = false);
            result.map_err(|(e, why)| fail(e, why))?;
        }
        Ok(Figures { worst_elementwise: 0.0, normwise: 0.0 })
    }

    /// Whether `q` may stand at positions `first..` of `lane`'s order; else the position in
    /// `q` that cannot follow the one before, or `None` when the elements left out (not
    /// `seen`) cannot all go before or after.
    fn judge_run(&self, lane: usize, first: usize, q: &[usize], seen: &[bool]) -> Result<(), Option<usize>> {
        let mut end = self.lo_key(lane, q[0]);
        let mut top = self.hi_key(lane, q[0]);
        for (k, &i) in q.iter().enumerate().skip(1) {
            end = self.raise(end, lane, i);
            let high = self.hi_key(lane, i);
            if end > high {
                return Err(Some(k));
            }
            if high < top {
                top = high;
            }
        }
        let (before, after) = (first, self.n - first - q.len());
        if before + after == 0 {
            return Ok(());
        }
        let rest: Vec<usize> = (0..self.n).filter(|&i| !seen[i]).collect();
        // The start rises to min(S, E); the end stays E.
        let start = if top < end { top } else { end };
        let (mut may_go_before, mut may_go_after, mut placed) = (0, 0, true);
        for &i in &rest {
            let b = self.lo_key(lane, i) <= start;
            let a = self.hi_key(lane, i) >= end;
            may_go_before += b as usize;
            may_go_after += a as usize;
            placed &= a || b;
        }
        if placed && may_go_before >= before && may_go_after >= after {
            return Ok(());
        }
        // Start and end at one `t` in [E, S], with room for `before` lower ends below it and
        // `after` upper ends above.
        let cmp = |a: &Key, b: &Key| a.partial_cmp(b).expect("keys hold no NaN");
        let mut least = end;
        if before > 0 {
            let mut lows: Vec<Key> = rest.iter().map(|&i| self.lo_key(lane, i)).collect();
            let (_, &mut l, _) = lows.select_nth_unstable_by(before - 1, cmp);
            least = if l > least { l } else { least };
        }
        let mut most = top;
        if after > 0 {
            let mut highs: Vec<Key> = rest.iter().map(|&i| self.hi_key(lane, i)).collect();
            let (_, &mut h, _) = highs.select_nth_unstable_by(after - 1, |a, b| cmp(b, a));
            most = if h < most { h } else { most };
        }
        if least <= most { Ok(()) } else { Err(None) }
    }

    /// numpy's indices' bytes, in standard order.
    pub fn reference_bytes(&self) -> Vec<u8> {
        self.reference.iter().flat_map(|r| r.to_le_bytes()).collect()
    }

    /// The memory the target holds.
    pub fn bytes(&self) -> usize {
        16 * self.low.len() + 12 * self.cells.len()
    }

    /// The parts the oracle's files store.
    pub(crate) fn parts(&self) -> OrderParts<'_> {
        OrderParts { shape: &self.shape, n: self.n, stable: self.stable, low: &self.low, high: &self.high, cells: &self.cells, reference: &self.reference }
    }

    /// A target from [`OrderTarget::parts`] read back; `None` if they cannot be one.
    pub(crate) fn from_parts(parts: OrderParts<'_>) -> Option<OrderTarget> {
        let OrderParts { shape, n, stable, low, high, cells, reference } = parts;
        let count = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        let fits = n > 0 && low.len() == high.len() && low.len() % n == 0 && cells.len() == count && reference.len() == count && cells.iter().all(|&c| c < low.len() as u64);
        fits.then(|| OrderTarget { shape: shape.to_vec(), n, stable, low: low.to_vec(), high: high.to_vec(), cells: cells.to_vec(), reference: reference.to_vec() })
    }
}

/// An [`OrderTarget`]'s parts, borrowed.
pub(crate) struct OrderParts<'a> {
    pub shape: &'a [usize],
    pub n: usize,
    pub stable: bool,
    pub low: &'a [f64],
    pub high: &'a [f64],
    pub cells: &'a [u64],
    pub reference: &'a [u32],
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn};

    /// The target of `argsort(values)[keep]` on one lane, each value erring by `err` units of
    /// float32's unit roundoff.
    fn target(values: &[f64], err: f64, stable: bool, keep: std::ops::Range<usize>) -> OrderTarget {
        let n = values.len();
        let t = |v: Vec<f64>| ArrayD::from_shape_vec(IxDyn(&[1, n]), v).unwrap();
        let bound = ErrorBound { rounding: t(vec![err; n]), underflow: t(vec![0.0; n]) };
        let order = ollie_graph::sorted_order(values.iter().copied());
        let reference = ArrayD::from_shape_vec(IxDyn(&[keep.len()]), order[keep.clone()].iter().map(|&i| i as f64).collect()).unwrap();
        OrderTarget::new(Tolerance::F32, 1, stable, &t(values.to_vec()), &bound, &keep.collect::<Vec<_>>(), &reference)
    }

    fn right(t: &OrderTarget, y: &[f32]) -> bool {
        t.judge_slice(y).is_ok()
    }

    #[test]
    fn exact_values_take_numpys_order_and_any_order_of_ties_unless_stable() {
        let x = [3.0, 1.0, 2.0, 1.0];
        let t = target(&x, 0.0, false, 0..4);
        assert!(right(&t, &[1.0, 3.0, 2.0, 0.0]));
        assert!(right(&t, &[3.0, 1.0, 2.0, 0.0]));
        assert!(!right(&t, &[1.0, 2.0, 3.0, 0.0]));
        assert!(!right(&t, &[1.0, 1.0, 2.0, 0.0]));
        assert!(!right(&t, &[1.0, 3.0, 2.0, 4.0]));
        let stable = target(&x, 0.0, true, 0..4);
        assert!(right(&stable, &[1.0, 3.0, 2.0, 0.0]));
        assert!(!right(&stable, &[3.0, 1.0, 2.0, 0.0]));
    }

    #[test]
    fn nans_come_last() {
        let x = [f64::NAN, 1.0, 0.5, f64::NAN];
        assert!(right(&target(&x, 0.0, true, 0..4), &[2.0, 1.0, 0.0, 3.0]));
        assert!(!right(&target(&x, 0.0, true, 0..4), &[0.0, 2.0, 1.0, 3.0]));
        assert!(!right(&target(&x, 0.0, false, 0..2), &[2.0, 0.0]));
    }

    #[test]
    fn a_top_k_is_judged_against_the_elements_left_out() {
        let x = [5.0, 1.0, 9.0, 7.0, 9.0, 2.0];
        // The last two positions: the two nines, in either order unless stable.
        assert!(right(&target(&x, 0.0, false, 4..6), &[4.0, 2.0]));
        assert!(right(&target(&x, 0.0, false, 4..6), &[2.0, 4.0]));
        assert!(!right(&target(&x, 0.0, true, 4..6), &[4.0, 2.0]));
        // A seven is not among the largest two.
        assert!(!right(&target(&x, 0.0, false, 4..6), &[3.0, 2.0]));
        // The smallest two; the middle two.
        assert!(right(&target(&x, 0.0, false, 0..2), &[1.0, 5.0]));
        assert!(!right(&target(&x, 0.0, false, 0..2), &[1.0, 0.0]));
        assert!(right(&target(&x, 0.0, false, 2..4), &[0.0, 3.0]));
        assert!(!right(&target(&x, 0.0, false, 2..4), &[5.0, 0.0]));
    }

    #[test]
    fn computed_near_ties_may_come_in_either_order_far_ones_not() {
        let near = 1.0 + 1e-7;
        let x = [near, 1.0, 3.0];
        // Within the bound of each other: either order, and either may be the top one left out.
        assert!(right(&target(&x, 1.0, false, 0..3), &[0.0, 1.0, 2.0]));
        assert!(right(&target(&x, 1.0, false, 1..3), &[0.0, 2.0]));
        assert!(right(&target(&x, 1.0, false, 0..1), &[0.0]));
        assert!(!right(&target(&x, 0.0, false, 0..1), &[0.0]));
        assert!(!right(&target(&[2.0, 1.0, 3.0], 1.0, false, 0..3), &[0.0, 1.0, 2.0]));
    }
}
