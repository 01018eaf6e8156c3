//! The float64 reference interpreter: numpy's meaning of a graph, the verifier's oracle.
//!
//! Every dtype is evaluated in float64 (booleans as 0/1, integers exactly while below 2^53);
//! casts to a float dtype do not round. Contractions run as blocked matrix products.

use ndarray::{ArrayD, ArrayViewD, Axis, CowArray, IxDyn, Slice, Zip};

use crate::graph::{Graph, GraphError};
use crate::op::{BinaryOp, CmpOp, GatherAxis, Op, ReduceOp};
use crate::ty::DType;

/// A float64 array, row-major when it leaves the interpreter.
pub type Tensor = ArrayD<f64>;

/// A value inside the interpreter: inputs are borrowed, never copied just to be read.
pub(crate) type Value<'a> = CowArray<'a, f64, IxDyn>;

/// Evaluates `graph` on one array per parameter, in parameter order. Shapes must match the
/// parameters' exactly; the element types of the inputs are not checked (they are all f64 here).
pub fn evaluate(graph: &Graph, inputs: &[Tensor]) -> Result<Vec<Tensor>, GraphError> {
    check_inputs(graph, inputs)?;
    let mut remaining = graph.use_counts();
    let mut values: Vec<Option<Value>> = vec![None; graph.nodes.len()];
    for id in graph.ids() {
        let node = graph.node(id);
        let mut args: Vec<Value> = Vec::with_capacity(node.args.len());
        for &a in &node.args {
            remaining[a.index()] -= 1;
            let v = if remaining[a.index()] == 0 { values[a.index()].take() } else { values[a.index()].clone() };
            args.push(v.expect("operand evaluated before its use"));
        }
        check_indices(&node.op, &args.iter().map(|a| a.view()).collect::<Vec<_>>())?;
        let value = eval_op(&node.op, args, inputs);
        debug_assert_eq!(value.shape(), node.ty.shape.as_slice(), "{id} = {}", node.op.name());
        if remaining[id.index()] > 0 {
            values[id.index()] = Some(value);
        }
    }
    let mut outputs = Vec::with_capacity(graph.outputs.len());
    for (i, &o) in graph.outputs.iter().enumerate() {
        let later = graph.outputs[i + 1..].contains(&o);
        let v = if later { values[o.index()].clone() } else { values[o.index()].take() };
        outputs.push(v.expect("output evaluated").as_standard_layout().into_owned());
    }
    Ok(outputs)
}

/// One input per parameter, each of the parameter's shape.
pub(crate) fn check_inputs(graph: &Graph, inputs: &[Tensor]) -> Result<(), GraphError> {
    if inputs.len() != graph.params.len() {
        return Err(GraphError::Op {
            op: "input",
            message: format!("the kernel takes {} inputs, got {}", graph.params.len(), inputs.len()),
        });
    }
    for (param, input) in graph.params.iter().zip(inputs) {
        if input.shape() != param.ty.shape.as_slice() {
            return Err(GraphError::Op {
                op: "input",
                message: format!("`{}` must have shape {:?}, got {:?}", param.name, param.ty.shape, input.shape()),
            });
        }
    }
    Ok(())
}

/// `f` applied elementwise, in place when the value is not borrowed.
fn map(a: Value, f: impl Fn(f64) -> f64) -> Tensor {
    if a.is_view() {
        a.mapv(f)
    } else {
        let mut a = a.into_owned();
        a.mapv_inplace(f);
        a
    }
}

