//! Item assignment, `a[index] = value` (and `a[index] op= value`): numpy writes into `a`'s
//! memory; the spec rebinds `a` to a new array equal to what numpy leaves there.
//!
//! That is numpy's meaning only when no other name sees `a`'s memory (a view, an alias, a
//! caller's array: [`Builder::check_in_place`]) and `a` is writable (not `np.broadcast_to`'s
//! read-only view). The index is basic (integers, slices with steps, `None`, `...`) or one
//! boolean mask over `a`'s leading axes; integer-array indices (a scatter, where repeated indices
//! race) are a diagnostic. A basic index writes the value, broadcast to the view's shape and
//! spread back over `a`'s axes by views, where a mask of the selected positions (index
//! arithmetic on an iota) holds, as `np.where(selected, spread, a)`.
//!
//! `np.empty` and `np.empty_like` arrays start with every element unassigned: reading one
//! before assignments have covered it is a diagnostic (numpy would read whatever the memory
//! held), so the spec's meaning never depends on uninitialized memory.

use std::collections::HashMap;

use ollie_graph::{broadcast_shapes, BinaryOp, CmpOp, DType, NodeId, Op, SliceAxis};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::{Ranged, TextRange};

use crate::builder::{Arg, Builder, Result, Scope};
use crate::diagnostic::{Code, Diagnostic};
use crate::operators::IndexItem;
use crate::value::Value;

/// The most elements an `np.empty` array may have (its unassigned elements are tracked one by one).
const LARGEST_EMPTY: usize = 1 << 26;

/// Which elements of an `np.empty` array (or of an array assigned into one) are still unassigned.
#[derive(Clone, Debug, Default)]
pub struct Unassigned(HashMap<NodeId, Vec<bool>>);

