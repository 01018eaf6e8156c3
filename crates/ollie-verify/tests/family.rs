//! Each input family has the property it promises, deterministically per seed.

use ollie_graph::{DType, GatherAxis, Graph, Op, Param, TensorType};
use ollie_verify::Family;

fn params() -> Graph {
    Graph::new(
        "k",
        vec![
            Param { name: "x".into(), ty: TensorType::new(DType::F32, vec![8, 64]) },
            Param { name: "w".into(), ty: TensorType::new(DType::F64, vec![64]) },
        ],
    )
}

#[test]
fn integer_parameters_are_indices_in_the_range_of_the_axis_they_index() {
    // `table[ids]` over 50 rows: indices in -50..50, each family as it promises.
    let mut g = Graph::new(
        "k",
        vec![
            Param { name: "table".into(), ty: TensorType::new(DType::F32, vec![50, 4]) },
            Param { name: "ids".into(), ty: TensorType::new(DType::I32, vec![300]) },
        ],
    );
    let table = g.push(Op::Input { index: 0 }, vec![]).unwrap();
    let ids = g.push(Op::Input { index: 1 }, vec![]).unwrap();
    let column = g.push(Op::Reshape { shape: vec![300, 1] }, vec![ids]).unwrap();
    let wide = g.push(Op::Broadcast { shape: vec![300, 4] }, vec![column]).unwrap();
    let rows = g.push(Op::Gather { shape: vec![300, 4], from: vec![GatherAxis::Index, GatherAxis::Along { axis: 1, start: 0, step: 1 }] }, vec![table, wide]).unwrap();
    g.outputs = vec![rows];
    for family in Family::all(2).into_iter().chain([Family::Ties, Family::Nan, Family::Halves, Family::Borders]) {
        let a = family.generate(&g, 3);
        let i = &a[1];
        assert!(i.iter().all(|v| v.fract() == 0.0 && (-50.0..50.0).contains(v)), "{family}: in range");
        let distinct = { let mut v: Vec<i64> = i.iter().map(|&x| x as i64).collect(); v.sort(); v.dedup(); v.len() };
        match family {
            Family::Normal | Family::Uniform | Family::Ties | Family::Nan | Family::Halves | Family::Borders => assert!(i.iter().all(|v| *v >= 0.0) && distinct > 30, "{family}: {distinct} values"),
            Family::Wide => assert!(i.iter().any(|v| *v < 0.0), "{family}: negative indices"),
            Family::Large => assert!(i.iter().any(|v| *v == 49.0) && i.iter().any(|v| *v == -50.0), "{family}: both ends"),
            Family::Tiny => assert!(distinct <= 2, "{family}: repeated"),
            Family::Cancellation => assert!(i.iter().zip(i.iter().skip(1)).all(|(a, b)| a <= b), "{family}: sorted"),
            Family::Zeros => assert_eq!(distinct, 1, "{family}: one value"),
            Family::ConstantAlong { .. } => {}
        }
    }
}

