//! Running a compiled kernel in a locked-down child process: buffers in a shared memory file,
//! one call per command, a time limit per call, and the child's fate turned into an [`Outcome`].

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use ndarray::{ArrayD, IxDyn};
use ollie_graph::{DType, Tensor};
use wait_timeout::ChildExt;

use crate::layout::{header, BufferSpec, Layout, CANARY, RETURNED};
use crate::outcome::Outcome;
use crate::sandbox::{EXIT_FAULT, EXIT_FORBIDDEN, EXIT_SIGNAL_BASE, SHARED_FD};

/// The float32 NaN outputs are poisoned with (a quiet NaN with payload 0x450f0f).
pub const POISON_F32: u32 = 0x7fc5_0f0f;
/// The float64 NaN outputs are poisoned with.
pub const POISON_F64: u64 = 0x7ff8_0000_dead_beef;
/// The float16 and bfloat16 NaNs outputs are poisoned with: signaling NaNs, which no
/// arithmetic or conversion produces (they come out quieted).
pub const POISON_F16: u16 = 0x7d5a;
pub const POISON_BF16: u16 = 0x7fa5;

/// ollie's own failures while running a kernel (as opposed to the kernel's, which are outcomes).
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    #[error("input {index} has shape {actual:?}, the kernel takes {expected:?}")]
    InputShape { index: usize, expected: Vec<usize>, actual: Vec<usize> },
    #[error("input {index} has {actual} bytes, the kernel's buffer {expected}")]
    InputBytes { index: usize, expected: usize, actual: usize },
    #[error("the kernel takes {0} buffers; at most {max} are supported", max = crate::sandbox::MAX_BUFFERS)]
    TooManyBuffers(usize),
}

/// Runs kernels in child processes of `program args...` (ollie itself as `ollie __sandbox`).
#[derive(Debug, Clone)]
pub struct Runner {
    /// The executable that serves as the sandbox (ollie itself).
    pub program: PathBuf,
    /// Arguments that select the sandbox command.
    pub args: Vec<String>,
    /// How long one call may take before the child is killed.
    pub timeout: Duration,
}

/// Buffers this many times the last-level cache or larger are pushed out of it by reading other
/// memory rather than flushed line by line (see [`Session::evict`]).
const SCRUB_ABOVE: usize = 4;

/// The bytes [`Session::evict`] goes through before a timed call of a kernel whose buffers hold
/// `buffers` bytes: flushed, or read past them.
pub fn evicted_bytes(buffers: usize) -> usize {
    let llc = crate::machine::last_level_cache_bytes() as usize;
    if buffers > SCRUB_ABOVE * llc { 2 * llc } else { buffers }
}

/// Whether the CPU has `clflushopt`, the flush that need not wait for the one before it: 64 MB
/// in 3 ms where `clflush` took 180 ms (a Sapphire Rapids VM), which was most of the time a
/// search spent timing a memory-bound kernel of a few milliseconds.
#[cfg(target_arch = "x86_64")]
fn has_clflushopt() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        // Leaf 7 is asked for only where the highest leaf reaches it.
        let max = std::arch::x86_64::__cpuid(0).eax;
        max >= 7 && std::arch::x86_64::__cpuid_count(7, 0).ebx & (1 << 23) != 0
    })
}

/// A conservative guess of the wall seconds [`Session::evict`] takes for buffers of `buffers`
/// bytes: the bytes it goes through at 10 GB/s with `clflushopt` (measured 20 GB/s), at 1 GB/s
/// with `clflush` only (35–180 ms for 64 MB on Intel VMs).
pub fn eviction_seconds(buffers: usize) -> f64 {
    #[cfg(target_arch = "x86_64")]
    let rate = if has_clflushopt() { 10e9 } else { 1e9 };
    #[cfg(not(target_arch = "x86_64"))]
    let rate = f64::INFINITY;
    evicted_bytes(buffers) as f64 / rate
}

/// Reads one word of every cache line of `bytes` of memory kept for the purpose (made once),
/// so that whatever else the last-level cache held is gone.
fn scrub(bytes: usize) {
    static SCRATCH: std::sync::OnceLock<Vec<u64>> = std::sync::OnceLock::new();
    let scratch = SCRATCH.get_or_init(|| vec![1u64; bytes / 8]);
    let mut sum = 0u64;
    for line in scratch.chunks(8) {
        // SAFETY: a read of a live element; volatile so that the reads are made.
        sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(&line[0]) });
    }
    std::hint::black_box(sum);
}

