//! Which connection thread serves a connection, and where that thread runs.
//!
//! Each connection thread is pinned to one CPU, and a new connection goes
//! to the thread of the CPU its packets arrived on (the kernel's
//! `SO_INCOMING_CPU`: on loopback, the CPU the client ran on when it
//! connected; over a network, the CPU that took the receive queue's
//! interrupt). A client and its connection's thread then take turns on
//! one CPU: the client's send wakes the server thread on the CPU it is
//! on, and the answer wakes the client there, with no wake-up sent to
//! another CPU. Handing connections out round robin put half of each
//! client thread's connections on the other CPU's thread: measured with
//! pgbench on 2 cores (BENCHMARKS.md, serve), steering took 8 clients
//! from 89–104k to 147–150k transactions a second and 32 clients from
//! 95–103k to 129–132k.
//!
//! Pinning is only done where it is safe to: the process may run on
//! exactly as many CPUs as there are connection threads (not under a CPU
//! quota smaller than its CPU set, where a pinned thread could be held
//! to a CPU the quota starves), and `--no-pin` was not given. Otherwise
//! threads float and connections go round robin, as before.

/// The CPUs the calling thread may run on, in ascending order (empty
/// where this cannot be known); on the process's first thread, before
/// any pinning, the process's CPUs.
pub fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    // SAFETY: sched_getaffinity fills a zeroed cpu_set_t of the size given;
    // CPU_ISSET reads it within its bounds.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    Vec::new()
}

/// Pins the calling thread to `cpu`; whether it worked.
pub fn pin_current_thread(cpu: usize) -> bool {
    set_current_thread_cpus(&[cpu])
}

/// Lets the calling thread run on `cpus` (and no other); whether it
/// worked. A thread started by a pinned connection thread inherits its
/// one CPU: a scan's thread widens its set back to the process's CPUs
/// with this before it starts the query's workers, or every worker of
/// the scan would share the connection thread's CPU.
pub fn set_current_thread_cpus(cpus: &[usize]) -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: a zeroed cpu_set_t with CPUs below CPU_SETSIZE set, passed
    // with its size for the calling thread (pid 0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            if cpu >= libc::CPU_SETSIZE as usize {
                return false;
            }
            libc::CPU_SET(cpu, &mut set);
        }
        !cpus.is_empty()
            && libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpus;
        false
    }
}

/// The CPU the socket's packets last arrived on (`None` where the kernel
/// does not say).
pub fn incoming_cpu(sock: &std::net::TcpStream) -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let mut cpu: libc::c_int = -1;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt on an open socket with a pointer to a local
        // c_int and its length.
        let r = unsafe {
            libc::getsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_INCOMING_CPU,
                (&mut cpu as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (r == 0 && cpu >= 0).then_some(cpu as usize)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = sock;
        None
    }
}

/// The CPUs `threads` connection threads are pinned to, one each (thread
/// `i` on the `i`-th), or `None`: leave them unpinned. Pinned only when
/// asked and when the CPUs allowed are exactly as many as the threads.
pub fn plan(threads: usize, pin: bool, allowed: &[usize]) -> Option<Vec<usize>> {
    (pin && threads > 1 && allowed.len() == threads).then(|| allowed.to_vec())
}

/// Picks the thread for each new connection: the one pinned to the CPU
/// the connection came in on, unless another thread serves none, or that
/// thread already serves more than the least busy one plus the larger of
/// one and a quarter of the average (so that a client's burst of connects
/// still lands together); else the least busy thread, in turn among
/// equals.
///
/// The balance matters more than the steering: two pgbench threads that
/// happened to connect from the same CPU put both connections on one
/// server thread, and when the scheduler then moved one client to the
/// other CPU, that thread served both across CPUs while the other idled
/// (measured: 24k transactions a second instead of 140k, at 2 clients).
#[derive(Debug)]
pub struct Steer {
    /// Thread of each CPU (by CPU number), where pinned.
    by_cpu: Vec<Option<usize>>,
    threads: usize,
    next: usize,
}

impl Steer {
    /// `pinned`: thread `i` runs on `pinned[i]` (empty: none pinned).
    pub fn new(threads: usize, pinned: &[usize]) -> Steer {
        let mut by_cpu = vec![None; pinned.iter().max().map_or(0, |m| m + 1)];
        for (t, &cpu) in pinned.iter().enumerate() {
            by_cpu[cpu] = Some(t);
        }
        Steer {
            by_cpu,
            threads: threads.max(1),
            next: 0,
        }
    }

