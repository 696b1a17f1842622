//! Segment files: Arrow IPC files, one or more record batches each.
//!
//! The writer and the reader of the format live side by side here. The
//! manifest keeps the whole file's CRC-32 and the CRC-32s of its parts
//! (the metadata, and each column's buffers: [`SegmentChecksums`]), so a
//! query checks the bytes it reads, and only those, before decoding them;
//! `sluice check` checks the whole file.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_buffer::Buffer;
use arrow_ipc::reader::{FileDecoder, read_footer_length};
use arrow_ipc::root_as_footer;
use arrow_ipc::writer::{DictionaryHandling, FileWriter, IpcWriteOptions};
use arrow_schema::{Field, Schema as ArrowSchema, SchemaRef};

use super::direct::DirectFile;
use super::manifest::{SegmentChecksums, SegmentMeta};
use crate::batch::ColumnStats;
use crate::batch::dict::{SegmentDict, decode, dict_type};
use crate::error::{Error, Result};
use crate::stages::{Stage, time};

/// Counts the bytes on their way to the file and takes the CRC-32s of
/// the whole file and of its metadata part as they pass; the bytes of
/// one record batch's messages go to a [`Splitter`] instead, which takes
/// the CRC-32 of each part (a column's buffers, metadata, padding) as the
/// bytes pass, with no copy of them.
struct CrcWriter<W> {
    inner: W,
    bytes: u64,
    whole: crc32fast::Hasher,
    meta: crc32fast::Hasher,
    capture: Option<Splitter>,
}

impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        crate::fault::charge(buf.len())?;
        let n = time(Stage::Write, || self.inner.write(buf))?;
        let done = &buf[..n];
        match &mut self.capture {
            // Each part's CRC is taken as its bytes pass, and combined
            // into the whole file's later (one pass over the bytes, not
            // two).
            Some(c) => time(Stage::Checksum, || c.feed(done)),
            None => time(Stage::Checksum, || {
                self.whole.update(done);
                self.meta.update(done)
            }),
        }
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        time(Stage::Write, || self.inner.flush())
    }
}

/// Starts the kernel writing a segment's dirty pages to the disk now
/// (without waiting), so that the `fsync` that ends the segment waits for
/// the last batches only, not for the whole file: the writer thread,
/// blocked in it, held up the pipeline for up to 60 ms a segment. A hint:
/// where it is not supported, nothing happens.
fn start_writeback(file: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid descriptor of an open file; offset 0 and length
        // 0 name the whole file; the flag only starts writeback.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// The footer's custom metadata key under which a segment lists its
/// record batches ([`BatchMeta`], as JSON).
pub const BATCHES_KEY: &str = "sluice.batches";

/// One record batch of a segment, as the footer lists it: its rows, the
/// CRC-32 of each column's buffers in it, and its zone map. Covered by
/// the file's `meta` checksum, so a reader that has checked that trusts
/// it, and checks only the batches (and columns) that it reads.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BatchMeta {
    pub rows: u64,
    pub crc32: Vec<u32>,
    pub stats: Vec<ColumnStats>,
}

/// Writes one segment file.
///
/// The file's Arrow schema is fixed by the first batch: a TEXT column that
/// arrives dictionary-encoded (see [`crate::batch::dict`]) is stored as
/// `Dictionary(UInt16, Utf8)` with one dictionary for the segment, unless
/// the load has marked it plain.
pub struct SegmentWriter {
    compression: super::Compression,
    rel: String,
    path: PathBuf,
    schema: SchemaRef,
    sink: Option<CrcWriter<DirectFile>>,
    writer: Option<FileWriter<CrcWriter<DirectFile>>>,
    /// Per column: its segment dictionary, for encoded columns.
    dicts: Vec<Option<SegmentDict>>,
    rows: u64,
    stats: Vec<ColumnStats>,
    /// The record batches written, for the footer; `None` once a batch
    /// could not be split into its columns (not expected: the segment
    /// then has the whole file's CRC alone).
    batches: Option<Vec<BatchMeta>>,
    /// CRC-32s of each column's buffers so far, over every batch.
    columns: Vec<crc32fast::Hasher>,
}

impl SegmentWriter {
    /// Creates the file at `path`; `rel` is its name relative to the
    /// database; `schema` is the table's (TEXT as `Utf8`); `direct`: past
    /// the page cache where the file system allows ([`DirectFile`]).
    pub fn create(
        path: PathBuf,
        rel: String,
        schema: &SchemaRef,
        compression: super::Compression,
        direct: bool,
    ) -> Result<Self> {
        let f = DirectFile::create(&path, direct).map_err(|e| Error::io(&path, e))?;
        let sink = CrcWriter {
            inner: f,
            bytes: 0,
            whole: crc32fast::Hasher::new(),
            meta: crc32fast::Hasher::new(),
            capture: None,
        };
        Ok(SegmentWriter {
            compression,
            rel,
            path,
            schema: schema.clone(),
            sink: Some(sink),
            writer: None,
            dicts: Vec::new(),
            rows: 0,
            stats: vec![ColumnStats::default(); schema.fields().len()],
            batches: Some(Vec::new()),
            columns: vec![crc32fast::Hasher::new(); schema.fields().len()],
        })
    }

    /// Starts the IPC file with the physical schema that `batch` implies.
    fn start(&mut self, batch: &RecordBatch, plain: &[bool]) -> Result<()> {
        let sink = self
            .sink
            .take()
            .ok_or_else(|| Error::Internal("segment started twice".into()))?;
        let mut fields = Vec::with_capacity(self.schema.fields().len());
        self.dicts.clear();
        for (c, f) in self.schema.fields().iter().enumerate() {
            let encoded = f.data_type() == &arrow_schema::DataType::Utf8
                && matches!(
                    batch.column(c).data_type(),
                    arrow_schema::DataType::Dictionary(..)
                )
                && !plain.get(c).copied().unwrap_or(false);
            if encoded {
                fields.push(Field::new(f.name(), dict_type(), f.is_nullable()));
                self.dicts.push(Some(SegmentDict::default()));
            } else {
                fields.push(f.as_ref().clone());
                self.dicts.push(None);
            }
        }
        let schema = ArrowSchema::new(fields);
        let opts = self.write_options()?;
        let writer = FileWriter::try_new_with_options(sink, &schema, opts)
            .map_err(|e| arrow_io_error(&self.path, e))?;
        self.writer = Some(writer);
        Ok(())
    }

    fn write_options(&self) -> Result<IpcWriteOptions> {
        let opts = IpcWriteOptions::default().with_dictionary_handling(DictionaryHandling::Delta);
        Ok(match self.compression {
            super::Compression::None => opts,
            super::Compression::Zstd => opts
                .try_with_compression(Some(arrow_ipc::CompressionType::ZSTD))
                // Level 1: on the id/number columns of the key-index
                // benchmark it was both the smallest (299 MB against 321 at
                // level 3 and 308 at 9) and the fastest.
                .and_then(|o| o.try_with_compression_level(Some(1)))
                .map_err(|e| arrow_io_error(&self.path, e))?,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        match &self.writer {
            Some(w) => w.get_ref().bytes,
            None => 0,
        }
    }

    /// Appends a batch and merges its statistics. `Ok(Some(c))`: nothing
    /// was written because column `c` outgrew its segment dictionary; the
    /// caller closes this segment, marks `c` plain and writes the batch to
    /// a new one. `plain[c]`: column c is never encoded.
    pub fn write(
        &mut self,
        batch: &RecordBatch,
        stats: &[ColumnStats],
        plain: &[bool],
    ) -> Result<Option<usize>> {
        if self.writer.is_none() {
            self.start(batch, plain)?;
        }
        let mut cols = Vec::with_capacity(batch.num_columns());
        for (c, a) in batch.columns().iter().enumerate() {
            match self.dicts.get_mut(c) {
                Some(Some(d)) => match d.encode(a) {
                    Some(e) => cols.push(e),
                    None => return Ok(Some(c)),
                },
                _ => cols.push(decode(a)?),
            }
        }
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| Error::Internal("segment not started".into()))?;
        let physical = RecordBatch::try_new_with_options(
            writer.schema().clone(),
            cols,
            &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )?;
        // The batch's messages (delta dictionaries, then the record
        // batch) are split on their way out into the parts whose CRCs the
        // footer and the manifest keep.
        let counts = buffer_counts(writer.schema());
        writer.get_mut().capture = Some(Splitter::new(counts.as_deref().unwrap_or(&[])));
        let written = writer.write(&physical);
        let split = writer.get_mut().capture.take().map(Splitter::finish);
        written.map_err(|e| arrow_io_error(&self.path, e))?;
        let sink = writer.get_mut();
        time(Stage::Checksum, || match (split, counts) {
            (Some(Ok(parts)), Ok(_)) => {
                let mut crcs = vec![crc32fast::Hasher::new(); self.columns.len()];
                for (part, h) in parts {
                    sink.whole.combine(&h);
                    match part {
                        Part::Meta => sink.meta.combine(&h),
                        Part::Column(c) => crcs[c].combine(&h),
                        Part::Pad => {}
                    }
                }
                for (total, h) in self.columns.iter_mut().zip(&crcs) {
                    total.combine(h);
                }
                if let Some(b) = &mut self.batches {
                    b.push(BatchMeta {
                        rows: batch.num_rows() as u64,
                        crc32: crcs.into_iter().map(|h| h.finalize()).collect(),
                        stats: stats.to_vec(),
                    });
                }
            }
            // Bytes that could not be split (not expected) count whole,
            // as metadata, and the segment keeps the whole file's CRC
            // alone.
            (split, _) => {
                let all = match split {
                    Some(Err(all)) => all,
                    Some(Ok(parts)) => {
                        let mut all = crc32fast::Hasher::new();
                        for (_, h) in parts {
                            all.combine(&h);
                        }
                        all
                    }
                    None => crc32fast::Hasher::new(),
                };
                sink.whole.combine(&all);
                sink.meta.combine(&all);
                self.batches = None;
            }
        });
        if !writer.get_ref().inner.is_direct() {
            start_writeback(writer.get_ref().inner.get_ref());
        }
        self.rows += batch.num_rows() as u64;
        for (s, b) in self.stats.iter_mut().zip(stats) {
            s.merge(b);
        }
        Ok(None)
    }

    /// Writes the footer, flushes and fsyncs; returns the manifest entry.
    pub fn finish(mut self) -> Result<SegmentMeta> {
        let mut writer = match self.writer.take() {
            Some(w) => w,
            // No batch was written: an empty file of the table's schema.
            None => {
                let sink = self
                    .sink
                    .take()
                    .ok_or_else(|| Error::Internal("segment without a file".into()))?;
                FileWriter::try_new_with_options(sink, &self.schema, self.write_options()?)
                    .map_err(|e| arrow_io_error(&self.path, e))?
            }
        };
        let listed = match &self.batches {
            Some(b) if self.stats.len() == self.columns.len() => {
                Some(serde_json::to_string(b).map_err(|e| Error::Internal(e.to_string()))?)
            }
            _ => None,
        };
        if let Some(json) = listed {
            writer.write_metadata(BATCHES_KEY, json);
        }
        writer.finish().map_err(|e| arrow_io_error(&self.path, e))?;
        let sink = writer
            .into_inner()
            .map_err(|e| arrow_io_error(&self.path, e))?;
        let bytes = sink.bytes;
        let crc32 = sink.whole.finalize();
        let meta = sink.meta.finalize();
        let file =
            time(Stage::Write, || sink.inner.finish()).map_err(|e| Error::io(&self.path, e))?;
        time(Stage::Sync, || file.sync_all()).map_err(|e| Error::io(&self.path, e))?;
        // The CRCs were taken as the bytes were written; a batch that
        // could not be split leaves the whole file's alone.
        let checksums = self.batches.is_some().then(|| SegmentChecksums {
            meta,
            columns: self.columns.iter().map(|h| h.clone().finalize()).collect(),
        });
        Ok(SegmentMeta {
            file: self.rel,
            rows: self.rows,
            bytes,
            crc32,
            stats: self.stats,
            shard: 0,
            checksums,
        })
    }
}

/// Who a byte range of a segment file belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Outside the record batches' bodies.
    Meta,
    /// A buffer of column `c`.
    Column(usize),
    /// Padding between buffers in a body.
    Pad,
}

