//! Query planning: a parsed SELECT → a [`Plan`] for one table.
//!
//! For: the shape of a query — FROM, the select list (`*` expanded),
//! WHERE, GROUP BY (positions and aliases), aggregates, HAVING, ORDER BY
//! (positions and aliases), LIMIT/OFFSET, EXPLAIN — and projection
//! pushdown; zone-map pruning and key lookups (`prune`); the plan as text
//! (`explain`). Not for: binding the expressions inside ([`super::bind`],
//! called for each one), parsing ([`super::sql`]) or running the plan
//! ([`super::exec`]). Everything outside the supported subset is refused
//! with an error that names the construct and where it is, never answered
//! wrongly.

mod explain;
pub mod from;
mod grouping;
mod names;
mod prune;
pub mod setop;
mod subquery;
pub mod window;
pub(crate) use prune::literal_key;
pub(crate) use subquery::SINGLE_ROW;

/// Zone-map tests of a filter over columns of these stored types (the
/// column of each: its index among `types`).
pub(crate) fn prune_for(filter: &Expr, types: &[A]) -> Vec<Prune> {
    prune::prune_of(filter, types)
}

use std::sync::Arc;

use arrow_schema::DataType as A;
use sqlparser::ast::{self, Spanned};

use super::agg::{AggCall, AggFunc};
pub use super::bind::common_type;
use super::bind::{Binder, Grouping, Scope, coerce, contains_aggregate, function_name, is_numeric};
use super::expr::{Expr, type_name};
pub use super::sql::parse;
use super::sql::{Text, at, plan_err, unsupported};
use crate::batch::Schema;
use crate::error::{Error, Result};
use prune::{key_lookup_of, prune_of};

/// A sort key over the output columns (visible and hidden).
#[derive(Debug, Clone)]
pub struct SortKey {
    pub column: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

/// What the scan feeds.
#[derive(Debug, Clone)]
pub enum Body {
    /// Compute these expressions per row (visible, then hidden sort keys).
    Project(Vec<Expr>),
    /// Group and aggregate, then compute `post` over [keys..., aggs...].
    Aggregate {
        keys: Vec<Expr>,
        aggs: Arc<Vec<AggCall>>,
        having: Option<Expr>,
        post: Vec<Expr>,
        /// Grouping sets: per set, which keys it groups by (the last key
        /// is then the set's number, not among them). `None`: one set.
        sets: Option<Arc<Vec<Vec<bool>>>>,
    },
}

/// A zone-map test: segments whose `column` range misses `[lo, hi]` are skipped.
#[derive(Debug, Clone)]
pub struct Prune {
    pub column: usize,
    pub lo: Option<i128>,
    pub hi: Option<i128>,
}

/// A bound query over one table (or over no table: `SELECT 1`).
#[derive(Debug, Clone)]
pub struct Plan {
    pub table: Option<String>,
    /// Stored Arrow types of the scanned columns (after pushdown).
    pub table_types: Vec<A>,
    /// Table column index of each scanned column.
    pub scan_columns: Vec<usize>,
    pub filter: Option<Expr>,
    pub body: Body,
    pub names: Vec<String>,
    pub visible: usize,
    pub order: Vec<SortKey>,
    pub limit: Option<usize>,
    pub offset: usize,
    pub prune: Vec<Prune>,
    /// `key = v` or `key IN (v, ...)` on a keyed table: the keys in index
    /// byte form; the rows come from the key index instead of a scan (the
    /// filter still runs over them).
    pub key_lookup: Option<Vec<Vec<u8>>>,
    pub explain: bool,
    /// EXPLAIN ANALYZE: the query runs (as planned without EXPLAIN) and
    /// answers with its plan and what each step did
    /// ([`crate::query::profile`]), in one `plan` column.
    pub analyze: bool,
    /// How deep its expressions may nest, at most ([`plan_sql`] counts
    /// it from the SQL text; 0: shallow, not counted). Evaluating a deep
    /// expression recurses as deep, so a plan deeper than
    /// [`super::exec::INLINE_EVAL_DEPTH`] runs on threads with
    /// [`super::exec::DEEP_EVAL_STACK`] stacks.
    pub depth: usize,
    /// The rows come from joining several FROM items (or from a
    /// subquery), not from scanning `table`: the group's output columns
    /// are this plan's input columns.
    pub input: Option<Arc<Input>>,
    /// Its expressions hold scalar subqueries, run before it
    /// ([`crate::query::subquery::resolve`]).
    pub init_plans: bool,
    /// The catalog's tables, when the statement reads them: the plan runs
    /// over their database ([`crate::query::catalog`]).
    pub catalog: Option<Arc<crate::query::catalog::CatalogDb>>,
}

/// Where a plan's rows come from when not from scanning a table.
#[derive(Debug, Clone)]
pub enum Input {
    /// Several FROM items joined (or one subquery in FROM).
    Join(from::JoinGroup),
    /// A set operation or SELECT DISTINCT.
    Set(Box<setop::SetOp>),
    /// Window functions over the rows of a plan.
    Window(Box<window::WindowInput>),
}

/// Plans the scalar subqueries of a query's expressions, with the CTEs
/// in scope.
pub(super) struct Subplans<'a> {
    pub(super) catalog: &'a dyn Catalog,
    pub(super) ctes: &'a from::Ctes,
    pub(super) text: Text<'a>,
}

impl super::bind::SubPlanner for Subplans<'_> {
    fn plan_subquery(&self, q: &ast::Query) -> Result<Plan> {
        plan_query_in(q, self.catalog, false, self.text, self.ctes)
    }
}

/// Looks up a table's schema. `Sync`: a deep statement is planned on a
/// thread of its own (see [`plan_sql`]).
pub trait Catalog: Sync {
    fn table_schema(&self, name: &str) -> Option<Schema>;

    /// The session's time zone (`TimeZone`) as an Arrow time zone: a
    /// fixed offset (`+05:30`) or a named zone (`Europe/Berlin`, see
    /// [`crate::zone`]): the zone instants (TIMESTAMPTZ) are shown and
    /// read in. UTC unless a session says otherwise.
    fn time_zone(&self) -> String {
        "UTC".into()
    }

    /// A table's rows and one column's smallest and largest value (as
    /// the zone maps keep them: integers, decimals scaled, dates in
    /// days), over all its segments; `None`: not known. The optimizer's
    /// estimates ([`crate::query::optimize::eager_agg`]) read them.
    fn table_stats(&self, _table: &str, _column: usize) -> Option<(u64, Option<(i64, i64)>)> {
        None
    }

    /// The catalog's tables of this database, for a statement that reads
    /// them ([`crate::query::catalog`]); `None`: it has none.
    fn catalog_db(&self) -> Result<Option<Arc<crate::query::catalog::CatalogDb>>> {
        Ok(None)
    }
}

/// Plans a statement.
pub fn plan(stmt: &ast::Statement, catalog: &dyn Catalog) -> Result<Plan> {
    plan_in(stmt, catalog, Text::new(""))
}

/// Parses and plans one statement; errors about keywords say where they
/// are in `sql`.
///
/// Parsing, binding and planning walk the syntax tree by recursion, and
/// the parser's tree of a chain such as `a+b+…` is as deep as the chain
/// is long (a level takes kilobytes of stack in a debug build). A
/// statement that may nest deeper than [`INLINE_DEPTH`] (by
/// [`super::sql::depth_bound`]) is therefore planned on a thread of its
/// own with a [`DEEP_STACK`] stack, whatever thread asked (a server's
/// connection thread has 2 MiB); the plan it returns nests no deeper than
/// the binder allows, which every thread can evaluate and drop.
pub fn plan_sql(sql: &str, catalog: &dyn Catalog) -> Result<Plan> {
    plan_named(sql, catalog, false)
}

