//! The process's allocator: mimalloc, keeping the memory it frees (never purged back to the
//! system) and backing it with large OS pages where the kernel offers them. The reference
//! interpreter makes and frees arrays of tens of megabytes per operation; with the system's
//! allocator each came fresh from the kernel, in 4 KiB pages faulted in one by one, and faulting
//! cost more than computing (measured: the float64 reference of a 2048×4096 log-softmax with its
//! error bounds, 1.0 s with glibc's malloc, 0.5 s with this). Resident memory then stays at the
//! peak a command reached, which is what the memory check budgets for anyway.

use libmimalloc_sys::{mi_option_set_default, mi_option_set_enabled_default, mi_option_t};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay`: milliseconds before freed memory goes back to the system, -1 never
/// (mimalloc.h numbers it just before `mi_option_use_numa_nodes`, which the bindings name).
const PURGE_DELAY: mi_option_t = libmimalloc_sys::mi_option_use_numa_nodes - 1;

/// Sets the allocator's options (unless `MIMALLOC_PURGE_DELAY`, `MIMALLOC_ALLOW_LARGE_OS_PAGES`
/// set them); call first thing in `main`.
pub fn configure() {
    // SAFETY: plain option setters of the allocator, before any thread is started.
    unsafe {
        mi_option_set_default(PURGE_DELAY, -1);
        mi_option_set_enabled_default(libmimalloc_sys::mi_option_large_os_pages, true);
    }
}

/// The purge delay in force.
#[cfg(test)]
#[allow(clippy::unnecessary_cast)] // `c_long`, which is not `i64` everywhere
fn purge_delay() -> i64 {
    // SAFETY: a plain option getter.
    unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) as i64 }
}

#[cfg(test)]
mod tests {
    /// The option set is the purge delay: mimalloc v3's default for it is 1000 ms.
    #[test]
    fn the_purge_delay_is_the_option_set() {
        assert_eq!(super::purge_delay(), 1000, "not mimalloc's purge delay");
        super::configure();
        assert_eq!(super::purge_delay(), -1);
    }
}
