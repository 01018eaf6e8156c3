//! The graph invariant checker: topological operands, types that match the op rules, outputs.

use crate::graph::{Graph, GraphError, NodeId};
use crate::op::Op;

/// Checks every invariant a well-formed [`Graph`] keeps. Passes build graphs through
/// [`Graph::push`], which keeps them; this catches graphs read from text or edited by hand.
pub fn check(graph: &Graph) -> Result<(), GraphError> {
    for (i, node) in graph.nodes.iter().enumerate() {
        let id = NodeId(i as u32);
        if let Some(&arg) = node.args.iter().find(|a| a.index() >= i) {
            return Err(GraphError::ForwardReference { node: id, arg });
        }
        let inferred = graph.infer(id, &node.op, &node.args)?;
        if inferred != node.ty {
            return Err(GraphError::TypeMismatch { node: id, recorded: node.ty.clone(), inferred });
        }
        if let Op::Gather { .. } = node.op {
            check_gather(graph, id)?;
        }
        if let Some(&arg) = node.args.iter().find(|&&a| graph.index_result(a)) {
            if !graph.index_result(id) {
                let message = format!("uses {arg}, an index result: one is returned (viewed or cast to an integer dtype) and used by nothing else");
                return Err(GraphError::Invalid { node: id, message });
            }
        }
    }
    if graph.outputs.is_empty() {
        return Err(GraphError::NoOutputs);
    }
    if let Some(&output) = graph.outputs.iter().find(|o| o.index() >= graph.nodes.len()) {
        return Err(GraphError::BadOutput { output });
    }
    Ok(())
}

/// A gather that indexes reads a parameter, and its indices are integers computed from
/// integers alone: a float rounded to an index could pick another element in a kernel than in
/// the reference.
fn check_gather(graph: &Graph, id: NodeId) -> Result<(), GraphError> {
    let node = graph.node(id);
    let invalid = |message: String| GraphError::Invalid { node: id, message };
    if node.args.len() > 1 && !matches!(graph.node(node.args[0]).op, Op::Input { .. }) {
        return Err(invalid(format!("gathers from {}, not from a parameter", node.args[0])));
    }
    for &index in &node.args[1..] {
        if let Some(n) = graph.float_in(index) {
            return Err(invalid(format!("its index depends on {n}, a {} value: indices are computed from integers alone", graph.ty(n).dtype)));
        }
    }
    Ok(())
}

impl Graph {
    /// Whether node `id` holds an index result: an `argmax`, `argmin` or `argsort`, or a view
    /// or integer cast of one.
    pub fn index_result(&self, id: NodeId) -> bool {
        self.index_source(id).is_some()
    }

    /// The `argmax`, `argmin` or `argsort` node `id` is, or is a view or integer cast of (see
    /// [`Op::keeps_index`]).
    pub fn index_source(&self, id: NodeId) -> Option<NodeId> {
        let mut n = id;
        loop {
            match &self.node(n).op {
                Op::ArgReduce { .. } | Op::ArgSort { .. } => return Some(n),
                op if op.keeps_index() => n = self.node(n).args[0],
                _ => return None,
            }
        }
    }

    /// A float value node `id` is computed from, if there is one (an index must have none).
    pub fn float_in(&self, id: NodeId) -> Option<NodeId> {
        let mut stack = vec![id];
        while let Some(n) = stack.pop() {
            let d = self.ty(n).dtype;
            if !(d.is_int() || d == crate::DType::Bool) {
                return Some(n);
            }
            stack.extend(&self.node(n).args);
        }
        None
    }
}
