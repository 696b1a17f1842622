//! The structural index of a block: one bit per byte, set where the byte
//! is one of three the record splitter stops at (the delimiter, the line
//! end, the quote), built 64 bytes at a time (AVX2 when the CPU has it,
//! SSE2 on every other x86-64, a byte loop elsewhere and as the
//! reference) over a window of the block ahead of the parser.
//!
//! Useful for: where each field of a record ends without a pass over the
//! field's bytes in the field's own loop. The end of one field is a
//! `tzcnt` of a word already made, so a field's conversion no longer
//! sits on the path to the next field's start, and the CPU works on
//! several fields at once.
//! Not useful for: what the bytes mean. A quote found here only tells
//! the parser to read that field as a quoted one (`csv::scan_quoted`);
//! the index holds no quote state, so no bit is trusted inside a quoted
//! field, and the parser resumes from where the quoted field ended.
//!
//! The window is small (4 KiB; 128 bytes in tests, so that tests cross
//! its edges) so that its bytes are still in the first-level cache when
//! the parser converts them.

#[cfg(test)]
thread_local! {
    /// Set by tests to take the code paths of CPUs without AVX2 on one
    /// that has it.
    pub(super) static NO_AVX2: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Words (of 64 bytes each) in a window.
#[cfg(not(test))]
const WORDS: usize = 64;
#[cfg(test)]
const WORDS: usize = 2;

/// The bits of the window starting at byte `base` of `data`, a cursor
/// in them, and how to make the next window.
pub(super) struct Structurals<'a> {
    data: &'a [u8],
    stops: [u8; 3],
    /// Byte of `data` that bit 0 of `words[0]` stands for.
    base: usize,
    words: [u64; WORDS],
    /// The cursor: the word `at` of the window, and its bits not yet
    /// returned by [`Self::pop`].
    at: usize,
    bits: u64,
    /// Whether the CPU has AVX2 (else SSE2 on x86-64).
    pub(super) avx2: bool,
}

impl<'a> Structurals<'a> {
    /// An index of `data` by the three bytes `stops` (repeat one to look
    /// for fewer), its cursor at the start.
    pub(super) fn new(data: &'a [u8], stops: [u8; 3]) -> Self {
        #[cfg(target_arch = "x86_64")]
        let avx2 = std::arch::is_x86_feature_detected!("avx2");
        #[cfg(not(target_arch = "x86_64"))]
        let avx2 = false;
        #[cfg(test)]
        let avx2 = avx2 && !NO_AVX2.with(|n| n.get());
        let mut ix = Structurals {
            data,
            stops,
            base: 0,
            words: [0; WORDS],
            at: 0,
            bits: 0,
            avx2,
        };
        ix.fill(0);
        ix.bits = ix.words[0];
        ix
    }

    /// Puts the cursor at byte `from`: the next [`Self::pop`] returns the
    /// first stop byte at or after it.
    pub(super) fn seek(&mut self, from: usize) {
        if from < self.base || from >= self.base + WORDS * 64 {
            if from >= self.data.len() {
                // Nothing left: the window past the end holds no bits.
                self.base = self.data.len().next_multiple_of(64);
                self.words = [0; WORDS];
                self.at = 0;
                self.bits = 0;
                return;
            }
            self.fill(from & !63);
        }
        self.at = (from - self.base) >> 6;
        self.bits = self.words[self.at] & (u64::MAX << (from & 63));
    }

    /// The position of the next stop byte after the last one returned
    /// (or at or after where [`Self::seek`] put the cursor); `None` at
    /// the end of the data.
    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<usize> {
        while self.bits == 0 {
            self.at += 1;
            if self.at == WORDS {
                let next = self.base + WORDS * 64;
                if next >= self.data.len() {
                    self.at -= 1;
                    return None;
                }
                self.fill(next);
                self.at = 0;
            }
            self.bits = self.words[self.at];
        }
        let p = self.base + self.at * 64 + self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        Some(p)
    }

