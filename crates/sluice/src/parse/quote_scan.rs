//! The end of a quoted field: the next quote (or escape) byte, and the
//! newlines before it, in one pass 16 bytes at a time (SSE2, which every
//! x86-64 CPU has), with a byte loop elsewhere and as the reference.
//!
//! Useful for: why a quoted field costs one pass over its bytes, not a
//! `memchr` for its end and another for its newlines (two calls whose
//! setup outweighs the work on fields of a few dozen bytes).
//! Not useful for: what a quote, a doubled quote or an escape means
//! (`csv::scan_quoted`).

/// The first position at or after `from` holding `q` or `esc`, and the
/// newlines in `data[from..that]`; `None` (and the newlines of the rest)
/// when there is none.
#[inline]
pub(super) fn find_quote(data: &[u8], from: usize, q: u8, esc: Option<u8>) -> (Option<usize>, u64) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of x86-64 itself: every CPU that runs
        // this build has it.
        unsafe { find_quote_sse2(data, from, q, esc.unwrap_or(q)) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        find_quote_bytes(data, from, q, esc.unwrap_or(q))
    }
}

/// The reference: one byte at a time.
pub(super) fn find_quote_bytes(data: &[u8], from: usize, q: u8, esc: u8) -> (Option<usize>, u64) {
    let mut newlines = 0;
    for (i, &c) in data.iter().enumerate().skip(from) {
        if c == q || c == esc {
            return (Some(i), newlines);
        }
        newlines += (c == b'\n') as u64;
    }
    (None, newlines)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn find_quote_sse2(data: &[u8], from: usize, q: u8, esc: u8) -> (Option<usize>, u64) {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let n = data.len();
    let mut i = from.min(n);
    let mut newlines = 0u64;
    let (vq, ve, vn) = (
        _mm_set1_epi8(q as i8),
        _mm_set1_epi8(esc as i8),
        _mm_set1_epi8(b'\n' as i8),
    );
    while i + 16 <= n {
        // SAFETY: `i + 16 <= data.len()`: the 16 bytes read are in
        // `data`; the load is unaligned.
        let v = unsafe { _mm_loadu_si128(data.as_ptr().add(i) as *const __m128i) };
        let hits =
            _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, vq), _mm_cmpeq_epi8(v, ve))) as u32;
        let lines = _mm_movemask_epi8(_mm_cmpeq_epi8(v, vn)) as u32;
        if hits != 0 {
            let k = hits.trailing_zeros();
            newlines += (lines & ((1u32 << k) - 1)).count_ones() as u64;
            return (Some(i + k as usize), newlines);
        }
        newlines += lines.count_ones() as u64;
        i += 16;
    }
    let (at, rest) = find_quote_bytes(data, i, q, esc);
    (at, newlines + rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

        /// Any bytes, any start, with and without an escape byte: the
        /// same answer as the byte loop.
        #[test]
        fn sixteen_at_a_time_is_the_byte_loop(
            data in prop::collection::vec(
                prop_oneof![4 => b'a'..=b'z', 1 => Just(b'"'), 1 => Just(b'\n'), 1 => Just(b'\\')],
                0..100,
            ),
            from in 0usize..110,
            esc in any::<bool>(),
        ) {
            let e = if esc { Some(b'\\') } else { None };
            let want = find_quote_bytes(&data, from, b'"', e.unwrap_or(b'"'));
            prop_assert_eq!(find_quote(&data, from, b'"', e), want);
        }
    }

    #[test]
    fn counts_newlines_before_the_quote_only() {
        let d = b"ab\ncd\n\nxxxxxxxxxxxxxxxxxxxxxxx\n\"\n\n";
        assert_eq!(find_quote(d, 0, b'"', None), (Some(31), 4));
        assert_eq!(find_quote(d, 32, b'"', None), (None, 2));
        assert_eq!(find_quote(d, 100, b'"', None), (None, 0));
        assert_eq!(find_quote(b"x\\y\"", 0, b'"', Some(b'\\')), (Some(1), 0));
    }
}
