//! The reader: input files cut into blocks at record boundaries.
//!
//! Useful for: one thread reading the group's files in order (opened by
//! `source`: decompression, encodings, line ends), skipping `--skip`
//! lines, preambles and the header, cutting each file into blocks of
//! about `block_size` at record ends (a JSON array's brackets dropped),
//! packing whole small files into one block, failing a record longer
//! than `--max-line-size`, and ending the commit group after the file
//! that reaches a `--commit-every` limit. It records each file's size and
//! checksum for the journal. Memory is bounded by tokens: a block is read
//! only when one of the `in_flight` tokens is free.
//! Not useful for: parsing records (`workers`, `parse`), or how the
//! header's fields map to columns (`header`).

use std::io::Read;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::parse::{FieldMap, Format, JsonShape};
use crate::source::{Compression, Input, LineEnd, Mapped, check_text};
use crate::split::find_boundary;

use super::header::delimited_start;
use super::json_input::{close_json_array, json_header};
use super::pipeline::Shared;
use super::plan::mtime_ns;
use super::sink::FileRecord;
use super::{LoadOptions, OnError};
use crate::stages::Stage;

/// Largest block a file is cut into. 16 MiB keeps per-block overhead
/// (channel hops, batch headers) well under 1 % at ~1 GB/s per core, while
/// a 1 GB file still gives ~64 blocks to balance over the workers.
pub const MAX_BLOCK_SIZE: usize = 16 << 20;

/// Smallest block, whatever the memory limit.
pub const MIN_BLOCK_SIZE: usize = 64 << 10;

/// Blocks in flight for `workers`: each worker parsing one and holding one
/// finished, plus two for the reader and the writer to overlap.
pub(super) fn in_flight(workers: usize) -> usize {
    2 * workers + 2
}

/// Memory held whatever the block size: the binary, thread stacks, the
/// segment writer's buffer.
pub const FIXED_MEMORY: u64 = 16 << 20;

/// The block size for a memory limit. A block in flight costs up to four
/// times its size: the raw bytes, a pooled spare buffer, the parsed columns
/// (for numbers about 0.4x the text, for text about 1.1x), and the growth
/// slack of those buffers.
pub fn block_size_for(memory_limit: u64, workers: usize) -> usize {
    let per_block = memory_limit.saturating_sub(FIXED_MEMORY) / (4 * in_flight(workers) as u64);
    (per_block as usize).clamp(MIN_BLOCK_SIZE, MAX_BLOCK_SIZE)
}

pub(super) struct Block {
    pub(super) seq: u64,
    /// The bytes, read into a buffer of ours...
    pub(super) data: Buf,
    /// ... or a range of a mapped file (`data` then empty).
    pub(super) mapped: Option<(Arc<Mapped>, std::ops::Range<usize>)>,
    /// What the block holds: one piece of one file, or several small
    /// files packed together (one hand-off for many files).
    pub(super) parts: Vec<Part>,
}

impl Block {
    /// The block's bytes, which its parts' ranges index.
    pub(super) fn bytes(&self) -> &[u8] {
        match &self.mapped {
            Some((m, r)) => &m.bytes()[r.clone()],
            None => self.data.data(),
        }
    }
}

/// A range of a block's data that comes from one file.
#[derive(Clone)]
pub(super) struct Part {
    pub(super) file: usize,
    /// Byte offset of the range's first byte in its file.
    pub(super) offset: u64,
    /// Lines before it, when it starts the file's data.
    pub(super) first_line: Option<u64>,
    pub(super) start: usize,
    pub(super) end: usize,
    /// The file's column mapping, if any.
    pub(super) map: Option<Arc<FieldMap>>,
    /// JSON: how the file's rows are laid out (`--format json` reads an
    /// array or values one after another, as the file starts).
    pub(super) json: JsonShape,
}

/// A reusable byte buffer: `bytes[..len]` holds data, the rest of `bytes`
/// is initialised space kept so that refilling it never zeroes memory again
/// (zeroing cost ~3 % of a load's CPU before).
#[derive(Default)]
pub(super) struct Buf {
    pub(super) bytes: Vec<u8>,
    pub(super) len: usize,
}

