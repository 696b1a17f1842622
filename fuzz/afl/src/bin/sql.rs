//! SQL text, as any client may send it, run against a small table of
//! every type: parsing, binding, planning and evaluation must answer or
//! refuse, never panic or overflow the stack (a panic aborts, and AFL++
//! records the input as a crash).

use sluice::load::{Header, LoadOptions, load};
use sluice::query::{QueryOptions, query_with};
use sluice::source::Input;
use sluice::store::Database;

const CSV: &str = "i,j,d,s,dt,ts,b
1,10,1.5,a,2024-01-31,2024-01-31 12:00:00Z,true
2,-3,,bb,2024-02-29,2024-07-01 00:30:00+02,false
,7,-0.0,,1999-12-31,,
4,9223372036854775807,1e300,a,2024-01-31,2024-01-31 12:00:00Z,true
5,0,nan,ccc,,1970-01-01 00:00:00Z,false
";

fn main() {
    let dir = std::env::temp_dir().join(format!("sluice-fuzz-sql-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let file = dir.join("t.csv");
    std::fs::write(&file, CSV).expect("the table's file");
    let db_dir = dir.join("db");
    {
        let mut db = Database::open_writer(&db_dir).expect("a database");
        let o = LoadOptions {
            schema: Some(
                "i INT, j BIGINT, d DOUBLE, s TEXT, dt DATE, ts TIMESTAMPTZ, b BOOLEAN"
                    .parse()
                    .expect("the schema"),
            ),
            header: Header::Yes,
            ..Default::default()
        };
        load(&mut db, "t", &[Input::File(file)], &o).expect("the load");
    }
    let db = Database::open(&db_dir).expect("the database");
    let opts = QueryOptions {
        threads: Some(1),
        ..Default::default()
    };
    afl::fuzz!(|data: &[u8]| {
        // Long inputs only slow the search down.
        if data.len() > 4096 {
            return;
        }
        if let Ok(sql) = std::str::from_utf8(data) {
            let _ = query_with(&db, sql, &opts);
        }
    });
}