impl Builder<'_> {
    /// `np.empty(shape)` / `np.empty_like(a)` given its zeros: every element unassigned.
    pub fn empty(&mut self, zeros: NodeId, range: TextRange) -> Result<NodeId> {
        let n = self.ty(zeros).num_elements();
        if n > LARGEST_EMPTY {
            return Err(Diagnostic::error(Code::UnsupportedCall, format!("`np.empty` of {n} elements"))
                .label(range, format!("more than {LARGEST_EMPTY}: ollie checks one by one that each element is assigned before it is read"))
                .help("use `np.zeros`, whose elements are defined"));
        }
        // A node of its own: the zeros' constant may be shared.
        let zeros = self.copy_of(zeros, range)?;
        self.unassigned.0.insert(zeros, vec![true; n]);
        Ok(zeros)
    }

    /// An error if `id` has elements no assignment has written (an `np.empty` array read).
    pub fn check_assigned(&self, id: NodeId, range: TextRange) -> Result<()> {
        match self.unassigned.0.get(&id) {
            Some(left) => {
                let count = left.iter().filter(|&&u| u).count();
                Err(Diagnostic::error(Code::BadValue, format!("reads an `np.empty` array, {count} of whose elements were never assigned"))
                    .label(range, "numpy would read whatever its memory held")
                    .help("assign every element first, or start from `np.zeros`"))
            }
            None => Ok(()),
        }
    }

    /// `target[index] = value`, or `target[index] op= value` when `op` is given.
    pub fn assign_item(&mut self, target: &ast::ExprSubscript, op: Option<ast::Operator>, value: Arg, stmt: TextRange, scope: &mut Scope) -> Result<()> {
        let Expr::Name(name) = &*target.value else {
            return Err(Diagnostic::error(Code::UnsupportedStatement, "assignment into an element of an expression")
                .label(target.value.range(), "not a name")
                .help("assign into a name's array with the whole index (`x[0, 1:] = v`, not `x[0][1:] = v`)"));
        };
        let name = name.id.as_str();
        let object = target.value.range();
        let array = match scope.get(name) {
            Some(Value::Tensor(id)) => *id,
            Some(other) => {
                return Err(Diagnostic::error(Code::UnsupportedStatement, format!("assignment into an element of {}", other.a_kind())).label(object, "not an array"))
            }
            None => return Err(Diagnostic::error(Code::UnknownName, format!("unknown name `{name}`")).label(object, "not defined here")),
        };
        if self.read_only(array) {
            return Err(Diagnostic::error(Code::BadValue, format!("`{name}` is read-only"))
                .label(object, "a view `np.broadcast_to` made: numpy refuses to write into it")
                .help(format!("copy it first: `{name} = {name}.copy()`")));
        }
        self.check_in_place(array, name, object, scope, &format!("assign into a copy (`{name} = {name}.copy()`), which no other name sees"))?;
        let dtype = self.ty(array).dtype;
        let value = match op {
            // `a[i] op= v` reads `a[i]` (an unassigned element is read here) and writes it back.
            Some(op) => {
                self.check_assigned(array, target.range())?;
                let current = self.subscript(Arg { value: Value::Tensor(array), range: object }, &target.slice, target.range(), scope)?;
                let updated = self.binop(op, Arg { value: current, range: target.range() }, value, stmt)?;
                self.check_stored_in_place(dtype, &updated, stmt, &format!("convert first (`{name} = {name}.astype(...)`), or compute a new array"))?;
                Arg { value: updated, range: stmt }
            }
            None => value,
        };
        let index: Vec<&Expr> = match &*target.slice {
            Expr::Tuple(t) => t.elts.iter().collect(),
            other => vec![other],
        };
        let mut items = Vec::with_capacity(index.len());
        for e in index {
            items.push(self.index_item(e, scope)?);
        }
        let new = match items.as_slice() {
            [IndexItem::Mask(mask, r)] => self.assign_masked(array, (*mask, *r), &value, stmt)?,
            _ => self.assign_basic(array, &items, &value, object, stmt)?,
        };
        scope.insert(name.to_string(), Value::Tensor(new));
        Ok(())
    }

    /// `a[mask] = v`: `mask` over `a`'s leading axes (its shape theirs), `v` one value for all the
    /// elements it selects or one for each position along the trailing axes.
    fn assign_masked(&mut self, array: NodeId, (mask, mrange): (NodeId, TextRange), value: &Arg, stmt: TextRange) -> Result<NodeId> {
        let ty = self.ty(array).clone();
        let mshape = self.ty(mask).shape.clone();
        if mshape.len() > ty.rank() || mshape[..] != ty.shape[..mshape.len()] {
            return Err(Diagnostic::error(Code::ShapeMismatch, format!("a {} mask for an array of {ty}", self.ty(mask)))
                .label(mrange, "numpy needs the mask's shape to be the array's (or its leading axes')"));
        }
        let trailing = &ty.shape[mshape.len()..];
        let v = self.value_as(value, ty.dtype, stmt)?;
        // numpy broadcasts the value to (selected count, *trailing): without knowing the count,
        // only a value whose leading axis is 1 (or absent) does.
        let mut vshape = self.ty(v).shape.clone();
        while vshape.len() > trailing.len() && vshape[0] == 1 {
            vshape.remove(0);
        }
        if vshape.len() > trailing.len() || broadcast_shapes(&vshape, trailing).as_deref() != Some(trailing) {
            return Err(Diagnostic::error(Code::ShapeMismatch, format!("assigning {} through a mask over {:?} of {ty}", self.ty(v), mshape))
                .label(value.range, "numpy needs one value per selected element, a count the inputs decide")
                .help("assign a scalar, or values for the trailing axes; else use `np.where(mask, values, a)`"));
        }
        let v = self.reshape_to(v, &vshape, stmt)?;
        let v = self.broadcast_to(v, &ty.shape, stmt)?;
        let mut placed = mshape.clone();
        placed.resize(ty.rank(), 1);
        let m = self.reshape_to(mask, &placed, stmt)?;
        let m = self.broadcast_to(m, &ty.shape, stmt)?;
        // Which unassigned elements a mask writes depends on the inputs: they stay unassigned.
        let left = self.unassigned.0.remove(&array);
        let new = self.push(Op::Select, vec![m, v, array], stmt)?;
        if let Some(left) = left {
            self.unassigned.0.insert(new, left);
        }
        Ok(new)
    }

    /// `a[basic index] = v`: `v` broadcast to the view's shape, spread over `a`'s axes, chosen
    /// where the index selects.
    fn assign_basic(&mut self, array: NodeId, items: &[IndexItem], value: &Arg, object: TextRange, stmt: TextRange) -> Result<NodeId> {
        if let Some(r) = items.iter().find_map(|i| match i {
            IndexItem::Array(a) => Some(a.range),
            IndexItem::Order(_, r) | IndexItem::Mask(_, r) => Some(*r),
            _ => None,
        }) {
            return Err(Diagnostic::error(Code::UnsupportedIndex, "assignment through an index array")
                .label(r, "a scatter: where indices repeat, numpy keeps the last write")
                .help("assign through slices and integers, or through one boolean mask (`x[mask] = v`); or build the result with `np.where` over a comparison with `np.arange`"));
        }
        let ty = self.ty(array).clone();
        let (axes, view) = self.basic_selection(items, &ty, object)?;
        let v = self.value_as(value, ty.dtype, stmt)?;
        // numpy drops the value's leading axes of length 1 beyond the view's rank.
        let mut vshape = self.ty(v).shape.clone();
        while vshape.len() > view.len() && vshape[0] == 1 {
            vshape.remove(0);
        }
        if broadcast_shapes(&vshape, &view).as_deref() != Some(&view[..]) {
            return Err(Diagnostic::error(Code::ShapeMismatch, format!("could not broadcast {} into the selection's shape {view:?}", self.ty(v)))
                .label(value.range, self.ty(v).to_string())
                .label(object, format!("{ty}, indexed: {view:?}")));
        }
        let v = self.reshape_to(v, &vshape, stmt)?;
        let v = self.broadcast_to(v, &view, stmt)?;
        // One axis per axis of `a`: an integer's of length 1, the new ones (`None`) gone.
        let per_axis: Vec<usize> = axes.iter().map(|a| a.len).collect();
        let u = self.reshape_to(v, &per_axis, stmt)?;
        if per_axis.contains(&0) {
            // Nothing selected, nothing written.
            return Ok(array);
        }
        // Every position selected (each axis whole, perhaps reversed).
        let whole = axes.iter().zip(&ty.shape).all(|(a, &n)| a.len == n);
        // The array's unassigned elements (zeros in the graph) are kept where this does not
        // write, never read: the spec reads the result only once every one is assigned.
        let left = self.unassigned.0.remove(&array);
        let new = if whole {
            // Every element written: the array is the value (a copy of it, its memory `a`'s).
            let spread = self.spread(u, &axes, &ty.shape, stmt)?;
            self.copy_of(spread, stmt)?
        } else {
            let spread = self.spread(u, &axes, &ty.shape, stmt)?;
            let selected = self.selected(&axes, &ty.shape, stmt)?;
            self.push(Op::Select, vec![selected, spread, array], stmt)?
        };
        if let Some(mut left) = left {
            for_each_selected(&axes, &ty.shape, |flat| left[flat] = false);
            if left.contains(&true) {
                self.unassigned.0.insert(new, left);
            }
        }
        Ok(new)
    }

    /// The value to assign as an array of `dtype` (numpy casts it to the array's dtype).
    fn value_as(&mut self, value: &Arg, dtype: DType, range: TextRange) -> Result<NodeId> {
        let v = self.tensor(value, Some(dtype))?;
        if self.graph.index_result(v) {
            return Err(crate::builder::index_result_used(value.range));
        }
        self.cast(v, dtype, range)
    }

    /// `u`, one axis per axis of an array of `shape` holding the elements `axes` select, placed
    /// at those positions (what lies between them is left to [`Builder::selected`]'s mask).
    /// Along an axis with step `s`, each element repeated `s` times (a view: a broadcast
    /// reshaped) puts element `t` at `t·s .. t·s + s`, so at `low + t·s` once shifted by the
    /// whole repeats before `low`; then zeros before and after (or a slice) to the axis' length.
    fn spread(&mut self, mut u: NodeId, axes: &[SliceAxis], shape: &[usize], range: TextRange) -> Result<NodeId> {
        let dtype = self.ty(u).dtype;
        for (k, (a, &n)) in axes.iter().zip(shape).enumerate() {
            if *a == SliceAxis::full(n) {
                continue;
            }
            let (low, _) = bounds(a);
            if a.step < 0 {
                u = self.flip(u, &[k], range)?;
            }
            let step = if a.len > 1 { a.step.unsigned_abs() as usize } else { 1 };
            if step > 1 {
                let mut each = self.ty(u).shape.clone();
                each.insert(k + 1, 1);
                let spaced = self.reshape_to(u, &each, range)?;
                each[k + 1] = step;
                let repeated = self.broadcast_to(spaced, &each, range)?;
                let mut merged = self.ty(u).shape.clone();
                merged[k] = a.len * step;
                u = self.reshape_to(repeated, &merged, range)?;
            }
            let front = low / step * step;
            let extent = front + a.len * step;
            let mut parts = Vec::new();
            let mut part_shape = self.ty(u).shape.clone();
            if front > 0 {
                part_shape[k] = front;
                parts.push(self.full(&part_shape, 0.0, dtype, range)?);
            }
            parts.push(u);
            if extent < n {
                part_shape[k] = n - extent;
                parts.push(self.full(&part_shape, 0.0, dtype, range)?);
            }
            if parts.len() > 1 {
                u = self.push(Op::Concat { axis: k }, parts, range)?;
            }
            if extent > n {
                u = self.range_along(u, k, 0, n, range)?;
            }
        }
        Ok(u)
    }

    /// Where `axes` select in an array of `shape`, from index arithmetic: along each axis not
    /// taken whole (in either order), the positions between the slice's first and last
    /// (`low <= i <= last`) on its step ([`Builder::phase`]).
    fn selected(&mut self, axes: &[SliceAxis], shape: &[usize], range: TextRange) -> Result<NodeId> {
        let mut mask: Option<NodeId> = None;
        let constant = |b: &mut Self, v: usize| b.full(shape, v as f64, DType::I64, range);
        for (k, (a, &n)) in axes.iter().zip(shape).enumerate() {
            if a.len == n {
                continue;
            }
            let (low, last) = bounds(a);
            let i = self.push(Op::Iota { shape: shape.to_vec(), axis: k, dtype: DType::I64 }, vec![], range)?;
            let mut conditions = Vec::new();
            if low > 0 {
                let c = constant(self, low)?;
                conditions.push(self.push(Op::Compare(CmpOp::Ge), vec![i, c], range)?);
            }
            if last + 1 < n {
                let c = constant(self, last)?;
                conditions.push(self.push(Op::Compare(CmpOp::Le), vec![i, c], range)?);
            }
            let step = a.step.unsigned_abs() as usize;
            if a.len > 1 && step > 1 {
                conditions.push(self.phase(low % step, step, k, shape, range)?);
            }
            for c in conditions {
                // `&` of masks is their minimum.
                mask = Some(match mask {
                    None => c,
                    Some(m) => self.push(Op::Binary(BinaryOp::Min), vec![m, c], range)?,
                });
            }
        }
        Ok(mask.expect("a selection that is not the whole array bounds some axis"))
    }

    /// Along axis `k` of `shape`, whether a position is `phase` modulo `step`: the pattern of one
    /// period (`iota(step) == phase`) repeated along the axis by views, so that a kernel finds
    /// the position's phase by its index arithmetic (not a modulo of floats).
    fn phase(&mut self, phase: usize, step: usize, k: usize, shape: &[usize], range: TextRange) -> Result<NodeId> {
        let n = shape[k];
        let i = self.push(Op::Iota { shape: vec![step], axis: 0, dtype: DType::I64 }, vec![], range)?;
        let p = self.full(&[step], phase as f64, DType::I64, range)?;
        let period = self.push(Op::Compare(CmpOp::Eq), vec![i, p], range)?;
        let period = self.reshape_to(period, &[1, step], range)?;
        let periods = n.div_ceil(step);
        let repeated = self.broadcast_to(period, &[periods, step], range)?;
        let line = self.reshape_to(repeated, &[periods * step], range)?;
        let line = self.range_along(line, 0, 0, n, range)?;
        let mut placed = vec![1; shape.len()];
        placed[k] = n;
        let line = self.reshape_to(line, &placed, range)?;
        self.broadcast_to(line, shape, range)
    }
}

