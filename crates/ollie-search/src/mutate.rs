//! The `mutate` proposer: a random legal change to a schedule — a new step on a loop of the
//! scheduled nest (including packing an input and unroll-and-jam), a step removed, or other
//! compiler flags. A kernel written whole (by an LLM)
//! has no schedule: its flags are what `mutate` changes.

use ollie_loops::{apply_step, BufferKind, LoopKind, LoopNest, Schedule, Step, Stmt, VarId};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::space::Target;
use crate::{Form, Kernel, Proposal, Propose};

/// Compiler flags the proposer adds to [`crate::BASE_FLAGS`] and takes away, each group together.
/// "Vector math" defines `__FAST_MATH__` only for glibc's headers, which then declare the SIMD variants of `expf`, `logf`, ... in libmvec: loops calling
/// them vectorize without any of `-ffast-math`'s value-changing optimizations (the verifier
/// judges libmvec's accuracy like any other kernel's). `-ffast-math` itself is not offered: it
/// flushes subnormals and assumes no NaN or infinity, so its kernels pass some input sets and
/// fail others — searches spent their budget on chains of them that the final verification, with
/// fresh seeds, then refused.
const OPTIONAL_FLAGS: &[&[&str]] = &[
    &["-funroll-loops"],
    &["-fno-math-errno"],
    &["-fno-trapping-math"],
    &["-fno-tree-vectorize"],
    &["-fno-math-errno", "-D__FAST_MATH__", "-lmvec"],
];

pub struct Mutate {
    naive: LoopNest,
    /// The machine register tiles are sized for; without it, tiles are not resized.
    target: Option<Target>,
}

impl Mutate {
    /// Mutates schedules of `naive`, the kernel's naive loop nest.
    pub fn new(naive: LoopNest) -> Mutate {
        Mutate { naive, target: None }
    }

    /// Also tunes the register tiles of contractions for `target`: now and then a schedule
    /// holding a tile is replaced by the sketch with another tile shape that fits the register
    /// file, blocked for the caches or not.
    pub fn with_tiles(self, target: Target) -> Mutate {
        Mutate { target: Some(target), ..self }
    }
}

/// A loop of the scheduled nest, with what the proposer needs to pick a step for it.
struct LoopSite {
    var: VarId,
    extent: usize,
    innermost: bool,
    /// The loops directly inside it.
    children: Vec<VarId>,
    /// The loop right after it.
    next_sibling: Option<(VarId, usize)>,
    /// Whether a statement comes before it.
    follows: bool,
    /// Whether a statement other than a loop comes right after it (a loop after it can be
    /// hoisted instead).
    precedes: bool,
    statements: usize,
    /// Loops around it.
    depth: usize,
}

fn sites(body: &[Stmt], out: &mut Vec<LoopSite>) {
    sites_at(body, 0, out)
}

fn sites_at(body: &[Stmt], depth: usize, out: &mut Vec<LoopSite>) {
    for (i, s) in body.iter().enumerate() {
        if let Stmt::Loop { var, extent, kind, body: inner } = s {
            if *kind == LoopKind::Serial {
                let children = inner.iter().filter_map(|s| if let Stmt::Loop { var, .. } = s { Some(*var) } else { None }).collect();
                let next_sibling = match body.get(i + 1) {
                    Some(Stmt::Loop { var, extent, .. }) => Some((*var, *extent)),
                    _ => None,
                };
                let innermost = !inner.iter().any(|s| matches!(s, Stmt::Loop { .. }));
                out.push(LoopSite { var: *var, extent: *extent, innermost, children, next_sibling, follows: i > 0, precedes: matches!(body.get(i + 1), Some(Stmt::Store { .. })), statements: inner.len(), depth });
            }
            sites_at(inner, depth + 1, out);
        }
    }
}

fn parallel_loops(body: &[Stmt]) -> Vec<VarId> {
    let mut out = Vec::new();
    for s in body {
        if let Stmt::Loop { var, kind, body, .. } = s {
            if *kind == LoopKind::Parallel {
                out.push(*var);
            }
            out.extend(parallel_loops(body));
        }
    }
    out
}