/// How long a sandbox may take to start and load its kernel, at least (a call's own limit may be
/// far shorter).
const LOAD_TIME: Duration = Duration::from_secs(10);

/// The address space a sandbox may map (kernel temporaries included): 16 GiB.
const ADDRESS_SPACE: u64 = 16 << 30;

impl Runner {
    /// A runner whose sandbox is `program __sandbox` (`program` being an ollie executable).
    pub fn new(program: impl Into<PathBuf>, timeout: Duration) -> Runner {
        Runner { program: program.into(), args: vec![crate::SANDBOX_COMMAND.to_string()], timeout }
    }

    /// A runner that re-runs the current executable as the sandbox.
    pub fn current_exe(timeout: Duration) -> std::io::Result<Runner> {
        Ok(Runner::new(std::env::current_exe()?, timeout))
    }

    /// Calls `symbol` of `library` once in a fresh child process on `inputs`; outputs start as
    /// NaN.
    pub fn run(&self, library: &Path, symbol: &str, inputs: &[(BufferSpec, &Tensor)], outputs: &[BufferSpec]) -> Result<Outcome, RunnerError> {
        let specs: Vec<BufferSpec> = inputs.iter().map(|(s, _)| s.clone()).collect();
        let mut session = match self.start(library, symbol, &specs, outputs)? {
            Ok(s) => s,
            Err(outcome) => return Ok(outcome),
        };
        for (k, (_, t)) in inputs.iter().enumerate() {
            session.set_input(k, t)?;
        }
        let outcome = match session.call()? {
            Call::Returned { elapsed } => match session.damaged_canary() {
                Some(buffer) => Outcome::OutOfBounds { buffer, write_to_input: false },
                None => Outcome::Ran { outputs: (0..outputs.len()).map(|k| session.output(k)).collect(), elapsed },
            },
            Call::Died(outcome) => outcome,
        };
        session.finish();
        Ok(outcome)
    }

    /// Starts a sandbox for `symbol` of `library` with these buffers (outputs poisoned with NaN).
    /// `Ok(Err(outcome))` when the kernel cannot even be loaded. OpenMP threads sleep between
    /// calls (`OMP_WAIT_POLICY=PASSIVE`): nothing of the sandbox runs while it is not called.
    /// The sandbox is killed when the thread that started it ends (`PR_SET_PDEATHSIG`).
    pub fn start(&self, library: &Path, symbol: &str, inputs: &[BufferSpec], outputs: &[BufferSpec]) -> Result<Result<Session, Outcome>, RunnerError> {
        self.start_with(library, symbol, inputs, outputs, Some("PASSIVE"), false)
    }

    /// [`Runner::start`] for timing: libgomp's default wait policy (threads spin a while after a
    /// parallel region before they sleep), as in a program calling the kernel again and again;
    /// the caller stops the sandbox between calls ([`Session::pause`]) so that its spinning never
    /// takes a core from anything else (a team spinning after its call slowed whichever kernel
    /// ran next on 2 cores); continued, the team resumes warm (a team put to sleep after every
    /// call, `PASSIVE`, pays hundreds of microseconds to wake on these virtual machines), and its
    /// threads are pinned one to a CPU (unpinned, two could share one CPU, spinning by turns).
    /// Every call starts with the kernel's buffers out of the caches ([`Session::evict`]), and
    /// its inputs lie where numpy's large arrays do (see `layout.rs`).
    pub fn start_for_timing(&self, library: &Path, symbol: &str, inputs: &[BufferSpec], outputs: &[BufferSpec]) -> Result<Result<Session, Outcome>, RunnerError> {
        let mut started = self.start_with(library, symbol, inputs, outputs, None, true)?;
        if let Ok(s) = &mut started {
            s.timed = true;
            s.pause();
        }
        Ok(started)
    }

