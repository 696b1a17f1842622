//! Planning a query over several FROM items: joins (`,`, `JOIN … ON`,
//! `USING`, `NATURAL`, `LEFT`/`RIGHT`/`FULL`), subqueries in FROM and
//! common table expressions (`WITH`).
//!
//! For: turning the FROM clause into a [`JoinGroup`] — one leaf per FROM
//! item (a scan of a stored table with the conditions that concern it
//! alone pushed into it, so zone maps and key lookups still apply; or a
//! planned subquery), the join conditions split into conjuncts, and the
//! outer joins with their ON conditions — and planning the rest of the
//! query (select list, grouping, order, limit) over the group's output
//! as over one table. Not for: choosing the join order or running the
//! joins ([`crate::query::join`], at run time, from the leaves' real
//! row counts) or the hash table ([`crate::query::hash_join`]).

use std::sync::Arc;

use arrow_schema::DataType as A;
use sqlparser::ast::{self, Spanned};

use super::super::bind::{Binder, Relations, Scope};
use super::super::expr::{BinOp, Expr, eval_type};
use super::super::sql::{Text, at, plan_err, unsupported};
use super::{Body, Catalog, Plan, limit_offset, push_down};
use crate::batch::Schema;
use crate::error::{Error, Result};

/// The most FROM items one query may join (relation sets are bit masks).
pub const MAX_FROM_ITEMS: usize = 64;

/// The common table expressions (`WITH`) in scope: name, query, column
/// names and how many times the statement's text names it, the
/// innermost last.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ctes(Vec<(String, Arc<ast::Query>, Vec<String>, usize)>);

impl Ctes {
    /// These CTEs with the WITH of `q` added (a later one sees the
    /// earlier ones).
    pub(super) fn with(&self, q: &ast::Query) -> Result<Ctes> {
        let mut out = self.clone();
        let Some(w) = &q.with else {
            return Ok(out);
        };
        if w.recursive {
            return Err(unsupported("WITH RECURSIVE", w));
        }
        for c in &w.cte_tables {
            if c.materialized.is_some() {
                // MATERIALIZED / NOT MATERIALIZED: a hint, the answer is the same.
            }
            let name = c.alias.name.value.to_ascii_lowercase();
            let cols = c
                .alias
                .columns
                .iter()
                .map(|col| col.name.value.clone())
                .collect();
            // The FROM items of the query (its WITH and body) of this
            // name (one of an inner CTE or table so named counts too: at
            // worst a CTE used once is kept till the statement ends).
            let mut uses = 0;
            let _ = ast::visit_relations(q, |r: &ast::ObjectName| {
                if r.0.len() == 1
                    && r.0[0]
                        .as_ident()
                        .is_some_and(|i| i.value.eq_ignore_ascii_case(&name))
                {
                    uses += 1;
                }
                std::ops::ControlFlow::<()>::Continue(())
            });
            out.0.push((name, Arc::new((*c.query).clone()), cols, uses));
        }
        Ok(out)
    }

    /// The CTE `name`: its query, column names, the CTEs it sees and
    /// whether the statement names it more than once.
    fn get(&self, name: &str) -> Option<(&Arc<ast::Query>, &[String], Ctes, bool)> {
        let i = self.0.iter().rposition(|c| c.0 == name)?;
        // A CTE sees the ones defined before it, not itself.
        let scope = Ctes(self.0[..i].to_vec());
        Some((&self.0[i].1, &self.0[i].2, scope, self.0[i].3 > 1))
    }

    /// Whether `name` is a CTE in scope.
    pub(super) fn has(&self, name: &str) -> bool {
        self.0.iter().any(|c| c.0 == name)
    }
}

/// One FROM item of a joined query.
#[derive(Debug, Clone)]
pub struct Leaf {
    /// The name the query knows it by (alias, else table name).
    pub name: String,
    /// The stored table it scans (`None`: a subquery or CTE).
    pub table: Option<String>,
    /// Its rows: a scan of the table (the conditions on it alone pushed
    /// in) whose visible columns are `columns`, or a planned subquery.
    pub plan: Plan,
    /// The global column (see [`JoinGroup::types`]) of each column the
    /// plan returns.
    pub columns: Vec<usize>,
    /// Conditions on this item alone, over its plan's output columns,
    /// applied to a subquery's rows (a table's are in its scan).
    pub filter: Option<Expr>,
    /// The CTE it reads, if any (its definition's identity in the
    /// statement): two leaves of one CTE whose plans are alike are run
    /// once (see `join::run`).
    pub cte: Option<usize>,
}

/// A condition of the join (a conjunct of WHERE or of an ON), over the
/// global columns.
#[derive(Debug, Clone)]
pub struct Conjunct {
    pub expr: Expr,
    /// The FROM items it reads (bit `i`: leaf `i`).
    pub items: u64,
    /// `l = r` with `l` and `r` reading disjoint sets of items, at most
    /// one of them empty: the two sides and their items (a hash join's
    /// keys).
    pub equi: Option<(Expr, u64, Expr, u64)>,
}

