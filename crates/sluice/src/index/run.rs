//! Immutable sorted runs of key → row locator.
//!
//! ```text
//!  data blocks   ~2 KiB each: entries of (shared prefix length, suffix
//!                length and a packed flag, suffix, locator), varints; a
//!                suffix of digits / lower-case hex is packed two
//!                characters a byte; the first entry of a block shares
//!                nothing; a CRC-32 of the block follows it
//!  index         per block: its first key, offset and length; CRC-32
//!  bloom filter  k, block count, 64-byte blocks (one cache line a key,
//!                10 bits a key: ~1 % false hits); CRC-32
//!  footer        40 bytes: magic, version, entries, index and bloom offsets
//! ```
//!
//! A lookup checks the bloom filter, finds the block by binary search over
//! the first keys, checks the block's CRC and scans it. Keys are compared
//! as bytes: callers encode them so that byte order is key order
//! ([`encode_i64`], UTF-8 text as is). The layout is in FORMAT.md.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"SLUICEKR";
const VERSION: u32 = 1;
const FOOTER: usize = 8 + 4 + 4 + 8 + 8 + 8;
/// Target size of a data block.
const BLOCK: usize = 2048;
const BLOOM_BITS_PER_KEY: u64 = 14;

/// A key as order-preserving bytes: the sign bit flipped, big-endian.
pub fn encode_i64(v: i64) -> [u8; 8] {
    ((v as u64) ^ (1 << 63)).to_be_bytes()
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline(always)]
fn get_varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    // One byte: the usual case for an entry's lengths.
    let &first = b.get(*pos)?;
    if first < 0x80 {
        *pos += 1;
        return Some(first as u64);
    }
    get_varint_long(b, pos)
}

