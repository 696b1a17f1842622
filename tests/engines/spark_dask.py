#!/usr/bin/env python3
"""The same load as tasks of Spark and Dask: sluice.spark.load (pyspark in
local mode, 2 cores, up to 4 attempts a task) and sluice.dask.load (a
LocalCluster of 2 single-thread worker processes) load 200 TSV files of
the secondary-index benchmark's shape into a bucketed Parquet dataset.

    python3 tests/engines/spark_dask.py [path/to/sluice] [--rows-per-file N]

For each engine:
- plain: row count, the key set and column sums equal those of the
  single-machine `sluice load` of the same files; Spark SQL (and Dask)
  aggregates over the dataset equal sluice's query of the table; the
  dataset loaded back with `sluice load` becomes a table of a shard a
  bucket, each file placed whole, with the same count, sums and
  aggregates;
- a task killed mid-write (SLUICE_FAULT_KILL_TASK): the engine runs it
  again; no row is missing, none is there twice;
- a duplicate key planted in two files that land in different tasks: the
  load fails, names both files and lines, and writes nothing.

Each case runs in a process of its own (the fault is set in the
environment its workers inherit). A missing pyspark, Java or dask skips
that engine with a printed reason, except under CI=true, where it fails.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

CI = os.environ.get("CI") == "true"
SCHEMA = "source_id TEXT, chunkId INT, subChunkId INT"
FILES = 200


def generate(d, rows_per_file):
    """200 TSV files of unique 19-digit source ids (fixed seed)."""
    import random

    rng = random.Random(7)
    ids = rng.sample(range(10**18, 10**19), FILES * rows_per_file)
    os.makedirs(os.path.join(d, "in"))
    for f in range(FILES):
        with open(os.path.join(d, "in", f"chunk-{f:05d}.tsv"), "w") as o:
            for i in range(rows_per_file):
                o.write(f"{ids[f * rows_per_file + i]}\t{f * 37 % 1000}\t{i % 1000}\n")


def sluice(exe, *args, db):
    out = subprocess.run([exe, "--db", db, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"sluice {' '.join(args)} failed: {out.stderr}")
    return out.stdout


def fingerprint_of_keys(keys):
    h = hashlib.sha256()
    for k in sorted(keys):
        h.update(k.encode())
        h.update(b"\n")
    return h.hexdigest()


AGG = "SELECT chunkId, count(*) AS n, sum(subChunkId) AS s FROM {t} GROUP BY chunkId ORDER BY chunkId"


def reference(exe, d):
    """What the single-machine load gives: counts, the key set, sums,
    and the aggregate."""
    db = os.path.join(d, "ref.db")
    sluice(exe, "load", "-q", "--tsv", "--no-header", "--schema", SCHEMA, "--key", "source_id", "t", os.path.join(d, "in"), db=db)
    keys = sluice(exe, "query", "--format", "csv", "SELECT source_id FROM t", db=db).split("\n")[1:]
    keys = [k for k in keys if k]
    sums = sluice(exe, "query", "--format", "csv", "SELECT count(*), sum(chunkId), sum(subChunkId) FROM t", db=db)
    n, s1, s2 = sums.split("\n")[1].split(",")
    agg = sluice(exe, "query", "--format", "csv", AGG.format(t="t"), db=db).split("\n")[1:]
    agg = [tuple(int(x) for x in r.split(",")) for r in agg if r]
    return {"rows": int(n), "keys": fingerprint_of_keys(keys), "distinct": len(set(keys)), "sums": (int(s1), int(s2)), "agg": agg}


def load_back(exe, d, out):
    """`sluice load` of the bucketed dataset into a new table: a shard a
    bucket, each file placed whole; the table's facts."""
    import json

    db = os.path.join(d, f"back-{os.path.basename(out)}.db")
    s = json.loads(sluice(exe, "load", "--json", "t", out, db=db))
    info = json.loads(sluice(exe, "info", "--json", "t", db=db))[0]
    sums = sluice(exe, "query", "--format", "csv", "SELECT count(*), sum(chunkId), sum(subChunkId) FROM t", db=db)
    n, s1, s2 = sums.split("\n")[1].split(",")
    agg = sluice(exe, "query", "--format", "csv", AGG.format(t="t"), db=db).split("\n")[1:]
    agg = [tuple(int(x) for x in r.split(",")) for r in agg if r]
    shutil.rmtree(db, ignore_errors=True)
    return {
        "rows": int(n),
        "sums": (int(s1), int(s2)),
        "agg": agg,
        "placed": s["files_by_bucket"],
        "shards": (info.get("sharding") or {}).get("count", 1),
    }


