//! `ollie optimize --proposers llm` against a scripted endpoint on 127.0.0.1 serving prepared
//! replies (`test_data/llm/*.md`): a 429 then a reply without code, a malformed answer, a good
//! kernel, a subtly wrong one, cheats (a cache, lazy work, a file, a constructor hidden behind a
//! macro), a kernel that does not compile and its repair, which is faster. The search must
//! survive every bad reply, adopt the faster kernel and credit `llm`, reject every cheat for the
//! right reason, repair in the same conversation, and record every call. An endpoint that never
//! answers, or is not there, costs only its time limit.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{cache_with_llc, root};
use ollie_llm::scripted::{Answer, ScriptedServer};

/// The pinned machine, with a last-level cache larger than this machine's: the tests judge
/// which kernel is faster, so the inputs must come from memory.
fn cache() -> tempfile::TempDir {
    cache_with_llc(64 << 20)
}

const SECRET: &str = "sk-ollie-test-secret-0123";

/// Held by every test for the whole of its searches: the tests assert which kernel measured
/// faster, and a search timing its kernels while another test's search loads both cores
/// measured the 2-thread kernel slower than the 1-thread naive one.
static ONE_SEARCH_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_search_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_SEARCH_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn reply(name: &str) -> Answer {
    Answer::Reply(std::fs::read_to_string(root().join("test_data/llm").join(name)).unwrap())
}

fn optimize(cache: &Path, out: &Path, url: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ollie"))
        .args(["optimize", "test_data/llm/colsum.py", "--seed", "3", "--proposers", "llm", "--llm-url", url, "--llm-model", "scripted", "--time", "300s", "--out"])
        .arg(out)
        .args(extra)
        .env("XDG_CACHE_HOME", cache)
        .env("OLLIE_LLM_API_KEY", SECRET)
        .current_dir(root())
        .output()
        .unwrap()
}

/// (proposer, reason, source) of every candidate, in order.
fn verdicts(db: &Path) -> Vec<(String, Option<String>, String)> {
    let mut store = ollie_store::Store::open(db).unwrap();
    let run = store.runs().unwrap()[0].id;
    store.candidates(run, ollie_store::Sources::All).unwrap().into_iter().map(|(_, c)| (c.proposer, c.reason, c.source)).collect()
}

/// (conversation, turn, outcome, attempts, seconds) of every LLM call, in order.
fn llm_calls(db: &Path) -> Vec<(i64, i64, String, i64, f64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT conversation, turn, outcome, attempts, seconds FROM llm_calls ORDER BY id").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))).unwrap().collect::<Result<_, _>>().unwrap()
}

fn kernel_of(name: &str) -> String {
    let text = std::fs::read_to_string(root().join("test_data/llm").join(name)).unwrap();
    let start = text.find("```c\n").unwrap() + 5;
    text[start..start + text[start..].find("```").unwrap()].to_string()
}

