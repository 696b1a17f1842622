//! Scalar functions of text and numbers, with PostgreSQL's semantics and
//! NULL rules: `||`, `concat`, `left`, `right`, `lpad`, `rpad`,
//! `replace`, `split_part`, `starts_with`, `strpos`, `initcap`, `repeat`,
//! `reverse`, `btrim`/`ltrim`/`rtrim`; `greatest`, `least`; `mod` (and
//! `%`), `floor`, `ceil`, `round`, `trunc`, `sqrt`, `power`, `ln`, `log`,
//! `exp`, `sign`.
//!
//! For: evaluating a call over its arguments' arrays, row by row. Not
//! for: choosing a call's argument and result types (the binder,
//! `bind/function.rs`, coerces the arguments to the types [`Func`]
//! expects, so here each argument is of its expected type or NULL).

use std::fmt;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int64Array};
use arrow_schema::DataType as A;

use crate::error::{Error, Result};

/// A scalar function. The binder brings the arguments to these types:
/// text arguments to TEXT, counts and positions to BIGINT; the numeric
/// functions take DOUBLE, or DECIMAL where noted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// `a || b`: NULL when either is NULL.
    Concat,
    /// Internal (the argument of a collecting aggregate, see
    /// `agg::Collect`): its arguments as one row-format sort key, argument
    /// i descending when bit i of `desc` is set, its NULLs first when bit
    /// i of `nulls_first` is; NULL where the last argument is NULL, unless
    /// `keep_null` (array_agg collects NULLs too).
    SortRow {
        desc: u32,
        nulls_first: u32,
        keep_null: bool,
    },
    /// Internal (a select-list subquery's value, see
    /// `plan::subquery::unnest_select_list`): `(n, v)` is NULL where the
    /// count of rows `n` is NULL, an error where it is over 1, else `v`.
    SingleRow,
    /// `json_build_object(k1, v1, …)`: PostgreSQL's JSON text of an object
    /// (`{"k" : v, …}`), each value by its type, NULL as `null`; value
    /// `i` is JSON already (a json_build_object) where bit `i` of `raw`
    /// is set.
    JsonBuildObject {
        raw: u64,
    },
    /// The regular-expression functions (see [`super::regexp`]); `~` and
    /// its kin are `RegexpLike`.
    RegexpLike,
    RegexpCount,
    RegexpSubstr,
    RegexpReplace,
    /// `concat(a, …)`: NULLs skipped.
    ConcatAll,
    Left,
    Right,
    Lpad,
    Rpad,
    Replace,
    SplitPart,
    StartsWith,
    Strpos,
    Initcap,
    Repeat,
    Reverse,
    /// `pg_size_pretty(bytes)`: `10239 bytes`, `10 kB`, `1234 MB`, ...
    SizePretty,
    Btrim,
    Ltrim,
    Rtrim,
    /// The largest non-NULL argument (NULL when all are).
    Greatest,
    Least,
    /// The remainder of a truncating division (BIGINT or DECIMAL of one
    /// scale), with the dividend's sign.
    Mod,
    /// PostgreSQL's bitwise operators of integers (as BIGINTs): `&`, `|`,
    /// `#`, `<<`, `>>`, and `~` of one.
    Bit(BitOp),
    /// Of a DOUBLE, or of a DECIMAL (its scale 0).
    Floor,
    Ceil,
    /// DOUBLE: half to even (C's `rint`, as PostgreSQL rounds a double);
    /// DECIMAL: half away from zero, to the scale of the result type.
    Round,
    /// Towards zero, to the scale of the result type.
    Trunc,
    Sqrt,
    Power,
    Ln,
    Log10,
    /// `log(b, x)`: the logarithm of x to base b (a DOUBLE).
    LogBase,
    Exp,
    Sign,
    /// `date_trunc('unit', ts)`: the first argument a [`Unit`]'s name (a
    /// constant), the second a TIMESTAMP or TIMESTAMPTZ (truncated in its
    /// zone's local time, as PostgreSQL truncates in the session's).
    DateTrunc,
    /// `date_part('field', x)` of a DATE, TIMESTAMP or TIMESTAMPTZ: a
    /// DOUBLE.
    DatePart,
    /// `make_date(year, month, day)`.
    MakeDate,
    /// `make_time(hour, min, sec)`: BIGINT, BIGINT, DOUBLE.
    MakeTime,
    /// `make_interval(years, months, weeks, days, hours, mins, secs)`:
    /// six BIGINTs and a DOUBLE (named arguments ordered by the binder).
    MakeInterval,
    /// `date + n` (n a BIGINT of days; `date - n` adds -n).
    DatePlusDays,
    /// `date - date`: the days between, a BIGINT.
    DateMinusDate,
    /// INTERVAL arithmetic, `age` and the `justify_*` functions (see
    /// [`super::interval`]).
    Interval(super::interval::Op),
    /// `to_char(x, format)` of a TIMESTAMP or TIMESTAMPTZ (a DATE cast to
    /// TIMESTAMP by the binder) or of a number, with a TEXT format (see
    /// [`super::to_char`] and [`super::to_char_num`]).
    ToChar,
}

/// The fields `date_part` and `EXTRACT` read and the units `date_trunc`
/// cuts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Microseconds,
    Milliseconds,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    Decade,
    Century,
    Millennium,
    /// Fields only (`date_part`, `EXTRACT`).
    Dow,
    Isodow,
    Doy,
    Isoyear,
    Epoch,
}

impl Unit {
    /// The unit a name (any case, PostgreSQL's plurals and short forms)
    /// means.
    pub fn of(name: &str) -> Option<Unit> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" => Unit::Microseconds,
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => Unit::Milliseconds,
            "second" | "seconds" | "s" | "sec" | "secs" => Unit::Second,
            "minute" | "minutes" | "m" | "min" | "mins" => Unit::Minute,
            "hour" | "hours" | "h" | "hr" | "hrs" => Unit::Hour,
            "day" | "days" | "d" => Unit::Day,
            "week" | "weeks" | "w" => Unit::Week,
            "month" | "months" | "mon" | "mons" => Unit::Month,
            "quarter" | "qtr" => Unit::Quarter,
            "year" | "years" | "y" | "yr" | "yrs" => Unit::Year,
            "decade" | "decades" | "dec" => Unit::Decade,
            "century" | "centuries" | "c" | "cent" => Unit::Century,
            "millennium" | "millennia" | "mil" | "mils" => Unit::Millennium,
            "dow" => Unit::Dow,
            "isodow" => Unit::Isodow,
            "doy" => Unit::Doy,
            "isoyear" => Unit::Isoyear,
            "epoch" => Unit::Epoch,
            _ => return None,
        })
    }

    /// Whether `date_trunc` cuts to it.
    pub fn truncates(self) -> bool {
        !matches!(
            self,
            Unit::Dow | Unit::Isodow | Unit::Doy | Unit::Isoyear | Unit::Epoch
        )
    }
}

