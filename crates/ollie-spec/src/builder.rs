//! The spec interpreter: runs a kernel's Python body abstractly, folding Python values and
//! recording every array operation as a graph node.

use std::collections::{HashMap, HashSet};

use ollie_graph::{BinaryOp, DType, Graph, NodeId, Op, TensorType, UnaryOp};
use ruff_python_ast::{self as ast, Expr, Number, Stmt};
use ruff_text_size::{Ranged, TextRange};

use crate::diagnostic::{Code, Diagnostic};
use crate::setitem::Unassigned;
use crate::value::Value;

pub type Result<T> = std::result::Result<T, Diagnostic>;

/// A value with the source span it came from.
#[derive(Clone, Debug)]
pub struct Arg {
    pub value: Value,
    pub range: TextRange,
}

/// Module-level facts the interpreter reads: the numpy alias, constants and helper functions.
pub struct Module<'a> {
    pub numpy: Option<String>,
    /// The name `import math` bound, if the module imports it.
    pub math: Option<String>,
    /// The name `import ml_dtypes` bound, if the module imports it.
    pub ml_dtypes: Option<String>,
    /// The name `import scipy` bound (`scipy.special.softmax`).
    pub scipy: Option<String>,
    /// The name bound to `scipy.special` (`import scipy.special as sp`, `from scipy import special`).
    pub scipy_special: Option<String>,
    pub constants: HashMap<String, Value>,
    pub functions: HashMap<String, &'a ast::StmtFunctionDef>,
    /// Every lambda of the module, by where it is written.
    pub lambdas: HashMap<TextRange, &'a ast::ExprLambda>,
}

const MAX_CALL_DEPTH: usize = 32;

pub struct Builder<'a> {
    pub module: Module<'a>,
    pub graph: Graph,
    pub warnings: Vec<Diagnostic>,
    /// For each active caller of the running function, the arrays its variables hold.
    callers: Vec<Vec<NodeId>>,
    /// Copies (`.copy()`, `np.array`, `.astype`): arrays with memory of their own, though the
    /// graph reads them as their operand (an identity reshape).
    copies: HashSet<NodeId>,
    /// `np.broadcast_to`'s results: read-only views in numpy.
    pub(crate) read_only: HashSet<NodeId>,
    /// The elements of `np.empty` arrays not yet assigned.
    pub(crate) unassigned: Unassigned,
    /// The names each lambda made so far saw when it was made ([`Value::Lambda`]'s `env`).
    pub(crate) closures: Vec<Scope>,
}

/// Local variables of one function activation.
pub type Scope = HashMap<String, Value>;

/// How a block of statements ended.
pub enum Flow {
    /// It ran to its end.
    Next,
    Return(Value),
    Break,
    Continue,
}

/// The diagnostic for an index result (`argmax`, `argsort`) computed with or indexed by.
pub fn index_result_used(range: TextRange) -> Diagnostic {
    Diagnostic::error(Code::IndexResultUsed, "an index from `argmax`, `argmin` or `argsort` is used in a computation")
        .label(range, "uses an index result")
        .help("a spec returns an index result (sliced, reshaped, transposed, or cast with `.astype` to an integer dtype); computing with one, or indexing by it, is not supported yet (for sorted values, `np.sort` gives them)")
}

