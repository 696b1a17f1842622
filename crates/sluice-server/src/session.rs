//! What clients send besides queries: SET, SHOW, RESET, BEGIN/COMMIT/
//! ROLLBACK, `SELECT version()` and `current_setting(...)`, and the
//! catalog questions of psql's `\dt` and `\d TABLE` and of
//! `information_schema`. Answered here, before the query engine.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType as A, Field, Schema, SchemaRef};

use crate::Failure;

/// The server version clients are told: numeric first (drivers parse it).
pub const SERVER_VERSION: &str = "16.0 (sluice)";

/// Settings a client may SET, with their defaults; `true`: reported to
/// the client (ParameterStatus) when changed.
const SETTINGS: &[(&str, &str, bool)] = &[
    ("application_name", "", true),
    ("client_encoding", "UTF8", true),
    ("datestyle", "ISO, MDY", true),
    ("intervalstyle", "postgres", true),
    ("timezone", "UTC", true),
    ("extra_float_digits", "1", false),
    ("search_path", "\"$user\", public", false),
    ("statement_timeout", "0", false),
    ("lock_timeout", "0", false),
    ("idle_in_transaction_session_timeout", "0", false),
    ("client_min_messages", "notice", false),
    ("standard_conforming_strings", "on", true),
    ("bytea_output", "hex", false),
    ("default_transaction_isolation", "read committed", false),
    ("transaction_isolation", "read committed", false),
    ("default_transaction_read_only", "on", true),
    ("transaction_read_only", "on", false),
    ("lc_messages", "C", false),
    ("lc_monetary", "C", false),
    ("lc_numeric", "C", false),
    ("lc_time", "C", false),
    ("jit", "off", false),
    ("synchronous_commit", "on", false),
    ("row_security", "on", false),
    ("work_mem", "4MB", false),
    ("max_parallel_workers_per_gather", "0", false),
    ("geqo", "on", false),
    // Read only.
    ("server_version", SERVER_VERSION, false),
    ("server_version_num", "160000", false),
    ("server_encoding", "UTF8", false),
    ("integer_datetimes", "on", false),
    ("is_superuser", "off", false),
    ("max_identifier_length", "63", false),
];

const READ_ONLY: &[&str] = &[
    "server_version",
    "server_version_num",
    "server_encoding",
    "integer_datetimes",
    "is_superuser",
    "max_identifier_length",
];

/// The answer to a statement that is not a query of the store.
pub enum Answer {
    /// A command tag, after setting `name` to `value` (reported to the
    /// client when it is one it tracks); `local`: until the transaction
    /// block ends (`SET LOCAL`).
    Set {
        name: String,
        value: String,
        local: bool,
    },
    /// Settings back to their defaults (`name`, or all), the client told
    /// of those it tracks; `tag`: the command's (RESET, SET, DISCARD ALL).
    Reset {
        name: Option<String>,
        tag: &'static str,
    },
    /// BEGIN or START TRANSACTION, with the isolation level it names.
    Begin(Option<&'static str>),
    /// COMMIT (or, `rollback`, ROLLBACK); `chain`: `AND CHAIN`, a new
    /// block at the same isolation level begins at once.
    End {
        rollback: bool,
        chain: bool,
    },
    /// `SAVEPOINT name`, `RELEASE [SAVEPOINT] name`, `ROLLBACK TO
    /// [SAVEPOINT] name` (see [`savepoint`]).
    Savepoint(Savepoint, String),
    /// A command tag alone (DISCARD ALL, DEALLOCATE ...).
    Tag(&'static str),
    Rows(RecordBatch),
}

impl Answer {
    /// The result columns of this answer (none for a tag).
    pub fn schema(&self) -> Option<SchemaRef> {
        match self {
            Answer::Rows(b) => Some(b.schema()),
            _ => None,
        }
    }
}

/// What a savepoint statement does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Savepoint {
    Set,
    Release,
    RollbackTo,
}

impl Savepoint {
    fn command(self) -> &'static str {
        match self {
            Savepoint::Set => "SAVEPOINT",
            Savepoint::Release => "RELEASE SAVEPOINT",
            Savepoint::RollbackTo => "ROLLBACK TO SAVEPOINT",
        }
    }

    /// The command tag PostgreSQL answers with.
    pub fn tag(self) -> &'static str {
        match self {
            Savepoint::Set => "SAVEPOINT",
            Savepoint::Release => "RELEASE",
            Savepoint::RollbackTo => "ROLLBACK",
        }
    }
}

/// The words of `sql`, a double-quoted identifier one word with its
/// quotes (`""` inside it a quote); `None` when a quote is not closed.
fn words(sql: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = sql.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() || c == ';' {
            chars.next();
            continue;
        }
        let mut w = String::new();
        if c == '"' {
            w.push(chars.next()?);
            loop {
                let c = chars.next()?;
                w.push(c);
                if c == '"' {
                    if chars.peek() == Some(&'"') {
                        w.push(chars.next()?);
                    } else {
                        break;
                    }
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || c == ';' || c == '"' {
                    break;
                }
                w.push(c);
                chars.next();
            }
        }
        out.push(w);
    }
    Some(out)
}

