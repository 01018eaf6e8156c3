//! Schedules: a list of named steps that transform a loop nest, each after a legality check, and
//! that print as text and replay on the naive nest.
//!
//! ```text
//! distribute i1
//! reorder i4 i2
//! fuse i0 i2
//! accumulators i1 8
//! split i3 8
//! parallel i0
//! vectorize i3 8
//! simd i9
//! unroll i9 4
//! flags -O3 -march=native -fopenmp
//! ```

use std::fmt;

use crate::emit::var_name;
use ollie_graph::{BinaryOp, DType};

use crate::ir::{Affine, Buffer, BufferId, BufferKind, Expr, LoopKind, LoopNest, Stmt, VarId};

/// One transformation of a loop, named by its variable.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Step {
    /// `for v in 0..n` becomes `for v in 0..n/f { for w in 0..f }` with `v ↦ f·v + w`; `w` is the
    /// next unused variable. The order of iterations is unchanged, so it is always legal.
    Split { var: VarId, factor: usize },
    /// Swaps a loop with a loop directly inside it (interchange); statements beside the inner
    /// loop move to loops of their own before and after it (distribution). Legal when the outer
    /// loop's iterations are independent: every dependence is then carried by the inner loop
    /// alone, and keeps its direction.
    Reorder { outer: VarId, inner: VarId },
    /// A loop whose body has several statements becomes one loop per statement (loop fission);
    /// the copies after the first get fresh variables. Legal when the iterations are independent.
    Distribute { var: VarId },
    /// A loop and the loop right after it, over the same extent, become one loop running both
    /// bodies: the producer's iteration is computed at the consumer's (compute-at at the outer
    /// level). Legal when the fused iterations are independent.
    Fuse { first: VarId, second: VarId },
    /// A reduction loop accumulates into `factor` partial results (a new temporary), combined
    /// after the loop: floating-point reassociation, which lets the partials run in SIMD lanes.
    Accumulators { var: VarId, factor: usize },
    /// Run the iterations on several threads: legal when iterations write disjoint elements and
    /// read no element another iteration writes.
    Parallel { var: VarId },
    /// Run the iterations in SIMD lanes (OpenMP `simd`): an innermost loop with the same
    /// independence.
    Simd { var: VarId },
    /// Explicit SIMD in the emitted C: `width` iterations at once in GCC vector types, then the
    /// remaining iterations one by one. Same legality as `simd`.
    Vectorize { var: VarId, width: u32 },
    /// Ask the compiler to unroll by `factor`.
    Unroll { var: VarId, factor: u32 },
}

