//! SQL text, as any client may send it, run against a small table of
//! every type: parsing, binding, planning and evaluation must answer or
//! refuse, never panic or overflow the stack.

use sluice::query::{QueryOptions, query_with};
use sluice::store::Database;

fn main() {
    let dir = sluice_fuzz::Scratch::new("sql");
    let db = Database::open(sluice_fuzz::sample_db(&dir.0)).expect("the database");
    let opts = QueryOptions {
        threads: Some(1),
        ..Default::default()
    };
    sluice_fuzz::fuzz(|data| {
        // Long inputs only slow the search down.
        if data.len() > 4096 {
            return;
        }
        if let Ok(sql) = std::str::from_utf8(data) {
            let _ = query_with(&db, sql, &opts);
        }
    });
}
