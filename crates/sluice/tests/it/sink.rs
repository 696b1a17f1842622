//! The load pipeline into a sink of the test's own: rows kept in memory.
//! Proves the boundary between the pipeline and the table store is real:
//! the same reading, parsing, ordering, groups, errors and aborts reach
//! any `Sink`.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use arrow_array::RecordBatch;
use sluice::Error;
use sluice::load::sink::{Committed, GroupFiles, Layout, Rows, Sink, describe_row};
use sluice::load::{CommitEvery, Header, LoadOptions, OnError, load_into};
use sluice::source::Input;

use super::common::{TempDir, opts, rows_of};

/// Collects each group's rows; a commit makes them visible, an abort
/// drops them. Records every call, to check the order of the contract.
#[derive(Default)]
struct MemorySink<'a> {
    inputs: &'a [Input],
    /// Rows of the group being written.
    pending: Vec<RecordBatch>,
    /// Rows committed, group by group.
    committed: Vec<Vec<RecordBatch>>,
    calls: Vec<String>,
    /// Per group committed: its files (name, rows).
    files: Vec<Vec<(String, u64)>>,
    /// Name rows by provenance, and fail the write of the row with this
    /// value in the first column (a destination refusing a row).
    refuse: Option<String>,
    provenance: Vec<sluice::load::sink::Provenance>,
}

impl<'a> Sink<'a> for MemorySink<'a> {
    fn begin(&mut self, opts: &LoadOptions, inputs: &'a [Input]) -> sluice::Result<Layout> {
        self.calls.push("begin".into());
        self.inputs = inputs;
        self.provenance.clear();
        let schema = opts.schema.clone().expect("the tests give a schema");
        let mut layout = Layout::plain(schema);
        layout.provenance = self.refuse.is_some();
        Ok(layout)
    }

    fn write(&mut self, rows: Rows<'_>) -> sluice::Result<u64> {
        self.calls.push("write".into());
        self.provenance.extend(rows.provenance.iter().cloned());
        let mut n = 0;
        for p in rows.pieces {
            let batch = sluice::batch::dict::decode_batch(&p.batch, &[])?;
            if let Some(bad) = &self.refuse {
                for (i, r) in rows_of(std::slice::from_ref(&batch)).iter().enumerate() {
                    if r[0].as_deref() == Some(bad.as_str()) {
                        let row = rows.first_row + n + i as u64;
                        return Err(Error::Input {
                            path: describe_row(&self.provenance, self.inputs, row),
                            message: format!("the destination refuses {bad}"),
                        });
                    }
                }
            }
            n += batch.num_rows() as u64;
            self.pending.push(batch);
        }
        Ok(n)
    }

    fn finish(&mut self) -> sluice::Result<()> {
        self.calls.push("finish".into());
        Ok(())
    }

    fn commit(&mut self, group: &GroupFiles<'_>) -> sluice::Result<Committed> {
        self.calls.push("commit".into());
        self.committed.push(std::mem::take(&mut self.pending));
        self.files.push(
            group
                .files
                .iter()
                .zip(self.inputs)
                .map(|(f, i)| (i.display_name(), f.rows))
                .collect(),
        );
        Ok(Committed::default())
    }

    fn abort(&mut self) {
        self.calls.push("abort".into());
        self.pending.clear();
    }
}

impl MemorySink<'_> {
    fn rows(&self) -> Vec<Vec<Option<String>>> {
        rows_of(&self.committed.concat())
    }
}

fn csv_files(dir: &TempDir, files: usize, rows: usize) -> (Vec<Input>, Vec<Vec<Option<String>>>) {
    let mut inputs = Vec::new();
    let mut want = Vec::new();
    for f in 0..files {
        let mut text = String::from("id,name\n");
        for r in 0..rows {
            let id = f * rows + r;
            text.push_str(&format!("{id},n{}\n", id % 7));
            want.push(vec![Some(id.to_string()), Some(format!("n{}", id % 7))]);
        }
        inputs.push(Input::File(
            dir.write(&format!("f{f}.csv"), text.as_bytes()),
        ));
    }
    (inputs, want)
}

fn small_blocks(schema: &str) -> LoadOptions {
    LoadOptions {
        header: Header::Yes,
        block_size: Some(256),
        threads: Some(2),
        ..opts(schema)
    }
}

/// The error of a load of `inputs` into `sink` with [`small_blocks`].
fn load_error<'a>(sink: &mut MemorySink<'a>, inputs: &'a [Input]) -> String {
    load_into(sink, "mem", inputs, &small_blocks("id BIGINT, name TEXT"))
        .unwrap_err()
        .to_string()
}

/// [`small_blocks`] committing after every file.
fn a_commit_a_file() -> LoadOptions {
    LoadOptions {
        commit_every: CommitEvery {
            files: Some(1),
            ..CommitEvery::ONCE
        },
        ..small_blocks("id BIGINT, name TEXT")
    }
}

