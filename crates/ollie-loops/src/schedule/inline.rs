//! `inline t v`: compute-inline (Halide's), in two forms. Where the temporary `t` lives in loop
//! `v`'s body (after `fold`) and a statement of that body stores it once, the statements after
//! it read the value stored instead, and the store goes: legal when nothing reads `t` before the
//! store or at another element, and nothing after the store writes a buffer the value reads. It
//! turns `d = a - b; s += d * d` into the one-statement reduction `s += (a - b) * (a - b)` that
//! `accumulators` and `rfactor` take (the compiler computes the common subexpression once).
//!
//! Where `v` is a top-level loop nest computing the whole of `t`, one element per iteration
//! (`for i { for j { t[J·i + j] = e } }`, its index dense over the nest), every later read of
//! `t[a]` computes `e` at the iteration that stored element `a`, and the nest goes: legal when
//! each read's index splits into the nest's digits with no carry (`a = J·(i') + (j')`, each part
//! inside its loop's range for every iteration of the loops around the read), and nothing after
//! the nest writes what `e` reads. An elementwise producer (`x - mean`) then lives in the
//! reduction consuming it, and its array is never written.

use super::{ScheduleError, Site};
use crate::ir::{Affine, BufferId, Expr, LoopKind, Stmt, VarId};

pub(crate) fn inline(site: &mut Site, name: &str) -> Result<(), ScheduleError> {
    let (var, _, _, body) = site.loop_ref();
    let id = site.named(name, true)?;
    let b = &site.buffers[id.0 as usize];
    if b.registers.is_some() {
        return Err(site.illegal(&format!("`{name}` is held in registers")));
    }
    if b.scope.is_none() {
        return inline_nest(site, id);
    }
    if b.scope != Some(var) {
        return Err(site.illegal(&format!("`{name}` lives neither in this loop's body nor at the top level")));
    }
    let stores: Vec<usize> = body.iter().enumerate().filter(|(_, s)| matches!(s, Stmt::Store { buffer, .. } if *buffer == id)).map(|(k, _)| k).collect();
    let [at] = stores.as_slice() else {
        return Err(site.illegal(&format!("`{name}` is not stored once by a statement of this body")));
    };
    let Stmt::Store { offset, value, .. } = &body[*at] else { unreachable!("a store") };
    let (offset, value) = (offset.clone(), value.clone());
    let mut before = Vec::new();
    body[..*at].iter().for_each(|s| s.accesses(id, &mut before));
    let mut after = Vec::new();
    body[*at + 1..].iter().for_each(|s| s.accesses(id, &mut after));
    if !before.is_empty() || after.iter().any(|a| *a != offset) {
        return Err(site.illegal(&format!("`{name}` is read before its store, stored again, or read at another element")));
    }
    let mut read = Vec::new();
    value.every_load(&mut read);
    let (mut written, mut loads) = (Vec::new(), Vec::new());
    super::deps::collect(&body[*at + 1..], &mut Vec::new(), &mut written, &mut loads);
    // A store in a loop after it (a sum accumulated into it) is not among the body's own.
    if written.iter().any(|(w, _)| *w == id) {
        return Err(site.illegal(&format!("`{name}` is stored again after the store")));
    }
    if let Some((w, _)) = written.iter().find(|(w, _)| read.iter().any(|(r, _)| r == w)) {
        return Err(site.illegal(&format!("`{}`, which the value reads, is written after the store", site.buffers[w.0 as usize].name)));
    }
    let (_, _, _, body) = site.the_loop();
    let rest: Vec<Stmt> = body.drain(*at..).skip(1).map(|s| replaced(&s, id, &value)).collect();
    body.extend(rest);
    Ok(())
}

/// `s` with every load of `buffer` replaced by `value`.
fn replaced(s: &Stmt, buffer: BufferId, value: &Expr) -> Stmt {
    match s {
        Stmt::Loop { var, extent, kind, body } => Stmt::Loop { var: *var, extent: *extent, kind: *kind, body: body.iter().map(|s| replaced(s, buffer, value)).collect() },
        Stmt::Store { buffer: b, offset, value: v } => Stmt::Store { buffer: *b, offset: offset.clone(), value: substitute(v, buffer, value) },
        Stmt::Prefetch { .. } => s.clone(),
    }
}

fn substitute(e: &Expr, buffer: BufferId, value: &Expr) -> Expr {
    replace_loads(e, buffer, &|_| Ok(value.clone())).expect("a replacement that cannot fail")
}

