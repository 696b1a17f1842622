//! Runtime filters: a table read after a smaller FROM item that it is
//! joined to by an inner equality on one of its columns reads only the
//! rows whose key is among that item's keys.
//!
//! The join group reads first the items that their own conditions cut
//! and those that a filter reaches, fewest expected rows first ([`next_leaf`]).
//! Before it reads a table leaf, every condition `t.c =
//! o.e` of the group (WHERE or an inner join's ON) whose other side `o`
//! is one item already read, with at most half as many rows as `t`'s
//! table and at most half of its own table's (a whole table's keys, every
//! part or every order, would drop nothing), gives `t`'s scan two more
//! tests:
//! - `c IN (o's values of e)`: the scan's filter drops the rows that no
//!   row of `o` can join before they reach a hash table (an
//!   [`Expr::InValues`]: a bitmap of dense integer keys, else a hash set);
//! - the values' range, for integer and date keys: a zone-map test, so
//!   that record batches and segments outside it are not read at all.
//!
//! A semi join (`EXISTS`, `IN (SELECT …)`) by `t.c = sq.e` is a source
//! too: its subquery's keys filter `t` as an inner join's item's would,
//! when they are at most half as many as `t`'s table's rows (a
//! subquery's rows are no share of a table, so that bound alone).
//!
//! A subquery that is a UNION ALL of plain scans (TPC-DS's sales and
//! returns of one channel, as one item joined to the dates) is
//! filtered branch by branch: the key, a bare column of each branch,
//! tests each branch's scan with the values cast to that branch's
//! column; its rows are the branches' tables' rows.
//!
//! A subquery that is itself a join (`IN (SELECT o FROM ws_wh)`, a CTE
//! of a self-join: TPC-DS q95; a derived table) is filtered inside:
//! its key, through bare columns of inner items (no outer join fills
//! them with NULLs), is a column of a plain scan in it, and that scan
//! reads only the outer side's keys; the joins inside then filter the
//! rest as usual. Its rows are guessed as its largest table's.
//!
//! The join then runs as before, on fewer rows; the equality is still
//! checked by the join, so a filter that keeps too much costs time, never
//! an answer. It is sound because an inner join drops a row without a
//! match anyway: neither item may be one an outer join fills with NULLs
//! or the right side of an outer, semi or anti join (their rows survive,
//! or matter, without a match), except that a semi join's right side
//! filters its left. NULL keys never match, so none is kept.
//!
//! (DuckDB's join filter pushdown and DataFusion's dynamic filters do the
//! same with the build side's min/max; Umbra and Velox with a bloom
//! filter. The exact set here costs a bit or a hash-set entry a key.)
//!
//! An index nested-loop join: when the filtered column is the primary key
//! of `t`'s table and the other item's rows are few (at most one a
//! [`ROWS_PER_LOOKUP`] rows of `t`'s table; a whole table too, as
//! nothing is scanned), `t`'s rows are not scanned at all: each key is
//! looked up in the key index, as `WHERE key IN (…)` is (`objects` by
//! `source_id` for a few thousand `sources` reads those objects, not
//! every one). The join then runs over them as over a filtered scan's
//! rows.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, cast::AsArray, types::*};
use arrow_schema::DataType as A;

use super::super::bloom;
use super::super::expr::{BinOp, Expr, InSet, exec_err};
use super::super::plan::from::{JoinGroup, JoinKind};
use super::super::plan::setop::SetKind;
use super::super::plan::{Body, Input, Plan, Prune};
use super::super::{QueryOptions, memory::Reservation};
use super::Rel;
use crate::error::{Error, Result};

/// More keys than this and a filter is not built (its set would cost
/// more than the join's own hash table saves).
const MAX_KEYS: usize = 1 << 22;

/// A runtime filter on a table's primary key reads the rows by the key
/// index when it has at most one key a this many of the table's rows: a
/// lookup (an index probe, and the first time a segment is touched, its
/// mapping) costs about what scanning and testing a thousand rows does.
pub(crate) const ROWS_PER_LOOKUP: u64 = 1024;

/// The share of a table's rows its own conditions are guessed to keep,
/// before it is read (DuckDB's default selectivity of a filter): TPC-H
/// Q2's parts of one size and type (0.4 %) are read before the partsupp
/// rows of a fifth of the suppliers, and filter them.
const OWN_FILTER_KEEPS: f64 = 0.2;

