//! The ends of fields found 16 bytes at a time (SSE2, which every x86-64
//! CPU has), with a byte loop elsewhere and as the reference: the end of
//! an unquoted field (its delimiter, the line's end or a quote), and the
//! end of a quoted one (the next quote or escape byte) with the newlines
//! before it, in one pass.
//!
//! Useful for: why a field costs one pass over its bytes, not a byte
//! loop through a class table, nor a `memchr` for its end and another for
//! its newlines (two calls whose setup outweighs the work on fields of a
//! few dozen bytes).
//! Not useful for: what a quote, a doubled quote or an escape means
//! (`csv::scan_quoted`), or which byte ends what (`csv::scan_field`).

/// The first position at or after `from` holding one of the four bytes
/// `stops` (repeat one to look for fewer), or `data.len()`.
#[inline]
pub(super) fn find_any(data: &[u8], from: usize, stops: [u8; 4]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of x86-64 itself.
        unsafe { find_any_sse2(data, from, stops) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        find_any_bytes(data, from, stops)
    }
}

/// The reference of [`find_any`]: one byte at a time.
#[inline]
pub(super) fn find_any_bytes(data: &[u8], from: usize, stops: [u8; 4]) -> usize {
    let mut i = from.min(data.len());
    while i < data.len() {
        let c = data[i];
        if c == stops[0] || c == stops[1] || c == stops[2] || c == stops[3] {
            return i;
        }
        i += 1;
    }
    data.len()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn find_any_sse2(data: &[u8], from: usize, stops: [u8; 4]) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let n = data.len();
    let mut i = from.min(n);
    let v = stops.map(|b| _mm_set1_epi8(b as i8));
    while i + 16 <= n {
        // SAFETY: `i + 16 <= data.len()`: the 16 bytes read are in
        // `data`; the load is unaligned.
        let x = unsafe { _mm_loadu_si128(data.as_ptr().add(i) as *const __m128i) };
        let hit = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(x, v[0]), _mm_cmpeq_epi8(x, v[1])),
            _mm_or_si128(_mm_cmpeq_epi8(x, v[2]), _mm_cmpeq_epi8(x, v[3])),
        );
        let m = _mm_movemask_epi8(hit) as u32;
        if m != 0 {
            return i + m.trailing_zeros() as usize;
        }
        i += 16;
    }
    find_any_bytes(data, i, stops)
}

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

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

        #[test]
        fn field_ends_are_the_byte_loops(
            data in prop::collection::vec(
                prop_oneof![6 => b'a'..=b'z', 1 => Just(b','), 1 => Just(b'\n'), 1 => Just(b'"'), 1 => Just(b'\t')],
                0..100,
            ),
            from in 0usize..110,
            stops in prop::sample::select(vec![*b",\n\"\n", *b",\n\n\n", *b" \t\n\"", *b"\t\n\"\"", *b"\n\n\n\n"]),
        ) {
            prop_assert_eq!(find_any(&data, from, stops), find_any_bytes(&data, from, stops));
        }
    }

    #[test]
    fn field_ends() {
        let d = b"abcdefghijklmnopqrstuvwxyz,x\n";
        assert_eq!(find_any(d, 0, *b",\n\"\n"), 26);
        assert_eq!(find_any(d, 27, *b",\n\"\n"), 28);
        assert_eq!(find_any(d, 29, *b",\n\"\n"), 29);
        assert_eq!(find_any(b"abc", 0, *b",\n\"\n"), 3);
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
