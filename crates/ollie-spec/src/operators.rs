//! Python operators, attributes and subscripts, with numpy's meaning on arrays and Python's on
//! the values known before the kernel runs.

use ollie_graph::{broadcast_shapes, BinaryOp, CmpOp, DType, NodeId, Op, SliceAxis, UnaryOp};
use ruff_python_ast::{self as ast, Expr, Operator};
use ruff_text_size::{Ranged, TextRange};

use crate::builder::{unsupported_syntax, Arg, Builder, Result, Scope};
use crate::diagnostic::{Code, Diagnostic};
use crate::gather::{AxisIndex, IndexArray};
use crate::value::Value;

impl Builder<'_> {
    pub fn unaryop(&mut self, op: ast::UnaryOp, operand: Arg, range: TextRange) -> Result<Value> {
        match (op, &operand.value) {
            (ast::UnaryOp::UAdd, Value::Tensor(_) | Value::Int(_) | Value::Float(_)) => Ok(operand.value),
            (ast::UnaryOp::USub, _) => self.unary(UnaryOp::Neg, operand, range),
            (ast::UnaryOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
            (ast::UnaryOp::Invert, Value::Int(i)) => Ok(Value::Int(!i)),
            (ast::UnaryOp::Invert, Value::Bool(b)) => Ok(Value::Bool(!b)),
            (ast::UnaryOp::Invert, Value::Tensor(id)) if self.ty(*id).dtype == DType::Bool => {
                let id = *id;
                let f = self.full(&self.ty(id).shape.clone(), 0.0, DType::Bool, range)?;
                Ok(Value::Tensor(self.push(Op::Compare(CmpOp::Eq), vec![id, f], range)?))
            }
            (ast::UnaryOp::Invert, Value::Tensor(_)) => Err(Diagnostic::error(Code::BadValue, "`~` needs a boolean array")
                .label(operand.range, "this array is not boolean")),
            (ast::UnaryOp::Not, Value::Tensor(_)) => Err(unsupported_syntax(range, "`not` on an array").help("use `~mask` on a boolean array")),
            _ => Err(Diagnostic::error(Code::BadValue, format!("bad operand for a unary operator: {}", operand.value.kind()))
                .label(operand.range, "here")),
        }
    }

    /// An elementwise unary function; Python numbers fold.
    pub fn unary(&mut self, op: UnaryOp, x: Arg, range: TextRange) -> Result<Value> {
        match x.value {
            Value::Tensor(id) => {
                if op == UnaryOp::Neg && self.ty(id).dtype == DType::Bool {
                    return Err(Diagnostic::error(Code::BadValue, "numpy does not negate boolean arrays")
                        .label(x.range, "a boolean array")
                        .help("use `~mask` for logical not"));
                }
                Ok(Value::Tensor(self.push(Op::Unary(op), vec![id], range)?))
            }
            Value::Int(_) | Value::Bool(_) if matches!(op, UnaryOp::Neg | UnaryOp::Abs) => {
                let i = x.value.int().expect("an int or a bool");
                Ok(Value::Int(if op == UnaryOp::Neg { -i } else { i.abs() }))
            }
            ref v => match v.number() {
                Some(f) => Ok(Value::Float(op.apply(f))),
                None => Err(Diagnostic::error(Code::BadValue, format!("expected an array or a number, found {}", v.a_kind()))
                    .label(x.range, "here")),
            },
        }
    }

    pub fn binop(&mut self, op: Operator, left: Arg, right: Arg, range: TextRange) -> Result<Value> {
        if let (Value::Tuple(a), Value::Tuple(b), Operator::Add) = (&left.value, &right.value, op) {
            return Ok(Value::Tuple(a.iter().chain(b).cloned().collect()));
        }
        let both_scalars = left.value.number().is_some() && right.value.number().is_some();
        if both_scalars {
            return fold_binop(op, &left.value, &right.value, range);
        }
        let bin = match op {
            Operator::Add => BinaryOp::Add,
            Operator::Sub => BinaryOp::Sub,
            Operator::Mult => BinaryOp::Mul,
            Operator::Div => BinaryOp::Div,
            Operator::Pow => BinaryOp::Pow,
            Operator::MatMult => return self.matmul(left, right, range),
            Operator::FloorDiv | Operator::Mod if self.is_integer(&left.value) && self.is_integer(&right.value) => {
                if op == Operator::FloorDiv { BinaryOp::FloorDiv } else { BinaryOp::Mod }
            }
            Operator::FloorDiv | Operator::Mod if !self.is_bool(&left.value) && !self.is_bool(&right.value) => {
                return self.float_divmod(op, left, right, range);
            }
            Operator::BitAnd | Operator::BitOr => {
                for a in [&left, &right] {
                    if !self.is_bool(&a.value) {
                        return Err(Diagnostic::error(Code::BadValue, "`&` and `|` combine boolean masks")
                            .label(a.range, format!("this is not boolean ({})", self.describe(&a.value))));
                    }
                }
                let bin = if op == Operator::BitAnd { BinaryOp::Min } else { BinaryOp::Max };
                return self.elementwise(bin, left, right, range);
            }
            _ => {
                return Err(Diagnostic::error(Code::UnsupportedSyntax, format!("the operator `{}` is not supported on arrays", op.as_str()))
                    .label(range, "not supported")
                    .help("arrays support + - * / // % ** @ and comparisons, & | ~ on boolean masks"))
            }
        };
        if matches!(bin, BinaryOp::Add | BinaryOp::Sub) && self.is_bool(&left.value) && self.is_bool(&right.value) {
            return Err(Diagnostic::error(Code::BadValue, format!("`{}` of two boolean arrays is not arithmetic in numpy", op.as_str()))
                .label(range, "both operands are boolean")
                .help("use `|` for logical or, or convert first with `.astype(np.float32)`"));
        }
        self.elementwise(bin, left, right, range)
    }

    /// Whether `v` is an integer array or number (not a boolean).
    pub(crate) fn is_integer(&self, v: &Value) -> bool {
        match v {
            Value::Tensor(id) => self.ty(*id).dtype.is_int(),
            Value::Int(_) => true,
            _ => false,
        }
    }

    pub(crate) fn is_bool(&self, v: &Value) -> bool {
        match v {
            Value::Tensor(id) => self.ty(*id).dtype == DType::Bool,
            Value::Bool(_) => true,
            _ => false,
        }
    }

    /// A description of a value for messages: "an array f32[4,128]", "a float".
    pub fn describe(&self, v: &Value) -> String {
        match v {
            Value::Tensor(id) => format!("an array {}", self.ty(*id)),
            other => other.a_kind(),
        }
    }

    /// Broadcasts the operands together (numpy's rules) and applies `op` elementwise.
    pub fn elementwise(&mut self, op: BinaryOp, a: Arg, b: Arg, range: TextRange) -> Result<Value> {
        let ids = self.broadcast_all(&[a, b], range)?;
        Ok(Value::Tensor(self.push(Op::Binary(op), ids, range)?))
    }

    /// Converts the arguments to tensors and broadcasts them to their common shape.
    pub fn broadcast_all(&mut self, args: &[Arg], range: TextRange) -> Result<Vec<NodeId>> {
        // numpy: a Python scalar takes the dtype of the arrays it meets (booleans count last).
        let dtypes: Vec<DType> = args
            .iter()
            .filter_map(|a| if let Value::Tensor(id) = a.value { Some(self.ty(id).dtype) } else { None })
            .collect();
        let like = dtypes.iter().copied().find(|&d| d != DType::Bool).or(dtypes.first().copied());
        let ids = args.iter().map(|a| self.tensor(a, like)).collect::<Result<Vec<_>>>()?;
        let mut shape: Vec<usize> = Vec::new();
        for (i, &id) in ids.iter().enumerate() {
            match broadcast_shapes(&shape, &self.ty(id).shape) {
                Some(s) => shape = s,
                None => {
                    let mut d = Diagnostic::error(
                        Code::ShapeMismatch,
                        format!("operands could not be broadcast together: {}", ids.iter().map(|&id| self.ty(id).to_string()).collect::<Vec<_>>().join(" and ")),
                    );
                    for (a, &id) in args.iter().zip(&ids).take(i + 1) {
                        d = d.label(a.range, self.ty(id).to_string());
                    }
                    return Err(d.help("numpy broadcasting aligns shapes from the right; each pair of sizes must be equal or one of them 1"));
                }
            }
        }
        ids.into_iter().map(|id| self.broadcast_to(id, &shape, range)).collect()
    }

    /// `id` broadcast to `shape` (no node when it already has that shape).
    pub fn broadcast_to(&mut self, id: NodeId, shape: &[usize], range: TextRange) -> Result<NodeId> {
        if self.ty(id).shape == shape {
            return Ok(id);
        }
        self.push(Op::Broadcast { shape: shape.to_vec() }, vec![id], range)
    }

    pub fn compare(&mut self, op: ast::CmpOp, left: Arg, right: Arg, range: TextRange) -> Result<Value> {
        if let (ast::CmpOp::Is | ast::CmpOp::IsNot, Some(v)) = (op, crate::control::identity(op, &left.value, &right.value)) {
            return Ok(v);
        }
        let cmp = match op {
            ast::CmpOp::Lt => CmpOp::Lt,
            ast::CmpOp::LtE => CmpOp::Le,
            ast::CmpOp::Gt => CmpOp::Gt,
            ast::CmpOp::GtE => CmpOp::Ge,
            ast::CmpOp::Eq => CmpOp::Eq,
            ast::CmpOp::NotEq => CmpOp::Ne,
            _ => return Err(unsupported_syntax(range, "`is` and `in` comparisons")),
        };
        if let (Some(a), Some(b)) = (left.value.number(), right.value.number()) {
            return Ok(Value::Bool(fold_compare(cmp, a, b)));
        }
        if let (Value::Tuple(_), Value::Tuple(_)) = (&left.value, &right.value) {
            return match cmp {
                CmpOp::Eq => Ok(Value::Bool(left.value == right.value)),
                CmpOp::Ne => Ok(Value::Bool(left.value != right.value)),
                _ => Err(unsupported_syntax(range, "ordering comparisons of tuples")),
            };
        }
        let ids = self.broadcast_all(&[left, right], range)?;
        Ok(Value::Tensor(self.push(Op::Compare(cmp), ids, range)?))
    }

    pub fn attribute(&mut self, object: Arg, name: &str, name_range: TextRange, range: TextRange) -> Result<Value> {
        if object.value.number().is_some() && matches!(name, "T" | "shape" | "ndim" | "size" | "dtype") {
            // A numpy scalar has the array attributes of a 0-d array.
            let id = self.tensor(&object, None)?;
            return self.attribute(Arg { value: Value::Tensor(id), range: object.range }, name, name_range, range);
        }
        match object.value {
            Value::Math => crate::math::attribute(name, name_range, range),
            Value::TypeInfo(dtype) => type_info(dtype, name, name_range),
            Value::Scipy => match name {
                "special" => Ok(Value::ScipySpecial),
                _ => Err(Diagnostic::error(Code::UnsupportedImport, format!("`scipy.{name}` is not supported"))
                    .label(name_range, "not supported")
                    .help("of scipy, specs use `scipy.special`")),
            },
            Value::ScipySpecial => match crate::special::FUNCTIONS.iter().find(|f| **f == name) {
                Some(f) => Ok(Value::Special(f)),
                None => Err(crate::special::unsupported(name, name_range)),
            },
            Value::MlDtypes => match name {
                "bfloat16" => Ok(Value::DType(DType::BF16)),
                _ => Err(Diagnostic::error(Code::UnsupportedDtype, format!("`ml_dtypes.{name}` is not supported"))
                    .label(name_range, "not supported")
                    .help("of ml_dtypes, specs use `bfloat16`")),
            },
            Value::Numpy => Ok(match name {
                "inf" => Value::Float(f64::INFINITY),
                "nan" => Value::Float(f64::NAN),
                "pi" => Value::Float(std::f64::consts::PI),
                "e" => Value::Float(std::f64::consts::E),
                "newaxis" => Value::None,
                "float32" => Value::DType(DType::F32),
                "float16" | "half" => Value::DType(DType::F16),
                "float64" | "double" => Value::DType(DType::F64),
                "int64" => Value::DType(DType::I64),
                "int32" => Value::DType(DType::I32),
                "int8" => Value::DType(DType::I8),
                "uint8" => Value::DType(DType::U8),
                "bool_" => Value::DType(DType::Bool),
                _ if crate::numpy::FUNCTIONS.contains(&name) => {
                    Value::NumpyFunction(crate::numpy::FUNCTIONS.iter().find(|f| **f == name).expect("contained"))
                }
                _ => {
                    return Err(Diagnostic::error(Code::UnsupportedCall, format!("`np.{name}` is not supported"))
                        .label(name_range, "not in ollie's numpy subset")
                        .help(crate::numpy::supported_functions_help()))
                }
            }),
            Value::Tensor(id) => {
                let ty = self.ty(id).clone();
                Ok(match name {
                    "T" => {
                        let perm: Vec<usize> = (0..ty.rank()).rev().collect();
                        Value::Tensor(self.transpose_perm(id, perm, range)?)
                    }
                    "shape" => Value::Tuple(ty.shape.iter().map(|&n| Value::Int(n as i64)).collect()),
                    "ndim" => Value::Int(ty.rank() as i64),
                    "size" => Value::Int(ty.num_elements() as i64),
                    "dtype" => Value::DType(ty.dtype),
                    _ => {
                        return Err(Diagnostic::error(Code::UnsupportedSyntax, format!("array attribute `.{name}` is not supported"))
                            .label(name_range, "not supported")
                            .help(crate::numpy::supported_methods_help()))
                    }
                })
            }
            ref other => Err(Diagnostic::error(Code::UnsupportedSyntax, format!("attribute `.{name}` of {}", other.a_kind()))
                .label(range, "not supported")),
        }
    }

    pub fn subscript(&mut self, object: Arg, index: &Expr, range: TextRange, scope: &Scope) -> Result<Value> {
        let items: Vec<&Expr> = match index {
            Expr::Tuple(t) => t.elts.iter().collect(),
            other => vec![other],
        };
        if object.value.number().is_some() {
            // A numpy scalar indexes like a 0-d array (`c[None]`).
            let id = self.tensor(&object, None)?;
            return self.subscript(Arg { value: Value::Tensor(id), range: object.range }, index, range, scope);
        }
        match object.value {
            Value::Tuple(values) => {
                let [item] = items.as_slice() else {
                    return Err(Diagnostic::error(Code::UnsupportedIndex, "a tuple takes one index").label(index.range(), "here"));
                };
                match self.index_item(item, scope)? {
                    IndexItem::Int(i, r) => {
                        let n = values.len() as i64;
                        let j = if i < 0 { i.saturating_add(n) } else { i };
                        if j < 0 || j >= n {
                            return Err(Diagnostic::error(Code::IndexOutOfRange, format!("index {i} is out of range for a tuple of length {n}")).label(r, "here"));
                        }
                        Ok(values[j as usize].clone())
                    }
                    IndexItem::Slice(s, r) => {
                        let axis = s.resolve(values.len(), r)?;
                        Ok(Value::Tuple((0..axis.len).map(|i| values[(axis.start as i64 + i as i64 * axis.step) as usize].clone()).collect()))
                    }
                    _ => Err(Diagnostic::error(Code::UnsupportedIndex, "tuples take an integer or a slice").label(index.range(), "here")),
                }
            }
            Value::Tensor(id) => {
                let items = items.iter().map(|e| self.index_item(e, scope)).collect::<Result<Vec<_>>>()?;
                self.index_tensor(id, items, object.range, range)
            }
            ref other => Err(Diagnostic::error(Code::UnsupportedIndex, format!("cannot index {}", other.a_kind())).label(object.range, "not an array")),
        }
    }

    pub(crate) fn index_item(&mut self, e: &Expr, scope: &Scope) -> Result<IndexItem> {
        if let Expr::Slice(s) = e {
            let mut bound = |b: &Option<Box<Expr>>| -> Result<Option<i64>> {
                let Some(b) = b else { return Ok(None) };
                match self.expr(b, scope)? {
                    Value::None => Ok(None),
                    v => v.int().map(Some).ok_or_else(|| {
                        Diagnostic::error(Code::UnsupportedIndex, "slice bounds must be integers known before the kernel runs")
                            .label(b.range(), format!("this is {}", self.describe(&v)))
                    }),
                }
            };
            let slice = PySlice { start: bound(&s.lower)?, stop: bound(&s.upper)?, step: bound(&s.step)? };
            return Ok(IndexItem::Slice(slice, e.range()));
        }
        Ok(match self.expr(e, scope)? {
            Value::None => IndexItem::NewAxis,
            Value::Ellipsis => IndexItem::Ellipsis(e.range()),
            Value::Int(i) => IndexItem::Int(i, e.range()),
            Value::Tensor(id) if self.graph.index_result(id) => IndexItem::Order(id, e.range()),
            Value::Tensor(id) if self.ty(id).dtype == DType::Bool => IndexItem::Mask(id, e.range()),
            // An array, or a list of integers (`x[:, [0, 2]]`).
            v @ (Value::Tensor(_) | Value::Tuple(_)) => IndexItem::Array(self.index_array(&Arg { value: v, range: e.range() })?),
            v => {
                return Err(Diagnostic::error(Code::UnsupportedIndex, format!("indexing with {} is not supported", self.describe(&v)))
                    .label(e.range(), "not a constant integer, slice, None or ...")
                    .help("index with constant integers and slices (`x[:, 1:5:2]`), integer arrays, `None` and `...`; for masks use `np.where`"))
            }
        })
    }

    /// numpy basic indexing: one strided slice over all axes, then one reshape that drops the
    /// integer-indexed axes and inserts the new ones.
    fn index_tensor(&mut self, id: NodeId, items: Vec<IndexItem>, object_range: TextRange, range: TextRange) -> Result<Value> {
        let ty = self.ty(id).clone();
        if let Some(order) = items.iter().find_map(|i| if let IndexItem::Order(o, r) = i { Some((*o, *r)) } else { None }) {
            return self.index_by_own_order(id, &items, order, range);
        }
        if let Some(&IndexItem::Mask(m, r)) = items.iter().find(|i| matches!(i, IndexItem::Mask(..))) {
            return Err(Diagnostic::error(Code::UnsupportedIndex, "indexing with a boolean mask")
                .label(r, format!("{} mask", self.ty(m)))
                .help("boolean masks select a data-dependent number of elements: use `np.where` (assigning through a mask, `x[mask] = v`, is supported)"));
        }
        let consumes = self.consumed(&items, &ty, range)?;
        if items.iter().any(|i| matches!(i, IndexItem::Array(_))) {
            return self.index_with_arrays(id, items, consumes, object_range, range);
        }
        let (axes, out_shape) = self.basic_selection(&items, &ty, object_range)?;
        let node = self.slice(id, axes, range)?;
        Ok(Value::Tensor(self.reshape_to(node, &out_shape, range)?))
    }

    /// How many of the array's axes `items` index (checked against its rank, one `...` at most).
    fn consumed(&self, items: &[IndexItem], ty: &ollie_graph::TensorType, range: TextRange) -> Result<usize> {
        let consumes = items.iter().filter(|i| matches!(i, IndexItem::Int(..) | IndexItem::Slice(..) | IndexItem::Array(_))).count();
        let ellipses: Vec<TextRange> = items.iter().filter_map(|i| if let IndexItem::Ellipsis(r) = i { Some(*r) } else { None }).collect();
        if ellipses.len() > 1 {
            return Err(Diagnostic::error(Code::UnsupportedIndex, "an index can only have a single ellipsis").label(ellipses[1], "second `...`"));
        }
        if consumes > ty.rank() {
            return Err(Diagnostic::error(Code::IndexOutOfRange, format!("too many indices: {consumes} for an array of rank {} ({ty})", ty.rank()))
                .label(range, format!("{consumes} indices into {ty}")));
        }
        Ok(consumes)
    }

    /// A basic index (integers, slices, `None`, `...`) as the slice it takes of each of the
    /// array's axes (an integer's of length 1) and the shape of the view it gives.
    pub(crate) fn basic_selection(&self, items: &[IndexItem], ty: &ollie_graph::TensorType, object_range: TextRange) -> Result<(Vec<SliceAxis>, Vec<usize>)> {
        let consumes = self.consumed(items, ty, object_range)?;
        let mut axes = Vec::with_capacity(ty.rank());
        let mut out_shape = Vec::new();
        let mut axis = 0;
        for item in items {
            match item {
                IndexItem::NewAxis => out_shape.push(1),
                IndexItem::Ellipsis(_) => {
                    for _ in 0..ty.rank() - consumes {
                        axes.push(SliceAxis::full(ty.shape[axis]));
                        out_shape.push(ty.shape[axis]);
                        axis += 1;
                    }
                }
                IndexItem::Int(i, r) => {
                    let j = constant_index(*i, *r, ty, axis, object_range)?;
                    axes.push(SliceAxis { start: j, step: 1, len: 1 });
                    axis += 1;
                }
                IndexItem::Array(_) | IndexItem::Order(..) | IndexItem::Mask(..) => unreachable!("basic indexing has no arrays"),
                IndexItem::Slice(s, r) => {
                    let a = s.resolve(ty.shape[axis], *r)?;
                    out_shape.push(a.len);
                    axes.push(a);
                    axis += 1;
                }
            }
        }
        while axis < ty.rank() {
            axes.push(SliceAxis::full(ty.shape[axis]));
            out_shape.push(ty.shape[axis]);
            axis += 1;
        }
        Ok((axes, out_shape))
    }
}

