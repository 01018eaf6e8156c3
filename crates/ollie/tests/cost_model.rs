//! The cost model across searches, end to end: a search keeps its timings for later searches of
//! its machine class; the next search, of another spec, starts its model from them (it predicts
//! its first candidates, fitted on more timings than it measured itself); `ollie model` lists
//! both searches and how the second was ranked; `--no-cost-model` still predicts, so that the
//! report judges the model, and the run records that it chose nothing.

use std::path::Path;
use std::process::Command;

mod common;

use common::{cache, root};

fn optimize(cache: &Path, out: &Path, spec: &str, dims: &[&str], extra: &[&str]) -> serde_json::Value {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ollie"));
    c.args(["optimize", spec, "--time", "20s", "--seed", "3", "--out"]).arg(out).env("XDG_CACHE_HOME", cache).current_dir(root());
    for d in dims {
        c.args(["--dim", d]);
    }
    let run = c.args(extra).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap()
}

fn model(cache: &Path) -> String {
    let run = Command::new(env!("CARGO_BIN_EXE_ollie")).arg("model").env("XDG_CACHE_HOME", cache).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    String::from_utf8(run.stdout).unwrap()
}

/// Candidates of the output directory's run that were timed, and of those, predicted first.
fn timed(out: &Path) -> (usize, usize) {
    let conn = rusqlite::Connection::open(out.join("ollie.db")).unwrap();
    conn.query_row("SELECT COUNT(*), COUNT(predicted) FROM timings", [], |r| Ok((r.get::<_, i64>(0)? as usize, r.get::<_, i64>(1)? as usize))).unwrap()
}

#[test]
fn a_search_starts_its_model_from_the_searches_before_it() {
    let cache = cache();
    let work = tempfile::tempdir().unwrap();
    assert!(model(cache.path()).contains("no search has timed a kernel on this machine class yet"), "{}", model(cache.path()));

    let first = work.path().join("softmax");
    let report = optimize(cache.path(), &first, "examples/softmax.py", &["B=16", "N=512"], &[]);
    let (timed_first, _) = timed(&first);
    // The naive kernel and the start are timed before the search: more than the model needs.
    assert!(timed_first >= 14, "{timed_first} timed: too few to learn from");
    let shown = model(cache.path());
    assert!(shown.contains("from 1 searches") && shown.contains(" softmax "), "{shown}");
    let kept = timed_first_kept(&shown);
    assert!(kept > 0 && kept <= timed_first, "{kept} of {timed_first} timings kept");
    assert!(report["cost_model"]["pairs"].is_u64(), "{}", report["cost_model"]);

    // Another spec, with the model switched off: it predicts every candidate it times, from the
    // first, fitted on the softmax's timings.
    let second = work.path().join("layernorm");
    let report = optimize(cache.path(), &second, "examples/layernorm.py", &["B=16", "D=256"], &["--no-cost-model"]);
    let (timed_second, predicted) = timed(&second);
    let searched = searched(&second);
    assert!(searched > 0 && predicted == searched, "{predicted} of the {searched} candidates the search timed were predicted ({timed_second} timings)");
    let m = &report["cost_model"];
    assert_eq!(m["predicted"].as_u64(), Some(predicted as u64), "{m}");
    assert!(m["trained_on"].as_u64().unwrap() >= kept as u64, "fitted on the first search's timings: {m}");
    for key in ["pairwise_accuracy", "pairs", "spearman", "regret_median", "rounds_measured_whole"] {
        assert!(m.get(key).is_some(), "report.json's cost_model lacks {key}: {m}");
    }
    assert_eq!(m["rounds_measured_whole"], 0, "a model that chooses nothing measures no round whole: {m}");
    let conn = rusqlite::Connection::open(second.join("ollie.db")).unwrap();
    let options: String = conn.query_row("SELECT options FROM runs", [], |r| r.get(0)).unwrap();
    assert!(options.contains("\"no_cost_model\":true"), "{options}");

    let shown = model(cache.path());
    assert!(shown.contains("from 2 searches"), "{shown}");
    let line = shown.lines().find(|l| l.contains(" layernorm ")).unwrap_or_else(|| panic!("{shown}"));
    let fitted: usize = line.split_whitespace().nth(3).unwrap().parse().unwrap_or_else(|_| panic!("{line}"));
    assert_eq!(fitted, kept, "{shown}");
}

/// Candidates the search itself timed (not the naive kernel it starts from).
fn searched(out: &Path) -> usize {
    let conn = rusqlite::Connection::open(out.join("ollie.db")).unwrap();
    conn.query_row("SELECT COUNT(*) FROM timings t JOIN candidates c ON c.id = t.candidate WHERE c.proposer != 'naive'", [], |r| r.get::<_, i64>(0)).unwrap() as usize
}

/// The first search's timings as `ollie model` lists them.
fn timed_first_kept(shown: &str) -> usize {
    let line = shown.lines().find(|l| l.contains(" softmax ")).unwrap();
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}
