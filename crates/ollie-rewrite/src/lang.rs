//! The e-graph language over ollie's tensor ops (`ENode`), its analysis (every class's type and,
//! for a class that is one scalar everywhere, its value), and the translation from a `Graph` into
//! an e-graph and back from a choice of one node per class.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::fmt;

use egg::{DidMerge, Id, Language};
use ollie_graph::{Graph, GraphError, NodeId, Op, TensorType};

/// One e-node: a graph op (attributes included) over e-classes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ENode {
    pub op: Op,
    pub args: Vec<Id>,
}

impl Language for ENode {
    type Discriminant = Op;

    fn discriminant(&self) -> Op {
        self.op.clone()
    }

    fn matches(&self, other: &ENode) -> bool {
        self.op == other.op && self.args.len() == other.args.len()
    }

    fn children(&self) -> &[Id] {
        &self.args
    }

    fn children_mut(&mut self) -> &mut [Id] {
        &mut self.args
    }
}

impl fmt::Display for ENode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.op.name())
    }
}

pub type EGraph = egg::EGraph<ENode, Facts>;

/// What every class knows about its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    pub ty: TensorType,
    /// The value of every element, when the class is a constant seen through broadcasts,
    /// reshapes and transposes.
    pub splat: Option<f64>,
}

/// The analysis: types come from the op's type rule (a parameter's from the graph).
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub params: Vec<TensorType>,
}

impl egg::Analysis<ENode> for Facts {
    type Data = Fact;

    fn make(egraph: &mut EGraph, enode: &ENode, _id: Id) -> Fact {
        let ty = infer(egraph, &enode.op, &enode.args).expect("rules only add well-typed nodes");
        let splat = match &enode.op {
            Op::Constant { value, .. } => Some(*value),
            Op::Broadcast { .. } | Op::Reshape { .. } | Op::Transpose { .. } => egraph[enode.args[0]].data.splat,
            _ => None,
        };
        Fact { ty, splat }
    }

    fn merge(&mut self, a: &mut Fact, b: Fact) -> DidMerge {
        debug_assert_eq!(a.ty, b.ty, "rules only union classes of one type");
        match (a.splat, b.splat) {
            (None, Some(v)) => {
                a.splat = Some(v);
                DidMerge(true, false)
            }
            (Some(_), None) => DidMerge(false, true),
            _ => DidMerge(false, false),
        }
    }
}

/// The type `op` gives over the classes `args`.
pub fn infer(egraph: &EGraph, op: &Op, args: &[Id]) -> Result<TensorType, GraphError> {
    if let Op::Input { index } = op {
        return egraph.analysis.params.get(*index).cloned().ok_or(GraphError::Op { op: "input", message: format!("no parameter {index}") });
    }
    let tys: Vec<&TensorType> = args.iter().map(|&a| &egraph[a].data.ty).collect();
    op.infer(&tys)
}

/// Adds `op` over `args` if it is well typed; `None` otherwise (a rule's guess that does not
/// fit the shapes). An einsum's labels are renamed canonically, so that a contraction rules
/// reach twice with other letters is one node.
pub fn add(egraph: &mut EGraph, op: Op, args: Vec<Id>) -> Option<Id> {
    let op = match op {
        Op::Einsum(spec) => Op::Einsum(spec.canonical()),
        op => op,
    };
    infer(egraph, &op, &args).ok()?;
    Some(egraph.add(ENode { op, args }))
}

/// The graph as an e-graph, with the class of each output.
pub fn from_graph(graph: &Graph) -> (EGraph, Vec<Id>) {
    let mut egraph = EGraph::new(Facts { params: graph.params.iter().map(|p| p.ty.clone()).collect() });
    let roots = add_graph(&mut egraph, graph);
    (egraph, roots)
}

/// Adds `graph`'s nodes to `egraph` (its parameters the same as the e-graph's) and returns the
/// classes of its outputs.
pub fn add_graph(egraph: &mut EGraph, graph: &Graph) -> Vec<Id> {
    let mut ids: Vec<Id> = Vec::with_capacity(graph.nodes.len());
    for node in &graph.nodes {
        let args = node.args.iter().map(|a| ids[a.index()]).collect();
        ids.push(egraph.add(ENode { op: node.op.clone(), args }));
    }
    egraph.rebuild();
    graph.outputs.iter().map(|o| egraph.find(ids[o.index()])).collect()
}

/// The graph that picks `choice(class)` in every class reachable from `roots`; `None` when the
/// choice is cyclic or missing. Nodes come in the order their classes were made, as far as
/// their operands allow: the spec's order first, then each rule's (a rule writes a chunk's
/// work before the merge after it, and the lowering keeps that order for fusion).
pub fn to_graph(egraph: &EGraph, roots: &[Id], like: &Graph, choice: &dyn Fn(Id) -> Option<ENode>) -> Option<Graph> {
    let mut graph = Graph::new(like.name.clone(), like.params.clone());
    // Every parameter keeps its input node, used or not, as the spec's graph has them.
    let mut built: HashMap<Id, NodeId> = HashMap::new();
    for (index, _) in like.params.iter().enumerate() {
        let op = Op::Input { index };
        let node = graph.push(op.clone(), Vec::new()).ok()?;
        if let Some(class) = egraph.lookup(ENode { op, args: Vec::new() }) {
            built.insert(egraph.find(class), node);
        }
    }
    let mut chosen: BTreeMap<Id, ENode> = BTreeMap::new();
    for &root in roots {
        choose(egraph, egraph.find(root), choice, &built, &mut chosen, &mut Vec::new())?;
    }
    // Kahn's order, the oldest ready class first.
    let mut waiting: HashMap<Id, usize> = HashMap::new();
    let mut users: HashMap<Id, Vec<Id>> = HashMap::new();
    let mut ready = BinaryHeap::new();
    for (&class, node) in &chosen {
        let pending: Vec<Id> = node.args.iter().map(|&a| egraph.find(a)).filter(|a| chosen.contains_key(a)).collect();
        for &a in &pending {
            users.entry(a).or_default().push(class);
        }
        if pending.is_empty() {
            ready.push(Reverse(class));
        }
        waiting.insert(class, pending.len());
    }
    while let Some(Reverse(class)) = ready.pop() {
        let node = &chosen[&class];
        let args = node.args.iter().map(|&a| built.get(&egraph.find(a)).copied()).collect::<Option<Vec<_>>>()?;
        built.insert(class, graph.push(node.op.clone(), args).ok()?);
        for &user in users.get(&class).map_or(&[][..], |u| u.as_slice()) {
            let w = waiting.get_mut(&user)?;
            *w -= 1;
            if *w == 0 {
                ready.push(Reverse(user));
            }
        }
    }
    graph.outputs = roots.iter().map(|&r| built.get(&egraph.find(r)).copied()).collect::<Option<Vec<_>>>()?;
    graph.prune();
    Some(graph)
}

/// Picks `choice(class)` for `class` and every class it reaches that is not built yet.
fn choose(egraph: &EGraph, class: Id, choice: &dyn Fn(Id) -> Option<ENode>, built: &HashMap<Id, NodeId>, chosen: &mut BTreeMap<Id, ENode>, path: &mut Vec<Id>) -> Option<()> {
    if built.contains_key(&class) || chosen.contains_key(&class) {
        return Some(());
    }
    if path.contains(&class) {
        return None;
    }
    path.push(class);
    let node = choice(class)?;
    for &a in &node.args {
        choose(egraph, egraph.find(a), choice, built, chosen, path)?;
    }
    path.pop();
    chosen.insert(class, node);
    Some(())
}
