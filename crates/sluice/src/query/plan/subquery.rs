//! Subqueries in WHERE, unnested into joins (after Neumann & Kemper,
//! "Unnesting Arbitrary Queries", for the shapes below): no subquery is
//! ever run once per outer row.
//!
//! For: the AND-ed conditions of a WHERE clause —
//! - `[NOT] EXISTS (SELECT … WHERE corr)`: a semi (anti) join with the
//!   subquery's rows, its conditions on the outer query the join's
//!   condition (equalities its keys, the rest checked on each pair);
//! - `x IN (SELECT y …)`: a semi join on `x = y` (and the correlation);
//!   `x NOT IN (SELECT y …)`: a NULL-aware anti join (a NULL among the
//!   `y` makes it true for no row; a NULL `x` is true only against no
//!   rows at all);
//! - `x op (SELECT agg … WHERE inner = outer …)`, a correlated scalar
//!   subquery: the subquery grouped by the inner sides of its equalities
//!   with the outer query, joined on them; a row without a group would
//!   compare with NULL, which no comparison keeps, so an inner join is
//!   exact; a bare `count(…)` is 0 there, not NULL: a LEFT join, the
//!   missing count read as 0 (a count inside an expression: refused).
//!
//! An uncorrelated scalar subquery anywhere is bound as
//! [`crate::query::expr::Expr::Subquery`] and run once before its query.
//! Other correlated shapes are refused by name. Not for: running the
//! joins ([`crate::query::join`]).

use std::ops::ControlFlow;

use sqlparser::ast::{self, Spanned};

use super::from::{Ctes, Item, JoinKind, query_item, resolve_all};
use super::{Catalog, plan_query_in};
use crate::error::{Error, Result};
use crate::query::sql::{Text, plan_err, unsupported};

/// The FROM items a query's names can reach: per item, its name and its
/// columns' names.
pub(super) struct Scope {
    pub items: Vec<(String, Vec<String>)>,
    /// Per item, a stored table's FROM item as written (`None`: a
    /// subquery, or not known).
    pub factors: Vec<Option<ast::TableFactor>>,
}

impl Scope {
    fn has_column(&self, c: &str) -> bool {
        self.items
            .iter()
            .any(|(_, cols)| cols.iter().any(|x| x.eq_ignore_ascii_case(c)))
    }
    fn has_item(&self, q: &str) -> bool {
        self.items.iter().any(|(n, _)| n.eq_ignore_ascii_case(q))
    }

    /// The one item an identifier names (`None`: not an identifier, or
    /// not exactly one item).
    fn item_of(&self, e: &ast::Expr) -> Option<usize> {
        match e {
            ast::Expr::Identifier(i) => {
                let found: Vec<usize> = (0..self.items.len())
                    .filter(|&k| {
                        self.items[k]
                            .1
                            .iter()
                            .any(|c| c.eq_ignore_ascii_case(&i.value))
                    })
                    .collect();
                (found.len() == 1).then(|| found[0])
            }
            ast::Expr::CompoundIdentifier(parts) if parts.len() == 2 => self
                .items
                .iter()
                .position(|(n, _)| n.eq_ignore_ascii_case(&parts[0].value)),
            _ => None,
        }
    }

    /// The items the identifiers of `e` name, a bit each (names no item
    /// has belong to a subquery inside `e`, and are its own).
    fn items_read(&self, e: &ast::Expr) -> u64 {
        let mut items = 0u64;
        let _ = ast::visit_expressions(e, |x| {
            if matches!(
                x,
                ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_)
            ) && let Some(k) = self.item_of(x)
            {
                items |= 1 << k.min(63);
            }
            ControlFlow::<()>::Continue(())
        });
        items
    }

    /// The one item the identifiers of `e` name, if they name one.
    fn only_item(&self, e: &ast::Expr) -> Option<usize> {
        let items = self.items_read(e);
        (items.count_ones() == 1).then(|| items.trailing_zeros() as usize)
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Side {
    Inner,
    Outer,
    Neither,
}

/// Which query an identifier belongs to (the innermost wins).
fn side(e: &ast::Expr, inner: &Scope, outer: &Scope) -> Option<Side> {
    match e {
        ast::Expr::Identifier(i) => Some(if inner.has_column(&i.value) {
            Side::Inner
        } else if outer.has_column(&i.value) {
            Side::Outer
        } else {
            Side::Neither
        }),
        ast::Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            Some(if inner.has_item(&parts[0].value) {
                Side::Inner
            } else if outer.has_item(&parts[0].value) {
                Side::Outer
            } else {
                Side::Neither
            })
        }
        _ => None,
    }
}

