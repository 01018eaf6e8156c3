//! The machine's ceilings for the roofline: memory bandwidth (a STREAM-like triad over arrays far
//! larger than the last-level cache) and single-precision FMA peak (register-resident loops),
//! each per thread count, best of several repetitions as STREAM reports; and the triad's
//! bandwidth on cache-resident arrays, which bounds how fast a kernel whose data fits in a cache
//! can be (the verifier's "faster than possible" check).

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Measured ceilings of this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cpu: String,
    /// The widest vector FMA path used for the peak (`avx512f`, `avx2+fma`, `scalar`).
    pub isa: String,
    pub last_level_cache_bytes: u64,
    /// One entry per thread count 1..=N.
    pub ceilings: Vec<Ceiling>,
    /// The triad's bandwidth on arrays small enough to stay in a cache, by their total size,
    /// smallest first.
    pub cache_bandwidth: Vec<CacheBandwidth>,
    /// Seconds since the Unix epoch: the latest full measurement.
    pub measured_at: u64,
    /// How many full measurements these figures are the best of.
    #[serde(default = "one")]
    pub measurements: u32,
    /// The quick probe's figures, taken with the full measurements (the best of them): a later
    /// probe that beats them by [`PROBE_MARGIN`] means the machine was busy when they were taken.
    #[serde(default)]
    pub probe: Option<Probe>,
    /// Figures written by hand (or by a test): used as they are, never probed or measured again.
    #[serde(default)]
    pub pinned: bool,
}

impl Machine {
    /// Floats in the widest vector register of the measured ISA.
    pub fn float_lanes(&self) -> u32 {
        lanes_of(&self.isa)
    }
}

fn lanes_of(isa: &str) -> u32 {
    match isa {
        "avx512f" => 16,
        "avx2+fma" => 8,
        _ => 4,
    }
}

/// Floats in the widest vector register of this CPU's FMA path, without measuring anything.
pub fn native_float_lanes() -> u32 {
    lanes_of(fma_isa())
}

fn one() -> u32 {
    1
}

/// A quick measurement (a fraction of a second) of the same kind as the ceilings: the triad over
/// arrays of [`PROBE_BYTES`] and the FMA loop, on every thread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub gbs: f64,
    pub gflops: f64,
}

/// The three probe arrays together.
const PROBE_BYTES: u64 = 96 << 20;

/// How much faster than the cached probe a new probe must be before the ceilings are measured
/// again: more than run-to-run noise, less than what a busy machine costs.
pub const PROBE_MARGIN: f64 = 1.2;

/// Where a machine's ceilings came from this time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Source {
    /// The cache, confirmed by a quick probe.
    Cached,
    /// Pinned in the cache file: used as written.
    Pinned,
    /// Measured now (no usable cache: none, another CPU, an older format, or `--refresh`).
    Measured,
    /// Measured again because a quick probe beat the cached figures by this factor.
    Remeasured { gain: f64 },
}

/// How much faster than the triad a kernel may move data that is in cache before its call counts
/// as impossible. The triad mixes loads and stores and is measured on a shared machine; a kernel
/// that only reads, or runs when the machine is quiet, can go faster. The check this bound serves
/// is a backstop (stale outputs, work after return and caches across calls are caught directly),
/// so it is loose: a correct kernel must never be refused.
const CACHE_MARGIN: f64 = 4.0;

/// The same for data coming from memory: the triad counts its three arrays' bytes, but each
/// store first reads its line (a read for ownership), so a kernel that only reads moves 4/3 of
/// the triad's figure — and more when the machine is quieter than when it was measured (decode
/// attention read 537 MB in 10.8 ms where the triad gave 36.6 GB/s, 14.7 ms, and was refused).
const MEMORY_MARGIN: f64 = 2.0;

/// Triad bandwidth with the three arrays together `bytes` large.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheBandwidth {
    pub bytes: u64,
    /// GB/s per thread count 1..=N.
    pub gbs: Vec<f64>,
}