impl Buf {
    pub(super) fn data(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Drops the first `n` bytes.
    pub(super) fn consume(&mut self, n: usize) {
        self.bytes.copy_within(n..self.len, 0);
        self.len -= n;
    }

    /// Replaces the contents with `src`.
    pub(super) fn set(&mut self, src: &[u8]) {
        if self.bytes.len() < src.len() {
            self.bytes.resize(src.len(), 0);
        }
        self.bytes[..src.len()].copy_from_slice(src);
        self.len = src.len();
    }
}

/// Reader: cut every input into blocks. Returns (files, bytes).
pub(super) fn split_all(
    shared: &Shared<'_>,
    blocks: SyncSender<Block>,
    tokens: Receiver<()>,
) -> Result<(u64, u64)> {
    let mut seq = 0u64;
    let mut bytes = 0u64;
    let mut stored = 0u64;
    let mut pack = Pack::default();
    let started = Instant::now();
    let every = shared.opts.commit_every;
    let mut files = 0u64;
    for (i, input) in shared.inputs.iter().enumerate() {
        if shared.stopping() {
            return Err(Error::Cancelled);
        }
        bytes += split_file(shared, i, input, &blocks, &tokens, &mut seq, &mut pack)?;
        files += 1;
        if let Some(p) = &shared.opts.progress {
            p.files_done.fetch_add(1, Ordering::Relaxed);
        }
        // The group ends after a file that reaches a limit, or when the
        // caller asks to stop: the files read so far are committed.
        stored += shared
            .read
            .lock()
            .ok()
            .and_then(|r| r.last().map(|f| f.size))
            .unwrap_or(0);
        let full = every.bytes.is_some_and(|b| stored >= b)
            || every.files.is_some_and(|f| files >= f)
            || every
                .seconds
                .is_some_and(|s| started.elapsed().as_secs() >= s)
            || shared
                .opts
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed));
        if full {
            break;
        }
    }
    pack.send(shared, &blocks, &tokens, &mut seq)?;
    Ok((files, bytes))
}

/// Reads into `buf` until it holds `want` bytes or the input ends.
/// Returns true at end of input.
fn fill(r: &mut dyn Read, buf: &mut Buf, want: usize, name: &Input) -> Result<bool> {
    crate::stages::time(Stage::Read, || fill_untimed(r, buf, want, name))
}

fn fill_untimed(r: &mut dyn Read, buf: &mut Buf, want: usize, name: &Input) -> Result<bool> {
    if buf.len >= want {
        return Ok(false);
    }
    if buf.bytes.len() < want {
        buf.bytes.resize(want, 0);
    }
    while buf.len < want {
        match r.read(&mut buf.bytes[buf.len..want]) {
            Ok(0) => return Ok(true),
            Ok(n) => buf.len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(match name {
                    Input::File(p) => Error::io(p, e),
                    Input::Stdin => Error::io("<stdin>", e),
                });
            }
        }
    }
    Ok(false)
}

/// Where the reader is in a file while it reads what comes before the
/// data (a JSON array's bracket, preambles, the header): the buffer and
/// the position of its first byte, and how to read more.
pub(super) struct FileStart<'a, 'b> {
    pub(super) name: &'a str,
    pub(super) buf: &'b mut Buf,
    /// The input has ended.
    pub(super) eof: &'b mut bool,
    /// Byte offset and lines of the file before `buf`.
    pub(super) offset: &'b mut u64,
    pub(super) line: &'b mut u64,
    /// Reads one more block into the buffer.
    pub(super) grow: &'b mut dyn FnMut(&mut Buf, &mut bool) -> Result<()>,
    /// The error of a record longer than `--max-line-size` at a line and
    /// byte.
    pub(super) too_long: &'b dyn Fn(u64, u64) -> Error,
}

/// How far before the end of a full buffer the search for a record end
/// starts: the bytes after the cut are copied into the next buffer, so this
/// bounds that copy (it was 1/8 of every block, ~3 % of a load's CPU).
const CUT_SEARCH: usize = 64 << 10;

