//! Segment files: Arrow IPC files, one or more record batches each.
//!
//! The writer and the reader of the format live side by side here. The
//! manifest keeps the whole file's CRC-32 and the CRC-32s of its parts
//! (the metadata, and each column's buffers: [`SegmentChecksums`]), so a
//! query checks the bytes it reads, and only those, before decoding them;
//! `sluice check` checks the whole file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_buffer::Buffer;
use arrow_ipc::reader::{FileDecoder, read_footer_length};
use arrow_ipc::root_as_footer;
use arrow_ipc::writer::{DictionaryHandling, FileWriter, IpcWriteOptions};
use arrow_schema::{Field, Schema as ArrowSchema, SchemaRef};

use super::manifest::{SegmentChecksums, SegmentMeta};
use crate::batch::ColumnStats;
use crate::batch::dict::{SegmentDict, decode, dict_type};
use crate::error::{Error, Result};

/// Counts the bytes on their way to the file (the checksums are taken
/// from the finished file, part by part: [`checksums`]).
struct CrcWriter<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        crate::fault::charge(buf.len())?;
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
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
    sink: Option<CrcWriter<BufWriter<File>>>,
    writer: Option<FileWriter<CrcWriter<BufWriter<File>>>>,
    /// Per column: its segment dictionary, for encoded columns.
    dicts: Vec<Option<SegmentDict>>,
    rows: u64,
    stats: Vec<ColumnStats>,
}

