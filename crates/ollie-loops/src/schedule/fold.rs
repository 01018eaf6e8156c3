//! `fold t v`: storage folding. The temporary `t`, used only inside loop `v`, lives in the loop's
//! body with the elements one iteration touches: its index loses the terms of `v` and of the loops
//! around it, and it is allocated once per iteration (on the stack, per thread) instead of at full
//! size per call. A producer computed at its consumer's loop (`fuse`) then keeps its row in L1.
//!
//! Legal when every element an iteration reads was written earlier in the same iteration: then no
//! value crosses iterations, and one iteration's elements can be reused by the next. All accesses
//! to `t` must move alike with `v` and the loops around it, so one iteration (all of them at 0)
//! stands for every other, and is checked by walking it in program order (a loop none of whose
//! accesses moves with it walked for one step: its other steps repeat the first).

use std::collections::HashMap;

use super::{ScheduleError, Site};
use crate::ir::{Affine, Buffer, BufferId, Expr, Stmt, VarId, STACK_BYTES};

/// All folded temporaries of a kernel together, in bytes, at most (a thread's stack holds them).
pub const STACK_LIMIT: usize = 256 << 10;

/// Refuses a step that would put more than [`STACK_LIMIT`] of folded temporaries on the stack
/// with `more` bytes (larger temporaries living in a loop are on the heap, registers nowhere).
pub(crate) fn fits_stack(site: &Site, more: usize) -> Result<(), ScheduleError> {
    let scoped: usize = site.buffers.iter().filter(|b| b.scope.is_some() && b.registers.is_none() && b.bytes() <= STACK_BYTES).map(|b| b.bytes()).sum();
    if scoped + more > STACK_LIMIT {
        return Err(site.illegal(&format!("the kernel's folded temporaries would hold {} bytes on the stack, more than {} KiB", scoped + more, STACK_LIMIT >> 10)));
    }
    Ok(())
}

/// Statement instances the walk of one iteration visits, at most.
const WALK_LIMIT: u64 = 1 << 22;

/// `uses`: the temporary's accesses in the whole nest.
pub(crate) fn fold(site: &mut Site, name: &str, uses: usize) -> Result<(), ScheduleError> {
    let id = site.named(name, true)?;
    site.one_by_one()?;
    let (var, _, _, body) = site.loop_ref();
    if site.buffers[id.0 as usize].scope.is_some() {
        return Err(site.illegal(&format!("`{name}` is folded already")));
    }
    let mut inner = Vec::new();
    loop_vars(body, &mut inner);
    let mut accesses = Vec::new();
    for s in body {
        s.accesses(id, &mut accesses);
    }
    if accesses.is_empty() {
        return Err(site.illegal(&format!("the loop does not use `{name}`")));
    }
    if accesses.len() < uses {
        return Err(site.illegal(&format!("`{name}` is used outside the loop")));
    }
    // The part of an index fixed during one iteration: the terms of `v` and the loops around it.
    let fixed = |a: &Affine| -> Vec<(VarId, i64)> { a.terms.iter().filter(|(v, _)| !inner.contains(v)).copied().collect() };
    if accesses.iter().any(|a| fixed(a) != fixed(&accesses[0])) {
        return Err(site.illegal(&format!("accesses of `{name}` move differently with the loops around them")));
    }
    let mut walk = Walk::new(id, site.buffers[id.0 as usize].shape.iter().product());
    for s in body {
        walk.stmt(s).map_err(|r| site.illegal(&r))?;
    }
    // The folded index: the inner terms, shifted to start at 0.
    let extents = inner_extents(body);
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for a in &accesses {
        let (mut l, mut h) = (a.constant, a.constant);
        for (v, c) in a.terms.iter().filter(|(v, _)| inner.contains(v)) {
            let last = c * (extents.iter().find(|(w, _)| w == v).map_or(1, |(_, n)| *n as i64) - 1);
            l += last.min(0);
            h += last.max(0);
        }
        lo = lo.min(l);
        hi = hi.max(h);
    }
    let len = (hi - lo + 1) as usize;
    let bytes = Buffer { shape: vec![len], ..site.buffers[id.0 as usize].clone() }.bytes();
    if bytes > STACK_BYTES {
        return Err(site.illegal(&format!("one iteration's {bytes} bytes of `{name}` exceed the {} KiB a temporary may hold on the stack", STACK_BYTES >> 10)));
    }
    fits_stack(site, bytes)?;
    let shift = |a: &Affine| Affine { terms: a.terms.iter().filter(|(v, _)| inner.contains(v)).copied().collect(), constant: a.constant - lo };
    let (_, _, _, body) = site.the_loop();
    for s in body.iter_mut() {
        *s = rewrite(s, id, id, &shift);
    }
    let b = &mut site.buffers[id.0 as usize];
    b.shape = vec![len];
    b.scope = Some(var);
    Ok(())
}

