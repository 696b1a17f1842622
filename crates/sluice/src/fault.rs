//! Fault injection for the crash and resource tests, driven by the
//! `SLUICE_FAULT` environment variable (unset in normal use: then each
//! hook is one relaxed load of an initialised cell).
//!
//! - `disk-full-after=BYTES`: writes of segments, key-index runs, load
//!   journals and the manifest fail with "No space left on device" once the
//!   process has written BYTES of them.
//! - `merge-before-commit`: a key-index merge aborts the process just
//!   before its commit (see `store::keyed`).
//! - `export-abort-after-files=N`: an export or a conversion aborts the
//!   process once it has closed N files (see `dataset`).
//! - `spill-abort-after-bytes=N`: a query aborts the process once it has
//!   written N bytes to spill files (see `query::spill`); the writes of
//!   spill files count towards `disk-full-after` too.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

fn disk_limit() -> Option<u64> {
    static LIMIT: OnceLock<Option<u64>> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("SLUICE_FAULT")
            .ok()?
            .strip_prefix("disk-full-after=")?
            .parse()
            .ok()
    })
}

/// Counts `n` bytes about to be written to a data file; fails as a full
/// disk would when `disk-full-after` is set and passed.
pub(crate) fn charge(n: usize) -> std::io::Result<()> {
    static USED: AtomicU64 = AtomicU64::new(0);
    if let Some(limit) = disk_limit() {
        let used = USED.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        if used > limit {
            // ENOSPC.
            return Err(std::io::Error::from_raw_os_error(28));
        }
    }
    Ok(())
}

/// Counts a file an export (or conversion) closed; aborts the process at the
/// `export-abort-after-files` count.
pub(crate) fn export_file_closed() {
    static LIMIT: OnceLock<Option<u64>> = OnceLock::new();
    static CLOSED: AtomicU64 = AtomicU64::new(0);
    let limit = *LIMIT.get_or_init(|| {
        std::env::var("SLUICE_FAULT")
            .ok()?
            .strip_prefix("export-abort-after-files=")?
            .parse()
            .ok()
    });
    if let Some(n) = limit
        && CLOSED.fetch_add(1, Ordering::Relaxed) + 1 >= n
    {
        std::process::abort();
    }
}

/// Counts `n` bytes written to spill files; aborts the process at the
/// `spill-abort-after-bytes` count (a query killed mid-spill).
pub(crate) fn spilled(n: u64) {
    static LIMIT: OnceLock<Option<u64>> = OnceLock::new();
    static WRITTEN: AtomicU64 = AtomicU64::new(0);
    let limit = *LIMIT.get_or_init(|| {
        std::env::var("SLUICE_FAULT")
            .ok()?
            .strip_prefix("spill-abort-after-bytes=")?
            .parse()
            .ok()
    });
    if let Some(limit) = limit
        && WRITTEN.fetch_add(n, Ordering::Relaxed) + n >= limit
    {
        std::process::abort();
    }
}
