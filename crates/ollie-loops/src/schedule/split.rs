//! `split v f`: `for v in 0..n` becomes `for v in 0..n/f { for w in 0..f }` with `v ↦ f·v + w`.
//! The order of iterations is unchanged, so it is legal whenever `f` divides `n`.

use super::{ScheduleError, Site};
use crate::ir::{Affine, LoopKind, Stmt, VarId};

pub(crate) fn split(site: &mut Site, factor: usize) -> Result<(), ScheduleError> {
    let inner = VarId(site.fresh);
    let Stmt::Loop { var, extent, body, .. } = &mut site.siblings[site.at] else { unreachable!("steps apply to loops") };
    if factor < 2 || *extent % factor != 0 {
        return Err(ScheduleError::NotDivisible { var: var.to_string(), extent: *extent, factor });
    }
    let by = Affine::var(*var).scale(factor as i64).add_scaled(&Affine::var(inner), 1);
    let inner_body = body.iter().map(|s| s.map_affine(&|a| a.substitute(*var, &by))).collect();
    *body = vec![Stmt::Loop { var: inner, extent: factor, kind: LoopKind::Serial, body: inner_body }];
    *extent /= factor;
    Ok(())
}
