//! What a user asks of a load, worked out into the load's options.
//!
//! Useful for: a front end's load (`sluice load`, bindings to other
//! languages): the options as `sluice load` takes them ([`LoadRequest`]),
//! turned into [`LoadOptions`] by [`prepare`] in the steps the command
//! takes: the input format given or guessed from names and first bytes,
//! the dialect, header, error and column options parsed, the schema
//! chosen (given, the existing table's, or inferred); sizes, characters
//! and `--commit-every` parsed.
//! Not useful for: printing any of it (what [`Prepared`] holds is for
//! that), or running the load ([`load`](super::load)).

use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::batch::{DataType, Schema, ValueOptions, split_top_level};
use crate::error::{Error, Result, ResultExt};
use crate::infer::{InferOptions, Inferred};
use crate::parse::{BlankLines, Dialect, Format, JsonFormat, JsonShape, Split, snippet};
use crate::source::{Input, LineEnd};
use crate::store::Database;

use super::{
    ColumnRef, CommitEvery, Header, LoadOptions, OnDuplicate, OnError, Reload, normalize_name,
};

/// Text of the first input read to guess its format: 64 KiB.
const HEAD_BYTES: u64 = 64 << 10;

/// How the inputs are read (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// Delimited text, the delimiter given or detected.
    Csv,
    /// Delimited text split at tabs.
    Tsv,
    /// JSON lines: one object or array a line.
    Jsonl,
    /// JSON: a top-level array of rows, objects one after another, or an
    /// object holding the array of rows.
    Json,
}

impl FromStr for InputFormat {
    type Err = Error;

    /// `csv`, `tsv`, `jsonl` or `json`, in any case.
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "csv" => Ok(InputFormat::Csv),
            "tsv" => Ok(InputFormat::Tsv),
            "jsonl" => Ok(InputFormat::Jsonl),
            "json" => Ok(InputFormat::Json),
            _ => Err(Error::Config(format!(
                "format {s:?}: expected csv, tsv, jsonl or json"
            ))),
        }
    }
}

/// What a user asks of a load, as the options of `sluice load` say it
/// (each field is the option of the same name; its `--help` has the
/// whole text). Values are parsed by [`prepare`], which refuses a bad
/// one with the command's message.
#[derive(Debug, Clone)]
pub struct LoadRequest {
    /// `--schema`: the columns of a new table (`None`: the existing
    /// table's, else inferred).
    pub schema: Option<String>,
    /// `--types`: inferred column types overridden, `"price=DECIMAL(12,2),zip=TEXT"`
    /// (each entry may hold several).
    pub types: Vec<String>,
    /// `--columns`: the input fields that feed the columns, in column
    /// order, by header name or 1-based position (`"id,name,5"`).
    pub columns: Option<String>,
    /// `--match-by-name`: fields map to columns by each file's header.
    pub match_by_name: bool,
    /// `--format` (`None`: from the first file's name, else its first
    /// bytes, else CSV).
    pub format: Option<InputFormat>,
    /// `--format parquet` or `arrow` (`None`: known by the first file's
    /// bytes; see [`super::columnar`]).
    pub columnar: Option<super::columnar::Columnar>,
    /// `--hive-partitioning`: `col=value` directories of columnar inputs
    /// are columns.
    pub hive_partitioning: bool,
    /// `--ignore-unknown`: JSON fields that name no column are skipped.
    pub ignore_unknown: bool,
    /// `--json-rows`: the field of a top-level JSON object holding the rows.
    pub json_rows: Option<String>,
    /// `--delimiter`: one character, `tab`, `whitespace` or `none`
    /// (`None`: detected).
    pub delimiter: Option<String>,
    /// `--tsv`: the delimiter is a tab.
    pub tsv: bool,
    /// `--quote`: one character; `""` or `none` for none (`None`: `"`,
    /// or what reads the data).
    pub quote: Option<String>,
    /// `--escape`: the escape inside quotes (`None`: doubled quotes).
    pub escape: Option<String>,
    /// `--header` (`Yes`), `--no-header` (`No`), else `Auto`.
    pub header: Header,
    /// `--null`: an unquoted field equal to this is NULL.
    pub null: String,
    /// `--skip`: lines skipped at each file's start (`None`: none, or
    /// the notes found above the table when the schema is inferred).
    pub skip: Option<u64>,
    /// `--comment`: lines starting with this character are ignored.
    pub comment: Option<String>,
    /// `--blank-lines` (`None`: [`BlankLines::Auto`]).
    pub blank_lines: Option<BlankLines>,
    /// `--line-end`: `auto`, `lf` or `cr`.
    pub line_end: String,
    /// `--date-format` (strftime; `None`: YYYY-MM-DD).
    pub date_format: Option<String>,
    /// `--timestamp-format` (strftime; `None`: ISO 8601).
    pub timestamp_format: Option<String>,
    /// `--memory-limit`: a size, e.g. `2GiB`.
    pub memory_limit: String,
    /// `--max-line-size`: a size, e.g. `16MiB`.
    pub max_line_size: String,
    /// `--block-size`: a size (`None`: derived from the memory limit).
    pub block_size: Option<String>,
    /// `--on-error` (`None`: skip with `rejects` or `max_errors`, else abort).
    pub on_error: Option<OnError>,
    /// `--rejects`: where rejected records are written.
    pub rejects: Option<PathBuf>,
    /// `--max-errors`: the load fails past this many rejected records.
    pub max_errors: Option<u64>,
    /// `--allow-missing-columns`: too few fields get NULLs.
    pub allow_missing_columns: bool,
    /// `--encoding`: a WHATWG label (`None`: UTF-8).
    pub encoding: Option<String>,
    /// `--key`: the primary key of a new table.
    pub key: Option<String>,
    /// `--on-duplicate`.
    pub on_duplicate: OnDuplicate,
    /// `--compression`: `none` or `zstd`.
    pub compression: Option<String>,
    /// `--shards`: shards of a new table.
    pub shards: Option<u32>,
    /// `--shard-by`: the column whose hash picks a row's shard.
    pub shard_by: Option<String>,
    /// `--shard-paths`: directories for the shards of a new table.
    pub shard_paths: Vec<PathBuf>,
    /// `--segment-rows` (hidden, for tests): see
    /// [`LoadOptions::segment_rows`].
    pub segment_rows: Option<u64>,
    /// `--dictionary-always` (hidden, for tests): see
    /// [`LoadOptions::dictionary_always`].
    pub dictionary_always: bool,
    /// `--page-cache`: see [`LoadOptions::page_cache`].
    pub page_cache: bool,
    /// Not `--no-mmap`: see [`LoadOptions::map_files`] (off by default).
    pub map_files: bool,
    /// `--commit-every`: a size, `Nfiles`, a time or `all`.
    pub commit_every: String,
    /// `--reload` (`All`), `--reload-changed` (`Changed`), else `None`.
    pub reload: Reload,
    /// Compute workers (`None`: every usable core).
    pub threads: Option<usize>,
}

