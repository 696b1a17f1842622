//! Window functions while a query is planned: `f(…) OVER (PARTITION BY …
//! ORDER BY … frame)` in the select list and ORDER BY.
//!
//! For: binding a window call ([`Collector`], the binder's
//! [`Windowing`]): its arguments, PARTITION BY and ORDER BY become columns
//! of the rows the query makes before its windows ("base" columns: a
//! projection, or the select list of a grouping), its frame is checked,
//! and the call stands as [`Expr::Window`] until [`Collector::split`]
//! makes it a column of the window operator's output; [`wrap`] puts the
//! window operator between the query's rows and its select list, ORDER
//! BY and LIMIT. Not for: computing windows ([`crate::query::window`]).
//!
//! The plan of `SELECT a, rank() OVER (PARTITION BY b ORDER BY c) FROM t
//! ORDER BY 2 LIMIT 5`: a projection of the select list and ORDER BY over
//! [`Input::Window`], which computes `rank` over the rows of the plan of
//! `SELECT a, b, c FROM t` (the base columns), then ORDER BY and LIMIT.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use arrow_array::Array;
use arrow_schema::DataType as A;
use sqlparser::ast::{self, Spanned};

use super::{Body, Input, Plan, SortKey, sort_key};
use crate::error::{Error, Result};
use crate::query::agg::{AggCall, AggFunc};
use crate::query::bind::{
    Binder, Scope, Windowing, coerce, common_type, function_name, is_numeric,
};
use crate::query::expr::{Expr, WindowRef, eval_type, type_name};
use crate::query::sql::{at, plan_err, unsupported};

/// A window function.
#[derive(Debug, Clone, PartialEq)]
pub enum WinFunc {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    /// `ntile(n)`: the bucket (1..=n) of the row.
    Ntile(i64),
    /// `lag(x, offset [, default])`: the value `offset` rows before (a
    /// negative offset looks after); `lead` is a lag of `-offset`.
    Lag(i64),
    FirstValue,
    LastValue,
    /// `nth_value(x, n)`: the frame's n-th row's value (n ≥ 1).
    NthValue(i64),
    /// An aggregate over the row's frame.
    Agg(AggFunc),
}

/// How a frame is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    Rows,
    Range,
    Groups,
}

/// One end of a frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    UnboundedPreceding,
    Preceding(Offset),
    CurrentRow,
    Following(Offset),
    UnboundedFollowing,
}

/// A frame offset: rows or peer groups (ROWS, GROUPS), or a distance in
/// the ORDER BY key's values (RANGE): integers and decimals unscaled at
/// the key's scale, doubles as doubles.
#[derive(Debug, Clone, PartialEq)]
pub enum Offset {
    Count(u64),
    Int(i128),
    Float(f64),
}

/// A frame: the rows of its partition a row's aggregate (and
/// first/last/nth value) reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub units: Units,
    pub start: Bound,
    pub end: Bound,
}

impl Frame {
    /// The default: RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW (the
    /// whole partition when there is no ORDER BY: every row is a peer).
    fn default_frame() -> Self {
        Frame {
            units: Units::Range,
            start: Bound::UnboundedPreceding,
            end: Bound::CurrentRow,
        }
    }
}

/// One window call: its function, and base columns it reads.
#[derive(Debug, Clone)]
pub struct WindowCall {
    pub func: WinFunc,
    /// The argument (none for ranks and `count(*)`), then lag/lead's
    /// default.
    pub args: Vec<usize>,
    pub partition: Vec<usize>,
    pub order: Vec<SortKey>,
    pub frame: Frame,
    /// The result's type.
    pub data_type: A,
    /// The call as written (EXPLAIN).
    pub name: String,
}

impl WindowCall {
    /// Whether two calls partition and order their rows alike (one sort
    /// serves both).
    pub fn same_sort(&self, other: &WindowCall) -> bool {
        self.partition == other.partition
            && self.order.len() == other.order.len()
            && self.order.iter().zip(&other.order).all(|(a, b)| {
                a.column == b.column
                    && a.descending == b.descending
                    && a.nulls_first == b.nulls_first
            })
    }
}

/// The window operator: the rows of `input` (its visible columns, the
/// base), then one column per call.
#[derive(Debug, Clone)]
pub struct WindowInput {
    pub input: Plan,
    pub calls: Vec<WindowCall>,
}

/// The windows of a query once its select list and ORDER BY are bound:
/// the calls, and the output columns (select list, then hidden ORDER BY
/// keys) over [base…, one column per call…].
pub(super) struct Windowed {
    pub calls: Vec<WindowCall>,
    pub post: Vec<Expr>,
    pub base_names: Vec<String>,
}

/// What the binder has collected of a query's window calls.
#[derive(Default)]
struct Collected {
    /// Expressions the calls read, bound in the query's scope: the first
    /// base columns.
    base: Vec<Expr>,
    /// Each base expression's identity (its `Debug` form).
    seen: Vec<String>,
    calls: Vec<WindowCall>,
}

impl Collected {
    fn base_column(&mut self, e: Expr) -> usize {
        let id = format!("{e:?}");
        match self.seen.iter().position(|s| *s == id) {
            Some(i) => i,
            None => {
                self.base.push(e);
                self.seen.push(id);
                self.base.len() - 1
            }
        }
    }
}

