//! `Values`: numbers as a buffer of the kernel ABI holds them, in float32 or float64 (or, for
//! an input set's 16-bit parameters, as float16 or bfloat16 bits) — an input set's parameters, a
//! target's reference and bounds.

use ollie_graph::DType;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Values {
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// float16 bits.
    F16(Vec<u16>),
    /// bfloat16 bits.
    BF16(Vec<u16>),
}

impl Values {
    /// `values` as a buffer of `dtype` holds them, each rounded to it (integer and boolean
    /// buffers are float32 in the ABI).
    pub fn of(dtype: DType, values: impl Iterator<Item = f64>) -> Values {
        match dtype {
            DType::F64 => Values::F64(values.collect()),
            DType::F16 => Values::F16(values.map(|x| dtype.half_bits(x)).collect()),
            DType::BF16 => Values::BF16(values.map(|x| dtype.half_bits(x)).collect()),
            _ => Values::F32(values.map(|x| x as f32).collect()),
        }
    }

    /// The dtype whose buffer holds them as these do.
    pub fn dtype(&self) -> DType {
        match self {
            Values::F32(_) => DType::F32,
            Values::F64(_) => DType::F64,
            Values::F16(_) => DType::F16,
            Values::BF16(_) => DType::BF16,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::F16(v) | Values::BF16(v) => v.len(),
        }
    }

    /// The bytes of one value.
    pub fn width(&self) -> usize {
        match self {
            Values::F32(_) => 4,
            Values::F64(_) => 8,
            Values::F16(_) | Values::BF16(_) => 2,
        }
    }

    /// Value `i`, exactly.
    pub fn get(&self, i: usize) -> f64 {
        match self {
            Values::F32(v) => f64::from(v[i]),
            Values::F64(v) => v[i],
            Values::F16(v) | Values::BF16(v) => self.dtype().half_value(v[i]),
        }
    }

    /// Sets value `i` to `x` rounded to the values' dtype.
    pub fn set(&mut self, i: usize, x: f64) {
        match self {
            Values::F32(v) => v[i] = x as f32,
            Values::F64(v) => v[i] = x,
            Values::F16(v) => v[i] = DType::F16.half_bits(x),
            Values::BF16(v) => v[i] = DType::BF16.half_bits(x),
        }
    }

    /// Values `span`, exactly, in float64.
    pub fn to_f64(&self, span: std::ops::Range<usize>) -> Vec<f64> {
        match self {
            Values::F64(v) => v[span].to_vec(),
            _ => span.map(|i| self.get(i)).collect(),
        }
    }

    /// The values' bytes, in the machine's (little-endian) order, as buffers and files hold them.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Values::F32(v) => bytemuck::cast_slice(v),
            Values::F64(v) => bytemuck::cast_slice(v),
            Values::F16(v) | Values::BF16(v) => bytemuck::cast_slice(v),
        }
    }
}

/// Little-endian `bytes` as values of `T`: in place where they are aligned for it (shared
/// buffers are), else copied.
pub(crate) fn cast<T: bytemuck::Pod>(bytes: &[u8]) -> std::borrow::Cow<'_, [T]> {
    match bytemuck::try_cast_slice(bytes) {
        Ok(values) => std::borrow::Cow::Borrowed(values),
        Err(_) => std::borrow::Cow::Owned(bytes.chunks_exact(std::mem::size_of::<T>()).map(bytemuck::pod_read_unaligned).collect()),
    }
}

// Buffers and files hold little-endian numbers; `bytes` hands out the machine's.
const _: () = assert!(cfg!(target_endian = "little"), "ollie runs on little-endian machines");
