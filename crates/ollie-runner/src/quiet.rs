//! Quiet while a kernel is timed: compilers running in the background (the next candidates'
//! builds) are stopped with `SIGSTOP` to their process groups for the length of each call of a
//! timing session, and continued after it, so that a timed call has the machine to itself while
//! compiling overlaps everything else. The time spent stopped does not count against a
//! compiler's time limit.

use std::sync::Mutex;
use std::time::{Duration, Instant};

struct State {
    /// Process groups of the compilers running now.
    groups: Vec<i32>,
    /// Quiet periods in progress (one, unless timings ever nest), and since when.
    depth: usize,
    since: Option<Instant>,
    /// Time spent quiet before the period in progress.
    total: Duration,
}

static STATE: Mutex<State> = Mutex::new(State { groups: Vec::new(), depth: 0, since: None, total: Duration::ZERO });

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

fn signal(group: i32, signal: i32) {
    // SAFETY: a signal to a process group one of our compilers leads.
    unsafe { libc::kill(-group, signal) };
}

/// A compiler's process group, stopped whenever a timed call runs (at once, if one is running)
/// until it is dropped.
pub(crate) struct Registered(i32);

impl Registered {
    pub(crate) fn new(group: i32) -> Registered {
        let mut s = state();
        s.groups.push(group);
        if s.depth > 0 {
            signal(group, libc::SIGSTOP);
        }
        Registered(group)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut s = state();
        s.groups.retain(|&g| g != self.0);
    }
}

/// Time spent quiet since the process began: a compiler's time limit leaves it out.
pub(crate) fn quiet_so_far() -> Duration {
    let s = state();
    s.total + s.since.map_or(Duration::ZERO, |t| t.elapsed())
}

/// Compilers stopped until this is dropped.
pub(crate) struct Quiet(());

impl Quiet {
    pub(crate) fn begin() -> Quiet {
        let mut s = state();
        if s.depth == 0 {
            s.since = Some(Instant::now());
            s.groups.iter().for_each(|&g| signal(g, libc::SIGSTOP));
        }
        s.depth += 1;
        Quiet(())
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        let mut s = state();
        s.depth -= 1;
        if s.depth == 0 {
            s.groups.iter().for_each(|&g| signal(g, libc::SIGCONT));
            if let Some(t) = s.since.take() {
                s.total += t.elapsed();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// The state letter of process `pid` in `/proc/pid/stat` (`T`: stopped).
    fn state_of(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        stat[stat.rfind(')').unwrap() + 2..].chars().next().unwrap()
    }

    /// The state of `pid` once it is `want` (`is`) or is not (`!is`), polling up to 5 s: a
    /// process in an uninterruptible wait (`D`: its program still being read from disk under
    /// load) takes a signal only when the wait ends.
    fn settled(pid: u32, want: char, is: bool) -> char {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let s = state_of(pid);
            if (s == want) == is || std::time::Instant::now() > deadline {
                return s;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_registered_group_is_stopped_while_quiet_and_the_time_is_counted() {
        // A busy process standing for a compiler, in a process group of its own.
        let mut child = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).process_group(0).spawn().unwrap();
        let pid = child.id();
        let registered = Registered::new(pid as i32);
        let before = quiet_so_far();
        let quiet = Quiet::begin();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(settled(pid, 'T', true), 'T', "stopped while quiet");
        drop(quiet);
        assert_ne!(settled(pid, 'T', false), 'T', "continued after");
        assert!(quiet_so_far() - before >= Duration::from_millis(50));
        // Registered while quiet: stopped at once.
        let quiet = Quiet::begin();
        drop(registered);
        let registered = Registered::new(pid as i32);
        assert_eq!(settled(pid, 'T', true), 'T', "stopped when registered while quiet");
        drop(quiet);
        drop(registered);
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