/// Binds a query's window calls (see the module's documentation).
pub(super) struct Collector<'q> {
    /// `WINDOW name AS (…)`.
    named: &'q [ast::NamedWindowDefinition],
    /// Whether window calls are allowed where the binder is (the select
    /// list and ORDER BY).
    open: Cell<bool>,
    /// Whether the binder is inside a window call's parts.
    inside: Cell<bool>,
    state: RefCell<Collected>,
}

impl<'q> Collector<'q> {
    pub(super) fn new(select: &'q ast::Select) -> Self {
        Collector {
            named: &select.named_window,
            open: Cell::new(false),
            inside: Cell::new(false),
            state: RefCell::new(Collected::default()),
        }
    }

    /// Allows window calls (`true`: while the select list and ORDER BY
    /// are bound) or refuses them.
    pub(super) fn allow(&self, yes: bool) {
        self.open.set(yes);
    }

    /// Splits the output expressions `list` (select list and hidden ORDER
    /// BY keys, over the query's scope, holding window calls): the base
    /// columns, which replace `list` in the query's body, and the output
    /// columns over [base…, calls…]. `None` when no window was called.
    pub(super) fn split(&self, list: &mut Vec<Expr>) -> Option<Windowed> {
        let mut st = self.state.take();
        if st.calls.is_empty() {
            return None;
        }
        let mut post = std::mem::take(list);
        // The columns the output reads beside the windows: base columns.
        for e in &mut post {
            let mut cols = Vec::new();
            columns_of(e, &mut cols);
            let mut map: Vec<(usize, usize)> = Vec::new();
            for (index, name) in cols {
                let b = st.base_column(Expr::Column { index, name });
                map.push((index, b));
            }
            e.remap_columns(&mut |i| {
                map.iter()
                    .find(|(from, _)| *from == i)
                    .map_or(i, |(_, to)| *to)
            });
        }
        let n = st.base.len();
        for e in &mut post {
            place_windows(e, n);
        }
        let base_names: Vec<String> = (0..n).map(|i| format!("w_base{i}")).collect();
        *list = std::mem::take(&mut st.base);
        Some(Windowed {
            calls: st.calls,
            post,
            base_names,
        })
    }
}

/// The columns `e` reads, with their names.
fn columns_of(e: &Expr, out: &mut Vec<(usize, String)>) {
    let mut c = e.clone();
    fn walk(e: &mut Expr, out: &mut Vec<(usize, String)>) {
        if let Expr::Column { index, name } = e {
            out.push((*index, name.clone()));
            return;
        }
        e.children_mut(&mut |c| walk(c, out));
    }
    walk(&mut c, out);
}

/// Each window call of `e` made the column `base + its place` of the
/// window operator's output.
fn place_windows(e: &mut Expr, base: usize) {
    if let Expr::Window(w) = e {
        *e = Expr::Column {
            index: base + w.index,
            name: w.text.clone(),
        };
        return;
    }
    e.children_mut(&mut |c| place_windows(c, base));
}

/// The type a base column has in the rows the window operator reads
/// (what a projection makes of `t`).
fn row_type(t: &A) -> A {
    if *t == A::Null { A::Utf8 } else { eval_type(t) }
}

/// Window errors: PostgreSQL's `windowing_error`.
fn win_err(msg: String, node: &impl Spanned) -> Error {
    Error::Argument {
        state: "42P20",
        message: format!("{msg}{}", at(node.span())),
    }
}

/// Restores `inside` when a window call's parts are bound.
struct Inside<'a>(&'a Cell<bool>);

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl Windowing for Collector<'_> {
    fn window(
        &self,
        binder: &Binder,
        f: &ast::Function,
        node: &ast::Expr,
        scope: &mut Scope,
    ) -> Result<Expr> {
        if self.inside.get() {
            return Err(win_err(
                "window function calls cannot be nested".into(),
                node,
            ));
        }
        match scope {
            Scope::Row { clause: "FILTER" } => {
                return Err(win_err(
                    "window functions are not allowed in FILTER".into(),
                    node,
                ));
            }
            Scope::Row {
                clause: "an aggregate argument",
            } => {
                return Err(plan_err(
                    "aggregate function calls cannot contain window function calls".into(),
                    node,
                ));
            }
            Scope::Row { clause } if !self.open.get() => {
                return Err(win_err(
                    format!("window functions are not allowed in {clause}"),
                    node,
                ));
            }
            Scope::Grouped(_) if !self.open.get() => {
                return Err(win_err(
                    "window functions are not allowed in HAVING".into(),
                    node,
                ));
            }
            _ => {}
        }
        self.inside.set(true);
        let _inside = Inside(&self.inside);
        let call = self.bind_call(binder, f, node, scope)?;
        let mut st = self.state.borrow_mut();
        let index = st.calls.len();
        let data_type = call.data_type.clone();
        st.calls.push(call);
        Ok(Expr::Window(Arc::new(WindowRef {
            index,
            data_type,
            text: node.to_string(),
        })))
    }
}

