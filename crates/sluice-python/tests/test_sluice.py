"""The Python package against a real database in a temporary directory.

Run from the checkout after `pip install ./crates/sluice-python` (or a
wheel built with maturin): python -m pytest crates/sluice-python/tests
"""

import concurrent.futures
import datetime
import decimal
import fcntl
import gc
import importlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import sluice


def need(module):
    """The module, or a skip that says why; under CI=true a missing
    module is a failure, never a skip."""
    if os.environ.get("CI") == "true":
        # import_module, not __import__: for "pyarrow.parquet" the
        # latter returns the package, pyarrow.
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=f"{module} is not installed (pip install {module})")


pa = need("pyarrow")

TYPED = (
    "id BIGINT PRIMARY KEY, n INT, price DECIMAL(15,2), d DATE, "
    "ts TIMESTAMP, ok BOOLEAN, x DOUBLE, name TEXT"
)
TYPED_ROWS = [
    "1,10,12.50,2024-01-31,2024-01-31 10:20:30,true,1.5,ada",
    "2,,0.05,2023-12-01,2023-12-01 00:00:00,false,-2.25,grace",
    "3,30,,,,,,",
    "4,-7,-99.99,1999-12-31,1999-12-31 23:59:59.123456,true,0,ada",
]


@pytest.fixture
def typed(tmp_path):
    csv = tmp_path / "typed.csv"
    csv.write_text("\n".join(["id,n,price,d,ts,ok,x,name"] + TYPED_ROWS) + "\n")
    db = sluice.connect(tmp_path / "db")
    summary = db.load("t", csv, schema=TYPED, progress=False)
    assert summary.rows == 4
    return db, csv


def test_connect_is_a_context_manager_and_an_empty_path_has_no_tables(tmp_path):
    with sluice.connect(tmp_path / "none") as db:
        assert db.tables() == []
        assert db.path == str(tmp_path / "none")
        assert db.threads is None
    with pytest.raises(ValueError, match="threads must be at least 1"):
        sluice.connect(tmp_path, threads=0)


def test_every_type_reaches_pyarrow_with_its_arrow_type_and_nulls(typed):
    db, _ = typed
    t = db.query("SELECT * FROM t ORDER BY id").to_arrow()
    assert t.schema.field("id").type == pa.int64()
    assert t.schema.field("n").type == pa.int32()
    assert t.schema.field("price").type == pa.decimal128(15, 2)
    assert t.schema.field("d").type == pa.date32()
    assert t.schema.field("ts").type == pa.timestamp("us")
    assert t.schema.field("ok").type == pa.bool_()
    assert t.schema.field("x").type == pa.float64()
    assert pa.types.is_string(t.schema.field("name").type) or pa.types.is_dictionary(
        t.schema.field("name").type
    )
    rows = t.to_pylist()
    assert rows[0] == {
        "id": 1,
        "n": 10,
        "price": decimal.Decimal("12.50"),
        "d": datetime.date(2024, 1, 31),
        "ts": datetime.datetime(2024, 1, 31, 10, 20, 30),
        "ok": True,
        "x": 1.5,
        "name": "ada",
    }
    assert rows[1]["n"] is None
    assert rows[2] == {
        "id": 3,
        "n": 30,
        "price": None,
        "d": None,
        "ts": None,
        "ok": None,
        "x": None,
        "name": None,
    }
    assert rows[3]["ts"] == datetime.datetime(1999, 12, 31, 23, 59, 59, 123456)
    assert rows[3]["price"] == decimal.Decimal("-99.99")


def test_aggregates_and_their_types(typed):
    db, _ = typed
    r = db.query("SELECT name, count(*) AS c, sum(price) AS s FROM t GROUP BY name ORDER BY name NULLS LAST")
    assert r.column_names == ["name", "c", "s"]
    assert r.num_rows == 3 and len(r) == 3
    rows = r.to_arrow().to_pylist()
    assert rows[0] == {"name": "ada", "c": 2, "s": decimal.Decimal("-87.49")}
    assert rows[2]["name"] is None
    assert "3 rows" in repr(r)


def test_polars_and_pandas(typed):
    db, _ = typed
    pl = need("polars")
    df = db.query("SELECT id, price, d FROM t ORDER BY id").to_polars()
    assert isinstance(df, pl.DataFrame)
    assert df.shape == (4, 3)
    assert df["id"].to_list() == [1, 2, 3, 4]
    assert df["d"][0] == datetime.date(2024, 1, 31)
    assert df.schema["price"] == pl.Decimal(15, 2)
    # The PyCapsule interface directly, as polars and others take it.
    assert pl.DataFrame(db.query("SELECT count(*) AS c FROM t"))["c"].to_list() == [4]
    pd = need("pandas")
    pdf = db.query("SELECT id, x FROM t ORDER BY id").to_pandas()
    assert isinstance(pdf, pd.DataFrame)
    assert list(pdf["id"]) == [1, 2, 3, 4]



