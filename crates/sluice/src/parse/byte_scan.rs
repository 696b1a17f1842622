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

/// The leading ASCII digits of `data[pos..]` and their value, when there
/// are 1 to 15 of them, 16 bytes can be read from `pos`, and the 16 bytes
/// that end with the last digit lie in `data` (not at a block's very
/// start); `None` otherwise (the caller's byte path takes those).
#[inline]
pub(super) fn leading_digits16(data: &[u8], pos: usize) -> Option<(u64, usize)> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of x86-64 itself.
        unsafe { leading_digits16_sse2(data, pos) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (data, pos);
        None
    }
}

/// Digits to value, 16 at a time with SSE2: the digits are loaded again
/// so that they end the vector (the bytes before them masked to zero),
/// then pairs, quads and octets of digits are multiplied and added
/// (`pmaddwd` against 10, 100 and 10,000) and the two octets joined.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn leading_digits16_sse2(data: &[u8], pos: usize) -> Option<(u64, usize)> {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_max_epu8,
        _mm_movemask_epi8, _mm_set_epi8, _mm_set1_epi8, _mm_sub_epi8,
    };
    if pos.checked_add(16)? > data.len() {
        return None;
    }
    let zero = _mm_set1_epi8(b'0' as i8);
    let nine = _mm_set1_epi8(9);
    // SAFETY: `pos + 16 <= data.len()`.
    let x = unsafe { _mm_loadu_si128(data.as_ptr().add(pos) as *const __m128i) };
    let d = _mm_sub_epi8(x, zero);
    // A byte is a digit when, less '0' (wrapping), it is at most 9.
    let is_digit = _mm_cmpeq_epi8(_mm_max_epu8(d, nine), nine);
    let m = _mm_movemask_epi8(is_digit) as u32;
    let len = (!m).trailing_zeros() as usize;
    if len == 0 || len >= 16 || pos + len < 16 {
        return None;
    }
    // SAFETY: `pos + len >= 16` and `pos + len <= data.len()`: the 16
    // bytes that end with the last digit.
    let y = unsafe { _mm_loadu_si128(data.as_ptr().add(pos + len - 16) as *const __m128i) };
    let index = _mm_set_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    // Keep bytes 16 - len .. 16: the digits.
    let keep = _mm_cmpgt_epi8(index, _mm_set1_epi8(15 - len as i8));
    let digits = _mm_and_si128(_mm_sub_epi8(y, zero), keep);
    // SAFETY: without SSSE3, SSE2 only.
    Some((unsafe { value_of::<false>(digits) }, len))
}

/// The value of the digits `data[end - len..end]` (1 to 16 of them),
/// when they are all digits and 16 bytes end at `end`; `None` otherwise
/// (not digits, or the caller's byte loop: not x86-64, or too near the
/// data's start). `SSSE3`: with SSSE3's byte multiply-add.
///
/// # Safety
/// With `SSSE3`, the CPU has SSSE3.
#[inline(always)]
pub(super) unsafe fn digits16<const SSSE3: bool>(
    data: &[u8],
    end: usize,
    len: usize,
) -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        if SSSE3 {
            // SAFETY: the caller's.
            unsafe { digits16_x86::<true>(data, end, len) }
        } else {
            // SAFETY: SSE2 is part of x86-64 itself.
            unsafe { digits16_x86::<false>(data, end, len) }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (data, end, len);
        None
    }
}

/// Whether `data[s..z]` is ASCII without a NUL byte (what TEXT takes
/// as it is), 16 bytes at a time.
#[inline(always)]
pub(super) fn ascii_text(data: &[u8], s: usize, z: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of x86-64 itself.
        unsafe { ascii_text_sse2(data, s, z) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        ascii_text_bytes(&data[s..z])
    }
}

/// The reference of [`ascii_text`].
#[inline]
pub(super) fn ascii_text_bytes(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b != 0 && b < 0x80)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn ascii_text_sse2(data: &[u8], mut s: usize, z: usize) -> bool {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_setzero_si128,
    };
    // Bytes of 16 at `s` that are NUL or not ASCII, as bits.
    let odd = |s: usize| {
        // SAFETY: the callers read 16 bytes at `s` only within `data`.
        let x = unsafe { _mm_loadu_si128(data.as_ptr().add(s) as *const __m128i) };
        (_mm_movemask_epi8(x) | _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_setzero_si128()))) as u32
    };
    while s + 16 <= z {
        if odd(s) != 0 {
            return false;
        }
        s += 16;
    }
    if s == z {
        return true;
    }
    if s + 16 <= data.len() {
        // The rest is shorter than 16: those of the 16 bytes only.
        return odd(s) & ((1u32 << (z - s)) - 1) == 0;
    }
    ascii_text_bytes(&data[s..z])
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn digits16_x86<const SSSE3: bool>(data: &[u8], end: usize, len: usize) -> Option<u64> {
    let (y, keep, _) = tail16(data, end, len)?;
    let d = digit_values(y, keep)?;
    // SAFETY: the caller's.
    Some(unsafe { value_of::<SSSE3>(d) })
}

