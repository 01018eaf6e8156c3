//! `scipy.special`'s functions that ML code calls on arrays — `softmax`, `log_softmax`,
//! `logsumexp`, `expit`, `logit` — written with numpy's operations as scipy computes them
//! (the maximum subtracted where it is finite), so that the reference is scipy's meaning; and
//! the error function `erf` (exact GELU), a graph operation of its own, with `erfc` as `1 - erf`.
//!
//! Reached as `from scipy.special import softmax` (the name is the function), or through the
//! module: `import scipy.special as sp`, `from scipy import special`, `import scipy`.

use ollie_graph::{BinaryOp, CmpOp, DType, NodeId, Op, UnaryOp};
use ruff_text_size::TextRange;

use crate::builder::{Arg, Builder, CallArgs, Result};
use crate::diagnostic::{Code, Diagnostic};
use crate::numpy::{required, Reduction};
use crate::value::Value;

/// The functions of `scipy.special` a spec may call.
pub const FUNCTIONS: &[&str] = &["erf", "erfc", "expit", "log_softmax", "logit", "logsumexp", "softmax"];

/// The diagnostic for a `scipy.special` name outside [`FUNCTIONS`].
pub fn unsupported(name: &str, range: TextRange) -> Diagnostic {
    Diagnostic::error(Code::UnsupportedCall, format!("unsupported function `scipy.special.{name}`"))
        .label(range, "not in ollie's subset")
        .help(format!("supported from scipy.special: {}", FUNCTIONS.join(", ")))
}

