//! Schedules: a list of named steps that transform a loop nest, each after a legality check, and
//! that print as text and replay on the naive nest.
//!
//! ```text
//! distribute i1
//! reorder i4 i2
//! fuse i0 i2
//! accumulators i1 8
//! split i3 8
//! parallel i0
//! vectorize i3 8
//! simd i9
//! unroll i9 4
//! fold t5 i0
//! stream i9
//! rfactor i1 8
//! splitk i3 8
//! join i0
//! prefetch i3 i0
//! cache out i1
//! expand i4
//! merge i2
//! registers c0 i1
//! guard t3
//! peel i2
//! flags -O3 -march=native -fopenmp
//! ```
//!
//! One primitive per file, each with its legality check; `test_data/schedule/` holds their text
//! tests (a nest, steps, the nest they make).

use std::fmt;

use crate::ir::{Buffer, BufferId, BufferKind, LoopKind, LoopNest, Stmt, VarId};

mod accumulators;
mod cache;
mod deps;
mod demote;
mod distribute;
mod expand;
mod fold;
mod fuse;
mod guard;
mod hoist;
mod inline;
mod join;
mod merge;
mod parallel;
mod peel;
mod prefetch;
mod registers;
mod reorder;
mod rfactor;
mod split;
mod splitk;
mod stream;
mod unroll;
mod vectorize;

use deps::contains_kind;

