//! `ollie optimize`: the command line's side of a search — the proposers and the LLM's options
//! checked, the spec loaded, Ctrl-C turned into a stop after the evaluation in flight — over
//! `ollie_driver::optimize`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ollie_driver::llm::LlmOptions;
use ollie_driver::optimize::PROPOSERS;

use crate::{load, stdout, user_error, Failure, LlmArgs, SpecArgs};

pub struct Options {
    pub spec: SpecArgs,
    pub time: f64,
    pub evals: usize,
    pub roofline_target: Option<f64>,
    pub out: std::path::PathBuf,
    pub resume: bool,
    pub seed: Option<u64>,
    pub timeout: Option<f64>,
    pub proposers: Option<Vec<String>>,
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
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        let _ = ctrlc::set_handler(move || {
            if flag.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
            eprintln!("\nstopping after this evaluation (Ctrl-C again to quit at once)");
        });
    }
    let options = ollie_driver::optimize::Options {
        spec_path: spec_path.to_string(),
        spec_source: std::fs::read_to_string(spec_path).unwrap_or_default(),
        dims: o.spec.dims.clone(),
        time: o.time,
        evals: o.evals,
        roofline_target: o.roofline_target,
        out: o.out.clone(),
        resume: o.resume,
        seed: o.seed,
        timeout: o.timeout,
        proposers,
        llm,
        interrupted,
    };
    let table = ollie_driver::optimize::optimize(&spec.graph, &options)?;
    stdout(&table)
}