pub(crate) fn eval_op<'a>(op: &Op, mut args: Vec<Value<'a>>, inputs: &'a [Tensor]) -> Value<'a> {
    let owned = match op {
        Op::Input { index } => return CowArray::from(inputs[*index].view()),
        Op::Transpose { perm } => return args.pop().unwrap().permuted_axes(IxDyn(perm)),
        Op::Slice { axes } => {
            let mut a = args.pop().unwrap();
            a.slice_each_axis_inplace(|ax| {
                let s = axes[ax.axis.index()];
                if s.len == 0 {
                    return Slice::new(0, Some(0), 1);
                }
                let last = s.start as isize + s.step as isize * (s.len as isize - 1);
                if s.step > 0 {
                    Slice::new(s.start as isize, Some(last + 1), s.step as isize)
                } else {
                    Slice::new(last, Some(s.start as isize + 1), s.step as isize)
                }
            });
            return a;
        }
        Op::Constant { value, .. } => ndarray::arr0(*value).into_dyn(),
        Op::Iota { shape, axis, .. } => ArrayD::from_shape_fn(IxDyn(shape), |ix| ix[*axis] as f64),
        Op::Unary(u) => {
            let u = *u;
            map(args.pop().unwrap(), move |x| u.apply(x))
        }
        Op::Binary(b) => {
            let f: fn(f64, f64) -> f64 = match b {
                BinaryOp::Add => |x, y| x + y,
                BinaryOp::Sub => |x, y| x - y,
                BinaryOp::Mul => |x, y| x * y,
                BinaryOp::Div => |x, y| x / y,
                BinaryOp::Pow => pow,
                BinaryOp::Max => |x, y| if x.is_nan() || y.is_nan() { f64::NAN } else { x.max(y) },
                BinaryOp::Min => |x, y| if x.is_nan() || y.is_nan() { f64::NAN } else { x.min(y) },
                BinaryOp::FloorDiv => |x, y| if y == 0.0 { 0.0 } else { (x / y).floor() },
                BinaryOp::Mod => |x, y| if y == 0.0 { 0.0 } else { x - y * (x / y).floor() },
            };
            Zip::from(&args[0]).and(&args[1]).map_collect(|&x, &y| f(x, y))
        }
        Op::Compare(c) => {
            let f: fn(f64, f64) -> bool = match c {
                CmpOp::Lt => |x, y| x < y,
                CmpOp::Le => |x, y| x <= y,
                CmpOp::Gt => |x, y| x > y,
                CmpOp::Ge => |x, y| x >= y,
                CmpOp::Eq => |x, y| x == y,
                CmpOp::Ne => |x, y| x != y,
            };
            Zip::from(&args[0]).and(&args[1]).map_collect(|&x, &y| f(x, y) as u8 as f64)
        }
        Op::Select => Zip::from(&args[0])
            .and(&args[1])
            .and(&args[2])
            .map_collect(|&c, &t, &e| if c != 0.0 { t } else { e }),
        Op::Cast { dtype } => match dtype {
            DType::Bool => map(args.pop().unwrap(), |x| (x != 0.0) as u8 as f64),
            DType::I64 | DType::I32 => map(args.pop().unwrap(), f64::trunc),
            d @ (DType::I8 | DType::U8) => map(args.pop().unwrap(), |x| d.round(x)),
            // Float casts are exact here: the reference is the exact value, and the rounding a
            // cast costs is in the error bound (`error_bound`), a 16-bit output's in the judge.
            DType::F32 | DType::F64 | DType::F16 | DType::BF16 => return args.pop().unwrap(),
        },
        Op::Broadcast { shape } => args[0].broadcast(IxDyn(shape)).expect("type-checked broadcast").to_owned(),
        Op::Reshape { shape } => {
            let a = args.pop().unwrap();
            if a.is_standard_layout() {
                return a.into_shape_with_order(IxDyn(shape)).expect("type-checked reshape");
            }
            a.as_standard_layout().into_owned().into_shape_with_order(IxDyn(shape)).expect("type-checked reshape")
        }
        Op::Concat { axis } => {
            let views: Vec<_> = args.iter().map(|a| a.view()).collect();
            ndarray::concatenate(Axis(*axis), &views).expect("type-checked concat")
        }
        Op::Reduce { op, axes } => {
            let a = args.pop().unwrap();
            if axes.is_empty() {
                return a;
            }
            reduce_axes(a.view(), *op, axes, false)
        }
        Op::Scan { op, axis, reverse, exclusive } => scan(args[0].view(), *op, *axis, *reverse, *exclusive),
        Op::SumExp { axes } => {
            let a = args.pop().unwrap();
            let m = max_keepdims(a.view(), axes);
            let e = Zip::from(&a).and_broadcast(&m).map_collect(|&x, &m| (x - m).exp());
            reduce_axes(e.view(), ReduceOp::Sum, axes, false)
        }
        Op::SumSqDev { axes } => {
            let a = args.pop().unwrap();
            reduce_axes(sum_sq_dev_terms(a.view(), axes).view(), ReduceOp::Sum, axes, false)
        }
        Op::Einsum(spec) => crate::einsum::evaluate(spec, args),
        Op::Gather { shape, from } => gather(shape, from, &args),
        Op::ArgReduce { op, axis } => args[0].map_axis(Axis(*axis), |lane| first_extreme(lane.iter().copied(), *op) as f64),
        Op::Sort { axis } | Op::ArgSort { axis, .. } => {
            let mut out = args.pop().unwrap().into_owned();
            let values = matches!(op, Op::Sort { .. });
            for mut lane in out.lanes_mut(Axis(*axis)) {
                let x: Vec<f64> = lane.to_vec();
                let order = sorted_order(x.iter().copied());
                for (slot, &i) in lane.iter_mut().zip(&order) {
                    *slot = if values { x[i] } else { i as f64 };
                }
            }
            out
        }
    };
    CowArray::from(owned)
}

