//! The hash aggregate past its memory limit: partitioned state spilling.
//!
//! A worker whose [`GroupTable`] no longer fits the query's memory writes
//! it out — every group's key (row-format bytes) and states (encoded
//! here, [`GroupTable::encode_state`]), partitioned by the hash of the
//! key into [`PARTS`] partitions — as one run ([`super::super::spill`]),
//! and goes on with an empty table. Once every morsel is folded, the
//! tables still in memory are written out too, and the partitions are
//! merged one at a time per worker, all workers at once: a partition's
//! groups are no other partition's, so each is merged, finished and
//! passed through HAVING on its own, holding about 1/[`PARTS`] of the
//! groups. A partition that alone outgrows the memory is split again by
//! the next bits of the same hash (recursively, to [`MAX_LEVEL`]); one
//! group's state that alone outgrows the memory (a COUNT(DISTINCT) of
//! more values than fit) fails the query with the memory-limit error.
//!
//! The states merge as the in-memory merge of two workers' tables does
//! ([`super::combine`]), so a spilled aggregate answers what the
//! in-memory one answers (sums of doubles up to the order they are
//! added in, as between thread counts).
//!
//! Not spilled: aggregates without GROUP BY (one group) and grouping
//! sets (their coarser sets are made from the finer sets' groups, which
//! partitions by the whole key would scatter).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::builder::{ArrayBuilder, LargeBinaryBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType as A, Field, Schema, SchemaRef};

use super::{
    Acc, AggCall, BOX_BYTES, GroupTable, INT_SET_BYTES, SET_ENTRY_BYTES, VarState, add_f64,
    key_hash,
};
use crate::error::{Error, Result};
use crate::query::QueryOptions;
pub use crate::query::spill::{MAX_LEVEL, PARTS};
use crate::query::spill::{Run, Spill, part_of};

/// Groups in one frame of a run, at most.
const FRAME_GROUPS: usize = 16 << 10;
/// Bytes of keys and states in one frame, about (a frame may pass it by
/// one group): a 64th of the memory limit, within these bounds (a frame
/// read back is held, and counted, while it is merged).
const FRAME_BYTES: (usize, usize) = (16 << 10, 4 << 20);

const OPERATOR: &str = "hash aggregate";

fn frame_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", A::LargeBinary, false),
        Field::new("state", A::LargeBinary, false),
    ]))
}

/// A grouping's spilled states, and how to make its tables.
pub struct AggSpill {
    spill: Spill,
    key_types: Vec<A>,
    calls: Arc<Vec<AggCall>>,
    runs: Mutex<Vec<Run>>,
    asked: AtomicU64,
    /// Bytes of one frame, about (see [`FRAME_BYTES`]).
    frame_bytes: usize,
    profile: Option<Arc<crate::query::profile::Profile>>,
}

impl AggSpill {
    /// For a grouping by `key_types` (at least one) computing `calls`,
    /// under a memory limit of `limit` bytes.
    pub fn new(
        spill: Spill,
        key_types: Vec<A>,
        calls: Arc<Vec<AggCall>>,
        limit: u64,
        profile: Option<Arc<crate::query::profile::Profile>>,
    ) -> AggSpill {
        AggSpill {
            spill,
            key_types,
            calls,
            runs: Mutex::new(Vec::new()),
            asked: AtomicU64::new(0),
            frame_bytes: usize::try_from(limit / 64)
                .unwrap_or(usize::MAX)
                .clamp(FRAME_BYTES.0, FRAME_BYTES.1),
            profile,
        }
    }

    /// An empty table of the grouping, without the dense index (its
    /// slots span the key's whole range whatever the groups held: a
    /// table emptied to save memory must not take them again).
    pub fn table(&self) -> Result<GroupTable> {
        let mut t = GroupTable::new(&self.key_types, self.calls.clone())?;
        t.dense_off = true;
        Ok(t)
    }

    /// Whether any table was written out.
    pub fn spilled(&self) -> bool {
        self.runs.lock().map(|r| !r.is_empty()).unwrap_or(true)
    }

