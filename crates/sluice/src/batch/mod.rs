//! Table schemas, logical types and the column builders that turn parsed
//! fields into Arrow arrays.

mod builder;
pub mod dict;
pub(crate) mod format;

pub use builder::{BatchBuilder, ColumnStats, FastPath, StatRange, ValueOptions, column_stats};
pub use format::{
    array_literal, float_text, format_time, format_timestamptz, format_value, write_csv_row,
    write_json_object, zone_label, zone_text,
};

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use arrow_schema::{DataType as ArrowType, Field, Schema as ArrowSchema, SchemaRef, TimeUnit};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The SQL-level type of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum DataType {
    Boolean,
    /// 32-bit signed integer.
    Int,
    /// 64-bit signed integer.
    BigInt,
    /// IEEE 754 double.
    Double,
    /// Exact decimal, stored as a 64-bit integer scaled by 10^scale.
    Decimal {
        precision: u8,
        scale: u8,
    },
    /// Days since 1970-01-01.
    Date,
    /// A time of day: microseconds since midnight, 0 to 24:00:00
    /// inclusive (PostgreSQL's `time without time zone`).
    Time,
    /// Microseconds since 1970-01-01 00:00:00, no time zone.
    Timestamp,
    /// An instant: microseconds since 1970-01-01 00:00:00 UTC (SQL's
    /// `TIMESTAMP WITH TIME ZONE`), shown in the session's zone.
    TimestampTz,
    /// A span of time as PostgreSQL's `interval`: months, days and
    /// microseconds kept apart (a month is not a fixed number of days).
    Interval,
    /// Valid UTF-8 text.
    Text,
}

impl DataType {
    /// Whether a column of this type can be a PRIMARY KEY: exact values
    /// with a total order (not DOUBLE: NaN and -0.0; not BOOLEAN).
    pub fn can_be_key(self) -> bool {
        !matches!(
            self,
            DataType::Double | DataType::Boolean | DataType::Interval
        )
    }

    /// The Arrow type a column of this type is stored as.
    pub fn arrow_type(self) -> ArrowType {
        match self {
            DataType::Boolean => ArrowType::Boolean,
            DataType::Int => ArrowType::Int32,
            DataType::BigInt => ArrowType::Int64,
            DataType::Double => ArrowType::Float64,
            DataType::Decimal { precision, scale } => ArrowType::Decimal64(precision, scale as i8),
            DataType::Date => ArrowType::Date32,
            DataType::Time => ArrowType::Time64(TimeUnit::Microsecond),
            DataType::Timestamp => ArrowType::Timestamp(TimeUnit::Microsecond, None),
            DataType::TimestampTz => {
                ArrowType::Timestamp(TimeUnit::Microsecond, Some(UTC_ZONE.into()))
            }
            DataType::Interval => ArrowType::Interval(arrow_schema::IntervalUnit::MonthDayNano),
            DataType::Text => ArrowType::Utf8,
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Boolean => f.write_str("BOOLEAN"),
            DataType::Int => f.write_str("INT"),
            DataType::BigInt => f.write_str("BIGINT"),
            DataType::Double => f.write_str("DOUBLE"),
            DataType::Decimal { precision, scale } => write!(f, "DECIMAL({precision},{scale})"),
            DataType::Date => f.write_str("DATE"),
            DataType::Time => f.write_str("TIME"),
            DataType::Timestamp => f.write_str("TIMESTAMP"),
            DataType::TimestampTz => f.write_str("TIMESTAMPTZ"),
            DataType::Interval => f.write_str("INTERVAL"),
            DataType::Text => f.write_str("TEXT"),
        }
    }
}

impl From<DataType> for String {
    fn from(t: DataType) -> String {
        t.to_string()
    }
}

impl TryFrom<String> for DataType {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        s.parse()
    }
}

/// The Arrow time zone of a TIMESTAMPTZ column: its values are UTC
/// instants (a fixed offset, so no time zone database is needed to read
/// them).
pub const UTC_ZONE: &str = "+00:00";

/// Largest decimal precision that fits a scaled 64-bit integer.
pub const MAX_DECIMAL_PRECISION: u8 = 18;

impl FromStr for DataType {
    type Err = Error;

