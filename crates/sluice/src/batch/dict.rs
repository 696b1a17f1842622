//! Dictionary encoding of low-cardinality TEXT columns.
//!
//! Parse workers encode each TEXT column of a batch whose values repeat
//! (at most [`BATCH_DICT_MAX`] distinct, at most a quarter of the rows) as
//! `Dictionary(UInt16, Utf8)` with a batch-local dictionary. The segment
//! writer merges those into one dictionary per column and segment (growing
//! only by appending, so the IPC file stores it as a first dictionary batch
//! and deltas), and falls back to plain `Utf8` when a column outgrows
//! [`SEGMENT_DICT_MAX`] values. Readers see the column either way; the
//! query engine groups by dictionary codes directly and decodes everywhere
//! else.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt16Type;
use arrow_array::{
    Array, ArrayRef, DictionaryArray, RecordBatch, RecordBatchOptions, StringArray, UInt16Array,
};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType as A, Field, Schema as ArrowSchema};

use crate::error::{Error, Result};

/// Distinct values up to which a batch's TEXT column is encoded.
pub const BATCH_DICT_MAX: usize = 1024;
/// Distinct values up to which a segment keeps a column encoded.
pub const SEGMENT_DICT_MAX: usize = 4096;
/// Batches smaller than this stay plain (nothing to gain).
const MIN_ROWS: usize = 64;

type Map<K> = HashMap<K, u16, foldhash::fast::FixedState>;

/// The physical type of an encoded TEXT column.
pub fn dict_type() -> A {
    A::Dictionary(Box::new(A::UInt16), Box::new(A::Utf8))
}

/// Values collected into a dictionary: bytes and offsets.
#[derive(Default, Clone)]
struct Values {
    data: Vec<u8>,
    offsets: Vec<i32>,
}

impl Values {
    fn push(&mut self, v: &[u8]) -> Result<()> {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.data.extend_from_slice(v);
        let end = i32::try_from(self.data.len())
            .map_err(|_| Error::Internal("dictionary over 2 GiB".into()))?;
        self.offsets.push(end);
        Ok(())
    }

    fn array(&self) -> StringArray {
        let offsets = if self.offsets.is_empty() {
            vec![0]
        } else {
            self.offsets.clone()
        };
        // The values were valid UTF-8 strings when they were pushed.
        StringArray::new(
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            Buffer::from(self.data.clone()),
            None,
        )
    }
}

/// Encodes a TEXT column whose values repeat; `None` when it has too many
/// distinct values (or too few rows) to gain from it.
pub fn try_encode(a: &StringArray) -> Option<DictionaryArray<UInt16Type>> {
    try_encode_with(a, false)
}

/// [`try_encode`]; with `always`, any column of at most
/// [`BATCH_DICT_MAX`] distinct values is encoded, however few rows it has
/// (the loader's `dictionary_always`, for tests).
pub fn try_encode_with(a: &StringArray, always: bool) -> Option<DictionaryArray<UInt16Type>> {
    let rows = a.len();
    if rows < MIN_ROWS && !always {
        return None;
    }
    let limit = if always {
        BATCH_DICT_MAX
    } else {
        BATCH_DICT_MAX.min(rows / 4)
    };
    // Values of up to 15 bytes are keyed by one integer (their bytes and
    // length), hashed and compared as such; longer ones by their bytes.
    // Codes count distinct values in order of first appearance either way.
    let mut short: Map<u128> = Map::default();
    let mut long: Map<&[u8]> = Map::default();
    let mut values = Values::default();
    let mut keys = Vec::with_capacity(rows);
    let offsets = a.value_offsets();
    let data = a.value_data();
    let mut distinct = 0usize;
    for r in 0..rows {
        let (from, to) = (offsets[r] as usize, offsets[r + 1] as usize);
        let v = &data[from..to];
        let before = distinct;
        let k = match short_key(data, from, v) {
            Some(key) => *short.entry(key).or_insert_with(|| {
                distinct += 1;
                before as u16
            }),
            None => *long.entry(v).or_insert_with(|| {
                distinct += 1;
                before as u16
            }),
        };
        if distinct > before {
            if distinct > limit {
                return None;
            }
            values.push(v).ok()?;
        }
        keys.push(k);
    }
    let keys = UInt16Array::new(ScalarBuffer::from(keys), a.nulls().cloned());
    let values = Arc::new(values.array());
    debug_assert!(keys.values().iter().all(|&k| (k as usize) < values.len()));
    // SAFETY: every key is the code of a value pushed to `values` when it
    // was first seen (codes count the distinct values from 0), NULL
    // slots included (their empty value has a code too). Validating them
    // again took ~1 % of a lineitem load.
    Some(unsafe { DictionaryArray::new_unchecked(keys, values) })
}