    /// Makes the window that starts at byte `base`.
    #[cold]
    fn fill(&mut self, base: usize) {
        self.base = base;
        let n = self.data.len();
        // The whole 64-byte words of the window in one loop of vector
        // code; the last, partial one byte by byte.
        let whole = (n.saturating_sub(base) / 64).min(WORDS);
        let data = &self.data[base.min(n)..];
        #[cfg(target_arch = "x86_64")]
        {
            if self.avx2 {
                // SAFETY: the CPU has AVX2 (detected in `new`); `whole`
                // words of 64 bytes lie in `data`.
                unsafe { words_avx2(data, &mut self.words[..whole], self.stops) }
            } else {
                // SAFETY: as above; SSE2 is part of x86-64 itself.
                unsafe { words_sse2(data, &mut self.words[..whole], self.stops) }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        for (k, w) in self.words[..whole].iter_mut().enumerate() {
            *w = word_bytes(&data[k * 64..k * 64 + 64], self.stops);
        }
        for (k, w) in self.words.iter_mut().enumerate().skip(whole) {
            *w = data
                .get(k * 64..)
                .map_or(0, |rest| word_bytes(rest, self.stops));
        }
    }
}

/// The bits of the `words.len()` words of 64 bytes at the start of
/// `data`, with AVX2.
///
/// # Safety
/// The CPU has AVX2, and `data` holds `64 * words.len()` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn words_avx2(data: &[u8], words: &mut [u64], stops: [u8; 3]) {
    debug_assert!(data.len() >= 64 * words.len());
    for (k, w) in words.iter_mut().enumerate() {
        // SAFETY: the caller's: 64 bytes at `64 * k`.
        *w = unsafe { word_avx2(data.as_ptr().add(64 * k), stops) };
    }
}

/// [`words_avx2`] with SSE2.
///
/// # Safety
/// `data` holds `64 * words.len()` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
unsafe fn words_sse2(data: &[u8], words: &mut [u64], stops: [u8; 3]) {
    debug_assert!(data.len() >= 64 * words.len());
    for (k, w) in words.iter_mut().enumerate() {
        // SAFETY: the caller's: 64 bytes at `64 * k`.
        *w = unsafe { word_sse2(data.as_ptr().add(64 * k), stops) };
    }
}

/// The reference: the bits of up to 64 bytes, one at a time.
pub(super) fn word_bytes(bytes: &[u8], stops: [u8; 3]) -> u64 {
    let mut w = 0u64;
    for (i, &c) in bytes.iter().take(64).enumerate() {
        if c == stops[0] || c == stops[1] || c == stops[2] {
            w |= 1 << i;
        }
    }
    w
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn word_avx2(p: *const u8, stops: [u8; 3]) -> u64 {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
        _mm256_set1_epi8,
    };
    let [a, b, c] = stops.map(|s| _mm256_set1_epi8(s as i8));
    let half = |x: __m256i| {
        let hit = _mm256_or_si256(
            _mm256_or_si256(_mm256_cmpeq_epi8(x, a), _mm256_cmpeq_epi8(x, b)),
            _mm256_cmpeq_epi8(x, c),
        );
        _mm256_movemask_epi8(hit) as u32 as u64
    };
    // SAFETY: the caller's: 64 bytes from `p`; the loads are unaligned.
    let (lo, hi) = unsafe {
        (
            _mm256_loadu_si256(p as *const __m256i),
            _mm256_loadu_si256(p.add(32) as *const __m256i),
        )
    };
    half(lo) | (half(hi) << 32)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
unsafe fn word_sse2(p: *const u8, stops: [u8; 3]) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let [a, b, c] = stops.map(|s| _mm_set1_epi8(s as i8));
    let mut w = 0u64;
    for k in 0..4 {
        // SAFETY: the caller's: 64 bytes from `p`; the load is unaligned.
        let x = unsafe { _mm_loadu_si128(p.add(16 * k) as *const __m128i) };
        let hit = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(x, a), _mm_cmpeq_epi8(x, b)),
            _mm_cmpeq_epi8(x, c),
        );
        w |= (_mm_movemask_epi8(hit) as u32 as u64) << (16 * k);
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

        /// Any bytes, any sequence of seeks (forwards, and sometimes
        /// back), each followed by a few pops: the stop bytes in order,
        /// as a byte loop finds them.
        #[test]
        fn pops_are_the_byte_loop(
            data in prop::collection::vec(
                prop_oneof![6 => b'a'..=b'z', 1 => Just(b','), 1 => Just(b'\n'), 1 => Just(b'"')],
                0..700,
            ),
            seeks in prop::collection::vec((0usize..720, 0usize..12), 1..40),
            stops in prop::sample::select(vec![*b",\n\"", *b",\n\n", *b"\n\n\n", *b"z\n\""]),
        ) {
            let all: Vec<usize> = (0..data.len()).filter(|&i| stops.contains(&data[i])).collect();
            let mut ix = Structurals::new(&data, stops);
            // From the start, before any seek.
            prop_assert_eq!(ix.pop(), all.first().copied());
            for (from, pops) in seeks {
                ix.seek(from);
                let want = all.iter().copied().filter(|&i| i >= from);
                let got: Vec<Option<usize>> = (0..pops).map(|_| ix.pop()).collect();
                let want: Vec<Option<usize>> = want.map(Some).chain(std::iter::repeat(None)).take(pops).collect();
                prop_assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn words_agree_with_the_byte_loop() {
        let data: Vec<u8> = (0..64u32 * 5)
            .map(|i| b",\n\"ab01\t"[(i * 7 % 8) as usize])
            .collect();
        for at in 0..data.len() - 64 {
            let want = word_bytes(&data[at..at + 64], *b",\n\"");
            // SAFETY: `at + 64 <= data.len()`; AVX2 only where detected.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                assert_eq!(word_sse2(data.as_ptr().add(at), *b",\n\""), want);
                if std::arch::is_x86_feature_detected!("avx2") {
                    assert_eq!(word_avx2(data.as_ptr().add(at), *b",\n\""), want);
                }
            }
            assert_eq!(
                want.count_ones() as usize,
                data[at..at + 64]
                    .iter()
                    .filter(|c| b",\n\"".contains(c))
                    .count()
            );
        }
    }
}