/// The savepoint a SAVEPOINT, RELEASE or ROLLBACK TO statement names
/// (`None`: not one name where one belongs): a quoted name as written,
/// else lower-cased, as PostgreSQL folds it.
fn savepoint_name(sql: &str, what: Savepoint) -> Option<String> {
    let w = words(sql)?;
    let lower: Vec<String> = w.iter().map(|x| x.to_ascii_lowercase()).collect();
    let mut i = 1;
    let is = |i: usize, k: &str| lower.get(i).is_some_and(|x| x == k);
    match what {
        Savepoint::Set => {}
        Savepoint::Release => {
            if is(i, "savepoint") && w.len() > 2 {
                i += 1;
            }
        }
        Savepoint::RollbackTo => {
            if is(i, "work") || is(i, "transaction") {
                i += 1;
            }
            if !is(i, "to") {
                return None;
            }
            i += 1;
            if is(i, "savepoint") && w.len() > i + 1 {
                i += 1;
            }
        }
    }
    let [name] = &w[i.min(w.len())..] else {
        return None;
    };
    if name.len() >= 2 && name.starts_with('"') && name.ends_with('"') {
        return Some(name[1..name.len() - 1].replace("\"\"", "\""));
    }
    Some(name.to_ascii_lowercase())
}

/// A setting's name as stored: lower case, `time zone` as `timezone`.
fn canonical(name: &str) -> String {
    let n = name.trim().trim_matches('"').to_ascii_lowercase();
    match n.as_str() {
        "time zone" => "timezone".into(),
        "transaction isolation level" => "transaction_isolation".into(),
        _ => n,
    }
}

/// A setting's value in this session.
pub fn setting(settings: &HashMap<String, String>, name: &str) -> Option<String> {
    let n = canonical(name);
    if let Some(v) = settings.get(&format!("sluice.{n}")) {
        return Some(v.clone());
    }
    // Outside a block, the level the next one will have.
    if n == "transaction_isolation" {
        return setting(settings, "default_transaction_isolation");
    }
    SETTINGS
        .iter()
        .find(|(k, _, _)| *k == n)
        .map(|(_, v, _)| v.to_string())
}

/// Whether the client is told of `name`'s changes.
pub fn reported(name: &str) -> Option<&'static str> {
    match name {
        "application_name" => Some("application_name"),
        "client_encoding" => Some("client_encoding"),
        "datestyle" => Some("DateStyle"),
        "intervalstyle" => Some("IntervalStyle"),
        "timezone" => Some("TimeZone"),
        "standard_conforming_strings" => Some("standard_conforming_strings"),
        _ => None,
    }
}

/// Checks a SET before it is applied.
fn check_set(name: &str, value: &str) -> Result<(), Failure> {
    check_name(name)?;
    check_value(name, value)
}

/// Refuses a setting sluice does not have, or one no SET may change.
fn check_name(name: &str) -> Result<(), Failure> {
    if READ_ONLY.contains(&name) {
        return Err(Failure::new(
            "55P02",
            format!("parameter \"{name}\" cannot be changed"),
        ));
    }
    if !SETTINGS.iter().any(|(k, _, _)| *k == name) {
        return Err(Failure::new(
            "42704",
            format!(
                "unrecognized configuration parameter \"{name}\" (sluice accepts: {})",
                accepted()
            ),
        ));
    }
    Ok(())
}

/// Refuses a value of `name` that sluice cannot take.
fn check_value(name: &str, value: &str) -> Result<(), Failure> {
    let v = value.to_ascii_lowercase();
    match name {
        "client_encoding" if !matches!(v.as_str(), "utf8" | "utf-8" | "unicode" | "default") => {
            Err(Failure::new(
                "22023",
                format!("sluice speaks only UTF8, not client_encoding {value}"),
            ))
        }
        "datestyle" if !v.contains("iso") && v != "default" => Err(Failure::new(
            "0A000",
            format!("sluice writes dates in the ISO style only, not DateStyle {value}"),
        )),
        "standard_conforming_strings" if !matches!(v.as_str(), "on" | "true" | "default") => {
            Err(Failure::new(
                "0A000",
                "standard_conforming_strings is always on in sluice",
            ))
        }
        "statement_timeout" => timeout_ms(value).map(|_| ()),
        "transaction_isolation" | "default_transaction_isolation"
            if !matches!(
                v.as_str(),
                "serializable" | "repeatable read" | "read committed" | "read uncommitted"
            ) =>
        {
            Err(Failure::new(
                "22023",
                format!("invalid value for parameter \"{name}\": \"{value}\""),
            ))
        }
        "timezone" => zone_label(value).map(|_| ()).map_err(|e| {
            Failure::new(
                "22023",
                format!(
                    "invalid value for parameter \"TimeZone\": {e} (give a zone of the tz database such as 'Europe/Berlin', UTC, or a fixed offset in PostgreSQL's POSIX form: 'UTC+3' is 3 hours west of UTC, 'UTC-05:30' east)"
                ),
            )
        }),
        _ => Ok(()),
    }
}

