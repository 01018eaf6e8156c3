//! `stream v`: a vectorized loop's contiguous stores to outputs bypass the caches (non-temporal
//! stores, then a store fence): a large output written once then costs its bytes once, without
//! the read for ownership an ordinary store pays. Legal on a float `vectorize`d loop with such a
//! store to an output the kernel never reads; the values stored are unchanged.

use super::{ScheduleError, Site};
use crate::ir::{BufferId, BufferKind, LoopKind, Stmt};

/// `read`: every buffer the kernel reads.
pub(crate) fn stream(site: &mut Site, read: &[BufferId]) -> Result<(), ScheduleError> {
    let (var, _, kind, body) = site.loop_ref();
    let LoopKind::Vector(width) = kind else {
        return Err(site.illegal("the loop is not vectorized"));
    };
    if site.wide {
        return Err(site.illegal("the kernel computes in double"));
    }
    let streams = body.iter().any(|s| {
        matches!(s, Stmt::Store { buffer, offset, .. }
            if matches!(site.buffers[buffer.0 as usize].kind, BufferKind::Output(_)) && offset.coefficient(var) == 1 && !read.contains(buffer))
    });
    if !streams {
        return Err(site.illegal("no contiguous store to an output the kernel does not read"));
    }
    *site.the_loop().2 = LoopKind::Stream(width);
    Ok(())
}