/// [`plan_sql`], its outputs named as PostgreSQL names them (`count`
/// for `count(*)`, `?column?` for `x + 1`; see [`names`]): for clients
/// of the PostgreSQL protocol.
pub fn plan_sql_as_postgresql(sql: &str, catalog: &dyn Catalog) -> Result<Plan> {
    plan_named(sql, catalog, true)
}

fn plan_named(sql: &str, catalog: &dyn Catalog, postgresql: bool) -> Result<Plan> {
    let sql = &*super::sql::escape_strings(sql)?;
    let tokens = super::sql::tokenize(sql)?;
    let depth = super::sql::depth_bound(tokens.iter().map(|t| &t.token));
    let plan = || {
        let mut stmt = super::sql::parse_tokens(sql, tokens, depth)?;
        let renames = postgresql.then(|| names::renames(&stmt)).flatten();
        let mut p = planned(&mut stmt, catalog, sql)?;
        if let Some(r) = renames {
            let visible = p.visible.min(p.names.len());
            for (i, n) in r.front.into_iter().enumerate().take(visible) {
                if let Some(n) = n {
                    p.names[i] = n;
                }
            }
            let from = visible.saturating_sub(r.back.len());
            for (i, n) in r.back.into_iter().enumerate() {
                if let (Some(n), true) = (n, from + i < visible) {
                    p.names[from + i] = n;
                }
            }
        }
        Ok(p)
    };
    let p = if depth > INLINE_DEPTH {
        super::on_own_stack("sluice-plan", DEEP_STACK, plan)?
    } else {
        plan()?
    };
    Ok(Plan { depth, ..p })
}

/// The plan of a parsed statement.
fn planned(stmt: &mut ast::Statement, catalog: &dyn Catalog, sql: &str) -> Result<Plan> {
    // A statement of the catalog's tables is planned over them.
    if super::catalog::references_catalog(stmt)
        && let Some(cat) = catalog.catalog_db()?
    {
        super::catalog::rewrite(stmt, &cat)?;
        let over = OverCatalog {
            db: cat.db(),
            outer: catalog,
        };
        let p = plan_in(stmt, &over, Text::new(sql))?;
        return Ok(Plan {
            catalog: Some(cat),
            ..p
        });
    }
    plan_in(stmt, catalog, Text::new(sql))
}

/// The catalog's database, in the session of `outer` (its time zone).
struct OverCatalog<'a> {
    db: &'a crate::store::Database,
    outer: &'a dyn Catalog,
}

impl Catalog for OverCatalog<'_> {
    fn table_schema(&self, name: &str) -> Option<Schema> {
        self.db.table(name).map(|t| t.schema.clone())
    }

    fn time_zone(&self) -> String {
        self.outer.time_zone()
    }
}

/// Nesting up to which a statement is planned on the calling thread (a
/// statement of no more bytes than this cannot nest deeper). A level of
/// a `||` chain inside a CASE takes over 32 KiB of stack in a debug
/// build: 40 levels stay well inside a 2 MiB connection thread.
pub const INLINE_DEPTH: usize = 40;

/// The stack of the thread a deeper statement is planned on: room for
/// [`super::sql::MAX_SQL_DEPTH`] levels of the parser's tree at a few
/// kilobytes each (only the pages used are ever touched).
pub const DEEP_STACK: usize = 256 << 20;

fn plan_in(stmt: &ast::Statement, catalog: &dyn Catalog, text: Text) -> Result<Plan> {
    // The statement's first keyword, else the statement's own place.
    let start = || match text.first(&[]) {
        s if s.is_empty() => at(stmt.span()),
        s => s,
    };
    match stmt {
        ast::Statement::Query(q) => plan_query(q, catalog, false, text),
        ast::Statement::Explain {
            statement, analyze, ..
        } => match statement.as_ref() {
            ast::Statement::Query(q) if *analyze => {
                let mut p = plan_query(q, catalog, false, text)?;
                p.analyze = true;
                Ok(p)
            }
            ast::Statement::Query(q) => plan_query(q, catalog, true, text),
            other => Err(unsupported("EXPLAIN of anything but SELECT", other)),
        },
        other => Err(Error::Unsupported(format!(
            "only SELECT and EXPLAIN SELECT are supported, not {}{}",
            other
                .to_string()
                .split_whitespace()
                .next()
                .unwrap_or("this statement")
                .to_uppercase(),
            start()
        ))),
    }
}

fn plan_query(q: &ast::Query, catalog: &dyn Catalog, explain: bool, text: Text) -> Result<Plan> {
    plan_query_in(q, catalog, explain, text, &from::Ctes::default())
}

/// Plans a query with the CTEs `ctes` in scope.
fn plan_query_in(
    q: &ast::Query,
    catalog: &dyn Catalog,
    explain: bool,
    text: Text,
    ctes: &from::Ctes,
) -> Result<Plan> {
    // The CTEs around the query: DISTINCT ON and QUALIFY plan it again,
    // WITH clause and all.
    let around = ctes;
    let ctes = ctes.with(q)?;
    if let ast::SetExpr::SetOperation { .. } = q.body.as_ref() {
        return setop::plan_set_operation(q, catalog, explain, text, &ctes);
    }
    if let ast::SetExpr::Query(inner) = q.body.as_ref()
        && q.order_by.is_none()
        && q.limit_clause.is_none()
    {
        return plan_query_in(inner, catalog, explain, text, &ctes);
    }
    if let ast::SetExpr::Select(s) = q.body.as_ref()
        && let Some(cond) = &s.qualify
    {
        if s.distinct.is_some() {
            return Err(Error::Unsupported(format!(
                "QUALIFY with SELECT DISTINCT is not supported; filter the windows in a subquery{}",
                text.first(&["QUALIFY"])
            )));
        }
        return window::plan_qualify(q, cond, |q| {
            plan_query_in(q, catalog, explain, text, around)
        });
    }
    if let ast::SetExpr::Select(s) = q.body.as_ref()
        && let Some(ast::Distinct::On(on)) = &s.distinct
    {
        // (QUALIFY comes before DISTINCT: refused above.)
        return window::plan_distinct_on(q, on, |q| {
            plan_query_in(q, catalog, explain, text, around)
        });
    }
    if let ast::SetExpr::Select(s) = q.body.as_ref()
        && s.distinct.is_some()
    {
        return setop::plan_distinct(q, s, catalog, explain, text, &ctes);
    }
    let select = select_of(q, text)?;
    // Correlated subqueries in the select list: LEFT JOINs.
    if let Some(rewritten) = subquery::unnest_select_list(q, select, catalog, &ctes, text)? {
        return plan_query_in(&rewritten, catalog, explain, text, around);
    }
    if from::needs_group(select, &ctes) {
        return from::plan_joined(q, select, catalog, explain, text, &ctes);
    }
    let (table, alias, schema) = from_table(select, catalog)?;
    let columns: Vec<(String, A)> = schema
        .as_ref()
        .map(|s| {
            s.columns
                .iter()
                .map(|c| (c.name.clone(), c.data_type.arrow_type()))
                .collect()
        })
        .unwrap_or_default();
    let table_types: Vec<A> = columns.iter().map(|c| c.1.clone()).collect();
    let sub = Subplans {
        catalog,
        ctes: &ctes,
        text,
    };
    let windows = window::Collector::new(select);
    let binder = Binder::new(table.clone(), alias, &columns, text)
        .with_zone(&catalog.time_zone())
        .with_subqueries(&sub)
        .with_windows(&windows);

    let mut filter = match &select.selection {
        Some(w) => {
            let e = binder.bind(w, &mut Scope::Row { clause: "WHERE" })?;
            Some(binder.boolean(e, w, "WHERE")?)
        }
        None => None,
    };
    let items = select_items(select, &columns)?;
    let Shaped {
        mut body,
        order,
        names,
        visible,
        window,
    } = shape(q, select, &binder, &items, &columns, text, &windows)?;
    let (limit, offset) = limit_offset(q, text)?;

    let prune = filter
        .as_ref()
        .map(|f| prune_of(f, &table_types))
        .unwrap_or_default();
    let key_lookup = match (&filter, schema.as_ref().and_then(|s| s.key_column())) {
        (Some(f), Some(k)) => key_lookup_of(f, k, &table_types),
        _ => None,
    };
    let scan_columns = push_down(&mut filter, &mut body, table_types.len());
    let scan_types: Vec<A> = scan_columns
        .iter()
        .map(|&i| table_types[i].clone())
        .collect();
    let plan = Plan {
        table,
        table_types: scan_types,
        scan_columns,
        filter,
        body,
        names,
        visible,
        order,
        limit,
        offset,
        prune,
        key_lookup,
        explain,
        depth: 0,
        input: None,
        init_plans: binder.has_subqueries(),
        analyze: false,
        catalog: None,
    };
    Ok(window::wrap(plan, window))
}

