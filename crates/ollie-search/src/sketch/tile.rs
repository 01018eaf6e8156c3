//! Register tiles for contractions (the sketch rule for every einsum in a spec): the output's
//! last two axes split into a tile of `rows` × `vectors` vectors, the reduction moved inside the
//! tile's loops (unroll-and-jam by `reorder` and `expand`), the tile cached (`cache`) and held in
//! registers (`registers`) while the reduction streams the operands; the operand that moves with
//! the tile's columns packed per column panel (`cache` at the panel's loop: contiguous, in the
//! order the tile reads it, whatever its layout in the spec), the panels on threads. Sizes come
//! from the register file (see [`shapes`]), in half vectors where no tile of full ones divides
//! the output (56 columns: 8 divides them, 16 does not). Where no tile divides the output's last
//! two axes, a transposed tile may ([`Contraction::across`]: a convolution's output channels in
//! the vectors, its output positions in the rows, the weights packed per panel of channels); a
//! contraction that none fits is left to the other rules.

use ollie_loops::{BufferId, Expr, LoopKind, LoopNest, Stmt, Step, VarId};

use super::{Builder, Caches};

/// A contraction of the naive nest: the loops over its output's axes (outermost first, each
/// the whole body of the one before), over its reduced labels, and the output.
#[derive(Debug, Clone)]
pub(super) struct Contraction {
    free: Vec<(VarId, usize)>,
    reduce: Vec<(VarId, usize)>,
    out: BufferId,
    /// The inputs the accumulation loads.
    operands: Vec<(BufferId, ollie_loops::Affine)>,
}

/// Blocks of rows a gathered panel must serve for a packed tile to be built rather than a
/// dot tile ([`Contraction::dot_pays`]).
const PACK_SHARED: usize = 8;

/// A register tile: `rows` output rows by `vectors` vectors of columns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Tile {
    pub rows: usize,
    pub vectors: usize,
}

/// Cache blocks around a register tile (BLIS's KC and MC): the reduction in blocks of `kc`
/// steps, so the packed panel of the column operand a tile streams (KC × NR) stays in the
/// first-level cache; the rows in blocks of `mc`, so the packed block of the row operand
/// (MC × KC) stays in the second-level cache while every column panel passes over it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Blocks {
    pub kc: usize,
    pub mc: usize,
}

/// Tile shapes for vectors of `lanes` floats, most promising first: the accumulators plus the
/// column vectors in flight fill the register file (32 vector registers with AVX-512, 16 with
/// AVX2) without spilling, as BLIS's micro-kernels do (6×16 floats on Zen 3, 12×32 on Skylake-X).
pub(super) fn shapes(lanes: u32) -> &'static [(usize, usize)] {
    if lanes >= 16 {
        &[(8, 2), (12, 2), (6, 4), (4, 4), (16, 1), (4, 2), (2, 2)]
    } else {
        &[(6, 2), (4, 3), (4, 2), (8, 1), (2, 2)]
    }
}

/// Vector registers a tile may fill: 32 with AVX-512, 16 with AVX2.
pub(super) fn registers(lanes: u32) -> usize {
    if lanes >= 16 {
        32
    } else {
        16
    }
}

/// The most steps of a reduction not worth a register tile.
const SHORT_SUM: usize = 8;

/// The contractions of `nest`: chains of loops whose innermost body is an initial store of the
/// output and a chain of reduction loops around its accumulation, of more than [`SHORT_SUM`]
/// steps (fewer, as split-K's combine of a few partial results, leave nothing to tile).
pub(super) fn contractions(nest: &LoopNest) -> Vec<Contraction> {
    let mut out = Vec::new();
    for s in &nest.body {
        let (free, body) = chain(s);
        let [Stmt::Store { buffer, offset, value: Expr::Const(_) }, reduction @ Stmt::Loop { .. }] = body else { continue };
        let (reduce, body) = chain(reduction);
        let [Stmt::Store { buffer: b, offset: o, value: Expr::Binary(_, acc, e) }] = body else { continue };
        let steps: usize = reduce.iter().map(|l| l.1).product();
        if b == buffer && o == offset && steps > SHORT_SUM && matches!(&**acc, Expr::Load { buffer: a, offset: ao } if a == buffer && ao == offset) {
            let mut operands = Vec::new();
            e.every_load(&mut operands);
            out.push(Contraction { free, reduce, out: *buffer, operands });
        }
    }
    out
}

