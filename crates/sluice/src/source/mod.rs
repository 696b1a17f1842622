//! Inputs: files, directories, globs and standard input.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

mod mapped;
pub use mapped::{Mapped, SHRANK_EXIT};

/// One input stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    File(PathBuf),
    Stdin,
}

impl Input {
    /// The name used in messages: the path, or `<stdin>`.
    pub fn display_name(&self) -> String {
        match self {
            Input::File(p) => p.display().to_string(),
            Input::Stdin => "<stdin>".to_string(),
        }
    }

    /// Whether the input can be read more than once: a regular file, not
    /// standard input nor a path to a pipe or device (`<(zcat f.gz)`, a
    /// FIFO), whose bytes a first look would consume. Nothing looks
    /// ahead at an input that cannot (format, dialect, schema): a look
    /// there lost the rows it read.
    /// (A path that cannot be looked at is not known to be a pipe: it
    /// fails where it is opened, as before.)
    pub fn rereadable(&self) -> bool {
        match self {
            Input::File(p) => std::fs::metadata(p).map_or(true, |m| m.is_file() || m.is_dir()),
            Input::Stdin => false,
        }
    }

    /// Size in bytes when known (for progress).
    pub fn len(&self) -> Option<u64> {
        match self {
            Input::File(p) => std::fs::metadata(p).ok().map(|m| m.len()),
            Input::Stdin => None,
        }
    }

    /// Opens the input for reading.
    pub fn open(&self) -> Result<Box<dyn Read + Send>> {
        match self {
            Input::File(p) => {
                let f = File::open(p).map_err(|e| Error::io(p, e))?;
                if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
                    return Err(Error::Input {
                        path: self.display_name(),
                        message: "is a directory".into(),
                    });
                }
                Ok(Box::new(f))
            }
            Input::Stdin => Ok(Box::new(std::io::stdin())),
        }
    }
}

/// CRC-32 (IEEE) of a file's bytes as stored: the load journal's content
/// fingerprint.
pub fn fingerprint(path: &Path) -> Result<u32> {
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Ok(h.finalize()),
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
}

/// How an input is compressed, as its first bytes say (never its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    pub fn detect(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

/// Buffer of the layers that peek at an input's first bytes. Large reads
/// bypass it; small, so that opening one of 100,000 small files stays
/// cheap (a 1 MiB buffer per file cost a fifth of such a load).
const PEEK_BUFFER: usize = 64 << 10;

/// Called with the bytes of each read from a file or stream (as stored:
/// before decompression or decoding).
pub type OnRead = Box<dyn FnMut(&[u8]) + Send>;

/// The most one read from a file asks for: the bytes are checksummed (and
/// counted) as soon as they arrive, while they are still in the core's
/// cache; a 16 MiB read checksummed after had to fetch them from memory
/// again.
const READ_CHUNK: usize = 512 << 10;

/// Reports the bytes read through it (progress of compressed inputs is
/// measured in the bytes of the file).
struct Counting<R> {
    inner: R,
    on_read: Option<OnRead>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let end = buf.len().min(READ_CHUNK);
        let n = self.inner.read(&mut buf[..end])?;
        if let Some(f) = self.on_read.as_mut() {
            f(&buf[..n]);
        }
        Ok(n)
    }
}

/// Says which decompressor failed, and that the data is at fault.
struct Labeled<R> {
    inner: R,
    what: &'static str,
}

impl<R: Read> Read for Labeled<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::Interrupted {
                e
            } else {
                std::io::Error::new(
                    e.kind(),
                    format!("corrupt or truncated {} data ({e})", self.what),
                )
            }
        })
    }
}

/// Text decoded from another encoding into UTF-8 as it is read, with
/// `encoding_rs`. A byte sequence that is not valid in the encoding is an
/// error (never replaced), with its offset in the decoded input.
struct Transcode<R> {
    inner: R,
    decoder: encoding_rs::Decoder,
    out: Vec<u8>,
    pos: usize,
    done: bool,
    /// Input bytes decoded so far, for error messages.
    consumed: u64,
}