/// The roofline floor of some work, and the ceilings it was computed with.
#[derive(Debug, Clone, PartialEq)]
pub struct Floor {
    /// The roofline: FLOPs at the FMA peak or the compulsory bytes at the memory bandwidth.
    pub seconds: f64,
    /// The least time any kernel doing the work can take, with its data in whatever cache it
    /// fits (repeated calls find it there): a call faster than this cheats. At most `seconds`.
    pub fastest: f64,
    /// Whether moving the bytes, not the arithmetic, sets the floor.
    pub memory_bound: bool,
    pub ceiling: Ceiling,
    /// The work it is the floor of: FLOPs and compulsory bytes.
    pub flops: f64,
    pub bytes: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    pub threads: usize,
    /// Triad bandwidth, counting the three arrays' bytes once per pass.
    pub bandwidth_gbs: f64,
    /// Single-precision FMA throughput, two FLOPs per lane per FMA.
    pub peak_gflops: f64,
}

/// How to measure.
#[derive(Debug, Clone)]
pub struct MachineConfig {
    /// Bytes per triad array; by default 8× the last-level cache, at least 64 MiB and at most 1 GiB.
    pub array_bytes: Option<u64>,
    pub repetitions: usize,
    pub max_threads: usize,
}

impl Default for MachineConfig {
    fn default() -> MachineConfig {
        MachineConfig {
            array_bytes: None,
            repetitions: 5,
            max_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

impl Machine {
    /// Measures the ceilings (a few seconds with the default configuration).
    pub fn measure(config: &MachineConfig) -> Machine {
        let llc = last_level_cache_bytes();
        // 8× the last-level cache, at least 64 MiB and at most 1 GiB per array (a virtual
        // machine may report a shared cache of hundreds of MiB).
        let array_bytes = config.array_bytes.unwrap_or((8 * llc).clamp(64 << 20, 1 << 30));
        let n = (array_bytes / 4).max(1024) as usize;
        let mut a = vec![0f32; n];
        let b = vec![1f32; n];
        let c = vec![2f32; n];
        let threads = 1..=config.max_threads.max(1);
        let ceilings = threads
            .clone()
            .map(|threads| Ceiling {
                threads,
                bandwidth_gbs: triad_gbs(&mut a, &b, &c, threads, 1, config.repetitions),
                peak_gflops: fma_gflops(threads, config.repetitions),
            })
            .collect();
        drop((a, b, c));
        // Sizes from the first-level cache to half the last level.
        let mut sizes: Vec<u64> = vec![24 << 10, 192 << 10, 1536 << 10];
        sizes.retain(|&s| s < llc / 2);
        sizes.push(llc / 2);
        let cache_bandwidth = sizes
            .into_iter()
            .map(|bytes| {
                let n = (bytes / 12).max(64) as usize;
                let (mut a, b, c) = (vec![0f32; n], vec![1f32; n], vec![2f32; n]);
                // Enough passes to move 64 MiB per timing.
                let passes = ((64u64 << 20) / bytes).max(1) as usize;
                CacheBandwidth { bytes, gbs: threads.clone().map(|t| triad_gbs(&mut a, &b, &c, t, passes, config.repetitions)).collect() }
            })
            .collect();
        let measured_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let probe = Some(Machine::probe(config));
        Machine { cpu: cpu_name(), isa: fma_isa().to_string(), last_level_cache_bytes: llc, ceilings, cache_bandwidth, measured_at, measurements: 1, probe, pinned: false }
    }

    /// The quick probe: the triad over [`PROBE_BYTES`] and the FMA loop, on every thread.
    pub fn probe(config: &MachineConfig) -> Probe {
        let n = (PROBE_BYTES / 12) as usize;
        let (mut a, b, c) = (vec![0f32; n], vec![1f32; n], vec![2f32; n]);
        let threads = config.max_threads.max(1);
        Probe { gbs: triad_gbs(&mut a, &b, &c, threads, 1, 3), gflops: fma_gflops(threads, 2) }
    }

    /// Each figure the better of `self`'s and `other`'s (measurements of one machine: a busy
    /// machine only ever measures low).
    pub fn best_of(mut self, other: &Machine) -> Machine {
        for (c, o) in self.ceilings.iter_mut().zip(&other.ceilings) {
            c.bandwidth_gbs = c.bandwidth_gbs.max(o.bandwidth_gbs);
            c.peak_gflops = c.peak_gflops.max(o.peak_gflops);
        }
        for (c, o) in self.cache_bandwidth.iter_mut().zip(&other.cache_bandwidth) {
            if c.bytes == o.bytes {
                c.gbs.iter_mut().zip(&o.gbs).for_each(|(g, o)| *g = g.max(*o));
            }
        }
        self.probe = match (self.probe, other.probe) {
            (Some(p), Some(o)) => Some(Probe { gbs: p.gbs.max(o.gbs), gflops: p.gflops.max(o.gflops) }),
            (p, o) => p.or(o),
        };
        self.measurements += other.measurements;
        self
    }

    /// Whether these figures were measured on the machine running now (same CPU, FMA path and
    /// cache): the project's machines change between sessions, and a cache file may outlive one.
    pub fn is_this_machine(&self) -> bool {
        self.cpu == cpu_name() && self.isa == fma_isa() && self.last_level_cache_bytes == last_level_cache_bytes()
    }

    /// When the ceilings were last measured, as `2026-11-30 16:05 UTC`.
    pub fn measured_date(&self) -> String {
        let (days, secs) = ((self.measured_at / 86_400) as i64, self.measured_at % 86_400);
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        format!("{year:04}-{month:02}-{day:02} {:02}:{:02} UTC", secs / 3600, secs % 3600 / 60)
    }

    /// The ceilings for this run: the cache at `path` if it describes this machine and a quick
    /// probe does not beat it by [`PROBE_MARGIN`], else a new measurement, combined with the
    /// cached one (the best of each figure) and saved. `refresh` always measures.
    pub fn ceilings(path: &Path, refresh: bool, config: &MachineConfig) -> std::io::Result<(Machine, Source)> {
        let cached = Machine::load(path);
        if let Some(m) = cached.as_ref().filter(|m| m.pinned) {
            return Ok((m.clone(), Source::Pinned));
        }
        let cached = cached.filter(|m| m.is_this_machine() && m.probe.is_some());
        let source = match &cached {
            None => Source::Measured,
            Some(_) if refresh => Source::Measured,
            Some(m) => {
                let stored = m.probe.expect("filtered above");
                let now = Machine::probe(config);
                let gain = (now.gbs / stored.gbs).max(now.gflops / stored.gflops);
                if gain <= PROBE_MARGIN {
                    return Ok((m.clone(), Source::Cached));
                }
                Source::Remeasured { gain }
            }
        };
        match source {
            Source::Remeasured { gain } => tracing::info!("a quick probe ran {gain:.2}x faster than the cached ceilings: measuring them again"),
            _ => tracing::info!("measuring this machine's ceilings (cached; `ollie machine` shows them)"),
        }
        let measured = Machine::measure(config);
        let machine = match &cached {
            Some(c) => measured.best_of(c),
            None => measured,
        };
        machine.save(path)?;
        Ok((machine, source))
    }

    pub fn load(path: &Path) -> Option<Machine> {
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, serde_json::to_string_pretty(self).expect("serializable"))
    }

    /// The least time work of `flops` moving `bytes` can take on this machine (all threads):
    /// the roofline floor.
    pub fn floor(&self, flops: f64, bytes: f64) -> Option<Floor> {
        let ceiling = self.ceilings.last()?.clone();
        let compute = flops / (ceiling.peak_gflops * 1e9);
        let memory = bytes / (ceiling.bandwidth_gbs * 1e9);
        let seconds = compute.max(memory);
        Some(Floor { seconds, fastest: compute.max(self.cached_memory_seconds(bytes)).min(seconds), memory_bound: memory >= compute, ceiling, flops, bytes })
    }

    /// The least time `bytes` can be moved when as much of them as fits stays in cache between
    /// calls: up to the last-level cache's size at [`CACHE_MARGIN`] times the bandwidth measured
    /// on the largest cache size not above them (the smallest size's, if they are smaller still:
    /// bandwidth only falls as data grows), the rest at [`MEMORY_MARGIN`] times the memory
    /// bandwidth.
    fn cached_memory_seconds(&self, bytes: f64) -> f64 {
        let best = |gbs: &[f64]| gbs.iter().copied().fold(0.0f64, f64::max) * 1e9;
        let dram = self.ceilings.iter().map(|c| c.bandwidth_gbs).fold(0.0f64, f64::max) * 1e9;
        let llc = self.last_level_cache_bytes as f64;
        let cached = bytes.min(llc);
        let level = self.cache_bandwidth.iter().rev().find(|c| c.bytes as f64 <= cached).or(self.cache_bandwidth.first());
        match level {
            Some(c) if best(&c.gbs) > 0.0 => cached / (CACHE_MARGIN * best(&c.gbs)) + (bytes - cached).max(0.0) / (MEMORY_MARGIN * dram),
            _ => bytes / (MEMORY_MARGIN * dram),
        }
    }

    /// The ceiling for `threads`, or the largest thread count measured.
    pub fn ceiling(&self, threads: usize) -> Option<&Ceiling> {
        self.ceilings.iter().find(|c| c.threads == threads).or(self.ceilings.last())
    }
}

fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).map(|s| s.trim().to_string()))
        .unwrap_or_else(|| "unknown".into())
}

