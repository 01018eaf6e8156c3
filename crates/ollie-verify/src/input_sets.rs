//! Input sets: per parameter, its values as the kernel's buffer holds them (float32, float64,
//! 16-bit or integer, never a float64 copy of a float32 tensor), and the key the oracle knows
//! the set by.
//! A generated set is named by its recipe (family, seed, edits), so it is never hashed; a set
//! given as tensors (a saved counterexample) is named by a hash of its values.

use ndarray::{ArrayD, IxDyn};
use ollie_graph::{DType, Param, Tensor};
use ollie_runner::{RunnerError, Session};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xxhash_rust::xxh3::Xxh3;

use crate::values::Values;

/// One input array per parameter, in parameter order.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSet {
    /// What names these values for the oracle: equal keys, equal values.
    key: u128,
    values: Vec<Values>,
    shapes: Vec<Vec<usize>>,
}

/// Elements generated from one random stream: generation splits into blocks of this many, each
/// seeded from the set's seed, the parameter and the block's number, so the values do not
/// depend on how many threads make them.
const BLOCK: usize = 1 << 16;

impl InputSet {
    /// A set made by `element(parameter, flat index, random stream)` for every element of every
    /// parameter, named by `recipe` (everything besides the parameters' types and the seed that
    /// decides the values). Large parameters are generated on every core.
    pub(crate) fn generate(params: &[Param], recipe: &str, seed: u64, element: impl Fn(usize, usize, &mut ChaCha8Rng) -> f64 + Sync) -> InputSet {
        let mut key = Xxh3::new();
        key.update(b"generated input set, version 1\n");
        key.update(recipe.as_bytes());
        key.update(&seed.to_le_bytes());
        let mut values = Vec::new();
        for (k, p) in params.iter().enumerate() {
            key.update(format!("\n{}", p.ty).as_bytes());
            let n = p.ty.shape.iter().product::<usize>();
            values.push(match p.ty.dtype {
                DType::F64 => Values::F64(generated(n, seed, k, &element, |x| x)),
                // 16-bit parameters: the generated values rounded to their dtype, the values
                // stored and so what the reference starts from.
                DType::F16 => Values::F16(generated(n, seed, k, &element, |x| DType::F16.half_bits(x))),
                DType::BF16 => Values::BF16(generated(n, seed, k, &element, |x| DType::BF16.half_bits(x))),
                // Integer parameters: the generated values are integers already.
                DType::I8 => Values::I8(generated(n, seed, k, &element, |x| x as i8)),
                // Booleans as numpy holds them: a byte, 0 or 1.
                DType::U8 | DType::Bool => Values::U8(generated(n, seed, k, &element, |x| x as u8)),
                DType::I32 => Values::I32(generated(n, seed, k, &element, |x| x as i32)),
                DType::I64 => Values::I64(generated(n, seed, k, &element, |x| x as i64)),
                DType::F32 => Values::F32(generated(n, seed, k, &element, |x| x as f32)),
            });
        }
        InputSet { key: key.digest128(), values, shapes: params.iter().map(|p| p.ty.shape.clone()).collect() }
    }

    /// The set holding `tensors` (one per parameter, of its shape), rounded to the parameters'
    /// dtypes, named by a hash of every bit.
    pub fn from_tensors(params: &[Param], tensors: &[Tensor]) -> InputSet {
        let values: Vec<Values> = params
            .iter()
            .zip(tensors)
            .map(|(p, t)| Values::of(p.ty.dtype, t.iter().copied()))
            .collect();
        let shapes: Vec<Vec<usize>> = tensors.iter().map(|t| t.shape().to_vec()).collect();
        let mut key = Xxh3::new();
        key.update(b"given input set\n");
        for (v, shape) in values.iter().zip(&shapes) {
            key.update(&(shape.len() as u64).to_le_bytes());
            shape.iter().for_each(|&n| key.update(&(n as u64).to_le_bytes()));
            key.update(&(v.width() as u64).to_le_bytes());
            key.update(&ollie_runner::checksum128(v.bytes()).to_le_bytes());
        }
        InputSet { key: key.digest128(), values, shapes }
    }

    pub(crate) fn key(&self) -> u128 {
        self.key
    }

    /// The values as float64 tensors (what the reference evaluates, and a counterexample is
    /// saved as).
    pub fn to_tensors(&self) -> Vec<Tensor> {
        (0..self.values.len()).map(|k| self.tensor(k, None)).collect()
    }