/// A segment file cut into parts: `(start, end, part)` ranges, in file
/// order, covering it all.
struct Layout {
    ranges: Vec<(usize, usize, Part)>,
    columns: usize,
    /// The record batches, in the footer's order.
    batches: Vec<BatchLayout>,
}

/// The buffers an IPC record batch has for a column of `t` (flat
/// columns only: the types a table holds).
fn buffers_of(t: &arrow_schema::DataType) -> Option<usize> {
    use arrow_schema::DataType as D;
    match t {
        D::Boolean
        | D::Int8
        | D::Int16
        | D::Int32
        | D::Int64
        | D::UInt8
        | D::UInt16
        | D::UInt32
        | D::UInt64
        | D::Float32
        | D::Float64
        | D::Date32
        | D::Date64
        | D::Time32(_)
        | D::Time64(_)
        | D::Interval(_)
        | D::Timestamp(..)
        | D::Decimal32(..)
        | D::Decimal64(..)
        | D::Decimal128(..)
        | D::Decimal256(..)
        | D::Dictionary(..) => Some(2),
        D::Utf8 | D::Binary => Some(3),
        _ => None,
    }
}

/// The flatbuffer message of the encapsulated IPC message at `buf[at..]`
/// and the length of its header (prefix, flatbuffer and padding).
fn message_at(
    buf: &[u8],
    at: usize,
) -> std::result::Result<(arrow_ipc::Message<'_>, usize), String> {
    let word = |i: usize| -> std::result::Result<[u8; 4], String> {
        buf.get(at + i..at + i + 4)
            .and_then(|w| w.try_into().ok())
            .ok_or_else(|| "message header outside the file".to_string())
    };
    let (fb_at, fb_len) = if word(0)? == [0xff; 4] {
        (8, i32::from_le_bytes(word(4)?))
    } else {
        (4, i32::from_le_bytes(word(0)?))
    };
    let fb_len = usize::try_from(fb_len).map_err(|_| "bad message length")?;
    let fb = buf
        .get(at + fb_at..at + fb_at + fb_len)
        .ok_or("message outside its block")?;
    let message = arrow_ipc::root_as_message(fb).map_err(|e| e.to_string())?;
    Ok((message, fb_at + fb_len))
}

/// Where one record batch's columns are: per column, the absolute byte
/// ranges of its non-empty buffers in the body at `body..body + body_len`.
struct BatchLayout {
    rows: usize,
    columns: Vec<Vec<(usize, usize)>>,
}

fn batch_layout(
    message: &arrow_ipc::Message<'_>,
    body: usize,
    body_len: usize,
    counts: &[usize],
) -> std::result::Result<BatchLayout, String> {
    let batch = message
        .header_as_record_batch()
        .ok_or("a record batch block without a record batch")?;
    let buffers: Vec<_> = batch
        .buffers()
        .map(|b| b.iter().collect())
        .unwrap_or_default();
    if buffers.len() != counts.iter().sum::<usize>() {
        return Err("buffers do not match the columns".into());
    }
    let rows = usize::try_from(batch.length()).map_err(|_| "bad row count")?;
    let mut columns = Vec::with_capacity(counts.len());
    let mut i = 0;
    for &k in counts {
        let mut ranges = Vec::with_capacity(k);
        for b in &buffers[i..i + k] {
            let start = usize::try_from(b.offset()).map_err(|_| "bad buffer")?;
            let len = usize::try_from(b.length()).map_err(|_| "bad buffer")?;
            let stop = start.checked_add(len).ok_or("bad buffer")?;
            if stop > body_len {
                return Err("buffer outside its body".into());
            }
            if len > 0 {
                ranges.push((body + start, body + stop));
            }
        }
        columns.push(ranges);
        i += k;
    }
    Ok(BatchLayout { rows, columns })
}

/// Cuts `[start, end)` (a body) into column ranges and padding, appending
/// to `out` in file order.
fn cut_body(
    start: usize,
    end: usize,
    l: &BatchLayout,
    out: &mut Vec<(usize, usize, Part)>,
) -> std::result::Result<(), String> {
    let mut cols: Vec<(usize, usize, Part)> = l
        .columns
        .iter()
        .enumerate()
        .flat_map(|(c, r)| r.iter().map(move |&(s, e)| (s, e, Part::Column(c))))
        .collect();
    cols.sort_unstable_by_key(|r| r.0);
    let mut at = start;
    for (s, e, p) in cols {
        if s < at {
            return Err("buffers overlap".into());
        }
        if s > at {
            out.push((at, s, Part::Pad));
        }
        out.push((s, e, p));
        at = e;
    }
    if end > at {
        out.push((at, end, Part::Pad));
    }
    Ok(())
}

/// Splits the messages that one `FileWriter::write` call wrote (delta
/// dictionaries, then a record batch) into parts, as [`layout`] splits
/// the finished file: message headers and dictionary batches are `Meta`.
/// The reference that [`Splitter`] is tested against.
#[cfg(test)]
fn split_messages(
    buf: &[u8],
    counts: &[usize],
) -> std::result::Result<Vec<(usize, usize, Part)>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut batches = 0;
    while at < buf.len() {
        let (message, header) = message_at(buf, at)?;
        let body = at + header;
        let body_len = usize::try_from(message.bodyLength()).map_err(|_| "bad body length")?;
        let end = body.checked_add(body_len).ok_or("offset overflow")?;
        if end > buf.len() {
            return Err("message longer than what was written".into());
        }
        if message.header_type() == arrow_ipc::MessageHeader::RecordBatch {
            out.push((at, body, Part::Meta));
            let l = batch_layout(&message, body, body_len, counts)?;
            cut_body(body, end, &l, &mut out)?;
            batches += 1;
        } else {
            out.push((at, end, Part::Meta));
        }
        at = end;
    }
    if batches != 1 {
        return Err(format!("{batches} record batches in one write"));
    }
    Ok(out)
}

/// Splits the messages of one `FileWriter::write` call (delta
/// dictionaries, then a record batch) as they are written, into the
/// parts that [`layout`] cuts a finished file into: message headers and
/// dictionary batches are `Meta`, a record batch's body its columns'
/// buffers and the padding between them. Each part's CRC-32 is taken as
/// its bytes pass, however the writes cut them, with no copy of the
/// bytes (capturing the messages to split them after was a copy of every
/// byte a load writes, 2-4 % of its CPU time).
struct Splitter {
    /// IPC buffers per column.
    counts: Vec<usize>,
    /// The message header being read: its prefix and flatbuffer.
    header: Vec<u8>,
    /// The parts of the body being read, relative to its start (empty
    /// between messages), the part the bytes are in, and the position.
    body: Vec<(usize, usize, Part)>,
    next: usize,
    at: usize,
    /// The CRC of the part being read, so far.
    cur: crc32fast::Hasher,
    /// Finished parts in order, with their CRCs.
    parts: Vec<(Part, crc32fast::Hasher)>,
    batches: usize,
    /// Once the bytes could not be split: the CRC of all of them.
    failed: Option<crc32fast::Hasher>,
}

