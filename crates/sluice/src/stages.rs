//! Where a load's CPU time goes, stage by stage: each stage's code runs
//! inside [`time`], which adds the CPU time of the thread running it
//! (the kernel's work for it included, time spent waiting not) to the
//! stage's counter. A stage timed inside another is taken out of the
//! outer one's, so the stages add up to the CPU time they cover.
//!
//! Useful for: `sluice load --timing` and `sluice bench ingest
//! --profile`, which print these counters; where to look before
//! optimising the loader.
//! Not useful for: wall time (the stages overlap on several threads).
//! The counters are per process: two loads at once in one process (a
//! server, a Python program) are accounted together.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// A stage of a load, from the bytes of its files to the commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Reading input files (system calls, decompression, transcoding).
    Read,
    /// The CRC-32 of each input file, for the load journal.
    InputChecksum,
    /// Finding where blocks end (record boundaries, quote parity).
    Cut,
    /// Tokenizing and converting fields into column builders.
    Parse,
    /// Finishing batches: zone maps, dictionaries, keys, shards.
    Build,
    /// Arrow IPC encoding of segments and merging batch dictionaries.
    Encode,
    /// The CRC-32s of segment files.
    Checksum,
    /// Handing segment bytes to the kernel.
    Write,
    /// `fsync` of segments, the manifest and directories.
    Sync,
    /// The commit: key index, manifest, journal (less what is above).
    Commit,
}

const STAGES: [(Stage, &str); 10] = [
    (Stage::Read, "read"),
    (Stage::InputChecksum, "input_checksum"),
    (Stage::Cut, "cut"),
    (Stage::Parse, "parse"),
    (Stage::Build, "build"),
    (Stage::Encode, "encode"),
    (Stage::Checksum, "checksum"),
    (Stage::Write, "write"),
    (Stage::Sync, "sync"),
    (Stage::Commit, "commit"),
];

static NANOS: [AtomicU64; 10] = [const { AtomicU64::new(0) }; 10];

thread_local! {
    /// CPU time of the stages timed inside the one running on this
    /// thread, to be taken out of it.
    static INNER: Cell<u64> = const { Cell::new(0) };
}

/// This thread's CPU time in nanoseconds (0 where it cannot be read).
fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return 0;
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Runs `f` as part of `stage`.
#[inline]
pub fn time<T>(stage: Stage, f: impl FnOnce() -> T) -> T {
    let outer = INNER.with(|c| c.replace(0));
    let start = thread_cpu_ns();
    let r = f();
    let spent = thread_cpu_ns().saturating_sub(start);
    let inner = INNER.with(|c| c.get());
    NANOS[stage as usize].fetch_add(spent.saturating_sub(inner), Ordering::Relaxed);
    INNER.with(|c| c.set(outer + spent));
    r
}

/// The counters now, to subtract from a later [`Snapshot`].
#[derive(Debug, Clone, Copy)]
pub struct Snapshot([u64; 10]);

/// The counters now.
pub fn snapshot() -> Snapshot {
    Snapshot(std::array::from_fn(|i| NANOS[i].load(Ordering::Relaxed)))
}

/// CPU seconds of one stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageTime {
    pub stage: &'static str,
    pub cpu_seconds: f64,
}

impl Snapshot {
    /// Each stage's CPU time since `earlier`, in the order of the stages.
    pub fn since(&self, earlier: &Snapshot) -> Vec<StageTime> {
        STAGES
            .iter()
            .map(|&(s, name)| StageTime {
                stage: name,
                cpu_seconds: self.0[s as usize].saturating_sub(earlier.0[s as usize]) as f64 / 1e9,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(ms: u64) -> u64 {
        let end = thread_cpu_ns() + ms * 1_000_000;
        let mut x = 0u64;
        while thread_cpu_ns() < end {
            x = x.wrapping_add(1);
        }
        x
    }

    #[test]
    fn inner_stages_are_taken_out_of_outer_ones() {
        let before = snapshot();
        time(Stage::Encode, || {
            spin(20);
            time(Stage::Checksum, || spin(30));
        });
        let d = snapshot().since(&before);
        let get = |n: &str| d.iter().find(|s| s.stage == n).unwrap().cpu_seconds;
        // Other tests may time stages at once: at least what was spent.
        assert!(get("checksum") >= 0.030, "{d:?}");
        assert!(get("encode") >= 0.020, "{d:?}");
        // The outer one does not hold the inner one's 30 ms: only its own
        // 20 ms and the little around it (this test alone times encode).
        assert!(get("encode") < 0.045, "{d:?}");
        assert_eq!(d.len(), 10);
    }
}