    /// How many arrays the set has (one per parameter).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Parameter `k`'s values in float64: the given rows of its axis 0, or all of it.
    pub fn tensor(&self, k: usize, rows: Option<std::ops::Range<usize>>) -> Tensor {
        let shape = &self.shapes[k];
        let per_row: usize = shape.iter().skip(1).product();
        let rows = rows.unwrap_or(0..shape.first().copied().unwrap_or(1));
        let span = rows.start * per_row..rows.end * per_row;
        let flat: Vec<f64> = self.values[k].to_f64(span);
        let mut shape = shape.clone();
        if let Some(n) = shape.first_mut() {
            *n = rows.len();
        }
        ArrayD::from_shape_vec(IxDyn(&shape), flat).expect("rows match their shape")
    }

    /// Bytes the values hold.
    pub fn bytes(&self) -> usize {
        self.values.iter().map(|v| v.bytes().len()).sum()
    }

    /// Writes the values into `session`'s input buffers.
    pub fn load(&self, session: &mut Session) -> Result<(), RunnerError> {
        for (k, v) in self.values.iter().enumerate() {
            session.set_input_bytes(k, v.bytes())?;
        }
        Ok(())
    }

    /// Writes the element `change` changed (made by [`InputSet::change`] on this set) into
    /// `session`, whose inputs hold this set as it was before the change.
    pub(crate) fn load_change(&self, session: &mut Session, change: &Change) -> Result<(), RunnerError> {
        let values = &self.values[change.param];
        let width = values.width();
        session.set_input_bytes_at(change.param, change.index * width, &values.bytes()[change.index * width..(change.index + 1) * width])
    }

    /// Per input, the checksum a session's [`Session::input_checksum`] gives once this set is
    /// loaded (hashed here, on any thread, rather than in the session before a call).
    pub(crate) fn checksums(&self) -> Vec<u64> {
        self.values.iter().map(|v| ollie_runner::checksum(v.bytes())).collect()
    }

    /// [`InputSet::checksums`] after `change` was made, from those before it.
    pub(crate) fn checksums_changed(&self, before: &[u64], change: &Change) -> Vec<u64> {
        let mut sums = before.to_vec();
        sums[change.param] = ollie_runner::checksum(self.values[change.param].bytes());
        sums
    }

    /// The change [`InputSet::change`] makes: one element of one input multiplied by 1.5 and
    /// 0.25 added (rounded to its dtype), chosen by `rng` — a caching kernel keyed on the
    /// pointer or on a few sampled values misses it. An integer (an index) moves one step
    /// towards zero, so that it stays in its range; one that is zero is not chosen. `None` if
    /// there is no element to change.
    pub(crate) fn one_element_changed(&self, rng: &mut ChaCha8Rng) -> Option<Change> {
        let changeable = |v: &Values, i: usize| !v.dtype().is_int() || v.get(i) != 0.0;
        let candidates: Vec<usize> = (0..self.values.len()).filter(|&k| (0..self.values[k].len()).any(|i| changeable(&self.values[k], i))).collect();
        if candidates.is_empty() {
            return None;
        }
        let param = candidates[rng.random_range(0..candidates.len())];
        let values = &self.values[param];
        let mut index = rng.random_range(0..values.len());
        while !changeable(values, index) {
            index = (index + 1) % values.len();
        }
        let old = values.get(index);
        let value = if values.dtype().is_int() { old - old.signum() } else { values.dtype().round(old * 1.5 + 0.25) };
        let mut key = Xxh3::new();
        key.update(&self.key.to_le_bytes());
        key.update(b"one element changed");
        key.update(&[param as u64, index as u64, value.to_bits()].map(u64::to_le_bytes).concat());
        Some(Change { param, index, value, key: key.digest128(), before: (old, self.key) })
    }

    /// Makes `change` (found by [`InputSet::one_element_changed`] on this very set).
    pub(crate) fn change(&mut self, change: &Change) {
        self.values[change.param].set(change.index, change.value);
        self.key = change.key;
    }

    /// Undoes `change`, made by [`InputSet::change`].
    pub(crate) fn revert(&mut self, change: &Change) {
        let (value, key) = change.before;
        self.change(&Change { value, key, ..*change });
    }
}

/// One element of an input set set to a new value, and the key of the set it makes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Change {
    param: usize,
    index: usize,
    value: f64,
    pub key: u128,
    /// The element's value and the set's key before it.
    before: (f64, u128),
}

