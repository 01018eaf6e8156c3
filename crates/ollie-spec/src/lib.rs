//! The spec front end: a numpy-subset `.py` file becomes a typed [`Graph`] with static shapes,
//! or a [`Diagnostic`] pointing at the source span that is outside the subset.

mod annotation;
mod builder;
mod arrays;
mod composite;
mod control;
mod diagnostic;
mod elementwise;
mod gather;
mod math;
mod numpy;
mod operators;
mod pad;
mod setitem;
mod special;
mod statistics;
mod value;
mod window;

use std::collections::HashMap;

use ollie_graph::{DType, Graph, Op, Param, TensorType};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::builder::{Builder, Module, Scope};
pub use crate::diagnostic::{Code, Diagnostic, Label, Severity};
use crate::value::Value;

/// What to compile from a spec file.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The kernel to select (`file.py::name`); required when the file has several.
    pub kernel: Option<String>,
    /// Overrides of module-level constants (`--dim T=8192`).
    pub dims: Vec<(String, i64)>,
}

/// A compiled spec: the kernel's graph and any warnings.
#[derive(Clone, Debug)]
pub struct Spec {
    pub graph: Graph,
    pub warnings: Vec<Diagnostic>,
}

/// Splits `file.py::name` into the path and the kernel name.
pub fn split_selector(arg: &str) -> (&str, Option<&str>) {
    match arg.rsplit_once("::") {
        Some((path, name)) if !name.is_empty() => (path, Some(name)),
        _ => (arg, None),
    }
}

/// Compiles the kernel in `source` (the text of a `.py` spec) into a graph.
pub fn compile(source: &str, options: &Options) -> Result<Spec, Diagnostic> {
    let parsed = ruff_python_parser::parse_module(source).map_err(|e| {
        Diagnostic::error(Code::SyntaxError, format!("invalid Python syntax: {}", e.error))
            .label(e.location, "here")
    })?;
    let module = parsed.syntax();
    let mut builder = Builder::new(
        Module { numpy: None, math: None, ml_dtypes: None, scipy: None, scipy_special: None, constants: HashMap::new(), functions: HashMap::new(), lambdas: lambdas(&module.body) },
        Graph::new("", Vec::new()),
    );
    let mut defs: Vec<&ast::StmtFunctionDef> = Vec::new();
    for stmt in &module.body {
        if let Stmt::FunctionDef(def) = stmt {
            defs.push(def);
            builder.module.functions.insert(def.name.to_string(), def);
        }
    }
    read_module(&mut builder, &module.body, options)?;
    let def = select_kernel(&defs, options.kernel.as_deref())?;
    build_kernel(builder, def, source)
}

/// `ollie.kernel` or `ollie.kernel(...)`, `ollie` the name `import ollie` bound.
fn is_ollie_kernel(decorator: &Expr, ollie: Option<&str>) -> bool {
    let target = match decorator {
        Expr::Call(call) => &*call.func,
        other => other,
    };
    matches!(target, Expr::Attribute(a) if a.attr.as_str() == "kernel" && matches!(&*a.value, Expr::Name(n) if Some(n.id.as_str()) == ollie))
}