def dataset_facts(out):
    """The same facts read from the dataset's Parquet files (pyarrow),
    and that each bucket's rows hash to it."""
    import pyarrow.parquet as pq

    t = pq.read_table(out)
    keys = t.column("source_id").to_pylist()
    s1 = sum(t.column("chunkId").to_pylist())
    s2 = sum(t.column("subChunkId").to_pylist())
    return {"rows": t.num_rows, "keys": fingerprint_of_keys(keys), "distinct": len(set(keys)), "sums": (s1, s2)}


def check_same(name, got, want, failed):
    for k in ("rows", "distinct", "keys", "sums"):
        if got[k] != want[k]:
            failed.append(f"{name}: {k} {got[k]!r} != {want[k]!r}")


# --- one case, in a process of its own ---------------------------------


def run_case(engine, case, d):
    import sluice._distributed

    out = os.path.join(d, f"out-{engine}-{case}")
    options = dict(tsv=True, header=False, schema=SCHEMA, key="source_id", buckets=4, tasks=4)
    if case == "duplicate":
        options["tasks"] = 2
    if engine == "spark":
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[2,4]")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        import sluice.spark

        def load():
            return sluice.spark.load(spark, os.path.join(d, "in"), out, **options)
    else:
        from dask.distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        import sluice.dask

        def load():
            return sluice.dask.load(os.path.join(d, "in"), out, client=client, **options)

    result = {"case": case}
    if case == "duplicate":
        files = sluice._distributed._expand([os.path.join(d, "in")])
        shares = sluice._distributed.share_out(files, 2)
        # The two files the duplicate was planted in (see main).
        result["apart"] = len(shares) == 2 and not (set(shares[0]) & set(shares[1]))
        try:
            load()
            result["error"] = None
        except sluice.LoadError as e:
            result["error"] = str(e)
        result["exists"] = os.path.exists(out)
        result["leftovers"] = [n for n in os.listdir(d) if n.startswith(".")]
    else:
        s = load()
        result["summary"] = s
        result["facts"] = dataset_facts(out)
        result["leftovers"] = [n for n in os.listdir(d) if n.startswith(".")]
        if engine == "spark":
            df = spark.read.parquet(out)
            df.createOrReplaceTempView("ds")
            rows = spark.sql(AGG.format(t="ds")).collect()
            result["agg"] = [(r[0], r[1], r[2]) for r in rows]
            result["bucket_col"] = "bucket" in df.columns
        else:
            import dask.dataframe as dd

            df = dd.read_parquet(out)
            g = df.groupby("chunkId").agg({"subChunkId": ["count", "sum"]}).compute()
            result["agg"] = sorted((int(i), int(r.iloc[0]), int(r.iloc[1])) for i, r in g.iterrows())
        if case == "fault":
            marks = os.environ["SLUICE_FAULT_KILL_TASK"].split(":", 1)[1]
            result["killed"] = os.path.exists(os.path.join(marks, "killed-1"))
            result["retried"] = os.path.exists(os.path.join(marks, "retried-1"))
    print("RESULT " + repr(result), flush=True)
    if engine == "dask":
        client.close()
        cluster.close()