/// Memory this machine can give a new process now (`MemAvailable` of `/proc/meminfo`), in bytes;
/// `None` where the kernel does not say.
pub fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Bytes an unprivileged process may still write on the file system holding `path` (or the
/// nearest existing folder above it), if the system says.
pub fn available_disk(path: &std::path::Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let c = std::ffi::CString::new(existing.as_os_str().as_encoded_bytes()).ok()?;
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `stat` a valid, writable statvfs.
    let ok = unsafe { libc::statvfs(c.as_ptr(), &mut stat) } == 0;
    ok.then(|| stat.f_bavail as u64 * stat.f_frsize as u64)
}

/// The largest data cache that Linux reports for cpu0, in bytes (32 MiB if unknown).
pub(crate) fn last_level_cache_bytes() -> u64 {
    let best = cpu0_caches().iter().map(|c| c.bytes).max().unwrap_or(0);
    if best == 0 { 32 << 20 } else { best }
}

/// The sizes of this machine's first-level data cache and second-level cache (per core), as
/// the kernel reports them, when it does: what the sketches size their cache blocks by.
pub fn data_cache_bytes() -> Option<(u64, u64)> {
    let caches = cpu0_caches();
    let size = |level: u32| caches.iter().find(|c| c.level == level && c.kind != "Instruction").map(|c| c.bytes);
    Some((size(1)?, size(2)?))
}

/// One of CPU 0's caches in sysfs.
struct SysCache {
    level: u32,
    /// `Data`, `Instruction` or `Unified`.
    kind: String,
    bytes: u64,
}

fn cpu0_caches() -> Vec<SysCache> {
    let mut out = Vec::new();
    for index in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{index}");
        let read = |name: &str| std::fs::read_to_string(format!("{dir}/{name}")).map(|s| s.trim().to_string());
        let (Ok(size), Ok(level), Ok(kind)) = (read("size"), read("level"), read("type")) else { continue };
        let bytes = if let Some(k) = size.strip_suffix('K') {
            k.parse::<u64>().ok().map(|k| k << 10)
        } else if let Some(m) = size.strip_suffix('M') {
            m.parse::<u64>().ok().map(|m| m << 20)
        } else {
            size.parse().ok()
        };
        if let (Some(bytes), Ok(level)) = (bytes, level.parse()) {
            out.push(SysCache { level, kind, bytes });
        }
    }
    out
}

