//! Loop nests: the IR between the tensor graph and C, the naive lowering that produces the
//! baseline kernel, and C emission.

mod emit;
mod invariants;
mod ir;
mod lower;
mod schedule;
mod text;

pub use invariants::{check, LoopError};
pub use emit::{emit_c, half_conversions, prototype, vector_math};
pub use ir::{Affine, Buffer, BufferId, BufferKind, Dynamic, Expr, Keep, LoopKind, LoopNest, Stmt, VarId};
pub use lower::{lower, strides, LowerError};
pub use schedule::{apply_step, Schedule, ScheduleError, Step};
pub use text::{parse, ParseError};
