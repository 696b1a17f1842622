//! Planning set operations — `UNION [ALL]`, `INTERSECT [ALL]`, `EXCEPT
//! [ALL]` — and `SELECT DISTINCT`.
//!
//! For: planning each side as a query of its own, the output's names
//! (the left side's) and types (each column's common type, as
//! PostgreSQL's UNION resolves them), and the ORDER BY / LIMIT around
//! the whole, whose keys name output columns (by name or position; for
//! DISTINCT also a select item written again). Not for: running them
//! ([`crate::query::setop`]).

use std::sync::Arc;

use arrow_schema::DataType as A;
use sqlparser::ast::{self, Spanned};

use super::from::Ctes;
use super::{Body, Catalog, Input, Plan, limit_offset, order_by_list, plan_query_in, sort_key};
use crate::error::{Error, Result};
use crate::query::expr::{Expr, type_name};
use crate::query::sql::{Text, plan_err, unsupported};

/// What a set operation keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKind {
    Union,
    Intersect,
    Except,
    /// `SELECT DISTINCT`: the left side's distinct rows (no right side).
    Distinct,
}

/// A set operation over two planned queries (or DISTINCT over one).
#[derive(Debug, Clone)]
pub struct SetOp {
    pub kind: SetKind,
    /// `ALL`: duplicates count (UNION ALL keeps every row).
    pub all: bool,
    pub left: Plan,
    pub right: Option<Plan>,
    /// The output columns' types (each side's rows are cast to them).
    pub types: Vec<A>,
}

/// A query whose body is the set expression `body`, without the
/// clauses of the query around it.
fn side(q: &ast::Query, body: &ast::SetExpr) -> ast::Query {
    match body {
        ast::SetExpr::Query(inner) => (**inner).clone(),
        other => ast::Query {
            with: None,
            body: Box::new(other.clone()),
            order_by: None,
            limit_clause: None,
            fetch: None,
            ..q.clone()
        },
    }
}

/// Output columns' names and types of a plan (a bare NULL's NULL).
fn columns(p: &Plan) -> Vec<(String, A)> {
    let types = crate::query::exec::result_types(p);
    crate::query::exec::result_schema(p)
        .fields()
        .iter()
        .zip(types)
        .map(|(f, t)| (f.name().clone(), t))
        .collect()
}

/// Plans `left op right` (the query `q`'s body) with its ORDER BY/LIMIT.
pub(super) fn plan_set_operation(
    q: &ast::Query,
    catalog: &dyn Catalog,
    explain: bool,
    text: Text,
    ctes: &Ctes,
) -> Result<Plan> {
    let ast::SetExpr::SetOperation {
        op,
        set_quantifier,
        left,
        right,
    } = q.body.as_ref()
    else {
        return Err(Error::Internal("not a set operation".into()));
    };
    let kind = match op {
        ast::SetOperator::Union => SetKind::Union,
        ast::SetOperator::Intersect => SetKind::Intersect,
        ast::SetOperator::Except | ast::SetOperator::Minus => SetKind::Except,
    };
    let all = match set_quantifier {
        ast::SetQuantifier::All => true,
        ast::SetQuantifier::None | ast::SetQuantifier::Distinct => false,
        other => return Err(unsupported(&format!("{op} {other}"), q.body.as_ref())),
    };
    let l = plan_query_in(&side(q, left), catalog, false, text, ctes)?;
    let r = plan_query_in(&side(q, right), catalog, false, text, ctes)?;
    let (lc, rc) = (columns(&l), columns(&r));
    if lc.len() != rc.len() {
        return Err(plan_err(
            format!("each {op} query must have the same number of columns"),
            q.body.as_ref(),
        ));
    }
    let mut types = Vec::new();
    for ((ln, lt), (_, rt)) in lc.iter().zip(&rc) {
        let t = super::common_type(&[lt.clone(), rt.clone()]).ok_or_else(|| {
            plan_err(
                format!(
                    "{op} types {} and {} cannot be matched (column {ln:?})",
                    type_name(lt),
                    type_name(rt)
                ),
                q.body.as_ref(),
            )
        })?;
        types.push(if t == A::Null { A::Utf8 } else { t });
    }
    let names: Vec<String> = lc.into_iter().map(|c| c.0).collect();
    let set = SetOp {
        kind,
        all,
        left: l,
        right: Some(r),
        types,
    };
    around(q, set, names, &[], explain, text)
}

/// `SELECT DISTINCT …` planned as the select without DISTINCT (and
/// without ORDER BY / LIMIT), its distinct rows, then the order and limit.
/// A plain one — no aggregate, window or subquery in its items, no
/// GROUP BY or HAVING, ordered only by output columns — is planned as
/// the same select grouped by every item (`GROUP BY 1, …, n`): the hash
/// aggregate makes its rows distinct on every worker and spills past the
/// memory limit (a set operation's rows are held whole); NULLs group
/// as DISTINCT compares them. Not when an item is a DOUBLE (a grouping
/// answers `-0.0` as `0`, DISTINCT as the value it kept) or only NULLs
/// (DISTINCT types it TEXT, as PostgreSQL does); where that plan fails
/// (an INTERVAL item), the set operation's plan says why.
pub(super) fn plan_distinct(
    q: &ast::Query,
    select: &ast::Select,
    catalog: &dyn Catalog,
    explain: bool,
    text: Text,
    ctes: &Ctes,
) -> Result<Plan> {
    if let Some(ast::Distinct::On(_)) = &select.distinct {
        return Err(unsupported("SELECT DISTINCT ON", select));
    }
    if let Some(grouped) = distinct_as_grouping(q, select)
        && let Ok(p) = plan_query_in(&grouped, catalog, explain, text, ctes)
        && !columns(&p)
            .iter()
            .any(|c| matches!(c.1, A::Float64 | A::Null))
    {
        return Ok(p);
    }
    let mut plain = select.clone();
    plain.distinct = None;
    let inner = ast::Query {
        with: None,
        body: Box::new(ast::SetExpr::Select(Box::new(plain))),
        order_by: None,
        limit_clause: None,
        fetch: None,
        ..q.clone()
    };
    let l = plan_query_in(&inner, catalog, false, text, ctes)?;
    let cols = columns(&l);
    let types: Vec<A> = cols
        .iter()
        .map(|c| if c.1 == A::Null { A::Utf8 } else { c.1.clone() })
        .collect();
    let names = cols.into_iter().map(|c| c.0).collect();
    // A select item's text, for ORDER BY written as the item again.
    let items: Vec<String> = select
        .projection
        .iter()
        .map(|p| match p {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                e.to_string()
            }
            other => other.to_string(),
        })
        .collect();
    let set = SetOp {
        kind: SetKind::Distinct,
        all: false,
        left: l,
        right: None,
        types,
    };
    around(q, set, names, &items, explain, text)
}

