//! The runner: a kernel that works, one that does not compile, one that crashes, one that never
//! returns, one without the expected symbol, one that reaches past a buffer, writes its input,
//! opens a file, a socket or a process each come back as the matching outcome, and ollie keeps
//! going. OpenMP kernels run; a session calls a kernel many times.

use std::time::Duration;

use ndarray::{ArrayD, IxDyn};
use ollie_graph::DType;
use ollie_runner::{BufferSpec, Compiler, Outcome, Runner};

fn runner(timeout: Duration) -> Runner {
    Runner::new(env!("CARGO_BIN_EXE_ollie"), timeout)
}

fn f32s(shape: &[usize]) -> BufferSpec {
    BufferSpec { dtype: DType::F32, shape: shape.to_vec() }
}

/// Compiles `source` and runs `k(x, out)` with x = [1, 2, 3, 4].
fn run(source: &str, timeout: Duration) -> Outcome {
    run_with(source, &["-O2"], timeout)
}

fn run_with(source: &str, flags: &[&str], timeout: Duration) -> Outcome {
    let cache = tempfile::tempdir().unwrap();
    let compiler = Compiler::new(cache.path());
    let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    let library = match compiler.compile(source, &flags) {
        Ok(c) => c.library,
        Err(Ok(outcome)) => return outcome,
        Err(Err(e)) => panic!("{e}"),
    };
    let x = ArrayD::from_shape_vec(IxDyn(&[4]), vec![1.0, 2.0, 3.0, 4.0]).unwrap();
    runner(timeout).run(&library, "k", &[(f32s(&[4]), &x)], &[f32s(&[4])]).unwrap()
}

const SECOND: Duration = Duration::from_secs(1);

#[test]
fn a_working_kernel_returns_its_outputs() {
    let outcome = run("void k(const float *restrict x, float *restrict out) { for (int i = 0; i < 4; i++) out[i] = 2 * x[i]; }", 10 * SECOND);
    let Outcome::Ran { outputs, .. } = outcome else { panic!("{outcome:?}") };
    assert_eq!(outputs[0].iter().copied().collect::<Vec<_>>(), vec![2.0, 4.0, 6.0, 8.0]);
}

#[test]
fn unwritten_outputs_stay_nan() {
    let outcome = run("void k(const float *restrict x, float *restrict out) { out[0] = x[0]; }", 10 * SECOND);
    let Outcome::Ran { outputs, .. } = outcome else { panic!("{outcome:?}") };
    assert_eq!(outputs[0][[0]], 1.0);
    assert!(outputs[0].iter().skip(1).all(|v| v.is_nan()));
}

#[test]
fn a_compile_error_is_an_outcome_with_the_log() {
    let outcome = run("void k(const float *x, float *out) { this is not C; }", 10 * SECOND);
    let Outcome::CompileError { log } = outcome else { panic!("{outcome:?}") };
    assert!(log.contains("error"), "{log}");
}

#[test]
fn a_crash_is_an_outcome_with_the_signal() {
    let outcome = run("void k(const float *x, float *out) { volatile float *p = 0; *p = x[0]; out[0] = 1; }", 10 * SECOND);
    assert_eq!(outcome, Outcome::Crashed { signal: 11 });
}

#[test]
fn an_endless_kernel_times_out() {
    let started = std::time::Instant::now();
    let outcome = run("void k(const float *x, float *out) { for (;;) { out[0] = x[0]; __asm__ volatile(\"\"); } }", SECOND);
    assert_eq!(outcome, Outcome::Timeout { limit: SECOND });
    assert!(started.elapsed() < 10 * SECOND, "the runner waited {:?}", started.elapsed());
}

#[test]
fn a_missing_symbol_is_a_failure_with_the_reason() {
    let outcome = run("void other(const float *x, float *out) { out[0] = x[0]; }", 10 * SECOND);
    let Outcome::Failed { reason } = outcome else { panic!("{outcome:?}") };
    assert!(reason.contains("no kernel `k`"), "{reason}");
}

