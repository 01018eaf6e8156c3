//! README's commands still parse: every `ollie …` line in README.md's code blocks (and `cargo run
//! -p ollie -- …`) runs with `--help` appended, so a renamed command or flag fails here rather
//! than for the reader. `--help` stops clap after the subcommand and the flags before it are read.

use std::path::Path;
use std::process::Command;

/// The argument lists after `ollie` of every command README's code blocks show, with their line.
fn readme_commands() -> Vec<(usize, Vec<String>)> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let mut out = Vec::new();
    let (mut fenced, mut pending, mut start) = (false, String::new(), 0);
    for (n, line) in readme.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            continue;
        }
        if pending.is_empty() {
            start = n + 1;
        }
        // A trailing backslash continues the command on the next line.
        match line.trim_end().strip_suffix('\\') {
            Some(head) => {
                pending.push_str(head);
                pending.push(' ');
                continue;
            }
            None => pending.push_str(line),
        }
        let text = std::mem::take(&mut pending);
        let Some(words) = shlex::split(&text) else { continue };
        let words: Vec<String> = words.into_iter().take_while(|w| !w.starts_with('#')).collect();
        // Each command of a pipeline or list, without its redirections.
        for command in words.split(|w| ["&&", "||", ";", "|"].contains(&w.as_str())) {
            let command: Vec<&String> = command.iter().take_while(|w| !w.starts_with('>') && !w.starts_with('<') && *w != "2>").collect();
            // `ollie ARGS` (after `srun`, `sudo`, ...) or `cargo run ... -p ollie -- ARGS`.
            let after = |word: &str| command.iter().position(|w| *w == word).map(|k| command[k + 1..].iter().map(|w| w.to_string()).collect::<Vec<_>>());
            let args = if command.first().is_some_and(|w| *w == "cargo") { after("--") } else { after("ollie") };
            if let Some(args) = args.filter(|a| !a.is_empty()) {
                out.push((start, args));
            }
        }
    }
    out
}

#[test]
fn every_command_readme_shows_parses() {
    let commands = readme_commands();
    // The quick start, the three single-kernel commands, workers, the LLM examples.
    assert!(commands.len() >= 10, "README's commands were not found: {commands:?}");
    let subcommands: Vec<&str> = commands.iter().map(|(_, a)| a[0].as_str()).collect();
    for expected in ["optimize", "worker", "lower", "check", "bench"] {
        assert!(subcommands.contains(&expected), "README shows no `ollie {expected}`: {subcommands:?}");
    }
    for (line, args) in &commands {
        let out = Command::new(env!("CARGO_BIN_EXE_ollie")).args(args).arg("--help").env_remove("OLLIE_STORE").output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("Usage:"),
            "README.md:{line}: `ollie {}` does not parse:\n{}{}",
            args.join(" "),
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
