#!/usr/bin/env bash
# Drives `sluice serve` with the clients users have: psql, Python's
# psycopg 3, SQLAlchemy 2 (psycopg and psycopg2) with pandas, and JDBC. Usage: tests/clients/run.sh path/to/sluice
# Exits non-zero on the first wrong answer; prints "clients: ok" at the end.
set -euo pipefail
sluice="$(realpath "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"

printf 'id,name,price,d,ts,ok\n1,ada,12.50,2024-01-02,2024-01-02 03:04:05.5,true\n2,,-0.05,,,false\n3,"o'"'"'k",100,1999-12-31,2000-01-01 00:00:00,\n' > people.csv
"$sluice" --db db -q load --key id \
    --schema "id BIGINT, name TEXT, price DECIMAL(10,2), d DATE, ts TIMESTAMP, ok BOOLEAN" people people.csv
"$sluice" --db db -q gen ints --rows 100000 --output ints.csv >/dev/null
"$sluice" --db db -q load ints ints.csv

# Starts `sluice serve` with extra options "$@" on a free port: sets
# $server (its pid) and $port.
start_server() {
    "$sluice" --db db serve --listen 127.0.0.1:0 "$@" 2> serve.log &
    server=$!
    for _ in $(seq 600); do # up to a minute
        grep -q "listening on" serve.log 2>/dev/null && break
        sleep 0.1
    done
    port="$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' serve.log)"
    test -n "$port" || { cat serve.log; exit 1; }
}
start_server

check() { # what, expected, got
    if [ "$2" != "$3" ]; then
        printf 'clients: %s\n  expected: %s\n  got:      %s\n' "$1" "$2" "$3" >&2
        exit 1
    fi
    echo "ok: $1"
}
q() { psql -h 127.0.0.1 -p "$port" -U test -d sluice -X -A -t -v ON_ERROR_STOP=1 -c "$1"; }

check "psql: a row of every type" "1|ada|12.50|2024-01-02|2024-01-02 03:04:05.5|t" \
    "$(q 'SELECT * FROM people WHERE id = 1')"
check "psql: NULLs" "2||-0.05|||f" "$(q 'SELECT * FROM people WHERE id = 2')"
check "psql: an aggregate" "100000" "$(q 'SELECT count(*) FROM ints')"
check "psql: \\dt" "public|ints|table|sluice
public|people|table|sluice" "$(q '\dt')"
# psql's own catalog queries, answered by the engine (as PostgreSQL 15
# answers them for the same table, but for the owner's name and sizes).
check "psql: \\d people" "id|bigint||not null|
name|text|||
price|numeric(10,2)|||
d|date|||
ts|timestamp without time zone|||
ok|boolean|||" "$(q '\d people' | grep -v '^$')"
# Its footers (not printed with -t): the key's index, and \d+'s access method.
check "psql: \\d people's index" "1" "$(psql -h 127.0.0.1 -p "$port" -U test -d sluice -X -c '\d people' | grep -c '"people_pkey" PRIMARY KEY, btree (id)')"
check "psql: \\d+ people's access method" "1" "$(psql -h 127.0.0.1 -p "$port" -U test -d sluice -X -c '\d+ people' | grep -c 'Access method: heap')"
check "psql: \\d+ people" "id|bigint||not null||plain|||
name|text||||extended|||
price|numeric(10,2)||||main|||
d|date||||plain|||
ts|timestamp without time zone||||plain|||
ok|boolean||||plain|||" "$(q '\d+ people' | grep -v '^$')"
check "psql: \\dt with a pattern that matches nothing" "" "$(q '\dt nosuch')"
check "psql: \\dt with a wildcard" "public|people|table|sluice" "$(q '\dt peo*')"
check "psql: \\dt+" "public|people|table|sluice|permanent|heap|bytes|" \
    "$(q '\dt+ people' | sed 's/|[0-9]* bytes|/|bytes|/')"
check "psql: \\dn" "public|sluice" "$(q '\dn')"
check "psql: \\l" "sluice|sluice|UTF8|C.UTF-8|C.UTF-8||libc|" "$(q '\l')"
check "psql: \\l+" "sluice|sluice|UTF8|C.UTF-8|C.UTF-8||libc||SIZE|pg_default|" \
    "$(q '\l+' | sed 's/|[0-9]* [a-zA-Z]*|pg_default|/|SIZE|pg_default|/')"
check "psql: \\du" "sluice|Superuser|{}" "$(q '\du')"
check "psql: \\df (no functions of the database's own)" "" "$(q '\df')"
check "psql: \\dx (no extensions)" "" "$(q '\dx')"
check "psql: an exact catalog count" "6" \
    "$(q "SELECT count(*) FROM information_schema.columns WHERE table_name = 'people'")"
err="$(psql -h 127.0.0.1 -p "$port" -X -v VERBOSITY=verbose -c 'SELECT nope FROM people' 2>&1 || true)"
check "psql: an error with its SQLSTATE" "ERROR:  42703: no column named \"nope\" in table people at line 1, column 8" \
    "$(echo "$err" | head -1)"

python3 "$here/psycopg_check.py" "$port"
python3 "$here/sqlalchemy_check.py" "$port"
java -cp "${JDBC_JAR:-/usr/share/java/postgresql.jar}" "$here/JdbcCheck.java" "$port"

# Passwords (SCRAM-SHA-256) over TLS, as libpq does them.
kill "$server"
printf 'pencil and paper\n' | "$sluice" --db db -q serve --add-user ada
certs="$here/../../crates/sluice-server/tests/it/tls"
start_server --auth scram-sha-256 --tls-cert "$certs/cert.pem" --tls-key "$certs/key.pem"
conn="host=127.0.0.1 port=$port user=ada dbname=sluice sslmode=require"
check "psql: SCRAM over TLS" "3" \
    "$(PGPASSWORD='pencil and paper' psql "$conn" -X -A -t -c 'SELECT count(*) FROM people')"
check "psql: TLS in use" "t" \
    "$(PGPASSWORD='pencil and paper' psql "$conn" -X -A -t -c '\conninfo' | grep -c TLS | sed 's/^[1-9].*/t/')"
err="$(PGPASSWORD=wrong psql "$conn" -X -c 'SELECT 1' 2>&1 || true)"
check "psql: a wrong password" "1" "$(echo "$err" | grep -c 'password authentication failed for user "ada"')"
echo "clients: ok"