#[test]
fn a_kernel_that_exits_is_a_failure() {
    let outcome = run("#include <stdlib.h>\nvoid k(const float *x, float *out) { out[0] = x[0]; exit(0); }", 10 * SECOND);
    let Outcome::Failed { reason } = outcome else { panic!("{outcome:?}") };
    assert!(reason.contains("instead of returning"), "{reason}");
}

#[test]
fn compiled_libraries_are_cached_by_content() {
    let cache = tempfile::tempdir().unwrap();
    let compiler = Compiler::new(cache.path());
    let source = "void k(const float *x, float *out) { out[0] = x[0]; }";
    let first = compiler.compile(source, &[]).unwrap();
    let second = compiler.compile(source, &[]).unwrap();
    let other = compiler.compile(source, &["-O1".to_string()]).unwrap();
    assert!(!first.cached && second.cached && !other.cached);
    assert_eq!(first.library, second.library);
    assert_ne!(first.library, other.library);
}

/// A compilation past its deadline, or no longer wanted, is stopped at once and says why; nothing
/// is cached, and the same source builds once nothing stops it.
#[test]
fn a_stopped_compilation_is_a_compile_error_saying_why() {
    let cache = tempfile::tempdir().unwrap();
    let source = "void k(const float *x, float *out) { out[0] = x[0] * 2; }";
    let cancelled = ollie_runner::CompileStop::default();
    cancelled.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    let past = ollie_runner::CompileStop { deadline: Some(std::time::Instant::now()), ..Default::default() };
    for (stop, why) in [(cancelled, "its build was no longer wanted"), (past, "the time given to the search was up")] {
        let compiler = Compiler { stop: Some(stop), ..Compiler::new(cache.path()) };
        match compiler.compile(source, &[]) {
            Err(Ok(Outcome::CompileError { log })) => assert!(log.starts_with(&format!("the C compiler was stopped: {why}")), "{log}"),
            other => panic!("{other:?}"),
        }
    }
    assert!(!Compiler::new(cache.path()).compile(source, &[]).unwrap().cached);
}

#[test]
fn the_same_source_built_by_several_threads_at_once_is_one_library() {
    let cache = tempfile::tempdir().unwrap();
    let compiler = Compiler::new(cache.path());
    let source = "void k(const float *x, float *out) { for (int i = 0; i < 4; i++) out[i] = x[i] + 1; }";
    let built: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| compiler.compile(source, &["-O2".to_string()]))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for b in &built {
        assert_eq!(b.as_ref().map(|c| &c.library).ok(), built[0].as_ref().map(|c| &c.library).ok(), "{b:?}");
    }
    assert!(built[0].is_ok(), "{:?}", built[0]);
    let leftovers: Vec<_> = std::fs::read_dir(cache.path()).unwrap().map(|e| e.unwrap().file_name()).filter(|n| n.to_string_lossy().ends_with(".tmp") || n.to_string_lossy().ends_with(".log")).collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn reaching_past_a_buffer_names_it() {
    // Reading x[16] is the first byte of the guard page after the (64-byte padded) input.
    let read = run("void k(const float *x, float *out) { volatile float v = x[16]; out[0] = v; }", 10 * SECOND);
    assert_eq!(read, Outcome::OutOfBounds { buffer: 0, write_to_input: false });
    let write = run("void k(const float *x, float *out) { for (int i = 0; i < 4; i++) out[i] = x[i]; ((volatile float *)out)[16] = 1; }", 10 * SECOND);
    assert_eq!(write, Outcome::OutOfBounds { buffer: 1, write_to_input: false });
    // Writing into the slack before the guard page spoils the canary.
    let slack = run("void k(const float *x, float *out) { for (int i = 0; i < 4; i++) out[i] = x[i]; ((volatile float *)out)[5] = 1; }", 10 * SECOND);
    assert_eq!(slack, Outcome::OutOfBounds { buffer: 1, write_to_input: false });
}

