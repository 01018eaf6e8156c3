//! Chunked evaluation: when every output element depends on one row of a leading axis shared by
//! the inputs (a batch, the rows of a softmax), the reference and its error bounds are evaluated
//! a few rows at a time, on every core, and only those rows are ever held in float64.
//!
//! [`Chunks::of`] finds such an axis by following it through the graph: from axis 0 of every
//! parameter of the chosen extent, each node either carries it on one of its axes (its rows on
//! that axis are the rows of the inputs') or does not depend on it. An operation that mixes rows
//! (a reduction or contraction over the axis, a slice, concatenation or iota along it, a reshape
//! that merges it) leaves the graph whole. A chunk's graph is the same graph with that axis's
//! extent changed; each chunk's outputs are the rows of the whole graph's.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use ndarray::{ArrayD, Axis, IxDyn, Slice};

use crate::error_bound::{evaluate_with_error_bounds, ErrorBound};
use crate::graph::{Graph, GraphError};
use crate::op::{GatherAxis, Op, SliceAxis};
use crate::reference::Tensor;

/// How a graph's evaluation splits along a leading axis of its inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunks {
    /// The axis's extent: the rows there are.
    pub rows: usize,
    /// Per parameter, whether its axis 0 is the one split.
    pub split: Vec<bool>,
    /// Per node, the axis carrying the rows, if it has one.
    axes: Vec<Option<usize>>,
    /// Per output, the axis its rows lie on.
    pub outputs: Vec<usize>,
}

/// What a node is to the split while the graph is followed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Carry {
    /// Its axis `k` holds the rows.
    Rows(usize),
    /// The same in every chunk, and of the same shape.
    Whole,
    /// A broadcast of something whole: whole, or the rows along one of its broadcast axes of
    /// the rows' extent, as its users need.
    Spread,
}

impl Chunks {
    /// The split of `graph` along the leading axis of the largest extent shared by its
    /// parameters' axis 0 that carries through to every output, if one does: every parameter of
    /// that extent split there, else one of them alone (`a @ b` with `a` and `b` square).
    pub fn of(graph: &Graph) -> Option<Chunks> {
        let mut extents: Vec<usize> = graph.params.iter().filter_map(|p| p.ty.shape.first().copied()).filter(|&n| n >= 2).collect();
        extents.sort_unstable_by(|a, b| b.cmp(a));
        extents.dedup();
        extents.into_iter().find_map(|rows| {
            let has = |k: usize| graph.params[k].ty.shape.first() == Some(&rows);
            let all: Vec<bool> = (0..graph.params.len()).map(has).collect();
            let alone = (0..graph.params.len()).filter(|&k| has(k)).map(|k| (0..graph.params.len()).map(|j| j == k).collect::<Vec<bool>>());
            std::iter::once(all.clone()).chain(alone.filter(|one| *one != all)).find_map(|split| Chunks::along(graph, rows, split))
        })
    }

