//! The loop-nest invariant checker: loads and stores in bounds for the loop ranges, every
//! output element stored, no read of a temporary element before it is written, temporaries
//! used only inside the loop they live in, inputs never written, loop variables bound once.

use crate::ir::{Affine, BufferId, BufferKind, Expr, LoopKind, LoopNest, Stmt, VarId};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoopError {
    #[error("{access} of `{buffer}` reaches offsets {min}..={max}, outside 0..{len}")]
    OutOfBounds { access: &'static str, buffer: String, min: i64, max: i64, len: usize },
    #[error("`{var}` is used outside a loop that binds it")]
    UnboundVar { var: String },
    #[error("`{var}` is bound by two nested loops")]
    ShadowedVar { var: String },
    #[error("the kernel stores into input `{buffer}`")]
    StoreToInput { buffer: String },
    #[error("{count} elements of output `{buffer}` are never stored")]
    Unwritten { buffer: String, count: usize },
    #[error("`{buffer}` lives in loop `{scope}` but is used outside it")]
    OutOfScope { buffer: String, scope: String },
    #[error("`{buffer}` is held in registers, but {reason}")]
    NotRegisters { buffer: String, reason: String },
    #[error("`{buffer}` is read at offset {offset} before that element is written")]
    ReadBeforeWrite { buffer: String, offset: i64 },
    #[error("a gather from `{buffer}`: {reason}")]
    BadGather { buffer: String, reason: &'static str },
    #[error("sort loop `{var}`: {reason}")]
    BadSort { var: String, reason: &'static str },
}

/// A guard of [`Expr::Within`]: its index and bounds.
type Guard = (Affine, i64, i64);

/// Enumerations larger than this fall back to the interval check alone.
const ENUMERATION_LIMIT: u64 = 1 << 26;

/// Checks `nest`'s invariants. Element coverage is tracked per statement in program order (a
/// store counts as done for all its iterations before the next statement), which is exact for
/// loop nests whose iterations do not read what later iterations of the same statement write.
pub fn check(nest: &LoopNest) -> Result<(), LoopError> {
    let mut c = Checker {
        nest,
        bound: Vec::new(),
        vector: None,
        written: nest.buffers.iter().map(|b| vec![false; if matches!(b.kind, BufferKind::Input(_)) { 0 } else { b.len() }]).collect(),
    };
    for s in &nest.body {
        c.stmt(s)?;
    }
    for (id, b) in nest.outputs() {
        let count = c.written[id.0 as usize].iter().filter(|w| !**w).count();
        if count > 0 {
            return Err(LoopError::Unwritten { buffer: b.name.clone(), count });
        }
    }
    Ok(())
}

struct Checker<'a> {
    nest: &'a LoopNest,
    /// The enclosing loops: variable and extent.
    bound: Vec<(VarId, usize)>,
    /// The vectorized loop the statement is in: its variable, extent and lanes.
    vector: Option<(VarId, usize, u32)>,
    written: Vec<Vec<bool>>,
}

impl Checker<'_> {
    fn stmt(&mut self, s: &Stmt) -> Result<(), LoopError> {
        match s {
            Stmt::Loop { var, extent, body, kind } => {
                if self.bound.iter().any(|(v, _)| v == var) {
                    return Err(LoopError::ShadowedVar { var: var.to_string() });
                }
                if kind.sorts() {
                    let bad = |reason| Err(LoopError::BadSort { var: var.to_string(), reason });
                    let [Stmt::Store { buffer, offset, value }] = body.as_slice() else {
                        return bad("its body is not one store");
                    };
                    if offset.coefficient(*var) == 0 {
                        return bad("every position is the same element");
                    }
                    let mut reads = Vec::new();
                    value.loads(*buffer, &mut reads);
                    if !reads.is_empty() {
                        return bad("its values read the buffer it stores into");
                    }
                }
                if *extent == 0 {
                    return Ok(());
                }
                self.bound.push((*var, *extent));
                // A temporary living in this loop starts each iteration unwritten.
                for (id, b) in self.nest.temps() {
                    if b.scope == Some(*var) {
                        self.written[id.0 as usize].iter_mut().for_each(|w| *w = false);
                    }
                }
                if let LoopKind::Vector(w) | LoopKind::Stream(w) = kind {
                    self.vector = Some((*var, *extent, *w));
                }
                for s in body {
                    self.stmt(s)?;
                }
                if matches!(kind, LoopKind::Vector(_) | LoopKind::Stream(_)) {
                    self.vector = None;
                }
                self.bound.pop();
                Ok(())
            }
            // A prefetch reads nothing and never faults: its variables must be bound, no more; a
            // gather's prefetch reads its indices from inputs, at clamped offsets.
            Stmt::Prefetch { buffer, offset, indices } => {
                self.vars_bound(offset)?;
                for d in indices {
                    let mut loads = Vec::new();
                    d.value.every_load(&mut loads);
                    for (b, at) in loads {
                        self.vars_bound(&at)?;
                        if !matches!(self.nest.buffer(b).kind, BufferKind::Input(_)) {
                            let name = self.nest.buffer(*buffer).name.clone();
                            return Err(LoopError::BadGather { buffer: name, reason: "a prefetch's indices read a temporary" });
                        }
                    }
                }
                Ok(())
            }
            Stmt::Store { buffer, offset, value } => {
                self.expr(value, &[])?;
                let b = self.nest.buffer(*buffer);
                if matches!(b.kind, BufferKind::Input(_)) {
                    return Err(LoopError::StoreToInput { buffer: b.name.clone() });
                }
                let (min, max) = self.in_bounds("a store", *buffer, offset)?;
                self.registers(*buffer, offset, true)?;
                let written = &mut self.written[buffer.0 as usize];
                let ranges = ranges(&self.bound, offset);
                let exact = enumerate(offset, &ranges, |o| {
                    written[o as usize] = true;
                    true
                });
                if !exact {
                    // Too many to list: count the whole reachable range as written.
                    written[min as usize..=max as usize].iter_mut().for_each(|w| *w = true);
                }
                Ok(())
            }
        }
    }

    /// Checks `e`, evaluated where every guard of `guards` (index, lo, hi) holds.
    fn expr(&self, e: &Expr, guards: &[Guard]) -> Result<(), LoopError> {
        match e {
            Expr::Const(_) => Ok(()),
            Expr::Index(a) => self.vars_bound(a),
            Expr::Load { buffer, offset } => {
                self.vars_bound(offset)?;
                let Some(spread) = self.guarded_spread(offset, guards) else {
                    // The guards never hold together: the load never runs.
                    return Ok(());
                };
                self.in_bounds_spread("a load", *buffer, &spread.0, (spread.1, spread.2))?;
                self.registers(*buffer, offset, false)?;
                let b = self.nest.buffer(*buffer);
                if matches!(b.kind, BufferKind::Input(_)) {
                    return Ok(());
                }
                let written = &self.written[buffer.0 as usize];
                let mut unwritten = None;
                let visit = |o: i64| {
                    if !written[o as usize] {
                        unwritten = Some(o);
                        return false;
                    }
                    true
                };
                let _ = if guards.is_empty() { enumerate(offset, &ranges(&self.bound, offset), visit) } else { enumerate_guarded(offset, guards, &self.bound, visit) };
                match unwritten {
                    Some(offset) => Err(LoopError::ReadBeforeWrite { buffer: b.name.clone(), offset }),
                    None => Ok(()),
                }
            }
            // The outside arm runs where the index is below `lo` or from `hi` on: one range
            // where the index's own range reaches only one side.
            Expr::Within { index, inside, outside, lo, hi } => {
                self.vars_bound(index)?;
                let mut inner = guards.to_vec();
                inner.push((index.clone(), *lo, *hi));
                self.expr(inside, &inner)?;
                let (min, max) = index.range(&self.bound);
                let mut outer = guards.to_vec();
                if min >= *lo {
                    outer.push((index.clone(), *hi, i64::MAX));
                } else if max < *hi {
                    outer.push((index.clone(), i64::MIN, *lo));
                }
                self.expr(outside, &outer)
            }
            Expr::Gather { buffer, offset, indices } => {
                let b = self.nest.buffer(*buffer);
                let bad = |reason| Err(LoopError::BadGather { buffer: b.name.clone(), reason });
                if !matches!(b.kind, BufferKind::Input(_)) {
                    return bad("only inputs are gathered from");
                }
                if indices.iter().any(|d| d.extent == 0) {
                    return bad("an index into an empty axis");
                }
                if !guards.is_empty() {
                    return bad("a gather under a guard");
                }
                let spread = indices.iter().fold((0, 0), |(lo, hi), d| {
                    let last = d.stride * (d.extent as i64 - 1);
                    (lo + last.min(0), hi + last.max(0))
                });
                self.in_bounds_spread("a gather", *buffer, offset, spread)?;
                indices.iter().try_for_each(|d| self.expr(&d.value, guards))
            }
            _ => e.operands().into_iter().try_for_each(|x| self.expr(x, guards)),
        }
    }

    /// `offset` as `rest + Σ k·g` over the guards `g` whose terms it holds in proportion, with
    /// the interval those parts reach where the guards hold (each `g` within its bounds and the
    /// range its loops give it): `(rest, min, max)`. `None` when some guard can never hold.
    fn guarded_spread(&self, offset: &Affine, guards: &[Guard]) -> Option<(Affine, i64, i64)> {
        // Guards on one index hold together: the intersection of their ranges.
        let mut merged: Vec<Guard> = Vec::new();
        for (g, lo, hi) in guards {
            match merged.iter_mut().find(|m| m.0 == *g) {
                Some(m) => (m.1, m.2) = (m.1.max(*lo), m.2.min(*hi)),
                None => merged.push((g.clone(), *lo, *hi)),
            }
        }
        let (mut rest, mut min, mut max) = (offset.clone(), 0, 0);
        for (g, lo, hi) in &merged {
            let (gmin, gmax) = g.range(&self.bound);
            let (a, b) = (gmin.max(*lo), gmax.min(hi - 1));
            if a > b {
                return None;
            }
            let Some(&(v0, c0)) = g.terms.first() else { continue };
            let k = rest.coefficient(v0) / c0;
            if k == 0 || g.terms.iter().any(|(v, c)| rest.coefficient(*v) != k * c) {
                continue;
            }
            rest = rest.add_scaled(g, -k);
            min += (k * a).min(k * b);
            max += (k * a).max(k * b);
        }
        Some((rest, min, max))
    }

    fn registers(&self, buffer: BufferId, offset: &Affine, store: bool) -> Result<(), LoopError> {
        let b = self.nest.buffer(buffer);
        let Some(lanes) = b.registers else { return Ok(()) };
        let fail = |reason: String| Err(LoopError::NotRegisters { buffer: b.name.clone(), reason });
        if b.scope.is_none() {
            return fail("it does not live in a loop".into());
        }
        register_access(lanes, self.vector, offset, store).or_else(fail)
    }

    fn vars_bound(&self, a: &Affine) -> Result<(), LoopError> {
        match a.terms.iter().find(|(v, _)| !self.bound.iter().any(|(w, _)| w == v)) {
            Some((v, _)) => Err(LoopError::UnboundVar { var: v.to_string() }),
            None => Ok(()),
        }
    }

    /// The offsets `offset` reaches, if they all lie inside `buffer`.
    fn in_bounds(&self, access: &'static str, buffer: BufferId, offset: &Affine) -> Result<(i64, i64), LoopError> {
        self.in_bounds_spread(access, buffer, offset, (0, 0))
    }

    /// [`Self::in_bounds`] for the offsets `offset` takes plus anything in `spread`.
    fn in_bounds_spread(&self, access: &'static str, buffer: BufferId, offset: &Affine, spread: (i64, i64)) -> Result<(i64, i64), LoopError> {
        self.vars_bound(offset)?;
        let b = self.nest.buffer(buffer);
        if let Some(scope) = b.scope.filter(|s| !self.bound.iter().any(|(v, _)| v == s)) {
            return Err(LoopError::OutOfScope { buffer: b.name.clone(), scope: scope.to_string() });
        }
        let (min, max) = offset.range(&self.bound);
        let (min, max) = (min + spread.0, max + spread.1);
        if min < 0 || max >= b.len() as i64 {
            return Err(LoopError::OutOfBounds { access, buffer: b.name.clone(), min, max, len: b.len() });
        }
        Ok((min, max))
    }
}

/// The extent of each variable of `offset` in the enclosing loops.
fn ranges(bound: &[(VarId, usize)], offset: &Affine) -> Vec<usize> {
    offset.terms.iter().map(|(v, _)| bound.iter().find(|(w, _)| w == v).map_or(1, |&(_, n)| n)).collect()
}

/// Calls `visit` with every offset `offset` takes (each variable over its range) until it
/// returns false. Returns false without visiting when there are more than
/// [`ENUMERATION_LIMIT`] combinations.
fn enumerate(offset: &Affine, ranges: &[usize], mut visit: impl FnMut(i64) -> bool) -> bool {
    let total: u64 = ranges.iter().map(|&n| n as u64).product();
    if total > ENUMERATION_LIMIT {
        return false;
    }
    // The last variable steps fastest, in a loop of its own (tens of millions of offsets for a
    // large temporary: the odometer runs once per row of them).
    let coefficients: Vec<i64> = offset.terms.iter().map(|(_, c)| *c).collect();
    let (inner, step) = match (ranges.last(), coefficients.last()) {
        (Some(&n), Some(&c)) => (n, c),
        _ => (1, 0),
    };
    let outer = &ranges[..ranges.len().saturating_sub(1)];
    let mut counter = vec![0usize; outer.len()];
    for _ in 0..outer.iter().map(|&n| n as u64).product::<u64>() {
        let mut o = offset.constant + coefficients.iter().zip(&counter).map(|(c, &i)| c * i as i64).sum::<i64>();
        for _ in 0..inner {
            if !visit(o) {
                return true;
            }
            o += step;
        }
        for d in (0..counter.len()).rev() {
            counter[d] += 1;
            if counter[d] < outer[d] {
                break;
            }
            counter[d] = 0;
        }
    }
    true
}

/// Whether an access at `offset` (a store or a load) of a temporary held in registers of `lanes`
/// lanes, inside the vectorized loop `vector` (its variable, extent and lanes) if any, names one
/// local variable: a scalar at a constant element (read anywhere, a vectorized loop broadcasting
/// it), or a whole aligned vector in a vectorized loop of exactly its lanes.
pub(crate) fn register_access(lanes: u32, vector: Option<(VarId, usize, u32)>, offset: &Affine, store: bool) -> Result<(), String> {
    match (lanes, vector, offset.terms.as_slice()) {
        (1, None, []) => Ok(()),
        (1, Some(_), []) if !store => Ok(()),
        (w, Some((v, extent, lanes)), [(u, 1)]) if w > 1 && *u == v && lanes == w && extent == w as usize && offset.constant % w as i64 == 0 => Ok(()),
        _ if lanes > 1 => Err(format!("an access at `{}` is not a whole vector of {lanes} lanes in a vectorized loop of {lanes} iterations", offset)),
        _ => Err(format!("an access at `{}` is not a scalar at a constant element", offset)),
    }
}

/// [`enumerate`] for an offset read under `guards`: the offsets it takes at the iterations
/// where every guard holds (each variable of the offset and the guards over its loop's range).
fn enumerate_guarded(offset: &Affine, guards: &[Guard], bound: &[(VarId, usize)], mut visit: impl FnMut(i64) -> bool) -> bool {
    let mut vars: Vec<VarId> = offset.terms.iter().chain(guards.iter().flat_map(|g| &g.0.terms)).map(|(v, _)| *v).collect();
    vars.sort_unstable();
    vars.dedup();
    let extents: Vec<usize> = vars.iter().map(|v| bound.iter().find(|(w, _)| w == v).map_or(1, |&(_, n)| n)).collect();
    if extents.iter().map(|&n| n as u64).product::<u64>() > ENUMERATION_LIMIT {
        return false;
    }
    let at = |a: &Affine, point: &[usize]| a.constant + a.terms.iter().map(|(v, c)| c * point[vars.binary_search(v).expect("collected")] as i64).sum::<i64>();
    let mut point = vec![0usize; vars.len()];
    loop {
        if guards.iter().all(|(g, lo, hi)| (*lo..*hi).contains(&at(g, &point))) && !visit(at(offset, &point)) {
            return true;
        }
        let Some(d) = (0..point.len()).rev().find(|&d| point[d] + 1 < extents[d]) else { return true };
        point[d] += 1;
        point[d + 1..].iter_mut().for_each(|p| *p = 0);
    }
}
