//! The reader's side of JSON input: where blocks are cut, the opening
//! bracket and header row of a file, the closing bracket. (The rows are
//! parsed by `parse::json` in the workers.)

use super::pipeline::Shared;
use super::reader::{Buf, FileStart};
use super::{ColumnRef, Header, LoadOptions};
use crate::error::{Error, Result};
use crate::parse::json::{self, FirstRow};
use crate::parse::{FieldMap, Format, JsonShape};

/// JSON: `--columns` names the table column of each position of array
/// rows; `--match-by-name` does not apply (fields always match by name).
pub(super) fn json_columns(opts: &LoadOptions) -> Result<Option<Vec<Vec<u8>>>> {
    if opts.json_rows.is_some()
        && !matches!(opts.format, Format::Json(j) if j.shape == JsonShape::Array)
    {
        return Err(Error::Config(
            "--json-rows names the field of a top-level object that holds the rows, for --format json".into(),
        ));
    }
    let Format::Json(_) = opts.format else {
        return Ok(None);
    };
    if opts.match_by_name {
        return Err(Error::Config(
            "--match-by-name is for CSV headers: JSON object fields and header rows always match columns by name".into(),
        ));
    }
    let Some(list) = &opts.columns else {
        return Ok(None);
    };
    list.iter()
        .map(|r| match r {
            ColumnRef::Name(n) => Ok(n.as_bytes().to_vec()),
            ColumnRef::Position(p) => Err(Error::Config(format!(
                "--columns with JSON names the column each position of an array row feeds, in order (\"id,name\"); {p} is a position"
            ))),
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// What the start of a JSON file says about the rest.
pub(super) struct JsonStart {
    /// The field map of array rows, if they have one.
    pub map: Option<FieldMap>,
    /// How the rows are laid out: with `--format json`, an array, or
    /// values one after another.
    pub shape: JsonShape,
    /// The rows array is a field of a top-level object, whose other fields
    /// follow it (see [`json::object_start`]).
    pub in_object: bool,
}

/// Whether `key` names a column of the table (as an object row's field
/// would).
pub(super) fn names_column(shared: &Shared<'_>, key: &[u8]) -> bool {
    shared
        .schema
        .columns
        .iter()
        .any(|c| c.name.as_bytes().eq_ignore_ascii_case(key))
}

/// Reads the start of a JSON file: with `--format json`, what holds the
/// rows (an array; an object holding the rows array, through its opening
/// bracket; or values one after another), and a header row (an array of
/// strings, unless `--no-header`, or `--columns` names the fields without
/// `--header`).
pub(super) fn json_header(
    shared: &Shared<'_>,
    j: crate::parse::JsonFormat,
    at: FileStart<'_, '_>,
) -> Result<JsonStart> {
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
    let mut shape = j.shape;
    let mut in_object = false;
    if j.shape != JsonShape::Lines {
        // Whitespace, then the opening bracket.
        loop {
            let ws = buf
                .data()
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
            *line += memchr::memchr_iter(b'\n', &buf.data()[..ws]).count() as u64;
            *offset += ws as u64;
            buf.consume(ws);
            if buf.is_empty() && !*eof {
                grow(buf, eof)?;
                continue;
            }
            break;
        }
        let rows = opts.json_rows.as_deref().map(str::as_bytes);
        let input_err = |message: String| Error::Parse {
            path: name.to_string(),
            line: *line + 1,
            byte: *offset,
            column: None,
            message,
        };
        // Where the first element is, past the opening bracket.
        let open = match buf.data().first().copied() {
            Some(b'[') if rows.is_some() => {
                return Err(input_err(
                    "--json-rows names a field of a top-level object, and this input is an array"
                        .into(),
                ));
            }
            Some(b'[') => {
                shape = JsonShape::Array;
                Some(1)
            }
            Some(b'{') => loop {
                let at_eof = *eof || buf.len > opts.max_line_size;
                match json::object_start(buf.data(), at_eof, rows, |k| names_column(shared, k)) {
                    json::ObjectStart::Rows(at) => {
                        shape = JsonShape::Array;
                        in_object = true;
                        break Some(at);
                    }
                    json::ObjectStart::Values if rows.is_some() => {
                        return Err(input_err(
                            "the top-level object is malformed before the field that --json-rows names".into(),
                        ));
                    }
                    json::ObjectStart::Values => {
                        shape = JsonShape::Values;
                        break None;
                    }
                    json::ObjectStart::NoRows(message) => return Err(input_err(message)),
                    json::ObjectStart::NeedMore => grow(buf, eof)?,
                }
            },
            _ => {
                return Err(Error::Parse {
                    path: name.to_string(),
                    line: *line + 1,
                    byte: *offset,
                    column: None,
                    message: "--format json reads a top-level array of rows, an object holding one, or objects one after another, and this input starts with none of them (for one value per line, use --format jsonl)".into(),
                });
            }
        };
        if let Some(open) = open {
            // The first element starts the next line, if nothing else is
            // on this one (so that one element a line gives exact line
            // numbers).
            let used = json::after_separator(buf.data(), open);
            *line += memchr::memchr_iter(b'\n', &buf.data()[..used]).count() as u64;
            buf.consume(used);
            *offset += used as u64;
        }
    }
    let columns = json_columns(opts)?;
    let read = match opts.header {
        Header::No => false,
        Header::Yes => true,
        Header::Auto => columns.is_none(),
    };
    let mut header = None;
    if read {
        loop {
            match json::read_first_row(buf.data(), shape, *eof) {
                FirstRow::Names(names, used, newlines) => {
                    buf.consume(used);
                    *offset += used as u64;
                    *line += newlines;
                    header = Some(names);
                    break;
                }
                FirstRow::Data if opts.header == Header::Yes => {
                    return Err(Error::Parse {
                        path: name.to_string(),
                        line: *line + 1,
                        byte: *offset,
                        column: None,
                        message: "--header: the first row is not an array of field names".into(),
                    });
                }
                FirstRow::Data => break,
                FirstRow::NeedMore if buf.len <= opts.max_line_size => grow(buf, eof)?,
                FirstRow::NeedMore => return Err(too_long(*line, *offset)),
            }
        }
    }
    let map = columns
        .as_ref()
        .or(header.as_ref())
        .map(|names| {
            json::names_field_map(shared.schema, names, j.ignore_unknown).map_err(|message| {
                Error::Input {
                    path: name.to_string(),
                    message,
                }
            })
        })
        .transpose()?;
    Ok(JsonStart {
        map,
        shape,
        in_object,
    })
}

/// At the end of a JSON array input: drops the closing `]` (and what
/// follows it, which must be whitespace, or with `in_object` the rest of
/// the object holding the array: [`json::object_rest`]) from `buf`.
/// `cut_before`: a block of the file was sent already, so the data ended
/// after a comma.
pub(super) fn close_json_array(
    shared: &Shared<'_>,
    buf: &mut Buf,
    cut_before: bool,
    in_object: bool,
) -> std::result::Result<(), String> {
    if in_object {
        let data = buf.data();
        let Some(end) = json::array_body_end(data) else {
            return Err("the array of rows is not closed: the input ends without ']'".into());
        };
        // A named rows field: the other fields may be anything.
        let named = shared.opts.json_rows.is_some();
        json::object_rest(&data[end + 1..], |k| !named && names_column(shared, k))?;
        buf.len = end + 1;
    }
    let data = buf.data();
    let Some(last) = data.iter().rposition(|b| !b.is_ascii_whitespace()) else {
        return Err("the JSON array is not closed: the input ends without ']'".into());
    };
    if data[last] != b']' {
        return Err(format!(
            "the JSON array is not closed: the input ends with {:?}, not ']'",
            String::from_utf8_lossy(&data[last.saturating_sub(20)..=last])
        ));
    }
    let before = data[..last].iter().rposition(|b| !b.is_ascii_whitespace());
    if before.map_or(cut_before, |b| data[b] == b',') {
        return Err("a comma before the closing ']' of the JSON array (an empty element)".into());
    }
    buf.len = last;
    Ok(())
}
