//! Loads committed in groups of files, the load journal, and loads run
//! again: what is skipped, what is refused, what an error after some
//! commits leaves. (Killed processes: the CLI's `resume` tests.)

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use sluice::Error;
use sluice::load::{CommitEvery, Header, LoadOptions, LoadSummary, OnError, Reload, load};
use sluice::source::Input;
use sluice::store::{Database, LoadJournal};

use crate::common::TempDir;

fn opts() -> LoadOptions {
    LoadOptions {
        schema: Some("id BIGINT, f INT".parse().unwrap()),
        header: Header::No,
        ..LoadOptions::default()
    }
}

fn every_files(n: u64) -> CommitEvery {
    CommitEvery {
        files: Some(n),
        ..CommitEvery::ONCE
    }
}

/// `n` files of `rows` rows: `id,f` with id unique and f the file number.
fn write_files(dir: &TempDir, n: usize, rows: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|f| {
            let text: String = (0..rows)
                .map(|i| format!("{},{f}\n", f * 1000 + i))
                .collect();
            dir.write(&format!("f{f:02}.csv"), text.as_bytes())
        })
        .collect()
}

fn run(dir: &TempDir, files: &[PathBuf], o: &LoadOptions) -> sluice::Result<LoadSummary> {
    let inputs: Vec<Input> = files.iter().cloned().map(Input::File).collect();
    let mut db = Database::open_writer(dir.path().join("db"))?;
    load(&mut db, "t", &inputs, o)
}

/// The journals of table t, in commit order.
fn journals(dir: &TempDir) -> Vec<LoadJournal> {
    let db = Database::open(dir.path().join("db")).unwrap();
    let t = db.table("t").unwrap();
    t.loads
        .iter()
        .map(|l| LoadJournal::read(db.dir(), l).unwrap())
        .collect()
}

fn journaled_names(dir: &TempDir) -> Vec<Vec<String>> {
    journals(dir)
        .iter()
        .map(|j| {
            j.files
                .iter()
                .map(|f| f.path.rsplit('/').next().unwrap().to_string())
                .collect()
        })
        .collect()
}

fn rows(dir: &TempDir) -> u64 {
    Database::open(dir.path().join("db"))
        .unwrap()
        .table("t")
        .map(|t| t.rows())
        .unwrap_or(0)
}

#[test]
fn groups_commit_whole_files_and_the_journal_names_each_with_its_rows_and_checksum() {
    let dir = TempDir::new("resume-groups");
    let files = write_files(&dir, 7, 30);
    let o = LoadOptions {
        commit_every: every_files(3),
        ..opts()
    };
    let s = run(&dir, &files, &o).unwrap();
    assert_eq!((s.rows, s.files, s.commits), (210, 7, 3));
    assert_eq!(
        journaled_names(&dir),
        [
            vec!["f00.csv", "f01.csv", "f02.csv"],
            vec!["f03.csv", "f04.csv", "f05.csv"],
            vec!["f06.csv"],
        ]
    );
    for (j, v) in journals(&dir).iter().zip(1..) {
        assert_eq!(j.version, v);
        for f in &j.files {
            let p = PathBuf::from(&f.path);
            assert!(p.is_absolute(), "{}", f.path);
            let bytes = std::fs::read(&p).unwrap();
            assert_eq!(f.size, bytes.len() as u64);
            assert_eq!(f.crc32, sluice::source::fingerprint(&p).unwrap());
            assert_eq!((f.rows, f.rejected), (30, 0));
        }
    }
    // By size: a group closes after the file that reaches the limit.
    let dir = TempDir::new("resume-bytes");
    // Files 1-4 have the same size.
    let files = write_files(&dir, 5, 100)[1..].to_vec();
    let size = std::fs::metadata(&files[0]).unwrap().len();
    let o = LoadOptions {
        commit_every: CommitEvery {
            bytes: Some(size + 1),
            ..CommitEvery::ONCE
        },
        ..opts()
    };
    assert_eq!(run(&dir, &files, &o).unwrap().commits, 2);
    // The default: one commit below 1 GiB.
    let dir = TempDir::new("resume-default");
    let files = write_files(&dir, 5, 10);
    assert_eq!(run(&dir, &files, &opts()).unwrap().commits, 1);
}

