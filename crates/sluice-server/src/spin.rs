//! A connection thread that has served what came keeps its CPU a little
//! while before it sleeps: it polls its connections' sockets, giving the
//! CPU to anything else runnable between polls, for up to a budget, and
//! sleeps only when nothing came in it. A client that sends its next
//! statement within the budget finds the thread awake: no wake-up of a
//! sleeping thread and no CPU leaving and re-entering its idle state,
//! which on a virtual machine is an exit to the host each time.
//!
//! Measured on 2 cores (BENCHMARKS.md, serve): one pgbench client's point
//! selects went from 11.9k to 22.1k a second with a 50 µs budget, and no
//! more with 100–400 µs; from 2 clients on the threads rarely sleep and
//! nothing changed beyond the noise. The price: up to the budget of CPU
//! after each answer (a client that sends every 60 µs keeps a core busy).
//! A thread polls only while no scan runs and it has few connections
//! ([`When`]): beside a scan, polling cost the point selects (p99 with
//! TPC-H Q1 beside 32 clients 1.3–2.5 ms against 0.6–1.3 ms), and a poll
//! ends early when a yield shows another thread wanting the CPU.
//!
//! tokio's epoll set is not reachable, so each thread watches its sockets
//! in a set of its own: a socket is added when its connection reaches
//! the thread and leaves when it is closed. A wake-up that is not a
//! socket (a scan's result, a new connection handed over) is seen once
//! the budget is spent, when the runtime's own wait returns at once.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// `sluice serve --spin-us`'s default.
pub const DEFAULT: Duration = Duration::from_micros(50);

thread_local! {
    static SPINNER: RefCell<Option<Spinner>> = const { RefCell::new(None) };
    static COUNTS: Cell<Counts> = const { Cell::new(Counts { woken: 0, slept: 0, contended: 0 }) };
}

/// What this thread's polls before sleeping ended in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// A socket became readable within the budget (no sleep needed).
    pub woken: u64,
    /// The budget ran out; the thread went to sleep.
    pub slept: u64,
    /// Another thread wanted the CPU (a yield took long), or [`When`]
    /// said no; the thread went to sleep.
    pub contended: u64,
}

/// A yield that takes this long ran another thread in between.
const CONTENDED: Duration = Duration::from_micros(5);

/// This thread's counts so far.
pub fn counts() -> Counts {
    COUNTS.with(Cell::get)
}

/// The sockets a connection thread serves, in an epoll set of its own,
/// and how long to poll them.
struct Spinner {
    #[cfg(target_os = "linux")]
    ep: std::os::fd::OwnedFd,
    budget: Duration,
    when: When,
}

/// When a thread polls: while no scan runs and it has at most
/// [`MAX_OPEN`] connections open. A scan means the cores have other work;
/// a thread with many connections is seldom idle for long, and its polls
/// measured no gain but cost the point selects beside a scan (BENCHMARKS.md,
/// serve).
pub struct When {
    /// Scans running in the server.
    pub scans: Arc<AtomicUsize>,
    /// Connections open on each connection thread, and which one this is.
    pub open: Arc<[AtomicUsize]>,
    pub thread: usize,
}

/// Connections a thread may have open and still poll before it sleeps.
pub const MAX_OPEN: usize = 4;

impl When {
    fn now(&self) -> bool {
        self.scans.load(Ordering::Relaxed) == 0
            && self
                .open
                .get(self.thread)
                .is_some_and(|n| n.load(Ordering::Relaxed) <= MAX_OPEN)
    }
}

/// Makes the calling thread poll for up to `budget` before it sleeps, at
/// the times `when` says; `false` for a zero budget or where the epoll
/// set cannot be had (the thread then sleeps at once, as before).
pub fn install(budget: Duration, when: When) -> bool {
    if budget.is_zero() {
        SPINNER.with(|s| *s.borrow_mut() = None);
        return false;
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::FromRawFd;
        // SAFETY: epoll_create1 returns a new descriptor or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return false;
        }
        // SAFETY: fd was just created and nothing else owns it.
        let ep = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        SPINNER.with(|s| *s.borrow_mut() = Some(Spinner { ep, budget, when }));
        true
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = when;
        false
    }
}

/// Watches a connection's socket on the calling thread (nothing where
/// the thread does not poll). It leaves the set when every handle on it
/// is closed (the server's second handle, `Backend::watch`, is dropped
/// with the connection).
pub fn watch(sock: &impl std::os::fd::AsRawFd) {
    #[cfg(target_os = "linux")]
    SPINNER.with(|s| {
        if let Some(s) = s.borrow().as_ref() {
            use std::os::fd::AsRawFd;
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: 0,
            };
            // SAFETY: both descriptors are open; ev outlives the call.
            unsafe {
                libc::epoll_ctl(
                    s.ep.as_raw_fd(),
                    libc::EPOLL_CTL_ADD,
                    sock.as_raw_fd(),
                    &mut ev,
                );
            }
        }
    });
    #[cfg(not(target_os = "linux"))]
    let _ = sock;
}

