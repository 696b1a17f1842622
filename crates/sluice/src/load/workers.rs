//! The compute workers: parse a block, build its Arrow batch, cut it by
//! shard.
//!
//! Useful for: what runs on every core: a block (one piece of a file, or
//! many small files) parsed by `parse` into a `BatchBuilder`, rejected
//! records dropped, the batch cut into the sink's shards (by key hash or
//! dealt round-robin), each piece's keys extracted and sorted and its
//! repeating TEXT dictionary-encoded. Any worker takes any block.
//! Not useful for: block boundaries (`reader`), or putting blocks back in
//! order (`writer`).

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;

use crate::batch::{BatchBuilder, ColumnStats};
use crate::error::{Error, Result};
use crate::index::KeyBatch;
use crate::parse::{
    BlockError, BlockInfo, Format, JsonFormat, Reject, RowPolicy, parse_block_with,
    parse_json_block,
};
use crate::source::Mapped;

use super::OnError;
use super::pipeline::Shared;
use super::reader::{Block, Part};
use super::sink::{Piece, Route};
use crate::stages::Stage;

/// A parsed block: its rows cut by shard, and per part what it held; or
/// why it failed.
pub(super) type Parsed = Result<(Vec<Piece>, Vec<(BlockInfo, Vec<Reject>, bool)>), Failed>;

/// Why a block failed.
pub(super) enum Failed {
    /// Part `.0` of the block does not parse.
    Part(usize, BlockError),
    /// Anything else (a damaged key-index run, an Arrow error): reported
    /// as it is, never as a malformed input.
    Other(Error),
}

pub(super) struct Done {
    pub(super) seq: u64,
    pub(super) parts: Vec<Part>,
    /// `None`: skipped because the load is failing or cancelled.
    pub(super) result: Option<Parsed>,
    /// The block's range of a mapped file, read no more, for the writer
    /// to drop its pages: with one worker, which is then the load's
    /// critical path (with more, each drops its own blocks' pages, and the
    /// writer, one thread for all, is spared).
    pub(super) mapped: Option<(Arc<Mapped>, Range<usize>)>,
}

/// Worker: parse blocks until the block channel closes.
pub(super) fn work(shared: &Shared<'_>, blocks: &Mutex<Receiver<Block>>, done: SyncSender<Done>) {
    let mut rows_per_byte = 1.0 / 16.0;
    loop {
        let next = match blocks.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(block) = next else { return };
        let cancelled = shared
            .opts
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed));
        let result = if cancelled
            || shared.stop.load(Ordering::Relaxed)
            || shared.first_error.load(Ordering::Relaxed) < block.seq
        {
            None
        } else {
            let data = block.bytes();
            let capacity = (data.len() as f64 * rows_per_byte * 1.1) as usize + 16;
            let mut builder = BatchBuilder::new(shared.schema, shared.values.clone(), capacity);
            let policy = RowPolicy {
                skip_bad: shared.opts.on_error == OnError::Skip,
                fill_missing: shared.opts.allow_missing_columns,
                max_record: Some(shared.opts.max_line_size),
                counted_only: shared.opts.rejects.is_none() && shared.opts.max_errors.is_none(),
            };
            let mut parts = Vec::with_capacity(block.parts.len());
            let mut drop: Vec<u32> = Vec::new();
            let mut rows_in_builder = 0u32;
            let mut failed = None;
            for (k, part) in block.parts.iter().enumerate() {
                let mut rejects = Vec::new();
                let bytes = &data[part.start..part.end];
                let map = part.map.as_deref();
                let parsed = crate::stages::time(Stage::Parse, || match &shared.opts.format {
                    Format::Delimited => parse_block_with(
                        bytes,
                        &shared.opts.dialect,
                        shared.schema,
                        &mut builder,
                        policy,
                        map,
                        &mut rejects,
                    ),
                    Format::Json(j) => parse_json_block(
                        bytes,
                        &JsonFormat {
                            shape: part.json,
                            ..*j
                        },
                        shared.schema,
                        &mut builder,
                        policy,
                        map,
                        &mut rejects,
                    ),
                });
                match parsed {
                    Ok(info) => {
                        // Rows of rejects count from the part's first row.
                        for r in &mut rejects {
                            r.row += rows_in_builder;
                            drop.push(r.row);
                        }
                        rows_in_builder += (info.rows + rejects.len() as u64) as u32;
                        // One record a line (row i is the part's line i+1):
                        // as many newlines as rows, one fewer when the part
                        // ends without one. Blank or comment lines and
                        // quoted newlines break it.
                        let bytes = &data[part.start..part.end];
                        let open_end = !bytes.is_empty() && bytes.last() != Some(&b'\n');
                        let one_a_line =
                            info.newlines + open_end as u64 == info.rows + rejects.len() as u64;
                        parts.push((info, rejects, one_a_line));
                    }
                    Err(e) => {
                        failed = Some((k, e));
                        break;
                    }
                }
            }
            Some(match failed {
                None => {
                    if !data.is_empty() {
                        rows_per_byte = rows_in_builder as f64 / data.len() as f64;
                    }
                    // Repeating TEXT values are dictionary-encoded here,
                    // in parallel, so the writer only merges dictionaries.
                    // So are the keys extracted and sorted.
                    match crate::stages::time(Stage::Build, || {
                        builder
                            .finish_without(&drop)
                            .and_then(|(b, stats)| route_batch(&Cut::of(shared), b, stats))
                    }) {
                        Ok(outs) => Ok((outs, parts)),
                        Err(e) => Err(Failed::Other(e)),
                    }
                }
                Some((k, e)) => {
                    shared.first_error.fetch_min(block.seq, Ordering::Relaxed);
                    Err(Failed::Part(k, e))
                }
            })
        };
        let Block {
            seq,
            data,
            parts,
            mapped,
        } = block;

        if data.bytes.capacity() > 0 {
            shared.give_buf(data);
        }
        // If the writer is gone, keep draining so the reader never blocks.
        let mapped = match mapped {
            Some((m, range)) if shared.workers > 1 => {
                crate::stages::time(Stage::Read, || m.release(range));
                None
            }
            m => m,
        };
        let _ = done.send(Done {
            seq,
            parts,
            result,
            mapped,
        });
    }
}

