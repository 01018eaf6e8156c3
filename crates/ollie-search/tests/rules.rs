//! Sketch rule stage tests: what each structural rule does to `test_data/rules/NAME.py`'s naive
//! nest at 8 lanes, in `NAME.rules` (`UPDATE_EXPECT=1` rewrites them) — where it applied,
//! where it declined and why, and which found nothing to apply to.

use std::path::{Path, PathBuf};

use expect_test::expect_file;
use ollie_search::{explain, Target};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

#[test]
fn what_each_rule_does_to_each_kernel() {
    let mut specs: Vec<PathBuf> = std::fs::read_dir(root().join("test_data/rules")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "py")).collect();
    specs.sort();
    assert!(specs.len() >= 4, "the rules' stage tests are missing");
    for path in specs {
        let source = std::fs::read_to_string(&path).unwrap();
        let spec = ollie_spec::compile(&source, &Default::default()).unwrap_or_else(|d| panic!("{}", d.render("spec", &source)));
        let nest = ollie_loops::lower(&spec.graph).unwrap();
        let notes = explain(&nest, &Target { lanes: 8, caches: None });
        let text: String = notes.iter().map(|n| format!("{n}\n")).collect();
        expect_file![path.with_extension("rules")].assert_eq(&text);
    }
}