/// The loops from `s` inward while each is the whole body of the one before (variables and
/// extents, outermost first), and the innermost one's body.
pub(super) fn chain(s: &Stmt) -> (Vec<(VarId, usize)>, &[Stmt]) {
    let mut loops = Vec::new();
    let mut body = std::slice::from_ref(s);
    while let [Stmt::Loop { var, extent, body: inner, .. }] = body {
        loops.push((*var, *extent));
        body = inner;
    }
    (loops, body)
}


impl Contraction {
    /// The buffer it accumulates into.
    pub(super) fn output(&self) -> BufferId {
        self.out
    }

    /// The loops over its output's axes, outermost first.
    pub(super) fn free(&self) -> &[(VarId, usize)] {
        &self.free
    }

    /// The loop over the tile's columns: the output's last axis, along which the output is
    /// contiguous.
    fn columns(&self, nest: &LoopNest) -> Option<(VarId, usize)> {
        let &(j, n) = self.free.last()?;
        let mut init = Vec::new();
        nest.body.iter().for_each(|s| s.accesses(self.out, &mut init));
        (init.first()?.coefficient(j) == 1).then_some((j, n))
    }

    /// The loop to `merge` with the output's last (a 1×1 convolution's rows of positions,
    /// contiguous): where no tile of `lanes` divides the output's last two axes but one would
    /// divide them with the last two merged into one, rows being the axis before them. Whether
    /// the merge is legal is `merge`'s to say.
    pub(super) fn merge_for_tile(&self, lanes: u32) -> Option<VarId> {
        let [.., (rows, m), (outer, n), (_, extent)] = self.free[..] else { return None };
        let shared = self.operands.iter().any(|(_, a)| a.coefficient(rows) == 0);
        let fits_now = shapes(lanes).iter().any(|&(r, v)| self.last_two(r, v * lanes as usize)) || self.last_two(1, lanes as usize);
        let fits_merged = shapes(lanes).iter().any(|&(r, v)| m % r == 0 && (n * extent) % (v * lanes as usize) == 0);
        (shared && !fits_now && fits_merged).then_some(outer)
    }

    /// The loop over the tile's rows: the output axis just before the columns', when an operand
    /// does not move with it (its loads are then shared by the tile's rows).
    fn rows(&self) -> Option<(VarId, usize)> {
        let [.., (i, m), _] = self.free[..] else { return None };
        self.operands.iter().any(|(_, a)| a.coefficient(i) == 0).then_some((i, m))
    }

    /// The reduction loop to split into `chunks` (split-K), when the contraction's outputs make
    /// fewer than `chunks` pieces of work to share among threads (a piece: one output, or a
    /// one-row tile of up to 8 vectors along the last axis when an operand the reduction streams
    /// is contiguous along it) and its reduction is at least 64 steps per chunk.
    pub(super) fn split_k(&self, lanes: u32, chunks: usize) -> Option<VarId> {
        let (&(j, columns), rows) = self.free.split_last()?;
        let streamed_along = |a: &ollie_loops::Affine| a.coefficient(j) == 1 && self.reduce.iter().any(|r| a.coefficient(r.0) != 0);
        let width = if self.operands.iter().any(|(_, a)| streamed_along(a)) { 8 * lanes as usize } else { 1 };
        let pieces = rows.iter().map(|f| f.1).product::<usize>() * columns.div_ceil(width);
        let &(r, n) = self.reduce.first()?;
        (pieces < chunks && n % chunks == 0 && n >= 64 * chunks).then_some(r)
    }

