//! The `ollie` command line: parses arguments, runs one command, renders errors.

mod alloc;
mod bench;
mod check;
mod eval;
mod load;
mod model;
mod optimize;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A stochastic superoptimizer for tensor kernels written as numpy.
#[derive(Parser)]
#[command(name = "ollie", version, about)]
struct Cli {
    /// Also write an error to FILE as one JSON object (`error`: `spec`, `usage` or `internal`;
    /// `code`: a spec diagnostic's code; `message`: the text printed on stderr), for programs
    /// that drive ollie, as the Python package does.
    #[arg(long, global = true, value_name = "FILE")]
    error_json: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
pub struct SpecArgs {
    /// The spec: FILE.py, or FILE.py::KERNEL when the file has several kernels.
    pub spec: String,
    /// Override a module-level constant, e.g. `--dim T=8192` (repeatable).
    #[arg(long = "dim", value_name = "NAME=VALUE", value_parser = parse_dim)]
    pub dims: Vec<(String, i64)>,
}

/// The LLM proposer's endpoint and budgets. The API key comes from `OLLIE_LLM_API_KEY`, else
/// `OPENAI_API_KEY` (local servers need none); it is never printed or stored.
#[derive(clap::Args, Debug, Clone)]
pub struct LlmArgs {
    /// An OpenAI-compatible endpoint's base URL, e.g. `https://api.openai.com/v1` or
    /// `http://localhost:8000/v1` (vLLM), `http://localhost:11434/v1` (Ollama).
    #[arg(id = "llm-url", long = "llm-url", value_name = "URL")]
    pub url: Option<String>,
    /// The model name the endpoint serves.
    #[arg(id = "llm-model", long = "llm-model", value_name = "NAME")]
    pub model: Option<String>,
    /// At most this many calls over the whole run (repairs included).
    #[arg(id = "llm-calls", long = "llm-calls", value_name = "N")]
    pub calls: Option<u64>,
    /// At most this many tokens (prompt and completion) over the whole run; calls in flight may
    /// go a little past it.
    #[arg(id = "llm-tokens", long = "llm-tokens", value_name = "N")]
    pub tokens: Option<u64>,
    /// Conversations open at once.
    #[arg(id = "llm-concurrency", long = "llm-concurrency", value_name = "N", default_value_t = 4)]
    pub concurrency: usize,
    /// The longest one call may take (`300`, `5m`).
    #[arg(id = "llm-timeout", long = "llm-timeout", value_name = "SECONDS", default_value = "300s", value_parser = parse_seconds)]
    pub timeout: f64,
    /// Repair turns a conversation gets for a kernel that does not compile or a reply without a
    /// usable kernel.
    #[arg(id = "llm-repairs", long = "llm-repairs", value_name = "N", default_value_t = 2)]
    pub repairs: u32,
    /// A directory whose system.j2, propose.j2 or repair.j2 replace the built-in prompts.
    #[arg(id = "llm-prompts", long = "llm-prompts", value_name = "DIR")]
    pub prompts: Option<PathBuf>,
    /// Dollars per million prompt and completion tokens, to price calls whose endpoint reports
    /// no cost, e.g. `2.5,10`.
    #[arg(id = "llm-price", long = "llm-price", value_name = "IN,OUT", value_parser = parse_price)]
    pub price: Option<(f64, f64)>,
}

fn parse_price(s: &str) -> Result<(f64, f64), String> {
    let parts: Vec<f64> = s.split(',').map(|p| p.trim().parse::<f64>()).collect::<Result<_, _>>().map_err(|e| format!("`{s}`: {e}"))?;
    match parts[..] {
        [i, o] if i >= 0.0 && o >= 0.0 => Ok((i, o)),
        _ => Err(format!("`{s}`: expected two non-negative prices, dollars per million prompt and completion tokens, e.g. 2.5,10")),
    }
}

#[derive(Subcommand)]
enum Command {
    /// Print the kernel's tensor graph.
    Graph {
        #[command(flatten)]
        spec: SpecArgs,
    },
    /// Print the graphs algebraic rewriting finds cheaper than the spec's (the `rewrite`
    /// proposer's variants), how saturation stopped and the rules that fired.
    Rewrite {
        #[command(flatten)]
        spec: SpecArgs,
    },
    /// Print the naive C kernel the emitter produces (the baseline of every speedup).
    Lower {
        #[command(flatten)]
        spec: SpecArgs,
        /// Print the loop-nest IR instead of C.
        #[arg(long)]
        ir: bool,
        /// Apply the schedule in this file (its text form: one step per line) to the naive nest.
        #[arg(long, conflicts_with = "sketch")]
        schedule: Option<PathBuf>,
        /// Apply the search's N-th sketch (from 0) instead: the schedule `optimize` starts from.
        /// With `--steps`, print its steps (a schedule file) instead of the kernel.
        #[arg(long)]
        sketch: Option<usize>,
        /// Print the schedule's steps instead of the kernel.
        #[arg(long, requires = "sketch")]
        steps: bool,
        /// Print what each sketch rule does to the naive nest instead: where it applies, where it
        /// declines and why, and which rules find nothing to apply to.
        #[arg(long, conflicts_with_all = ["sketch", "schedule", "ir"])]
        rules: bool,
        /// Vector lanes the sketches assume [default: this CPU's floats per vector register].
        #[arg(long)]
        lanes: Option<u32>,
        /// Lower the N-th variant `ollie rewrite` prints (from 1) instead of the spec's graph.
        #[arg(long)]
        variant: Option<usize>,
    },
    /// Verify a kernel against the spec: exit 0 if accepted, 1 if rejected (with the reason and
    /// the counterexample), 2 for a usage or spec error.
    Check {
        #[command(flatten)]
        spec: SpecArgs,
        /// The C file implementing the kernel ABI.
        kernel: PathBuf,
        /// Compiler flags for the kernel.
        #[arg(long, default_value = "-O3 -march=native", allow_hyphen_values = true)]
        flags: String,
        /// The master seed of the input sets (default: one fixed per spec, printed and recorded).
        #[arg(long)]
        seed: Option<u64>,
        /// Seconds one call may take [default: 20 times the naive kernel's time, 30 s at least].
        #[arg(long, value_parser = parse_seconds)]
        timeout: Option<f64>,
        /// What errors are measured against besides the reference: `naive` (the naive kernel's
        /// outputs) or `rounded` (the reference rounded to the output's dtype: the a-priori
        /// rule) [default: naive while a call of the naive kernel takes at most 2 s].
        #[arg(long, value_parser = ["naive", "rounded"])]
        baseline: Option<String>,
        /// Where to write the certificate (default: KERNEL.certificate.json beside the kernel).
        #[arg(long)]
        certificate: Option<PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Time a kernel as the search does (warm-ups, interleaved checked calls on rotating inputs,
    /// median and spread) with its roofline figures; `--vs` times a second kernel against it.
    Bench {
        #[command(flatten)]
        spec: SpecArgs,
        /// The C file implementing the kernel ABI.
        kernel: PathBuf,
        /// A second kernel to interleave with the first; the ratio first/second is printed.
        #[arg(long)]
        vs: Option<PathBuf>,
        /// Compiler flags for the kernels.
        #[arg(long, default_value = "-O3 -march=native", allow_hyphen_values = true)]
        flags: String,
        /// Compiler flags for the second kernel, where they differ from `--flags` (two searches'
        /// kernels, each with the flags its report names).
        #[arg(long, requires = "vs", allow_hyphen_values = true)]
        vs_flags: Option<String>,
        /// Timed calls per kernel.
        #[arg(long, default_value_t = 21)]
        calls: usize,
        /// Untimed calls first.
        #[arg(long, default_value_t = 3)]
        warmups: usize,
        /// Seconds one call may take [default: 20 times the naive kernel's time, 30 s at least].
        #[arg(long, value_parser = parse_seconds)]
        timeout: Option<f64>,
    },
    /// Measure and cache this machine's ceilings (memory bandwidth, FMA peak) for the roofline.
    Machine {
        /// Measure again even if a cached measurement exists.
        #[arg(long)]
        refresh: bool,
        /// Size of each of the three triad arrays in MiB (default: 8x the last-level cache,
        /// at least 64).
        #[arg(long, value_name = "MIB")]
        array_mib: Option<u64>,
        /// Repetitions per measurement; the best is reported.
        #[arg(long, default_value_t = 5)]
        repetitions: usize,
    },
    /// Search for a faster kernel: schedules proposed and mutated, every candidate verified and
    /// timed, the best written to DIR with its report. Resumable after a kill (`--resume`).
    Optimize {
        #[command(flatten)]
        spec: SpecArgs,
        /// Search time budget (`60`, `60s`, `2m`); a resumed search gets what is left.
        #[arg(long, default_value = "60s", value_parser = parse_seconds)]
        time: f64,
        /// At most this many evaluations (over all sessions of the run).
        #[arg(long, default_value_t = 100_000)]
        evals: usize,
        /// Stop once the best kernel is within this fraction of the roofline floor (e.g. 0.9).
        #[arg(long, value_name = "FRACTION")]
        roofline_target: Option<f64>,
        /// The output directory (kernel, loader, report, certificate, and the store ollie.db).
        #[arg(long, default_value = "ollie-out")]
        out: PathBuf,
        /// Keep the search's record here instead of OUT/ollie.db: a PostgreSQL server
        /// (`postgresql://user@host/db`), which `ollie worker` on other hosts can join, or an
        /// SQLite file.
        #[arg(long, env = "OLLIE_STORE", value_name = "URL")]
        store: Option<String>,
        /// Seconds a lease on a candidate being judged lasts unless its worker renews it (a third
        /// of it apart); a killed worker's candidate is taken up by another once it expires.
        #[arg(long, default_value_t = ollie_driver::workers::LEASE_SECONDS, value_parser = parse_seconds)]
        lease: f64,
        /// Continue the last search of this spec stored in the output directory.
        #[arg(long)]
        resume: bool,
        /// The search's seed (default: fresh, recorded in the store).
        #[arg(long)]
        seed: Option<u64>,
        /// Seconds one call may take [default: 20 times the naive kernel's time, within an eighth
        /// of --time; the naive kernel's own calls get five times its time, measured first on a
        /// slice of its rows when it is slow].
        #[arg(long, value_parser = parse_seconds)]
        timeout: Option<f64>,
        /// The proposers, comma-separated: `mutate`, `sketch`, `rewrite`, `llm` (default: mutate,
        /// sketch and rewrite, and llm too when --llm-url is given).
        #[arg(long, value_delimiter = ',', value_name = "NAMES")]
        proposers: Option<Vec<String>>,
        /// Measure proposals in the order proposed: the cost model still predicts each time
        /// (the report judges it) but chooses nothing.
        #[arg(long)]
        no_cost_model: bool,
        #[command(flatten)]
        llm: LlmArgs,
    },
    /// The cost model of this machine class: the timings earlier searches kept for it, and how
    /// well a model fitted on the searches before each ranked that search's kernels.
    Model,
    /// The kernel cache (shared with the Python package): the fastest verified kernel found for
    /// each spec graph on this CPU, with this compiler and this ollie. Without arguments, lists
    /// it; with a spec, shows that spec's entry (at its dims) if there is one.
    Kernels {
        /// A spec (FILE.py or FILE.py::KERNEL) whose entry to show.
        spec: Option<String>,
        /// Override a module-level constant of the spec (repeatable).
        #[arg(long = "dim", value_name = "NAME=VALUE", value_parser = parse_dim, requires = "spec")]
        dims: Vec<(String, i64)>,
        /// Remove the entries whose key starts with KEY (`all`: every entry).
        #[arg(long, value_name = "KEY", conflicts_with = "spec")]
        remove: Option<String>,
        /// Print JSON (an entry, `null` when there is none, or a list).
        #[arg(long)]
        json: bool,
    },
    /// Join a search kept on a PostgreSQL server (`ollie optimize SPEC --store URL` on any
    /// host) as one more worker: its own chain and seed, timing on this host's cores. Joins the
    /// oldest open search started on a host of this machine class (CPU model, ISA, threads);
    /// refuses one of another class. The first worker done claims the final phase.
    Worker {
        /// The PostgreSQL server holding the search.
        #[arg(long, env = "OLLIE_STORE", value_name = "URL")]
        store: String,
        /// Where this worker writes the result if it runs the final phase.
        #[arg(long, default_value = "ollie-out")]
        out: PathBuf,
        /// Wait up to this long for a search to join (`30s`, `10m`).
        #[arg(long, default_value = "1s", value_parser = parse_seconds)]
        wait: f64,
        /// This worker's seed (default: fresh, recorded in the store).
        #[arg(long)]
        seed: Option<u64>,
        /// Seconds a lease on a candidate being judged lasts unless renewed.
        #[arg(long, default_value_t = ollie_driver::workers::LEASE_SECONDS, value_parser = parse_seconds)]
        lease: f64,
    },
    /// List the searches stored in an output directory (or a store given by --store).
    Runs {
        /// The output directory of `ollie optimize`.
        #[arg(default_value = "ollie-out")]
        dir: PathBuf,
        /// Read this store instead of DIR/ollie.db (a PostgreSQL server or an SQLite file).
        #[arg(long, env = "OLLIE_STORE", value_name = "URL")]
        store: Option<String>,
    },
    /// Rebuild report.md, report.json and the plots of the last finished search into DIR from
    /// its store (DIR/ollie.db, or the one --store names).
    Report {
        dir: PathBuf,
        /// Read this store instead of DIR/ollie.db.
        #[arg(long, env = "OLLIE_STORE", value_name = "URL")]
        store: Option<String>,
    },
    /// Run the float64 reference on inputs from .npy files or on seeded random inputs.
    Eval {
        #[command(flatten)]
        spec: SpecArgs,
        /// An input as NAME=FILE.npy (f32 or f64, the parameter's exact shape); repeatable.
        #[arg(long = "input", value_name = "NAME=FILE.npy", value_parser = parse_input)]
        inputs: Vec<(String, PathBuf)>,
        /// Use seeded random inputs (standard normal) instead of files.
        #[arg(long, value_name = "SEED", conflicts_with = "inputs")]
        random: Option<u64>,
        /// Write each output to DIR/out.npy (DIR/out0.npy, out1.npy, ... for several).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Write outputs in float64, the reference's own precision, instead of rounding them to
        /// their annotated dtype.
        #[arg(long)]
        f64: bool,
    },
}

fn parse_dim(s: &str) -> Result<(String, i64), String> {
    let (name, value) = s.split_once('=').ok_or("expected NAME=VALUE, e.g. T=8192")?;
    let value = value.trim().parse::<i64>().map_err(|_| format!("`{value}` is not an integer"))?;
    Ok((name.trim().to_string(), value))
}

/// A positive, finite number of seconds: `90`, `90s`, `1.5m`, `250ms`.
fn parse_seconds(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (number, unit) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    match number.trim().parse::<f64>().map(|v| v * unit) {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

fn parse_input(s: &str) -> Result<(String, PathBuf), String> {
    let (name, path) = s.split_once('=').ok_or("expected NAME=FILE.npy, e.g. x=x.npy")?;
    Ok((name.trim().to_string(), PathBuf::from(path)))
}

/// How a command failed: a rejected kernel (exit 1), a user's mistake (exit 2) or ollie's own
/// failure (exit 3).
pub enum Failure {
    /// Already rendered for the user.
    User(String),
    /// The spec is outside the subset: its diagnostic's code and rendering.
    Spec { code: &'static str, rendered: String },
    /// `ollie check` rejected the kernel (already reported).
    Rejected,
    Internal(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Failure {
        Failure::Internal(e)
    }
}

impl From<ollie_driver::Error> for Failure {
    fn from(e: ollie_driver::Error) -> Failure {
        match e {
            ollie_driver::Error::User(message) => Failure::User(message),
            ollie_driver::Error::Internal(e) => Failure::Internal(e),
        }
    }
}

pub fn user_error(message: impl Into<String>) -> Failure {
    Failure::User(message.into())
}

/// What `ollie lower` prints besides the naive kernel.
enum Lowered<'a> {
    Naive { ir: bool },
    Schedule { path: &'a std::path::Path, ir: bool },
    /// The N-th sketch, its steps or its kernel.
    Sketch { n: usize, steps: bool, ir: bool },
    Rules,
}

fn lower(args: &SpecArgs, what: Lowered, lanes: Option<u32>, variant: Option<usize>) -> Result<(), Failure> {
    let spec = load::load(args)?;
    let graph = match variant {
        None => spec.graph,
        Some(k) => {
            let mut variants = ollie_rewrite::variants(&spec.graph).variants;
            if k == 0 || k > variants.len() {
                return Err(user_error(format!("error: rewriting finds {} variants of `{}` (1..={})", variants.len(), spec.graph.name, variants.len())));
            }
            variants.swap_remove(k - 1).graph
        }
    };
    let nest = ollie_loops::lower(&graph).map_err(anyhow::Error::from)?;
    let target = ollie_driver::sketch_target(lanes.unwrap_or_else(ollie_runner::native_float_lanes));
    let (nest, ir) = match what {
        Lowered::Naive { ir } => (nest, ir),
        Lowered::Rules => return stdout(&ollie_driver::explain(&nest, &target).iter().map(|n| format!("{n}\n")).collect::<String>()),
        Lowered::Sketch { n, steps, ir } => {
            let mut all = ollie_driver::sketches(&nest, &target);
            if n >= all.len() {
                return Err(user_error(format!("error: there are {} sketches of `{}` at {} lanes (0..{})", all.len(), nest.name, target.lanes, all.len())));
            }
            let schedule = all.swap_remove(n);
            if steps {
                return stdout(&schedule.to_string());
            }
            (schedule.apply(&nest).map_err(anyhow::Error::from)?, ir)
        }
        Lowered::Schedule { path, ir } => {
            let text = std::fs::read_to_string(path).map_err(|e| user_error(format!("error: cannot read schedule `{}`: {e}", path.display())))?;
            let schedule = ollie_loops::Schedule::parse(&text).map_err(|e| user_error(format!("error: {}: {e}", path.display())))?;
            (schedule.apply(&nest).map_err(|e| user_error(format!("error: {}: {e}", path.display())))?, ir)
        }
    };
    stdout(&if ir { nest.to_string() } else { ollie_loops::emit_c(&nest) })
}

fn kernels(spec: Option<SpecArgs>, remove: Option<String>, json: bool) -> Result<(), Failure> {
    use ollie_driver::cache;
    let root = cache::root();
    if let Some(prefix) = remove {
        let removed = cache::remove(&root, if prefix == "all" { "" } else { &prefix })?;
        if removed.is_empty() {
            return Err(user_error(format!("error: no cached kernel's key starts with `{prefix}` (`ollie kernels` lists them)")));
        }
        return stdout(&removed.iter().map(|k| format!("removed {k}\n")).collect::<String>());
    }
    let show = |e: &cache::Entry| {
        let dims: Vec<String> = e.dims.iter().map(|(n, v)| format!("{n}={v}")).collect();
        format!(
            "{}  {:<24} {:>7.2}x naive  {:>4.0}% of roofline  {}{}\n    {}\n",
            e.key,
            e.kernel,
            e.speedup,
            100.0 * e.fraction_of_roofline,
            e.spec,
            if dims.is_empty() { String::new() } else { format!(" ({})", dims.join(", ")) },
            e.dir.display()
        )
    };
    let entry_json = |e: &cache::Entry| {
        let mut v = serde_json::to_value(e).expect("serializable");
        v["dir"] = serde_json::json!(e.dir.display().to_string());
        v
    };
    let Some(spec) = spec else {
        let entries = cache::list(&root);
        if json {
            return stdout(&format!("{}\n", serde_json::Value::Array(entries.iter().map(entry_json).collect())));
        }
        if entries.is_empty() {
            return stdout(&format!("no kernels cached in {} (`ollie optimize` stores its results there)\n", root.display()));
        }
        return stdout(&entries.iter().map(show).collect::<String>());
    };
    let graph = load::load(&spec)?.graph;
    let cc = ollie_runner::Compiler::new(ollie_runner::Compiler::default_cache_dir()).cc;
    let found = cache::lookup(&root, &cache::Toolchain::current(&cc), &graph);
    if json {
        return stdout(&format!("{}\n", found.as_ref().map_or(serde_json::Value::Null, entry_json)));
    }
    match found {
        Some(e) => stdout(&show(&e)),
        None => stdout(&format!("no kernel cached for `{}` on this machine: `ollie optimize {}` stores one\n", graph.name, spec.spec)),
    }
}

fn machine(refresh: bool, array_mib: Option<u64>, repetitions: usize) -> Result<(), Failure> {
    let config = ollie_runner::MachineConfig { array_bytes: array_mib.map(|m| m << 20), repetitions: repetitions.max(1), ..Default::default() };
    let (machine, source, path) = ollie_driver::setup::machine_ceilings(refresh, &config)?;
    let mut text = format!(
        "{}\nFMA path: {}, last-level cache {} MiB\n\n{:>7}  {:>16}  {:>20}\n",
        machine.cpu,
        machine.isa,
        machine.last_level_cache_bytes >> 20,
        "threads",
        "bandwidth GB/s",
        "f32 FMA peak GFLOP/s"
    );
    for c in &machine.ceilings {
        text.push_str(&format!("{:>7}  {:>16.1}  {:>20.1}\n", c.threads, c.bandwidth_gbs, c.peak_gflops));
    }
    text.push_str("\nin-cache bandwidth, GB/s for 1/2/... threads (bounds how fast a kernel can be):\n");
    for c in &machine.cache_bandwidth {
        let gbs: Vec<String> = c.gbs.iter().map(|g| format!("{g:.0}")).collect();
        text.push_str(&format!("{:>8}KiB  {}\n", c.bytes >> 10, gbs.join("/")));
    }
    let source = match source {
        ollie_runner::Source::Cached => "cached (a quick probe found the figures current)".to_string(),
        ollie_runner::Source::Pinned => "pinned in the cache file (\"pinned\": true): used as written".to_string(),
        ollie_runner::Source::Measured => "measured now".to_string(),
        ollie_runner::Source::Remeasured { gain } => format!("measured again: a quick probe ran {gain:.2}x faster than the cached figures"),
    };
    text.push_str(&format!(
        "\nmeasured {} (each figure the best of {} measurement{}); {source}\nstored in {}\n\
         Every run probes the machine for a fraction of a second and measures again when the probe beats\n\
         the stored figures by {:.0}%; `ollie machine --refresh` measures again now (figures only improve:\n\
         delete the file to start over).\n",
        machine.measured_date(),
        machine.measurements,
        if machine.measurements == 1 { "" } else { "s" },
        path.display(),
        (ollie_runner::PROBE_MARGIN - 1.0) * 100.0
    ));
    stdout(&text)
}

/// `OLLIE_LOG`'s events on stderr as `tracing` formats them, and the search's progress events
/// (sent where stderr is no terminal, so no bar is drawn) as plain lines.
fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{filter, fmt, Layer};
    let progress = ollie_driver::progress::PROGRESS_TARGET;
    let logs = fmt::layer().with_writer(std::io::stderr).with_filter(tracing_subscriber::EnvFilter::from_env("OLLIE_LOG"));
    let lines = fmt::layer()
        .with_writer(std::io::stderr)
        .without_time()
        .with_level(false)
        .with_target(false)
        .with_filter(filter::filter_fn(move |m| m.target() == progress));
    tracing_subscriber::registry().with(logs).with(lines).init();
}

/// Writes to stdout; a closed pipe (`ollie graph ... | head`) is not an error.
pub fn stdout(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Failure::Internal(e.into())),
        _ => Ok(()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(ollie_runner::SANDBOX_COMMAND) {
        // The child process that runs a kernel: no logging, no argument parsing beyond its own.
        return match ollie_runner::sandbox_main(&args[2..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(reason) => {
                eprintln!("{reason}");
                ExitCode::from(3)
            }
        };
    }
    // Read before any thread starts, and gone from the environment every child inherits.
    let key = ollie_llm::ApiKey::take_from_env();
    init_logging();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Graph { spec } => load::load(&spec).and_then(|s| stdout(&s.graph.to_string())),
        Command::Rewrite { spec } => load::load(&spec).and_then(|s| stdout(&ollie_rewrite::variants(&s.graph).to_string())),
        Command::Lower { spec, ir, schedule, sketch, steps, rules, lanes, variant } => {
            let what = match (schedule.as_deref(), sketch) {
                _ if rules => Lowered::Rules,
                (Some(path), _) => Lowered::Schedule { path, ir },
                (None, Some(n)) => Lowered::Sketch { n, steps, ir },
                (None, None) => Lowered::Naive { ir },
            };
            lower(&spec, what, lanes, variant)
        }
        Command::Bench { spec, kernel, vs, flags, vs_flags, calls, warmups, timeout } => {
            bench::run(&bench::Options { spec, kernel, vs, flags, vs_flags, calls, warmups, timeout })
        }
        Command::Check { spec, kernel, flags, seed, timeout, baseline, certificate, json } => {
            check::run(&check::Options { spec, kernel, flags, seed, timeout, baseline, certificate, json })
        }
        Command::Optimize { spec, time, evals, roofline_target, out, store, lease, resume, seed, timeout, proposers, no_cost_model, llm } => {
            optimize::run(&optimize::Options { spec, time, evals, roofline_target, out, store, lease, resume, seed, timeout, proposers, cost_model: !no_cost_model, llm, key: key.clone() })
        }
        Command::Worker { store, out, wait, seed, lease } => optimize::worker(&optimize::WorkerOptions { store, out, wait, seed, lease }),
        Command::Kernels { spec, dims, remove, json } => kernels(spec.map(|spec| SpecArgs { spec, dims }), remove, json),
        Command::Runs { dir, store } => ollie_driver::report::runs(&dir, store.as_deref().map(ollie_driver::Location::parse)).map_err(Failure::from).and_then(|t| stdout(&t)),
        Command::Report { dir, store } => ollie_driver::report::rebuild(&dir, store.as_deref().map(ollie_driver::Location::parse)).map_err(Failure::from).and_then(|t| stdout(&t)),
        Command::Model => model::run(),
        Command::Machine { refresh, array_mib, repetitions } => machine(refresh, array_mib, repetitions),
        Command::Eval { spec, inputs, random, out, f64 } => {
            eval::run(&spec, &inputs, random, out.as_deref(), f64)
        }
    };
    let (kind, code, message, exit) = match result {
        Ok(()) => return ExitCode::SUCCESS,
        Err(Failure::Rejected) => return ExitCode::from(1),
        Err(Failure::Spec { code, rendered }) => ("spec", Some(code), rendered, 2),
        Err(Failure::User(message)) => ("usage", None, message, 2),
        Err(Failure::Internal(e)) => ("internal", None, format!("ollie: internal error: {e:#}"), 3),
    };
    eprint!("{message}");
    if !message.ends_with('\n') {
        eprintln!();
    }
    if let Some(path) = &cli.error_json {
        let json = serde_json::json!({ "error": kind, "code": code, "message": message });
        if let Err(e) = std::fs::write(path, json.to_string()) {
            eprintln!("ollie: cannot write {}: {e}", path.display());
        }
    }
    ExitCode::from(exit)
}