    fn start_with(&self, library: &Path, symbol: &str, inputs: &[BufferSpec], outputs: &[BufferSpec], wait_policy: Option<&str>, timing: bool) -> Result<Result<Session, Outcome>, RunnerError> {
        let specs: Vec<BufferSpec> = inputs.iter().chain(outputs).cloned().collect();
        if specs.len() > crate::sandbox::MAX_BUFFERS {
            return Err(RunnerError::TooManyBuffers(specs.len()));
        }
        let layout = Layout::new(&specs, if timing { inputs.len() } else { 0 });
        let fd = rustix::fs::memfd_create("ollie-buffers", rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(|e| RunnerError::Io("creating shared memory".into(), e.into()))?;
        let file = std::fs::File::from(fd);
        file.set_len(layout.total as u64).map_err(|e| RunnerError::Io("sizing shared memory".into(), e))?;
        // SAFETY: the mapping is of a file only this process and its child use.
        let mut map = unsafe { memmap2::MmapMut::map_mut(&file) }.map_err(|e| RunnerError::Io("mapping shared memory".into(), e))?;
        for r in &layout.regions {
            // The slack and the guard page: a kernel that unprotects the guard page and writes
            // there still spoils the pattern.
            map[r.region..r.guard + crate::layout::PAGE].fill(CANARY);
        }
        let workdir = std::env::temp_dir().join(format!("ollie-sandbox-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&workdir).map_err(|e| RunnerError::Io(format!("creating {}", workdir.display()), e))?;
        let shared = file.as_fd().as_raw_fd();
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .arg("--lib")
            .arg(library)
            .arg("--symbol")
            .arg(symbol)
            .arg("--layout")
            .arg(layout.encode())
            .arg("--inputs")
            .arg(inputs.len().to_string())
            .arg("--address-space")
            .arg(ADDRESS_SPACE.to_string())
            .arg("--cpu-seconds")
            .arg((self.timeout.as_secs() * 100 + 60).to_string())
            .current_dir(&workdir)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(policy) = wait_policy {
            command.env("OMP_WAIT_POLICY", policy);
        }
        // SAFETY: only async-signal-safe calls between fork and exec: dup2 gives the shared file
        // a fixed number without CLOEXEC; the child dies with its parent.
        unsafe {
            command.pre_exec(move || {
                // dup2 onto itself keeps CLOEXEC, so clear it explicitly.
                if libc::dup2(shared, SHARED_FD) < 0 || libc::fcntl(SHARED_FD, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = command.spawn().map_err(|e| RunnerError::Io(format!("starting the sandbox {}", self.program.display()), e))?;
        let commands = child.stdin.take().expect("piped");
        let replies = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let log = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.by_ref().take(64 * 1024).read_to_string(&mut text);
            text
        });
        let mut session = Session { child, commands, replies, map, layout, specs, inputs: inputs.len(), timeout: self.timeout, log: Some(log), workdir, paused: false, timed: false };
        // Loading takes what it takes whatever a call may: at least `LOAD_TIME`.
        match session.await_reply(b'r', self.timeout.max(LOAD_TIME))? {
            None => {
                session.poison_outputs();
                Ok(Ok(session))
            }
            Some(outcome) => {
                session.finish();
                Ok(Err(outcome))
            }
        }
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

/// What one call did.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Returned { elapsed: Duration },
    /// The sandbox is gone; the session can make no more calls.
    Died(Outcome),
}

/// An output buffer's bytes in shared memory, by dtype.
#[derive(Debug, Clone, Copy)]
pub enum OutputData<'a> {
    F32(&'a [u8]),
    F64(&'a [u8]),
    F16(&'a [u8]),
    BF16(&'a [u8]),
}

impl OutputData<'_> {
    /// A 16-bit output's elements widened to float32 (exactly); `None` for the others, which
    /// are read where they lie.
    pub fn widened(&self) -> Option<Vec<f32>> {
        let halves = |b: &[u8]| b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect::<Vec<u16>>();
        let (dtype, b) = match self {
            OutputData::F16(b) => (DType::F16, b),
            OutputData::BF16(b) => (DType::BF16, b),
            OutputData::F32(_) | OutputData::F64(_) => return None,
        };
        Some(halves(b).into_iter().map(|h| dtype.half_value(h) as f32).collect())
    }
}

/// The bits of the NaN a `dtype` output is poisoned with, little-endian.
fn poison(dtype: DType) -> Vec<u8> {
    match dtype {
        DType::F64 => POISON_F64.to_le_bytes().to_vec(),
        DType::F16 => POISON_F16.to_le_bytes().to_vec(),
        DType::BF16 => POISON_BF16.to_le_bytes().to_vec(),
        _ => POISON_F32.to_le_bytes().to_vec(),
    }
}

/// A running sandbox with the kernel loaded: set inputs, call, read outputs, as often as needed.
pub struct Session {
    child: Child,
    commands: ChildStdin,
    replies: ChildStdout,
    map: memmap2::MmapMut,
    layout: Layout,
    specs: Vec<BufferSpec>,
    inputs: usize,
    timeout: Duration,
    log: Option<std::thread::JoinHandle<String>>,
    workdir: PathBuf,
    /// Stopped by `SIGSTOP` until its next call.
    paused: bool,
    /// Started for timing: compilers in the background are stopped during its calls.
    timed: bool,
}

impl Session {
    fn bytes(&mut self, k: usize) -> &mut [u8] {
        let r = &self.layout.regions[k];
        &mut self.map[r.start..r.start + r.len]
    }

    /// Writes input `k`.
    pub fn set_input(&mut self, k: usize, tensor: &Tensor) -> Result<(), RunnerError> {
        let spec = self.specs[k].clone();
        if tensor.shape() != spec.shape.as_slice() {
            return Err(RunnerError::InputShape { index: k, expected: spec.shape, actual: tensor.shape().to_vec() });
        }
        write_tensor(self.bytes(k), spec.dtype, tensor);
        Ok(())
    }

    /// Writes input `k`'s elements as they lie in its buffer: little-endian values of its dtype
    /// in standard order, exactly the buffer's size.
    pub fn set_input_bytes(&mut self, k: usize, bytes: &[u8]) -> Result<(), RunnerError> {
        let expected = self.specs[k].bytes();
        if bytes.len() != expected {
            return Err(RunnerError::InputBytes { index: k, expected, actual: bytes.len() });
        }
        in_halves_mut(self.bytes(k), |at, half| half.copy_from_slice(&bytes[at..at + half.len()]));
        Ok(())
    }

    /// Writes `bytes` into input `k` from byte `offset` on (one element changed, the rest left
    /// as it is).
    pub fn set_input_bytes_at(&mut self, k: usize, offset: usize, bytes: &[u8]) -> Result<(), RunnerError> {
        let expected = self.specs[k].bytes();
        if offset.checked_add(bytes.len()).is_none_or(|end| end > expected) {
            return Err(RunnerError::InputBytes { index: k, expected, actual: offset.saturating_add(bytes.len()) });
        }
        self.bytes(k)[offset..offset + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    /// Fills every output with a NaN whose payload no computation produces ([`POISON_F32`],
    /// [`POISON_F64`]), so that unwritten elements can be told from computed NaNs.
    pub fn poison_outputs(&mut self) {
        for k in self.inputs..self.specs.len() {
            let nan = poison(self.specs[k].dtype);
            in_halves_mut(self.bytes(k), |_, half| half.chunks_exact_mut(nan.len()).for_each(|c| c.copy_from_slice(&nan)));
        }
    }

    /// How many elements of output `k` still hold the poison.
    pub fn unwritten(&self, k: usize) -> usize {
        let index = self.inputs + k;
        let r = &self.layout.regions[index];
        let bytes = &self.map[r.start..r.start + r.len];
        let nan = poison(self.specs[index].dtype);
        bytes.chunks_exact(nan.len()).filter(|c| *c == &nan[..]).count()
    }

    /// Output `k` (0-based among the outputs) as it is now in shared memory.
    pub fn output(&self, k: usize) -> Tensor {
        let index = self.inputs + k;
        let r = &self.layout.regions[index];
        read_tensor(&self.map[r.start..r.start + r.len], &self.specs[index])
    }

    /// Output `k`'s elements where the kernel wrote them, as little-endian bytes of its dtype.
    pub fn output_data(&self, k: usize) -> OutputData<'_> {
        let index = self.inputs + k;
        let r = &self.layout.regions[index];
        let bytes = &self.map[r.start..r.start + r.len];
        match self.specs[index].dtype {
            DType::F64 => OutputData::F64(bytes),
            DType::F16 => OutputData::F16(bytes),
            DType::BF16 => OutputData::BF16(bytes),
            _ => OutputData::F32(bytes),
        }
    }

    /// A checksum of output `k`'s bytes.
    pub fn output_checksum(&self, k: usize) -> u64 {
        self.checksum(self.inputs + k)
    }

    /// The first buffer whose slack bytes (around it) or guard page were changed.
    pub fn damaged_canary(&self) -> Option<usize> {
        self.layout.regions.iter().position(|r| {
            let guard_end = r.guard + crate::layout::PAGE;
            self.map[r.region..r.start].iter().chain(&self.map[r.start + r.len..guard_end]).any(|&b| b != CANARY)
        })
    }

    /// A checksum of input `k`'s bytes (inputs are mapped read-only in the sandbox; this catches
    /// a kernel that changes that protection and writes anyway).
    pub fn input_checksum(&self, k: usize) -> u64 {
        self.checksum(k)
    }

    /// XXH3 of buffer `index`'s bytes: fast, and adequate for detecting any change.
    fn checksum(&self, index: usize) -> u64 {
        let r = &self.layout.regions[index];
        checksum(&self.map[r.start..r.start + r.len])
    }

    /// Pins the sandbox's threads one to a CPU (of those ollie may use, in turn) and stops the
    /// sandbox — all its threads, spinning ones included — until its next call or
    /// [`Session::finish`]. Pinned, two threads of one team never share a CPU: a team resumed
    /// from a stop could otherwise find its threads spinning on one CPU by turns.
    pub fn pause(&mut self) {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: plain system calls on our own child's threads (not yet reaped: the session owns
        // the child) with a zeroed and then filled CPU set.
        unsafe {
            let mut allowed: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed) == 0 {
                let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &allowed)).collect();
                let mut tids: Vec<libc::pid_t> = std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()).unwrap_or_default();
                tids.sort_unstable();
                for (i, &tid) in tids.iter().enumerate().filter(|_| !cpus.is_empty()) {
                    let mut one: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpus[i % cpus.len()], &mut one);
                    libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &one);
                }
            }
            if libc::kill(pid, libc::SIGSTOP) == 0 {
                self.paused = true;
            }
        }
    }

    /// The sandbox's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn resume(&mut self) {
        if self.paused {
            // SAFETY: a signal to our own child, as in `pause`.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGCONT) };
            self.paused = false;
        }
    }

    /// Writes every cache line of the kernel's buffers back to memory and out of every cache
    /// level (`clflushopt` where the CPU has it, else `clflush`), so that the next call reads its
    /// inputs from memory and owns no line of its outputs: a timed call then costs what it costs
    /// on data another computation just left behind in memory, whatever the size of this machine's last-level cache (with a large one,
    /// a kernel called on the same buffers again and again would otherwise be timed from cache).
    /// Buffers of more than [`SCRUB_ABOVE`] times the last-level cache are not flushed line by
    /// line (300 MB took 0.3 s a call, ten times the kernel's own time): at most a cache's worth
    /// of them can be cached, and reading twice that many other bytes pushes it out instead.
    /// Not timed: the sandbox times only the kernel's call. A no-op off x86.
    pub fn evict(&self) {
        #[cfg(target_arch = "x86_64")]
        {
            let total: usize = self.layout.regions.iter().map(|r| r.len).sum();
            let evicted = evicted_bytes(total);
            if evicted < total {
                scrub(evicted);
                return;
            }
            let weak = has_clflushopt();
            for r in &self.layout.regions {
                let bytes = &self.map[r.start..r.start + r.len];
                for line in bytes.chunks(64) {
                    if weak {
                        // SAFETY: `clflushopt` (the CPU has it) of an address inside our own
                        // mapping; it neither reads nor writes memory as Rust sees it.
                        unsafe { std::arch::asm!("clflushopt [{0}]", in(reg) line.as_ptr(), options(nostack, preserves_flags)) };
                    } else {
                        // SAFETY: `clflush` of an address inside our own mapping; SSE2 is part
                        // of x86-64.
                        unsafe { std::arch::x86_64::_mm_clflush(line.as_ptr()) };
                    }
                }
            }
            // SAFETY: a fence (which orders `clflushopt` too); SSE2 is part of x86-64.
            unsafe { std::arch::x86_64::_mm_mfence() };
        }
    }

    /// Calls the kernel once and waits for it within the time limit. A session started for
    /// timing evicts the kernel's buffers from the caches first ([`Session::evict`]).
    pub fn call(&mut self) -> Result<Call, RunnerError> {
        if self.timed {
            self.evict();
        }
        let _quiet = self.timed.then(crate::quiet::Quiet::begin);
        self.resume();
        if self.commands.write_all(b"c").and_then(|_| self.commands.flush()).is_err() {
            // The sandbox is gone already; its status says why.
            return Ok(Call::Died(self.death()?));
        }
        match self.await_reply(b'd', self.timeout)? {
            None => {
                if u64::from_le_bytes(self.map[header::RETURNED..header::RETURNED + 8].try_into().unwrap()) != RETURNED {
                    return Ok(Call::Died(Outcome::Failed { reason: "the sandbox replied before the kernel returned".into() }));
                }
                let nanos = u64::from_le_bytes(self.map[header::ELAPSED..header::ELAPSED + 8].try_into().unwrap());
                Ok(Call::Returned { elapsed: Duration::from_nanos(nanos) })
            }
            Some(outcome) => Ok(Call::Died(outcome)),
        }
    }

    /// Waits for `expected` on the reply pipe; `Some(outcome)` if the sandbox died or timed out.
    fn await_reply(&mut self, expected: u8, limit: Duration) -> Result<Option<Outcome>, RunnerError> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Ok(Some(Outcome::Timeout { limit }));
            }
            let mut fds = [rustix::event::PollFd::new(&self.replies, rustix::event::PollFlags::IN)];
            let timeout = rustix::event::Timespec::try_from(left.min(Duration::from_millis(100))).expect("a short duration");
            match rustix::event::poll(&mut fds, Some(&timeout)) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(RunnerError::Io("waiting for the sandbox".into(), e.into())),
            }
            let mut byte = [0u8];
            match self.replies.read(&mut byte) {
                Ok(1) if byte[0] == expected => return Ok(None),
                // Anything else on the pipe came from the kernel itself; wait for the real reply.
                Ok(1) => continue,
                _ => return Ok(Some(self.death()?)),
            }
        }
    }

    /// Why the sandbox ended.
    fn death(&mut self) -> Result<Outcome, RunnerError> {
        let status = match self.child.wait_timeout(Duration::from_secs(5)).map_err(|e| RunnerError::Io("waiting for the sandbox".into(), e))? {
            Some(s) => s,
            None => {
                let _ = self.child.kill();
                self.child.wait().map_err(|e| RunnerError::Io("waiting for the sandbox".into(), e))?
            }
        };
        let word = |offset: usize| u64::from_le_bytes(self.map[offset..offset + 8].try_into().unwrap());
        Ok(match (status.signal(), status.code()) {
            (Some(signal), _) => Outcome::Crashed { signal },
            (_, Some(code)) if (EXIT_SIGNAL_BASE + 1..EXIT_SIGNAL_BASE + 32).contains(&code) => Outcome::Crashed { signal: code - EXIT_SIGNAL_BASE },
            (_, Some(EXIT_FORBIDDEN)) => Outcome::Forbidden { syscall: word(header::SYSCALL) as i64 - 1 },
            (_, Some(EXIT_FAULT)) => Outcome::OutOfBounds {
                buffer: word(header::FAULT_BUFFER) as usize - 1,
                write_to_input: word(header::FAULT_WRITE_INPUT) != 0,
            },
            _ => {
                let log = self.log.take().map(|h| h.join().unwrap_or_default()).unwrap_or_default();
                let reason = log.trim();
                if status.success() {
                    Outcome::Failed { reason: "the kernel ended its process instead of returning".into() }
                } else if reason.is_empty() {
                    Outcome::Failed { reason: format!("the sandbox exited with {status}") }
                } else {
                    Outcome::Failed { reason: reason.to_string() }
                }
            }
        })
    }

    /// Ends the sandbox.
    pub fn finish(mut self) {
        self.resume();
        let _ = self.commands.write_all(b"q");
        if self.child.wait_timeout(Duration::from_secs(2)).ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.workdir);
    }
}

