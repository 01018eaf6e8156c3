//! `ollie check`: compile the naive kernel and the candidate, run the verification protocol,
//! print the verdict (and the counterexample), write the certificate.

use std::path::PathBuf;

use anyhow::Context;
use ollie_runner::{Compiler, Outcome, Runner};
use ollie_verify::{Baseline, Rejection, Report, VerifyConfig};

use ollie_driver::counterexamples;
use ollie_driver::naive;
use ollie_driver::setup::{compile_naive, ensure_fits, oracle, roofline_floor, spec_seed};

use crate::{load, stdout, user_error, Failure, SpecArgs};

pub struct Options {
    pub spec: SpecArgs,
    pub kernel: PathBuf,
    pub flags: String,
    pub seed: Option<u64>,
    pub timeout: Option<f64>,
    /// `naive` or `rounded`; `None`: as the naive kernel's cost decides.
    pub baseline: Option<String>,
    pub certificate: Option<PathBuf>,
    pub json: bool,
}

pub fn run(o: &Options) -> Result<(), Failure> {
    let spec = load::load(&o.spec)?;
    ensure_fits(&spec.graph)?;
    let graph = &spec.graph;
    let source = std::fs::read_to_string(&o.kernel).map_err(|e| user_error(format!("error: cannot read kernel `{}`: {e}", o.kernel.display())))?;
    let compiler = Compiler::new(Compiler::default_cache_dir());
    let baseline = compile_naive(&compiler, graph)?;
    let flags: Vec<String> = o.flags.split_whitespace().map(str::to_string).collect();
    let seed = o.seed.unwrap_or_else(|| spec_seed(graph));
    let mut notes = String::new();
    let report = match compiler.compile(&source, &flags) {
        Ok(c) => {
            let (machine, floor) = roofline_floor(graph)?;
            let cost = naive::measure(graph, &baseline, &compiler, &machine, o.timeout)?;
            let against = match o.baseline.as_deref() {
                Some("naive") => Baseline::Naive(baseline.clone()),
                Some(_) => Baseline::Rounded,
                None => cost.baseline(&baseline, None),
            };
            if against == Baseline::Rounded && o.baseline.is_none() {
                notes.push_str(&format!(
                    "the naive kernel takes {} a call ({}): errors are measured against the reference rounded to float32, not its outputs (docs/verification.md)\n",
                    ollie_driver::report::seconds(cost.seconds),
                    cost.how()
                ));
            }
            let runner = Runner::current_exe(check_limit(&cost, o.timeout)).context("locating ollie's executable")?;
            let saved = counterexamples::load(graph);
            let config = VerifyConfig { seed, saved, floor: Some(floor.fastest), ..VerifyConfig::default() };
            ollie_verify::verify_with(&mut oracle(graph, &runner, against), &c.library, &config).map_err(|e| cost.verify_error(&graph.name, e, "verifying"))?
        }
        Err(Ok(outcome)) => Report {
            accepted: false,
            rejection: Some(match outcome {
                Outcome::CompileError { log } => Rejection::CompileError { log },
                other => Rejection::Failed { reason: other.summary() },
            }),
            certificate: ollie_verify::Certificate { kernel: graph.name.clone(), seed, alpha: 16.0, baseline: "none", planned: 0, tests: Vec::new() },
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
        // The report, and where the counterexample's inputs were saved (one NAME.npy each).
        let mut value = serde_json::to_value(&report).expect("serializable");
        value["counterexample_dir"] = serde_json::json!(saved.as_ref().map(|d| d.display().to_string()));
        stdout(&format!("{}\n", serde_json::to_string_pretty(&value).expect("serializable")))?;
    } else {
        let mut text = notes;
        text.push_str(&render(&report, &certificate));
        if let Some(dir) = saved {
            text.push_str(&format!("counterexample inputs: {} (tried first by every later check of this spec)\n", dir.display()));
        }
        stdout(&text)?;
    }
    if report.accepted { Ok(()) } else { Err(Failure::Rejected) }
}

/// A call's time limit in `ollie check` and `ollie bench`: `timeout` if given, else 20 times the
/// naive kernel's time, and 30 s at least (a kernel written by hand may be slower than the
/// naive one and still be judged).
pub(crate) fn check_limit(cost: &naive::NaiveCost, timeout: Option<f64>) -> std::time::Duration {
    timeout.map_or_else(|| cost.candidate_limit(None, None).max(std::time::Duration::from_secs(30)), std::time::Duration::from_secs_f64)
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
        Some(r) => format!("rejected: {r}\n"),
    };
    text.push_str(&format!("certificate: {}\n", certificate.display()));
    text
}