/// Integer `i` as an index into `axis` of `ty` (negative from the end), or out of range.
fn constant_index(i: i64, r: TextRange, ty: &ollie_graph::TensorType, axis: usize, object_range: TextRange) -> Result<usize> {
    let n = ty.shape[axis] as i64;
    let j = if i < 0 { i.saturating_add(n) } else { i };
    if j < 0 || j >= n {
        return Err(Diagnostic::error(Code::IndexOutOfRange, format!("index {i} is out of range for axis {axis} of size {n}"))
            .label(r, "out of range")
            .label(object_range, ty.to_string()));
    }
    Ok(j as usize)
}

pub(crate) enum IndexItem {
    Int(i64, TextRange),
    /// An integer array (advanced indexing).
    Array(IndexArray),
    /// An index result (`argmax`, `argsort`), which only an array's own order may index.
    Order(NodeId, TextRange),
    /// A boolean array: only assigned through (`x[mask] = v`).
    Mask(NodeId, TextRange),
    Slice(PySlice, TextRange),
    NewAxis,
    Ellipsis(TextRange),
}

impl Builder<'_> {
    /// `x[:, ..., i]` with `i` on `axis`: basic indexing by a constant (`np.take` of an int).
    pub fn index_constant(&mut self, id: NodeId, axis: usize, i: i64, i_range: TextRange, object_range: TextRange, range: TextRange) -> Result<Value> {
        let whole = || IndexItem::Slice(PySlice { start: None, stop: None, step: None }, range);
        let items = (0..axis).map(|_| whole()).chain(std::iter::once(IndexItem::Int(i, i_range))).collect();
        self.index_tensor(id, items, object_range, range)
    }

    /// numpy advanced indexing (some items are integer arrays): each source axis taken by an
    /// array (an integer is a 0-d one) or a slice, `...` standing for whole axes.
    /// `x[np.arange(n), i]` (or `x[i, np.arange(m)]`) with `i` an `argmax`/`argmin` of `x` along
    /// the other axis: `np.take_along_axis` by its own order, the extreme of each row (column).
    /// Any other indexing by an index result is diagnosed.
    fn index_by_own_order(&mut self, id: NodeId, items: &[IndexItem], (order, orange): (NodeId, TextRange), range: TextRange) -> Result<Value> {
        let shape = self.ty(id).shape.clone();
        let along = match items {
            [IndexItem::Array(a), IndexItem::Order(..)] if self.arange_axis(a.id) == Some(0) && self.ty(a.id).shape == [shape[0]] => 1,
            [IndexItem::Order(..), IndexItem::Array(a)] if self.arange_axis(a.id) == Some(0) && self.ty(a.id).shape == [shape[1]] => 0,
            _ => return Err(crate::builder::index_result_used(orange)),
        };
        if shape.len() != 2 || self.ty(order).shape != [shape[1 - along]] {
            return Err(crate::builder::index_result_used(orange));
        }
        let mut kept = shape.clone();
        kept[along] = 1;
        let index = self.reshape_to(order, &kept, range)?;
        let picked = self.take_by_own_order(id, index, along, orange, range)?;
        Ok(Value::Tensor(self.reshape_to(picked, &[shape[1 - along]], range)?))
    }

    fn index_with_arrays(&mut self, id: NodeId, items: Vec<IndexItem>, consumes: usize, object_range: TextRange, range: TextRange) -> Result<Value> {
        let ty = self.ty(id).clone();
        let mut axes = Vec::with_capacity(ty.rank());
        for item in items {
            match item {
                IndexItem::NewAxis => {
                    return Err(Diagnostic::error(Code::UnsupportedIndex, "`None` together with index arrays")
                        .label(range, "numpy's placement of new axes among advanced indices")
                        .help("index first, then add the axis with `[..., None]` or `np.expand_dims`"))
                }
                IndexItem::Ellipsis(_) => {
                    for _ in 0..ty.rank() - consumes {
                        axes.push(AxisIndex::Slice { start: 0, step: 1, len: ty.shape[axes.len()] });
                    }
                }
                IndexItem::Int(i, r) => {
                    let j = constant_index(i, r, &ty, axes.len(), object_range)?;
                    let c = self.push(Op::Constant { value: j as f64, dtype: DType::I64 }, vec![], r)?;
                    axes.push(AxisIndex::Array(IndexArray { id: c, range: r }));
                }
                IndexItem::Slice(s, r) => {
                    let a = s.resolve(ty.shape[axes.len()], r)?;
                    axes.push(AxisIndex::Slice { start: a.start, step: a.step, len: a.len });
                }
                IndexItem::Array(a) => axes.push(AxisIndex::Array(a)),
                IndexItem::Order(..) | IndexItem::Mask(..) => unreachable!("index results are indexed by their own order, masks refused"),
            }
        }
        while axes.len() < ty.rank() {
            axes.push(AxisIndex::Slice { start: 0, step: 1, len: ty.shape[axes.len()] });
        }
        Ok(Value::Tensor(self.advanced_index(id, axes, range)?))
    }
}

