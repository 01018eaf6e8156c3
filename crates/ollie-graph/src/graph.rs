//! The tensor graph: parameters, nodes in topological order, outputs.

use std::fmt;

use crate::op::Op;
use crate::ty::TensorType;

/// Index of a node in its [`Graph`]. Operands always precede their users.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// A kernel parameter: its name in the spec (and in the C ABI) and its type.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub ty: TensorType,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub op: Op,
    pub args: Vec<NodeId>,
    pub ty: TensorType,
}

/// A kernel as a dataflow graph with static shapes.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    pub name: String,
    pub params: Vec<Param>,
    pub nodes: Vec<Node>,
    pub outputs: Vec<NodeId>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GraphError {
    #[error("{op}: {message}")]
    Op { op: &'static str, message: String },
    #[error("{node}: operand {arg} is not defined before it")]
    ForwardReference { node: NodeId, arg: NodeId },
    #[error("{node}: recorded type {recorded} but the op gives {inferred}")]
    TypeMismatch { node: NodeId, recorded: TensorType, inferred: TensorType },
    #[error("{node}: {message}")]
    Invalid { node: NodeId, message: String },
    #[error("output {output} is not a node")]
    BadOutput { output: NodeId },
    #[error("the graph has no outputs")]
    NoOutputs,
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
}

impl Graph {
    pub fn new(name: impl Into<String>, params: Vec<Param>) -> Graph {
        Graph { name: name.into(), params, nodes: Vec::new(), outputs: Vec::new() }
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    pub fn ty(&self, id: NodeId) -> &TensorType {
        &self.nodes[id.index()].ty
    }

    pub fn ids(&self) -> impl Iterator<Item = NodeId> {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// Appends a node, inferring its type. Operands must already exist.
    pub fn push(&mut self, op: Op, args: Vec<NodeId>) -> Result<NodeId, GraphError> {
        let id = NodeId(self.nodes.len() as u32);
        if let Some(&arg) = args.iter().find(|a| a.index() >= self.nodes.len()) {
            return Err(GraphError::ForwardReference { node: id, arg });
        }
        let ty = self.infer(id, &op, &args)?;
        self.nodes.push(Node { op, args, ty });
        Ok(id)
    }

    /// The type `op` gives when applied to `args` at position `id`.
    pub(crate) fn infer(&self, id: NodeId, op: &Op, args: &[NodeId]) -> Result<TensorType, GraphError> {
        if let Op::Input { index } = op {
            return match self.params.get(*index) {
                Some(p) if args.is_empty() => Ok(p.ty.clone()),
                Some(_) => Err(GraphError::Invalid { node: id, message: "input takes no operands".into() }),
                None => Err(GraphError::Invalid { node: id, message: format!("no parameter {index}") }),
            };
        }
        let tys: Vec<&TensorType> = args.iter().map(|&a| self.ty(a)).collect();
        op.infer(&tys)
    }

    /// Output `k`'s name in the kernel ABI (and in `ollie eval`'s files): `out` when there is
    /// one output, else `out0`, `out1`, ...
    pub fn output_name(&self, k: usize) -> String {
        if self.outputs.len() == 1 { "out".to_string() } else { format!("out{k}") }
    }

    /// How many nodes use each node as an operand (outputs count as uses).
    pub fn use_counts(&self) -> Vec<usize> {
        let mut uses = vec![0; self.nodes.len()];
        for node in &self.nodes {
            for a in &node.args {
                uses[a.index()] += 1;
            }
        }
        for o in &self.outputs {
            uses[o.index()] += 1;
        }
        uses
    }
}

impl Graph {
    /// Reads every identity reshape's operand in its place (its users and the outputs), so that
    /// [`Graph::prune`] drops it: a spec's copies are such reshapes while it is interpreted.
    pub fn skip_identity_reshapes(&mut self) {
        let operand = |nodes: &[Node], mut id: NodeId| {
            while let Op::Reshape { shape } = &nodes[id.index()].op {
                let from = nodes[id.index()].args[0];
                if nodes[from.index()].ty.shape != *shape {
                    break;
                }
                id = from;
            }
            id
        };
        for i in 0..self.nodes.len() {
            let args: Vec<NodeId> = self.nodes[i].args.iter().map(|&a| operand(&self.nodes, a)).collect();
            self.nodes[i].args = args;
        }
        self.outputs = self.outputs.iter().map(|&o| operand(&self.nodes, o)).collect();
    }

    /// Removes nodes that no output depends on, keeping every `Input` so that the parameters
    /// stay in the graph. Ids are renumbered in order.
    pub fn prune(&mut self) {
        let mut live = vec![false; self.nodes.len()];
        for o in &self.outputs {
            live[o.index()] = true;
        }
        for i in (0..self.nodes.len()).rev() {
            if matches!(self.nodes[i].op, Op::Input { .. }) {
                live[i] = true;
            }
            if live[i] {
                for a in &self.nodes[i].args {
                    live[a.index()] = true;
                }
            }
        }
        let mut remap = vec![None; self.nodes.len()];
        let mut nodes = Vec::new();
        for (i, mut node) in std::mem::take(&mut self.nodes).into_iter().enumerate() {
            if live[i] {
                node.args = node.args.iter().map(|a| remap[a.index()].expect("operand is live")).collect();
                remap[i] = Some(NodeId(nodes.len() as u32));
                nodes.push(node);
            }
        }
        self.nodes = nodes;
        self.outputs = self.outputs.iter().map(|o| remap[o.index()].expect("output is live")).collect();
    }
}