/// `a = b + s·c` split over `threads`, `passes` times over the same arrays; the best timing's
/// bytes per second (3 arrays), in GB/s.
fn triad_gbs(a: &mut [f32], b: &[f32], c: &[f32], threads: usize, passes: usize, repetitions: usize) -> f64 {
    let chunk = a.len().div_ceil(threads);
    let mut best = f64::INFINITY;
    for rep in 0..repetitions + 1 {
        let s = std::hint::black_box(3.0f32);
        let start = Instant::now();
        std::thread::scope(|scope| {
            for ((a, b), c) in a.chunks_mut(chunk).zip(b.chunks(chunk)).zip(c.chunks(chunk)) {
                scope.spawn(move || triad_passes(a, b, c, s, passes));
            }
        });
        let t = start.elapsed().as_secs_f64();
        std::hint::black_box(&a[a.len() / 2]);
        if rep > 0 {
            // The first pass touches fresh pages; it is a warm-up.
            best = best.min(t);
        }
    }
    (3 * 4 * a.len() * passes) as f64 / best / 1e9
}

/// The triad's passes, in the widest vectors the CPU has (as a kernel built with
/// `-march=native` would use: in cache the vector width sets the bandwidth).
fn triad_passes(a: &mut [f32], b: &[f32], c: &[f32], s: f32, passes: usize) {
    #[inline(always)]
    fn passes_of(a: &mut [f32], b: &[f32], c: &[f32], s: f32, passes: usize) {
        for _ in 0..passes {
            for ((x, y), z) in a.iter_mut().zip(b).zip(c) {
                *x = y + s * z;
            }
            std::hint::black_box(&mut *a);
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f")]
        unsafe fn wide512(a: &mut [f32], b: &[f32], c: &[f32], s: f32, passes: usize) {
            passes_of(a, b, c, s, passes)
        }
        #[target_feature(enable = "avx2,fma")]
        unsafe fn wide256(a: &mut [f32], b: &[f32], c: &[f32], s: f32, passes: usize) {
            passes_of(a, b, c, s, passes)
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked above).
            return unsafe { wide512(a, b, c, s, passes) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports AVX2 and FMA (checked above).
            return unsafe { wide256(a, b, c, s, passes) };
        }
    }
    passes_of(a, b, c, s, passes)
}

fn fma_isa() -> &'static str {
    if std::arch::is_x86_feature_detected!("avx512f") {
        "avx512f"
    } else if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        "avx2+fma"
    } else {
        "scalar"
    }
}

