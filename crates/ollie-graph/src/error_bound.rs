//! First-order error bounds: for each output element, how much computing the graph in floating
//! point (in any reasonable order) may err. Two quantities, after the standard model of
//! arithmetic with underflow, `fl(x ∘ y) = (x ∘ y)(1 + δ) + η` with `|δ| ≤ u` and `|η| ≤ λ`:
//!
//! - `E`, in units of the unit roundoff `u`: `E(f) = c·|f| + Σ |∂f/∂xₖ| · E(xₖ)`. Each operation
//!   rounds its own result (`c` = 1, half an ulp or less) and propagates its operands' errors. A
//!   transcendental may be off by its float32 allowance instead (OpenCL's and SLEEF's: `exp`,
//!   `log`, `sqrt` and `**` 3 ulp, `tanh` 5 ulp; an ulp is at most `2u·|f|`, so `c` = 6 and 10).
//!   Inputs and index values are exact (`E = 0`); constants round once; exact operations
//!   (negation, absolute value, max/min, selection, data movement) only propagate. A sum of `n`
//!   terms adds `c(n) · Σ|xᵢ|` with `c(n) = 2√n`, the typical growth of rounding error in a sum
//!   whatever its order (the worst case, `n − 1`, would make the bound useless).
//! - `A`, in units of `λ`, the smallest normal number: what underflow may cost. Every rounding
//!   may flush a result below `λ` to zero (flush-to-zero, as float32 hardware and libraries do
//!   it) or return `λ` for an exact result below it (a clamped `exp`): `A(f) = k + Σ |∂f/∂xₖ| ·
//!   A(xₖ)` with `k` the roundings that produce the element (`c(n)` for a sum, as above), and a
//!   subnormal input may be read as zero (denormals-are-zero): `A = 1` there, else 0.

use ndarray::{ArrayD, Zip};

use crate::einsum::EinsumSpec;
use crate::graph::{Graph, GraphError};
use crate::op::{BinaryOp, Op, ReduceOp, UnaryOp};
use crate::reference::{eval_op, Tensor, Value};
use crate::ty::DType;

/// The error bounds of one output, element by element (see the module's documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorBound {
    /// `E`: rounding error, in units of the unit roundoff.
    pub rounding: Tensor,
    /// `A`: underflow, in units of the smallest normal number.
    pub underflow: Tensor,
}

/// The reference outputs and their error bounds, evaluated on `inputs`.
pub fn evaluate_with_error_bounds(graph: &Graph, inputs: &[Tensor]) -> Result<(Vec<Tensor>, Vec<ErrorBound>), GraphError> {
    crate::reference::check_inputs(graph, inputs)?;
    let mut remaining = graph.use_counts();
    let mut values: Vec<Option<Tensor>> = vec![None; graph.nodes.len()];
    let mut bounds: Vec<Option<ErrorBound>> = vec![None; graph.nodes.len()];
    for id in graph.ids() {
        let node = graph.node(id);
        let v: Vec<&Tensor> = node.args.iter().map(|a| values[a.index()].as_ref().expect("evaluated")).collect();
        let b: Vec<&ErrorBound> = node.args.iter().map(|a| bounds[a.index()].as_ref().expect("evaluated")).collect();
        let value = apply(&node.op, &v, inputs);
        let e: Vec<&Tensor> = b.iter().map(|b| &b.rounding).collect();
        let a: Vec<&Tensor> = b.iter().map(|b| &b.underflow).collect();
        // Where a first-order term is undefined (0·log 0, 0/0) the bound is unknown: infinite,
        // never NaN (which the accuracy rule would read as "no error allowed").
        let defined = |t: Tensor| t.mapv_into(|b| if b.is_nan() { f64::INFINITY } else { b });
        // Contractions weigh errors by their operands' magnitudes: taken once for both bounds.
        let abs: Vec<Tensor> = if matches!(node.op, Op::Einsum(_)) { v.iter().map(|t| t.mapv(f64::abs)).collect() } else { Vec::new() };
        let abs: Vec<&Tensor> = abs.iter().collect();
        let rounding = defined(own_rounding(&node.op, &value, &v, &abs) + propagate(&node.op, &value, &v, &abs, &e, inputs));
        let underflow = defined(own_underflow(&node.op, node.ty.dtype, &value, &v) + propagate(&node.op, &value, &v, &abs, &a, inputs));
        for &arg in &node.args {
            remaining[arg.index()] -= 1;
            if remaining[arg.index()] == 0 {
                values[arg.index()] = None;
                bounds[arg.index()] = None;
            }
        }
        values[id.index()] = Some(value);
        bounds[id.index()] = Some(ErrorBound { rounding, underflow });
    }
    // Outputs count as uses, so their values and bounds are still here.
    let standard = |t: &Tensor| t.as_standard_layout().into_owned();
    let outputs = graph.outputs.iter().map(|o| standard(values[o.index()].as_ref().expect("evaluated"))).collect();
    let bounds = graph
        .outputs
        .iter()
        .map(|o| {
            let b = bounds[o.index()].as_ref().expect("evaluated");
            ErrorBound { rounding: standard(&b.rounding), underflow: standard(&b.underflow) }
        })
        .collect();
    Ok((outputs, bounds))
}

