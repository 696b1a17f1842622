//! Eager aggregation: an aggregate over inner joins is computed in two
//! steps, the first below the joins of the items whose columns are only
//! grouped by (Yan & Larson, "Eager Aggregation and Lazy Aggregation",
//! VLDB 1995).
//!
//! `SELECT i_brand, avg(inv_qty) FROM inventory, date_dim, item WHERE
//! inv_item_sk = i_item_sk AND … GROUP BY i_brand`: joining `item` to
//! each of 2.3 million inventory rows copies its TEXT columns as often,
//! then hashes them as often. Grouped first by `inv_item_sk` (the column
//! `item` joins on), the rows are 18,000 partial sums and counts; those
//! are joined to `item` and grouped again by `i_brand`. The answer is
//! the same for every decomposable aggregate: `sum` of sums, `count` as
//! a sum of counts, `min` of minimums, `avg` as the sum of the sums over
//! the sum of the counts. A row of the partial groups that meets k rows
//! of `item` counts k times, as each of its rows would have.
//!
//! The items lifted above the partial aggregate (the set U) are those a
//! GROUP BY key reads a TEXT column of (the columns that are dear to
//! carry through a join) and no aggregate reads, joined to the rest (L)
//! only by `=` between a side of U's columns and a side of L's; an item
//! of L that only an item of U joins to goes up with it, and L must
//! still be one join; the columns of L those items join must promise
//! few groups (their value ranges, by the zone maps, multiplied: at most
//! a quarter of L's largest table's rows). No item lifted may be cut by conditions of its own
//! (read first, its keys cut the others' scans; a partial aggregate
//! between would stop that). The partial aggregate may group by two
//! columns at most (with more, its groups are about as many as its rows),
//! integers, decimals, dates, times or booleans only (a TEXT one costs
//! as much as before; doubles group -0.0 with 0.0); sums and averages
//! of doubles are left alone (added in another order, their last digits
//! could change). Only inner joins, and only `count`, `sum`, `avg`,
//! `min`, `max`, `bool_and` and `bool_or` without DISTINCT: otherwise
//! the plan is left as it is.

use std::sync::Arc;

use arrow_array::Int64Array;
use arrow_schema::DataType as A;

use crate::query::agg::{AggCall, AggFunc};
use crate::query::expr::{BinOp, Expr, eval_type};
use crate::query::plan::from::{Conjunct, JoinGroup, Leaf, items_of};
use crate::query::plan::{Body, Catalog, Input, Plan};

/// The most columns the partial aggregate may group by.
const MAX_PARTIAL_KEYS: usize = 2;

/// `plan` with its aggregate split around its joins where that is
/// allowed and worth it (see the module's comment); else as it is.
pub fn eager_aggregate(plan: Plan, catalog: &dyn Catalog) -> Plan {
    rewrite(&plan, catalog).unwrap_or(plan)
}

/// Whether a column of type `t` is dear to carry through a join.
fn wide(t: &A) -> bool {
    matches!(
        t,
        A::Utf8 | A::LargeUtf8 | A::Utf8View | A::Binary | A::LargeBinary | A::Dictionary(..)
    )
}

/// Whether a column of type `t` is narrow and its equal values are the
/// same value (integers, decimals, dates, times, booleans).
fn exact(t: &A) -> bool {
    matches!(
        t,
        A::Int8
            | A::Int16
            | A::Int32
            | A::Int64
            | A::UInt8
            | A::UInt16
            | A::UInt32
            | A::UInt64
            | A::Decimal64(..)
            | A::Decimal128(..)
            | A::Date32
            | A::Date64
            | A::Time32(_)
            | A::Time64(_)
            | A::Timestamp(..)
            | A::Boolean
    )
}

/// Replaces each column `c` of `e` for which `f(c)` gives an expression.
fn substitute(e: &mut Expr, f: &dyn Fn(usize) -> Option<Expr>) {
    if let Expr::Column { index, .. } = e {
        if let Some(x) = f(*index) {
            *e = x;
        }
        return;
    }
    e.children_mut(&mut |c| substitute(c, f));
}