impl Func {
    /// The SQL name.
    pub fn name(self) -> &'static str {
        match self {
            Func::Concat => "||",
            Func::SortRow { .. } => "SORT_ROW",
            Func::RegexpLike => "REGEXP_LIKE",
            Func::RegexpCount => "REGEXP_COUNT",
            Func::RegexpSubstr => "REGEXP_SUBSTR",
            Func::RegexpReplace => "REGEXP_REPLACE",
            Func::ConcatAll => "CONCAT",
            Func::JsonBuildObject { .. } => "JSON_BUILD_OBJECT",
            Func::SingleRow => "SINGLE_ROW",
            Func::Left => "LEFT",
            Func::Right => "RIGHT",
            Func::Lpad => "LPAD",
            Func::Rpad => "RPAD",
            Func::Replace => "REPLACE",
            Func::SplitPart => "SPLIT_PART",
            Func::StartsWith => "STARTS_WITH",
            Func::Strpos => "STRPOS",
            Func::Initcap => "INITCAP",
            Func::Repeat => "REPEAT",
            Func::Reverse => "REVERSE",
            Func::SizePretty => "PG_SIZE_PRETTY",
            Func::Btrim => "BTRIM",
            Func::Ltrim => "LTRIM",
            Func::Rtrim => "RTRIM",
            Func::Greatest => "GREATEST",
            Func::Least => "LEAST",
            Func::Mod => "MOD",
            Func::Bit(op) => op.symbol(),
            Func::Floor => "FLOOR",
            Func::Ceil => "CEIL",
            Func::Round => "ROUND",
            Func::Trunc => "TRUNC",
            Func::Sqrt => "SQRT",
            Func::Power => "POWER",
            Func::Ln => "LN",
            Func::Log10 | Func::LogBase => "LOG",
            Func::Exp => "EXP",
            Func::Sign => "SIGN",
            Func::DateTrunc => "DATE_TRUNC",
            Func::DatePart => "DATE_PART",
            Func::MakeDate => "MAKE_DATE",
            Func::MakeTime => "MAKE_TIME",
            Func::MakeInterval => "MAKE_INTERVAL",
            Func::DatePlusDays => "+",
            Func::DateMinusDate => "-",
            Func::Interval(op) => op.name(),
            Func::ToChar => "TO_CHAR",
        }
    }

    /// Whether a NULL argument makes the answer NULL (all but `concat`,
    /// `greatest` and `least`).
    fn strict(self) -> bool {
        !matches!(
            self,
            Func::ConcatAll
                | Func::Greatest
                | Func::Least
                | Func::SortRow { .. }
                | Func::JsonBuildObject { .. }
                | Func::SingleRow
        )
    }
}

impl fmt::Display for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An argument error, with PostgreSQL's SQLSTATE.
fn bad(state: &'static str, message: impl Into<String>) -> Error {
    Error::Argument {
        state,
        message: message.into(),
    }
}

fn overflow() -> Error {
    Error::OutOfRange("value out of range: overflow".into())
}

/// Text a result may hold at most (PostgreSQL's limit on a value, 1 GB):
/// `repeat('x', 2000000000)` is an error, not an allocation.
const MAX_TEXT: usize = 1 << 30;

/// `f` over `args` (each `rows` long, of the types the binder gave them),
/// as an array of type `ty`.
pub fn eval(f: Func, args: &[ArrayRef], rows: usize, ty: &A) -> Result<ArrayRef> {
    match f {
        Func::DateTrunc | Func::DatePart => return dates::of_unit(f, args, ty),
        Func::MakeDate => return dates::make_date(args),
        Func::MakeTime => return dates::make_time(args),
        Func::MakeInterval => return dates::make_interval(args),
        Func::DatePlusDays | Func::DateMinusDate => return dates::day_arithmetic(f, args),
        Func::Interval(op) => return super::interval::eval(op, args, ty),
        Func::ToChar => return to_char(args, rows),
        Func::Greatest | Func::Least => return extreme(args, f == Func::Greatest),
        Func::JsonBuildObject { raw } => return json_build_object(args, rows, raw),
        Func::SingleRow => return single_row(args),
        Func::SortRow {
            desc,
            nulls_first,
            keep_null,
        } => return sort_row(args, desc, nulls_first, keep_null),
        Func::RegexpLike | Func::RegexpCount | Func::RegexpSubstr | Func::RegexpReplace => {
            return super::regexp::eval(f, args, rows);
        }
        Func::Mod => return modulo(&args[0], &args[1], ty),
        Func::Bit(op) => return bitwise(op, args),
        Func::Floor | Func::Ceil | Func::Round | Func::Trunc if matches!(ty, A::Decimal128(..)) => {
            // ROUND(x, n) and TRUNC(x, n) carry n as a second argument.
            let places = args
                .get(1)
                .filter(|a| !a.is_empty() && a.is_valid(0))
                .map(|a| a.as_primitive::<Int64Type>().value(0));
            return decimal_round(f, &args[0], ty, places);
        }
        Func::Sign if matches!(ty, A::Decimal128(..)) => {
            let a = args[0].as_primitive::<Decimal128Type>();
            let out: Decimal128Array = a.iter().map(|v| v.map(|v| v.signum())).collect();
            return Ok(Arc::new(out.with_precision_and_scale(38, 0).map_err(ex)?));
        }
        _ => {}
    }
    let null_at = |r: usize| f.strict() && args.iter().any(|a| a.is_null(r));
    match ty {
        A::Utf8 => {
            let mut b = arrow_array::builder::StringBuilder::new();
            let mut s = String::new();
            for r in 0..rows {
                if null_at(r) {
                    b.append_null();
                    continue;
                }
                s.clear();
                text(f, args, r, &mut s)?;
                b.append_value(&s);
            }
            Ok(Arc::new(b.finish()))
        }
        A::Int64 => {
            let out: Int64Array = (0..rows)
                .map(|r| {
                    if null_at(r) {
                        Ok(None)
                    } else {
                        int(f, args, r).map(Some)
                    }
                })
                .collect::<Result<_>>()?;
            Ok(Arc::new(out))
        }
        A::Boolean => {
            let out: BooleanArray = (0..rows)
                .map(|r| {
                    if null_at(r) {
                        None
                    } else {
                        let (s, p) = (str_at(args, 0, r), str_at(args, 1, r));
                        Some(s.starts_with(p))
                    }
                })
                .collect();
            Ok(Arc::new(out))
        }
        A::Float64 => {
            let out: Float64Array = (0..rows)
                .map(|r| {
                    if null_at(r) {
                        Ok(None)
                    } else {
                        double(f, args, r).map(Some)
                    }
                })
                .collect::<Result<_>>()?;
            Ok(Arc::new(out))
        }
        other => Err(Error::Internal(format!("{f} of type {other}"))),
    }
}

/// [`Func::ToChar`]: each timestamp (local time; an instant in its
/// zone's) by its row's format, a format parsed once while it repeats.
fn to_char(args: &[ArrayRef], rows: usize) -> Result<ArrayRef> {
    use arrow_array::types::TimestampMicrosecondType;
    let (x, f) = (&args[0], &args[1]);
    if !matches!(x.data_type(), A::Timestamp(..) | A::Null) {
        return to_char_number(x, f, rows);
    }
    let zone = match x.data_type() {
        A::Timestamp(_, Some(z)) => Some(crate::zone::Zone::of(Some(z))),
        _ => None,
    };
    let stamps = x.as_primitive_opt::<TimestampMicrosecondType>();
    let formats = f.as_string_opt::<i32>();
    let mut b = arrow_array::builder::StringBuilder::new();
    let mut parsed: Option<(String, super::to_char::Template)> = None;
    for r in 0..rows {
        let (Some(ts), Some(fs)) = (stamps, formats) else {
            b.append_null();
            continue;
        };
        if ts.is_null(r) || fs.is_null(r) {
            b.append_null();
            continue;
        }
        let text = fs.value(r);
        if parsed.as_ref().is_none_or(|(t, _)| t != text) {
            parsed = Some((text.to_string(), super::to_char::Template::parse(text)?));
        }
        let Some((_, template)) = &parsed else {
            continue;
        };
        let v = ts.value(r);
        let local = zone.as_ref().map_or(v, |z| z.to_local(v));
        match template.format(local) {
            Some(s) => b.append_value(s),
            None => return Err(bad("22008", "timestamp out of range")),
        }
    }
    Ok(Arc::new(b.finish()))
}

