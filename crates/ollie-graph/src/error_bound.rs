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

use ndarray::{ArrayD, ArrayViewD, IxDyn, Zip};

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

/// A bound while the graph is evaluated: `None` where it is zero everywhere (inputs, exact data
/// movement of them), so that the inputs' exactness costs no memory.
type Bound = Option<Tensor>;

/// The reference outputs and their error bounds, evaluated on `inputs`.
pub fn evaluate_with_error_bounds(graph: &Graph, inputs: &[Tensor]) -> Result<(Vec<Tensor>, Vec<ErrorBound>), GraphError> {
    crate::reference::check_inputs(graph, inputs)?;
    let mut remaining = graph.use_counts();
    // Inputs are borrowed, never copied; every other value is owned.
    let mut values: Vec<Option<Value>> = vec![None; graph.nodes.len()];
    let mut bounds: Vec<(Bound, Bound)> = vec![(None, None); graph.nodes.len()];
    for id in graph.ids() {
        let node = graph.node(id);
        let v: Vec<ArrayViewD<f64>> = node.args.iter().map(|a| values[a.index()].as_ref().expect("evaluated").view()).collect();
        crate::reference::check_indices(&node.op, &v)?;
        let value: Value = match node.op {
            Op::Input { index } => Value::from(inputs[index].view()),
            _ => Value::from(apply(&node.op, &v, inputs)),
        };
        let value_view = value.view();
        let e: Vec<Option<&Tensor>> = node.args.iter().map(|a| bounds[a.index()].0.as_ref()).collect();
        let a: Vec<Option<&Tensor>> = node.args.iter().map(|a| bounds[a.index()].1.as_ref()).collect();
        // Contractions weigh errors by their operands' magnitudes: taken once for both bounds.
        let abs: Vec<Tensor> = if matches!(node.op, Op::Einsum(_)) { v.iter().map(|t| t.mapv(f64::abs)).collect() } else { Vec::new() };
        let (own_e, own_a) = match node.op {
            // A cast to a 16-bit float inside the graph rounds there (`u₁₆/u` roundings of the
            // computation's unit, and float16's subnormal spacing near zero); a graph's output
            // rounds where it is stored, which the accuracy rule adds itself.
            Op::Cast { dtype } if dtype.is_half() && !graph.outputs.contains(&id) => {
                let unit = if graph.ty(node.args[0]).dtype == DType::F64 { DType::F64 } else { DType::F32 };
                let ratio = dtype.unit_roundoff() / unit.unit_roundoff();
                let spacing = if dtype == DType::F16 { 2f64.powi(-25) / f64::from(f32::MIN_POSITIVE) } else { 1.0 };
                (Some(value_view.mapv(|f| ratio * f.abs())), Some(ArrayD::from_elem(value_view.raw_dim(), spacing)))
            }
            _ => (own_rounding(&node.op, &value_view, &v, &abs), own_underflow(&node.op, node.ty.dtype, &value_view, &v)),
        };
        let mut rounding = sum(own_e, propagate(&node.op, &value_view, &v, &abs, &e, inputs));
        let underflow = sum(own_a, propagate(&node.op, &value_view, &v, &abs, &a, inputs));
        if let Op::Unary(step @ (UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round)) = node.op {
            rounding = steps_reached(step, &v[0], e[0], a[0]).or(rounding);
        }
        drop(v);
        for &arg in &node.args {
            remaining[arg.index()] -= 1;
            if remaining[arg.index()] == 0 {
                values[arg.index()] = None;
                bounds[arg.index()] = (None, None);
            }
        }
        values[id.index()] = Some(value);
        bounds[id.index()] = (rounding, underflow);
    }
    // Outputs count as uses, so their values and bounds are still here.
    let standard = |t: ArrayViewD<f64>| t.as_standard_layout().into_owned();
    let outputs: Vec<Tensor> = graph.outputs.iter().map(|o| standard(values[o.index()].as_ref().expect("evaluated").view())).collect();
    let bounds = graph
        .outputs
        .iter()
        .zip(&outputs)
        .map(|(o, value)| {
            let whole = |b: &Bound| b.as_ref().map_or_else(|| ArrayD::zeros(value.raw_dim()), |t| standard(t.view()));
            let (rounding, underflow) = &bounds[o.index()];
            ErrorBound { rounding: whole(rounding), underflow: whole(underflow) }
        })
        .collect();
    Ok((outputs, bounds))
}

