//! `registers t v`: the temporary `t`, living in loop `v`'s body, is held in local variables —
//! one per scalar element, or one per aligned vector when it is accessed in a vectorized loop —
//! which the compiler keeps in registers (an output tile accumulated across a reduction, a
//! scalar accumulator). Values are unchanged; legal when every access names one local: after
//! `expand` has made the tile's indices constants.

use super::{ScheduleError, Site};
use crate::invariants::register_access;
use crate::ir::{Affine, BufferId, LoopKind, Stmt, VarId};

/// The most local variables a temporary may become (AVX-512 has 32 vector registers).
pub const REGISTER_LIMIT: usize = 32;

pub(crate) fn registers(site: &mut Site, name: &str) -> Result<(), ScheduleError> {
    let (var, _, _, body) = site.loop_ref();
    let id = site.named(name, true)?;
    let b = &site.buffers[id.0 as usize];
    if b.scope != Some(var) || b.registers.is_some() {
        return Err(site.illegal(&format!("`{name}` does not live in this loop's body, or is held in registers already")));
    }
    let mut accesses = Vec::new();
    collect(body, id, None, &mut accesses);
    let mut all = Vec::new();
    body.iter().for_each(|s| s.accesses(id, &mut all));
    if all.len() != accesses.len() {
        return Err(site.illegal(&format!("`{name}` is prefetched")));
    }
    // Vectors when it is accessed in a vectorized loop with its index moving along.
    let lanes = accesses.iter().find_map(|(vector, a, _)| vector.filter(|(v, _, _)| a.coefficient(*v) != 0).map(|(_, _, w)| w)).unwrap_or(1);
    for (vector, a, store) in &accesses {
        register_access(lanes, *vector, a, *store).map_err(|r| site.illegal(&r))?;
    }
    let b = &site.buffers[id.0 as usize];
    if !b.len().is_multiple_of(lanes as usize) || b.len() / lanes as usize > REGISTER_LIMIT {
        return Err(site.illegal(&format!("{} elements of `{name}` are not {lanes}-lane locals, {REGISTER_LIMIT} at most", b.len())));
    }
    site.buffers[id.0 as usize].registers = Some(lanes);
    Ok(())
}

/// Every access of `buffer` in `body`: the vectorized loop it is in (variable, extent, lanes),
/// its index, and whether it is a store.
fn collect(body: &[Stmt], buffer: BufferId, vector: Option<(VarId, usize, u32)>, out: &mut Vec<(Option<(VarId, usize, u32)>, Affine, bool)>) {
    for s in body {
        match s {
            Stmt::Loop { var, extent, kind, body } => {
                let inside = match kind {
                    LoopKind::Vector(w) | LoopKind::Stream(w) => Some((*var, *extent, *w)),
                    _ => vector,
                };
                collect(body, buffer, inside, out);
            }
            Stmt::Store { buffer: b, offset, value } => {
                if *b == buffer {
                    out.push((vector, offset.clone(), true));
                }
                let mut loads = Vec::new();
                value.loads(buffer, &mut loads);
                out.extend(loads.into_iter().map(|a| (vector, a, false)));
            }
            Stmt::Prefetch { .. } => {}
        }
    }
}
