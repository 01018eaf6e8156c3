//! The loop IR's text form (`Display`).
//!
//! ```text
//! kernel softmax(x: f32[2,3]) -> (out: f32[2,3])
//! temp t1: f32[2]
//! for i0 in 0..2 {
//!   t1[i0] = 0.0
//!   for i1 in 0..3 {
//!     t1[i0] = add(t1[i0], exp(x[3 * i0 + i1]))
//!   }
//! }
//! ```
//! Expressions are prefix calls named like the graph's ops; loads are `buffer[offset]` with the
//! flat offset; `index(...)` is an index value; `cast<f32>(...)` a conversion.

use std::fmt;

use ollie_graph::TensorType;

use crate::emit::{affine, var_name};
use crate::ir::{BufferKind, Expr, LoopKind, LoopNest, Stmt};

impl fmt::Display for LoopNest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let decl = |kind: fn(BufferKind) -> bool| -> Vec<String> {
            self.buffers
                .iter()
                .filter(|b| kind(b.kind))
                .map(|b| format!("{}: {}", b.name, TensorType::new(b.dtype, b.shape.clone())))
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
                let kind = match kind {
                    LoopKind::Serial => "",
                };
                writeln!(f, "{pad}for{kind} {} in 0..{extent} {{", var_name(*var))?;
                for s in body {
                    self.fmt_stmt(f, s, depth + 1)?;
                }
                writeln!(f, "{pad}}}")
            }
            Stmt::Store { buffer, offset, value } => {
                writeln!(f, "{pad}{}[{}] = {}", self.buffer(*buffer).name, affine(offset), self.fmt_expr(value))
            }
        }
    }

    fn fmt_expr(&self, e: &Expr) -> String {
        match e {
            Expr::Const(v) => format!("{v:?}"),
            Expr::Load { buffer, offset } => format!("{}[{}]", self.buffer(*buffer).name, affine(offset)),
            Expr::Index(a) => format!("index({})", affine(a)),
            Expr::Unary(op, a) => format!("{}({})", op.name(), self.fmt_expr(a)),
            Expr::Binary(op, a, b) => format!("{}({}, {})", op.name(), self.fmt_expr(a), self.fmt_expr(b)),
            Expr::Compare(op, a, b) => format!("{}({}, {})", op.name(), self.fmt_expr(a), self.fmt_expr(b)),
            Expr::Select(c, a, b) => format!("select({}, {}, {})", self.fmt_expr(c), self.fmt_expr(a), self.fmt_expr(b)),
            Expr::Cast(d, a) => format!("cast<{d}>({})", self.fmt_expr(a)),
        }
    }
}
