//! Layout rules: transposes and reshapes composed or cancelled, and moved through elementwise
//! ops (so that they meet and cancel, and so that a function of a broadcast is computed once per
//! distinct element).

use egg::Id;
use ollie_graph::{broadcast_shapes, broadcasts_to, Op};

use super::{broadcast, nodes, ty, Rule, Topic};
use crate::lang::{add, EGraph, ENode};

pub(super) const RULES: &[Rule] = &[
    Rule {
        name: "transpose-transpose",
        topic: Topic::Layout,
        identity: "transpose(transpose(x, p), q) = transpose(x, p∘q), and transpose(x, identity) = x",
        trigger: |op| matches!(op, Op::Transpose { .. }),
        apply: transpose_transpose,
    },
    Rule {
        name: "reshape-reshape",
        topic: Topic::Layout,
        identity: "reshape(reshape(x, s), t) = reshape(x, t), and reshape(x, shape of x) = x",
        trigger: |op| matches!(op, Op::Reshape { .. }),
        apply: reshape_reshape,
    },
    Rule {
        name: "transpose-elementwise",
        topic: Topic::Layout,
        identity: "transpose(f(x, y), p) = f(transpose(x, p), transpose(y, p))  for elementwise f",
        trigger: |op| matches!(op, Op::Transpose { .. }),
        apply: transpose_into_elementwise,
    },
    Rule {
        name: "elementwise-transpose",
        topic: Topic::Layout,
        identity: "f(transpose(x, p), transpose(y, p)) = transpose(f(x, y), p)  for elementwise f",
        trigger: is_elementwise,
        apply: transpose_out_of_elementwise,
    },
    Rule {
        name: "elementwise-broadcast",
        topic: Topic::Layout,
        identity: "f(broadcast(x), broadcast(y)) = broadcast(f(broadcast(x, s), broadcast(y, s)))  with s the smallest shape both broadcast to",
        trigger: is_elementwise,
        apply: broadcast_out_of_elementwise,
    },
];

/// Elementwise ops: their operands and result share one shape.
fn is_elementwise(op: &Op) -> bool {
    matches!(op, Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Select | Op::Cast { .. })
}

fn transpose_transpose(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let Op::Transpose { perm: q } = &node.op else { return Vec::new() };
    let mut out = Vec::new();
    if q.iter().enumerate().all(|(i, &p)| i == p) {
        out.push(node.args[0]);
    }
    for inner in nodes(egraph, node.args[0]) {
        let Op::Transpose { perm: p } = &inner.op else { continue };
        // Axis i of the outer is axis q[i] of the inner, which is axis p[q[i]] of x.
        let perm: Vec<usize> = q.iter().map(|&i| p[i]).collect();
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            out.push(inner.args[0]);
        } else {
            out.extend(add(egraph, Op::Transpose { perm }, inner.args.clone()));
        }
    }
    out
}

fn reshape_reshape(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let Op::Reshape { shape } = &node.op else { return Vec::new() };
    let mut out = Vec::new();
    if ty(egraph, node.args[0]).shape == *shape {
        out.push(node.args[0]);
    }
    for inner in nodes(egraph, node.args[0]) {
        let Op::Reshape { .. } = &inner.op else { continue };
        let x = inner.args[0];
        if ty(egraph, x).shape == *shape {
            out.push(x);
        } else {
            out.extend(add(egraph, node.op.clone(), vec![x]));
        }
    }
    out
}

fn transpose_into_elementwise(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let mut out = Vec::new();
    for inner in nodes(egraph, node.args[0]) {
        if !is_elementwise(&inner.op) {
            continue;
        }
        let args: Option<Vec<Id>> = inner.args.iter().map(|&a| add(egraph, node.op.clone(), vec![a])).collect();
        if let Some(args) = args {
            out.extend(add(egraph, inner.op.clone(), args));
        }
    }
    out
}

fn transpose_out_of_elementwise(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    // One transpose under every operand, the same for all.
    let mut choices: Vec<(Op, Vec<Id>)> = Vec::new();
    for (k, &a) in node.args.iter().enumerate() {
        let here: Vec<(Op, Id)> = nodes(egraph, a).into_iter().filter(|n| matches!(n.op, Op::Transpose { .. })).map(|n| (n.op, n.args[0])).collect();
        if k == 0 {
            choices = here.into_iter().map(|(op, x)| (op, vec![x])).collect();
        } else {
            choices.retain_mut(|(op, xs)| match here.iter().find(|(o, _)| o == op) {
                Some((_, x)) => {
                    xs.push(*x);
                    true
                }
                None => false,
            });
        }
    }
    let mut out = Vec::new();
    for (transpose, xs) in choices {
        if let Some(inner) = add(egraph, node.op.clone(), xs) {
            out.extend(add(egraph, transpose, vec![inner]));
        }
    }
    out
}

fn broadcast_out_of_elementwise(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let Ok(result) = crate::lang::infer(egraph, &node.op, &node.args) else { return Vec::new() };
    // Each operand's source before its broadcast (itself when it is none).
    let sources: Vec<Id> = node
        .args
        .iter()
        .map(|&a| {
            egraph[a].nodes.iter().find_map(|n| matches!(n.op, Op::Broadcast { .. }).then(|| n.args[0])).unwrap_or(a)
        })
        .collect();
    let mut small: Vec<usize> = Vec::new();
    for &s in &sources {
        match broadcast_shapes(&small, &ty(egraph, s).shape) {
            Some(shape) => small = shape,
            None => return Vec::new(),
        }
    }
    if small.iter().product::<usize>() >= result.num_elements() || !broadcasts_to(&small, &result.shape) {
        return Vec::new();
    }
    let args: Option<Vec<Id>> = sources.iter().map(|&s| broadcast(egraph, s, &small)).collect();
    let Some(args) = args else { return Vec::new() };
    let Some(inner) = add(egraph, node.op.clone(), args) else { return Vec::new() };
    broadcast(egraph, inner, &result.shape).into_iter().collect()
}
