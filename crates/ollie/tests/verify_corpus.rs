//! The verifier's own corpus: every kernel under `test_data/verify/SPEC/` gets the verdict its
//! first line expects (`// expect: accepted`, or `// expect: rejected KIND...` naming the
//! acceptable reasons), through `ollie check`. `// flags:` lines after it set the compiler
//! flags; with several, the kernel is checked once with each (a kernel with AVX-512, AVX2 and
//! scalar paths is checked on every path this machine can run). An accepted kernel must have been
//! tested on every input family. Every case is checked against both baselines: the naive
//! kernel's outputs and the rounded reference (the a-priori rule a search on a slow naive kernel
//! uses), and must get its verdict from each.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

struct Case {
    spec: PathBuf,
    kernel: PathBuf,
    expected: Vec<String>,
    flags: Option<String>,
    /// `naive` or `rounded`.
    baseline: &'static str,
}

fn cases() -> Vec<Case> {
    let dir = root().join("test_data/verify");
    let mut cases = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let spec = entry.unwrap().path();
        if spec.extension().is_none_or(|e| e != "py") {
            continue;
        }
        let kernels = dir.join(spec.file_stem().unwrap());
        for k in std::fs::read_dir(&kernels).unwrap() {
            let kernel = k.unwrap().path();
            if kernel.extension().is_none_or(|e| e != "c") {
                continue;
            }
            let text = std::fs::read_to_string(&kernel).unwrap();
            let expect = text.lines().next().and_then(|l| l.strip_prefix("// expect: ")).unwrap_or_else(|| panic!("{}: no expectation", kernel.display()));
            let expected = match expect.strip_prefix("rejected ") {
                Some(kinds) => kinds.split_whitespace().map(str::to_string).collect(),
                None => vec![expect.trim().to_string()],
            };
            let flags: Vec<String> = text.lines().skip(1).map_while(|l| l.strip_prefix("// flags: ")).map(str::to_string).collect();
            let flags: Vec<Option<String>> = if flags.is_empty() { vec![None] } else { flags.into_iter().map(Some).collect() };
            for flags in flags {
                for baseline in ["naive", "rounded"] {
                    cases.push(Case { spec: spec.clone(), kernel: kernel.clone(), expected: expected.clone(), flags: flags.clone(), baseline });
                }
            }
        }
    }
    cases.sort_by(|a, b| a.kernel.cmp(&b.kernel));
    cases
}

impl Case {
    fn name(&self) -> String {
        match &self.flags {
            Some(f) => format!("{} [{f}] against the {} baseline", self.kernel.display(), self.baseline),
            None => format!("{} against the {} baseline", self.kernel.display(), self.baseline),
        }
    }
}

/// Runs `ollie check`; returns "accepted" or the rejection's kind.
fn verdict(case: &Case, out: &Path) -> Result<String, String> {
    let variant = case.flags.as_deref().unwrap_or("").replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    let certificate = out.join(format!("{}{variant}-{}.json", case.kernel.file_stem().unwrap().to_string_lossy(), case.baseline));
    let mut command = Command::new(env!("CARGO_BIN_EXE_ollie"));
    // Counterexamples go to a private cache, not the user's.
    command.env("XDG_CACHE_HOME", out.join("cache"));
    command.arg("check").arg(&case.spec).arg(&case.kernel).args(["--seed", "42", "--timeout", "3", "--baseline", case.baseline, "--json", "--certificate"]).arg(&certificate);
    if let Some(flags) = &case.flags {
        command.arg(format!("--flags={flags}"));
    }
    let output = command.output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("no JSON report ({e}); stderr: {}", String::from_utf8_lossy(&output.stderr)))?;
    let accepted = report["accepted"].as_bool().unwrap();
    let code = output.status.code();
    if code != Some(if accepted { 0 } else { 1 }) {
        return Err(format!("exit code {code:?} for accepted={accepted}"));
    }
    if accepted {
        // Accepted on every family the spec has (of the constant axes, the last),
        // the extremes among them: nothing was skipped.
        let tested: Vec<&str> = report["certificate"]["tests"].as_array().unwrap().iter().map(|t| t["id"]["family"].as_str().unwrap()).collect();
        let source = std::fs::read_to_string(&case.spec).unwrap();
        let graph = ollie_spec::compile(&source, &ollie_spec::Options::default()).unwrap().graph;
        for family in ollie_verify::Family::of(&graph).iter().map(|f| f.to_string()).filter(|f| !f.starts_with("constant-along") || f == "constant-along-axis(-1)") {
            if !tested.contains(&family.as_str()) {
                return Err(format!("accepted without a test on the {family} family: {tested:?}"));
            }
        }
    }
    let baseline = report["certificate"]["baseline"].as_str().unwrap_or("none");
    let expected = if case.baseline == "naive" { "naive-kernel" } else { "rounded-reference" };
    if !(baseline == expected || (!accepted && baseline == "none")) {
        return Err(format!("the certificate names the baseline {baseline}, not {expected}"));
    }
    Ok(if accepted { "accepted".to_string() } else { report["rejection"]["kind"].as_str().unwrap().to_string() })
}

#[test]
fn every_corpus_kernel_gets_its_verdict() {
    let cases = cases();
    let accepted = cases.iter().filter(|c| c.expected == ["accepted"]).count();
    assert!(accepted >= 5 && cases.len() - accepted >= 15, "{accepted} correct and {} wrong kernels", cases.len() - accepted);
    let out = tempfile::tempdir().unwrap();
    // Generous ceilings (so the roofline floor rejects nothing real), saved where the private
    // cache looks, so that no check measures the machine.
    std::fs::create_dir_all(out.path().join("cache/ollie")).unwrap();
    std::fs::write(
        out.path().join("cache/ollie/machine.json"),
        r#"{"cpu":"test","isa":"scalar","last_level_cache_bytes":1048576,"ceilings":[{"threads":1,"bandwidth_gbs":1e6,"peak_gflops":1e6}],"cache_bandwidth":[{"bytes":524288,"gbs":[1e6]}],"measured_at":0,"pinned":true}"#,
    )
    .unwrap();
    let results: Vec<(String, Result<String, String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = cases
            .chunks(cases.len().div_ceil(2))
            .map(|chunk| {
                let out = out.path();
                scope.spawn(move || chunk.iter().map(|c| (c.name(), verdict(c, out))).collect::<Vec<_>>())
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let mut failures = Vec::new();
    for (case, (name, result)) in cases.iter().zip(results) {
        match result {
            Ok(kind) if case.expected.contains(&kind) => {}
            Ok(kind) => failures.push(format!("{name}: got {kind}, expected {:?}", case.expected)),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{} of {} kernels got the wrong verdict:\n{}", failures.len(), cases.len(), failures.join("\n"));
}