impl Default for LoadRequest {
    /// The defaults of `sluice load`.
    fn default() -> Self {
        LoadRequest {
            schema: None,
            types: Vec::new(),
            columns: None,
            match_by_name: false,
            format: None,
            columnar: None,
            hive_partitioning: false,
            ignore_unknown: false,
            json_rows: None,
            delimiter: None,
            tsv: false,
            quote: None,
            escape: None,
            header: Header::Auto,
            null: String::new(),
            skip: None,
            comment: None,
            blank_lines: None,
            line_end: "auto".into(),
            date_format: None,
            timestamp_format: None,
            memory_limit: "2GiB".into(),
            max_line_size: "16MiB".into(),
            block_size: None,
            on_error: None,
            rejects: None,
            max_errors: None,
            allow_missing_columns: false,
            encoding: None,
            key: None,
            on_duplicate: OnDuplicate::Error,
            compression: None,
            shards: None,
            shard_by: None,
            shard_paths: Vec::new(),
            segment_rows: None,
            dictionary_always: false,
            page_cache: false,
            map_files: false,
            commit_every: "1GiB".into(),
            reload: Reload::None,
            threads: None,
        }
    }
}

/// What [`prepare`] chose: the options of the load, and how it got there
/// (for messages, hints and a dry run).
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The load's options; `progress`, `stop` and `cancel` are `None`:
    /// the caller sets them.
    pub options: LoadOptions,
    /// The input format, given or guessed.
    pub format: InputFormat,
    /// Why the first bytes chose JSON when the name did not say so, for
    /// messages.
    pub sniffed: Option<String>,
    /// The JSON shape; `None` for CSV and TSV.
    pub json: Option<JsonShape>,
    /// What inference (and the delimiter sniffing) was given; also the
    /// dialect, encoding, line ends and `--types` of the load.
    pub infer: InferOptions,
    /// The quote and escape given (or the defaults).
    pub quote: Option<u8>,
    pub escape: Option<u8>,
    /// The table's schema: given, the existing table's, or inferred.
    pub schema: Schema,
    /// The delimiter the inputs read with.
    pub delimiter: u8,
    pub header: Header,
    /// The dialect the inputs read with (its delimiter is `delimiter`'s
    /// in `options`).
    pub dialect: Dialect,
    /// What inference found, when it ran.
    pub inferred: Option<Inferred>,
    /// Comment lines above the data that sniffing or inference saw.
    pub leading_comment: Option<u8>,
    /// Lines skipped at each file's start: `--skip`, or the notes found.
    pub skip: u64,
    /// Lines of notes found above the table.
    pub notes: u64,
}

/// Expanded inputs in, the load's options out: the steps `sluice load`
/// takes before it loads. The format is given or guessed (from the first
/// file's name, else its first 64 KiB of text), the options of the other
/// kind of input are refused, the options are parsed, and the schema is
/// `req.schema`, else the existing table's in `db_dir`, else inferred
/// from samples of the inputs (with `--columns` and `--key` applied).
/// Prints nothing.
pub fn prepare(
    db_dir: &Path,
    table: &str,
    inputs: &[Input],
    req: &LoadRequest,
) -> Result<Prepared> {
    let existing = Database::open(db_dir)
        .ok()
        .and_then(|db| db.table(table).map(|t| t.schema.clone()));
    prepare_for(existing, inputs, req)
}