def main():
    args = [a for a in sys.argv[1:]]
    if args and args[0] == "--case":
        run_case(args[1], args[2], args[3])
        return
    rows_per_file = 500
    if "--rows-per-file" in args:
        i = args.index("--rows-per-file")
        rows_per_file = int(args[i + 1])
        del args[i : i + 2]
    exe = os.path.abspath(args[0] if args else "target/release/sluice")
    failed = []
    engines = []
    try:
        import pyspark  # noqa: F401

        if shutil.which("java") is None:
            raise ImportError("java is not on PATH")
        engines.append("spark")
    except ImportError as e:
        if CI:
            failed.append(f"spark: {e} (CI=true requires pyspark and Java)")
        else:
            print(f"spark: skipped: {e}")
    try:
        import dask.distributed  # noqa: F401

        engines.append("dask")
    except ImportError as e:
        if CI:
            failed.append(f"dask: {e} (CI=true requires dask[distributed])")
        else:
            print(f"dask: skipped: {e}")
    d = tempfile.mkdtemp(prefix="sluice-distributed-")
    try:
        generate(d, rows_per_file)
        ref = reference(exe, d)
        # The planted duplicate, in a copy of the files: the 11th line of
        # the last file of the second task repeats the key of the 6th
        # line of the first file of the first (two tasks). Every key has
        # 19 digits: the sizes, so the shares, stay as they were.
        import sluice._distributed

        shares = sluice._distributed.share_out(sluice._distributed._expand([os.path.join(d, "in")]), 2)
        first_name, second_name = os.path.basename(shares[0][0]), os.path.basename(shares[1][-1])
        dup = os.path.join(d, "dup")
        shutil.copytree(os.path.join(d, "in"), os.path.join(dup, "in"))
        first = open(os.path.join(dup, "in", first_name)).read().split("\n")
        key = first[5].split("\t")[0]
        second_path = os.path.join(dup, "in", second_name)
        second = open(second_path).read().split("\n")
        second[10] = key + second[10][len(key) :]
        open(second_path, "w").write("\n".join(second))
        for engine in engines:
            for case in ("plain", "fault", "duplicate"):
                env = dict(os.environ)
                where = dup if case == "duplicate" else d
                if case == "fault":
                    marks = os.path.join(d, f"marks-{engine}")
                    os.makedirs(marks)
                    env["SLUICE_FAULT_KILL_TASK"] = f"1:{marks}"
                p = subprocess.run(
                    [sys.executable, __file__, "--case", engine, case, where],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=600,
                )
                lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
                name = f"{engine} {case}"
                if p.returncode != 0 or not lines:
                    failed.append(f"{name}: exit {p.returncode}: {p.stderr[-3000:]}")
                    continue
                r = eval(lines[-1][len("RESULT ") :])
                if case == "duplicate":
                    want = [f"{second_name}:11 repeats the key of ", f"{first_name}:6"]
                    if not r["apart"]:
                        failed.append(f"{name}: the two files landed in one task; the case tests nothing")
                    if r["error"] is None or not all(w in r["error"] for w in want) or key not in r["error"]:
                        failed.append(f"{name}: expected an error naming both files and lines, got {r['error']!r}")
                    if r["exists"] or r["leftovers"]:
                        failed.append(f"{name}: something was written: {r['exists']} {r['leftovers']}")
                    print(f"{name}: ok: {r['error']}")
                    continue
                check_same(name, r["facts"], ref, failed)
                if r["summary"]["rows"] != ref["rows"]:
                    failed.append(f"{name}: the summary says {r['summary']['rows']} rows")
                if r["agg"] != ref["agg"]:
                    failed.append(f"{name}: aggregates differ from sluice's: {r['agg'][:3]} vs {ref['agg'][:3]}")
                if r["leftovers"]:
                    failed.append(f"{name}: staging left behind: {r['leftovers']}")
                if engine == "spark" and not r["bucket_col"]:
                    failed.append(f"{name}: Spark does not see the bucket directories")
                if case == "fault" and not (r["killed"] and r["retried"]):
                    failed.append(f"{name}: the fault was not injected and retried: {r}")
                if case == "plain":
                    back = load_back(exe, d, os.path.join(d, f"out-{engine}-{case}"))
                    for k in ("rows", "sums", "agg"):
                        if back[k] != ref[k]:
                            failed.append(f"{name}: loaded back, {k} {back[k]!r} != {ref[k]!r}")
                    if back["placed"] != r["summary"]["files_written"]:
                        failed.append(
                            f"{name}: loaded back, {back['placed']} files placed by bucket of {r['summary']['files_written']}"
                        )
                    if back["shards"] != 4:
                        failed.append(f"{name}: loaded back into {back['shards']} shards, not a shard a bucket")
                print(f"{name}: ok: {r['summary']['rows']} rows, {r['summary']['tasks']} tasks, {r['summary']['files_written']} files")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if failed:
        print("FAILED:\n  " + "\n  ".join(failed))
        sys.exit(1)
    print(f"distributed loads: {len(engines)} engines, every case passed")


if __name__ == "__main__":
    main()