    /// Cache blocks for tile `t` from the cache sizes: KC the largest divisor of the reduction
    /// (at least 16 steps, at least two blocks) whose KC × NR panel fills at most half the
    /// first-level data cache, MC the largest multiple of the tile's rows dividing the rows
    /// whose MC × KC block fills at most half the second-level cache. None for a contraction
    /// without rows to share or a reduction too short to block.
    pub(super) fn blocks(&self, t: Tile, lanes: u32, caches: Caches) -> Option<Blocks> {
        const FLOAT: usize = 4;
        let (_, m) = self.rows()?;
        let &(_, k) = self.reduce.first()?;
        let panel = t.vectors * lanes as usize * FLOAT;
        let kc = (16..=(caches.l1d_bytes / 2 / panel).min(k / 2)).rev().find(|kc| k % kc == 0)?;
        let mc = (1..=m / t.rows).rev().map(|d| d * t.rows).find(|mc| m % mc == 0 && mc * kc * FLOAT <= caches.l2_bytes / 2)?;
        Some(Blocks { kc, mc })
    }

    /// Whether an operand moving with the columns is not contiguous along them but along the
    /// reduction (a panel of it packed for a register tile would be gathered a float at a
    /// time) while another is shared by the columns: a product like `q @ k.T`, not a plain
    /// reduction of rows.
    fn gathers(&self) -> bool {
        let (Some(&(j, _)), Some(&(r, _))) = (self.free.last(), self.reduce.last()) else { return false };
        self.operands.iter().any(|(_, a)| a.coefficient(j) > 1 && a.coefficient(r) == 1) && self.operands.iter().any(|(_, a)| a.coefficient(j) == 0)
    }

    /// Whether tile `t` should be a dot tile: the product [`gathers`](Self::gathers) and a
    /// gathered panel would serve fewer than [`PACK_SHARED`] blocks of rows. Where many share
    /// it the gather pays for itself: MLA decode at 128 heads (16 blocks of 8) took 1.14x the
    /// time with a dot tile, at 16 heads (2 blocks) 0.94x.
    fn dot_pays(&self, t: Tile) -> bool {
        self.gathers() && self.rows().is_none_or(|(_, m)| m / t.rows < PACK_SHARED)
    }

    /// Whether a tile of `rows` × `columns` divides the output's last two axes (a contraction
    /// without rows to share takes one row), or the axes of a transposed tile ([`Self::across`]).
    pub(super) fn fits(&self, rows: usize, columns: usize) -> bool {
        self.last_two(rows, columns) || self.across_fitting(rows, columns).next().is_some()
    }

    /// The [`Self::across`] axes that a tile of `rows` × `columns` divides: columns, then rows.
    fn across_fitting(&self, rows: usize, columns: usize) -> impl Iterator<Item = (VarId, VarId)> {
        self.across().into_iter().filter(move |&((_, n), (_, m))| n % columns == 0 && m % rows == 0).map(|((j, _), (i, _))| (j, i))
    }

    /// Whether operand `b` is a panel of overlapping windows contiguous along columns `j` (a
    /// convolution's input, its taps stepping within a panel of `width` columns), which a tile
    /// reads where it lies: packed, it would hold each element once per tap. Strided windows
    /// are packed so (im2col's panel: a row per tap, contiguous along the columns).
    fn windows_in_place(&self, b: BufferId, j: VarId, width: usize) -> bool {
        let accesses = || self.operands.iter().filter(|(o, _)| *o == b).map(|(_, a)| a);
        let overlapping = accesses().any(|a| self.reduce.iter().any(|&(r, _)| (1..width as i64).contains(&a.coefficient(r).abs())));
        overlapping && accesses().all(|a| a.coefficient(j) == 1)
    }

    /// Whether a tile of `rows` × `columns` divides the output's last two axes.
    pub(super) fn last_two(&self, rows: usize, columns: usize) -> bool {
        self.rows().is_some_and(|(_, m)| m % rows == 0) && matches!(self.free.last(), Some((_, n)) if n % columns == 0)
    }

