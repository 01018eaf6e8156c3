//! `join v`: the parallel loop `v` shares out the iterations of the loop directly inside it too
//! (OpenMP's `collapse`, as one loop over both extents with the indices recovered by division):
//! an outer extent too small to keep every core busy — a batch of 1, 3 heads on 2 cores —
//! becomes the product of both. Repeated, it joins the next loop down. Legal when that loop is
//! the whole body of the loops joined so far, its iterations are independent, and no temporary
//! lives in the loops joined so far (their iterations are no longer run one by one).

use super::deps::independent;
use super::{ScheduleError, Site};
use crate::ir::{LoopKind, Stmt};

pub(crate) fn join(site: &mut Site) -> Result<(), ScheduleError> {
    let (var, _, kind, mut body) = site.loop_ref();
    if kind != LoopKind::Parallel {
        return Err(site.illegal("the loop is not parallel"));
    }
    site.no_temporary_lives_in(var)?;
    // Past the loops joined already.
    let mut depth = 0;
    while let [Stmt::Loop { var, kind: LoopKind::Joined, body: inner, .. }] = body.as_slice() {
        site.no_temporary_lives_in(*var)?;
        body = inner;
        depth += 1;
    }
    let [Stmt::Loop { var: inner, extent: inner_extent, kind: LoopKind::Serial, body: inner_body }] = body.as_slice() else {
        return Err(site.illegal("the loop's body is not a single serial loop"));
    };
    independent(*inner, *inner_extent, inner_body, site.buffers).map_err(|r| site.illegal(&r))?;
    let mut body = site.the_loop().3;
    for _ in 0..depth {
        let Stmt::Loop { body: inner, .. } = &mut body[0] else { unreachable!("walked above") };
        body = inner;
    }
    let Stmt::Loop { kind, .. } = &mut body[0] else { unreachable!("matched above") };
    *kind = LoopKind::Joined;
    Ok(())
}
