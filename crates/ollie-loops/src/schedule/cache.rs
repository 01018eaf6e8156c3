//! `cache b v`: the elements of buffer `b` that one iteration of loop `v` touches live, for that
//! iteration, in a temporary of their own in the loop's body (TVM's `cache_read` and
//! `cache_write`): copied in at the start of the body when the iteration reads one before writing
//! it, copied back at the end when it writes any. The temporary is dense and laid out in the
//! order of the loops that index it, outermost first — a packed operand panel in the layout its
//! consumer reads, or an output tile that `registers` can then hold in registers.
//!
//! Legal when every access of `b` in the loop moves alike with the loops around the body (one
//! window per iteration) and covers the whole window, and either the window's elements map one
//! to one onto the buffer's — then each iteration copies exactly the elements it touched before,
//! so the order of reads and writes each element sees is unchanged, and threads running
//! iterations touch what they touched before — or the iteration only reads `b`: then the copy
//! may hold an element more than once (a convolution's overlapping windows packed as im2col
//! packs them, one row per tap), since nothing changes it while the copies are read.

use super::fold::{inner_extents, loop_vars, rewrite, Walk};
use super::{ScheduleError, Site};
use crate::ir::{Affine, Buffer, BufferId, BufferKind, Expr, LoopKind, Stmt, VarId};

pub(crate) fn cache(site: &mut Site, name: &str) -> Result<(), ScheduleError> {
    let id = site.named(name, false)?;
    site.one_by_one()?;
    let (var, _, _, body) = site.loop_ref();
    let b = &site.buffers[id.0 as usize];
    if b.registers.is_some() || b.scope.is_some_and(|s| !site.enclosing.iter().any(|(v, _)| *v == s)) {
        return Err(site.illegal(&format!("`{name}` lives in this loop or inside it")));
    }
    let mut inner = Vec::new();
    loop_vars(body, &mut inner);
    let extents = inner_extents(body);
    let extent = |v: VarId| extents.iter().find(|(w, _)| *w == v).map_or(1, |(_, n)| *n);
    let mut accesses = Vec::new();
    body.iter().for_each(|s| s.accesses(id, &mut accesses));
    if guarded(body).iter().any(|(b, _)| *b == id) {
        return Err(site.illegal(&format!("`{name}` is read under a guard (the copy would read where the guard fails)")));
    }
    let Some((first, around)) = first_access(body, id, &mut Vec::new()) else {
        return Err(site.illegal(&format!("the loop does not use `{name}`")));
    };
    // The part of an index fixed during one iteration: the terms of `v` and the loops around it.
    let fixed = |a: &Affine| Affine { terms: a.terms.iter().filter(|(v, _)| !inner.contains(v)).copied().collect(), constant: a.constant };
    let base = fixed(&first);
    // The window's dimensions, one per coefficient of the first access's inner loops, in the
    // order of those loops; a loop of one iteration (its variable always 0) is none.
    let dims: Vec<(i64, usize)> = around.iter().map(|v| (first.coefficient(*v), extent(*v))).filter(|&(c, n)| c != 0 && n > 1).collect();
    let moving = |a: &Affine| a.terms.iter().filter(|(v, _)| inner.contains(v) && extent(*v) > 1).copied().collect::<Vec<_>>();
    // Each moving variable of an access on a dimension of its coefficient and extent, every
    // dimension taken once: the access then reads the window's element at those coordinates.
    let assign = |a: &Affine| -> Option<Vec<(VarId, usize)>> {
        let mut used = vec![false; dims.len()];
        let mut out = Vec::new();
        for (v, c) in moving(a) {
            let k = (0..dims.len()).find(|&k| !used[k] && dims[k] == (c, extent(v)))?;
            used[k] = true;
            out.push((v, k));
        }
        (!used.contains(&false)).then_some(out)
    };
    for a in &accesses {
        if fixed(a) != base {
            return Err(site.illegal(&format!("accesses of `{name}` differ in more than the loops inside")));
        }
        if assign(a).is_none() {
            return Err(site.illegal(&format!("accesses of `{name}` cover different parts of one iteration's elements")));
        }
    }
    let written = body.iter().any(|s| writes(s, id));
    // One to one, unless the iteration only reads: in increasing coefficient, each steps past
    // everything the smaller ones reach.
    let mut sorted = dims.clone();
    sorted.sort_unstable();
    let mut reach = 0i64;
    for &(c, n) in &sorted {
        if written && c <= reach {
            return Err(site.illegal(&format!("one iteration's accesses of `{name}` overlap or run backwards, and it writes them")));
        }
        reach += c * (n as i64 - 1);
    }
    let strides: Vec<i64> = (0..dims.len()).map(|k| dims[k + 1..].iter().map(|&(_, n)| n as i64).product()).collect();
    let len: usize = dims.iter().map(|&(_, n)| n).product();
    let b = &site.buffers[id.0 as usize];
    let (dtype, input) = (b.dtype, matches!(b.kind, BufferKind::Input(_)));
    // Copy in unless the iteration writes every element before it reads it (a walk too long to
    // finish copies in: always correct).
    let copy_in = !written || input || {
        let mut walk = Walk::new(id, site.buffers[id.0 as usize].shape.iter().product());
        body.iter().try_for_each(|s| walk.stmt(s)).is_err()
    };
    let mut n = 0;
    while site.buffers.iter().any(|b| b.name == format!("c{n}")) {
        n += 1;
    }
    let to = BufferId(site.buffers.len() as u32);
    site.buffers.push(Buffer { name: format!("c{n}"), kind: BufferKind::Temp, dtype, shape: vec![len], scope: Some(var), registers: None });
    let local = |a: &Affine| {
        let mut terms: Vec<(VarId, i64)> = assign(a).expect("checked above").into_iter().map(|(v, k)| (v, strides[k])).collect();
        terms.sort_unstable();
        Affine { terms, constant: 0 }
    };
    // A copy between the buffer and the temporary: loops over the window's dimensions, on fresh
    // variables from `first`.
    let copy = |first: u32, inward: bool| -> Stmt {
        let vars: Vec<VarId> = (first..).take(dims.len()).map(VarId).collect();
        let (mut there, mut here) = (base.clone(), Affine::constant(0));
        for (d, v) in vars.iter().enumerate() {
            there = there.add_scaled(&Affine::var(*v), dims[d].0);
            here = here.add_scaled(&Affine::var(*v), strides[d]);
        }
        let store = match inward {
            true => Stmt::Store { buffer: to, offset: here, value: Expr::Load { buffer: id, offset: there } },
            false => Stmt::Store { buffer: id, offset: there, value: Expr::Load { buffer: to, offset: here } },
        };
        vars.iter().zip(&dims).rev().fold(store, |s, (v, &(_, n))| Stmt::Loop { var: *v, extent: n, kind: LoopKind::Serial, body: vec![s] })
    };
    let fresh = site.fresh;
    let (_, _, _, body) = site.the_loop();
    let mut new_body: Vec<Stmt> = Vec::new();
    if copy_in {
        new_body.push(copy(fresh, true));
    }
    new_body.extend(body.iter().map(|s| rewrite(s, id, to, &local)));
    if written {
        new_body.push(copy(fresh + dims.len() as u32, false));
    }
    *body = new_body;
    Ok(())
}

