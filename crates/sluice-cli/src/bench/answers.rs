//! A benchmark's answers checked against the peer's before any time is
//! reported: a fast wrong answer is not a result.
//!
//! For: comparing the rows of a query as sluice and a peer (DuckDB)
//! answer it, cell by cell, as text. Numbers with a fraction (averages
//! are doubles in both engines, summed in different orders) agree to a
//! relative 1e-9, or are equal once the one written with more decimal
//! places is rounded to the other's (a DECIMAL quotient beside a peer's
//! double); every other cell must be equal as written (a decimal's
//! digits, a count, a date, a text). Not for: timing.

use anyhow::{Result, bail};
use sluice::batch::format_value;

/// The rows of a sluice result as text, NULL as `None`.
pub fn sluice_rows(r: &sluice::query::QueryResult) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    for b in &r.batches {
        for i in 0..b.num_rows() {
            out.push(
                b.columns()
                    .iter()
                    .map(|c| format_value(c.as_ref(), i))
                    .collect(),
            );
        }
    }
    out
}

/// Rows a peer printed as JSON: an array of arrays of strings or nulls.
pub fn json_rows(v: &serde_json::Value) -> Result<Vec<Vec<Option<String>>>> {
    let Some(rows) = v.as_array() else {
        bail!("the peer's answer is not a list of rows: {v}");
    };
    rows.iter()
        .map(|r| {
            let Some(cells) = r.as_array() else {
                bail!("the peer's row is not a list: {r}");
            };
            Ok(cells
                .iter()
                .map(|c| match c {
                    serde_json::Value::Null => None,
                    serde_json::Value::String(s) => Some(s.clone()),
                    other => Some(other.to_string()),
                })
                .collect())
        })
        .collect()
}

/// Whether two cells agree (see the module's text).
fn same_cell(a: Option<&str>, b: Option<&str>) -> bool {
    let (a, b) = match (a, b) {
        (None, None) => return true,
        (Some(a), Some(b)) => (a, b),
        _ => return false,
    };
    if a == b
        || (a.eq_ignore_ascii_case(b)
            && matches!(a.to_ascii_lowercase().as_str(), "true" | "false"))
    {
        return true;
    }
    // An instant shown in UTC (`… 10:00:00+00`) and a UTC time without
    // a zone (a peer's TIMESTAMP of the same UTC times) are the same.
    if let (Some(x), Some(y)) = (utc_plain(a), utc_plain(b))
        && x == y
    {
        return true;
    }
    let fractional = |s: &str| s.contains(['.', 'e', 'E']);
    // Decimals written to different scales (a decimal quotient, of 4
    // places or more, beside a peer's double): equal once the longer is
    // rounded to the shorter's places.
    if let (Ok(x), Ok(y)) = (a.parse::<f64>(), b.parse::<f64>())
        && !a.contains(['e', 'E'])
        && !b.contains(['e', 'E'])
        && a.contains('.')
        && b.contains('.')
    {
        let places = |s: &str| s.split_once('.').map_or(0, |(_, f)| f.len());
        let p = places(a).min(places(b)) as i32;
        let round = |v: f64| (v * 10f64.powi(p)).round();
        if p >= 4 && round(x) == round(y) {
            return true;
        }
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) if fractional(a) || fractional(b) => {
            let scale = x.abs().max(y.abs());
            // Decimals with the same digits but written to other scales
            // (1.50 and 1.5) are equal; doubles agree to 1e-9.
            (x - y).abs() <= 1e-9 * scale || x == y
        }
        _ => false,
    }
}

/// A date and time (`YYYY-MM-DD HH:MM:SS…`, `T` or a space) without a
/// zone, or with UTC's (`+00`, `+00:00`, `Z`), as it reads without one;
/// `None` for anything else.
fn utc_plain(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b' ' | b'T') {
        return None;
    }
    let body = ["+00:00", "+00", "Z"]
        .iter()
        .find_map(|z| s.strip_suffix(z))
        .unwrap_or(s);
    if body.ends_with(|c: char| !c.is_ascii_digit()) || body[19..].contains(['+', '-']) {
        return None;
    }
    Some(body.replacen('T', " ", 1))
}

/// Fails, naming the query and the first difference, unless `ours` and
/// `theirs` agree row by row; `ordered`: the query fixes the order of
/// its rows (else both are sorted first).
pub fn check(
    what: &str,
    peer: &str,
    ordered: bool,
    ours: &[Vec<Option<String>>],
    theirs: &[Vec<Option<String>>],
) -> Result<()> {
    check_between(what, ("sluice", ours), (peer, theirs), ordered)
}

/// The answers of a scenario to one question, from every engine and run
/// (every thread count, shard count, connection count): each is checked
/// against the first as it comes, so a run whose answer differs fails
/// the scenario before any time is reported.
pub struct Agreement {
    what: String,
    first: Option<(String, Rows)>,
}

/// Rows as text, NULL as `None`.
pub type Rows = Vec<Vec<Option<String>>>;

impl Agreement {
    /// An agreement about `what` (named in the error of a difference).
    pub fn new(what: impl Into<String>) -> Self {
        Agreement {
            what: what.into(),
            first: None,
        }
    }

    /// `who`'s answer: the first is kept; the others must equal it
    /// (compared sorted, as sets of rows).
    pub fn add(&mut self, who: &str, rows: Rows) -> Result<()> {
        match &self.first {
            None => {
                self.first = Some((who.to_string(), rows));
                Ok(())
            }
            Some((first, theirs)) => {
                check_between(&self.what, (who, &rows), (first, theirs), false)
            }
        }
    }

