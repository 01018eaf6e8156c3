//! `peel v`: the loop split into its border and interior iterations by the guards that move
//! with it ([`Expr::Within`], as `guard` makes them): the interior, on `v`, runs the longest run
//! of iterations where every such guard is decided for all values of the other loops (it holds
//! for all, or fails for all) — its guards gone, the values read unguarded, so that it
//! vectorizes and tiles — and the iterations before and after it run in loops of their own
//! (fresh variables, the loops inside them too), keeping the guards they still need. A convolution's output positions whose window lies inside the image run
//! apart from the few whose window reaches into the padding.
//!
//! `peel v m` cuts the interior to a multiple of `m`, the rest joining the last border; without
//! guards, that is a loop split into whole blocks of `m` and a remainder (an output of 1599
//! positions tiled in blocks of 48, the last 15 apart).
//!
//! The iterations keep their order, so it is always legal; refused where nothing would change
//! (no guard moves with the loop, nor a multiple leaves a remainder), where no iteration is free
//! of the guards, or where a temporary lives in the loop.

use super::expand::rename;
use super::fold::{inner_extents, loop_vars};
use super::{ScheduleError, Site};
use crate::ir::{Affine, Expr, LoopKind, Stmt, VarId};

pub(crate) fn peel(site: &mut Site, outer: &[(VarId, usize)], multiple: usize) -> Result<(), ScheduleError> {
    let fresh = site.fresh;
    let (var, extent, _, body) = site.loop_ref();
    let mut inner = Vec::new();
    loop_vars(body, &mut inner);
    if let Some(b) = site.buffers.iter().find(|b| b.scope.is_some_and(|s| s == var || inner.contains(&s))) {
        return Err(site.illegal(&format!("temporary `{}` lives in the loop", b.name)));
    }
    let mut extents: Vec<(VarId, usize)> = outer.to_vec();
    extents.extend(inner_extents(body));
    let mut guards = Vec::new();
    body.iter().for_each(|s| guards_of(s, &mut guards));
    guards.retain(|(index, _, _)| index.coefficient(var) != 0);
    if guards.is_empty() && (multiple < 2 || extent.is_multiple_of(multiple)) {
        return Err(site.illegal(&format!("no guard moves with the loop{}", if multiple > 1 { format!(", and {multiple} divides its {extent} iterations") } else { String::new() })));
    }
    // The iterations where every guard is decided whatever the other loops (holds for all of
    // them, or fails for all): the longest run of them is the interior.
    let others: Vec<(VarId, usize)> = extents.iter().filter(|(v, _)| *v != var).copied().collect();
    let spans: Vec<(i64, i64, i64, i64, i64)> = guards
        .iter()
        .map(|(index, lo, hi)| {
            let c = index.coefficient(var);
            let (min, max) = index.add_scaled(&Affine::var(var), -c).range(&others);
            (c, min, max, *lo, *hi)
        })
        .collect();
    let decided = |i: i64| spans.iter().all(|&(c, min, max, lo, hi)| {
        let (min, max) = (c * i + min, c * i + max);
        (lo <= min && max < hi) || max < lo || hi <= min
    });
    let (mut best, mut run) = ((0i64, -1i64), None);
    for i in 0..=extent as i64 {
        match (i < extent as i64 && decided(i), run) {
            (true, None) => run = Some(i),
            (false, Some(start)) => {
                if i - start > best.1 - best.0 + 1 {
                    best = (start, i - 1);
                }
                run = None;
            }
            _ => {}
        }
    }
    let (first, last) = best;
    if first > last {
        return Err(site.illegal("no iteration is free of the guards that move with the loop"));
    }
    let (first, mut last) = (first as usize, last as usize);
    if multiple > 1 {
        let whole = (last + 1 - first) / multiple * multiple;
        if whole == 0 {
            return Err(site.illegal(&format!("the interior has fewer than {multiple} iterations")));
        }
        last = first + whole - 1;
    }
    let parts = [(0, first), (first, last + 1), (last + 1, extent)];
    let mut loops = Vec::new();
    let mut next = fresh;
    for (k, &(start, end)) in parts.iter().enumerate() {
        if start == end {
            continue;
        }
        // The interior keeps the loop's variables; a border gets fresh ones.
        let renamed: Vec<(VarId, VarId)> = if k == 1 {
            Vec::new()
        } else {
            let r = std::iter::once(var).chain(inner.iter().copied()).enumerate().map(|(j, v)| (v, VarId(next + j as u32))).collect();
            next += 1 + inner.len() as u32;
            r
        };
        let v = renamed.first().map_or(var, |r| r.1);
        let mut ranges = extents.clone();
        for r in ranges.iter_mut() {
            if let Some(&(_, to)) = renamed.iter().find(|(from, _)| *from == r.0) {
                r.0 = to;
            }
        }
        ranges.retain(|r| r.0 != v);
        ranges.push((v, end - start));
        let shifted = Affine::var(v).add_scaled(&Affine::constant(start as i64), 1);
        let part: Vec<Stmt> = body
            .iter()
            .map(|s| {
                let s = renamed.iter().skip(1).fold(s.clone(), |s, (from, to)| rename(&s, *from, *to));
                simplified(&s.map_affine(&|a| a.substitute(var, &shifted)), &ranges)
            })
            .collect();
        loops.push(Stmt::Loop { var: v, extent: end - start, kind: LoopKind::Serial, body: part });
    }
    let at = site.at;
    site.siblings.splice(at..=at, loops);
    Ok(())
}

/// Every guard in `s`: its index and bounds.
fn guards_of(s: &Stmt, out: &mut Vec<(Affine, i64, i64)>) {
    fn walk(e: &Expr, out: &mut Vec<(Affine, i64, i64)>) {
        if let Expr::Within { index, lo, hi, .. } = e {
            out.push((index.clone(), *lo, *hi));
        }
        e.operands().into_iter().for_each(|x| walk(x, out));
    }
    match s {
        Stmt::Loop { body, .. } => body.iter().for_each(|s| guards_of(s, out)),
        Stmt::Store { value, .. } => walk(value, out),
        Stmt::Prefetch { .. } => {}
    }
}

/// `s` with every guard the loops' `ranges` decide replaced by the value it picks.
fn simplified(s: &Stmt, ranges: &[(VarId, usize)]) -> Stmt {
    match s {
        Stmt::Loop { var, extent, kind, body } => Stmt::Loop { var: *var, extent: *extent, kind: *kind, body: body.iter().map(|s| simplified(s, ranges)).collect() },
        Stmt::Store { buffer, offset, value } => Stmt::Store { buffer: *buffer, offset: offset.clone(), value: decided(value, ranges) },
        Stmt::Prefetch { .. } => s.clone(),
    }
}

fn decided(e: &Expr, ranges: &[(VarId, usize)]) -> Expr {
    if let Expr::Within { index, lo, hi, inside, outside } = e {
        let (min, max) = index.range(ranges);
        if *lo <= min && max < *hi {
            return decided(inside, ranges);
        }
        if max < *lo || *hi <= min {
            return decided(outside, ranges);
        }
    }
    e.map_operands(|x| decided(x, ranges))
}
