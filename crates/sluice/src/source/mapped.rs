//! Input files mapped into memory, read without a copy.
//!
//! Useful for: the loader's reader handing the workers ranges of a large
//! plain file as the page cache holds them. Reading a file with `read(2)`
//! copies every byte into a buffer of ours (~20 % of the CPU time of a
//! load of integers, the largest stage after parsing); a mapping costs
//! page-table entries instead.
//! Not useful for: compressed, transcoded or streamed inputs (they are
//! read), or files smaller than a block (one copy of them is cheap).
//!
//! # A file that shrinks
//!
//! A mapped page whose part of the file was cut away (another process
//! truncated the file during the load) cannot be read: the kernel sends
//! `SIGBUS`, which would kill the process without a word. Every mapping is
//! registered; a `SIGBUS` whose address lies in one ends the process with
//! a message that names the cause and exit status [`SHRANK_EXIT`]. Like any
//! crash during a load, that leaves every table as its last commit left
//! it. A `SIGBUS` elsewhere goes to the handler installed before ours (or
//! the default action). Only the command-line tool maps files (see
//! `LoadOptions::map_files`): a library caller's process (a server, a
//! Python interpreter) is never ended this way.

use std::path::Path;

/// The exit status of a process whose mapped input shrank during a load.
pub const SHRANK_EXIT: i32 = 75;

/// A read-only mapping of a whole file.
pub struct Mapped {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    ptr: *mut libc::c_void,
    len: usize,
    /// Its place in the registry of mappings.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    slot: usize,
}

