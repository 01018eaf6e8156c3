//! Structured-constant rules: a contraction with a triangle of ones is a running sum (a scan),
//! and one with an identity or a diagonal matrix is an elementwise product.

use egg::Id;
use ollie_graph::{BinaryOp, CmpOp, EinsumSpec, Op, ReduceOp, SliceAxis};

use super::{broadcast, movable_constant, Rule, Topic};
use crate::lang::{add, EGraph, ENode};

pub(super) const RULES: &[Rule] = &[
    Rule {
        name: "triangular-scan",
        topic: Topic::Structure,
        identity: "Σ_j x[.., j]·[j ≤ k] = cumsum(x)[.., k]  (triu/tril of ones; strict triangles exclusive, the other triangle reversed)",
        trigger: |op| matches!(op, Op::Einsum(s) if s.inputs.len() == 2),
        apply: triangular_scan,
    },
    Rule {
        name: "diagonal-product",
        topic: Topic::Structure,
        identity: "Σ_j x[.., j]·[j = k]·v[j, k] = x[.., k]·v[k, k]  (an identity or a diagonal matrix)",
        trigger: |op| matches!(op, Op::Einsum(s) if s.inputs.len() == 2),
        apply: diagonal_product,
    },
];

/// Which elements of a square mask hold its value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    /// Those with `index[hi] − index[lo] ≥ t`.
    Triangle { hi: usize, t: i64 },
    /// Those with `index[0] = index[1]`.
    Diagonal,
}

/// `iota(axis) + offset` (casts and added integer constants seen through); `depth` bounds the
/// walk in an e-graph that may be cyclic.
fn index_of(egraph: &EGraph, id: Id, depth: usize) -> Option<(usize, i64)> {
    if depth == 0 {
        return None;
    }
    let integer = |c: Id| egraph[c].data.splat.filter(|v| v.fract() == 0.0 && v.abs() < 1e9).map(|v| v as i64);
    egraph[id].nodes.iter().find_map(|n| match n.op {
        Op::Iota { axis, .. } => Some((axis, 0)),
        Op::Cast { .. } => index_of(egraph, n.args[0], depth - 1),
        Op::Binary(BinaryOp::Add) => {
            let right = index_of(egraph, n.args[0], depth - 1).zip(integer(n.args[1])).map(|((a, o), k)| (a, o + k));
            right.or_else(|| index_of(egraph, n.args[1], depth - 1).zip(integer(n.args[0])).map(|((a, o), k)| (a, o + k)))
        }
        Op::Binary(BinaryOp::Sub) => index_of(egraph, n.args[0], depth - 1).zip(integer(n.args[1])).map(|((a, o), k)| (a, o - k)),
        _ => None,
    })
}

/// The mask a class holds: `select(cond, v, 0)` or `select(cond, 0, v)` over a square matrix with
/// `cond` comparing its two indices; with the class of `v`.
fn mask(egraph: &EGraph, id: Id) -> Option<(Shape, Id)> {
    let shape = &egraph[id].data.ty.shape;
    if shape.len() != 2 || shape[0] != shape[1] {
        return None;
    }
    egraph[id].nodes.iter().find_map(|n| {
        if n.op != Op::Select {
            return None;
        }
        let zero = |c: Id| egraph[c].data.splat == Some(0.0);
        let (value, negate) = if zero(n.args[2]) {
            (n.args[1], false)
        } else if zero(n.args[1]) {
            (n.args[2], true)
        } else {
            return None;
        };
        egraph[n.args[0]].nodes.iter().find_map(|c| {
            let Op::Compare(cmp) = c.op else { return None };
            let (l, ol) = index_of(egraph, c.args[0], 4)?;
            let (r, or) = index_of(egraph, c.args[1], 4)?;
            if l == r {
                return None;
            }
            // `i[l] + ol  cmp  i[r] + or`, that is `i[l] − i[r]  cmp  d`.
            let d = or - ol;
            let cmp = if negate {
                match cmp {
                    CmpOp::Ge => CmpOp::Lt,
                    CmpOp::Gt => CmpOp::Le,
                    CmpOp::Le => CmpOp::Gt,
                    CmpOp::Lt => CmpOp::Ge,
                    CmpOp::Eq => CmpOp::Ne,
                    CmpOp::Ne => CmpOp::Eq,
                }
            } else {
                cmp
            };
            let shape = match cmp {
                CmpOp::Ge => Shape::Triangle { hi: l, t: d },
                CmpOp::Gt => Shape::Triangle { hi: l, t: d + 1 },
                CmpOp::Le => Shape::Triangle { hi: r, t: -d },
                CmpOp::Lt => Shape::Triangle { hi: r, t: 1 - d },
                CmpOp::Eq if d == 0 => Shape::Diagonal,
                CmpOp::Eq | CmpOp::Ne => return None,
            };
            Some((shape, value))
        })
    })
}