fn split_file(
    shared: &Shared<'_>,
    file: usize,
    input: &Input,
    blocks: &SyncSender<Block>,
    tokens: &Receiver<()>,
    seq: &mut u64,
    pack: &mut Pack,
) -> Result<u64> {
    let opts = shared.opts;
    let name = input.display_name();
    let bs = shared.block_size;
    // Progress counts the bytes of the file (compressed or not); the
    // summary counts the text parsed.
    // The bytes as stored feed the journal's checksum (and progress).
    let seen = Arc::new(Mutex::new((crc32fast::Hasher::new(), 0u64)));
    let on_read: crate::source::OnRead = {
        let seen = seen.clone();
        let progress = opts.progress.clone();
        Box::new(move |b: &[u8]| {
            if let Some(p) = &progress {
                p.bytes_read.fetch_add(b.len() as u64, Ordering::Relaxed);
            }
            if let Ok(mut s) = seen.lock() {
                crate::stages::time(Stage::InputChecksum, || s.0.update(b));
                s.1 += b.len() as u64;
            }
        })
    };
    let mtime_ns = match input {
        Input::File(p) => std::fs::metadata(p).map(|m| mtime_ns(&m)).unwrap_or(0),
        Input::Stdin => 0,
    };
    let record = |unreadable: Option<Box<str>>, empty: bool| {
        let (crc32, size) = seen
            .lock()
            .map(|s| (s.0.clone().finalize(), s.1))
            .unwrap_or_default();
        if let Ok(mut r) = shared.read.lock() {
            r.push(FileRecord {
                size,
                mtime_ns,
                crc32,
                unreadable,
                empty,
                ..FileRecord::default()
            });
        }
    };
    // With --on-error skip, a file that cannot be opened is skipped and
    // reported; otherwise it fails the load.
    let skip_bad = opts.on_error == OnError::Skip;
    let (mut reader, compression, line_end) =
        match input.open_lines(Some(on_read), opts.encoding, opts.line_end) {
            Ok(r) => r,
            Err(e) if skip_bad => {
                record(Some(e.to_string().into()), false);
                return Ok(0);
            }
            Err(e) => return Err(e),
        };
    // A large plain file is read by mapping it once its start (preambles,
    // the header, the first block) went through `reader`.
    let mut mapped = match input {
        Input::File(p) if plain_text(opts, compression, line_end) => {
            Mapped::open(p, MAP_MIN_BLOCKS * bs as u64).and_then(|m| {
                let bom = utf8_bom(m.bytes())?;
                Some((Arc::new(m), bom))
            })
        }
        _ => None,
    };
    let mut buf = shared.take_buf();
    let mut eof = fill(&mut reader, &mut buf, bs, input)?;
    // An empty file (an export of no rows, a placeholder) is 0 rows, and
    // the summary names it.
    if buf.is_empty() {
        shared.give_buf(buf);
        record(None, true);
        return Ok(0);
    }
    check_text(&name, buf.data())?;
    let mut offset = 0u64;
    let mut line = 0u64;
    let mut total = buf.len as u64;
    // Grows `buf` by one block; errors when a record exceeds the line limit.
    let mut grow = |buf: &mut Buf, eof: &mut bool| -> Result<()> {
        let before = buf.len;
        *eof = fill(&mut reader, buf, before + bs, input)?;
        total += (buf.len - before) as u64;
        Ok(())
    };
    let too_long = |line: u64, offset: u64| Error::Parse {
        path: name.clone(),
        line: line + 1,
        byte: offset,
        column: None,
        message: crate::parse::too_long_message(opts.max_line_size),
    };

    for _ in 0..opts.skip {
        loop {
            if let Some(i) = memchr::memchr(b'\n', buf.data()) {
                buf.consume(i + 1);
                offset += i as u64 + 1;
                line += 1;
                break;
            }
            offset += buf.len as u64;
            buf.len = 0;
            if eof {
                break;
            }
            grow(&mut buf, &mut eof)?;
        }
    }

    // JSON: the reader drops an array's brackets and reads a header row.
    let json_format = match opts.format {
        Format::Json(j) => Some(j),
        Format::Delimited => None,
    };
    let json_start = match json_format {
        Some(j) => Some(json_header(
            shared,
            j,
            FileStart {
                name: &name,
                buf: &mut buf,
                eof: &mut eof,
                offset: &mut offset,
                line: &mut line,
                grow: &mut grow,
                too_long: &too_long,
            },
        )?),
        None => None,
    };
    let json_shape = json_start.as_ref().map_or(JsonShape::Lines, |s| s.shape);
    let json_array = json_shape == JsonShape::Array;
    let in_object = json_start.as_ref().is_some_and(|s| s.in_object);
    let map = match json_start.and_then(|s| s.map) {
        Some(m) => Some(Arc::new(m)),
        None if json_format.is_some() => None,
        None => delimited_start(
            shared,
            FileStart {
                name: &name,
                buf: &mut buf,
                eof: &mut eof,
                offset: &mut offset,
                line: &mut line,
                grow: &mut grow,
                too_long: &too_long,
            },
        )?,
    };
    let mut first_line = Some(line);
    let mut closed = !json_array;
    // `buf[..open]` holds no record end: the record that starts the
    // buffer is still open through it (0: nothing known).
    let mut open = 0usize;
    // Lines before the buffer, for the message about a record too long,
    // are counted as blocks go only for a stream, which cannot be read
    // again; a file's are counted from its start on that error path
    // (counting every block's lines took 5.5 % of a load's CPU time).
    let stream = !matches!(input, Input::File(_));
    // A record longer than --max-line-size, starting at `start` of `buf`.
    let too_long_at = |data: &[u8], start: usize, line: u64, offset: u64| {
        let at = offset + start as u64;
        if !stream && let Ok(before) = lines_before(input, opts, line_end, at) {
            return too_long(before, at);
        }
        let before = memchr::memchr_iter(b'\n', &data[..start]).count() as u64;
        too_long(line + before, at)
    };
    loop {
        if !eof && buf.len < bs {
            grow(&mut buf, &mut eof)?;
        }
        if eof && !closed {
            closed = true;
            close_json_array(shared, &mut buf, first_line.is_none(), in_object).map_err(
                |message| Error::Input {
                    path: name.clone(),
                    message,
                },
            )?;
        }
        let cut = if eof {
            if buf.is_empty() {
                break;
            }
            // The last record ends with the input: only a buffer longer
            // than the limit can hold one too long.
            if buf.len > opts.max_line_size {
                let start = last_cut(opts, json_shape, buf.data(), open, buf.len - 1).unwrap_or(0);
                if buf.len - start > opts.max_line_size {
                    return Err(too_long_at(buf.data(), start, line, offset));
                }
            }
            buf.len
        } else {
            let target = (buf.len - (buf.len / 8).clamp(1, CUT_SEARCH)).max(open);
            match find_cut(opts, json_shape, buf.data(), target) {
                Some(c) => {
                    open = 0;
                    c
                }
                None => {
                    // No record ends after `target`: the one open there
                    // starts at the last record end before it. What
                    // precedes it goes as a block, so that the buffer
                    // holds the long record alone (memory: a block and
                    // the limit), and it fails once it passes the limit.
                    let start = last_cut(opts, json_shape, buf.data(), open, target).unwrap_or(0);
                    if buf.len - start > opts.max_line_size {
                        return Err(too_long_at(buf.data(), start, line, offset));
                    }
                    if start == 0 {
                        open = buf.len;
                        grow(&mut buf, &mut eof)?;
                        continue;
                    }
                    open = buf.len - start;
                    start
                }
            }
        };
        let part = Part {
            file,
            offset,
            first_line: first_line.take(),
            start: 0,
            end: cut,
            map: map.clone(),
            json: json_shape,
        };
        // A whole small file joins the pack; anything else goes alone,
        // after the pack (blocks leave in input order).
        if eof && cut == buf.len && part.first_line.is_some() && cut <= bs / 8 {
            if pack.len() + cut > PACK_BYTES.min(bs) {
                pack.send(shared, blocks, tokens, seq)?;
            }
            pack.add(shared, buf.data(), part);
            buf.len = 0;
            break;
        }
        pack.send(shared, blocks, tokens, seq)?;
        let mut tail = shared.take_buf();
        tail.set(&buf.data()[cut..]);
        buf.len = cut;
        let data = std::mem::replace(&mut buf, tail);
        let len = data.len as u64;
        if stream {
            line += memchr::memchr_iter(b'\n', data.data()).count() as u64;
        }
        send_block(shared, blocks, tokens, seq, data, None, vec![part])?;
        offset += len;
        // The rest of a mapped file is cut from the mapping, where it
        // holds what was read (a file rewritten meanwhile is read on).
        if let Some((m, bom)) = mapped.take()
            && closed
            && !eof
            && m.bytes()
                .get(bom + offset as usize..)
                .is_some_and(|rest| rest.len() > buf.len && rest[..buf.len] == *buf.data())
        {
            let text = &m.bytes()[bom..];
            let mut pos = offset as usize;
            let mut end = pos + buf.len;
            buf.len = 0;
            let quote = match opts.format {
                Format::Delimited => crate::split::cut_by_quote_parity(&opts.dialect),
                Format::Json(_) => None,
            };
            // The file's bytes checksummed so far (the reader read ahead).
            let summed = seen.lock().map(|s| s.1).unwrap_or(0) as usize;
            let mut scan = Scan::new(&m, summed, quote, bom + pos);
            let progress = opts.progress.as_deref();
            scan.advance(bom + end, &seen, progress);
            // Quotes before the block's start.
            let mut quotes_before_pos = 0u64;
            loop {
                if !eof && end - pos < bs {
                    grow_window(&mut end, &mut eof, &mut total, bs, text.len());
                    scan.advance(bom + end, &seen, progress);
                }
                let data = &text[pos..end];
                let cut = if eof {
                    if data.is_empty() {
                        break;
                    }
                    if data.len() > opts.max_line_size {
                        let start =
                            last_cut(opts, json_shape, data, open, data.len() - 1).unwrap_or(0);
                        if data.len() - start > opts.max_line_size {
                            return Err(too_long_at(data, start, line, offset));
                        }
                    }
                    data.len()
                } else {
                    let target = (data.len() - (data.len() / 8).clamp(1, CUT_SEARCH)).max(open);
                    let found = match quote {
                        Some(q) => crate::stages::time(Stage::Cut, || {
                            let inside =
                                (scan.quotes_before(bom + pos + target) - quotes_before_pos) % 2
                                    == 1;
                            crate::split::find_boundary_given(data, target, inside, q)
                        }),
                        None => find_cut(opts, json_shape, data, target),
                    };
                    match found {
                        Some(c) => {
                            open = 0;
                            c
                        }
                        None => {
                            let start = last_cut(opts, json_shape, data, open, target).unwrap_or(0);
                            if data.len() - start > opts.max_line_size {
                                return Err(too_long_at(data, start, line, offset));
                            }
                            if start == 0 {
                                open = data.len();
                                grow_window(&mut end, &mut eof, &mut total, bs, text.len());
                                scan.advance(bom + end, &seen, progress);
                                continue;
                            }
                            open = data.len() - start;
                            start
                        }
                    }
                };
                if quote.is_some() {
                    quotes_before_pos =
                        crate::stages::time(Stage::Cut, || scan.quotes_before(bom + pos + cut));
                }
                let part = Part {
                    file,
                    offset,
                    first_line: None,
                    start: 0,
                    end: cut,
                    map: map.clone(),
                    json: json_shape,
                };
                let range = bom + pos..bom + pos + cut;
                send_block(
                    shared,
                    blocks,
                    tokens,
                    seq,
                    Buf::default(),
                    Some((m.clone(), range)),
                    vec![part],
                )?;
                offset += cut as u64;
                pos += cut;
            }
            scan.advance(m.len(), &seen, progress);
            // A file that grew during the load: the mapping holds what it
            // held at the start, a read would have gone on. Neither is a
            // complete file for certain, so the load stops.
            if let Input::File(p) = input
                && let Ok(now) = std::fs::metadata(p)
                && now.len() > m.len() as u64
            {
                return Err(Error::Input {
                    path: name.clone(),
                    message: format!(
                        "the file grew while it was loaded ({} bytes when the load began, {} now): \
                         load it again once it is complete",
                        m.len(),
                        now.len()
                    ),
                });
            }
            break;
        }
    }
    shared.give_buf(buf);
    record(None, false);
    Ok(total)
}