/// How a batch is cut for the sink: its [`Layout`](super::sink::Layout)'s
/// routing and keys.
pub(super) struct Cut<'c> {
    pub(super) route: Route,
    pub(super) shards: u32,
    pub(super) key_col: Option<usize>,
    pub(super) check_keys: &'c [bool],
    pub(super) sort_rows: bool,
    /// [`LoadOptions::dictionary_always`](super::LoadOptions::dictionary_always).
    pub(super) dictionary_always: bool,
}

impl<'c> Cut<'c> {
    fn of(shared: &'c Shared<'_>) -> Self {
        Cut {
            route: shared.route,
            shards: shared.shards,
            key_col: shared.key_col,
            check_keys: &shared.check_keys,
            sort_rows: shared.sort_rows,
            dictionary_always: shared.opts.dictionary_always,
        }
    }

    pub(super) fn layout(layout: &'c super::sink::Layout) -> Self {
        Cut {
            route: layout.route,
            shards: layout.shards,
            key_col: layout.key,
            check_keys: &layout.check_keys,
            sort_rows: layout.sort_rows,
            dictionary_always: false,
        }
    }
}

/// Cuts a parsed batch by shard; per shard, extracts and sorts the keys
/// (ordered for the check against the shard's runs), and
/// dictionary-encodes repeating TEXT. Runs on the workers, in parallel.
pub(super) fn route_batch(
    shared: &Cut<'_>,
    b: RecordBatch,
    stats: Vec<ColumnStats>,
) -> Result<Vec<Piece>> {
    use crate::partition::{deal, shards_of, split};
    let n = shared.shards;
    let pieces = match shared.route {
        Route::One => return Ok(vec![finish_piece(shared, 0, b, stats, Vec::new())?]),
        Route::Hash(c) => split(&b, &shards_of(b.column(c).as_ref(), n)?, n)?,
        Route::RoundRobin => deal(&b, n),
    };
    if let [one] = pieces.as_slice()
        && one.rows.len() == b.num_rows()
    {
        return Ok(vec![finish_piece(shared, one.shard, b, stats, Vec::new())?]);
    }
    // Which TEXT columns repeat enough to encode: asked once of the whole
    // batch, not once a piece.
    let gains = crate::batch::dict::text_gains(&b, shared.dictionary_always);
    pieces
        .into_iter()
        .map(|p| {
            let stats = p
                .batch
                .columns()
                .iter()
                .map(|a| crate::batch::column_stats(a.as_ref()))
                .collect();
            finish_piece_where(shared, p.shard, p.batch, stats, p.rows, Some(&gains))
        })
        .collect()
}

/// A batch whose rows all belong to `shard`, as its one piece (keys
/// extracted and sorted, repeating TEXT dictionary-encoded), without
/// routing it.
pub(super) fn finish_one(
    shared: &Cut<'_>,
    shard: u32,
    b: RecordBatch,
    stats: Vec<ColumnStats>,
) -> Result<Piece> {
    finish_piece(shared, shard, b, stats, Vec::new())
}

