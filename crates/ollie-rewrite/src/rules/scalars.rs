//! Scalar rules: a constant factor moved out of (or into) sums and contractions, a sum over
//! axes a broadcast made is a multiplication by their extent, and a division by a broadcast is
//! a multiplication by its reciprocal.

use egg::Id;
use ollie_graph::{BinaryOp, DType, Op, ReduceOp, UnaryOp};

use super::{broadcast, movable_constant, nodes, ty, Rule, Topic};
use crate::lang::{add, EGraph, ENode};

pub(super) const RULES: &[Rule] = &[
    Rule {
        name: "contraction-scale-out",
        topic: Topic::Scalars,
        identity: "einsum(.., x·c, ..) = einsum(.., x, ..)·c  and  einsum(.., x/c, ..) = einsum(.., x, ..)/c  (c a finite nonzero constant)",
        trigger: |op| matches!(op, Op::Einsum(_)),
        apply: scale_out_of_contraction,
    },
    Rule {
        name: "contraction-scale-in",
        topic: Topic::Scalars,
        identity: "einsum(x1..xn)·c = einsum(.., xk·c, ..)  for any operand k  (likewise /c; c a finite nonzero constant)",
        trigger: |op| matches!(op, Op::Binary(BinaryOp::Mul | BinaryOp::Div)),
        apply: scale_into_contraction,
    },
    Rule {
        name: "sum-scale",
        topic: Topic::Scalars,
        identity: "Σ x·c = c·Σ x  and  Σ x/c = (Σ x)/c  (c a finite nonzero constant)",
        trigger: |op| matches!(op, Op::Reduce { op: ReduceOp::Sum, .. }),
        apply: scale_out_of_sum,
    },
    Rule {
        name: "sum-broadcast",
        topic: Topic::Scalars,
        identity: "Σ_k broadcast(y)[.., k, ..] = n·y  over axes k the broadcast made (n their extent)",
        trigger: |op| matches!(op, Op::Reduce { op: ReduceOp::Sum, .. }),
        apply: sum_of_broadcast,
    },
    Rule {
        name: "divide-by-reciprocal",
        topic: Topic::Scalars,
        identity: "x / broadcast(y) = x · broadcast(1/y)  (y fewer elements than x, a square root or a constant: 1/y never overflows nor is subnormal)",
        trigger: |op| matches!(op, Op::Binary(BinaryOp::Div)),
        apply: reciprocal_of_divisor,
    },
];

