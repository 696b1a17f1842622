//! Point queries ([`sluice::query::point::PointQuery`]) against the
//! general executor: for random tables (BIGINT, INT and TEXT keys, one
//! shard or three, NULLs and every value type beside the key) and random
//! keys present and absent, the point query's rows and result types are
//! those of the same SQL run by `run_plan`. Plans of any other shape are
//! not taken. A table kept open by [`sluice::store::Snapshots::keyed`]
//! sees the rows of a later commit once that commit is the last.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use proptest::prelude::*;
use sluice::load::{Header, LoadOptions, Reload, load};
use sluice::query::plan::plan_sql;
use sluice::query::point::PointQuery;
use sluice::query::{QueryOptions, run_plan};
use sluice::source::Input;
use sluice::store::{Database, Snapshots};

use crate::common::{TempDir, rows_of};

/// A key column's type, and how a key is written in SQL and bound.
#[derive(Debug, Clone, Copy)]
enum Key {
    Bigint,
    Int,
    Text,
}

impl Key {
    fn sql_type(self) -> &'static str {
        match self {
            Key::Bigint => "BIGINT",
            Key::Int => "INT",
            Key::Text => "TEXT",
        }
    }
    fn text(self, k: i64) -> String {
        match self {
            Key::Text => format!("k{k}"),
            _ => k.to_string(),
        }
    }
    fn literal(self, k: i64) -> String {
        match self {
            Key::Text => format!("'k{k}'"),
            _ => k.to_string(),
        }
    }
    fn value(self, k: i64) -> ArrayRef {
        match self {
            Key::Text => Arc::new(StringArray::from(vec![format!("k{k}")])),
            _ => Arc::new(Int64Array::from(vec![k])),
        }
    }
}

/// Loads rows `(key, name, n, d, p)` for the keys given, the other
/// columns made from the key (some NULL).
fn load_table(
    dir: &TempDir,
    key: Key,
    keys: &[i64],
    shards: u32,
    file: &str,
) -> sluice::Result<()> {
    let mut csv = String::new();
    for &k in keys {
        let name = if k % 5 == 0 {
            String::new()
        } else {
            format!("\"n,{}\"", k % 7)
        };
        let n = if k % 3 == 0 {
            String::new()
        } else {
            (k * 31 % 1000).to_string()
        };
        let d = format!("2020-01-{:02}", 1 + k.rem_euclid(28));
        let p = format!("{}.{:02}", k.rem_euclid(1000), k.rem_euclid(100));
        csv.push_str(&format!("{},{name},{n},{d},{p}\n", key.text(k)));
    }
    let f = dir.write(file, csv.as_bytes());
    let mut db = Database::open_writer(dir.path().join("db"))?;
    let o = LoadOptions {
        schema: Some(
            format!(
                "id {} PRIMARY KEY, name TEXT, n INT, d DATE, p DECIMAL(10,2)",
                key.sql_type()
            )
            .parse()
            .unwrap(),
        ),
        header: Header::No,
        shards: (shards > 1).then_some(shards),
        reload: Reload::All,
        ..LoadOptions::default()
    };
    load(&mut db, "t", &[Input::File(f)], &o)?;
    Ok(())
}

const SELECTS: [&str; 5] = [
    "SELECT * FROM t WHERE id = {}",
    "SELECT name, id FROM t WHERE {} = id",
    "SELECT p, d, n, p FROM t WHERE id = {} LIMIT 1",
    "SELECT id AS k FROM t WHERE id = {}",
    "SELECT d FROM t WHERE id = {} LIMIT 5",
];

fn general(db: &Database, sql: &str) -> (Vec<Vec<Option<String>>>, arrow_schema::SchemaRef) {
    let plan = plan_sql(sql, db).unwrap();
    let r = run_plan(db, &plan, &QueryOptions::default()).unwrap();
    (rows_of(&r.batches), r.schema)
}

