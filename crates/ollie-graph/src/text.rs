//! The graph's text form: `Display` prints it, [`parse`] reads it back.
//!
//! ```text
//! kernel softmax(x: f32[4,128]) {
//!   %0: f32[4,128] = input[x]
//!   %1: f32[4] = reduce_max[1] %0
//!   %2: f32[4,1] = reshape %1
//!   return %2
//! }
//! ```
//! Attributes that the result type already states (a reshape's shape, a cast's dtype) are not
//! repeated. A slice axis prints as `start:step` (its length is in the result type); a
//! gather's source axis as `axis:start:step` (read along the result's `axis`) or `*` (read at
//! the next index operand).

use std::fmt;

use crate::einsum::EinsumSpec;
use crate::graph::{Graph, GraphError, Node, NodeId, Param};
use crate::op::{BinaryOp, CmpOp, GatherAxis, Op, ReduceOp, SliceAxis, UnaryOp};
use crate::ty::{join, DType, TensorType};

impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let params: Vec<String> = self.params.iter().map(|p| format!("{}: {}", p.name, p.ty)).collect();
        writeln!(f, "kernel {}({}) {{", self.name, params.join(", "))?;
        for (i, node) in self.nodes.iter().enumerate() {
            write!(f, "  %{i}: {} = {}", node.ty, node.op.name())?;
            match &node.op {
                Op::Input { index } => match self.params.get(*index) {
                    Some(p) => write!(f, "[{}]", p.name)?,
                    None => write!(f, "[#{index}]")?,
                },
                Op::Constant { value, .. } => write!(f, "[{value:?}]")?,
                Op::Iota { axis, .. } => write!(f, "[{axis}]")?,
                Op::Transpose { perm } => write!(f, "[{}]", join(perm))?,
                Op::Slice { axes } => {
                    let axes: Vec<String> = axes.iter().map(|s| format!("{}:{:+}", s.start, s.step)).collect();
                    write!(f, "[{}]", axes.join(","))?
                }
                Op::Concat { axis } | Op::ArgReduce { axis, .. } | Op::Sort { axis } | Op::ArgSort { axis, .. } => write!(f, "[{axis}]")?,
                Op::Reduce { axes, .. } | Op::SumExp { axes } | Op::SumSqDev { axes } => write!(f, "[{}]", join(axes))?,
                Op::Scan { axis, reverse, exclusive, .. } => {
                    write!(f, "[{axis}{}{}]", if *reverse { ",reverse" } else { "" }, if *exclusive { ",exclusive" } else { "" })?
                }
                Op::Einsum(spec) => write!(f, "[{spec}]")?,
                Op::Gather { from, .. } => {
                    let axes: Vec<String> = from
                        .iter()
                        .map(|a| match a {
                            GatherAxis::Along { axis, start, step } => format!("{axis}:{start}:{step:+}"),
                            GatherAxis::Window { axis, start, step, window, dilation } => format!("{axis}:{start}:{step:+}:{window}:{dilation:+}"),
                            GatherAxis::Index => "*".to_string(),
                        })
                        .collect();
                    write!(f, "[{}]", axes.join(","))?
                }
                Op::Unary(_)
                | Op::Binary(_)
                | Op::Compare(_)
                | Op::Select
                | Op::Cast { .. }
                | Op::Broadcast { .. }
                | Op::Reshape { .. } => {}
            }
            let args: Vec<String> = node.args.iter().map(|a| a.to_string()).collect();
            if !args.is_empty() {
                write!(f, " {}", args.join(", "))?;
            }
            writeln!(f)?;
        }
        let outputs: Vec<String> = self.outputs.iter().map(|a| a.to_string()).collect();
        writeln!(f, "  return {}", outputs.join(", "))?;
        writeln!(f, "}}")
    }
}