/// The kind of a join step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    /// The probe side keeps its rows without a match.
    Left,
    /// Both sides keep their rows without a match.
    Full,
    /// The probe rows with a match, once each (EXISTS, IN); the other
    /// side's columns are not kept.
    Semi,
    /// The probe rows without a match (NOT EXISTS).
    Anti,
    /// NOT IN: the probe rows without a match, none at all when the
    /// other side has a NULL key, and a probe row with a NULL key only
    /// when the other side is empty.
    AntiNull,
    /// EXISTS under OR or NOT: every probe row kept, with a BOOLEAN
    /// column ([`OuterStep::mark`]) saying whether it has a match.
    Mark,
}

/// An outer join: `leaf` is joined with its ON conditions to the items
/// before it, which keep their rows (and, `Full`, so does `leaf`).
#[derive(Debug, Clone)]
pub struct OuterStep {
    pub kind: JoinKind,
    pub leaf: usize,
    pub on: Vec<Conjunct>,
    /// A mark join's column: the global column its BOOLEAN goes into
    /// (the leaf's last, which its plan does not make).
    pub mark: Option<usize>,
}

/// The FROM clause of a joined query, ready to run.
#[derive(Debug, Clone)]
pub struct JoinGroup {
    pub leaves: Vec<Leaf>,
    /// WHERE and inner-join conditions not pushed into a leaf.
    pub conjuncts: Vec<Conjunct>,
    pub outer: Vec<OuterStep>,
    /// The items an outer join fills with NULLs (bit per leaf).
    pub nullable: u64,
    /// Types of every global column (leaf after leaf, each leaf's
    /// columns as its table or subquery has them).
    pub types: Vec<A>,
    /// Names of the global columns, qualified (`o.o_orderkey`).
    pub names: Vec<String>,
    /// The global columns the group returns, in this order.
    pub output: Vec<usize>,
}

/// The relations a bound expression over the global columns reads.
pub(crate) fn items_of(e: &Expr, owner: &[usize]) -> u64 {
    let mut used = vec![false; owner.len()];
    e.mark_columns(&mut used);
    used.iter()
        .enumerate()
        .filter(|(_, u)| **u)
        .fold(0u64, |m, (c, _)| m | (1u64 << owner[c]))
}

/// Splits a condition into its AND-ed parts.
fn split_and(e: Expr, out: &mut Vec<Expr>) {
    crate::query::optimize::split(e, BinOp::And, out)
}

impl Conjunct {
    pub(crate) fn new(expr: Expr, owner: &[usize]) -> Conjunct {
        let items = items_of(&expr, owner);
        let equi = match &expr {
            Expr::Binary {
                op: BinOp::Eq,
                left,
                right,
            } => {
                let (l, r) = (items_of(left, owner), items_of(right, owner));
                // One side may read no item (`8 NOT IN (SELECT …)`): a
                // constant key, the same for every row of its side.
                ((l | r) != 0 && l & r == 0).then(|| (*left.clone(), l, *right.clone(), r))
            }
            _ => None,
        };
        Conjunct { expr, items, equi }
    }
}

/// A FROM item as written, resolved: its name, columns and rows.
pub(super) struct Item {
    pub name: String,
    pub columns: Vec<(String, A)>,
    source: Source,
    /// A stored table's FROM item as written (`part`, `nation n1`).
    pub factor: Option<ast::TableFactor>,
    /// The subquery of a mark join: its last column is the mark, made by
    /// the join, not by its plan.
    pub mark: bool,
    /// The CTE it reads (see [`Leaf::cte`]).
    cte: Option<usize>,
}

enum Source {
    Table(String, Schema),
    Query(Box<Plan>),
}

/// How an item is joined to the items before it.
struct Step {
    /// The items before it at that point (its ON may read only those and itself).
    before: usize,
}

/// A FROM item's name and its columns (name, type).
pub(super) type NamedColumns = (String, Vec<(String, A)>);

/// The names and columns of a FROM clause's items (tables, CTEs and
/// subqueries resolved).
pub(super) fn resolve_all(
    from: &[ast::TableWithJoins],
    catalog: &dyn Catalog,
    ctes: &Ctes,
    text: Text,
) -> Result<Vec<NamedColumns>> {
    let mut items = Vec::new();
    let mut steps = Vec::new();
    flatten(from, catalog, ctes, text, &mut items, &mut steps)?;
    Ok(items.into_iter().map(|i| (i.name, i.columns)).collect())
}

