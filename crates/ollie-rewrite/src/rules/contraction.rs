//! Contraction rules: einsums merged into one and split again in any pairwise order (matrix-chain
//! reassociation, contraction order, weight absorption), labels summed early, and transposes
//! absorbed into labels.

use egg::Id;
use ollie_graph::{EinsumSpec, Op, ReduceOp};

use super::{nodes, Rule, Topic};
use crate::lang::{add, EGraph, ENode};

/// The most operands a merged einsum may have. Three make reassociation a local step (`(ab)c` is
/// merged and split again as `a(bc)`), which repeated reaches every order of a longer chain; more
/// only multiply the e-nodes (a chain of eight 64 × 64 matrices and a vector: 20 k e-nodes in
/// 0.2 s with three, the node limit at three iterations with four, and the same cheapest order).
const MAX_OPERANDS: usize = 3;

pub(super) const RULES: &[Rule] = &[
    Rule {
        name: "einsum-merge",
        topic: Topic::Contraction,
        identity: "einsum(S, .., einsum(T, ys), ..) = einsum(S∘T, .., ys, ..)  (T's summed labels renamed apart)",
        trigger: is_einsum,
        apply: merge,
    },
    Rule {
        name: "einsum-split",
        topic: Topic::Contraction,
        identity: "einsum(S, x1..xn) = einsum(S', .., einsum(xi, xj -> labels still needed), ..)  for any pair i, j",
        trigger: is_einsum,
        apply: split,
    },
    Rule {
        name: "einsum-presum",
        topic: Topic::Contraction,
        identity: "Σ_k x[..k..]·y[..] = (Σ_k x[..k..])·y[..]  when k is summed and only x has it",
        trigger: is_einsum,
        apply: presum,
    },
    Rule {
        name: "einsum-transpose-operand",
        topic: Topic::Contraction,
        identity: "einsum(.., transpose(y, p), ..) = einsum(.., y, ..) with the operand's labels permuted by p⁻¹",
        trigger: is_einsum,
        apply: transpose_operand,
    },
    Rule {
        name: "einsum-transpose-result",
        topic: Topic::Contraction,
        identity: "transpose(einsum(S -> o), p) = einsum(S -> o∘p)",
        trigger: |op| matches!(op, Op::Transpose { .. }),
        apply: transpose_result,
    },
];

fn is_einsum(op: &Op) -> bool {
    matches!(op, Op::Einsum(_))
}

fn spec(node: &ENode) -> &EinsumSpec {
    match &node.op {
        Op::Einsum(spec) => spec,
        _ => unreachable!("triggered by einsums only"),
    }
}

/// A label no operand or the output of `spec` uses, besides `taken`.
fn fresh(spec: &EinsumSpec, taken: &[u8]) -> Option<u8> {
    (b'a'..=b'z').chain(b'A'..=b'Z').find(|l| !taken.contains(l) && !spec.output.contains(l) && !spec.inputs.iter().any(|i| i.contains(l)))
}

fn merge(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let spec = spec(node).clone();
    let mut out = Vec::new();
    for p in 0..node.args.len() {
        for inner in nodes(egraph, node.args[p]) {
            let Op::Einsum(ispec) = &inner.op else { continue };
            if node.args.len() - 1 + inner.args.len() > MAX_OPERANDS {
                continue;
            }
            // The inner output's labels become the outer operand's; its summed labels fresh ones.
            let mut map = [0u8; 128];
            for (&l, &m) in ispec.output.iter().zip(&spec.inputs[p]) {
                map[l as usize] = m;
            }
            let mut taken = Vec::new();
            for &l in ispec.inputs.iter().flatten() {
                if map[l as usize] == 0 {
                    let Some(f) = fresh(&spec, &taken) else { return out };
                    taken.push(f);
                    map[l as usize] = f;
                }
            }
            let mut inputs = spec.inputs[..p].to_vec();
            inputs.extend(ispec.inputs.iter().map(|labels| labels.iter().map(|&l| map[l as usize]).collect::<Vec<u8>>()));
            inputs.extend(spec.inputs[p + 1..].iter().cloned());
            let mut args = node.args[..p].to_vec();
            args.extend(&inner.args);
            args.extend(&node.args[p + 1..]);
            out.extend(add(egraph, Op::Einsum(EinsumSpec { inputs, output: spec.output.clone() }), args));
        }
    }
    out
}