    /// How many rows the agreed answer has (0 before the first).
    pub fn rows(&self) -> usize {
        self.first.as_ref().map_or(0, |(_, r)| r.len())
    }
}

/// The answer of a query over a sluice database, as text rows.
pub fn sluice_answer(db: &std::path::Path, sql: &str) -> Result<Rows> {
    use anyhow::Context;
    let d = sluice::store::Database::open(db)
        .with_context(|| format!("opening {} to check its answer", db.display()))?;
    let r = sluice::query::query(&d, sql, None)
        .with_context(|| format!("the check query {sql:?} on {}", db.display()))?;
    Ok(sluice_rows(&r))
}

/// Like [`check`], with a name for each side.
pub fn check_between(
    what: &str,
    (us, ours): (&str, &[Vec<Option<String>>]),
    (peer, theirs): (&str, &[Vec<Option<String>>]),
    ordered: bool,
) -> Result<()> {
    let key = |r: &Vec<Option<String>>| {
        r.iter()
            .map(|c| c.clone().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    let (mut o, mut t) = (ours.to_vec(), theirs.to_vec());
    if !ordered {
        o.sort_by_key(key);
        t.sort_by_key(key);
    }
    let show = |r: &[Option<String>]| {
        r.iter()
            .map(|c| c.as_deref().unwrap_or("NULL"))
            .collect::<Vec<_>>()
            .join(" | ")
    };
    if o.len() != t.len() {
        bail!(
            "{what}: {us} answered {} rows, {peer} {} — no time is reported for a wrong answer",
            o.len(),
            t.len()
        );
    }
    for (i, (a, b)) in o.iter().zip(&t).enumerate() {
        let agree = a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| same_cell(x.as_deref(), y.as_deref()));
        if !agree {
            bail!(
                "{what}: row {} differs — {us}: {}; {peer}: {} — no time is reported for a wrong answer",
                i + 1,
                show(a),
                show(b)
            );
        }
    }
    Ok(())
}

/// Whether `sql` fixes the order of its rows (an ORDER BY at its end).
pub fn is_ordered(sql: &str) -> bool {
    sql.to_ascii_uppercase().contains("ORDER BY")
}

/// Python that defines `rows(con, q)`: the rows of `q` as JSON-ready
/// lists of strings (NULL as None), as `str()` writes each value.
pub const DUCKDB_ROWS: &str = r#"
def rows(con, q):
    return [[None if v is None else str(v) for v in r] for r in con.execute(q).fetchall()]
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn r(cells: &[&str]) -> Vec<Option<String>> {
        cells
            .iter()
            .map(|c| (*c != "NULL").then(|| c.to_string()))
            .collect()
    }

    #[test]
    fn cells_agree_as_numbers_only_with_a_fraction() {
        assert!(same_cell(
            Some("25.522005853257337"),
            Some("25.52200585325734")
        ));
        assert!(same_cell(Some("1.50"), Some("1.5")));
        // A decimal quotient beside a double: equal to the quotient's places.
        assert!(same_cell(Some("0.03443589"), Some("0.0344358904066548")));
        assert!(!same_cell(Some("0.03443588"), Some("0.0344358904066548")));
        assert!(!same_cell(Some("10.04"), Some("10.0")));
        assert!(same_cell(Some("true"), Some("True")));
        assert!(same_cell(None, None));
        assert!(!same_cell(Some("10"), Some("10.0000001")));
        assert!(!same_cell(Some("37734107.00"), Some("40193907.00")));
        assert!(!same_cell(Some("A"), Some("N")));
        assert!(!same_cell(None, Some("")));
        // UTC instants and UTC times without a zone; other zones differ.
        assert!(same_cell(
            Some("2013-01-01 10:00:00+00"),
            Some("2013-01-01 10:00:00")
        ));
        assert!(same_cell(
            Some("2013-01-01T10:00:00Z"),
            Some("2013-01-01 10:00:00+00:00")
        ));
        assert!(!same_cell(
            Some("2013-01-01 10:00:00+01"),
            Some("2013-01-01 10:00:00")
        ));
        assert!(!same_cell(
            Some("2013-01-01 10:00:01+00"),
            Some("2013-01-01 10:00:00")
        ));
    }

    #[test]
    fn a_wrong_group_fails_the_check() {
        let ours = vec![r(&["A", "1718235"]), r(&["N", "2609846"])];
        let theirs = vec![r(&["A", "1478493"]), r(&["N", "2609846"])];
        let e = check("q1", "duckdb", true, &ours, &theirs).unwrap_err();
        assert!(e.to_string().contains("row 1 differs"), "{e}");
        assert!(check("q1", "duckdb", true, &ours, &ours).is_ok());
        // Unordered answers are compared sorted; ordered ones as they are.
        let swapped = vec![ours[1].clone(), ours[0].clone()];
        assert!(check("q", "duckdb", false, &ours, &swapped).is_ok());
        assert!(check("q", "duckdb", true, &ours, &swapped).is_err());
        assert!(check("q", "duckdb", true, &ours, &ours[..1]).is_err());
    }

    #[test]
    fn an_agreement_fails_on_the_first_run_that_differs() {
        let mut a = Agreement::new("ingest count and sums");
        a.add("sluice threads=1", vec![r(&["3", "6"])]).unwrap();
        a.add("sluice threads=2", vec![r(&["3", "6"])]).unwrap();
        let e = a.add("duckdb threads=1", vec![r(&["3", "7"])]).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("duckdb threads=1: 3 | 7"), "{msg}");
        assert!(msg.contains("sluice threads=1: 3 | 6"), "{msg}");
        assert!(a.add("x", vec![]).is_err());
        assert_eq!(a.rows(), 1);
    }
}
