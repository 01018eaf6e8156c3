//! Schedules: a list of named steps that transform a loop nest, each after a legality check, and
//! that print as text and replay on the naive nest.
//!
//! ```text
//! split i3 8
//! parallel i0
//! simd i9
//! unroll i9 4
//! flags -O3 -march=native -fopenmp
//! ```

use std::fmt;

use crate::emit::var_name;
use crate::ir::{Affine, BufferId, Expr, LoopKind, LoopNest, Stmt, VarId};

/// One transformation of a loop, named by its variable.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Step {
    /// `for v in 0..n` becomes `for v in 0..n/f { for w in 0..f }` with `v ↦ f·v + w`; `w` is the
    /// next unused variable. The order of iterations is unchanged, so it is always legal.
    Split { var: VarId, factor: usize },
    /// Run the iterations on several threads: legal when iterations write disjoint elements and
    /// read no element another iteration writes.
    Parallel { var: VarId },
    /// Run the iterations in SIMD lanes: an innermost loop with the same independence.
    Simd { var: VarId },
    /// Ask the compiler to unroll by `factor`.
    Unroll { var: VarId, factor: u32 },
}

/// Steps applied in order, and the compiler flags the result is built with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Schedule {
    pub steps: Vec<Step>,
    pub flags: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    #[error("there is no loop `{0}`")]
    NoLoop(String),
    #[error("`{var}` has {extent} iterations, which {factor} does not divide")]
    NotDivisible { var: String, extent: usize, factor: usize },
    #[error("cannot {step}: {reason}")]
    Illegal { step: String, reason: String },
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Split { var, factor } => write!(f, "split {} {factor}", var_name(*var)),
            Step::Parallel { var } => write!(f, "parallel {}", var_name(*var)),
            Step::Simd { var } => write!(f, "simd {}", var_name(*var)),
            Step::Unroll { var, factor } => write!(f, "unroll {} {factor}", var_name(*var)),
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.steps {
            writeln!(f, "{s}")?;
        }
        if !self.flags.is_empty() {
            writeln!(f, "flags {}", self.flags.join(" "))?;
        }
        Ok(())
    }
}

impl Schedule {
    /// Reads the text form.
    pub fn parse(text: &str) -> Result<Schedule, ScheduleError> {
        let mut schedule = Schedule::default();
        for (i, line) in text.lines().enumerate() {
            let err = |message: String| ScheduleError::Syntax { line: i + 1, message };
            let words: Vec<&str> = line.split_whitespace().collect();
            let var = |k: usize| -> Result<VarId, ScheduleError> {
                words.get(k).and_then(|w| w.strip_prefix('i')).and_then(|n| n.parse().ok()).map(VarId).ok_or_else(|| err(format!("expected a loop variable `iN` in `{line}`")))
            };
            let number = |k: usize| -> Result<usize, ScheduleError> {
                words.get(k).and_then(|w| w.parse().ok()).ok_or_else(|| err(format!("expected a number in `{line}`")))
            };
            match words.first().copied() {
                None => {}
                Some("split") => schedule.steps.push(Step::Split { var: var(1)?, factor: number(2)? }),
                Some("parallel") => schedule.steps.push(Step::Parallel { var: var(1)? }),
                Some("simd") => schedule.steps.push(Step::Simd { var: var(1)? }),
                Some("unroll") => schedule.steps.push(Step::Unroll { var: var(1)?, factor: number(2)? as u32 }),
                Some("flags") => schedule.flags = words[1..].iter().map(|w| w.to_string()).collect(),
                Some(other) => return Err(err(format!("unknown step `{other}`"))),
            }
        }
        Ok(schedule)
    }

    /// Replays the steps on `nest`; the first illegal step is an error.
    pub fn apply(&self, nest: &LoopNest) -> Result<LoopNest, ScheduleError> {
        let mut nest = nest.clone();
        for step in &self.steps {
            apply_step(&mut nest, step)?;
        }
        Ok(nest)
    }
}

/// Applies one step in place.
pub fn apply_step(nest: &mut LoopNest, step: &Step) -> Result<(), ScheduleError> {
    let var = match step {
        Step::Split { var, .. } | Step::Parallel { var } | Step::Simd { var } | Step::Unroll { var, .. } => *var,
    };
    let fresh = VarId(max_var(&nest.body).map_or(0, |v| v.0 + 1));
    let mut found = false;
    let mut result = Ok(());
    let body = std::mem::take(&mut nest.body);
    nest.body = body
        .into_iter()
        .map(|s| visit(s, var, &mut |stmt, enclosing| {
            found = true;
            result = transform(stmt, step, fresh, enclosing);
        }, &mut Vec::new()))
        .collect();
    if !found {
        return Err(ScheduleError::NoLoop(var_name(var)));
    }
    result
}

