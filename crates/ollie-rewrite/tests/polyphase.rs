//! Polyphase splitting on the corpus: the transposed convolutions written with zeros between
//! the inputs are split into their phases, equal to the original on random inputs and doing a
//! stride's share of its products; every other corpus graph is left alone.

use std::path::PathBuf;

use ollie_graph::{evaluate, parse, Graph, Op, Tensor};
use ollie_rewrite::polyphase;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn corpus() -> Vec<(String, Graph)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../test_data/corpus");
    let mut graphs: Vec<(String, Graph)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "graph"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p.file_stem().unwrap().to_string_lossy().into_owned(), parse(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        })
        .collect();
    graphs.sort_by(|a, b| a.0.cmp(&b.0));
    graphs
}

fn contraction_flops(g: &Graph) -> f64 {
    let einsums = Graph { outputs: g.ids().filter(|&id| matches!(g.node(id).op, Op::Einsum(_))).collect(), ..g.clone() };
    einsums.work().flops
}

fn random_inputs(graph: &Graph, rng: &mut ChaCha8Rng) -> Vec<Tensor> {
    let mut values = |n| (0..n).map(|_| rng.random_range(-2.0..2.0)).collect::<Vec<f64>>();
    graph.params.iter().map(|p| Tensor::from_shape_vec(p.ty.shape.clone(), values(p.ty.num_elements())).unwrap()).collect()
}

#[test]
fn transposed_convolutions_split_into_phases_equal_to_the_original() {
    // (corpus graph, the product of its strides: the share of products left)
    let split = [("conv_transpose1d_zeros", 3.0), ("conv_transpose2d_zeros", 4.0)];
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for (name, graph) in corpus() {
        let result = polyphase(&graph);
        let Some(&(_, stride)) = split.iter().find(|(n, _)| *n == name) else {
            assert!(result.is_none(), "{name}: split, but nothing in it is zero between every few elements:\n{}", result.unwrap());
            continue;
        };
        let phases = result.unwrap_or_else(|| panic!("{name}: not split"));
        ollie_graph::check(&phases).unwrap_or_else(|e| panic!("{name}: {e}\n{phases}"));
        let (before, after) = (contraction_flops(&graph), contraction_flops(&phases));
        // Every phase runs as long as the longest (5 × 6 positions each for 9 × 11 / 4: 1.21×).
        assert!(after * stride <= before * 1.3, "{name}: {after} FLOPs in contractions after, {before} before\n{phases}");
        for _ in 0..3 {
            let inputs = random_inputs(&graph, &mut rng);
            let (expected, got) = (evaluate(&graph, &inputs).unwrap(), evaluate(&phases, &inputs).unwrap());
            for (e, g) in expected.iter().zip(&got) {
                assert_eq!(e.shape(), g.shape(), "{name}");
                let err = e.iter().zip(g).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                assert!(err <= 1e-12 * e.iter().fold(1.0, |m: f64, v| m.max(v.abs())), "{name}: off by {err}\n{phases}");
            }
        }
    }
}

/// Zeros that depend on the values (a ReLU's) are not structure.
#[test]
fn zeros_a_relu_makes_are_not_split() {
    let text = "kernel relu_windows(x: f32[3,16], w: f32[4,3,3]) {
  %0: f32[3,16] = input[x]
  %1: f32[4,3,3] = input[w]
  %2: f32[] = const[0.0]
  %3: f32[3,16] = broadcast %2
  %4: f32[3,16] = max %0, %3
  %5: f32[3,14,3] = gather[0:0:+1,1:0:+1:2:+1] %4
  %6: f32[4,14] = einsum[clk,ock->ol] %5, %1
  return %6
}
";
    let graph = parse(text).unwrap();
    assert!(polyphase(&graph).is_none());
}
