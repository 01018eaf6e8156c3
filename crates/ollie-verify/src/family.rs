//! Input families: the kinds of inputs a candidate must be right on, beyond the ones it was
//! tuned for. Each family generates one array per parameter from a seed, rounded to the
//! parameter's dtype (the reference sees exactly what the kernel sees).

use std::fmt;

use ollie_graph::{Graph, IndexRange, Tensor};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::input_sets::InputSet;

/// A family of test inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Standard normal.
    Normal,
    /// Uniform on [0, 1).
    Uniform,
    /// Normal scaled by 100 to 10⁴: catches a dropped max-subtraction (overflow) and
    /// magnitude-dependent shortcuts.
    Large,
    /// Uniform on [−100, 100]: differences of elements cover every magnitude an `exp` of them
    /// can have, from overflow through the smallest normal numbers to underflow, densely in any
    /// row of a few hundred elements (a flush of small normal numbers cannot hide in a gap).
    Wide,
    /// Normal scaled down to ~1e-30 with a share of float32 subnormals.
    Tiny,
    /// Large values of both signs that nearly cancel in sums, plus small noise.
    Cancellation,
    /// Constant along one axis, counted from the end as numpy broadcasting aligns axes
    /// (`from_end: 0` is the last axis), in every parameter that has it: rows of a reduction
    /// that are all equal (zero variance, a uniform softmax).
    ConstantAlong { from_end: usize },
    /// Normal with about a third of the elements exactly zero.
    Zeros,
    /// Small integers, −2 to 2: many elements of a lane share its largest and smallest value,
    /// anywhere in it (numpy's first index on ties). For kernels with an index result.
    Ties,
    /// Normal with about one element in a thousand NaN (numpy's index of the first NaN). For
    /// kernels with an index result.
    Nan,
    /// Multiples of ½ from −8 to 8: exact integers and ties, where `floor`, `ceil` and `rint`
    /// step (and `roundf`'s ties away from zero differ from numpy's ties to even). For kernels
    /// that round.
    Halves,
    /// Normal, with +∞, −∞ or NaN at about one in four of the elements on the first and last
    /// positions of every axis a window slides along or a padding widens: where a kernel that
    /// reads past an edge, or a padding value that leaks (a max pool's −∞), shows. For kernels
    /// with windows or padding.
    Borders,
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Family::Normal => f.write_str("normal"),
            Family::Uniform => f.write_str("uniform"),
            Family::Large => f.write_str("large"),
            Family::Wide => f.write_str("wide"),
            Family::Tiny => f.write_str("tiny"),
            Family::Cancellation => f.write_str("cancellation"),
            Family::ConstantAlong { from_end } => write!(f, "constant-along-axis(-{})", from_end + 1),
            Family::Zeros => f.write_str("zeros"),
            Family::Ties => f.write_str("ties"),
            Family::Nan => f.write_str("nan"),
            Family::Halves => f.write_str("halves"),
            Family::Borders => f.write_str("borders"),
        }
    }
}

impl Family {
    /// Every family for a kernel whose parameters have at most `max_rank` axes.
    pub fn all(max_rank: usize) -> Vec<Family> {
        let mut families = vec![Family::Normal, Family::Uniform, Family::Large, Family::Wide, Family::Tiny, Family::Cancellation, Family::Zeros];
        families.extend((0..max_rank).map(|from_end| Family::ConstantAlong { from_end }));
        families
    }

    /// Every family for `graph`: [`Family::all`] for its parameters' rank, and where it has an
    /// index result (`argmax`, `argsort`) or sorts, ties and NaN; where it rounds to integers,
    /// halves.
    pub fn of(graph: &Graph) -> Vec<Family> {
        use ollie_graph::{Op, UnaryOp};
        let max_rank = graph.params.iter().map(|p| p.ty.rank()).max().unwrap_or(0);
        let mut families = Family::all(max_rank);
        let sorts = graph.ids().any(|id| matches!(graph.node(id).op, Op::Sort { .. }));
        if sorts || graph.outputs.iter().any(|&o| graph.index_result(o)) {
            families.extend([Family::Ties, Family::Nan]);
        }
        if graph.ids().any(|id| matches!(graph.node(id).op, Op::Unary(UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round))) {
            families.push(Family::Halves);
        }
        if edges(graph).iter().any(|axes| axes.iter().any(|&e| e)) {
            families.push(Family::Borders);
        }
        families
    }