#[test]
fn a_load_run_again_skips_committed_files_and_loads_the_rest() {
    let dir = TempDir::new("resume-rerun");
    let files = write_files(&dir, 6, 20);
    let s = run(&dir, &files[..4], &opts()).unwrap();
    assert_eq!(s.rows, 80);
    let s = run(&dir, &files, &opts()).unwrap();
    assert_eq!((s.already_loaded, s.files, s.rows), (4, 2, 40));
    assert_eq!(rows(&dir), 120);
    // Nothing left: no commit.
    let s = run(&dir, &files, &opts()).unwrap();
    assert_eq!((s.already_loaded, s.files, s.commits), (6, 0, 0));
    assert_eq!(journals(&dir).len(), 2);
    // --reload reads them all again.
    let o = LoadOptions {
        reload: Reload::All,
        ..opts()
    };
    assert_eq!(run(&dir, &files, &o).unwrap().rows, 120);
    assert_eq!(rows(&dir), 240);
}

#[test]
fn a_file_named_twice_in_one_load_is_read_once() {
    let dir = TempDir::new("resume-twice");
    let files = write_files(&dir, 2, 10);
    // By another spelling of the same path, too.
    let again = dir.path().join(".").join("f00.csv");
    let s = run(&dir, &[files[0].clone(), files[1].clone(), again], &opts()).unwrap();
    assert_eq!((s.files, s.rows, s.listed_twice), (2, 20, 1));
    assert_eq!(journaled_names(&dir), [vec!["f00.csv", "f01.csv"]]);
}

#[test]
fn a_changed_file_is_refused_a_touched_one_skipped_and_reload_changed_reads_it() {
    let dir = TempDir::new("resume-changed");
    let files = write_files(&dir, 3, 10);
    run(&dir, &files, &opts()).unwrap();
    // Rewritten with the same bytes: a new time, the same checksum.
    let same = std::fs::read(&files[0]).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&files[0], &same).unwrap();
    assert_eq!(run(&dir, &files, &opts()).unwrap().already_loaded, 3);
    // Same size, other bytes.
    let mut other = same.clone();
    other[0] = b'9';
    std::fs::write(&files[0], &other).unwrap();
    let e = run(&dir, &files, &opts()).unwrap_err();
    match &e {
        Error::Changed {
            path,
            version,
            what,
        } => {
            assert!(path.ends_with("f00.csv"), "{path}");
            assert_eq!(
                (*version, what.as_str()),
                (1, "same size, different contents")
            );
        }
        other => panic!("{other:?}"),
    }
    // Another size.
    std::fs::write(&files[1], b"5000,1\n").unwrap();
    let o = LoadOptions {
        reload: Reload::Changed,
        ..opts()
    };
    let s = run(&dir, &files, &o).unwrap();
    assert_eq!((s.already_loaded, s.files, s.rows), (1, 2, 11));
    assert_eq!(rows(&dir), 41);
}

#[test]
fn stop_ends_the_load_after_the_file_being_read() {
    let dir = TempDir::new("resume-stop");
    let files = write_files(&dir, 5, 10);
    let o = LoadOptions {
        stop: Some(Arc::new(AtomicBool::new(true))),
        commit_every: CommitEvery::ONCE,
        ..opts()
    };
    let s = run(&dir, &files, &o).unwrap();
    assert_eq!((s.files, s.rows, s.files_left, s.commits), (1, 10, 4, 1));
    assert_eq!(journaled_names(&dir), [vec!["f00.csv"]]);
    let s = run(&dir, &files, &opts()).unwrap();
    assert_eq!((s.already_loaded, s.files, s.rows), (1, 4, 40));
}

