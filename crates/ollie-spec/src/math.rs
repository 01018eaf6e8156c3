//! Python's `math` module in a spec: its constants, and its functions folded on numbers known
//! before the kernel runs (`math.sqrt(2 / math.pi)`). On arrays a spec uses numpy's functions.
use ruff_text_size::TextRange;

use crate::builder::CallArgs;
use crate::diagnostic::{Code, Diagnostic};
use crate::value::Value;

type Result<T> = std::result::Result<T, Diagnostic>;

/// The functions a spec may call; each takes numbers and returns a number.
pub const FUNCTIONS: &[&str] = &[
    "sqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "pow", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh",
    "cosh", "tanh", "erf", "erfc", "fabs", "floor", "ceil", "trunc", "isqrt", "hypot", "copysign",
];

/// `math.NAME` used as a value.
pub fn attribute(name: &str, name_range: TextRange, range: TextRange) -> Result<Value> {
    Ok(match name {
        "pi" => Value::Float(std::f64::consts::PI),
        "e" => Value::Float(std::f64::consts::E),
        "tau" => Value::Float(std::f64::consts::TAU),
        "inf" => Value::Float(f64::INFINITY),
        "nan" => Value::Float(f64::NAN),
        _ if FUNCTIONS.contains(&name) => {
            return Err(Diagnostic::error(Code::UnsupportedSyntax, format!("`math.{name}` is used as a value"))
                .label(range, "call it instead: functions are not values in a spec"))
        }
        _ => return Err(unsupported(name, name_range)),
    })
}

/// `math.NAME(args)`, evaluated now.
pub fn call(name: &str, name_range: TextRange, args: &CallArgs) -> Result<Value> {
    if !FUNCTIONS.contains(&name) {
        return Err(unsupported(name, name_range));
    }
    if let Some((_, range, _)) = args.keywords.first() {
        return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`math.{name}` takes no keyword arguments")).label(*range, "here"));
    }
    let mut xs = Vec::with_capacity(args.positional.len());
    for a in &args.positional {
        match a.value.number() {
            Some(x) => xs.push((x, a.value.int())),
            None => {
                return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`math.{name}` takes numbers known before the kernel runs"))
                    .label(a.range, format!("this is {}", a.value.a_kind()))
                    .help(format!("on arrays use numpy: `np.{}(...)`", numpy_name(name))))
            }
        }
    }
    let arity = match name {
        "pow" | "atan2" | "hypot" | "copysign" => 2..=2,
        "log" => 1..=2,
        _ => 1..=1,
    };
    if !arity.contains(&xs.len()) {
        let n = if arity.start() == arity.end() { format!("{}", arity.start()) } else { format!("{} or {}", arity.start(), arity.end()) };
        return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`math.{name}` takes {n} arguments, got {}", xs.len())).label(args.range, "here"));
    }
    let domain = || Diagnostic::error(Code::BadValue, format!("`math.{name}`: math domain error")).label(args.range, "Python raises ValueError here");
    let x = xs[0].0;
    let y = xs.get(1).map(|p| p.0);
    let to_int = |v: f64| -> Result<Value> {
        if v.is_finite() && v.abs() < 9.2e18 {
            Ok(Value::Int(v as i64))
        } else {
            Err(Diagnostic::error(Code::BadValue, format!("`math.{name}` of {x}: not a finite integer")).label(args.range, "Python raises here"))
        }
    };
    let v = match name {
        "sqrt" if x < 0.0 => return Err(domain()),
        "sqrt" => x.sqrt(),
        "exp" => x.exp(),
        "expm1" => x.exp_m1(),
        "log" | "log2" | "log10" if x <= 0.0 => return Err(domain()),
        "log" => match y {
            None => x.ln(),
            Some(b) if b <= 0.0 || b == 1.0 => return Err(domain()),
            Some(b) => x.ln() / b.ln(),
        },
        "log1p" if x <= -1.0 => return Err(domain()),
        "log1p" => x.ln_1p(),
        "log2" => x.log2(),
        "log10" => x.log10(),
        "pow" => x.powf(y.unwrap()),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "asin" | "acos" if !(-1.0..=1.0).contains(&x) => return Err(domain()),
        "asin" => x.asin(),
        "acos" => x.acos(),
        "atan" => x.atan(),
        "atan2" => x.atan2(y.unwrap()),
        "sinh" => x.sinh(),
        "cosh" => x.cosh(),
        "tanh" => x.tanh(),
        "erf" => libm::erf(x),
        "erfc" => libm::erfc(x),
        "fabs" => x.abs(),
        "hypot" => x.hypot(y.unwrap()),
        "copysign" => x.copysign(y.unwrap()),
        // These return Python ints.
        "floor" => return xs[0].1.map(Value::Int).map_or_else(|| to_int(x.floor()), Ok),
        "ceil" => return xs[0].1.map(Value::Int).map_or_else(|| to_int(x.ceil()), Ok),
        "trunc" => return xs[0].1.map(Value::Int).map_or_else(|| to_int(x.trunc()), Ok),
        "isqrt" => match xs[0].1 {
            Some(n) if n >= 0 => return Ok(Value::Int(isqrt(n))),
            Some(_) => return Err(Diagnostic::error(Code::BadValue, "`math.isqrt` of a negative number").label(args.range, "Python raises ValueError here")),
            None => {
                return Err(Diagnostic::error(Code::BadValue, "`math.isqrt` takes an integer").label(args.positional[0].range, "this is a float"))
            }
        },
        _ => unreachable!("every name in FUNCTIONS is evaluated"),
    };
    Ok(Value::Float(v))
}

fn isqrt(n: i64) -> i64 {
    let mut r = (n as f64).sqrt() as i64;
    while r * r > n {
        r -= 1;
    }
    while (r + 1).checked_mul(r + 1).is_some_and(|s| s <= n) {
        r += 1;
    }
    r
}

/// numpy's name for the elementwise version of `math.NAME`.
fn numpy_name(name: &str) -> &str {
    match name {
        "fabs" => "abs",
        "pow" => "power",
        "asin" => "arcsin",
        "acos" => "arccos",
        "atan" => "arctan",
        "atan2" => "arctan2",
        "isqrt" => "sqrt",
        other => other,
    }
}

fn unsupported(name: &str, range: TextRange) -> Diagnostic {
    Diagnostic::error(Code::UnsupportedCall, format!("`math.{name}` is not supported"))
        .label(range, "not in ollie's subset of `math`")
        .help(format!("supported: the constants pi, e, tau, inf, nan, and the functions {} (on numbers)", FUNCTIONS.join(", ")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn isqrt_is_floor_of_square_root() {
        for n in [0i64, 1, 2, 3, 4, 15, 16, 17, 1 << 40, (1 << 40) + 1, i64::MAX] {
            let r = super::isqrt(n);
            assert!(r * r <= n && (r + 1).checked_mul(r + 1).is_none_or(|s| s > n), "{n}: {r}");
        }
    }
}