impl Step {
    /// The loop the step is applied to.
    pub fn var(&self) -> VarId {
        match self {
            Step::Split { var, .. } | Step::Distribute { var } | Step::Accumulators { var, .. } | Step::Parallel { var } | Step::Simd { var } | Step::Vectorize { var, .. } | Step::Unroll { var, .. } => *var,
            Step::Reorder { outer, .. } => *outer,
            Step::Fuse { first, .. } => *first,
        }
    }
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
        let v = |v: &VarId| var_name(*v);
        match self {
            Step::Split { var, factor } => write!(f, "split {} {factor}", v(var)),
            Step::Reorder { outer, inner } => write!(f, "reorder {} {}", v(outer), v(inner)),
            Step::Distribute { var } => write!(f, "distribute {}", v(var)),
            Step::Fuse { first, second } => write!(f, "fuse {} {}", v(first), v(second)),
            Step::Accumulators { var, factor } => write!(f, "accumulators {} {factor}", v(var)),
            Step::Parallel { var } => write!(f, "parallel {}", v(var)),
            Step::Simd { var } => write!(f, "simd {}", v(var)),
            Step::Vectorize { var, width } => write!(f, "vectorize {} {width}", v(var)),
            Step::Unroll { var, factor } => write!(f, "unroll {} {factor}", v(var)),
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
            let step = match words.first().copied() {
                None => continue,
                Some("flags") => {
                    schedule.flags = words[1..].iter().map(|w| w.to_string()).collect();
                    continue;
                }
                Some("split") => Step::Split { var: var(1)?, factor: number(2)? },
                Some("reorder") => Step::Reorder { outer: var(1)?, inner: var(2)? },
                Some("distribute") => Step::Distribute { var: var(1)? },
                Some("fuse") => Step::Fuse { first: var(1)?, second: var(2)? },
                Some("accumulators") => Step::Accumulators { var: var(1)?, factor: number(2)? },
                Some("parallel") => Step::Parallel { var: var(1)? },
                Some("simd") => Step::Simd { var: var(1)? },
                Some("vectorize") => Step::Vectorize { var: var(1)?, width: number(2)? as u32 },
                Some("unroll") => Step::Unroll { var: var(1)?, factor: number(2)? as u32 },
                Some(other) => return Err(err(format!("unknown step `{other}`"))),
            };
            schedule.steps.push(step);
        }
        Ok(schedule)
    }

    /// The flags to compile `scheduled` (this schedule applied) with: the schedule's own, plus
    /// `-fopenmp` when a loop runs on threads or in OpenMP SIMD lanes.
    pub fn compile_flags(&self, scheduled: &LoopNest) -> Vec<String> {
        let mut flags = self.flags.clone();
        if contains_kind(&scheduled.body, LoopKind::Parallel) || contains_kind(&scheduled.body, LoopKind::Simd) {
            flags.push("-fopenmp".into());
        }
        flags
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

/// Where a loop is: the statement indices from the nest's body down to it, and the kinds of the
/// loops around it.
fn locate(body: &[Stmt], var: VarId, path: &mut Vec<usize>, enclosing: &mut Vec<LoopKind>) -> bool {
    for (i, s) in body.iter().enumerate() {
        if let Stmt::Loop { var: v, kind, body, .. } = s {
            path.push(i);
            if *v == var {
                return true;
            }
            enclosing.push(*kind);
            if locate(body, var, path, enclosing) {
                return true;
            }
            enclosing.pop();
            path.pop();
        }
    }
    false
}

/// The statement list holding the statement at `path`.
fn parent<'a>(mut body: &'a mut Vec<Stmt>, path: &[usize]) -> &'a mut Vec<Stmt> {
    for &i in &path[..path.len() - 1] {
        body = match &mut body[i] {
            Stmt::Loop { body, .. } => body,
            Stmt::Store { .. } => unreachable!("paths go through loops"),
        };
    }
    body
}