impl Collector<'_> {
    /// The window a call names: its own, a named one, or a named one
    /// that it extends (`OVER (w ORDER BY …)`).
    fn spec_of(&self, f: &ast::Function, node: &ast::Expr) -> Result<ast::WindowSpec> {
        // Two definitions of one name.
        for (k, d) in self.named.iter().enumerate() {
            if self.named[..k]
                .iter()
                .any(|e| e.0.value.eq_ignore_ascii_case(&d.0.value))
            {
                return Err(win_err(
                    format!("window \"{}\" is already defined", d.0.value),
                    node,
                ));
            }
        }
        match &f.over {
            Some(ast::WindowType::NamedWindow(n)) => self.named_spec(n, node, 0),
            Some(ast::WindowType::WindowSpec(s)) => self.copied_spec(s, node, 0),
            None => Err(Error::Internal("a window call without OVER".into())),
        }
    }

    /// The window named `name`, as defined (`OVER w`: its frame too).
    fn named_spec(
        &self,
        name: &ast::Ident,
        node: &ast::Expr,
        depth: usize,
    ) -> Result<ast::WindowSpec> {
        if depth > self.named.len() {
            return Err(win_err(
                format!("window \"{}\" refers to itself", name.value),
                node,
            ));
        }
        let def = self
            .named
            .iter()
            .find(|d| d.0.value.eq_ignore_ascii_case(&name.value))
            .ok_or_else(|| win_err(format!("window \"{}\" does not exist", name.value), node))?;
        match &def.1 {
            ast::NamedWindowExpr::NamedWindow(other) => self.named_spec(other, node, depth + 1),
            ast::NamedWindowExpr::WindowSpec(s) => self.copied_spec(s, node, depth + 1),
        }
    }

    /// A window spec, completed from the window it names, if any (`(w
    /// ORDER BY …)`: PostgreSQL's rules for copying a window).
    fn copied_spec(
        &self,
        s: &ast::WindowSpec,
        node: &ast::Expr,
        depth: usize,
    ) -> Result<ast::WindowSpec> {
        let Some(n) = &s.window_name else {
            return Ok(s.clone());
        };
        let base = self.named_spec(n, node, depth)?;
        if !s.partition_by.is_empty() {
            return Err(win_err(
                format!(
                    "cannot override PARTITION BY clause of window \"{}\"",
                    n.value
                ),
                node,
            ));
        }
        if !s.order_by.is_empty() && !base.order_by.is_empty() {
            return Err(win_err(
                format!("cannot override ORDER BY clause of window \"{}\"", n.value),
                node,
            ));
        }
        if base.window_frame.is_some() {
            return Err(win_err(
                format!(
                    "cannot copy window \"{}\" because it has a frame clause",
                    n.value
                ),
                node,
            ));
        }
        Ok(ast::WindowSpec {
            window_name: None,
            partition_by: base.partition_by,
            order_by: if s.order_by.is_empty() {
                base.order_by
            } else {
                s.order_by.clone()
            },
            window_frame: s.window_frame.clone(),
        })
    }

    fn bind_call(
        &self,
        binder: &Binder,
        f: &ast::Function,
        node: &ast::Expr,
        scope: &mut Scope,
    ) -> Result<WindowCall> {
        let name = function_name(f);
        let aggregate = matches!(name.as_str(), "count" | "sum" | "avg" | "min" | "max");
        if f.filter.is_some() && !aggregate {
            return Err(Error::Unsupported(format!(
                "FILTER is not implemented for non-aggregate window functions{}",
                at(node.span())
            )));
        }
        if !f.within_group.is_empty() {
            return Err(unsupported("WITHIN GROUP on a window function", node));
        }
        if f.null_treatment.is_some() {
            return Err(unsupported("IGNORE NULLS / RESPECT NULLS", node));
        }
        if let ast::FunctionArguments::List(l) = &f.args
            && matches!(
                l.duplicate_treatment,
                Some(ast::DuplicateTreatment::Distinct)
            )
        {
            return Err(Error::Unsupported(format!(
                "DISTINCT is not implemented for window functions{}",
                at(node.span())
            )));
        }
        let spec = self.spec_of(f, node)?;
        // count(*): no argument.
        let mut star = matches!(&f.args, ast::FunctionArguments::List(l)
            if matches!(l.args.as_slice(), [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)]));
        let mut args = if star {
            Vec::new()
        } else {
            binder.plain_args(f, node)?
        };
        // An aggregate's FILTER (WHERE c): its argument where c holds,
        // else NULL (which it skips); count(*) counts 1s.
        if let Some(c) = f.filter.as_deref() {
            if crate::query::bind::contains_aggregate(c) && matches!(scope, Scope::Row { .. }) {
                return Err(plan_err(
                    "aggregate functions are not allowed in FILTER".into(),
                    c,
                ));
            }
            if star {
                star = false;
                args = vec![ast::Expr::value(ast::Value::Number("1".into(), false))];
            }
            if let Some(a) = args.first_mut() {
                *a = super::only_where(a.clone(), c);
            }
        }
        let mut bound = Vec::new();
        for a in &args {
            bound.push(binder.bind(a, scope)?);
        }
        let types: Vec<A> = bound.iter().map(|b| binder.type_in(b, scope)).collect();
        let upper = name.to_uppercase();
        let arity = |lo: usize, hi: usize| -> Result<()> {
            if star || !(lo..=hi).contains(&bound.len()) {
                let what = match (lo, hi) {
                    (0, 0) => "no arguments".to_string(),
                    (a, b) if a == b => format!("{a} argument{}", if a == 1 { "" } else { "s" }),
                    (a, b) => format!("{a} to {b} arguments"),
                };
                return Err(plan_err(format!("{upper} takes {what}"), node));
            }
            Ok(())
        };
        // A constant integer argument (ntile's buckets, lag's offset).
        let constant = |i: usize, what: &str| -> Result<i64> {
            if matches!(&bound[i], Expr::Literal(a) if a.data_type() == &A::Null || a.is_null(0)) {
                return Err(win_err(format!("{upper}'s {what} must not be NULL"), node));
            }
            let (lit, negated) = match &bound[i] {
                Expr::Neg(x) => (x.as_ref(), true),
                x => (x, false),
            };
            let sign = if negated { -1 } else { 1 };
            match lit {
                Expr::Literal(a) if a.is_null(0) => {
                    Err(win_err(format!("{upper}'s {what} must not be NULL"), node))
                }
                Expr::Literal(a) => match arrow_cast::cast(a, &A::Int64)
                    .ok()
                    .filter(|c| c.null_count() == 0 && matches!(types[i], A::Int32 | A::Int64))
                {
                    Some(c) => c
                        .as_any()
                        .downcast_ref::<arrow_array::Int64Array>()
                        .map_or(0, |x| x.value(0))
                        .checked_mul(sign)
                        .ok_or_else(|| win_err(format!("{upper}'s {what} is out of range"), node)),
                    None => Err(plan_err(
                        format!(
                            "{upper}'s {what} must be an integer, not {}",
                            type_name(&types[i])
                        ),
                        node,
                    )),
                },
                _ => Err(unsupported(
                    &format!("{upper} with an {what} that is not a constant integer"),
                    node,
                )),
            }
        };
        let mut arg_cols: Vec<Expr> = Vec::new();
        let (func, data_type) = match name.as_str() {
            "row_number" | "rank" | "dense_rank" => {
                arity(0, 0)?;
                let func = match name.as_str() {
                    "row_number" => WinFunc::RowNumber,
                    "rank" => WinFunc::Rank,
                    _ => WinFunc::DenseRank,
                };
                (func, A::Int64)
            }
            "percent_rank" | "cume_dist" => {
                arity(0, 0)?;
                let func = if name == "percent_rank" {
                    WinFunc::PercentRank
                } else {
                    WinFunc::CumeDist
                };
                (func, A::Float64)
            }
            "ntile" => {
                arity(1, 1)?;
                let n = constant(0, "argument")?;
                if n <= 0 {
                    return Err(Error::Argument {
                        state: "22014",
                        message: format!(
                            "argument of ntile must be greater than zero{}",
                            at(node.span())
                        ),
                    });
                }
                (WinFunc::Ntile(n), A::Int64)
            }
            "lag" | "lead" => {
                arity(1, 3)?;
                let offset = if bound.len() > 1 {
                    constant(1, "offset")?
                } else {
                    1
                };
                let offset = if name == "lead" {
                    offset
                        .checked_neg()
                        .ok_or_else(|| win_err("LEAD's offset is out of range".into(), node))?
                } else {
                    offset
                };
                let mut t = row_type(&types[0]);
                if let Some(d) = bound.get(2) {
                    let dt = &types[2];
                    let Some(c) = common_type(&[types[0].clone(), dt.clone()]) else {
                        return Err(plan_err(
                            format!(
                                "{upper}'s default ({}) does not match its argument ({})",
                                type_name(dt),
                                type_name(&types[0])
                            ),
                            node,
                        ));
                    };
                    t = row_type(&c);
                    arg_cols.push(coerce(bound[0].clone(), &types[0], &c));
                    arg_cols.push(coerce(d.clone(), dt, &c));
                } else {
                    arg_cols.push(bound[0].clone());
                }
                (WinFunc::Lag(offset), t)
            }
            "first_value" | "last_value" => {
                arity(1, 1)?;
                arg_cols.push(bound[0].clone());
                let func = if name == "first_value" {
                    WinFunc::FirstValue
                } else {
                    WinFunc::LastValue
                };
                (func, row_type(&types[0]))
            }
            "nth_value" => {
                arity(2, 2)?;
                let n = constant(1, "position")?;
                if n <= 0 {
                    return Err(Error::Argument {
                        state: "22016",
                        message: format!(
                            "argument of nth_value must be greater than zero{}",
                            at(node.span())
                        ),
                    });
                }
                arg_cols.push(bound[0].clone());
                (WinFunc::NthValue(n), row_type(&types[0]))
            }
            "count" | "sum" | "avg" | "min" | "max" => {
                if contains_window_expr(&bound) {
                    return Err(win_err(
                        "window function calls cannot be nested".into(),
                        node,
                    ));
                }
                let func = match (name.as_str(), star) {
                    ("count", true) => AggFunc::CountStar,
                    (_, true) => {
                        return Err(plan_err(format!("{upper}(*) is not valid"), node));
                    }
                    ("count", _) => AggFunc::Count,
                    ("sum", _) => AggFunc::Sum,
                    ("avg", _) => AggFunc::Avg,
                    ("min", _) => AggFunc::Min,
                    _ => AggFunc::Max,
                };
                if !star {
                    arity(1, 1)?;
                }
                let mut arg_type = A::Null;
                if let Some(a) = bound.first() {
                    let t = &types[0];
                    let a = match func {
                        AggFunc::Sum | AggFunc::Avg if *t == A::Null => {
                            coerce(a.clone(), t, &A::Int64)
                        }
                        AggFunc::Sum | AggFunc::Avg if !is_numeric(t) => {
                            return Err(plan_err(
                                format!("{upper} needs a number, not {}", type_name(t)),
                                node,
                            ));
                        }
                        _ => a.clone(),
                    };
                    arg_type = row_type(&binder.type_in(&a, scope));
                    arg_cols.push(a);
                }
                let call = AggCall {
                    func,
                    arg: None,
                    distinct: false,
                    arg_type,
                    name: String::new(),
                    collect: None,
                };
                (WinFunc::Agg(func), call.output_type())
            }
            _ => {
                return Err(Error::Unsupported(format!(
                    "{name} is not a window function this engine has{}",
                    at(node.span())
                )));
            }
        };
        // PARTITION BY and ORDER BY, bound in the query's scope.
        let mut partition_exprs = Vec::new();
        // PostgreSQL's order and equality of intervals (a month as 30
        // days: `1 mon` and `30 days` are one partition, and peers) are
        // not the stored fields': an INTERVAL is partitioned and ordered
        // by its key.
        let by_key = |e: Expr, t: A| {
            if t == crate::query::interval::TYPE {
                let key = Expr::Call {
                    func: crate::query::func::Func::Interval(crate::query::interval::Op::Key),
                    args: vec![e],
                    ty: A::Decimal128(38, 0),
                };
                (key, A::Decimal128(38, 0), true)
            } else {
                (e, t, false)
            }
        };
        for p in &spec.partition_by {
            let e = binder.bind(p, scope)?;
            let t = binder.type_in(&e, scope);
            partition_exprs.push(by_key(e, t).0);
        }
        let mut order_exprs = Vec::new();
        for o in &spec.order_by {
            let e = binder.bind(&o.expr, scope)?;
            let t = binder.type_in(&e, scope);
            let (e, t, interval) = by_key(e, t);
            let offset = |b: &Option<ast::WindowFrameBound>| {
                matches!(
                    b,
                    Some(
                        ast::WindowFrameBound::Preceding(Some(_))
                            | ast::WindowFrameBound::Following(Some(_))
                    )
                )
            };
            if interval
                && let Some(wf) = &spec.window_frame
                && wf.units == ast::WindowFrameUnits::Range
                && (offset(&Some(wf.start_bound.clone())) || offset(&wf.end_bound))
            {
                return Err(Error::Unsupported(format!(
                    "a RANGE frame with an offset over an INTERVAL order key is not supported{}",
                    at(o.expr.span())
                )));
            }
            order_exprs.push((e, t, o));
        }
        let frame = self.frame_of(&spec, &order_exprs, node)?;
        let mut st = self.state.borrow_mut();
        let args = arg_cols.into_iter().map(|e| st.base_column(e)).collect();
        let partition = partition_exprs
            .into_iter()
            .map(|e| st.base_column(e))
            .collect();
        let mut order = Vec::new();
        for (e, _, o) in order_exprs {
            let c = st.base_column(e);
            order.push(sort_key(c, o)?);
        }
        Ok(WindowCall {
            func,
            args,
            partition,
            order,
            frame,
            data_type,
            name: node.to_string(),
        })
    }

    /// The frame clause, checked as PostgreSQL checks it.
    fn frame_of(
        &self,
        spec: &ast::WindowSpec,
        order: &[(Expr, A, &ast::OrderByExpr)],
        node: &ast::Expr,
    ) -> Result<Frame> {
        let Some(wf) = &spec.window_frame else {
            return Ok(Frame::default_frame());
        };
        let units = match wf.units {
            ast::WindowFrameUnits::Rows => Units::Rows,
            ast::WindowFrameUnits::Range => Units::Range,
            ast::WindowFrameUnits::Groups => Units::Groups,
        };
        if units == Units::Groups && order.is_empty() {
            return Err(win_err(
                "GROUPS mode requires an ORDER BY clause".into(),
                node,
            ));
        }
        let end_ast = wf
            .end_bound
            .clone()
            .unwrap_or(ast::WindowFrameBound::CurrentRow);
        let start = self.bound_of(&wf.start_bound, units, order, node, "starting")?;
        let end = self.bound_of(&end_ast, units, order, node, "ending")?;
        let rank = |b: &Bound| match b {
            Bound::UnboundedPreceding => 0,
            Bound::Preceding(_) => 1,
            Bound::CurrentRow => 2,
            Bound::Following(_) => 3,
            Bound::UnboundedFollowing => 4,
        };
        if start == Bound::UnboundedFollowing {
            return Err(win_err(
                "frame start cannot be UNBOUNDED FOLLOWING".into(),
                node,
            ));
        }
        if end == Bound::UnboundedPreceding {
            return Err(win_err(
                "frame end cannot be UNBOUNDED PRECEDING".into(),
                node,
            ));
        }
        if rank(&start) == 2 && rank(&end) == 1 {
            return Err(win_err(
                "frame starting from current row cannot have preceding rows".into(),
                node,
            ));
        }
        if rank(&start) == 3 && rank(&end) < 3 {
            return Err(win_err(
                "frame starting from following row cannot have preceding rows".into(),
                node,
            ));
        }
        Ok(Frame { units, start, end })
    }

    fn bound_of(
        &self,
        b: &ast::WindowFrameBound,
        units: Units,
        order: &[(Expr, A, &ast::OrderByExpr)],
        node: &ast::Expr,
        which: &str,
    ) -> Result<Bound> {
        let (off, preceding) = match b {
            ast::WindowFrameBound::CurrentRow => return Ok(Bound::CurrentRow),
            ast::WindowFrameBound::Preceding(None) => return Ok(Bound::UnboundedPreceding),
            ast::WindowFrameBound::Following(None) => return Ok(Bound::UnboundedFollowing),
            ast::WindowFrameBound::Preceding(Some(e)) => (e, true),
            ast::WindowFrameBound::Following(Some(e)) => (e, false),
        };
        let offset = self.offset_of(off, units, order, node, which)?;
        Ok(if preceding {
            Bound::Preceding(offset)
        } else {
            Bound::Following(offset)
        })
    }

    /// A frame offset: a constant, not negative; for RANGE, of the ORDER
    /// BY key's kind of number.
    fn offset_of(
        &self,
        e: &ast::Expr,
        units: Units,
        order: &[(Expr, A, &ast::OrderByExpr)],
        node: &ast::Expr,
        which: &str,
    ) -> Result<Offset> {
        let negative = || Error::Argument {
            state: "22013",
            message: format!("frame {which} offset must not be negative{}", at(e.span())),
        };
        let null = || Error::Argument {
            state: "22004",
            message: format!("frame {which} offset must not be null{}", at(e.span())),
        };
        let value = constant_number(e).ok_or_else(|| {
            plan_err(
                format!("a frame offset must be a constant number, not {e}"),
                e,
            )
        })?;
        let Some(value) = value else {
            return Err(null());
        };
        if units != Units::Range {
            return match value.parse::<i64>() {
                Ok(v) if v < 0 => Err(negative()),
                Ok(v) => Ok(Offset::Count(v as u64)),
                Err(_) if value.starts_with('-') => Err(negative()),
                Err(_) => Err(plan_err(
                    format!("a {units:?} frame offset must be an integer, not {value}")
                        .replace("Rows", "ROWS")
                        .replace("Groups", "GROUPS"),
                    e,
                )),
            };
        }
        let [(_, t, _)] = order else {
            return Err(win_err(
                "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column".into(),
                node,
            ));
        };
        if value.starts_with('-') {
            return Err(negative());
        }
        let not_for = || {
            Error::Unsupported(format!(
                "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {} and offset {value}{}",
                type_name(t),
                at(e.span())
            ))
        };
        match t {
            A::Int32 | A::Int64 => value
                .parse::<i128>()
                .map(Offset::Int)
                .map_err(|_| not_for()),
            A::Decimal128(_, s) | A::Decimal64(_, s) => scaled(&value, *s as u32)
                .map(Offset::Int)
                .ok_or_else(not_for),
            A::Float64 => value
                .parse::<f64>()
                .map(Offset::Float)
                .map_err(|_| not_for()),
            _ => Err(not_for()),
        }
    }
}

