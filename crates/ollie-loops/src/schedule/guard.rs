//! `guard t`: a concatenation read in place. The temporary `t`, filled by consecutive top-level
//! nests that each store one block of it (the pieces of a concatenation along one axis: numpy's
//! `np.pad` is the array between two constants), is never written: every later read of `t[a]`
//! becomes a chain of guarded values ([`Expr::Within`]) over the index along that axis, each
//! piece's value computed at the element read — padding as a guarded load, no padded copy.
//! A piece the read cannot reach (its index's range, for the loops around it, misses the piece)
//! is left out of the chain; one it cannot leave is read unguarded. `peel` then splits the loops
//! whose guards remain into border and interior iterations.
//!
//! Legal when each nest is a perfect nest of serial loops around one store of `t`, dense over its
//! block, the blocks tile `t` along one axis, nothing touches `t` before the nests, each read of
//! `t` splits into `t`'s axes without carry, and nothing after the nests writes what the pieces
//! read.

use super::inline::{computed, split_index};
use super::ScheduleError;
use crate::ir::{Affine, BufferId, BufferKind, Expr, LoopKind, LoopNest, Stmt, VarId};

/// One nest of the concatenation: where its block starts along each axis, its size along each,
/// the loop variable running along each (none for a size-1 axis), and the value it stores.
struct Piece {
    origin: Vec<i64>,
    size: Vec<usize>,
    vars: Vec<Option<VarId>>,
    value: Expr,
}

pub(crate) fn guard(nest: &mut LoopNest, name: &str, step: &super::Step) -> Result<(), ScheduleError> {
    let illegal = |reason: String| ScheduleError::Illegal { step: step.to_string(), reason };
    let id = nest.buffers.iter().position(|b| b.name == name && b.kind == BufferKind::Temp).map(|i| BufferId(i as u32)).ok_or_else(|| illegal(format!("there is no temporary `{name}`")))?;
    let b = &nest.buffers[id.0 as usize];
    if b.scope.is_some() || b.registers.is_some() {
        return Err(illegal(format!("`{name}` lives in a loop")));
    }
    let shape = b.shape.clone();
    let strides: Vec<i64> = (0..shape.len()).map(|k| shape[k + 1..].iter().product::<usize>() as i64).collect();
    let touches = |s: &Stmt| {
        let mut at = Vec::new();
        s.accesses(id, &mut at);
        !at.is_empty()
    };
    let first = nest.body.iter().position(touches).ok_or_else(|| illegal(format!("nothing uses `{name}`")))?;
    let mut pieces = Vec::new();
    let mut last = first;
    while let Some(p) = nest.body.get(last).and_then(|s| piece(s, id, &shape, &strides)) {
        pieces.push(p);
        last += 1;
    }
    if pieces.is_empty() {
        return Err(illegal(format!("`{name}` is not stored first by nests of serial loops around one store each")));
    }
    let axis = tiling(&mut pieces, &shape).ok_or_else(|| illegal(format!("the nests storing `{name}` do not tile it along one axis")))?;
    let mut read = Vec::new();
    for p in &pieces {
        p.value.every_load(&mut read);
        if contains_gather(&p.value) {
            return Err(illegal(format!("a piece of `{name}` gathers")));
        }
    }
    if read.iter().any(|(b, _)| *b == id) {
        return Err(illegal(format!("a piece of `{name}` reads `{name}`")));
    }
    let (mut written, mut loads) = (Vec::new(), Vec::new());
    super::deps::collect(&nest.body[last..], &mut Vec::new(), &mut written, &mut loads);
    if written.iter().any(|(b, _)| *b == id) {
        return Err(illegal(format!("`{name}` is stored after its nests")));
    }
    if let Some((w, _)) = written.iter().find(|(w, _)| read.iter().any(|(r, _)| r == w)) {
        return Err(illegal(format!("`{}`, which the pieces read, is written after them", nest.buffers[w.0 as usize].name)));
    }
    // The axes a read splits into: those longer than one (a size-1 axis is always 0).
    let long: Vec<usize> = (0..shape.len()).filter(|&k| shape[k] > 1).collect();
    let radix: Vec<(i64, usize)> = long.iter().map(|&k| (strides[k], shape[k])).collect();
    let with = |a: &Affine, around: &[(VarId, usize)]| -> Result<Expr, String> {
        let split = split_index(a, &radix, around)?;
        let mut parts = vec![Affine::constant(0); shape.len()];
        for (&k, part) in long.iter().zip(split) {
            parts[k] = part;
        }
        Ok(chain(&pieces, axis, &parts, around))
    };
    let mut rest = Vec::new();
    for s in &nest.body[last..] {
        rest.push(computed(s, id, &with, &mut Vec::new()).map_err(illegal)?);
    }
    nest.body.truncate(first);
    nest.body.extend(rest);
    Ok(())
}

