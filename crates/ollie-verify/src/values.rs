//! `Values`: numbers as a buffer of the kernel ABI holds them, in float32 or float64 (or, for
//! an input set's 16-bit and integer parameters, as float16 or bfloat16 bits, int32 or int64) —
//! an input set's parameters, a target's reference and bounds.

use ollie_graph::DType;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Values {
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// float16 bits.
    F16(Vec<u16>),
    /// bfloat16 bits.
    BF16(Vec<u16>),
    /// An integer parameter's values.
    I8(Vec<i8>),
    U8(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

impl Values {
    /// `values` as a buffer of `dtype` holds them, each rounded to it (a boolean parameter is a
    /// byte, 0 or 1, as numpy's; an integer one truncates, saturating).
    pub fn of(dtype: DType, values: impl Iterator<Item = f64>) -> Values {
        match dtype {
            DType::F64 => Values::F64(values.collect()),
            DType::F16 => Values::F16(values.map(|x| dtype.half_bits(x)).collect()),
            DType::BF16 => Values::BF16(values.map(|x| dtype.half_bits(x)).collect()),
            DType::I8 => Values::I8(values.map(|x| x as i8).collect()),
            DType::U8 => Values::U8(values.map(|x| x as u8).collect()),
            DType::Bool => Values::U8(values.map(|x| u8::from(x != 0.0)).collect()),
            DType::I32 => Values::I32(values.map(|x| x as i32).collect()),
            DType::I64 => Values::I64(values.map(|x| x as i64).collect()),
            DType::F32 => Values::F32(values.map(|x| x as f32).collect()),
        }
    }

    /// The dtype whose buffer holds them as these do.
    pub fn dtype(&self) -> DType {
        match self {
            Values::F32(_) => DType::F32,
            Values::F64(_) => DType::F64,
            Values::F16(_) => DType::F16,
            Values::BF16(_) => DType::BF16,
            Values::I8(_) => DType::I8,
            Values::U8(_) => DType::U8,
            Values::I32(_) => DType::I32,
            Values::I64(_) => DType::I64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::F16(v) | Values::BF16(v) => v.len(),
            Values::I8(v) => v.len(),
            Values::U8(v) => v.len(),
            Values::I32(v) => v.len(),
            Values::I64(v) => v.len(),
        }
    }

    /// The bytes of one value.
    pub fn width(&self) -> usize {
        self.dtype().size()
    }

    /// Value `i`, exactly.
    pub fn get(&self, i: usize) -> f64 {
        match self {
            Values::F32(v) => f64::from(v[i]),
            Values::F64(v) => v[i],
            Values::F16(v) | Values::BF16(v) => self.dtype().half_value(v[i]),
            Values::I8(v) => f64::from(v[i]),
            Values::U8(v) => f64::from(v[i]),
            Values::I32(v) => f64::from(v[i]),
            Values::I64(v) => v[i] as f64,
        }
    }

    /// Sets value `i` to `x` rounded to the values' dtype.
    pub fn set(&mut self, i: usize, x: f64) {
        match self {
            Values::F32(v) => v[i] = x as f32,
            Values::F64(v) => v[i] = x,
            Values::F16(v) => v[i] = DType::F16.half_bits(x),
            Values::BF16(v) => v[i] = DType::BF16.half_bits(x),
            Values::I8(v) => v[i] = x as i8,
            Values::U8(v) => v[i] = x as u8,
            Values::I32(v) => v[i] = x as i32,
            Values::I64(v) => v[i] = x as i64,
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
            Values::I8(v) => bytemuck::cast_slice(v),
            Values::U8(v) => v,
            Values::I32(v) => bytemuck::cast_slice(v),
            Values::I64(v) => bytemuck::cast_slice(v),
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