/// numpy's `argmax` (`op` Max) or `argmin` (Min) of one lane: the index of its first NaN if it
/// has one, else of its first largest (smallest) element.
pub fn first_extreme(lane: impl Iterator<Item = f64>, op: ReduceOp) -> usize {
    let mut best: Option<(usize, f64)> = None;
    for (i, x) in lane.enumerate() {
        if x.is_nan() {
            return i;
        }
        let better = match best {
            None => true,
            Some((_, b)) => if op == ReduceOp::Min { x < b } else { x > b },
        };
        if better {
            best = Some((i, x));
        }
    }
    best.map_or(0, |(i, _)| i)
}

/// For an index output (see [`Graph::index_source`]): the node whose indices it holds, and for
/// each of its elements, in standard order, the flat position in that node's result of the
/// index it holds (the views between them applied to the positions themselves).
pub fn index_positions(graph: &crate::Graph, output: crate::NodeId) -> Option<(crate::NodeId, Vec<usize>)> {
    let source = graph.index_source(output)?;
    let mut chain = Vec::new();
    let mut n = output;
    while n != source {
        chain.push(n);
        n = graph.node(n).args[0];
    }
    let shape = graph.ty(source).shape.clone();
    let count: usize = shape.iter().product();
    let mut positions: Tensor = ndarray::Array::from_iter((0..count).map(|p| p as f64)).into_shape_with_order(IxDyn(&shape)).expect("the source's size");
    for &n in chain.iter().rev() {
        positions = eval_op(&graph.node(n).op, vec![Value::from(positions)], &[]).into_owned();
    }
    Some((source, positions.as_standard_layout().iter().map(|&p| p as usize).collect()))
}

/// The indices that sort a lane as numpy's stable sort does: ascending, NaNs last, equal
/// elements in index order (`-0.0` equals `0.0`).
pub fn sorted_order(lane: impl Iterator<Item = f64>) -> Vec<usize> {
    let x: Vec<f64> = lane.collect();
    let mut order: Vec<usize> = (0..x.len()).collect();
    let key = |v: f64| if v.is_nan() { (true, 0.0) } else { (false, v) };
    order.sort_by(|&i, &j| key(x[i]).partial_cmp(&key(x[j])).expect("NaNs made keys").then(i.cmp(&j)));
    order
}

/// A gather's index `v` on an axis of `n` elements as numpy takes it (negative from the end),
/// or `None` outside `-n..n`.
pub fn gather_index(v: f64, n: usize) -> Option<usize> {
    let n = n as f64;
    let i = if v < 0.0 { v + n } else { v };
    (0.0..n).contains(&i).then_some(i as usize)
}

/// The error numpy raises for a gather's index out of range, if one is.
pub(crate) fn check_indices(op: &Op, args: &[ArrayViewD<f64>]) -> Result<(), GraphError> {
    let Op::Gather { from, .. } = op else { return Ok(()) };
    let extents = from.iter().zip(args[0].shape()).filter(|(a, _)| **a == GatherAxis::Index).map(|(_, &n)| n);
    for (index, n) in args[1..].iter().zip(extents) {
        if let Some(&v) = index.iter().find(|&&v| gather_index(v, n).is_none()) {
            return Err(GraphError::Op { op: "gather", message: format!("index {v} is out of bounds for an axis of size {n}") });
        }
    }
    Ok(())
}

/// `gather` (see [`Op::Gather`]); an index out of range reads the nearest element.
fn gather(shape: &[usize], from: &[GatherAxis], args: &[Value]) -> Tensor {
    let source = &args[0];
    let extents = source.shape().to_vec();
    let mut at = vec![0usize; from.len()];
    ArrayD::from_shape_fn(IxDyn(shape), |ix| {
        let mut k = 1;
        for (j, a) in from.iter().enumerate() {
            at[j] = match *a {
                GatherAxis::Along { start, step: 0, .. } => start,
                GatherAxis::Along { axis, start, step } => (start as i64 + step * ix[axis] as i64) as usize,
                GatherAxis::Window { axis, start, step, window, dilation } => (start as i64 + step * ix[axis] as i64 + dilation * ix[window] as i64) as usize,
                GatherAxis::Index => {
                    let v = args[k][&ix];
                    k += 1;
                    gather_index(v, extents[j]).unwrap_or(if v < 0.0 { 0 } else { extents[j] - 1 })
                }
            };
        }
        source[IxDyn(&at)]
    })
}