/// As `grow` for a mapped file: the window `..end` of a file's text of
/// `len` bytes takes `bs` bytes more, or the rest (`eof`: a read would
/// have come back short).
fn grow_window(end: &mut usize, eof: &mut bool, total: &mut u64, bs: usize, len: usize) {
    let want = *end + bs;
    let new_end = want.min(len);
    *eof = want > len;
    *total += (new_end - *end) as u64;
    *end = new_end;
}

/// Pieces a mapped file is scanned in: small enough that the checksum
/// and the quote count read each piece from the core's cache.
const SCAN_PIECE: usize = 256 << 10;

/// One pass over the bytes of a mapped file as the reader's window takes
/// them in: their pages mapped in one call, the journal's checksum, and,
/// for a dialect cut by quote parity, the quotes before each piece, so
/// that a cut needs no pass of its own over the block.
struct Scan<'m> {
    map: &'m Mapped,
    /// File bytes checksummed (the reads before the mapping took some).
    summed: usize,
    quote: Option<u8>,
    /// (file position, quotes between the first mark and it), one a
    /// piece, from where the counting began.
    marks: Vec<(usize, u64)>,
}

type Seen = Mutex<(crc32fast::Hasher, u64)>;

impl<'m> Scan<'m> {
    fn new(map: &'m Mapped, summed: usize, quote: Option<u8>, from: usize) -> Self {
        Scan {
            map,
            summed,
            quote,
            marks: vec![(from, 0)],
        }
    }