    /// The axes of outer-product tiles wherever they lie in the output — a direct
    /// convolution's, whose output positions (7, 14, 28, 56 of them) no vector tile divides
    /// but whose output channels (64, 128, …) do: the columns (the tile's vectors) an output
    /// axis that some operands move with and others do not (the weights, packed per panel of
    /// channels, contiguous), the rows an axis that the others move with and the first do not
    /// (the input, a broadcast per position); no operand moves with both. Candidates in order:
    /// the smallest operands packed first (the weights, not the input, whose windows overlap),
    /// then the widest columns; as rows, the output's innermost axis that qualifies. The tile
    /// is held transposed, in registers along the columns, and written back lane by lane once
    /// per tile.
    pub(super) fn across(&self) -> Vec<((VarId, usize), (VarId, usize))> {
        let moves = |a: &ollie_loops::Affine, v: VarId| a.coefficient(v) != 0;
        let outer = |j: VarId, i: VarId| {
            i != j
                && !self.operands.iter().any(|(_, a)| moves(a, j) && moves(a, i))
                && self.operands.iter().any(|(_, a)| moves(a, j))
                && self.operands.iter().any(|(_, a)| moves(a, i))
        };
        // The elements an operand's accesses reach, about: the extents of the loops it moves with.
        let span = |a: &ollie_loops::Affine| self.free.iter().chain(&self.reduce).filter(|l| moves(a, l.0)).map(|l| l.1).product::<usize>();
        let packed = |j: VarId| self.operands.iter().filter(|(_, a)| moves(a, j)).map(|(_, a)| span(a)).sum::<usize>();
        let mut columns = self.free.clone();
        columns.sort_by_key(|&(j, n)| (packed(j), std::cmp::Reverse(n)));
        columns.into_iter().filter(|j| j.1 > 1).filter_map(|j| Some((j, *self.free.iter().rev().find(|i| i.1 > 1 && outer(j.0, i.0))?))).collect()
    }

    /// Transposed tiles ([`Self::across`]) for vectors of `lanes`: `vectors` dividing the
    /// columns, `rows` dividing the rows, the accumulators, a row of column vectors and a
    /// broadcast within the register file; the most multiplications per load first.
    pub(super) fn across_shapes(&self, lanes: u32) -> Vec<Tile> {
        let per_load = |t: &Tile| (t.rows * t.vectors) as f64 / (t.rows + t.vectors) as f64;
        let shapes = |((_, n), (_, m)): ((VarId, usize), (VarId, usize))| {
            let mut tiles: Vec<Tile> = (1..=4usize)
                .filter(|v| n % (v * lanes as usize) == 0)
                .flat_map(|vectors| (1..=16).filter(move |r| m % r == 0).map(move |rows| Tile { rows, vectors }))
                .filter(|t| t.rows * t.vectors + t.vectors < registers(lanes))
                .collect();
            tiles.sort_by(|a, b| per_load(b).total_cmp(&per_load(a)));
            tiles
        };
        self.across().into_iter().map(shapes).find(|tiles| !tiles.is_empty()).unwrap_or_default()
    }
}

/// A tile built by [`Builder::tile`], to be held in registers once the loops around it are
/// settled: the loop it lives in and the temporary holding it.
pub(super) struct Built {
    scope: VarId,
    tile: BufferId,
    /// For a dot tile: its reduction loop and the loop over blocks of columns, whose next
    /// iteration's column rows the reduction prefetches.
    ahead: Option<(VarId, VarId)>,
}

impl Built {
    /// A tile cached as `tile` in loop `scope`, the nest's newest temporary.
    pub(super) fn newest(nest: &ollie_loops::LoopNest, scope: VarId) -> Built {
        Built { scope, tile: BufferId(nest.buffers.len() as u32 - 1), ahead: None }
    }
}

/// The most vectors in a tile of one row (a contraction without rows to share, a short
/// reduction's block of outputs).
const ROW_VECTORS: usize = 8;

/// How many vectors of `lanes`, at most [`ROW_VECTORS`], a row of `n` is cut into whole: the
/// most that divide it.
pub(super) fn row_vectors(n: usize, lanes: u32) -> Option<usize> {
    (1..=ROW_VECTORS).rev().find(|v| n % (v * lanes as usize) == 0)
}

