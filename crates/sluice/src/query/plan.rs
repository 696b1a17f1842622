//! SQL text → a bound, typed [`Plan`] for one table.
//!
//! The parser is `sqlparser`; binding, type checking and planning are
//! ours. Everything outside the supported subset is refused with an error
//! that names the construct and where it is, never answered wrongly.

use std::fmt::Write as _;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, new_null_array,
};
use arrow_schema::{DataType as A, TimeUnit};
use sqlparser::ast::{self, Spanned};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

use super::agg::{AggCall, AggFunc};
use super::expr::{BinOp, CastSite, DatePart, Expr, arith_type, cast, cast_at, type_name};
use crate::batch::Schema;
use crate::error::{Error, Result};
use crate::parse::value;

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
}

fn at(span: sqlparser::tokenizer::Span) -> String {
    if span.start.line == 0 {
        String::new()
    } else {
        format!(" at line {}, column {}", span.start.line, span.start.column)
    }
}

fn unsupported(what: &str, node: &impl Spanned) -> Error {
    Error::Plan(format!("{what} is not supported{}", at(node.span())))
}

fn plan_err(msg: String, node: &impl Spanned) -> Error {
    Error::Plan(format!("{msg}{}", at(node.span())))
}

/// Parses one statement.
pub fn parse(sql: &str) -> Result<ast::Statement> {
    let mut stmts = Parser::parse_sql(&GenericDialect {}, sql)
        .map_err(|e| Error::Plan(parser_message(&e.to_string())))?;
    match stmts.len() {
        0 => Err(Error::Plan("empty query".into())),
        1 => Ok(stmts.remove(0)),
        n => Err(Error::Plan(format!(
            "expected one statement, got {n}{}",
            at(stmts[1].span())
        ))),
    }
}

/// The parser's message with its place written as ours: `... at line 1,
/// column 8` for `... at Line: 1, Column: 8`.
fn parser_message(m: &str) -> String {
    match m.rsplit_once(" at Line: ") {
        Some((head, place)) => match place.split_once(", Column: ") {
            Some((line, col)) => format!("{head} at line {line}, column {col}"),
            None => m.to_string(),
        },
        None => m.to_string(),
    }
}

/// The SQL text a statement was parsed from, to find where the keywords
/// that the syntax tree keeps no place for are (`INSERT`, `UNION`, `TOP`).
#[derive(Clone, Copy)]
struct Text<'a>(&'a str);

impl Text<'_> {
    /// ` at line L, column C` of the first word among `words` (any word when
    /// empty) at or after `from`; empty when there is none.
    fn word_at(self, from: sqlparser::tokenizer::Location, words: &[&str]) -> String {
        use sqlparser::tokenizer::{Token, Tokenizer};
        let Ok(tokens) = Tokenizer::new(&GenericDialect {}, self.0).tokenize_with_location() else {
            return String::new();
        };
        tokens
            .iter()
            .find(|t| {
                t.span.start >= from
                    && matches!(&t.token, Token::Word(w)
                        if words.is_empty() || words.iter().any(|k| w.value.eq_ignore_ascii_case(k)))
            })
            .map_or_else(String::new, |t| at(t.span))
    }

    /// ` at line L, column C` of the `CAST` keyword of `CAST(expr AS ...)`
    /// (the syntax tree places a CAST where its argument starts); empty
    /// when it cannot be told.
    fn cast_keyword(self, expr: &ast::Expr) -> String {
        use sqlparser::tokenizer::{Token, Tokenizer};
        // CASTs that start where this one's argument starts: `CAST(CAST(x`.
        let mut inner = 0;
        let mut e = expr;
        loop {
            e = match e {
                ast::Expr::Cast {
                    kind: ast::CastKind::Cast,
                    expr,
                    ..
                } => {
                    inner += 1;
                    expr
                }
                ast::Expr::Cast { expr, .. } | ast::Expr::Nested(expr) => expr,
                ast::Expr::BinaryOp { left, .. } => left,
                _ => break,
            };
        }
        let from = expr.span().start;
        let Ok(tokens) = Tokenizer::new(&GenericDialect {}, self.0).tokenize_with_location() else {
            return String::new();
        };
        let mut seen = 0;
        for t in tokens.iter().rev().filter(|t| t.span.start < from) {
            match &t.token {
                Token::Whitespace(_) | Token::LParen => {}
                Token::Word(w) if w.value.eq_ignore_ascii_case("CAST") => {
                    if seen == inner {
                        return at(t.span);
                    }
                    seen += 1;
                }
                _ => break,
            }
        }
        String::new()
    }

    /// ` at line L, column C` of the first word among `words`.
    fn first(self, words: &[&str]) -> String {
        self.word_at(sqlparser::tokenizer::Location::new(1, 1), words)
    }
}

/// Looks up a table's schema.
pub trait Catalog {
    fn table_schema(&self, name: &str) -> Option<Schema>;
}

/// Binds a statement to a plan.
pub fn plan(stmt: &ast::Statement, catalog: &dyn Catalog) -> Result<Plan> {
    plan_in(stmt, catalog, Text(""))
}