fn split(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let spec = spec(node).clone();
    let n = node.args.len();
    let mut out = Vec::new();
    if n < 3 {
        return out;
    }
    for i in 0..n {
        for j in i + 1..n {
            let needed = |l: &u8| spec.output.contains(l) || (0..n).any(|k| k != i && k != j && spec.inputs[k].contains(l));
            let mut labels: Vec<u8> = Vec::new();
            for &l in spec.inputs[i].iter().chain(&spec.inputs[j]) {
                if needed(&l) && !labels.contains(&l) {
                    labels.push(l);
                }
            }
            let inner_spec = EinsumSpec { inputs: vec![spec.inputs[i].clone(), spec.inputs[j].clone()], output: labels.clone() };
            let Some(inner) = add(egraph, Op::Einsum(inner_spec), vec![node.args[i], node.args[j]]) else { continue };
            let (mut inputs, mut args) = (Vec::new(), Vec::new());
            for k in 0..n {
                if k == i {
                    inputs.push(labels.clone());
                    args.push(inner);
                } else if k != j {
                    inputs.push(spec.inputs[k].clone());
                    args.push(node.args[k]);
                }
            }
            out.extend(add(egraph, Op::Einsum(EinsumSpec { inputs, output: spec.output.clone() }), args));
        }
    }
    out
}

fn presum(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let spec = spec(node).clone();
    let mut out = Vec::new();
    for p in 0..node.args.len() {
        let private: Vec<usize> = (0..spec.inputs[p].len())
            .filter(|&a| {
                let l = spec.inputs[p][a];
                !spec.output.contains(&l) && spec.inputs.iter().enumerate().all(|(k, labels)| k == p || !labels.contains(&l))
            })
            .collect();
        // Alone, the operand's own sum is the whole contraction: nothing to move.
        if private.is_empty() || spec.inputs.len() == 1 {
            continue;
        }
        let Some(summed) = add(egraph, Op::Reduce { op: ReduceOp::Sum, axes: private.clone() }, vec![node.args[p]]) else { continue };
        let labels = (0..spec.inputs[p].len()).filter(|a| !private.contains(a)).map(|a| spec.inputs[p][a]).collect();
        out.extend(with_operand(egraph, &spec, node, p, labels, summed));
    }
    out
}

/// Contraction `node` (of `spec`) with operand `p` replaced by `arg`, whose axes are `labels`.
fn with_operand(egraph: &mut EGraph, spec: &EinsumSpec, node: &ENode, p: usize, labels: Vec<u8>, arg: Id) -> Option<Id> {
    let mut inputs = spec.inputs.clone();
    inputs[p] = labels;
    let mut args = node.args.clone();
    args[p] = arg;
    add(egraph, Op::Einsum(EinsumSpec { inputs, output: spec.output.clone() }), args)
}

fn transpose_operand(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let spec = spec(node).clone();
    let mut out = Vec::new();
    for p in 0..node.args.len() {
        for inner in nodes(egraph, node.args[p]) {
            let Op::Transpose { perm } = &inner.op else { continue };
            // Axis i of the transpose is axis perm[i] of its operand.
            let mut labels = vec![0u8; perm.len()];
            for (i, &q) in perm.iter().enumerate() {
                labels[q] = spec.inputs[p][i];
            }
            out.extend(with_operand(egraph, &spec, node, p, labels, inner.args[0]));
        }
    }
    out
}

fn transpose_result(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let Op::Transpose { perm } = &node.op else { return Vec::new() };
    let mut out = Vec::new();
    for inner in nodes(egraph, node.args[0]) {
        let Op::Einsum(spec) = &inner.op else { continue };
        let output = perm.iter().map(|&q| spec.output[q]).collect();
        out.extend(add(egraph, Op::Einsum(EinsumSpec { inputs: spec.inputs.clone(), output }), inner.args.clone()));
    }
    out
}
