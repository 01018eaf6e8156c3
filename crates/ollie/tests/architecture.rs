//! Architecture invariants: crates depend only on crates earlier in the pipeline, and every
//! source file says what it is in a `//!` line.

use std::path::{Path, PathBuf};

/// The pipeline order of ARCHITECTURE.md: a crate may depend only on crates before it.
const ORDER: &[&str] = &[
    "ollie-graph",
    "ollie-spec",
    "ollie-rewrite",
    "ollie-loops",
    "ollie-runner",
    "ollie-verify",
    "ollie-llm",
    "ollie-search",
    "ollie-store",
    "ollie",
];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

#[test]
fn crate_dependencies_follow_the_pipeline() {
    for entry in std::fs::read_dir(crates_dir()).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let rank = ORDER.iter().position(|c| *c == name).unwrap_or_else(|| panic!("crate `{name}` is not in the pipeline order"));
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        for line in manifest.lines() {
            let Some(dep) = line.split(['.', ' ', '=']).next().filter(|d| d.starts_with("ollie")) else { continue };
            if dep == name {
                continue;
            }
            let dep_rank = ORDER.iter().position(|c| *c == dep).unwrap_or_else(|| panic!("{name} depends on unknown `{dep}`"));
            assert!(dep_rank < rank, "`{name}` depends on `{dep}`, which comes later in the pipeline");
        }
    }
}

#[test]
fn every_source_file_opens_with_a_doc_line() {
    let mut stack = vec![crates_dir()];
    let mut checked = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(text.starts_with("//! "), "{} does not open with a `//!` line", path.display());
                checked += 1;
            }
        }
    }
    assert!(checked > 10);
}