/// One transformation of a loop, named by its variable.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Step {
    /// `for v in 0..n` becomes `for v in 0..n/f { for w in 0..f }` with `v ↦ f·v + w`; `w` is the
    /// next unused variable. The order of iterations is unchanged, so it is always legal.
    Split { var: VarId, factor: usize },
    /// Swaps a loop with a loop directly inside it (interchange); statements beside the inner
    /// loop move to loops of their own before and after it (distribution). Legal when the outer
    /// loop's iterations are independent: every dependence is then carried by the inner loop
    /// alone, and keeps its direction.
    Reorder { outer: VarId, inner: VarId },
    /// A loop whose body has several statements becomes one loop per statement (loop fission);
    /// the copies after the first get fresh variables. Legal when the iterations are independent.
    Distribute { var: VarId },
    /// A loop and the loop right after it, over the same extent, become one loop running both
    /// bodies: the producer's iteration is computed at the consumer's (compute-at at the outer
    /// level). Legal when the accesses to the buffers tying the two bodies (one writes what the
    /// other touches) are independent across the fused iterations.
    Fuse { first: VarId, second: VarId },
    /// The loop moves before the statement right before it: legal when neither reads or writes
    /// a buffer the other writes.
    Hoist { var: VarId },
    /// The loop moves after the statement right after it: legal when neither reads or writes a
    /// buffer the other writes.
    Sink { var: VarId },
    /// A reduction loop accumulates into `factor` partial results (a new temporary), combined
    /// after the loop: floating-point reassociation, which lets the partials run in SIMD lanes.
    Accumulators { var: VarId, factor: usize },
    /// Run the iterations on several threads: legal when iterations write disjoint elements and
    /// read no element another iteration writes.
    Parallel { var: VarId },
    /// Run the iterations in SIMD lanes (OpenMP `simd`): an innermost loop with the same
    /// independence.
    Simd { var: VarId },
    /// Explicit SIMD in the emitted C: `width` iterations at once in GCC vector types, then the
    /// remaining iterations one by one. Same legality as `simd`.
    Vectorize { var: VarId, width: u32 },
    /// Ask the compiler to unroll by `factor`.
    Unroll { var: VarId, factor: u32 },
    /// Storage folding: the temporary `buffer`, used only inside the loop, lives in its body
    /// with one iteration's elements (its index no longer moves with the loop or any loop
    /// around it). Legal when every element an iteration reads was written earlier in the same
    /// iteration.
    Fold { buffer: String, var: VarId },
    /// The temporary `buffer`, living in the loop's body and stored once by a statement of it,
    /// replaced by the value stored wherever it is read after (compute-inline). Legal when every
    /// read of it follows the store, at the element stored, and nothing between writes what the
    /// value reads.
    Inline { buffer: String, var: VarId },
    /// Non-temporal stores: a vectorized loop's contiguous stores to outputs the kernel never
    /// reads bypass the caches (no read for ownership of the lines they fill).
    Stream { var: VarId },
    /// A reduction split into `chunks` contiguous chunks reduced into partial results of their
    /// own (the loop over chunks, a new variable, has independent iterations: `parallel` runs
    /// them on threads), then combined: floating-point reassociation.
    Rfactor { var: VarId, chunks: usize },
    /// Split-K: the outermost reduction loop of a contraction at the nest's top level split into
    /// `chunks` chunks, each computing the whole contraction over its part into partial results
    /// of its own (the loop over chunks, a new outermost variable, has independent iterations),
    /// then a second nest combining them into the output: floating-point reassociation.
    SplitK { var: VarId, chunks: usize },
    /// The parallel loop shares out the iterations of the loop directly inside it too (OpenMP's
    /// collapse): legal when that loop is its whole body and has independent iterations.
    Join { var: VarId },
    /// Software prefetch: a vectorized loop fetches, ahead of its contiguous loads of inputs, the
    /// same elements for the next iteration of the enclosing loop `along` (the next row while
    /// this row is computed). Values are unchanged.
    Prefetch { var: VarId, along: VarId },
    /// The elements of `buffer` one iteration touches live in a temporary in the loop's body,
    /// dense, in the order of the loops indexing them (TVM's cache_read and cache_write: a
    /// packed operand panel, an output tile), copied in and back as the iteration needs.
    Cache { buffer: String, var: VarId },
    /// Full unrolling: the loop replaced by one copy of its body per iteration.
    Expand { var: VarId },
    /// The loop and the loop directly inside it (its whole body) become one loop over both
    /// extents, where every index moves with the outer loop exactly the inner's extent times as
    /// fast as with the inner (contiguous rows walked as one run). The order of iterations is
    /// unchanged.
    Merge { var: VarId },
    /// The temporary `buffer` living in the loop is held in local variables (registers).
    Registers { buffer: String, var: VarId },
    /// The float64 temporary `buffer` of a kernel computing in float32 is stored in float32:
    /// each value rounded once more, which the verifier judges.
    Demote { buffer: String },
    /// The temporary `buffer`, a concatenation filled by top-level nests (one per piece), read
    /// in place: every read becomes guarded values of the pieces (a padded array's borders and
    /// interior), and the nests go. Legal when the nests tile it and nothing after them writes
    /// what they read.
    Guard { buffer: String },
    /// The loop split into the iterations before, inside and after the longest range where every
    /// guard moving with it is decided (border, interior, border), each guard replaced by its
    /// arm where the range decides it: the interior unguarded. With `multiple` above 1, the
    /// interior is cut to a multiple of it (whole vectors), the rest going to the last border.
    /// The order of iterations is unchanged, so it is always legal.
    Peel { var: VarId, multiple: usize },
}

impl Step {
    /// The loop the step is applied to (none for a step on a buffer alone).
    pub fn var(&self) -> Option<VarId> {
        Some(match self {
            Step::Split { var, .. } | Step::Distribute { var } | Step::Hoist { var } | Step::Sink { var } | Step::Accumulators { var, .. } | Step::Parallel { var } | Step::Simd { var } | Step::Vectorize { var, .. } | Step::Unroll { var, .. } | Step::Fold { var, .. } | Step::Inline { var, .. } | Step::Stream { var } | Step::Rfactor { var, .. } | Step::SplitK { var, .. } | Step::Join { var } | Step::Prefetch { var, .. } | Step::Cache { var, .. } | Step::Expand { var } | Step::Merge { var } | Step::Registers { var, .. } | Step::Peel { var, .. } => *var,
            Step::Reorder { outer, .. } => *outer,
            Step::Fuse { first, .. } => *first,
            Step::Demote { .. } | Step::Guard { .. } => return None,
        })
    }
}

