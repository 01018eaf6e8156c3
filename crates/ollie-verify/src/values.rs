//! `Values`: numbers as a buffer of the kernel ABI holds them, in float32 or float64 — an input
//! set's parameters, a target's reference and bounds.

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Values {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
        }
    }

    /// The bytes of one value.
    pub fn width(&self) -> usize {
        match self {
            Values::F32(_) => 4,
            Values::F64(_) => 8,
        }
    }

    /// The values' bytes, in the machine's (little-endian) order, as buffers and files hold them.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Values::F32(v) => bytemuck::cast_slice(v),
            Values::F64(v) => bytemuck::cast_slice(v),
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