impl<R: BufRead> Read for Transcode<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if self.pos < self.out.len() {
                let n = buf.len().min(self.out.len() - self.pos);
                buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(n);
            }
            if self.done {
                return Ok(0);
            }
            let src = self.inner.fill_buf()?;
            let last = src.is_empty();
            let cap = self
                .decoder
                .max_utf8_buffer_length_without_replacement(src.len())
                .unwrap_or(src.len() * 3 + 16)
                .max(16);
            self.out.clear();
            self.out.resize(cap, 0);
            let (result, read, written) =
                self.decoder
                    .decode_to_utf8_without_replacement(src, &mut self.out, last);
            self.out.truncate(written);
            self.pos = 0;
            if let encoding_rs::DecoderResult::Malformed(bad, _) = result {
                let at = self.consumed + read as u64 - bad as u64;
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "invalid {} at byte {at} of the file",
                        self.decoder.encoding().name()
                    ),
                ));
            }
            self.inner.consume(read);
            self.consumed += read as u64;
            if last && result == encoding_rs::DecoderResult::InputEmpty {
                self.done = true;
            }
        }
    }
}

/// How records end in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineEnd {
    /// What the first [`LINE_END_SAMPLE`] bytes of each file's text show
    /// (see [`LineEnd::detect`]).
    #[default]
    Auto,
    /// LF or CR LF; a lone CR is data.
    Lf,
    /// A lone CR (classic Mac OS): every CR is read as an LF.
    Cr,
}

/// Text looked at to tell a file's line ends: as much as the delimiter
/// sniff reads, so that both see records. A file whose first record is
/// longer and holds an unquoted CR but no LF would be misread; 64 KiB of
/// one record with no LF is no CSV seen in practice.
pub const LINE_END_SAMPLE: usize = 64 << 10;

impl LineEnd {
    /// The line end the start of a text shows (never `Auto`): CR when it
    /// has no LF and a CR outside double quotes (a quoted one is data).
    pub fn detect(head: &[u8]) -> LineEnd {
        if memchr::memchr(b'\n', head).is_some() {
            return LineEnd::Lf;
        }
        let mut quoted = false;
        for &b in head {
            match b {
                b'"' => quoted = !quoted,
                b'\r' if !quoted => return LineEnd::Cr,
                _ => {}
            }
        }
        LineEnd::Lf
    }
}

impl std::str::FromStr for LineEnd {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(LineEnd::Auto),
            "lf" | "crlf" => Ok(LineEnd::Lf),
            "cr" => Ok(LineEnd::Cr),
            _ => Err(Error::Config(format!(
                "unknown line end {s:?} (use auto, lf or cr)"
            ))),
        }
    }
}

/// Reads every CR outside double quotes as an LF: classic Mac OS text
/// becomes one record a line, byte for byte, so offsets and line numbers
/// stay those of the file, and a CR inside a quoted field stays data.
///
/// A quote opens a field only at its start (the start of a line, or after
/// one of the candidate delimiters `,` tab `|` `;` or a space), as the CSV
/// parser reads it: a `5" screen` in an unquoted field does not swallow
/// the line ends after it. A doubled quote inside quotes is an escaped one.
struct CrToLf<R> {
    inner: R,
    state: CrQuote,
}

/// Where [`CrToLf`] is, over the bytes read so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CrQuote {
    /// At the start of a field: a quote opens a quoted one.
    FieldStart,
    /// Inside an unquoted field.
    Unquoted,
    /// Inside quotes.
    Quoted,
    /// Just after a quote inside quotes: the end of the quoted field, or
    /// the first half of a doubled quote.
    QuoteInQuoted,
}

