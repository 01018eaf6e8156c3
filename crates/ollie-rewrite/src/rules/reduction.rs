//! Reduction rules: reductions fused so that an input is read once — a softmax's normalizer
//! `Σ exp(x − max x)` becomes `sum_exp`, which the lowering computes in the same pass as the
//! maximum (the online normalizer).

use egg::Id;
use ollie_graph::{BinaryOp, Op, ReduceOp, UnaryOp};

use super::{nodes, ty, Rule, Topic};
use crate::lang::{add, EGraph, ENode};

pub(super) const RULES: &[Rule] = &[Rule {
    name: "online-normalizer",
    topic: Topic::Reduction,
    identity: "Σ_k exp(x − broadcast(max_k x)) = sum_exp_k(x)  (one pass with the running maximum)",
    trigger: |op| matches!(op, Op::Reduce { op: ReduceOp::Sum, .. }),
    apply: online_normalizer,
}];

/// Whether class `b` holds `max(x)` over `axes` broadcast back to `x`'s shape.
fn is_max_broadcast(egraph: &EGraph, b: Id, x: Id, axes: &[usize]) -> bool {
    let shape = ty(egraph, x).shape;
    let keepdims: Vec<usize> = shape.iter().enumerate().map(|(d, &n)| if axes.contains(&d) { 1 } else { n }).collect();
    let is_max = |c: Id| {
        egraph[c].nodes.iter().any(|n| matches!(&n.op, Op::Reduce { op: ReduceOp::Max, axes: a } if a == axes) && egraph.find(n.args[0]) == egraph.find(x))
    };
    egraph[b].nodes.iter().any(|n| {
        let Op::Broadcast { shape: to } = &n.op else { return false };
        if *to != shape {
            return false;
        }
        let r = n.args[0];
        let from = ty(egraph, r).shape;
        // Without a reshape the maximum's axes align to the right: only leading axes reduced.
        let padded: Vec<usize> = std::iter::repeat_n(1, shape.len().saturating_sub(from.len())).chain(from.iter().copied()).collect();
        let direct = padded == keepdims && is_max(r);
        let reshaped = from == keepdims && egraph[r].nodes.iter().any(|m| matches!(m.op, Op::Reshape { .. }) && is_max(m.args[0]));
        direct || reshaped
    })
}

fn online_normalizer(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let Op::Reduce { axes, .. } = &node.op else { return Vec::new() };
    let mut out = Vec::new();
    for e in nodes(egraph, node.args[0]) {
        if e.op != Op::Unary(UnaryOp::Exp) {
            continue;
        }
        for d in nodes(egraph, e.args[0]) {
            if d.op != Op::Binary(BinaryOp::Sub) || !is_max_broadcast(egraph, d.args[1], d.args[0], axes) {
                continue;
            }
            out.extend(add(egraph, Op::SumExp { axes: axes.clone() }, vec![d.args[0]]));
        }
    }
    out
}