#[inline(never)]
fn get_varint_long(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The 64-bit hash of a key the bloom filters use (FORMAT.md): eight
/// bytes at a time (little-endian, the tail zero-padded), each mixed in
/// with a multiply and a rotate, then a final avalanche.
pub fn key_hash(key: &[u8]) -> u64 {
    const M: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = (key.len() as u64).wrapping_mul(M) ^ 0x5851_f42d_4c95_7f2d;
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(M).rotate_left(29);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut t = [0u8; 8];
        t[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(t)).wrapping_mul(M).rotate_left(29);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Bits of the bloom filter a hash sets: one 512-bit (64-byte, one cache
/// line) block chosen by the high bits, and `BLOOM_K` bits in it from
/// nine-bit slices of the hash rotated.
fn bloom_probe(h: u64, blocks: u64) -> (usize, [u16; BLOOM_K]) {
    (bloom_block(h, blocks), bloom_bits(h))
}

/// The block of a hash in a filter of `blocks` blocks.
#[inline]
fn bloom_block(h: u64, blocks: u64) -> usize {
    ((h as u128 * blocks as u128) >> 64) as usize
}

/// The bits a hash sets inside its block (the same in every filter).
#[inline]
fn bloom_bits(h: u64) -> [u16; BLOOM_K] {
    let g = h.rotate_left(32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut bits = [0u16; BLOOM_K];
    for (i, b) in bits.iter_mut().enumerate() {
        *b = ((g >> (9 * i)) & 511) as u16;
    }
    bits
}

/// A key's hash with the bits it sets inside a filter block, as eight
/// little-endian words (bit `p` of the block is bit `p % 64` of word
/// `p / 64`). The bits are the same in every run, only the block differs:
/// a key checked against several runs computes them once, and a run tests
/// them with a few vector operations. (Testing the seven bits one by one
/// in every run measured 10 % slower.)
#[derive(Clone, Copy)]
pub struct BloomKey {
    hash: u64,
    words: [u64; 8],
}

impl BloomKey {
    #[inline]
    pub fn new(hash: u64) -> BloomKey {
        let mut k = BloomKey {
            hash: 0,
            words: [0; 8],
        };
        k.set(hash);
        k
    }

    /// Makes this the key of `hash`, in place: built in a temporary and
    /// copied, the words were written one at a time and copied as vectors
    /// at once, which stalls on store forwarding (a third of a check's
    /// probe loop, measured).
    #[inline]
    pub fn set(&mut self, hash: u64) {
        self.hash = hash;
        self.words = [0; 8];
        for p in bloom_bits(hash) {
            self.words[(p / 64) as usize] |= 1 << (p % 64);
        }
    }
}

const BLOOM_K: usize = 7;

/// Blocks a top-level search entry stands for (see `Run::tops`).
const TOP_STEP: usize = 64;
const BLOOM_BLOCK_BYTES: usize = 64;
/// The filter's k (u32) and block count (u64) before its blocks.
const BLOOM_HEADER: usize = 12;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Moves `pos` past a varint without decoding it (`None`: it runs past
/// the end or past ten bytes, as [`get_varint`] refuses).
#[inline(always)]
fn skip_varint(b: &[u8], pos: &mut usize) -> Option<()> {
    let mut p = *pos;
    let end = b.len().min(p.saturating_add(10));
    while p < end {
        let x = b[p];
        p += 1;
        if x < 0x80 {
            *pos = p;
            return Some(());
        }
    }
    None
}

/// An entry's head at `pos`: shared prefix length, suffix length (in
/// characters) and whether the suffix is packed; `None` if malformed. No
/// suffix is longer than two characters a byte of its block, which also
/// keeps the callers' sums from overflowing.
fn entry_head(block: &[u8], pos: &mut usize) -> Option<(usize, usize, bool)> {
    let shared = get_varint(block, pos)? as usize;
    let len_packed = get_varint(block, pos)?;
    let unshared = (len_packed >> 1) as usize;
    (unshared <= 2 * block.len()).then_some((shared, unshared, len_packed & 1 == 1))
}

/// The length of the common prefix of two byte strings, compared eight
/// bytes at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().expect("8 bytes"));
        let y = u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// The first eight bytes of a key as a big-endian integer, zero padded:
/// its order agrees with the keys' byte order (ties need the whole key).
fn prefix8(k: &[u8]) -> u64 {
    let mut p = [0u8; 8];
    let m = k.len().min(8);
    p[..m].copy_from_slice(&k[..m]);
    u64::from_be_bytes(p)
}

/// The value of a digit or lower-case hex character, as packed.
fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// Encodes entries into data blocks in memory: the part of a run before
/// its index. [`RunWriter`] streams one to a file; a parallel merge has
/// one per key range and appends them in order ([`RunWriter::append`]).
#[derive(Default)]
pub struct BlockEncoder {
    /// Finished blocks, each followed by its CRC-32.
    out: Vec<u8>,
    /// Bytes of earlier output already taken away (`take_output`).
    taken: u64,
    block: Vec<u8>,
    block_first: Option<Vec<u8>>,
    last: Vec<u8>,
    /// Per block: first key, offset (from the encoder's start), length.
    index: Vec<(Vec<u8>, u64, u32)>,
    hashes: Vec<u64>,
    entries: u64,
}

impl BlockEncoder {
    pub fn new() -> Self {
        BlockEncoder {
            block: Vec::with_capacity(BLOCK + 256),
            ..Default::default()
        }
    }

    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Adds an entry; keys must come in strictly increasing byte order (an
    /// equal key is a duplicate, reported by the caller who knows where it
    /// came from). `hash` is the key's [`key_hash`].
    pub fn add(&mut self, key: &[u8], locator: u64, hash: u64) -> Result<()> {
        let common = common_prefix(&self.last, key);
        // Strictly greater than the last key: it differs at `common` by a
        // greater byte, or the last key is a proper prefix of it.
        let greater = match (self.last.get(common), key.get(common)) {
            (Some(a), Some(b)) => b > a,
            (None, Some(_)) => true,
            _ => false,
        };
        if self.entries > 0 && !greater {
            return Err(Error::Internal(format!(
                "run keys out of order or repeated at entry {}",
                self.entries
            )));
        }
        let shared = if self.block_first.is_none() {
            self.block_first = Some(key.to_vec());
            0
        } else {
            common
        };
        let suffix = &key[shared..];
        put_varint(&mut self.block, shared as u64);
        // Suffixes of digits and lower-case hex (object ids, phone
        // numbers, hashes, UUIDs) are stored two characters a byte.
        let packed = suffix.len() >= 2 && suffix.iter().all(|&c| nibble(c).is_some());
        put_varint(
            &mut self.block,
            ((suffix.len() as u64) << 1) | packed as u64,
        );
        if packed {
            for pair in suffix.chunks(2) {
                let hi = nibble(pair[0]).unwrap_or(0);
                let lo = pair.get(1).and_then(|&c| nibble(c)).unwrap_or(0);
                self.block.push(hi << 4 | lo);
            }
        } else {
            self.block.extend_from_slice(suffix);
        }
        put_varint(&mut self.block, locator);
        self.last.clear();
        self.last.extend_from_slice(key);
        self.hashes.push(hash);
        self.entries += 1;
        if self.block.len() >= BLOCK {
            self.finish_block();
        }
        Ok(())
    }

    /// Closes the block being filled (the next entry starts a new one).
    pub fn finish_block(&mut self) {
        let Some(first) = self.block_first.take() else {
            return;
        };
        let crc = crc32fast::hash(&self.block);
        let offset = self.taken + self.out.len() as u64;
        self.out.extend_from_slice(&self.block);
        self.out.extend_from_slice(&crc.to_le_bytes());
        self.index.push((first, offset, self.block.len() as u32));
        self.block.clear();
    }

    /// The finished blocks so far, handed over (offsets stay counted).
    fn take_output(&mut self) -> Vec<u8> {
        self.taken += self.out.len() as u64;
        std::mem::take(&mut self.out)
    }
}

/// Writes a run file from keys in strictly increasing order.
pub struct RunWriter {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
    written: u64,
    enc: BlockEncoder,
}

impl RunWriter {
    pub fn create(path: &Path) -> Result<Self> {
        let f = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
        Ok(RunWriter {
            path: path.to_path_buf(),
            out: std::io::BufWriter::with_capacity(1 << 16, f),
            written: 0,
            enc: BlockEncoder::new(),
        })
    }

    fn write_all(&mut self, b: &[u8]) -> Result<()> {
        crate::fault::charge(b.len())
            .and_then(|_| self.out.write_all(b))
            .map_err(|e| Error::io(&self.path, e))?;
        self.written += b.len() as u64;
        Ok(())
    }

    /// Adds an entry; keys must come in strictly increasing byte order.
    pub fn add(&mut self, key: &[u8], locator: u64) -> Result<()> {
        self.add_hashed(key, locator, key_hash(key))
    }

    /// As [`RunWriter::add`] with the key's [`key_hash`] already computed.
    pub fn add_hashed(&mut self, key: &[u8], locator: u64, hash: u64) -> Result<()> {
        self.enc.add(key, locator, hash)?;
        if self.enc.out.len() >= 1 << 16 {
            let out = self.enc.take_output();
            self.write_all(&out)?;
        }
        Ok(())
    }

    /// Appends the blocks of an encoder whose keys all follow the keys
    /// written so far (the next key range of a parallel merge).
    pub fn append(&mut self, mut part: BlockEncoder) -> Result<()> {
        self.enc.finish_block();
        let out = self.enc.take_output();
        self.write_all(&out)?;
        part.finish_block();
        if self.enc.entries > 0
            && let Some((first, _, _)) = part.index.first()
            && first.as_slice() <= self.enc.last.as_slice()
        {
            return Err(Error::Internal("appended run part out of order".into()));
        }
        let base = self.written;
        let out = std::mem::take(&mut part.out);
        self.write_all(&out)?;
        for (k, off, len) in part.index {
            self.enc.index.push((k, base + off, len));
        }
        self.enc.taken = self.written;
        self.enc.hashes.append(&mut part.hashes);
        self.enc.entries += part.entries;
        if part.entries > 0 {
            self.enc.last = part.last;
        }
        Ok(())
    }

    /// Writes the index, the bloom filter and the footer, and fsyncs.
    /// Returns the number of entries and the file's size.
    pub fn finish(mut self) -> Result<(u64, u64)> {
        self.enc.finish_block();
        let out = self.enc.take_output();
        self.write_all(&out)?;
        let mut idx = Vec::new();
        put_varint(&mut idx, self.enc.index.len() as u64);
        for (key, off, len) in &self.enc.index {
            put_varint(&mut idx, key.len() as u64);
            idx.extend_from_slice(key);
            put_varint(&mut idx, *off);
            put_varint(&mut idx, *len as u64);
        }
        idx.extend_from_slice(&crc32fast::hash(&idx).to_le_bytes());
        // Zero bytes before the index, so that the filter's blocks start
        // at a multiple of 64 bytes in the file: a memory map starts on a
        // page, so a probe then reads one cache line, not two.
        let bits_at = self.written as usize + idx.len() + BLOOM_HEADER;
        let pad = (BLOOM_BLOCK_BYTES - bits_at % BLOOM_BLOCK_BYTES) % BLOOM_BLOCK_BYTES;
        self.write_all(&[0u8; BLOOM_BLOCK_BYTES][..pad])?;
        let index_off = self.written;
        self.write_all(&idx)?;
        let bloom_off = self.written;
        let entries = self.enc.entries;
        let blocks = (entries * BLOOM_BITS_PER_KEY)
            .div_ceil(8 * BLOOM_BLOCK_BYTES as u64)
            .max(1);
        let mut bits = vec![0u8; blocks as usize * BLOOM_BLOCK_BYTES];
        let hashes = &self.enc.hashes;
        for (i, &h) in hashes.iter().enumerate() {
            // The filter of a big run does not fit the caches: fetch the
            // line of a key a few steps ahead.
            if let Some(&ahead) = hashes.get(i + 16) {
                let (b, _) = bloom_probe(ahead, blocks);
                crate::exec::prefetch(&bits[b * BLOOM_BLOCK_BYTES]);
            }
            let (b, probes) = bloom_probe(h, blocks);
            let line = &mut bits[b * BLOOM_BLOCK_BYTES..(b + 1) * BLOOM_BLOCK_BYTES];
            for p in probes {
                line[(p / 8) as usize] |= 1 << (p % 8);
            }
        }
        let mut bloom = Vec::with_capacity(bits.len() + 16);
        bloom.extend_from_slice(&(BLOOM_K as u32).to_le_bytes());
        bloom.extend_from_slice(&blocks.to_le_bytes());
        bloom.extend_from_slice(&bits);
        bloom.extend_from_slice(&crc32fast::hash(&bloom).to_le_bytes());
        self.write_all(&bloom)?;
        let mut footer = Vec::with_capacity(FOOTER);
        footer.extend_from_slice(MAGIC);
        footer.extend_from_slice(&VERSION.to_le_bytes());
        footer.extend_from_slice(&0u32.to_le_bytes());
        footer.extend_from_slice(&entries.to_le_bytes());
        footer.extend_from_slice(&index_off.to_le_bytes());
        footer.extend_from_slice(&bloom_off.to_le_bytes());
        self.write_all(&footer)?;
        let f = self
            .out
            .into_inner()
            .map_err(|e| Error::io(&self.path, e.into_error()))?;
        f.sync_all().map_err(|e| Error::io(&self.path, e))?;
        Ok((entries, self.written))
    }
}

/// An open run, read through a memory map.
pub struct Run {
    path: PathBuf,
    /// The open file, for positioned reads ([`Run::get_unfiltered_read`]).
    file: std::fs::File,
    map: memmap2::Mmap,
    /// Per block: first key, offset, length.
    index: Vec<(Box<[u8]>, usize, usize)>,
    /// The length of the prefix that every block's first key shares.
    shared: usize,
    /// Eight bytes of each block's first key after the shared prefix, as a
    /// big-endian integer (zero padded): the binary search over blocks
    /// reads this compact array and touches a full key only on equal
    /// values. (Keys such as 19-digit ids share their first ten or more
    /// bytes: without the skip, every search compared full keys.)
    firsts: Vec<u64>,
    /// Every [`TOP_STEP`]-th entry of `firsts`: small enough to stay in
    /// the cache, it narrows a search to one stretch of `firsts` (a plain
    /// binary search over all of it missed the cache at every late step).
    tops: Vec<u64>,
    bloom_blocks: u64,
    /// Where the bloom filter's bits are in `map`. They are read in place:
    /// copying them into memory with huge pages (fewer TLB misses on
    /// random probes) cost more at open (zeroing and copying the whole
    /// filter) than it saved for a load's checks, which probe in hash
    /// order (`check_batches`), walking the filter forward.
    bloom: std::ops::Range<usize>,
    entries: u64,
    /// Blocks whose checksum has been verified by this handle (a bit per
    /// block): a block is checked on its first read, not on every lookup.
    verified: Box<[AtomicU64]>,
}

impl Run {
    /// Opens a run, checking the footer, the index and the bloom filter
    /// (data blocks are checked as lookups read them).
    pub fn open(path: &Path) -> Result<Run> {
        let corrupt = |m: &str| Error::Corrupt {
            file: path.to_path_buf(),
            message: m.to_string(),
        };
        let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        // SAFETY: run files are immutable once written (FORMAT.md).
        let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| Error::io(path, e))?;
        let n = map.len();
        if n < FOOTER {
            return Err(corrupt("too short for a key-index run"));
        }
        let foot = &map[n - FOOTER..];
        if &foot[..8] != MAGIC {
            return Err(corrupt("not a key-index run (bad magic)"));
        }
        let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4"));
        let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
        if u32_at(foot, 8) != VERSION {
            return Err(corrupt("unknown run version"));
        }
        let entries = u64_at(foot, 16);
        let index_off = u64_at(foot, 24) as usize;
        let bloom_off = u64_at(foot, 32) as usize;
        if !(index_off <= bloom_off && bloom_off.checked_add(16).is_some_and(|e| e <= n - FOOTER)) {
            return Err(corrupt("footer offsets out of range"));
        }
        let idx = &map[index_off..bloom_off];
        let (body, crc) = idx.split_at(idx.len().saturating_sub(4));
        if crc.len() != 4 || crc32fast::hash(body) != u32_at(crc, 0) {
            return Err(corrupt("index checksum mismatch"));
        }
        let mut pos = 0;
        let bad = || corrupt("malformed index");
        let nblocks = get_varint(body, &mut pos).ok_or_else(bad)? as usize;
        let mut index = Vec::with_capacity(nblocks.min(1 << 20));
        for _ in 0..nblocks {
            let klen = get_varint(body, &mut pos).ok_or_else(bad)? as usize;
            if klen > body.len() {
                return Err(bad());
            }
            let key = body.get(pos..pos + klen).ok_or_else(bad)?;
            pos += klen;
            let off = get_varint(body, &mut pos).ok_or_else(bad)? as usize;
            let len = get_varint(body, &mut pos).ok_or_else(bad)? as usize;
            if len
                .checked_add(4)
                .and_then(|l| off.checked_add(l))
                .is_none_or(|e| e > index_off)
            {
                return Err(bad());
            }
            index.push((Box::<[u8]>::from(key), off, len));
        }
        let bloom = &map[bloom_off..n - FOOTER];
        let (bbody, bcrc) = bloom.split_at(bloom.len() - 4);
        if crc32fast::hash(bbody) != u32_at(bcrc, 0) {
            return Err(corrupt("bloom filter checksum mismatch"));
        }
        let bloom_k = u32_at(bbody, 0);
        let bloom_blocks = u64_at(bbody, 4);
        if bloom_k as usize != BLOOM_K
            || bloom_blocks == 0
            || Some((bbody.len() - 12) as u64) != bloom_blocks.checked_mul(BLOOM_BLOCK_BYTES as u64)
        {
            return Err(corrupt("bloom filter size mismatch"));
        }
        let bloom = bloom_off + BLOOM_HEADER..n - FOOTER - 4;
        // Sorted keys: what the first and last share, all share.
        let shared = match (index.first(), index.last()) {
            (Some(a), Some(z)) => common_prefix(&a.0, &z.0),
            _ => 0,
        };
        let firsts: Vec<u64> = index
            .iter()
            .map(|(k, _, _)| prefix8(&k[shared..]))
            .collect();
        Ok(Run {
            path: path.to_path_buf(),
            file: f,
            map,
            bloom_blocks,
            bloom,
            entries,
            shared,
            tops: firsts.iter().step_by(TOP_STEP).copied().collect(),
            firsts,
            verified: (0..index.len().div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            index,
        })
    }

    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Whether the bloom filter lets `key` (hashed by [`key_hash`]) be in
    /// the run: false means it is not.
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        self.may_contain_key(&BloomKey::new(hash))
    }

    /// [`Run::may_contain`] with the in-block bits computed by the caller.
    #[inline]
    pub fn may_contain_key(&self, k: &BloomKey) -> bool {
        let at = self.bloom.start + bloom_block(k.hash, self.bloom_blocks) * BLOOM_BLOCK_BYTES;
        let line = &self.map[at..at + BLOOM_BLOCK_BYTES];
        // Branch-free: every word is tested and the misses combined (an
        // early exit mispredicts on half the absent keys).
        let mut missing = 0u64;
        for (w, bytes) in k.words.iter().zip(line.chunks_exact(8)) {
            let v = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
            missing |= w & !v;
        }
        missing == 0
    }

    /// Asks the CPU to fetch the bloom-filter block of a hash, so that a
    /// probe a few keys later does not wait for memory. A block that
    /// straddles two cache lines (runs written before the filter was
    /// aligned, FORMAT.md) has both fetched.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let at = self.bloom.start + bloom_block(hash, self.bloom_blocks) * BLOOM_BLOCK_BYTES;
        crate::exec::prefetch(&self.map[at]);
        if !self.bloom.start.is_multiple_of(BLOOM_BLOCK_BYTES) {
            crate::exec::prefetch(&self.map[at + BLOOM_BLOCK_BYTES - 1]);
        }
    }

    /// The locator of `key`, or `None`.
    pub fn get(&self, key: &[u8]) -> Result<Option<u64>> {
        self.get_hashed(key, key_hash(key))
    }

    /// As [`Run::get`] with the key's hash computed once by the caller
    /// (one hash serves every run of a table).
    pub fn get_hashed(&self, key: &[u8], hash: u64) -> Result<Option<u64>> {
        if self.index.is_empty() || !self.may_contain(hash) {
            return Ok(None);
        }
        self.get_unfiltered(key)
    }

    /// The locator of `key`, or `None`, read from the blocks without asking
    /// the bloom filter (for a caller that already has).
    pub fn get_unfiltered(&self, key: &[u8]) -> Result<Option<u64>> {
        if self.index.is_empty() {
            return Ok(None);
        }
        match self.blocks_up_to(key) {
            0 => Ok(None),
            b => self.find_in_block(b - 1, key),
        }
    }

    /// As [`Run::get_unfiltered`], reading the block with a positioned read
    /// into `buf` rather than through the map (its checksum checked on
    /// every read). For a load's check: its false hits fall on blocks all
    /// over the run, each touched once, and a fault on the map maps 16
    /// pages around the block (and the exit unmaps them): ~12,000 such
    /// faults cost load 10 of the secondary-index scenario more than the
    /// reads (perf, BENCHMARKS.md).
    pub fn get_unfiltered_read(&self, key: &[u8], buf: &mut Vec<u8>) -> Result<Option<u64>> {
        if self.index.is_empty() {
            return Ok(None);
        }
        let b = match self.blocks_up_to(key) {
            0 => return Ok(None),
            b => b - 1,
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            let (_, off, len) = &self.index[b];
            buf.clear();
            buf.resize(len + 4, 0);
            self.file
                .read_exact_at(buf, *off as u64)
                .map_err(|e| Error::io(&self.path, e))?;
            let (block, crc) = buf.split_at(*len);
            if crc32fast::hash(block) != u32::from_le_bytes(crc.try_into().expect("4")) {
                return Err(Error::Corrupt {
                    file: self.path.clone(),
                    message: format!("checksum mismatch in block {b}"),
                });
            }
            self.search_block(b, block, key)
        }
        #[cfg(not(unix))]
        {
            let _ = buf;
            self.find_in_block(b, key)
        }
    }

    /// How many blocks have a first key `<= key` (the block that may hold
    /// `key` is the last of them).
    fn blocks_up_to(&self, key: &[u8]) -> usize {
        let (lo, hi) = match self.index.first() {
            Some((first, _, _)) if key.starts_with(&first[..self.shared]) => {
                // Every first key starts as `key` does: order by the rest.
                let p = prefix8(&key[self.shared..]);
                let f = &self.firsts;
                // The first `f >= p` is after the last top `< p`, within
                // one step of it.
                let t = self.tops.partition_point(|&x| x < p);
                let from = t.saturating_sub(1) * TOP_STEP;
                let to = (t * TOP_STEP).min(f.len());
                let lo = from + f[from..to].partition_point(|&x| x < p);
                // The first `f > p`: usually next; galloping otherwise.
                let mut step = 1;
                while lo + step < f.len() && f[lo + step] <= p {
                    step *= 2;
                }
                let from = lo + step / 2;
                let to = (lo + step).min(f.len());
                (lo, from + f[from..to].partition_point(|&x| x <= p))
            }
            _ => (0, self.index.len()),
        };
        lo + self.index[lo..hi].partition_point(|(first, _, _)| &**first <= key)
    }

    /// Block `b`'s bytes, its checksum verified on the first read.
    fn checked_block(&self, b: usize) -> Result<&[u8]> {
        let (_, off, len) = &self.index[b];
        let block = &self.map[*off..off + len];
        let (word, bit) = (&self.verified[b / 64], 1u64 << (b % 64));
        if word.load(Ordering::Relaxed) & bit == 0 {
            let crc = u32::from_le_bytes(self.map[off + len..off + len + 4].try_into().expect("4"));
            if crc32fast::hash(block) != crc {
                return Err(Error::Corrupt {
                    file: self.path.clone(),
                    message: format!("checksum mismatch in block {b}"),
                });
            }
            word.fetch_or(bit, Ordering::Relaxed);
        }
        Ok(block)
    }

    /// Looks `probe` up in block `b` without rebuilding its keys: with `m`
    /// the common prefix of the probe and the last key passed (which is
    /// smaller), an entry sharing more than `m` with that key is smaller
    /// too (skipped unread), one sharing less is greater (the probe is
    /// absent), and only one sharing exactly `m` has its suffix compared.
    fn find_in_block(&self, b: usize, probe: &[u8]) -> Result<Option<u64>> {
        let block = self.checked_block(b)?;
        self.search_block(b, block, probe)
    }

    /// [`Run::find_in_block`] on block `b`'s bytes, already checked.
    fn search_block(&self, b: usize, block: &[u8], probe: &[u8]) -> Result<Option<u64>> {
        let bad = || Error::Corrupt {
            file: self.path.clone(),
            message: format!("malformed block {b}"),
        };
        let mut pos = 0;
        let mut m = 0usize;
        // Length of the last key passed (`None` before the first entry).
        let mut last_len: Option<usize> = None;
        while pos < block.len() {
            let (shared, unshared, packed) = entry_head(block, &mut pos).ok_or_else(bad)?;
            let n = if packed {
                unshared.div_ceil(2)
            } else {
                unshared
            };
            let suffix = block.get(pos..pos + n).ok_or_else(bad)?;
            pos += n;
            // The locator is decoded only for the entry found.
            let loc_at = pos;
            skip_varint(block, &mut pos).ok_or_else(bad)?;
            match last_len {
                None if shared != 0 => return Err(bad()),
                Some(l) if shared > l => return Err(bad()),
                _ => {}
            }
            last_len = Some(shared + unshared);
            if shared > m {
                continue;
            }
            if shared < m {
                return Ok(None);
            }
            // shared == m: compare the suffix with the probe from m.
            let mut smaller = false;
            for i in 0..unshared {
                let c = if packed {
                    let byte = suffix[i / 2];
                    HEX[if i % 2 == 0 { byte >> 4 } else { byte & 15 } as usize]
                } else {
                    suffix[i]
                };
                let Some(&p) = probe.get(m + i) else {
                    // The probe is a proper prefix of this key: greater.
                    return Ok(None);
                };
                if c > p {
                    return Ok(None);
                }
                if c < p {
                    m += i;
                    smaller = true;
                    break;
                }
            }
            if smaller {
                continue;
            }
            if m + unshared == probe.len() {
                let mut at = loc_at;
                return Ok(Some(get_varint(block, &mut at).ok_or_else(bad)?));
            }
            // This key is a proper prefix of the probe: smaller.
            m += unshared;
        }
        Ok(None)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A cursor over the entries in key order (for merges).
    pub fn cursor(&self) -> Result<Cursor<'_>> {
        Cursor::seek(self, None)
    }

    /// First keys of the blocks, in order (a sample of the key space).
    pub fn block_first_keys(&self) -> impl Iterator<Item = &[u8]> {
        self.index.iter().map(|(k, _, _)| &**k)
    }

    /// Calls `f(key, locator)` for every entry in key order.
    pub fn for_each(&self, mut f: impl FnMut(&[u8], u64)) -> Result<()> {
        for b in 0..self.index.len() {
            self.scan_block(b, |k, loc| {
                f(k, loc);
                true
            })?;
        }
        Ok(())
    }

    /// Reads every entry (checking every block's checksum): keys must be
    /// strictly increasing, as many as the footer says, and every locator
    /// below `rows`. For `sluice check`.
    pub fn verify(&self, rows: u64) -> Result<()> {
        let mut last: Option<Vec<u8>> = None;
        let mut n = 0u64;
        let mut bad = None;
        self.for_each(|k, loc| {
            if bad.is_none() {
                if last.as_deref().is_some_and(|l| l >= k) {
                    bad = Some(format!("keys out of order at entry {n}"));
                } else if loc >= rows {
                    bad = Some(format!(
                        "entry {n} points at row {loc} of a table of {rows}"
                    ));
                }
            }
            last = Some(k.to_vec());
            n += 1;
        })?;
        if bad.is_none() && n != self.entries {
            bad = Some(format!("{n} entries, the footer says {}", self.entries));
        }
        match bad {
            Some(message) => Err(Error::Corrupt {
                file: self.path.clone(),
                message,
            }),
            None => Ok(()),
        }
    }

    /// Decodes block `b`, calling `f` until it returns false.
    fn scan_block(&self, b: usize, mut f: impl FnMut(&[u8], u64) -> bool) -> Result<()> {
        let corrupt = |m: String| Error::Corrupt {
            file: self.path.clone(),
            message: m,
        };
        let block = self.checked_block(b)?;
        let mut key: Vec<u8> = Vec::new();
        let mut pos = 0;
        let bad = || corrupt(format!("malformed block {b}"));
        while pos < block.len() {
            let (shared, unshared, packed) = entry_head(block, &mut pos).ok_or_else(bad)?;
            if shared > key.len() {
                return Err(bad());
            }
            key.truncate(shared);
            if packed {
                let bytes = block.get(pos..pos + unshared.div_ceil(2)).ok_or_else(bad)?;
                key.resize(shared + 2 * bytes.len(), 0);
                for (out, &b) in key[shared..].chunks_exact_mut(2).zip(bytes) {
                    out[0] = HEX[(b >> 4) as usize];
                    out[1] = HEX[(b & 15) as usize];
                }
                key.truncate(shared + unshared);
                pos += bytes.len();
            } else {
                key.extend_from_slice(block.get(pos..pos + unshared).ok_or_else(bad)?);
                pos += unshared;
            }
            let loc = get_varint(block, &mut pos).ok_or_else(bad)?;
            if !f(&key, loc) {
                break;
            }
        }
        Ok(())
    }
}

/// Entries of a run in key order, one block decoded at a time.
pub struct Cursor<'a> {
    run: &'a Run,
    /// The next block to decode.
    block: usize,
    /// The decoded block: (key end in `keys`, locator).
    entries: Vec<(usize, u64)>,
    keys: Vec<u8>,
    at: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor on the first entry whose key is `>= from` (the first
    /// entry when `from` is `None`).
    pub fn seek(run: &'a Run, from: Option<&[u8]>) -> Result<Cursor<'a>> {
        let block = match from {
            Some(k) => run.blocks_up_to(k).saturating_sub(1),
            None => 0,
        };
        let mut c = Cursor {
            run,
            block,
            entries: Vec::new(),
            keys: Vec::new(),
            at: 0,
        };
        c.fill()?;
        if let Some(k) = from {
            while c.current().is_some_and(|(key, _)| key < k) {
                c.advance()?;
            }
        }
        Ok(c)
    }

    /// Decodes blocks until one has an entry at `at` (or none are left).
    fn fill(&mut self) -> Result<()> {
        while self.at >= self.entries.len() && self.block < self.run.index.len() {
            self.entries.clear();
            self.keys.clear();
            self.at = 0;
            let (entries, keys) = (&mut self.entries, &mut self.keys);
            self.run.scan_block(self.block, |k, loc| {
                keys.extend_from_slice(k);
                entries.push((keys.len(), loc));
                true
            })?;
            self.block += 1;
        }
        Ok(())
    }

    /// The entry under the cursor, `None` at the end.
    pub fn current(&self) -> Option<(&[u8], u64)> {
        let &(end, loc) = self.entries.get(self.at)?;
        let start = match self.at {
            0 => 0,
            i => self.entries[i - 1].0,
        };
        Some((&self.keys[start..end], loc))
    }

    /// Moves to the next entry.
    pub fn advance(&mut self) -> Result<()> {
        self.at += 1;
        self.fill()
    }

    /// The next entry, or `None` at the end.
    pub fn next_entry(&mut self) -> Result<Option<(Vec<u8>, u64)>> {
        let out = self.current().map(|(k, l)| (k.to_vec(), l));
        if out.is_some() {
            self.advance()?;
        }
        Ok(out)
    }

    pub fn run(&self) -> &Run {
        self.run
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn tmp(name: &str) -> PathBuf {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        std::env::temp_dir().join(format!("sluice-run-{}-{n}-{name}", std::process::id()))
    }

    fn build(path: &Path, m: &BTreeMap<Vec<u8>, u64>) -> Run {
        let mut w = RunWriter::create(path).unwrap();
        for (k, v) in m {
            w.add(k, *v).unwrap();
        }
        let (n, _) = w.finish().unwrap();
        assert_eq!(n, m.len() as u64);
        Run::open(path).unwrap()
    }

    const KEY_BYTES: &[u8] = &[0, 1, b'0', b'7', b'9', b'a', b'f', b'g', b'A'];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        #[test]
        fn lookups_agree_with_a_btreemap(
            // Few symbols (long shared prefixes), some packable as hex
            // digits, some not.
            m in prop::collection::btree_map(prop::collection::vec(prop::sample::select(KEY_BYTES), 0..24), any::<u64>(), 0..3000),
            probes in prop::collection::vec(prop::collection::vec(prop::sample::select(KEY_BYTES), 0..24), 0..200),
        ) {
            let p = tmp("prop");
            let run = build(&p, &m);
            for (k, v) in &m {
                prop_assert_eq!(run.get(k).unwrap(), Some(*v));
            }
            for k in &probes {
                prop_assert_eq!(run.get(k).unwrap(), m.get(k).copied());
            }
            let mut all = Vec::new();
            run.for_each(|k, v| all.push((k.to_vec(), v))).unwrap();
            prop_assert_eq!(all, m.into_iter().collect::<Vec<_>>());
            let _ = std::fs::remove_file(&p);
        }
    }

    #[test]
    fn filter_blocks_start_on_a_cache_line_and_unpadded_files_read_the_same() {
        for n in [0u64, 1, 7, 1000, 54_321] {
            let m: BTreeMap<Vec<u8>, u64> = (0..n)
                .map(|i| (format!("{:019}", i * 7919).into_bytes(), i))
                .collect();
            let p = tmp("align");
            let run = build(&p, &m);
            assert_eq!(run.bloom.start % BLOOM_BLOCK_BYTES, 0, "{n} keys");
            drop(run);
            // The same file without the padding, as written before it
            // existed: the data blocks, then the index at once, the
            // footer's offsets moved back.
            let bytes = std::fs::read(&p).unwrap();
            let at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap()) as usize;
            let foot = bytes.len() - FOOTER;
            let (index_off, bloom_off) = (at(foot + 24), at(foot + 32));
            let blocks_end = match n {
                0 => 0,
                _ => {
                    let r = Run::open(&p).unwrap();
                    let (_, off, len) = r.index.last().unwrap().clone();
                    off + len + 4
                }
            };
            let pad = index_off - blocks_end;
            assert!(pad < BLOOM_BLOCK_BYTES, "{pad} bytes of padding");
            assert!(bytes[blocks_end..index_off].iter().all(|&b| b == 0));
            let mut old = bytes[..blocks_end].to_vec();
            old.extend_from_slice(&bytes[index_off..foot + 24]);
            old.extend_from_slice(&((index_off - pad) as u64).to_le_bytes());
            old.extend_from_slice(&((bloom_off - pad) as u64).to_le_bytes());
            let q = tmp("unpadded");
            std::fs::write(&q, &old).unwrap();
            let run = Run::open(&q).unwrap();
            for (k, v) in &m {
                assert_eq!(run.get(k).unwrap(), Some(*v));
            }
            assert_eq!(run.get(b"not a key").unwrap(), None);
            let mut all = Vec::new();
            run.for_each(|k, v| all.push((k.to_vec(), v))).unwrap();
            assert_eq!(all.len() as u64, n);
            for f in [p, q] {
                let _ = std::fs::remove_file(f);
            }
        }
    }

    #[test]
    fn lookups_and_seeks_in_a_run_of_many_blocks_with_long_shared_prefixes() {
        // Hundreds of blocks (the two-level block search), keys sharing
        // eleven bytes (the prefix skipped), and a long stretch of blocks
        // whose next eight bytes are equal too (the galloping step).
        let mut m = BTreeMap::new();
        for i in 0..60_000u64 {
            m.insert(format!("10000000000{:08}", i * 3).into_bytes(), i);
        }
        for i in 0..20_000u64 {
            m.insert(
                format!("100000000005555555x{i:06}").into_bytes(),
                100_000 + i,
            );
        }
        let p = tmp("many");
        let run = build(&p, &m);
        assert!(run.index.len() > 3 * TOP_STEP, "{} blocks", run.index.len());
        assert_eq!(run.shared, 11);
        for (k, v) in &m {
            assert_eq!(
                run.get(k).unwrap(),
                Some(*v),
                "{}",
                String::from_utf8_lossy(k)
            );
        }
        let mut absent: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"0".to_vec(),
            b"1".to_vec(),
            b"10000000000".to_vec(),
            b"1000000000099999999".to_vec(),
            b"2".to_vec(),
            b"100000000005555555".to_vec(),
            b"100000000005555555x".to_vec(),
            b"100000000005555555y".to_vec(),
            b"10000000000~".to_vec(),
        ];
        for i in (0..60_000u64).step_by(7) {
            absent.push(format!("10000000000{:08}", i * 3 + 1).into_bytes());
        }
        for i in (0..20_000u64).step_by(11) {
            absent.push(format!("100000000005555555x{i:06}0").into_bytes());
        }
        for k in &absent {
            assert_eq!(
                run.get(k).unwrap(),
                m.get(k).copied(),
                "{}",
                String::from_utf8_lossy(k)
            );
            // A seek lands on the first key >= k.
            let want = m.range(k.clone()..).next().map(|(k, v)| (k.clone(), *v));
            let mut c = Cursor::seek(&run, Some(k)).unwrap();
            while c.current().is_some_and(|(x, _)| x < &k[..]) {
                c.advance().unwrap();
            }
            assert_eq!(c.current().map(|(k, v)| (k.to_vec(), v)), want);
        }
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn integer_keys_sort_as_numbers() {
        let mut v = [i64::MIN, -5, -1, 0, 1, 42, i64::MAX];
        let mut enc: Vec<[u8; 8]> = v.iter().map(|&x| encode_i64(x)).collect();
        enc.sort();
        v.sort();
        assert_eq!(enc, v.iter().map(|&x| encode_i64(x)).collect::<Vec<_>>());
    }

    #[test]
    fn keys_out_of_order_or_repeated_are_refused() {
        let p = tmp("order");
        let mut w = RunWriter::create(&p).unwrap();
        w.add(b"b", 1).unwrap();
        assert!(w.add(b"b", 2).is_err());
        assert!(w.add(b"a", 2).is_err());
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn every_flipped_byte_is_an_error_or_a_right_answer() {
        let p = tmp("flip");
        let m: BTreeMap<Vec<u8>, u64> = (0..2000u64)
            .map(|i| (format!("key-{i:06}").into_bytes(), i * 7))
            .collect();
        build(&p, &m);
        let good = std::fs::read(&p).unwrap();
        // Flip one byte at many places: opening or the lookups fail with
        // "corrupt", or every answer is still right; never a wrong answer.
        for at in (0..good.len()).step_by(97) {
            let mut bad = good.clone();
            bad[at] ^= 0x5a;
            let q = tmp("flipped");
            std::fs::write(&q, &bad).unwrap();
            match Run::open(&q) {
                Err(e) => assert!(matches!(e, Error::Corrupt { .. }), "{e}"),
                Ok(run) => {
                    // Through the map, and by positioned reads (a load's
                    // check).
                    let mut buf = Vec::new();
                    for (k, v) in m.iter().step_by(37) {
                        for got in [run.get(k), run.get_unfiltered_read(k, &mut buf)] {
                            match got {
                                Ok(Some(got)) => assert_eq!(got, *v, "byte {at}"),
                                Ok(None) => panic!("byte {at}: key {k:?} lost without an error"),
                                Err(e) => assert!(matches!(e, Error::Corrupt { .. })),
                            }
                        }
                    }
                }
            }
            let _ = std::fs::remove_file(&q);
        }
        let _ = std::fs::remove_file(&p);
    }
}
#[cfg(test)]
mod fp_probe {
    use super::*;
    #[test]
    fn bloom_false_positive_rate_is_about_one_in_five_hundred() {
        let p = std::env::temp_dir().join(format!("sluice-fp-{}", std::process::id()));
        let mut w = RunWriter::create(&p).unwrap();
        let n = 200_000u64;
        for i in 0..n {
            w.add(
                format!("{:019}", 1_000_000_000_000_000_000u64 + i * 7919).as_bytes(),
                i,
            )
            .unwrap();
        }
        w.finish().unwrap();
        let run = Run::open(&p).unwrap();
        let hits = (0..n)
            .filter(|i| {
                run.may_contain(key_hash(
                    format!("{:019}", 1_000_000_000_000_000_001u64 + i * 7919).as_bytes(),
                ))
            })
            .count();
        let _ = std::fs::remove_file(&p);
        let rate = hits as f64 / n as f64;
        eprintln!("false positive rate {rate}");
        // 14 bits a key, 7 bits in one 512-bit block: 0.19 % expected.
        assert!(rate < 0.004, "{rate}");
    }
}
