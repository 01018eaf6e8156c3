//! `rfactor v P`: a reduction loop `a[k] = op(a[k], e)` split into `P` contiguous chunks, each
//! reduced into a partial result of its own (a new temporary), then a combine step: the loop over
//! chunks (a new variable) has independent iterations, so `parallel` can run the chunks on
//! threads — a reduction on both cores. The chunk's own loop keeps the variable `v` (and can take
//! `accumulators` and `vectorize`). Floating-point reassociation, as `accumulators`.

use super::accumulators::{partials, reduction, Reduction};
use super::{ScheduleError, Site};
use crate::ir::{Affine, BufferId, Expr, LoopKind, Stmt, VarId};

pub(crate) fn rfactor(site: &mut Site, chunks: usize) -> Result<(), ScheduleError> {
    let fresh = site.fresh;
    let (var, extent, _, _) = site.loop_ref();
    if chunks < 2 || extent % chunks != 0 || chunks == extent {
        return Err(ScheduleError::NotDivisible { var: var.to_string(), extent, factor: chunks });
    }
    let Reduction { op, identity, buffer, offset, value } = reduction(site)?;
    let partials = partials(site, buffer, chunks)?;
    let (chunk, k) = (VarId(fresh), VarId(fresh + 1));
    let slot = |c: VarId| offset.scale(chunks as i64).add_scaled(&Affine::var(c), 1);
    let load = |b: BufferId, a: Affine| Box::new(Expr::Load { buffer: b, offset: a });
    let len = extent / chunks;
    let by = Affine::var(chunk).scale(len as i64).add_scaled(&Affine::var(var), 1);
    let step_value = Expr::Binary(op, load(partials, slot(chunk)), Box::new(value.map_affine(&|a| a.substitute(var, &by))));
    let combine = Expr::Binary(op, load(buffer, offset.clone()), load(partials, slot(k)));
    let one = |v: VarId, extent: usize, body: Vec<Stmt>| Stmt::Loop { var: v, extent, kind: LoopKind::Serial, body };
    let stmts = vec![
        one(chunk, chunks, vec![Stmt::Store { buffer: partials, offset: slot(chunk), value: Expr::Const(identity) }, one(var, len, vec![Stmt::Store { buffer: partials, offset: slot(chunk), value: step_value }])]),
        one(k, chunks, vec![Stmt::Store { buffer, offset: offset.clone(), value: combine }]),
    ];
    let at = site.at;
    site.siblings.splice(at..=at, stmts);
    Ok(())
}
