//! `hoist v` and `sink v`: the loop moves before the statement right before it, or after the
//! statement right after it (statement reordering). Legal when neither reads or writes a buffer
//! the other writes: either order computes the same values. They bring together loops that
//! `fuse` can then join — two reductions over the same rows with an elementwise loop between
//! them become adjacent, and one pass; an elementwise loop sunk past the initialization of the
//! reduction consuming it meets that reduction.

use super::deps::apart;
use super::{ScheduleError, Site};

pub(crate) fn hoist(site: &mut Site) -> Result<(), ScheduleError> {
    let at = site.at;
    if at == 0 {
        return Err(site.illegal("no statement comes before it"));
    }
    swap(site, at - 1)
}

pub(crate) fn sink(site: &mut Site) -> Result<(), ScheduleError> {
    let at = site.at;
    if at + 1 >= site.siblings.len() {
        return Err(site.illegal("no statement comes after it"));
    }
    swap(site, at)
}

/// Swaps the statements at `first` and `first + 1` when they are apart.
fn swap(site: &mut Site, first: usize) -> Result<(), ScheduleError> {
    apart(std::slice::from_ref(&site.siblings[first]), std::slice::from_ref(&site.siblings[first + 1]), site.buffers).map_err(|r| site.illegal(&r))?;
    site.siblings.swap(first, first + 1);
    Ok(())
}
