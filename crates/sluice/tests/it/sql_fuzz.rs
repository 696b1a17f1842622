//! Random token soup through the SQL front end and the executor: every
//! input gives a result or an error, never a panic.

use std::panic::{AssertUnwindSafe, catch_unwind};

use sluice::query::{QueryOptions, query_with};
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, opts};

const TOKENS: &[&str] = &[
    "SELECT",
    "FROM",
    "t",
    "WHERE",
    "GROUP BY",
    "ORDER BY",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "AND",
    "OR",
    "NOT",
    "NULL",
    "IS",
    "IN",
    "BETWEEN",
    "LIKE",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "CAST",
    "AS",
    "INT",
    "TEXT",
    "DATE",
    "DECIMAL(5,2)",
    "EXTRACT(YEAR FROM",
    "SUBSTRING(",
    "count(*)",
    "count(",
    "sum(",
    "avg(",
    "min(",
    "max(",
    "DISTINCT",
    "upper(",
    "coalesce(",
    "abs(",
    "(",
    ")",
    ",",
    "+",
    "-",
    "*",
    "/",
    "=",
    "<>",
    "<",
    ">=",
    "i",
    "s",
    "d",
    "p",
    "1",
    "0",
    "-7",
    "2.50",
    "'a'",
    "''",
    "'2024-01-01'",
    "date '2024-02-29'",
    "interval '3' day",
    "*",
    "ASC",
    "DESC",
    "NULLS FIRST",
    "EXPLAIN",
    "JOIN",
    "true",
    "1e3",
    "9223372036854775807",
];

#[test]
fn random_sql_never_panics() {
    let dir = TempDir::new("fuzz");
    let data = b"i,s,d,p\n1,a,2024-01-01,1.25\n,b,,\n-3,,2023-12-31,-0.50\n7,ab,2024-02-29,99.99\n";
    load_bytes(
        &dir,
        "t",
        data,
        &opts("i INT, s TEXT, d DATE, p DECIMAL(5,2)"),
    )
    .unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let mut state = 0x1234_5678_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let templates = [
        "SELECT i , s , d , p FROM t WHERE i > 0 ORDER BY 1 DESC",
        "SELECT s , count(*) , sum( p ) , avg( i ) FROM t GROUP BY s HAVING count(*) > 0",
        "SELECT CASE WHEN i IS NULL THEN 'x' ELSE s END , d + interval '3' day FROM t",
        "SELECT EXTRACT(YEAR FROM d ) , min( p ) FROM t WHERE d BETWEEN '2024-01-01' AND '2024-12-31' GROUP BY 1",
        "SELECT SUBSTRING( s FROM 1 FOR 1 ) , p * 2 - 1 FROM t WHERE s LIKE 'a%' OR i IN ( 1 , 7 )",
        "SELECT count( DISTINCT s ) , max( d ) FROM t WHERE NOT ( p < 0 )",
        "SELECT i / 2 , CAST( p AS INT ) , coalesce( s , '' ) FROM t ORDER BY i NULLS FIRST LIMIT 2 OFFSET 1",
        "EXPLAIN SELECT sum( p * p ) FROM t WHERE i >= 1",
    ];
    let mut answered = 0;
    for _ in 0..3000 {
        let mut toks: Vec<String> = templates[(next() % templates.len() as u64) as usize]
            .split(' ')
            .map(String::from)
            .collect();
        // Mutate: replace, insert or delete a few tokens.
        for _ in 0..(next() % 4) {
            let at = (next() % toks.len() as u64) as usize;
            let tok = TOKENS[(next() % TOKENS.len() as u64) as usize].to_string();
            match next() % 3 {
                0 => toks[at] = tok,
                1 => toks.insert(at, tok),
                _ => {
                    if toks.len() > 2 {
                        toks.remove(at);
                    }
                }
            }
        }
        let sql = toks.join(" ");
        let opts = QueryOptions {
            threads: Some(2),
            morsel_rows: Some(1 + (next() % 3) as usize),
            ..Default::default()
        };
        let r = catch_unwind(AssertUnwindSafe(|| query_with(&db, &sql, &opts)));
        match r {
            Ok(Ok(_)) => answered += 1,
            Ok(Err(_)) => {}
            Err(_) => panic!("panicked on: {sql}"),
        }
    }
    // The soup must sometimes be valid SQL, or the executor went untested.
    assert!(answered > 500, "only {answered} of 3000 random queries ran");
}