/// Reads a graph in the text form that `Display` prints, and checks its invariants.
pub fn parse(text: &str) -> Result<Graph, GraphError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty());
    let (line, header) = lines.next().ok_or(GraphError::Syntax { line: 1, message: "empty graph text".into() })?;
    let err = |line: usize, message: String| GraphError::Syntax { line, message };
    let header = header
        .strip_prefix("kernel ")
        .and_then(|h| h.strip_suffix('{'))
        .ok_or_else(|| err(line, "expected `kernel NAME(PARAMS) {`".into()))?
        .trim();
    let (name, params) = header.split_once('(').ok_or_else(|| err(line, "expected `(` after the kernel name".into()))?;
    let params = params.trim().strip_suffix(')').ok_or_else(|| err(line, "expected `)` after the parameters".into()))?;
    let mut graph = Graph::new(name.trim(), Vec::new());
    for param in split_top(params) {
        let (pname, ty) = param.split_once(':').ok_or_else(|| err(line, format!("parameter `{param}` has no type")))?;
        let ty = parse_type(ty.trim()).map_err(|m| err(line, m))?;
        graph.params.push(Param { name: pname.trim().to_string(), ty });
    }
    let mut closed = false;
    for (line, text) in lines.by_ref() {
        if text == "}" {
            closed = true;
            break;
        }
        if let Some(rest) = text.strip_prefix("return") {
            graph.outputs = split_top(rest).iter().map(|a| parse_id(a)).collect::<Result<_, _>>().map_err(|m| err(line, m))?;
            continue;
        }
        let node = parse_node(&graph, text).map_err(|m| err(line, m))?;
        graph.nodes.push(node);
    }
    if !closed {
        return Err(err(text.lines().count(), "expected `}` closing the kernel".into()));
    }
    if let Some((line, _)) = lines.next() {
        return Err(err(line, "text after the closing `}`".into()));
    }
    crate::check(&graph)?;
    Ok(graph)
}

