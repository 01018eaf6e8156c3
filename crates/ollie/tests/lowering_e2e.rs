//! End to end: every corpus spec and example is lowered, emitted as C, compiled with the system
//! C compiler (`-O3 -march=native -Wall -Werror`), run by the runner in a child process on
//! random inputs, and compared with the float64 reference.
//!
//! The bound: on standard-normal inputs (rounded to float32, which the reference sees too), the
//! naive float32 kernel must satisfy ‖y − r‖ ≤ 1e-5 · ‖r‖ per output, and be finite exactly where
//! the reference is (NaN where it is NaN). Float32 rounds each operation to 2⁻²⁴ ≈ 6e-8; the
//! longest sums here (4096 terms) grow that to ~1e-6 in the worst case, so 1e-5 leaves room for
//! honest rounding while any indexing or semantic slip (typically an O(1) error) fails.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ndarray::{ArrayD, IxDyn};
use ollie_runner::{BufferSpec, Compiler, Outcome, Runner};
use ollie_verify::{judge, Family, Tolerance};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// Shrinks the examples whose full size makes the naive kernel slow in a debug test run.
const OVERRIDES: &[(&str, &[(&str, i64)])] = &[
    ("mla_decode.py", &[("T", 256)]),
    ("attention_decode.py", &[("T", 256)]),
    ("matmul.py", &[("M", 128)]),
];