fn loop_vars(nest: &LoopNest) -> Vec<VarId> {
    let mut all = Vec::new();
    sites(&nest.body, &mut all);
    all.into_iter().map(|s| s.var).collect()
}

fn pick<T: Clone>(rng: &mut ChaCha8Rng, items: &[T]) -> Option<T> {
    (!items.is_empty()).then(|| items[rng.random_range(0..items.len())].clone())
}

/// A random step for one of the nest's loops (not yet checked for legality): a loop, then one
/// of the kinds of step that fit its shape.
fn random_step(nest: &LoopNest, focus: Option<&[VarId]>, rng: &mut ChaCha8Rng) -> Option<Step> {
    let mut all = Vec::new();
    sites(&nest.body, &mut all);
    if let Some(vars) = focus {
        all.retain(|s| vars.contains(&s.var));
    }
    // Now and then, a parallel loop shares out the loop inside it too.
    let parallel = parallel_loops(&nest.body);
    if !parallel.is_empty() && focus.is_none() && rng.random_range(0..8) == 0 {
        return pick(rng, &parallel).map(|var| Step::Join { var });
    }
    let site = all.get(rng.random_range(0..all.len().max(1)))?;
    let var = site.var;
    let factors = |options: &[usize]| -> Vec<usize> { options.iter().copied().filter(|f| site.extent % f == 0 && *f < site.extent).collect() };
    let mut options: Vec<Step> = Vec::new();
    if let Some(factor) = pick(rng, &factors(&[2, 4, 8, 16, 32, 64])) {
        options.push(Step::Split { var, factor });
    }
    if let Some(inner) = pick(rng, &site.children) {
        options.push(Step::Reorder { outer: var, inner });
    }
    // Contiguous rows walked as one run (legal only where the indices allow it).
    if site.children.len() == 1 && site.statements == 1 {
        options.push(Step::Merge { var });
    }
    if site.statements > 1 {
        options.push(Step::Distribute { var });
    }
    if let Some((second, _)) = site.next_sibling.filter(|s| s.1 == site.extent) {
        options.push(Step::Fuse { first: var, second });
    }
    if site.follows {
        options.push(Step::Hoist { var });
    }
    if site.precedes {
        options.push(Step::Sink { var });
    }
    if site.innermost {
        if let Some(factor) = pick(rng, &factors(&[4, 8, 16, 32])) {
            options.push(Step::Accumulators { var, factor });
        }
        if let Some(width) = pick(rng, &[4, 8, 16].into_iter().filter(|w| *w as usize <= site.extent).collect::<Vec<u32>>()) {
            options.push(Step::Vectorize { var, width });
        }
        options.push(Step::Simd { var });
        if let Some(chunks) = pick(rng, &factors(&[2, 4, 8, 16])) {
            options.push(Step::Rfactor { var, chunks });
        }
    }
    // A temporary folded into this loop (legal only if the loop holds all its uses).
    let temps: Vec<String> = nest.temps().filter(|(_, b)| b.scope.is_none()).map(|(_, b)| b.name.clone()).collect();
    if let Some(buffer) = pick(rng, &temps) {
        options.push(Step::Fold { buffer, var });
    }
    // A padded copy read in place instead (legal only for a concatenation's pieces), and this
    // loop split where the guards it moves are decided.
    if let Some(buffer) = pick(rng, &temps) {
        options.push(Step::Guard { buffer });
    }
    options.push(Step::Peel { var, multiple: pick(rng, &[1, 4, 8, 16])? });
    // A temporary living in this loop replaced by its value where it is read.
    let own: Vec<String> = nest.temps().filter(|(_, b)| b.scope == Some(var) && b.registers.is_none()).map(|(_, b)| b.name.clone()).collect();
    if let Some(buffer) = pick(rng, &own) {
        options.push(Step::Inline { buffer, var });
    }
    // A short loop replicated (unroll-and-jam), or an input's window copied into a contiguous
    // scratch buffer at this loop (packing); each legal only where its check allows.
    if site.extent <= 16 {
        options.push(Step::Expand { var });
    }
    let inputs: Vec<String> = nest.buffers.iter().filter(|b| matches!(b.kind, BufferKind::Input(_))).map(|b| b.name.clone()).collect();
    if let Some(buffer) = pick(rng, &inputs) {
        options.push(Step::Cache { buffer, var });
    }
    // Threads pay a wake-up per parallel loop entered: only outermost loops are worth it.
    if site.depth == 0 {
        options.push(Step::Parallel { var });
    }
    options.push(Step::Unroll { var, factor: pick(rng, &[2, 4, 8])? });
    // The steps that change what the hardware does (loop order, fusion, threads, vector lanes,
    // independent accumulators, folded temporaries) are drawn twice as often as the ones that mostly reshape it.
    let heavy: Vec<Step> = options.iter().filter(|s| matches!(s, Step::Reorder { .. } | Step::Fuse { .. } | Step::Parallel { .. } | Step::Vectorize { .. } | Step::Accumulators { .. } | Step::Fold { .. } | Step::Rfactor { .. })).cloned().collect();
    options.extend(heavy);
    pick(rng, &options)
}