/// Reads module-level statements: the numpy import and the constants.
fn read_module(builder: &mut Builder, body: &[Stmt], options: &Options) -> Result<(), Diagnostic> {
    let mut seen_dims = vec![false; options.dims.len()];
    // The name `import ollie` bound: the Python package's `@ollie.kernel` is the one decorator
    // a spec may carry (it changes nothing of the function's meaning).
    let mut ollie: Option<String> = None;
    for (i, stmt) in body.iter().enumerate() {
        match stmt {
            Stmt::FunctionDef(def) => {
                if let Some(d) = def.decorator_list.iter().find(|d| !is_ollie_kernel(&d.expression, ollie.as_deref())) {
                    return Err(Diagnostic::error(Code::UnsupportedSyntax, "decorators other than `@ollie.kernel` are not supported")
                        .label(d.range(), "not supported"));
                }
            }
            Stmt::Import(import) => {
                for alias in &import.names {
                    let name = alias.asname.as_ref().unwrap_or(&alias.name).to_string();
                    match alias.name.as_str() {
                        "numpy" => builder.module.numpy = Some(name),
                        "math" => builder.module.math = Some(name),
                        "ml_dtypes" => builder.module.ml_dtypes = Some(name),
                        // `import scipy.special` binds `scipy`; `... as sp` binds the module.
                        "scipy" => builder.module.scipy = Some(name),
                        "scipy.special" if alias.asname.is_some() => builder.module.scipy_special = Some(name),
                        "scipy.special" => builder.module.scipy = Some("scipy".to_string()),
                        "ollie" => ollie = Some(name),
                        other => {
                            return Err(Diagnostic::error(Code::UnsupportedImport, format!("unsupported import `{other}`"))
                                .label(alias.range(), "specs may import numpy, math, ml_dtypes, scipy.special and ollie")
                                .help("write `import numpy as np`; use numpy for the kernel's math"))
                        }
                    }
                }
            }
            Stmt::ImportFrom(from) if from.module.as_ref().is_some_and(|m| m.as_str() == "__future__") => {}
            // `from ml_dtypes import bfloat16`: the name is the dtype.
            Stmt::ImportFrom(from) if from.module.as_ref().is_some_and(|m| m.as_str() == "ml_dtypes") => {
                for alias in &from.names {
                    if alias.name.as_str() != "bfloat16" {
                        return Err(Diagnostic::error(Code::UnsupportedImport, format!("unsupported import `ml_dtypes.{}`", alias.name))
                            .label(alias.range(), "of ml_dtypes, specs import `bfloat16`"));
                    }
                    let name = alias.asname.as_ref().unwrap_or(&alias.name).to_string();
                    builder.module.constants.insert(name, Value::DType(ollie_graph::DType::BF16));
                }
            }
            Stmt::ImportFrom(from) if from.module.as_ref().is_some_and(|m| m.as_str() == "scipy") => {
                for alias in &from.names {
                    if alias.name.as_str() != "special" {
                        return Err(Diagnostic::error(Code::UnsupportedImport, format!("unsupported import `scipy.{}`", alias.name))
                            .label(alias.range(), "of scipy, specs import `special`"));
                    }
                    builder.module.scipy_special = Some(alias.asname.as_ref().unwrap_or(&alias.name).to_string());
                }
            }
            // `from scipy.special import softmax`: the name is the function.
            Stmt::ImportFrom(from) if from.module.as_ref().is_some_and(|m| m.as_str() == "scipy.special") => {
                for alias in &from.names {
                    let Some(f) = special::FUNCTIONS.iter().find(|f| **f == alias.name.as_str()) else {
                        return Err(special::unsupported(alias.name.as_str(), alias.range()));
                    };
                    let name = alias.asname.as_ref().unwrap_or(&alias.name).to_string();
                    builder.module.constants.insert(name, Value::Special(f));
                }
            }
            // `from numpy.lib.stride_tricks import sliding_window_view`.
            Stmt::ImportFrom(from) if from.module.as_ref().is_some_and(|m| m.as_str() == window::MODULE) => {
                for alias in &from.names {
                    if window::FUNCTION.rsplit('.').next() != Some(alias.name.as_str()) {
                        return Err(Diagnostic::error(Code::UnsupportedImport, format!("unsupported import `{}.{}`", window::MODULE, alias.name))
                            .label(alias.range(), "of numpy.lib.stride_tricks, specs import `sliding_window_view`"));
                    }
                    let name = alias.asname.as_ref().unwrap_or(&alias.name).to_string();
                    builder.module.constants.insert(name, Value::NumpyFunction(window::FUNCTION));
                }
            }
            Stmt::ImportFrom(from) => {
                return Err(Diagnostic::error(Code::UnsupportedImport, "`from ... import` is not supported")
                    .label(from.range(), "not supported")
                    .help("write `import numpy as np` and call `np.NAME(...)`"))
            }
            Stmt::Expr(e) if i == 0 && matches!(*e.value, Expr::StringLiteral(_)) => {}
            Stmt::Assign(a) => match (a.targets.as_slice(), &*a.value) {
                ([Expr::Name(target)], value) => define_constant(builder, target, value, options, &mut seen_dims)?,
                // `B, T, C = 2, 16, 32`: one constant per name.
                ([Expr::Tuple(names)], Expr::Tuple(values)) if names.elts.len() == values.elts.len() && names.elts.iter().all(Expr::is_name_expr) => {
                    for (name, value) in names.elts.iter().zip(&values.elts) {
                        let Expr::Name(target) = name else { unreachable!("checked") };
                        define_constant(builder, target, value, options, &mut seen_dims)?;
                    }
                }
                _ => {
                    return Err(Diagnostic::error(Code::UnsupportedStatement, "module-level assignments define constants by name")
                        .label(stmt.range(), "write `NAME = VALUE` or `A, B = 1, 2`"))
                }
            },
            Stmt::AnnAssign(ast::StmtAnnAssign { target, value: Some(value), .. }) => {
                let Expr::Name(target) = &**target else {
                    return Err(Diagnostic::error(Code::UnsupportedStatement, "module-level assignments define one constant each")
                        .label(stmt.range(), "write `NAME = VALUE`"));
                };
                define_constant(builder, target, value, options, &mut seen_dims)?;
            }
            Stmt::If(s) if is_main_guard(&s.test) => {}
            _ => {
                return Err(Diagnostic::error(Code::UnsupportedStatement, "unsupported statement at module level")
                    .label(stmt.range(), "not supported here")
                    .help("a spec module holds `import numpy as np`, constants (`T = 4096`), kernel functions, and optionally an `if __name__ == \"__main__\":` block, which ollie ignores"))
            }
        }
    }
    if let Some(i) = seen_dims.iter().position(|s| !s) {
        let mut names: Vec<&String> = builder.module.constants.keys().collect();
        names.sort();
        let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        return Err(Diagnostic::error(Code::UnknownDimension, format!("--dim {}: the spec has no module-level constant `{}`", options.dims[i].0, options.dims[i].0))
            .help(if names.is_empty() { "the spec defines no constants".to_string() } else { format!("constants: {}", names.join(", ")) }));
    }
    Ok(())
}

