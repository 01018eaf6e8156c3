//! First-order error bounds: for each output element, a quantity `E` such that computing the
//! graph in floating point with unit roundoff `u` (in any reasonable order) errs by about `u·E`.
//! The verifier uses it so that a different summation order passes while a wrong value does not.
//!
//! `E(f) = |f| + Σ |∂f/∂xₖ| · E(xₖ)`: each operation rounds its own result once and propagates its
//! operands' errors. Inputs and index values are exact (`E = 0`); constants round once; exact
//! operations (negation, absolute value, max/min, selection, data movement) only propagate. A
//! sum of `n` terms adds `c(n) · Σ|xᵢ|` with `c(n) = 2√n`, the typical growth of rounding error
//! in a sum whatever its order (the worst case, `n − 1`, would make the bound useless).

use ndarray::{ArrayD, Zip};

use crate::einsum::EinsumSpec;
use crate::graph::{Graph, GraphError};
use crate::op::{BinaryOp, Op, ReduceOp, UnaryOp};
use crate::reference::{eval_op, Tensor, Value};

/// The reference outputs and their error bounds `E` (in units of the unit roundoff), evaluated
/// on `inputs`.
pub fn evaluate_with_error_bounds(graph: &Graph, inputs: &[Tensor]) -> Result<(Vec<Tensor>, Vec<Tensor>), GraphError> {
    crate::reference::check_inputs(graph, inputs)?;
    let mut remaining = graph.use_counts();
    let mut values: Vec<Option<Tensor>> = vec![None; graph.nodes.len()];
    let mut bounds: Vec<Option<Tensor>> = vec![None; graph.nodes.len()];
    for id in graph.ids() {
        let node = graph.node(id);
        let v: Vec<&Tensor> = node.args.iter().map(|a| values[a.index()].as_ref().expect("evaluated")).collect();
        let e: Vec<&Tensor> = node.args.iter().map(|a| bounds[a.index()].as_ref().expect("evaluated")).collect();
        let value = apply(&node.op, &v, inputs);
        // Where a first-order term is undefined (0·log 0, 0/0) the bound is unknown: infinite,
        // never NaN (which the accuracy rule would read as "no error allowed").
        let bound = error_bound(&node.op, &value, &v, &e, inputs).mapv_into(|b| if b.is_nan() { f64::INFINITY } else { b });
        for &a in &node.args {
            remaining[a.index()] -= 1;
            if remaining[a.index()] == 0 {
                values[a.index()] = None;
                bounds[a.index()] = None;
            }
        }
        values[id.index()] = Some(value);
        bounds[id.index()] = Some(bound);
    }
    // Outputs count as uses, so their values and bounds are still here.
    let take = |v: &[Option<Tensor>], o: &crate::NodeId| v[o.index()].clone().expect("evaluated").as_standard_layout().into_owned();
    let outputs = graph.outputs.iter().map(|o| take(&values, o)).collect();
    let bounds = graph.outputs.iter().map(|o| take(&bounds, o)).collect();
    Ok((outputs, bounds))
}

fn apply(op: &Op, args: &[&Tensor], inputs: &[Tensor]) -> Tensor {
    eval_op(op, args.iter().map(|t| Value::from(t.view())).collect(), inputs).into_owned()
}

fn sum_factor(n: usize) -> f64 {
    2.0 * (n as f64).sqrt()
}

