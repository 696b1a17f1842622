//! Memory accounting of queries.
//!
//! Every operator that holds rows past a morsel — a hash join's build
//! side and its table, the joined rows between joins, a grouping's hash
//! table and accumulators, the rows a sort, a window or a set operation
//! holds, the rows a query answers with — reserves their bytes from one
//! [`Memory`] before (or, where the size is only known after, as soon as)
//! it holds them, and gives them back when it drops them
//! ([`Reservation`] releases on drop). A reservation that would take the
//! pool past its limit fails with [`Error::MemoryLimit`] (SQLSTATE 53200)
//! naming the operator and the limit: the query stops with that error,
//! every reservation it held is released as its operators unwind, and the
//! process goes on (a server serves the next query).
//!
//! One pool per query by default (`sluice query --memory-limit`,
//! `memory_limit=` in Python); `sluice serve` shares one among all its
//! sessions' queries, so that its limit bounds the server's query memory
//! as a whole, each query counting in a pool of its own above it
//! ([`Memory::for_query`]). A server query refused memory while others
//! held some waits for their room and runs again ([`Memory::admit`]). The default limit is 80% of the machine's memory (or of
//! the cgroup's limit, when lower).
//!
//! What is not counted: a morsel's own intermediate columns (a few MiB a
//! worker, freed at the morsel's end), the segments' mapped files (the
//! page cache's, not the process's), parsing and planning.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use arrow_array::{Array, RecordBatch};

use crate::error::{Error, Result};

/// The pool that a query's (or a server's) operators reserve from.
#[derive(Debug, Clone)]
pub struct Memory(Arc<Pool>);

#[derive(Debug)]
struct Pool {
    limit: u64,
    used: AtomicU64,
    peak: AtomicU64,
    /// A query's own pool takes its bytes from its server's pool too
    /// (see [`Memory::for_query`]): those past `grant`, which it took
    /// there when it was made (and gives back when it is dropped).
    parent: Option<Memory>,
    grant: u64,
    /// Holds a query pool's changes in order: its count and what it holds
    /// in the pool above change together.
    order: Mutex<()>,
    /// Threads in `wait_to_take`: a release wakes them.
    waiters: AtomicUsize,
    gate: Mutex<()>,
    freed: Condvar,
}

/// What [`Memory::admit`] decided about a query that failed for memory.
#[derive(Debug)]
pub enum Admission {
    /// Run it again now, with this pool: the room it needs is taken for
    /// it (so a query that runs again gets at least as far as before, and
    /// two that wait for each other cannot fail each other forever).
    Retry(Memory),
    /// It failed with no other query holding memory, or needs more than
    /// the whole limit: its error stands.
    Alone,
    /// Other queries still held the room it needs at the deadline.
    TimedOut,
    /// It was stopped while it waited.
    Stopped,
}

impl Memory {
    /// A pool of `limit` bytes.
    pub fn new(limit: u64) -> Memory {
        Memory::with_parent(limit, None, 0)
    }

    fn with_parent(limit: u64, parent: Option<Memory>, grant: u64) -> Memory {
        Memory(Arc::new(Pool {
            limit,
            used: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            parent,
            grant,
            order: Mutex::new(()),
            waiters: AtomicUsize::new(0),
            gate: Mutex::new(()),
            freed: Condvar::new(),
        }))
    }

    /// A pool for one query of those sharing this one (a server's): every
    /// byte it reserves is reserved here too, under this pool's limit;
    /// its own [`Memory::used`] and [`Memory::peak`] are the query's.
    /// What [`Memory::admit`] reads after the query failed.
    pub fn for_query(&self) -> Memory {
        Memory::with_parent(self.0.limit, Some(self.clone()), 0)
    }