/// The leaf to read next, of `unread`: of those with conditions of their
/// own (likely cut), that a runtime filter from the leaves read so far
/// narrows ([`sources`]), or small enough to have its keys looked up in
/// an unread table's key index, the one expected to read the fewest rows
/// (its table's rows times the least of the shares its filters' leaves
/// kept and [`OWN_FILTER_KEEPS`] if it has conditions of its own; then
/// the smallest table, a subquery first); when there is none, the first in
/// the query's order. So the nations of one region are read before the
/// suppliers they filter, and those before lineitem; the lineitems of
/// those suppliers (a 25th of 60 M) before the orders that they then
/// filter (TPC-H Q21's 15 M, read whole before); a query no filter
/// reaches reads its items as written.
pub(super) fn next_leaf(
    g: &JoinGroup,
    unread: &[usize],
    leaves: &[Option<Rel>],
    excluded: u64,
    table_rows: &[Option<u64>],
    keys: &[Option<usize>],
    kept: &[f64],
) -> usize {
    let likely_cut = |i: usize| {
        let l = &g.leaves[i];
        l.table.is_none() || l.plan.filter.is_some() || l.filter.is_some()
    };
    // The most rows of an unread table with a primary key: a table of
    // at most one row a [`ROWS_PER_LOOKUP`] of them may have its keys
    // looked up there, so it is read first.
    let keyed_rows = unread
        .iter()
        .filter(|&&j| keys.get(j).copied().flatten().is_some())
        .map(|&j| table_rows[j].unwrap_or(0))
        .max()
        .unwrap_or(0);
    let lookup_source =
        |i: usize| table_rows[i].is_some_and(|r| r.saturating_mul(ROWS_PER_LOOKUP) <= keyed_rows);
    // The rows a leaf is expected to read: its table's, times the
    // smallest share of its own table that a leaf filtering it kept (a
    // key's rows are spread like the keys: lineitem filtered by the
    // suppliers of one nation of 25 keeps about a 25th), or that its own
    // conditions are guessed to keep.
    unread
        .iter()
        .copied()
        .filter_map(|i| {
            let from = sources(
                g,
                i,
                leaves,
                excluded,
                table_rows[i].unwrap_or(0),
                keys.get(i).copied().flatten(),
                kept,
            );
            if !(likely_cut(i) || lookup_source(i) || !from.is_empty()) {
                return None;
            }
            let own = if likely_cut(i) { OWN_FILTER_KEEPS } else { 1.0 };
            let share = from
                .iter()
                .map(|s| kept.get(s.from).copied().unwrap_or(1.0))
                .fold(own, f64::min);
            let rows = table_rows[i].unwrap_or(0);
            Some(((rows as f64 * share) as u64, rows, i))
        })
        .min()
        .map(|(_, _, i)| i)
        .or_else(|| unread.first().copied())
        .unwrap_or(0)
}

/// A filter for leaf `i`: the scan column it tests, the other side's
/// key (over global columns), that side's leaf, and the condition.
struct Source<'g> {
    /// The scanned column (of a UNION ALL leaf: its output column).
    scan: usize,
    name: &'g str,
    other: &'g Expr,
    from: usize,
    cond: &'g Expr,
}