    /// Writes `table`'s groups out and leaves it empty.
    pub fn spill(&self, table: &mut GroupTable) -> Result<()> {
        let full = std::mem::replace(table, self.table()?);
        let run = self.write(&full, 0)?;
        drop(full);
        self.runs
            .lock()
            .map_err(|_| Error::Internal("spill runs lock poisoned".into()))?
            .push(run);
        Ok(())
    }

    /// `table`'s groups (all but the trash group) as one run,
    /// partitioned at `level`.
    fn write(&self, table: &GroupTable, level: u32) -> Result<Run> {
        let mut parts: Vec<Vec<u32>> = vec![Vec::new(); PARTS as usize];
        for g in 1..table.groups {
            let key = table.keys.get(g);
            parts[part_of(key_hash(key), level) as usize].push(g as u32);
        }
        let mut w = self.spill.writer(OPERATOR, self.profile.clone())?;
        let schema = frame_schema();
        let mut state = Vec::new();
        for (p, groups) in parts.iter().enumerate() {
            let mut at = 0;
            while at < groups.len() {
                let mut keys = LargeBinaryBuilder::new();
                let mut states = LargeBinaryBuilder::new();
                let mut bytes = 0;
                while at < groups.len() && keys.len() < FRAME_GROUPS && bytes < self.frame_bytes {
                    let g = groups[at] as usize;
                    state.clear();
                    table.encode_state(g, &mut state);
                    let key = table.keys.get(g);
                    keys.append_value(key);
                    states.append_value(&state);
                    bytes += key.len() + state.len();
                    at += 1;
                }
                let cols: Vec<ArrayRef> = vec![Arc::new(keys.finish()), Arc::new(states.finish())];
                w.write(p as u32, &RecordBatch::try_new(schema.clone(), cols)?)?;
            }
        }
        w.finish()
    }

    /// The runs written so far, taken to be merged
    /// ([`AggSpill::merge_partition`]).
    pub fn take_runs(&self) -> Result<Vec<Run>> {
        Ok(std::mem::take(&mut *self.runs.lock().map_err(|_| {
            Error::Internal("spill runs lock poisoned".into())
        })?))
    }

    /// Partition `part` of `runs` merged and finished: its columns (as
    /// [`GroupTable::finish`] makes them) handed to `out`, which makes
    /// them a batch; none when the partition has no group. `alone`: no
    /// other partition is merged meanwhile, and one that does not fit is
    /// split; otherwise it is left (`None`), to be merged again alone.
    pub fn merge_partition(
        &self,
        runs: &[Run],
        part: u32,
        alone: bool,
        opts: &QueryOptions,
        out: &(dyn Fn(Vec<ArrayRef>) -> Result<RecordBatch> + Sync),
    ) -> Result<Option<Vec<RecordBatch>>> {
        let sources: Vec<(Run, u32)> = runs.iter().map(|r| (r.clone(), part)).collect();
        let mut batches = Vec::new();
        let merged = self.merge_part(&sources, 0, alone, opts, out, &mut batches)?;
        Ok(merged.then_some(batches))
    }

    /// Asks the workers still folding morsels to write their tables out
    /// at their next morsel (one that spilled needs the room they hold).
    pub fn ask_others(&self) {
        self.asked.fetch_add(1, Ordering::Relaxed);
    }

    /// How many times workers were asked so far: a worker that sees it
    /// changed writes its table out.
    pub fn asked(&self) -> u64 {
        self.asked.load(Ordering::Relaxed)
    }