impl Splitter {
    fn new(counts: &[usize]) -> Splitter {
        Splitter {
            counts: counts.to_vec(),
            header: Vec::new(),
            body: Vec::new(),
            next: 0,
            at: 0,
            cur: crc32fast::Hasher::new(),
            parts: Vec::new(),
            batches: 0,
            failed: None,
        }
    }

    /// The next bytes written.
    fn feed(&mut self, mut b: &[u8]) {
        while !b.is_empty() {
            if let Some(all) = &mut self.failed {
                all.update(b);
                return;
            }
            if let Some(&(_, end, part)) = self.body.get(self.next) {
                let k = b.len().min(end - self.at);
                self.cur.update(&b[..k]);
                self.at += k;
                b = &b[k..];
                if self.at == end {
                    let h = std::mem::replace(&mut self.cur, crc32fast::Hasher::new());
                    self.parts.push((part, h));
                    self.next += 1;
                    if self.next == self.body.len() {
                        self.body.clear();
                        self.next = 0;
                        self.at = 0;
                    }
                }
                continue;
            }
            // A message header: its prefix, then as many bytes as the
            // prefix says.
            let want = match self.header_len() {
                Some(total) => total - self.header.len(),
                None => 8 - self.header.len(),
            };
            let k = b.len().min(want);
            self.header.extend_from_slice(&b[..k]);
            b = &b[k..];
            if self.header_len() == Some(self.header.len())
                && let Err(e) = self.start_body()
            {
                self.fail(e);
            }
        }
    }

    /// The whole header's length, once its prefix is read (legacy
    /// prefixes of 4 bytes included, as [`message_at`] reads them).
    fn header_len(&self) -> Option<usize> {
        let h = self.header.get(..8)?;
        let (at, len) = if h[..4] == [0xff; 4] {
            (8, &h[4..8])
        } else {
            (4, &h[..4])
        };
        let len = i32::from_le_bytes(len.try_into().ok()?);
        // A length that cannot be a message fails in `start_body`. Eight
        // bytes are read before the prefix is known, so a legacy header
        // is never taken as shorter than them.
        Some(at + usize::try_from(len).unwrap_or(0).max(8 - at))
    }

    /// Reads the complete header in `self.header`: a `Meta` part, and the
    /// body's parts.
    fn start_body(&mut self) -> std::result::Result<(), String> {
        let (message, len) = message_at(&self.header, 0)?;
        if len != self.header.len() {
            return Err("bad message length".into());
        }
        let body_len = usize::try_from(message.bodyLength()).map_err(|_| "bad body length")?;
        let mut body = Vec::new();
        if message.header_type() == arrow_ipc::MessageHeader::RecordBatch {
            let l = batch_layout(&message, 0, body_len, &self.counts)?;
            cut_body(0, body_len, &l, &mut body)?;
            self.batches += 1;
        } else if body_len > 0 {
            body.push((0, body_len, Part::Meta));
        }
        let mut h = crc32fast::Hasher::new();
        h.update(&self.header);
        self.parts.push((Part::Meta, h));
        self.header.clear();
        self.body = body;
        self.next = 0;
        self.at = 0;
        Ok(())
    }

    /// Gives up splitting: every byte so far, and every byte after, goes
    /// to one CRC.
    fn fail(&mut self, _why: String) {
        let mut all = crc32fast::Hasher::new();
        for (_, h) in self.parts.drain(..) {
            all.combine(&h);
        }
        all.combine(&self.cur);
        all.update(&self.header);
        self.failed = Some(all);
    }

    /// The parts with their CRCs, in order; `Err` with the CRC of all the
    /// bytes when they could not be split (or did not end with the
    /// messages, or held other than one record batch).
    fn finish(mut self) -> std::result::Result<Vec<(Part, crc32fast::Hasher)>, crc32fast::Hasher> {
        if self.failed.is_none() && (!self.header.is_empty() || !self.body.is_empty()) {
            self.fail("the writes ended inside a message".into());
        }
        if self.failed.is_none() && self.batches != 1 {
            self.fail(format!("{} record batches in one write", self.batches));
        }
        match self.failed {
            Some(all) => Err(all),
            None => Ok(self.parts),
        }
    }
}

/// The number of IPC buffers of each column of `schema`.
fn buffer_counts(schema: &ArrowSchema) -> std::result::Result<Vec<usize>, String> {
    schema
        .fields()
        .iter()
        .map(|f| buffers_of(f.data_type()))
        .collect::<Option<_>>()
        .ok_or_else(|| "a column type without a flat buffer layout".to_string())
}

/// Bytes of a segment file by position: the whole file (mapped or read),
/// or only its metadata, read with `pread` ([`MetaImage`]).
trait FileBytes {
    /// The file's size.
    fn size(&self) -> usize;
    /// Bytes `off..off + len`, when held.
    fn bytes(&self, off: usize, len: usize) -> Option<&[u8]>;
    /// The same as a buffer that arrays may point into.
    fn buffer(&self, off: usize, len: usize) -> Option<Buffer>;
}

impl FileBytes for Buffer {
    fn size(&self) -> usize {
        self.len()
    }

    fn bytes(&self, off: usize, len: usize) -> Option<&[u8]> {
        self.as_slice().get(off..off.checked_add(len)?)
    }

    fn buffer(&self, off: usize, len: usize) -> Option<Buffer> {
        let end = off.checked_add(len)?;
        (end <= self.len()).then(|| self.slice_with_length(off, len))
    }
}

/// The metadata of a mapped segment file read with `pread`: every byte
/// outside the bodies of its record batches (the `meta` part), in the
/// pieces between the bodies. Checking the metadata through the mapping
/// instead touched a page at every batch header, and the kernel mapped up
/// to 16 pages around each (that was most of a segment's opening cost,
/// and of its resident memory).
struct MetaImage {
    size: usize,
    /// `(offset, bytes)` of each piece, in file order.
    pieces: Vec<(usize, Buffer)>,
}

impl MetaImage {
    fn read(file: &File, size: usize) -> std::result::Result<MetaImage, String> {
        use std::os::unix::fs::FileExt;
        let pread = |off: usize, len: usize| -> std::result::Result<Buffer, String> {
            let mut b = arrow_buffer::MutableBuffer::from_len_zeroed(len);
            file.read_exact_at(b.as_slice_mut(), off as u64)
                .map_err(|e| format!("reading its metadata: {e}"))?;
            Ok(b.into())
        };
        if size < 10 {
            return Err("too short for an Arrow IPC file".into());
        }
        // The footer (with the trailer) first: it says where the bodies are.
        let trailer = pread(size - 10, 10)?;
        let footer_len = read_footer_length(
            trailer
                .as_slice()
                .try_into()
                .map_err(|_| "no trailer".to_string())?,
        )
        .map_err(|e| e.to_string())?;
        if footer_len + 10 > size {
            return Err("footer length out of range".into());
        }
        let tail_at = size - 10 - footer_len;
        let tail = pread(tail_at, footer_len + 10)?;
        let footer = root_as_footer(&tail.as_slice()[..footer_len]).map_err(|e| e.to_string())?;
        let mut bodies = Vec::new();
        for block in footer.recordBatches().iter().flatten() {
            let off = usize::try_from(block.offset()).map_err(|_| "negative offset")?;
            let meta_len = usize::try_from(block.metaDataLength()).map_err(|_| "bad length")?;
            let body_len = usize::try_from(block.bodyLength()).map_err(|_| "bad length")?;
            let body = off.checked_add(meta_len).ok_or("offset overflow")?;
            let end = body.checked_add(body_len).ok_or("offset overflow")?;
            if end > tail_at {
                return Err("record batch outside the file".into());
            }
            bodies.push((body, end));
        }
        bodies.sort_unstable();
        let mut pieces = Vec::with_capacity(bodies.len() + 1);
        let mut at = 0;
        for (body, end) in bodies {
            if body < at {
                return Err("record batches overlap".into());
            }
            if body > at {
                pieces.push((at, pread(at, body - at)?));
            }
            at = end;
        }
        // The last piece ends with the footer, already read.
        if tail_at > at {
            pieces.push((at, pread(at, tail_at - at)?));
        }
        pieces.push((tail_at, tail));
        Ok(MetaImage { size, pieces })
    }

    /// The piece holding `off..off + len`, and where in it that starts.
    fn piece(&self, off: usize, len: usize) -> Option<(&Buffer, usize)> {
        let i = self.pieces.partition_point(|p| p.0 <= off).checked_sub(1)?;
        let (at, b) = &self.pieces[i];
        let start = off - at;
        // A range that runs across two pieces: the pieces of the footer.
        if start.checked_add(len)? <= b.len() {
            return Some((b, start));
        }
        None
    }

    /// The CRC-32 of the metadata (the pieces, in order).
    fn crc(&self) -> u32 {
        let mut h = crc32fast::Hasher::new();
        for (_, b) in &self.pieces {
            h.update(b.as_slice());
        }
        h.finalize()
    }
}

impl FileBytes for MetaImage {
    fn size(&self) -> usize {
        self.size
    }

    fn bytes(&self, off: usize, len: usize) -> Option<&[u8]> {
        if let Some((b, start)) = self.piece(off, len) {
            return b.as_slice().get(start..start + len);
        }
        None
    }

    fn buffer(&self, off: usize, len: usize) -> Option<Buffer> {
        self.piece(off, len)
            .map(|(b, start)| b.slice_with_length(start, len))
    }
}