    /// One input array per parameter of `graph`, from `seed`, rounded to the parameters'
    /// dtypes. An integer parameter is drawn from its [`IndexRange`] (`Graph::index_range`), as
    /// the family says: uniform in the range without negatives (normal, uniform), with them
    /// (wide), the ends of the range (large), 0 and 1 (tiny), sorted (cancellation), repeated
    /// along an axis (constant along it), all one value (zeros).
    pub fn inputs(self, graph: &Graph, seed: u64) -> InputSet {
        let params = &graph.params;
        let ranges: Vec<Option<IndexRange>> = (0..params.len()).map(|k| graph.index_range(k)).collect();
        // What is drawn once per parameter: a scale, or the values a constant axis repeats.
        let mut once = ChaCha8Rng::seed_from_u64(seed);
        let scales: Vec<f64> = params.iter().map(|_| 10f64.powf(once.random_range(2.0..4.0))).collect();
        let rows: Vec<Option<Row>> = match self {
            Family::ConstantAlong { from_end } => params.iter().enumerate().map(|(k, p)| Row::new(&p.ty.shape, from_end, seed, k)).collect(),
            _ => Vec::new(),
        };
        let one_value: Vec<f64> = ranges.iter().map(|r| r.map_or(0.0, |r| r.value(once.random_range(0..r.extent as i64)))).collect();
        let edges = if self == Family::Borders { edges(graph) } else { Vec::new() };
        InputSet::generate(params, &self.to_string(), seed, |k, i, rng| match ranges[k] {
            Some(range) => self.index(range, i, params[k].ty.num_elements(), rng, rows.get(k).and_then(Option::as_ref), one_value[k]),
            None if edges.get(k).is_some_and(|axes| on_edge(&params[k].ty.shape, axes, i)) => match rng.random_range(0..12) {
                0 => f64::INFINITY,
                1 => f64::NEG_INFINITY,
                2 => f64::NAN,
                _ => StandardNormal.sample(rng),
            },
            None => self.float(k, i, rng, &scales, &rows),
        })
    }

    /// Element `i` (of `len`) of an integer parameter drawn from `range`.
    fn index(self, range: IndexRange, i: usize, len: usize, rng: &mut ChaCha8Rng, row: Option<&Row>, one_value: f64) -> f64 {
        let n = range.extent as i64;
        let low = if range.negative { -n } else { 0 };
        range.value(match self {
            Family::Normal | Family::Uniform | Family::Ties | Family::Nan | Family::Halves | Family::Borders => rng.random_range(0..n),
            Family::Wide => rng.random_range(low..n),
            Family::Large => [0, n - 1, low, if range.negative { -1 } else { n / 2 }][rng.random_range(0..4)],
            Family::Tiny => rng.random_range(0..2.min(n)),
            Family::Cancellation => (i as i64 * n) / len.max(1) as i64,
            Family::ConstantAlong { .. } => row.map_or_else(|| rng.random_range(0..n), |row| ((row.at(i).abs() * 1e6) as i64) % n),
            Family::Zeros => return one_value,
        })
    }

    /// Element `i` of float parameter `k`.
    fn float(self, k: usize, i: usize, rng: &mut ChaCha8Rng, scales: &[f64], rows: &[Option<Row>]) -> f64 {
        let normal = |rng: &mut ChaCha8Rng| -> f64 { StandardNormal.sample(rng) };
        match self {
            Family::Normal | Family::Borders => normal(rng),
            Family::Uniform => rng.random_range(0.0..1.0),
            Family::Large => scales[k] * normal(rng),
            Family::Wide => rng.random_range(-100.0..100.0),
            Family::Tiny => {
                // A quarter below float32's smallest normal (1.18e-38).
                let scale = if rng.random_range(0..4) == 0 { 1e-40 } else { 1e-30 };
                scale * normal(rng)
            }
            Family::Cancellation => {
                let sign = if rng.random_range(0..2) == 0 { 1.0 } else { -1.0 };
                sign * 1e4 + normal(rng)
            }
            Family::ConstantAlong { .. } => rows[k].as_ref().map_or_else(|| normal(rng), |row| row.at(i)),
            Family::Zeros => {
                if rng.random_range(0..3) == 0 {
                    0.0
                } else {
                    normal(rng)
                }
            }
            Family::Ties => rng.random_range(-2..=2) as f64,
            Family::Halves => rng.random_range(-16..=16) as f64 * 0.5,
            Family::Nan => {
                if rng.random_range(0..1000) == 0 {
                    f64::NAN
                } else {
                    normal(rng)
                }
            }
        }
    }

    /// [`Family::inputs`] as float64 tensors.
    pub fn generate(self, graph: &Graph, seed: u64) -> Vec<Tensor> {
        self.inputs(graph, seed).to_tensors()
    }
}

