//! Graph operations and their type rules: every op's result type is inferred from its operands.

use crate::einsum::EinsumSpec;
use crate::ty::{DType, TensorType};
use crate::GraphError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnaryOp {
    Neg,
    Exp,
    Log,
    Sqrt,
    Tanh,
    Abs,
    /// `log(1 + x)`, accurate for small x.
    Log1p,
    /// `exp(x) - 1`, accurate for small x.
    Expm1,
    Sin,
    Cos,
    Floor,
    Ceil,
    /// numpy's `rint`/`round`: to the nearest integer, ties to even.
    Round,
    /// The error function (`scipy.special.erf`).
    Erf,
    /// The arc tangent (`np.arctan`; `arcsin`, `arccos` and `arctan2` are written with it).
    Atan,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    /// numpy's `maximum`: NaN if either operand is NaN.
    Max,
    /// numpy's `minimum`: NaN if either operand is NaN.
    Min,
    /// numpy's `floor_divide` (`//`) of integers: the quotient rounded toward −∞; 0 where the
    /// divisor is 0 (numpy warns and gives 0).
    FloorDiv,
    /// numpy's `remainder` (`%`) of integers: with the divisor's sign, `a − b·(a // b)`; 0
    /// where the divisor is 0.
    Mod,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    /// numpy's `prod`.
    Prod,
}

/// One axis of a strided slice: output index `i` reads input index `start + i * step`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SliceAxis {
    pub start: usize,
    pub step: i64,
    pub len: usize,
}

impl SliceAxis {
    pub fn full(len: usize) -> SliceAxis {
        SliceAxis { start: 0, step: 1, len }
    }

    /// Whether every index this axis reads lies in `0..extent`.
    pub fn fits(&self, extent: usize) -> bool {
        if self.len == 0 {
            return true;
        }
        let last = self.start as i64 + self.step * (self.len as i64 - 1);
        self.step != 0 && self.start < extent && last >= 0 && (last as usize) < extent
    }
}

/// How a gather reads one axis of its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GatherAxis {
    /// At `start + step · i`, `i` the result's index on its axis `axis`; with `step` 0 at
    /// `start` alone (a broadcast), and `axis` is then 0.
    Along { axis: usize, start: usize, step: i64 },
    /// At `start + step · i + dilation · k`, `i` and `k` the result's indices on its axes `axis`
    /// and `window`: a sliding window (`sliding_window_view`, strided or dilated by slicing it).
    Window { axis: usize, start: usize, step: i64, window: usize, dilation: i64 },
    /// At the value of the gather's next index operand at the result's element; as numpy
    /// indexes, a negative value counts from the end. A value outside `-n..n` is outside the
    /// contract: numpy raises, the reference reports it, a kernel reads some element in the
    /// axis (never outside the buffer).
    Index,
}

