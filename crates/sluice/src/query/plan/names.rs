//! The names PostgreSQL gives a statement's output columns, for clients
//! of the PostgreSQL protocol (`sluice serve`): `SELECT count(*), x + 1,
//! CAST(y AS TEXT)` answers columns `count`, `?column?` and `y` there,
//! where sluice's own output names them by their text (`count(*)`,
//! `x + 1`, …) as DuckDB does. The rules are PostgreSQL's
//! `FigureColname`: a column its name; a function call (an aggregate, a
//! window function, `COALESCE`, `EXTRACT`, …) its function's name; a cast
//! its operand's name, or the type's (`int4`) when the operand has none;
//! `CASE` `case`; `EXISTS` `exists`; a scalar subquery its one column's
//! name; anything else (operators, literals) `?column?`.
//!
//! For: renaming a planned statement's visible outputs
//! ([`super::plan_sql_as_postgresql`]). Not for: names a statement
//! refers to (aliases, derived tables' columns), which stay as planned.

use sqlparser::ast;

/// The outputs of `stmt`'s first SELECT (of a set operation, its leftmost)
/// that PostgreSQL names otherwise than sluice: `front` for the items
/// before the first `*` (from the first output on), `back` for those after
/// the last `*` (up to the last output); `None` where the name stays.
pub(super) struct Renames {
    pub front: Vec<Option<String>>,
    pub back: Vec<Option<String>>,
}

/// The renames of a query statement; `None` for any other.
pub(super) fn renames(stmt: &ast::Statement) -> Option<Renames> {
    let ast::Statement::Query(q) = stmt else {
        return None;
    };
    query_renames(q, &[])
}

/// The renames of `q`, in the scope of the CTEs `outer` (of the queries
/// around it).
fn query_renames<'q>(q: &'q ast::Query, outer: &[&'q ast::Cte]) -> Option<Renames> {
    let mut ctes: Vec<&ast::Cte> = outer.to_vec();
    if let Some(w) = &q.with {
        ctes.extend(w.cte_tables.iter());
    }
    let select = first_select(q)?;
    // `SELECT *` (or `s.*`) of one derived table or CTE, as tools wrap a
    // query: its columns are named as that query's.
    if let [ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..)] =
        select.projection.as_slice()
        && let [from] = select.from.as_slice()
        && from.joins.is_empty()
    {
        return match &from.relation {
            ast::TableFactor::Derived {
                subquery, alias, ..
            } if alias.as_ref().is_none_or(|a| a.columns.is_empty()) => {
                query_renames(subquery, &ctes)
            }
            ast::TableFactor::Table {
                name,
                alias,
                args: None,
                ..
            } if name.0.len() == 1 && alias.as_ref().is_none_or(|a| a.columns.is_empty()) => {
                let n = name.0[0].as_ident()?;
                let cte = ctes.iter().rev().find(|c| {
                    if n.quote_style.is_some() || c.alias.name.quote_style.is_some() {
                        c.alias.name.value == n.value
                    } else {
                        c.alias.name.value.eq_ignore_ascii_case(&n.value)
                    }
                })?;
                if !cte.alias.columns.is_empty() {
                    return None;
                }
                let at = ctes
                    .iter()
                    .position(|c| std::ptr::eq(*c, *cte))
                    .unwrap_or(0);
                query_renames(&cte.query, &ctes[..at])
            }
            _ => None,
        };
    }
    let names: Vec<Option<Option<String>>> = select
        .projection
        .iter()
        .map(|item| match item {
            ast::SelectItem::UnnamedExpr(e) => Some(Some(name_of(e))),
            ast::SelectItem::ExprWithAlias { .. } => Some(None),
            // A `*`: columns of a number not known here.
            _ => None,
        })
        .collect();
    let front = names.iter().map_while(|n| n.clone()).collect::<Vec<_>>();
    let mut back: Vec<Option<String>> = names.iter().rev().map_while(|n| n.clone()).collect();
    back.reverse();
    if front.len() == names.len() {
        back.clear();
    }
    Some(Renames { front, back })
}

fn first_select(q: &ast::Query) -> Option<&ast::Select> {
    let mut body = q.body.as_ref();
    loop {
        match body {
            ast::SetExpr::Select(s) => return Some(s),
            ast::SetExpr::Query(q) => body = q.body.as_ref(),
            ast::SetExpr::SetOperation { left, .. } => body = left.as_ref(),
            _ => return None,
        }
    }
}

