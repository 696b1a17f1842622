//! The load pipeline: plan → read → parse → write → sink → commit.
//!
//! ```text
//!  plan          reader thread        workers (= cores)        writer          sink
//!  inputs,   ─►  read a file, cut ─►  parse → Arrow batch  ─►  input order, ─►  table store
//!  resume        blocks at record     cut by shard, keys       lines, rejects   (segments, keys,
//!  (journal)     ends, pack small     sorted (any block)       provenance       manifest commit)
//!                files                                                         or any `Sink`
//!                     ▲                                           │
//!                     └──────── tokens: at most `in_flight` blocks┘
//! ```
//!
//! A load is a sequence of commit groups of whole files; each group is all
//! or nothing. Memory is bounded by the tokens: a block is read only when
//! one of the `in_flight` tokens is free, and the writer returns the token
//! once the block's rows are in the sink. Rows reach the sink in input
//! order, so a table's rows are in the order a sequential parse would
//! give. Nothing is visible until the sink commits; on any error the sink
//! removes what the group wrote.
//!
//! The stages, a module each:
//! - [`options`](LoadOptions): what a load can be told, checked against the table;
//!   [`request`](prepare): what a user asks of a load (`sluice load`'s
//!   options) worked out into them: format, dialect, schema;
//! - `plan`: inputs read once, resume against the load journal;
//! - `reader`: files cut into blocks (with `header` and `json_input` for
//!   the first lines of a file);
//! - `workers`: blocks parsed into Arrow batches, cut by shard;
//! - `writer`: blocks back in order, line numbers, rejects (`rejects`);
//! - [`sink`]: the end of the pipeline, an interface; [`TableSink`] is the
//!   table store's (with `keys` for the uniqueness check and `journal`);
//! - `pipeline`: the threads of one group; `widen`: a group read again
//!   with a wider inferred type.

use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::batch::validate_identifier;
use crate::error::{Error, Result};
use crate::exec::worker_count;
use crate::source::Input;
use crate::store::Database;

mod batches;
pub mod columnar;
mod header;
mod journal;
mod json_input;
pub(crate) mod keys;
mod options;
mod pipeline;
mod plan;
mod reader;
mod rejects;
mod request;
pub mod sink;
mod summary;
mod table;
mod widen;
mod workers;
mod writer;

pub use batches::load_batches;
pub use header::normalize_name;
pub use options::{
    ColumnRef, CommitEvery, DEFAULT_COMMIT_BYTES, DEFAULT_MAX_LINE_SIZE, DEFAULT_MEMORY_LIMIT,
    Header, LoadOptions, OnDuplicate, OnError, Reload,
};
pub use reader::{FIXED_MEMORY, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, block_size_for};
pub use request::{
    InputFormat, LoadRequest, Prepared, parse_char, parse_commit_every, parse_size, prepare,
    prepare_for,
};
pub use sink::Sink;
pub use summary::{LoadSummary, Progress};
pub use table::{SEGMENT_TARGET_BYTES, TableSink};
pub use widen::{Widening, wider_type};

use options::checked_options;
use pipeline::run_group;
use plan::{resume_plan, unique_inputs};
use rejects::RejectsFile;
use widen::{Failure, probe, widen_after, widen_probed};