/// The second form: the loop is a top-level nest computing all of temporary `id`.
fn inline_nest(site: &mut Site, id: BufferId) -> Result<(), ScheduleError> {
    let name = site.buffers[id.0 as usize].name.clone();
    if !site.enclosing.is_empty() {
        return Err(site.illegal(&format!("`{name}` lives at the top level, and this loop is not there")));
    }
    // A perfect nest of serial loops around one store of `t`.
    let mut loops: Vec<(VarId, usize)> = Vec::new();
    let mut s = &site.siblings[site.at];
    let (offset, value) = loop {
        match s {
            Stmt::Loop { var, extent, kind: LoopKind::Serial, body } if body.len() == 1 => {
                loops.push((*var, *extent));
                s = &body[0];
            }
            Stmt::Store { buffer, offset, value } if *buffer == id => break (offset.clone(), value.clone()),
            _ => return Err(site.illegal(&format!("the loop is not a nest of serial loops around one store of `{name}`"))),
        }
    };
    // Its index dense over the nest: the digits of a mixed radix, most significant first.
    let mut digits: Vec<(VarId, i64, usize)> = loops.iter().map(|&(v, n)| (v, offset.coefficient(v), n)).collect();
    digits.sort_by_key(|d| std::cmp::Reverse(d.1));
    let dense = offset.constant == 0
        && offset.terms.len() == digits.len()
        && digits.iter().enumerate().all(|(k, d)| d.1 == digits[k + 1..].iter().map(|d| d.2 as i64).product::<i64>())
        && digits.iter().map(|d| d.2).product::<usize>() == site.buffers[id.0 as usize].len();
    if !dense {
        return Err(site.illegal(&format!("the nest does not store every element of `{name}` once, in order")));
    }
    let mut reads = Vec::new();
    value.every_load(&mut reads);
    if reads.iter().any(|(b, _)| *b == id) {
        return Err(site.illegal(&format!("the value of `{name}` reads `{name}`")));
    }
    let at = site.at;
    let mut elsewhere = Vec::new();
    site.siblings[..at].iter().for_each(|s| s.accesses(id, &mut elsewhere));
    let (mut written, mut loads) = (Vec::new(), Vec::new());
    super::deps::collect(&site.siblings[at + 1..], &mut Vec::new(), &mut written, &mut loads);
    if !elsewhere.is_empty() || written.iter().any(|(b, _)| *b == id) {
        return Err(site.illegal(&format!("`{name}` is touched before the nest or stored after it")));
    }
    if let Some((w, _)) = written.iter().find(|(w, _)| reads.iter().any(|(r, _)| r == w)) {
        return Err(site.illegal(&format!("`{}`, which the value reads, is written after the nest", site.buffers[w.0 as usize].name)));
    }
    let mut rest = Vec::new();
    for s in &site.siblings[at + 1..] {
        rest.push(computed(s, id, &|a, around| at_element(a, &digits, &value, around), &mut Vec::new()).map_err(|why| site.illegal(&why))?);
    }
    site.siblings.truncate(at);
    site.siblings.extend(rest);
    Ok(())
}

/// `s` with every load of `buffer` at `a` replaced by `with(a, loops around the load)`;
/// `around`: the loops around `s`.
pub(crate) fn computed(s: &Stmt, buffer: BufferId, with: &dyn Fn(&Affine, &[(VarId, usize)]) -> Result<Expr, String>, around: &mut Vec<(VarId, usize)>) -> Result<Stmt, String> {
    Ok(match s {
        Stmt::Loop { var, extent, kind, body } => {
            around.push((*var, *extent));
            let body = body.iter().map(|s| computed(s, buffer, with, around)).collect::<Result<_, _>>();
            around.pop();
            Stmt::Loop { var: *var, extent: *extent, kind: *kind, body: body? }
        }
        Stmt::Store { buffer: b, offset, value: v } => Stmt::Store { buffer: *b, offset: offset.clone(), value: replace_loads(v, buffer, &|a| with(a, around))? },
        Stmt::Prefetch { buffer: b, .. } if *b == buffer => return Err("the temporary is prefetched".into()),
        Stmt::Prefetch { .. } => s.clone(),
    })
}

/// `value` at the nest's iteration that stored element `a`, read inside `around`.
fn at_element(a: &Affine, digits: &[(VarId, i64, usize)], value: &Expr, around: &[(VarId, usize)]) -> Result<Expr, String> {
    let radix: Vec<(i64, usize)> = digits.iter().map(|&(_, c, n)| (c, n)).collect();
    let parts = split_index(a, &radix, around)?;
    let at = |b: &Affine| digits.iter().zip(&parts).fold(b.clone(), |b, (&(v, _, _), part)| b.substitute(v, part));
    Ok(value.map_affine(&at))
}

/// Index `a`, read inside the loops `around`, as digits of the mixed radix `radix` (each digit's
/// coefficient and count, most significant first): one part per digit, each inside its count
/// for every iteration of `around`. An error when the index carries from one digit into the
/// next (or leaves the range).
pub(crate) fn split_index(a: &Affine, radix: &[(i64, usize)], around: &[(VarId, usize)]) -> Result<Vec<Affine>, String> {
    let carry = || "a read of it does not split into the nest's loops (its index carries from one loop's range into the next)".to_string();
    let mut parts: Vec<Affine> = Vec::new();
    let mut rest = a.constant;
    if rest < 0 {
        return Err(carry());
    }
    for &(c, n) in radix {
        parts.push(Affine::constant(rest / c % n as i64));
        rest -= rest / c % n as i64 * c;
    }
    if rest != 0 {
        return Err(carry());
    }
    for &(u, d) in &a.terms {
        let k = radix.iter().position(|&(c, _)| d > 0 && d >= c && d % c == 0).ok_or_else(carry)?;
        parts[k] = parts[k].add_scaled(&Affine::var(u), d / radix[k].0);
    }
    for (k, part) in parts.iter().enumerate() {
        let mut top = part.constant;
        for &(u, d) in &part.terms {
            let n = around.iter().find(|l| l.0 == u).ok_or_else(carry)?.1;
            top += d * (n as i64 - 1);
        }
        if top >= radix[k].1 as i64 {
            return Err(carry());
        }
    }
    Ok(parts)
}

pub(crate) fn replace_loads(e: &Expr, buffer: BufferId, with: &dyn Fn(&Affine) -> Result<Expr, String>) -> Result<Expr, String> {
    if let Expr::Load { buffer: b, offset } = e {
        if *b == buffer {
            return with(offset);
        }
    }
    let mut failed = None;
    let out = e.map_operands(|x| replace_loads(x, buffer, with).unwrap_or_else(|m| {
        failed.get_or_insert(m);
        x.clone()
    }));
    failed.map_or(Ok(out), Err)
}
