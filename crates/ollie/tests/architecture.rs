//! Architecture invariants, the absences ARCHITECTURE.md promises: crates depend only on crates
//! earlier in the pipeline; rewriting depends on the graph alone; the search links no runner,
//! LLM client, verifier or store; the CLI
//! reaches the search and the store only through the driver; libraries never print (but the
//! driver's progress display); and every source file says what it is in a `//!` line.

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
    "ollie-driver",
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

/// The `ollie-*` crates `crate_name`'s manifest lists under `[dependencies]` (not dev or build).
fn dependencies(crate_name: &str) -> Vec<String> {
    let manifest = std::fs::read_to_string(crates_dir().join(crate_name).join("Cargo.toml")).unwrap();
    let mut section = "";
    let mut deps = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[dependencies]" {
            if let Some(dep) = line.split(['.', ' ', '=']).next().filter(|d| d.starts_with("ollie")) {
                deps.push(dep.to_string());
            }
        }
    }
    deps
}

#[test]
fn the_search_links_no_runner_llm_client_verifier_or_store() {
    let deps = dependencies("ollie-search");
    assert!(deps.contains(&"ollie-loops".to_string()), "the manifest was read: {deps:?}");
    for forbidden in ["ollie-runner", "ollie-llm", "ollie-verify", "ollie-store", "ollie-driver"] {
        assert!(!deps.iter().any(|d| d == forbidden), "ollie-search depends on {forbidden}: the driver injects it through the Propose/Evaluate traits");
    }
}

#[test]
fn rewriting_sees_only_the_graph() {
    // Algebra over the tensor graph knows nothing of loops, machines, runs or verdicts: its
    // variants are proposals the search lowers, schedules and judges like any other.
    assert_eq!(dependencies("ollie-rewrite"), vec!["ollie-graph".to_string()]);
}

#[test]
fn the_cli_reaches_the_search_and_the_store_only_through_the_driver() {
    let deps = dependencies("ollie");
    assert!(deps.contains(&"ollie-driver".to_string()), "{deps:?}");
    for forbidden in ["ollie-search", "ollie-store"] {
        assert!(!deps.iter().any(|d| d == forbidden), "the CLI depends on {forbidden}; it should go through ollie-driver");
    }
}

#[test]
fn libraries_never_print() {
    // The CLI prints; of the libraries, only the driver's progress display writes to the
    // terminal. Everything else returns values and logs through `tracing`.
    let allowed = |path: &Path| path.starts_with(crates_dir().join("ollie")) || path.ends_with("ollie-driver/src/progress.rs");
    let mut stack: Vec<PathBuf> = std::fs::read_dir(crates_dir()).unwrap().map(|e| e.unwrap().path().join("src")).collect();
    let mut checked = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !allowed(&path) {
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    let code = line.split("//").next().unwrap_or("");
                    for macro_name in ["println!", "print!", "eprintln!", "eprint!", "dbg!"] {
                        assert!(!code.contains(macro_name), "{}:{}: a library prints ({macro_name}); return the text or use tracing", path.display(), n + 1);
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 30, "{checked} files checked");
}
