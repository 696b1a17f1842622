//! The rejects file: where `--on-error skip` writes the records it drops.
//!
//! Useful for: the file's format (CSV: file, line, byte, column, reason,
//! record; one row a rejected record, line 0 for a file that could not be
//! read), appending to it on a resumed load.
//! Not useful for: deciding what is rejected (`parse`), or counting and
//! `--max-errors` (`writer`).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The rejects file: CSV with a header, one line per rejected record.
pub(super) struct RejectsFile {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
}

impl RejectsFile {
    /// Creates the file, or with `append` (a resumed load) adds to it
    /// when it exists.
    pub(super) fn create(path: &Path, append: bool) -> Result<Self> {
        let exists = append && path.exists();
        let f = if exists {
            std::fs::OpenOptions::new().append(true).open(path)
        } else {
            std::fs::File::create(path)
        }
        .map_err(|e| Error::io(path, e))?;
        let mut r = RejectsFile {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(f),
        };
        if !exists {
            r.write_all(b"file,line,byte,column,reason,record\n")
                .map_err(|e| Error::io(path, e))?;
        }
        Ok(r)
    }

    pub(super) fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }

    /// A row for a whole file that could not be read (line 0).
    pub(super) fn unreadable(&mut self, file: &str, why: &str) -> Result<()> {
        let mut row = Vec::new();
        csv_field(&mut row, file.as_bytes());
        row.extend_from_slice(b",0,0,,");
        csv_field(&mut row, format!("unreadable file: {why}").as_bytes());
        row.extend_from_slice(b",\n");
        self.write_all(&row).map_err(|e| Error::io(&self.path, e))
    }

    /// A row for a rejected record.
    pub(super) fn record(
        &mut self,
        path: &str,
        line: u64,
        byte: u64,
        column: Option<&str>,
        reason: &str,
        record: &[u8],
    ) -> Result<()> {
        let mut row = Vec::with_capacity(record.len() + 64);
        csv_field(&mut row, path.as_bytes());
        row.push(b',');
        row.extend_from_slice(line.to_string().as_bytes());
        row.push(b',');
        row.extend_from_slice(byte.to_string().as_bytes());
        row.push(b',');
        csv_field(&mut row, column.unwrap_or("").as_bytes());
        row.push(b',');
        csv_field(&mut row, reason.as_bytes());
        row.push(b',');
        csv_field(&mut row, record);
        row.push(b'\n');
        self.write_all(&row).map_err(|e| Error::io(&self.path, e))
    }

    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.out.write_all(b)
    }

    pub(super) fn finish(mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }
}

/// Appends `v` as a CSV field, quoted when it needs to be.
fn csv_field(out: &mut Vec<u8>, v: &[u8]) {
    if v.iter().any(|&b| matches!(b, b',' | b'"' | b'\n' | b'\r')) || v.first() == Some(&b' ') {
        out.push(b'"');
        for &b in v {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(v);
    }
}
