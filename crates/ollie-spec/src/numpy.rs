//! numpy's functions and array methods, each translated into graph nodes with numpy's rules for
//! axes, keepdims, broadcasting, matmul and einsum.

use ollie_graph::{broadcast_shapes, BinaryOp, CmpOp, DType, EinsumSpec, GatherAxis, NodeId, Op, ReduceOp, UnaryOp};
use ruff_text_size::TextRange;

use crate::builder::{Arg, Builder, CallArgs, Result};
use crate::diagnostic::{Code, Diagnostic};
use crate::value::Value;

/// The numpy functions a spec may call, as `np.NAME(...)`.
pub const FUNCTIONS: &[&str] = &[
    "abs", "absolute", "add", "all", "amax", "amin", "any", "arange", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "argmax",
    "argmin", "argsort", "around", "array", "array_split", "asarray", "average", "broadcast_to", "ceil", "clip", "concatenate", "copy", "cos", "cosh",
    "count_nonzero", "cumprod", "cumsum", "deg2rad", "degrees", "diag", "diagonal", "diff", "divide", "dot", "einsum", "empty", "empty_like", "exp", "exp2", "expand_dims",
    "expm1", "eye", "finfo", "fix", "flip", "fliplr", "flipud", "float32", "float64", "float_power", "floor", "floor_divide", "fmax", "fmin", "fmod", "full",
    "full_like", "heaviside", "hsplit", "hstack", "hypot", "identity", "iinfo", "inner", "isfinite", "isinf", "isnan", "linspace", "log", "log10", "log1p",
    "log2", "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or", "logical_xor", "matmul", "max", "maximum", "mean", "median", "min",
    "minimum", "mod", "moveaxis", "multiply", "nan_to_num", "nanmax", "nanmean", "nanmin", "nanprod", "nansum", "negative", "ones", "ones_like", "outer", "pad",
    "percentile", "positive", "power", "prod", "ptp", "quantile", "rad2deg", "radians", "ravel", "reciprocal", "remainder", "repeat", "reshape", "rint", "roll",
    "round", "sign", "sin", "sinh", "sort", "split", "sqrt", "square", "squeeze", "stack", "std", "subtract", "sum", "swapaxes", "take", "take_along_axis",
    "tan", "tanh", "tensordot", "tile", "trace", "transpose", "tril", "triu", "trunc", "var", "vsplit", "vstack", "where", "zeros", "zeros_like",
];

/// The array methods and attributes a spec may use.
pub const METHODS: &[&str] = &[
    "all", "any", "argmax", "argmin", "argsort", "astype", "clip", "copy", "cumprod", "cumsum", "diagonal", "dot", "flatten", "max", "mean", "min", "prod", "ravel", "repeat", "reshape", "round",
    "squeeze", "std", "sum", "swapaxes", "trace", "transpose", "var",
];

pub fn supported_functions_help() -> String {
    format!("supported numpy functions: {}, linalg.norm", FUNCTIONS.join(", "))
}

pub fn supported_methods_help() -> String {
    format!("supported array methods: {}; attributes: T, shape, ndim, size, dtype", METHODS.join(", "))
}

/// Reduction kinds as numpy spells them (`mean` is a sum and a division).
#[derive(Clone, Copy, PartialEq)]
pub enum Reduction {
    Sum,
    Max,
    Min,
    Mean,
    Prod,
}