#[test]
fn the_search_adopts_a_faster_correct_kernel_and_rejects_every_cheat() {
    let _searching = one_search_at_a_time();
    let marker = Path::new("/tmp/ollie-test-constructor-ran");
    let _ = std::fs::remove_file(marker);
    let script = vec![
        Answer::Status(429, Some(0)),
        reply("no-code.md"),
        Answer::Raw("{\"choices\": [{\"message\": ".into()),
        reply("good.md"),
        reply("wrong.md"),
        reply("cache.md"),
        reply("lazy.md"),
        reply("file.md"),
        reply("constructor.md"),
        reply("compile-error.md"),
        reply("faster.md"),
    ];
    let server = ScriptedServer::start(script, Answer::Status(500, None));
    let (cache, out) = (cache(), tempfile::tempdir().unwrap());
    let o = optimize(cache.path(), out.path(), &server.url, &["--llm-calls", "10", "--llm-concurrency", "1"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{stdout}\n{stderr}");
    let db = out.path().join("ollie.db");

    // Every call, in order: the 429 retried within the first, the repair of the reply without
    // code in the same conversation, the malformed answer survived, the compile error repaired.
    let calls = llm_calls(&db);
    let outcomes: Vec<&str> = calls.iter().map(|c| c.2.as_str()).collect();
    assert_eq!(outcomes, ["no-code", "malformed", "kernel", "kernel", "kernel", "kernel", "kernel", "kernel", "kernel", "kernel"], "{calls:?}");
    assert_eq!(calls[0].3, 2, "the 429 was retried");
    assert_eq!((calls[1].0, calls[1].1), (calls[0].0, 1), "the repair continues the first conversation");
    assert_eq!((calls[9].0, calls[9].1), (calls[8].0, 1), "the compile error is repaired in its conversation");
    let conversations: std::collections::BTreeSet<i64> = calls.iter().map(|c| c.0).collect();
    assert_eq!(conversations.len(), 8);

    // Every kernel judged, for the right reason.
    let verdicts = verdicts(&db);
    let llm: Vec<(Option<&str>, &str)> = verdicts.iter().filter(|v| v.0 == "llm").map(|v| (v.1.as_deref(), v.2.as_str())).collect();
    assert_eq!(llm.len(), 8, "{verdicts:?}");
    // The good kernel (the naive loop order, as fast as the current kernel) passes the first
    // tier: taken by the chain after the full verification, or declined as no faster.
    assert!(matches!(llm[0].0, None | Some("slower")) && llm[0].1 == kernel_of("good.md"), "the good kernel: {:?}", llm[0].0);
    assert_eq!(llm[1].0, Some("inaccurate"), "the kernel that skips a row");
    // A call answered from the cache is caught as stale, or as faster than the roofline allows.
    assert!(matches!(llm[2].0, Some("stale-output" | "too-fast")), "the cache: {:?}", llm[2].0);
    assert!(matches!(llm[3].0, Some("changed-after-return" | "unwritten" | "inaccurate" | "too-fast")), "lazy work: {:?}", llm[3].0);
    assert!(matches!(llm[4].0, Some("forbidden" | "crashed")), "the file: {:?}", llm[4].0);
    assert_eq!(llm[5].0, Some("forbidden-code"), "the constructor behind a macro");
    assert!(!marker.exists(), "the constructor never ran");
    assert_eq!(llm[6].0, Some("compile-error"));
    assert_eq!(llm[7], (None, kernel_of("faster.md").as_str()), "the repaired kernel is accepted");

    // The faster kernel is the result, credited to llm.
    let result = std::fs::read_to_string(out.path().join("colsum.c")).unwrap();
    assert_eq!(result, kernel_of("faster.md"), "{stdout}\n{stderr}");
    let header = std::fs::read_to_string(out.path().join("colsum.h")).unwrap();
    assert!(header.contains("void colsum(const float *restrict x, float *restrict out);"), "{header}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(report["best"]["proposer"], "llm", "{report}");
    assert_eq!(report["best"]["naive_is_best"], false, "{report}");
    assert_eq!(report["llm"]["calls"], 10);
    assert!(report["llm"]["prompt_tokens"].as_u64().unwrap() > 500);
    assert!(std::fs::read_to_string(out.path().join("report.md")).unwrap().contains("from `llm`"));
    assert!(stdout.contains("llm: 10 calls"), "{stdout}");

    // What the model was told.
    let asked = server.asked();
    assert_eq!(asked.len(), 11, "ten calls, one retried");
    let text = |k: usize| asked[k].body["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap().to_string()).collect::<Vec<_>>().join("\n");
    let first = text(0);
    for needle in ["x.sum(axis=0)", "void colsum(const float *restrict x, float *restrict out);", "avx2", "GFLOP/s", "x: f32[1024,1024] (input)", "generated by ollie from its spec", "x the naive kernel"] {
        assert!(first.contains(needle), "the first prompt lacks {needle:?}:\n{first}");
    }
    assert!(text(2).contains("could not be used (no-code)"), "{}", text(2));
    assert_eq!(asked[2].body["messages"].as_array().unwrap().len(), 4, "system, request, reply, repair");
    assert!(text(10).contains("did not compile") && text(10).contains("error"), "{}", text(10));
    // Later prompts show the latest rejections with their reasons (the kernel that skips a row
    // is the one before the cache's request; the constructor's, before the compile error's).
    assert!(text(5).contains("from `llm`, inaccurate:"), "{}", text(5));
    assert!(text(9).contains("from `llm`, forbidden-code:"), "{}", text(9));
    assert!(asked.iter().all(|a| a.authorization.as_deref() == Some(&format!("Bearer {SECRET}") as &str)));

    // The key is sent, never kept or shown.
    let stored = std::fs::read(&db).unwrap();
    assert!(!String::from_utf8_lossy(&stored).contains(SECRET));
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    let _ = std::fs::remove_file("/tmp/ollie-test-colsum-cache");
}

#[test]
fn an_endpoint_that_never_answers_or_is_not_there_costs_only_its_timeout() {
    let _searching = one_search_at_a_time();
    // Two conversations at once: one call is never answered, the other brings the faster kernel,
    // which is judged and adopted while the first waits out its 3 s.
    let server = ScriptedServer::start(vec![Answer::Silence, reply("faster.md")], Answer::Silence);
    let (cache, out) = (cache(), tempfile::tempdir().unwrap());
    let started = Instant::now();
    let o = optimize(cache.path(), out.path(), &server.url, &["--llm-calls", "2", "--llm-concurrency", "2", "--llm-timeout", "3s"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let calls = llm_calls(&out.path().join("ollie.db"));
    assert_eq!(calls.iter().map(|c| c.2.as_str()).collect::<Vec<_>>(), ["kernel", "timeout"], "{calls:?}");
    assert!(calls[1].4 >= 2.9 && calls[1].4 < 5.0, "{calls:?}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.path().join("report.json")).unwrap()).unwrap();
    let judged: Vec<_> = verdicts(&out.path().join("ollie.db")).into_iter().map(|(proposer, reason, _)| (proposer, reason)).collect();
    assert_eq!(report["best"]["proposer"], "llm", "verdicts {judged:?}\nreport {report:#}");
    let silent = started.elapsed();

    // Nobody listens on this port: three refused calls and the proposer gives up, long before
    // the 300 s budget and its 100 calls.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let o = optimize(cache.path(), out.path(), &format!("http://127.0.0.1:{port}/v1"), &["--llm-calls", "100"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("the llm proposer stopped early") && stderr.contains("cannot reach"), "{stderr}");
    let calls = llm_calls(&out.path().join("ollie.db"));
    assert!((3..=4).contains(&calls.len()) && calls.iter().all(|c| c.2 == "unreachable"), "{calls:?}");
    let dead = started.elapsed();
    eprintln!("silent endpoint: {silent:?} in all; dead endpoint: {dead:?} in all");
    assert!(dead < silent + Duration::from_secs(30), "{dead:?} vs {silent:?}");
}

#[test]
fn a_call_still_in_flight_when_the_budget_ends_is_recorded_and_reported() {
    let _searching = one_search_at_a_time();
    // The model never answers within the search's 4 s: its call is abandoned at the end, stored
    // with how long it had waited, and the report says what `llm` did (nothing but wait).
    let server = ScriptedServer::start(vec![], Answer::Silence);
    let (cache, out) = (cache(), tempfile::tempdir().unwrap());
    let started = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_ollie"))
        .args(["optimize", "test_data/llm/colsum.py", "--seed", "3", "--proposers", "mutate,llm", "--llm-url", &server.url, "--llm-model", "scripted"])
        .args(["--llm-concurrency", "1", "--llm-timeout", "600s", "--time", "4s", "--out"])
        .arg(out.path())
        .env("XDG_CACHE_HOME", cache.path())
        .current_dir(root())
        .output()
        .unwrap();
    let ran = started.elapsed();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}{}", String::from_utf8_lossy(&o.stderr));
    let calls = llm_calls(&out.path().join("ollie.db"));
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].2, "abandoned");
    // It waited for as long as the search ran: some of the 4 s budget (less loading, the naive
    // kernel's timing and what the final phase is estimated to take), and no longer than the
    // command.
    assert!(calls[0].4 > 0.2 && calls[0].4 < ran.as_secs_f64(), "{calls:?} in {ran:?}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(report["llm"]["calls"], 1, "{report}");
    assert_eq!(report["llm"]["outcomes"]["abandoned"], 1, "{report}");
    let proposers = report["proposers"].as_array().unwrap();
    assert!(proposers.iter().any(|p| p["name"] == "llm" && p["evaluations"] == 0), "{report}");
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(md.contains("| llm | 0 | 0 |") && md.contains("still waiting for a reply when the budget ended: 1"), "{md}");
    assert!(stdout.contains("abandoned 1"), "{stdout}");
}

#[test]
fn a_resumed_search_keeps_its_llm_budget_and_conversations() {
    let _searching = one_search_at_a_time();
    let server = ScriptedServer::start(vec![reply("good.md"), reply("wrong.md")], Answer::Status(500, None));
    let (cache, out) = (cache(), tempfile::tempdir().unwrap());
    let started = Instant::now();
    let o = optimize(cache.path(), out.path(), &server.url, &["--llm-calls", "2", "--llm-concurrency", "1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(server.asked().len(), 2);
    // Its only proposer spent, the search ends rather than wait out its 300 s.
    assert!(started.elapsed() < Duration::from_secs(200), "{:?}", started.elapsed());
    // The same run, resumed with one more call allowed: exactly one more is made, in a new
    // conversation.
    let more = ScriptedServer::start(vec![reply("faster.md")], Answer::Status(500, None));
    let o = optimize(cache.path(), out.path(), &more.url, &["--llm-calls", "3", "--llm-concurrency", "1", "--resume"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(more.asked().len(), 1);
    let calls = llm_calls(&out.path().join("ollie.db"));
    assert_eq!(calls.iter().map(|c| c.0).collect::<Vec<_>>(), [0, 1, 2]);
    // Its kernel was judged in the resumed run (whether it beats the first run's best is the
    // clock's to say, not this test's).
    let judged = verdicts(&out.path().join("ollie.db"));
    assert!(judged.iter().any(|(proposer, _, source)| proposer == "llm" && *source == kernel_of("faster.md")), "{judged:?}");
}

#[test]
fn a_wrong_llm_setup_is_a_usage_error_before_anything_runs() {
    let (cache, out) = (cache(), tempfile::tempdir().unwrap());
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_ollie"))
            .args(["optimize", "test_data/llm/colsum.py", "--out"])
            .arg(out.path())
            .args(args)
            .env("XDG_CACHE_HOME", cache.path())
            .current_dir(root())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    assert!(run(&["--proposers", "llm"]).contains("needs --llm-url"));
    assert!(run(&["--proposers", "llm", "--llm-url", "http://127.0.0.1:9/v1"]).contains("needs --llm-model"));
    assert!(run(&["--proposers", "llm", "--llm-url", "localhost:8000", "--llm-model", "m"]).contains("is not an http:// or https:// URL"));
    assert!(run(&["--proposers", "mutate,gpt"]).contains("unknown proposer `gpt`"));
    assert!(run(&["--llm-url", "http://127.0.0.1:9/v1", "--llm-model", "m", "--llm-price", "cheap"]).contains("--llm-price"));
    let prompts = tempfile::tempdir().unwrap();
    std::fs::write(prompts.path().join("propose.j2"), "{{ task.kernel ").unwrap();
    let broken = run(&["--proposers", "llm", "--llm-url", "http://127.0.0.1:9/v1", "--llm-model", "m", "--llm-prompts", prompts.path().to_str().unwrap()]);
    assert!(broken.contains("propose.j2"), "{broken}");
    assert!(!out.path().join("ollie.db").exists(), "nothing was started");
}
