//! The set of values behind `COUNT(DISTINCT int_col)`.
//!
//! Keys, ids and codes are mostly dense: their values fill a range not
//! much wider than their number. Such a set is a bitmap over that range
//! (one bit a value: `count(DISTINCT l_suppkey)` over 60 M rows sets bits
//! in a 12.5 KB bitmap instead of hashing each value into a 100,000-entry
//! table). While the values seen are too spread out for a bitmap to be
//! small (more than 4 words, 256 bits, per value seen, past the first 16
//! words, or 16 MiB in all), the set is a hash set, as before; a hash set
//! whose values turn out dense (checked as it doubles) becomes a bitmap.
//! Either way a set takes at most about twice the memory of a hash set of
//! its values, whatever the number of groups.

use foldhash::HashSet;

/// Words a bitmap may have whatever the count (128 bytes).
const FREE_WORDS: u128 = 16;
/// Words a bitmap may have per distinct value seen.
const WORDS_PER_VALUE: u128 = 4;
/// Words a bitmap never exceeds (16 MiB).
const MAX_WORDS: u128 = 1 << 21;
/// Words a set only probed may have as a bitmap (8 MiB: a span of 64 M
/// values).
pub const PROBE_WORDS: usize = 1 << 20;

#[derive(Debug, Clone)]
pub enum IntSet {
    /// Value `base + 64 * w + b` is in the set when bit b of word w is
    /// set; `base` is a multiple of 64.
    Dense {
        base: i128,
        words: Vec<u64>,
        count: usize,
    },
    /// The values, and the smallest and largest of them.
    Sparse(HashSet<i128>, i128, i128),
}

impl Default for IntSet {
    fn default() -> Self {
        IntSet::Dense {
            base: 0,
            words: Vec::new(),
            count: 0,
        }
    }
}

fn floor64(x: i128) -> i128 {
    x.div_euclid(64) * 64
}

