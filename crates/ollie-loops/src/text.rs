//! The loop IR's text form (`Display`).
//!
//! ```text
//! kernel softmax(x: f32[2,3]) -> (out: f32[2,3])
//! temp t1: f32[2]
//! temp t5: f32[3] in i0
//! for i0 in 0..2 {
//!   t1[i0] = 0.0
//!   for i1 in 0..3 {
//!     t1[i0] = add(t1[i0], exp(x[3 * i0 + i1]))
//!   }
//! }
//! ```
//! Expressions are prefix calls named like the graph's ops; loads are `buffer[offset]` with the
//! flat offset; `index(...)` is an index value; `cast<f32>(...)` a conversion. A temporary held
//! in registers says so after its scope: `temp c0: f32[32] in i1 registers 16`.

use std::fmt;

use ollie_graph::{BinaryOp, CmpOp, DType, TensorType, UnaryOp};

use crate::ir::{Affine, Buffer, BufferId, BufferKind, Dynamic, Expr, LoopKind, LoopNest, Stmt, VarId};

impl fmt::Display for LoopNest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let decl = |kind: fn(BufferKind) -> bool| -> Vec<String> {
            self.buffers
                .iter()
                .filter(|b| kind(b.kind))
                .map(|b| {
                    let scope = b.scope.map(|v| format!(" in {}", v)).unwrap_or_default();
                    let registers = b.registers.map(|w| format!(" registers {w}")).unwrap_or_default();
                    format!("{}: {}{scope}{registers}", b.name, TensorType::new(b.dtype, b.shape.clone()))
                })
                .collect()
        };
        let inputs = decl(|k| matches!(k, BufferKind::Input(_)));
        let outputs = decl(|k| matches!(k, BufferKind::Output(_)));
        writeln!(f, "kernel {}({}) -> ({})", self.name, inputs.join(", "), outputs.join(", "))?;
        for t in decl(|k| k == BufferKind::Temp) {
            writeln!(f, "temp {t}")?;
        }
        for s in &self.body {
            self.fmt_stmt(f, s, 0)?;
        }
        Ok(())
    }
}

impl LoopNest {
    fn fmt_stmt(&self, f: &mut fmt::Formatter<'_>, stmt: &Stmt, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        match stmt {
            Stmt::Loop { var, extent, kind, body } => {
                let kind = kind.word().map(|w| format!(" {w}")).unwrap_or_default();
                writeln!(f, "{pad}for{kind} {} in 0..{extent} {{", var)?;
                for s in body {
                    self.fmt_stmt(f, s, depth + 1)?;
                }
                writeln!(f, "{pad}}}")
            }
            Stmt::Store { buffer, offset, value } => {
                writeln!(f, "{pad}{}[{}] = {}", self.buffer(*buffer).name, offset, self.fmt_expr(value))
            }
            Stmt::Prefetch { buffer, offset, indices } if indices.is_empty() => writeln!(f, "{pad}prefetch {}[{}]", self.buffer(*buffer).name, offset),
            Stmt::Prefetch { buffer, offset, indices } => {
                writeln!(f, "{pad}prefetch {}", self.fmt_expr(&Expr::Gather { buffer: *buffer, offset: offset.clone(), indices: indices.clone() }))
            }
        }
    }

    fn fmt_expr(&self, e: &Expr) -> String {
        match e {
            Expr::Const(v) => format!("{v:?}"),
            Expr::Load { buffer, offset } => format!("{}[{}]", self.buffer(*buffer).name, offset),
            Expr::Index(a) => format!("index({})", a),
            Expr::Unary(op, a) => format!("{}({})", op.name(), self.fmt_expr(a)),
            Expr::Binary(op, a, b) => format!("{}({}, {})", op.name(), self.fmt_expr(a), self.fmt_expr(b)),
            Expr::Compare(op, a, b) => format!("{}({}, {})", op.name(), self.fmt_expr(a), self.fmt_expr(b)),
            Expr::Select(c, a, b) => format!("select({}, {}, {})", self.fmt_expr(c), self.fmt_expr(a), self.fmt_expr(b)),
            Expr::Cast(d, a) => format!("cast<{d}>({})", self.fmt_expr(a)),
            Expr::Within { index, lo, hi, inside, outside } => format!("within[{lo}..{hi}]({index}; {}, {})", self.fmt_expr(inside), self.fmt_expr(outside)),
            Expr::Gather { buffer, offset, indices } => {
                let mut text = format!("gather({}[{}]", self.buffer(*buffer).name, offset);
                for d in indices {
                    text.push_str(&format!(", {}, {}, {}", d.stride, d.extent, self.fmt_expr(&d.value)));
                }
                text + ")"
            }
        }
    }
}