    /// Whether a query that failed with `error` in `query` (its pool from
    /// [`Memory::for_query`] on this one, every reservation of it
    /// dropped) may run again: when other queries held memory at its
    /// failure and its need — its peak, or its part of the pool at the
    /// failure plus what it asked for — fits the limit, it waits until
    /// they leave that room (not past `deadline`; `stopped` is asked
    /// about every few milliseconds) and is told to retry. Admission
    /// control of a server's queries: under a shared limit a query that
    /// would fit alone waits for the others rather than failing.
    pub fn admit(
        &self,
        query: Memory,
        error: &Error,
        deadline: Instant,
        stopped: &dyn Fn() -> bool,
    ) -> Admission {
        let Error::MemoryLimit {
            wanted,
            used,
            others,
            ..
        } = error
        else {
            return Admission::Alone;
        };
        // `used - others`: the query's part of the shared pool at the
        // failure (what it held, or its grant when more).
        let need = query
            .peak()
            .max(used.saturating_sub(*others).saturating_add(*wanted));
        // Its grant, if any, goes back before room is sought for it.
        drop(query);
        if *others == 0 || need > self.0.limit {
            return Admission::Alone;
        }
        if self.wait_to_take(need, deadline, stopped) {
            Admission::Retry(Memory::with_parent(self.0.limit, Some(self.clone()), need))
        } else if stopped() {
            Admission::Stopped
        } else {
            Admission::TimedOut
        }
    }

    /// Takes `bytes` (for a query's grant) as soon as they fit, before
    /// `deadline`; `false`, holding nothing, when it passed or `stopped`
    /// said so first.
    fn wait_to_take(&self, bytes: u64, deadline: Instant, stopped: &dyn Fn() -> bool) -> bool {
        let p = &self.0;
        if Instant::now() >= deadline || stopped() {
            return false;
        }
        let room = || self.take("admission", bytes).is_ok();
        if room() {
            return true;
        }
        p.waiters.fetch_add(1, Ordering::SeqCst);
        let mut gate = p.gate.lock().unwrap_or_else(|e| e.into_inner());
        let ok = loop {
            // Checked under the gate, which a release takes before it
            // wakes the waiters: no release is missed between the check
            // and the wait.
            if room() {
                break true;
            }
            let now = Instant::now();
            if now >= deadline || stopped() {
                break false;
            }
            // A stop is no release: it is asked about at this pace.
            let slice = (deadline - now).min(Duration::from_millis(50));
            gate = match p.freed.wait_timeout(gate, slice) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        };
        drop(gate);
        p.waiters.fetch_sub(1, Ordering::SeqCst);
        ok
    }

    /// Threads waiting for room in this pool now.
    pub fn waiters(&self) -> usize {
        self.0.waiters.load(Ordering::SeqCst)
    }

    /// A pool of [`default_limit`] bytes.
    pub fn with_default_limit() -> Memory {
        Memory::new(default_limit())
    }

    pub fn limit(&self) -> u64 {
        self.0.limit
    }

    /// Bytes reserved now.
    pub fn used(&self) -> u64 {
        self.0.used.load(Ordering::Relaxed)
    }

    /// Whether rows of `bytes` that could as well be written to disk (a
    /// join's) are kept in memory: while they and all else held stay
    /// within half the limit, so that the hash tables and probes that
    /// read them find room.
    pub fn keeps_rows(&self, bytes: u64) -> bool {
        self.used().saturating_add(bytes) <= self.limit() / 2
    }

    /// The most bytes reserved at once so far.
    pub fn peak(&self) -> u64 {
        self.0.peak.load(Ordering::Relaxed)
    }

    /// Reserves `bytes` for `operator`; they are given back when the
    /// reservation is dropped.
    pub fn reserve(&self, operator: &'static str, bytes: u64) -> Result<Reservation> {
        self.reserve_profiled(operator, bytes, None)
    }

    /// [`Memory::reserve`], also counting the bytes per operator in
    /// `profile` (EXPLAIN ANALYZE).
    pub fn reserve_profiled(
        &self,
        operator: &'static str,
        bytes: u64,
        profile: Option<Arc<super::profile::Profile>>,
    ) -> Result<Reservation> {
        let mut r = Reservation {
            memory: self.clone(),
            operator,
            bytes: 0,
            profile,
        };
        r.resize(bytes)?;
        Ok(r)
    }

