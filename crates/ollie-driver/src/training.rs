//! The cost model's timings kept across searches: every search writes the kernels it times (their
//! features and time over the work's floor) to a file of its own in ollie's cache, under its
//! machine class, and every later search on that class starts its model from the latest of
//! them. They never leave the class they were measured on.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use ollie_runner::{Floor, Machine};
use ollie_search::cost_model::{held_out, pairwise, replay, HeldOut, Timed, FEATURES, PRIOR};
use ollie_search::physics::Roof;
use ollie_search::Target;
use serde::{Deserialize, Serialize};

/// Files kept per machine class beyond those the latest [`PRIOR`] timings come from.
const SPARE_FILES: usize = 8;

/// The first line of a search's file.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    class: String,
    spec: String,
    features: Vec<String>,
}

/// One timing: features, the natural log of its time over the floor, and its noise bounds.
#[derive(Debug, Serialize, Deserialize)]
struct Line {
    f: Vec<f64>,
    t: f64,
    lo: f64,
    hi: f64,
}

/// Where one machine class's timings are kept.
pub fn directory(class: &str) -> PathBuf {
    ollie_runner::cache_root().join("model").join(crate::stored::hash(class, &[]))
}

/// The machine and the work as the cost model's roofline estimate sees them.
pub fn roof(machine: &Machine, floor: &Floor, target: &Target) -> Roof {
    let all = machine.ceilings.last();
    let one = machine.ceilings.first();
    let threads = all.map_or(1, |c| c.threads) as f64;
    // The triad on the smallest cache-resident arrays, one thread.
    let cache = machine.cache_bandwidth.first().and_then(|c| c.gbs.first()).copied().unwrap_or(0.0) * 1e9;
    let memory = all.map_or(0.0, |c| c.bandwidth_gbs) * 1e9;
    Roof {
        threads,
        lanes: f64::from(target.lanes),
        peak_flops_per_thread: all.map_or(0.0, |c| c.peak_gflops) * 1e9 / threads,
        memory_bandwidth: memory,
        memory_bandwidth_one: one.map_or(memory, |c| c.bandwidth_gbs * 1e9),
        cache_bandwidth: if cache > 0.0 { cache } else { 4.0 * memory },
        l1_bytes: target.caches.map_or(32768.0, |c| c.l1d_bytes as f64),
        l2_bytes: target.caches.map_or(1048576.0, |c| c.l2_bytes as f64),
        last_level_bytes: machine.last_level_cache_bytes as f64,
        floor_seconds: floor.seconds,
        flops: floor.flops,
        bytes: floor.bytes,
    }
}

/// A search's timings kept by earlier searches on this class, the latest [`PRIOR`] of them in
/// the order they were written (each search numbered by its file's place), and how many
/// searches they come from. Files written with other features are skipped; files beyond those
/// needed, the oldest first, deleted.
pub fn prior(class: &str) -> (Vec<Timed>, usize) {
    prior_in(&directory(class), class)
}

fn prior_in(dir: &Path, class: &str) -> (Vec<Timed>, usize) {
    let files = files(dir);
    let mut kept: Vec<Vec<Timed>> = Vec::new();
    let mut rows = 0;
    let mut used = 0;
    for (k, path) in files.iter().enumerate().rev() {
        if rows >= PRIOR {
            if files.len() - k > used + SPARE_FILES {
                let _ = std::fs::remove_file(path);
            }
            continue;
        }
        used += 1;
        if let Some((_, timed)) = read(path, class, k as u64) {
            rows += timed.len();
            kept.push(timed);
        }
    }
    let searches = kept.iter().filter(|t| !t.is_empty()).count();
    let mut all: Vec<Timed> = kept.into_iter().rev().flatten().collect();
    all.drain(..all.len().saturating_sub(PRIOR));
    (all, searches)
}

/// Every search's timings on this class, each with its spec's name, oldest first (for `ollie
/// model`).
pub fn searches(class: &str) -> Vec<(String, Vec<Timed>)> {
    files(&directory(class)).iter().enumerate().filter_map(|(k, p)| read(p, class, k as u64)).filter(|(_, t)| !t.is_empty()).collect()
}

/// A class's files, oldest first (their names start with the time they were created).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).map(|d| d.filter_map(|e| Some(e.ok()?.path())).filter(|p| p.extension().is_some_and(|e| e == "jsonl")).collect()).unwrap_or_default();
    files.sort();
    files
}

