//! A split-block Bloom filter of integer keys: a runtime filter's keys
//! when their exact set does not fit the memory limit.
//!
//! A join's runtime filter ([`super::join`]'s `runtime_filter`) makes a
//! table read only the keys of a smaller item already read. Its exact
//! set costs about 24 bytes a key; under a small `--memory-limit` it did
//! not fit, the table was read whole, and every row went to disk twice
//! (as the item's rows, then by partitions): TPC-H Q3 at a tenth of its
//! peak wrote 300 MiB for 30 K joined rows. This filter costs about 1.25
//! bytes a key (10 bits) and keeps a row of a key not among them about
//! once in a hundred; the join still checks every key, so a row it keeps
//! wrongly costs time, never an answer.
//!
//! The layout is the one Parquet's and Impala's Bloom filters use: blocks
//! of 256 bits (eight 32-bit words); a key's hash picks a block by its
//! high 32 bits and, by its low 32 bits times eight odd constants, one bit
//! in each word. A key costs one cache line to set and to test.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_buffer::BooleanBuffer;
use arrow_schema::DataType as A;

/// The odd constants that place a key's eight bits, one a word.
const SALT: [u32; 8] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
];

/// The bits a key takes where memory allows (about 1 % of the other keys
/// pass).
pub const BITS_PER_KEY: u64 = 10;

/// The least bits a key takes: fewer, and the filter keeps so many rows
/// that reading the table whole costs about the same.
pub const MIN_BITS_PER_KEY: u64 = 4;

/// Bloom filter of the keys of a runtime filter (see the module).
pub struct BloomFilter {
    blocks: Vec<[u32; 8]>,
    /// The key type it was made for; a column of another type is not
    /// tested (every row passes).
    ty: A,
    keys: usize,
}

impl std::fmt::Debug for BloomFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BloomFilter({} keys, {} bytes)", self.keys, self.bytes())
    }
}

/// A 64-bit hash of an integer key (a multiply and xor-shift finisher:
/// keys in sequence spread over every block).
fn hash(v: i64) -> u64 {
    let mut x = v as u64;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Whether a filter of keys of type `t` can be made.
pub fn holds(t: &A) -> bool {
    t.is_integer() || *t == A::Date32
}

/// The bytes a filter of `keys` keys at `bits` bits a key takes (whole
/// blocks, at least one).
pub fn bytes_for(keys: usize, bits: u64) -> u64 {
    let bits = (keys as u64).saturating_mul(bits).max(256);
    bits.div_ceil(256) * 32
}

impl BloomFilter {
    /// A filter of the non-NULL values of `values` (integers or dates),
    /// `bytes` long (rounded up to whole blocks); `None` for other types.
    pub fn of_values(values: &ArrayRef, bytes: u64) -> Option<BloomFilter> {
        if !holds(values.data_type()) {
            return None;
        }
        let v = super::expr::ints_of(values.as_ref())?;
        let n = (bytes.div_ceil(32).max(1)) as usize;
        let mut f = BloomFilter {
            blocks: vec![[0u32; 8]; n],
            ty: values.data_type().clone(),
            keys: 0,
        };
        for (i, &x) in v.iter().enumerate() {
            if values.is_valid(i) {
                f.insert(hash(x as i64));
                f.keys += 1;
            }
        }
        Some(f)
    }

    fn block(&self, h: u64) -> usize {
        (((h >> 32) * self.blocks.len() as u64) >> 32) as usize
    }

    fn insert(&mut self, h: u64) {
        let b = self.block(h);
        let lo = h as u32;
        let block = &mut self.blocks[b];
        for (w, s) in block.iter_mut().zip(SALT) {
            *w |= 1 << (lo.wrapping_mul(s) >> 27);
        }
    }

    fn contains(&self, h: u64) -> bool {
        let block = &self.blocks[self.block(h)];
        let lo = h as u32;
        block
            .iter()
            .zip(SALT)
            .all(|(w, s)| w & (1 << (lo.wrapping_mul(s) >> 27)) != 0)
    }

    /// The bytes it holds.
    pub fn bytes(&self) -> u64 {
        self.blocks.len() as u64 * 32
    }

    /// The keys it was made of.
    pub fn keys(&self) -> usize {
        self.keys
    }

    /// For each value of `x`: false when it is surely not among the keys,
    /// true when it may be, NULL for NULL (as `x IN (…)` is). A column of
    /// another type than the keys' passes every row (the join decides).
    pub fn probe(&self, x: &dyn Array) -> BooleanArray {
        let n = x.len();
        let values = match (x.data_type() == &self.ty)
            .then(|| super::expr::ints_of(x))
            .flatten()
        {
            Some(v) => BooleanBuffer::collect_bool(n, |i| self.contains(hash(v[i] as i64))),
            None => BooleanBuffer::new_set(n),
        };
        BooleanArray::new(values, x.logical_nulls())
    }
}

/// A filter shared by the plan's clones.
pub type Shared = Arc<BloomFilter>;

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Date32Array, Int32Array, Int64Array};

    #[test]
    fn every_key_is_found_and_few_others_are() {
        let keys: Vec<i64> = (0..50_000).map(|i| i * 7 + 3).collect();
        let values: ArrayRef = Arc::new(Int64Array::from(keys.clone()));
        let f = BloomFilter::of_values(&values, bytes_for(keys.len(), BITS_PER_KEY)).unwrap();
        assert_eq!(f.keys(), 50_000);
        let hit = f.probe(&Int64Array::from(keys));
        assert_eq!(hit.true_count(), 50_000, "a key missed");
        // Keys never inserted (not ≡ 3 mod 7): about 1 % pass at 10
        // bits a key; 3 % is far past that.
        let others: Vec<i64> = (0..350_000).filter(|i| i % 7 != 3).collect();
        let n = others.len();
        let passed = f.probe(&Int64Array::from(others)).true_count();
        assert!(passed * 100 < n * 3, "{passed} of {n} passed");
        assert!(passed > 0, "a Bloom filter this small keeps some others");
    }

    #[test]
    fn nulls_stay_null_and_other_types_pass() {
        let values: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(5)]));
        let f = BloomFilter::of_values(&values, 64).unwrap();
        assert_eq!(f.keys(), 2);
        let got = f.probe(&Int32Array::from(vec![Some(1), None, Some(5)]));
        assert!(got.value(0) && got.is_null(1) && got.value(2));
        // A column of another type than the keys': every row passes.
        let got = f.probe(&Int64Array::from(vec![100, 200]));
        assert_eq!(got.true_count(), 2);
        // Dates hash as their day numbers.
        let days: ArrayRef = Arc::new(Date32Array::from(vec![19000, 19001]));
        let f = BloomFilter::of_values(&days, 32).unwrap();
        assert_eq!(
            f.probe(&Date32Array::from(vec![19000, 19001])).true_count(),
            2
        );
        // Text makes none.
        let text: ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["a"]));
        assert!(BloomFilter::of_values(&text, 32).is_none());
    }

    #[test]
    fn sizes_are_whole_blocks() {
        assert_eq!(bytes_for(0, BITS_PER_KEY), 32);
        assert_eq!(bytes_for(1000, BITS_PER_KEY), 1280);
        assert_eq!(bytes_for(1001, 8), 1024);
    }
}
