//! `distribute v`: a loop whose body has several statements becomes one loop per statement
//! (loop fission); the copies after the first get fresh variables. Legal when the iterations are
//! independent and no temporary lives in the loop.

use super::deps::independent;
use super::{ScheduleError, Site};
use crate::ir::{Affine, LoopKind, Stmt, VarId};

pub(crate) fn distribute(site: &mut Site) -> Result<(), ScheduleError> {
    let fresh = site.fresh;
    let (var, extent, _, body) = site.loop_ref();
    if body.len() < 2 {
        return Err(site.illegal("the loop's body is a single statement"));
    }
    independent(var, extent, body, site.buffers).map_err(|r| site.illegal(&r))?;
    site.no_temporary_lives_in(var)?;
    let stmts = std::mem::take(site.the_loop().3);
    let loops: Vec<Stmt> = stmts
        .into_iter()
        .enumerate()
        .map(|(k, s)| {
            let v = if k == 0 { var } else { VarId(fresh + k as u32 - 1) };
            let s = s.map_affine(&|a| a.substitute(var, &Affine::var(v)));
            Stmt::Loop { var: v, extent, kind: LoopKind::Serial, body: vec![s] }
        })
        .collect();
    let at = site.at;
    site.siblings.splice(at..=at, loops);
    Ok(())
}