    /// Takes `bytes` more, here and (past the grant) in the pool above,
    /// unless that passes either's limit.
    fn take(&self, operator: &'static str, bytes: u64) -> Result<()> {
        let p = &self.0;
        let Some(parent) = &p.parent else {
            return self.take_own(operator, bytes);
        };
        let _order = p.order.lock().unwrap_or_else(|e| e.into_inner());
        let before = p.used.load(Ordering::Relaxed);
        let after = before.saturating_add(bytes);
        if after > p.limit {
            return self.take_own(operator, bytes);
        }
        let above = after.saturating_sub(p.grant) - before.saturating_sub(p.grant);
        if let Err(e) = parent.take(operator, above) {
            return Err(match e {
                // What the others held: all but this query's part.
                Error::MemoryLimit {
                    operator,
                    wanted,
                    used,
                    limit,
                    ..
                } => Error::MemoryLimit {
                    operator,
                    wanted,
                    used,
                    limit,
                    others: used.saturating_sub(before.max(p.grant)),
                },
                e => e,
            });
        }
        p.used.store(after, Ordering::Relaxed);
        p.peak.fetch_max(after, Ordering::Relaxed);
        Ok(())
    }

    fn take_own(&self, operator: &'static str, bytes: u64) -> Result<()> {
        let p = &self.0;
        let mut used = p.used.load(Ordering::Relaxed);
        loop {
            let want = used.saturating_add(bytes);
            if want > p.limit {
                return Err(Error::MemoryLimit {
                    operator,
                    wanted: bytes,
                    used,
                    limit: p.limit,
                    others: 0,
                });
            }
            match p
                .used
                .compare_exchange_weak(used, want, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    p.peak.fetch_max(want, Ordering::Relaxed);
                    return Ok(());
                }
                Err(now) => used = now,
            }
        }
    }

    fn give(&self, bytes: u64) {
        let p = &self.0;
        match &p.parent {
            None => {
                p.used.fetch_sub(bytes, Ordering::AcqRel);
            }
            Some(parent) => {
                let _order = p.order.lock().unwrap_or_else(|e| e.into_inner());
                let before = p.used.load(Ordering::Relaxed);
                let after = before.saturating_sub(bytes);
                p.used.store(after, Ordering::Relaxed);
                let above = before.saturating_sub(p.grant) - after.saturating_sub(p.grant);
                if above > 0 {
                    parent.give(above);
                }
            }
        }
        if p.waiters.load(Ordering::SeqCst) > 0 {
            let _gate = p.gate.lock().unwrap_or_else(|e| e.into_inner());
            p.freed.notify_all();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // A query's grant, taken in its server's pool when it was made.
        if let Some(parent) = &self.parent
            && self.grant > 0
        {
            parent.give(self.grant);
        }
    }
}

/// Bytes an operator holds, counted in its [`Memory`] until dropped.
#[derive(Debug)]
pub struct Reservation {
    memory: Memory,
    operator: &'static str,
    bytes: u64,
    profile: Option<Arc<super::profile::Profile>>,
}

impl Reservation {
    /// Holds `bytes` in all (more or fewer than before); fails, holding
    /// what it held, when more would pass the limit.
    pub fn resize(&mut self, bytes: u64) -> Result<()> {
        if bytes == self.bytes {
            // No atomic on the shared counter for nothing.
            return Ok(());
        }
        if bytes > self.bytes {
            self.memory.take(self.operator, bytes - self.bytes)?;
            if let Some(p) = &self.profile {
                p.account(self.operator, bytes - self.bytes, 0);
            }
        } else {
            self.memory.give(self.bytes - bytes);
            if let Some(p) = &self.profile {
                p.account(self.operator, 0, self.bytes - bytes);
            }
        }
        self.bytes = bytes;
        Ok(())
    }

    /// Holds `bytes` more.
    pub fn grow(&mut self, bytes: u64) -> Result<()> {
        self.resize(self.bytes.saturating_add(bytes))
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.memory.give(self.bytes);
        if let Some(p) = &self.profile {
            p.account(self.operator, 0, self.bytes);
        }
    }
}