/// The value of `t` at the element whose index along each axis is `parts`: the pieces the index
/// along `axis` can reach, each guarded by its range but the last.
fn chain(pieces: &[Piece], axis: usize, parts: &[Affine], around: &[(VarId, usize)]) -> Expr {
    let (min, max) = parts[axis].range(around);
    let reached: Vec<&Piece> = pieces.iter().filter(|p| p.origin[axis] <= max && min < p.origin[axis] + p.size[axis] as i64).collect();
    let at = |p: &Piece| {
        let f = |b: &Affine| {
            p.vars.iter().enumerate().fold(b.clone(), |b, (k, v)| match v {
                Some(v) => b.substitute(*v, &parts[k].add_scaled(&Affine::constant(p.origin[k]), -1)),
                None => b,
            })
        };
        p.value.map_affine(&f)
    };
    let (last, guarded) = reached.split_last().expect("the pieces tile the axis, and the index lies inside it");
    guarded.iter().rev().fold(at(last), |outside, p| Expr::Within {
        index: parts[axis].clone(),
        lo: p.origin[axis],
        hi: p.origin[axis] + p.size[axis] as i64,
        inside: Box::new(at(p)),
        outside: Box::new(outside),
    })
}

/// `s` as a piece of `t` (`id`): a perfect nest of serial loops around one store of `t`, each
/// loop running along one axis of `t` at its stride.
fn piece(s: &Stmt, id: BufferId, shape: &[usize], strides: &[i64]) -> Option<Piece> {
    let mut loops = Vec::new();
    let mut s = s;
    let (offset, value) = loop {
        match s {
            Stmt::Loop { var, extent, kind: LoopKind::Serial, body } if body.len() == 1 => {
                loops.push((*var, *extent));
                s = &body[0];
            }
            Stmt::Store { buffer, offset, value } if *buffer == id => break (offset, value),
            _ => return None,
        }
    };
    // A loop of one iteration runs at 0.
    let zero = |a: &Affine| loops.iter().filter(|l| l.1 == 1).fold(a.clone(), |a, l| a.substitute(l.0, &Affine::constant(0)));
    let (offset, value) = (zero(offset), value.map_affine(&zero));
    loops.retain(|l| l.1 > 1);
    let mut size = vec![1; shape.len()];
    let mut vars = vec![None; shape.len()];
    for &(v, n) in &loops {
        let c = offset.coefficient(v);
        let k = (0..shape.len()).find(|&k| shape[k] > 1 && strides[k] == c)?;
        if vars[k].is_some() {
            return None;
        }
        vars[k] = Some(v);
        size[k] = n;
    }
    if offset.terms.len() != loops.len() || offset.constant < 0 {
        return None;
    }
    let origin: Vec<i64> = (0..shape.len()).map(|k| offset.constant / strides[k] % shape[k] as i64).collect();
    if origin.iter().zip(strides).map(|(o, s)| o * s).sum::<i64>() != offset.constant {
        return None;
    }
    Some(Piece { origin, size, vars, value })
}

/// The axis along which `pieces` tile `t` (sorting them along it): every other axis whole in
/// each, and along it one after the other from 0 to the end.
fn tiling(pieces: &mut [Piece], shape: &[usize]) -> Option<usize> {
    let axis = (0..shape.len()).find(|&k| pieces.iter().any(|p| p.size[k] != shape[k]))?;
    let whole = |p: &Piece| (0..shape.len()).all(|k| k == axis || (p.origin[k] == 0 && p.size[k] == shape[k]));
    if !pieces.iter().all(whole) {
        return None;
    }
    pieces.sort_by_key(|p| p.origin[axis]);
    let mut at = 0;
    for p in pieces.iter() {
        if p.origin[axis] != at {
            return None;
        }
        at += p.size[axis] as i64;
    }
    (at == shape[axis] as i64).then_some(axis)
}

fn contains_gather(e: &Expr) -> bool {
    matches!(e, Expr::Gather { .. }) || e.operands().into_iter().any(contains_gather)
}
