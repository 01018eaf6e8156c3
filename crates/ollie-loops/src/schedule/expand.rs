//! `expand v`: the loop is replaced by one copy of its body per iteration, `v` a constant in
//! each (full unrolling in the IR, not a compiler hint), the loops inside each copy after the
//! first on fresh variables. An output tile's indices become constants, so `registers` can hold
//! it; `reorder` first, then `expand`, is unroll-and-jam. The order of iterations is unchanged,
//! so it is always legal; the copies are bounded.

use super::fold::loop_vars;
use super::{ScheduleError, Site};
use crate::ir::{Affine, Stmt, VarId};

/// The most iterations a loop may be expanded into.
pub const EXPAND_LIMIT: usize = 64;

/// The most statements (loops, stores, prefetches) the copies may hold together.
const STATEMENT_LIMIT: usize = 4096;

pub(crate) fn expand(site: &mut Site) -> Result<(), ScheduleError> {
    let fresh = site.fresh;
    let (var, extent, _, body) = site.loop_ref();
    if extent > EXPAND_LIMIT {
        return Err(site.illegal(&format!("{extent} iterations are more than the {EXPAND_LIMIT} a loop may be expanded into")));
    }
    if extent * body.iter().map(count).sum::<usize>() > STATEMENT_LIMIT {
        return Err(site.illegal(&format!("the copies would hold more than {STATEMENT_LIMIT} statements")));
    }
    let mut inner = Vec::new();
    loop_vars(body, &mut inner);
    if let Some(b) = site.buffers.iter().find(|b| b.scope.is_some_and(|s| s == var || inner.contains(&s))) {
        return Err(site.illegal(&format!("temporary `{}` lives in the loop", b.name)));
    }
    let mut copies = Vec::new();
    for i in 0..extent {
        // Inner loops of the first copy keep their variables; the others get fresh ones.
        let first = fresh + (i.max(1) - 1) as u32 * inner.len() as u32;
        let renamed: Vec<(VarId, VarId)> = match i {
            0 => Vec::new(),
            _ => inner.iter().enumerate().map(|(k, v)| (*v, VarId(first + k as u32))).collect(),
        };
        for s in body {
            let s = s.map_affine(&|a| a.substitute(var, &Affine::constant(i as i64)));
            copies.push(renamed.iter().fold(s, |s, (from, to)| rename(&s, *from, *to)));
        }
    }
    let at = site.at;
    site.siblings.splice(at..=at, copies);
    Ok(())
}

fn count(s: &Stmt) -> usize {
    match s {
        Stmt::Loop { body, .. } => 1 + body.iter().map(count).sum::<usize>(),
        Stmt::Store { .. } | Stmt::Prefetch { .. } => 1,
    }
}

/// `s` with loop variable `from` called `to`, in its loops and every index.
pub(super) fn rename(s: &Stmt, from: VarId, to: VarId) -> Stmt {
    match s.map_affine(&|a| a.substitute(from, &Affine::var(to))) {
        Stmt::Loop { var, extent, kind, body } => {
            let var = if var == from { to } else { var };
            Stmt::Loop { var, extent, kind, body: body.iter().map(|s| rename(s, from, to)).collect() }
        }
        other => other,
    }
}