impl<'a> Builder<'a> {
    pub fn new(module: Module<'a>, graph: Graph) -> Builder<'a> {
        Builder { module, graph, warnings: Vec::new(), callers: Vec::new(), copies: HashSet::new(), read_only: HashSet::new(), unassigned: Unassigned::default(), closures: Vec::new() }
    }

    pub fn ty(&self, id: NodeId) -> &TensorType {
        self.graph.ty(id)
    }

    /// Appends a node; a type error here means the front end let something through that it
    /// should have diagnosed, so it is reported as an internal error at `range`.
    pub fn push(&mut self, op: Op, args: Vec<NodeId>, range: TextRange) -> Result<NodeId> {
        if !op.keeps_index() && args.iter().any(|&a| self.graph.index_result(a)) {
            return Err(index_result_used(range));
        }
        for &a in &args {
            self.check_assigned(a, range)?;
        }
        let wraps = matches!(op, Op::Binary(BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Pow) | Op::Unary(UnaryOp::Neg | UnaryOp::Abs));
        if wraps && args.iter().map(|&a| self.ty(a).dtype).reduce(DType::promote).is_some_and(DType::is_byte) {
            let dtype = args.iter().map(|&a| self.ty(a).dtype).find(|d| d.is_byte()).expect("a byte operand");
            return Err(Diagnostic::error(Code::UnsupportedDtype, format!("arithmetic in {dtype} wraps around in numpy"))
                .label(range, format!("computed in {dtype}"))
                .help("convert first (`.astype(np.float32)`, `.astype(np.int32)`): numpy's 8-bit integer arithmetic wraps (`np.uint8(3) - 5` is 254)"));
        }
        self.graph.push(op, args).map_err(|e| {
            Diagnostic::error(Code::Internal, format!("ollie built an ill-typed graph node: {e}"))
                .label(range, "while translating this")
                .help("this is a bug in ollie; please report it with the spec")
        })
    }

    /// Runs `def` with its parameters bound to `args`; returns the returned value. `caller` is
    /// the calling function's scope (none for the kernel itself).
    pub fn call_function(&mut self, def: &ast::StmtFunctionDef, args: Vec<(String, Value)>, caller: Option<&Scope>, call: TextRange) -> Result<Value> {
        self.enter(caller, call)?;
        let mut scope: Scope = args.into_iter().collect();
        let result = self.run_body(&def.body, &mut scope);
        self.leave();
        match result? {
            Flow::Return(v) => Ok(v),
            Flow::Break | Flow::Continue => Err(unsupported_statement(def.name.range(), "`break` or `continue` outside a loop")),
            Flow::Next => Err(Diagnostic::error(Code::MissingReturn, format!("`{}` has no `return` statement", def.name.as_str()))
                .label(def.name.range(), "this function never returns a value")
                .help("end the kernel with `return RESULT` (or `return A, B` for several outputs)")),
        }
    }

    /// Enters a call from `caller`'s scope, whose arrays an in-place update in the callee must
    /// not change.
    pub(crate) fn enter(&mut self, caller: Option<&Scope>, call: TextRange) -> Result<()> {
        if self.callers.len() >= MAX_CALL_DEPTH {
            return Err(Diagnostic::error(Code::UnsupportedSyntax, "recursion is not supported")
                .label(call, format!("calls nest deeper than {MAX_CALL_DEPTH}")));
        }
        let mut held = Vec::new();
        for v in caller.into_iter().flat_map(|s| s.values()) {
            tensors(v, &mut held);
        }
        self.callers.push(held);
        Ok(())
    }

    pub(crate) fn leave(&mut self) {
        self.callers.pop();
    }

    /// Runs statements until a `return` (or a loop's `break` or `continue`), which says how
    /// the block ended.
    pub(crate) fn run_body(&mut self, body: &[Stmt], scope: &mut Scope) -> Result<Flow> {
        for (i, stmt) in body.iter().enumerate() {
            match stmt {
                Stmt::Expr(e) if i == 0 && matches!(*e.value, Expr::StringLiteral(_)) => {}
                Stmt::Pass(_) => {}
                Stmt::Return(r) => {
                    let value = match &r.value {
                        Some(v) => self.expr(v, scope)?,
                        None => Value::None,
                    };
                    let mut returned = Vec::new();
                    tensors(&value, &mut returned);
                    for id in returned {
                        self.check_assigned(id, r.range())?;
                    }
                    if let Some(next) = body.get(i + 1) {
                        let last = body.last().expect("not empty");
                        self.warnings.push(
                            Diagnostic::warning(Code::UnreachableCode, "code after `return` never runs")
                                .label(next.range().cover(last.range()), "ignored")
                                .help("remove it, or move the `return` to the end"),
                        );
                    }
                    return Ok(Flow::Return(value));
                }
                Stmt::Assign(a) => {
                    let value = self.expr(&a.value, scope)?;
                    let vr = a.value.range();
                    for target in &a.targets {
                        self.assign(target, value.clone(), vr, scope)?;
                    }
                }
                Stmt::AnnAssign(a) => {
                    let Some(v) = &a.value else {
                        return Err(unsupported_statement(stmt.range(), "a bare annotation"));
                    };
                    let value = self.expr(v, scope)?;
                    self.assign(&a.target, value, v.range(), scope)?;
                }
                Stmt::AugAssign(a) if matches!(*a.target, Expr::Subscript(_)) => {
                    let Expr::Subscript(target) = &*a.target else { unreachable!("matched") };
                    let value = Arg { value: self.expr(&a.value, scope)?, range: a.value.range() };
                    self.assign_item(target, Some(a.op), value, stmt.range(), scope)?;
                }
                Stmt::AugAssign(a) => {
                    let left = Arg { value: self.expr(&a.target, scope)?, range: a.target.range() };
                    let right = Arg { value: self.expr(&a.value, scope)?, range: a.value.range() };
                    if let (Value::Tensor(id), Expr::Name(name)) = (&left.value, &*a.target) {
                        let name = name.id.as_str();
                        self.check_in_place(*id, name, a.target.range(), scope, &format!("write `{name} = {name} + ...`, which makes a new array"))?;
                    }
                    let target_dtype = if let Value::Tensor(id) = left.value { Some(self.ty(id).dtype) } else { None };
                    let value = self.binop(a.op, left, right, stmt.range())?;
                    if let Some(want) = target_dtype {
                        self.check_stored_in_place(want, &value, stmt.range(), "assign a new array instead (`x = x + y` rather than `x += y`)")?;
                    }
                    self.assign(&a.target, value, a.value.range(), scope)?;
                }
                Stmt::Assert(a) => {
                    let test = self.expr(&a.test, scope)?;
                    match test {
                        Value::Bool(true) => {}
                        Value::Bool(false) => {
                            return Err(Diagnostic::error(Code::AssertionFailed, "assertion fails for these dimensions")
                                .label(a.test.range(), "this is false"))
                        }
                        other => {
                            return Err(Diagnostic::error(Code::UnsupportedStatement, "only assertions about shapes and constants are supported")
                                .label(a.test.range(), format!("this is {}, not a value known before the kernel runs", other.a_kind())))
                        }
                    }
                }
                Stmt::For(f) => match self.run_loop(f, scope)? {
                    Flow::Next => {}
                    flow => return Ok(flow),
                },
                Stmt::If(s) => match self.run_if(s, scope)? {
                    Flow::Next => {}
                    flow => return Ok(flow),
                },
                Stmt::Break(_) => return Ok(Flow::Break),
                Stmt::Continue(_) => return Ok(Flow::Continue),
                Stmt::While(_) => {
                    return Err(unsupported_statement(stmt.range(), "a `while` loop")
                        .help("a `for` loop over `range(N)` with N known before the kernel runs is unrolled; else express the computation with whole-array operations"))
                }
                Stmt::Expr(e) if self.append(&e.value, scope)? => {}
                Stmt::Expr(_) => {
                    return Err(unsupported_statement(stmt.range(), "an expression whose value is discarded")
                        .help("assign the result to a name, or remove the statement"))
                }
                Stmt::Import(_) | Stmt::ImportFrom(_) => {
                    return Err(unsupported_statement(stmt.range(), "an import inside a function")
                        .help("put `import numpy as np` at the top of the file"))
                }
                Stmt::FunctionDef(_) => {
                    return Err(unsupported_statement(stmt.range(), "a nested function")
                        .help("define helper functions at module level"))
                }
                _ => return Err(unsupported_statement(stmt.range(), "this statement")),
            }
        }
        Ok(Flow::Next)
    }

    /// numpy's in-place update keeps the array's dtype: an integer array cannot take the float
    /// (or wider) values an update computes.
    pub(crate) fn check_stored_in_place(&self, want: DType, value: &Value, stmt: TextRange, help: &str) -> Result<()> {
        let Value::Tensor(id) = value else { return Ok(()) };
        let got = self.ty(*id).dtype;
        if !want.is_float() && got != want {
            return Err(Diagnostic::error(Code::BadValue, format!("numpy cannot store {got} values in place into an array of {want}"))
                .label(stmt, "in-place update")
                .help(help.to_string()));
        }
        Ok(())
    }

    /// `x += y` on an array updates it in place in numpy, so every other name for the same
    /// memory (an alias, a view, or a view's base) would see the change. ollie rebinds `x`
    /// instead, which is the same only when nothing else can see that memory.
    pub(crate) fn check_in_place(&self, id: NodeId, name: &str, range: TextRange, scope: &Scope, help: &str) -> Result<()> {
        let root = self.view_root(id);
        let mut held = Vec::new();
        for (other, v) in scope {
            if other != name {
                tensors(v, &mut held);
            }
        }
        held.extend(self.callers.iter().flatten().copied());
        if held.iter().any(|&h| self.view_root(h) == root) {
            return Err(Diagnostic::error(Code::UnsupportedStatement, format!("in-place update of `{name}`, whose memory another name also sees"))
                .label(range, "numpy would change the other name's array too")
                .help(help.to_string()));
        }
        Ok(())
    }

    /// The array whose memory `id` views: numpy's slices, reshapes, transposes and broadcasts
    /// are views of their operand (a copy's identity reshape is not).
    fn view_root(&self, id: NodeId) -> NodeId {
        *self.view_chain(id).last().expect("the chain holds `id`")
    }

    /// `id`, the array it views, the array that one views, ... down to an array of its own.
    fn view_chain(&self, mut id: NodeId) -> Vec<NodeId> {
        let mut chain = vec![id];
        loop {
            let node = self.graph.node(id);
            match node.op {
                Op::Slice { .. } | Op::Reshape { .. } | Op::Transpose { .. } | Op::Broadcast { .. } if !self.copies.contains(&id) => id = node.args[0],
                _ => return chain,
            }
            chain.push(id);
        }
    }

    /// Whether numpy refuses writes into `id`: a view of `np.broadcast_to`'s result.
    pub(crate) fn read_only(&self, id: NodeId) -> bool {
        self.view_chain(id).iter().any(|v| self.read_only.contains(v))
    }

    /// A copy of `id` (`.copy()`, `np.array(x)`): the same values in memory of its own.
    pub(crate) fn copy_of(&mut self, id: NodeId, range: TextRange) -> Result<NodeId> {
        let shape = self.ty(id).shape.clone();
        let copy = self.push(Op::Reshape { shape }, vec![id], range)?;
        self.copies.insert(copy);
        Ok(copy)
    }

    pub(crate) fn assign(&mut self, target: &Expr, value: Value, value_range: TextRange, scope: &mut Scope) -> Result<()> {
        match target {
            Expr::Name(n) => {
                scope.insert(n.id.to_string(), value);
                Ok(())
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let Value::Tuple(items) = value else {
                    return Err(Diagnostic::error(Code::UnsupportedSyntax, format!("cannot unpack {}", value.a_kind()))
                        .label(value_range, "only tuples unpack"));
                };
                if items.len() != elts.len() {
                    return Err(Diagnostic::error(Code::BadValue, format!("cannot unpack {} values into {} names", items.len(), elts.len()))
                        .label(target.range(), "names here")
                        .label(value_range, "values here"));
                }
                for (t, v) in elts.iter().zip(items) {
                    self.assign(t, v, value_range, scope)?;
                }
                Ok(())
            }
            Expr::Subscript(sub) => self.assign_item(sub, None, Arg { value, range: value_range }, target.range().cover(value_range), scope),
            Expr::Attribute(_) => Err(unsupported_statement(target.range(), "assignment to an attribute")),
            _ => Err(unsupported_statement(target.range(), "this assignment target")),
        }
    }

    /// Evaluates an expression.
    pub fn expr(&mut self, expr: &Expr, scope: &Scope) -> Result<Value> {
        let range = expr.range();
        match expr {
            Expr::Name(n) => self.name(n.id.as_str(), range, scope),
            Expr::NumberLiteral(n) => match &n.value {
                Number::Int(i) => i.as_i64().map(Value::Int).ok_or_else(|| {
                    Diagnostic::error(Code::BadValue, "integer literal too large").label(range, "does not fit in 64 bits")
                }),
                Number::Float(f) => Ok(Value::Float(*f)),
                Number::Complex { .. } => Err(unsupported_syntax(range, "complex numbers")),
            },
            Expr::BooleanLiteral(b) => Ok(Value::Bool(b.value)),
            Expr::NoneLiteral(_) => Ok(Value::None),
            Expr::EllipsisLiteral(_) => Ok(Value::Ellipsis),
            Expr::StringLiteral(s) => Ok(Value::Str(s.value.to_str().to_string())),
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let mut items = Vec::with_capacity(elts.len());
                for e in elts {
                    if let Expr::Starred(_) = e {
                        return Err(unsupported_syntax(e.range(), "starred expressions"));
                    }
                    items.push(self.expr(e, scope)?);
                }
                Ok(Value::Tuple(items))
            }
            Expr::UnaryOp(u) => {
                let operand = Arg { value: self.expr(&u.operand, scope)?, range: u.operand.range() };
                self.unaryop(u.op, operand, range)
            }
            Expr::BinOp(b) => {
                let left = Arg { value: self.expr(&b.left, scope)?, range: b.left.range() };
                let right = Arg { value: self.expr(&b.right, scope)?, range: b.right.range() };
                self.binop(b.op, left, right, range)
            }
            Expr::Compare(c) if c.ops.len() == 1 => {
                let left = Arg { value: self.expr(&c.left, scope)?, range: c.left.range() };
                let right = Arg { value: self.expr(&c.comparators[0], scope)?, range: c.comparators[0].range() };
                self.compare(c.ops[0], left, right, range)
            }
            Expr::Compare(c) => self.chained_compare(c, scope),
            Expr::Call(call) => self.call(call, scope),
            Expr::Attribute(a) => {
                let object = Arg { value: self.expr(&a.value, scope)?, range: a.value.range() };
                self.attribute(object, a.attr.as_str(), a.attr.range(), range)
            }
            Expr::Subscript(s) => {
                let object = Arg { value: self.expr(&s.value, scope)?, range: s.value.range() };
                self.subscript(object, &s.slice, range, scope)
            }
            Expr::Slice(_) => Err(unsupported_syntax(range, "a slice outside of `[...]`")),
            Expr::Lambda(l) => Ok(self.lambda(l, scope)),
            Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) | Expr::Generator(_) => {
                Err(unsupported_syntax(range, "comprehensions").help("use whole-array operations instead of iterating"))
            }
            Expr::If(e) => {
                let test = self.expr(&e.test, scope)?;
                let branch = if self.truth_of(&test, e.test.range())? { &e.body } else { &e.orelse };
                self.expr(branch, scope)
            }
            Expr::BoolOp(b) => self.bool_op(b, scope),
            Expr::FString(_) | Expr::TString(_) | Expr::BytesLiteral(_) => Err(unsupported_syntax(range, "this literal")),
            _ => Err(unsupported_syntax(range, "this expression")),
        }
    }

    fn name(&mut self, name: &str, range: TextRange, scope: &Scope) -> Result<Value> {
        if let Some(v) = scope.get(name) {
            return Ok(v.clone());
        }
        if let Some(v) = self.module.constants.get(name) {
            return Ok(v.clone());
        }
        if self.module.numpy.as_deref() == Some(name) {
            return Ok(Value::Numpy);
        }
        if self.module.math.as_deref() == Some(name) {
            return Ok(Value::Math);
        }
        if self.module.ml_dtypes.as_deref() == Some(name) {
            return Ok(Value::MlDtypes);
        }
        if self.module.scipy.as_deref() == Some(name) {
            return Ok(Value::Scipy);
        }
        if self.module.scipy_special.as_deref() == Some(name) {
            return Ok(Value::ScipySpecial);
        }
        match name {
            "float" => return Ok(Value::DType(DType::F64)),
            "int" => return Ok(Value::DType(DType::I64)),
            "bool" => return Ok(Value::DType(DType::Bool)),
            _ => {}
        }
        if name == "np" || name == "numpy" {
            return Err(Diagnostic::error(Code::MissingNumpyImport, format!("`{name}` is used but numpy is not imported as `{name}`"))
                .label(range, "not defined")
                .help(format!("add `import numpy as {name}` at the top of the file")));
        }
        if self.module.functions.contains_key(name) {
            return Ok(Value::Function(name.to_string()));
        }
        Err(Diagnostic::error(Code::UnknownName, format!("unknown name `{name}`"))
            .label(range, "not defined here")
            .help("names are the kernel's parameters, earlier assignments, and module-level constants and functions"))
    }

    fn call(&mut self, call: &ast::ExprCall, scope: &Scope) -> Result<Value> {
        let range = call.range();
        let mut positional = Vec::new();
        for a in call.arguments.args.iter() {
            if let Expr::Starred(_) = a {
                return Err(unsupported_syntax(a.range(), "`*args` in a call"));
            }
            positional.push(Arg { value: self.expr(a, scope)?, range: a.range() });
        }
        let mut keywords = Vec::new();
        for k in call.arguments.keywords.iter() {
            let Some(name) = &k.arg else {
                return Err(unsupported_syntax(k.range(), "`**kwargs` in a call"));
            };
            keywords.push((name.as_str().to_string(), name.range(), Arg { value: self.expr(&k.value, scope)?, range: k.value.range() }));
        }
        let args = CallArgs { positional, keywords, range };
        if let Some(path) = self.numpy_submodule_path(&call.func) {
            if let Some(("linalg", "norm")) = path.split_once('.').and_then(|(_, rest)| rest.split_once('.')) {
                return self.numpy_call("linalg.norm", call.func.range(), args);
            }
            if path.split_once('.').is_some_and(|(_, rest)| rest == crate::window::FUNCTION) {
                return self.numpy_call(crate::window::FUNCTION, call.func.range(), args);
            }
            return Err(Diagnostic::error(Code::UnsupportedCall, format!("unsupported call `{path}`"))
                .label(call.func.range(), "not in ollie's numpy subset")
                .help(crate::numpy::supported_functions_help()));
        }
        match &*call.func {
            Expr::Attribute(a) => {
                let receiver = Arg { value: self.expr(&a.value, scope)?, range: a.value.range() };
                let name = a.attr.as_str();
                match receiver.value {
                    Value::Numpy => self.numpy_call(name, a.range(), args),
                    Value::Math => crate::math::call(name, a.attr.range(), &args),
                    Value::ScipySpecial => self.special_call(name, a.attr.range(), args),
                    Value::NumpyFunction(f) => self.ufunc_method(f, name, a.attr.range(), args),
                    Value::Tensor(_) => self.method_call(receiver, name, a.attr.range(), args),
                    // numpy's functions return numpy scalars, which have the array methods.
                    Value::Int(_) | Value::Float(_) | Value::Bool(_) if crate::numpy::METHODS.contains(&name) => {
                        let id = self.tensor(&receiver, None)?;
                        self.method_call(Arg { value: Value::Tensor(id), range: receiver.range }, name, a.attr.range(), args)
                    }
                    _ => Err(Diagnostic::error(Code::UnsupportedCall, format!("unsupported call `.{name}()` on {}", receiver.value.a_kind()))
                        .label(call.func.range(), "not supported")
                        .help("supported calls are numpy functions (`np.exp(x)`), array methods (`x.sum(axis=-1)`) and functions defined in this file")),
                }
            }
            Expr::Name(n) => {
                let name = n.id.as_str();
                if let Some(callee) = scope.get(name).or_else(|| self.module.constants.get(name)).cloned() {
                    return self.call_value(&callee, n.range(), args, scope);
                }
                if let Some(def) = self.module.functions.get(name).copied() {
                    return self.call_helper(def, args, scope);
                }
                if let Some(v) = self.builtin_call(name, n.range(), &args)? {
                    return Ok(v);
                }
                Err(Diagnostic::error(Code::UnsupportedCall, format!("unsupported call `{name}(...)`"))
                    .label(n.range(), "not a numpy function, an array method or a function of this file")
                    .help("supported builtins are `len`, `float`, `int`, `abs`, `min`, `max`, `range`, `enumerate`, `zip`, `reversed`, `list`, `tuple` and `sum`; numpy functions are called as `np.NAME(...)`"))
            }
            other => {
                let callee = self.expr(other, scope)?;
                self.call_value(&callee, other.range(), args, scope)
            }
        }
    }

    /// `np.linalg.norm` and the like: a call into a numpy submodule, which the subset lacks.
    fn numpy_submodule_path(&self, func: &Expr) -> Option<String> {
        let mut parts = Vec::new();
        let mut e = func;
        while let Expr::Attribute(a) = e {
            parts.push(a.attr.as_str());
            e = &a.value;
        }
        let Expr::Name(root) = e else { return None };
        let numpy = self.module.numpy.as_deref()?;
        // `np.maximum.reduce`: a method of a function, not a submodule.
        if root.id.as_str() != numpy || parts.len() < 2 || crate::numpy::FUNCTIONS.contains(parts.last().expect("two parts")) {
            return None;
        }
        parts.push(numpy);
        parts.reverse();
        Some(parts.join("."))
    }

    pub(crate) fn call_helper(&mut self, def: &'a ast::StmtFunctionDef, args: CallArgs, caller: &Scope) -> Result<Value> {
        let range = args.range;
        let values = self.bind_parameters(def.name.as_str(), &def.parameters, args, &Scope::new())?;
        self.call_function(def, values, Some(caller), range)
    }

    /// Binds a call's arguments to a function's parameters (plain positional ones with
    /// defaults, evaluated in `defaults`).
    pub(crate) fn bind_parameters(&mut self, fname: &str, params: &ast::Parameters, args: CallArgs, defaults: &Scope) -> Result<Vec<(String, Value)>> {
        if params.vararg.is_some() || params.kwarg.is_some() || !params.kwonlyargs.is_empty() {
            return Err(Diagnostic::error(Code::UnsupportedSyntax, "helper functions take plain positional parameters")
                .label(params.range, "`*args`, `**kwargs` and keyword-only parameters are not supported"));
        }
        let names: Vec<&ast::ParameterWithDefault> = params.posonlyargs.iter().chain(params.args.iter()).collect();
        if args.positional.len() > names.len() {
            return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{fname}` takes {} arguments, got {}", names.len(), args.positional.len()))
                .label(args.range, "too many arguments"));
        }
        let mut bound: Vec<Option<Value>> = vec![None; names.len()];
        for (i, a) in args.positional.into_iter().enumerate() {
            bound[i] = Some(a.value);
        }
        for (k, krange, a) in args.keywords {
            let Some(i) = names.iter().position(|p| p.name().as_str() == k) else {
                return Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{fname}` has no parameter `{k}`")).label(krange, "unknown parameter"));
            };
            bound[i] = Some(a.value);
        }
        let mut values = Vec::new();
        for (p, v) in names.iter().zip(bound) {
            let v = match (v, p.default()) {
                (Some(v), _) => v,
                (None, Some(d)) => self.expr(d, defaults)?,
                (None, None) => {
                    return Err(Diagnostic::error(Code::UnsupportedArgument, format!("missing argument `{}` to `{fname}`", p.name().as_str()))
                        .label(args.range, "in this call"))
                }
            };
            values.push((p.name().as_str().to_string(), v));
        }
        Ok(values)
    }

    fn builtin_call(&mut self, name: &str, range: TextRange, args: &CallArgs) -> Result<Option<Value>> {
        let one = |args: &CallArgs| -> Result<Arg> {
            match (args.positional.as_slice(), args.keywords.is_empty()) {
                ([a], true) => Ok(a.clone()),
                _ => Err(Diagnostic::error(Code::UnsupportedArgument, format!("`{name}` takes one argument")).label(args.range, "here")),
            }
        };
        let value = match name {
            "len" => {
                let a = one(args)?;
                match &a.value {
                    Value::Tuple(items) => Value::Int(items.len() as i64),
                    Value::Tensor(id) => match self.ty(*id).shape.first() {
                        Some(&n) => Value::Int(n as i64),
                        None => return Err(Diagnostic::error(Code::BadValue, "len() of a 0-d array").label(a.range, "has no length")),
                    },
                    other => return Err(Diagnostic::error(Code::BadValue, format!("len() of {}", other.a_kind())).label(a.range, "has no length")),
                }
            }
            "float" | "int" => {
                let a = one(args)?;
                let parsed = match &a.value {
                    Value::Str(s) => match s.trim().to_ascii_lowercase().as_str() {
                        "inf" | "+inf" | "infinity" => Some(f64::INFINITY),
                        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
                        "nan" => Some(f64::NAN),
                        other => other.parse::<f64>().ok(),
                    },
                    v => v.number(),
                };
                if let Value::Tensor(id) = a.value {
                    // A one-element array converts, as numpy's `__float__` does; the value is
                    // known only when the kernel runs, so it stays an array of that dtype.
                    if self.ty(id).num_elements() != 1 {
                        return Err(Diagnostic::error(Code::BadValue, format!("`{name}()` of an array of {} elements", self.ty(id).num_elements()))
                            .label(a.range, "numpy converts only one-element arrays")
                            .help("for arrays use `.astype(...)`"));
                    }
                    let scalar = self.reshape_to(id, &[], range)?;
                    let dtype = if name == "float" { DType::F64 } else { DType::I64 };
                    return Ok(Some(Value::Tensor(self.cast(scalar, dtype, range)?)));
                }
                match (name, parsed) {
                    ("float", Some(x)) => Value::Float(x),
                    ("int", Some(x)) => Value::Int(x.trunc() as i64),
                    _ => return Err(Diagnostic::error(Code::BadValue, format!("`{name}()` needs a number known before the kernel runs"))
                        .label(a.range, format!("this is {}", a.value.a_kind()))
                        .help("for arrays use `.astype(...)`")),
                }
            }
            "abs" => {
                let a = one(args)?;
                return self.unary(ollie_graph::UnaryOp::Abs, a, range).map(Some);
            }
            "min" | "max" => {
                let numbers: Option<Vec<&Value>> =
                    args.positional.iter().map(|a| a.value.number().map(|_| &a.value)).collect();
                match numbers {
                    Some(values) if values.len() >= 2 && args.keywords.is_empty() => {
                        let pick = |a: &&Value, b: &&Value| a.number().unwrap().total_cmp(&b.number().unwrap());
                        let v = if name == "min" { values.into_iter().min_by(pick) } else { values.into_iter().max_by(pick) };
                        v.unwrap().clone()
                    }
                    _ => {
                        return Err(Diagnostic::error(Code::UnsupportedCall, format!("`{name}()` takes numbers known before the kernel runs"))
                            .label(args.range, "here")
                            .help(format!("for arrays use `np.{name}imum(a, b)` elementwise or `x.{name}(axis=...)` to reduce")))
                    }
                }
            }
            _ => return self.sequence_builtin(name, args),
        };
        Ok(Some(value))
    }

    /// Converts a value to a tensor node; Python scalars become constants whose dtype follows
    /// numpy's rule for a scalar meeting an array of dtype `like`.
    pub fn tensor(&mut self, arg: &Arg, like: Option<DType>) -> Result<NodeId> {
        let (value, dtype) = match arg.value {
            Value::Tensor(id) => return Ok(id),
            Value::Bool(b) => (b as u8 as f64, like.unwrap_or(DType::Bool)),
            Value::Int(i) => (i as f64, match like {
                Some(d) if d != DType::Bool => d,
                _ => DType::I64,
            }),
            Value::Float(f) => (f, match like {
                Some(d) if d.is_float() => d,
                _ => DType::F64,
            }),
            ref other => {
                return Err(Diagnostic::error(Code::BadValue, format!("expected an array or a number, found {}", other.a_kind()))
                    .label(arg.range, "not an array"))
            }
        };
        self.push(Op::Constant { value, dtype }, vec![], arg.range)
    }

    /// An array of `shape` holding `value` everywhere: a constant, broadcast.
    pub fn full(&mut self, shape: &[usize], value: f64, dtype: DType, range: TextRange) -> Result<NodeId> {
        let c = self.push(Op::Constant { value, dtype }, vec![], range)?;
        self.broadcast_to(c, shape, range)
    }
}

/// Collects the arrays a value holds (tuples included).
fn tensors(value: &Value, out: &mut Vec<NodeId>) {
    match value {
        Value::Tensor(id) => out.push(*id),
        Value::Tuple(items) => items.iter().for_each(|v| tensors(v, out)),
        _ => {}
    }
}

/// The arguments of a call, evaluated.
#[derive(Clone)]
pub struct CallArgs {
    pub positional: Vec<Arg>,
    pub keywords: Vec<(String, TextRange, Arg)>,
    pub range: TextRange,
}

pub fn unsupported_statement(range: TextRange, what: &str) -> Diagnostic {
    Diagnostic::error(Code::UnsupportedStatement, format!("{what} is not supported in a kernel"))
        .label(range, "not supported")
}

pub fn unsupported_syntax(range: TextRange, what: &str) -> Diagnostic {
    Diagnostic::error(Code::UnsupportedSyntax, format!("unsupported syntax: {what}")).label(range, "not supported in a spec")
}