    /// The split that takes the parameters marked in `split` apart along their axis 0, of
    /// `rows` elements.
    fn along(graph: &Graph, rows: usize, split: Vec<bool>) -> Option<Chunks> {
        let mut carry: Vec<Carry> = Vec::with_capacity(graph.nodes.len());
        // What each spread node's users need of it: its rows on an axis, or the whole of it.
        let mut needs: Vec<Vec<Option<usize>>> = vec![Vec::new(); graph.nodes.len()];
        for node in &graph.nodes {
            let args: Vec<Carry> = node.args.iter().map(|a| carry[a.index()]).collect();
            let shape = |i: usize| &graph.ty(node.args[i]).shape;
            // Operands used whole: a spread one is needed whole.
            let whole = |needs: &mut Vec<Vec<Option<usize>>>| -> Option<()> {
                for (i, c) in args.iter().enumerate() {
                    match c {
                        Carry::Rows(_) => return None,
                        Carry::Spread => needs[node.args[i].index()].push(None),
                        Carry::Whole => {}
                    }
                }
                Some(())
            };
            let rows_of = |c: &Carry| if let Carry::Rows(k) = c { Some(*k) } else { None };
            // The distinct axes the operands hold the rows on.
            let mut ks: Vec<usize> = args.iter().filter_map(rows_of).collect();
            ks.sort_unstable();
            ks.dedup();
            let c = match &node.op {
                Op::Input { index } => {
                    if split[*index] {
                        Carry::Rows(0)
                    } else {
                        Carry::Whole
                    }
                }
                Op::Constant { .. } | Op::Iota { .. } => Carry::Whole,
                // Elementwise: operands of one shape; the rows on one axis in all that have them.
                Op::Unary(_) | Op::Cast { .. } | Op::Binary(_) | Op::Compare(_) | Op::Select => {
                    match ks[..] {
                        [] => {
                            whole(&mut needs)?;
                            Carry::Whole
                        }
                        [k] => {
                            for (i, c) in args.iter().enumerate() {
                                match c {
                                    Carry::Rows(_) => {}
                                    Carry::Spread => needs[node.args[i].index()].push(Some(k)),
                                    // Whole, of the full extent on the rows' axis: not a chunk's.
                                    Carry::Whole => return None,
                                }
                            }
                            Carry::Rows(k)
                        }
                        _ => return None,
                    }
                }
                Op::Broadcast { shape: to } => {
                    let from = shape(0);
                    let lead = to.len() - from.len();
                    match args[0] {
                        Carry::Rows(k) => Carry::Rows(k + lead),
                        _ => {
                            whole(&mut needs)?;
                            let spread = (0..to.len()).any(|j| to[j] == rows && (j < lead || from[j - lead] == 1));
                            if spread {
                                Carry::Spread
                            } else {
                                Carry::Whole
                            }
                        }
                    }
                }
                Op::Reshape { shape: to } => match args[0] {
                    Carry::Rows(k) => {
                        // Rows stay rows if the elements before them and their extent do.
                        let before: usize = shape(0)[..k].iter().product();
                        let j = (0..to.len()).find(|&j| to[..j].iter().product::<usize>() == before && to[j] == rows)?;
                        Carry::Rows(j)
                    }
                    _ => {
                        whole(&mut needs)?;
                        Carry::Whole
                    }
                },
                Op::Transpose { perm } => match args[0] {
                    Carry::Rows(k) => Carry::Rows(perm.iter().position(|&p| p == k)?),
                    _ => {
                        whole(&mut needs)?;
                        Carry::Whole
                    }
                },
                Op::Slice { axes } => match args[0] {
                    Carry::Rows(k) if axes[k] == SliceAxis::full(rows) => Carry::Rows(k),
                    Carry::Rows(_) => return None,
                    _ => {
                        whole(&mut needs)?;
                        Carry::Whole
                    }
                },
                Op::Concat { axis } => {
                    match ks[..] {
                        [] => {
                            whole(&mut needs)?;
                            Carry::Whole
                        }
                        // Every operand must hold the rows (a whole one has all of them).
                        [k] if k != *axis && args.iter().all(|c| *c == Carry::Rows(k)) => Carry::Rows(k),
                        _ => return None,
                    }
                }
                Op::Reduce { axes, .. } | Op::SumExp { axes } | Op::SumSqDev { axes } => match args[0] {
                    Carry::Rows(k) if !axes.contains(&k) => Carry::Rows(k - axes.iter().filter(|&&a| a < k).count()),
                    Carry::Rows(_) => return None,
                    _ => {
                        whole(&mut needs)?;
                        Carry::Whole
                    }
                },
                Op::ArgReduce { axis, .. } => match args[0] {
                    Carry::Rows(k) if k != *axis => Carry::Rows(if k > *axis { k - 1 } else { k }),
                    Carry::Rows(_) => return None,
                    _ => {
                        whole(&mut needs)?;
                        Carry::Whole
                    }
                },
                Op::Scan { axis, .. } | Op::Sort { axis } | Op::ArgSort { axis, .. } => match args[0] {
                    Carry::Rows(k) if k != *axis => Carry::Rows(k),
                    Carry::Rows(_) => return None,
                    _ => {
                        whole(&mut needs)?;
                        Carry::Whole
                    }
                },
                // The source whole (a table read at the rows' indices), or split on an axis the
                // result reads along its own rows' axis; every index operand split.
                Op::Gather { from, .. } => {
                    let indices: Vec<Option<usize>> = args[1..].iter().map(rows_of).collect();
                    match (args[0], indices.first().copied().flatten()) {
                        _ if args.contains(&Carry::Spread) => return None,
                        (Carry::Whole, None) if indices.iter().all(Option::is_none) => Carry::Whole,
                        (Carry::Whole, Some(k)) if indices.iter().all(|i| *i == Some(k)) => Carry::Rows(k),
                        (Carry::Rows(j), k) if indices.iter().all(|i| *i == k) => match from[j] {
                            GatherAxis::Along { axis, start: 0, step: 1 } if k.is_none_or(|k| k == axis) => Carry::Rows(axis),
                            _ => return None,
                        },
                        _ => return None,
                    }
                }
                Op::Einsum(spec) => {
                    // One label carries the rows, in the output and in every operand that has it.
                    let mut labels: Vec<u8> = args.iter().zip(&spec.inputs).filter_map(|(c, l)| rows_of(c).map(|k| l[k])).collect();
                    labels.sort_unstable();
                    labels.dedup();
                    match labels[..] {
                        [] => {
                            whole(&mut needs)?;
                            Carry::Whole
                        }
                        [label] => {
                            for (c, l) in args.iter().zip(&spec.inputs) {
                                // Twice in one operand (a diagonal): rows against all of them.
                                if l.iter().filter(|&&x| x == label).count() > 1 {
                                    return None;
                                }
                                let position = l.iter().position(|&x| x == label);
                                match (c, position) {
                                    (Carry::Rows(k), Some(p)) if *k == p => {}
                                    (Carry::Whole, None) => {}
                                    _ => return None,
                                }
                            }
                            Carry::Rows(spec.output.iter().position(|&x| x == label)?)
                        }
                        _ => return None,
                    }
                }
            };
            carry.push(c);
        }
        // A spread node is resized along the one axis all its users need, or left whole.
        let mut axes: Vec<Option<usize>> = carry.iter().map(|c| if let Carry::Rows(k) = c { Some(*k) } else { None }).collect();
        for (i, c) in carry.iter().enumerate() {
            if *c != Carry::Spread {
                continue;
            }
            let mut wanted = needs[i].clone();
            wanted.sort_unstable();
            wanted.dedup();
            match wanted[..] {
                [] | [None] => {}
                [Some(k)] => {
                    let Op::Broadcast { shape: to } = &graph.nodes[i].op else { return None };
                    let from = &graph.ty(graph.nodes[i].args[0]).shape;
                    let lead = to.len() - from.len();
                    if to[k] != rows || (k >= lead && from[k - lead] != 1) {
                        return None;
                    }
                    axes[i] = Some(k);
                }
                _ => return None,
            }
        }
        let outputs = graph.outputs.iter().map(|o| axes[o.index()]).collect::<Option<Vec<usize>>>()?;
        Some(Chunks { rows, split, axes, outputs })
    }

