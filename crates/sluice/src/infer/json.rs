//! Inference of a table's columns from JSON input: the rows of a sample
//! of each file, their keys (or positions) as columns, and each column's
//! type by the rules CSV values follow, on the value's text.

use serde_json::{Deserializer, Value};

use super::{Candidates, InferOptions, Inferred, nothing_to_infer, read_up_to};
use crate::batch::{Column, DataType, Schema};
use crate::error::{Error, Result};
use crate::parse::Dialect;
use crate::source::{Input, LineEnd};

/// What kind of JSON value a column has held so far: a column whose
/// values mix kinds is TEXT.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Number,
    String,
    Bool,
    Nested,
}

/// One column: its name, the kind of its values and what they allow.
struct Col {
    name: String,
    kind: Option<Kind>,
    mixed: bool,
    cands: Candidates,
}

/// The values one after another in `data` (JSON lines, pretty-printed
/// values), up to the first that does not parse (a truncated sample).
fn values(data: &[u8]) -> Vec<(Value, &[u8])> {
    let mut out = Vec::new();
    let mut stream = Deserializer::from_slice(data).into_iter::<Value>();
    let mut at = 0;
    while let Some(Ok(v)) = stream.next() {
        let end = stream.byte_offset();
        out.push((v, &data[at..end]));
        at = end;
    }
    out
}

/// An object's keys in the order written (`serde_json`'s map sorts them).
struct Keys(Vec<String>);

impl<'de> serde::Deserialize<'de> for Keys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Keys;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<Keys, A::Error> {
                let mut keys = Vec::new();
                while let Some((k, _)) = m.next_entry::<String, serde::de::IgnoredAny>()? {
                    keys.push(k);
                }
                Ok(Keys(keys))
            }
        }
        d.deserialize_map(V)
    }
}

/// The row's keys in the order written, when its text is known.
fn keys_of(m: &serde_json::Map<String, Value>, text: &[u8]) -> Vec<String> {
    match serde_json::from_slice::<Keys>(text) {
        Ok(Keys(k)) => k,
        Err(_) => m.keys().cloned().collect(),
    }
}

/// The elements of the array starting at `data[0] == b'['`, one by one:
/// a truncated sample ends at the last complete element.
fn elements(data: &[u8]) -> Vec<(Value, &[u8])> {
    let mut out = Vec::new();
    let mut at = 1;
    loop {
        while at < data.len() && (data[at].is_ascii_whitespace() || data[at] == b',') {
            at += 1;
        }
        if at >= data.len() || data[at] == b']' {
            return out;
        }
        let mut stream = Deserializer::from_slice(&data[at..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(v)) => {
                let end = at + stream.byte_offset();
                out.push((v, &data[at..end]));
                at = end;
            }
            _ => return out,
        }
    }
}

/// The rows of a sample: a top-level array of rows, an object holding
/// the rows array (`rows`, or its one field holding an array of objects
/// or arrays), or values one after another.
#[cfg(test)]
fn rows_of<'a>(data: &'a [u8], rows: Option<&str>) -> Vec<(Value, &'a [u8])> {
    rows_and_field(data, rows).0
}