/// The footer of an IPC file, from its trailer.
fn footer_bytes(buf: &dyn FileBytes) -> std::result::Result<&[u8], String> {
    let n = buf.size();
    if n < 10 {
        return Err("too short for an Arrow IPC file".into());
    }
    let trailer: [u8; 10] = buf
        .bytes(n - 10, 10)
        .and_then(|t| t.try_into().ok())
        .ok_or("no trailer")?;
    let footer_len = read_footer_length(trailer).map_err(|e| e.to_string())?;
    if footer_len + 10 > n {
        return Err("footer length out of range".into());
    }
    buf.bytes(n - 10 - footer_len, footer_len)
        .ok_or_else(|| "footer not read".to_string())
}

/// Splits an IPC file into its parts from its footer and the headers of
/// its record batches; an error names what does not fit (a corrupt or
/// unexpected file).
fn layout(buf: &dyn FileBytes) -> std::result::Result<Layout, String> {
    let n = buf.size();
    let footer = footer_bytes(buf)?;
    let footer = root_as_footer(footer).map_err(|e| e.to_string())?;
    let schema = footer
        .schema()
        .ok_or("no schema in the footer")
        .and_then(|s| arrow_ipc::convert::try_fb_to_schema(s).map_err(|_| "bad schema"))?;
    let counts = buffer_counts(&schema)?;
    let mut batches = Vec::new();
    let mut bodies: Vec<(usize, usize, usize)> = Vec::new();
    for block in footer.recordBatches().iter().flatten() {
        let off = usize::try_from(block.offset()).map_err(|_| "negative offset")?;
        let meta_len = usize::try_from(block.metaDataLength()).map_err(|_| "bad length")?;
        let body_len = usize::try_from(block.bodyLength()).map_err(|_| "bad length")?;
        let body = off.checked_add(meta_len).ok_or("offset overflow")?;
        let end = body.checked_add(body_len).ok_or("offset overflow")?;
        if end > n || meta_len < 8 {
            return Err("record batch outside the file".into());
        }
        let head = buf
            .bytes(off, meta_len)
            .ok_or("record batch header not read")?;
        let (message, header) = message_at(head, 0)?;
        if header > meta_len {
            return Err("message outside its block".into());
        }
        bodies.push((body, end, batches.len()));
        batches.push(batch_layout(&message, body, body_len, &counts)?);
    }
    bodies.sort_unstable();
    let mut ranges = Vec::with_capacity(batches.len() * (2 * counts.len() + 2) + 1);
    let mut at = 0;
    for (body, end, i) in bodies {
        if body < at {
            return Err("record batches overlap".into());
        }
        if body > at {
            ranges.push((at, body, Part::Meta));
        }
        cut_body(body, end, &batches[i], &mut ranges)?;
        at = end;
    }
    if n > at {
        ranges.push((at, n, Part::Meta));
    }
    Ok(Layout {
        ranges,
        columns: counts.len(),
        batches,
    })
}

/// The whole file's CRC-32 and its parts', in one pass.
fn checksums(buf: &[u8], l: &Layout) -> (u32, SegmentChecksums) {
    let mut whole = crc32fast::Hasher::new();
    let mut meta = crc32fast::Hasher::new();
    let mut columns = vec![crc32fast::Hasher::new(); l.columns];
    for &(s, e, part) in &l.ranges {
        let mut h = crc32fast::Hasher::new();
        h.update(&buf[s..e]);
        match part {
            Part::Meta => meta.combine(&h),
            Part::Column(c) => columns[c].combine(&h),
            Part::Pad => {}
        }
        whole.combine(&h);
    }
    (
        whole.finalize(),
        SegmentChecksums {
            meta: meta.finalize(),
            columns: columns.into_iter().map(|h| h.finalize()).collect(),
        },
    )
}

/// The CRC-32 of the ranges of `part`.
fn part_crc(buf: &[u8], l: &Layout, part: Part) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for &(s, e, p) in &l.ranges {
        if p == part {
            h.update(&buf[s..e]);
        }
    }
    h.finalize()
}

fn arrow_io_error(path: &Path, e: arrow_schema::ArrowError) -> Error {
    match e {
        arrow_schema::ArrowError::IoError(_, io) => Error::io(path, io),
        other => Error::Arrow(other),
    }
}

/// Reads every batch of a segment, after checking its size and its whole
/// checksum (what `sluice check` and the key index read).
pub fn read_segment(
    path: &Path,
    meta: &SegmentMeta,
    schema: &SchemaRef,
) -> Result<Vec<RecordBatch>> {
    let corrupt = |message: String| Error::Corrupt {
        file: path.to_path_buf(),
        message,
    };
    let buffer = map_segment(path, meta)?;
    let bytes = buffer.as_slice();
    // With checksums of parts, one pass gives the whole file's CRC and
    // the parts'.
    let split = meta.checksums.as_ref().map(|_| layout(&buffer));
    let (crc, found) = match &split {
        Some(Ok(l)) => {
            let (whole, parts) = checksums(bytes, l);
            (whole, Some(parts))
        }
        _ => (crc32fast::hash(bytes), None),
    };
    if crc != meta.crc32 {
        return Err(corrupt(format!(
            "checksum mismatch (crc32 {crc:08x}, the manifest says {:08x})",
            meta.crc32
        )));
    }
    match (&split, &found) {
        (Some(Err(e)), _) => return Err(corrupt(e.clone())),
        (Some(Ok(_)), Some(found)) if meta.checksums.as_ref() != Some(found) => {
            return Err(corrupt(
                "checksums of its parts differ from the manifest's (the whole file's matches)"
                    .into(),
            ));
        }
        _ => {}
    }
    let opened = open_file(path, schema, &buffer)?;
    // The footer's list of batches: each batch's column CRCs as listed.
    if let (Some(Ok(l)), Some(j)) = (&split, &opened.listed) {
        let listed = parse_listed(j, l).map_err(corrupt)?;
        for (i, (b, bl)) in listed.iter().zip(&l.batches).enumerate() {
            for c in 0..l.columns {
                let crc = batch_crc(bytes, bl, c);
                if crc != b.crc32[c] {
                    let name = schema.fields().get(c).map_or("?", |f| f.name().as_str());
                    return Err(corrupt(format!(
                        "checksum mismatch in column {name} (crc32 {crc:08x}, the footer says {:08x} for record batch {i})",
                        b.crc32[c]
                    )));
                }
            }
        }
    }
    decode_segment(path, meta, opened, &buffer)
}

/// The footer's list of batches, parsed and checked against the file's
/// layout (one entry per record batch, with its rows, a CRC and a zone
/// map per column).
fn parse_listed(listed: &str, l: &Layout) -> std::result::Result<Vec<BatchMeta>, String> {
    let batches: Vec<BatchMeta> = serde_json::from_str(listed)
        .map_err(|e| format!("the footer's list of batches does not parse: {e}"))?;
    if batches.len() != l.batches.len() {
        return Err(format!(
            "the footer lists {} record batches, the file has {}",
            batches.len(),
            l.batches.len()
        ));
    }
    for (i, (b, bl)) in batches.iter().zip(&l.batches).enumerate() {
        if b.rows != bl.rows as u64 || b.crc32.len() != l.columns || b.stats.len() != l.columns {
            return Err(format!(
                "the footer's entry for record batch {i} does not fit the batch"
            ));
        }
    }
    Ok(batches)
}

/// The CRC-32 of column `c`'s buffers in one record batch.
fn batch_crc(buf: &[u8], b: &BatchLayout, c: usize) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for &(s, e) in b.columns.get(c).map_or(&[][..], |r| &r[..]) {
        h.update(&buf[s..e]);
    }
    h.finalize()
}

/// One record batch of a [`SegmentScan`]: its rows and, where the footer
/// lists them, its zone map (per table column).
pub struct ScanBatch<'a> {
    pub rows: usize,
    pub stats: Option<&'a [ColumnStats]>,
}

/// Columns `cols` of one segment, opened for a query: the file is mapped
/// and its size and `meta` checksum checked, which covers the footer's
/// list of record batches with their rows, zone maps and column CRCs.
/// A batch's columns are checked when the batch is first read
/// ([`SegmentScan::batch`]): bytes of batches that a query skips are
/// never touched. A segment written before the list is checked by whole
/// columns when opened, and one written before checksums of parts whole.
pub struct SegmentScan {
    path: PathBuf,
    buffer: Buffer,
    decoder: FileDecoder,
    blocks: Vec<arrow_ipc::Block>,
    rows: Vec<usize>,
    /// Per batch: the ranges of each table column's buffers.
    layouts: Vec<BatchLayout>,
    listed: Option<Vec<BatchMeta>>,
    cols: Vec<usize>,
    names: Vec<String>,
    /// Per batch and scanned column (`batch * cols + position`): checked.
    checked: Vec<std::sync::atomic::AtomicBool>,
    /// Per batch, when the scan keeps what it decodes (a long-lived
    /// database handle): the decoded batch.
    kept: Option<Vec<std::sync::Mutex<Option<RecordBatch>>>>,
    /// The file is mapped (not read into memory).
    mapped: bool,
    /// The file, as [`CHECKED`] knows it (a mapped file's).
    id: Option<FileId>,
}

/// A file as the process's list of checked columns knows it: its device,
/// inode, size and modification time (seconds, nanoseconds).
type FileId = (u64, u64, u64, i64, i64);

/// Entries [`CHECKED`] holds at most; past that it starts again (a long
/// running server over a large database checks a column again, later).
const CHECKED_MOST: usize = 1 << 20;

/// The columns of record batches (`batch << 32 | column`) that a scan of
/// this process has checked, by file: a query that reads a column twice
/// (a subquery over the same table: TPC-H Q21 reads lineitem three times,
/// and checked it three times) checks it once. A file changed in place
/// has another modification time and is checked again.
static CHECKED: std::sync::Mutex<Option<(usize, HashMap<FileId, HashSet<u64>>)>> =
    std::sync::Mutex::new(None);