/// Parses and plans one statement; errors about keywords say where they
/// are in `sql`.
pub fn plan_sql(sql: &str, catalog: &dyn Catalog) -> Result<Plan> {
    plan_in(&parse(sql)?, catalog, Text(sql))
}

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
        } => {
            if *analyze {
                return Err(Error::Plan(format!(
                    "EXPLAIN ANALYZE is not supported; use --timing{}",
                    start()
                )));
            }
            match statement.as_ref() {
                ast::Statement::Query(q) => plan_query(q, catalog, true, text),
                other => Err(unsupported("EXPLAIN of anything but SELECT", other)),
            }
        }
        other => Err(Error::Plan(format!(
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

fn plan_query<'t>(
    q: &ast::Query,
    catalog: &dyn Catalog,
    explain: bool,
    text: Text<'t>,
) -> Result<Plan> {
    if let Some(w) = &q.with {
        return Err(unsupported("WITH (common table expressions)", w));
    }
    if q.fetch.is_some() {
        return Err(Error::Plan(format!(
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
            return Err(Error::Plan(format!("{op} is not supported{place}")));
        }
        ast::SetExpr::Values(v) => {
            return Err(Error::Plan(format!(
                "VALUES is not supported{}",
                match text.first(&["VALUES"]) {
                    s if s.is_empty() => at(v.span()),
                    s => s,
                }
            )));
        }
        other => return Err(unsupported(&other.to_string(), other)),
    };
    if select.distinct.is_some() {
        return Err(unsupported(
            "SELECT DISTINCT (use GROUP BY)",
            select.as_ref(),
        ));
    }
    if select.top.is_some() {
        return Err(Error::Plan(format!(
            "TOP is not supported; use LIMIT{}",
            text.first(&["TOP"])
        )));
    }
    if !select.named_window.is_empty() || select.qualify.is_some() {
        return Err(Error::Plan(format!(
            "window functions are not supported{}",
            text.first(&["WINDOW", "QUALIFY"])
        )));
    }
    // FROM: one table, no joins.
    let (table, alias, schema) = match select.from.as_slice() {
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
                    let tname = name
                        .0
                        .last()
                        .and_then(|p| p.as_ident())
                        .map(|i| i.value.to_ascii_lowercase())
                        .ok_or_else(|| plan_err(format!("bad table name {name}"), &twj.relation))?;
                    let schema = catalog.table_schema(&tname).ok_or_else(|| {
                        plan_err(format!("no table named {tname:?}"), &twj.relation)
                    })?;
                    (
                        Some(tname),
                        alias.as_ref().map(|a| a.name.value.to_ascii_lowercase()),
                        Some(schema),
                    )
                }
                ast::TableFactor::Derived { .. } => {
                    return Err(unsupported("a subquery in FROM", &twj.relation));
                }
                other => return Err(unsupported("this kind of FROM item", other)),
            }
        }
        [_, second, ..] => return Err(unsupported("more than one table in FROM (joins)", second)),
    };
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
    let binder = Binder {
        table: table.clone(),
        alias,
        columns: &columns,
        text,
    };

    let filter = match &select.selection {
        Some(w) => {
            let e = binder.bind(w, &mut Scope::Row { clause: "WHERE" })?;
            Some(binder.boolean(e, w, "WHERE")?)
        }
        None => None,
    };

    // Select items, with * expanded.
    let mut items: Vec<(ast::Expr, String)> = Vec::new();
    for item in &select.projection {
        match item {
            ast::SelectItem::UnnamedExpr(e) => {
                let name = match e {
                    ast::Expr::Identifier(i) => i.value.clone(),
                    ast::Expr::CompoundIdentifier(parts) => {
                        parts.last().map(|i| i.value.clone()).unwrap_or_default()
                    }
                    other => other.to_string(),
                };
                items.push((e.clone(), name));
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                items.push((expr.clone(), alias.value.clone()))
            }
            ast::SelectItem::Wildcard(_) => {
                if columns.is_empty() {
                    return Err(unsupported("SELECT * without FROM", item));
                }
                for (n, _) in &columns {
                    items.push((ast::Expr::Identifier(ast::Ident::new(n.clone())), n.clone()));
                }
            }
            other => return Err(unsupported("this select item", other)),
        }
    }

    let group_exprs: Vec<ast::Expr> = match &select.group_by {
        ast::GroupByExpr::Expressions(exprs, mods) => {
            if !mods.is_empty() {
                return Err(Error::Plan(format!(
                    "GROUP BY modifiers (ROLLUP, CUBE, ...) are not supported{}",
                    text.first(&["ROLLUP", "CUBE", "TOTALS", "GROUPING"])
                )));
            }
            exprs.clone()
        }
        ast::GroupByExpr::All(_) => {
            return Err(Error::Plan(format!(
                "GROUP BY ALL is not supported{}",
                text.first(&["GROUP"])
            )));
        }
    };
    let has_agg = !group_exprs.is_empty()
        || select.having.is_some()
        || items.iter().any(|(e, _)| contains_aggregate(e));

    let mut names: Vec<String> = items.iter().map(|i| i.1.clone()).collect();
    let visible = items.len();
    let order_by: Vec<&ast::OrderByExpr> = match &q.order_by {
        None => vec![],
        Some(ob) => match &ob.kind {
            ast::OrderByKind::Expressions(v) => v.iter().collect(),
            ast::OrderByKind::All(_) => {
                return Err(Error::Plan(format!(
                    "ORDER BY ALL is not supported{}",
                    text.first(&["ORDER"])
                )));
            }
        },
    };

    let mut order = Vec::new();
    let body = if !has_agg {
        let mut exprs = Vec::new();
        for (e, _) in &items {
            exprs.push(binder.bind(e, &mut Scope::Row { clause: "SELECT" })?);
        }
        for ob in &order_by {
            let column = match order_target(&ob.expr, &items, visible)? {
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
        Body::Project(exprs)
    } else {
        // GROUP BY items: positions and output aliases resolve to select items.
        let mut key_asts = Vec::new();
        for g in &group_exprs {
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
        let mut keys = Vec::new();
        for k in &key_asts {
            keys.push(binder.bind(k, &mut Scope::Row { clause: "GROUP BY" })?);
        }
        let key_shown: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        let mut state = AggState {
            keys: &keys,
            key_shown: &key_shown,
            calls: Vec::new(),
        };
        let mut post = Vec::new();
        for (e, _) in &items {
            post.push(binder.bind(e, &mut Scope::Post(&mut state))?);
        }
        let having = match &select.having {
            Some(h) => {
                let e = binder.bind(h, &mut Scope::Post(&mut state))?;
                Some(binder.boolean(e, h, "HAVING")?)
            }
            None => None,
        };
        for ob in &order_by {
            let column = match order_target(&ob.expr, &items, visible)? {
                Some(c) => c,
                None => {
                    let e = binder.bind(&ob.expr, &mut Scope::Post(&mut state))?;
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
        Body::Aggregate {
            keys,
            aggs: Arc::new(calls),
            having,
            post,
        }
    };

    let (limit, offset) = match &q.limit_clause {
        None => (None, 0),
        Some(ast::LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) => {
            if !limit_by.is_empty() {
                return Err(Error::Plan(format!(
                    "LIMIT BY is not supported{}",
                    text.first(&["LIMIT"])
                )));
            }
            let limit = match limit {
                None => None,
                Some(ast::Expr::Value(v)) if matches!(v.value, ast::Value::Null) => None,
                Some(e) => Some(count_literal(e, "LIMIT")?),
            };
            let offset = match offset {
                None => 0,
                Some(o) => count_literal(&o.value, "OFFSET")?,
            };
            (limit, offset)
        }
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (
            Some(count_literal(limit, "LIMIT")?),
            count_literal(offset, "OFFSET")?,
        ),
    };

    let prune = filter
        .as_ref()
        .map(|f| prune_of(f, &table_types))
        .unwrap_or_default();
    let key_lookup = match (&filter, schema.as_ref().and_then(|s| s.key_column())) {
        (Some(f), Some(k)) => key_lookup_of(f, k, &table_types),
        _ => None,
    };
    // Projection pushdown: the scan keeps only the columns the query reads,
    // renumbered; `scan_columns` maps back to the table's columns.
    let mut used = vec![false; table_types.len()];
    let mut filter = filter;
    let mut body = body;
    {
        let mut exprs: Vec<&mut Expr> = Vec::new();
        if let Some(f) = filter.as_mut() {
            exprs.push(f);
        }
        match &mut body {
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
    let scan_columns: Vec<usize> = used
        .iter()
        .enumerate()
        .filter(|(_, u)| **u)
        .map(|(i, _)| i)
        .collect();
    let scan_types: Vec<A> = scan_columns
        .iter()
        .map(|&i| table_types[i].clone())
        .collect();
    Ok(Plan {
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
    })
}

/// The keys of a top-level AND-ed `key = literal` or `key IN (literals)`
/// on the key column `k` stored as `stored`, in index byte form; `None`
/// when there is no such conjunct or a literal does not convert exactly.
fn key_lookup_of(filter: &Expr, k: usize, types: &[A]) -> Option<Vec<Vec<u8>>> {
    let stored = types.get(k)?;
    let key_bytes = |e: &Expr| -> Option<Vec<u8>> {
        let Expr::Literal(l) = e else { return None };
        if l.is_null(0) {
            return None;
        }
        match (stored, l.data_type()) {
            (A::Utf8, A::Utf8) => {
                use arrow_array::cast::AsArray;
                Some(l.as_string::<i32>().value(0).as_bytes().to_vec())
            }
            (A::Utf8, _) | (_, A::Utf8) => None,
            _ => {
                let v = i64::try_from(stat_value(l, stored)?).ok()?;
                Some(crate::index::encode_i64(v).to_vec())
            }
        }
    };
    let mut stack = vec![filter];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Binary {
                op: BinOp::And,
                left,
                right,
            } => {
                stack.push(left);
                stack.push(right);
            }
            Expr::Binary {
                op: BinOp::Eq,
                left,
                right,
            } => match (column_of(left, types), column_of(right, types)) {
                (Some(c), _) if c == k => return key_bytes(right).map(|b| vec![b]),
                (_, Some(c)) if c == k => return key_bytes(left).map(|b| vec![b]),
                _ => {}
            },
            Expr::InList {
                expr,
                list,
                negated: false,
            } if column_of(expr, types) == Some(k) => {
                // A key listed twice is looked up once (the row must not
                // come back twice).
                let mut keys = list.iter().map(key_bytes).collect::<Option<Vec<_>>>()?;
                keys.sort_unstable();
                keys.dedup();
                return Some(keys);
            }
            _ => {}
        }
    }
    None
}

fn count_literal(e: &ast::Expr, what: &str) -> Result<usize> {
    if let ast::Expr::Value(v) = e
        && let ast::Value::Number(n, _) = &v.value
        && let Ok(k) = n.parse::<usize>()
    {
        return Ok(k);
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
        // An output column's name (alias or column) wins, as in PostgreSQL.
        ast::Expr::Identifier(i) => Ok(items
            .iter()
            .position(|it| it.1.eq_ignore_ascii_case(&i.value))),
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

fn is_aggregate_name(n: &str) -> bool {
    matches!(n, "count" | "sum" | "avg" | "min" | "max")
}

fn function_name(f: &ast::Function) -> String {
    f.name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.to_ascii_lowercase())
        .unwrap_or_default()
}

fn contains_aggregate(e: &ast::Expr) -> bool {
    use ast::Expr as E;
    let any = |v: &[&ast::Expr]| v.iter().any(|x| contains_aggregate(x));
    match e {
        E::Function(f) => {
            is_aggregate_name(&function_name(f))
                || match &f.args {
                    ast::FunctionArguments::List(l) => l.args.iter().any(|a| {
                        matches!(a, ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) if contains_aggregate(x))
                    }),
                    _ => false,
                }
        }
        E::BinaryOp { left, right, .. } => any(&[left, right]),
        E::UnaryOp { expr, .. } | E::Nested(expr) | E::IsNull(expr) | E::IsNotNull(expr) => contains_aggregate(expr),
        E::Cast { expr, .. } | E::Extract { expr, .. } => contains_aggregate(expr),
        E::Between { expr, low, high, .. } => any(&[expr, low, high]),
        E::InList { expr, list, .. } => contains_aggregate(expr) || list.iter().any(contains_aggregate),
        E::Like { expr, pattern, .. } | E::ILike { expr, pattern, .. } => any(&[expr, pattern]),
        E::Substring { expr, substring_from, substring_for, .. } => {
            contains_aggregate(expr)
                || substring_from.as_deref().is_some_and(contains_aggregate)
                || substring_for.as_deref().is_some_and(contains_aggregate)
        }
        E::Case { operand, conditions, else_result, .. } => {
            operand.as_deref().is_some_and(contains_aggregate)
                || conditions.iter().any(|c| contains_aggregate(&c.condition) || contains_aggregate(&c.result))
                || else_result.as_deref().is_some_and(contains_aggregate)
        }
        _ => false,
    }
}

struct AggState<'a> {
    keys: &'a [Expr],
    key_shown: &'a [String],
    calls: Vec<AggCall>,
}

enum Scope<'s, 'a> {
    /// Per-row expressions over the table's columns.
    Row { clause: &'static str },
    /// After GROUP BY: group keys and aggregates.
    Post(&'s mut AggState<'a>),
}

struct Binder<'c> {
    table: Option<String>,
    alias: Option<String>,
    columns: &'c [(String, A)],
    text: Text<'c>,
}

fn lit(a: ArrayRef) -> Expr {
    Expr::Literal(a)
}

fn is_numeric(t: &A) -> bool {
    matches!(t, A::Int32 | A::Int64 | A::Float64 | A::Decimal128(..))
}

impl Binder<'_> {
    fn types(&self) -> Vec<A> {
        self.columns.iter().map(|c| c.1.clone()).collect()
    }

    fn ty(&self, e: &Expr, scope: &Scope) -> A {
        match scope {
            Scope::Row { .. } => e.data_type(&self.types()),
            Scope::Post(st) => {
                let mut t: Vec<A> = st.keys.iter().map(|k| k.data_type(&self.types())).collect();
                t.extend(st.calls.iter().map(|c| c.output_type()));
                e.data_type(&t)
            }
        }
    }

    fn boolean(&self, e: Expr, node: &ast::Expr, clause: &str) -> Result<Expr> {
        let t = e.data_type(&self.types());
        match t {
            A::Boolean => Ok(e),
            A::Null => Ok(Expr::Cast {
                expr: Box::new(e),
                to: A::Boolean,
                site: None,
            }),
            other => Err(plan_err(
                format!(
                    "{clause} must be a boolean condition, not {}",
                    type_name(&other)
                ),
                node,
            )),
        }
    }

    /// The column `name` names: exactly, else ignoring ASCII case when one
    /// column alone matches so (a table may have `Duck` and `duck`).
    fn column(&self, name: &str, node: &ast::Expr) -> Result<(usize, String)> {
        let names = self.columns.iter().map(|c| c.0.as_bytes());
        if crate::batch::position_of(names, name.as_bytes()).is_none() {
            let alike: Vec<&str> = self
                .columns
                .iter()
                .filter(|c| c.0.eq_ignore_ascii_case(name))
                .map(|c| c.0.as_str())
                .collect();
            if alike.len() > 1 {
                return Err(plan_err(
                    format!(
                        "column name {name:?} is ambiguous: columns {} differ in case alone (write the one meant in double quotes, as it is written)",
                        alike.join(", ")
                    ),
                    node,
                ));
            }
        }
        crate::batch::position_of(self.columns.iter().map(|c| c.0.as_bytes()), name.as_bytes())
            .map(|i| (i, self.columns[i].0.clone()))
            .ok_or_else(|| match &self.table {
                Some(t) => plan_err(format!("no column named {name:?} in table {t}"), node),
                None => plan_err(
                    format!("no column named {name:?} (the query has no FROM)"),
                    node,
                ),
            })
    }

    fn bind(&self, e: &ast::Expr, scope: &mut Scope) -> Result<Expr> {
        if let ast::Expr::Function(f) = e
            && f.over.is_some()
        {
            return Err(plan_err(
                "window functions (OVER) are not supported".into(),
                e,
            ));
        }
        if let Scope::Post(st) = scope {
            // An aggregate call becomes a column of the aggregate's output.
            if let ast::Expr::Function(f) = e
                && is_aggregate_name(&function_name(f))
            {
                let call = self.bind_aggregate(f, e)?;
                let idx = match st.calls.iter().position(|c| c.name == call.name) {
                    Some(i) => i,
                    None => {
                        st.calls.push(call);
                        st.calls.len() - 1
                    }
                };
                return Ok(Expr::Column {
                    index: st.keys.len() + idx,
                    name: st.calls[idx].name.clone(),
                });
            }
            // A whole expression that is a GROUP BY key becomes that key.
            if !contains_aggregate(e)
                && let Ok(row) = self.bind(e, &mut Scope::Row { clause: "SELECT" })
            {
                let shown = row.to_string();
                if let Some(k) = st.key_shown.iter().position(|s| *s == shown) {
                    return Ok(Expr::Column {
                        index: k,
                        name: shown,
                    });
                }
                if let ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) = e {
                    return Err(plan_err(
                        format!(
                            "column {shown:?} must appear in the GROUP BY clause or be used in an aggregate function"
                        ),
                        e,
                    ));
                }
            }
        }
        match e {
            ast::Expr::Identifier(i) => {
                let (index, name) = self.column(&i.value, e)?;
                Ok(Expr::Column { index, name })
            }
            ast::Expr::CompoundIdentifier(parts) => {
                let [q, c] = parts.as_slice() else {
                    return Err(plan_err(format!("bad column reference {e}"), e));
                };
                let qn = q.value.to_ascii_lowercase();
                if Some(&qn) != self.table.as_ref() && Some(&qn) != self.alias.as_ref() {
                    return Err(plan_err(format!("unknown table {:?} in {e}", q.value), e));
                }
                let (index, name) = self.column(&c.value, e)?;
                Ok(Expr::Column { index, name })
            }
            ast::Expr::Nested(inner) => self.bind(inner, scope),
            ast::Expr::Value(v) => literal(&v.value, e),
            ast::Expr::TypedString(ts) => {
                let text = ts
                    .value
                    .value
                    .clone()
                    .into_string()
                    .ok_or_else(|| plan_err("bad typed literal".into(), e))?;
                let target = sql_type(&ts.data_type, e)?;
                let s: ArrayRef = Arc::new(StringArray::from(vec![text]));
                Ok(lit(
                    cast(&s, &target).map_err(|er| plan_err(er.to_string(), e))?
                ))
            }
            ast::Expr::UnaryOp { op, expr } => {
                let inner = self.bind(expr, scope)?;
                let t = self.ty(&inner, scope);
                match op {
                    ast::UnaryOperator::Minus => {
                        if !is_numeric(&t) && t != A::Null {
                            return Err(plan_err(format!("cannot negate {}", type_name(&t)), e));
                        }
                        Ok(Expr::Neg(Box::new(coerce(
                            inner,
                            &t,
                            &if t == A::Null { A::Int64 } else { t.clone() },
                        ))))
                    }
                    ast::UnaryOperator::Plus => Ok(inner),
                    ast::UnaryOperator::Not => {
                        if t != A::Boolean && t != A::Null {
                            return Err(plan_err(
                                format!("NOT needs a boolean, not {}", type_name(&t)),
                                e,
                            ));
                        }
                        Ok(Expr::Not(Box::new(coerce(inner, &t, &A::Boolean))))
                    }
                    other => Err(unsupported(&format!("the operator {other}"), e)),
                }
            }
            ast::Expr::BinaryOp { left, op, right } => {
                let bop = match op {
                    ast::BinaryOperator::Plus => BinOp::Add,
                    ast::BinaryOperator::Minus => BinOp::Sub,
                    ast::BinaryOperator::Multiply => BinOp::Mul,
                    ast::BinaryOperator::Divide => BinOp::Div,
                    ast::BinaryOperator::Eq => BinOp::Eq,
                    ast::BinaryOperator::NotEq => BinOp::NotEq,
                    ast::BinaryOperator::Lt => BinOp::Lt,
                    ast::BinaryOperator::LtEq => BinOp::LtEq,
                    ast::BinaryOperator::Gt => BinOp::Gt,
                    ast::BinaryOperator::GtEq => BinOp::GtEq,
                    ast::BinaryOperator::And => BinOp::And,
                    ast::BinaryOperator::Or => BinOp::Or,
                    other => return Err(unsupported(&format!("the operator {other}"), e)),
                };
                // DATE ± INTERVAL
                if let ast::Expr::Interval(iv) = right.as_ref()
                    && matches!(bop, BinOp::Add | BinOp::Sub)
                {
                    let l = self.bind(left, scope)?;
                    return self.date_interval(l, bop, iv, scope, e);
                }
                let l = self.bind(left, scope)?;
                let r = self.bind(right, scope)?;
                let out = self.binary(bop, l, r, scope, e)?;
                fold(out, e)
            }
            ast::Expr::IsNull(x) => Ok(Expr::IsNull {
                expr: Box::new(self.bind(x, scope)?),
                negated: false,
            }),
            ast::Expr::IsNotNull(x) => Ok(Expr::IsNull {
                expr: Box::new(self.bind(x, scope)?),
                negated: true,
            }),
            ast::Expr::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let x = self.bind(expr, scope)?;
                let lo = self.bind(low, scope)?;
                let hi = self.bind(high, scope)?;
                let ge = self.binary(BinOp::GtEq, x.clone(), lo, scope, e)?;
                let le = self.binary(BinOp::LtEq, x, hi, scope, e)?;
                let both = Expr::Binary {
                    op: BinOp::And,
                    left: Box::new(ge),
                    right: Box::new(le),
                };
                Ok(if *negated {
                    Expr::Not(Box::new(both))
                } else {
                    both
                })
            }
            ast::Expr::InList {
                expr,
                list,
                negated,
            } => {
                let x = self.bind(expr, scope)?;
                let mut items = Vec::new();
                let mut xts = Vec::new();
                for item in list {
                    let it = self.bind(item, scope)?;
                    // Coerce like `x = item` (which checks the types)...
                    match self.binary(BinOp::Eq, x.clone(), it, scope, item)? {
                        Expr::Binary { left, right, .. } => {
                            xts.push(self.ty(&left, scope));
                            items.push(*right);
                        }
                        _ => return Err(Error::Internal("IN coercion".into())),
                    }
                }
                // ...then bring x and every item to one type: `a IN (1,
                // 1.5)` compares a as DECIMAL with both.
                let to = common_type(&xts).ok_or_else(|| {
                    plan_err("IN list items of incompatible types".into(), expr.as_ref())
                })?;
                let xty = self.ty(&x, scope);
                let items = items
                    .into_iter()
                    .map(|it| {
                        let t = self.ty(&it, scope);
                        coerce(it, &t, &to)
                    })
                    .collect();
                Ok(Expr::InList {
                    expr: Box::new(coerce(x, &xty, &to)),
                    list: items,
                    negated: *negated,
                })
            }
            ast::Expr::Like {
                negated,
                any,
                expr,
                pattern,
                escape_char,
            }
            | ast::Expr::ILike {
                negated,
                any,
                expr,
                pattern,
                escape_char,
            } => {
                if *any || escape_char.is_some() {
                    return Err(unsupported("LIKE ANY / ESCAPE", e));
                }
                let x = self.bind(expr, scope)?;
                let t = self.ty(&x, scope);
                if t != A::Utf8 && t != A::Null {
                    return Err(plan_err(
                        format!("LIKE needs TEXT, not {}", type_name(&t)),
                        e,
                    ));
                }
                let pattern = match pattern.as_ref() {
                    ast::Expr::Value(v) => v.value.clone().into_string(),
                    _ => None,
                }
                .ok_or_else(|| {
                    unsupported(
                        "a LIKE pattern that is not a string literal",
                        pattern.as_ref(),
                    )
                })?;
                Ok(Expr::Like {
                    expr: Box::new(coerce(x, &t, &A::Utf8)),
                    pattern,
                    negated: *negated,
                    case_insensitive: matches!(e, ast::Expr::ILike { .. }),
                })
            }
            ast::Expr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let op = match operand {
                    Some(o) => Some(self.bind(o, scope)?),
                    None => None,
                };
                let mut whens = Vec::new();
                let mut results = Vec::new();
                for cw in conditions {
                    let c = self.bind(&cw.condition, scope)?;
                    let c = match &op {
                        Some(o) => self.binary(BinOp::Eq, o.clone(), c, scope, &cw.condition)?,
                        None => {
                            let t = self.ty(&c, scope);
                            if t != A::Boolean && t != A::Null {
                                return Err(plan_err(
                                    format!("CASE WHEN needs a boolean, not {}", type_name(&t)),
                                    &cw.condition,
                                ));
                            }
                            c
                        }
                    };
                    whens.push(c);
                    results.push(self.bind(&cw.result, scope)?);
                }
                let otherwise = match else_result {
                    Some(x) => self.bind(x, scope)?,
                    None => lit(new_null_array(&A::Null, 1)),
                };
                results.push(otherwise);
                let types: Vec<A> = results.iter().map(|r| self.ty(r, scope)).collect();
                let target = common_type(&types).ok_or_else(|| {
                    plan_err(
                        format!(
                            "CASE results have incompatible types: {}",
                            types.iter().map(type_name).collect::<Vec<_>>().join(", ")
                        ),
                        e,
                    )
                })?;
                let mut results: Vec<Expr> = results
                    .into_iter()
                    .zip(&types)
                    .map(|(r, t)| coerce(r, t, &target))
                    .collect();
                let otherwise = results.pop().expect("pushed above");
                Ok(Expr::Case {
                    whens: whens.into_iter().zip(results).collect(),
                    otherwise: Box::new(otherwise),
                })
            }
            ast::Expr::Cast {
                kind,
                expr,
                data_type,
                format,
            } => {
                if format.is_some()
                    || !matches!(kind, ast::CastKind::Cast | ast::CastKind::DoubleColon)
                {
                    return Err(unsupported("this form of CAST", e));
                }
                let x = self.bind(expr, scope)?;
                let to = sql_type(data_type, e)?;
                let site = CastSite {
                    type_text: data_type.to_string(),
                    precision: decimal_precision(data_type),
                    at: match self.text.cast_keyword(expr) {
                        s if s.is_empty() => at(e.span()),
                        s => s,
                    },
                };
                let from = self.ty(&x, scope);
                check_cast(&from, &to, &site.type_text)
                    .map_err(|m| Error::Plan(format!("{m}{}", site.at)))?;
                if let Expr::Literal(a) = &x {
                    return Ok(lit(
                        cast_at(a, &to, Some(&site)).map_err(|er| Error::Plan(er.to_string()))?
                    ));
                }
                Ok(Expr::Cast {
                    expr: Box::new(x),
                    to,
                    site: Some(Arc::new(site)),
                })
            }
            ast::Expr::Extract { field, expr, .. } => {
                let part = match field {
                    ast::DateTimeField::Year | ast::DateTimeField::Years => DatePart::Year,
                    ast::DateTimeField::Month | ast::DateTimeField::Months => DatePart::Month,
                    ast::DateTimeField::Day | ast::DateTimeField::Days => DatePart::Day,
                    other => return Err(unsupported(&format!("EXTRACT({other})"), e)),
                };
                let x = self.bind(expr, scope)?;
                let t = self.ty(&x, scope);
                if !matches!(t, A::Date32 | A::Timestamp(..) | A::Null) {
                    return Err(plan_err(
                        format!("EXTRACT needs a DATE or TIMESTAMP, not {}", type_name(&t)),
                        e,
                    ));
                }
                Ok(Expr::Extract {
                    part,
                    expr: Box::new(x),
                })
            }
            ast::Expr::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let x = self.bind(expr, scope)?;
                let t = self.ty(&x, scope);
                if t != A::Utf8 && t != A::Null {
                    return Err(plan_err(
                        format!("SUBSTRING needs TEXT, not {}", type_name(&t)),
                        e,
                    ));
                }
                let x = coerce(x, &t, &A::Utf8);
                let int_arg = |a: &ast::Expr, scope: &mut Scope| -> Result<Expr> {
                    let v = self.bind(a, scope)?;
                    let t = self.ty(&v, scope);
                    if !matches!(t, A::Int32 | A::Int64 | A::Null) {
                        return Err(plan_err(
                            format!(
                                "SUBSTRING positions must be integers, not {}",
                                type_name(&t)
                            ),
                            a,
                        ));
                    }
                    Ok(coerce(v, &t, &A::Int64))
                };
                let start = match substring_from {
                    Some(f) => int_arg(f, scope)?,
                    None => lit(Arc::new(Int64Array::from(vec![1]))),
                };
                let len = match substring_for {
                    Some(f) => Some(Box::new(int_arg(f, scope)?)),
                    None => None,
                };
                Ok(Expr::Substring {
                    expr: Box::new(x),
                    start: Box::new(start),
                    len,
                })
            }
            ast::Expr::Function(f) => {
                let name = function_name(f);
                if f.over.is_some() {
                    return Err(unsupported("window functions (OVER)", e));
                }
                if is_aggregate_name(&name) {
                    let Scope::Row { clause } = scope else {
                        unreachable!("handled above")
                    };
                    return Err(plan_err(
                        format!("aggregate functions are not allowed in {clause}"),
                        e,
                    ));
                }
                let args = self.plain_args(f, e)?;
                let mut bound = Vec::new();
                for a in &args {
                    bound.push(self.bind(a, scope)?);
                }
                let types: Vec<A> = bound.iter().map(|b| self.ty(b, scope)).collect();
                let one = |what: &str| -> Result<()> {
                    if bound.len() != 1 {
                        return Err(plan_err(format!("{what} takes one argument"), e));
                    }
                    Ok(())
                };
                match name.as_str() {
                    "upper" | "lower" | "length" | "char_length" => {
                        one(&name.to_uppercase())?;
                        if types[0] != A::Utf8 && types[0] != A::Null {
                            return Err(plan_err(
                                format!(
                                    "{} needs TEXT, not {}",
                                    name.to_uppercase(),
                                    type_name(&types[0])
                                ),
                                e,
                            ));
                        }
                        let x = Box::new(coerce(bound.remove(0), &types[0], &A::Utf8));
                        Ok(match name.as_str() {
                            "upper" => Expr::Upper(x),
                            "lower" => Expr::Lower(x),
                            _ => Expr::Length(x),
                        })
                    }
                    "abs" => {
                        one("ABS")?;
                        if !is_numeric(&types[0]) && types[0] != A::Null {
                            return Err(plan_err(
                                format!("ABS needs a number, not {}", type_name(&types[0])),
                                e,
                            ));
                        }
                        let target = if types[0] == A::Null {
                            A::Int64
                        } else {
                            types[0].clone()
                        };
                        Ok(Expr::Abs(Box::new(coerce(
                            bound.remove(0),
                            &types[0],
                            &target,
                        ))))
                    }
                    "coalesce" => {
                        if bound.is_empty() {
                            return Err(plan_err("COALESCE needs arguments".into(), e));
                        }
                        let target = common_type(&types).ok_or_else(|| {
                            plan_err("COALESCE arguments have incompatible types".into(), e)
                        })?;
                        Ok(Expr::Coalesce(
                            bound
                                .into_iter()
                                .zip(&types)
                                .map(|(b, t)| coerce(b, t, &target))
                                .collect(),
                        ))
                    }
                    _ => Err(plan_err(
                        format!("unknown function {}", name.to_uppercase()),
                        e,
                    )),
                }
            }
            ast::Expr::Subquery(_) | ast::Expr::InSubquery { .. } | ast::Expr::Exists { .. } => {
                Err(plan_err("subqueries are not supported".to_string(), e))
            }
            ast::Expr::Interval(_) => Err(unsupported("an INTERVAL outside DATE ± INTERVAL", e)),
            other => Err(unsupported(&format!("the expression {other}"), e)),
        }
    }

    fn plain_args(&self, f: &ast::Function, node: &ast::Expr) -> Result<Vec<ast::Expr>> {
        match &f.args {
            ast::FunctionArguments::None => Ok(vec![]),
            ast::FunctionArguments::Subquery(_) => Err(unsupported("a subquery argument", node)),
            ast::FunctionArguments::List(list) => {
                if !list.clauses.is_empty() {
                    return Err(unsupported("function argument clauses", node));
                }
                list.args
                    .iter()
                    .map(|a| match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Ok(x.clone()),
                        _ => Err(unsupported("this function argument", node)),
                    })
                    .collect()
            }
        }
    }

    fn bind_aggregate(&self, f: &ast::Function, node: &ast::Expr) -> Result<AggCall> {
        let name = function_name(f);
        if f.filter.is_some() || f.over.is_some() || !f.within_group.is_empty() {
            return Err(unsupported(
                "FILTER / OVER / WITHIN GROUP on aggregates",
                node,
            ));
        }
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
            return Ok(AggCall {
                func: AggFunc::CountStar,
                arg: None,
                distinct: false,
                arg_type: A::Null,
                name: "count(*)".into(),
            });
        }
        let arg_ast = self.plain_args(f, node)?.remove(0);
        if contains_aggregate(&arg_ast) {
            return Err(plan_err("aggregate calls cannot be nested".into(), node));
        }
        let arg = self.bind(
            &arg_ast,
            &mut Scope::Row {
                clause: "an aggregate argument",
            },
        )?;
        let t = arg.data_type(&self.types());
        if distinct && func != AggFunc::Count && func != AggFunc::Min && func != AggFunc::Max {
            return Err(unsupported(
                &format!("{}(DISTINCT ...)", name.to_uppercase()),
                node,
            ));
        }
        let arg = match func {
            AggFunc::Sum | AggFunc::Avg => {
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
            _ => arg,
        };
        let arg_type = arg.data_type(&self.types());
        let shown = format!("{}({}{arg})", name, if distinct { "DISTINCT " } else { "" });
        Ok(AggCall {
            func,
            arg: Some(arg),
            distinct: distinct && func == AggFunc::Count,
            arg_type,
            name: shown,
        })
    }

    fn date_interval(
        &self,
        l: Expr,
        op: BinOp,
        iv: &ast::Interval,
        scope: &Scope,
        node: &ast::Expr,
    ) -> Result<Expr> {
        let t = self.ty(&l, scope);
        if t != A::Date32 {
            return Err(plan_err(
                format!("INTERVAL arithmetic needs a DATE, not {}", type_name(&t)),
                node,
            ));
        }
        let text = match iv.value.as_ref() {
            ast::Expr::Value(v) => v.value.clone().into_string(),
            _ => None,
        }
        .ok_or_else(|| unsupported("an INTERVAL that is not a quoted number", node))?;
        let n: i32 = text
            .trim()
            .parse()
            .map_err(|_| plan_err(format!("bad INTERVAL value {text:?}"), node))?;
        let n = if op == BinOp::Sub { -n } else { n };
        let e = match iv.leading_field {
            Some(ast::DateTimeField::Day | ast::DateTimeField::Days) => Expr::AddDays {
                expr: Box::new(l),
                days: n,
            },
            Some(ast::DateTimeField::Month | ast::DateTimeField::Months) => Expr::AddMonths {
                expr: Box::new(l),
                months: n,
            },
            Some(ast::DateTimeField::Year | ast::DateTimeField::Years) => Expr::AddMonths {
                expr: Box::new(l),
                months: n * 12,
            },
            _ => {
                return Err(unsupported(
                    "an INTERVAL unit other than DAY, MONTH or YEAR",
                    node,
                ));
            }
        };
        // Constant-fold literal dates.
        if let Expr::AddDays { expr, .. } | Expr::AddMonths { expr, .. } = &e
            && let Expr::Literal(_) = expr.as_ref()
        {
            let empty = super::exec::empty_input(1)?;
            if let super::expr::Value::Scalar(a) = e
                .eval(&empty)
                .map_err(|er| plan_err(er.to_string(), node))?
            {
                return Ok(lit(a));
            }
        }
        Ok(e)
    }

    fn binary(&self, op: BinOp, l: Expr, r: Expr, scope: &Scope, node: &ast::Expr) -> Result<Expr> {
        let lt = self.ty(&l, scope);
        let rt = self.ty(&r, scope);
        let mismatch = || {
            plan_err(
                format!(
                    "operator {} cannot be applied to {} and {}",
                    op_text(op),
                    type_name(&lt),
                    type_name(&rt)
                ),
                node,
            )
        };
        match op {
            BinOp::And | BinOp::Or => {
                for t in [&lt, &rt] {
                    if *t != A::Boolean && *t != A::Null {
                        return Err(mismatch());
                    }
                }
                Ok(Expr::Binary {
                    op,
                    left: Box::new(coerce(l, &lt, &A::Boolean)),
                    right: Box::new(coerce(r, &rt, &A::Boolean)),
                })
            }
            _ if op.is_arithmetic() => {
                if !(is_numeric(&lt) || lt == A::Null) || !(is_numeric(&rt) || rt == A::Null) {
                    return Err(mismatch());
                }
                let target = common_type(&[lt.clone(), rt.clone()]).ok_or_else(mismatch)?;
                let target = if target == A::Null { A::Int64 } else { target };
                let (l, r) = match target {
                    // Decimals keep their own scales: the kernel aligns them.
                    A::Decimal128(..) => (
                        coerce(l, &lt, &decimal_of(&lt)),
                        coerce(r, &rt, &decimal_of(&rt)),
                    ),
                    _ => (coerce(l, &lt, &target), coerce(r, &rt, &target)),
                };
                let e = Expr::Binary {
                    op,
                    left: Box::new(l),
                    right: Box::new(r),
                };
                let (a, b) = match &e {
                    Expr::Binary { left, right, .. } => {
                        (self.ty(left, scope), self.ty(right, scope))
                    }
                    _ => unreachable!(),
                };
                if arith_type(op, &a, &b).is_none() {
                    return Err(mismatch());
                }
                Ok(e)
            }
            _ => {
                // Comparison: text literals compared with dates become dates.
                let (l, lt, r, rt) = match (&l, &lt, &r, &rt) {
                    (_, A::Date32 | A::Timestamp(..), Expr::Literal(a), A::Utf8) => {
                        let c = cast(a, &lt).map_err(|er| plan_err(er.to_string(), node))?;
                        (l.clone(), lt.clone(), lit(c), lt.clone())
                    }
                    (Expr::Literal(a), A::Utf8, _, A::Date32 | A::Timestamp(..)) => {
                        let c = cast(a, &rt).map_err(|er| plan_err(er.to_string(), node))?;
                        (lit(c), rt.clone(), r.clone(), rt.clone())
                    }
                    _ => (l, lt, r, rt),
                };
                let target = common_type(&[lt.clone(), rt.clone()]).ok_or_else(|| {
                    plan_err(
                        format!("cannot compare {} with {}", type_name(&lt), type_name(&rt)),
                        node,
                    )
                })?;
                let target = if target == A::Null {
                    A::Boolean
                } else {
                    target
                };
                Ok(Expr::Binary {
                    op,
                    left: Box::new(coerce(l, &lt, &target)),
                    right: Box::new(coerce(r, &rt, &target)),
                })
            }
        }
    }
}