/// The factor `x` and constant `c` of a node `x·c`, `c·x` (`Mul`) or `x/c` (`Div`).
fn scaled_node(egraph: &EGraph, n: &ENode) -> Vec<(BinaryOp, Id, Id)> {
    match n.op {
        Op::Binary(BinaryOp::Mul) => {
            let right = movable_constant(egraph, n.args[1]).map(|c| (BinaryOp::Mul, n.args[0], c));
            let left = movable_constant(egraph, n.args[0]).map(|c| (BinaryOp::Mul, n.args[1], c));
            right.into_iter().chain(left).collect()
        }
        Op::Binary(BinaryOp::Div) => movable_constant(egraph, n.args[1]).map(|c| (BinaryOp::Div, n.args[0], c)).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// The same for every node of a class.
fn scaled(egraph: &EGraph, id: Id) -> Vec<(BinaryOp, Id, Id)> {
    egraph[id].nodes.iter().flat_map(|n| scaled_node(egraph, n)).collect()
}

/// `x op c`, with `c` broadcast to `x`'s shape.
fn apply_scale(egraph: &mut EGraph, op: BinaryOp, x: Id, c: Id) -> Option<Id> {
    let shape = ty(egraph, x).shape;
    let c = broadcast(egraph, c, &shape)?;
    add(egraph, Op::Binary(op), vec![x, c])
}

fn scale_out_of_contraction(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let Op::Einsum(spec) = &node.op else { return Vec::new() };
    let mut out = Vec::new();
    for p in 0..node.args.len() {
        for (op, x, c) in scaled(egraph, node.args[p]) {
            let mut args = node.args.clone();
            args[p] = x;
            let Some(e) = add(egraph, Op::Einsum(spec.clone()), args) else { continue };
            out.extend(apply_scale(egraph, op, e, c));
        }
    }
    out
}

fn scale_into_contraction(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let mut out = Vec::new();
    for (op, e, c) in scaled_node(egraph, node) {
        for inner in nodes(egraph, e) {
            let Op::Einsum(spec) = &inner.op else { continue };
            for k in 0..inner.args.len() {
                let Some(scaled) = apply_scale(egraph, op, inner.args[k], c) else { continue };
                let mut args = inner.args.clone();
                args[k] = scaled;
                out.extend(add(egraph, Op::Einsum(spec.clone()), args));
            }
        }
    }
    out
}

fn scale_out_of_sum(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let mut out = Vec::new();
    for (op, x, c) in scaled(egraph, node.args[0]) {
        let Some(sum) = add(egraph, node.op.clone(), vec![x]) else { continue };
        out.extend(apply_scale(egraph, op, sum, c));
    }
    out
}

fn sum_of_broadcast(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let Op::Reduce { axes, .. } = &node.op else { return Vec::new() };
    let Ok(result) = crate::lang::infer(egraph, &node.op, &node.args) else { return Vec::new() };
    if !matches!(result.dtype, DType::F32 | DType::F64) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for inner in nodes(egraph, node.args[0]) {
        let Op::Broadcast { shape } = &inner.op else { continue };
        let from = ty(egraph, inner.args[0]).shape;
        // The source's axes aligned to the right, size 1 where the broadcast adds an axis.
        let padded: Vec<usize> = std::iter::repeat_n(1, shape.len() - from.len()).chain(from.iter().copied()).collect();
        if axes.iter().any(|&a| padded[a] != 1) {
            continue;
        }
        let n: usize = axes.iter().map(|&a| shape[a]).product();
        let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).map(|a| padded[a]).collect();
        let y = if kept == from { Some(inner.args[0]) } else { add(egraph, Op::Reshape { shape: kept }, vec![inner.args[0]]) };
        let Some(y) = y else { continue };
        let Some(y) = broadcast(egraph, y, &result.shape) else { continue };
        if n == 1 {
            out.push(y);
            continue;
        }
        let count = egraph.add(ENode { op: Op::Constant { value: n as f64, dtype: result.dtype }, args: Vec::new() });
        out.extend(apply_scale(egraph, BinaryOp::Mul, y, count));
    }
    out
}

/// Whether every finite nonzero value of class `y` has a normal reciprocal, so that `x·(1/y)` is
/// `x/y` with one rounding more: at zero and the infinities the two agree exactly (`x/±0` and
/// `x·±∞`, `x/±∞` and `x·±0`), and between them only a divisor below the normal range (whose
/// reciprocal overflows) or near the top of it (whose reciprocal is subnormal) tells them apart.
/// A square root's nonzero finite values lie between the square roots of the least subnormal
/// and of the largest float (2⁻⁷⁵ and 2⁶⁴ in float32); a constant is looked at.
fn normal_reciprocal(egraph: &EGraph, y: Id, dtype: DType) -> bool {
    let (least, most) = match dtype {
        DType::F32 => (f64::from(f32::MIN_POSITIVE), 1.0 / f64::from(f32::MIN_POSITIVE)),
        DType::F64 => (f64::MIN_POSITIVE, 1.0 / f64::MIN_POSITIVE),
        _ => return false,
    };
    if let Some(c) = egraph[y].data.splat {
        return c.is_finite() && (least..=most).contains(&c.abs());
    }
    egraph[y].nodes.iter().any(|n| match n.op {
        Op::Unary(UnaryOp::Sqrt) => true,
        Op::Reshape { .. } | Op::Transpose { .. } => normal_reciprocal(egraph, n.args[0], dtype),
        _ => false,
    })
}

fn reciprocal_of_divisor(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let [x, d] = node.args[..] else { return Vec::new() };
    let result = ty(egraph, x);
    let mut out = Vec::new();
    for inner in nodes(egraph, d) {
        let Op::Broadcast { shape } = &inner.op else { continue };
        let y = inner.args[0];
        let from = ty(egraph, y);
        if from.num_elements() >= result.num_elements() || !normal_reciprocal(egraph, y, from.dtype) {
            continue;
        }
        let one = egraph.add(ENode { op: Op::Constant { value: 1.0, dtype: from.dtype }, args: Vec::new() });
        let Some(one) = broadcast(egraph, one, &from.shape) else { continue };
        let Some(r) = add(egraph, Op::Binary(BinaryOp::Div), vec![one, y]) else { continue };
        let Some(r) = add(egraph, Op::Broadcast { shape: shape.clone() }, vec![r]) else { continue };
        out.extend(add(egraph, Op::Binary(BinaryOp::Mul), vec![x, r]));
    }
    out
}
