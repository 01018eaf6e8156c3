//! The loop-nest IR: buffers, loops over affine index spaces, stores of scalar expressions.

use ollie_graph::{BinaryOp, CmpOp, DType, UnaryOp};

/// The largest temporary the emitted C keeps on the (thread's) stack, in bytes; a larger one lives
/// on the heap. Folding refuses a temporary that would outgrow it.
pub const STACK_BYTES: usize = 64 << 10;

/// A loop variable. Its name in text and C is `i{n}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

impl std::fmt::Display for VarId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "i{}", self.0)
    }
}

/// A buffer of the kernel: an input, an output or a temporary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferKind {
    /// The kernel's `index`-th parameter (read-only).
    Input(usize),
    /// The kernel's `index`-th result.
    Output(usize),
    /// Scratch memory the kernel allocates.
    Temp,
}

/// A row-major, contiguous array. Elements are addressed by flat offset.
#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    pub name: String,
    pub kind: BufferKind,
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// For a temporary folded by the schedule: the loop in whose body it lives, one copy per
    /// iteration (per thread when the loop or one around it runs on threads), allocated at the
    /// start of the body. `None`: the whole kernel's.
    pub scope: Option<VarId>,
    /// For a temporary living in a loop (`scope`): held in local variables, so in registers,
    /// in vectors of this many lanes (1: scalars). Every access is at a constant element, or
    /// in a vectorized loop of exactly this many lanes at a constant, aligned start (`registers`).
    pub registers: Option<u32>,
}

impl Buffer {
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its size in the kernel's C, where f64 is `double`, f16 and bf16 `uint16_t`, an integer
    /// input `int32_t` or `int64_t`, and every other dtype `float`.
    pub fn bytes(&self) -> usize {
        let dtype = if matches!(self.kind, BufferKind::Input(_)) { self.dtype } else { self.dtype.result() };
        self.len() * dtype.size()
    }
}

/// `constant + Σ coefficient · variable`: every index ollie generates is affine.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Affine {
    /// Terms sorted by variable, without zero coefficients.
    pub terms: Vec<(VarId, i64)>,
    pub constant: i64,
}

/// `4096 * i0 + i1 + 3`: the IR's text form, and C.
impl std::fmt::Display for Affine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<String> = self.terms.iter().map(|&(v, c)| if c == 1 { v.to_string() } else { format!("{c} * {v}") }).collect();
        if self.constant != 0 || parts.is_empty() {
            parts.push(self.constant.to_string());
        }
        f.write_str(&parts.join(" + ").replace("+ -", "- "))
    }
}

impl Affine {
    pub fn constant(c: i64) -> Affine {
        Affine { terms: Vec::new(), constant: c }
    }

    pub fn var(v: VarId) -> Affine {
        Affine { terms: vec![(v, 1)], constant: 0 }
    }

    /// `self + k · other`.
    pub fn add_scaled(&self, other: &Affine, k: i64) -> Affine {
        let mut terms = self.terms.clone();
        for &(v, c) in &other.terms {
            match terms.iter_mut().find(|(w, _)| *w == v) {
                Some((_, d)) => *d += k * c,
                None => terms.push((v, k * c)),
            }
        }
        terms.retain(|&(_, c)| c != 0);
        terms.sort_unstable();
        Affine { terms, constant: self.constant + k * other.constant }
    }

    pub fn scale(&self, k: i64) -> Affine {
        Affine::constant(0).add_scaled(self, k)
    }

    pub fn coefficient(&self, v: VarId) -> i64 {
        self.terms.iter().find(|(w, _)| *w == v).map_or(0, |&(_, c)| c)
    }
}

