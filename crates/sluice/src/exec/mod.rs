//! Sizing of the compute worker pool.

/// Cores this process may really use: `available_parallelism` honours
/// cgroup CPU quotas and the affinity mask.
pub fn usable_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
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

/// Peak resident memory of this process in bytes (Linux `VmHWM`), if known.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
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
}