impl Builder {
    /// Tiles contraction `c` (of the nest before fusion) with tile `t` and
    /// vectors of `lanes`, all or nothing: the loops split and ordered, the reduction inside the
    /// tile's loops, the tile cached, operands shared by its rows packed per column panel; with
    /// `blocks`, blocked for the caches as well (see [`Builder::block`]).
    pub(super) fn tile(&mut self, c: &Contraction, t: Tile, lanes: u32, blocks: Option<Blocks>) -> Option<Built> {
        // A product that would gather its column operand for few blocks of rows gets a dot tile,
        // blocked or not.
        self.all_or_nothing(|b| match blocks {
            Some(blocks) if !c.dot_pays(t) => b.block(c, t, lanes, blocks),
            _ => b.try_tile(c, t, lanes),
        })
        .or_else(|| self.transposed(c, t, lanes))
    }

    /// A transposed tile ([`Contraction::across`]): the columns split into panels of
    /// `t.vectors` vectors, the rows into blocks of `t.rows`, the tile's two loops moved inside
    /// the output's others and the reduction outside them; the tile cached in the row block's
    /// loop (laid out rows by columns: contiguous along the columns, whatever the output's
    /// layout), the operands moving with the columns packed per panel.
    fn transposed(&mut self, c: &Contraction, t: Tile, lanes: u32) -> Option<Built> {
        c.across_fitting(t.rows, t.vectors * lanes as usize).find_map(|(j, i)| self.all_or_nothing(|b| b.transposed_on(c, t, lanes, j, i)))
    }

    /// [`Builder::transposed`] with columns `j` and rows `i`.
    fn transposed_on(&mut self, c: &Contraction, t: Tile, lanes: u32, j: VarId, i: VarId) -> Option<Built> {
        let width = t.vectors * lanes as usize;
        let jj = self.nest.fresh_var();
        self.must(Step::Split { var: j, factor: width })?;
        let ii = self.nest.fresh_var();
        self.must(Step::Split { var: i, factor: t.rows })?;
        let reduce: Vec<VarId> = c.reduce.iter().map(|r| r.0).collect();
        self.sink(jj, &reduce)?;
        self.sink(ii, &[jj])?;
        for &r in &reduce {
            self.must(Step::Reorder { outer: jj, inner: r })?;
            self.must(Step::Reorder { outer: ii, inner: r })?;
        }
        let out = self.nest.buffer(c.out).name.clone();
        self.must(Step::Cache { buffer: out, var: i })?;
        let tile = BufferId(self.nest.buffers.len() as u32 - 1);
        let mut packed: Vec<String> = c.operands.iter().filter(|(_, a)| a.coefficient(j) != 0).map(|(b, _)| self.nest.buffer(*b).name.clone()).collect();
        packed.dedup();
        for name in packed {
            self.must(Step::Cache { buffer: name, var: j })?;
        }
        Some(Built { scope: i, tile, ahead: None })
    }

    /// Moves loop `v` inward, a swap at a time, while its body is a single loop not in `stop`.
    fn sink(&mut self, v: VarId, stop: &[VarId]) -> Option<()> {
        loop {
            let Some(Stmt::Loop { body, .. }) = super::find_loop(&self.nest.body, v) else { return None };
            let inner = match body.as_slice() {
                [Stmt::Loop { var, .. }] if !stop.contains(var) => *var,
                _ => return Some(()),
            };
            self.must(Step::Reorder { outer: v, inner })?;
        }
    }

