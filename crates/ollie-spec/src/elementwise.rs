//! numpy's elementwise functions that the graph composes from its own operations: the
//! hyperbolic functions and their inverses, `tan`, `arcsin`/`arccos`/`arctan2` (by `atan`),
//! `degrees`/`radians`, `trunc`/`fix`, and floor division and remainder of floats (`//`, `%`,
//! `np.fmod`), the NaN-ignoring `fmax`/`fmin`, `hypot` (scaled so that it overflows only where
//! numpy's does), `heaviside`, `float_power` and `positive`. Each is written in the form that stays
//! accurate in float32 (`sinh` by `expm1` near 0, `cosh` by `exp(|x| − ln 2)` so it overflows
//! where numpy's does), so that the bound the graph derives for it is close to numpy's own
//! accuracy, and keeps numpy's special values.

use ollie_graph::{BinaryOp, UnaryOp};
use ruff_python_ast::{CmpOp, Operator};
use ruff_text_size::TextRange;

use crate::builder::{Arg, Builder, CallArgs, Result};
use crate::diagnostic::{Code, Diagnostic};
use crate::numpy::required;
use crate::value::Value;

/// The functions this module provides, as `np.NAME`.
pub const FUNCTIONS: &[&str] =
    &["arccos", "arccosh", "arcsin", "arcsinh", "arctan2", "arctanh", "cosh", "deg2rad", "degrees", "fix", "float_power", "fmax", "fmin", "fmod", "heaviside", "hypot", "positive", "rad2deg", "radians", "sinh", "tan", "trunc"];

/// The functions of [`FUNCTIONS`] that take two operands.
const BINARY: &[&str] = &["arctan2", "float_power", "fmax", "fmin", "fmod", "heaviside", "hypot"];

const LN_2: f64 = std::f64::consts::LN_2;