    /// Takes in the file's bytes up to `to`.
    fn advance(&mut self, to: usize, seen: &Seen, progress: Option<&super::Progress>) {
        let counted = match self.quote {
            Some(_) => self.marks.last().map_or(0, |m| m.0),
            None => usize::MAX,
        };
        let from = self.summed.min(counted);
        if to <= from {
            return;
        }
        crate::stages::time(Stage::Read, || self.map.populate(from..to));
        let bytes = self.map.bytes();
        let mut at = from;
        while at < to {
            let end = (at + SCAN_PIECE).min(to);
            if end > self.summed {
                let b = &bytes[self.summed.max(at)..end];
                if let Some(p) = progress {
                    p.bytes_read.fetch_add(b.len() as u64, Ordering::Relaxed);
                }
                if let Ok(mut s) = seen.lock() {
                    crate::stages::time(Stage::InputChecksum, || s.0.update(b));
                    s.1 += b.len() as u64;
                }
                self.summed = end;
            }
            if let (Some(q), Some(&(p, n))) = (self.quote, self.marks.last())
                && end > p
            {
                let c = crate::stages::time(Stage::Cut, || {
                    memchr::memchr_iter(q, &bytes[p.max(at)..end]).count()
                });
                self.marks.push((end, n + c as u64));
            }
            at = end;
        }
    }