    /// The graph evaluating `len` of the rows: the same graph with the rows' extent `len`.
    pub fn graph(&self, graph: &Graph, len: usize) -> Result<Graph, GraphError> {
        let mut params = graph.params.clone();
        for (p, &split) in params.iter_mut().zip(&self.split) {
            if split {
                p.ty.shape[0] = len;
            }
        }
        let mut chunk = Graph::new(graph.name.clone(), params);
        for (i, node) in graph.nodes.iter().enumerate() {
            let mut op = node.op.clone();
            if let Some(k) = self.axes[i] {
                match &mut op {
                    Op::Broadcast { shape } | Op::Reshape { shape } | Op::Gather { shape, .. } => shape[k] = len,
                    Op::Slice { axes } => axes[k] = SliceAxis::full(len),
                    _ => {}
                }
            }
            chunk.push(op, node.args.clone())?;
        }
        chunk.outputs = graph.outputs.clone();
        Ok(chunk)
    }

    /// The row ranges of chunks of about `elements` input elements each — or, where the inputs
    /// every chunk takes whole are larger than that, of about as many as those (each chunk
    /// copies them: the rows of `a` in `a @ b`, `b` whole) — at least one row, and at least two
    /// chunks when there are two rows: both cores work.
    pub fn ranges(&self, graph: &Graph, elements: usize) -> Vec<Range<usize>> {
        let per_row: usize = graph.params.iter().zip(&self.split).filter(|(_, &s)| s).map(|(p, _)| p.ty.shape[1..].iter().product::<usize>()).sum();
        let whole: usize = graph.params.iter().zip(&self.split).filter(|(_, &s)| !s).map(|(p, _)| p.ty.num_elements()).sum();
        let len = (elements.max(whole) / per_row.max(1)).clamp(1, self.rows.div_ceil(2).max(1));
        (0..self.rows).step_by(len).map(|s| s..(s + len).min(self.rows)).collect()
    }
}