impl Builder<'_> {
    /// `np.NAME(args)` for a function of [`FUNCTIONS`].
    pub fn elementwise_call(&mut self, name: &str, args: CallArgs) -> Result<Value> {
        let call = args.range;
        let fname = format!("np.{name}");
        if BINARY.contains(&name) {
            let mut b = args.bind(&fname, None, &["x1", "x2"])?.into_iter();
            let (a, d) = (required(b.next().unwrap(), &fname, "x1", call)?, required(b.next().unwrap(), &fname, "x2", call)?);
            return match name {
                "arctan2" => self.arctan2(a, d, call),
                "fmod" => self.fmod(a, d, call),
                "fmax" | "fmin" => self.fmax(name == "fmax", a, d, call),
                "hypot" => self.hypot(a, d, call),
                "heaviside" => self.heaviside(a, d, call),
                _ => self.float_power(a, d, call),
            };
        }
        let x = required(args.bind(&fname, None, &["x"])?.into_iter().next().unwrap(), &fname, "x", call)?;
        if name == "positive" {
            // A copy of a numeric array; numpy refuses booleans.
            if self.is_bool(&x.value) {
                return Err(Diagnostic::error(Code::BadValue, "numpy's `positive` does not take booleans").label(x.range, "a boolean array"));
            }
            return Ok(x.value);
        }
        if let Some(f) = x.value.number() {
            return Ok(Value::Float(fold(name, f)));
        }
        let mut e = Expr { b: self, range: call };
        let x = e.float(x)?;
        let v = match name {
            // Near 0 by `expm1` (no cancellation); beyond 1 by `exp(±x − ln 2)`, which is finite
            // wherever numpy's sinh is.
            "sinh" => {
                let near = {
                    let up = e.unary(UnaryOp::Expm1, &x)?;
                    let nx = e.unary(UnaryOp::Neg, &x)?;
                    let down = e.unary(UnaryOp::Expm1, &nx)?;
                    let d = e.bin(BinaryOp::Sub, &up, &down)?;
                    e.bin(BinaryOp::Mul, &d, &e.num(0.5))?
                };
                let far = e.exp_halves(&x, BinaryOp::Sub)?;
                let ax = e.unary(UnaryOp::Abs, &x)?;
                let small = e.cmp(CmpOp::Lt, &ax, &e.num(1.0))?;
                e.select(&small, &near, &far)?.value
            }
            "cosh" => e.exp_halves(&x, BinaryOp::Add)?.value,
            "tan" => {
                let s = e.unary(UnaryOp::Sin, &x)?;
                let c = e.unary(UnaryOp::Cos, &x)?;
                e.bin(BinaryOp::Div, &s, &c)?.value
            }
            // sign(x)·log1p(|x| + x²/(1 + √(1 + x²))); past 2^60 (where x² would overflow in
            // float32) sign(x)·(ln|x| + ln 2).
            "arcsinh" => {
                let ax = e.unary(UnaryOp::Abs, &x)?;
                let sq = e.bin(BinaryOp::Mul, &ax, &ax)?;
                let r = e.bin(BinaryOp::Add, &sq, &e.num(1.0))?;
                let r = e.unary(UnaryOp::Sqrt, &r)?;
                let r = e.bin(BinaryOp::Add, &r, &e.num(1.0))?;
                let t = e.bin(BinaryOp::Div, &sq, &r)?;
                let t = e.bin(BinaryOp::Add, &ax, &t)?;
                let near = e.unary(UnaryOp::Log1p, &t)?;
                let far = e.log_twice(&ax)?;
                let big = e.cmp(CmpOp::Gt, &ax, &e.num(2f64.powi(60)))?;
                let m = e.select(&big, &far, &near)?;
                // The sign as numpy's: −0 stays −0, NaN stays NaN.
                let neg = e.cmp(CmpOp::Lt, &x, &e.num(0.0))?;
                let minus = e.unary(UnaryOp::Neg, &m)?;
                e.select(&neg, &minus, &m)?.value
            }
            // log1p(t + √(2t + t²)) with t = x − 1; past 2^60 ln x + ln 2; NaN below 1.
            "arccosh" => {
                let t = e.bin(BinaryOp::Sub, &x, &e.num(1.0))?;
                let tt = e.bin(BinaryOp::Mul, &t, &t)?;
                let t2 = e.bin(BinaryOp::Mul, &t, &e.num(2.0))?;
                let r = e.bin(BinaryOp::Add, &t2, &tt)?;
                let r = e.unary(UnaryOp::Sqrt, &r)?;
                let s = e.bin(BinaryOp::Add, &t, &r)?;
                let near = e.unary(UnaryOp::Log1p, &s)?;
                let far = e.log_twice(&x)?;
                let big = e.cmp(CmpOp::Gt, &x, &e.num(2f64.powi(60)))?;
                e.select(&big, &far, &near)?.value
            }
            // ½·log1p(2x / (1 − x)): ±inf at ±1, NaN beyond.
            "arctanh" => {
                let d = e.bin(BinaryOp::Sub, &e.num(1.0), &x)?;
                let n = e.bin(BinaryOp::Mul, &x, &e.num(2.0))?;
                let q = e.bin(BinaryOp::Div, &n, &d)?;
                let l = e.unary(UnaryOp::Log1p, &q)?;
                e.bin(BinaryOp::Mul, &l, &e.num(0.5))?.value
            }
            "trunc" | "fix" => e.trunc(&x)?.value,
            // atan(x / √((1 − x)(1 + x))): 1 ∓ x is exact near ±1, where 1 − x² is not.
            "arcsin" => {
                let r = e.one_minus_square(&x)?;
                let q = e.bin(BinaryOp::Div, &x, &r)?;
                e.unary(UnaryOp::Atan, &q)?.value
            }
            // 2·atan(√((1 − x)/(1 + x))): π at −1, 0 at 1, NaN beyond.
            "arccos" => {
                let d = e.bin(BinaryOp::Sub, &e.num(1.0), &x)?;
                let s = e.bin(BinaryOp::Add, &e.num(1.0), &x)?;
                let q = e.bin(BinaryOp::Div, &d, &s)?;
                let q = e.unary(UnaryOp::Sqrt, &q)?;
                let t = e.unary(UnaryOp::Atan, &q)?;
                e.bin(BinaryOp::Mul, &t, &e.num(2.0))?.value
            }
            "degrees" | "rad2deg" => e.bin(BinaryOp::Mul, &x, &e.num(180.0 / std::f64::consts::PI))?.value,
            "radians" | "deg2rad" => e.bin(BinaryOp::Mul, &x, &e.num(std::f64::consts::PI / 180.0))?.value,
            _ => unreachable!("`{name}` is in FUNCTIONS"),
        };
        Ok(v)
    }

    /// Floor division and remainder of floats, as numpy's `npy_divmod`: `a // b` is
    /// ⌊a / b⌋ (±inf for a zero divisor, NaN for 0 // 0), `a % b` is `a − b·⌊a / b⌋` (the
    /// divisor's sign; NaN for a zero divisor). Where the divisor is infinite and the dividend
    /// finite, numpy's quotient is 0 (−1 when their signs differ) and its remainder the dividend
    /// (the divisor when their signs differ).
    pub(crate) fn float_divmod(&mut self, op: Operator, a: Arg, b: Arg, range: TextRange) -> Result<Value> {
        let divisor_may_be_infinite = b.value.number().is_none_or(f64::is_infinite);
        let mut e = Expr { b: self, range };
        let (a, b) = (e.float(a)?, e.float(b)?);
        let q = e.bin(BinaryOp::Div, &a, &b)?;
        let q = e.unary(UnaryOp::Floor, &q)?;
        let general = if op == Operator::FloorDiv {
            q
        } else {
            let bq = e.bin(BinaryOp::Mul, &b, &q)?;
            e.bin(BinaryOp::Sub, &a, &bq)?
        };
        if !divisor_may_be_infinite {
            return Ok(general.value);
        }
        let ab = e.bin(BinaryOp::Mul, &a, &b)?;
        let opposite = e.cmp(CmpOp::Lt, &ab, &e.num(0.0))?;
        let special = if op == Operator::FloorDiv {
            let (minus_one, zero) = (e.like(-1.0, &general)?, e.like(0.0, &general)?);
            e.select(&opposite, &minus_one, &zero)?
        } else {
            e.select(&opposite, &b, &a)?
        };
        let when = e.infinite_divisor(&a, &b)?;
        Ok(e.select(&when, &special, &general)?.value)
    }

    /// numpy's `fmod`: the remainder with the dividend's sign, `a − b·trunc(a / b)` for floats
    /// (the dividend itself where the divisor is infinite and it is finite), C's `%` for
    /// integers (0 for a zero divisor, as numpy gives).
    fn fmod(&mut self, a: Arg, b: Arg, range: TextRange) -> Result<Value> {
        let integral = |b: &Self, v: &Value| b.is_integer(v) || b.is_bool(v);
        if integral(self, &a.value) && integral(self, &b.value) {
            // Python's remainder has the divisor's sign; moved to the dividend's where they differ.
            let r = self.binop(Operator::Mod, a.clone(), b.clone(), range)?;
            let r = Arg { value: r, range };
            let zero = Arg { value: Value::Int(0), range };
            let nonzero = self.compare(CmpOp::NotEq, r.clone(), zero.clone(), range)?;
            let r_neg = self.compare(CmpOp::Lt, r.clone(), zero.clone(), range)?;
            let a_neg = self.compare(CmpOp::Lt, a, zero, range)?;
            let differ = self.compare(CmpOp::NotEq, Arg { value: r_neg, range }, Arg { value: a_neg, range }, range)?;
            let fix = self.elementwise(BinaryOp::Min, Arg { value: nonzero, range }, Arg { value: differ, range }, range)?;
            let moved = self.binop(Operator::Sub, r.clone(), b, range)?;
            return self.select(Arg { value: fix, range }, Arg { value: moved, range }, r, range);
        }
        let mut e = Expr { b: self, range };
        let (a, b) = (e.float(a)?, e.float(b)?);
        let q = e.bin(BinaryOp::Div, &a, &b)?;
        let q = e.trunc(&q)?;
        let bq = e.bin(BinaryOp::Mul, &b, &q)?;
        let general = e.bin(BinaryOp::Sub, &a, &bq)?;
        let when = e.infinite_divisor(&a, &b)?;
        Ok(e.select(&when, &a, &general)?.value)
    }

    /// numpy's `arctan2(y, x)`: `atan(y / x)`, moved by ±π where `x < 0` (to the side of `y`'s
    /// sign), and 0 where both are 0. numpy tells the signed zeros apart (`arctan2(0, -0.0)` is
    /// π, `arctan2(-0.0, -1)` is −π) and gives ±π/4, ±3π/4 for two infinities; here those are
    /// 0, π and NaN.
    fn arctan2(&mut self, y: Arg, x: Arg, range: TextRange) -> Result<Value> {
        use std::f64::consts::PI;
        if let (Some(a), Some(b)) = (y.value.number(), x.value.number()) {
            return Ok(Value::Float(a.atan2(b)));
        }
        let mut e = Expr { b: self, range };
        let (y, x) = (e.float(y)?, e.float(x)?);
        let q = e.bin(BinaryOp::Div, &y, &x)?;
        let t = e.unary(UnaryOp::Atan, &q)?;
        let upper = e.cmp(CmpOp::GtE, &y, &e.num(0.0))?;
        let (pi, minus_pi) = (e.like(PI, &t)?, e.like(-PI, &t)?);
        let turn = e.select(&upper, &pi, &minus_pi)?;
        let turned = e.bin(BinaryOp::Add, &t, &turn)?;
        let left = e.cmp(CmpOp::Lt, &x, &e.num(0.0))?;
        let angle = e.select(&left, &turned, &t)?;
        let y0 = e.cmp(CmpOp::Eq, &y, &e.num(0.0))?;
        let x0 = e.cmp(CmpOp::Eq, &x, &e.num(0.0))?;
        let origin = e.bin(BinaryOp::Min, &y0, &x0)?;
        let zero = e.like(0.0, &angle)?;
        Ok(e.select(&origin, &zero, &angle)?.value)
    }

}