/// The first access of `buffer` in program order, and the loops around it inside `body`,
/// outermost first.
fn first_access(body: &[Stmt], buffer: BufferId, around: &mut Vec<VarId>) -> Option<(Affine, Vec<VarId>)> {
    for s in body {
        if let Stmt::Loop { var, body, .. } = s {
            around.push(*var);
            if let Some(found) = first_access(body, buffer, around) {
                return Some(found);
            }
            around.pop();
        } else {
            let mut accesses = Vec::new();
            s.accesses(buffer, &mut accesses);
            if let Some(a) = accesses.pop() {
                return Some((a, around.clone()));
            }
        }
    }
    None
}

/// Whether `s` stores into `buffer`.
fn writes(s: &Stmt, buffer: BufferId) -> bool {
    match s {
        Stmt::Loop { body, .. } => body.iter().any(|s| writes(s, buffer)),
        Stmt::Store { buffer: b, .. } => *b == buffer,
        Stmt::Prefetch { .. } => false,
    }
}

/// Every load in `body` evaluated only under a guard ([`Expr::guarded_loads`]).
pub(crate) fn guarded(body: &[Stmt]) -> Vec<(BufferId, Affine)> {
    let mut out = Vec::new();
    for s in body {
        match s {
            Stmt::Loop { body, .. } => out.extend(guarded(body)),
            Stmt::Store { value, .. } => value.guarded_loads(&mut out),
            Stmt::Prefetch { .. } => {}
        }
    }
    out
}