/// The 16 bytes that end at `end` (1 ..= `len` ..= 16 of them the
/// field's, `16 <= end <= data.len()`; else `None`), which of them are
/// the field's, and each byte's index.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tail16(
    data: &[u8],
    end: usize,
    len: usize,
) -> Option<(
    std::arch::x86_64::__m128i,
    std::arch::x86_64::__m128i,
    std::arch::x86_64::__m128i,
)> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_set_epi8, _mm_set1_epi8,
    };
    if end < 16 || end > data.len() || len == 0 || len > 16 {
        return None;
    }
    // SAFETY: `16 <= end <= data.len()`: the 16 bytes read are in `data`;
    // the load is unaligned. SSE2 is part of x86-64 itself.
    unsafe {
        let y = _mm_loadu_si128(data.as_ptr().add(end - 16) as *const __m128i);
        let index = _mm_set_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
        // Bytes 16 - len .. 16 are the field's.
        let keep = _mm_cmpgt_epi8(index, _mm_set1_epi8(15 - len as i8));
        Some((y, keep, index))
    }
}

/// The digit values of the kept bytes of `y` (the others 0), when every
/// kept byte is a digit.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn digit_values(
    y: std::arch::x86_64::__m128i,
    keep: std::arch::x86_64::__m128i,
) -> Option<std::arch::x86_64::__m128i> {
    use std::arch::x86_64::{
        _mm_and_si128, _mm_cmpeq_epi8, _mm_max_epu8, _mm_movemask_epi8, _mm_set1_epi8, _mm_sub_epi8,
    };
    // SAFETY: SSE2 is part of x86-64 itself.
    unsafe {
        let d = _mm_and_si128(_mm_sub_epi8(y, _mm_set1_epi8(b'0' as i8)), keep);
        // Less '0' (wrapping), a digit is at most 9; the bytes not kept
        // are 0.
        let nine = _mm_set1_epi8(9);
        (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(d, nine), nine)) == 0xFFFF).then_some(d)
    }
}

/// The digits of `data[end - len..end]` (1 to 16 bytes) with at most one
/// `.` among them: their value with the point left out, and how many
/// digits follow the point (`None`: no point); `None` when a byte is
/// neither, or where [`digits16`] answers `None`.
///
/// # Safety
/// With `SSSE3`, the CPU has SSSE3.
#[inline(always)]
pub(super) unsafe fn point_digits16<const SSSE3: bool>(
    data: &[u8],
    end: usize,
    len: usize,
) -> Option<(u64, Option<usize>)> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_and_si128, _mm_andnot_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_movemask_epi8,
            _mm_or_si128, _mm_set1_epi8, _mm_slli_si128,
        };
        let (y, keep, index) = tail16(data, end, len)?;
        // SAFETY: SSE2 is part of x86-64 itself; SSSE3 is the caller's.
        unsafe {
            let point = _mm_and_si128(_mm_cmpeq_epi8(y, _mm_set1_epi8(b'.' as i8)), keep);
            let points = _mm_movemask_epi8(point) as u32;
            let (keep, frac) = if points == 0 {
                (keep, None)
            } else {
                if points & (points - 1) != 0 {
                    return None;
                }
                (
                    _mm_andnot_si128(point, keep),
                    Some(15 - points.trailing_zeros() as usize),
                )
            };
            let d = digit_values(y, keep)?;
            let d = match frac {
                None => d,
                Some(f) => {
                    // The digits before the point moved one byte on, over
                    // it (a zero comes in before the first).
                    let k = (15 - f) as i8;
                    let before = _mm_cmpgt_epi8(_mm_set1_epi8(k + 1), index);
                    _mm_or_si128(
                        _mm_and_si128(before, _mm_slli_si128(d, 1)),
                        _mm_andnot_si128(before, d),
                    )
                }
            };
            Some((value_of::<SSSE3>(d), frac))
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (data, end, len);
        None
    }
}

