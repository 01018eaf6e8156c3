//! The values an integer parameter may hold under numpy's contract: what the verifier draws
//! its inputs from.

use crate::graph::{Graph, NodeId};
use crate::op::{BinaryOp, GatherAxis, Op};
use crate::ty::DType;

/// The integers a parameter holds: indices `0..extent`, and with `negative` also `-extent..0`
/// (numpy counts a negative index from the end), each less `shift` (the parameter is an index
/// once `shift` is added to it: `table[ids + 1]` has a shift of 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexRange {
    pub extent: usize,
    pub negative: bool,
    pub shift: i64,
}

impl IndexRange {
    /// The parameter's value that makes index `index`.
    pub fn value(self, index: i64) -> f64 {
        (index - self.shift) as f64
    }
}

/// An integer parameter that indexes nothing and is compared with no `arange` holds this range
/// (an 8-bit one, every value of its dtype).
pub const PLAIN_INTS: IndexRange = IndexRange { extent: 64, negative: true, shift: 0 };

/// What a boolean parameter holds: false and true, as 0 and 1.
pub const BOOLEANS: IndexRange = IndexRange { extent: 2, negative: false, shift: 0 };

impl Graph {
    /// The range integer parameter `k` is drawn from: the indices of the smallest axis it
    /// gathers along (through views of it, plus or minus a constant; negative ones too), else
    /// `0..n` when it is compared with an `arange` of `n` (a one-hot), else [`PLAIN_INTS`]; a
    /// boolean parameter holds 0 and 1. `None` for a float parameter.
    pub fn index_range(&self, k: usize) -> Option<IndexRange> {
        if self.params[k].ty.dtype == DType::Bool {
            return Some(BOOLEANS);
        }
        if !self.params[k].ty.dtype.is_int() {
            return None;
        }
        // The parameter and the views of it, in order, each with the constant added to it.
        let mut views: Vec<(NodeId, i64)> = Vec::new();
        let mut found: Option<IndexRange> = None;
        let mut narrow = |r: IndexRange| {
            found = Some(match found {
                Some(f) if f.extent <= r.extent => f,
                _ => r,
            })
        };
        for id in self.ids() {
            let node = self.node(id);
            let view = |a: &NodeId| views.iter().find(|(v, _)| v == a).map(|&(_, s)| s);
            match &node.op {
                Op::Input { index } if *index == k => views.push((id, 0)),
                Op::Broadcast { .. } | Op::Reshape { .. } | Op::Transpose { .. } | Op::Slice { .. } => {
                    if let Some(s) = view(&node.args[0]) {
                        views.push((id, s));
                    }
                }
                Op::Cast { dtype } if dtype.is_int() => {
                    if let Some(s) = view(&node.args[0]) {
                        views.push((id, s));
                    }
                }
                Op::Binary(b @ (BinaryOp::Add | BinaryOp::Sub)) => {
                    let (a, c) = (node.args[0], node.args[1]);
                    let shifted = match (view(&a), self.integer_constant(c), view(&c), self.integer_constant(a)) {
                        (Some(s), Some(c), _, _) => Some(if *b == BinaryOp::Add { s + c } else { s - c }),
                        (_, _, Some(s), Some(c)) if *b == BinaryOp::Add => Some(s + c),
                        _ => None,
                    };
                    if let Some(s) = shifted {
                        views.push((id, s));
                    }
                }
                Op::Gather { from, .. } => {
                    let extents = from.iter().zip(&self.ty(node.args[0]).shape).filter(|(a, _)| **a == GatherAxis::Index).map(|(_, &n)| n);
                    for (a, n) in node.args[1..].iter().zip(extents) {
                        if let Some(shift) = view(a) {
                            narrow(IndexRange { extent: n, negative: true, shift });
                        }
                    }
                }
                Op::Compare(_) => {
                    for (a, b) in [(node.args[0], node.args[1]), (node.args[1], node.args[0])] {
                        if let (Some(shift), Some(n)) = (view(&a), self.iota_extent(b)) {
                            narrow(IndexRange { extent: n, negative: false, shift });
                        }
                    }
                }
                _ => {}
            }
        }
        let dtype = self.params[k].ty.dtype;
        Some(match (found, dtype) {
            (None, DType::I8) => IndexRange { extent: 128, negative: true, shift: 0 },
            (None, DType::U8) => IndexRange { extent: 256, negative: false, shift: 0 },
            (None, _) => PLAIN_INTS,
            // An 8-bit index holds what its dtype holds: -128..128, or 0..256 (never negative).
            (Some(r), DType::I8) => IndexRange { extent: r.extent.min(128), ..r },
            (Some(r), DType::U8) => IndexRange { extent: r.extent.min(256), negative: false, ..r },
            (Some(r), _) => r,
        })
    }

    /// The integer value of node `id`, a constant (broadcast or reshaped), if it is one.
    fn integer_constant(&self, id: NodeId) -> Option<i64> {
        match self.seen_through(id).op {
            Op::Constant { value, .. } if value.fract() == 0.0 && value.abs() < 1e15 => Some(value as i64),
            _ => None,
        }
    }

    /// The extent of the `arange` node `id` is a view of, if it is one.
    fn iota_extent(&self, id: NodeId) -> Option<usize> {
        match &self.seen_through(id).op {
            Op::Iota { shape, axis, .. } => Some(shape[*axis]),
            _ => None,
        }
    }

    /// The node `id` shows, through broadcasts, reshapes and casts.
    fn seen_through(&self, mut id: NodeId) -> &crate::graph::Node {
        while let Op::Broadcast { .. } | Op::Reshape { .. } | Op::Cast { .. } = self.node(id).op {
            id = self.node(id).args[0];
        }
        self.node(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(text: &str, k: usize) -> Option<IndexRange> {
        crate::parse(text).unwrap().index_range(k)
    }

    #[test]
    fn ranges_follow_views_and_constant_shifts_to_gathers_and_one_hots() {
        // table[ids + 1]: ids + 1 indexes 10 rows, so ids is an index less one.
        let shifted = "kernel k(t: f32[10,4], ids: i64[6]) {
  %0: f32[10,4] = input[t]
  %1: i64[6] = input[ids]
  %2: i64[] = const[1.0]
  %3: i64[6] = broadcast %2
  %4: i64[6] = add %1, %3
  %5: i64[6,1] = reshape %4
  %6: i64[6,4] = broadcast %5
  %7: f32[6,4] = gather[*,1:0:+1] %0, %6
  return %7
}";
        assert_eq!(range(shifted, 1), Some(IndexRange { extent: 10, negative: true, shift: 1 }));
        assert_eq!(range(shifted, 0), None, "a float parameter has no index range");
        // ids * 2: arithmetic the analysis does not follow.
        let doubled = shifted.replace("add %1, %3", "mul %1, %3");
        assert_eq!(range(&doubled, 1), Some(PLAIN_INTS));
        // labels[:, None] == np.arange(7): a one-hot of 7 classes, no negative labels.
        let one_hot = "kernel k(labels: i32[5]) {
  %0: i32[5] = input[labels]
  %1: i32[5,1] = reshape %0
  %2: i32[5,7] = broadcast %1
  %3: i64[5,7] = iota[1]
  %4: bool[5,7] = eq %2, %3
  return %4
}";
        assert_eq!(range(one_hot, 0), Some(IndexRange { extent: 7, negative: false, shift: 0 }));
    }
}