/// A syntax error in loop IR text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

/// Reads a loop nest in the text form that `Display` prints.
pub fn parse(text: &str) -> Result<LoopNest, ParseError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty()).peekable();
    let err = |line: usize, message: String| ParseError { line, message };
    let (line, header) = lines.next().ok_or_else(|| err(1, "empty loop IR".into()))?;
    let header = header.strip_prefix("kernel ").ok_or_else(|| err(line, "expected `kernel NAME(...) -> (...)`".into()))?;
    let (name, rest) = header.split_once('(').ok_or_else(|| err(line, "expected `(`".into()))?;
    let (inputs, outputs) = rest.split_once(") -> (").ok_or_else(|| err(line, "expected `) -> (`".into()))?;
    let outputs = outputs.strip_suffix(')').ok_or_else(|| err(line, "expected `)` at the end".into()))?;
    let mut nest = LoopNest { name: name.trim().to_string(), buffers: Vec::new(), body: Vec::new() };
    for (k, decl) in split_decls(inputs).into_iter().enumerate() {
        nest.buffers.push(parse_decl(decl, BufferKind::Input(k)).map_err(|m| err(line, m))?);
    }
    for (k, decl) in split_decls(outputs).into_iter().enumerate() {
        nest.buffers.push(parse_decl(decl, BufferKind::Output(k)).map_err(|m| err(line, m))?);
    }
    while let Some((line, t)) = lines.peek().copied() {
        let Some(decl) = t.strip_prefix("temp ") else { break };
        let (decl, registers) = match decl.rsplit_once(" registers ") {
            Some((decl, w)) => (decl, Some(w.trim().parse().map_err(|_| err(line, format!("expected a lane count after `registers`, found `{w}`")))?)),
            None => (decl, None),
        };
        let (decl, scope) = match decl.rsplit_once(" in ") {
            Some((decl, var)) => (decl, Some(parse_var(var.trim()).map_err(|m| err(line, m))?)),
            None => (decl, None),
        };
        nest.buffers.push(Buffer { scope, registers, ..parse_decl(decl, BufferKind::Temp).map_err(|m| err(line, m))? });
        lines.next();
    }
    let mut stack: Vec<(VarId, usize, LoopKind, Vec<Stmt>)> = Vec::new();
    let mut body = Vec::new();
    for (line, t) in lines {
        if t == "}" {
            let (var, extent, kind, inner) = stack.pop().ok_or_else(|| err(line, "unmatched `}`".into()))?;
            let stmt = Stmt::Loop { var, extent, kind, body: inner };
            match stack.last_mut() {
                Some((_, _, _, b)) => b.push(stmt),
                None => body.push(stmt),
            }
        } else if let Some(rest) = t.strip_prefix("for ") {
            let (head, range) = rest.split_once(" in 0..").ok_or_else(|| err(line, "expected `for [KIND] iN in 0..EXTENT {`".into()))?;
            let extent = range.strip_suffix('{').map(str::trim).and_then(|e| e.parse().ok());
            let extent = extent.ok_or_else(|| err(line, "expected `0..EXTENT {`".into()))?;
            let (kind, var) = match head.trim().split_once(' ') {
                Some((word, var)) => (LoopKind::from_word(word).ok_or_else(|| err(line, format!("unknown loop kind `{word}`")))?, var),
                None => (LoopKind::Serial, head),
            };
            stack.push((parse_var(var.trim()).map_err(|m| err(line, m))?, extent, kind, Vec::new()));
        } else {
            let stmt = parse_store(&nest, t).map_err(|m| err(line, m))?;
            match stack.last_mut() {
                Some((_, _, _, b)) => b.push(stmt),
                None => body.push(stmt),
            }
        }
    }
    if !stack.is_empty() {
        return Err(err(text.lines().count(), "a loop is not closed".into()));
    }
    nest.body = body;
    Ok(nest)
}

fn split_decls(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim());
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