    /// Quotes between the first mark and file position `at` (taken in).
    fn quotes_before(&self, at: usize) -> u64 {
        let Some(q) = self.quote else { return 0 };
        let i = self.marks.partition_point(|m| m.0 <= at).saturating_sub(1);
        let (p, n) = self.marks[i];
        n + memchr::memchr_iter(q, &self.map.bytes()[p..at.max(p)]).count() as u64
    }
}

/// Files of at least this many blocks are mapped (see `Mapped`).
const MAP_MIN_BLOCKS: u64 = 2;

/// Whether a file is read as it is stored (not decompressed, transcoded
/// or with its line ends changed), so that a mapping of it is its text.
fn plain_text(opts: &LoadOptions, compression: Compression, line_end: LineEnd) -> bool {
    opts.map_files
        && compression == Compression::None
        && line_end != LineEnd::Cr
        && opts.encoding.is_none_or(|e| e == encoding_rs::UTF_8)
}

/// Where the text of a file read as UTF-8 starts: after a UTF-8 byte order
/// mark; `None` when a UTF-16 one makes it another encoding.
fn utf8_bom(bytes: &[u8]) -> Option<usize> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        Some(3)
    } else if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        None
    } else {
        Some(0)
    }
}

/// The newlines in the first `at` bytes of a file as the load reads it
/// (decoded, line ends as `line_end`): the line of the record at `at`,
/// less one. Only on an error path: it reads the file again.
fn lines_before(
    input: &Input,
    opts: &LoadOptions,
    line_end: crate::source::LineEnd,
    at: u64,
) -> Result<u64> {
    let (mut r, _, _) = input.open_lines(None, opts.encoding, line_end)?;
    let mut chunk = vec![0u8; 1 << 16];
    let (mut left, mut lines) = (at, 0u64);
    while left > 0 {
        let want = chunk.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let k = r.read(&mut chunk[..want]).map_err(|e| input.io_error(e))?;
        if k == 0 {
            break;
        }
        lines += memchr::memchr_iter(b'\n', &chunk[..k]).count() as u64;
        left -= k as u64;
    }
    Ok(lines)
}

