//! Running a compiled kernel in a child process: buffers in a shared memory file, a time limit,
//! and the child's fate turned into an [`Outcome`].

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ndarray::{ArrayD, IxDyn};
use ollie_graph::{DType, Tensor};
use wait_timeout::ChildExt;

use crate::outcome::Outcome;

/// A buffer of the kernel ABI: element type (f32 unless f64) and shape.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferSpec {
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl BufferSpec {
    pub(crate) fn element_size(&self) -> usize {
        if self.dtype == DType::F64 { 8 } else { 4 }
    }

    pub(crate) fn bytes(&self) -> usize {
        self.shape.iter().product::<usize>() * self.element_size()
    }
}

/// ollie's own failures while running a kernel (as opposed to the kernel's, which are outcomes).
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    #[error("input {index} has shape {actual:?}, the kernel takes {expected:?}")]
    InputShape { index: usize, expected: Vec<usize>, actual: Vec<usize> },
}

/// Bytes before the first buffer: the worker writes the call's duration there (bytes 0..8),
/// then [`RETURNED`] (bytes 8..16) once the kernel has returned.
pub(crate) const HEADER: usize = 64;
/// Proof that the kernel returned to the worker (rather than, say, calling `exit`).
pub(crate) const RETURNED: u64 = 0x6f6c_6c69_6564_6f6e;
/// Buffer alignment, as the ABI promises.
pub(crate) const ALIGN: usize = 64;

/// Runs kernels in child processes of `program args... __worker ...`.
#[derive(Debug, Clone)]
pub struct Runner {
    /// The executable that serves as the worker (ollie itself).
    pub program: PathBuf,
    /// Arguments that select the worker command.
    pub args: Vec<String>,
    /// How long one run may take before the child is killed.
    pub timeout: Duration,
}

impl Runner {
    /// A runner that re-runs the current executable as the worker.
    pub fn current_exe(timeout: Duration) -> std::io::Result<Runner> {
        Ok(Runner { program: std::env::current_exe()?, args: vec![crate::WORKER_COMMAND.to_string()], timeout })
    }

    /// Calls `symbol` of `library` once in a child process on `inputs`; outputs start as NaN.
    pub fn run(&self, library: &Path, symbol: &str, inputs: &[(BufferSpec, &Tensor)], outputs: &[BufferSpec]) -> Result<Outcome, RunnerError> {
        for (index, (spec, t)) in inputs.iter().enumerate() {
            if t.shape() != spec.shape.as_slice() {
                return Err(RunnerError::InputShape { index, expected: spec.shape.clone(), actual: t.shape().to_vec() });
            }
        }
        let specs: Vec<&BufferSpec> = inputs.iter().map(|(s, _)| s).chain(outputs).collect();
        let mut offsets = Vec::new();
        let mut end = HEADER;
        for s in &specs {
            offsets.push(end);
            end += s.bytes().div_ceil(ALIGN).max(1) * ALIGN;
        }
        let fd = rustix::fs::memfd_create("ollie-buffers", rustix::fs::MemfdFlags::empty())
            .map_err(|e| RunnerError::Io("creating shared memory".into(), e.into()))?;
        let file = std::fs::File::from(fd);
        file.set_len(end as u64).map_err(|e| RunnerError::Io("sizing shared memory".into(), e))?;
        // SAFETY: the mapping is of a file only this process and its child use.
        let mut map = unsafe { memmap2::MmapMut::map_mut(&file) }.map_err(|e| RunnerError::Io("mapping shared memory".into(), e))?;
        for ((spec, tensor), &offset) in inputs.iter().zip(&offsets) {
            write_tensor(&mut map[offset..offset + spec.bytes()], spec.dtype, tensor);
        }
        for (spec, &offset) in outputs.iter().zip(&offsets[inputs.len()..]) {
            write_tensor(&mut map[offset..offset + spec.bytes()], spec.dtype, &ArrayD::from_elem(IxDyn(&spec.shape), f64::NAN));
        }
        let layout: Vec<String> = specs
            .iter()
            .zip(&offsets)
            .map(|(s, o)| format!("{o}:{}:{}", s.bytes(), if s.dtype == DType::F64 { "f64" } else { "f32" }))
            .collect();
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .arg("--fd")
            .arg(file.as_raw_fd().to_string())
            .arg("--lib")
            .arg(library)
            .arg("--symbol")
            .arg(symbol)
            .arg("--buffers")
            .arg(layout.join(","))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| RunnerError::Io(format!("starting the worker {}", self.program.display()), e))?;
        let mut stderr = child.stderr.take().expect("piped");
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.by_ref().take(64 * 1024).read_to_string(&mut text);
            text
        });
        let started = Instant::now();
        let status = child.wait_timeout(self.timeout).map_err(|e| RunnerError::Io("waiting for the worker".into(), e))?;
        let Some(status) = status else {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Outcome::Timeout { limit: self.timeout });
        };
        let log = reader.join().unwrap_or_default();
        tracing::debug!(elapsed = ?started.elapsed(), ?status, "worker finished");
        if let Some(signal) = status.signal() {
            return Ok(Outcome::Crashed { signal });
        }
        if !status.success() {
            let reason = log.trim();
            let reason = if reason.is_empty() { format!("the worker exited with {status}") } else { reason.to_string() };
            return Ok(Outcome::Failed { reason });
        }
        if u64::from_le_bytes(map[8..16].try_into().expect("8 bytes")) != RETURNED {
            return Ok(Outcome::Failed { reason: "the kernel ended its process instead of returning".into() });
        }
        let nanos = u64::from_le_bytes(map[0..8].try_into().expect("8 bytes"));
        let outputs = outputs
            .iter()
            .zip(&offsets[inputs.len()..])
            .map(|(spec, &offset)| read_tensor(&map[offset..offset + spec.bytes()], spec))
            .collect();
        Ok(Outcome::Ran { outputs, elapsed: Duration::from_nanos(nanos) })
    }
}

fn write_tensor(bytes: &mut [u8], dtype: DType, tensor: &Tensor) {
    if dtype == DType::F64 {
        for (chunk, x) in bytes.chunks_exact_mut(8).zip(tensor.iter()) {
            chunk.copy_from_slice(&x.to_le_bytes());
        }
    } else {
        for (chunk, x) in bytes.chunks_exact_mut(4).zip(tensor.iter()) {
            chunk.copy_from_slice(&(*x as f32).to_le_bytes());
        }
    }
}

fn read_tensor(bytes: &[u8], spec: &BufferSpec) -> Tensor {
    let values: Vec<f64> = if spec.dtype == DType::F64 {
        bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()
    } else {
        bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect()
    };
    ArrayD::from_shape_vec(IxDyn(&spec.shape), values).expect("the layout matches the shape")
}