/// A Python slice `start:stop:step` before it meets an axis length.
pub(crate) struct PySlice {
    start: Option<i64>,
    stop: Option<i64>,
    step: Option<i64>,
}

impl PySlice {
    /// Python's `slice.indices`: clamps the bounds to an axis of length `n`.
    fn resolve(&self, n: usize, range: TextRange) -> Result<SliceAxis> {
        let n = n as i64;
        let step = self.step.unwrap_or(1);
        if step == 0 {
            return Err(Diagnostic::error(Code::BadValue, "slice step cannot be zero").label(range, "here"));
        }
        let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
        let (start, stop) = if step > 0 {
            let s = self.start.map_or(0, |s| clamp(if s < 0 { s.saturating_add(n) } else { s }, 0, n));
            let e = self.stop.map_or(n, |e| clamp(if e < 0 { e.saturating_add(n) } else { e }, 0, n));
            (s, e)
        } else {
            let s = self.start.map_or(n - 1, |s| clamp(if s < 0 { s.saturating_add(n) } else { s }, -1, n - 1));
            let e = self.stop.map_or(-1, |e| clamp(if e < 0 { e.saturating_add(n) } else { e }, -1, n - 1));
            (s, e)
        };
        let len = if step > 0 {
            if stop > start { (stop - start + step - 1) / step } else { 0 }
        } else if start > stop {
            (start - stop + (-step) - 1) / (-step)
        } else {
            0
        };
        Ok(if len == 0 { SliceAxis { start: 0, step: 1, len: 0 } } else { SliceAxis { start: start as usize, step, len: len as usize } })
    }
}

