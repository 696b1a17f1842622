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