impl<R> CrToLf<R> {
    fn new(inner: R) -> Self {
        CrToLf {
            inner,
            state: CrQuote::FieldStart,
        }
    }
}

impl<R: Read> Read for CrToLf<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        for b in &mut buf[..n] {
            if self.state == CrQuote::QuoteInQuoted {
                if *b == b'"' {
                    self.state = CrQuote::Quoted;
                    continue;
                }
                self.state = CrQuote::Unquoted;
            }
            self.state = match (self.state, *b) {
                (CrQuote::Quoted, b'"') => CrQuote::QuoteInQuoted,
                (CrQuote::Quoted, _) => CrQuote::Quoted,
                (_, b'\r') | (_, b'\n') => {
                    *b = b'\n';
                    CrQuote::FieldStart
                }
                (_, b',' | b'\t' | b'|' | b';' | b' ') => CrQuote::FieldStart,
                (CrQuote::FieldStart, b'"') => CrQuote::Quoted,
                _ => CrQuote::Unquoted,
            };
        }
        Ok(n)
    }
}

/// The encoding a `--encoding` label names (WHATWG labels: `latin1`,
/// `windows-1252`, `utf-16le`, `shift_jis`, …).
pub fn encoding_for(label: &str) -> Result<&'static encoding_rs::Encoding> {
    encoding_rs::Encoding::for_label(label.trim().as_bytes()).ok_or_else(|| {
        Error::Config(format!(
            "unknown encoding {label:?} (use a WHATWG label such as utf-8, latin1, windows-1252, utf-16le, utf-16be, shift_jis)"
        ))
    })
}

impl Input {
    /// Opens the input as UTF-8 text: decompressed as [`Self::open_decoded`]
    /// says, then decoded to UTF-8: a UTF-8 byte order mark is
    /// dropped, a UTF-16 one (LE or BE) switches to UTF-16, and otherwise
    /// `encoding` (UTF-8 when `None`) applies.
    pub fn open_text(
        &self,
        on_read: Option<OnRead>,
        encoding: Option<&'static encoding_rs::Encoding>,
    ) -> Result<(Box<dyn Read + Send>, Compression)> {
        let (reader, kind) = self.open_decoded(on_read)?;
        let mut buffered = BufReader::with_capacity(PEEK_BUFFER, reader);
        let head = loop {
            match buffered.fill_buf() {
                Ok(h) => break h,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error(e)),
            }
        };
        let bom = encoding_rs::Encoding::for_bom(head).map(|(e, _)| e);
        let encoding = bom.or(encoding).unwrap_or(encoding_rs::UTF_8);
        if encoding == encoding_rs::UTF_8 {
            if bom.is_some() {
                buffered.consume(3);
            }
            return Ok((Box::new(buffered), kind));
        }
        Ok((
            Box::new(Transcode {
                inner: buffered,
                decoder: encoding.new_decoder_with_bom_removal(),
                out: Vec::new(),
                pos: 0,
                done: false,
                consumed: 0,
            }),
            kind,
        ))
    }

    /// Opens the input as UTF-8 text ([`Self::open_text`]) whose records
    /// end with LF: with `line_end` `Auto`, the first [`LINE_END_SAMPLE`]
    /// bytes decide; a CR file is read with every CR as an LF. Returns the
    /// line end used (never `Auto`).
    pub fn open_lines(
        &self,
        on_read: Option<OnRead>,
        encoding: Option<&'static encoding_rs::Encoding>,
        line_end: LineEnd,
    ) -> Result<(Box<dyn Read + Send>, Compression, LineEnd)> {
        let (mut reader, kind) = self.open_text(on_read, encoding)?;
        let line_end = match line_end {
            LineEnd::Auto => {
                let mut head = Vec::new();
                (&mut reader)
                    .take(LINE_END_SAMPLE as u64)
                    .read_to_end(&mut head)
                    .map_err(|e| self.io_error(e))?;
                let detected = LineEnd::detect(&head);
                reader = Box::new(std::io::Cursor::new(head).chain(reader));
                detected
            }
            given => given,
        };
        if line_end == LineEnd::Cr {
            reader = Box::new(CrToLf::new(reader));
        }
        Ok((reader, kind, line_end))
    }

    /// Opens the input and decompresses it when its first bytes are a gzip
    /// (also several members, as `cat a.gz b.gz` makes) or zstd header.
    /// `on_read` sees the bytes read from the file or stream.
    pub fn open_decoded(
        &self,
        on_read: Option<OnRead>,
    ) -> Result<(Box<dyn Read + Send>, Compression)> {
        let raw = Counting {
            inner: self.open()?,
            on_read,
        };
        let mut buffered = BufReader::with_capacity(PEEK_BUFFER, raw);
        // Enough of the start to see a magic number.
        let head = loop {
            match buffered.fill_buf() {
                Ok(h) => break h,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error(e)),
            }
        };
        let kind = Compression::detect(head);
        let reader: Box<dyn Read + Send> = match kind {
            Compression::None => Box::new(buffered),
            Compression::Gzip => Box::new(Labeled {
                inner: flate2::bufread::MultiGzDecoder::new(buffered),
                what: "gzip",
            }),
            Compression::Zstd => Box::new(Labeled {
                inner: zstd::stream::read::Decoder::with_buffer(buffered)
                    .map_err(|e| self.io_error(e))?,
                what: "zstd",
            }),
        };
        Ok((reader, kind))
    }

    /// An I/O error about this input.
    pub fn io_error(&self, e: std::io::Error) -> Error {
        match self {
            Input::File(p) => Error::io(p, e),
            Input::Stdin => Error::io("<stdin>", e),
        }
    }
}