/// A scalar expression, evaluated per loop iteration in the kernel's compute type.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Const(f64),
    /// The element of `buffer` at flat `offset`.
    Load { buffer: BufferId, offset: Affine },
    /// The value of an index expression (numpy's `arange`, index masks).
    Index(Affine),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// 1 if the comparison holds, else 0.
    Compare(CmpOp, Box<Expr>, Box<Expr>),
    /// `cond != 0 ? on_true : on_false`.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Conversion to `dtype` (rounding to an integer truncates; to bool gives 0 or 1).
    Cast(DType, Box<Expr>),
    /// The element of input `buffer` at `offset` plus, per index, `stride` times its value (see
    /// [`Dynamic`]): numpy's integer-array indexing. Only inputs are gathered from: they are
    /// never written, so no dependence runs through the elements read.
    Gather { buffer: BufferId, offset: Affine, indices: Vec<Dynamic> },
    /// `lo <= index < hi ? inside : outside`, each arm evaluated only where it is taken: guarded
    /// loads (a concatenation read in place, as `np.pad`'s array between its borders), whose
    /// loads may lie outside their buffer where their arm is not taken.
    Within { index: Affine, lo: i64, hi: i64, inside: Box<Expr>, outside: Box<Expr> },
}

/// An index computed while the kernel runs, into an axis of `extent` elements `stride` apart:
/// its value counts from the end when negative, as numpy's does, and is clamped into the axis,
/// so that no value reads outside the buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Dynamic {
    pub value: Expr,
    pub stride: i64,
    pub extent: usize,
}

impl Dynamic {
    /// The index with every affine index in its value mapped by `f`.
    pub fn map_affine(&self, f: &dyn Fn(&Affine) -> Affine) -> Dynamic {
        Dynamic { value: self.value.map_affine(f), ..*self }
    }
}

impl Expr {
    /// The expression with every index (load offsets and index values) mapped by `f`.
    pub fn map_affine(&self, f: &dyn Fn(&Affine) -> Affine) -> Expr {
        match self {
            Expr::Load { buffer, offset } => Expr::Load { buffer: *buffer, offset: f(offset) },
            Expr::Index(a) => Expr::Index(f(a)),
            Expr::Gather { buffer, offset, indices } => Expr::Gather {
                buffer: *buffer,
                offset: f(offset),
                indices: indices.iter().map(|d| d.map_affine(f)).collect(),
            },
            Expr::Within { index, lo, hi, inside, outside } => {
                Expr::Within { index: f(index), lo: *lo, hi: *hi, inside: Box::new(inside.map_affine(f)), outside: Box::new(outside.map_affine(f)) }
            }
            _ => self.map_operands(|x| x.map_affine(f)),
        }
    }

    /// The expression with each direct operand replaced by `f` of it (the values of a gather's
    /// indices are its operands): what a rewrite that recurses applies itself through.
    pub fn map_operands(&self, mut f: impl FnMut(&Expr) -> Expr) -> Expr {
        let mut m = |x: &Expr| Box::new(f(x));
        match self {
            Expr::Const(_) | Expr::Load { .. } | Expr::Index(_) => self.clone(),
            Expr::Unary(op, a) => Expr::Unary(*op, m(a)),
            Expr::Cast(d, a) => Expr::Cast(*d, m(a)),
            Expr::Binary(op, a, b) => Expr::Binary(*op, m(a), m(b)),
            Expr::Compare(op, a, b) => Expr::Compare(*op, m(a), m(b)),
            Expr::Select(c, a, b) => Expr::Select(m(c), m(a), m(b)),
            Expr::Gather { buffer, offset, indices } => Expr::Gather {
                buffer: *buffer,
                offset: offset.clone(),
                indices: indices.iter().map(|d| Dynamic { value: *m(&d.value), ..*d }).collect(),
            },
            Expr::Within { index, lo, hi, inside, outside } => Expr::Within { index: index.clone(), lo: *lo, hi: *hi, inside: m(inside), outside: m(outside) },
        }
    }

    /// Every load in the expression: its buffer and index. A gather's own read is not a load
    /// (its element is known only when the kernel runs); the loads its indices make are.
    pub fn every_load(&self, out: &mut Vec<(BufferId, Affine)>) {
        match self {
            Expr::Load { buffer, offset } => out.push((*buffer, offset.clone())),
            _ => self.operands().into_iter().for_each(|x| x.every_load(out)),
        }
    }

