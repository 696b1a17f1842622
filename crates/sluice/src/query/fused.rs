//! Fused aggregation for few groups: SUM and AVG of integer and decimal
//! arithmetic, COUNT(*) and COUNT(column), computed in one pass over a
//! morsel.
//!
//! The morsel is processed in chunks of [`CHUNK`] rows. For each chunk the
//! distinct argument programs are evaluated into 64-bit vectors (a column
//! read as is is borrowed, not copied; SUM(x) and AVG(x) share one
//! program), then one loop adds every program's value into its group's
//! 64-bit accumulators, four lanes of them so that consecutive rows of the
//! same group do not wait on each other. A chunk's values are bounded
//! first (|v| < 2^52, so 2048 of them cannot overflow 64 bits), and the
//! lanes are folded into 128-bit sums after each chunk: the sums stay
//! exact. A morsel that has NULL inputs, a value outside the bound, or a
//! step that overflows 64 bits returns `false` and takes the general path.

use arrow_array::RecordBatch;

use super::agg::{AggCall, AggFunc};
use super::expr::Expr;
use super::intexpr::{IntProgram, Operand};
use crate::error::Result;

/// Rows evaluated at a time: a few vectors of 2048 values stay in L1/L2.
const CHUNK: usize = 2048;
/// Groups (the trash group included) up to which the dense path is used.
pub const DENSE_GROUPS: usize = 64;
/// Values a chunk may hold in absolute value: CHUNK × 2^52 < 2^63.
const BOUND: u64 = 1 << 52;
const LANES: usize = 4;

/// The programs of a query's aggregates, deduplicated.
#[derive(Debug)]
pub struct Fused {
    progs: Vec<IntProgram>,
    /// Per aggregate: index of its program (`None` for COUNT(*) and
    /// COUNT(column)).
    agg_prog: Vec<Option<usize>>,
    /// Columns of COUNT(column) calls: the path needs them free of NULLs.
    counted: Vec<usize>,
}

/// Per-worker buffers, reused across morsels.
#[derive(Default)]
pub struct Scratch {
    pool: Vec<Vec<i64>>,
    cols: Vec<(usize, u128)>,
    acc: Vec<i64>,
    /// Per group and program (`g * programs + p`): the morsel's sums.
    pub sums: Vec<i128>,
    /// Per group: the morsel's rows.
    pub rows: Vec<i64>,
}

impl Fused {
    /// `Some` when every aggregate is COUNT(*) or a SUM/AVG with an integer
    /// program (`fast`, parallel to `aggs`).
    pub fn new(aggs: &[AggCall], fast: &[Option<IntProgram>]) -> Option<Fused> {
        let mut progs: Vec<IntProgram> = Vec::new();
        let mut ids: Vec<String> = Vec::new();
        let mut agg_prog = Vec::with_capacity(aggs.len());
        let mut counted = Vec::new();
        for (call, p) in aggs.iter().zip(fast) {
            match (call.func, p) {
                (AggFunc::CountStar, _) => agg_prog.push(None),
                // COUNT(column) counts every row of a morsel without NULLs.
                (AggFunc::Count, _) if !call.distinct => match &call.arg {
                    Some(Expr::Column { index, .. }) => {
                        counted.push(*index);
                        agg_prog.push(None);
                    }
                    _ => return None,
                },
                (AggFunc::Sum | AggFunc::Avg, Some(p)) if !call.distinct => {
                    let id = p.identity();
                    let i = match ids.iter().position(|x| *x == id) {
                        Some(i) => i,
                        None => {
                            ids.push(id);
                            progs.push(p.clone());
                            progs.len() - 1
                        }
                    };
                    agg_prog.push(Some(i));
                }
                _ => return None,
            }
        }
        Some(Fused {
            progs,
            agg_prog,
            counted,
        })
    }

    pub fn programs(&self) -> usize {
        self.progs.len()
    }

    pub fn agg_programs(&self) -> &[Option<usize>] {
        &self.agg_prog
    }