/// How far from the exact operand a float32 kernel's may lie when it is judged: the accuracy
/// rule's `α·(u·E + λ·A)` with its α = 16 and float32's `u` and `λ` (kernels compute in float32;
/// a float64 kernel's steps are judged as a float32 kernel's, which is looser only near a step).
const STEP_ALPHA: f64 = 16.0;
const STEP_UNIT: f64 = 1.0 / 16_777_216.0;

/// A step function's bound (`floor`, `ceil`, `rint`): zero where every value its operand may
/// take rounds to the same integer, and where the operand's own error reaches a step, the
/// jump across it (so a kernel that rounds the other way there, as honest float32 arithmetic
/// may, is as right). `None` where the operand has no error.
fn steps_reached(step: UnaryOp, a: &ArrayViewD<f64>, e: Option<&Tensor>, l: Option<&Tensor>) -> Bound {
    if e.is_none() && l.is_none() {
        return None;
    }
    let zero = ArrayD::<f64>::zeros(IxDyn(&[]));
    let (e, l) = (e.map_or_else(|| zero.broadcast(a.raw_dim()).expect("a scalar broadcasts"), |t| t.view()), l.map_or_else(|| zero.broadcast(a.raw_dim()).expect("a scalar broadcasts"), |t| t.view()));
    Some(Zip::from(a).and(&e).and(&l).map_collect(|&x, &e, &l| {
        let w = STEP_ALPHA * (STEP_UNIT * e + f64::from(f32::MIN_POSITIVE) * l);
        let (lo, hi) = (step.apply(x - w), step.apply(x + w));
        if lo == hi || x.is_nan() { 0.0 } else { (hi - lo).abs() / STEP_UNIT }
    }))
}

/// `own + propagated`, with NaN (a first-order term undefined: 0·log 0, 0/0) made infinite: the
/// bound is then unknown, never NaN (which the accuracy rule would read as "no error allowed").
fn sum(own: Bound, propagated: Bound) -> Bound {
    let total = match (own, propagated) {
        (Some(a), Some(b)) => a + b,
        (Some(t), None) | (None, Some(t)) => t,
        (None, None) => return None,
    };
    Some(total.mapv_into(|b| if b.is_nan() { f64::INFINITY } else { b }))
}

fn apply(op: &Op, args: &[ArrayViewD<f64>], inputs: &[Tensor]) -> Tensor {
    eval_op(op, args.iter().map(|t| Value::from(t.clone())).collect(), inputs).into_owned()
}

fn sum_factor(n: usize) -> f64 {
    2.0 * (n as f64).sqrt()
}

/// How many units of `u·|f|` a unary function's float32 implementation may err by: 2 per ulp of
/// its allowance (OpenCL's single-precision figures, which SLEEF's u10/u35 functions meet).
fn unary_allowance(u: UnaryOp) -> f64 {
    match u {
        UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => 0.0,
        UnaryOp::Exp | UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Log1p | UnaryOp::Expm1 => 6.0,
        UnaryOp::Tanh => 10.0,
        UnaryOp::Sin | UnaryOp::Cos => 8.0,
        UnaryOp::Erf => 32.0,
        UnaryOp::Atan => 10.0,
    }
}

/// The same for binary operations: correctly rounded arithmetic, `**` 3 ulp, max/min exact.
fn binary_allowance(b: BinaryOp) -> f64 {
    match b {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div => 1.0,
        BinaryOp::Pow => 6.0,
        BinaryOp::Max | BinaryOp::Min | BinaryOp::FloorDiv | BinaryOp::Mod => 0.0,
    }
}

/// The summed-over size of a reduction or contraction.
fn summed(op: &Op, v: &[ArrayViewD<f64>]) -> usize {
    match op {
        Op::Reduce { axes, .. } | Op::SumExp { axes } | Op::SumSqDev { axes } => axes.iter().map(|&a| v[0].shape()[a]).product(),
        // The longest of its running sums.
        Op::Scan { axis, .. } => v[0].shape()[*axis],
        Op::Einsum(spec) => {
            let shapes: Vec<&[usize]> = v.iter().map(|t| t.shape()).collect();
            spec.extent(&shapes, |l| !spec.output.contains(&l))
        }
        _ => 1,
    }
}

