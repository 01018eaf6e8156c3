//! `ollie model`: what the cost model of this machine class has learnt from, and how well it
//! ranked each search it started.

use std::fmt::Write;

use ollie_driver::training;
use ollie_driver::workers;

use crate::{stdout, Failure};

pub fn run() -> Result<(), Failure> {
    let (machine, _, _) = ollie_driver::setup::machine_ceilings(false, &Default::default())?;
    let class = workers::machine_class(&machine);
    let records = training::records(&class);
    let mut t = String::new();
    let timings: usize = records.iter().map(|r| r.timings).sum();
    writeln!(t, "cost model of {class}: {timings} timings from {} searches, kept in {}", records.len(), training::directory(&class).display()).unwrap();
    if records.is_empty() {
        writeln!(t, "no search has timed a kernel on this machine class yet: the first search's model learns from its own timings alone").unwrap();
        return stdout(&t);
    }
    writeln!(t, "each search ranked by a model fitted on the searches before it (accuracy over the pairs of its timings that their noise tells apart):").unwrap();
    writeln!(t, "{:>6}  {:<28} {:>8} {:>10} {:>8} {:>9} {:>10}", "search", "spec", "timings", "fitted on", "pairs", "accuracy", "roofline").unwrap();
    let share = |a: Option<f64>| a.map_or("-".to_string(), |a| format!("{:.0}%", 100.0 * a));
    for (k, r) in records.iter().enumerate() {
        let (fitted, pairs, accuracy) = match &r.model {
            Some(m) => (m.trained_on.to_string(), m.pairs.to_string(), share(m.pairwise_accuracy)),
            None => ("-".into(), r.roofline.1.to_string(), "-".into()),
        };
        writeln!(t, "{:>6}  {:<28} {:>8} {:>10} {:>8} {:>9} {:>10}", k + 1, r.spec, r.timings, fitted, pairs, accuracy, share(r.roofline.0)).unwrap();
    }
    let judged: Vec<(f64, usize)> = records.iter().filter_map(|r| r.model.as_ref().and_then(|m| Some((m.pairwise_accuracy?, m.pairs)))).collect();
    let pairs: usize = judged.iter().map(|j| j.1).sum();
    if pairs > 0 {
        let accuracy = judged.iter().map(|(a, p)| a * *p as f64).sum::<f64>() / pairs as f64;
        writeln!(t, "over {} searches: {:.0}% of {pairs} pairs ordered right (\"roofline\": the estimate alone, unlearnt)", judged.len(), 100.0 * accuracy).unwrap();
    }
    stdout(&t)
}