/// What a SELECT computes over its rows: the body (projection or
/// aggregate), the sort keys, the output names (visible, then hidden
/// sort keys) and how many are visible.
struct Shaped {
    body: Body,
    order: Vec<SortKey>,
    names: Vec<String>,
    visible: usize,
    /// The window calls, when the select list or ORDER BY has some: the
    /// body then makes their base columns (see [`window::wrap`]).
    window: Option<window::Windowed>,
}

/// The select list (`items`), GROUP BY, HAVING and ORDER BY of `select`
/// (in `q`), bound by `binder` over `columns`: a table's, or a join's.
fn shape(
    q: &ast::Query,
    select: &ast::Select,
    binder: &Binder,
    items: &[(ast::Expr, String)],
    columns: &[(String, A)],
    text: Text,
    windows: &window::Collector,
) -> Result<Shaped> {
    let group = grouping::group_by_list(select, text)?;
    let has_agg = group.present
        || select.having.is_some()
        || items.iter().any(|(e, _)| contains_aggregate(e));
    let mut names: Vec<String> = items.iter().map(|i| i.1.clone()).collect();
    let order_by = order_by_list(q, text)?;
    let (mut body, order) = if !has_agg {
        windows.allow(true);
        let r = project(binder, items, &order_by, &mut names);
        windows.allow(false);
        r?
    } else {
        let clauses = AggClauses {
            items,
            columns,
            group_by: &group.exprs,
            sets: group.sets.as_deref(),
            having: select.having.as_ref(),
            order_by: &order_by,
        };
        aggregate(binder, &clauses, &mut names, windows)?
    };
    let window = match &mut body {
        Body::Project(list) => windows.split(list),
        Body::Aggregate { post, .. } => windows.split(post),
    };
    Ok(Shaped {
        body,
        order,
        names,
        visible: items.len(),
        window,
    })
}

/// The SELECT a query is, once every clause around it that is not
/// supported (WITH, FETCH, set operations, VALUES, DISTINCT, TOP,
/// windows) is refused.
fn select_of<'q>(q: &'q ast::Query, text: Text) -> Result<&'q ast::Select> {
    if q.fetch.is_some() {
        return Err(Error::Unsupported(format!(
            "FETCH is not supported; use LIMIT{}",
            text.first(&["FETCH"])
        )));
    }
    let select = match q.body.as_ref() {
        ast::SetExpr::Select(s) => s,
        ast::SetExpr::Query(inner) => {
            return Err(unsupported("a parenthesised subquery", inner.as_ref()));
        }
        ast::SetExpr::SetOperation { op, left, .. } => {
            // The operator's keyword follows its left side.
            let place = match text.word_at(left.span().end, &[&op.to_string()]) {
                s if s.is_empty() => at(q.body.span()),
                s => s,
            };
            return Err(Error::Unsupported(format!("{op} is not supported{place}")));
        }
        ast::SetExpr::Values(v) => {
            return Err(Error::Unsupported(format!(
                "VALUES is not supported{}",
                match text.first(&["VALUES"]) {
                    s if s.is_empty() => at(v.span()),
                    s => s,
                }
            )));
        }
        other => return Err(unsupported(&other.to_string(), other)),
    };
    if select.top.is_some() {
        return Err(Error::Unsupported(format!(
            "TOP is not supported; use LIMIT{}",
            text.first(&["TOP"])
        )));
    }
    Ok(select)
}

/// FROM: one table, no joins. Its name and alias (lower case) and schema;
/// all `None` without FROM.
fn from_table(
    select: &ast::Select,
    catalog: &dyn Catalog,
) -> Result<(Option<String>, Option<String>, Option<Schema>)> {
    Ok(match select.from.as_slice() {
        [] => (None, None, None),
        [twj] => {
            if let Some(j) = twj.joins.first() {
                return Err(unsupported("JOIN", j));
            }
            match &twj.relation {
                ast::TableFactor::Table {
                    name, alias, args, ..
                } => {
                    if args.is_some() {
                        return Err(unsupported("table functions", &twj.relation));
                    }
                    let (tname, shown, last, schema) =
                        from::stored_table(name, catalog, &twj.relation)?;
                    let schema = schema.ok_or_else(|| {
                        Error::UndefinedTable(format!(
                            "no table named {shown:?}{}",
                            crate::query::sql::at(twj.relation.span())
                        ))
                    })?;
                    // A catalog table is named by its own name
                    // (`pg_class.relname`), not its stored one.
                    let alias = alias
                        .as_ref()
                        .map(|a| a.name.value.to_ascii_lowercase())
                        .or((tname != last).then_some(last));
                    (Some(tname), alias, Some(schema))
                }
                ast::TableFactor::Derived { .. } => {
                    return Err(unsupported("a subquery in FROM", &twj.relation));
                }
                other => return Err(unsupported("this kind of FROM item", other)),
            }
        }
        [_, second, ..] => return Err(unsupported("more than one table in FROM (joins)", second)),
    })
}

/// The select items with their output names, `*` expanded to the table's
/// `columns`.
fn select_items(select: &ast::Select, columns: &[(String, A)]) -> Result<Vec<(ast::Expr, String)>> {
    let mut items: Vec<(ast::Expr, String)> = Vec::new();
    for item in &select.projection {
        match item {
            ast::SelectItem::UnnamedExpr(e) => {
                // `(x)` is named `x`, as PostgreSQL names it (SELECT
                // DISTINCT (x) … ORDER BY x: TPC-DS q41).
                let mut bare = e;
                while let ast::Expr::Nested(inner) = bare {
                    bare = inner;
                }
                let name = match bare {
                    ast::Expr::Identifier(i) => i.value.clone(),
                    ast::Expr::CompoundIdentifier(parts) => {
                        parts.last().map(|i| i.value.clone()).unwrap_or_default()
                    }
                    _ => e.to_string(),
                };
                items.push((e.clone(), name));
            }
            // `SELECT 'a' 'b'`, `SELECT x 'name'`: the parser takes a
            // quoted string after an item for its name; PostgreSQL has
            // no such alias (a name is an identifier or "quoted").
            ast::SelectItem::ExprWithAlias { alias, .. } if alias.quote_style == Some('\'') => {
                return Err(Error::Syntax(format!(
                    "syntax error at or near '{}' (a column alias is a name or \"quoted\", not a string){}",
                    alias.value,
                    at(alias.span)
                )));
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                items.push((expr.clone(), alias.value.clone()))
            }
            ast::SelectItem::Wildcard(_) => {
                if columns.is_empty() {
                    return Err(unsupported("SELECT * without FROM", item));
                }
                for (n, _) in columns {
                    items.push((ast::Expr::Identifier(ast::Ident::new(n.clone())), n.clone()));
                }
            }
            other => return Err(unsupported("this select item", other)),
        }
    }
    Ok(items)
}