/// The maximum over `axes` (NaN if any element is), keeping them as axes of size 1.
pub(crate) fn max_keepdims(a: ArrayViewD<f64>, axes: &[usize]) -> Tensor {
    reduce_axes(a, ReduceOp::Max, axes, true)
}

/// `x − mean x` over `axes`, at the operand's shape.
pub(crate) fn deviations(a: ArrayViewD<f64>, axes: &[usize]) -> Tensor {
    let n: usize = axes.iter().map(|&ax| a.shape()[ax]).product();
    let mean = reduce_axes(a.view(), ReduceOp::Sum, axes, true) / n as f64;
    Zip::from(&a).and_broadcast(&mean).map_collect(|&x, &m| x - m)
}

/// The terms `(x − mean x)²` of a `sum_sq_dev`.
fn sum_sq_dev_terms(a: ArrayViewD<f64>, axes: &[usize]) -> Tensor {
    deviations(a, axes).mapv(|d| d * d)
}

/// numpy's `cumsum` along `axis`, optionally from the end and excluding each element itself.
pub(crate) fn scan(a: ArrayViewD<f64>, op: ReduceOp, axis: usize, reverse: bool, exclusive: bool) -> Tensor {
    let (identity, step) = fold(op);
    let mut out = a.to_owned();
    for mut lane in out.lanes_mut(Axis(axis)) {
        let n = lane.len();
        let mut running = identity;
        for i in 0..n {
            let k = if reverse { n - 1 - i } else { i };
            let x = lane[k];
            if exclusive {
                lane[k] = running;
                running = step(running, x);
            } else {
                running = step(running, x);
                lane[k] = running;
            }
        }
    }
    out
}

/// A reduction's identity and its step, as numpy combines (a NaN propagates through a maximum).
fn fold(op: ReduceOp) -> (f64, fn(f64, f64) -> f64) {
    match op {
        ReduceOp::Sum => (0.0, |s, x| s + x),
        ReduceOp::Max => (f64::NEG_INFINITY, |m, x| if m.is_nan() || x.is_nan() { f64::NAN } else { m.max(x) }),
        ReduceOp::Min => (f64::INFINITY, |m, x| if m.is_nan() || x.is_nan() { f64::NAN } else { m.min(x) }),
        ReduceOp::Prod => (1.0, |p, x| p * x),
    }
}

/// Reduces `axes` of `a` (ascending), the last first; `keep` keeps each as an axis of size 1.
fn reduce_axes(a: ArrayViewD<f64>, op: ReduceOp, axes: &[usize], keep: bool) -> Tensor {
    let mut out: Option<Tensor> = None;
    for &axis in axes.iter().rev() {
        let from = out.as_ref().map_or(a.view(), |o| o.view());
        let reduced = reduce_axis(from, op, Axis(axis));
        out = Some(if keep { reduced.insert_axis(Axis(axis)) } else { reduced });
    }
    out.unwrap_or_else(|| a.to_owned())
}

/// Reduces `axis` of `a`. Folding subview by subview (ndarray's `fold_axis`) pays for a view
/// per step of the axis — seconds for a reduction over millions of elements into a few — so
/// where the axis is the contiguous one, or the views would be small, each lane is folded
/// instead (along the memory when contiguous; strided reads of a few lanes cost less than
/// millions of views otherwise).
fn reduce_axis(a: ArrayViewD<f64>, op: ReduceOp, axis: Axis) -> Tensor {
    let (init, step) = fold(op);
    let view_elements = a.len().checked_div(a.len_of(axis)).unwrap_or(0);
    if a.stride_of(axis).unsigned_abs() == 1 || view_elements < SMALL_VIEW {
        return Zip::from(a.lanes(axis)).map_collect(|lane| if op == ReduceOp::Sum { lane.sum() } else { lane.fold(init, |m, &x| step(m, x)) });
    }
    match op {
        ReduceOp::Sum => a.sum_axis(axis),
        _ => a.fold_axis(axis, init, |&m, &x| step(m, x)),
    }
}

/// Subviews of fewer elements than this are too small to fold a reduction by (see
/// [`reduce_axis`]).
const SMALL_VIEW: usize = 64;

/// `x` to the power `y`, as `f64::powf`, with the common exponents 2 and 1 by a product and
/// a copy (exact, and the reference of a variance computes millions of squares).
pub(crate) fn pow(x: f64, y: f64) -> f64 {
    if y == 2.0 {
        x * x
    } else if y == 1.0 {
        x
    } else {
        x.powf(y)
    }
}