impl CallArgs {
    /// Binds the arguments to `params` (positional order, then by keyword). `receiver` fills the
    /// first parameter for a method call.
    pub fn bind(self, name: &str, receiver: Option<Arg>, params: &[&str]) -> Result<Vec<Option<Arg>>> {
        let mut bound: Vec<Option<Arg>> = vec![None; params.len()];
        let offset = receiver.is_some() as usize;
        if let Some(r) = receiver {
            bound[0] = Some(r);
        }
        if self.positional.len() + offset > params.len() {
            return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{name}` takes at most {} positional arguments here, got {}", params.len() - offset, self.positional.len()))
                .label(self.range, "too many arguments")
                .help(format!("parameters: {}", params[offset..].join(", "))));
        }
        for (i, a) in self.positional.into_iter().enumerate() {
            bound[i + offset] = Some(a);
        }
        for (k, krange, a) in self.keywords {
            match params.iter().position(|p| *p == k) {
                Some(i) if i >= offset && bound[i].is_none() => bound[i] = Some(a),
                Some(_) => {
                    return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{name}` got `{k}` twice")).label(krange, "already given"))
                }
                None => {
                    return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{name}` does not take `{k}` in a spec"))
                        .label(krange, "unsupported keyword")
                        .help(format!("supported parameters: {}", params[offset..].join(", "))))
                }
            }
        }
        Ok(bound)
    }
}

pub fn required(arg: Option<Arg>, name: &str, param: &str, range: TextRange) -> Result<Arg> {
    arg.ok_or_else(|| Diagnostic::error(Code::UnsupportedArgument, format!("`{name}` needs `{param}`")).label(range, "missing argument"))
}

impl Builder<'_> {
    pub fn numpy_call(&mut self, name: &str, range: TextRange, args: CallArgs) -> Result<Value> {
        let call = args.range;
        let fname = format!("np.{name}");
        macro_rules! bind {
            ($($p:expr),*) => {{
                let b = args.bind(&fname, None, &[$($p),*])?;
                let mut it = b.into_iter();
                ($( { let _ = $p; it.next().unwrap() } ),*)
            }};
        }
        let unary = |op| Some(op);
        let unary_op = match name {
            "exp" => unary(UnaryOp::Exp),
            "log" => unary(UnaryOp::Log),
            "sqrt" => unary(UnaryOp::Sqrt),
            "tanh" => unary(UnaryOp::Tanh),
            "abs" | "absolute" => unary(UnaryOp::Abs),
            "log1p" => unary(UnaryOp::Log1p),
            "expm1" => unary(UnaryOp::Expm1),
            "sin" => unary(UnaryOp::Sin),
            "cos" => unary(UnaryOp::Cos),
            "arctan" => unary(UnaryOp::Atan),
            "floor" => unary(UnaryOp::Floor),
            "ceil" => unary(UnaryOp::Ceil),
            "negative" => unary(UnaryOp::Neg),
            _ => None,
        };
        if let Some(op) = unary_op {
            let x = bind!("x");
            return self.unary(op, required(x, &fname, "x", call)?, call);
        }
        if let "floor_divide" | "mod" | "remainder" = name {
            let (a, b) = bind!("x1", "x2");
            let (a, b) = (required(a, &fname, "x1", call)?, required(b, &fname, "x2", call)?);
            let op = if name == "floor_divide" { ruff_python_ast::Operator::FloorDiv } else { ruff_python_ast::Operator::Mod };
            return self.binop(op, a, b, call);
        }
        let binary_op = match name {
            "add" => Some(BinaryOp::Add),
            "subtract" => Some(BinaryOp::Sub),
            "multiply" => Some(BinaryOp::Mul),
            "divide" => Some(BinaryOp::Div),
            "power" => Some(BinaryOp::Pow),
            "maximum" => Some(BinaryOp::Max),
            "minimum" => Some(BinaryOp::Min),
            _ => None,
        };
        if let Some(op) = binary_op {
            let (a, b) = bind!("x1", "x2");
            let (a, b) = (required(a, &fname, "x1", call)?, required(b, &fname, "x2", call)?);
            if let (Some(x), Some(y)) = (a.value.number(), b.value.number()) {
                let v = match op {
                    BinaryOp::Add => x + y,
                    BinaryOp::Sub => x - y,
                    BinaryOp::Mul => x * y,
                    BinaryOp::Div => x / y,
                    BinaryOp::Pow => x.powf(y),
                    BinaryOp::Max => if x.is_nan() || y.is_nan() { f64::NAN } else { x.max(y) },
                    BinaryOp::Min => if x.is_nan() || y.is_nan() { f64::NAN } else { x.min(y) },
                    BinaryOp::FloorDiv | BinaryOp::Mod => unreachable!("`//` and `%` go through the operators"),
                };
                return Ok(Value::Float(v));
            }
            return self.elementwise(op, a, b, call);
        }
        if crate::composite::FUNCTIONS.contains(&name) {
            return self.composite_call(name, args);
        }
        if crate::statistics::FUNCTIONS.contains(&name) {
            return self.statistics_call(name, args);
        }
        if crate::gather::FUNCTIONS.contains(&name) {
            return self.gather_call(name, args);
        }
        if crate::elementwise::FUNCTIONS.contains(&name) {
            return self.elementwise_call(name, args);
        }
        if crate::arrays::FUNCTIONS.contains(&name) {
            return self.arrays_call(name, args);
        }
        if name == crate::window::FUNCTION {
            return self.sliding_window_view_call(args);
        }
        if crate::pad::FUNCTIONS.contains(&name) {
            return self.pad_call(args);
        }
        match name {
            "square" => {
                let x = required(bind!("x"), &fname, "x", call)?;
                self.elementwise(BinaryOp::Mul, x.clone(), x, call)
            }
            "sum" | "prod" | "max" | "amax" | "min" | "amin" | "mean" | "var" | "std" => {
                let bound = args.bind(&fname, None, &reduction_params(name, "a"))?;
                self.reduction_call(name, &fname, bound, call)
            }
            "argmax" | "argmin" => {
                let (a, axis, out, keepdims) = bind!("a", "axis", "out", "keepdims");
                self.arg_reduce(name, &fname, required(a, &fname, "a", call)?, axis, out, keepdims, call)
            }
            "sort" | "argsort" => {
                let (a, axis, kind, order, stable) = bind!("a", "axis", "kind", "order", "stable");
                self.sort(name, &fname, required(a, &fname, "a", call)?, axis, [kind, order, stable], call)
            }
            "clip" => {
                let (a, lo, hi) = bind!("a", "a_min", "a_max");
                self.clip(required(a, &fname, "a", call)?, lo, hi, call)
            }
            "where" => {
                let (c, x, y) = bind!("condition", "x", "y");
                let (c, x, y) = (required(c, &fname, "condition", call)?, required(x, &fname, "x", call)?, required(y, &fname, "y", call)?);
                self.select(c, x, y, call)
            }
            "matmul" => {
                let (a, b) = bind!("x1", "x2");
                self.matmul(required(a, &fname, "x1", call)?, required(b, &fname, "x2", call)?, call)
            }
            "einsum" => {
                let Some(first) = args.positional.first().cloned() else {
                    return Err(Diagnostic::error(Code::UnsupportedArgument, "`np.einsum` needs a subscripts string").label(call, "here"));
                };
                // `optimize=` only chooses numpy's contraction order; it does not change the result.
                if let Some((k, kr, _)) = args.keywords.iter().find(|(k, _, _)| k != "optimize") {
                    return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`np.einsum` does not take `{k}` in a spec"))
                        .label(*kr, "unsupported keyword")
                        .help("np.einsum takes the subscripts, the operands and optionally `optimize=`"));
                }
                self.einsum(first, args.positional[1..].to_vec(), call)
            }
            "cumsum" | "cumprod" => {
                let (a, axis) = bind!("a", "axis");
                self.scan(scan_op(name), required(a, &fname, "a", call)?, axis, call)
            }
            "transpose" => {
                let (a, axes) = bind!("a", "axes");
                self.transpose(required(a, &fname, "a", call)?, axes, call)
            }
            "swapaxes" => {
                let (a, a1, a2) = bind!("a", "axis1", "axis2");
                self.swapaxes(required(a, &fname, "a", call)?, required(a1, &fname, "axis1", call)?, required(a2, &fname, "axis2", call)?, call)
            }
            "reshape" => {
                // numpy 2 calls the shape `shape`; `newshape` is its older keyword.
                let (a, shape, order, newshape) = bind!("a", "shape", "order", "newshape");
                if let Some(o) = order.filter(|o| o.value != Value::Str("C".into())) {
                    return Err(Diagnostic::error(Code::UnsupportedArgument, "only row-major (`order=\"C\"`) reshapes are supported")
                        .label(o.range, "not supported"));
                }
                self.reshape(required(a, &fname, "a", call)?, required(shape.or(newshape), &fname, "shape", call)?, call)
            }
            "expand_dims" => {
                let (a, axis) = bind!("a", "axis");
                self.expand_dims(required(a, &fname, "a", call)?, required(axis, &fname, "axis", call)?, call)
            }
            "squeeze" => {
                let (a, axis) = bind!("a", "axis");
                self.squeeze(required(a, &fname, "a", call)?, axis, call)
            }
            "concatenate" | "stack" => {
                let (arrays, axis) = bind!("arrays", "axis");
                self.concatenate(name == "stack", required(arrays, &fname, "arrays", call)?, axis, call)
            }
            "empty" | "empty_like" => {
                let like = name == "empty_like";
                let first = if like { "prototype" } else { "shape" };
                let (first_arg, dtype) = bind!(first, "dtype");
                let first_arg = required(first_arg, &fname, first, call)?;
                let zeros = if like {
                    let id = self.tensor(&first_arg, None)?;
                    let ty = self.ty(id).clone();
                    let dtype = dtype.or(Some(Arg { value: Value::DType(ty.dtype), range: first_arg.range }));
                    self.filled(ty.shape, Value::Float(0.0), dtype, call)?
                } else {
                    let shape = self.shape_value(&first_arg)?;
                    self.filled(shape, Value::Float(0.0), dtype, call)?
                };
                let Value::Tensor(zeros) = zeros else { unreachable!("filled makes an array") };
                Ok(Value::Tensor(self.empty(zeros, call)?))
            }
            "ones" | "zeros" | "full" | "ones_like" | "zeros_like" | "full_like" => {
                let like = name.ends_with("_like");
                let first = if like { "a" } else { "shape" };
                let (first_arg, fill, dtype) = if name.starts_with("full") {
                    let (s, f, d) = bind!(first, "fill_value", "dtype");
                    (s, Some(required(f, &fname, "fill_value", call)?), d)
                } else {
                    let (s, d) = bind!(first, "dtype");
                    (s, None, d)
                };
                let first_arg = required(first_arg, &fname, first, call)?;
                let value = match fill {
                    Some(f) => f.value,
                    None => Value::Float(if name.starts_with("ones") { 1.0 } else { 0.0 }),
                };
                if like {
                    // `*_like` takes the shape and, unless given, the dtype of its argument.
                    let id = self.tensor(&first_arg, None)?;
                    let ty = self.ty(id).clone();
                    let dtype = dtype.or(Some(Arg { value: Value::DType(ty.dtype), range: first_arg.range }));
                    self.filled(ty.shape, value, dtype, call)
                } else {
                    let shape = self.shape_value(&first_arg)?;
                    self.filled(shape, value, dtype, call)
                }
            }
            "arange" => {
                let (start, stop, step, dtype) = bind!("start", "stop", "step", "dtype");
                self.arange(required(start, &fname, "start", call)?, stop, step, dtype, call)
            }
            "finfo" | "iinfo" => {
                let t = required(bind!("dtype"), &fname, "dtype", call)?;
                let dtype = match t.value {
                    Value::Tensor(id) => self.ty(id).dtype,
                    Value::Float(_) => DType::F64,
                    Value::Int(_) => DType::I64,
                    _ => self.dtype_value(&t)?,
                };
                if (name == "finfo") != dtype.is_float() || dtype == DType::Bool {
                    return Err(Diagnostic::error(Code::BadValue, format!("`{fname}` of {dtype}"))
                        .label(t.range, if name == "finfo" { "not a float type" } else { "not an integer type" }));
                }
                Ok(Value::TypeInfo(dtype))
            }
            "tril" | "triu" => {
                let (m, k) = bind!("m", "k");
                self.tri(name == "tril", required(m, &fname, "m", call)?, k, call)
            }
            "float32" | "float64" | "float16" => {
                let x = required(bind!("x"), &fname, "x", call)?;
                let dtype = match name { "float32" => DType::F32, "float16" => DType::F16, _ => DType::F64 };
                match x.value {
                    Value::Tensor(id) => Ok(Value::Tensor(self.cast(id, dtype, call)?)),
                    ref v => v.number().map(Value::Float).ok_or_else(|| {
                        Diagnostic::error(Code::BadValue, format!("`{fname}` of {}", v.a_kind())).label(x.range, "expected a number or an array")
                    }),
                }
            }
            _ => Err(Diagnostic::error(Code::UnsupportedCall, format!("unsupported call `{fname}`"))
                .label(range, "not in ollie's numpy subset")
                .help(supported_functions_help())),
        }
    }

    pub fn method_call(&mut self, receiver: Arg, name: &str, name_range: TextRange, args: CallArgs) -> Result<Value> {
        let call = args.range;
        let mname = format!(".{name}()");
        match name {
            "sum" | "prod" | "max" | "min" | "mean" | "var" | "std" => {
                let bound = args.bind(&mname, Some(receiver), &reduction_params(name, "self"))?;
                self.reduction_call(name, &mname, bound, call)
            }
            "argmax" | "argmin" => {
                let bound = args.bind(&mname, Some(receiver), &["self", "axis", "out", "keepdims"])?;
                let mut it = bound.into_iter();
                let (a, axis, out, keepdims) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
                self.arg_reduce(name, &mname, required(a, &mname, "self", call)?, axis, out, keepdims, call)
            }
            "argsort" => {
                let bound = args.bind(&mname, Some(receiver), &["self", "axis", "kind", "order", "stable"])?;
                let mut it = bound.into_iter();
                let (a, axis) = (it.next().unwrap(), it.next().unwrap());
                let (kind, order, stable) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
                self.sort(name, &mname, required(a, &mname, "self", call)?, axis, [kind, order, stable], call)
            }
            "cumsum" | "cumprod" => {
                let bound = args.bind(&mname, Some(receiver), &["self", "axis"])?;
                let mut it = bound.into_iter();
                let (a, axis) = (it.next().unwrap(), it.next().unwrap());
                self.scan(scan_op(name), required(a, &mname, "self", call)?, axis, call)
            }
            "reshape" | "transpose" => {
                // Both take either one tuple or the items as separate arguments.
                if let Some((k, kr, _)) = args.keywords.first() {
                    return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{mname}` does not take `{k}` in a spec")).label(*kr, "unsupported keyword"));
                }
                let value = match args.positional.as_slice() {
                    [] => None,
                    [one] => Some(one.clone()),
                    many => Some(Arg {
                        value: Value::Tuple(many.iter().map(|a| a.value.clone()).collect()),
                        range: many[0].range.cover(many[many.len() - 1].range),
                    }),
                };
                if name == "reshape" {
                    let shape = required(value, &mname, "shape", call)?;
                    self.reshape(receiver, shape, call)
                } else {
                    self.transpose(receiver, value, call)
                }
            }
            "swapaxes" => {
                let b = args.bind(&mname, Some(receiver), &["self", "axis1", "axis2"])?;
                let mut it = b.into_iter();
                let a = it.next().unwrap().unwrap();
                let (a1, a2) = (it.next().unwrap(), it.next().unwrap());
                self.swapaxes(a, required(a1, &mname, "axis1", call)?, required(a2, &mname, "axis2", call)?, call)
            }
            "squeeze" => {
                let b = args.bind(&mname, Some(receiver), &["self", "axis"])?;
                let mut it = b.into_iter();
                let a = it.next().unwrap().unwrap();
                self.squeeze(a, it.next().unwrap(), call)
            }
            "astype" => {
                let b = args.bind(&mname, Some(receiver), &["self", "dtype"])?;
                let mut it = b.into_iter();
                let a = it.next().unwrap().unwrap();
                let d = required(it.next().unwrap(), &mname, "dtype", call)?;
                let dtype = self.dtype_value(&d)?;
                let Value::Tensor(id) = a.value else { unreachable!("methods are called on arrays") };
                // `.astype` copies, to the same dtype too.
                Ok(Value::Tensor(if self.ty(id).dtype == dtype { self.copy_of(id, call)? } else { self.cast(id, dtype, call)? }))
            }
            "diagonal" | "trace" => self.diagonal_call(name, Some(receiver), args),
            _ if crate::arrays::METHODS.contains(&name) => self.arrays_method(receiver, name, args),
            _ => Err(Diagnostic::error(Code::UnsupportedCall, format!("unsupported array method `.{name}()`"))
                .label(name_range, "not in ollie's numpy subset")
                .help(supported_methods_help())),
        }
    }

    pub(crate) fn cast(&mut self, id: NodeId, dtype: DType, range: TextRange) -> Result<NodeId> {
        if self.ty(id).dtype == dtype {
            return Ok(id);
        }
        self.push(Op::Cast { dtype }, vec![id], range)
    }

    /// A dtype argument: `np.float32`, `float`, `"float32"`, ...
    pub fn dtype_value(&self, arg: &Arg) -> Result<DType> {
        match &arg.value {
            Value::DType(d) => Ok(*d),
            Value::Str(s) => match s.as_str() {
                "float32" | "f4" => Ok(DType::F32),
                "float16" | "f2" | "half" => Ok(DType::F16),
                "bfloat16" => Ok(DType::BF16),
                "float64" | "f8" | "float" => Ok(DType::F64),
                "int64" | "int" => Ok(DType::I64),
                "int32" => Ok(DType::I32),
                "int8" | "i1" => Ok(DType::I8),
                "uint8" | "u1" => Ok(DType::U8),
                "bool" => Ok(DType::Bool),
                _ => Err(Diagnostic::error(Code::UnsupportedDtype, format!("unsupported dtype \"{s}\"")).label(arg.range, "not supported")
                    .help("use np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int64, np.int32, np.int8, np.uint8 or bool")),
            },
            other => Err(Diagnostic::error(Code::UnsupportedDtype, format!("expected a dtype, found {}", other.a_kind())).label(arg.range, "not a dtype")
                .help("use np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int64 or bool")),
        }
    }

    /// A shape argument: an int or a tuple of ints, each zero or more.
    pub fn shape_value(&self, arg: &Arg) -> Result<Vec<usize>> {
        let items = match &arg.value {
            Value::Tuple(items) => items.clone(),
            v @ Value::Int(_) => vec![v.clone()],
            other => {
                return Err(Diagnostic::error(Code::BadValue, format!("expected a shape, found {}", self.describe(other)))
                    .label(arg.range, "a shape is an int or a tuple of ints"))
            }
        };
        items
            .iter()
            .map(|v| match v {
                Value::Int(n) if *n >= 0 => Ok(*n as usize),
                other => Err(Diagnostic::error(Code::BadValue, format!("invalid dimension in shape: {}", match other {
                    Value::Int(n) => n.to_string(),
                    o => o.kind().to_string(),
                }))
                .label(arg.range, "dimensions are integers, zero or more")),
            })
            .collect()
    }

    pub fn int_value(&self, arg: &Arg, what: &str) -> Result<i64> {
        arg.value.int().filter(|_| !matches!(arg.value, Value::Bool(_))).ok_or_else(|| {
            Diagnostic::error(Code::BadValue, format!("{what} must be an integer known before the kernel runs"))
                .label(arg.range, format!("this is {}", self.describe(&arg.value)))
        })
    }

    /// Normalizes a possibly negative axis against `rank`.
    pub fn axis(&self, arg: &Arg, rank: usize) -> Result<usize> {
        let a = self.int_value(arg, "an axis")?;
        normalize_axis(a, rank).ok_or_else(|| {
            Diagnostic::error(Code::AxisOutOfRange, format!("axis {a} is out of bounds for an array of rank {rank}"))
                .label(arg.range, format!("valid axes are {} to {}", -(rank as i64), rank as i64 - 1))
        })
    }

    /// An `axis=` argument that may be an int or a tuple of ints; sorted, duplicates rejected.
    pub fn axes(&self, arg: &Arg, rank: usize) -> Result<Vec<usize>> {
        let mut axes = self.distinct_axes(arg, rank)?;
        axes.sort_unstable();
        Ok(axes)
    }

    /// An int or a tuple of ints as axes, in the order given.
    pub fn axis_list(&self, arg: &Arg, rank: usize) -> Result<Vec<usize>> {
        let items: Vec<Arg> = match &arg.value {
            Value::Tuple(items) => items.iter().map(|v| Arg { value: v.clone(), range: arg.range }).collect(),
            _ => vec![arg.clone()],
        };
        items.iter().map(|a| self.axis(a, rank)).collect()
    }

    /// [`Self::axis_list`], an axis given twice rejected.
    pub fn distinct_axes(&self, arg: &Arg, rank: usize) -> Result<Vec<usize>> {
        let axes = self.axis_list(arg, rank)?;
        if axes.iter().enumerate().any(|(i, a)| axes[..i].contains(a)) {
            return Err(Diagnostic::error(Code::BadValue, "repeated axis").label(arg.range, "an axis appears twice"));
        }
        Ok(axes)
    }

    pub fn flag(&self, arg: Option<Arg>, what: &str) -> Result<bool> {
        match arg {
            None => Ok(false),
            Some(Arg { value: Value::Bool(b), .. }) => Ok(b),
            Some(a) => Err(Diagnostic::error(Code::BadValue, format!("`{what}` must be True or False")).label(a.range, "here")),
        }
    }

    pub fn reduce(&mut self, kind: Reduction, a: Arg, axis: Option<Arg>, keepdims: Option<Arg>, range: TextRange) -> Result<Value> {
        let id = self.tensor(&a, None)?;
        let ty = self.ty(id).clone();
        let axes = match &axis {
            None | Some(Arg { value: Value::None, .. }) => (0..ty.rank()).collect(),
            Some(arg) => self.axes(arg, ty.rank())?,
        };
        let keepdims = self.flag(keepdims, "keepdims")?;
        if matches!(kind, Reduction::Max | Reduction::Min) {
            if let Some(&ax) = axes.iter().find(|&&ax| ty.shape[ax] == 0) {
                return Err(Diagnostic::error(Code::BadValue, format!("zero-size axis {ax} has no maximum or minimum"))
                    .label(a.range, ty.to_string()));
            }
        }
        let op = match kind {
            Reduction::Sum | Reduction::Mean => ReduceOp::Sum,
            Reduction::Max => ReduceOp::Max,
            Reduction::Min => ReduceOp::Min,
            Reduction::Prod => ReduceOp::Prod,
        };
        let mut out = id;
        if !axes.is_empty() {
            out = self.push(Op::Reduce { op, axes: axes.clone() }, vec![id], range)?;
        }
        if kind == Reduction::Mean {
            let count: usize = axes.iter().map(|&ax| ty.shape[ax]).product();
            let dtype = self.ty(out).dtype.to_float();
            let shape = self.ty(out).shape.clone();
            let n = self.full(&shape, count as f64, dtype, range)?;
            out = self.push(Op::Binary(BinaryOp::Div), vec![out, n], range)?;
        }
        if keepdims {
            let shape: Vec<usize> = (0..ty.rank()).map(|ax| if axes.contains(&ax) { 1 } else { ty.shape[ax] }).collect();
            out = self.reshape_to(out, &shape, range)?;
        }
        Ok(Value::Tensor(out))
    }

    /// A reduction call bound by [`reduction_params`]: `dtype=` may name a float dtype (the
    /// reference computes in float64 regardless); `out=` is not supported.
    pub(crate) fn reduction_call(&mut self, name: &str, fname: &str, bound: Vec<Option<Arg>>, call: TextRange) -> Result<Value> {
        let params = reduction_params(name, "a");
        let get = |p: &str| params.iter().position(|q| *q == p).and_then(|i| bound[i].clone());
        let a = required(get("a"), fname, "a", call)?;
        if let Some(out) = get("out").filter(|o| o.value != Value::None) {
            return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{fname}` does not take `out` in a spec"))
                .label(out.range, "arrays are immutable in a spec; use the returned value"));
        }
        let mut a = a;
        if let Some(d) = get("dtype").filter(|d| d.value != Value::None) {
            let dtype = self.dtype_value(&d)?;
            if !dtype.is_float() {
                return Err(Diagnostic::error(Code::UnsupportedDtype, format!("`{fname}` with an integer or boolean dtype is not supported"))
                    .label(d.range, "use a float dtype or leave it out"));
            }
            // numpy accumulates in `dtype`, and the result has it.
            let id = self.tensor(&a, None)?;
            a = Arg { value: Value::Tensor(self.cast(id, dtype, call)?), range: a.range };
        }
        let (axis, keepdims) = (get("axis"), get("keepdims"));
        match name {
            "var" | "std" => self.variance(name == "std", a, axis, get("ddof"), keepdims, call),
            _ => self.reduce(reduction(name), a, axis, keepdims, call),
        }
    }

    /// numpy's `var`/`std`: the mean of squared deviations from the mean, over `n - ddof`.
    fn variance(&mut self, std: bool, a: Arg, axis: Option<Arg>, ddof: Option<Arg>, keepdims: Option<Arg>, range: TextRange) -> Result<Value> {
        let id = self.tensor(&a, None)?;
        let ty = self.ty(id).clone();
        let axes = match &axis {
            None | Some(Arg { value: Value::None, .. }) => (0..ty.rank()).collect(),
            Some(arg) => self.axes(arg, ty.rank())?,
        };
        let ddof = match &ddof {
            Some(d) => self.int_value(d, "`ddof`")?,
            None => 0,
        };
        let count = axes.iter().map(|&ax| ty.shape[ax]).product::<usize>() as i64 - ddof;
        let x = Arg { value: Value::Tensor(id), range: a.range };
        let keep = Some(Arg { value: Value::Bool(true), range });
        let mean = self.reduce(Reduction::Mean, x.clone(), axis.clone(), keep, range)?;
        let dev = self.elementwise(BinaryOp::Sub, x, Arg { value: mean, range }, range)?;
        let sq = self.elementwise(BinaryOp::Mul, Arg { value: dev.clone(), range }, Arg { value: dev, range }, range)?;
        let sum = self.reduce(Reduction::Sum, Arg { value: sq, range }, axis, keepdims, range)?;
        let var = self.elementwise(BinaryOp::Div, Arg { value: sum, range }, Arg { value: Value::Float(count as f64), range }, range)?;
        if std {
            return self.unary(UnaryOp::Sqrt, Arg { value: var, range }, range);
        }
        Ok(var)
    }

    /// A row-major reshape (no node when the shape is unchanged).
    pub fn reshape_to(&mut self, id: NodeId, shape: &[usize], range: TextRange) -> Result<NodeId> {
        if self.ty(id).shape == shape {
            return Ok(id);
        }
        self.push(Op::Reshape { shape: shape.to_vec() }, vec![id], range)
    }

    pub fn transpose_perm(&mut self, id: NodeId, perm: Vec<usize>, range: TextRange) -> Result<NodeId> {
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(id);
        }
        self.push(Op::Transpose { perm }, vec![id], range)
    }

    fn reshape(&mut self, a: Arg, shape: Arg, range: TextRange) -> Result<Value> {
        let id = self.tensor(&a, None)?;
        let ty = self.ty(id).clone();
        let items: Vec<i64> = match &shape.value {
            Value::Tuple(items) => items.iter().map(|v| self.int_value(&Arg { value: v.clone(), range: shape.range }, "a dimension")).collect::<Result<_>>()?,
            _ => vec![self.int_value(&shape, "a dimension")?],
        };
        // numpy takes any negative size as the unknown one.
        let unknown: Vec<usize> = items.iter().enumerate().filter(|(_, &d)| d < 0).map(|(i, _)| i).collect();
        if unknown.len() > 1 {
            return Err(Diagnostic::error(Code::BadReshape, "can only specify one unknown dimension (-1)").label(shape.range, "here"));
        }
        let known: usize = items.iter().filter(|&&d| d >= 0).try_fold(1usize, |acc, &d| acc.checked_mul(d as usize)).unwrap_or(usize::MAX);
        let total = ty.num_elements();
        let bad = || {
            Diagnostic::error(Code::BadReshape, format!("cannot reshape {ty} ({total} elements) into shape ({})", items.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")))
                .label(a.range, ty.to_string())
                .label(shape.range, "new shape")
        };
        let mut dims: Vec<usize> = items.iter().map(|&d| d.max(0) as usize).collect();
        if let Some(&u) = unknown.first() {
            if known == 0 || !total.is_multiple_of(known) {
                return Err(bad());
            }
            dims[u] = total / known;
        } else if known != total {
            return Err(bad());
        }
        Ok(Value::Tensor(self.reshape_to(id, &dims, range)?))
    }

    fn transpose(&mut self, a: Arg, axes: Option<Arg>, range: TextRange) -> Result<Value> {
        let id = self.tensor(&a, None)?;
        let rank = self.ty(id).rank();
        let perm: Vec<usize> = match axes {
            None | Some(Arg { value: Value::None, .. }) => (0..rank).rev().collect(),
            Some(arg) => {
                let perm = self.axis_list(&arg, rank)?;
                let mut sorted = perm.clone();
                sorted.sort_unstable();
                if sorted != (0..rank).collect::<Vec<_>>() {
                    return Err(Diagnostic::error(Code::BadValue, format!("axes don't match array: expected a permutation of 0..{rank}"))
                        .label(arg.range, "not a permutation of the axes"));
                }
                perm
            }
        };
        Ok(Value::Tensor(self.transpose_perm(id, perm, range)?))
    }

    fn swapaxes(&mut self, a: Arg, a1: Arg, a2: Arg, range: TextRange) -> Result<Value> {
        let id = self.tensor(&a, None)?;
        let rank = self.ty(id).rank();
        let (i, j) = (self.axis(&a1, rank)?, self.axis(&a2, rank)?);
        let mut perm: Vec<usize> = (0..rank).collect();
        perm.swap(i, j);
        Ok(Value::Tensor(self.transpose_perm(id, perm, range)?))
    }

    /// numpy's `argmax`/`argmin`: along `axis`, or over the flattened array when there is none;
    /// an `int64` index, which a spec may return (reshaped or cast to an integer dtype) and
    /// nothing else.
    #[allow(clippy::too_many_arguments)]
    fn arg_reduce(&mut self, name: &str, fname: &str, a: Arg, axis: Option<Arg>, out: Option<Arg>, keepdims: Option<Arg>, range: TextRange) -> Result<Value> {
        if let Some(out) = out.filter(|o| o.value != Value::None) {
            return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{fname}` does not take `out` in a spec"))
                .label(out.range, "arrays are immutable in a spec; use the returned value"));
        }
        let mut id = self.tensor(&a, None)?;
        let ty = self.ty(id).clone();
        let keepdims = self.flag(keepdims, "keepdims")?;
        let axis = match axis {
            None | Some(Arg { value: Value::None, .. }) => {
                id = self.reshape_to(id, &[ty.num_elements()], range)?;
                None
            }
            Some(arg) => Some(self.axis(&arg, ty.rank())?),
        };
        let extent = axis.map_or(ty.num_elements(), |ax| ty.shape[ax]);
        if extent == 0 {
            return Err(Diagnostic::error(Code::BadValue, format!("attempt to get {name} of an empty sequence")).label(a.range, ty.to_string()));
        }
        index_fits(fname, extent, &a, &ty)?;
        let op = if name == "argmin" { ReduceOp::Min } else { ReduceOp::Max };
        let mut result = self.push(Op::ArgReduce { op, axis: axis.unwrap_or(0) }, vec![id], range)?;
        if keepdims {
            let shape: Vec<usize> = (0..ty.rank()).map(|ax| if axis.is_none_or(|a| a == ax) { 1 } else { ty.shape[ax] }).collect();
            result = self.reshape_to(result, &shape, range)?;
        }
        Ok(Value::Tensor(result))
    }

    /// numpy's `sort`/`argsort`: along `axis` (the last by default), or over the flattened array
    /// when it is `None`. `options` are `kind`, `order` and `stable`: a stable kind (`"stable"`,
    /// `"mergesort"`, `stable=True`) orders equal elements by index; the others leave their
    /// order to numpy; `order` (for structured arrays) is refused.
    fn sort(&mut self, name: &str, fname: &str, a: Arg, axis: Option<Arg>, options: [Option<Arg>; 3], range: TextRange) -> Result<Value> {
        let [kind, order, stable] = options;
        if let Some(order) = order.filter(|o| o.value != Value::None) {
            return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{fname}` does not take `order` in a spec"))
                .label(order.range, "`order` sorts structured arrays, which a spec does not have"));
        }
        let mut is_stable = match stable {
            Some(Arg { value: Value::None, .. }) | None => false,
            flag => self.flag(flag, "stable")?,
        };
        match kind {
            None | Some(Arg { value: Value::None, .. }) => {}
            Some(Arg { value: Value::Str(k), range: r }) => match k.as_str() {
                "quicksort" | "heapsort" => {}
                "stable" | "mergesort" => is_stable = true,
                _ => {
                    return Err(Diagnostic::error(Code::BadValue, format!("sort kind must be one of 'quick', 'heap', or 'stable' (got '{k}')"))
                        .label(r, "numpy's kinds are \"quicksort\", \"heapsort\", \"stable\" and \"mergesort\""))
                }
            },
            Some(other) => return Err(Diagnostic::error(Code::BadValue, "`kind` must be a string").label(other.range, "here")),
        }
        let mut id = self.tensor(&a, None)?;
        let ty = self.ty(id).clone();
        let axis = match axis {
            Some(Arg { value: Value::None, .. }) => {
                id = self.reshape_to(id, &[ty.num_elements()], range)?;
                0
            }
            None if ty.rank() == 0 => {
                return Err(Diagnostic::error(Code::BadValue, "axis -1 is out of bounds for array of dimension 0").label(a.range, ty.to_string()));
            }
            None => ty.rank() - 1,
            Some(arg) => self.axis(&arg, ty.rank())?,
        };
        let extent = self.ty(id).shape[axis];
        if extent == 0 {
            return Err(Diagnostic::error(Code::BadValue, format!("`{fname}` of an empty axis")).label(a.range, ty.to_string()).help("a spec sorts axes of one element or more"));
        }
        if name == "sort" {
            return Ok(Value::Tensor(self.push(Op::Sort { axis }, vec![id], range)?));
        }
        index_fits(fname, extent, &a, &ty)?;
        Ok(Value::Tensor(self.push(Op::ArgSort { axis, stable: is_stable }, vec![id], range)?))
    }

    /// `a` and the axis an `axis=` argument names, or numpy's `axis=None`: the array flattened,
    /// and its one axis.
    pub fn axis_or_flat(&mut self, a: &Arg, axis: Option<Arg>, range: TextRange) -> Result<(NodeId, usize)> {
        let id = self.tensor(a, None)?;
        match axis {
            None | Some(Arg { value: Value::None, .. }) => {
                let n = self.ty(id).num_elements();
                Ok((self.reshape_to(id, &[n], range)?, 0))
            }
            Some(arg) => Ok((id, self.axis(&arg, self.ty(id).rank())?)),
        }
    }

    /// numpy's `cumsum` (`cumprod`, a ufunc's `accumulate`): along `axis`, or over the flattened
    /// array when there is none.
    pub(crate) fn scan(&mut self, op: ReduceOp, a: Arg, axis: Option<Arg>, range: TextRange) -> Result<Value> {
        let (id, axis) = self.axis_or_flat(&a, axis, range)?;
        Ok(Value::Tensor(self.push(Op::Scan { op, axis, reverse: false, exclusive: false }, vec![id], range)?))
    }

    fn expand_dims(&mut self, a: Arg, axis: Arg, range: TextRange) -> Result<Value> {
        let id = self.tensor(&a, None)?;
        let shape = self.ty(id).shape.clone();
        let n_new = match &axis.value {
            Value::Tuple(items) => items.len(),
            _ => 1,
        };
        let out_rank = shape.len() + n_new;
        let axes = self.axes(&axis, out_rank)?;
        let mut rest = shape.iter();
        let out: Vec<usize> = (0..out_rank).map(|i| if axes.contains(&i) { 1 } else { *rest.next().unwrap() }).collect();
        Ok(Value::Tensor(self.reshape_to(id, &out, range)?))
    }

    fn squeeze(&mut self, a: Arg, axis: Option<Arg>, range: TextRange) -> Result<Value> {
        let id = self.tensor(&a, None)?;
        let ty = self.ty(id).clone();
        let axes: Vec<usize> = match &axis {
            None | Some(Arg { value: Value::None, .. }) => (0..ty.rank()).filter(|&i| ty.shape[i] == 1).collect(),
            Some(arg) => {
                let axes = self.axes(arg, ty.rank())?;
                if let Some(&ax) = axes.iter().find(|&&ax| ty.shape[ax] != 1) {
                    return Err(Diagnostic::error(Code::BadValue, format!("cannot squeeze axis {ax} of size {}", ty.shape[ax]))
                        .label(arg.range, "only axes of size 1 can be squeezed")
                        .label(a.range, ty.to_string()));
                }
                axes
            }
        };
        let out: Vec<usize> = (0..ty.rank()).filter(|i| !axes.contains(i)).map(|i| ty.shape[i]).collect();
        Ok(Value::Tensor(self.reshape_to(id, &out, range)?))
    }

    pub fn concatenate(&mut self, stack: bool, arrays: Arg, axis: Option<Arg>, range: TextRange) -> Result<Value> {
        let Value::Tuple(items) = &arrays.value else {
            return Err(Diagnostic::error(Code::BadValue, "expected a tuple or list of arrays").label(arrays.range, format!("this is {}", self.describe(&arrays.value))));
        };
        if items.is_empty() {
            return Err(Diagnostic::error(Code::BadValue, "need at least one array to concatenate").label(arrays.range, "empty"));
        }
        let mut ids = Vec::new();
        for v in items {
            ids.push(self.tensor(&Arg { value: v.clone(), range: arrays.range }, None)?);
        }
        let rank = self.ty(ids[0]).rank();
        if let Some(&other) = ids.iter().find(|&&i| self.ty(i).rank() != rank) {
            return Err(Diagnostic::error(Code::ShapeMismatch, format!("all arrays must have the same rank: {} and {}", self.ty(ids[0]), self.ty(other))).label(arrays.range, "here"));
        }
        let out_rank = rank + stack as usize;
        let axis = match axis {
            None => 0,
            Some(Arg { value: Value::None, range: r }) => {
                return Err(Diagnostic::error(Code::UnsupportedArgument, "`axis=None` is not supported").label(r, "flatten first with `.reshape(-1)`"))
            }
            Some(a) => self.axis(&a, out_rank)?,
        };
        if stack {
            let shape = self.ty(ids[0]).shape.clone();
            if let Some(&other) = ids.iter().find(|&&i| self.ty(i).shape != shape) {
                return Err(Diagnostic::error(Code::ShapeMismatch, format!("all arrays must have the same shape to stack: {} and {}", self.ty(ids[0]), self.ty(other))).label(arrays.range, "here"));
            }
            let mut out = shape.clone();
            out.insert(axis, 1);
            ids = ids.into_iter().map(|i| self.reshape_to(i, &out, range)).collect::<Result<_>>()?;
        } else {
            let first = self.ty(ids[0]).clone();
            for &i in &ids {
                let t = self.ty(i);
                if (0..rank).any(|d| d != axis && t.shape[d] != first.shape[d]) {
                    return Err(Diagnostic::error(Code::ShapeMismatch, format!("cannot concatenate {first} and {t} along axis {axis}: other axes differ")).label(arrays.range, "here"));
                }
            }
        }
        if ids.len() == 1 {
            return Ok(Value::Tensor(ids[0]));
        }
        Ok(Value::Tensor(self.push(Op::Concat { axis }, ids, range)?))
    }

    fn filled(&mut self, shape: Vec<usize>, value: Value, dtype: Option<Arg>, range: TextRange) -> Result<Value> {
        let Some(v) = value.number() else {
            return Err(Diagnostic::error(Code::BadValue, format!("fill value must be a number known before the kernel runs, found {}", value.a_kind())).label(range, "here"));
        };
        let dtype = match &dtype {
            Some(d) => self.dtype_value(d)?,
            None => match value {
                Value::Int(_) => DType::I64,
                Value::Bool(_) => DType::Bool,
                _ => DType::F64,
            },
        };
        Ok(Value::Tensor(self.full(&shape, v, dtype, range)?))
    }

    fn arange(&mut self, start: Arg, stop: Option<Arg>, step: Option<Arg>, dtype: Option<Arg>, range: TextRange) -> Result<Value> {
        let (start, stop) = match stop {
            Some(stop) => (start, stop),
            None => (Arg { value: Value::Int(0), range: start.range }, start),
        };
        let step = step.unwrap_or(Arg { value: Value::Int(1), range });
        let num = |a: &Arg| {
            a.value.number().ok_or_else(|| {
                Diagnostic::error(Code::BadValue, "np.arange bounds must be numbers known before the kernel runs").label(a.range, format!("this is {}", self.describe(&a.value)))
            })
        };
        let (s, e, d) = (num(&start)?, num(&stop)?, num(&step)?);
        if d == 0.0 {
            return Err(Diagnostic::error(Code::BadValue, "np.arange step cannot be zero").label(step.range, "here"));
        }
        let n = ((e - s) / d).ceil().max(0.0);
        if !n.is_finite() || n > 1e12 {
            return Err(Diagnostic::error(Code::BadValue, format!("np.arange({s}, {e}, {d}) has no finite length")).label(range, "here"));
        }
        let n = n as usize;
        let all_int = [&start, &stop, &step].iter().all(|a| matches!(a.value, Value::Int(_)));
        let dtype = match &dtype {
            Some(a) => self.dtype_value(a)?,
            None if all_int => DType::I64,
            None => DType::F64,
        };
        let mut id = self.push(Op::Iota { shape: vec![n], axis: 0, dtype }, vec![], range)?;
        if d != 1.0 {
            let c = self.full(&[n], d, dtype, range)?;
            id = self.push(Op::Binary(BinaryOp::Mul), vec![id, c], range)?;
        }
        if s != 0.0 {
            let c = self.full(&[n], s, dtype, range)?;
            id = self.push(Op::Binary(BinaryOp::Add), vec![id, c], range)?;
        }
        Ok(Value::Tensor(id))
    }

    /// `np.tril(m, k)` / `np.triu(m, k)` on the last two axes, as a select on an index mask.
    /// A `rows × cols` boolean matrix holding `j cmp i + k` at row `i`, column `j`: `tril`'s,
    /// `triu`'s and `eye`'s masks.
    pub fn diagonal_mask(&mut self, rows: usize, cols: usize, cmp: CmpOp, k: i64, range: TextRange) -> Result<NodeId> {
        let i = self.push(Op::Iota { shape: vec![rows, cols], axis: 0, dtype: DType::I64 }, vec![], range)?;
        let j = self.push(Op::Iota { shape: vec![rows, cols], axis: 1, dtype: DType::I64 }, vec![], range)?;
        let kc = self.full(&[rows, cols], k as f64, DType::I64, range)?;
        let ik = self.push(Op::Binary(BinaryOp::Add), vec![i, kc], range)?;
        self.push(Op::Compare(cmp), vec![j, ik], range)
    }

    fn tri(&mut self, lower: bool, m: Arg, k: Option<Arg>, range: TextRange) -> Result<Value> {
        let mut id = self.tensor(&m, None)?;
        let mut ty = self.ty(id).clone();
        if ty.rank() == 1 {
            // numpy treats a vector as the square matrix whose every row is that vector.
            let n = ty.shape[0];
            id = self.broadcast_to(id, &[n, n], range)?;
            ty = self.ty(id).clone();
        }
        if ty.rank() < 2 {
            return Err(Diagnostic::error(Code::BadValue, format!("np.{} needs an array of rank 1 or more, got {ty}", if lower { "tril" } else { "triu" }))
                .label(m.range, ty.to_string()));
        }
        let k = match &k {
            Some(a) => self.int_value(a, "`k`")?,
            None => 0,
        };
        let (rows, cols) = (ty.shape[ty.rank() - 2], ty.shape[ty.rank() - 1]);
        // tril keeps j <= i + k; triu keeps j >= i + k.
        let mask = self.diagonal_mask(rows, cols, if lower { CmpOp::Le } else { CmpOp::Ge }, k, range)?;
        let mask = self.broadcast_to(mask, &ty.shape, range)?;
        let zero = self.full(&ty.shape, 0.0, ty.dtype, range)?;
        Ok(Value::Tensor(self.push(Op::Select, vec![mask, id, zero], range)?))
    }

    /// `a @ b` with numpy's rules: 1-D operands gain and lose an axis, batch axes broadcast.
    pub fn matmul(&mut self, a: Arg, b: Arg, range: TextRange) -> Result<Value> {
        let (ia, ib) = (self.tensor(&a, None)?, self.tensor(&b, None)?);
        let (ta, tb) = (self.ty(ia).clone(), self.ty(ib).clone());
        if ta.rank() == 0 || tb.rank() == 0 {
            let which = if ta.rank() == 0 { &a } else { &b };
            return Err(Diagnostic::error(Code::ShapeMismatch, "matmul does not take 0-d operands").label(which.range, "a scalar").help("use `*` to scale"));
        }
        let k_a = ta.shape[ta.rank() - 1];
        let k_b = if tb.rank() == 1 { tb.shape[0] } else { tb.shape[tb.rank() - 2] };
        if k_a != k_b {
            return Err(Diagnostic::error(Code::ShapeMismatch, format!("matmul: the contracted dimensions differ ({k_a} vs {k_b}) in {ta} @ {tb}"))
                .label(a.range, ta.to_string())
                .label(b.range, tb.to_string()));
        }
        let batch_a = &ta.shape[..ta.rank().saturating_sub(2)];
        let batch_b = &tb.shape[..tb.rank().saturating_sub(2)];
        let Some(batch) = broadcast_shapes(batch_a, batch_b) else {
            return Err(Diagnostic::error(Code::ShapeMismatch, format!("matmul: batch dimensions do not broadcast in {ta} @ {tb}"))
                .label(a.range, ta.to_string())
                .label(b.range, tb.to_string()));
        };
        let letters: Vec<u8> = (b'A'..=b'Z').take(batch.len()).collect();
        let (mut la, mut lb) = (Vec::new(), Vec::new());
        let mut ia = ia;
        let mut ib = ib;
        if ta.rank() >= 2 {
            let mut full = batch.clone();
            full.extend_from_slice(&ta.shape[ta.rank() - 2..]);
            ia = self.broadcast_to(ia, &full, range)?;
            la.extend_from_slice(&letters);
            la.push(b'i');
        }
        la.push(b'j');
        if tb.rank() >= 2 {
            let mut full = batch.clone();
            full.extend_from_slice(&tb.shape[tb.rank() - 2..]);
            ib = self.broadcast_to(ib, &full, range)?;
            lb.extend_from_slice(&letters);
        }
        lb.push(b'j');
        if tb.rank() >= 2 {
            lb.push(b'k');
        }
        let mut out = if ta.rank() >= 2 || tb.rank() >= 2 { letters.clone() } else { Vec::new() };
        if ta.rank() >= 2 {
            out.push(b'i');
        }
        if tb.rank() >= 2 {
            out.push(b'k');
        }
        let spec = EinsumSpec { inputs: vec![la, lb], output: out };
        Ok(Value::Tensor(self.push(Op::Einsum(spec), vec![ia, ib], range)?))
    }

    /// `np.einsum`: implicit output, `...` broadcasting, repeated labels within one operand
    /// (diagonals, and traces where the label is summed).
    fn einsum(&mut self, subscripts: Arg, operands: Vec<Arg>, range: TextRange) -> Result<Value> {
        let Value::Str(text) = &subscripts.value else {
            return Err(Diagnostic::error(Code::UnsupportedEinsum, "np.einsum's first argument must be a subscripts string").label(subscripts.range, "here"));
        };
        let bad = |msg: String| Diagnostic::error(Code::UnsupportedEinsum, msg).label(subscripts.range, "subscripts");
        let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = match text.split_once("->") {
            Some((l, r)) => (l.to_string(), Some(r.to_string())),
            None => (text.clone(), None),
        };
        let terms: Vec<&str> = lhs.split(',').collect();
        if terms.len() != operands.len() {
            return Err(bad(format!("`{text}` names {} operands, but {} were given", terms.len(), operands.len())));
        }
        let ids = operands.iter().map(|o| self.tensor(o, None)).collect::<Result<Vec<_>>>()?;
        let check_term = |t: &str| -> Result<()> {
            let rest = t.replacen("...", "", 1);
            if let Some(c) = rest.chars().find(|c| !c.is_ascii_alphabetic()) {
                return Err(bad(format!("invalid character `{c}` in einsum subscripts")));
            }
            Ok(())
        };
        let used: Vec<u8> = text.bytes().filter(|b| b.is_ascii_alphabetic()).collect();
        let mut free = (b'A'..=b'Z').chain(b'a'..=b'z').filter(|c| !used.contains(c));
        // Labels for the broadcast (`...`) axes, right-aligned across operands.
        let mut ell_rank = 0;
        for (t, &id) in terms.iter().zip(&ids) {
            check_term(t)?;
            let explicit = t.replacen("...", "", 1).len();
            let rank = self.ty(id).rank();
            if t.contains("...") {
                if explicit > rank {
                    return Err(bad(format!("operand `{t}` has more labels than its rank {rank}")));
                }
                ell_rank = ell_rank.max(rank - explicit);
            } else if explicit != rank {
                return Err(Diagnostic::error(Code::ShapeMismatch, format!("einsum operand `{t}` has {explicit} labels but the array has rank {rank} ({})", self.ty(id)))
                    .label(subscripts.range, "subscripts")
                    .label(operands[terms.iter().position(|x| x == t).unwrap()].range, self.ty(id).to_string()));
            }
        }
        let ell: Vec<u8> = (0..ell_rank).map(|_| free.next().expect("fewer than 52 labels")).collect();
        let mut inputs = Vec::new();
        let mut ids2 = Vec::new();
        let mut ell_shape = vec![1usize; ell_rank];
        for (t, &id) in terms.iter().zip(&ids) {
            let ty = self.ty(id).clone();
            let (before, after) = t.split_once("...").unwrap_or((t, ""));
            let n = ty.rank() - before.len() - after.len();
            let dims = &ty.shape[before.len()..before.len() + n];
            match broadcast_shapes(&ell_shape, dims) {
                Some(s) => ell_shape = s,
                None => return Err(bad(format!("the `...` axes of the operands do not broadcast ({ty})"))),
            }
            if t.contains("...") && n < ell_rank {
                // Pad the operand's `...` part on the left with size-1 axes.
                let mut shape = ty.shape[..before.len()].to_vec();
                shape.extend(std::iter::repeat_n(1, ell_rank - n));
                shape.extend_from_slice(&ty.shape[before.len()..]);
                ids2.push(self.reshape_to(id, &shape, range)?);
            } else {
                ids2.push(id);
            }
            let mut labels = before.as_bytes().to_vec();
            if t.contains("...") {
                labels.extend_from_slice(&ell);
            }
            labels.extend_from_slice(after.as_bytes());
            let mut unique: Vec<u8> = Vec::new();
            for &l in &labels {
                if !unique.contains(&l) {
                    unique.push(l);
                }
            }
            if unique.len() < labels.len() {
                // A label repeated within an operand reads its diagonal (numpy's `ii->i`, and
                // `ii` a trace once the label is summed): a gather without indices.
                let k = ids2.len() - 1;
                let shape = self.ty(ids2[k]).shape.clone();
                let size = |l: u8| shape[labels.iter().position(|&m| m == l).expect("a label of the operand")];
                if let Some((&l, _)) = labels.iter().zip(&shape).find(|(&l, &n)| n != size(l)) {
                    let message = format!("label `{}` is repeated in operand `{t}` over axes of different lengths ({})", l as char, self.ty(ids2[k]));
                    return Err(Diagnostic::error(Code::ShapeMismatch, message).label(subscripts.range, "subscripts"));
                }
                let from = labels.iter().map(|l| GatherAxis::Along { axis: unique.iter().position(|u| u == l).expect("unique"), start: 0, step: 1 }).collect();
                ids2[k] = self.gather(ids2[k], unique.iter().map(|&l| size(l)).collect(), from, Vec::new(), range)?;
            }
            inputs.push(unique);
        }
        // Expand the size-1 `...` axes to the broadcast shape.
        for (k, labels) in inputs.iter().enumerate() {
            if let Some(p) = labels.iter().position(|l| ell.first() == Some(l)) {
                let mut shape = self.ty(ids2[k]).shape.clone();
                shape[p..p + ell_rank].copy_from_slice(&ell_shape);
                ids2[k] = self.broadcast_to(ids2[k], &shape, range)?;
            }
        }
        let output: Vec<u8> = match &rhs {
            Some(r) => {
                check_term(r)?;
                let (before, after) = r.split_once("...").unwrap_or((r, ""));
                let mut o = before.as_bytes().to_vec();
                if r.contains("...") {
                    o.extend_from_slice(&ell);
                } else if ell_rank > 0 && !ell_shape.iter().all(|&d| d == 1) {
                    return Err(bad("output subscripts must include `...` when the operands use it".into()));
                }
                o.extend_from_slice(after.as_bytes());
                if let Some(&l) = o.iter().find(|&&l| o.iter().filter(|&&m| m == l).count() > 1) {
                    return Err(bad(format!("output label `{}` appears more than once", l as char)));
                }
                if let Some(&l) = o.iter().find(|l| !inputs.iter().any(|i| i.contains(l))) {
                    return Err(bad(format!("output label `{}` does not appear in any operand", l as char)));
                }
                o
            }
            None => {
                let mut once: Vec<u8> = used.iter().copied().filter(|l| used.iter().filter(|&m| m == l).count() == 1).collect();
                once.sort_unstable();
                let mut o = ell.clone();
                o.extend(once);
                o
            }
        };
        // numpy broadcasts a label's size-1 axes against the label's size in other operands.
        let mut label_size = [1usize; 128];
        for (labels, &id) in inputs.iter().zip(&ids2) {
            for (&l, &n) in labels.iter().zip(&self.ty(id).shape) {
                if n != 1 {
                    label_size[l as usize] = n;
                }
            }
        }
        for (labels, id) in inputs.iter().zip(ids2.iter_mut()) {
            let shape: Vec<usize> = labels
                .iter()
                .zip(&self.ty(*id).shape)
                .map(|(&l, &n)| if n == 1 { label_size[l as usize] } else { n })
                .collect();
            *id = self.broadcast_to(*id, &shape, range)?;
        }
        let spec = EinsumSpec { inputs, output };
        let tys: Vec<_> = ids2.iter().map(|&i| self.ty(i).clone()).collect();
        if let Err(m) = spec.infer(&tys.iter().collect::<Vec<_>>()) {
            let mut d = Diagnostic::error(Code::ShapeMismatch, format!("einsum `{text}`: {m}")).label(subscripts.range, "subscripts");
            for (o, t) in operands.iter().zip(&tys) {
                d = d.label(o.range, t.to_string());
            }
            return Err(d);
        }
        Ok(Value::Tensor(self.push(Op::Einsum(spec), ids2, range)?))
    }
}

