//! The rule library: named rewrite rules as data, each with the identity it applies, grouped by
//! topic, and the glue that runs them in egg (a rule is a searcher that picks the classes holding
//! a node it may start from, and an applier that adds what that node equals and unions it).

mod chunks;
mod contraction;
mod layout;
mod reduction;
mod scalars;
mod structure;

use egg::{Id, Rewrite, SearchMatches, Subst, Var};
use ollie_graph::{Op, TensorType};

use crate::lang::{EGraph, ENode, Facts};

/// What a rule is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    /// The order and grouping of contractions.
    Contraction,
    /// Scalars and broadcasts moved out of sums and contractions.
    Scalars,
    /// Products with structured constants (triangles, identities, diagonals).
    Structure,
    /// Transposes, reshapes and broadcasts moved through other ops or cancelled.
    Layout,
    /// Reductions fused so that their input is read once.
    Reduction,
    /// A long reduction split into chunks whose partial results merge exactly, each chunk's
    /// work done while the chunk is in cache.
    Chunks,
}

/// A rewrite rule.
#[derive(Clone, Copy)]
pub struct Rule {
    pub name: &'static str,
    pub topic: Topic,
    /// The identity the rule applies, on one line.
    pub identity: &'static str,
    /// Whether a node with this op may start a match: a cheap filter before `apply`.
    pub trigger: fn(&Op) -> bool,
    /// Adds to the e-graph what `node` equals; returns the classes to union with its class.
    pub apply: fn(&mut EGraph, &ENode) -> Vec<Id>,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({:?}): {}", self.name, self.topic, self.identity)
    }
}

/// Every rule, by topic.
pub fn all() -> Vec<Rule> {
    [contraction::RULES, scalars::RULES, structure::RULES, reduction::RULES, chunks::RULES, layout::RULES].concat()
}

/// The rules as egg rewrites.
pub(crate) fn rewrites(rules: &[Rule]) -> Vec<Rewrite<ENode, Facts>> {
    rules.iter().map(|&rule| Rewrite::new(rule.name, Search(rule), Apply(rule)).expect("a rule binds no variables")).collect()
}

struct Search(Rule);
struct Apply(Rule);

impl egg::Searcher<ENode, Facts> for Search {
    fn search_eclass_with_limit(&self, egraph: &EGraph, eclass: Id, limit: usize) -> Option<SearchMatches<'_, ENode>> {
        (limit > 0 && egraph[eclass].nodes.iter().any(|n| (self.0.trigger)(&n.op))).then(|| SearchMatches { eclass, substs: vec![Subst::default()], ast: None })
    }

    fn vars(&self) -> Vec<Var> {
        Vec::new()
    }
}

impl egg::Applier<ENode, Facts> for Apply {
    fn apply_one(&self, egraph: &mut EGraph, eclass: Id, _subst: &Subst, _ast: Option<&egg::PatternAst<ENode>>, _rule: egg::Symbol) -> Vec<Id> {
        let nodes: Vec<ENode> = egraph[eclass].nodes.iter().filter(|n| (self.0.trigger)(&n.op)).cloned().collect();
        let mut changed = Vec::new();
        for node in nodes {
            for new in (self.0.apply)(egraph, &node) {
                let (a, b) = (&egraph[eclass].data.ty, &egraph[new].data.ty);
                if a != b {
                    debug_assert!(false, "rule {} made {b} from {a}", self.0.name);
                    tracing::warn!(rule = self.0.name, "a rule made a node of another type; skipped");
                    continue;
                }
                if egraph.union(eclass, new) {
                    changed.push(eclass);
                }
            }
        }
        changed
    }
}

// Helpers the rules share.

/// The nodes of a class (a copy: rules add nodes while they look).
fn nodes(egraph: &EGraph, id: Id) -> Vec<ENode> {
    egraph[id].nodes.clone()
}

fn ty(egraph: &EGraph, id: Id) -> TensorType {
    egraph[id].data.ty.clone()
}

/// The rank-0 class a class broadcasts, when it is a scalar broadcast (or a scalar itself).
fn scalar(egraph: &EGraph, id: Id) -> Option<Id> {
    if egraph[id].data.ty.rank() == 0 {
        return Some(id);
    }
    egraph[id].nodes.iter().find_map(|n| match n.op {
        Op::Broadcast { .. } if egraph[n.args[0]].data.ty.rank() == 0 => Some(n.args[0]),
        _ => None,
    })
}

/// A scalar constant a rule may move about freely: finite and nonzero, so that moving it
/// cannot turn an infinity times zero into a number or the reverse.
fn movable_constant(egraph: &EGraph, id: Id) -> Option<Id> {
    let c = scalar(egraph, id)?;
    egraph[c].data.splat.filter(|v| v.is_finite() && *v != 0.0).map(|_| c)
}

/// `c` broadcast to `shape`.
fn broadcast(egraph: &mut EGraph, c: Id, shape: &[usize]) -> Option<Id> {
    if egraph[c].data.ty.shape == shape {
        return Some(c);
    }
    crate::lang::add(egraph, Op::Broadcast { shape: shape.to_vec() }, vec![c])
}
