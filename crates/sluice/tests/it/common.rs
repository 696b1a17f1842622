use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::RecordBatch;
use sluice::batch::format_value;
use sluice::load::{LoadOptions, LoadSummary, load};
use sluice::source::Input;
use sluice::store::Database;

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "sluice-it-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn write(&self, name: &str, data: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, data).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn opts(schema: &str) -> LoadOptions {
    LoadOptions {
        schema: Some(schema.parse().unwrap()),
        ..LoadOptions::default()
    }
}

/// Loads `data` as one file into `table` of the database in `dir`. The
/// file has the same name at every call: it is loaded whatever the load
/// journal says (`Reload::All`).
pub fn load_bytes(
    dir: &TempDir,
    table: &str,
    data: &[u8],
    o: &LoadOptions,
) -> sluice::Result<LoadSummary> {
    let f = dir.write(&format!("{table}-input.csv"), data);
    let mut db = Database::open_writer(dir.path().join("db"))?;
    let o = LoadOptions {
        reload: sluice::load::Reload::All,
        ..o.clone()
    };
    load(&mut db, table, &[Input::File(f)], &o)
}

pub fn rows_of(batches: &[RecordBatch]) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    for b in batches {
        for r in 0..b.num_rows() {
            out.push(
                b.columns()
                    .iter()
                    .map(|c| format_value(c.as_ref(), r))
                    .collect(),
            );
        }
    }
    out
}

/// The rows `run` answers `sql` with under each of `runs` (NULL as
/// "NULL"), checked to be the same on every one.
pub fn same_on_every_run(
    sql: &str,
    runs: &[sluice::query::QueryOptions],
    mut run: impl FnMut(&sluice::query::QueryOptions) -> sluice::Result<sluice::query::QueryResult>,
) -> Vec<Vec<String>> {
    let mut first: Option<Vec<Vec<String>>> = None;
    for o in runs {
        let r = run(o).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let got: Vec<Vec<String>> = rows_of(&r.batches)
            .into_iter()
            .map(|r| r.into_iter().map(|c| c.unwrap_or("NULL".into())).collect())
            .collect();
        match &first {
            None => first = Some(got),
            Some(f) => assert_eq!(&got, f, "{sql}: runs differ"),
        }
    }
    first.expect("at least one run")
}

/// A query's runs on one worker, and on three with morsels of one row
/// (every row handed out alone): answers must not differ.
pub fn one_and_many_workers() -> [sluice::query::QueryOptions; 2] {
    [
        sluice::query::QueryOptions {
            threads: Some(1),
            ..Default::default()
        },
        sluice::query::QueryOptions {
            threads: Some(3),
            morsel_rows: Some(1),
            ..Default::default()
        },
    ]
}

/// Every row of a table, formatted.
pub fn table_rows(db_dir: &Path, table: &str) -> Vec<Vec<Option<String>>> {
    let db = Database::open(db_dir).unwrap();
    let batches: Vec<RecordBatch> = db.scan(table).unwrap().collect::<Result<_, _>>().unwrap();
    rows_of(&batches)
}

/// `o` with the table cut fine: blocks of a few records, segments of a
/// few rows written as they come, and every TEXT column of every batch
/// dictionary-encoded, so that a column of a few hundred rows has dozens
/// of segments and dictionaries, as a large table's has.
pub fn tiny_layout(o: LoadOptions) -> LoadOptions {
    LoadOptions {
        block_size: Some(64),
        segment_rows: Some(7),
        dictionary_always: true,
        ..o
    }
}

/// The EXPLAIN ANALYZE report of `sql` (default options).
pub fn explain_analyze(db: &sluice::store::Database, sql: &str) -> String {
    sluice::query::query_with(
        db,
        &format!("EXPLAIN ANALYZE {sql}"),
        &sluice::query::QueryOptions::default(),
    )
    .unwrap()
    .explain
    .unwrap()
}

/// A query's rows (in its order) under a memory limit, the pool's peak
/// and the bytes it spilled (see [`spill_run`]).
pub struct SpillRun {
    pub rows: Vec<Vec<Option<String>>>,
    pub peak: u64,
    pub spilled: u64,
}

