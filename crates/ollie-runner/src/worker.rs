//! The worker side: maps the shared buffers, loads the kernel library, calls the kernel once.
//! It runs in the child process only; a kernel never runs inside ollie's own process.

use std::os::fd::FromRawFd;
use std::time::Instant;

/// The hidden command under which ollie's executable acts as the worker.
pub const WORKER_COMMAND: &str = "__worker";

/// The most buffers (inputs and outputs) a kernel may take.
const MAX_BUFFERS: usize = 16;

/// Runs the worker with the arguments after [`WORKER_COMMAND`]. The executable reports an
/// error on stderr and exits non-zero; the parent reads that text as the reason.
pub fn worker_main(args: &[String]) -> Result<(), String> {
    let value = |flag: &str| -> Result<&str, String> {
        let i = args.iter().position(|a| a == flag).ok_or(format!("worker: missing {flag}"))?;
        args.get(i + 1).map(String::as_str).ok_or(format!("worker: {flag} needs a value"))
    };
    let fd: i32 = value("--fd")?.parse().map_err(|_| "worker: bad --fd")?;
    let library = value("--lib")?;
    let symbol = value("--symbol")?;
    let mut buffers = Vec::new();
    for b in value("--buffers")?.split(',').filter(|b| !b.is_empty()) {
        let mut parts = b.split(':');
        let offset: usize = parts.next().and_then(|o| o.parse().ok()).ok_or("worker: bad --buffers")?;
        let len: usize = parts.next().and_then(|o| o.parse().ok()).ok_or("worker: bad --buffers")?;
        buffers.push((offset, len));
    }
    if buffers.len() > MAX_BUFFERS {
        return Err(format!("the kernel takes {} buffers; at most {MAX_BUFFERS} are supported", buffers.len()));
    }
    // SAFETY: the parent passed this descriptor for exactly this purpose.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    // SAFETY: the shared file is used by the parent only after this process has exited.
    let mut map = unsafe { memmap2::MmapMut::map_mut(&file) }.map_err(|e| format!("worker: cannot map the buffers: {e}"))?;
    if buffers.iter().any(|&(o, l)| o + l > map.len()) {
        return Err("worker: a buffer lies outside the shared memory".into());
    }
    let base = map.as_mut_ptr();
    // SAFETY: every offset was checked against the mapping's length above.
    let ptrs: Vec<*mut u8> = buffers.iter().map(|&(o, _)| unsafe { base.add(o) }).collect();
    // SAFETY: loading the library runs its initializers; that is the kernel's code, run here,
    // in the child, on purpose.
    let lib = unsafe { libloading::Library::new(library) }.map_err(|e| format!("cannot load the kernel library: {e}"))?;
    // SAFETY: the symbol's real type is `void f(float *...)`; it is called below with exactly
    // as many pointers as the kernel has buffers.
    let f = unsafe { lib.get::<unsafe extern "C" fn()>(symbol.as_bytes()) }.map_err(|e| format!("the library has no kernel `{symbol}`: {e}"))?;
    let f: unsafe extern "C" fn() = *f;
    let start = Instant::now();
    // SAFETY: as above: the pointer count matches the kernel's ABI.
    unsafe { call(f, &ptrs) };
    let nanos = start.elapsed().as_nanos() as u64;
    map[0..8].copy_from_slice(&nanos.to_le_bytes());
    map[8..16].copy_from_slice(&crate::run::RETURNED.to_le_bytes());
    map.flush().map_err(|e| format!("worker: {e}"))?;
    Ok(())
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
