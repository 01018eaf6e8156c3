//! Chunk rules: a contraction of a softmax over a long axis split into chunks of that axis whose
//! partial results merge exactly (flash-decoding), so that each chunk's scores, exponentials and
//! product with the values are computed while the chunk is in cache, and the chunks give threads
//! work where the rows are few.

use egg::Id;
use ollie_graph::{BinaryOp, DType, EinsumSpec, Op, ReduceOp, UnaryOp};

use super::reduction::{is_broadcast_back, is_reduction, max_centred};
use super::{broadcast, nodes, ty, Rule, Topic};
use crate::lang::{add, EGraph, ENode};

pub(super) const RULES: &[Rule] = &[Rule {
    name: "softmax-contraction-chunks",
    topic: Topic::Chunks,
    identity: "Σ_t softmax_t(s)·v[t] = Σ_c (w_c / Σ_c w_c·l_c)·Σ_τ exp(s[c,τ] − m_c)·v[c,τ]  with m_c = max_τ s[c,τ], l_c = Σ_τ exp(s[c,τ] − m_c), w_c = exp(m_c − max_c m_c)  (flash-decoding)",
    trigger: |op| matches!(op, Op::Einsum(s) if s.inputs.len() >= 2),
    apply: softmax_contraction_chunks,
}];

/// The most bytes a chunk of the streamed operands takes per batch element: it stays in a
/// second-level cache (1–2 MiB on current x86) while its scores and products are computed.
const CHUNK_BYTES: usize = 768 << 10;
/// The fewest bytes the streamed operands take for chunks to pay: past a private cache.
const STREAM_BYTES: f64 = (4 << 20) as f64;
/// The fewest positions in a chunk, and the fewest chunks.
const MIN_CHUNK: usize = 16;
const MIN_CHUNKS: usize = 4;

fn softmax_contraction_chunks(egraph: &mut EGraph, node: &ENode) -> Vec<Id> {
    let Op::Einsum(spec) = &node.op else { return Vec::new() };
    let mut out = Vec::new();
    for (i, &operand) in node.args.iter().enumerate() {
        for p in nodes(egraph, operand) {
            if let Some(chunked) = softmax_operand(egraph, &p).and_then(|(s, axis)| chunk(egraph, spec, &node.args, i, s, axis)) {
                out.push(chunked);
            }
        }
    }
    out
}

/// `(s, a)` when `p` is `exp(s − max_a s) / Σ_a exp(s − max_a s)` (the sum may be the `sum_exp`
/// the online normalizer made), `a` one axis.
fn softmax_operand(egraph: &EGraph, p: &ENode) -> Option<(Id, usize)> {
    if p.op != Op::Binary(BinaryOp::Div) {
        return None;
    }
    let (x, l) = (p.args[0], p.args[1]);
    nodes(egraph, x).iter().find_map(|e| {
        if e.op != Op::Unary(UnaryOp::Exp) {
            return None;
        }
        nodes(egraph, e.args[0]).iter().find_map(|d| {
            let s = *d.args.first()?;
            (0..ty(egraph, s).rank()).find(|&a| {
                // The sum of the exponentials, or the `sum_exp` of their argument.
                let is_sum = |c: Id| is_reduction(egraph, c, ReduceOp::Sum, x, &[a]) || egraph[c].nodes.iter().any(|n| matches!(&n.op, Op::SumExp { axes } if axes == &[a]) && egraph.find(n.args[0]) == egraph.find(s));
                max_centred(egraph, d, &[a]) == Some(s) && is_broadcast_back(egraph, l, x, &[a], &is_sum)
            })
            .map(|a| (s, a))
        })
    })
}

