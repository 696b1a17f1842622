//! Differential test: random queries of the supported subset over random
//! tables, run by sluice (several workers, tiny morsels) and by SQLite
//! (bundled), must give the same rows.
//!
//! The generator stays inside the semantics both engines share: integers
//! and lower-case text, no division (SQLite returns NULL on division by
//! zero, sluice refuses), LIKE only on lower-case data (SQLite's LIKE
//! ignores ASCII case), explicit NULLS FIRST/LAST in ORDER BY (their
//! defaults differ), AVG compared to 1e-9.

use sluice::batch::format_value;
use sluice::load::{Header, LoadOptions, load};
use sluice::query::{QueryOptions, query_with};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::TempDir;

/// SplitMix64: small, seeded, good enough for test data.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub(crate) fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

struct Table {
    rows: Vec<(Option<i64>, Option<i64>, Option<&'static str>)>,
}

fn random_table(rng: &mut Rng, n: usize) -> Table {
    let texts = ["a", "b", "c", "ab", "ba", ""];
    let rows = (0..n)
        .map(|_| {
            let i = (rng.below(8) != 0).then(|| rng.below(101) as i64 - 50);
            let j = (rng.below(6) != 0).then(|| rng.below(6) as i64);
            let s = (rng.below(7) != 0).then(|| texts[rng.below(texts.len() as u64) as usize]);
            (i, j, s)
        })
        .collect();
    Table { rows }
}

fn scalar(rng: &mut Rng, depth: u32) -> String {
    if depth == 0 || rng.below(3) == 0 {
        return match rng.below(5) {
            0 | 1 => "i".into(),
            2 => "j".into(),
            3 => (rng.below(21) as i64 - 10).to_string(),
            _ => "i".into(),
        };
    }
    match rng.below(7) {
        0 => format!("({} + {})", scalar(rng, depth - 1), scalar(rng, depth - 1)),
        1 => format!("({} - {})", scalar(rng, depth - 1), scalar(rng, depth - 1)),
        2 => format!("({} * {})", scalar(rng, depth - 1), scalar(rng, depth - 1)),
        3 => format!("-({})", scalar(rng, depth - 1)),
        4 => format!("abs({})", scalar(rng, depth - 1)),
        5 => format!(
            "coalesce({}, {})",
            scalar(rng, depth - 1),
            scalar(rng, depth - 1)
        ),
        _ => format!(
            "CASE WHEN {} THEN {} ELSE {} END",
            predicate(rng, depth - 1),
            scalar(rng, depth - 1),
            scalar(rng, depth - 1)
        ),
    }
}

fn predicate(rng: &mut Rng, depth: u32) -> String {
    let cmp = ["=", "<>", "<", "<=", ">", ">="];
    if depth == 0 || rng.below(3) == 0 {
        return match rng.below(9) {
            0 => format!("{} {} {}", scalar(rng, 1), rng.pick(&cmp), scalar(rng, 1)),
            1 => format!("s {} '{}'", rng.pick(&cmp), rng.pick(&["a", "b", "ab", ""])),
            2 => format!(
                "{} IS {}NULL",
                rng.pick(&["i", "j", "s"]),
                rng.pick(&["", "NOT "])
            ),
            3 => format!(
                "i {}BETWEEN {} AND {}",
                rng.pick(&["", "NOT "]),
                rng.below(40) as i64 - 30,
                rng.below(40) as i64 - 5
            ),
            4 => format!("j {}IN (1, 3, {})", rng.pick(&["", "NOT "]), rng.below(6)),
            5 => format!(
                "s {}LIKE '{}'",
                rng.pick(&["", "NOT "]),
                rng.pick(&["a%", "%b", "_", "%", "a_", "%a%", "%ab%", "ab", "%a_", ""])
            ),
            6 => format!("s IN ('a', '{}')", rng.pick(&["b", "c", ""])),
            // A long list of literals (bound a type at a time): signed,
            // wide, decimal, NULL, text.
            7 => {
                let n = 8 + rng.below(12) as usize;
                let col = rng.pick(&["i", "j", "s"]);
                let items: Vec<String> = (0..n)
                    .map(|_| match (col, rng.below(10)) {
                        ("s", 0) => "NULL".into(),
                        ("s", _) => format!("'{}'", rng.pick(&["a", "b", "ab", "", "c"])),
                        (_, 0) => "NULL".into(),
                        (_, 1) => "3000000000".into(),
                        (_, 2) => format!("{}.5", rng.below(20) as i64 - 10),
                        (_, 3) => format!("{}.0", rng.below(20) as i64 - 10),
                        (_, 4) => format!("{}e0", rng.below(20) as i64 - 10),
                        (_, 5) => format!("+{}", rng.below(20)),
                        _ => format!("{}", rng.below(60) as i64 - 30),
                    })
                    .collect();
                format!("{col} {}IN ({})", rng.pick(&["", "NOT "]), items.join(", "))
            }
            _ => format!("i {} {}", rng.pick(&cmp), rng.below(60) as i64 - 30),
        };
    }
    match rng.below(3) {
        0 => format!(
            "({} AND {})",
            predicate(rng, depth - 1),
            predicate(rng, depth - 1)
        ),
        1 => format!(
            "({} OR {})",
            predicate(rng, depth - 1),
            predicate(rng, depth - 1)
        ),
        _ => format!("NOT ({})", predicate(rng, depth - 1)),
    }
}

fn random_query(rng: &mut Rng) -> (String, bool) {
    let where_ = if rng.below(3) == 0 {
        String::new()
    } else {
        format!(" WHERE {}", predicate(rng, 2))
    };
    if rng.below(2) == 0 {
        // Plain projection, ordered by every output column.
        let items: Vec<String> = (0..1 + rng.below(3)).map(|_| scalar(rng, 2)).collect();
        let mut items = items;
        if rng.below(2) == 0 {
            items.push("s".into());
        }
        let order: Vec<String> = (1..=items.len())
            .map(|p| {
                format!(
                    "{p} {} NULLS {}",
                    rng.pick(&["ASC", "DESC"]),
                    rng.pick(&["FIRST", "LAST"])
                )
            })
            .collect();
        let limit = if rng.below(3) == 0 {
            format!(" LIMIT {} OFFSET {}", rng.below(10), rng.below(5))
        } else {
            String::new()
        };
        (
            format!(
                "SELECT {} FROM t{where_} ORDER BY {}{limit}",
                items.join(", "),
                order.join(", ")
            ),
            true,
        )
    } else {
        let key = rng.pick(&[
            "s",
            "j",
            "i",
            "(i * 0 + j)",
            "j, s",
            "i, j",
            "CASE WHEN i > 0 THEN 'pos' ELSE 'neg' END",
            "CASE WHEN i > 0 THEN 'pos' WHEN s LIKE 'a%' THEN 'a' WHEN i < 0 THEN 'neg' ELSE 'pos' END",
        ]);
        let aggs = [
            "count(*)",
            "count(i)",
            "sum(i)",
            "min(i)",
            "max(j)",
            "max(s)",
            "min(s)",
            "count(DISTINCT j)",
            "count(DISTINCT s)",
            "count(DISTINCT i * j)",
            "sum(i * j)",
            "sum(CASE WHEN i > 0 THEN i ELSE j END)",
            "avg(CASE WHEN j IS NULL THEN 0 WHEN s = 'a' THEN i * 2 ELSE j - i END)",
            "sum(CASE WHEN s LIKE '%a%' THEN 1 ELSE 0 END)",
            "avg(i)",
        ];
        let mut items = vec![key.to_string()];
        for _ in 0..1 + rng.below(3) {
            items.push(rng.pick(&aggs).to_string());
        }
        let having = if rng.below(3) == 0 {
            format!(" HAVING count(*) > {}", rng.below(4))
        } else {
            String::new()
        };
        let grouped = rng.below(5) != 0;
        if grouped {
            (
                format!(
                    "SELECT {} FROM t{where_} GROUP BY {key}{having}",
                    items.join(", ")
                ),
                false,
            )
        } else {
            (
                format!("SELECT {} FROM t{where_}", items[1..].join(", ")),
                false,
            )
        }
    }
}

/// sluice's rows of a result, each cell as text (NULL as `NULL`).
pub(crate) fn rows_of(r: &sluice::query::QueryResult) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for b in &r.batches {
        for row in 0..b.num_rows() {
            out.push(
                b.columns()
                    .iter()
                    .map(|c| format_value(c.as_ref(), row).unwrap_or_else(|| "NULL".into()))
                    .collect(),
            );
        }
    }
    out
}