fn apply(op: &Op, args: &[&Tensor], inputs: &[Tensor]) -> Tensor {
    eval_op(op, args.iter().map(|t| Value::from(t.view())).collect(), inputs).into_owned()
}

fn sum_factor(n: usize) -> f64 {
    2.0 * (n as f64).sqrt()
}

/// How many units of `u·|f|` a unary function's float32 implementation may err by: 2 per ulp of
/// its allowance (OpenCL's single-precision figures, which SLEEF's u10/u35 functions meet).
fn unary_allowance(u: UnaryOp) -> f64 {
    match u {
        UnaryOp::Neg | UnaryOp::Abs => 0.0,
        UnaryOp::Exp | UnaryOp::Log | UnaryOp::Sqrt => 6.0,
        UnaryOp::Tanh => 10.0,
    }
}

/// The same for binary operations: correctly rounded arithmetic, `**` 3 ulp, max/min exact.
fn binary_allowance(b: BinaryOp) -> f64 {
    match b {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div => 1.0,
        BinaryOp::Pow => 6.0,
        BinaryOp::Max | BinaryOp::Min => 0.0,
    }
}

/// The summed-over size of a reduction or contraction.
fn summed(op: &Op, v: &[&Tensor]) -> usize {
    match op {
        Op::Reduce { axes, .. } => axes.iter().map(|&a| v[0].shape()[a]).product(),
        Op::Einsum(spec) => {
            let mut size = [1usize; 128];
            for (labels, t) in spec.inputs.iter().zip(v) {
                for (&l, &n) in labels.iter().zip(t.shape()) {
                    size[l as usize] = n;
                }
            }
            let mut labels: Vec<u8> = spec.inputs.iter().flatten().copied().filter(|l| !spec.output.contains(l)).collect();
            labels.sort_unstable();
            labels.dedup();
            labels.iter().map(|&l| size[l as usize]).product()
        }
        _ => 1,
    }
}

/// The roundings behind one element of a contraction summing `n` products: each product rounds
/// k − 1 times, then the sum grows as any sum does.
fn einsum_roundings(spec: &EinsumSpec, n: usize) -> f64 {
    (spec.inputs.len() - 1) as f64 + if n > 1 { sum_factor(n) } else { 1.0 }
}

/// The error an operation adds by rounding its own result, in units of `u`.
fn own_rounding(op: &Op, value: &Tensor, v: &[&Tensor], abs: &[&Tensor]) -> Tensor {
    match op {
        Op::Constant { .. } => value.mapv(f64::abs),
        Op::Unary(u) => value.mapv(|f| unary_allowance(*u) * f.abs()),
        Op::Binary(b) => value.mapv(|f| binary_allowance(*b) * f.abs()),
        Op::Reduce { op: ReduceOp::Sum, axes } => {
            let abs = v[0].mapv(f64::abs);
            apply(&Op::Reduce { op: ReduceOp::Sum, axes: axes.clone() }, &[&abs], &[]) * sum_factor(summed(op, v))
        }
        Op::Einsum(spec) => apply(op, abs, &[]) * einsum_roundings(spec, summed(op, v)),
        _ => ArrayD::zeros(value.raw_dim()),
    }
}

