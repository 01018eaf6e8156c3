//! Each input family has the property it promises, deterministically per seed.

use ollie_graph::{DType, Param, TensorType};
use ollie_verify::Family;

fn params() -> Vec<Param> {
    vec![
        Param { name: "x".into(), ty: TensorType::new(DType::F32, vec![8, 64]) },
        Param { name: "w".into(), ty: TensorType::new(DType::F64, vec![64]) },
    ]
}

#[test]
fn families_have_their_properties() {
    let p = params();
    for family in Family::all(2) {
        let a = family.generate(&p, 7);
        assert_eq!(a, family.generate(&p, 7), "{family} is deterministic");
        assert_ne!(a, family.generate(&p, 8), "{family} depends on the seed");
        assert_eq!(a[0].shape(), &[8, 64]);
        assert!(a[0].iter().all(|v| (*v as f32) as f64 == *v), "{family}: f32 parameters hold f32 values");
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
            _ => {}
        }
    }
}