fn file_id(f: &File) -> Option<FileId> {
    meta_id(&f.metadata().ok()?)
}

fn meta_id(m: &std::fs::Metadata) -> Option<FileId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        None
    }
}

/// Whether column `c` of batch `i` of file `id` was checked by this process.
fn checked_before(id: &FileId, i: usize, c: usize) -> bool {
    let key = (i as u64) << 32 | c as u64;
    CHECKED.lock().ok().is_some_and(|g| {
        g.as_ref()
            .and_then(|(_, m)| m.get(id))
            .is_some_and(|s| s.contains(&key))
    })
}

/// Notes that column `c` of batch `i` of file `id` was checked.
fn note_checked(id: &FileId, i: usize, c: usize) {
    let key = (i as u64) << 32 | c as u64;
    if let Ok(mut g) = CHECKED.lock() {
        let (n, m) = g.get_or_insert_with(Default::default);
        if *n >= CHECKED_MOST {
            m.clear();
            *n = 0;
        }
        if m.entry(*id).or_default().insert(key) {
            *n += 1;
        }
    }
}

impl SegmentScan {
    /// Whether the file at `path` is still the one this scan mapped (same
    /// device, inode, size and modification time). A file changed in
    /// place shows its new bytes through the mapping, past the checks
    /// this scan has made: a handle that keeps scans opens it again.
    /// A file read whole is a copy, checked: always current.
    pub fn is_current(&self, path: &Path) -> bool {
        if !self.mapped {
            return true;
        }
        match &self.id {
            Some(id) => {
                std::fs::metadata(path)
                    .ok()
                    .and_then(|m| meta_id(&m))
                    .as_ref()
                    == Some(id)
            }
            // No identity to compare (not unix): open it again.
            None => false,
        }
    }

    /// Opens columns `cols` of a segment (in that order); `keep`: decoded
    /// batches are kept for the next call.
    pub fn open(
        path: &Path,
        meta: &SegmentMeta,
        schema: &SchemaRef,
        cols: &[usize],
        keep: bool,
    ) -> Result<SegmentScan> {
        let corrupt = |message: String| Error::Corrupt {
            file: path.to_path_buf(),
            message,
        };
        let name = |c: usize| schema.fields().get(c).map_or("?", |f| f.name().as_str());
        let (buffer, file) = open_segment(path, meta)?;
        let mut checked_all = false;
        let layout_of = |buffer: &dyn FileBytes| layout(buffer).map_err(corrupt);
        // A mapped file's metadata is read with pread, not through the
        // mapping (see `MetaImage`).
        let image = match (&file, &meta.checksums) {
            (Some(f), Some(_)) => Some(MetaImage::read(f, buffer.len()).map_err(corrupt)?),
            _ => None,
        };
        let meta_bytes: &dyn FileBytes = match &image {
            Some(i) => i,
            None => &buffer,
        };
        let l = match &meta.checksums {
            None => {
                // Written before the checksums of parts: the whole file.
                let crc = crc32fast::hash(buffer.as_slice());
                if crc != meta.crc32 {
                    return Err(corrupt(format!(
                        "checksum mismatch (crc32 {crc:08x}, the manifest says {:08x})",
                        meta.crc32
                    )));
                }
                checked_all = true;
                layout_of(&buffer)?
            }
            Some(parts) => {
                let l = layout_of(meta_bytes)?;
                let meta_crc = match &image {
                    Some(i) => i.crc(),
                    None => part_crc(buffer.as_slice(), &l, Part::Meta),
                };
                if meta_crc != parts.meta || l.columns != parts.columns.len() {
                    return Err(corrupt(format!(
                        "checksum mismatch in the file's metadata (crc32 {meta_crc:08x}, the manifest says {:08x})",
                        parts.meta
                    )));
                }
                l
            }
        };
        let opened = open_file(path, schema, meta_bytes)?;
        if opened.blocks.len() != l.batches.len() {
            return Err(corrupt(
                "the footer's record batches are not the file's".into(),
            ));
        }
        let listed = match (&opened.listed, checked_all) {
            (Some(j), false) => Some(parse_listed(j, &l).map_err(corrupt)?),
            _ => None,
        };
        if listed.is_none() && !checked_all {
            // Checksums of whole columns (written before the list).
            let parts = meta
                .checksums
                .as_ref()
                .ok_or_else(|| Error::Internal("no checksums".into()))?;
            let mut seen = vec![false; l.columns];
            for &c in cols {
                if c >= l.columns || std::mem::replace(&mut seen[c], true) {
                    continue;
                }
                let crc = part_crc(buffer.as_slice(), &l, Part::Column(c));
                if crc != parts.columns[c] {
                    return Err(corrupt(format!(
                        "checksum mismatch in column {} (crc32 {crc:08x}, the manifest says {:08x})",
                        name(c),
                        parts.columns[c]
                    )));
                }
            }
            checked_all = true;
        }
        let rows: Vec<usize> = l.batches.iter().map(|b| b.rows).collect();
        let total: u64 = rows.iter().map(|&r| r as u64).sum();
        if total != meta.rows {
            return Err(corrupt(format!(
                "holds {total} rows, the manifest says {}",
                meta.rows
            )));
        }
        let n = rows.len();
        Ok(SegmentScan {
            path: path.to_path_buf(),
            decoder: opened.decoder.with_projection(cols.to_vec()),
            blocks: opened.blocks,
            rows,
            layouts: l.batches,
            listed,
            cols: cols.to_vec(),
            names: cols.iter().map(|&c| name(c).to_string()).collect(),
            checked: (0..n * cols.len())
                .map(|_| std::sync::atomic::AtomicBool::new(checked_all))
                .collect(),
            kept: keep.then(|| (0..n).map(|_| std::sync::Mutex::new(None)).collect()),
            mapped: file.is_some(),
            id: file.as_ref().and_then(file_id),
            buffer,
        })
    }

    /// Lets go of the pages of record batch `i`'s columns at positions
    /// `which` (of the scan's columns): a mapped file's pages that a
    /// query has read stay in its resident memory until the file is
    /// unmapped, so a scan through a whole segment held every page it
    /// read (TPC-H Q13's `o_comment`, read by its filter alone: 80 MB at
    /// SF 1). Only pages wholly inside those columns' buffers (and the
    /// bytes between them where no other scanned column lies) are let go;
    /// one read again is read back from the file (the page cache), so
    /// this is never wrong, only slower if the columns are read again.
    /// A scan that keeps its decoded batches lets go of nothing.
    pub fn release(&self, i: usize, which: &[usize]) {
        if !self.mapped || self.kept.is_some() {
            return;
        }
        let Some(l) = self.layouts.get(i) else {
            return;
        };
        let base = self.buffer.as_ptr() as usize;
        let size = self.buffer.len();
        let page = page_size();
        // The byte ranges to let go, and those of the scan's other
        // columns, which must stay (rows may point into them).
        let mut go: Vec<(usize, usize)> = Vec::new();
        let mut stay: Vec<(usize, usize)> = Vec::new();
        for (p, &c) in self.cols.iter().enumerate() {
            let Some(ranges) = l.columns.get(c) else {
                continue;
            };
            let to = if which.contains(&p) {
                &mut go
            } else {
                &mut stay
            };
            to.extend(ranges.iter().copied().filter(|&(f, t)| f <= t && t <= size));
        }
        go.sort_unstable();
        // Neighbouring ranges with no kept column between them are let go
        // in one call: each call interrupts every core the process runs on
        // (a TLB shootdown), and TPC-H Q6 at SF 10 spent a tenth of its
        // CPU time on 1,840 such calls, four a record batch. The bytes
        // between (columns this scan does not read, a buffer's padding)
        // were never touched, or are read back from the page cache.
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(go.len());
        for (from, to) in go {
            match merged.last_mut() {
                Some(last) if !stay.iter().any(|&(f, t)| f < from && t > last.1) => {
                    last.1 = last.1.max(to);
                }
                _ => merged.push((from, to)),
            }
        }
        for (from, to) in merged {
            let start = (base + from).next_multiple_of(page);
            let end = (base + to) / page * page;
            if end > start {
                // SAFETY: [start, end) lies inside the mapping, which
                // `self.buffer` keeps alive; the file is read-only and
                // never written (FORMAT.md), so MADV_DONTNEED only drops
                // pages that the next read maps again from the file.
                unsafe {
                    libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
                }
            }
        }
    }

    /// Lets go of the whole pages under rows `off..off + len` of the
    /// columns at positions `which` of `decoded` (a record batch of this
    /// scan as decoded): a batch of a quarter million rows need not stay
    /// resident while its morsels are read one by one. Only pages of the
    /// mapping are touched (a column decoded into memory of its own is
    /// not); pages read again are mapped again from the file.
    pub fn release_rows(&self, decoded: &RecordBatch, off: usize, len: usize, which: &[usize]) {
        if !self.mapped || self.kept.is_some() || len == 0 {
            return;
        }
        let base = self.buffer.as_ptr() as usize;
        let top = base + self.buffer.len();
        let page = page_size();
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        for &p in which {
            if let Some(c) = decoded.columns().get(p)
                && off + len <= c.len()
            {
                row_bytes(&c.slice(off, len).to_data(), &mut ranges);
            }
        }
        ranges.sort_unstable();
        for (from, to) in ranges {
            let start = from.max(base).next_multiple_of(page);
            let end = to.min(top) / page * page;
            if end > start {
                // SAFETY: [start, end) lies inside the mapping, which
                // `self.buffer` keeps alive (see `release`).
                unsafe {
                    libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
                }
            }
        }
    }

    /// The number of scanned columns.
    pub fn columns(&self) -> usize {
        self.cols.len()
    }