/// PostgreSQL's name of an unnamed output `e`.
fn name_of(e: &ast::Expr) -> String {
    figure(e).map_or_else(|| "?column?".to_string(), |(n, _)| n)
}

/// A name and its strength (2: a name of its own; 1: a type's or
/// `case`, which a cast around it replaces), or none.
fn figure(e: &ast::Expr) -> Option<(String, u8)> {
    use ast::Expr as E;
    let own = |s: &str| Some((s.to_string(), 2));
    match e {
        E::Identifier(i) => Some((i.value.clone(), 2)),
        E::CompoundIdentifier(parts) => parts.last().map(|i| (i.value.clone(), 2)),
        E::Nested(inner) => figure(inner),
        // `t.col[i]`, `col[i]`: the column's name.
        E::CompoundFieldAccess { root, access_chain } => {
            let last = access_chain.iter().rev().find_map(|a| match a {
                ast::AccessExpr::Dot(E::Identifier(i)) => Some(i.value.clone()),
                _ => None,
            });
            match (last, access_chain.last()) {
                (Some(n), Some(ast::AccessExpr::Subscript(_))) => Some((n, 2)),
                (None, Some(ast::AccessExpr::Subscript(_))) => figure(root),
                _ => None,
            }
        }
        E::Collate { expr, .. } => figure(expr),
        E::Function(f) => {
            let last = f.name.0.last()?.as_ident()?;
            Some((
                if last.quote_style.is_some() {
                    last.value.clone()
                } else {
                    last.value.to_lowercase()
                },
                2,
            ))
        }
        E::Cast {
            expr, data_type, ..
        } => match figure(expr) {
            Some((n, 2)) => Some((n, 2)),
            _ => Some((type_name(data_type), 1)),
        },
        E::TypedString(t) => Some((type_name(&t.data_type), 1)),
        E::Interval(_) => Some(("interval".into(), 1)),
        E::Value(v) => match v.value {
            ast::Value::Boolean(_) => Some(("bool".into(), 1)),
            _ => None,
        },
        E::Case { .. } => Some(("case".into(), 1)),
        E::Exists { negated: false, .. } => own("exists"),
        E::Subquery(q) => {
            let s = first_select(q)?;
            match s.projection.first()? {
                ast::SelectItem::ExprWithAlias { alias, .. } => Some((alias.value.clone(), 2)),
                ast::SelectItem::UnnamedExpr(x) => Some((name_of(x), 2)),
                _ => None,
            }
        }
        E::Array(_) => own("array"),
        E::Tuple(_) => own("row"),
        E::Extract { .. } => own("extract"),
        E::Substring { shorthand, .. } => own(if *shorthand { "substr" } else { "substring" }),
        E::Position { .. } => own("position"),
        E::Overlay { .. } => own("overlay"),
        E::Ceil { .. } => own("ceil"),
        E::Floor { .. } => own("floor"),
        E::AtTimeZone { .. } => own("timezone"),
        E::Trim { trim_where, .. } => own(match trim_where {
            Some(ast::TrimWhereField::Leading) => "ltrim",
            Some(ast::TrimWhereField::Trailing) => "rtrim",
            _ => "btrim",
        }),
        _ => None,
    }
}