    /// Every load evaluated only under a guard: in an arm of a [`Expr::Within`]. Nothing may
    /// read these where the guard is not known to pick their arm (a copy of the elements they
    /// name, a load moved out of the expression).
    pub fn guarded_loads(&self, out: &mut Vec<(BufferId, Affine)>) {
        match self {
            Expr::Within { .. } => self.every_load(out),
            _ => self.operands().into_iter().for_each(|x| x.guarded_loads(out)),
        }
    }

    /// The expression's direct operands (a gather's index values among them).
    pub fn operands(&self) -> Vec<&Expr> {
        match self {
            Expr::Const(_) | Expr::Load { .. } | Expr::Index(_) => Vec::new(),
            Expr::Unary(_, a) | Expr::Cast(_, a) => vec![a],
            Expr::Binary(_, a, b) | Expr::Compare(_, a, b) | Expr::Within { inside: a, outside: b, .. } => vec![a, b],
            Expr::Select(c, a, b) => vec![c, a, b],
            Expr::Gather { indices, .. } => indices.iter().map(|d| &d.value).collect(),
        }
    }

    /// The index of every load of `buffer` in the expression.
    pub fn loads(&self, buffer: BufferId, out: &mut Vec<Affine>) {
        let mut all = Vec::new();
        self.every_load(&mut all);
        out.extend(all.into_iter().filter(|(b, _)| *b == buffer).map(|(_, a)| a));
    }

    /// Whether any index in the expression moves with `v`.
    pub fn depends_on(&self, v: VarId) -> bool {
        let own = match self {
            Expr::Load { offset: a, .. } | Expr::Index(a) | Expr::Gather { offset: a, .. } | Expr::Within { index: a, .. } => a.coefficient(v) != 0,
            _ => false,
        };
        own || self.operands().into_iter().any(|x| x.depends_on(v))
    }
}

impl Affine {
    /// The least and greatest value the index takes, each variable over `0..extent` of its loop
    /// in `loops` (a variable not there is taken as 0).
    pub fn range(&self, loops: &[(VarId, usize)]) -> (i64, i64) {
        let (mut min, mut max) = (self.constant, self.constant);
        for &(v, c) in &self.terms {
            let n = loops.iter().find(|l| l.0 == v).map_or(1, |l| l.1) as i64;
            min += (c * (n - 1)).min(0);
            max += (c * (n - 1)).max(0);
        }
        (min, max)
    }

    /// The index with `v` replaced by `by`.
    pub fn substitute(&self, v: VarId, by: &Affine) -> Affine {
        let c = self.coefficient(v);
        if c == 0 {
            return self.clone();
        }
        self.add_scaled(&Affine::var(v), -c).add_scaled(by, c)
    }
}

impl Stmt {
    /// The index of every access of `buffer` in the statement (stores, loads and prefetches).
    pub fn accesses(&self, buffer: BufferId, out: &mut Vec<Affine>) {
        match self {
            Stmt::Loop { body, .. } => body.iter().for_each(|s| s.accesses(buffer, out)),
            // A gather's prefetch reads some element of the axes it indexes: like the gather's
            // own read, not an access at an affine offset.
            Stmt::Prefetch { buffer: b, offset, indices } => {
                if *b == buffer && indices.is_empty() {
                    out.push(offset.clone());
                }
            }
            Stmt::Store { buffer: b, offset, value } => {
                if *b == buffer {
                    out.push(offset.clone());
                }
                value.loads(buffer, out);
            }
        }
    }

    /// The statement with every index mapped by `f` (loop variables themselves unchanged).
    pub fn map_affine(&self, f: &dyn Fn(&Affine) -> Affine) -> Stmt {
        match self {
            Stmt::Loop { var, extent, kind, body } => Stmt::Loop { var: *var, extent: *extent, kind: *kind, body: body.iter().map(|s| s.map_affine(f)).collect() },
            Stmt::Store { buffer, offset, value } => Stmt::Store { buffer: *buffer, offset: f(offset), value: value.map_affine(f) },
            Stmt::Prefetch { buffer, offset, indices } => Stmt::Prefetch {
                buffer: *buffer,
                offset: f(offset),
                indices: indices.iter().map(|d| d.map_affine(f)).collect(),
            },
        }
    }
}

