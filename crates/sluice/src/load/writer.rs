//! The writer stage: parsed blocks back in input order, to the sink.
//!
//! Useful for: what happens to a parsed block before its rows reach the
//! sink: reordering by block number, line numbers of each file, a failed
//! block turned into an error naming file, line, byte and column, rejected
//! records counted and written to the rejects file, the provenance of
//! rows, progress.
//! Not useful for: storing rows (the sink, e.g. `table`), or parsing
//! (`workers`).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, SyncSender};

use crate::error::{Error, Result};
use crate::parse::Reject;

use super::pipeline::Shared;
use super::reader::Part;
use super::rejects::RejectsFile;
use super::sink::{Provenance, Rows, Sink};
use super::widen::Contradiction;
use super::workers::{Done, Failed};

/// The writer: the one thread that hands rows to the sink, in input order.
pub(super) struct Writer<'s, 'a> {
    shared: &'s Shared<'s>,
    pub(super) sink: &'s mut dyn Sink<'a>,
    /// Records rejected so far, and where they are written.
    pub(super) rejected: u64,
    pub(super) rejects: Option<RejectsFile>,
    /// Per input file: rows parsed, records rejected.
    pub(super) file_rows: Vec<(u64, u64)>,
    /// Rows the sink kept.
    pub(super) rows: u64,
    /// Lines before the next block of `file`.
    line: u64,
    file: usize,
    /// The value behind a failure, when it is one its column's type does
    /// not take.
    pub(super) contradiction: Option<Contradiction>,
}

impl<'s, 'a> Writer<'s, 'a> {
    pub(super) fn new(
        shared: &'s Shared<'s>,
        sink: &'s mut dyn Sink<'a>,
        rejects: Option<RejectsFile>,
        rejected: u64,
    ) -> Self {
        Writer {
            shared,
            sink,
            rejected,
            rejects,
            file_rows: vec![(0, 0); shared.inputs.len()],
            rows: 0,
            line: 0,
            file: usize::MAX,
            contradiction: None,
        }
    }

    pub(super) fn run(&mut self, done: Receiver<Done>, tokens: SyncSender<()>) -> Result<()> {
        let mut pending = BTreeMap::new();
        let mut next = 0u64;
        for d in done {
            pending.insert(d.seq, d);
            while let Some(d) = pending.remove(&next) {
                self.handle(d)?;
                next += 1;
                let _ = tokens.send(());
            }
        }
        if !pending.is_empty() {
            return Err(Error::Internal(format!(
                "{} blocks never arrived in order",
                pending.len()
            )));
        }
        Ok(())
    }

    /// Moves the line count to the start of `part`.
    fn enter(&mut self, part: &Part) {
        if part.file != self.file {
            self.file = part.file;
            self.line = 0;
        }
        if let Some(l) = part.first_line {
            self.line = l;
        }
    }

    fn handle(&mut self, mut d: Done) -> Result<()> {
        if let Some((m, range)) = d.mapped.take() {
            crate::stages::time(crate::stages::Stage::Read, || m.release(range));
        }
        let Some(result) = d.result else {
            return Err(Error::Cancelled);
        };
        let (outs, infos) = match result {
            Ok(r) => r,
            Err(Failed::Other(e)) => return Err(e),
            Err(Failed::Part(k, e)) => {
                let part = d
                    .parts
                    .get(k)
                    .ok_or_else(|| Error::Internal("error in a part that does not exist".into()))?;
                self.enter(part);
                let column = e
                    .column
                    .map(|c| format!("{} ({})", c + 1, self.shared.schema.columns[c].name));
                if let (Some(c), Some(value)) = (e.column, e.value) {
                    self.contradiction = Some(Contradiction {
                        file: part.file,
                        column: c,
                        value,
                    });
                }
                return Err(Error::Parse {
                    path: self.shared.inputs[part.file].display_name(),
                    line: self.line + e.line_in_block + 1,
                    byte: part.offset + e.offset as u64,
                    column,
                    message: e.message,
                });
            }
        };
        let named = self.shared.provenance;
        let mut row = self.rows;
        // Where this batch's rows came from (for messages about keys).
        let mut here: Vec<Provenance> = Vec::new();
        // The part's first record among the block's records.
        let mut first_record = 0u32;
        for (part, (info, rejects, exact)) in d.parts.iter().zip(infos) {
            self.enter(part);
            let rejected: Vec<u32> = if named {
                rejects.iter().map(|r| r.row - first_record).collect()
            } else {
                Vec::new()
            };
            first_record += (info.rows + rejects.len() as u64) as u32;
            if let Some(f) = self.file_rows.get_mut(part.file) {
                f.0 += info.rows;
                f.1 += rejects.len() as u64;
            }
            for r in rejects {
                self.reject(part.file, part.offset, r)?;
            }
            if named && info.rows > 0 {
                here.push(Provenance {
                    row,
                    file: part.file,
                    line: self.line,
                    exact,
                    rejected,
                });
            }
            row += info.rows;
            self.line += info.newlines;
        }
        let written = crate::stages::time(crate::stages::Stage::Encode, || {
            self.sink.write(Rows {
                pieces: outs,
                first_row: self.rows,
                provenance: &here,
            })
        })?;
        self.rows += written;
        if let Some(p) = &self.shared.opts.progress {
            p.rows.fetch_add(written, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Counts a rejected record, writes it to the rejects file, and fails
    /// the load past `--max-errors`.
    fn reject(&mut self, file: usize, offset: u64, r: Reject) -> Result<()> {
        self.rejected += 1;
        let opts = self.shared.opts;
        let over_max = opts.max_errors.is_some_and(|max| self.rejected > max);
        if self.rejects.is_none() && !over_max {
            // Only counted: nothing to name (a million rejects format
            // nothing).
            return Ok(());
        }
        let path = self.shared.inputs[file].display_name();
        let line = self.line + r.error.line_in_block + 1;
        let byte = offset + r.error.offset as u64;
        let column = r
            .error
            .column
            .map(|c| format!("{} ({})", c + 1, self.shared.schema.columns[c].name));
        if let Some(w) = self.rejects.as_mut() {
            w.record(
                &path,
                line,
                byte,
                column.as_deref(),
                &r.error.message,
                &r.record,
            )?;
        }
        if let Some(max) = opts.max_errors
            && self.rejected > max
        {
            return Err(Error::Parse {
                path,
                line,
                byte,
                column,
                message: format!(
                    "more than --max-errors {max} records rejected; this one: {}",
                    r.error.message
                ),
            });
        }
        Ok(())
    }
}