/// Finds the loop of `var` and calls `f` on it with the kinds of its enclosing loops.
fn visit(mut s: Stmt, var: VarId, f: &mut dyn FnMut(&mut Stmt, &[LoopKind]), enclosing: &mut Vec<LoopKind>) -> Stmt {
    if let Stmt::Loop { var: v, kind, body, .. } = &mut s {
        if *v == var {
            f(&mut s, enclosing);
            return s;
        }
        enclosing.push(*kind);
        let inner = std::mem::take(body);
        *body = inner.into_iter().map(|b| visit(b, var, f, enclosing)).collect();
        enclosing.pop();
    }
    s
}

fn transform(stmt: &mut Stmt, step: &Step, fresh: VarId, enclosing: &[LoopKind]) -> Result<(), ScheduleError> {
    let Stmt::Loop { var, extent, kind, body } = stmt else { unreachable!("visit finds loops") };
    let illegal = |reason: &str| ScheduleError::Illegal { step: step.to_string(), reason: reason.to_string() };
    match step {
        Step::Split { factor, .. } => {
            if *factor < 2 || *extent % *factor != 0 {
                return Err(ScheduleError::NotDivisible { var: var_name(*var), extent: *extent, factor: *factor });
            }
            let inner_body = std::mem::take(body).into_iter().map(|s| substitute(s, *var, *factor as i64, fresh)).collect();
            *body = vec![Stmt::Loop { var: fresh, extent: *factor, kind: LoopKind::Serial, body: inner_body }];
            *extent /= *factor;
        }
        Step::Parallel { .. } | Step::Simd { .. } => {
            if *kind != LoopKind::Serial {
                return Err(illegal("the loop is not serial"));
            }
            let simd = matches!(step, Step::Simd { .. });
            if !simd && (enclosing.contains(&LoopKind::Parallel) || contains_kind(body, LoopKind::Parallel)) {
                return Err(illegal("parallel loops do not nest"));
            }
            if simd && body.iter().any(|s| matches!(s, Stmt::Loop { .. })) {
                return Err(illegal("only an innermost loop runs in SIMD lanes"));
            }
            independent(*var, body).map_err(|r| illegal(&r))?;
            *kind = if simd { LoopKind::Simd } else { LoopKind::Parallel };
        }
        Step::Unroll { factor, .. } => {
            if *factor < 2 {
                return Err(illegal("the unroll factor must be at least 2"));
            }
            if *kind != LoopKind::Serial {
                return Err(illegal("the loop is not serial"));
            }
            *kind = LoopKind::Unrolled(*factor);
        }
    }
    Ok(())
}

fn contains_kind(body: &[Stmt], k: LoopKind) -> bool {
    body.iter().any(|s| matches!(s, Stmt::Loop { kind, body, .. } if *kind == k || contains_kind(body, k)))
}

