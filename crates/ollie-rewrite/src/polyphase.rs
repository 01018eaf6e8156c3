//! Polyphase splitting: a contraction over a sliding window of a tensor that is zero but at every
//! S-th element along the window's axis — a transposed convolution as numpy users write it, zeros
//! between the inputs, padded, then convolved with the flipped kernel — equals S contractions,
//! one per phase of the output (`l = S·q + r`), each over the elements that are not zero, their
//! results interleaved: the gradient form, with no product of an inserted zero and no zeros in
//! memory.
//!
//! Which elements are zero is a fact about values, however the spec wrote them (a strided
//! store into `np.zeros`, a `concat`, a `select`), so it is found by evaluating the window's
//! source on two input sets: one all positive (no value-dependent zero, as a `relu`'s, survives
//! it) and one of both signs. The non-zero elements themselves are a strided slice of that
//! source, read from a node the graph already has where one equals it (the parameter the zeros
//! were put between). Like every variant, the kernels made from the result are judged by the
//! verifier against the spec: the evaluation proposes, it proves nothing.

use ndarray::Axis;
use ollie_graph::{evaluate, GatherAxis, Graph, NodeId, Op, SliceAxis, Tensor, TensorType};

/// Sources larger than this are not evaluated.
const MAX_ELEMENTS: usize = 1 << 24;
/// Contractions split in one graph (each along all its window axes at once).
const MAX_SPLITS: usize = 16;
/// Nodes compared with the non-zero elements, earliest first.
const MAX_CANDIDATES: usize = 16;

/// `graph` with every window contraction over a tensor zero between every S-th element split
/// into its phases, or `None` where there is none.
pub fn polyphase(graph: &Graph) -> Option<Graph> {
    let mut g = graph.clone();
    let mut splits = 0;
    while splits < MAX_SPLITS {
        let Some(next) = split_one(&g) else { break };
        g = next;
        splits += 1;
    }
    tracing::debug!(splits, "polyphase");
    (splits > 0).then_some(g)
}

/// The first contraction that splits, split.
fn split_one(g: &Graph) -> Option<Graph> {
    g.ids().filter(|&id| matches!(g.node(id).op, Op::Einsum(_))).find_map(|id| (0..g.node(id).args.len()).find_map(|operand| split(g, id, operand)))
}

/// One window axis of the gather a contraction reads: source axis `source` at
/// `start + i + dilation·k`, `i` the result's axis `position` (label `l`, an output's), `k` its
/// axis `tap` (label `k`, contracted).
#[derive(Debug, Clone, Copy)]
struct Window {
    source: usize,
    position: usize,
    tap: usize,
    start: usize,
    dilation: i64,
    l: u8,
    k: u8,
}

/// Where the source is not zero along a window's axis: `offset + stride·m` for `m < count`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Support {
    offset: usize,
    stride: usize,
    count: usize,
}

/// One phase `r` of a window axis: the taps that land on a non-zero element, `k0 + every·t` for
/// `t < taps`, reading element `q + first + dilation·t` of the non-zero ones at the phase's
/// `q`-th position.
#[derive(Debug, Clone, Copy)]
struct Phase {
    k0: usize,
    every: usize,
    taps: usize,
    first: i64,
    dilation: i64,
}

/// A window axis split: its support, its phases (`None`: no tap lands on a non-zero element),
/// the positions of each phase, and the zeros padded before and after the non-zero elements.
struct Split {
    window: Window,
    support: Support,
    phases: Vec<Option<Phase>>,
    positions: usize,
    pad: (usize, usize),
}

impl Split {
    fn new(window: Window, support: Support, positions: usize, taps: usize) -> Option<Split> {
        let s = support.stride as i64;
        let phase_positions = positions.div_ceil(support.stride);
        let mut phases = Vec::new();
        for r in 0..s {
            let lands = |t: usize| window.start as i64 + r + window.dilation * t as i64 - support.offset as i64;
            let hits: Vec<usize> = (0..taps).filter(|&t| lands(t).rem_euclid(s) == 0).collect();
            let Some(&k0) = hits.first() else {
                phases.push(None);
                continue;
            };
            let every = if hits.len() > 1 { hits[1] - k0 } else { 1 };
            if hits.windows(2).any(|w| w[1] - w[0] != every) {
                return None;
            }
            let dilation = if hits.len() > 1 { window.dilation * every as i64 / s } else { 1 };
            phases.push(Some(Phase { k0, every, taps: hits.len(), first: lands(k0) / s, dilation }));
        }
        // A phase reads `q + first + dilation·t`; what it reads outside the non-zero elements
        // is zero, padded for.
        let reach = |p: &Phase| {
            let span = p.dilation * (p.taps as i64 - 1);
            (p.first + span.min(0), p.first + phase_positions as i64 - 1 + span.max(0))
        };
        let low = phases.iter().flatten().map(|p| reach(p).0).min()?;
        let high = phases.iter().flatten().map(|p| reach(p).1).max()?;
        let pad = ((-low).max(0) as usize, (high - (support.count as i64 - 1)).max(0) as usize);
        Some(Split { window, support, phases, positions, pad })
    }