/// Whether a SELECT needs a join group: anything but one stored table,
/// or a WHERE with a subquery (a join with the subquery's rows).
pub(super) fn needs_group(select: &ast::Select, ctes: &Ctes) -> bool {
    if !select.from.is_empty() && super::subquery::where_has_subquery(select) {
        return true;
    }
    match select.from.as_slice() {
        [] => false,
        [twj] => {
            !twj.joins.is_empty()
                || match &twj.relation {
                    // A CTE, or columns renamed by `AS x (a, b)`.
                    ast::TableFactor::Table { name, alias, .. } => {
                        alias.as_ref().is_some_and(|a| !a.columns.is_empty())
                            || name
                                .0
                                .last()
                                .and_then(|p| p.as_ident())
                                .is_some_and(|i| ctes.has(&i.value.to_ascii_lowercase()))
                    }
                    _ => true,
                }
        }
        _ => true,
    }
}

/// The stored table a FROM item's name means (`public.t`,
/// `pg_catalog.pg_class`, `information_schema.tables`: see
/// [`crate::query::catalog::resolve`]), the name errors show, its last
/// part (lower case), and its schema, `None` when there is no such table.
pub(super) fn stored_table(
    name: &ast::ObjectName,
    catalog: &dyn Catalog,
    node: &impl Spanned,
) -> Result<(String, String, String, Option<Schema>)> {
    let parts = name
        .0
        .iter()
        .map(|p| p.as_ident().map(|i| i.value.to_ascii_lowercase()))
        .collect::<Option<Vec<String>>>()
        .filter(|p| !p.is_empty())
        .ok_or_else(|| plan_err(format!("bad table name {name}"), node))?;
    let last = parts[parts.len() - 1].clone();
    let stored = crate::query::catalog::resolve(&parts, |n| catalog.table_schema(n).is_some())
        .ok_or_else(|| {
            Error::UndefinedTable(format!(
                "schema {:?} does not exist{}",
                parts[..parts.len() - 1].join("."),
                at(node.span())
            ))
        })?;
    let schema = catalog.table_schema(&stored);
    // A table of PostgreSQL's catalog that sluice's has not: refused, not
    // said to be missing.
    if schema.is_none()
        && let [s, _] = parts.as_slice()
        && crate::query::catalog::is_catalog_schema(s)
    {
        return Err(Error::Unsupported(format!(
            "{} is not supported: sluice's catalog has {}{}",
            parts.join("."),
            crate::query::catalog::table_list(s),
            at(node.span())
        )));
    }
    // An error names the table as the statement does.
    let shown = if stored.contains("__") {
        parts.join(".")
    } else {
        stored.clone()
    };
    Ok((stored, shown, last, schema))
}

/// Resolves one FROM item (a table, a CTE or a subquery).
fn resolve(f: &ast::TableFactor, catalog: &dyn Catalog, ctes: &Ctes, text: Text) -> Result<Item> {
    match f {
        ast::TableFactor::Table {
            name, alias, args, ..
        } => {
            if args.is_some() {
                return Err(unsupported("table functions", f));
            }
            let (tname, shown, last, schema) = stored_table(name, catalog, f)?;
            let known = alias
                .as_ref()
                .map(|a| a.name.value.to_ascii_lowercase())
                .unwrap_or_else(|| last.clone());
            if name.0.len() == 1
                && let Some((q, cols, scope, shared)) = ctes.get(&last)
            {
                let plan = super::plan_query_in(q, catalog, false, text, &scope)?;
                let mut item = query_item(known, plan, cols, f)?;
                rename(&mut item, alias.as_ref(), f)?;
                item.cte = shared.then_some(Arc::as_ptr(q) as usize);
                return Ok(item);
            }
            let schema = schema.ok_or_else(|| {
                Error::UndefinedTable(format!("no table named {:?}{}", shown, at(f.span())))
            })?;
            let mut item = Item {
                name: known,
                columns: schema
                    .columns
                    .iter()
                    .map(|c| (c.name.clone(), c.data_type.arrow_type()))
                    .collect(),
                source: Source::Table(tname, schema),
                factor: Some(f.clone()),
                mark: false,
                cte: None,
            };
            rename(&mut item, alias.as_ref(), f)?;
            Ok(item)
        }
        ast::TableFactor::Derived {
            lateral,
            subquery,
            alias,
            ..
        } => {
            if *lateral {
                return Err(unsupported("LATERAL", f));
            }
            let Some(a) = alias else {
                return Err(plan_err(
                    "a subquery in FROM must have an alias: (SELECT …) AS name".into(),
                    f,
                ));
            };
            let plan = super::plan_query_in(subquery, catalog, false, text, ctes)?;
            let mut item = query_item(a.name.value.to_ascii_lowercase(), plan, &[], f)?;
            rename(&mut item, Some(a), f)?;
            Ok(item)
        }
        other => Err(unsupported("this kind of FROM item", other)),
    }
}

