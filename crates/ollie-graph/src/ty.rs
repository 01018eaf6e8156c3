//! Element types and static tensor types (`f32[4,128]`).

use std::fmt;

/// Element type of a tensor. The reference evaluates every dtype in float64; the dtype records
/// what numpy would produce and what the kernel ABI delivers. `F16` (numpy's float16) and `BF16`
/// (bfloat16, as `ml_dtypes` gives numpy) are storage formats: kernels compute them in float32
/// and round where they store one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F32,
    F64,
    I64,
    Bool,
    F16,
    BF16,
    /// numpy's int32, as parameters (indices, labels) hold it.
    I32,
    /// numpy's int8 and uint8: quantized weights and activations, images.
    I8,
    U8,
}

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I64 => "i64",
            DType::Bool => "bool",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::I8 => "i8",
            DType::U8 => "u8",
        }
    }

    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "f32" => DType::F32,
            "f64" => DType::F64,
            "i64" => DType::I64,
            "bool" => DType::Bool,
            "f16" => DType::F16,
            "bf16" => DType::BF16,
            "i32" => DType::I32,
            "i8" => DType::I8,
            "u8" => DType::U8,
            _ => return None,
        })
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }

    /// A 16-bit float: stored in 16 bits, computed in float32.
    pub fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// An integer dtype (`i8`, `u8`, `i32`, `i64`).
    pub fn is_int(self) -> bool {
        matches!(self, DType::I8 | DType::U8 | DType::I32 | DType::I64)
    }

    /// An integer or boolean dtype: exact values, which an input holds as themselves (a boolean
    /// as a byte, 0 or 1).
    pub fn is_integral(self) -> bool {
        self.is_int() || self == DType::Bool
    }

    /// An 8-bit integer dtype, whose arithmetic wraps around in numpy.
    pub fn is_byte(self) -> bool {
        matches!(self, DType::I8 | DType::U8)
    }

    /// The dtype numpy sums, multiplies and accumulates this one in: booleans and integers
    /// narrower than 64 bits in its default integer (int64), others in themselves.
    pub fn accumulated(self) -> DType {
        match self {
            DType::Bool | DType::I8 | DType::U8 | DType::I32 => DType::I64,
            d => d,
        }
    }

    /// The values an integer dtype holds, `(min, max)`.
    pub fn int_range(self) -> Option<(f64, f64)> {
        match self {
            DType::I8 => Some((-128.0, 127.0)),
            DType::U8 => Some((0.0, 255.0)),
            DType::I32 => Some((i32::MIN as f64, i32::MAX as f64)),
            DType::I64 => Some((i64::MIN as f64, i64::MAX as f64)),
            _ => None,
        }
    }

    /// Bytes of one element stored in this dtype: a parameter's as the kernel ABI passes it
    /// (`int32_t`, `int64_t`, ...). A result is stored in [`DType::result`].
    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
        }
    }

    /// The dtype the kernel ABI delivers a result (or keeps a temporary) of this dtype in:
    /// integer and boolean values are float32 there (`docs/abi.md`).
    pub fn result(self) -> DType {
        match self {
            DType::I8 | DType::U8 | DType::I32 | DType::I64 | DType::Bool => DType::F32,
            d => d,
        }
    }

    /// The unit roundoff of a float dtype (half an ulp of 1): 2⁻⁵³, 2⁻²⁴, 2⁻¹¹, 2⁻⁸.
    pub fn unit_roundoff(self) -> f64 {
        match self {
            DType::F64 => f64::EPSILON / 2.0,
            DType::F16 => 1.0 / 2048.0,
            DType::BF16 => 1.0 / 256.0,
            _ => f64::from(f32::EPSILON) / 2.0,
        }
    }

    /// `x` rounded to the nearest value of this dtype (ties to even; past the largest finite
    /// value, infinity), as numpy's `astype` rounds; integer and boolean dtypes as casts do.
    pub fn round(self, x: f64) -> f64 {
        match self {
            DType::F64 => x,
            DType::F32 => f64::from(x as f32),
            DType::F16 | DType::BF16 => self.half_value(self.half_bits(x)),
            DType::I64 | DType::I32 => x.trunc(),
            // numpy on x86 converts through int32 (out of its range: its smallest value) and
            // keeps the low byte: 300.0 is 44 as int8, -1.7 is 255 as uint8.
            DType::I8 | DType::U8 => {
                let t = x.trunc();
                let i = if t.is_nan() || t.abs() >= 2f64.powi(31) { i32::MIN } else { t as i32 };
                if self == DType::I8 { f64::from(i as i8) } else { f64::from(i as u8) }
            }
            DType::Bool => (x != 0.0) as u8 as f64,
        }
    }

    /// The bits of `x` stored as this 16-bit float, rounded to nearest even: numpy rounds float64
    /// to float16 directly, ml_dtypes rounds to bfloat16 through float32. Every 16-bit value
    /// ollie stores (inputs, files, buffers) is rounded here.
    pub fn half_bits(self, x: f64) -> u16 {
        match self {
            DType::F16 => half::f16::from_f64(x).to_bits(),
            DType::BF16 => half::bf16::from_f32(x as f32).to_bits(),
            _ => panic!("{self} is not a 16-bit float"),
        }
    }

    /// The value of 16-bit float `bits` of this dtype (exact).
    pub fn half_value(self, bits: u16) -> f64 {
        match self {
            DType::F16 => half::f16::from_bits(bits).to_f64(),
            DType::BF16 => half::bf16::from_bits(bits).to_f64(),
            _ => panic!("{self} is not a 16-bit float"),
        }
    }

    /// numpy's promotion between two array dtypes, restricted to the dtypes ollie knows.
    pub fn promote(self, other: DType) -> DType {
        use DType::*;
        match (self, other) {
            (F64, _) | (_, F64) => F64,
            (F32, _) | (_, F32) => F32,
            // ml_dtypes: float16 with bfloat16 is float32, as neither holds the other.
            (F16, BF16) | (BF16, F16) => F32,
            (F16, _) | (_, F16) => F16,
            (BF16, _) | (_, BF16) => BF16,
            (I64, _) | (_, I64) => I64,
            (I32, _) | (_, I32) => I32,
            // numpy's int16, which holds both; no kernel stores one.
            (I8, U8) | (U8, I8) => I32,
            (I8, _) | (_, I8) => I8,
            (U8, _) | (_, U8) => U8,
            (Bool, Bool) => Bool,
        }
    }

    /// The dtype of a float-valued function (`exp`, `/`, `mean`) applied to this dtype.
    pub fn to_float(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::F64
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A tensor's static type: element type and row-major shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl TensorType {
    pub fn new(dtype: DType, shape: Vec<usize>) -> TensorType {
        TensorType { dtype, shape }
    }

    pub fn scalar(dtype: DType) -> TensorType {
        TensorType { dtype, shape: Vec::new() }
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    pub fn num_elements(&self) -> usize {
        self.shape.iter().product()
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.dtype, join(&self.shape))
    }
}

pub(crate) fn join<T: fmt::Display>(items: &[T]) -> String {
    items.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}
