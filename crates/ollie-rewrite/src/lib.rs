//! Equality saturation over the tensor graph: the spec's graph goes into an e-graph (egg), the
//! rule library grows it with everything the graph equals, and extraction by a cost model of
//! FLOPs and bytes picks the cheapest few graphs — changes of algorithm (a matrix chain
//! reassociated, a product with a triangle of ones made a running sum) that no loop schedule
//! can make.
//!
//! A variant is only a proposal: the search judges the kernels made from it by the same
//! verifier, against the original spec.

mod extraction;
mod lang;
mod polyphase;
pub mod rules;

use std::time::Duration;

use egg::{Extractor, Id, Runner};
use ollie_graph::Graph;

pub use extraction::graph_cost;
pub use lang::{ENode, Fact};
pub use polyphase::polyphase;
pub use rules::{Rule, Topic};

/// Bounds on saturation.
#[derive(Debug, Clone)]
pub struct Limits {
    pub iterations: usize,
    pub nodes: usize,
    pub time: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { iterations: 12, nodes: 20_000, time: Duration::from_secs(3) }
    }
}

/// Why saturation stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// No rule added anything new: every graph the rules can reach is in the e-graph.
    Saturated,
    IterationLimit(usize),
    NodeLimit(usize),
    /// Seconds.
    TimeLimit(f64),
    Other(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Saturated => write!(f, "saturated"),
            Stop::IterationLimit(n) => write!(f, "iteration limit ({n})"),
            Stop::NodeLimit(n) => write!(f, "node limit ({n})"),
            Stop::TimeLimit(s) => write!(f, "time limit ({s} s)"),
            Stop::Other(why) => write!(f, "{why}"),
        }
    }
}

/// A graph equal to the spec's, with its modelled cost.
#[derive(Debug, Clone)]
pub struct Variant {
    pub graph: Graph,
    pub cost: f64,
}

/// What saturation found.
#[derive(Debug, Clone)]
pub struct Rewritten {
    /// Graphs equal to the original (and different from it), cheapest first.
    pub variants: Vec<Variant>,
    /// The original graph's modelled cost.
    pub original_cost: f64,
    pub stop: Stop,
    pub iterations: usize,
    /// E-nodes and e-classes when saturation stopped.
    pub nodes: usize,
    pub classes: usize,
    /// How often each rule added something, for the rules that did, in library order.
    pub fired: Vec<(&'static str, usize)>,
}

/// How many variants the search is offered.
pub const VARIANTS: usize = 4;

/// The variants of `graph` the search is offered: every rule, the default limits, those the
/// model finds cheaper than the original.
pub fn variants(graph: &Graph) -> Rewritten {
    let mut rewritten = rewrite(graph, &rules::all(), &Limits::default(), VARIANTS);
    rewritten.variants.retain(|v| v.cost < rewritten.original_cost);
    rewritten
}

impl std::fmt::Display for Rewritten {
    /// What `ollie rewrite` prints: how saturation went, the rules that fired, each variant.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "saturation: {} after {} iterations, {} e-nodes in {} classes", self.stop, self.iterations, self.nodes, self.classes)?;
        let fired: Vec<String> = self.fired.iter().map(|(name, n)| format!("{name} ×{n}")).collect();
        writeln!(f, "rules fired: {}", if fired.is_empty() { "none".to_string() } else { fired.join(", ") })?;
        writeln!(f, "original cost: {:.4e}", self.original_cost)?;
        if self.variants.is_empty() {
            writeln!(f, "no variant is cheaper than the original")?;
        }
        for (k, v) in self.variants.iter().enumerate() {
            writeln!(f, "\nvariant {} — cost {:.4e} ({:.3}× the original's)", k + 1, v.cost, v.cost / self.original_cost)?;
            write!(f, "{}", v.graph)?;
        }
        Ok(())
    }
}

/// Saturates `graph` with `rules` within `limits` and extracts up to `count` variants, cheapest
/// first: the cheapest graph, and the graphs that differ from it in the choice for one class.
pub fn rewrite(graph: &Graph, rules: &[Rule], limits: &Limits, count: usize) -> Rewritten {
    let (mut egraph, roots) = lang::from_graph(graph);
    // Structure found by evaluation rather than by a rule over e-nodes: seeded as equal.
    let seeded = polyphase::polyphase(graph);
    if let Some(seed) = &seeded {
        for (root, other) in roots.iter().zip(lang::add_graph(&mut egraph, seed)) {
            egraph.union(*root, other);
        }
        egraph.rebuild();
    }
    let runner = Runner::default()
        .with_egraph(egraph)
        .with_iter_limit(limits.iterations)
        .with_node_limit(limits.nodes)
        .with_time_limit(limits.time)
        .run(&rules::rewrites(rules));
    let stop = match runner.stop_reason.clone() {
        Some(egg::StopReason::Saturated) | None => Stop::Saturated,
        Some(egg::StopReason::IterationLimit(n)) => Stop::IterationLimit(n),
        Some(egg::StopReason::NodeLimit(n)) => Stop::NodeLimit(n),
        Some(egg::StopReason::TimeLimit(s)) => Stop::TimeLimit(s),
        Some(egg::StopReason::Other(why)) => Stop::Other(why),
    };
    let applied = rules.iter().filter_map(|r| {
        let n: usize = runner.iterations.iter().map(|i| i.applied.get(&egg::Symbol::from(r.name)).copied().unwrap_or(0)).sum();
        (n > 0).then_some((r.name, n))
    });
    let fired = seeded.iter().map(|_| ("polyphase", 1)).chain(applied).collect();
    let egraph = &runner.egraph;
    let roots: Vec<Id> = roots.iter().map(|&r| egraph.find(r)).collect();
    let original_cost = graph_cost(graph);
    let original = graph.to_string();
    let extractor = Extractor::new(egraph, extraction::Model { egraph });
    let best = |c: Id| Some(extractor.find_best_node(c).clone());
    let mut found: Vec<Variant> = Vec::new();
    let mut seen = std::collections::HashSet::from([original]);
    let mut consider = |g: Option<Graph>| {
        let Some(g) = g else { return };
        if !seen.insert(g.to_string()) {
            return;
        }
        let cost = graph_cost(&g);
        found.push(Variant { graph: g, cost });
    };
    consider(lang::to_graph(egraph, &roots, graph, &best));
    for class in reachable(egraph, &roots, &best) {
        for node in &egraph[class].nodes {
            if *node == *extractor.find_best_node(class) {
                continue;
            }
            let choice = |c: Id| if c == class { Some(node.clone()) } else { best(c) };
            consider(lang::to_graph(egraph, &roots, graph, &choice));
        }
    }
    found.sort_by(|a, b| a.cost.total_cmp(&b.cost));
    found.truncate(count);
    tracing::debug!(variants = found.len(), %stop, nodes = egraph.total_size(), "saturated");
    Rewritten {
        variants: found,
        original_cost,
        stop,
        iterations: runner.iterations.len(),
        nodes: egraph.total_size(),
        classes: egraph.number_of_classes(),
        fired,
    }
}

/// The classes a choice reaches from `roots`.
fn reachable(egraph: &lang::EGraph, roots: &[Id], choice: &dyn Fn(Id) -> Option<ENode>) -> Vec<Id> {
    let mut seen: Vec<Id> = Vec::new();
    let mut stack: Vec<Id> = roots.to_vec();
    while let Some(c) = stack.pop() {
        let c = egraph.find(c);
        if seen.contains(&c) {
            continue;
        }
        seen.push(c);
        if let Some(node) = choice(c) {
            stack.extend(&node.args);
        }
    }
    seen
}
