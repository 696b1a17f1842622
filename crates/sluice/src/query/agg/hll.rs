//! `approx_count_distinct(x)`: a group's distinct values counted by a
//! HyperLogLog sketch (Flajolet et al., 2007) of 4,096 one-byte registers,
//! read with Ertl's improved estimator ("New cardinality estimation
//! algorithms for HyperLogLog sketches", 2017), which needs no bias
//! tables and no switch to linear counting for small counts.
//!
//! A group starts sparse: up to [`SPARSE_MAX`] distinct 64-bit hashes,
//! kept sorted, counted exactly (a group of few values, the most common
//! case, is exact and small). Past that, the hashes become the registers:
//! 4 KiB a group whatever its count, a relative standard error of
//! 1.04/√4096 ≈ 1.6 %. Two sketches merge exactly (the union of the
//! hashes, or the larger of each register), so workers, spilled runs and
//! partitions merge without changing the answer.
//!
//! For: the aggregate's state ([`super::Acc::Approx`]). Not for: hashing
//! the values (the caller hashes their row-format bytes, [`hash`]).

/// Bits of the hash that choose a register.
const P: u32 = 12;
/// Registers.
const M: usize = 1 << P;
/// Bits left for the register's value: values 0..=Q+1.
const Q: u32 = 64 - P;
/// Distinct hashes a sparse sketch keeps before it becomes registers
/// (as many bytes as the registers take).
pub const SPARSE_MAX: usize = M / 8;

/// One group's sketch.
#[derive(Clone, Debug, PartialEq)]
pub enum Hll {
    /// The distinct hashes seen, sorted.
    Sparse(Vec<u64>),
    /// The registers: each the largest rank seen among its hashes.
    Dense(Box<[u8]>),
}

impl Default for Hll {
    fn default() -> Self {
        Hll::Sparse(Vec::new())
    }
}

/// The hash of a value's row-format bytes: the same bytes, the same hash,
/// in every worker and run of the process.
pub fn hash(bytes: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    // A fixed seed, then a finalizer (MurmurHash3's) so that the top bits
    // (the register) and the leading zeros of the rest (its rank) are
    // both well mixed.
    fmix(foldhash::fast::FixedState::with_seed(0x5eed_11c3).hash_one(bytes))
}

/// The hash of an integer (of a call whose values are integers, dates
/// or decimals: a call hashes all its values one way).
pub fn hash_int(v: i128) -> u64 {
    fmix((v as u64) ^ ((v >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed_11c3)
}

/// MurmurHash3's finalizer: every bit of `h` moves every bit of the result.
fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl Hll {
    /// Adds one hash; returns the change in the bytes it holds.
    pub fn insert(&mut self, h: u64) -> isize {
        match self {
            Hll::Sparse(v) => match v.binary_search(&h) {
                Ok(_) => 0,
                Err(at) if v.len() < SPARSE_MAX => {
                    let before = v.capacity();
                    v.insert(at, h);
                    ((v.capacity() - before) * 8) as isize
                }
                Err(_) => {
                    let before = self.bytes();
                    self.densify();
                    self.insert(h);
                    self.bytes() as isize - before as isize
                }
            },
            Hll::Dense(r) => {
                set(r, h);
                0
            }
        }
    }

    /// Adds everything `other` saw; returns the change in bytes held.
    pub fn merge(&mut self, other: &Hll) -> isize {
        let before = self.bytes() as isize;
        match other {
            Hll::Sparse(b) => {
                for &h in b {
                    self.insert(h);
                }
            }
            Hll::Dense(b) => {
                let mut r = b.clone();
                match self {
                    Hll::Sparse(v) => v.iter().for_each(|&h| set(&mut r, h)),
                    Hll::Dense(a) => r
                        .iter_mut()
                        .zip(a.iter())
                        .for_each(|(x, y)| *x = (*x).max(*y)),
                }
                *self = Hll::Dense(r);
            }
        }
        self.bytes() as isize - before
    }

    /// Bytes it holds beyond its own size.
    pub fn bytes(&self) -> usize {
        match self {
            Hll::Sparse(v) => v.capacity() * 8,
            Hll::Dense(r) => r.len(),
        }
    }

    fn densify(&mut self) {
        if let Hll::Sparse(v) = self {
            let mut r = vec![0u8; M].into_boxed_slice();
            for &h in v.iter() {
                set(&mut r, h);
            }
            *self = Hll::Dense(r);
        }
    }

    /// The estimated count of distinct values (exact while sparse).
    pub fn estimate(&self) -> u64 {
        let r = match self {
            Hll::Sparse(v) => return v.len() as u64,
            Hll::Dense(r) => r,
        };
        // How many registers hold each value.
        let mut c = [0u32; Q as usize + 2];
        for &x in r.iter() {
            c[x as usize] += 1;
        }
        let m = M as f64;
        let mut z = m * tau(1.0 - f64::from(c[Q as usize + 1]) / m);
        for k in (1..=Q as usize).rev() {
            z = 0.5 * (z + f64::from(c[k]));
        }
        z += m * sigma(f64::from(c[0]) / m);
        let alpha = 1.0 / (2.0 * std::f64::consts::LN_2);
        (alpha * m * m / z).round() as u64
    }

    /// Appends its bytes for a spill run: a tag, then the hashes (count,
    /// then each) or the registers.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Hll::Sparse(v) => {
                out.push(0);
                out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                for h in v {
                    out.extend_from_slice(&h.to_le_bytes());
                }
            }
            Hll::Dense(r) => {
                out.push(1);
                out.extend_from_slice(r);
            }
        }
    }

    /// The sketch [`Hll::encode`] wrote at the start of `b`, and the bytes
    /// it took; `None` when `b` does not hold one.
    pub fn decode(b: &[u8]) -> Option<(Hll, usize)> {
        match *b.first()? {
            0 => {
                let n = u32::from_le_bytes(b.get(1..5)?.try_into().ok()?) as usize;
                if n > SPARSE_MAX {
                    return None;
                }
                let body = b.get(5..5 + n * 8)?;
                let v: Vec<u64> = body
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                    .collect();
                if v.windows(2).any(|w| w[0] >= w[1]) {
                    return None;
                }
                Some((Hll::Sparse(v), 5 + n * 8))
            }
            1 => {
                let r = b.get(1..1 + M)?;
                if r.iter().any(|&x| u32::from(x) > Q + 1) {
                    return None;
                }
                Some((Hll::Dense(r.into()), 1 + M))
            }
            _ => None,
        }
    }
}

