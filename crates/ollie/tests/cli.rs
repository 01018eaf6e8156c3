//! The command line as a user meets it: exit codes, `ollie eval` on .npy files, and the
//! messages for wrong inputs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ndarray::{ArrayD, IxDyn};
use ndarray_npy::{ReadNpyExt, WriteNpyExt};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn ollie(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ollie")).args(args).current_dir(root()).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn save<T: ndarray_npy::WritableElement>(path: &Path, shape: &[usize], f: impl Fn(usize) -> T) {
    let n: usize = shape.iter().product();
    let a = ArrayD::from_shape_vec(IxDyn(shape), (0..n).map(f).collect()).unwrap();
    a.write_npy(std::fs::File::create(path).unwrap()).unwrap();
}

#[test]
fn every_error_spec_exits_2_with_its_code_and_warnings_exit_0() {
    let dir = root().join("test_data/err");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "py") {
            continue;
        }
        n += 1;
        let source = std::fs::read_to_string(&path).unwrap();
        let mut args = vec!["graph".to_string()];
        let mut spec = path.display().to_string();
        for word in source.lines().filter_map(|l| l.strip_prefix("# check:")).flat_map(|l| l.split_whitespace()) {
            if let Some(k) = word.strip_prefix("kernel=") {
                spec = format!("{spec}::{k}");
            } else if let Some(d) = word.strip_prefix("dim=") {
                args.push(format!("--dim={d}"));
            }
        }
        args.push(spec);
        let error_json = tempfile::NamedTempFile::new().unwrap();
        args.push("--error-json".into());
        args.push(error_json.path().display().to_string());
        let out = ollie(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let expected = std::fs::read_to_string(path.with_extension("txt")).unwrap();
        let code = expected.lines().next().unwrap();
        assert!(stderr(&out).contains(code), "{}: stderr lacks `{code}`:\n{}", path.display(), stderr(&out));
        let warning_only = expected.contains('⚠');
        let want = if warning_only { 0 } else { 2 };
        assert_eq!(out.status.code(), Some(want), "{}: {}", path.display(), stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{}", path.display());
        if !warning_only {
            // The same error as data, for programs (the Python package's `SpecError`).
            let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(error_json.path()).unwrap()).unwrap();
            assert_eq!((json["error"].as_str(), json["code"].as_str()), (Some("spec"), Some(code)), "{}", path.display());
            assert!(stderr(&out).contains(json["message"].as_str().unwrap().trim_end()), "{}", path.display());
        }
    }
    assert!(n >= 30);
}

#[test]
fn eval_reads_f32_and_f64_inputs_and_writes_numpy_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (x, g, b) = (tmp.path().join("x.npy"), tmp.path().join("g.npy"), tmp.path().join("b.npy"));
    save(&x, &[256, 1024], |i| ((i % 97) as f32 - 48.0) / 7.0);
    save(&g, &[1024], |i| 1.0 + (i % 5) as f64);
    save(&b, &[1024], |_| 0.5f32);
    let out_dir = tmp.path().join("out");
    let out = ollie(&[
        "eval", "examples/layernorm.py",
        "--input", &format!("x={}", x.display()),
        "--input", &format!("gamma={}", g.display()),
        "--input", &format!("beta={}", b.display()),
        "--out", out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("out: f32[256,1024] sum="));
    let y = ArrayD::<f32>::read_npy(std::fs::File::open(out_dir.join("out.npy")).unwrap()).unwrap();
    assert_eq!(y.shape(), &[256, 1024]);
    // Check one element against a hand computation of layernorm (gamma = 4 at column 3).
    let row: Vec<f64> = (0..1024).map(|i| (((i % 97) as f32 - 48.0) / 7.0) as f64).collect();
    let mu = row.iter().sum::<f64>() / 1024.0;
    let var = row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / 1024.0;
    let want = (row[3] - mu) / (var + 1e-5).sqrt() * 4.0 + 0.5;
    assert!((y[[0, 3]] as f64 - want).abs() < 1e-5, "{} vs {want}", y[[0, 3]]);
}