/// Bytes that `batch`'s rows take (of a slice, the slice's share of its
/// buffers, not the whole buffers).
pub fn batch_bytes(batch: &RecordBatch) -> u64 {
    batch
        .columns()
        .iter()
        .map(|c| array_bytes(c.as_ref()))
        .sum()
}

/// Bytes of one array's rows (see [`batch_bytes`]).
pub fn array_bytes(a: &dyn Array) -> u64 {
    let d = a.to_data();
    d.get_slice_memory_size()
        .unwrap_or_else(|_| a.get_array_memory_size()) as u64
}

/// `b`'s rows in buffers of their own: a copy that points neither into
/// a mapped file's pages nor into a larger batch it was sliced from
/// (`concat` of one batch is a slice of it, not a copy).
pub fn owned_batch(b: &RecordBatch) -> crate::error::Result<RecordBatch> {
    let all = arrow_array::UInt32Array::from_iter_values(0..b.num_rows() as u32);
    arrow_select::take::take_record_batch(b, &all).map_err(super::expr::exec_err)
}

/// Bytes of several batches' rows.
pub fn batches_bytes<'a>(batches: impl IntoIterator<Item = &'a RecordBatch>) -> u64 {
    batches.into_iter().map(batch_bytes).sum()
}

/// 80% of the memory this process may use: the machine's, or its
/// cgroup's limit when lower (DuckDB's default share). 4 GiB when
/// neither can be read.
pub fn default_limit() -> u64 {
    let total = machine_memory();
    let cgroup = cgroup_limit();
    let avail = match (total, cgroup) {
        (Some(t), Some(c)) => t.min(c),
        (Some(t), None) => t,
        (None, Some(c)) => c,
        (None, None) => 5 << 30,
    };
    avail / 5 * 4
}

fn machine_memory() -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn cgroup_limit() -> Option<u64> {
    for f in [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ] {
        if let Ok(s) = std::fs::read_to_string(f)
            && let Ok(v) = s.trim().parse::<u64>()
            // cgroup v1 writes "no limit" as a huge number.
            && v < (1 << 60)
        {
            return Some(v);
        }
    }
    None
}

