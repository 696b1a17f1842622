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
//! as a whole. The default limit is 80% of the machine's memory (or of
//! the cgroup's limit, when lower).
//!
//! What is not counted: a morsel's own intermediate columns (a few MiB a
//! worker, freed at the morsel's end), the segments' mapped files (the
//! page cache's, not the process's), parsing and planning.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
}

impl Memory {
    /// A pool of `limit` bytes.
    pub fn new(limit: u64) -> Memory {
        Memory(Arc::new(Pool {
            limit,
            used: AtomicU64::new(0),
            peak: AtomicU64::new(0),
        }))
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

    /// Takes `bytes` more, unless that passes the limit.
    fn take(&self, operator: &'static str, bytes: u64) -> Result<()> {
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
        self.0.used.fetch_sub(bytes, Ordering::Relaxed);
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