/// What a loop may do to its iterations. The naive lowering only makes serial loops; the
/// schedule transforms add the others, each after its legality check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoopKind {
    Serial,
    /// Iterations run on several threads (OpenMP `parallel for`, static chunks).
    Parallel,
    /// The whole body of a `Parallel` loop (or of a `Joined` one inside it), whose iterations
    /// that loop shares out with its own (OpenMP's collapse).
    Joined,
    /// Iterations run in SIMD lanes (OpenMP `simd`).
    Simd,
    /// The compiler is asked to unroll by this factor.
    Unrolled(u32),
    /// Explicit SIMD: this many iterations at once in GCC vector types, then a scalar tail.
    Vector(u32),
    /// `Vector`, with its contiguous vector stores to outputs bypassing the caches
    /// (non-temporal), then a store fence.
    Stream(u32),
    /// A sort (numpy's `sort` along an axis). The body is one store `b[o(j)] = e(j)`: the
    /// kernel evaluates `e` at every `j`, then stores those values in ascending order (NaNs
    /// last) at `o(0), o(1), …`. The lowering makes these; no schedule step applies to one, and
    /// steps on the loops around it see its accesses as the body's (every `j`). With a
    /// [`Keep`] other than `All`, only those sorted positions are stored (top-k).
    Sort(Keep),
    /// [`LoopKind::Sort`], storing the indices `j` in that order instead of the values (equal
    /// values in index order): numpy's `argsort`.
    ArgSort(Keep),
}

/// The sorted positions a sort loop stores: all of them, or only the first or the last `k`
/// (the lowering makes these where nothing reads the others: top-k as `np.argsort(x)[:, -k:]`),
/// which a selection finds without sorting the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Keep {
    All,
    First(usize),
    Last(usize),
}

impl LoopKind {
    /// The word after `for` in the text form (`for parallel i0 in 0..8 {`).
    pub fn word(self) -> Option<String> {
        match self {
            LoopKind::Serial => None,
            LoopKind::Parallel => Some("parallel".into()),
            LoopKind::Joined => Some("joined".into()),
            LoopKind::Simd => Some("simd".into()),
            LoopKind::Unrolled(n) => Some(format!("unroll{n}")),
            LoopKind::Vector(n) => Some(format!("vector{n}")),
            LoopKind::Stream(n) => Some(format!("stream{n}")),
            LoopKind::Sort(keep) => Some(format!("sort{}", keep.suffix())),
            LoopKind::ArgSort(keep) => Some(format!("argsort{}", keep.suffix())),
        }
    }

    /// Whether the loop sorts ([`LoopKind::Sort`], [`LoopKind::ArgSort`]).
    pub fn sorts(self) -> bool {
        matches!(self, LoopKind::Sort(_) | LoopKind::ArgSort(_))
    }

    pub fn from_word(word: &str) -> Option<LoopKind> {
        match word {
            "parallel" => Some(LoopKind::Parallel),
            "joined" => Some(LoopKind::Joined),
            "simd" => Some(LoopKind::Simd),
            _ if word.starts_with("argsort") => Keep::parse(&word["argsort".len()..]).map(LoopKind::ArgSort),
            _ if word.starts_with("sort") => Keep::parse(&word["sort".len()..]).map(LoopKind::Sort),
            _ => {
                let numbered = |prefix: &str| word.strip_prefix(prefix).and_then(|n| n.parse().ok());
                numbered("vector").map(LoopKind::Vector).or_else(|| numbered("stream").map(LoopKind::Stream)).or_else(|| numbered("unroll").map(LoopKind::Unrolled))
            }
        }
    }
}