/// Loads `inputs` into `table`, creating it from `opts.schema` if needed.
///
/// The files are committed in groups (`opts.commit_every`; one group by
/// default unless the input passes 1 GiB), each group all or nothing, and
/// each commit journals its files: the same load run again skips the
/// files already committed (`opts.reload`). An error leaves every earlier
/// group committed and says how many files they held.
pub fn load(
    db: &mut Database,
    table: &str,
    inputs: &[Input],
    opts: &LoadOptions,
) -> Result<LoadSummary> {
    let start = Instant::now();
    let stages_before = crate::stages::snapshot();
    validate_identifier(table, "table")?;
    let table = table.to_ascii_lowercase();
    if inputs.is_empty() {
        return Err(Error::Config("no input files given".into()));
    }
    checked_options(db, &table, opts)?;
    // A file listed twice (a glob and its own name) is read once.
    let (deduped, listed_twice) = unique_inputs(inputs);
    let unique: &[Input] = deduped.as_deref().unwrap_or(inputs);
    let (rest, already_loaded) = resume_plan(db, &table, unique, opts)?;
    let todo: &[Input] = rest.as_deref().unwrap_or(unique);
    let mut total = LoadSummary::empty(&table, worker_count(opts.threads));
    total.already_loaded = already_loaded;
    total.listed_twice = listed_twice;
    if todo.is_empty() {
        if db.table(&table).is_none() {
            return Err(Error::Internal(
                "every input skipped for a new table".into(),
            ));
        }
        total.seconds = start.elapsed().as_secs_f64();
        return Ok(total);
    }
    // Inferred types of a table this load creates may widen until the
    // load's first commit (`LoadOptions::widen`).
    let new_table = db.table(&table).is_none();
    let mut sink = TableSink::new(db, &table);
    let before = Resumed {
        files: already_loaded,
        total: unique.len() as u64,
    };
    run_groups(&mut sink, todo, opts, before, new_table, &mut total)?;
    total.seconds = start.elapsed().as_secs_f64();
    total.stages = crate::stages::snapshot().since(&stages_before);
    Ok(total)
}

/// Loads `inputs` into any [`Sink`], with the options of [`load`] that do
/// not concern a table (the schema must be given: `opts.schema`). `name`
/// names the destination in the summary. Commit groups, rejects and
/// errors are as for [`load`]; nothing is skipped as loaded before (that
/// journal is the table store's).
pub fn load_into<'a>(
    sink: &mut dyn Sink<'a>,
    name: &str,
    inputs: &'a [Input],
    opts: &LoadOptions,
) -> Result<LoadSummary> {
    let plan = ResumePlan {
        todo: Vec::new(),
        already_loaded: 0,
        listed_twice: 0,
        total: inputs.len() as u64,
    };
    load_planned(sink, name, inputs, &plan, opts)
}

/// The inputs a load into a [`Sink`] with a journal of its own still has
/// to read: see [`resume_inputs`].
#[derive(Debug, Clone)]
pub struct ResumePlan {
    /// The inputs to load, each file once, without those loaded before.
    pub todo: Vec<Input>,
    /// Files skipped: an earlier commit loaded them (same name, size and
    /// CRC-32).
    pub already_loaded: u64,
    /// Files dropped because they were listed twice.
    pub listed_twice: u64,
    /// Files given, each once.
    pub total: u64,
}

/// Which of `inputs` a load still has to read, given the files its
/// destination's journal records (`loaded`: journal name, see
/// [`journal_name`], to the commit that loaded it and what was recorded
/// of it), as [`load`] decides for a table: a file with the same name,
/// size and CRC-32 is skipped, a changed one is an error (or loaded
/// again: `opts.reload`).
pub fn resume_inputs(
    inputs: &[Input],
    loaded: &std::collections::HashMap<String, (u64, crate::store::LoadedFile)>,
    opts: &LoadOptions,
) -> Result<ResumePlan> {
    let (deduped, listed_twice) = unique_inputs(inputs);
    let unique: &[Input] = deduped.as_deref().unwrap_or(inputs);
    let (rest, already_loaded) = plan::resume_against(loaded, unique, opts)?;
    Ok(ResumePlan {
        todo: rest.unwrap_or_else(|| unique.to_vec()),
        already_loaded,
        listed_twice,
        total: unique.len() as u64,
    })
}

/// Loads `inputs` (the plan's `todo`, borrowed for as long as the sink
/// needs) into `sink` as [`load_into`] does, counting the files `plan`
/// skipped in the summary and its messages.
pub fn load_planned<'a>(
    sink: &mut dyn Sink<'a>,
    name: &str,
    inputs: &'a [Input],
    plan: &ResumePlan,
    opts: &LoadOptions,
) -> Result<LoadSummary> {
    let start = Instant::now();
    if inputs.is_empty() && plan.already_loaded == 0 {
        return Err(Error::Config("no input files given".into()));
    }
    opts.dialect.validate()?;
    let mut total = LoadSummary::empty(name, worker_count(opts.threads));
    total.already_loaded = plan.already_loaded;
    total.listed_twice = plan.listed_twice;
    if !inputs.is_empty() {
        let before = Resumed {
            files: plan.already_loaded,
            total: plan.total,
        };
        run_groups(sink, inputs, opts, before, true, &mut total)?;
    }
    total.seconds = start.elapsed().as_secs_f64();
    Ok(total)
}