impl SegmentWriter {
    /// Creates the file at `path`; `rel` is its name relative to the
    /// database; `schema` is the table's (TEXT as `Utf8`).
    pub fn create(
        path: PathBuf,
        rel: String,
        schema: &SchemaRef,
        compression: super::Compression,
    ) -> Result<Self> {
        let f = File::create(&path).map_err(|e| Error::io(&path, e))?;
        let sink = CrcWriter {
            inner: BufWriter::with_capacity(1 << 20, f),
            bytes: 0,
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
        writer
            .write(&physical)
            .map_err(|e| arrow_io_error(&self.path, e))?;
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
        writer.finish().map_err(|e| arrow_io_error(&self.path, e))?;
        let sink = writer
            .into_inner()
            .map_err(|e| arrow_io_error(&self.path, e))?;
        let bytes = sink.bytes;
        let file = sink
            .inner
            .into_inner()
            .map_err(|e| Error::io(&self.path, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&self.path, e))?;
        // One pass over the file just written (in the page cache): the
        // whole file's CRC and its parts'.
        drop(file);
        let file = File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        // SAFETY: the file is this writer's, complete, and not yet named by
        // any manifest: nothing else writes it. Populated: the pages are
        // mapped in one go (page faults one at a time cost 3 % of a load).
        let map = unsafe { memmap2::MmapOptions::new().populate().map(&file) }
            .map_err(|e| Error::io(&self.path, e))?;
        let (crc32, parts) = match layout(&map) {
            Ok(l) => {
                let (whole, parts) = checksums(&map, &l);
                (whole, Some(parts))
            }
            // A layout this code does not split (not expected): the
            // whole-file CRC alone, checked whole as before.
            Err(_) => (crc32fast::hash(&map), None),
        };
        Ok(SegmentMeta {
            file: self.rel,
            rows: self.rows,
            bytes,
            crc32,
            stats: self.stats,
            shard: 0,
            checksums: parts,
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

/// Splits an IPC file into its parts from its footer and the headers of
/// its record batches; an error names what does not fit (a corrupt or
/// unexpected file).
fn layout(buf: &[u8]) -> std::result::Result<Layout, String> {
    let n = buf.len();
    if n < 10 {
        return Err("too short for an Arrow IPC file".into());
    }
    let trailer: [u8; 10] = buf[n - 10..].try_into().map_err(|_| "trailer")?;
    let footer_len = read_footer_length(trailer).map_err(|e| e.to_string())?;
    if footer_len + 10 > n {
        return Err("footer length out of range".into());
    }
    let footer = root_as_footer(&buf[n - 10 - footer_len..n - 10]).map_err(|e| e.to_string())?;
    let schema = footer
        .schema()
        .ok_or("no schema in the footer")
        .and_then(|s| arrow_ipc::convert::try_fb_to_schema(s).map_err(|_| "bad schema"))?;
    let counts: Vec<usize> = schema
        .fields()
        .iter()
        .map(|f| buffers_of(f.data_type()))
        .collect::<Option<_>>()
        .ok_or("a column type without a flat buffer layout")?;
    let mut column_ranges: Vec<(usize, usize, Part)> = Vec::new();
    let mut bodies: Vec<(usize, usize)> = Vec::new();
    for block in footer.recordBatches().iter().flatten() {
        let off = usize::try_from(block.offset()).map_err(|_| "negative offset")?;
        let meta_len = usize::try_from(block.metaDataLength()).map_err(|_| "bad length")?;
        let body_len = usize::try_from(block.bodyLength()).map_err(|_| "bad length")?;
        let body = off.checked_add(meta_len).ok_or("offset overflow")?;
        let end = body.checked_add(body_len).ok_or("offset overflow")?;
        if end > n || meta_len < 8 {
            return Err("record batch outside the file".into());
        }
        let header = &buf[off..body];
        let (fb_at, fb_len) = if header[..4] == [0xff; 4] {
            (
                8,
                i32::from_le_bytes(header[4..8].try_into().map_err(|_| "len")?),
            )
        } else {
            (
                4,
                i32::from_le_bytes(header[..4].try_into().map_err(|_| "len")?),
            )
        };
        let fb_len = usize::try_from(fb_len).map_err(|_| "bad message length")?;
        let fb = header
            .get(fb_at..fb_at + fb_len)
            .ok_or("message outside its block")?;
        let message = arrow_ipc::root_as_message(fb).map_err(|e| e.to_string())?;
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
        let mut i = 0;
        for (c, &k) in counts.iter().enumerate() {
            for b in &buffers[i..i + k] {
                let start = usize::try_from(b.offset()).map_err(|_| "bad buffer")?;
                let len = usize::try_from(b.length()).map_err(|_| "bad buffer")?;
                let stop = start.checked_add(len).ok_or("bad buffer")?;
                if stop > body_len {
                    return Err("buffer outside its body".into());
                }
                if len > 0 {
                    column_ranges.push((body + start, body + stop, Part::Column(c)));
                }
            }
            i += k;
        }
        bodies.push((body, end));
    }
    column_ranges.sort_unstable_by_key(|r| r.0);
    bodies.sort_unstable();
    let mut ranges = Vec::with_capacity(column_ranges.len() * 2 + bodies.len() * 2 + 1);
    let mut at = 0;
    let mut cols = column_ranges.into_iter().peekable();
    for (body, end) in bodies {
        if body < at {
            return Err("record batches overlap".into());
        }
        if body > at {
            ranges.push((at, body, Part::Meta));
        }
        at = body;
        while let Some(&(s, e, p)) = cols.peek().filter(|r| r.0 < end) {
            if s < at {
                return Err("buffers overlap".into());
            }
            if s > at {
                ranges.push((at, s, Part::Pad));
            }
            ranges.push((s, e, p));
            at = e;
            cols.next();
        }
        if end > at {
            ranges.push((at, end, Part::Pad));
        }
        at = end;
    }
    if n > at {
        ranges.push((at, n, Part::Meta));
    }
    Ok(Layout {
        ranges,
        columns: counts.len(),
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
    let split = meta.checksums.as_ref().map(|_| layout(bytes));
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
    match (split, found) {
        (Some(Err(e)), _) => return Err(corrupt(e)),
        (Some(Ok(_)), Some(found)) if meta.checksums.as_ref() != Some(&found) => {
            return Err(corrupt(
                "checksums of its parts differ from the manifest's (the whole file's matches)"
                    .into(),
            ));
        }
        _ => {}
    }
    decode_segment(path, meta, schema, buffer, None)
}

/// Reads columns `cols` of every batch of a segment (in that order), after
/// checking its size and the checksums of the bytes read: the file's
/// metadata and those columns' buffers. A segment written before the
/// checksums of parts is checked whole.
pub fn read_segment_columns(
    path: &Path,
    meta: &SegmentMeta,
    schema: &SchemaRef,
    cols: &[usize],
) -> Result<Vec<RecordBatch>> {
    let Some(parts) = &meta.checksums else {
        return read_segment(path, meta, schema)?
            .iter()
            .map(|b| b.project(cols).map_err(Error::from))
            .collect();
    };
    let corrupt = |message: String| Error::Corrupt {
        file: path.to_path_buf(),
        message,
    };
    let buffer = map_segment(path, meta)?;
    let l = layout(buffer.as_slice()).map_err(corrupt)?;
    let meta_crc = part_crc(buffer.as_slice(), &l, Part::Meta);
    if meta_crc != parts.meta || l.columns != parts.columns.len() {
        return Err(corrupt(format!(
            "checksum mismatch in the file's metadata (crc32 {meta_crc:08x}, the manifest says {:08x})",
            parts.meta
        )));
    }
    let mut checked = vec![false; l.columns];
    for &c in cols {
        if c >= l.columns || std::mem::replace(&mut checked[c], true) {
            continue;
        }
        let crc = part_crc(buffer.as_slice(), &l, Part::Column(c));
        if crc != parts.columns[c] {
            let name = schema.fields().get(c).map_or("?", |f| f.name().as_str());
            return Err(corrupt(format!(
                "checksum mismatch in column {name} (crc32 {crc:08x}, the manifest says {:08x})",
                parts.columns[c]
            )));
        }
    }
    decode_segment(path, meta, schema, buffer, Some(cols.to_vec()))
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
        return Ok(buf.into());
    }
    // SAFETY: segment files are immutable once committed (FORMAT.md): no
    // process writes or truncates a file that a manifest names.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    let ptr = std::ptr::NonNull::new(map.as_ptr() as *mut u8)
        .ok_or_else(|| corrupt("null mapping".into()))?;
    let map_len = map.len();
    // SAFETY: the pointer and length come from the mapping, which the Arc
    // keeps alive for as long as any buffer refers to it.
    Ok(unsafe { Buffer::from_custom_allocation(ptr, map_len, std::sync::Arc::new(map)) })
}

/// Decodes the batches of a mapped segment (columns `projection`, all
/// when `None`), checking its footer, schema and row count.
fn decode_segment(
    path: &Path,
    meta: &SegmentMeta,
    schema: &SchemaRef,
    buffer: Buffer,
    projection: Option<Vec<usize>>,
) -> Result<Vec<RecordBatch>> {
    let corrupt = |message: String| Error::Corrupt {
        file: path.to_path_buf(),
        message,
    };
    let n = buffer.len();
    if n < 10 {
        return Err(corrupt("too short for an Arrow IPC file".into()));
    }
    let trailer: [u8; 10] = buffer[n - 10..].try_into().expect("10 bytes");
    let footer_len = read_footer_length(trailer).map_err(|e| corrupt(e.to_string()))?;
    if footer_len + 10 > n {
        return Err(corrupt("footer length out of range".into()));
    }
    let footer =
        root_as_footer(&buffer[n - 10 - footer_len..n - 10]).map_err(|e| corrupt(e.to_string()))?;
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
    if let Some(p) = projection {
        decoder = decoder.with_projection(p);
    }
    for block in footer.dictionaries().iter().flatten() {
        let len = block.bodyLength() as usize + block.metaDataLength() as usize;
        let off = block.offset() as usize;
        if off.checked_add(len).is_none_or(|end| end > n) {
            return Err(corrupt("dictionary outside the file".into()));
        }
        let data = buffer.slice_with_length(off, len);
        decoder
            .read_dictionary(block, &data)
            .map_err(|e| corrupt(e.to_string()))?;
    }
    let mut out = Vec::new();
    for block in footer.recordBatches().iter().flatten() {
        let len = block.bodyLength() as usize + block.metaDataLength() as usize;
        let off = block.offset() as usize;
        if off.checked_add(len).is_none_or(|end| end > n) {
            return Err(corrupt("record batch outside the file".into()));
        }
        let data = buffer.slice_with_length(off, len);
        match decoder
            .read_record_batch(block, &data)
            .map_err(|e| corrupt(e.to_string()))?
        {
            Some(b) => out.push(b),
            None => return Err(corrupt("empty record batch block".into())),
        }
    }
    let rows: u64 = out.iter().map(|b| b.num_rows() as u64).sum();
    if rows != meta.rows {
        return Err(corrupt(format!(
            "holds {rows} rows, the manifest says {}",
            meta.rows
        )));
    }
    Ok(out)
}