/// Evaluates an operator over two literals once, at plan time.
fn fold(e: Expr, node: &ast::Expr) -> Result<Expr> {
    let Expr::Binary { left, right, .. } = &e else {
        return Ok(e);
    };
    if !matches!(
        (left.as_ref(), right.as_ref()),
        (Expr::Literal(_), Expr::Literal(_))
    ) {
        return Ok(e);
    }
    let one = super::exec::empty_input(1)?;
    match e.eval(&one).map_err(|er| plan_err(er.to_string(), node))? {
        super::expr::Value::Scalar(a) => Ok(lit(a)),
        super::expr::Value::Array(_) => Ok(e),
    }
}

fn op_text(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::And => "AND",
        BinOp::Or => "OR",
        _ => "comparison",
    }
}

fn decimal_of(t: &A) -> A {
    match t {
        A::Decimal128(_, s) => A::Decimal128(38, *s),
        _ => A::Decimal128(38, 0),
    }
}

/// The type two values meet in: numbers widen (INT → BIGINT → DECIMAL →
/// DOUBLE; decimals to the larger scale), NULL takes the other side's type.
pub fn common_type(types: &[A]) -> Option<A> {
    let mut acc = A::Null;
    for t in types {
        acc = match (&acc, t) {
            (a, A::Null) => a.clone(),
            (A::Null, b) => b.clone(),
            (a, b) if a == b => a.clone(),
            (A::Float64, b) | (b, A::Float64) if is_numeric(b) => A::Float64,
            (A::Decimal128(_, s1), A::Decimal128(_, s2)) => A::Decimal128(38, (*s1).max(*s2)),
            (A::Decimal128(_, s), A::Int32 | A::Int64)
            | (A::Int32 | A::Int64, A::Decimal128(_, s)) => A::Decimal128(38, *s),
            (A::Int32 | A::Int64, A::Int32 | A::Int64) => A::Int64,
            (A::Date32, A::Timestamp(..)) | (A::Timestamp(..), A::Date32) => {
                A::Timestamp(TimeUnit::Microsecond, None)
            }
            _ => return None,
        };
    }
    Some(acc)
}

