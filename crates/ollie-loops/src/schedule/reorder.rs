//! `reorder v w`: swaps a loop with a loop directly inside it (interchange); statements beside
//! the inner loop move to loops of their own before and after it (distribution). Legal when the
//! outer loop's iterations are independent: every dependence is then carried by the inner loop
//! alone, and keeps its direction.

use super::deps::independent;
use super::{ScheduleError, Site};
use crate::ir::{Affine, LoopKind, Stmt, VarId};

pub(crate) fn reorder(site: &mut Site, inner: VarId) -> Result<(), ScheduleError> {
    let fresh = site.fresh;
    let (var, extent, _, body) = site.loop_ref();
    let Some(k) = body.iter().position(|s| matches!(s, Stmt::Loop { var, .. } if *var == inner)) else {
        return Err(site.illegal(&format!("`{}` is not a loop directly inside it", inner)));
    };
    if !matches!(&body[k], Stmt::Loop { kind: LoopKind::Serial, .. }) {
        return Err(site.illegal("the inner loop is not serial"));
    }
    independent(var, extent, body, site.buffers).map_err(|r| site.illegal(&r))?;
    site.no_temporary_lives_in(var)?;
    // Statements beside the inner loop keep their order in loops of their own (fresh
    // variables): legal, as the iterations are independent.
    let mut stmts = std::mem::take(site.the_loop().3);
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
        Some(Stmt::Loop { var: v, extent, kind: LoopKind::Serial, body })
    };
    let (before, after) = (copy(before), copy(after));
    let swapped = Stmt::Loop { var: v2, extent: e2, kind: LoopKind::Serial, body: vec![Stmt::Loop { var, extent, kind: LoopKind::Serial, body: b2 }] };
    let replacement: Vec<Stmt> = before.into_iter().chain([swapped]).chain(after).collect();
    let at = site.at;
    site.siblings.splice(at..=at, replacement);
    Ok(())
}
