//! `ollie check`: compile the naive kernel and the candidate, run the verification protocol,
//! print the verdict (and the counterexample), write the certificate.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use ollie_runner::{Compiler, Runner};
use ollie_verify::{Rejection, Report, VerifyConfig};

use crate::{counterexamples, load, stdout, user_error, Failure, SpecArgs};

pub struct Options {
    pub spec: SpecArgs,
    pub kernel: PathBuf,
    pub flags: String,
    pub seed: Option<u64>,
    pub timeout: f64,
    pub certificate: Option<PathBuf>,
    pub json: bool,
}

pub fn run(o: &Options) -> Result<(), Failure> {
    let spec = load::load(&o.spec)?;
    load::ensure_fits(&spec.graph)?;
    let graph = &spec.graph;
    let source = std::fs::read_to_string(&o.kernel).map_err(|e| user_error(format!("error: cannot read kernel `{}`: {e}", o.kernel.display())))?;
    let compiler = Compiler::new(Compiler::default_cache_dir());
    let baseline = compile_naive(&compiler, graph)?;
    let flags: Vec<String> = o.flags.split_whitespace().map(str::to_string).collect();
    let seed = o.seed.unwrap_or_else(|| spec_seed(graph));
    let report = match compiler.compile(&source, &flags) {
        Ok(c) => {
            let runner = Runner::current_exe(Duration::from_secs_f64(o.timeout)).context("locating ollie's executable")?;
            let saved = counterexamples::load(graph);
            let (_, floor) = roofline_floor(graph)?;
            let config = VerifyConfig { seed, saved, floor: Some(floor.fastest), ..VerifyConfig::default() };
            ollie_verify::verify_with(&mut oracle(graph, &runner, &baseline), &c.library, &config).context("verifying")?
        }
        Err(Ok(outcome)) => Report {
            accepted: false,
            rejection: Some(Rejection::Failed { reason: outcome.summary() }),
            certificate: ollie_verify::Certificate { kernel: graph.name.clone(), seed, alpha: 16.0, tests: Vec::new() },
            counterexample: None,
        },
        Err(Err(e)) => return Err(anyhow::Error::from(e).into()),
    };
    let certificate = o.certificate.clone().unwrap_or_else(|| o.kernel.with_extension("certificate.json"));
    let json = serde_json::to_string_pretty(&report).expect("serializable");
    std::fs::write(&certificate, &json).with_context(|| format!("writing {}", certificate.display()))?;
    let saved = match &report.counterexample {
        Some(inputs) => counterexamples::save(graph, inputs).context("saving the counterexample")?,
        None => None,
    };
    if o.json {
        stdout(&format!("{json}\n"))?;
    } else {
        let mut text = render(&report, &certificate);
        if let Some(dir) = saved {
            text.push_str(&format!("counterexample inputs: {} (tried first by every later check of this spec)\n", dir.display()));
        }
        stdout(&text)?;
    }
    if report.accepted { Ok(()) } else { Err(Failure::Rejected) }
}

/// The least time `graph` can take on this machine: its FLOPs at the FMA peak or its compulsory
/// bytes at the memory bandwidth, whichever is longer (all threads).
pub fn roofline_floor(graph: &ollie_graph::Graph) -> Result<(ollie_runner::Machine, ollie_runner::Floor), Failure> {
    let (machine, _, _) = crate::machine_ceilings(false, &ollie_runner::MachineConfig::default())?;
    let cost = graph.cost();
    let floor = machine.floor(cost.flops, cost.min_bytes).context("no machine ceilings")?;
    Ok((machine, floor))
}

/// The seed of a verification when none is given: fixed per spec (its graph), so that checking
/// kernels of one spec again and again tests the same inputs, whose expected outputs the oracle
/// keeps on disk; another seed tests other inputs.
pub fn spec_seed(graph: &ollie_graph::Graph) -> u64 {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(graph.to_string().as_bytes());
    u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// The oracle of `ollie check`, `bench` and `optimize`: expected outputs kept in memory and in
/// ollie's cache directory (`expected/`), shared by every later command on the same spec.
pub fn oracle<'a>(graph: &'a ollie_graph::Graph, runner: &'a Runner, baseline: &std::path::Path) -> ollie_verify::Oracle<'a> {
    ollie_verify::Oracle::new(graph, runner, baseline).keep_on_disk(&ollie_runner::cache_root().join("expected"), ollie_verify::DISK_BYTES)
}

/// A seed from the clock, for a fresh verification.
pub fn fresh_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Compiles the naive kernel of `graph` (the baseline) at `-O3 -march=native`.
pub fn compile_naive(compiler: &Compiler, graph: &ollie_graph::Graph) -> Result<PathBuf, Failure> {
    let naive = ollie_loops::emit_c(&ollie_loops::lower(graph).context("lowering the spec")?);
    let native = vec!["-O3".to_string(), "-march=native".to_string()];
    match compiler.compile(&naive, &native) {
        Ok(c) => Ok(c.library),
        Err(Ok(outcome)) => Err(anyhow::anyhow!("the naive kernel does not compile: {}", outcome.summary()).into()),
        Err(Err(e)) => Err(anyhow::Error::from(e).into()),
    }
}

fn render(report: &Report, certificate: &std::path::Path) -> String {
    let c = &report.certificate;
    let mut families: Vec<&str> = c.tests.iter().map(|t| t.id.family.as_str()).collect();
    families.dedup();
    let mut text = match &report.rejection {
        None => {
            let worst = c.tests.iter().flat_map(|t| t.worst_elementwise.iter().chain(&t.normwise)).fold(0.0f64, |m, &v| m.max(v));
            format!(
                "accepted: `{}` passed {} calls over {} families (seed {}); the largest error was {:.3} of its bound\n",
                c.kernel,
                c.tests.len(),
                families.len(),
                c.seed,
                worst
            )
        }
        Some(r) => format!("rejected: {}\n", describe(r)),
    };
    text.push_str(&format!("certificate: {}\n", certificate.display()));
    text
}

pub fn describe(r: &Rejection) -> String {
    let at = |t: &ollie_verify::TestId| format!("on {} inputs (seed {}, call {}, {})", t.family, t.seed, t.call, t.kind);
    match r {
        Rejection::Inaccurate { test, output, detail, .. } => format!("inaccurate output {output} {}:\n  {detail}", at(test)),
        Rejection::Unwritten { test, output, count } => format!("{count} elements of output {output} were never written {}", at(test)),
        Rejection::ChangedAfterReturn { test, output } => format!("output {output} changed after the kernel returned {}", at(test)),
        Rejection::StaleOutput { test, output } => format!("output {output} is the previous call's, though the inputs changed (a cache), {}", at(test)),
        Rejection::OutOfBounds { test, buffer } => format!("touched memory past the end of buffer {buffer} {}", at(test)),
        Rejection::InputModified { test, buffer } => format!("wrote to input {buffer} {}", at(test)),
        Rejection::Forbidden { test, syscall } => format!("made a forbidden system call, {syscall}, {}", at(test)),
        Rejection::Crashed { test, signal } => format!("crashed with signal {signal} {}", at(test)),
        Rejection::Timeout { test, seconds } => format!("did not return within {seconds} s {}", at(test)),
        Rejection::TooFast { test, seconds, floor } => {
            format!("returned in {seconds:.3e} s, faster than any kernel can be on this machine ({floor:.3e} s, with its data in cache), {}", at(test))
        }
        Rejection::Failed { reason } => format!("could not be run: {reason}"),
    }
}