/// Whether `e` reads the inner and the outer query. Names inside a
/// subquery of `e` are that subquery's to resolve (its own FROM comes
/// first), so they are not looked at.
fn reads(e: &ast::Expr, inner: &Scope, outer: &Scope) -> (bool, bool) {
    struct Reads<'s> {
        inner: &'s Scope,
        outer: &'s Scope,
        depth: usize,
        i: bool,
        o: bool,
    }
    impl ast::Visitor for Reads<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &ast::Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &ast::Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, x: &ast::Expr) -> ControlFlow<()> {
            if self.depth == 0 {
                match side(x, self.inner, self.outer) {
                    Some(Side::Inner) => self.i = true,
                    Some(Side::Outer) => self.o = true,
                    _ => {}
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut v = Reads {
        inner,
        outer,
        depth: 0,
        i: false,
        o: false,
    };
    let _ = ast::Visit::visit(e, &mut v);
    (v.i, v.o)
}

pub(super) fn has_subquery(e: &ast::Expr) -> bool {
    ast::visit_expressions(e, |x| match x {
        ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// Whether a WHERE clause holds a subquery anywhere.
pub(super) fn where_has_subquery(select: &ast::Select) -> bool {
    select.selection.as_ref().is_some_and(has_subquery)
}

/// Splits a condition into its AND-ed parts (through parentheses).
pub(super) fn conjuncts(e: &ast::Expr, out: &mut Vec<ast::Expr>) {
    match e {
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        ast::Expr::Nested(inner)
            if matches!(
                inner.as_ref(),
                ast::Expr::BinaryOp {
                    op: ast::BinaryOperator::And,
                    ..
                }
            ) =>
        {
            conjuncts(inner, out)
        }
        // `(a, b) = (c, d)`: `a = c AND b = d` (the same three values).
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::Eq,
            right,
        } if matches!((left.as_ref(), right.as_ref()),
            (ast::Expr::Tuple(l), ast::Expr::Tuple(r)) if l.len() == r.len() && !l.is_empty()) =>
        {
            if let (ast::Expr::Tuple(l), ast::Expr::Tuple(r)) = (left.as_ref(), right.as_ref()) {
                for (a, b) in l.iter().zip(r) {
                    conjuncts(
                        &ast::Expr::BinaryOp {
                            left: Box::new(a.clone()),
                            op: ast::BinaryOperator::Eq,
                            right: Box::new(b.clone()),
                        },
                        out,
                    );
                }
            }
        }
        other => out.push(other.clone()),
    }
}

/// An OR's conjuncts that every branch holds (compared as written),
/// taken out: `(c AND x) OR (c AND y)` → `c`, `x OR y` (`c` alone when a
/// branch is `c` alone). Anything else: itself.
fn factor_or_common(e: &ast::Expr) -> Vec<ast::Expr> {
    fn branches(e: &ast::Expr, out: &mut Vec<ast::Expr>) {
        match e {
            ast::Expr::BinaryOp {
                left,
                op: ast::BinaryOperator::Or,
                right,
            } => {
                branches(left, out);
                branches(right, out);
            }
            ast::Expr::Nested(inner) => branches(inner, out),
            other => out.push(other.clone()),
        }
    }
    let mut ors = Vec::new();
    branches(e, &mut ors);
    if ors.len() < 2 {
        return vec![e.clone()];
    }
    let parts: Vec<Vec<ast::Expr>> = ors
        .iter()
        .map(|b| {
            let mut v = Vec::new();
            conjuncts(b, &mut v);
            v
        })
        .collect();
    let text = |x: &ast::Expr| x.to_string();
    let common: Vec<ast::Expr> = parts[0]
        .iter()
        .filter(|c| {
            parts[1..]
                .iter()
                .all(|p| p.iter().any(|x| text(x) == text(c)))
        })
        .cloned()
        .collect();
    if common.is_empty() {
        return vec![e.clone()];
    }
    let is_common = |x: &ast::Expr| common.iter().any(|c| text(c) == text(x));
    let rests: Vec<Option<ast::Expr>> = parts
        .into_iter()
        .map(|p| and_all(p.into_iter().filter(|x| !is_common(x)).collect()))
        .collect();
    let mut out = common.clone();
    // A branch that is the common part alone makes the OR true.
    if rests.iter().all(Option::is_some) {
        let or = rests
            .into_iter()
            .flatten()
            .map(|r| ast::Expr::Nested(Box::new(r)))
            .reduce(|a, b| ast::Expr::BinaryOp {
                left: Box::new(a),
                op: ast::BinaryOperator::Or,
                right: Box::new(b),
            });
        out.extend(or);
    }
    out
}

fn and_all(list: Vec<ast::Expr>) -> Option<ast::Expr> {
    list.into_iter().reduce(|a, b| ast::Expr::BinaryOp {
        left: Box::new(a),
        op: ast::BinaryOperator::And,
        right: Box::new(b),
    })
}

fn qualified(item: &str, col: &str) -> ast::Expr {
    ast::Expr::CompoundIdentifier(vec![ast::Ident::new(item), ast::Ident::new(col)])
}

/// A semi or anti join the WHERE clause asks for.
pub(super) struct SemiStep {
    pub kind: JoinKind,
    /// The subquery's FROM item (an index into [`Unnested::items`]).
    pub item: usize,
    /// Its condition, over the outer items and this one.
    pub on: Vec<ast::Expr>,
}

/// A WHERE clause with its subqueries unnested.
pub(super) struct Unnested {
    /// FROM items the subqueries add (named `__sqN`; their columns are
    /// reached only by those names).
    pub items: Vec<Item>,
    pub semi: Vec<SemiStep>,
    /// The WHERE clause's conditions, scalar subqueries that read the
    /// outer query replaced by their item's column.
    pub conds: Vec<ast::Expr>,
}

/// An EXISTS subquery without what cannot change whether it has rows:
/// its ORDER BY, and a LIMIT of at least one row without OFFSET
/// (`EXISTS (SELECT 1 … LIMIT 1)`, as ORMs write it).
fn for_exists(q: &ast::Query) -> ast::Query {
    let mut q = q.clone();
    let keeps_a_row = match &q.limit_clause {
        None => true,
        Some(ast::LimitClause::LimitOffset {
            limit,
            offset: None,
            limit_by,
        }) if limit_by.is_empty() => match limit {
            None => true,
            Some(ast::Expr::Value(v)) => match &v.value {
                ast::Value::Number(n, _) => n.parse::<u64>().is_ok_and(|n| n >= 1),
                _ => false,
            },
            Some(_) => false,
        },
        Some(_) => false,
    };
    if keeps_a_row && q.fetch.is_none() {
        q.limit_clause = None;
        q.order_by = None;
    }
    q
}

/// The plain SELECT a subquery is, or `None` (a set operation, VALUES…).
fn plain_select(q: &ast::Query) -> Option<&ast::Select> {
    match q.body.as_ref() {
        ast::SetExpr::Select(s)
            if q.with.is_none()
                && q.order_by.is_none()
                && q.limit_clause.is_none()
                && q.fetch.is_none() =>
        {
            Some(s)
        }
        _ => None,
    }
}

fn is_grouped(s: &ast::Select) -> bool {
    let grouped = match &s.group_by {
        ast::GroupByExpr::Expressions(e, _) => !e.is_empty(),
        ast::GroupByExpr::All(_) => true,
    };
    grouped
        || s.having.is_some()
        || s.distinct.is_some()
        || s.projection.iter().any(|p| match p {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                super::super::bind::contains_aggregate(e)
            }
            _ => false,
        })
}

/// Whether `e` is NULL when every aggregate in it is (over no rows):
/// `Some(true)` for aggregates joined by arithmetic, casts and signs
/// with constants; `Some(false)` for a constant; `None` when it cannot
/// tell (anything else: it may be non-NULL).
fn null_on_empty(e: &ast::Expr) -> Option<bool> {
    match e {
        ast::Expr::Function(f) => {
            let name = f.name.to_string().to_ascii_lowercase();
            matches!(name.as_str(), "sum" | "avg" | "min" | "max").then_some(true)
        }
        ast::Expr::Value(_) | ast::Expr::TypedString(_) => Some(false),
        ast::Expr::Nested(x) | ast::Expr::Cast { expr: x, .. } => null_on_empty(x),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus | ast::UnaryOperator::Plus,
            expr,
        } => null_on_empty(expr),
        ast::Expr::BinaryOp {
            left,
            op:
                ast::BinaryOperator::Plus
                | ast::BinaryOperator::Minus
                | ast::BinaryOperator::Multiply
                | ast::BinaryOperator::Divide,
            right,
        } => {
            let (l, r) = (null_on_empty(left)?, null_on_empty(right)?);
            Some(l || r)
        }
        _ => None,
    }
}

/// The one expression a subquery selects.
fn only_item<'q>(s: &'q ast::Select, node: &impl Spanned) -> Result<&'q ast::Expr> {
    match s.projection.as_slice() {
        [ast::SelectItem::UnnamedExpr(e)] | [ast::SelectItem::ExprWithAlias { expr: e, .. }] => {
            Ok(e)
        }
        _ => Err(plan_err("subquery has too many columns".into(), node)),
    }
}

