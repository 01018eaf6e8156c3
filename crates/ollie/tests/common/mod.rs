//! What the end-to-end tests of `ollie optimize` share: the repository root, and a private
//! cache with this machine's ceilings written down (no measuring in tests).

use std::path::{Path, PathBuf};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

#[allow(dead_code)] // the LLM tests pin a larger cache
pub fn cache() -> tempfile::TempDir {
    cache_with_llc(1 << 20)
}

/// As [`cache`], with a last-level cache of `bytes`: a test that judges which kernel is faster
/// pins one larger than any real machine's, so that the inputs rotate through memory as on a
/// real machine (with 1 MiB pinned, a 4 MiB input stays in a 32 MiB L3 and a fast kernel is
/// judged faster than the pinned 40 GB/s allow).
#[allow(dead_code)] // only the LLM tests
pub fn cache_with_llc(bytes: u64) -> tempfile::TempDir {
    let cache = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(cache.path().join("ollie")).unwrap();
    let json = r#"{"cpu":"test","isa":"avx2","last_level_cache_bytes":LLC,"ceilings":[{"threads":1,"bandwidth_gbs":25.0,"peak_gflops":100.0},{"threads":2,"bandwidth_gbs":40.0,"peak_gflops":200.0}],"cache_bandwidth":[{"bytes":24576,"gbs":[300.0,600.0]},{"bytes":524288,"gbs":[100.0,200.0]}],"measured_at":0,"pinned":true}"#;
    std::fs::write(cache.path().join("ollie/machine.json"), json.replace("LLC", &bytes.to_string())).unwrap();
    cache
}
