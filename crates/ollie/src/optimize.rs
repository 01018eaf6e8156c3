//! `ollie optimize`: the command line's side of a search — the proposers and the LLM's options
//! checked, the spec loaded, Ctrl-C turned into a stop after the evaluation in flight — over
//! `ollie_driver::pipeline`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ollie_driver::llm::LlmOptions;
use ollie_driver::pipeline::PROPOSERS;
use ollie_driver::stored;
use ollie_driver::workers;
use ollie_driver::Location;

use crate::{load, stdout, user_error, Failure, LlmArgs, SpecArgs};

pub struct Options {
    pub spec: SpecArgs,
    pub time: f64,
    pub evals: usize,
    pub roofline_target: Option<f64>,
    pub out: std::path::PathBuf,
    pub store: Option<String>,
    pub lease: f64,
    pub resume: bool,
    pub seed: Option<u64>,
    pub timeout: Option<f64>,
    pub proposers: Option<Vec<String>>,
    pub cost_model: bool,
    pub llm: LlmArgs,
    pub key: Option<ollie_llm::ApiKey>,
}

/// The proposers asked for, checked, and the LLM's options if `llm` is among them.
fn proposers(o: &Options) -> Result<(Vec<String>, Option<LlmOptions>), Failure> {
    let mut default = vec!["mutate".to_string(), "sketch".to_string(), "rewrite".to_string()];
    if o.llm.url.is_some() {
        default.push("llm".into());
    }
    let names = o.proposers.clone().unwrap_or(default);
    let mut unique: Vec<String> = Vec::new();
    for n in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if !PROPOSERS.contains(&n) {
            return Err(user_error(format!("error: unknown proposer `{n}` (known: {})", PROPOSERS.join(", "))));
        }
        if !unique.iter().any(|u| u == n) {
            unique.push(n.to_string());
        }
    }
    if unique.is_empty() {
        return Err(user_error(format!("error: --proposers names none (known: {})", PROPOSERS.join(", "))));
    }
    if !unique.iter().any(|n| n == "llm") {
        return Ok((unique, None));
    }
    let a = &o.llm;
    let url = a.url.clone().ok_or_else(|| user_error("error: the llm proposer needs --llm-url, an OpenAI-compatible endpoint's base URL such as http://localhost:8000/v1"))?;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(user_error(format!("error: --llm-url `{url}` is not an http:// or https:// URL")));
    }
    let model = a.model.clone().ok_or_else(|| user_error("error: the llm proposer needs --llm-model, the model name the endpoint serves"))?;
    if a.concurrency == 0 || a.timeout.is_nan() || a.timeout <= 0.0 {
        return Err(user_error("error: --llm-concurrency and --llm-timeout must be positive"));
    }
    let options = LlmOptions {
        url,
        model,
        key: o.key.clone(),
        concurrency: a.concurrency,
        calls: a.calls,
        tokens: a.tokens,
        timeout: Duration::from_secs_f64(a.timeout),
        repairs: a.repairs,
        prompts: ollie_llm::Prompts::load(a.prompts.as_deref()).map_err(|e| user_error(format!("error: {e}")))?,
        price: a.price,
    };
    Ok((unique, Some(options)))
}

pub fn run(o: &Options) -> Result<(), Failure> {
    let (proposers, llm) = proposers(o)?;
    let spec = load::load(&o.spec)?;
    let (spec_path, _) = ollie_spec::split_selector(&o.spec.spec);
    let interrupted = on_ctrl_c();
    let options = ollie_driver::pipeline::Options {
        spec_path: spec_path.to_string(),
        spec_source: std::fs::read_to_string(spec_path).unwrap_or_default(),
        dims: o.spec.dims.clone(),
        time: o.time,
        evals: o.evals,
        roofline_target: o.roofline_target,
        out: o.out.clone(),
        store: o.store.as_deref().map(Location::parse),
        resume: o.resume,
        join: None,
        lease: o.lease,
        seed: o.seed,
        timeout: o.timeout,
        proposers,
        cost_model: o.cost_model,
        llm,
        interrupted,
    };
    let table = ollie_driver::pipeline::optimize(&spec.graph, &options)?;
    stdout(&table)
}

/// A flag Ctrl-C sets: the search stops after the evaluation in flight (a second Ctrl-C quits
/// at once).
fn on_ctrl_c() -> Arc<AtomicBool> {
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = interrupted.clone();
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\nstopping after this evaluation (Ctrl-C again to quit at once)");
    });
    interrupted
}

pub struct WorkerOptions {
    pub store: String,
    pub out: std::path::PathBuf,
    pub wait: f64,
    pub seed: Option<u64>,
    pub lease: f64,
}

/// `ollie worker`: joins the oldest open search of this machine class in a shared store, with
/// the options it was started with (its LLM proposer excepted: the endpoint and its budget are
/// the starting host's).
pub fn worker(o: &WorkerOptions) -> Result<(), Failure> {
    let location = Location::parse(&o.store);
    if !location.is_shared() {
        return Err(user_error(format!("error: `ollie worker` joins searches in a shared store: --store must be a PostgreSQL server (postgresql://user@host/db), not `{}`", o.store)));
    }
    let (machine, _, _) = ollie_driver::setup::machine_ceilings(false, &Default::default())?;
    let run = workers::choose_run(&location, &workers::machine_class(&machine), o.wait)?;
    let dims = stored::dims(&run);
    let spec = load::compile(&run.new.spec_path, &run.new.spec_source, &ollie_spec::Options { kernel: Some(run.new.kernel.clone()), dims: dims.clone() })?;
    let proposers: Vec<String> = stored::option::<Vec<String>>(&run, "proposers").into_iter().filter(|p| p != "llm").collect();
    let options = ollie_driver::pipeline::Options {
        spec_path: run.new.spec_path.clone(),
        spec_source: run.new.spec_source.clone(),
        dims,
        time: stored::option::<f64>(&run, "time_seconds"),
        evals: stored::option::<Option<usize>>(&run, "evals").unwrap_or(usize::MAX),
        roofline_target: stored::option(&run, "roofline_target"),
        out: o.out.clone(),
        store: Some(location),
        resume: false,
        join: Some(run.id),
        lease: o.lease,
        seed: o.seed,
        timeout: stored::option(&run, "timeout_seconds"),
        proposers: if proposers.is_empty() { vec!["mutate".into()] } else { proposers },
        cost_model: !stored::option::<bool>(&run, "no_cost_model"),
        llm: None,
        interrupted: on_ctrl_c(),
    };
    let table = ollie_driver::pipeline::optimize(&spec.graph, &options)?;
    stdout(&table)
}
