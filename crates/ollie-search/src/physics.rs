//! What the roofline says a scheduled loop nest costs before it is measured: the bytes it moves
//! at each level of the memory hierarchy for its tiles and loop order, its operations at the
//! vector width it uses, and the share of it on threads. The cost model starts from this
//! estimate and learns the correction.

use std::collections::{BTreeMap, BTreeSet};

use ollie_loops::{BufferId, BufferKind, Expr, LoopKind, LoopNest, Stmt, VarId};

/// The machine and the work, as the estimate sees them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Roof {
    pub threads: f64,
    /// Floats in the widest vector register.
    pub lanes: f64,
    /// FLOP/s of one thread at the widest vector FMA (two FLOPs a lane an FMA).
    pub peak_flops_per_thread: f64,
    /// Memory bandwidth in bytes/s: with every thread, and with one.
    pub memory_bandwidth: f64,
    pub memory_bandwidth_one: f64,
    /// Bandwidth of one thread on data in its caches, bytes/s.
    pub cache_bandwidth: f64,
    /// Data cache capacities: L1d and L2 per core, the last level shared.
    pub l1_bytes: f64,
    pub l2_bytes: f64,
    pub last_level_bytes: f64,
    /// The work's roofline floor, its fewest FLOPs and its compulsory bytes.
    pub floor_seconds: f64,
    pub flops: f64,
    pub bytes: f64,
}

/// The estimate of one nest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// `max(compute, memory)` and what entering its parallel regions costs.
    pub seconds: f64,
    pub compute_seconds: f64,
    pub memory_seconds: f64,
    /// Bytes brought into L1, into L2, and from memory.
    pub traffic: [f64; 3],
    /// Operations (arithmetic, loads and stores; a transcendental as several).
    pub operations: f64,
    /// Shares of the operations run on threads, and in vectors (explicit, or a contiguous
    /// innermost loop the compiler vectorizes).
    pub parallel_share: f64,
    pub vector_share: f64,
    /// Times a parallel region is entered.
    pub parallel_entries: f64,
}

/// What entering a parallel region costs (a fork and a join of the thread team).
const PARALLEL_ENTRY_SECONDS: f64 = 2e-6;

/// Operations a transcendental function costs, vectorized.
const TRANSCENDENTAL_OPERATIONS: f64 = 12.0;

/// A cache line, in bytes.
const LINE: f64 = 64.0;

#[derive(Clone, Copy)]
struct Loop {
    extent: f64,
    /// Times it is entered: its enclosing loops' extents multiplied.
    entries: f64,
}

/// One load or store, with the loops around it (outermost first).
struct Access {
    buffer: BufferId,
    /// Per enclosing loop: the offset's coefficient on its variable (a gather's index moving
    /// with it counts as a stride of a line).
    strides: Vec<i64>,
    loops: Vec<usize>,
    /// The offset's constant term (unrolled copies of an access differ in it alone).
    constant: i64,
}

#[derive(Default)]
struct Walk {
    loops: Vec<Loop>,
    accesses: Vec<Access>,
    operations: f64,
    parallel: f64,
    vector: f64,
    parallel_entries: f64,
}

#[derive(Clone)]
struct Around {
    trips: f64,
    loops: Vec<usize>,
    vars: Vec<VarId>,
    parallel: bool,
    vector: bool,
    /// Whether the innermost loop is one the compiler may vectorize (serial or unrolled).
    plain: bool,
}