/// An attribute of `np.finfo(dtype)` / `np.iinfo(dtype)`.
fn type_info(dtype: DType, name: &str, name_range: TextRange) -> Result<Value> {
    // (mantissa bits after the point, smallest normal exponent, largest finite, decimal resolution)
    let float = |d: DType| match d {
        DType::F16 => Some((10, -14, 65504.0, 1e-3)),
        DType::BF16 => Some((7, -126, 3.3895313892515355e38, 1e-2)),
        DType::F32 => Some((23, -126, f64::from(f32::MAX), 1e-6)),
        DType::F64 => Some((52, -1022, f64::MAX, 1e-15)),
        _ => None,
    };
    let bits = Value::Int(8 * dtype.size() as i64);
    let v = match (float(dtype), name) {
        (_, "bits") => bits,
        (_, "dtype") => Value::DType(dtype),
        (Some((m, _, _, _)), "eps") => Value::Float(2f64.powi(-m)),
        (Some((m, _, _, _)), "epsneg") => Value::Float(2f64.powi(-m - 1)),
        (Some((_, _, max, _)), "max") => Value::Float(max),
        (Some((_, _, max, _)), "min") => Value::Float(-max),
        (Some((_, e, _, _)), "tiny" | "smallest_normal") => Value::Float(2f64.powi(e)),
        (Some((m, e, _, _)), "smallest_subnormal") => Value::Float(2f64.powi(e - m)),
        (Some((_, _, _, r)), "resolution") => Value::Float(r),
        // int64's 2⁶³ − 1 is 2⁶³ in float64, which the conversion saturates back.
        (None, "max" | "min") => {
            let (lo, hi) = dtype.int_range().expect("an integer dtype");
            Value::Int((if name == "max" { hi } else { lo }) as i64)
        }
        _ => {
            let which = if dtype.is_float() { "finfo: eps, epsneg, max, min, tiny, smallest_normal, smallest_subnormal, resolution, bits, dtype" } else { "iinfo: max, min, bits, dtype" };
            return Err(Diagnostic::error(Code::UnsupportedSyntax, format!("`.{name}` of the {dtype} type's limits is not supported"))
                .label(name_range, "not supported")
                .help(format!("supported attributes of {which}")));
        }
    };
    Ok(v)
}

