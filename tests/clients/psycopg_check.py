"""psycopg 3 against `sluice serve`: server-side parameters (the extended
protocol), text and binary results, types, NULLs, errors, transactions."""
import datetime
import decimal
import sys

import psycopg

port = int(sys.argv[1])
with psycopg.connect(host="127.0.0.1", port=port, user="test", dbname="sluice", autocommit=True) as conn:
    cur = conn.cursor()
    cur.execute("SELECT id, name, price, d, ts, ok FROM people WHERE id = %s", (1,))
    row = cur.fetchone()
    assert row == (1, "ada", decimal.Decimal("12.50"), datetime.date(2024, 1, 2),
                   datetime.datetime(2024, 1, 2, 3, 4, 5, 500000), True), row
    print("ok: psycopg: a row of every type (text)")

    # Binary results.
    bcur = conn.cursor(binary=True)
    bcur.execute("SELECT id, name, price, d, ts, ok FROM people ORDER BY id")
    rows = bcur.fetchall()
    assert rows[0] == row, rows[0]
    assert rows[1] == (2, None, decimal.Decimal("-0.05"), None, None, False), rows[1]
    assert rows[2][1] == "o'k" and rows[2][2] == decimal.Decimal("100.00"), rows[2]
    print("ok: psycopg: every type and NULLs (binary)")

    # Prepared statements, parameters of several types.
    for _ in range(3):
        cur.execute("SELECT count(*) FROM people WHERE d BETWEEN %s AND %s AND name LIKE %s",
                    (datetime.date(1990, 1, 1), datetime.date(2030, 1, 1), "%"), prepare=True)
        assert cur.fetchone() == (2,)
    cur.execute("SELECT id FROM people WHERE name = %s", ("o'k",))
    assert cur.fetchall() == [(3,)]
    print("ok: psycopg: prepared statements with parameters")

    try:
        cur.execute("SELECT 1 / (id - id) FROM people")
        raise AssertionError("division by zero did not fail")
    except psycopg.errors.DivisionByZero as e:
        assert "division by zero" in str(e)
    cur.execute("SELECT 1")
    assert cur.fetchone() == (1,)
    print("ok: psycopg: an error by its SQLSTATE, and the session goes on")

conn = psycopg.connect(host="127.0.0.1", port=port, user="test", dbname="sluice")
# Named (server-side) cursors: DECLARE with a bound parameter, a Describe
# of the cursor by name, FETCH FORWARD in pieces, text and binary, and
# one WITH HOLD that outlives its transaction.
for binary in (False, True):
    with conn.cursor(name="walk") as nc:
        nc.execute("SELECT id, name, price FROM people WHERE id >= %s ORDER BY id", (1,),
                   binary=binary)
        assert [d.name for d in nc.description] == ["id", "name", "price"], nc.description
        assert nc.fetchone() == (1, "ada", decimal.Decimal("12.50"))
        assert nc.fetchmany(1) == [(2, None, decimal.Decimal("-0.05"))]
        assert nc.fetchall() == [(3, "o'k", decimal.Decimal("100.00"))]
        assert nc.fetchone() is None
    conn.rollback()
want = conn.execute("SELECT c1, c2 FROM ints ORDER BY c1, c2").fetchall()
with conn.cursor(name="many") as nc:
    nc.itersize = 7000
    nc.execute("SELECT c1, c2 FROM ints ORDER BY c1, c2")
    got = list(nc)
    assert got == want and len(got) == 100000, (len(got), got[:3], want[:3])
    nc.scroll(0, mode="absolute")
    assert nc.fetchone() == want[0]
conn.commit()
with conn.cursor(name="held", withhold=True) as nc:
    nc.execute("SELECT count(*) FROM ints")
    conn.commit()
    assert nc.fetchone() == (100000,)
conn.commit()
print("ok: psycopg: named cursors (DECLARE, FETCH, MOVE, WITH HOLD), text and binary")

with conn.transaction():
    n = conn.execute("SELECT count(*) FROM ints").fetchone()[0]
    assert n == 100000, n
conn.close()
print("ok: psycopg: a transaction (a no-op on a read-only snapshot)")