/// Per element of a running product, how many factors it multiplies.
fn scan_factors(op: &Op, v: &[ArrayViewD<f64>]) -> Tensor {
    let &Op::Scan { axis, reverse, exclusive, .. } = op else { unreachable!("a scan") };
    crate::reference::scan(v[0].mapv(|_| 1.0).view(), ReduceOp::Sum, axis, reverse, exclusive)
}

/// The roundings behind one element of a contraction summing `n` products: each product rounds
/// k − 1 times, then the sum grows as any sum does.
fn einsum_roundings(spec: &EinsumSpec, n: usize) -> f64 {
    (spec.inputs.len() - 1) as f64 + if n > 1 { sum_factor(n) } else { 1.0 }
}

/// The error an operation adds by rounding its own result, in units of `u`; `None` for exact
/// operations.
fn own_rounding(op: &Op, value: &ArrayViewD<f64>, v: &[ArrayViewD<f64>], abs: &[Tensor]) -> Bound {
    match op {
        // A constant float32 holds exactly (2, 0.5, 1) costs nothing; another rounds once.
        Op::Constant { value: c, .. } if f64::from(*c as f32) == *c => None,
        Op::Constant { .. } => Some(value.mapv(f64::abs)),
        Op::Unary(u) if unary_allowance(*u) > 0.0 => Some(value.mapv(|f| unary_allowance(*u) * f.abs())),
        Op::Binary(b) if binary_allowance(*b) > 0.0 => Some(value.mapv(|f| binary_allowance(*b) * f.abs())),
        Op::Reduce { op: ReduceOp::Sum, axes } => {
            let abs = v[0].mapv(f64::abs);
            Some(apply(&Op::Reduce { op: ReduceOp::Sum, axes: axes.clone() }, &[abs.view()], &[]) * sum_factor(summed(op, v)))
        }
        Op::Scan { op: ReduceOp::Sum, .. } => Some(apply(op, &[v[0].mapv(f64::abs).view()], &[]) * sum_factor(summed(op, v))),
        // A running product of m factors: m − 1 multiplications, as a product's.
        Op::Scan { op: ReduceOp::Prod, .. } => Some(Zip::from(value).and(&scan_factors(op, v)).map_collect(|&f, &m| (m - 1.0).max(0.0) * f.abs())),
        // n − 1 multiplications, each erring by `u` of its partial product, which the factors
        // after it scale to `u·|f|`, whatever the order.
        Op::Reduce { op: ReduceOp::Prod, .. } => Some(value.mapv(|f| summed(op, v).saturating_sub(1) as f64 * f.abs())),
        // Each term `exp(x − m)` errs by the exponential's allowance and by the rounding of
        // `x − m` (`|x − m|` ulps of it, times the term); then the sum rounds as sums do.
        Op::SumExp { axes } => {
            let (terms, shifted) = sum_exp_terms(&v[0], axes);
            let weighted = Zip::from(&terms).and(&shifted).map_collect(|&e, &d| e * d.abs());
            Some(value.mapv(|f| (sum_factor(summed(op, v)) + unary_allowance(UnaryOp::Exp)) * f.abs()) + sum_over(weighted, axes))
        }
        // Each deviation errs by its subtraction and by the mean's own sum (`2√n·Σ|x|/n`), a
        // square doubles a relative error; then the sum rounds as sums do.
        Op::SumSqDev { axes } => {
            let n = summed(op, v);
            let d = crate::reference::deviations(v[0].view(), axes);
            let mean_error = sum_over(v[0].mapv(f64::abs), axes) * (sum_factor(n) / n as f64);
            let spread = sum_over(d.mapv(f64::abs), axes);
            Some(value.mapv(|f| (sum_factor(n) + 3.0) * f.abs()) + &(spread * mean_error * 2.0))
        }
        Op::Einsum(spec) => Some(crate::einsum::evaluate_magnitudes(spec, &abs.iter().map(|t| t.view()).collect::<Vec<_>>()) * einsum_roundings(spec, summed(op, v))),
        _ => None,
    }
}

