//! SQL cursors of a connection: `DECLARE name [BINARY] [[NO] SCROLL]
//! CURSOR [WITH[OUT] HOLD] FOR query`, `FETCH`/`MOVE` in every direction
//! PostgreSQL has, `CLOSE name | ALL`. This is what psycopg's and
//! psycopg2's named (server-side) cursors send, and SQLAlchemy's
//! `stream_results`.
//!
//! A cursor holds its query's whole answer, run when it is declared on
//! the transaction's snapshot (answers are materialized in sluice; a
//! FETCH slices them). A cursor WITHOUT HOLD lives until its block ends,
//! one WITH HOLD until CLOSE or the connection's end (or a ROLLBACK of
//! the block that declared it), as in PostgreSQL.

use std::collections::HashMap;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::Failure;

/// Where a FETCH or MOVE goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `FORWARD n`, `n`, `NEXT` (1), `ALL` (`None`).
    Forward(Option<u64>),
    /// `BACKWARD n`, `PRIOR` (1), `BACKWARD ALL` (`None`).
    Backward(Option<u64>),
    /// `ABSOLUTE n`, `FIRST` (1), `LAST` (-1).
    Absolute(i64),
    Relative(i64),
}

/// A cursor statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Declare {
        name: String,
        hold: bool,
        /// `NO SCROLL`: backward moves are refused.
        no_scroll: bool,
        /// `BINARY`: rows in binary format.
        binary: bool,
        query: String,
    },
    /// FETCH (`moving`: MOVE, no rows).
    Fetch {
        name: String,
        dir: Direction,
        moving: bool,
    },
    /// `CLOSE name`, or `CLOSE ALL` (`None`).
    Close(Option<String>),
}

/// `sql` with its comments blanked out byte for byte (`--` to the end
/// of the line, `/* */` nested as in PostgreSQL), quotes kept: offsets
/// into it are offsets into `sql`.
fn blank_comments(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        out[i] = b' ';
                        out[i + 1] = b' ';
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        out[i] = b' ';
                        out[i + 1] = b' ';
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        out[i] = b' ';
                        i += 1;
                    }
                }
            }
            _ => i += 1,
        }
    }
    // Only ASCII bytes were replaced, each by a space.
    String::from_utf8(out).unwrap_or_else(|_| sql.to_string())
}