#[test]
fn families_have_their_properties() {
    let p = params();
    for family in Family::all(2).into_iter().chain([Family::Ties, Family::Nan, Family::Halves]) {
        let a = family.generate(&p, 7);
        let bits = |a: &[ollie_graph::Tensor]| a.iter().map(|t| t.iter().map(|v| v.to_bits()).collect::<Vec<_>>()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&family.generate(&p, 7)), "{family} is deterministic");
        assert_ne!(bits(&a), bits(&family.generate(&p, 8)), "{family} depends on the seed");
        assert_eq!(a[0].shape(), &[8, 64]);
        assert!(a[0].iter().all(|v| (*v as f32) as f64 == *v || v.is_nan()), "{family}: f32 parameters hold f32 values");
        let x = &a[0];
        let max = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        match family {
            Family::Large => assert!(max >= 100.0, "{max}"),
            Family::Tiny => {
                assert!(max < 1e-28, "{max}");
                assert!(x.iter().any(|v| *v != 0.0 && v.abs() < 1.18e-38), "has subnormals");
            }
            Family::Uniform => assert!(x.iter().all(|v| (0.0..1.0).contains(v))),
            Family::Cancellation => assert!(x.iter().any(|v| *v > 9e3) && x.iter().any(|v| *v < -9e3)),
            Family::Zeros => {
                let zeros = x.iter().filter(|v| **v == 0.0).count();
                assert!(zeros > 100 && zeros < 300, "{zeros}");
            }
            Family::ConstantAlong { from_end: 0 } => {
                for row in x.rows() {
                    assert!(row.iter().all(|v| *v == row[0]), "rows are constant");
                }
                assert!(a[1].iter().all(|v| *v == a[1][[0]]), "w, aligned with the rows, is constant");
            }
            Family::ConstantAlong { from_end: 1 } => {
                for col in x.columns() {
                    assert!(col.iter().all(|v| *v == col[0]), "columns are constant");
                }
                assert!(a[1].iter().any(|v| *v != a[1][[0]]), "w has no second-to-last axis");
            }
            Family::Ties => {
                assert!(x.iter().all(|v| v.fract() == 0.0 && v.abs() <= 2.0), "small integers");
                // Most rows have their largest value more than once.
                let tied = x.rows().into_iter().filter(|r| r.iter().filter(|v| **v == max_of(r.iter())).count() > 1).count();
                assert!(tied >= 6, "{tied} rows with a tied maximum");
            }
            Family::Halves => {
                assert!(x.iter().all(|v| (2.0 * v).fract() == 0.0 && v.abs() <= 8.0), "multiples of 1/2 in [-8, 8]");
                assert!(x.iter().filter(|v| v.fract() != 0.0).count() > 100, "many ties");
            }
            Family::Nan => {
                let nans = a.iter().flat_map(|t| t.iter()).filter(|v| v.is_nan()).count();
                assert!((1..50).contains(&nans), "{nans} NaN among 576 elements");
            }
            _ => {}
        }
    }
}

fn max_of<'a>(v: impl Iterator<Item = &'a f64>) -> f64 {
    v.fold(f64::NEG_INFINITY, |m, x| m.max(*x))
}

/// A padded 3×3 max pool over the last two axes, and its weights-free twin without windows.
#[test]
fn a_kernel_with_windows_gets_infinities_and_nans_on_the_edges_its_windows_slide_along() {
    let pool = ollie_graph::parse(
        "kernel pool(x: f32[2,3,8,8], s: f32[3]) {
  %0: f32[2,3,8,8] = input[x]
  %1: f32[3] = input[s]
  %2: f32[] = const[-inf]
  %3: f32[2,3,8,1] = broadcast %2
  %4: f32[2,3,8,10] = concat[3] %3, %0, %3
  %5: f32[2,3,6,8,3,3] = gather[0:0:+1,1:0:+1,2:0:+1:4:+1,3:0:+1:5:+1] %4
  %6: f32[2,3,6,8] = reduce_max[4,5] %5
  %7: f32[1,3,1,1] = reshape %1
  %8: f32[2,3,6,8] = broadcast %7
  %9: f32[2,3,6,8] = mul %6, %8
  return %9
}
",
    )
    .unwrap();
    assert!(Family::of(&pool).contains(&Family::Borders));
    assert!(!Family::of(&params()).contains(&Family::Borders), "no windows, no padding");
    let a = Family::Borders.generate(&pool, 3);
    let x = &a[0];
    let special: Vec<Vec<usize>> = x.indexed_iter().filter(|(_, v)| !v.is_finite()).map(|(ix, _)| ndarray::Dimension::slice(&ix).to_vec()).collect();
    assert!(special.len() > 10, "{} special values", special.len());
    for kind in [f64::INFINITY, f64::NEG_INFINITY] {
        assert!(x.iter().any(|&v| v == kind), "{kind} among them");
    }
    assert!(x.iter().any(|v| v.is_nan()), "NaN among them");
    // Only on the first and last rows and columns (the window axes), never elsewhere.
    for ix in &special {
        assert!(ix[2] == 0 || ix[2] == 7 || ix[3] == 0 || ix[3] == 7, "{ix:?} is inside");
    }
    assert!(a[1].iter().all(|v| v.is_finite()), "the scale is not windowed");
}