/// Raises the register of `h` to its rank: 1 + the leading zeros of the
/// bits below the register's (Q + 1 when they are all zero).
fn set(r: &mut [u8], h: u64) {
    let i = (h >> Q) as usize;
    let w = h << P;
    let rank = if w == 0 { Q + 1 } else { w.leading_zeros() + 1 };
    r[i] = r[i].max(rank as u8);
}

/// Ertl's σ(x) = x + Σ_{k≥1} x^(2^k) 2^(k-1).
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

/// Ertl's τ(x) = (1 - x - Σ_{k≥1} (1 - x^(2^-k))² 2^-k) / 3.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if z == before {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sketch(values: impl Iterator<Item = u64>) -> Hll {
        let mut s = Hll::default();
        for v in values {
            s.insert(hash(&v.to_le_bytes()));
        }
        s
    }

    #[test]
    fn few_values_are_counted_exactly_and_duplicates_once() {
        let s = sketch((0..SPARSE_MAX as u64).chain(0..100));
        assert!(matches!(s, Hll::Sparse(_)));
        assert_eq!(s.estimate(), SPARSE_MAX as u64);
        assert_eq!(Hll::default().estimate(), 0);
    }

    #[test]
    fn many_values_are_within_four_standard_errors() {
        // 1.04/sqrt(4096) = 1.6 %; four of them bound every count here.
        for n in [SPARSE_MAX as u64 + 1, 2_000, 10_000, 100_000, 1_000_000] {
            let s = sketch((0..n).map(|v| v * 7 + 3));
            assert!(matches!(s, Hll::Dense(_)), "{n}");
            let e = s.estimate() as f64;
            let err = (e - n as f64).abs() / n as f64;
            assert!(err < 0.065, "n {n}: estimated {e}, error {err}");
        }
    }

    #[test]
    fn integers_hashed_by_value_are_as_accurate() {
        for n in [1_000u64, 100_000, 1_000_000] {
            let mut s = Hll::default();
            for v in 0..n {
                s.insert(hash_int(i128::from(v) * 3 - 7));
            }
            let e = s.estimate() as f64;
            assert!((e - n as f64).abs() / (n as f64) < 0.065, "n {n}: {e}");
        }
    }

    #[test]
    fn merging_is_the_sketch_of_every_value() {
        for (a, b) in [(100u64, 200u64), (100, 5_000), (5_000, 100), (3_000, 9_000)] {
            let left = sketch(0..a);
            let right = sketch(a / 2..a / 2 + b);
            let all = sketch((0..a).chain(a / 2..a / 2 + b));
            let mut m = left.clone();
            m.merge(&right);
            assert_eq!(m.estimate(), all.estimate(), "{a} {b}");
            let mut m2 = right.clone();
            m2.merge(&left);
            assert_eq!(m2.estimate(), all.estimate(), "{a} {b}");
        }
    }

    #[test]
    fn bytes_follow_inserts_and_merges() {
        let mut s = Hll::default();
        let mut held: isize = 0;
        for v in 0..3_000u64 {
            held += s.insert(hash(&v.to_le_bytes()));
            assert_eq!(held, s.bytes() as isize);
        }
        let mut t = sketch(0..10);
        held = t.bytes() as isize;
        held += t.merge(&s);
        assert_eq!(held, t.bytes() as isize);
    }

    #[test]
    fn encoding_round_trips_and_damage_is_refused() {
        for s in [Hll::default(), sketch(0..10), sketch(0..5_000)] {
            let mut b = Vec::new();
            s.encode(&mut b);
            b.extend_from_slice(b"next");
            let (d, used) = Hll::decode(&b).expect("decodes");
            assert_eq!(d, s);
            assert_eq!(&b[used..], b"next");
            assert!(Hll::decode(&b[..used - 1]).is_none());
        }
        assert!(Hll::decode(&[2]).is_none());
        let mut b = Vec::new();
        sketch(0..5_000).encode(&mut b);
        b[7] = 200;
        assert!(Hll::decode(&b).is_none());
    }
}