fn write_tensor(bytes: &mut [u8], dtype: DType, tensor: &Tensor) {
    fn fill(bytes: &mut [u8], dtype: DType, values: impl Iterator<Item = f64>) {
        let chunks = bytes.chunks_exact_mut(dtype.size()).zip(values);
        match dtype {
            DType::F64 => chunks.for_each(|(chunk, x)| chunk.copy_from_slice(&x.to_le_bytes())),
            DType::F16 | DType::BF16 => chunks.for_each(|(chunk, x)| chunk.copy_from_slice(&dtype.half_bits(x).to_le_bytes())),
            DType::I64 => chunks.for_each(|(chunk, x)| chunk.copy_from_slice(&(x as i64).to_le_bytes())),
            DType::I32 => chunks.for_each(|(chunk, x)| chunk.copy_from_slice(&(x as i32).to_le_bytes())),
            DType::I8 => chunks.for_each(|(chunk, x)| chunk.copy_from_slice(&(x as i8).to_le_bytes())),
            DType::U8 => chunks.for_each(|(chunk, x)| chunk.copy_from_slice(&(x as u8).to_le_bytes())),
            DType::Bool => chunks.for_each(|(chunk, x)| chunk[0] = u8::from(x != 0.0)),
            _ => chunks.for_each(|(chunk, x)| chunk.copy_from_slice(&(x as f32).to_le_bytes())),
        }
    }
    // A tensor in standard layout (as inputs are made) is read as a slice: much faster.
    match tensor.as_slice() {
        Some(s) => fill(bytes, dtype, s.iter().copied()),
        None => fill(bytes, dtype, tensor.iter().copied()),
    }
}

