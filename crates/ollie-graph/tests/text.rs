//! The graph text form: reading, the invariant checker's verdicts, and round trips.

use ollie_graph::{check, parse, GraphError, NodeId};

fn check_err(text: &str, expected: &str) {
    match parse(text) {
        Ok(g) => panic!("expected an error, parsed:\n{g}"),
        Err(e) => assert_eq!(e.to_string(), expected),
    }
}

const SOFTMAX: &str = "\
kernel softmax(x: f32[2,3]) {
  %0: f32[2,3] = input[x]
  %1: f32[2] = reduce_max[1] %0
  %2: f32[2,1] = reshape %1
  %3: f32[2,3] = broadcast %2
  %4: f32[2,3] = sub %0, %3
  %5: f32[2,3] = exp %4
  %6: f32[2] = reduce_sum[1] %5
  %7: f32[2,1] = reshape %6
  %8: f32[2,3] = broadcast %7
  %9: f32[2,3] = div %5, %8
  return %9
}
";

#[test]
fn text_round_trips() {
    let g = parse(SOFTMAX).unwrap();
    assert_eq!(g.to_string(), SOFTMAX);
    check(&g).unwrap();
}

#[test]
fn every_op_reads_back() {
    let text = "\
kernel all(a: f32[2,3], b: f64[3]) {
  %0: f32[2,3] = input[a]
  %1: f64[3] = input[b]
  %2: f64[2,3] = broadcast %1
  %3: f64[2,3] = pow %0, %2
  %4: bool[2,3] = le %0, %2
  %5: f64[2,3] = select %4, %0, %2
  %6: f32[] = const[-inf]
  %7: i64[2,3] = iota[1]
  %8: f32[3,2] = transpose[1,0] %0
  %9: f32[2,2] = slice[0:+1,2:-2] %0
  %10: f32[2,6] = concat[1] %0, %0
  %11: f32[2,2] = einsum[ij,kj->ik] %0, %0
  %12: f32[] = reduce_min[0,1] %0
  %13: f32[2,3] = cast %5
  %14: f32[2,3] = tanh %13
  return %14, %9, %3
}
";
    let g = parse(text).unwrap();
    assert_eq!(g.to_string(), text);
    assert_eq!(g.outputs, vec![NodeId(14), NodeId(9), NodeId(3)]);
}

#[test]
fn reader_rejects_bad_text() {
    check_err("", "line 1: empty graph text");
    check_err("kernel k(x: f32[2]) {\n  %0: f32[2] = input[y]\n  return %0\n}\n", "line 2: no parameter `y`");
    check_err("kernel k(x: f32[2]) {\n  %1: f32[2] = input[x]\n  return %1\n}\n", "line 2: expected node %0, found %1");
    check_err("kernel k(x: f32[2]) {\n  %0: f32[2] = frobnicate %0\n  return %0\n}\n", "line 2: unknown op `frobnicate`");
    check_err("kernel k(x: f32[2]) {\n  %0: f32[2] = input[x]\n  return %0\n", "line 3: expected `}` closing the kernel");
}

#[test]
fn checker_rejects_broken_invariants() {
    check_err(
        "kernel k(x: f32[2]) {\n  %0: f32[2] = input[x]\n  %1: f32[3] = exp %0\n  return %1\n}\n",
        "%1: recorded type f32[3] but the op gives f32[2]",
    );
    check_err(
        "kernel k(x: f32[2]) {\n  %0: f32[2] = input[x]\n  %1: f32[2] = add %0, %2\n  %2: f32[2] = exp %0\n  return %1\n}\n",
        "%1: operand %2 is not defined before it",
    );
    check_err(
        "kernel k(x: f32[2]) {\n  %0: f32[2] = input[x]\n  %1: f32[2] = slice[1:+1] %0\n  return %1\n}\n",
        "slice: axis 0 reads outside 0..2",
    );
    check_err(
        "kernel k(x: f32[2], y: f32[3]) {\n  %0: f32[2] = input[x]\n  %1: f32[3] = input[y]\n  %2: f32[2] = add %0, %1\n  return %2\n}\n",
        "add: operands must have equal shapes, got f32[2] and f32[3]",
    );
    check_err("kernel k(x: f32[2]) {\n  %0: f32[2] = input[x]\n  return %3\n}\n", "output %3 is not a node");
    assert!(matches!(parse("kernel k(x: f32[2]) {\n  %0: f32[2] = input[x]\n}\n"), Err(GraphError::NoOutputs)));
}