// SAFETY: the mapping is read-only and owned: the pointer is only read
// through `bytes`, and unmapped once, when the last owner drops it.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Maps `path` when it is a regular file of at least `min_len` bytes
    /// and the system allows; `None` otherwise (the caller reads it).
    pub fn open(path: &Path, min_len: u64) -> Option<Mapped> {
        imp::open(path, min_len)
    }

    /// The file's bytes as mapped.
    pub fn bytes(&self) -> &[u8] {
        imp::bytes(self)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Maps the pages of `range` now, in one call, and reads them from
    /// the disk if they are not in the page cache: cheaper than a fault
    /// for every sixteen pages as they are first read. A hint: where the
    /// system does not take it (Linux before 5.14), the faults map them.
    pub fn populate(&self, range: std::ops::Range<usize>) {
        imp::populate(self, range)
    }

    /// Says that `range` will not be read again: the pages wholly inside
    /// it are unmapped now (by the thread that read them last, while the
    /// other threads work), not all at once when the mapping drops. A
    /// later read of them maps them again.
    pub fn release(&self, range: std::ops::Range<usize>) {
        imp::release(self, range)
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        imp::close(self)
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::Path;
    use std::sync::Once;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::{Mapped, SHRANK_EXIT};

    /// Mappings open at once (a load maps the file it reads; more than this
    /// are read instead).
    const SLOTS: usize = 64;

    /// Start and end addresses of the mappings open (0, 0: a free slot),
    /// read by the signal handler.
    static STARTS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
    static ENDS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
    /// Whether the handler is installed (its predecessor saved in PREVIOUS).
    static INSTALL: Once = Once::new();
    static INSTALLED: AtomicUsize = AtomicUsize::new(0);
    static mut PREVIOUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::uninit();

    const MESSAGE: &[u8] = b"sluice: an input file shrank while the load read it (another process \
truncated or replaced it in place); the load stopped, and every table keeps its last commit. \
Load it again once it is complete, or with --no-mmap to read it instead of mapping it.\n";

    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO
        // handler; only atomics, write(2) and _exit(2) are used here, all
        // async-signal-safe.
        unsafe {
            let addr = (*info).si_addr() as usize;
            for i in 0..SLOTS {
                let s = STARTS[i].load(Ordering::Acquire);
                if s != 0 && addr >= s && addr < ENDS[i].load(Ordering::Acquire) {
                    libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
                    libc::_exit(SHRANK_EXIT);
                }
            }
            // Not ours: the handler before ours takes it.
            let prev = &*(&raw const PREVIOUS).cast::<libc::sigaction>();
            if prev.sa_sigaction == libc::SIG_DFL || prev.sa_sigaction == libc::SIG_IGN {
                // Returning repeats the fault under the default action.
                libc::sigaction(sig, prev, std::ptr::null_mut());
            } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(prev.sa_sigaction);
                f(sig, info, ctx);
            } else {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute(prev.sa_sigaction);
                f(sig);
            }
        }
    }

    fn install() -> bool {
        INSTALL.call_once(|| {
            // SAFETY: sigaction with a zeroed, then filled, struct; the
            // previous action is written before ours can run.
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_sigbus as *const () as usize;
                act.sa_flags = libc::SA_SIGINFO;
                libc::sigemptyset(&mut act.sa_mask);
                let prev = (&raw mut PREVIOUS).cast::<libc::sigaction>();
                if libc::sigaction(libc::SIGBUS, &act, prev) == 0 {
                    INSTALLED.store(1, Ordering::Release);
                }
            }
        });
        INSTALLED.load(Ordering::Acquire) == 1
    }

    pub(super) fn open(path: &Path, min_len: u64) -> Option<Mapped> {
        // Only a regular file: opening a named pipe again would wait for
        // a writer (non-blocking all the same, should the path change
        // between the look and the open).
        if !std::fs::metadata(path).ok()?.is_file() {
            return None;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() < min_len.max(1) {
            return None;
        }
        let len = usize::try_from(meta.len()).ok()?;
        if !install() {
            return None;
        }
        // SAFETY: a shared, read-only mapping of a file we opened; the
        // result is checked before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        let start = ptr as usize;
        let slot = (0..SLOTS).find(|&i| {
            STARTS[i]
                .compare_exchange(0, start, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        });
        let Some(slot) = slot else {
            // SAFETY: the mapping made above, not used.
            unsafe { libc::munmap(ptr, len) };
            return None;
        };
        ENDS[slot].store(start + len, Ordering::Release);
        Some(Mapped { ptr, len, slot })
    }

    pub(super) fn bytes(m: &Mapped) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until `m` drops.
        unsafe { std::slice::from_raw_parts(m.ptr as *const u8, m.len) }
    }

    const PAGE: usize = 4096;

    pub(super) fn populate(m: &Mapped, range: std::ops::Range<usize>) {
        // A file cut short fails the call (EFAULT), and the read of the
        // page then names it (see the module's documentation).
        advise(
            m,
            range.start / PAGE * PAGE,
            range.end.min(m.len),
            libc::MADV_POPULATE_READ,
        );
    }

    pub(super) fn release(m: &Mapped, range: std::ops::Range<usize>) {
        // MADV_DONTNEED on a shared file mapping drops page-table entries
        // only (the file and the page cache keep the bytes), and the
        // mapping stays reserved: no other mapping can take the range.
        let start = range.start.next_multiple_of(PAGE);
        advise(
            m,
            start,
            range.end.min(m.len) / PAGE * PAGE,
            libc::MADV_DONTNEED,
        );
    }

    /// `madvise` on bytes `start..end` of the mapping (`start` at a page).
    fn advise(m: &Mapped, start: usize, end: usize, advice: libc::c_int) {
        if end > start && end <= m.len {
            // SAFETY: a range inside the mapping, which is read-only;
            // neither advice changes a byte of it.
            unsafe {
                libc::madvise((m.ptr as *mut u8).add(start).cast(), end - start, advice);
            }
        }
    }

    pub(super) fn close(m: &mut Mapped) {
        // SAFETY: unmapped once, by its owner; the slot is freed after, so
        // a fault in the range is still named while it is mapped.
        unsafe { libc::munmap(m.ptr, m.len) };
        ENDS[m.slot].store(0, Ordering::Release);
        STARTS[m.slot].store(0, Ordering::Release);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    use std::path::Path;

    use super::Mapped;

    pub(super) fn open(_: &Path, _: u64) -> Option<Mapped> {
        None
    }

    pub(super) fn bytes(_: &Mapped) -> &[u8] {
        &[]
    }

    pub(super) fn populate(_: &Mapped, _: std::ops::Range<usize>) {}

    pub(super) fn release(_: &Mapped, _: std::ops::Range<usize>) {}

    pub(super) fn close(_: &mut Mapped) {}
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    /// A directory of the test's own, removed when it ends.
    struct Dir(std::path::PathBuf);
    impl Dir {
        fn new(tag: &str) -> Dir {
            let p =
                std::env::temp_dir().join(format!("sluice-mapped-{tag}-{}", std::process::id()));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
        fn path(&self) -> &std::path::Path {
            &self.0
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_mapping_holds_the_file_and_small_files_are_not_mapped() {
        let dir = Dir::new("holds");
        let p = dir.path().join("a.csv");
        let data: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
        std::fs::write(&p, &data).unwrap();
        let m = Mapped::open(&p, 1000).expect("a regular file maps");
        assert_eq!(m.bytes(), &data[..]);
        assert_eq!(m.len(), data.len());
        m.populate(0..m.len());
        m.populate(5000..3);
        m.release(5000..200_000);
        m.release(7..3);
        assert_eq!(m.bytes(), &data[..], "released pages read again");
        assert!(Mapped::open(&p, data.len() as u64 + 1).is_none());
        assert!(Mapped::open(dir.path(), 0).is_none(), "a directory");
        // A named pipe nobody writes to: not mapped, and not waited on.
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            assert!(Mapped::open(&fifo, 0).is_none(), "a named pipe");
        }
        std::fs::write(&p, b"").unwrap();
        assert!(Mapped::open(&p, 0).is_none(), "an empty file");
    }

    /// Run in a child process by the test below: maps a file, cuts it
    /// short, reads a page past the new end.
    #[test]
    #[ignore = "run by a_file_that_shrinks_ends_the_process_with_a_message"]
    fn child_reads_a_mapped_page_that_was_cut_away() {
        let Some(p) = std::env::var_os("SLUICE_SHRINK_FILE") else {
            return;
        };
        let p = std::path::PathBuf::from(p);
        std::fs::write(&p, vec![b'x'; 1 << 20]).unwrap();
        let m = Mapped::open(&p, 0).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(4096)
            .unwrap();
        let v = std::hint::black_box(m.bytes())[512 << 10];
        // Not reached: the read above faults.
        println!("read {v} past the end");
    }

    #[test]
    fn a_file_that_shrinks_ends_the_process_with_a_message() {
        let dir = Dir::new("shrinks");
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "source::mapped::tests::child_reads_a_mapped_page_that_was_cut_away",
                "--ignored",
                "--nocapture",
            ])
            .env("SLUICE_SHRINK_FILE", dir.path().join("f"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(SHRANK_EXIT), "stderr: {err}");
        assert!(err.contains("an input file shrank"), "stderr: {err}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("past the end"));
    }
}