struct Ctx<'a> {
    catalog: &'a dyn Catalog,
    ctes: &'a Ctes,
    text: Text<'a>,
    outer: &'a Scope,
    /// The outer WHERE clause's conditions.
    outer_conds: Vec<ast::Expr>,
    out: Unnested,
}

impl Ctx<'_> {
    fn name(&self) -> String {
        format!("__sq{}", self.out.items.len() + 1)
    }

    fn scope_of(&self, s: &ast::Select) -> Result<Scope> {
        let items = resolve_all(&s.from, self.catalog, self.ctes, self.text)?;
        Ok(Scope {
            factors: vec![None; items.len()],
            items: items
                .into_iter()
                .map(|(n, cols)| (n, cols.into_iter().map(|c| c.0).collect()))
                .collect(),
        })
    }

    /// A subquery's WHERE conditions: those that read the outer query,
    /// and the others (its own, `scope` its FROM items).
    fn correlated(&self, s: &ast::Select, scope: &Scope) -> (Vec<ast::Expr>, Vec<ast::Expr>) {
        let mut all = Vec::new();
        if let Some(w) = &s.selection {
            conjuncts(w, &mut all);
        }
        // `(a = o.a AND x) OR (a = o.a AND y)`: `a = o.a AND (x OR y)`,
        // so the correlation is an equality of its own (TPC-DS q41).
        let all: Vec<ast::Expr> = all.iter().flat_map(factor_or_common).collect();
        all.into_iter().partition(|c| reads(c, scope, self.outer).1)
    }

    /// Adds a FROM item planned from `q`, its columns named c0, c1, ….
    fn add(&mut self, q: &ast::Query, node: &impl Spanned) -> Result<(usize, String)> {
        let name = self.name();
        let plan = plan_query_in(q, self.catalog, false, self.text, self.ctes)?;
        let mut item = query_item(name.clone(), plan, &[], node)?;
        for (i, c) in item.columns.iter_mut().enumerate() {
            c.0 = format!("c{i}");
        }
        self.out.items.push(item);
        Ok((self.out.items.len() - 1, name))
    }

    /// `c` with each `EXISTS (q)` under its AND, OR and NOT replaced by
    /// the column of a mark join with `q` (true where the row has a
    /// match): `EXISTS (a) OR EXISTS (b)` keeps every row through two
    /// mark joins and tests the two columns (TPC-DS q10, q35).
    fn marks(&mut self, c: &ast::Expr) -> Result<ast::Expr> {
        Ok(match c {
            ast::Expr::Exists { subquery, negated } => {
                let step = self.out.semi.len();
                self.semi(&for_exists(subquery), None, false, c)?;
                let st = self
                    .out
                    .semi
                    .get_mut(step)
                    .ok_or_else(|| Error::Internal("mark join: no step".into()))?;
                st.kind = JoinKind::Mark;
                let item = &mut self.out.items[st.item];
                item.mark = true;
                item.columns
                    .push(("?mark".into(), arrow_schema::DataType::Boolean));
                let col = qualified(&item.name, "?mark");
                if *negated {
                    ast::Expr::UnaryOp {
                        op: ast::UnaryOperator::Not,
                        expr: Box::new(col),
                    }
                } else {
                    col
                }
            }
            ast::Expr::BinaryOp { left, op, right }
                if matches!(op, ast::BinaryOperator::And | ast::BinaryOperator::Or) =>
            {
                ast::Expr::BinaryOp {
                    left: Box::new(self.marks(left)?),
                    op: op.clone(),
                    right: Box::new(self.marks(right)?),
                }
            }
            ast::Expr::UnaryOp {
                op: ast::UnaryOperator::Not,
                expr,
            } => ast::Expr::UnaryOp {
                op: ast::UnaryOperator::Not,
                expr: Box::new(self.marks(expr)?),
            },
            ast::Expr::Nested(inner) => ast::Expr::Nested(Box::new(self.marks(inner)?)),
            other => other.clone(),
        })
    }

    /// `[NOT] EXISTS (q)` or `x [NOT] IN (q)`.
    fn semi(
        &mut self,
        q: &ast::Query,
        x: Option<&ast::Expr>,
        negated: bool,
        node: &ast::Expr,
    ) -> Result<()> {
        let kind = match (negated, x.is_some()) {
            (false, _) => JoinKind::Semi,
            (true, false) => JoinKind::Anti,
            (true, true) => JoinKind::AntiNull,
        };
        let select = plain_select(q);
        // The subquery's conditions that read the outer query.
        let (scope, corr, local) = match select {
            Some(s) => {
                let scope = self.scope_of(s)?;
                let (corr, local) = self.correlated(s, &scope);
                (Some(scope), corr, local)
            }
            None => (None, Vec::new(), Vec::new()),
        };
        let item_reads_outer = select.is_some_and(|s| {
            s.projection.iter().any(|p| match p {
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                    scope.as_ref().is_some_and(|sc| reads(e, sc, self.outer).1)
                }
                _ => false,
            })
        });
        if corr.is_empty() && !item_reads_outer {
            // Uncorrelated: the subquery as it is.
            let (i, name) = self.add(q, node)?;
            let mut on = Vec::new();
            if let Some(x) = x {
                if self.out.items[i].columns.len() != 1 {
                    return Err(plan_err("subquery has too many columns".into(), node));
                }
                on.push(ast::Expr::BinaryOp {
                    left: Box::new(x.clone()),
                    op: ast::BinaryOperator::Eq,
                    right: Box::new(qualified(&name, "c0")),
                });
            }
            self.out.semi.push(SemiStep { kind, item: i, on });
            return Ok(());
        }
        let (Some(s), Some(scope)) = (select, scope) else {
            return Err(unsupported(
                "a correlated subquery that is not a plain SELECT",
                node,
            ));
        };
        if item_reads_outer {
            return Err(unsupported(
                "an EXISTS / IN subquery whose select list reads the outer query",
                node,
            ));
        }
        if is_grouped(s) {
            return Err(unsupported(
                "a correlated EXISTS / IN subquery with GROUP BY, aggregates or DISTINCT",
                node,
            ));
        }
        if kind == JoinKind::AntiNull {
            return Err(unsupported(
                "a correlated NOT IN subquery (write it as NOT EXISTS)",
                node,
            ));
        }
        if corr.iter().any(has_subquery) {
            return Err(unsupported(
                "a subquery inside a correlated condition",
                node,
            ));
        }
        // The inner columns the correlated conditions read become the
        // item's columns; the conditions read them by the item's name.
        let name = self.name();
        let mut cols: Vec<ast::Expr> = Vec::new();
        let mut on = Vec::new();
        for mut c in corr {
            let _ = ast::visit_expressions_mut(&mut c, |e| {
                if side(e, &scope, self.outer) == Some(Side::Inner) {
                    let shown = e.to_string();
                    let k = match cols.iter().position(|x| x.to_string() == shown) {
                        Some(k) => k,
                        None => {
                            cols.push(e.clone());
                            cols.len() - 1
                        }
                    };
                    *e = qualified(&name, &format!("c{k}"));
                }
                ControlFlow::<()>::Continue(())
            });
            on.push(c);
        }
        if let Some(x) = x {
            cols.push(only_item(s, node)?.clone());
            on.push(ast::Expr::BinaryOp {
                left: Box::new(x.clone()),
                op: ast::BinaryOperator::Eq,
                right: Box::new(qualified(&name, &format!("c{}", cols.len() - 1))),
            });
        }
        let mut inner = s.clone();
        inner.selection = and_all(local);
        inner.projection = cols
            .into_iter()
            .enumerate()
            .map(|(k, e)| ast::SelectItem::ExprWithAlias {
                expr: e,
                alias: ast::Ident::new(format!("c{k}")),
            })
            .collect();
        if inner.projection.is_empty() {
            inner.projection = vec![ast::SelectItem::UnnamedExpr(ast::Expr::value(
                ast::Value::Number("1".into(), false),
            ))];
        }
        let leaf = ast::Query {
            body: Box::new(ast::SetExpr::Select(Box::new(inner))),
            ..q.clone()
        };
        let (i, _) = self.add(&leaf, node)?;
        self.out.semi.push(SemiStep { kind, item: i, on });
        Ok(())
    }

    /// Conditions that keep the grouped subquery to the keys the outer
    /// query can ask for (a "magic set", as DuckDB's delim join passes
    /// the outer keys in): for a correlation `inner = x.col` where the
    /// outer query filters the stored table `x` on its own, `inner IN
    /// (SELECT x.col FROM x WHERE those filters)`. The groups it drops
    /// are of keys no outer row has; TPC-H Q17 then groups the lineitem
    /// rows of 200 parts, not of 200,000.
    fn magic(
        &self,
        keys: &[(ast::Expr, ast::Expr)],
        q: &ast::Query,
        s: &ast::Select,
    ) -> Vec<ast::Expr> {
        let mut out = Vec::new();
        for (inner, outer) in keys {
            let Some(x) = self.outer.only_item(outer) else {
                continue;
            };
            let Some(Some(factor)) = self.outer.factors.get(x) else {
                continue;
            };
            // The outer table's own filters: conditions without
            // subqueries, and `IN (SELECT …)` of a subquery that reads
            // none of the outer items (Q20's parts named forest%).
            let own = |c: &ast::Expr| match c {
                ast::Expr::InSubquery {
                    expr,
                    subquery,
                    negated: false,
                } => {
                    !has_subquery(expr)
                        && self.outer.only_item(expr) == Some(x)
                        && self
                            .outer
                            .items_read(&ast::Expr::Subquery(subquery.clone()))
                            == 0
                }
                c => !has_subquery(c) && self.outer.only_item(c) == Some(x),
            };
            let filters: Vec<ast::Expr> = self
                .outer_conds
                .iter()
                .filter(|c| own(c))
                .cloned()
                .collect();
            if filters.is_empty() {
                continue;
            }
            // The subquery's own SELECT and query, a plain SELECT without
            // grouping (checked), as the shape to fill in.
            let mut select = s.clone();
            select.projection = vec![ast::SelectItem::UnnamedExpr(outer.clone())];
            select.from = vec![ast::TableWithJoins {
                relation: factor.clone(),
                joins: Vec::new(),
            }];
            select.selection = and_all(filters);
            out.push(ast::Expr::InSubquery {
                expr: Box::new(inner.clone()),
                subquery: Box::new(ast::Query {
                    body: Box::new(ast::SetExpr::Select(Box::new(select))),
                    ..q.clone()
                }),
                negated: false,
            });
        }
        out
    }

    /// `x op (SELECT agg … WHERE inner = outer …)`: `Some` rewritten
    /// condition when the subquery reads the outer query.
    fn scalar(&mut self, c: &ast::Expr) -> Result<Option<ast::Expr>> {
        let ast::Expr::BinaryOp { left, op, right } = c else {
            return Ok(None);
        };
        if !matches!(
            op,
            ast::BinaryOperator::Eq
                | ast::BinaryOperator::NotEq
                | ast::BinaryOperator::Lt
                | ast::BinaryOperator::LtEq
                | ast::BinaryOperator::Gt
                | ast::BinaryOperator::GtEq
        ) {
            return Ok(None);
        }
        // The subquery: one side, or inside one side's arithmetic (`1.2 *
        // (SELECT avg …)`, TPC-DS q06), where a NULL value makes the
        // whole side NULL, as a missing group must.
        let (q, on_left) = match (strict_subquery(left), strict_subquery(right)) {
            (Some(q), None) if !has_subquery(right) => (q, true),
            (None, Some(q)) if !has_subquery(left) => (q, false),
            _ => return Ok(None),
        };
        let Some(s) = plain_select(&q) else {
            return Ok(None);
        };
        let scope = self.scope_of(s)?;
        let (corr, local) = self.correlated(s, &scope);
        let value = only_item(s, c)?;
        if corr.is_empty() && !reads(value, &scope, self.outer).1 {
            return Ok(None); // uncorrelated: an init plan
        }
        let grouped_by = match &s.group_by {
            ast::GroupByExpr::Expressions(e, _) => !e.is_empty(),
            ast::GroupByExpr::All(_) => true,
        };
        if grouped_by || s.having.is_some() || s.distinct.is_some() {
            return Err(unsupported(
                "a correlated scalar subquery with GROUP BY, HAVING or DISTINCT",
                c,
            ));
        }
        if !super::super::bind::contains_aggregate(value) || reads(value, &scope, self.outer).1 {
            return Err(unsupported(
                "a correlated scalar subquery that is not one aggregate of the inner rows",
                c,
            ));
        }
        let counts = ast::visit_expressions(value, |e| match e {
            ast::Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("count") => {
                ControlFlow::Break(())
            }
            _ => ControlFlow::Continue(()),
        })
        .is_break();
        // `count(…)` alone is 0 over no rows: a LEFT join, the missing
        // count read as 0. Other values with a count in them are refused.
        let bare_count = counts && is_bare_count(value);
        if counts && !bare_count {
            return Err(unsupported(
                "a correlated scalar subquery with count() inside an expression (its empty groups are 0, not NULL; count() alone is supported)",
                c,
            ));
        }
        // A key without inner rows must make the value NULL (the join
        // then drops the row, as the comparison with NULL would):
        // aggregates combined by arithmetic and casts only.
        if !bare_count && null_on_empty(value) != Some(true) {
            return Err(unsupported(
                "a correlated scalar subquery whose value over no rows is not NULL (COALESCE, CASE, functions around its aggregates)",
                c,
            ));
        }
        // Each correlated condition: inner side = outer side.
        let mut keys: Vec<(ast::Expr, ast::Expr)> = Vec::new();
        for x in &corr {
            let pair = match x {
                ast::Expr::BinaryOp {
                    left: a,
                    op: ast::BinaryOperator::Eq,
                    right: b,
                } => {
                    let (ra, rb) = (reads(a, &scope, self.outer), reads(b, &scope, self.outer));
                    match (ra, rb) {
                        ((_, false), (false, true)) => Some(((**a).clone(), (**b).clone())),
                        ((false, true), (_, false)) => Some(((**b).clone(), (**a).clone())),
                        _ => None,
                    }
                }
                _ => None,
            };
            match pair {
                Some(p) if !has_subquery(&p.0) && !has_subquery(&p.1) => keys.push(p),
                _ => {
                    return Err(unsupported(
                        "a correlated scalar subquery whose condition on the outer query is not an equality",
                        x,
                    ));
                }
            }
        }
        let name = self.name();
        let mut inner = s.clone();
        let mut local = local;
        local.extend(self.magic(&keys, &q, s));
        inner.selection = and_all(local);
        let mut projection = key_items(&keys);
        projection.push(ast::SelectItem::ExprWithAlias {
            expr: value.clone(),
            alias: ast::Ident::new(format!("c{}", keys.len())),
        });
        inner.projection = projection;
        inner.group_by =
            ast::GroupByExpr::Expressions(keys.iter().map(|(i, _)| keyed(i)).collect(), Vec::new());
        let leaf = ast::Query {
            body: Box::new(ast::SetExpr::Select(Box::new(inner))),
            ..q.clone()
        };
        let (item, _) = self.add(&leaf, c)?;
        let equalities = key_equalities(&keys, &name);
        let mut v = qualified(&name, &format!("c{}", keys.len()));
        if bare_count {
            // Every outer row stays; one without inner rows counts 0.
            self.out.semi.push(SemiStep {
                kind: JoinKind::Left,
                item,
                on: equalities,
            });
            v = call(
                "coalesce",
                vec![v, ast::Expr::value(ast::Value::Number("0".into(), false))],
            );
        } else {
            self.out.conds.extend(equalities);
        }
        let (l, r) = if on_left {
            (with_subquery_as(left, &v), (**right).clone())
        } else {
            ((**left).clone(), with_subquery_as(right, &v))
        };
        Ok(Some(ast::Expr::BinaryOp {
            left: Box::new(l),
            op: op.clone(),
            right: Box::new(r),
        }))
    }
}