/// The runtime filters that the leaves read so far give leaf `i`: per
/// condition `i.col = o.e` of the group, where `o` is one leaf already
/// read with at most half as many rows as `i`'s table and cut to at most
/// half of its own table (a whole table's keys, every part or every
/// order, would drop nothing), and neither side is excluded. On `i`'s
/// primary key (`key`, a column of its table), `o` may be any item (a
/// whole table too) of at most one row a [`ROWS_PER_LOOKUP`] rows of
/// `i`'s table: its keys are looked up, not scanned for.
fn sources<'g>(
    g: &'g JoinGroup,
    i: usize,
    leaves: &[Option<Rel>],
    excluded: u64,
    table_rows: u64,
    key: Option<usize>,
    kept: &[f64],
) -> Vec<Source<'g>> {
    let me = 1u64 << i;
    let leaf = &g.leaves[i];
    let Body::Project(exprs) = &leaf.plan.body else {
        return Vec::new();
    };
    // A semi or anti join's subquery (a plain scan of a table) only
    // needs the rows whose key a row of the other side has: a row
    // without one matches nothing (not NOT IN's or a mark join's, whose
    // NULL keys count).
    let joined_by = g
        .outer
        .iter()
        .find(|st| st.leaf == i && matches!(st.kind, JoinKind::Semi | JoinKind::Anti));
    if !filterable(g, i, excluded & !joined_by.map_or(0, |_| me)) {
        return Vec::new();
    }
    let mut out = Vec::new();
    // The WHERE's and inner joins' equalities, and a semi join's with
    // its subquery: a row without a match is dropped either way (not an
    // anti or mark join's: their rows stay without one).
    let semi = g
        .outer
        .iter()
        .filter(|st| st.kind == JoinKind::Semi)
        .flat_map(|st| st.on.iter().map(move |c| (c, 1u64 << st.leaf)));
    let subquery = joined_by
        .into_iter()
        .flat_map(|st| st.on.iter().map(|c| (c, 0)));
    let conds = g
        .conjuncts
        .iter()
        .map(|c| (c, 0))
        .chain(semi)
        .chain(subquery);
    for (c, semi_side) in conds {
        let Some((l, lm, r, rm)) = &c.equi else {
            continue;
        };
        let (mine, other, om) = if *lm == me && rm.count_ones() == 1 {
            (l, r, *rm)
        } else if *rm == me && lm.count_ones() == 1 {
            (r, l, *lm)
        } else {
            continue;
        };
        // A semi join's subquery is a source here, never the item it
        // filters (that is the last list's case).
        if (semi_side != 0 || om & excluded != 0) && om != semi_side {
            continue;
        }
        let j = om.trailing_zeros() as usize;
        let Some(src) = leaves.get(j).and_then(|s| s.as_ref()) else {
            continue;
        };
        // An item read already with fewer rows whose key a WHERE or inner
        // join equality makes equal to `other` gives the keys instead:
        // they are those of `other` that can still join. TPC-H Q21's
        // subqueries of lineitem were filtered by the 1.5 M keys of l1,
        // not by the 0.7 M of the orders l1 joins (`o_orderkey =
        // l1.l_orderkey`), and their semi and anti joins probed twice the
        // rows they needed.
        let (other, j, src) = match equal_and_smaller(g, other, om, i, leaves, excluded) {
            Some((e, k, rel)) if rel.rows < src.rows => (e, k, rel),
            _ => (other, j, src),
        };
        // A subquery that is not a plain scan has rows that are no share
        // of a table: only their number against the target's table counts.
        let whole = scanned_table(g, j).is_some() && kept.get(j).is_none_or(|&k| k > 0.5);
        // The key on this side: one of the leaf's scanned columns as is,
        // or an integer column widened to BIGINT (`i = bigint_col`): the
        // other side's values are cast to the column's type, and one
        // that does not fit it matches none of its values.
        let (mine, widened) = match mine {
            Expr::Cast {
                expr,
                to: A::Int64,
                site: None,
            } => (expr.as_ref(), true),
            m => (m, false),
        };
        let Expr::Column { index: global, .. } = mine else {
            continue;
        };
        let Some(pos) = leaf.columns.iter().position(|c| c == global) else {
            continue;
        };
        let Some(Expr::Column { index: scan, name }) = exprs.get(pos) else {
            continue;
        };
        // A UNION ALL leaf: the key is a bare column of every branch; a
        // semi or anti join's subquery that is a join: of a scan in it.
        let union = leaf.plan.table.is_none();
        let found = if is_union_all(&leaf.plan) {
            union_scans(&leaf.plan, pos).is_some()
        } else {
            nested_scan(&leaf.plan, pos).is_some()
        };
        if union && (widened || !found) {
            continue;
        }
        let scan = if union { &pos } else { scan };
        let narrow = matches!(
            leaf.plan.table_types.get(*scan),
            Some(A::Int8 | A::Int16 | A::Int32 | A::UInt8 | A::UInt16 | A::UInt32)
        );
        if widened && !narrow {
            continue;
        }
        let lookups = key.is_some()
            && key == leaf.plan.scan_columns.get(*scan).copied()
            && (src.rows as u64).saturating_mul(ROWS_PER_LOOKUP) <= table_rows;
        if src.rows > MAX_KEYS
            || (!lookups && ((src.rows as u64).saturating_mul(2) > table_rows || whole))
        {
            continue;
        }
        out.push(Source {
            scan: *scan,
            name,
            other,
            from: j,
            cond: &c.expr,
        });
    }
    out
}