/// `n` bytes as people read them: `512 B`, `1.5 MiB`, `2.0 GiB`.
pub fn human_bytes(n: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_count_and_release() {
        let m = Memory::new(1000);
        let mut a = m.reserve("a", 600).unwrap();
        assert_eq!(m.used(), 600);
        let e = m.reserve("hash join", 500).unwrap_err();
        assert_eq!(e.sqlstate(), "53200");
        let text = e.to_string();
        assert!(text.contains("hash join"), "{text}");
        assert!(text.contains("1000 B"), "{text}");
        // The failed reservation holds nothing.
        assert_eq!(m.used(), 600);
        a.resize(100).unwrap();
        assert_eq!(m.used(), 100);
        let b = m.reserve("b", 900).unwrap();
        assert_eq!(m.used(), 1000);
        assert!(a.grow(1).is_err());
        assert_eq!(a.bytes(), 100);
        drop(b);
        drop(a);
        assert_eq!(m.used(), 0);
        assert_eq!(m.peak(), 1000);
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(3600)
    }

    #[test]
    fn a_query_pool_counts_in_its_server_pool() {
        let server = Memory::new(1000);
        let q = server.for_query();
        let mut a = q.reserve("a", 300).unwrap();
        assert_eq!((q.used(), server.used()), (300, 300));
        a.resize(100).unwrap();
        assert_eq!((q.used(), server.used()), (100, 100));
        assert_eq!(q.peak(), 300);
        let other = server.reserve("other", 850).unwrap();
        // The server's limit refuses, and says what it holds in all.
        let e = q.reserve("b", 100).unwrap_err();
        assert!(
            matches!(
                e,
                Error::MemoryLimit {
                    used: 950,
                    others: 850,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!((q.used(), server.used()), (100, 950));
        drop((a, other));
        assert_eq!((q.used(), server.used()), (0, 0));
    }

    #[test]
    fn a_query_that_failed_beside_others_waits_for_their_room() {
        let server = Memory::new(1000);
        let other = server.reserve("other", 600).unwrap();
        let q = server.for_query();
        let a = q.reserve("a", 300).unwrap();
        let e = q.reserve("b", 200).unwrap_err();
        drop(a);
        let waiting = {
            let server = server.clone();
            std::thread::spawn(move || server.admit(q, &e, far(), &|| false))
        };
        // It waits (600 held by another, 500 needed) until that is given
        // back.
        while server.waiters() == 0 {
            std::thread::yield_now();
        }
        assert!(!waiting.is_finished());
        drop(other);
        let Admission::Retry(granted) = waiting.join().unwrap() else {
            panic!("not admitted");
        };
        // Its need (300 held + 200 asked) is taken for it: another query
        // finds the room gone; the query's own reservations within it
        // take nothing more from the server.
        assert_eq!(server.used(), 500);
        assert!(server.reserve("another", 600).is_err());
        let r = granted.reserve("a", 500).unwrap();
        assert_eq!(server.used(), 500);
        let more = granted.reserve("b", 100).unwrap();
        assert_eq!((granted.used(), server.used()), (600, 600));
        drop((r, more));
        assert_eq!(server.used(), 500);
        drop(granted);
        assert_eq!(server.used(), 0);
    }

    #[test]
    fn a_query_that_fails_alone_or_past_the_limit_is_not_retried() {
        let server = Memory::new(1000);
        // Alone: nobody else held memory.
        let q = server.for_query();
        let a = q.reserve("a", 900).unwrap();
        let e = q.reserve("b", 200).unwrap_err();
        drop(a);
        assert!(matches!(
            server.admit(q, &e, far(), &|| false),
            Admission::Alone
        ));
        // Beside another, but needing more than the whole limit.
        let other = server.reserve("other", 100).unwrap();
        let q = server.for_query();
        let a = q.reserve("a", 850).unwrap();
        let e = q.reserve("b", 200).unwrap_err();
        drop(a);
        assert!(matches!(
            server.admit(q, &e, far(), &|| false),
            Admission::Alone
        ));
        // Another error is not the memory's.
        let q = server.for_query();
        let e = Error::Internal("x".into());
        assert!(matches!(
            server.admit(q, &e, far(), &|| false),
            Admission::Alone
        ));
        drop(other);
        assert_eq!(server.used(), 0);
    }

    #[test]
    fn a_wait_ends_at_its_deadline_or_when_stopped() {
        let server = Memory::new(1000);
        let other = server.reserve("other", 600).unwrap();
        let failed = || {
            let q = server.for_query();
            let a = q.reserve("a", 300).unwrap();
            let e = q.reserve("b", 200).unwrap_err();
            drop(a);
            (q, e)
        };
        let (q, e) = failed();
        let past = Instant::now();
        assert!(matches!(
            server.admit(q, &e, past, &|| false),
            Admission::TimedOut
        ));
        // Past its deadline it is not retried even when the room is free.
        let (q, e) = failed();
        let spare = other;
        drop(spare);
        assert!(matches!(
            server.admit(q, &e, past, &|| false),
            Admission::TimedOut
        ));
        let other = server.reserve("other", 600).unwrap();
        let (q, e) = failed();
        assert!(matches!(
            server.admit(q, &e, far(), &|| true),
            Admission::Stopped
        ));
        assert_eq!(server.waiters(), 0);
        drop(other);
        assert_eq!(server.used(), 0);
    }

    #[test]
    fn slices_count_their_share() {
        let a: arrow_array::ArrayRef = std::sync::Arc::new(arrow_array::Int64Array::from(
            (0..1000).collect::<Vec<i64>>(),
        ));
        let whole = array_bytes(a.as_ref());
        let part = array_bytes(a.slice(0, 100).as_ref());
        assert!(whole >= 8000, "{whole}");
        assert!(part < 1000, "{part}");
    }

    #[test]
    fn default_limit_is_a_share_of_something() {
        let d = default_limit();
        assert!(d > 0);
        if let Some(t) = machine_memory() {
            assert!(d < t);
        }
    }
}