impl Builder<'_> {
    /// `scipy.special.NAME(args)` for a name of [`FUNCTIONS`].
    pub fn special_call(&mut self, name: &str, name_range: TextRange, args: CallArgs) -> Result<Value> {
        let call = args.range;
        let fname = format!("scipy.special.{name}");
        match name {
            "erf" | "erfc" => {
                let x = required(args.bind(&fname, None, &["x"])?.pop().flatten(), &fname, "x", call)?;
                if let Some(v) = x.value.number() {
                    return Ok(Value::Float(if name == "erf" { libm::erf(v) } else { libm::erfc(v) }));
                }
                let x = self.floating(&x, &fname)?;
                let e = self.push(Op::Unary(UnaryOp::Erf), vec![x], call)?;
                if name == "erf" {
                    return Ok(Value::Tensor(e));
                }
                let ty = self.ty(x).clone();
                let one = self.full(&ty.shape, 1.0, ty.dtype, call)?;
                Ok(Value::Tensor(self.push(Op::Binary(BinaryOp::Sub), vec![one, e], call)?))
            }
            "expit" | "logit" => {
                let x = required(args.bind(&fname, None, &["x"])?.pop().flatten(), &fname, "x", call)?;
                let x = self.floating(&x, &fname)?;
                let ty = self.ty(x).clone();
                let one = self.full(&ty.shape, 1.0, ty.dtype, call)?;
                if name == "expit" {
                    // 1 / (1 + e^-x): 0 where e^-x overflows, as scipy's.
                    let e = self.push(Op::Unary(UnaryOp::Neg), vec![x], call)?;
                    let e = self.push(Op::Unary(UnaryOp::Exp), vec![e], call)?;
                    let d = self.push(Op::Binary(BinaryOp::Add), vec![one, e], call)?;
                    Ok(Value::Tensor(self.push(Op::Binary(BinaryOp::Div), vec![one, d], call)?))
                } else {
                    // log(p / (1 - p)).
                    let q = self.push(Op::Binary(BinaryOp::Sub), vec![one, x], call)?;
                    let r = self.push(Op::Binary(BinaryOp::Div), vec![x, q], call)?;
                    Ok(Value::Tensor(self.push(Op::Unary(UnaryOp::Log), vec![r], call)?))
                }
            }
            "softmax" | "log_softmax" => {
                let mut b = args.bind(&fname, None, &["x", "axis"])?.into_iter();
                let x = required(b.next().flatten(), &fname, "x", call)?;
                let axis = b.next().flatten();
                let x = self.floating(&x, &fname)?;
                let shifted = if name == "softmax" {
                    // scipy subtracts the maximum as it is (a row of -inf gives NaN there too).
                    let m = self.kept(Reduction::Max, x, &axis, call)?;
                    self.binary(BinaryOp::Sub, x, m, call)?
                } else {
                    self.shifted(x, &axis, call)?.0
                };
                let e = self.push(Op::Unary(UnaryOp::Exp), vec![shifted], call)?;
                let s = self.kept(Reduction::Sum, e, &axis, call)?;
                if name == "softmax" {
                    return Ok(Value::Tensor(self.binary(BinaryOp::Div, e, s, call)?));
                }
                let l = self.push(Op::Unary(UnaryOp::Log), vec![s], call)?;
                Ok(Value::Tensor(self.binary(BinaryOp::Sub, shifted, l, call)?))
            }
            "logsumexp" => {
                let bound: [Option<Arg>; 5] = args.bind(&fname, None, &["a", "axis", "b", "keepdims", "return_sign"])?.try_into().expect("five parameters");
                let [a, axis, weights, keepdims, sign] = bound;
                for (param, arg) in [("b", weights), ("return_sign", sign)] {
                    if let Some(arg) = arg.filter(|a| !matches!(a.value, Value::None | Value::Bool(false))) {
                        return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{param}=` of `{fname}`"))
                            .label(arg.range, "not supported")
                            .help("weights `b`: add `np.log(b)` to `a`"));
                    }
                }
                let a = required(a, &fname, "a", call)?;
                let keepdims = self.flag(keepdims, "keepdims")?;
                let x = self.floating(&a, &fname)?;
                // max + log(sum(e^(a - max))), the maximum 0 where it is not finite: an infinite
                // or NaN result comes out as scipy's direct log(sum(e^a)) gives it.
                let (shifted, m) = self.shifted(x, &axis, call)?;
                let e = self.push(Op::Unary(UnaryOp::Exp), vec![shifted], call)?;
                let s = self.kept(Reduction::Sum, e, &axis, call)?;
                let l = self.push(Op::Unary(UnaryOp::Log), vec![s], call)?;
                let out = self.binary(BinaryOp::Add, l, m, call)?;
                if keepdims {
                    return Ok(Value::Tensor(out));
                }
                let rank = self.ty(x).rank();
                let axes = match &axis {
                    None | Some(Arg { value: Value::None, .. }) => (0..rank).collect(),
                    Some(arg) => self.axes(arg, rank)?,
                };
                let shape: Vec<usize> = self.ty(out).shape.iter().enumerate().filter(|(k, _)| !axes.contains(k)).map(|(_, &n)| n).collect();
                Ok(Value::Tensor(self.reshape_to(out, &shape, call)?))
            }
            _ => Err(unsupported(name, name_range)),
        }
    }

    /// The array argument as a float array: integers and booleans become float64, as scipy
    /// promotes them; 8-bit integers (whose differences numpy wraps) are refused.
    fn floating(&mut self, x: &Arg, fname: &str) -> Result<NodeId> {
        let id = self.tensor(x, None)?;
        let dtype = self.ty(id).dtype;
        if dtype.is_byte() {
            return Err(Diagnostic::error(Code::UnsupportedDtype, format!("`{fname}` of {dtype}"))
                .label(x.range, format!("{} array", self.ty(id)))
                .help("convert first (`.astype(np.float32)`): numpy's 8-bit arithmetic wraps"));
        }
        if dtype.is_float() {
            return Ok(id);
        }
        self.cast(id, DType::F64, x.range)
    }

    /// `a op b`, broadcast together.
    fn binary(&mut self, op: BinaryOp, a: NodeId, b: NodeId, range: TextRange) -> Result<NodeId> {
        let arg = |id| Arg { value: Value::Tensor(id), range };
        let Value::Tensor(r) = self.elementwise(op, arg(a), arg(b), range)? else { unreachable!("array operands give an array") };
        Ok(r)
    }

    /// A reduction of `id` over `axis` (all axes when absent), its axes kept (of length 1).
    fn kept(&mut self, kind: Reduction, id: NodeId, axis: &Option<Arg>, range: TextRange) -> Result<NodeId> {
        let yes = Some(Arg { value: Value::Bool(true), range });
        let Value::Tensor(r) = self.reduce(kind, Arg { value: Value::Tensor(id), range }, axis.clone(), yes, range)? else {
            unreachable!("a reduction gives an array")
        };
        Ok(r)
    }

    /// `x - max` and the maximum subtracted (its axes kept), taken as 0 where it is not finite
    /// (scipy's shift).
    fn shifted(&mut self, x: NodeId, axis: &Option<Arg>, range: TextRange) -> Result<(NodeId, NodeId)> {
        let m = self.kept(Reduction::Max, x, axis, range)?;
        let ty = self.ty(m).clone();
        let inf = self.full(&ty.shape, f64::INFINITY, ty.dtype, range)?;
        let zero = self.full(&ty.shape, 0.0, ty.dtype, range)?;
        // |m| < inf is false for ±inf and NaN.
        let magnitude = self.push(Op::Unary(UnaryOp::Abs), vec![m], range)?;
        let finite = self.push(Op::Compare(CmpOp::Lt), vec![magnitude, inf], range)?;
        let m = self.push(Op::Select, vec![finite, m, zero], range)?;
        Ok((self.binary(BinaryOp::Sub, x, m, range)?, m))
    }
}