/// The module's lambdas by where they are written (a [`Value::Lambda`] names one by its range).
fn lambdas(body: &[Stmt]) -> HashMap<ruff_text_size::TextRange, &ast::ExprLambda> {
    use ruff_python_ast::visitor::{walk_expr, Visitor};
    struct Lambdas<'a>(HashMap<ruff_text_size::TextRange, &'a ast::ExprLambda>);
    impl<'a> Visitor<'a> for Lambdas<'a> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Lambda(l) = expr {
                self.0.insert(l.range, l);
            }
            walk_expr(self, expr);
        }
    }
    let mut found = Lambdas(HashMap::new());
    found.visit_body(body);
    found.0
}

fn is_main_guard(test: &Expr) -> bool {
    let Expr::Compare(c) = test else { return false };
    let is_name = |e: &Expr| matches!(e, Expr::Name(n) if n.id.as_str() == "__name__");
    let is_main = |e: &Expr| matches!(e, Expr::StringLiteral(s) if s.value.to_str() == "__main__");
    c.ops.len() == 1 && c.ops[0] == ast::CmpOp::Eq && is_name(&c.left) && is_main(&c.comparators[0])
}

fn define_constant(builder: &mut Builder, target: &ast::ExprName, value: &Expr, options: &Options, seen: &mut [bool]) -> Result<(), Diagnostic> {
    let name = target.id.as_str();
    if let Some(i) = options.dims.iter().position(|(n, _)| n == name) {
        seen[i] = true;
        builder.module.constants.insert(name.to_string(), Value::Int(options.dims[i].1));
        return Ok(());
    }
    let before = builder.graph.nodes.len();
    let v = builder.expr(value, &Scope::new())?;
    builder.graph.nodes.truncate(before);
    match v {
        // Numbers, shapes, dtypes, and functions under a name (`act = lambda z: ...`, `act = np.tanh`).
        Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::Str(_) | Value::Tuple(_) | Value::DType(_)
        | Value::Lambda { .. } | Value::Function(_) | Value::NumpyFunction(_) | Value::Special(_) => {
            builder.module.constants.insert(name.to_string(), v);
            Ok(())
        }
        other => Err(Diagnostic::error(Code::NotAConstant, format!("module-level `{name}` must be a constant, not {}", other.a_kind()))
            .label(value.range(), "not known before the kernel runs")
            .help("module-level names are constants (numbers) that name dimensions or parameters of the kernel")),
    }
}

