//! What a search tried, for the report: what each sketch rule did to the naive nest, what
//! rewriting found, and what became of each proposer's candidates — so that a result that is
//! the naive kernel says whether nothing applied or everything lost.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ollie_search::{Rule, RuleNote, RuleVerdict};
use ollie_store::Candidate;
use serde::{Deserialize, Serialize};

/// What algebraic rewriting found, as the run stored it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Rewriting {
    /// How often each rule added something to the e-graph, for the rules that did.
    pub fired: Vec<(String, usize)>,
    /// Graphs equal to the spec's and different from it.
    pub variants: usize,
    /// The cheapest variant's modelled cost as a share of the spec's.
    pub cheapest: Option<f64>,
}

impl Rewriting {
    pub fn of(r: &ollie_rewrite::Rewritten) -> Rewriting {
        Rewriting {
            fired: r.fired.iter().map(|&(name, n)| (name.to_string(), n)).collect(),
            variants: r.variants.len(),
            cheapest: r.variants.first().map(|v| v.cost / r.original_cost),
        }
    }

    fn line(&self) -> String {
        let fired = if self.fired.is_empty() { "no rule matched the graph".to_string() } else { format!("rules fired: {}", self.fired.iter().map(|(n, k)| format!("{n} {k}")).collect::<Vec<_>>().join(", ")) };
        match self.cheapest {
            Some(share) => format!("{} graph(s) equal to the spec's, the cheapest at {:.3} of its modelled cost ({fired})", self.variants, share),
            None => format!("no graph equal to the spec's and different from it ({fired})"),
        }
    }
}

/// What became of one proposer's candidates.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Verdicts {
    #[serde(rename = "name")]
    pub proposer: String,
    pub evaluations: usize,
    /// New bests of the chain.
    pub improvements: usize,
    /// Timed faster than the naive kernel (on the chain's scale).
    pub faster: usize,
    /// Timed, but not faster than the naive kernel.
    pub slower: usize,
    /// Rejected, by reason (a candidate declined as slower than the chain's current one counts
    /// as timed, above).
    pub rejected: BTreeMap<String, usize>,
    /// Its fastest timed candidate's time over the naive kernel's.
    pub fastest: Option<f64>,
}

/// Each proposer's verdicts over `history`, in order of first appearance; the naive kernel's
/// time is `naive`.
pub fn verdicts<'a>(history: impl IntoIterator<Item = &'a Candidate>, naive: f64) -> Vec<Verdicts> {
    let mut rows: Vec<Verdicts> = Vec::new();
    for c in history.into_iter().filter(|c| c.proposer != "naive") {
        let at = match rows.iter().position(|r| r.proposer == c.proposer) {
            Some(at) => at,
            None => {
                rows.push(Verdicts { proposer: c.proposer.clone(), ..Verdicts::default() });
                rows.len() - 1
            }
        };
        let row = &mut rows[at];
        row.evaluations += 1;
        row.improvements += c.new_best as usize;
        let timed = c.timing.filter(|_| c.reason.is_none() || c.reason.as_deref() == Some(crate::verdict::Reason::Slower.code()));
        match (timed, &c.reason) {
            (Some(t), _) => {
                let ratio = t.estimate / naive;
                if ratio < 1.0 {
                    row.faster += 1;
                } else {
                    row.slower += 1;
                }
                row.fastest = Some(row.fastest.map_or(ratio, |f: f64| f.min(ratio)));
            }
            (None, Some(reason)) => *row.rejected.entry(reason.clone()).or_default() += 1,
            (None, None) => {}
        }
    }
    rows
}

/// Whether any rule changed the naive nest.
fn any_applied(rules: &[RuleNote]) -> bool {
    rules.iter().any(|n| n.verdict == RuleVerdict::Applied)
}

