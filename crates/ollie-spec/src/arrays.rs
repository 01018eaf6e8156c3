//! numpy's array-manipulation functions and elementwise predicates, written with the graph's
//! views and operations: `repeat`, `tile`, `moveaxis`, `flip`, `split`, `hstack`, `diff`,
//! `broadcast_to`, `ravel`, `roll`, `eye`, `linspace`, `round`/`rint`, `count_nonzero`, `isnan`/`isinf`/`isfinite`, `nan_to_num`,
//! `all`/`any` and the `logical_*` functions, with numpy's argument and shape rules.

use ollie_graph::{BinaryOp, CmpOp, DType, NodeId, Op, SliceAxis, UnaryOp};
use ruff_text_size::TextRange;

use crate::builder::{Arg, Builder, CallArgs, Result};
use crate::diagnostic::{Code, Diagnostic};
use crate::numpy::required;
use crate::value::Value;

/// The functions this module provides, as `np.NAME`.
pub const FUNCTIONS: &[&str] = &[
    "all", "any", "array", "array_split", "around", "asarray", "broadcast_to", "copy", "diff", "eye", "flip", "fliplr", "flipud", "hsplit", "hstack", "identity",
    "count_nonzero", "isfinite", "isinf", "isnan", "linspace", "logical_and", "logical_not", "logical_or", "logical_xor", "moveaxis", "nan_to_num", "ravel",
    "repeat", "rint", "roll", "round", "split", "tile", "vsplit", "vstack",
];

/// The array methods this module provides, as `.NAME()`.
pub const METHODS: &[&str] = &["all", "any", "clip", "copy", "dot", "flatten", "ravel", "repeat", "round"];