/// The ORDER BY items.
fn order_by_list<'q>(q: &'q ast::Query, text: Text) -> Result<Vec<&'q ast::OrderByExpr>> {
    Ok(match &q.order_by {
        None => vec![],
        Some(ob) => match &ob.kind {
            ast::OrderByKind::Expressions(v) => v.iter().collect(),
            ast::OrderByKind::All(_) => {
                return Err(Error::Unsupported(format!(
                    "ORDER BY ALL is not supported{}",
                    text.first(&["ORDER"])
                )));
            }
        },
    })
}

/// A query without aggregates: the select items and, after them, the
/// ORDER BY expressions that are not among them (hidden columns, named in
/// `names`); the sort keys.
fn project(
    binder: &Binder,
    items: &[(ast::Expr, String)],
    order_by: &[&ast::OrderByExpr],
    names: &mut Vec<String>,
) -> Result<(Body, Vec<SortKey>)> {
    let visible = items.len();
    let mut order = Vec::new();
    let mut exprs = Vec::new();
    for (e, _) in items {
        exprs.push(binder.bind(e, &mut Scope::Row { clause: "SELECT" })?);
    }
    for ob in order_by {
        let column = match order_target(&ob.expr, items, visible)? {
            Some(c) => c,
            None => {
                let e = binder.bind(&ob.expr, &mut Scope::Row { clause: "ORDER BY" })?;
                let shown = e.to_string();
                match exprs[..visible].iter().position(|x| x.to_string() == shown) {
                    Some(c) => c,
                    None => {
                        exprs.push(e);
                        names.push(shown);
                        exprs.len() - 1
                    }
                }
            }
        };
        order.push(sort_key(column, ob)?);
    }
    Ok((Body::Project(exprs), order))
}

/// The clauses of an aggregate query, as written.
struct AggClauses<'q> {
    items: &'q [(ast::Expr, String)],
    /// The table's columns, for GROUP BY names that are columns, not aliases.
    columns: &'q [(String, A)],
    group_by: &'q [ast::Expr],
    /// Grouping sets over `group_by`'s indexes (`None`: a plain GROUP BY).
    sets: Option<&'q [Vec<usize>]>,
    having: Option<&'q ast::Expr>,
    order_by: &'q [&'q ast::OrderByExpr],
}

/// A query with aggregates: the GROUP BY keys, the aggregate calls, HAVING
/// and the select items over them, then the ORDER BY expressions that are
/// not among them (hidden columns, named in `names`); the sort keys.
fn aggregate(
    binder: &Binder,
    q: &AggClauses,
    names: &mut Vec<String>,
    windows: &window::Collector,
) -> Result<(Body, Vec<SortKey>)> {
    let items = q.items;
    let visible = items.len();
    let mut order = Vec::new();
    let key_asts = group_keys(q)?;
    let mut keys = Vec::new();
    // PostgreSQL groups '1 mon' with '30 days' (equal as compared):
    // an INTERVAL key groups by its key (a month as 30 days), and the
    // key as written is the greatest of its group's values (`max`, by
    // PostgreSQL's order, then by fields: `1 mon` after `30 days`, `1
    // day` after `24:00:00`; PostgreSQL shows one of them).
    let mut interval_keys: Vec<(usize, AggCall)> = Vec::new();
    for k in &key_asts {
        let key = binder.bind(k, &mut Scope::Row { clause: "GROUP BY" })?;
        if key.data_type(&binder.types()) == crate::query::interval::TYPE {
            if q.sets.is_some() {
                return Err(unsupported(
                    "ROLLUP, CUBE or GROUPING SETS of an INTERVAL value",
                    k,
                ));
            }
            interval_keys.push((
                keys.len(),
                AggCall {
                    func: AggFunc::Max,
                    name: format!("max({key}) [group key]"),
                    arg: Some(key.clone()),
                    distinct: false,
                    arg_type: crate::query::interval::TYPE,
                    collect: None,
                },
            ));
        }
        keys.push(key);
    }
    let key_shown: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    for (i, _) in &interval_keys {
        keys[*i] = Expr::Call {
            func: super::func::Func::Interval(crate::query::interval::Op::Key),
            args: vec![keys[*i].clone()],
            ty: A::Decimal128(38, 0),
        };
    }
    let mut key_shown = key_shown;
    let mut sets = None;
    if let Some(written) = q.sets {
        (keys, key_shown, sets) = grouping::distinct_keys(keys, key_shown, written);
    }
    let user_keys = keys.len();
    if sets.is_some() {
        keys.push(grouping::set_key());
        key_shown.push(grouping::SET_KEY.into());
    }
    let key_values: Vec<(usize, usize)> = interval_keys
        .iter()
        .enumerate()
        .map(|(c, (k, _))| (*k, c))
        .collect();
    let mut state = AggState {
        keys: &keys,
        key_shown: &key_shown,
        user_keys,
        sets: sets.as_deref(),
        calls: interval_keys.into_iter().map(|(_, c)| c).collect(),
        key_values,
    };
    let mut post = Vec::new();
    windows.allow(true);
    for (e, _) in items {
        let r = binder.bind(e, &mut Scope::Grouped(&mut state));
        post.push(r.inspect_err(|_| windows.allow(false))?);
    }
    windows.allow(false);
    let having = match q.having {
        Some(h) => {
            let e = binder.bind(h, &mut Scope::Grouped(&mut state))?;
            let types = state.types(&binder.types());
            Some(binder.boolean_over(e, h, "HAVING", &types)?)
        }
        None => None,
    };
    for ob in q.order_by {
        let column = match order_target(&ob.expr, items, visible)? {
            Some(c) => c,
            None => {
                windows.allow(true);
                let e = binder.bind(&ob.expr, &mut Scope::Grouped(&mut state));
                windows.allow(false);
                let e = e?;
                let shown = e.to_string();
                match post[..visible].iter().position(|x| x.to_string() == shown) {
                    Some(c) => c,
                    None => {
                        post.push(e);
                        names.push(shown);
                        post.len() - 1
                    }
                }
            }
        };
        order.push(sort_key(column, ob)?);
    }
    let calls = std::mem::take(&mut state.calls);
    drop(state);
    Ok((
        Body::Aggregate {
            keys,
            aggs: Arc::new(calls),
            having,
            post,
            sets: sets.map(Arc::new),
        },
        order,
    ))
}

