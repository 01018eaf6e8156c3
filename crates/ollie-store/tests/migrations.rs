//! Stores written by earlier schemas open, migrated to the current one with what they held; a
//! store from a newer ollie is refused untouched.

mod support;

use ollie_store::{Candidate, Location, Sources, Step, Store, StoreError, SCHEMA_VERSION};

#[test]
fn a_store_written_before_schema_versions_opens_with_everything_it_held() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ollie.db");
    rusqlite::Connection::open(&path).unwrap().execute_batch(include_str!("data/unversioned.sql")).unwrap();
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.version().unwrap(), SCHEMA_VERSION);
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!((run.new.kernel.as_str(), run.new.seed, run.evaluations, run.elapsed_seconds), ("softmax", 42, 1, 12.5));
    let candidates = store.candidates(run.id, Sources::All).unwrap();
    assert_eq!(candidates.iter().map(|(_, c)| (c.proposer.as_str(), c.accepted, c.reason.as_deref())).collect::<Vec<_>>(), vec![("naive", true, None), ("mutate", false, Some("inaccurate"))]);
    assert!(candidates[0].1.source.contains("void softmax("), "a version-1 row's source: {:?}", candidates[0].1.source);
    assert_eq!(store.counterexamples(run.id).unwrap()[0].shapes, vec![Vec::<usize>::new()]);
    // And it takes new evaluations as a new store does.
    let next = Candidate { evaluation: 2, source_hash: "cccc".into(), parent: Some(candidates[0].0), ..candidates[1].1.clone() };
    // Its chain became the run's one worker, which goes on.
    let workers = store.workers(run.id).unwrap();
    assert_eq!(workers.iter().map(|w| (w.evaluations, w.best, w.current)).collect::<Vec<_>>(), vec![(1, Some(candidates[0].0), Some(candidates[0].0))]);
    store.record(run.id, workers[0].id, &Step { candidate: &next, counterexample: None, lease: None, best: None, current: None, elapsed_seconds: 20.0 }).unwrap();
    drop(store);
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.candidates(run.id, Sources::All).unwrap().len(), 3);
    assert_eq!(store.run(run.id).unwrap().evaluations, 2);
}

#[test]
fn a_store_from_a_newer_ollie_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ollie.db");
    drop(Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE ollie_schema SET version = ?1", [SCHEMA_VERSION + 1]).unwrap();
    drop(conn);
    match Store::open(&path) {
        Err(StoreError::Newer { found, known }) => assert_eq!((found, known), (SCHEMA_VERSION + 1, SCHEMA_VERSION)),
        other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
    }
    let version: i64 = rusqlite::Connection::open(&path).unwrap().query_row("SELECT version FROM ollie_schema", [], |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION + 1);
}

#[test]
fn processes_opening_one_new_postgresql_store_at_once_migrate_it_once() {
    let server = support::postgres::Server::start();
    let url = server.database("race");
    let opened: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || Store::connect(&Location::Postgres(url)).map(|mut s| s.version().unwrap()))
        })
        .collect();
    for t in opened {
        assert_eq!(t.join().unwrap().unwrap(), SCHEMA_VERSION);
    }
    let mut store = Store::connect(&Location::Postgres(url)).unwrap();
    assert_eq!(store.table_rows().unwrap().iter().find(|(t, _)| *t == "ollie_schema").map(|r| r.1), Some(1));
}