/// The estimate of `nest` compiled with `flags` on `roof`.
pub fn estimate(nest: &LoopNest, flags: &[String], roof: &Roof) -> Estimate {
    let auto_vectorize = !flags.iter().any(|f| f == "-fno-tree-vectorize" || f == "-O0" || f == "-O1");
    let mut w = Walk::default();
    let top = Around { trips: 1.0, loops: Vec::new(), vars: Vec::new(), parallel: false, vector: false, plain: false };
    walk(&nest.body, &top, auto_vectorize, &mut w);
    let lanes = roof.lanes.max(1.0);
    let ops = w.operations.max(1.0);
    let (parallel_share, vector_share) = ((w.parallel / ops).min(1.0), (w.vector / ops).min(1.0));
    // Amdahl over the threads, the scalar share at a lane a cycle.
    let threads = roof.threads.max(1.0);
    let spread = (1.0 - parallel_share) + parallel_share / threads;
    let per_thread = roof.peak_flops_per_thread.max(1.0);
    let compute_seconds = ops * (vector_share + (1.0 - vector_share) * lanes) / per_thread * spread;
    let accesses: Vec<&Access> = w.accesses.iter().filter(|a| in_memory(nest, a)).collect();
    let footprints = footprints(nest, &accesses, &w);
    let traffic = [roof.l1_bytes, roof.l2_bytes, roof.last_level_bytes].map(|capacity| traffic(nest, &accesses, &w, &footprints, capacity));
    let memory = if parallel_share > 0.5 { roof.memory_bandwidth } else { roof.memory_bandwidth_one };
    let cache = roof.cache_bandwidth.max(1.0) / spread;
    let memory_seconds = traffic[2] / memory.max(1.0) + traffic[1] / (cache / 2.0) + traffic[0] / cache;
    let seconds = compute_seconds.max(memory_seconds) + w.parallel_entries * PARALLEL_ENTRY_SECONDS;
    Estimate { seconds, compute_seconds, memory_seconds, traffic, operations: ops, parallel_share, vector_share, parallel_entries: w.parallel_entries }
}

fn walk(body: &[Stmt], at: &Around, auto_vectorize: bool, w: &mut Walk) {
    for s in body {
        match s {
            Stmt::Loop { var, extent, kind, body } => {
                let id = w.loops.len();
                let entries = at.loops.last().map_or(1.0, |&p| w.loops[p].entries * w.loops[p].extent);
                w.loops.push(Loop { extent: *extent as f64, entries });
                let mut inner = at.clone();
                inner.trips *= *extent as f64;
                inner.loops.push(id);
                inner.vars.push(*var);
                inner.plain = matches!(kind, LoopKind::Serial | LoopKind::Unrolled(_));
                match kind {
                    LoopKind::Parallel if !at.parallel => {
                        w.parallel_entries += at.trips;
                        inner.parallel = true;
                    }
                    LoopKind::Vector(_) | LoopKind::Stream(_) | LoopKind::Simd => inner.vector = true,
                    LoopKind::Sort(ollie_loops::Keep::All) | LoopKind::ArgSort(ollie_loops::Keep::All) => inner.trips *= (*extent as f64).log2().max(1.0),
                    _ => {}
                }
                walk(body, &inner, auto_vectorize, w);
            }
            Stmt::Prefetch { .. } => {}
            Stmt::Store { buffer, offset, value } => {
                let mut ops = 1.0;
                let mut loads = Vec::new();
                count(value, &mut ops, &mut loads);
                let innermost = at.vars.last().copied();
                // The compiler vectorizes a plain innermost loop whose store moves with it, one
                // element at a time (a reduction into one element it does not reorder).
                let vectorized = at.vector || (auto_vectorize && at.plain && innermost.is_some_and(|v| offset.coefficient(v) == 1));
                let n = at.trips * ops;
                w.operations += n;
                w.parallel += if at.parallel { n } else { 0.0 };
                w.vector += if vectorized { n } else { 0.0 };
                let strides = |coefficient: &dyn Fn(VarId) -> i64| at.vars.iter().map(|&v| coefficient(v)).collect::<Vec<i64>>();
                w.accesses.push(Access { buffer: *buffer, strides: strides(&|v| offset.coefficient(v)), loops: at.loops.clone(), constant: offset.constant });
                for (buffer, load) in loads {
                    let (strides, constant) = match load {
                        Load::Affine(offset) => (strides(&|v| offset.coefficient(v)), offset.constant),
                        Load::Gather(offset, moves) => (strides(&|v| if moves(v) { LINE as i64 } else { offset.coefficient(v) }), offset.constant),
                    };
                    w.accesses.push(Access { buffer, strides, loops: at.loops.clone(), constant });
                }
            }
        }
    }
}