/// [`prepare`] for a destination other than a local table: `existing` is
/// the schema of the table being loaded when it exists (a database
/// server's table), `None` for a new one.
pub fn prepare_for(
    existing: Option<Schema>,
    inputs: &[Input],
    req: &LoadRequest,
) -> Result<Prepared> {
    let encoding = req
        .encoding
        .as_deref()
        .map(crate::source::encoding_for)
        .transpose()?;
    let read = input_format(req, inputs, |input| {
        // The first 64 KiB of text (decompressed, decoded).
        let mut head = Vec::new();
        if let Ok((r, _)) = input.open_text(None, encoding) {
            let _ = std::io::Read::read_to_end(&mut std::io::Read::take(r, HEAD_BYTES), &mut head);
        }
        head
    })?;
    let base = InferOptions {
        encoding,
        ..Default::default()
    };
    let settings = settings(req, &read, base)?;
    let chosen = choose_schema(existing, req, inputs, &read, &settings)?;
    let options = load_options(req, &read, &settings, &chosen)?;
    Ok(Prepared {
        options,
        format: read.format,
        sniffed: read.sniffed,
        json: read.json,
        infer: settings.infer,
        quote: settings.quote,
        escape: settings.escape,
        schema: chosen.schema,
        delimiter: chosen.delimiter,
        header: chosen.header,
        dialect: chosen.dialect,
        inferred: chosen.inferred,
        leading_comment: chosen.leading_comment,
        skip: chosen.skip,
        notes: chosen.notes,
    })
}

/// A hint on a line of its own after an error, or nothing.
fn hint_line(hint: Option<&str>) -> String {
    hint.map(|h| format!("\nhint: {h}")).unwrap_or_default()
}

/// The input format from the first file's name, else its first bytes
/// (standard input and pipes are not sniffed: they cannot be read twice), and when
/// the bytes chose JSON, a note that says so for messages.
/// A known name wins: a `.csv` whose lines start with `[` is CSV.
fn guess_format(
    inputs: &[Input],
    head_of: impl FnOnce(&Input) -> Vec<u8>,
) -> (InputFormat, Option<String>) {
    let Some(first) = inputs.iter().find_map(|i| match i {
        Input::File(p) => Some((i, p)),
        Input::Stdin => None,
    }) else {
        return (InputFormat::Csv, None);
    };
    let name = first.1.to_string_lossy().to_ascii_lowercase();
    let name = [".gz", ".zst", ".zstd"]
        .iter()
        .find_map(|e| name.strip_suffix(e))
        .unwrap_or(&name);
    if name.ends_with(".jsonl") || name.ends_with(".ndjson") {
        return (InputFormat::Jsonl, None);
    }
    if name.ends_with(".json") {
        return (InputFormat::Json, None);
    }
    if name.ends_with(".tsv") || name.ends_with(".tab") {
        return (InputFormat::Tsv, None);
    }
    if name.ends_with(".csv") {
        return (InputFormat::Csv, None);
    }
    // (A pipe's bytes are not looked at: the look would consume them.)
    if !first.0.rereadable() {
        return (InputFormat::Csv, None);
    }
    let head = head_of(first.0);
    let mut bytes = head.iter().copied().filter(|b| !b.is_ascii_whitespace());
    let first_line = head
        .split(|&b| b == b'\n')
        .find(|l| !l.trim_ascii().is_empty())
        .unwrap_or_default();
    let format = match (bytes.next(), bytes.next()) {
        // An object spread over lines: not JSON lines.
        (Some(b'{'), _) if first_line.trim_ascii() == b"{" => InputFormat::Json,
        (Some(b'{'), _) => InputFormat::Jsonl,
        (Some(b'['), Some(b'{' | b'[')) => InputFormat::Json,
        (Some(b'['), Some(b'"' | b'-' | b'0'..=b'9' | b']')) => {
            let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
            if line.trim_ascii_end().ends_with(b"]") {
                InputFormat::Jsonl
            } else {
                InputFormat::Csv
            }
        }
        _ => InputFormat::Csv,
    };
    let note = (format != InputFormat::Csv).then(|| {
        format!(
            "{} was read as {}: its name does not say its format (.csv, .tsv, .json, .jsonl) and its text starts like JSON ({}); if it is CSV, give --format csv",
            first.1.display(),
            if format == InputFormat::Json {
                "JSON (--format json)"
            } else {
                "JSON lines"
            },
            snippet(first_line.trim_ascii())
        )
    });
    (format, note)
}

/// What the inputs are read as.
struct Read {
    format: InputFormat,
    sniffed: Option<String>,
    json: Option<JsonShape>,
}

/// The input format, given or guessed; refuses the options of the other
/// kind of input (CSV options for JSON, JSON ones for CSV). `head_of`
/// reads the first text of an input, for the guess.
fn input_format(
    req: &LoadRequest,
    inputs: &[Input],
    head_of: impl FnOnce(&Input) -> Vec<u8>,
) -> Result<Read> {
    let (format, sniffed) = match req.format {
        Some(f) => (f, None),
        None if req.tsv || req.delimiter.is_some() => (InputFormat::Csv, None),
        None => guess_format(inputs, head_of),
    };
    let json = match format {
        InputFormat::Jsonl => Some(JsonShape::Lines),
        InputFormat::Json => Some(JsonShape::Array),
        InputFormat::Csv | InputFormat::Tsv => None,
    };
    if json.is_some() {
        for (given, flag) in [
            (req.tsv || req.delimiter.is_some(), "--delimiter"),
            (req.escape.is_some(), "--escape"),
            (req.comment.is_some(), "--comment"),
            (req.blank_lines.is_some(), "--blank-lines"),
            (req.match_by_name, "--match-by-name"),
        ] {
            if given {
                return Err(Error::Config(format!(
                    "{flag} is for CSV and TSV input, and this load reads JSON (--format {}); JSON fields always match columns by name{}",
                    if json == Some(JsonShape::Lines) {
                        "jsonl"
                    } else {
                        "json"
                    },
                    hint_line(sniffed.as_deref())
                )));
            }
        }
    } else if req.ignore_unknown {
        return Err(Error::Config(format!(
            "--ignore-unknown is for JSON input, and this load reads {} (give --format jsonl or json; standard input is not sniffed)",
            if format == InputFormat::Tsv {
                "TSV"
            } else {
                "CSV"
            }
        )));
    }
    Ok(Read {
        format,
        sniffed,
        json,
    })
}

