//! numpy functions written with the graph's own operations: `log2`, `exp2`, `sign`,
//! `reciprocal`, `logaddexp`/`logaddexp2`, the products `dot`, `inner`, `outer`, `tensordot`,
//! `np.linalg.norm`, and the diagonals: `diagonal`, `trace`, `diag`. Each keeps numpy's meaning (special values included) and its shape rules.

use ollie_graph::{BinaryOp, EinsumSpec, GatherAxis, NodeId, Op, UnaryOp};
use ruff_python_ast as ast;
use ruff_text_size::TextRange;

use crate::builder::{Arg, Builder, CallArgs, Result};
use crate::diagnostic::{Code, Diagnostic};
use crate::numpy::{required, Reduction};
use crate::value::Value;

/// The functions this module provides, as `np.NAME`.
pub const FUNCTIONS: &[&str] =
    &["diag", "diagonal", "dot", "exp2", "inner", "linalg.norm", "log10", "log2", "logaddexp", "logaddexp2", "outer", "reciprocal", "sign", "tensordot", "trace"];

impl Builder<'_> {
    /// `np.NAME(args)` for a function of [`FUNCTIONS`].
    pub fn composite_call(&mut self, name: &str, args: CallArgs) -> Result<Value> {
        let call = args.range;
        let fname = format!("np.{name}");
        let num = |v: f64| Arg { value: Value::Float(v), range: call };
        let val = |v: Value| Arg { value: v, range: call };
        match name {
            "log2" | "log10" | "exp2" | "sign" | "reciprocal" => {
                let b = args.bind(&fname, None, &["x"])?;
                let x = required(b.into_iter().next().unwrap(), &fname, "x", call)?;
                match name {
                    "log2" | "log10" => {
                        let l = self.unary(UnaryOp::Log, x, call)?;
                        let k = if name == "log2" { std::f64::consts::LOG2_E } else { std::f64::consts::LOG10_E };
                        self.elementwise(BinaryOp::Mul, val(l), num(k), call)
                    }
                    "exp2" => {
                        let t = self.elementwise(BinaryOp::Mul, x, num(std::f64::consts::LN_2), call)?;
                        self.unary(UnaryOp::Exp, val(t), call)
                    }
                    "reciprocal" => self.elementwise(BinaryOp::Div, num(1.0), x, call),
                    _ => self.sign(x, call),
                }
            }
            "logaddexp" | "logaddexp2" => {
                let b = args.bind(&fname, None, &["x1", "x2"])?;
                let mut it = b.into_iter();
                let (a, c) = (required(it.next().unwrap(), &fname, "x1", call)?, required(it.next().unwrap(), &fname, "x2", call)?);
                let ids = self.broadcast_all(&[a, c], call)?;
                let (a, c) = (val(Value::Tensor(ids[0])), val(Value::Tensor(ids[1])));
                // numpy's npy_logaddexp: equal operands (infinities included) give x + ln 2,
                // else max + log1p(exp(-|x1 - x2|)); NaN stays NaN through the maximum.
                // npy_logaddexp2 the same in base 2: x + 1, else max + log1p(2^-|x1 - x2|)/ln 2.
                let (ln_base, doubling) = (std::f64::consts::LN_2, if name == "logaddexp" { std::f64::consts::LN_2 } else { 1.0 });
                let equal = self.compare(ast::CmpOp::Eq, a.clone(), c.clone(), call)?;
                let doubled = self.elementwise(BinaryOp::Add, a.clone(), num(doubling), call)?;
                let larger = self.elementwise(BinaryOp::Max, a.clone(), c.clone(), call)?;
                let d = self.elementwise(BinaryOp::Sub, a, c, call)?;
                let d = self.unary(UnaryOp::Abs, val(d), call)?;
                let d = match name {
                    "logaddexp" => self.unary(UnaryOp::Neg, val(d), call)?,
                    _ => self.elementwise(BinaryOp::Mul, val(d), num(-ln_base), call)?,
                };
                let e = self.unary(UnaryOp::Exp, val(d), call)?;
                let mut l = self.unary(UnaryOp::Log1p, val(e), call)?;
                if name == "logaddexp2" {
                    l = self.elementwise(BinaryOp::Mul, val(l), num(std::f64::consts::LOG2_E), call)?;
                }
                let other = self.elementwise(BinaryOp::Add, val(larger), val(l), call)?;
                self.select(val(equal), val(doubled), val(other), call)
            }
            "dot" | "inner" | "outer" => {
                let b = args.bind(&fname, None, &["a", "b"])?;
                let mut it = b.into_iter();
                let (a, c) = (required(it.next().unwrap(), &fname, "a", call)?, required(it.next().unwrap(), &fname, "b", call)?);
                self.product(name, a, c, call)
            }
            "tensordot" => {
                let b = args.bind(&fname, None, &["a", "b", "axes"])?;
                let mut it = b.into_iter();
                let (a, c) = (required(it.next().unwrap(), &fname, "a", call)?, required(it.next().unwrap(), &fname, "b", call)?);
                self.tensordot(a, c, it.next().unwrap(), call)
            }
            "linalg.norm" => {
                let b = args.bind(&fname, None, &["x", "ord", "axis", "keepdims"])?;
                let mut it = b.into_iter();
                let x = required(it.next().unwrap(), &fname, "x", call)?;
                let (ord, axis, keepdims) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
                self.norm(x, ord, axis, keepdims, call)
            }
            "diagonal" | "trace" => self.diagonal_call(name, None, args),
            "diag" => {
                let b = args.bind(&fname, None, &["v", "k"])?;
                let mut it = b.into_iter();
                let v = required(it.next().unwrap(), &fname, "v", call)?;
                let k = match it.next().unwrap() {
                    Some(k) => self.int_value(&k, "`k`")?,
                    None => 0,
                };
                self.diag(v, k, call)
            }
            _ => unreachable!("`{name}` is in FUNCTIONS"),
        }
    }

    /// `np.diagonal`/`np.trace` (`receiver` None) or the methods `.diagonal()`/`.trace()`.
    pub fn diagonal_call(&mut self, name: &str, receiver: Option<Arg>, args: CallArgs) -> Result<Value> {
        let call = args.range;
        let fname = if receiver.is_some() { format!(".{name}()") } else { format!("np.{name}") };
        let first = if receiver.is_some() { "self" } else { "a" };
        let params: &[&str] = if name == "trace" { &[first, "offset", "axis1", "axis2", "dtype", "out"] } else { &[first, "offset", "axis1", "axis2"] };
        let b = args.bind(&fname, receiver, params)?;
        let mut it = b.into_iter();
        let a = required(it.next().unwrap(), &fname, first, call)?;
        let int = |b: &Self, arg: Option<Arg>, default: i64, what: &str| arg.map_or(Ok(default), |x| b.int_value(&x, what));
        let offset = int(self, it.next().unwrap(), 0, "`offset`")?;
        let (axis1, axis2) = (it.next().unwrap(), it.next().unwrap());
        let diagonal = self.diagonal(&a, offset, axis1, axis2, call)?;
        if name == "diagonal" {
            return Ok(Value::Tensor(diagonal));
        }
        let (dtype, out) = (it.next().flatten(), it.next().flatten());
        if let Some(out) = out.filter(|o| o.value != Value::None) {
            return Err(Diagnostic::error(Code::UnsupportedArgument, "`out=` is not supported").label(out.range, "return the result instead"));
        }
        let diagonal = match dtype.filter(|d| d.value != Value::None) {
            // numpy sums in `dtype`.
            Some(d) => {
                let dtype = self.dtype_value(&d)?;
                self.cast(diagonal, dtype, call)?
            }
            None => diagonal,
        };
        let d = Arg { value: Value::Tensor(diagonal), range: call };
        let last = Arg { value: Value::Int(-1), range: call };
        self.reduce(Reduction::Sum, d, Some(last), None, call)
    }

    /// numpy's `diagonal(a, offset, axis1, axis2)`: the elements `a[…, i + r0, …, i + c0, …]`
    /// (`offset` k: r0 = 0, c0 = k, or r0 = −k, c0 = 0 below the main diagonal) along a new
    /// last axis, the other axes kept in order; a read of the array, not a copy.
    fn diagonal(&mut self, a: &Arg, offset: i64, axis1: Option<Arg>, axis2: Option<Arg>, range: TextRange) -> Result<NodeId> {
        let id = self.tensor(a, None)?;
        let ty = self.ty(id).clone();
        if ty.rank() < 2 {
            return Err(Diagnostic::error(Code::BadValue, format!("a diagonal needs an array of at least two dimensions, got {ty}")).label(a.range, ty.to_string()));
        }
        let axis = |b: &Self, arg: Option<Arg>, default: usize| arg.map_or(Ok(default), |x| b.axis(&x, ty.rank()));
        let (ax1, ax2) = (axis(self, axis1, 0)?, axis(self, axis2, 1)?);
        if ax1 == ax2 {
            return Err(Diagnostic::error(Code::BadValue, format!("`axis1` and `axis2` are both axis {ax1}")).label(range, "two distinct axes"));
        }
        let (r0, c0) = if offset >= 0 { (0, offset as usize) } else { (offset.unsigned_abs() as usize, 0) };
        let len = ty.shape[ax1].saturating_sub(r0).min(ty.shape[ax2].saturating_sub(c0));
        if len == 0 {
            return Err(Diagnostic::error(Code::BadValue, format!("offset {offset} leaves no diagonal in {ty} (numpy gives an empty array)")).label(range, "here"));
        }
        let others: Vec<usize> = (0..ty.rank()).filter(|&j| j != ax1 && j != ax2).collect();
        let mut shape: Vec<usize> = others.iter().map(|&j| ty.shape[j]).collect();
        shape.push(len);
        let last = others.len();
        let from = (0..ty.rank())
            .map(|j| match j {
                _ if j == ax1 => GatherAxis::Along { axis: last, start: r0, step: 1 },
                _ if j == ax2 => GatherAxis::Along { axis: last, start: c0, step: 1 },
                _ => GatherAxis::Along { axis: others.iter().position(|&o| o == j).expect("another axis"), start: 0, step: 1 },
            })
            .collect();
        self.gather(id, shape, from, Vec::new(), range)
    }

    /// numpy's `diag(v, k)`: of a matrix its `k`-th diagonal; of a vector of n the square matrix
    /// of n + |k| with `v` on its `k`-th diagonal and zeros elsewhere.
    fn diag(&mut self, v: Arg, k: i64, range: TextRange) -> Result<Value> {
        let id = self.tensor(&v, None)?;
        let ty = self.ty(id).clone();
        match ty.rank() {
            2 => Ok(Value::Tensor(self.diagonal(&v, k, None, None, range)?)),
            1 => {
                let n = ty.shape[0] + k.unsigned_abs() as usize;
                let mut padded = id;
                if k != 0 {
                    let zeros = self.full(&[k.unsigned_abs() as usize], 0.0, ty.dtype, range)?;
                    padded = self.push(Op::Concat { axis: 0 }, vec![id, zeros], range)?;
                }
                // Row i holds v[i] where k ≥ 0 (at column i + k); column j holds v[j] below.
                let along = if k >= 0 { [n, 1] } else { [1, n] };
                let padded = self.reshape_to(padded, &along, range)?;
                let values = self.broadcast_to(padded, &[n, n], range)?;
                let mask = self.diagonal_mask(n, n, ollie_graph::CmpOp::Eq, k, range)?;
                let zeros = self.full(&[n, n], 0.0, ty.dtype, range)?;
                Ok(Value::Tensor(self.push(Op::Select, vec![mask, values, zeros], range)?))
            }
            _ => Err(Diagnostic::error(Code::BadValue, format!("`np.diag` takes a vector or a matrix, got {ty}")).label(v.range, ty.to_string())),
        }
    }

    /// `np.where(c, a, b)` on values: broadcast together, then selected.
    pub(crate) fn select(&mut self, c: Arg, a: Arg, b: Arg, range: TextRange) -> Result<Value> {
        let ids = self.broadcast_all(&[c, a, b], range)?;
        Ok(Value::Tensor(self.push(Op::Select, ids, range)?))
    }

    /// numpy's `sign`: -1, 0 or 1, NaN for NaN (zero and NaN are returned as they are).
    fn sign(&mut self, x: Arg, range: TextRange) -> Result<Value> {
        if let Some(f) = x.value.number() {
            return Ok(match x.value {
                Value::Int(i) => Value::Int(i.signum()),
                _ if f > 0.0 => Value::Float(1.0),
                _ if f < 0.0 => Value::Float(-1.0),
                _ => Value::Float(f),
            });
        }
        let zero = Arg { value: Value::Float(0.0), range };
        let one = |v: f64| Arg { value: Value::Float(v), range };
        let neg = self.compare(ast::CmpOp::Lt, x.clone(), zero.clone(), range)?;
        let inner = self.select(Arg { value: neg, range }, one(-1.0), x.clone(), range)?;
        let pos = self.compare(ast::CmpOp::Gt, x, zero, range)?;
        self.select(Arg { value: pos, range }, one(1.0), Arg { value: inner, range }, range)
    }

    /// `np.dot`, `np.inner`, `np.outer` as contractions (a 0-d operand scales, as numpy's do).
    fn product(&mut self, name: &str, a: Arg, b: Arg, range: TextRange) -> Result<Value> {
        let (ia, ib) = (self.tensor(&a, None)?, self.tensor(&b, None)?);
        let (ra, rb) = (self.ty(ia).rank(), self.ty(ib).rank());
        if name == "outer" {
            let na = self.ty(ia).shape.iter().product::<usize>();
            let nb = self.ty(ib).shape.iter().product::<usize>();
            let fa = self.reshape_to(ia, &[na], range)?;
            let fb = self.reshape_to(ib, &[nb], range)?;
            return self.contract(name, (fa, &a), (fb, &b), vec![b'i'], vec![b'j'], vec![b'i', b'j'], range);
        }
        if ra == 0 || rb == 0 {
            return self.elementwise(BinaryOp::Mul, Arg { value: Value::Tensor(ia), range: a.range }, Arg { value: Value::Tensor(ib), range: b.range }, range);
        }
        // `dot` contracts a's last axis with b's second-to-last (its only one when 1-D);
        // `inner` contracts the last axes of both. The result has a's other axes, then b's.
        let kb = if name == "dot" && rb >= 2 { rb - 2 } else { rb - 1 };
        let la: Vec<u8> = (0..ra).map(|i| if i == ra - 1 { b'Z' } else { b'a' + i as u8 }).collect();
        let lb: Vec<u8> = (0..rb).map(|i| if i == kb { b'Z' } else { b'A' + i as u8 }).collect();
        let out: Vec<u8> = la.iter().chain(&lb).copied().filter(|&l| l != b'Z').collect();
        self.contract(name, (ia, &a), (ib, &b), la, lb, out, range)
    }

    /// `np.tensordot(a, b, axes)`: `axes = N` contracts a's last N axes with b's first N; a pair
    /// of sequences (or of ints) names them.
    fn tensordot(&mut self, a: Arg, b: Arg, axes: Option<Arg>, range: TextRange) -> Result<Value> {
        let (ia, ib) = (self.tensor(&a, None)?, self.tensor(&b, None)?);
        let (ra, rb) = (self.ty(ia).rank(), self.ty(ib).rank());
        let bad = |r: TextRange| {
            Diagnostic::error(Code::UnsupportedArgument, "`np.tensordot`'s `axes` is an integer or a pair of axis sequences")
                .label(r, "here")
                .help("e.g. `axes=2`, `axes=([1, 2], [0, 1])` or `axes=(1, 0)`")
        };
        let (pa, pb): (Vec<usize>, Vec<usize>) = match axes.as_ref().map(|x| &x.value) {
            None => ((ra.saturating_sub(2)..ra).collect(), (0..2.min(rb)).collect()),
            Some(Value::Int(n)) => {
                let n = *n;
                if n < 0 || n as usize > ra || n as usize > rb {
                    return Err(Diagnostic::error(Code::AxisOutOfRange, format!("`axes={n}` does not fit operands of rank {ra} and {rb}"))
                        .label(axes.as_ref().unwrap().range, "here"));
                }
                ((ra - n as usize..ra).collect(), (0..n as usize).collect())
            }
            Some(Value::Tuple(pair)) if pair.len() == 2 => {
                let arg = axes.as_ref().unwrap();
                let list = |v: &Value, rank: usize| -> Result<Vec<usize>> {
                    let items: Vec<Value> = match v {
                        Value::Tuple(items) => items.clone(),
                        other => vec![other.clone()],
                    };
                    items.iter().map(|i| self.axis(&Arg { value: i.clone(), range: arg.range }, rank)).collect()
                };
                let (pa, pb) = (list(&pair[0], ra)?, list(&pair[1], rb)?);
                if pa.len() != pb.len() {
                    return Err(Diagnostic::error(Code::ShapeMismatch, "`np.tensordot`: the two axis lists differ in length").label(arg.range, "here"));
                }
                (pa, pb)
            }
            Some(_) => return Err(bad(axes.as_ref().unwrap().range)),
        };
        if (1..pa.len()).any(|i| pa[..i].contains(&pa[i])) || (1..pb.len()).any(|i| pb[..i].contains(&pb[i])) {
            return Err(Diagnostic::error(Code::BadValue, "repeated axis in `np.tensordot`'s `axes`").label(range, "here"));
        }
        let la: Vec<u8> = (0..ra).map(|i| pa.iter().position(|&p| p == i).map_or(b'a' + i as u8, |k| b'Z' - k as u8)).collect();
        let lb: Vec<u8> = (0..rb).map(|i| pb.iter().position(|&p| p == i).map_or(b'A' + i as u8, |k| b'Z' - k as u8)).collect();
        let contracted = |l: &u8| (b'Z' - pa.len() as u8 + 1..=b'Z').contains(l);
        let out: Vec<u8> = la.iter().chain(&lb).copied().filter(|l| !contracted(l)).collect();
        self.contract("tensordot", (ia, &a), (ib, &b), la, lb, out, range)
    }

    /// A two-operand contraction, its shared labels' sizes checked with `name`'s message.
    #[allow(clippy::too_many_arguments)]
    fn contract(&mut self, name: &str, (ia, a): (NodeId, &Arg), (ib, b): (NodeId, &Arg), la: Vec<u8>, lb: Vec<u8>, out: Vec<u8>, range: TextRange) -> Result<Value> {
        let (ta, tb) = (self.ty(ia).clone(), self.ty(ib).clone());
        for (i, l) in la.iter().enumerate() {
            if let Some(j) = lb.iter().position(|m| m == l) {
                if ta.shape[i] != tb.shape[j] {
                    return Err(Diagnostic::error(Code::ShapeMismatch, format!("`np.{name}`: axis {i} of {ta} and axis {j} of {tb} differ ({} vs {})", ta.shape[i], tb.shape[j]))
                        .label(a.range, ta.to_string())
                        .label(b.range, tb.to_string()));
                }
            }
        }
        let spec = EinsumSpec { inputs: vec![la, lb], output: out };
        Ok(Value::Tensor(self.push(Op::Einsum(spec), vec![ia, ib], range)?))
    }

    /// `np.linalg.norm`: vector norms over one axis (ord None/2, 1, inf, -inf, p > 0), the
    /// Frobenius norm over all axes or two, and the matrix 1- and inf-norms.
    fn norm(&mut self, x: Arg, ord: Option<Arg>, axis: Option<Arg>, keepdims: Option<Arg>, range: TextRange) -> Result<Value> {
        let id = self.tensor(&x, None)?;
        let rank = self.ty(id).rank();
        let x = Arg { value: Value::Tensor(id), range: x.range };
        let val = |v: Value| Arg { value: v, range };
        let axes: Vec<usize> = match axis.as_ref().map(|a| &a.value) {
            None | Some(Value::None) => (0..rank).collect(),
            Some(_) => {
                let a = axis.as_ref().unwrap();
                let mut items: Vec<usize> = match &a.value {
                    Value::Tuple(items) => items.iter().map(|v| self.axis(&Arg { value: v.clone(), range: a.range }, rank)).collect::<Result<_>>()?,
                    _ => vec![self.axis(a, rank)?],
                };
                if items.len() > 2 || (items.len() == 2 && items[0] == items[1]) {
                    return Err(Diagnostic::error(Code::BadValue, "`np.linalg.norm` takes one axis (a vector norm) or two distinct axes (a matrix norm)").label(a.range, "here"));
                }
                items.truncate(2);
                items
            }
        };
        let ord_value = ord.as_ref().map(|o| o.value.clone()).unwrap_or(Value::None);
        let axis_arg = |axes: &[usize]| Some(val(Value::Tuple(axes.iter().map(|&a| Value::Int(a as i64)).collect())));
        let unsupported = |what: String| {
            Diagnostic::error(Code::UnsupportedArgument, what)
                .label(ord.as_ref().map_or(range, |o| o.range), "here")
                .help("supported: vector norms (ord None, 2, 1, np.inf, -np.inf, or p > 0) over one axis; the Frobenius norm (ord None or \"fro\") and the matrix 1- and inf-norms over two")
        };
        // A vector norm when one axis is named (or the array is 1-D), else a matrix norm.
        let vector = axes.len() == 1 || (axis.is_none() && rank == 1);
        let matrix = axes.len() == 2 && (axis.is_some() || rank == 2);
        let frobenius = matches!(&ord_value, Value::None) || (matrix && ord_value == Value::Str("fro".into())) || (vector && ord_value.number() == Some(2.0));
        let keep = keepdims.clone();
        if frobenius {
            let sq = self.elementwise(BinaryOp::Mul, x.clone(), x, range)?;
            let s = self.reduce(Reduction::Sum, val(sq), axis_arg(&axes), keep, range)?;
            return self.unary(UnaryOp::Sqrt, val(s), range);
        }
        if !vector && !matrix {
            return Err(unsupported(format!("`ord=` on a {rank}-d array needs `axis=` (one axis or two)")));
        }
        let abs = self.unary(UnaryOp::Abs, x, range)?;
        let Some(p) = ord_value.number() else {
            return Err(unsupported(format!("`np.linalg.norm` with `ord={}`", match &ord_value { Value::Str(s) => s.clone(), v => v.kind().to_string() })));
        };
        if vector {
            return match p {
                f64::INFINITY => self.reduce(Reduction::Max, val(abs), axis_arg(&axes), keep, range),
                f64::NEG_INFINITY => self.reduce(Reduction::Min, val(abs), axis_arg(&axes), keep, range),
                1.0 => self.reduce(Reduction::Sum, val(abs), axis_arg(&axes), keep, range),
                p if p > 0.0 && p.is_finite() => {
                    let pw = self.elementwise(BinaryOp::Pow, val(abs), val(Value::Float(p)), range)?;
                    let s = self.reduce(Reduction::Sum, val(pw), axis_arg(&axes), keep, range)?;
                    self.elementwise(BinaryOp::Pow, val(s), val(Value::Float(1.0 / p)), range)
                }
                _ => Err(unsupported(format!("the vector norm with `ord={p}`"))),
            };
        }
        // Matrix norms: 1 is the largest column sum (rows summed), inf the largest row sum.
        let (sum_axis, then_axis, pick) = match p {
            1.0 => (axes[0], axes[1], Reduction::Max),
            -1.0 => (axes[0], axes[1], Reduction::Min),
            f64::INFINITY => (axes[1], axes[0], Reduction::Max),
            f64::NEG_INFINITY => (axes[1], axes[0], Reduction::Min),
            _ => return Err(unsupported(format!("the matrix norm with `ord={p}` (ollie has no singular values)"))),
        };
        let s = self.reduce(Reduction::Sum, val(abs), axis_arg(&[sum_axis]), Some(val(Value::Bool(true))), range)?;
        let m = self.reduce(pick, val(s), axis_arg(&[then_axis]), Some(val(Value::Bool(true))), range)?;
        if self.flag(keepdims, "keepdims")? {
            return Ok(m);
        }
        let Value::Tensor(m) = m else { unreachable!("a reduction of an array is an array") };
        let shape: Vec<usize> = self.ty(m).shape.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &n)| n).collect();
        Ok(Value::Tensor(self.reshape_to(m, &shape, range)?))
    }
}