/// A file's spec and timings, if it was written on `class` with today's features (a torn last
/// line, from a search killed while writing, is skipped).
fn read(path: &Path, class: &str, search: u64) -> Option<(String, Vec<Timed>)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let header: Header = serde_json::from_str(lines.next()?).ok()?;
    if header.class != class || header.features.iter().map(String::as_str).ne(FEATURES.iter().copied()) {
        return None;
    }
    let timed = lines
        .filter_map(|l| serde_json::from_str::<Line>(l).ok())
        .filter(|l| l.f.len() == FEATURES.len() && l.t.is_finite())
        .map(|l| Timed { features: l.f, log_time: l.t, log_low: l.lo, log_high: l.hi, search })
        .collect();
    Some((header.spec, timed))
}

/// This search's file, written a line a timing, up to [`PRIOR`] lines (a long search's later
/// timings are its chain's neighbourhood: the model learns little more from them).
pub struct Writer {
    file: Option<std::fs::File>,
    written: usize,
}

impl Writer {
    /// A new file for a search of `spec` on `class`; on any failure to create it, a writer that
    /// writes nothing (the search goes on; its timings are only not kept).
    pub fn create(class: &str, spec: &str) -> Writer {
        Writer::create_in(&directory(class), class, spec)
    }

    fn create_in(dir: &Path, class: &str, spec: &str) -> Writer {
        let name = format!("{:020}-{}.jsonl", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()), std::process::id());
        let header = Header { class: class.into(), spec: spec.into(), features: FEATURES.iter().map(|s| s.to_string()).collect() };
        let file = std::fs::create_dir_all(&dir).and_then(|_| std::fs::File::create(dir.join(name))).and_then(|mut f| {
            writeln!(f, "{}", serde_json::to_string(&header).expect("serializable"))?;
            Ok(f)
        });
        match file {
            Ok(f) => Writer { file: Some(f), written: 0 },
            Err(e) => {
                tracing::warn!("the cost model's timings will not be kept for later searches: {e}");
                Writer::none()
            }
        }
    }

    /// A writer that keeps nothing.
    pub fn none() -> Writer {
        Writer { file: None, written: 0 }
    }

    pub fn write(&mut self, timed: &Timed) {
        if self.written >= PRIOR {
            return;
        }
        let Some(f) = self.file.as_mut() else { return };
        let line = Line { f: timed.features.clone(), t: timed.log_time, lo: timed.log_low, hi: timed.log_high };
        if let Err(e) = writeln!(f, "{}", serde_json::to_string(&line).expect("serializable")) {
            tracing::warn!("writing the cost model's timings: {e}");
            self.file = None;
        }
        self.written += 1;
    }
}

/// One earlier search as `ollie model` shows it: its spec, its timings, and how a model fitted
/// on the searches before it (the latest [`PRIOR`] of their timings, as a search starts with)
/// ranked them — alone, and replayed as the search ran (learning its own timings as they came)
/// — beside the roofline's estimate alone.
#[derive(Debug, Clone)]
pub struct SearchRecord {
    pub spec: String,
    pub timings: usize,
    pub model: Option<HeldOut>,
    /// [`replay`]: pairwise accuracy and pairs.
    pub replayed: (Option<f64>, usize),
    /// The roofline's estimate alone: pairwise accuracy and pairs.
    pub roofline: (Option<f64>, usize),
}

/// Every search kept on `class`, oldest first, each judged as the model that started it would
/// have ranked it.
pub fn records(class: &str) -> Vec<SearchRecord> {
    let searches = searches(class);
    let mut before: Vec<Timed> = Vec::new();
    searches
        .into_iter()
        .map(|(spec, timed)| {
            let earlier = &before[before.len().saturating_sub(PRIOR)..];
            let model = held_out(earlier, &timed);
            let estimates: Vec<f64> = timed.iter().map(|t| t.features[0]).collect();
            let record = SearchRecord { spec, timings: timed.len(), model, replayed: replay(earlier, &timed), roofline: pairwise(&estimates, &timed) };
            before.extend(timed);
            record
        })
        .collect()
}

