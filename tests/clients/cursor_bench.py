"""Named-cursor fetch against a plain SELECT, `sluice serve` beside
PostgreSQL, with psycopg 3: a table `ints` of three BIGINT columns c1,
c2, c3 in both (`sluice gen ints --rows 1000000`, loaded with `sluice
load ints` and with psql's `\copy`); median of 5 runs each, answers
(row count, sum of c1) compared between the servers. A benchmark, not a
test: see BENCHMARKS.md, "Named cursors".

Usage: python3 cursor_bench.py SLUICE_DSN POSTGRES_DSN
  e.g. "host=127.0.0.1 port=5433 user=test dbname=sluice"
       "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
"""
import statistics, sys, time
import psycopg

def run(dsn, label):
    out = {}
    with psycopg.connect(dsn) as conn:
        def plain():
            rows = conn.execute("SELECT c1, c2, c3 FROM ints").fetchall()
            conn.commit()
            return len(rows), sum(r[0] for r in rows)
        def named(itersize):
            def f():
                n = s = 0
                with conn.cursor(name="walk") as cur:
                    cur.itersize = itersize
                    cur.execute("SELECT c1, c2, c3 FROM ints")
                    for r in cur:
                        n += 1
                        s += r[0]
                conn.commit()
                return n, s
            return f
        for name, f in [("plain SELECT, fetchall", plain),
                        ("named cursor, itersize 10000", named(10000)),
                        ("named cursor, itersize 1000", named(1000))]:
            times, answer = [], None
            for _ in range(5):
                t = time.perf_counter()
                a = f()
                times.append(time.perf_counter() - t)
                assert answer is None or a == answer, (a, answer)
                answer = a
            out[name] = (statistics.median(times), answer)
            print(f"{label:8} {name:32} {statistics.median(times):.3f} s  rows {answer[0]}", flush=True)
    return out

s = run(sys.argv[1], "sluice")
p = run(sys.argv[2], "postgres")
for k in s:
    assert s[k][1] == p[k][1], (k, s[k][1], p[k][1])
    print(f"{k:32} sluice {s[k][0]:.3f} s  postgres {p[k][0]:.3f} s  ratio (pg/sluice) {p[k][0]/s[k][0]:.2f}")
