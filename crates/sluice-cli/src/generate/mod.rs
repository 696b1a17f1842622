//! Seeded data generators: the one place the benchmarks, the profile
//! workload, `sluice gen` and `sluice demo` get their data from, so that
//! `sluice gen` writes the very bytes a benchmark loads. Writing data is
//! all they do; loading and timing it is the callers'.

pub mod ints;
pub mod objects;
pub mod sales;
pub mod text;
pub mod tpcds;
pub mod tpch;

/// A small, fast, seeded generator (SplitMix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// How much a generator writes: rows, or about this many bytes.
#[derive(Clone, Copy)]
pub enum Limit {
    Rows(u64),
    Bytes(u64),
}

/// Appends the decimal digits of `v` to `out`.
pub fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}