fn finish_piece(
    shared: &Cut<'_>,
    shard: u32,
    batch: RecordBatch,
    stats: Vec<ColumnStats>,
    rows: Vec<u32>,
) -> Result<Piece> {
    finish_piece_where(shared, shard, batch, stats, rows, None)
}

/// [`finish_piece`], dictionary-encoding only the TEXT columns `encode`
/// marks (all that gain when `None`).
fn finish_piece_where(
    shared: &Cut<'_>,
    shard: u32,
    batch: RecordBatch,
    stats: Vec<ColumnStats>,
    rows: Vec<u32>,
    encode: Option<&[bool]>,
) -> Result<Piece> {
    let (mut batch, mut rows) = (batch, rows);
    let keys = match shared.key_col {
        Some(k) => {
            let mut kb = KeyBatch::from_array(batch.column(k).as_ref())?;
            if shared.sort_rows {
                // The rows in key order, while the block is still warm
                // in this worker's cache.
                let order = kb.take_order();
                let idx = arrow_array::UInt32Array::from(order.clone());
                batch = arrow_select::take::take_record_batch(&batch, &idx)
                    .map_err(|e| Error::Internal(format!("ordering rows by key: {e}")))?;
                rows = if rows.is_empty() {
                    order
                } else {
                    order.iter().map(|&r| rows[r as usize]).collect()
                };
            }
            // Checked against the table's runs when the group's run is
            // built, all of its keys at once (`index::check_batches`).
            if shared.check_keys.get(shard as usize) == Some(&true) {
                kb.order_by_hash();
            }
            Some(kb)
        }
        None => None,
    };
    // Pieces merged in key order are interleaved with each other: their
    // TEXT columns stay plain (some pieces would be dictionaries, others
    // not, which cannot be interleaved).
    let encode = if shared.sort_rows {
        Some(&[][..])
    } else {
        encode
    };
    Ok(Piece {
        shard,
        batch: crate::batch::dict::encode_batch_where(batch, encode, shared.dictionary_always)?,
        stats,
        keys,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use arrow_schema::DataType as Arrow;
    use std::sync::Arc;

    /// 200 rows: a key counting down (`k199` .. `k000`), the row's place
    /// as a number, and a column of three values (dictionary material).
    fn block() -> RecordBatch {
        let n = 200;
        let keys: ArrayRef = Arc::new(StringArray::from(
            (0..n)
                .map(|i| format!("k{:03}", n - 1 - i))
                .collect::<Vec<_>>(),
        ));
        let at: ArrayRef = Arc::new(Int64Array::from((0..n as i64).collect::<Vec<_>>()));
        let few: ArrayRef = Arc::new(StringArray::from(
            (0..n).map(|i| ["a", "b", "c"][i % 3]).collect::<Vec<_>>(),
        ));
        RecordBatch::try_from_iter(vec![("k", keys), ("at", at), ("few", few)]).unwrap()
    }

    fn cut(sort_rows: bool) -> Cut<'static> {
        Cut {
            route: Route::One,
            shards: 1,
            key_col: Some(0),
            check_keys: &[],
            sort_rows,
            dictionary_always: false,
        }
    }

    #[test]
    fn sorted_pieces_hold_their_rows_in_key_order_and_name_them() {
        // Consecutive rows, and rows picked from a larger block (each
        // row's row in the block: 1000 + its place).
        let picked: Vec<u32> = (0..200).map(|i| 1000 + i).collect();
        for rows in [Vec::new(), picked] {
            let p = finish_piece(&cut(true), 0, block(), Vec::new(), rows.clone()).unwrap();
            let keys = p.batch.column(0).as_string::<i32>();
            let at = p.batch.column(1).as_primitive::<Int64Type>();
            for i in 0..200 {
                assert_eq!(keys.value(i), format!("k{i:03}"), "row {i} in key order");
                // The piece's row i came from the block's row `at`.
                let from = at.value(i) as u32;
                let want = if rows.is_empty() {
                    from
                } else {
                    rows[from as usize]
                };
                assert_eq!(p.rows[i], want);
            }
            let kb = p.keys.as_ref().unwrap();
            assert!((0..200).all(|i| kb.sorted_row(i) == i as u32));
            assert_eq!(kb.sorted_key(0), b"k000");
            // Merged pieces must all be alike: no dictionaries.
            assert_eq!(p.batch.column(2).data_type(), &Arrow::Utf8);
        }
        // Unsorted, the rows stay as they came and may be dictionaries.
        let p = finish_piece(&cut(false), 0, block(), Vec::new(), Vec::new()).unwrap();
        assert_eq!(p.batch.column(0).as_string::<i32>().value(0), "k199");
        assert!(p.rows.is_empty());
        assert!(matches!(
            p.batch.column(2).data_type(),
            Arrow::Dictionary(_, _)
        ));
    }
}
