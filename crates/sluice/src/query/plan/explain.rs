//! The plan as text, for EXPLAIN: one line per operator, outermost first,
//! with the facts of the run (segments pruned, workers, shards).
//!
//! For: [`Plan::describe`]. Not for: what the plan is (the parent module).

use std::fmt::Write as _;

use super::{Body, Plan};

impl Plan {
    /// The plan as text (EXPLAIN), with the execution facts filled in.
    pub fn describe(&self, facts: &crate::query::exec::ScanFacts) -> String {
        let mut s = String::new();
        let mut depth = 0;
        let line = |s: &mut String, depth: usize, text: String| {
            let _ = writeln!(s, "{}{text}", "  ".repeat(depth));
        };
        if self.limit.is_some() || self.offset > 0 {
            line(
                &mut s,
                depth,
                format!(
                    "Limit: {} offset {}",
                    self.limit.map_or("none".into(), |l| l.to_string()),
                    self.offset
                ),
            );
            depth += 1;
        }
        if !self.order.is_empty() {
            let keys: Vec<String> = self
                .order
                .iter()
                .map(|k| {
                    format!(
                        "{} {} NULLS {}",
                        self.names[k.column],
                        if k.descending { "DESC" } else { "ASC" },
                        if k.nulls_first { "FIRST" } else { "LAST" }
                    )
                })
                .collect();
            line(&mut s, depth, format!("Sort: {}", keys.join(", ")));
            depth += 1;
        }
        match &self.body {
            Body::Project(exprs) => {
                let shown: Vec<String> = exprs.iter().map(|e| e.to_string()).collect();
                line(&mut s, depth, format!("Projection: {}", shown.join(", ")));
                depth += 1;
            }
            Body::Aggregate {
                keys,
                aggs,
                having,
                post,
                sets,
            } => {
                let shown: Vec<String> = post.iter().map(|e| e.to_string()).collect();
                line(&mut s, depth, format!("Projection: {}", shown.join(", ")));
                depth += 1;
                if let Some(h) = having {
                    line(&mut s, depth, format!("Filter (HAVING): {h}"));
                    depth += 1;
                }
                // With grouping sets the last key is the set's number.
                let written = &keys[..keys.len() - usize::from(sets.is_some())];
                let k: Vec<String> = written.iter().map(|e| e.to_string()).collect();
                let a: Vec<String> = aggs.iter().map(|c| c.name.clone()).collect();
                line(
                    &mut s,
                    depth,
                    if facts.workers == 0 {
                        "Aggregate (Final): merge the partial tables once".to_string()
                    } else {
                        format!(
                            "Aggregate (Final): merge {} partial tables once",
                            facts.workers
                        )
                    },
                );
                depth += 1;
                line(
                    &mut s,
                    depth,
                    format!(
                        "Aggregate (Partial, per worker): keys=[{}] aggregates=[{}]",
                        k.join(", "),
                        a.join(", ")
                    ),
                );
                depth += 1;
                if let Some(sets) = sets {
                    let folded = crate::query::grouping::bases(sets)
                        .iter()
                        .filter(|b| b.is_none())
                        .count();
                    line(
                        &mut s,
                        depth,
                        format!(
                            "Grouping sets ({}; each row folded into {folded}, the others made from the groups of the smallest set holding them): {}",
                            sets.len(),
                            super::grouping::describe(sets, written)
                        ),
                    );
                    depth += 1;
                }
                if let Some(n) = facts.fused_programs {
                    line(
                        &mut s,
                        depth,
                        format!(
                            "Fused pass per 2048-row chunk: {n} distinct integer programs into 64-bit lanes while at most 64 groups and no NULLs (else per-aggregate path)"
                        ),
                    );
                    depth += 1;
                }
            }
        }
        if let Some(f) = &self.filter {
            line(&mut s, depth, format!("Filter: {f}"));
            depth += 1;
        }
        if self.table.is_some() && facts.shards > 1 {
            let what = if facts.index_lookup.is_some() {
                "each key read from the one shard its hash names"
            } else {
                "morsels of every shard from one counter; partial aggregates of all shards merged once"
            };
            line(
                &mut s,
                depth,
                format!(
                    "Fan-out over {} of {} shards: {what}",
                    facts.shards_read, facts.shards
                ),
            );
            depth += 1;
        }
        match &self.table {
            None if self.input.is_some() => match self.input.as_deref() {
                Some(super::Input::Join(g)) => describe_group(g, &mut s, depth),
                Some(super::Input::Set(set)) => describe_set(set, &mut s, depth),
                Some(super::Input::Window(w)) => describe_window(w, &mut s, depth),
                None => {}
            },
            // Not run (a FROM item of a join, described before it runs).
            Some(t) if facts.workers == 0 => line(
                &mut s,
                depth,
                format!(
                    "Scan {t}{}",
                    if self.key_lookup.is_some() {
                        " (or its primary-key index, for the keys the filter names)"
                    } else {
                        ""
                    }
                ),
            ),
            Some(t) if facts.index_lookup.is_some() => {
                let (keys, found) = facts.index_lookup.unwrap_or_default();
                line(
                    &mut s,
                    depth,
                    format!(
                        "Index lookup {t}: {keys} key{} through the primary-key index, {found} row{} found (no scan)",
                        if keys == 1 { "" } else { "s" },
                        if found == 1 { "" } else { "s" }
                    ),
                )
            }
            Some(t) if facts.from_manifest => line(
                &mut s,
                depth,
                format!(
                    "Rows of {t}: {} of {} segments, {} rows, {} from the manifest (no segment read)",
                    facts.segments_scanned,
                    facts.segments_total,
                    facts.rows,
                    if plan_reads_columns(self) {
                        "min/max/count taken from the column statistics"
                    } else {
                        "counted"
                    }
                ),
            ),
            Some(t) => line(
                &mut s,
                depth,
                format!(
                    "Scan {t}: {} of {} segments ({} pruned by zone maps), {}{} rows, morsels of {} rows from a lock-free counter, {} workers",
                    facts.segments_scanned,
                    facts.segments_total,
                    facts.segments_total - facts.segments_scanned,
                    if facts.batches_pruned > 0 {
                        format!(
                            "{} of {} record batches pruned by the zone maps in their segments, ",
                            facts.batches_pruned, facts.batches_total
                        )
                    } else {
                        String::new()
                    },
                    facts.rows,
                    facts.morsel_rows,
                    facts.workers
                ),
            ),
            None => line(&mut s, depth, "Values: one row".into()),
        }
        s
    }
}