/// A planned subquery as a FROM item; `cols` rename its columns.
pub(super) fn query_item(
    name: String,
    plan: Plan,
    cols: &[String],
    node: &impl Spanned,
) -> Result<Item> {
    if plan.explain {
        return Err(unsupported("EXPLAIN in FROM", node));
    }
    let schema = crate::query::exec::result_schema(&plan);
    let mut columns: Vec<(String, A)> = schema
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone()))
        .collect();
    if cols.len() > columns.len() {
        return Err(plan_err(
            format!(
                "{name} has {} columns but {} names were given",
                columns.len(),
                cols.len()
            ),
            node,
        ));
    }
    for (c, n) in columns.iter_mut().zip(cols) {
        c.0 = n.clone();
    }
    Ok(Item {
        name,
        columns,
        source: Source::Query(Box::new(plan)),
        factor: None,
        mark: false,
        cte: None,
    })
}

/// `AS t (a, b)`: new names for the first columns.
fn rename(item: &mut Item, alias: Option<&ast::TableAlias>, node: &impl Spanned) -> Result<()> {
    let Some(a) = alias else { return Ok(()) };
    if a.columns.len() > item.columns.len() {
        return Err(plan_err(
            format!(
                "{} has {} columns but {} names were given",
                item.name,
                item.columns.len(),
                a.columns.len()
            ),
            node,
        ));
    }
    for (c, n) in item.columns.iter_mut().zip(&a.columns) {
        c.0 = n.name.value.clone();
    }
    Ok(())
}

/// Flattens the FROM clause into items and how each joins the ones before.
fn flatten(
    from: &[ast::TableWithJoins],
    catalog: &dyn Catalog,
    ctes: &Ctes,
    text: Text,
    items: &mut Vec<Item>,
    steps: &mut Vec<(Step, Option<ast::JoinOperator>)>,
) -> Result<()> {
    for twj in from {
        factor(&twj.relation, catalog, ctes, text, items, steps, None)?;
        for j in &twj.joins {
            factor(
                &j.relation,
                catalog,
                ctes,
                text,
                items,
                steps,
                Some(&j.join_operator),
            )?;
        }
    }
    Ok(())
}

fn factor(
    f: &ast::TableFactor,
    catalog: &dyn Catalog,
    ctes: &Ctes,
    text: Text,
    items: &mut Vec<Item>,
    steps: &mut Vec<(Step, Option<ast::JoinOperator>)>,
    op: Option<&ast::JoinOperator>,
) -> Result<()> {
    if let ast::TableFactor::NestedJoin {
        table_with_joins,
        alias,
    } = f
    {
        if alias.is_some() {
            return Err(unsupported("an alias on a parenthesised join", f));
        }
        // `a JOIN (b JOIN c ON …) ON …`: the same as without the
        // parentheses when every join inside and this one are inner.
        let inner = |o: &ast::JoinOperator| {
            matches!(
                o,
                ast::JoinOperator::Join(_)
                    | ast::JoinOperator::Inner(_)
                    | ast::JoinOperator::CrossJoin(_)
            )
        };
        if !table_with_joins
            .joins
            .iter()
            .all(|j| inner(&j.join_operator))
            || op.is_some_and(|o| !inner(o))
        {
            return Err(unsupported(
                "an outer join inside parentheses (write the joins without them)",
                f,
            ));
        }
        let before = items.len();
        flatten(
            std::slice::from_ref(table_with_joins.as_ref()),
            catalog,
            ctes,
            text,
            items,
            steps,
        )?;
        // The nested join's first item joins the items before with this
        // join's operator (its ON may read any item of the group).
        if let Some(o) = op
            && let Some(s) = steps.get_mut(before)
        {
            s.1 = Some(o.clone());
            s.0.before = items.len();
        }
        return Ok(());
    }
    let before = items.len();
    items.push(resolve(f, catalog, ctes, text)?);
    if items.len() > MAX_FROM_ITEMS {
        return Err(plan_err(
            format!("a query may join at most {MAX_FROM_ITEMS} FROM items"),
            f,
        ));
    }
    steps.push((Step { before }, op.cloned()));
    Ok(())
}

