//! The graph invariant checker: topological operands, types that match the op rules, outputs.

use crate::graph::{Graph, GraphError, NodeId};

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
    }
    if graph.outputs.is_empty() {
        return Err(GraphError::NoOutputs);
    }
    if let Some(&output) = graph.outputs.iter().find(|o| o.index() >= graph.nodes.len()) {
        return Err(GraphError::BadOutput { output });
    }
    Ok(())
}
