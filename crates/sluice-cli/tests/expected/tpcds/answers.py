"""Writes sf0.01-<query>.csv: DuckDB's answer to each TPC-DS query here over
the CSV files `sluice gen tpcds --sf 0.01 --output DIR` writes, read with
the schema sluice loads them with (DECIMAL money, DATE dates, TEXT).

    sluice gen tpcds --sf 0.01 --output /tmp/tpcds-csv
    python3 answers.py /tmp/tpcds-csv

Cells: NULL empty, dates ISO, decimals as DuckDB prints them, doubles as
Python's repr; a cell with a comma, quote or line break is quoted.
"""
import csv
import glob
import os
import re
import subprocess
import sys

import duckdb

here = os.path.dirname(os.path.abspath(__file__))
data = sys.argv[1]
sluice = os.environ.get("SLUICE", "sluice")
con = duckdb.connect()
con.execute("SET threads TO 2")
for path in sorted(glob.glob(os.path.join(data, "*.csv"))):
    table = os.path.basename(path)[:-4]
    # The load command `gen tpcds` prints has the schema: name TYPE, ...
    schema = None
    with open(path, newline="") as f:
        header = f.readline().strip().split(",")
    out = subprocess.run(
        [sluice, "gen", "tpcds", "--sf", "0.01", "--table", table, "--output", data],
        capture_output=True, text=True, check=True,
    ).stdout
    m = re.search(r'--schema "([^"]*)"', out)
    cols = {}
    for part in m.group(1).split(", "):
        name, ty = part.split(" ", 1)
        cols[name] = "VARCHAR" if ty == "TEXT" else ty
    con.execute(
        f"CREATE TABLE {table} AS SELECT * FROM read_csv(?, header=true, columns={cols!r}, quote='\"', nullstr='')",
        [path],
    )


def cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v)


for q in sorted(glob.glob(os.path.join(here, "q*.sql"))):
    name = os.path.basename(q)[:-4]
    sql = open(q).read()
    try:
        cur = con.execute(sql)
        rows = cur.fetchall()
        names = [d[0] for d in cur.description]
    except Exception as e:  # noqa: BLE001
        print(f"{name}: DuckDB failed: {e}", file=sys.stderr)
        continue
    with open(os.path.join(here, f"sf0.01-{name}.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(names)
        for r in rows:
            w.writerow([cell(v) for v in r])
    print(f"{name}: {len(rows)} rows")