fn fold_compare(op: CmpOp, a: f64, b: f64) -> bool {
    match op {
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
    }
}

/// Python arithmetic on two numbers (ints stay ints where Python keeps them).
fn fold_binop(op: Operator, a: &Value, b: &Value, range: TextRange) -> Result<Value> {
    let overflow = || Diagnostic::error(Code::BadValue, "integer overflow").label(range, "does not fit in 64 bits");
    if let (Some(x), Some(y)) = (a.int(), b.int()) {
        let v = match op {
            Operator::Add => x.checked_add(y).ok_or_else(overflow)?,
            Operator::Sub => x.checked_sub(y).ok_or_else(overflow)?,
            Operator::Mult => x.checked_mul(y).ok_or_else(overflow)?,
            Operator::Pow if y >= 0 => x.checked_pow(y.try_into().map_err(|_| overflow())?).ok_or_else(overflow)?,
            Operator::FloorDiv | Operator::Mod if y == 0 => {
                return Err(Diagnostic::error(Code::BadValue, "integer division by zero").label(range, "here"))
            }
            Operator::FloorDiv | Operator::Mod => {
                let q = x.checked_div_euclid(y).ok_or_else(overflow)? - if x.rem_euclid(y) != 0 && y < 0 { 1 } else { 0 };
                if op == Operator::FloorDiv { q } else { x - y * q }
            }
            Operator::BitAnd => x & y,
            Operator::BitOr => x | y,
            Operator::BitXor => x ^ y,
            Operator::LShift | Operator::RShift if y < 0 => {
                return Err(Diagnostic::error(Code::BadValue, "negative shift count").label(range, "Python raises ValueError here"))
            }
            // Python's integers do not overflow; a shift whose result leaves 64 bits is refused.
            Operator::LShift if x == 0 => 0,
            Operator::LShift if y >= 63 => return Err(overflow()),
            Operator::LShift => x.checked_mul(1i64 << y).ok_or_else(overflow)?,
            Operator::RShift => x >> y.min(63),
            Operator::MatMult => {
                return Err(Diagnostic::error(Code::UnsupportedSyntax, format!("`{}` on numbers is not supported", op.as_str())).label(range, "here"))
            }
            Operator::Div | Operator::Pow => return fold_float(op, x as f64, y as f64, range),
        };
        return Ok(Value::Int(v));
    }
    fold_float(op, a.number().unwrap(), b.number().unwrap(), range)
}

fn fold_float(op: Operator, x: f64, y: f64, range: TextRange) -> Result<Value> {
    Ok(Value::Float(match op {
        Operator::Add => x + y,
        Operator::Sub => x - y,
        Operator::Mult => x * y,
        Operator::Div if y == 0.0 => {
            return Err(Diagnostic::error(Code::BadValue, "division by zero").label(range, "Python raises ZeroDivisionError here"))
        }
        Operator::Div => x / y,
        Operator::Pow => x.powf(y),
        Operator::FloorDiv if y != 0.0 => (x / y).floor(),
        Operator::Mod if y != 0.0 => x - y * (x / y).floor(),
        _ => {
            return Err(Diagnostic::error(Code::UnsupportedSyntax, format!("`{}` on these numbers is not supported", op.as_str())).label(range, "here"))
        }
    }))
}
