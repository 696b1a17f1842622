//! TIME: a time of day as a key (looked up, unique, sharded), refused
//! where a file's text is not one (naming its line and column), and the
//! same answers over one segment and many (see also `times.slt`).

use sluice::load::{Header, LoadOptions};
use sluice::query::plan::plan_sql;
use sluice::query::run_plan;
use sluice::store::Database;

use crate::common::{
    TempDir, load_bytes, one_and_many_workers, opts, same_on_every_run, tiny_layout,
};

const CSV: &str = "t,name\n\
09:30:00,early\n\
12:00:00,noon\n\
23:59:59.5,late\n\
00:00:00.000001,first\n\
24:00:00,end\n\
9:45:30,quarter\n";

fn keyed(shards: Option<u32>, fine: bool) -> TempDir {
    let o = LoadOptions {
        shards,
        ..opts("t TIME PRIMARY KEY, name TEXT")
    };
    let o = if fine { tiny_layout(o) } else { o };
    let dir = TempDir::new("times");
    load_bytes(&dir, "k", CSV.as_bytes(), &o).unwrap();
    dir
}

fn query(dir: &TempDir, sql: &str) -> Vec<String> {
    let db = Database::open(dir.path().join("db")).unwrap();
    let plan = plan_sql(sql, &db).unwrap_or_else(|e| panic!("{sql}: {e}"));
    same_on_every_run(sql, &one_and_many_workers(), |o| run_plan(&db, &plan, o))
        .into_iter()
        .map(|r| r.join("|"))
        .collect()
}

#[test]
fn a_time_key_finds_its_row_in_one_shard_or_many() {
    for (shards, fine) in [(None, false), (Some(4), false), (Some(3), true)] {
        let dir = keyed(shards, fine);
        let at = format!("{shards:?} shards, fine {fine}");
        for (sql, want) in [
            ("SELECT name FROM k WHERE t = '09:30'", vec!["early"]),
            ("SELECT name FROM k WHERE t = TIME '24:00:00'", vec!["end"]),
            ("SELECT name FROM k WHERE t = '09:45:30'", vec!["quarter"]),
            (
                "SELECT name FROM k WHERE t = '00:00:00.000001'",
                vec!["first"],
            ),
            ("SELECT name FROM k WHERE t = '10:00'", vec![]),
            (
                "SELECT name FROM k WHERE t IN ('12:00', '23:59:59.5') ORDER BY t",
                vec!["noon", "late"],
            ),
            (
                "SELECT t FROM k WHERE t >= '12:00' ORDER BY t DESC",
                vec!["24:00:00", "23:59:59.5", "12:00:00"],
            ),
            ("SELECT count(*) FROM k WHERE t < '09:45:30'", vec!["2"]),
        ] {
            assert_eq!(query(&dir, sql), want, "{sql} ({at})");
        }
        // The key index by its text, as `sluice get` reads it.
        let db = Database::open(dir.path().join("db")).unwrap();
        let table = db.keyed("k").unwrap();
        let row = table.get("9:30").unwrap().expect("09:30 is a key");
        assert_eq!(row.num_rows(), 1, "{at}");
        assert!(table.get("09:30:01").unwrap().is_none(), "{at}");
        let err = table.get("half past nine").unwrap_err().to_string();
        assert!(err.contains("HH:MM[:SS[.ffffff]]"), "{err}");
    }
}

#[test]
fn one_time_written_two_ways_is_a_duplicate_key() {
    let dir = TempDir::new("times-dup");
    let err = load_bytes(
        &dir,
        "k",
        b"t,name\n09:30,a\n9:30:00,b\n",
        &opts("t TIME PRIMARY KEY, name TEXT"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("duplicate"), "{err}");
    assert!(err.contains("09:30:00"), "the key as a time: {err}");
}

#[test]
fn text_that_is_no_time_fails_the_load_at_its_line_and_column() {
    for (bad, why) in [
        ("10:00:00+02", "UTC offset"),
        ("25:00", "invalid time of day"),
        ("24:00:01", "invalid time of day"),
        ("10:00 PM", "HH:MM[:SS[.ffffff]]"),
        ("10:00:00.1234567", "finer than a microsecond"),
    ] {
        let dir = TempDir::new("times-bad");
        let csv = format!("id,t\n1,10:00\n2,{bad}\n");
        let err = load_bytes(
            &dir,
            "t",
            csv.as_bytes(),
            &LoadOptions {
                header: Header::Yes,
                ..opts("id INT, t TIME")
            },
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("t-input.csv:3: column 2 (t)"), "{bad}: {err}");
        assert!(err.contains(why), "{bad}: {err}");
        // All or nothing: no row committed.
        if let Ok(db) = Database::open(dir.path().join("db"))
            && sluice::query::plan::Catalog::table_schema(&db, "t").is_some()
        {
            assert_eq!(query(&dir, "SELECT count(*) FROM t"), ["0"], "{bad}");
        }
    }
}