/// Per parameter, per axis: whether a window slides along it or a concatenation (a padding)
/// widens it, found by following each window's and concatenation's operand back through views
/// and elementwise operations to the parameters (an axis lost in a reshape that merges axes is
/// not followed).
fn edges(graph: &Graph) -> Vec<Vec<bool>> {
    use ollie_graph::{GatherAxis, NodeId, Op};
    let mut out: Vec<Vec<bool>> = graph.params.iter().map(|p| vec![false; p.ty.rank()]).collect();
    // (node, its axes that are edges), followed towards the parameters.
    let mut stack: Vec<(NodeId, Vec<bool>)> = Vec::new();
    for id in graph.ids() {
        let node = graph.node(id);
        match &node.op {
            Op::Gather { from, .. } => {
                let axes: Vec<bool> = from.iter().map(|a| matches!(a, GatherAxis::Window { .. })).collect();
                stack.push((node.args[0], axes));
            }
            Op::Concat { axis } => {
                for &a in &node.args {
                    stack.push((a, (0..graph.ty(a).rank()).map(|d| d == *axis).collect()));
                }
            }
            _ => {}
        }
    }
    let mut seen = std::collections::HashSet::new();
    while let Some((id, axes)) = stack.pop() {
        if !axes.iter().any(|&e| e) || !seen.insert((id, axes.clone())) {
            continue;
        }
        let node = graph.node(id);
        let rank = |a: NodeId| graph.ty(a).rank();
        match &node.op {
            Op::Input { index } => out[*index].iter_mut().zip(&axes).for_each(|(o, &e)| *o |= e),
            Op::Unary(_) | Op::Cast { .. } | Op::Slice { .. } | Op::Binary(_) | Op::Compare(_) | Op::Select | Op::Concat { .. } => {
                // Operands broadcast against the result align from the last axis.
                for &a in &node.args {
                    let lead = axes.len() - rank(a).min(axes.len());
                    stack.push((a, axes[lead..].to_vec()));
                }
            }
            Op::Broadcast { .. } => {
                let a = node.args[0];
                let lead = axes.len() - rank(a);
                let shape = &graph.ty(a).shape;
                stack.push((a, axes[lead..].iter().zip(shape).map(|(&e, &n)| e && n > 1).collect()));
            }
            Op::Transpose { perm } => {
                let mut inner = vec![false; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    inner[p] = axes[i];
                }
                stack.push((node.args[0], inner));
            }
            Op::Gather { from, .. } => {
                let inner: Vec<bool> = from
                    .iter()
                    .map(|a| match *a {
                        GatherAxis::Along { axis, step, .. } if step != 0 => axes[axis],
                        GatherAxis::Window { axis, window, .. } => axes[axis] || axes[window],
                        _ => false,
                    })
                    .collect();
                stack.push((node.args[0], inner));
            }
            _ => {}
        }
    }
    out
}

/// Whether flat element `i` of an array of `shape` lies first or last on one of the `edges`
/// axes.
fn on_edge(shape: &[usize], edges: &[bool], mut i: usize) -> bool {
    let mut edge = false;
    for (d, &n) in shape.iter().enumerate().rev() {
        let at = i % n.max(1);
        i /= n.max(1);
        edge |= edges[d] && (at == 0 || at + 1 == n);
    }
    edge
}

/// Mixed into a set's seed for the streams of a constant axis's values.
const ROWS: u64 = 0x726f_7773_726f_7773;

/// The values of a parameter constant along one axis: one per position on the other axes.
struct Row {
    values: Vec<f64>,
    /// The axis's extent and the elements past it (the product of the later extents).
    extent: usize,
    inner: usize,
}

impl Row {
    /// The row of a parameter of `shape` constant along the axis `from_end` from the last, if it
    /// has that axis (and it is longer than 1).
    fn new(shape: &[usize], from_end: usize, seed: u64, param: usize) -> Option<Row> {
        let axis = shape.len().checked_sub(1 + from_end)?;
        let extent = shape[axis];
        if extent < 2 {
            return None;
        }
        let inner = shape[axis + 1..].iter().product::<usize>();
        let n = shape.iter().product::<usize>() / extent;
        let values = crate::input_sets::fill(n, |block, out: &mut [f64]| {
            // Streams of their own: not those of the parameter's elements.
            let mut rng = crate::input_sets::stream(seed ^ ROWS, param, block);
            out.iter_mut().for_each(|x| *x = StandardNormal.sample(&mut rng));
        });
        Some(Row { values, extent, inner })
    }

    /// The value at flat index `i` of the parameter.
    fn at(&self, i: usize) -> f64 {
        self.values[(i / (self.extent * self.inner)) * self.inner + i % self.inner]
    }
}