    /// Runs `f`, all or nothing: where it gives up, the nest and the steps are as before.
    fn all_or_nothing<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        let saved = (self.nest.clone(), self.steps.len());
        let done = f(self);
        if done.is_none() {
            self.nest = saved.0;
            self.steps.truncate(saved.1);
        }
        done
    }

    fn try_tile(&mut self, c: &Contraction, t: Tile, lanes: u32) -> Option<Built> {
        // A dot tile where the reduction allows one, else a panel packed as it is.
        if c.dot_pays(t) {
            if let Some(built) = self.all_or_nothing(|b| b.dot(c, t, lanes)) {
                return Some(built);
            }
        }
        let (j, n) = c.columns(&self.nest)?;
        let rows = c.rows().filter(|(_, m)| m % t.rows == 0);
        // Without rows to share, one row of as many vectors as divide the columns.
        let vectors = match rows {
            Some(_) => t.vectors,
            None => row_vectors(n, lanes)?,
        };
        // Every operand moving with the columns must be contiguous along them, or packed: a
        // panel that the tile's rows share.
        let mut packed = Vec::new();
        for (b, a) in &c.operands {
            match (a.coefficient(j), rows) {
                (0 | 1, _) => {}
                (_, Some((i, _))) if a.coefficient(i) == 0 => {}
                _ => return None,
            }
            // A panel already contiguous along the columns is read where it lies when fewer
            // than PACK_SHARED blocks of rows share it: the copy would cost about what it saves
            // (p @ V of decode attention at 16 heads, two blocks of 8).
            let shared = rows.is_some_and(|(i, m)| a.coefficient(i) == 0 && (a.coefficient(j) != 1 || m / t.rows >= PACK_SHARED));
            if a.coefficient(j) != 0 && shared && !packed.contains(b) {
                packed.push(*b);
            }
        }
        let jj = self.nest.fresh_var();
        self.must(Step::Split { var: j, factor: vectors * lanes as usize })?;
        let scope = match rows {
            Some((i, _)) => {
                let ii = self.nest.fresh_var();
                self.must(Step::Split { var: i, factor: t.rows })?;
                self.must(Step::Reorder { outer: ii, inner: j })?;
                self.must(Step::Reorder { outer: i, inner: j })?;
                for &(r, _) in &c.reduce {
                    self.must(Step::Reorder { outer: jj, inner: r })?;
                    self.must(Step::Reorder { outer: ii, inner: r })?;
                }
                i
            }
            None => {
                for &(r, _) in &c.reduce {
                    self.must(Step::Reorder { outer: jj, inner: r })?;
                }
                j
            }
        };
        let out = self.nest.buffer(c.out).name.clone();
        self.must(Step::Cache { buffer: out, var: scope })?;
        let tile = BufferId(self.nest.buffers.len() as u32 - 1);
        for b in packed {
            if c.windows_in_place(b, j, vectors * lanes as usize) {
                continue;
            }
            let name = self.nest.buffer(b).name.clone();
            let contiguous = c.operands.iter().filter(|(o, _)| *o == b).all(|(_, a)| a.coefficient(j) == 1);
            if !self.try_step(Step::Cache { buffer: name, var: j }) && !contiguous {
                return None;
            }
        }
        Some(Built { scope, tile, ahead: None })
    }

    /// A dot tile, for a contraction whose column operand is contiguous along the reduction
    /// rather than the columns (`q @ k.T`: packing it per panel would gather one float at a
    /// time): `t.rows` rows by `t.vectors` columns, each output a vector of partial sums along
    /// the reduction (`accumulators`, one lane per partial), the reduction outside the tile's
    /// loops so every step loads a vector of each row and column and multiplies every pair,
    /// the lanes summed by a tree at the end (`vectorize` of the combining loop); the column
    /// blocks outside the row blocks, so a block of the column operand stays in the first-level
    /// cache while the rows pass over it. One reduction loop, contiguous in every operand that
    /// moves with it, its length a multiple of the lanes.
    fn dot(&mut self, c: &Contraction, t: Tile, lanes: u32) -> Option<Built> {
        let (j, n) = c.columns(&self.nest)?;
        let &[(r, k)] = &c.reduce[..] else { return None };
        // At least two columns: a split by one is no split.
        let columns = t.vectors.max(2);
        if k % lanes as usize != 0 || n % columns != 0 || c.operands.iter().any(|(_, a)| a.coefficient(r) > 1) {
            return None;
        }
        let rows = c.rows().filter(|(_, m)| m % t.rows == 0);
        let out = self.nest.buffer(c.out).name.clone();
        let jj = self.nest.fresh_var();
        self.must(Step::Split { var: j, factor: columns })?;
        let (scope, ii) = match rows {
            Some((i, _)) => {
                let ii = self.nest.fresh_var();
                self.must(Step::Split { var: i, factor: t.rows })?;
                self.must(Step::Reorder { outer: ii, inner: j })?;
                self.must(Step::Reorder { outer: i, inner: j })?;
                (i, Some(ii))
            }
            None => (j, None),
        };
        // The tile's outputs, contiguous and living in the scope; their partials beside them.
        self.must(Step::Cache { buffer: out, var: scope })?;
        self.must(Step::Accumulators { var: r, factor: lanes as usize })?;
        let partials = BufferId(self.nest.buffers.len() as u32 - 1);
        self.must(Step::Reorder { outer: jj, inner: r })?;
        if let Some(ii) = ii {
            self.must(Step::Reorder { outer: ii, inner: r })?;
        }
        Some(Built { scope, tile: partials, ahead: Some((r, j)) })
    }

    /// A register tile inside cache blocks, in BLIS's loop order: the reduction in blocks of
    /// KC outermost (the output's tiles read back and written per block), the rows in blocks of
    /// MC, the column panels of NR on threads (or a batch around the product), the tile's MR rows, then the KC steps of the
    /// block with the tile in registers. The column operand's KC × N slice is packed per
    /// reduction block (panel after panel, each KC × NR), the row operand's MC × KC block per
    /// row block (MR rows interleaved, as the tile reads them); the output is zeroed first.
    fn block(&mut self, c: &Contraction, t: Tile, lanes: u32, blocks: Blocks) -> Option<Built> {
        let (j, _) = c.columns(&self.nest)?;
        let (i, _) = c.rows().filter(|(_, m)| m % blocks.mc == 0)?;
        let &(r, _) = c.reduce.first()?;
        let (column_operands, row_operands): (Vec<_>, Vec<_>) = c.operands.iter().filter(|(_, a)| (a.coefficient(j) == 0) != (a.coefficient(i) == 0)).partition(|(_, a)| a.coefficient(i) == 0);
        // Contiguous along the columns, or shared by the rows (then packed); no windows to read
        // in place.
        let width = t.vectors * lanes as usize;
        if c.operands.iter().any(|(b, a)| (a.coefficient(j) > 1 && a.coefficient(i) != 0) || c.windows_in_place(*b, j, width)) {
            return None;
        }
        let jj = self.nest.fresh_var();
        self.must(Step::Split { var: j, factor: width })?;
        let ii = self.nest.fresh_var();
        self.must(Step::Split { var: i, factor: t.rows })?;
        let rr = self.nest.fresh_var();
        self.must(Step::Split { var: r, factor: blocks.kc })?;
        let tile_rows = self.nest.fresh_var();
        self.must(Step::Split { var: i, factor: blocks.mc / t.rows })?;
        // i (row blocks), j (panels), tile_rows, ii, jj.
        self.must(Step::Reorder { outer: ii, inner: j })?;
        self.must(Step::Reorder { outer: tile_rows, inner: j })?;
        let reduce: Vec<VarId> = [r, rr].into_iter().chain(c.reduce[1..].iter().map(|l| l.0)).collect();
        for &v in &reduce {
            self.must(Step::Reorder { outer: jj, inner: v })?;
            self.must(Step::Reorder { outer: ii, inner: v })?;
        }
        // The reduction's blocks outermost; the zeroing of the output is left before them.
        for outer in [tile_rows, j, i] {
            self.must(Step::Reorder { outer, inner: r })?;
        }
        let out = self.nest.buffer(c.out).name.clone();
        self.must(Step::Cache { buffer: out, var: tile_rows })?;
        let tile = BufferId(self.nest.buffers.len() as u32 - 1);
        for (packed, at) in [(&column_operands, r), (&row_operands, i)] {
            let mut names: Vec<String> = packed.iter().map(|(b, _)| self.nest.buffer(*b).name.clone()).collect();
            names.dedup();
            for name in names {
                self.must(Step::Cache { buffer: name, var: at })?;
            }
        }
        // The column panels on threads, unless a batch around the product shares out instead
        // (parallel loops do not nest, and a product per batch element keeps the rest of
        // the batch's work on the same threads).
        let batch: usize = c.free[..c.free.len().saturating_sub(2)].iter().map(|f| f.1).product();
        if batch < 2 {
            self.must(Step::Parallel { var: j })?;
        }
        Some(Built { scope: tile_rows, tile, ahead: None })
    }

    /// Applies `step`, or gives up.
    fn must(&mut self, step: Step) -> Option<()> {
        self.try_step(step).then_some(())
    }

    /// Holds a built tile in registers, all or nothing: the loops indexing it vectorized along
    /// its contiguous axis and expanded elsewhere.
    pub(super) fn registerize(&mut self, built: &Built, lanes: u32) -> bool {
        self.all_or_nothing(|b| b.try_registerize(built.scope, built.tile, lanes)).is_some()
    }

    /// A dot tile reads its column operand where it lies, a block of rows at a time: each step
    /// of its reduction also prefetches the same part of the next block's rows (`prefetch`,
    /// from one vector loop per distinct row), so that they arrive while this block is
    /// multiplied. MLA decode's blocked sketch: 0.82x the time without (`ollie bench --vs`, both
    /// ways round).
    pub(super) fn prefetch_next_block(&mut self, built: &Built) {
        let Some((r, j)) = built.ahead else { return };
        let Some(Stmt::Loop { body, .. }) = super::find_loop(&self.nest.body, r) else { return };
        let mut seen: Vec<(BufferId, ollie_loops::Affine)> = Vec::new();
        let mut ahead = Vec::new();
        for v in super::vector_loops(body) {
            let Some(Stmt::Loop { body: inner, .. }) = super::find_loop(body, v) else { continue };
            let mut loads = Vec::new();
            for s in inner {
                if let Stmt::Store { value, .. } = s {
                    value.every_load(&mut loads);
                }
            }
            let rows: Vec<_> = loads.into_iter().filter(|(_, a)| a.coefficient(j) != 0).map(|(b, a)| (b, a.substitute(v, &ollie_loops::Affine::constant(0)))).filter(|row| !seen.contains(row)).collect();
            if !rows.is_empty() {
                seen.extend(rows);
                ahead.push(v);
            }
        }
        for var in ahead {
            self.try_step(Step::Prefetch { var, along: j });
        }
    }

    fn try_registerize(&mut self, scope: VarId, tile: BufferId, lanes: u32) -> Option<()> {
        while let Some((var, extent, innermost, coefficient)) = tile_loop(&self.nest.body, scope, tile, false) {
            if innermost && coefficient == 1 && extent % lanes as usize == 0 {
                let vector = if extent > lanes as usize {
                    let inner = self.nest.fresh_var();
                    self.must(Step::Split { var, factor: lanes as usize })?;
                    inner
                } else {
                    var
                };
                self.must(Step::Vectorize { var: vector, width: lanes })?;
            } else {
                self.must(Step::Expand { var })?;
            }
        }
        let name = self.nest.buffer(tile).name.clone();
        self.must(Step::Registers { buffer: name, var: scope })
    }
}

/// The first serial loop inside loop `scope` whose variable indexes `tile`: variable, extent,
/// whether it is innermost, and its coefficient in the tile's index.
fn tile_loop(body: &[Stmt], scope: VarId, tile: BufferId, inside: bool) -> Option<(VarId, usize, bool, i64)> {
    for s in body {
        let Stmt::Loop { var, extent, kind, body } = s else { continue };
        if inside && *kind == LoopKind::Serial {
            let mut accesses = Vec::new();
            s.accesses(tile, &mut accesses);
            if let Some(c) = accesses.iter().map(|a| a.coefficient(*var)).find(|c| *c != 0) {
                let innermost = !body.iter().any(|s| matches!(s, Stmt::Loop { .. }));
                return Some((*var, *extent, innermost, c));
            }
        }
        if let Some(found) = tile_loop(body, scope, tile, inside || *var == scope) {
            return Some(found);
        }
    }
    None
}
