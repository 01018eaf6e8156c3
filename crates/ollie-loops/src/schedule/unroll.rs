//! `unroll v f`: asks the compiler to unroll the loop by `f` (a pragma; the order of iterations
//! is unchanged, so it is always legal).

use super::{ScheduleError, Site};
use crate::ir::LoopKind;

pub(crate) fn unroll(site: &mut Site, factor: u32) -> Result<(), ScheduleError> {
    if factor < 2 {
        return Err(site.illegal("the unroll factor must be at least 2"));
    }
    *site.the_loop().2 = LoopKind::Unrolled(factor);
    Ok(())
}