/// The underflow an operation adds by rounding its own result, in units of `λ`; for an input,
/// 1 where it is subnormal (and may be read as zero); `None` where it adds none.
fn own_underflow(op: &Op, dtype: DType, value: &ArrayViewD<f64>, v: &[ArrayViewD<f64>]) -> Bound {
    let roundings = match op {
        Op::Input { .. } => {
            let smallest_normal = if dtype == DType::F64 { f64::MIN_POSITIVE } else { f32::MIN_POSITIVE as f64 };
            let subnormal = |x: f64| x != 0.0 && x.abs() < smallest_normal;
            return value.iter().any(|&x| subnormal(x)).then(|| value.mapv(|x| if subnormal(x) { 1.0 } else { 0.0 }));
        }
        Op::Constant { .. } => 1.0,
        Op::Unary(u) if unary_allowance(*u) > 0.0 => 1.0,
        Op::Binary(b) if binary_allowance(*b) > 0.0 => 1.0,
        Op::Reduce { op: ReduceOp::Sum, .. } | Op::Scan { op: ReduceOp::Sum, .. } => sum_factor(summed(op, v)),
        // As a product's, per prefix.
        &Op::Scan { op: ReduceOp::Prod, axis, reverse, exclusive } => {
            let grows = crate::reference::scan(v[0].mapv(|x| x.abs().max(1.0)).view(), ReduceOp::Prod, axis, reverse, exclusive);
            return Some(Zip::from(&grows).and(&scan_factors(op, v)).map_collect(|&g, &m| g * (m - 1.0).max(0.0)));
        }
        // Each of the n − 1 products may flush to zero or round a subnormal, by λ, and the
        // factors multiplied in after it (in whatever order the kernel multiplies) scale that
        // by at most the product of the factors larger than 1.
        Op::Reduce { op: ReduceOp::Prod, axes } => {
            let n = summed(op, v);
            let grows = apply(&Op::Reduce { op: ReduceOp::Prod, axes: axes.clone() }, &[v[0].mapv(|x| x.abs().max(1.0)).view()], &[]);
            return Some(grows * n.saturating_sub(1) as f64);
        }
        Op::SumExp { .. } => sum_factor(summed(op, v)) + 1.0,
        Op::SumSqDev { .. } => sum_factor(summed(op, v)) + 2.0,
        Op::Einsum(spec) => einsum_roundings(spec, summed(op, v)),
        _ => return None,
    };
    Some(ArrayD::from_elem(value.raw_dim(), roundings))
}