enum Load<'a> {
    Affine(&'a ollie_loops::Affine),
    Gather(&'a ollie_loops::Affine, Box<dyn Fn(VarId) -> bool + 'a>),
}

fn count<'a>(e: &'a Expr, ops: &mut f64, loads: &mut Vec<(BufferId, Load<'a>)>) {
    match e {
        Expr::Load { buffer, offset } => {
            *ops += 1.0;
            loads.push((*buffer, Load::Affine(offset)));
        }
        Expr::Gather { buffer, offset, indices } => {
            *ops += 1.0;
            loads.push((*buffer, Load::Gather(offset, Box::new(move |v| indices.iter().any(|d| d.value.depends_on(v))))));
            indices.iter().for_each(|d| count(&d.value, ops, loads));
        }
        Expr::Const(_) | Expr::Index(_) => {}
        Expr::Unary(op, a) => {
            *ops += if op.is_function() { TRANSCENDENTAL_OPERATIONS } else { 1.0 };
            count(a, ops, loads);
        }
        Expr::Cast(_, a) => count(a, ops, loads),
        Expr::Binary(_, a, b) | Expr::Compare(_, a, b) => {
            *ops += 1.0;
            count(a, ops, loads);
            count(b, ops, loads);
        }
        Expr::Select(s, a, b) => {
            *ops += 1.0;
            count(s, ops, loads);
            count(a, ops, loads);
            count(b, ops, loads);
        }
        // A guard's comparisons, and the value inside (the borders are the few).
        Expr::Within { inside, .. } => {
            *ops += 2.0;
            count(inside, ops, loads);
        }
    }
}

/// How an access moves over the loops from some depth inward: per loop its variable moves, the
/// stride and the extent (loops it does not move with left out).
type Shape = Vec<(u64, u64)>;

fn shape(w: &Walk, a: &Access, depth: usize) -> Shape {
    a.loops.iter().enumerate().skip(depth).filter(|&(k, _)| a.strides[k] != 0).map(|(k, &l)| (a.strides[k].unsigned_abs(), w.loops[l].extent as u64)).collect()
}

/// The bytes accesses of one shape touch: translates of one access's elements by their
/// offsets' `constants` (the copies an unrolling made). A constant is split over the shape's
/// strides, largest first: translates that differ only by whole strides overlap (the union
/// grows by the steps they add along each loop), those left with different remainders are
/// apart. In whole lines where the innermost stride exceeds one, at most the span they cover
/// and the buffer.
fn footprint(nest: &LoopNest, buffer: BufferId, shape: &Shape, constants: &[i64]) -> f64 {
    let buffer = nest.buffer(buffer);
    let element = (buffer.bytes() / buffer.len().max(1)).max(1) as f64;
    let elements: f64 = shape.iter().map(|&(_, e)| e as f64).product();
    let mut by_stride: Vec<(u64, u64)> = shape.clone();
    by_stride.sort_by(|a, b| b.0.cmp(&a.0));
    // Per remainder: the least and most steps along each loop.
    let mut classes: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    for &c in constants {
        let mut rest = c;
        let steps: Vec<i64> = by_stride
            .iter()
            .map(|&(s, _)| {
                let d = rest / s as i64;
                rest -= d * s as i64;
                d
            })
            .collect();
        let class = classes.entry(rest).or_insert_with(|| steps.iter().map(|&d| (d, d)).collect());
        for (range, d) in class.iter_mut().zip(steps) {
            *range = (range.0.min(d), range.1.max(d));
        }
    }
    let union: f64 =
        classes.values().map(|ranges| elements * by_stride.iter().zip(ranges).map(|(&(_, e), &(lo, hi))| (e as f64 + (hi - lo) as f64) / e as f64).product::<f64>()).sum::<f64>().max(elements);
    let span = 1.0 + shape.iter().map(|&(s, e)| s as f64 * (e as f64 - 1.0)).sum::<f64>();
    let spread = (constants.iter().max().unwrap_or(&0) - constants.iter().min().unwrap_or(&0)) as f64;
    let per_element = match shape.last() {
        None | Some((1, _)) => element,
        Some(&(s, _)) => (s as f64 * element).min(LINE),
    };
    (union * per_element).min((span + spread) * element).min((buffer.bytes() as f64).max(LINE))
}

