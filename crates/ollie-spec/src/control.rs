//! Python's control flow in a spec, resolved while the graph is built: `for` loops over
//! values known before the kernel runs (unrolled), `if` and conditional expressions on such
//! values, `and`/`or`, `is None`, chained comparisons, lambdas and functions as values, and
//! the builtins that make and take sequences (`range`, `enumerate`, `zip`, `reversed`, `sum`,
//! `list.append`). A condition on array data stays a diagnostic: it is `np.where`'s job.

use ollie_graph::ReduceOp;
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::{Ranged, TextRange};

use crate::builder::{unsupported_statement, unsupported_syntax, Arg, Builder, CallArgs, Flow, Result, Scope};
use crate::diagnostic::{Code, Diagnostic};
use crate::value::Value;

/// The most iterations a loop unrolls (and the longest `range` a spec makes): a kernel's loop
/// over layers, heads or taps is short; one over an array's elements is whole-array work.
pub const MAX_ITERATIONS: usize = 4096;

/// The numpy ufuncs whose `.reduce` a spec may call, with the reduction each is.
const UFUNC_REDUCTIONS: &[(&str, &str)] =
    &[("add", "sum"), ("multiply", "prod"), ("maximum", "max"), ("minimum", "min"), ("logical_and", "all"), ("logical_or", "any")];

/// The ufuncs whose `accumulate` ollie runs, and the running op.
const UFUNC_SCANS: &[(&str, ReduceOp)] = &[("add", ReduceOp::Sum), ("multiply", ReduceOp::Prod), ("maximum", ReduceOp::Max), ("minimum", ReduceOp::Min)];

impl<'a> Builder<'a> {
    /// `for TARGET in ITER: ...`, unrolled: the body runs once per item, its target bound to
    /// the item; `else` runs when no `break` left the loop.
    pub(crate) fn run_loop(&mut self, f: &ast::StmtFor, scope: &mut Scope) -> Result<Flow> {
        if f.is_async {
            return Err(unsupported_statement(f.range(), "`async for`"));
        }
        let items = self.iteration(&f.iter, scope)?;
        for item in items {
            self.assign(&f.target, item, f.iter.range(), scope)?;
            match self.run_body(&f.body, scope)? {
                Flow::Next | Flow::Continue => {}
                Flow::Break => return Ok(Flow::Next),
                flow @ Flow::Return(_) => return Ok(flow),
            }
        }
        self.run_body(&f.orelse, scope)
    }

    /// The items a `for` loop visits: a tuple's or list's (`range`, `enumerate` and `zip` make
    /// them).
    fn iteration(&mut self, iter: &Expr, scope: &Scope) -> Result<Vec<Value>> {
        let value = self.expr(iter, scope)?;
        self.items(value, iter.range())
    }

    fn items(&self, value: Value, range: TextRange) -> Result<Vec<Value>> {
        match value {
            Value::Tuple(items) => Ok(items),
            Value::Tensor(id) => Err(Diagnostic::error(Code::UnsupportedStatement, format!("a loop over the rows of an array ({})", self.ty(id)))
                .label(range, "an array")
                .help("loops run while ollie builds the kernel, over values known before it runs: iterate `range(x.shape[0])` and index, or use whole-array operations")),
            other => Err(Diagnostic::error(Code::BadValue, format!("cannot iterate over {}", other.a_kind())).label(range, "not a sequence")),
        }
    }

    /// `if TEST: ... elif TEST: ... else: ...` on values known before the kernel runs.
    pub(crate) fn run_if(&mut self, s: &ast::StmtIf, scope: &mut Scope) -> Result<Flow> {
        let test = self.expr(&s.test, scope)?;
        if self.truth_of(&test, s.test.range())? {
            return self.run_body(&s.body, scope);
        }
        for clause in &s.elif_else_clauses {
            let taken = match &clause.test {
                Some(t) => {
                    let v = self.expr(t, scope)?;
                    self.truth_of(&v, t.range())?
                }
                None => true,
            };
            if taken {
                return self.run_body(&clause.body, scope);
            }
        }
        Ok(Flow::Next)
    }