/// Plans a SELECT whose FROM has several items, a subquery or a CTE.
pub(super) fn plan_joined(
    q: &ast::Query,
    select: &ast::Select,
    catalog: &dyn Catalog,
    explain: bool,
    text: Text,
    ctes: &Ctes,
) -> Result<Plan> {
    let mut items = Vec::new();
    let mut steps = Vec::new();
    flatten(&select.from, catalog, ctes, text, &mut items, &mut steps)?;
    // Subqueries in WHERE: more FROM items, joined as they say.
    // The items an outer join may fill with NULLs: a correlated
    // subquery's keys are not narrowed to their rows (a NULL-filled row
    // is not among them; `Ctx::magic`).
    let mut may_be_null = vec![false; items.len()];
    for (i, (_, op)) in steps.iter().enumerate() {
        use ast::JoinOperator as J;
        match op {
            Some(J::Left(_) | J::LeftOuter(_)) => may_be_null[i] = true,
            Some(J::Right(_) | J::RightOuter(_) | J::FullOuter(_)) => {
                may_be_null[..=i].iter_mut().for_each(|m| *m = true)
            }
            _ => {}
        }
    }
    let outer_scope = super::subquery::Scope {
        factors: items
            .iter()
            .zip(&may_be_null)
            .map(|(i, null)| if *null { None } else { i.factor.clone() })
            .collect(),
        items: items
            .iter()
            .map(|i| {
                (
                    i.name.clone(),
                    i.columns.iter().map(|c| c.0.clone()).collect(),
                )
            })
            .collect(),
    };
    let unnested =
        super::subquery::unnest(select.selection.as_ref(), &outer_scope, catalog, ctes, text)?;
    let from_items = items.len();
    items.extend(unnested.items);
    // The same name twice in one FROM is refused, as in PostgreSQL.
    for (i, it) in items.iter().enumerate() {
        if items[..i].iter().any(|o| o.name == it.name) {
            return Err(plan_err(
                format!(
                    "table name {:?} specified more than once (give one an alias)",
                    it.name
                ),
                select,
            ));
        }
    }

    // The global columns: every item's, item after item.
    let mut columns: Vec<(String, A)> = Vec::new();
    let mut owner = Vec::new();
    let mut offsets = Vec::new();
    for (i, it) in items.iter().enumerate() {
        offsets.push(columns.len());
        for c in &it.columns {
            columns.push(c.clone());
            owner.push(i);
        }
    }
    // A subquery's columns are reached by its item's name alone.
    let mut hidden: Vec<bool> = owner.iter().map(|&o| o >= from_items).collect();
    let names: Vec<String> = items.iter().map(|i| i.name.clone()).collect();

    // USING / NATURAL: the equalities they mean, and the right side's
    // column hidden from bare names and `*`.
    let mut using: Vec<Vec<(usize, usize)>> = vec![Vec::new(); items.len()];
    // The joined columns of USING / NATURAL, which `*` shows first.
    let mut shown_first: Vec<usize> = Vec::new();
    for (i, (step, op)) in steps.iter().enumerate() {
        let Some(op) = op else { continue };
        let constraint = join_constraint(op);
        let right: Vec<usize> = (0..columns.len()).filter(|&c| owner[c] == i).collect();
        let left: Vec<usize> = (0..columns.len())
            .filter(|&c| owner[c] < step.before && !hidden[c])
            .collect();
        if matches!(op, ast::JoinOperator::FullOuter(_))
            && matches!(
                constraint,
                Some(ast::JoinConstraint::Using(_) | ast::JoinConstraint::Natural)
            )
        {
            return Err(unsupported(
                "FULL JOIN … USING / NATURAL FULL JOIN (write ON)",
                select,
            ));
        }
        let pairs: Vec<String> = match constraint {
            Some(ast::JoinConstraint::Using(cols)) => cols
                .iter()
                .map(|n| {
                    n.0.last()
                        .and_then(|p| p.as_ident())
                        .map(|i| i.value.clone())
                        .unwrap_or_default()
                })
                .collect(),
            Some(ast::JoinConstraint::Natural) => right
                .iter()
                .map(|&c| columns[c].0.clone())
                .filter(|n| left.iter().any(|&l| columns[l].0 == *n))
                .collect(),
            _ => continue,
        };
        for n in pairs {
            let find = |set: &[usize], side: &str| -> Result<usize> {
                let found: Vec<usize> = set
                    .iter()
                    .copied()
                    .filter(|&c| columns[c].0.eq_ignore_ascii_case(&n))
                    .collect();
                match found.as_slice() {
                    [c] => Ok(*c),
                    [] => Err(Error::UndefinedColumn(format!(
                        "column {n:?} named in USING is not in the {side} table{}",
                        at(select.span())
                    ))),
                    _ => Err(Error::Ambiguous(format!(
                        "column {n:?} named in USING appears more than once in the {side} table{}",
                        at(select.span())
                    ))),
                }
            };
            let (l, r) = (find(&left, "left")?, find(&right, "right")?);
            // The joined column is the side that keeps its rows: the
            // right one of a RIGHT JOIN, else the left.
            let right_kept = matches!(
                op,
                ast::JoinOperator::Right(_) | ast::JoinOperator::RightOuter(_)
            );
            hidden[if right_kept { l } else { r }] = true;
            shown_first.push(if right_kept { r } else { l });
            using[i].push((l, r));
        }
    }
    let rels = Relations {
        names: names.clone(),
        owner: owner.clone(),
        hidden: hidden.clone(),
    };
    let sub = super::Subplans {
        catalog,
        ctes,
        text,
    };
    let windows = super::window::Collector::new(select);
    let binder = Binder::new(None, None, &columns, text)
        .with_zone(&catalog.time_zone())
        .with_relations(rels)
        .with_subqueries(&sub)
        .with_windows(&windows);

    // Which items an outer join may fill with NULLs (their conditions in
    // WHERE are not pushed below the join).
    let mut nullable = 0u64;
    let mut outer: Vec<(JoinKind, usize, Vec<Expr>)> = Vec::new();
    let mut inner_on: Vec<Expr> = Vec::new();
    for (i, (step, op)) in steps.iter().enumerate() {
        let Some(op) = op else { continue };
        let mut on = Vec::new();
        if let Some(ast::JoinConstraint::On(e)) = join_constraint(op) {
            let b = binder.bind(e, &mut Scope::Row { clause: "ON" })?;
            let b = binder.boolean(b, e, "JOIN … ON")?;
            // ON may read this item and the ones before it.
            let reads = items_of(&b, &owner);
            if reads >> step.before.max(i + 1) != 0 {
                return Err(plan_err(
                    "invalid reference to a FROM item that comes later, in JOIN … ON".into(),
                    e,
                ));
            }
            split_and(b, &mut on);
        }
        for &(l, r) in &using[i] {
            on.push(equality(&binder, l, r, &columns)?);
        }
        match op {
            ast::JoinOperator::Join(_)
            | ast::JoinOperator::Inner(_)
            | ast::JoinOperator::CrossJoin(_) => inner_on.extend(on),
            ast::JoinOperator::Left(_) | ast::JoinOperator::LeftOuter(_) => {
                nullable |= 1 << i;
                outer.push((JoinKind::Left, i, on));
            }
            ast::JoinOperator::Right(_) | ast::JoinOperator::RightOuter(_) => {
                // `a RIGHT JOIN b`: `b LEFT JOIN a`, when `a` is one item.
                if i != 1 || steps.len() != 2 {
                    return Err(unsupported(
                        "RIGHT JOIN after other joins (write it as a LEFT JOIN)",
                        select,
                    ));
                }
                nullable |= 1;
                outer.push((JoinKind::Left, 0, on));
            }
            ast::JoinOperator::FullOuter(_) => {
                if i != 1 || steps.len() != 2 {
                    return Err(unsupported("FULL JOIN of more than two FROM items", select));
                }
                nullable |= 3;
                outer.push((JoinKind::Full, 1, on));
            }
            _ => {
                return Err(unsupported(
                    "this kind of join (ASOF, APPLY, SEMI, ANTI …)",
                    select,
                ));
            }
        }
    }

    // Semi and anti joins: their conditions, bound over every item.
    for step in &unnested.semi {
        let leaf = from_items + step.item;
        let mut on = Vec::new();
        for c in &step.on {
            let b = binder.bind(c, &mut Scope::Row { clause: "WHERE" })?;
            let b = binder.boolean(b, c, "WHERE")?;
            split_and(b, &mut on);
        }
        if matches!(step.kind, JoinKind::Left | JoinKind::Mark) {
            // A correlated count's groups: NULL where an outer row has none.
            nullable |= 1 << leaf;
        }
        outer.push((step.kind, leaf, on));
    }
    let mut filter: Option<Expr> = None;
    for w in &unnested.conds {
        let e = binder.bind(w, &mut Scope::Row { clause: "WHERE" })?;
        let e = binder.boolean(e, w, "WHERE")?;
        filter = Some(match filter {
            None => e,
            Some(f) => Expr::Binary {
                op: BinOp::And,
                left: Box::new(f),
                right: Box::new(e),
            },
        });
    }

    // A LEFT JOIN whose right item a WHERE conjunct rejects when NULL
    // (`b.x = a.y`, `b.x > 5`, `b.x IS NOT NULL`) keeps no row it fills
    // with NULLs: it is an inner join, its ON conditions inner ones, and
    // its item is read, ordered and filtered as any inner item (see
    // `optimize::outer_to_inner`).
    if let Some(f) = &filter {
        let mut parts = Vec::new();
        split_and(f.clone(), &mut parts);
        let mut still = Vec::new();
        for (kind, leaf, on) in outer {
            let rejected = kind == JoinKind::Left
                && leaf < from_items
                && parts.iter().any(|c| {
                    crate::query::optimize::outer_to_inner::rejects_null(c, &|col| {
                        owner[col] == leaf
                    })
                });
            if rejected {
                nullable &= !(1u64 << leaf);
                inner_on.extend(on);
            } else {
                still.push((kind, leaf, on));
            }
        }
        outer = still;
    }

    // The select list, grouping, order and limit: over the global columns.
    let items_sel = select_items_joined(select, &columns, &owner, &hidden, &names, &shown_first)?;
    let super::Shaped {
        mut body,
        order,
        names: out_names,
        visible,
        window,
    } = super::shape(q, select, &binder, &items_sel, &columns, text, &windows)?;
    let (limit, offset) = limit_offset(q, text)?;

    // The conditions: those on one item that no outer join fills with
    // NULLs go into its scan; the rest stay with the group.
    let mut conds: Vec<Expr> = Vec::new();
    if let Some(f) = filter.take() {
        split_and(f, &mut conds);
    }
    conds.extend(inner_on);
    // An equality every branch of an OR holds becomes a join key.
    let mut conds: Vec<Expr> = conds
        .into_iter()
        .flat_map(|c| {
            let mut parts = Vec::new();
            split_and(crate::query::optimize::factor_or::factor_or(c), &mut parts);
            parts
        })
        .collect();
    // What an OR says of one item alone, that item's scan applies first.
    let implied: Vec<Expr> = conds
        .iter()
        .flat_map(|c| {
            crate::query::optimize::implied_or::implied_by_or(c, &|e| items_of(e, &owner))
        })
        .collect();
    conds.extend(implied);
    let mut pushed: Vec<Vec<Expr>> = vec![Vec::new(); items.len()];
    let mut conjuncts = Vec::new();
    for c in conds {
        let reads = items_of(&c, &owner);
        if reads.count_ones() == 1 && reads & nullable == 0 {
            pushed[reads.trailing_zeros() as usize].push(c);
        } else {
            conjuncts.push(Conjunct::new(c, &owner));
        }
    }
    let mut outer_steps = Vec::new();
    for (kind, leaf, on) in outer {
        let mut kept = Vec::new();
        for c in on {
            let reads = items_of(&c, &owner);
            // A LEFT (or semi, anti) join's condition on its right side
            // alone filters that side before the join.
            if matches!(
                kind,
                JoinKind::Left | JoinKind::Semi | JoinKind::Anti | JoinKind::Mark
            ) && reads == 1u64 << leaf
            {
                pushed[leaf].push(c);
            } else {
                kept.push(Conjunct::new(c, &owner));
            }
        }
        outer_steps.push(OuterStep {
            kind,
            leaf,
            on: kept,
            mark: (kind == JoinKind::Mark && items[leaf].mark)
                .then(|| offsets[leaf] + items[leaf].columns.len() - 1),
        });
    }

    // The global columns the rest of the query reads: the group's output.
    let mut top_filter = None;
    let output = push_down(&mut top_filter, &mut body, columns.len());
    // Every leaf returns the columns the output and the conditions read.
    let mut needed = vec![false; columns.len()];
    for &c in &output {
        needed[c] = true;
    }
    for c in conjuncts
        .iter()
        .chain(outer_steps.iter().flat_map(|s| s.on.iter()))
    {
        c.expr.mark_columns(&mut needed);
    }
    let mut leaves = Vec::new();
    for (i, it) in items.into_iter().enumerate() {
        let off = offsets[i];
        let n = it.columns.len();
        let cond = crate::query::optimize::join(pushed[i].drain(..).collect(), BinOp::And);
        let local = |mut e: Expr| {
            e.remap_columns(&mut |g| g - off);
            e
        };
        match it.source {
            Source::Table(table, schema) => {
                let cols: Vec<usize> = (0..n).filter(|&c| needed[off + c]).collect();
                let mut plan = scan_plan(&table, &schema, cond.map(local), &cols)?;
                plan.init_plans = binder.has_subqueries();
                leaves.push(Leaf {
                    name: it.name,
                    table: Some(table),
                    plan,
                    columns: cols.iter().map(|c| off + c).collect(),
                    filter: None,
                    cte: None,
                });
            }
            Source::Query(plan) => {
                // The conditions on its rows alone go into it as far as
                // they may (through its select list, GROUP BY keys and
                // UNION branches, into its scans).
                let mut plan = *plan;
                let filter = cond.map(local).and_then(|c| {
                    crate::query::optimize::push_filter::push_conjuncts(&mut plan, c)
                });
                // A mark join's subquery: its last column is the join's.
                let made = if it.mark { n - 1 } else { n };
                leaves.push(Leaf {
                    name: it.name,
                    table: None,
                    plan,
                    columns: (off..off + made).collect(),
                    filter,
                    cte: it.cte,
                })
            }
        }
    }
    let types: Vec<A> = columns.iter().map(|c| c.1.clone()).collect();
    let qualified: Vec<String> = (0..columns.len())
        .map(|c| format!("{}.{}", names[owner[c]], columns[c].0))
        .collect();
    let table_types: Vec<A> = output.iter().map(|&c| eval_type(&types[c])).collect();
    let group = JoinGroup {
        leaves,
        conjuncts,
        outer: outer_steps,
        nullable,
        types,
        names: qualified,
        output: output.clone(),
    };
    let depth = group_depth(&group);
    let plan = Plan {
        table: None,
        table_types,
        scan_columns: (0..output.len()).collect(),
        filter: None,
        body,
        names: out_names,
        visible,
        order,
        limit,
        offset,
        prune: Vec::new(),
        key_lookup: None,
        explain,
        depth,
        input: Some(Arc::new(super::Input::Join(group))),
        init_plans: binder.has_subqueries(),
        analyze: false,
        catalog: None,
    };
    // An aggregate over inner joins: partly below them where that pays
    // (`optimize::eager_agg`).
    let plan = crate::query::optimize::eager_agg::eager_aggregate(plan, catalog);
    Ok(super::window::wrap(plan, window))
}