/// Independent accumulators, so the loop is throughput-bound, not latency-bound.
const ACCUMULATORS: usize = 12;
const FMA_ITERATIONS: u64 = 20_000_000;

/// FMA throughput over `threads` threads, best of `repetitions`, in GFLOP/s.
fn fma_gflops(threads: usize, repetitions: usize) -> f64 {
    let lanes = match fma_isa() {
        "avx512f" => 16,
        "avx2+fma" => 8,
        _ => 1,
    };
    let iterations = if lanes == 1 { FMA_ITERATIONS / 8 } else { FMA_ITERATIONS };
    let mut best = f64::INFINITY;
    for _ in 0..repetitions {
        let start = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| std::hint::black_box(fma_loop(std::hint::black_box(iterations))));
            }
        });
        best = best.min(start.elapsed().as_secs_f64());
    }
    (threads as u64 * iterations * ACCUMULATORS as u64 * lanes * 2) as f64 / best / 1e9
}

fn fma_loop(iterations: u64) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked above).
            return unsafe { fma_avx512(iterations) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports AVX2 and FMA (checked above).
            return unsafe { fma_avx2(iterations) };
        }
    }
    let mut acc = [0f32; ACCUMULATORS];
    for _ in 0..iterations {
        for a in acc.iter_mut() {
            *a = a.mul_add(1.000_000_1, 1e-7);
        }
    }
    acc.iter().sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fma_avx512(iterations: u64) -> f32 {
    use std::arch::x86_64::*;
    let (m, b) = (_mm512_set1_ps(1.000_000_1), _mm512_set1_ps(1e-7));
    let mut acc = [_mm512_setzero_ps(); ACCUMULATORS];
    for _ in 0..iterations {
        for a in acc.iter_mut() {
            *a = _mm512_fmadd_ps(*a, m, b);
        }
    }
    acc.iter().map(|a| _mm512_reduce_add_ps(*a)).sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_avx2(iterations: u64) -> f32 {
    use std::arch::x86_64::*;
    let (m, b) = (_mm256_set1_ps(1.000_000_1), _mm256_set1_ps(1e-7));
    let mut acc = [_mm256_setzero_ps(); ACCUMULATORS];
    for _ in 0..iterations {
        for a in acc.iter_mut() {
            *a = _mm256_fmadd_ps(*a, m, b);
        }
    }
    let mut lanes = [0f32; 8];
    let mut total = 0.0;
    for a in acc {
        _mm256_storeu_ps(lanes.as_mut_ptr(), a);
        total += lanes.iter().sum::<f32>();
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Machine {
        Machine {
            cpu: "test".into(),
            isa: "avx2+fma".into(),
            last_level_cache_bytes: 8 << 20,
            ceilings: vec![Ceiling { threads: 1, bandwidth_gbs: 20.0, peak_gflops: 100.0 }, Ceiling { threads: 2, bandwidth_gbs: 30.0, peak_gflops: 200.0 }],
            cache_bandwidth: vec![CacheBandwidth { bytes: 32 << 10, gbs: vec![300.0, 600.0] }, CacheBandwidth { bytes: 4 << 20, gbs: vec![100.0, 150.0] }],
            measured_at: 0,
            measurements: 1,
            probe: Some(Probe { gbs: 25.0, gflops: 190.0 }),
            pinned: false,
        }
    }

    #[test]
    fn free_disk_is_read_from_the_nearest_existing_folder() {
        let dir = std::env::temp_dir();
        let free = available_disk(&dir).unwrap();
        assert!(free > 0);
        // A cache folder not made yet: the space of the folder it will be made in.
        let later = available_disk(&dir.join("ollie-not-made-yet/expected")).unwrap();
        assert!(later.abs_diff(free) < free / 10 + (64 << 20), "{later} against {free}");
    }

    #[test]
    fn measurements_combine_to_the_best_of_each_figure() {
        let busy = Machine {
            ceilings: vec![Ceiling { threads: 1, bandwidth_gbs: 10.0, peak_gflops: 120.0 }, Ceiling { threads: 2, bandwidth_gbs: 15.0, peak_gflops: 100.0 }],
            probe: Some(Probe { gbs: 12.0, gflops: 200.0 }),
            measured_at: 86_400 * 20_787 + 3600 * 16 + 60 * 5,
            ..machine()
        };
        let best = busy.best_of(&machine());
        assert_eq!(best.ceilings[0], Ceiling { threads: 1, bandwidth_gbs: 20.0, peak_gflops: 120.0 });
        assert_eq!(best.ceilings[1], Ceiling { threads: 2, bandwidth_gbs: 30.0, peak_gflops: 200.0 });
        assert_eq!(best.probe, Some(Probe { gbs: 25.0, gflops: 200.0 }));
        assert_eq!(best.measurements, 2);
        assert_eq!(best.measured_date(), "2026-11-30 16:05 UTC");
    }

    #[test]
    fn pinned_ceilings_are_used_as_written_and_others_of_another_machine_are_not() {
        let path = std::env::temp_dir().join(format!("ollie-machine-pinned-{}.json", std::process::id()));
        let pinned = Machine { pinned: true, ..machine() };
        pinned.save(&path).unwrap();
        assert_eq!(Machine::ceilings(&path, false, &MachineConfig::default()).unwrap(), (pinned, Source::Pinned));
        assert!(!machine().is_this_machine(), "a CPU named `test`");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn the_fastest_possible_call_reads_its_data_from_the_cache_it_fits() {
        let m = machine();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
        // 1 MB: bounded by the bandwidth measured on 32 KiB, the largest size below it.
        let f = m.floor(0.0, 1e6).unwrap();
        assert!(close(f.seconds, 1e6 / 30e9) && close(f.fastest, 1e6 / (4.0 * 600e9)), "{f:?}");
        // 6 MB: the 4 MiB level's bandwidth.
        assert!(close(m.floor(0.0, 6e6).unwrap().fastest, 6e6 / (4.0 * 150e9)));
        // 100 MB: the last-level cache's worth from cache, the rest from memory.
        let llc = (8u64 << 20) as f64;
        assert!(close(m.floor(0.0, 1e8).unwrap().fastest, llc / (4.0 * 150e9) + (1e8 - llc) / (2.0 * 30e9)));
        // Below the smallest size, the fastest level bounds it; compute bounds it too.
        assert!(close(m.floor(0.0, 1e3).unwrap().fastest, 1e3 / (4.0 * 600e9)));
        let f = m.floor(2e9, 1e3).unwrap();
        assert!(close(f.fastest, f.seconds) && close(f.seconds, 2e9 / 200e9));
    }

    #[test]
    fn a_machine_file_without_cache_bandwidths_is_measured_again() {
        let old = r#"{"cpu":"x","isa":"scalar","last_level_cache_bytes":1048576,"ceilings":[{"threads":1,"bandwidth_gbs":20.0,"peak_gflops":1.0}],"measured_at":0}"#;
        let path = std::env::temp_dir().join(format!("ollie-machine-{}.json", std::process::id()));
        std::fs::write(&path, old).unwrap();
        assert!(Machine::load(&path).is_none());
        machine().save(&path).unwrap();
        assert_eq!(Machine::load(&path), Some(machine()));
        std::fs::remove_file(&path).unwrap();
    }
}