fn select_kernel<'a>(defs: &[&'a ast::StmtFunctionDef], name: Option<&str>) -> Result<&'a ast::StmtFunctionDef, Diagnostic> {
    let names = || defs.iter().map(|d| d.name.to_string()).collect::<Vec<_>>().join(", ");
    if let Some(name) = name {
        return defs.iter().copied().find(|d| d.name.as_str() == name).ok_or_else(|| {
            Diagnostic::error(Code::UnknownKernel, format!("the spec has no function `{name}`"))
                .help(if defs.is_empty() { "the spec defines no functions".to_string() } else { format!("functions: {}", names()) })
        });
    }
    let is_kernel = |d: &ast::StmtFunctionDef| {
        let p = &d.parameters;
        let all = p.posonlyargs.iter().chain(p.args.iter());
        // Any annotation marks a kernel (a missing one is then diagnosed); helpers have none.
        all.clone().any(|a| a.parameter.annotation.is_some()) || d.returns.as_deref().is_some_and(|r| !python_type_hint(r))
    };
    let kernels: Vec<_> = defs.iter().copied().filter(|d| is_kernel(d)).collect();
    match kernels.as_slice() {
        [one] => Ok(one),
        [] => Err(Diagnostic::error(Code::UnknownKernel, "the spec has no kernel")
            .help("a kernel is a function whose parameters are annotated with their types, e.g. `def softmax(x: \"f32[B, N]\"):`")),
        many => Err(Diagnostic::error(Code::UnknownKernel, format!("the spec has several kernels: {}", many.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", ")))
            .help(format!("select one with FILE.py::NAME, e.g. `::{}`", many[0].name.as_str()))),
    }
}

/// Whether a return annotation is a Python type hint (`np.ndarray`, `tuple`,
/// `Tuple[np.ndarray, np.ndarray]`, `None`) rather than ollie's quoted types: the kernel's
/// outputs are then typed by what it computes. An unquoted ollie type (`-> f32[N]`) is not
/// one: it is diagnosed.
fn python_type_hint(e: &Expr) -> bool {
    const DTYPES: &[&str] = &["f16", "bf16", "f32", "f64", "i8", "u8", "i32", "i64", "bool"];
    match e {
        Expr::Name(n) => !DTYPES.contains(&n.id.as_str()),
        Expr::Attribute(_) | Expr::NoneLiteral(_) => true,
        Expr::Subscript(s) => python_type_hint(&s.value),
        Expr::Tuple(t) => !t.elts.is_empty() && t.elts.iter().all(|e| !matches!(e, Expr::StringLiteral(_)) && python_type_hint(e)),
        _ => false,
    }
}

