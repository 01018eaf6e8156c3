//! numpy's integer-array indexing: `np.take`, `np.take_along_axis` and `x[idx]`,
//! `x[np.arange(n), idx]` (advanced indexing), as graph gathers.
//!
//! A gather is built where the array it reads is a parameter: one of a view or an elementwise
//! operation is moved through it (`np.take(x * 2, i)` is `np.take(x, i) * 2`), an axis a
//! broadcast repeats needs no index, one that `np.arange` indexes is read along, and an
//! `np.arange` or `np.eye` indexed is the index itself (`np.eye(C)[labels]` is one-hot). What stays
//! is a diagnostic: a gather from a reduction's or a product's result.

use ollie_graph::{BinaryOp, CmpOp, DType, GatherAxis, NodeId, Op, SliceAxis, UnaryOp};
use ruff_text_size::TextRange;

use crate::builder::{Arg, Builder, CallArgs, Result};
use crate::diagnostic::{Code, Diagnostic};
use crate::numpy::required;
use crate::value::Value;

/// The functions this module provides, as `np.NAME`.
pub const FUNCTIONS: &[&str] = &["take", "take_along_axis"];

/// An array used as an index: its node and where the spec wrote it.
#[derive(Clone, Copy)]
pub struct IndexArray {
    pub id: NodeId,
    pub range: TextRange,
}

