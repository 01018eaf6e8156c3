//! `parallel v`: the iterations run on several threads (OpenMP `parallel for`). Legal when
//! iterations write disjoint elements and read no element another iteration writes (temporaries
//! living in the loop are each thread's own), and no parallel loop is around or inside it.

use super::deps::{contains_kind, independent};
use super::{ScheduleError, Site};
use crate::ir::LoopKind;

pub(crate) fn parallel(site: &mut Site) -> Result<(), ScheduleError> {
    let (var, extent, _, body) = site.loop_ref();
    if site.enclosing.iter().any(|(_, k)| *k == LoopKind::Parallel) || contains_kind(body, LoopKind::Parallel) {
        return Err(site.illegal("parallel loops do not nest"));
    }
    independent(var, extent, body, site.buffers).map_err(|r| site.illegal(&r))?;
    *site.the_loop().2 = LoopKind::Parallel;
    Ok(())
}