fn parse_decl(text: &str, kind: BufferKind) -> Result<Buffer, String> {
    let (name, ty) = text.split_once(':').ok_or(format!("expected `NAME: TYPE`, found `{text}`"))?;
    let (dtype, dims) = ty.trim().split_once('[').ok_or(format!("expected a type like f32[4,8], found `{ty}`"))?;
    let dtype = DType::from_name(dtype).ok_or(format!("unknown dtype `{dtype}`"))?;
    let dims = dims.strip_suffix(']').ok_or("expected `]`")?;
    let shape = dims.split(',').filter(|d| !d.trim().is_empty()).map(|d| d.trim().parse().map_err(|_| format!("bad dimension `{d}`"))).collect::<Result<_, String>>()?;
    Ok(Buffer { name: name.trim().to_string(), kind, dtype, shape, scope: None, registers: None })
}

fn parse_var(text: &str) -> Result<VarId, String> {
    text.strip_prefix('i').and_then(|n| n.parse().ok()).map(VarId).ok_or(format!("expected a loop variable `iN`, found `{text}`"))
}

fn parse_store(nest: &LoopNest, text: &str) -> Result<Stmt, String> {
    if let Some(target) = text.strip_prefix("prefetch ") {
        let mut p = ExprParser { nest, text: target.trim(), pos: 0 };
        let stmt = match p.expr()? {
            Expr::Load { buffer, offset } => Stmt::Prefetch { buffer, offset, indices: Vec::new() },
            Expr::Gather { buffer, offset, indices } => Stmt::Prefetch { buffer, offset, indices },
            _ => return Err(format!("expected `prefetch BUF[OFFSET]` or `prefetch gather(...)`, found `{target}`")),
        };
        p.end()?;
        return Ok(stmt);
    }
    let (lhs, rhs) = text.split_once(" = ").ok_or(format!("expected a store `BUF[OFFSET] = EXPR`, found `{text}`"))?;
    let mut p = ExprParser { nest, text: lhs.trim(), pos: 0 };
    let Expr::Load { buffer, offset } = p.load()? else { unreachable!("load returns a load") };
    p.end()?;
    let mut p = ExprParser { nest, text: rhs.trim(), pos: 0 };
    let value = p.expr()?;
    p.end()?;
    Ok(Stmt::Store { buffer, offset, value })
}

struct ExprParser<'a> {
    nest: &'a LoopNest,
    text: &'a str,
    pos: usize,
}

