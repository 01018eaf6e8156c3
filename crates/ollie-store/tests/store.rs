//! The store keeps what was recorded across reopening, and reads back what it wrote, on both
//! backends: SQLite in a file and a real PostgreSQL server started for the test.

mod support;

use ollie_store::{Candidate, CandidateId, Counterexample, LlmCall, Location, NewRun, RunId, Sources, Step, Store, StoreError, TimingRecord, Work, WorkerId};

/// A step of a chain without a lease, its best and current as given.
fn step<'a>(candidate: &'a Candidate, counterexample: Option<&'a Counterexample>, best: Option<CandidateId>, elapsed_seconds: f64) -> Step<'a> {
    Step { candidate, counterexample, lease: None, best, current: best, elapsed_seconds }
}

fn candidate(evaluation: usize, accepted: bool) -> Candidate {
    Candidate {
        evaluation,
        source_hash: format!("hash{evaluation}"),
        source: format!("void k(void) {{ /* {evaluation} */ }}"),
        flags: "-O3".into(),
        schedule: "parallel i0\n".into(),
        // A variant's graph on every other candidate, none on the rest.
        graph: if evaluation.is_multiple_of(2) { format!("kernel k{evaluation}() {{}}") } else { String::new() },
        parent: None,
        proposer: "mutate".into(),
        at_seconds: evaluation as f64,
        accepted,
        reason: (!accepted).then(|| "inaccurate".to_string()),
        detail: (!accepted).then(|| "off by one".to_string()),
        timing: accepted.then_some(TimingRecord { estimate: 0.8e-3, seconds: 1e-3, p10: 0.9e-3, p90: 1.1e-3, ratio: 0.5, ratio_p10: 0.45, ratio_p90: 0.55,
            // Predicted or not, in a round measured whole or not, picked or not.
            predicted: (evaluation % 3 != 0).then_some(ollie_store::Prediction { log_time: 1.5, trained_on: evaluation as u64, round: (evaluation % 2 == 0).then_some(7), picked: evaluation % 4 == 0 }),
        }),
        moved: accepted,
        new_best: accepted,
    }
}

/// Runs `check` on a new SQLite store and on a new database of a PostgreSQL server.
fn on_both(check: impl Fn(&Location)) {
    let dir = tempfile::tempdir().unwrap();
    check(&Location::Sqlite(dir.path().join("ollie.db")));
    let server = support::postgres::Server::start();
    check(&Location::Postgres(server.database("ollie")));
}

#[test]
fn runs_and_candidates_survive_reopening() {
    on_both(runs_and_candidates_survive_reopening_at);
}