fn column(index: usize, name: &str) -> Expr {
    Expr::Column {
        index,
        name: name.to_string(),
    }
}

fn cast(e: Expr, to: A) -> Expr {
    Expr::Cast {
        expr: Box::new(e),
        to,
        site: None,
    }
}

/// The items to lift above the partial aggregate (bits of `g.leaves`),
/// `None` when there are none.
fn lifted(g: &JoinGroup, owner: &[usize], agg_leaves: u64, key_cols: &[usize]) -> Option<u64> {
    let all = if g.leaves.len() == 64 {
        u64::MAX
    } else {
        (1u64 << g.leaves.len()) - 1
    };
    let mut u = key_cols
        .iter()
        .filter(|&&c| wide(&g.types[c]))
        .fold(0u64, |m, &c| m | (1 << owner[c]))
        & !agg_leaves;
    // Each round only moves items one way or the other; a few rounds
    // settle it, and a plan that does not settle is left as it is.
    for _ in 0..=2 * g.leaves.len() {
        if u == 0 {
            return None;
        }
        let l = all & !u;
        let mut changed = false;
        // A condition between U and L: `=` of a side of U's columns and
        // a side of L's, else its U items stay below.
        for c in &g.conjuncts {
            if c.items & u == 0 || c.items & l == 0 {
                continue;
            }
            let ok = match &c.equi {
                Some((_, a, _, b)) => {
                    (*a != 0 && *b != 0)
                        && ((a & !u == 0 && b & u == 0) || (b & !u == 0 && a & u == 0))
                }
                None => false,
            };
            if !ok {
                u &= !(c.items & u);
                changed = true;
            }
        }
        let l = all & !u;
        // L must stay one join: the items joined (through L's own
        // conditions) to the first item an aggregate reads; the others
        // go up, to the items that join them.
        let first = agg_leaves.trailing_zeros();
        let mut comp = 1u64 << first;
        loop {
            let grown = g
                .conjuncts
                .iter()
                .filter(|c| c.items & !l == 0 && c.items & comp != 0)
                .fold(comp, |m, c| m | c.items);
            if grown == comp {
                break;
            }
            comp = grown;
        }
        if agg_leaves & !comp != 0 {
            return None;
        }
        if l & !comp != 0 {
            u |= l & !comp;
            changed = true;
        }
        if !changed {
            // An item cut by its own conditions stays below: read
            // first, its keys cut the other items' scans (runtime
            // filters), which a partial aggregate above them would not
            // let through (TPC-DS q03, q21).
            let cut =
                (0..g.leaves.len()).any(|i| u & (1 << i) != 0 && has_own_filter(&g.leaves[i]));
            return (u != 0 && !cut).then_some(u);
        }
    }
    None
}

/// Whether grouping the items `low` by their columns `join_cols` (those
/// the lifted items join) is expected to leave at most a quarter of
/// their largest table's rows: the product of those columns' value
/// ranges (zone maps, narrowed by the conditions of their scans) against
/// that table's rows. A column of no known range (TEXT, a subquery's)
/// counts as that many rows: no.
fn fewer_groups(g: &JoinGroup, catalog: &dyn Catalog, low: &[usize], join_cols: &[usize]) -> bool {
    let rows = low
        .iter()
        .filter_map(|&i| g.leaves[i].table.as_deref())
        .filter_map(|t| catalog.table_stats(t, 0).map(|s| s.0))
        .max()
        .unwrap_or(0);
    let mut groups: u64 = 1;
    for &c in join_cols {
        let values = low
            .iter()
            .map(|&i| &g.leaves[i])
            .find_map(|leaf| {
                let p = leaf.columns.iter().position(|&o| o == c)?;
                let table = leaf.table.as_deref()?;
                let Body::Project(exprs) = &leaf.plan.body else {
                    return None;
                };
                let Some(Expr::Column { index, .. }) = exprs.get(p) else {
                    return None;
                };
                let column = *leaf.plan.scan_columns.get(*index)?;
                let (lo, hi) = catalog.table_stats(table, column)?.1?;
                let (mut lo, mut hi) = (lo as i128, hi as i128);
                for pr in leaf.plan.prune.iter().filter(|pr| pr.column == column) {
                    lo = lo.max(pr.lo.unwrap_or(lo));
                    hi = hi.min(pr.hi.unwrap_or(hi));
                }
                Some(u64::try_from((hi - lo + 1).max(1)).unwrap_or(u64::MAX))
            })
            .unwrap_or(rows);
        groups = groups.saturating_mul(values);
    }
    rows > 0 && groups.saturating_mul(4) <= rows
}

