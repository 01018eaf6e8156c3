//! Lowering a tensor graph to a loop nest: one nest per materialized node, elementwise work and
//! views fused into their consumers as index arithmetic.

use ollie_graph::{DType, GatherAxis, Graph, NodeId, Op, ReduceOp};

use crate::ir::{Affine, Buffer, BufferId, BufferKind, Dynamic, Expr, Keep, LoopKind, LoopNest, Stmt, VarId};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LowerError {
    #[error("the graph is not well formed: {0}")]
    InvalidGraph(#[from] ollie_graph::GraphError),
}

/// Lowers `graph` to its naive loop nest: the baseline kernel every speedup is measured against.
///
/// A node gets a buffer (is materialized) when it is an input or an output, a reduction, an
/// einsum or a concatenation, when a non-view node has several users (computed once, not per
/// use) or is an operand of an einsum whose output has axes it lacks (computed once, not per
/// element of those axes), or when a reshape regroups its axes (reshapes address a contiguous buffer). Everything
/// else is inlined into its users: elementwise ops as expressions, broadcasts, transposes,
/// slices and unit reshapes as index arithmetic.
pub fn lower(graph: &Graph) -> Result<LoopNest, LowerError> {
    ollie_graph::check(graph)?;
    let mut l = Lowering {
        graph,
        nest: LoopNest { name: graph.name.clone(), buffers: Vec::new(), body: Vec::new() },
        buffer_of: vec![None; graph.nodes.len()],
        next_var: 0,
    };
    let materialize = materialized(graph);
    for (i, p) in graph.params.iter().enumerate() {
        let b = l.add_buffer(p.name.clone(), BufferKind::Input(i), p.ty.dtype, p.ty.shape.clone());
        for id in graph.ids() {
            if graph.node(id).op == (Op::Input { index: i }) {
                l.buffer_of[id.index()] = Some(b);
            }
        }
    }
    // Each output gets its buffer; a node computed into it needs no copy.
    let mut copies = Vec::new();
    for (k, &o) in graph.outputs.iter().enumerate() {
        let ty = graph.ty(o);
        let b = l.add_buffer(graph.output_name(k), BufferKind::Output(k), ty.dtype, ty.shape.clone());
        // A 16-bit output is not accumulated in: its sums run in a float32 temporary, rounded
        // once when copied out.
        let accumulates = matches!(graph.node(o).op, Op::Reduce { .. } | Op::Einsum(_) | Op::SumExp { .. } | Op::SumSqDev { .. });
        let computed_here = l.buffer_of[o.index()].is_none() && materialize[o.index()] && !(ty.dtype.is_half() && accumulates);
        if computed_here {
            l.buffer_of[o.index()] = Some(b);
        } else {
            copies.push((o, b));
        }
    }
    // A one-pass reduction and the plain one of the same operand over the same axes that it
    // computes anyway (a `sum_exp`'s maximum, a `sum_sq_dev`'s sum) are one nest, defined where
    // the first of the two comes.
    let partner = partners(graph);
    let mut defined = vec![false; graph.nodes.len()];
    for id in graph.ids() {
        let node = graph.node(id);
        if matches!(node.op, Op::Input { .. }) || !materialize[id.index()] || defined[id.index()] {
            continue;
        }
        let buffer = l.buffer(id);
        let (one_pass, shared) = match (&node.op, partner[id.index()]) {
            (Op::SumExp { .. } | Op::SumSqDev { .. }, p) => (id, p),
            (_, Some(p)) => (p, Some(id)),
            (_, None) => {
                l.define(id, buffer);
                continue;
            }
        };
        let (b, s) = (l.buffer(one_pass), shared.map(|s| l.buffer(s)));
        match graph.node(one_pass).op {
            Op::SumExp { .. } => l.define_sum_exp(one_pass, b, s),
            _ => l.define_sum_sq_dev(one_pass, b, s),
        }
        for n in std::iter::once(one_pass).chain(shared) {
            defined[n.index()] = true;
        }
    }
    for (node, buffer) in copies {
        l.copy(node, buffer);
    }
    Ok(l.nest)
}

/// For each one-pass reduction the plain reduction it computes alongside (a `sum_exp`'s `max`, a
/// `sum_sq_dev`'s `sum`, of the same operand over the same axes), and for that the one-pass
/// reduction: pairs, at most one per node.
/// The sorted positions of sort node `id` (along `axis`, of extent `n`) that a selection must
/// store: the first or last `k` (at most [`MAX_KEPT`], and a quarter of the lane) where only
/// slices (and integer casts) read it; else all.
fn kept(graph: &Graph, id: NodeId, axis: usize, n: usize) -> Keep {
    let small = |k: usize| k <= MAX_KEPT && k <= n / 4;
    match read_span(graph, id, axis, n) {
        Some((_, hi)) if small(hi + 1) => Keep::First(hi + 1),
        Some((lo, _)) if small(n - lo) => Keep::Last(n - lo),
        _ => Keep::All,
    }
}

/// The largest selection: an item that joins it moves up to this many (a selection of k costs
/// about n compares on most inputs, n·k moves at worst, against a sort's n log n).
const MAX_KEPT: usize = 64;

/// The lowest and highest positions along `axis` of node `id` (of extent `n` there) that an
/// output or a later node reads, seen through slices and casts; `None` where nothing does.
fn read_span(graph: &Graph, id: NodeId, axis: usize, n: usize) -> Option<(usize, usize)> {
    let mut span: Option<(usize, usize)> = graph.outputs.contains(&id).then_some((0, n - 1));
    let mut join = |s: Option<(usize, usize)>| {
        if let Some((lo, hi)) = s {
            span = Some(span.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        }
    };
    for user in graph.ids().filter(|&u| graph.node(u).args.contains(&id)) {
        match &graph.node(user).op {
            Op::Slice { axes } => {
                let s = axes[axis];
                join(read_span(graph, user, axis, s.len).map(|(lo, hi)| {
                    let (a, b) = (s.start as i64 + s.step * lo as i64, s.start as i64 + s.step * hi as i64);
                    (a.min(b) as usize, a.max(b) as usize)
                }));
            }
            Op::Cast { .. } => join(read_span(graph, user, axis, n)),
            _ => join(Some((0, n - 1))),
        }
    }
    span
}

fn partners(graph: &Graph) -> Vec<Option<NodeId>> {
    let mut partner = vec![None; graph.nodes.len()];
    for id in graph.ids() {
        let node = graph.node(id);
        let shared = match &node.op {
            Op::SumExp { axes } => Op::Reduce { op: ReduceOp::Max, axes: axes.clone() },
            Op::SumSqDev { axes } => Op::Reduce { op: ReduceOp::Sum, axes: axes.clone() },
            _ => continue,
        };
        let found = graph.ids().find(|&m| partner[m.index()].is_none() && graph.node(m).args == node.args && graph.node(m).op == shared && graph.node(m).ty.dtype == node.ty.dtype);
        if let Some(m) = found {
            partner[id.index()] = Some(m);
            partner[m.index()] = Some(id);
        }
    }
    partner
}

/// The length of the chunks a one-pass variance reduces its last axis in: the largest divisor
/// of `n` up to 2048 (8 KiB of floats: a chunk's sum and then its squared deviations read it
/// from the first-level cache).
fn chunk_of(n: usize) -> usize {
    (1..=n.min(2048)).rev().find(|c| n.is_multiple_of(*c)).unwrap_or(1)
}

/// The running state of a `sum_exp` has this many lanes at most: a vector of floats as wide as
/// x86 has (AVX-512; where vectors are narrower, vectorizing a loop over the lanes makes two).
const SUM_EXP_LANES: usize = 16;

/// A `sum_exp` rescales its state once per this many elements at most.
const SUM_EXP_CHUNK: usize = 256;

/// The lanes of a `sum_exp`'s state over an axis of `n` (the largest power of two up to
/// [`SUM_EXP_LANES`] dividing it) and its chunk: the most elements up to [`SUM_EXP_CHUNK`] that
/// are a whole number of rows of lanes dividing `n`.
fn sum_exp_lanes(n: usize) -> (usize, usize) {
    let lanes = (0..=SUM_EXP_LANES.trailing_zeros()).rev().map(|p| 1usize << p).find(|&l| n.is_multiple_of(l)).unwrap_or(1);
    let rows = (1..=SUM_EXP_CHUNK / lanes).rev().find(|&k| (n / lanes).is_multiple_of(k)).unwrap_or(1);
    (lanes, rows * lanes)
}

use ollie_graph::BinaryOp as B;

fn bin(op: B, a: Expr, b: Expr) -> Expr {
    Expr::Binary(op, Box::new(a), Box::new(b))
}

fn load(buffer: BufferId, offset: &Affine) -> Expr {
    Expr::Load { buffer, offset: offset.clone() }
}

fn store(buffer: BufferId, offset: &Affine, value: Expr) -> Stmt {
    Stmt::Store { buffer, offset: offset.clone(), value }
}

/// Which nodes get a buffer (see [`lower`]).
fn materialized(graph: &Graph) -> Vec<bool> {
    let uses = graph.use_counts();
    let mut m = vec![false; graph.nodes.len()];
    for id in graph.ids() {
        let node = graph.node(id);
        m[id.index()] = match &node.op {
            Op::Input { .. }
            | Op::Reduce { .. }
            | Op::Scan { .. }
            | Op::SumExp { .. }
            | Op::SumSqDev { .. }
            | Op::Einsum(_)
            | Op::Concat { .. }
            | Op::ArgReduce { .. }
            | Op::Sort { .. }
            | Op::ArgSort { .. } => true,
            // Widening what is in a buffer anyway (a bfloat16 input's `.astype(np.float32)`) is
            // a conversion where it is loaded, for every use: no buffer of its own.
            Op::Cast { dtype } if dtype.is_float() && !dtype.is_half() && m[node.args[0].index()] => false,
            Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Select | Op::Cast { .. } => uses[id.index()] > 1,
            Op::Gather { from, .. } => from.contains(&GatherAxis::Index) && uses[id.index()] > 1,
            Op::Constant { .. } | Op::Iota { .. } | Op::Broadcast { .. } | Op::Transpose { .. } | Op::Slice { .. } | Op::Reshape { .. } => false,
        };
        // An elementwise operand of a contraction would be computed again for every element
        // of the output axes it lacks (a softmax's normalization once per column of `p @ v`):
        // it is computed once.
        if let Op::Einsum(spec) = &node.op {
            for (&arg, labels) in node.args.iter().zip(&spec.inputs) {
                if spec.output.iter().all(|l| labels.contains(l)) {
                    continue;
                }
                let mut a = arg;
                while matches!(graph.node(a).op, Op::Broadcast { .. } | Op::Transpose { .. } | Op::Slice { .. } | Op::Reshape { .. }) {
                    a = graph.node(a).args[0];
                }
                if matches!(graph.node(a).op, Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Select | Op::Cast { .. }) {
                    m[a.index()] = true;
                }
            }
        }
        // A reshape that merges axes needs its operand in memory, row-major; one that only
        // splits axes (or adds and removes axes of size 1) is a view of anything.
        if let Op::Reshape { shape } = &node.op {
            let operand = node.args[0];
            if split_groups(&graph.ty(operand).shape, shape).is_none() {
                m[operand.index()] = true;
            }
        }
    }
    for &o in &graph.outputs {
        m[o.index()] = true;
    }
    m
}

/// For a reshape from `from` to `to` that only splits axes (and adds or removes axes of size
/// 1): the axes of `to` each axis of `from` becomes, in order.
fn split_groups(from: &[usize], to: &[usize]) -> Option<Vec<Vec<usize>>> {
    let mut k = 0;
    let mut groups = Vec::with_capacity(from.len());
    for &n in from {
        let (mut group, mut product) = (Vec::new(), 1);
        while product < n {
            let e = *to.get(k)?;
            if e == 0 {
                return None;
            }
            product *= e;
            group.push(k);
            k += 1;
        }
        if product != n {
            return None;
        }
        groups.push(group);
    }
    to[k..].iter().all(|&e| e == 1).then_some(groups)
}

/// Row-major strides of `shape`.
pub fn strides(shape: &[usize]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1] as i64;
    }
    s
}

