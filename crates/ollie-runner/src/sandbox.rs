//! The sandbox side, run as `ollie __sandbox ...` in the child process: maps the shared buffers
//! (guard pages after each, inputs read-only), loads the kernel, locks itself down (rlimits and a
//! seccomp filter), then calls the kernel once per command from the parent. A kernel never runs
//! inside ollie's own process.
//!
//! Protocol: fd 0 carries commands (`c`: call, `q`: quit), fd 1 replies (`r`: ready, `d`: done),
//! fd 3 is the shared memory file. Whatever goes wrong after the lockdown ends the process: a
//! forbidden system call (SIGSYS, exit 97), a touched guard page or a write to an input (exit 98,
//! with the buffer in the header), any other fault (exit 100 + the signal).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::time::Instant;

use seccompiler::{BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch};

use crate::layout::{header, Layout, PAGE, RETURNED};

/// The hidden command under which ollie's executable acts as the sandbox.
pub const SANDBOX_COMMAND: &str = "__sandbox";
/// The descriptor the shared memory file is given in the sandbox.
pub(crate) const SHARED_FD: i32 = 3;
/// The exit code after a forbidden system call.
pub(crate) const EXIT_FORBIDDEN: i32 = 97;
/// The exit code after a fault in a guard page or an input.
pub(crate) const EXIT_FAULT: i32 = 98;
/// Exit code `EXIT_SIGNAL_BASE + n`: the kernel faulted with signal `n` elsewhere.
pub(crate) const EXIT_SIGNAL_BASE: i32 = 100;

/// The most buffers (inputs and outputs) a kernel may take.
pub(crate) const MAX_BUFFERS: usize = 16;

static HEADER: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
/// Per buffer: data region start, guard page start; and how many are inputs.
static REGIONS: [AtomicUsize; 2 * MAX_BUFFERS] = [const { AtomicUsize::new(0) }; 2 * MAX_BUFFERS];
static BUFFERS: AtomicUsize = AtomicUsize::new(0);
static INPUTS: AtomicUsize = AtomicUsize::new(0);

/// Runs the sandbox with the arguments after [`SANDBOX_COMMAND`]. Errors before the lockdown are
/// returned (the executable prints them and exits non-zero); after it, the sandbox never returns.
pub fn sandbox_main(args: &[String]) -> Result<(), String> {
    let value = |flag: &str| -> Result<&str, String> {
        let i = args.iter().position(|a| a == flag).ok_or(format!("sandbox: missing {flag}"))?;
        args.get(i + 1).map(String::as_str).ok_or(format!("sandbox: {flag} needs a value"))
    };
    let library = value("--lib")?;
    let symbol = value("--symbol")?;
    let layout = Layout::decode(value("--layout")?).ok_or("sandbox: bad --layout")?;
    let inputs: usize = value("--inputs")?.parse().map_err(|_| "sandbox: bad --inputs")?;
    let address_space: u64 = value("--address-space")?.parse().map_err(|_| "sandbox: bad --address-space")?;
    let cpu_seconds: u64 = value("--cpu-seconds")?.parse().map_err(|_| "sandbox: bad --cpu-seconds")?;
    if layout.regions.len() > MAX_BUFFERS || inputs > layout.regions.len() {
        return Err(format!("the kernel takes {} buffers; at most {MAX_BUFFERS} are supported", layout.regions.len()));
    }
    // SAFETY: maps the shared file the parent passed as fd 3, for its whole length.
    let base = unsafe { libc::mmap(std::ptr::null_mut(), layout.total, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, SHARED_FD, 0) };
    if base == libc::MAP_FAILED {
        return Err(format!("sandbox: cannot map the buffers: {}", std::io::Error::last_os_error()));
    }
    let base = base as *mut u8;
    HEADER.store(base, Ordering::SeqCst);
    for (k, r) in layout.regions.iter().enumerate() {
        REGIONS[2 * k].store(base as usize + r.region, Ordering::SeqCst);
        REGIONS[2 * k + 1].store(base as usize + r.guard, Ordering::SeqCst);
        // SAFETY: the ranges lie inside the mapping made above.
        unsafe {
            protect(base.add(r.guard), PAGE, libc::PROT_NONE)?;
            if k < inputs {
                protect(base.add(r.region), r.guard - r.region, libc::PROT_READ)?;
            }
        }
    }
    BUFFERS.store(layout.regions.len(), Ordering::SeqCst);
    INPUTS.store(inputs, Ordering::SeqCst);
    install_handlers();
    // SAFETY: loading the library runs its initializers; that is the kernel's code, run here,
    // in the child, on purpose.
    let lib = unsafe { libloading::Library::new(library) }.map_err(|e| format!("cannot load the kernel library: {e}"))?;
    // SAFETY: the symbol's real type is `void f(float *...)`; it is called below with exactly as
    // many pointers as the kernel has buffers.
    let f = unsafe { lib.get::<unsafe extern "C" fn()>(symbol.as_bytes()) }.map_err(|e| format!("the library has no kernel `{symbol}`: {e}"))?;
    let f: unsafe extern "C" fn() = *f;
    // SAFETY: every region lies inside the mapping.
    let ptrs: Vec<*mut u8> = layout.regions.iter().map(|r| unsafe { base.add(r.start) }).collect();
    limit(libc::RLIMIT_CORE, 0)?;
    limit(libc::RLIMIT_FSIZE, 0)?;
    if address_space > 0 {
        limit(libc::RLIMIT_AS, address_space)?;
    }
    if cpu_seconds > 0 {
        // A backstop for threads that spin on after their call: the per-call time limit is the
        // parent's.
        limit(libc::RLIMIT_CPU, cpu_seconds)?;
    }
    // glibc gives a heap back from a thread's arena only after reading
    // /proc/sys/vm/overcommit_memory, a file the filter refuses: a kernel freeing a temporary on
    // the heap in a parallel loop would be judged for opening it. Never trimmed, nothing is read
    // (the memory stays the process's, to be used again by the next call).
    // SAFETY: mallopt only sets a parameter of the allocator.
    if unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX) } != 1 {
        return Err("sandbox: cannot set the allocator's trim threshold".into());
    }
    let filters = filters().map_err(|e| format!("sandbox: building the system call filter: {e}"))?;
    for program in &filters {
        seccompiler::apply_filter_all_threads(program).map_err(|e| format!("sandbox: installing the system call filter: {e}"))?;
    }
    std::mem::forget(lib);
    reply(b'r');
    loop {
        let mut command = 0u8;
        // SAFETY: reads one byte into a local.
        let n = unsafe { libc::read(0, (&mut command as *mut u8).cast(), 1) };
        if n != 1 || command != b'c' {
            // SAFETY: ends the process without running destructors (which would make system
            // calls the filter forbids).
            unsafe { libc::_exit(0) };
        }
        // SAFETY: the header is the first page of the mapping.
        unsafe { std::ptr::write_volatile(base.add(header::RETURNED).cast::<u64>(), 0) };
        let start = Instant::now();
        // SAFETY: the pointer count matches the kernel's ABI.
        unsafe { call(f, &ptrs) };
        let nanos = start.elapsed().as_nanos() as u64;
        // SAFETY: as above.
        unsafe {
            std::ptr::write_volatile(base.add(header::ELAPSED).cast::<u64>(), nanos);
            std::ptr::write_volatile(base.add(header::RETURNED).cast::<u64>(), RETURNED);
        }
        reply(b'd');
    }
}

