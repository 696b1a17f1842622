//! Binding: one SQL expression (a `sqlparser` syntax tree) → a typed
//! [`Expr`] over the columns of one table.
//!
//! For: resolving column names against the table (exactly, else ignoring
//! ASCII case), type checking, the implicit conversions (made explicit
//! casts, `types`), literals, scalar functions, CASE, CAST, EXTRACT,
//! comparisons, `DATE ± INTERVAL`, folding operations over literals, and
//! the errors that name an unknown column, type or function. Not for: the
//! shape of a query — select list, GROUP BY, HAVING, ORDER BY, LIMIT,
//! pruning — which is [`super::plan`]'s. Of aggregates the binder knows
//! the names alone: it refuses their calls in per-row clauses and, after
//! GROUP BY, hands them to the planner's `Grouping`.

mod function;
mod types;

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, StringArray, new_null_array};
use arrow_schema::DataType as A;
use sqlparser::ast::{self, Spanned};

use super::expr::{BinOp, CastSite, DatePart, Expr, arith_type, cast, cast_at, type_name};
use super::interval::{self, Interval};
use super::sql::{Text, at, plan_err, unsupported};
use crate::error::{Error, Result};
pub use types::common_type;
use types::{
    check_cast, decimal_of, decimal_precision, lit, literal, literals_as_the_others, sql_type,
};
pub(crate) use types::{coerce, is_numeric};

/// Whether a function name (lower case) is an aggregate's.
pub(crate) fn is_aggregate_name(n: &str) -> bool {
    matches!(
        n,
        "count"
            | "sum"
            | "avg"
            | "min"
            | "max"
            | "stddev"
            | "stddev_samp"
            | "stddev_pop"
            | "variance"
            | "var_samp"
            | "var_pop"
            | "bool_and"
            | "bool_or"
            | "every"
            | "string_agg"
            | "array_agg"
            | "percentile_cont"
            | "percentile_disc"
            | "mode"
            | "median"
            | "approx_count_distinct"
    )
}

/// A function call's name, lower case.
pub(crate) fn function_name(f: &ast::Function) -> String {
    f.name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.to_ascii_lowercase())
        .unwrap_or_default()
}

/// The `x` of operands that are all `x = literal` (the same `x`, as
/// written out), each literal of `x`'s type.
fn same_column_equalities(bound: &[(Expr, &ast::Expr)]) -> Option<Expr> {
    let mut first: Option<(&Expr, String)> = None;
    for (e, _) in bound {
        let Expr::Binary {
            op: BinOp::Eq,
            left,
            right,
        } = e
        else {
            return None;
        };
        if !matches!(**right, Expr::Literal(_)) || matches!(**left, Expr::Literal(_)) {
            return None;
        }
        match &first {
            None => first = Some((left, left.to_string())),
            Some((_, shown)) if *shown == left.to_string() => {}
            Some(_) => return None,
        }
    }
    first.map(|(x, _)| x.clone())
}

/// Where `e` starts, found without walking the whole tree (a node's
/// span is the union of its children's): its leftmost leaf's place.
fn first_place(e: &ast::Expr) -> sqlparser::tokenizer::Span {
    let mut e = e;
    for _ in 0..MAX_BIND_DEPTH {
        e = match e {
            ast::Expr::BinaryOp { left, .. } => left,
            ast::Expr::Nested(x)
            | ast::Expr::IsNull(x)
            | ast::Expr::IsNotNull(x)
            | ast::Expr::Cast { expr: x, .. } => x,
            _ => break,
        };
    }
    match e {
        ast::Expr::Identifier(i) => i.span,
        ast::Expr::Value(v) => v.span,
        _ => sqlparser::tokenizer::Span::empty(),
    }
}

/// Whether an expression calls an aggregate anywhere. Walks the tree
/// with a list of its own, not by recursion: a chain such as `a OR b OR
/// …` is as deep as it is long.
pub(crate) fn contains_aggregate(e: &ast::Expr) -> bool {
    // A window call's aggregate (`sum(x) OVER ()`) is not one of the
    // grouping's; its arguments may hold some (`sum(sum(x)) OVER ()`).
    any_call(e, &|f| {
        f.over.is_none() && is_aggregate_name(&function_name(f))
    })
}

/// Whether an expression calls a window function (`… OVER (…)`) anywhere.
pub(crate) fn contains_window(e: &ast::Expr) -> bool {
    any_call(e, &|f| f.over.is_some())
}

/// Whether an expression holds a function call for which `hit` holds:
/// in its arguments, in a window's PARTITION BY and ORDER BY, anywhere
/// (not inside subqueries). Walks the tree with a list of its own, not
/// by recursion: a chain such as `a OR b OR …` is as deep as it is long.
fn any_call(e: &ast::Expr, hit: &dyn Fn(&ast::Function) -> bool) -> bool {
    use ast::Expr as E;
    let mut todo: Vec<&ast::Expr> = vec![e];
    while let Some(e) = todo.pop() {
        match e {
            E::Function(f) => {
                if hit(f) {
                    return true;
                }
                if let ast::FunctionArguments::List(l) = &f.args {
                    for a in &l.args {
                        if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) = a {
                            todo.push(x);
                        }
                    }
                }
                if let Some(ast::WindowType::WindowSpec(w)) = &f.over {
                    todo.extend(&w.partition_by);
                    todo.extend(w.order_by.iter().map(|o| &o.expr));
                }
            }
            E::BinaryOp { left, right, .. } => todo.extend([&**left, &**right]),
            E::UnaryOp { expr, .. }
            | E::Nested(expr)
            | E::IsNull(expr)
            | E::IsNotNull(expr)
            | E::Cast { expr, .. }
            | E::Extract { expr, .. } => todo.push(expr),
            E::Between {
                expr, low, high, ..
            } => todo.extend([&**expr, &**low, &**high]),
            E::InList { expr, list, .. } => {
                todo.push(expr);
                todo.extend(list);
            }
            E::Like { expr, pattern, .. } | E::ILike { expr, pattern, .. } => {
                todo.extend([&**expr, &**pattern])
            }
            E::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                todo.push(expr);
                todo.extend(substring_from.as_deref());
                todo.extend(substring_for.as_deref());
            }
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                todo.extend(operand.as_deref());
                for c in conditions {
                    todo.extend([&c.condition, &c.result]);
                }
                todo.extend(else_result.as_deref());
            }
            _ => {}
        }
    }
    false
}

/// How deep the binder recurses into an expression (each level of
/// nesting but the links of an `AND`/`OR` chain, which are bound one
/// after another): deeper is refused with SQLSTATE 54001, before the
/// stack of the thread binding it (a server's connection thread has 2
/// MiB) can run out. Evaluating, cloning and dropping the bound
/// expression recurse as deep.
pub const MAX_BIND_DEPTH: usize = 256;

/// Where an expression is bound.
pub(crate) enum Scope<'s> {
    /// Per-row expressions over the table's columns; `clause` names where,
    /// for the error that refuses an aggregate call there.
    Row { clause: &'static str },
    /// After GROUP BY: aggregate calls and GROUP BY keys are columns of the
    /// grouping's output, which the grouping resolves.
    Grouped(&'s mut dyn Grouping),
}

/// `NUMERIC` or `DECIMAL` written without precision and scale.
fn unconstrained_numeric(t: &ast::DataType) -> bool {
    matches!(
        t,
        ast::DataType::Decimal(ast::ExactNumberInfo::None)
            | ast::DataType::Numeric(ast::ExactNumberInfo::None)
    )
}

/// The digits after the point of a number written as text, its exponent
/// counted (`1.5e-3`: 4), at most 38; 0 for anything else (the cast
/// then judges the text).
fn text_scale(t: &str) -> i8 {
    let t = t.trim();
    let (mantissa, exp) = match t.find(['e', 'E']) {
        Some(i) => match t[i + 1..].parse::<i64>() {
            Ok(x) => (&t[..i], x),
            Err(_) => return 0,
        },
        None => (t, 0),
    };
    let frac = match mantissa.split_once('.') {
        Some((_, f)) if f.bytes().all(|b| b.is_ascii_digit()) => f.len() as i64,
        Some(_) => return 0,
        None => 0,
    };
    (frac - exp).clamp(0, 38) as i8
}

/// `grouping(…)` where there is no grouping.
pub(super) fn grouping_misplaced(node: &ast::Expr) -> Error {
    plan_err(
        "grouping() is allowed only in the select list, HAVING and ORDER BY of a query with GROUP BY".into(),
        node,
    )
}

/// The planner's side of binding after GROUP BY: the binder hands it
/// aggregate calls and whole expressions, and asks it the types of its
/// output columns.
pub(crate) trait Grouping {
    /// The output column the aggregate call `f` (the node `node`) becomes;
    /// its argument is bound per row with `binder`.
    fn aggregate(&mut self, binder: &Binder, f: &ast::Function, node: &ast::Expr) -> Result<Expr>;
    /// What `node`, an expression without aggregates bound per row as
    /// `row`, is after grouping: a key column, an error (a column that is
    /// not grouped), or `None` to bind its parts one by one.
    fn grouped(&self, node: &ast::Expr, row: &Expr) -> Result<Option<Expr>>;
    /// What `grouping(…)` (the call `f`, the node `node`) is: a function
    /// of the grouping set each output row comes from.
    fn grouping(&mut self, _binder: &Binder, _f: &ast::Function, node: &ast::Expr) -> Result<Expr> {
        Err(grouping_misplaced(node))
    }
    /// The types of the output columns, given the table's column types.
    fn types(&self, table: &[A]) -> Vec<A>;
}

/// The planner's side of binding a window call (`f(…) OVER (…)`): it
/// binds the call's arguments, PARTITION BY and ORDER BY in `scope` and
/// gives the expression that stands for the call's value.
pub(crate) trait Windowing {
    fn window(
        &self,
        binder: &Binder,
        f: &ast::Function,
        node: &ast::Expr,
        scope: &mut Scope,
    ) -> Result<Expr>;
}

/// Plans the uncorrelated scalar subqueries of an expression (the
/// planner's side: the catalog and the CTEs in scope).
pub(crate) trait SubPlanner {
    fn plan_subquery(&self, q: &ast::Query) -> Result<crate::query::plan::Plan>;
}

/// Binds SQL expressions over the columns of one table (or of none).
pub(crate) struct Binder<'c> {
    table: Option<String>,
    alias: Option<String>,
    columns: &'c [(String, A)],
    text: Text<'c>,
    /// Levels of [`Binder::bind`] under way (see [`MAX_BIND_DEPTH`]).
    depth: std::cell::Cell<usize>,
    /// The columns' types, as [`Binder::types`] gives them (asked for
    /// each expression typed: an IN list of 100,000 items asks 200,000
    /// times).
    col_types: Vec<A>,
    /// The type of an instant in this session: TIMESTAMPTZ in the
    /// session's zone (`TimeZone`), whose offset gives instants their
    /// local times (casts to TIMESTAMP, DATE and TEXT, EXTRACT) and reads
    /// TIMESTAMP, DATE and text without an offset as its local times.
    tz: A,
    /// The FROM items when there are several (a join): see [`Relations`].
    rels: Option<Relations>,
    /// Plans scalar subqueries; `None`: they are refused.
    sub: Option<&'c dyn SubPlanner>,
    /// Scalar subqueries bound so far.
    subqueries: std::cell::Cell<usize>,
    /// Binds window calls; `None`: they are refused.
    win: Option<&'c dyn Windowing>,
}