/// `Σ |∂f/∂xₖ| · e(xₖ)`: how an operation carries its operands' errors `e` (either kind);
/// `None` when no operand has any.
fn propagate(op: &Op, value: &ArrayViewD<f64>, v: &[ArrayViewD<f64>], abs: &[Tensor], e: &[Option<&Tensor>], inputs: &[Tensor]) -> Bound {
    if e.iter().all(Option::is_none) {
        return None;
    }
    // An operand without error, as a zero of its shape that allocates nothing.
    let zero = ArrayD::<f64>::zeros(IxDyn(&[]));
    let ev: Vec<ArrayViewD<f64>> = e.iter().zip(v).map(|(e, v)| e.map_or_else(|| zero.broadcast(v.raw_dim()).expect("a scalar broadcasts"), |e| e.view())).collect();
    Some(match op {
        // Indices are exact where they are the operands' (an index result is judged by the
        // values it points at, which carry their own bounds).
        Op::Input { .. } | Op::Iota { .. } | Op::Constant { .. } | Op::Compare(_) | Op::ArgReduce { .. } | Op::ArgSort { .. } => return None,
        // Data movement: errors move with the values.
        Op::Broadcast { .. } | Op::Reshape { .. } | Op::Transpose { .. } | Op::Slice { .. } | Op::Concat { .. } | Op::Cast { .. } => apply(op, &ev, inputs),
        // The `k`-th smallest of values each within `e` of the exact ones is within the
        // largest `e` of the exact `k`-th smallest: the lane's largest error, everywhere in it.
        Op::Sort { axis } => {
            let largest = crate::reference::max_keepdims(ev[0].view(), &[*axis]);
            largest.broadcast(ev[0].raw_dim()).expect("a lane's maximum broadcasts along it").to_owned()
        }
        // The errors at the elements read (indices are exact integers).
        Op::Gather { .. } => apply(op, &[&ev[..1], &v[1..]].concat(), inputs),
        // Linear: the running sums of the errors.
        Op::Scan { op: ReduceOp::Sum, .. } => apply(op, &ev, inputs),
        // The selected element's error: at most the largest in the prefix (none before the
        // first element of an exclusive scan).
        &Op::Scan { op: ReduceOp::Max | ReduceOp::Min, axis, reverse, exclusive } => {
            crate::reference::scan(ev[0].view(), ReduceOp::Max, axis, reverse, exclusive).mapv(|e| e.max(0.0))
        }
        // `B_k = B_{k−1}·|x_k| + e_k·|P_{k−1}|`: each factor's error scaled by the others of
        // its prefix, exact where factors are 0.
        &Op::Scan { op: ReduceOp::Prod, axis, reverse, exclusive } => {
            let mut bound = v[0].to_owned();
            for ((mut out, x), e) in bound.lanes_mut(ndarray::Axis(axis)).into_iter().zip(v[0].lanes(ndarray::Axis(axis))).zip(ev[0].lanes(ndarray::Axis(axis))) {
                let n = x.len();
                let (mut b, mut p) = (0.0, 1.0f64);
                for i in 0..n {
                    let k = if reverse { n - 1 - i } else { i };
                    let next = b * x[k].abs() + e[k] * p.abs();
                    out[k] = if exclusive { b } else { next };
                    b = next;
                    p *= x[k];
                }
            }
            bound
        }
        // `∂/∂xₖ = exp(xₖ − m)` for every term, and the maximum's error moves every term: at
        // most the sum times the largest error.
        Op::SumExp { axes } => {
            let (terms, _) = sum_exp_terms(&v[0], axes);
            let weighted = Zip::from(&terms).and(&ev[0]).map_collect(|&t, &e| t * e);
            let largest = apply(&Op::Reduce { op: ReduceOp::Max, axes: axes.clone() }, &ev[..1], inputs);
            sum_over(weighted, axes) + &(largest * value)
        }
        // `∂/∂xₖ = 2(xₖ − mean)`: the mean's own derivatives sum to zero.
        Op::SumSqDev { axes } => {
            let d = crate::reference::deviations(v[0].view(), axes);
            sum_over(Zip::from(&d).and(&ev[0]).map_collect(|&d, &e| 2.0 * d.abs() * e), axes)
        }
        Op::Select => Zip::from(&v[0]).and(&ev[1]).and(&ev[2]).map_collect(|&c, &a, &b| if c != 0.0 { a } else { b }),
        Op::Unary(u) => Zip::from(value).and(&v[0]).and(&ev[0]).map_collect(|&f, &a, &ea| match u {
            UnaryOp::Neg | UnaryOp::Abs => ea,
            UnaryOp::Exp => f.abs() * ea,
            UnaryOp::Log => ea / a.abs(),
            UnaryOp::Sqrt => ea / (2.0 * f.abs()).max(f64::MIN_POSITIVE),
            UnaryOp::Tanh => (1.0 - f * f) * ea,
            UnaryOp::Log1p => ea / (1.0 + a).abs(),
            UnaryOp::Expm1 => (f + 1.0).abs() * ea,
            // |sin(a + e) − sin(a)| ≤ |e|, and so for cos.
            UnaryOp::Sin | UnaryOp::Cos => ea,
            UnaryOp::Erf => std::f64::consts::FRAC_2_SQRT_PI * (-a * a).exp() * ea,
            UnaryOp::Atan => ea / (1.0 + a * a),
            // Flat but for its steps, where the bound is the jump (`steps_reached`).
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => 0.0,
        }),
        Op::Binary(b) => Zip::from(value).and(&v[0]).and(&v[1]).and(&ev[0]).and(&ev[1]).map_collect(|&f, &a, &c, &ea, &ec| match b {
            BinaryOp::Add | BinaryOp::Sub => ea + ec,
            BinaryOp::Mul => c.abs() * ea + a.abs() * ec,
            BinaryOp::Div => ea / c.abs() + a.abs() * ec / (c * c),
            BinaryOp::Pow => {
                let da = if ea == 0.0 { 0.0 } else { (c * crate::reference::pow(a, c - 1.0)).abs() * ea };
                // f·ln|a| tends to 0 where f = a^c does (a → 0 with c > 0).
                let dc = if ec == 0.0 || f == 0.0 { 0.0 } else { (f * a.abs().ln()).abs() * ec };
                da + dc
            }
            BinaryOp::Max | BinaryOp::Min => ea.max(ec),
            // Of integers, which carry no error.
            BinaryOp::FloorDiv | BinaryOp::Mod => 0.0,
        }),
        Op::Reduce { op: r, axes } => match r {
            ReduceOp::Sum => apply(op, &ev[..1], inputs),
            // The selected element's error: at most the largest along the axes.
            ReduceOp::Max | ReduceOp::Min => apply(&Op::Reduce { op: ReduceOp::Max, axes: axes.clone() }, &ev[..1], inputs),
            // `∂/∂xₖ = Π_{j≠k} xⱼ`.
            ReduceOp::Prod => products_but_one(&v[0], &ev[0], axes),
        },
        // For `Σ Π xⱼ`: each erring operand's error weighted by the other factors' magnitudes.
        Op::Einsum(spec) => {
            let mut bound: Option<Tensor> = None;
            for (j, ej) in e.iter().enumerate() {
                let Some(ej) = ej else { continue };
                let mut operands: Vec<ArrayViewD<f64>> = abs.iter().map(|t| t.view()).collect();
                operands[j] = ej.view();
                let term = crate::einsum::evaluate_magnitudes(spec, &operands);
                bound = Some(match bound {
                    Some(b) => b + term,
                    None => term,
                });
            }
            return bound;
        }
    })
}