/// The GROUP BY expressions with positions and output aliases resolved to
/// the select items they name (a table column's name wins over an alias).
fn group_keys(q: &AggClauses) -> Result<Vec<ast::Expr>> {
    let (items, columns) = (q.items, q.columns);
    let visible = items.len();
    let mut key_asts = Vec::new();
    for g in q.group_by {
        let resolved = match g {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => {
                    let pos: usize = n
                        .parse()
                        .map_err(|_| plan_err(format!("bad GROUP BY position {n}"), g))?;
                    if pos == 0 || pos > visible {
                        return Err(plan_err(
                            format!("GROUP BY position {pos} is not in the select list"),
                            g,
                        ));
                    }
                    items[pos - 1].0.clone()
                }
                _ => g.clone(),
            },
            ast::Expr::Identifier(i)
                if !columns.iter().any(|c| c.0.eq_ignore_ascii_case(&i.value))
                    && items.iter().any(|it| it.1.eq_ignore_ascii_case(&i.value)) =>
            {
                items
                    .iter()
                    .find(|it| it.1.eq_ignore_ascii_case(&i.value))
                    .map(|it| it.0.clone())
                    .expect("found")
            }
            _ => g.clone(),
        };
        if contains_aggregate(&resolved) {
            return Err(plan_err(
                "aggregate functions are not allowed in GROUP BY".into(),
                g,
            ));
        }
        key_asts.push(resolved);
    }
    Ok(key_asts)
}

/// LIMIT (`None`: none, or `LIMIT NULL`) and OFFSET.
fn limit_offset(q: &ast::Query, text: Text) -> Result<(Option<usize>, usize)> {
    Ok(match &q.limit_clause {
        None => (None, 0),
        Some(ast::LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) => {
            if !limit_by.is_empty() {
                return Err(Error::Unsupported(format!(
                    "LIMIT BY is not supported{}",
                    text.first(&["LIMIT"])
                )));
            }
            let limit = match limit {
                None => None,
                Some(e) => count_literal(e, "LIMIT")?,
            };
            let offset = match offset {
                None => 0,
                Some(o) => count_literal(&o.value, "OFFSET")?.unwrap_or(0),
            };
            (limit, offset)
        }
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (
            count_literal(limit, "LIMIT")?,
            count_literal(offset, "OFFSET")?.unwrap_or(0),
        ),
    })
}

/// Projection pushdown: the scan keeps only the columns the query reads,
/// renumbered in `filter` and `body`; the table column index of each
/// (of `table_columns`).
fn push_down(filter: &mut Option<Expr>, body: &mut Body, table_columns: usize) -> Vec<usize> {
    let mut used = vec![false; table_columns];
    {
        let mut exprs: Vec<&mut Expr> = Vec::new();
        if let Some(f) = filter.as_mut() {
            exprs.push(f);
        }
        match body {
            Body::Project(list) => exprs.extend(list.iter_mut()),
            Body::Aggregate { keys, aggs, .. } => {
                exprs.extend(keys.iter_mut());
                let calls = Arc::make_mut(aggs);
                for c in calls.iter_mut() {
                    if let Some(a) = c.arg.as_mut() {
                        exprs.push(a);
                    }
                }
            }
        }
        for e in &exprs {
            e.mark_columns(&mut used);
        }
        let mut new_index = vec![0usize; used.len()];
        let mut n = 0;
        for (i, u) in used.iter().enumerate() {
            if *u {
                new_index[i] = n;
                n += 1;
            }
        }
        for e in exprs {
            e.remap_columns(&mut |i| new_index[i]);
        }
    }
    used.iter()
        .enumerate()
        .filter(|(_, u)| **u)
        .map(|(i, _)| i)
        .collect()
}

/// A LIMIT's or OFFSET's count: a non-negative integer literal, possibly
/// quoted or cast to an integer type (`CAST(3 AS BIGINT)`, as a bound
/// parameter arrives); NULL (`None`) is no limit, as in PostgreSQL.
fn count_literal(e: &ast::Expr, what: &str) -> Result<Option<usize>> {
    let mut x = e;
    loop {
        match x {
            ast::Expr::Nested(n) => x = n,
            ast::Expr::Cast {
                expr,
                data_type:
                    ast::DataType::Int(_)
                    | ast::DataType::Integer(_)
                    | ast::DataType::BigInt(_)
                    | ast::DataType::SmallInt(_)
                    | ast::DataType::Int2(_)
                    | ast::DataType::Int4(_)
                    | ast::DataType::Int8(_),
                ..
            } => x = expr,
            _ => break,
        }
    }
    if let ast::Expr::Value(v) = x {
        match &v.value {
            ast::Value::Null => return Ok(None),
            ast::Value::Number(n, _) | ast::Value::SingleQuotedString(n) => {
                if let Ok(k) = n.trim().parse::<usize>() {
                    return Ok(Some(k));
                }
            }
            _ => {}
        }
    }
    Err(plan_err(
        format!("{what} must be a non-negative integer literal"),
        e,
    ))
}

/// ORDER BY 2, ORDER BY alias: the output column it names, if any.
fn order_target(
    e: &ast::Expr,
    items: &[(ast::Expr, String)],
    visible: usize,
) -> Result<Option<usize>> {
    match e {
        ast::Expr::Value(v) => {
            if let ast::Value::Number(n, _) = &v.value {
                let pos: usize = n
                    .parse()
                    .map_err(|_| plan_err(format!("bad ORDER BY position {n}"), e))?;
                if pos == 0 || pos > visible {
                    return Err(plan_err(
                        format!("ORDER BY position {pos} is not in the select list"),
                        e,
                    ));
                }
                return Ok(Some(pos - 1));
            }
            Ok(None)
        }
        // An output column's name (alias or column) wins, as in PostgreSQL;
        // two output columns of that name are ambiguous.
        ast::Expr::Identifier(i) => {
            let found: Vec<usize> = (0..visible)
                .filter(|&k| items[k].1.eq_ignore_ascii_case(&i.value))
                .collect();
            // The same expression twice (`SELECT v, (v) … ORDER BY v`)
            // is one column to sort by, as in PostgreSQL.
            let bare = |e: &ast::Expr| {
                let mut e = e;
                while let ast::Expr::Nested(inner) = e {
                    e = inner;
                }
                e.to_string()
            };
            let same = found
                .iter()
                .all(|&k| bare(&items[k].0) == bare(&items[found[0]].0));
            if found.len() > 1 && !same {
                return Err(Error::Ambiguous(format!(
                    "ORDER BY {:?} is ambiguous: the select list has {} columns of that name{}",
                    i.value,
                    found.len(),
                    at(e.span())
                )));
            }
            Ok(found.first().copied())
        }
        _ => Ok(None),
    }
}

fn sort_key(column: usize, ob: &ast::OrderByExpr) -> Result<SortKey> {
    if ob.with_fill.is_some() {
        return Err(unsupported("WITH FILL", &ob.expr));
    }
    let descending = match ob.options.sort {
        None | Some(ast::OrderBySort::Asc) => false,
        Some(ast::OrderBySort::Desc) => true,
        Some(_) => return Err(unsupported("ORDER BY USING", &ob.expr)),
    };
    // PostgreSQL's default: NULLs sort as larger than every value.
    let nulls_first = ob.options.nulls_first.unwrap_or(descending);
    Ok(SortKey {
        column,
        descending,
        nulls_first,
    })
}

/// The grouping of an aggregate query while its select list, HAVING and
/// ORDER BY are bound: the GROUP BY keys, and the aggregate calls met so
/// far (each once).
struct AggState<'a> {
    keys: &'a [Expr],
    key_shown: &'a [String],
    /// The keys a query wrote (`keys` has the set number after them when
    /// there are grouping sets).
    user_keys: usize,
    sets: Option<&'a [Vec<bool>]>,
    calls: Vec<AggCall>,
    /// Keys grouped by another value than their own (an INTERVAL's key):
    /// the key's number and the call among `calls` that gives its value.
    key_values: Vec<(usize, usize)>,
}