fn runs_and_candidates_survive_reopening_at(location: &Location) {
    let run = NewRun {
        spec_path: "softmax.py".into(),
        spec_source: "def softmax(x): ...".into(),
        kernel: "softmax".into(),
        options: "{}".into(),
        seed: u64::MAX - 3,
        naive_seconds: 2e-3,
        floor_seconds: 1e-4,
    };
    let (run_id, first) = {
        let mut store = Store::connect(location).unwrap();
        let id = store.create_run(&run, 1_700_000_000).unwrap();
        let worker = store.join(id, "here", 7).unwrap();
        let first = store.record(id, worker, &step(&candidate(1, true), None, None, 1.5)).unwrap();
        let cex = Counterexample { shapes: vec![vec![2, 3], vec![]], data: vec![vec![1.0, -2.0, 3.5, f64::NAN, 0.0, 1e-300], vec![7.0]] };
        store.record(id, worker, &step(&candidate(2, false), Some(&cex), Some(first), 2.5)).unwrap();
        (id, first)
    };
    let mut store = Store::connect(location).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    assert_eq!((r.id, &r.new, r.evaluations, r.elapsed_seconds, r.finished), (run_id, &run, 2, 2.5, false));
    let workers = store.workers(run_id).unwrap();
    assert_eq!(workers.len(), 1);
    let w = &workers[0];
    assert_eq!((w.host.as_str(), w.seed, w.evaluations, w.best, w.current, w.elapsed_seconds, w.left_at), ("here", 7, 2, Some(first), Some(first), 2.5, None));
    let candidates = store.candidates(run_id, Sources::All).unwrap();
    assert_eq!(candidates.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>(), vec![candidate(1, true), candidate(2, false)]);
    assert_eq!(candidates[0].0, first);
    assert!(candidates[1].0 > CandidateId(first.0));
    let cex = store.counterexamples(run_id).unwrap();
    assert_eq!(cex.len(), 1);
    assert_eq!(cex[0].shapes, vec![vec![2, 3], vec![]]);
    assert_eq!(cex[0].data[1], vec![7.0]);
    assert!(cex[0].data[0][3].is_nan() && cex[0].data[0][5] == 1e-300);
    // Asked for written kernels' sources only, a scheduled candidate's comes back empty.
    // Its source in blocks, some shared with the others' and some empty, reads back exactly.
    let written = Candidate { schedule: String::new(), source: format!("\n\n{}\n\n\n\nint x;\n\n", candidate(1, true).source), ..candidate(3, true) };
    store.record(run_id, workers[0].id, &step(&written, None, None, 2.75)).unwrap();
    let sources: Vec<String> = store.candidates(run_id, Sources::Written).unwrap().into_iter().map(|(_, c)| c.source).collect();
    assert_eq!(sources, vec![String::new(), String::new(), written.source]);
    store.finish(run_id, 3.0, "{\"speedup\": 2}").unwrap();
    let r = store.run(run_id).unwrap();
    assert_eq!((r.finished, r.elapsed_seconds, r.summary.as_deref()), (true, 3.0, Some("{\"speedup\": 2}")));
}

#[test]
fn llm_calls_keep_each_prompt_once_and_read_back_in_order() {
    on_both(llm_calls_keep_each_prompt_once_at);
}

fn llm_calls_keep_each_prompt_once_at(location: &Location) {
    let run = NewRun { spec_path: "s.py".into(), spec_source: String::new(), kernel: "k".into(), options: "{}".into(), seed: 1, naive_seconds: 1.0, floor_seconds: 0.1 };
    let call = |turn: u32, prompt: &str, outcome: &str| LlmCall {
        conversation: 7,
        turn,
        prompt_hash: format!("h-{prompt}"),
        prompt: prompt.into(),
        model: "m".into(),
        reply: (outcome != "timeout").then(|| "```c\n...\n```".to_string()),
        prompt_tokens: 100,
        completion_tokens: 20 * turn as u64,
        cost: Some(0.001),
        seconds: 1.5,
        attempts: 2,
        outcome: outcome.into(),
        detail: (outcome != "kernel").then(|| "why".to_string()),
        source_hash: (outcome == "kernel").then(|| "abc".to_string()),
        at_seconds: turn as f64,
    };
    let calls = vec![call(0, "[first]", "no-code"), call(1, "[first, repair]", "kernel"), call(0, "[first]", "timeout")];
    let id = {
        let mut store = Store::connect(location).unwrap();
        let id = store.create_run(&run, 0).unwrap();
        for c in &calls {
            store.record_llm_call(id, c).unwrap();
        }
        id
    };
    let mut store = Store::connect(location).unwrap();
    assert_eq!(store.llm_calls(id).unwrap(), calls);
    assert_eq!(store.table_rows().unwrap().iter().find(|(t, _)| *t == "prompts").map(|r| r.1), Some(2), "the repeated prompt is kept once");
}

fn new_run(store: &mut Store) -> RunId {
    let run = NewRun { spec_path: "k.py".into(), spec_source: "".into(), kernel: "k".into(), options: "{}".into(), seed: 1, naive_seconds: 1.0, floor_seconds: 0.1 };
    store.create_run(&run, 0).unwrap()
}

