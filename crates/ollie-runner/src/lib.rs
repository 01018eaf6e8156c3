//! Compiling C kernels and running them in a child process: buffers travel through shared
//! memory, and whatever the kernel does comes back as an [`Outcome`], never as a crash of ollie.
//!
//! The child is ollie's own executable re-run with the hidden `__sandbox` command (see
//! [`sandbox_main`]); the kernel is only ever loaded there.

mod compile;
mod layout;
mod machine;
mod outcome;
mod quiet;
mod run;
mod sandbox;

pub use compile::{cache_root, CompileStop, Compiler, Compiled};
pub use machine::{available_disk, available_memory, data_cache_bytes, native_float_lanes, CacheBandwidth, Ceiling, Floor, Machine, MachineConfig, Probe, Source, PROBE_MARGIN};
pub use outcome::{first_compile_error, syscall_name, Outcome};
pub use layout::BufferSpec;
pub use run::{checksum, checksum128, evicted_bytes, eviction_seconds, Call, OutputData, Runner, RunnerError, Session, POISON_BF16, POISON_F16, POISON_F32, POISON_F64};
pub use sandbox::{sandbox_main, SANDBOX_COMMAND};