impl Keep {
    /// The text form's suffix to `sort`/`argsort`: none, `_first8`, `_last8`.
    fn suffix(self) -> String {
        match self {
            Keep::All => String::new(),
            Keep::First(k) => format!("_first{k}"),
            Keep::Last(k) => format!("_last{k}"),
        }
    }

    fn parse(suffix: &str) -> Option<Keep> {
        if suffix.is_empty() {
            return Some(Keep::All);
        }
        let number = |p: &str| suffix.strip_prefix(p).and_then(|n| n.parse().ok()).filter(|&k: &usize| k > 0);
        number("_first").map(Keep::First).or_else(|| number("_last").map(Keep::Last))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Loop { var: VarId, extent: usize, kind: LoopKind, body: Vec<Stmt> },
    /// `buffer[offset] = value`.
    Store { buffer: BufferId, offset: Affine, value: Expr },
    /// A hint that `buffer[offset]` will be read soon (a cache line fetched ahead): no effect on
    /// any value, and never a fault, so the offset may lie past the buffer's end. With
    /// `indices`, the element a gather reads there (see [`Expr::Gather`]), whose index values
    /// read inputs only, each load at its offset clamped into its buffer: the next iteration's
    /// index, past the last one, is the last.
    Prefetch { buffer: BufferId, offset: Affine, indices: Vec<Dynamic> },
}

/// A kernel as loops over buffers: the parameters and results of the ABI, temporaries, and the
/// statements that fill the results.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopNest {
    pub name: String,
    pub buffers: Vec<Buffer>,
    pub body: Vec<Stmt>,
}

impl LoopNest {
    pub fn buffer(&self, id: BufferId) -> &Buffer {
        &self.buffers[id.0 as usize]
    }

    /// The first loop variable the nest does not use: the one a step's new loop gets.
    pub fn fresh_var(&self) -> VarId {
        max_var(&self.body).map_or(VarId(0), |v| VarId(v.0 + 1))
    }

    /// Whether the kernel computes in double: when any parameter or result is f64 (else float).
    pub fn computes_in_f64(&self) -> bool {
        self.buffers.iter().any(|b| b.dtype == DType::F64 && !matches!(b.kind, BufferKind::Temp))
    }

    pub fn inputs(&self) -> impl Iterator<Item = (BufferId, &Buffer)> {
        self.with_kind(|k| matches!(k, BufferKind::Input(_)))
    }

    pub fn outputs(&self) -> impl Iterator<Item = (BufferId, &Buffer)> {
        self.with_kind(|k| matches!(k, BufferKind::Output(_)))
    }

    pub fn temps(&self) -> impl Iterator<Item = (BufferId, &Buffer)> {
        self.with_kind(|k| matches!(k, BufferKind::Temp))
    }

    fn with_kind(&self, keep: impl Fn(BufferKind) -> bool) -> impl Iterator<Item = (BufferId, &Buffer)> {
        self.buffers.iter().enumerate().filter(move |(_, b)| keep(b.kind)).map(|(i, b)| (BufferId(i as u32), b))
    }
}

/// The largest loop variable `body` uses.
pub(crate) fn max_var(body: &[Stmt]) -> Option<VarId> {
    body.iter()
        .filter_map(|s| match s {
            Stmt::Loop { var, body, .. } => Some(max_var(body).map_or(*var, |m| m.max(*var))),
            Stmt::Store { .. } | Stmt::Prefetch { .. } => None,
        })
        .max()
}

/// Every buffer some statement of `body` reads, sorted.
pub(crate) fn buffers_read(body: &[Stmt]) -> Vec<BufferId> {
    fn walk(body: &[Stmt], loads: &mut Vec<(BufferId, Affine)>) {
        for s in body {
            match s {
                Stmt::Loop { body, .. } => walk(body, loads),
                Stmt::Store { value, .. } => value.every_load(loads),
                Stmt::Prefetch { .. } => {}
            }
        }
    }
    let mut loads = Vec::new();
    walk(body, &mut loads);
    let mut read: Vec<BufferId> = loads.into_iter().map(|(b, _)| b).collect();
    read.sort_unstable();
    read.dedup();
    read
}