/// numpy's signature of a reduction, positional order included, after the array `first`.
/// The longest axis an index result may count along: results are float32 in the kernel ABI.
const MAX_INDEX_RESULT: usize = 1 << 24;

/// An index result over an axis of `extent` elements of `a` (of type `ty`), if float32 holds
/// every index exactly; else the diagnostic.
fn index_fits(fname: &str, extent: usize, a: &Arg, ty: &ollie_graph::TensorType) -> Result<()> {
    if extent > MAX_INDEX_RESULT {
        return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{fname}` over {extent} elements: index results are delivered as float32, exact up to 2^24"))
            .label(a.range, ty.to_string())
            .help("index results are over axes of at most 16777216 elements"));
    }
    Ok(())
}

pub(crate) fn reduction_params(name: &str, first: &'static str) -> Vec<&'static str> {
    let rest: &[&str] = match name {
        "sum" | "prod" | "mean" => &["axis", "dtype", "out", "keepdims"],
        "var" | "std" => &["axis", "dtype", "out", "ddof", "keepdims"],
        _ => &["axis", "out", "keepdims"],
    };
    std::iter::once(first).chain(rest.iter().copied()).collect()
}

fn reduction(name: &str) -> Reduction {
    match name {
        "sum" => Reduction::Sum,
        "prod" => Reduction::Prod,
        "max" | "amax" => Reduction::Max,
        "min" | "amin" => Reduction::Min,
        _ => Reduction::Mean,
    }
}

pub fn normalize_axis(axis: i64, rank: usize) -> Option<usize> {
    let r = rank as i64;
    let a = if axis < 0 { axis.saturating_add(r) } else { axis };
    (0..r).contains(&a).then_some(a as usize)
}

/// The running op of numpy's `cumsum` or `cumprod`.
fn scan_op(name: &str) -> ReduceOp {
    if name == "cumsum" {
        ReduceOp::Sum
    } else {
        ReduceOp::Prod
    }
}
