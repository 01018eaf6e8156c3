//! The extraction cost model: an op's floating-point operations (a division weighing as a few)
//! plus the bytes it must move when it is computed into memory of its own (a reduction, scan,
//! contraction or concatenation reads its operands and writes its result; elementwise ops and
//! views fuse into their users; a `sum_exp` or `sum_sq_dev` shares its read with the maximum or
//! sum of the same operand), and one unit per node so that, costs equal, the smaller graph wins.
//! Over a whole graph, contractions batched over the same chunks of a tensor (a reshape splitting
//! one of its axes, the chunk an axis of their results outside every axis the tensor lacks) read
//! it from memory once: their loops fuse per chunk, and the chunk stays in cache between them.

use egg::{CostFunction, Id};
use ollie_graph::{bytes, flops, BinaryOp, Graph, NodeId, Op, TensorType};

use crate::lang::{EGraph, ENode};

/// What one byte costs against one arithmetic operation: about a machine's balance point, so
/// that a pass over a tensor weighs like a few operations per element.
const BYTE: f64 = 1.0;
/// What a node costs by being there.
const NODE: f64 = 1.0;
/// What a division costs against a multiplication: a vector division's throughput is a few
/// times lower (4 to 10 on recent x86), so `x·(1/y)` beats `x/y` where `y` is smaller than `x`.
const DIVISION: f64 = 4.0;

/// The cost of `op` over operands of types `args` giving `ty`.
pub fn op_cost(op: &Op, args: &[&TensorType], ty: &TensorType) -> f64 {
    let moved = match op {
        Op::Reduce { .. } | Op::Scan { .. } | Op::Einsum(_) | Op::Concat { .. } => args.iter().map(|a| bytes(a)).sum::<f64>() + bytes(ty),
        // Its operand is read by the pass that finds the maximum (the sum, for a `sum_sq_dev`),
        // which the rule that makes it requires and the lowering fuses with it.
        Op::SumExp { .. } | Op::SumSqDev { .. } => bytes(ty),
        _ => 0.0,
    };
    let arithmetic = flops(op, args, ty) * if matches!(op, Op::Binary(BinaryOp::Div)) { DIVISION } else { 1.0 };
    arithmetic + BYTE * moved + NODE
}

/// The cost of a whole graph, each node counted once, a tensor read by several contractions
/// batched over the same chunks of it counted once.
pub fn graph_cost(graph: &Graph) -> f64 {
    let mut chunked_reads = std::collections::HashSet::new();
    graph
        .nodes
        .iter()
        .map(|node| {
            let args: Vec<&TensorType> = node.args.iter().map(|&a| graph.ty(a)).collect();
            let mut cost = op_cost(&node.op, &args, &node.ty);
            if let Op::Einsum(spec) = &node.op {
                for ((&arg, labels), ty) in node.args.iter().zip(&spec.inputs).zip(&args) {
                    if chunks(graph, arg, labels, &spec.output).is_some_and(|read| !chunked_reads.insert(read)) {
                        cost -= BYTE * bytes(ty);
                    }
                }
            }
            cost
        })
        .sum()
}

/// Where operand `arg` of a contraction (its `labels`, the contraction's `output`) is a chunked
/// view the contraction is batched over: the tensor under the view, the axis split and the
/// number of chunks.
fn chunks(graph: &Graph, arg: NodeId, labels: &[u8], output: &[u8]) -> Option<(NodeId, usize, usize)> {
    let node = &graph.nodes[arg.index()];
    let Op::Reshape { shape } = &node.op else { return None };
    let from = &graph.ty(node.args[0]).shape;
    // One axis split in two: the shapes agree but for `from[at] = shape[at]·shape[at + 1]`.
    if shape.len() != from.len() + 1 {
        return None;
    }
    let at = (0..from.len()).find(|&d| from[..d] == shape[..d] && from[d + 1..] == shape[d + 2..] && from[d] == shape[d] * shape[d + 1])?;
    // Batched over the chunks, with every label the operand lacks inside them (in the order of
    // the result's axes, the loops' order): a chunk is read once and reused from cache.
    let chunk = labels.get(at)?;
    let outer = &output[..output.iter().position(|l| l == chunk)?];
    outer.iter().all(|l| labels.contains(l)).then_some(())?;
    let mut under = node.args[0];
    while let Op::Slice { .. } = graph.nodes[under.index()].op {
        under = graph.nodes[under.index()].args[0];
    }
    Some((under, at, shape[at]))
}

/// The model as egg's cost function: a node's cost plus its operands' (as a tree).
pub struct Model<'a> {
    pub egraph: &'a EGraph,
}

impl CostFunction<ENode> for Model<'_> {
    type Cost = f64;

    fn cost<C: FnMut(Id) -> f64>(&mut self, enode: &ENode, mut costs: C) -> f64 {
        let args: Vec<&TensorType> = enode.args.iter().map(|&a| &self.egraph[a].data.ty).collect();
        let ty = crate::lang::infer(self.egraph, &enode.op, &enode.args).expect("every node is well typed");
        op_cost(&enode.op, &args, &ty) + enode.args.iter().map(|&a| costs(a)).sum::<f64>()
    }
}