    /// Sums every program per group over the rows of `batch` (`groups[r]`
    /// is row r's group, below `ngroups`) into `s.sums` and `s.rows`.
    /// `groups` empty: every row is in group 1 of a global aggregate's 2
    /// (the trash group 0 and its one group): plain sums, no lanes.
    /// `known[c]`, where present, bounds |value| of column c (zone maps).
    /// `Ok(false)`: this morsel must take the general path.
    pub fn run(
        &self,
        batch: &RecordBatch,
        known: &[Option<u128>],
        groups: &[u32],
        ngroups: usize,
        s: &mut Scratch,
    ) -> Result<bool> {
        if ngroups > DENSE_GROUPS
            || self.progs.iter().any(|p| p.has_nulls(batch))
            || self
                .counted
                .iter()
                .any(|&c| batch.column(c).logical_null_count() > 0)
        {
            return Ok(false);
        }
        let k = self.progs.len();
        s.sums.clear();
        s.sums.resize(ngroups * k, 0);
        s.rows.clear();
        s.rows.resize(ngroups, 0);
        // One group for every row (no GROUP BY, no selection): plain sums.
        let one_group = groups.is_empty().then_some(1u32);
        if one_group.is_some() && ngroups != 2 {
            return Err(crate::error::Error::Internal(
                "fused pass without groups over a grouped table".into(),
            ));
        }
        match one_group {
            Some(g) => s.rows[g as usize] = batch.num_rows() as i64,
            None => count_rows(groups, &mut s.rows),
        }
        let n = batch.num_rows();
        let mut off = 0;
        while off < n {
            let len = CHUNK.min(n - off);
            let g = if one_group.is_some() {
                &[][..]
            } else {
                &groups[off..off + len]
            };
            s.cols.clear();
            for first in (0..k).step_by(8) {
                let last = (first + 8).min(k);
                let mut ops: Vec<Operand<'_>> = Vec::with_capacity(last - first);
                let mut ok = true;
                for p in &self.progs[first..last] {
                    match p.eval_chunk(batch, known, off, len, &mut s.pool, &mut s.cols)? {
                        // Every value below the bound: 2048 of them cannot
                        // overflow a 64-bit sum.
                        Some((o, bound)) if bound < BOUND as u128 => ops.push(match o {
                            Operand::Const(c) => {
                                let mut b = s.pool.pop().unwrap_or_default();
                                b.clear();
                                b.resize(len, c);
                                Operand::Buf(b)
                            }
                            o => o,
                        }),
                        Some((o, _)) => {
                            o.recycle(&mut s.pool);
                            ok = false;
                            break;
                        }
                        None => {
                            ok = false;
                            break;
                        }
                    }
                }
                let vals: Vec<&[i64]> = ops
                    .iter()
                    .filter_map(|o| match o {
                        Operand::Slice(v) => Some(*v),
                        Operand::Buf(b) => Some(b.as_slice()),
                        Operand::Const(_) => None,
                    })
                    .collect();
                ok = ok && vals.len() == last - first && vals.iter().all(|v| v.len() == len);
                if let (true, Some(g)) = (ok, one_group) {
                    // Below the bound, a chunk's 64-bit sum cannot overflow.
                    for (j, v) in vals.iter().enumerate() {
                        let sum = v.iter().fold(0i64, |a, &x| a.wrapping_add(x));
                        s.sums[g as usize * k + first + j] += sum as i128;
                    }
                } else if ok {
                    let kb = last - first;
                    s.acc.clear();
                    s.acc.resize(LANES * ngroups * kb, 0);
                    match kb {
                        1 => accumulate::<1>(g, &vals, ngroups, &mut s.acc),
                        2 => accumulate::<2>(g, &vals, ngroups, &mut s.acc),
                        3 => accumulate::<3>(g, &vals, ngroups, &mut s.acc),
                        4 => accumulate::<4>(g, &vals, ngroups, &mut s.acc),
                        5 => accumulate::<5>(g, &vals, ngroups, &mut s.acc),
                        6 => accumulate::<6>(g, &vals, ngroups, &mut s.acc),
                        7 => accumulate::<7>(g, &vals, ngroups, &mut s.acc),
                        _ => accumulate::<8>(g, &vals, ngroups, &mut s.acc),
                    }
                    for lane in 0..LANES {
                        for gi in 0..ngroups {
                            let a = &s.acc[(lane * ngroups + gi) * kb..][..kb];
                            for (j, x) in a.iter().enumerate() {
                                s.sums[gi * k + first + j] += *x as i128;
                            }
                        }
                    }
                }
                drop(vals);
                for o in ops {
                    o.recycle(&mut s.pool);
                }
                if !ok {
                    return Ok(false);
                }
            }
            off += len;
        }
        Ok(true)
    }
}

/// Rows per group, in four lanes of counters.
fn count_rows(groups: &[u32], rows: &mut [i64]) {
    let n = rows.len();
    let mut lanes = vec![0i64; LANES * n];
    for (r, &g) in groups.iter().enumerate() {
        lanes[(r & (LANES - 1)) * n + g as usize] += 1;
    }
    for lane in lanes.chunks_exact(n) {
        for (t, x) in rows.iter_mut().zip(lane) {
            *t += x;
        }
    }
}

/// Adds row r's value of each of `K` vectors into its group's accumulators
/// in lane `r % 4`: `acc[(lane * ngroups + g) * K + j]`.
fn accumulate<const K: usize>(groups: &[u32], vals: &[&[i64]], ngroups: usize, acc: &mut [i64]) {
    let n = groups.len();
    let v: [&[i64]; K] = std::array::from_fn(|j| &vals[j][..n]);
    for (r, &g) in groups.iter().enumerate() {
        let base = ((r & (LANES - 1)) * ngroups + g as usize) * K;
        let slot: &mut [i64; K] = (&mut acc[base..base + K])
            .try_into()
            .expect("K accumulators");
        for j in 0..K {
            slot[j] = slot[j].wrapping_add(v[j][r]);
        }
    }
}
