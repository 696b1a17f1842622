//! Grouped aggregation in two modes: each worker folds its morsels into a
//! `Partial` [`GroupTable`]; the tables are merged once into the `Final`
//! one. Sums of integers and decimals accumulate in 128 bits and are exact.

// foldhash, not SipHash: these maps hash every row of a scan, and their
// keys come from the user's own data, which is not an attack surface.
use foldhash::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, BooleanArray, Decimal128Array, new_null_array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::DataType as A;

use super::expr::{Expr, canonical_doubles, exec_err};
use super::intset::IntSet;
use crate::error::{Error, Result};

pub mod hll;
pub mod spill;

/// Aggregate functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    /// `var_samp` (`variance`), `var_pop`, `stddev_samp` (`stddev`),
    /// `stddev_pop`: of the values as doubles.
    VarSamp,
    VarPop,
    StddevSamp,
    StddevPop,
    /// `bool_and` (`every`), `bool_or`.
    BoolAnd,
    BoolOr,
    /// `string_agg(value, delimiter [ORDER BY …])`, and the ordered-set
    /// aggregates `percentile_cont(f)`, `percentile_disc(f)` and `mode()`
    /// `WITHIN GROUP (ORDER BY x)` (`median(x)`: `percentile_cont(0.5)`):
    /// each group's rows are collected and sorted (see [`Collect`]).
    StringAgg,
    /// `array_agg(value [ORDER BY …])`: the values, NULLs included, as a
    /// list (PostgreSQL's array); NULL for a group of no rows.
    ArrayAgg,
    PercentileCont,
    PercentileDisc,
    Mode,
    /// `approx_count_distinct(x)`: a HyperLogLog sketch ([`hll`]).
    ApproxCountDistinct,
}

/// What a collecting aggregate (string_agg, the percentiles, mode) keeps
/// and how it sorts it. Its argument is `SORT_ROW(k1, …, kn, value)`: each
/// row as row-format bytes ([`super::func::sort_row`]) that compare as
/// the rows order, NULL where the value is NULL.
#[derive(Debug, Clone, PartialEq)]
pub struct Collect {
    /// The sort keys' types, each with (descending, NULLs first); the last
    /// is the collected value (for the ordered-set aggregates, the one
    /// key is the value).
    pub fields: Vec<(A, bool, bool)>,
    /// string_agg's delimiter (`None`: NULL, no delimiter).
    pub delimiter: Option<String>,
    /// The fraction of `percentile_cont`/`percentile_disc` (`None`: a
    /// NULL fraction, every answer NULL).
    pub fraction: Option<f64>,
    /// `string_agg(DISTINCT …)`: each value once (its sort key is the
    /// value, so equal values are neighbours once sorted).
    pub distinct: bool,
}

impl Collect {
    /// The row converter of the collected rows' bytes.
    pub fn converter(&self) -> Result<RowConverter> {
        RowConverter::new(
            self.fields
                .iter()
                .map(|(t, desc, nulls_first)| {
                    SortField::new_with_options(
                        t.clone(),
                        arrow_schema::SortOptions {
                            descending: *desc,
                            nulls_first: *nulls_first,
                        },
                    )
                })
                .collect(),
        )
        .map_err(exec_err)
    }

    /// The collected value's type.
    pub fn value_type(&self) -> A {
        self.fields.last().map(|f| f.0.clone()).unwrap_or(A::Null)
    }
}

/// One aggregate call of a query.
#[derive(Debug, Clone)]
pub struct AggCall {
    pub func: AggFunc,
    /// The argument, over the table's columns (`None` for COUNT(*)).
    pub arg: Option<Expr>,
    pub distinct: bool,
    /// Type of the argument.
    pub arg_type: A,
    /// Display form, e.g. `sum(l_quantity)`.
    pub name: String,
    /// For string_agg and the ordered-set aggregates: what they collect.
    pub collect: Option<Arc<Collect>>,
}

impl AggCall {
    /// Result type, as PostgreSQL's: COUNT → BIGINT; SUM of INT → BIGINT
    /// (an error past its range, never a wrapped value); SUM of BIGINT or
    /// DECIMAL → DECIMAL(38, s) (exact, PostgreSQL's `numeric`); SUM of
    /// doubles and every AVG → DOUBLE; MIN/MAX → the argument's type.
    pub fn output_type(&self) -> A {
        match self.func {
            AggFunc::CountStar | AggFunc::Count | AggFunc::ApproxCountDistinct => A::Int64,
            AggFunc::Sum => match &self.arg_type {
                A::Int8 | A::Int16 | A::Int32 => A::Int64,
                A::Int64 => A::Decimal128(38, 0),
                A::Decimal128(_, s) => A::Decimal128(38, *s),
                _ => A::Float64,
            },
            AggFunc::Avg
            | AggFunc::VarSamp
            | AggFunc::VarPop
            | AggFunc::StddevSamp
            | AggFunc::StddevPop => A::Float64,
            AggFunc::BoolAnd | AggFunc::BoolOr => A::Boolean,
            AggFunc::Min | AggFunc::Max => self.arg_type.clone(),
            AggFunc::StringAgg => A::Utf8,
            AggFunc::ArrayAgg => A::List(Arc::new(arrow_schema::Field::new(
                "item",
                self.collect
                    .as_ref()
                    .map(|c| c.value_type())
                    .unwrap_or(A::Null),
                true,
            ))),
            AggFunc::PercentileCont => A::Float64,
            AggFunc::PercentileDisc | AggFunc::Mode => self
                .collect
                .as_ref()
                .map(|c| c.value_type())
                .unwrap_or(A::Null),
        }
    }
}