/// The size a step chose, when it has one `mutate` may resize.
fn size(step: &mut Step) -> Option<&mut usize> {
    match step {
        Step::Split { factor, .. } | Step::Accumulators { factor, .. } => Some(factor),
        Step::Rfactor { chunks, .. } | Step::SplitK { chunks, .. } => Some(chunks),
        _ => None,
    }
}

/// Switches one flag group on or off, or the optimization level between -O2 and -O3.
fn mutate_flags(flags: &mut Vec<String>, rng: &mut ChaCha8Rng) {
    if rng.random_range(0..3) == 0 {
        let level = if flags.iter().any(|f| f == "-O3") { "-O2" } else { "-O3" };
        flags.retain(|f| !matches!(f.as_str(), "-O2" | "-O3"));
        flags.insert(0, level.to_string());
        return;
    }
    let group = OPTIONAL_FLAGS[rng.random_range(0..OPTIONAL_FLAGS.len())];
    if group.iter().all(|f| flags.iter().any(|g| g == f)) {
        flags.retain(|g| !group.contains(&g.as_str()));
    } else {
        flags.extend(group.iter().filter(|f| !flags.iter().any(|g| g == *f)).map(|f| f.to_string()).collect::<Vec<_>>());
    }
}

impl Mutate {
    /// A mutation of `current`, a schedule of `naive`.
    fn schedule(&self, naive: &LoopNest, current: &Schedule, rng: &mut ChaCha8Rng) -> Option<Schedule> {
        let nest = current.apply(naive).ok()?;
        for _ in 0..64 {
            let mut next = current.clone();
            // A tenth removals, a tenth resizes, three tenths flags, the rest new steps.
            match rng.random_range(0..11) {
                0 if !next.steps.is_empty() => {
                    next.steps.remove(rng.random_range(0..next.steps.len()));
                    if next.apply(naive).is_err() {
                        continue;
                    }
                }
                10 if self.target.is_some() && rng.random_range(0..2) == 0 && next.steps.iter().any(|s| matches!(s, Step::Registers { .. })) => {
                    next = crate::sketch::retiled(naive, self.target.as_ref().expect("checked"), rng)?;
                }
                10 => {
                    // A size the schedule chose, halved or doubled: a register tile's rows or
                    // columns, a cache block, a count of chunks or accumulators. The steps after
                    // it name the same loops, so the whole schedule usually still replays.
                    let sized: Vec<usize> = (0..next.steps.len()).filter(|&k| size(&mut next.steps[k]).is_some()).collect();
                    let Some(k) = pick(rng, &sized) else { continue };
                    let n = size(&mut next.steps[k]).expect("a sized step");
                    *n = if rng.random_range(0..2) == 0 { *n * 2 } else { *n / 2 };
                    if *n < 2 || next.apply(naive).is_err() {
                        continue;
                    }
                }
                1..=3 => mutate_flags(&mut next.flags, rng),
                _ => {
                    // One new step; half the time followed by another on the loops it made or
                    // moved, and so on (a reduction split into accumulators pays only with its
                    // lanes vectorized, a loop distributed only with its parts reordered).
                    let mut scheduled = nest.clone();
                    let mut focus: Option<Vec<VarId>> = None;
                    for _ in 0..4 {
                        let Some(step) = random_step(&scheduled, focus.as_deref(), rng) else { break };
                        let before = loop_vars(&scheduled);
                        if apply_step(&mut scheduled, &step).is_err() {
                            break;
                        }
                        let mut touched: Vec<VarId> = loop_vars(&scheduled).into_iter().filter(|v| !before.contains(v)).collect();
                        touched.extend(step.var());
                        if let Step::Reorder { inner, .. } = step {
                            touched.push(inner);
                        }
                        next.steps.push(step);
                        focus = Some(touched);
                        if rng.random_range(0..2) == 0 {
                            break;
                        }
                    }
                }
            }
            if next != *current {
                return Some(next);
            }
        }
        None
    }
}