/// Whether the iterations of the loop of `var` (with `body`) are independent: every store moves
/// by a stride larger than the window of elements one iteration writes, all stores to a buffer
/// share that stride and outer indices, and every load of a stored buffer stays inside its
/// iteration's own window.
fn independent(var: VarId, body: &[Stmt]) -> Result<(), String> {
    let mut inner = Vec::new();
    let mut stores: Vec<(BufferId, Affine)> = Vec::new();
    let mut loads: Vec<(BufferId, Affine)> = Vec::new();
    collect(body, &mut inner, &mut stores, &mut loads);
    // The elements an access reaches within one iteration: indices of outer loops (fixed while
    // this loop runs) and the range the inner loops sweep.
    let window = |a: &Affine| -> (Vec<(VarId, i64)>, i64, i64) {
        let (mut lo, mut hi) = (a.constant, a.constant);
        let mut outer = Vec::new();
        for &(v, c) in &a.terms {
            if v == var {
                continue;
            }
            match inner.iter().find(|(w, _)| *w == v) {
                Some(&(_, n)) => {
                    let last = c * (n as i64 - 1).max(0);
                    lo += last.min(0);
                    hi += last.max(0);
                }
                None => outer.push((v, c)),
            }
        }
        (outer, lo, hi)
    };
    for (b, a) in &stores {
        let c = a.coefficient(var);
        if c == 0 {
            return Err("every iteration writes the same elements (a reduction over this loop)".into());
        }
        let (outer, lo, hi) = window(a);
        if hi - lo >= c.abs() {
            return Err("iterations write overlapping elements".into());
        }
        if stores.iter().any(|(b2, a2)| b2 == b && (a2.coefficient(var) != c || window(a2).0 != outer)) {
            return Err("stores to one buffer move differently".into());
        }
    }
    for (b, a) in &loads {
        let own = stores.iter().filter(|(b2, _)| b2 == b).any(|(_, s)| {
            let (outer_s, lo_s, hi_s) = window(s);
            let (outer_l, lo_l, hi_l) = window(a);
            a.coefficient(var) == s.coefficient(var) && outer_l == outer_s && lo_s <= lo_l && hi_l <= hi_s
        });
        if stores.iter().any(|(b2, _)| b2 == b) && !own {
            return Err("an iteration reads elements another iteration writes".into());
        }
    }
    Ok(())
}

fn collect(body: &[Stmt], inner: &mut Vec<(VarId, usize)>, stores: &mut Vec<(BufferId, Affine)>, loads: &mut Vec<(BufferId, Affine)>) {
    for s in body {
        match s {
            Stmt::Loop { var, extent, body, .. } => {
                inner.push((*var, *extent));
                collect(body, inner, stores, loads);
            }
            Stmt::Store { buffer, offset, value } => {
                stores.push((*buffer, offset.clone()));
                loads_of(value, loads);
            }
        }
    }
}

fn loads_of(e: &Expr, out: &mut Vec<(BufferId, Affine)>) {
    match e {
        Expr::Load { buffer, offset } => out.push((*buffer, offset.clone())),
        Expr::Const(_) | Expr::Index(_) => {}
        Expr::Unary(_, a) | Expr::Cast(_, a) => loads_of(a, out),
        Expr::Binary(_, a, b) | Expr::Compare(_, a, b) => {
            loads_of(a, out);
            loads_of(b, out);
        }
        Expr::Select(c, a, b) => {
            loads_of(c, out);
            loads_of(a, out);
            loads_of(b, out);
        }
    }
}

/// Replaces `var` by `factor·var + inner` in every index of `s`.
fn substitute(s: Stmt, var: VarId, factor: i64, inner: VarId) -> Stmt {
    let fix = |a: &Affine| -> Affine {
        let c = a.coefficient(var);
        if c == 0 {
            return a.clone();
        }
        let without = a.add_scaled(&Affine::var(var), -c);
        without.add_scaled(&Affine::var(var), c * factor).add_scaled(&Affine::var(inner), c)
    };
    match s {
        Stmt::Loop { var: v, extent, kind, body } => {
            Stmt::Loop { var: v, extent, kind, body: body.into_iter().map(|b| substitute(b, var, factor, inner)).collect() }
        }
        Stmt::Store { buffer, offset, value } => Stmt::Store { buffer, offset: fix(&offset), value: map_expr(value, &fix) },
    }
}

fn map_expr(e: Expr, fix: &dyn Fn(&Affine) -> Affine) -> Expr {
    let m = |x: Box<Expr>| Box::new(map_expr(*x, fix));
    match e {
        Expr::Load { buffer, offset } => Expr::Load { buffer, offset: fix(&offset) },
        Expr::Index(a) => Expr::Index(fix(&a)),
        Expr::Const(c) => Expr::Const(c),
        Expr::Unary(op, a) => Expr::Unary(op, m(a)),
        Expr::Cast(d, a) => Expr::Cast(d, m(a)),
        Expr::Binary(op, a, b) => Expr::Binary(op, m(a), m(b)),
        Expr::Compare(op, a, b) => Expr::Compare(op, m(a), m(b)),
        Expr::Select(c, a, b) => Expr::Select(m(c), m(a), m(b)),
    }
}

fn max_var(body: &[Stmt]) -> Option<VarId> {
    body.iter()
        .filter_map(|s| match s {
            Stmt::Loop { var, body, .. } => Some(max_var(body).map_or(*var, |m| m.max(*var))),
            Stmt::Store { .. } => None,
        })
        .max()
}
