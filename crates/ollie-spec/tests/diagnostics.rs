//! Data-driven diagnostic tests: each `test_data/err/NAME.py` is compiled and its rendered
//! diagnostics compared with `NAME.txt` beside it (`UPDATE_EXPECT=1` rewrites the expectations).
//!
//! A `# check: kernel=NAME dim=NAME=VALUE` line in a spec sets the compile options.

use std::path::{Path, PathBuf};

use expect_test::expect_file;
use ollie_spec::{compile, Options, Severity};

fn err_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/err").canonicalize().unwrap()
}

/// Reads the `# check:` directives of a test spec.
pub fn options(source: &str) -> Options {
    let mut options = Options::default();
    for line in source.lines() {
        let Some(rest) = line.strip_prefix("# check:") else { continue };
        for word in rest.split_whitespace() {
            if let Some(k) = word.strip_prefix("kernel=") {
                options.kernel = Some(k.to_string());
            } else if let Some(d) = word.strip_prefix("dim=") {
                let (name, value) = d.split_once('=').expect("dim=NAME=VALUE");
                options.dims.push((name.to_string(), value.parse().expect("integer dim")));
            } else {
                panic!("unknown check directive `{word}`");
            }
        }
    }
    options
}

#[test]
fn every_malformed_spec_gets_its_diagnostic() {
    let mut count = 0;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(err_dir()).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries.into_iter().filter(|p| p.extension().is_some_and(|e| e == "py")) {
        count += 1;
        let name = path.file_name().unwrap().to_str().unwrap();
        let source = std::fs::read_to_string(&path).unwrap();
        let rendered = match compile(&source, &options(&source)) {
            Err(d) => {
                assert_eq!(d.severity, Severity::Error, "{name}");
                d.render(name, &source)
            }
            Ok(spec) => {
                assert!(!spec.warnings.is_empty(), "{name} compiles without any diagnostic");
                spec.warnings.iter().map(|w| w.render(name, &source)).collect()
            }
        };
        expect_file![path.with_extension("txt")].assert_eq(&rendered);
    }
    assert!(count >= 30, "expected the error corpus, found {count} specs");
}
