//! Several workers on one search kept on a real PostgreSQL server (started by the test from the
//! Debian package's binaries): both chains recorded and the final phase run once; a worker
//! SIGKILLed mid-evaluation has its candidate taken up by another; a server restart mid-search
//! loses nothing; a worker of another machine class refuses to join.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
#[path = "../../ollie-store/tests/support/postgres.rs"]
mod postgres;

use common::{cache, root};
use ollie_store::{Location, RunId, Store, WorkerId};

/// A server with one new database (its URL), a private ollie cache and a directory for outputs.
fn setup(database: &str) -> (postgres::Server, String, tempfile::TempDir, tempfile::TempDir) {
    let server = postgres::Server::start();
    let url = server.database(database);
    (server, url, cache(), tempfile::tempdir().unwrap())
}

fn ollie(cache: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ollie"));
    c.args(args).env("XDG_CACHE_HOME", cache).env_remove("OLLIE_STORE").current_dir(root());
    c
}

/// `ollie optimize` of a small softmax into `out`, its store on `url`.
fn optimize(cache: &Path, url: &str, out: &Path, extra: &[&str]) -> Child {
    let mut args = vec!["optimize", "examples/softmax.py", "--dim", "B=16", "--dim", "N=512", "--seed", "7", "--store", url, "--out", out.to_str().unwrap()];
    args.extend(extra);
    ollie(cache, &args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn worker(cache: &Path, url: &str, out: &Path, extra: &[&str]) -> Child {
    let mut args = vec!["worker", "--store", url, "--wait", "60s", "--seed", "8", "--out", out.to_str().unwrap()];
    args.extend(extra);
    ollie(cache, &args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn finished(child: Child, what: &str) -> Output {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{what} failed ({}):\n{}{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// Polls `ready` on the store every 100 ms for up to 300 s.
fn wait_until(url: &str, what: &str, mut ready: impl FnMut(&mut Store) -> bool) {
    let started = Instant::now();
    loop {
        if let Ok(mut store) = Store::connect(&Location::Postgres(url.to_string())) {
            if ready(&mut store) {
                return;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(300), "waited 300 s for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What the store holds of run 1, checked for what every multi-worker search must keep: each
/// worker's evaluations numbered 1.. without a gap or a repeat, every lease settled by exactly
/// one verdict (none judged twice), each candidate's lease that of its worker.
fn check_nothing_lost(url: &str) -> Store {
    let mut store = Store::connect(&Location::Postgres(url.to_string())).unwrap();
    let run = store.run(RunId(1)).unwrap();
    assert!(run.finished, "the run is not finished");
    let leases = store.leases(run.id).unwrap();
    let verdicts: Vec<_> = leases.iter().filter_map(|l| l.candidate).collect();
    let mut unique = verdicts.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), verdicts.len(), "a candidate settles two leases");
    let candidates = store.candidates(run.id, ollie_store::Sources::Written).unwrap();
    // The naive kernel is recorded without a lease; every other candidate settled one.
    assert_eq!(candidates.len(), verdicts.len() + 1, "candidates without a lease, or leases judged twice");
    for w in store.workers(run.id).unwrap() {
        let mut numbers: Vec<usize> = candidates.iter().filter(|(id, _)| leases.iter().any(|l| l.candidate == Some(*id) && l.worker == w.id)).map(|(_, c)| c.evaluation).collect();
        numbers.sort();
        assert_eq!(numbers, (1..=numbers.len()).collect::<Vec<_>>(), "worker {}'s evaluations have a gap or a repeat", w.id.0);
    }
    store
}

#[test]
fn two_workers_search_one_run_and_one_of_them_finishes_it() {
    let (_server, url, cache, dir) = setup("two");
    let (a_out, b_out) = (dir.path().join("a"), dir.path().join("b"));
    let a = optimize(cache.path(), &url, &a_out, &["--time", "30"]);
    let b = worker(cache.path(), &url, &b_out, &[]);
    let (a, b) = (finished(a, "ollie optimize"), finished(b, "ollie worker"));
    let mut store = check_nothing_lost(&url);
    let workers = store.workers(RunId(1)).unwrap();
    assert_eq!(workers.len(), 2);
    assert!(workers.iter().all(|w| w.evaluations > 0 && w.left_at.is_some()), "{workers:?}");
    // Exactly one ran the final phase, and the other says whose it is.
    let said = |o: &Output| String::from_utf8_lossy(&o.stdout).contains("the final phase is worker");
    assert!(said(&a) != said(&b), "a: {}\nb: {}", String::from_utf8_lossy(&a.stdout), String::from_utf8_lossy(&b.stdout));
    let (out, loser) = if said(&a) { (&b_out, WorkerId(1)) } else { (&a_out, WorkerId(2)) };
    let finisher = store.run(RunId(1)).unwrap().finisher.unwrap();
    assert!(!finisher.contains(&format!("worker {} ", loser.0)), "{finisher}");
    // Its report lists both workers' evaluations and names the host of the final phase.
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("## Workers") && report.contains(&format!("The final phase ran on {finisher}.")), "{report}");
    for w in &workers {
        assert!(report.contains(&format!("| {} | {} | {} | {} | {} |", w.id.0, w.host, w.pid, w.seed, w.evaluations)), "worker {} missing:\n{report}", w.id.0);
    }
    // `ollie runs` and `ollie report` read the server's store.
    let runs = ollie(cache.path(), &["runs", "--store", &url]).output().unwrap();
    assert!(String::from_utf8_lossy(&runs.stdout).contains("finished"), "{}", String::from_utf8_lossy(&runs.stderr));
    let rebuilt = dir.path().join("rebuilt");
    let report = ollie(cache.path(), &["report", rebuilt.to_str().unwrap(), "--store", &url]).output().unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    assert!(std::fs::read_to_string(rebuilt.join("report.md")).unwrap().contains("## Workers"));
}

#[test]
fn a_sigkilled_workers_candidate_is_taken_up_by_another() {
    let (_server, url, cache, dir) = setup("kill");
    let a = optimize(cache.path(), &url, &dir.path().join("a"), &["--time", "45", "--lease", "3"]);
    let mut b = worker(cache.path(), &url, &dir.path().join("b"), &["--lease", "3"]);
    // Killed while it holds a lease on a candidate it is judging, after a few verdicts.
    let mut held = None;
    wait_until(&url, "worker 2 to hold a lease after 3 verdicts", |store| {
        let leases = store.leases(RunId(1)).unwrap_or_default();
        let judged = leases.iter().filter(|l| l.worker == WorkerId(2) && l.candidate.is_some()).count();
        held = leases.iter().find(|l| l.worker == WorkerId(2) && l.candidate.is_none()).map(|l| l.id);
        judged >= 3 && held.is_some()
    });
    b.kill().unwrap(); // SIGKILL
    b.wait().unwrap();
    let held = held.unwrap();
    finished(a, "ollie optimize");
    let mut store = check_nothing_lost(&url);
    // The killed worker's lease was taken over, once, and judged by the survivor; (a round it had
    // drawn ahead may be among them too).
    let leases = store.leases(RunId(1)).unwrap();
    let Some(lease) = leases.iter().find(|l| l.id == held) else { panic!("the killed worker's lease {held} is gone: {leases:?}") };
    assert_eq!((lease.worker, lease.takeovers, lease.candidate.is_some()), (WorkerId(1), 1, true), "{leases:?}");
    let killed = store.worker(WorkerId(2)).unwrap();
    assert!(killed.left_at.is_none(), "a SIGKILLed worker never leaves");
    assert_eq!(store.run(RunId(1)).unwrap().finisher.as_deref().map(|f| f.starts_with("worker 1 ")), Some(true));
}

#[test]
fn a_server_restart_mid_search_loses_nothing() {
    let (server, url, cache, dir) = setup("restart");
    let a = optimize(cache.path(), &url, &dir.path().join("a"), &["--time", "40"]);
    wait_until(&url, "5 verdicts", |store| store.leases(RunId(1)).is_ok_and(|l| l.iter().filter(|l| l.candidate.is_some()).count() >= 5));
    server.stop();
    std::thread::sleep(Duration::from_secs(3));
    server.start_again();
    let out = finished(a, "ollie optimize across a server restart");
    assert!(String::from_utf8_lossy(&out.stdout).contains("speedup"), "{}", String::from_utf8_lossy(&out.stdout));
    let mut store = check_nothing_lost(&url);
    let before: usize = 5;
    assert!(store.workers(RunId(1)).unwrap()[0].evaluations > before, "nothing evaluated after the restart");
}

#[test]
fn a_worker_of_another_machine_class_refuses_to_join() {
    let (_server, url, cache, _dir) = setup("class");
    let mut store = Store::connect(&Location::Postgres(url.clone())).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let options = r#"{"time_seconds": 3600, "class": "Some Other CPU (avx512f, 64 threads)"}"#;
    let run = ollie_store::NewRun { spec_path: "examples/softmax.py".into(), spec_source: String::new(), kernel: "softmax".into(), options: options.into(), seed: 1, naive_seconds: 1e-3, floor_seconds: 1e-5 };
    store.create_run(&run, now).unwrap();
    let out = ollie(cache.path(), &["worker", "--store", &url]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("refusing to join run 1") && stderr.contains("Some Other CPU (avx512f, 64 threads)") && stderr.contains("test (avx2, 2 threads)"), "{stderr}");
    // A file is not a shared store.
    let out = ollie(cache.path(), &["worker", "--store", "ollie.db"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be a PostgreSQL server"));
}