/// The name a load journal gives an input: its absolute path with the
/// directory's symbolic links resolved (`<stdin>` for standard input).
/// For many inputs, [`JournalNames`] resolves each directory once.
pub fn journal_name(input: &Input) -> String {
    JournalNames::default().of(input)
}

/// Journal names of inputs, one directory resolved once for all its
/// files; see [`journal_name`].
pub use journal::JournalPaths as JournalNames;

/// Whether an input is journaled by a commit (and skipped by a later
/// load): a regular file, not standard input, a pipe or a device.
pub fn is_journaled(input: &Input) -> bool {
    plan::is_regular(input)
}

/// Input files committed before this load (resumed), of all it was given.
#[derive(Clone, Copy)]
struct Resumed {
    files: u64,
    total: u64,
}

/// The commit groups of a load, one after the other until every file of
/// `todo` is committed or a stop ends the load after a group; a group
/// that fails on a value its inferred type does not take is read again
/// with the type widened (`may_widen`: the destination is new). Adds each
/// group to `total`.
fn run_groups<'a>(
    sink: &mut dyn Sink<'a>,
    todo: &'a [Input],
    opts: &LoadOptions,
    before: Resumed,
    may_widen: bool,
    total: &mut LoadSummary,
) -> Result<()> {
    // One rejects file for all the groups; a resumed load appends to it.
    let mut rejects = match &opts.rejects {
        Some(p) => Some(RejectsFile::create(p, before.files > 0)?),
        None => None,
    };
    // After a widening the options carry the widened schema.
    let mut widened: Option<LoadOptions> = None;
    let mut done = 0usize;
    let table = total.table.clone();
    let result = loop {
        let cur = widened.as_ref().unwrap_or(opts);
        let progress_before = cur.progress.as_deref().map(Progress::counts);
        let mut contradiction = None;
        let group = run_group(
            sink,
            &table,
            &todo[done..],
            cur,
            &mut rejects,
            total.rejected,
            &mut contradiction,
        );
        let g = match group {
            Ok(g) => g,
            Err(e) => {
                let failed = Failure {
                    error: e,
                    contradiction,
                    inputs: &todo[done..],
                    new_table: may_widen,
                    committed: (done > 0).then_some((before.files + done as u64, before.total)),
                };
                match widen_after(cur, failed, &total.widened) {
                    Ok((mut next, w)) => {
                        total.widened.push(w);
                        // From the second widening on, one pass first notes
                        // every other value the types refuse, so that a
                        // file whose late rows surprise many columns is read
                        // again once, not once a column (a single late
                        // value costs no probe). Should the probe fail, the
                        // group is just read again.
                        if total.widened.len() >= 2
                            && let Ok(probed) = probe(&todo[done..], &next, &total.widened)
                        {
                            widen_probed(&mut next, probed, &mut total.widened);
                        }
                        if let (Some(p), Some(c)) = (&cur.progress, progress_before) {
                            p.restore(c);
                        }
                        widened = Some(next);
                        continue;
                    }
                    Err(e @ Error::NotWidened { .. }) => break Err(e),
                    Err(e) if done == 0 => break Err(e),
                    Err(e) => {
                        break Err(Error::PartlyLoaded {
                            committed: before.files + done as u64,
                            total: before.total,
                            cause: Box::new(e),
                        });
                    }
                }
            }
        };
        if let Some(r) = rejects.as_mut() {
            for (file, why) in &g.unreadable {
                r.unreadable(file, why)?;
            }
        }
        let files = g.files as usize;
        total.add_group(g);
        done += files;
        if done >= todo.len() {
            break Ok(());
        }
        if files == 0
            || opts
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed))
        {
            total.files_left = (todo.len() - done) as u64;
            break Ok(());
        }
    };
    if let Some(r) = rejects {
        r.finish()?;
    }
    result
}