/// [`Func::ToChar`] of a number: each by its row's template, parsed once
/// while it repeats.
fn to_char_number(x: &ArrayRef, f: &ArrayRef, rows: usize) -> Result<ArrayRef> {
    use super::to_char_num::{Num, NumFormat};
    let value = |r: usize| -> Result<Option<Num>> {
        if x.is_null(r) {
            return Ok(None);
        }
        Ok(Some(match x.data_type() {
            A::Int32 => Num::Int32(x.as_primitive::<Int32Type>().value(r)),
            A::Int64 => Num::Int64(x.as_primitive::<Int64Type>().value(r)),
            A::Float64 => Num::Double(x.as_primitive::<Float64Type>().value(r)),
            A::Decimal128(_, s) => Num::Decimal(x.as_primitive::<Decimal128Type>().value(r), *s),
            other => return Err(Error::Internal(format!("TO_CHAR of type {other}"))),
        }))
    };
    let formats = f.as_string_opt::<i32>();
    let mut b = arrow_array::builder::StringBuilder::new();
    let mut parsed: Option<(String, NumFormat)> = None;
    for r in 0..rows {
        let (Some(v), Some(fs)) = (value(r)?, formats) else {
            b.append_null();
            continue;
        };
        if fs.is_null(r) {
            b.append_null();
            continue;
        }
        let text = fs.value(r);
        if parsed.as_ref().is_none_or(|(t, _)| t != text) {
            parsed = Some((text.to_string(), NumFormat::parse(text)?));
        }
        if let Some((_, template)) = &parsed {
            b.append_value(template.format(v)?);
        }
    }
    Ok(Arc::new(b.finish()))
}

/// [`Func::SortRow`]: each row of `args` as row-format bytes, which
/// compare as the rows order (doubles canonical: -0 is 0, one NaN, as SQL
/// compares them; dictionaries by their values).
pub fn sort_row(
    args: &[ArrayRef],
    desc: u32,
    nulls_first: u32,
    keep_null: bool,
) -> Result<ArrayRef> {
    let cols = args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let a = match a.data_type() {
                A::Dictionary(_, v) => arrow_cast::cast(a, v).map_err(ex)?,
                _ => a.clone(),
            };
            // array_agg's value comes back as it was (-0 stays -0); keys
            // and compared values are canonical.
            if keep_null && i + 1 == args.len() {
                return Ok(a);
            }
            Ok(super::expr::canonical_doubles(&a))
        })
        .collect::<Result<Vec<_>>>()?;
    let fields = cols
        .iter()
        .enumerate()
        .map(|(i, a)| {
            arrow_row::SortField::new_with_options(
                a.data_type().clone(),
                arrow_schema::SortOptions {
                    descending: desc >> i & 1 == 1,
                    nulls_first: nulls_first >> i & 1 == 1,
                },
            )
        })
        .collect();
    let conv = arrow_row::RowConverter::new(fields).map_err(ex)?;
    let rows = conv.convert_columns(&cols).map_err(ex)?;
    let Some(last) = cols.last() else {
        return Err(Error::Internal("SORT_ROW of nothing".into()));
    };
    let mut b = arrow_array::builder::BinaryBuilder::new();
    for r in 0..rows.num_rows() {
        if last.is_null(r) && !keep_null {
            b.append_null();
        } else {
            b.append_value(rows.row(r).as_ref());
        }
    }
    Ok(Arc::new(b.finish()))
}

/// [`Func::JsonBuildObject`]: per row, `{"k1" : v1, "k2" : v2}` as
/// PostgreSQL writes it (keys as text; see [`json_value`] for values;
/// value `i` as it is where bit `i` of `raw` is set).
fn json_build_object(args: &[ArrayRef], rows: usize, raw: u64) -> Result<ArrayRef> {
    // Each argument as JSON text (None: NULL).
    let mut texts: Vec<Vec<Option<String>>> = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        let key = i % 2 == 0;
        let as_is = !key && raw >> (i / 2) & 1 == 1;
        let plain = if key {
            Some(arrow_cast::cast(a, &A::Utf8).map_err(ex)?)
        } else {
            None
        };
        let nulls = a.logical_nulls();
        let mut out = Vec::with_capacity(rows);
        for r in 0..rows {
            if nulls.as_ref().is_some_and(|n| n.is_null(r)) {
                if key {
                    return Err(bad("22023", format!("argument {} cannot be null", i + 1)));
                }
                out.push(None);
                continue;
            }
            out.push(Some(match &plain {
                Some(p) => json_string(p.as_string::<i32>().value(r)),
                None if as_is => a.as_string::<i32>().value(r).to_string(),
                None => json_value(a.as_ref(), r)?,
            }));
        }
        texts.push(out);
    }
    let mut b = arrow_array::builder::StringBuilder::new();
    let mut s = String::new();
    for r in 0..rows {
        s.clear();
        s.push('{');
        for (i, pair) in texts.chunks(2).enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            s.push_str(pair[0][r].as_deref().unwrap_or("null"));
            s.push_str(" : ");
            s.push_str(pair.get(1).and_then(|v| v[r].as_deref()).unwrap_or("null"));
        }
        s.push('}');
        b.append_value(&s);
    }
    Ok(Arc::new(b.finish()))
}

/// A number of bytes as PostgreSQL's `pg_size_pretty` writes it: bytes
/// below 10 kB, then the largest unit (kB, MB, GB, TB, PB, each 1024 of
/// the one before) that keeps the number below 20,480, rounded half away
/// from zero.
fn size_pretty(bytes: i64, out: &mut String) {
    use std::fmt::Write;
    if bytes.unsigned_abs() < 10 * 1024 {
        let _ = write!(out, "{bytes} bytes");
        return;
    }
    // Halves of the unit, for the rounding.
    let mut halves = bytes / 512;
    let mut units = ["kB", "MB", "GB", "TB", "PB"].iter().peekable();
    while let Some(unit) = units.next() {
        if halves.unsigned_abs() < 20 * 1024 - 1 || units.peek().is_none() {
            let rounded = (halves + if halves < 0 { -1 } else { 1 }) / 2;
            let _ = write!(out, "{rounded} {unit}");
            return;
        }
        halves /= 1024;
    }
}

/// [`Func::SingleRow`].
fn single_row(args: &[ArrayRef]) -> Result<ArrayRef> {
    let (n, v, filtered) = match args {
        [n, v] => (n, v, false),
        [n, v, _] => (n, v, true),
        _ => return Err(Error::Internal("SINGLE_ROW takes two arguments".into())),
    };
    let n = n.as_primitive::<Int64Type>();
    if n.iter().any(|c| c.is_some_and(|c| c > 1)) {
        // Rows of one key before a condition on the outer row that is
        // not an equality: how many pass it is not known here.
        if filtered {
            return Err(bad(
                "0A000",
                "a correlated select-list subquery whose condition on the outer query is not \
                 an equality found several rows of one key before that condition; this is not \
                 supported (make the subquery's equalities with the outer query pick one row)",
            ));
        }
        return Err(bad(
            "21000",
            "more than one row returned by a subquery used as an expression",
        ));
    }
    if n.null_count() == 0 {
        return Ok(v.clone());
    }
    let none: arrow_array::BooleanArray = n.iter().map(|c| Some(c.is_none())).collect();
    arrow_select::nullif::nullif(v, &none).map_err(ex)
}

/// Row `r` of `a` (not NULL) as PostgreSQL's `to_json` writes it:
/// numbers (not NaN or infinite) and booleans bare; text, dates and
/// timestamps (`2024-01-02T03:04:05.5`, with `+00:00` when zoned) as
/// strings; an array as `[…]` of its elements, NULL ones `null`.
fn json_value(a: &dyn arrow_array::Array, r: usize) -> Result<String> {
    Ok(match a.data_type() {
        A::Boolean => (if a.as_boolean().value(r) {
            "true"
        } else {
            "false"
        })
        .to_string(),
        A::Float64 => {
            let v = a.as_primitive::<arrow_array::types::Float64Type>().value(r);
            let t = crate::batch::float_text(v);
            if v.is_finite() { t } else { json_string(&t) }
        }
        A::Int8 | A::Int16 | A::Int32 | A::Int64 | A::Decimal128(..) | A::Decimal64(..) => {
            crate::batch::format_value(a, r).unwrap_or_default()
        }
        A::Timestamp(_, zone) => {
            let t = crate::batch::format_value(a, r).unwrap_or_default();
            let mut t = t.replacen(' ', "T", 1);
            // PostgreSQL's JSON writes a zone's offset with its minutes.
            if zone.is_some() && t.len() >= 3 && t.as_bytes()[t.len() - 3] != b':' {
                t.push_str(":00");
            }
            json_string(&t)
        }
        A::List(_) => {
            let list = a.as_list::<i32>().value(r);
            let mut out = String::from("[");
            for i in 0..list.len() {
                if i > 0 {
                    out.push(',');
                }
                if list.is_null(i) {
                    out.push_str("null");
                } else {
                    out.push_str(&json_value(list.as_ref(), i)?);
                }
            }
            out.push(']');
            out
        }
        A::Dictionary(_, v) => {
            let plain = arrow_cast::cast(&a.slice(r, 1), v).map_err(ex)?;
            json_value(plain.as_ref(), 0)?
        }
        _ => json_string(&crate::batch::format_value(a, r).unwrap_or_default()),
    })
}