/// Called by the runtime before its thread sleeps: polls the sockets
/// until one is readable or the budget is spent. Reads nothing.
pub fn before_park() {
    #[cfg(target_os = "linux")]
    SPINNER.with(|s| {
        let Ok(s) = s.try_borrow() else { return };
        let Some(s) = s.as_ref() else { return };
        use std::os::fd::AsRawFd;
        if !s.when.now() {
            count(|c| c.contended += 1);
            return;
        }
        let start = Instant::now();
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        loop {
            // SAFETY: room for one event; timeout 0 returns at once.
            let n = unsafe { libc::epoll_wait(s.ep.as_raw_fd(), &mut ev, 1, 0) };
            if n > 0 {
                count(|c| c.woken += 1);
                return;
            }
            if n < 0 || start.elapsed() >= s.budget {
                count(|c| c.slept += 1);
                return;
            }
            let before = Instant::now();
            std::thread::yield_now();
            if before.elapsed() >= CONTENDED {
                // Another thread ran here in between: this CPU has other
                // work, and polling would only spend this thread's share
                // of it (it would wait longer behind them once its
                // statement comes). Sleep, as without a budget.
                count(|c| c.contended += 1);
                return;
            }
        }
    });
}

fn count(f: impl FnOnce(&mut Counts)) {
    COUNTS.with(|c| {
        let mut n = c.get();
        f(&mut n);
        c.set(n);
    });
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// The shortest budget: a poll still looks at the sockets once before
    /// it checks the budget, so what ends it is the sockets' state alone,
    /// never the clock.
    const ONCE: Duration = Duration::from_nanos(1);

    /// (woken, slept, contended) so far on this thread.
    fn all() -> (u64, u64, u64) {
        let c = counts();
        (c.woken, c.slept, c.contended)
    }

    /// (polls a socket ended, polls that ended in sleep): a poll ends in
    /// sleep when the budget runs out, or sooner when another thread
    /// wants the CPU (on a busy machine, either).
    fn ended() -> (u64, u64) {
        let c = counts();
        (c.woken, c.slept + c.contended)
    }

    /// Always (no scan, one connection open).
    fn always() -> When {
        When {
            scans: Arc::default(),
            open: Arc::new([AtomicUsize::new(1)]),
            thread: 0,
        }
    }

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (a, b)
    }

    #[test]
    fn polls_until_a_watched_socket_is_readable_and_reads_nothing() {
        std::thread::spawn(|| {
            // The socket ends this poll (were it not watched, the budget
            // would, and the count below would say so).
            assert!(install(ONCE, always()));
            let (mut client, mut server) = pair();
            watch(&server);
            client.write_all(b"Q").unwrap();
            before_park();
            assert_eq!(ended(), (1, 0));
            let mut b = [0u8; 1];
            server.read_exact(&mut b).unwrap();
            assert_eq!(&b, b"Q", "the byte is left for the connection");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn sleeps_when_nothing_comes_and_a_socket_closed_everywhere_leaves_the_set() {
        std::thread::spawn(|| {
            assert!(install(ONCE, always()));
            let (client, server) = pair();
            watch(&server);
            before_park();
            assert_eq!(ended(), (0, 1));
            // The peer closes: readable (end of file) until served...
            drop(client);
            let mut b = [0u8; 1];
            assert_eq!(server.peek(&mut b).unwrap(), 0, "end of file arrived");
            before_park();
            assert_eq!(ended(), (1, 1));
            // ...and not while a second handle on it is open...
            let second = server.try_clone().unwrap();
            drop(server);
            before_park();
            assert_eq!(ended(), (2, 1));
            // ...but once every handle is closed, no longer watched.
            drop(second);
            before_park();
            assert_eq!(ended(), (2, 2));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn no_polling_while_a_scan_runs_or_with_many_connections() {
        std::thread::spawn(|| {
            let when = always();
            let (scans, open) = (when.scans.clone(), when.open.clone());
            assert!(install(ONCE, when));
            let (mut client, server) = pair();
            watch(&server);
            client.write_all(b"Q").unwrap();
            // Readable, but a scan runs: sleep without polling.
            scans.store(1, Ordering::Relaxed);
            before_park();
            assert_eq!(all(), (0, 0, 1));
            // No scan, but more connections open than polling is for.
            scans.store(0, Ordering::Relaxed);
            open[0].store(MAX_OPEN + 1, Ordering::Relaxed);
            before_park();
            assert_eq!(all(), (0, 0, 2));
            open[0].store(MAX_OPEN, Ordering::Relaxed);
            before_park();
            assert_eq!(all(), (1, 0, 2));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn no_budget_no_polling() {
        std::thread::spawn(|| {
            assert!(!install(Duration::ZERO, always()));
            let (mut client, server) = pair();
            watch(&server);
            client.write_all(b"Q").unwrap();
            before_park();
            assert_eq!(counts(), Counts::default());
            assert_eq!(ended(), (0, 0));
        })
        .join()
        .unwrap();
    }
}