impl Builder<'_> {
    /// `np.NAME(args)` for a function of [`FUNCTIONS`].
    pub fn arrays_call(&mut self, name: &str, args: CallArgs) -> Result<Value> {
        let fname = format!("np.{name}");
        self.array_function(name, &fname, None, args)
    }

    /// `receiver.NAME(args)` for a method of [`METHODS`].
    pub fn arrays_method(&mut self, receiver: Arg, name: &str, args: CallArgs) -> Result<Value> {
        let mname = format!(".{name}()");
        match name {
            "clip" => {
                let call = args.range;
                let b = args.bind(&mname, Some(receiver), &["self", "min", "max"])?;
                let mut it = b.into_iter();
                let a = it.next().unwrap().expect("the receiver");
                self.clip(a, it.next().unwrap(), it.next().unwrap(), call)
            }
            "dot" => {
                let call = args.range;
                let b = args.bind(&mname, Some(receiver), &["self", "b"])?;
                let mut it = b.into_iter();
                let a = it.next().unwrap().expect("the receiver");
                let other = required(it.next().unwrap(), &mname, "b", call)?;
                let ca = CallArgs { positional: vec![a, other], keywords: Vec::new(), range: call };
                self.composite_call("dot", ca)
            }
            "flatten" => {
                let call = args.range;
                let b = args.bind(&mname, Some(receiver), &["self", "order"])?;
                let mut it = b.into_iter();
                let a = it.next().unwrap().expect("the receiver");
                row_major(it.next().unwrap(), &mname)?;
                self.ravel(a, call)
            }
            _ => self.array_function(name, &mname, Some(receiver), args),
        }
    }

    /// A function of this module as `np.NAME(a, ...)`, or as the method `a.NAME(...)` with the
    /// receiver for its first parameter.
    fn array_function(&mut self, name: &str, fname: &str, receiver: Option<Arg>, args: CallArgs) -> Result<Value> {
        let call = args.range;
        macro_rules! bind {
            ($($p:expr),*) => {{
                let b = args.bind(fname, receiver, &[$($p),*])?;
                let mut it = b.into_iter();
                ($( { let _ = $p; it.next().unwrap() } ),*)
            }};
        }
        match name {
            "round" | "around" => {
                let (a, decimals) = bind!("a", "decimals");
                let decimals = match decimals {
                    Some(d) => self.int_value(&d, "`decimals`")?,
                    None => 0,
                };
                self.round(required(a, fname, "a", call)?, decimals, call)
            }
            "rint" => {
                let x = bind!("x");
                self.round(required(x, fname, "x", call)?, 0, call)
            }
            "isnan" | "isinf" | "isfinite" => {
                let x = required(bind!("x"), fname, "x", call)?;
                self.float_class(name, x, call)
            }
            "nan_to_num" => {
                let (x, copy, nan, posinf, neginf) = bind!("x", "copy", "nan", "posinf", "neginf");
                let _ = self.flag(copy, "copy")?;
                self.nan_to_num(required(x, fname, "x", call)?, [nan, posinf, neginf], call)
            }
            "logical_and" | "logical_or" | "logical_xor" => {
                let (a, b) = bind!("x1", "x2");
                let (a, b) = (required(a, fname, "x1", call)?, required(b, fname, "x2", call)?);
                let (a, b) = (self.truth(a, call)?, self.truth(b, call)?);
                match name {
                    "logical_and" => self.elementwise(BinaryOp::Min, a, b, call),
                    "logical_or" => self.elementwise(BinaryOp::Max, a, b, call),
                    _ => self.compare(ruff_python_ast::CmpOp::NotEq, a, b, call),
                }
            }
            "logical_not" => {
                let x = required(bind!("x"), fname, "x", call)?;
                let x = self.truth(x, call)?;
                self.compare(ruff_python_ast::CmpOp::Eq, x, Arg { value: Value::Bool(false), range: call }, call)
            }
            "all" | "any" => {
                let (a, axis, out, keepdims) = bind!("a", "axis", "out", "keepdims");
                if let Some(out) = out.filter(|o| o.value != Value::None) {
                    return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{fname}` does not take `out` in a spec"))
                        .label(out.range, "arrays are immutable in a spec; use the returned value"));
                }
                self.all_any(name == "all", required(a, fname, "a", call)?, axis, keepdims, call)
            }
            "eye" | "identity" => {
                let (n, m, k, dtype) = if name == "eye" { bind!("N", "M", "k", "dtype") } else {
                    let (n, dtype) = bind!("n", "dtype");
                    (n, None, None, dtype)
                };
                let n = required(n, fname, "N", call)?;
                let rows = self.int_value(&n, "the number of rows")?;
                let cols = match m.filter(|m| m.value != Value::None) {
                    Some(m) => self.int_value(&m, "the number of columns")?,
                    None => rows,
                };
                if rows < 0 || cols < 0 {
                    return Err(Diagnostic::error(Code::BadValue, "negative dimensions are not allowed").label(call, format!("{rows} × {cols}")));
                }
                let k = match k {
                    Some(k) => self.int_value(&k, "`k`")?,
                    None => 0,
                };
                let dtype = match dtype.filter(|d| d.value != Value::None) {
                    Some(d) => self.dtype_value(&d)?,
                    None => DType::F64,
                };
                Ok(Value::Tensor(self.eye(rows as usize, cols as usize, k, dtype, call)?))
            }
            "array" | "asarray" => {
                let (object, dtype) = bind!("object", "dtype");
                let object = required(object, fname, "object", call)?;
                let dtype = match dtype.filter(|d| d.value != Value::None) {
                    Some(d) => Some(self.dtype_value(&d)?),
                    None => None,
                };
                let given = if let Value::Tensor(id) = object.value { Some(id) } else { None };
                match self.array(object, dtype, call)? {
                    // `np.array` copies an array (`np.asarray` returns it).
                    Value::Tensor(id) if name == "array" && given == Some(id) => Ok(Value::Tensor(self.copy_of(id, call)?)),
                    v => Ok(v),
                }
            }
            "copy" => {
                let a = required(bind!("a"), fname, "a", call)?;
                let id = self.tensor(&a, None)?;
                Ok(Value::Tensor(self.copy_of(id, call)?))
            }
            "ravel" => {
                let (a, order) = bind!("a", "order");
                row_major(order, fname)?;
                self.ravel(required(a, fname, "a", call)?, call)
            }
            "broadcast_to" => {
                let (a, shape) = bind!("array", "shape");
                let a = required(a, fname, "array", call)?;
                let shape_arg = required(shape, fname, "shape", call)?;
                let id = self.tensor(&a, None)?;
                let shape = self.shape_value(&shape_arg)?;
                let own = self.ty(id).shape.clone();
                let fits = own.len() <= shape.len() && own.iter().rev().zip(shape.iter().rev()).all(|(&o, &s)| o == s || o == 1);
                if !fits {
                    return Err(Diagnostic::error(Code::ShapeMismatch, format!("cannot broadcast {} to shape {shape:?}", self.ty(id)))
                        .label(a.range, self.ty(id).to_string())
                        .label(shape_arg.range, "target shape"));
                }
                let id = self.reshape_to(id, &right_aligned(&own, shape.len()), call)?;
                let id = self.broadcast_to(id, &shape, call)?;
                self.read_only.insert(id);
                Ok(Value::Tensor(id))
            }
            "repeat" => {
                let (a, repeats, axis) = bind!("a", "repeats", "axis");
                let a = required(a, fname, "a", call)?;
                let repeats = required(repeats, fname, "repeats", call)?;
                self.repeat(a, repeats, axis, call)
            }
            "tile" => {
                let (a, reps) = bind!("A", "reps");
                self.tile(required(a, fname, "A", call)?, required(reps, fname, "reps", call)?, call)
            }
            "moveaxis" => {
                let (a, source, destination) = bind!("a", "source", "destination");
                let a = required(a, fname, "a", call)?;
                self.moveaxis(a, required(source, fname, "source", call)?, required(destination, fname, "destination", call)?, call)
            }
            "flip" => {
                let (m, axis) = bind!("m", "axis");
                let m = required(m, fname, "m", call)?;
                let id = self.tensor(&m, None)?;
                let rank = self.ty(id).rank();
                let axes = match axis {
                    None | Some(Arg { value: Value::None, .. }) => (0..rank).collect(),
                    Some(arg) => self.axes(&arg, rank)?,
                };
                Ok(Value::Tensor(self.flip(id, &axes, call)?))
            }
            "roll" => {
                let (a, shift, axis) = bind!("a", "shift", "axis");
                let a = required(a, fname, "a", call)?;
                let shift = required(shift, fname, "shift", call)?;
                self.roll(a, shift, axis, call)
            }
            "linspace" => {
                let (start, stop, num, endpoint, retstep, dtype, axis) = bind!("start", "stop", "num", "endpoint", "retstep", "dtype", "axis");
                let (start, stop) = (required(start, fname, "start", call)?, required(stop, fname, "stop", call)?);
                for (arg, what) in [(retstep, "retstep"), (axis, "axis")] {
                    if let Some(arg) = arg.filter(|a| !matches!(a.value, Value::Bool(false) | Value::Int(0) | Value::None)) {
                        return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`np.linspace` with `{what}=` in a spec")).label(arg.range, "not supported"));
                    }
                }
                let endpoint = match endpoint {
                    None => true,
                    Some(e) => self.flag(Some(e), "endpoint")?,
                };
                self.linspace(start, stop, num, endpoint, dtype, call)
            }
            "count_nonzero" => {
                let (a, axis, keepdims) = bind!("a", "axis", "keepdims");
                let a = required(a, fname, "a", call)?;
                let nonzero = self.compare(ruff_python_ast::CmpOp::NotEq, a, Arg { value: Value::Int(0), range: call }, call)?;
                let mut keywords = Vec::new();
                for (k, arg) in [("axis", axis), ("keepdims", keepdims)] {
                    if let Some(arg) = arg {
                        keywords.push((k.to_string(), arg.range, arg));
                    }
                }
                // numpy counts in its default integer (int64), as `sum` of booleans does.
                self.numpy_call("sum", call, CallArgs { positional: vec![Arg { value: nonzero, range: call }], keywords, range: call })
            }
            "fliplr" | "flipud" => {
                let m = required(bind!("m"), fname, "m", call)?;
                let id = self.tensor(&m, None)?;
                let (axis, need) = if name == "fliplr" { (1, 2) } else { (0, 1) };
                if self.ty(id).rank() < need {
                    return Err(Diagnostic::error(Code::BadValue, format!("`{fname}` needs an array of rank {need} or more, got {}", self.ty(id)))
                        .label(m.range, self.ty(id).to_string()));
                }
                Ok(Value::Tensor(self.flip(id, &[axis], call)?))
            }
            "split" | "array_split" | "hsplit" | "vsplit" => {
                let (a, sections, axis) = if matches!(name, "hsplit" | "vsplit") {
                    let (a, s) = bind!("ary", "indices_or_sections");
                    (a, s, None)
                } else {
                    bind!("ary", "indices_or_sections", "axis")
                };
                let a = required(a, fname, "ary", call)?;
                let sections = required(sections, fname, "indices_or_sections", call)?;
                let id = self.tensor(&a, None)?;
                let rank = self.ty(id).rank();
                let axis = match (name, axis) {
                    ("hsplit", _) if rank == 0 => return Err(rank_error(fname, 1, &a, self.ty(id))),
                    ("hsplit", _) => (rank > 1) as usize,
                    ("vsplit", _) if rank < 2 => return Err(rank_error(fname, 2, &a, self.ty(id))),
                    (_, Some(arg)) => self.axis(&arg, rank)?,
                    _ if rank == 0 => return Err(rank_error(fname, 1, &a, self.ty(id))),
                    _ => 0,
                };
                self.split(id, &sections, axis, name != "array_split", call)
            }
            "hstack" | "vstack" => {
                let tup = required(bind!("tup"), fname, "tup", call)?;
                let Value::Tuple(items) = &tup.value else {
                    return Err(Diagnostic::error(Code::BadValue, "expected a tuple or list of arrays").label(tup.range, format!("this is {}", self.describe(&tup.value))));
                };
                let mut ids = Vec::new();
                for v in items {
                    let id = self.tensor(&Arg { value: v.clone(), range: tup.range }, None)?;
                    let shape = self.ty(id).shape.clone();
                    // vstack makes each array at least 2-d (a row); hstack at least 1-d.
                    let least = if name == "vstack" { 2 } else { 1 };
                    ids.push(self.reshape_to(id, &right_aligned(&shape, shape.len().max(least)), call)?);
                }
                let axis = if name == "hstack" && ids.first().is_some_and(|&i| self.ty(i).rank() == 1) { 0 } else { (name == "hstack") as i64 };
                let arrays = Arg { value: Value::Tuple(ids.into_iter().map(Value::Tensor).collect()), range: tup.range };
                self.concatenate(false, arrays, Some(Arg { value: Value::Int(axis), range: call }), call)
            }
            "diff" => {
                let (a, n, axis, prepend, append) = bind!("a", "n", "axis", "prepend", "append");
                if let Some(extra) = [prepend, append].into_iter().flatten().find(|e| e.value != Value::None) {
                    return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{fname}` does not take `prepend` or `append` in a spec"))
                        .label(extra.range, "concatenate it first with `np.concatenate`"));
                }
                let a = required(a, fname, "a", call)?;
                let n = match n {
                    Some(n) => self.int_value(&n, "`n`")?,
                    None => 1,
                };
                self.diff(a, n, axis, call)
            }
            _ => unreachable!("`{name}` is in FUNCTIONS or METHODS"),
        }
    }

    /// numpy's `clip` with either bound `None` (absent).
    pub fn clip(&mut self, a: Arg, lo: Option<Arg>, hi: Option<Arg>, call: TextRange) -> Result<Value> {
        let given = |b: Option<Arg>| b.filter(|b| b.value != Value::None);
        let (lo, hi) = (given(lo), given(hi));
        if lo.is_none() && hi.is_none() {
            return Err(Diagnostic::error(Code::BadValue, "`clip` needs `a_min` or `a_max`").label(call, "both bounds are None: numpy raises"));
        }
        let mut v = a;
        if let Some(lo) = lo {
            v = Arg { value: self.elementwise(BinaryOp::Max, v, lo, call)?, range: call };
        }
        if let Some(hi) = hi {
            v = Arg { value: self.elementwise(BinaryOp::Min, v, hi, call)?, range: call };
        }
        Ok(v.value)
    }

    /// numpy's `round(a, decimals)`: to the nearest integer, ties to even, after scaling by
    /// `10**decimals` (and back), as numpy computes it. Integers stay as they are for
    /// `decimals >= 0`.
    fn round(&mut self, a: Arg, decimals: i64, call: TextRange) -> Result<Value> {
        if let Some(f) = a.value.number() {
            let scale = 10f64.powi(decimals.clamp(-400, 400) as i32);
            return Ok(match a.value {
                Value::Int(_) | Value::Bool(_) if decimals >= 0 => a.value,
                _ if decimals >= 0 => Value::Float((f * scale).round_ties_even() / scale),
                _ => Value::Float((f / (1.0 / scale)).round_ties_even() * (1.0 / scale)),
            });
        }
        let id = self.tensor(&a, None)?;
        let dtype = self.ty(id).dtype;
        if dtype == DType::Bool {
            return Err(Diagnostic::error(Code::BadValue, "numpy does not round boolean arrays").label(a.range, "a boolean array"));
        }
        if dtype.is_int() && decimals >= 0 {
            return Ok(Value::Tensor(id));
        }
        let v = Arg { value: Value::Tensor(id), range: a.range };
        let num = |x: f64| Arg { value: Value::Float(x), range: call };
        let power = 10f64.powi(decimals.unsigned_abs().min(400) as i32);
        // numpy multiplies by 10**d for d > 0 and divides by 10**-d for d < 0.
        let (into, back) = if decimals >= 0 { (BinaryOp::Mul, BinaryOp::Div) } else { (BinaryOp::Div, BinaryOp::Mul) };
        let scaled = if decimals == 0 { v } else { Arg { value: self.elementwise(into, v, num(power), call)?, range: call } };
        let r = self.unary(UnaryOp::Round, scaled, call)?;
        if decimals == 0 {
            return Ok(r);
        }
        self.elementwise(back, Arg { value: r, range: call }, num(power), call)
    }

    /// `isnan`, `isinf`, `isfinite`: a boolean array (a bool for a number). Integer arrays are
    /// never NaN nor infinite.
    fn float_class(&mut self, name: &str, x: Arg, call: TextRange) -> Result<Value> {
        if let Some(f) = x.value.number() {
            return Ok(Value::Bool(match name {
                "isnan" => f.is_nan(),
                "isinf" => f.is_infinite(),
                _ => f.is_finite(),
            }));
        }
        let id = self.tensor(&x, None)?;
        let ty = self.ty(id).clone();
        if !ty.dtype.is_float() {
            return Ok(Value::Tensor(self.full(&ty.shape, (name == "isfinite") as u8 as f64, DType::Bool, call)?));
        }
        let v = Arg { value: Value::Tensor(id), range: x.range };
        let inf = Arg { value: Value::Float(f64::INFINITY), range: call };
        let op = match name {
            "isnan" => return Ok(Value::Tensor(self.push(Op::Compare(CmpOp::Ne), vec![id, id], call)?)),
            "isinf" => ruff_python_ast::CmpOp::Eq,
            _ => ruff_python_ast::CmpOp::Lt,
        };
        let magnitude = self.unary(UnaryOp::Abs, v, call)?;
        self.compare(op, Arg { value: magnitude, range: call }, inf, call)
    }

    /// numpy's `nan_to_num`: NaN becomes `nan` (0), +inf `posinf` and -inf `neginf` (the
    /// dtype's largest finite values by default); integer arrays are returned as they are.
    fn nan_to_num(&mut self, x: Arg, [nan, posinf, neginf]: [Option<Arg>; 3], call: TextRange) -> Result<Value> {
        let id = self.tensor(&x, None)?;
        let dtype = self.ty(id).dtype;
        if !dtype.is_float() {
            return Ok(Value::Tensor(id));
        }
        let largest = match dtype {
            DType::F16 => 65504.0,
            DType::BF16 => 3.3895313892515355e38,
            DType::F32 => f32::MAX as f64,
            _ => f64::MAX,
        };
        let pick = |b: Option<Arg>, default: f64| -> Result<f64> {
            match b.filter(|b| b.value != Value::None) {
                None => Ok(default),
                Some(b) => b.value.number().ok_or_else(|| {
                    Diagnostic::error(Code::BadValue, "a replacement for `nan_to_num` must be a number known before the kernel runs").label(b.range, "not a number")
                }),
            }
        };
        let (nan, posinf, neginf) = (pick(nan, 0.0)?, pick(posinf, largest)?, pick(neginf, -largest)?);
        let v = |id: NodeId| Arg { value: Value::Tensor(id), range: x.range };
        let num = |f: f64| Arg { value: Value::Float(f), range: call };
        let mut out = id;
        for (test, with) in [(f64::NAN, nan), (f64::INFINITY, posinf), (f64::NEG_INFINITY, neginf)] {
            let hit = if test.is_nan() {
                Value::Tensor(self.push(Op::Compare(CmpOp::Ne), vec![id, id], call)?)
            } else {
                self.compare(ruff_python_ast::CmpOp::Eq, v(id), num(test), call)?
            };
            let ids = self.broadcast_all(&[Arg { value: hit, range: call }, num(with), v(out)], call)?;
            out = self.push(Op::Select, ids, call)?;
        }
        Ok(Value::Tensor(out))
    }

    /// A `logical_*` operand as a boolean: nonzero is true.
    fn truth(&mut self, x: Arg, call: TextRange) -> Result<Arg> {
        match &x.value {
            Value::Tensor(id) if self.ty(*id).dtype == DType::Bool => Ok(x),
            Value::Bool(_) => Ok(x),
            Value::Int(_) | Value::Float(_) => Ok(Arg { value: Value::Bool(x.value.number() != Some(0.0)), range: x.range }),
            _ => {
                let range = x.range;
                let t = self.compare(ruff_python_ast::CmpOp::NotEq, x, Arg { value: Value::Int(0), range: call }, call)?;
                Ok(Arg { value: t, range })
            }
        }
    }

    /// numpy's `all`/`any` over `axis` (all axes when `None`): the minimum (maximum) of the
    /// elements' truth.
    fn all_any(&mut self, all: bool, a: Arg, axis: Option<Arg>, keepdims: Option<Arg>, call: TextRange) -> Result<Value> {
        let truth = self.truth(a, call)?;
        let id = self.tensor(&truth, Some(DType::Bool))?;
        let as_float = self.push(Op::Cast { dtype: DType::F32 }, vec![id], call)?;
        let kind = if all { crate::numpy::Reduction::Min } else { crate::numpy::Reduction::Max };
        let reduced = self.reduce(kind, Arg { value: Value::Tensor(as_float), range: call }, axis, keepdims, call)?;
        self.compare(ruff_python_ast::CmpOp::NotEq, Arg { value: reduced, range: call }, Arg { value: Value::Float(0.0), range: call }, call)
    }

    /// numpy's `eye`: ones where the column is the row plus `k`.
    fn eye(&mut self, rows: usize, cols: usize, k: i64, dtype: DType, call: TextRange) -> Result<NodeId> {
        let mask = self.diagonal_mask(rows, cols, CmpOp::Eq, k, call)?;
        if dtype == DType::Bool {
            return Ok(mask);
        }
        self.push(Op::Cast { dtype }, vec![mask], call)
    }

    /// `np.array`/`np.asarray`: an array as it is (cast to `dtype`), or a constant array from
    /// nested tuples and lists of numbers known before the kernel runs (a few thousand at most:
    /// larger data is a parameter).
    pub(crate) fn array(&mut self, object: Arg, dtype: Option<DType>, call: TextRange) -> Result<Value> {
        if let Value::Tensor(id) = object.value {
            return Ok(Value::Tensor(match dtype {
                Some(d) if d != self.ty(id).dtype => self.push(Op::Cast { dtype: d }, vec![id], call)?,
                _ => id,
            }));
        }
        let mut shape = Vec::new();
        let mut numbers = Vec::new();
        flatten(&object.value, 0, &mut shape, &mut numbers).map_err(|what| {
            Diagnostic::error(Code::BadValue, format!("`np.array` of {what}")).label(object.range, "expected numbers, or equal-length tuples or lists of them")
        })?;
        const LARGEST: usize = 4096;
        if numbers.len() > LARGEST {
            return Err(Diagnostic::error(Code::BadValue, format!("a constant array of {} elements", numbers.len()))
                .label(object.range, format!("more than {LARGEST}"))
                .help("pass large data to the kernel as a parameter"));
        }
        let inferred = if numbers.iter().any(|v| matches!(v, Value::Float(_))) {
            DType::F64
        } else if numbers.iter().all(|v| matches!(v, Value::Bool(_))) && !numbers.is_empty() {
            DType::Bool
        } else {
            DType::I64
        };
        let dtype = dtype.unwrap_or(inferred);
        let mut parts = Vec::new();
        for v in &numbers {
            let c = self.push(Op::Constant { value: dtype.round(v.number().expect("flattened numbers")), dtype }, vec![], call)?;
            parts.push(self.reshape_to(c, &[1], call)?);
        }
        let flat = match parts.len() {
            0 => {
                return Err(Diagnostic::error(Code::BadValue, "an empty constant array").label(object.range, "no elements").help("ollie's arrays have at least one element"))
            }
            1 => parts[0],
            _ => self.push(Op::Concat { axis: 0 }, parts, call)?,
        };
        Ok(Value::Tensor(self.reshape_to(flat, &shape, call)?))
    }

    fn ravel(&mut self, a: Arg, call: TextRange) -> Result<Value> {
        let id = self.tensor(&a, None)?;
        let n = self.ty(id).num_elements();
        Ok(Value::Tensor(self.reshape_to(id, &[n], call)?))
    }

    /// numpy's `repeat` with one count for every element: each element `repeats` times in a row
    /// along `axis` (of the flattened array when `None`).
    fn repeat(&mut self, a: Arg, repeats: Arg, axis: Option<Arg>, call: TextRange) -> Result<Value> {
        let Some(r) = repeats.value.int().filter(|&r| r >= 0 && !matches!(repeats.value, Value::Bool(_))) else {
            return Err(Diagnostic::error(Code::UnsupportedArgument, "`repeat` takes one count, a non-negative integer, in a spec")
                .label(repeats.range, format!("this is {}", self.describe(&repeats.value)))
                .help("a count per element makes a data-dependent shape; give one integer"));
        };
        let (id, axis) = self.axis_or_flat(&a, axis, call)?;
        let shape = self.ty(id).shape.clone();
        let mut split = shape.clone();
        split.insert(axis + 1, 1);
        let unit = self.reshape_to(id, &split, call)?;
        split[axis + 1] = r as usize;
        let wide = self.broadcast_to(unit, &split, call)?;
        let mut out = shape;
        out[axis] *= r as usize;
        Ok(Value::Tensor(self.reshape_to(wide, &out, call)?))
    }

    /// numpy's `tile`: the array repeated `reps` times along each axis (counted from the last).
    fn tile(&mut self, a: Arg, reps: Arg, call: TextRange) -> Result<Value> {
        let reps = self.shape_value(&reps)?;
        let id = self.tensor(&a, None)?;
        let own = self.ty(id).shape.clone();
        let d = own.len().max(reps.len());
        let (own, reps) = (right_aligned(&own, d), right_aligned(&reps, d));
        // [1, n0, 1, n1, ...] broadcast to [r0, n0, r1, n1, ...], then merged pairwise.
        let unit: Vec<usize> = own.iter().flat_map(|&n| [1, n]).collect();
        let wide: Vec<usize> = own.iter().zip(&reps).flat_map(|(&n, &r)| [r, n]).collect();
        let out: Vec<usize> = own.iter().zip(&reps).map(|(&n, &r)| n * r).collect();
        let u = self.reshape_to(id, &unit, call)?;
        let w = self.broadcast_to(u, &wide, call)?;
        Ok(Value::Tensor(self.reshape_to(w, &out, call)?))
    }

    /// numpy's `moveaxis`: the `source` axes moved to `destination`, the others in order.
    fn moveaxis(&mut self, a: Arg, source: Arg, destination: Arg, call: TextRange) -> Result<Value> {
        let id = self.tensor(&a, None)?;
        let rank = self.ty(id).rank();
        let (src, dst) = (self.distinct_axes(&source, rank)?, self.distinct_axes(&destination, rank)?);
        if src.len() != dst.len() {
            return Err(Diagnostic::error(Code::BadValue, "`source` and `destination` arguments must have the same number of elements")
                .label(source.range, format!("{} axes", src.len()))
                .label(destination.range, format!("{} axes", dst.len())));
        }
        let mut order: Vec<usize> = (0..rank).filter(|n| !src.contains(n)).collect();
        let mut pairs: Vec<(usize, usize)> = dst.into_iter().zip(src).collect();
        pairs.sort_unstable();
        for (d, s) in pairs {
            order.insert(d, s);
        }
        Ok(Value::Tensor(self.transpose_perm(id, order, call)?))
    }

    /// `id` read backwards along `axes`.
    pub(crate) fn flip(&mut self, id: NodeId, axes: &[usize], call: TextRange) -> Result<NodeId> {
        let shape = self.ty(id).shape.clone();
        let slice = shape
            .iter()
            .enumerate()
            .map(|(j, &n)| if axes.contains(&j) && n > 1 { SliceAxis { start: n - 1, step: -1, len: n } } else { SliceAxis::full(n) })
            .collect::<Vec<_>>();
        self.slice(id, slice, call)
    }

    /// numpy's `roll`: elements shifted along each axis (of the flattened array when `axis` is
    /// None), those pushed past the end coming round to the start — two slices concatenated.
    fn roll(&mut self, a: Arg, shift: Arg, axis: Option<Arg>, call: TextRange) -> Result<Value> {
        let id = self.tensor(&a, None)?;
        let shape = self.ty(id).shape.clone();
        let int = |b: &Self, v: &Value| b.int_value(&Arg { value: v.clone(), range: shift.range }, "a shift");
        let shifts: Vec<i64> = match &shift.value {
            Value::Tuple(items) => items.iter().map(|v| int(self, v)).collect::<Result<_>>()?,
            v => vec![int(self, v)?],
        };
        let (source, axes): (NodeId, Vec<usize>) = match axis {
            None | Some(Arg { value: Value::None, .. }) => {
                let n = self.ty(id).num_elements();
                (self.reshape_to(id, &[n], call)?, vec![0])
            }
            Some(arg) => {
                let axes = match &arg.value {
                    Value::Tuple(items) => items.iter().map(|v| self.axis(&Arg { value: v.clone(), range: arg.range }, shape.len())).collect::<Result<_>>()?,
                    _ => vec![self.axis(&arg, shape.len())?],
                };
                (id, axes)
            }
        };
        // numpy broadcasts the shifts against the axes.
        let pairs: Vec<(usize, i64)> = match (axes.len(), shifts.len()) {
            (x, s) if x == s => axes.into_iter().zip(shifts).collect(),
            (1, _) => shifts.iter().map(|&s| (axes[0], s)).collect(),
            (_, 1) => axes.iter().map(|&x| (x, shifts[0])).collect(),
            (x, s) => {
                return Err(Diagnostic::error(Code::BadValue, format!("`np.roll`: {s} shifts for {x} axes")).label(shift.range, "shape mismatch"))
            }
        };
        let mut out = source;
        for (axis, s) in pairs {
            let n = self.ty(out).shape[axis];
            let s = if n == 0 { 0 } else { s.rem_euclid(n as i64) as usize };
            if s == 0 {
                continue;
            }
            let tail = self.range_along(out, axis, n - s, s, call)?;
            let head = self.range_along(out, axis, 0, n - s, call)?;
            out = self.push(Op::Concat { axis }, vec![tail, head], call)?;
        }
        let out = if out == source { self.copy_of(out, call)? } else { out };
        Ok(Value::Tensor(if self.ty(out).shape == shape { out } else { self.reshape_to(out, &shape, call)? }))
    }

    /// numpy's `linspace`: `num` values from `start` to `stop` (included when `endpoint`),
    /// computed in float64 as numpy does (`start + i·step`) and cast to `dtype`.
    fn linspace(&mut self, start: Arg, stop: Arg, num: Option<Arg>, endpoint: bool, dtype: Option<Arg>, call: TextRange) -> Result<Value> {
        let number = |a: &Arg| {
            a.value.number().ok_or_else(|| {
                Diagnostic::error(Code::BadValue, "`np.linspace` bounds must be numbers known before the kernel runs").label(a.range, format!("this is {}", self.describe(&a.value)))
            })
        };
        let (s, e) = (number(&start)?, number(&stop)?);
        let n = match num {
            None => 50,
            Some(arg) => self.int_value(&arg, "`num`")?,
        };
        if !(0..=1 << 40).contains(&n) {
            return Err(Diagnostic::error(Code::BadValue, format!("`np.linspace` of {n} values")).label(call, "num must be non-negative"));
        }
        let n = n as usize;
        let dtype = match &dtype {
            Some(a) if a.value != Value::None => self.dtype_value(a)?,
            _ => DType::F64,
        };
        let div = if endpoint { n.saturating_sub(1) } else { n };
        let step = if div > 0 { (e - s) / div as f64 } else { 0.0 };
        let mut id = self.push(Op::Iota { shape: vec![n], axis: 0, dtype: DType::F64 }, vec![], call)?;
        let c = self.full(&[n], step, DType::F64, call)?;
        id = self.push(Op::Binary(BinaryOp::Mul), vec![id, c], call)?;
        let c = self.full(&[n], s, DType::F64, call)?;
        id = self.push(Op::Binary(BinaryOp::Add), vec![id, c], call)?;
        Ok(Value::Tensor(if dtype == DType::F64 { id } else { self.cast(id, dtype, call)? }))
    }

    /// A strided slice, no node when it is the whole array.
    pub(crate) fn slice(&mut self, id: NodeId, axes: Vec<SliceAxis>, call: TextRange) -> Result<NodeId> {
        if axes.iter().zip(&self.ty(id).shape).all(|(a, &n)| *a == SliceAxis::full(n)) {
            return Ok(id);
        }
        self.push(Op::Slice { axes }, vec![id], call)
    }

    /// `id[..., start:start+len, ...]` along `axis`.
    pub(crate) fn range_along(&mut self, id: NodeId, axis: usize, start: usize, len: usize, call: TextRange) -> Result<NodeId> {
        let mut axes: Vec<SliceAxis> = self.ty(id).shape.iter().map(|&n| SliceAxis::full(n)).collect();
        axes[axis] = SliceAxis { start, step: 1, len };
        self.slice(id, axes, call)
    }

    /// numpy's `split` (`equal`: sections must divide the axis) and `array_split` (the first
    /// `n % sections` parts one longer): a tuple of slices, or split at the given indices.
    fn split(&mut self, id: NodeId, sections: &Arg, axis: usize, equal: bool, call: TextRange) -> Result<Value> {
        let n = self.ty(id).shape[axis];
        let bounds: Vec<(usize, usize)> = match &sections.value {
            Value::Tuple(items) => {
                let mut cuts = vec![0usize];
                for v in items {
                    let i = self.int_value(&Arg { value: v.clone(), range: sections.range }, "a split index")?;
                    let i = if i < 0 { (i + n as i64).max(0) } else { i } as usize;
                    cuts.push(i.min(n));
                }
                cuts.push(n);
                cuts.windows(2).map(|w| (w[0], w[1].max(w[0]))).collect()
            }
            _ => {
                let k = self.int_value(sections, "the number of sections")?;
                if k <= 0 {
                    return Err(Diagnostic::error(Code::BadValue, "number sections must be larger than 0").label(sections.range, k.to_string()));
                }
                let k = k as usize;
                if equal && !n.is_multiple_of(k) {
                    return Err(Diagnostic::error(Code::BadValue, "array split does not result in an equal division")
                        .label(sections.range, format!("{k} sections of an axis of {n}"))
                        .help("`np.array_split` allows unequal parts"));
                }
                let (q, extra) = (n / k, n % k);
                let mut start = 0;
                (0..k)
                    .map(|i| {
                        let len = q + (i < extra) as usize;
                        start += len;
                        (start - len, start)
                    })
                    .collect()
            }
        };
        let mut parts = Vec::new();
        for (lo, hi) in bounds {
            parts.push(Value::Tensor(self.range_along(id, axis, lo, hi - lo, call)?));
        }
        Ok(Value::Tuple(parts))
    }

    /// numpy's `diff`: `a[1:] - a[:-1]` along `axis`, `n` times (for booleans, `!=`).
    fn diff(&mut self, a: Arg, n: i64, axis: Option<Arg>, call: TextRange) -> Result<Value> {
        let mut id = self.tensor(&a, None)?;
        let rank = self.ty(id).rank();
        if rank == 0 {
            return Err(rank_error("np.diff", 1, &a, self.ty(id)));
        }
        if n < 0 {
            return Err(Diagnostic::error(Code::BadValue, format!("order must be non-negative but got {n}")).label(a.range, "here"));
        }
        let axis = match axis {
            Some(arg) => self.axis(&arg, rank)?,
            None => rank - 1,
        };
        for _ in 0..n {
            let len = self.ty(id).shape[axis];
            let m = len.saturating_sub(1);
            let hi = self.range_along(id, axis, len.min(1), m, call)?;
            let lo = self.range_along(id, axis, 0, m, call)?;
            let op = if self.ty(id).dtype == DType::Bool { Op::Compare(CmpOp::Ne) } else { Op::Binary(BinaryOp::Sub) };
            id = self.push(op, vec![hi, lo], call)?;
        }
        Ok(Value::Tensor(id))
    }
}

