//! Reduction rules: reductions fused so that an input is read once — a softmax's normalizer
//! `Σ exp(x − max x)` becomes `sum_exp`, which the lowering computes in the same pass as the
//! maximum (the online normalizer), and a variance's `Σ (x − mean x)²` becomes `sum_sq_dev`,
//! computed in the same pass as the sum (partial moments merged, nothing cancelling).

use egg::Id;
use ollie_graph::{BinaryOp, Op, ReduceOp, UnaryOp};

use super::{nodes, ty, Rule, Topic};
use crate::lang::{add, EGraph, ENode};

pub(super) const RULES: &[Rule] = &[
    Rule {
        name: "online-normalizer",
        topic: Topic::Reduction,
        identity: "Σ_k exp(x − broadcast(max_k x)) = sum_exp_k(x)  (one pass with the running maximum)",
        trigger: |op| matches!(op, Op::Reduce { op: ReduceOp::Sum, .. }),
        apply: online_normalizer,
    },
    Rule {
        name: "one-pass-variance",
        topic: Topic::Reduction,
        identity: "Σ_k (x − broadcast(Σ_k x / n))² = sum_sq_dev_k(x)  (one pass with the sum, partial moments merged)",
        trigger: |op| matches!(op, Op::Reduce { op: ReduceOp::Sum, .. }),
        apply: one_pass_variance,
    },
];

/// Whether class `c` holds `op(x)` over exactly `axes`.
pub(super) fn is_reduction(egraph: &EGraph, c: Id, op: ReduceOp, x: Id, axes: &[usize]) -> bool {
    egraph[c].nodes.iter().any(|n| matches!(&n.op, Op::Reduce { op: o, axes: a } if *o == op && a == axes) && egraph.find(n.args[0]) == egraph.find(x))
}

/// Whether class `c` holds the mean of `x` over `axes`: its sum divided by the count.
fn is_mean(egraph: &EGraph, c: Id, x: Id, axes: &[usize]) -> bool {
    let count: usize = axes.iter().map(|&a| ty(egraph, x).shape[a]).product();
    egraph[c].nodes.iter().any(|n| n.op == Op::Binary(BinaryOp::Div) && egraph[n.args[1]].data.splat == Some(count as f64) && is_reduction(egraph, n.args[0], ReduceOp::Sum, x, axes))
}

/// Whether class `b` holds a statistic of `x` over `axes` (`is_stat`) broadcast back to `x`'s
/// shape.
pub(super) fn is_broadcast_back(egraph: &EGraph, b: Id, x: Id, axes: &[usize], is_stat: &dyn Fn(Id) -> bool) -> bool {
    let shape = ty(egraph, x).shape;
    let keepdims: Vec<usize> = shape.iter().enumerate().map(|(d, &n)| if axes.contains(&d) { 1 } else { n }).collect();
    egraph[b].nodes.iter().any(|n| {
        let Op::Broadcast { shape: to } = &n.op else { return false };
        if *to != shape {
            return false;
        }
        let r = n.args[0];
        let from = ty(egraph, r).shape;
        // Without a reshape the maximum's axes align to the right: only leading axes reduced.
        let padded: Vec<usize> = std::iter::repeat_n(1, shape.len().saturating_sub(from.len())).chain(from.iter().copied()).collect();
        let direct = padded == keepdims && is_stat(r);
        let reshaped = from == keepdims && egraph[r].nodes.iter().any(|m| matches!(m.op, Op::Reshape { .. }) && is_stat(m.args[0]));
        direct || reshaped
    })
}

/// `x` when `d` is `x − broadcast(max_axes x)`: a softmax's argument, centred by its maximum.
pub(super) fn max_centred(egraph: &EGraph, d: &ENode, axes: &[usize]) -> Option<Id> {
    let x = *d.args.first()?;
    (d.op == Op::Binary(BinaryOp::Sub) && is_broadcast_back(egraph, d.args[1], x, axes, &|c| is_reduction(egraph, c, ReduceOp::Max, x, axes))).then_some(x)
}

fn online_normalizer(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let Op::Reduce { axes, .. } = &node.op else { return Vec::new() };
    let mut out = Vec::new();
    for e in nodes(egraph, node.args[0]) {
        if e.op != Op::Unary(UnaryOp::Exp) {
            continue;
        }
        for d in nodes(egraph, e.args[0]) {
            if let Some(x) = max_centred(egraph, &d, axes) {
                out.extend(add(egraph, Op::SumExp { axes: axes.clone() }, vec![x]));
            }
        }
    }
    out
}

fn one_pass_variance(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let Op::Reduce { axes, .. } = &node.op else { return Vec::new() };
    let mut out = Vec::new();
    for square in nodes(egraph, node.args[0]) {
        // `d·d` or `d ** 2`.
        let d = match square.op {
            Op::Binary(BinaryOp::Mul) if egraph.find(square.args[0]) == egraph.find(square.args[1]) => square.args[0],
            Op::Binary(BinaryOp::Pow) if egraph[square.args[1]].data.splat == Some(2.0) => square.args[0],
            _ => continue,
        };
        for dev in nodes(egraph, d) {
            let x = dev.args.first().copied();
            let Some(x) = x.filter(|_| dev.op == Op::Binary(BinaryOp::Sub)) else { continue };
            if !ty(egraph, x).dtype.is_float() || !is_broadcast_back(egraph, dev.args[1], x, axes, &|c| is_mean(egraph, c, x, axes)) {
                continue;
            }
            out.extend(add(egraph, Op::SumSqDev { axes: axes.clone() }, vec![x]));
        }
    }
    out
}