impl Step {
    /// The buffer the step names, if any.
    pub fn buffer_mut(&mut self) -> Option<&mut String> {
        match self {
            Step::Fold { buffer, .. } | Step::Inline { buffer, .. } | Step::Cache { buffer, .. } | Step::Registers { buffer, .. } | Step::Demote { buffer } | Step::Guard { buffer } => Some(buffer),
            _ => None,
        }
    }
}

/// Steps applied in order, and the compiler flags the result is built with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Schedule {
    pub steps: Vec<Step>,
    pub flags: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    #[error("there is no loop `{0}`")]
    NoLoop(String),
    #[error("`{var}` has {extent} iterations, which {factor} does not divide")]
    NotDivisible { var: String, extent: usize, factor: usize },
    #[error("cannot {step}: {reason}")]
    Illegal { step: String, reason: String },
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = |v: &VarId| v.to_string();
        match self {
            Step::Split { var, factor } => write!(f, "split {} {factor}", v(var)),
            Step::Reorder { outer, inner } => write!(f, "reorder {} {}", v(outer), v(inner)),
            Step::Distribute { var } => write!(f, "distribute {}", v(var)),
            Step::Fuse { first, second } => write!(f, "fuse {} {}", v(first), v(second)),
            Step::Hoist { var } => write!(f, "hoist {}", v(var)),
            Step::Sink { var } => write!(f, "sink {}", v(var)),
            Step::Accumulators { var, factor } => write!(f, "accumulators {} {factor}", v(var)),
            Step::Parallel { var } => write!(f, "parallel {}", v(var)),
            Step::Simd { var } => write!(f, "simd {}", v(var)),
            Step::Vectorize { var, width } => write!(f, "vectorize {} {width}", v(var)),
            Step::Unroll { var, factor } => write!(f, "unroll {} {factor}", v(var)),
            Step::Fold { buffer, var } => write!(f, "fold {buffer} {}", v(var)),
            Step::Inline { buffer, var } => write!(f, "inline {buffer} {}", v(var)),
            Step::Stream { var } => write!(f, "stream {}", v(var)),
            Step::Rfactor { var, chunks } => write!(f, "rfactor {} {chunks}", v(var)),
            Step::SplitK { var, chunks } => write!(f, "splitk {} {chunks}", v(var)),
            Step::Join { var } => write!(f, "join {}", v(var)),
            Step::Prefetch { var, along } => write!(f, "prefetch {} {}", v(var), v(along)),
            Step::Cache { buffer, var } => write!(f, "cache {buffer} {}", v(var)),
            Step::Expand { var } => write!(f, "expand {}", v(var)),
            Step::Merge { var } => write!(f, "merge {}", v(var)),
            Step::Registers { buffer, var } => write!(f, "registers {buffer} {}", v(var)),
            Step::Demote { buffer } => write!(f, "demote {buffer}"),
            Step::Guard { buffer } => write!(f, "guard {buffer}"),
            Step::Peel { var, multiple: 1 } => write!(f, "peel {}", v(var)),
            Step::Peel { var, multiple } => write!(f, "peel {} {multiple}", v(var)),
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.steps {
            writeln!(f, "{s}")?;
        }
        if !self.flags.is_empty() {
            writeln!(f, "flags {}", self.flags.join(" "))?;
        }
        Ok(())
    }
}