/// The deepest nesting of the group's subqueries (they run on threads
/// sized for it).
fn group_depth(g: &JoinGroup) -> usize {
    g.leaves.iter().map(|l| l.plan.depth).max().unwrap_or(0)
}

fn join_constraint(op: &ast::JoinOperator) -> Option<&ast::JoinConstraint> {
    use ast::JoinOperator as J;
    match op {
        J::Join(c)
        | J::Inner(c)
        | J::Left(c)
        | J::LeftOuter(c)
        | J::Right(c)
        | J::RightOuter(c)
        | J::FullOuter(c)
        | J::CrossJoin(c) => Some(c),
        _ => None,
    }
}

/// `l = r` over two global columns (USING / NATURAL).
fn equality(binder: &Binder, l: usize, r: usize, columns: &[(String, A)]) -> Result<Expr> {
    let node = ast::Expr::Identifier(ast::Ident::new(columns[l].0.clone()));
    binder.column_equality(l, r, &node)
}

/// The select items of a joined query, `*` and `t.*` expanded to
/// qualified columns.
fn select_items_joined(
    select: &ast::Select,
    columns: &[(String, A)],
    owner: &[usize],
    hidden: &[bool],
    names: &[String],
    first: &[usize],
) -> Result<Vec<(ast::Expr, String)>> {
    let col = |c: usize| {
        (
            ast::Expr::CompoundIdentifier(vec![
                ast::Ident::new(names[owner[c]].clone()),
                ast::Ident::with_quote('"', columns[c].0.clone()),
            ]),
            columns[c].0.clone(),
        )
    };
    let mut items = Vec::new();
    for item in &select.projection {
        match item {
            ast::SelectItem::Wildcard(_) => {
                // As PostgreSQL: the USING columns, then every other.
                items.extend(first.iter().copied().map(col));
                items.extend(
                    (0..columns.len())
                        .filter(|&c| !hidden[c] && !first.contains(&c))
                        .map(col),
                );
            }
            ast::SelectItem::QualifiedWildcard(kind, _) => {
                let q = match kind {
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                        n.0.last()
                            .and_then(|p| p.as_ident())
                            .map(|i| i.value.to_ascii_lowercase())
                            .unwrap_or_default()
                    }
                    ast::SelectItemQualifiedWildcardKind::Expr(_) => {
                        return Err(unsupported("this select item", item));
                    }
                };
                let Some(r) = names.iter().position(|n| *n == q) else {
                    return Err(Error::UndefinedTable(format!(
                        "missing FROM-clause entry for table {q:?}{}",
                        at(item.span())
                    )));
                };
                items.extend((0..columns.len()).filter(|&c| owner[c] == r).map(col));
            }
            other => {
                let one = ast::Select {
                    projection: vec![other.clone()],
                    ..select.clone()
                };
                items.extend(super::select_items(&one, &[])?);
            }
        }
    }
    Ok(items)
}