    /// Parses a type name as written in `--schema`: `BIGINT`, `DECIMAL(15,2)`,
    /// `VARCHAR(28)`, ... (case-insensitive, common SQL aliases accepted).
    fn from_str(s: &str) -> Result<Self> {
        let norm: String = s
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_ascii_uppercase();
        let (base, args) = match norm.find('(') {
            Some(i) => {
                let Some(inner) = norm[i + 1..].strip_suffix(')') else {
                    return Err(Error::Schema(format!("type {s:?}: missing ')'")));
                };
                (norm[..i].trim(), Some(inner.trim()))
            }
            None => (norm.as_str(), None),
        };
        let no_args = |t: DataType| -> Result<DataType> {
            match args {
                None => Ok(t),
                Some(_) => Err(Error::Schema(format!(
                    "type {s:?}: {base} takes no arguments"
                ))),
            }
        };
        match base {
            "BOOLEAN" | "BOOL" => no_args(DataType::Boolean),
            "INT" | "INTEGER" | "INT4" => no_args(DataType::Int),
            "BIGINT" | "INT8" | "LONG" => no_args(DataType::BigInt),
            "DOUBLE" | "DOUBLE PRECISION" | "FLOAT8" | "FLOAT" => no_args(DataType::Double),
            "DATE" => no_args(DataType::Date),
            "TIME" | "TIME WITHOUT TIME ZONE" => no_args(DataType::Time),
            "INTERVAL" => no_args(DataType::Interval),
            "TIMESTAMP" | "DATETIME" | "TIMESTAMP WITHOUT TIME ZONE" => {
                no_args(DataType::Timestamp)
            }
            "TIMESTAMPTZ" | "TIMESTAMP WITH TIME ZONE" => no_args(DataType::TimestampTz),
            // Text of any declared length is stored as TEXT; the length is not enforced.
            "TEXT" | "VARCHAR" | "CHAR" | "STRING" | "CHARACTER VARYING" | "CHARACTER" => {
                Ok(DataType::Text)
            }
            "DECIMAL" | "NUMERIC" => {
                let Some(args) = args else {
                    return Err(Error::Schema(format!(
                        "type {s:?}: DECIMAL needs a precision and scale, e.g. DECIMAL(15,2)"
                    )));
                };
                let parts: Vec<&str> = args.split(',').map(str::trim).collect();
                let num = |p: &str| -> Result<u8> {
                    p.parse::<u8>()
                        .map_err(|_| Error::Schema(format!("type {s:?}: {p:?} is not a number")))
                };
                let (precision, scale) = match parts.as_slice() {
                    [p] => (num(p)?, 0),
                    [p, sc] => (num(p)?, num(sc)?),
                    _ => return Err(Error::Schema(format!("type {s:?}: expected DECIMAL(p,s)"))),
                };
                if precision == 0 || precision > MAX_DECIMAL_PRECISION {
                    return Err(Error::Schema(format!(
                        "type {s:?}: precision must be 1..={MAX_DECIMAL_PRECISION} (decimals are exact 64-bit)"
                    )));
                }
                if scale > precision {
                    return Err(Error::Schema(format!(
                        "type {s:?}: scale {scale} is larger than precision {precision}"
                    )));
                }
                Ok(DataType::Decimal { precision, scale })
            }
            _ => Err(Error::Schema(format!(
                "unknown type {s:?}; known types: BOOLEAN, INT, BIGINT, DOUBLE, DECIMAL(p,s), DATE, TIME, TIMESTAMP, TIMESTAMPTZ, INTERVAL, TEXT"
            ))),
        }
    }
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    #[serde(rename = "type")]
    pub data_type: DataType,
    /// The value a load gives this column when its input has no field for
    /// it (see `--columns`, `--match-by-name`); `None`: NULL. Kept as text
    /// in the canonical format of the type (`'new'`, `0`, `2024-01-31`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// The table's primary key: unique, never NULL, indexed (at most one
    /// column per table).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub primary_key: bool,
}

/// The columns of a table, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Schema {
    pub columns: Vec<Column>,
}