fn parse_node(graph: &Graph, text: &str) -> Result<Node, String> {
    let (lhs, rhs) = text.split_once('=').ok_or("expected `%N: TYPE = OP ...`")?;
    let (id, ty) = lhs.split_once(':').ok_or("expected `%N: TYPE` before `=`")?;
    let id = parse_id(id)?;
    if id.index() != graph.nodes.len() {
        return Err(format!("expected node %{}, found {id}", graph.nodes.len()));
    }
    let ty = parse_type(ty.trim())?;
    let rhs = rhs.trim();
    let name_end = rhs.find(['[', ' ']).unwrap_or(rhs.len());
    let name = &rhs[..name_end];
    let mut rest = &rhs[name_end..];
    let mut attr = None;
    if let Some(r) = rest.strip_prefix('[') {
        let close = r.find(']').ok_or("unclosed `[`")?;
        attr = Some(&r[..close]);
        rest = &r[close + 1..];
    }
    let args = split_top(rest).iter().map(|a| parse_id(a)).collect::<Result<Vec<_>, _>>()?;
    let need_attr = || attr.ok_or_else(|| format!("`{name}` needs an attribute in `[...]`"));
    let op = if let Some(u) = UnaryOp::ALL.iter().find(|u| u.name() == name) {
        Op::Unary(*u)
    } else if let Some(b) = BinaryOp::ALL.iter().find(|b| b.name() == name) {
        Op::Binary(*b)
    } else if let Some(c) = CmpOp::ALL.iter().find(|c| c.name() == name) {
        Op::Compare(*c)
    } else if let Some(r) = ReduceOp::ALL.iter().find(|r| r.name() == name) {
        Op::Reduce { op: *r, axes: parse_list(need_attr()?)? }
    } else {
        match name {
            "input" => {
                let pname = need_attr()?;
                let index = graph.params.iter().position(|p| p.name == pname).ok_or(format!("no parameter `{pname}`"))?;
                Op::Input { index }
            }
            "const" => {
                let value = need_attr()?.parse::<f64>().map_err(|e| format!("bad constant: {e}"))?;
                Op::Constant { value, dtype: ty.dtype }
            }
            "iota" => Op::Iota { shape: ty.shape.clone(), axis: parse_num(need_attr()?)?, dtype: ty.dtype },
            "select" => Op::Select,
            "cast" => Op::Cast { dtype: ty.dtype },
            "broadcast" => Op::Broadcast { shape: ty.shape.clone() },
            "reshape" => Op::Reshape { shape: ty.shape.clone() },
            "transpose" => Op::Transpose { perm: parse_list(need_attr()?)? },
            "concat" => Op::Concat { axis: parse_num(need_attr()?)? },
            "argmax" => Op::ArgReduce { op: ReduceOp::Max, axis: parse_num(need_attr()?)? },
            "argmin" => Op::ArgReduce { op: ReduceOp::Min, axis: parse_num(need_attr()?)? },
            "sort" => Op::Sort { axis: parse_num(need_attr()?)? },
            "argsort" => Op::ArgSort { axis: parse_num(need_attr()?)?, stable: false },
            "argsort_stable" => Op::ArgSort { axis: parse_num(need_attr()?)?, stable: true },
            "sum_exp" => Op::SumExp { axes: parse_list(need_attr()?)? },
            "sum_sq_dev" => Op::SumSqDev { axes: parse_list(need_attr()?)? },
            "cumsum" | "cumprod" | "cummax" | "cummin" => {
                let op = ReduceOp::ALL.into_iter().find(|r| r.scan_name() == name).expect("a scan's name");
                let mut parts = need_attr()?.split(',').map(str::trim);
                let axis = parse_num(parts.next().unwrap_or(""))?;
                let (mut reverse, mut exclusive) = (false, false);
                for flag in parts {
                    match flag {
                        "reverse" => reverse = true,
                        "exclusive" => exclusive = true,
                        _ => return Err(format!("unknown {name} flag `{flag}`")),
                    }
                }
                Op::Scan { op, axis, reverse, exclusive }
            }
            "einsum" => Op::Einsum(EinsumSpec::parse(need_attr()?)?),
            "gather" => {
                let from = split_top(need_attr()?)
                    .iter()
                    .map(|p| match p.split(':').collect::<Vec<_>>()[..] {
                        ["*"] => Ok(GatherAxis::Index),
                        [axis, start, step] => Ok(GatherAxis::Along { axis: parse_num(axis)?, start: parse_num(start)?, step: parse_num(step.trim_start_matches('+'))? }),
                        [axis, start, step, window, dilation] => Ok(GatherAxis::Window {
                            axis: parse_num(axis)?,
                            start: parse_num(start)?,
                            step: parse_num(step.trim_start_matches('+'))?,
                            window: parse_num(window)?,
                            dilation: parse_num(dilation.trim_start_matches('+'))?,
                        }),
                        _ => Err(format!("gather axis `{p}` is not `axis:start:step`, `axis:start:step:window:dilation` or `*`")),
                    })
                    .collect::<Result<_, String>>()?;
                Op::Gather { shape: ty.shape.clone(), from }
            }
            "slice" => {
                let attr = need_attr()?;
                let parts = split_top(attr);
                if parts.len() != ty.rank() {
                    return Err(format!("slice has {} axes but its type has rank {}", parts.len(), ty.rank()));
                }
                let axes = parts
                    .iter()
                    .zip(&ty.shape)
                    .map(|(p, &len)| {
                        let (start, step) = p.split_once(':').ok_or(format!("slice axis `{p}` is not `start:step`"))?;
                        Ok(SliceAxis { start: parse_num(start)?, step: parse_num(step.trim_start_matches('+'))?, len })
                    })
                    .collect::<Result<_, String>>()?;
                Op::Slice { axes }
            }
            _ => return Err(format!("unknown op `{name}`")),
        }
    };
    Ok(Node { op, args, ty })
}

/// Splits on the commas that are not inside `[...]`.
fn split_top(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().map(str::trim).filter(|s| !s.is_empty()).collect()
}

fn parse_id(text: &str) -> Result<NodeId, String> {
    let digits = text.trim().strip_prefix('%').ok_or(format!("expected a node `%N`, found `{text}`"))?;
    Ok(NodeId(parse_num(digits)?))
}

fn parse_num<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.trim().parse().map_err(|_| format!("expected a number, found `{text}`"))
}

fn parse_list(text: &str) -> Result<Vec<usize>, String> {
    split_top(text).iter().map(|t| parse_num(t)).collect()
}

/// Reads `f32[4,128]` (or `f32[]` for a scalar).
pub(crate) fn parse_type(text: &str) -> Result<TensorType, String> {
    let (dtype, dims) = text.split_once('[').ok_or(format!("expected a type like `f32[4,128]`, found `{text}`"))?;
    let dtype = DType::from_name(dtype.trim()).ok_or(format!("unknown dtype `{dtype}`"))?;
    let dims = dims.strip_suffix(']').ok_or(format!("expected `]` closing `{text}`"))?;
    Ok(TensorType::new(dtype, parse_list(dims)?))
}