impl AggState<'_> {
    /// The column of `call` among the aggregates (each once).
    fn column_of(&mut self, call: AggCall) -> Expr {
        let idx = match self.calls.iter().position(|c| c.name == call.name) {
            Some(i) => i,
            None => {
                self.calls.push(call);
                self.calls.len() - 1
            }
        };
        Expr::Column {
            index: self.keys.len() + idx,
            name: self.calls[idx].name.clone(),
        }
    }

    /// `sum(x)` and `avg(x)` of an INTERVAL `x`, as PostgreSQL's: the sum
    /// field by field (months, days, microseconds: three sums of
    /// BIGINTs, exact), the average that sum divided by the count
    /// (`interval / double`, a month's fraction carried into days).
    /// `None`: not such a call.
    fn interval_sum(
        &mut self,
        binder: &Binder,
        f: &ast::Function,
        node: &ast::Expr,
    ) -> Result<Option<Expr>> {
        use crate::query::func::Func;
        use crate::query::interval::{Op, TYPE};
        let name = function_name(f);
        if !matches!(name.as_str(), "sum" | "avg") || f.over.is_some() {
            return Ok(None);
        }
        let ast::FunctionArguments::List(list) = &f.args else {
            return Ok(None);
        };
        let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x))] = list.args.as_slice()
        else {
            return Ok(None);
        };
        if contains_aggregate(x) {
            return Ok(None);
        }
        let t = binder
            .bind(
                x,
                &mut Scope::Row {
                    clause: "an aggregate argument",
                },
            )?
            .data_type(&binder.types());
        if t != TYPE
            || matches!(
                list.duplicate_treatment,
                Some(ast::DuplicateTreatment::Distinct)
            )
        {
            return Ok(None);
        }
        // count(x), FILTER and all: its argument is the rows' values.
        let mut as_count = f.clone();
        as_count.name = ast::ObjectName::from(vec![ast::Ident::new("count")]);
        let count = bind_aggregate(binder, &as_count, node)?;
        let Some(arg) = count.arg.clone() else {
            return Ok(None);
        };
        let sums: Vec<Expr> = (0..3)
            .map(|k| {
                let field = Expr::Call {
                    func: Func::Interval(Op::Field(k)),
                    args: vec![arg.clone()],
                    ty: A::Int64,
                };
                self.column_of(AggCall {
                    func: AggFunc::Sum,
                    name: format!("sum({field}) [{}]", count.name),
                    arg: Some(field),
                    distinct: false,
                    arg_type: A::Int64,
                    collect: None,
                })
            })
            .collect();
        let sum = Expr::Call {
            func: Func::Interval(Op::OfSums),
            args: sums,
            ty: TYPE,
        };
        if name == "sum" {
            return Ok(Some(sum));
        }
        let n = self.column_of(count);
        Ok(Some(Expr::Call {
            func: Func::Interval(Op::Scale { divide: true }),
            args: vec![sum, coerce(n, &A::Int64, &A::Float64)],
            ty: TYPE,
        }))
    }
}

impl Grouping for AggState<'_> {
    fn aggregate(&mut self, binder: &Binder, f: &ast::Function, node: &ast::Expr) -> Result<Expr> {
        if let Some(e) = self.interval_sum(binder, f, node)? {
            return Ok(e);
        }
        let call = bind_aggregate(binder, f, node)?;
        Ok(self.column_of(call))
    }

    fn grouped(&self, node: &ast::Expr, row: &Expr) -> Result<Option<Expr>> {
        let shown = row.to_string();
        if let Some(k) = self.key_shown.iter().position(|s| *s == shown) {
            let index = match self.key_values.iter().find(|(key, _)| *key == k) {
                Some((_, call)) => self.keys.len() + call,
                None => k,
            };
            return Ok(Some(Expr::Column { index, name: shown }));
        }
        if let ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) = node {
            return Err(plan_err(
                format!(
                    "column {shown:?} must appear in the GROUP BY clause or be used in an aggregate function"
                ),
                node,
            ));
        }
        Ok(None)
    }

    fn grouping(&mut self, binder: &Binder, f: &ast::Function, node: &ast::Expr) -> Result<Expr> {
        grouping::grouping_call(
            binder,
            f,
            node,
            &self.key_shown[..self.user_keys],
            self.sets,
        )
    }

    fn types(&self, table: &[A]) -> Vec<A> {
        let mut t: Vec<A> = self.keys.iter().map(|k| k.data_type(table)).collect();
        t.extend(self.calls.iter().map(|c| c.output_type()));
        t
    }
}