def test_pandas_keeps_integers_with_nulls_exact(tmp_path):
    pd = need("pandas")
    csv = tmp_path / "big.csv"
    csv.write_text("id,x,b\n1,9223372036854775807,true\n2,,\n3,-9223372036854775807,false\n")
    db = sluice.connect(tmp_path / "db")
    db.load("t", csv, schema="id BIGINT, x BIGINT, b BOOLEAN", progress=False)
    pdf = db.query("SELECT id, x, b FROM t ORDER BY id").to_pandas()
    assert str(pdf["x"].dtype) == "Int64"
    assert pdf["x"][0] == 9223372036854775807
    assert pdf["x"][2] == -9223372036854775807
    assert pd.isna(pdf["x"][1])
    assert str(pdf["b"].dtype) == "boolean"
    # A column without NULLs keeps numpy's type.
    assert str(pdf["id"].dtype) == "int64"


def test_timestamptz_reaches_arrow_and_pandas_as_utc_instants(tmp_path):
    pa = need("pyarrow")
    pd = need("pandas")
    csv = tmp_path / "ev.csv"
    csv.write_text("id,t\n1,2024-01-31T23:30:00Z\n2,2024-02-01 01:15:00+02:00\n3,\n")
    db = sluice.connect(tmp_path / "db")
    db.load("ev", csv, progress=False)
    assert ("t", "TIMESTAMPTZ") in db.schema("ev")
    tbl = db.query("SELECT t FROM ev ORDER BY id").to_arrow()
    assert pa.types.is_timestamp(tbl.schema.field("t").type)
    assert tbl.schema.field("t").type.tz is not None
    pdf = db.query("SELECT id, t FROM ev ORDER BY id").to_pandas()
    want = pd.Timestamp("2024-01-31 23:15:00", tz="UTC")
    assert pdf["t"][1] == want
    assert pdf["t"][0] == pd.Timestamp("2024-01-31 23:30:00", tz="UTC")
    assert pd.isna(pdf["t"][2])


def test_times_of_day_from_text_and_arrow_reach_python_as_times(tmp_path):
    pa = need("pyarrow")
    csv = tmp_path / "open.csv"
    csv.write_text("id,opens\n1,09:30:00\n2,23:59:59.5\n3,\n")
    db = sluice.connect(tmp_path / "db")
    db.load("shops", csv, progress=False)
    assert ("opens", "TIME") in db.schema("shops")
    tbl = db.query("SELECT opens, opens + INTERVAL '1 hour' AS later FROM shops ORDER BY id").to_arrow()
    assert tbl.schema.field("opens").type == pa.time64("us")
    assert tbl.column("opens").to_pylist() == [datetime.time(9, 30), datetime.time(23, 59, 59, 500000), None]
    assert tbl.column("later").to_pylist() == [datetime.time(10, 30), datetime.time(0, 59, 59, 500000), None]
    # Arrow's times of every unit load as TIME; nanoseconds only when whole microseconds.
    arrow = pa.table(
        {
            "id": [1, 2],
            "s": pa.array([3600, None], pa.time32("s")),
            "ms": pa.array([1, 86_399_999], pa.time32("ms")),
            "ns": pa.array([1_000, None], pa.time64("ns")),
        }
    )
    db.load("clock", arrow)
    assert [c for c in db.schema("clock") if c[0] != "id"] == [("s", "TIME"), ("ms", "TIME"), ("ns", "TIME")]
    back = db.query("SELECT s, ms, ns FROM clock ORDER BY id").to_arrow().to_pylist()
    assert back == [
        {"s": datetime.time(1), "ms": datetime.time(0, 0, 0, 1000), "ns": datetime.time(0, 0, 0, 1)},
        {"s": None, "ms": datetime.time(23, 59, 59, 999000), "ns": None},
    ]
    with pytest.raises(sluice.LoadError, match="would change"):
        db.load("frac", pa.table({"ns": pa.array([1_001], pa.time64("ns"))}))
    with pytest.raises(sluice.LoadError, match="not a time of day"):
        db.load("late", pa.table({"t": pa.array([86_401], pa.time32("s"))}))


def test_intervals_load_from_text_and_arrow_and_reach_arrow(tmp_path):
    pa = need("pyarrow")
    csv = tmp_path / "spans.csv"
    csv.write_text("id,iv\n1,1 year 2 mons 3 days 04:05:06.5\n2,-1 days +02:00:00\n3,\n")
    db = sluice.connect(tmp_path / "db")
    db.load("spans", csv, schema="id BIGINT, iv INTERVAL", progress=False)
    assert ("iv", "INTERVAL") in db.schema("spans")
    tbl = db.query("SELECT iv FROM spans ORDER BY id").to_arrow()
    assert tbl.schema.field("iv").type == pa.month_day_nano_interval()
    got = [None if v is None else (v.months, v.days, v.nanoseconds) for v in tbl.column("iv").to_pylist()]
    assert got == [(14, 3, 14_706_500_000_000), (0, -1, 7_200_000_000_000), None]
    arrow = pa.table({"iv": pa.array([pa.MonthDayNano([1, -2, 3_000]), None], pa.month_day_nano_interval())})
    db.load("more", arrow)
    assert db.query("SELECT CAST(iv AS TEXT) AS t FROM more").to_arrow().column("t").to_pylist() == [
        "1 mon -2 days +00:00:00.000003",
        None,
    ]
    with pytest.raises(sluice.LoadError, match="whole microseconds"):
        db.load("finer", pa.table({"iv": pa.array([pa.MonthDayNano([0, 0, 1])], pa.month_day_nano_interval())}))