impl Builder<'_> {
    /// `np.NAME(args)` for a function of [`FUNCTIONS`].
    pub fn gather_call(&mut self, name: &str, args: CallArgs) -> Result<Value> {
        let call = args.range;
        let fname = format!("np.{name}");
        let params: &[&str] = if name == "take" { &["a", "indices", "axis"] } else { &["arr", "indices", "axis"] };
        let mut b = args.bind(&fname, None, params)?.into_iter();
        let a = required(b.next().unwrap(), &fname, params[0], call)?;
        let indices = required(b.next().unwrap(), &fname, "indices", call)?;
        let axis = b.next().unwrap();
        let source = self.tensor(&a, None)?;
        let rank = self.ty(source).rank();
        let axis = match axis {
            Some(arg) if !matches!(arg.value, Value::None) => Some(self.axis(&arg, rank)?),
            _ if rank == 1 => Some(0),
            _ => None,
        };
        let Some(axis) = axis else {
            return Err(Diagnostic::error(Code::UnsupportedCall, format!("`{fname}` without `axis` on an array of rank {rank}"))
                .label(call, "numpy would flatten the array first")
                .help("give `axis=`, or `.reshape(-1)` the array yourself"));
        };
        if let (true, Value::Int(i)) = (name == "take", &indices.value) {
            // A constant index is basic indexing.
            return self.index_constant(source, axis, *i, indices.range, a.range, call);
        }
        if let (false, Value::Tensor(i)) = (name == "take", &indices.value) {
            if self.graph.index_result(*i) {
                return Ok(Value::Tensor(self.take_by_own_order(source, *i, axis, indices.range, call)?));
            }
        }
        let index = self.index_array(&indices)?;
        let id = if name == "take" { self.take(source, index, axis, call)? } else { self.take_along_axis(source, index, axis, call)? };
        Ok(Value::Tensor(id))
    }

    /// `arg` as an integer array used as an index, or a diagnostic.
    pub fn index_array(&mut self, arg: &Arg) -> Result<IndexArray> {
        // A list (or tuple) of integers indexes as the integer array it makes (`x[:, [0, 2]]`,
        // `np.take(x, [0, 2], axis=1)`).
        if let Value::Tuple(items) = &arg.value {
            if !items.is_empty() && items.iter().all(|i| matches!(i, Value::Int(_))) {
                let array = self.array(arg.clone(), None, arg.range)?;
                return self.index_array(&Arg { value: array, range: arg.range });
            }
        }
        let Value::Tensor(id) = arg.value else {
            return Err(Diagnostic::error(Code::UnsupportedIndex, format!("expected an integer array of indices, found {}", arg.value.a_kind())).label(arg.range, "not an array"));
        };
        let dtype = self.ty(id).dtype;
        if !dtype.is_int() {
            let help = if dtype == ollie_graph::DType::Bool { "boolean masks select a data-dependent number of elements: use `np.where`" } else { "index with integer arrays (`\"i64[N]\"` parameters, `np.arange`)" };
            return Err(Diagnostic::error(Code::UnsupportedIndex, format!("indices must be integers, this array is {dtype}")).label(arg.range, format!("{} array", self.ty(id))).help(help));
        }
        if self.graph.index_result(id) {
            return Err(crate::builder::index_result_used(arg.range));
        }
        if self.graph.float_in(id).is_some() {
            return Err(Diagnostic::error(Code::UnsupportedIndex, "these indices are computed from floats")
                .label(arg.range, format!("{} array rounded from a float", self.ty(id)))
                .help("indices are computed from integers (parameters, `np.arange`, constants): a float rounded in a kernel could pick another element than in numpy"));
        }
        Ok(IndexArray { id, range: arg.range })
    }

    /// `np.take(source, index, axis)`: the result has the source's axes with `axis` replaced by
    /// the index's.
    fn take(&mut self, source: NodeId, index: IndexArray, axis: usize, range: TextRange) -> Result<NodeId> {
        let src = self.ty(source).shape.clone();
        let ishape = self.ty(index.id).shape.clone();
        let k = ishape.len();
        let shape: Vec<usize> = src[..axis].iter().chain(&ishape).chain(&src[axis + 1..]).copied().collect();
        let from: Vec<GatherAxis> = (0..src.len())
            .map(|j| match j.cmp(&axis) {
                std::cmp::Ordering::Less => along(j),
                std::cmp::Ordering::Equal => GatherAxis::Index,
                std::cmp::Ordering::Greater => along(j - 1 + k),
            })
            .collect();
        let placed = self.place_right(index.id, axis, k, &shape, range)?;
        self.gather(source, shape, from, vec![placed], range)
    }

    /// `np.take_along_axis(source, index, axis)`: equal ranks, the other axes broadcast.
    fn take_along_axis(&mut self, source: NodeId, index: IndexArray, axis: usize, range: TextRange) -> Result<NodeId> {
        let src = self.ty(source).shape.clone();
        let ishape = self.ty(index.id).shape.clone();
        if ishape.len() != src.len() {
            return Err(Diagnostic::error(Code::ShapeMismatch, format!("`take_along_axis` needs indices of the array's rank {}, got {}", src.len(), self.ty(index.id)))
                .label(index.range, "indices of another rank"));
        }
        let mut wanted = src.clone();
        wanted[axis] = ishape[axis];
        let Some(shape) = ollie_graph::broadcast_shapes(&wanted, &ishape) else {
            return Err(Diagnostic::error(Code::ShapeMismatch, format!("indices {} do not broadcast against the array {}", self.ty(index.id), self.ty(source))).label(index.range, "here"));
        };
        let from = (0..src.len()).map(|j| if j == axis { GatherAxis::Index } else { along(j) }).collect();
        let placed = self.broadcast_to(index.id, &shape, range)?;
        // The array's own size-1 axes broadcast too: a gather reads them along step 0.
        let from = self.broadcast_from(source, from, &shape);
        self.gather(source, shape, from, vec![placed], range)
    }

    /// `np.take_along_axis(source, index, axis)` where `index` is an `argsort` or an
    /// `argmax`/`argmin` along `axis` of `source` itself (or of `-source`): the values in that
    /// order are the sorted values, the extreme, whichever of equal elements the index picks. So
    /// the gather is the sort (or the reduction), the index's slices replayed on it: top-k's
    /// values as users write them. Any other use of an index result is diagnosed.
    pub(crate) fn take_by_own_order(&mut self, source: NodeId, index: NodeId, axis: usize, irange: TextRange, range: TextRange) -> Result<NodeId> {
        let root = self.graph.index_source(index).expect("an index result");
        let mut views = Vec::new();
        let mut n = index;
        while n != root {
            views.push(self.graph.node(n).op.clone());
            n = self.graph.node(n).args[0];
        }
        views.reverse();
        let key = self.graph.node(root).args[0];
        let negated = match &self.graph.node(key).op {
            _ if self.same_value(key, source) => false,
            Op::Unary(UnaryOp::Neg) if self.same_value(self.graph.node(key).args[0], source) => true,
            _ => return Err(index_of_other(irange)),
        };
        let root_op = self.graph.node(root).op.clone();
        let src = self.ty(source).shape.clone();
        let ishape = self.ty(index).shape.clone();
        let value = match root_op {
            Op::ArgSort { axis: a, .. } if a == axis => {
                // Slices along the sorted axis pick ranks; the other axes stay whole (numpy would
                // broadcast a shorter one, which `take_along_axis` refuses unless it is 1).
                let whole = |ax: &SliceAxis, j: usize| j == axis || (ax.start == 0 && ax.step == 1 && ax.len == src[j]);
                let mut v = self.push(Op::Sort { axis }, vec![key], range)?;
                for op in views {
                    match op {
                        Op::Slice { ref axes } if axes.iter().enumerate().all(|(j, ax)| whole(ax, j)) => v = self.push(op, vec![v], range)?,
                        Op::Cast { .. } => {}
                        _ => return Err(index_of_other(irange)),
                    }
                }
                v
            }
            Op::ArgReduce { op, axis: a } if a == axis => {
                // `argmax(x, axis, keepdims=True)` or the like: the index has the source's shape
                // with the axis 1.
                let mut kept = src.clone();
                kept[axis] = 1;
                if ishape != kept || views.iter().any(|v| !matches!(v, Op::Reshape { .. } | Op::Cast { .. })) {
                    return Err(index_of_other(irange));
                }
                let r = self.push(Op::Reduce { op, axes: vec![axis] }, vec![key], range)?;
                self.reshape_to(r, &kept, range)?
            }
            _ => return Err(index_of_other(irange)),
        };
        if self.ty(value).shape != self.ty(index).shape {
            return Err(index_of_other(irange));
        }
        if negated {
            self.push(Op::Unary(UnaryOp::Neg), vec![value], range)
        } else {
            Ok(value)
        }
    }

    /// Whether nodes `a` and `b` compute the same value: the same node, or the same op on the
    /// same operands.
    fn same_value(&self, a: NodeId, b: NodeId) -> bool {
        let (x, y) = (self.graph.node(a), self.graph.node(b));
        a == b || (x.op == y.op && x.args.len() == y.args.len() && x.args.iter().zip(&y.args).all(|(&p, &q)| self.same_value(p, q)))
    }

    /// numpy advanced indexing: `source[items]` where some items are integer arrays. `items` are
    /// per source axis: an array (or an integer, a 0-d index), or a slice (`start`, `step`,
    /// `len`). Arrays broadcast together; their axes replace the indexed ones where those are
    /// adjacent, and come first where they are not (numpy's rule).
    pub fn advanced_index(&mut self, source: NodeId, items: Vec<AxisIndex>, range: TextRange) -> Result<NodeId> {
        let arrays: Vec<(usize, IndexArray)> = items.iter().enumerate().filter_map(|(j, i)| if let AxisIndex::Array(a) = i { Some((j, *a)) } else { None }).collect();
        let mut b: Vec<usize> = Vec::new();
        for (_, a) in &arrays {
            b = ollie_graph::broadcast_shapes(&b, &self.ty(a.id).shape).ok_or_else(|| {
                Diagnostic::error(Code::ShapeMismatch, format!("index arrays of shapes {:?} and {} do not broadcast", b, self.ty(a.id))).label(a.range, "here")
            })?;
        }
        let first = arrays[0].0;
        let adjacent = arrays.windows(2).all(|w| w[1].0 == w[0].0 + 1);
        // Where the broadcast index axes go in the result, and each sliced axis's place.
        let at = if adjacent { items[..first].iter().filter(|i| matches!(i, AxisIndex::Slice { .. })).count() } else { 0 };
        let mut shape = Vec::new();
        let mut from = Vec::new();
        let mut placed_b = false;
        for item in &items {
            if shape.len() == at && !placed_b {
                shape.extend(&b);
                placed_b = true;
            }
            match *item {
                AxisIndex::Slice { start, step, len } => {
                    from.push(GatherAxis::Along { axis: shape.len(), start, step });
                    shape.push(len);
                }
                AxisIndex::Array(_) => from.push(GatherAxis::Index),
            }
        }
        if !placed_b {
            shape.extend(&b);
        }
        let mut operands = Vec::new();
        for (_, a) in &arrays {
            operands.push(self.place_right(a.id, at, b.len(), &shape, range)?);
        }
        self.gather(source, shape, from, operands, range)
    }

    /// `index` aligned to the right of the `width` axes of `shape` from `at`, broadcast to it.
    fn place_right(&mut self, index: NodeId, at: usize, width: usize, shape: &[usize], range: TextRange) -> Result<NodeId> {
        let own = self.ty(index).shape.clone();
        let mut unit = vec![1; shape.len()];
        unit[at + width - own.len()..at + width].copy_from_slice(&own);
        let reshaped = self.reshape_to(index, &unit, range)?;
        self.broadcast_to(reshaped, shape, range)
    }

    /// `from` with the source's size-1 axes that the result is longer on read along step 0.
    fn broadcast_from(&self, source: NodeId, mut from: Vec<GatherAxis>, shape: &[usize]) -> Vec<GatherAxis> {
        for (j, &n) in self.ty(source).shape.iter().enumerate() {
            if let GatherAxis::Along { axis, .. } = from[j] {
                if n == 1 && shape[axis] != 1 {
                    from[j] = GatherAxis::Along { axis, start: 0, step: 0 };
                }
            }
        }
        from
    }

    /// A gather of `source` (see `Op::Gather`), moved through views and elementwise operations
    /// to a parameter, with the index operands `indices` (one per `Index` axis, each of
    /// `shape`).
    pub fn gather(&mut self, source: NodeId, shape: Vec<usize>, mut from: Vec<GatherAxis>, mut indices: Vec<NodeId>, range: TextRange) -> Result<NodeId> {
        // An axis an `arange` indexes is read along the result's axis it runs on.
        let mut k = 0;
        let extents = self.ty(source).shape.clone();
        for (a, &n) in from.iter_mut().zip(&extents) {
            if *a == GatherAxis::Index {
                if let Some(axis) = self.arange_axis(indices[k]).filter(|&m| shape[m] <= n) {
                    *a = along(axis);
                    indices.remove(k);
                    continue;
                }
                k += 1;
            }
        }
        if indices.is_empty() && shape == self.ty(source).shape && from.iter().enumerate().all(|(j, a)| *a == along(j)) {
            return Ok(source);
        }
        let node = self.graph.node(source).clone();
        let op = node.op.clone();
        match op {
            Op::Input { .. } => {}
            _ if indices.is_empty() => {}
            Op::Unary(_) | Op::Cast { .. } | Op::Binary(_) | Op::Compare(_) | Op::Select => {
                let mut args = Vec::new();
                for &a in &node.args {
                    args.push(self.gather(a, shape.clone(), from.clone(), indices.clone(), range)?);
                }
                return self.push(op, args, range);
            }
            Op::Broadcast { .. } => {
                let operand = node.args[0];
                let own = self.ty(operand).shape.clone();
                let lead = from.len() - own.len();
                let (mut inner, mut kept) = (Vec::new(), Vec::new());
                let mut k = 0;
                for (j, a) in from.iter().enumerate() {
                    let repeated = j < lead || own[j - lead] == 1;
                    if *a == GatherAxis::Index {
                        if !repeated {
                            kept.push(indices[k]);
                        }
                        k += 1;
                    }
                    if j >= lead {
                        inner.push(if repeated { GatherAxis::Along { axis: 0, start: 0, step: 0 } } else { *a });
                    }
                }
                return self.gather(operand, shape, inner, kept, range);
            }
            Op::Transpose { perm } => {
                // Source axis j is the operand's axis perm[j]; the index operands follow the
                // operand's axis order.
                let mut inner = vec![GatherAxis::Index; perm.len()];
                let mut order: Vec<(usize, NodeId)> = Vec::new();
                let mut k = 0;
                for (j, a) in from.iter().enumerate() {
                    inner[perm[j]] = *a;
                    if *a == GatherAxis::Index {
                        order.push((perm[j], indices[k]));
                        k += 1;
                    }
                }
                order.sort_by_key(|(p, _)| *p);
                return self.gather(node.args[0], shape, inner, order.into_iter().map(|(_, i)| i).collect(), range);
            }
            Op::Slice { axes } => {
                let mut inner = Vec::new();
                for (a, s) in from.iter().zip(&axes) {
                    inner.push(match *a {
                        GatherAxis::Along { axis, start, step } => GatherAxis::Along { axis, start: (s.start as i64 + s.step * start as i64) as usize, step: s.step * step },
                        GatherAxis::Window { axis, start, step, window, dilation } => {
                            GatherAxis::Window { axis, start: (s.start as i64 + s.step * start as i64) as usize, step: s.step * step, window, dilation: s.step * dilation }
                        }
                        GatherAxis::Index if s.start == 0 && s.step == 1 => GatherAxis::Index,
                        GatherAxis::Index => {
                            return Err(Diagnostic::error(Code::UnsupportedIndex, "indexing with an array along an axis that is sliced first")
                                .label(range, "a gather from a slice along the indexed axis")
                                .help("index the whole axis and slice the result, or shift the indices"))
                        }
                    });
                }
                return self.gather(node.args[0], shape, inner, indices, range);
            }
            // `np.eye(n)[ids]`, `np.arange(n)[ids]`: an iota read at an index is the index.
            Op::Iota { axis: counted, dtype, .. } => {
                // `start + Σ step · i` over the result's axes it moves along.
                let mut affine = |start: usize, terms: &[(usize, i64)]| -> Result<NodeId> {
                    let mut at = self.full(&shape, start as f64, DType::I64, range)?;
                    for &(axis, step) in terms.iter().filter(|(_, step)| *step != 0) {
                        let i = self.push(Op::Iota { shape: shape.clone(), axis, dtype: DType::I64 }, vec![], range)?;
                        let step = self.full(&shape, step as f64, DType::I64, range)?;
                        let i = self.push(Op::Binary(BinaryOp::Mul), vec![i, step], range)?;
                        at = self.push(Op::Binary(BinaryOp::Add), vec![i, at], range)?;
                    }
                    Ok(at)
                };
                let at = match from[counted] {
                    GatherAxis::Along { axis, start, step } => affine(start, &[(axis, step)])?,
                    GatherAxis::Window { axis, start, step, window, dilation } => affine(start, &[(axis, step), (window, dilation)])?,
                    GatherAxis::Index => {
                        // A negative index counts from the end, as the gather reads it.
                        let k = from[..counted].iter().filter(|a| **a == GatherAxis::Index).count();
                        let index = indices[k];
                        let index = if self.ty(index).dtype == DType::I64 { index } else { self.push(Op::Cast { dtype: DType::I64 }, vec![index], range)? };
                        let zero = self.full(&shape, 0.0, DType::I64, range)?;
                        let negative = self.push(Op::Compare(CmpOp::Lt), vec![index, zero], range)?;
                        let n = self.full(&shape, extents[counted] as f64, DType::I64, range)?;
                        let wrapped = self.push(Op::Binary(BinaryOp::Add), vec![index, n], range)?;
                        self.push(Op::Select, vec![negative, wrapped, index], range)?
                    }
                };
                return if dtype == DType::I64 { Ok(at) } else { self.push(Op::Cast { dtype }, vec![at], range) };
            }
            Op::Reshape { .. } if is_unit(&self.ty(node.args[0]).shape, &self.ty(source).shape) => {
                // Axes of size 1 come and go: the others match in order.
                let own = self.ty(node.args[0]).shape.clone();
                let outer = self.ty(source).shape.clone();
                let mut kept = from.iter().zip(&outer).filter(|(_, &n)| n != 1).map(|(a, _)| *a);
                let mut k = 0;
                let mut kept_indices = Vec::new();
                for (a, &n) in from.iter().zip(&outer) {
                    if *a == GatherAxis::Index {
                        if n != 1 {
                            kept_indices.push(indices[k]);
                        }
                        k += 1;
                    }
                }
                let inner = own.iter().map(|&n| if n == 1 { GatherAxis::Along { axis: 0, start: 0, step: 0 } } else { kept.next().expect("a unit reshape") }).collect();
                return self.gather(node.args[0], shape, inner, kept_indices, range);
            }
            other => {
                return Err(Diagnostic::error(Code::UnsupportedIndex, format!("indexing the result of `{}` with an array", other.name()))
                    .label(range, "ollie gathers from parameters and what is computed elementwise from them")
                    .help("index the inputs before the reduction or product, or compute it on the rows you need"))
            }
        }
        let empty = from.iter().zip(&self.ty(source).shape).any(|(a, &n)| *a == GatherAxis::Index && n == 0);
        if empty && shape.iter().product::<usize>() > 0 {
            return Err(Diagnostic::error(Code::IndexOutOfRange, "indexing an empty axis with an array").label(range, "every index is out of range: numpy raises"));
        }
        // An axis read at one place (step 0) names no axis of the result.
        for a in from.iter_mut() {
            if let GatherAxis::Along { start, step: 0, .. } = *a {
                *a = GatherAxis::Along { axis: 0, start, step: 0 };
            }
        }
        self.push(Op::Gather { shape, from }, std::iter::once(source).chain(indices).collect(), range)
    }

    /// The axis of its own shape along which `id` counts 0, 1, 2, ... (an `np.arange` placed
    /// there), if it does.
    pub(crate) fn arange_axis(&self, mut id: NodeId) -> Option<usize> {
        let shape = self.ty(id).shape.clone();
        loop {
            let node = self.graph.node(id);
            match &node.op {
                Op::Iota { shape: s, axis, .. } => {
                    // Along the one axis of that length that is not a broadcast of size 1.
                    let n = s[*axis];
                    let candidates: Vec<usize> = (0..shape.len()).filter(|&m| shape[m] == n).collect();
                    return (s.iter().filter(|&&d| d != 1).count() <= 1 && candidates.len() == 1).then(|| candidates[0]);
                }
                Op::Broadcast { .. } | Op::Reshape { .. } => id = node.args[0],
                _ => return None,
            }
        }
    }
}

/// What indexes one axis of an array in advanced indexing.
pub enum AxisIndex {
    Array(IndexArray),
    Slice { start: usize, step: i64, len: usize },
}

/// The diagnostic for gathering by an index result other than the source's own order.
fn index_of_other(range: TextRange) -> Diagnostic {
    crate::builder::index_result_used(range).help(
        "`np.take_along_axis(x, idx, axis)` takes an index result only where `idx` is `np.argsort(x, axis)` (or of `-x`, sliced along the axis) or `np.argmax`/`np.argmin(x, axis, keepdims=True)`: then the gathered values are the sorted values or the extreme; gathering another array by it is not supported yet",
    )
}

fn along(axis: usize) -> GatherAxis {
    GatherAxis::Along { axis, start: 0, step: 1 }
}

/// Whether a reshape from `a` to `b` only adds or removes axes of size 1.
fn is_unit(a: &[usize], b: &[usize]) -> bool {
    a.iter().filter(|&&d| d != 1).eq(b.iter().filter(|&&d| d != 1))
}
