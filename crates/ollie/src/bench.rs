//! `ollie bench`: the search's timing method on one kernel (or two, interleaved), with the
//! spec's FLOPs and compulsory bytes placed on this machine's roofline.

use std::path::PathBuf;

use anyhow::Context;
use ollie_runner::{Compiler, Runner};
use ollie_verify::{BenchConfig, Timing};

use ollie_driver::report::seconds;
use ollie_driver::setup;

use crate::{load, stdout, user_error, Failure, SpecArgs};

pub struct Options {
    pub spec: SpecArgs,
    pub kernel: PathBuf,
    pub vs: Option<PathBuf>,
    pub flags: String,
    /// The second kernel's flags, if not `flags`.
    pub vs_flags: Option<String>,
    pub calls: usize,
    pub warmups: usize,
    pub timeout: Option<f64>,
}

pub fn run(o: &Options) -> Result<(), Failure> {
    let spec = load::load(&o.spec)?;
    setup::ensure_fits(&spec.graph)?;
    let graph = &spec.graph;
    if o.calls == 0 {
        return Err(user_error("error: --calls must be at least 1"));
    }
    let compiler = Compiler::new(Compiler::default_cache_dir());
    let baseline = setup::compile_naive(&compiler, graph)?;
    let split = |flags: &str| -> Vec<String> { flags.split_whitespace().map(str::to_string).collect() };
    let paths: Vec<(&PathBuf, Vec<String>)> = std::iter::once((&o.kernel, split(&o.flags))).chain(o.vs.as_ref().map(|vs| (vs, split(o.vs_flags.as_deref().unwrap_or(&o.flags))))).collect();
    let names: Vec<String> = paths.iter().map(|(p, _)| p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())).collect();
    let mut libraries = Vec::new();
    for (path, flags) in &paths {
        let source = std::fs::read_to_string(path).map_err(|e| user_error(format!("error: cannot read kernel `{}`: {e}", path.display())))?;
        match compiler.compile(&source, flags) {
            Ok(c) => libraries.push(c.library),
            Err(Ok(outcome)) => return Err(user_error(format!("error: `{}` does not compile:\n{}", path.display(), outcome_log(&outcome)))),
            Err(Err(e)) => return Err(anyhow::Error::from(e).into()),
        }
    }
    let (machine, roofline) = setup::roofline_floor(graph)?;
    let (cost, ceiling, floor) = (graph.work(), &roofline.ceiling, roofline.seconds);
    let naive = ollie_driver::naive::measure(graph, &baseline, &compiler, &machine, o.timeout)?;
    let runner = Runner::current_exe(crate::check::check_limit(&naive, o.timeout)).context("locating ollie's executable")?;
    let config = BenchConfig { seed: setup::spec_seed(graph), warmups: o.warmups, calls: o.calls, floor: Some(roofline.fastest), ..BenchConfig::default() };
    let refs: Vec<&std::path::Path> = libraries.iter().map(|p| p.as_path()).collect();
    let mut oracle = setup::oracle(graph, &runner, naive.baseline(&baseline, None));
    let report = ollie_verify::bench_with(&mut oracle, &refs, &config).map_err(|e| naive.verify_error(&graph.name, e, "timing"))?;
    let mut text = format!(
        "{}: {:.3} MFLOP, {:.3} MB compulsory traffic; {} ({} threads: {:.1} GFLOP/s, {:.1} GB/s)\n",
        graph.name,
        cost.flops / 1e6,
        cost.min_bytes / 1e6,
        machine.cpu,
        ceiling.threads,
        ceiling.peak_gflops,
        ceiling.bandwidth_gbs
    );
    text.push_str(&format!(
        "roofline floor {} ({}-bound)\n\n",
        seconds(floor),
        if roofline.memory_bound { "memory" } else { "compute" }
    ));
    text.push_str(&format!("{:<24} {:>11} {:>23} {:>9} {:>8} {:>9}\n", "kernel", "median", "p10..p90", "GFLOP/s", "GB/s", "of floor"));
    let mut rejected = false;
    for (name, result) in names.iter().zip(&report.kernels) {
        match result {
            Ok(t) => text.push_str(&format!(
                "{:<24} {:>11} {:>23} {:>9.2} {:>8.2} {:>8.1}%\n",
                name,
                seconds(t.median),
                format!("{}..{}", seconds(t.p10), seconds(t.p90)),
                cost.flops / t.median / 1e9,
                cost.min_bytes / t.median / 1e9,
                100.0 * floor / t.median
            )),
            Err(r) => {
                rejected = true;
                text.push_str(&format!("{name:<24} rejected: {}\n", r));
            }
        }
    }
    if let Some(Timing { median, p10, p90, samples }) = &report.ratios {
        text.push_str(&format!(
            "\nratio {} / {}: {median:.3} (p10..p90 {p10:.3}..{p90:.3} over {} interleaved pairs)\n",
            names[0],
            names[1],
            samples.len()
        ));
    }
    stdout(&text)?;
    if rejected { Err(Failure::Rejected) } else { Ok(()) }
}

fn outcome_log(outcome: &ollie_runner::Outcome) -> String {
    match outcome {
        ollie_runner::Outcome::CompileError { log } => log.clone(),
        other => other.summary(),
    }
}