fn reply(byte: u8) {
    // SAFETY: writes one byte from a local.
    unsafe { libc::write(1, (&byte as *const u8).cast(), 1) };
}

unsafe fn protect(at: *mut u8, len: usize, prot: i32) -> Result<(), String> {
    if libc::mprotect(at.cast(), len, prot) != 0 {
        return Err(format!("sandbox: mprotect: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

fn limit(resource: libc::__rlimit_resource_t, value: u64) -> Result<(), String> {
    let l = libc::rlimit { rlim_cur: value, rlim_max: value };
    // SAFETY: passes a valid rlimit.
    if unsafe { libc::setrlimit(resource, &l) } != 0 {
        return Err(format!("sandbox: setrlimit: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// What a kernel may ask of the operating system: memory, threads (OpenMP), time, its own
/// signals, and the protocol's pipe. Anything else traps. `clone3` fails with ENOSYS so that
/// threads are made with `clone`, whose flags the filter can check.
fn filters() -> Result<Vec<BpfProgram>, seccompiler::BackendError> {
    let arch = TargetArch::x86_64;
    let allowed = [
        libc::SYS_read, libc::SYS_write, libc::SYS_close, libc::SYS_mmap, libc::SYS_munmap, libc::SYS_mprotect,
        libc::SYS_mremap, libc::SYS_madvise, libc::SYS_brk, libc::SYS_futex, libc::SYS_exit, libc::SYS_exit_group,
        libc::SYS_sched_yield, libc::SYS_sched_getaffinity, libc::SYS_getpid, libc::SYS_gettid, libc::SYS_rt_sigprocmask,
        libc::SYS_rt_sigreturn, libc::SYS_sigaltstack, libc::SYS_set_robust_list, libc::SYS_rseq, libc::SYS_nanosleep,
        libc::SYS_clock_nanosleep, libc::SYS_clock_gettime, libc::SYS_gettimeofday, libc::SYS_fcntl, libc::SYS_getrandom,
        libc::SYS_prlimit64, libc::SYS_clone3,
    ];
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = allowed.iter().map(|&nr| (nr, vec![])).collect();
    // Threads only: a clone without CLONE_THREAD would be a new process.
    let thread = libc::CLONE_THREAD as u64;
    rules.insert(libc::SYS_clone, vec![SeccompRule::new(vec![SeccompCondition::new(0, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(thread), thread)?])?]);
    // Signals to itself only (abort, OpenMP runtime).
    let pid = std::process::id() as u64;
    let own = |arg| -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        Ok(vec![SeccompRule::new(vec![SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, pid)?])?])
    };
    // glibc names its anonymous mappings (PR_SET_VMA); nothing else of prctl.
    const PR_SET_VMA: u64 = 0x53564d41;
    rules.insert(libc::SYS_prctl, vec![SeccompRule::new(vec![SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, PR_SET_VMA)?])?]);
    // glibc's threads install handlers for its own real-time signals (32, 33); the fault and
    // seccomp handlers stay ollie's.
    rules.insert(libc::SYS_rt_sigaction, vec![SeccompRule::new(vec![SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ge, 32)?])?]);
    rules.insert(libc::SYS_tgkill, own(0)?);
    rules.insert(libc::SYS_kill, own(0)?);
    let allow = SeccompFilter::new(rules, SeccompAction::Trap, SeccompAction::Allow, arch)?;
    let no_clone3 = SeccompFilter::new([(libc::SYS_clone3, vec![])].into_iter().collect(), SeccompAction::Allow, SeccompAction::Errno(libc::ENOSYS as u32), arch)?;
    // Installing a filter calls prctl, which the allowlist refuses: it goes last.
    Ok(vec![no_clone3.try_into()?, allow.try_into()?])
}

fn install_handlers() {
    for sig in [libc::SIGSYS, libc::SIGSEGV, libc::SIGBUS] {
        // SAFETY: installs a plain SA_SIGINFO handler with an empty mask.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// Records why the kernel is being stopped in the shared header and ends the process; a fault
/// outside ollie's pages falls through to the default action (the parent sees the signal).
extern "C" fn on_signal(sig: i32, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    let header = HEADER.load(Ordering::SeqCst);
    // SAFETY: only async-signal-safe work: reads of the siginfo, volatile stores into the
    // shared header, sigaction and _exit.
    unsafe {
        let put = |offset: usize, value: u64| std::ptr::write_volatile(header.add(offset).cast::<u64>(), value);
        if sig == libc::SIGSYS {
            // x86_64 siginfo_t: the system call number is the int at byte 24 for SIGSYS.
            let nr = *(info as *const u8).add(24).cast::<i32>();
            put(header::SYSCALL, nr as u64 + 1);
            libc::_exit(EXIT_FORBIDDEN);
        }
        let addr = (*info).si_addr() as usize;
        for k in 0..BUFFERS.load(Ordering::SeqCst) {
            let (region, guard) = (REGIONS[2 * k].load(Ordering::SeqCst), REGIONS[2 * k + 1].load(Ordering::SeqCst));
            let in_guard = (guard..guard + PAGE).contains(&addr);
            let in_input = k < INPUTS.load(Ordering::SeqCst) && (region..guard).contains(&addr);
            if in_guard || in_input {
                put(header::FAULT_BUFFER, k as u64 + 1);
                put(header::FAULT_ADDRESS, addr as u64);
                put(header::FAULT_WRITE_INPUT, in_input as u64);
                libc::_exit(EXIT_FAULT);
            }
        }
        // Any other fault: report the signal by exit code (re-raising it would need
        // rt_sigaction, which the filter refuses so that a kernel cannot take over faults).
        libc::_exit(EXIT_SIGNAL_BASE + sig);
    }
}

/// Calls `f` with the pointers as its arguments.
unsafe fn call(f: unsafe extern "C" fn(), p: &[*mut u8]) {
    type P = *mut u8;
    macro_rules! arity {
        ($($i:literal),*) => {{
            let g: unsafe extern "C" fn($(arity!(@ty $i)),*) = std::mem::transmute(f);
            g($(p[$i]),*)
        }};
        (@ty $i:literal) => { P };
    }
    match p.len() {
        0 => arity!(),
        1 => arity!(0),
        2 => arity!(0, 1),
        3 => arity!(0, 1, 2),
        4 => arity!(0, 1, 2, 3),
        5 => arity!(0, 1, 2, 3, 4),
        6 => arity!(0, 1, 2, 3, 4, 5),
        7 => arity!(0, 1, 2, 3, 4, 5, 6),
        8 => arity!(0, 1, 2, 3, 4, 5, 6, 7),
        9 => arity!(0, 1, 2, 3, 4, 5, 6, 7, 8),
        10 => arity!(0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
        11 => arity!(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
        12 => arity!(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11),
        13 => arity!(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12),
        14 => arity!(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13),
        15 => arity!(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14),
        16 => arity!(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _ => unreachable!("checked against MAX_BUFFERS"),
    }
}