/// Whether an access's buffer lives in memory (not in registers).
fn in_memory(nest: &LoopNest, access: &Access) -> bool {
    let b = nest.buffer(access.buffer);
    !(b.kind == BufferKind::Temp && b.registers.is_some())
}

/// Per loop (and, last, the whole nest): per buffer, the bytes its accesses there touch — the
/// largest of their shapes' footprints, copies of one shape counted together.
fn footprints(nest: &LoopNest, accesses: &[&Access], w: &Walk) -> Vec<BTreeMap<BufferId, f64>> {
    let top = w.loops.len();
    let mut shapes: Vec<BTreeMap<BufferId, BTreeMap<Shape, Vec<i64>>>> = vec![BTreeMap::new(); top + 1];
    for a in accesses {
        let places = a.loops.iter().enumerate().map(|(d, &l)| (l, d)).chain([(top, 0)]);
        for (l, depth) in places {
            let constants = shapes[l].entry(a.buffer).or_default().entry(shape(w, a, depth)).or_default();
            if !constants.contains(&a.constant) {
                constants.push(a.constant);
            }
        }
    }
    shapes.iter().map(|m| m.iter().map(|(&b, by_shape)| (b, by_shape.iter().map(|(s, c)| footprint(nest, b, s, c)).fold(0.0, f64::max))).collect()).collect()
}