/// The ABI's alignment, as the runner places buffers for timing: outputs on a 64-byte boundary,
/// inputs 16 bytes past one (where numpy's large arrays lie), so that a kernel assuming more of
/// an input fails here rather than in a user's program; verification keeps inputs aligned and
/// ending at their guard page (see `reaching_past_a_buffer_names_it`).
#[test]
fn timed_inputs_lie_16_bytes_past_a_cache_line_and_outputs_on_one() {
    let cache = tempfile::tempdir().unwrap();
    let source = "#include <stdint.h>\nvoid k(const float *x, float *out) { out[0] = (uintptr_t)x % 64; out[1] = (uintptr_t)out % 64; out[2] = out[3] = 0; }";
    let library = Compiler::new(cache.path()).compile(source, &["-O2".into()]).unwrap().library;
    let mut session = runner(10 * SECOND).start_for_timing(&library, "k", &[f32s(&[4])], &[f32s(&[4])]).unwrap().unwrap();
    session.set_input(0, &ArrayD::zeros(IxDyn(&[4]))).unwrap();
    assert!(matches!(session.call().unwrap(), ollie_runner::Call::Returned { .. }));
    assert_eq!(session.output(0).iter().copied().collect::<Vec<_>>(), vec![16.0, 0.0, 0.0, 0.0]);
    session.finish();
}

#[test]
fn writing_an_input_is_caught() {
    let outcome = run("void k(float *x, float *out) { x[0] = 0; out[0] = 1; }", 10 * SECOND);
    assert_eq!(outcome, Outcome::OutOfBounds { buffer: 0, write_to_input: true });
}

#[test]
fn system_calls_beyond_memory_and_threads_are_forbidden() {
    let file = run("#include <stdio.h>\nvoid k(const float *x, float *out) { FILE *f = fopen(\"/etc/hostname\", \"r\"); out[0] = f ? 1 : 0; }", 10 * SECOND);
    assert!(matches!(file, Outcome::Forbidden { syscall: 257 } | Outcome::Forbidden { syscall: 2 }), "{file:?}");
    let socket = run("#include <sys/socket.h>\nvoid k(const float *x, float *out) { out[0] = socket(AF_INET, SOCK_STREAM, 0); }", 10 * SECOND);
    assert_eq!(socket, Outcome::Forbidden { syscall: 41 });
    let fork = run("#include <unistd.h>\nvoid k(const float *x, float *out) { out[0] = fork(); }", 10 * SECOND);
    assert_eq!(fork, Outcome::Forbidden { syscall: 56 });
}

#[test]
fn openmp_kernels_run() {
    let source = "void k(const float *restrict x, float *restrict out) {\n#pragma omp parallel for num_threads(2)\n  for (int i = 0; i < 4; i++) out[i] = x[i] + 1;\n}";
    let outcome = run_with(source, &["-O2", "-fopenmp"], 10 * SECOND);
    let Outcome::Ran { outputs, .. } = outcome else { panic!("{outcome:?}") };
    assert_eq!(outputs[0].iter().copied().collect::<Vec<_>>(), vec![2.0, 3.0, 4.0, 5.0]);
}

