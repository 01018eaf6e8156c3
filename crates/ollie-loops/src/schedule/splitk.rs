//! `splitk v P`: split-K (TVM's rfactor of a whole stage). The outermost reduction loop `v` of a
//! contraction at the nest's top level — loops each the whole body of the one before, around the
//! output's initial store and the reduction loops around its accumulation — split into `P`
//! contiguous chunks. Each chunk computes the whole contraction over its part of `v` into a slice
//! of its own of a new temporary (chunk-major, so chunks on different threads share no cache
//! line but at the seams); a second nest (fresh variables) combines the slices into the output.
//! The loop over chunks (a new variable, outermost) has independent iterations: `parallel` runs
//! them on threads — a contraction with too few output elements to share, decode attention's
//! `p @ V` at batch one, on every core. Floating-point reassociation, as `accumulators`.

use ollie_graph::BinaryOp;

use super::{ScheduleError, Site};
use crate::ir::{Affine, Buffer, BufferId, BufferKind, Expr, LoopKind, Stmt, VarId};

pub(crate) fn splitk(site: &mut Site, var: VarId, chunks: usize) -> Result<(), ScheduleError> {
    let fresh = site.fresh;
    let (free, body) = chain(&site.siblings[site.at]);
    let not_one = "the loop is not the outermost reduction loop of a contraction at the nest's top level";
    let [Stmt::Store { buffer, offset, value: Expr::Const(init) }, reduction @ Stmt::Loop { .. }] = body else {
        return Err(site.illegal(not_one));
    };
    let (reduce, inner) = chain(reduction);
    let [Stmt::Store { buffer: b, offset: o, value: Expr::Binary(op, acc, e) }] = inner else {
        return Err(site.illegal(not_one));
    };
    let is_out = |x: &Expr| matches!(x, Expr::Load { buffer: a, offset: ao } if a == buffer && ao == offset);
    if reduce.first().map(|r| r.0) != Some(var) || b != buffer || o != offset || !is_out(acc) {
        return Err(site.illegal(not_one));
    }
    if free.iter().chain(&reduce).any(|l| l.2 != LoopKind::Serial) {
        return Err(site.illegal("a loop of the contraction is not serial"));
    }
    if reduce.iter().any(|r| offset.coefficient(r.0) != 0) {
        return Err(site.illegal("the output's index moves with a reduction loop"));
    }
    let Some(identity) = identity(*op) else {
        return Err(site.illegal("the reduction is not a sum, product, max or min"));
    };
    let mut loads = Vec::new();
    e.every_load(&mut loads);
    if loads.iter().any(|(l, _)| l == buffer) {
        return Err(site.illegal("the reduced value reads the output"));
    }
    let extent = reduce[0].1;
    if chunks < 2 || extent % chunks != 0 || chunks == extent {
        return Err(ScheduleError::NotDivisible { var: var.to_string(), extent, factor: chunks });
    }
    let out = &site.buffers[buffer.0 as usize];
    if out.scope.is_some() {
        return Err(site.illegal(&format!("`{}` lives in a loop", out.name)));
    }
    let (op, init, out_len, e, buffer, offset) = (*op, *init, out.len() as i64, (**e).clone(), *buffer, offset.clone());
    let part = BufferId(site.buffers.len() as u32);
    let name = format!("part{}", part.0);
    site.buffers.push(Buffer { name, kind: BufferKind::Temp, dtype: out.dtype, shape: vec![chunks * out_len as usize], scope: None, registers: None });

    let (chunk, k) = (VarId(fresh), VarId(fresh + 1));
    let slice = |c: VarId, o: &Affine| Affine::var(c).scale(out_len).add_scaled(o, 1);
    let load = |b: BufferId, a: Affine| Box::new(Expr::Load { buffer: b, offset: a });
    let len = extent / chunks;
    // Each chunk: the contraction over its part of `var`, into its slice.
    let by = Affine::var(chunk).scale(len as i64).add_scaled(&Affine::var(var), 1);
    let mine = slice(chunk, &offset);
    let step = Expr::Binary(op, load(part, mine.clone()), Box::new(e.map_affine(&|a| a.substitute(var, &by))));
    let mut reduced = vec![Stmt::Store { buffer: part, offset: mine.clone(), value: step }];
    for (i, &(v, n, _)) in reduce.iter().enumerate().rev() {
        reduced = vec![one(v, if i == 0 { len } else { n }, reduced)];
    }
    let partial = nest(&free, |_| None, [vec![Stmt::Store { buffer: part, offset: mine, value: Expr::Const(identity) }], reduced].concat());
    // The combine: the output's initial value, then each chunk's slice in order.
    let renamed: Vec<(VarId, Affine)> = free.iter().enumerate().map(|(i, &(v, _, _))| (v, Affine::var(VarId(fresh + 2 + i as u32)))).collect();
    let at = renamed.iter().fold(offset.clone(), |a, (v, by)| a.substitute(*v, by));
    let combine = vec![
        Stmt::Store { buffer, offset: at.clone(), value: Expr::Const(init) },
        one(k, chunks, vec![Stmt::Store { buffer, offset: at.clone(), value: Expr::Binary(op, load(buffer, at.clone()), load(part, slice(k, &at))) }]),
    ];
    let combine = nest(&free, |i| Some(VarId(fresh + 2 + i as u32)), combine);
    let at = site.at;
    site.siblings.splice(at..=at, [one(chunk, chunks, vec![partial]), combine]);
    Ok(())
}

/// The identity of a reduction's operator, when it is one `accumulators`, `rfactor` and `splitk`
/// can split.
pub(crate) fn identity(op: BinaryOp) -> Option<f64> {
    match op {
        BinaryOp::Add => Some(0.0),
        BinaryOp::Mul => Some(1.0),
        BinaryOp::Max => Some(f64::NEG_INFINITY),
        BinaryOp::Min => Some(f64::INFINITY),
        _ => None,
    }
}

/// The loops from `s` inward while each is the whole body of the one before (variable, extent,
/// kind; outermost first), and the innermost one's body.
fn chain(s: &Stmt) -> (Vec<(VarId, usize, LoopKind)>, &[Stmt]) {
    let mut loops = Vec::new();
    let mut body = std::slice::from_ref(s);
    while let [Stmt::Loop { var, extent, kind, body: inner }] = body {
        loops.push((*var, *extent, *kind));
        body = inner;
    }
    (loops, body)
}

/// `body` inside serial copies of `loops` (the `i`-th renamed to `rename(i)` when that is some).
fn nest(loops: &[(VarId, usize, LoopKind)], rename: impl Fn(usize) -> Option<VarId>, body: Vec<Stmt>) -> Stmt {
    let mut body = body;
    for (i, &(v, n, _)) in loops.iter().enumerate().rev() {
        body = vec![one(rename(i).unwrap_or(v), n, body)];
    }
    body.pop().expect("a contraction has a loop")
}

fn one(var: VarId, extent: usize, body: Vec<Stmt>) -> Stmt {
    Stmt::Loop { var, extent, kind: LoopKind::Serial, body }
}