/// Wraps `e` (of type `from`) in a cast to `to` when they differ; literals
/// are cast at once.
fn coerce(e: Expr, from: &A, to: &A) -> Expr {
    if from == to {
        return e;
    }
    if let Expr::Literal(a) = &e
        && let Ok(c) = cast(a, to)
    {
        return lit(c);
    }
    Expr::Cast {
        expr: Box::new(e),
        to: to.clone(),
        site: None,
    }
}

/// The precision a DECIMAL type was written with.
fn decimal_precision(t: &ast::DataType) -> Option<u8> {
    match t {
        ast::DataType::Decimal(info) | ast::DataType::Numeric(info) => match info {
            ast::ExactNumberInfo::Precision(p) | ast::ExactNumberInfo::PrecisionAndScale(p, _) => {
                u8::try_from(*p).ok()
            }
            ast::ExactNumberInfo::None => None,
        },
        _ => None,
    }
}

fn check_cast(from: &A, to: &A, to_text: &str) -> std::result::Result<(), String> {
    let ok = from == to
        || *from == A::Null
        || *from == A::Utf8
        || *to == A::Utf8
        || (is_numeric(from) && is_numeric(to))
        || matches!(
            (from, to),
            (A::Date32, A::Timestamp(..))
                | (A::Timestamp(..), A::Date32)
                | (A::Boolean, A::Int32 | A::Int64)
        );
    if ok {
        Ok(())
    } else {
        Err(format!("cannot cast {} to {to_text}", type_name(from)))
    }
}