#[test]
fn an_error_after_some_commits_keeps_them_and_says_how_many_files_they_held() {
    let dir = TempDir::new("resume-partial");
    let mut files = write_files(&dir, 6, 10);
    files[4] = dir.write("f04.csv", b"4000,4\nnot a number,4\n");
    let o = LoadOptions {
        commit_every: every_files(2),
        ..opts()
    };
    let e = run(&dir, &files, &o).unwrap_err();
    let Error::PartlyLoaded {
        committed,
        total,
        cause,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!((*committed, *total), (4, 6));
    assert!(matches!(**cause, Error::Parse { line: 2, .. }), "{cause:?}");
    assert!(
        e.to_string().ends_with(
            "(4 of 6 files were committed before this; fix the cause and run the same command again to load the rest)"
        ),
        "{e}"
    );
    assert_eq!(rows(&dir), 40);
    // Fixed, the same load finishes it.
    dir.write("f04.csv", b"4000,4\n4001,4\n");
    let s = run(&dir, &files, &o).unwrap();
    assert_eq!((s.already_loaded, s.rows), (4, 12));
    assert_eq!(rows(&dir), 52);
    // An error in the first group: nothing committed, the error as it is.
    let dir = TempDir::new("resume-first");
    let mut files = write_files(&dir, 3, 10);
    files[0] = dir.write("f00.csv", b"x,1\n");
    assert!(matches!(
        run(&dir, &files, &o).unwrap_err(),
        Error::Parse { .. }
    ));
}

#[test]
fn unreadable_files_are_skipped_and_reported_with_on_error_skip_and_empty_ones_are_0_rows() {
    let dir = TempDir::new("resume-unreadable");
    let mut files = write_files(&dir, 3, 10);
    files.insert(1, dir.path().join("missing.csv"));
    files.push(dir.write("empty.csv", b""));
    let e = run(&dir, &files, &opts()).unwrap_err();
    assert!(e.to_string().contains("missing.csv"), "{e}");
    assert_eq!(rows(&dir), 0);
    let rejects = dir.path().join("rejects.csv");
    let o = LoadOptions {
        on_error: OnError::Skip,
        rejects: Some(rejects.clone()),
        ..opts()
    };
    let s = run(&dir, &files, &o).unwrap();
    assert_eq!((s.rows, s.files), (30, 5));
    let names: Vec<&str> = s
        .unreadable
        .iter()
        .map(|(f, _)| f.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(names, ["missing.csv"]);
    // An empty file is no error: 0 rows, named in the summary.
    let empty: Vec<&str> = s
        .empty_files
        .iter()
        .map(|f| f.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(empty, ["empty.csv"]);
    let text = std::fs::read_to_string(&rejects).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .contains(",0,0,,unreadable file: "),
        "{text}"
    );
    // Only the files read are journaled: a rerun tries the others again.
    assert_eq!(
        journaled_names(&dir),
        [vec!["f00.csv", "f01.csv", "f02.csv", "empty.csv"]]
    );
    dir.write("missing.csv", b"7000,7\n");
    let s = run(&dir, &files, &o).unwrap();
    assert_eq!((s.already_loaded, s.rows, s.unreadable.len()), (4, 1, 0));
}

#[test]
fn a_damaged_journal_is_an_error_naming_it_and_check_reports_it() {
    let dir = TempDir::new("resume-damaged");
    let files = write_files(&dir, 2, 10);
    run(&dir, &files, &opts()).unwrap();
    let db = dir.path().join("db");
    let journal = db.join(&Database::open(&db).unwrap().table("t").unwrap().loads[0].file);
    let mut bytes = std::fs::read(&journal).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x20;
    std::fs::write(&journal, &bytes).unwrap();
    match run(&dir, &files, &opts()).unwrap_err() {
        Error::Corrupt { file, message } => {
            assert_eq!(file, journal);
            assert_eq!(message, "checksum mismatch");
        }
        other => panic!("{other:?}"),
    }
    let report = Database::open(&db).unwrap().check("t").unwrap();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert!(
        report.problems[0].contains(".load: corrupt: checksum mismatch"),
        "{report:?}"
    );
    // Reading everything again does not need the journal.
    let o = LoadOptions {
        reload: Reload::All,
        ..opts()
    };
    assert_eq!(run(&dir, &files, &o).unwrap().rows, 20);
}

#[test]
fn check_finds_a_damaged_key_run_and_a_wrong_key_count() {
    let dir = TempDir::new("resume-check");
    let files = write_files(&dir, 2, 500);
    let o = LoadOptions {
        schema: Some("id BIGINT PRIMARY KEY, f INT".parse().unwrap()),
        ..opts()
    };
    run(&dir, &files, &o).unwrap();
    let db = dir.path().join("db");
    let report = Database::open(&db).unwrap().check("t").unwrap();
    assert!(report.problems.is_empty(), "{report:?}");
    assert_eq!((report.segments, report.runs, report.journals), (1, 1, 1));
    let run_file = db.join(&Database::open(&db).unwrap().table("t").unwrap().runs[0].file);
    let good = std::fs::read(&run_file).unwrap();
    let mut bad = good.clone();
    bad[10] ^= 1;
    std::fs::write(&run_file, &bad).unwrap();
    let report = Database::open(&db).unwrap().check("t").unwrap();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert!(
        report.problems[0].contains(".keys: corrupt: checksum mismatch in block 0"),
        "{report:?}"
    );
    std::fs::write(&run_file, &good).unwrap();
    assert!(
        Database::open(&db)
            .unwrap()
            .check("t")
            .unwrap()
            .problems
            .is_empty()
    );
}