/// The FROM items of a query that reads several (a join, a subquery in
/// FROM): their names, and which item each column belongs to. The
/// binder's columns are every item's columns, item after item.
#[derive(Debug, Clone, Default)]
pub(crate) struct Relations {
    /// Per item: the name it is known by (its alias, else its table's
    /// name), lower case.
    pub names: Vec<String>,
    /// Per column: the item it belongs to.
    pub owner: Vec<usize>,
    /// Per column: a column that a bare name does not reach (the right
    /// side's copy of a `USING`/`NATURAL` join column: the left one is
    /// meant).
    pub hidden: Vec<bool>,
}

/// One level of [`Binder::bind`], counted while it lasts.
struct Level<'b>(&'b std::cell::Cell<usize>);

impl Drop for Level<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

impl<'c> Binder<'c> {
    /// A binder over `columns` (name and type) of `table`, also named
    /// `alias`; errors about CAST say where it is in `text`.
    pub(crate) fn new(
        table: Option<String>,
        alias: Option<String>,
        columns: &'c [(String, A)],
        text: Text<'c>,
    ) -> Self {
        Binder {
            table,
            alias,
            columns,
            text,
            depth: std::cell::Cell::new(0),
            col_types: columns.iter().map(|c| c.1.clone()).collect(),
            tz: A::Timestamp(
                arrow_schema::TimeUnit::Microsecond,
                Some(crate::batch::UTC_ZONE.into()),
            ),
            rels: None,
            sub: None,
            subqueries: std::cell::Cell::new(0),
            win: None,
        }
    }

    /// The binder with scalar subqueries planned by `sub`.
    pub(crate) fn with_subqueries(mut self, sub: &'c dyn SubPlanner) -> Self {
        self.sub = Some(sub);
        self
    }

    /// The binder with window calls bound by `win`.
    pub(crate) fn with_windows(mut self, win: &'c dyn Windowing) -> Self {
        self.win = Some(win);
        self
    }

    /// The type of `e`, bound in `scope`.
    pub(crate) fn type_in(&self, e: &Expr, scope: &Scope) -> A {
        self.ty(e, scope)
    }

    /// Whether a scalar subquery was bound (the plan then runs it first).
    pub(crate) fn has_subqueries(&self) -> bool {
        self.subqueries.get() > 0
    }

    /// The binder over several FROM items (`columns` are theirs, item
    /// after item, as `rels` says).
    pub(crate) fn with_relations(mut self, rels: Relations) -> Self {
        self.rels = Some(rels);
        self
    }

    /// The binder in a session whose zone is `zone` (an Arrow time zone:
    /// a fixed offset or a named zone; UTC changes nothing).
    pub(crate) fn with_zone(mut self, zone: &str) -> Self {
        if !crate::zone::Zone::of(Some(zone)).is_utc() {
            self.tz = A::Timestamp(arrow_schema::TimeUnit::Microsecond, Some(zone.into()));
        }
        self
    }

    /// A column of instants seen in the session's zone (the same values:
    /// a relabel); other columns as they are.
    fn in_zone(&self, e: Expr) -> Expr {
        let Expr::Column { index, .. } = &e else {
            return e;
        };
        match &self.col_types[*index] {
            A::Timestamp(_, Some(z))
                if A::Timestamp(arrow_schema::TimeUnit::Microsecond, Some(z.clone()))
                    != self.tz =>
            {
                Expr::Cast {
                    expr: Box::new(e),
                    to: self.tz.clone(),
                    site: None,
                }
            }
            _ => e,
        }
    }

    /// A type named in SQL, an instant's in the session's zone.
    fn session_type(&self, t: A) -> A {
        match t {
            A::Timestamp(_, Some(_)) => self.tz.clone(),
            other => other,
        }
    }

    /// The table's column types.
    pub(crate) fn types(&self) -> Vec<A> {
        self.col_types.clone()
    }

    fn ty(&self, e: &Expr, scope: &Scope) -> A {
        match scope {
            Scope::Row { .. } => e.data_type(&self.col_types),
            Scope::Grouped(g) => e.data_type(&g.types(&self.col_types)),
        }
    }

    /// `e` as the condition of `clause`: a BOOLEAN (NULL cast to it).
    pub(crate) fn boolean(&self, e: Expr, node: &ast::Expr, clause: &str) -> Result<Expr> {
        self.boolean_over(e, node, clause, &self.col_types)
    }