/// SQL type names in CAST and typed literals.
fn sql_type(t: &ast::DataType, node: &ast::Expr) -> Result<A> {
    use ast::DataType as D;
    Ok(match t {
        D::Boolean | D::Bool => A::Boolean,
        D::Int(_) | D::Integer(_) | D::Int4(_) => A::Int32,
        D::BigInt(_) | D::Int8(_) => A::Int64,
        D::Double(_) | D::DoublePrecision | D::Float(_) | D::Float8 | D::Real => A::Float64,
        D::Decimal(info) | D::Numeric(info) => match info {
            ast::ExactNumberInfo::None => A::Decimal128(38, 0),
            ast::ExactNumberInfo::Precision(p) => {
                if *p == 0 || *p > 38 {
                    return Err(plan_err(
                        format!("DECIMAL precision {p} is out of range"),
                        node,
                    ));
                }
                A::Decimal128(38, 0)
            }
            ast::ExactNumberInfo::PrecisionAndScale(p, s) => {
                if *p == 0 || *p > 38 || *s < 0 || *s as u64 > *p {
                    return Err(plan_err(format!("DECIMAL({p},{s}) is out of range"), node));
                }
                A::Decimal128(38, *s as i8)
            }
        },
        D::Date => A::Date32,
        D::Timestamp(_, _) | D::Datetime(_) => A::Timestamp(TimeUnit::Microsecond, None),
        D::Text
        | D::Varchar(_)
        | D::Char(_)
        | D::String(_)
        | D::CharVarying(_)
        | D::Character(_)
        | D::CharacterVarying(_) => A::Utf8,
        other => return Err(unsupported(&format!("the type {other}"), node)),
    })
}

