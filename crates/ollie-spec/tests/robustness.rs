//! The front end never panics: every corpus spec, mutated many ways (numbers changed, names
//! swapped, text deleted or duplicated), compiles to a graph or to a diagnostic; and every graph
//! that compiles evaluates to outputs of the types it declares.

use std::path::Path;

use ollie_spec::{compile, Options};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const REPLACEMENTS: &[&str] = &[
    "0", "-1", "1", "3", "-7", "100000", "2.5", "-0.0", "None", "...", "x", "np", "axis", "keepdims",
    "True", "(", ")", "[", "]", ",", ":", "::", "::-1", "@", "**", "np.newaxis", "\"f32[]\"", "\"ij->\"",
    ".T", ".sum()", "[0]", "[None]", "(1, 2)", "()", "-np.inf", "np.float32(0)", "a", "b",
];

fn mutate(source: &str, rng: &mut ChaCha8Rng) -> String {
    let bytes: Vec<char> = source.chars().collect();
    let n = bytes.len();
    let at = rng.random_range(0..n);
    let len = rng.random_range(1..8).min(n - at);
    let mut out: String = bytes[..at].iter().collect();
    match rng.random_range(0..3) {
        0 => {}
        1 => out.push_str(REPLACEMENTS[rng.random_range(0..REPLACEMENTS.len())]),
        _ => out.extend(&bytes[at..at + len]),
    }
    out.extend(&bytes[at + len..]);
    out
}

#[test]
fn mutated_specs_never_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut specs = Vec::new();
    for dir in ["test_data/corpus", "examples"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "py") {
                specs.push(std::fs::read_to_string(path).unwrap());
            }
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let (mut ok, mut diagnosed) = (0, 0);
    for source in &specs {
        for _ in 0..150 {
            let mut text = source.clone();
            for _ in 0..rng.random_range(1..4) {
                text = mutate(&text, &mut rng);
            }
            let result = std::panic::catch_unwind(|| compile(&text, &Options::default()));
            match result {
                Ok(Ok(spec)) => {
                    ok += 1;
                    let g = &spec.graph;
                    if g.nodes.iter().map(|n| n.ty.num_elements()).sum::<usize>() < 1_000_000 {
                        let inputs: Vec<_> = g.params.iter().map(|p| ndarray::ArrayD::from_elem(ndarray::IxDyn(&p.ty.shape), 0.5)).collect();
                        let outputs = std::panic::catch_unwind(|| ollie_graph::evaluate(g, &inputs))
                            .unwrap_or_else(|_| panic!("the reference panicked on:\n{text}\n{g}"));
                        // An index out of range (numpy raises) is the one error the reference
                        // reports on inputs of the right shapes.
                        match outputs {
                            Ok(outputs) => outputs.iter().zip(&g.outputs).for_each(|(o, id)| assert_eq!(o.shape(), g.ty(*id).shape.as_slice(), "{text}")),
                            Err(ollie_graph::GraphError::Op { op: "gather", .. }) => {}
                            Err(e) => panic!("{e} on:\n{text}"),
                        }
                    }
                }
                Ok(Err(d)) => {
                    // Rendering must not panic either.
                    let _ = d.render("mutant.py", &text);
                    diagnosed += 1;
                }
                Err(_) => panic!("the front end panicked on:\n{text}"),
            }
        }
    }
    assert!(ok > 0 && diagnosed > 0, "{ok} compiled, {diagnosed} diagnosed");
}