/// A `TimeZone` setting as an Arrow time zone: a fixed offset (see
/// [`fixed_zone_of`]) as `+HH:MM`, else a zone of the tz database by its
/// own spelling (`europe/berlin` is `Europe/Berlin`); `None` for neither.
pub fn zone_of(value: &str) -> Option<String> {
    zone_label(value).ok()
}

/// [`zone_of`], saying why a zone is refused.
fn zone_label(value: &str) -> Result<String, String> {
    if let Some(secs) = fixed_zone_of(value) {
        return Ok(sluice::batch::zone_label(secs));
    }
    let v = value.trim();
    if v.starts_with(['+', '-']) || v.parse::<f64>().is_ok() {
        return Err(format!("\"{v}\" is no offset of less than 16 hours"));
    }
    // A name as written: PostgreSQL refuses one with spaces around it.
    sluice::zone::canonical_name(value)
}

/// A `TimeZone` setting as it is kept and shown (SHOW, the client's
/// ParameterStatus): a fixed offset as written, a named zone as the tz
/// database spells it (`europe/berlin` is shown `Europe/Berlin`, the name
/// a client's own zone library knows).
pub fn zone_setting(value: &str) -> String {
    match fixed_zone_of(value) {
        Some(_) => value.to_string(),
        None => sluice::zone::canonical_name(value).unwrap_or_else(|_| value.to_string()),
    }
}

/// Seconds east of UTC of a `TimeZone` setting of a fixed offset, read as
/// PostgreSQL reads one: a number is hours *east* of UTC (`-7`, `'5.5'`,
/// quoted or not); else UTC's names, or a fixed offset in POSIX form,
/// hours *west* of UTC (`UTC+3`, `GMT-05:30`, `+05:30`); `None` for a
/// zone with rules (`Europe/Berlin`), an unreadable one, or one of 16
/// hours or more.
pub fn fixed_zone_of(value: &str) -> Option<i64> {
    let v = value.trim();
    if let Ok(h) = v.parse::<f64>() {
        return (h.is_finite() && h.abs() < 16.0).then(|| (h * 3600.0).round() as i64);
    }
    let upper = v.to_ascii_uppercase();
    if sluice::parse::value::zone_seconds(&upper) == Some(0) && !upper.starts_with(['+', '-']) {
        return Some(0);
    }
    let rest = ["UTC", "GMT", "ETC/GMT", "ETC/UTC", ""]
        .iter()
        .find_map(|p| upper.strip_prefix(p).filter(|r| r.starts_with(['+', '-'])))?;
    let (sign, body) = rest.split_at(1);
    let (h, m) = match body.split_once(':') {
        Some((h, m)) => (h, m),
        None => (body, "0"),
    };
    let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    if !(0..16).contains(&h) || !(0..60).contains(&m) || body.is_empty() {
        return None;
    }
    let west = h * 3600 + m * 60;
    Some(if sign == "+" { -west } else { west })
}

fn accepted() -> String {
    SETTINGS
        .iter()
        .filter(|(k, _, _)| !READ_ONLY.contains(k))
        .map(|(k, _, _)| *k)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `statement_timeout` in milliseconds: `5000`, `'5s'`, `'100ms'`, `'1min'`.
pub fn timeout_ms(value: &str) -> Result<u64, Failure> {
    let v = value.trim().trim_matches('\'').trim().to_ascii_lowercase();
    if v == "default" {
        return Ok(0);
    }
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, unit) = v.split_at(split);
    let n: u64 = n.parse().map_err(|_| {
        Failure::new(
            "22023",
            format!("invalid value for parameter \"statement_timeout\": \"{value}\""),
        )
    })?;
    let scale = match unit.trim() {
        "" | "ms" => 1,
        "s" => 1000,
        "min" => 60_000,
        "h" => 3_600_000,
        _ => {
            return Err(Failure::new(
                "22023",
                format!(
                    "invalid value for parameter \"statement_timeout\": \"{value}\" (units: ms, s, min, h)"
                ),
            ));
        }
    };
    Ok(n.saturating_mul(scale))
}

/// The statement lower-cased with its spaces collapsed and without the
/// final semicolons, for matching.
fn normalize(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    for w in sql
        .trim()
        .trim_end_matches(|c: char| c == ';' || c.is_whitespace())
        .split_whitespace()
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&w.to_ascii_lowercase());
    }
    out
}