impl Schedule {
    /// Reads the text form.
    pub fn parse(text: &str) -> Result<Schedule, ScheduleError> {
        let mut schedule = Schedule::default();
        for (i, line) in text.lines().enumerate() {
            let err = |message: String| ScheduleError::Syntax { line: i + 1, message };
            let words: Vec<&str> = line.split_whitespace().collect();
            let var = |k: usize| -> Result<VarId, ScheduleError> {
                words.get(k).and_then(|w| w.strip_prefix('i')).and_then(|n| n.parse().ok()).map(VarId).ok_or_else(|| err(format!("expected a loop variable `iN` in `{line}`")))
            };
            let number = |k: usize| -> Result<usize, ScheduleError> {
                words.get(k).and_then(|w| w.parse().ok()).ok_or_else(|| err(format!("expected a number in `{line}`")))
            };
            let name = || -> Result<String, ScheduleError> { words.get(1).map(|w| w.to_string()).ok_or_else(|| err(format!("expected a buffer's name in `{line}`"))) };
            let step = match words.first().copied() {
                None => continue,
                Some("flags") => {
                    schedule.flags = words[1..].iter().map(|w| w.to_string()).collect();
                    continue;
                }
                Some("split") => Step::Split { var: var(1)?, factor: number(2)? },
                Some("reorder") => Step::Reorder { outer: var(1)?, inner: var(2)? },
                Some("distribute") => Step::Distribute { var: var(1)? },
                Some("fuse") => Step::Fuse { first: var(1)?, second: var(2)? },
                Some("hoist") => Step::Hoist { var: var(1)? },
                Some("sink") => Step::Sink { var: var(1)? },
                Some("accumulators") => Step::Accumulators { var: var(1)?, factor: number(2)? },
                Some("parallel") => Step::Parallel { var: var(1)? },
                Some("simd") => Step::Simd { var: var(1)? },
                Some("vectorize") => Step::Vectorize { var: var(1)?, width: number(2)? as u32 },
                Some("unroll") => Step::Unroll { var: var(1)?, factor: number(2)? as u32 },
                Some("stream") => Step::Stream { var: var(1)? },
                Some("join") => Step::Join { var: var(1)? },
                Some("prefetch") => Step::Prefetch { var: var(1)?, along: var(2)? },
                Some("rfactor") => Step::Rfactor { var: var(1)?, chunks: number(2)? },
                Some("splitk") => Step::SplitK { var: var(1)?, chunks: number(2)? },
                Some("fold") => Step::Fold { buffer: name()?, var: var(2)? },
                Some("inline") => Step::Inline { buffer: name()?, var: var(2)? },
                Some("cache") => Step::Cache { buffer: name()?, var: var(2)? },
                Some("expand") => Step::Expand { var: var(1)? },
                Some("merge") => Step::Merge { var: var(1)? },
                Some("registers") => Step::Registers { buffer: name()?, var: var(2)? },
                Some("demote") => Step::Demote { buffer: name()? },
                Some("guard") => Step::Guard { buffer: name()? },
                Some("peel") => Step::Peel { var: var(1)?, multiple: if words.len() > 2 { number(2)? } else { 1 } },
                Some(other) => return Err(err(format!("unknown step `{other}`"))),
            };
            schedule.steps.push(step);
        }
        Ok(schedule)
    }

    /// The flags to compile `scheduled` (this schedule applied) with: the schedule's own, plus
    /// `-fopenmp` when a loop runs on threads or in OpenMP SIMD lanes.
    pub fn compile_flags(&self, scheduled: &LoopNest) -> Vec<String> {
        let mut flags = self.flags.clone();
        if contains_kind(&scheduled.body, LoopKind::Parallel) || contains_kind(&scheduled.body, LoopKind::Simd) {
            flags.push("-fopenmp".into());
        }
        flags
    }

    /// Replays the steps on `nest`; the first illegal step is an error.
    pub fn apply(&self, nest: &LoopNest) -> Result<LoopNest, ScheduleError> {
        let mut nest = nest.clone();
        for step in &self.steps {
            apply_step(&mut nest, step)?;
        }
        Ok(nest)
    }
}

/// Where a loop is: the statement indices from the nest's body down to it, and the kinds of the
/// loops around it.
fn locate(body: &[Stmt], var: VarId, path: &mut Vec<usize>, enclosing: &mut Vec<(VarId, LoopKind)>) -> bool {
    for (i, s) in body.iter().enumerate() {
        if let Stmt::Loop { var: v, kind, body, .. } = s {
            path.push(i);
            if *v == var {
                return true;
            }
            enclosing.push((*v, *kind));
            if locate(body, var, path, enclosing) {
                return true;
            }
            enclosing.pop();
            path.pop();
        }
    }
    false
}