fn work(n: usize) -> Work {
    Work { schedule: format!("unroll i{n} 2\n"), graph: String::new(), flags: "-O3".into(), source: String::new() }
}

#[test]
fn a_lease_is_taken_over_once_it_expires_and_its_late_verdict_is_refused() {
    on_both(a_lease_is_taken_over_at);
}

fn a_lease_is_taken_over_at(location: &Location) {
    let mut store = Store::connect(location).unwrap();
    let run = new_run(&mut store);
    let (a, b) = (store.join(run, "a", 1).unwrap(), store.join(run, "b", 2).unwrap());
    // A lease held (and renewed) is not taken over; an expired one is, once.
    let held = store.lease(run, a, &work(1), 60.0).unwrap();
    let lost = store.lease(run, a, &work(2), 0.5).unwrap();
    assert_eq!(store.take_over(run, b, 60.0).unwrap(), None);
    std::thread::sleep(std::time::Duration::from_millis(700));
    assert_eq!(store.renew(a, 60.0).unwrap(), 1, "only the unexpired lease is renewed");
    let (taken, what) = store.take_over(run, b, 60.0).unwrap().expect("the expired lease");
    assert_eq!((taken.id, what), (lost.id, work(2)));
    assert_ne!(taken.token, lost.token);
    assert_eq!(store.take_over(run, b, 60.0).unwrap(), None, "taken over once");
    // The old holder's verdict is refused and writes nothing; the new holder's is written.
    let judged = candidate(1, true);
    let late = Step { lease: Some(lost), ..step(&judged, None, None, 1.0) };
    assert!(matches!(store.record(run, a, &late), Err(StoreError::LeaseLost(id)) if id == lost.id));
    assert!(store.candidates(run, Sources::All).unwrap().is_empty());
    let id = store.record(run, b, &Step { lease: Some(taken), ..step(&judged, None, None, 1.0) }).unwrap();
    // A verdict is written once per lease: the same lease again is refused.
    assert!(matches!(store.record(run, b, &Step { lease: Some(taken), ..step(&judged, None, None, 1.0) }), Err(StoreError::LeaseLost(_))));
    store.record(run, a, &Step { lease: Some(held), ..step(&candidate(2, false), None, None, 2.0) }).unwrap();
    let leases = store.leases(run).unwrap();
    assert_eq!(leases.iter().map(|l| (l.worker, l.takeovers, l.candidate.is_some())).collect::<Vec<_>>(), vec![(a, 0, true), (b, 1, true)]);
    assert_eq!(leases[1].candidate, Some(id));
    // A worker that leaves gives up the leases it holds unjudged.
    store.lease(run, a, &work(3), 60.0).unwrap();
    store.leave(a).unwrap();
    assert_eq!(store.leases(run).unwrap().len(), 2);
    assert!(store.worker(a).unwrap().left_at.is_some());
    // The final phase is claimed once.
    assert_eq!(store.claim_finish(run, "worker 2 on b").unwrap(), None);
    assert_eq!(store.claim_finish(run, "worker 1 on a").unwrap().as_deref(), Some("worker 2 on b"));
    assert_eq!(store.run(run).unwrap().finisher.as_deref(), Some("worker 2 on b"));
    let _: WorkerId = b;
}

#[test]
fn a_write_waits_out_a_server_restart() {
    let server = support::postgres::Server::start();
    let location = Location::Postgres(server.database("ollie"));
    let mut store = Store::connect(&location).unwrap();
    let run = new_run(&mut store);
    let worker = store.join(run, "a", 1).unwrap();
    store.record(run, worker, &step(&candidate(1, true), None, None, 1.0)).unwrap();
    server.stop();
    let restarting = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(2));
        server.start_again();
        server
    });
    // Written once the server is back, on a new connection.
    store.record(run, worker, &step(&candidate(2, false), None, None, 2.0)).unwrap();
    let _server = restarting.join().unwrap();
    assert_eq!(store.candidates(run, Sources::All).unwrap().len(), 2);
}