/// The item with the fewest rows, read already (not `i`), that a WHERE or
/// inner join equality `other = e` ties to `other` (an expression over
/// the one item `om`), with `e` over that item alone: every row that
/// survives the group's joins has `other`'s value among `e`'s. Never an
/// item in `excluded` (one an outer join fills with NULLs, or a
/// correlated aggregate's): there a row without a match survives with `e`
/// over NULLs, which may be a value (`COALESCE(b.w, 45)`, a count's 0)
/// that no row of the item has (found by review).
fn equal_and_smaller<'g, 'l>(
    g: &'g JoinGroup,
    other: &Expr,
    om: u64,
    i: usize,
    leaves: &'l [Option<Rel>],
    excluded: u64,
) -> Option<(&'g Expr, usize, &'l Rel)> {
    let want = format!("{other:?}");
    let mut best: Option<(&'g Expr, usize, &'l Rel)> = None;
    for c in &g.conjuncts {
        let Some((l, lm, r, rm)) = &c.equi else {
            continue;
        };
        let (e, em) = if *lm == om && format!("{l:?}") == want {
            (r, *rm)
        } else if *rm == om && format!("{r:?}") == want {
            (l, *lm)
        } else {
            continue;
        };
        if em.count_ones() != 1 || em & (1u64 << i) != 0 || em & excluded != 0 {
            continue;
        }
        let k = em.trailing_zeros() as usize;
        let Some(rel) = leaves.get(k).and_then(|s| s.as_ref()) else {
            continue;
        };
        if best.is_none_or(|b| rel.rows < b.2.rows) {
            best = Some((e, k, rel));
        }
    }
    best
}

/// The table leaf `i` reads: its own, or the one a subquery that is a
/// plain scan reads (its rows are a share of that table's; so a semi
/// join's subquery is read after a smaller item whose keys filter it).
pub(super) fn scanned_table(g: &JoinGroup, i: usize) -> Option<&str> {
    let leaf = &g.leaves[i];
    match &leaf.table {
        Some(t) => Some(t),
        None if filterable(g, i, 0) => leaf.plan.table.as_deref(),
        None => None,
    }
}

/// Whether leaf `i` is a table scan, or a UNION ALL of table scans
/// ([`union_scans`]), that a runtime filter may narrow.
fn filterable(g: &JoinGroup, i: usize, excluded: u64) -> bool {
    let leaf = &g.leaves[i];
    let p = &leaf.plan;
    (plain_scan(p) || is_union_all(p) || is_join_subquery(p))
        && leaf.filter.is_none()
        && excluded & (1 << i) == 0
}

/// Whether `p` is the rows of a join group (a subquery's FROM) as they
/// are.
fn is_join_subquery(p: &Plan) -> bool {
    p.table.is_none() && as_they_are(p) && matches!(p.input.as_deref(), Some(Input::Join(_)))
}

/// Through the join subquery `p`, the plain scan that `p`'s output column
/// `col` is a bare column of, and that column among its scanned ones:
/// each step a bare column of an item no outer join fills with NULLs
/// (so a row of `p` with a value has it from a row of that scan with
/// it). `None` when there is none.
fn nested_scan(p: &Plan, col: usize) -> Option<(&Plan, usize)> {
    let Body::Project(exprs) = &p.body else {
        return None;
    };
    let Some(Expr::Column { index, .. }) = exprs.get(col) else {
        return None;
    };
    if plain_scan(p) {
        return Some((p, *index));
    }
    if !is_join_subquery(p) {
        return None;
    }
    let Some(Input::Join(g)) = p.input.as_deref() else {
        return None;
    };
    let (l, at) = inner_leaf(g, *g.output.get(*index)?)?;
    nested_scan(&g.leaves[l].plan, at)
}

/// The leaf of `g` whose output has global column `global`, and where,
/// when no outer join fills it with NULLs (or hashes it as a subquery).
fn inner_leaf(g: &JoinGroup, global: usize) -> Option<(usize, usize)> {
    let outer = g.outer.iter().fold(g.nullable, |m, st| m | (1 << st.leaf));
    g.leaves.iter().enumerate().find_map(|(l, leaf)| {
        let at = leaf.columns.iter().position(|&c| c == global)?;
        (outer & (1 << l) == 0).then_some((l, at))
    })
}