impl Builder<'_> {
    /// numpy's `fmax`/`fmin`: the larger or smaller operand, a NaN operand ignored (NaN only
    /// where both are).
    fn fmax(&mut self, max: bool, a: Arg, b: Arg, range: TextRange) -> Result<Value> {
        let op = if max { BinaryOp::Max } else { BinaryOp::Min };
        match (&a.value, &b.value) {
            (Value::Int(x), Value::Int(y)) => return Ok(Value::Int(if max { *x.max(y) } else { *x.min(y) })),
            // Rust's `max`/`min` ignore a NaN as C's `fmax`/`fmin` do.
            _ if a.value.number().is_some() && b.value.number().is_some() => {
                let (x, y) = (a.value.number().unwrap(), b.value.number().unwrap());
                return Ok(Value::Float(if max { x.max(y) } else { x.min(y) }));
            }
            _ => {}
        }
        let mut e = Expr { b: self, range };
        let m = e.bin(op, &a, &b)?;
        let b_nan = e.cmp(CmpOp::NotEq, &b, &b)?;
        let m = e.select(&b_nan, &a, &m)?;
        let a_nan = e.cmp(CmpOp::NotEq, &a, &a)?;
        Ok(e.select(&a_nan, &b, &m)?.value)
    }

    /// numpy's `hypot`: `m·√(1 + (n/m)²)` with `m` the larger magnitude and `n` the smaller, so
    /// that it overflows only where the result does; 0 where both are 0, inf where either is
    /// infinite (even with a NaN), NaN where either is NaN otherwise.
    fn hypot(&mut self, a: Arg, b: Arg, range: TextRange) -> Result<Value> {
        if let (Some(x), Some(y)) = (a.value.number(), b.value.number()) {
            return Ok(Value::Float(x.hypot(y)));
        }
        let mut e = Expr { b: self, range };
        let (x, y) = (e.float(a)?, e.float(b)?);
        let (ax, ay) = (e.unary(UnaryOp::Abs, &x)?, e.unary(UnaryOp::Abs, &y)?);
        let m = e.bin(BinaryOp::Max, &ax, &ay)?;
        let n = e.bin(BinaryOp::Min, &ax, &ay)?;
        let r = e.bin(BinaryOp::Div, &n, &m)?;
        let rr = e.bin(BinaryOp::Mul, &r, &r)?;
        let s = e.bin(BinaryOp::Add, &rr, &e.num(1.0))?;
        let s = e.unary(UnaryOp::Sqrt, &s)?;
        let h = e.bin(BinaryOp::Mul, &m, &s)?;
        let zero = e.cmp(CmpOp::Eq, &m, &e.num(0.0))?;
        let h = e.select(&zero, &m, &h)?;
        let inf = e.num(f64::INFINITY);
        let x_inf = e.cmp(CmpOp::Eq, &ax, &inf)?;
        let y_inf = e.cmp(CmpOp::Eq, &ay, &inf)?;
        let either = e.bin(BinaryOp::Max, &x_inf, &y_inf)?;
        let inf = e.like(f64::INFINITY, &h)?;
        Ok(e.select(&either, &inf, &h)?.value)
    }

    /// numpy's `heaviside(x1, x2)`: 0 below zero, 1 above, `x2` at zero, NaN where `x1` is NaN.
    fn heaviside(&mut self, a: Arg, b: Arg, range: TextRange) -> Result<Value> {
        if let (Some(x), Some(y)) = (a.value.number(), b.value.number()) {
            return Ok(Value::Float(if x.is_nan() { x } else if x < 0.0 { 0.0 } else if x > 0.0 { 1.0 } else { y }));
        }
        let mut e = Expr { b: self, range };
        let (x, y) = (e.float(a)?, e.float(b)?);
        let nan = e.cmp(CmpOp::NotEq, &x, &x)?;
        let at_zero = e.select(&nan, &x, &y)?;
        let above = e.cmp(CmpOp::Gt, &x, &e.num(0.0))?;
        let one = e.like(1.0, &at_zero)?;
        let v = e.select(&above, &one, &at_zero)?;
        let below = e.cmp(CmpOp::Lt, &x, &e.num(0.0))?;
        let zero = e.like(0.0, &v)?;
        Ok(e.select(&below, &zero, &v)?.value)
    }

    /// numpy's `float_power`: both operands in float64, then `**`.
    fn float_power(&mut self, a: Arg, b: Arg, range: TextRange) -> Result<Value> {
        if let (Some(x), Some(y)) = (a.value.number(), b.value.number()) {
            return Ok(Value::Float(x.powf(y)));
        }
        let f64_of = |b: &mut Self, x: Arg| -> Result<Arg> {
            let id = b.tensor(&x, Some(ollie_graph::DType::F64))?;
            let id = if b.ty(id).dtype == ollie_graph::DType::F64 { id } else { b.cast(id, ollie_graph::DType::F64, range)? };
            Ok(Arg { value: Value::Tensor(id), range: x.range })
        };
        let (x, y) = (f64_of(self, a)?, f64_of(self, b)?);
        self.elementwise(BinaryOp::Pow, x, y, range)
    }
}