/// The chunked form of the einsum `spec` over `args` whose operand `i` is the softmax of `s`
/// along its axis `a`; `None` where the axis is not summed, too short or its operands too small
/// for chunks to pay.
fn chunk(egraph: &mut EGraph, spec: &EinsumSpec, args: &[Id], i: usize, s: Id, a: usize) -> Option<Id> {
    let t = *spec.inputs[i].get(a)?;
    if spec.output.contains(&t) || spec.inputs[i].iter().filter(|&&l| l == t).count() != 1 {
        return None;
    }
    let s_ty = ty(egraph, s);
    let floor = match s_ty.dtype {
        DType::F32 => -f64::from(f32::MAX),
        DType::F64 => -f64::MAX,
        _ => return None,
    };
    let n = s_ty.shape[a];
    // The bytes of one position of the streamed operands per batch element (labels they share
    // with the softmax), and their whole size.
    let (mut row, mut stream) = (0usize, 0.0);
    for (j, labels) in spec.inputs.iter().enumerate() {
        if j == i || !labels.contains(&t) {
            continue;
        }
        let shape = ty(egraph, args[j]).shape;
        let size = ty(egraph, args[j]).dtype.size();
        row += labels.iter().zip(&shape).filter(|(l, _)| **l != t && !spec.inputs[i].contains(l)).map(|(_, &e)| e).product::<usize>() * size;
        stream += ollie_graph::bytes(&ty(egraph, args[j]));
    }
    if row == 0 || stream < STREAM_BYTES {
        return None;
    }
    let len = (MIN_CHUNK..=n / MIN_CHUNKS).rev().find(|&len| n.is_multiple_of(len) && len * row <= CHUNK_BYTES)?;
    let chunks = n / len;

    // The chunks go after the labels every operand has (a batch stays outermost) and before
    // the others: a chunk is then in cache while every row of the softmax (every head) reads it.
    let labels = &spec.inputs[i];
    let pb = labels.iter().take_while(|&&l| l != t && spec.inputs.iter().all(|ls| ls.contains(&l))).count();
    // `shape` (a softmax's, the chunked axis `a` removed) with the chunks at `pb`.
    let chunk_major = |shape: &[usize], n: usize| -> Vec<usize> {
        let mut s = shape.to_vec();
        s.remove(a);
        s.insert(pb, n);
        s
    };
    let keep = |shape: &[usize], at: usize| -> Vec<usize> {
        let mut s = shape.to_vec();
        s[at] = 1;
        s
    };
    let m_shape = chunk_major(&s_ty.shape, chunks);
    let mut s_shape = m_shape.clone();
    s_shape.push(len);
    let last = s_shape.len() - 1;

    // Per chunk: the scores (the contraction that makes them, with the chunk split in its
    // output and operands, so that a chunk's scores read only the chunk; the positions of a
    // chunk its last axis), their maximum m (guarded so that a chunk of −∞ gives exponentials
    // of 0, not NaN), the exponentials, their sum l.
    let s2 = nodes(egraph, s).iter().find_map(|n| split_einsum(egraph, n, a, pb, chunks, len))?;
    let m = add(egraph, Op::Reduce { op: ReduceOp::Max, axes: vec![last] }, vec![s2])?;
    let lowest = egraph.add(ENode { op: Op::Constant { value: floor, dtype: s_ty.dtype }, args: Vec::new() });
    let lowest = broadcast(egraph, lowest, &m_shape)?;
    let guarded = add(egraph, Op::Binary(BinaryOp::Max), vec![m, lowest])?;
    let back = add(egraph, Op::Reshape { shape: keep(&s_shape, last) }, vec![guarded])?;
    let back = broadcast(egraph, back, &s_shape)?;
    let centred = add(egraph, Op::Binary(BinaryOp::Sub), vec![s2, back])?;
    let e = add(egraph, Op::Unary(UnaryOp::Exp), vec![centred])?;
    let l = add(egraph, Op::Reduce { op: ReduceOp::Sum, axes: vec![last] }, vec![e])?;

    // Per chunk: the contraction of the exponentials, the chunk a label of its result where it
    // is in the scores.
    let (c, tau) = fresh_pair(spec)?;
    let mut m_labels: Vec<u8> = labels.iter().copied().filter(|&l| l != t).collect();
    m_labels.insert(pb, c);
    let mut inputs = Vec::new();
    let mut operands = Vec::new();
    for (j, ls) in spec.inputs.iter().enumerate() {
        if j == i {
            inputs.push([m_labels.as_slice(), &[tau]].concat());
            operands.push(e);
        } else if let Some(at) = ls.iter().position(|&l| l == t) {
            inputs.push(split_label(ls, t, c, tau));
            operands.push(split_axis(egraph, args[j], at, chunks, len)?);
        } else {
            inputs.push(ls.clone());
            operands.push(args[j]);
        }
    }
    let batch = spec.output.iter().take_while(|l| inputs.iter().all(|ls| ls.contains(l))).count();
    let mut partial_out = spec.output.clone();
    partial_out.insert(batch, c);
    let partial = add(egraph, Op::Einsum(EinsumSpec { inputs, output: partial_out.clone() }), operands)?;

    // The merge: w_c = exp(m_c − max m), weighted by w_c / Σ_c w_c·l_c.
    let big = add(egraph, Op::Reduce { op: ReduceOp::Max, axes: vec![pb] }, vec![m])?;
    let big = add(egraph, Op::Reshape { shape: keep(&m_shape, pb) }, vec![big])?;
    let big = broadcast(egraph, big, &m_shape)?;
    let w = add(egraph, Op::Binary(BinaryOp::Sub), vec![m, big])?;
    let w = add(egraph, Op::Unary(UnaryOp::Exp), vec![w])?;
    let wl = add(egraph, Op::Binary(BinaryOp::Mul), vec![w, l])?;
    let den = add(egraph, Op::Reduce { op: ReduceOp::Sum, axes: vec![pb] }, vec![wl])?;
    let den = add(egraph, Op::Reshape { shape: keep(&m_shape, pb) }, vec![den])?;
    let den = broadcast(egraph, den, &m_shape)?;
    let weights = add(egraph, Op::Binary(BinaryOp::Div), vec![w, den])?;
    add(egraph, Op::Einsum(EinsumSpec { inputs: vec![m_labels, partial_out], output: spec.output.clone() }), vec![weights, partial])
}