/// The value of 16 digit values (0..=9 each, the first the highest):
/// pairs, quads and octets of digits multiplied and added, the two
/// octets joined. `SSSE3`: the pairs by one byte multiply-add.
///
/// # Safety
/// With `SSSE3`, the CPU has SSSE3.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn value_of<const SSSE3: bool>(digits: std::arch::x86_64::__m128i) -> u64 {
    use std::arch::x86_64::{
        _mm_cvtsi128_si32, _mm_madd_epi16, _mm_maddubs_epi16, _mm_packs_epi32, _mm_set1_epi16,
        _mm_set1_epi32, _mm_setzero_si128, _mm_srli_si128, _mm_unpackhi_epi8, _mm_unpacklo_epi8,
    };
    // SAFETY: SSE2 is part of x86-64 itself; SSSE3 is the caller's.
    unsafe {
        let pairs = if SSSE3 {
            // Lanes of 16 bits: (10, 1) byte pairs, the first digit the
            // highest.
            _mm_maddubs_epi16(digits, _mm_set1_epi16(0x010A))
        } else {
            let z = _mm_setzero_si128();
            let (lo, hi) = (_mm_unpacklo_epi8(digits, z), _mm_unpackhi_epi8(digits, z));
            let tens = _mm_set1_epi32(0x0001_000A);
            _mm_packs_epi32(_mm_madd_epi16(lo, tens), _mm_madd_epi16(hi, tens))
        };
        let quads = _mm_madd_epi16(pairs, _mm_set1_epi32(0x0001_0064));
        let quads = _mm_packs_epi32(quads, quads);
        let octets = _mm_madd_epi16(quads, _mm_set1_epi32(0x0001_2710));
        let high = _mm_cvtsi128_si32(octets) as u32 as u64;
        let low = _mm_cvtsi128_si32(_mm_srli_si128(octets, 4)) as u32 as u64;
        high * 100_000_000 + low
    }
}

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

    proptest! {
        #![proptest_config(ProptestConfig { cases: 5_000, ..ProptestConfig::default() })]

        /// Digits after any bytes, followed by any bytes: the value the
        /// digits write, or `None` where the vector path does not apply.
        #[test]
        fn sixteen_digits_at_a_time_are_their_value(
            before in prop::collection::vec(prop_oneof![Just(b','), b'0'..=b'9'], 0..20),
            digits in prop::collection::vec(b'0'..=b'9', 0..20),
            after in prop::collection::vec(prop_oneof![Just(b','), Just(b'\n'), Just(b'.'), Just(b'/'), Just(b':'), Just(0xff)], 0..20),
        ) {
            let mut data = before.clone();
            data.extend_from_slice(&digits);
            data.extend_from_slice(&after);
            let pos = before.len();
            // The leading digits from `pos` (some of `after` may not end them).
            let len = data[pos..].iter().take_while(|c| c.is_ascii_digit()).count();
            let got = leading_digits16(&data, pos);
            if let Some((v, l)) = got {
                prop_assert_eq!(l, len);
                let want: u64 = std::str::from_utf8(&data[pos..pos + len]).unwrap().parse().unwrap();
                prop_assert_eq!(v, want);
            } else {
                #[cfg(target_arch = "x86_64")]
                prop_assert!(len == 0 || len >= 16 || pos + 16 > data.len() || pos + len < 16);
            }
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn sixteen_digits_examples() {
        let d = b"0000000000000000,2147483647,1,\n999999999999999,x..............";
        assert_eq!(leading_digits16(d, 17), Some((2_147_483_647, 10)));
        assert_eq!(leading_digits16(d, 28), Some((1, 1)));
        assert_eq!(leading_digits16(d, 31), Some((999_999_999_999_999, 15)));
        // Sixteen digits, and a field at the start: the byte path.
        assert_eq!(leading_digits16(d, 0), None);
        assert_eq!(leading_digits16(b"12,..............", 0), None);
        assert_eq!(leading_digits16(b"x,..............", 0), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3_000, ..ProptestConfig::default() })]

        /// Any bytes, any range: ASCII without a NUL as the byte loop says.
        #[test]
        fn ascii_text_is_the_byte_loop(
            data in prop::collection::vec(prop_oneof![8 => 1u8..0x80, 1 => Just(0u8), 1 => 0x80u8..=0xff], 0..80),
            s in 0usize..80,
            len in 0usize..40,
        ) {
            let s = s.min(data.len());
            let z = (s + len).min(data.len());
            prop_assert_eq!(ascii_text(&data, s, z), ascii_text_bytes(&data[s..z]));
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