/// Parses the string annotation `expr` into a tensor type.
fn annotation_type(builder: &mut Builder, expr: &Expr, source: &str) -> Result<TensorType, Diagnostic> {
    let Expr::StringLiteral(s) = expr else {
        return Err(Diagnostic::error(Code::BadAnnotation, "type annotations must be strings")
            .label(expr.range(), "write the type in quotes, e.g. \"f32[B, N]\"")
            .help("quoted annotations keep the file runnable by numpy as it is"));
    };
    let raw = &source[s.range()];
    let prefix = raw.find(['"', '\'']).unwrap_or(0);
    let quote = if raw[prefix..].starts_with("\"\"\"") || raw[prefix..].starts_with("'''") { 3 } else { 1 };
    let base = s.range().start() + TextSize::from((prefix + quote) as u32);
    let text = s.value.to_str();
    if s.value.is_implicit_concatenated() {
        return Err(Diagnostic::error(Code::BadAnnotation, "annotation strings must be a single literal").label(s.range(), "here"));
    }
    // The string's text lies in the source as written unless it holds escapes.
    let verbatim = source.get(base.to_usize()..base.to_usize() + text.len()) == Some(text);
    let mut resolve = |token: &str, range: TextRange| -> Result<usize, Diagnostic> {
        let is_name = token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        let value = if is_name {
            match builder.module.constants.get(token) {
                Some(v) => v.clone(),
                None => {
                    return Err(Diagnostic::error(Code::UnknownDimension, format!("unknown dimension `{token}`"))
                        .label(range, "not a module-level constant")
                        .help(format!("define it at module level, e.g. `{token} = 128`, or write the size as an integer")))
                }
            }
        } else {
            if !verbatim {
                return Err(Diagnostic::error(Code::BadAnnotation, format!("dimension `{token}` in an annotation with escapes"))
                    .label(range, "write the annotation as a plain string to use expressions in it"));
            }
            let parsed = ruff_python_parser::parse_expression_range(source, range).map_err(|e| {
                Diagnostic::error(Code::BadAnnotation, format!("malformed dimension `{token}`: {}", e.error))
                    .label(range, "expected an integer, a constant's name, or an expression of them such as `L - 3`")
            })?;
            let before = builder.graph.nodes.len();
            let value = builder.expr(parsed.expr(), &Scope::new());
            builder.graph.nodes.truncate(before);
            value?
        };
        match value {
            Value::Int(v) if v >= 0 => Ok(v as usize),
            Value::Int(v) => Err(Diagnostic::error(Code::BadAnnotation, format!("dimension `{token}` is negative ({v})"))
                .label(range, "a dimension must be zero or more")),
            other => {
                let d = Diagnostic::error(Code::BadAnnotation, format!("dimension `{token}` is {}, not an integer", other.a_kind()))
                    .label(range, "dimensions must be integers");
                Err(if token.contains('/') { d.help("use `//` for integer division (`D // 2`)") } else { d })
            }
        }
    };
    annotation::parse(text, base, &mut resolve)
}