/// A `sum_exp`'s terms `exp(x − m)` and the shifted values `x − m`, at the operand's shape.
fn sum_exp_terms(x: &ArrayViewD<f64>, axes: &[usize]) -> (Tensor, Tensor) {
    let m = crate::reference::max_keepdims(x.view(), axes);
    let shifted = Zip::from(x).and_broadcast(&m).map_collect(|&x, &m| x - m);
    (shifted.mapv(f64::exp), shifted)
}

/// `Σₖ eₖ·Π_{j≠k} |xⱼ|` over `axes`, per element of the product's result: each factor's error
/// scaled by the other factors (by prefix and suffix products, exact where factors are 0).
fn products_but_one(x: &ArrayViewD<f64>, e: &ArrayViewD<f64>, axes: &[usize]) -> Tensor {
    let rank = x.ndim();
    let kept: Vec<usize> = (0..rank).filter(|d| !axes.contains(d)).collect();
    let order: Vec<usize> = kept.iter().chain(axes).copied().collect();
    let shape: Vec<usize> = kept.iter().map(|&d| x.shape()[d]).collect();
    let n: usize = axes.iter().map(|&d| x.shape()[d]).product();
    let lanes = |t: &ArrayViewD<f64>| t.view().permuted_axes(order.clone()).as_standard_layout().into_owned().into_raw_vec_and_offset().0;
    let (xs, es) = (lanes(x), lanes(&e.broadcast(x.raw_dim()).expect("the error has the operand's shape")));
    let mut out = Vec::with_capacity(shape.iter().product());
    for (xr, er) in xs.chunks(n.max(1)).zip(es.chunks(n.max(1))) {
        let mut before = vec![1.0; n + 1];
        for k in 0..n {
            before[k + 1] = before[k] * xr[k].abs();
        }
        let (mut after, mut total) = (1.0, 0.0);
        for k in (0..n).rev() {
            total += er[k] * before[k] * after;
            after *= xr[k].abs();
        }
        out.push(total);
    }
    out.resize(shape.iter().product(), 0.0);
    ArrayD::from_shape_vec(IxDyn(&shape), out).expect("one value per output element")
}