/// Heap temporaries allocated and freed on the threads of a parallel loop (as the emitter
/// writes temporaries past its stack limit living in a loop on threads) run: glibc reads
/// /proc/sys/vm/overcommit_memory when it gives a thread arena's memory back, which the sandbox
/// would refuse; it never gives it back there.
#[test]
fn openmp_kernels_freeing_heap_temporaries_on_their_threads_run() {
    let source = "#include <stdlib.h>\n#include <string.h>\nvoid k(const float *restrict x, float *restrict out) {\n  for (int i = 0; i < 4; i++) out[i] = 1;\n#pragma omp parallel for num_threads(2) schedule(static) reduction(+: out[:4])\n  for (int j = 0; j < 512; j++) {\n    float *a = aligned_alloc(64, 96 << 10), *b = aligned_alloc(64, 96 << 10), *c = aligned_alloc(64, 96 << 10);\n    if (!a || !b || !c) abort();\n    memset(a, 0, 96 << 10); memset(b, 0, 96 << 10); memset(c, 0, 96 << 10);\n    a[j] = x[j % 4];\n    out[j % 4] += (a[j] + b[j] + c[j]) / 128;\n    free(c); free(b); free(a);\n  }\n}";
    let outcome = run_with(source, &["-O2", "-fopenmp"], 10 * SECOND);
    let Outcome::Ran { outputs, .. } = outcome else { panic!("{outcome:?}") };
    assert_eq!(outputs[0].iter().copied().collect::<Vec<_>>(), vec![2.0, 3.0, 4.0, 5.0]);
}

#[test]
fn a_session_calls_the_kernel_on_new_inputs_each_time() {
    let cache = tempfile::tempdir().unwrap();
    let library = Compiler::new(cache.path())
        .compile("void k(const float *restrict x, float *restrict out) { for (int i = 0; i < 4; i++) out[i] = 3 * x[i]; }", &[])
        .unwrap()
        .library;
    let mut session = runner(10 * SECOND).start(&library, "k", &[f32s(&[4])], &[f32s(&[4])]).unwrap().unwrap();
    for round in 0..5 {
        let x = ArrayD::from_shape_vec(IxDyn(&[4]), (0..4).map(|i| (round * 10 + i) as f64).collect()).unwrap();
        session.set_input(0, &x).unwrap();
        session.poison_outputs();
        assert!(matches!(session.call().unwrap(), ollie_runner::Call::Returned { .. }));
        assert_eq!(session.output(0), x.mapv(|v| 3.0 * v));
    }
    assert_eq!(session.damaged_canary(), None);
    session.finish();
}

/// A timing session is stopped between calls (its OpenMP team pinned, spinning frozen): every
/// call continues it, the kernel's threads still do their work, and it ends promptly while
/// stopped.
#[test]
fn a_timing_session_is_stopped_between_calls_and_still_calls_and_ends() {
    let cache = tempfile::tempdir().unwrap();
    let source = "void k(const float *restrict x, float *restrict out) {\n#pragma omp parallel for num_threads(2)\n  for (int i = 0; i < 64; i++) out[i] = 2 * x[i];\n}";
    let library = Compiler::new(cache.path()).compile(source, &["-O2".into(), "-fopenmp".into()]).unwrap().library;
    let mut session = runner(10 * SECOND).start_for_timing(&library, "k", &[f32s(&[64])], &[f32s(&[64])]).unwrap().unwrap();
    // The worker's scheduling state from /proc once the stop has taken effect (signals arrive
    // asynchronously): `T` when stopped.
    let state = |s: &ollie_runner::Session| {
        let read = || {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", s.pid())).unwrap();
            stat[stat.rfind(')').unwrap() + 2..].chars().next().unwrap()
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(1);
        while read() != 'T' && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        read()
    };
    assert_eq!(state(&session), 'T', "stopped before its first call");
    for round in 0..4 {
        let x = ArrayD::from_shape_vec(IxDyn(&[64]), (0..64).map(|i| (round * 100 + i) as f64).collect()).unwrap();
        session.set_input(0, &x).unwrap();
        session.poison_outputs();
        assert!(matches!(session.call().unwrap(), ollie_runner::Call::Returned { .. }));
        assert_eq!(session.output(0), x.mapv(|v| 2.0 * v));
        session.pause();
        assert_eq!(state(&session), 'T', "stopped after call {round}");
    }
    let started = std::time::Instant::now();
    session.finish();
    assert!(started.elapsed() < Duration::from_secs(1), "a stopped worker is continued to end: {:?}", started.elapsed());
}