fn literal(v: &ast::Value, node: &ast::Expr) -> Result<Expr> {
    Ok(lit(match v {
        ast::Value::Number(n, _) => {
            if let Ok(i) = n.parse::<i64>() {
                Arc::new(Int64Array::from(vec![i]))
            } else if !n.contains(['e', 'E']) {
                let scale = n.split_once('.').map_or(0, |(_, f)| f.len());
                if scale > 38 {
                    return Err(plan_err(
                        format!("numeric literal {n} has too many decimals"),
                        node,
                    ));
                }
                let digits: String = n.chars().filter(|c| c.is_ascii_digit()).collect();
                let v: i128 = digits
                    .parse()
                    .map_err(|_| plan_err(format!("numeric literal {n} is out of range"), node))?;
                Arc::new(
                    arrow_array::Decimal128Array::from(vec![v])
                        .with_precision_and_scale(38, scale as i8)
                        .map_err(|e| plan_err(e.to_string(), node))?,
                )
            } else {
                let f = value::parse_f64(n.as_bytes())
                    .map_err(|m| plan_err(format!("{n}: {m}"), node))?;
                Arc::new(Float64Array::from(vec![f]))
            }
        }
        ast::Value::SingleQuotedString(s) => Arc::new(StringArray::from(vec![s.clone()])),
        ast::Value::Boolean(b) => Arc::new(BooleanArray::from(vec![*b])),
        ast::Value::Null => new_null_array(&A::Null, 1),
        other => return Err(unsupported(&format!("the literal {other}"), node)),
    }))
}