/// [`rows_of`], and the field of the top-level object that holds them.
fn rows_and_field<'a>(
    data: &'a [u8],
    rows: Option<&str>,
) -> (Vec<(Value, &'a [u8])>, Option<String>) {
    let start = data
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(data.len());
    let data = &data[start..];
    if data.first() == Some(&b'[') {
        let els = elements(data);
        if els
            .first()
            .is_some_and(|(e, _)| e.is_object() || e.is_array())
        {
            return (els, None);
        }
        // A line `[1, "a"]`: rows that are arrays, one after another.
        return (values(data), None);
    }
    let vals = values(data);
    if let [(Value::Object(o), _)] = vals.as_slice() {
        let held = match rows {
            Some(r) => o.get_key_value(r),
            None => o.iter().find(|(_, v)| {
                v.as_array()
                    .and_then(|a| a.first())
                    .is_some_and(|e| e.is_object() || e.is_array())
            }),
        };
        if let Some((k, Value::Array(a))) = held {
            let rows = a.iter().map(|v| (v.clone(), &b""[..])).collect();
            return (rows, Some(k.clone()));
        }
    }
    (vals, None)
}

/// The value's kind and text (as the load reads it); `None` for null.
fn kind_and_text(v: &Value) -> Option<(Kind, String)> {
    match v {
        Value::Null => None,
        Value::Bool(b) => Some((Kind::Bool, b.to_string())),
        // A float is shown shortest, not as written: with an exponent, its
        // literal may hold more digits than the text says, so the column
        // is TEXT (which keeps any number as written).
        Value::Number(n) if n.is_f64() && n.to_string().contains(['e', 'E']) => {
            Some((Kind::Number, "not a number".into()))
        }
        Value::Number(n) => Some((Kind::Number, n.to_string())),
        Value::String(s) => Some((Kind::String, s.clone())),
        Value::Array(_) | Value::Object(_) => Some((Kind::Nested, v.to_string())),
    }
}

/// Adds a row's value to column `i` (created when new).
fn see(cols: &mut Vec<Col>, name: &str, v: &Value, o: &InferOptions) {
    let i = match cols.iter().position(|c| c.name == name) {
        Some(i) => i,
        None => {
            cols.push(Col {
                name: name.to_string(),
                kind: None,
                mixed: false,
                cands: Candidates::new(),
            });
            cols.len() - 1
        }
    };
    let c = &mut cols[i];
    let Some((kind, text)) = kind_and_text(v) else {
        return;
    };
    if c.kind.is_some_and(|k| k != kind) {
        c.mixed = true;
    }
    c.kind = Some(kind);
    c.cands.see(text.as_bytes(), o);
}

/// Infers a table's columns from JSON input: the first `o.whole_bytes`
/// (decompressed) of each sampled file, its rows objects (columns by
/// key, in first-seen order) or arrays (columns `c1..cN`). `rows` is the
/// field of a top-level object that holds the rows (`--json-rows`).
pub fn infer_json(inputs: &[Input], o: &InferOptions, rows: Option<&str>) -> Result<Inferred> {
    if inputs.is_empty() {
        return Err(Error::Config("no input to infer a schema from".into()));
    }
    let mut cols: Vec<Col> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let (mut files, mut records) = (0usize, 0u64);
    let mut rows_field = None;
    let mut budget = o.whole_bytes.saturating_mul(2);
    for input in inputs.iter().take(o.max_files.max(1)) {
        if !input.rereadable() {
            return Err(Error::Config(format!(
                "the schema cannot be inferred from {} (it can be read only once: a look would consume it); pass --schema",
                super::once_name(input)
            )));
        }
        if budget == 0 {
            break;
        }
        let (mut reader, _) = input.open_text(None, o.encoding)?;
        let data =
            read_up_to(&mut reader, o.whole_bytes.min(budget)).map_err(|e| input.io_error(e))?;
        budget = budget.saturating_sub(data.len());
        let (rows, field) = rows_and_field(&data, rows);
        if rows.is_empty() {
            continue;
        }
        if files == 0 {
            rows_field = field;
        }
        files += 1;
        // A first row of strings is a header naming array rows' fields
        // (as the load reads it).
        let mut rows = &rows[..];
        if let Some((Value::Array(a), _)) = rows.first()
            && a.iter().all(Value::is_string)
        {
            if names.is_empty() {
                names = a
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect();
            }
            rows = &rows[1..];
        }
        for (row, text) in rows {
            records += 1;
            match row {
                Value::Object(m) => {
                    for k in keys_of(m, text) {
                        if let Some(v) = m.get(&k) {
                            see(&mut cols, &k, v, o);
                        }
                    }
                }
                Value::Array(a) => {
                    for (i, v) in a.iter().enumerate() {
                        let name = names.get(i).cloned().unwrap_or(format!("c{}", i + 1));
                        see(&mut cols, &name, v, o);
                    }
                }
                // A scalar row is one column.
                v => see(&mut cols, "c1", v, o),
            }
        }
    }
    if cols.is_empty() {
        return Err(nothing_to_infer(inputs));
    }
    let mut columns: Vec<Column> = cols
        .iter()
        .map(|c| Column {
            name: c.name.clone(),
            data_type: match c.kind {
                _ if c.mixed => DataType::Text,
                Some(Kind::Nested) | Some(Kind::String) if c.cands.boolean => DataType::Text,
                Some(Kind::Nested) | None => DataType::Text,
                _ => c.cands.pick(),
            },
            default: None,
            primary_key: false,
        })
        .collect();
    super::apply_types(&mut columns, o)?;
    let (exact, widen) = super::chosen_columns(&columns, o);
    Ok(Inferred {
        schema: Schema::new(columns)?,
        delimiter: b',',
        dialect: Dialect::default(),
        header: false,
        header_by_names: false,
        skip: o.skip,
        notes: 0,
        fill_missing: false,
        json_rows: rows_field,
        line_end: LineEnd::Lf,
        leading_comment: None,
        files_sampled: files,
        samples: files,
        records_sampled: records,
        exact,
        widen,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(rows: &[(Value, &[u8])]) -> Vec<String> {
        rows.iter().map(|(v, _)| v.to_string()).collect()
    }

    #[test]
    fn a_truncated_array_ends_at_its_last_complete_element() {
        let rows = rows_of(b"[ {\"a\": 1}, {\"a\": 2}, {\"a\": 3", None);
        assert_eq!(texts(&rows), ["{\"a\":1}", "{\"a\":2}"]);
    }

    #[test]
    fn an_object_holding_the_rows_array_gives_its_elements() {
        let rows = rows_of(b"{\"meta\": 1, \"data\": [{\"a\": 1}, {\"a\": 2}]}", None);
        assert_eq!(texts(&rows), ["{\"a\":1}", "{\"a\":2}"]);
    }

    #[test]
    fn keys_keep_the_order_written() {
        let rows = rows_of(b"{\"b\": 1, \"a\": 2}\n", None);
        let (Value::Object(m), text) = &rows[0] else {
            panic!("{rows:?}")
        };
        assert_eq!(keys_of(m, text), ["b", "a"]);
    }
}
