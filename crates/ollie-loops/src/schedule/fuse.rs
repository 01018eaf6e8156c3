//! `fuse v w`: a loop and the loop right after it, over the same extent, become one loop running
//! both bodies: the producer's iteration is computed at the consumer's (compute-at at that
//! level). Each body still runs its own iterations in order, interleaved with the other's, so
//! only the buffers that tie the two bodies (one writes what the other touches) are asked about:
//! their accesses must be independent across the fused iterations (each iteration touches only
//! elements of its own). Two reductions over the same rows into different accumulators fuse
//! (nothing ties them), and so does an elementwise producer with the reduction consuming it
//! element by element (`d = a - b` then `s += d * d`: the reduction's accumulator ties nothing).
//! A temporary living in the second loop lives in the fused one.

use super::deps::{independent_in, shared};
use super::{ScheduleError, Site};
use crate::ir::{Affine, LoopKind, Stmt, VarId};

pub(crate) fn fuse(site: &mut Site, second: VarId) -> Result<(), ScheduleError> {
    let (var, extent, _, body) = site.loop_ref();
    let Some(Stmt::Loop { var: v2, extent: e2, kind: k2, body: b2 }) = site.siblings.get(site.at + 1) else {
        return Err(site.illegal("no loop follows it"));
    };
    if *v2 != second {
        return Err(site.illegal(&format!("the loop after it is `{}`", (*v2))));
    }
    if *e2 != extent || *k2 != LoopKind::Serial {
        return Err(site.illegal("the loops differ in extent or kind"));
    }
    let split = body.len();
    let renamed = b2.iter().map(|s| s.map_affine(&|a| a.substitute(second, &Affine::var(var))));
    let fused: Vec<Stmt> = body.iter().cloned().chain(renamed).collect();
    // The second loop's temporaries count as the fused loop's own.
    let scoped: Vec<usize> = (0..site.buffers.len()).filter(|&b| site.buffers[b].scope == Some(second)).collect();
    for &b in &scoped {
        site.buffers[b].scope = Some(var);
    }
    let ties = shared(&fused[..split], &fused[split..]);
    if let Err(reason) = independent_in(var, extent, &fused, site.buffers, |b| ties.contains(&b)) {
        for &b in &scoped {
            site.buffers[b].scope = Some(second);
        }
        return Err(site.illegal(&reason));
    }
    let at = site.at;
    site.siblings.splice(at..at + 2, [Stmt::Loop { var, extent, kind: LoopKind::Serial, body: fused }]);
    Ok(())
}