/// Unnests the subqueries of a WHERE clause over the FROM items `outer`.
pub(super) fn unnest(
    selection: Option<&ast::Expr>,
    outer: &Scope,
    catalog: &dyn Catalog,
    ctes: &Ctes,
    text: Text,
) -> Result<Unnested> {
    let mut all = Vec::new();
    if let Some(w) = selection {
        conjuncts(w, &mut all);
    }
    let mut cx = Ctx {
        catalog,
        ctes,
        text,
        outer,
        outer_conds: all.clone(),
        out: Unnested {
            items: Vec::new(),
            semi: Vec::new(),
            conds: Vec::new(),
        },
    };
    for c in all {
        match &c {
            ast::Expr::Exists { subquery, negated } => {
                cx.semi(&for_exists(subquery), None, *negated, &c)?
            }
            ast::Expr::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                if has_subquery(expr) {
                    return Err(unsupported("a subquery on the left of IN (SELECT …)", &c));
                }
                cx.semi(subquery, Some(expr), *negated, &c)?
            }
            _ if has_exists(&c) => {
                let marked = cx.marks(&c)?;
                cx.out.conds.push(marked);
            }
            _ => match cx.scalar(&c)? {
                Some(rewritten) => cx.out.conds.push(rewritten),
                None => cx.out.conds.push(c),
            },
        }
    }
    if cx.out.items.len() > super::from::MAX_FROM_ITEMS {
        return Err(Error::Unsupported(format!(
            "more than {} subqueries in one WHERE clause",
            super::from::MAX_FROM_ITEMS
        )));
    }
    Ok(cx.out)
}