/// A tensor operation. Attributes that equal the result type (a reshape's target shape, a
/// cast's dtype) live in the op so that its type can be inferred; the text form elides them.
///
/// Ops are hashable and totally ordered (an e-graph needs both): a constant compares by the bits
/// of its value, so `-0.0` and `0.0` are different ops and a NaN equals itself.
#[derive(Clone, Debug)]
pub enum Op {
    /// The kernel's `index`-th parameter.
    Input { index: usize },
    /// A scalar constant.
    Constant { value: f64, dtype: DType },
    /// A tensor whose elements are their own index along `axis`.
    Iota { shape: Vec<usize>, axis: usize, dtype: DType },
    Unary(UnaryOp),
    Binary(BinaryOp),
    Compare(CmpOp),
    /// `select(cond, on_true, on_false)`: elementwise, `cond` nonzero picks `on_true`.
    Select,
    Cast { dtype: DType },
    /// numpy `broadcast_to`: operand dims align to the right and are 1 or equal.
    Broadcast { shape: Vec<usize> },
    /// Row-major reshape to a shape with the same number of elements.
    Reshape { shape: Vec<usize> },
    /// Output axis `i` is operand axis `perm[i]`.
    Transpose { perm: Vec<usize> },
    Slice { axes: Vec<SliceAxis> },
    Concat { axis: usize },
    /// Reduce over `axes` (sorted, unique); the reduced axes are removed.
    Reduce { op: ReduceOp, axes: Vec<usize> },
    /// Running sum along `axis` (numpy `cumsum`; `cumprod`, `np.maximum.accumulate` and
    /// `np.minimum.accumulate` with another `op`): element `k` combines elements `0..=k`, or
    /// `0..k` when `exclusive` (the identity at 0); with `reverse`, `k..n` (or `k+1..n`).
    Scan { op: ReduceOp, axis: usize, reverse: bool, exclusive: bool },
    /// `Σ exp(x − max x)` over `axes` (sorted, unique; removed): a softmax's normalizer, which
    /// the lowering computes in one pass with the running maximum (the online normalizer),
    /// writing that maximum too when the graph also reduces the same operand by `max`.
    SumExp { axes: Vec<usize> },
    /// `Σ (x − mean x)²` over `axes` (sorted, unique; removed): a variance's numerator, which
    /// the lowering computes in one pass (chunks merged as Chan et al. merge partial moments),
    /// summing the operand too when the graph also sums it over the same axes.
    SumSqDev { axes: Vec<usize> },
    Einsum(EinsumSpec),
    /// numpy's integer-array indexing (`np.take`, `take_along_axis`, `x[np.arange(n), idx]`):
    /// the result, of `shape`, reads its source (the first operand) at an index whose axes
    /// `from` gives, one per source axis; each [`GatherAxis::Index`] axis takes the next
    /// operand, an integer tensor of `shape`. The source of a gather with index operands is a
    /// parameter: the front end moves gathers through views and elementwise ops to one.
    Gather { shape: Vec<usize>, from: Vec<GatherAxis> },
    /// numpy's `argmax` (`op` Max) or `argmin` (Min) along `axis` (removed): the first index of
    /// the largest (smallest) element, or of the first NaN where the lane has one; an `i64`.
    /// An index result is judged by the values it points at, not as a number (see the
    /// verifier), so the graph's checker keeps it apart: returned, reshaped or cast to an
    /// integer dtype, and used by nothing else.
    ArgReduce { op: ReduceOp, axis: usize },
    /// numpy's `sort` along `axis`: each lane in ascending order, NaNs last.
    Sort { axis: usize },
    /// numpy's `argsort` along `axis`: the indices that sort each lane (NaNs last), an `i64`.
    /// Unless `stable` (numpy's `kind="stable"`), the order of equal elements is numpy's to
    /// choose, so any is right. An index result, like [`Op::ArgReduce`]'s: judged by the values
    /// it orders, and kept apart by the graph's checker.
    ArgSort { axis: usize, stable: bool },
}

