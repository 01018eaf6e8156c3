//! The progress display of a search: a bar of the time spent against the budget, the tallies of
//! evaluations and rejections, the best time against the naive kernel and the roofline, the LLM's
//! calls; and the messages a search has for its user, printed above the bar. The only place in
//! the driver that writes to the terminal.

use std::cell::Cell;
use std::time::{Duration, Instant};

use ollie_store::Candidate;

use crate::llm::LlmTotals;
use crate::stored::Tally;
use crate::report;

pub(crate) struct Progress {
    bar: indicatif::ProgressBar,
    tally: Tally,
    /// The best time (on the chain's scale), the naive kernel's and the roofline floor.
    best: f64,
    naive: f64,
    floor: f64,
    llm: Option<LlmTotals>,
    shown: Cell<Instant>,
    /// When the last plain progress line was printed (stderr not a terminal).
    printed: Cell<Option<Instant>>,
}

/// The `tracing` target of the progress events sent where there is no bar to draw (stderr not a
/// terminal); the command line prints them as plain lines.
pub const PROGRESS_TARGET: &str = "ollie_progress";

/// How often the progress is sent as an event where there is no bar to draw.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

impl Progress {
    pub fn new(budget: f64, done: f64, tally: Tally, (best, naive, floor): (f64, f64, f64), llm: Option<LlmTotals>) -> Progress {
        let bar = indicatif::ProgressBar::new((budget * 10.0).round() as u64).with_elapsed(Duration::from_secs_f64(done));
        bar.set_style(indicatif::ProgressStyle::with_template("{elapsed:>4} of {prefix} [{bar:24}] {msg}").expect("valid template").progress_chars("=> "));
        bar.set_position((done * 10.0) as u64);
        bar.set_prefix(format!("{budget:.0}s"));
        bar.enable_steady_tick(Duration::from_millis(500));
        let progress = Progress { bar, tally, best, naive, floor, llm, shown: Instant::now().into(), printed: None.into() };
        progress.show(done);
        progress
    }

    /// A message for the user, above the bar (on stderr, whether or not it is a terminal).
    pub fn say(&self, message: &str) {
        self.bar.suspend(|| eprintln!("{message}"));
    }

    /// Counts a stored candidate, and its time if it is the new best.
    pub fn add(&mut self, c: &Candidate, best: Option<f64>) {
        self.tally.add(c);
        if let Some(b) = best {
            self.best = b;
        }
    }

    /// The LLM's latest totals.
    pub fn set_llm(&mut self, totals: &LlmTotals) {
        self.llm = Some(totals.clone());
    }

    /// [`Progress::show`] if it has not been for a second: while no evaluation comes (a slow
    /// model), the LLM's counts still move.
    pub fn tick(&self, elapsed: f64) {
        if self.shown.get().elapsed() > Duration::from_secs(1) {
            self.show(elapsed);
        }
    }

    /// The search time so far, the tallies and the best time: on the bar in a terminal, else
    /// (a pipe, a log, a notebook reading ollie's stderr) as a [`PROGRESS_TARGET`] event every
    /// few seconds.
    pub fn show(&self, elapsed: f64) {
        let quiet = self.bar.is_hidden() && self.printed.get().is_some_and(|t| t.elapsed() < PLAIN_EVERY);
        if quiet {
            return;
        }
        self.shown.set(Instant::now());
        let (tally, best, naive, floor) = (&self.tally, self.best, self.naive, self.floor);
        self.bar.set_position((elapsed * 10.0) as u64);
        let llm = self.llm.as_ref().map_or_else(String::new, |l| {
            let cost = if l.cost > 0.0 { format!(", ${:.2}", l.cost) } else { String::new() };
            format!(" | llm {} calls, {} tokens{cost}", l.made, l.tokens)
        });
        let message = format!(
            "{} evals, {} accepted, rejected: {} | best {} = {:.2}x naive, {:.1}% of roofline{llm}",
            tally.evaluations,
            tally.accepted,
            tally.rejected_text(),
            report::seconds(best),
            naive / best,
            100.0 * floor / best
        );
        if self.bar.is_hidden() {
            // No bar to draw: the same figures as an event the command line renders as a line.
            self.printed.set(Some(Instant::now()));
            tracing::info!(target: PROGRESS_TARGET, "{:>4.0}s of {}: {message}", elapsed, self.bar.prefix());
        }
        self.bar.set_message(message);
    }

    pub fn finish(&self) {
        self.bar.finish();
    }
}