/// Mutations read nothing of the evaluator's notes.
impl<N> Propose<Kernel, N> for Mutate {
    fn name(&self) -> &str {
        "mutate"
    }

    fn propose(&mut self, current: &Kernel, rng: &mut ChaCha8Rng) -> Proposal<Kernel> {
        let next = match current.form(&self.naive) {
            Form::Scheduled { schedule, naive } => self.schedule(naive, schedule, rng).map(|s| current.with_schedule(s)),
            Form::Written { source, flags } => {
                let mut next = flags.to_vec();
                for _ in 0..8 {
                    mutate_flags(&mut next, rng);
                    if next != flags {
                        break;
                    }
                }
                (next != flags).then(|| Kernel::Written { source: source.to_string(), flags: next })
            }
        };
        next.map_or(Proposal::NotNow, Proposal::Candidate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::initial_schedule;
    use rand::SeedableRng;

    /// The naive nest of an `n` × `n` × `n` matmul.
    fn matmul(n: usize) -> LoopNest {
        ollie_loops::parse(&format!(
            "kernel mm(a: f32[{n},{n}], b: f32[{n},{n}]) -> (out: f32[{n},{n}])\n\
             for i0 in 0..{n} {{\n  for i1 in 0..{n} {{\n    out[{n} * i0 + i1] = 0.0\n    for i2 in 0..{n} {{\n      out[{n} * i0 + i1] = add(out[{n} * i0 + i1], mul(a[{n} * i0 + i2], b[i1 + {n} * i2]))\n    }}\n  }}\n}}\n"
        ))
        .unwrap()
    }

    /// Mutations of a small matmul reach packing (`cache` of an input) and unroll-and-jam
    /// (`expand`), and every schedule they make replays on the naive nest.
    #[test]
    fn mutations_pack_inputs_and_expand_short_loops() {
        let naive = matmul(8);
        let mutate = Mutate::new(naive.clone());
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (mut cached, mut expanded) = (false, false);
        for _ in 0..500 {
            let Some(next) = mutate.schedule(&naive, &initial_schedule(), &mut rng) else { continue };
            next.apply(&naive).unwrap();
            cached |= next.steps.iter().any(|s| matches!(s, Step::Cache { .. }));
            expanded |= next.steps.iter().any(|s| matches!(s, Step::Expand { .. }));
        }
        assert!(cached && expanded, "cache proposed: {cached}, expand proposed: {expanded}");
    }

    /// Mutations of matmul's first sketch resize its register tile (another shape that fits the
    /// register file), and the resized schedule replays with its tile still in registers.
    #[test]
    fn mutations_resize_a_register_tile() {
        let naive = matmul(64);
        let target = crate::Target { lanes: 8, caches: Some(crate::Caches { l1d_bytes: 32 << 10, l2_bytes: 1 << 20 }) };
        let first = crate::sketches(&naive, &target).remove(0);
        let shape = |s: &Schedule| -> Vec<Step> { s.steps.iter().filter(|s| matches!(s, Step::Split { .. })).take(2).cloned().collect() };
        let mutate = Mutate::new(naive.clone()).with_tiles(target);
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut resized = std::collections::HashSet::new();
        for _ in 0..400 {
            let Some(next) = mutate.schedule(&naive, &first, &mut rng) else { continue };
            let nest = next.apply(&naive).unwrap();
            if shape(&next) != shape(&first) && nest.buffers.iter().any(|b| b.registers.is_some()) {
                resized.insert(shape(&next));
            }
        }
        assert!(resized.len() >= 3, "{} resized tiles from\n{first}", resized.len());
    }
}