/// Zone-map tests from the top-level AND-ed comparisons of a filter.
fn prune_of(filter: &Expr, table_types: &[A]) -> Vec<Prune> {
    let mut out = Vec::new();
    let mut stack = vec![filter];
    while let Some(e) = stack.pop() {
        let Expr::Binary { op, left, right } = e else {
            continue;
        };
        if *op == BinOp::And {
            stack.push(left);
            stack.push(right);
            continue;
        }
        if !op.is_comparison() || *op == BinOp::NotEq {
            continue;
        }
        let (col, litv, op) = match (
            column_of(left, table_types),
            right.as_ref(),
            column_of(right, table_types),
            left.as_ref(),
        ) {
            (Some(c), Expr::Literal(l), _, _) => (c, l, *op),
            (_, _, Some(c), Expr::Literal(l)) => (c, l, flip(*op)),
            _ => continue,
        };
        let Some(v) = stat_value(litv, &table_types[col]) else {
            continue;
        };
        let (lo, hi) = match op {
            BinOp::Eq => (Some(v), Some(v)),
            BinOp::Lt => (None, Some(v - 1)),
            BinOp::LtEq => (None, Some(v)),
            BinOp::Gt => (Some(v + 1), None),
            BinOp::GtEq => (Some(v), None),
            _ => continue,
        };
        out.push(Prune {
            column: col,
            lo,
            hi,
        });
    }
    out
}