impl Schema {
    pub fn new(columns: Vec<Column>) -> Result<Self> {
        if columns.is_empty() {
            return Err(Error::Schema("a schema needs at least one column".into()));
        }
        for (i, c) in columns.iter().enumerate() {
            validate_column_name(&c.name)?;
            if let Some(d) = &c.default {
                // The default must be a value of the column's type.
                let one = Schema {
                    columns: vec![c.clone()],
                };
                let mut b = BatchBuilder::new(&one, Arc::new(ValueOptions::default()), 1);
                b.push(0, d.as_bytes(), true).map_err(|m| {
                    Error::Schema(format!(
                        "column {}: DEFAULT '{d}' is not a valid {}: {m}",
                        c.name, c.data_type
                    ))
                })?;
            }
            if c.primary_key {
                if columns[..i].iter().any(|o| o.primary_key) {
                    return Err(Error::Schema(
                        "only one column can be the PRIMARY KEY".into(),
                    ));
                }
                if !c.data_type.can_be_key() {
                    return Err(Error::Schema(format!(
                        "column {}: a {} column cannot be a key (use BIGINT, INT, TEXT, DATE, TIME, TIMESTAMP, TIMESTAMPTZ or DECIMAL)",
                        c.name, c.data_type
                    )));
                }
            }
            // Names that differ only in case are two columns (quoted
            // names in `--schema`, JSON keys); see `FromStr`.
            if columns[..i].iter().any(|o| o.name == c.name) {
                return Err(Error::Schema(format!("column {:?} appears twice", c.name)));
            }
        }
        Ok(Schema { columns })
    }

