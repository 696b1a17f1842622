//! Sizing of the compute worker pool.

/// Cores this process may really use: `available_parallelism` honours
/// cgroup CPU quotas and the affinity mask.
///
/// Read once per process: the standard library reads the cgroup files on
/// every call, which a server answering point queries would pay on each.
pub fn usable_cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Compute workers for a request of `threads` (0 or `None` = all cores).
///
/// Never more than the usable cores: on a 2-core machine `--threads 64`
/// runs 2 workers, because extra compute threads only add switching.
pub fn worker_count(threads: Option<usize>) -> usize {
    let cores = usable_cores();
    match threads {
        None | Some(0) => cores,
        Some(t) => t.min(cores),
    }
}

/// Keeps freed memory in the process instead of handing it back to the
/// kernel at once (glibc's allocator only; elsewhere nothing to do).
///
/// A query allocates and frees a few columns of 64 Ki rows (about 1 MiB
/// each) per morsel. With glibc's defaults those blocks are mapped and
/// unmapped, or trimmed off the heap's top, again and again, and every
/// reuse costs page faults that clear fresh pages: measured on lineitem
/// SF 1, `sum(CASE WHEN l_discount > 0.05 THEN l_extendedprice ELSE 0 END)`
/// spent 286 ms of system time in a 218 ms run on 2 cores; with blocks up
/// to 32 MiB kept on the heap and up to 256 MiB of free memory kept before
/// trimming, 20 ms of system time in a 59 ms run. Peak memory is unchanged
/// (freed blocks are reused, not added). Call it once, early in `main`.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's thresholds; it is
    // called before the process starts other threads.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

/// [`tune_allocator`] for a process whose queries run under a memory
/// limit of `limit` bytes (`--memory-limit`): freed memory is kept up to
/// a quarter of the limit (not 256 MiB; at least 4 MiB), blocks past a
/// sixteenth of it (at least 1 MiB) are mapped on their own (handed back
/// when freed), and the threads
/// share two arenas: with an arena a thread, each held its own high-water
/// mark of freed blocks beside the others'. So the process's resident
/// memory follows what its operators count: `SELECT * FROM lineitem
/// ORDER BY l_comment` at 64 MiB (SF 1) held 123 MiB of anonymous memory,
/// 69 MiB so (BENCHMARKS.md). One arena held less but queued the workers
/// on its lock (TPC-H Q21 at a tenth of its peak: 0.71 -> 0.94 s); lower
/// thresholds (a sixty-fourth of the limit mapped alone) cost TPC-H Q13
/// and Q18 at a tenth of their peaks 40 % more time in page faults.
/// Call it before the query's threads start.
pub fn tune_allocator_for_limit(limit: u64) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let clamp = |v: u64, lo: u64, hi: u64| v.clamp(lo, hi) as libc::c_int;
        let trim = clamp(limit / 4, 4 << 20, 256 << 20);
        let mmap = clamp(limit / 16, 1 << 20, 32 << 20);
        // SAFETY: mallopt only changes the allocator's thresholds.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, mmap);
            libc::mallopt(libc::M_TRIM_THRESHOLD, trim);
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = limit;
}

/// Asks the CPU to bring the cache line holding `at` (a hint: it never
/// faults, and changes no value).
#[inline]
pub fn prefetch<T>(at: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults; `at` is a valid reference anyway.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(at as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Peak resident memory of this process in bytes (Linux `VmHWM`), if known.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// CPU time (user + system) this process has used so far, in seconds, if
/// known (Linux `/proc/self/stat`, in USER_HZ = 100 ticks per second).
pub fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_more_workers_than_cores() {
        let cores = usable_cores();
        assert_eq!(worker_count(Some(10_000)), cores);
        assert_eq!(worker_count(None), cores);
        assert_eq!(worker_count(Some(1)), 1);
    }

    #[test]
    fn cpu_time_grows_with_work() {
        let before = cpu_seconds().unwrap();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed().as_millis() < 50 {
            x = x.wrapping_add(std::hint::black_box(x) | 1);
        }
        assert!(cpu_seconds().unwrap() >= before, "{x}");
    }
}