fn build_kernel(mut builder: Builder, def: &ast::StmtFunctionDef, source: &str) -> Result<Spec, Diagnostic> {
    let p = &def.parameters;
    if let Some(extra) = p.vararg.as_deref().or(p.kwarg.as_deref()).or(p.kwonlyargs.first().map(|k| &k.parameter)) {
        return Err(Diagnostic::error(Code::UnsupportedSyntax, "kernels take plain positional parameters")
            .label(extra.range(), "not supported in a kernel"));
    }
    let mut params = Vec::new();
    let mut spans = Vec::new();
    let mut constants = Vec::new();
    for a in p.posonlyargs.iter().chain(p.args.iter()) {
        let name = a.name().as_str();
        let Some(ann) = a.parameter.annotation.as_deref() else {
            // An unannotated parameter with a default (`eps=1e-5`) is a constant of the kernel.
            if let Some(default) = a.default() {
                let value = builder.expr(default, &Scope::new())?;
                if value.number().is_none() {
                    return Err(Diagnostic::error(Code::NotAConstant, format!("the default of `{name}` must be a number"))
                        .label(default.range(), format!("this is {}", value.a_kind())));
                }
                constants.push((name.to_string(), value));
                continue;
            }
            return Err(Diagnostic::error(Code::MissingAnnotation, format!("parameter `{name}` has no type annotation"))
                .label(a.name().range(), "annotate it, e.g. `x: \"f32[B, N]\"`")
                .help("kernel inputs are annotated arrays; a parameter with a default (`eps=1e-5`) is a constant"));
        };
        let ty = annotation_type(&mut builder, ann, source)?;
        params.push(Param { name: name.to_string(), ty });
        spans.push(a.name().range());
    }
    builder.graph = Graph::new(def.name.as_str(), params.clone());
    let mut bindings = Vec::new();
    for (i, p) in params.iter().enumerate() {
        let id = builder.push(Op::Input { index: i }, vec![], spans[i])?;
        bindings.push((p.name.clone(), Value::Tensor(id)));
    }
    bindings.extend(constants);
    let result = builder.call_function(def, bindings, None, def.name.range())?;
    let values = match result {
        Value::Tuple(items) => items,
        other => vec![other],
    };
    let declared: Option<Vec<(TensorType, TextRange)>> = match def.returns.as_deref() {
        None => None,
        // `-> np.ndarray`, `-> tuple`: Python's own type hints say nothing ollie checks.
        Some(r) if python_type_hint(r) => None,
        Some(Expr::Tuple(t)) => Some(t.elts.iter().map(|e| Ok((annotation_type(&mut builder, e, source)?, e.range()))).collect::<Result<_, Diagnostic>>()?),
        Some(e) => Some(vec![(annotation_type(&mut builder, e, source)?, e.range())]),
    };
    if let Some(declared) = &declared {
        if declared.len() != values.len() {
            let range = def.returns.as_deref().map(|r| r.range()).unwrap_or(def.name.range());
            return Err(Diagnostic::error(Code::ReturnMismatch, format!("the return annotation declares {} outputs but the kernel returns {}", declared.len(), values.len()))
                .label(range, "declared here"));
        }
    }
    let body_end = def.range();
    let mut outputs = Vec::new();
    for (k, v) in values.into_iter().enumerate() {
        let arg = builder::Arg { value: v, range: body_end };
        let id = match &arg.value {
            Value::Tensor(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_) => builder.tensor(&arg, None)?,
            other => {
                return Err(Diagnostic::error(Code::BadValue, format!("the kernel returns {}; it must return arrays", other.a_kind()))
                    .label(def.name.range(), "in this kernel"))
            }
        };
        let ty = builder.ty(id).clone();
        let dtype = match &declared {
            Some(d) => {
                let (want, range) = &d[k];
                if want.shape != ty.shape {
                    return Err(Diagnostic::error(Code::ReturnMismatch, format!("output {k} is annotated {want} but the kernel computes {ty}"))
                        .label(*range, format!("the kernel returns {ty}")));
                }
                want.dtype
            }
            // An index result stays an index (delivered as float32, judged as an index).
            None if ty.dtype.is_float() || builder.graph.index_result(id) => ty.dtype,
            None => DType::F32,
        };
        let id = if dtype == ty.dtype { id } else { builder.push(Op::Cast { dtype }, vec![id], def.name.range())? };
        outputs.push(id);
    }
    builder.graph.outputs = outputs;
    let uses = builder.graph.use_counts();
    let mut warnings = std::mem::take(&mut builder.warnings);
    for (i, p) in params.iter().enumerate() {
        let input = builder.graph.ids().find(|&id| builder.graph.node(id).op == Op::Input { index: i });
        if input.is_some_and(|id| uses[id.index()] == 0) {
            warnings.push(
                Diagnostic::warning(Code::UnusedParameter, format!("parameter `{}` is never used", p.name))
                    .label(spans[i], "unused")
                    .help("the kernel still takes it (the ABI follows the signature); remove it if it is not needed"),
            );
        }
    }
    let mut graph = builder.graph;
    graph.skip_identity_reshapes();
    graph.prune();
    ollie_graph::check(&graph).map_err(|e| {
        Diagnostic::error(Code::Internal, format!("ollie built an invalid graph: {e}")).label(def.name.range(), "for this kernel")
    })?;
    Ok(Spec { graph, warnings })
}
