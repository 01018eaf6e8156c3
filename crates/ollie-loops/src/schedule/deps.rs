//! The dependence questions the primitives' legality checks ask: whether a loop's iterations
//! are independent, which buffers a body reads and writes.

use crate::ir::{Affine, Buffer, BufferId, Expr, LoopKind, Stmt, VarId};

pub(crate) fn contains_kind(body: &[Stmt], k: LoopKind) -> bool {
    body.iter().any(|s| matches!(s, Stmt::Loop { kind, body, .. } if *kind == k || contains_kind(body, k)))
}

/// Whether the iterations of the loop of `var` (with `body`) are independent: every store moves
/// by a stride larger than the window of elements one iteration writes, all stores to a buffer
/// share that stride and outer indices, and every load of a stored buffer stays inside its
/// iteration's own window. Temporaries living in the loop or inside it are each iteration's
/// own and do not count.
pub(crate) fn independent(var: VarId, body: &[Stmt], buffers: &[Buffer]) -> Result<(), String> {
    let mut inner = Vec::new();
    let mut stores: Vec<(BufferId, Affine)> = Vec::new();
    let mut loads: Vec<(BufferId, Affine)> = Vec::new();
    collect(body, &mut inner, &mut stores, &mut loads);
    let private = |b: &BufferId| buffers[b.0 as usize].scope.is_some_and(|s| s == var || inner.iter().any(|(v, _)| *v == s));
    stores.retain(|(b, _)| !private(b));
    loads.retain(|(b, _)| !private(b));
    // The elements an access reaches within one iteration: indices of outer loops (fixed while
    // this loop runs) and the range the inner loops sweep.
    let window = |a: &Affine| -> (Vec<(VarId, i64)>, i64, i64) {
        let (mut lo, mut hi) = (a.constant, a.constant);
        let mut outer = Vec::new();
        for &(v, c) in &a.terms {
            if v == var {
                continue;
            }
            match inner.iter().find(|(w, _)| *w == v) {
                Some(&(_, n)) => {
                    let last = c * (n as i64 - 1).max(0);
                    lo += last.min(0);
                    hi += last.max(0);
                }
                None => outer.push((v, c)),
            }
        }
        (outer, lo, hi)
    };
    for (b, a) in &stores {
        let c = a.coefficient(var);
        if c == 0 {
            return Err("every iteration writes the same elements (a reduction over this loop)".into());
        }
        let (outer, lo, hi) = window(a);
        if hi - lo >= c.abs() {
            return Err("iterations write overlapping elements".into());
        }
        if stores.iter().any(|(b2, a2)| b2 == b && (a2.coefficient(var) != c || window(a2).0 != outer)) {
            return Err("stores to one buffer move differently".into());
        }
    }
    for (b, a) in &loads {
        let own = stores.iter().filter(|(b2, _)| b2 == b).any(|(_, s)| {
            let (outer_s, lo_s, hi_s) = window(s);
            let (outer_l, lo_l, hi_l) = window(a);
            a.coefficient(var) == s.coefficient(var) && outer_l == outer_s && lo_s <= lo_l && hi_l <= hi_s
        });
        if stores.iter().any(|(b2, _)| b2 == b) && !own {
            return Err("an iteration reads elements another iteration writes".into());
        }
    }
    Ok(())
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
                loads_of(value, loads);
            }
            Stmt::Prefetch { .. } => {}
        }
    }
}

pub(crate) fn loads_of(e: &Expr, out: &mut Vec<(BufferId, Affine)>) {
    match e {
        Expr::Load { buffer, offset } => out.push((*buffer, offset.clone())),
        Expr::Const(_) | Expr::Index(_) => {}
        Expr::Unary(_, a) | Expr::Cast(_, a) => loads_of(a, out),
        Expr::Binary(_, a, b) | Expr::Compare(_, a, b) => {
            loads_of(a, out);
            loads_of(b, out);
        }
        Expr::Select(c, a, b) => {
            loads_of(c, out);
            loads_of(a, out);
            loads_of(b, out);
        }
    }
}

pub(crate) fn max_var(body: &[Stmt]) -> Option<VarId> {
    body.iter()
        .filter_map(|s| match s {
            Stmt::Loop { var, body, .. } => Some(max_var(body).map_or(*var, |m| m.max(*var))),
            Stmt::Store { .. } | Stmt::Prefetch { .. } => None,
        })
        .max()
}

/// Every buffer some statement of `body` reads.
pub(crate) fn buffers_read(body: &[Stmt]) -> Vec<BufferId> {
    let (mut stores, mut loads) = (Vec::new(), Vec::new());
    collect(body, &mut Vec::new(), &mut stores, &mut loads);
    let mut read: Vec<BufferId> = loads.into_iter().map(|(b, _)| b).collect();
    read.sort_unstable();
    read.dedup();
    read
}