/// The bytes brought into a cache of `capacity` bytes: a loop whose footprint fits brings it in
/// once each time it is entered; one that does not fit leaves its inner loops to bring theirs.
/// Each access is charged at the outermost loop around it that fits (the footprint there of
/// its buffer, once an entry), or, where none fits, at its innermost loop (streamed on every
/// entry); a buffer is charged once a loop (passes over the same data share it), and one far
/// smaller than the cache once.
fn traffic(nest: &LoopNest, accesses: &[&Access], w: &Walk, footprints: &[BTreeMap<BufferId, f64>], capacity: f64) -> f64 {
    let top = w.loops.len();
    let total = |l: usize| footprints[l].values().sum::<f64>();
    if total(top) <= capacity {
        return total(top);
    }
    let mut charged: BTreeSet<(usize, BufferId)> = Default::default();
    for a in accesses {
        // A buffer far smaller than the cache (a temporary, a vector of weights) stays in it.
        let resident = nest.buffer(a.buffer).bytes() as f64 <= capacity / 8.0;
        let place = if resident { top } else { a.loops.iter().copied().find(|&l| total(l) <= capacity).or(a.loops.last().copied()).unwrap_or(top) };
        charged.insert((place, a.buffer));
    }
    charged.iter().map(|&(l, b)| if l == top { footprints[l][&b] } else { w.loops[l].entries * footprints[l][&b] }).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roof() -> Roof {
        Roof {
            threads: 2.0,
            lanes: 16.0,
            peak_flops_per_thread: 100e9,
            memory_bandwidth: 20e9,
            memory_bandwidth_one: 12e9,
            cache_bandwidth: 100e9,
            l1_bytes: 32e3,
            l2_bytes: 1e6,
            last_level_bytes: 8e6,
            floor_seconds: 1e-3,
            flops: 1e6,
            bytes: 1e6,
        }
    }

    fn nest(text: &str) -> LoopNest {
        ollie_loops::parse(text).unwrap()
    }

    #[test]
    fn a_matmul_blocked_for_the_cache_moves_fewer_bytes_than_the_naive_one() {
        // C = A B with 512×512 floats (1 MiB each): the naive i-j-k order streams B's columns
        // (a line per element) for every i, j; a 64-blocked order keeps blocks in L2.
        let naive = nest(
            "kernel mm(a: f32[512,512], b: f32[512,512]) -> (c: f32[512,512])
for i0 in 0..512 {
  for i1 in 0..512 {
    c[512 * i0 + i1] = 0.0
    for i2 in 0..512 {
      c[512 * i0 + i1] = add(c[512 * i0 + i1], mul(a[512 * i0 + i2], b[512 * i2 + i1]))
    }
  }
}
",
        );
        let blocked = nest(
            "kernel mm(a: f32[512,512], b: f32[512,512]) -> (c: f32[512,512])
for i0 in 0..8 {
  for i1 in 0..8 {
    for i2 in 0..64 {
      for i3 in 0..64 {
        c[32768 * i0 + 512 * i2 + 64 * i1 + i3] = 0.0
      }
    }
    for i4 in 0..8 {
      for i2 in 0..64 {
        for i5 in 0..64 {
          for i3 in 0..64 {
            c[32768 * i0 + 512 * i2 + 64 * i1 + i3] = add(c[32768 * i0 + 512 * i2 + 64 * i1 + i3], mul(a[32768 * i0 + 512 * i2 + 64 * i4 + i5], b[32768 * i4 + 512 * i5 + 64 * i1 + i3]))
          }
        }
      }
    }
  }
}
",
        );
        let (n, b) = (estimate(&naive, &[], &roof()), estimate(&blocked, &[], &roof()));
        assert!(b.traffic[1] * 4.0 < n.traffic[1], "into L2: blocked {:e}, naive {:e}", b.traffic[1], n.traffic[1]);
        assert!(b.seconds < n.seconds, "{b:?} {n:?}");
    }

    #[test]
    fn threads_and_vectors_shorten_the_estimate() {
        let serial = nest(
            "kernel scale(x: f32[4096,4096]) -> (y: f32[4096,4096])
for i0 in 0..4096 {
  for i1 in 0..4096 {
    y[4096 * i0 + i1] = mul(x[4096 * i0 + i1], 2.0)
  }
}
",
        );
        let parallel = nest(
            "kernel scale(x: f32[4096,4096]) -> (y: f32[4096,4096])
for parallel i0 in 0..4096 {
  for vector16 i1 in 0..4096 {
    y[4096 * i0 + i1] = mul(x[4096 * i0 + i1], 2.0)
  }
}
",
        );
        let (s, p) = (estimate(&serial, &["-fno-tree-vectorize".into()], &roof()), estimate(&parallel, &[], &roof()));
        assert_eq!((s.parallel_share, s.vector_share), (0.0, 0.0));
        assert_eq!((p.parallel_share, p.vector_share), (1.0, 1.0));
        assert!(p.compute_seconds * 8.0 < s.compute_seconds, "{p:?} {s:?}");
        // The same elements stream through memory either way: every byte once.
        assert_eq!(s.traffic[2], p.traffic[2]);
    }

    #[test]
    fn unrolled_copies_of_an_access_count_the_elements_they_read_together() {
        let plain = nest(
            "kernel sum(x: f32[4096,4096]) -> (y: f32[4096])
for i0 in 0..4096 {
  y[i0] = 0.0
  for i1 in 0..4096 {
    y[i0] = add(y[i0], x[4096 * i0 + i1])
  }
}
",
        );
        let unrolled = nest(
            "kernel sum(x: f32[4096,4096]) -> (y: f32[4096])
for i0 in 0..4096 {
  y[i0] = 0.0
  for i1 in 0..2048 {
    y[i0] = add(y[i0], x[4096 * i0 + 2 * i1])
    y[i0] = add(y[i0], x[4096 * i0 + 2 * i1 + 1])
  }
}
",
        );
        let (p, u) = (estimate(&plain, &[], &roof()), estimate(&unrolled, &[], &roof()));
        let compulsory = 4096.0 * 4096.0 * 4.0 + 4096.0 * 4.0;
        assert!((p.traffic[2] / compulsory - 1.0).abs() < 1e-3, "every byte about once: {}", p.traffic[2]);
        for (u, p) in u.traffic.iter().zip(p.traffic) {
            assert!((u / p - 1.0).abs() < 1e-3, "unrolled {u}, plain {p}");
        }
    }
}