/// Whether a bound expression holds a window call.
fn contains_window_expr(list: &[Expr]) -> bool {
    fn walk(e: &mut Expr, hit: &mut bool) {
        if let Expr::Window(_) = e {
            *hit = true;
            return;
        }
        e.children_mut(&mut |c| walk(c, hit));
    }
    let mut hit = false;
    for e in list {
        walk(&mut e.clone(), &mut hit);
    }
    hit
}

/// A numeric literal (with a sign, in parentheses or not) as written;
/// `Some(None)` for NULL; `None` for anything else.
fn constant_number(e: &ast::Expr) -> Option<Option<String>> {
    match e {
        ast::Expr::Nested(x) => constant_number(x),
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => Some(Some(n.clone())),
            ast::Value::Null => Some(None),
            _ => None,
        },
        ast::Expr::UnaryOp { op, expr } => {
            let inner = constant_number(expr)??;
            match op {
                ast::UnaryOperator::Minus => Some(Some(format!("-{inner}"))),
                ast::UnaryOperator::Plus => Some(Some(inner)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A decimal number as written (`1.5`, `2`) unscaled at `scale` digits,
/// when it has no more fractional digits than that.
fn scaled(text: &str, scale: u32) -> Option<i128> {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let frac = frac.trim_end_matches('0');
    if frac.len() > scale as usize || text.contains(['e', 'E']) {
        return None;
    }
    let digits = format!("{int}{frac}{}", "0".repeat(scale as usize - frac.len()));
    digits.parse::<i128>().ok()
}

/// The plan with its window operator: `inner` (its body makes the base
/// columns; its order, limit and names are the query's) becomes the
/// window operator's input, and the query's select list, ORDER BY and
/// LIMIT run over the operator's output.
pub(super) fn wrap(mut inner: Plan, w: Option<Windowed>) -> Plan {
    let Some(w) = w else {
        return inner;
    };
    let names = std::mem::replace(&mut inner.names, w.base_names);
    let visible = inner.visible;
    inner.visible = inner.names.len();
    let order = std::mem::take(&mut inner.order);
    let limit = inner.limit.take();
    let offset = std::mem::take(&mut inner.offset);
    let explain = std::mem::replace(&mut inner.explain, false);
    let mut types: Vec<A> = crate::query::exec::result_types(&inner)
        .iter()
        .map(row_type)
        .collect();
    types.extend(w.calls.iter().map(|c| c.data_type.clone()));
    let init_plans = inner.init_plans;
    let depth = inner.depth;
    Plan {
        table: None,
        scan_columns: (0..types.len()).collect(),
        table_types: types,
        filter: None,
        body: Body::Project(w.post),
        names,
        visible,
        order,
        limit,
        offset,
        prune: Vec::new(),
        key_lookup: None,
        explain,
        depth,
        input: Some(Arc::new(Input::Window(Box::new(WindowInput {
            input: inner,
            calls: w.calls,
        })))),
        init_plans,
        analyze: false,
        catalog: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_scaled_only_when_they_fit() {
        assert_eq!(scaled("1.5", 2), Some(150));
        assert_eq!(scaled("2", 1), Some(20));
        assert_eq!(scaled("0.125", 2), None);
        assert_eq!(scaled("1.50", 1), Some(15));
    }
}

/// The ORDER BY items of `q` with positions and output names resolved
/// to the select items' expressions (a window's ORDER BY reads only
/// expressions): `None` where that cannot be done (a position past a
/// `*`).
fn order_by_exprs(q: &ast::Query, select: &ast::Select) -> Result<Vec<ast::OrderByExpr>> {
    let list = match &q.order_by {
        None => return Ok(Vec::new()),
        Some(ob) => match &ob.kind {
            ast::OrderByKind::Expressions(v) => v.clone(),
            ast::OrderByKind::All(_) => {
                return Err(Error::Unsupported("ORDER BY ALL is not supported".into()));
            }
        },
    };
    let mut out = Vec::new();
    for mut o in list {
        o.expr = output_expr(&o.expr, select, "ORDER BY")?;
        out.push(o);
    }
    Ok(out)
}

/// What an ORDER BY (or DISTINCT ON) item names: a select item's
/// expression for a position or an output name, else itself.
fn output_expr(e: &ast::Expr, select: &ast::Select, clause: &str) -> Result<ast::Expr> {
    let items: Vec<Option<(&ast::Expr, Option<&str>)>> = select
        .projection
        .iter()
        .map(|i| match i {
            ast::SelectItem::UnnamedExpr(e) => Some((e, None)),
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                Some((expr, Some(alias.value.as_str())))
            }
            _ => None,
        })
        .collect();
    match e {
        ast::Expr::Value(v) => {
            if let ast::Value::Number(n, _) = &v.value {
                let k: usize = n.parse().unwrap_or(0);
                return match items.get(k.wrapping_sub(1)) {
                    Some(Some((x, _))) => Ok((*x).clone()),
                    _ => Err(plan_err(
                        format!("{clause} position {n} is not in the select list"),
                        e,
                    )),
                };
            }
            Ok(e.clone())
        }
        ast::Expr::Identifier(i) => Ok(
            match items.iter().find(|it| {
                it.is_some_and(|(_, a)| a.is_some_and(|a| a.eq_ignore_ascii_case(&i.value)))
            }) {
                Some(Some((x, _))) => (*x).clone(),
                _ => e.clone(),
            },
        ),
        _ => Ok(e.clone()),
    }
}

/// An expression from SQL text the planner writes.
fn parse_expr(sql: &str) -> Result<ast::Expr> {
    sqlparser::parser::Parser::new(&sqlparser::dialect::GenericDialect {})
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| Error::Internal(format!("planner's SQL {sql:?}: {e}")))
}

/// Plans `q` with one more select item, `extra`, that the query's
/// windows compute; that item becomes the window output's filter (it is
/// not shown).
fn plan_filtered_by(
    q: &ast::Query,
    extra: ast::Expr,
    what: &str,
    plan: impl FnOnce(&ast::Query) -> Result<Plan>,
    is_row_number: bool,
) -> Result<Plan> {
    let mut q2 = q.clone();
    let ast::SetExpr::Select(s) = q2.body.as_mut() else {
        return Err(Error::Internal(format!("{what} outside a SELECT")));
    };
    s.projection.push(ast::SelectItem::ExprWithAlias {
        expr: extra,
        alias: ast::Ident::new(format!("?{}", what.to_lowercase().replace(' ', "_"))),
    });
    let mut p = plan(&q2)?;
    let (Some(Input::Window(_)), Body::Project(post)) = (p.input.as_deref(), &p.body) else {
        return Err(Error::Unsupported(format!(
            "{what} without a window function is not supported"
        )));
    };
    let last = p
        .visible
        .checked_sub(1)
        .ok_or_else(|| Error::Internal("no select item".into()))?;
    let keep = post[last].clone();
    let t = keep.data_type(&p.table_types);
    let cond = if is_row_number {
        Expr::Binary {
            op: crate::query::expr::BinOp::Eq,
            left: Box::new(keep),
            right: Box::new(Expr::Literal(Arc::new(arrow_array::Int64Array::from(
                vec![1i64],
            )))),
        }
    } else if t == A::Boolean || t == A::Null {
        keep
    } else {
        return Err(Error::Plan(format!(
            "argument of QUALIFY must be type boolean, not type {}",
            type_name(&t)
        )));
    };
    p.filter = Some(cond);
    p.visible = last;
    Ok(p)
}

/// `SELECT DISTINCT ON (e, …) … ORDER BY …`, as PostgreSQL answers it:
/// of each set of rows equal on (e, …), the first in the ORDER BY's order
/// (any one without ORDER BY) — a hidden `row_number() OVER (PARTITION BY
/// e, … ORDER BY …)` kept where it is 1. The ORDER BY must begin with
/// the DISTINCT ON expressions (SQLSTATE 42P10, as PostgreSQL).
pub(super) fn plan_distinct_on(
    q: &ast::Query,
    on: &[ast::Expr],
    plan: impl FnOnce(&ast::Query) -> Result<Plan>,
) -> Result<Plan> {
    let ast::SetExpr::Select(select) = q.body.as_ref() else {
        return Err(Error::Internal("DISTINCT ON outside a SELECT".into()));
    };
    if on.is_empty() {
        return Err(Error::Syntax(
            "DISTINCT ON needs at least one expression".into(),
        ));
    }
    let order = order_by_exprs(q, select)?;
    if on
        .iter()
        .chain(order.iter().map(|o| &o.expr))
        .any(crate::query::bind::contains_window)
    {
        return Err(Error::Unsupported(
            "DISTINCT ON with a window function in ON or ORDER BY is not supported; use a subquery"
                .into(),
        ));
    }
    let on = on
        .iter()
        .map(|e| output_expr(e, select, "DISTINCT ON"))
        .collect::<Result<Vec<_>>>()?;
    let on_text: Vec<String> = on.iter().map(|e| e.to_string()).collect();
    let mut on_norm: Vec<String> = on.iter().map(normalized).collect();
    on_norm.sort();
    on_norm.dedup();
    for o in order.iter().take(on_norm.len()) {
        if !on_norm.contains(&normalized(&o.expr)) {
            return Err(Error::Argument {
                state: "42P10",
                message: format!(
                    "SELECT DISTINCT ON expressions must match initial ORDER BY expressions{}",
                    at(o.expr.span())
                ),
            });
        }
    }
    let mut sql = format!("row_number() OVER (PARTITION BY {}", on_text.join(", "));
    if !order.is_empty() {
        let o: Vec<String> = order.iter().map(|o| o.to_string()).collect();
        sql.push_str(&format!(" ORDER BY {}", o.join(", ")));
    }
    sql.push(')');
    let mut q = q.clone();
    if let ast::SetExpr::Select(s) = q.body.as_mut() {
        s.distinct = None;
    }
    plan_filtered_by(&q, parse_expr(&sql)?, "DISTINCT ON", plan, true)
}

/// An expression's text as DISTINCT ON compares it with ORDER BY's:
/// parentheses, quotes, case and table qualifiers left out.
fn normalized(e: &ast::Expr) -> String {
    let mut e = e.clone();
    let _ = ast::visit_expressions_mut(&mut e, |x| {
        loop {
            match x {
                ast::Expr::Nested(inner) => *x = (**inner).clone(),
                ast::Expr::CompoundIdentifier(parts) if parts.len() > 1 => {
                    *x = ast::Expr::Identifier(parts[parts.len() - 1].clone())
                }
                _ => break,
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    e.to_string().replace('"', "").to_lowercase()
}

/// `QUALIFY cond`: the rows of a query with windows where `cond` (which
/// may read them) holds, before ORDER BY and LIMIT.
pub(super) fn plan_qualify(
    q: &ast::Query,
    cond: &ast::Expr,
    plan: impl FnOnce(&ast::Query) -> Result<Plan>,
) -> Result<Plan> {
    let mut q = q.clone();
    let mut cond = cond.clone();
    if let ast::SetExpr::Select(s) = q.body.as_mut() {
        s.qualify = None;
        // An output name stands for its select item's expression (as in
        // DuckDB, whose QUALIFY this is).
        let aliases: Vec<(String, ast::Expr)> = s
            .projection
            .iter()
            .filter_map(|i| match i {
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    Some((alias.value.to_ascii_lowercase(), expr.clone()))
                }
                _ => None,
            })
            .collect();
        let _ = ast::visit_expressions_mut(&mut cond, |e| {
            if let ast::Expr::Identifier(i) = e
                && let Some((_, x)) = aliases
                    .iter()
                    .find(|(a, _)| *a == i.value.to_ascii_lowercase())
            {
                *e = ast::Expr::Nested(Box::new(x.clone()));
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
    }
    plan_filtered_by(&q, cond, "QUALIFY", plan, false)
}