    /// The number of record batches.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Batch `i`'s rows and zone map.
    pub fn info(&self, i: usize) -> ScanBatch<'_> {
        ScanBatch {
            rows: self.rows.get(i).copied().unwrap_or(0),
            stats: self
                .listed
                .as_ref()
                .and_then(|l| l.get(i))
                .map(|b| &b.stats[..]),
        }
    }

    /// Record batch `i`, its columns checked (once per scan) and decoded.
    pub fn batch(&self, i: usize) -> Result<RecordBatch> {
        self.check(i, 0..self.cols.len())?;
        self.decode(i)
    }

    /// Checks the columns at positions `which` (of the scan's columns) of
    /// record batch `i`, each once per scan, and once per process in a
    /// mapped file not changed since (see [`CHECKED`]).
    pub fn check(&self, i: usize, which: impl IntoIterator<Item = usize>) -> Result<()> {
        let Some(listed) = &self.listed else {
            // Checked when opened.
            return Ok(());
        };
        let (Some(l), Some(entry)) = (self.layouts.get(i), listed.get(i)) else {
            return Err(Error::Internal(format!("no record batch {i}")));
        };
        for p in which {
            let (Some(&c), Some(name), Some(flag)) = (
                self.cols.get(p),
                self.names.get(p),
                self.checked.get(i * self.cols.len() + p),
            ) else {
                return Err(Error::Internal(format!("no column {p} in the scan")));
            };
            if flag.load(std::sync::atomic::Ordering::Acquire) {
                continue;
            }
            if self.id.as_ref().is_some_and(|id| checked_before(id, i, c)) {
                flag.store(true, std::sync::atomic::Ordering::Release);
                continue;
            }
            let crc = batch_crc(self.buffer.as_slice(), l, c);
            let want = entry.crc32[c];
            if crc != want {
                return Err(Error::Corrupt {
                    file: self.path.clone(),
                    message: format!(
                        "checksum mismatch in column {name} (crc32 {crc:08x}, the footer says {want:08x} for record batch {i})"
                    ),
                });
            }
            if let Some(id) = &self.id {
                note_checked(id, i, c);
            }
            flag.store(true, std::sync::atomic::Ordering::Release);
        }
        Ok(())
    }

    /// Record batch `i` decoded, without checking its columns: only the
    /// values of columns checked by [`SegmentScan::check`] may be used.
    /// (Decoding reads no values of a fixed-width column; a dictionary
    /// column's keys are validated against its dictionary, so damage there
    /// fails the decoding, never misreads.)
    pub fn decode(&self, i: usize) -> Result<RecordBatch> {
        if let Some(Some(b)) = self
            .kept
            .as_ref()
            .and_then(|k| k.get(i))
            .and_then(|m| m.lock().ok().map(|g| g.clone()))
        {
            return Ok(b);
        }
        let Some(block) = self.blocks.get(i) else {
            return Err(Error::Internal(format!("no record batch {i}")));
        };
        let b = read_block(&self.path, &self.decoder, &self.buffer, block)?;
        if b.num_rows() != self.rows[i] {
            return Err(Error::Corrupt {
                file: self.path.clone(),
                message: format!("record batch {i} is not the size its header says"),
            });
        }
        if let Some(m) = self.kept.as_ref().and_then(|k| k.get(i))
            && let Ok(mut g) = m.lock()
        {
            *g = Some(b.clone());
        }
        Ok(b)
    }
}

/// The size of a memory page.
/// The byte ranges (addresses) of the values of `d`'s rows: a fixed-width
/// column's values, a text column's offsets and bytes, a dictionary
/// column's keys. Other types (booleans, validity bits) add none.
fn row_bytes(d: &arrow_data::ArrayData, out: &mut Vec<(usize, usize)>) {
    use arrow_schema::DataType as T;
    let (o, n) = (d.offset(), d.len());
    let Some(first) = d.buffers().first() else {
        return;
    };
    let at = first.as_ptr() as usize;
    match d.data_type() {
        T::Utf8 | T::Binary => {
            let offsets: &[i32] = first.typed_data();
            let (Some(&from), Some(&to), Some(values)) =
                (offsets.get(o), offsets.get(o + n), d.buffers().get(1))
            else {
                return;
            };
            out.push((at + o * 4, at + (o + n + 1) * 4));
            if let (Ok(from), Ok(to)) = (usize::try_from(from), usize::try_from(to)) {
                let v = values.as_ptr() as usize;
                out.push((v + from, v + to));
            }
        }
        T::Dictionary(k, _) => {
            if let Some(w) = k.primitive_width() {
                out.push((at + o * w, at + (o + n) * w));
            }
        }
        t => {
            if let Some(w) = t.primitive_width() {
                out.push((at + o * w, at + (o + n) * w));
            }
        }
    }
}

fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p > 0 { p as usize } else { 4096 }
    })
}

/// Segment files up to this size are read, not mapped (see [`map_segment`]).
/// Measured on a table of 2,000 segments of 10 rows (~870 bytes each),
/// `SELECT sum(b)` as a fresh process: 81.5 ms with every file mapped,
/// 49.8 ms with each read (system time 70 → 33 ms). A 240 KB segment read
/// whole was no faster than mapped, so only small files are read.
const READ_WHOLE_BYTES: u64 = 64 << 10;

/// Maps a segment file after checking its size against the manifest's;
/// a small one is read instead.
fn map_segment(path: &Path, meta: &SegmentMeta) -> Result<Buffer> {
    open_segment(path, meta).map(|(b, _)| b)
}

/// [`map_segment`], with the file when it is mapped.
fn open_segment(path: &Path, meta: &SegmentMeta) -> Result<(Buffer, Option<File>)> {
    let corrupt = |message: String| Error::Corrupt {
        file: path.to_path_buf(),
        message,
    };
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if len != meta.bytes {
        return Err(corrupt(format!(
            "file is {len} bytes, the manifest says {} (truncated or overwritten)",
            meta.bytes
        )));
    }
    if len == 0 {
        return Err(corrupt("empty file".into()));
    }
    if len <= READ_WHOLE_BYTES {
        // A small file is read into an aligned buffer: a mapping costs
        // more (map, page faults, unmap) than copying it.
        let mut buf = arrow_buffer::MutableBuffer::from_len_zeroed(len as usize);
        let mut file = file;
        std::io::Read::read_exact(&mut file, buf.as_slice_mut()).map_err(|e| Error::io(path, e))?;
        return Ok((buf.into(), None));
    }
    // SAFETY: segment files are immutable once committed (FORMAT.md): no
    // process writes or truncates a file that a manifest names.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    let ptr = std::ptr::NonNull::new(map.as_ptr() as *mut u8)
        .ok_or_else(|| corrupt("null mapping".into()))?;
    let map_len = map.len();
    // SAFETY: the pointer and length come from the mapping, which the Arc
    // keeps alive for as long as any buffer refers to it.
    let buffer = unsafe { Buffer::from_custom_allocation(ptr, map_len, std::sync::Arc::new(map)) };
    Ok((buffer, Some(file)))
}

/// A segment file's footer, read: a decoder of its record batches (its
/// dictionaries read), their blocks, and the footer's list of batches.
struct Opened {
    decoder: FileDecoder,
    blocks: Vec<arrow_ipc::Block>,
    listed: Option<String>,
}