/// The numbers of nested tuples `v` in row-major order, and their shape (from `depth`); what
/// is wrong otherwise.
fn flatten(v: &Value, depth: usize, shape: &mut Vec<usize>, out: &mut Vec<Value>) -> std::result::Result<(), String> {
    match v {
        Value::Tuple(items) => {
            match shape.get(depth) {
                Some(&n) if n != items.len() => return Err("ragged nested sequences (numpy makes an object array)".into()),
                Some(_) => {}
                // First reached before any number: this depth's length.
                None if out.is_empty() => shape.push(items.len()),
                None => return Err("ragged nested sequences (numpy makes an object array)".into()),
            }
            items.iter().try_for_each(|item| flatten(item, depth + 1, shape, out))
        }
        Value::Int(_) | Value::Float(_) | Value::Bool(_) if depth == shape.len() => {
            out.push(v.clone());
            Ok(())
        }
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => Err("ragged nested sequences (numpy makes an object array)".into()),
        other => Err(other.a_kind()),
    }
}

/// `shape` with leading 1s to rank `rank`.
fn right_aligned(shape: &[usize], rank: usize) -> Vec<usize> {
    let mut out = vec![1; rank.saturating_sub(shape.len())];
    out.extend(shape);
    out
}

fn rank_error(fname: &str, need: usize, a: &Arg, ty: &ollie_graph::TensorType) -> Diagnostic {
    Diagnostic::error(Code::BadValue, format!("`{fname}` needs an array of rank {need} or more, got {ty}")).label(a.range, ty.to_string())
}

/// An `order=` argument: only numpy's default, row-major (`"C"`), is supported.
fn row_major(order: Option<Arg>, fname: &str) -> Result<()> {
    match order {
        Some(o) if o.value != Value::None && o.value != Value::Str("C".into()) => Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{fname}` supports only row-major order (`\"C\"`) in a spec"))
            .label(o.range, "not supported")),
        _ => Ok(()),
    }
}
