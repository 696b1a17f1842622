//! Result rows as `sluice query` and `sluice get` print them: an aligned
//! table, CSV or JSON.

use std::io::{IsTerminal, Write};

use anyhow::Result;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType as A;
use sluice::batch::format_value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns (the default on a terminal)
    Table,
    /// RFC 4180 CSV with a header (the default when piped)
    Csv,
    /// One JSON array of row objects (EXPLAIN: one object a plan line,
    /// `{"plan": "..."}`)
    Json,
}

/// The format asked for, or the default: a table on a terminal, CSV
/// otherwise.
pub fn pick_format(format: Option<Format>) -> Format {
    format.unwrap_or(if std::io::stdout().is_terminal() {
        Format::Table
    } else {
        Format::Csv
    })
}

/// An answer's batches, handed in order to the function given, as many
/// times as a format needs (a table reads them twice: widths, then
/// rows). An answer on disk is read back a batch at a time.
pub type Each<'a> = &'a dyn Fn(&mut dyn FnMut(&RecordBatch) -> Result<()>) -> Result<()>;

/// Writes rows in `format`.
pub fn write_result(
    out: &mut dyn Write,
    schema: &arrow_schema::Schema,
    batches: &[RecordBatch],
    format: Format,
) -> Result<()> {
    write_each(
        out,
        schema,
        &|f| {
            for b in batches {
                f(b)?;
            }
            Ok(())
        },
        format,
    )
}

/// Writes the rows `each` hands out in `format`, a batch at a time: no
/// more of the answer is held than one batch (and its formatted cells).
pub fn write_each(
    out: &mut dyn Write,
    schema: &arrow_schema::Schema,
    each: Each,
    format: Format,
) -> Result<()> {
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    match format {
        Format::Table => write_table(out, &names, schema, each),
        Format::Csv => write_csv(out, &names, each),
        Format::Json => write_json(out, &names, each),
    }
}

fn cells(b: &RecordBatch) -> impl Iterator<Item = Vec<Option<String>>> + '_ {
    (0..b.num_rows()).map(move |r| {
        b.columns()
            .iter()
            .map(|c| format_value(c.as_ref(), r))
            .collect()
    })
}

fn write_csv(out: &mut dyn Write, names: &[String], each: Each) -> Result<()> {
    let header: Vec<Option<String>> = names.iter().cloned().map(Some).collect();
    sluice::batch::write_csv_row(out, &header, b',')?;
    each(&mut |b| {
        for row in cells(b) {
            sluice::batch::write_csv_row(out, &row, b',')?;
        }
        Ok(())
    })
}

fn is_number(t: &A) -> bool {
    matches!(
        t,
        A::Int32 | A::Int64 | A::Float64 | A::Decimal64(..) | A::Decimal128(..)
    )
}

fn write_table(
    out: &mut dyn Write,
    names: &[String],
    schema: &arrow_schema::Schema,
    each: Each,
) -> Result<()> {
    let text = |c: Option<String>| c.unwrap_or_else(|| "NULL".into());
    // The types of the rows (those of the first batch, as the schema's
    // may differ in encoding only).
    let mut numeric: Option<Vec<bool>> = None;
    let mut widths: Vec<usize> = names.iter().map(|n| n.chars().count()).collect();
    let mut rows = 0usize;
    each(&mut |b| {
        numeric.get_or_insert_with(|| {
            b.columns()
                .iter()
                .map(|c| is_number(c.data_type()))
                .collect()
        });
        for r in cells(b) {
            rows += 1;
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(text(c).chars().count());
            }
        }
        Ok(())
    })?;
    let numeric = numeric.unwrap_or_else(|| {
        schema
            .fields()
            .iter()
            .map(|f| is_number(f.data_type()))
            .collect()
    });
    let line = |out: &mut dyn Write, cells: &[String], header: bool| -> std::io::Result<()> {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str(" | ");
            }
            let pad = widths[i].saturating_sub(c.chars().count());
            if numeric.get(i).copied().unwrap_or(false) && !header {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            }
        }
        writeln!(out, "{}", s.trim_end())
    };
    line(out, names, true)?;
    let sep: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    writeln!(out, "{}", sep.join("-+-"))?;
    each(&mut |b| {
        for r in cells(b) {
            let r: Vec<String> = r.into_iter().map(text).collect();
            line(out, &r, false)?;
        }
        Ok(())
    })?;
    writeln!(out, "({} row{})", rows, if rows == 1 { "" } else { "s" })?;
    Ok(())
}

fn write_json(out: &mut dyn Write, names: &[String], each: Each) -> Result<()> {
    writeln!(out, "[")?;
    let mut first = true;
    each(&mut |b| {
        for r in 0..b.num_rows() {
            if !first {
                writeln!(out, ",")?;
            }
            first = false;
            write!(out, "  ")?;
            sluice::batch::write_json_object(out, names, b.columns(), r)?;
        }
        Ok(())
    })?;
    if !first {
        writeln!(out)?;
    }
    writeln!(out, "]")?;
    Ok(())
}