/// Reads the footer of a mapped segment, checking that its columns are
/// the table's, and its dictionaries.
fn open_file(path: &Path, schema: &SchemaRef, buffer: &dyn FileBytes) -> Result<Opened> {
    let corrupt = |message: String| Error::Corrupt {
        file: path.to_path_buf(),
        message,
    };
    let n = buffer.size();
    let footer = root_as_footer(footer_bytes(buffer).map_err(corrupt)?)
        .map_err(|e| corrupt(e.to_string()))?;
    // The file's own schema: TEXT columns may be dictionary-encoded.
    let file_schema = footer
        .schema()
        .ok_or_else(|| corrupt("no schema in the footer".into()))
        .and_then(|s| {
            arrow_ipc::convert::try_fb_to_schema(s).map_err(|e| corrupt(e.to_string()))
        })?;
    let fits = file_schema.fields().len() == schema.fields().len()
        && file_schema
            .fields()
            .iter()
            .zip(schema.fields())
            .all(|(f, t)| {
                f.data_type() == t.data_type()
                    || (t.data_type() == &arrow_schema::DataType::Utf8
                        && f.data_type() == &dict_type())
            });
    if !fits {
        return Err(corrupt(format!(
            "its columns ({}) are not the table's",
            file_schema
                .fields()
                .iter()
                .map(|f| format!("{} {}", f.name(), f.data_type()))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut decoder = FileDecoder::new(Arc::new(file_schema), footer.version());
    for block in footer.dictionaries().iter().flatten() {
        let len = block.bodyLength() as usize + block.metaDataLength() as usize;
        let off = block.offset() as usize;
        if off.checked_add(len).is_none_or(|end| end > n) {
            return Err(corrupt("dictionary outside the file".into()));
        }
        let data = buffer
            .buffer(off, len)
            .ok_or_else(|| corrupt("dictionary not read".into()))?;
        decoder
            .read_dictionary(block, &data)
            .map_err(|e| corrupt(e.to_string()))?;
    }
    let mut blocks = Vec::new();
    for block in footer.recordBatches().iter().flatten() {
        let len = block.bodyLength() as usize + block.metaDataLength() as usize;
        let off = block.offset() as usize;
        if off.checked_add(len).is_none_or(|end| end > n) {
            return Err(corrupt("record batch outside the file".into()));
        }
        blocks.push(*block);
    }
    let listed = footer.custom_metadata().and_then(|kv| {
        kv.iter()
            .find(|e| e.key() == Some(BATCHES_KEY))
            .and_then(|e| e.value().map(str::to_string))
    });
    Ok(Opened {
        decoder,
        blocks,
        listed,
    })
}

/// Decodes record batch `block` of `buffer`.
fn read_block(
    path: &Path,
    decoder: &FileDecoder,
    buffer: &Buffer,
    block: &arrow_ipc::Block,
) -> Result<RecordBatch> {
    let corrupt = |message: String| Error::Corrupt {
        file: path.to_path_buf(),
        message,
    };
    let len = block.bodyLength() as usize + block.metaDataLength() as usize;
    let data = buffer.slice_with_length(block.offset() as usize, len);
    match decoder
        .read_record_batch(block, &data)
        .map_err(|e| corrupt(e.to_string()))?
    {
        Some(b) => Ok(b),
        None => Err(corrupt("empty record batch block".into())),
    }
}

/// Decodes every batch of a segment whose footer `opened` has read,
/// checking the row count.
fn decode_segment(
    path: &Path,
    meta: &SegmentMeta,
    opened: Opened,
    buffer: &Buffer,
) -> Result<Vec<RecordBatch>> {
    let out = opened
        .blocks
        .iter()
        .map(|b| read_block(path, &opened.decoder, buffer, b))
        .collect::<Result<Vec<_>>>()?;
    let rows: u64 = out.iter().map(|b| b.num_rows() as u64).sum();
    if rows != meta.rows {
        return Err(Error::Corrupt {
            file: path.to_path_buf(),
            message: format!("holds {rows} rows, the manifest says {}", meta.rows),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, ArrayRef, Int64Array, StringArray};
    use arrow_schema::DataType;

    fn schema() -> SchemaRef {
        Arc::new(ArrowSchema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]))
    }

    fn batch(from: i64, n: i64) -> RecordBatch {
        let a: ArrayRef = Arc::new(Int64Array::from_iter(
            (from..from + n).map(|i| (i % 5 != 0).then_some(i)),
        ));
        let s: ArrayRef = Arc::new(StringArray::from_iter(
            (from..from + n).map(|i| (i % 7 != 0).then(|| format!("v{}", i % 3))),
        ));
        RecordBatch::try_new(schema(), vec![a, s]).unwrap()
    }

    fn stats(b: &RecordBatch) -> Vec<ColumnStats> {
        let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let vals: Vec<i64> = a.iter().flatten().collect();
        vec![
            ColumnStats {
                nulls: a.null_count() as u64,
                range: Some(crate::batch::StatRange::Int(
                    *vals.iter().min().unwrap(),
                    *vals.iter().max().unwrap(),
                )),
            },
            ColumnStats {
                nulls: b.column(1).null_count() as u64,
                range: None,
            },
        ]
    }

    /// Writes `batches` as one segment at `path`.
    fn write_segment(
        path: &Path,
        batches: &[RecordBatch],
        compression: super::super::Compression,
    ) -> SegmentMeta {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let mut w =
            SegmentWriter::create(path.to_path_buf(), name, &schema(), compression, true).unwrap();
        for b in batches {
            assert_eq!(w.write(b, &stats(b), &[]).unwrap(), None);
        }
        w.finish().unwrap()
    }

    #[test]
    fn the_crcs_taken_while_writing_are_those_of_the_finished_file() {
        for compression in [
            super::super::Compression::None,
            super::super::Compression::Zstd,
        ] {
            let dir = std::env::temp_dir().join(format!(
                "sluice-seg-{}-{:?}",
                std::process::id(),
                compression
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("s.arrow");
            let batches: Vec<RecordBatch> = (0..4).map(|i| batch(i * 300, 300)).collect();
            let meta = write_segment(&path, &batches, compression);
            let bytes = std::fs::read(&path).unwrap();
            let l = layout(&Buffer::from_vec(bytes.clone())).unwrap();
            let (whole, parts) = checksums(&bytes, &l);
            assert_eq!(meta.crc32, whole);
            assert_eq!(meta.checksums.as_ref(), Some(&parts));
            // The footer lists each batch with its rows, CRCs and zone map.
            let buffer = Buffer::from_vec(bytes.clone());
            let opened = open_file(&path, &schema(), &buffer).unwrap();
            let listed = parse_listed(opened.listed.as_deref().unwrap(), &l).unwrap();
            assert_eq!(listed.len(), 4);
            for (i, (b, bl)) in listed.iter().zip(&l.batches).enumerate() {
                assert_eq!(b.rows, 300);
                assert_eq!(b.stats, stats(&batches[i]));
                for c in 0..2 {
                    assert_eq!(b.crc32[c], batch_crc(&bytes, bl, c), "batch {i} column {c}");
                }
            }
            // Read back through a scan, batch by batch.
            let scan = SegmentScan::open(&path, &meta, &schema(), &[1, 0], false).unwrap();
            assert_eq!(scan.len(), 4);
            for (i, b) in batches.iter().enumerate() {
                assert_eq!(scan.info(i).stats.unwrap(), &stats(b)[..]);
                let got = crate::batch::dict::decode_batch(&scan.batch(i).unwrap(), &[]).unwrap();
                assert_eq!(got.column(1).as_ref(), b.column(0).as_ref());
                assert_eq!(got.column(0).as_ref(), b.column(1).as_ref());
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    /// Keeps what is written and feeds it to a [`Splitter`], accepting
    /// at most `chunks[i]` bytes of the i-th write (round robin), so that
    /// the writer's `write_all` cuts every message anywhere.
    struct Tee {
        bytes: Vec<u8>,
        split: Option<Splitter>,
        chunks: Vec<usize>,
        i: usize,
    }

    impl Write for Tee {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            let n = b.len().min(self.chunks[self.i % self.chunks.len()].max(1));
            self.i += 1;
            self.bytes.extend_from_slice(&b[..n]);
            if let Some(s) = &mut self.split {
                s.feed(&b[..n]);
            }
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The CRCs a list of parts gives: the whole, the metadata, each
    /// column's.
    fn fold(
        parts: impl IntoIterator<Item = (Part, crc32fast::Hasher)>,
        columns: usize,
    ) -> (u32, u32, Vec<u32>) {
        let (mut whole, mut meta) = (crc32fast::Hasher::new(), crc32fast::Hasher::new());
        let mut cols = vec![crc32fast::Hasher::new(); columns];
        for (p, h) in parts {
            whole.combine(&h);
            match p {
                Part::Meta => meta.combine(&h),
                Part::Column(c) => cols[c].combine(&h),
                Part::Pad => {}
            }
        }
        (
            whole.finalize(),
            meta.finalize(),
            cols.into_iter().map(|h| h.finalize()).collect(),
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Split as the bytes pass, however the writes cut them, the
        /// parts have the CRCs that splitting the written bytes gives:
        /// integers, text, dictionary text with delta dictionaries,
        /// booleans and decimals, with and without NULLs.
        #[test]
        fn parts_split_as_written_are_the_parts_of_the_bytes(
            sizes in proptest::collection::vec(0usize..700, 1..5),
            chunks in proptest::collection::vec(1usize..5000, 1..6),
            nulls in 0u32..4,
            seed in 0u64..1_000_000,
        ) {
            use arrow_array::{BooleanArray, Decimal128Array, DictionaryArray};
            use arrow_array::types::UInt16Type;
            let fields = vec![
                Field::new("a", DataType::Int64, true),
                Field::new("s", DataType::Utf8, true),
                Field::new("d", dict_type(), true),
                Field::new("b", DataType::Boolean, true),
                Field::new("m", DataType::Decimal128(15, 2), true),
            ];
            let schema = Arc::new(ArrowSchema::new(fields));
            let counts = buffer_counts(&schema).unwrap();
            let opts = IpcWriteOptions::default()
                .with_dictionary_handling(DictionaryHandling::Delta);
            let tee = Tee { bytes: Vec::new(), split: None, chunks, i: 0 };
            let mut w = FileWriter::try_new_with_options(tee, &schema, opts).unwrap();
            let mut x = seed;
            let mut next = move || {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                x >> 33
            };
            // The dictionary's values grow batch by batch (deltas).
            let mut words: Vec<String> = Vec::new();
            for n in sizes {
                let null = |r: u64| nulls > 0 && r % (nulls as u64 + 2) == 0;
                let a: ArrayRef = Arc::new(Int64Array::from_iter(
                    (0..n).map(|_| { let r = next(); (!null(r)).then_some(r as i64) }),
                ));
                let s: ArrayRef = Arc::new(StringArray::from_iter((0..n).map(|_| {
                    let r = next();
                    (!null(r)).then(|| "x".repeat((r % 40) as usize))
                })));
                for _ in 0..(next() % 4) {
                    words.push(format!("w{}", words.len()));
                }
                let keys: Vec<Option<u16>> = (0..n)
                    .map(|_| {
                        let r = next();
                        (!null(r) && !words.is_empty()).then(|| (r % words.len() as u64) as u16)
                    })
                    .collect();
                let d: ArrayRef = Arc::new(
                    DictionaryArray::<UInt16Type>::try_new(
                        keys.into(),
                        Arc::new(StringArray::from_iter_values(&words)),
                    )
                    .unwrap(),
                );
                let b: ArrayRef = Arc::new(BooleanArray::from_iter(
                    (0..n).map(|_| { let r = next(); (!null(r)).then_some(r % 3 == 0) }),
                ));
                let m: ArrayRef = Arc::new(
                    Decimal128Array::from_iter(
                        (0..n).map(|_| { let r = next(); (!null(r)).then_some(r as i128 - 500) }),
                    )
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
                );
                let batch = RecordBatch::try_new(schema.clone(), vec![a, s, d, b, m]).unwrap();
                let start = w.get_ref().bytes.len();
                w.get_mut().split = Some(Splitter::new(&counts));
                w.write(&batch).unwrap();
                let split = w.get_mut().split.take().unwrap();
                let written = &w.get_ref().bytes[start..];
                let reference = split_messages(written, &counts).unwrap();
                let want = fold(
                    reference.into_iter().map(|(s, e, p)| {
                        let mut h = crc32fast::Hasher::new();
                        h.update(&written[s..e]);
                        (p, h)
                    }),
                    counts.len(),
                );
                let got = fold(split.finish().ok().unwrap(), counts.len());
                proptest::prop_assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn bytes_that_cannot_be_split_give_the_crc_of_them_all() {
        let all = |feeds: &[&[u8]]| {
            let mut s = Splitter::new(&[2, 3]);
            for f in feeds {
                s.feed(f);
            }
            s.finish()
        };
        let mut want = crc32fast::Hasher::new();
        want.update(b"\xff\xff\xff\xff\x10\0\0\0not a flatbuffer, this");
        let got = all(&[
            b"\xff\xff\xff",
            b"\xff\x10\0\0\0not a flat",
            b"buffer, this",
        ]);
        assert_eq!(got.err().map(|h| h.finalize()), Some(want.finalize()));
        // Nothing written: no record batch, so no parts.
        assert_eq!(
            all(&[]).err().map(|h| h.finalize()),
            Some(crc32fast::Hasher::new().finalize())
        );
        // A prefix cut off: the bytes count whole.
        let mut want = crc32fast::Hasher::new();
        want.update(b"\xff\xff");
        assert_eq!(
            all(&[b"\xff\xff"]).err().map(|h| h.finalize()),
            Some(want.finalize())
        );
    }

    /// Resident kilobytes of this process's mappings of `path`
    /// (`/proc/self/smaps`).
    fn resident_kb(path: &Path) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let name = path.to_string_lossy().to_string();
        let mut inside = false;
        let mut kb = 0;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
                inside = line.ends_with(&name);
            } else if inside && let Some(v) = line.strip_prefix("Rss:") {
                kb += v
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap();
            }
        }
        kb
    }

    /// A batch's columns let go of (`release`) leave the process's
    /// resident memory and read back the same values; a scan that keeps
    /// its batches lets go of nothing.
    #[test]
    fn released_columns_leave_resident_memory_and_read_back_the_same() {
        let dir = std::env::temp_dir().join(format!("sluice-seg-release-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big.arrow");
        // Two batches of 4 MB or so each.
        let batches: Vec<RecordBatch> = (0..2).map(|i| batch(i * 400_000, 400_000)).collect();
        let meta = write_segment(&path, &batches, super::super::Compression::None);
        for keep in [false, true] {
            let scan = SegmentScan::open(&path, &meta, &schema(), &[0, 1], keep).unwrap();
            let read = |i: usize| {
                let b = crate::batch::dict::decode_batch(&scan.batch(i).unwrap(), &[]).unwrap();
                // Every value read: every page of the batch touched.
                assert_eq!(&b, &batches[i]);
            };
            read(0);
            read(1);
            let before = resident_kb(&path);
            assert!(
                before > 4_000,
                "{before} kB resident after reading both batches"
            );
            scan.release(0, &[0, 1]);
            let after = resident_kb(&path);
            if keep {
                assert_eq!(after, before, "a kept scan let go of pages");
            } else {
                // Batch 0's pages gone (but a page at each buffer's edge),
                // batch 1's still there.
                assert!(after < before / 2 + 64, "{before} kB -> {after} kB");
                assert!(after > before / 4, "{before} kB -> {after} kB");
            }
            read(0);
            assert!(resident_kb(&path) >= before - 64, "read back into memory");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A column of a batch that one scan checked is not checked again by
    /// another scan of the same process while the file is unchanged (same
    /// inode, size and modification time); once the file is changed in
    /// place, it is, and the damage is found.
    #[test]
    fn a_column_checked_once_is_checked_again_only_when_its_file_changes() {
        use std::io::{Seek, SeekFrom};
        let dir = std::env::temp_dir().join(format!("sluice-seg-once-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big.arrow");
        let batches: Vec<RecordBatch> = (0..5).map(|i| batch(i * 20_000, 20_000)).collect();
        let meta = write_segment(&path, &batches, super::super::Compression::None);
        assert!(meta.bytes > READ_WHOLE_BYTES, "the file is mapped");
        let first = SegmentScan::open(&path, &meta, &schema(), &[0], false).unwrap();
        first.batch(1).unwrap();
        let written = std::fs::metadata(&path).unwrap().modified().unwrap();
        // Flip a byte of column a's and of column s's batch 1, in place,
        // and put the modification time back.
        let l = layout(&Buffer::from_vec(std::fs::read(&path).unwrap())).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        for c in [0, 1] {
            let at = l.batches[1].columns[c].last().unwrap().0 as u64 + 3;
            let mut byte = [0u8];
            f.seek(SeekFrom::Start(at)).unwrap();
            std::io::Read::read_exact(&mut f, &mut byte).unwrap();
            byte[0] ^= 0x10;
            f.seek(SeekFrom::Start(at)).unwrap();
            f.write_all(&byte).unwrap();
        }
        f.set_modified(written).unwrap();
        f.sync_all().unwrap();
        // Column a of batch 1 was checked by this process: not again.
        let second = SegmentScan::open(&path, &meta, &schema(), &[0], false).unwrap();
        second.check(1, [0]).unwrap();
        // Column s never was: its damage is found.
        let other = SegmentScan::open(&path, &meta, &schema(), &[1], false).unwrap();
        let e = other.check(1, [0]).unwrap_err().to_string();
        assert!(e.contains("checksum mismatch in column s"), "{e}");
        // The file's time changed: checked again, and found.
        f.set_modified(written + std::time::Duration::from_secs(1))
            .unwrap();
        let third = SegmentScan::open(&path, &meta, &schema(), &[0], false).unwrap();
        let e = third.check(1, [0]).unwrap_err().to_string();
        assert!(e.contains("checksum mismatch in column a"), "{e}");
        drop(f);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A mapped segment's metadata read with pread is the `meta` part, and
    /// holds what the footer and the headers need.
    #[test]
    fn the_metadata_read_with_pread_is_the_meta_part() {
        let dir = std::env::temp_dir().join(format!("sluice-seg-pread-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big.arrow");
        let batches: Vec<RecordBatch> = (0..5).map(|i| batch(i * 20_000, 20_000)).collect();
        let meta = write_segment(&path, &batches, super::super::Compression::None);
        assert!(meta.bytes > READ_WHOLE_BYTES, "the file is mapped");
        let file = File::open(&path).unwrap();
        let image = MetaImage::read(&file, meta.bytes as usize).unwrap();
        assert_eq!(image.crc(), meta.checksums.as_ref().unwrap().meta);
        let from_image = layout(&image).unwrap();
        let whole = layout(&Buffer::from_vec(std::fs::read(&path).unwrap())).unwrap();
        assert_eq!(from_image.ranges, whole.ranges);
        let scan = SegmentScan::open(&path, &meta, &schema(), &[0, 1], false).unwrap();
        for (i, b) in batches.iter().enumerate() {
            let got = crate::batch::dict::decode_batch(&scan.batch(i).unwrap(), &[]).unwrap();
            assert_eq!(&got, b);
        }
        // A flipped byte in a batch header: the metadata's CRC fails.
        let mut bytes = std::fs::read(&path).unwrap();
        let (s, e, _) = *whole
            .ranges
            .iter()
            .filter(|r| r.2 == Part::Meta)
            .nth(2)
            .unwrap();
        bytes[(s + e) / 2] ^= 0x20;
        std::fs::write(&path, &bytes).unwrap();
        let e = SegmentScan::open(&path, &meta, &schema(), &[0], false)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("corrupt"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A segment written before the footer listed its batches (a plain
    /// Arrow IPC file, with the manifest's checksums of parts) is read,
    /// its columns checked whole when opened.
    #[test]
    fn a_segment_without_the_list_of_batches_is_checked_by_whole_columns() {
        let dir = std::env::temp_dir().join(format!("sluice-seg-old-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("old.arrow");
        let batches: Vec<RecordBatch> = (0..3).map(|i| batch(i * 1000, 1000)).collect();
        {
            let f = File::create(&path).unwrap();
            let mut w = FileWriter::try_new(f, &schema()).unwrap();
            for b in &batches {
                w.write(b).unwrap();
            }
            w.finish().unwrap();
        }
        let mut bytes = std::fs::read(&path).unwrap();
        let l = layout(&Buffer::from_vec(bytes.clone())).unwrap();
        let (whole, parts) = checksums(&bytes, &l);
        let meta = SegmentMeta {
            file: "old.arrow".into(),
            rows: 3000,
            bytes: bytes.len() as u64,
            crc32: whole,
            stats: vec![ColumnStats::default(); 2],
            shard: 0,
            checksums: Some(parts),
        };
        let scan = SegmentScan::open(&path, &meta, &schema(), &[0], false).unwrap();
        assert!(scan.info(0).stats.is_none());
        for (i, b) in batches.iter().enumerate() {
            assert_eq!(
                scan.batch(i).unwrap().column(0).as_ref(),
                b.column(0).as_ref()
            );
        }
        // A flipped byte of column a's last batch: opening a scan of a
        // fails, naming the column; a scan of s does not see it.
        let range = *l.batches[2].columns[0].last().unwrap();
        bytes[range.0 + 5] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let e = SegmentScan::open(&path, &meta, &schema(), &[0], false)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("checksum mismatch in column a"), "{e}");
        assert!(SegmentScan::open(&path, &meta, &schema(), &[1], false).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