/// The random stream of block `block` of parameter `param` of the set made from `seed`.
pub(crate) fn stream(seed: u64, param: usize, block: usize) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(xxhash_rust::xxh3::xxh3_64(&[seed, param as u64, block as u64].map(u64::to_le_bytes).concat()))
}

/// `n` values made block by block by `make(block number, block)`, the blocks shared among the
/// machine's cores.
/// Parameter `k`'s `n` elements from `element` (see [`InputSet::generate`]), each converted by
/// `convert` to what its buffer holds.
fn generated<T: Default + Clone + Send>(n: usize, seed: u64, k: usize, element: &(impl Fn(usize, usize, &mut ChaCha8Rng) -> f64 + Sync), convert: fn(f64) -> T) -> Vec<T> {
    fill(n, |block, out: &mut [T]| {
        let mut rng = stream(seed, k, block);
        out.iter_mut().enumerate().for_each(|(i, x)| *x = convert(element(k, block * BLOCK + i, &mut rng)));
    })
}

pub(crate) fn fill<T: Default + Clone + Send>(n: usize, make: impl Fn(usize, &mut [T]) + Sync) -> Vec<T> {
    let mut out = vec![T::default(); n];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(n.div_ceil(BLOCK)).max(1);
    let per_thread = n.div_ceil(BLOCK).div_ceil(threads) * BLOCK;
    std::thread::scope(|scope| {
        for (t, part) in out.chunks_mut(per_thread.max(1)).enumerate() {
            let make = &make;
            scope.spawn(move || {
                for (b, block) in part.chunks_mut(BLOCK).enumerate() {
                    make(t * per_thread / BLOCK + b, block);
                }
            });
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ollie_graph::TensorType;

    fn params() -> Vec<Param> {
        vec![
            Param { name: "x".into(), ty: TensorType::new(DType::F32, vec![3, 5]) },
            Param { name: "w".into(), ty: TensorType::new(DType::F64, vec![5]) },
        ]
    }

    #[test]
    fn keys_tell_one_changed_bit_a_changed_shape_and_a_changed_recipe() {
        let p = params();
        let a = InputSet::from_tensors(&p, &InputSet::generate(&p, "normal", 1, |_, _, _| 0.37).to_tensors());
        let mut tensors = a.to_tensors();
        tensors[1][[4]] = f64::from_bits(tensors[1][[4]].to_bits() ^ 1);
        assert_ne!(a.key, InputSet::from_tensors(&p, &tensors).key);
        assert_eq!(a.key, InputSet::from_tensors(&p, &a.to_tensors()).key);
        let mut q = p.clone();
        q[0].ty = TensorType::new(DType::F32, vec![5, 3]);
        let reshaped: Vec<Tensor> = vec![a.to_tensors()[0].clone().into_shape_with_order(vec![5, 3]).unwrap(), a.to_tensors()[1].clone()];
        assert_ne!(a.key, InputSet::from_tensors(&q, &reshaped).key);

        let g = InputSet::generate(&p, "normal", 1, |_, _, rng| rng.random::<f64>());
        assert_eq!(g, InputSet::generate(&p, "normal", 1, |_, _, rng| rng.random::<f64>()));
        assert_ne!(g.key, InputSet::generate(&p, "uniform", 1, |_, _, rng| rng.random::<f64>()).key);
        assert_ne!(g.key, InputSet::generate(&p, "normal", 2, |_, _, rng| rng.random::<f64>()).key);
        assert_ne!(g.key, InputSet::generate(&q, "normal", 1, |_, _, rng| rng.random::<f64>()).key);
        let mut changed = g.clone();
        let change = g.one_element_changed(&mut ChaCha8Rng::seed_from_u64(3)).unwrap();
        changed.change(&change);
        assert_ne!(changed.values, g.values);
        assert_ne!(changed.key, g.key);
        assert_eq!(changed.key, change.key);
    }

    #[test]
    fn generated_values_do_not_depend_on_the_blocks_threads() {
        // More than one block per thread: every block has its own stream.
        let p = vec![Param { name: "x".into(), ty: TensorType::new(DType::F32, vec![5 * BLOCK + 7]) }];
        let set = InputSet::generate(&p, "normal", 9, |_, _, rng| rng.random::<f64>());
        let Values::F32(v) = &set.values[0] else { panic!("float32") };
        for (b, block) in v.chunks(BLOCK).enumerate() {
            let mut rng = stream(9, 0, b);
            assert!(block.iter().all(|&x| x == rng.random::<f64>() as f32), "block {b}");
        }
    }
}
