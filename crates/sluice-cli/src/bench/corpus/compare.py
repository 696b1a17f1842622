# The readers-of-record half of `sluice bench corpus`. Usage:
#   python3 compare.py MANIFEST RESULTS_CSV
# MANIFEST holds one JSON object a file, written by sluice: {"file",
# "source", "status": "ok" | "refused" | "crash", "message", "rows" (path of
# `sluice query --format json "SELECT * FROM t"`), "info" (path of `sluice
# info t --json`)}. Each file is read with DuckDB (read_csv with
# auto_detect, or read_json_auto for .json/.jsonl/.ndjson) and with pandas
# (read_csv with sep=None, or read_json), sluice's result is compared with
# each after a canonical text form and classified ("class" against DuckDB,
# "pandas_class" against pandas), and the two readers with each other
# ("readers": agree, disagree, duckdb only, pandas only, neither). Prints
# one JSON object a file and writes the same as CSV to RESULTS_CSV.
import csv, datetime, decimal, gzip, json, math, re, sys

import duckdb

try:
    import pandas
except ImportError:  # the comparison with the second reader is then left out
    pandas = None

manifest, results_csv = sys.argv[1], sys.argv[2]
# Texts read as NULL by one side and kept as text by the other: a NULL-marker
# decision (a type choice), not different data.
NULL_WORDS = {"", "na", "n/a", "nan", "null", "none", "-", "?", ".", "nil"}
# The words a boolean column is read from, and the value each stands for.
BOOL_WORDS = {"true": "true", "t": "true", "yes": "true", "y": "true",
              "false": "false", "f": "false", "no": "false", "n": "false"}
NUMBER = re.compile(r"^\s*[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|inf|infinity|nan)\s*$", re.I)


def type_class(t):
    t = t.upper()
    if t in ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
             "UINTEGER", "UBIGINT", "UHUGEINT"):
        return "int"
    if t in ("DOUBLE", "FLOAT", "REAL") or t.startswith("DECIMAL"):
        return "number"
    if t in ("BOOLEAN", "BOOL"):
        return "bool"
    if t == "DATE":
        return "date"
    if t.startswith("TIMESTAMP"):
        return "timestamp"
    if t in ("TEXT", "VARCHAR"):
        return "text"
    return t.lower()