impl IntSet {
    pub fn len(&self) -> usize {
        match self {
            IntSet::Dense { count, .. } => *count,
            IntSet::Sparse(s, ..) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `x` is in the set: one bit while it is a bitmap.
    #[inline]
    pub fn contains(&self, x: i128) -> bool {
        match self {
            IntSet::Dense { base, words, .. } => match x.checked_sub(*base) {
                Some(off) if off >= 0 && off < (words.len() as i128) * 64 => {
                    words[(off / 64) as usize] & (1u64 << (off % 64)) != 0
                }
                _ => false,
            },
            IntSet::Sparse(s, lo, hi) => x >= *lo && x <= *hi && s.contains(&x),
        }
    }

    /// A set only probed from now on (an IN list, a runtime filter)
    /// becomes a bitmap when its values span at most [`PROBE_WORDS`]
    /// words, however few they are: a bit test a row instead of a hash,
    /// for a memory cost known in advance.
    pub fn for_probes(&mut self) {
        let IntSet::Sparse(values, lo, hi) = self else {
            return;
        };
        if values.is_empty() {
            return;
        }
        let base = floor64(*lo);
        let Some(words) = hi.checked_sub(base).map(|s| s / 64 + 1) else {
            return;
        };
        if words > PROBE_WORDS as i128 {
            return;
        }
        let mut bits = vec![0u64; words as usize];
        for &v in values.iter() {
            let off = (v - base) as usize;
            bits[off / 64] |= 1 << (off % 64);
        }
        *self = IntSet::Dense {
            base,
            count: values.len(),
            words: bits,
        };
    }

    /// Whether each of `values` is in the set, as bits, when the set is
    /// a bitmap inside the 64-bit integers: a compare and a bit test a
    /// value, 64 values a word. `None` otherwise (test each value).
    pub fn contains_each<T: Copy + Into<i64>>(
        &self,
        values: &[T],
    ) -> Option<arrow_buffer::BooleanBuffer> {
        let IntSet::Dense { base, words, .. } = self else {
            return None;
        };
        let lo = i64::try_from(*base).ok()?;
        let bits = i64::try_from(words.len()).ok()?.checked_mul(64)?;
        // The last value the bitmap holds, inside i64 (none if empty).
        let hi = lo.checked_add(bits)?.checked_sub(1)?;
        Some(arrow_buffer::BooleanBuffer::collect_bool(
            values.len(),
            |i| {
                let v: i64 = values[i].into();
                if v < lo || v > hi {
                    return false;
                }
                let off = (v - lo) as u64;
                words[(off >> 6) as usize] >> (off & 63) & 1 != 0
            },
        ))
    }

    #[inline]
    pub fn insert(&mut self, x: i128) {
        if let IntSet::Dense { base, words, count } = self {
            // In the window: one bit.
            if let Some(off) = x.checked_sub(*base)
                && off >= 0
                && off < (words.len() as i128) * 64
            {
                let (w, b) = ((off / 64) as usize, off % 64);
                let bit = 1u64 << b;
                *count += usize::from(words[w] & bit == 0);
                words[w] |= bit;
                return;
            }
            if !self.widen(x) {
                self.make_sparse();
            }
            return self.insert(x);
        }
        if let IntSet::Sparse(s, lo, hi) = self
            && s.insert(x)
        {
            *lo = x.min(*lo);
            *hi = x.max(*hi);
            let n = s.len();
            // Dense after all: a bitmap (checked as the set doubles).
            if n >= 64
                && n.is_power_of_two()
                && let Some(span) = hi.checked_sub(floor64(*lo))
                && span / 64 < WORDS_PER_VALUE as i128 * n as i128
                && span / 64 < MAX_WORDS as i128
            {
                let values = std::mem::take(s);
                let mut dense = IntSet::Dense {
                    base: floor64(*lo),
                    words: vec![0; (span / 64 + 1) as usize],
                    count: 0,
                };
                values.into_iter().for_each(|x| dense.insert(x));
                *self = dense;
            }
        }
    }

    /// Inserts every value of `xs`: while the set is a bitmap, a tight
    /// loop of one subtraction and one bit a value.
    pub fn insert_i64s(&mut self, xs: &[i64]) {
        let mut i = 0;
        while i < xs.len() {
            if let IntSet::Dense { base, words, count } = self
                && let Ok(b) = i64::try_from(*base)
            {
                let span = words.len() as u64 * 64;
                let mut added = 0usize;
                while let Some(&x) = xs.get(i) {
                    // x - b as an unsigned offset: exact when x >= b (the
                    // difference is below 2^64); x < b wraps to at least
                    // 2^63, past any window.
                    let off = x.wrapping_sub(b) as u64;
                    if off >= span {
                        break;
                    }
                    let (w, bit) = ((off >> 6) as usize, 1u64 << (off & 63));
                    added += usize::from(words[w] & bit == 0);
                    words[w] |= bit;
                    i += 1;
                }
                *count += added;
            }
            if let Some(&x) = xs.get(i) {
                self.insert(x as i128);
                i += 1;
            }
        }
    }

    /// Grows a dense set's window to hold `x` (doubling, so that values
    /// arriving in order cost amortised O(1)); false when the window
    /// would be too wide for the values seen.
    fn widen(&mut self, x: i128) -> bool {
        let IntSet::Dense { base, words, count } = self else {
            return false;
        };
        let fx = floor64(x);
        let Some(fx_end) = fx.checked_add(64) else {
            return false;
        };
        let (lo, hi) = if words.is_empty() {
            (fx, fx_end)
        } else {
            let end = *base + words.len() as i128 * 64;
            (fx.min(*base), end.max(fx_end))
        };
        let Some(need) = hi.checked_sub(lo).map(|s| (s / 64) as u128) else {
            return false;
        };
        let limit = MAX_WORDS.min(FREE_WORDS.max(WORDS_PER_VALUE * (*count as u128 + 1)));
        if need > limit {
            return false;
        }
        // Room to grow the same way again (doubling, so that values
        // arriving in order cost amortised O(1)), within the limit.
        let old = words.len() as u128;
        let grown = need.max(2 * old).min(limit).max(need);
        let extra = (grown - need) as i128 * 64;
        let new_base = if words.is_empty() || x >= *base {
            if lo.checked_add(grown as i128 * 64).is_none() {
                // No room above: no slack.
                return self.place(lo, need);
            }
            lo
        } else {
            lo.saturating_sub(extra)
        };
        self.place(new_base, grown)
    }

    /// Moves a dense set's words to a window of `len` words from
    /// `new_base` (which must hold every value of the old window).
    fn place(&mut self, new_base: i128, len: u128) -> bool {
        let IntSet::Dense { base, words, .. } = self else {
            return false;
        };
        let mut out = vec![0u64; len as usize];
        if !words.is_empty() {
            let shift = ((*base - new_base) / 64) as usize;
            out[shift..shift + words.len()].copy_from_slice(words);
        }
        *base = new_base;
        *words = out;
        true
    }

    fn make_sparse(&mut self) {
        if let IntSet::Dense { .. } = self {
            let values: HashSet<i128> = self.iter().collect();
            let lo = values.iter().copied().min().unwrap_or(i128::MAX);
            let hi = values.iter().copied().max().unwrap_or(i128::MIN);
            *self = IntSet::Sparse(values, lo, hi);
        }
    }

    /// The values, in no particular order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = i128> + '_> {
        match self {
            IntSet::Dense { base, words, .. } => {
                let base = *base;
                Box::new(words.iter().enumerate().flat_map(move |(w, &word)| {
                    let mut bits = word;
                    std::iter::from_fn(move || {
                        if bits == 0 {
                            return None;
                        }
                        let b = bits.trailing_zeros();
                        bits &= bits - 1;
                        Some(base + w as i128 * 64 + b as i128)
                    })
                }))
            }
            IntSet::Sparse(s, ..) => Box::new(s.iter().copied()),
        }
    }

    /// Adds every value of `other`.
    pub fn extend(&mut self, other: IntSet) {
        match (&mut *self, &other) {
            // Same window: OR the words.
            (
                IntSet::Dense { base, words, count },
                IntSet::Dense {
                    base: b2,
                    words: w2,
                    ..
                },
            ) if base == b2 && words.len() == w2.len() => {
                for (a, b) in words.iter_mut().zip(w2) {
                    *a |= b;
                }
                *count = words.iter().map(|w| w.count_ones() as usize).sum();
            }
            _ => {
                if other.len() > self.len() {
                    let mine = std::mem::replace(self, other);
                    for x in mine.iter() {
                        self.insert(x);
                    }
                } else {
                    for x in other.iter() {
                        self.insert(x);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_answers_as_the_values_inserted() {
        for (values, absent) in [
            (vec![3i128, 9, 100], vec![0i128, 4, 99, 101, -3]),
            (
                (0..5000).map(|i| i * 7).collect::<Vec<_>>(),
                vec![1, 6, 35_001, -7],
            ),
            (vec![-(1i128 << 100), 5, 1 << 90], vec![0, 6, 1 << 89]),
        ] {
            let mut s = IntSet::default();
            for &v in &values {
                s.insert(v);
            }
            assert!(values.iter().all(|&v| s.contains(v)));
            assert!(absent.iter().all(|&v| !s.contains(v)), "{absent:?}");
        }
    }
    use proptest::prelude::*;

    fn check(values: &[i128]) {
        let mut s = IntSet::default();
        let mut want = std::collections::HashSet::new();
        for &x in values {
            s.insert(x);
            want.insert(x);
            assert_eq!(s.len(), want.len());
        }
        let mut got: Vec<i128> = s.iter().collect();
        got.sort_unstable();
        let mut want: Vec<i128> = want.into_iter().collect();
        want.sort_unstable();
        assert_eq!(got, want);
    }

    #[test]
    fn dense_values_stay_in_a_bitmap_and_spread_ones_go_to_a_hash_set() {
        let mut s = IntSet::default();
        for x in (0..100_000).rev() {
            s.insert(x * 2 + 1);
            s.insert(x * 2 + 1);
        }
        assert!(matches!(s, IntSet::Dense { .. }));
        assert_eq!(s.len(), 100_000);
        let mut s = IntSet::default();
        for x in 0..1000i128 {
            s.insert(x * 1_000_000_007);
        }
        assert!(matches!(s, IntSet::Sparse(..)));
        assert_eq!(s.len(), 1000);
        // Random order over a dense range: a bitmap in the end.
        let mut s = IntSet::default();
        let mut x = 7i128;
        for _ in 0..50_000 {
            x = (x * 48271) % 2_147_483_647;
            s.insert(1_000_000 + x % 100_000);
        }
        assert!(matches!(s, IntSet::Dense { .. }), "{}", s.len());
        assert_eq!(s.len(), 39304);
        check(&[i128::MAX, i128::MIN, 0, -1, 63, 64, -64, -65]);
        check(&[i64::MAX as i128, i64::MIN as i128, 5]);
    }

    #[test]
    fn sets_merge() {
        let mut a = IntSet::default();
        let mut b = IntSet::default();
        for x in 0..5000 {
            a.insert(x);
            b.insert(x + 2500);
        }
        a.extend(b);
        assert_eq!(a.len(), 7500);
        let mut c = IntSet::default();
        c.insert(1 << 90);
        a.extend(c);
        assert_eq!(a.len(), 7501);
    }

    proptest! {
        #[test]
        fn a_set_holds_exactly_the_values_inserted(
            values in prop::collection::vec(
                prop_oneof![
                    -300i128..300,
                    -100_000i128..100_000,
                    any::<i64>().prop_map(|x| x as i128),
                    any::<i128>(),
                ],
                0..400,
            ),
            split in 0usize..400,
        ) {
            check(&values);
            // The same values through the bulk path, where they fit.
            let small: Vec<i64> = values.iter().filter_map(|&x| i64::try_from(x).ok()).collect();
            let mut bulk = IntSet::default();
            bulk.insert_i64s(&small);
            let want: std::collections::HashSet<i128> = small.iter().map(|&x| x as i128).collect();
            prop_assert_eq!(bulk.len(), want.len());
            prop_assert_eq!(bulk.iter().collect::<std::collections::HashSet<i128>>(), want);
            // Two halves merged hold the same values.
            let cut = split.min(values.len());
            let mut a = IntSet::default();
            let mut b = IntSet::default();
            values[..cut].iter().for_each(|&x| a.insert(x));
            values[cut..].iter().for_each(|&x| b.insert(x));
            a.extend(b);
            let want: std::collections::HashSet<i128> = values.iter().copied().collect();
            prop_assert_eq!(a.len(), want.len());
            let got: std::collections::HashSet<i128> = a.iter().collect();
            prop_assert_eq!(got, want);
        }
    }
}
