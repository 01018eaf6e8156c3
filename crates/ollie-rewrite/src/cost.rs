//! The extraction cost model: an op's floating-point operations (a division weighing as a few)
//! plus the bytes it must move when it is computed into memory of its own (a reduction, scan,
//! contraction or concatenation reads its operands and writes its result; elementwise ops and
//! views fuse into their users; a `sum_exp` or `sum_sq_dev` shares its read with the maximum or
//! sum of the same operand), and one unit per node so that, costs equal, the smaller graph wins.

use egg::{CostFunction, Id};
use ollie_graph::{bytes, flops, BinaryOp, Graph, Op, TensorType};

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

/// The cost of a whole graph, each node counted once.
pub fn graph_cost(graph: &Graph) -> f64 {
    graph
        .nodes
        .iter()
        .map(|node| {
            let args: Vec<&TensorType> = node.args.iter().map(|&a| graph.ty(a)).collect();
            op_cost(&node.op, &args, &node.ty)
        })
        .sum()
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