/// `ollie model`'s text: what the class's model holds, and [`records`] as a table.
pub fn summary(class: &str) -> String {
    let records = records(class);
    let mut t = String::new();
    let timings: usize = records.iter().map(|r| r.timings).sum();
    writeln!(t, "cost model of {class}: {timings} timings from {} searches, kept in {}", records.len(), directory(class).display()).unwrap();
    if records.is_empty() {
        writeln!(t, "no search has timed a kernel on this machine class yet: the first search's model learns from its own timings alone").unwrap();
        return t;
    }
    writeln!(t, "each search ranked by a model fitted on the searches before it (accuracy over the pairs of its timings that their noise tells apart);").unwrap();
    writeln!(t, "\"replayed\": that model predicting each timing before learning it, as the search ran; \"roofline\": the estimate alone, unlearnt").unwrap();
    writeln!(t, "{:>6}  {:<28} {:>8} {:>10} {:>8} {:>9} {:>9} {:>9}", "search", "spec", "timings", "fitted on", "pairs", "accuracy", "replayed", "roofline").unwrap();
    let share = |a: Option<f64>| a.map_or("-".to_string(), |a| format!("{:.0}%", 100.0 * a));
    for (k, r) in records.iter().enumerate() {
        let (fitted, pairs, accuracy) = match &r.model {
            Some(m) => (m.trained_on.to_string(), m.pairs.to_string(), share(m.pairwise_accuracy)),
            None => ("-".into(), r.roofline.1.to_string(), "-".into()),
        };
        writeln!(t, "{:>6}  {:<28} {:>8} {:>10} {:>8} {:>9} {:>9} {:>9}", k + 1, r.spec, r.timings, fitted, pairs, accuracy, share(r.replayed.0), share(r.roofline.0)).unwrap();
    }
    // Accuracies over several searches, weighed by their pairs.
    let overall = |judged: Vec<(f64, usize)>| {
        let pairs: usize = judged.iter().map(|j| j.1).sum();
        (pairs > 0).then(|| (judged.len(), judged.iter().map(|(a, p)| a * *p as f64).sum::<f64>() / pairs as f64, pairs))
    };
    if let Some((searches, accuracy, pairs)) = overall(records.iter().filter_map(|r| r.model.as_ref().and_then(|m| Some((m.pairwise_accuracy?, m.pairs)))).collect()) {
        writeln!(t, "over {searches} searches: {:.0}% of {pairs} pairs ordered right", 100.0 * accuracy).unwrap();
    }
    if let Some((searches, accuracy, pairs)) = overall(records.iter().filter_map(|r| Some((r.replayed.0?, r.replayed.1))).collect()) {
        writeln!(t, "replayed, over {searches} searches: {:.0}% of {pairs} pairs ordered right", 100.0 * accuracy).unwrap();
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(t: f64) -> Timed {
        Timed { features: vec![t; FEATURES.len()], log_time: t, log_low: t - 0.1, log_high: t + 0.1, search: 0 }
    }

    #[test]
    fn later_searches_read_what_earlier_ones_wrote_on_their_class_with_todays_features() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = Writer::create_in(dir.path(), "cpu (avx2, 2 threads)", "softmax");
        (0..3).for_each(|k| first.write(&timed(f64::from(k))));
        drop(first);
        // Another class's file in the same folder, and one written with other features: unread.
        std::fs::write(dir.path().join("0-other.jsonl"), "{\"class\":\"other\",\"spec\":\"x\",\"features\":[]}\n").unwrap();
        std::fs::write(dir.path().join("1-old.jsonl"), "{\"class\":\"cpu (avx2, 2 threads)\",\"spec\":\"x\",\"features\":[\"loads\"]}\n{\"f\":[1.0],\"t\":1.0,\"lo\":1.0,\"hi\":1.0}\n").unwrap();
        let mut second = Writer::create_in(dir.path(), "cpu (avx2, 2 threads)", "layernorm");
        second.write(&timed(7.0));
        // A torn last line (a search killed while writing) is skipped.
        second.file.as_mut().unwrap().write_all(b"{\"f\":[1.0,").unwrap();
        drop(second);
        let (prior, searches) = prior_in(dir.path(), "cpu (avx2, 2 threads)");
        assert_eq!(searches, 2);
        assert_eq!(prior.iter().map(|t| t.log_time).collect::<Vec<_>>(), [0.0, 1.0, 2.0, 7.0], "oldest first");
        assert!(prior[2].search < prior[3].search, "numbered by search");
        assert_eq!(prior[0].features.len(), FEATURES.len());
    }
}