fn unquote(v: &str) -> String {
    let v = v.trim();
    if v.len() >= 2 && v.starts_with('\'') && v.ends_with('\'') {
        v[1..v.len() - 1].replace("''", "'")
    } else {
        v.trim_matches('"').to_string()
    }
}

/// The answer to `sql` when it is not a query of the store; `None` when
/// the engine should run it.
pub fn answer(sql: &str, settings: &HashMap<String, String>) -> Option<Result<Answer, Failure>> {
    let n = normalize(sql);
    let first = n.split(' ').next().unwrap_or("");
    match first {
        "begin" | "start" => return Some(isolation_level(&n).map(Answer::Begin)),
        "commit" | "end" => return Some(end(&n, false, settings)),
        "savepoint" | "release" => {
            let what = if first == "savepoint" {
                Savepoint::Set
            } else {
                Savepoint::Release
            };
            return Some(savepoint_answer(sql, what));
        }
        "rollback" | "abort" if n.contains(" to ") || n.ends_with(" to") => {
            return Some(savepoint_answer(sql, Savepoint::RollbackTo));
        }
        "rollback" | "abort" => return Some(end(&n, true, settings)),
        // A pool's reset between clients: the settings go back too.
        "discard" => {
            return Some(Ok(Answer::Reset {
                name: None,
                tag: "DISCARD ALL",
            }));
        }
        "deallocate" => return Some(Ok(Answer::Tag("DEALLOCATE"))),
        "set" => return Some(set(sql.trim().trim_end_matches(';'), &n)),
        "reset" => {
            let what = n.strip_prefix("reset ").unwrap_or("all");
            return Some(Ok(Answer::Reset {
                name: (what != "all").then(|| canonical(what)),
                tag: "RESET",
            }));
        }
        "show" => return Some(show(&n, settings)),
        _ => {}
    }
    if first != "select" {
        return None;
    }
    function(&n, settings)
}

/// Whether `sql` may run in a failed transaction block: COMMIT (which
/// rolls it back), ROLLBACK and ROLLBACK TO, as in PostgreSQL.
pub fn ends_block(sql: &str) -> bool {
    matches!(
        normalize(sql).split(' ').next().unwrap_or(""),
        "commit" | "end" | "rollback" | "abort"
    )
}

/// COMMIT or ROLLBACK (`rollback`), with or without `AND CHAIN`: in a
/// block only (25P01 outside, as PostgreSQL says).
fn end(n: &str, rollback: bool, settings: &HashMap<String, String>) -> Result<Answer, Failure> {
    let chain = n.trim_end_matches(';').trim_end().ends_with(" and chain");
    if chain && !in_block(settings) {
        let what = if rollback { "ROLLBACK" } else { "COMMIT" };
        return Err(Failure::new(
            "25P01",
            format!("{what} AND CHAIN can only be used in transaction blocks"),
        ));
    }
    Ok(Answer::End { rollback, chain })
}

fn savepoint_answer(sql: &str, what: Savepoint) -> Result<Answer, Failure> {
    match savepoint_name(sql, what) {
        Some(name) => Ok(Answer::Savepoint(what, name)),
        None => Err(Failure::syntax(format!(
            "{} needs one savepoint name: {}",
            what.command(),
            sql.trim()
        ))),
    }
}

/// The isolation level that `ISOLATION LEVEL …` in the normalized
/// statement `n` names, as PostgreSQL spells it; `None` when it names
/// none.
fn isolation_level(n: &str) -> Result<Option<&'static str>, Failure> {
    let Some((_, rest)) = n.split_once("isolation level ") else {
        return Ok(None);
    };
    let rest = rest.trim_end_matches(';');
    for level in [
        "serializable",
        "repeatable read",
        "read committed",
        "read uncommitted",
    ] {
        if rest == level
            || rest.starts_with(&format!("{level},"))
            || rest.starts_with(&format!("{level} "))
        {
            return Ok(Some(level));
        }
    }
    Err(Failure::syntax(format!(
        "unknown isolation level in: {n} (give SERIALIZABLE, REPEATABLE READ, READ COMMITTED or READ UNCOMMITTED)"
    )))
}

/// Whether `sql` is a query (it reads the database), not a statement
/// about the session or its transaction.
pub fn is_query(sql: &str) -> bool {
    let first = sql
        .trim_start_matches(|c: char| c.is_whitespace() || c == '(')
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    !matches!(
        first.as_str(),
        "begin"
            | "start"
            | "commit"
            | "end"
            | "rollback"
            | "abort"
            | "savepoint"
            | "release"
            | "set"
            | "reset"
            | "show"
            | "discard"
            | "deallocate"
    )
}