    /// Merges the frames of partition `part` of each run in `sources`
    /// (made at `level`) into one table and finishes it into `out`'s
    /// batches; splits it by the next level when it does not fit.
    ///
    /// Not `alone` (other partitions are merged at the same time): a
    /// partition that does not fit is left, `Ok(false)`, to be merged
    /// again alone, when the others' tables are gone.
    #[allow(clippy::too_many_arguments)]
    fn merge_part(
        &self,
        sources: &[(Run, u32)],
        level: u32,
        alone: bool,
        opts: &QueryOptions,
        out: &(dyn Fn(Vec<ArrayRef>) -> Result<RecordBatch> + Sync),
        batches: &mut Vec<RecordBatch>,
    ) -> Result<bool> {
        let mut table = self.table()?;
        let mut mem = opts.reserve(OPERATOR, 0)?;
        for (run, part) in sources {
            for f in run.frames_of(*part) {
                let b = run.read(f)?;
                // The frame read counts while it is merged, then the
                // table it grew.
                let frame = b.get_array_memory_size() as u64;
                let fits = mem
                    .resize(table.bytes() as u64 + frame)
                    .and_then(|()| table.merge_spilled(&b))
                    .and_then(|()| {
                        drop(b);
                        mem.resize(table.bytes() as u64)
                    });
                if let Err(e) = fits {
                    if !matches!(e, Error::MemoryLimit { .. }) {
                        return Err(e);
                    }
                    drop(table);
                    drop(mem);
                    if !alone {
                        // Perhaps the others' partitions hold the room:
                        // tried again alone.
                        return Ok(false);
                    }
                    if level >= MAX_LEVEL {
                        return Err(e);
                    }
                    self.split(sources, level + 1, opts, out, batches)?;
                    return Ok(true);
                }
            }
        }
        if table.groups > 1 {
            batches.push(out(table.finish()?)?);
        }
        Ok(true)
    }

    /// `sources`' groups partitioned again at `level` into one run, each
    /// of its partitions merged on its own.
    fn split(
        &self,
        sources: &[(Run, u32)],
        level: u32,
        opts: &QueryOptions,
        out: &(dyn Fn(Vec<ArrayRef>) -> Result<RecordBatch> + Sync),
        batches: &mut Vec<RecordBatch>,
    ) -> Result<()> {
        let mut w = self.spill.writer(OPERATOR, self.profile.clone())?;
        // Each part's rows gathered up to a 64th of a frame before they
        // are written: a frame cut 64 ways makes frames of a few groups
        // each, mostly headers (a partition split at 1 MiB wrote 6 times
        // its bytes).
        let flush = (self.frame_bytes / PARTS as usize).max(4 << 10);
        let schema = frame_schema();
        let mut held: Vec<(Vec<RecordBatch>, usize)> = vec![(Vec::new(), 0); PARTS as usize];
        let write = |w: &mut crate::query::spill::RunWriter,
                     p: usize,
                     batches: &mut Vec<RecordBatch>|
         -> Result<()> {
            if batches.is_empty() {
                return Ok(());
            }
            let b = arrow_select::concat::concat_batches(&schema, batches.iter())?;
            batches.clear();
            w.write(p as u32, &b)
        };
        for (run, part) in sources {
            for f in run.frames_of(*part) {
                let b = run.read(f)?;
                let keys = b.column(0).as_binary::<i64>();
                let mut rows: Vec<Vec<u32>> = vec![Vec::new(); PARTS as usize];
                for i in 0..b.num_rows() {
                    rows[part_of(key_hash(keys.value(i)), level) as usize].push(i as u32);
                }
                for (p, idx) in rows.into_iter().enumerate() {
                    if idx.is_empty() {
                        continue;
                    }
                    let idx = arrow_array::UInt32Array::from(idx);
                    let cols = b
                        .columns()
                        .iter()
                        .map(|c| arrow_select::take::take(c, &idx, None))
                        .collect::<std::result::Result<Vec<_>, _>>()?;
                    let sub = RecordBatch::try_new(schema.clone(), cols)?;
                    let (batches, bytes) = &mut held[p];
                    *bytes += sub.get_array_memory_size();
                    batches.push(sub);
                    if *bytes >= flush {
                        write(&mut w, p, batches)?;
                        *bytes = 0;
                    }
                }
            }
        }
        for (p, (batches, _)) in held.iter_mut().enumerate() {
            write(&mut w, p, batches)?;
        }
        let run = w.finish()?;
        for p in 0..PARTS {
            self.merge_part(&[(run.clone(), p)], level, true, opts, out, batches)?;
        }
        Ok(())
    }
}