/// The last record boundary `c` with `from < c <= to` in `data`, by input
/// format (`json`: the file's layout): the start of the record open at
/// `to` (`None`: none ends there).
fn last_cut(
    opts: &LoadOptions,
    json: JsonShape,
    data: &[u8],
    from: usize,
    to: usize,
) -> Option<usize> {
    match (opts.format, json) {
        (Format::Delimited, _) => crate::split::last_boundary(data, from, to, &opts.dialect),
        (Format::Json(_), JsonShape::Lines) => {
            let to = to.min(data.len());
            memchr::memrchr(b'\n', data.get(from..to)?).map(|i| from + i + 1)
        }
        (Format::Json(_), JsonShape::Array) => {
            crate::parse::json::last_array_boundary(data, from, to)
        }
        (Format::Json(_), JsonShape::Values) => {
            crate::parse::json::last_values_boundary(data, from, to)
        }
    }
}

/// The first record boundary after `target` in `data`, by input format
/// (`json`: the file's layout).
fn find_cut(opts: &LoadOptions, json: JsonShape, data: &[u8], target: usize) -> Option<usize> {
    crate::stages::time(Stage::Cut, || find_cut_untimed(opts, json, data, target))
}

fn find_cut_untimed(
    opts: &LoadOptions,
    json: JsonShape,
    data: &[u8],
    target: usize,
) -> Option<usize> {
    match (opts.format, json) {
        (Format::Delimited, _) => find_boundary(data, target, &opts.dialect),
        (Format::Json(_), JsonShape::Lines) => crate::parse::json::find_line_boundary(data, target),
        (Format::Json(_), JsonShape::Array) => {
            crate::parse::json::find_array_boundary(data, target)
        }
        (Format::Json(_), JsonShape::Values) => {
            crate::parse::json::find_values_boundary(data, target)
        }
    }
}

/// Sends one block (waiting for a token: a bound on blocks in flight).
fn send_block(
    shared: &Shared<'_>,
    blocks: &SyncSender<Block>,
    tokens: &Receiver<()>,
    seq: &mut u64,
    data: Buf,
    mapped: Option<(Arc<Mapped>, std::ops::Range<usize>)>,
    parts: Vec<Part>,
) -> Result<()> {
    if tokens.recv().is_err() || shared.stopping() {
        return Err(Error::Cancelled);
    }
    let block = Block {
        seq: *seq,
        data,
        mapped,
        parts,
    };
    *seq += 1;
    blocks.send(block).map_err(|_| Error::Cancelled)
}

/// A pack of small files is sent once it holds this much: large enough
/// that a hand-off carries many files, small enough that the packs of a
/// pile of small files still spread over every worker.
const PACK_BYTES: usize = 256 << 10;

/// Small files gathered into one block.
#[derive(Default)]
struct Pack {
    data: Option<Buf>,
    parts: Vec<Part>,
}

impl Pack {
    fn len(&self) -> usize {
        self.data.as_ref().map_or(0, |d| d.len)
    }

    /// Appends a whole file's data (`part` describes it).
    fn add(&mut self, shared: &Shared<'_>, bytes: &[u8], mut part: Part) {
        let data = self.data.get_or_insert_with(|| shared.take_buf());
        if data.bytes.len() < data.len + bytes.len() {
            data.bytes.resize((data.len + bytes.len()).max(64 << 10), 0);
        }
        data.bytes[data.len..data.len + bytes.len()].copy_from_slice(bytes);
        part.start = data.len;
        part.end = data.len + bytes.len();
        data.len += bytes.len();
        self.parts.push(part);
    }

    fn send(
        &mut self,
        shared: &Shared<'_>,
        blocks: &SyncSender<Block>,
        tokens: &Receiver<()>,
        seq: &mut u64,
    ) -> Result<()> {
        if self.parts.is_empty() {
            return Ok(());
        }
        let data = self.data.take().unwrap_or_default();
        let parts = std::mem::take(&mut self.parts);
        send_block(shared, blocks, tokens, seq, data, None, parts)
    }
}