    fn phase_positions(&self) -> usize {
        self.positions.div_ceil(self.support.stride)
    }
}

/// Splits contraction `id` over the windows its operand `operand` reads, along every axis where
/// their source is zero between every few elements.
fn split(g: &Graph, id: NodeId, operand: usize) -> Option<Graph> {
    let e = g.node(id);
    let Op::Einsum(spec) = &e.op else { return None };
    let (source, shape, from) = window(g, e.args[operand])?;
    if g.ty(source).num_elements() > MAX_ELEMENTS || g.ty(source).dtype.is_int() {
        return None;
    }
    // Each window's position and taps are one label each, on no other operand's axis and on no
    // other axis of this one; the position is the output's, the taps contracted; no other
    // source axis follows them.
    let labels = &spec.inputs[operand];
    let count = |ls: &[u8], x: u8| ls.iter().filter(|&&y| y == x).count();
    let others = || spec.inputs.iter().enumerate().filter(|&(j, _)| j != operand);
    let follows = |j: usize, x: usize| {
        from.iter().enumerate().any(|(i, a)| {
            i != j
                && match *a {
                    GatherAxis::Along { axis, step, .. } => step != 0 && axis == x,
                    GatherAxis::Window { axis, window, .. } => axis == x || window == x,
                    GatherAxis::Index => false,
                }
        })
    };
    let windows: Vec<Window> = from
        .iter()
        .enumerate()
        .filter_map(|(source, a)| {
            let GatherAxis::Window { axis: position, start, step: 1, window: tap, dilation } = *a else { return None };
            let (l, k) = (labels[position], labels[tap]);
            let alone = count(labels, l) == 1 && count(labels, k) == 1 && count(&spec.output, l) == 1 && count(&spec.output, k) == 0;
            let apart = others().all(|(_, ls)| count(ls, l) == 0 && count(ls, k) <= 1) && !follows(source, position) && !follows(source, tap);
            (alone && apart).then_some(Window { source, position, tap, start, dilation, l, k })
        })
        .collect();
    if windows.is_empty() {
        return None;
    }
    let axes: Vec<usize> = windows.iter().map(|w| w.source).collect();
    let (supports, equal) = probe(g, source, &axes, id)?;
    // Every axis with a support is split (the non-zero elements are sliced along each).
    let splits: Vec<Split> = windows
        .iter()
        .zip(&supports)
        .filter_map(|(&w, s)| s.map(|s| Split::new(w, s, shape[w.position], shape[w.tap])))
        .collect::<Option<_>>()?;

    let mut out = Graph::new(g.name.clone(), g.params.clone());
    let mut map: Vec<NodeId> = Vec::with_capacity(g.nodes.len());
    for old in g.ids() {
        let node = g.node(old);
        let args: Vec<NodeId> = node.args.iter().map(|a| map[a.index()]).collect();
        if old != id {
            map.push(out.push(node.op.clone(), args).ok()?);
            continue;
        }
        let dtype = g.ty(source).dtype;
        let zeros = |out: &mut Graph, shape: Vec<usize>| -> Option<NodeId> {
            let zero = out.push(Op::Constant { value: 0.0, dtype }, Vec::new()).ok()?;
            out.push(Op::Broadcast { shape }, vec![zero]).ok()
        };
        // The non-zero elements, padded.
        let mut dense = match equal {
            Some(n) => map[n.index()],
            None => {
                let mut axes: Vec<SliceAxis> = g.ty(source).shape.iter().map(|&n| SliceAxis::full(n)).collect();
                for s in &splits {
                    axes[s.window.source] = SliceAxis { start: s.support.offset, step: s.support.stride as i64, len: s.support.count };
                }
                out.push(Op::Slice { axes }, vec![map[source.index()]]).ok()?
            }
        };
        for s in &splits {
            let axis = s.window.source;
            let mut parts = Vec::new();
            for (n, part) in [(s.pad.0, None), (0, Some(dense)), (s.pad.1, None)] {
                let mut shape = out.ty(dense).shape.clone();
                shape[axis] = n;
                match part {
                    Some(p) => parts.push(p),
                    None if n > 0 => parts.push(zeros(&mut out, shape)?),
                    None => {}
                }
            }
            if parts.len() > 1 {
                dense = out.push(Op::Concat { axis }, parts).ok()?;
            }
        }
        // Every phase, the first split's slowest.
        let mut results = Vec::new();
        let combos: usize = splits.iter().map(|s| s.phases.len()).product();
        for c in 0..combos {
            let mut rest = c;
            let mut chosen = vec![None; splits.len()];
            for (j, s) in splits.iter().enumerate().rev() {
                chosen[j] = s.phases[rest % s.phases.len()];
                rest /= s.phases.len();
            }
            let mut result_shape = e.ty.shape.clone();
            for s in &splits {
                result_shape[spec.output.iter().position(|&x| x == s.window.l)?] = s.phase_positions();
            }
            if chosen.iter().any(Option::is_none) {
                results.push(zeros(&mut out, result_shape)?);
                continue;
            }
            let (mut taps_from, mut taps_shape) = (from.clone(), shape.clone());
            let mut operands = args.clone();
            for (s, p) in splits.iter().zip(chosen.iter().flatten()) {
                let w = s.window;
                taps_from[w.source] = GatherAxis::Window { axis: w.position, start: (s.pad.0 as i64 + p.first) as usize, step: 1, window: w.tap, dilation: p.dilation };
                taps_shape[w.position] = s.phase_positions();
                taps_shape[w.tap] = p.taps;
                for (j, ls) in others() {
                    if let Some(at) = ls.iter().position(|&x| x == w.k) {
                        let mut axes: Vec<SliceAxis> = out.ty(operands[j]).shape.iter().map(|&n| SliceAxis::full(n)).collect();
                        axes[at] = SliceAxis { start: p.k0, step: p.every as i64, len: p.taps };
                        operands[j] = out.push(Op::Slice { axes }, vec![operands[j]]).ok()?;
                    }
                }
            }
            operands[operand] = out.push(Op::Gather { shape: taps_shape, from: taps_from }, vec![dense]).ok()?;
            results.push(out.push(Op::Einsum(spec.clone()), operands).ok()?);
        }
        let positions: Vec<usize> = splits.iter().map(|s| spec.output.iter().position(|&x| x == s.window.l)).collect::<Option<_>>()?;
        map.push(interleave(&mut out, &results, &splits, &positions)?);
    }
    out.outputs = g.outputs.iter().map(|o| map[o.index()]).collect();
    out.prune();
    Some(out)
}

