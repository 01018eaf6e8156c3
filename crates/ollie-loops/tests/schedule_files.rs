//! Schedule primitives' text tests: each `test_data/schedule/NAME.sched` holds a loop nest, the
//! steps to apply (`--- steps`) and the nest they make or the error they give (`--- expected`).
//! The result must pass the checker and read back. `UPDATE_EXPECT=1` rewrites the expected part.

use std::path::Path;

use ollie_loops::{check, parse, Schedule};

/// What applying the file's steps gives, as text.
fn outcome(input: &str, steps: &str) -> String {
    let nest = parse(input).unwrap_or_else(|e| panic!("the input nest does not parse: {e}"));
    check(&nest).unwrap_or_else(|e| panic!("the input nest is invalid: {e}"));
    let schedule = Schedule::parse(steps).unwrap_or_else(|e| panic!("the steps do not parse: {e}"));
    match schedule.apply(&nest) {
        Ok(result) => {
            check(&result).unwrap_or_else(|e| panic!("the scheduled nest is invalid: {e}\n{result}"));
            let text = result.to_string();
            assert_eq!(parse(&text).unwrap(), result, "the scheduled nest does not read back:\n{text}");
            text
        }
        Err(e) => format!("error: {e}\n"),
    }
}

#[test]
fn schedule_primitives_make_the_expected_nests() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/schedule");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "sched")).collect();
    files.sort();
    assert!(files.len() >= 10, "the schedule tests are missing");
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let (head, expected) = text.split_once("--- expected\n").unwrap_or_else(|| panic!("{}: no `--- expected`", path.display()));
        let (input, steps) = head.split_once("--- steps\n").unwrap_or_else(|| panic!("{}: no `--- steps`", path.display()));
        let input: String = input.lines().filter(|l| !l.starts_with('#')).map(|l| format!("{l}\n")).collect();
        let got = outcome(&input, steps);
        if got != expected {
            if update {
                std::fs::write(&path, format!("{head}--- expected\n{got}")).unwrap();
            } else {
                failures.push(format!("{}:\n--- want\n{expected}--- got\n{got}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{} schedule tests differ (UPDATE_EXPECT=1 rewrites them):\n{}", failures.len(), failures.join("\n"));
}
