//! numpy's statistics, written with the graph's reductions and its sort: the reductions that
//! ignore NaN (`nansum nanprod nanmean nanmax nanmin`), `ptp`, `average` (with `weights` and
//! `returned`), and the order statistics `median`, `quantile` and `percentile` (numpy's default
//! linear method). Each keeps numpy's result dtype, shapes and NaN rule.

use ollie_graph::{BinaryOp, CmpOp, DType, NodeId, Op};
use ruff_text_size::TextRange;

use crate::builder::{Arg, Builder, CallArgs, Result};
use crate::diagnostic::{Code, Diagnostic};
use crate::numpy::{reduction_params, required, Reduction};
use crate::value::Value;

/// The functions this module provides, as `np.NAME`.
pub const FUNCTIONS: &[&str] = &["average", "median", "nanmax", "nanmean", "nanmin", "nanprod", "nansum", "percentile", "ptp", "quantile"];

impl Builder<'_> {
    /// `np.NAME(args)` for a function of [`FUNCTIONS`].
    pub fn statistics_call(&mut self, name: &str, args: CallArgs) -> Result<Value> {
        let call = args.range;
        let fname = format!("np.{name}");
        match name {
            "nansum" | "nanprod" | "nanmean" | "nanmax" | "nanmin" => {
                let bound = args.bind(&fname, None, &reduction_params(&name[3..], "a"))?;
                self.nan_reduction(&name[3..], &fname, bound, call)
            }
            "ptp" => {
                let bound = args.bind(&fname, None, &reduction_params("max", "a"))?;
                let a = required(bound[0].clone(), &fname, "a", call)?;
                if self.is_bool(&a.value) {
                    return Err(Diagnostic::error(Code::BadValue, "numpy's `ptp` does not take booleans (it subtracts)").label(a.range, "a boolean array"));
                }
                let hi = self.reduction_call("max", &fname, bound.clone(), call)?;
                let lo = self.reduction_call("min", &fname, bound, call)?;
                self.elementwise(BinaryOp::Sub, Arg { value: hi, range: call }, Arg { value: lo, range: call }, call)
            }
            "average" => {
                let b = args.bind(&fname, None, &["a", "axis", "weights", "returned", "keepdims"])?;
                let [a, axis, weights, returned, keepdims]: [Option<Arg>; 5] = b.try_into().expect("five parameters");
                let a = required(a, &fname, "a", call)?;
                self.average(a, axis, weights.filter(|w| w.value != Value::None), returned, keepdims, call)
            }
            _ => {
                let params: &[&str] = if name == "median" {
                    &["a", "axis", "out", "overwrite_input", "keepdims"]
                } else {
                    &["a", "q", "axis", "out", "overwrite_input", "method", "keepdims"]
                };
                let b = args.bind(&fname, None, params)?;
                let get = |p: &str| params.iter().position(|q| *q == p).and_then(|i| b[i].clone());
                if let Some(out) = get("out").filter(|o| o.value != Value::None) {
                    return Err(Diagnostic::error(Code::UnsupportedArgument, "`out=` is not supported").label(out.range, "return the result instead"));
                }
                if let Some(m) = get("method").filter(|m| m.value != Value::Str("linear".into())) {
                    return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{fname}` with a method other than numpy's default"))
                        .label(m.range, "here")
                        .help("ollie computes `method=\"linear\"`"));
                }
                let a = required(get("a"), &fname, "a", call)?;
                if name == "median" {
                    return self.order_statistic(&fname, a, get("axis"), get("keepdims"), None, call);
                }
                let q = required(get("q"), &fname, "q", call)?;
                let q = self.quantiles(&fname, q, if name == "percentile" { 100.0 } else { 1.0 })?;
                self.order_statistic(&fname, a, get("axis"), get("keepdims"), Some(&q), call)
            }
        }
    }

    /// `nansum nanprod nanmean nanmax nanmin`: `kind`'s reduction with each NaN replaced by what
    /// it does not change; `nanmean` divides by the count of the others, and `nanmax`/`nanmin`
    /// are NaN over a slice of NaNs only (numpy warns there), as numpy's. Arrays without NaN
    /// (integers, booleans) reduce as `kind` does.
    fn nan_reduction(&mut self, kind: &str, fname: &str, mut bound: Vec<Option<Arg>>, call: TextRange) -> Result<Value> {
        let params = reduction_params(kind, "a");
        let slot = |p: &str| params.iter().position(|q| *q == p);
        let a = required(bound[0].take(), fname, "a", call)?;
        let id = self.tensor(&a, None)?;
        let dtype = self.ty(id).dtype;
        if !dtype.is_float() {
            bound[0] = Some(Arg { value: Value::Tensor(id), range: a.range });
            return self.reduction_call(kind, fname, bound, call);
        }
        let shape = self.ty(id).shape.clone();
        let nan = self.push(Op::Compare(CmpOp::Ne), vec![id, id], call)?;
        let number = self.push(Op::Compare(CmpOp::Eq), vec![id, id], call)?;
        let fill = match kind {
            "prod" => 1.0,
            "max" => f64::NEG_INFINITY,
            "min" => f64::INFINITY,
            _ => 0.0,
        };
        let fill = self.full(&shape, fill, dtype, call)?;
        let kept = self.push(Op::Select, vec![nan, fill, id], call)?;
        bound[0] = Some(Arg { value: Value::Tensor(kept), range: a.range });
        let val = |v: Value| Arg { value: v, range: call };
        match kind {
            "sum" | "prod" => self.reduction_call(kind, fname, bound, call),
            "mean" => {
                let total = self.reduction_call("sum", fname, bound.clone(), call)?;
                let total_dtype = self.tensor(&val(total.clone()), None).map(|t| self.ty(t).dtype)?;
                bound[0] = Some(val(Value::Tensor(self.cast(number, total_dtype, call)?)));
                bound[slot("dtype").expect("mean takes dtype")] = None;
                let count = self.reduction_call("sum", fname, bound, call)?;
                self.elementwise(BinaryOp::Div, val(total), val(count), call)
            }
            _ => {
                let extreme = self.reduction_call(kind, fname, bound.clone(), call)?;
                bound[0] = Some(val(Value::Tensor(self.cast(number, dtype, call)?)));
                let any = self.reduction_call("max", fname, bound, call)?;
                let none = self.compare(ruff_python_ast::CmpOp::Eq, val(any), val(Value::Float(0.0)), call)?;
                let nan = self.tensor(&val(Value::Float(f64::NAN)), Some(dtype))?;
                self.select(val(none), val(Value::Tensor(nan)), val(extreme), call)
            }
        }
    }

    /// numpy's `average`: the mean without weights; with them `sum(a·w) / sum(w)` along `axis`,
    /// `w` the shape of `a` or 1-D along the one axis named, in float64 for integer `a`. Weights
    /// summing to zero give what the division gives (numpy raises `ZeroDivisionError`).
    /// `returned=True` adds the sum of the weights (the count without them), in the result's shape.
    fn average(&mut self, a: Arg, axis: Option<Arg>, weights: Option<Arg>, returned: Option<Arg>, keepdims: Option<Arg>, call: TextRange) -> Result<Value> {
        let returned = self.flag(returned, "returned")?;
        let val = |v: Value| Arg { value: v, range: call };
        let id = self.tensor(&a, None)?;
        let ty = self.ty(id).clone();
        let (avg, scale) = match weights {
            None => {
                let avg = self.reduce(Reduction::Mean, val(Value::Tensor(id)), axis.clone(), keepdims, call)?;
                let avg = self.tensor(&val(avg), None)?;
                let count = ty.num_elements() / self.ty(avg).num_elements().max(1);
                let shape = self.ty(avg).shape.clone();
                let dtype = self.ty(avg).dtype;
                (avg, self.full(&shape, count as f64, dtype, call)?)
            }
            Some(w) => {
                let mut wid = self.tensor(&w, None)?;
                let wty = self.ty(wid).clone();
                if wty.shape != ty.shape {
                    let differ = |what: &str| Diagnostic::error(Code::ShapeMismatch, what.to_string()).label(a.range, ty.to_string()).label(w.range, wty.to_string());
                    let Some(ax) = axis.as_ref().filter(|x| x.value != Value::None) else {
                        return Err(differ("`np.average`: `axis=` must be given when the shapes of `a` and `weights` differ"));
                    };
                    let ax = self.axis(ax, ty.rank())?;
                    if wty.rank() != 1 {
                        return Err(differ("`np.average`: 1-D weights expected when the shapes of `a` and `weights` differ"));
                    }
                    if wty.shape[0] != ty.shape[ax] {
                        return Err(differ(&format!("`np.average`: {} weights do not fit axis {ax} of length {}", wty.shape[0], ty.shape[ax])));
                    }
                    let mut along = vec![1; ty.rank()];
                    along[ax] = ty.shape[ax];
                    wid = self.reshape_to(wid, &along, call)?;
                    wid = self.broadcast_to(wid, &ty.shape, call)?;
                }
                let (mut aid, mut wid) = (id, wid);
                if !ty.dtype.is_float() {
                    aid = self.cast(aid, DType::F64, call)?;
                    wid = self.cast(wid, DType::F64, call)?;
                }
                let product = self.elementwise(BinaryOp::Mul, val(Value::Tensor(aid)), val(Value::Tensor(wid)), call)?;
                let dtype = self.tensor(&val(product.clone()), None).map(|p| self.ty(p).dtype)?;
                let wid = self.cast(wid, dtype, call)?;
                let total = self.reduce(Reduction::Sum, val(product), axis.clone(), keepdims.clone(), call)?;
                let scale = self.reduce(Reduction::Sum, val(Value::Tensor(wid)), axis, keepdims, call)?;
                let avg = self.elementwise(BinaryOp::Div, val(total), val(scale.clone()), call)?;
                (self.tensor(&val(avg), None)?, self.tensor(&val(scale), None)?)
            }
        };
        if returned {
            return Ok(Value::Tuple(vec![Value::Tensor(avg), Value::Tensor(scale)]));
        }
        Ok(Value::Tensor(avg))
    }

    /// `q` of `quantile` (`scale` 1) or `percentile` (`scale` 100): a number or a sequence of
    /// numbers known before the kernel runs, each within `[0, scale]`, as fractions.
    fn quantiles(&self, fname: &str, q: Arg, scale: f64) -> Result<Quantiles> {
        let bad = |what: String| Diagnostic::error(Code::BadValue, what).label(q.range, "here");
        let fraction = |v: &Value| -> Result<f64> {
            let Some(x) = v.number() else {
                return Err(bad(format!("`{fname}`'s `q` must be numbers known before the kernel runs, found {}", self.describe(v))));
            };
            if !(0.0..=scale).contains(&x) {
                return Err(bad(format!("`{fname}`'s `q` must be within [0, {scale}], found {x}")));
            }
            Ok(x / scale)
        };
        match &q.value {
            Value::Tuple(items) if !items.is_empty() => Ok(Quantiles::Many(items.iter().map(fraction).collect::<Result<_>>()?)),
            v => Ok(Quantiles::One(fraction(v)?)),
        }
    }

    /// The order statistics of `a` along one axis (or the flattened array), from its sort: the
    /// median (`q` None: the mean of the two middle values for an even count) or numpy's linear
    /// quantiles, `q` prepended to the shape when it is a sequence. NaN where the axis holds a
    /// NaN (sorted last, so the last value says); float64 for integers; a sequence `q` makes
    /// float arrays float64, as numpy's array `q` does.
    fn order_statistic(&mut self, fname: &str, a: Arg, axis: Option<Arg>, keepdims: Option<Arg>, q: Option<&Quantiles>, range: TextRange) -> Result<Value> {
        if let Some(Arg { value: Value::Tuple(_), range: r }) = &axis {
            return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{fname}` over several axes")).label(*r, "one axis or None").help("move the axes together and `.reshape` them into one first"));
        }
        let rank = self.tensor(&a, None).map(|id| self.ty(id).rank())?;
        let whole = matches!(axis, None | Some(Arg { value: Value::None, .. }));
        let keepdims = self.flag(keepdims, "keepdims")?;
        let (id, k) = self.axis_or_flat(&a, axis, range)?;
        let dtype = self.ty(id).dtype;
        let wanted = match q {
            _ if !dtype.is_float() => DType::F64,
            Some(Quantiles::Many(_)) => DType::F64,
            _ => dtype,
        };
        let id = self.cast(id, wanted, range)?;
        let n = self.ty(id).shape[k];
        if n == 0 {
            return Err(Diagnostic::error(Code::BadValue, format!("`{fname}` of an empty axis")).label(a.range, self.ty(id).to_string()));
        }
        let sorted = self.push(Op::Sort { axis: k }, vec![id], range)?;
        let val = |id| Arg { value: Value::Tensor(id), range };
        let fractions = match q {
            Some(Quantiles::Many(fs)) => fs.clone(),
            Some(Quantiles::One(f)) => vec![*f],
            None => vec![0.5],
        };
        let mut values = Vec::new();
        for f in fractions {
            values.push(match q {
                Some(_) => self.linear_quantile(sorted, k, n, f, range)?,
                None => {
                    let upper = self.range_along(sorted, k, n / 2, 1, range)?;
                    if n % 2 == 1 {
                        upper
                    } else {
                        let lower = self.range_along(sorted, k, n / 2 - 1, 1, range)?;
                        let sum = self.elementwise(BinaryOp::Add, val(lower), val(upper), range)?;
                        let half = self.elementwise(BinaryOp::Mul, Arg { value: sum, range }, Arg { value: Value::Float(0.5), range }, range)?;
                        self.tensor(&Arg { value: half, range }, None)?
                    }
                }
            });
        }
        let last = self.range_along(sorted, k, n - 1, 1, range)?;
        let nan = self.push(Op::Compare(CmpOp::Ne), vec![last, last], range)?;
        let mut shape = self.ty(last).shape.clone();
        if whole {
            shape = if keepdims { vec![1; rank] } else { Vec::new() };
        } else if !keepdims {
            shape.remove(k);
        }
        let mut results = Vec::new();
        for value in values {
            let out = self.push(Op::Select, vec![nan, last, value], range)?;
            results.push(Value::Tensor(self.reshape_to(out, &shape, range)?));
        }
        match q {
            Some(Quantiles::Many(_)) => self.concatenate(true, Arg { value: Value::Tuple(results), range }, None, range),
            _ => Ok(results.pop().expect("one order statistic")),
        }
    }

    /// numpy's linear method (Hyndman and Fan's 7th): the virtual index `(n − 1)·q` between the
    /// sorted values at its floor and the next (both the last at or past the end), interpolated
    /// as numpy's `_lerp` does — `a + (b − a)·t` below `t = ½`, `b − (b − a)·(1 − t)` from it —
    /// so that infinities give numpy's NaN.
    fn linear_quantile(&mut self, sorted: NodeId, k: usize, n: usize, q: f64, range: TextRange) -> Result<NodeId> {
        let virtual_index = (n - 1) as f64 * q;
        // Past the last index numpy takes the last value twice, as its index −1, and its gamma
        // from there.
        let (previous, next, t) = if virtual_index >= (n - 1) as f64 {
            (n - 1, n - 1, virtual_index + 1.0)
        } else {
            let p = virtual_index.floor();
            (p as usize, p as usize + 1, virtual_index - p)
        };
        let val = |id| Arg { value: Value::Tensor(id), range };
        let num = |x: f64| Arg { value: Value::Float(x), range };
        let a = self.range_along(sorted, k, previous, 1, range)?;
        let b = self.range_along(sorted, k, next, 1, range)?;
        let d = self.elementwise(BinaryOp::Sub, val(b), val(a), range)?;
        let v = if t < 0.5 {
            let step = self.elementwise(BinaryOp::Mul, Arg { value: d, range }, num(t), range)?;
            self.elementwise(BinaryOp::Add, val(a), Arg { value: step, range }, range)?
        } else {
            let step = self.elementwise(BinaryOp::Mul, Arg { value: d, range }, num(1.0 - t), range)?;
            self.elementwise(BinaryOp::Sub, val(b), Arg { value: step, range }, range)?
        };
        self.tensor(&Arg { value: v, range }, None)
    }
}

/// `q` of a quantile: one number (the result has the reduced shape) or several (stacked first).
enum Quantiles {
    One(f64),
    Many(Vec<f64>),
}
