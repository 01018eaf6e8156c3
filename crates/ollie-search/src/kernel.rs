//! The search's candidate, `Kernel`: a schedule of the naive loop nest of the spec's graph or of
//! a graph the `rewrite` proposer found equal to it (a `Variant`), or C source written whole (by
//! an LLM), each with its compile flags.

use std::sync::Arc;

use ollie_graph::Graph;
use ollie_loops::{LoopError, LoopNest, Schedule, ScheduleError};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Steps and flags replayed on the naive loop nest of the spec's graph (what `mutate`
    /// proposes).
    Scheduled(Schedule),
    /// Steps and flags replayed on the naive loop nest of a variant of the graph.
    Rewritten { variant: Variant, schedule: Schedule },
    /// A whole C source for the kernel ABI, with the flags it is compiled with.
    Written { source: String, flags: Vec<String> },
}

/// A graph equal to the spec's (found by algebraic rewriting) and its naive loop nest. Cheap
/// to clone; compared by the graph's text.
#[derive(Debug, Clone)]
pub struct Variant(Arc<VariantData>);

#[derive(Debug)]
struct VariantData {
    graph: Graph,
    text: String,
    naive: LoopNest,
}

impl Variant {
    /// The variant of `graph`, lowered (an error when the lowering refuses it).
    pub fn new(graph: Graph) -> Result<Variant, ollie_loops::LowerError> {
        let naive = ollie_loops::lower(&graph)?;
        let text = graph.to_string();
        Ok(Variant(Arc::new(VariantData { graph, text, naive })))
    }

    pub fn graph(&self) -> &Graph {
        &self.0.graph
    }

    /// The graph's text form (what a store keeps).
    pub fn text(&self) -> &str {
        &self.0.text
    }

    pub fn naive(&self) -> &LoopNest {
        &self.0.naive
    }
}

impl PartialEq for Variant {
    fn eq(&self, other: &Variant) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.text == other.0.text
    }
}

impl Eq for Variant {}

impl std::hash::Hash for Variant {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.text.hash(state)
    }
}

/// Why a scheduled kernel has no C source.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EmitError {
    #[error("{0}")]
    IllegalSchedule(#[from] ScheduleError),
    #[error("{0}")]
    InvalidNest(#[from] LoopError),
}

impl EmitError {
    /// The short kind a verdict records.
    pub fn kind(&self) -> &'static str {
        match self {
            EmitError::IllegalSchedule(_) => "illegal-schedule",
            EmitError::InvalidNest(_) => "invalid-nest",
        }
    }
}

/// Why a stored kernel cannot be read back.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoredError {
    #[error("its schedule does not parse: {0}")]
    Schedule(#[from] ScheduleError),
    #[error("its graph does not parse: {0}")]
    Graph(#[from] ollie_graph::GraphError),
    #[error("its graph does not lower: {0}")]
    Lower(#[from] ollie_loops::LowerError),
}

/// What a kernel is made of, whichever graph it computes: a schedule and the naive nest it
/// replays on, or a source written whole.
pub enum Form<'a> {
    Scheduled { schedule: &'a Schedule, naive: &'a LoopNest },
    Written { source: &'a str, flags: &'a [String] },
}

impl Kernel {
    /// The kernel's form; `naive` is the spec's naive nest (a variant brings its own).
    pub fn form<'a>(&'a self, naive: &'a LoopNest) -> Form<'a> {
        match self {
            Kernel::Scheduled(schedule) => Form::Scheduled { schedule, naive },
            Kernel::Rewritten { variant, schedule } => Form::Scheduled { schedule, naive: variant.naive() },
            Kernel::Written { source, flags } => Form::Written { source, flags },
        }
    }

    /// The schedule and the naive nest it replays on; `None` for a written kernel.
    pub fn scheduled<'a>(&'a self, naive: &'a LoopNest) -> Option<(&'a Schedule, &'a LoopNest)> {
        match self.form(naive) {
            Form::Scheduled { schedule, naive } => Some((schedule, naive)),
            Form::Written { .. } => None,
        }
    }

    /// The same kernel with another schedule (on the same graph).
    pub fn with_schedule(&self, schedule: Schedule) -> Kernel {
        match self {
            Kernel::Rewritten { variant, .. } => Kernel::Rewritten { variant: variant.clone(), schedule },
            _ => Kernel::Scheduled(schedule),
        }
    }

    /// The variant of the graph the kernel computes, if it is not the spec's own.
    pub fn variant(&self) -> Option<&Variant> {
        match self {
            Kernel::Rewritten { variant, .. } => Some(variant),
            _ => None,
        }
    }

    /// The C source and compile flags: a schedule applied to its naive nest (`naive` is the
    /// spec's), checked and emitted; a written kernel as it is.
    pub fn emit(&self, naive: &LoopNest) -> Result<(String, Vec<String>), EmitError> {
        match self.form(naive) {
            Form::Scheduled { schedule, naive } => {
                let nest = schedule.apply(naive)?;
                ollie_loops::check(&nest)?;
                Ok((ollie_loops::emit_c(&nest), schedule.compile_flags(&nest)))
            }
            Form::Written { source, flags } => Ok((source.to_string(), flags.to_vec())),
        }
    }

    /// The schedule's text as a store keeps it; empty for a written kernel, whose source and
    /// flags are the whole of it.
    pub fn schedule_text(&self) -> String {
        match self {
            Kernel::Scheduled(schedule) | Kernel::Rewritten { schedule, .. } => schedule.to_string(),
            Kernel::Written { .. } => String::new(),
        }
    }

    /// The variant's graph text as a store keeps it; empty for the spec's own graph.
    pub fn graph_text(&self) -> String {
        self.variant().map_or(String::new(), |v| v.text().to_string())
    }

    /// The kernel a store kept as (schedule text, source, flags, graph text) — the inverse of
    /// [`Kernel::schedule_text`] and [`Kernel::graph_text`].
    pub fn from_stored(schedule: &str, source: &str, flags: &str, graph: &str) -> Result<Kernel, StoredError> {
        if schedule.trim().is_empty() {
            return Ok(Kernel::Written { source: source.to_string(), flags: flags.split_whitespace().map(str::to_string).collect() });
        }
        let schedule = Schedule::parse(schedule)?;
        if graph.trim().is_empty() {
            return Ok(Kernel::Scheduled(schedule));
        }
        let variant = Variant::new(ollie_graph::parse(graph)?)?;
        Ok(Kernel::Rewritten { variant, schedule })
    }
}
