//! Input families: the kinds of inputs a candidate must be right on, beyond the ones it was
//! tuned for. Each family generates one array per parameter from a seed, rounded to the
//! parameter's dtype (the reference sees exactly what the kernel sees).

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use ollie_graph::{DType, Param, Tensor};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

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

    /// One input array per parameter, from `seed`.
    pub fn generate(self, params: &[Param], seed: u64) -> Vec<Tensor> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        params
            .iter()
            .map(|p| {
                let mut a = self.values(&p.ty.shape, &mut rng);
                if p.ty.dtype != DType::F64 {
                    a.mapv_inplace(|v| v as f32 as f64);
                }
                a
            })
            .collect()
    }

    fn values(self, shape: &[usize], rng: &mut ChaCha8Rng) -> Tensor {
        let normal = |rng: &mut ChaCha8Rng| -> f64 { StandardNormal.sample(rng) };
        match self {
            Family::Normal => ArrayD::from_shape_simple_fn(IxDyn(shape), || normal(rng)),
            Family::Uniform => ArrayD::from_shape_simple_fn(IxDyn(shape), || rng.random_range(0.0..1.0)),
            Family::Large => {
                let scale = 10f64.powf(rng.random_range(2.0..4.0));
                ArrayD::from_shape_simple_fn(IxDyn(shape), || scale * normal(rng))
            }
            Family::Wide => ArrayD::from_shape_simple_fn(IxDyn(shape), || rng.random_range(-100.0..100.0)),
            Family::Tiny => ArrayD::from_shape_simple_fn(IxDyn(shape), || {
                // A quarter below float32's smallest normal (1.18e-38).
                let scale = if rng.random_range(0..4) == 0 { 1e-40 } else { 1e-30 };
                scale * normal(rng)
            }),
            Family::Cancellation => ArrayD::from_shape_simple_fn(IxDyn(shape), || {
                let sign = if rng.random_range(0..2) == 0 { 1.0 } else { -1.0 };
                sign * 1e4 + normal(rng)
            }),
            Family::ConstantAlong { from_end } => {
                if from_end >= shape.len() {
                    return ArrayD::from_shape_simple_fn(IxDyn(shape), || normal(rng));
                }
                let axis = shape.len() - 1 - from_end;
                let mut reduced = shape.to_vec();
                reduced[axis] = 1;
                let row = ArrayD::from_shape_simple_fn(IxDyn(&reduced), || normal(rng));
                row.broadcast(IxDyn(shape)).expect("size-1 axis broadcasts").to_owned()
            }
            Family::Zeros => ArrayD::from_shape_simple_fn(IxDyn(shape), || if rng.random_range(0..3) == 0 { 0.0 } else { normal(rng) }),
        }
    }
}