/// A function of [`FUNCTIONS`] on a number known before the kernel runs.
fn fold(name: &str, x: f64) -> f64 {
    match name {
        "sinh" => x.sinh(),
        "cosh" => x.cosh(),
        "tan" => x.tan(),
        "arcsinh" => x.asinh(),
        "arccosh" => x.acosh(),
        "arctanh" => x.atanh(),
        "arcsin" => x.asin(),
        "arccos" => x.acos(),
        "degrees" | "rad2deg" => x.to_degrees(),
        "radians" | "deg2rad" => x.to_radians(),
        _ => x.trunc(),
    }
}

/// A small expression writer over the builder: every step an [`Arg`] at the call's range.
struct Expr<'b, 'a> {
    b: &'b mut Builder<'a>,
    range: TextRange,
}

impl Expr<'_, '_> {
    fn arg(&self, value: Value) -> Arg {
        Arg { value, range: self.range }
    }

    fn num(&self, x: f64) -> Arg {
        self.arg(Value::Float(x))
    }

    /// The operand with integer arrays made float64, as numpy's float functions make them
    /// (numbers stay numbers: numpy's weak scalars take the array's dtype).
    fn float(&mut self, x: Arg) -> Result<Arg> {
        match x.value {
            Value::Tensor(id) if !self.b.ty(id).dtype.is_float() => {
                let id = self.b.cast(id, ollie_graph::DType::F64, self.range)?;
                Ok(self.arg(Value::Tensor(id)))
            }
            _ => Ok(x),
        }
    }