/// `s` as a JSON string, escaped as PostgreSQL escapes it.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn ex(e: arrow_schema::ArrowError) -> Error {
    Error::Exec(e.to_string())
}

fn str_at(args: &[ArrayRef], i: usize, r: usize) -> &str {
    args[i].as_string::<i32>().value(r)
}

fn int_at(args: &[ArrayRef], i: usize, r: usize) -> i64 {
    args[i].as_primitive::<Int64Type>().value(r)
}

fn f64_at(args: &[ArrayRef], i: usize, r: usize) -> f64 {
    args[i].as_primitive::<Float64Type>().value(r)
}

/// `c` in upper case as C's `towupper` maps it: one character to one (a
/// character whose upper case is several, `ß`, stays as it is).
pub fn upper_char(c: char) -> char {
    let mut m = c.to_uppercase();
    match (m.next(), m.next()) {
        (Some(x), None) => x,
        _ => c,
    }
}

/// `c` in lower case as C's `towlower` maps it (`İ` is `i`).
pub fn lower_char(c: char) -> char {
    let mut m = c.to_lowercase();
    match (m.next(), m.next()) {
        (Some(x), None) => x,
        _ if c == 'İ' => 'i',
        _ => c,
    }
}

/// The first `n` characters of `s` (all but the last `-n` when negative).
fn left(s: &str, n: i64) -> &str {
    let chars = s.chars().count() as i64;
    let keep = if n >= 0 {
        n.min(chars)
    } else {
        (chars + n).max(0)
    };
    match s.char_indices().nth(keep as usize) {
        Some((b, _)) => &s[..b],
        None => s,
    }
}

/// The last `n` characters of `s` (all but the first `-n` when negative).
fn right(s: &str, n: i64) -> &str {
    let chars = s.chars().count() as i64;
    let drop = if n >= 0 {
        (chars - n).max(0)
    } else {
        n.unsigned_abs().min(chars as u64) as i64
    };
    match s.char_indices().nth(drop as usize) {
        Some((b, _)) => &s[b..],
        None => "",
    }
}

/// `s` padded (or cut) to `n` characters with `fill` repeated, on the
/// left or the right.
fn pad(s: &str, n: i64, fill: &str, on_left: bool, out: &mut String) -> Result<()> {
    let n = n.max(0) as usize;
    let have = s.chars().count();
    if have >= n || fill.is_empty() {
        out.push_str(left(s, n as i64));
        return Ok(());
    }
    // PostgreSQL's limit: room for 4 bytes a character.
    if n.saturating_mul(4) > MAX_TEXT {
        return Err(bad("54000", "requested length too large"));
    }
    let padding: String = fill.chars().cycle().take(n - have).collect();
    if on_left {
        out.push_str(&padding);
        out.push_str(s);
    } else {
        out.push_str(s);
        out.push_str(&padding);
    }
    Ok(())
}

fn text(f: Func, args: &[ArrayRef], r: usize, out: &mut String) -> Result<()> {
    let s = |i: usize| str_at(args, i, r);
    match f {
        Func::Concat => {
            out.push_str(s(0));
            out.push_str(s(1));
        }
        Func::ConcatAll => {
            for (i, a) in args.iter().enumerate() {
                if a.is_valid(r) {
                    out.push_str(s(i));
                }
            }
        }
        Func::Left => out.push_str(left(s(0), int_at(args, 1, r))),
        Func::Right => out.push_str(right(s(0), int_at(args, 1, r))),
        Func::Lpad | Func::Rpad => {
            let fill = if args.len() > 2 { s(2) } else { " " };
            pad(s(0), int_at(args, 1, r), fill, f == Func::Lpad, out)?;
        }
        Func::Replace => {
            if s(1).is_empty() {
                out.push_str(s(0));
            } else {
                out.push_str(&s(0).replace(s(1), s(2)));
            }
        }
        Func::SplitPart => {
            let (text, delim, n) = (s(0), s(1), int_at(args, 2, r));
            if n == 0 {
                return Err(bad("22023", "field position must not be zero"));
            }
            // An empty delimiter: the text is one field.
            let fields: Vec<&str> = if delim.is_empty() {
                if text.is_empty() { vec![] } else { vec![text] }
            } else {
                text.split(delim).collect()
            };
            let k = if n > 0 {
                (n - 1) as usize
            } else {
                match fields.len().checked_sub(n.unsigned_abs() as usize) {
                    Some(k) => k,
                    None => return Ok(()),
                }
            };
            out.push_str(fields.get(k).copied().unwrap_or(""));
        }
        Func::Initcap => {
            // A letter after a non-alphanumeric character (or first) is
            // upper case, every other letter lower case; a character at a
            // time, as C's towupper maps it (one character to one: `ß`
            // stays `ß`).
            let mut start = true;
            for c in s(0).chars() {
                if c.is_alphabetic() || c.is_ascii_digit() {
                    out.push(if start { upper_char(c) } else { lower_char(c) });
                    start = false;
                } else {
                    out.push(c);
                    start = true;
                }
            }
        }
        Func::Repeat => {
            let n = int_at(args, 1, r).max(0) as usize;
            if s(0).len().saturating_mul(n) > MAX_TEXT {
                return Err(bad("54000", "requested length too large"));
            }
            out.push_str(&s(0).repeat(n));
        }
        Func::Reverse => out.extend(s(0).chars().rev()),
        Func::SizePretty => size_pretty(int_at(args, 0, r), out),
        Func::Btrim | Func::Ltrim | Func::Rtrim => {
            let chars: Vec<char> = if args.len() > 1 {
                s(1).chars().collect()
            } else {
                vec![' ']
            };
            let is = |c: char| chars.contains(&c);
            let t = s(0);
            out.push_str(match f {
                Func::Btrim => t.trim_matches(is),
                Func::Ltrim => t.trim_start_matches(is),
                _ => t.trim_end_matches(is),
            });
        }
        other => return Err(Error::Internal(format!("{other} is not a text function"))),
    }
    if out.len() > MAX_TEXT {
        return Err(bad("54000", "requested length too large"));
    }
    Ok(())
}

fn int(f: Func, args: &[ArrayRef], r: usize) -> Result<i64> {
    match f {
        // The character position of the first match (1-based), 0 if none.
        Func::Strpos => {
            let (s, sub) = (str_at(args, 0, r), str_at(args, 1, r));
            Ok(match s.find(sub) {
                Some(b) => s[..b].chars().count() as i64 + 1,
                None => 0,
            })
        }
        other => Err(Error::Internal(format!(
            "{other} is not an integer function"
        ))),
    }
}

