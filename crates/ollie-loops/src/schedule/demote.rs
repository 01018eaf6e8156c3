//! `demote t`: a float64 temporary of a kernel that computes in float32 is stored in float32.
//! Such a temporary holds what a float64 node of the spec computed (numpy's promotion: a mask
//! made by `np.full`, a Python float array), but the kernel's arithmetic and its math functions
//! are float32 already: the temporary only keeps each value's float32 rounding error from
//! growing by one more rounding, at twice the bytes, and keeps the loops touching it out of
//! vectors (which hold the kernel's compute type). Demoted, each stored value is rounded to
//! float32 once more: values change, as with `accumulators`, and the verifier judges whether the
//! outputs stay within their bounds.

use ollie_graph::DType;

use super::ScheduleError;
use crate::ir::{BufferKind, LoopNest};

pub(crate) fn demote(nest: &mut LoopNest, buffer: &str, step: &super::Step) -> Result<(), ScheduleError> {
    let illegal = |reason: &str| ScheduleError::Illegal { step: step.to_string(), reason: reason.to_string() };
    if nest.computes_in_f64() {
        return Err(illegal("the kernel computes in double"));
    }
    let b = nest.buffers.iter_mut().find(|b| b.name == buffer && b.kind == BufferKind::Temp).ok_or_else(|| illegal(&format!("there is no temporary `{buffer}`")))?;
    if b.dtype != DType::F64 {
        return Err(illegal(&format!("`{buffer}` is not float64")));
    }
    b.dtype = DType::F32;
    Ok(())
}