    /// The thread for a connection that came in on `cpu`, with `live[t]`
    /// connections open on thread `t` now.
    pub fn pick(&mut self, cpu: Option<usize>, live: &[usize]) -> usize {
        let n = self.threads;
        let count = |t: usize| live.get(t).copied().unwrap_or(0);
        let min = (0..n).map(count).min().unwrap_or(0);
        // Every thread gets a connection before any gets two; then a
        // thread may run ahead of the least busy by one, or by a quarter
        // of the average (a client thread whose connects come in a burst
        // before another's, or one just closed but not yet counted out).
        let slack = if min == 0 {
            0
        } else {
            ((0..n).map(count).sum::<usize>() / (4 * n)).max(1)
        };
        if let Some(t) = cpu.and_then(|c| self.by_cpu.get(c).copied().flatten())
            && count(t) <= min + slack
        {
            return t;
        }
        let start = self.next;
        self.next = self.next.wrapping_add(1);
        (0..n)
            .map(|k| (start + k) % n)
            .find(|&t| count(t) == min)
            .unwrap_or(start % n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_only_when_asked_and_the_cpus_match_the_threads() {
        assert_eq!(plan(2, true, &[0, 1]), Some(vec![0, 1]));
        assert_eq!(plan(2, true, &[4, 7]), Some(vec![4, 7]));
        assert_eq!(plan(2, false, &[0, 1]), None, "--no-pin");
        // A quota of 2 CPUs over a set of 16: threads float.
        assert_eq!(plan(2, true, &(0..16).collect::<Vec<_>>()), None);
        assert_eq!(plan(2, true, &[]), None, "CPUs unknown");
        assert_eq!(plan(1, true, &[3]), None, "one thread: nothing to steer");
    }

    #[test]
    fn a_connection_goes_to_the_thread_of_its_cpu_else_round_robin() {
        let mut s = Steer::new(2, &[4, 7]);
        let idle = [0, 0];
        assert_eq!(s.pick(Some(7), &idle), 1);
        assert_eq!(s.pick(Some(4), &idle), 0);
        // Unknown CPU, one outside the set, one past the table: in turn.
        assert_eq!(s.pick(None, &idle), 0);
        assert_eq!(s.pick(Some(5), &idle), 1);
        assert_eq!(s.pick(Some(4096), &idle), 0);
        assert_eq!(s.pick(None, &idle), 1);

        let mut rr = Steer::new(3, &[]);
        let picks: Vec<usize> = (0..6).map(|i| rr.pick(Some(i % 2), &[0, 0, 0])).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2], "not pinned: round robin");
    }

    #[test]
    fn steering_gives_way_to_balance() {
        let mut s = Steer::new(2, &[0, 1]);
        // Two clients that connected from the same CPU: one each.
        let mut live = [0, 0];
        for _ in 0..2 {
            let t = s.pick(Some(0), &live);
            live[t] += 1;
        }
        assert_eq!(live, [1, 1]);
        // A busier thread still takes its CPU's connection within a
        // quarter of the average (64 open: 8), or one over.
        assert_eq!(s.pick(Some(0), &[40, 24]), 1, "16 over the least: no");
        assert_eq!(s.pick(Some(0), &[33, 31]), 0, "2 over the least: yes");
        assert_eq!(s.pick(Some(0), &[3, 2]), 0, "one over: yes");
        assert_eq!(s.pick(Some(0), &[4, 2]), 1, "two over of six: no");
        assert_eq!(s.pick(Some(0), &[1, 0]), 1, "another serves none: no");
        // Two client threads connecting in turn from their CPUs (the
        // usual pgbench start): every connection on its CPU's thread.
        let mut live = [0, 0];
        for i in 0..64 {
            let cpu = i % 2;
            let t = s.pick(Some(cpu), &live);
            assert_eq!(t, cpu, "connection {i}");
            live[t] += 1;
        }
        // One client thread's 32 connections first: never more than a
        // quarter of the average apart.
        let mut live = [0, 0];
        for _ in 0..32 {
            let t = s.pick(Some(0), &live);
            live[t] += 1;
            assert!(
                live[0].abs_diff(live[1]) <= 1 + ((live[0] + live[1]) / 8).max(1),
                "{live:?}"
            );
        }
    }

    /// The kernel reports the CPU a loopback client connected from: a
    /// client thread pinned to each allowed CPU in turn.
    #[cfg(target_os = "linux")]
    #[test]
    fn incoming_cpu_is_the_clients_cpu_on_loopback() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty(), "sched_getaffinity gave no CPU");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        for &cpu in cpus.iter().take(4) {
            let client = std::thread::spawn(move || {
                assert!(pin_current_thread(cpu), "pinning to CPU {cpu}");
                let mut c = std::net::TcpStream::connect(addr).unwrap();
                std::io::Write::write_all(&mut c, b"x").unwrap();
                c
            });
            let (mut s, _) = listener.accept().unwrap();
            let mut b = [0u8; 1];
            std::io::Read::read_exact(&mut s, &mut b).unwrap();
            let _c = client.join().unwrap();
            assert_eq!(incoming_cpu(&s), Some(cpu));
        }
    }
}