/// Whether a leaf's rows are cut by conditions on it alone.
fn has_own_filter(leaf: &Leaf) -> bool {
    leaf.filter.is_some() || leaf.plan.filter.is_some() || leaf.plan.key_lookup.is_some()
}

fn rewrite(plan: &Plan, catalog: &dyn Catalog) -> Option<Plan> {
    let Some(Input::Join(g)) = plan.input.as_deref() else {
        return None;
    };
    let Body::Aggregate {
        keys,
        aggs,
        having,
        post,
        sets,
    } = &plan.body
    else {
        return None;
    };
    if !g.outer.is_empty()
        || g.nullable != 0
        || g.leaves.len() < 2
        || g.leaves.len() > 64
        || plan.filter.is_some()
        || plan.key_lookup.is_some()
        || aggs.is_empty()
        || plan.scan_columns.len() != g.output.len()
        || plan.scan_columns.iter().enumerate().any(|(i, &c)| i != c)
    {
        return None;
    }
    // Sums of doubles would be added in another order: the last digits
    // could change (found by review); exact sums only.
    let summable = |t: &A| matches!(t, A::Int32 | A::Int64 | A::Decimal128(..));
    let decomposable = aggs.iter().all(|c| {
        !c.distinct
            && c.collect.is_none()
            && match c.func {
                AggFunc::CountStar | AggFunc::Min | AggFunc::Max => true,
                AggFunc::Count | AggFunc::BoolAnd | AggFunc::BoolOr => c.arg.is_some(),
                AggFunc::Sum | AggFunc::Avg => c.arg.is_some() && summable(&c.arg_type),
                _ => false,
            }
    });
    if !decomposable {
        return None;
    }
    // Each global column's leaf.
    let width = g.types.len();
    let mut owner = vec![0usize; width];
    for (i, leaf) in g.leaves.iter().enumerate() {
        for &c in &leaf.columns {
            owner[c] = i;
        }
    }
    // The plan's expressions over global columns.
    let global = |e: &Expr| {
        let mut e = e.clone();
        e.remap_columns(&mut |i| g.output[i]);
        e
    };
    let keys_g: Vec<Expr> = keys.iter().map(global).collect();
    let args_g: Vec<Option<Expr>> = aggs.iter().map(|c| c.arg.as_ref().map(global)).collect();
    let agg_leaves = args_g
        .iter()
        .flatten()
        .fold(0u64, |m, a| m | items_of(a, &owner));
    if agg_leaves == 0 {
        return None;
    }
    let mut key_used = vec![false; width];
    keys_g.iter().for_each(|k| k.mark_columns(&mut key_used));
    let key_cols: Vec<usize> = (0..width).filter(|&c| key_used[c]).collect();
    let u = lifted(g, &owner, agg_leaves, &key_cols)?;
    let in_u = |leaf: usize| u & (1 << leaf) != 0;

    // The partial aggregate's group: L's leaves and the conditions among them.
    let low: Vec<usize> = (0..g.leaves.len()).filter(|&i| !in_u(i)).collect();
    let high: Vec<usize> = (0..g.leaves.len()).filter(|&i| in_u(i)).collect();
    let mut low_owner = vec![0usize; width];
    for (n, &i) in low.iter().enumerate() {
        for &c in &g.leaves[i].columns {
            low_owner[c] = n;
        }
    }
    // A condition of no column (`1 = 0`, an uncorrelated subquery's
    // test) stays above, with the joins that apply it (below, over one
    // table, nothing would: found by review).
    let (low_conds, high_conds): (Vec<&Conjunct>, Vec<&Conjunct>) = g
        .conjuncts
        .iter()
        .partition(|c| c.items != 0 && c.items & u == 0);
    // It groups by the columns of L that the keys read and that the
    // conditions with U read.
    let mut group_used = vec![false; width];
    for &c in &key_cols {
        group_used[c] = !in_u(owner[c]);
    }
    let mut join_cols = Vec::new();
    for c in &high_conds {
        let mut used = vec![false; width];
        c.expr.mark_columns(&mut used);
        for (col, &x) in used.iter().enumerate() {
            if x && !in_u(owner[col]) {
                group_used[col] = true;
                join_cols.push(col);
            }
        }
    }
    join_cols.sort_unstable();
    join_cols.dedup();
    // No condition joins the lifted items (a cross join): a partial
    // aggregate of no keys would make one row of no rows (found by
    // review), and there is nothing to group by.
    if join_cols.is_empty() || !fewer_groups(g, catalog, &low, &join_cols) {
        return None;
    }
    let group_cols: Vec<usize> = (0..width).filter(|&c| group_used[c]).collect();
    // Each column it groups by multiplies its groups: by more than two
    // (an item and a store and a month …) they are about as many as its
    // rows, and the partial aggregate only costs (TPC-DS q47, q57).
    // It groups by narrow columns whose equal values are the same value
    // (a TEXT one would be carried and hashed as dearly as before;
    // grouping makes -0.0 and 0.0 one double, which a condition or key
    // above could still tell apart: found by review).
    if group_cols.len() > MAX_PARTIAL_KEYS || !group_cols.iter().all(|&c| exact(&g.types[c])) {
        return None;
    }
    // Its input: those columns and the ones the aggregates read.
    let mut low_used = group_used.clone();
    args_g
        .iter()
        .flatten()
        .for_each(|a| a.mark_columns(&mut low_used));
    let low_output: Vec<usize> = (0..width).filter(|&c| low_used[c]).collect();
    // One table below: the partial aggregate is its scan's (streamed,
    // as any aggregate of a table), over the columns its scan reads.
    let scan = match low.as_slice() {
        // (A condition of that one item alone is in its scan already.)
        [i] if low_conds.is_empty() => {
            let leaf = &g.leaves[*i];
            let p = &leaf.plan;
            match &p.body {
                Body::Project(proj)
                    if leaf.filter.is_none()
                        && p.table.is_some()
                        && p.input.is_none()
                        && p.order.is_empty()
                        && p.limit.is_none()
                        && p.offset == 0 =>
                {
                    Some((leaf, proj))
                }
                _ => None,
            }
        }
        _ => None,
    };
    // An expression over global columns, over the partial aggregate's
    // input.
    let low_pos = |mut e: Expr| {
        match scan {
            Some((leaf, proj)) => substitute(&mut e, &|c| {
                leaf.columns
                    .iter()
                    .position(|&o| o == c)
                    .map(|p| proj[p].clone())
            }),
            None => e.remap_columns(&mut |c| low_output.iter().position(|&o| o == c).unwrap_or(0)),
        }
        e
    };
    // The partial calls (each once by its printed form), and how each
    // call of the plan is made of the final calls over them.
    let mut partial: Vec<AggCall> = Vec::new();
    let mut partial_of = |func: AggFunc, arg: Option<&Expr>, arg_type: &A| -> usize {
        let name = match arg {
            Some(a) => format!("{}({a})", func_name(func)),
            None => "count(*)".to_string(),
        };
        if let Some(i) = partial.iter().position(|c| c.name == name) {
            return i;
        }
        partial.push(AggCall {
            func,
            arg: arg.cloned().map(low_pos),
            distinct: false,
            arg_type: arg_type.clone(),
            name,
            collect: None,
        });
        partial.len() - 1
    };
    enum Made {
        /// The final call of this function over partial column `p`.
        Same(AggFunc, usize),
        /// count: `coalesce(CAST(sum(p) AS BIGINT), 0)`.
        Count(usize),
        /// sum of INT: `CAST(sum(p) AS BIGINT)`.
        SumOfInt(usize),
        /// avg: `CAST(sum(s) AS DOUBLE) / CAST(sum(n) AS DOUBLE)`.
        Avg(usize, usize),
    }
    let mut made = Vec::new();
    for (c, arg) in aggs.iter().zip(&args_g) {
        let a = arg.as_ref();
        made.push(match c.func {
            AggFunc::CountStar => Made::Count(partial_of(AggFunc::CountStar, None, &c.arg_type)),
            AggFunc::Count => Made::Count(partial_of(AggFunc::Count, a, &c.arg_type)),
            AggFunc::Avg => Made::Avg(
                partial_of(AggFunc::Sum, a, &c.arg_type),
                partial_of(AggFunc::Count, a, &c.arg_type),
            ),
            // sum of INT is BIGINT, and its sum of partial BIGINT sums
            // DECIMAL: cast back.
            AggFunc::Sum if c.output_type() == A::Int64 => {
                Made::SumOfInt(partial_of(AggFunc::Sum, a, &c.arg_type))
            }
            f => Made::Same(f, partial_of(f, a, &c.arg_type)),
        });
    }
    let keys_low: Vec<Expr> = group_cols
        .iter()
        .map(|&c| low_pos(column(c, &g.names[c])))
        .collect();
    let low_types: Vec<A> = low_output.iter().map(|&c| eval_type(&g.types[c])).collect();
    let nk = keys_low.len();
    let width_x = nk + partial.len();
    let x_names: Vec<String> = group_cols
        .iter()
        .map(|&c| g.names[c].rsplit('.').next().unwrap_or("").to_string())
        .chain(partial.iter().map(|c| c.name.clone()))
        .collect();
    let x_post: Vec<Expr> = (0..width_x).map(|i| column(i, &x_names[i])).collect();
    let low_group = JoinGroup {
        leaves: low.iter().map(|&i| g.leaves[i].clone()).collect(),
        conjuncts: low_conds
            .iter()
            .map(|c| Conjunct::new(c.expr.clone(), &low_owner))
            .collect(),
        outer: Vec::new(),
        nullable: 0,
        types: g.types.clone(),
        names: g.names.clone(),
        output: low_output.clone(),
    };
    let name = format!(
        "partial({})",
        low.iter()
            .map(|&i| g.leaves[i].name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let depth = low_group
        .leaves
        .iter()
        .map(|l| l.plan.depth)
        .max()
        .unwrap_or(0);
    let body = Body::Aggregate {
        keys: keys_low,
        aggs: Arc::new(partial.clone()),
        having: None,
        post: x_post,
        sets: None,
    };
    let x = match scan {
        Some((leaf, _)) => Plan {
            body,
            names: x_names.clone(),
            visible: width_x,
            ..leaf.plan.clone()
        },
        None => Plan {
            table: None,
            table_types: low_types,
            scan_columns: (0..low_output.len()).collect(),
            filter: None,
            body,
            names: x_names.clone(),
            visible: width_x,
            order: Vec::new(),
            limit: None,
            offset: 0,
            prune: Vec::new(),
            key_lookup: None,
            explain: false,
            depth,
            input: Some(Arc::new(Input::Join(low_group))),
            init_plans: plan.init_plans,
            analyze: false,
            catalog: None,
        },
    };
    let x_types = crate::query::exec::result_types(&x);

    // The group above: U's leaves and the partial aggregate, whose
    // columns are new global columns after the others.
    let mut types = g.types.clone();
    let mut names = g.names.clone();
    let x_cols: Vec<usize> = (width..width + x_types.len()).collect();
    for (t, n) in x_types.iter().zip(&x_names) {
        types.push(t.clone());
        names.push(format!("{name}.{n}"));
    }
    let lifted_col = |c: usize| group_cols.iter().position(|&k| k == c).map(|p| x_cols[p]);
    let to_high = |e: &Expr| {
        let mut e = e.clone();
        substitute(&mut e, &|c| lifted_col(c).map(|x| column(x, &names[x])));
        e
    };
    let mut leaves: Vec<Leaf> = high.iter().map(|&i| g.leaves[i].clone()).collect();
    leaves.push(Leaf {
        name: name.clone(),
        table: None,
        plan: x,
        columns: x_cols.clone(),
        filter: None,
        cte: None,
    });
    let mut high_owner = vec![0usize; types.len()];
    for (n, leaf) in leaves.iter().enumerate() {
        for &c in &leaf.columns {
            high_owner[c] = n;
        }
    }
    let conjuncts: Vec<Conjunct> = high_conds
        .iter()
        .map(|c| Conjunct::new(to_high(&c.expr), &high_owner))
        .collect();
    // The final calls, over the partial columns (each once).
    let mut finals: Vec<AggCall> = Vec::new();
    let nkeys = keys.len();
    let mut final_of = |func: AggFunc, p: usize| -> Expr {
        let col = x_cols[nk + p];
        let name = format!("{}({})", func_name(func), names[col]);
        let i = match finals.iter().position(|c| c.name == name) {
            Some(i) => i,
            None => {
                finals.push(AggCall {
                    func,
                    arg: Some(column(col, &names[col])),
                    distinct: false,
                    arg_type: types[col].clone(),
                    name: name.clone(),
                    collect: None,
                });
                finals.len() - 1
            }
        };
        column(nkeys + i, &name)
    };
    let mut instead: Vec<Expr> = Vec::new();
    for m in &made {
        instead.push(match *m {
            Made::Same(f, p) => final_of(f, p),
            Made::SumOfInt(p) => cast(final_of(AggFunc::Sum, p), A::Int64),
            Made::Count(p) => Expr::Coalesce(vec![
                cast(final_of(AggFunc::Sum, p), A::Int64),
                Expr::Literal(Arc::new(Int64Array::from(vec![0i64]))),
            ]),
            Made::Avg(s, n) => Expr::Binary {
                op: BinOp::Div,
                left: Box::new(cast(final_of(AggFunc::Sum, s), A::Float64)),
                right: Box::new(cast(final_of(AggFunc::Sum, n), A::Float64)),
            },
        });
    }
    let over_aggs = |e: &Expr| {
        let mut e = e.clone();
        substitute(&mut e, &|c| {
            (c >= nkeys).then(|| instead[c - nkeys].clone())
        });
        e
    };
    let keys_high: Vec<Expr> = keys_g.iter().map(to_high).collect();
    // The group's output: the columns the keys and the final calls read.
    let mut used = vec![false; types.len()];
    keys_high.iter().for_each(|k| k.mark_columns(&mut used));
    finals
        .iter()
        .flat_map(|c| c.arg.iter())
        .for_each(|a| a.mark_columns(&mut used));
    let output: Vec<usize> = (0..types.len()).filter(|&c| used[c]).collect();
    let pos = |mut e: Expr| {
        e.remap_columns(&mut |c| output.iter().position(|&o| o == c).unwrap_or(0));
        e
    };
    let finals: Vec<AggCall> = finals
        .into_iter()
        .map(|c| AggCall {
            arg: c.arg.map(pos),
            ..c
        })
        .collect();
    let table_types: Vec<A> = output.iter().map(|&c| eval_type(&types[c])).collect();
    let high_group = JoinGroup {
        leaves,
        conjuncts,
        outer: Vec::new(),
        nullable: 0,
        types,
        names,
        output: output.clone(),
    };
    Some(Plan {
        table_types,
        scan_columns: (0..output.len()).collect(),
        body: Body::Aggregate {
            keys: keys_high.into_iter().map(pos).collect(),
            aggs: Arc::new(finals),
            having: having.as_ref().map(over_aggs),
            post: post.iter().map(over_aggs).collect(),
            sets: sets.clone(),
        },
        input: Some(Arc::new(Input::Join(high_group))),
        ..plan.clone()
    })
}

/// The SQL name of a partial or final call's function.
fn func_name(f: AggFunc) -> &'static str {
    match f {
        AggFunc::CountStar | AggFunc::Count => "count",
        AggFunc::Sum => "sum",
        AggFunc::Min => "min",
        AggFunc::Max => "max",
        AggFunc::BoolAnd => "bool_and",
        AggFunc::BoolOr => "bool_or",
        _ => "avg",
    }
}