/// The options of how to read the inputs, parsed.
struct Settings {
    infer: InferOptions,
    quote: Option<u8>,
    escape: Option<u8>,
    /// `--schema`.
    given: Option<Schema>,
    on_error: OnError,
    /// `--columns`.
    columns: Option<Vec<ColumnRef>>,
}

/// Parses the dialect, header, error and column options; `base` holds
/// the encoding.
fn settings(req: &LoadRequest, read: &Read, base: InferOptions) -> Result<Settings> {
    let (delimiter, split) = if read.format == InputFormat::Tsv || req.tsv {
        (Some(b'\t'), Split::Delimiter)
    } else {
        match req.delimiter.as_deref() {
            None => (None, Split::Delimiter),
            Some(w) if w.eq_ignore_ascii_case("whitespace") => (Some(b' '), Split::Whitespace),
            Some(w) if w.eq_ignore_ascii_case("none") => (Some(b','), Split::Line),
            Some(d) => (Some(parse_char(d, "--delimiter")?), Split::Delimiter),
        }
    };
    let quote = match req.quote.as_deref() {
        None if split == Split::Line => None,
        None => Some(b'"'),
        Some(q) if q.is_empty() || q.eq_ignore_ascii_case("none") => None,
        Some(q) => Some(parse_char(q, "--quote")?),
    };
    let escape = req
        .escape
        .as_deref()
        .map(|e| parse_char(e, "--escape"))
        .transpose()?;
    let comment = req
        .comment
        .as_deref()
        .map(|c| parse_char(c, "--comment"))
        .transpose()?;
    let line_end: LineEnd = req.line_end.parse()?;
    let given: Option<Schema> = req.schema.as_deref().map(str::parse).transpose()?;
    let wants_skip = req.rejects.is_some() || req.max_errors.is_some();
    let on_error = match (req.on_error, wants_skip) {
        (Some(OnError::Skip), _) | (None, true) => OnError::Skip,
        (Some(OnError::Abort), true) => {
            return Err(Error::Config(
                "--rejects and --max-errors go with --on-error skip, not abort".into(),
            ));
        }
        (_, false) => OnError::Abort,
    };
    let columns: Option<Vec<ColumnRef>> = req
        .columns
        .as_deref()
        .map(|c| c.split(',').map(str::parse).collect::<Result<Vec<_>>>())
        .transpose()?;
    let infer = InferOptions {
        delimiter,
        dialect: Dialect {
            delimiter: delimiter.unwrap_or(b','),
            quote,
            escape,
            comment,
            blank_lines: req.blank_lines.unwrap_or_default(),
            trim_around_quotes: false,
            split,
        },
        detect_quoting: req.quote.is_none() && req.escape.is_none(),
        header: req.header,
        skip: req.skip.unwrap_or(0),
        detect_notes: req.skip.is_none(),
        null: req.null.clone().into_bytes(),
        date_format: req.date_format.clone(),
        timestamp_format: req.timestamp_format.clone(),
        line_end,
        types: parse_types(&req.types)?,
        ..base
    };
    Ok(Settings {
        infer,
        quote,
        escape,
        given,
        on_error,
        columns,
    })
}

/// Parses `--types` values: "a=INT,b=DECIMAL(12,2)" (commas inside
/// parentheses belong to the type).
fn parse_types(args: &[String]) -> Result<Vec<(String, DataType)>> {
    let mut out = Vec::new();
    for arg in args {
        let parts = split_top_level(arg);
        for p in parts.into_iter().filter(|p| !p.trim().is_empty()) {
            let Some((name, ty)) = p.split_once('=') else {
                return Err(Error::Config(format!(
                    "--types {p:?}: expected COLUMN=TYPE, e.g. price=DECIMAL(12,2)"
                )));
            };
            let ty = ty
                .trim()
                .parse()
                .with_context(|| format!("--types {p:?}"))?;
            out.push((name.trim().to_string(), ty));
        }
    }
    Ok(out)
}

/// The table's schema and the dialect the inputs read with.
struct Chosen {
    schema: Schema,
    delimiter: u8,
    header: Header,
    dialect: Dialect,
    inferred: Option<Inferred>,
    leading_comment: Option<u8>,
    skip: u64,
    notes: u64,
}

