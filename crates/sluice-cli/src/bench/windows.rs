//! `sluice bench windows`: window functions over the TPC-H tables, the
//! shapes analysts write (top-N per group, running and moving sums,
//! change from the previous row, quartiles, a value's neighbours, shares
//! of a total), run by [`super::tpch::run`] as the TPC-H queries are:
//! warm, DuckDB beside, every answer compared before a time is reported.
//! Each query's answer is small (aggregated over the window's output) or
//! fully ordered, so both engines' rows compare one to one.

/// The queries, W1 to W8.
pub const QUERIES: [&str; 8] = [
    // W1: the three largest orders of each customer (row_number, PARTITION BY).
    "SELECT count(*), sum(o_totalprice) FROM (SELECT o_totalprice, row_number() OVER (PARTITION BY o_custkey ORDER BY o_totalprice DESC, o_orderkey) AS rn FROM orders) s WHERE rn <= 3",
    // W2: each supplier's most expensive lines (rank over lineitem, ties kept).
    "SELECT count(*), sum(l_quantity) FROM (SELECT l_quantity, rank() OVER (PARTITION BY l_suppkey ORDER BY l_extendedprice DESC) AS r FROM lineitem) s WHERE r = 1",
    // W3: running total per priority (ROWS UNBOUNDED PRECEDING).
    "SELECT o_orderpriority, max(running), count(*) FROM (SELECT o_orderpriority, sum(o_totalprice) OVER (PARTITION BY o_orderpriority ORDER BY o_orderdate, o_orderkey ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running FROM orders) s GROUP BY o_orderpriority ORDER BY o_orderpriority",
    // W4: daily revenue and its 7-day moving average (a window over groups).
    "SELECT l_shipdate, sum(l_extendedprice) AS revenue, avg(sum(l_extendedprice)) OVER (ORDER BY l_shipdate ROWS BETWEEN 6 PRECEDING AND CURRENT ROW) AS week FROM lineitem GROUP BY l_shipdate ORDER BY l_shipdate",
    // W5: orders larger than the customer's previous one (lag).
    "SELECT count(*), sum(d) FROM (SELECT o_totalprice - lag(o_totalprice) OVER (PARTITION BY o_custkey ORDER BY o_orderdate, o_orderkey) AS d FROM orders) s WHERE d > 0",
    // W6: quartiles of every line's price (ntile over one sort of lineitem).
    "SELECT q, count(*), min(l_extendedprice), max(l_extendedprice) FROM (SELECT l_extendedprice, ntile(4) OVER (ORDER BY l_extendedprice, l_orderkey, l_linenumber) AS q FROM lineitem) s GROUP BY q ORDER BY q",
    // W7: a customer's orders within 1000 of each order's price (RANGE frame).
    "SELECT max(c), sum(c) FROM (SELECT count(*) OVER (PARTITION BY o_custkey ORDER BY o_totalprice RANGE BETWEEN 1000 PRECEDING AND 1000 FOLLOWING) AS c FROM orders) s",
    // W8: each nation's revenue, its rank and share (windows over a join's groups).
    "SELECT n_name, sum(o_totalprice) AS revenue, rank() OVER (ORDER BY sum(o_totalprice) DESC) AS r, count(*) * 1.0 / sum(count(*)) OVER () AS share FROM orders JOIN customer ON o_custkey = c_custkey JOIN nation ON c_nationkey = n_nationkey GROUP BY n_name ORDER BY n_name",
];