/// The phases' results (row-major over `splits`, the first slowest) interleaved along each
/// split's output axis (`positions`): element `S·q + r` of an axis is phase `r`'s `q`-th.
fn interleave(out: &mut Graph, results: &[NodeId], splits: &[Split], positions: &[usize]) -> Option<NodeId> {
    let Some((s, rest)) = splits.split_first() else { return results.first().copied() };
    let at = positions[0];
    let group = results.len() / s.phases.len();
    let mut units = Vec::new();
    for phase in results.chunks(group) {
        let joined = interleave(out, phase, rest, &positions[1..])?;
        let mut unit = out.ty(joined).shape.clone();
        unit.insert(at + 1, 1);
        units.push(out.push(Op::Reshape { shape: unit }, vec![joined]).ok()?);
    }
    let joined = out.push(Op::Concat { axis: at + 1 }, units).ok()?;
    let mut shape = out.ty(joined).shape.clone();
    let length = shape.remove(at + 1) * shape[at];
    shape[at] = length;
    let mut joined = out.push(Op::Reshape { shape: shape.clone() }, vec![joined]).ok()?;
    if length != s.positions {
        let mut axes: Vec<SliceAxis> = shape.iter().map(|&n| SliceAxis::full(n)).collect();
        axes[at] = SliceAxis::full(s.positions);
        joined = out.push(Op::Slice { axes }, vec![joined]).ok()?;
    }
    Some(joined)
}