impl GroupTable {
    /// No dense index for this table (see `Dense`): its keys are
    /// hashed from the first morsel on.
    pub fn without_dense(&mut self) {
        self.dense_off = true;
    }

    /// Group `g`'s states, every aggregate's one after another, appended
    /// to `out` (read back by [`GroupTable::merge_spilled`]).
    pub(crate) fn encode_state(&self, g: usize, out: &mut Vec<u8>) {
        fn bytes(out: &mut Vec<u8>, b: &[u8]) {
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(b);
        }
        for acc in &self.accs {
            match acc {
                Acc::Count(v) => out.extend_from_slice(&v[g].to_le_bytes()),
                Acc::SumInt(v, s) => {
                    out.extend_from_slice(&v[g].to_le_bytes());
                    out.push(u8::from(s[g]));
                }
                Acc::SumFloat(v, s) => {
                    out.extend_from_slice(&v[g].to_le_bytes());
                    out.push(u8::from(s[g]));
                }
                Acc::AvgInt(v, n, _) => {
                    out.extend_from_slice(&v[g].to_le_bytes());
                    out.extend_from_slice(&n[g].to_le_bytes());
                }
                Acc::AvgFloat(v, n) => {
                    out.extend_from_slice(&v[g].to_le_bytes());
                    out.extend_from_slice(&n[g].to_le_bytes());
                }
                Acc::MinMax(v, _) => match &v[g] {
                    None => out.push(0),
                    Some(b) => {
                        out.push(1);
                        bytes(out, b);
                    }
                },
                Acc::Distinct(v) => {
                    out.extend_from_slice(&(v[g].len() as u64).to_le_bytes());
                    for b in &v[g] {
                        bytes(out, b);
                    }
                }
                Acc::DistinctInt(v) => {
                    out.extend_from_slice(&(v[g].len() as u64).to_le_bytes());
                    for x in v[g].iter() {
                        out.extend_from_slice(&x.to_le_bytes());
                    }
                }
                Acc::Approx(v) => v[g].encode(out),
                Acc::Var(v) => {
                    let s = &v[g];
                    for f in [s.n, s.mean, s.m2, s.fshift] {
                        out.extend_from_slice(&f.to_le_bytes());
                    }
                    out.extend_from_slice(&s.ishift.to_le_bytes());
                    out.extend_from_slice(&s.odd.to_le_bytes());
                }
                Acc::Bool(v, _) => out.push(match v[g] {
                    None => 0,
                    Some(false) => 1,
                    Some(true) => 2,
                }),
                Acc::Collect(v) => {
                    out.extend_from_slice(&(v[g].len() as u64).to_le_bytes());
                    for b in &v[g] {
                        bytes(out, b);
                    }
                }
            }
        }
    }

    /// Merges the groups of a spilled frame (keys and encoded states, see
    /// [`GroupTable::encode_state`]) into this table, as
    /// [`GroupTable::merge`] merges another table's.
    pub(crate) fn merge_spilled(&mut self, batch: &RecordBatch) -> Result<()> {
        let keys = batch.column(0).as_binary::<i64>();
        let states = batch.column(1).as_binary::<i64>();
        for i in 0..batch.num_rows() {
            let g = self.group_of(keys.value(i)) as usize;
            let mut r = Cursor(states.value(i));
            let mut heap = 0;
            for acc in &mut self.accs {
                heap += merge_encoded(acc, g, &mut r)?;
            }
            self.heap += heap;
            if !r.0.is_empty() {
                return Err(spilled_state_error());
            }
        }
        Ok(())
    }
}

fn spilled_state_error() -> Error {
    Error::Internal("a spilled aggregate state is not the length it was written".into())
}

/// The bytes of an encoded state not read yet.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(spilled_state_error());
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn i128(&mut self) -> Result<i128> {
        Ok(i128::from_le_bytes(self.array()?))
    }

    fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = u32::from_le_bytes(self.array()?) as usize;
        self.take(n)
    }
}