def canon_text(v):
    """A value as text: dates ISO, timestamps with a space, JSON sorted."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True, default=str)
    return str(v)


DATE = re.compile(r"^(\d{4})([-/.])(\d\d?)\2(\d\d?)(?:[ T](\d\d?):(\d\d)(?::(\d\d)(\.\d+)?)?)?"
                  r"(Z|[+-]\d\d(?::?\d\d)?)?$")


def date_key(z):
    """A date or timestamp's fields; one with an offset as the UTC
    instant it names (`15:00+03:00` is `12:00`, as `12:00+00`)."""
    m = DATE.match(z.strip())
    if not m:
        return None
    y, _, mo, d, h, mi, sec, frac, zone = m.groups()
    f = float(frac) if frac else 0.0
    key = (int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(sec or 0), f)
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        off = int(digits[:2]) * 60 + (int(digits[2:4]) if len(digits) > 2 else 0)
        try:
            t = datetime.datetime(*key[:6]) - datetime.timedelta(minutes=off if zone[0] == "+" else -off)
        except (ValueError, OverflowError):
            return key
        key = (t.year, t.month, t.day, t.hour, t.minute, t.second, f)
    return key


def as_number(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float, decimal.Decimal)):
        return float(v)
    if isinstance(v, str) and NUMBER.match(v):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def same_value(a, b):
    """(equal, how): how is "null" when one side's NULL is the other's NULL
    word, else None."""
    if a is None and b is None:
        return True, None
    if a is None or b is None:
        other = b if a is None else a
        if isinstance(other, str) and other.strip().lower() in NULL_WORDS:
            return True, ("null" if other != "" else None)
        if isinstance(other, float) and math.isnan(other):
            return True, "null"
        return False, None
    x, y = as_number(a), as_number(b)
    if x is not None and y is not None:
        if math.isnan(x) and math.isnan(y):
            return True, None
        return (x == y or math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)), None
    s, t = canon_text(a), canon_text(b)
    if s == t:
        return True, None
    if isinstance(a, bool) or isinstance(b, bool):
        word = lambda z: BOOL_WORDS.get(z.strip().lower(), z.strip().lower())
        return word(s) == word(t), None
    # A time of day as one side's text (an hour of one digit, or no
    # seconds), the other side's TIME.
    for text, other in ((a, b), (b, a)):
        if isinstance(text, str) and isinstance(other, datetime.time):
            m = re.match(r"^(\d\d?):(\d\d)(?::(\d\d)(\.\d+)?)?$", text.strip())
            if m:
                h, mi, sec, frac = m.groups()
                micro = round(float(frac) * 1e6) if frac else 0
                try:
                    return datetime.time(int(h), int(mi), int(sec or 0), micro) == other, None
                except ValueError:
                    return False, None
    # A date with a two-digit year as one side's text (sluice keeps it as
    # written: no century is in the file), the other side's date with a
    # century of its choosing: the same day and month, the same last two
    # digits of the year.
    for text, other in ((a, b), (b, a)):
        if isinstance(text, str) and isinstance(other, datetime.date) and not isinstance(other, datetime.datetime):
            m = re.match(r"^(\d\d?)([/.-])(\d\d?)\2(\d\d)$", text.strip())
            if m:
                x, _, y, yy = m.groups()
                days = {(int(x), int(y)), (int(y), int(x))}
                return other.year % 100 == int(yy) and (other.month, other.day) in days, "century"
    # A date as one side's text (month or day first, a four-digit year),
    # the other side's date.
    for text, other in ((a, b), (b, a)):
        if isinstance(text, str) and isinstance(other, datetime.date) and not isinstance(other, datetime.datetime):
            m = re.match(r"^(\d\d?)([/.-])(\d\d?)\2(\d{4})$", text.strip())
            if m:
                p, q, y = int(m.group(1)), int(m.group(3)), int(m.group(4))
                key = (other.year, other.month, other.day)
                if key in ((y, p, q), (y, q, p)):
                    return True, None
    # Dates and timestamps year first: "-" or "/", "T" or a space, seconds
    # or not, a zero fraction, a UTC suffix.
    x, y = date_key(s), date_key(t)
    if x is not None and y is not None:
        return x == y, None
    # JSON kept as text by one side, nested by the other: compared leaf by
    # leaf in the canonical form (numbers numerically, dates by fields).
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        try:
            load = lambda z: z if isinstance(z, (dict, list)) else json.loads(z)
            return canon_nested(load(a)) == canon_nested(load(b)), None
        except Exception:
            return False, None
    # A field in single quotes kept by one side, its quotes read as a quote
    # character by the other: a dialect decision (see compare_rows).
    for text, other in ((a, b), (b, a)):
        if isinstance(text, str) and len(text) > 1 and text[0] == text[-1] == "'" \
                and text[1:-1] == canon_text(other):
            return True, "quote"
    return False, None


TIME = re.compile(r"^(\d\d?):(\d\d):(\d\d)$")


def canon_nested(v):
    """A nested value with its leaves in the canonical form: numbers (also
    written as text, NaN as "nan") as floats, dates and timestamps as their
    fields, times as hh:mm:ss, other leaves as text; a key whose value is
    NULL is left out (DuckDB's structs give every object every key)."""
    if isinstance(v, dict):
        return {str(k): canon_nested(x) for k, x in v.items() if x is not None}
    if isinstance(v, (list, tuple)):
        return [canon_nested(x) for x in v]
    if v is None or isinstance(v, bool):
        return v
    x = as_number(v)
    if x is not None:
        return "nan" if math.isnan(x) else x
    t = canon_text(v)
    m = TIME.match(t)
    if m:
        return "%02d:%s:%s" % (int(m.group(1)), m.group(2), m.group(3))
    return date_key(t) or t


def duckdb_json(v):
    """A value of DuckDB's JSON type (text of JSON, also inside lists and
    structs) as the JSON it stands for."""
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    if isinstance(v, list):
        return [duckdb_json(x) for x in v]
    if isinstance(v, dict):
        return {k: duckdb_json(x) for k, x in v.items()}
    return v


def compare_rows(s_rows, d_rows, ncols, names=("sluice", "duckdb")):
    """The first difference as text, or None; and how values differed
    that are the same: {"null"} (NULL words), {"quote"} (single quotes)."""
    hows = set()
    for r, (sr, dr) in enumerate(zip(s_rows, d_rows)):
        for c in range(ncols):
            eq, how = same_value(sr[c], dr[c])
            if not eq:
                return f"row {r + 1} column {c + 1}: {names[0]} {sr[c]!r}, {names[1]} {dr[c]!r}", hows
            if how:
                hows.add(how)
    return None, hows


def duckdb_read(con, path):
    lower = path.lower()
    if lower.removesuffix(".gz").endswith((".json", ".jsonl", ".ndjson")):
        q = "SELECT * FROM read_json_auto(?)"
    else:
        q = "SELECT * FROM read_csv(?, auto_detect=true)"
    try:
        cur = con.execute(q, [path])
        rows = cur.fetchall()
    except Exception as e:
        if "pytz" not in str(e):
            raise
        # Python needs pytz for TIMESTAMP WITH TIME ZONE: such columns are
        # read as DuckDB's text of them instead.
        desc = con.execute("DESCRIBE " + q, [path]).fetchall()
        ident = lambda n: '"' + n.replace('"', '""') + '"'
        cols = [f"CAST({ident(d[0])} AS VARCHAR)" if "TIME ZONE" in d[1].upper() else ident(d[0])
                for d in desc]
        cur = con.execute(q.replace("*", ", ".join(cols), 1), [path])
        rows = cur.fetchall()
    types = [str(d[1]) for d in cur.description]
    return rows, types


def json_object(path):
    """Whether a file is one JSON object (not JSON lines, not an array)."""
    if not path.lower().endswith((".json", ".json.gz")):
        return False
    try:
        opener = gzip.open if path.lower().endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            return isinstance(json.load(f), dict)
    except Exception:
        return False


def pandas_type(dtype):
    """A pandas column type as the DuckDB type name of its class."""
    kind = getattr(dtype, "kind", "O")
    return {"i": "BIGINT", "u": "BIGINT", "f": "DOUBLE", "b": "BOOLEAN",
            "M": "TIMESTAMP"}.get(kind, "VARCHAR")


def pandas_read(path):
    """The second reader of record: pandas with its own sniffing (the
    delimiter by Python's csv.Sniffer, the first line a header, its NA
    words and type inference); JSON as records, or JSON lines."""
    base = path.lower().removesuffix(".gz")
    if base.endswith((".json", ".jsonl", ".ndjson")):
        try:
            df = pandas.read_json(path, lines=not base.endswith(".json"))
        except ValueError:
            df = pandas.read_json(path, lines=base.endswith(".json"))
    else:
        df = pandas.read_csv(path, sep=None, engine="python")
    types = [pandas_type(t) for t in df.dtypes]
    rows = df.astype(object).where(df.notna(), None).values.tolist()
    for r in rows:
        for c, v in enumerate(r):
            if hasattr(v, "item") and not isinstance(v, (str, bytes)):
                r[c] = v.item()  # a numpy scalar as a Python value
            if hasattr(r[c], "to_pydatetime"):
                r[c] = r[c].to_pydatetime()
    return rows, types


def judge(path, s_rows, s_types, d_rows, d_types, names):
    """The class of one reading (s, of the `names[0]` side) against
    another (d, `names[1]`), and a detail: same, type choice, dialect
    choice or wrong data."""
    other = names[1]
    ncols = len(s_types)
    if ncols != len(d_types):
        return "dialect choice", f"columns: {names[0]} {ncols}, {other} {len(d_types)}"
    cmp = lambda a, b: compare_rows(a, b, ncols, names)
    if (len(d_rows) == 1 and json_object(path)
            and (len(s_rows) != 1 or cmp(s_rows, d_rows)[0])):
        # One JSON object (a descriptor, a document): DuckDB reads it as
        # one row, sluice the rows of the field holding an array of rows
        # (README, `--json-rows`): two readings of which part is the table.
        return "dialect choice", f"JSON object: {names[0]} {len(s_rows)} rows of its array field, {other} the object as 1 row"
    if ncols == 1 and (len(s_rows) != len(d_rows) or cmp(s_rows, d_rows)[0]):
        # Lines of text, one column: which blank lines are rows (NULL) is
        # a dialect choice; the lines that hold text must be the same.
        kept = lambda rows: [r for r in rows if r[0] not in (None, "")]
        s_text, d_text = kept(s_rows), kept(d_rows)
        if len(s_text) != len(s_rows) or len(d_text) != len(d_rows):
            longer, shorter = (s_text, d_text) if len(s_text) > len(d_text) else (d_text, s_text)
            for skip in (0, 1):
                if len(longer) == len(shorter) + skip and compare_rows(longer[skip:], shorter, 1)[0] is None:
                    return "dialect choice", f"blank lines: {names[0]} {len(s_rows)} rows, {other} {len(d_rows)} rows"
    if len(s_rows) != len(d_rows):
        # A header decision: the longer result's first row is the other's header.
        longer, shorter = (s_rows, d_rows) if len(s_rows) > len(d_rows) else (d_rows, s_rows)
        if len(longer) == len(shorter) + 1 and compare_rows(longer[1:], shorter, ncols)[0] is None:
            return "dialect choice", f"header: {names[0]} {len(s_rows)} rows, {other} {len(d_rows)} rows"
        return "wrong data", f"rows: {names[0]} {len(s_rows)}, {other} {len(d_rows)}"
    diff, hows = cmp(s_rows, d_rows)
    d_classes = [type_class(t) for t in d_types]
    if diff:
        return "wrong data", diff
    if "quote" in hows:
        return "dialect choice", "quote: one side keeps fields in single quotes, the other reads them as quotes"
    if s_types != d_classes or "null" in hows or "century" in hows:
        return "type choice", (("NULL words differ; " if "null" in hows else "") +
                               (f"two-digit years: {names[0]} keeps the text, {other} picks a century; "
                                if "century" in hows else "") +
                               f"{names[0]} {' '.join(s_types)} / {other} {' '.join(d_classes)}")
    return "same", ""


def first_line(e):
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def classify(m, con):
    out = {"file": m["file"], "source": m["source"], "class": "", "detail": "",
           "sluice_types": "", "duckdb_types": "", "readers": "", "pandas_class": "",
           "pandas_detail": ""}
    duck_err = None
    try:
        d_rows, d_types = duckdb_read(con, m["file"])
        out["duckdb_types"] = " ".join(type_class(t) for t in d_types)
        d_rows = [list(r) for r in d_rows]
        # DuckDB's JSON columns hold JSON texts ('""' for an empty string).
        for c, t in enumerate(d_types):
            if "JSON" in t.upper():
                for r in d_rows:
                    r[c] = duckdb_json(r[c])
    except Exception as e:
        duck_err = first_line(e)
    # The second reader, and whether the two readers of record agree
    # (the same table up to types and NULL words): where they do, their
    # reading is the one a person would call right.
    pandas_err = None
    if pandas is None:
        pandas_err = "pandas is not importable"
        out["readers"] = "duckdb only"
    else:
        try:
            p_rows, p_types = pandas_read(m["file"])
        except Exception as e:
            pandas_err = first_line(e)
        if duck_err and pandas_err:
            out["readers"] = "neither"
        elif duck_err or pandas_err:
            out["readers"] = "pandas only" if duck_err else "duckdb only"
        else:
            try:
                c, _ = judge(m["file"], d_rows, [type_class(t) for t in d_types], p_rows, p_types,
                             ("duckdb", "pandas"))
            except Exception:
                c = "wrong data"
            out["readers"] = "agree" if c in ("same", "type choice") else "disagree"
    if m["status"] == "crash":
        out["class"], out["detail"] = "crash", m["message"]
        out["pandas_class"] = "crash"
        return out
    if m["status"] == "refused":
        out["class"] = "both refused" if duck_err else "sluice refused"
        out["detail"] = m["message"] + (f" | duckdb: {duck_err}" if duck_err else "")
        out["pandas_class"] = "both refused" if pandas_err else "sluice refused"
        return out
    with open(m["info"]) as f:
        cols = json.load(f)[0]["columns"]
    with open(m["rows"]) as f:
        s_rows = [[v for _, v in r] for r in json.load(f, object_pairs_hook=list)]
    s_types = [type_class(c["type"]) for c in cols]
    out["sluice_types"] = " ".join(s_types)
    if pandas_err:
        out["pandas_class"], out["pandas_detail"] = "pandas refused", pandas_err
    else:
        try:
            out["pandas_class"], out["pandas_detail"] = judge(
                m["file"], s_rows, s_types, p_rows, p_types, ("sluice", "pandas"))
        except Exception as e:
            out["pandas_class"], out["pandas_detail"] = "wrong data", f"comparison failed: {first_line(e)}"
    if duck_err:
        out["class"], out["detail"] = "duckdb refused", duck_err
        return out
    out["class"], out["detail"] = judge(m["file"], s_rows, s_types, d_rows, d_types, ("sluice", "duckdb"))
    return out


con = duckdb.connect()
fields = ["file", "source", "class", "detail", "sluice_types", "duckdb_types", "readers",
          "pandas_class", "pandas_detail"]
with open(manifest) as mf, open(results_csv, "w", newline="") as rf:
    w = csv.DictWriter(rf, fieldnames=fields)
    w.writeheader()
    for line in mf:
        m = json.loads(line)
        try:
            out = classify(m, con)
        except Exception as e:  # the comparison itself failed: say so
            out = {"file": m["file"], "source": m["source"], "class": "wrong data",
                   "detail": f"comparison failed: {type(e).__name__}: {e}",
                   "sluice_types": "", "duckdb_types": "", "readers": "", "pandas_class": "",
                   "pandas_detail": ""}
        out["detail"] = out["detail"][:300]
        out["pandas_detail"] = out["pandas_detail"][:300]
        w.writerow(out)
        print(json.dumps(out), flush=True)