/// The one scalar subquery of `e` reached through parentheses, casts,
/// unary minus and arithmetic (operators whose NULL operand makes them
/// NULL); `None` when there is none or more than one.
fn strict_subquery(e: &ast::Expr) -> Option<ast::Query> {
    match e {
        ast::Expr::Subquery(q) => Some((**q).clone()),
        ast::Expr::Nested(n) => strict_subquery(n),
        ast::Expr::Cast { expr, .. } => strict_subquery(expr),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus | ast::UnaryOperator::Plus,
            expr,
        } => strict_subquery(expr),
        ast::Expr::BinaryOp {
            left,
            op:
                ast::BinaryOperator::Plus
                | ast::BinaryOperator::Minus
                | ast::BinaryOperator::Multiply
                | ast::BinaryOperator::Divide
                | ast::BinaryOperator::Modulo,
            right,
        } => match (strict_subquery(left), strict_subquery(right)) {
            (Some(q), None) if !has_subquery(right) => Some(q),
            (None, Some(q)) if !has_subquery(left) => Some(q),
            _ => None,
        },
        _ => None,
    }
}

/// `e` with the subquery [`strict_subquery`] finds replaced by `v`.
fn with_subquery_as(e: &ast::Expr, v: &ast::Expr) -> ast::Expr {
    let mut out = e.clone();
    replace_strict(&mut out, v);
    out
}

