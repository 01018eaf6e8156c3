//! `accumulators v f`: a reduction loop `a[k] = op(a[k], e)` accumulates into `f` partial
//! results (a new temporary, living where `a` lives), combined after the loop: floating-point
//! reassociation, which lets the partials run in SIMD lanes. A loop of several reductions into
//! accumulators of their own (a sum and a sum of squares fused into one pass) gets partials for
//! each; elementwise statements beside them (`y = x * g` stored while `sum(y * y)` accumulates)
//! run along in the same lanes.

use ollie_graph::BinaryOp;

use super::{ScheduleError, Site};
use crate::ir::{Affine, Buffer, BufferId, BufferKind, Expr, LoopKind, Stmt, VarId};

/// A reduction loop's one statement, `buffer[offset] = op(buffer[offset], value)`, with the
/// identity of `op`.
pub(crate) struct Reduction {
    pub op: BinaryOp,
    pub identity: f64,
    pub buffer: BufferId,
    pub offset: Affine,
    pub value: Expr,
}

/// The loop's reduction, or why it is not one that `accumulators` and `rfactor` can split.
pub(crate) fn reduction(site: &Site) -> Result<Reduction, ScheduleError> {
    let mut all = reductions(site)?;
    match all.len() {
        1 if matches!(all[0], Part::Reduce(_)) => match all.remove(0) {
            Part::Reduce(r) => Ok(r),
            Part::Plain(_) => unreachable!("matched"),
        },
        _ => Err(site.illegal("the loop is not a reduction `a[k] = op(a[k], ...)`")),
    }
}

/// A statement of a loop `accumulators` splits: a reduction, or an elementwise statement
/// running along (each iteration storing its own elements).
pub(crate) enum Part {
    Reduce(Reduction),
    Plain(Stmt),
}

/// The loop's statements: reductions, each into an accumulator of its own that no statement
/// reads, and elementwise statements whose iterations are independent (a reduction may read
/// what they store in its own iteration: `y = f(x); s += y * y`); or why they are not.
pub(crate) fn reductions(site: &Site) -> Result<Vec<Part>, ScheduleError> {
    let (var, extent, _, body) = site.loop_ref();
    let not_a_reduction = "the loop is not a reduction `a[k] = op(a[k], ...)`";
    let mut out: Vec<Part> = Vec::new();
    let mut accumulators: Vec<BufferId> = Vec::new();
    for s in body {
        let reduce = match s {
            Stmt::Store { buffer, offset, value: Expr::Binary(op, acc, e) } if offset.coefficient(var) == 0 && **acc == (Expr::Load { buffer: *buffer, offset: offset.clone() }) => Some((*op, *buffer, offset, e)),
            _ => None,
        };
        match reduce {
            Some((op, buffer, offset, e)) => {
                let Some(identity) = super::splitk::identity(op) else {
                    return Err(site.illegal("the reduction is not a sum, product, max or min"));
                };
                if accumulators.contains(&buffer) {
                    return Err(site.illegal(not_a_reduction));
                }
                accumulators.push(buffer);
                out.push(Part::Reduce(Reduction { op, identity, buffer, offset: offset.clone(), value: (**e).clone() }));
            }
            None => out.push(Part::Plain(s.clone())),
        }
    }
    if accumulators.is_empty() {
        return Err(site.illegal(not_a_reduction));
    }
    let mut loads = Vec::new();
    for p in &out {
        match p {
            Part::Reduce(r) => r.value.every_load(&mut loads),
            Part::Plain(s) => super::deps::collect(std::slice::from_ref(s), &mut Vec::new(), &mut Vec::new(), &mut loads),
        }
    }
    if loads.iter().any(|(b, _)| accumulators.contains(b)) {
        return Err(site.illegal("the reduced value reads the accumulator"));
    }
    if out.iter().any(|p| matches!(p, Part::Plain(_))) {
        super::deps::independent_in(var, extent, body, site.buffers, |b| !accumulators.contains(&b)).map_err(|r| site.illegal(&r))?;
    }
    Ok(out)
}

/// A new temporary of `f` partial results per element of `of`, living where `of` lives (within
/// the stack's limit when that is a loop).
pub(crate) fn partials(site: &mut Site, of: BufferId, f: usize) -> Result<BufferId, ScheduleError> {
    let id = BufferId(site.buffers.len() as u32);
    let of = &site.buffers[of.0 as usize];
    let acc = Buffer { name: format!("acc{}", id.0), kind: BufferKind::Temp, dtype: of.dtype, shape: vec![of.len() * f], scope: of.scope, registers: None };
    if acc.scope.is_some() {
        super::fold::fits_stack(site, acc.bytes())?;
    }
    site.buffers.push(acc);
    Ok(id)
}

pub(crate) fn accumulators(site: &mut Site, f: usize) -> Result<(), ScheduleError> {
    let fresh = site.fresh;
    let (var, extent, _, _) = site.loop_ref();
    if f < 2 || extent % f != 0 {
        return Err(ScheduleError::NotDivisible { var: var.to_string(), extent, factor: f });
    }
    let all = reductions(site)?;
    let (k0, k1, k2) = (VarId(fresh), VarId(fresh + 1), VarId(fresh + 2));
    let load = |b: BufferId, a: Affine| Box::new(Expr::Load { buffer: b, offset: a });
    let by = Affine::var(var).scale(f as i64).add_scaled(&Affine::var(k1), 1);
    let (mut init, mut step, mut combine) = (Vec::new(), Vec::new(), Vec::new());
    for part in all {
        let Reduction { op, identity, buffer, offset, value: e } = match part {
            Part::Reduce(r) => r,
            Part::Plain(s) => {
                step.push(s.map_affine(&|a| a.substitute(var, &by)));
                continue;
            }
        };
        let partials = partials(site, buffer, f)?;
        let slot = |k: VarId| offset.scale(f as i64).add_scaled(&Affine::var(k), 1);
        init.push(Stmt::Store { buffer: partials, offset: slot(k0), value: Expr::Const(identity) });
        let value = Expr::Binary(op, load(partials, slot(k1)), Box::new(e.map_affine(&|a| a.substitute(var, &by))));
        step.push(Stmt::Store { buffer: partials, offset: slot(k1), value });
        combine.push(Stmt::Store { buffer, offset: offset.clone(), value: Expr::Binary(op, load(buffer, offset.clone()), load(partials, slot(k2))) });
    }
    let one = |v: VarId, extent: usize, body: Vec<Stmt>| Stmt::Loop { var: v, extent, kind: LoopKind::Serial, body };
    let stmts = vec![one(k0, f, init), one(var, extent / f, vec![one(k1, f, step)]), one(k2, f, combine)];
    let at = site.at;
    site.siblings.splice(at..=at, stmts);
    Ok(())
}