/// SQL built to be deep or wide — long operator chains, nested
/// parentheses, NOT and minus signs, CASE and function calls inside each
/// other, IN lists and OR chains of thousands of terms — run on a thread
/// with a 2 MiB stack (a server's connection thread has that much): each
/// is answered or refused with an error, and never overflows the stack
/// (which would abort this whole test process).
#[test]
fn deep_and_wide_sql_never_overflows_the_stack() {
    let dir = TempDir::new("deepsql");
    let mut csv = String::from("i,s\n");
    for k in 0..200 {
        csv.push_str(&format!("{k},v{}\n", k % 7));
    }
    load_bytes(&dir, "t", csv.as_bytes(), &opts("i BIGINT, s TEXT")).unwrap();
    let db_dir = dir.path().join("db");
    let mut state: u64 = 0x5151_d00d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // (shape, how many) pairs; sizes straddle the limits.
    let sizes = [1usize, 10, 300, 600, 2_000, 6_000, 12_000, 40_000];
    let mut cases: Vec<String> = Vec::new();
    for _ in 0..40 {
        let n = sizes[(next() % sizes.len() as u64) as usize];
        let sql = match next() % 9 {
            0 => format!("SELECT {} FROM t", vec!["i"; n].join(" + ")),
            1 => format!("SELECT count(*) FROM t WHERE {}", {
                let v: Vec<String> = (0..n).map(|k| format!("i = {k}")).collect();
                v.join(" OR ")
            }),
            2 => format!("SELECT {}i{} FROM t", "(".repeat(n), ")".repeat(n)),
            3 => format!("SELECT count(*) FROM t WHERE {}i > 3", "NOT ".repeat(n)),
            4 => format!("SELECT {}i FROM t", "- ".repeat(n)),
            5 => format!(
                "SELECT {}1{} FROM t",
                "CASE WHEN i > 0 THEN ".repeat(n.min(5_000)),
                " ELSE 0 END".repeat(n.min(5_000))
            ),
            6 => format!("SELECT {}i{} FROM t", "abs(".repeat(n), ")".repeat(n)),
            7 => format!("SELECT count(*) FROM t WHERE i IN ({})", {
                let v: Vec<String> = (0..n * 3).map(|k| k.to_string()).collect();
                v.join(", ")
            }),
            _ => format!("SELECT i{} FROM t", "::BIGINT".repeat(n)),
        };
        cases.push(sql);
    }
    // Just under the binder's limit: bound, then evaluated as deep by
    // the workers.
    cases.push(format!("SELECT {} FROM t", vec!["i"; 500].join(" + ")));
    cases.push(format!(
        "SELECT count(*) FROM t WHERE {}i{} > 0",
        "abs(".repeat(45),
        ")".repeat(45)
    ));
    // Just under the depth planned on the calling thread.
    let inline = sluice::query::plan::INLINE_DEPTH;
    cases.push(format!(
        "SELECT {} FROM t WHERE {}",
        vec!["i"; inline - 4].join(" * "),
        vec!["i > 0"; inline / 2 - 2].join(" AND ")
    ));
    cases.push(format!(
        "SELECT CASE WHEN {} THEN 1 END FROM t",
        vec!["s"; inline - 2].join(" || ")
    ));
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let db = Database::open(&db_dir).unwrap();
            let mut outcomes = Vec::new();
            for sql in &cases {
                if std::env::var_os("SLUICE_DEEP_TRACE").is_some() {
                    eprintln!(
                        "deep sql: {} bytes: {}",
                        sql.len(),
                        &sql[..sql.len().min(60)]
                    );
                }
                let opts = QueryOptions {
                    threads: Some(2),
                    ..Default::default()
                };
                match query_with(&db, sql, &opts) {
                    Ok(_) => outcomes.push("ok".to_string()),
                    Err(e) => outcomes.push(e.sqlstate().to_string()),
                }
            }
            outcomes
        })
        .unwrap();
    let outcomes = handle.join().expect("a deep query panicked");
    // Some ran, some were refused as too deep, and nothing else went
    // wrong (no internal errors).
    assert!(outcomes.iter().any(|o| o == "ok"), "{outcomes:?}");
    assert!(outcomes.iter().any(|o| o == "54001"), "{outcomes:?}");
    assert!(!outcomes.iter().any(|o| o == "XX000"), "{outcomes:?}");
}
