//! ollie's tensor graph IR: typed ids, ops with type rules, a text form that reads back, an
//! invariant checker, and the float64 reference interpreter that serves as the oracle.

mod chunk;
mod einsum;
mod error_bound;
mod graph;
mod index_range;
mod op;
mod reference;
mod text;
mod ty;
mod wellformed;
mod work;

pub use wellformed::check;
pub use chunk::{evaluate_with_error_bounds_chunked, Chunks, CHUNK_ELEMENTS};
pub use work::{bytes, flops, Work};
pub use einsum::EinsumSpec;
pub use graph::{Graph, GraphError, Node, NodeId, Param};
pub use index_range::{IndexRange, PLAIN_INTS};
pub use error_bound::{evaluate_with_error_bounds, ErrorBound};
pub use op::{broadcast_shapes, broadcasts_to, BinaryOp, CmpOp, GatherAxis, Op, ReduceOp, SliceAxis, UnaryOp};
pub use reference::{evaluate, first_extreme, gather_index, index_positions, sorted_order, Tensor};
pub use text::parse;
pub use ty::{DType, TensorType};