fn error_bound(op: &Op, value: &Tensor, v: &[&Tensor], e: &[&Tensor], inputs: &[Tensor]) -> Tensor {
    match op {
        Op::Input { .. } | Op::Iota { .. } => ArrayD::zeros(value.raw_dim()),
        Op::Constant { .. } => value.mapv(f64::abs),
        // Data movement: errors move with the values.
        Op::Broadcast { .. } | Op::Reshape { .. } | Op::Transpose { .. } | Op::Slice { .. } | Op::Concat { .. } | Op::Cast { .. } => apply(op, e, inputs),
        Op::Compare(_) => ArrayD::zeros(value.raw_dim()),
        Op::Select => Zip::from(v[0]).and(e[1]).and(e[2]).map_collect(|&c, &a, &b| if c != 0.0 { a } else { b }),
        Op::Unary(u) => Zip::from(value).and(v[0]).and(e[0]).map_collect(|&f, &a, &ea| match u {
            UnaryOp::Neg | UnaryOp::Abs => ea,
            UnaryOp::Exp => f.abs() * (1.0 + ea),
            UnaryOp::Log => f.abs() + ea / a.abs(),
            UnaryOp::Sqrt => f.abs() + ea / (2.0 * f.abs()).max(f64::MIN_POSITIVE),
            UnaryOp::Tanh => f.abs() + (1.0 - f * f) * ea,
        }),
        Op::Binary(b) => Zip::from(value).and(v[0]).and(v[1]).and(e[0]).and(e[1]).map_collect(|&f, &a, &c, &ea, &ec| match b {
            BinaryOp::Add | BinaryOp::Sub => f.abs() + ea + ec,
            BinaryOp::Mul => f.abs() + c.abs() * ea + a.abs() * ec,
            BinaryOp::Div => f.abs() + ea / c.abs() + a.abs() * ec / (c * c),
            BinaryOp::Pow => {
                let da = if ea == 0.0 { 0.0 } else { (c * a.powf(c - 1.0)).abs() * ea };
                // f·ln|a| tends to 0 where f = a^c does (a → 0 with c > 0).
                let dc = if ec == 0.0 || f == 0.0 { 0.0 } else { (f * a.abs().ln()).abs() * ec };
                f.abs() + da + dc
            }
            BinaryOp::Max | BinaryOp::Min => ea.max(ec),
        }),
        Op::Reduce { op: r, axes } => match r {
            ReduceOp::Sum => {
                let n: usize = axes.iter().map(|&a| v[0].shape()[a]).product();
                let abs = v[0].mapv(f64::abs);
                apply(op, &[e[0]], inputs) + apply(op, &[&abs], inputs) * sum_factor(n)
            }
            // The selected element's error: at most the largest along the axes.
            ReduceOp::Max | ReduceOp::Min => apply(&Op::Reduce { op: ReduceOp::Max, axes: axes.clone() }, &[e[0]], inputs),
        },
        Op::Einsum(spec) => einsum_bound(spec, v, e, inputs),
    }
}

/// For `Σ Π xⱼ`: each operand's error weighted by the other factors, the products' own
/// roundings (k − 1 per product), and the sum's growth.
fn einsum_bound(spec: &EinsumSpec, v: &[&Tensor], e: &[&Tensor], inputs: &[Tensor]) -> Tensor {
    let op = Op::Einsum(spec.clone());
    let abs: Vec<Tensor> = v.iter().map(|t| t.mapv(f64::abs)).collect();
    let abs_refs: Vec<&Tensor> = abs.iter().collect();
    let magnitude = apply(&op, &abs_refs, inputs);
    let mut size = [1usize; 128];
    for (labels, t) in spec.inputs.iter().zip(v) {
        for (&l, &n) in labels.iter().zip(t.shape()) {
            size[l as usize] = n;
        }
    }
    let mut summed: Vec<u8> = spec.inputs.iter().flatten().copied().filter(|l| !spec.output.contains(l)).collect();
    summed.sort_unstable();
    summed.dedup();
    let n: usize = summed.iter().map(|&l| size[l as usize]).product();
    let k = spec.inputs.len();
    let mut bound = &magnitude * ((k - 1) as f64 + if n > 1 { sum_factor(n) } else { 1.0 });
    for j in 0..k {
        if e[j].iter().all(|&x| x == 0.0) {
            continue;
        }
        let mut operands = abs_refs.clone();
        operands[j] = e[j];
        bound = bound + apply(&op, &operands, inputs);
    }
    bound
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(x − x)²` is exactly 0 with a finite bound: the exponent's own error times `0·ln 0`
    /// must not make it NaN (a NaN bound would allow no error at all).
    #[test]
    fn a_power_of_zero_has_a_finite_bound() {
        let g = crate::parse(
            "kernel k(x: f32[3]) {\n  %0: f32[3] = input[x]\n  %1: f32[3] = sub %0, %0\n  %2: f32[] = const[2.0]\n  %3: f32[3] = broadcast %2\n  %4: f32[3] = pow %1, %3\n  return %4\n}\n",
        )
        .unwrap();
        let inputs = vec![ndarray::arr1(&[1.5, -2.0, 0.25]).into_dyn()];
        let (r, e) = evaluate_with_error_bounds(&g, &inputs).unwrap();
        assert!(r[0].iter().all(|&v| v == 0.0));
        assert!(e[0].iter().all(|b| b.is_finite()), "bounds {:?}", e[0]);
    }
}