/// The statement list holding the statement at `path`.
fn parent<'a>(mut body: &'a mut Vec<Stmt>, path: &[usize]) -> &'a mut Vec<Stmt> {
    for &i in &path[..path.len() - 1] {
        body = match &mut body[i] {
            Stmt::Loop { body, .. } => body,
            Stmt::Store { .. } | Stmt::Prefetch { .. } => unreachable!("paths go through loops"),
        };
    }
    body
}

/// The loop a step is applied to, and what its primitive may change around it.
pub(crate) struct Site<'a> {
    /// The statement list holding the loop, and the loop's index in it.
    pub siblings: &'a mut Vec<Stmt>,
    pub at: usize,
    /// The kinds of the loops around it, outermost first.
    pub enclosing: Vec<(VarId, LoopKind)>,
    /// The nest's buffers (a primitive may add temporaries or fold one).
    pub buffers: &'a mut Vec<Buffer>,
    /// The first loop variable not used in the nest.
    pub fresh: u32,
    /// Whether the kernel computes in double.
    pub wide: bool,
    pub step: &'a Step,
}

impl Site<'_> {
    /// The loop's variable, extent, kind and body.
    pub fn the_loop(&mut self) -> (VarId, usize, &mut LoopKind, &mut Vec<Stmt>) {
        match &mut self.siblings[self.at] {
            Stmt::Loop { var, extent, kind, body } => (*var, *extent, kind, body),
            Stmt::Store { .. } | Stmt::Prefetch { .. } => unreachable!("steps apply to loops"),
        }
    }

    /// The loop's variable, extent, kind and body, to read.
    pub fn loop_ref(&self) -> (VarId, usize, LoopKind, &Vec<Stmt>) {
        match &self.siblings[self.at] {
            Stmt::Loop { var, extent, kind, body } => (*var, *extent, *kind, body),
            Stmt::Store { .. } | Stmt::Prefetch { .. } => unreachable!("steps apply to loops"),
        }
    }

    /// Refuses a step that would take statements out of the loop a temporary lives in, or
    /// move that loop inside another.
    pub fn no_temporary_lives_in(&self, var: VarId) -> Result<(), ScheduleError> {
        match self.buffers.iter().find(|b| b.scope == Some(var)) {
            Some(b) => Err(self.illegal(&format!("temporary `{}` lives in `{}`", b.name, var))),
            None => Ok(()),
        }
    }

    /// The buffer called `name` (only a temporary when `temporary`), or why the step is refused.
    pub fn named(&self, name: &str, temporary: bool) -> Result<BufferId, ScheduleError> {
        match self.buffers.iter().position(|b| b.name == name && (!temporary || b.kind == BufferKind::Temp)) {
            Some(i) => Ok(BufferId(i as u32)),
            None => Err(self.illegal(&format!("there is no {} `{name}`", if temporary { "temporary" } else { "buffer" }))),
        }
    }

    /// Refuses a loop whose iterations do not run one by one as scalar code (vectorized, or
    /// with a loop joined to it): nothing can live in one iteration's body.
    pub fn one_by_one(&self) -> Result<(), ScheduleError> {
        let (_, _, kind, body) = self.loop_ref();
        if matches!(kind, LoopKind::Vector(_) | LoopKind::Stream(_)) {
            return Err(self.illegal("the loop is vectorized"));
        }
        if matches!(body.as_slice(), [Stmt::Loop { kind: LoopKind::Joined, .. }]) {
            return Err(self.illegal("a loop is joined to it (its iterations no longer run one by one)"));
        }
        Ok(())
    }

    pub fn illegal(&self, reason: &str) -> ScheduleError {
        ScheduleError::Illegal { step: self.step.to_string(), reason: reason.to_string() }
    }
}

