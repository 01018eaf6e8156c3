//! Architecture invariants, the absences ARCHITECTURE.md promises: crates depend only on crates
//! earlier in the pipeline; rewriting depends on the graph alone; the search links no runner,
//! LLM client, verifier or store; the CLI
//! reaches the search and the store only through the driver; libraries never print (but the
//! driver's progress display); inside a crate, modules import each other in one direction (the
//! loop IR and its emitter know nothing of schedules); every source file says what it is in a
//! `//!` line; and ARCHITECTURE.md, under 30 KB, shows every crate and every top-level folder.

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

/// The modules of a crate each of its top-level modules names (`crate::x`, `crate::{x, y::Z}`),
/// outside its tests. Submodules count as their top-level module.
fn module_imports(crate_name: &str) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let src = crates_dir().join(crate_name).join("src");
    let mut out = std::collections::BTreeMap::<String, std::collections::BTreeSet<String>>::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap();
            let top = rel.components().next().unwrap().as_os_str().to_str().unwrap().trim_end_matches(".rs").to_string();
            if top == "lib" || top == "main" || path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap();
            let names = out.entry(top.clone()).or_default();
            for (at, _) in code.match_indices("crate::") {
                let rest = &code[at + "crate::".len()..];
                let heads: Vec<&str> = match rest.strip_prefix('{') {
                    Some(group) => group[..group.find('}').unwrap_or(group.len())].split(',').map(|p| p.trim()).collect(),
                    None => vec![rest],
                };
                for head in heads {
                    let name: String = head.chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
                    if !name.is_empty() && name != top {
                        names.insert(name);
                    }
                }
            }
        }
    }
    out
}

/// The modules `from` reaches through imports (itself only through a circle).
fn reachable(imports: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>, from: &str) -> std::collections::BTreeSet<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut stack: Vec<&str> = imports.get(from).map(|n| n.iter().map(String::as_str).collect()).unwrap_or_default();
    while let Some(m) = stack.pop() {
        if seen.insert(m.to_string()) {
            stack.extend(imports.get(m).into_iter().flatten().map(String::as_str));
        }
    }
    seen
}

/// Crates whose modules still import each other in a circle, and the circle: spec's builder
/// dispatches to the operator modules, which build through it. A crate leaves this list; none joins.
const CIRCLES_LEFT: &[(&str, &[&str])] = &[("ollie-spec", &["builder", "operators"])];

#[test]
fn modules_import_each_other_in_one_direction() {
    let mut checked = 0;
    for entry in std::fs::read_dir(crates_dir()).unwrap() {
        let name = entry.unwrap().file_name().to_str().unwrap().to_string();
        let imports = module_imports(&name);
        let circular: Vec<&String> = imports.keys().filter(|m| reachable(&imports, m).contains(*m)).collect();
        match CIRCLES_LEFT.iter().find(|(c, _)| *c == name) {
            Some((_, members)) => {
                for m in *members {
                    assert!(circular.iter().any(|c| c == m), "{name}: `{m}` is no longer in a circle: take {name} off CIRCLES_LEFT");
                }
            }
            None => assert!(circular.is_empty(), "{name}: the modules {circular:?} import each other in a circle; move what they share to a module below them"),
        }
        checked += imports.len();
    }
    assert!(checked > 50, "{checked} modules read");
}

#[test]
fn the_loop_ir_and_its_emitter_know_no_schedule() {
    // A schedule transforms the IR; the IR, its text form, its checker and the C emitter stand
    // below every schedule step and its policy.
    let imports = module_imports("ollie-loops");
    for module in ["ir", "text", "invariants", "emit", "lower"] {
        let below = reachable(&imports, module);
        assert!(imports.contains_key(module), "ollie-loops has no module `{module}`");
        assert!(!below.contains("schedule"), "ollie-loops' `{module}` reaches the schedule module: {below:?}");
    }
}

#[test]
fn the_map_is_short_and_shows_every_crate_and_folder() {
    let root = crates_dir().join("..");
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    assert!(map.len() < 30_000, "ARCHITECTURE.md is {} bytes: a map, under 30 KB; figures go to bench/RESULTS.md, history to commits", map.len());
    for entry in std::fs::read_dir(crates_dir()).unwrap() {
        let name = entry.unwrap().file_name().to_str().unwrap().to_string();
        assert!(map.contains(&format!("`crates/{name}`")), "ARCHITECTURE.md has no section for `crates/{name}`");
    }
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        // Build output and version control are not the project's rooms.
        if !path.is_dir() || [".git", "target"].contains(&name.as_str()) {
            continue;
        }
        assert!(map.contains(&format!("{name}/")), "ARCHITECTURE.md does not show the folder `{name}/`");
    }
}