#[test]
fn a_sink_of_its_own_gets_every_row_in_input_order_in_one_commit() {
    let dir = TempDir::new("sink-order");
    let (inputs, want) = csv_files(&dir, 3, 500);
    let mut sink = MemorySink::default();
    let o = small_blocks("id BIGINT, name TEXT");
    let s = load_into(&mut sink, "mem", &inputs, &o).unwrap();
    assert_eq!(s.rows, 1500);
    assert_eq!(s.files, 3);
    assert_eq!(s.commits, 1);
    assert_eq!(sink.rows(), want);
    assert_eq!(sink.calls.first().map(String::as_str), Some("begin"));
    assert_eq!(
        sink.calls[sink.calls.len() - 2..],
        ["finish".to_string(), "commit".to_string()]
    );
    assert!(sink.calls.iter().filter(|c| *c == "write").count() > 3);
    // The commit is told each file and its rows.
    let names: Vec<(String, u64)> = inputs.iter().map(|i| (i.display_name(), 500)).collect();
    assert_eq!(sink.files, vec![names]);
}

#[test]
fn commit_groups_reach_a_sink_as_one_commit_each() {
    let dir = TempDir::new("sink-groups");
    let (inputs, want) = csv_files(&dir, 3, 100);
    let mut sink = MemorySink::default();
    let o = a_commit_a_file();
    let s = load_into(&mut sink, "mem", &inputs, &o).unwrap();
    assert_eq!(s.commits, 3);
    assert_eq!(sink.committed.len(), 3);
    assert_eq!(sink.rows(), want);
    assert_eq!(
        sink.calls.iter().filter(|c| *c == "begin").count(),
        3,
        "{:?}",
        sink.calls
    );
}

#[test]
fn a_malformed_record_aborts_the_group_and_names_file_and_line() {
    let dir = TempDir::new("sink-abort");
    let (mut inputs, _) = csv_files(&dir, 2, 200);
    inputs.push(Input::File(dir.write("bad.csv", b"id,name\n1,a\nx,b\n")));
    let mut sink = MemorySink::default();
    let err = load_error(&mut sink, &inputs);
    let bad = dir.path().join("bad.csv");
    assert!(
        err.starts_with(&format!("{}:3:", bad.display())),
        "the error names the file and line: {err}"
    );
    assert!(sink.committed.is_empty(), "nothing committed");
    assert!(
        sink.pending.is_empty(),
        "the abort dropped the group's rows"
    );
    assert_eq!(sink.calls.last().map(String::as_str), Some("abort"));
    assert!(!sink.calls.iter().any(|c| c == "commit" || c == "finish"));
}

#[test]
fn after_a_committed_group_an_error_keeps_it_and_says_so() {
    let dir = TempDir::new("sink-partly");
    let (mut inputs, want) = csv_files(&dir, 1, 50);
    inputs.push(Input::File(dir.write("bad.csv", b"id,name\nx,b\n")));
    let mut sink = MemorySink::default();
    let o = a_commit_a_file();
    let err = load_into(&mut sink, "mem", &inputs, &o).unwrap_err();
    assert!(
        matches!(
            err,
            Error::PartlyLoaded {
                committed: 1,
                total: 2,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(sink.rows(), want);
}

#[test]
fn rejected_records_never_reach_the_sink() {
    let dir = TempDir::new("sink-rejects");
    let f = dir.write("r.csv", b"id,name\n1,a\nx,b\n3,c\n");
    let inputs = [Input::File(f)];
    let mut sink = MemorySink::default();
    let o = LoadOptions {
        on_error: OnError::Skip,
        ..small_blocks("id BIGINT, name TEXT")
    };
    let s = load_into(&mut sink, "mem", &inputs, &o).unwrap();
    assert_eq!((s.rows, s.rejected), (2, 1));
    let some = |v: &str| Some(v.to_string());
    assert_eq!(
        sink.rows(),
        vec![vec![some("1"), some("a")], vec![some("3"), some("c")]]
    );
}

#[test]
fn a_sink_error_names_the_row_by_its_provenance_and_aborts() {
    let dir = TempDir::new("sink-refuse");
    let (inputs, _) = csv_files(&dir, 2, 300);
    let mut sink = MemorySink {
        refuse: Some("450".into()),
        ..MemorySink::default()
    };
    let err = load_error(&mut sink, &inputs);
    // Row 450 is the 151st row of f1.csv: line 152 (after the header).
    let f1 = dir.path().join("f1.csv");
    assert_eq!(
        err,
        format!("{}:152: the destination refuses 450", f1.display())
    );
    assert!(sink.committed.is_empty());
    assert_eq!(sink.calls.last().map(String::as_str), Some("abort"));
}

#[test]
fn a_cancelled_load_commits_nothing_to_a_sink() {
    let dir = TempDir::new("sink-cancel");
    let (inputs, _) = csv_files(&dir, 2, 100);
    let mut sink = MemorySink::default();
    let o = LoadOptions {
        cancel: Some(Arc::new(AtomicBool::new(true))),
        ..small_blocks("id BIGINT, name TEXT")
    };
    let err = load_into(&mut sink, "mem", &inputs, &o).unwrap_err();
    assert!(matches!(err, Error::Cancelled), "{err}");
    assert!(sink.committed.is_empty());
    assert_eq!(sink.calls.last().map(String::as_str), Some("abort"));
}