/// Chooses the schema: `--schema`, else the existing table's, else
/// inferred from samples of the inputs (with `--columns` and `--key`
/// applied to it).
fn choose_schema(
    existing: Option<Schema>,
    req: &LoadRequest,
    inputs: &[Input],
    read: &Read,
    settings: &Settings,
) -> Result<Chosen> {
    let infer_opts = &settings.infer;
    let header = infer_opts.header;
    let mut inferred = None;
    let mut leading_comment = None;
    let (mut skip, mut notes) = (infer_opts.skip, 0);
    let mut dialect = infer_opts.dialect.clone();
    let (schema, delimiter, header) = match (settings.given.clone(), existing) {
        (Some(s), _) | (None, Some(s)) if read.json.is_some() => {
            if !req.types.is_empty() {
                return Err(Error::Config(
                    "--types adjusts an inferred schema; JSON loads take their columns from --schema"
                        .into(),
                ));
            }
            (s, b',', header)
        }
        (None, None) if read.json.is_some() => {
            let mut inf = crate::infer::infer_json(inputs, infer_opts, req.json_rows.as_deref())
                .context("inferring the schema from JSON")?;
            if let Some(k) = &req.key {
                inf.schema.set_key(k)?;
            }
            let s = inf.schema.clone();
            inferred = Some(inf);
            (s, b',', header)
        }
        (Some(s), _) | (None, Some(s)) => {
            if !req.types.is_empty() {
                return Err(Error::Config(
                    "--types adjusts an inferred schema; with --schema or an existing table, the types are already fixed"
                        .into(),
                ));
            }
            // Mapped inputs may have any number of fields.
            let fields = (settings.columns.is_none() && !req.match_by_name).then_some(s.len());
            let sniffed = crate::infer::sniff_delimiter(inputs, infer_opts, fields)?;
            leading_comment = sniffed.leading_comment;
            dialect = sniffed.dialect;
            (skip, notes) = (sniffed.skip, sniffed.notes);
            (s, dialect.delimiter, header)
        }
        (None, None) => {
            let mut inf =
                crate::infer::infer(inputs, infer_opts).context("inferring the schema")?;
            let d = inf.delimiter;
            dialect = inf.dialect.clone();
            // A header recognised by its names in each file (a file that
            // starts with data keeps its first row), as `load_options`.
            let h = match (inf.header, inf.header_by_names) {
                (true, true) => Header::Auto,
                (true, false) => Header::Yes,
                (false, _) => Header::No,
            };
            leading_comment = inf.leading_comment;
            (skip, notes) = (inf.skip, inf.notes);
            // With --columns, the table is the chosen fields, in that order.
            if let Some(refs) = &settings.columns {
                inf.schema = chosen_columns(&inf.schema, refs)?;
            }
            // The key is part of the schema printed for reuse.
            if let Some(k) = &req.key {
                inf.schema.set_key(k)?;
            }
            let s = inf.schema.clone();
            inferred = Some(inf);
            (s, d, h)
        }
    };
    Ok(Chosen {
        schema,
        delimiter,
        header,
        dialect,
        inferred,
        leading_comment,
        skip,
        notes,
    })
}

