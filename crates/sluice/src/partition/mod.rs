//! Shard routing: which shard each row of a batch goes to, and cutting a
//! typed batch into one batch per shard without turning rows into text.
//!
//! A hashed table routes a row by its shard column's value in the key
//! index's byte form (integers, dates, timestamps and decimals as
//! order-preserving 8-byte integers, TEXT as its UTF-8 bytes): the shard is
//! [`shard_of_key`] of those bytes, so a lookup by key computes the same
//! shard from the key alone and reads one shard. The function is part of
//! the on-disk format (FORMAT.md): a key must land in the same shard in
//! every load.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal64Type, Float64Type, Int32Type, Int64Type, Time64MicrosecondType,
    TimestampMicrosecondType,
};
use arrow_array::{Array, RecordBatch, UInt32Array};
use arrow_schema::DataType as ArrowType;

use crate::error::{Error, Result};
use crate::index::{encode_i64, key_hash};

/// The shard of a value given in the index's byte form: the bloom
/// filters' [`key_hash`], re-mixed (so that the rows of one shard do not
/// share hash bits the filters use), scaled to `0..count`.
#[inline]
pub fn shard_of_key(key: &[u8], count: u32) -> u32 {
    if count <= 1 {
        return 0;
    }
    let mut h = key_hash(key) ^ 0x6a09_e667_f3bc_c909;
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    ((u128::from(h) * u128::from(count)) >> 64) as u32
}

/// The shard of every row of `a` (a column's values); NULL goes to
/// shard 0.
pub fn shards_of(a: &dyn Array, count: u32) -> Result<Vec<u32>> {
    let n = a.len();
    if count <= 1 {
        return Ok(vec![0; n]);
    }
    let of_i64 = |v: i64| shard_of_key(&encode_i64(v), count);
    let mut out: Vec<u32> = match a.data_type() {
        ArrowType::Int32 => a
            .as_primitive::<Int32Type>()
            .values()
            .iter()
            .map(|&v| of_i64(v as i64))
            .collect(),
        ArrowType::Int64 => a
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .map(|&v| of_i64(v))
            .collect(),
        ArrowType::Date32 => a
            .as_primitive::<Date32Type>()
            .values()
            .iter()
            .map(|&v| of_i64(v as i64))
            .collect(),
        ArrowType::Timestamp(_, _) => a
            .as_primitive::<TimestampMicrosecondType>()
            .values()
            .iter()
            .map(|&v| of_i64(v))
            .collect(),
        ArrowType::Time64(_) => a
            .as_primitive::<Time64MicrosecondType>()
            .values()
            .iter()
            .map(|&v| of_i64(v))
            .collect(),
        ArrowType::Decimal64(_, _) => a
            .as_primitive::<Decimal64Type>()
            .values()
            .iter()
            .map(|&v| of_i64(v))
            .collect(),
        ArrowType::Float64 => a
            .as_primitive::<Float64Type>()
            .values()
            .iter()
            .map(|&v| {
                // Equal values, equal shards: -0.0 is 0.0, every NaN one NaN.
                let v = if v == 0.0 {
                    0.0
                } else if v.is_nan() {
                    f64::NAN
                } else {
                    v
                };
                shard_of_key(&v.to_bits().to_be_bytes(), count)
            })
            .collect(),
        ArrowType::Boolean => {
            let b = a.as_boolean();
            (0..n)
                .map(|i| shard_of_key(&[b.value(i) as u8], count))
                .collect()
        }
        ArrowType::Utf8 => {
            let s = a.as_string::<i32>();
            (0..n)
                .map(|i| shard_of_key(s.value(i).as_bytes(), count))
                .collect()
        }
        // An interval by its stored fields (not a key: `1 mon` and
        // `30 days` may land in two shards, as they are two values).
        ArrowType::Interval(arrow_schema::IntervalUnit::MonthDayNano) => a
            .as_primitive::<arrow_array::types::IntervalMonthDayNanoType>()
            .values()
            .iter()
            .map(|v| {
                let mut b = [0u8; 16];
                b[..4].copy_from_slice(&v.months.to_be_bytes());
                b[4..8].copy_from_slice(&v.days.to_be_bytes());
                b[8..].copy_from_slice(&v.nanoseconds.to_be_bytes());
                shard_of_key(&b, count)
            })
            .collect(),
        ArrowType::Dictionary(_, _) => {
            // Each distinct value once, then by code.
            let d = a.as_dictionary::<Int32Type>();
            let per_value = shards_of(d.values().as_ref(), count)?;
            d.keys()
                .values()
                .iter()
                .map(|&k| per_value.get(k as usize).copied().unwrap_or(0))
                .collect()
        }
        other => {
            return Err(Error::Internal(format!(
                "cannot route rows by a column of type {other}"
            )));
        }
    };
    if a.null_count() > 0 {
        for (i, s) in out.iter_mut().enumerate() {
            if a.is_null(i) {
                *s = 0;
            }
        }
    }
    Ok(out)
}

/// One shard's part of a batch.
pub struct Piece {
    /// The shard (or, for round-robin routing, the residue class).
    pub shard: u32,
    pub batch: RecordBatch,
    /// Each row's position in the batch it was cut from.
    pub rows: Vec<u32>,
}

