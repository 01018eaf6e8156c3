//! `merge v`: loop `v` and the loop directly inside it, its whole body, become one loop over
//! both extents — where every index moves with `v` exactly `n` times as fast as with the inner
//! loop of `n` iterations (`n·c·v + c·w`, which becomes `c·v`): the rows of a row-major array
//! walked as one run, such as a 7 × 7 feature map pooled whole or the 56 × 56 positions of a
//! 1×1 convolution as one axis of 3,136. The iterations run in the same order, so it is legal
//! wherever the indices allow it (and no temporary lives in either loop).

use std::cell::Cell;

use super::{ScheduleError, Site};
use crate::ir::{Affine, LoopKind, Stmt};

pub(crate) fn merge(site: &mut Site) -> Result<(), ScheduleError> {
    let (var, extent, _, body) = site.loop_ref();
    let [Stmt::Loop { var: inner, extent: n, kind: LoopKind::Serial, body: inner_body }] = body.as_slice() else {
        return Err(site.illegal("the loop's body is not a single serial loop"));
    };
    let (inner, n) = (*inner, *n);
    site.no_temporary_lives_in(var)?;
    site.no_temporary_lives_in(inner)?;
    let linear = Cell::new(true);
    inner_body.iter().for_each(|s| {
        s.map_affine(&|a| {
            linear.set(linear.get() && a.coefficient(var) == n as i64 * a.coefficient(inner));
            a.clone()
        });
    });
    if !linear.get() {
        return Err(site.illegal(&format!("an index does not move with `{var}` {n} times as fast as with `{inner}`")));
    }
    let merged: Vec<Stmt> = inner_body.iter().map(|s| s.map_affine(&|a| a.substitute(var, &Affine::constant(0)).substitute(inner, &Affine::var(var)))).collect();
    let Stmt::Loop { extent: e, body, .. } = &mut site.siblings[site.at] else { unreachable!("steps apply to loops") };
    *e = extent * n;
    *body = merged;
    Ok(())
}