fn replace_strict(e: &mut ast::Expr, v: &ast::Expr) -> bool {
    match e {
        ast::Expr::Subquery(_) => {
            *e = v.clone();
            true
        }
        ast::Expr::Nested(n) => replace_strict(n, v),
        ast::Expr::Cast { expr, .. } | ast::Expr::UnaryOp { expr, .. } => replace_strict(expr, v),
        ast::Expr::BinaryOp { left, right, .. } => {
            replace_strict(left, v) || replace_strict(right, v)
        }
        _ => false,
    }
}

/// Whether `e` has an `EXISTS` under its AND, OR and NOT (not inside a
/// subquery of its own).
fn has_exists(e: &ast::Expr) -> bool {
    match e {
        ast::Expr::Exists { .. } => true,
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::And | ast::BinaryOperator::Or,
            right,
        } => has_exists(left) || has_exists(right),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Not,
            expr,
        } => has_exists(expr),
        ast::Expr::Nested(inner) => has_exists(inner),
        _ => false,
    }
}

/// `count(…)` alone (possibly in parentheses), not inside an expression.
fn is_bare_count(e: &ast::Expr) -> bool {
    match e {
        ast::Expr::Nested(n) => is_bare_count(n),
        ast::Expr::Function(f) => {
            f.name.to_string().eq_ignore_ascii_case("count")
                && f.over.is_none()
                && f.filter.is_none()
        }
        _ => false,
    }
}

/// A correlated subquery's key, its inner side as a select item or a
/// GROUP BY key: a constant (`o.k = 3`) in parentheses, so GROUP BY does
/// not read it as a column position.
fn keyed(i: &ast::Expr) -> ast::Expr {
    match i {
        ast::Expr::Value(_) => ast::Expr::Nested(Box::new(i.clone())),
        other => other.clone(),
    }
}

/// The keys' inner sides (of `(inner, outer)` pairs) selected as `c0`,
/// `c1`, ….
fn key_items(keys: &[(ast::Expr, ast::Expr)]) -> Vec<ast::SelectItem> {
    keys.iter()
        .enumerate()
        .map(|(k, (i, _))| ast::SelectItem::ExprWithAlias {
            expr: keyed(i),
            alias: ast::Ident::new(format!("c{k}")),
        })
        .collect()
}

/// `outer = item.cK` for each key: the join of a subquery's item `name`.
fn key_equalities(keys: &[(ast::Expr, ast::Expr)], name: &str) -> Vec<ast::Expr> {
    keys.iter()
        .enumerate()
        .map(|(k, (_, o))| ast::Expr::BinaryOp {
            left: Box::new(o.clone()),
            op: ast::BinaryOperator::Eq,
            right: Box::new(qualified(name, &format!("c{k}"))),
        })
        .collect()
}