const BOUND: f64 = 1e-5;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The spec files under `dirs`, sorted.
fn specs(dirs: &[&str]) -> Vec<PathBuf> {
    let mut specs: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(root().join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    specs.sort();
    specs
}

/// The spec's graph, with the size overrides of [`OVERRIDES`].
fn graph_of(spec: &Path) -> Result<ollie_graph::Graph, String> {
    let file = spec.file_name().unwrap().to_str().unwrap();
    let dims: Vec<(String, i64)> =
        OVERRIDES.iter().filter(|(f, _)| *f == file).flat_map(|(_, d)| d.iter().map(|(n, v)| (n.to_string(), *v))).collect();
    let source = std::fs::read_to_string(spec).unwrap();
    Ok(ollie_spec::compile(&source, &ollie_spec::Options { kernel: None, dims }).map_err(|d| d.render(file, &source))?.graph)
}

/// Runs `check` on every spec, with a seed of the spec's own (from its file name: a spec's inputs
/// do not change when another spec is added); fails listing each spec it fails on.
fn for_every_spec(dirs: &[&str], check: impl Fn(&Path, u64) -> Result<(), String>) {
    let specs = specs(dirs);
    let mut failures = Vec::new();
    for spec in &specs {
        let seed = spec.file_name().unwrap().to_string_lossy().bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        if let Err(e) = check(spec, seed) {
            failures.push(format!("{}: {e}", spec.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(failures.is_empty(), "{} of {} specs failed:\n{}", failures.len(), specs.len(), failures.join("\n"));
}

/// The worker that runs every kernel here.
fn runner() -> Runner {
    Runner::new(env!("CARGO_BIN_EXE_ollie"), Duration::from_secs(60))
}

/// Compiles `c` with `flags` into a library under `cache`.
fn compile(c: &str, flags: &[&str], cache: &Path) -> Result<PathBuf, String> {
    let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    match Compiler::new(cache).compile(c, &flags) {
        Ok(compiled) => Ok(compiled.library),
        Err(Ok(outcome)) => Err(format!("{}\n{c}", outcome.summary())),
        Err(Err(e)) => Err(e.to_string()),
    }
}

/// Runs `graph`'s kernel in `library` once on `inputs`.
fn run(runner: &Runner, library: &Path, graph: &ollie_graph::Graph, inputs: &[ArrayD<f64>]) -> Result<Vec<ArrayD<f64>>, String> {
    let (specs, outs) = BufferSpec::of(graph);
    let args: Vec<(BufferSpec, &ArrayD<f64>)> = specs.into_iter().zip(inputs).collect();
    match runner.run(library, &graph.name, &args, &outs).map_err(|e| e.to_string())? {
        Outcome::Ran { outputs, .. } => Ok(outputs),
        other => Err(other.summary()),
    }
}

/// Each output within `BOUND` of the reference normwise (in a graph that rounds to a 16-bit
/// float, as a 16-bit output is stored, twice that dtype's unit roundoff more), finite exactly
/// where it is.
fn agrees(graph: &ollie_graph::Graph, reference: &[ArrayD<f64>], outputs: &[ArrayD<f64>]) -> Result<(), String> {
    let half_unit = graph.nodes.iter().map(|n| n.ty.dtype).filter(|d| d.is_half()).map(|d| d.unit_roundoff()).fold(0.0, f64::max);
    let bound = BOUND + 2.0 * half_unit;
    for (k, (r, y)) in reference.iter().zip(outputs).enumerate() {
        let name = graph.output_name(k);
        let (mut err, mut norm) = (0.0f64, 0.0f64);
        for (i, (&yv, &rv)) in y.iter().zip(r.iter()).enumerate() {
            if rv.is_finite() != yv.is_finite() || rv.is_nan() != yv.is_nan() || (rv.is_infinite() && rv != yv) {
                return Err(format!("{name}: element {i} is {yv}, the reference has {rv}"));
            }
            if rv.is_finite() {
                err += (yv - rv) * (yv - rv);
                norm += rv * rv;
            }
        }
        let (err, norm) = (err.sqrt(), norm.sqrt());
        if err > bound * norm {
            return Err(format!("{name}: ‖y − r‖ = {err:e} exceeds {bound:e} · ‖r‖ = {:e}", bound * norm));
        }
    }
    Ok(())
}

/// `a` and `b` with 0 wherever either is NaN.
fn where_neither_is_nan(a: &[ArrayD<f64>], b: &[ArrayD<f64>]) -> (Vec<ArrayD<f64>>, Vec<ArrayD<f64>>) {
    a.iter()
        .zip(b)
        .map(|(a, b)| {
            let keep = |&x: &f64, &y: &f64| if x.is_nan() || y.is_nan() { 0.0 } else { x };
            (ndarray::Zip::from(a).and(b).map_collect(keep), ndarray::Zip::from(b).and(a).map_collect(keep))
        })
        .unzip()
}

/// Standard-normal inputs for `graph`'s parameters, rounded to their type; with `masked`, a tenth
/// of the floating-point elements −∞. An integer parameter is uniform in its index range,
/// negative indices included.
fn normal_inputs(graph: &ollie_graph::Graph, rng: &mut ChaCha8Rng, masked: bool) -> Vec<ArrayD<f64>> {
    graph
        .params
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let range = graph.index_range(k);
            ArrayD::from_shape_simple_fn(IxDyn(&p.ty.shape), || {
                if let Some(r) = range {
                    let n = r.extent as i64;
                    return r.value(rand::RngExt::random_range(rng, if r.negative { -n } else { 0 }..n));
                }
                let x: f64 = StandardNormal.sample(rng);
                let x = if masked && p.ty.dtype.is_float() && rand::RngExt::random_range(rng, 0..10) == 0 { f64::NEG_INFINITY } else { x };
                p.ty.dtype.round(x)
            })
        })
        .collect()
}

#[test]
fn naive_kernels_agree_with_the_reference() {
    for_every_spec(&["test_data/corpus", "examples", "test_data/loops"], check);
}

fn check(spec: &Path, seed: u64) -> Result<(), String> {
    let graph = graph_of(spec)?;
    let nest = ollie_loops::lower(&graph).map_err(|e| e.to_string())?;
    ollie_loops::check(&nest).map_err(|e| format!("the lowered nest is invalid: {e}"))?;
    let cache = tempfile::tempdir().unwrap();
    let library = compile(&ollie_loops::emit_c(&nest), &["-O3", "-march=native", "-Wall", "-Werror"], cache.path())?;
    let inputs = normal_inputs(&graph, &mut ChaCha8Rng::seed_from_u64(seed), false);
    let outputs = run(&runner(), &library, &graph, &inputs)?;
    agrees(&graph, &ollie_graph::evaluate(&graph, &inputs).map_err(|e| e.to_string())?, &outputs)
}

/// Every variant rewriting finds for a corpus spec or example (a scan for a triangular product, a
/// one-pass normalizer for a softmax, another order for a chain, ...) lowers to a valid nest whose
/// kernel agrees with the reference of the spec as written on standard-normal inputs, and on
/// inputs with a tenth of their elements −∞ (masked rows, whole rows among them when short)
/// wherever neither is NaN: an algebraic identity does not keep the NaN of `0 · ∞` or `∞ − ∞`
/// (a prefix sum for `x @ np.triu(ones)`, another order for a chain, a sum of products
/// factored), and the verifier's input families are finite.
#[test]
fn rewritten_kernels_agree_with_the_reference() {
    let fired = std::sync::Mutex::new(0usize);
    for_every_spec(&["test_data/corpus", "examples"], |spec, seed| {
        let graph = graph_of(spec)?;
        let variants = ollie_rewrite::variants(&graph).variants;
        *fired.lock().unwrap() += variants.len();
        let runner = runner();
        for (v, variant) in variants.iter().enumerate() {
            let nest = ollie_loops::lower(&variant.graph).map_err(|e| format!("variant {v}: {e}"))?;
            ollie_loops::check(&nest).map_err(|e| format!("variant {v}: the lowered nest is invalid: {e}\n{}", variant.graph))?;
            let cache = tempfile::tempdir().unwrap();
            let library = compile(&ollie_loops::emit_c(&nest), &["-O3", "-march=native", "-Wall", "-Werror"], cache.path())?;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            for masked in [false, true] {
                let inputs = normal_inputs(&graph, &mut rng, masked);
                let outputs = run(&runner, &library, &variant.graph, &inputs)?;
                let reference = ollie_graph::evaluate(&graph, &inputs).map_err(|e| e.to_string())?;
                let fail = |e: String| format!("variant {v} (masked: {masked}): {e}\n{}", variant.graph);
                if masked {
                    let (reference, outputs) = where_neither_is_nan(&reference, &outputs);
                    agrees(&graph, &reference, &outputs).map_err(fail)?;
                } else {
                    agrees(&graph, &reference, &outputs).map_err(fail)?;
                }
            }
        }
        Ok(())
    });
    assert!(*fired.lock().unwrap() >= 5, "rewriting found too few variants to test");
}

/// The best answer a float32 kernel can give, the reference rounded to float32, must pass the
/// accuracy rule against the naive kernel on every family: otherwise the rule would reject
/// correct kernels. So must the same answer with flush-to-zero (every subnormal read as 0), as
/// float32 hardware and libraries in that mode return it.
#[test]
fn the_rounded_reference_passes_the_accuracy_rule_on_every_family() {
    for_every_spec(&["test_data/corpus", "examples"], rounded_reference_passes);
}

fn rounded_reference_passes(spec: &Path, seed: u64) -> Result<(), String> {
    let graph = graph_of(spec)?;
    let c = ollie_loops::emit_c(&ollie_loops::lower(&graph).map_err(|e| e.to_string())?);
    let cache = tempfile::tempdir().unwrap();
    let library = compile(&c, &["-O3", "-march=native"], cache.path())?;
    let runner = runner();
    let max_rank = graph.params.iter().map(|p| p.ty.rank()).max().unwrap_or(0);
    for family in Family::all(max_rank) {
        let inputs = family.generate(&graph, seed);
        let (reference, bounds) = ollie_graph::evaluate_with_error_bounds(&graph, &inputs).map_err(|e| e.to_string())?;
        let baseline = run(&runner, &library, &graph, &inputs).map_err(|e| format!("{family}: {e}"))?;
        for (k, &o) in graph.outputs.iter().enumerate() {
            let dtype = graph.ty(o).dtype;
            let (tolerance, rounded) = (Tolerance::of(dtype), reference[k].mapv(|v| dtype.round(v)));
            let flushed = rounded.mapv(|v| if v.abs() < tolerance.smallest_normal { 0.0 } else { v });
            for (what, y) in [("rounded", &rounded), ("rounded and flushed", &flushed)] {
                judge(tolerance, &reference[k], &bounds[k], &baseline[k], y).map_err(|e| format!("{family}, output {k}, {what}: {e}"))?;
            }
        }
    }
    Ok(())
}

/// The naive kernel passes the whole verification protocol for every corpus spec (as its own
/// baseline: this checks the protocol's every-element-written, stable-after-return and
/// fresh-inputs rules on real kernels, not accuracy).
#[test]
fn naive_kernels_pass_the_verifier() {
    let runner = runner();
    for_every_spec(&["test_data/corpus", "examples"], |spec, _| {
        let graph = graph_of(spec)?;
        let c = ollie_loops::emit_c(&ollie_loops::lower(&graph).map_err(|e| e.to_string())?);
        let cache = tempfile::tempdir().unwrap();
        // (gcc 12 at plain -O2 hits an internal compiler error on comparisons.py's kernel.)
        let library = compile(&c, &["-O3", "-march=native"], cache.path())?;
        let config = ollie_verify::VerifyConfig { seed: 3, sets_per_family: 1, ..Default::default() };
        match ollie_verify::verify(&graph, &runner, ollie_verify::Baseline::Naive(library.clone()), &library, &config) {
            Ok(report) if report.accepted => Ok(()),
            Ok(report) => Err(format!("{:?}", report.rejection)),
            Err(e) => Err(e.to_string()),
        }
    });
}

/// The search's first sketch of every corpus spec (at 8 lanes, with its compiler flags) passes
/// the whole verification protocol against the naive kernel: where a search starts is a kernel
/// the verifier accepts.
#[test]
fn first_sketches_pass_the_verifier() {
    let runner = runner();
    let target = ollie_search::Target { lanes: 8, caches: Some(ollie_search::Caches { l1d_bytes: 32 << 10, l2_bytes: 1 << 20 }) };
    for_every_spec(&["test_data/corpus"], |spec, _| {
        let graph = graph_of(spec)?;
        let naive = ollie_loops::lower(&graph).map_err(|e| e.to_string())?;
        let cache = tempfile::tempdir().unwrap();
        let baseline = compile(&ollie_loops::emit_c(&naive), &["-O3", "-march=native"], cache.path())?;
        let schedule = ollie_search::sketches(&naive, &target).into_iter().next().ok_or("no sketch")?;
        let nest = schedule.apply(&naive).map_err(|e| e.to_string())?;
        let flags = schedule.compile_flags(&nest);
        let library = compile(&ollie_loops::emit_c(&nest), &flags.iter().map(String::as_str).collect::<Vec<_>>(), cache.path())?;
        let config = ollie_verify::VerifyConfig { seed: 5, sets_per_family: 1, ..Default::default() };
        match ollie_verify::verify(&graph, &runner, ollie_verify::Baseline::Naive(baseline), &library, &config) {
            Ok(report) if report.accepted => Ok(()),
            Ok(report) => Err(format!("{:?}\n{schedule}", report.rejection)),
            Err(e) => Err(e.to_string()),
        }
    });
}

/// Every loop of `body` with its depth and whether it is innermost.
fn loops(body: &[ollie_loops::Stmt], depth: usize, out: &mut Vec<(ollie_loops::VarId, usize, bool)>) {
    for s in body {
        if let ollie_loops::Stmt::Loop { var, body, .. } = s {
            let innermost = !body.iter().any(|b| matches!(b, ollie_loops::Stmt::Loop { .. }));
            out.push((*var, depth, innermost));
            loops(body, depth + 1, out);
        }
    }
}

/// Scheduled kernels compute what the naive ones do: every outermost loop that may run in
/// parallel does, every innermost loop is split by 4 and its inner part run in SIMD lanes where
/// legal; compiled with OpenMP and compared with the reference like the naive kernels.
#[test]
fn scheduled_kernels_agree_with_the_reference() {
    use ollie_loops::{apply_step, Step};
    let runner = runner();
    for_every_spec(&["test_data/corpus", "examples", "test_data/loops"], |spec, seed| {
        let graph = graph_of(spec)?;
        let mut nest = ollie_loops::lower(&graph).map_err(|e| e.to_string())?;
        let mut all = Vec::new();
        loops(&nest.body, 0, &mut all);
        let mut applied = 0;
        for (var, depth, innermost) in all {
            let mut steps = Vec::new();
            if depth == 0 {
                steps.push(Step::Parallel { var });
            }
            if innermost {
                let inner = ollie_loops::VarId(1 + {
                    let mut v = Vec::new();
                    loops(&nest.body, 0, &mut v);
                    v.iter().map(|(w, ..)| w.0).max().unwrap_or(0)
                });
                steps.push(Step::Split { var, factor: 4 });
                steps.push(Step::Simd { var: inner });
            }
            for step in steps {
                let mut attempt = nest.clone();
                if apply_step(&mut attempt, &step).is_ok() {
                    nest = attempt;
                    applied += 1;
                }
            }
        }
        ollie_loops::check(&nest).map_err(|e| format!("the scheduled nest is invalid: {e}"))?;
        let cache = tempfile::tempdir().unwrap();
        let library = compile(&ollie_loops::emit_c(&nest), &["-O3", "-march=native", "-fopenmp", "-Wall", "-Werror"], cache.path())?;
        let inputs = Family::Normal.generate(&graph, seed);
        let outputs = run(&runner, &library, &graph, &inputs).map_err(|e| format!("{e} ({applied} steps)"))?;
        let reference = ollie_graph::evaluate(&graph, &inputs).map_err(|e| e.to_string())?;
        agrees(&graph, &reference, &outputs).map_err(|e| format!("{e} after {applied} steps\n{nest}"))
    });
}

/// Padding read in place computes what the padded copy does: for every spec, each temporary
/// `guard` takes is read through guarded loads, every loop `peel` takes is split into borders
/// and interior, then every innermost loop is vectorized at 4 and 8 lanes (guards that move with
/// the lanes taken lane by lane); compiled with `-Wall -Werror` and compared with the reference
/// on normal inputs and on infinities and NaNs at the borders.
#[test]
fn padding_read_in_place_agrees_with_the_reference() {
    use ollie_loops::{apply_step, Step};
    let runner = runner();
    let guarded = std::sync::atomic::AtomicUsize::new(0);
    let peeled = std::sync::atomic::AtomicUsize::new(0);
    for_every_spec(&["test_data/corpus", "examples", "test_data/loops"], |spec, seed| {
        let graph = graph_of(spec)?;
        let mut nest = ollie_loops::lower(&graph).map_err(|e| e.to_string())?;
        let temps: Vec<String> = nest.temps().map(|(_, b)| b.name.clone()).collect();
        let mut applied = 0;
        for buffer in temps {
            applied += apply_step(&mut nest, &Step::Guard { buffer }).is_ok() as usize;
        }
        if applied == 0 {
            return Ok(());
        }
        guarded.fetch_add(applied, std::sync::atomic::Ordering::Relaxed);
        // Peel outermost first: a border's inner loops are fresh, the interior keeps its own.
        let mut all = Vec::new();
        loops(&nest.body, 0, &mut all);
        for (var, ..) in all {
            if apply_step(&mut nest, &Step::Peel { var, multiple: 1 }).is_ok() {
                peeled.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        for width in [4, 8] {
            let mut nest = nest.clone();
            vectorize_innermost(&mut nest, width);
            ollie_loops::check(&nest).map_err(|e| format!("the scheduled nest is invalid: {e}\n{nest}"))?;
            let cache = tempfile::tempdir().unwrap();
            let library = compile(&ollie_loops::emit_c(&nest), &["-O3", "-march=native", "-Wall", "-Werror"], cache.path())?;
            for family in [Family::Normal, Family::Borders] {
                let inputs = family.generate(&graph, seed);
                let outputs = run(&runner, &library, &graph, &inputs)?;
                let reference = ollie_graph::evaluate(&graph, &inputs).map_err(|e| e.to_string())?;
                agrees(&graph, &reference, &outputs).map_err(|e| format!("{e} at {width} lanes on {family}\n{nest}"))?;
            }
        }
        Ok(())
    });
    assert!(guarded.into_inner() >= 4, "too few padded copies were read in place");
    assert!(peeled.into_inner() >= 4, "too few loops were peeled");
}

/// Every innermost loop of `nest` that `vectorize` takes, `width` lanes.
fn vectorize_innermost(nest: &mut ollie_loops::LoopNest, width: u32) {
    let mut all = Vec::new();
    loops(&nest.body, 0, &mut all);
    for (var, _, innermost) in all {
        let mut attempt = nest.clone();
        if innermost && ollie_loops::apply_step(&mut attempt, &ollie_loops::Step::Vectorize { var, width }).is_ok() {
            *nest = attempt;
        }
    }
}

/// A reduction into one element run in vector lanes (`vectorize` of the loop: each vector's
/// lanes reduced by a tree, a scalar tail after) computes what the naive kernel does: every
/// innermost loop `vectorize` takes, at 4 and 8 lanes, for every spec (sums, maxima; tails
/// where the width does not divide the loop; loads of every other element, as a pool's; index
/// masks, as a causal mask's, compared in integer vectors).
#[test]
fn kernels_with_reductions_in_lanes_agree_with_the_reference() {
    let runner = runner();
    let reduced = std::sync::atomic::AtomicUsize::new(0);
    let strided = std::sync::atomic::AtomicUsize::new(0);
    let compared = std::sync::atomic::AtomicUsize::new(0);
    for_every_spec(&["test_data/corpus", "examples", "test_data/loops"], |spec, seed| {
        let graph = graph_of(spec)?;
        let naive = ollie_loops::lower(&graph).map_err(|e| e.to_string())?;
        for width in [4, 8] {
            let mut nest = naive.clone();
            vectorize_innermost(&mut nest, width);
            let c = ollie_loops::emit_c(&nest);
            reduced.fetch_add(c.matches("ollie_reduce_").count(), std::sync::atomic::Ordering::Relaxed);
            strided.fetch_add(c.matches("ollie_even").count(), std::sync::atomic::Ordering::Relaxed);
            compared.fetch_add(c.matches("__builtin_convertvector(-(((ollie_m").count(), std::sync::atomic::Ordering::Relaxed);
            let cache = tempfile::tempdir().unwrap();
            let library = compile(&c, &["-O3", "-march=native", "-Wall", "-Werror"], cache.path())?;
            let inputs = Family::Normal.generate(&graph, seed);
            let outputs = run(&runner, &library, &graph, &inputs)?;
            let reference = ollie_graph::evaluate(&graph, &inputs).map_err(|e| e.to_string())?;
            agrees(&graph, &reference, &outputs).map_err(|e| format!("{e} at {width} lanes\n{nest}"))?;
        }
        Ok(())
    });
    assert!(reduced.into_inner() > 0, "no reduction was vectorized");
    assert!(strided.into_inner() > 0, "no load of every other element was vectorized");
    assert!(compared.into_inner() > 0, "no index mask was compared in integer vectors");
}

/// A result stored transposed, its tiles read in rows and transposed in registers (the
/// emitter's form for a serial loop of a multiple of `w` steps around a vector loop that reads
/// down the columns): at 4, 8 and 16 lanes, with the lanes' tail left over (37 rows), stores
/// plain and streamed, agrees with the reference — and the transpose is what ran.
#[test]
fn transposes_in_registers_agree_with_the_reference() {
    use ollie_loops::{apply_step, Step, VarId};
    let runner = runner();
    let spec = root().join("test_data/loops/transposed_relu.py");
    let graph = graph_of(&spec).unwrap();
    let naive = ollie_loops::lower(&graph).unwrap();
    for w in [4, 8, 16] {
        for stream in [false, true] {
            let mut nest = naive.clone();
            // i0 (48 rows of the output) in blocks of 16 (i2), around i1 (37 columns) in lanes.
            let mut steps = vec![Step::Split { var: VarId(0), factor: 16 }, Step::Vectorize { var: VarId(1), width: w }];
            if stream {
                steps.push(Step::Stream { var: VarId(1) });
            }
            for step in &steps {
                apply_step(&mut nest, step).unwrap_or_else(|e| panic!("{step}: {e}\n{nest}"));
            }
            let c = ollie_loops::emit_c(&nest);
            assert!(c.contains(&format!("ollie_transpose{w}(")), "no transpose at {w} lanes:\n{c}");
            assert_eq!(c.contains("ollie_vstream"), stream, "{c}");
            let cache = tempfile::tempdir().unwrap();
            let library = compile(&c, &["-O3", "-march=native", "-Wall", "-Werror"], cache.path()).unwrap();
            let inputs = Family::Normal.generate(&graph, 7);
            let outputs = run(&runner, &library, &graph, &inputs).unwrap();
            let reference = ollie_graph::evaluate(&graph, &inputs).unwrap();
            agrees(&graph, &reference, &outputs).unwrap_or_else(|e| panic!("{e} at {w} lanes\n{c}"));
        }
    }
}

/// Random schedules compute what the naive kernels do: for every spec, a chain of eight
/// `mutate` proposals (every kind of step, explicit vector code with tails included), compiled
/// with OpenMP and compared with the reference. The flags are the base ones: value-changing
/// flags are the verifier's business, not the transforms'. `OLLIE_SCHEDULE_ROUNDS=N` tries N
/// seeds per spec (CI runs one).
#[test]
fn randomly_scheduled_kernels_agree_with_the_reference() {
    let runner = runner();
    let hung = std::sync::Mutex::new(Vec::new());
    let rounds: u64 = std::env::var("OLLIE_SCHEDULE_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    for round in 0..rounds {
        for_every_spec(&["test_data/corpus", "examples", "test_data/loops"], |spec, seed| check_random_schedule(&runner, &hung, spec, seed + 1000 * round));
    }
    let hung = hung.into_inner().unwrap();
    eprintln!("the C compiler gave up on {} kernels: {hung:?}", hung.len());
    assert!(hung.len() as u64 <= 2 * rounds, "the C compiler did not finish on {} kernels: {hung:?}", hung.len());
}

fn check_random_schedule(runner: &Runner, hung: &std::sync::Mutex<Vec<String>>, spec: &Path, seed: u64) -> Result<(), String> {
    use ollie_search::Propose;
    let graph = graph_of(spec)?;
    let naive = ollie_loops::lower(&graph).map_err(|e| e.to_string())?;
    let mut mutate = ollie_search::Mutate::new(naive.clone());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut kernel = ollie_search::Kernel::Scheduled(ollie_search::initial_schedule());
    for _ in 0..8 {
        if let ollie_search::Proposal::Candidate(next) = Propose::<_, ()>::propose(&mut mutate, &kernel, &mut rng) {
            kernel = next;
        }
    }
    let ollie_search::Kernel::Scheduled(mut schedule) = kernel else { unreachable!("mutate keeps a schedule a schedule") };
    schedule.flags = ollie_search::initial_schedule().flags;
    let nest = schedule.apply(&naive).map_err(|e| format!("a proposed schedule does not apply: {e}\n{schedule}"))?;
    ollie_loops::check(&nest).map_err(|e| format!("the scheduled nest is invalid: {e}\n{schedule}"))?;
    let cache = tempfile::tempdir().unwrap();
    let mut flags: Vec<String> = vec!["-Wall".into(), "-Werror".into()];
    flags.extend(schedule.compile_flags(&nest));
    // gcc 12 at -O3 sometimes never finishes on an interchanged nest: that is the
    // compiler's (and a compile-error verdict in a search), not a wrong kernel.
    let compiler = Compiler { timeout: Duration::from_secs(20), ..Compiler::new(cache.path()) };
    let library = match compiler.compile(&ollie_loops::emit_c(&nest), &flags) {
        Ok(c) => c.library,
        Err(Ok(Outcome::CompileError { log })) if log.contains("did not finish") => {
            hung.lock().unwrap().push(format!("{}:\n{schedule}", spec.display()));
            return Ok(());
        }
        Err(Ok(outcome)) => return Err(format!("{}\n{schedule}\n{}", outcome.summary(), ollie_loops::emit_c(&nest))),
        Err(Err(e)) => return Err(e.to_string()),
    };
    let inputs = Family::Normal.generate(&graph, seed);
    let outputs = run(runner, &library, &graph, &inputs).map_err(|e| format!("{e}\n{schedule}"))?;
    let reference = ollie_graph::evaluate(&graph, &inputs).map_err(|e| e.to_string())?;
    agrees(&graph, &reference, &outputs).map_err(|e| format!("{e} with the schedule\n{schedule}\n{nest}"))
}

/// The corpus softmax spec's graph and its naive kernel, built in a new cache directory.
fn naive_softmax() -> (ollie_graph::Graph, tempfile::TempDir, PathBuf) {
    let graph = graph_of(&root().join("test_data/verify/softmax.py")).unwrap();
    let c = ollie_loops::emit_c(&ollie_loops::lower(&graph).unwrap());
    let cache = tempfile::tempdir().unwrap();
    let library = compile(&c, &["-O3", "-march=native"], cache.path()).unwrap();
    (graph, cache, library)
}

/// The oracle remembers expected outputs for reuse, within its byte budget: a verification of
/// many input sets leaves at most that much behind, and with room for all it keeps them all.
#[test]
fn the_oracle_keeps_within_its_byte_budget() {
    let (graph, _cache, library) = naive_softmax();
    let runner = runner();
    // One input set's expected outputs: the reference and the elementwise bound of the 8×300
    // float32 output, kept in float32.
    let set = 2 * 8 * 300 * 4;
    let config = ollie_verify::VerifyConfig { seed: 5, sets_per_family: 1, ..Default::default() };
    let mut small = ollie_verify::Oracle::with_capacity(&graph, &runner, ollie_verify::Baseline::Naive(library.clone()), 3 * set);
    assert!(ollie_verify::verify_with(&mut small, &library, &config).unwrap().accepted);
    assert_eq!(small.bytes(), 3 * set, "the three most recent sets");
    let mut large = ollie_verify::Oracle::with_capacity(&graph, &runner, ollie_verify::Baseline::Naive(library.clone()), 1000 * set);
    let report = ollie_verify::verify_with(&mut large, &library, &config).unwrap();
    // Every call on new inputs (fresh, or one element changed) is an input set of its own.
    assert_eq!(large.bytes(), report.certificate.tests.len() * set);
}

/// Expected outputs kept on disk are read back by a later oracle instead of computed, give the
/// same verdict and figures, and a damaged file is computed anew, never trusted; what a set cost
/// to compute is remembered beside them.
#[test]
fn the_oracle_reads_its_files_back_and_recomputes_damaged_ones() {
    let (graph, cache, library) = naive_softmax();
    let runner = runner();
    let dir = cache.path().join("expected");
    let config = ollie_verify::VerifyConfig { seed: 9, sets_per_family: 1, ..Default::default() };
    let verify = || {
        let mut oracle = ollie_verify::Oracle::new(&graph, &runner, ollie_verify::Baseline::Naive(library.clone())).keep_on_disk(&dir, ollie_verify::DISK_BYTES);
        let report = ollie_verify::verify_with(&mut oracle, &library, &config).unwrap();
        assert!(report.accepted, "{:?}", report.rejection);
        (oracle.costs(), oracle.knows_plan(&config.plan()), report.certificate.tests.iter().map(|t| (t.worst_elementwise.clone(), t.normwise.clone())).collect::<Vec<_>>())
    };
    let (first, known, figures) = verify();
    let sets = first.computed;
    assert!(sets > 10 && first.read == 0 && known, "{first:?}");
    let files = || std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "expected")).collect::<Vec<_>>();
    assert_eq!(files().len(), sets);
    let (second, _, again) = verify();
    assert_eq!((second.computed, second.read), (0, sets), "{second:?}");
    assert_eq!(again, figures, "the same figures from the files");
    // What a set cost to compute is remembered for a later run's estimates (its final
    // verification computes sets the search's never did): the first run's own average.
    assert_eq!(first.computed_before, None, "{first:?}");
    let average = first.compute_seconds / first.computed as f64;
    assert!(second.computed_before.is_some_and(|s| (s - average).abs() <= 1e-9 * average), "{second:?} after {first:?}");
    assert_eq!(second.per_computed(), second.computed_before);
    // One file truncated, another with a flipped bit: both are computed anew.
    let damaged = files();
    let bytes = std::fs::read(&damaged[0]).unwrap();
    std::fs::write(&damaged[0], &bytes[..bytes.len() - 9]).unwrap();
    let mut bytes = std::fs::read(&damaged[1]).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 4;
    std::fs::write(&damaged[1], &bytes).unwrap();
    let (third, _, again) = verify();
    assert_eq!((third.computed, third.read), (2, sets - 2), "{third:?}");
    assert_eq!(again, figures);
}

/// The online normalizer's lowering (`sum_exp`, its state kept per lane) against the reference at
/// every kind of lane count — 1 (a row of 1, of 7), 8 (24, and 1000 in chunks of 200), 16 (48,
/// 272 in chunks of one row of lanes) — in f32 and f64, alone and beside the maximum it shares
/// its pass with, naive and with every innermost loop vectorized 16 or 8 wide, on rows that keep
/// numpy's special values: all −∞ (NaN), a +∞ (NaN), a NaN, half −∞, values near exp's overflow
/// (f64: below the lowest f32), ascending (a rescale per chunk) and descending.
#[test]
fn the_online_normalizer_agrees_with_the_reference_at_every_lane_count_and_special_value() {
    let runner = runner();
    let mut failures = Vec::new();
    for (n, t) in [1usize, 7, 24, 48, 272, 1000].into_iter().flat_map(|n| [(n, "f32"), (n, "f64")]) {
        let rows = 8;
        let with_max = format!(
            "kernel k(x: {t}[{rows},{n}]) {{\n  %0: {t}[{rows},{n}] = input[x]\n  %1: {t}[{rows}] = reduce_max[1] %0\n  %2: {t}[{rows}] = sum_exp[1] %0\n  return %1, %2\n}}\n"
        );
        let alone = format!("kernel k(x: {t}[{rows},{n}]) {{\n  %0: {t}[{rows},{n}] = input[x]\n  %1: {t}[{rows}] = sum_exp[1] %0\n  return %1\n}}\n");
        let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
        let x = ArrayD::from_shape_fn(IxDyn(&[rows, n]), |i| {
            let (r, j) = (i[0], i[1]);
            let normal: f64 = StandardNormal.sample(&mut rng);
            let v = match r {
                1 => f64::NEG_INFINITY,
                2 if j == n / 2 => f64::INFINITY,
                3 if j == n - 1 => f64::NAN,
                4 if j < n.div_ceil(2) => f64::NEG_INFINITY,
                // Near exp's overflow in f32; in f64, below the lowest f32.
                5 if t == "f32" => 80.0 + normal,
                5 => -1e300 * (1.0 + normal.abs()),
                6 => j as f64 * 0.01,
                7 => -(j as f64) * 0.01,
                _ => normal,
            };
            if t == "f32" { v as f32 as f64 } else { v }
        });
        for text in [&with_max, &alone] {
            let graph = ollie_graph::parse(text).unwrap();
            let reference = ollie_graph::evaluate(&graph, std::slice::from_ref(&x)).unwrap();
            for width in [None, Some(16), Some(8)] {
                let mut nest = ollie_loops::lower(&graph).unwrap();
                if let Some(width) = width {
                    vectorize_innermost(&mut nest, width);
                }
                let case = format!("{t}, n = {n}, {} outputs, vectors of {width:?}", graph.outputs.len());
                let cache = tempfile::tempdir().unwrap();
                let outcome = compile(&ollie_loops::emit_c(&nest), &["-O3", "-march=native", "-Wall", "-Werror"], cache.path())
                    .and_then(|library| run(&runner, &library, &graph, std::slice::from_ref(&x)))
                    .and_then(|outputs| agrees(&graph, &reference, &outputs));
                if let Err(e) = outcome {
                    failures.push(format!("{case}: {e}\n{nest}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} cases failed:\n{}", failures.len(), failures.join("\n"));
}

/// The plan runs round by round: the first set of every family, then the second; a verification
/// with a deadline already past runs its first set (fresh and changed) and stops, saying how many
/// tests it planned, and leaves its plan unmarked (not every set is on disk).
#[test]
fn a_verification_runs_every_familys_first_set_first_and_stops_at_its_deadline() {
    let (graph, cache, library) = naive_softmax();
    let runner = runner();
    let dir = cache.path().join("expected");
    let config = ollie_verify::VerifyConfig { seed: 13, ..Default::default() };
    let mut oracle = ollie_verify::Oracle::new(&graph, &runner, ollie_verify::Baseline::Naive(library.clone())).keep_on_disk(&dir, ollie_verify::DISK_BYTES);
    let whole = ollie_verify::verify_with(&mut oracle, &library, &config).unwrap();
    let families = ollie_verify::Family::all(2).len();
    assert!(whole.accepted && whole.certificate.tests.len() == whole.certificate.planned && whole.certificate.planned == 4 * families, "{:?}", whole.certificate);
    let order: Vec<String> = whole.certificate.tests.iter().step_by(2).map(|t| t.id.family.clone()).collect();
    let first_round: std::collections::BTreeSet<&String> = order[..families].iter().collect();
    assert_eq!(first_round.len(), families, "every family before any family's second set: {order:?}");
    assert_eq!(order[..families], order[families..], "the second round in the same order");
    let cut = ollie_verify::VerifyConfig { seed: 14, deadline: Some(std::time::Instant::now()), ..Default::default() };
    let mut oracle = ollie_verify::Oracle::new(&graph, &runner, ollie_verify::Baseline::Naive(library.clone())).keep_on_disk(&dir, ollie_verify::DISK_BYTES);
    let partial = ollie_verify::verify_with(&mut oracle, &library, &cut).unwrap();
    assert!(partial.accepted, "{:?}", partial.rejection);
    assert_eq!((partial.certificate.tests.len(), partial.certificate.planned), (2, 4 * families));
    assert_eq!((partial.certificate.tests[0].id.kind.as_str(), partial.certificate.tests[1].id.kind.as_str()), ("fresh", "one-element-changed"));
    assert!(!oracle.knows_plan(&cut.plan()), "a plan cut short is not marked as run");
}

/// A deadline is judged by what the next input set will cost: read back from disk (the sets
/// before it were), or computed (an earlier run recorded what that costs: here, 1000 s) — a
/// set that must be computed is not begun when that would run past the deadline, however
/// quickly the sets read from disk went.
#[test]
fn a_verification_does_not_begin_computing_a_set_it_cannot_finish_by_its_deadline() {
    let (graph, cache, library) = naive_softmax();
    let runner = runner();
    let dir = cache.path().join("expected");
    let oracle = |dir: &Path| ollie_verify::Oracle::new(&graph, &runner, ollie_verify::Baseline::Naive(library.clone())).keep_on_disk(dir, ollie_verify::DISK_BYTES);
    let families = |f: Vec<Family>| ollie_verify::VerifyConfig { seed: 16, sets_per_family: 1, families: Some(f), ..Default::default() };
    let normal = families(vec![Family::Normal]);
    assert!(ollie_verify::verify_with(&mut oracle(&dir), &library, &normal).unwrap().accepted);
    let costs: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "cost")).collect();
    assert_eq!(costs.len(), 1, "the run recorded what a set costs to compute");
    std::fs::write(&costs[0], "1000\n").unwrap();
    // The normal set's expected outputs are on disk; the uniform set's are not.
    let both = ollie_verify::VerifyConfig { deadline: Some(std::time::Instant::now() + std::time::Duration::from_secs(120)), ..families(vec![Family::Normal, Family::Uniform]) };
    let report = ollie_verify::verify_with(&mut oracle(&dir), &library, &both).unwrap();
    assert!(report.accepted, "{:?}", report.rejection);
    let ran: Vec<&str> = report.certificate.tests.iter().map(|t| t.id.family.as_str()).collect();
    assert_eq!((ran, report.certificate.planned), (vec!["normal", "normal"], 4));
    // Without a deadline the same plan runs whole.
    let whole = ollie_verify::verify_with(&mut oracle(&dir), &library, &ollie_verify::VerifyConfig { deadline: None, ..both }).unwrap();
    assert_eq!(whole.certificate.tests.len(), 4);
}

/// A search's timing (an early stop set) ends when a kernel is stopped: a candidate over its
/// first call's limit leaves no ratio to measure, and the current kernel is not called on
/// alone through the rounds left (its warm-up call made, no timed call).
#[test]
fn a_timing_with_an_early_stop_ends_when_a_kernel_is_stopped() {
    let (graph, cache, library) = naive_softmax();
    let runner = runner();
    let exact = ollie_loops::emit_c(&ollie_loops::lower(&graph).unwrap()).replacen("void softmax(", "static void softmax_exact(", 1);
    let slow = exact + "void softmax(const float *restrict x, float *restrict out) {\n  for (volatile long i = 0; i < 20000000000L; i++) {}\n  softmax_exact(x, out);\n}\n";
    let slow = compile(&slow, &["-O2"], cache.path()).unwrap();
    let config = ollie_verify::BenchConfig {
        sets: 1,
        warmups: 1,
        calls: 21,
        early: Some(ollie_verify::EarlyStop { min_pairs: 5, seconds: 30.0, patient: false }),
        first_limit: Some(Duration::from_millis(200)),
        ..Default::default()
    };
    let mut oracle = ollie_verify::Oracle::new(&graph, &runner, ollie_verify::Baseline::Naive(library.clone()));
    let report = ollie_verify::bench_with(&mut oracle, &[&slow, &library], &config).unwrap();
    assert!(matches!(report.kernels[0], Err(ollie_verify::Rejection::Timeout { .. })), "{:?}", report.kernels[0]);
    let current = report.kernels[1].as_ref().unwrap();
    assert!(current.samples.is_empty() && current.median.is_nan(), "{current:?}");
    assert!(report.ratios.is_none());
}

/// Against the rounded reference (no naive kernel is run: its library here does not exist),
/// the naive kernel's own outputs pass, the certificate names the baseline, and a kernel a
/// thousand ulps off fails: the rule still binds.
#[test]
fn the_rounded_reference_judges_without_running_the_naive_kernel() {
    let (graph, _cache, library) = naive_softmax();
    let runner = runner();
    let config = ollie_verify::VerifyConfig { seed: 21, sets_per_family: 1, ..Default::default() };
    let mut oracle = ollie_verify::Oracle::new(&graph, &runner, ollie_verify::Baseline::Rounded);
    let report = ollie_verify::verify_with(&mut oracle, &library, &config).unwrap();
    assert!(report.accepted, "{:?}", report.rejection);
    assert_eq!(report.certificate.baseline, "rounded-reference");
    // Every output scaled by 1 + 2^-10: a thousand ulps, far past α·u·E for a softmax.
    let exact = ollie_loops::emit_c(&ollie_loops::lower(&graph).unwrap()).replacen("void softmax(", "static void softmax_exact(", 1);
    let sloppy = exact + "void softmax(const float *restrict x, float *restrict out) {\n  softmax_exact(x, out);\n  for (long i = 0; i < 8 * 300; i++) out[i] *= 1.0009765625f;\n}\n";
    let cache = tempfile::tempdir().unwrap();
    let sloppy = compile(&sloppy, &["-O2"], cache.path()).unwrap();
    let report = ollie_verify::verify_with(&mut oracle, &sloppy, &config).unwrap();
    assert!(matches!(report.rejection, Some(ollie_verify::Rejection::Inaccurate { .. })), "{:?}", report.rejection);
}