fn read_tensor(bytes: &[u8], spec: &BufferSpec) -> Tensor {
    let chunks = bytes.chunks_exact(spec.dtype.size());
    let values: Vec<f64> = match spec.dtype {
        DType::F64 => chunks.map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect(),
        DType::F16 | DType::BF16 => chunks.map(|c| spec.dtype.half_value(u16::from_le_bytes([c[0], c[1]]))).collect(),
        _ => chunks.map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
    };
    ArrayD::from_shape_vec(IxDyn(&spec.shape), values).expect("the layout matches the shape")
}

/// Bytes from which [`checksum`] and [`checksum128`] hash on two threads.
const PARALLEL_HASH: usize = 8 << 20;

/// `hash` of a large buffer's two halves, on two threads (the work between calls is not timed,
/// and one core cannot read memory at the machine's bandwidth); `None` for a small buffer.
fn in_halves<H: Send>(bytes: &[u8], hash: fn(&[u8]) -> H) -> Option<(H, H)> {
    if bytes.len() < PARALLEL_HASH {
        return None;
    }
    let (a, b) = bytes.split_at(bytes.len() / 2);
    Some(std::thread::scope(|s| {
        let ha = s.spawn(|| hash(a));
        let hb = hash(b);
        (ha.join().expect("hashing does not panic"), hb)
    }))
}