/// Applies one step in place.
pub fn apply_step(nest: &mut LoopNest, step: &Step) -> Result<(), ScheduleError> {
    let (mut path, mut enclosing) = (Vec::new(), Vec::new());
    if !locate(&nest.body, step.var(), &mut path, &mut enclosing) {
        return Err(ScheduleError::NoLoop(var_name(step.var())));
    }
    let fresh = max_var(&nest.body).map_or(0, |v| v.0 + 1);
    let wide = nest.computes_in_f64();
    // The buffers as they are before the step (the nest's body is borrowed below).
    let buffers = nest.buffers.clone();
    let next_buffer = BufferId(nest.buffers.len() as u32);
    let at = *path.last().expect("located");
    let siblings = parent(&mut nest.body, &path);
    let illegal = |reason: &str| ScheduleError::Illegal { step: step.to_string(), reason: reason.to_string() };
    let Stmt::Loop { var, extent, kind, body } = &mut siblings[at] else { unreachable!("locate finds loops") };
    let (var, extent_n) = (*var, *extent);
    if *kind != LoopKind::Serial {
        return Err(illegal("the loop is not serial"));
    }
    match step {
        Step::Split { factor, .. } => {
            if *factor < 2 || extent_n % *factor != 0 {
                return Err(ScheduleError::NotDivisible { var: var_name(var), extent: extent_n, factor: *factor });
            }
            let inner = VarId(fresh);
            let by = Affine::var(var).scale(*factor as i64).add_scaled(&Affine::var(inner), 1);
            let inner_body = body.iter().map(|s| s.map_affine(&|a| a.substitute(var, &by))).collect();
            *body = vec![Stmt::Loop { var: inner, extent: *factor, kind: LoopKind::Serial, body: inner_body }];
            *extent /= *factor;
        }
        Step::Reorder { inner, .. } => {
            let Some(k) = body.iter().position(|s| matches!(s, Stmt::Loop { var, .. } if var == inner)) else {
                return Err(illegal(&format!("`{}` is not a loop directly inside it", var_name(*inner))));
            };
            if !matches!(&body[k], Stmt::Loop { kind: LoopKind::Serial, .. }) {
                return Err(illegal("the inner loop is not serial"));
            }
            independent(var, body).map_err(|r| illegal(&r))?;
            // Statements beside the inner loop keep their order in loops of their own (fresh
            // variables): legal, as the iterations are independent.
            let mut stmts = std::mem::take(body);
            let after: Vec<Stmt> = stmts.split_off(k + 1);
            let Some(Stmt::Loop { var: v2, extent: e2, body: b2, .. }) = stmts.pop() else { unreachable!("found above") };
            let before = stmts;
            let mut fresh_vars = (fresh..).map(VarId);
            let mut copy = |group: Vec<Stmt>| -> Option<Stmt> {
                if group.is_empty() {
                    return None;
                }
                let v = fresh_vars.next().expect("unbounded");
                let body = group.iter().map(|s| s.map_affine(&|a| a.substitute(var, &Affine::var(v)))).collect();
                Some(Stmt::Loop { var: v, extent: extent_n, kind: LoopKind::Serial, body })
            };
            let (before, after) = (copy(before), copy(after));
            let swapped = Stmt::Loop { var: v2, extent: e2, kind: LoopKind::Serial, body: vec![Stmt::Loop { var, extent: extent_n, kind: LoopKind::Serial, body: b2 }] };
            let replacement: Vec<Stmt> = before.into_iter().chain([swapped]).chain(after).collect();
            siblings.splice(at..=at, replacement);
        }
        Step::Distribute { .. } => {
            if body.len() < 2 {
                return Err(illegal("the loop's body is a single statement"));
            }
            independent(var, body).map_err(|r| illegal(&r))?;
            let stmts = std::mem::take(body);
            let loops: Vec<Stmt> = stmts
                .into_iter()
                .enumerate()
                .map(|(k, s)| {
                    let v = if k == 0 { var } else { VarId(fresh + k as u32 - 1) };
                    let s = s.map_affine(&|a| a.substitute(var, &Affine::var(v)));
                    Stmt::Loop { var: v, extent: extent_n, kind: LoopKind::Serial, body: vec![s] }
                })
                .collect();
            siblings.splice(at..=at, loops);
        }
        Step::Fuse { second, .. } => {
            let Some(Stmt::Loop { var: v2, extent: e2, kind: k2, body: b2 }) = siblings.get(at + 1) else {
                return Err(illegal("no loop follows it"));
            };
            if v2 != second {
                return Err(illegal(&format!("the loop after it is `{}`", var_name(*v2))));
            }
            if *e2 != extent_n || *k2 != LoopKind::Serial {
                return Err(illegal("the loops differ in extent or kind"));
            }
            let renamed: Vec<Stmt> = b2.iter().map(|s| s.map_affine(&|a| a.substitute(*second, &Affine::var(var)))).collect();
            let Stmt::Loop { body, .. } = &siblings[at] else { unreachable!() };
            let fused: Vec<Stmt> = body.iter().cloned().chain(renamed).collect();
            independent(var, &fused).map_err(|r| illegal(&r))?;
            siblings.splice(at..at + 2, [Stmt::Loop { var, extent: extent_n, kind: LoopKind::Serial, body: fused }]);
        }
        Step::Accumulators { factor, .. } => {
            let f = *factor;
            if f < 2 || extent_n % f != 0 {
                return Err(ScheduleError::NotDivisible { var: var_name(var), extent: extent_n, factor: f });
            }
            let [Stmt::Store { buffer, offset, value: Expr::Binary(op, acc, e) }] = body.as_slice() else {
                return Err(illegal("the loop is not a reduction `a[k] = op(a[k], ...)`"));
            };
            let identity = match op {
                BinaryOp::Add => 0.0,
                BinaryOp::Mul => 1.0,
                BinaryOp::Max => f64::NEG_INFINITY,
                BinaryOp::Min => f64::INFINITY,
                _ => return Err(illegal("the reduction is not a sum, product, max or min")),
            };
            let target = Expr::Load { buffer: *buffer, offset: offset.clone() };
            if **acc != target || offset.coefficient(var) != 0 {
                return Err(illegal("the loop is not a reduction `a[k] = op(a[k], ...)`"));
            }
            let mut loads = Vec::new();
            loads_of(e, &mut loads);
            if loads.iter().any(|(b, _)| b == buffer) {
                return Err(illegal("the reduced value reads the accumulator"));
            }
            let (op, buffer, offset, e) = (*op, *buffer, offset.clone(), (**e).clone());
            let partials = next_buffer;
            let (k0, k1, k2) = (VarId(fresh), VarId(fresh + 1), VarId(fresh + 2));
            let slot = |k: VarId| offset.scale(f as i64).add_scaled(&Affine::var(k), 1);
            let load = |b: BufferId, a: Affine| Box::new(Expr::Load { buffer: b, offset: a });
            let by = Affine::var(var).scale(f as i64).add_scaled(&Affine::var(k1), 1);
            let step_value = Expr::Binary(op, load(partials, slot(k1)), Box::new(e.map_affine(&|a| a.substitute(var, &by))));
            let combine = Expr::Binary(op, load(buffer, offset.clone()), load(partials, slot(k2)));
            let stmts = vec![
                Stmt::Loop { var: k0, extent: f, kind: LoopKind::Serial, body: vec![Stmt::Store { buffer: partials, offset: slot(k0), value: Expr::Const(identity) }] },
                Stmt::Loop {
                    var,
                    extent: extent_n / f,
                    kind: LoopKind::Serial,
                    body: vec![Stmt::Loop { var: k1, extent: f, kind: LoopKind::Serial, body: vec![Stmt::Store { buffer: partials, offset: slot(k1), value: step_value }] }],
                },
                Stmt::Loop { var: k2, extent: f, kind: LoopKind::Serial, body: vec![Stmt::Store { buffer, offset: offset.clone(), value: combine }] },
            ];
            siblings.splice(at..=at, stmts);
            let name = format!("acc{}", partials.0);
            nest.buffers.push(Buffer { name, kind: BufferKind::Temp, dtype: buffers[buffer.0 as usize].dtype, shape: vec![buffers[buffer.0 as usize].len() * f] });
        }
        Step::Parallel { .. } | Step::Simd { .. } | Step::Vectorize { .. } => {
            let parallel = matches!(step, Step::Parallel { .. });
            if parallel && (enclosing.contains(&LoopKind::Parallel) || contains_kind(body, LoopKind::Parallel)) {
                return Err(illegal("parallel loops do not nest"));
            }
            if !parallel && body.iter().any(|s| matches!(s, Stmt::Loop { .. })) {
                return Err(illegal("only an innermost loop runs in SIMD lanes"));
            }
            independent(var, body).map_err(|r| illegal(&r))?;
            *kind = match step {
                Step::Parallel { .. } => LoopKind::Parallel,
                Step::Simd { .. } => LoopKind::Simd,
                Step::Vectorize { width, .. } => {
                    if !matches!(width, 2 | 4 | 8 | 16) {
                        return Err(illegal("the vector width must be 2, 4, 8 or 16"));
                    }
                    if (*width as usize) > extent_n {
                        return Err(illegal("the loop has fewer iterations than vector lanes"));
                    }
                    let (mut stores, mut loads) = (Vec::new(), Vec::new());
                    collect(body, &mut Vec::new(), &mut stores, &mut loads);
                    // Vectors hold the kernel's compute type; a buffer of another C type would
                    // need conversions the emitter does not make.
                    if stores.iter().chain(&loads).any(|(b, _)| (buffers[b.0 as usize].dtype == DType::F64) != wide) {
                        return Err(illegal("the loop touches buffers of another floating-point type"));
                    }
                    LoopKind::Vector(*width)
                }
                _ => unreachable!(),
            };
        }
        Step::Unroll { factor, .. } => {
            if *factor < 2 {
                return Err(illegal("the unroll factor must be at least 2"));
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

fn max_var(body: &[Stmt]) -> Option<VarId> {
    body.iter()
        .filter_map(|s| match s {
            Stmt::Loop { var, body, .. } => Some(max_var(body).map_or(*var, |m| m.max(*var))),
            Stmt::Store { .. } => None,
        })
        .max()
}