    /// The number `x` as a constant of `like`'s dtype (a `where` between two numbers would be
    /// float64, as numpy's is).
    fn like(&mut self, x: f64, like: &Arg) -> Result<Arg> {
        let dtype = match like.value {
            Value::Tensor(id) => Some(self.b.ty(id).dtype),
            _ => None,
        };
        let id = self.b.tensor(&self.num(x), dtype)?;
        Ok(self.arg(Value::Tensor(id)))
    }

    fn cmp(&mut self, op: CmpOp, x: &Arg, y: &Arg) -> Result<Arg> {
        let v = self.b.compare(op, x.clone(), y.clone(), self.range)?;
        Ok(self.arg(v))
    }

    fn select(&mut self, c: &Arg, x: &Arg, y: &Arg) -> Result<Arg> {
        let v = self.b.select(c.clone(), x.clone(), y.clone(), self.range)?;
        Ok(self.arg(v))
    }

    fn unary(&mut self, op: UnaryOp, x: &Arg) -> Result<Arg> {
        let v = self.b.unary(op, x.clone(), self.range)?;
        Ok(self.arg(v))
    }

    fn bin(&mut self, op: BinaryOp, x: &Arg, y: &Arg) -> Result<Arg> {
        let v = self.b.elementwise(op, x.clone(), y.clone(), self.range)?;
        Ok(self.arg(v))
    }

