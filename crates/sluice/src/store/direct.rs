//! A file written past the page cache (`O_DIRECT`), for segment files.
//!
//! Useful for: writing a new file once, front to back, when its bytes need
//! not stay in memory. Bytes are gathered in an aligned buffer and written
//! in chunks that the device takes as they are, so the kernel neither
//! copies them into the page cache nor writes dirty pages back later.
//! Copying a load's segments into the page cache was 10-30 % of its CPU
//! time, and varied with how the machine's memory was backed (a fresh page
//! of cache costs more than a reused buffer of ours).
//!
//! Where the file system refuses direct I/O (tmpfs, some network file
//! systems), or on other systems than Linux, the file is written through
//! the page cache as before, the same bytes. The last chunk's whole
//! blocks are written directly and its tail through the page cache (the
//! flag cleared), so that the file never grows past its length: padding
//! the tail to a block would, and could pass a file-size limit that the
//! file itself does not.
//!
//! Not useful for: files read again soon by this process, or written in
//! place.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// Bytes gathered before a write: large enough that a chunk keeps the
/// device busy, small enough to stay in the CPU's caches.
const CHUNK: usize = 4 << 20;

/// Alignment of the buffer, the file offsets and the lengths of direct
/// writes: the largest logical block size in use.
const ALIGN: usize = 4096;

/// A file being written, directly when it can be.
pub struct DirectFile {
    file: File,
    /// `CHUNK + ALIGN` bytes, the gathered ones from `start`, which is
    /// `ALIGN`-aligned in memory.
    buf: Vec<u8>,
    start: usize,
    len: usize,
    /// Bytes written to the file so far.
    written: u64,
    direct: bool,
}

impl DirectFile {
    /// Creates (truncates) the file at `path`; `direct: false` writes
    /// through the page cache.
    pub fn create(path: &Path, direct: bool) -> io::Result<DirectFile> {
        let (file, direct) = match direct.then(|| open_direct(path)) {
            Some(Ok(f)) => (f, true),
            // Direct I/O refused: the page cache.
            _ => (File::create(path)?, false),
        };
        let buf = vec![0u8; CHUNK + ALIGN];
        let start = buf.as_ptr().align_offset(ALIGN).min(ALIGN);
        Ok(DirectFile {
            file,
            buf,
            start,
            len: 0,
            written: 0,
            direct,
        })
    }

    /// Whether the file is being written past the page cache.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// The file, for hints (`sync_file_range`) while it is written.
    pub fn get_ref(&self) -> &File {
        &self.file
    }

    /// Writes the first `n` bytes gathered (a multiple of the alignment
    /// while direct); the rest stays at the buffer's start.
    fn drain(&mut self, n: usize) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        let chunk = &self.buf[self.start..self.start + n];
        match self.file.write_all(chunk) {
            Ok(()) => {}
            // A file system that took the flag at open but refuses the
            // writes: the rest goes through the page cache.
            Err(e) if self.direct && e.raw_os_error() == Some(EINVAL) && self.written == 0 => {
                self.direct = false;
                clear_direct(&self.file)?;
                self.file.write_all(&self.buf[self.start..self.start + n])?;
            }
            Err(e) => return Err(e),
        }
        self.written += n as u64;
        self.buf
            .copy_within(self.start + n..self.start + self.len, self.start);
        self.len -= n;
        Ok(())
    }

    /// Writes the rest and returns the file (not synced). A direct file's
    /// whole blocks go directly, the tail through the page cache.
    pub fn finish(mut self) -> io::Result<File> {
        if self.direct && !self.len.is_multiple_of(ALIGN) {
            self.drain(self.len / ALIGN * ALIGN)?;
            if self.direct {
                self.direct = false;
                clear_direct(&self.file)?;
            }
        }
        self.drain(self.len)?;
        Ok(self.file)
    }
}

impl Write for DirectFile {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        if self.len == CHUNK {
            self.drain(CHUNK)?;
        }
        let k = b.len().min(CHUNK - self.len);
        self.buf[self.start + self.len..self.start + self.len + k].copy_from_slice(&b[..k]);
        self.len += k;
        Ok(k)
    }

    /// Writes nothing: a direct file can only take whole chunks before
    /// its end, which [`DirectFile::finish`] writes.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(target_os = "linux")]
const EINVAL: i32 = libc::EINVAL;
#[cfg(not(target_os = "linux"))]
const EINVAL: i32 = 22;

#[cfg(target_os = "linux")]
fn open_direct(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_: &Path) -> io::Result<File> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

#[cfg(target_os = "linux")]
fn clear_direct(f: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid open descriptor; F_GETFL and F_SETFL read and set
    // its status flags only.
    unsafe {
        let flags = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(f.as_raw_fd(), libc::F_SETFL, flags & !libc::O_DIRECT) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn clear_direct(_: &File) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `data` in pieces of the sizes given (round robin).
    fn write(path: &Path, direct: bool, data: &[u8], pieces: &[usize]) -> bool {
        let mut f = DirectFile::create(path, direct).unwrap();
        let (mut at, mut i) = (0, 0);
        while at < data.len() {
            let n = pieces[i % pieces.len()].min(data.len() - at);
            f.write_all(&data[at..at + n]).unwrap();
            f.flush().unwrap();
            at += n;
            i += 1;
        }
        let was = f.is_direct();
        f.finish().unwrap().sync_all().unwrap();
        was
    }

    #[test]
    fn the_file_holds_the_bytes_written_whatever_their_lengths() {
        let dir = std::env::temp_dir().join(format!("sluice-direct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let mut x = 7u64;
        let data: Vec<u8> = (0..3 * CHUNK + 5000)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                (x >> 56) as u8
            })
            .collect();
        for direct in [true, false] {
            for len in [
                0,
                1,
                4095,
                4096,
                4097,
                CHUNK - 1,
                CHUNK,
                CHUNK + 1,
                data.len(),
            ] {
                for pieces in [&[1usize << 30][..], &[1, 7, 4096, 100_000], &[CHUNK + 3]] {
                    let was = write(&path, direct, &data[..len], pieces);
                    assert!(direct || !was);
                    let got = std::fs::read(&path).unwrap();
                    assert_eq!(got.len(), len, "direct {direct}, {len} bytes");
                    assert!(
                        got == data[..len],
                        "direct {direct}, {len} bytes, {pieces:?}"
                    );
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_system_that_may_refuse_direct_io_gets_the_same_bytes() {
        // /dev/shm is tmpfs, which refuses O_DIRECT on older kernels.
        let dir = Path::new("/dev/shm");
        if !dir.is_dir() {
            eprintln!("skipped: no /dev/shm");
            return;
        }
        let path = dir.join(format!("sluice-direct-{}", std::process::id()));
        let data: Vec<u8> = (0..CHUNK + 10).map(|i| (i % 251) as u8).collect();
        // Direct or not (kernels differ), the bytes are the same.
        write(&path, true, &data, &[1000]);
        assert!(std::fs::read(&path).unwrap() == data);
        std::fs::remove_file(&path).unwrap();
    }
}