/// A call of a function by name with `args`.
fn call(name: &str, args: Vec<ast::Expr>) -> ast::Expr {
    ast::Expr::Function(ast::Function {
        name: ast::ObjectName::from(vec![ast::Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: ast::FunctionArguments::None,
        args: ast::FunctionArguments::List(ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|a| ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(a)))
                .collect(),
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

/// The internal function that reads a select-list subquery's value
/// (see [`unnest_select_list`]): `__sluice_single_row(n, v)` is NULL when
/// `n` is (no row), an error when `n` > 1, else `v`.
pub(crate) const SINGLE_ROW: &str = "__sluice_single_row";

/// Correlated scalar subqueries in a SELECT's list, unnested into LEFT
/// JOINs of derived tables (`__ss1`, `__ss2`, …); `None` when the list
/// has none. For `(SELECT v FROM r WHERE r.k = o.k AND p(o) AND q(r))`:
/// - `v` an aggregate of the inner rows: `(SELECT r.k, v … WHERE q(r)
///   GROUP BY r.k)` joined on `r.k = o.k AND p(o)`; its value the joined
///   column (NULL without a group, as an aggregate over no rows is but
///   `count`, read as 0 there);
/// - else: `(SELECT r.k, <v's inner columns>, count(*) OVER (PARTITION BY
///   r.k) … WHERE q(r) QUALIFY row_number() OVER (PARTITION BY r.k) = 1)`
///   joined the same way, `v` computed over the joined row; more than one
///   row is PostgreSQL's error (21000) where the value is read, none
///   NULL.
///
/// Conditions reading the outer query must be equalities of an inner and
/// an outer side, or read the outer query alone. An outer query with
/// GROUP BY or aggregates keeps its subqueries (refused when correlated).
pub(super) fn unnest_select_list(
    q: &ast::Query,
    select: &ast::Select,
    catalog: &dyn Catalog,
    ctes: &Ctes,
    text: Text,
) -> Result<Option<ast::Query>> {
    let item_has_subquery = |p: &ast::SelectItem| match p {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
            has_subquery(e)
        }
        _ => false,
    };
    if select.from.is_empty()
        || is_grouped(select)
        || !select.projection.iter().any(item_has_subquery)
    {
        return Ok(None);
    }
    let outer = Scope {
        factors: Vec::new(),
        items: resolve_all(&select.from, catalog, ctes, text)?
            .into_iter()
            .map(|(n, cols)| (n, cols.into_iter().map(|c| c.0).collect()))
            .collect(),
    };
    let mut cx = ListCtx {
        catalog,
        ctes,
        text,
        outer: &outer,
        joins: Vec::new(),
        failure: None,
        depth: 0,
    };
    let mut projection = select.projection.clone();
    let mut exists = false;
    for p in projection.iter_mut() {
        // `EXISTS (…)` alone is named `exists`, as PostgreSQL names it;
        // an expression around one `?column?` (not its rewritten text).
        let has_exists = |e: &ast::Expr| {
            ast::visit_expressions(e, |x| {
                if matches!(x, ast::Expr::Exists { .. }) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .is_break()
        };
        match p {
            ast::SelectItem::UnnamedExpr(e) if has_exists(e) => {
                exists = true;
                let name = match e {
                    ast::Expr::Exists { negated: false, .. } => "exists",
                    _ => "?column?",
                };
                *p = ast::SelectItem::ExprWithAlias {
                    expr: e.clone(),
                    alias: ast::Ident::new(name),
                };
            }
            ast::SelectItem::ExprWithAlias { expr: e, .. } if has_exists(e) => exists = true,
            _ => {}
        }
        // `(SELECT x …)` alone keeps the name PostgreSQL gives it.
        if let ast::SelectItem::UnnamedExpr(ast::Expr::Subquery(sq)) = p
            && let Some(s) = plain_select(sq)
            && let [ast::SelectItem::UnnamedExpr(e)]
            | [ast::SelectItem::ExprWithAlias { expr: e, .. }] = s.projection.as_slice()
        {
            let name = match &s.projection[0] {
                ast::SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
                _ => match e {
                    ast::Expr::Identifier(i) => Some(i.value.clone()),
                    ast::Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()),
                    _ => None,
                },
            };
            if let Some(name) = name {
                *p = ast::SelectItem::ExprWithAlias {
                    expr: ast::Expr::Subquery(sq.clone()),
                    alias: ast::Ident::new(name),
                };
            }
        }
        if let ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } = p
        {
            let _ = ast::VisitMut::visit(e, &mut cx);
            if let Some(err) = cx.failure.take() {
                return Err(err);
            }
        }
    }
    // (An EXISTS made a count subquery: the query is rewritten even
    // when that subquery reads nothing of the outer row.)
    if cx.joins.is_empty() && !exists {
        return Ok(None);
    }
    let mut s = select.clone();
    s.projection = projection;
    if let Some(last) = s.from.last_mut() {
        last.joins.extend(cx.joins);
    }
    Ok(Some(ast::Query {
        body: Box::new(ast::SetExpr::Select(Box::new(s))),
        ..q.clone()
    }))
}

struct ListCtx<'a> {
    catalog: &'a dyn Catalog,
    ctes: &'a Ctes,
    text: Text<'a>,
    outer: &'a Scope,
    joins: Vec<ast::Join>,
    failure: Option<Error>,
    /// How deep in subqueries the visit is (0: the select item itself).
    depth: usize,
}

impl ast::VisitorMut for ListCtx<'_> {
    type Break = ();
    fn pre_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }
    fn post_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }
    fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
        if self.depth != 0 {
            return ControlFlow::Continue(());
        }
        // `EXISTS (SELECT … WHERE …)` as a value: whether the count of
        // its rows, a select-list subquery as the others, is above 0.
        if let ast::Expr::Exists { subquery, negated } = e
            && let Some(s) = plain_select(subquery)
            && !is_grouped(s)
        {
            let mut s = s.clone();
            let mut count = call("count", Vec::new());
            if let ast::Expr::Function(f) = &mut count {
                f.args = ast::FunctionArguments::List(ast::FunctionArgumentList {
                    duplicate_treatment: None,
                    args: vec![ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)],
                    clauses: Vec::new(),
                });
            }
            s.projection = vec![ast::SelectItem::UnnamedExpr(count)];
            let q = ast::Query {
                body: Box::new(ast::SetExpr::Select(Box::new(s))),
                ..(**subquery).clone()
            };
            let node = ast::Expr::Subquery(Box::new(q.clone()));
            let value = match self.one(&q, &node) {
                Ok(Some(v)) => v,
                Ok(None) => node,
                Err(err) => {
                    self.failure = Some(err);
                    return ControlFlow::Break(());
                }
            };
            *e = ast::Expr::Nested(Box::new(ast::Expr::BinaryOp {
                left: Box::new(value),
                op: if *negated {
                    ast::BinaryOperator::Eq
                } else {
                    ast::BinaryOperator::Gt
                },
                right: Box::new(ast::Expr::value(ast::Value::Number("0".into(), false))),
            }));
            return ControlFlow::Continue(());
        }
        let ast::Expr::Subquery(sq) = e else {
            return ControlFlow::Continue(());
        };
        let sq = (**sq).clone();
        match self.one(&sq, e) {
            Ok(Some(v)) => {
                *e = v;
                ControlFlow::Continue(())
            }
            Ok(None) => ControlFlow::Continue(()),
            Err(err) => {
                self.failure = Some(err);
                ControlFlow::Break(())
            }
        }
    }
}