/// A scan of `table` reading `cols` (table column indices) where
/// `filter` (over the table's columns) holds.
fn scan_plan(table: &str, schema: &Schema, filter: Option<Expr>, cols: &[usize]) -> Result<Plan> {
    let table_types: Vec<A> = schema
        .columns
        .iter()
        .map(|c| c.data_type.arrow_type())
        .collect();
    let mut filter = filter;
    let exprs: Vec<Expr> = cols
        .iter()
        .map(|&c| Expr::Column {
            index: c,
            name: schema.columns[c].name.clone(),
        })
        .collect();
    let names: Vec<String> = cols
        .iter()
        .map(|&c| schema.columns[c].name.clone())
        .collect();
    let mut body = Body::Project(exprs);
    let prune = filter
        .as_ref()
        .map(|f| super::prune_of(f, &table_types))
        .unwrap_or_default();
    let key_lookup = match (&filter, schema.key_column()) {
        (Some(f), Some(k)) => super::key_lookup_of(f, k, &table_types),
        _ => None,
    };
    let scan_columns = push_down(&mut filter, &mut body, table_types.len());
    let scan_types: Vec<A> = scan_columns
        .iter()
        .map(|&i| table_types[i].clone())
        .collect();
    Ok(Plan {
        table: Some(table.to_string()),
        table_types: scan_types,
        scan_columns,
        filter,
        body,
        visible: names.len(),
        names,
        order: Vec::new(),
        limit: None,
        offset: 0,
        prune,
        key_lookup,
        explain: false,
        depth: 0,
        input: None,
        init_plans: false,
        analyze: false,
        catalog: None,
    })
}