/// Binds string_agg and the ordered-set aggregates (percentile_cont,
/// percentile_disc, mode; median): a collecting aggregate whose argument
/// is `SORT_ROW(order keys…, value)` (see [`super::agg::Collect`]).
fn bind_collecting(
    binder: &Binder,
    f: &ast::Function,
    node: &ast::Expr,
    name: &str,
) -> Result<AggCall> {
    let upper = name.to_uppercase();
    let (args, clauses, distinct) = match &f.args {
        ast::FunctionArguments::None => (vec![], vec![], false),
        ast::FunctionArguments::Subquery(_) => {
            return Err(unsupported("a subquery argument", node));
        }
        ast::FunctionArguments::List(list) => (
            list.args.clone(),
            list.clauses.clone(),
            matches!(
                list.duplicate_treatment,
                Some(ast::DuplicateTreatment::Distinct)
            ),
        ),
    };
    let mut order: Vec<ast::OrderByExpr> = Vec::new();
    for c in clauses {
        match c {
            ast::FunctionArgumentClause::OrderBy(o) => order.extend(o),
            _ => return Err(unsupported(&format!("this clause of {upper}"), node)),
        }
    }
    let mut exprs = Vec::new();
    for a in &args {
        match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => exprs.push(x.clone()),
            _ => return Err(plan_err(format!("{upper} takes no such argument"), node)),
        }
    }
    for e in exprs.iter().chain(order.iter().map(|o| &o.expr)) {
        if contains_aggregate(e) {
            return Err(plan_err("aggregate calls cannot be nested".into(), node));
        }
    }
    let filter = f.filter.as_deref();
    if let Some(c) = filter
        && contains_aggregate(c)
    {
        return Err(plan_err(
            "aggregate functions are not allowed in FILTER".into(),
            c,
        ));
    }
    let shown_filter = filter
        .map(|c| format!(" FILTER (WHERE {c})"))
        .unwrap_or_default();
    let scope = || Scope::Row {
        clause: "an aggregate argument",
    };
    let ordered_set = matches!(name, "percentile_cont" | "percentile_disc" | "mode");
    let wants = match name {
        "string_agg" => 2,
        "mode" => 0,
        _ => 1,
    };
    if exprs.len() != wants {
        return Err(plan_err(
            format!(
                "{upper} takes {}",
                match (wants, ordered_set) {
                    (2, _) => "two arguments, a value and a delimiter",
                    (0, _) => "no argument (its value is WITHIN GROUP (ORDER BY …))",
                    (_, true) => "one argument, the fraction",
                    _ => "one argument",
                }
            ),
            node,
        ));
    }
    if ordered_set {
        if f.within_group.len() != 1 {
            return Err(plan_err(
                format!("{upper} needs WITHIN GROUP (ORDER BY one value)"),
                node,
            ));
        }
        if !order.is_empty() || distinct {
            return Err(plan_err(
                format!("{upper} takes its order from WITHIN GROUP only, and no DISTINCT"),
                node,
            ));
        }
        order = f.within_group.clone();
    } else if !f.within_group.is_empty() {
        return Err(plan_err(
            format!("WITHIN GROUP is specified, but {upper} is not an ordered-set aggregate"),
            node,
        ));
    }
    if name == "median" {
        if distinct || !order.is_empty() {
            return Err(unsupported("MEDIAN with DISTINCT or ORDER BY", node));
        }
        order.push(ast::OrderByExpr {
            expr: exprs[0].clone(),
            options: ast::OrderByOptions {
                sort: None,
                nulls_first: None,
            },
            with_fill: None,
        });
    }
    // The fraction: a constant in [0, 1] (NULL: every answer NULL).
    let mut fraction = Some(0.5);
    if matches!(name, "percentile_cont" | "percentile_disc") {
        let b = binder.bind(&exprs[0], &mut scope())?;
        let c = constant(binder, &b);
        let v = match &c {
            Some(a) if a.logical_null_count() > 0 => None,
            Some(a) => Some(
                arrow_cast::cast(a, &A::Float64)
                    .ok()
                    .and_then(|d| {
                        use arrow_array::cast::AsArray;
                        d.as_primitive_opt::<arrow_array::types::Float64Type>()
                            .map(|p| p.value(0))
                    })
                    .ok_or_else(|| {
                        plan_err(format!("{upper} needs a number as its fraction"), node)
                    })?,
            ),
            None => {
                return Err(unsupported(
                    &format!("{upper} of a fraction that is not a constant"),
                    node,
                ));
            }
        };
        if let Some(v) = v
            && !(0.0..=1.0).contains(&v)
        {
            return Err(Error::Argument {
                state: "22003",
                message: format!(
                    "percentile value {v} is not between 0 and 1{}",
                    at(node.span())
                ),
            });
        }
        fraction = v;
    }
    // string_agg's delimiter: a constant.
    let mut delimiter = None;
    if name == "string_agg" {
        let b = binder.bind(&exprs[1], &mut scope())?;
        delimiter = match constant(binder, &b) {
            Some(a) if a.logical_null_count() > 0 => None,
            Some(a) => {
                let t = arrow_cast::cast(&a, &A::Utf8).map_err(|e| Error::Exec(e.to_string()))?;
                use arrow_array::cast::AsArray;
                Some(t.as_string::<i32>().value(0).to_string())
            }
            None => {
                return Err(unsupported(
                    "STRING_AGG with a delimiter that is not a constant",
                    node,
                ));
            }
        };
    }
    // The value collected: string_agg's first argument (as TEXT), or the
    // one ORDER BY expression of the others.
    let listing = matches!(name, "string_agg" | "array_agg");
    let value_ast = if listing {
        exprs[0].clone()
    } else {
        order[0].expr.clone()
    };
    if distinct
        && order
            .iter()
            .any(|o| o.expr.to_string() != value_ast.to_string())
    {
        return Err(plan_err(
            "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list"
                .into(),
            node,
        ));
    }
    let written = value_ast.to_string();
    // array_agg keeps NULL values: its FILTER applies to the whole row
    // (below), not by making the value NULL.
    let value_ast = match filter {
        Some(c) if name != "array_agg" => only_where(value_ast, c),
        _ => value_ast,
    };
    let types = binder.types();
    let mut value = binder.bind(&value_ast, &mut scope())?;
    let mut vt = value.data_type(&types);
    match name {
        "string_agg" if vt != A::Utf8 => {
            // DISTINCT compares values: -0 and 0 are one (as text they
            // are not).
            if distinct && vt == A::Float64 {
                value = plus_zero(value);
            }
            value = coerce(value, &vt, &A::Utf8);
            vt = A::Utf8;
        }
        "array_agg" => {
            if vt == A::Null {
                value = coerce(value, &vt, &A::Utf8);
                vt = A::Utf8;
            }
            // DISTINCT compares values: -0 and 0 are one (kept as 0;
            // PostgreSQL keeps whichever it met first).
            if distinct && vt == A::Float64 {
                value = plus_zero(value);
            }
            // SORT_ROW reads a dictionary's values.
            if let A::Dictionary(_, v) = &vt {
                vt = v.as_ref().clone();
            }
        }
        "percentile_cont" | "median" => {
            if vt == A::Null {
                value = coerce(value, &vt, &A::Float64);
                vt = A::Float64;
            } else if !is_numeric(&vt) {
                return Err(plan_err(
                    format!("{upper} needs a number, not {}", type_name(&vt)),
                    node,
                ));
            }
        }
        _ => {}
    }
    let mut fields = Vec::new();
    let mut keys = Vec::new();
    let (mut desc, mut nulls_first) = (0u32, 0u32);
    // For the ordered-set aggregates the one key is the value itself.
    let key_list: &[ast::OrderByExpr] = if listing { &order } else { &[] };
    if key_list.len() > 30 {
        return Err(unsupported(
            "more than 30 ORDER BY keys in an aggregate",
            node,
        ));
    }
    for (i, o) in key_list.iter().enumerate() {
        let k = sort_key(0, o)?;
        let e = binder.bind(&o.expr, &mut scope())?;
        let t = e.data_type(&types);
        desc |= (k.descending as u32) << i;
        nulls_first |= (k.nulls_first as u32) << i;
        fields.push((t, k.descending, k.nulls_first));
        keys.push(e);
    }
    let (vd, vn) = if listing {
        (false, false)
    } else {
        let k = sort_key(0, &order[0])?;
        (k.descending, k.nulls_first)
    };
    let i = keys.len();
    desc |= (vd as u32) << i;
    nulls_first |= (vn as u32) << i;
    fields.push((vt, vd, vn));
    keys.push(value);
    let mut arg = Expr::Call {
        func: super::func::Func::SortRow {
            desc,
            nulls_first,
            keep_null: name == "array_agg",
        },
        args: keys,
        ty: A::Binary,
    };
    if name == "array_agg"
        && let Some(c) = filter
    {
        let cond = binder.bind(c, &mut scope())?;
        arg = Expr::Case {
            whens: vec![(cond, arg)],
            otherwise: Box::new(Expr::Literal(arrow_array::new_null_array(&A::Binary, 1))),
        };
    }
    let func = match name {
        "string_agg" => AggFunc::StringAgg,
        "array_agg" => AggFunc::ArrayAgg,
        "percentile_disc" => AggFunc::PercentileDisc,
        "mode" => AggFunc::Mode,
        _ => AggFunc::PercentileCont,
    };
    let within = |o: &[ast::OrderByExpr]| {
        o.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let shown = match name {
        "string_agg" => format!(
            "string_agg({}{written}, {}{}){shown_filter}",
            if distinct { "DISTINCT " } else { "" },
            exprs[1],
            if order.is_empty() {
                String::new()
            } else {
                format!(" ORDER BY {}", within(&order))
            }
        ),
        "array_agg" => format!(
            "array_agg({}{written}{}){shown_filter}",
            if distinct { "DISTINCT " } else { "" },
            if order.is_empty() {
                String::new()
            } else {
                format!(" ORDER BY {}", within(&order))
            }
        ),
        "median" => format!("median({written}){shown_filter}"),
        _ => format!(
            "{name}({}) WITHIN GROUP (ORDER BY {}){shown_filter}",
            exprs.first().map(|e| e.to_string()).unwrap_or_default(),
            within(&order)
        ),
    };
    Ok(AggCall {
        func,
        arg: Some(arg),
        distinct: false,
        arg_type: A::Binary,
        name: shown,
        collect: Some(Arc::new(super::agg::Collect {
            fields,
            delimiter,
            fraction,
            distinct,
        })),
    })
}