/// SQLite's rows for `sql`, each cell as text (NULL as `NULL`).
pub(crate) fn sqlite_rows(lite: &rusqlite::Connection, sql: &str) -> Vec<Vec<String>> {
    let mut stmt = lite
        .prepare(sql)
        .unwrap_or_else(|e| panic!("sqlite refused {sql}: {e}"));
    let n = stmt.column_count();
    stmt.query_map([], |row| {
        (0..n)
            .map(|k| {
                Ok(match row.get_ref(k)? {
                    rusqlite::types::ValueRef::Null => "NULL".to_string(),
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Real(v) => v.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).to_string(),
                    rusqlite::types::ValueRef::Blob(_) => "<blob>".to_string(),
                })
            })
            .collect()
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// Fails unless sluice's rows and SQLite's are the same (sorted first
/// when the query does not order them), cell by cell.
pub(crate) fn assert_same(
    sql: &str,
    mut ours: Vec<Vec<String>>,
    mut theirs: Vec<Vec<String>>,
    ordered: bool,
) {
    if !ordered {
        ours.sort();
        theirs.sort();
    }
    let same = ours.len() == theirs.len()
        && ours
            .iter()
            .zip(&theirs)
            .all(|(a, b)| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_cell(x, y)));
    assert!(
        same,
        "results differ for\n  {sql}\nsluice: {ours:?}\nsqlite: {theirs:?}"
    );
}

pub(crate) fn same_cell(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= 1e-9 * y.abs().max(1.0),
        _ => false,
    }
}