fn sum_over(t: Tensor, axes: &[usize]) -> Tensor {
    apply(&Op::Reduce { op: ReduceOp::Sum, axes: axes.to_vec() }, &[t.view()], &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A running product of products, computed in float32 as a kernel would, stays within its
    /// bound, forward and reversed, through a zero, and the bound grows along the lane.
    #[test]
    fn a_running_product_in_float32_stays_within_its_bound() {
        for flags in ["", ",reverse", ",exclusive", ",reverse,exclusive"] {
            let g = crate::parse(&format!(
                "kernel k(x: f32[2,12], y: f32[2,12]) {{\n  %0: f32[2,12] = input[x]\n  %1: f32[2,12] = input[y]\n  %2: f32[2,12] = mul %0, %1\n  %3: f32[2,12] = cumprod[1{flags}] %2\n  return %3\n}}\n"
            ))
            .unwrap();
            let x: Vec<f64> = (0..24).map(|i| f64::from((1.0 + 0.37 * ((i * 7) % 11) as f32 - 1.8).recip())).collect();
            let mut y: Vec<f64> = (0..24).map(|i| f64::from(1.3f32 - 0.11 * i as f32)).collect();
            y[17] = 0.0;
            let inputs = vec![ndarray::Array::from_shape_vec(vec![2, 12], x.clone()).unwrap().into_dyn(), ndarray::Array::from_shape_vec(vec![2, 12], y.clone()).unwrap().into_dyn()];
            let (r, e) = evaluate_with_error_bounds(&g, &inputs).unwrap();
            let u = f64::from(f32::EPSILON) / 2.0;
            let (reverse, exclusive) = (flags.contains("reverse"), flags.contains("exclusive"));
            for lane in 0..2 {
                let mut running = 1.0f32;
                for i in 0..12 {
                    let k = lane * 12 + if reverse { 11 - i } else { i };
                    let product = x[k] as f32 * y[k] as f32;
                    let before = running;
                    running *= product;
                    let computed = if exclusive { before } else { running };
                    let (exact, bound) = (r[0].as_slice().unwrap()[k], e[0].rounding.as_slice().unwrap()[k]);
                    assert!((f64::from(computed) - exact).abs() <= bound * u, "{flags}: element {k}: {computed} vs {exact}, bound {bound}");
                }
            }
            // Relative to the value, the bound grows with the factors multiplied.
            let relative = |k: usize| e[0].rounding.as_slice().unwrap()[k] / r[0].as_slice().unwrap()[k].abs();
            let (first, last) = if reverse { (10, 0) } else { (1, 11) };
            assert!(relative(last) > relative(first), "{flags}: {} vs {}", relative(last), relative(first));
        }
    }

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

    /// `floor(x·y)`: no error where the product lies far from an integer or is exact input
    /// data; the jump of one where its rounding may reach an integer; `rint` of an input is
    /// exact even at a tie.
    #[test]
    fn a_step_function_allows_the_jump_only_where_its_operand_may_reach_a_step() {
        let g = crate::parse(
            "kernel k(x: f32[3], y: f32[3]) {\n  %0: f32[3] = input[x]\n  %1: f32[3] = input[y]\n  %2: f32[3] = mul %0, %1\n  %3: f32[3] = floor %2\n  %4: f32[3] = rint %0\n  return %3, %4\n}\n",
        )
        .unwrap();
        let near = 3.0 + 1e-9;
        let inputs = vec![ndarray::arr1(&[near, 2.5, 1e7]).into_dyn(), ndarray::arr1(&[1.0, 1.0, 0.3]).into_dyn()];
        let (r, e) = evaluate_with_error_bounds(&g, &inputs).unwrap();
        assert_eq!(r[0].as_slice().unwrap(), &[3.0, 2.0, 3e6]);
        let jump = e[0].rounding.as_slice().unwrap();
        assert_eq!(jump[0], 1.0 / STEP_UNIT, "3 + 1e-9 may round to 3 or below");
        assert_eq!(jump[1], 0.0, "2.5 is far from a step");
        assert!(jump[2] > 0.0, "3e6 is within float32's rounding of an integer step");
        assert_eq!(r[1].as_slice().unwrap(), &[3.0, 2.0, 1e7]);
        assert!(e[1].rounding.iter().all(|&b| b == 0.0), "an input is exact: {:?}", e[1]);
    }
}