/// A value `v` (which is `data[from..]`'s first bytes) of at most 15
/// bytes as one integer: its bytes, then zeros, its length in the top
/// byte; `None` for a longer one.
#[inline]
fn short_key(data: &[u8], from: usize, v: &[u8]) -> Option<u128> {
    if v.len() > 15 {
        return None;
    }
    let bytes = match data.get(from..from + 16) {
        // Sixteen bytes at once, the ones past the value masked off.
        Some(b) => {
            let all = u128::from_le_bytes(b.try_into().ok()?);
            all & ((1u128 << (8 * v.len())) - 1)
        }
        None => {
            let mut b = [0u8; 16];
            b[..v.len()].copy_from_slice(v);
            u128::from_le_bytes(b)
        }
    };
    Some(bytes | (v.len() as u128) << 120)
}

/// Encodes every TEXT column of `batch` that gains from it.
pub fn encode_batch(batch: RecordBatch) -> Result<RecordBatch> {
    encode_batch_where(batch, None, false)
}

/// For each column of `batch`: whether it is TEXT that gains from
/// encoding. A batch cut into pieces asks this once for the whole batch,
/// then tries only those columns on each piece: a column of unique values
/// costs [`BATCH_DICT_MAX`] hash inserts before it is given up, once a
/// piece, which would make eight pieces cost eight times one batch.
pub fn text_gains(batch: &RecordBatch, always: bool) -> Vec<bool> {
    batch
        .columns()
        .iter()
        .map(|c| {
            c.data_type() == &A::Utf8 && try_encode_with(c.as_string::<i32>(), always).is_some()
        })
        .collect()
}

/// [`encode_batch`], trying only the columns `only` marks (all when
/// `None`); `always` as for [`try_encode_with`].
pub fn encode_batch_where(
    batch: RecordBatch,
    only: Option<&[bool]>,
    always: bool,
) -> Result<RecordBatch> {
    let mut changed = false;
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(batch.num_columns());
    for (i, c) in batch.columns().iter().enumerate() {
        if only.is_some_and(|o| !o.get(i).copied().unwrap_or(false)) {
            cols.push(c.clone());
            continue;
        }
        match c.data_type() {
            A::Utf8 => match try_encode_with(c.as_string::<i32>(), always) {
                Some(d) => {
                    changed = true;
                    cols.push(Arc::new(d));
                }
                None => cols.push(c.clone()),
            },
            _ => cols.push(c.clone()),
        }
    }
    if !changed {
        return Ok(batch);
    }
    with_columns(&batch, cols)
}