fn flip(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::LtEq => BinOp::GtEq,
        BinOp::Gt => BinOp::Lt,
        BinOp::GtEq => BinOp::LtEq,
        o => o,
    }
}

/// The column under an expression that only widens it (no value change):
/// the column itself, or a cast that keeps every value exactly (INT to
/// BIGINT, a DECIMAL to a DECIMAL of at least its scale, DATE to
/// TIMESTAMP) — not a cast a query wrote that truncates
/// (`CAST(price AS BIGINT)`), which zone maps and the key index cannot
/// answer.
fn column_of(e: &Expr, types: &[A]) -> Option<usize> {
    match e {
        Expr::Column { index, .. } => Some(*index),
        // A CAST written with a DECIMAL precision may fail: not a widening.
        Expr::Cast { expr, to, site } if site.as_ref().is_none_or(|s| s.precision.is_none()) => {
            let Expr::Column { index, .. } = expr.as_ref() else {
                return None;
            };
            let exact = match (types.get(*index)?, to) {
                (A::Int32 | A::Int64, A::Int64) => true,
                (A::Int32 | A::Int64, A::Decimal128(p, s)) => {
                    *s >= 0 && (*p as i32 - *s as i32) >= 19
                }
                (A::Decimal64(p, s), A::Decimal128(tp, ts)) => {
                    ts >= s && (*tp as i32 - *ts as i32) >= (*p as i32 - *s as i32)
                }
                (A::Date32, A::Timestamp(..)) => true,
                (A::Timestamp(..), A::Timestamp(..)) => true,
                _ => false,
            };
            exact.then_some(*index)
        }
        _ => None,
    }
}

/// A literal in the zone map's integer domain of a stored column type, when
/// it converts exactly.
fn stat_value(l: &ArrayRef, stored: &A) -> Option<i128> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    if l.is_null(0) {
        return None;
    }
    let lt = l.data_type();
    match (stored, lt) {
        (A::Int32 | A::Int64, A::Int64) => Some(l.as_primitive::<Int64Type>().value(0) as i128),
        (A::Int32 | A::Int64, A::Decimal128(_, s)) => {
            let v = l.as_primitive::<Decimal128Type>().value(0);
            let d = 10i128.pow(*s as u32);
            (v % d == 0).then_some(v / d)
        }
        (A::Decimal64(_, cs), A::Decimal128(_, s)) => {
            let v = l.as_primitive::<Decimal128Type>().value(0);
            if s <= cs {
                v.checked_mul(10i128.pow((*cs - *s) as u32))
            } else {
                let d = 10i128.pow((*s - *cs) as u32);
                (v % d == 0).then_some(v / d)
            }
        }
        (A::Decimal64(_, cs), A::Int64) => {
            Some(l.as_primitive::<Int64Type>().value(0) as i128 * 10i128.pow(*cs as u32))
        }
        (A::Date32, A::Date32) => Some(l.as_primitive::<Date32Type>().value(0) as i128),
        (A::Timestamp(..), A::Timestamp(..)) => {
            Some(l.as_primitive::<TimestampMicrosecondType>().value(0) as i128)
        }
        _ => None,
    }
}

impl Plan {
    /// The plan as text (EXPLAIN), with the execution facts filled in.
    pub fn describe(&self, facts: &super::exec::ScanFacts) -> String {
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
            } => {
                let shown: Vec<String> = post.iter().map(|e| e.to_string()).collect();
                line(&mut s, depth, format!("Projection: {}", shown.join(", ")));
                depth += 1;
                if let Some(h) = having {
                    line(&mut s, depth, format!("Filter (HAVING): {h}"));
                    depth += 1;
                }
                let k: Vec<String> = keys.iter().map(|e| e.to_string()).collect();
                let a: Vec<String> = aggs.iter().map(|c| c.name.clone()).collect();
                line(
                    &mut s,
                    depth,
                    format!(
                        "Aggregate (Final): merge {} partial tables once",
                        facts.workers
                    ),
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
            Some(t) => line(
                &mut s,
                depth,
                format!(
                    "Scan {t}: {} of {} segments ({} pruned by zone maps), {} rows, morsels of {} rows from a lock-free counter, {} workers",
                    facts.segments_scanned,
                    facts.segments_total,
                    facts.segments_total - facts.segments_scanned,
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