/// The accesses of temporary `name` in `body`, counted.
pub(crate) fn count_uses(body: &[Stmt], name: &str, buffers: &[Buffer]) -> usize {
    let Some(id) = buffers.iter().position(|b| b.name == name).map(|i| BufferId(i as u32)) else { return 0 };
    let mut accesses = Vec::new();
    for s in body {
        s.accesses(id, &mut accesses);
    }
    accesses.len()
}

pub(super) fn loop_vars(body: &[Stmt], out: &mut Vec<VarId>) {
    for s in body {
        if let Stmt::Loop { var, body, .. } = s {
            out.push(*var);
            loop_vars(body, out);
        }
    }
}

pub(super) fn inner_extents(body: &[Stmt]) -> Vec<(VarId, usize)> {
    let mut out = Vec::new();
    let mut stack: Vec<&Stmt> = body.iter().collect();
    while let Some(s) = stack.pop() {
        if let Stmt::Loop { var, extent, body, .. } = s {
            out.push((*var, *extent));
            stack.extend(body);
        }
    }
    out
}

/// `s` with every access of `buffer` made an access of `to` at the index mapped by `f`.
pub(super) fn rewrite(s: &Stmt, buffer: BufferId, to: BufferId, f: &dyn Fn(&Affine) -> Affine) -> Stmt {
    match s {
        Stmt::Loop { var, extent, kind, body } => Stmt::Loop { var: *var, extent: *extent, kind: *kind, body: body.iter().map(|s| rewrite(s, buffer, to, f)).collect() },
        Stmt::Store { buffer: b, offset, value } => {
            let (b, offset) = if *b == buffer { (to, f(offset)) } else { (*b, offset.clone()) };
            Stmt::Store { buffer: b, offset, value: rewrite_expr(value, buffer, to, f) }
        }
        Stmt::Prefetch { buffer: b, offset, indices } if *b == buffer => Stmt::Prefetch { buffer: to, offset: f(offset), indices: indices.clone() },
        Stmt::Prefetch { .. } => s.clone(),
    }
}

fn rewrite_expr(e: &Expr, buffer: BufferId, to: BufferId, f: &dyn Fn(&Affine) -> Affine) -> Expr {
    match e {
        Expr::Load { buffer: b, offset } if *b == buffer => Expr::Load { buffer: to, offset: f(offset) },
        _ => e.map_operands(|x| rewrite_expr(x, buffer, to, f)),
    }
}

/// One iteration of the loop, walked in program order with every variable around it at 0:
/// which elements of the temporary are written, and whether a read comes before its write.
/// What it learns of each statement once (whether a loop's accesses move with it, a store's
/// loads of the temporary) is kept by the statement's address for its other instances, and the
/// written elements are a bitmap: a row of 65536 scores walks in milliseconds.
pub(super) struct Walk {
    buffer: BufferId,
    /// One bit per element of the buffer.
    written: Vec<u64>,
    /// The values of the loops entered, by variable (0 for the loops around the walk).
    env: Vec<i64>,
    visited: u64,
    /// Per loop met: `None` if it does not touch the buffer, else whether an access moves with it.
    loops: HashMap<*const Stmt, Option<bool>, ByAddress>,
    /// Per store met: its value's loads of the buffer.
    loads: HashMap<*const Stmt, Vec<Affine>, ByAddress>,
}

/// Statements are told apart by their addresses, which need no hashing beyond a multiply.
#[derive(Default, Clone, Copy)]
struct ByAddress;

impl std::hash::BuildHasher for ByAddress {
    type Hasher = AddressHasher;
    fn build_hasher(&self) -> AddressHasher {
        AddressHasher(0)
    }
}

struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    }
    fn write_usize(&mut self, n: usize) {
        // Addresses are aligned: the product's high bits, folded down, spread the low ones too.
        let x = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = x ^ (x >> 29);
    }
}

impl Walk {
    /// A walk over accesses of `buffer`, which holds `elements` elements.
    pub fn new(buffer: BufferId, elements: usize) -> Walk {
        Walk { buffer, written: vec![0; elements.div_ceil(64)], env: Vec::new(), visited: 0, loops: HashMap::default(), loads: HashMap::default() }
    }


