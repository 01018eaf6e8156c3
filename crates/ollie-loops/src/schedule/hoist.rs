//! `hoist v`: the loop moves before the statement right before it (statement reordering). Legal
//! when neither reads or writes a buffer the other writes: either order computes the same values.
//! It brings together loops that `fuse` can then join — two reductions over the same rows with
//! an elementwise loop between them become adjacent, and one pass.

use super::deps::apart;
use super::{ScheduleError, Site};

pub(crate) fn hoist(site: &mut Site) -> Result<(), ScheduleError> {
    let at = site.at;
    if at == 0 {
        return Err(site.illegal("no statement comes before it"));
    }
    apart(std::slice::from_ref(&site.siblings[at - 1]), std::slice::from_ref(&site.siblings[at]), site.buffers).map_err(|r| site.illegal(&r))?;
    site.siblings.swap(at - 1, at);
    Ok(())
}
