//! `prefetch v o`: the vectorized loop `v` prefetches, for each contiguous load of an input that
//! moves with the enclosing loop `o`, the element the next iteration of `o` will load in its
//! place: while one row is computed from the cache, the next streams in from memory (the hardware
//! prefetcher does not look past the row a loop is reading). A prefetch changes no value and
//! never faults (the last iteration's lies past the input), so it is legal wherever such a load
//! exists.

use super::{ScheduleError, Site};
use crate::emit::var_name;
use crate::ir::{Affine, BufferKind, LoopKind, Stmt, VarId};

pub(crate) fn prefetch(site: &mut Site, along: VarId) -> Result<(), ScheduleError> {
    let (var, _, kind, body) = site.loop_ref();
    if !matches!(kind, LoopKind::Vector(_) | LoopKind::Stream(_)) {
        return Err(site.illegal("the loop is not vectorized"));
    }
    if !site.enclosing.iter().any(|(v, _)| *v == along) {
        return Err(site.illegal(&format!("`{}` is not a loop around it", var_name(along))));
    }
    let mut loads = Vec::new();
    for s in body {
        if let Stmt::Store { value, .. } = s {
            value.every_load(&mut loads);
        }
    }
    let mut prefetches: Vec<Stmt> = Vec::new();
    for (buffer, offset) in loads {
        let c = offset.coefficient(along);
        if matches!(site.buffers[buffer.0 as usize].kind, BufferKind::Input(_)) && offset.coefficient(var) == 1 && c != 0 {
            let p = Stmt::Prefetch { buffer, offset: offset.add_scaled(&Affine::constant(c), 1) };
            if !prefetches.contains(&p) && !body.contains(&p) {
                prefetches.push(p);
            }
        }
    }
    if prefetches.is_empty() {
        return Err(site.illegal(&format!("no contiguous load of an input moves with `{}`", var_name(along))));
    }
    let body = site.the_loop().3;
    body.splice(0..0, prefetches);
    Ok(())
}