/// `batch` with its columns replaced (types taken from the new columns).
fn with_columns(batch: &RecordBatch, cols: Vec<ArrayRef>) -> Result<RecordBatch> {
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .zip(&cols)
        .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), f.is_nullable()))
        .collect();
    Ok(RecordBatch::try_new_with_options(
        Arc::new(ArrowSchema::new(fields)),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}

/// A dictionary column as plain TEXT; other columns unchanged.
pub fn decode(a: &ArrayRef) -> Result<ArrayRef> {
    match a.data_type() {
        A::Dictionary(..) => {
            let d = a
                .as_dictionary_opt::<UInt16Type>()
                .ok_or_else(|| Error::Internal(format!("dictionary of {}", a.data_type())))?;
            arrow_select::take::take(d.values().as_ref(), d.keys(), None)
                .map_err(|e| Error::Internal(format!("decoding a dictionary: {e}")))
        }
        _ => Ok(a.clone()),
    }
}

/// Decodes every dictionary column of `batch` except where `keep[c]`.
pub fn decode_batch(batch: &RecordBatch, keep: &[bool]) -> Result<RecordBatch> {
    let any = batch.columns().iter().enumerate().any(|(c, a)| {
        matches!(a.data_type(), A::Dictionary(..)) && !keep.get(c).copied().unwrap_or(false)
    });
    if !any {
        return Ok(batch.clone());
    }
    let cols = batch
        .columns()
        .iter()
        .enumerate()
        .map(|(c, a)| {
            if keep.get(c).copied().unwrap_or(false) {
                Ok(a.clone())
            } else {
                decode(a)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    with_columns(batch, cols)
}

/// One column's dictionary in the segment being written.
#[derive(Default)]
pub struct SegmentDict {
    map: Map<Box<[u8]>>,
    values: Values,
}

impl SegmentDict {
    fn code(&mut self, v: &[u8]) -> Option<u16> {
        if let Some(&k) = self.map.get(v) {
            return Some(k);
        }
        if self.map.len() >= SEGMENT_DICT_MAX {
            return None;
        }
        let k = self.map.len() as u16;
        self.values.push(v).ok()?;
        self.map.insert(v.into(), k);
        Some(k)
    }

    /// Re-encodes a TEXT column (plain or batch-encoded) against this
    /// dictionary; `None` when that would take it past
    /// [`SEGMENT_DICT_MAX`] values (the segment must then be closed).
    pub fn encode(&mut self, a: &ArrayRef) -> Option<ArrayRef> {
        let keys: Vec<u16> = match a.data_type() {
            A::Dictionary(..) => {
                let d = a.as_dictionary_opt::<UInt16Type>()?;
                let local = d.values().as_string_opt::<i32>()?;
                let mut map = Vec::with_capacity(local.len());
                for i in 0..local.len() {
                    map.push(self.code(local.value(i).as_bytes())?);
                }
                d.keys()
                    .values()
                    .iter()
                    .map(|&k| map.get(k as usize).copied().unwrap_or(0))
                    .collect()
            }
            A::Utf8 => {
                let s = a.as_string::<i32>();
                let mut keys = Vec::with_capacity(s.len());
                for r in 0..s.len() {
                    keys.push(if s.is_null(r) {
                        0
                    } else {
                        self.code(s.value(r).as_bytes())?
                    });
                }
                keys
            }
            _ => return None,
        };
        let nulls = a.logical_nulls();
        let keys = UInt16Array::new(ScalarBuffer::from(keys), nulls);
        // Keys of NULL slots may be anything: point them at entry 0, and
        // give an all-NULL column one (empty) entry for them to point at.
        if self.values.offsets.is_empty() {
            self.values.push(b"").ok()?;
            self.map.insert(Box::from(&b""[..]), 0);
        }
        let values = Arc::new(self.values.array());
        debug_assert!(keys.values().iter().all(|&k| (k as usize) < values.len()));
        // SAFETY: every key is a code `self.code` returned (the position
        // of a value in `self.values`) or 0 for a NULL slot or a local
        // key without an entry, and `self.values` holds at least one
        // value (the empty one pushed above).
        let d = unsafe { DictionaryArray::new_unchecked(keys, values) };
        Some(Arc::new(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[Option<&str>]) -> StringArray {
        v.iter().copied().collect()
    }

    fn plain(a: &ArrayRef) -> Vec<Option<String>> {
        let d = decode(a).unwrap();
        let s = d.as_string::<i32>();
        (0..s.len())
            .map(|i| s.is_valid(i).then(|| s.value(i).to_string()))
            .collect()
    }

    #[test]
    fn repeating_text_is_encoded_and_decodes_to_the_same_values() {
        let vals: Vec<Option<&str>> = (0..200)
            .map(|i| match i % 5 {
                0 => None,
                1 => Some(""),
                2 => Some("N"),
                3 => Some("éé"),
                _ => Some("R"),
            })
            .collect();
        let a = strings(&vals);
        let d = try_encode(&a).expect("4 distinct values in 200 rows");
        assert!(d.values().len() <= 5, "{}", d.values().len());
        let d: ArrayRef = Arc::new(d);
        let want: Vec<Option<String>> = vals.iter().map(|v| v.map(String::from)).collect();
        assert_eq!(plain(&d), want);
    }

    #[test]
    fn varied_or_short_columns_stay_plain() {
        let many: Vec<String> = (0..1000).map(|i| format!("v{i}")).collect();
        let a: StringArray = many.iter().map(|s| Some(s.as_str())).collect();
        assert!(try_encode(&a).is_none());
        let few = strings(&[Some("a"); 10]);
        assert!(try_encode(&few).is_none(), "under {MIN_ROWS} rows");
    }

    #[test]
    fn only_the_columns_that_gain_on_the_whole_batch_are_tried() {
        let rep: Vec<Option<&str>> = (0..400).map(|i| Some(["a", "b"][i % 2])).collect();
        let uniq: Vec<String> = (0..400).map(|i| format!("u{i}")).collect();
        let batch = RecordBatch::try_new(
            Arc::new(ArrowSchema::new(vec![
                Field::new("rep", A::Utf8, true),
                Field::new("uniq", A::Utf8, true),
                Field::new("n", A::Int32, true),
            ])),
            vec![
                Arc::new(strings(&rep)),
                Arc::new(
                    uniq.iter()
                        .map(|s| Some(s.as_str()))
                        .collect::<StringArray>(),
                ),
                Arc::new(arrow_array::Int32Array::from_iter_values(0..400)),
            ],
        )
        .unwrap();
        let gains = text_gains(&batch, false);
        assert_eq!(gains, vec![true, false, false]);
        // On a piece, the mask decides: the repeating column is encoded,
        // the others stay as they are.
        let piece = batch.slice(0, 100);
        let out = encode_batch_where(piece.clone(), Some(&gains), false).unwrap();
        assert!(matches!(out.column(0).data_type(), A::Dictionary(..)));
        assert_eq!(out.column(1).data_type(), &A::Utf8);
        assert_eq!(plain(out.column(0)), plain(&(piece.column(0).clone())));
        // A mask that marks nothing leaves every column plain.
        let none = encode_batch_where(piece, Some(&[false, false, false]), false).unwrap();
        assert_eq!(none.column(0).data_type(), &A::Utf8);
    }

    #[test]
    fn a_segment_dictionary_merges_batches_and_refuses_to_overflow() {
        let mut seg = SegmentDict::default();
        let b1: ArrayRef = Arc::new(
            try_encode(&strings(
                &[Some("x"), Some("y"), None, Some("x")].repeat(20),
            ))
            .unwrap(),
        );
        let b2: ArrayRef = Arc::new(strings(&[Some("z"), Some("x"), None]));
        let e1 = seg.encode(&b1).unwrap();
        let e2 = seg.encode(&b2).unwrap();
        assert_eq!(plain(&e1), plain(&b1));
        assert_eq!(plain(&e2), vec![Some("z".into()), Some("x".into()), None]);
        // One dictionary for both: the second extends the first.
        let v1 = e1.as_dictionary::<UInt16Type>().values().clone();
        let v2 = e2.as_dictionary::<UInt16Type>().values().clone();
        assert_eq!(v2.slice(0, v1.len()).to_data(), v1.to_data());
        // Past SEGMENT_DICT_MAX values: refused.
        let many: Vec<String> = (0..SEGMENT_DICT_MAX).map(|i| format!("v{i}")).collect();
        let big: ArrayRef = Arc::new(
            many.iter()
                .map(|s| Some(s.as_str()))
                .collect::<StringArray>(),
        );
        assert!(seg.encode(&big).is_none());
    }

    /// The encoding by the bytes of every value, as it was before short
    /// values were keyed by integers: the reference.
    fn encode_by_bytes(a: &StringArray, limit: usize) -> Option<(Vec<u16>, Vec<Vec<u8>>)> {
        let mut map: HashMap<&[u8], u16> = HashMap::new();
        let mut values = Vec::new();
        let mut keys = Vec::new();
        for r in 0..a.len() {
            let v =
                &a.value_data()[a.value_offsets()[r] as usize..a.value_offsets()[r + 1] as usize];
            let n = map.len() as u16;
            let k = *map.entry(v).or_insert(n);
            if map.len() > values.len() {
                if map.len() > limit {
                    return None;
                }
                values.push(v.to_vec());
            }
            keys.push(k);
        }
        Some((keys, values))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 500, ..Default::default() })]

        /// Values of every length around the 15-byte edge, repeating,
        /// NULLs among them, the array a slice of a longer one (values
        /// not at the buffer's start): the same codes and dictionary as
        /// keyed by their bytes.
        #[test]
        fn short_values_keyed_by_integers_encode_as_by_bytes(
            picks in proptest::collection::vec((0usize..12, proptest::prelude::any::<bool>()), 67..400),
            offset in 0usize..3,
        ) {
            // Lengths 0 to 17; two of 15 bytes that differ in the last.
            let pool = [
                "", "a", "ab", "abcdefg", "abcdefgh", "abcdefghijklmn", "abcdefghijklmno",
                "abcdefghijklmnX", "abcdefghijklmnop", "abcdefghijklmnopq", "abc", "zzzzzzzzzzzzzzz",
            ];
            let full: StringArray = picks
                .iter()
                .map(|&(i, null)| (!null || i % 3 != 0).then_some(pool[i]))
                .collect();
            let a = full.slice(offset, full.len() - offset);
            let want = encode_by_bytes(&a, BATCH_DICT_MAX.min(a.len() / 4));
            let got = try_encode_with(&a, false);
            match (got, want) {
                (None, None) => {}
                (Some(d), Some((keys, values))) => {
                    let got_keys: Vec<u16> = d.keys().values().to_vec();
                    proptest::prop_assert_eq!(got_keys, keys);
                    let dv = d.values().as_string::<i32>();
                    let got_values: Vec<Vec<u8>> = (0..dv.len()).map(|i| dv.value(i).as_bytes().to_vec()).collect();
                    proptest::prop_assert_eq!(got_values, values);
                    proptest::prop_assert_eq!(d.keys().nulls(), a.nulls());
                }
                (g, w) => proptest::prop_assert!(false, "encoded: {}, by bytes: {}", g.is_some(), w.is_some()),
            }
        }
    }

    #[test]
    fn all_null_columns_encode() {
        let mut seg = SegmentDict::default();
        let a: ArrayRef = Arc::new(strings(&[None, None]));
        let e = seg.encode(&a).unwrap();
        assert_eq!(plain(&e), vec![None, None]);
    }
}