/// `e + 0.0`: a double with -0 made 0, so that DISTINCT sees one value.
fn plus_zero(e: Expr) -> Expr {
    Expr::Binary {
        op: crate::query::expr::BinOp::Add,
        left: Box::new(e),
        right: Box::new(Expr::Literal(Arc::new(arrow_array::Float64Array::from(
            vec![0.0],
        )))),
    }
}

/// The value of `e` when it reads no column (a constant, folded): one row.
fn constant(binder: &Binder, e: &Expr) -> Option<arrow_array::ArrayRef> {
    let mut used = vec![false; binder.types().len()];
    e.mark_columns(&mut used);
    if used.iter().any(|&u| u) {
        return None;
    }
    let one = crate::query::exec::empty_input(1).ok()?;
    match e.eval(&one).ok()? {
        crate::query::expr::Value::Scalar(a) => Some(a),
        crate::query::expr::Value::Array(a) if a.len() == 1 => Some(a),
        _ => None,
    }
}

/// `CASE WHEN cond THEN value END`: an aggregate's argument under
/// `FILTER (WHERE cond)`.
pub(super) fn only_where(value: ast::Expr, cond: &ast::Expr) -> ast::Expr {
    ast::Expr::Case {
        case_token: ast::helpers::attached_token::AttachedToken::empty(),
        end_token: ast::helpers::attached_token::AttachedToken::empty(),
        operand: None,
        conditions: vec![ast::CaseWhen {
            condition: cond.clone(),
            result: value,
        }],
        else_result: None,
    }
}

/// Binds an aggregate call: its function, its argument bound per row.
fn bind_aggregate(binder: &Binder, f: &ast::Function, node: &ast::Expr) -> Result<AggCall> {
    let name = function_name(f);
    if matches!(
        name.as_str(),
        "string_agg" | "array_agg" | "percentile_cont" | "percentile_disc" | "mode" | "median"
    ) {
        return bind_collecting(binder, f, node, &name);
    }
    if !f.within_group.is_empty() {
        return Err(unsupported("WITHIN GROUP", node));
    }
    let filter = f.filter.as_deref();
    if let Some(c) = filter
        && contains_aggregate(c)
    {
        return Err(plan_err(
            "aggregate functions are not allowed in FILTER".into(),
            c,
        ));
    }
    // `FILTER (WHERE c)`: the rows where c is not true give the
    // aggregate a NULL, which it skips.
    let shown_filter = filter
        .map(|c| format!(" FILTER (WHERE {c})"))
        .unwrap_or_default();
    let ast::FunctionArguments::List(list) = &f.args else {
        return Err(plan_err(
            format!("{} needs an argument", name.to_uppercase()),
            node,
        ));
    };
    let distinct = matches!(
        list.duplicate_treatment,
        Some(ast::DuplicateTreatment::Distinct)
    );
    let func = match name.as_str() {
        "count" => AggFunc::Count,
        "sum" => AggFunc::Sum,
        "avg" => AggFunc::Avg,
        "min" => AggFunc::Min,
        "stddev" | "stddev_samp" => AggFunc::StddevSamp,
        "stddev_pop" => AggFunc::StddevPop,
        "variance" | "var_samp" => AggFunc::VarSamp,
        "var_pop" => AggFunc::VarPop,
        "bool_and" | "every" => AggFunc::BoolAnd,
        "bool_or" => AggFunc::BoolOr,
        "approx_count_distinct" => AggFunc::ApproxCountDistinct,
        _ => AggFunc::Max,
    };
    if list.args.len() != 1 {
        return Err(plan_err(
            format!("{} takes one argument", name.to_uppercase()),
            node,
        ));
    }
    if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) = &list.args[0] {
        if func != AggFunc::Count || distinct {
            return Err(plan_err(
                format!("{}(*) is not valid", name.to_uppercase()),
                node,
            ));
        }
        if let Some(c) = filter {
            let one = ast::Expr::value(ast::Value::Number("1".into(), false));
            let arg = binder.bind(&only_where(one, c), &mut Scope::Row { clause: "FILTER" })?;
            return Ok(AggCall {
                func: AggFunc::Count,
                arg: Some(arg),
                distinct: false,
                arg_type: A::Int64,
                name: format!("count(*){shown_filter}"),
                collect: None,
            });
        }
        return Ok(AggCall {
            func: AggFunc::CountStar,
            arg: None,
            distinct: false,
            arg_type: A::Null,
            name: "count(*)".into(),
            collect: None,
        });
    }
    let arg_ast = binder.plain_args(f, node)?.remove(0);
    let written = arg_ast.to_string();
    let arg_ast = match filter {
        Some(c) => only_where(arg_ast, c),
        None => arg_ast,
    };
    if contains_aggregate(&arg_ast) {
        return Err(plan_err("aggregate calls cannot be nested".into(), node));
    }
    let arg = binder.bind(
        &arg_ast,
        &mut Scope::Row {
            clause: "an aggregate argument",
        },
    )?;
    let t = arg.data_type(&binder.types());
    // (sum and avg of intervals: see `AggState::interval_sum`.)
    if t == crate::query::interval::TYPE
        && !(matches!(func, AggFunc::Min | AggFunc::Max) || func == AggFunc::Count && !distinct)
    {
        return Err(unsupported(
            &format!("{}(...) of an INTERVAL value", name.to_uppercase()),
            node,
        ));
    }
    if distinct
        && !matches!(
            func,
            AggFunc::Count | AggFunc::Min | AggFunc::Max | AggFunc::ApproxCountDistinct
        )
    {
        return Err(unsupported(
            &format!("{}(DISTINCT ...)", name.to_uppercase()),
            node,
        ));
    }
    let arg = match func {
        AggFunc::BoolAnd | AggFunc::BoolOr => {
            if t == A::Null {
                coerce(arg, &t, &A::Boolean)
            } else if t != A::Boolean {
                return Err(plan_err(
                    format!(
                        "{} needs a boolean, not {}",
                        name.to_uppercase(),
                        type_name(&t)
                    ),
                    node,
                ));
            } else {
                arg
            }
        }
        AggFunc::Sum
        | AggFunc::Avg
        | AggFunc::VarSamp
        | AggFunc::VarPop
        | AggFunc::StddevSamp
        | AggFunc::StddevPop => {
            if t == A::Null {
                coerce(arg, &t, &A::Int64)
            } else if !is_numeric(&t) {
                return Err(plan_err(
                    format!(
                        "{} needs a number, not {}",
                        name.to_uppercase(),
                        type_name(&t)
                    ),
                    node,
                ));
            } else {
                arg
            }
        }
        AggFunc::ApproxCountDistinct if t == A::Null => coerce(arg, &t, &A::Int64),
        _ => arg,
    };
    let arg_type = arg.data_type(&binder.types());
    let shown = format!(
        "{}({}{}){shown_filter}",
        name,
        if distinct { "DISTINCT " } else { "" },
        if filter.is_some() {
            written
        } else {
            arg.to_string()
        }
    );
    Ok(AggCall {
        func,
        arg: Some(arg),
        distinct: distinct && func == AggFunc::Count,
        arg_type,
        name: shown,
        collect: None,
    })
}