    /// [`Binder::boolean`] of an expression over the columns of `types`
    /// (a grouping's output: HAVING).
    pub(crate) fn boolean_over(
        &self,
        e: Expr,
        node: &ast::Expr,
        clause: &str,
        types: &[A],
    ) -> Result<Expr> {
        let t = e.data_type(types);
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
        if let Some(rels) = &self.rels {
            let reach: Vec<usize> = (0..self.columns.len())
                .filter(|&c| !rels.hidden[c])
                .collect();
            return self.column_among(name, &reach, None, node);
        }
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
                Some(t) => Error::UndefinedColumn(format!(
                    "no column named {name:?} in table {t}{}",
                    at(node.span())
                )),
                None => Error::UndefinedColumn(format!(
                    "no column named {name:?} (the query has no FROM){}",
                    at(node.span())
                )),
            })
    }

    /// The column `name` names among the columns `reach` (of the FROM
    /// item `item`, when the name was qualified): exactly, else ignoring
    /// ASCII case; a name two of them answer to is ambiguous.
    fn column_among(
        &self,
        name: &str,
        reach: &[usize],
        item: Option<&str>,
        node: &ast::Expr,
    ) -> Result<(usize, String)> {
        let exact: Vec<usize> = reach
            .iter()
            .copied()
            .filter(|&c| self.columns[c].0 == name)
            .collect();
        let found = if exact.is_empty() {
            reach
                .iter()
                .copied()
                .filter(|&c| self.columns[c].0.eq_ignore_ascii_case(name))
                .collect()
        } else {
            exact
        };
        match found.as_slice() {
            // In a join a column is shown with its FROM item's name: two
            // items' `n_name` are two expressions.
            [c] => Ok((
                *c,
                match &self.rels {
                    Some(r) => format!("{}.{}", r.names[r.owner[*c]], self.columns[*c].0),
                    None => self.columns[*c].0.clone(),
                },
            )),
            [] => Err(Error::UndefinedColumn(match item {
                Some(t) => format!("no column named {name:?} in {t}{}", at(node.span())),
                None => format!(
                    "no column named {name:?} in any table of FROM{}",
                    at(node.span())
                ),
            })),
            several => {
                let rels = self.rels.as_ref();
                let owners: Vec<String> = several
                    .iter()
                    .map(|&c| match rels {
                        Some(r) => format!("{}.{}", r.names[r.owner[c]], self.columns[c].0),
                        None => self.columns[c].0.clone(),
                    })
                    .collect();
                Err(Error::Ambiguous(format!(
                    "column reference {name:?} is ambiguous: it could be {} (qualify it with its table's name or alias){}",
                    owners.join(" or "),
                    at(node.span())
                )))
            }
        }
    }

    /// Binds `e` in `scope`: its columns resolved, its types checked, its
    /// implicit conversions made casts, literal-only operations folded.
    pub(crate) fn bind(&self, e: &ast::Expr, scope: &mut Scope) -> Result<Expr> {
        if self.depth.get() >= MAX_BIND_DEPTH {
            return Err(super::sql::too_deep(format!(
                "expressions nest deeper than {MAX_BIND_DEPTH} levels{}",
                at(first_place(e))
            )));
        }
        self.depth.set(self.depth.get() + 1);
        let _level = Level(&self.depth);
        if let ast::Expr::Function(f) = e
            && f.over.is_some()
        {
            return match self.win {
                Some(w) => w.window(self, f, e, scope),
                None => Err(plan_err("window functions are not allowed here".into(), e)),
            };
        }
        if let Scope::Grouped(g) = scope {
            // An aggregate call becomes a column of the aggregate's output.
            if let ast::Expr::Function(f) = e
                && is_aggregate_name(&function_name(f))
            {
                return g.aggregate(self, f, e);
            }
            if let ast::Expr::Function(f) = e
                && function_name(f) == "grouping"
            {
                return g.grouping(self, f, e);
            }
            // A whole expression that is a GROUP BY key becomes that key.
            if !contains_aggregate(e)
                && !contains_window(e)
                && let Ok(row) = self.bind(e, &mut Scope::Row { clause: "SELECT" })
                && let Some(x) = g.grouped(e, &row)?
            {
                return Ok(x);
            }
        }
        match e {
            ast::Expr::Identifier(i) => {
                let (index, name) = self.column(&i.value, e)?;
                Ok(self.in_zone(Expr::Column { index, name }))
            }
            ast::Expr::CompoundIdentifier(parts) => {
                let [q, c] = parts.as_slice() else {
                    return Err(plan_err(format!("bad column reference {e}"), e));
                };
                let qn = q.value.to_ascii_lowercase();
                if let Some(rels) = &self.rels {
                    let items: Vec<usize> = (0..rels.names.len())
                        .filter(|&r| rels.names[r] == qn)
                        .collect();
                    let item = match items.as_slice() {
                        [r] => *r,
                        [] => {
                            return Err(Error::UndefinedTable(format!(
                                "missing FROM-clause entry for table {:?}{}",
                                q.value,
                                at(e.span())
                            )));
                        }
                        _ => {
                            return Err(Error::Ambiguous(format!(
                                "table reference {:?} is ambiguous{}",
                                q.value,
                                at(e.span())
                            )));
                        }
                    };
                    let reach: Vec<usize> = (0..self.columns.len())
                        .filter(|&c| rels.owner[c] == item)
                        .collect();
                    let (index, name) = self.column_among(&c.value, &reach, Some(&qn), e)?;
                    return Ok(self.in_zone(Expr::Column { index, name }));
                }
                // An alias hides the table's own name, as in PostgreSQL.
                let known = match &self.alias {
                    Some(a) => Some(a),
                    None => self.table.as_ref(),
                };
                if Some(&qn) != known {
                    return Err(Error::UndefinedTable(format!(
                        "missing FROM-clause entry for table {:?}{}",
                        q.value,
                        at(e.span())
                    )));
                }
                let (index, name) = self.column(&c.value, e)?;
                Ok(self.in_zone(Expr::Column { index, name }))
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
                let mut target = self.session_type(sql_type(&ts.data_type, e)?);
                if unconstrained_numeric(&ts.data_type) {
                    target = A::Decimal128(38, text_scale(&text));
                }
                let s: ArrayRef = Arc::new(StringArray::from(vec![text]));
                Ok(lit(
                    cast(&s, &target).map_err(|er| plan_err(er.to_string(), e))?
                ))
            }
            ast::Expr::UnaryOp { op, expr } => {
                let inner = self.bind(expr, scope)?;
                let t = self.ty(&inner, scope);
                match op {
                    ast::UnaryOperator::Minus if t == interval::TYPE => fold(
                        Expr::Call {
                            func: crate::query::func::Func::Interval(interval::Op::Neg),
                            args: vec![inner],
                            ty: interval::TYPE,
                        },
                        e,
                    ),
                    ast::UnaryOperator::Minus => {
                        if !is_numeric(&t) && t != A::Null {
                            return Err(plan_err(format!("cannot negate {}", type_name(&t)), e));
                        }
                        // `-5` is a literal (a key lookup's, a zone map's).
                        fold(
                            Expr::Neg(Box::new(coerce(
                                inner,
                                &t,
                                &if t == A::Null { A::Int64 } else { t.clone() },
                            ))),
                            e,
                        )
                    }
                    ast::UnaryOperator::Plus => Ok(inner),
                    ast::UnaryOperator::BitwiseNot => {
                        let f = crate::query::func::Func::Bit(crate::query::func::BitOp::Not);
                        let out = self.call(f, vec![inner], vec![t], e)?;
                        fold(out, e)
                    }
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
            ast::Expr::BinaryOp {
                op: op @ (ast::BinaryOperator::And | ast::BinaryOperator::Or),
                ..
            } => self.chain(e, op, scope),
            // FLOOR(x) and CEIL(x) (the parser's own forms; `TO field`
            // and a scale are not PostgreSQL's).
            ast::Expr::Floor { expr, field } | ast::Expr::Ceil { expr, field } => {
                if !matches!(
                    field,
                    ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime)
                ) {
                    return Err(unsupported("FLOOR/CEIL with TO or a scale", e));
                }
                let func = if matches!(e, ast::Expr::Floor { .. }) {
                    crate::query::func::Func::Floor
                } else {
                    crate::query::func::Func::Ceil
                };
                let x = self.bind(expr, scope)?;
                let types = vec![self.ty(&x, scope)];
                let out = self.call(func, vec![x], types, e)?;
                fold(out, e)
            }
            ast::Expr::BinaryOp {
                left,
                op:
                    op @ (ast::BinaryOperator::StringConcat
                    | ast::BinaryOperator::Modulo
                    | ast::BinaryOperator::BitwiseAnd
                    | ast::BinaryOperator::BitwiseOr
                    | ast::BinaryOperator::BitwiseXor
                    | ast::BinaryOperator::PGBitwiseShiftLeft
                    | ast::BinaryOperator::PGBitwiseShiftRight),
                right,
            } => {
                use crate::query::func::{BitOp, Func};
                let func = match op {
                    ast::BinaryOperator::Modulo => Func::Mod,
                    ast::BinaryOperator::BitwiseAnd => Func::Bit(BitOp::And),
                    ast::BinaryOperator::BitwiseOr => Func::Bit(BitOp::Or),
                    // `#` in the SQL (see `sql::xor_as_postgresql`).
                    ast::BinaryOperator::BitwiseXor => Func::Bit(BitOp::Xor),
                    ast::BinaryOperator::PGBitwiseShiftLeft => Func::Bit(BitOp::Shl),
                    ast::BinaryOperator::PGBitwiseShiftRight => Func::Bit(BitOp::Shr),
                    _ => Func::Concat,
                };
                let l = self.bind(left, scope)?;
                let r = self.bind(right, scope)?;
                let types = vec![self.ty(&l, scope), self.ty(&r, scope)];
                let out = self.call(func, vec![l, r], types, e)?;
                fold(out, e)
            }
            // `a ~ p`, `~*` (case-insensitive), `!~`, `!~*`: regexp_like,
            // negated for the `!` forms.
            ast::Expr::BinaryOp {
                left,
                op:
                    op @ (ast::BinaryOperator::PGRegexMatch
                    | ast::BinaryOperator::PGRegexIMatch
                    | ast::BinaryOperator::PGRegexNotMatch
                    | ast::BinaryOperator::PGRegexNotIMatch),
                right,
            } => {
                use ast::BinaryOperator as B;
                // PostgreSQL gives `~` and `||` one precedence, left to
                // right: `s ~ 'a' || 'b'` is `(s ~ 'a') || 'b'`.
                if let ast::Expr::BinaryOp {
                    left: rl,
                    op: ast::BinaryOperator::StringConcat,
                    right: rr,
                } = right.as_ref()
                {
                    let inner = ast::Expr::BinaryOp {
                        left: left.clone(),
                        op: op.clone(),
                        right: rl.clone(),
                    };
                    let outer = ast::Expr::BinaryOp {
                        left: Box::new(inner),
                        op: ast::BinaryOperator::StringConcat,
                        right: rr.clone(),
                    };
                    return self.bind(&outer, scope);
                }
                let l = self.bind(left, scope)?;
                let r = self.bind(right, scope)?;
                let mut args = vec![l, r];
                if matches!(op, B::PGRegexIMatch | B::PGRegexNotIMatch) {
                    args.push(Expr::Literal(Arc::new(arrow_array::StringArray::from(
                        vec!["i"],
                    ))));
                }
                let types = args.iter().map(|a| self.ty(a, scope)).collect();
                let out = self.call(crate::query::func::Func::RegexpLike, args, types, e)?;
                let out = if matches!(op, B::PGRegexNotMatch | B::PGRegexNotIMatch) {
                    Expr::Not(Box::new(out))
                } else {
                    out
                };
                fold(out, e)
            }
            // `(a, b) = (c, d)`: `a = c AND b = d`; `<>`: `a <> c OR b <> d`
            // (the same three-valued answer).
            ast::Expr::BinaryOp { left, op, right }
                if matches!(op, ast::BinaryOperator::Eq | ast::BinaryOperator::NotEq)
                    && matches!((left.as_ref(), right.as_ref()),
                        (ast::Expr::Tuple(l), ast::Expr::Tuple(r)) if l.len() == r.len() && !l.is_empty()) =>
            {
                let (ast::Expr::Tuple(l), ast::Expr::Tuple(r)) = (left.as_ref(), right.as_ref())
                else {
                    return Err(unsupported("this row comparison", e));
                };
                let join = if *op == ast::BinaryOperator::Eq {
                    ast::BinaryOperator::And
                } else {
                    ast::BinaryOperator::Or
                };
                let rewritten = l
                    .iter()
                    .zip(r)
                    .map(|(a, b)| ast::Expr::BinaryOp {
                        left: Box::new(a.clone()),
                        op: op.clone(),
                        right: Box::new(b.clone()),
                    })
                    .reduce(|x, y| ast::Expr::BinaryOp {
                        left: Box::new(x),
                        op: join.clone(),
                        right: Box::new(y),
                    })
                    .ok_or_else(|| unsupported("an empty row", e))?;
                self.bind(&rewritten, scope)
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
            } => self.in_list(expr, list, *negated, scope),
            // `x op ANY (ARRAY[a, b])`, `x op ALL (ARRAY[...])`: the
            // comparisons joined by OR (ANY) or AND (ALL), with their NULL
            // rules; `= ANY` is `IN`, `<> ALL` is `NOT IN`.
            ast::Expr::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => self.quantified(left, compare_op, right, true, scope, e),
            ast::Expr::AllOp {
                left,
                compare_op,
                right,
            } => self.quantified(left, compare_op, right, false, scope, e),
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
                if *any {
                    return Err(unsupported("LIKE ANY", e));
                }
                // ESCAPE 'c': a string of one character, or '' (none).
                let escape = match escape_char.as_deref() {
                    None => None,
                    Some(ast::Expr::Value(v)) => match v.value.clone().into_string() {
                        Some(c) if c.chars().count() <= 1 => Some(c.chars().next()),
                        _ => {
                            return Err(Error::Argument {
                                state: "22025",
                                message: format!(
                                    "invalid escape string: {} (must be empty or one character){}",
                                    v.value,
                                    at(e.span())
                                ),
                            });
                        }
                    },
                    Some(other) => {
                        return Err(unsupported("an ESCAPE that is not a string literal", other));
                    }
                };
                self.like(expr, pattern, *negated, escape, e, scope)
            }
            ast::Expr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.case(
                operand.as_deref(),
                conditions,
                else_result.as_deref(),
                e,
                scope,
            ),
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
                self.cast(expr, data_type, e, scope)
            }
            ast::Expr::Extract { field, expr, .. } => {
                let x = self.bind(expr, scope)?;
                let t = self.ty(&x, scope);
                let part = match field {
                    // Of an interval, every field is DATE_PART's.
                    _ if t == interval::TYPE || matches!(t, A::Time64(_)) => None,
                    ast::DateTimeField::Year | ast::DateTimeField::Years => Some(DatePart::Year),
                    ast::DateTimeField::Month | ast::DateTimeField::Months => Some(DatePart::Month),
                    ast::DateTimeField::Day | ast::DateTimeField::Days => Some(DatePart::Day),
                    ast::DateTimeField::Hour | ast::DateTimeField::Hours => Some(DatePart::Hour),
                    ast::DateTimeField::Minute | ast::DateTimeField::Minutes => {
                        Some(DatePart::Minute)
                    }
                    _ => None,
                };
                let Some(part) = part else {
                    // The other fields: DATE_PART's, a BIGINT where the
                    // field is whole (PostgreSQL: a numeric), else a DOUBLE.
                    use crate::query::func::{Func, Unit};
                    let text = field.to_string();
                    let Some(unit) = Unit::of(&text) else {
                        return Err(unsupported(&format!("EXTRACT({field})"), e));
                    };
                    let types = vec![A::Utf8, t];
                    let name = Expr::Literal(Arc::new(StringArray::from(vec![text])));
                    let part = self.call(Func::DatePart, vec![name, x], types, e)?;
                    let fraction = matches!(unit, Unit::Second | Unit::Milliseconds | Unit::Epoch);
                    return Ok(if fraction {
                        part
                    } else {
                        coerce(part, &A::Float64, &A::Int64)
                    });
                };
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
            } => self.substring(
                expr,
                substring_from.as_deref(),
                substring_for.as_deref(),
                e,
                scope,
            ),
            ast::Expr::Function(f) => fold(self.function(f, e, scope)?, e),
            // POSITION(sub IN s): strpos(s, sub).
            ast::Expr::Position { expr, r#in } => {
                let s = self.bind(r#in, scope)?;
                let sub = self.bind(expr, scope)?;
                let types = vec![self.ty(&s, scope), self.ty(&sub, scope)];
                let out = self.call(crate::query::func::Func::Strpos, vec![s, sub], types, e)?;
                fold(out, e)
            }
            // TRIM([BOTH | LEADING | TRAILING] [chars FROM] s), TRIM(s, chars).
            ast::Expr::Trim {
                trim_where,
                trim_what,
                expr,
                trim_characters,
            } => {
                use crate::query::func::Func;
                let func = match trim_where {
                    Some(ast::TrimWhereField::Leading) => Func::Ltrim,
                    Some(ast::TrimWhereField::Trailing) => Func::Rtrim,
                    _ => Func::Btrim,
                };
                let chars = match (trim_what, trim_characters.as_deref()) {
                    (Some(w), _) => Some(&**w),
                    (None, Some([c])) => Some(c),
                    (None, None) => None,
                    (None, Some(_)) => {
                        return Err(plan_err("TRIM takes one set of characters".into(), e));
                    }
                };
                let mut args = vec![self.bind(expr, scope)?];
                if let Some(c) = chars {
                    args.push(self.bind(c, scope)?);
                }
                let types = args.iter().map(|a| self.ty(a, scope)).collect();
                let out = self.call(func, args, types, e)?;
                fold(out, e)
            }
            // a IS [NOT] DISTINCT FROM b: a comparison in which NULL is a
            // value (two NULLs are not distinct, a NULL and a value are).
            ast::Expr::IsDistinctFrom(a, b) | ast::Expr::IsNotDistinctFrom(a, b) => {
                let (l, r) = (self.bind(a, scope)?, self.bind(b, scope)?);
                let ne = self.binary(BinOp::NotEq, l.clone(), r.clone(), scope, e)?;
                let null = |x: Expr, negated: bool| Expr::IsNull {
                    expr: Box::new(x),
                    negated,
                };
                let yes = Expr::Literal(Arc::new(arrow_array::BooleanArray::from(vec![true])));
                let distinct = Expr::Case {
                    whens: vec![
                        (null(l, false), null(r.clone(), true)),
                        (null(r, false), yes),
                    ],
                    otherwise: Box::new(ne),
                };
                Ok(if matches!(e, ast::Expr::IsDistinctFrom(..)) {
                    distinct
                } else {
                    Expr::Not(Box::new(distinct))
                })
            }
            ast::Expr::Subquery(q) => self.scalar_subquery(q, e),
            ast::Expr::InSubquery {
                expr,
                subquery,
                negated,
            } => self.in_subquery(expr, subquery, *negated, e, scope),
            ast::Expr::Exists { .. } => Err(unsupported(
                "EXISTS (SELECT …) other than as a condition of WHERE (under its AND, OR and NOT)",
                e,
            )),
            ast::Expr::Interval(iv) => interval_literal(iv, e),
            other => Err(unsupported(&format!("the expression {other}"), e)),
        }
    }

    /// `x [NOT] LIKE pattern` (ILIKE: `e` says which) of TEXT; the pattern
    /// a string literal.
    fn like(
        &self,
        expr: &ast::Expr,
        pattern: &ast::Expr,
        negated: bool,
        escape: Option<Option<char>>,
        e: &ast::Expr,
        scope: &mut Scope,
    ) -> Result<Expr> {
        let x = self.bind(expr, scope)?;
        let t = self.ty(&x, scope);
        if t != A::Utf8 && t != A::Null {
            return Err(plan_err(
                format!("LIKE needs TEXT, not {}", type_name(&t)),
                e,
            ));
        }
        // A string literal, or an expression of literals (folded when
        // bound: `'pg_' || '%'`, as SQLAlchemy writes a prefix).
        let text = match pattern {
            ast::Expr::Value(v) => v.value.clone().into_string(),
            _ => match self.bind(pattern, scope)? {
                Expr::Literal(a) if a.data_type() == &A::Utf8 && a.is_valid(0) => {
                    use arrow_array::cast::AsArray;
                    Some(a.as_string::<i32>().value(0).to_string())
                }
                _ => None,
            },
        };
        let pattern = text
            .ok_or_else(|| unsupported("a LIKE pattern that is not a constant string", pattern))?;
        // The pattern with its escape character as the default one
        // (backslash), a backslash then an ordinary character.
        let pattern = match escape {
            None | Some(Some('\\')) => pattern,
            Some(esc) => {
                let mut out = String::with_capacity(pattern.len());
                let mut chars = pattern.chars();
                while let Some(c) = chars.next() {
                    if Some(c) == esc {
                        match chars.next() {
                            Some(n) => {
                                out.push('\\');
                                out.push(n);
                            }
                            None => {
                                return Err(Error::Argument {
                                    state: "22025",
                                    message: format!(
                                        "LIKE pattern must not end with escape character{}",
                                        at(e.span())
                                    ),
                                });
                            }
                        }
                    } else if c == '\\' {
                        out.push_str("\\\\");
                    } else {
                        out.push(c);
                    }
                }
                out
            }
        };
        Ok(Expr::Like {
            expr: Box::new(coerce(x, &t, &A::Utf8)),
            pattern,
            negated,
            case_insensitive: matches!(e, ast::Expr::ILike { .. }),
        })
    }

    /// `CAST(expr AS data_type)` (or `expr::data_type`): allowed casts
    /// only; a literal is cast at once. The type as written is kept for
    /// the cast's errors.
    fn cast(
        &self,
        expr: &ast::Expr,
        data_type: &ast::DataType,
        e: &ast::Expr,
        scope: &mut Scope,
    ) -> Result<Expr> {
        let x = self.bind(expr, scope)?;
        let to = self.session_type(sql_type(data_type, e)?);
        let site = CastSite {
            type_text: data_type.to_string(),
            precision: decimal_precision(data_type),
            at: match self.text.cast_keyword(expr) {
                s if s.is_empty() => at(e.span()),
                s => s,
            },
        };
        let mut from = self.ty(&x, scope);
        // An integer literal that fits INT is PostgreSQL's int4, which
        // casts to BOOLEAN (`CAST(0 AS BOOLEAN)`).
        let mut x = x;
        if to == A::Boolean
            && from == A::Int64
            && let Expr::Literal(a) = &x
            && let Ok(c) = crate::query::expr::cast(a, &A::Int32)
        {
            x = super::bind::types::lit(c);
            from = A::Int32;
        }
        check_cast(&from, &to, &site.type_text).map_err(|m| Error::Argument {
            state: "42846",
            message: format!("{m}{}", site.at),
        })?;
        // NUMERIC without a scale keeps every digit in PostgreSQL: the
        // scale the value has, never rounded to an integer.
        let to = if unconstrained_numeric(data_type) {
            match (&from, &x) {
                (A::Decimal128(_, s), _) => A::Decimal128(38, *s),
                (A::Float64, _) => A::Float64,
                (A::Utf8, Expr::Literal(a)) if a.is_valid(0) => A::Decimal128(
                    38,
                    text_scale(arrow_array::cast::AsArray::as_string::<i32>(a).value(0)),
                ),
                (A::Utf8, _) => {
                    return Err(Error::Plan(format!(
                        "CAST of TEXT to {} needs a scale to keep the digits after the point: write NUMERIC(38, s){}",
                        site.type_text, site.at
                    )));
                }
                _ => to,
            }
        } else {
            to
        };
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

    /// `left op ANY|ALL (right)` of an `ARRAY[...]` constructor (`any`:
    /// ANY/SOME, else ALL).
    fn quantified(
        &self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        any: bool,
        scope: &mut Scope,
        e: &ast::Expr,
    ) -> Result<Expr> {
        let mut inner = right;
        while let ast::Expr::Nested(x) = inner {
            inner = x;
        }
        let ast::Expr::Array(array) = inner else {
            let which = if any { "ANY" } else { "ALL" };
            return Err(unsupported(
                &format!("{which} of anything but an ARRAY[...] constructor"),
                e,
            ));
        };
        if array.elem.is_empty() {
            return Err(Error::Plan(format!(
                "cannot determine type of empty array{}",
                at(e.span())
            )));
        }
        match (op, any) {
            (ast::BinaryOperator::Eq, true) => {
                return self.in_list(left, &array.elem, false, scope);
            }
            (ast::BinaryOperator::NotEq, false) => {
                return self.in_list(left, &array.elem, true, scope);
            }
            (
                ast::BinaryOperator::Eq
                | ast::BinaryOperator::NotEq
                | ast::BinaryOperator::Lt
                | ast::BinaryOperator::LtEq
                | ast::BinaryOperator::Gt
                | ast::BinaryOperator::GtEq,
                _,
            ) => {}
            _ => {
                return Err(unsupported(
                    &format!("the operator {op} with ANY or ALL"),
                    e,
                ));
            }
        }
        let join = if any {
            ast::BinaryOperator::Or
        } else {
            ast::BinaryOperator::And
        };
        let mut out: Option<ast::Expr> = None;
        for item in &array.elem {
            let one = ast::Expr::BinaryOp {
                left: Box::new(left.clone()),
                op: op.clone(),
                right: Box::new(item.clone()),
            };
            out = Some(match out {
                None => one,
                Some(acc) => ast::Expr::BinaryOp {
                    left: Box::new(acc),
                    op: join.clone(),
                    right: Box::new(one),
                },
            });
        }
        match out {
            Some(x) => self.bind(&ast::Expr::Nested(Box::new(x)), scope),
            None => Err(Error::Internal("ANY of no element".into())),
        }
    }

    /// `x [NOT] IN (items)`: `x` and every item brought to one type.
    fn in_list(
        &self,
        expr: &ast::Expr,
        list: &[ast::Expr],
        negated: bool,
        scope: &mut Scope,
    ) -> Result<Expr> {
        let x = self.bind(expr, scope)?;
        // Intervals: `x = a OR x = b …`, each compared as PostgreSQL
        // compares them (the same three-valued answer as IN's).
        if self.ty(&x, scope) == interval::TYPE {
            let mut any: Option<Expr> = None;
            for item in list {
                let it = self.bind(item, scope)?;
                let eq = self.binary(BinOp::Eq, x.clone(), it, scope, item)?;
                any = Some(match any {
                    None => eq,
                    Some(a) => Expr::Binary {
                        op: BinOp::Or,
                        left: Box::new(a),
                        right: Box::new(eq),
                    },
                });
            }
            let any = any.ok_or_else(|| plan_err("IN needs a list".into(), expr))?;
            return Ok(if negated {
                Expr::Not(Box::new(any))
            } else {
                any
            });
        }
        if list.len() >= LITERALS_AT_ONCE
            && let Some(e) = self.literal_in_list(&x, list, negated, scope)?
        {
            return Ok(e);
        }
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
        let to = common_type(&xts)
            .ok_or_else(|| plan_err("IN list items of incompatible types".into(), expr))?;
        let xty = self.ty(&x, scope);
        // Literal items cast to the common type once, here: a list of
        // literals is then a set (see `expr::ValueSet`).
        let items = items
            .into_iter()
            .zip(list)
            .map(|(it, node)| {
                let t = self.ty(&it, scope);
                match coerce(it, &t, &to) {
                    c @ Expr::Cast { .. } if matches!(&c, Expr::Cast { expr, .. } if matches!(**expr, Expr::Literal(_))) => {
                        let one = crate::query::exec::empty_input(1)?;
                        match c.eval(&one).map_err(|er| folding_error(er, node))? {
                            crate::query::expr::Value::Scalar(a) => Ok(lit(a)),
                            crate::query::expr::Value::Array(_) => Ok(c),
                        }
                    }
                    c => Ok(c),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Expr::InList {
            expr: Box::new(coerce(x, &xty, &to)),
            list: items,
            negated,
            set: Default::default(),
        })
    }

    /// `x IN (…)` of literals only, bound a type at a time rather than an
    /// item at a time: the items are read straight into one Arrow array
    /// a literal type (as [`types::literal`] types each), the items of
    /// one type coerced as the first of them is (`x = item`), then to the
    /// list's common type, by one cast of all of them together; the
    /// answer is one array of values ([`Expr::InValues`]). The same
    /// answer as the item-by-item path (which a 100,000-value list made
    /// cost a tenth of a second); `None` when an item is no plain literal
    /// or anything fails, for that path to bind and to name the first
    /// item at fault.
    fn literal_in_list(
        &self,
        x: &Expr,
        list: &[ast::Expr],
        negated: bool,
        scope: &mut Scope,
    ) -> Result<Option<Expr>> {
        let Some((groups, arrays)) = literal_columns(list) else {
            return Ok(None);
        };
        // Each type's coercion, as `x = first item of the type` does it.
        let mut xts = Vec::new();
        let mut templates = Vec::new();
        for ((_, ix), all) in groups.iter().zip(&arrays) {
            let first = ix[0];
            let it = lit(all.slice(0, 1));
            match self.binary(BinOp::Eq, x.clone(), it, scope, &list[first]) {
                Ok(Expr::Binary { left, right, .. }) => {
                    xts.push(self.ty(&left, scope));
                    templates.push(*right);
                }
                _ => return Ok(None),
            }
        }
        let Some(to) = common_type(&xts) else {
            return Ok(None);
        };
        let xty = self.ty(x, scope);
        let mut cast_groups: Vec<ArrayRef> = Vec::with_capacity(groups.len());
        for (((ty, ix), all), template) in groups.iter().zip(&arrays).zip(templates) {
            // As `x = item` coerced the first item (`coerce` and the
            // comparison of text with dates cast a literal with `cast`; a
            // cast that fails is left to fail at run time: here, to the
            // item-by-item path), then to the list's common type.
            let Expr::Literal(first) = &template else {
                return Ok(None);
            };
            let t = first.data_type();
            let coerced = if t == ty {
                Ok(all.clone())
            } else {
                cast(all, t)
            };
            let cast = coerced.and_then(|c| if *t == to { Ok(c) } else { cast(&c, &to) });
            let Some(cast) = cast.ok().filter(|a| a.len() == ix.len()) else {
                return Ok(None);
            };
            cast_groups.push(cast);
        }
        // One array of the items in the order written.
        let values = if cast_groups.len() == 1 {
            cast_groups.swap_remove(0)
        } else {
            let refs: Vec<&dyn arrow_array::Array> =
                cast_groups.iter().map(|a| a.as_ref()).collect();
            let Ok(all) = arrow_select::concat::concat(&refs) else {
                return Ok(None);
            };
            // The concatenation holds group after group; item i of the
            // list is at place[i] in it.
            let mut place = vec![0u32; list.len()];
            let mut k = 0u32;
            for (_, ix) in &groups {
                for &i in ix {
                    place[i] = k;
                    k += 1;
                }
            }
            let Ok(v) =
                arrow_select::take::take(&all, &arrow_array::UInt32Array::from(place), None)
            else {
                return Ok(None);
            };
            v
        };
        Ok(Some(Expr::InValues {
            expr: Box::new(coerce(x.clone(), &xty, &to)),
            values,
            negated,
            set: Default::default(),
        }))
    }

    /// A chain `a OR b OR …` (or of AND), however long, bound link by
    /// link without recursing along it, then built as a balanced tree:
    /// the bound expression nests about log2 of its length deep. AND
    /// and OR are associative in SQL's three-valued logic, so the
    /// grouping changes no answer.
    fn chain(&self, e: &ast::Expr, op: &ast::BinaryOperator, scope: &mut Scope) -> Result<Expr> {
        // The operands, left to right: the parser builds the chain
        // left-deep, so follow the left spine and take each right operand.
        let mut operands: Vec<&ast::Expr> = Vec::new();
        let mut node = e;
        loop {
            match node {
                ast::Expr::BinaryOp { left, op: o, right } if o == op => {
                    operands.push(right);
                    node = left;
                }
                _ => {
                    operands.push(node);
                    break;
                }
            }
        }
        operands.reverse();
        let bop = if *op == ast::BinaryOperator::And {
            BinOp::And
        } else {
            BinOp::Or
        };
        // Each bound operand with its node, which errors name (the whole
        // chain's place would take a walk of all of it to find).
        let mut bound = Vec::with_capacity(operands.len());
        for o in &operands {
            bound.push((self.bind(o, scope)?, *o));
        }
        // `x = a OR x = b OR …` (three or more, every one the same x
        // against a literal): `x IN (a, b, …)`, a set lookup a row instead
        // of a comparison a term (the same answer, NULLs included).
        if bop == BinOp::Or
            && bound.len() >= 3
            && let Some(x) = same_column_equalities(&bound)
        {
            let list = bound
                .into_iter()
                .filter_map(|(e, _)| match e {
                    Expr::Binary { right, .. } => Some(*right),
                    _ => None,
                })
                .collect();
            return Ok(Expr::InList {
                expr: Box::new(x),
                list,
                negated: false,
                set: Default::default(),
            });
        }
        // Pairs joined level by level: (a b)(c d) then ((a b)(c d)) …
        while bound.len() > 1 {
            let mut next = Vec::with_capacity(bound.len().div_ceil(2));
            let mut it = bound.into_iter();
            while let Some((l, node)) = it.next() {
                match it.next() {
                    Some((r, _)) => {
                        next.push((fold(self.binary(bop, l, r, scope, node)?, node)?, node))
                    }
                    None => next.push((l, node)),
                }
            }
            bound = next;
        }
        bound
            .pop()
            .map(|(x, _)| x)
            .ok_or_else(|| Error::Internal("an empty AND/OR chain".into()))
    }

    /// CASE: the conditions boolean (or compared with the operand), the
    /// results brought to one type.
    fn case(
        &self,
        operand: Option<&ast::Expr>,
        conditions: &[ast::CaseWhen],
        else_result: Option<&ast::Expr>,
        e: &ast::Expr,
        scope: &mut Scope,
    ) -> Result<Expr> {
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
        let mut types: Vec<A> = results.iter().map(|r| self.ty(r, scope)).collect();
        let written: Vec<Option<&ast::Expr>> = conditions
            .iter()
            .map(|cw| Some(&cw.result))
            .chain([else_result])
            .collect();
        literals_as_the_others(&mut results, &mut types, &written, e)?;
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

    /// SUBSTRING(x FROM start FOR len) of TEXT, with integer positions.
    pub(super) fn substring(
        &self,
        expr: &ast::Expr,
        from: Option<&ast::Expr>,
        len: Option<&ast::Expr>,
        e: &ast::Expr,
        scope: &mut Scope,
    ) -> Result<Expr> {
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
        let start = match from {
            Some(f) => int_arg(f, scope)?,
            None => lit(Arc::new(Int64Array::from(vec![1]))),
        };
        let len = match len {
            Some(f) => Some(Box::new(int_arg(f, scope)?)),
            None => None,
        };
        Ok(Expr::Substring {
            expr: Box::new(x),
            start: Box::new(start),
            len,
        })
    }

    /// DATE ± an INTERVAL constant of whole days: the date moved by date
    /// arithmetic (months first, the day clamped to the month's end, then
    /// days, as PostgreSQL adds them), as a TIMESTAMP (its midnight, as
    /// PostgreSQL answers); of a literal date, a literal, which a DATE
    /// compares with as a date (`d < DATE '1998-12-01' - INTERVAL '90'
    /// DAY` stays a date comparison a zone map reads: see `binary`).
    fn date_plus(&self, l: Expr, op: BinOp, iv: Interval, node: &ast::Expr) -> Result<Expr> {
        let iv = if op == BinOp::Sub {
            iv.checked_neg()
                .ok_or_else(|| plan_err(interval::out_of_range(), node))?
        } else {
            iv
        };
        let mut e = l;
        if iv.months != 0 {
            e = Expr::AddMonths {
                expr: Box::new(e),
                months: iv.months,
            };
        }
        if iv.days != 0 {
            e = Expr::AddDays {
                expr: Box::new(e),
                days: iv.days,
            };
        }
        // Constant-fold literal dates.
        let literal = match &e {
            Expr::AddDays { expr, .. } | Expr::AddMonths { expr, .. } => match expr.as_ref() {
                Expr::Literal(_) => true,
                Expr::AddMonths { expr, .. } => matches!(expr.as_ref(), Expr::Literal(_)),
                _ => false,
            },
            _ => false,
        };
        let stamp = A::Timestamp(arrow_schema::TimeUnit::Microsecond, None);
        if literal {
            let empty = crate::query::exec::empty_input(1)?;
            if let crate::query::expr::Value::Scalar(a) = e
                .eval(&empty)
                .map_err(|er| plan_err(er.to_string(), node))?
            {
                return Ok(coerce(lit(a), &A::Date32, &stamp));
            }
        }
        Ok(coerce(e, &A::Date32, &stamp))
    }

    /// Arithmetic with an INTERVAL, and TIMESTAMP - TIMESTAMP (see
    /// [`interval::Op`]).
    fn interval_arith(
        &self,
        op: BinOp,
        (l, lt): (Expr, A),
        (r, rt): (Expr, A),
        node: &ast::Expr,
    ) -> Result<Expr> {
        use crate::query::func::Func;
        use interval::Op;
        let iv = |t: &A| *t == interval::TYPE || *t == A::Null;
        let time = |t: &A| matches!(t, A::Date32 | A::Timestamp(..));
        let stamp = |t: &A| match t {
            A::Date32 => A::Timestamp(arrow_schema::TimeUnit::Microsecond, None),
            t => t.clone(),
        };
        let call = |op: Op, args: Vec<Expr>, ty: A| {
            fold(
                Expr::Call {
                    func: Func::Interval(op),
                    args,
                    ty,
                },
                node,
            )
        };
        let mismatch = || operator_mismatch(op, &lt, &rt, node);
        let sub = op == BinOp::Sub;
        let clock = |t: &A| matches!(t, A::Time64(_));
        let stamp_type = A::Timestamp(arrow_schema::TimeUnit::Microsecond, None);
        match op {
            // A TIME added to a timestamp, or taken from a timestamp, a
            // date or an interval, is the interval since midnight
            // (PostgreSQL's implicit cast).
            BinOp::Add | BinOp::Sub
                if clock(&rt)
                    && (matches!(lt, A::Timestamp(..))
                        || (sub && (lt == A::Date32 || iv(&lt)))) =>
            {
                let r = coerce(r, &rt, &interval::TYPE);
                self.interval_arith(op, (l, lt.clone()), (r, interval::TYPE), node)
            }
            BinOp::Add if clock(&lt) && matches!(rt, A::Timestamp(..)) => {
                let l = coerce(l, &lt, &interval::TYPE);
                self.interval_arith(op, (r, rt.clone()), (l, interval::TYPE), node)
            }
            // TIME ± INTERVAL, TIME - TIME, DATE + TIME: PostgreSQL's.
            BinOp::Add | BinOp::Sub if clock(&lt) && iv(&rt) => {
                let args = vec![l, coerce(r, &rt, &interval::TYPE)];
                call(Op::PlusTime { sub }, args, lt.clone())
            }
            BinOp::Add if iv(&lt) && clock(&rt) => {
                self.interval_arith(op, (r, rt.clone()), (l, lt.clone()), node)
            }
            BinOp::Sub if clock(&lt) && clock(&rt) => {
                call(Op::TimeDiff, vec![l, r], interval::TYPE)
            }
            BinOp::Add if lt == A::Date32 && clock(&rt) => {
                call(Op::DatePlusTime, vec![l, r], stamp_type)
            }
            BinOp::Add if clock(&lt) && rt == A::Date32 => {
                call(Op::DatePlusTime, vec![r, l], stamp_type)
            }
            BinOp::Add | BinOp::Sub if time(&lt) && iv(&rt) => {
                if lt == A::Date32
                    && let Expr::Literal(a) = &r
                    && let Some(v) = interval::values(a).first().copied().flatten()
                    && v.micros == 0
                {
                    return self.date_plus(l, op, v, node);
                }
                let to = stamp(&lt);
                let args = vec![coerce(l, &lt, &to), coerce(r, &rt, &interval::TYPE)];
                call(Op::PlusTimestamp { sub }, args, to)
            }
            BinOp::Add if iv(&lt) && time(&rt) => {
                self.interval_arith(op, (r, rt.clone()), (l, lt.clone()), node)
            }
            BinOp::Sub if time(&lt) && time(&rt) => {
                let to = common_type(&[stamp(&lt), stamp(&rt)]).ok_or_else(mismatch)?;
                let args = vec![coerce(l, &lt, &to), coerce(r, &rt, &to)];
                call(Op::TimestampDiff, args, interval::TYPE)
            }
            BinOp::Add | BinOp::Sub if iv(&lt) && iv(&rt) => {
                let args = vec![
                    coerce(l, &lt, &interval::TYPE),
                    coerce(r, &rt, &interval::TYPE),
                ];
                call(Op::Add { sub }, args, interval::TYPE)
            }
            BinOp::Mul | BinOp::Div if iv(&lt) && (is_numeric(&rt) || rt == A::Null) => {
                let args = vec![coerce(l, &lt, &interval::TYPE), coerce(r, &rt, &A::Float64)];
                call(
                    Op::Scale {
                        divide: op == BinOp::Div,
                    },
                    args,
                    interval::TYPE,
                )
            }
            BinOp::Mul if is_numeric(&lt) && iv(&rt) => {
                self.interval_arith(op, (r, rt.clone()), (l, lt.clone()), node)
            }
            _ => Err(mismatch()),
        }
    }

    /// A comparison of INTERVALs (a quoted literal on either side read
    /// as one), by the number PostgreSQL compares: a month as 30 days, a
    /// day as 24 hours (`INTERVAL '1 mon' = INTERVAL '30 days'`).
    fn interval_compare(
        &self,
        op: BinOp,
        (l, lt): (Expr, A),
        (r, rt): (Expr, A),
        node: &ast::Expr,
    ) -> Result<Expr> {
        let as_interval = |x: Expr, t: A| -> Result<(Expr, A)> {
            match &x {
                Expr::Literal(a) if t == A::Utf8 => {
                    let c =
                        cast(a, &interval::TYPE).map_err(|er| plan_err(er.to_string(), node))?;
                    Ok((lit(c), interval::TYPE))
                }
                _ => Ok((x, t)),
            }
        };
        let (l, lt) = as_interval(l, lt)?;
        let (r, rt) = as_interval(r, rt)?;
        for t in [&lt, &rt] {
            if *t != interval::TYPE && *t != A::Null {
                return Err(plan_err(
                    format!("cannot compare {} with {}", type_name(&lt), type_name(&rt)),
                    node,
                ));
            }
        }
        let key = |x: Expr, t: &A| Expr::Call {
            func: crate::query::func::Func::Interval(interval::Op::Key),
            args: vec![coerce(x, t, &interval::TYPE)],
            ty: A::Decimal128(38, 0),
        };
        fold(
            Expr::Binary {
                op,
                left: Box::new(key(l, &lt)),
                right: Box::new(key(r, &rt)),
            },
            node,
        )
    }

    /// `(SELECT …)` as a value: planned as a query of its own, run once
    /// before the query that holds it.
    fn scalar_subquery(&self, q: &ast::Query, e: &ast::Expr) -> Result<Expr> {
        let Some(sub) = self.sub else {
            return Err(unsupported("a subquery here", e));
        };
        let plan = sub.plan_subquery(q).map_err(|er| match er.innermost() {
            Error::UndefinedColumn(_) | Error::UndefinedTable(_) => Error::Unsupported(format!(
                "a subquery that reads the outer query is supported only as an EXISTS, IN or comparison condition AND-ed in WHERE ({er}){}",
                at(e.span())
            )),
            _ => er,
        })?;
        if plan.visible != 1 {
            return Err(plan_err("subquery must return only one column".into(), e));
        }
        let data_type = crate::query::exec::result_schema(&plan)
            .field(0)
            .data_type()
            .clone();
        self.subqueries.set(self.subqueries.get() + 1);
        Ok(Expr::Subquery(Arc::new(
            crate::query::expr::ScalarSubquery {
                plan,
                list: false,
                data_type,
                text: q.to_string(),
            },
        )))
    }

    /// `x [NOT] IN (SELECT …)` of an uncorrelated subquery where it is
    /// not an AND-ed condition of WHERE (under OR, in the select list):
    /// the subquery runs once before the query, and its rows become the
    /// list of an `IN` of values, with SQL's NULL rules.
    fn in_subquery(
        &self,
        expr: &ast::Expr,
        q: &ast::Query,
        negated: bool,
        e: &ast::Expr,
        scope: &mut Scope,
    ) -> Result<Expr> {
        let refused = || {
            unsupported(
                "a correlated IN (SELECT …) other than as an AND-ed condition of WHERE",
                e,
            )
        };
        let Some(sub) = self.sub else {
            return Err(refused());
        };
        let x = self.bind(expr, scope)?;
        let plan = sub.plan_subquery(q).map_err(|er| match er.innermost() {
            Error::UndefinedColumn(_) | Error::UndefinedTable(_) => refused(),
            _ => er,
        })?;
        if plan.visible != 1 {
            return Err(plan_err("subquery has too many columns".into(), e));
        }
        let data_type = crate::query::exec::result_schema(&plan)
            .field(0)
            .data_type()
            .clone();
        // Both sides brought to one type as `x = value` would be.
        let probe = lit(new_null_array(&data_type, 1));
        let (x, to) = match self.binary(BinOp::Eq, x, probe, scope, e)? {
            Expr::Binary { left, right, .. } => {
                let to = self.ty(&right, scope);
                (*left, to)
            }
            _ => return Err(Error::Internal("IN (SELECT …) coercion".into())),
        };
        self.subqueries.set(self.subqueries.get() + 1);
        Ok(Expr::InList {
            expr: Box::new(x),
            list: vec![Expr::Subquery(Arc::new(
                crate::query::expr::ScalarSubquery {
                    plan,
                    list: true,
                    data_type: to,
                    text: q.to_string(),
                },
            ))],
            negated,
            set: Default::default(),
        })
    }

    /// `l = r` over two columns (a `USING` / `NATURAL` join's equality).
    pub(crate) fn column_equality(&self, l: usize, r: usize, node: &ast::Expr) -> Result<Expr> {
        let name = |i: usize| match &self.rels {
            Some(r) => format!("{}.{}", r.names[r.owner[i]], self.columns[i].0),
            None => self.columns[i].0.clone(),
        };
        let col = |i: usize| {
            self.in_zone(Expr::Column {
                index: i,
                name: name(i),
            })
        };
        self.binary(
            BinOp::Eq,
            col(l),
            col(r),
            &Scope::Row { clause: "USING" },
            node,
        )
    }

    fn binary(&self, op: BinOp, l: Expr, r: Expr, scope: &Scope, node: &ast::Expr) -> Result<Expr> {
        let lt = self.ty(&l, scope);
        let rt = self.ty(&r, scope);
        let mismatch = || operator_mismatch(op, &lt, &rt, node);
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
            _ if op.is_arithmetic()
                && (lt == interval::TYPE
                    || rt == interval::TYPE
                    || matches!(
                        (&lt, &rt, op),
                        (A::Time64(_), A::Time64(_), BinOp::Sub)
                            | (A::Date32, A::Time64(_), _)
                            | (A::Timestamp(..), A::Time64(_), _)
                            | (A::Time64(_), A::Date32 | A::Timestamp(..), BinOp::Add)
                    )
                    || (op == BinOp::Sub
                        && matches!(lt, A::Date32 | A::Timestamp(..))
                        && matches!(rt, A::Timestamp(..))
                        || (op == BinOp::Sub
                            && matches!(lt, A::Timestamp(..))
                            && rt == A::Date32))) =>
            {
                self.interval_arith(op, (l, lt), (r, rt), node)
            }
            // DATE ± days and DATE - DATE, as PostgreSQL has them.
            BinOp::Add | BinOp::Sub
                if matches!(
                    (&lt, &rt, op),
                    (A::Date32, A::Int32 | A::Int64, _)
                        | (A::Int32 | A::Int64, A::Date32, BinOp::Add)
                        | (A::Date32, A::Date32, BinOp::Sub)
                ) =>
            {
                use crate::query::func::Func;
                if lt == A::Date32 && rt == A::Date32 {
                    return fold(
                        self.call(Func::DateMinusDate, vec![l, r], vec![lt, rt], node)?,
                        node,
                    );
                }
                let (d, n, nt) = if lt == A::Date32 {
                    (l, r, rt)
                } else {
                    (r, l, lt)
                };
                let n = coerce(n, &nt, &A::Int64);
                let n = if op == BinOp::Sub {
                    Expr::Neg(Box::new(n))
                } else {
                    n
                };
                fold(
                    self.call(
                        Func::DatePlusDays,
                        vec![d, n],
                        vec![A::Date32, A::Int64],
                        node,
                    )?,
                    node,
                )
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
                    (_, A::Date32 | A::Time64(_) | A::Timestamp(..), Expr::Literal(a), A::Utf8) => {
                        let c = cast(a, &lt).map_err(|er| plan_err(er.to_string(), node))?;
                        (l.clone(), lt.clone(), lit(c), lt.clone())
                    }
                    (Expr::Literal(a), A::Utf8, _, A::Date32 | A::Time64(_) | A::Timestamp(..)) => {
                        let c = cast(a, &rt).map_err(|er| plan_err(er.to_string(), node))?;
                        (lit(c), rt.clone(), r.clone(), rt.clone())
                    }
                    // A quoted literal compared with a number or a boolean
                    // is read as one, as PostgreSQL reads an unknown-typed
                    // literal: `i = '7'` (an INT column), `'7.5'` against
                    // it an error.
                    (_, t, Expr::Literal(a), A::Utf8) if is_numeric(t) || *t == A::Boolean => {
                        let to = unknown_as(a, t);
                        let c = cast(a, &to).map_err(|er| plan_err(er.to_string(), node))?;
                        (l.clone(), lt.clone(), lit(c), to)
                    }
                    (Expr::Literal(a), A::Utf8, _, t) if is_numeric(t) || *t == A::Boolean => {
                        let to = unknown_as(a, t);
                        let c = cast(a, &to).map_err(|er| plan_err(er.to_string(), node))?;
                        (lit(c), to, r.clone(), rt.clone())
                    }
                    _ => (l, lt, r, rt),
                };
                if lt == interval::TYPE || rt == interval::TYPE {
                    return self.interval_compare(op, (l, lt), (r, rt), node);
                }
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
                // A DATE and a TIMESTAMP constant at midnight compare as
                // dates (`d < DATE '1995-01-01' + INTERVAL '1' MONTH`):
                // the same answer, and a comparison of the stored dates.
                let midnight = |x: &Expr| match x {
                    Expr::Literal(a) if a.data_type() == &target && a.is_valid(0) => {
                        use arrow_array::cast::AsArray;
                        a.as_primitive::<arrow_array::types::TimestampMicrosecondType>()
                            .value(0)
                            .rem_euclid(86_400_000_000)
                            == 0
                    }
                    _ => false,
                };
                let target = match (&lt, &rt, &target) {
                    (A::Date32, _, A::Timestamp(_, None)) if midnight(&r) => A::Date32,
                    (_, A::Date32, A::Timestamp(_, None)) if midnight(&l) => A::Date32,
                    _ => target,
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

/// The type a quoted literal `a` compared with a value of type `t` is read
/// as: `t`, but for a DECIMAL the literal's own places (`d = '12.3450'`
/// compares 12.345 with 12.3450 and is true, as in PostgreSQL).
pub(super) fn unknown_as(a: &ArrayRef, t: &A) -> A {
    use arrow_array::cast::AsArray;
    match t {
        A::Decimal128(..) if a.data_type() == &A::Utf8 && a.is_valid(0) => {
            let text = a.as_string::<i32>().value(0).trim();
            let places = text.split_once('.').map_or(0, |(_, f)| f.len()).min(38);
            A::Decimal128(38, places as i8)
        }
        other => other.clone(),
    }
}

/// "operator + cannot be applied to INTERVAL and BIGINT".
fn operator_mismatch(op: BinOp, lt: &A, rt: &A, node: &ast::Expr) -> Error {
    plan_err(
        format!(
            "operator {} cannot be applied to {} and {}",
            op_text(op),
            type_name(lt),
            type_name(rt)
        ),
        node,
    )
}

/// `INTERVAL '…' [unit [TO unit]]` as a constant: the text read as
/// PostgreSQL reads it (see [`interval::parse`]); a bare number is of the
/// last unit named, and the fields below it are dropped.
fn interval_literal(iv: &ast::Interval, e: &ast::Expr) -> Result<Expr> {
    let number = |v: &ast::Value| match v {
        ast::Value::SingleQuotedString(s) => Some(s.clone()),
        ast::Value::Number(n, _) => Some(n.clone()),
        _ => None,
    };
    let text = match iv.value.as_ref() {
        ast::Expr::Value(v) => number(&v.value),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            ast::Expr::Value(v) => number(&v.value).map(|n| format!("-{n}")),
            _ => None,
        },
        _ => None,
    }
    .ok_or_else(|| {
        unsupported(
            "an INTERVAL of an expression (write INTERVAL '5 days', or n * INTERVAL '1 day')",
            e,
        )
    })?;
    let unit = |f: &ast::DateTimeField| {
        crate::query::func::Unit::of(&f.to_string())
            .ok_or_else(|| unsupported(&format!("INTERVAL … {f}"), e))
    };
    // PostgreSQL reads `'1 2' DAY TO HOUR` by the range's own rules, and
    // rounds to a precision: neither is here, so both are refused.
    if iv.last_field.is_some()
        || iv.leading_precision.is_some()
        || iv.fractional_seconds_precision.is_some()
    {
        return Err(unsupported(
            "an INTERVAL field range (… TO …) or precision (write INTERVAL '1 day 2 hours')",
            e,
        ));
    }
    let field = match &iv.leading_field {
        Some(f) => Some(unit(f)?),
        None => None,
    };
    let v = interval::parse(&text, field).map_err(|m| Error::Argument {
        state: "22007",
        message: format!("{m}{}", at(e.span())),
    })?;
    Ok(lit(interval::array([Some(v)])?))
}

/// Evaluates an operator over two literals once, at plan time.
fn fold(e: Expr, node: &ast::Expr) -> Result<Expr> {
    let literals = match &e {
        Expr::Neg(x) => matches!(**x, Expr::Literal(_)),
        Expr::Binary { left, right, .. } => matches!(
            (left.as_ref(), right.as_ref()),
            (Expr::Literal(_), Expr::Literal(_))
        ),
        // A function of literals (a date a zone map can test:
        // `d > current_date - 30`); not json_build_object, which an outer
        // one must see as JSON (folded, it would be text).
        Expr::Call {
            func: super::func::Func::JsonBuildObject { .. },
            ..
        } => false,
        Expr::Call { args, .. } => args.iter().all(|a| match a {
            Expr::Literal(_) => true,
            Expr::Neg(x) => matches!(**x, Expr::Literal(_)),
            _ => false,
        }),
        _ => false,
    };
    if !literals {
        return Ok(e);
    }
    let one = crate::query::exec::empty_input(1)?;
    match e.eval(&one).map_err(|er| folding_error(er, node))? {
        crate::query::expr::Value::Scalar(a) => Ok(lit(a)),
        crate::query::expr::Value::Array(_) => Ok(e),
    }
}

/// The items of a list of plain literals (numbers, signed or not,
/// strings, booleans, NULL) by literal type, as [`types::literal`] types
/// each: the types in order of first appearance with the places of their
/// items, and one array of each type's items in order. `None` when an
/// item is anything else or does not convert (the item-by-item path then
/// names it).
#[allow(clippy::type_complexity)]
fn literal_columns(list: &[ast::Expr]) -> Option<(Vec<(A, Vec<usize>)>, Vec<ArrayRef>)> {
    enum One<'a> {
        Int(i64),
        Dec(i128),
        Dbl(f64),
        Text(&'a str),
        Bool(bool),
        Null,
    }
    let mut groups: Vec<(A, Vec<usize>)> = Vec::new();
    let mut items = Vec::with_capacity(list.len());
    for (i, e) in list.iter().enumerate() {
        let (neg, v) = match e {
            ast::Expr::Value(v) => (false, &v.value),
            ast::Expr::UnaryOp { op, expr } => match (op, &**expr) {
                (ast::UnaryOperator::Minus, ast::Expr::Value(v)) => (true, &v.value),
                (ast::UnaryOperator::Plus, ast::Expr::Value(v)) => (false, &v.value),
                _ => return None,
            },
            _ => return None,
        };
        let signed = matches!(e, ast::Expr::UnaryOp { .. });
        let (ty, one) = match v {
            ast::Value::Number(n, _) => {
                if let Ok(v) = n.parse::<i64>() {
                    (A::Int64, One::Int(if neg { v.checked_neg()? } else { v }))
                } else if !n.contains(['e', 'E']) {
                    let scale = n.split_once('.').map_or(0, |(_, f)| f.len());
                    if scale > 38 {
                        return None;
                    }
                    let digits: String = n.chars().filter(|c| c.is_ascii_digit()).collect();
                    let v: i128 = digits.parse().ok()?;
                    (
                        A::Decimal128(38, scale as i8),
                        One::Dec(if neg { v.checked_neg()? } else { v }),
                    )
                } else {
                    let f = crate::parse::value::parse_f64(n.as_bytes()).ok()?;
                    (A::Float64, One::Dbl(if neg { -f } else { f }))
                }
            }
            ast::Value::SingleQuotedString(t) if !signed => (A::Utf8, One::Text(t)),
            ast::Value::Boolean(b) if !signed => (A::Boolean, One::Bool(*b)),
            ast::Value::Null if !signed => (A::Null, One::Null),
            _ => return None,
        };
        match groups.iter_mut().find(|(t, _)| *t == ty) {
            Some((_, ix)) => ix.push(i),
            None => groups.push((ty, vec![i])),
        }
        items.push(one);
    }
    let arrays = groups
        .iter()
        .map(|(ty, ix)| -> Option<ArrayRef> {
            let each = ix.iter().map(|&i| &items[i]);
            Some(match ty {
                A::Int64 => Arc::new(arrow_array::Int64Array::from_iter_values(each.map(
                    |o| match o {
                        One::Int(v) => *v,
                        _ => 0,
                    },
                ))),
                A::Decimal128(_, scale) => Arc::new(
                    arrow_array::Decimal128Array::from_iter_values(each.map(|o| match o {
                        One::Dec(v) => *v,
                        _ => 0,
                    }))
                    .with_precision_and_scale(38, *scale)
                    .ok()?,
                ),
                A::Float64 => Arc::new(arrow_array::Float64Array::from_iter_values(each.map(
                    |o| match o {
                        One::Dbl(v) => *v,
                        _ => 0.0,
                    },
                ))),
                A::Utf8 => Arc::new(arrow_array::StringArray::from_iter_values(each.map(
                    |o| match o {
                        One::Text(t) => *t,
                        _ => "",
                    },
                ))),
                A::Boolean => Arc::new(arrow_array::BooleanArray::from_iter(each.map(|o| {
                    Some(match o {
                        One::Bool(b) => *b,
                        _ => false,
                    })
                }))),
                _ => arrow_array::new_null_array(&A::Null, ix.len()),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some((groups, arrays))
}

/// `IN` lists of at least this many items try [`Binder::literal_in_list`].
const LITERALS_AT_ONCE: usize = 8;

/// An error of evaluating literals while binding: a division by zero or
/// an overflow keeps its kind (and SQLSTATE: `SELECT 1/0` is 22012, as
/// the same division over a column is), and so does a function's
/// argument error (`sqrt(-1)`: 2201F), saying where; others are
/// planning errors there.
fn folding_error(er: Error, node: &ast::Expr) -> Error {
    let place = at(node.span());
    match er {
        Error::DivisionByZero => Error::DivisionByZeroAt(place),
        Error::OutOfRange(m) => Error::OutOfRange(format!("{m}{place}")),
        Error::Exec(m) => Error::Exec(format!("{m}{place}")),
        Error::Argument { state, message } => Error::Argument {
            state,
            message: format!("{message}{place}"),
        },
        other => plan_err(other.to_string(), node),
    }
}

/// An operator as type errors name it.
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

#[cfg(test)]
mod tests {
    use sqlparser::dialect::GenericDialect;
    use sqlparser::parser::Parser;

    use super::*;

    fn sql(e: &str) -> ast::Expr {
        Parser::new(&GenericDialect {})
            .try_with_sql(e)
            .and_then(|mut p| p.parse_expr())
            .expect("parses")
    }

    fn columns() -> Vec<(String, A)> {
        vec![("a".into(), A::Int32), ("s".into(), A::Utf8)]
    }

    fn bind_row(e: &str) -> Result<Expr> {
        let cols = columns();
        let b = Binder::new(Some("t".into()), None, &cols, Text::new(""));
        b.bind(&sql(e), &mut Scope::Row { clause: "WHERE" })
    }

    #[test]
    fn implicit_conversions_become_casts_and_literals_fold() {
        let e = bind_row("a + 1").unwrap();
        assert_eq!(e.to_string(), "(CAST(a AS BIGINT) + 1)");
        assert_eq!(e.data_type(&[A::Int32, A::Utf8]), A::Int64);
        assert_eq!(bind_row("1 + 2 * 3").unwrap().to_string(), "7");
        assert_eq!(
            bind_row("upper(s) = 'X'").unwrap().to_string(),
            "(UPPER(s) = 'X')"
        );
    }

    #[test]
    fn errors_name_the_column_type_and_clause() {
        let msg = |e: &str| bind_row(e).unwrap_err().to_string();
        assert!(msg("b").contains(r#"no column named "b" in table t"#));
        assert!(msg("x.a").contains(r#"missing FROM-clause entry for table "x""#));
        assert!(msg("s + 1").contains("operator + cannot be applied to TEXT and BIGINT"));
        assert!(msg("sum(a)").contains("aggregate functions are not allowed in WHERE"));
        assert!(msg("nosuch(a)").contains("unknown function NOSUCH"));
    }

    /// A grouping by `a` that records the aggregate calls it is handed.
    struct ByA(Vec<String>);

    impl Grouping for ByA {
        fn aggregate(&mut self, _: &Binder, f: &ast::Function, _: &ast::Expr) -> Result<Expr> {
            self.0.push(f.to_string());
            Ok(Expr::Column {
                index: self.0.len(),
                name: f.to_string(),
            })
        }

        fn grouped(&self, _: &ast::Expr, row: &Expr) -> Result<Option<Expr>> {
            Ok((row.to_string() == "a").then(|| Expr::Column {
                index: 0,
                name: "a".into(),
            }))
        }

        fn types(&self, _: &[A]) -> Vec<A> {
            let mut t = vec![A::Int32];
            t.extend(self.0.iter().map(|_| A::Int64));
            t
        }
    }

    #[test]
    fn after_group_by_aggregates_and_keys_go_to_the_grouping() {
        let cols = columns();
        let b = Binder::new(Some("t".into()), None, &cols, Text::new(""));
        let mut g = ByA(Vec::new());
        let e = b
            .bind(&sql("a + count(*)"), &mut Scope::Grouped(&mut g))
            .unwrap();
        assert_eq!(g.0, ["count(*)"]);
        assert_eq!(e.to_string(), "(CAST(a AS BIGINT) + count(*))");
        let Expr::Binary { left, right, .. } = e else {
            panic!("not a binary expression")
        };
        assert!(
            matches!(*left, Expr::Cast { ref expr, .. } if matches!(**expr, Expr::Column { index: 0, .. }))
        );
        assert!(matches!(*right, Expr::Column { index: 1, .. }));
    }
}