/// Cuts `batch` into one batch per shard that `ids` (one per row) names,
/// in shard order, rows keeping their order; shards without rows are left
/// out. A batch that goes to one shard whole is not copied.
pub fn split(batch: &RecordBatch, ids: &[u32], count: u32) -> Result<Vec<Piece>> {
    let n = batch.num_rows();
    if ids.len() != n {
        return Err(Error::Internal("one shard id per row".into()));
    }
    let mut sizes = vec![0u32; count as usize];
    for &s in ids {
        let slot = sizes
            .get_mut(s as usize)
            .ok_or_else(|| Error::Internal(format!("shard {s} of {count}")))?;
        *slot += 1;
    }
    if let Some(s) = sizes.iter().position(|&c| c as usize == n) {
        return Ok(vec![Piece {
            shard: s as u32,
            batch: batch.clone(),
            rows: (0..n as u32).collect(),
        }]);
    }
    // Counting sort of the row numbers by shard.
    let mut starts = Vec::with_capacity(count as usize + 1);
    let mut acc = 0u32;
    for &c in &sizes {
        starts.push(acc);
        acc += c;
    }
    starts.push(acc);
    let mut next = starts.clone();
    let mut order = vec![0u32; n];
    for (i, &s) in ids.iter().enumerate() {
        let at = &mut next[s as usize];
        order[*at as usize] = i as u32;
        *at += 1;
    }
    let mut out = Vec::new();
    for s in 0..count as usize {
        let (lo, hi) = (starts[s] as usize, starts[s + 1] as usize);
        if lo == hi {
            continue;
        }
        let rows = order[lo..hi].to_vec();
        let idx = UInt32Array::from(rows.clone());
        let batch = arrow_select::take::take_record_batch(batch, &idx)?;
        out.push(Piece {
            shard: s as u32,
            batch,
            rows,
        });
    }
    Ok(out)
}

/// Round-robin routing without copying: `batch` cut into `count`
/// contiguous slices (zero-copy), the first `rows % count` one row
/// longer; empty slices left out. Slice `i` is class `i`: the writer,
/// which knows how many rows came before the batch (`before`), sends it
/// to shard `(before + i) % count`, so that every shard gets as many
/// rows as dealing them one at a time would give it.
pub fn deal(batch: &RecordBatch, count: u32) -> Vec<Piece> {
    let n = batch.num_rows();
    let c = count.max(1) as usize;
    let (q, r) = (n / c, n % c);
    let mut out = Vec::with_capacity(c);
    let mut at = 0;
    for i in 0..c {
        let len = q + usize::from(i < r);
        if len == 0 {
            continue;
        }
        out.push(Piece {
            shard: i as u32,
            batch: batch.slice(at, len),
            rows: (at as u32..(at + len) as u32).collect(),
        });
        at += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn a_key_and_its_column_value_go_to_the_same_shard() {
        let a = Int64Array::from(vec![1, -7, 1 << 40, 0]);
        let ids = shards_of(&a, 16).unwrap();
        for (i, v) in a.values().iter().enumerate() {
            assert_eq!(ids[i], shard_of_key(&encode_i64(*v), 16));
        }
        let s = StringArray::from(vec!["a", "bb", ""]);
        let ids = shards_of(&s, 7).unwrap();
        assert_eq!(ids[1], shard_of_key(b"bb", 7));
    }

    #[test]
    fn shards_are_balanced_and_in_range() {
        let keys: Vec<i64> = (0..70_000).collect();
        let ids = shards_of(&Int64Array::from(keys), 7).unwrap();
        let mut counts = [0u32; 7];
        for s in ids {
            counts[s as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn the_shard_function_is_fixed() {
        // Part of the format: changing it moves rows of existing tables.
        let got: Vec<u32> = (0..8i64)
            .map(|v| shard_of_key(&encode_i64(v), 16))
            .collect();
        assert_eq!(got, FIXED);
    }
    const FIXED: [u32; 8] = [0, 11, 1, 0, 1, 5, 0, 8];

    #[test]
    fn split_keeps_rows_in_order_per_shard() {
        let col: ArrayRef = Arc::new(Int64Array::from(vec![10, 11, 12, 13, 14]));
        let b = RecordBatch::try_from_iter([("x", col)]).unwrap();
        let pieces = split(&b, &[1, 0, 1, 1, 0], 3).unwrap();
        assert_eq!(pieces.len(), 2);
        assert_eq!((pieces[0].shard, pieces[0].rows.clone()), (0, vec![1, 4]));
        assert_eq!(
            (pieces[1].shard, pieces[1].rows.clone()),
            (1, vec![0, 2, 3])
        );
        let v = pieces[1].batch.column(0).as_primitive::<Int64Type>();
        assert_eq!(v.values().to_vec(), vec![10, 12, 13]);
        let whole = split(&b, &[2; 5], 3).unwrap();
        assert_eq!((whole.len(), whole[0].shard), (1, 2));
    }

    #[test]
    fn dealing_slices_gives_every_class_its_share() {
        let col: ArrayRef = Arc::new(Int64Array::from((0..10).collect::<Vec<i64>>()));
        let b = RecordBatch::try_from_iter([("x", col)]).unwrap();
        let pieces = deal(&b, 4);
        let sizes: Vec<(u32, usize)> = pieces
            .iter()
            .map(|p| (p.shard, p.batch.num_rows()))
            .collect();
        assert_eq!(sizes, vec![(0, 3), (1, 3), (2, 2), (3, 2)]);
        assert_eq!(pieces[2].rows, vec![6, 7]);
        let few = deal(&b.slice(0, 2), 4);
        assert_eq!(few.len(), 2);
    }

    #[test]
    fn nulls_go_to_shard_zero() {
        let a = Int64Array::from(vec![Some(5), None]);
        assert_eq!(shards_of(&a, 8).unwrap()[1], 0);
    }
}
