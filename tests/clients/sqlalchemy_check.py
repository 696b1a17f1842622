"""SQLAlchemy 2 (PostgreSQL dialect, with psycopg 3 and with psycopg2) and
pandas against `sluice serve`: connect, reflect every table (the queries
SQLAlchemy's inspector sends to pg_catalog), read a whole table with
pandas.read_sql_table. Usage: sqlalchemy_check.py PORT

The expected answers are PostgreSQL 15's for the same tables (people:
id BIGINT PRIMARY KEY, name TEXT, price NUMERIC(10,2), d DATE,
ts TIMESTAMP, ok BOOLEAN; ints: one BIGINT column, no key)."""
import datetime
import decimal
import os
import sys

try:
    import pandas
    import sqlalchemy as sa
except ImportError as e:
    if os.environ.get("CI") == "true":
        raise
    print(f"skipped: SQLAlchemy and pandas checks ({e}; pip install sqlalchemy pandas psycopg2-binary)")
    sys.exit(0)

port = int(sys.argv[1])
drivers = ["psycopg", "psycopg2"]

for driver in drivers:
    try:
        __import__(driver)
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        print(f"skipped: SQLAlchemy with {driver} (not installed)")
        continue
    engine = sa.create_engine(f"postgresql+{driver}://test@127.0.0.1:{port}/sluice")
    insp = sa.inspect(engine)

    names = insp.get_table_names()
    assert sorted(names) == ["ints", "people"], names
    assert insp.get_view_names() == [], insp.get_view_names()
    assert insp.has_table("people") and not insp.has_table("nosuch")
    assert insp.get_schema_names() == ["information_schema", "public"], insp.get_schema_names()
    print(f"ok: SQLAlchemy ({driver}): get_table_names")

    cols = [(c["name"], str(c["type"]), c["nullable"], c["default"])
            for c in insp.get_columns("people")]
    assert cols == [
        ("id", "BIGINT", False, None),
        ("name", "TEXT", True, None),
        ("price", "NUMERIC(10, 2)", True, None),
        ("d", "DATE", True, None),
        ("ts", "TIMESTAMP", True, None),
        ("ok", "BOOLEAN", True, None),
    ], cols
    print(f"ok: SQLAlchemy ({driver}): get_columns")

    pk = insp.get_pk_constraint("people")
    assert pk["constrained_columns"] == ["id"] and pk["name"] == "people_pkey", pk
    assert insp.get_pk_constraint("ints")["constrained_columns"] == []
    assert insp.get_foreign_keys("people") == []
    assert insp.get_indexes("people") == []
    assert insp.get_unique_constraints("people") == []
    assert insp.get_check_constraints("people") == []
    assert insp.get_table_comment("people") == {"text": None}
    print(f"ok: SQLAlchemy ({driver}): get_pk_constraint, foreign keys, indexes")

    # A whole table through pandas: reflection, then a SELECT of it.
    df = pandas.read_sql_table("people", engine).sort_values("id")
    assert list(df.columns) == ["id", "name", "price", "d", "ts", "ok"], df.columns
    first = df.iloc[0]
    assert (first["id"], first["name"], first["price"]) == (1, "ada", decimal.Decimal("12.50")), first
    assert first["ts"] == datetime.datetime(2024, 1, 2, 3, 4, 5, 500000), first["ts"]
    assert len(df) == 3 and df["name"].isna().sum() == 1, df
    print(f"ok: pandas.read_sql_table ({driver})")

    # A query's columns are named as PostgreSQL names them.
    df = pandas.read_sql_query("SELECT count(*), max(id), id + 1, CAST(id AS TEXT) FROM people "
                               "GROUP BY id ORDER BY id", engine)
    assert list(df.columns) == ["count", "max", "?column?", "id"], df.columns
    assert df["count"].tolist() == [1, 1, 1], df
    print(f"ok: pandas.read_sql_query names columns as PostgreSQL ({driver})")

    # SQLAlchemy Core over a reflected table.
    people = sa.Table("people", sa.MetaData(), autoload_with=engine)
    with engine.connect() as conn:
        got = conn.execute(
            sa.select(people.c.name).where(people.c.price > 0).order_by(people.c.id)
        ).scalars().all()
    assert got == ["ada", "o'k"], got
    # LIMIT and OFFSET as bound parameters (psycopg 3 binds them on the
    # server: LIMIT $1).
    with engine.connect() as conn:
        got = conn.execute(
            sa.select(people.c.name).order_by(people.c.id).limit(1).offset(2)
        ).scalars().all()
    assert got == ["o'k"], got
    print(f"ok: SQLAlchemy Core over a reflected table ({driver})")

    # stream_results: a named (server-side) cursor, fetched in pieces,
    # and pandas reading a table in chunks over it.
    with engine.connect() as conn:
        res = conn.execution_options(stream_results=True, yield_per=1000).execute(
            sa.text("SELECT c1 FROM ints WHERE c1 > :lo"), {"lo": -1})
        seen = sum(len(part) for part in res.partitions())
    assert seen == 100000, seen
    with engine.connect() as conn:
        chunks = list(pandas.read_sql_query(
            sa.text("SELECT c1 FROM ints ORDER BY c1"),
            conn.execution_options(stream_results=True), chunksize=30000))
    assert [len(c) for c in chunks] == [30000, 30000, 30000, 10000], [len(c) for c in chunks]
    ordered = pandas.concat(chunks)["c1"].tolist()
    assert ordered == sorted(ordered), "chunks out of order"
    print(f"ok: SQLAlchemy stream_results and pandas chunksize ({driver})")
    engine.dispose()
