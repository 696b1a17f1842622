//! Segment files: Arrow IPC files, one or more record batches each.
//!
//! The writer and the reader of the format live side by side here. The
//! whole-file CRC-32 is kept in the manifest, so a flipped or truncated
//! byte is detected before any batch is decoded.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::reader::{FileDecoder, read_footer_length};
use arrow_ipc::root_as_footer;
use arrow_ipc::writer::FileWriter;
use arrow_schema::SchemaRef;

use super::manifest::SegmentMeta;
use crate::batch::ColumnStats;
use crate::error::{Error, Result};

/// Counts and checksums the bytes on their way to the file.
struct CrcWriter<W> {
    inner: W,
    hasher: crc32fast::Hasher,
    bytes: u64,
}

impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
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
pub struct SegmentWriter {
    rel: String,
    path: PathBuf,
    writer: FileWriter<CrcWriter<BufWriter<File>>>,
    rows: u64,
    stats: Vec<ColumnStats>,
}

impl SegmentWriter {
    /// Creates the file at `path`; `rel` is its name relative to the database.
    pub fn create(path: PathBuf, rel: String, schema: &SchemaRef) -> Result<Self> {
        let f = File::create(&path).map_err(|e| Error::io(&path, e))?;
        let sink = CrcWriter {
            inner: BufWriter::with_capacity(1 << 20, f),
            hasher: crc32fast::Hasher::new(),
            bytes: 0,
        };
        let writer = FileWriter::try_new(sink, schema).map_err(|e| arrow_io_error(&path, e))?;
        Ok(SegmentWriter {
            rel,
            path,
            writer,
            rows: 0,
            stats: vec![ColumnStats::default(); schema.fields().len()],
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
        self.writer.get_ref().bytes
    }

    /// Appends a batch and merges its statistics.
    pub fn write(&mut self, batch: &RecordBatch, stats: &[ColumnStats]) -> Result<()> {
        self.writer
            .write(batch)
            .map_err(|e| arrow_io_error(&self.path, e))?;
        self.rows += batch.num_rows() as u64;
        for (s, b) in self.stats.iter_mut().zip(stats) {
            s.merge(b);
        }
        Ok(())
    }

    /// Writes the footer, flushes and fsyncs; returns the manifest entry.
    pub fn finish(mut self) -> Result<SegmentMeta> {
        self.writer
            .finish()
            .map_err(|e| arrow_io_error(&self.path, e))?;
        let sink = self
            .writer
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
    let decoder = FileDecoder::new(schema.clone(), footer.version());
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
