//! The `sketch` proposer: whole schedules built from structural rules, as Ansor generates
//! sketches before annotating them — fuse loops over the same extent (a producer computed at its
//! consumer's loop), fold each temporary into the loop that uses it, run the outermost loops on
//! threads (joined with the loops inside them when they are short; a top-level reduction split
//! into chunks first), split reductions into vector accumulators and vectorize the innermost
//! loops, stream stores to outputs past the caches, prefetch the next row's inputs from one pass
//! over a row. Contractions come first: split-K where their outputs are too few to share among
//! threads, a register tile each, blocked for the caches in one variant (`sketch/tile.rs`). The
//! variants differ in the sizes and choices `mutate` and the cost model then tune (tile shape,
//! vector width, accumulators, fusion, threads, streaming, which pass prefetches). Every step
//! passes its legality check as it is built.

use ollie_graph::{BinaryOp, DType, UnaryOp};
use ollie_loops::{apply_step, BufferId, BufferKind, Expr, LoopKind, LoopNest, Schedule, Stmt, Step, VarId};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::space::{initial_schedule, Caches, Target};
use crate::{Event, Kernel, Proposal, Propose};

mod tile;

use tile::{contractions, row_vectors, shapes, Built, Tile};

/// The choices one sketch makes.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Choices {
    /// Fuse adjacent loops over the same extent.
    fuse: bool,
    /// Vector lanes of innermost loops.
    lanes: u32,
    /// Partial results of a reduction, in vectors of `lanes` (independent chains in flight).
    chains: usize,
    /// Run the outermost loops on threads.
    parallel: bool,
    /// Vector stores to outputs bypass the caches (`stream`).
    stream: bool,
    /// Under each top-level loop, the vectorized loop (by its place in program order) that
    /// prefetches the next iteration's inputs, if any.
    prefetch: Option<usize>,
    /// The register tile every contraction gets where it fits (elsewhere the first shape that
    /// fits), if any.
    tile: Option<Tile>,
    /// Tiled contractions are also blocked for the data caches (KC, MC), where they can be.
    blocked: bool,
    /// Reductions down the columns of a row-major array walk the rows, their columns in vector
    /// lanes, a block of columns per thread ([`Builder::columns`]).
    columns: bool,
    /// Column reductions share out chunks of rows among the threads (partial results per
    /// chunk, every thread streaming whole rows) rather than blocks of columns. By rows measured
    /// 0.57x the time of blocks on two column sums of 8192 x 1024, and 0.81–0.90x on a column
    /// variance, whose second walk the blocks would read from the cache (but a block's rows are
    /// each on a page of their own).
    by_rows: bool,
    /// Short reductions keep blocks of their outputs in registers over the window
    /// ([`Builder::short_reductions`]) rather than the row in memory: 0.83x the time on a 1-D
    /// max pool of 3 taps (whose row is read back thrice), 1.12x on a 2×2 one of stride 2
    /// (whose block reads two input rows at once), so both are offered.
    window_registers: bool,
    /// Which float64 temporaries of a float32 kernel are stored in float32 (`demote`), so that
    /// the loops touching them run in vectors.
    demote: Demote,
    /// Padded copies read in place ([`Builder::pad_in_place`]) rather than written and read
    /// back: both are offered, the copy first.
    in_place: bool,
    /// Contractions whose output's last axis no vector divides tiled in whole blocks, the
    /// remainder apart ([`Builder::remainders`]).
    remainders: bool,
}

/// Which float64 temporaries a sketch stores in float32.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Demote {
    /// None.
    Keep,
    /// All but those a reduction of more than 8 steps accumulates into: a long sum of products
    /// with cancellation is where float32 accumulation loses most (causal attention's `p @ v`
    /// in float32 was 2.2 times its bound on inputs constant along an axis; every other
    /// temporary of it stayed within a quarter of its bound in float32).
    Values,
    /// All.
    All,
}

/// A structural rule of the sketches, as [`explain`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// Float64 temporaries of a float32 kernel stored in float32.
    Demote,
    /// Padded copies read in place, the loops peeled into borders and interior.
    #[serde(rename = "pad-in-place")]
    Pad,
    /// Reductions down the columns walk the rows ([`Builder::columns`]).
    #[serde(rename = "column-reduction")]
    Columns,
    /// Split-K for contractions with too few outputs to share among threads.
    SplitK,
    /// A register tile per contraction.
    #[serde(rename = "register-tile")]
    Tile,
    /// Loops that read down the columns and write along the rows (a transpose) blocked in tiles.
    #[serde(rename = "transpose-blocks")]
    Transpose,
    /// Adjacent loops over the same extent fused.
    Fuse,
    /// Temporaries folded into the loop that uses them.
    Fold,
    /// The outermost loops on threads.
    Threads,
    /// Innermost loops in vectors (reductions into vector accumulators).
    Vectorize,
}

impl Rule {
    pub const ALL: [Rule; 10] = [Rule::Demote, Rule::Pad, Rule::Columns, Rule::SplitK, Rule::Tile, Rule::Transpose, Rule::Fuse, Rule::Fold, Rule::Threads, Rule::Vectorize];

    /// Its name in reports (and in the store, by serde).
    pub fn name(self) -> &'static str {
        match self {
            Rule::Demote => "demote",
            Rule::Pad => "pad-in-place",
            Rule::Columns => "column-reduction",
            Rule::SplitK => "split-k",
            Rule::Tile => "register-tile",
            Rule::Transpose => "transpose-blocks",
            Rule::Fuse => "fuse",
            Rule::Fold => "fold",
            Rule::Threads => "threads",
            Rule::Vectorize => "vectorize",
        }
    }

    /// What it looks for, said when nothing in the nest matches.
    fn wants(self) -> &'static str {
        match self {
            Rule::Demote => "no float64 temporary in a kernel that computes in float32",
            Rule::Pad => "no padded copy (a concatenation's pieces filled nest by nest)",
            Rule::Columns => "no top-level loop reduces down the columns of a row-major array",
            Rule::SplitK => "no reduction has too few outputs to share among threads and a long reduction",
            Rule::Tile => "no reduction of more than 8 steps (a loop nest that accumulates into each element of its output, as a product does)",
            Rule::Transpose => "no loop pair that reads down the columns of one array and writes along the rows of another",
            Rule::Fuse => "no two loops over the same extent with no loop between them",
            Rule::Fold => "no temporary array",
            Rule::Threads => "no top-level loop",
            Rule::Vectorize => "no innermost serial loop left (a register tile vectorizes its own)",
        }
    }
}

/// What a rule did to the naive nest in the first sketch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleVerdict {
    /// It matched and its steps were kept.
    Applied,
    /// It matched, but a step it needed was illegal or a shape did not fit.
    Declined,
    /// Nothing in the nest is what it looks for.
    NoMatch,
}

/// One rule's verdict on one place of the nest (or on the whole nest, for [`RuleVerdict::NoMatch`]),
/// and what it did or why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleNote {
    pub rule: Rule,
    pub verdict: RuleVerdict,
    pub what: String,
}

impl std::fmt::Display for RuleNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verdict = match self.verdict {
            RuleVerdict::Applied => "applied",
            RuleVerdict::Declined => "declined",
            RuleVerdict::NoMatch => "no match",
        };
        write!(f, "{} {verdict}: {}", self.rule.name(), self.what)
    }
}

/// What each rule did in the first sketch of `naive` for `target` (the one with the first
/// register tile, where there are contractions): where it applied, where it declined and why,
/// and which rules found nothing to apply to. How a report says why the search found nothing.
pub fn explain(naive: &LoopNest, target: &Target) -> Vec<RuleNote> {
    let contractions = contractions(naive);
    let (tile, lanes) = match fitting_tiles(&contractions, target.lanes).first() {
        Some(&(t, lanes)) => (Some(t), lanes),
        None => (shapes(target.lanes).iter().map(|&(rows, vectors)| Tile { rows, vectors }).next().filter(|_| !contractions.is_empty()), target.lanes),
    };
    let (_, mut notes) = sketch(naive, Choices { tile, lanes, ..Choices::first(target.lanes) }, target.caches);
    let padded: Vec<String> = naive.temps().map(|(_, b)| b.name.clone()).filter(|name| apply_step(&mut naive.clone(), &Step::Guard { buffer: name.clone() }).is_ok()).collect();
    if !padded.is_empty() {
        notes.push(RuleNote { rule: Rule::Pad, verdict: RuleVerdict::Declined, what: format!("padded copies written here ({}); another sketch reads them in place", padded.join(", ")) });
    }
    for rule in Rule::ALL {
        if !notes.iter().any(|n| n.rule == rule) {
            notes.push(RuleNote { rule, verdict: RuleVerdict::NoMatch, what: rule.wants().to_string() });
        }
    }
    notes.sort_by_key(|n| n.rule);
    notes
}