/// `sql` with `threads` workers under a pool of `limit` bytes, spilling
/// under `root`, in morsels of 2,048 rows: the pool never passes its
/// limit, and nothing is left reserved once the answer is dropped.
pub fn spill_run(
    db: &Database,
    sql: &str,
    limit: u64,
    threads: usize,
    root: &Path,
) -> sluice::Result<SpillRun> {
    use sluice::query::memory::Memory;
    use sluice::query::spill::Spill;
    let memory = Memory::new(limit);
    let spill = Spill::new(root);
    let r = sluice::query::query_with(
        db,
        sql,
        &sluice::query::QueryOptions {
            threads: Some(threads),
            morsel_rows: Some(2048),
            memory: Some(memory.clone()),
            spill: Some(spill.clone()),
            ..Default::default()
        },
    );
    assert!(memory.peak() <= limit, "{sql}: the pool passed its limit");
    let r = r?;
    let rows = rows_of(&r.batches);
    drop(r);
    assert_eq!(memory.used(), 0, "{sql}: reservations left");
    Ok(SpillRun {
        rows,
        peak: memory.peak(),
        spilled: spill.bytes_written(),
    })
}

/// No query's spill directory is left under `root`.
pub fn no_spill_files(root: &Path) {
    let left: Vec<String> = std::fs::read_dir(root)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("sluice-spill-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "spill files left: {left:?}");
}

/// Rows of the spill tests' table `t`.
pub const SPILL_ROWS: u64 = 40_000;

/// The spill tests' tables, their values drawn from `seed`: `t(k, j, s,
/// v, one)`: `k` unique, in load order; `j` an INT key, 0 in half the
/// rows, NULL every 13th; `s` one of 3,000 texts, NULL every 17th; `v`
/// small; `one` 1 in every row. `u(j, w)`: `j` unique 0..5,000, but for
/// the multiples of 7.
pub fn spill_tables(tag: &str, seed: u64) -> TempDir {
    let dir = TempDir::new(tag);
    let mut csv = String::from("k,j,s,v,one\n");
    let mut x: u64 = seed;
    for i in 0..SPILL_ROWS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = match (i % 13, x % 2) {
            (0, _) => String::new(),
            (_, 0) => "0".into(),
            _ => ((x >> 8) % 5_000).to_string(),
        };
        let s = if i % 17 == 0 {
            String::new()
        } else {
            format!("text-{}", (x >> 24) % 3_000)
        };
        csv.push_str(&format!("{i},{j},{s},{},1\n", (x >> 40) % 100));
    }
    load_bytes(
        &dir,
        "t",
        csv.as_bytes(),
        &opts("k BIGINT, j INT, s TEXT, v INT, one INT"),
    )
    .unwrap();
    let mut csv = String::from("j,w\n");
    for j in (0..5_000).filter(|j| j % 7 != 0) {
        csv.push_str(&format!("{j},{}\n", j % 10));
    }
    load_bytes(&dir, "u", csv.as_bytes(), &opts("j INT, w INT")).unwrap();
    dir
}

/// `sql` in memory, then at a tenth of its peak and at `small` (with 1
/// and 3 workers): the same rows (compared sorted when `sorted`, else in
/// their order), bytes spilled, no spill file left.
pub fn same_when_spilled(db: &Database, root: &Path, sql: &str, small: u64, sorted: bool) {
    let run = |limit: u64, threads: usize| {
        let mut r = spill_run(db, sql, limit, threads, root)
            .unwrap_or_else(|e| panic!("{sql} (limit {limit}, {threads} threads): {e}"));
        if sorted {
            r.rows.sort();
        }
        r
    };
    for threads in [1, 3] {
        let base = run(1 << 40, threads);
        assert_eq!(base.spilled, 0, "{sql}: spilled in memory");
        assert!(!base.rows.is_empty(), "{sql}");
        for limit in [base.peak / 10, small] {
            let got = run(limit, threads);
            assert!(
                got.spilled > 0,
                "{sql}: nothing spilled at {limit} of {} (threads {threads})",
                base.peak
            );
            assert_eq!(
                got.rows, base.rows,
                "{sql}: limit {limit}, threads {threads}"
            );
            no_spill_files(root);
        }
    }
}