fn double(f: Func, args: &[ArrayRef], r: usize) -> Result<f64> {
    let x = f64_at(args, 0, r);
    let v = match f {
        Func::Floor => x.floor(),
        Func::Ceil => x.ceil(),
        Func::Round => x.round_ties_even(),
        Func::Trunc => x.trunc(),
        // NaN and ±0: 0, as PostgreSQL's sign of a double.
        Func::Sign => {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        }
        Func::Sqrt => {
            if x < 0.0 {
                return Err(bad("2201F", "cannot take square root of a negative number"));
            }
            x.sqrt()
        }
        Func::Ln | Func::Log10 | Func::LogBase => {
            let x = if f == Func::LogBase {
                f64_at(args, 1, r)
            } else {
                x
            };
            if x == 0.0 {
                return Err(bad("2201E", "cannot take logarithm of zero"));
            }
            if x < 0.0 {
                return Err(bad("2201E", "cannot take logarithm of a negative number"));
            }
            match f {
                Func::Ln => x.ln(),
                Func::Log10 => x.log10(),
                _ => {
                    let b = f64_at(args, 0, r);
                    if b <= 0.0 {
                        return Err(bad(
                            "2201E",
                            if b == 0.0 {
                                "cannot take logarithm of zero"
                            } else {
                                "cannot take logarithm of a negative number"
                            },
                        ));
                    }
                    if b == 1.0 {
                        return Err(Error::DivisionByZero);
                    }
                    x.ln() / b.ln()
                }
            }
        }
        Func::Exp => {
            let v = x.exp();
            if v == 0.0 && x.is_finite() {
                return Err(Error::OutOfRange("value out of range: underflow".into()));
            }
            v
        }
        Func::Power => {
            let y = f64_at(args, 1, r);
            if x == 0.0 && y < 0.0 {
                return Err(bad("2201F", "zero raised to a negative power is undefined"));
            }
            if x < 0.0 && y.fract() != 0.0 && y.is_finite() {
                return Err(bad(
                    "2201F",
                    "a negative number raised to a non-integer power yields a complex result",
                ));
            }
            let v = x.powf(y);
            if v == 0.0 && x != 0.0 && x.is_finite() && y.is_finite() && x.abs() != 1.0 {
                return Err(Error::OutOfRange("value out of range: underflow".into()));
            }
            v
        }
        other => return Err(Error::Internal(format!("{other} is not a DOUBLE function"))),
    };
    // A finite argument whose answer is not: out of range.
    if v.is_infinite()
        && args
            .iter()
            .all(|a| f64_at(std::slice::from_ref(a), 0, r).is_finite())
    {
        return Err(overflow());
    }
    Ok(v)
}

/// GREATEST / LEAST: per row, the extreme of the non-NULL arguments
/// (arguments of one type; doubles order NaN above every number).
fn extreme(args: &[ArrayRef], greatest: bool) -> Result<ArrayRef> {
    // Compared as SQL compares doubles (-0.0 equal to 0.0, one NaN);
    // the values kept as they are (greatest(-0.0, 0.0) is -0.0, the
    // first of equals).
    let canon = super::expr::canonical_doubles;
    let mut acc = args[0].clone();
    for next in &args[1..] {
        let better = if greatest {
            arrow_ord::cmp::gt(&canon(next), &canon(&acc))
        } else {
            arrow_ord::cmp::lt(&canon(next), &canon(&acc))
        }
        .map_err(ex)?;
        // NULL (a NULL on either side): not better.
        let better = if better.null_count() > 0 {
            arrow_select::filter::prep_null_mask_filter(&better)
        } else {
            better
        };
        let acc_null = arrow_arith::boolean::is_null(&acc).map_err(ex)?;
        let pick = arrow_arith::boolean::or(&better, &acc_null).map_err(ex)?;
        acc = arrow_select::zip::zip(&pick, next, &acc).map_err(ex)?;
    }
    Ok(acc)
}

/// `a % b` of BIGINTs or of DECIMALs of one scale (`ty`).
/// A bitwise operator of [`Func::Bit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    /// Shifts, the count taken modulo 64 as the machine does (PostgreSQL
    /// leaves a count past the width to C); `>>` keeps the sign.
    Shl,
    Shr,
    Not,
}

impl BitOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BitOp::And => "&",
            BitOp::Or => "|",
            BitOp::Xor => "#",
            BitOp::Shl => "<<",
            BitOp::Shr => ">>",
            BitOp::Not => "~",
        }
    }
}

/// [`Func::Bit`] of INTEGERs or BIGINTs (both arguments one type).
fn bitwise(op: BitOp, args: &[ArrayRef]) -> Result<ArrayRef> {
    fn apply<T: arrow_array::ArrowPrimitiveType>(
        op: BitOp,
        args: &[ArrayRef],
        f: impl Fn(BitOp, T::Native, T::Native) -> T::Native,
    ) -> ArrayRef {
        let a = args[0].as_primitive::<T>();
        let out: arrow_array::PrimitiveArray<T> = if op == BitOp::Not {
            a.iter().map(|x| x.map(|x| f(op, x, x))).collect()
        } else {
            let b = args[1].as_primitive::<T>();
            a.iter()
                .zip(b.iter())
                .map(|(x, y)| Some(f(op, x?, y?)))
                .collect()
        };
        Arc::new(out)
    }
    macro_rules! ops {
        ($t:ty) => {
            |op: BitOp, x: $t, y: $t| match op {
                BitOp::And => x & y,
                BitOp::Or => x | y,
                BitOp::Xor => x ^ y,
                BitOp::Shl => x.wrapping_shl(y as u32),
                BitOp::Shr => x.wrapping_shr(y as u32),
                BitOp::Not => !x,
            }
        };
    }
    Ok(match args[0].data_type() {
        A::Int32 => apply::<Int32Type>(op, args, ops!(i32)),
        _ => apply::<Int64Type>(op, args, ops!(i64)),
    })
}

fn modulo(a: &ArrayRef, b: &ArrayRef, ty: &A) -> Result<ArrayRef> {
    match ty {
        A::Int64 => {
            let (a, b) = (a.as_primitive::<Int64Type>(), b.as_primitive::<Int64Type>());
            let out: Int64Array = a
                .iter()
                .zip(b.iter())
                .map(|(x, y)| match (x, y) {
                    (Some(_), Some(0)) => Err(Error::DivisionByZero),
                    // i64::MIN % -1 is 0 (the quotient overflows, not the
                    // remainder).
                    (Some(x), Some(y)) => Ok(Some(x.checked_rem(y).unwrap_or(0))),
                    _ => Ok(None),
                })
                .collect::<Result<_>>()?;
            Ok(Arc::new(out))
        }
        A::Decimal128(p, s) => {
            let (a, b) = (
                a.as_primitive::<Decimal128Type>(),
                b.as_primitive::<Decimal128Type>(),
            );
            let out: Decimal128Array = a
                .iter()
                .zip(b.iter())
                .map(|(x, y)| match (x, y) {
                    (Some(_), Some(0)) => Err(Error::DivisionByZero),
                    (Some(x), Some(y)) => Ok(Some(x.checked_rem(y).unwrap_or(0))),
                    _ => Ok(None),
                })
                .collect::<Result<_>>()?;
            Ok(Arc::new(out.with_precision_and_scale(*p, *s).map_err(ex)?))
        }
        other => Err(Error::Internal(format!("MOD of {other}"))),
    }
}

/// FLOOR, CEIL, ROUND, TRUNC of a DECIMAL (or, with `places`, of a
/// DOUBLE, read as PostgreSQL casts a double to a numeric: its 15
/// significant digits), to `places` places (the scale of `ty` when
/// `None`; negative: to tens, hundreds…), as a value of `ty` (ROUND half
/// away from zero, as PostgreSQL rounds a numeric).
fn decimal_round(f: Func, a: &ArrayRef, ty: &A, places: Option<i64>) -> Result<ArrayRef> {
    let A::Decimal128(p, scale) = ty else {
        return Err(Error::Internal(format!("{f} as {ty}")));
    };
    let to = places.map_or(*scale as i32, |n| n.clamp(-38, 38) as i32);
    // Places below the result's scale (negative places): the rounded
    // value times 10^(scale - to).
    let up = 10i128
        .checked_pow((*scale as i32 - to).max(0) as u32)
        .ok_or_else(overflow)?;
    let to_scale = to.max(*scale as i32);
    let out: Decimal128Array = match a.data_type() {
        A::Decimal128(_, from) => a
            .as_primitive::<Decimal128Type>()
            .iter()
            .map(|v| {
                v.map(|v| round_value(f, v, *from as i32, to, to_scale, up))
                    .transpose()
            })
            .collect::<Result<_>>()?,
        A::Float64 => a
            .as_primitive::<Float64Type>()
            .iter()
            .map(|v| {
                v.map(|v| {
                    let (digits, from) = digits15(v)?;
                    round_value(f, digits, from, to, to_scale, up)
                })
                .transpose()
            })
            .collect::<Result<_>>()?,
        other => return Err(Error::Internal(format!("{f} of {other}"))),
    };
    Ok(Arc::new(
        out.with_precision_and_scale(*p, *scale).map_err(ex)?,
    ))
}

