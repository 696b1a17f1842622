//! The header of each file, and how input fields map to columns.
//!
//! Useful for: recognising a header line by the column names (as written,
//! or as inference normalises them), and building the field map of a file
//! from `--columns` or `--match-by-name` and its header (which field feeds
//! which column; DEFAULTs for the rest).
//! Not useful for: finding where the header is (`reader` skips preambles
//! and reads it), or JSON keys (`json_input`).

use crate::batch::{BatchBuilder, Column};
use crate::error::{Error, Result};
use crate::parse::FieldMap;

use super::ColumnRef;
use super::pipeline::Shared;

/// The largest field position `--columns` accepts.
const MAX_FIELD_POSITION: usize = 1 << 16;

/// A header name as a column name: lower case, `_` for runs of other
/// characters (the names inference gives columns).
pub fn normalize_name(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw).trim().to_lowercase();
    let mut name = String::new();
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() {
            name.push(ch);
        } else if !name.ends_with('_') && !name.is_empty() {
            name.push('_');
        }
    }
    name.trim_end_matches('_').to_string()
}

/// Whether a header field names column `column`: as written (ignoring
/// case and surrounding spaces), or as inference normalises it
/// (`First Name` names `first_name`), so that a file whose header gave
/// the table its names is recognised again on a later load.
pub(super) fn header_names(field: &[u8], column: &str) -> bool {
    std::str::from_utf8(field).is_ok_and(|f| f.trim().eq_ignore_ascii_case(column))
        || normalize_name(field).eq_ignore_ascii_case(column)
}

/// A header one field short of a table whose last column is `c<N>` (N
/// its position) gets an empty last field: inference names so the empty
/// field that rows ending with a delimiter have after the header's last
/// name (`c1,c2` over `1,2,`; see `infer`), and the header is then
/// recognised by those names.
pub(super) fn pad_short_header(fields: &mut Vec<Vec<u8>>, cols: &[Column]) {
    if fields.len() + 1 == cols.len()
        && cols
            .last()
            .is_some_and(|c| c.name.eq_ignore_ascii_case(&format!("c{}", cols.len())))
    {
        fields.push(Vec::new());
    }
}

/// The field map of one file, from `--columns` or its header names.
pub(super) fn field_map(
    shared: &Shared<'_>,
    file: &str,
    header: Option<&Vec<Vec<u8>>>,
) -> Result<FieldMap> {
    let opts = shared.opts;
    let cols = &shared.schema.columns;
    let names = || {
        cols.iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let input_err = |message: String| Error::Input {
        path: file.to_string(),
        message,
    };
    let header_pos = |want: &str| -> Result<usize> {
        let h = header.ok_or_else(|| {
            input_err("mapping columns by name needs a header line (or give positions)".into())
        })?;
        h.iter()
            .position(|f| normalize_name(f).eq_ignore_ascii_case(&normalize_name(want.as_bytes())))
            .ok_or_else(|| {
                input_err(format!(
                    "has no field named {want:?} (its header: {})",
                    h.iter()
                        .map(|f| String::from_utf8_lossy(f).to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    };
    let mut targets: Vec<Option<usize>> = Vec::new();
    let feed = |field: usize, col: usize, targets: &mut Vec<Option<usize>>| -> Result<()> {
        if targets.len() <= field {
            targets.resize(field + 1, None);
        }
        if targets[field].is_some() {
            return Err(input_err(format!("field {} feeds two columns", field + 1)));
        }
        targets[field] = Some(col);
        Ok(())
    };
    if opts.match_by_name {
        if opts.columns.is_some() {
            return Err(Error::Config(
                "--columns and --match-by-name do not go together: pick one".into(),
            ));
        }
        let h = header.ok_or_else(|| input_err("--match-by-name needs a header line".into()))?;
        for (i, f) in h.iter().enumerate() {
            let n = normalize_name(f);
            let c = cols
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(&n))
                .ok_or_else(|| {
                    input_err(format!(
                        "header field {:?} is not a column of the table (columns: {}); choose fields with --columns",
                        String::from_utf8_lossy(f),
                        names()
                    ))
                })?;
            if targets.contains(&Some(c)) {
                return Err(input_err(format!(
                    "two header fields name column {}",
                    cols[c].name
                )));
            }
            feed(i, c, &mut targets)?;
        }
    } else if let Some(list) = &opts.columns {
        if list.len() > cols.len() {
            return Err(Error::Config(format!(
                "--columns lists {} fields, the table has {} columns ({})",
                list.len(),
                cols.len(),
                names()
            )));
        }
        for (c, r) in list.iter().enumerate() {
            let field = match r {
                ColumnRef::Position(p) if (1..=MAX_FIELD_POSITION).contains(p) => p - 1,
                ColumnRef::Position(p) => {
                    return Err(Error::Config(format!(
                        "--columns: position {p} is out of range (1 to {MAX_FIELD_POSITION})"
                    )));
                }
                ColumnRef::Name(n) => header_pos(n)?,
            };
            feed(field, c, &mut targets)?;
        }
    }
    let needed = targets
        .iter()
        .rposition(Option::is_some)
        .map_or(0, |i| i + 1);
    let fills = (0..cols.len())
        .filter(|c| !targets.contains(&Some(*c)))
        .map(|c| (c, cols[c].default.clone().map(String::into_bytes)))
        .collect();
    let m = FieldMap {
        targets,
        fills,
        needed,
    };
    // Defaults must parse with this load's formats (--date-format...).
    let mut probe = BatchBuilder::new(shared.schema, shared.values.clone(), 1);
    for (c, d) in &m.fills {
        if let Some(d) = d {
            probe.push(*c, d, true).map_err(|msg| {
                Error::Config(format!(
                    "DEFAULT '{}' of column {} does not read with this load's formats: {msg}",
                    String::from_utf8_lossy(d),
                    cols[*c].name
                ))
            })?;
        }
    }
    Ok(m)
}