    /// `exp(x − ln 2) ± exp(−x − ln 2)`: `(eˣ ± e⁻ˣ)/2` without overflowing before the result.
    fn exp_halves(&mut self, x: &Arg, op: BinaryOp) -> Result<Arg> {
        let a = self.bin(BinaryOp::Sub, x, &self.num(LN_2))?;
        let a = self.unary(UnaryOp::Exp, &a)?;
        let nx = self.unary(UnaryOp::Neg, x)?;
        let c = self.bin(BinaryOp::Sub, &nx, &self.num(LN_2))?;
        let c = self.unary(UnaryOp::Exp, &c)?;
        self.bin(op, &a, &c)
    }

    /// `√((1 − x)(1 + x))`.
    fn one_minus_square(&mut self, x: &Arg) -> Result<Arg> {
        let d = self.bin(BinaryOp::Sub, &self.num(1.0), x)?;
        let s = self.bin(BinaryOp::Add, &self.num(1.0), x)?;
        let p = self.bin(BinaryOp::Mul, &d, &s)?;
        self.unary(UnaryOp::Sqrt, &p)
    }

    /// `ln x + ln 2`: `ln 2x` for an `x` whose double would overflow.
    fn log_twice(&mut self, x: &Arg) -> Result<Arg> {
        let l = self.unary(UnaryOp::Log, x)?;
        self.bin(BinaryOp::Add, &l, &self.num(LN_2))
    }

    /// Toward zero: `ceil` below 0, `floor` elsewhere.
    fn trunc(&mut self, x: &Arg) -> Result<Arg> {
        let neg = self.cmp(CmpOp::Lt, x, &self.num(0.0))?;
        let up = self.unary(UnaryOp::Ceil, x)?;
        let down = self.unary(UnaryOp::Floor, x)?;
        self.select(&neg, &up, &down)
    }

    /// Where the divisor is infinite and the dividend finite.
    fn infinite_divisor(&mut self, a: &Arg, b: &Arg) -> Result<Arg> {
        let inf = self.num(f64::INFINITY);
        let ab = self.unary(UnaryOp::Abs, b)?;
        let b_inf = self.cmp(CmpOp::Eq, &ab, &inf)?;
        let aa = self.unary(UnaryOp::Abs, a)?;
        let a_fin = self.cmp(CmpOp::Lt, &aa, &inf)?;
        self.bin(BinaryOp::Min, &b_inf, &a_fin)
    }
}