/// The first and last position a slice of length at least one selects, in the axis' order.
fn bounds(a: &SliceAxis) -> (usize, usize) {
    let end = (a.start as i64 + (a.len as i64 - 1) * a.step) as usize;
    (a.start.min(end), a.start.max(end))
}

/// Calls `f` with the flat (row-major) position of every element `axes` select in an array of
/// `shape`.
fn for_each_selected(axes: &[SliceAxis], shape: &[usize], mut f: impl FnMut(usize)) {
    let mut at = vec![0usize; axes.len()];
    loop {
        let flat = axes.iter().zip(&at).zip(shape).fold(0, |flat, ((a, &t), &n)| flat * n + (a.start as i64 + t as i64 * a.step) as usize);
        f(flat);
        // The next selection, the last axis fastest.
        let mut k = axes.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            at[k] += 1;
            if at[k] < axes[k].len {
                break;
            }
            at[k] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selected_positions_are_numpys() {
        // x[1::2, ::-2] of a 4 × 5 array: rows 1 and 3, columns 4, 2 and 0.
        let axes = [SliceAxis { start: 1, step: 2, len: 2 }, SliceAxis { start: 4, step: -2, len: 3 }];
        let mut got = Vec::new();
        for_each_selected(&axes, &[4, 5], |f| got.push(f));
        assert_eq!(got, [9, 7, 5, 19, 17, 15]);
        // A 0-d array: its one element.
        let mut got = Vec::new();
        for_each_selected(&[], &[], |f| got.push(f));
        assert_eq!(got, [0]);
    }
}