    /// The column `name` names: the one of exactly that name, else the
    /// only one that differs from it in ASCII case alone (`None`: none, or
    /// several).
    pub fn position(&self, name: &str) -> Option<usize> {
        position_of(
            self.columns.iter().map(|c| c.name.as_bytes()),
            name.as_bytes(),
        )
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// The position of the PRIMARY KEY column, if the table has one.
    pub fn key_column(&self) -> Option<usize> {
        self.columns.iter().position(|c| c.primary_key)
    }

    /// Makes the column named `name` the PRIMARY KEY. A schema that
    /// already has another key is an error: two keys never silently
    /// become one.
    pub fn set_key(&mut self, name: &str) -> Result<()> {
        if let Some(k) = self.key_column() {
            let have = &self.columns[k].name;
            if self.position(name) == Some(k) {
                return Ok(());
            }
            return Err(Error::Schema(format!(
                "--key {name} and PRIMARY KEY {have} in --schema name two different keys (a table has one key: give it once)"
            )));
        }
        let i = self.position(name).ok_or_else(|| {
            Error::Schema(format!(
                "--key {name}: no such column (columns: {})",
                self.columns
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        for c in &mut self.columns {
            c.primary_key = false;
        }
        self.columns[i].primary_key = true;
        Schema::new(std::mem::take(&mut self.columns)).map(|s| *self = s)
    }

    /// The column names, comma separated (for messages).
    pub fn column_names(&self) -> String {
        self.columns
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The Arrow schema segments are written with.
    pub fn arrow_schema(&self) -> SchemaRef {
        Arc::new(ArrowSchema::new(
            self.columns
                .iter()
                .map(|c| Field::new(&c.name, c.data_type.arrow_type(), true))
                .collect::<Vec<_>>(),
        ))
    }
}

impl fmt::Display for Schema {
    /// Writes the schema as a `--schema` string that parses back to itself.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.columns.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            // Quoted when it is no identifier, or when another column's
            // name differs from it in case alone.
            let twin = self
                .columns
                .iter()
                .any(|o| o.name != c.name && o.name.eq_ignore_ascii_case(&c.name));
            if twin || validate_identifier(&c.name, "column").is_err() {
                write!(f, "\"{}\"", c.name.replace('"', "\"\""))?;
            } else {
                f.write_str(&c.name)?;
            }
            write!(f, " {}", c.data_type)?;
            if c.primary_key {
                f.write_str(" PRIMARY KEY")?;
            }
            if let Some(d) = &c.default {
                write!(f, " DEFAULT '{}'", d.replace('\'', "''"))?;
            }
        }
        Ok(())
    }
}

impl FromStr for Schema {
    type Err = Error;

    /// Parses `"id BIGINT, name TEXT, price DECIMAL(15,2), d DATE"`. A
    /// name in double quotes (`"$lib" TEXT`, `"Duck" INT`; `""` is a
    /// quote) may be any text, and may differ from another quoted name in
    /// case alone; a bare name is an identifier, and names a column once
    /// in any case.
    fn from_str(s: &str) -> Result<Self> {
        let mut columns: Vec<Column> = Vec::new();
        let mut quoted = Vec::new();
        for part in split_top_level(s) {
            let part = part.trim();
            if part.is_empty() {
                return Err(Error::Schema(format!(
                    "--schema {s:?}: empty column definition"
                )));
            }
            let (name, ty) = match part.strip_prefix('"') {
                Some(rest) => {
                    let end = closing_quote(rest).ok_or_else(|| {
                        Error::Schema(format!("--schema: unterminated quoted name in {part:?}"))
                    })?;
                    (rest[..end].replace("\"\"", "\""), rest[end + 1..].trim())
                }
                None => match part.split_once(char::is_whitespace) {
                    Some((n, t)) => {
                        validate_identifier(n, "column").map_err(|e| match e {
                            Error::Schema(m) => Error::Schema(format!(
                                "{m} (or write any name in double quotes: \"{}\" TEXT)",
                                n.replace('"', "\"\"")
                            )),
                            other => other,
                        })?;
                        (n.to_string(), t.trim())
                    }
                    None => {
                        return Err(Error::Schema(format!(
                            "--schema: column {part:?} has no type (write \"{part} TEXT\", for example)"
                        )));
                    }
                },
            };
            let is_quoted = part.starts_with('"');
            if columns.iter().zip(&quoted).any(|(o, q)| {
                o.name.eq_ignore_ascii_case(&name) && (o.name == name || !(*q && is_quoted))
            }) {
                return Err(Error::Schema(format!("column {name:?} appears twice")));
            }
            quoted.push(is_quoted);
            // `TYPE [PRIMARY KEY] [DEFAULT literal]`.
            let (ty, primary_key) = match find_keyword(ty, "PRIMARY") {
                Some(i) => {
                    let rest = ty[i + "PRIMARY".len()..].trim_start();
                    let Some(after) = rest
                        .get(..3)
                        .filter(|k| k.eq_ignore_ascii_case("KEY"))
                        .map(|_| &rest[3..])
                    else {
                        return Err(Error::Schema(format!(
                            "--schema: column {name}: PRIMARY must be followed by KEY"
                        )));
                    };
                    (format!("{} {}", ty[..i].trim(), after.trim()), true)
                }
                None => (ty.to_string(), false),
            };
            let ty = ty.trim();
            // `TYPE DEFAULT literal`: the literal quoted ('it''s') or bare.
            let (ty, default) = match find_keyword(ty, "DEFAULT") {
                Some(i) => {
                    let lit = ty[i + "DEFAULT".len()..].trim();
                    let value = match lit.strip_prefix('\'') {
                        Some(rest) => {
                            let inner = rest.strip_suffix('\'').ok_or_else(|| {
                                Error::Schema(format!(
                                    "--schema: column {name}: unterminated quote in DEFAULT {lit}"
                                ))
                            })?;
                            inner.replace("''", "'")
                        }
                        None if lit.is_empty() || lit.contains(char::is_whitespace) => {
                            return Err(Error::Schema(format!(
                                "--schema: column {name}: DEFAULT needs one value, e.g. DEFAULT 0 or DEFAULT 'new'"
                            )));
                        }
                        None => lit.to_string(),
                    };
                    (ty[..i].trim(), Some(value))
                }
                None => (ty, None),
            };
            let data_type = ty.parse().map_err(|e| match e {
                Error::Schema(m) => Error::Schema(format!("--schema: column {name}: {m}")),
                other => other,
            })?;
            columns.push(Column {
                name,
                data_type,
                default,
                primary_key,
            });
        }
        Schema::new(columns)
    }
}

/// Splits `s` at commas outside parentheses and quotes: `"a INT, d
/// DECIMAL(5,2)"` gives `"a INT"` and `" d DECIMAL(5,2)"`; a quoted name
/// (`"a, b"`) or DEFAULT literal (`'x, y'`) stays whole.
pub fn split_top_level(s: &str) -> Vec<&str> {
    let mut depth = 0i32;
    let mut start = 0;
    let mut parts = Vec::new();
    let mut quote = None;
    for (i, ch) in s.char_indices() {
        if let Some(q) = quote {
            // A doubled quote closes and opens again: still inside.
            if ch == q {
                quote = None;
            }
            continue;
        }
        match ch {
            '"' | '\'' => quote = Some(ch),
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Byte offset of `kw` as a whole word in `s` (ASCII case-insensitive),
/// outside quotes.
fn find_keyword(s: &str, kw: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut quoted = false;
    for i in 0..b.len() {
        if b[i] == b'\'' {
            quoted = !quoted;
        }
        if quoted || i + kw.len() > b.len() {
            continue;
        }
        let before = i == 0 || b[i - 1].is_ascii_whitespace() || b[i - 1] == b')';
        let after = b.get(i + kw.len()).is_none_or(|c| c.is_ascii_whitespace());
        if before && after && s[i..i + kw.len()].eq_ignore_ascii_case(kw) {
            return Some(i);
        }
    }
    None
}

/// The position of the closing quote of a name in double quotes, whose
/// opening quote precedes `s` (`""` inside it is a quote).
fn closing_quote(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            if b.get(i + 1) == Some(&b'"') {
                i += 2;
                continue;
            }
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The position of the name `name` among `names`: exactly, else the only
/// one that differs from it in ASCII case alone.
pub fn position_of<'a>(
    names: impl Iterator<Item = &'a [u8]> + Clone,
    name: &[u8],
) -> Option<usize> {
    if let Some(i) = names.clone().position(|n| n == name) {
        return Some(i);
    }
    let mut found = names
        .enumerate()
        .filter(|(_, n)| n.eq_ignore_ascii_case(name))
        .map(|(i, _)| i);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// Checks a column name: any text of 1 to 63 bytes without control
/// characters (a name that is no identifier is written in double quotes
/// in `--schema` and SQL).
pub fn validate_column_name(name: &str) -> Result<()> {
    if !name.is_empty() && name.len() <= 63 && !name.chars().any(char::is_control) {
        return Ok(());
    }
    Err(Error::Schema(format!(
        "invalid column name {name:?}: a name has 1 to 63 bytes and no control characters"
    )))
}

/// Checks a table or column name: letters, digits and `_`, not starting with
/// a digit, at most 63 bytes (as PostgreSQL).
pub fn validate_identifier(name: &str, what: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && !name.as_bytes()[0].is_ascii_digit()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::Schema(format!(
            "invalid {what} name {name:?}: use letters, digits and '_', not starting with a digit, at most 63 characters"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_round_trips_through_display() {
        let s: Schema = "id BIGINT, name text, price DECIMAL(15, 2), d DATE, ok bool, t TIMESTAMP, x double, n int"
            .parse()
            .unwrap();
        assert_eq!(
            s.to_string(),
            "id BIGINT, name TEXT, price DECIMAL(15,2), d DATE, ok BOOLEAN, t TIMESTAMP, x DOUBLE, n INT"
        );
        assert_eq!(s.to_string().parse::<Schema>().unwrap(), s);
    }

    #[test]
    fn defaults_parse_print_and_are_checked() {
        let s: Schema = "id BIGINT, status TEXT DEFAULT 'it''s new', n INT default 0, d DECIMAL(5,2) DEFAULT 1.50"
            .parse()
            .unwrap();
        assert_eq!(s.columns[1].default.as_deref(), Some("it's new"));
        assert_eq!(s.columns[2].default.as_deref(), Some("0"));
        assert_eq!(
            s.to_string(),
            "id BIGINT, status TEXT DEFAULT 'it''s new', n INT DEFAULT '0', d DECIMAL(5,2) DEFAULT '1.50'"
        );
        assert_eq!(s.to_string().parse::<Schema>().unwrap(), s);
        let e = |s: &str| s.parse::<Schema>().unwrap_err().to_string();
        assert_eq!(
            e("n INT DEFAULT x1"),
            "column n: DEFAULT 'x1' is not a valid INT: not an integer"
        );
        assert!(e("t TEXT DEFAULT 'open").contains("unterminated quote"));
        assert!(e("t TEXT DEFAULT").contains("DEFAULT needs one value"));
        // A column named like the keyword is still a name.
        let s: Schema = "default_value TEXT".parse().unwrap();
        assert_eq!(s.columns[0].default, None);
    }

    #[test]
    fn schema_errors_name_the_problem() {
        let e = |s: &str| s.parse::<Schema>().unwrap_err().to_string();
        assert_eq!(
            e("id BIGINT, price DECIMAL(19,2)"),
            "--schema: column price: type \"DECIMAL(19,2)\": precision must be 1..=18 (decimals are exact 64-bit)"
        );
        assert_eq!(
            e("id"),
            "--schema: column \"id\" has no type (write \"id TEXT\", for example)"
        );
        assert!(e("id FOO").contains("unknown type \"FOO\""));
        assert_eq!(e("a INT, A INT"), "column \"A\" appears twice");
        assert!(e("1a INT").contains("invalid column name \"1a\""));
        assert!(e("p DECIMAL(5,6)").contains("scale 6 is larger than precision 5"));
    }
}