#[test]
fn random_queries_agree_with_sqlite() {
    let mut rng = Rng(0x5eed_1234);
    let mut checked = 0;
    for round in 0..6 {
        let table = random_table(&mut rng, 40 + 30 * round);
        let dir = TempDir::new("diff");
        let mut csv = String::from("i,j,s\n");
        for (i, j, s) in &table.rows {
            let f = |v: &Option<i64>| v.map(|x| x.to_string()).unwrap_or_default();
            let t = s.map(|x| format!("\"{x}\"")).unwrap_or_default();
            csv.push_str(&format!("{},{},{}\n", f(i), f(j), t));
        }
        let file = dir.write("t.csv", csv.as_bytes());
        let mut db = Database::open_writer(dir.path().join("db")).unwrap();
        let o = LoadOptions {
            schema: Some("i INT, j BIGINT, s TEXT".parse().unwrap()),
            header: Header::Yes,
            // Rounds 2 and 5: across shards.
            shards: (round % 3 == 2).then_some(3),
            ..Default::default()
        };
        // Every other round: the table in segments of a few rows, each
        // batch's TEXT dictionary-encoded (many dictionaries to mix up).
        let o = if round % 2 == 1 {
            crate::common::tiny_layout(o)
        } else {
            o
        };
        load(&mut db, "t", &[Input::File(file)], &o).unwrap();
        drop(db);
        let db = Database::open(dir.path().join("db")).unwrap();

        let lite = rusqlite::Connection::open_in_memory().unwrap();
        lite.execute("CREATE TABLE t (i INTEGER, j INTEGER, s TEXT)", [])
            .unwrap();
        for (i, j, s) in &table.rows {
            lite.execute(
                "INSERT INTO t VALUES (?1, ?2, ?3)",
                rusqlite::params![i, j, s],
            )
            .unwrap();
        }

        for _ in 0..100 {
            let (sql, ordered) = random_query(&mut rng);
            let opts = QueryOptions {
                threads: Some(3),
                morsel_rows: Some(1 + rng.below(9) as usize),
                ..Default::default()
            };
            let r = query_with(&db, &sql, &opts)
                .unwrap_or_else(|e| panic!("sluice failed on {sql}: {e}"));
            let ours = rows_of(&r);
            let theirs = sqlite_rows(&lite, &sql);
            assert_same(&sql, ours, theirs, ordered);
            checked += 1;
        }
    }
    assert_eq!(checked, 600);
}

/// A table `t (id BIGINT, i INT, j BIGINT, s TEXT)` of `n` random rows
/// (NULLs in every column but `id`) in sluice and in SQLite: `round`
/// picks the layout (odd: tiny segments with dictionary-encoded TEXT;
/// 4: three shards).
pub(crate) fn random_tables(
    rng: &mut Rng,
    round: u64,
    n: usize,
    dir: &crate::common::TempDir,
) -> (sluice::store::Database, rusqlite::Connection) {
    let rows = crate::differential_windows::random_rows(rng, n);
    let mut csv = String::from("id,i,j,s\n");
    for (id, i, j, s) in &rows {
        let f = |v: &Option<i64>| v.map(|x| x.to_string()).unwrap_or_default();
        let t = s.map(|x| format!("\"{x}\"")).unwrap_or_default();
        csv.push_str(&format!("{id},{},{},{}\n", f(i), f(j), t));
    }
    let file = dir.write("t.csv", csv.as_bytes());
    let mut db = sluice::store::Database::open_writer(dir.path().join("db")).unwrap();
    let o = sluice::load::LoadOptions {
        schema: Some("id BIGINT, i INT, j BIGINT, s TEXT".parse().unwrap()),
        header: sluice::load::Header::Yes,
        shards: (round == 4).then_some(3),
        ..Default::default()
    };
    let o = if round % 2 == 1 {
        crate::common::tiny_layout(o)
    } else {
        o
    };
    sluice::load::load(&mut db, "t", &[sluice::source::Input::File(file)], &o).unwrap();
    drop(db);
    let db = sluice::store::Database::open(dir.path().join("db")).unwrap();

    let lite = rusqlite::Connection::open_in_memory().unwrap();
    lite.execute(
        "CREATE TABLE t (id INTEGER, i INTEGER, j INTEGER, s TEXT)",
        [],
    )
    .unwrap();
    for (id, i, j, s) in &rows {
        lite.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![id, i, j, s],
        )
        .unwrap();
    }
    (db, lite)
}
