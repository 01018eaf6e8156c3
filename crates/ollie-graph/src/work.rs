//! The work a kernel must do: floating-point operations and the bytes it must move at least
//! (its inputs once and its outputs once), for the roofline.

use crate::graph::Graph;
use crate::op::{BinaryOp, Op};

/// FLOPs and compulsory memory traffic of a graph.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Work {
    /// Arithmetic operations: one per elementwise arithmetic op and per transcendental
    /// function, `n − 1` per n-term reduction (`3n − 1` for a `sum_exp` or a `sum_sq_dev`), `k` per term of a k-operand contraction (k − 1
    /// multiplications and an addition). Comparisons, selections, casts and data movement
    /// count zero.
    pub flops: f64,
    /// Bytes of every input and output, each moved once (of a parameter only gathered from,
    /// the elements gathered).
    pub min_bytes: f64,
}

impl Graph {
    pub fn work(&self) -> Work {
        let flops = self.nodes.iter().map(|node| {
            let args: Vec<&crate::TensorType> = node.args.iter().map(|&a| self.ty(a)).collect();
            flops(&node.op, &args, &node.ty)
        });
        let inputs: f64 = (0..self.params.len()).map(|k| self.param_bytes(k)).sum();
        let outputs: f64 = self.outputs.iter().map(|&o| {
            let ty = self.ty(o);
            (ty.num_elements() * ty.dtype.result().size()) as f64
        }).sum();
        Work { flops: flops.sum(), min_bytes: inputs + outputs }
    }
}

impl Graph {
    /// The bytes parameter `k` must move: all of it, or, when the graph only gathers from it
    /// (an embedding table), the elements gathered.
    fn param_bytes(&self, k: usize) -> f64 {
        let whole = bytes(&self.params[k].ty);
        let mut gathered = 0.0;
        for node in &self.nodes {
            for (i, &a) in node.args.iter().enumerate() {
                if self.node(a).op != (Op::Input { index: k }) {
                    continue;
                }
                match &node.op {
                    Op::Gather { shape, .. } if i == 0 => gathered += (shape.iter().product::<usize>() * self.params[k].ty.dtype.size()) as f64,
                    _ => return whole,
                }
            }
        }
        if gathered > 0.0 { whole.min(gathered) } else { whole }
    }
}

/// The bytes of a tensor of type `ty` stored in its dtype (a parameter's, as the ABI passes it).
pub fn bytes(ty: &crate::TensorType) -> f64 {
    (ty.num_elements() * ty.dtype.size()) as f64
}

/// The arithmetic operations of one op over operands of types `args` (see [`Work::flops`]).
pub fn flops(op: &Op, args: &[&crate::TensorType], ty: &crate::TensorType) -> f64 {
    let out = ty.num_elements() as f64;
    match op {
        Op::Unary(_) => out,
        Op::Binary(b) => match b {
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Pow | BinaryOp::Max | BinaryOp::Min | BinaryOp::FloorDiv | BinaryOp::Mod => out,
        },
        Op::Reduce { .. } => args[0].num_elements() as f64 - out,
        // A comparison per element.
        Op::ArgReduce { .. } => args[0].num_elements() as f64,
        // `n log₂ n` comparisons per lane of `n`.
        Op::Sort { axis } | Op::ArgSort { axis, .. } => out * (ty.shape[*axis].max(2) as f64).log2(),
        // A subtraction, an exponential and an addition per term.
        Op::SumExp { .. } => 3.0 * args[0].num_elements() as f64 - out,
        // A subtraction, a multiplication and an addition per term.
        Op::SumSqDev { .. } => 3.0 * args[0].num_elements() as f64 - out,
        Op::Scan { axis, .. } => out - (out / ty.shape[*axis].max(1) as f64),
        Op::Einsum(spec) => {
            let shapes: Vec<&[usize]> = args.iter().map(|a| a.shape.as_slice()).collect();
            spec.extent(&shapes, |_| true) as f64 * spec.inputs.len() as f64
        }
        _ => 0.0,
    }
}