impl ExprParser<'_> {
    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn skip_ws(&mut self) {
        while self.rest().starts_with(' ') {
            self.pos += 1;
        }
    }

    fn eat(&mut self, s: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, s: &str) -> Result<(), String> {
        if self.eat(s) { Ok(()) } else { Err(format!("expected `{s}` at `{}`", self.rest())) }
    }

    fn end(&mut self) -> Result<(), String> {
        self.skip_ws();
        if self.rest().is_empty() { Ok(()) } else { Err(format!("unexpected `{}`", self.rest())) }
    }

    fn word(&mut self) -> &str {
        self.skip_ws();
        let start = self.pos;
        let n = self.rest().find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-' || c == '+')).unwrap_or(self.rest().len());
        self.pos += n;
        &self.text[start..self.pos]
    }

    fn load(&mut self) -> Result<Expr, String> {
        self.skip_ws();
        let n = self.rest().find('[').ok_or("expected `BUF[OFFSET]`")?;
        let name = self.rest()[..n].trim().to_string();
        self.pos += n + 1;
        let buffer = self.nest.buffers.iter().position(|b| b.name == name).ok_or(format!("no buffer `{name}`"))?;
        let offset = self.affine(']')?;
        Ok(Expr::Load { buffer: BufferId(buffer as u32), offset })
    }

    /// An affine expression up to the closing `close`, which is consumed.
    fn affine(&mut self, close: char) -> Result<Affine, String> {
        let end = self.rest().find(close).ok_or(format!("expected `{close}`"))?;
        let text = self.rest()[..end].to_string();
        self.pos += end + 1;
        let mut a = Affine::default();
        for (sign, term) in signed_terms(&text) {
            let term = term.trim();
            if let Some((c, v)) = term.split_once('*') {
                let c: i64 = c.trim().parse().map_err(|_| format!("bad coefficient `{c}`"))?;
                a = a.add_scaled(&Affine::var(parse_var(v.trim())?), sign * c);
            } else if term.starts_with('i') {
                a = a.add_scaled(&Affine::var(parse_var(term)?), sign);
            } else {
                let c: i64 = term.parse().map_err(|_| format!("bad offset term `{term}`"))?;
                a.constant += sign * c;
            }
        }
        Ok(a)
    }

    fn expr(&mut self) -> Result<Expr, String> {
        self.skip_ws();
        let rest = self.rest();
        let is_call = |name: &str| rest.starts_with(name) && rest[name.len()..].starts_with('(');
        if let Some(d) = rest.strip_prefix("cast<") {
            let close = d.find('>').ok_or("expected `>`")?;
            let dtype = DType::from_name(&d[..close]).ok_or(format!("unknown dtype `{}`", &d[..close]))?;
            self.pos += "cast<".len() + close + 1;
            self.expect("(")?;
            let a = self.expr()?;
            self.expect(")")?;
            return Ok(Expr::Cast(dtype, Box::new(a)));
        }
        if let Some(d) = rest.strip_prefix("within[") {
            let close = d.find(']').ok_or("expected `]`")?;
            let (lo, hi) = d[..close].split_once("..").ok_or("expected `within[LO..HI]`")?;
            let bound = |b: &str| b.trim().parse::<i64>().map_err(|_| format!("bad bound `{b}`"));
            let (lo, hi) = (bound(lo)?, bound(hi)?);
            self.pos += "within[".len() + close + 1;
            self.expect("(")?;
            let index = self.affine(';')?;
            let inside = Box::new(self.expr()?);
            self.expect(",")?;
            let outside = Box::new(self.expr()?);
            self.expect(")")?;
            return Ok(Expr::Within { index, lo, hi, inside, outside });
        }
        if is_call("gather") {
            self.pos += "gather(".len();
            let Expr::Load { buffer, offset } = self.load()? else { unreachable!("load returns a load") };
            let mut indices = Vec::new();
            while self.eat(",") {
                let stride = self.word().parse().map_err(|_| "expected a gather's stride".to_string())?;
                self.expect(",")?;
                let extent = self.word().parse().map_err(|_| "expected a gather's extent".to_string())?;
                self.expect(",")?;
                indices.push(Dynamic { value: self.expr()?, stride, extent });
            }
            self.expect(")")?;
            return Ok(Expr::Gather { buffer, offset, indices });
        }
        if is_call("index") {
            self.pos += "index(".len();
            return Ok(Expr::Index(self.affine(')')?));
        }
        let ident_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let ident = &rest[..ident_len];
        let after = &rest[ident_len..];
        if !ident.is_empty() && after.starts_with('(') {
            let name = ident.to_string();
            self.pos += ident_len + 1;
            let mut args = vec![self.expr()?];
            while self.eat(",") {
                args.push(self.expr()?);
            }
            self.expect(")")?;
            let mut args = args.into_iter().map(Box::new);
            let mut next = || args.next().ok_or(format!("`{name}` has too few operands"));
            let e = if let Some(u) = UnaryOp::ALL.iter().find(|u| u.name() == name) {
                Expr::Unary(*u, next()?)
            } else if let Some(b) = BinaryOp::ALL.iter().find(|b| b.name() == name) {
                Expr::Binary(*b, next()?, next()?)
            } else if let Some(c) = CmpOp::ALL.iter().find(|c| c.name() == name) {
                Expr::Compare(*c, next()?, next()?)
            } else if name == "select" {
                Expr::Select(next()?, next()?, next()?)
            } else {
                return Err(format!("unknown operation `{name}`"));
            };
            return Ok(e);
        }
        if !ident.is_empty() && after.starts_with('[') && !ident.chars().next().unwrap().is_ascii_digit() && ident != "inf" {
            return self.load();
        }
        let w = self.word().to_string();
        w.parse::<f64>().map(Expr::Const).map_err(|_| format!("expected an expression, found `{w}`"))
    }
}

/// Splits `4096 * i0 + i1 - 3` into signed terms.
fn signed_terms(text: &str) -> Vec<(i64, &str)> {
    let mut terms = Vec::new();
    let (mut sign, mut start) = (1, 0);
    let bytes = text.as_bytes();
    for i in 0..bytes.len() {
        if (bytes[i] == b'+' || bytes[i] == b'-') && i > 0 && bytes[i - 1] == b' ' {
            let t = text[start..i].trim();
            if !t.is_empty() {
                terms.push((sign, t));
            }
            sign = if bytes[i] == b'-' { -1 } else { 1 };
            start = i + 1;
        }
    }
    let t = text[start..].trim();
    if !t.is_empty() {
        terms.push((sign, t));
    }
    terms
}