    fn set(&mut self, var: VarId, value: i64) {
        let k = var.0 as usize;
        if self.env.len() <= k {
            self.env.resize(k + 1, 0);
        }
        self.env[k] = value;
    }

    pub fn stmt(&mut self, s: &Stmt) -> Result<(), String> {
        match s {
            Stmt::Loop { var, extent, body, .. } => {
                let buffer = self.buffer;
                let moves = *self.loops.entry(s as *const Stmt).or_insert_with(|| {
                    let mut uses = Vec::new();
                    s.accesses(buffer, &mut uses);
                    (!uses.is_empty()).then(|| uses.iter().any(|a| a.terms.iter().any(|(v, c)| v == var && *c != 0)))
                });
                // Where no access moves with the loop, every iteration touches the elements the
                // first did, in the same order, after it: a read the first found written stays
                // written. One iteration stands for all (a reduction over millions of elements
                // into a temporary walks one step of it).
                let walked = match moves {
                    None => return Ok(()),
                    Some(true) => *extent as i64,
                    Some(false) => (*extent as i64).min(1),
                };
                for i in 0..walked {
                    self.set(*var, i);
                    for s in body {
                        self.stmt(s)?;
                    }
                }
                self.set(*var, 0);
                Ok(())
            }
            Stmt::Prefetch { .. } => Ok(()),
            Stmt::Store { buffer, offset, value } => {
                self.visited += 1;
                if self.visited > WALK_LIMIT {
                    return Err("one iteration is too long to check".into());
                }
                let own = self.buffer;
                let loads = self.loads.entry(s as *const Stmt).or_insert_with(|| {
                    let mut loads = Vec::new();
                    value.loads(own, &mut loads);
                    loads
                });
                if loads.iter().any(|a| !is_written(&self.written, at(&self.env, a))) {
                    return Err("an iteration reads an element it has not written".into());
                }
                if *buffer == self.buffer {
                    if let Ok(i) = usize::try_from(at(&self.env, offset)) {
                        if let Some(w) = self.written.get_mut(i / 64) {
                            *w |= 1 << (i % 64);
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

/// The element `a` names with the loops' values `env` (by variable; 0 for those not entered).
fn at(env: &[i64], a: &Affine) -> i64 {
    a.constant + a.terms.iter().map(|(v, c)| c * env.get(v.0 as usize).copied().unwrap_or(0)).sum::<i64>()
}

fn is_written(written: &[u64], at: i64) -> bool {
    usize::try_from(at).ok().and_then(|i| written.get(i / 64).map(|w| w >> (i % 64) & 1 == 1)).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk of one iteration of `i0` in `text` (the nest's first statement).
    fn walk(text: &str) -> Result<u64, String> {
        let nest = crate::parse(text).expect("the nest parses");
        let Stmt::Loop { body, .. } = &nest.body[0] else { panic!("a loop first") };
        let t = nest.buffers.iter().position(|b| b.name == "t").expect("a temporary `t`");
        let mut walk = Walk::new(BufferId(t as u32), nest.buffers[t].shape.iter().product());
        for s in body {
            walk.stmt(s)?;
        }
        Ok(walk.visited)
    }

    /// A loop none of whose accesses of the temporary move with it is walked for one step, and
    /// that step still finds a read that comes before its element's write — the checker refuses
    /// such a nest, so only the walk itself can show it.
    #[test]
    fn a_loop_whose_accesses_do_not_move_is_walked_one_step_and_still_checked() {
        let long = "kernel k(x: f32[2,8388608]) -> (out: f32[2])\ntemp t: f32[2]\nfor i0 in 0..2 {\n  t[i0] = -inf\n  for i1 in 0..8388608 {\n    t[i0] = max(t[i0], x[8388608 * i0 + i1])\n  }\n  out[i0] = t[i0]\n}\n";
        assert_eq!(walk(long), Ok(3), "the initialization, one step of the row and the result");
        let unwritten = long.replace("  t[i0] = -inf\n", "");
        assert_eq!(walk(&unwritten), Err("an iteration reads an element it has not written".into()));
        // A loop whose accesses move is still walked in full.
        let moving = "kernel k(x: f32[2,8]) -> (out: f32[2,8])\ntemp t: f32[16]\nfor i0 in 0..2 {\n  for i1 in 0..8 {\n    t[8 * i0 + i1] = x[8 * i0 + i1]\n  }\n  for i2 in 0..8 {\n    out[8 * i0 + i2] = t[8 * i0 + i2]\n  }\n}\n";
        assert_eq!(walk(moving), Ok(16));
    }
}