    /// Python's truth value of a value known before the kernel runs; an array's is a
    /// diagnostic (its elements decide it only when the kernel runs).
    pub(crate) fn truth_of(&self, v: &Value, range: TextRange) -> Result<bool> {
        Ok(match v {
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::None => false,
            Value::Tuple(items) => !items.is_empty(),
            Value::Str(s) => !s.is_empty(),
            Value::Tensor(id) => {
                return Err(Diagnostic::error(Code::UnsupportedStatement, format!("a branch on an array's values ({})", self.ty(*id)))
                    .label(range, "known only when the kernel runs")
                    .help("select elementwise with `np.where(condition, a, b)`; branches are taken on values known before the kernel runs (shapes, constants, `is None`)"))
            }
            _ => true,
        })
    }

    /// `a and b`, `a or b`: Python's short circuit on values known before the kernel runs.
    pub(crate) fn bool_op(&mut self, b: &ast::ExprBoolOp, scope: &Scope) -> Result<Value> {
        let mut last = Value::None;
        for e in &b.values {
            last = self.expr(e, scope)?;
            if let Value::Tensor(_) = last {
                return Err(unsupported_syntax(e.range(), "`and`/`or` on an array").help("combine boolean masks with `&` and `|`"));
            }
            let t = self.truth_of(&last, e.range())?;
            if (b.op == ast::BoolOp::And) != t {
                break;
            }
        }
        Ok(last)
    }

    /// `a < b < c`: each comparison, all of them known before the kernel runs.
    pub(crate) fn chained_compare(&mut self, c: &ast::ExprCompare, scope: &Scope) -> Result<Value> {
        let mut left = Arg { value: self.expr(&c.left, scope)?, range: c.left.range() };
        for (op, e) in c.ops.iter().zip(c.comparators.iter()) {
            let right = Arg { value: self.expr(e, scope)?, range: e.range() };
            match self.compare(*op, left.clone(), right.clone(), c.range())? {
                Value::Bool(true) => {}
                Value::Bool(false) => return Ok(Value::Bool(false)),
                _ => {
                    return Err(unsupported_syntax(c.range(), "a chained comparison of arrays")
                        .help("compare two values at a time and combine masks with `&`"))
                }
            }
            left = right;
        }
        Ok(Value::Bool(true))
    }

    /// `lambda PARAMS: BODY`: a function value that sees the names around it as they are now.
    pub(crate) fn lambda(&mut self, l: &ast::ExprLambda, scope: &Scope) -> Value {
        self.closures.push(scope.clone());
        Value::Lambda { at: l.range, env: self.closures.len() - 1 }
    }

    /// Calls a function value: a lambda, a function of this file, a numpy or scipy.special
    /// function.
    pub(crate) fn call_value(&mut self, callee: &Value, callee_range: TextRange, args: CallArgs, caller: &Scope) -> Result<Value> {
        match callee {
            Value::Lambda { at, env } => {
                let l: &'a ast::ExprLambda = self.module.lambdas[at];
                let env = self.closures[*env].clone();
                let range = args.range;
                let values = match &l.parameters {
                    Some(p) => self.bind_parameters("lambda", p, args, &env)?,
                    None if args.positional.is_empty() && args.keywords.is_empty() => Vec::new(),
                    None => return Err(Diagnostic::error(Code::UnsupportedArgument, "this lambda takes no arguments").label(args.range, "here")),
                };
                self.enter(Some(caller), range)?;
                let mut scope = env;
                scope.extend(values);
                let result = self.expr(&l.body, &scope);
                self.leave();
                result
            }
            Value::Function(name) => {
                let def = self.module.functions[name.as_str()];
                self.call_helper(def, args, caller)
            }
            Value::NumpyFunction(name) => self.numpy_call(name, callee_range, args),
            Value::Special(name) => self.special_call(name, callee_range, args),
            other => Err(Diagnostic::error(Code::UnsupportedCall, format!("{} is not callable", other.a_kind())).label(callee_range, "called here")),
        }
    }