/// The sketches of `naive` for `target`, most promising first, without duplicates.
pub fn sketches(naive: &LoopNest, target: &Target) -> Vec<Schedule> {
    let lanes = target.lanes;
    let half = (lanes / 2).max(4);
    let first = Choices::first(lanes);
    // Contractions first: register tiles of the shapes that fit, with the whole reduction per
    // panel and with blocks of it.
    let contractions = contractions(naive);
    let mut tiled = fitting_tiles(&contractions, lanes);
    if tiled.is_empty() && !contractions.is_empty() {
        // Contractions without rows to share still get one-row tiles.
        tiled.push((Tile { rows: 1, vectors: 1 }, lanes));
    }
    // The first shape blocked for the caches too, after the unblocked ones.
    let blocked = tiled.first().filter(|_| target.caches.is_some()).map(|&(t, lanes)| Choices { tile: Some(t), lanes, blocked: true, ..first });
    // The first shape with padding read in place too, and with remainders apart.
    let in_place = tiled.first().map(|&(t, lanes)| Choices { tile: Some(t), lanes, in_place: true, ..first });
    let remainders = tiled.first().map(|&(t, lanes)| Choices { tile: Some(t), lanes, remainders: true, ..first });
    let tiles = tiled.into_iter().flat_map(|(t, lanes)| [Choices { tile: Some(t), lanes, ..first }, Choices { tile: Some(t), lanes, fuse: false, ..first }]).chain(blocked).chain(in_place).chain(remainders);
    let variants = tiles.chain([
        first,
        // The same as `first` where no reduction is short: dropped as a duplicate.
        Choices { window_registers: false, ..first },
        Choices { prefetch: Some(0), ..first },
        Choices { prefetch: Some(1), ..first },
        Choices { prefetch: Some(2), ..first },
        Choices { stream: false, ..first },
        Choices { chains: 2, ..first },
        Choices { fuse: false, ..first },
        Choices { parallel: false, ..first },
        Choices { lanes: half, ..first },
        Choices { chains: 1, ..first },
        Choices { columns: false, ..first },
        Choices { by_rows: false, ..first },
        Choices { demote: Demote::All, ..first },
        Choices { demote: Demote::Keep, ..first },
        Choices { in_place: true, ..first },
    ]);
    let mut out: Vec<Schedule> = Vec::new();
    for choices in variants {
        let (s, _) = sketch(naive, choices, target.caches);
        if !s.steps.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Up to three register tiles that fit some contraction of the nest, with the lanes of their
/// vectors: on the output's last two axes in the machine's full vectors; where none of those
/// divides an output (56 columns in vectors of 16), transposed tiles in full vectors
/// ([`tile::Contraction::across`]: a convolution's output channels in the vectors) and tiles
/// in half vectors (8 divides 56).
fn fitting_tiles(contractions: &[tile::Contraction], lanes: u32) -> Vec<(Tile, u32)> {
    let fitting = |lanes: u32| -> Vec<(Tile, u32)> {
        shapes(lanes).iter().filter(|&&(rows, vectors)| contractions.iter().any(|c| c.last_two(rows, vectors * lanes as usize))).take(3).map(|&(rows, vectors)| (Tile { rows, vectors }, lanes)).collect()
    };
    let full = fitting(lanes);
    if !full.is_empty() {
        return full;
    }
    let across = contractions.iter().flat_map(|c| c.across_shapes(lanes)).take(2).map(|t| (t, lanes));
    let half = if lanes > 4 { fitting(lanes / 2) } else { Vec::new() };
    across.chain(half).take(3).collect()
}

impl Choices {
    /// The most promising choices for vectors of `lanes` floats, without a tile.
    fn first(lanes: u32) -> Choices {
        Choices { fuse: true, lanes, chains: 4, parallel: true, stream: true, prefetch: None, tile: None, blocked: false, columns: true, by_rows: true, window_registers: true, demote: Demote::Values, in_place: false, remainders: false }
    }
}

/// The first sketch with another register tile: a shape drawn among all that fit the register
/// file (the accumulators, a row of column vectors and a broadcast; more than [`shapes`] offers)
/// and some contraction of `naive`, blocked for the caches half the time. How `mutate` tunes
/// tile sizes.
pub(crate) fn retiled(naive: &LoopNest, target: &Target, rng: &mut ChaCha8Rng) -> Option<Schedule> {
    use rand::RngExt;
    let lanes = target.lanes;
    let registers = tile::registers(lanes);
    let contractions = contractions(naive);
    let fitting: Vec<Tile> = (1..=16)
        .flat_map(|rows| (1..=4).map(move |vectors| Tile { rows, vectors }))
        .filter(|t| t.rows * t.vectors + t.vectors < registers && contractions.iter().any(|c| c.fits(t.rows, t.vectors * lanes as usize)))
        .collect();
    let tile = *fitting.get(rng.random_range(0..fitting.len().max(1)))?;
    let blocked = target.caches.is_some() && rng.random_range(0..2) == 0;
    Some(sketch(naive, Choices { tile: Some(tile), blocked, ..Choices::first(lanes) }, target.caches).0)
}

/// One sketch: the rules applied in order, each step kept only if legal; and what each rule did.
fn sketch(naive: &LoopNest, c: Choices, caches: Option<Caches>) -> (Schedule, Vec<RuleNote>) {
    let mut b = Builder { nest: naive.clone(), steps: Vec::new(), notes: Vec::new(), refused: None };
    b.demote(c.demote);
    if c.in_place {
        b.pad_in_place(c.lanes as usize);
    }
    b.inline_producers();
    if c.columns {
        b.columns(c.lanes, c.by_rows);
    }
    if c.parallel {
        b.split_short_contractions(c.lanes);
    }
    let mut tiles = Vec::new();
    if let Some(t) = c.tile {
        if c.remainders {
            b.remainders(c.lanes);
        }
        b.merge_positions(c.lanes);
        // The variant's tile where it fits; elsewhere the first shape that fits.
        let width = c.lanes as usize;
        for contraction in contractions(&b.nest) {
            let fits = |t: &Tile| contraction.fits(t.rows, t.vectors * width);
            // With remainders apart, the blocks take the machine's best shape that fits.
            let best = || shapes(c.lanes).iter().map(|&(rows, vectors)| Tile { rows, vectors }).find(fits);
            let own = if c.remainders { best().or(Some(t).filter(fits)) } else { Some(t).filter(fits).or_else(best) };
            let own = own.or_else(|| contraction.across_shapes(c.lanes).first().copied());
            let own = own.unwrap_or(t);
            // Blocked where it can be, else the plain tile.
            let blocks = caches.filter(|_| c.blocked).and_then(|caches| contraction.blocks(own, c.lanes, caches));
            b.refused = None;
            let built = blocks.and_then(|blocks| b.tile(&contraction, own, c.lanes, Some(blocks)));
            let built = built.or_else(|| b.tile(&contraction, own, c.lanes, None));
            let into = b.nest.buffers[contraction.output().0 as usize].name.clone();
            let (verdict, what) = match &built {
                Some(_) => (RuleVerdict::Applied, format!("a {} x {} tile on the reduction into `{into}`", own.rows, own.vectors * width)),
                None => (RuleVerdict::Declined, format!("the reduction into `{into}`: {}", b.refusal("no tile divides its output's last two axes, or the output is not contiguous along its last loop"))),
            };
            b.note(Rule::Tile, verdict, what);
            tiles.extend(built);
        }
    }
    if c.columns {
        tiles.extend(b.short_reductions(c.lanes, c.window_registers));
    }
    b.transposes(c.lanes);
    if c.fuse {
        b.fuse_all();
    }
    b.fold_all();
    if c.parallel {
        b.parallelize_outermost();
    }
    // Tiles go to registers once the loops around them are settled (their indices become
    // constants, which the dependence tests of fuse and parallel cannot see through).
    for t in &tiles {
        b.registerize(t, c.lanes);
        b.prefetch_next_block(t);
    }
    b.vectorize_innermost(c.lanes, c.chains, c.stream);
    if let Some(k) = c.prefetch {
        b.prefetch_ahead(k);
    }
    (Schedule { steps: b.steps, flags: initial_schedule().flags }, b.notes)
}

struct Builder {
    nest: LoopNest,
    steps: Vec<Step>,
    /// What the rules did, for [`explain`].
    notes: Vec<RuleNote>,
    /// The last step found illegal, and why.
    refused: Option<String>,
}

impl Builder {
    /// Applies `step` if it is legal (else remembers why not in `refused`).
    fn try_step(&mut self, step: Step) -> bool {
        let mut next = self.nest.clone();
        if let Err(e) = apply_step(&mut next, &step) {
            self.refused = Some(format!("`{step}` is illegal: {e}"));
            return false;
        }
        self.nest = next;
        self.steps.push(step);
        true
    }

    /// Notes what `rule` did.
    fn note(&mut self, rule: Rule, verdict: RuleVerdict, what: impl Into<String>) {
        self.notes.push(RuleNote { rule, verdict, what: what.into() });
    }

    /// Why the last step tried was refused, taken (or `otherwise` if none was).
    fn refusal(&mut self, otherwise: &str) -> String {
        self.refused.take().unwrap_or_else(|| otherwise.to_string())
    }

    /// Applies `steps` in order if each is legal, else none of them.
    fn try_steps(&mut self, steps: impl IntoIterator<Item = Step>) -> bool {
        let (nest, done) = (self.nest.clone(), self.steps.len());
        for step in steps {
            if !self.try_step(step) {
                self.nest = nest;
                self.steps.truncate(done);
                return false;
            }
        }
        true
    }

    /// Fuses loops over the same extent with only statements other than loops between them
    /// (the first sunk past those), at every level, until none fuse.
    fn fuse_all(&mut self) {
        loop {
            let mut pairs = Vec::new();
            adjacent_pairs(&self.nest.body, &mut pairs);
            let mut refused = Vec::new();
            let mut fused = None;
            for (first, between, second) in pairs {
                let (nest, done) = (self.nest.clone(), self.steps.len());
                let shared = self.shares(first);
                let sinks = (0..between).map(|_| Step::Sink { var: first });
                if self.try_steps(sinks.chain([Step::Fuse { first, second }])) {
                    // Not where the fused loop carries a reduction through loops inside it that
                    // the first loop could run on threads (a sum over the rows of each row's
                    // result): a flat reduction is split into chunks, this is not.
                    let flat = find_loop(&self.nest.body, first).is_some_and(|s| matches!(s, Stmt::Loop { body, .. } if !body.iter().any(|s| matches!(s, Stmt::Loop { .. }))));
                    if !shared || flat || self.shares(first) {
                        fused = Some((first, second));
                        break;
                    }
                    (self.nest, self.steps) = (nest, self.steps[..done].to_vec());
                    self.refused = Some(format!("fused, {first} would carry a reduction and lose its threads"));
                }
                refused.push(format!("{first} and {second} stay apart: {}", self.refusal("")));
            }
            match fused {
                Some((first, second)) => self.note(Rule::Fuse, RuleVerdict::Applied, format!("{first} and {second} fused")),
                None => {
                    refused.into_iter().for_each(|why| self.note(Rule::Fuse, RuleVerdict::Declined, why));
                    return;
                }
            }
        }
    }

    /// Whether loop `var`'s iterations could run on threads (its `parallel` is legal).
    fn shares(&self, var: VarId) -> bool {
        apply_step(&mut self.nest.clone(), &Step::Parallel { var }).is_ok()
    }

    /// Folds each temporary into the innermost loop holding all its uses (or the next one out).
    /// The float64 temporaries of a float32 kernel `which` says stored in float32 (numpy's
    /// promotion by a float64 operand, `np.full` without a dtype, left the kernel's vectors out
    /// of the loops touching them).
    fn demote(&mut self, which: Demote) {
        if which == Demote::Keep || self.nest.computes_in_f64() {
            return;
        }
        let sums: Vec<BufferId> = contractions(&self.nest).iter().map(|c| c.output()).collect();
        let temps: Vec<(BufferId, String)> = self.nest.temps().filter(|(_, b)| b.dtype == DType::F64).map(|(id, b)| (id, b.name.clone())).collect();
        for (id, name) in temps {
            if which == Demote::Values && sums.contains(&id) {
                self.note(Rule::Demote, RuleVerdict::Declined, format!("`{name}` stays float64: a long reduction accumulates into it (another sketch demotes it too)"));
                continue;
            }
            self.refused = None;
            if self.try_step(Step::Demote { buffer: name.clone() }) {
                self.note(Rule::Demote, RuleVerdict::Applied, format!("`{name}` stored in float32"));
            } else {
                let why = self.refusal("refused");
                self.note(Rule::Demote, RuleVerdict::Declined, format!("`{name}` stays float64: {why}"));
            }
        }
    }

    fn fold_all(&mut self) {
        // Not the tiles' own buffers, scoped already.
        let temps: Vec<String> = self.nest.temps().filter(|(id, b)| b.scope.is_none() && uses(&self.nest.body, id.0) > 0).map(|(_, b)| b.name.clone()).collect();
        for name in temps {
            self.refused = None;
            let folded = holders(&self.nest, &name).into_iter().find(|&var| self.try_step(Step::Fold { buffer: name.clone(), var }));
            match folded {
                Some(var) => self.note(Rule::Fold, RuleVerdict::Applied, format!("`{name}` folded into {var}")),
                None => {
                    let why = self.refusal("no loop holds all its uses");
                    self.note(Rule::Fold, RuleVerdict::Declined, format!("`{name}` stays whole: {why}"));
                }
            }
        }
        self.inline_into_reductions();
    }

    /// Padding as guarded loads: every padded copy (a concatenation's pieces) read in place
    /// (`guard`), then every loop whose guards can be decided split into borders and an
    /// interior (`peel`), outermost first — the interior's loops peeled in turn, the borders'
    /// left guarded (they are few). The innermost loops peeled (no other inside their
    /// interior) are peeled again to an interior of whole vectors of `lanes`, where it has
    /// some: those are the loops vectorized. The interior then reads the array unguarded, and
    /// the rules after this one tile and vectorize it.
    fn pad_in_place(&mut self, lanes: usize) {
        let temps: Vec<String> = self.nest.temps().map(|(_, b)| b.name.clone()).collect();
        let guarded: Vec<String> = temps.into_iter().filter(|name| self.try_step(Step::Guard { buffer: name.clone() })).collect();
        if guarded.is_empty() {
            return;
        }
        let (nest, done) = (self.nest.clone(), self.steps.len());
        let peeled = self.peel_all(&[], lanes);
        let innermost: Vec<VarId> = peeled.iter().copied().filter(|&v| !peeled.iter().any(|&w| w != v && find_loop(&self.nest.body, v).is_some_and(|s| find_loop(std::slice::from_ref(s), w).is_some()))).collect();
        (self.nest, self.steps) = (nest, self.steps[..done].to_vec());
        let peeled: Vec<String> = self.peel_all(&innermost, lanes).iter().map(|v| v.to_string()).collect();
        self.note(Rule::Pad, RuleVerdict::Applied, format!("{} read in place, {} peeled", guarded.join(", "), if peeled.is_empty() { "no loop".to_string() } else { peeled.join(", ") }));
    }

    /// Each contraction whose output's last axis no vector of `lanes` divides (1599 positions),
    /// that axis split into whole blocks of every tile's columns and a remainder (`peel` by a
    /// multiple), and the loops around distributed so that each part is a contraction of its
    /// own: the blocks get a register tile of the machine's best shape, the remainder one of
    /// its own (wav2vec's 1599 positions at 8 lanes: a 3 × 16 tile on all becomes 6 × 16 on 1584
    /// and one on the last 15).
    fn remainders(&mut self, lanes: u32) {
        let lanes = lanes as usize;
        let multiple = shapes(lanes as u32).iter().fold(1, |m, &(_, v)| lcm(m, v * lanes));
        for c in contractions(&self.nest) {
            let Some(&(j, n)) = c.free().last() else { continue };
            if n.is_multiple_of(lanes) || n < 2 * multiple {
                continue;
            }
            let around: Vec<Step> = c.free().iter().rev().skip(1).map(|&(var, _)| Step::Distribute { var }).collect();
            self.refused = None;
            if self.try_steps(std::iter::once(Step::Peel { var: j, multiple }).chain(around)) {
                self.note(Rule::Tile, RuleVerdict::Applied, format!("{j}'s {n} iterations in blocks of {multiple} and a remainder of {}, each a contraction of its own", n % multiple));
            } else {
                let why = self.refusal("");
                self.note(Rule::Tile, RuleVerdict::Declined, format!("{j}'s {n} iterations stay whole: {why}"));
            }
        }
    }

    /// Peels every loop that takes it, outermost first; those of `aligned` to an interior of
    /// whole vectors of `lanes` where they have one. The loops peeled.
    fn peel_all(&mut self, aligned: &[VarId], lanes: usize) -> Vec<VarId> {
        let mut loops = Vec::new();
        every_loop(&self.nest.body, &mut loops);
        loops.into_iter().filter(|&var| (aligned.contains(&var) && self.try_step(Step::Peel { var, multiple: lanes })) || self.try_step(Step::Peel { var, multiple: 1 })).collect()
    }

    /// Each top-level nest storing a whole temporary with a cheap value (no transcendental, no
    /// division but by a constant: `x - mean`) computed where it is read instead: the pass
    /// writing it and the passes reading it back go. Not where a reader reads each element
    /// many times (a contraction's operand, `(q · scale) @ k.T`): the value would be computed
    /// again on every read, an operation more per multiply-add.
    fn inline_producers(&mut self) {
        let producers: Vec<(VarId, String, usize)> = self
            .nest
            .body
            .iter()
            .filter_map(|s| {
                let Stmt::Loop { var, .. } = s else { return None };
                let (_, body) = tile::chain(s);
                let [Stmt::Store { buffer, value, .. }] = body else { return None };
                let temp = &self.nest.buffers[buffer.0 as usize];
                let mut reads = Vec::new();
                value.loads(*buffer, &mut reads);
                let reuse = reads_per_element(&self.nest.body, *buffer, &mut Vec::new());
                (temp.kind == BufferKind::Temp && temp.scope.is_none() && reads.is_empty() && cheap(value)).then(|| (*var, temp.name.clone(), reuse))
            })
            .collect();
        for (var, name, reuse) in producers {
            if reuse > MAX_INLINED_READS {
                self.note(Rule::Fold, RuleVerdict::Declined, format!("`{name}` stays an array: a reader reads each element {reuse} times"));
                continue;
            }
            self.refused = None;
            match self.try_step(Step::Inline { buffer: name.clone(), var }) {
                true => self.note(Rule::Fold, RuleVerdict::Applied, format!("`{name}` computed where it is read ({var} inlined)")),
                false => {
                    let why = self.refusal("");
                    self.note(Rule::Fold, RuleVerdict::Declined, format!("`{name}` stays an array: {why}"));
                }
            }
        }
    }

    /// A temporary folded into an innermost loop whose other statement reduces it (`d = a - b;
    /// s += d * d`) inlined: the loop is then a reduction that `accumulators` and `rfactor` take.
    fn inline_into_reductions(&mut self) {
        let mut innermost = Vec::new();
        innermost_loops(&self.nest.body, &mut innermost);
        for (var, _, _) in innermost {
            let Some(Stmt::Loop { body, .. }) = find_loop(&self.nest.body, var) else { continue };
            let [Stmt::Store { buffer, .. }, Stmt::Store { .. }] = body.as_slice() else { continue };
            let temp = &self.nest.buffers[buffer.0 as usize];
            if temp.scope != Some(var) {
                continue;
            }
            let name = temp.name.clone();
            if self.try_step(Step::Inline { buffer: name.clone(), var }) {
                self.note(Rule::Fold, RuleVerdict::Applied, format!("`{name}` inlined into the reduction over {var}"));
            }
        }
    }

    /// Each innermost loop: a reduction into `chains` vectors of partial results, then
    /// vectorized; any other loop vectorized, and with `stream` its stores to outputs
    /// non-temporal. A short reduction keeps fewer chains, each at least 8 steps long: its
    /// partials are combined one by one after it (a dot product of 128 in one 16-lane vector,
    /// not 64 partials, measured 4% faster on decode attention).
    fn vectorize_innermost(&mut self, lanes: u32, chains: usize, stream: bool) {
        let mut innermost = Vec::new();
        innermost_loops(&self.nest.body, &mut innermost);
        for (var, extent, reduction) in innermost {
            let width = lanes as usize;
            self.refused = None;
            let (var, extent) = self.merge_short(var, extent, width);
            let (verdict, what) = if reduction {
                let Some(factor) = [chains * width, 2 * width, width].into_iter().find(|f| extent % f == 0 && extent > *f && (extent >= 8 * f || *f == width)) else {
                    // Not a ragged one either: summed in another order than the naive kernel's,
                    // a mean of 37 equal values is off by an ulp and a variance of them is no
                    // longer 0, which the verifier's constant inputs reject.
                    self.note(Rule::Vectorize, RuleVerdict::Declined, format!("{var}: a reduction of {extent} steps, not a multiple of {width} lanes longer than one vector"));
                    continue;
                };
                // The partials' loop is the one now inside `var`.
                let done = self.try_step(Step::Accumulators { var, factor }) && child_loop(&self.nest.body, var).is_some_and(|partials| self.try_step(Step::Vectorize { var: partials, width: lanes }));
                match done {
                    true => (RuleVerdict::Applied, format!("{var}: a reduction into {} vectors of partial results", factor / width)),
                    false => (RuleVerdict::Declined, format!("{var}: {}", self.refusal("its partial results are not one loop"))),
                }
            } else if extent < width {
                (RuleVerdict::Declined, format!("{var}: {extent} iterations, fewer than a vector's {width} lanes"))
            } else if self.try_step(Step::Vectorize { var, width: lanes }) {
                // Only whole runs of whole vectors stream: a scalar tail's stores into the
                // lines the vector stores bypassed the caches for (or a run of a few lines) cost
                // more than the stream saves (a 3×3 average pool of 35 × 35 maps: 6x slower).
                let whole = extent % width == 0 && extent >= STREAM_RUN;
                let streamed = stream && whole && self.try_step(Step::Stream { var });
                (RuleVerdict::Applied, format!("{var} in vectors of {width}{}", if streamed { ", its stores streamed" } else { "" }))
            } else {
                (RuleVerdict::Declined, format!("{var}: {}", self.refusal("")))
            };
            self.note(Rule::Vectorize, verdict, what);
        }
    }

    /// Loop `var` of `extent`, fewer than two vectors of `width` or a ragged number of them,
    /// merged with the loops around it while the rows it walks are contiguous with the next
    /// (`merge`: a 7 × 7 map pooled whole, 49 floats in a run): the merged loop and its extent.
    fn merge_short(&mut self, mut var: VarId, mut extent: usize, width: usize) -> (VarId, usize) {
        while extent % width != 0 || extent < 2 * width {
            // `merge` refuses a loop whose body is more than this one.
            let Some(outer) = parent_loop(&self.nest.body, var) else { break };
            let n = find_loop(&self.nest.body, outer).map_or(1, |s| if let Stmt::Loop { extent, .. } = s { *extent } else { 1 });
            if !self.try_step(Step::Merge { var: outer }) {
                break;
            }
            if n > 1 {
                self.note(Rule::Vectorize, RuleVerdict::Applied, format!("{var} ({extent} iterations) merged with {outer} around it: {} in a run", extent * n));
            }
            (var, extent) = (outer, extent * n);
        }
        self.refused = None;
        (var, extent)
    }

    /// A contraction's positions merged into one axis where no register tile divides the last
    /// of them but the rows are contiguous (a 1×1 convolution's 56 × 56 positions: 3,136 in a
    /// run, a multiple of every vector width), so that the tile on the output's last two axes
    /// fits in full vectors.
    fn merge_positions(&mut self, lanes: u32) {
        for c in contractions(&self.nest) {
            let Some(outer) = c.merge_for_tile(lanes) else { continue };
            if self.try_step(Step::Merge { var: outer }) {
                self.note(Rule::Tile, RuleVerdict::Applied, format!("the output's last two axes of the reduction into `{}` merged into one ({outer})", self.nest.buffer(c.output()).name));
            }
        }
        self.refused = None;
    }

    /// Column reductions: a top-level loop over the outputs `j` whose body sets an accumulator
    /// and reduces into it over a loop `i` whose loads are contiguous along `j` and strided along
    /// `i` (`x.sum(axis=0)` of a row-major `x`: naively, each output walks down a column, a
    /// cache line a row). `by_rows`: the walk over the rows is split into [`COLUMN_BLOCKS`]
    /// chunks (split-K), each with partial results of its own, and the columns go inside it: a
    /// chunk (a thread, once the chunks run in parallel) streams whole rows and keeps its
    /// columns' partial results in a vectorizable row of accumulators, combined after. Else the
    /// loop over `j` is split into blocks of columns (where they hold a vector each), and each
    /// block's columns go inside the walk over the rows: a block reads its part of every row.
    fn columns(&mut self, lanes: u32, by_rows: bool) {
        let tops: Vec<(VarId, usize, VarId)> = self.nest.body.iter().filter_map(column_reduction).collect();
        // A column reduction reading another's result (the variance reading the mean) makes a
        // pass of its own over the rows: the blocks are then narrow enough for a block's rows to
        // stay in cache between the passes, and each block runs both.
        let dependent = tops.windows(2).any(|w| reads_result(&self.nest.body, w[0].0, w[1].0));
        // The block (or chunk) loops made, with the walk over the rows inside each.
        let mut blocks = Vec::new();
        for (j, extent, i) in tops {
            self.refused = None;
            if by_rows {
                // Split-K over the rows: each thread streams whole rows of its chunk, its
                // columns' partial results in lanes, combined after.
                let chunk = self.nest.fresh_var();
                match self.try_steps([Step::SplitK { var: i, chunks: COLUMN_BLOCKS }, Step::Reorder { outer: j, inner: i }]) {
                    true => {
                        self.note(Rule::Columns, RuleVerdict::Applied, format!("{j} ({extent} columns) walks the rows {i} in {COLUMN_BLOCKS} chunks of rows, partial results per chunk"));
                        blocks.push((chunk, i));
                    }
                    false => {
                        let why = self.refusal("");
                        self.note(Rule::Columns, RuleVerdict::Declined, format!("{j} still walks down the columns: {why}"));
                    }
                }
                continue;
            }
            let rows = find_loop(&self.nest.body, i).map_or(1, |s| if let Stmt::Loop { extent, .. } = s { *extent } else { 1 });
            let block = match dependent {
                false => extent / COLUMN_BLOCKS,
                true => (1..=extent / lanes as usize).rev().map(|v| v * lanes as usize).find(|b| extent % b == 0 && extent / b >= COLUMN_BLOCKS && rows * b * 4 <= CACHED_BLOCK).unwrap_or(lanes as usize),
            };
            let inner = if extent % block == 0 && extent / block >= COLUMN_BLOCKS && block >= lanes as usize {
                let w = self.nest.fresh_var();
                if self.try_step(Step::Split { var: j, factor: block }) { w } else { j }
            } else {
                j
            };
            if self.try_step(Step::Reorder { outer: inner, inner: i }) {
                let how = if inner != j { format!("in {} blocks of {block} columns", extent / block) } else { "in one block".to_string() };
                self.note(Rule::Columns, RuleVerdict::Applied, format!("{j} ({extent} columns) walks the rows {i} {how}"));
                if inner != j {
                    blocks.push((j, i));
                }
            } else {
                let why = self.refusal("");
                self.note(Rule::Columns, RuleVerdict::Declined, format!("{j} still walks down the columns: {why}"));
            }
        }
        // Column reductions over the same rows in one pass: each later block loop hoisted next
        // to the first and fused with it, then inside it, the statements between the first walk
        // over the rows and a later one (another accumulator's initialization) hoisted above the
        // first walk, and the walks fused: the rows read once for every reduction.
        let Some(&(first, rows)) = blocks.first() else { return };
        for &(j, i) in &blocks[1..] {
            self.refused = None;
            let mut one_pass = self.hoist_after(j, first) && self.try_step(Step::Fuse { first, second: j });
            if one_pass {
                let between: Vec<VarId> = siblings(&self.nest.body, rows).into_iter().skip_while(|&v| v != rows).skip(1).take_while(|&v| v != i).collect();
                one_pass = between.iter().all(|&v| self.hoist_after(v, prev_of(&self.nest.body, rows))) && self.try_step(Step::Fuse { first: rows, second: i });
            }
            match one_pass {
                true => self.note(Rule::Columns, RuleVerdict::Applied, format!("{j} reads the rows in {first}'s pass")),
                false => {
                    let why = self.refusal("");
                    self.note(Rule::Columns, RuleVerdict::Declined, format!("{j} reads the rows in a pass of its own: {why}"));
                }
            }
        }
    }

    /// Short reductions inside a loop over their outputs (`for j { a[j] = 0; for r { for s {
    /// a[j] += x[2j + W·r + s] } } }`, a pool's window of at most [`SHORT`] steps, or any
    /// reduction over windows along the outputs): the loop over the outputs moves inside the
    /// window's loops, where it is one long loop to vectorize along the outputs instead of a few
    /// steps of a reduction per output. With `registers`, where whole vectors divide the outputs,
    /// in blocks of a one-row tile's vectors ([`row_vectors`]), each block kept in registers over
    /// the window: without, every step of the window reads and writes the row of outputs back.
    fn short_reductions(&mut self, lanes: u32, registers: bool) -> Vec<Built> {
        let mut found = Vec::new();
        short_reduction_loops(&self.nest.body, lanes as usize, &mut found);
        let mut tiles = Vec::new();
        for (j, extent, acc, window) in found {
            self.refused = None;
            let names: Vec<String> = window.iter().map(|v| v.to_string()).collect();
            let block = row_vectors(extent, lanes).map(|v| v * lanes as usize).filter(|_| registers);
            if let Some(block) = block {
                let jj = self.nest.fresh_var();
                let mut steps = vec![Step::Split { var: j, factor: block }];
                steps.extend(window.iter().map(|&inner| Step::Reorder { outer: jj, inner }));
                steps.push(Step::Cache { buffer: self.nest.buffer(acc).name.clone(), var: j });
                if self.try_steps(steps) {
                    tiles.push(Built::newest(&self.nest, j));
                    self.note(Rule::Columns, RuleVerdict::Applied, format!("{j} moves inside its short reduction {} in blocks of {block}, each kept in registers over it", names.join(", ")));
                    continue;
                }
            }
            let steps: Vec<Step> = window.iter().map(|&inner| Step::Reorder { outer: j, inner }).collect();
            match self.try_steps(steps) {
                true => self.note(Rule::Columns, RuleVerdict::Applied, format!("{j} moves inside its short reduction {}: its outputs in vector lanes", names.join(", "))),
                false => {
                    let why = self.refusal("");
                    self.note(Rule::Columns, RuleVerdict::Declined, format!("{j} stays outside its short reduction {}: {why}", names.join(", ")));
                }
            }
        }
        tiles
    }

    /// Transposes: a top-level pair of loops `i { j { out[.. + j] = f(x[.. + S·j], ..) } }`
    /// whose store is contiguous along `j` and one of whose loads is contiguous along `i` and
    /// strided along `j` (`x.T` written out) walks the arrays in tiles of up to
    /// [`TRANSPOSE_ROW`] `i`s by 16 (or `lanes`) `j`s: the emitter reads each `lanes` × `lanes`
    /// block of `x` in rows and transposes it in registers, and a tile reads few rows of `x`,
    /// each over a long contiguous stretch (few pages at a time), instead of a line per element.
    fn transposes(&mut self, lanes: u32) {
        let pairs: Vec<(VarId, usize, VarId, usize)> = self.nest.body.iter().filter_map(transpose).collect();
        for (i, n, j, m) in pairs {
            let cols = 16.max(lanes as usize);
            // The longest stretch of `x`'s rows, in whole vectors, that leaves a tile for each thread.
            let rows = (0..=TRANSPOSE_ROW.ilog2()).rev().map(|k| 1 << k).find(|&r| n % r == 0 && n / r >= 2).unwrap_or(1);
            self.refused = None;
            if rows < lanes as usize || m % cols != 0 || m == cols {
                self.note(Rule::Transpose, RuleVerdict::Declined, format!("{i} and {j}: {n} by {m} has no tile of {lanes} to {TRANSPOSE_ROW} by {cols} that divides it"));
                continue;
            }
            let (ii, jj) = (self.nest.fresh_var(), VarId(self.nest.fresh_var().0 + 1));
            match self.try_steps([Step::Split { var: i, factor: rows }, Step::Split { var: j, factor: cols }, Step::Reorder { outer: ii, inner: j }]) {
                true => self.note(Rule::Transpose, RuleVerdict::Applied, format!("{i} and {j} in tiles of {rows} by {cols} ({ii} and {jj} inside)")),
                false => {
                    let why = self.refusal("");
                    self.note(Rule::Transpose, RuleVerdict::Declined, format!("{i} and {j}: {why}"));
                }
            }
        }
    }

    /// Hoists loop `var` until the statement before it is loop `target` (`None`: until it is
    /// first); whether it got there.
    fn hoist_after(&mut self, var: VarId, target: impl Into<Option<VarId>>) -> bool {
        let target = target.into();
        loop {
            let list = siblings(&self.nest.body, var);
            let at = list.iter().position(|&v| v == var).expect("var is in its own list");
            if at.checked_sub(1).map(|k| list[k]) == target || at == 0 {
                return at.checked_sub(1).map(|k| list[k]) == target;
            }
            if !self.try_step(Step::Hoist { var }) {
                return false;
            }
        }
    }

    /// Split-K: each contraction with too few outputs to share among threads and a long
    /// reduction computed in [`CHUNKS`] chunks of the reduction, combined after (decode
    /// attention's `p @ V` at batch one). Its chunks then run on threads as a top-level loop.
    fn split_short_contractions(&mut self, lanes: u32) {
        for c in contractions(&self.nest) {
            if let Some(var) = c.split_k(lanes, CHUNKS) {
                self.refused = None;
                match self.try_step(Step::SplitK { var, chunks: CHUNKS }) {
                    true => self.note(Rule::SplitK, RuleVerdict::Applied, format!("{var} in {CHUNKS} chunks")),
                    false => {
                        let why = self.refusal("");
                        self.note(Rule::SplitK, RuleVerdict::Declined, format!("{var}: {why}"));
                    }
                }
            }
        }
    }

    /// Each top-level loop on threads; when it has fewer than [`SHARED`] iterations, the loops
    /// inside it joined to it while they are its whole body; a top-level reduction split into
    /// [`CHUNKS`] chunks (`rfactor`) run on threads. A top-level loop with nothing to share
    /// even joined (a batch of one) runs the loops inside it on threads instead, where it can.
    fn parallelize_outermost(&mut self) {
        let tops: Vec<(VarId, usize)> = self.nest.body.iter().filter_map(|s| if let Stmt::Loop { var, extent, .. } = s { Some((*var, *extent)) } else { None }).collect();
        for (var, extent) in tops {
            if has_parallel(&self.nest.body, var) {
                self.note(Rule::Threads, RuleVerdict::Applied, format!("{var}: on threads already (by a tile or split-K)"));
                continue;
            }
            self.refused = None;
            let unsplit = (self.nest.clone(), self.steps.len());
            self.split_flat_end(var);
            let chain = chain_loops(&self.nest.body, var);
            if chain.iter().map(|l| l.1).product::<usize>() == 1 && self.parallelize_inside(var) {
                self.note(Rule::Threads, RuleVerdict::Applied, format!("{var} has one iteration: loops inside it on threads"));
                continue;
            }
            if self.try_step(Step::Parallel { var }) {
                // Joined while short, but never a flat loop: it stays one vectorizable loop.
                let mut shared = extent;
                let mut joined = 0;
                for &(_, n, flat) in &chain[1..] {
                    if shared >= SHARED || flat || !self.try_step(Step::Join { var }) {
                        break;
                    }
                    shared *= n;
                    joined += 1;
                }
                let with = if joined > 0 { format!(", joined with {joined} loop(s) inside it") } else { String::new() };
                self.note(Rule::Threads, RuleVerdict::Applied, format!("{var} ({extent} iterations) on threads{with}"));
            } else {
                let why = self.refusal("");
                // A reduction: its chunks on threads, each one long loop (the split undone).
                (self.nest, self.steps) = (unsplit.0, self.steps[..unsplit.1].to_vec());
                let chunked = extent >= 4 * CHUNKS && self.try_step(Step::Rfactor { var, chunks: CHUNKS }) && parent_loop(&self.nest.body, var).is_some_and(|chunk| self.try_step(Step::Parallel { var: chunk }));
                match chunked {
                    true => self.note(Rule::Threads, RuleVerdict::Applied, format!("{var}: a reduction, in {CHUNKS} chunks on threads")),
                    false => self.note(Rule::Threads, RuleVerdict::Declined, format!("{var} stays serial: {why}")),
                }
            }
        }
    }
}

impl Builder {
    /// The flat loop (no loops inside) ending the chain of loops from top-level loop `top`,
    /// when it has [`LONG`] iterations or more and the loops above it share fewer than [`CHUNKS`], split so
    /// that its outer part makes up [`CHUNKS`] and its inner part stays one long loop to
    /// vectorize: a 1-D elementwise kernel on threads and in vectors.
    fn split_flat_end(&mut self, top: VarId) {
        let chain = chain_loops(&self.nest.body, top);
        let Some(&(last, n, true)) = chain.last() else { return };
        let above: usize = chain[..chain.len() - 1].iter().map(|l| l.1).product();
        if above >= CHUNKS || n < LONG {
            return;
        }
        if let Some(outer) = (CHUNKS.div_ceil(above)..=n / 64).find(|o| n % o == 0) {
            self.try_step(Step::Split { var: last, factor: n / outer });
        }
    }

    /// Below the chain of loops from top-level loop `top` (each the whole body of the one
    /// before), each loop doing at least [`INSIDE`] statements' work on threads, or, for a
    /// reduction, its [`CHUNKS`] chunks (`rfactor`). Whether any loop took threads.
    fn parallelize_inside(&mut self, top: VarId) -> bool {
        let Some(body) = find_loop(&self.nest.body, top).map(|s| tile::chain(s).1.to_vec()) else { return false };
        let mut any = false;
        for s in &body {
            let Stmt::Loop { var, extent, .. } = s else { continue };
            let (var, extent) = (*var, *extent);
            if extent < 2 || work(s) < INSIDE {
                continue;
            }
            if self.try_step(Step::Parallel { var }) {
                any = true;
            } else if extent >= 4 * CHUNKS && self.try_step(Step::Rfactor { var, chunks: CHUNKS }) {
                if let Some(chunk) = parent_loop(&self.nest.body, var) {
                    any |= self.try_step(Step::Parallel { var: chunk });
                }
            }
        }
        any
    }

    /// Under each top-level loop, its `k`-th vectorized loop prefetches the inputs of the top
    /// loop's next iteration (one loop only: prefetching from every pass over a row measured
    /// slower than from none on log-softmax, from its exp pass alone 12% faster).
    fn prefetch_ahead(&mut self, k: usize) {
        let tops: Vec<(VarId, Vec<VarId>)> = self
            .nest
            .body
            .iter()
            .filter_map(|s| match s {
                Stmt::Loop { var, body, .. } => Some((*var, vector_loops(body))),
                _ => None,
            })
            .collect();
        for (top, vectors) in tops {
            if let Some(&var) = vectors.get(k) {
                self.try_step(Step::Prefetch { var, along: top });
            }
        }
    }
}

/// Blocks of columns a column reduction is split into ([`Builder::columns`]): one per thread of
/// this project's 2-core machines, so that each thread reads the longest contiguous run of every
/// row (its half).
const COLUMN_BLOCKS: usize = 2;

/// The most steps a reduction may take for [`Builder::short_reductions`] to move the loop over
/// its outputs inside it.
const SHORT: usize = 16;

/// Loops over the outputs of short reductions (see [`Builder::short_reductions`]), at any depth,
/// with their extents, the buffer reduced into and the reduction's loops, outermost first.
fn short_reduction_loops(body: &[Stmt], lanes: usize, out: &mut Vec<(VarId, usize, BufferId, Vec<VarId>)>) {
    for s in body {
        let Stmt::Loop { var: j, extent, kind: LoopKind::Serial, body } = s else { continue };
        if let [Stmt::Store { buffer: acc, offset: o, value: Expr::Const(_) }, window @ Stmt::Loop { .. }] = body.as_slice() {
            let (loops, inner) = tile::chain(window);
            let steps: usize = loops.iter().map(|l| l.1).product();
            let reduces = matches!(inner, [Stmt::Store { buffer, offset, value: Expr::Binary(_, a, _) }]
                if buffer == acc && offset == o && matches!(&**a, Expr::Load { buffer: b, offset: x } if b == acc && x == o));
            // A longer reduction too where it reads windows along the outputs (each load that
            // moves with them one or two elements a step: a convolution no register tile
            // fits, as a grouped one of 4 channels a group), not rows across them (a matrix
            // times a vector).
            let mut loads = Vec::new();
            if let [Stmt::Store { value, .. }] = inner {
                value.every_load(&mut loads);
            }
            let moving = loads.iter().filter(|(b, _)| b != acc).map(|(_, a)| a.coefficient(*j)).filter(|c| *c != 0).collect::<Vec<_>>();
            let windows = !moving.is_empty() && moving.iter().all(|c| (1..=2).contains(c));
            if reduces && (steps <= SHORT || windows) && *extent >= lanes && o.coefficient(*j) == 1 && loops.iter().all(|l| o.coefficient(l.0) == 0) {
                out.push((*j, *extent, *acc, loops.iter().map(|l| l.0).collect()));
                continue;
            }
        }
        short_reduction_loops(body, lanes, out);
    }
}

/// The most rows of a transpose's tile: 2 KiB of floats of each row of the array read down its
/// columns (512 × 16 tiles measured at 93% of the bandwidth floor on an Intel Xeon, against
/// 67% at 256 × 32 and 50% at 128 × 32).
const TRANSPOSE_ROW: usize = 512;

/// For a transpose at the top level (see [`Builder::transposes`]): the outer loop and its
/// extent, the inner loop and its extent.
fn transpose(s: &Stmt) -> Option<(VarId, usize, VarId, usize)> {
    let Stmt::Loop { var: i, extent: n, kind: LoopKind::Serial, body } = s else { return None };
    let [Stmt::Loop { var: j, extent: m, kind: LoopKind::Serial, body: inner }] = body.as_slice() else { return None };
    let [Stmt::Store { offset, value, .. }] = inner.as_slice() else { return None };
    let mut loads = Vec::new();
    value.every_load(&mut loads);
    let across = loads.iter().any(|(_, a)| a.coefficient(*i) == 1 && a.coefficient(*j) >= *n as i64);
    (offset.coefficient(*j) == 1 && offset.coefficient(*i) != 0 && across).then_some((*i, *n, *j, *m))
}

/// The most bytes of rows a block of columns reads when a later column reduction reads the
/// block's result back in a second pass: 4 MiB per thread, which the last-level caches of the
/// machines this project runs on hold for both cores.
const CACHED_BLOCK: usize = 4 << 20;

/// Whether the top-level loop `later` reads a buffer the top-level loop `first` writes.
fn reads_result(body: &[Stmt], first: VarId, later: VarId) -> bool {
    let (Some(Stmt::Loop { body: a, .. }), Some(Stmt::Loop { body: b, .. })) = (find_loop(body, first), find_loop(body, later)) else { return false };
    let mut written = Vec::new();
    stores(a, &mut written);
    let mut read = Vec::new();
    b.iter().for_each(|s| loads_of(s, &mut read));
    written.iter().any(|w| read.contains(w))
}

fn stores(body: &[Stmt], out: &mut Vec<BufferId>) {
    for s in body {
        match s {
            Stmt::Loop { body, .. } => stores(body, out),
            Stmt::Store { buffer, .. } => out.push(*buffer),
            Stmt::Prefetch { .. } => {}
        }
    }
}

fn loads_of(s: &Stmt, out: &mut Vec<BufferId>) {
    match s {
        Stmt::Loop { body, .. } => body.iter().for_each(|s| loads_of(s, out)),
        Stmt::Store { value, .. } => {
            let mut all = Vec::new();
            value.every_load(&mut all);
            out.extend(all.into_iter().map(|(b, _)| b));
        }
        Stmt::Prefetch { .. } => {}
    }
}

/// For a column reduction at the top level (see [`Builder::columns`]): the loop over its outputs,
/// its extent, and the reduction loop inside it.
fn column_reduction(s: &Stmt) -> Option<(VarId, usize, VarId)> {
    let Stmt::Loop { var: j, extent, kind: LoopKind::Serial, body } = s else { return None };
    let [Stmt::Store { offset: init, .. }, Stmt::Loop { var: i, kind: LoopKind::Serial, body: inner, .. }] = body.as_slice() else { return None };
    let [Stmt::Store { buffer, offset, value: Expr::Binary(_, acc, rest) }] = inner.as_slice() else { return None };
    let accumulates = matches!(&**acc, Expr::Load { buffer: b, offset: o } if b == buffer && o == offset);
    if !accumulates || offset != init || offset.coefficient(*i) != 0 || offset.coefficient(*j) == 0 {
        return None;
    }
    let mut loads = Vec::new();
    rest.every_load(&mut loads);
    // Down the columns: no load is contiguous along the reduction, and one walks down the rows
    // contiguous along the outputs.
    let down = loads.iter().all(|(_, a)| a.coefficient(*i).abs() != 1) && loads.iter().any(|(_, a)| a.coefficient(*j) == 1 && a.coefficient(*i).abs() > 1);
    down.then_some((*j, *extent, *i))
}

/// The statements of the list holding loop `var`, each by its loop variable (`VarId(u32::MAX)`
/// for a statement that is not a loop); empty if `var` is not in `body`.
fn siblings(body: &[Stmt], var: VarId) -> Vec<VarId> {
    let ids = |list: &[Stmt]| list.iter().map(|s| if let Stmt::Loop { var, .. } = s { *var } else { VarId(u32::MAX) }).collect::<Vec<VarId>>();
    if body.iter().any(|s| matches!(s, Stmt::Loop { var: v, .. } if *v == var)) {
        return ids(body);
    }
    body.iter().find_map(|s| match s {
        Stmt::Loop { body, .. } => Some(siblings(body, var)).filter(|l| !l.is_empty()),
        _ => None,
    }).unwrap_or_default()
}

/// The loop right before loop `var` in its list, if there is one and it is a loop.
fn prev_of(body: &[Stmt], var: VarId) -> Option<VarId> {
    let list = siblings(body, var);
    let at = list.iter().position(|&v| v == var)?;
    at.checked_sub(1).map(|k| list[k]).filter(|v| v.0 != u32::MAX)
}

/// The vectorized loops in `body`, in program order.
fn vector_loops(body: &[Stmt]) -> Vec<VarId> {
    let mut out = Vec::new();
    for s in body {
        if let Stmt::Loop { var, kind, body, .. } = s {
            if matches!(kind, LoopKind::Vector(_) | LoopKind::Stream(_)) {
                out.push(*var);
            }
            out.extend(vector_loops(body));
        }
    }
    out
}

/// Whether loop `var` or a loop inside it runs on threads.
fn has_parallel(body: &[Stmt], var: VarId) -> bool {
    fn any(body: &[Stmt]) -> bool {
        body.iter().any(|s| matches!(s, Stmt::Loop { kind: LoopKind::Parallel, .. }) || matches!(s, Stmt::Loop { body, .. } if any(body)))
    }
    body.iter().any(|s| match s {
        Stmt::Loop { var: v, .. } if *v == var => any(std::slice::from_ref(s)),
        Stmt::Loop { body, .. } => has_parallel(body, var),
        _ => false,
    })
}

/// Iterations a parallel loop shares out below which the sketch joins the loops inside it.
const SHARED: usize = 16;

/// Iterations from which a flat loop ending a short chain of loops is split to go on threads.
const LONG: usize = 1024;

/// Statements executed below which a loop inside a short top-level loop is not worth a
/// parallel region of its own (a region costs a few microseconds).
const INSIDE: usize = 1 << 16;

/// The statements `s` executes: its extent times its body's, for a loop.
fn work(s: &Stmt) -> usize {
    match s {
        Stmt::Loop { extent, body, .. } => extent.saturating_mul(body.iter().map(work).sum()),
        _ => 1,
    }
}

/// The statement `var` loops over.
fn find_loop(body: &[Stmt], var: VarId) -> Option<&Stmt> {
    body.iter().find_map(|s| match s {
        Stmt::Loop { var: v, .. } if *v == var => Some(s),
        Stmt::Loop { body, .. } => find_loop(body, var),
        _ => None,
    })
}

/// The chain of loops from loop `var`, each the whole body of the one before: variable, extent,
/// and whether it is flat (no loop inside).
fn chain_loops(body: &[Stmt], var: VarId) -> Vec<(VarId, usize, bool)> {
    let Some(s) = find_loop(body, var) else { return Vec::new() };
    let (loops, inner) = tile::chain(s);
    // Only the last can be flat: each other loop's whole body is a loop.
    let flat = !inner.iter().any(|s| matches!(s, Stmt::Loop { .. }));
    let last = loops.len().saturating_sub(1);
    loops.into_iter().enumerate().map(|(k, (v, n))| (v, n, k == last && flat)).collect()
}

/// The fewest elements a vector loop stores in a run for its stores to stream past the caches
/// (a 4 KiB page of floats).
const STREAM_RUN: usize = 1024;

/// The chunks `rfactor` splits a top-level reduction into: a few per thread on this project's
/// 2-core machines, so a static schedule stays balanced on up to 8.
const CHUNKS: usize = 8;

/// The loop directly around loop `var`.
fn parent_loop(body: &[Stmt], var: VarId) -> Option<VarId> {
    for s in body {
        if let Stmt::Loop { var: v, body, .. } = s {
            if body.iter().any(|s| matches!(s, Stmt::Loop { var: w, .. } if *w == var)) {
                return Some(*v);
            }
            if let Some(found) = parent_loop(body, var) {
                return Some(found);
            }
        }
    }
    None
}

/// Serial loops over the same extent with no loop between them, at every level, and how many
/// statements are between them.
fn adjacent_pairs(body: &[Stmt], out: &mut Vec<(VarId, usize, VarId)>) {
    let serial = |s: &Stmt| match s {
        Stmt::Loop { var, extent, kind: LoopKind::Serial, .. } => Some((*var, *extent)),
        _ => None,
    };
    for (k, s) in body.iter().enumerate() {
        let Some((a, n)) = serial(s) else { continue };
        let between = body[k + 1..].iter().take_while(|s| !matches!(s, Stmt::Loop { .. })).count();
        if let Some((b, m)) = body.get(k + 1 + between).and_then(serial) {
            if n == m {
                out.push((a, between, b));
            }
        }
    }
    for s in body {
        if let Stmt::Loop { body, .. } = s {
            adjacent_pairs(body, out);
        }
    }
}

/// The loops holding every use of temporary `name`, innermost first.
fn holders(nest: &LoopNest, name: &str) -> Vec<VarId> {
    let Some(id) = nest.buffers.iter().position(|b| b.name == name) else { return Vec::new() };
    let total = uses(&nest.body, id as u32);
    let mut out = Vec::new();
    fn walk(body: &[Stmt], id: u32, total: usize, out: &mut Vec<VarId>) {
        for s in body {
            if let Stmt::Loop { var, body, .. } = s {
                if uses(body, id) == total {
                    out.push(*var);
                    walk(body, id, total, out);
                }
            }
        }
    }
    walk(&nest.body, id as u32, total, &mut out);
    out.reverse();
    out
}

fn uses(body: &[Stmt], id: u32) -> usize {
    let mut accesses = Vec::new();
    body.iter().for_each(|s| s.accesses(BufferId(id), &mut accesses));
    accesses.len()
}

/// Innermost serial loops: variable, extent, and whether it reduces (some statement is
/// `a[k] = op(a[k], e)` with `a[k]` fixed across its iterations; the others may run along).
fn innermost_loops(body: &[Stmt], out: &mut Vec<(VarId, usize, bool)>) {
    for s in body {
        let Stmt::Loop { var, extent, kind, body } = s else { continue };
        if body.iter().any(|s| matches!(s, Stmt::Loop { .. })) {
            innermost_loops(body, out);
        } else if *kind == LoopKind::Serial {
            let reduction = body.iter().any(|s| matches!(s, Stmt::Store { buffer, offset, value: Expr::Binary(_, acc, _) }
                if offset.coefficient(*var) == 0 && matches!(&**acc, Expr::Load { buffer: b, offset: o } if b == buffer && o == offset)));
            out.push((*var, *extent, reduction));
        }
    }
}

/// The least common multiple.
fn lcm(a: usize, b: usize) -> usize {
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    a / gcd(a, b) * b
}

/// Every loop of `body`, outermost first (each before the loops inside it).
fn every_loop(body: &[Stmt], out: &mut Vec<VarId>) {
    for s in body {
        if let Stmt::Loop { var, body, .. } = s {
            out.push(*var);
            every_loop(body, out);
        }
    }
}

/// The single loop directly inside loop `var`.
fn child_loop(body: &[Stmt], var: VarId) -> Option<VarId> {
    for s in body {
        if let Stmt::Loop { var: v, body, .. } = s {
            if *v == var {
                return match body.as_slice() {
                    [Stmt::Loop { var, .. }] => Some(*var),
                    _ => None,
                };
            }
            if let Some(found) = child_loop(body, var) {
                return Some(found);
            }
        }
    }
    None
}

/// Offers its sketches in turn until each has been measured (a sketch the cost model left out of
/// a round is offered again), then is exhausted.
pub struct Sketch {
    offers: crate::offers::Offers,
}

impl Sketch {
    /// The sketches of `naive` for `target`.
    pub fn new(naive: &LoopNest, target: &Target) -> Sketch {
        let pending: Vec<Kernel> = sketches(naive, target).into_iter().map(Kernel::Scheduled).collect();
        tracing::debug!(sketches = pending.len(), "sketches built");
        Sketch { offers: crate::offers::Offers::new(pending) }
    }
}

impl<N> Propose<Kernel, N> for Sketch {
    fn name(&self) -> &str {
        "sketch"
    }

    fn propose(&mut self, _current: &Kernel, _rng: &mut ChaCha8Rng) -> Proposal<Kernel> {
        if self.offers.is_empty() {
            return Proposal::Exhausted;
        }
        self.offers.offer()
    }

    fn observe(&mut self, event: &Event<Kernel, N>) {
        self.offers.seen(&event.candidate);
    }

    /// While the chain is at the naive kernel, a sketch beats any one mutation of it: the search
    /// starts from one.
    fn leading(&self, current: &Kernel) -> bool {
        !self.offers.is_empty() && *current == Kernel::Scheduled(crate::initial_schedule())
    }
}

/// The most times a reader may read each element of a temporary for its producer to be
/// computed where it is read.
const MAX_INLINED_READS: usize = 4;

/// The most times any load of `buffer` in `body` reads one element: the product of the extents
/// of the loops around it (`outer`, then `body`'s own) that its offset does not move with.
fn reads_per_element(body: &[Stmt], buffer: BufferId, outer: &mut Vec<(VarId, usize)>) -> usize {
    let mut most = 0;
    for s in body {
        match s {
            Stmt::Loop { var, extent, body, .. } => {
                outer.push((*var, *extent));
                most = most.max(reads_per_element(body, buffer, outer));
                outer.pop();
            }
            Stmt::Store { value, .. } => {
                let mut offsets = Vec::new();
                value.loads(buffer, &mut offsets);
                for offset in offsets {
                    most = most.max(outer.iter().filter(|(v, _)| offset.coefficient(*v) == 0).map(|(_, n)| n).product());
                }
            }
            Stmt::Prefetch { .. } => {}
        }
    }
    most
}

/// Whether recomputing `e` where it is read costs about what reading it back would: no
/// transcendental, no division but by a constant.
fn cheap(e: &Expr) -> bool {
    match e {
        Expr::Const(_) | Expr::Load { .. } | Expr::Index(_) => true,
        Expr::Unary(op, a) => matches!(op, UnaryOp::Neg | UnaryOp::Abs) && cheap(a),
        Expr::Cast(_, a) => cheap(a),
        Expr::Binary(BinaryOp::Pow, ..) => false,
        Expr::Binary(BinaryOp::Div, a, b) => matches!(**b, Expr::Const(_)) && cheap(a),
        Expr::Binary(_, a, b) | Expr::Compare(_, a, b) => cheap(a) && cheap(b),
        Expr::Select(c, a, b) => cheap(c) && cheap(a) && cheap(b),
        Expr::Within { inside, outside, .. } => cheap(inside) && cheap(outside),
        Expr::Gather { indices, .. } => indices.iter().all(|d| cheap(&d.value)),
    }
}