/// The underflow an operation adds by rounding its own result, in units of `λ`; for an input,
/// 1 where it is subnormal (and may be read as zero).
fn own_underflow(op: &Op, dtype: DType, value: &Tensor, v: &[&Tensor]) -> Tensor {
    let roundings = match op {
        Op::Input { .. } => {
            let smallest_normal = if dtype == DType::F64 { f64::MIN_POSITIVE } else { f32::MIN_POSITIVE as f64 };
            return value.mapv(|x| if x != 0.0 && x.abs() < smallest_normal { 1.0 } else { 0.0 });
        }
        Op::Constant { .. } => 1.0,
        Op::Unary(u) if unary_allowance(*u) > 0.0 => 1.0,
        Op::Binary(b) if binary_allowance(*b) > 0.0 => 1.0,
        Op::Reduce { op: ReduceOp::Sum, .. } => sum_factor(summed(op, v)),
        Op::Einsum(spec) => einsum_roundings(spec, summed(op, v)),
        _ => 0.0,
    };
    ArrayD::from_elem(value.raw_dim(), roundings)
}

/// `Σ |∂f/∂xₖ| · e(xₖ)`: how an operation carries its operands' errors `e` (either kind).
fn propagate(op: &Op, value: &Tensor, v: &[&Tensor], abs: &[&Tensor], e: &[&Tensor], inputs: &[Tensor]) -> Tensor {
    match op {
        Op::Input { .. } | Op::Iota { .. } | Op::Constant { .. } | Op::Compare(_) => ArrayD::zeros(value.raw_dim()),
        // Data movement: errors move with the values.
        Op::Broadcast { .. } | Op::Reshape { .. } | Op::Transpose { .. } | Op::Slice { .. } | Op::Concat { .. } | Op::Cast { .. } => apply(op, e, inputs),
        Op::Select => Zip::from(v[0]).and(e[1]).and(e[2]).map_collect(|&c, &a, &b| if c != 0.0 { a } else { b }),
        Op::Unary(u) => Zip::from(value).and(v[0]).and(e[0]).map_collect(|&f, &a, &ea| match u {
            UnaryOp::Neg | UnaryOp::Abs => ea,
            UnaryOp::Exp => f.abs() * ea,
            UnaryOp::Log => ea / a.abs(),
            UnaryOp::Sqrt => ea / (2.0 * f.abs()).max(f64::MIN_POSITIVE),
            UnaryOp::Tanh => (1.0 - f * f) * ea,
        }),
        Op::Binary(b) => Zip::from(value).and(v[0]).and(v[1]).and(e[0]).and(e[1]).map_collect(|&f, &a, &c, &ea, &ec| match b {
            BinaryOp::Add | BinaryOp::Sub => ea + ec,
            BinaryOp::Mul => c.abs() * ea + a.abs() * ec,
            BinaryOp::Div => ea / c.abs() + a.abs() * ec / (c * c),
            BinaryOp::Pow => {
                let da = if ea == 0.0 { 0.0 } else { (c * a.powf(c - 1.0)).abs() * ea };
                // f·ln|a| tends to 0 where f = a^c does (a → 0 with c > 0).
                let dc = if ec == 0.0 || f == 0.0 { 0.0 } else { (f * a.abs().ln()).abs() * ec };
                da + dc
            }
            BinaryOp::Max | BinaryOp::Min => ea.max(ec),
        }),
        Op::Reduce { op: r, axes } => match r {
            ReduceOp::Sum => apply(op, &[e[0]], inputs),
            // The selected element's error: at most the largest along the axes.
            ReduceOp::Max | ReduceOp::Min => apply(&Op::Reduce { op: ReduceOp::Max, axes: axes.clone() }, &[e[0]], inputs),
        },
        Op::Einsum(spec) => einsum_propagate(spec, value, abs, e, inputs),
    }
}

/// For `Σ Π xⱼ`: each operand's error weighted by the other factors' magnitudes `abs`.
fn einsum_propagate(spec: &EinsumSpec, value: &Tensor, abs: &[&Tensor], e: &[&Tensor], inputs: &[Tensor]) -> Tensor {
    let op = Op::Einsum(spec.clone());
    let mut bound = ArrayD::zeros(value.raw_dim());
    for j in 0..spec.inputs.len() {
        if e[j].iter().all(|&x| x == 0.0) {
            continue;
        }
        let mut operands = abs.to_vec();
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
        assert!(e[0].rounding.iter().all(|b| b.is_finite()), "bounds {:?}", e[0]);
    }
}