fn has_glob_meta(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Expands command-line arguments into inputs, in a stable order: `-` is
/// standard input, a directory means every regular, non-hidden file under it
/// (sorted), a pattern with `*`, `?` or `[` is a glob (sorted).
pub fn expand(args: &[String]) -> Result<Vec<Input>> {
    let mut out = Vec::new();
    for a in args {
        if a == "-" {
            out.push(Input::Stdin);
            continue;
        }
        let p = Path::new(a);
        if p.is_dir() {
            let before = out.len();
            walk_dir(p, &mut out)?;
            if out.len() == before {
                return Err(Error::Input {
                    path: a.clone(),
                    message: "directory holds no files".into(),
                });
            }
        } else if p.exists() {
            out.push(Input::File(p.to_path_buf()));
        } else if has_glob_meta(a) {
            let paths =
                glob::glob(a).map_err(|e| Error::Config(format!("bad glob pattern {a:?}: {e}")))?;
            let mut files = Vec::new();
            for entry in paths {
                let path = entry.map_err(|e| Error::io(e.path().to_path_buf(), e.into()))?;
                if path.is_file() {
                    files.push(path);
                }
            }
            if files.is_empty() {
                return Err(Error::Input {
                    path: a.clone(),
                    message: "no files match this pattern".into(),
                });
            }
            files.sort();
            out.extend(files.into_iter().map(Input::File));
        } else {
            return Err(Error::Input {
                path: a.clone(),
                message: "no such file or directory".into(),
            });
        }
    }
    if out.is_empty() {
        return Err(Error::Config("no input files given".into()));
    }
    Ok(out)
}

fn walk_dir(dir: &Path, out: &mut Vec<Input>) -> Result<()> {
    // The entry's type comes with the directory listing: no stat per file
    // (a directory of 100,000 files took two stats each before).
    let mut entries: Vec<(std::ffi::OsString, std::fs::FileType)> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .map(|e| {
            let e = e.map_err(|e| Error::io(dir, e))?;
            let t = e.file_type().map_err(|err| Error::io(e.path(), err))?;
            Ok((e.file_name(), t))
        })
        .collect::<Result<_>>()?;
    // Names within one directory: sorting them sorts the paths.
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    for (name, t) in entries {
        if name.as_encoded_bytes().first() == Some(&b'.') {
            continue;
        }
        let p = dir.join(&name);
        // A link is followed to what it names.
        let (is_dir, is_file) = if t.is_symlink() {
            (p.is_dir(), p.is_file())
        } else {
            (t.is_dir(), t.is_file())
        };
        if is_dir {
            walk_dir(&p, out)?;
        } else if is_file {
            out.push(Input::File(p));
        }
    }
    Ok(())
}

/// Rejects input that is not delimited text, by looking at its first bytes.
pub fn check_text(name: &str, head: &[u8]) -> Result<()> {
    let err = |message: String| {
        Err(Error::Input {
            path: name.to_string(),
            message,
        })
    };
    if head.starts_with(b"BZh") && head.get(3).is_some_and(|d| (b'1'..=b'9').contains(d)) {
        return err("is bzip2-compressed, which is not supported (gzip and zstd are); decompress it first, e.g. `bzcat FILE | sluice load TABLE -`".into());
    }
    if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        return err("is xz-compressed, which is not supported (gzip and zstd are); decompress it first, e.g. `xzcat FILE | sluice load TABLE -`".into());
    }
    if let Some(i) = memchr::memchr(0, &head[..head.len().min(8192)]) {
        return err(format!(
            "looks like a binary file (NUL byte at offset {i}), not delimited text"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_unsupported_compressed_heads_are_refused() {
        assert!(check_text("a", b"id,name\n1,x\n").is_ok());
        let e = check_text("a.bz2", b"BZh91AY&SY").unwrap_err().to_string();
        assert!(e.starts_with("a.bz2: is bzip2-compressed"), "{e}");
        let e = check_text("a.xz", &[0xfd, b'7', b'z', b'X', b'Z', 0, 0])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("a.xz: is xz-compressed"), "{e}");
        let e = check_text("b", b"ab\0cd").unwrap_err().to_string();
        assert_eq!(
            e,
            "b: looks like a binary file (NUL byte at offset 2), not delimited text"
        );
    }

    #[test]
    fn lone_cr_line_ends_are_read_as_lf() {
        assert_eq!(LineEnd::detect(b"a|b\r1|2\r"), LineEnd::Cr);
        assert_eq!(LineEnd::detect(b"a|b\r\n1|2\r\n"), LineEnd::Lf);
        assert_eq!(LineEnd::detect(b"a|b\n1|2"), LineEnd::Lf);
        assert_eq!(LineEnd::detect(b"a|b"), LineEnd::Lf);
        // One record, no line end, a CR inside quotes: data.
        assert_eq!(LineEnd::detect(b",0,\"\r\""), LineEnd::Lf);
        assert_eq!(LineEnd::detect(b"\"a\rb\"\r\"c\"\r"), LineEnd::Cr);
        let mut out = Vec::new();
        CrToLf::new(&b"a\rb\r"[..]).read_to_end(&mut out).unwrap();
        assert_eq!(out, b"a\nb\n");
        // A CR inside quotes is data; a doubled quote does not close them;
        // a quote inside an unquoted field opens nothing.
        let mut out = Vec::new();
        CrToLf::new(&b"a,b\r\"x\ry\",\"p\"\"\rq\"\r5\" s,c\rd"[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"a,b\n\"x\ry\",\"p\"\"\rq\"\n5\" s,c\nd");
    }

    #[test]
    fn compression_is_detected_by_content() {
        assert_eq!(Compression::detect(&[0x1f, 0x8b, 8]), Compression::Gzip);
        assert_eq!(
            Compression::detect(&[0x28, 0xb5, 0x2f, 0xfd, 0]),
            Compression::Zstd
        );
        assert_eq!(Compression::detect(b"a,b\n"), Compression::None);
        assert_eq!(Compression::detect(b""), Compression::None);
    }
}
