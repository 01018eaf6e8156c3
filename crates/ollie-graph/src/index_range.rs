//! The values an integer parameter may hold under numpy's contract: what the verifier draws
//! its inputs from.

use crate::graph::{Graph, NodeId};
use crate::op::{GatherAxis, Op};

/// The integers a parameter holds: `0..extent`, and with `negative` also `-extent..0` (numpy
/// counts a negative index from the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexRange {
    pub extent: usize,
    pub negative: bool,
}

/// An integer parameter that indexes nothing and is compared with no `arange` holds this range.
pub const PLAIN_INTS: IndexRange = IndexRange { extent: 64, negative: true };

impl Graph {
    /// The range integer parameter `k` is drawn from: the indices of the smallest axis it
    /// gathers along (through views of it; negative ones too), else `0..n` when it is compared
    /// with an `arange` of `n` (a one-hot), else [`PLAIN_INTS`]. `None` for a float parameter.
    pub fn index_range(&self, k: usize) -> Option<IndexRange> {
        if !self.params[k].ty.dtype.is_int() {
            return None;
        }
        // The parameter and the views of it, in order.
        let mut views: Vec<NodeId> = Vec::new();
        let mut found: Option<IndexRange> = None;
        let mut narrow = |r: IndexRange| {
            found = Some(match found {
                Some(f) if f.extent <= r.extent => f,
                _ => r,
            })
        };
        for id in self.ids() {
            let node = self.node(id);
            let is_view = |a: &NodeId| views.contains(a);
            match &node.op {
                Op::Input { index } if *index == k => views.push(id),
                Op::Broadcast { .. } | Op::Reshape { .. } | Op::Transpose { .. } | Op::Slice { .. } if is_view(&node.args[0]) => views.push(id),
                Op::Cast { dtype } if dtype.is_int() && is_view(&node.args[0]) => views.push(id),
                Op::Gather { from, .. } => {
                    let extents = from.iter().zip(&self.ty(node.args[0]).shape).filter(|(a, _)| **a == GatherAxis::Index).map(|(_, &n)| n);
                    for (a, n) in node.args[1..].iter().zip(extents) {
                        if is_view(a) {
                            narrow(IndexRange { extent: n, negative: true });
                        }
                    }
                }
                Op::Compare(_) => {
                    for (a, b) in [(node.args[0], node.args[1]), (node.args[1], node.args[0])] {
                        if let (true, Some(n)) = (is_view(&a), self.iota_extent(b)) {
                            narrow(IndexRange { extent: n, negative: false });
                        }
                    }
                }
                _ => {}
            }
        }
        Some(found.unwrap_or(PLAIN_INTS))
    }

    /// The extent of the `arange` node `id` is a view of, if it is one.
    fn iota_extent(&self, mut id: NodeId) -> Option<usize> {
        loop {
            let node = self.node(id);
            match &node.op {
                Op::Iota { shape, axis, .. } => return Some(shape[*axis]),
                Op::Broadcast { .. } | Op::Reshape { .. } | Op::Cast { .. } => id = node.args[0],
                _ => return None,
            }
        }
    }
}