/// One aggregate's encoded state merged into group `g` of `acc`; the
/// bytes its values now hold beyond the per-group vectors.
fn merge_encoded(acc: &mut Acc, g: usize, r: &mut Cursor<'_>) -> Result<usize> {
    let mut heap = 0;
    match acc {
        Acc::Count(v) => v[g] += r.i64()?,
        Acc::SumInt(v, s) => {
            v[g] += r.i128()?;
            s[g] |= r.u8()? != 0;
        }
        Acc::SumFloat(v, s) => {
            v[g] = add_f64(v[g], r.f64()?)?;
            s[g] |= r.u8()? != 0;
        }
        Acc::AvgInt(v, n, _) => {
            v[g] += r.i128()?;
            n[g] += r.i64()?;
        }
        Acc::AvgFloat(v, n) => {
            v[g] = add_f64(v[g], r.f64()?)?;
            n[g] += r.i64()?;
        }
        Acc::MinMax(v, is_max) => {
            if r.u8()? == 1 {
                let x = r.bytes()?;
                let better = match &v[g] {
                    None => true,
                    Some(cur) if *is_max => x > &cur[..],
                    Some(cur) => x < &cur[..],
                };
                if better {
                    if v[g].is_none() {
                        heap += x.len() + BOX_BYTES;
                    }
                    v[g] = Some(x.into());
                }
            }
        }
        Acc::Distinct(v) => {
            for _ in 0..r.u64()? {
                let x = r.bytes()?;
                if !v[g].contains(x) {
                    heap += x.len() + SET_ENTRY_BYTES;
                    v[g].insert(x.into());
                }
            }
        }
        Acc::DistinctInt(v) => {
            let before = v[g].len();
            for _ in 0..r.u64()? {
                v[g].insert(r.i128()?);
            }
            heap += (v[g].len() - before) * INT_SET_BYTES;
        }
        Acc::Var(v) => {
            let s = VarState {
                n: r.f64()?,
                mean: r.f64()?,
                m2: r.f64()?,
                fshift: r.f64()?,
                ishift: r.i128()?,
                odd: r.u64()?,
            };
            v[g].merge(&s);
        }
        Acc::Bool(v, and) => {
            let x = match r.u8()? {
                0 => None,
                1 => Some(false),
                _ => Some(true),
            };
            if let Some(x) = x {
                v[g] = Some(match v[g] {
                    None => x,
                    Some(y) if *and => x && y,
                    Some(y) => x || y,
                });
            }
        }
        Acc::Collect(v) => {
            for _ in 0..r.u64()? {
                let x = r.bytes()?;
                heap += x.len() + BOX_BYTES;
                v[g].push(x.into());
            }
        }
        Acc::Approx(v) => {
            let (sketch, used) = super::hll::Hll::decode(r.0).ok_or_else(spilled_state_error)?;
            r.take(used)?;
            heap = heap.saturating_add_signed(v[g].merge(&sketch));
        }
    }
    Ok(heap)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use arrow_array::Int64Array;

    use super::*;
    use crate::query::agg::tests::count_star;
    use crate::query::agg::{AggFunc, AggInput};
    use crate::query::memory::Memory;

    fn opts(limit: u64) -> QueryOptions {
        QueryOptions {
            memory: Some(Memory::new(limit)),
            ..Default::default()
        }
    }

    /// Two tables of overlapping keys spilled, then merged at a limit
    /// that holds about a quarter of a partition: every partition is
    /// split by the next bits of the hash, and every key comes out once
    /// with its count; a merge not alone leaves the partition instead;
    /// a limit below one group fails at the last level.
    #[test]
    fn a_partition_that_does_not_fit_is_split_until_it_does() {
        let root = std::env::temp_dir().join(format!("sluice-aggspill-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let spill = Spill::new(&root);
        let sp = AggSpill::new(spill.clone(), vec![A::Int64], count_star(), 1 << 30, None);
        let fill = |range: std::ops::Range<i64>| {
            let mut t = sp.table().unwrap();
            let keys: ArrayRef = Arc::new(Int64Array::from_iter_values(range));
            t.update(keys.len(), &[keys], &[AggInput::Star], None)
                .unwrap();
            t
        };
        for range in [0..20_000i64, 10_000..30_000] {
            let mut t = fill(range);
            sp.spill(&mut t).unwrap();
            assert_eq!(t.groups(), 1, "emptied");
        }
        assert!(sp.spilled());
        let runs = sp.take_runs().unwrap();
        assert_eq!(spill.files_written(), 2);
        // A level-0 partition holds about 470 of the 30,000 keys.
        let empty = sp.table().unwrap().bytes() as u64;
        let full = fill(0..470).bytes() as u64;
        let limit = empty + (full - empty) / 4;
        let out = |cols: Vec<ArrayRef>| -> Result<RecordBatch> {
            Ok(RecordBatch::try_from_iter([
                ("k", cols[0].clone()),
                ("n", cols[1].clone()),
            ])?)
        };
        let mut counts = BTreeMap::new();
        for p in 0..PARTS {
            let batches = sp
                .merge_partition(&runs, p, true, &opts(limit), &out)
                .unwrap()
                .expect("alone, it is merged");
            for b in batches {
                let k = b.column(0).as_primitive::<arrow_array::types::Int64Type>();
                let n = b.column(1).as_primitive::<arrow_array::types::Int64Type>();
                for i in 0..b.num_rows() {
                    assert!(counts.insert(k.value(i), n.value(i)).is_none(), "key twice");
                }
            }
        }
        assert_eq!(counts.len(), 30_000);
        for (k, n) in &counts {
            let want = if (10_000..20_000).contains(k) { 2 } else { 1 };
            assert_eq!(*n, want, "key {k}");
        }
        let split = spill.files_written();
        assert!(split >= 2 + u64::from(PARTS) / 2, "{split} runs: not split");
        // Not alone: left for later, nothing written.
        assert!(
            sp.merge_partition(&runs, 0, false, &opts(limit), &out)
                .unwrap()
                .is_none()
        );
        assert_eq!(spill.files_written(), split);
        // Not even one group fits: split to the last level, then refused.
        let e = sp
            .merge_partition(&runs, 0, true, &opts(empty / 2), &out)
            .unwrap_err();
        assert!(matches!(e, Error::MemoryLimit { .. }), "{e}");
        assert_eq!(spill.files_written(), split + u64::from(MAX_LEVEL));
        drop(runs);
        drop(sp);
        drop(spill);
        assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Every kind of state survives its encoding: a table spilled and
    /// merged back finishes as the table itself does.
    #[test]
    fn states_merged_back_finish_as_the_table_itself() {
        use crate::query::expr::Expr;
        let root = std::env::temp_dir().join(format!("sluice-aggstates-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let call = |func, distinct, t: A| AggCall {
            func,
            arg: Some(Expr::Column {
                index: 0,
                name: "x".into(),
            }),
            distinct,
            arg_type: t,
            name: format!("{func:?}"),
            collect: None,
        };
        let calls = Arc::new(vec![
            call(AggFunc::CountStar, false, A::Int64),
            call(AggFunc::Count, false, A::Int64),
            call(AggFunc::Sum, false, A::Int64),
            call(AggFunc::Sum, false, A::Float64),
            call(AggFunc::Avg, false, A::Int64),
            call(AggFunc::Avg, false, A::Float64),
            call(AggFunc::Min, false, A::Utf8),
            call(AggFunc::Max, false, A::Int64),
            call(AggFunc::Count, true, A::Int64),
            call(AggFunc::Count, true, A::Utf8),
            call(AggFunc::VarSamp, false, A::Int64),
            call(AggFunc::BoolAnd, false, A::Boolean),
            call(AggFunc::BoolOr, false, A::Boolean),
        ]);
        let n = 5_000usize;
        let keys: ArrayRef = Arc::new(Int64Array::from_iter((0..n).map(|i| {
            // Some NULL keys.
            (i % 97 != 0).then_some((i % 700) as i64)
        })));
        let ints: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..n).map(|i| (i % 13 != 0).then_some((i * 7 % 31) as i64)),
        ));
        let floats: ArrayRef = Arc::new(arrow_array::Float64Array::from_iter(
            (0..n).map(|i| (i % 17 != 0).then_some((i % 40) as f64 / 4.0)),
        ));
        let texts: ArrayRef = Arc::new(arrow_array::StringArray::from_iter(
            (0..n).map(|i| (i % 19 != 0).then(|| format!("t{}", i * 13 % 57))),
        ));
        let bools: ArrayRef = Arc::new(arrow_array::BooleanArray::from_iter(
            (0..n).map(|i| (i % 23 != 0).then_some(i % 5 != 0)),
        ));
        let args = [
            AggInput::Star,
            AggInput::Array(ints.clone()),
            AggInput::Array(ints.clone()),
            AggInput::Array(floats.clone()),
            AggInput::Array(ints.clone()),
            AggInput::Array(floats.clone()),
            AggInput::Array(texts.clone()),
            AggInput::Array(ints.clone()),
            AggInput::Array(ints.clone()),
            AggInput::Array(texts.clone()),
            AggInput::Array(ints.clone()),
            AggInput::Array(bools.clone()),
            AggInput::Array(bools.clone()),
        ];
        let spill = Spill::new(&root);
        let sp = AggSpill::new(spill.clone(), vec![A::Int64], calls.clone(), 1 << 30, None);
        // In memory: one table of every row.
        let mut whole = sp.table().unwrap();
        whole.update(n, &[keys.clone()], &args, None).unwrap();
        let want = RecordBatch::try_from_iter(
            whole
                .finish()
                .unwrap()
                .into_iter()
                .enumerate()
                .map(|(i, c)| (format!("c{i}"), c)),
        )
        .unwrap();
        // Spilled: the rows in three tables, each written out.
        for (lo, hi) in [(0, 1_000), (1_000, 3_500), (3_500, n)] {
            let mut t = sp.table().unwrap();
            let k = [keys.slice(lo, hi - lo)];
            let a: Vec<AggInput<'_>> = args
                .iter()
                .map(|a| match a {
                    AggInput::Array(c) => AggInput::Array(c.slice(lo, hi - lo)),
                    _ => AggInput::Star,
                })
                .collect();
            t.update(hi - lo, &k, &a, None).unwrap();
            sp.spill(&mut t).unwrap();
        }
        let runs = sp.take_runs().unwrap();
        let out = |cols: Vec<ArrayRef>| -> Result<RecordBatch> {
            Ok(RecordBatch::try_from_iter(
                cols.into_iter()
                    .enumerate()
                    .map(|(i, c)| (format!("c{i}"), c)),
            )?)
        };
        let mut got = Vec::new();
        for p in 0..PARTS {
            got.extend(
                sp.merge_partition(&runs, p, true, &opts(1 << 30), &out)
                    .unwrap()
                    .unwrap(),
            );
        }
        let got = arrow_select::concat::concat_batches(&want.schema(), &got).unwrap();
        // Rows in key order, both.
        let sorted = |b: &RecordBatch| {
            let idx = arrow_ord::sort::sort_to_indices(b.column(0), None, None).unwrap();
            arrow_select::take::take_record_batch(b, &idx).unwrap()
        };
        let (got, want) = (sorted(&got), sorted(&want));
        assert_eq!(got.num_rows(), want.num_rows());
        for (i, call) in std::iter::once("key")
            .chain(calls.iter().map(|c| c.name.as_str()))
            .enumerate()
        {
            if call != "VarSamp" {
                assert_eq!(got.column(i), want.column(i), "column {i}: {call}");
                continue;
            }
            // Welford's states merged in another order: equal to the
            // last bits.
            let (g, w) = (
                got.column(i)
                    .as_primitive::<arrow_array::types::Float64Type>(),
                want.column(i)
                    .as_primitive::<arrow_array::types::Float64Type>(),
            );
            assert_eq!(
                arrow_array::Array::nulls(g),
                arrow_array::Array::nulls(w),
                "{call}"
            );
            for (a, b) in g.values().iter().zip(w.values()) {
                assert!(
                    (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                    "{call}: {a} vs {b}"
                );
            }
        }
        drop(runs);
        drop(sp);
        drop(spill);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
