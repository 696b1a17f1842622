//! Segment files: Arrow IPC files, one or more record batches each.
//!
//! The writer and the reader of the format live side by side here. The
//! whole-file CRC-32 is kept in the manifest, so a flipped or truncated
//! byte is detected before any batch is decoded.

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

use super::manifest::SegmentMeta;
use crate::batch::ColumnStats;
use crate::batch::dict::{SegmentDict, decode, dict_type};
use crate::error::{Error, Result};

/// Counts and checksums the bytes on their way to the file.
struct CrcWriter<W> {
    inner: W,
    hasher: crc32fast::Hasher,
    bytes: u64,
}

impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        crate::fault::charge(buf.len())?;
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
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
            hasher: crc32fast::Hasher::new(),
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
        let crc32 = sink.hasher.finalize();
        let bytes = sink.bytes;
        let file = sink
            .inner
            .into_inner()
            .map_err(|e| Error::io(&self.path, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&self.path, e))?;
        Ok(SegmentMeta {
            file: self.rel,
            rows: self.rows,
            bytes,
            crc32,
            stats: self.stats,
            shard: 0,
        })
    }
}

fn arrow_io_error(path: &Path, e: arrow_schema::ArrowError) -> Error {
    match e {
        arrow_schema::ArrowError::IoError(_, io) => Error::io(path, io),
        other => Error::Arrow(other),
    }
}

/// Reads every batch of a segment, after checking its size and checksum.
pub fn read_segment(
    path: &Path,
    meta: &SegmentMeta,
    schema: &SchemaRef,
) -> Result<Vec<RecordBatch>> {
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
    // SAFETY: segment files are immutable once committed (FORMAT.md): no
    // process writes or truncates a file that a manifest names.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    let crc = crc32fast::hash(&map);
    if crc != meta.crc32 {
        return Err(corrupt(format!(
            "checksum mismatch (crc32 {crc:08x}, the manifest says {:08x})",
            meta.crc32
        )));
    }
    let ptr = std::ptr::NonNull::new(map.as_ptr() as *mut u8)
        .ok_or_else(|| corrupt("null mapping".into()))?;
    let map_len = map.len();
    // SAFETY: the pointer and length come from the mapping, which the Arc
    // keeps alive for as long as any buffer refers to it.
    let buffer = unsafe { Buffer::from_custom_allocation(ptr, map_len, std::sync::Arc::new(map)) };
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