/// The tables of the plain scans a subquery `i` that is a join reads
/// (through nested ones); empty for other leaves.
pub(super) fn nested_tables(g: &JoinGroup, i: usize) -> Vec<&str> {
    fn walk<'p>(p: &'p Plan, out: &mut Vec<&'p str>) {
        if plain_scan(p) {
            out.extend(p.table.as_deref());
        } else if let Some(Input::Join(g)) = p.input.as_deref() {
            for l in &g.leaves {
                walk(&l.plan, out);
            }
        }
    }
    let mut out = Vec::new();
    if is_join_subquery(&g.leaves[i].plan) {
        walk(&g.leaves[i].plan, &mut out);
    }
    out
}

/// Whether `p`'s rows are its input's as they are (no limit, order or
/// lookup by key), each computed per row.
fn as_they_are(p: &Plan) -> bool {
    p.key_lookup.is_none()
        && p.limit.is_none()
        && p.offset == 0
        && p.order.is_empty()
        && matches!(p.body, Body::Project(_))
}

/// Whether `p` is a scan of a table, its rows as they are.
fn plain_scan(p: &Plan) -> bool {
    p.table.is_some() && p.input.is_none() && as_they_are(p)
}

/// Whether `p` is the rows of a UNION ALL as they are.
fn is_union_all(p: &Plan) -> bool {
    p.table.is_none()
        && p.filter.is_none()
        && as_they_are(p)
        && matches!(
            p.input.as_deref(),
            Some(Input::Set(op)) if op.kind == SetKind::Union && op.all && op.right.is_some()
        )
}

/// The table scans under the UNION ALL plan `p` (through nested ones)
/// and, per scan, the scanned column that `p`'s output column `col` is;
/// `None` when a branch is not a plain scan or the column is not a bare
/// column of each.
fn union_scans(p: &Plan, col: usize) -> Option<Vec<(&Plan, usize)>> {
    let Body::Project(exprs) = &p.body else {
        return None;
    };
    let Some(Expr::Column { index, .. }) = exprs.get(col) else {
        return None;
    };
    if plain_scan(p) {
        return Some(vec![(p, *index)]);
    }
    if !is_union_all(p) {
        return None;
    }
    let Some(Input::Set(op)) = p.input.as_deref() else {
        return None;
    };
    let mut out = union_scans(&op.left, *index)?;
    out.extend(union_scans(op.right.as_ref()?, *index)?);
    Some(out)
}