impl ListCtx<'_> {
    /// The value that replaces the subquery `q` (at `node`), its join
    /// added; `None`: not correlated (an init plan), or not a plain
    /// SELECT (left to the binder).
    fn one(&mut self, q: &ast::Query, node: &ast::Expr) -> Result<Option<ast::Expr>> {
        let Some(s) = plain_select(q) else {
            return Ok(None);
        };
        let items = resolve_all(&s.from, self.catalog, self.ctes, self.text)?;
        let inner = Scope {
            factors: vec![None; items.len()],
            items: items
                .into_iter()
                .map(|(n, cols)| (n, cols.into_iter().map(|c| c.0).collect()))
                .collect(),
        };
        let value = only_item(s, node)?;
        let mut conds = Vec::new();
        if let Some(w) = &s.selection {
            conjuncts(w, &mut conds);
        }
        let mut local = Vec::new();
        let mut on_outer = Vec::new();
        // Conditions that read both sides but are not equalities of an
        // inner and an outer side (`a.x <> t.y`): read over the joined
        // row, when each key has at most one inner row.
        let mut mixed = Vec::new();
        let mut keys: Vec<(ast::Expr, ast::Expr)> = Vec::new();
        for c in conds {
            let (ri, ro) = reads(&c, &inner, self.outer);
            if !ro {
                local.push(c);
                continue;
            }
            if has_subquery(&c) {
                return Err(unsupported(
                    "a subquery in a correlated condition of a select-list subquery",
                    &c,
                ));
            }
            if !ri {
                on_outer.push(c);
                continue;
            }
            let pair = match &c {
                ast::Expr::BinaryOp {
                    left: a,
                    op: ast::BinaryOperator::Eq,
                    right: b,
                } => match (reads(a, &inner, self.outer), reads(b, &inner, self.outer)) {
                    ((true, false), (false, true)) => Some(((**a).clone(), (**b).clone())),
                    ((false, true), (true, false)) => Some(((**b).clone(), (**a).clone())),
                    _ => None,
                },
                _ => None,
            };
            match pair {
                Some(p) => keys.push(p),
                None => mixed.push(c),
            }
        }
        if let Some(c) = mixed.first()
            && is_grouped(s)
        {
            return Err(unsupported(
                "a correlated select-list subquery with an aggregate whose condition on the outer query is not an equality of an inner and an outer side",
                c,
            ));
        }
        let (_, value_outer) = reads(value, &inner, self.outer);
        // The value, then, is `CASE WHEN <mixed> THEN value END`: NULL
        // where the one row fails them, as where there is none.
        let value_outer = value_outer || !mixed.is_empty();
        let value = &match and_all(mixed.clone()) {
            Some(m) => ast::Expr::Case {
                case_token: ast::helpers::attached_token::AttachedToken::empty(),
                end_token: ast::helpers::attached_token::AttachedToken::empty(),
                operand: None,
                conditions: vec![ast::CaseWhen {
                    condition: m,
                    result: value.clone(),
                }],
                else_result: None,
            },
            None => value.clone(),
        };
        if keys.is_empty() && on_outer.is_empty() && !value_outer {
            return Ok(None); // uncorrelated: an init plan
        }
        if has_subquery(value) && value_outer {
            return Err(unsupported(
                "a subquery inside a correlated select-list subquery's value",
                node,
            ));
        }
        let name = format!("__ss{}", self.joins.len() + 1);
        let col = |k: usize| format!("c{k}");
        let mut projection = key_items(&keys);
        let mut derived = s.clone();
        derived.selection = and_all(local);
        let result;
        if is_grouped(s) {
            let grouped_by = match &s.group_by {
                ast::GroupByExpr::Expressions(e, _) => !e.is_empty(),
                ast::GroupByExpr::All(_) => true,
            };
            if grouped_by || s.having.is_some() || s.distinct.is_some() || value_outer {
                return Err(unsupported(
                    "a correlated select-list subquery with GROUP BY, HAVING, DISTINCT, or an aggregate that reads the outer query",
                    node,
                ));
            }
            let bare_count = is_bare_count(value);
            if !bare_count && null_on_empty(value) != Some(true) {
                return Err(unsupported(
                    "a correlated select-list subquery whose value over no rows is not NULL (COALESCE, CASE, functions around its aggregates, count() inside an expression)",
                    node,
                ));
            }
            projection.push(ast::SelectItem::ExprWithAlias {
                expr: value.clone(),
                alias: ast::Ident::new(col(keys.len())),
            });
            derived.group_by = ast::GroupByExpr::Expressions(
                keys.iter().map(|(i, _)| keyed(i)).collect(),
                Vec::new(),
            );
            let v = qualified(&name, &col(keys.len()));
            result = if bare_count {
                call(
                    "coalesce",
                    vec![v, ast::Expr::value(ast::Value::Number("0".into(), false))],
                )
            } else {
                v
            };
        } else {
            // The inner columns the value reads, each a column of the
            // derived table; the value is computed over the joined row.
            let mut v = value.clone();
            let mut reads_inner: Vec<String> = Vec::new();
            if value_outer {
                let mut failure = None;
                let _ = ast::visit_expressions_mut(&mut v, |x| {
                    if matches!(side(x, &inner, self.outer), Some(Side::Inner)) {
                        let text = x.to_string();
                        let k = match reads_inner.iter().position(|t| *t == text) {
                            Some(k) => k,
                            None => {
                                reads_inner.push(text.clone());
                                projection.push(ast::SelectItem::ExprWithAlias {
                                    expr: x.clone(),
                                    alias: ast::Ident::new(col(keys.len() + reads_inner.len() - 1)),
                                });
                                reads_inner.len() - 1
                            }
                        };
                        *x = qualified(&name, &col(keys.len() + k));
                    } else if matches!(x, ast::Expr::Subquery(_)) {
                        failure = Some(());
                    }
                    ControlFlow::<()>::Continue(())
                });
                if failure.is_some() {
                    return Err(unsupported(
                        "a subquery inside a correlated select-list subquery's value",
                        node,
                    ));
                }
            } else {
                projection.push(ast::SelectItem::ExprWithAlias {
                    expr: value.clone(),
                    alias: ast::Ident::new(col(keys.len())),
                });
                v = qualified(&name, &col(keys.len()));
                reads_inner.push(String::new());
            }
            let n = col(keys.len() + reads_inner.len());
            let per_key = |name: &str, star: bool| {
                let mut f = call(name, Vec::new());
                if let ast::Expr::Function(f) = &mut f {
                    if star {
                        f.args = ast::FunctionArguments::List(ast::FunctionArgumentList {
                            duplicate_treatment: None,
                            args: vec![ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)],
                            clauses: Vec::new(),
                        });
                    }
                    f.over = Some(ast::WindowType::WindowSpec(ast::WindowSpec {
                        window_name: None,
                        partition_by: keys.iter().map(|(i, _)| keyed(i)).collect(),
                        order_by: Vec::new(),
                        window_frame: None,
                    }));
                }
                f
            };
            projection.push(ast::SelectItem::ExprWithAlias {
                expr: per_key("count", true),
                alias: ast::Ident::new(n.clone()),
            });
            // One row a key, so the join never repeats an outer row: the
            // count says whether there were more, and the value, where it
            // is read (not where a CASE or OR passes it by), is then the
            // error.
            derived.qualify = Some(ast::Expr::BinaryOp {
                left: Box::new(per_key("row_number", false)),
                op: ast::BinaryOperator::Eq,
                right: Box::new(ast::Expr::value(ast::Value::Number("1".into(), false))),
            });
            let mut a = vec![qualified(&name, &n), v];
            if !mixed.is_empty() {
                a.push(ast::Expr::value(ast::Value::Boolean(true)));
            }
            result = call(SINGLE_ROW, a);
        }
        derived.projection = projection;
        let mut on = key_equalities(&keys, &name);
        on.extend(on_outer);
        let on = and_all(on).unwrap_or(ast::Expr::value(ast::Value::Boolean(true)));
        self.joins.push(ast::Join {
            relation: ast::TableFactor::Derived {
                lateral: false,
                subquery: Box::new(ast::Query {
                    body: Box::new(ast::SetExpr::Select(Box::new(derived))),
                    ..q.clone()
                }),
                alias: Some(ast::TableAlias {
                    explicit: true,
                    name: ast::Ident::new(&name),
                    columns: Vec::new(),
                    at: None,
                }),
                sample: None,
            },
            global: false,
            join_operator: ast::JoinOperator::LeftOuter(ast::JoinConstraint::On(on)),
        });
        Ok(Some(ast::Expr::Nested(Box::new(result))))
    }
}