/// The flat offset of a multi-index into a row-major array of `shape`.
fn flat(shape: &[usize], index: &[Affine]) -> Affine {
    strides(shape).iter().zip(index).fold(Affine::constant(0), |acc, (&s, i)| acc.add_scaled(i, s))
}

/// The last reduced axis of a one-pass reduction, in chunks (see [`Lowering::one_pass`]).
struct Chunks<'a> {
    /// `element(l, c, j)` reads the operand at chunk `c`'s `j`-th element.
    element: &'a dyn Fn(&Lowering, &Affine, &Affine) -> Expr,
    /// How many chunks, of how many elements.
    count: usize,
    size: usize,
    /// The chunks of earlier indices of the other reduced axes, counted.
    first: Affine,
}

struct Lowering<'g> {
    graph: &'g Graph,
    nest: LoopNest,
    buffer_of: Vec<Option<BufferId>>,
    next_var: u32,
}

impl Lowering<'_> {
    /// A buffer; a temporary of a 16-bit float is float32 (kernels compute 16-bit floats in
    /// float32 and round only where an output stores one).
    fn add_buffer(&mut self, name: String, kind: BufferKind, dtype: DType, shape: Vec<usize>) -> BufferId {
        let dtype = if kind == BufferKind::Temp && dtype.is_half() { DType::F32 } else { dtype };
        self.nest.buffers.push(Buffer { name, kind, dtype, shape, scope: None, registers: None });
        BufferId(self.nest.buffers.len() as u32 - 1)
    }

    /// Node `id`'s buffer, made now if it has none yet.
    fn buffer(&mut self, id: NodeId) -> BufferId {
        if let Some(b) = self.buffer_of[id.index()] {
            return b;
        }
        let ty = self.graph.ty(id).clone();
        let b = self.add_buffer(format!("t{}", id.0), BufferKind::Temp, ty.dtype, ty.shape);
        self.buffer_of[id.index()] = Some(b);
        b
    }

    /// The nest of a one-pass reduction of node `id` (a `sum_exp` or `sum_sq_dev`): per result
    /// element `o`, `init(l, o)`; then, for each index of the other reduced axes, `chunks(l, o,
    /// c)` — `c` the last reduced axis in chunks of `size` elements, which it loops over itself —
    /// and last `finish(l, o)`.
    fn one_pass(
        &mut self,
        id: NodeId,
        size: impl Fn(usize) -> usize,
        init: impl Fn(&mut Lowering, &Affine) -> Vec<Stmt>,
        chunks: impl Fn(&mut Lowering, &Affine, &Chunks) -> Vec<Stmt>,
        finish: impl Fn(&mut Lowering, &Affine) -> Vec<Stmt>,
    ) {
        let node = self.graph.node(id).clone();
        let axes = match &node.op {
            Op::SumExp { axes } | Op::SumSqDev { axes } => axes.clone(),
            _ => unreachable!("a one-pass reduction"),
        };
        let operand = node.args[0];
        let shape = node.ty.shape.clone();
        let in_shape = self.graph.ty(operand).shape.clone();
        let last = *axes.last().expect("a reduced axis");
        let size = size(in_shape[last]);
        let count = in_shape[last] / size;
        let others: Vec<usize> = axes[..axes.len() - 1].iter().map(|&a| in_shape[a]).collect();
        let body = self.nest_over(&shape, |l, out_index| {
            let o = flat(&shape, out_index);
            let mut stmts = init(l, &o);
            stmts.extend(l.nest_over(&others, |l, other_index| {
                let element = |l: &Lowering, c: &Affine, j: &Affine| -> Expr {
                    let (mut outer, mut red) = (out_index.iter(), other_index.iter());
                    let full: Vec<Affine> = (0..in_shape.len())
                        .map(|d| {
                            if d == last {
                                c.scale(size as i64).add_scaled(j, 1)
                            } else if axes.contains(&d) {
                                red.next().unwrap().clone()
                            } else {
                                outer.next().unwrap().clone()
                            }
                        })
                        .collect();
                    l.access(operand, &full)
                };
                let first = flat(&others, other_index).scale(count as i64);
                chunks(l, &o, &Chunks { element: &element, count, size, first })
            }));
            stmts.extend(finish(l, &o));
            stmts
        });
        self.nest.body.extend(body);
    }

    /// A scalar temporary per result element of node `id`, named `{prefix}{id}`.
    fn per_result(&mut self, id: NodeId, prefix: &str) -> BufferId {
        let ty = self.graph.ty(id).clone();
        self.add_buffer(format!("{prefix}{}", id.0), BufferKind::Temp, ty.dtype, ty.shape)
    }

    /// Fills `buffer` with `sum_exp` node `id` — and `max`, when given, with the maximum it
    /// reduced alongside — in one pass over the operand, the online normalizer kept per lane:
    /// each lane `l` of the state (as many as [`sum_exp_lanes`] gives, one vector) holds the
    /// running maximum `m_l` of its elements and `s_l = Σ exp(x − m_l)` over them. Per chunk,
    /// `s_l ← s_l·e^(m_l − m′_l)` with `m′_l = max(m_l, c_l)`, `c_l` the chunk's maximum in the
    /// lane, then the chunk's terms `exp(x − m′_l)` added — every loop over the lanes a vector
    /// operation, no reduction across lanes before the end: `M = max_l m_l`,
    /// `S = Σ_l s_l·e^(m_l − M)`.
    ///
    /// Software-pipelined: the loop adding a chunk's terms also takes the maximum of the next
    /// chunk (the first chunk's is taken before), so the loads of the next chunk and their
    /// maximum overlap this chunk's exponentials instead of waiting for them — reading a chunk
    /// for its maximum and then for its terms in two loops, each of a few vectors, serialized
    /// the two and ran at half the memory's speed.
    ///
    /// Each `m` is first raised to the lowest finite value the kernel computes in (`lo`): a lane whose
    /// elements so far are all `−∞` then gives `e^(lo − lo) = 1` for its rescale and
    /// `exp(−∞ − lo) = 0` for its terms (never `−∞ − (−∞)`), while a finite or `+∞` maximum,
    /// or NaN, is unchanged — `+∞ − (+∞)` makes NaN where numpy's terms are NaN. A rescale by
    /// `e^0` is exactly 1; others err by a few roundings each, of random sign like the sum's.
    /// `S·(M − M + 1)` makes it NaN where numpy's is (a maximum of ±∞, or NaN).
    fn define_sum_exp(&mut self, id: NodeId, buffer: BufferId, max: Option<BufferId>) {
        use ollie_graph::UnaryOp;
        let big_m = max.unwrap_or_else(|| self.per_result(id, "m"));
        let ty = self.graph.ty(id).clone();
        let operand = self.graph.node(id).args[0];
        let n = match &self.graph.node(id).op {
            Op::SumExp { axes } => self.graph.ty(operand).shape[*axes.last().expect("a reduced axis")],
            _ => unreachable!("a sum_exp"),
        };
        let (lanes, _) = sum_exp_lanes(n);
        let mut lane_shape = ty.shape.clone();
        lane_shape.push(lanes);
        let mut state = |prefix: &str| self.add_buffer(format!("{prefix}{}", id.0), BufferKind::Temp, ty.dtype, lane_shape.clone());
        // The running state, this chunk's maximum and the next one's.
        let (m, s, cm, cn) = (state("lm"), state("ls"), state("cm"), state("cn"));
        // The lowest finite value of the type the kernel computes in (the emitter's: double when
        // any parameter or result is f64, all of whose buffers are made by now).
        let lowest = Expr::Const(if self.nest.computes_in_f64() { f64::MIN } else { f32::MIN as f64 });
        let lo = move |e: Expr| bin(B::Max, e, lowest.clone());
        let exp = |e: Expr| Expr::Unary(UnaryOp::Exp, Box::new(e));
        // Lane `j` of result `o`'s state.
        let at = move |o: &Affine, j: &Affine| o.scale(lanes as i64).add_scaled(j, 1);
        let minus_infinity = Expr::Const(f64::NEG_INFINITY);
        self.one_pass(
            id,
            |n| sum_exp_lanes(n).1,
            |l, o| l.nest_over(&[lanes], |_, j| vec![store(m, &at(o, &j[0]), minus_infinity.clone()), store(s, &at(o, &j[0]), Expr::Const(0.0))]),
            |l, o, chunks| {
                let rows = chunks.size / lanes;
                // Chunk `c`'s row `r`, lane `j`.
                let lane = |l: &Lowering, c: &Affine, rj: &[Affine]| (chunks.element)(l, c, &rj[0].scale(lanes as i64).add_scaled(&rj[1], 1));
                // `into` ← −∞, then the maximum of chunk `c` per lane, alongside `more` per lane.
                let maximum = |l: &mut Lowering, into: BufferId, c: &Affine, more: &dyn Fn(&Lowering, &Affine, &[Affine]) -> Vec<Stmt>| {
                    let mut stmts = l.nest_over(&[lanes], |_, j| vec![store(into, &at(o, &j[0]), minus_infinity.clone())]);
                    stmts.extend(l.nest_over(&[rows, lanes], |l, rj| {
                        let a = at(o, &rj[1]);
                        let mut body = more(l, &a, rj);
                        body.push(store(into, &a, bin(B::Max, load(into, &a), lane(l, c, rj))));
                        body
                    }));
                    stmts
                };
                // The state raised to chunk `cm`'s maximum.
                let rescale = |l: &mut Lowering| {
                    l.nest_over(&[lanes], |_, j| {
                        let a = at(o, &j[0]);
                        let raised = bin(B::Max, load(m, &a), load(cm, &a));
                        vec![store(s, &a, bin(B::Mul, load(s, &a), exp(bin(B::Sub, lo(load(m, &a)), lo(raised.clone()))))), store(m, &a, raised)]
                    })
                };
                // Chunk `c`'s terms, added at row `rj` of its lanes.
                let term = |l: &Lowering, c: &Affine, a: &Affine, rj: &[Affine]| store(s, a, bin(B::Add, load(s, a), exp(bin(B::Sub, lane(l, c, rj), lo(load(m, a))))));
                let first = Affine::constant(0);
                let mut stmts = maximum(l, cm, &first, &|_, _, _| Vec::new());
                if chunks.count > 1 {
                    stmts.extend(l.nest_over(&[chunks.count - 1], |l, c| {
                        let next = c[0].add_scaled(&Affine::constant(1), 1);
                        let mut stmts = rescale(l);
                        stmts.extend(maximum(l, cn, &next, &|l, a, rj| vec![term(l, &c[0], a, rj)]));
                        stmts.extend(l.nest_over(&[lanes], |_, j| vec![store(cm, &at(o, &j[0]), load(cn, &at(o, &j[0])))]));
                        stmts
                    }));
                }
                let last = Affine::constant(chunks.count as i64 - 1);
                stmts.extend(rescale(l));
                stmts.extend(l.nest_over(&[rows, lanes], |l, rj| vec![term(l, &last, &at(o, &rj[1]), rj)]));
                stmts
            },
            |l, o| {
                let mut stmts = vec![store(big_m, o, minus_infinity.clone())];
                stmts.extend(l.nest_over(&[lanes], |_, j| vec![store(big_m, o, bin(B::Max, load(big_m, o), load(m, &at(o, &j[0]))))]));
                // Each lane rescaled to `M` (a loop over the lanes, a vector operation), then summed.
                stmts.extend(l.nest_over(&[lanes], |_, j| {
                    let a = at(o, &j[0]);
                    vec![store(s, &a, bin(B::Mul, load(s, &a), exp(bin(B::Sub, lo(load(m, &a)), lo(load(big_m, o))))))]
                }));
                stmts.push(store(buffer, o, Expr::Const(0.0)));
                stmts.extend(l.nest_over(&[lanes], |_, j| vec![store(buffer, o, bin(B::Add, load(buffer, o), load(s, &at(o, &j[0]))))]));
                stmts.push(store(buffer, o, bin(B::Mul, load(buffer, o), bin(B::Add, bin(B::Sub, load(big_m, o), load(big_m, o)), Expr::Const(1.0)))));
                stmts
            },
        );
    }

    /// Fills `buffer` with `sum_sq_dev` node `id` — and `sum`, when given, with the operand's sum
    /// over the same axes — in one pass: each chunk's sum and then its `Σ (x − chunk mean)²`
    /// (plain reductions), merged as Chan, Golub and LeVeque merge partial moments:
    /// `M ← M + M_c + δ²·n·c/(n + c)` with `δ` the difference of the chunk's mean and the mean
    /// so far, `n` the elements so far and `c` the chunk's. Every merged term is nonnegative, so
    /// nothing cancels: unlike `Σx² − (Σx)²/n`, the result is accurate to a few roundings per
    /// merge whatever the mean. Infinities and NaN make NaN, as numpy's deviations do.
    fn define_sum_sq_dev(&mut self, id: NodeId, buffer: BufferId, sum: Option<BufferId>) {
        let total = sum.unwrap_or_else(|| self.per_result(id, "m"));
        let (cs, cq) = (self.per_result(id, "cs"), self.per_result(id, "cq"));
        self.one_pass(
            id,
            chunk_of,
            |_, o| vec![store(total, o, Expr::Const(0.0)), store(buffer, o, Expr::Const(0.0))],
            |l, o, chunks| l.nest_over(&[chunks.count], |l, k| {
                let (k, size) = (&k[0], chunks.size);
                let c = size as f64;
                let mut stmts = vec![store(cs, o, Expr::Const(0.0))];
                stmts.extend(l.nest_over(&[size], |l, j| vec![store(cs, o, bin(B::Add, load(cs, o), (chunks.element)(l, k, &j[0])))]));
                stmts.push(store(cq, o, Expr::Const(0.0)));
                let chunk_mean = || bin(B::Div, load(cs, o), Expr::Const(c));
                stmts.extend(l.nest_over(&[size], |l, j| {
                    let d = bin(B::Sub, (chunks.element)(l, k, &j[0]), chunk_mean());
                    vec![store(cq, o, bin(B::Add, load(cq, o), bin(B::Mul, d.clone(), d)))]
                }));
                // n, the elements before this chunk (0 for the first: its δ² is then weighed by 0).
                let before = chunks.first.add_scaled(k, 1).scale(size as i64);
                let n = || Expr::Index(before.clone());
                let mean_so_far = bin(B::Div, load(total, o), bin(B::Max, n(), Expr::Const(1.0)));
                let delta = bin(B::Sub, chunk_mean(), mean_so_far);
                let weight = bin(B::Div, bin(B::Mul, n(), Expr::Const(c)), bin(B::Add, n(), Expr::Const(c)));
                let merged = bin(B::Add, bin(B::Add, load(buffer, o), load(cq, o)), bin(B::Mul, bin(B::Mul, delta.clone(), delta), weight));
                stmts.push(store(buffer, o, merged));
                stmts.push(store(total, o, bin(B::Add, load(total, o), load(cs, o))));
                stmts
            }),
            |_, _| Vec::new(),
        );
    }

    fn fresh(&mut self) -> VarId {
        self.next_var += 1;
        VarId(self.next_var - 1)
    }

    /// Loops over `shape` around `inner(index)`.
    fn nest_over(&mut self, shape: &[usize], inner: impl FnOnce(&mut Self, &[Affine]) -> Vec<Stmt>) -> Vec<Stmt> {
        let vars: Vec<VarId> = shape.iter().map(|_| self.fresh()).collect();
        let index: Vec<Affine> = vars.iter().map(|&v| Affine::var(v)).collect();
        let mut body = inner(self, &index);
        for (&v, &n) in vars.iter().zip(shape).rev() {
            body = vec![Stmt::Loop { var: v, extent: n, kind: LoopKind::Serial, body }];
        }
        body
    }

    /// Emits the statements that fill `buffer` with node `id`.
    fn define(&mut self, id: NodeId, buffer: BufferId) {
        let node = self.graph.node(id).clone();
        let shape = node.ty.shape.clone();
        let stmts = match &node.op {
            Op::Reduce { op, axes } => {
                let operand = node.args[0];
                let in_shape = self.graph.ty(operand).shape.clone();
                let init = match op {
                    ReduceOp::Sum => 0.0,
                    ReduceOp::Max => f64::NEG_INFINITY,
                    ReduceOp::Min => f64::INFINITY,
                    ReduceOp::Prod => 1.0,
                };
                let combine = match op {
                    ReduceOp::Sum => ollie_graph::BinaryOp::Add,
                    ReduceOp::Max => ollie_graph::BinaryOp::Max,
                    ReduceOp::Min => ollie_graph::BinaryOp::Min,
                    ReduceOp::Prod => ollie_graph::BinaryOp::Mul,
                };
                let reduced: Vec<usize> = axes.iter().map(|&a| in_shape[a]).collect();
                let axes = axes.clone();
                self.nest_over(&shape, |l, out_index| {
                    let offset = flat(&shape, out_index);
                    let mut stmts = vec![Stmt::Store { buffer, offset: offset.clone(), value: Expr::Const(init) }];
                    stmts.extend(l.nest_over(&reduced, |l, red_index| {
                        let (mut o, mut r) = (out_index.iter(), red_index.iter());
                        let full: Vec<Affine> = (0..in_shape.len())
                            .map(|d| if axes.contains(&d) { r.next() } else { o.next() }.unwrap().clone())
                            .collect();
                        let acc = Expr::Load { buffer, offset: offset.clone() };
                        let value = Expr::Binary(combine, Box::new(acc), Box::new(l.access(operand, &full)));
                        vec![Stmt::Store { buffer, offset: offset.clone(), value }]
                    }));
                    stmts
                })
            }
            Op::Scan { op, axis, reverse, exclusive } => {
                // Each lane along `axis` in order, its running sum (product, extreme) in an
                // accumulator of its own (`s5`, one element per lane): each element is the sum
                // after adding the operand's (before, when exclusive).
                let (axis, reverse, exclusive) = (*axis, *reverse, *exclusive);
                let (identity, combine) = match op {
                    ReduceOp::Sum => (0.0, B::Add),
                    ReduceOp::Prod => (1.0, B::Mul),
                    ReduceOp::Max => (f64::NEG_INFINITY, B::Max),
                    ReduceOp::Min => (f64::INFINITY, B::Min),
                };
                let operand = node.args[0];
                let n = shape[axis];
                let outer: Vec<usize> = shape.iter().enumerate().filter(|&(d, _)| d != axis).map(|(_, &e)| e).collect();
                let running = self.add_buffer(format!("s{}", id.0), BufferKind::Temp, node.ty.dtype, outer.clone());
                self.nest_over(&outer, |l, outer_index| {
                    let lane = flat(&outer, outer_index);
                    let acc = || Expr::Load { buffer: running, offset: lane.clone() };
                    let mut stmts = vec![Stmt::Store { buffer: running, offset: lane.clone(), value: Expr::Const(identity) }];
                    stmts.extend(l.nest_over(&[n], |l, k| {
                        let along = if reverse { Affine::constant(n as i64 - 1).add_scaled(&k[0], -1) } else { k[0].clone() };
                        let mut o = outer_index.iter();
                        let index: Vec<Affine> = (0..shape.len()).map(|d| if d == axis { along.clone() } else { o.next().unwrap().clone() }).collect();
                        let add = Stmt::Store {
                            buffer: running,
                            offset: lane.clone(),
                            value: Expr::Binary(combine, Box::new(acc()), Box::new(l.access(operand, &index))),
                        };
                        let store = Stmt::Store { buffer, offset: flat(&shape, &index), value: acc() };
                        if exclusive { vec![store, add] } else { vec![add, store] }
                    }));
                    stmts
                })
            }
            Op::ArgReduce { op, axis } => {
                // Two reductions over each lane: its extreme (`b5`, numpy's NaN-propagating
                // maximum), then the first index where the element equals it or is NaN (a minimum
                // of indices, `n` where none does): the first largest element, or the first NaN.
                // Both run in vector lanes as any maximum or sum does.
                let (op, axis) = (*op, *axis);
                let operand = node.args[0];
                let in_shape = self.graph.ty(operand).shape.clone();
                let n = in_shape[axis];
                let best = self.add_buffer(format!("b{}", id.0), BufferKind::Temp, self.graph.ty(operand).dtype, shape.clone());
                let (init, combine) = match op {
                    ReduceOp::Min => (f64::INFINITY, B::Min),
                    _ => (f64::NEG_INFINITY, B::Max),
                };
                self.nest_over(&shape, |l, out_index| {
                    let offset = flat(&shape, out_index);
                    let element = |l: &mut Self, k: &Affine| {
                        let mut o = out_index.iter();
                        let full: Vec<Affine> = (0..in_shape.len()).map(|d| if d == axis { k.clone() } else { o.next().unwrap().clone() }).collect();
                        l.access(operand, &full)
                    };
                    let mut stmts = vec![store(best, &offset, Expr::Const(init))];
                    stmts.extend(l.nest_over(&[n], |l, k| vec![store(best, &offset, bin(combine, load(best, &offset), element(l, &k[0])))]));
                    stmts.push(store(buffer, &offset, Expr::Const(n as f64)));
                    stmts.extend(l.nest_over(&[n], |l, k| {
                        let x = element(l, &k[0]);
                        let cmp = |c, a: Expr, b: Expr| Expr::Compare(c, Box::new(a), Box::new(b));
                        let found = bin(B::Max, cmp(ollie_graph::CmpOp::Eq, x.clone(), load(best, &offset)), cmp(ollie_graph::CmpOp::Ne, x.clone(), x));
                        let index = Expr::Select(Box::new(found), Box::new(Expr::Index(k[0].clone())), Box::new(Expr::Const(n as f64)));
                        vec![store(buffer, &offset, bin(B::Min, load(buffer, &offset), index))]
                    }));
                    stmts
                })
            }
            Op::Sort { axis } | Op::ArgSort { axis, .. } => {
                // Per lane, a sort loop along `axis` storing the operand's element at each
                // position (see `LoopKind::Sort`). A stable order is right for either kind.
                let n = shape[*axis];
                let keep = kept(self.graph, id, *axis, n);
                let (axis, kind) = (*axis, if matches!(node.op, Op::Sort { .. }) { LoopKind::Sort(keep) } else { LoopKind::ArgSort(keep) });
                let operand = node.args[0];
                let outer: Vec<usize> = shape.iter().enumerate().filter(|&(d, _)| d != axis).map(|(_, &e)| e).collect();
                let n = shape[axis];
                self.nest_over(&outer, |l, outer_index| {
                    let mut lane = l.nest_over(&[n], |l, k| {
                        let mut o = outer_index.iter();
                        let index: Vec<Affine> = (0..shape.len()).map(|d| if d == axis { k[0].clone() } else { o.next().unwrap().clone() }).collect();
                        vec![store(buffer, &flat(&shape, &index), l.access(operand, &index))]
                    });
                    if let [Stmt::Loop { kind: k, .. }] = lane.as_mut_slice() {
                        *k = kind;
                    }
                    lane
                })
            }
            Op::Einsum(spec) => {
                let mut size = [0usize; 128];
                for (labels, &a) in spec.inputs.iter().zip(&node.args) {
                    for (&l, &n) in labels.iter().zip(&self.graph.ty(a).shape) {
                        size[l as usize] = n;
                    }
                }
                let mut summed: Vec<u8> = spec.inputs.iter().flatten().copied().filter(|l| !spec.output.contains(l)).collect();
                summed.sort_unstable();
                summed.dedup();
                let summed_shape: Vec<usize> = summed.iter().map(|&l| size[l as usize]).collect();
                let spec = spec.clone();
                self.nest_over(&shape, |l, out_index| {
                    let offset = flat(&shape, out_index);
                    let mut stmts = vec![Stmt::Store { buffer, offset: offset.clone(), value: Expr::Const(0.0) }];
                    stmts.extend(l.nest_over(&summed_shape, |l, sum_index| {
                        let label_index = |label: u8| -> Affine {
                            match spec.output.iter().position(|&m| m == label) {
                                Some(p) => out_index[p].clone(),
                                None => sum_index[summed.iter().position(|&m| m == label).unwrap()].clone(),
                            }
                        };
                        let mut product: Option<Expr> = None;
                        for (labels, &a) in spec.inputs.iter().zip(&node.args) {
                            let index: Vec<Affine> = labels.iter().map(|&m| label_index(m)).collect();
                            let term = l.access(a, &index);
                            product = Some(match product {
                                None => term,
                                Some(p) => Expr::Binary(ollie_graph::BinaryOp::Mul, Box::new(p), Box::new(term)),
                            });
                        }
                        let acc = Expr::Load { buffer, offset: offset.clone() };
                        let value = Expr::Binary(ollie_graph::BinaryOp::Add, Box::new(acc), Box::new(product.expect("an operand")));
                        vec![Stmt::Store { buffer, offset: offset.clone(), value }]
                    }));
                    stmts
                })
            }
            Op::Concat { axis } => {
                let mut start = 0i64;
                let mut stmts = Vec::new();
                for &piece in &node.args {
                    let piece_shape = self.graph.ty(piece).shape.clone();
                    let axis = *axis;
                    let shift = start;
                    stmts.extend(self.nest_over(&piece_shape, |l, index| {
                        let mut out_index = index.to_vec();
                        out_index[axis] = out_index[axis].add_scaled(&Affine::constant(shift), 1);
                        vec![Stmt::Store { buffer, offset: flat(&shape, &out_index), value: l.access(piece, index) }]
                    }));
                    start += piece_shape[axis] as i64;
                }
                stmts
            }
            _ => self.nest_over(&shape, |l, index| {
                vec![Stmt::Store { buffer, offset: flat(&shape, index), value: l.compute(id, index) }]
            }),
        };
        self.nest.body.extend(stmts);
    }

    /// Copies node `id` (a view, an input, or another output) into output `buffer`.
    fn copy(&mut self, id: NodeId, buffer: BufferId) {
        let shape = self.graph.ty(id).shape.clone();
        let stmts = self.nest_over(&shape, |l, index| {
            vec![Stmt::Store { buffer, offset: flat(&shape, index), value: l.access(id, index) }]
        });
        self.nest.body.extend(stmts);
    }

    /// The element of node `id` at `index`: a load from its buffer, or its inlined expression.
    fn access(&self, id: NodeId, index: &[Affine]) -> Expr {
        match self.buffer_of[id.index()] {
            Some(buffer) => Expr::Load { buffer, offset: flat(&self.graph.ty(id).shape, index) },
            None => self.compute(id, index),
        }
    }

    /// Node `id`'s own expression at `index`, reading its operands through [`Self::access`].
    fn compute(&self, id: NodeId, index: &[Affine]) -> Expr {
        let node = self.graph.node(id);
        let arg = |k: usize| node.args[k];
        let boxed = |k: usize| Box::new(self.access(arg(k), index));
        match &node.op {
            Op::Constant { value, .. } => Expr::Const(*value),
            Op::Iota { axis, .. } => Expr::Index(index[*axis].clone()),
            Op::Unary(u) => Expr::Unary(*u, boxed(0)),
            Op::Binary(b) => Expr::Binary(*b, boxed(0), boxed(1)),
            Op::Compare(c) => Expr::Compare(*c, boxed(0), boxed(1)),
            Op::Select => Expr::Select(boxed(0), boxed(1), boxed(2)),
            Op::Cast { dtype } => Expr::Cast(*dtype, boxed(0)),
            Op::Broadcast { shape } => {
                let from = &self.graph.ty(arg(0)).shape;
                let lead = shape.len() - from.len();
                let inner: Vec<Affine> =
                    from.iter().enumerate().map(|(d, &n)| if n == 1 { Affine::constant(0) } else { index[lead + d].clone() }).collect();
                self.access(arg(0), &inner)
            }
            Op::Transpose { perm } => {
                let mut inner = vec![Affine::constant(0); perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    inner[p] = index[i].clone();
                }
                self.access(arg(0), &inner)
            }
            Op::Slice { axes } => {
                let inner: Vec<Affine> =
                    axes.iter().zip(index).map(|(s, i)| i.scale(s.step).add_scaled(&Affine::constant(s.start as i64), 1)).collect();
                self.access(arg(0), &inner)
            }
            Op::Reshape { shape } => {
                let from = self.graph.ty(arg(0)).shape.clone();
                if let Some(buffer) = self.buffer_of[arg(0).index()] {
                    // A contiguous buffer: the reshape keeps the flat offset.
                    return Expr::Load { buffer, offset: flat(shape, index) };
                }
                // Axes split: each axis of the operand is its group's index, row-major.
                let groups = split_groups(&from, shape).expect("a reshape merging axes has its operand in memory");
                let inner: Vec<Affine> = groups.iter().map(|g| g.iter().filter(|&&a| shape[a] != 1).fold(Affine::constant(0), |v, &a| v.scale(shape[a] as i64).add_scaled(&index[a], 1))).collect();
                self.access(arg(0), &inner)
            }
            Op::Gather { from, .. } => {
                let source = arg(0);
                let extents = &self.graph.ty(source).shape;
                let strides = strides(extents);
                let mut along = Vec::with_capacity(from.len());
                let mut indices = Vec::new();
                for (j, a) in from.iter().enumerate() {
                    along.push(match *a {
                        GatherAxis::Along { start, step: 0, .. } => Affine::constant(start as i64),
                        GatherAxis::Along { axis, start, step } => index[axis].scale(step).add_scaled(&Affine::constant(start as i64), 1),
                        GatherAxis::Window { axis, start, step, window, dilation } => index[axis].scale(step).add_scaled(&index[window], dilation).add_scaled(&Affine::constant(start as i64), 1),
                        GatherAxis::Index => {
                            indices.push(Dynamic { value: self.access(node.args[1 + indices.len()], index), stride: strides[j], extent: extents[j] });
                            Affine::constant(0)
                        }
                    });
                }
                if indices.is_empty() {
                    return self.access(source, &along);
                }
                // The graph gathers from parameters only (`ollie_graph::check`).
                let buffer = self.buffer_of[source.index()].expect("a gather's source is a parameter");
                Expr::Gather { buffer, offset: flat(extents, &along), indices }
            }
            Op::Input { .. }
            | Op::Reduce { .. }
            | Op::Scan { .. }
            | Op::SumExp { .. }
            | Op::SumSqDev { .. }
            | Op::Einsum(_)
            | Op::Concat { .. }
            | Op::ArgReduce { .. }
            | Op::Sort { .. }
            | Op::ArgSort { .. } => {
                unreachable!("{} is always materialized", node.op.name())
            }
        }
    }
}