    /// `np.UFUNC.reduce(array, axis=0, keepdims=False)`, as the reduction it is.
    pub(crate) fn ufunc_method(&mut self, ufunc: &str, method: &str, method_range: TextRange, args: CallArgs) -> Result<Value> {
        let reduction = UFUNC_REDUCTIONS.iter().find(|(u, _)| *u == ufunc).map(|(_, r)| *r);
        let running = UFUNC_SCANS.iter().find(|(u, _)| *u == ufunc).map(|(_, r)| *r);
        if let (Some(op), "accumulate") = (running, method) {
            // numpy's default axis for a ufunc's accumulate is 0, as for its reduce.
            let fname = format!("np.{ufunc}.accumulate");
            let call = args.range;
            let mut b = args.bind(&fname, None, &["array", "axis"])?.into_iter();
            let array = crate::numpy::required(b.next().unwrap(), &fname, "array", call)?;
            let axis = b.next().unwrap().unwrap_or(Arg { value: Value::Int(0), range: call });
            let id = self.tensor(&array, None)?;
            if matches!(op, ReduceOp::Sum | ReduceOp::Prod) && !self.ty(id).dtype.is_float() {
                // numpy keeps (and wraps in) the integer dtype here, where `cumsum` widens.
                return Err(Diagnostic::error(Code::UnsupportedDtype, format!("`{fname}` of an integer array"))
                    .label(array.range, format!("this is {}", self.ty(id)))
                    .help("numpy wraps around in the array's own integer type here; write `np.cumsum`/`np.cumprod`, which accumulate in int64"));
            }
            return self.scan(op, Arg { value: Value::Tensor(id), range: array.range }, Some(axis), call);
        }
        let (Some(reduction), "reduce") = (reduction, method) else {
            let names: Vec<String> = UFUNC_REDUCTIONS.iter().map(|(u, _)| format!("np.{u}.reduce")).chain(UFUNC_SCANS.iter().map(|(u, _)| format!("np.{u}.accumulate"))).collect();
            return Err(Diagnostic::error(Code::UnsupportedCall, format!("`np.{ufunc}.{method}` is not supported"))
                .label(method_range, "not in ollie's numpy subset")
                .help(format!("supported ufunc methods: {}", names.join(", "))));
        };
        let fname = format!("np.{ufunc}.reduce");
        let call = args.range;
        let mut b = args.bind(&fname, None, &["array", "axis", "dtype", "out", "keepdims"])?.into_iter();
        let array = crate::numpy::required(b.next().unwrap(), &fname, "array", call)?;
        // numpy's default axis for a ufunc's reduce is 0, not every axis.
        let axis = b.next().unwrap().unwrap_or(Arg { value: Value::Int(0), range: call });
        let (dtype, out, keepdims) = (b.next().unwrap(), b.next().unwrap(), b.next().unwrap());
        let mut keywords = vec![("axis".to_string(), axis.range, axis)];
        for (name, arg) in [("dtype", dtype), ("out", out), ("keepdims", keepdims)] {
            if let Some(arg) = arg {
                keywords.push((name.to_string(), arg.range, arg));
            }
        }
        self.numpy_call(reduction, method_range, CallArgs { positional: vec![array], keywords, range: call })
    }

    /// `NAME.append(VALUE)` as a statement: the list bound to `NAME` gains the value. Returns
    /// whether `e` was such a call.
    pub(crate) fn append(&mut self, e: &Expr, scope: &mut Scope) -> Result<bool> {
        let Expr::Call(call) = e else { return Ok(false) };
        let Expr::Attribute(a) = &*call.func else { return Ok(false) };
        let (Expr::Name(list), "append") = (&*a.value, a.attr.as_str()) else { return Ok(false) };
        let Some(Value::Tuple(items)) = scope.get(list.id.as_str()) else { return Ok(false) };
        let mut items = items.clone();
        let ([item], true) = (&call.arguments.args[..], call.arguments.keywords.is_empty()) else {
            return Err(Diagnostic::error(Code::UnsupportedArgument, "`list.append` takes one argument").label(call.range(), "here"));
        };
        items.push(self.expr(item, scope)?);
        scope.insert(list.id.to_string(), Value::Tuple(items));
        Ok(true)
    }

