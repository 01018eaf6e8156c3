//! The float64 reference: hand-checked values, and einsum against a naive evaluator on random
//! label patterns (the blocked contraction path must agree with the definition).

use ndarray::{ArrayD, IxDyn};
use ollie_graph::{evaluate, parse, EinsumSpec, Graph, Op, Param, TensorType};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[test]
fn softmax_rows_sum_to_one_and_slices_step() {
    let g = parse(
        "kernel k(x: f32[2,4]) {
  %0: f32[2,4] = input[x]
  %1: f32[2] = reduce_max[1] %0
  %2: f32[2,1] = reshape %1
  %3: f32[2,4] = broadcast %2
  %4: f32[2,4] = sub %0, %3
  %5: f32[2,4] = exp %4
  %6: f32[2] = reduce_sum[1] %5
  %7: f32[2,2] = slice[1:-1,3:-2] %0
  return %6, %7
}",
    )
    .unwrap();
    let x = ArrayD::from_shape_vec(IxDyn(&[2, 4]), vec![0., 1., 2., 3., 4., 5., 6., 7.]).unwrap();
    let out = evaluate(&g, &[x]).unwrap();
    let e = |d: f64| d.exp();
    let want = e(-3.) + e(-2.) + e(-1.) + 1.0;
    assert!((out[0][[0]] - want).abs() < 1e-15 && (out[0][[1]] - want).abs() < 1e-15);
    // rows 1, 0; columns 3, 1
    assert_eq!(out[1].iter().copied().collect::<Vec<_>>(), vec![7., 5., 3., 1.]);
}

#[test]
fn evaluate_rejects_wrong_input_shapes() {
    let g = parse("kernel k(x: f32[2]) {\n  %0: f32[2] = input[x]\n  return %0\n}\n").unwrap();
    let err = evaluate(&g, &[ArrayD::zeros(IxDyn(&[3]))]).unwrap_err();
    assert_eq!(err.to_string(), "input: `x` must have shape [2], got [3]");
}

/// einsum by its definition: loop over every assignment of every label.
fn naive_einsum(spec: &EinsumSpec, sizes: &[usize; 128], operands: &[ArrayD<f64>]) -> ArrayD<f64> {
    let mut labels: Vec<u8> = spec.inputs.iter().flatten().copied().collect();
    labels.sort_unstable();
    labels.dedup();
    let out_shape: Vec<usize> = spec.output.iter().map(|&l| sizes[l as usize]).collect();
    let mut out = ArrayD::zeros(IxDyn(&out_shape));
    let total: usize = labels.iter().map(|&l| sizes[l as usize]).product();
    let mut value = [0usize; 128];
    for mut flat in 0..total {
        for &l in labels.iter().rev() {
            value[l as usize] = flat % sizes[l as usize];
            flat /= sizes[l as usize];
        }
        let mut product = 1.0;
        for (input, op) in spec.inputs.iter().zip(operands) {
            let ix: Vec<usize> = input.iter().map(|&l| value[l as usize]).collect();
            product *= op[IxDyn(&ix)];
        }
        let ix: Vec<usize> = spec.output.iter().map(|&l| value[l as usize]).collect();
        out[IxDyn(&ix)] += product;
    }
    out
}

#[test]
fn einsum_agrees_with_its_definition() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let pool = b"abcdef";
    for case in 0..300 {
        let mut sizes = [0usize; 128];
        for &l in pool {
            sizes[l as usize] = rng.random_range(if case % 10 == 0 { 0 } else { 1 }..4);
        }
        let n_ops = rng.random_range(1..4);
        let mut inputs = Vec::new();
        for _ in 0..n_ops {
            let rank = rng.random_range(0..4);
            let mut labels: Vec<u8> = Vec::new();
            while labels.len() < rank {
                let l = pool[rng.random_range(0..pool.len())];
                if !labels.contains(&l) {
                    labels.push(l);
                }
            }
            inputs.push(labels);
        }
        let mut present: Vec<u8> = inputs.iter().flatten().copied().collect();
        present.sort_unstable();
        present.dedup();
        let mut output: Vec<u8> = present.iter().copied().filter(|_| rng.random_range(0..2) == 0).collect();
        // shuffle the output order
        for i in (1..output.len()).rev() {
            output.swap(i, rng.random_range(0..i + 1));
        }
        let spec = EinsumSpec { inputs: inputs.clone(), output };
        let params: Vec<Param> = inputs
            .iter()
            .enumerate()
            .map(|(i, l)| Param { name: format!("x{i}"), ty: TensorType::new(ollie_graph::DType::F64, l.iter().map(|&c| sizes[c as usize]).collect()) })
            .collect();
        let mut g = Graph::new("e", params.clone());
        let ids: Vec<_> = (0..n_ops).map(|i| g.push(Op::Input { index: i }, vec![]).unwrap()).collect();
        let out = g.push(Op::Einsum(spec.clone()), ids).unwrap();
        g.outputs = vec![out];
        let operands: Vec<ArrayD<f64>> = params
            .iter()
            .map(|p| ArrayD::from_shape_simple_fn(IxDyn(&p.ty.shape), || rng.random_range(-1.0..1.0)))
            .collect();
        let got = evaluate(&g, &operands).unwrap().remove(0);
        let want = naive_einsum(&spec, &sizes, &operands);
        assert_eq!(got.shape(), want.shape(), "case {case}: {spec}");
        for (a, b) in got.iter().zip(want.iter()) {
            assert!((a - b).abs() < 1e-12, "case {case}: {spec}: {a} vs {b}");
        }
    }
}
