//! `prefetch v o`: the vectorized loop `v` prefetches, for each contiguous load of an input that
//! moves with the enclosing loop `o`, the element the next iteration of `o` will load in its
//! place: while one row is computed from the cache, the next streams in from memory (the hardware
//! prefetcher does not look past the row a loop is reading). A prefetch changes no value and
//! never faults (the last iteration's lies past the input), so it is legal wherever such a load
//! exists. A gather of a row (contiguous along the vectorized loop, at indices that move with
//! `o`) prefetches the row the next iteration of `o` gathers: its indices read there, at
//! offsets clamped into their buffers (`Stmt::Prefetch`).

use super::{ScheduleError, Site};
use crate::ir::{Affine, BufferId, BufferKind, Dynamic, Expr, LoopKind, Stmt, VarId};

/// Every gather in `e`: its buffer, offset and indices.
fn every_gather(e: &Expr, out: &mut Vec<(BufferId, Affine, Vec<Dynamic>)>) {
    if let Expr::Gather { buffer, offset, indices } = e {
        out.push((*buffer, offset.clone(), indices.clone()));
    }
    let _ = e.map_operands(|x| {
        every_gather(x, out);
        x.clone()
    });
}

pub(crate) fn prefetch(site: &mut Site, along: VarId) -> Result<(), ScheduleError> {
    let (var, _, kind, body) = site.loop_ref();
    if !matches!(kind, LoopKind::Vector(_) | LoopKind::Stream(_)) {
        return Err(site.illegal("the loop is not vectorized"));
    }
    if !site.enclosing.iter().any(|(v, _)| *v == along) {
        return Err(site.illegal(&format!("`{}` is not a loop around it", along)));
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
            let p = Stmt::Prefetch { buffer, offset: offset.add_scaled(&Affine::constant(c), 1), indices: Vec::new() };
            if !prefetches.contains(&p) && !body.contains(&p) {
                prefetches.push(p);
            }
        }
    }
    let mut gathers = Vec::new();
    for s in body {
        if let Stmt::Store { value, .. } = s {
            every_gather(value, &mut gathers);
        }
    }
    let next = |a: &Affine| a.substitute(along, &Affine::var(along).add_scaled(&Affine::constant(1), 1));
    for (buffer, offset, indices) in gathers {
        let row = offset.coefficient(var) == 1 && !indices.iter().any(|d| d.value.depends_on(var)) && indices.iter().any(|d| d.value.depends_on(along));
        let mut loads = Vec::new();
        indices.iter().for_each(|d| d.value.every_load(&mut loads));
        if row && loads.iter().all(|(b, _)| matches!(site.buffers[b.0 as usize].kind, BufferKind::Input(_))) {
            let p = Stmt::Prefetch { buffer, offset: next(&offset), indices: indices.iter().map(|d| d.map_affine(&next)).collect() };
            if !prefetches.contains(&p) && !body.contains(&p) {
                prefetches.push(p);
            }
        }
    }
    if prefetches.is_empty() {
        return Err(site.illegal(&format!("no contiguous load or gathered row of an input moves with `{}`", along)));
    }
    let body = site.the_loop().3;
    body.splice(0..0, prefetches);
    Ok(())
}
