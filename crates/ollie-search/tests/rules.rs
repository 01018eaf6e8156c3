//! Sketch rule stage tests: what each structural rule does at 8 lanes to the naive nest of the
//! spec `NAME.py` (in test_data/rules, bench/scoreboard or test_data/loops), in
//! `test_data/rules/NAME.rules` (`UPDATE_EXPECT=1` rewrites them) — where it applied, where it
//! declined and why, and which found nothing to apply to.

use std::path::{Path, PathBuf};

use expect_test::expect_file;
use ollie_search::{explain, Target};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The spec a `.rules` file is of: the first `NAME.py` in these directories.
const SPECS: &[&str] = &["test_data/rules", "bench/scoreboard", "test_data/loops"];

#[test]
fn what_each_rule_does_to_each_kernel() {
    let mut expected: Vec<PathBuf> = std::fs::read_dir(root().join("test_data/rules")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "rules")).collect();
    expected.sort();
    assert!(expected.len() >= 4, "the rules' stage tests are missing");
    for rules in expected {
        let name = rules.file_stem().unwrap().to_str().unwrap();
        let spec = SPECS.iter().map(|d| root().join(d).join(format!("{name}.py"))).find(|p| p.exists()).unwrap_or_else(|| panic!("no spec {name}.py in {SPECS:?}"));
        let source = std::fs::read_to_string(&spec).unwrap();
        let spec = ollie_spec::compile(&source, &Default::default()).unwrap_or_else(|d| panic!("{}", d.render("spec", &source)));
        let nest = ollie_loops::lower(&spec.graph).unwrap();
        let notes = explain(&nest, &Target { lanes: 8, caches: None });
        let text: String = notes.iter().map(|n| format!("{n}\n")).collect();
        expect_file![rules].assert_eq(&text);
    }
}