/// The source, shape and axes of the gather `id` (without index operands), or of the one a
/// slice `id` reads, composed with the slice (`v[:, :, :, ::D]` dilates a window).
fn window(g: &Graph, id: NodeId) -> Option<(NodeId, Vec<usize>, Vec<GatherAxis>)> {
    let (gather, slice) = match &g.node(id).op {
        Op::Gather { .. } => (id, None),
        Op::Slice { axes } => (g.node(id).args[0], Some(axes)),
        _ => return None,
    };
    let node = g.node(gather);
    let Op::Gather { shape, from } = &node.op else { return None };
    if node.args.len() != 1 {
        return None;
    }
    let (mut shape, mut from) = (shape.clone(), from.clone());
    for (j, s) in slice.into_iter().flatten().enumerate() {
        let (first, every) = (s.start as i64, s.step);
        for a in &mut from {
            match a {
                GatherAxis::Along { axis, start, step } if *axis == j && *step != 0 => {
                    (*start, *step) = ((*start as i64 + *step * first) as usize, *step * every);
                }
                GatherAxis::Window { axis, start, step, window, dilation } => {
                    if *axis == j {
                        (*start, *step) = ((*start as i64 + *step * first) as usize, *step * every);
                    }
                    if *window == j {
                        (*start, *dilation) = ((*start as i64 + *dilation * first) as usize, *dilation * every);
                    }
                }
                _ => {}
            }
        }
        shape[j] = s.len;
    }
    Some((node.args[0], shape, from))
}

/// Along each of `axes`, where `source` is not zero, when that is every S-th element (S ≥ 2)
/// on both probe sets; and a node before `before` equal to the elements at those places (along
/// every such axis at once), if any.
fn probe(g: &Graph, source: NodeId, axes: &[usize], before: NodeId) -> Option<(Vec<Option<Support>>, Option<NodeId>)> {
    let sub = |outputs: Vec<NodeId>| {
        let mut sub = Graph { name: g.name.clone(), params: g.params.clone(), nodes: g.nodes[..before.index()].to_vec(), outputs };
        sub.prune();
        sub
    };
    let mut supports: Option<Vec<Option<Support>>> = None;
    let mut matching: Option<Vec<NodeId>> = None;
    for set in 0..2 {
        let inputs = inputs(g, set);
        let value = evaluate(&sub(vec![source]), &inputs).ok()?.pop()?;
        let found: Vec<Option<Support>> = axes.iter().map(|&a| periodic(&value, a)).collect();
        if supports.as_ref().is_some_and(|s| *s != found) || found.iter().all(Option::is_none) {
            return None;
        }
        let mut nonzero = value.view();
        for (&a, s) in axes.iter().zip(&found) {
            if let Some(s) = s {
                nonzero.slice_axis_inplace(Axis(a), ndarray::Slice::new(s.offset as isize, Some((s.offset + s.stride * (s.count - 1) + 1) as isize), s.stride as isize));
            }
        }
        let same: Vec<NodeId> = matching.take().unwrap_or_else(|| {
            let ty = TensorType::new(g.ty(source).dtype, nonzero.shape().to_vec());
            g.ids().filter(|&n| n < before && n != source && *g.ty(n) == ty).take(MAX_CANDIDATES).collect()
        });
        let values = if same.is_empty() { Vec::new() } else { evaluate(&sub(same.clone()), &inputs).ok()? };
        matching = Some(same.into_iter().zip(values).filter(|(_, v)| *v == nonzero).map(|(n, _)| n).collect());
        supports = Some(found);
    }
    Some((supports?, matching.and_then(|m| m.first().copied())))
}

/// The non-zero positions of `value` along `axis` as a [`Support`], when they are evenly spaced
/// at least two apart.
fn periodic(value: &Tensor, axis: usize) -> Option<Support> {
    let nonzero: Vec<usize> = value.axis_iter(Axis(axis)).enumerate().filter(|(_, s)| s.iter().any(|&v| v != 0.0)).map(|(i, _)| i).collect();
    let (&first, &second) = (nonzero.first()?, nonzero.get(1)?);
    let stride = second - first;
    (stride >= 2 && nonzero.windows(2).all(|w| w[1] - w[0] == stride)).then_some(Support { offset: first, stride, count: nonzero.len() })
}

/// Probe inputs: set 0 all in [1, 2), set 1 of both signs and magnitudes in [0.5, 2); integer
/// parameters 0, an index valid on any axis.
fn inputs(g: &Graph, set: u64) -> Vec<Tensor> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ set;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    g.params
        .iter()
        .map(|p| {
            Tensor::from_shape_simple_fn(p.ty.shape.clone(), || match (p.ty.dtype.is_int(), set) {
                (true, _) => 0.0,
                (false, 0) => 1.0 + next(),
                (false, _) => {
                    let u = next();
                    if u < 0.5 { -(0.5 + 3.0 * u) } else { 0.5 + 3.0 * (u - 0.5) }
                }
            })
        })
        .collect()
}