    /// The builtins that make or fold sequences; `None` for another name.
    pub(crate) fn sequence_builtin(&mut self, name: &str, args: &CallArgs) -> Result<Option<Value>> {
        let no_keywords = |args: &CallArgs| match args.keywords.first() {
            Some((k, r, _)) => Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{name}` does not take `{k}` in a spec")).label(*r, "here")),
            None => Ok(()),
        };
        let value = match name {
            "range" => {
                no_keywords(args)?;
                let ints: Option<Vec<i64>> = args.positional.iter().map(|a| match a.value {
                    Value::Int(i) => Some(i),
                    _ => None,
                }).collect();
                let (start, stop, step) = match ints.as_deref() {
                    Some(&[stop]) => (0, stop, 1),
                    Some(&[start, stop]) => (start, stop, 1),
                    Some(&[start, stop, step]) if step != 0 => (start, stop, step),
                    _ => {
                        return Err(Diagnostic::error(Code::BadValue, "`range` takes one to three integers known before the kernel runs (a step not 0)")
                            .label(args.range, "here"))
                    }
                };
                let (span, by) = if step > 0 { (stop - start, step) } else { (start - stop, -step) };
                let len = if span <= 0 { 0 } else { (span + by - 1) / by };
                check_length(len as usize, args.range)?;
                Value::Tuple((0..len).map(|i| Value::Int(start + i * step)).collect())
            }
            "enumerate" | "reversed" | "list" | "tuple" => {
                let mut b = args.clone().bind(name, None, &["iterable", "start"])?.into_iter();
                let iterable = crate::numpy::required(b.next().unwrap(), name, "iterable", args.range)?;
                let items = self.items(iterable.value, iterable.range)?;
                match (name, b.next().unwrap()) {
                    ("enumerate", start) => {
                        let start = match start.map(|s| s.value) {
                            None => 0,
                            Some(Value::Int(i)) => i,
                            Some(other) => return Err(Diagnostic::error(Code::BadValue, format!("`enumerate` starts at an integer, not {}", other.a_kind())).label(args.range, "here")),
                        };
                        Value::Tuple(items.into_iter().enumerate().map(|(i, v)| Value::Tuple(vec![Value::Int(start + i as i64), v])).collect())
                    }
                    (_, Some(s)) => return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{name}` takes one argument")).label(s.range, "here")),
                    ("reversed", None) => Value::Tuple(items.into_iter().rev().collect()),
                    _ => Value::Tuple(items),
                }
            }
            "zip" => {
                no_keywords(args)?;
                let lists = args.positional.iter().map(|a| self.items(a.value.clone(), a.range)).collect::<Result<Vec<_>>>()?;
                let n = lists.iter().map(Vec::len).min().unwrap_or(0);
                Value::Tuple((0..n).map(|i| Value::Tuple(lists.iter().map(|l| l[i].clone()).collect())).collect())
            }
            "sum" => {
                let mut b = args.clone().bind("sum", None, &["iterable", "start"])?.into_iter();
                let iterable = crate::numpy::required(b.next().unwrap(), "sum", "iterable", args.range)?;
                let items = self.items(iterable.value, iterable.range)?;
                let mut total = b.next().unwrap().unwrap_or(Arg { value: Value::Int(0), range: args.range });
                for item in items {
                    let value = self.binop(ast::Operator::Add, total, Arg { value: item, range: iterable.range }, args.range)?;
                    total = Arg { value, range: args.range };
                }
                total.value
            }
            _ => return Ok(None),
        };
        Ok(Some(value))
    }
}

fn check_length(len: usize, range: TextRange) -> Result<()> {
    if len > MAX_ITERATIONS {
        return Err(Diagnostic::error(Code::UnsupportedStatement, format!("a sequence of {len} items, more than the {MAX_ITERATIONS} a spec unrolls"))
            .label(range, "too long")
            .help("a loop is unrolled while ollie builds the kernel: iterate over layers, heads or taps, and write elementwise work as whole-array operations"));
    }
    Ok(())
}

/// Whether an `is`/`is not` comparison can be decided before the kernel runs: one side is
/// `None` (an array is never `None`).
pub(crate) fn identity(op: ast::CmpOp, left: &Value, right: &Value) -> Option<Value> {
    let same = match (left, right) {
        (Value::None, Value::None) => true,
        (Value::None, _) | (_, Value::None) => false,
        (Value::DType(a), Value::DType(b)) => a == b,
        _ => return None,
    };
    Some(Value::Bool(same == (op == ast::CmpOp::Is)))
}