/// The words of `sql` (comments blanked) with where each ends: a
/// double-quoted identifier is one word (its name, `""` a quote; `quoted`
/// true), others lower-cased; a sign alone before a number joins it.
fn words(sql: &str) -> Option<Vec<(String, bool, usize)>> {
    let b = sql.as_bytes();
    let mut out: Vec<(String, bool, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() || c == b';' {
            i += 1;
            continue;
        }
        if c == b'"' {
            let mut name = String::new();
            let mut j = i + 1;
            loop {
                let rest = sql.get(j..)?;
                let q = rest.find('"')?;
                name.push_str(&rest[..q]);
                j += q + 1;
                if b.get(j) == Some(&b'"') {
                    name.push('"');
                    j += 1;
                } else {
                    break;
                }
            }
            out.push((name, true, j));
            i = j;
            continue;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b';' && b[i] != b'"' {
            i += 1;
        }
        let word = sql[start..i].to_ascii_lowercase();
        match out.last_mut() {
            Some((sign, false, end))
                if (sign == "-" || sign == "+") && word.bytes().all(|c| c.is_ascii_digit()) =>
            {
                sign.push_str(&word);
                *end = i;
            }
            _ => out.push((word, false, i)),
        }
    }
    Some(out)
}

fn syntax(sql: &str) -> Failure {
    Failure::syntax(format!(
        "syntax error in cursor statement: {}",
        sql.trim().chars().take(200).collect::<String>()
    ))
}

/// The cursor statement `sql` is, if it is one (`Some(Err)`: one written
/// wrong).
pub fn command(sql: &str) -> Option<Result<Command, Failure>> {
    let bare = blank_comments(sql);
    let first = bare
        .trim_start()
        .split(|c: char| c.is_whitespace() || c == ';')
        .next()?
        .to_ascii_lowercase();
    if !matches!(first.as_str(), "declare" | "fetch" | "move" | "close") {
        return None;
    }
    let Some(w) = words(&bare) else {
        return Some(Err(Failure::syntax("unterminated quoted identifier")));
    };
    if w.iter().any(|(x, q, _)| *q && x.is_empty()) {
        return Some(Err(Failure::syntax("zero-length delimited identifier")));
    }
    Some(parse(sql, &first, &w))
}

/// A count of FETCH or MOVE: a 32-bit integer, as PostgreSQL's grammar
/// reads it.
fn count(w: &[(String, bool, usize)], i: usize) -> Option<i64> {
    let (x, q, _) = w.get(i)?;
    if *q {
        return None;
    }
    x.parse::<i32>().ok().map(i64::from)
}

fn parse(sql: &str, first: &str, w: &[(String, bool, usize)]) -> Result<Command, Failure> {
    let kw = |i: usize, k: &str| w.get(i).is_some_and(|(x, q, _)| !q && x == k);
    let bad = || syntax(sql);
    match first {
        "declare" => {
            let name = w.get(1).ok_or_else(bad)?.0.clone();
            let mut i = 2;
            let (mut binary, mut scroll, mut no_scroll, mut hold) = (false, false, false, false);
            loop {
                if kw(i, "binary") {
                    binary = true;
                } else if kw(i, "insensitive") || kw(i, "asensitive") {
                } else if kw(i, "scroll") {
                    scroll = true;
                } else if kw(i, "no") && kw(i + 1, "scroll") {
                    no_scroll = true;
                    i += 1;
                } else {
                    break;
                }
                i += 1;
            }
            if scroll && no_scroll {
                return Err(Failure::new(
                    "42P11",
                    "cannot specify both SCROLL and NO SCROLL",
                ));
            }
            if !kw(i, "cursor") {
                return Err(bad());
            }
            i += 1;
            if (kw(i, "with") || kw(i, "without")) && kw(i + 1, "hold") {
                hold = kw(i, "with");
                i += 2;
            }
            if !kw(i, "for") {
                return Err(bad());
            }
            let query = sql[w[i].2..].trim().to_string();
            // A cursor is FOR a query: SELECT, WITH, VALUES, TABLE.
            let head = w.get(i + 1).map(|(x, q, _)| (x.as_str(), *q));
            let is_query = matches!(head, Some(("select" | "with" | "values" | "table", false)))
                || head.is_some_and(|(x, q)| !q && x.starts_with('('));
            if !is_query {
                return Err(bad());
            }
            Ok(Command::Declare {
                name,
                hold,
                no_scroll,
                binary,
                query,
            })
        }
        "close" => match &w[1..] {
            [(a, false, _)] if a == "all" => Ok(Command::Close(None)),
            [(name, _, _)] => Ok(Command::Close(Some(name.clone()))),
            _ => Err(bad()),
        },
        _ => {
            let moving = first == "move";
            let mut i = 1;
            // One word left is the cursor's name, whatever it spells
            // (`FETCH next` reads cursor "next", as in PostgreSQL).
            let dir = if w.len() <= 2 {
                Direction::Forward(Some(1))
            } else if kw(i, "next") {
                i += 1;
                Direction::Forward(Some(1))
            } else if kw(i, "prior") {
                i += 1;
                Direction::Backward(Some(1))
            } else if kw(i, "first") {
                i += 1;
                Direction::Absolute(1)
            } else if kw(i, "last") {
                i += 1;
                Direction::Absolute(-1)
            } else if kw(i, "absolute") || kw(i, "relative") {
                let n = count(w, i + 1).ok_or_else(bad)?;
                let d = if kw(i, "absolute") {
                    Direction::Absolute(n)
                } else {
                    Direction::Relative(n)
                };
                i += 2;
                d
            } else if kw(i, "all") {
                i += 1;
                Direction::Forward(None)
            } else if kw(i, "forward") || kw(i, "backward") {
                let back = kw(i, "backward");
                i += 1;
                let n = if kw(i, "all") {
                    i += 1;
                    None
                } else if let Some(n) = count(w, i) {
                    i += 1;
                    Some(n)
                } else {
                    Some(1)
                };
                match (back, n) {
                    (false, None) => Direction::Forward(None),
                    (true, None) => Direction::Backward(None),
                    (false, Some(n)) if n >= 0 => Direction::Forward(Some(n as u64)),
                    (false, Some(n)) => Direction::Backward(Some(n.unsigned_abs())),
                    (true, Some(n)) if n >= 0 => Direction::Backward(Some(n as u64)),
                    (true, Some(n)) => Direction::Forward(Some(n.unsigned_abs())),
                }
            } else if w[i].0.starts_with(['-', '+'])
                || w[i].0.starts_with(|c: char| c.is_ascii_digit())
            {
                let n = count(w, i).ok_or_else(bad)?;
                i += 1;
                if n >= 0 {
                    Direction::Forward(Some(n as u64))
                } else {
                    Direction::Backward(Some(n.unsigned_abs()))
                }
            } else {
                Direction::Forward(Some(1))
            };
            if w.len() > i + 1 && (kw(i, "from") || kw(i, "in")) {
                i += 1;
            }
            let [(name, quoted, _)] = &w[i.min(w.len())..] else {
                return Err(bad());
            };
            // FROM and IN are reserved: a name only when quoted.
            if !quoted && (name == "from" || name == "in") {
                return Err(bad());
            }
            Ok(Command::Fetch {
                name: name.clone(),
                dir,
                moving,
            })
        }
    }
}

/// A declared cursor.
pub struct Cursor {
    pub rows: RecordBatch,
    pub binary: bool,
    hold: bool,
    no_scroll: bool,
    /// Declared in the transaction block now open (a ROLLBACK drops it,
    /// WITH HOLD or not).
    in_this_block: bool,
    /// 0: before the first row; `rows + 1`: after the last; else on row
    /// `pos` (1-based), as PostgreSQL counts.
    pos: u64,
}

/// A connection's cursors.
#[derive(Default)]
pub struct Cursors(std::sync::Mutex<HashMap<String, Cursor>>);

fn missing(name: &str) -> Failure {
    Failure::new("34000", format!("cursor \"{name}\" does not exist"))
}

impl Cursors {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cursor>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `name` is declared (DECLARE of a second one is 42P03).
    pub fn check_new(&self, name: &str) -> Result<(), Failure> {
        if self.lock().contains_key(name) {
            return Err(Failure::new(
                "42P03",
                format!("cursor \"{name}\" already exists"),
            ));
        }
        Ok(())
    }

    pub fn declare(
        &self,
        name: String,
        rows: RecordBatch,
        hold: bool,
        no_scroll: bool,
        binary: bool,
        in_block: bool,
    ) {
        self.lock().insert(
            name,
            Cursor {
                rows,
                binary,
                hold,
                no_scroll,
                in_this_block: in_block,
                pos: 0,
            },
        );
    }

    /// The columns of cursor `name` and whether they go in binary.
    pub fn describe(&self, name: &str) -> Option<(SchemaRef, bool)> {
        self.lock().get(name).map(|c| (c.rows.schema(), c.binary))
    }

    /// FETCH or MOVE: the rows passed over (in the order fetched) and
    /// the cursor's new position.
    pub fn fetch(&self, name: &str, dir: Direction) -> Result<(RecordBatch, bool), Failure> {
        let mut all = self.lock();
        let c = all.get_mut(name).ok_or_else(|| missing(name))?;
        let n = c.rows.num_rows() as u64;
        let backward = match dir {
            Direction::Backward(Some(0)) | Direction::Forward(_) => false,
            Direction::Backward(_) => true,
            Direction::Absolute(k) => k < 0 || (k as u64) < c.pos,
            Direction::Relative(k) => k < 0,
        };
        if backward && c.no_scroll {
            return Err(Failure::new("55000", "cursor can only scan forward"));
        }
        // Row indexes (0-based) passed over, in order.
        let mut picked: Vec<u64> = Vec::new();
        match dir {
            Direction::Forward(k) => {
                let k = k.unwrap_or(u64::MAX);
                let last = c.pos.saturating_add(k).min(n);
                picked.extend(c.pos.min(n)..last);
                c.pos = if k == 0 {
                    c.pos
                } else if c.pos.saturating_add(k) > n {
                    n + 1
                } else {
                    c.pos + k
                };
                // FETCH 0 (FORWARD 0) gives the current row again.
                if k == 0 && (1..=n).contains(&c.pos) {
                    picked.push(c.pos - 1);
                }
            }
            Direction::Backward(k) => {
                let k = k.unwrap_or(u64::MAX);
                if k == 0 {
                    if (1..=n).contains(&c.pos) {
                        picked.push(c.pos - 1);
                    }
                } else {
                    let from = c.pos.min(n + 1);
                    // Rows from - 1 down to max(from - k, 1).
                    let low = from.saturating_sub(k).max(1);
                    let mut r = from.saturating_sub(1);
                    while r >= low && r >= 1 {
                        picked.push(r - 1);
                        r -= 1;
                    }
                    c.pos = from.saturating_sub(k);
                }
            }
            Direction::Absolute(k) | Direction::Relative(k) => {
                let target: i128 = match dir {
                    Direction::Absolute(k) if k < 0 => n as i128 + 1 + k as i128,
                    Direction::Absolute(_) => k as i128,
                    _ => c.pos as i128 + k as i128,
                };
                c.pos = target.clamp(0, n as i128 + 1) as u64;
                if (1..=n).contains(&c.pos) {
                    picked.push(c.pos - 1);
                }
            }
        }
        let idx = arrow_array::UInt64Array::from(picked);
        let cols = c
            .rows
            .columns()
            .iter()
            .map(|a| arrow_select::take::take(a, &idx, None))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Failure::internal(e.to_string()))?;
        let out = RecordBatch::try_new_with_options(
            c.rows.schema(),
            cols,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(idx.len())),
        )
        .map_err(|e| Failure::internal(e.to_string()))?;
        Ok((out, c.binary))
    }

    /// Whether cursor `name` has no row after its position.
    pub fn at_end(&self, name: &str) -> bool {
        self.lock()
            .get(name)
            .is_none_or(|c| c.pos >= c.rows.num_rows() as u64)
    }

    /// CLOSE name (34000 when there is none) or CLOSE ALL.
    pub fn close(&self, name: Option<&str>) -> Result<(), Failure> {
        let mut all = self.lock();
        match name {
            None => all.clear(),
            Some(n) => {
                all.remove(n).ok_or_else(|| missing(n))?;
            }
        }
        Ok(())
    }

    /// A transaction block ended: its cursors WITHOUT HOLD close, and on
    /// ROLLBACK those it declared WITH HOLD too.
    pub fn end_block(&self, rollback: bool) {
        let mut all = self.lock();
        all.retain(|_, c| c.hold && !(rollback && c.in_this_block));
        for c in all.values_mut() {
            c.in_this_block = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn cursors(n: i64) -> Cursors {
        let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "x",
            arrow_schema::DataType::Int64,
            false,
        )]));
        let rows = RecordBatch::try_new(
            schema,
            vec![Arc::new(arrow_array::Int64Array::from_iter_values(1..=n))],
        )
        .expect("batch");
        let c = Cursors::default();
        c.declare("c".into(), rows, false, false, false, true);
        c
    }

    fn fetch(c: &Cursors, sql: &str) -> Vec<i64> {
        let Some(Ok(Command::Fetch { name, dir, .. })) = command(sql) else {
            panic!("{sql} is not a FETCH");
        };
        let (b, _) = c.fetch(&name, dir).expect("fetch");
        b.column(0)
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .expect("ints")
            .values()
            .to_vec()
    }

    /// Each step's rows are PostgreSQL's for a cursor over 1..=5.
    #[test]
    fn moves_as_postgresql_moves() {
        let c = cursors(5);
        assert_eq!(fetch(&c, "FETCH 2 FROM c"), [1, 2]);
        assert_eq!(fetch(&c, "fetch next in c"), [3]);
        assert_eq!(fetch(&c, "FETCH PRIOR FROM c"), [2]);
        assert_eq!(fetch(&c, "FETCH 0 FROM c"), [2]);
        assert_eq!(fetch(&c, "FETCH FORWARD ALL FROM c"), [3, 4, 5]);
        assert_eq!(fetch(&c, "FETCH NEXT FROM c"), Vec::<i64>::new());
        assert_eq!(fetch(&c, "FETCH BACKWARD 2 FROM c"), [5, 4]);
        assert_eq!(fetch(&c, "FETCH ABSOLUTE -1 FROM c"), [5]);
        assert_eq!(fetch(&c, "FETCH RELATIVE -2 FROM c"), [3]);
        assert_eq!(fetch(&c, "FETCH FIRST FROM c"), [1]);
        assert_eq!(fetch(&c, "FETCH BACKWARD ALL FROM c"), Vec::<i64>::new());
        assert_eq!(fetch(&c, "FETCH -1 FROM c"), Vec::<i64>::new());
        assert_eq!(fetch(&c, "FETCH ABSOLUTE 9 FROM c"), Vec::<i64>::new());
        assert_eq!(fetch(&c, "FETCH BACKWARD ALL FROM c"), [5, 4, 3, 2, 1]);
        assert_eq!(fetch(&c, "FETCH ALL c"), [1, 2, 3, 4, 5]);
        assert_eq!(fetch(&c, "FETCH LAST FROM c"), [5]);
        assert_eq!(fetch(&c, "FETCH c"), Vec::<i64>::new());
    }

    #[test]
    fn declare_reads_its_options_and_keeps_the_query_as_written() {
        let Some(Ok(Command::Declare {
            name,
            hold,
            no_scroll,
            binary,
            query,
        })) = command(
            "DECLARE \"My \"\"c\"\"\" BINARY NO SCROLL CURSOR WITH HOLD FOR SELECT 'For' FROM t",
        )
        else {
            panic!("not a DECLARE");
        };
        assert_eq!(name, "My \"c\"");
        assert!(hold && no_scroll && binary);
        assert_eq!(query, "SELECT 'For' FROM t");
        assert!(matches!(command("DECLARE c CURSOR SELECT 1"), Some(Err(_))));
        assert!(matches!(command("FETCH FORWARD FROM"), Some(Err(_))));
        assert_eq!(
            command("CLOSE ALL").and_then(Result::ok),
            Some(Command::Close(None))
        );
        assert_eq!(
            command("close \"C\"").and_then(Result::ok),
            Some(Command::Close(Some("C".into())))
        );
        assert!(command("SELECT 1").is_none());
    }

    #[test]
    fn statements_read_as_postgresql_reads_them() {
        let fetch = |sql: &str| match command(sql) {
            Some(Ok(Command::Fetch { name, dir, .. })) => Ok((name, dir)),
            Some(Ok(other)) => panic!("{sql}: {other:?}"),
            Some(Err(f)) => Err(f.code),
            None => panic!("{sql}: not a cursor statement"),
        };
        // Comments anywhere, a sign apart from its number.
        assert_eq!(
            fetch("FETCH /* x */ c -- hi"),
            Ok(("c".into(), Direction::Forward(Some(1))))
        );
        assert_eq!(
            fetch("FETCH - 2 c"),
            Ok(("c".into(), Direction::Backward(Some(2))))
        );
        assert_eq!(
            fetch("FETCH RELATIVE - 1 IN c"),
            Ok(("c".into(), Direction::Relative(-1)))
        );
        // One word is the cursor's name, keyword or not.
        assert_eq!(
            fetch("FETCH next"),
            Ok(("next".into(), Direction::Forward(Some(1))))
        );
        assert_eq!(
            fetch("MOVE absolute"),
            Ok(("absolute".into(), Direction::Forward(Some(1))))
        );
        // Counts are 32-bit, as in PostgreSQL's grammar.
        assert_eq!(
            fetch("FETCH 2147483647 c").map(|(_, d)| d),
            Ok(Direction::Forward(Some(2147483647)))
        );
        assert_eq!(fetch("FETCH 2147483648 c"), Err("42601"));
        assert_eq!(fetch("FETCH ABSOLUTE -9223372036854775808 c"), Err("42601"));
        let code = |sql: &str| command(sql).and_then(|r| r.err()).map(|f| f.code);
        assert_eq!(code("DECLARE \"\" CURSOR FOR SELECT 1"), Some("42601"));
        assert_eq!(
            code("DECLARE d NO SCROLL SCROLL CURSOR FOR SELECT 1"),
            Some("42P11")
        );
        assert_eq!(code("DECLARE d CURSOR FOR SHOW ALL"), Some("42601"));
        assert_eq!(code("DECLARE /* c */ d CURSOR FOR (SELECT 1)"), None);
        let Some(Ok(Command::Declare { query, .. })) =
            command("DECLARE d CURSOR FOR SELECT '--' /* k */ FROM t -- end")
        else {
            panic!("not a DECLARE");
        };
        assert_eq!(query, "SELECT '--' /* k */ FROM t -- end");
    }

    #[test]
    fn blocks_end_their_cursors_as_in_postgresql() {
        let c = cursors(1);
        let rows = c.fetch("c", Direction::Forward(Some(0))).expect("c").0;
        c.declare("held".into(), rows.clone(), true, false, false, true);
        c.declare("older".into(), rows, true, false, false, false);
        c.end_block(true);
        assert!(c.describe("c").is_none() && c.describe("held").is_none());
        assert!(c.describe("older").is_some());
        assert_eq!(c.close(Some("c")).map_err(|f| f.code), Err("34000"));
        assert!(c.check_new("older").is_err());
        c.close(None).expect("close all");
        assert!(c.describe("older").is_none());
    }

    #[test]
    fn no_scroll_cursors_refuse_to_go_back() {
        let c = cursors(3);
        let rows = c.fetch("c", Direction::Forward(None)).expect("c").0;
        c.declare("f".into(), rows, false, true, false, true);
        assert_eq!(
            c.fetch("f", Direction::Forward(Some(2)))
                .expect("forward")
                .0
                .num_rows(),
            2
        );
        assert_eq!(
            c.fetch("f", Direction::Backward(Some(1)))
                .map(|_| ())
                .map_err(|f| f.code),
            Err("55000")
        );
    }
}