/// A window operator and its input.
fn describe_window(w: &super::window::WindowInput, s: &mut String, depth: usize) {
    let pad = |d: usize| "  ".repeat(d);
    let mut sorts = 0;
    for (i, c) in w.calls.iter().enumerate() {
        if !w.calls[..i].iter().any(|o| o.same_sort(c)) {
            sorts += 1;
        }
    }
    let _ = writeln!(
        s,
        "{}Window: {} call{}, {sorts} sort{} (with PARTITION BY: rows hash-partitioned by its key, a bucket per worker, each sorted by partition and order key; without: one sort)",
        pad(depth),
        w.calls.len(),
        if w.calls.len() == 1 { "" } else { "s" },
        if sorts == 1 { "" } else { "s" },
    );
    for c in &w.calls {
        let _ = writeln!(s, "{}{}", pad(depth + 1), c.name);
    }
    for l in w
        .input
        .describe(&crate::query::exec::ScanFacts::default())
        .lines()
    {
        let _ = writeln!(s, "{}{l}", pad(depth + 1));
    }
}

/// A set operation and its sides.
fn describe_set(set: &super::setop::SetOp, s: &mut String, depth: usize) {
    use super::setop::SetKind;
    let pad = |d: usize| "  ".repeat(d);
    let what = match set.kind {
        SetKind::Union => "Union",
        SetKind::Intersect => "Intersect",
        SetKind::Except => "Except",
        SetKind::Distinct => "Distinct",
    };
    let _ = writeln!(
        s,
        "{}{what}{}: rows compared whole (NULL equal to NULL)",
        pad(depth),
        if set.all { " All" } else { "" }
    );
    for p in std::iter::once(&set.left).chain(set.right.as_ref()) {
        for l in p
            .describe(&crate::query::exec::ScanFacts::default())
            .lines()
        {
            let _ = writeln!(s, "{}{l}", pad(depth + 1));
        }
    }
}

/// The FROM items of a join, their conditions and joins.
fn describe_group(g: &super::from::JoinGroup, s: &mut String, depth: usize) {
    use super::from::JoinKind;
    let pad = |d: usize| "  ".repeat(d);
    let _ = writeln!(
        s,
        "{}Hash joins on every worker: order chosen when the items' rows are known (the largest probed; next, the join that keeps the fewest rows); each condition applied once its items are joined",
        pad(depth)
    );
    let _ = writeln!(
        s,
        "{}Runtime filters: items read smallest table first; a table joined by = on one of its columns to a smaller item already read reads only that item's keys (EXPLAIN ANALYZE shows them)",
        pad(depth)
    );
    for c in &g.conjuncts {
        let kind = if c.equi.is_some() {
            "Join key"
        } else {
            "Condition"
        };
        let _ = writeln!(s, "{}{kind}: {}", pad(depth + 1), c.expr);
    }
    for st in &g.outer {
        let kind = match st.kind {
            JoinKind::Inner => "Inner join",
            JoinKind::Left => "Left join",
            JoinKind::Full => "Full join",
            JoinKind::Semi => "Semi join (EXISTS / IN)",
            JoinKind::Anti => "Anti join (NOT EXISTS)",
            JoinKind::AntiNull => "Anti join, NULL-aware (NOT IN)",
            JoinKind::Mark => "Mark join (EXISTS under OR / NOT: a true/false column per row)",
        };
        let on: Vec<String> = st.on.iter().map(|c| c.expr.to_string()).collect();
        let _ = writeln!(
            s,
            "{}{kind} {} ON {}",
            pad(depth + 1),
            g.leaves[st.leaf].name,
            if on.is_empty() {
                "TRUE".into()
            } else {
                on.join(" AND ")
            }
        );
    }
    for leaf in &g.leaves {
        let what = if leaf.table.is_some() {
            "Item"
        } else {
            "Subquery"
        };
        let _ = writeln!(s, "{}{what} {}:", pad(depth + 1), leaf.name);
        if let Some(f) = &leaf.filter {
            let _ = writeln!(s, "{}Filter: {f}", pad(depth + 2));
        }
        let inner = leaf
            .plan
            .describe(&crate::query::exec::ScanFacts::default());
        for l in inner.lines() {
            let _ = writeln!(s, "{}{l}", pad(depth + 2));
        }
    }
}

/// Whether the plan names any column (a scan answered by the manifest then
/// took column statistics, not only row counts).
fn plan_reads_columns(plan: &super::Plan) -> bool {
    !plan.scan_columns.is_empty()
}