/// A double as PostgreSQL casts it to a numeric: its value to 15
/// significant digits, as digits at a scale.
fn digits15(v: f64) -> Result<(i128, i32)> {
    if !v.is_finite() {
        return Err(Error::OutOfRange(format!(
            "value out of range: cannot convert {v} to DECIMAL"
        )));
    }
    // d.dddddddddddddde±x: 15 digits, the point after the first.
    let text = format!("{v:.14e}");
    let (mantissa, exp) = text
        .split_once('e')
        .ok_or_else(|| Error::Internal(format!("double as text: {text}")))?;
    let exp: i32 = exp
        .parse()
        .map_err(|_| Error::Internal(format!("double as text: {text}")))?;
    let digits: i128 = mantissa
        .replace('.', "")
        .parse()
        .map_err(|_| Error::Internal(format!("double as text: {text}")))?;
    let scale = 14 - exp;
    if scale >= 0 {
        Ok((digits, scale))
    } else {
        let m = 10i128
            .checked_pow(scale.unsigned_abs())
            .ok_or_else(overflow)?;
        digits.checked_mul(m).map(|d| (d, 0)).ok_or_else(overflow)
    }
}

/// `v` (of scale `from`) rounded (or cut, floored, ceiled) to `to`
/// places, at scale `to_scale`, times `up`.
fn round_value(f: Func, v: i128, from: i32, to: i32, to_scale: i32, up: i128) -> Result<i128> {
    if to >= from {
        return 10i128
            .checked_pow((to_scale - from) as u32)
            .and_then(|m| v.checked_mul(m))
            .ok_or_else(overflow);
    }
    // More places cut than a DECIMAL holds: nothing is left but, for
    // FLOOR and CEIL, the sign's side.
    let Some(m) = 10i128.checked_pow((from - to) as u32) else {
        let q: i128 = match f {
            Func::Floor if v < 0 => -1,
            Func::Ceil if v > 0 => 1,
            _ => 0,
        };
        return q.checked_mul(up).ok_or_else(overflow);
    };
    let (q, rem) = (v / m, v % m);
    let q = match f {
        Func::Trunc => q,
        Func::Floor if rem < 0 => q - 1,
        Func::Ceil if rem > 0 => q + 1,
        Func::Round if rem.unsigned_abs() * 2 >= m.unsigned_abs() => q + v.signum(),
        _ => q,
    };
    q.checked_mul(up).ok_or_else(overflow)
}