/// Input elements a chunk holds, about: a few megabytes of float64 per input, dozens of them
/// alive at once in the bounds' arithmetic, on each core.
pub const CHUNK_ELEMENTS: usize = 1 << 20;

/// [`evaluate_with_error_bounds`], chunks of rows of about `elements` input elements at a time
/// ([`CHUNK_ELEMENTS`] is a good size) on every core where the graph splits ([`Chunks::of`]),
/// else at once. `input(k, rows)` gives parameter `k`'s values: the given rows of axis 0 for a
/// split parameter, all of it (`rows` is then `None`) for another.
pub fn evaluate_with_error_bounds_chunked(
    graph: &Graph,
    elements: usize,
    input: impl Fn(usize, Option<Range<usize>>) -> Tensor + Sync,
) -> Result<(Vec<Tensor>, Vec<ErrorBound>), GraphError> {
    let whole = || {
        let inputs: Vec<Tensor> = (0..graph.params.len()).map(|k| input(k, None)).collect();
        evaluate_with_error_bounds(graph, &inputs)
    };
    let Some(chunks) = Chunks::of(graph) else { return whole() };
    let ranges = chunks.ranges(graph, elements);
    let shapes: Vec<&[usize]> = graph.outputs.iter().map(|&o| graph.ty(o).shape.as_slice()).collect();
    let full = || shapes.iter().map(|s| ArrayD::<f64>::zeros(IxDyn(s))).collect::<Vec<Tensor>>();
    let (mut values, mut rounding, mut underflow) = (full(), full(), full());
    // The graph of a chunk, by its length (all but the last are of one length).
    let graphs: Vec<(usize, Graph)> = {
        let mut lens: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
        lens.sort_unstable();
        lens.dedup();
        match lens.into_iter().map(|len| chunks.graph(graph, len).map(|g| (len, g))).collect::<Result<_, _>>() {
            Ok(graphs) => graphs,
            // A split the analysis let through but the type rules do not: evaluated whole.
            Err(e) => {
                tracing::warn!("evaluating the reference whole: its chunks do not type-check: {e}");
                return whole();
            }
        }
    };
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(ranges.len());
    let (sender, results) = std::sync::mpsc::sync_channel(threads);
    std::thread::scope(|scope| -> Result<(), GraphError> {
        for _ in 0..threads {
            let (sender, next, ranges, graphs, chunks, input) = (sender.clone(), &next, &ranges, &graphs, &chunks, &input);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(range) = ranges.get(i) else { break };
                let g = &graphs.iter().find(|(len, _)| *len == range.len()).expect("a graph per length").1;
                let inputs: Vec<Tensor> = chunks.split.iter().enumerate().map(|(k, &split)| input(k, split.then(|| range.clone()))).collect();
                if sender.send((range.clone(), evaluate_with_error_bounds(g, &inputs))).is_err() {
                    break;
                }
            });
        }
        drop(sender);
        for (range, result) in results {
            let (v, b) = result?;
            for (k, &axis) in chunks.outputs.iter().enumerate() {
                let rows = Slice::from(range.clone());
                values[k].slice_axis_mut(Axis(axis), rows).assign(&v[k]);
                rounding[k].slice_axis_mut(Axis(axis), rows).assign(&b[k].rounding);
                underflow[k].slice_axis_mut(Axis(axis), rows).assign(&b[k].underflow);
            }
        }
        Ok(())
    })?;
    let bounds = rounding.into_iter().zip(underflow).map(|(rounding, underflow)| ErrorBound { rounding, underflow }).collect();
    Ok((values, bounds))
}