/// Why the result is the naive kernel, in a sentence: nothing applied, or everything lost (and
/// how), or a candidate faster in the search lost in the final phase.
pub fn why_naive(rules: &[RuleNote], rewriting: Option<&Rewriting>, verdicts: &[Verdicts]) -> String {
    let judged: usize = verdicts.iter().map(|v| v.evaluations).sum();
    let faster: usize = verdicts.iter().map(|v| v.faster).sum();
    let slower: usize = verdicts.iter().map(|v| v.slower).sum();
    let mut rejected: BTreeMap<&str, usize> = BTreeMap::new();
    for v in verdicts {
        for (k, n) in &v.rejected {
            *rejected.entry(k).or_default() += n;
        }
    }
    let rejected_text = if rejected.is_empty() { "none rejected".to_string() } else { format!("{} rejected ({})", rejected.values().sum::<usize>(), rejected.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ")) };
    let fastest = verdicts.iter().filter_map(|v| v.fastest).fold(f64::INFINITY, f64::min);
    let rewrites = rewriting.is_some_and(|r| r.variants > 0);
    if judged == 0 {
        return "no candidate was judged: the search stopped before its first evaluation (the budget ran out, or the naive kernel met the roofline target)".to_string();
    }
    let lead = if !any_applied(rules) && !rewrites {
        "nothing applies: no sketch rule changed the naive loop nest and rewriting found no other graph, so only random mutations were tried"
    } else if faster > 0 {
        "a candidate timed faster than the naive kernel during the search lost in the final phase (slower in the final timing, or rejected on re-verification)"
    } else {
        "everything lost: rules applied, and every kernel they led to was slower than the naive kernel or rejected"
    };
    let timed = if fastest.is_finite() { format!("{} timed, the fastest at {fastest:.2}x the naive kernel's time", faster + slower) } else { "none timed".to_string() };
    format!("{lead}; of {judged} candidates, {timed}; {rejected_text}")
}

/// Items of one verdict shown per rule before "and N more".
const SHOWN: usize = 6;

/// The report's section on what was tried.
pub fn markdown(rules: &[RuleNote], rewriting: Option<&Rewriting>, verdicts: &[Verdicts]) -> String {
    let mut md = String::from("## What was tried\n\n");
    if !rules.is_empty() {
        md.push_str("What each sketch rule did to the naive loop nest (`ollie lower SPEC --rules` prints it):\n\n");
        for rule in Rule::ALL {
            let of = |verdict: RuleVerdict| rules.iter().filter(|n| n.rule == rule && n.verdict == verdict).map(|n| n.what.as_str()).collect::<Vec<_>>();
            let mut parts = Vec::new();
            for (verdict, label) in [(RuleVerdict::Applied, "applied"), (RuleVerdict::Declined, "declined"), (RuleVerdict::NoMatch, "nothing to apply to")] {
                let items = of(verdict);
                if items.is_empty() {
                    continue;
                }
                let more = if items.len() > SHOWN { format!("; and {} more", items.len() - SHOWN) } else { String::new() };
                parts.push(format!("{label}: {}{more}", items[..items.len().min(SHOWN)].join("; ")));
            }
            writeln!(md, "- **{}** {}", rule.name(), parts.join(". ")).unwrap();
        }
        md.push('\n');
    }
    if let Some(r) = rewriting {
        writeln!(md, "Rewriting: {}.\n", r.line()).unwrap();
    }
    md.push_str("| proposer | evaluations | improvements | faster than naive | slower | rejected | fastest (x naive's time) |\n|---|---|---|---|---|---|---|\n");
    for v in verdicts {
        let rejected = if v.rejected.is_empty() { "0".to_string() } else { v.rejected.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ") };
        let fastest = v.fastest.map_or("-".to_string(), |f| format!("{f:.3}"));
        writeln!(md, "| {} | {} | {} | {} | {} | {rejected} | {fastest} |", v.proposer, v.evaluations, v.improvements, v.faster, v.slower).unwrap();
    }
    md.push('\n');
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use ollie_store::TimingRecord;

    fn candidate(proposer: &str, estimate: Option<f64>, reason: Option<&str>) -> Candidate {
        Candidate {
            evaluation: 1,
            source_hash: String::new(),
            source: String::new(),
            flags: String::new(),
            schedule: String::new(),
            graph: String::new(),
            parent: None,
            proposer: proposer.into(),
            at_seconds: 0.0,
            accepted: reason.is_none(),
            reason: reason.map(String::from),
            detail: None,
            timing: estimate.map(|e| TimingRecord { estimate: e, seconds: e, p10: e, p90: e, ratio: 1.0, ratio_p10: 1.0, ratio_p90: 1.0, predicted: None }),
            moved: false,
            new_best: false,
        }
    }

    fn note(rule: Rule, verdict: RuleVerdict) -> RuleNote {
        RuleNote { rule, verdict, what: "x".into() }
    }

    #[test]
    fn verdicts_count_timed_candidates_against_the_naive_kernel_and_rejections_by_reason() {
        let history = [candidate("naive", Some(1.0), None), candidate("sketch", Some(0.5), None), candidate("sketch", Some(2.0), Some("slower")), candidate("sketch", None, Some("inaccurate")), candidate("mutate", None, Some("compile-error"))];
        let v = verdicts(&history, 1.0);
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].proposer.as_str(), v[0].evaluations, v[0].faster, v[0].slower, v[0].fastest), ("sketch", 3, 1, 1, Some(0.5)));
        assert_eq!(v[0].rejected.get("inaccurate"), Some(&1));
        assert_eq!((v[1].evaluations, v[1].fastest, v[1].rejected.get("compile-error")), (1, None, Some(&1)));
    }

    #[test]
    fn the_naive_kernel_kept_says_nothing_applied_apart_from_everything_lost() {
        let lost = [candidate("sketch", Some(1.5), Some("slower")), candidate("mutate", None, Some("inaccurate"))];
        let none = [note(Rule::Fuse, RuleVerdict::NoMatch), note(Rule::Threads, RuleVerdict::Declined)];
        let some = [note(Rule::Fuse, RuleVerdict::Applied)];
        let nothing = why_naive(&none, Some(&Rewriting::default()), &verdicts(&lost, 1.0));
        assert!(nothing.starts_with("nothing applies"), "{nothing}");
        let everything = why_naive(&some, None, &verdicts(&lost, 1.0));
        assert!(everything.starts_with("everything lost"), "{everything}");
        assert!(everything.contains("the fastest at 1.50x") && everything.contains("inaccurate 1"), "{everything}");
        let rewritten = Rewriting { variants: 2, cheapest: Some(0.01), ..Rewriting::default() };
        assert!(why_naive(&none, Some(&rewritten), &verdicts(&lost, 1.0)).starts_with("everything lost"));
        let final_phase = why_naive(&some, None, &verdicts(&[candidate("sketch", Some(0.8), None)], 1.0));
        assert!(final_phase.starts_with("a candidate timed faster"), "{final_phase}");
        assert!(why_naive(&some, None, &[]).starts_with("no candidate was judged"));
    }
}