fn point(db: &Arc<Database>, template: &str, key: Key, k: i64) -> RecordBatch {
    // Planned with one key, run with another: as a prepared statement is.
    let plan = plan_sql(&template.replace("{}", &key.literal(1)), db.as_ref()).unwrap();
    let p = PointQuery::of(&plan).unwrap_or_else(|| panic!("{template}: not a point query"));
    let keyed = Database::keyed_shared(db, p.table()).unwrap();
    p.run(&keyed, &key.value(k))
        .unwrap()
        .expect("a key of the column's type")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn a_point_query_answers_as_the_executor_does(
        keys in proptest::collection::btree_set(-500i64..500, 1..80),
        probes in proptest::collection::vec(-600i64..600, 1..12),
        kind in 0usize..3,
        shards in prop_oneof![Just(1u32), Just(3u32)],
    ) {
        let key = [Key::Bigint, Key::Int, Key::Text][kind];
        let dir = TempDir::new("point");
        let keys: Vec<i64> = keys.into_iter().collect();
        load_table(&dir, key, &keys, shards, "a.csv").unwrap();
        let db = Arc::new(Database::open(dir.path().join("db")).unwrap());
        for &k in probes.iter().chain(keys.first()) {
            for s in SELECTS {
                let b = point(&db, s, key, k);
                let (want, schema) = general(&db, &s.replace("{}", &key.literal(k)));
                prop_assert_eq!(b.schema(), schema, "{} with {}", s, k);
                prop_assert_eq!(rows_of(&[b]), want.clone(), "{} with {}", s, k);
                prop_assert_eq!(want.len(), usize::from(keys.contains(&k)));
            }
        }
    }
}

#[test]
fn other_plans_are_not_point_queries() {
    let dir = TempDir::new("point-not");
    load_table(&dir, Key::Bigint, &[1, 2, 3], 1, "a.csv").unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    for sql in [
        "SELECT id FROM t WHERE id = 1 ORDER BY id",
        "SELECT id FROM t WHERE id = 1 LIMIT 0",
        "SELECT id FROM t WHERE id = 1 OFFSET 1",
        "SELECT id + 1 FROM t WHERE id = 1",
        "SELECT count(*) FROM t WHERE id = 1",
        "SELECT id FROM t WHERE id = 1 AND n > 3",
        "SELECT id FROM t WHERE id IN (1, 2)",
        "SELECT id FROM t WHERE id + 0 = 1",
        "SELECT id FROM t WHERE n = 1",
        "SELECT id FROM t",
        "EXPLAIN SELECT id FROM t WHERE id = 1",
    ] {
        let plan = plan_sql(sql, &db).unwrap();
        assert!(
            PointQuery::of(&plan).is_none(),
            "{sql} taken as a point query"
        );
    }
    // Taken, but a value it cannot take exactly is left to the plan.
    let plan = plan_sql("SELECT id FROM t WHERE id = 1", &db).unwrap();
    let p = PointQuery::of(&plan).unwrap();
    let keyed = db.keyed("t").unwrap();
    let text: ArrayRef = Arc::new(StringArray::from(vec!["1"]));
    let null: ArrayRef = Arc::new(Int64Array::from(vec![None::<i64>]));
    assert!(
        p.run(&keyed, &text).unwrap().is_none(),
        "TEXT for a BIGINT key"
    );
    assert!(p.run(&keyed, &null).unwrap().is_none(), "NULL");
    assert_eq!(
        p.run(&keyed, &Key::Bigint.value(2))
            .unwrap()
            .unwrap()
            .num_rows(),
        1
    );
}

#[test]
fn a_kept_table_is_the_last_commits() {
    let dir = TempDir::new("point-snap");
    load_table(&dir, Key::Bigint, &[1, 2], 1, "a.csv").unwrap();
    let snaps = Snapshots::new(dir.path().join("db"));
    let db = snaps.get().unwrap();
    let a = snaps.keyed(&db, "t").unwrap();
    assert!(
        Arc::ptr_eq(&a, &snaps.keyed(&db, "t").unwrap()),
        "kept open"
    );
    let plan = plan_sql("SELECT n FROM t WHERE id = 0", db.as_ref()).unwrap();
    let p = PointQuery::of(&plan).unwrap();
    assert_eq!(
        p.run(&a, &Key::Bigint.value(7))
            .unwrap()
            .unwrap()
            .num_rows(),
        0
    );
    load_table(&dir, Key::Bigint, &[7], 1, "b.csv").unwrap();
    let db2 = snaps.get().unwrap();
    assert!(!Arc::ptr_eq(&db, &db2), "a new commit, a new snapshot");
    let b = snaps.keyed(&db2, "t").unwrap();
    assert!(!Arc::ptr_eq(&a, &b), "its table opened anew");
    let row = p.run(&b, &Key::Bigint.value(7)).unwrap().unwrap();
    assert_eq!(rows_of(&[row]), vec![vec![Some("217".to_string())]]);
    // The old snapshot's table is still the old one, and not kept.
    assert_eq!(
        p.run(&a, &Key::Bigint.value(7))
            .unwrap()
            .unwrap()
            .num_rows(),
        0
    );
    let old = snaps.keyed(&db, "t").unwrap();
    assert!(
        !Arc::ptr_eq(&old, &snaps.keyed(&db, "t").unwrap()),
        "an older snapshot's table is not kept"
    );
    assert!(snaps.keyed(&db2, "nope").is_err());
}