def test_deep_or_long_sql_is_an_exception_not_a_crash(tmp_path):
    need("pyarrow")
    csv = tmp_path / "t.csv"
    csv.write_text("id\n" + "".join(f"{i}\n" for i in range(1000)))
    db = sluice.connect(tmp_path / "db")
    db.load("t", csv, schema="id BIGINT", progress=False)
    with pytest.raises(sluice.Error, match="stack depth limit exceeded"):
        db.query("SELECT " + "+".join(["1"] * 20000))
    with pytest.raises(sluice.Error, match="stack depth limit exceeded"):
        db.query("SELECT count(*) FROM t WHERE " + " + ".join(["id"] * 2000) + " > 0")
    ids = ", ".join(str(i) for i in range(0, 100000, 2))
    assert db.query(f"SELECT count(*) AS c FROM t WHERE id IN ({ids})").to_arrow().to_pylist() == [{"c": 500}]
    ors = " OR ".join(f"id = {i}" for i in range(2000))
    assert db.query(f"SELECT count(*) AS c FROM t WHERE {ors}").to_arrow().to_pylist() == [{"c": 1000}]

def test_the_export_does_not_copy_the_buffers(tmp_path):
    csv = tmp_path / "big.csv"
    csv.write_text("".join(f"{i},{i * 3}\n" for i in range(100_000)))
    db = sluice.connect(tmp_path / "db")
    db.load("big", csv, schema="a BIGINT, b BIGINT", progress=False)
    r = db.query("SELECT * FROM big")
    rust = r._buffer_addresses()
    t = r.to_arrow()
    seen = [t.column(i).chunks[0].buffers() for i in range(2)]
    # buffers(): [validity, values] for a primitive column.
    for col in range(2):
        values = seen[col][1]
        assert values.address in rust[col], (values.address, rust[col])


def test_a_result_outlives_its_database_handle(typed):
    db, _ = typed
    r = db.query("SELECT id, name FROM t ORDER BY id")
    db.close()
    del db
    gc.collect()
    assert r.to_arrow().column("id").to_pylist() == [1, 2, 3, 4]
    # Read twice: the result is not used up.
    assert pa.table(r).num_rows == 4


def test_many_threads_query_one_handle(typed):
    db, _ = typed

    def one(i):
        r = db.query(f"SELECT count(*) AS c, sum(n) AS s FROM t WHERE id >= {i % 4 + 1}")
        return i, r.to_arrow().to_pylist()[0]

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        got = list(ex.map(one, range(200)))
    expected = {1: (4, 33), 2: (3, 23), 3: (2, 23), 4: (1, -7)}
    for i, row in got:
        assert (row["c"], row["s"]) == expected[i % 4 + 1], (i, row)


def test_get_returns_rows_in_the_order_asked(typed):
    db, _ = typed
    r = db.get("t", [4, 1, 99, "2", 4])
    assert r.to_arrow().column("id").to_pylist() == [4, 1, 2, 4]
    assert db.get("t", 3).num_rows == 1
    assert db.get("t", []).num_rows == 0
    with pytest.raises(TypeError, match="a key is a str or an int, not bool"):
        db.get("t", [True])
    with pytest.raises(sluice.Error, match="nope"):
        db.get("nope", [1])


def test_tables_schema_and_check(typed):
    db, _ = typed
    assert db.tables() == ["t"]
    cols = db.schema("t")
    assert cols[0] == ("id", "BIGINT PRIMARY KEY")
    assert cols[2] == ("price", "DECIMAL(15,2)")
    assert len(cols) == 8
    with pytest.raises(sluice.Error, match="does not exist"):
        db.schema("nope")
    [report] = db.check()
    assert report["table"] == "t" and report["ok"] is True and report["problems"] == []
    assert report["segments"] >= 1