/// Whether the session's queries read the snapshot its transaction's
/// first query read: in a block at REPEATABLE READ or SERIALIZABLE, as
/// PostgreSQL's; at READ COMMITTED each query reads the last commit.
pub fn holds_snapshot(settings: &HashMap<String, String>) -> bool {
    in_block(settings)
        && setting(settings, "transaction_isolation")
            .is_some_and(|l| l == "repeatable read" || l == "serializable")
}

fn set(sql: &str, n: &str) -> Result<Answer, Failure> {
    // SET TRANSACTION ...: its isolation level for the open block (its
    // other modes change nothing: every transaction of sluice's is read
    // only); SET SESSION CHARACTERISTICS AS TRANSACTION ...: the level of
    // the next blocks.
    if n.starts_with("set transaction snapshot") {
        return Err(Failure::new(
            "0A000",
            "SET TRANSACTION SNAPSHOT is not supported: a sluice snapshot cannot be shared between sessions",
        ));
    }
    let transaction = n == "set transaction" || n.starts_with("set transaction ");
    if transaction || n.starts_with("set session characteristics") {
        return Ok(match isolation_level(n)? {
            Some(level) if transaction => Answer::Set {
                name: "transaction_isolation".into(),
                value: level.into(),
                local: true,
            },
            Some(level) => Answer::Set {
                name: "default_transaction_isolation".into(),
                value: level.into(),
                local: false,
            },
            None => Answer::Tag("SET"),
        });
    }
    let rest = sql.trim()[3..].trim_start();
    let mut rest = rest;
    let mut local = false;
    for prefix in ["session ", "local "] {
        if rest
            .get(..prefix.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
        {
            rest = rest[prefix.len()..].trim_start();
            local |= prefix == "local ";
        }
    }
    let (name, value) = if rest
        .get(..9)
        .is_some_and(|p| p.eq_ignore_ascii_case("time zone"))
    {
        ("timezone".to_string(), rest[9..].trim())
    } else if let Some((k, v)) = rest.split_once('=') {
        (canonical(k), v.trim())
    } else {
        let mut parts = rest.splitn(2, char::is_whitespace);
        let k = parts.next().unwrap_or("");
        let v = parts.next().unwrap_or("").trim();
        let v = if v.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("to ")) {
            v[3..].trim()
        } else {
            v
        };
        (canonical(k), v)
    };
    if name.is_empty() || value.is_empty() {
        return Err(Failure::syntax(format!("cannot read this SET: {sql}")));
    }
    let value = value.split(',').map(unquote).collect::<Vec<_>>().join(", ");
    // `SET x TO DEFAULT` is `RESET x`; `SET TIME ZONE DEFAULT` / `LOCAL`:
    // back to the server's zone.
    if value.eq_ignore_ascii_case("default")
        || (name == "timezone" && value.eq_ignore_ascii_case("local"))
    {
        check_name(&name)?;
        return Ok(Answer::Reset {
            name: Some(name),
            tag: "SET",
        });
    }
    check_set(&name, &value)?;
    let value = if name == "timezone" {
        zone_setting(&value)
    } else if name.ends_with("transaction_isolation") {
        value.to_ascii_lowercase()
    } else {
        value
    };
    // A transaction's own level lasts until its end (SET TRANSACTION).
    let local = local || name == "transaction_isolation";
    Ok(Answer::Set { name, value, local })
}

/// The mark of an open transaction block among a session's settings.
const IN_BLOCK: &str = "sluice-block";

/// Whether a transaction block is open (BEGIN without its COMMIT or
/// ROLLBACK yet).
pub fn in_block(settings: &HashMap<String, String>) -> bool {
    settings.contains_key(IN_BLOCK)
}

/// BEGIN: the settings as they are, kept for a ROLLBACK; the block's
/// isolation level `level`, else `default_transaction_isolation`. A BEGIN
/// inside a block changes nothing (PostgreSQL warns).
pub fn begin(settings: &mut HashMap<String, String>, level: Option<&str>) {
    if in_block(settings) {
        return;
    }
    // A level other than the session's default is the block's own
    // (`transaction_isolation` reads the default otherwise).
    let level = level
        .map(str::to_string)
        .filter(|l| setting(settings, "default_transaction_isolation").as_ref() != Some(l));
    let kept: Vec<(String, String)> = settings
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix("sluice.")
                .map(|n| (format!("sluice-begin.{n}"), v.clone()))
        })
        .collect();
    settings.extend(kept);
    settings.insert(IN_BLOCK.into(), String::new());
    if let Some(level) = level {
        apply_set(settings, "transaction_isolation", level, true);
    }
}

/// The savepoints of the open block, outermost first: savepoint `i` is
/// kept as `sluice-savepoint.<i>` (its name) with the session's settings
/// of that moment as `sluice-sp<i>.<setting>`, so that ROLLBACK TO puts
/// them back, as PostgreSQL undoes a SET since the savepoint.
fn savepoints(settings: &HashMap<String, String>) -> Vec<String> {
    (0..)
        .map_while(|i| settings.get(&format!("sluice-savepoint.{i}")).cloned())
        .collect()
}

/// Forgets savepoints `from..` of the block.
fn drop_savepoints(settings: &mut HashMap<String, String>, from: usize) {
    let marks: Vec<String> = (from..savepoints(settings).len())
        .map(|i| format!("sluice-sp{i}."))
        .collect();
    settings.retain(|k, _| {
        let numbered = k
            .strip_prefix("sluice-savepoint.")
            .and_then(|i| i.parse::<usize>().ok());
        !numbered.is_some_and(|i| i >= from) && !marks.iter().any(|m| k.starts_with(m))
    });
}

/// SAVEPOINT, RELEASE and ROLLBACK TO in a session (sluice's transaction
/// is a read-only snapshot, so a savepoint keeps only the settings);
/// PostgreSQL's errors outside a block (25P01) and for a name no
/// savepoint has (3B001, the innermost of equal names is meant). The
/// settings a ROLLBACK TO changed, for the client to be told.
pub fn savepoint(
    settings: &mut HashMap<String, String>,
    what: Savepoint,
    name: &str,
) -> Result<Vec<String>, Failure> {
    if !in_block(settings) {
        return Err(Failure::new(
            "25P01",
            format!("{} can only be used in transaction blocks", what.command()),
        ));
    }
    let all = savepoints(settings);
    if what == Savepoint::Set {
        let i = all.len();
        let now: Vec<(String, String)> = settings
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix("sluice.")
                    .map(|n| (format!("sluice-sp{i}.{n}"), v.clone()))
            })
            .collect();
        settings.extend(now);
        settings.insert(format!("sluice-savepoint.{i}"), name.to_string());
        return Ok(Vec::new());
    }
    let Some(i) = all.iter().rposition(|n| n == name) else {
        return Err(Failure::new(
            "3B001",
            format!("savepoint \"{name}\" does not exist"),
        ));
    };
    if what == Savepoint::Release {
        drop_savepoints(settings, i);
        return Ok(Vec::new());
    }
    // ROLLBACK TO: the settings as they were at the savepoint, which
    // stays (later ones go).
    let prefix = format!("sluice-sp{i}.");
    let then: HashMap<String, String> = settings
        .iter()
        .filter_map(|(k, v)| k.strip_prefix(&prefix).map(|n| (n.to_string(), v.clone())))
        .collect();
    let now: Vec<String> = settings
        .keys()
        .filter_map(|k| k.strip_prefix("sluice.").map(str::to_string))
        .collect();
    let mut changed = Vec::new();
    for n in now.iter().chain(then.keys()) {
        let key = format!("sluice.{n}");
        let back = then.get(n).cloned();
        if settings.get(&key) != back.as_ref() {
            match back {
                Some(v) => settings.insert(key, v),
                None => settings.remove(&key),
            };
            changed.push(n.clone());
        }
    }
    drop_savepoints(settings, i + 1);
    Ok(changed)
}

/// RESET of one setting (or of all, `name` None; DISCARD ALL too): back
/// to the value the client's startup message gave it (PostgreSQL's reset
/// value: JDBC's `TimeZone`), else to the server's default. The names of
/// the settings reset, for the client to be told.
pub fn reset(settings: &mut HashMap<String, String>, name: Option<&str>) -> Vec<String> {
    let names: std::collections::BTreeSet<String> = match name {
        Some(n) => std::iter::once(n.to_string()).collect(),
        None => settings
            .keys()
            .filter_map(|k| {
                k.strip_prefix("sluice.")
                    .or_else(|| k.strip_prefix("sluice-startup."))
                    .map(str::to_string)
            })
            .collect(),
    };
    for n in &names {
        match settings.get(&format!("sluice-startup.{n}")).cloned() {
            Some(v) => settings.insert(format!("sluice.{n}"), v),
            None => settings.remove(&format!("sluice.{n}")),
        };
    }
    names.into_iter().collect()
}

/// A SET in a session: `SET LOCAL` outside a block changes nothing (as
/// in PostgreSQL, which warns); inside one, the value it replaces is kept
/// for the block's end. A plain SET in a block outlasts a COMMIT.
pub fn apply_set(settings: &mut HashMap<String, String>, name: &str, value: String, local: bool) {
    let key = format!("sluice.{name}");
    let mark = format!("sluice-local.{name}");
    if local {
        if !in_block(settings) {
            return;
        }
        if !settings.contains_key(&mark) {
            // `=value`, or empty for a setting at its default.
            let before = settings
                .get(&key)
                .map_or(String::new(), |v| format!("={v}"));
            settings.insert(mark, before);
        }
    } else {
        settings.remove(&mark);
    }
    settings.insert(key, value);
}

/// COMMIT (`rollback` false) or ROLLBACK: a ROLLBACK puts every setting
/// back as it was at BEGIN, a COMMIT only those SET LOCAL changed, as it
/// was before them. The names whose values changed, for the client to be
/// told.
pub fn end_block(settings: &mut HashMap<String, String>, rollback: bool) -> Vec<String> {
    if !in_block(settings) {
        return Vec::new();
    }
    let mut names: Vec<String> = settings
        .keys()
        .filter_map(|k| {
            k.strip_prefix("sluice.")
                .or_else(|| k.strip_prefix("sluice-begin."))
                .or_else(|| k.strip_prefix("sluice-local."))
                .map(str::to_string)
        })
        .collect();
    names.sort();
    names.dedup();
    let mut changed = Vec::new();
    for n in names {
        let key = format!("sluice.{n}");
        let back = if rollback {
            Some(settings.get(&format!("sluice-begin.{n}")).cloned())
        } else {
            settings
                .get(&format!("sluice-local.{n}"))
                .map(|v| v.strip_prefix('=').map(str::to_string))
        };
        if let Some(back) = back
            && back != settings.get(&key).cloned()
        {
            match back {
                Some(v) => settings.insert(key, v),
                None => settings.remove(&key),
            };
            changed.push(n);
        }
    }
    settings.retain(|k, _| {
        k != IN_BLOCK
            && !k.starts_with("sluice-begin.")
            && !k.starts_with("sluice-local.")
            && !k.starts_with("sluice-savepoint.")
            && !k.starts_with("sluice-sp")
    });
    changed
}

fn text_rows(names: &[&str], rows: Vec<Vec<String>>) -> Answer {
    let schema = Arc::new(Schema::new(
        names
            .iter()
            .map(|n| Field::new(*n, A::Utf8, true))
            .collect::<Vec<_>>(),
    ));
    let cols: Vec<ArrayRef> = (0..names.len())
        .map(|c| {
            Arc::new(StringArray::from(
                rows.iter().map(|r| r[c].clone()).collect::<Vec<_>>(),
            )) as ArrayRef
        })
        .collect();
    Answer::Rows(RecordBatch::try_new(schema, cols).expect("columns match the schema"))
}

fn show(n: &str, settings: &HashMap<String, String>) -> Result<Answer, Failure> {
    let what = n.strip_prefix("show ").unwrap_or("").trim();
    if what == "all" {
        let rows = SETTINGS
            .iter()
            .map(|(k, _, _)| vec![k.to_string(), setting(settings, k).unwrap_or_default()])
            .collect();
        return Ok(text_rows(&["name", "setting"], rows));
    }
    let name = canonical(what);
    match setting(settings, &name) {
        Some(v) => Ok(text_rows(&[&name], vec![vec![v]])),
        None => Err(Failure::new(
            "42704",
            format!("unrecognized configuration parameter \"{name}\""),
        )),
    }
}

