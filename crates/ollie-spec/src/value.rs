//! Values the spec interpreter computes with: graph tensors and the Python values around them.

use ollie_graph::{DType, NodeId};

/// A Python value during interpretation. Tensors are graph nodes; everything else is known
/// statically and folded (shapes, axes, constants, dtypes).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Tensor(NodeId),
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A tuple or list.
    Tuple(Vec<Value>),
    Str(String),
    None,
    Ellipsis,
    DType(DType),
    /// The numpy module (`np`).
    Numpy,
    /// Python's `math` module.
    Math,
    /// The `ml_dtypes` module (`ml_dtypes.bfloat16`).
    MlDtypes,
    /// The `scipy` package (`scipy.special`).
    Scipy,
    /// The `scipy.special` module.
    ScipySpecial,
    /// A function of `scipy.special` (`from scipy.special import softmax`).
    Special(&'static str),
    /// A numpy function used as a value (`act = np.tanh`, `np.maximum.reduce`).
    NumpyFunction(&'static str),
    /// A function of the spec's module used as a value.
    Function(String),
    /// `np.finfo(dtype)` or `np.iinfo(dtype)`: the dtype's limits as attributes.
    TypeInfo(DType),
    /// A lambda: where it is written, and the closure of names it sees.
    Lambda { at: ruff_text_size::TextRange, env: usize },
}

impl Value {
    /// What the value is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Tensor(_) => "array",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Bool(_) => "bool",
            Value::Tuple(_) => "tuple",
            Value::Str(_) => "string",
            Value::None => "None",
            Value::Ellipsis => "Ellipsis",
            Value::DType(_) => "dtype",
            Value::TypeInfo(_) => "type-info object",
            Value::Numpy | Value::Math | Value::MlDtypes | Value::Scipy | Value::ScipySpecial => "module",
            Value::Special(_) | Value::NumpyFunction(_) | Value::Function(_) | Value::Lambda { .. } => "function",
        }
    }

    /// The kind with its article, for messages: "an array", "a float".
    pub fn a_kind(&self) -> String {
        let kind = self.kind();
        let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
        format!("{article} {kind}")
    }

    /// The value of a Python number, if this is one.
    pub fn number(&self) -> Option<f64> {
        match *self {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            Value::Bool(b) => Some(b as u8 as f64),
            _ => None,
        }
    }

    /// The integer, if this is an int or bool.
    pub fn int(&self) -> Option<i64> {
        match *self {
            Value::Int(i) => Some(i),
            Value::Bool(b) => Some(b as i64),
            _ => None,
        }
    }
}