/// The einsum `node` with its output axis `a` split into `chunks` × `len`: the chunks at
/// position `at` of its output (`at` ≤ `a`), the positions of a chunk last; the label split in
/// the operands that have it, each reshaped there.
fn split_einsum(egraph: &mut EGraph, node: &ENode, a: usize, at: usize, chunks: usize, len: usize) -> Option<Id> {
    let Op::Einsum(spec) = &node.op else { return None };
    let u = *spec.output.get(a)?;
    if spec.inputs.iter().any(|ls| ls.iter().filter(|&&l| l == u).count() > 1) {
        return None;
    }
    let (c, tau) = fresh_pair(spec)?;
    let mut operands = Vec::new();
    for (labels, &arg) in spec.inputs.iter().zip(&node.args) {
        operands.push(match labels.iter().position(|&l| l == u) {
            Some(k) => split_axis(egraph, arg, k, chunks, len)?,
            None => arg,
        });
    }
    let inputs = spec.inputs.iter().map(|ls| split_label(ls, u, c, tau)).collect();
    let mut output: Vec<u8> = spec.output.iter().copied().filter(|&l| l != u).collect();
    output.insert(at, c);
    output.push(tau);
    add(egraph, Op::Einsum(EinsumSpec { inputs, output }), operands)
}

/// Two labels `spec` does not use.
fn fresh_pair(spec: &EinsumSpec) -> Option<(u8, u8)> {
    let used: Vec<u8> = spec.inputs.iter().flatten().chain(&spec.output).copied().collect();
    let mut fresh = (b'a'..=b'z').chain(b'A'..=b'Z').filter(|l| !used.contains(l));
    Some((fresh.next()?, fresh.next()?))
}

/// `labels` with `t` replaced by `c` and `tau`.
fn split_label(labels: &[u8], t: u8, c: u8, tau: u8) -> Vec<u8> {
    labels.iter().flat_map(|&l| if l == t { vec![c, tau] } else { vec![l] }).collect()
}

/// `x` reshaped with its axis `at` split into `chunks` × `len`.
fn split_axis(egraph: &mut EGraph, x: Id, at: usize, chunks: usize, len: usize) -> Option<Id> {
    let mut shape = ty(egraph, x).shape;
    shape.splice(at..=at, [chunks, len]);
    add(egraph, Op::Reshape { shape }, vec![x])
}