/// `Op` with its constant as bits: the form equality, hashing and ordering look at.
#[derive(PartialEq, Eq, Hash, PartialOrd, Ord)]
enum OpKey<'a> {
    Input(usize),
    Constant(u64, DType),
    Iota(&'a [usize], usize, DType),
    Unary(UnaryOp),
    Binary(BinaryOp),
    Compare(CmpOp),
    Select,
    Cast(DType),
    Broadcast(&'a [usize]),
    Reshape(&'a [usize]),
    Transpose(&'a [usize]),
    Slice(&'a [SliceAxis]),
    Concat(usize),
    Reduce(ReduceOp, &'a [usize]),
    Scan(ReduceOp, usize, bool, bool),
    SumExp(&'a [usize]),
    SumSqDev(&'a [usize]),
    Einsum(&'a EinsumSpec),
    Gather(&'a [usize], &'a [GatherAxis]),
    ArgReduce(ReduceOp, usize),
    Sort(usize),
    ArgSort(usize, bool),
}

impl Op {
    fn key(&self) -> OpKey<'_> {
        match self {
            Op::Input { index } => OpKey::Input(*index),
            Op::Constant { value, dtype } => OpKey::Constant(value.to_bits(), *dtype),
            Op::Iota { shape, axis, dtype } => OpKey::Iota(shape, *axis, *dtype),
            Op::Unary(u) => OpKey::Unary(*u),
            Op::Binary(b) => OpKey::Binary(*b),
            Op::Compare(c) => OpKey::Compare(*c),
            Op::Select => OpKey::Select,
            Op::Cast { dtype } => OpKey::Cast(*dtype),
            Op::Broadcast { shape } => OpKey::Broadcast(shape),
            Op::Reshape { shape } => OpKey::Reshape(shape),
            Op::Transpose { perm } => OpKey::Transpose(perm),
            Op::Slice { axes } => OpKey::Slice(axes),
            Op::Concat { axis } => OpKey::Concat(*axis),
            Op::Reduce { op, axes } => OpKey::Reduce(*op, axes),
            Op::Scan { op, axis, reverse, exclusive } => OpKey::Scan(*op, *axis, *reverse, *exclusive),
            Op::SumExp { axes } => OpKey::SumExp(axes),
            Op::SumSqDev { axes } => OpKey::SumSqDev(axes),
            Op::Einsum(spec) => OpKey::Einsum(spec),
            Op::Gather { shape, from } => OpKey::Gather(shape, from),
            Op::ArgReduce { op, axis } => OpKey::ArgReduce(*op, *axis),
            Op::Sort { axis } => OpKey::Sort(*axis),
            Op::ArgSort { axis, stable } => OpKey::ArgSort(*axis, *stable),
        }
    }
}

impl PartialEq for Op {
    fn eq(&self, other: &Op) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Op {}

impl std::hash::Hash for Op {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

impl PartialOrd for Op {
    fn partial_cmp(&self, other: &Op) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Op {
    fn cmp(&self, other: &Op) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl UnaryOp {
    /// Whether the op is a function evaluated in several instructions (exp, log, sqrt, tanh,
    /// …), not one exact instruction (negation, absolute value, rounding to an integer).
    pub fn is_function(self) -> bool {
        !matches!(self, UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round)
    }

    pub const ALL: [UnaryOp; 15] = [
        UnaryOp::Neg,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Tanh,
        UnaryOp::Abs,
        UnaryOp::Log1p,
        UnaryOp::Expm1,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Erf,
        UnaryOp::Atan,
    ];

    /// The function on one float64, as the reference computes it.
    pub fn apply(self, x: f64) -> f64 {
        match self {
            UnaryOp::Neg => -x,
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Abs => x.abs(),
            UnaryOp::Log1p => x.ln_1p(),
            UnaryOp::Expm1 => x.exp_m1(),
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Floor => x.floor(),
            UnaryOp::Ceil => x.ceil(),
            UnaryOp::Round => x.round_ties_even(),
            UnaryOp::Erf => libm::erf(x),
            UnaryOp::Atan => x.atan(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Abs => "abs",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "rint",
            UnaryOp::Erf => "erf",
            UnaryOp::Atan => "atan",
        }
    }
}

impl BinaryOp {
    pub const ALL: [BinaryOp; 9] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Pow,
        BinaryOp::Max,
        BinaryOp::Min,
        BinaryOp::FloorDiv,
        BinaryOp::Mod,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Pow => "pow",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
            BinaryOp::FloorDiv => "floordiv",
            BinaryOp::Mod => "mod",
        }
    }
}

impl CmpOp {
    pub const ALL: [CmpOp; 6] = [CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge, CmpOp::Eq, CmpOp::Ne];

    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
        }
    }
}

impl ReduceOp {
    pub const ALL: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod];

    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "reduce_sum",
            ReduceOp::Max => "reduce_max",
            ReduceOp::Min => "reduce_min",
            ReduceOp::Prod => "reduce_prod",
        }
    }

    /// The name of a running `op` (a [`Op::Scan`]), as numpy's `cumsum` and `cumprod`.
    pub fn scan_name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "cumsum",
            ReduceOp::Max => "cummax",
            ReduceOp::Min => "cummin",
            ReduceOp::Prod => "cumprod",
        }
    }
}

/// The shape numpy broadcasting gives two shapes, or `None` if they do not broadcast.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i < rank - a.len() { 1 } else { a[i - (rank - a.len())] };
        let db = if i < rank - b.len() { 1 } else { b[i - (rank - b.len())] };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

/// Whether `from` broadcasts to exactly `to` (numpy `broadcast_to`).
pub fn broadcasts_to(from: &[usize], to: &[usize]) -> bool {
    from.len() <= to.len()
        && from.iter().rev().zip(to.iter().rev()).all(|(&f, &t)| f == t || f == 1)
}

impl Op {
    /// The number of operands the op takes, or `None` for variadic ops.
    pub fn arity(&self) -> Option<usize> {
        match self {
            Op::Input { .. } | Op::Constant { .. } | Op::Iota { .. } => Some(0),
            Op::Unary(_)
            | Op::Cast { .. }
            | Op::Broadcast { .. }
            | Op::Reshape { .. }
            | Op::Transpose { .. }
            | Op::Slice { .. }
            | Op::Reduce { .. }
            | Op::Scan { .. }
            | Op::SumExp { .. }
            | Op::SumSqDev { .. }
            | Op::ArgReduce { .. }
            | Op::Sort { .. }
            | Op::ArgSort { .. } => Some(1),
            Op::Binary(_) | Op::Compare(_) => Some(2),
            Op::Select => Some(3),
            Op::Concat { .. } | Op::Einsum(_) | Op::Gather { .. } => None,
        }
    }

    /// Whether an index result (`argmax`, `argsort`) passes through the op as the same indices:
    /// a reshape, transpose or slice (each element keeps the index it holds), or a cast to an
    /// integer dtype.
    pub fn keeps_index(&self) -> bool {
        matches!(self, Op::Reshape { .. } | Op::Transpose { .. } | Op::Slice { .. }) || matches!(self, Op::Cast { dtype } if dtype.is_int())
    }

    /// The op's name in the text form.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Input { .. } => "input",
            Op::Constant { .. } => "const",
            Op::Iota { .. } => "iota",
            Op::Unary(u) => u.name(),
            Op::Binary(b) => b.name(),
            Op::Compare(c) => c.name(),
            Op::Select => "select",
            Op::Cast { .. } => "cast",
            Op::Broadcast { .. } => "broadcast",
            Op::Reshape { .. } => "reshape",
            Op::Transpose { .. } => "transpose",
            Op::Slice { .. } => "slice",
            Op::Concat { .. } => "concat",
            Op::Reduce { op, .. } => op.name(),
            Op::Scan { op, .. } => op.scan_name(),
            Op::SumExp { .. } => "sum_exp",
            Op::SumSqDev { .. } => "sum_sq_dev",
            Op::Einsum(_) => "einsum",
            Op::Gather { .. } => "gather",
            Op::ArgReduce { op: ReduceOp::Min, .. } => "argmin",
            Op::ArgReduce { .. } => "argmax",
            Op::Sort { .. } => "sort",
            Op::ArgSort { stable: false, .. } => "argsort",
            Op::ArgSort { stable: true, .. } => "argsort_stable",
        }
    }

    /// Infers the result type from the operand types. `Input` has no rule of its own: its type is
    /// the parameter's, which the graph supplies.
    pub fn infer(&self, args: &[&TensorType]) -> Result<TensorType, GraphError> {
        if let Some(n) = self.arity() {
            if args.len() != n {
                return Err(self.error(format!("takes {n} operands, got {}", args.len())));
            }
        } else if args.is_empty() {
            return Err(self.error("takes at least one operand".to_string()));
        }
        let ty = match self {
            Op::Input { .. } => return Err(self.error("has no type rule".to_string())),
            Op::Constant { dtype, .. } => TensorType::scalar(*dtype),
            Op::Iota { shape, axis, dtype } => {
                if *axis >= shape.len() {
                    return Err(self.error(format!("axis {axis} out of range for rank {}", shape.len())));
                }
                TensorType::new(*dtype, shape.clone())
            }
            Op::Unary(u) => {
                // numpy's: floor and ceil keep an integer dtype (numpy 2), the float functions
                // of an 8-bit integer are float16, of a wider one float64.
                let dtype = match u {
                    UnaryOp::Neg | UnaryOp::Abs => args[0].dtype,
                    UnaryOp::Floor | UnaryOp::Ceil if args[0].dtype.is_int() => args[0].dtype,
                    _ if args[0].dtype.is_byte() => DType::F16,
                    _ => args[0].dtype.to_float(),
                };
                TensorType::new(dtype, args[0].shape.clone())
            }
            Op::Binary(b) => {
                self.same_shapes(args)?;
                let mut dtype = args[0].dtype.promote(args[1].dtype);
                if *b == BinaryOp::Div {
                    dtype = dtype.to_float();
                }
                TensorType::new(dtype, args[0].shape.clone())
            }
            Op::Compare(_) => {
                self.same_shapes(args)?;
                TensorType::new(DType::Bool, args[0].shape.clone())
            }
            Op::Select => {
                self.same_shapes(args)?;
                TensorType::new(args[1].dtype.promote(args[2].dtype), args[0].shape.clone())
            }
            Op::Cast { dtype } => TensorType::new(*dtype, args[0].shape.clone()),
            Op::Broadcast { shape } => {
                if !broadcasts_to(&args[0].shape, shape) {
                    return Err(self.error(format!("cannot broadcast {} to [{}]", args[0], crate::ty::join(shape))));
                }
                TensorType::new(args[0].dtype, shape.clone())
            }
            Op::Reshape { shape } => {
                if shape.iter().product::<usize>() != args[0].num_elements() {
                    return Err(self.error(format!("cannot reshape {} to [{}]", args[0], crate::ty::join(shape))));
                }
                TensorType::new(args[0].dtype, shape.clone())
            }
            Op::Transpose { perm } => {
                let mut seen = vec![false; perm.len()];
                if perm.len() != args[0].rank() || perm.iter().any(|&p| p >= perm.len() || std::mem::replace(&mut seen[p], true)) {
                    return Err(self.error(format!("[{}] is not a permutation of the axes of {}", crate::ty::join(perm), args[0])));
                }
                TensorType::new(args[0].dtype, perm.iter().map(|&p| args[0].shape[p]).collect())
            }
            Op::Slice { axes } => {
                if axes.len() != args[0].rank() {
                    return Err(self.error(format!("has {} axes, operand is {}", axes.len(), args[0])));
                }
                for (axis, (s, &extent)) in axes.iter().zip(&args[0].shape).enumerate() {
                    if !s.fits(extent) {
                        return Err(self.error(format!("axis {axis} reads outside 0..{extent}")));
                    }
                }
                TensorType::new(args[0].dtype, axes.iter().map(|s| s.len).collect())
            }
            Op::Concat { axis } => {
                let first = args[0];
                if *axis >= first.rank() {
                    return Err(self.error(format!("axis {axis} out of range for {first}")));
                }
                let mut shape = first.shape.clone();
                shape[*axis] = 0;
                let mut dtype = first.dtype;
                for a in args {
                    let same_rest = a.rank() == first.rank()
                        && (0..a.rank()).all(|i| i == *axis || a.shape[i] == first.shape[i]);
                    if !same_rest {
                        return Err(self.error(format!("operands {first} and {a} differ off axis {axis}")));
                    }
                    shape[*axis] += a.shape[*axis];
                    dtype = dtype.promote(a.dtype);
                }
                TensorType::new(dtype, shape)
            }
            Op::SumExp { axes } | Op::SumSqDev { axes } => {
                let rank = args[0].rank();
                if axes.windows(2).any(|w| w[0] >= w[1]) || axes.iter().any(|&a| a >= rank) {
                    return Err(self.error(format!("axes [{}] must be sorted, unique and below rank {rank}", crate::ty::join(axes))));
                }
                if axes.iter().any(|&a| args[0].shape[a] == 0) {
                    return Err(self.error("reduces an empty axis, which has no maximum or mean".to_string()));
                }
                let shape = (0..rank).filter(|a| !axes.contains(a)).map(|a| args[0].shape[a]).collect();
                TensorType::new(args[0].dtype.to_float(), shape)
            }
            Op::Reduce { op, axes } => {
                let rank = args[0].rank();
                if axes.windows(2).any(|w| w[0] >= w[1]) || axes.iter().any(|&a| a >= rank) {
                    return Err(self.error(format!("axes [{}] must be sorted, unique and below rank {rank}", crate::ty::join(axes))));
                }
                if matches!(op, ReduceOp::Max | ReduceOp::Min) && axes.iter().any(|&a| args[0].shape[a] == 0) {
                    return Err(self.error("reduces an empty axis, which has no identity".to_string()));
                }
                let shape = (0..rank).filter(|a| !axes.contains(a)).map(|a| args[0].shape[a]).collect();
                let dtype = match op {
                    ReduceOp::Sum | ReduceOp::Prod => args[0].dtype.accumulated(),
                    ReduceOp::Max | ReduceOp::Min => args[0].dtype,
                };
                TensorType::new(dtype, shape)
            }
            Op::ArgReduce { op, axis } => {
                let x = args[0];
                if *op == ReduceOp::Sum {
                    return Err(self.error("is argmax or argmin".to_string()));
                }
                if *axis >= x.rank() {
                    return Err(self.error(format!("axis {axis} out of range for {x}")));
                }
                if x.shape[*axis] == 0 {
                    return Err(self.error("reduces an empty axis, which has no first maximum".to_string()));
                }
                let shape = x.shape.iter().enumerate().filter(|&(a, _)| a != *axis).map(|(_, &n)| n).collect();
                TensorType::new(DType::I64, shape)
            }
            Op::Sort { axis } | Op::ArgSort { axis, .. } => {
                let x = args[0];
                if *axis >= x.rank() {
                    return Err(self.error(format!("axis {axis} out of range for {x}")));
                }
                if x.shape[*axis] == 0 {
                    return Err(self.error("sorts an empty axis".to_string()));
                }
                let dtype = if matches!(self, Op::Sort { .. }) { x.dtype } else { DType::I64 };
                TensorType::new(dtype, x.shape.clone())
            }
            Op::Scan { op, axis, .. } => {
                if *axis >= args[0].rank() {
                    return Err(self.error(format!("axis {axis} out of range for {}", args[0])));
                }
                // A running sum or product widens integers as numpy's does; an extreme keeps them.
                let dtype = if matches!(op, ReduceOp::Max | ReduceOp::Min) { args[0].dtype } else { args[0].dtype.accumulated() };
                TensorType::new(dtype, args[0].shape.clone())
            }
            Op::Einsum(spec) => spec.infer(args).map_err(|m| self.error(m))?,
            Op::Gather { shape, from } => {
                let source = args[0];
                if from.len() != source.rank() {
                    return Err(self.error(format!("has {} axes, its source is {source}", from.len())));
                }
                let indices = from.iter().filter(|a| **a == GatherAxis::Index).count();
                if args.len() != 1 + indices {
                    return Err(self.error(format!("takes its source and {indices} index operands, got {} operands", args.len())));
                }
                if let Some(bad) = args[1..].iter().find(|a| !a.dtype.is_int() || a.shape != *shape) {
                    return Err(self.error(format!("an index operand must be an integer tensor of shape [{}], got {bad}", crate::ty::join(shape))));
                }
                for (j, (a, &n)) in from.iter().zip(&source.shape).enumerate() {
                    match *a {
                        GatherAxis::Along { axis, start, step: 0 } if axis != 0 || start >= n => {
                            return Err(self.error(format!("source axis {j} is read at {start} alone: `0:{start}:+0` within 0..{n}")));
                        }
                        GatherAxis::Along { step: 0, .. } | GatherAxis::Index => {}
                        GatherAxis::Window { axis, start, step, window, dilation } => {
                            let (Some(&len), Some(&k)) = (shape.get(axis), shape.get(window)) else {
                                return Err(self.error(format!("source axis {j} follows axes {axis} and {window}, past the result's rank {}", shape.len())));
                            };
                            // The index is affine in `i` and `k`: its extremes are at the corners.
                            let reach = |s: i64, n: usize| (s * (n as i64 - 1)).min(0)..=(s * (n as i64 - 1)).max(0);
                            let (a, b) = (reach(step, len), reach(dilation, k));
                            let (low, high) = (start as i64 + a.start() + b.start(), start as i64 + a.end() + b.end());
                            if axis == window || len == 0 || k == 0 || low < 0 || high >= n as i64 {
                                return Err(self.error(format!("source axis {j} reads outside 0..{n}")));
                            }
                        }
                        GatherAxis::Along { axis, start, step } => {
                            let Some(&len) = shape.get(axis) else {
                                return Err(self.error(format!("source axis {j} follows axis {axis}, past the result's rank {}", shape.len())));
                            };
                            if !(SliceAxis { start, step, len }).fits(n) {
                                return Err(self.error(format!("source axis {j} reads outside 0..{n}")));
                            }
                        }
                    }
                }
                TensorType::new(source.dtype, shape.clone())
            }
        };
        Ok(ty)
    }

    fn same_shapes(&self, args: &[&TensorType]) -> Result<(), GraphError> {
        if args.iter().any(|a| a.shape != args[0].shape) {
            let shapes: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            return Err(self.error(format!("operands must have equal shapes, got {}", shapes.join(" and "))));
        }
        Ok(())
    }

    fn error(&self, message: String) -> GraphError {
        GraphError::Op { op: self.name(), message }
    }
}