/// PostgreSQL's own name of a type as written in a cast (`int4` for
/// `INT`, `float8` for `DOUBLE PRECISION`).
fn type_name(t: &ast::DataType) -> String {
    let text = t.to_string().to_lowercase();
    let base = text.split('(').next().unwrap_or("").trim();
    match base {
        "int" | "integer" | "int4" => "int4",
        "bigint" | "int8" => "int8",
        "smallint" | "int2" => "int2",
        "real" | "float4" => "float4",
        "double" | "double precision" | "float8" | "float" => "float8",
        "numeric" | "decimal" | "dec" => "numeric",
        "boolean" | "bool" => "bool",
        "varchar" | "character varying" => "varchar",
        "char" | "character" | "bpchar" => "bpchar",
        "timestamp" | "timestamp without time zone" => "timestamp",
        "timestamptz" | "timestamp with time zone" => "timestamptz",
        "time" | "time without time zone" => "time",
        other => return other.rsplit('.').next().unwrap_or(other).to_string(),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sql: &str) -> (Vec<Option<String>>, Vec<Option<String>>) {
        let stmt = crate::query::sql::parse(sql).unwrap();
        match renames(&stmt) {
            Some(r) => (r.front, r.back),
            None => (Vec::new(), Vec::new()),
        }
    }

    fn all(sql: &str) -> Vec<String> {
        let (front, back) = names(sql);
        assert!(back.is_empty());
        front
            .into_iter()
            .map(|n| n.unwrap_or_else(|| "(kept)".into()))
            .collect()
    }

    #[test]
    fn outputs_are_named_as_postgresql_names_them() {
        assert_eq!(
            all("SELECT count(*), Sum(x), x, t.y, x + 1, 1, 'a', NULL, true, -x, x IS NULL FROM t"),
            [
                "count", "sum", "x", "y", "?column?", "?column?", "?column?", "?column?", "bool",
                "?column?", "?column?"
            ]
        );
        assert_eq!(
            all(
                "SELECT CAST(x AS BIGINT), CAST(1 AS INT), x::text, CAST(x + 1 AS DOUBLE PRECISION), \
                 CAST(CASE WHEN x THEN 1 END AS NUMERIC(10,2)), DATE '2020-01-01', INTERVAL '1 day', \
                 CAST((x) AS varchar(3)) FROM t"
            ),
            [
                "x", "int4", "x", "float8", "numeric", "date", "interval", "x"
            ]
        );
        assert_eq!(
            all(
                "SELECT CASE WHEN x THEN 1 END, coalesce(a, b), EXISTS (SELECT 1), NOT EXISTS (SELECT 1), \
                 (SELECT max(z) FROM u), (SELECT 2), (SELECT z AS w FROM u), rank() OVER (ORDER BY x), \
                 EXTRACT(YEAR FROM d), SUBSTRING(s FROM 2), TRIM(s), TRIM(LEADING 'x' FROM s), \
                 POSITION('a' IN s), \"Upper\"(s), pg_catalog.lower(s) FROM t"
            ),
            [
                "case",
                "coalesce",
                "exists",
                "?column?",
                "max",
                "?column?",
                "w",
                "rank",
                "extract",
                "substring",
                "btrim",
                "ltrim",
                "position",
                "Upper",
                "lower"
            ]
        );
    }

    #[test]
    fn a_star_of_one_derived_table_or_cte_takes_its_query_s_names() {
        assert_eq!(
            all("SELECT * FROM (SELECT count(*), 1 AS a, x + 1 FROM t) s"),
            ["count", "(kept)", "?column?"]
        );
        assert_eq!(all("SELECT s.* FROM (SELECT sum(x) FROM t) s"), ["sum"]);
        assert_eq!(
            all("SELECT * FROM (SELECT * FROM (SELECT max(x) FROM t) a) b"),
            ["max"]
        );
        assert_eq!(
            all("WITH c AS (SELECT count(*) FROM t) SELECT * FROM c"),
            ["count"]
        );
        assert_eq!(
            all("WITH c AS (SELECT min(x) FROM t), d AS (SELECT * FROM c) SELECT * FROM d"),
            ["min"]
        );
        assert_eq!(
            all("SELECT * FROM (SELECT CAST(i AS TEXT) FROM t UNION SELECT k FROM t) s"),
            ["i"]
        );
        assert_eq!(
            all("SELECT i.indoption[0], indkey[1] FROM t"),
            ["indoption", "indkey"]
        );
        assert_eq!(
            all("SELECT substr(s, 1), SUBSTRING(s FROM 1) FROM t"),
            ["substr", "substring"]
        );
        // Columns named by the alias, a join, a table: as planned.
        for kept in [
            "SELECT * FROM (SELECT count(*) FROM t) s (n)",
            "WITH c (n) AS (SELECT count(*) FROM t) SELECT * FROM c",
            "SELECT * FROM (SELECT count(*) FROM t) s, u",
            "SELECT * FROM t",
        ] {
            let (front, back) = names(kept);
            assert!(front.is_empty() && back.is_empty(), "{kept}");
        }
    }

    #[test]
    fn aliases_and_stars_keep_their_names_and_set_operations_take_the_first() {
        assert_eq!(all("SELECT count(*) AS n, x FROM t"), ["(kept)", "x"]);
        let (front, back) = names("SELECT count(*), *, t.*, x + 1 FROM t");
        assert_eq!(front, [Some("count".to_string())]);
        assert_eq!(back, [Some("?column?".to_string())]);
        let (front, back) = names("SELECT * FROM t");
        assert!(front.is_empty() && back.is_empty());
        assert_eq!(all("SELECT sum(x) FROM t UNION SELECT 1 AS y"), ["sum"]);
        assert_eq!(all("(SELECT count(*) FROM t) EXCEPT SELECT 1"), ["count"]);
        let (front, back) = names("EXPLAIN SELECT count(*)");
        assert!(front.is_empty() && back.is_empty());
    }
}