/// Applies one step in place.
pub fn apply_step(nest: &mut LoopNest, step: &Step) -> Result<(), ScheduleError> {
    let Some(var) = step.var() else {
        return match step {
            Step::Demote { buffer } => demote::demote(nest, buffer, step),
            Step::Guard { buffer } => guard::guard(nest, buffer, step),
            _ => unreachable!("only `demote` and `guard` apply to no loop"),
        };
    };
    let (mut path, mut enclosing) = (Vec::new(), Vec::new());
    if !locate(&nest.body, var, &mut path, &mut enclosing) {
        return Err(ScheduleError::NoLoop(var.to_string()));
    }
    let fresh = nest.fresh_var().0;
    let wide = nest.computes_in_f64();
    // Split-K rewrites the whole top-level statement holding the loop.
    if matches!(step, Step::SplitK { .. }) {
        path.truncate(1);
        enclosing.clear();
    }
    let at = *path.last().expect("located");
    // Buffers the kernel reads anywhere (an output it reads back is not written once).
    let nest_reads = match step {
        Step::Stream { .. } => crate::ir::buffers_read(&nest.body),
        _ => Vec::new(),
    };
    let loops = match step {
        Step::Peel { .. } => fold::inner_extents(&nest.body),
        _ => Vec::new(),
    };
    let uses = match step {
        Step::Fold { buffer, .. } => fold::count_uses(&nest.body, buffer, &nest.buffers),
        _ => 0,
    };
    let mut site = Site { siblings: parent(&mut nest.body, &path), at, enclosing, buffers: &mut nest.buffers, fresh, wide, step };
    if *site.the_loop().2 != LoopKind::Serial && !matches!(step, Step::Fold { .. } | Step::Stream { .. } | Step::Join { .. } | Step::Prefetch { .. } | Step::Cache { .. } | Step::Registers { .. }) {
        return Err(site.illegal("the loop is not serial"));
    }
    match step {
        Step::Split { factor, .. } => split::split(&mut site, *factor),
        Step::Reorder { inner, .. } => reorder::reorder(&mut site, *inner),
        Step::Distribute { .. } => distribute::distribute(&mut site),
        Step::Fuse { second, .. } => fuse::fuse(&mut site, *second),
        Step::Hoist { .. } => hoist::hoist(&mut site),
        Step::Sink { .. } => hoist::sink(&mut site),
        Step::Accumulators { factor, .. } => accumulators::accumulators(&mut site, *factor),
        Step::Parallel { .. } => parallel::parallel(&mut site),
        Step::Simd { .. } => vectorize::lanes(&mut site, LoopKind::Simd),
        Step::Vectorize { width, .. } => vectorize::lanes(&mut site, LoopKind::Vector(*width)),
        Step::Unroll { factor, .. } => unroll::unroll(&mut site, *factor),
        Step::Fold { buffer, .. } => fold::fold(&mut site, buffer, uses),
        Step::Inline { buffer, .. } => inline::inline(&mut site, buffer),
        Step::Stream { .. } => stream::stream(&mut site, &nest_reads),
        Step::Rfactor { chunks, .. } => rfactor::rfactor(&mut site, *chunks),
        Step::SplitK { var, chunks } => splitk::splitk(&mut site, *var, *chunks),
        Step::Join { .. } => join::join(&mut site),
        Step::Prefetch { along, .. } => prefetch::prefetch(&mut site, *along),
        Step::Cache { buffer, .. } => cache::cache(&mut site, buffer),
        Step::Expand { .. } => expand::expand(&mut site),
        Step::Merge { .. } => merge::merge(&mut site),
        Step::Registers { buffer, .. } => registers::registers(&mut site, buffer),
        Step::Peel { multiple, .. } => peel::peel(&mut site, &loops, *multiple),
        Step::Demote { .. } | Step::Guard { .. } => unreachable!("applied above"),
    }
}
