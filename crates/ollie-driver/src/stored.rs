//! What a run keeps in the store, read back: its kernels, the options it was started with, the
//! running totals of its candidates; and the keys and times it is written with.

use anyhow::Context;
use ollie_search::Kernel;
use ollie_store::{Candidate, Run};
use sha2::Digest;

use crate::Error;

/// The store's file in the output directory.
pub const STORE_FILE: &str = "ollie.db";

/// A candidate's identity in the store: its flags and source, hashed.
pub(crate) fn hash(source: &str, flags: &[String]) -> String {
    let digest = sha2::Sha256::digest(format!("{}\n{source}", flags.join(" ")).as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The kernel a stored candidate is.
pub(crate) fn kernel(c: &Candidate) -> Result<Kernel, Error> {
    Ok(Kernel::from_stored(&c.schedule, &c.source, &c.flags, &c.graph).context("a stored kernel does not read back")?)
}

/// An option a run was started with, as stored in its options (the default where it is missing
/// or of another shape).
pub fn option<T: serde::de::DeserializeOwned + Default>(run: &Run, key: &str) -> T {
    serde_json::from_str::<serde_json::Value>(&run.new.options).ok().and_then(|v| serde_json::from_value(v[key].clone()).ok()).unwrap_or_default()
}

/// The `--dim` values a run was started with.
pub fn dims(run: &Run) -> Vec<(String, i64)> {
    option(run, "dims")
}

/// Now, in the Unix seconds the store keeps.
pub(crate) fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// Running totals for the progress line and the final table.
#[derive(Default)]
pub struct Tally {
    pub evaluations: usize,
    pub accepted: usize,
    pub rejected: std::collections::BTreeMap<String, usize>,
}

impl Tally {
    pub fn add(&mut self, c: &Candidate) {
        if c.proposer == "naive" {
            return;
        }
        self.evaluations += 1;
        match &c.reason {
            None => self.accepted += 1,
            Some(r) => *self.rejected.entry(r.clone()).or_default() += 1,
        }
    }

    pub fn rejected_text(&self) -> String {
        if self.rejected.is_empty() {
            return "none".into();
        }
        self.rejected.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ")
    }
}
