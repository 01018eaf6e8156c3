//! The dependence questions the primitives' legality checks ask: whether a loop's iterations
//! are independent, which buffers a body reads and writes.

use crate::ir::{Affine, Buffer, BufferId, LoopKind, Stmt, VarId};

pub(crate) fn contains_kind(body: &[Stmt], k: LoopKind) -> bool {
    body.iter().any(|s| matches!(s, Stmt::Loop { kind, body, .. } if *kind == k || contains_kind(body, k)))
}

/// Whether the iterations of the loop of `var` (with `extent` iterations and `body`) are
/// independent: no element one iteration writes is read or written by another. Temporaries
/// living in the loop or inside it are each iteration's own and do not count.
///
/// An index is `c·var + small + large + outer`: `small` the terms of inner loops with
/// coefficients below `|c|` plus the constant, `large` those above, `outer` the terms of loops
/// around (fixed while this loop runs). The stores to a buffer must share `c ≠ 0`, `outer` and
/// `large`, and their `small` parts together span less than `|c|`; then, when each `large`
/// coefficient steps past everything below it (the span, `c` over the whole loop, the smaller
/// `large` terms), two iterations write disjoint elements (compare the largest terms first, then
/// the next, down to `var`'s). A load of a stored buffer must have the same shape with its
/// `small` part inside the stores' span: it then reads only elements of its own iteration.
/// Without `large` terms this is the interval test: one iteration's window is narrower than the
/// stride.
pub(crate) fn independent(var: VarId, extent: usize, body: &[Stmt], buffers: &[Buffer]) -> Result<(), String> {
    independent_in(var, extent, body, buffers, |_| true)
}

/// [`independent`] for the accesses to the buffers `checked` picks alone: what the other
/// buffers carry from one iteration to the next is not asked about.
pub(crate) fn independent_in(var: VarId, extent: usize, body: &[Stmt], buffers: &[Buffer], checked: impl Fn(BufferId) -> bool) -> Result<(), String> {
    let mut inner = Vec::new();
    let mut stores: Vec<(BufferId, Affine)> = Vec::new();
    let mut loads: Vec<(BufferId, Affine)> = Vec::new();
    collect(body, &mut inner, &mut stores, &mut loads);
    let private = |b: &BufferId| buffers[b.0 as usize].scope.is_some_and(|s| s == var || inner.iter().any(|(v, _)| *v == s));
    stores.retain(|(b, _)| !private(b) && checked(*b));
    loads.retain(|(b, _)| !private(b) && checked(*b));
    let shape = |a: &Affine| Shape::of(a, var, &inner);
    let mut checked: Vec<BufferId> = Vec::new();
    for (b, a) in &stores {
        if checked.contains(b) {
            continue;
        }
        checked.push(*b);
        let first = shape(a);
        if first.c == 0 {
            return Err("every iteration writes the same elements (a reduction over this loop)".into());
        }
        let (mut lo, mut hi) = (first.lo, first.hi);
        for (_, a2) in stores.iter().filter(|(b2, _)| b2 == b) {
            let s = shape(a2);
            if s.c != first.c || s.outer != first.outer || s.large != first.large {
                return Err("stores to one buffer move differently".into());
            }
            lo = lo.min(s.lo);
            hi = hi.max(s.hi);
        }
        let c = first.c.abs();
        if hi - lo >= c {
            return Err("iterations write overlapping elements".into());
        }
        let mut reach = hi - lo + c * (extent as i64 - 1).max(0);
        for &(coefficient, n) in &first.large {
            if coefficient <= reach {
                return Err("iterations write overlapping elements".into());
            }
            reach += coefficient * (n as i64 - 1);
        }
        for (_, l) in loads.iter().filter(|(b2, _)| b2 == b) {
            let s = shape(l);
            if s.c != first.c || s.outer != first.outer || s.large != first.large || s.lo < lo || s.hi > hi {
                return Err("an iteration reads elements another iteration writes".into());
            }
        }
    }
    Ok(())
}

/// An index seen from one loop: see [`independent`].
struct Shape {
    c: i64,
    outer: Vec<(VarId, i64)>,
    /// Inner terms with coefficients of magnitude above `|c|`: (|coefficient|, extent), sorted.
    large: Vec<(i64, usize)>,
    /// The range of the constant plus the smaller inner terms.
    lo: i64,
    hi: i64,
}

impl Shape {
    fn of(a: &Affine, var: VarId, inner: &[(VarId, usize)]) -> Shape {
        let c = a.coefficient(var);
        let mut s = Shape { c, outer: Vec::new(), large: Vec::new(), lo: a.constant, hi: a.constant };
        for &(v, k) in &a.terms {
            if v == var {
                continue;
            }
            match inner.iter().find(|(w, _)| *w == v) {
                // With `c == 0` every term is "small": the reduction is refused anyway.
                Some(&(_, n)) if c != 0 && k.abs() > c.abs() && k > 0 => s.large.push((k, n)),
                Some(&(_, n)) => {
                    let last = k * (n as i64 - 1).max(0);
                    s.lo += last.min(0);
                    s.hi += last.max(0);
                }
                None => s.outer.push((v, k)),
            }
        }
        s.large.sort_unstable();
        s
    }
}

pub(crate) fn collect(body: &[Stmt], inner: &mut Vec<(VarId, usize)>, stores: &mut Vec<(BufferId, Affine)>, loads: &mut Vec<(BufferId, Affine)>) {
    for s in body {
        match s {
            Stmt::Loop { var, extent, body, .. } => {
                inner.push((*var, *extent));
                collect(body, inner, stores, loads);
            }
            Stmt::Store { buffer, offset, value } => {
                stores.push((*buffer, offset.clone()));
                value.every_load(loads);
            }
            Stmt::Prefetch { .. } => {}
        }
    }
}


/// Whether `a` and `b` may run in either order, or interleaved, and compute the same values:
/// neither reads or writes a buffer the other writes. Else why not.
pub(crate) fn apart(a: &[Stmt], b: &[Stmt], buffers: &[crate::ir::Buffer]) -> Result<(), String> {
    match shared(a, b).first() {
        Some(&id) => Err(format!("both touch `{}`, which one of them writes", buffers[id.0 as usize].name)),
        None => Ok(()),
    }
}

/// The buffers both `a` and `b` touch and one of them writes: what ties their order.
pub(crate) fn shared(a: &[Stmt], b: &[Stmt]) -> Vec<BufferId> {
    let touched = |body: &[Stmt]| {
        let (mut stores, mut loads) = (Vec::new(), Vec::new());
        collect(body, &mut Vec::new(), &mut stores, &mut loads);
        let written: Vec<BufferId> = stores.into_iter().map(|(b, _)| b).collect();
        let read: Vec<BufferId> = loads.into_iter().map(|(b, _)| b).collect();
        (written, read)
    };
    let ((wa, ra), (wb, rb)) = (touched(a), touched(b));
    let mut out: Vec<BufferId> = wa.iter().filter(|x| wb.contains(x) || rb.contains(x)).chain(wb.iter().filter(|x| ra.contains(x))).copied().collect();
    out.dedup();
    out
}