/// DATE_TRUNC, DATE_PART and MAKE_DATE.
mod dates {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Date32Type, Int64Type, TimestampMicrosecondType};
    use arrow_array::{Array, ArrayRef, Date32Array, Float64Array, TimestampMicrosecondArray};
    use arrow_schema::{DataType as A, TimeUnit};
    use chrono::{Datelike, NaiveDate};
    use std::sync::Arc;

    use super::{Func, Unit, bad};
    use crate::error::{Error, Result};
    use crate::parse::value;

    const SEC: i64 = 1_000_000;
    const DAY: i64 = 86_400 * SEC;

    fn out_of_range() -> Error {
        Error::OutOfRange("timestamp out of range".into())
    }

    /// The unit named by the first argument (a constant the binder
    /// checked).
    fn unit(args: &[ArrayRef]) -> Result<Option<Unit>> {
        let u = &args[0];
        if u.is_empty() || u.is_null(0) {
            return Ok(None);
        }
        let name = u.as_string::<i32>().value(0);
        Unit::of(name)
            .map(Some)
            .ok_or_else(|| bad("22023", format!("unit \"{name}\" not recognized")))
    }

    /// The local time `local` (µs since 1970-01-01 00:00) cut to `unit`.
    fn trunc(local: i64, unit: Unit) -> Option<i64> {
        let cut = |m: i64| Some(local - local.rem_euclid(m));
        let day = |d: NaiveDate| Some(i64::from(d.to_epoch_days()) * DAY);
        let date = value::date_from_days(i32::try_from(local.div_euclid(DAY)).ok()?)?;
        let first_of = |year: i32, month: u32| NaiveDate::from_ymd_opt(year, month, 1);
        match unit {
            Unit::Microseconds => Some(local),
            Unit::Milliseconds => cut(1_000),
            Unit::Second => cut(SEC),
            Unit::Minute => cut(60 * SEC),
            Unit::Hour => cut(3_600 * SEC),
            Unit::Day => cut(DAY),
            Unit::Week => {
                day(date - chrono::Days::new(u64::from(date.weekday().num_days_from_monday())))
            }
            Unit::Month => day(first_of(date.year(), date.month())?),
            Unit::Quarter => day(first_of(date.year(), (date.month() - 1) / 3 * 3 + 1)?),
            Unit::Year => day(first_of(date.year(), 1)?),
            // Years 1-10 are the first decade… in PostgreSQL's counting
            // (decades by the year's tens; centuries and millennia from
            // year 1).
            Unit::Decade => day(first_of(date.year().div_euclid(10) * 10, 1)?),
            Unit::Century => day(first_of((date.year() - 1).div_euclid(100) * 100 + 1, 1)?),
            Unit::Millennium => day(first_of((date.year() - 1).div_euclid(1000) * 1000 + 1, 1)?),
            _ => None,
        }
    }

    /// Field `unit` of the local time `local`; `instant`: the UTC instant
    /// (for EPOCH).
    fn field(local: i64, instant: i64, unit: Unit) -> Option<f64> {
        let date = value::date_from_days(i32::try_from(local.div_euclid(DAY)).ok()?)?;
        let us = local.rem_euclid(DAY);
        let year = |y: i32| f64::from(y);
        Some(match unit {
            Unit::Microseconds => (us % (60 * SEC)) as f64,
            Unit::Milliseconds => (us % (60 * SEC)) as f64 / 1_000.0,
            Unit::Second => (us % (60 * SEC)) as f64 / SEC as f64,
            Unit::Minute => (us / (60 * SEC) % 60) as f64,
            Unit::Hour => (us / (3_600 * SEC)) as f64,
            Unit::Day => f64::from(date.day()),
            Unit::Week => f64::from(date.iso_week().week()),
            Unit::Month => f64::from(date.month()),
            Unit::Quarter => f64::from((date.month() - 1) / 3 + 1),
            Unit::Year => year(date.year()),
            Unit::Decade => year(date.year().div_euclid(10)),
            Unit::Century => year((date.year() - 1).div_euclid(100) + 1),
            Unit::Millennium => year((date.year() - 1).div_euclid(1000) + 1),
            Unit::Dow => f64::from(date.weekday().num_days_from_sunday()),
            Unit::Isodow => f64::from(date.weekday().number_from_monday()),
            Unit::Doy => f64::from(date.ordinal()),
            Unit::Isoyear => year(date.iso_week().year()),
            Unit::Epoch => instant as f64 / SEC as f64,
        })
    }

    /// DATE_TRUNC or DATE_PART (`f`) over `args` (unit, values), as `ty`.
    pub(super) fn of_unit(f: Func, args: &[ArrayRef], ty: &A) -> Result<ArrayRef> {
        let unit = unit(args)?;
        let x = &args[1];
        // Each value as (local time, instant) in µs, or None.
        let values: Vec<Option<(i64, i64)>> = match x.data_type() {
            A::Date32 => x
                .as_primitive::<Date32Type>()
                .iter()
                .map(|d| d.map(|d| (i64::from(d) * DAY, i64::from(d) * DAY)))
                .collect(),
            A::Timestamp(TimeUnit::Microsecond, zone) => {
                let z = crate::zone::Zone::of(zone.as_deref());
                x.as_primitive::<TimestampMicrosecondType>()
                    .iter()
                    .map(|v| v.map(|v| (if zone.is_some() { z.to_local(v) } else { v }, v)))
                    .collect()
            }
            A::Null => vec![None; x.len()],
            // A time's fields are those of the interval since midnight,
            // the clock's only (PostgreSQL's).
            A::Time64(_) if f == Func::DatePart => {
                let Some(unit) = unit else {
                    return Ok(arrow_array::new_null_array(ty, x.len()));
                };
                if !matches!(
                    unit,
                    Unit::Microseconds
                        | Unit::Milliseconds
                        | Unit::Second
                        | Unit::Minute
                        | Unit::Hour
                        | Unit::Epoch
                ) {
                    return Err(bad(
                        "0A000",
                        format!(
                            "unit \"{}\" not supported for type time without time zone",
                            format!("{unit:?}").to_lowercase()
                        ),
                    ));
                }
                let out: Float64Array = x
                    .as_primitive::<arrow_array::types::Time64MicrosecondType>()
                    .iter()
                    .map(|v| {
                        v.and_then(|us| {
                            crate::query::interval::Interval {
                                months: 0,
                                days: 0,
                                micros: us,
                            }
                            .field(unit)
                        })
                    })
                    .collect();
                return Ok(Arc::new(out));
            }
            A::Interval(_) if f == Func::DatePart => {
                let Some(unit) = unit else {
                    return Ok(arrow_array::new_null_array(ty, x.len()));
                };
                let ivs = crate::query::interval::values(x);
                // Day of week and the like are no fields of an interval.
                if crate::query::interval::Interval::default()
                    .field(unit)
                    .is_none()
                {
                    return Err(bad(
                        "0A000",
                        format!(
                            "unit \"{}\" not supported for type interval",
                            format!("{unit:?}").to_lowercase()
                        ),
                    ));
                }
                let out: Float64Array = ivs.iter().map(|v| v.and_then(|v| v.field(unit))).collect();
                return Ok(Arc::new(out));
            }
            other => return Err(Error::Internal(format!("{f} of {other}"))),
        };
        let Some(unit) = unit else {
            return Ok(arrow_array::new_null_array(ty, x.len()));
        };
        match f {
            Func::DatePart => {
                let out: Float64Array = values
                    .iter()
                    .map(|v| v.and_then(|(local, instant)| field(local, instant, unit)))
                    .collect();
                Ok(Arc::new(out))
            }
            _ => {
                if !unit.truncates() {
                    return Err(bad(
                        "22023",
                        format!("unit \"{unit:?}\" not supported by DATE_TRUNC"),
                    ));
                }
                let A::Timestamp(_, zone) = ty else {
                    return Err(Error::Internal(format!("DATE_TRUNC as {ty}")));
                };
                let z = crate::zone::Zone::of(zone.as_deref());
                let out: TimestampMicrosecondArray = values
                    .iter()
                    .map(|v| {
                        v.map(|(local, _)| {
                            let t = trunc(local, unit).ok_or_else(out_of_range)?;
                            Ok(if zone.is_some() { z.to_utc(t) } else { t })
                        })
                        .transpose()
                    })
                    .collect::<Result<_>>()?;
                Ok(Arc::new(out.with_timezone_opt(zone.clone())))
            }
        }
    }

    /// DATE + BIGINT days, and DATE - DATE in days.
    pub(super) fn day_arithmetic(f: Func, args: &[ArrayRef]) -> Result<ArrayRef> {
        let d = args[0].as_primitive::<Date32Type>();
        if f == Func::DateMinusDate {
            let e = args[1].as_primitive::<Date32Type>();
            let out: arrow_array::Int64Array = d
                .iter()
                .zip(e.iter())
                .map(|(a, b)| Some(i64::from(a?) - i64::from(b?)))
                .collect();
            return Ok(Arc::new(out));
        }
        let n = args[1].as_primitive::<Int64Type>();
        let out: Date32Array = d
            .iter()
            .zip(n.iter())
            .map(|(a, k)| match (a, k) {
                (Some(a), Some(k)) => i64::from(a)
                    .checked_add(k)
                    .and_then(|v| i32::try_from(v).ok())
                    .filter(|&v| value::date_from_days(v).is_some())
                    .map(Some)
                    .ok_or_else(|| bad("22008", "date out of range")),
                _ => Ok(None),
            })
            .collect::<Result<_>>()?;
        Ok(Arc::new(out))
    }

    /// Seconds as whole microseconds, rounded as PostgreSQL's `rint`
    /// (half to even); `None` when not finite or too large.
    fn micros_of_seconds(secs: f64) -> Option<i64> {
        let us = (secs * 1e6).round_ties_even();
        (us.is_finite() && us.abs() < 9.2e18).then_some(us as i64)
    }

    /// MAKE_TIME(hour, min, sec), PostgreSQL's: up to 24:00:00, else
    /// 22008 naming the fields.
    pub(super) fn make_time(args: &[ArrayRef]) -> Result<ArrayRef> {
        let (h, m) = (
            args[0].as_primitive::<Int64Type>(),
            args[1].as_primitive::<Int64Type>(),
        );
        let s = args[2].as_primitive::<arrow_array::types::Float64Type>();
        let out: arrow_array::Time64MicrosecondArray = (0..h.len())
            .map(|r| {
                if h.is_null(r) || m.is_null(r) || s.is_null(r) {
                    return Ok(None);
                }
                let (hv, mv, sv) = (h.value(r), m.value(r), s.value(r));
                let us = micros_of_seconds(sv).filter(|_| {
                    (0..=24).contains(&hv) && (0..60).contains(&mv) && (0.0..=60.0).contains(&sv)
                });
                us.map(|us| (hv * 60 + mv) * 60_000_000 + us)
                    .filter(|&t| (0..=DAY).contains(&t))
                    .map(Some)
                    .ok_or_else(|| {
                        bad(
                            "22008",
                            format!("time field value out of range: {hv}:{mv:02}:{sv:02}"),
                        )
                    })
            })
            .collect::<Result<_>>()?;
        Ok(Arc::new(out))
    }

    /// MAKE_INTERVAL(years, months, weeks, days, hours, mins, secs),
    /// PostgreSQL's: months and days summed apart from the time.
    pub(super) fn make_interval(args: &[ArrayRef]) -> Result<ArrayRef> {
        let ints: Vec<&arrow_array::Int64Array> = (0..6)
            .map(|i| args[i].as_primitive::<Int64Type>())
            .collect();
        let secs = args[6].as_primitive::<arrow_array::types::Float64Type>();
        let range = || bad("22008", "interval out of range");
        let values = (0..secs.len())
            .map(|r| {
                if secs.is_null(r) || ints.iter().any(|a| a.is_null(r)) {
                    return Ok(None);
                }
                let v: Vec<i64> = ints.iter().map(|a| a.value(r)).collect();
                let months = v[0].checked_mul(12).and_then(|y| y.checked_add(v[1]));
                let days = v[2].checked_mul(7).and_then(|w| w.checked_add(v[3]));
                let micros = v[4]
                    .checked_mul(3_600_000_000)
                    .and_then(|h| h.checked_add(v[5].checked_mul(60_000_000)?))
                    .and_then(|t| t.checked_add(micros_of_seconds(secs.value(r))?));
                match (
                    months.and_then(|m| i32::try_from(m).ok()),
                    days.and_then(|d| i32::try_from(d).ok()),
                    micros,
                ) {
                    (Some(months), Some(days), Some(micros)) => {
                        Ok(Some(crate::query::interval::Interval {
                            months,
                            days,
                            micros,
                        }))
                    }
                    _ => Err(range()),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        crate::query::interval::array(values)
    }

    /// MAKE_DATE(year, month, day) of BIGINTs.
    pub(super) fn make_date(args: &[ArrayRef]) -> Result<ArrayRef> {
        let [y, m, d] = [0, 1, 2].map(|i| args[i].as_primitive::<Int64Type>());
        let out: Date32Array = (0..y.len())
            .map(|r| {
                if y.is_null(r) || m.is_null(r) || d.is_null(r) {
                    return Ok(None);
                }
                let (yv, mv, dv) = (y.value(r), m.value(r), d.value(r));
                let date = (|| {
                    NaiveDate::from_ymd_opt(
                        i32::try_from(yv).ok().filter(|&y| y > 0)?,
                        u32::try_from(mv).ok()?,
                        u32::try_from(dv).ok()?,
                    )
                })();
                date.map(|d| Some(d.to_epoch_days())).ok_or_else(|| {
                    bad(
                        "22008",
                        format!("date field value out of range: {yv}-{mv:02}-{dv:02}"),
                    )
                })
            })
            .collect::<Result<_>>()?;
        Ok(Arc::new(out))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn us(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> i64 {
            let t = NaiveDate::from_ymd_opt(y, mo, d)
                .unwrap()
                .and_hms_opt(h, mi, s)
                .unwrap();
            t.and_utc().timestamp_micros()
        }

        #[test]
        fn truncation_and_fields_of_a_local_time() {
            let t = us(2024, 8, 17, 13, 45, 30) + 250_000;
            assert_eq!(trunc(t, Unit::Hour), Some(us(2024, 8, 17, 13, 0, 0)));
            assert_eq!(trunc(t, Unit::Week), Some(us(2024, 8, 12, 0, 0, 0)));
            assert_eq!(trunc(t, Unit::Quarter), Some(us(2024, 7, 1, 0, 0, 0)));
            assert_eq!(trunc(t, Unit::Decade), Some(us(2020, 1, 1, 0, 0, 0)));
            assert_eq!(trunc(t, Unit::Century), Some(us(2001, 1, 1, 0, 0, 0)));
            assert_eq!(trunc(t, Unit::Millennium), Some(us(2001, 1, 1, 0, 0, 0)));
            assert_eq!(field(t, t, Unit::Second), Some(30.25));
            assert_eq!(field(t, t, Unit::Dow), Some(6.0));
            assert_eq!(field(t, t, Unit::Isodow), Some(6.0));
            assert_eq!(field(t, t, Unit::Doy), Some(230.0));
            assert_eq!(field(t, t, Unit::Week), Some(33.0));
            assert_eq!(field(t, t, Unit::Century), Some(21.0));
            // Before 1970: floors, not truncations towards 0.
            let old = us(1969, 12, 31, 23, 59, 59);
            assert_eq!(trunc(old, Unit::Day), Some(us(1969, 12, 31, 0, 0, 0)));
            assert_eq!(field(old, old, Unit::Hour), Some(23.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::StringArray;

    fn texts(v: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringArray::from(v.to_vec()))
    }
    fn ints(v: &[i64]) -> ArrayRef {
        Arc::new(Int64Array::from(v.to_vec()))
    }

    #[test]
    fn left_right_and_pads_count_characters() {
        assert_eq!(left("héllo", 2), "hé");
        assert_eq!(left("héllo", -2), "hél");
        assert_eq!(left("hé", -5), "");
        assert_eq!(right("héllo", 2), "lo");
        assert_eq!(right("héllo", -1), "éllo");
        assert_eq!(right("hé", 9), "hé");
        let mut s = String::new();
        pad("hé", 5, "xy", true, &mut s).unwrap();
        assert_eq!(s, "xyxhé");
        s.clear();
        pad("héllo", 2, "x", false, &mut s).unwrap();
        assert_eq!(s, "hé");
        assert!(pad("a", 1 << 40, "x", true, &mut s).is_err());
    }

    #[test]
    fn split_part_counts_from_either_end() {
        let a = [texts(&[Some("a,b,,c")]), texts(&[Some(",")])];
        let part = |n: i64| {
            eval(
                Func::SplitPart,
                &[a[0].clone(), a[1].clone(), ints(&[n])],
                1,
                &A::Utf8,
            )
            .map(|o| o.as_string::<i32>().value(0).to_string())
        };
        assert_eq!(part(1).unwrap(), "a");
        assert_eq!(part(3).unwrap(), "");
        assert_eq!(part(4).unwrap(), "c");
        assert_eq!(part(9).unwrap(), "");
        assert_eq!(part(-1).unwrap(), "c");
        assert_eq!(part(-4).unwrap(), "a");
        assert_eq!(part(-5).unwrap(), "");
        assert!(part(0).is_err());
    }

    #[test]
    fn decimals_round_half_away_and_floor_towards_minus_infinity() {
        let a: ArrayRef = Arc::new(
            Decimal128Array::from(vec![125, -125, 124, -124, 100])
                .with_precision_and_scale(38, 2)
                .unwrap(),
        );
        let at = |f: Func, scale: i8| -> Vec<i128> {
            let o = decimal_round(f, &a, &A::Decimal128(38, scale), None).unwrap();
            o.as_primitive::<Decimal128Type>().values().to_vec()
        };
        assert_eq!(at(Func::Round, 1), vec![13, -13, 12, -12, 10]);
        assert_eq!(at(Func::Round, 0), vec![1, -1, 1, -1, 1]);
        assert_eq!(at(Func::Trunc, 1), vec![12, -12, 12, -12, 10]);
        assert_eq!(at(Func::Floor, 0), vec![1, -2, 1, -2, 1]);
        assert_eq!(at(Func::Ceil, 0), vec![2, -1, 2, -1, 1]);
        assert_eq!(at(Func::Round, 3), vec![1250, -1250, 1240, -1240, 1000]);
        // To tens: 1.25 is 0 tens; 49999 (scale 0) is 0 hundred thousands.
        let o = decimal_round(Func::Round, &a, &A::Decimal128(38, 0), Some(-1)).unwrap();
        assert_eq!(
            o.as_primitive::<Decimal128Type>().values().to_vec(),
            vec![0; 5]
        );
        let b: ArrayRef = Arc::new(
            Decimal128Array::from(vec![49999, 50000, -1250, 1234])
                .with_precision_and_scale(38, 0)
                .unwrap(),
        );
        let o = decimal_round(Func::Round, &b, &A::Decimal128(38, 0), Some(-5)).unwrap();
        assert_eq!(
            o.as_primitive::<Decimal128Type>().values().to_vec(),
            vec![0, 100000, 0, 0]
        );
        let o = decimal_round(Func::Round, &b, &A::Decimal128(38, 0), Some(-2)).unwrap();
        assert_eq!(
            o.as_primitive::<Decimal128Type>().values().to_vec(),
            vec![50000, 50000, -1300, 1200]
        );
    }

    #[test]
    fn doubles_round_as_their_fifteen_digits() {
        assert_eq!(digits15(2.675).unwrap(), (267500000000000, 14));
        assert_eq!(digits15(-1000.005).unwrap(), (-100000500000000, 11));
        assert_eq!(digits15(1e20).unwrap(), (100000000000000000000, 0));
        assert!(digits15(f64::NAN).is_err());
        let a: ArrayRef = Arc::new(Float64Array::from(vec![2.675, -1000.005, 0.5, 1e-300]));
        let o = decimal_round(Func::Round, &a, &A::Decimal128(38, 2), Some(2)).unwrap();
        assert_eq!(
            o.as_primitive::<Decimal128Type>().values().to_vec(),
            vec![268, -100001, 50, 0]
        );
    }

    #[test]
    fn greatest_skips_nulls_and_modulo_keeps_the_dividends_sign() {
        let a: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, None, Some(-3)]));
        let b: ArrayRef = Arc::new(Int64Array::from(vec![Some(2), Some(5), None, Some(-7)]));
        let g = extreme(&[a.clone(), b.clone()], true).unwrap();
        let g = g.as_primitive::<Int64Type>();
        assert_eq!(
            g.iter().collect::<Vec<_>>(),
            vec![Some(2), Some(5), None, Some(-3)]
        );
        let l = extreme(&[a, b], false).unwrap();
        let l = l.as_primitive::<Int64Type>();
        assert_eq!(
            l.iter().collect::<Vec<_>>(),
            vec![Some(1), Some(5), None, Some(-7)]
        );
        let m = modulo(&ints(&[-7, 7, i64::MIN]), &ints(&[3, -3, -1]), &A::Int64).unwrap();
        assert_eq!(
            m.as_primitive::<Int64Type>().values().to_vec(),
            vec![-1, 1, 0]
        );
        assert!(matches!(
            modulo(&ints(&[1]), &ints(&[0]), &A::Int64),
            Err(Error::DivisionByZero)
        ));
    }
}
