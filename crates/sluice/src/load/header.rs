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
use std::sync::Arc;

use crate::parse::{FieldMap, read_record};

use super::pipeline::Shared;
use super::reader::FileStart;
use super::{ColumnRef, Header};

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

/// A header one field off the table's columns is fitted to them as
/// inference fits it (see `infer`), and then recognised by its names.
/// One short of a table whose last column is `c<N>` (N its position):
/// an empty last field, as rows ending with a delimiter have after the
/// header's last name (`c1,c2` over `1,2,`). One short of a table whose
/// first column is `c1`: an empty first field (R's `write.table` header,
/// no name over the row names). One long, its last field empty: that
/// field dropped (a delimiter after the last name).
pub(super) fn fit_header(fields: &mut Vec<Vec<u8>>, cols: &[Column]) {
    let named = |c: Option<&Column>, n: usize| {
        c.is_some_and(|c| c.name.eq_ignore_ascii_case(&format!("c{n}")))
    };
    if fields.len() + 1 == cols.len() && named(cols.last(), cols.len()) {
        fields.push(Vec::new());
    } else if fields.len() + 1 == cols.len() && named(cols.first(), 1) {
        fields.insert(0, Vec::new());
    } else if fields.len() == cols.len() + 1
        && fields
            .last()
            .is_some_and(|f| crate::parse::value::trim(f).is_empty())
    {
        fields.pop();
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

/// Delimited input: skips the notes above a file's first record
/// (`LoadOptions::leading_comment`), then blank and comment lines and the
/// header when there is one (`Header::Auto`: when its fields name the
/// columns), moving `offset` and `line` past them. Returns the file's
/// field map when fields are mapped by `--columns` or `--match-by-name`.
pub(super) fn delimited_start(
    shared: &Shared<'_>,
    at: FileStart<'_, '_>,
) -> Result<Option<Arc<FieldMap>>> {
    let FileStart {
        name,
        buf,
        eof,
        offset,
        line,
        grow,
        too_long,
    } = at;
    let opts = shared.opts;
    let mapped = opts.columns.is_some() || opts.match_by_name;
    // With names to map, the header is required.
    let names_needed = opts.match_by_name
        || opts
            .columns
            .as_ref()
            .is_some_and(|c| c.iter().any(|r| matches!(r, ColumnRef::Name(_))));
    let header_mode = if names_needed && opts.header == Header::Auto {
        Header::Yes
    } else {
        opts.header
    };
    let mut header_fields: Option<Vec<Vec<u8>>> = None;
    let comment = opts.dialect.comment.or(opts.leading_comment);
    if let Some(c) = opts.leading_comment {
        // Notes above the header or the data.
        loop {
            let Some((pre, pre_lines)) = preamble(buf.data(), Some(c), *eof) else {
                if buf.len <= opts.max_line_size {
                    grow(buf, eof)?;
                    continue;
                }
                return Err(too_long(*line, *offset));
            };
            buf.consume(pre);
            *offset += pre as u64;
            *line += pre_lines;
            break;
        }
    }
    if header_mode != Header::No {
        loop {
            // Blank and comment lines before the header are skipped, as
            // inference skips them.
            let Some((pre, pre_lines)) = preamble(buf.data(), comment, *eof) else {
                if buf.len <= opts.max_line_size {
                    grow(buf, eof)?;
                    continue;
                }
                return Err(too_long(*line, *offset));
            };
            if pre == buf.len {
                if header_mode == Header::Yes {
                    buf.consume(pre);
                    *offset += pre as u64;
                    *line += pre_lines;
                }
                break;
            }
            match read_record(&buf.data()[pre..], &opts.dialect, *eof) {
                Ok(Some((mut fields, used, newlines))) => {
                    let cols = &shared.schema.columns;
                    if !mapped {
                        fit_header(&mut fields, cols);
                    }
                    let names_match = if mapped {
                        // The fields the mapping reads are the names of
                        // the columns they feed.
                        field_map(shared, name, Some(&fields)).is_ok_and(|m| {
                            m.targets.iter().enumerate().all(|(i, t)| {
                                t.is_none_or(|c| {
                                    fields.get(i).is_some_and(|f| {
                                        normalize_name(f).eq_ignore_ascii_case(&cols[c].name)
                                    })
                                })
                            })
                        })
                    } else {
                        fields.len() == cols.len()
                            && (fields
                                .iter()
                                .zip(cols)
                                .all(|(f, c)| header_names(f, &c.name))
                                || crate::infer::named_by(&fields, cols))
                    };
                    let header_error = |message: String| Error::Parse {
                        path: name.to_string(),
                        line: *line + pre_lines + 1,
                        byte: *offset + pre as u64,
                        column: None,
                        message,
                    };
                    if header_mode == Header::Yes && !mapped && fields.len() != cols.len() {
                        return Err(header_error(format!(
                            "the header has {} fields, the table has {} columns",
                            fields.len(),
                            cols.len()
                        )));
                    }
                    // The table's names in another order: loading them
                    // by position would put each field in another's
                    // column, and reading the line as data is no better.
                    if !names_match && !mapped && header_mode == Header::Auto {
                        let cols = &shared.schema.columns;
                        let mut at: Vec<Option<usize>> = fields
                            .iter()
                            .map(|f| cols.iter().position(|c| header_names(f, &c.name)))
                            .collect();
                        let permuted =
                            fields.len() == cols.len() && at.iter().all(Option::is_some) && {
                                at.sort_unstable();
                                at.dedup();
                                at.len() == cols.len()
                            };
                        if permuted {
                            return Err(header_error(format!(
                                "the first line names the table's columns in another order ({}; the table: {}): load with --match-by-name to map the fields to the columns by these names, or --no-header if the line is data",
                                fields
                                    .iter()
                                    .map(|f| String::from_utf8_lossy(f).trim().to_string())
                                    .collect::<Vec<_>>()
                                    .join(", "),
                                cols.iter()
                                    .map(|c| c.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )));
                        }
                    }
                    if header_mode == Header::Yes || names_match {
                        buf.consume(pre + used);
                        *offset += (pre + used) as u64;
                        *line += pre_lines + newlines;
                        header_fields = Some(fields);
                    }
                    break;
                }
                Ok(None) if buf.len <= opts.max_line_size => grow(buf, eof)?,
                Ok(None) => return Err(too_long(*line, *offset)),
                // A malformed first record: the data parse reports it.
                Err(_) if header_mode == Header::Auto => break,
                Err(e) => {
                    return Err(Error::Parse {
                        path: name.to_string(),
                        line: *line + pre_lines + 1 + e.line_in_block,
                        byte: *offset + (pre + e.offset) as u64,
                        column: None,
                        message: format!("in the header: {}", e.message),
                    });
                }
            }
        }
    }

    Ok(if mapped {
        Some(Arc::new(field_map(shared, name, header_fields.as_ref())?))
    } else {
        None
    })
}

/// The bytes and lines of the blank lines and the lines starting with
/// `comment` at the start of `data` (what may come before a header);
/// `None` when `data` ends inside them and more input may follow.
pub(super) fn preamble(data: &[u8], comment: Option<u8>, eof: bool) -> Option<(usize, u64)> {
    let (mut at, mut lines) = (0, 0);
    loop {
        let rest = &data[at..];
        match rest {
            [] => return eof.then_some((at, lines)),
            [b'\r'] if !eof => return None,
            [b'\n', ..] | [b'\r', b'\n', ..] => {}
            [c, ..] if Some(*c) == comment => {}
            _ => return Some((at, lines)),
        }
        match memchr::memchr(b'\n', rest) {
            Some(i) => {
                at += i + 1;
                lines += 1;
            }
            None => return eof.then_some((data.len(), lines)),
        }
    }
}