#[test]
fn eval_tuple_outputs_are_out0_out1() {
    let tmp = tempfile::tempdir().unwrap();
    let out = ollie(&["eval", "test_data/corpus/batchnorm_stats.py", "--random", "3", "--out", tmp.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    for name in ["out0.npy", "out1.npy", "out2.npy"] {
        assert!(tmp.path().join(name).exists(), "{name} missing");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
    assert!(stdout.lines().nth(1).unwrap().starts_with("out1: f32[8] sum="));
}

#[test]
fn eval_random_is_deterministic_per_seed() {
    let a = ollie(&["eval", "examples/softmax.py", "--random", "5"]);
    let b = ollie(&["eval", "examples/softmax.py", "--random", "5"]);
    let c = ollie(&["eval", "examples/silu_mul.py", "--random", "5", "--dim", "T=4"]);
    let d = ollie(&["eval", "examples/silu_mul.py", "--random", "6", "--dim", "T=4"]);
    assert!(a.status.success() && c.status.success());
    assert_eq!(a.stdout, b.stdout);
    assert_ne!(c.stdout, d.stdout);
    assert!(String::from_utf8_lossy(&c.stdout).starts_with("out: f32[4,4096]"));
}

#[test]
fn eval_names_wrong_shape_dtype_and_missing_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let wrong_shape = tmp.path().join("ws.npy");
    save(&wrong_shape, &[64, 100], |_| 0f32);
    let ints = tmp.path().join("ints.npy");
    save(&ints, &[64, 4096], |i| i as i64);
    let cases: &[(&[&str], &str)] = &[
        (&["--input", &format!("x={}", wrong_shape.display())], "expected shape [64, 4096] (f32[64,4096]), got shape [64, 100] (float32)"),
        (&["--input", &format!("x={}", ints.display())], "dtype int64 is not supported; expected float32 or float64 with shape [64, 4096]"),
        (&[], "missing input `x` (f32[64,4096]): pass --input x=FILE.npy"),
        (&["--input", &format!("y={}", ints.display())], "the kernel has no parameter `y` (parameters: x)"),
        (&["--input", "x=/nonexistent.npy"], "cannot open"),
    ];
    for (extra, message) in cases {
        let mut args = vec!["eval", "examples/softmax.py"];
        args.extend_from_slice(extra);
        let out = ollie(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn usage_errors_exit_2() {
    for args in [&["eval", "examples/softmax.py", "--dim", "T"][..], &["frobnicate"], &["graph", "missing.py"], &["graph", "examples/softmax.py::nope"]] {
        let out = ollie(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_problem_too_large_for_the_machine_is_refused_before_anything_runs() {
    // 10¹⁰ elements of softmax: hundreds of GB to verify, on any machine this runs on.
    let kernel = "test_data/verify/softmax/ok_pairwise.c";
    for args in [&["check", "test_data/verify/softmax.py", kernel, "--dim", "B=33333334"][..], &["bench", "test_data/verify/softmax.py", kernel, "--dim", "B=33333334"]] {
        let out = ollie(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("is too large for this machine") && err.contains("GB is available"), "{err}");
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = ollie(&["optimize", "test_data/verify/softmax.py", "--dim", "B=33333334", "--time", "5s", "--out", out_dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("is too large for this machine"));
    assert!(std::fs::read_dir(out_dir.path()).unwrap().next().is_none(), "nothing written");
}

#[test]
fn graph_prints_the_selected_kernel() {
    let out = ollie(&["graph", "test_data/err/several_kernels.py::second"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("kernel second(x: f32[4]) {"), "{text}");
    assert!(ollie_graph::parse(&text).is_ok());
}

#[test]
fn dim_overrides_flow_into_dimension_expressions() {
    // `g: "f32[D // 2, L - K + 1]"` with `D = 2 * C`: both follow the overridden constants.
    let out = ollie(&["graph", "test_data/corpus/dim_expressions.py", "--dim", "L=64", "--dim", "C=8"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("kernel dim_expressions(x: f32[8,64], w: f32[8,3], g: f32[8,62]) {"), "{text}");
}

#[test]
fn machine_measures_caches_and_reports_ceilings() {
    let cache = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ollie")).args(args).env("XDG_CACHE_HOME", cache.path()).output().unwrap()
    };
    let first = run(&["machine", "--refresh", "--array-mib", "8", "--repetitions", "1"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let text = String::from_utf8_lossy(&first.stdout).into_owned();
    let rows: Vec<Vec<f64>> = text
        .lines()
        .filter_map(|l| {
            let cols: Vec<f64> = l.split_whitespace().filter_map(|w| w.parse().ok()).collect();
            (cols.len() == 3).then_some(cols)
        })
        .collect();
    let threads = std::thread::available_parallelism().unwrap().get();
    assert_eq!(rows.len(), threads, "{text}");
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row[0], (i + 1) as f64);
        assert!(row[1] > 0.0 && row[1].is_finite() && row[2] > 0.0 && row[2].is_finite(), "{text}");
    }
    assert!(text.lines().any(|l| l.trim_start().starts_with("24KiB") && l.split_whitespace().nth(1).is_some_and(|g| g.split('/').count() == threads)), "{text}");
    let stored = cache.path().join("ollie/machine.json");
    let json = std::fs::read_to_string(&stored).unwrap();
    assert!(json.contains("\"bandwidth_gbs\"") && json.contains("\"cache_bandwidth\""));
    assert!(text.contains("best of 1 measurement); measured now"), "{text}");
    // The second run probes: the figures are current (cached), or the probe found them low and
    // the machine was measured again, the new figures combined with the old.
    let second = run(&["machine", "--array-mib", "8", "--repetitions", "1"]);
    let text = String::from_utf8_lossy(&second.stdout).into_owned();
    assert!(
        text.contains("best of 1 measurement); cached (a quick probe found the figures current)")
            || text.contains("best of 2 measurements); measured again: a quick probe ran"),
        "{text}"
    );
    // Ceilings of another machine (the project's machines change between sessions) are not used.
    let mut other: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stored).unwrap()).unwrap();
    other["cpu"] = "another CPU".into();
    std::fs::write(&stored, other.to_string()).unwrap();
    let third = run(&["machine", "--array-mib", "8", "--repetitions", "1"]);
    let text = String::from_utf8_lossy(&third.stdout).into_owned();
    assert!(text.contains("best of 1 measurement); measured now") && !text.contains("another CPU"), "{text}");
}

/// A cache directory whose machine.json has the given ceilings (so no test measures).
fn machine_cache(gflops: f64, gbs: f64) -> tempfile::TempDir {
    let cache = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(cache.path().join("ollie")).unwrap();
    let json = format!(
        r#"{{"cpu":"test","isa":"scalar","last_level_cache_bytes":1048576,"ceilings":[{{"threads":1,"bandwidth_gbs":{gbs},"peak_gflops":{gflops}}}],"cache_bandwidth":[{{"bytes":524288,"gbs":[{gbs}]}}],"measured_at":0,"pinned":true}}"#
    );
    std::fs::write(cache.path().join("ollie/machine.json"), json).unwrap();
    cache
}

fn bench(cache: &tempfile::TempDir, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ollie")).arg("bench").args(args).env("XDG_CACHE_HOME", cache.path()).current_dir(root()).output().unwrap()
}

#[test]
fn bench_times_two_kernels_interleaved_with_roofline_figures() {
    let cache = machine_cache(100.0, 20.0);
    let out = bench(&cache, &["test_data/verify/softmax.py", "test_data/verify/softmax/ok_pairwise.c", "--vs", "test_data/verify/softmax/ok_reciprocal.c", "--calls", "5", "--warmups", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("roofline floor"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("ok_pairwise.c ") && l.ends_with('%')), "{text}");
    assert!(text.lines().any(|l| l.starts_with("ok_reciprocal.c ") && l.ends_with('%')), "{text}");
    assert!(text.contains("ratio ok_pairwise.c / ok_reciprocal.c:") && text.contains("over 5 interleaved pairs"), "{text}");
}

#[test]
fn bench_builds_the_second_kernel_with_its_own_flags() {
    let cache = machine_cache(100.0, 20.0);
    let dir = tempfile::tempdir().unwrap();
    let source = std::fs::read_to_string(root().join("test_data/verify/softmax/ok_reciprocal.c")).unwrap();
    let vs = dir.path().join("needs_its_flags.c");
    std::fs::write(&vs, format!("#ifndef OLLIE_VS\n#error built without its own flags\n#endif\n{source}")).unwrap();
    let args = ["test_data/verify/softmax.py", "test_data/verify/softmax/ok_pairwise.c", "--vs", vs.to_str().unwrap(), "--calls", "3", "--warmups", "0"];
    let own = bench(&cache, &[&args[..], &["--vs-flags", "-O2 -march=native -DOLLIE_VS"]].concat());
    let text = String::from_utf8_lossy(&own.stdout);
    assert!(own.status.success(), "{text}{}", stderr(&own));
    assert!(text.contains("ratio ok_pairwise.c / needs_its_flags.c:"), "{text}");
    let shared = bench(&cache, &args);
    assert!(!shared.status.success() && stderr(&shared).contains("built without its own flags"), "{}", stderr(&shared));
}

#[test]
fn bench_checks_every_timed_call_and_the_roofline() {
    let cache = machine_cache(100.0, 20.0);
    let lazy = bench(&cache, &["test_data/verify/softmax.py", "test_data/verify/softmax/bad_lazy.c", "--calls", "5", "--warmups", "1"]);
    assert_eq!(lazy.status.code(), Some(1), "{}", String::from_utf8_lossy(&lazy.stdout));
    // After three honest calls it returns a constant: wrong, and impossibly fast.
    let text = String::from_utf8_lossy(&lazy.stdout);
    assert!(text.contains("rejected: inaccurate") || text.contains("faster than any kernel can be"), "{text}");
    // A machine that cannot do the work in under an hour: any real call is impossibly fast.
    let slow = machine_cache(1e-12, 1e-12);
    let fast = bench(&slow, &["test_data/verify/softmax.py", "test_data/verify/softmax/ok_pairwise.c", "--calls", "3", "--warmups", "0"]);
    assert_eq!(fast.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&fast.stdout).contains("faster than any kernel can be"), "{}", String::from_utf8_lossy(&fast.stdout));
}

#[test]
fn a_rejection_saves_its_inputs_and_later_checks_try_them_first() {
    let cache = machine_cache(1e6, 1e6);
    let certs = tempfile::tempdir().unwrap();
    let check = |seed: &str| {
        Command::new(env!("CARGO_BIN_EXE_ollie"))
            .args(["check", "test_data/verify/softmax.py", "test_data/verify/softmax/bad_small_only.c", "--json", "--seed", seed, "--certificate"])
            .arg(certs.path().join("c.json"))
            .env("XDG_CACHE_HOME", cache.path())
            .current_dir(root())
            .output()
            .unwrap()
    };
    let first = check("1");
    assert_eq!(first.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(report["rejection"]["test"]["family"], "large");
    let saved: Vec<_> = std::fs::read_dir(cache.path().join("ollie/counterexamples")).unwrap().collect();
    assert_eq!(saved.len(), 1, "one spec directory");
    let second = check("2");
    let report: serde_json::Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(report["rejection"]["test"]["family"], "saved-counterexample", "{report}");
    assert_eq!(report["rejection"]["test"]["call"], 1);
}

/// `ollie lower --rules` prints what each sketch rule does (test_data/rules holds the stage tests).
#[test]
fn lower_rules_says_what_each_sketch_rule_does() {
    let o = ollie(&["lower", "bench/scoreboard/jacobi2d.py", "--rules", "--lanes", "8"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.lines().any(|l| l == "register-tile no match: no reduction of more than 8 steps (a loop nest that accumulates into each element of its output, as a product does)"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("threads applied: i0 (2046 iterations)")), "{text}");
    let both = ollie(&["lower", "bench/scoreboard/jacobi2d.py", "--rules", "--sketch", "0"]);
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
}

/// Vectorized loops of exp, log, tanh, sqrt, fabs and small integer powers use the emitter's
/// vector math: every such kernel, at 4, 8 and 16 lanes (300 iterations: tails too), passes
/// the verifier on every input family.
#[test]
fn kernels_with_vector_math_pass_the_verifier() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("vector_math.py");
    let source = "import numpy as np\n\n\ndef vector_math(x: \"f32[8, 300]\"):\n    silu = x / (1.0 + np.exp(-x))\n    return np.exp(x), np.log(np.abs(x)), np.tanh(x), np.sqrt(np.abs(x)) + x**3 - x**2 * x**4, silu\n";
    std::fs::write(&spec, source).unwrap();
    let spec = spec.to_str().unwrap();
    let ir = ollie(&["lower", spec, "--ir"]);
    assert!(ir.status.success(), "{}", stderr(&ir));
    // Every inner loop, vectorized.
    let inner: Vec<String> = String::from_utf8_lossy(&ir.stdout).lines().filter(|l| l.starts_with("  for ")).map(|l| l.split_whitespace().nth(1).unwrap().to_string()).collect();
    assert_eq!(inner.len(), 5, "{}", String::from_utf8_lossy(&ir.stdout));
    for w in [4, 8, 16] {
        let schedule = dir.path().join(format!("vectorize{w}.txt"));
        std::fs::write(&schedule, inner.iter().map(|v| format!("vectorize {v} {w}\n")).collect::<String>()).unwrap();
        let lowered = ollie(&["lower", spec, "--schedule", schedule.to_str().unwrap()]);
        assert!(lowered.status.success(), "{}", stderr(&lowered));
        let c = String::from_utf8(lowered.stdout).unwrap();
        for f in ["vexp", "vlog", "vtanh", "vsqrt", "vabs", "vpowi"] {
            assert!(c.contains(&format!("ollie_{f}{w}(")), "no {f} at {w} lanes:\n{c}");
        }
        let kernel = dir.path().join(format!("vector_math{w}.c"));
        std::fs::write(&kernel, c).unwrap();
        // Built for this machine, and without AVX-512 (the code an AVX2 machine runs).
        for flags in ["-O3 -march=native", "-O3 -march=native -mno-avx512f"] {
            let check = ollie(&["check", spec, kernel.to_str().unwrap(), "--seed", "7", "--flags", flags]);
            assert!(check.status.success(), "{w} lanes, {flags}: {}{}", String::from_utf8_lossy(&check.stdout), stderr(&check));
        }
    }
}

/// Sketches for vectors of `lanes` floats and caches of 32 KiB and 1 MiB per core (the blocked
/// variants are built whatever this machine's caches are).
fn target(lanes: u32) -> ollie_search::Target {
    ollie_search::Target { lanes, caches: Some(ollie_search::Caches { l1d_bytes: 32 << 10, l2_bytes: 1 << 20 }) }
}

/// Runs `ollie check` on every sketch, at 8 and 16 lanes (AVX2 and AVX-512 widths, both of which
/// compile on either machine), of each spec at its dims: how many were checked, and their steps.
fn check_every_sketch(dir: &Path, cases: &[(&str, &[(&str, i64)])]) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut steps: Vec<String> = Vec::new();
    for (spec, dims) in cases {
        let path = root().join(spec);
        let source = std::fs::read_to_string(&path).unwrap();
        let options = ollie_spec::Options { dims: dims.iter().map(|(n, v)| (n.to_string(), *v)).collect(), ..Default::default() };
        let graph = ollie_spec::compile(&source, &options).unwrap().graph;
        let naive = ollie_loops::lower(&graph).unwrap();
        for lanes in [8, 16] {
            let sketches = ollie_search::sketches(&naive, &target(lanes));
            assert!(!sketches.is_empty(), "{spec}: no sketch");
            for (k, schedule) in sketches.iter().enumerate() {
                let nest = schedule.apply(&naive).unwrap();
                steps.extend(schedule.steps.iter().map(|s| s.to_string()));
                let kernel = dir.join(format!("k{checked}.c"));
                std::fs::write(&kernel, ollie_loops::emit_c(&nest)).unwrap();
                let mut args = vec!["check".to_string(), path.display().to_string(), kernel.display().to_string(), "--seed".into(), "3".into(), "--flags".into(), schedule.compile_flags(&nest).join(" ")];
                args.extend(dims.iter().map(|(n, v)| format!("--dim={n}={v}")));
                let out = ollie(&args.iter().map(String::as_str).collect::<Vec<_>>());
                assert!(out.status.success(), "{spec} {dims:?}, sketch {k} at {lanes} lanes:\n{schedule}\n{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
                checked += 1;
            }
        }
    }
    (checked, steps)
}

#[test]
fn every_sketch_of_the_memory_bound_examples_passes_the_verifier() {
    // Sizes with vector tails and reductions that no accumulator count divides, short outer loops
    // (joined to the loops inside them), as well as the examples' own shapes shrunk.
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[(&str, i64)])] = &[
        ("examples/softmax.py", &[("B", 3), ("N", 336)]),
        ("examples/softmax.py", &[("B", 5), ("N", 300)]),
        ("examples/layernorm.py", &[("B", 4), ("D", 1024)]),
        ("examples/rmsnorm.py", &[("B", 2), ("D", 520)]),
        ("examples/silu_mul.py", &[("T", 3), ("F", 100)]),
        ("bench/suite/log_softmax.py", &[("B", 6), ("N", 256)]),
        // A top-level reduction over rows (rfactor, then threads) after the fused row loop.
        ("test_data/corpus/cross_entropy.py", &[("B", 64), ("V", 300)]),
    ];
    let (checked, steps) = check_every_sketch(dir.path(), cases);
    assert!(checked >= 30, "{checked} sketches checked");
    assert!(steps.iter().any(|s| s.starts_with("join ")) && steps.iter().any(|s| s.starts_with("rfactor ")) && steps.iter().any(|s| s.starts_with("stream ")) && steps.iter().any(|s| s.starts_with("prefetch ")), "the cases do not reach join, rfactor, stream and prefetch: {steps:?}");
}

/// Padded windows (a max pool padded with -inf, depthwise and 1-D convolutions, edge padding):
/// every sketch passes the verifier, whose inputs put infinities and NaNs at the borders, and
/// the sketches read the padding in place beside those writing the padded copy — the interior
/// of the loops vectorized cut to whole vectors.
#[test]
fn every_sketch_of_padded_windows_passes_the_verifier_and_some_read_the_padding_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[(&str, i64)])] = &[
        ("bench/convolutions/resnet_maxpool3x3_s2.py", &[("C", 4)]),
        ("bench/convolutions/mobilenet_dw3x3.py", &[("N", 1), ("C", 4)]),
        ("test_data/corpus/conv1d_same_pad.py", &[]),
        ("test_data/corpus/smooth_edge_pad.py", &[]),
    ];
    let (checked, steps) = check_every_sketch(dir.path(), cases);
    assert!(checked >= 16, "{checked} sketches checked");
    assert!(steps.iter().any(|s| s.starts_with("guard ")), "no sketch reads the padding in place: {steps:?}");
    assert!(steps.iter().any(|s| s.starts_with("peel ") && s.split(' ').count() == 3), "no interior cut to whole vectors: {steps:?}");
    assert!(steps.iter().any(|s| s.starts_with("fold ")), "no sketch writes the padded copy: {steps:?}");
}

/// A contraction whose positions no vector divides (203, and 1599 as wav2vec's): every sketch
/// passes the verifier, and one tiles whole blocks of positions apart from the remainder, each
/// part a contraction of its own.
#[test]
fn a_contraction_no_vector_divides_is_tiled_in_whole_blocks_and_a_remainder() {
    let dir = tempfile::tempdir().unwrap();
    let (checked, steps) = check_every_sketch(dir.path(), &[("test_data/corpus/conv1d_remainder.py", &[])]);
    assert!(checked >= 6, "{checked} sketches checked");
    assert!(steps.windows(2).any(|w| w[0].starts_with("peel ") && w[0].split(' ').count() == 3 && w[1].starts_with("distribute ")), "no remainder apart: {steps:?}");
}

/// A strided convolution's windows (the input read two floats apart along the output positions)
/// are packed per panel of positions, a row per tap, so that a register tile over output
/// channels × positions loads them contiguous; every sketch passes the verifier.
#[test]
fn a_strided_convolution_packs_its_windows_for_the_register_tile() {
    let dir = tempfile::tempdir().unwrap();
    let (checked, steps) = check_every_sketch(dir.path(), &[("test_data/corpus/conv1d_strided.py", &[])]);
    assert!(checked >= 6, "{checked} sketches checked");
    assert!(steps.iter().any(|s| s.starts_with("cache x ")), "the input is never packed: {steps:?}");
}

#[test]
fn the_first_sketch_of_softmax_computes_each_row_in_one_parallel_loop() {
    // The rules as a performance engineer would apply them: the four row loops fused, the exp
    // row and the row's max and sum folded into the row loop, the exp row stored while the sum
    // accumulates (the exp loop sunk past the sum's initialization and fused with it), reductions
    // in vector accumulators, the output's stores past the caches, rows on threads.
    let source = std::fs::read_to_string(root().join("examples/softmax.py")).unwrap();
    let naive = ollie_loops::lower(&ollie_spec::compile(&source, &Default::default()).unwrap().graph).unwrap();
    let first = ollie_search::sketches(&naive, &target(16)).remove(0);
    let text = first.to_string();
    for step in ["fuse i0 i2", "fuse i0 i4", "fuse i0 i6", "sink i3", "fuse i3 i5", "fold t1 i0", "fold t5 i0", "fold t6 i0", "accumulators i1 64", "accumulators i3 64", "vectorize i7 16", "stream i7", "parallel i0"] {
        assert!(text.lines().any(|l| l == step), "no `{step}` in\n{text}");
    }
    let nest = first.apply(&naive).unwrap();
    let printed = nest.to_string();
    assert!(printed.contains("temp t5: f32[4096] in i0") && printed.starts_with("kernel softmax") && printed.contains("for parallel i0 in 0..64 {"), "{printed}");
    // One loop at the top: each row read from memory once.
    assert_eq!(nest.body.len(), 1, "{printed}");
}

/// A reduction down the columns of a row-major array (`x.var(axis=0)`): its first sketch walks
/// the rows in a chunk of rows per thread (split-K), the columns in vector lanes with partial
/// results per chunk, combined after (naively, each output walks down its column a cache line a
/// row), `x - mean` computed where the second walk reads it; every sketch of the column
/// reductions passes the verifier, with tails and blocks no vector divides.
#[test]
fn the_first_sketch_of_a_column_reduction_walks_the_rows_with_its_columns_in_lanes() {
    let source = std::fs::read_to_string(root().join("bench/scoreboard/column_variance.py")).unwrap();
    let options = ollie_spec::Options { dims: vec![("N".into(), 64), ("F".into(), 64)], ..Default::default() };
    let naive = ollie_loops::lower(&ollie_spec::compile(&source, &options).unwrap().graph).unwrap();
    let first = ollie_search::sketches(&naive, &target(16)).remove(0);
    let text = first.to_string();
    for step in ["inline t7 i2", "splitk i1 2", "reorder i0 i1", "splitk i5 2", "reorder i4 i5", "parallel i7"] {
        assert!(text.lines().any(|l| l == step), "no `{step}` in\n{text}");
    }
    let printed = first.apply(&naive).unwrap().to_string();
    assert!(printed.contains("for parallel i7 in 0..2 {") && printed.contains("  for i1 in 0..32 {\n    for vector16 i0 in 0..64 {"), "{printed}");
    // Two column reductions of the same array (a mean and a mean of squares, an elementwise
    // loop between them): the second's chunks hoisted next to the first's and fused, and so are
    // their walks over the rows — the array read once.
    let source = std::fs::read_to_string(root().join("bench/scoreboard/column_stats.py")).unwrap();
    let naive = ollie_loops::lower(&ollie_spec::compile(&source, &options).unwrap().graph).unwrap();
    let first = ollie_search::sketches(&naive, &target(16)).remove(0);
    let text = first.to_string();
    for step in ["splitk i1 2", "splitk i4 2", "fuse i6 i10", "fuse i1 i4", "parallel i6"] {
        assert!(text.lines().any(|l| l == step), "no `{step}` in\n{text}");
    }
    let printed = first.apply(&naive).unwrap().to_string();
    assert_eq!(printed.matches("in 0..32 {").count(), 1, "one walk over each chunk's rows:\n{printed}");
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[(&str, i64)])] = &[
        ("bench/scoreboard/column_variance.py", &[("N", 37), ("F", 40)]),
        ("bench/scoreboard/column_softmax.py", &[("N", 50), ("F", 48)]),
        ("bench/scoreboard/column_stats.py", &[("N", 20), ("F", 96)]),
        ("bench/scoreboard/layernorm_param_grads.py", &[("N", 33), ("D", 64)]),
    ];
    let (checked, steps) = check_every_sketch(dir.path(), cases);
    assert!(checked >= 16, "{checked} sketches checked");
    assert!(steps.iter().any(|s| s.starts_with("reorder ")), "no column walk among the sketches: {steps:?}");
}

#[test]
fn every_sketch_of_the_contractions_passes_the_verifier() {
    // Contractions as users write them: `@` with a fused epilogue, a transposed operand (packed),
    // a batched einsum, labels in another order, an output written transposed, sizes no tile
    // divides; decode attention and MLA shrunk.
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("contractions.py");
    let source = "import numpy as np\n\n\ndef contractions(a: \"f32[24, 19]\", b: \"f32[19, 64]\", c: \"f32[64, 19]\", bias: \"f32[64]\", x: \"f32[3, 12, 19]\", y: \"f32[3, 19, 48]\", p: \"f32[7, 5]\", r: \"f32[5, 9]\"):\n    relu = np.maximum(a @ b + bias, 0.0)\n    transposed = a @ c.T\n    batched = np.einsum(\"bij,bjk->bik\", x, y)\n    relabelled = np.einsum(\"kj,ik->ij\", b, a)\n    flipped = np.einsum(\"ik,kj->ji\", a, b)\n    return relu, transposed, batched, relabelled, flipped, p @ r\n";
    std::fs::write(&spec, source).unwrap();
    // Each contraction some tile divides gets one, whatever shape the variant chose: at 8 lanes
    // all but `p @ r` (24 columns: 3 vectors; 64 rows and columns: 6 x 2 vectors, 4 rows).
    let naive = ollie_loops::lower(&ollie_spec::compile(source, &Default::default()).unwrap().graph).unwrap();
    let first = ollie_search::sketches(&naive, &target(8)).remove(0);
    assert_eq!(first.steps.iter().filter(|s| s.to_string().starts_with("registers ")).count(), 5, "{first}");
    let cases: &[(&str, &[(&str, i64)])] = &[
        (spec.to_str().unwrap(), &[]),
        ("examples/matmul.py", &[("M", 48), ("K", 40), ("N", 96)]),
        ("examples/attention_decode.py", &[("B", 2), ("H", 3), ("T", 40), ("D", 32)]),
        ("examples/mla_decode.py", &[("B", 2), ("H", 4), ("T", 24)]),
        // Sixteen heads share the latent cache: the scores are a dot tile.
        ("bench/suite/mla_decode_small_batch.py", &[("T", 64)]),
        // Batch one: the sequence split across threads (split-K).
        ("examples/attention_decode.py", &[("B", 1), ("H", 1), ("T", 1024), ("D", 32)]),
    ];
    let (checked, steps) = check_every_sketch(dir.path(), cases);
    assert!(checked >= 20, "{checked} sketches checked");
    // The blocked variants pack the row operand too (`cache a` at the row block).
    for step in ["cache ", "registers ", "expand ", "splitk ", "cache a "] {
        assert!(steps.iter().any(|s| s.starts_with(step)), "no `{step}` step in the sketches: {steps:?}");
    }
}

#[test]
fn the_blocked_sketch_of_matmul_sizes_its_blocks_from_the_caches() {
    // KC: the packed KC x NR panel of B in half the L1 data cache; MC: the packed MC x KC block
    // of A in half the L2. At 16 lanes the first tile is 8 rows by 2 vectors (NR = 32).
    let source = std::fs::read_to_string(root().join("examples/matmul.py")).unwrap();
    let options = ollie_spec::Options { dims: [("M", 1024), ("K", 1024), ("N", 1024)].iter().map(|(n, v)| (n.to_string(), *v)).collect(), ..Default::default() };
    let naive = ollie_loops::lower(&ollie_spec::compile(&source, &options).unwrap().graph).unwrap();
    let blocked = |l1d_bytes: usize, l2_bytes: usize| -> String {
        let target = ollie_search::Target { lanes: 16, caches: Some(ollie_search::Caches { l1d_bytes, l2_bytes }) };
        let all = ollie_search::sketches(&naive, &target);
        let found = all.iter().find(|s| s.steps.iter().any(|s| s.to_string() == "cache a i0"));
        found.unwrap_or_else(|| panic!("no blocked sketch: {all:?}")).to_string()
    };
    // 32 KiB / 2 / 128 B = 128 steps; 1 MiB / 2 / (128 x 4 B) = 1024 rows: split by 128 tiles.
    let small = blocked(32 << 10, 1 << 20);
    assert!(small.lines().any(|l| l == "split i2 128") && small.lines().any(|l| l == "split i0 128"), "{small}");
    // 64 KiB: 256 steps; 512 KiB / 2 / (256 x 4 B) = 256 rows: 32 tiles of 8.
    let other = blocked(64 << 10, 512 << 10);
    assert!(other.lines().any(|l| l == "split i2 256") && other.lines().any(|l| l == "split i0 32"), "{other}");
    // Without cache sizes, no blocked sketch.
    let none = ollie_search::sketches(&naive, &ollie_search::Target { lanes: 16, caches: None });
    assert!(none.iter().all(|s| !s.steps.iter().any(|s| s.to_string() == "cache a i0")));
}

#[test]
fn the_first_sketch_of_decode_attention_at_batch_one_shares_the_sequence_among_threads() {
    // One query and one head: no batch or head loop to share. The sequence is split instead:
    // `p @ V` in chunks of the sequence (split-K) combined after, the max and the sum likewise,
    // the score and exp loops in parallel chunks that stay vectorized.
    let source = std::fs::read_to_string(root().join("examples/attention_decode.py")).unwrap();
    let options = ollie_spec::Options { dims: [("B", 1), ("H", 1), ("T", 4096), ("D", 64)].iter().map(|(n, v)| (n.to_string(), *v)).collect(), ..Default::default() };
    let naive = ollie_loops::lower(&ollie_spec::compile(&source, &options).unwrap().graph).unwrap();
    for lanes in [8, 16] {
        let first = ollie_search::sketches(&naive, &target(lanes)).remove(0);
        let nest = first.apply(&naive).unwrap();
        let printed = nest.to_string();
        // The three reductions over the sequence (max, sum, p @ V), each in 8 chunks on threads.
        assert_eq!(first.steps.iter().filter(|s| matches!(s, ollie_loops::Step::SplitK { chunks: 8, .. })).count(), 3, "{first}");
        assert_eq!(printed.matches("for parallel").count(), printed.lines().filter(|l| l.starts_with("for ")).count(), "a top-level loop is not on threads:
{printed}");
        assert!(printed.lines().filter(|l| l.starts_with("for parallel ") && l.ends_with(" in 0..8 {")).count() >= 3, "{printed}");
        // The exp pass: on threads in chunks, and in vectors.
        let exp = printed.lines().position(|l| l.contains("= exp(")).unwrap();
        assert!(printed.lines().nth(exp - 1).unwrap().contains(&format!("for vector{lanes} ")), "the exp loop is not vectorized:
{printed}");
    }
}

#[test]
fn the_first_sketch_of_mla_decode_at_batch_one_runs_the_loops_inside_the_batch_on_threads() {
    // The batch loop has one iteration and several loops inside it (the score panels, the
    // softmax rows): those run on threads, not the batch loop of one.
    let source = std::fs::read_to_string(root().join("examples/mla_decode.py")).unwrap();
    let options = ollie_spec::Options { dims: [("B", 1), ("H", 16), ("T", 256)].iter().map(|(n, v)| (n.to_string(), *v)).collect(), ..Default::default() };
    let naive = ollie_loops::lower(&ollie_spec::compile(&source, &options).unwrap().graph).unwrap();
    let first = ollie_search::sketches(&naive, &target(16)).remove(0);
    let printed = first.apply(&naive).unwrap().to_string();
    let lines: Vec<&str> = printed.lines().collect();
    for (k, line) in lines.iter().enumerate() {
        let alone = line.trim_start().starts_with("for parallel ") && line.ends_with(" in 0..1 {") && !lines[k + 1].contains("for joined ");
        assert!(!alone, "a parallel loop of one iteration:\n{printed}");
    }
    let inside = lines.iter().filter(|l| l.starts_with("  for parallel ")).count();
    assert!(inside >= 2, "{inside} parallel loops inside the batch loop:\n{printed}");
}

#[test]
fn the_first_sketch_of_a_product_with_an_operand_contiguous_along_the_reduction_is_a_dot_tile() {
    // MLA's scores `q @ kv.T` over a cache shared by 16 heads: kv is contiguous along the
    // reduction (576), not along the positions, so a packed panel of it would be gathered a
    // float at a time. The tile's outputs are vectors of partial sums along the reduction, in
    // registers, their lanes summed by a tree at the end; kv is read where it lies, the next
    // block of its rows prefetched.
    let source = std::fs::read_to_string(root().join("bench/suite/mla_decode_small_batch.py")).unwrap();
    let options = ollie_spec::Options { dims: [("T", 64)].iter().map(|(n, v)| (n.to_string(), *v)).collect(), ..Default::default() };
    let naive = ollie_loops::lower(&ollie_spec::compile(&source, &options).unwrap().graph).unwrap();
    for lanes in [8, 16] {
        let first = ollie_search::sketches(&naive, &target(lanes)).remove(0);
        let steps: Vec<String> = first.steps.iter().map(|s| s.to_string()).collect();
        // i3 is the scores' reduction loop, i2 their loop over positions.
        assert!(steps.contains(&format!("accumulators i3 {lanes}")) && !steps.contains(&"cache kv i2".to_string()), "{first}");
        // Each step of the reduction prefetches the next block of cache rows.
        assert!(steps.iter().any(|s| s.starts_with("prefetch ") && s.ends_with(" i2")), "{first}");
        let nest = first.apply(&naive).unwrap();
        let printed = nest.to_string();
        assert!(printed.lines().any(|l| l.starts_with("temp acc") && l.ends_with(&format!(" registers {lanes}"))), "{printed}");
        let c = ollie_loops::emit_c(&nest);
        assert!(c.contains(&format!("ollie_reduce_add{lanes}(")), "{c}");
    }
}

#[test]
fn the_first_sketch_of_a_flat_elementwise_kernel_runs_on_threads_and_in_vectors() {
    // A 1-D kernel: one loop, split so that its outer part is shared among threads and its
    // inner part is vectorized (joining it into the parallel loop would leave it scalar); here its stores
    // also stream past the caches.
    let source = "import numpy as np\n\n\ndef silu(x: \"f32[65536]\") -> \"f32[65536]\":\n    return x / (1.0 + np.exp(-x))\n";
    let naive = ollie_loops::lower(&ollie_spec::compile(source, &Default::default()).unwrap().graph).unwrap();
    let first = ollie_search::sketches(&naive, &target(16)).remove(0);
    let printed = first.apply(&naive).unwrap().to_string();
    assert!(printed.contains("for parallel i0 in 0..8 {") && printed.contains("16 i1 in 0..8192 {"), "{first}\n{printed}");
}

#[test]
fn the_first_sketch_of_matmul_holds_a_register_tile_and_packs_b() {
    // BLIS's structure: an MR x NR tile of the output in vector registers while the reduction
    // streams a row of A (broadcast) and a packed panel of B, the panels on threads.
    let source = std::fs::read_to_string(root().join("examples/matmul.py")).unwrap();
    let naive = ollie_loops::lower(&ollie_spec::compile(&source, &Default::default()).unwrap().graph).unwrap();
    for lanes in [8, 16] {
        let first = ollie_search::sketches(&naive, &target(lanes)).remove(0);
        let nest = first.apply(&naive).unwrap();
        let printed = nest.to_string();
        // The tile, in registers, and B's panel, packed at the column loop (a temp of K x NR).
        let registers = printed.lines().find(|l| l.trim_start().starts_with("temp ") && l.contains(" registers ")).unwrap_or_else(|| panic!("no tile in registers at {lanes} lanes:\n{first}\n{printed}"));
        let packed = printed.lines().filter(|l| l.trim_start().starts_with("temp ") && !l.contains(" registers ")).count();
        assert!(packed >= 1, "B is not packed at {lanes} lanes:\n{printed}");
        assert!(printed.contains("for parallel "), "no parallel loop at {lanes} lanes:\n{printed}");
        let c = ollie_loops::emit_c(&nest);
        assert!(c.contains(&format!("ollie_v{lanes}")), "the tile is not held in {lanes}-lane vectors ({registers}):\n{c}");
    }
}

/// A call longer than `--timeout` allows is the user's error, on one line that names the call,
/// its estimate, the limit and the flag (exit 2, nothing written), in every command that runs the
/// naive kernel.
#[test]
fn a_call_over_the_time_limit_is_the_users_error_naming_the_flag() {
    let cache = machine_cache(100.0, 20.0);
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out");
    let dims = ["--dim", "M=256", "--dim", "K=256", "--dim", "N=256", "--timeout", "0.001"];
    let kernel = out_dir.path().join("naive.c");
    std::fs::write(&kernel, ollie(&["lower", "examples/matmul.py", "--dim", "M=256", "--dim", "K=256", "--dim", "N=256"]).stdout).unwrap();
    let kernel = kernel.to_str().unwrap();
    for command in [&["check", "examples/matmul.py", kernel][..], &["bench", "examples/matmul.py", kernel], &["optimize", "examples/matmul.py", "--time", "20s", "--out", out.to_str().unwrap()]] {
        let run = Command::new(env!("CARGO_BIN_EXE_ollie")).args(command).args(dims).env("XDG_CACHE_HOME", cache.path()).current_dir(root()).output().unwrap();
        let err = stderr(&run);
        assert_eq!(run.status.code(), Some(2), "{command:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{command:?}: one line: {err}");
        for part in ["error: the naive kernel of `matmul` did not return within 1.000 ms", "estimated at", "--timeout SECONDS"] {
            assert!(err.contains(part), "{command:?}: `{part}` missing from: {err}");
        }
    }
    assert!(!out.exists(), "optimize wrote nothing");
}

#[test]
fn every_sketch_of_the_16_bit_corpus_passes_the_verifier() {
    // float16 and bfloat16 loads and stores in vectors (8 and 16 lanes) and in tails, sums of
    // 16-bit outputs in float32 temporaries, a cast to bfloat16 inside the kernel.
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[(&str, i64)])] = &[
        ("test_data/corpus/rmsnorm_bf16.py", &[("R", 6), ("D", 200)]),
        ("test_data/corpus/softmax_f16.py", &[]),
        ("test_data/corpus/silu_f16.py", &[("N", 1003)]),
        ("test_data/corpus/kv_cache_f16.py", &[]),
        ("test_data/corpus/residual_bf16.py", &[]),
        ("test_data/corpus/half_reductions.py", &[]),
        ("test_data/corpus/bf16_matmul.py", &[]),
        // A double kernel: its 16-bit loads and stores go lane by lane.
        ("test_data/corpus/mixed_f64_f16.py", &[]),
    ];
    let (checked, steps) = check_every_sketch(dir.path(), cases);
    assert!(checked >= 14, "{checked} sketches checked");
    assert!(steps.iter().any(|s| s.starts_with("vectorize ")), "no sketch vectorizes: {steps:?}");
}

#[test]
fn eval_gathers_from_integer_files_and_refuses_an_index_numpy_refuses() {
    // `embedding_lookup`: wte[ids] + wpe, ids of int64 with a negative one (from the end).
    let tmp = tempfile::tempdir().unwrap();
    let (wte, wpe, ids) = (tmp.path().join("wte.npy"), tmp.path().join("wpe.npy"), tmp.path().join("ids.npy"));
    save(&wte, &[512, 48], |i| (i / 48) as f32);
    save(&wpe, &[64, 48], |_| 0.25f32);
    save(&ids, &[64], |i| if i == 0 { -1i64 } else { i as i64 * 7 });
    let args = |ids: &Path| vec!["eval".to_string(), "test_data/corpus/embedding_lookup.py".into(), "--input".into(), format!("wte={}", wte.display()), "--input".into(), format!("wpe={}", wpe.display()), "--input".into(), format!("ids={}", ids.display())];
    let out = ollie(&args(&ids).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", stderr(&out));
    // Row r of wte holds r: the sum is 511 (id -1) plus 7 * (1 + ... + 63), plus the positions.
    let expected = 48.0 * (511.0 + 7.0 * (63.0 * 64.0 / 2.0) + 64.0 * 0.25);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("sum={expected:.12e}")), "{}", String::from_utf8_lossy(&out.stdout));
    save(&ids, &[64], |i| i as i32 * 9);
    let out = ollie(&args(&ids).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("index 513 is out of bounds for an axis of size 512"), "{}", stderr(&out));
    save(&ids, &[64], |_| 1.0f32);
    let out = ollie(&args(&ids).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("dtype float32 is not supported; expected int32 or int64 with shape [64]"), "{}", stderr(&out));
}

#[test]
fn an_index_the_verifier_cannot_keep_in_range_is_the_users_error() {
    // `ids + 1` is followed (ids drawn one below the rows); `ids * 2` is not, and the inputs
    // drawn index past the table: a usage error that says how to index, not ollie's failure.
    let tmp = tempfile::tempdir().unwrap();
    for (expr, accepted) in [("ids + 1", true), ("ids * 2", false)] {
        let spec = tmp.path().join("shift.py");
        std::fs::write(&spec, format!("import numpy as np\n\n\ndef shifted(table: \"f32[10, 4]\", ids: \"i64[32]\"):\n    return table[{expr}]\n")).unwrap();
        let lowered = ollie(&["lower", spec.to_str().unwrap()]);
        assert!(lowered.status.success(), "{}", stderr(&lowered));
        let kernel = tmp.path().join("shift.c");
        std::fs::write(&kernel, &lowered.stdout).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_ollie")).args(["check", spec.to_str().unwrap(), kernel.to_str().unwrap()]).env("XDG_CACHE_HOME", cache.path()).current_dir(root()).output().unwrap();
        if accepted {
            assert!(out.status.success(), "{expr}: {}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        } else {
            assert_eq!(out.status.code(), Some(2), "{expr}: {}", stderr(&out));
            assert!(stderr(&out).contains("index out of range") && stderr(&out).contains("drawn from the range of the axis it indexes"), "{}", stderr(&out));
        }
    }
}

#[test]
fn every_sketch_of_the_gather_corpus_passes_the_verifier() {
    // Gathers of rows (vector loads at a gathered row), of single elements (lane by lane), in
    // reductions and contractions, from bfloat16 tables; indices of int32 and int64, negative
    // ones among them.
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[(&str, i64)])] = &[
        ("test_data/corpus/embedding_lookup.py", &[("D", 52)]),
        ("test_data/corpus/nll_labels.py", &[]),
        ("test_data/corpus/chosen_logprobs.py", &[]),
        ("test_data/corpus/embedding_bag.py", &[]),
        ("test_data/corpus/embedding_bf16.py", &[("D", 72)]),
        ("test_data/corpus/rope_positions.py", &[]),
        ("test_data/corpus/sampled_softmax.py", &[]),
        ("test_data/corpus/one_hot_loss.py", &[]),
    ];
    let (checked, steps) = check_every_sketch(dir.path(), cases);
    assert!(checked >= 16, "{checked} sketches checked");
    assert!(steps.iter().any(|s| s.starts_with("vectorize ")), "no sketch vectorizes: {steps:?}");
    // The next gathered row prefetched, its index read at a clamped offset.
    assert!(steps.iter().any(|s| s.starts_with("prefetch ")), "no sketch prefetches: {steps:?}");
}

#[test]
fn eval_reads_and_writes_float16_and_bfloat16_files_numpy_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let x = tmp.path().join("x.npy");
    let w = tmp.path().join("w.npy");
    let values = ArrayD::from_shape_fn(ndarray::IxDyn(&[8, 500]), |i| ((i[0] * 500 + i[1]) % 37) as f64 / 9.0 - 2.0);
    ollie_driver::npy::write_npy(&x, &values, ollie_graph::DType::F16).unwrap();
    let out_dir = tmp.path().join("out");
    let out = ollie(&["eval", "test_data/corpus/softmax_f16.py", "--input", &format!("logits={}", x.display()), "--out", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    // numpy reads both files as float16, and the output is numpy's softmax rounded to float16.
    let script = r#"
import sys
import numpy as np
x = np.load(sys.argv[1]); y = np.load(sys.argv[2])
assert x.dtype == np.float16 and y.dtype == np.float16 and y.shape == (8, 500), (x.dtype, y.dtype, y.shape)
f = x.astype(np.float64); e = np.exp(f - f.max(axis=-1, keepdims=True)); r = e / e.sum(axis=-1, keepdims=True)
assert np.array_equal(y, r.astype(np.float16)) or np.abs(y.astype(np.float64) - r).max() <= 2 ** -11 * np.abs(r).max(), np.abs(y - r).max()
print("float16 ok")
"#;
    let py = Command::new("python3").arg("-c").arg(script).arg(&x).arg(out_dir.join("out.npy")).output().unwrap();
    assert!(py.status.success() && String::from_utf8_lossy(&py.stdout).contains("float16 ok"), "{}", String::from_utf8_lossy(&py.stderr));
    // bfloat16 as numpy saves ml_dtypes arrays (V2), only where the parameter is bfloat16.
    let bf = tmp.path().join("bf.npy");
    let saved = Command::new("python3")
        .arg("-c")
        .arg("import sys, numpy as np, ml_dtypes; np.save(sys.argv[1], (np.arange(32 * 256).reshape(32, 256) % 11 - 5).astype(ml_dtypes.bfloat16)); np.save(sys.argv[2], np.ones(256, dtype=ml_dtypes.bfloat16))")
        .arg(&bf)
        .arg(&w)
        .output()
        .unwrap();
    assert!(saved.status.success(), "{}", String::from_utf8_lossy(&saved.stderr));
    let out = ollie(&["eval", "test_data/corpus/rmsnorm_bf16.py", "--input", &format!("x={}", bf.display()), "--input", &format!("weight={}", w.display())]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("out: bf16[32,256] sum="), "{}", String::from_utf8_lossy(&out.stdout));
    let refused = ollie(&["eval", "test_data/corpus/softmax_f16.py", "--input", &format!("logits={}", bf.display())]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("dtype `|V2` is not supported; expected float16 with shape [8, 500]") || stderr(&refused).contains("dtype `<V2` is not supported; expected float16 with shape [8, 500]"), "{}", stderr(&refused));
}