/// `write(offset, part)` over a buffer: a large one's two halves (split at a 64-byte boundary)
/// on two threads, as [`in_halves`] reads them.
fn in_halves_mut(bytes: &mut [u8], write: impl Fn(usize, &mut [u8]) + Sync) {
    if bytes.len() < PARALLEL_HASH {
        return write(0, bytes);
    }
    let at = bytes.len() / 2 / 64 * 64;
    let (a, b) = bytes.split_at_mut(at);
    std::thread::scope(|s| {
        s.spawn(|| write(0, a));
        write(at, b);
    });
}

/// XXH3 of `bytes`; a large buffer's halves hashed on two threads and their hashes combined.
pub fn checksum(bytes: &[u8]) -> u64 {
    use xxhash_rust::xxh3::xxh3_64;
    match in_halves(bytes, xxh3_64) {
        None => xxh3_64(bytes),
        Some((a, b)) => xxh3_64(&[a.to_le_bytes(), b.to_le_bytes(), (bytes.len() as u64).to_le_bytes()].concat()),
    }
}

/// [`checksum`] in 128 bits, for keys that name files (a given input set's).
pub fn checksum128(bytes: &[u8]) -> u128 {
    use xxhash_rust::xxh3::xxh3_128;
    match in_halves(bytes, xxh3_128) {
        None => xxh3_128(bytes),
        Some((a, b)) => xxh3_128(&[a.to_le_bytes(), b.to_le_bytes()].concat()),
    }
}