/// The scans [`union_scans`] or [`nested_scan`] find (whichever the
/// caller checked), to change: `f` is called with each and its column —
/// every branch of a UNION ALL, the one item of a join the column comes
/// from.
fn each_scan(
    p: &mut Plan,
    col: usize,
    f: &mut dyn FnMut(&mut Plan, usize) -> Result<()>,
) -> Result<()> {
    let Body::Project(exprs) = &p.body else {
        return Ok(());
    };
    let Some(Expr::Column { index, .. }) = exprs.get(col) else {
        return Ok(());
    };
    let index = *index;
    if plain_scan(p) {
        return f(p, index);
    }
    match p.input.as_mut().map(Arc::make_mut) {
        Some(Input::Set(op)) => {
            each_scan(&mut op.left, index, f)?;
            if let Some(r) = op.right.as_mut() {
                each_scan(r, index, f)?;
            }
        }
        Some(Input::Join(g)) => {
            let inner = g.output.get(index).and_then(|&c| inner_leaf(g, c));
            if let Some((l, at)) = inner {
                each_scan(&mut g.leaves[l].plan, at, f)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The tables a UNION ALL leaf's branches scan (one a branch), when
/// every branch is a plain scan; empty otherwise.
pub(super) fn union_tables(g: &JoinGroup, i: usize) -> Vec<&str> {
    let p = &g.leaves[i].plan;
    if !is_union_all(p) {
        return Vec::new();
    }
    // Every column of a branch is one of its scanned columns or an
    // expression; the tables are the same for any column that maps.
    let Body::Project(exprs) = &p.body else {
        return Vec::new();
    };
    (0..exprs.len())
        .find_map(|c| union_scans(p, c))
        .map(|scans| {
            scans
                .iter()
                .filter_map(|(b, _)| b.table.as_deref())
                .collect()
        })
        .unwrap_or_default()
}

/// Leaf `i`'s plan with the runtime filters that the leaves read so far
/// give it, and the memory its key values hold while it runs; `None`
/// when none applies. `excluded`: the items no filter may come from or
/// go to (outer, semi and anti join sides, NULL-filled items);
/// `table_rows`: the rows of leaf `i`'s table; `key`: its table's
/// primary-key column, if it has one; `kept`: the share of its table (or
/// subquery) each leaf read so far kept.
#[allow(clippy::too_many_arguments)]
pub(super) fn filtered_plan(
    g: &JoinGroup,
    i: usize,
    leaves: &[Option<Rel>],
    excluded: u64,
    table_rows: u64,
    key: Option<usize>,
    kept: &[f64],
    opts: &QueryOptions,
) -> Result<Option<(Plan, Vec<Reservation>)>> {
    let leaf = &g.leaves[i];
    let p = &leaf.plan;
    let mut plan: Option<Plan> = None;
    let mut held = Vec::new();
    for s in sources(g, i, leaves, excluded, table_rows, key, kept) {
        let Some(src) = leaves.get(s.from).and_then(|l| l.as_ref()) else {
            continue;
        };
        if p.table.is_none() {
            // A UNION ALL: each branch's scan tests its own column; a
            // join subquery: its scan of the key.
            let plan = plan.get_or_insert_with(|| p.clone());
            each_scan(plan, s.scan, &mut |b, scan| {
                let Some(stored) = b.table_types.get(scan) else {
                    return Ok(());
                };
                let target = match stored {
                    A::Dictionary(_, v) => v.as_ref().clone(),
                    t => t.clone(),
                };
                let Some(values) = key_values(src, s.other, &target)? else {
                    return Ok(());
                };
                let n = values.len();
                let bloom = match filter_scan(b, scan, s.name, values.clone(), opts) {
                    Ok(m) => {
                        held.push(m);
                        None
                    }
                    // Keys past the memory limit: a Bloom filter of them,
                    // or none (see below).
                    Err(Error::MemoryLimit { .. }) => {
                        match bloom_scan(b, scan, s.name, &values, opts)? {
                            Some((m, bytes)) => {
                                held.push(m);
                                Some(bytes)
                            }
                            None => return Ok(()),
                        }
                    }
                    Err(e) => return Err(e),
                };
                if let Some(profile) = &opts.profile {
                    let st = profile.start();
                    profile.finish(
                        st,
                        format!(
                            "Runtime filter on {} ({}): {} IN the keys of {}{}",
                            leaf.name,
                            b.table.as_deref().unwrap_or(""),
                            s.cond,
                            g.leaves[s.from].name,
                            bloom_note(bloom),
                        ),
                        Some(src.rows as u64),
                        n as u64,
                    );
                }
                Ok(())
            })?;
            continue;
        }
        let Some(stored) = p.table_types.get(s.scan) else {
            continue;
        };
        let target = match stored {
            A::Dictionary(_, v) => v.as_ref().clone(),
            t => t.clone(),
        };
        let Some(values) = key_values(src, s.other, &target)? else {
            continue;
        };
        let n = values.len();
        let plan = plan.get_or_insert_with(|| p.clone());
        // By the key index: the rows of these keys, and no scan.
        let by_index = key == Some(p.scan_columns[s.scan])
            && plan.key_lookup.is_none()
            && (n as u64).saturating_mul(ROWS_PER_LOOKUP) <= table_rows;
        if by_index {
            plan.key_lookup = lookup_keys(&values, stored);
        }
        // The set test first: the scan runs the rest of its filter only
        // over the rows it keeps (`exec::filter_rows`). Keys that do not
        // fit the memory limit make no filter: the item's rows are read
        // as without one, and the join keeps the same rows.
        let bloom = match filter_scan(plan, s.scan, s.name, values.clone(), opts) {
            Ok(m) => {
                held.push(m);
                None
            }
            Err(Error::MemoryLimit { .. }) => {
                if by_index {
                    plan.key_lookup = None;
                }
                // A Bloom filter of the keys where it fits, else none.
                match bloom_scan(plan, s.scan, s.name, &values, opts)? {
                    Some((m, bytes)) => {
                        held.push(m);
                        Some(bytes)
                    }
                    None => continue,
                }
            }
            Err(e) => return Err(e),
        };
        if let Some(profile) = &opts.profile {
            let st = profile.start();
            profile.finish(
                st,
                format!(
                    "Runtime filter on {}: {} IN the keys of {}{}{}",
                    leaf.name,
                    s.cond,
                    g.leaves[s.from].name,
                    if by_index && plan.key_lookup.is_some() {
                        ", read by the key index"
                    } else {
                        ""
                    },
                    bloom_note(bloom),
                ),
                Some(src.rows as u64),
                n as u64,
            );
        }
    }
    Ok(plan.map(|p| (p, held)))
}

/// Scan `b` keeps only the rows whose column `scan` (named `name`) is
/// among `values` (a test first in its filter, and a zone-map range for
/// integers and dates); the values' memory, held while it runs.
fn filter_scan(
    b: &mut Plan,
    scan: usize,
    name: &str,
    values: ArrayRef,
    opts: &QueryOptions,
) -> Result<Reservation> {
    let n = values.len();
    let range = int_range(&values);
    // The values, their set, and the bitmap the set may become (see
    // `IntSet::for_probes`).
    let bitmap = range.map_or(0, |(lo, hi)| {
        ((hi - lo) / 8 + 8).min(8 * super::super::intset::PROBE_WORDS as i128) as u64
    });
    let mut mem = opts.reserve("runtime filter", 0)?;
    mem.resize(super::super::memory::array_bytes(values.as_ref()) + 16 * n as u64 + bitmap)?;
    let test = Expr::InValues {
        expr: Box::new(Expr::Column {
            index: scan,
            name: name.to_string(),
        }),
        values,
        negated: false,
        set: InSet::default(),
    };
    add_test(b, scan, test, range);
    Ok(mem)
}

/// Puts `test` first in scan `b`'s filter (run before the rest, over
/// the rows it keeps: `exec::filter_rows`), and `range` of column
/// `scan`'s values as a zone-map test.
fn add_test(b: &mut Plan, scan: usize, test: Expr, range: Option<(i128, i128)>) {
    b.filter = Some(match b.filter.take() {
        None => test,
        Some(f) => Expr::Binary {
            op: BinOp::And,
            left: Box::new(test),
            right: Box::new(f),
        },
    });
    if let (Some((lo, hi)), Some(&column)) = (range, b.scan_columns.get(scan)) {
        b.prune.push(Prune {
            column,
            lo: Some(lo),
            hi: Some(hi),
        });
    }
}

/// Scan `b` keeps only the rows whose column `scan` may be among
/// `values` by a Bloom filter of them (and, for integers and dates, those
/// in their range by the zone maps): made when their exact set does not
/// fit the memory limit. It takes [`bloom::BITS_PER_KEY`] bits a key, or
/// as many as a quarter of the limit and half of what is left of it
/// allow, at least [`bloom::MIN_BITS_PER_KEY`]; `None` (no filter) when
/// that does not fit, or the keys are not integers or dates. It is held
/// while the table is read (its rows past half the limit go to disk).
/// The reservation and the filter's bytes.
fn bloom_scan(
    b: &mut Plan,
    scan: usize,
    name: &str,
    values: &ArrayRef,
    opts: &QueryOptions,
) -> Result<Option<(Reservation, u64)>> {
    if !bloom::holds(values.data_type()) || values.is_empty() {
        return Ok(None);
    }
    let n = values.len();
    let left = opts.memory.as_ref().map_or(u64::MAX, |m| {
        (m.limit() / 4).min(m.limit().saturating_sub(m.used()) / 2)
    });
    let bytes = bloom::bytes_for(n, bloom::BITS_PER_KEY).min(left);
    if bytes < bloom::bytes_for(n, bloom::MIN_BITS_PER_KEY) {
        return Ok(None);
    }
    let mem = match opts.reserve("runtime filter", bytes) {
        Ok(m) => m,
        Err(Error::MemoryLimit { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let Some(filter) = bloom::BloomFilter::of_values(values, bytes) else {
        return Ok(None);
    };
    let test = Expr::Bloom {
        expr: Box::new(Expr::Column {
            index: scan,
            name: name.to_string(),
        }),
        filter: Arc::new(filter),
    };
    add_test(b, scan, test, int_range(values));
    Ok(Some((mem, bytes)))
}

/// How a runtime filter's line in EXPLAIN ANALYZE says it is a Bloom
/// filter of `bytes` bytes.
fn bloom_note(bytes: Option<u64>) -> String {
    match bytes {
        Some(b) => format!(
            " (a Bloom filter of {}: the keys do not fit the memory limit)",
            super::super::memory::human_bytes(b)
        ),
        None => String::new(),
    }
}

/// `values` (distinct, non-NULL) as keys of the key index of a column
/// stored as `stored`, sorted; `None` when one does not convert exactly
/// (then the table is scanned).
fn lookup_keys(values: &ArrayRef, stored: &A) -> Option<Vec<Vec<u8>>> {
    // Integers as BIGINT, the literal type a key's value converts from
    // (an INT key's values are INT here).
    let wide;
    let values = if values.data_type().is_integer() && values.data_type() != &A::Int64 {
        wide = arrow_cast::cast(values, &A::Int64).ok()?;
        &wide
    } else {
        values
    };
    let mut keys = (0..values.len())
        .map(|i| super::super::plan::literal_key(&values.slice(i, 1), stored))
        .collect::<Option<Vec<_>>>()?;
    keys.sort_unstable();
    keys.dedup();
    Some(keys)
}

/// The distinct non-NULL values of `key` (over global columns) in
/// `src`'s rows, as `target` values; `None` when the two types are not
/// of one family this filter handles (integers, dates, text).
fn key_values(src: &Rel, key: &Expr, target: &A) -> Result<Option<ArrayRef>> {
    let local = src.local(key)?;
    let mut parts: Vec<ArrayRef> = Vec::with_capacity(src.batches.len());
    for p in src.pieces(usize::MAX) {
        let a = super::eval_keys(std::slice::from_ref(&local), &p.load()?, None)?;
        parts.extend(a);
    }
    let Some(first) = parts.first() else {
        return Ok(None);
    };
    let family = |t: &A| match t {
        A::Int8 | A::Int16 | A::Int32 | A::Int64 => Some(0),
        A::UInt8 | A::UInt16 | A::UInt32 | A::UInt64 => Some(0),
        A::Date32 => Some(1),
        A::Utf8 | A::LargeUtf8 | A::Utf8View => Some(2),
        _ => None,
    };
    let have = first.data_type().clone();
    if family(&have).is_none() || family(&have) != family(target) {
        return Ok(None);
    }
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    let all = arrow_select::concat::concat(&refs).map_err(exec_err)?;
    // A value that does not fit the column's type equals none of its
    // values: the cast makes it NULL, and NULLs are dropped.
    let all = if all.data_type() != target {
        arrow_cast::cast(&all, target).map_err(exec_err)?
    } else {
        all
    };
    let all = if all.null_count() > 0 {
        let keep = arrow_arith::boolean::is_not_null(&all).map_err(exec_err)?;
        arrow_select::filter::filter(&all, &keep).map_err(exec_err)?
    } else {
        all
    };
    Ok(Some(dedup(all)?))
}

/// The distinct values of `a` (sorted for integers and dates; in order
/// of first sight for text).
fn dedup(a: ArrayRef) -> Result<ArrayRef> {
    macro_rules! ints {
        ($t:ty) => {{
            let mut v: Vec<_> = a.as_primitive::<$t>().values().to_vec();
            v.sort_unstable();
            v.dedup();
            Arc::new(arrow_array::PrimitiveArray::<$t>::from(v)) as ArrayRef
        }};
    }
    Ok(match a.data_type() {
        A::Int8 => ints!(Int8Type),
        A::Int16 => ints!(Int16Type),
        A::Int32 => ints!(Int32Type),
        A::Int64 => ints!(Int64Type),
        A::UInt8 => ints!(UInt8Type),
        A::UInt16 => ints!(UInt16Type),
        A::UInt32 => ints!(UInt32Type),
        A::UInt64 => ints!(UInt64Type),
        A::Date32 => ints!(Date32Type),
        _ => {
            // Text: the set dedups as it is built; the array stays.
            a
        }
    })
}

/// The smallest and largest of sorted integer or date values, as the
/// zone maps keep them.
fn int_range(a: &ArrayRef) -> Option<(i128, i128)> {
    macro_rules! ends {
        ($t:ty) => {{
            let v = a.as_primitive::<$t>().values();
            Some((*v.first()? as i128, *v.last()? as i128))
        }};
    }
    match a.data_type() {
        A::Int8 => ends!(Int8Type),
        A::Int16 => ends!(Int16Type),
        A::Int32 => ends!(Int32Type),
        A::Int64 => ends!(Int64Type),
        A::Date32 => ends!(Date32Type),
        _ => None,
    }
}