/// `SELECT version()` and the other functions drivers call at connect.
fn function(n: &str, settings: &HashMap<String, String>) -> Option<Result<Answer, Failure>> {
    let body = n.strip_prefix("select ")?;
    // An alias: `SELECT version() AS v`.
    let (expr, alias) = match body.rsplit_once(" as ") {
        Some((e, a)) if !a.contains('(') && !a.contains('\'') => {
            (e.trim(), Some(a.trim().trim_matches('"')))
        }
        _ => (body, None),
    };
    let one = |name: &str, v: String| Some(Ok(text_rows(&[alias.unwrap_or(name)], vec![vec![v]])));
    match expr {
        "version()" | "pg_catalog.version()" => {
            return one(
                "version",
                format!(
                    "PostgreSQL {SERVER_VERSION}, sluice {} (read-only)",
                    env!("CARGO_PKG_VERSION")
                ),
            );
        }
        "current_database()" | "pg_catalog.current_database()" => {
            return one("current_database", "sluice".into());
        }
        "current_schema()" | "current_schema" | "pg_catalog.current_schema()" => {
            return one("current_schema", "public".into());
        }
        "current_user" | "session_user" | "user" | "current_user()" => {
            return one(expr.trim_end_matches("()"), "sluice".into());
        }
        "pg_backend_pid()" | "pg_catalog.pg_backend_pid()" => {
            return one("pg_backend_pid", std::process::id().to_string());
        }
        _ => {}
    }
    for f in ["current_setting(", "pg_catalog.current_setting("] {
        if let Some(arg) = expr.strip_prefix(f).and_then(|a| a.strip_suffix(')')) {
            // The original spelling of the argument (values keep case).
            let name = unquote(arg.split(',').next().unwrap_or(""));
            return Some(match setting(settings, &name) {
                Some(v) => Ok(text_rows(
                    &[alias.unwrap_or("current_setting")],
                    vec![vec![v]],
                )),
                None => Err(Failure::new(
                    "42704",
                    format!("unrecognized configuration parameter \"{name}\""),
                )),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::{apply_set, begin, end_block};

    #[test]
    fn set_local_and_rolled_back_sets_are_undone_as_in_postgresql() {
        let get = |m: &HashMap<String, String>| m.get("sluice.timezone").cloned();
        let mut m = HashMap::new();
        // SET LOCAL outside a block: nothing.
        apply_set(&mut m, "timezone", "-3".into(), true);
        assert_eq!(get(&m), None);
        // SET LOCAL in a block: until its end, committed or not.
        begin(&mut m, None);
        apply_set(&mut m, "timezone", "-3".into(), true);
        assert_eq!(get(&m).as_deref(), Some("-3"));
        assert_eq!(end_block(&mut m, false), vec!["timezone".to_string()]);
        assert_eq!(get(&m), None);
        // A SET in a block: kept by COMMIT, undone by ROLLBACK.
        begin(&mut m, None);
        apply_set(&mut m, "timezone", "2".into(), false);
        assert!(end_block(&mut m, false).is_empty());
        assert_eq!(get(&m).as_deref(), Some("2"));
        begin(&mut m, None);
        apply_set(&mut m, "timezone", "5".into(), false);
        apply_set(&mut m, "application_name", "x".into(), false);
        let mut changed = end_block(&mut m, true);
        changed.sort();
        assert_eq!(
            changed,
            vec!["application_name".to_string(), "timezone".to_string()]
        );
        assert_eq!(get(&m).as_deref(), Some("2"));
        assert_eq!(m.get("sluice.application_name"), None);
        // SET, then SET LOCAL, in one block: COMMIT goes back to the SET.
        begin(&mut m, None);
        apply_set(&mut m, "timezone", "7".into(), false);
        apply_set(&mut m, "timezone", "8".into(), true);
        end_block(&mut m, false);
        assert_eq!(get(&m).as_deref(), Some("7"));
        // SET LOCAL, then SET: the SET outlasts the COMMIT.
        begin(&mut m, None);
        apply_set(&mut m, "timezone", "8".into(), true);
        apply_set(&mut m, "timezone", "9".into(), false);
        end_block(&mut m, false);
        assert_eq!(get(&m).as_deref(), Some("9"));
        // Nothing of a block is left behind.
        assert!(m.keys().all(|k| k.starts_with("sluice.")), "{m:?}");
    }

    use super::{fixed_zone_of as zone_of, zone_label};

    #[test]
    fn named_zones_are_the_tz_databases() {
        match zone_label("Europe/Berlin") {
            Ok(z) => assert_eq!(z, "Europe/Berlin"),
            Err(e) => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "no tz database under CI: {e}"
                );
                eprintln!("skipped: {e}");
                return;
            }
        }
        // Any case, as PostgreSQL reads names.
        assert_eq!(zone_label("europe/BERLIN").unwrap(), "Europe/Berlin");
        assert_eq!(zone_label("EST5EDT").unwrap(), "EST5EDT");
        assert_eq!(super::zone_setting("europe/berlin"), "Europe/Berlin");
        assert_eq!(super::zone_setting("UTC+3"), "UTC+3");
        // Fixed offsets keep their own form.
        assert_eq!(zone_label("UTC+3").unwrap(), "-03:00");
        assert_eq!(zone_label("5.5").unwrap(), "+05:30");
        for bad in [
            "Nowhere/Atlantis",
            "/etc/passwd",
            "../../etc/passwd",
            "16",
            "+24:00",
            "zone.tab",
            " Europe/Berlin",
            "Europe/Berlin ",
            "right/UTC",
        ] {
            assert!(zone_label(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn time_zones_read_as_postgresql_reads_them() {
        // A number is hours east, quoted or not, signed or not.
        assert_eq!(zone_of("-7"), Some(-7 * 3600));
        assert_eq!(zone_of("+3"), Some(3 * 3600));
        assert_eq!(zone_of("5.5"), Some(5 * 3600 + 1800));
        // A signed offset or a name with one is POSIX: hours west.
        assert_eq!(zone_of("UTC+3"), Some(-3 * 3600));
        assert_eq!(zone_of("GMT-05:30"), Some(5 * 3600 + 1800));
        assert_eq!(zone_of("+05:30"), Some(-(5 * 3600 + 1800)));
        assert_eq!(zone_of("Etc/GMT+3"), Some(-3 * 3600));
        for utc in ["UTC", "utc", "GMT", "Etc/UTC", "Z", "Zulu", "UTC+0", "0"] {
            assert_eq!(zone_of(utc), Some(0), "{utc}");
        }
        // Zones with rules (not fixed: see `zone_label`), and offsets
        // PostgreSQL refuses.
        for bad in [
            "Europe/Berlin",
            "EST5EDT",
            "16",
            "UTC+16",
            "+24:00",
            "",
            "UTC+",
            "x",
        ] {
            assert_eq!(zone_of(bad), None, "{bad}");
        }
    }
}