/// One aggregate's input for a batch.
pub enum AggInput<'a> {
    /// COUNT(*): no argument.
    Star,
    /// The evaluated argument.
    Array(ArrayRef),
    /// The argument computed by the integer fast path: values at the
    /// call's scale, and the NULL rows.
    Ints(&'a [i128], Option<arrow_buffer::NullBuffer>),
    /// The same, when every value fitted 64 bits.
    Ints64(&'a [i64], Option<arrow_buffer::NullBuffer>),
}

/// Per-group state of one aggregate.
#[derive(Clone)]
enum Acc {
    Count(Vec<i64>),
    /// Integer or decimal sum (unscaled) and whether any value was seen.
    SumInt(Vec<i128>, Vec<bool>),
    SumFloat(Vec<f64>, Vec<bool>),
    AvgInt(Vec<i128>, Vec<i64>, i8),
    AvgFloat(Vec<f64>, Vec<i64>),
    /// Min/max of anything orderable, kept as row-format bytes.
    MinMax(Vec<Option<Box<[u8]>>>, bool),
    Distinct(Vec<HashSet<Box<[u8]>>>),
    /// COUNT(DISTINCT) of integers and decimals: the values themselves
    /// (unscaled), not their row-format bytes; a bitmap while they are
    /// dense (see [`super::intset`]).
    DistinctInt(Vec<IntSet>),
    /// Variances: per group a [`VarState`].
    Var(Vec<VarState>),
    /// `bool_and` (true) or `bool_or` (false): NULL until a value is seen.
    Bool(Vec<Option<bool>>, bool),
    /// string_agg and the ordered-set aggregates: each group's rows as
    /// row-format bytes (see [`Collect`]), sorted when finished.
    Collect(Vec<Vec<Box<[u8]>>>),
    /// approx_count_distinct: per group a sketch of its values' hashes.
    Approx(Vec<hll::Hll>),
}

/// A group's variance so far: Welford's count, mean and sum of squared
/// differences from the mean, of the values less a shift (the group's
/// first value: integers and decimals subtracted exactly, unscaled, so
/// that values far from zero and close together, BIGINTs near the
/// largest, keep their digits); doubles that are not finite counted
/// apart (the result is then NaN, as PostgreSQL's).
#[derive(Debug, Clone, Copy, Default)]
pub struct VarState {
    n: f64,
    mean: f64,
    m2: f64,
    /// The shift of integers and decimals (unscaled), or of doubles.
    ishift: i128,
    fshift: f64,
    /// Values that are NaN or infinite.
    odd: u64,
}

impl VarState {
    fn add(&mut self, d: f64) {
        self.n += 1.0;
        let delta = d - self.mean;
        self.mean += delta / self.n;
        self.m2 += delta * (d - self.mean);
    }

    fn add_int(&mut self, x: i128) {
        if self.n == 0.0 {
            self.ishift = x;
        }
        self.add((x - self.ishift) as f64);
    }

    fn add_float(&mut self, x: f64) {
        if !x.is_finite() {
            self.odd += 1;
            return;
        }
        if self.n == 0.0 {
            self.fshift = x;
        }
        self.add(x - self.fshift);
    }

    /// Two states as one (Chan et al.), `b`'s mean moved to `self`'s shift.
    fn merge(&mut self, b: &VarState) {
        self.odd += b.odd;
        if b.n == 0.0 {
            return;
        }
        if self.n == 0.0 {
            let odd = self.odd;
            *self = *b;
            self.odd = odd;
            return;
        }
        let mb = b.mean + (b.ishift - self.ishift) as f64 + (b.fshift - self.fshift);
        let n = self.n + b.n;
        let d = mb - self.mean;
        self.mean += d * b.n / n;
        self.m2 += b.m2 + d * d * self.n * b.n / n;
        self.n = n;
    }
}

/// Byte strings (group keys) in one buffer: one allocation for all of
/// them, not one a group (a high-cardinality GROUP BY makes millions).
#[derive(Default)]
struct KeyArena {
    bytes: Vec<u8>,
    /// Where each key ends, once keys of two widths have come; until
    /// then empty: keys of one width (a group key of integers, dates,
    /// decimals: 9 bytes a BIGINT) need no offsets, 8 bytes a group
    /// (TPC-H Q18's 15 M groups at SF 10: 120 MB).
    ends: Vec<usize>,
    /// The width of every key while they are all of one.
    width: usize,
    count: usize,
}

impl KeyArena {
    fn push(&mut self, key: &[u8]) {
        if self.count == 0 {
            self.width = key.len();
        }
        if self.ends.is_empty() && key.len() != self.width {
            // Another width: the keys so far get their ends.
            let w = self.width;
            self.ends = (1..=self.count).map(|i| i * w).collect();
        }
        self.bytes.extend_from_slice(key);
        self.count += 1;
        if !self.ends.is_empty() || key.len() != self.width {
            self.ends.push(self.bytes.len());
        }
    }

    fn get(&self, i: usize) -> &[u8] {
        if self.ends.is_empty() {
            return &self.bytes[i * self.width..(i + 1) * self.width];
        }
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    fn len(&self) -> usize {
        self.count
    }
}

fn key_hash(key: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::default().hash_one(key)
}

/// Groups and their aggregate states.
pub struct GroupTable {
    key_conv: Option<RowConverter>,
    /// Each group's key in the row format, all in one buffer.
    keys: KeyArena,
    /// Groups by the hash of their key: the first of a chain (see
    /// `chain`), once there are more than [`FEW_GROUPS`]. Groups are
    /// linked in when a key is next looked up this way (see
    /// [`GroupTable::group_of`]): paths that find groups by their own
    /// index (dense keys, packed keys) never pay for this one.
    map: HashMap<u64, u32>,
    /// Groups linked into `map` so far.
    indexed: usize,
    /// Groups of one integer key by its value (see [`Dense`]); `None`
    /// when not used, or no longer.
    dense: Option<Dense>,
    /// The dense index was given up (a key outside its limits, a NULL,
    /// a lookup by another path): not tried again.
    dense_off: bool,
    /// Rows the dense index has grouped (its size limit grows with them).
    dense_rows: usize,
    /// Rows the table will be given in all, when known (see
    /// [`GroupTable::expect_rows`]): the dense index's limit counts them
    /// from the first morsel on.
    expected_rows: usize,
    /// The range of the key's values, when known before the first morsel
    /// (the zone maps of the segments read): the dense index takes it
    /// whole at once, no slots moved as the keys grow.
    expected_range: Option<(i64, i64)>,
    /// The next group of the same key hash (`u32::MAX`: none), for the
    /// groups linked into `map`.
    chain: Vec<u32>,
    accs: Vec<Acc>,
    /// Row converters for MIN/MAX/COUNT(DISTINCT) values.
    value_convs: Vec<Option<RowConverter>>,
    calls: Arc<Vec<AggCall>>,
    groups: usize,
    /// Packed keys seen so far and their groups (see [`pack_keys`]).
    packed: Vec<(u128, u32)>,
    packed_map: HashMap<u128, u32>,
    /// Direct-mapped cache of packed keys to groups (`u32::MAX`: empty).
    cache: Vec<(u128, u32)>,
    /// Groups of one-byte keys by code (see [`byte_codes`]); empty until used.
    code_table: Vec<u32>,
    /// Groups by dictionary code, per pair of dictionaries.
    dict_tables: Vec<(DictIdent, Vec<u32>)>,
    /// Bytes the accumulators hold beyond their per-group vectors: the
    /// values of MIN/MAX, COUNT(DISTINCT) and the collecting aggregates
    /// (an estimate kept as they are added; see [`GroupTable::bytes`]).
    heap: usize,
}

/// Groups of a single INT, BIGINT or DATE key by its value: `slots[k -
/// base]` is key k's group (`u32::MAX`: none yet). A key of a few
/// million close values (an order number, a date) finds its group by
/// one subtraction and one load, where a hash table takes a hash and
/// a probe, and a new group costs no hash table insert. Used while every
/// group of the table came from it (see [`GroupTable::groups_dense`]).
struct Dense {
    base: i64,
    slots: Vec<u32>,
    /// The key is 32 bits wide (INT, DATE), else 64 (BIGINT): how it
    /// packs (see [`pack_keys`]) when the table leaves this index.
    narrow: bool,
}

impl Dense {
    /// Makes the slots cover `len` keys from `base` (a range holding the
    /// present one), each slot so far moved to its place in it.
    fn move_to(&mut self, base: i64, len: usize) {
        let mut slots = vec![u32::MAX; len];
        let at = (self.base - base) as usize;
        slots[at..at + self.slots.len()].copy_from_slice(&self.slots);
        self.slots = slots;
        self.base = base;
    }
}

/// Most slots a dense index may have (512 MiB of them: the orders of
/// TPC-H at scale factor 30).
const DENSE_MAX_SLOTS: usize = 1 << 27;
/// Slots a dense index may have per row it has grouped, and beyond that
/// count: keys spread wider than that take the hash table.
const DENSE_SLOTS_PER_ROW: usize = 8;
const DENSE_MIN_SLOTS: usize = 1 << 16;

/// Which pair of dictionaries a code table belongs to: their values
/// arrays, held. Held, not only named by address: a segment's
/// dictionary freed after its morsel leaves its address to the next
/// allocation, often the next segment's dictionary of the same column,
/// of the same size and other order (TPC-H's `l_returnflag` lists A, N,
/// R in another order in each segment), and a code table found by a
/// reused address would put the rows of one value into another's group.
/// While the table holds the arrays, their addresses cannot be reused.
#[derive(Clone)]
struct DictIdent {
    values: [Option<ArrayRef>; 2],
}

impl DictIdent {
    fn is(&self, d1: &ArrayRef, d2: Option<&ArrayRef>) -> bool {
        let same = |held: &Option<ArrayRef>, d: Option<&ArrayRef>| match (held, d) {
            (Some(h), Some(d)) => Arc::ptr_eq(h, d),
            (None, None) => true,
            _ => false,
        };
        same(&self.values[0], Some(d1)) && same(&self.values[1], d2)
    }
}

/// `a + b` of doubles as PostgreSQL adds them in SUM and AVG: a finite
/// sum of finite values, else an overflow error (SQLSTATE 22003); an
/// infinite value summed stays infinite.
fn add_f64(a: f64, b: f64) -> Result<f64> {
    let s = a + b;
    if s.is_infinite() && a.is_finite() && b.is_finite() {
        return Err(Error::OutOfRange("value out of range: overflow".into()));
    }
    Ok(s)
}

/// Slots of the packed-key cache.
const CACHE_SLOTS: usize = 256;

fn cache_slot(k: u128) -> usize {
    let h = (k as u64) ^ ((k >> 64) as u64).rotate_left(29);
    (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % CACHE_SLOTS
}

/// A selection mask as 64-bit words (bit r of word r / 64 is row r).
fn sel_words(sel: Option<&BooleanArray>) -> Option<Vec<u64>> {
    sel.map(|m| m.values().bit_chunks().iter_padded().collect())
}

/// Whether row `r` is excluded by a selection (see [`sel_words`]).
#[inline]
fn excluded(words: Option<&[u64]>, r: usize) -> bool {
    words.is_some_and(|w| (w[r >> 6] >> (r & 63)) & 1 == 0)
}

/// Up to this many groups, a linear scan over the keys beats hashing.
const FEW_GROUPS: usize = 8;

/// Bytes of an entry of `map` (a key hash and a group) and of
/// `packed_map` (a packed key, aligned to 16, and a group).
const MAP_ENTRY: usize = std::mem::size_of::<(u64, u32)>();
const PACKED_ENTRY: usize = std::mem::size_of::<(u128, u32)>();

/// Bytes of a hash map (hashbrown: buckets a power of two, at most 7/8
/// of them full, an entry and a control byte each) of `cap` capacity.
fn map_bytes(cap: usize, each: usize) -> usize {
    if cap == 0 {
        return 0;
    }
    let buckets = if cap < 8 {
        (cap + 1).next_power_of_two()
    } else {
        (cap * 8 / 7).next_power_of_two()
    };
    buckets * (each + 1)
}

/// An accumulator's per-group vectors: (length, capacity, bytes an item).
fn acc_vectors(a: &Acc) -> Vec<(usize, usize, usize)> {
    use std::mem::size_of;
    let v = |len: usize, cap: usize, each: usize| (len, cap, each);
    match a {
        Acc::Count(x) => vec![v(x.len(), x.capacity(), 8)],
        Acc::SumInt(x, s) => vec![v(x.len(), x.capacity(), 16), v(s.len(), s.capacity(), 1)],
        Acc::SumFloat(x, s) => vec![v(x.len(), x.capacity(), 8), v(s.len(), s.capacity(), 1)],
        Acc::AvgInt(x, n, _) => vec![v(x.len(), x.capacity(), 16), v(n.len(), n.capacity(), 8)],
        Acc::AvgFloat(x, n) => vec![v(x.len(), x.capacity(), 8), v(n.len(), n.capacity(), 8)],
        Acc::MinMax(x, _) => vec![v(x.len(), x.capacity(), 16)],
        Acc::Distinct(x) => vec![v(x.len(), x.capacity(), size_of::<HashSet<Box<[u8]>>>())],
        Acc::DistinctInt(x) => vec![v(x.len(), x.capacity(), size_of::<IntSet>())],
        Acc::Var(x) => vec![v(x.len(), x.capacity(), size_of::<VarState>())],
        Acc::Bool(x, _) => vec![v(x.len(), x.capacity(), 2)],
        Acc::Collect(x) => vec![v(x.len(), x.capacity(), 24)],
        Acc::Approx(x) => vec![v(x.len(), x.capacity(), size_of::<hll::Hll>())],
    }
}

/// Each row's hash for approx_count_distinct: integers (dates and
/// decimals too) by their value, other values by their row-format bytes
/// (doubles made canonical first: `-0.0` is `0.0`, every NaN one). A
/// call's values are of one type, so equal values hash equally.
fn approx_hashes(a: &ArrayRef, conv: &RowConverter) -> Result<Vec<u64>> {
    fn by_value<T: ArrowPrimitiveType>(a: &ArrayRef, f: impl Fn(T::Native) -> i128) -> Vec<u64> {
        a.as_primitive::<T>()
            .values()
            .iter()
            .map(|&v| hll::hash_int(f(v)))
            .collect()
    }
    Ok(match a.data_type() {
        A::Int64 => by_value::<Int64Type>(a, i128::from),
        A::Int32 => by_value::<Int32Type>(a, i128::from),
        A::Date32 => by_value::<Date32Type>(a, i128::from),
        A::Decimal128(..) => by_value::<Decimal128Type>(a, |v| v),
        _ => {
            let a = canonical_doubles(a);
            let rows = conv
                .convert_columns(std::slice::from_ref(&a))
                .map_err(exec_err)?;
            rows.iter().map(|r| hll::hash(r.as_ref())).collect()
        }
    })
}

/// Bytes a boxed value takes beyond its own: the box's pointer and
/// length, and the allocator's rounding.
const BOX_BYTES: usize = 32;
/// Bytes a hash set entry of a boxed value takes beyond the value.
const SET_ENTRY_BYTES: usize = 48;
/// Bytes a value of an integer set takes, at most (a bitmap's words
/// per value, or a hash set's entry).
const INT_SET_BYTES: usize = 32;

impl GroupTable {
    pub fn new(key_types: &[A], calls: Arc<Vec<AggCall>>) -> Result<Self> {
        let key_conv = if key_types.is_empty() {
            None
        } else {
            Some(
                RowConverter::new(
                    key_types
                        .iter()
                        .map(|t| SortField::new(t.clone()))
                        .collect(),
                )
                .map_err(exec_err)?,
            )
        };
        let mut accs = Vec::new();
        let mut value_convs = Vec::new();
        for c in calls.iter() {
            let (acc, conv) = match (c.func, c.distinct) {
                (AggFunc::Count, true)
                    if matches!(c.arg_type, A::Int32 | A::Int64 | A::Decimal128(..)) =>
                {
                    (Acc::DistinctInt(vec![]), None)
                }
                (AggFunc::Count, true) => (Acc::Distinct(vec![]), Some(conv_for(&c.arg_type)?)),
                (AggFunc::CountStar | AggFunc::Count, _) => (Acc::Count(vec![]), None),
                (AggFunc::ApproxCountDistinct, _) => {
                    (Acc::Approx(vec![]), Some(conv_for(&c.arg_type)?))
                }
                (AggFunc::Sum, _) => match c.arg_type {
                    A::Float64 => (Acc::SumFloat(vec![], vec![]), None),
                    _ => (Acc::SumInt(vec![], vec![]), None),
                },
                (AggFunc::Avg, _) => match c.arg_type {
                    A::Float64 => (Acc::AvgFloat(vec![], vec![]), None),
                    A::Decimal128(_, s) => (Acc::AvgInt(vec![], vec![], s), None),
                    _ => (Acc::AvgInt(vec![], vec![], 0), None),
                },
                (AggFunc::Min, _) => (Acc::MinMax(vec![], false), Some(conv_for(&c.arg_type)?)),
                (AggFunc::Max, _) => (Acc::MinMax(vec![], true), Some(conv_for(&c.arg_type)?)),
                (
                    AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop,
                    _,
                ) => (Acc::Var(vec![]), None),
                (AggFunc::BoolAnd, _) => (Acc::Bool(vec![], true), None),
                (AggFunc::BoolOr, _) => (Acc::Bool(vec![], false), None),
                (
                    AggFunc::StringAgg
                    | AggFunc::ArrayAgg
                    | AggFunc::PercentileCont
                    | AggFunc::PercentileDisc
                    | AggFunc::Mode,
                    _,
                ) => (Acc::Collect(vec![]), None),
            };
            accs.push(acc);
            value_convs.push(conv);
        }
        let mut t = GroupTable {
            key_conv,
            keys: KeyArena::default(),
            map: HashMap::default(),
            indexed: 0,
            dense: None,
            dense_off: false,
            dense_rows: 0,
            expected_rows: 0,
            expected_range: None,
            chain: Vec::new(),
            accs,
            value_convs,
            calls,
            groups: 0,
            packed: Vec::new(),
            packed_map: HashMap::default(),
            cache: vec![(0, u32::MAX); CACHE_SLOTS],
            code_table: Vec::new(),
            dict_tables: Vec::new(),
            heap: 0,
        };
        // Group 0 is a trash group for rows a selection vector excludes: it
        // is updated like any other and never output. Its empty key never
        // equals a row-format key (they have at least one byte a column).
        t.add_group(&[]);
        if t.key_conv.is_none() {
            // A global aggregate has exactly one group, also over no rows.
            t.add_group(&[]);
        }
        Ok(t)
    }

    /// Room for `n` more groups, exactly (see [`Vec::reserve_exact`]).
    fn reserve_groups(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.keys.bytes.reserve_exact(n * self.keys.width);
        if !self.keys.ends.is_empty() {
            self.keys.ends.reserve_exact(n);
        }
        for a in &mut self.accs {
            match a {
                Acc::Count(v) => v.reserve_exact(n),
                Acc::SumInt(v, s) => {
                    v.reserve_exact(n);
                    s.reserve_exact(n);
                }
                Acc::SumFloat(v, s) => {
                    v.reserve_exact(n);
                    s.reserve_exact(n);
                }
                Acc::AvgInt(v, c, _) => {
                    v.reserve_exact(n);
                    c.reserve_exact(n);
                }
                Acc::AvgFloat(v, c) => {
                    v.reserve_exact(n);
                    c.reserve_exact(n);
                }
                Acc::MinMax(v, _) => v.reserve_exact(n),
                Acc::Distinct(v) => v.reserve_exact(n),
                Acc::DistinctInt(v) => v.reserve_exact(n),
                Acc::Collect(v) => v.reserve_exact(n),
                Acc::Var(v) => v.reserve_exact(n),
                Acc::Bool(v, _) => v.reserve_exact(n),
                Acc::Approx(v) => v.reserve_exact(n),
            }
        }
    }

    fn add_group(&mut self, key: &[u8]) -> u32 {
        let g = self.groups as u32;
        self.groups += 1;
        self.keys.push(key);
        for a in &mut self.accs {
            match a {
                Acc::Count(v) => v.push(0),
                Acc::SumInt(v, s) => {
                    v.push(0);
                    s.push(false)
                }
                Acc::SumFloat(v, s) => {
                    v.push(0.0);
                    s.push(false)
                }
                Acc::AvgInt(v, n, _) => {
                    v.push(0);
                    n.push(0)
                }
                Acc::AvgFloat(v, n) => {
                    v.push(0.0);
                    n.push(0)
                }
                Acc::MinMax(v, _) => v.push(None),
                Acc::Distinct(v) => v.push(HashSet::default()),
                Acc::DistinctInt(v) => v.push(IntSet::default()),
                Acc::Collect(v) => v.push(Vec::new()),
                Acc::Var(v) => v.push(VarState::default()),
                Acc::Bool(v, _) => v.push(None),
                Acc::Approx(v) => v.push(hll::Hll::default()),
            }
        }
        g
    }

    /// The group of row `r` of the key columns (created if new), through
    /// the row format: every fast path creates groups this way, so a key
    /// gets the same group whichever path found it.
    fn group_of_row(&mut self, keys: &[ArrayRef], r: usize) -> Result<u32> {
        let conv = self
            .key_conv
            .as_ref()
            .ok_or_else(|| Error::Internal("no key converter".into()))?;
        let one = keys
            .iter()
            .map(|c| crate::batch::dict::decode(&c.slice(r, 1)))
            .collect::<Result<Vec<_>>>()?;
        let row = conv.convert_columns(&one).map_err(exec_err)?;
        Ok(self.group_of(row.row(0).as_ref()))
    }

    fn group_of(&mut self, key: &[u8]) -> u32 {
        // A group made here is not in the dense index.
        self.leave_dense();
        if self.groups <= FEW_GROUPS {
            if let Some(i) = (0..self.groups).position(|i| self.keys.get(i) == key) {
                return i as u32;
            }
        } else {
            // Link the groups made since the last lookup.
            while self.indexed < self.groups {
                self.link(self.indexed as u32);
                self.indexed += 1;
            }
            let mut g = self.map.get(&key_hash(key)).copied().unwrap_or(u32::MAX);
            while g != u32::MAX {
                if self.keys.get(g as usize) == key {
                    return g;
                }
                g = self.chain[g as usize];
            }
        }
        self.add_group(key)
    }

    /// Puts group `g` at the head of its key hash's chain.
    fn link(&mut self, g: u32) {
        let h = key_hash(self.keys.get(g as usize));
        let head = self.map.insert(h, g).unwrap_or(u32::MAX);
        // The chain grows as groups are linked (in order): groups found
        // by another index (dense, packed keys) never take its 4 bytes.
        if self.chain.len() <= g as usize {
            self.chain.resize(g as usize + 1, u32::MAX);
        }
        self.chain[g as usize] = head;
    }

    /// Folds rows in: `keys` are the evaluated group-by columns, `args` the
    /// evaluated aggregate arguments. With `sel`, only the selected rows
    /// count (the others go to the trash group and create no group).
    pub fn update(
        &mut self,
        rows: usize,
        keys: &[ArrayRef],
        args: &[AggInput<'_>],
        sel: Option<&BooleanArray>,
    ) -> Result<()> {
        let groups = self.group_ids(rows, keys, sel)?;
        self.update_groups(&groups, args)
    }

    /// Number of groups so far, the trash group included.
    /// Bytes the table holds: its keys, its indexes and its
    /// accumulators (capacities, not lengths). Costs a step per
    /// aggregate, not per group.
    pub fn bytes(&self) -> usize {
        let vec = |cap: usize, each: usize| cap * each;
        let accs: usize = self
            .accs
            .iter()
            .flat_map(acc_vectors)
            .map(|(_, cap, each)| vec(cap, each))
            .sum();
        self.keys.bytes.capacity()
            + vec(self.keys.ends.capacity(), 8)
            + map_bytes(self.map.capacity(), MAP_ENTRY)
            + vec(self.chain.capacity(), 4)
            + vec(self.packed.capacity(), 32)
            + map_bytes(self.packed_map.capacity(), PACKED_ENTRY)
            + vec(self.cache.capacity(), 32)
            + vec(self.code_table.capacity(), 4)
            + self
                .dense
                .as_ref()
                .map_or(0, |d| vec(d.slots.capacity(), 4))
            + self
                .dict_tables
                .iter()
                .map(|(_, t)| vec(t.capacity(), 4))
                .sum::<usize>()
            + accs
            + self.heap
    }

    /// Bytes the table may take more, at its peak, when `n` more groups
    /// come: each of its growing vectors and maps already in use that
    /// would not hold them takes a new buffer (a vector doubles, a map
    /// doubles its buckets) and lets the old one go once copied, one at a
    /// time — so the peak is the larger of all of them grown and the
    /// largest one's old and new buffers held at once. A structure not
    /// used yet grows by at most `n` entries (bounded by the morsel). The
    /// values of DISTINCT and collecting aggregates are not foreseen.
    pub fn growth_for(&self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        // (new buffer, old buffer) of each structure that would grow.
        let mut grown: Vec<(usize, usize)> = Vec::new();
        let vec = |grown: &mut Vec<(usize, usize)>, len: usize, cap: usize, each: usize| {
            if cap > 0 && len + n > cap {
                grown.push(((len + n).max(2 * cap) * each, cap * each));
            }
        };
        let key_len = if self.keys.count > 0 {
            self.keys.bytes.len().div_ceil(self.keys.count)
        } else {
            self.keys.width
        };
        {
            let (len, cap) = (self.keys.bytes.len(), self.keys.bytes.capacity());
            if cap > 0 && len + n * key_len > cap {
                grown.push(((len + n * key_len).max(2 * cap), cap));
            }
        }
        vec(
            &mut grown,
            self.keys.ends.len(),
            self.keys.ends.capacity(),
            8,
        );
        vec(&mut grown, self.chain.len(), self.chain.capacity(), 4);
        vec(&mut grown, self.packed.len(), self.packed.capacity(), 32);
        for (len, cap, each) in self.accs.iter().flat_map(acc_vectors) {
            vec(&mut grown, len, cap, each);
        }
        for (len, cap, each) in [
            (self.map.len(), self.map.capacity(), MAP_ENTRY),
            (
                self.packed_map.len(),
                self.packed_map.capacity(),
                PACKED_ENTRY,
            ),
        ] {
            if cap > 0 && len + n > cap {
                grown.push((
                    map_bytes((len + n).max(2 * cap), each),
                    map_bytes(cap, each),
                ));
            }
        }
        let after: usize = grown.iter().map(|(new, old)| new - old.min(new)).sum();
        let one_at_a_time = grown.iter().map(|(new, _)| *new).max().unwrap_or(0);
        after.max(one_at_a_time)
    }

    pub fn groups(&self) -> usize {
        self.groups
    }

    /// Says how many rows the query's input holds in all (the rows of its
    /// morsels, before filters), so that the dense index takes keys that
    /// come in no order from the first morsel on: a join's output in probe
    /// order gives each morsel of 64 Ki rows keys from the whole range of
    /// customers (TPC-H Q13), which the limit of rows grouped so far
    /// refused, for good. Its slots stay within 8 a row of the input
    /// (32 bytes), counted in the table's bytes.
    pub fn expect_rows(&mut self, rows: usize) {
        self.expected_rows = rows;
    }

    /// Tells the table that its one integer key lies in `lo..=hi`: the
    /// dense index, when the keys take it, covers that range from the
    /// first morsel (TPC-H Q18's `GROUP BY l_orderkey` at SF 10: 60 M
    /// slots at once, where slots doubled as the keys grew, up to twice
    /// the range, each doubling a copy).
    pub fn expect_range(&mut self, lo: i64, hi: i64) {
        self.expected_range = (lo <= hi).then_some((lo, hi));
    }

    /// Each row's group, creating groups for new keys; rows that `sel`
    /// excludes go to the trash group 0 and create none.
    pub fn group_ids(
        &mut self,
        rows: usize,
        keys: &[ArrayRef],
        sel: Option<&BooleanArray>,
    ) -> Result<Vec<u32>> {
        // -0.0 and 0.0 are one group, and so is every NaN.
        let canonical: Vec<ArrayRef>;
        let keys = if keys.iter().any(|k| k.data_type() == &A::Float64) {
            canonical = keys.iter().map(canonical_doubles).collect();
            &canonical[..]
        } else {
            keys
        };
        Ok(match &self.key_conv {
            None => match sel {
                None => vec![1; rows],
                Some(m) => m.values().iter().map(|b| b as u32).collect(),
            },
            Some(_)
                if keys
                    .iter()
                    .any(|k| matches!(k.data_type(), A::Dictionary(..))) =>
            {
                match self.groups_dict(keys, rows, sel)? {
                    Some(g) => g,
                    None => {
                        let plain = keys
                            .iter()
                            .map(crate::batch::dict::decode)
                            .collect::<Result<Vec<_>>>()?;
                        return self.group_ids(rows, &plain, sel);
                    }
                }
            }
            Some(_) => {
                if let Some(g) = self.groups_dense(keys, sel)? {
                    return Ok(g);
                }
                self.leave_dense();
                if let Some(codes) = byte_codes(keys, rows) {
                    self.groups_coded(keys, &codes, sel)?
                } else {
                    match pack_keys(keys, rows) {
                        Some(packed) => self.groups_packed(keys, &packed, sel)?,
                        None => self.groups_rows(keys, sel)?,
                    }
                }
            }
        })
    }

    /// Group ids for one or two dictionary-encoded key columns without
    /// NULLs: a table per pair of dictionaries, indexed by the combined
    /// code, holds the group. `None`: these keys need the general path.
    fn groups_dict(
        &mut self,
        keys: &[ArrayRef],
        rows: usize,
        sel: Option<&BooleanArray>,
    ) -> Result<Option<Vec<u32>>> {
        if keys.is_empty() || keys.len() > 2 {
            return Ok(None);
        }
        let mut dicts = Vec::with_capacity(2);
        for k in keys {
            match k.as_dictionary_opt::<UInt16Type>() {
                Some(d) if d.logical_null_count() == 0 => dicts.push(d),
                _ => return Ok(None),
            }
        }
        let size = |d: &arrow_array::DictionaryArray<UInt16Type>| d.values().len();
        let d1 = size(dicts[0]);
        let d2 = dicts.get(1).map_or(1, |d| size(d));
        if d1.saturating_mul(d2) > 1 << 16 {
            return Ok(None);
        }
        let v1 = dicts[0].values();
        let v2 = dicts.get(1).map(|d| d.values());
        let t = match self.dict_tables.iter().position(|t| t.0.is(v1, v2)) {
            Some(t) => t,
            None => {
                if self.dict_tables.len() >= 64 {
                    self.dict_tables.clear();
                }
                let ident = DictIdent {
                    values: [Some(v1.clone()), v2.cloned()],
                };
                self.dict_tables.push((ident, vec![u32::MAX; d1 * d2]));
                self.dict_tables.len() - 1
            }
        };
        let k1 = dicts[0].keys().values();
        let codes: Vec<usize> = match dicts.get(1) {
            None => k1.iter().map(|&k| k as usize).collect(),
            Some(d) => k1
                .iter()
                .zip(d.keys().values().iter())
                .map(|(&a, &b)| a as usize + d1 * b as usize)
                .collect(),
        };
        let words = sel_words(sel);
        let mut out = Vec::with_capacity(rows);
        for (r, &code) in codes.iter().enumerate() {
            if excluded(words.as_deref(), r) {
                out.push(0);
                continue;
            }
            let Some(&g) = self.dict_tables[t].1.get(code) else {
                return Ok(None);
            };
            if g != u32::MAX {
                out.push(g);
                continue;
            }
            // A new code: find or create its group through the row format.
            let g = self.group_of_row(keys, r)?;
            self.dict_tables[t].1[code] = g;
            out.push(g);
        }
        Ok(Some(out))
    }

    /// Group ids through the dense index (see [`Dense`]): one INT, BIGINT
    /// or DATE key without NULLs whose values, with those grouped so far,
    /// span at most [`DENSE_SLOTS_PER_ROW`] slots a row grouped (and at
    /// most [`DENSE_MAX_SLOTS`]). `None`: not these keys (the caller
    /// leaves the index then).
    fn groups_dense(
        &mut self,
        keys: &[ArrayRef],
        sel: Option<&BooleanArray>,
    ) -> Result<Option<Vec<u32>>> {
        if self.dense_off || keys.len() != 1 || (self.dense.is_none() && self.groups != 1) {
            return Ok(None);
        }
        let key = &keys[0];
        if key.logical_null_count() > 0
            || self
                .dense
                .as_ref()
                .is_some_and(|d| d.narrow != matches!(key.data_type(), A::Int32 | A::Date32))
        {
            return Ok(None);
        }
        let wide = |v: &[i32]| -> Vec<i64> { v.iter().map(|&v| v as i64).collect() };
        let (values, narrow): (Vec<i64>, bool) = match key.data_type() {
            A::Int64 => (key.as_primitive::<Int64Type>().values().to_vec(), false),
            A::Int32 => (wide(key.as_primitive::<Int32Type>().values()), true),
            A::Date32 => (wide(key.as_primitive::<Date32Type>().values()), true),
            _ => return Ok(None),
        };
        let Some((lo, hi)) = values
            .iter()
            .fold(None, |acc: Option<(i64, i64)>, &v| match acc {
                None => Some((v, v)),
                Some((a, b)) => Some((a.min(v), b.max(v))),
            })
        else {
            return Ok(Some(Vec::new()));
        };
        let (lo, hi) = match &self.dense {
            Some(d) => (
                lo.min(d.base),
                hi.max(d.base.saturating_add(d.slots.len() as i64 - 1)),
            ),
            None => (lo, hi),
        };
        let limit = (self.dense_rows + values.len())
            .max(self.expected_rows)
            .saturating_mul(DENSE_SLOTS_PER_ROW)
            .saturating_add(DENSE_MIN_SLOTS)
            .min(DENSE_MAX_SLOTS);
        // Keys within the range expected, when it is within the limit:
        // the index covers all of it.
        let (lo, hi) = match self.expected_range {
            Some((elo, ehi))
                if elo <= lo && hi <= ehi && (ehi as i128 - elo as i128) < limit as i128 =>
            {
                (elo, ehi)
            }
            _ => (lo, hi),
        };
        let span = (hi as i128 - lo as i128 + 1) as u128;
        if span > limit as u128 {
            return Ok(None);
        }
        self.dense_rows += values.len();
        let span = span as usize;
        let d = self.dense.get_or_insert_with(|| Dense {
            base: lo,
            slots: Vec::new(),
            narrow,
        });
        if d.slots.len() != span || d.base != lo {
            // Widen, at least to twice the slots (a key growing a morsel
            // at a time copies each slot a few times, not once a morsel),
            // toward the side the keys grow; the slots so far move to
            // their place in the new range.
            let wide = span.max(d.slots.len() * 2).min(limit);
            let base = if lo < d.base && !d.slots.is_empty() {
                (hi as i128 + 1 - wide as i128).max(i64::MIN as i128) as i64
            } else {
                lo
            };
            let room = (i64::MAX as i128 - base as i128 + 1).min(DENSE_MAX_SLOTS as i128);
            let wide = wide.min(room as usize);
            d.move_to(base, wide);
        }
        let words = sel_words(sel);
        let mut out = Vec::with_capacity(values.len());
        let mut fresh: Vec<u32> = Vec::new();
        let first_new = self.groups;
        for (r, &v) in values.iter().enumerate() {
            if excluded(words.as_deref(), r) {
                out.push(0);
                continue;
            }
            let slot = &mut d.slots[(v - d.base) as usize];
            if *slot == u32::MAX {
                *slot = (first_new + fresh.len()) as u32;
                fresh.push(r as u32);
            }
            out.push(*slot);
        }
        self.add_fresh(keys, fresh)?;
        Ok(Some(out))
    }

    /// Makes a group for each row of `fresh` (rows of new keys, in the
    /// order their ids were given), with one row-format conversion.
    fn add_fresh(&mut self, keys: &[ArrayRef], fresh: Vec<u32>) -> Result<()> {
        if fresh.is_empty() {
            return Ok(());
        }
        let conv = self
            .key_conv
            .as_ref()
            .ok_or_else(|| Error::Internal("no key converter".into()))?;
        let idx = arrow_array::UInt32Array::from(fresh);
        let cols = keys
            .iter()
            .map(|c| {
                let c = crate::batch::dict::decode(c)?;
                arrow_select::take::take(&c, &idx, None).map_err(exec_err)
            })
            .collect::<Result<Vec<_>>>()?;
        let rows = conv.convert_columns(&cols).map_err(exec_err)?;
        for i in 0..rows.num_rows() {
            self.add_group(rows.row(i).as_ref());
        }
        Ok(())
    }

    /// Stops using the dense index: its groups become packed keys (see
    /// [`Self::groups_packed`]), so that path finds them without the
    /// row format, and it is not tried again.
    fn leave_dense(&mut self) {
        let Some(d) = self.dense.take() else {
            return;
        };
        self.dense_off = true;
        for (i, &g) in d.slots.iter().enumerate() {
            if g == u32::MAX {
                continue;
            }
            let k = d.base + i as i64;
            let packed = if d.narrow {
                k as i32 as u32 as u64
            } else {
                k as u64
            };
            self.packed.push((packed as u128, g));
        }
        if self.packed.len() > FEW_GROUPS {
            self.packed_map.extend(self.packed.iter().copied());
        }
    }

    /// Group ids for keys that are one byte each (see [`byte_codes`]): a
    /// table indexed by the code holds the group.
    fn groups_coded(
        &mut self,
        keys: &[ArrayRef],
        codes: &[u16],
        sel: Option<&BooleanArray>,
    ) -> Result<Vec<u32>> {
        if self.code_table.is_empty() {
            self.code_table = vec![u32::MAX; 1 << 16];
        }
        let mut out: Vec<u32> = codes.iter().map(|&c| self.code_table[c as usize]).collect();
        let words = sel_words(sel);
        for (r, g) in out.iter_mut().enumerate() {
            if excluded(words.as_deref(), r) {
                *g = 0;
            } else if *g == u32::MAX {
                // Set by an earlier row of this morsel?
                let known = self.code_table[codes[r] as usize];
                if known != u32::MAX {
                    *g = known;
                    continue;
                }
                let found = self.group_of_row(keys, r)?;
                self.code_table[codes[r] as usize] = found;
                *g = found;
            }
        }
        Ok(out)
    }

    /// Adds the sums of a fused pass (see [`super::fused`]): `rows[g]` rows
    /// per group, `sums[g * programs + p]` per group and program, and
    /// `agg_prog` the program of each aggregate (`None`: COUNT(*)).
    pub fn add_dense(
        &mut self,
        rows: &[i64],
        sums: &[i128],
        programs: usize,
        agg_prog: &[Option<usize>],
    ) -> Result<()> {
        let n = rows.len();
        if n > self.groups || sums.len() != n * programs {
            return Err(Error::Internal("fused sums of another table".into()));
        }
        for (acc, p) in self.accs.iter_mut().zip(agg_prog) {
            match (acc, *p) {
                (Acc::Count(v), None) => v.iter_mut().zip(rows).for_each(|(c, r)| *c += r),
                (Acc::SumInt(v, seen), Some(p)) => {
                    for g in 0..n {
                        v[g] += sums[g * programs + p];
                        seen[g] |= rows[g] > 0;
                    }
                }
                (Acc::AvgInt(v, c, _), Some(p)) => {
                    for g in 0..n {
                        v[g] += sums[g * programs + p];
                        c[g] += rows[g];
                    }
                }
                _ => return Err(Error::Internal("fused input for this aggregate".into())),
            }
        }
        Ok(())
    }

    /// Folds rows in, given each row's group (from [`Self::group_ids`]).
    pub fn update_groups(&mut self, groups: &[u32], args: &[AggInput<'_>]) -> Result<()> {
        let ngroups = self.groups;
        // Rows per group, for few groups: counts, COUNT(*) and AVG reuse it.
        let few = ngroups <= FEW_GROUPS;
        let mut group_rows = [0i64; FEW_GROUPS];
        // Only counts, and integer sums and averages, use them.
        let counted = self
            .accs
            .iter()
            .any(|a| matches!(a, Acc::Count(_) | Acc::SumInt(..) | Acc::AvgInt(..)));
        if few && counted {
            // Four lanes, so that consecutive rows do not update the same
            // counter (a store-to-load dependency on every row otherwise).
            let mut lanes = [[0i64; FEW_GROUPS]; 4];
            for (r, &g) in groups.iter().enumerate() {
                lanes[r & 3][g as usize] += 1;
            }
            for l in &lanes {
                for (t, x) in group_rows.iter_mut().zip(l) {
                    *t += x;
                }
            }
        }
        for (i, acc) in self.accs.iter_mut().enumerate() {
            if let (Acc::Count(v), AggInput::Star, true) = (&mut *acc, &args[i], few) {
                for (c, n) in v.iter_mut().zip(&group_rows) {
                    *c += n;
                }
                continue;
            }
            // The integer fast path feeds sums and averages directly.
            if let AggInput::Ints64(vals, nulls) = &args[i] {
                let (sums, mut counts): (&mut Vec<i128>, Option<&mut Vec<i64>>) = match acc {
                    Acc::SumInt(v, seen) => {
                        match nulls {
                            None if few => {
                                for (s, n) in seen.iter_mut().zip(&group_rows) {
                                    *s |= *n > 0;
                                }
                            }
                            None => groups.iter().for_each(|&g| seen[g as usize] = true),
                            Some(n) => groups
                                .iter()
                                .enumerate()
                                .filter(|(r, _)| n.is_valid(*r))
                                .for_each(|(_, &g)| seen[g as usize] = true),
                        }
                        (v, None)
                    }
                    Acc::AvgInt(v, n, _) => (v, Some(n)),
                    _ => return Err(Error::Internal("integer input for this aggregate".into())),
                };
                match nulls {
                    None if few => {
                        // Few groups: four lanes of sums, so that consecutive
                        // rows rarely update the same one.
                        let mut lanes = [[0i128; FEW_GROUPS]; 4];
                        for (r, (&g, &x)) in groups.iter().zip(vals.iter()).enumerate() {
                            lanes[r & 3][g as usize] += x as i128;
                        }
                        for l in &lanes {
                            for (t, x) in sums.iter_mut().zip(l) {
                                *t += x;
                            }
                        }
                        if let Some(c) = counts.as_deref_mut() {
                            for (c, n) in c.iter_mut().zip(&group_rows) {
                                *c += n;
                            }
                        }
                    }
                    None => {
                        for (&g, &x) in groups.iter().zip(vals.iter()) {
                            sums[g as usize] += x as i128;
                        }
                        if let Some(c) = counts {
                            groups.iter().for_each(|&g| c[g as usize] += 1);
                        }
                    }
                    Some(nb) => {
                        for (r, (&g, &x)) in groups.iter().zip(vals.iter()).enumerate() {
                            if nb.is_valid(r) {
                                sums[g as usize] += x as i128;
                            }
                        }
                        if let Some(c) = counts {
                            groups
                                .iter()
                                .enumerate()
                                .filter(|(r, _)| nb.is_valid(*r))
                                .for_each(|(_, &g)| c[g as usize] += 1);
                        }
                    }
                }
                continue;
            }
            if let AggInput::Ints(vals, nulls) = &args[i] {
                let valid = |r: usize| nulls.as_ref().is_none_or(|n| n.is_valid(r));
                match acc {
                    Acc::SumInt(v, seen) => {
                        for (r, (&g, &x)) in groups.iter().zip(vals.iter()).enumerate() {
                            if valid(r) {
                                v[g as usize] += x;
                                seen[g as usize] = true;
                            }
                        }
                    }
                    Acc::AvgInt(v, n, _) => {
                        for (r, (&g, &x)) in groups.iter().zip(vals.iter()).enumerate() {
                            if valid(r) {
                                v[g as usize] += x;
                                n[g as usize] += 1;
                            }
                        }
                    }
                    _ => return Err(Error::Internal("integer input for this aggregate".into())),
                }
                continue;
            }
            let arg = match &args[i] {
                AggInput::Array(a) => Some(a),
                _ => None,
            };
            match acc {
                Acc::Count(v) => match arg {
                    None => groups.iter().for_each(|&g| v[g as usize] += 1),
                    Some(a) => {
                        // Logical NULLs: `count(NULL)` is a NullArray,
                        // whose rows are NULL without a validity buffer.
                        let nulls = a.logical_nulls();
                        for (r, &g) in groups.iter().enumerate() {
                            if nulls.as_ref().is_none_or(|n| n.is_valid(r)) {
                                v[g as usize] += 1;
                            }
                        }
                    }
                },
                Acc::SumInt(v, seen) => {
                    let a = arg.ok_or_else(|| Error::Internal("SUM without argument".into()))?;
                    for_each_i128(a, |r, x| {
                        let g = groups[r] as usize;
                        v[g] += x;
                        seen[g] = true;
                    })?;
                }
                Acc::AvgInt(v, n, _) => {
                    let a = arg.ok_or_else(|| Error::Internal("AVG without argument".into()))?;
                    for_each_i128(a, |r, x| {
                        let g = groups[r] as usize;
                        v[g] += x;
                        n[g] += 1;
                    })?;
                }
                Acc::SumFloat(v, seen) => {
                    let a = arg.ok_or_else(|| Error::Internal("SUM without argument".into()))?;
                    for (r, x) in a.as_primitive::<Float64Type>().iter().enumerate() {
                        // Group 0 is the trash group: rows a selection
                        // excluded must not overflow the query.
                        if let Some(x) = x
                            && groups[r] != 0
                        {
                            let g = groups[r] as usize;
                            v[g] = add_f64(v[g], x)?;
                            seen[g] = true;
                        }
                    }
                }
                Acc::AvgFloat(v, n) => {
                    let a = arg.ok_or_else(|| Error::Internal("AVG without argument".into()))?;
                    for (r, x) in a.as_primitive::<Float64Type>().iter().enumerate() {
                        if let Some(x) = x
                            && groups[r] != 0
                        {
                            let g = groups[r] as usize;
                            v[g] = add_f64(v[g], x)?;
                            n[g] += 1;
                        }
                    }
                }
                Acc::MinMax(v, is_max) => {
                    let a =
                        arg.ok_or_else(|| Error::Internal("MIN/MAX without argument".into()))?;
                    let a = &canonical_doubles(a);
                    let conv = self.value_convs[i]
                        .as_ref()
                        .expect("min/max has a converter");
                    let rows_conv = conv.convert_columns(&ordered(a)?).map_err(exec_err)?;
                    for (r, &g) in groups.iter().enumerate() {
                        if a.is_null(r) {
                            continue;
                        }
                        let b = rows_conv.row(r);
                        let b = b.as_ref();
                        let slot = &mut v[g as usize];
                        let better = match slot {
                            None => true,
                            Some(cur) => {
                                if *is_max {
                                    b > &**cur
                                } else {
                                    b < &**cur
                                }
                            }
                        };
                        if better {
                            if slot.is_none() {
                                self.heap += b.len() + BOX_BYTES;
                            }
                            *slot = Some(b.into());
                        }
                    }
                }
                Acc::DistinctInt(v) => {
                    let a = arg.ok_or_else(|| {
                        Error::Internal("COUNT(DISTINCT) without argument".into())
                    })?;
                    // One group (a global aggregate) over integers without
                    // NULLs: the values in bulk.
                    let single = groups
                        .first()
                        .filter(|&&g| groups.iter().all(|&x| x == g))
                        .map(|&g| g as usize);
                    match (single, a.data_type(), a.null_count()) {
                        (Some(g), A::Int64, 0) => {
                            let before = v[g].len();
                            v[g].insert_i64s(a.as_primitive::<Int64Type>().values());
                            self.heap += (v[g].len() - before) * INT_SET_BYTES;
                        }
                        (Some(g), A::Int32, 0) => {
                            let wide: Vec<i64> = a
                                .as_primitive::<Int32Type>()
                                .values()
                                .iter()
                                .map(|&x| x as i64)
                                .collect();
                            let before = v[g].len();
                            v[g].insert_i64s(&wide);
                            self.heap += (v[g].len() - before) * INT_SET_BYTES;
                        }
                        _ => {
                            let mut added = 0;
                            for_each_i128(a, |r, x| {
                                let set = &mut v[groups[r] as usize];
                                let before = set.len();
                                set.insert(x);
                                added += set.len() - before;
                            })?;
                            self.heap += added * INT_SET_BYTES;
                        }
                    }
                }
                Acc::Var(v) => {
                    let a =
                        arg.ok_or_else(|| Error::Internal("VARIANCE without argument".into()))?;
                    if let Some(f) = a.as_primitive_opt::<Float64Type>() {
                        for (r, x) in f.iter().enumerate() {
                            if let Some(x) = x {
                                v[groups[r] as usize].add_float(x);
                            }
                        }
                    } else {
                        for_each_i128(a, |r, x| v[groups[r] as usize].add_int(x))?;
                    }
                }
                Acc::Bool(v, and) => {
                    let a =
                        arg.ok_or_else(|| Error::Internal("BOOL_AND without argument".into()))?;
                    for (r, x) in a.as_boolean().iter().enumerate() {
                        if let Some(x) = x {
                            let slot = &mut v[groups[r] as usize];
                            *slot = Some(match *slot {
                                None => x,
                                Some(y) if *and => x && y,
                                Some(y) => x || y,
                            });
                        }
                    }
                }
                Acc::Collect(v) => {
                    let a = arg.ok_or_else(|| {
                        Error::Internal("a collecting aggregate without argument".into())
                    })?;
                    let b = a.as_binary_opt::<i32>().ok_or_else(|| {
                        Error::Internal(format!("collected rows of {}", a.data_type()))
                    })?;
                    for (r, &g) in groups.iter().enumerate() {
                        // Not the trash group (rows a selection excluded).
                        if g != 0 && b.is_valid(r) {
                            let x = b.value(r);
                            self.heap += x.len() + BOX_BYTES;
                            v[g as usize].push(x.into());
                        }
                    }
                }
                Acc::Distinct(v) => {
                    let a = arg.ok_or_else(|| {
                        Error::Internal("COUNT(DISTINCT) without argument".into())
                    })?;
                    let a = &canonical_doubles(a);
                    let conv = self.value_convs[i]
                        .as_ref()
                        .expect("distinct has a converter");
                    let rows_conv = conv
                        .convert_columns(std::slice::from_ref(a))
                        .map_err(exec_err)?;
                    for (r, &g) in groups.iter().enumerate() {
                        if a.is_valid(r) {
                            let x = rows_conv.row(r);
                            let x = x.as_ref();
                            if v[g as usize].insert(x.into()) {
                                self.heap += x.len() + SET_ENTRY_BYTES;
                            }
                        }
                    }
                }
                Acc::Approx(v) => {
                    let a = arg.ok_or_else(|| {
                        Error::Internal("approx_count_distinct without argument".into())
                    })?;
                    let conv = self.value_convs[i].as_ref().ok_or_else(|| {
                        Error::Internal("approx_count_distinct: no converter".into())
                    })?;
                    let hashes = approx_hashes(a, conv)?;
                    let mut grew: isize = 0;
                    for (r, &g) in groups.iter().enumerate() {
                        // Not the trash group (rows a selection excluded).
                        if g != 0 && a.is_valid(r) {
                            grew += v[g as usize].insert(hashes[r]);
                        }
                    }
                    self.heap = self.heap.saturating_add_signed(grew);
                }
            }
        }
        Ok(())
    }

    /// Group ids through the row format: any key types.
    fn groups_rows(&mut self, keys: &[ArrayRef], sel: Option<&BooleanArray>) -> Result<Vec<u32>> {
        let conv = self
            .key_conv
            .as_ref()
            .ok_or_else(|| Error::Internal("no key converter".into()))?;
        let converted = conv.convert_columns(keys).map_err(exec_err)?;
        let mut out = Vec::with_capacity(converted.num_rows());
        let mut last: Option<u32> = None;
        let words = sel_words(sel);
        for (i, r) in converted.iter().enumerate() {
            if excluded(words.as_deref(), i) {
                out.push(0);
                continue;
            }
            let bytes = r.as_ref();
            // Runs of equal keys skip the lookup.
            if let Some(g) = last
                && self.keys.get(g as usize) == bytes
            {
                out.push(g);
                continue;
            }
            let g = self.group_of(bytes);
            last = Some(g);
            out.push(g);
        }
        Ok(out)
    }

    /// Group ids for keys packed into 128 bits (see [`pack_keys`]): a few
    /// integer compares per row; the row format is built once per new group.
    fn groups_packed(
        &mut self,
        keys: &[ArrayRef],
        packed: &[u128],
        sel: Option<&BooleanArray>,
    ) -> Result<Vec<u32>> {
        let mut out = Vec::with_capacity(packed.len());
        let words = sel_words(sel);
        // When every group so far came from packed keys, a key not among
        // them is a new group: its id is given now and its row-format
        // key made at the end, for all new keys at once (one conversion,
        // not one a group: high-cardinality keys create many).
        let batched = self.packed.len() + 1 == self.groups;
        let mut fresh: Vec<u32> = Vec::new();
        for (r, &k) in packed.iter().enumerate() {
            if excluded(words.as_deref(), r) {
                out.push(0);
                continue;
            }
            // A direct-mapped cache of recent keys: one compare per row.
            let slot = cache_slot(k);
            let (ck, cg) = self.cache[slot];
            if ck == k && cg != u32::MAX {
                out.push(cg);
                continue;
            }
            let found = if self.packed.len() <= FEW_GROUPS {
                self.packed.iter().find(|p| p.0 == k).map(|p| p.1)
            } else {
                self.packed_map.get(&k).copied()
            };
            let g = match found {
                Some(g) => g,
                None => {
                    let g = if batched {
                        fresh.push(r as u32);
                        (self.groups + fresh.len() - 1) as u32
                    } else {
                        self.group_of_row(keys, r)?
                    };
                    self.packed.push((k, g));
                    if self.packed.len() > FEW_GROUPS {
                        if self.packed_map.is_empty() {
                            self.packed_map.extend(self.packed.iter().copied());
                        }
                        self.packed_map.insert(k, g);
                    }
                    g
                }
            };
            self.cache[slot] = (k, g);
            out.push(g);
        }
        self.add_fresh(keys, fresh)?;
        Ok(out)
    }

    /// Where each group of another table's dense index goes in this
    /// one's, both dense over one key type and, together, within
    /// [`DENSE_MAX_SLOTS`]: no key hashed. `None`: the general merge.
    fn merge_dense(&mut self, theirs: &Dense, their_keys: &KeyArena) -> Option<Vec<u32>> {
        let d = self.dense.as_mut()?;
        if d.narrow != theirs.narrow || theirs.slots.is_empty() {
            return (theirs.slots.is_empty() && their_keys.len() == 1).then(|| vec![0]);
        }
        let lo = d.base.min(theirs.base);
        let end = |base: i64, len: usize| base as i128 + len as i128;
        let hi = end(d.base, d.slots.len()).max(end(theirs.base, theirs.slots.len()));
        if hi - lo as i128 > DENSE_MAX_SLOTS as i128 {
            return None;
        }
        let span = (hi - lo as i128) as usize;
        if d.base != lo || d.slots.len() != span {
            d.move_to(lo, span);
        }
        let mut map = vec![0u32; their_keys.len()];
        let at = (theirs.base - lo) as usize;
        let mut fresh: Vec<u32> = Vec::new();
        for (i, &j) in theirs.slots.iter().enumerate() {
            if j == u32::MAX {
                continue;
            }
            let slot = &mut d.slots[at + i];
            if *slot == u32::MAX {
                *slot = (self.groups + fresh.len()) as u32;
                fresh.push(j);
            }
            map[j as usize] = *slot;
        }
        // Their row-format keys are this table's: the same key types.
        // Room for exactly the new groups: a merge of millions (TPC-H
        // Q18's 7.5 M of each worker at SF 10) doubles no vector.
        self.reserve_groups(fresh.len());
        for j in fresh {
            self.add_group(their_keys.get(j as usize));
        }
        Some(map)
    }

    /// Merges another worker's partial table into this one.
    pub fn merge(&mut self, other: GroupTable) -> Result<()> {
        let GroupTable {
            keys,
            accs,
            heap,
            dense,
            ..
        } = other;
        // Values both tables held are counted twice: an overestimate.
        self.heap += heap;
        let map: Vec<u32> = if self.key_conv.is_none() {
            vec![0, 1]
        } else if let Some(m) = dense.and_then(|d| self.merge_dense(&d, &keys)) {
            m
        } else {
            (0..keys.len())
                .map(|i| self.group_of(keys.get(i)))
                .collect()
        };
        combine(&mut self.accs, accs, &map)
    }

    /// Grouping sets: the groups of each set `s` with a base `bases[s]`
    /// (a set holding all of its keys: see [`super::grouping::bases`])
    /// made from that base's groups, their keys outside `sets[s]` NULL,
    /// their states merged, instead of from the rows again: ROLLUP's
    /// coarser sets cost the next finer set's groups, not the rows. The
    /// groups of the sets folded from rows must all be in the table
    /// (after the workers' tables are merged); a base is made before the
    /// sets made from it (it has more keys).
    pub fn roll_up(&mut self, bases: &[Option<usize>], sets: &[Vec<bool>]) -> Result<()> {
        if bases.iter().all(Option::is_none) {
            return Ok(());
        }
        let Some(conv) = &self.key_conv else {
            return Err(Error::Internal("grouping sets without keys".into()));
        };
        let parser = conv.parser();
        // Every group's keys but the trash group's (0); the set number
        // last.
        let mut cols = conv
            .convert_rows((1..self.keys.len()).map(|i| parser.parse(self.keys.get(i))))
            .map_err(exec_err)?;
        let numbers = cols
            .pop()
            .ok_or_else(|| Error::Internal("grouping sets without their numbers".into()))?;
        let Some(numbers) = numbers.as_any().downcast_ref::<arrow_array::Int64Array>() else {
            return Err(Error::Internal(
                "grouping sets without their numbers".into(),
            ));
        };
        // Each set's groups made so far: their keys and group numbers.
        let mut made: Vec<Option<(Vec<ArrayRef>, Vec<u32>)>> = vec![None; sets.len()];
        for (t, base) in bases.iter().enumerate() {
            if base.is_some() {
                continue;
            }
            let at: Vec<u32> = (0..numbers.len() as u32)
                .filter(|&j| numbers.value(j as usize) == t as i64)
                .collect();
            let take = arrow_array::UInt32Array::from(at.clone());
            let keys = cols
                .iter()
                .map(|c| arrow_select::take::take(c.as_ref(), &take, None).map_err(exec_err))
                .collect::<Result<Vec<_>>>()?;
            made[t] = Some((keys, at.iter().map(|j| j + 1).collect()));
        }
        let mut order: Vec<usize> = (0..sets.len()).filter(|&s| bases[s].is_some()).collect();
        order.sort_by_key(|&s| std::cmp::Reverse(sets[s].iter().filter(|&&b| b).count()));
        for s in order {
            let Some(b) = bases[s] else { continue };
            let Some((base_keys, base_groups)) = made[b].as_ref() else {
                return Err(Error::Internal("a grouping set before its base".into()));
            };
            let m = base_groups.len();
            let mut keys: Vec<ArrayRef> = base_keys
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if sets[s].get(i).copied().unwrap_or(false) {
                        c.clone()
                    } else {
                        arrow_array::new_null_array(c.data_type(), m)
                    }
                })
                .collect();
            keys.push(Arc::new(arrow_array::Int64Array::from(vec![s as i64; m])));
            let rows = self
                .key_conv
                .as_ref()
                .ok_or_else(|| Error::Internal("no key converter".into()))?
                .convert_columns(&keys)
                .map_err(exec_err)?;
            let map: Vec<u32> = (0..m)
                .map(|r| self.group_of(rows.row(r).as_ref()))
                .collect();
            let theirs: Vec<Acc> = self.accs.iter().map(|a| a.gather(base_groups)).collect();
            combine(&mut self.accs, theirs, &map)?;
            // This set's groups, each once, for the sets made from it.
            let mut seen = HashSet::<u32>::default();
            let first: Vec<u32> = (0..m as u32)
                .filter(|&r| seen.insert(map[r as usize]))
                .collect();
            keys.pop();
            let take = arrow_array::UInt32Array::from(first.clone());
            let keys = keys
                .iter()
                .map(|c| arrow_select::take::take(c.as_ref(), &take, None).map_err(exec_err))
                .collect::<Result<Vec<_>>>()?;
            made[s] = Some((keys, first.iter().map(|&r| map[r as usize]).collect()));
        }
        Ok(())
    }

    /// The result: group-key columns, then one column per aggregate.
    pub fn finish(self) -> Result<Vec<ArrayRef>> {
        let n = self.groups;
        let mut cols: Vec<ArrayRef> = Vec::new();
        if let Some(conv) = &self.key_conv {
            let parser = conv.parser();
            cols = conv
                .convert_rows((1..self.keys.len()).map(|i| parser.parse(self.keys.get(i))))
                .map_err(exec_err)?;
        }
        for ((acc, call), conv) in self
            .accs
            .into_iter()
            .zip(self.calls.iter())
            .zip(&self.value_convs)
        {
            let out_type = call.output_type();
            let col: ArrayRef = match acc {
                Acc::Count(v) => Arc::new(arrow_array::Int64Array::from(v)),
                Acc::SumInt(v, seen) => sum_array(v, seen, &out_type)?,
                Acc::SumFloat(v, seen) => {
                    let mut b = Float64Builder::with_capacity(n);
                    v.into_iter()
                        .zip(seen)
                        .for_each(|(x, s)| b.append_option(s.then_some(x)));
                    Arc::new(b.finish())
                }
                Acc::AvgInt(v, cnt, scale) => {
                    let div = 10f64.powi(scale as i32);
                    let mut b = Float64Builder::with_capacity(n);
                    for (x, c) in v.into_iter().zip(cnt) {
                        b.append_option((c > 0).then(|| x as f64 / div / c as f64));
                    }
                    Arc::new(b.finish())
                }
                Acc::AvgFloat(v, cnt) => {
                    let mut b = Float64Builder::with_capacity(n);
                    for (x, c) in v.into_iter().zip(cnt) {
                        b.append_option((c > 0).then(|| x / c as f64));
                    }
                    Arc::new(b.finish())
                }
                Acc::MinMax(v, _) => {
                    let conv = conv.as_ref().expect("min/max has a converter");
                    if v.iter().all(Option::is_none) {
                        new_null_array(&out_type, n)
                    } else {
                        // Nulls are rows of a null value: convert a null
                        // stand-in through the same converter.
                        let null_row = conv
                            .convert_columns(&ordered(&new_null_array(&call.arg_type, 1))?)
                            .map_err(exec_err)?;
                        let null_bytes: Box<[u8]> = null_row.row(0).as_ref().into();
                        let parser = conv.parser();
                        let rows: Vec<Box<[u8]>> = v
                            .into_iter()
                            .map(|x| x.unwrap_or_else(|| null_bytes.clone()))
                            .collect();
                        conv.convert_rows(rows.iter().map(|r| parser.parse(r)))
                            .map_err(exec_err)?
                            .pop()
                            .ok_or_else(|| Error::Internal("min/max of no column".into()))?
                    }
                }
                Acc::DistinctInt(v) => {
                    let mut b = Int64Builder::with_capacity(n);
                    v.iter().for_each(|s| b.append_value(s.len() as i64));
                    Arc::new(b.finish())
                }
                Acc::Distinct(v) => {
                    let mut b = Int64Builder::with_capacity(n);
                    v.iter().for_each(|s| b.append_value(s.len() as i64));
                    Arc::new(b.finish())
                }
                Acc::Approx(v) => {
                    let mut b = Int64Builder::with_capacity(n);
                    v.iter().for_each(|s| b.append_value(s.estimate() as i64));
                    Arc::new(b.finish())
                }
                Acc::Var(v) => {
                    let (pop, root) = match call.func {
                        AggFunc::VarPop => (true, false),
                        AggFunc::StddevSamp => (false, true),
                        AggFunc::StddevPop => (true, true),
                        _ => (false, false),
                    };
                    // Decimals were summed unscaled.
                    let scale = match &call.arg_type {
                        A::Decimal128(_, s) => 10f64.powi(2 * *s as i32),
                        _ => 1.0,
                    };
                    let mut b = Float64Builder::with_capacity(n);
                    for (g, st) in v.iter().enumerate() {
                        let all = st.n + st.odd as f64;
                        let d = if pop { all } else { all - 1.0 };
                        // The trash group (rows a selection excluded) is
                        // never output: nothing of it may fail the query.
                        if d <= 0.0 || g == 0 {
                            b.append_null();
                            continue;
                        }
                        if st.odd > 0 {
                            b.append_value(f64::NAN);
                            continue;
                        }
                        let var = st.m2 / (if pop { st.n } else { st.n - 1.0 }) / scale;
                        // Rounding can leave a constant's spread a hair
                        // below zero.
                        let var = if var < 0.0 { 0.0 } else { var };
                        if !var.is_finite() {
                            return Err(Error::OutOfRange("value out of range: overflow".into()));
                        }
                        b.append_value(if root { var.sqrt() } else { var });
                    }
                    Arc::new(b.finish())
                }
                Acc::Bool(v, _) => Arc::new(BooleanArray::from(v)),
                Acc::Collect(v) => {
                    let spec = call.collect.as_ref().ok_or_else(|| {
                        Error::Internal("a collecting aggregate without its rows' form".into())
                    })?;
                    collected(call.func, spec, v, &out_type)?
                }
            };
            // Without the trash group.
            cols.push(col.slice(1, n - 1));
        }
        Ok(cols)
    }
}

/// The results of a collecting aggregate, one per group (the trash group
/// 0 included, as NULL): each group's rows sorted by their bytes, then
/// joined (string_agg), interpolated or picked (the percentiles), or
/// counted in runs (mode).
fn collected(
    func: AggFunc,
    spec: &Collect,
    groups: Vec<Vec<Box<[u8]>>>,
    out: &A,
) -> Result<ArrayRef> {
    let conv = spec.converter()?;
    let parser = conv.parser();
    // Every group's rows in one run, sorted within each group.
    let mut bounds = Vec::with_capacity(groups.len() + 1);
    let mut all: Vec<Box<[u8]>> = Vec::new();
    bounds.push(0usize);
    for (g, mut rows) in groups.into_iter().enumerate() {
        if g == 0 {
            rows.clear();
        }
        rows.sort_unstable();
        if spec.distinct {
            rows.dedup();
        }
        all.extend(rows);
        bounds.push(all.len());
    }
    let value = if all.is_empty() {
        new_null_array(&spec.value_type(), 0)
    } else {
        conv.convert_rows(all.iter().map(|r| parser.parse(r)))
            .map_err(exec_err)?
            .pop()
            .ok_or_else(|| Error::Internal("collected rows without a value".into()))?
    };
    let ranges = bounds.windows(2).map(|w| (w[0], w[1]));
    if func == AggFunc::ArrayAgg {
        let A::List(field) = out else {
            return Err(Error::Internal(format!("array_agg typed {out}")));
        };
        let value = if value.data_type() != field.data_type() {
            arrow_cast::cast(&value, field.data_type()).map_err(exec_err)?
        } else {
            value
        };
        let offsets =
            arrow_buffer::OffsetBuffer::<i32>::from_lengths(bounds.windows(2).map(|w| w[1] - w[0]));
        let valid = arrow_buffer::NullBuffer::from_iter(bounds.windows(2).map(|w| w[1] > w[0]));
        let list = arrow_array::ListArray::try_new(field.clone(), offsets, value, Some(valid))
            .map_err(exec_err)?;
        return Ok(Arc::new(list));
    }
    let Some(fraction) = spec.fraction else {
        return Ok(new_null_array(out, bounds.len() - 1));
    };
    Ok(match func {
        AggFunc::StringAgg => {
            let v = arrow_cast::cast(&value, &A::Utf8).map_err(exec_err)?;
            let v = v.as_string::<i32>();
            let sep = spec.delimiter.as_deref().unwrap_or("");
            let mut b = arrow_array::builder::StringBuilder::new();
            let mut s = String::new();
            for (lo, hi) in ranges {
                if lo == hi {
                    b.append_null();
                    continue;
                }
                s.clear();
                for i in lo..hi {
                    if i > lo {
                        s.push_str(sep);
                    }
                    s.push_str(v.value(i));
                }
                b.append_value(&s);
            }
            Arc::new(b.finish())
        }
        AggFunc::PercentileCont => {
            let v = arrow_cast::cast(&value, &A::Float64).map_err(exec_err)?;
            let v = v.as_primitive::<Float64Type>();
            let f = fraction;
            let mut b = Float64Builder::new();
            for (lo, hi) in ranges {
                if lo == hi {
                    b.append_null();
                    continue;
                }
                // PostgreSQL's: between the rows floor and ceil of
                // f·(n - 1), in the order of the ORDER BY.
                let pos = f * (hi - lo - 1) as f64;
                let (a, c) = (pos.floor(), pos.ceil());
                let x = v.value(lo + a as usize);
                let y = v.value(lo + c as usize);
                b.append_value(if a == c { x } else { x + (pos - a) * (y - x) });
            }
            Arc::new(b.finish())
        }
        AggFunc::PercentileDisc | AggFunc::Mode => {
            let mut picks: Vec<Option<u32>> = Vec::new();
            for (lo, hi) in ranges {
                if lo == hi {
                    picks.push(None);
                    continue;
                }
                let n = hi - lo;
                let at = if func == AggFunc::PercentileDisc {
                    // The first row whose position reaches f·n.
                    let k = (fraction * n as f64).ceil() as usize;
                    lo + k.clamp(1, n) - 1
                } else {
                    // The most frequent value; of equals, the first in
                    // the order (PostgreSQL's).
                    let (mut best, mut best_n, mut i) = (lo, 0, lo);
                    while i < hi {
                        let mut j = i + 1;
                        while j < hi && all[j] == all[i] {
                            j += 1;
                        }
                        if j - i > best_n {
                            (best, best_n) = (i, j - i);
                        }
                        i = j;
                    }
                    best
                };
                picks.push(Some(at as u32));
            }
            let idx = arrow_array::UInt32Array::from(picks);
            let v = arrow_select::take::take(&value, &idx, None).map_err(exec_err)?;
            if v.data_type() != out {
                arrow_cast::cast(&v, out).map_err(exec_err)?
            } else {
                v
            }
        }
        _ => return Err(Error::Internal(format!("{func:?} does not collect"))),
    })
}

/// `theirs` (the states of other groups) merged into `accs`: their
/// group `j` into group `map[j]`.
fn combine(accs: &mut [Acc], theirs: Vec<Acc>, map: &[u32]) -> Result<()> {
    for (mine, theirs) in accs.iter_mut().zip(theirs) {
        match (mine, theirs) {
            (Acc::Count(a), Acc::Count(b)) => {
                map.iter().zip(b).for_each(|(&g, x)| a[g as usize] += x)
            }
            (Acc::SumInt(a, sa), Acc::SumInt(b, sb)) => {
                for (j, &g) in map.iter().enumerate() {
                    a[g as usize] += b[j];
                    sa[g as usize] |= sb[j];
                }
            }
            (Acc::SumFloat(a, sa), Acc::SumFloat(b, sb)) => {
                for (j, &g) in map.iter().enumerate().filter(|(_, g)| **g != 0) {
                    a[g as usize] = add_f64(a[g as usize], b[j])?;
                    sa[g as usize] |= sb[j];
                }
            }
            (Acc::AvgInt(a, na, _), Acc::AvgInt(b, nb, _)) => {
                for (j, &g) in map.iter().enumerate() {
                    a[g as usize] += b[j];
                    na[g as usize] += nb[j];
                }
            }
            (Acc::AvgFloat(a, na), Acc::AvgFloat(b, nb)) => {
                for (j, &g) in map.iter().enumerate().filter(|(_, g)| **g != 0) {
                    a[g as usize] = add_f64(a[g as usize], b[j])?;
                    na[g as usize] += nb[j];
                }
            }
            (Acc::MinMax(a, is_max), Acc::MinMax(b, _)) => {
                for (j, x) in b.into_iter().enumerate() {
                    let Some(x) = x else { continue };
                    let slot = &mut a[map[j] as usize];
                    let better = match slot {
                        None => true,
                        Some(cur) => {
                            if *is_max {
                                x > *cur
                            } else {
                                x < *cur
                            }
                        }
                    };
                    if better {
                        *slot = Some(x);
                    }
                }
            }
            (Acc::DistinctInt(a), Acc::DistinctInt(b)) => {
                for (j, set) in b.into_iter().enumerate() {
                    a[map[j] as usize].extend(set);
                }
            }
            (Acc::Distinct(a), Acc::Distinct(b)) => {
                for (j, set) in b.into_iter().enumerate() {
                    a[map[j] as usize].extend(set);
                }
            }
            (Acc::Approx(a), Acc::Approx(b)) => {
                for (j, sketch) in b.iter().enumerate() {
                    a[map[j] as usize].merge(sketch);
                }
            }
            (Acc::Var(a), Acc::Var(b)) => {
                for (j, st) in b.iter().enumerate() {
                    a[map[j] as usize].merge(st);
                }
            }
            (Acc::Collect(a), Acc::Collect(b)) => {
                for (j, rows) in b.into_iter().enumerate() {
                    a[map[j] as usize].extend(rows);
                }
            }
            (Acc::Bool(a, and), Acc::Bool(b, _)) => {
                for (j, x) in b.into_iter().enumerate() {
                    let Some(x) = x else { continue };
                    let slot = &mut a[map[j] as usize];
                    *slot = Some(match *slot {
                        None => x,
                        Some(y) if *and => x && y,
                        Some(y) => x || y,
                    });
                }
            }
            _ => return Err(Error::Internal("merging different aggregates".into())),
        }
    }
    Ok(())
}

impl Acc {
    /// The states of groups `idx`, in that order.
    fn gather(&self, idx: &[u32]) -> Acc {
        fn pick<T: Clone>(v: &[T], idx: &[u32]) -> Vec<T> {
            idx.iter().map(|&i| v[i as usize].clone()).collect()
        }
        match self {
            Acc::Count(v) => Acc::Count(pick(v, idx)),
            Acc::SumInt(v, s) => Acc::SumInt(pick(v, idx), pick(s, idx)),
            Acc::SumFloat(v, s) => Acc::SumFloat(pick(v, idx), pick(s, idx)),
            Acc::AvgInt(v, n, scale) => Acc::AvgInt(pick(v, idx), pick(n, idx), *scale),
            Acc::AvgFloat(v, n) => Acc::AvgFloat(pick(v, idx), pick(n, idx)),
            Acc::MinMax(v, max) => Acc::MinMax(pick(v, idx), *max),
            Acc::Distinct(v) => Acc::Distinct(pick(v, idx)),
            Acc::DistinctInt(v) => Acc::DistinctInt(pick(v, idx)),
            Acc::Var(v) => Acc::Var(pick(v, idx)),
            Acc::Bool(v, and) => Acc::Bool(pick(v, idx), *and),
            Acc::Collect(v) => Acc::Collect(pick(v, idx)),
            Acc::Approx(v) => Acc::Approx(pick(v, idx)),
        }
    }
}

/// One or two key columns whose values are all one-byte TEXT without
/// NULLs (flags, status codes) as one 16-bit code per row: the first
/// column's byte, then the second's. `None` otherwise.
pub fn byte_codes(keys: &[ArrayRef], rows: usize) -> Option<Vec<u16>> {
    if keys.is_empty() || keys.len() > 2 {
        return None;
    }
    let mut bytes: Vec<&[u8]> = Vec::with_capacity(2);
    for col in keys {
        if col.data_type() != &A::Utf8 || col.logical_null_count() > 0 {
            return None;
        }
        let s = col.as_string::<i32>();
        let offsets = s.value_offsets();
        if !offsets.windows(2).all(|w| w[1] - w[0] == 1) {
            return None;
        }
        let base = offsets[0] as usize;
        bytes.push(s.value_data().get(base..base + rows)?);
    }
    Some(match bytes[..] {
        [a] => a.iter().map(|&x| x as u16).collect(),
        [a, b] => a
            .iter()
            .zip(b)
            .map(|(&x, &y)| x as u16 | (y as u16) << 8)
            .collect(),
        _ => return None,
    })
}

/// Packs up to two key columns into one `u128` per row, 64 bits each:
/// TEXT of at most 7 bytes as its bytes and length, INT and DATE as their
/// value, BOOLEAN as 0/1, NULL as all ones (no value packs to that), and
/// BIGINT as its value when the morsel has no NULL in it. `None` when a
/// column's type or a value does not fit; the row format is used then.
pub fn pack_keys(keys: &[ArrayRef], rows: usize) -> Option<Vec<u128>> {
    if keys.is_empty() || keys.len() > 2 {
        return None;
    }
    let mut out = vec![0u128; rows];
    for (c, col) in keys.iter().enumerate() {
        let shift = 64 * c as u32;
        match col.data_type() {
            A::Utf8 => {
                let s = col.as_string::<i32>();
                let offsets = s.value_offsets();
                let values = s.value_data();
                let nulls = s.logical_nulls();
                // One-byte strings without NULLs (flags, codes): a byte each.
                if nulls.is_none() && offsets.windows(2).all(|w| w[1] - w[0] == 1) {
                    let base = offsets[0] as usize;
                    let bytes = &values[base..base + rows];
                    for (o, &b) in out.iter_mut().zip(bytes) {
                        *o |= ((b as u64 | (1 << 56)) as u128) << shift;
                    }
                    continue;
                }
                for (r, o) in out.iter_mut().enumerate() {
                    let v = if nulls.as_ref().is_some_and(|n| n.is_null(r)) {
                        u64::MAX
                    } else {
                        let (a, b) = (offsets[r] as usize, offsets[r + 1] as usize);
                        let len = b - a;
                        if len > 7 {
                            return None;
                        }
                        // One 8-byte load and a mask instead of a copy of
                        // `len` bytes; near the end of the buffer, a copy.
                        let word = match values.get(a..a + 8) {
                            Some(w) => u64::from_le_bytes(w.try_into().expect("8 bytes")),
                            None => {
                                let mut buf = [0u8; 8];
                                buf[..len].copy_from_slice(&values[a..b]);
                                u64::from_le_bytes(buf)
                            }
                        };
                        let mask = if len == 0 {
                            0
                        } else {
                            u64::MAX >> (64 - 8 * len)
                        };
                        (word & mask) | ((len as u64) << 56)
                    };
                    *o |= (v as u128) << shift;
                }
            }
            A::Int32 | A::Date32 => {
                // Both are 32-bit integers underneath.
                let data = col.to_data();
                let values: &[i32] = data.buffer::<i32>(0);
                let values = &values[..rows];
                for (r, o) in out.iter_mut().enumerate() {
                    let v = if col.is_null(r) {
                        u64::MAX
                    } else {
                        values[r] as u32 as u64
                    };
                    *o |= (v as u128) << shift;
                }
            }
            // Every 64-bit pattern is a value: no room for a NULL mark, so
            // a morsel with NULLs takes the row format.
            A::Int64 if col.logical_null_count() == 0 => {
                let values = &col.as_primitive::<Int64Type>().values()[..rows];
                for (o, &v) in out.iter_mut().zip(values) {
                    *o |= (v as u64 as u128) << shift;
                }
            }
            A::Boolean => {
                let b = col.as_boolean();
                for (r, o) in out.iter_mut().enumerate() {
                    let v = if b.is_null(r) {
                        u64::MAX
                    } else {
                        b.value(r) as u64
                    };
                    *o |= (v as u128) << shift;
                }
            }
            _ => return None,
        }
    }
    Some(out)
}

/// The sums of integers or decimals `v` (unscaled; `seen`: whether the
/// group had a value, else NULL) as `out` ([`AggCall::output_type`]): a
/// BIGINT past its range is PostgreSQL's error, not a wrapped value.
pub(crate) fn sum_array(v: Vec<i128>, seen: Vec<bool>, out: &A) -> Result<ArrayRef> {
    match out {
        A::Int64 => {
            let vals = v
                .into_iter()
                .zip(seen)
                .map(|(x, s)| match s {
                    false => Ok(None),
                    true => i64::try_from(x)
                        .map(Some)
                        .map_err(|_| Error::OutOfRange("bigint out of range".into())),
                })
                .collect::<Result<arrow_array::Int64Array>>()?;
            Ok(Arc::new(vals))
        }
        A::Decimal128(p, s) => {
            let vals: Decimal128Array = v
                .into_iter()
                .zip(seen)
                .map(|(x, s)| s.then_some(x))
                .collect();
            Ok(Arc::new(
                vals.with_precision_and_scale(*p, *s).map_err(exec_err)?,
            ))
        }
        other => Err(Error::Internal(format!("a sum of integers as {other}"))),
    }
}

fn conv_for(t: &A) -> Result<RowConverter> {
    let mut fields = vec![SortField::new(t.clone())];
    if *t == crate::query::interval::TYPE {
        fields.insert(0, SortField::new(A::Decimal128(38, 0)));
    }
    RowConverter::new(fields).map_err(exec_err)
}

/// The columns a value is ordered by in the rows of [`conv_for`]'s
/// converter: itself; an INTERVAL first by PostgreSQL's order of
/// intervals (a month as 30 days: `1 mon` below `40 days`), then by its
/// fields (of equal ones, `30 days` below `1 mon`).
fn ordered(a: &ArrayRef) -> Result<Vec<ArrayRef>> {
    if *a.data_type() != crate::query::interval::TYPE {
        return Ok(vec![a.clone()]);
    }
    let key = crate::query::interval::eval(
        crate::query::interval::Op::Key,
        std::slice::from_ref(a),
        &A::Decimal128(38, 0),
    )?;
    Ok(vec![key, a.clone()])
}

/// Calls `f(row, value)` for every non-null integer or decimal (unscaled).
fn for_each_i128(a: &ArrayRef, mut f: impl FnMut(usize, i128)) -> Result<()> {
    match a.data_type() {
        A::Int32 => a
            .as_primitive::<Int32Type>()
            .iter()
            .enumerate()
            .for_each(|(r, x)| {
                if let Some(x) = x {
                    f(r, x as i128)
                }
            }),
        A::Int64 => {
            let p = a.as_primitive::<Int64Type>();
            if p.null_count() == 0 {
                p.values()
                    .iter()
                    .enumerate()
                    .for_each(|(r, &x)| f(r, x as i128));
            } else {
                p.iter().enumerate().for_each(|(r, x)| {
                    if let Some(x) = x {
                        f(r, x as i128)
                    }
                });
            }
        }
        A::Decimal128(..) => {
            let p = a.as_primitive::<Decimal128Type>();
            if p.null_count() == 0 {
                p.values().iter().enumerate().for_each(|(r, &x)| f(r, x));
            } else {
                p.iter().enumerate().for_each(|(r, x)| {
                    if let Some(x) = x {
                        f(r, x)
                    }
                });
            }
        }
        A::Null => {}
        other => return Err(Error::Internal(format!("integer sum over {other}"))),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_array::{DictionaryArray, StringArray, UInt16Array};

    use super::*;

    #[test]
    fn a_sum_of_int_is_bigint_and_fails_past_its_range() {
        let call = |t: A| AggCall {
            func: AggFunc::Sum,
            arg: None,
            distinct: false,
            arg_type: t,
            name: String::new(),
            collect: None,
        };
        assert_eq!(call(A::Int32).output_type(), A::Int64);
        assert_eq!(call(A::Int64).output_type(), A::Decimal128(38, 0));
        assert_eq!(
            call(A::Decimal128(15, 2)).output_type(),
            A::Decimal128(38, 2)
        );
        let a = sum_array(
            vec![i64::MAX as i128, 7, 0],
            vec![true, true, false],
            &A::Int64,
        )
        .unwrap();
        let a = a
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .unwrap();
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            [Some(i64::MAX), Some(7), None]
        );
        for past in [i64::MAX as i128 + 1, i64::MIN as i128 - 1] {
            let e = sum_array(vec![past], vec![true], &A::Int64).unwrap_err();
            assert!(
                matches!(&e, Error::OutOfRange(m) if m == "bigint out of range"),
                "{e}"
            );
        }
        // A group without values is NULL, whatever its (unused) sum.
        let a = sum_array(vec![i128::MAX], vec![false], &A::Int64).unwrap();
        assert!(a.is_null(0));
    }

    /// Keys told to lie in a range take a dense index of that range at
    /// their first morsel, and it is never moved for later keys in it.
    #[test]
    fn a_range_told_sizes_the_dense_index_once() {
        let mut t = GroupTable::new(&[A::Int64], count_star()).unwrap();
        t.expect_rows(1_000_000);
        t.expect_range(1, 1_000_000);
        for m in 0..10i64 {
            let keys: ArrayRef = Arc::new(arrow_array::Int64Array::from_iter_values(
                (0..1000).map(|i| 1 + m * 100_000 + i),
            ));
            t.group_ids(1000, &[keys], None).unwrap();
            let d = t.dense.as_ref().expect("the dense index");
            assert_eq!((d.base, d.slots.len()), (1, 1_000_000), "morsel {m}");
        }
        assert_eq!(t.groups, 10_001);
        // Not told: the slots grow with the keys.
        let mut t = GroupTable::new(&[A::Int64], count_star()).unwrap();
        t.expect_rows(1_000_000);
        let keys: ArrayRef = Arc::new(arrow_array::Int64Array::from_iter_values(1..=1000));
        t.group_ids(1000, &[keys], None).unwrap();
        assert_eq!(t.dense.as_ref().map(|d| d.slots.len()), Some(1000));
    }

    #[test]
    fn the_key_arena_gives_back_every_key_before_and_after_a_second_width() {
        for first_width in [0usize, 1, 9] {
            let mut a = KeyArena::default();
            let mut want: Vec<Vec<u8>> = Vec::new();
            for i in 0..100u8 {
                // Keys of one width, then every tenth of another.
                let w = if i >= 50 && i % 10 == 0 {
                    first_width + 3
                } else {
                    first_width
                };
                let k: Vec<u8> = (0..w).map(|j| i.wrapping_add(j as u8)).collect();
                a.push(&k);
                want.push(k);
                if i == 49 {
                    assert!(a.ends.is_empty(), "one width needs no ends");
                }
                assert_eq!(a.len(), want.len());
                for (j, k) in want.iter().enumerate() {
                    assert_eq!(a.get(j), &k[..], "width {first_width}, key {j} after {i}");
                }
            }
        }
    }

    /// The bug behind TPC-H Q1's wrong sums: a code table found by the
    /// address of a dictionary freed since, now another dictionary's, of
    /// the same size and another order. Each round's dictionary is
    /// dropped before the next is made, as a segment's is when its last
    /// morsel is done; the allocator hands its memory to the next one.
    #[test]
    fn codes_of_a_freed_dictionary_and_the_next_at_its_address_never_meet() {
        let orders = [
            ["A", "N", "R"],
            ["R", "A", "N"],
            ["N", "R", "A"],
            ["A", "R", "N"],
        ];
        for two in [false, true] {
            let types = if two {
                vec![A::Utf8, A::Utf8]
            } else {
                vec![A::Utf8]
            };
            let mut t = GroupTable::new(&types, Arc::new(Vec::new())).unwrap();
            let mut group_of: HashMap<String, u32> = HashMap::new();
            for round in 0..200 {
                let vals = orders[round % orders.len()];
                let dict = || -> ArrayRef {
                    let values: ArrayRef = Arc::new(StringArray::from(vals.to_vec()));
                    let keys = UInt16Array::from(vec![0u16, 1, 2, 2, 1, 0]);
                    Arc::new(DictionaryArray::<UInt16Type>::try_new(keys, values).unwrap())
                };
                let keys: Vec<ArrayRef> = if two {
                    vec![dict(), dict()]
                } else {
                    vec![dict()]
                };
                let g = t.group_ids(6, &keys, None).unwrap();
                for (r, k) in [0usize, 1, 2, 2, 1, 0].iter().enumerate() {
                    let v = vals[*k].to_string();
                    let e = *group_of.entry(v.clone()).or_insert(g[r]);
                    assert_eq!(
                        e, g[r],
                        "round {round}: {v} landed in another value's group"
                    );
                }
                drop(keys);
            }
            assert_eq!(group_of.len(), 3);
        }
    }

    pub(super) fn count_star() -> Arc<Vec<AggCall>> {
        Arc::new(vec![AggCall {
            func: AggFunc::CountStar,
            arg: None,
            distinct: false,
            arg_type: A::Int64,
            name: "count(*)".into(),
            collect: None,
        }])
    }

    /// A morsel of keys: values near `base` (spread `spread`), some
    /// NULL, some far away; and which rows a selection keeps.
    fn morsel() -> impl proptest::strategy::Strategy<Value = (Vec<Option<i64>>, Option<Vec<bool>>)>
    {
        use proptest::prelude::*;
        let base = prop_oneof![
            Just(0i64),
            -5000i64..5000,
            Just(i64::MAX - 300),
            Just(i64::MIN),
            Just(i32::MAX as i64 - 50),
            Just(i32::MIN as i64),
        ];
        let spread = prop_oneof![Just(1i64), 1i64..300, Just(1 << 20), Just(1 << 26)];
        (base, spread, 0usize..300, any::<u8>(), any::<bool>()).prop_flat_map(
            |(base, spread, n, nulls, with_sel)| {
                let key = (0..spread, any::<u8>()).prop_map(move |(off, r)| {
                    if nulls > 200 && r < 16 {
                        None
                    } else {
                        Some(base.saturating_add(off))
                    }
                });
                let keys = proptest::collection::vec(key, n);
                let sel = proptest::collection::vec(any::<bool>(), n);
                (keys, sel).prop_map(move |(k, s)| (k, with_sel.then_some(s)))
            },
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

        /// Groups of one integer key, whichever index finds them (dense
        /// slots, widened either way, left for packed keys on a NULL or
        /// a far key) and however the partial tables merge: one group a
        /// key, each counting its kept rows.
        #[test]
        fn integer_keys_group_the_same_through_every_index(
            morsels in proptest::collection::vec(morsel(), 1..12),
            tables in 1usize..4,
            narrow in proptest::prelude::any::<bool>(),
            expected in proptest::prop_oneof![proptest::strategy::Just(0usize), 0usize..4000, proptest::strategy::Just(1 << 17)],
            range in proptest::option::of((-6000i64..6000, 0i64..(1 << 21))),
        ) {
            let ty = if narrow { A::Int32 } else { A::Int64 };
            let fit = |v: i64| if narrow { v as i32 as i64 } else { v };
            let mut ts: Vec<GroupTable> = (0..tables)
                .map(|_| {
                    let mut t = GroupTable::new(std::slice::from_ref(&ty), count_star()).unwrap();
                    // Told of many rows to come, or none: the same groups.
                    t.expect_rows(expected);
                    // Told a range of the keys (which may hold them all,
                    // some or none): the same groups.
                    if let Some((lo, len)) = range {
                        t.expect_range(lo, lo + len);
                    }
                    t
                })
                .collect();
            let mut seen: Vec<HashMap<Option<i64>, u32>> = vec![HashMap::new(); tables];
            let mut want: HashMap<Option<i64>, i64> = HashMap::new();
            for (m, (keys, sel)) in morsels.iter().enumerate() {
                let t = m % tables;
                let keys: Vec<Option<i64>> = keys.iter().map(|k| k.map(fit)).collect();
                let col: ArrayRef = if narrow {
                    Arc::new(arrow_array::Int32Array::from(
                        keys.iter().map(|k| k.map(|v| v as i32)).collect::<Vec<_>>(),
                    ))
                } else {
                    Arc::new(arrow_array::Int64Array::from(keys.clone()))
                };
                let mask = sel.as_ref().map(|s| BooleanArray::from(s.clone()));
                let g = ts[t].group_ids(keys.len(), &[col], mask.as_ref()).unwrap();
                proptest::prop_assert_eq!(g.len(), keys.len());
                for (r, k) in keys.iter().enumerate() {
                    if sel.as_ref().is_some_and(|s| !s[r]) {
                        proptest::prop_assert_eq!(g[r], 0);
                        continue;
                    }
                    proptest::prop_assert_ne!(g[r], 0);
                    let e = *seen[t].entry(*k).or_insert(g[r]);
                    proptest::prop_assert_eq!(e, g[r], "key {:?} in two groups", k);
                    *want.entry(*k).or_default() += 1;
                }
                ts[t].update_groups(&g, &[AggInput::Star]).unwrap();
            }
            let mut ts = ts.into_iter();
            let mut fin = ts.next().unwrap();
            for t in ts {
                fin.merge(t).unwrap();
            }
            let cols = fin.finish().unwrap();
            let mut got: HashMap<Option<i64>, i64> = HashMap::new();
            let counts = cols[1].as_primitive::<Int64Type>();
            for r in 0..cols[0].len() {
                let k = if cols[0].is_null(r) {
                    None
                } else if narrow {
                    Some(cols[0].as_primitive::<Int32Type>().value(r) as i64)
                } else {
                    Some(cols[0].as_primitive::<Int64Type>().value(r))
                };
                proptest::prop_assert!(got.insert(k, counts.value(r)).is_none(), "key {:?} twice", k);
            }
            proptest::prop_assert_eq!(got, want);
        }
    }
}