/// `q`, whose body is `select` (a plain `SELECT DISTINCT`, see
/// [`plan_distinct`]), as the select grouped by every item; `None` when
/// it is not plain.
fn distinct_as_grouping(q: &ast::Query, select: &ast::Select) -> Option<ast::Query> {
    use crate::query::bind::{contains_aggregate, contains_window};
    let plain_group = matches!(&select.group_by,
        ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
    if select.distinct != Some(ast::Distinct::Distinct)
        || select.from.is_empty()
        || !plain_group
        || select.having.is_some()
        || select.qualify.is_some()
        || !select.named_window.is_empty()
    {
        return None;
    }
    let mut items = Vec::new();
    let mut aliases = Vec::new();
    for p in &select.projection {
        let e = match p {
            ast::SelectItem::UnnamedExpr(e) => e,
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                aliases.push(alias.value.to_ascii_lowercase());
                expr
            }
            _ => return None,
        };
        if contains_aggregate(e) || contains_window(e) || super::subquery::has_subquery(e) {
            return None;
        }
        items.push(e.to_string());
    }
    // ORDER BY only by output columns (by position, name or the item
    // written again), as DISTINCT allows: a grouping would allow more.
    if let Some(ob) = &q.order_by {
        let ast::OrderByKind::Expressions(list) = &ob.kind else {
            return None;
        };
        for o in list {
            let named = match &o.expr {
                ast::Expr::Value(v) => matches!(v.value, ast::Value::Number(..)),
                ast::Expr::Identifier(i) => aliases.contains(&i.value.to_ascii_lowercase()),
                _ => false,
            };
            if !named && !items.contains(&o.expr.to_string()) {
                return None;
            }
        }
    }
    let mut grouped = select.clone();
    grouped.distinct = None;
    grouped.group_by = ast::GroupByExpr::Expressions(
        (1..=items.len())
            .map(|i| ast::Expr::value(ast::Value::Number(i.to_string(), false)))
            .collect(),
        Vec::new(),
    );
    // The statement's CTEs are in scope already (`ctes`).
    Some(ast::Query {
        with: None,
        body: Box::new(ast::SetExpr::Select(Box::new(grouped))),
        ..q.clone()
    })
}

/// The plan over a set operation's rows: every column, in order, then
/// `q`'s ORDER BY (output names, positions, or `items` written again)
/// and LIMIT/OFFSET.
fn around(
    q: &ast::Query,
    set: SetOp,
    names: Vec<String>,
    items: &[String],
    explain: bool,
    text: Text,
) -> Result<Plan> {
    let n = names.len();
    let mut order = Vec::new();
    for ob in order_by_list(q, text)? {
        let column = match &ob.expr {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(p, _) => {
                    let pos: usize = p
                        .parse()
                        .map_err(|_| plan_err(format!("bad ORDER BY position {p}"), &ob.expr))?;
                    if pos == 0 || pos > n {
                        return Err(plan_err(
                            format!("ORDER BY position {pos} is not in the select list"),
                            &ob.expr,
                        ));
                    }
                    Some(pos - 1)
                }
                _ => None,
            },
            ast::Expr::Identifier(i) => names.iter().position(|x| x.eq_ignore_ascii_case(&i.value)),
            _ => None,
        };
        let column = column.or_else(|| {
            let shown = ob.expr.to_string();
            items.iter().position(|x| *x == shown)
        });
        let Some(column) = column else {
            return Err(Error::Plan(format!(
                "ORDER BY of a set operation or SELECT DISTINCT must name an output column (by name or position){}",
                crate::query::sql::at(ob.expr.span())
            )));
        };
        order.push(sort_key(column, ob)?);
    }
    let (limit, offset) = limit_offset(q, text)?;
    let table_types: Vec<A> = set.types.clone();
    let exprs: Vec<Expr> = names
        .iter()
        .enumerate()
        .map(|(i, name)| Expr::Column {
            index: i,
            name: name.clone(),
        })
        .collect();
    let depth = set
        .left
        .depth
        .max(set.right.as_ref().map_or(0, |r| r.depth));
    Ok(Plan {
        table: None,
        table_types,
        scan_columns: (0..n).collect(),
        filter: None,
        body: Body::Project(exprs),
        names,
        visible: n,
        order,
        limit,
        offset,
        prune: Vec::new(),
        key_lookup: None,
        explain,
        depth,
        input: Some(Arc::new(Input::Set(Box::new(set)))),
        init_plans: false,
        analyze: false,
        catalog: None,
    })
}
