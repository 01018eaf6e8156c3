//! What the end-to-end tests of `ollie optimize` share: the repository root, and a private
//! cache with this machine's ceilings written down (no measuring in tests).

use std::path::{Path, PathBuf};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

pub fn cache() -> tempfile::TempDir {
    let cache = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(cache.path().join("ollie")).unwrap();
    let json = r#"{"cpu":"test","isa":"avx2","last_level_cache_bytes":1048576,"ceilings":[{"threads":1,"bandwidth_gbs":25.0,"peak_gflops":100.0},{"threads":2,"bandwidth_gbs":40.0,"peak_gflops":200.0}],"cache_bandwidth":[{"bytes":24576,"gbs":[300.0,600.0]},{"bytes":524288,"gbs":[100.0,200.0]}],"measured_at":0,"pinned":true}"#;
    std::fs::write(cache.path().join("ollie/machine.json"), json).unwrap();
    cache
}