/// A two-operand contraction `x·m` with `m` a square mask of its kind: which operand is the
/// mask, the mask's axis that is summed and its axis that stays, and the other operand's labels
/// with the summed label renamed to the staying one. `None` unless the contraction is a
/// product of `x` with the mask along one axis and every other label of `x` stays.
struct Masked {
    x: Id,
    x_labels: Vec<u8>,
    /// The position of the summed label in `x`'s labels.
    axis: usize,
    /// The mask's summed axis.
    summed: usize,
    shape: Shape,
    value: Id,
}

fn masked(egraph: &EGraph, node: &ENode) -> Vec<Masked> {
    let Op::Einsum(spec) = &node.op else { return Vec::new() };
    let mut out = Vec::new();
    for q in 0..2 {
        let p = 1 - q;
        let Some((shape, value)) = mask(egraph, node.args[q]) else { continue };
        let (m, x) = (&spec.inputs[q], &spec.inputs[p]);
        for summed in 0..2 {
            let (r, c) = (m[summed], m[1 - summed]);
            let Some(axis) = x.iter().position(|&l| l == r) else { continue };
            if spec.output.contains(&r) || !spec.output.contains(&c) || x.contains(&c) {
                continue;
            }
            let mut x_labels = x.clone();
            x_labels[axis] = c;
            let mut sorted_out = spec.output.clone();
            let mut sorted_x = x_labels.clone();
            sorted_out.sort_unstable();
            sorted_x.sort_unstable();
            if sorted_out != sorted_x {
                continue;
            }
            out.push(Masked { x: node.args[p], x_labels, axis, summed, shape, value });
        }
    }
    out
}

/// `id`, whose axes carry `labels`, transposed to `output`'s order.
fn arrange(egraph: &mut EGraph, id: Id, labels: &[u8], output: &[u8]) -> Option<Id> {
    if labels == output {
        return Some(id);
    }
    let perm = output.iter().map(|l| labels.iter().position(|m| m == l)).collect::<Option<Vec<usize>>>()?;
    add(egraph, Op::Transpose { perm }, vec![id])
}

fn triangular_scan(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let Op::Einsum(spec) = &node.op else { return Vec::new() };
    let mut out = Vec::new();
    for m in masked(egraph, node) {
        let Shape::Triangle { hi, t } = m.shape else { continue };
        if !(0..=1).contains(&t) {
            continue;
        }
        // Kept where `i[hi] − i[lo] ≥ t`: when the staying axis is `hi`, each output sums the
        // elements up to it; otherwise from it on.
        let reverse = hi == m.summed;
        let scale = match egraph[m.value].data.splat {
            Some(1.0) => None,
            _ => match movable_constant(egraph, m.value) {
                Some(c) => Some(c),
                None => continue,
            },
        };
        let Some(scan) = add(egraph, Op::Scan { op: ReduceOp::Sum, axis: m.axis, reverse, exclusive: t == 1 }, vec![m.x]) else { continue };
        let Some(mut result) = arrange(egraph, scan, &m.x_labels, &spec.output) else { continue };
        if let Some(c) = scale {
            let shape = egraph[result].data.ty.shape.clone();
            let Some(c) = broadcast(egraph, c, &shape) else { continue };
            let Some(scaled) = add(egraph, Op::Binary(BinaryOp::Mul), vec![result, c]) else { continue };
            result = scaled;
        }
        out.push(result);
    }
    out
}

fn diagonal_product(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let Op::Einsum(spec) = &node.op else { return Vec::new() };
    let mut out = Vec::new();
    for m in masked(egraph, node) {
        if m.shape != Shape::Diagonal {
            continue;
        }
        if egraph[m.value].data.splat == Some(1.0) {
            out.extend(arrange(egraph, m.x, &m.x_labels, &spec.output));
            continue;
        }
        // The diagonal of the value as a vector: every (n+1)-th element of it flattened.
        let n = egraph[m.value].data.ty.shape[0];
        let Some(flat) = add(egraph, Op::Reshape { shape: vec![n * n] }, vec![m.value]) else { continue };
        let Some(diagonal) = add(egraph, Op::Slice { axes: vec![SliceAxis { start: 0, step: n as i64 + 1, len: n }] }, vec![flat]) else { continue };
        let c = m.x_labels[m.axis];
        let product = EinsumSpec { inputs: vec![m.x_labels.clone(), vec![c]], output: spec.output.clone() };
        out.extend(add(egraph, Op::Einsum(product), vec![m.x, diagonal]));
    }
    out
}