/// The inferred columns that `--columns` names, in its order.
fn chosen_columns(inferred: &Schema, refs: &[ColumnRef]) -> Result<Schema> {
    let all = &inferred.columns;
    let mut chosen = Vec::new();
    for r in refs {
        let c = match r {
            ColumnRef::Position(p) => all.get(p - 1),
            ColumnRef::Name(n) => {
                let n = normalize_name(n.as_bytes());
                all.iter().find(|c| c.name.eq_ignore_ascii_case(&n))
            }
        };
        let Some(c) = c else {
            return Err(Error::Config(format!(
                "--columns: no input field {r} (the fields: {})",
                all.iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        chosen.push(c.clone());
    }
    Schema::new(chosen)
}

/// The library's options for the load, without progress, stop or cancel.
fn load_options(
    req: &LoadRequest,
    read: &Read,
    settings: &Settings,
    chosen: &Chosen,
) -> Result<LoadOptions> {
    let inferred = chosen.inferred.as_ref();
    Ok(LoadOptions {
        schema: Some(chosen.schema.clone()),
        dialect: Dialect {
            delimiter: chosen.delimiter,
            ..chosen.dialect.clone()
        },
        format: match read.json {
            Some(shape) => Format::Json(JsonFormat {
                shape,
                ignore_unknown: req.ignore_unknown,
            }),
            None => Format::Delimited,
        },
        header: chosen.header,
        skip: chosen.skip,
        values: ValueOptions {
            null: req.null.clone().into_bytes(),
            date_format: req.date_format.clone(),
            timestamp_format: req.timestamp_format.clone(),
            // Values the samples did not see must fit as written.
            exact: inferred.map(|i| i.exact.clone()).unwrap_or_default(),
        },
        threads: req.threads,
        memory_limit: parse_size(&req.memory_limit, "--memory-limit")?,
        block_size: req
            .block_size
            .as_deref()
            .map(|b| parse_size(b, "--block-size").map(|v| v as usize))
            .transpose()?,
        max_line_size: parse_size(&req.max_line_size, "--max-line-size")? as usize,
        progress: None,
        cancel: None,
        stop: None,
        commit_every: parse_commit_every(&req.commit_every)?,
        reload: req.reload,
        on_error: settings.on_error,
        rejects: req.rejects.clone(),
        max_errors: req.max_errors,
        allow_missing_columns: req.allow_missing_columns
            || inferred.is_some_and(|i| i.fill_missing),
        encoding: settings.infer.encoding,
        line_end: settings.infer.line_end,
        leading_comment: chosen.leading_comment,
        columns: settings.columns.clone(),
        match_by_name: req.match_by_name,
        // The rows field inference read, when it chose one.
        json_rows: req
            .json_rows
            .clone()
            .or_else(|| inferred.and_then(|i| i.json_rows.clone())),
        key: req.key.clone(),
        compression: req.compression.as_deref().map(str::parse).transpose()?,
        key_budget: None,
        shards: req.shards,
        shard_by: req.shard_by.clone(),
        shard_paths: req.shard_paths.clone(),
        // Types the samples chose widen when a later value contradicts
        // them, until the load's first commit.
        widen: inferred.map(|i| i.widen.clone()).unwrap_or_default(),
        on_duplicate: req.on_duplicate,
        segment_rows: req.segment_rows,
        dictionary_always: req.dictionary_always,
        page_cache: req.page_cache,
        map_files: req.map_files,
    })
}

/// Parses a one-byte option: `,`, `|`, `tab`, `\t`; `what` names it in
/// the error.
pub fn parse_char(s: &str, what: &str) -> Result<u8> {
    match s {
        "tab" | "\\t" | "\t" => Ok(b'\t'),
        _ if s.len() == 1 && s.is_ascii() => Ok(s.as_bytes()[0]),
        _ => Err(Error::Config(format!(
            "{what} must be one ASCII character or 'tab', not {s:?}"
        ))),
    }
}

/// Parses `123`, `64KiB`, `512MB`, `2GiB`, `1.5G` into bytes; `what`
/// names the option in the error.
pub fn parse_size(s: &str, what: &str) -> Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let Ok(n) = num.parse::<f64>() else {
        return Err(Error::Config(format!(
            "{what}: {s:?} is not a size (examples: 512MiB, 2GiB, 1000000)"
        )));
    };
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "kb" => 1e3,
        "m" | "mib" => 1024.0 * 1024.0,
        "mb" => 1e6,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "gb" => 1e9,
        "t" | "tib" => 1024f64.powi(4),
        "tb" => 1e12,
        u => {
            return Err(Error::Config(format!(
                "{what}: unknown unit {u:?} in {s:?} (use KiB, MiB, GiB, KB, MB, GB)"
            )));
        }
    };
    Ok((n * mult) as u64)
}

/// Parses `--commit-every`: a size (`1GiB`, `256MB`), a number of files
/// (`1000files`), a time (`30s`, `10min`, `1h`), or `all` (one commit).
pub fn parse_commit_every(s: &str) -> Result<CommitEvery> {
    let t = s.trim().to_ascii_lowercase();
    let hint = "examples: 1GiB, 256MB, 1000files, 30s, 10min, all";
    if matches!(t.as_str(), "all" | "once" | "never") {
        return Ok(CommitEvery::ONCE);
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n = || -> Result<u64> {
        match num.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(Error::Config(format!(
                "--commit-every {s:?}: expected a positive number ({hint})"
            ))),
        }
    };
    let seconds = match unit.trim() {
        // "10m": minutes or mebibytes? Neither is guessed.
        "m" => {
            return Err(Error::Config(format!(
                "--commit-every {s:?}: say 10min for minutes or 10MiB for bytes"
            )));
        }
        "file" | "files" => {
            return Ok(CommitEvery {
                files: Some(n()?),
                ..CommitEvery::ONCE
            });
        }
        "s" | "sec" | "secs" => Some(1),
        "min" | "mins" => Some(60),
        "h" | "hour" | "hours" => Some(3600),
        _ => None,
    };
    if let Some(m) = seconds {
        let secs = n()?
            .checked_mul(m)
            .ok_or_else(|| Error::Config(format!("--commit-every {s:?}: too long")))?;
        return Ok(CommitEvery {
            seconds: Some(secs),
            ..CommitEvery::ONCE
        });
    }
    let bytes = parse_size(&t, "--commit-every").map_err(|_| {
        Error::Config(format!(
            "--commit-every {s:?}: not a size, a number of files or a time ({hint})"
        ))
    })?;
    if bytes == 0 {
        return Err(Error::Config(format!(
            "--commit-every {s:?}: expected more than 0 ({hint})"
        )));
    }
    Ok(CommitEvery {
        bytes: Some(bytes),
        ..CommitEvery::ONCE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_every_forms() {
        let c = |s: &str| parse_commit_every(s).unwrap();
        assert_eq!(c("1GiB").bytes, Some(1 << 30));
        assert_eq!(c("256MB").bytes, Some(256_000_000));
        assert_eq!(c("1000files").files, Some(1000));
        assert_eq!(c("1 file").files, Some(1));
        assert_eq!(c("30s").seconds, Some(30));
        assert_eq!(c("10min").seconds, Some(600));
        assert_eq!(c("2h").seconds, Some(7200));
        assert_eq!(c("all"), CommitEvery::ONCE);
        for bad in [
            "",
            "files",
            "0files",
            "0",
            "0s",
            "-1",
            "3 parsecs",
            "0B",
            "x",
            "10m",
            "99999999999999999h",
        ] {
            assert!(
                matches!(parse_commit_every(bad), Err(Error::Config(_))),
                "{bad}"
            );
        }
        assert_eq!(
            parse_commit_every("10m").unwrap_err().to_string(),
            "--commit-every \"10m\": say 10min for minutes or 10MiB for bytes"
        );
    }

    #[test]
    fn sizes_and_chars() {
        assert_eq!(parse_size("2GiB", "x").unwrap(), 2 << 30);
        assert_eq!(parse_size("512MB", "x").unwrap(), 512_000_000);
        assert_eq!(parse_size("1000", "x").unwrap(), 1000);
        assert_eq!(parse_size("1.5k", "x").unwrap(), 1536);
        assert_eq!(
            parse_size("lots", "--memory-limit")
                .unwrap_err()
                .to_string(),
            "--memory-limit: \"lots\" is not a size (examples: 512MiB, 2GiB, 1000000)"
        );
        assert_eq!(parse_char("tab", "d").unwrap(), b'\t');
        assert_eq!(parse_char("|", "d").unwrap(), b'|');
        assert_eq!(
            parse_char("ab", "--delimiter").unwrap_err().to_string(),
            "--delimiter must be one ASCII character or 'tab', not \"ab\""
        );
    }

    #[test]
    fn input_formats_by_name() {
        assert_eq!("CSV".parse::<InputFormat>().unwrap(), InputFormat::Csv);
        assert_eq!("tsv".parse::<InputFormat>().unwrap(), InputFormat::Tsv);
        assert_eq!("JsonL".parse::<InputFormat>().unwrap(), InputFormat::Jsonl);
        assert_eq!("json".parse::<InputFormat>().unwrap(), InputFormat::Json);
        let e = "xml".parse::<InputFormat>().unwrap_err();
        assert!(matches!(e, Error::Config(_)));
        assert_eq!(
            e.to_string(),
            "format \"xml\": expected csv, tsv, jsonl or json"
        );
    }

    #[test]
    fn formats_guessed_from_names_then_bytes() {
        let guess = |name: &str, head: &str| {
            let inputs = [Input::File(PathBuf::from(name))];
            guess_format(&inputs, |_| head.as_bytes().to_vec())
        };
        // A known name wins over the bytes.
        assert_eq!(guess("a.csv", "[1,2]\n").0, InputFormat::Csv);
        assert_eq!(guess("a.JSONL.gz", "x").0, InputFormat::Jsonl);
        assert_eq!(guess("a.ndjson", "x").0, InputFormat::Jsonl);
        assert_eq!(guess("a.json.zst", "x").0, InputFormat::Json);
        assert_eq!(guess("a.tab", "x").0, InputFormat::Tsv);
        assert_eq!(guess("a.txt", "a,b\n1,2\n"), (InputFormat::Csv, None));
        assert_eq!(guess("a.txt", "{\"a\": 1}\n").0, InputFormat::Jsonl);
        assert_eq!(guess("a.txt", "{\n  \"a\": 1\n}\n").0, InputFormat::Json);
        assert_eq!(guess("a.txt", "[{\"a\": 1}]").0, InputFormat::Json);
        assert_eq!(guess("a.txt", "[1, \"x\"]\n").0, InputFormat::Jsonl);
        // A bracket that does not close its line: CSV.
        assert_eq!(guess("a.txt", "[1, 2\n").0, InputFormat::Csv);
        let (_, note) = guess("data", "{\"a\": 1}\n");
        assert_eq!(
            note.as_deref(),
            Some(
                "data was read as JSON lines: its name does not say its format (.csv, .tsv, .json, .jsonl) and its text starts like JSON (\"{\\\"a\\\": 1}\"); if it is CSV, give --format csv"
            )
        );
        // Standard input is not sniffed.
        assert_eq!(
            guess_format(&[Input::Stdin], |_| b"{}".to_vec()),
            (InputFormat::Csv, None)
        );
    }

    #[test]
    fn types_parsed_with_their_errors() {
        let t = parse_types(&["a=INT, b=DECIMAL(12,2)".into(), "c=TEXT".into()]).unwrap();
        let names: Vec<&str> = t.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(t[2].1, DataType::Text);
        let e = parse_types(&["a".into()]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--types \"a\": expected COLUMN=TYPE, e.g. price=DECIMAL(12,2)"
        );
        // A bad type keeps its own error inside the context.
        let e = parse_types(&["a=FLOATY".into()]).unwrap_err();
        let Error::Context { context, source } = &e else {
            panic!("{e:?}");
        };
        assert_eq!(context, "--types \"a=FLOATY\"");
        assert_eq!(e.to_string(), format!("--types \"a=FLOATY\": {source}"));
        assert!(matches!(e.innermost(), Error::Schema(_) | Error::Config(_)));
    }

    /// A directory of its own under the temporary directory, removed when
    /// dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir =
                std::env::temp_dir().join(format!("sluice-request-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        /// Writes `text` to the file `name` and returns it as an input.
        fn file(&self, name: &str, text: &str) -> Input {
            let p = self.0.join(name);
            std::fs::write(&p, text).unwrap();
            Input::File(p)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn prepare_infers_a_csv() {
        let dir = TempDir::new("infer");
        let inputs = [dir.file("sales.csv", "id;name;price\n1;a;2.50\n2;b;3.75\n")];
        let req = LoadRequest {
            types: vec!["id=INT".into()],
            memory_limit: "512MiB".into(),
            ..LoadRequest::default()
        };
        let p = prepare(&dir.0.join("db"), "sales", &inputs, &req).unwrap();
        assert_eq!(p.format, InputFormat::Csv);
        assert_eq!(p.json, None);
        assert_eq!(p.sniffed, None);
        assert_eq!(
            p.schema.to_string(),
            "id INT, name TEXT, price DECIMAL(18,2)"
        );
        assert_eq!(p.delimiter, b';');
        // Recognised by its names in every file.
        assert_eq!(p.header, Header::Auto);
        let inf = p.inferred.as_ref().unwrap();
        assert_eq!(inf.records_sampled, 2);
        assert_eq!(p.options.schema.as_ref(), Some(&p.schema));
        assert_eq!(p.options.dialect.delimiter, b';');
        assert_eq!(p.options.header, Header::Auto);
        assert_eq!(p.options.format, Format::Delimited);
        assert_eq!(p.options.memory_limit, 512 << 20);
        assert_eq!(p.options.commit_every.bytes, Some(1 << 30));
        // --types fixed id; the samples chose price, which may widen.
        assert_eq!(p.options.widen, ["name", "price"]);
        assert!(p.options.progress.is_none() && p.options.stop.is_none());
    }

    #[test]
    fn prepare_takes_a_given_schema() {
        let dir = TempDir::new("given");
        let inputs = [dir.file("kv", "a|1\nb|2\n")];
        let req = LoadRequest {
            schema: Some("k TEXT, v INT".into()),
            header: Header::No,
            rejects: Some(dir.0.join("bad.csv")),
            ..LoadRequest::default()
        };
        let p = prepare(&dir.0.join("db"), "kv", &inputs, &req).unwrap();
        assert!(p.inferred.is_none());
        assert_eq!(p.schema.to_string(), "k TEXT, v INT");
        assert_eq!(p.delimiter, b'|');
        assert_eq!(p.options.dialect.delimiter, b'|');
        assert_eq!(p.options.header, Header::No);
        assert_eq!(p.options.on_error, OnError::Skip);
        assert!(p.options.widen.is_empty());
    }

    #[test]
    fn prepare_reads_jsonl_by_name() {
        let dir = TempDir::new("jsonl");
        let inputs = [dir.file("events.jsonl", "{\"id\": 1, \"tag\": \"x\"}\n")];
        let req = LoadRequest {
            key: Some("id".into()),
            ..LoadRequest::default()
        };
        let p = prepare(&dir.0.join("db"), "events", &inputs, &req).unwrap();
        assert_eq!(p.format, InputFormat::Jsonl);
        assert_eq!(p.json, Some(JsonShape::Lines));
        assert_eq!(p.sniffed, None);
        assert_eq!(p.schema.to_string(), "id BIGINT PRIMARY KEY, tag TEXT");
        assert_eq!(
            p.options.format,
            Format::Json(JsonFormat {
                shape: JsonShape::Lines,
                ignore_unknown: false
            })
        );
    }

    #[test]
    fn prepare_refuses_csv_options_for_json() {
        let dir = TempDir::new("refuse");
        let inputs = [dir.file("rows", "{\"id\": 1}\n")];
        let req = LoadRequest {
            comment: Some("#".into()),
            ..LoadRequest::default()
        };
        let e = prepare(&dir.0.join("db"), "t", &inputs, &req).unwrap_err();
        assert!(matches!(e, Error::Config(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!(
                "--comment is for CSV and TSV input, and this load reads JSON (--format jsonl); JSON fields always match columns by name\nhint: {} was read as JSON lines: its name does not say its format (.csv, .tsv, .json, .jsonl) and its text starts like JSON (\"{{\\\"id\\\": 1}}\"); if it is CSV, give --format csv",
                dir.0.join("rows").display()
            )
        );
        let req = LoadRequest {
            format: Some(InputFormat::Tsv),
            ignore_unknown: true,
            ..LoadRequest::default()
        };
        let e = prepare(&dir.0.join("db"), "t", &inputs, &req).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--ignore-unknown is for JSON input, and this load reads TSV (give --format jsonl or json; standard input is not sniffed)"
        );
    }

    #[test]
    fn prepare_refuses_types_with_a_schema() {
        let dir = TempDir::new("types");
        let inputs = [dir.file("a.csv", "1,2\n")];
        let req = LoadRequest {
            schema: Some("a INT, b INT".into()),
            types: vec!["a=TEXT".into()],
            ..LoadRequest::default()
        };
        let e = prepare(&dir.0.join("db"), "t", &inputs, &req).unwrap_err();
        assert!(matches!(e, Error::Config(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            "--types adjusts an inferred schema; with --schema or an existing table, the types are already fixed"
        );
    }

    #[test]
    fn prepare_names_what_failed() {
        let dir = TempDir::new("context");
        let inputs = [dir.file("a.csv", "x,y\n1,2\n")];
        let req = LoadRequest {
            columns: Some("x,z".into()),
            ..LoadRequest::default()
        };
        let e = prepare(&dir.0.join("db"), "t", &inputs, &req).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--columns: no input field \"z\" (the fields: x, y)"
        );
        // An empty file has no schema to infer: the error says what ran.
        let inputs = [dir.file("empty.csv", "")];
        let e = prepare(&dir.0.join("db"), "t", &inputs, &LoadRequest::default()).unwrap_err();
        let Error::Context { context, .. } = &e else {
            panic!("{e:?}");
        };
        assert_eq!(context, "inferring the schema");
        assert!(e.to_string().starts_with("inferring the schema: "), "{e}");
    }
}
