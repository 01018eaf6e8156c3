//! What `check`, `bench` and `optimize` set up alike: the naive kernel, the machine's roofline,
//! the oracle with its disk cache, the seeds, and the memory check before anything runs.

use std::path::PathBuf;

use anyhow::Context;
use ollie_graph::Graph;
use ollie_runner::{Compiler, Floor, Machine, MachineConfig, Runner};
use sha2::Digest;

use crate::{user_error, Error};

/// The machine's ceilings, measured once and kept in ollie's cache (`machine.json`); `refresh`
/// measures them again. Also says whether they were measured now, and where they are kept.
pub fn machine_ceilings(refresh: bool, config: &MachineConfig) -> Result<(Machine, ollie_runner::Source, PathBuf), Error> {
    let path = ollie_runner::cache_root().join("machine.json");
    let (machine, source) = Machine::ceilings(&path, refresh, config).map_err(|e| anyhow::anyhow!("saving {}: {e}", path.display()))?;
    Ok((machine, source, path))
}

/// The least time `graph` can take on this machine: its FLOPs at the FMA peak or its compulsory
/// bytes at the memory bandwidth, whichever is longer (all threads). The FLOPs are the fewest
/// of the graph and of the variants algebraic rewriting finds equal to it: a prefix sum written
/// as a product with a triangle of ones is floored as the running sum it is, so that its fast
/// kernels are neither refused as too fast nor reported at many times the roofline.
pub fn roofline_floor(graph: &Graph) -> Result<(Machine, Floor), Error> {
    roofline_floor_of(graph, &ollie_rewrite::variants(graph))
}

/// [`roofline_floor`] with the variants rewriting found already at hand.
pub fn roofline_floor_of(graph: &Graph, rewritten: &ollie_rewrite::Rewritten) -> Result<(Machine, Floor), Error> {
    let (machine, _, _) = machine_ceilings(false, &MachineConfig::default())?;
    let cost = graph.work();
    let flops = rewritten.variants.iter().map(|v| v.graph.work().flops).fold(cost.flops, f64::min);
    let floor = machine.floor(flops, cost.min_bytes).context("no machine ceilings")?;
    Ok((machine, floor))
}

/// The seed of a verification when none is given: fixed per spec (its graph), so that checking
/// kernels of one spec again and again tests the same inputs, whose expected outputs the oracle
/// keeps on disk; another seed tests other inputs.
pub fn spec_seed(graph: &Graph) -> u64 {
    let digest = sha2::Sha256::digest(graph.to_string().as_bytes());
    u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// A seed from the clock, for a fresh verification.
pub fn fresh_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// The oracle of `ollie check`, `bench` and `optimize`: expected outputs kept in memory (an
/// eighth of the memory available, between [`ollie_verify::ORACLE_BYTES`] and [`ORACLE_MOST`]) and
/// in ollie's cache directory (`expected/`), shared by every later command on the same spec — at
/// most [`ollie_verify::DISK_BYTES`], and at most a quarter of the disk space left, so that a
/// cache never fills the disk it shares with the user's files.
pub fn oracle<'a>(graph: &'a Graph, runner: &'a Runner, baseline: ollie_verify::Baseline) -> ollie_verify::Oracle<'a> {
    let least = ollie_verify::ORACLE_BYTES as u64;
    let capacity = ollie_runner::available_memory().map_or(least, |a| (a / 8).clamp(least, ORACLE_MOST)) as usize;
    let dir = ollie_runner::cache_root().join("expected");
    let limit = ollie_runner::available_disk(&dir).map_or(ollie_verify::DISK_BYTES, |free| ollie_verify::DISK_BYTES.min(free / 4));
    ollie_verify::Oracle::with_capacity(graph, runner, baseline, capacity).keep_on_disk(&dir, limit)
}

/// The most expected outputs the oracle keeps in memory: every set of a full verification of a
/// kernel whose outputs hold 8M float32 elements (1.2 GB for 18 sets), so that judging a
/// candidate reads none of them back from disk (a third of a verification's time on such a
/// kernel went to reading and to the kernel zeroing the pages read into).
const ORACLE_MOST: u64 = 2 << 30;

/// Compiles the naive kernel of `graph` (the baseline) at `-O3 -march=native`.
pub fn compile_naive(compiler: &Compiler, graph: &Graph) -> Result<PathBuf, Error> {
    let naive = ollie_loops::emit_c(&ollie_loops::lower(graph).context("lowering the spec")?);
    let native = vec!["-O3".to_string(), "-march=native".to_string()];
    match compiler.compile(&naive, &native) {
        Ok(c) => Ok(c.library),
        Err(Ok(outcome)) => Err(anyhow::anyhow!("the naive kernel does not compile: {}", outcome.summary()).into()),
        Err(Err(e)) => Err(anyhow::Error::from(e).into()),
    }
}

/// Refuses, with the figures, a problem whose verification would need more memory than the
/// machine has available: a clear error before anything runs, not the out-of-memory killer.
pub fn ensure_fits(graph: &Graph) -> Result<(), Error> {
    let needed = ollie_verify::memory_needed(graph);
    match ollie_runner::available_memory() {
        Some(available) if needed > available => Err(user_error(format!(
            "error: `{}` is too large for this machine: verifying and timing its kernels needs up to {:.1} GB (its tensors in float64 and float32 several times over), and {:.1} GB is available\n  help: make it smaller with --dim, or run on a machine with more memory",
            graph.name,
            needed as f64 / 1e9,
            available as f64 / 1e9
        ))),
        _ => Ok(()),
    }
}
