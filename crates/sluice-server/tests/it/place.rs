//! Connection threads pinned to CPUs, and connections steered to the
//! thread of the CPU they come in on.

use std::sync::atomic::Ordering;

use sluice_server::place;

use crate::{Server, sample, with_client};

/// Connections handed to each connection thread of `srv` so far.
fn placed(srv: &Server) -> Vec<usize> {
    srv.engine
        .placed
        .iter()
        .map(|n| n.load(Ordering::Relaxed))
        .collect()
}

/// Runs `f` with a client of `srv` connected from a thread pinned to `cpu`.
fn from_cpu<T: Send>(
    srv: &Server,
    cpu: usize,
    f: impl AsyncFnOnce(&tokio_postgres::Client) -> T + Send,
) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(place::pin_current_thread(cpu));
            with_client(srv, f)
        })
        .join()
        .unwrap()
    })
}

/// The CPU each `sluice-conn-N` thread of this process may run on:
/// (N, its allowed CPUs) from /proc.
#[cfg(target_os = "linux")]
fn conn_thread_cpus() -> Vec<(usize, Vec<usize>)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(name) = std::fs::read_to_string(t.path().join("comm")) else {
            continue;
        };
        let Some(n) = name.trim().strip_prefix("sluice-conn-") else {
            continue;
        };
        let status = std::fs::read_to_string(t.path().join("status")).unwrap();
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim()
            .to_string();
        let mut cpus = Vec::new();
        for part in list.split(',') {
            match part.split_once('-') {
                Some((a, b)) => cpus.extend(a.parse::<usize>().unwrap()..=b.parse().unwrap()),
                None => cpus.push(part.parse().unwrap()),
            }
        }
        out.push((n.parse().unwrap(), cpus));
    }
    out
}

/// With as many CPUs allowed as connection threads, thread `i` runs on
/// the `i`-th CPU only, and a client connecting from a CPU is served by
/// that CPU's thread.
#[cfg(target_os = "linux")]
#[test]
fn connection_threads_pinned_and_connections_steered_to_their_cpu() {
    let dir = sample(10);
    let srv = Server::start(&dir.0.join("db"), |_| {});
    let allowed = place::allowed_cpus();
    let cores = sluice::exec::usable_cores();
    let pinned = srv.engine.pinned.clone();
    if allowed.len() != cores || cores < 2 {
        // A CPU quota below the CPU set (or one core): nothing pinned.
        assert!(
            pinned.is_empty(),
            "{pinned:?} with {allowed:?}, {cores} cores"
        );
        eprintln!(
            "skipped: {} CPUs allowed, {cores} usable: threads not pinned",
            allowed.len()
        );
        return;
    }
    assert_eq!(pinned, allowed);

    // The last CPU first: round robin would hand the first client to
    // thread 0.
    for (i, &cpu) in allowed.iter().enumerate().rev().take(4) {
        let before = placed(&srv);
        from_cpu(&srv, cpu, async |c| {
            let r = c
                .query_one("SELECT id FROM people WHERE id = 1", &[])
                .await
                .unwrap();
            assert_eq!(r.get::<_, i64>(0), 1);
        });
        let after = placed(&srv);
        let mut want = before.clone();
        want[i] += 1;
        assert_eq!(after, want, "a client on CPU {cpu} goes to thread {i}");
    }

    // Served, so started: this server's thread `i` is held to CPU
    // `allowed[i]`. (Other tests' servers run in this process too, some
    // unpinned: a thread is on its own CPU or free, never on another.)
    let threads = conn_thread_cpus();
    for (i, &cpu) in allowed.iter().enumerate() {
        assert!(
            threads.iter().any(|(n, cpus)| *n == i && cpus == &[cpu]),
            "sluice-conn-{i} not on CPU {cpu}: {threads:?}"
        );
    }
    for (n, cpus) in &threads {
        assert!(
            cpus == &[allowed[*n]] || cpus == &allowed,
            "sluice-conn-{n}: {cpus:?}"
        );
    }
}

/// A scan asked for on a pinned connection thread's CPU runs its workers
/// on every CPU, not on that thread's one (a thread inherits its starter's
/// CPUs: the scan's thread is started by the connection thread).
#[cfg(target_os = "linux")]
#[test]
fn a_scan_from_a_pinned_thread_gets_every_cpu() {
    let dir = sample(3000);
    let srv = Server::start(&dir.0.join("db"), |_| {});
    let allowed = place::allowed_cpus();
    if srv.engine.pinned.is_empty() {
        eprintln!(
            "skipped: threads not pinned here ({} CPUs allowed)",
            allowed.len()
        );
        return;
    }
    for &cpu in allowed.iter().rev().take(4) {
        srv.engine.scan_cpus.lock().unwrap().clear();
        from_cpu(&srv, cpu, async |c| {
            let r = c
                .query_one("SELECT count(*) FROM big WHERE v >= 500", &[])
                .await
                .unwrap();
            assert_eq!(r.get::<_, i64>(0), 1500);
        });
        assert_eq!(
            *srv.engine.scan_cpus.lock().unwrap(),
            allowed,
            "a scan asked for from CPU {cpu}"
        );
    }
}

/// `--no-pin`: the threads float and connections go round robin.
#[test]
fn not_pinned_when_asked_not_to() {
    let dir = sample(10);
    let srv = Server::start(&dir.0.join("db"), |o| o.pin_threads = false);
    assert!(srv.engine.pinned.is_empty());
    let n = with_client(&srv, async |c| {
        let r = c
            .query_one("SELECT count(*) FROM people", &[])
            .await
            .unwrap();
        r.get::<_, i64>(0)
    });
    assert_eq!(n, 3);
    let placed: usize = placed(&srv).iter().sum();
    assert_eq!(placed, 1);
}

/// `--spin-us 0`: connection threads sleep at once; statements, a scan
/// among them, are served the same.
#[test]
fn served_without_polling_before_sleep() {
    let dir = sample(100);
    let srv = Server::start(&dir.0.join("db"), |o| o.spin = std::time::Duration::ZERO);
    let (one, n) = with_client(&srv, async |c| {
        let one = c
            .query_one("SELECT name FROM people WHERE id = 1", &[])
            .await
            .unwrap();
        let n = c
            .query_one("SELECT count(*) FROM big WHERE v >= 50", &[])
            .await
            .unwrap();
        (one.get::<_, String>(0), n.get::<_, i64>(0))
    });
    assert_eq!((one.as_str(), n), ("ada", 50));
}