def test_check_finds_a_damaged_segment(typed, tmp_path):
    db, _ = typed
    segs = [
        os.path.join(root, f)
        for root, _, files in os.walk(tmp_path / "db")
        for f in files
        if f.endswith(".arrow")
    ]
    assert segs, "the table has a segment file"
    with open(segs[0], "r+b") as f:
        f.seek(os.path.getsize(segs[0]) // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    [report] = db.check("t")
    assert report["ok"] is False
    assert report["problems"], report


def test_inferred_load_resume_and_summary(tmp_path):
    a = tmp_path / "in" / "a.csv"
    a.parent.mkdir()
    a.write_text("zip,amount,day\n00501,1.50,2024-01-01\n02134,2.25,2024-01-02\n")
    (tmp_path / "in" / "b.csv").write_text("zip,amount,day\n10001,3.00,2024-01-03\n")
    db = sluice.connect(tmp_path / "db")
    s = db.load("sales", str(tmp_path / "in" / "*.csv"), progress=False)
    assert (s.rows, s.files, s.files_skipped, s.created, s.inferred) == (3, 2, 0, True, True)
    assert "zip TEXT" in s.schema, s.schema  # leading zeros kept
    assert s.bytes > 0 and s.seconds >= 0 and s.commits == 1
    again = db.load("sales", [tmp_path / "in" / "a.csv", tmp_path / "in" / "b.csv"], progress=False)
    assert (again.rows, again.files_skipped) == (0, 2)
    assert db.query("SELECT count(*) AS c FROM sales").to_arrow().column("c").to_pylist() == [3]
    assert db.query("SELECT zip FROM sales ORDER BY zip").to_arrow().column("zip").to_pylist()[0] == "00501"
    assert "sales" in repr(s)


def test_load_options_mirror_the_command_line(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("# a comment\nk|v\nA|1\nB|NA\n")
    db = sluice.connect(tmp_path / "db")
    s = db.load(
        "kv",
        f,
        schema="k TEXT, v INT",
        delimiter="|",
        comment="#",
        null="NA",
        header=True,
        progress=False,
    )
    assert s.rows == 2
    rows = db.query("SELECT k, v FROM kv ORDER BY k").to_arrow().to_pylist()
    assert rows == [{"k": "A", "v": 1}, {"k": "B", "v": None}]
    with pytest.raises(TypeError, match="unexpected keyword argument 'delimeter'"):
        db.load("kv", f, delimeter="|")
    # Segments written through the page cache: the same table.
    s = db.load("kv2", f, schema="k TEXT, v INT", delimiter="|", comment="#", null="NA", header=True, page_cache=True, progress=False)
    assert s.rows == 2
    assert db.query("SELECT k, v FROM kv2 ORDER BY k").to_arrow().to_pylist() == rows
    with pytest.raises(TypeError, match="unexpected keyword argument 'map_files'"):
        db.load("kv3", f, map_files=True)
    with pytest.raises(ValueError, match="on_error"):
        db.load("kv", f, on_error="ignore")


def test_a_malformed_record_is_a_load_error_with_file_line_and_column(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("a,b\n1,2\n3,x\n")
    db = sluice.connect(tmp_path / "db")
    with pytest.raises(sluice.LoadError) as e:
        db.load("t", f, schema="a INT, b INT", progress=False)
    err = e.value
    assert err.file == str(f)
    assert err.line == 3
    assert err.column is not None and "b" in err.column
    assert err.byte is not None
    assert "nothing was committed" in str(err)
    assert f"{f}:3" in str(err)
    assert db.tables() == []
    # The same file with rejects set aside.
    rejects = tmp_path / "rejects.csv"
    s = db.load("t", f, schema="a INT, b INT", rejects=rejects, progress=False)
    assert (s.rows, s.rejected) == (1, 1)
    assert "3,x" in rejects.read_text()


def test_query_errors_carry_sqlstate(typed):
    db, _ = typed
    cases = [
        ("SELEC 1", "42601"),
        ("SELECT nope FROM t", "42703"),
        ("SELECT * FROM nope", "42P01"),
        ("SELECT id / (id - id) FROM t", "22012"),
    ]
    for sql, code in cases:
        with pytest.raises(sluice.QueryError) as e:
            db.query(sql)
        assert e.value.sqlstate == code, (sql, e.value.sqlstate, str(e.value))
    assert isinstance(e.value, sluice.Error)
    assert db.query("EXPLAIN SELECT count(*) FROM t").explain
    analyzed = db.query("EXPLAIN ANALYZE SELECT id % 2, count(*) FROM t GROUP BY 1").explain
    assert "Result: 2 rows in " in analyzed, analyzed
    assert "Steps (as run" in analyzed, analyzed


def test_memory_limit_stops_a_query_with_53200(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("k\n" + "".join(f"{i}\n" for i in range(50_000)))
    # A mark join's build side (EXISTS under OR) does not spill: past
    # the limit it stops. A join by keys spills and answers.
    sql = "SELECT count(*) FROM t a WHERE EXISTS (SELECT 1 FROM t b WHERE b.k = a.k) OR a.k < 0"
    with sluice.connect(tmp_path / "db", memory_limit="256KiB") as db:
        assert db.memory_limit == 256 << 10
        db.load("t", csv, schema="k BIGINT", progress=False)
        with pytest.raises(sluice.QueryError) as e:
            db.query(sql)
        assert e.value.sqlstate == "53200", str(e.value)
        assert "out of memory" in str(e.value)
        joined = db.query("SELECT count(*) FROM t a JOIN t b ON a.k = b.k")
        assert joined.num_rows == 1
        if importlib.util.find_spec("pyarrow") is not None:
            assert joined.to_arrow().to_pylist() == [{"count(*)": 50_000}]
    # In bytes, and the default: the same query answers.
    r = sluice.connect(tmp_path / "db", memory_limit=1 << 30).query(sql)
    assert r.num_rows == 1
    if importlib.util.find_spec("pyarrow") is not None:
        assert r.to_arrow().to_pylist() == [{"count(*)": 50_000}]
    assert sluice.connect(tmp_path / "db").memory_limit > 0
    with pytest.raises(ValueError, match="memory_limit"):
        sluice.connect(tmp_path / "db", memory_limit="lots")
    with pytest.raises(TypeError, match="memory_limit"):
        sluice.connect(tmp_path / "db", memory_limit=[1])


def test_a_grouping_past_the_memory_limit_spills_to_temp_dir(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("k\n" + "".join(f"{i}\n" for i in range(50_000)))
    scratch = tmp_path / "scratch"
    sql = "SELECT count(*) AS c FROM (SELECT k, count(*) FROM t GROUP BY k HAVING max(k) % 100 = 0) x"
    with sluice.connect(tmp_path / "db", memory_limit="256KiB", temp_dir=scratch) as db:
        db.load("t", csv, schema="k BIGINT", progress=False)
        r = db.query(sql)
        assert r.num_rows == 1
        if importlib.util.find_spec("pyarrow") is not None:
            assert r.to_arrow().to_pylist() == [{"c": 500}]
        plan = db.query("EXPLAIN ANALYZE " + sql).explain
        assert "Spilled to disk by operator:" in plan, plan
    # The spill root was made; the query's directory is gone.
    assert scratch.is_dir()
    assert [p.name for p in scratch.iterdir()] == []


def test_an_answer_past_the_memory_limit_is_read_back_from_disk(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("k\n" + "".join(f"{i}\n" for i in range(50_000)))
    scratch = tmp_path / "scratch"
    # 50,000 rows of two BIGINTs: about 800 KiB, past 256 KiB. They go
    # to disk as they are made and come back, in order, into the result.
    sql = "SELECT k, k * 3 AS t FROM t ORDER BY k DESC"
    with sluice.connect(tmp_path / "db", memory_limit="256KiB", temp_dir=scratch) as db:
        db.load("t", csv, schema="k BIGINT", progress=False)
        r = db.query(sql)
        assert r.num_rows == 50_000
        if importlib.util.find_spec("pyarrow") is not None:
            t = r.to_arrow()
            assert t.column("k").to_pylist() == list(range(49_999, -1, -1))
            assert t.column("t").to_pylist() == [3 * k for k in range(49_999, -1, -1)]
    assert [p.name for p in scratch.iterdir()] == []


def test_a_duplicate_key_fails_the_load_and_keeps_the_table(typed):
    db, csv = typed
    with pytest.raises(sluice.LoadError, match="duplicate"):
        db.load("t", csv, progress=False, reload=True)
    assert db.query("SELECT count(*) AS c FROM t").to_arrow().column("c").to_pylist() == [4]


def test_a_locked_database_raises_locked_error(typed, tmp_path):
    db, csv = typed
    with open(tmp_path / "db" / "LOCK", "r+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(sluice.LockedError, match="locked"):
            db.load("t2", csv, schema=TYPED, progress=False)
    assert db.load("t2", csv, schema=TYPED, progress=False).rows == 4


def test_loading_arrow_data_from_pyarrow_and_polars(tmp_path):
    db = sluice.connect(tmp_path / "db")
    table = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "small": pa.array([1, None, 3], pa.int16()),
            "name": ["a", None, "c"],
            "price": pa.array([decimal.Decimal("1.10"), None, decimal.Decimal("3.30")], pa.decimal128(9, 2)),
            "d": pa.array([datetime.date(2024, 1, 1), None, datetime.date(2024, 3, 1)]),
            "ts": pa.array([datetime.datetime(2024, 1, 1, 1, 2, 3), None, None], pa.timestamp("ms")),
            "f": pa.array([True, False, None]),
        }
    )
    s = db.load("a", table, key="id")
    assert (s.rows, s.created, s.inferred) == (3, True, True)
    assert s.schema.startswith("id BIGINT PRIMARY KEY"), s.schema
    back = db.query("SELECT * FROM a ORDER BY id").to_arrow()
    assert back.column("small").type == pa.int32()
    assert back.column("small").to_pylist() == [1, None, 3]
    assert back.column("price").to_pylist() == [decimal.Decimal("1.10"), None, decimal.Decimal("3.30")]
    assert back.column("ts").to_pylist()[0] == datetime.datetime(2024, 1, 1, 1, 2, 3)
    assert db.get("a", [3]).to_arrow().column("name").to_pylist() == ["c"]
    # A duplicate key in appended data: nothing committed.
    with pytest.raises(sluice.LoadError, match="duplicate"):
        db.load("a", pa.table({c: table.column(c).slice(0, 1) for c in table.column_names}))
    assert db.query("SELECT count(*) AS c FROM a").to_arrow().column("c").to_pylist() == [3]

    pl = need("polars")
    df = pl.DataFrame({"id": [4, 5], "small": [5, 6], "name": ["d", "e"], "price": [None, None],
                       "d": [None, None], "ts": [None, None], "f": [None, True]})
    df = df.with_columns(pl.col("price").cast(pl.Decimal(9, 2)), pl.col("d").cast(pl.Date),
                         pl.col("ts").cast(pl.Datetime("us")), pl.col("f").cast(pl.Boolean))
    s = db.load("a", df)
    assert (s.rows, s.created, s.inferred) == (2, False, False)
    assert db.query("SELECT count(*) AS c FROM a").to_arrow().column("c").to_pylist() == [5]
    # A type that does not fit the table's column.
    bad = df.head(1).with_columns(pl.lit(6).alias("id"), pl.lit("x").alias("small"))
    with pytest.raises(sluice.LoadError, match="small"):
        db.load("a", bad)
    with pytest.raises(TypeError, match="are for files"):
        db.load("a", df, delimiter=",")


def test_arrow_columns_match_by_name_and_no_value_changes_on_the_way(tmp_path):
    db = sluice.connect(tmp_path / "db")
    db.load("t", pa.table({"a": pa.array([1, 2], pa.int64()), "b": pa.array([10, 20], pa.int64())}))
    # The same columns in another order, and other case: each into its own.
    db.load("t", pa.table({"B": pa.array([30], pa.int64()), "a": pa.array([3], pa.int64())}))
    rows = db.query("SELECT a, b FROM t ORDER BY a").to_arrow().to_pylist()
    assert rows[-1] == {"a": 3, "b": 30}
    with pytest.raises(sluice.LoadError, match="no column b"):
        db.load("t", pa.table({"a": [4], "c": [40]}))
    # A fraction into an integer column would change: refused.
    with pytest.raises(sluice.LoadError, match=r"column a: .*1\.7.* would change"):
        db.load("t", pa.table({"a": pa.array([1.0, 1.7]), "b": pa.array([1, 2], pa.int64())}))
    # Whole floats fit.
    db.load("t", pa.table({"a": pa.array([5.0]), "b": pa.array([50], pa.int64())}))
    # A decimal rounded to the column's scale would change: refused.
    db.load("d", pa.table({"p": pa.array([decimal.Decimal("1.25")], pa.decimal128(5, 2))}))
    with pytest.raises(sluice.LoadError, match="would change"):
        db.load("d", pa.table({"p": pa.array([decimal.Decimal("1.255")], pa.decimal128(6, 3))}))
    assert db.query("SELECT count(*) AS c FROM t").to_arrow().column("c").to_pylist() == [4]


def test_option_pairs_the_command_line_refuses_are_refused(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("a\n1\n")
    db = sluice.connect(tmp_path / "db")
    with pytest.raises(TypeError, match="tsv=True and delimiter="):
        db.load("t", f, tsv=True, delimiter=",")
    with pytest.raises(sluice.LoadError, match="go with --on-error skip"):
        db.load("t", f, on_error="abort", rejects=tmp_path / "r.csv", progress=False)
    assert db.tables() == []


PYCAPSULE_WITHOUT_PYARROW = """
import sys
sys.modules["pyarrow"] = None  # import pyarrow fails from here on
import sluice, polars as pl
db = sluice.connect(sys.argv[1])
r = db.query("SELECT id, name FROM t ORDER BY id")
df = pl.DataFrame(r)
print(df["id"].to_list(), r.to_polars()["name"].to_list())
try:
    r.to_arrow()
except ImportError as e:
    print("ImportError:", "pip install pyarrow" in str(e))
try:
    import duckdb
except ImportError:
    print("no duckdb")
else:
    print(duckdb.sql("SELECT sum(id) AS s, string_agg(name, ',' ORDER BY id) AS n FROM r").fetchall())
"""


def test_polars_and_duckdb_read_a_result_without_pyarrow(typed, tmp_path):
    need("polars")
    out = subprocess.run(
        [sys.executable, "-c", PYCAPSULE_WITHOUT_PYARROW, str(tmp_path / "db")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "[1, 2, 3, 4] ['ada', 'grace', None, 'ada']"
    assert lines[1] == "ImportError: True"
    # DuckDB scans the capsule without pyarrow too (CI installs DuckDB).
    if lines[2] == "no duckdb" and os.environ.get("CI") != "true":
        pytest.skip("duckdb is not installed (pip install duckdb)")
    assert lines[2] == "[(10, 'ada,grace,ada')]"


INTERRUPTED_LOAD = """
import json, signal, sys, sluice
signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started with SIGINT ignored
db = sluice.connect(sys.argv[1], threads=1)
print("started", flush=True)
try:
    s = db.load("t", sys.argv[2], schema="a BIGINT, b BIGINT, c TEXT", commit_every="1files", progress=False)
    print(json.dumps({"finished": s.rows}), flush=True)
except KeyboardInterrupt as e:
    print(json.dumps({"interrupted": str(e)}), flush=True)
"""


def test_parquet_and_arrow_files_load_with_hive_partitions(tmp_path):
    import pyarrow.dataset as pads
    import pyarrow.feather as feather
    import pyarrow.parquet as pq

    t = pa.table(
        {
            "id": pa.array([1, 2, 3, 4], pa.int64()),
            "price": pa.array(
                [decimal.Decimal("1.10"), None, decimal.Decimal("-2.50"), decimal.Decimal("99999999.99")],
                pa.decimal128(10, 2),
            ),
            "ts": pa.array([datetime.datetime(2024, 1, 31, 10, 20, 30, 123456)] * 4, pa.timestamp("ns")),
            "name": pa.array(["a", "b", "a", ""]).dictionary_encode(),
            "n": pa.array([1, 2, None, 4], pa.uint16()),
            "k": ["x y", "z/w", "x y", None],
        }
    )
    pads.write_dataset(t, tmp_path / "ds", format="parquet", partitioning=["k"], partitioning_flavor="hive")
    db = sluice.connect(tmp_path / "db")
    s = db.load("t", tmp_path / "ds", hive_partitioning=True, key="id")
    assert (s.rows, s.inferred, s.files) == (4, True, 3)
    assert s.schema == "id BIGINT PRIMARY KEY, price DECIMAL(10,2), ts TIMESTAMP, name TEXT, n INT, k TEXT"
    got = db.query("SELECT id, price, ts, name, n, k FROM t ORDER BY id").to_arrow().to_pylist()
    assert got[1] == {"id": 2, "price": None, "ts": datetime.datetime(2024, 1, 31, 10, 20, 30, 123456), "name": "b", "n": 2, "k": "z/w"}
    assert (got[2]["k"], got[3]["k"], got[3]["name"], got[3]["price"]) == ("x y", None, "", decimal.Decimal("99999999.99"))
    # The same files again: skipped, as for text.
    assert db.load("t", tmp_path / "ds", hive_partitioning=True).files_skipped == 3

    # An Arrow IPC file, appended by name, in another column order.
    feather.write_feather(t.select(["k", "name", "n", "ts", "price", "id"]).slice(0, 1).set_column(5, "id", pa.array([9], pa.int64())), tmp_path / "more.arrow")
    assert db.load("t", tmp_path / "more.arrow", format="arrow").rows == 1
    assert db.query("SELECT name, k FROM t WHERE id = 9").to_arrow().to_pylist() == [{"name": "a", "k": "x y"}]

    # What cannot load says which column and why.
    pq.write_table(pa.table({"a": [[1, 2]]}), tmp_path / "list.parquet")
    with pytest.raises(sluice.LoadError, match="column a: List.* is not a type sluice stores"):
        db.load("bad", tmp_path / "list.parquet")
    pq.write_table(pa.table({"id": pa.array([1.5]), "price": [None], "ts": pa.array([None], pa.timestamp("us")), "name": ["q"], "n": [1], "k": ["x"]}), tmp_path / "frac.parquet")
    with pytest.raises(sluice.LoadError, match=r"column id: .*1\.5"):
        db.load("t", tmp_path / "frac.parquet")
    with pytest.raises(sluice.LoadError, match="--delimiter applies to text input"):
        db.load("u", tmp_path / "list.parquet", delimiter=";")
    assert db.query("SELECT count(*) AS c FROM t").to_arrow().to_pylist() == [{"c": 5}]


def test_ctrl_c_stops_a_load_after_a_commit_and_keeps_it(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    rows_per_file = 20_000
    line = "".join(f"{i},{i * 7},some text {i}\n" for i in range(rows_per_file))
    files = 300
    for i in range(files):
        (inputs / f"{i:04}.csv").write_text(line)
    db_dir = tmp_path / "db"
    p = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_LOAD, str(db_dir), str(inputs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline().strip() == "started"
    # Wait for the first commit (a manifest), then interrupt.
    deadline = time.monotonic() + 120
    while not (db_dir / "MANIFEST").exists() and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.01)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    result = json.loads(out.strip().splitlines()[-1])
    assert "interrupted" in result, (result, err)
    assert "files left" in result["interrupted"]
    db = sluice.connect(db_dir)
    n = db.query("SELECT count(*) AS c FROM t").to_arrow().column("c").to_pylist()[0]
    assert n % rows_per_file == 0 and 0 < n < files * rows_per_file, n
    # The same load again loads the rest.
    s = db.load("t", inputs, schema="a BIGINT, b BIGINT, c TEXT", progress=False)
    assert s.files_skipped == n // rows_per_file
    assert db.query("SELECT count(*) AS c FROM t").to_arrow().column("c").to_pylist() == [files * rows_per_file]


def test_the_stub_file_names_every_public_name():
    stub = os.path.join(os.path.dirname(sluice.__file__), "__init__.pyi")
    text = open(stub).read()
    for name in sluice.__all__:
        assert name in text, name
    for method in ("load", "query", "get", "tables", "schema", "check", "to_arrow", "to_polars", "to_pandas"):
        assert f"def {method}(" in text, method


def test_convert_writes_a_bucketed_dataset_and_infer_names_its_schema(tmp_path):
    pq = need("pyarrow.parquet")
    for f in range(3):
        (tmp_path / f"in{f}.csv").write_text("id,name\n" + "".join(f"{f * 100 + i},n{i}\n" for i in range(100)))
    files = [tmp_path / f"in{f}.csv" for f in range(3)]
    assert sluice.infer(files, key="id") == "id BIGINT PRIMARY KEY, name TEXT"
    s = sluice.convert(files, tmp_path / "out", key="id", buckets=3)
    assert isinstance(s, sluice.ConvertSummary)
    assert (s.rows, s.files, s.buckets, s.bucket_by, s.inferred) == (300, 3, 3, "id", True)
    assert s.schema == "id BIGINT PRIMARY KEY, name TEXT"
    assert s.to_dict()["files_written"] == s.files_written
    assert sorted(os.listdir(tmp_path / "out")) == ["_SUCCESS", "bucket=00", "bucket=01", "bucket=02"]
    t = pq.read_table(tmp_path / "out")
    assert sorted(t.column("id").to_pylist()) == list(range(300))
    # Every bucket's rows differ: a key is in one bucket only.
    per = [set(pq.read_table(tmp_path / "out" / f"bucket={b:02d}").column("id").to_pylist()) for b in range(3)]
    assert sum(len(p) for p in per) == 300 and all(per)
    # Loaded back: a shard a bucket, each file placed whole.
    db = sluice.connect(tmp_path / "db")
    back = db.load("back", tmp_path / "out", progress=False)
    assert (back.rows, back.files_by_bucket) == (300, s.files_written)
    assert db.get("back", 217).to_arrow().column("name").to_pylist() == ["n17"]


def test_convert_names_a_duplicate_by_file_and_line_and_writes_nothing(tmp_path):
    (tmp_path / "a.csv").write_text("id,v\n1,x\n2,y\n")
    (tmp_path / "b.csv").write_text("id,v\n3,z\n2,again\n")
    with pytest.raises(sluice.LoadError) as e:
        sluice.convert([tmp_path / "a.csv", tmp_path / "b.csv"], tmp_path / "out", key="id", buckets=2)
    assert "b.csv:3 repeats the key of" in str(e.value) and "a.csv:3" in str(e.value)
    assert not (tmp_path / "out").exists()
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []


def test_convert_refuses_what_is_not_its_option(tmp_path):
    (tmp_path / "a.csv").write_text("id,v\n1,x\n")
    with pytest.raises(TypeError, match="on_duplicate"):
        sluice.convert(tmp_path / "a.csv", tmp_path / "out", on_duplicate="skip")
    with pytest.raises(TypeError, match="nope"):
        sluice.convert(tmp_path / "a.csv", tmp_path / "out", nope=1)
    with pytest.raises(ValueError, match="buckets"):
        sluice.convert(tmp_path / "a.csv", tmp_path / "out", key="id", buckets=0)
    with pytest.raises(sluice.LoadError, match="--key or --bucket-by"):
        sluice.convert(tmp_path / "a.csv", tmp_path / "out", buckets=2)
    assert not (tmp_path / "out").exists()


def test_share_out_gives_every_file_once_in_input_order_and_evens_bytes():
    from sluice._distributed import share_out

    files = [(f"f{i:03d}", (i * 7919) % 1000 + 1) for i in range(101)]
    shares = share_out(files, 4)
    assert len(shares) == 4
    flat = [f for s in shares for f in s]
    assert sorted(flat) == [f for f, _ in files]
    for s in shares:
        assert s == sorted(s)
    size = dict(files)
    totals = [sum(size[f] for f in s) for s in shares]
    assert max(totals) - min(totals) <= max(size.values())
    # Never more shares than files, never an empty one.
    assert sorted(share_out(files[:2], 8)) == [["f000"], ["f001"]]


def _local_engine(plan, duplicate_attempts=False):
    """The stages run in this process, as an engine would run them: each
    task once (or twice, as a speculative attempt would, both reported)."""
    from sluice import _distributed

    def run_tasks(tasks):
        out = []
        for t, files in tasks:
            for attempt in (["a", "b"] if duplicate_attempts else ["a"]):
                out.append(_distributed.run_task(t, files, plan.staging, plan.options, attempt, 1, plan.output))
        return out

    def run_checks(dirs):
        return [_distributed.check_task(d, 1) for d in dirs]

    return run_tasks, run_checks


def test_the_commit_protocol_keeps_one_attempt_a_task_and_checks_keys_across_tasks(tmp_path):
    pq = need("pyarrow.parquet")
    from sluice import _distributed

    for f in range(6):
        (tmp_path / f"in{f}.csv").write_text("".join(f"{f * 1000 + i},v{i}\n" for i in range(50)))
    opts = dict(schema="id BIGINT, v TEXT", key="id", buckets=3, header=False)
    plan = _distributed.Plan(tmp_path / "in*.csv", tmp_path / "out", 3, 2, dict(opts))
    s = _distributed.run(plan, *_local_engine(plan, duplicate_attempts=True), False, 1)
    assert (s["rows"], s["tasks"], s["files"]) == (300, 3, 6)
    ids = pq.read_table(tmp_path / "out").column("id").to_pylist()
    assert sorted(ids) == sorted(f * 1000 + i for f in range(6) for i in range(50))
    assert os.path.exists(tmp_path / "out" / "_SUCCESS")
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []
    # A key twice within one task's files: the second stage finds it and
    # names both lines.
    (tmp_path / "in5.csv").write_text((tmp_path / "in5.csv").read_text() + "5003,again\n")
    plan = _distributed.Plan(tmp_path / "in*.csv", tmp_path / "out2", 3, 2, dict(opts))
    with pytest.raises(sluice.LoadError) as e:
        _distributed.run(plan, *_local_engine(plan), False, 1)
    assert "in5.csv:51 repeats the key of" in str(e.value) and "in5.csv:4" in str(e.value)
    assert not (tmp_path / "out2").exists()
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []
