#!/usr/bin/env python3
"""Parquet datasets of sluice read by the engines users take them to, and
theirs read by sluice: Spark (pyspark in local mode), DuckDB and Polars.

    python3 tests/engines/parquet_engines.py [path/to/sluice]

A sharded TPC-H lineitem table is exported with --partition-by shard;
Spark's count(), a Q1-style aggregate (decimals compared exactly) and
filtered counts (which read the page indexes) must equal sluice's own
answers, and so must DuckDB's read_parquet(..., hive_partitioning=true)
and Polars' scan_parquet. Then Spark writes a partitioned dataset of its
own (snappy, _SUCCESS, .crc files), and sluice loads it with
--hive-partitioning and gives Spark's answers. A missing pyspark or Java
skips those parts with a printed reason, except under CI=true, where it
fails.
"""

import decimal
import os
import shutil
import subprocess
import sys
import tempfile

SLUICE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/sluice")
CI = os.environ.get("CI") == "true"
FAILED = []

Q1 = """SELECT l_returnflag, l_linestatus, count(*) AS n, sum(l_quantity) AS qty,
  sum(l_extendedprice) AS base, sum(l_extendedprice * (1 - l_discount)) AS disc,
  min(l_shipdate) AS first, max(l_comment) AS last
FROM {t} WHERE l_shipdate <= DATE '1998-09-02'
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus"""

FILTERS = [
    "l_orderkey > 30000",
    "l_quantity < 5",
    "l_shipdate >= DATE '1998-01-01'",
    "l_shipmode = 'AIR'",
    "l_comment < 'b'",
    "l_linenumber = 7",
]


def sluice(*args, db):
    out = subprocess.run([SLUICE, "--db", db, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"sluice {' '.join(args)} failed: {out.stderr}")
    return out.stdout


def sluice_rows(sql, db):
    """A query's rows as tuples of strings (CSV output)."""
    import csv
    import io

    text = sluice("query", "--format", "csv", sql, db=db)
    rows = list(csv.reader(io.StringIO(text)))
    return [tuple(r) for r in rows[1:]]


def norm(row):
    """Values as comparable text: decimals by value, dates as ISO."""
    out = []
    for v in row:
        if isinstance(v, decimal.Decimal):
            out.append(str(v.normalize()))
        elif hasattr(v, "isoformat"):
            out.append(v.isoformat())
        else:
            try:
                out.append(str(decimal.Decimal(v).normalize()))
            except (decimal.InvalidOperation, TypeError, ValueError):
                out.append(str(v))
    return tuple(out)


def check(what, got, want):
    got = [norm(r) for r in got]
    want = [norm(r) for r in want]
    if got == want:
        print(f"ok: {what} ({len(got)} rows)")
    else:
        print(f"FAILED: {what}\n  got:  {got[:4]}\n  want: {want[:4]}")
        FAILED.append(what)


def missing(what, why):
    if CI:
        print(f"FAILED: {what}: {why} (CI=true needs it)")
        FAILED.append(what)
    else:
        print(f"skipped: {what}: {why}")


def main():
    work = tempfile.mkdtemp(prefix="sluice-engines-")
    try:
        run(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if FAILED:
        print(f"{len(FAILED)} check(s) failed: {', '.join(FAILED)}")
        sys.exit(1)
    print("every engine check passed")


def run(work):
    db = os.path.join(work, "db")
    sluice("gen", "tpch", "--sf", "0.01", "--table", "lineitem", "--output", os.path.join(work, "tpch"), "--load", "-q", db=db)
    schema = sluice("info", "lineitem", "--json", db=db)
    import json

    schema = json.loads(schema)[0]["schema"]
    csv_file = os.path.join(work, "tpch", "lineitem.csv")
    sluice("load", "-q", "--schema", schema, "--shards", "4", "--shard-by", "l_orderkey", "li", csv_file, db=db)
    ds = os.path.join(work, "by_shard")
    sluice("export", "li", "--output", ds, "--partition-by", "shard", "--row-group-size", "20000", db=db)
    want_q1 = sluice_rows(Q1.format(t="li"), db)
    want_n = sluice_rows("SELECT count(*) FROM li", db)[0][0]
    want_filters = {f: sluice_rows(f"SELECT count(*) FROM li WHERE {f}", db)[0][0] for f in FILTERS}

    # DuckDB and Polars.
    try:
        import duckdb
    except ImportError:
        missing("DuckDB", "python3 cannot import duckdb (pip install duckdb)")
    else:
        src = f"read_parquet('{ds}/**/*.parquet', hive_partitioning=true)"
        check("DuckDB Q1", duckdb.sql(Q1.format(t=src)).fetchall(), want_q1)
        for f, n in want_filters.items():
            check(f"DuckDB WHERE {f}", duckdb.sql(f"SELECT count(*) FROM {src} WHERE {f}").fetchall(), [(n,)])
        shards = duckdb.sql(f"SELECT count(DISTINCT shard) FROM {src}").fetchall()
        check("DuckDB sees the shard column", shards, [(4,)])
    try:
        import polars as pl
    except ImportError:
        missing("Polars", "python3 cannot import polars (pip install polars)")
    else:
        lf = pl.scan_parquet(f"{ds}/**/*.parquet", hive_partitioning=True)
        got = lf.select(pl.len(), pl.col("l_extendedprice").sum(), pl.col("shard").n_unique()).collect().rows()
        full = sluice_rows("SELECT count(*), sum(l_extendedprice) FROM li", db)[0]
        check("Polars count, sum and shards", got, [(full[0], full[1], 4)])

    # Spark.
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        missing("Spark", "python3 cannot import pyspark (pip install pyspark; it needs Java 17)")
        return
    if shutil.which("java") is None:
        missing("Spark", "no java on PATH (apt-get install openjdk-17-jre-headless)")
        return
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("sluice-parquet-check")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        df = spark.read.parquet(ds)
        check("Spark sees the shard column", [("shard" in df.columns,)], [(True,)])
        check("Spark count()", [(df.count(),)], [(want_n,)])
        df.createOrReplaceTempView("li")
        spark_q1 = [tuple(r) for r in spark.sql(Q1.format(t="li")).collect()]
        check("Spark Q1 (decimals exact)", spark_q1, want_q1)
        for f, n in want_filters.items():
            got = spark.sql(f"SELECT count(*) FROM li WHERE {f}").collect()[0][0]
            check(f"Spark WHERE {f}", [(got,)], [(n,)])
        # Spark's own partitioned dataset, loaded by sluice.
        out = os.path.join(work, "from_spark")
        df.drop("shard").write.partitionBy("l_returnflag").parquet(out)
        spark_counts = [tuple(r) for r in spark.sql(
            "SELECT l_returnflag, count(*), sum(l_extendedprice), sum(l_quantity) FROM li GROUP BY 1 ORDER BY 1").collect()]
        db2 = os.path.join(work, "db2")
        sluice("load", "-q", "--hive-partitioning", "spark", out, db=db2)
        check(
            "sluice loads Spark's dataset",
            sluice_rows("SELECT l_returnflag, count(*), sum(l_extendedprice), sum(l_quantity) FROM spark GROUP BY 1 ORDER BY 1", db2),
            spark_counts,
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
