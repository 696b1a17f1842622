"""sluice: load big CSV, TSV and JSON files into an embedded columnar store
on every core, and query them with SQL; results are Arrow.

    import sluice
    with sluice.connect("sales.db") as db:
        db.load("sales", "sales/*.csv", key="id")
        df = db.query("SELECT region, sum(amount) FROM sales GROUP BY region").to_polars()

Results implement the Arrow PyCapsule interface (``__arrow_c_stream__``):
pyarrow, polars, pandas and DuckDB read their buffers without copying.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, Iterable, Optional, Union

from ._sluice import (
    ConvertSummary,
    CorruptError,
    Database as _Database,
    Error,
    LoadError,
    LoadSummary,
    LockedError,
    QueryError,
    Result,
    __version__,
    _convert,
    _infer,
)

__all__ = [
    "connect",
    "Database",
    "Result",
    "LoadSummary",
    "ConvertSummary",
    "convert",
    "infer",
    "Error",
    "LoadError",
    "QueryError",
    "CorruptError",
    "LockedError",
    "__version__",
]

# Keyword arguments of Database.load beyond those in its signature: the
# long options of `sluice load`, with "_" for "-".
_LOAD_OPTIONS = frozenset(
    """
    types columns match_by_name ignore_unknown json_rows delimiter tsv quote
    escape header null skip comment blank_lines line_end date_format
    timestamp_format encoding memory_limit max_line_size block_size
    max_errors allow_missing_columns on_duplicate compression shard_by
    shard_paths reload hive_partitioning page_cache
    """.split()
)


def _text(value: Any) -> Any:
    """Option values as the command line takes them."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def _options(**given: Any) -> dict:
    opts: dict = {}
    for name, value in given.items():
        if value is None:
            continue
        if name == "types" and isinstance(value, dict):
            value = ",".join(f"{k}={v}" for k, v in value.items())
        elif name == "types" and not isinstance(value, str):
            value = ",".join(str(t) for t in value)
        elif name == "columns" and not isinstance(value, str):
            value = ",".join(str(c) for c in value)
        elif name == "reload":
            value = {False: "none", True: "all"}.get(value, value)
        elif name == "tsv":
            if value:
                opts["delimiter"] = "tab"
            continue
        elif name == "shard_paths":
            value = [os.fspath(p) for p in ([value] if isinstance(value, (str, os.PathLike)) else value)]
        elif name in ("skip", "max_errors", "shards"):
            value = int(value)
        elif name in ("header", "match_by_name", "ignore_unknown", "allow_missing_columns"):
            value = bool(value)
        else:
            value = _text(value)
        opts[name] = value
    return opts


def _in_notebook() -> bool:
    return "ipykernel" in sys.modules


def _progress_display(enabled: bool) -> Optional[Callable[..., None]]:
    """A callback drawing load progress: tqdm in a notebook (when
    installed), a line on a terminal's stderr; None when off or when
    neither is there to draw on."""
    if not enabled:
        return None
    if _in_notebook():
        try:
            from tqdm.auto import tqdm  # type: ignore
        except ImportError:
            tqdm = None
        if tqdm is not None:
            bar: dict = {}

            def draw_tqdm(done: int, total: Optional[int], rows: int, files_done: int, files: int) -> None:
                if "bar" not in bar:
                    bar["bar"] = tqdm(total=total, unit="B", unit_scale=True, desc="loading")
                b = bar["bar"]
                b.n = done
                b.set_postfix_str(f"{rows:,} rows" + (f", file {files_done}/{files}" if files > 1 else ""))
                b.refresh()

            draw_tqdm.close = lambda: bar.get("bar") and bar["bar"].close()  # type: ignore[attr-defined]
            return draw_tqdm
    stream = sys.stderr
    if not (hasattr(stream, "isatty") and stream.isatty()) and not _in_notebook():
        return None
    shown = {"any": False}

    def draw(done: int, total: Optional[int], rows: int, files_done: int, files: int) -> None:
        part = f"{done / 1e6:,.0f} MB"
        if total:
            part += f" of {total / 1e6:,.0f} MB ({100 * done / max(total, 1):.0f} %)"
        part += f", {rows:,} rows"
        if files > 1:
            part += f", file {files_done}/{files}"
        stream.write("\r" + part + "   ")
        stream.flush()
        shown["any"] = True

    def close() -> None:
        if shown["any"]:
            stream.write("\r" + " " * 79 + "\r")
            stream.flush()

    draw.close = close  # type: ignore[attr-defined]
    return draw


class Database(_Database):
    """A sluice database directory (see ``sluice.connect``)."""

    def load(
        self,
        table: str,
        data: Any,
        *,
        schema: Optional[str] = None,
        key: Optional[str] = None,
        shards: Optional[int] = None,
        format: Optional[str] = None,
        on_error: Optional[str] = None,
        rejects: Union[str, os.PathLike, None] = None,
        commit_every: Union[str, int, None] = None,
        progress: bool = True,
        **dialect: Any,
    ) -> LoadSummary:
        """Loads files, or Arrow data, into ``table`` (created when new).

        ``data`` is a path, a glob (``"logs/*.csv.gz"``), a directory, or a
        list of them; or anything exporting Arrow through the PyCapsule
        interface (a pyarrow Table or RecordBatchReader, a polars
        DataFrame), loaded in one commit with its columns' types.

        Parquet and Arrow IPC files (and Hive-partitioned directories of
        them, e.g. a ``sluice export`` or Spark dataset; add
        ``hive_partitioning=True`` for the ``col=value`` columns) are
        known by their first bytes; their columns match the table's by
        name.

        Files load exactly as ``sluice load`` loads them: the schema is
        ``schema`` (``"id BIGINT, name TEXT, price DECIMAL(15,2)"``), the
        existing table's, or inferred from samples; each commit group is
        all or nothing, and the same load run again skips the files
        already committed. The other keyword arguments are the long
        options of ``sluice load`` with ``_`` for ``-``: ``delimiter``,
        ``tsv=True``, ``quote``, ``escape``, ``header=True/False``,
        ``null``, ``skip``, ``comment``, ``types={"zip": "TEXT"}``,
        ``columns=["id", "name"]``, ``match_by_name``, ``encoding``,
        ``date_format``, ``timestamp_format``, ``max_errors``,
        ``allow_missing_columns``, ``on_duplicate="skip"``,
        ``compression="zstd"``, ``shard_by``, ``shard_paths``,
        ``reload=True`` or ``"changed"``, ``memory_limit="512MiB"``,
        ``page_cache=True`` (the table's files written through the page
        cache, so that queries right after the load read them from
        memory), ...

        Input files are always read into buffers here (``sluice load``
        maps large ones, which a file truncated during the load would
        turn into the end of the process).

        Ctrl-C stops after the file being read: what was read is
        committed, and KeyboardInterrupt is raised (a second Ctrl-C stops
        at once; the last commit stays). Errors raise ``sluice.LoadError``
        with ``file``, ``line``, ``column`` and ``byte`` set for a
        malformed record. Returns a ``LoadSummary``.
        """
        unknown = sorted(set(dialect) - _LOAD_OPTIONS)
        if unknown:
            raise TypeError(
                f"load() got an unexpected keyword argument {unknown[0]!r} "
                f"(the options are those of `sluice load`: {', '.join(sorted(_LOAD_OPTIONS))})"
            )
        if on_error not in (None, "abort", "skip"):
            raise ValueError(f'on_error must be "abort" or "skip", not {on_error!r}')
        if dialect.get("tsv") and dialect.get("delimiter") is not None:
            raise TypeError("tsv=True and delimiter= both give the delimiter; give one")
        if hasattr(data, "__arrow_c_stream__") or type(data).__module__.startswith("pyarrow"):
            extra = sorted(k for k in dialect if k not in ("on_duplicate", "compression", "shard_by", "shard_paths"))
            if format or rejects or commit_every or extra or on_error is not None:
                raise TypeError(
                    "loading Arrow data takes schema, key, shards, on_duplicate, compression, "
                    f"shard_by and shard_paths; {', '.join(extra + [n for n, v in (('format', format), ('rejects', rejects), ('commit_every', commit_every), ('on_error', on_error is not None)) if v]) } are for files"
                )
            opts = _options(schema=schema, key=key, shards=shards, **dialect)
            return self._load_arrow(table, data, opts)
        if isinstance(data, (str, os.PathLike)):
            inputs = [os.fspath(data)]
        elif isinstance(data, Iterable) and not isinstance(data, (bytes, dict)) and not hasattr(data, "columns"):
            inputs = [os.fspath(p) for p in data]
        else:
            raise TypeError(
                f"load() takes paths or Arrow data (an object with __arrow_c_stream__: pyarrow, polars, "
                f"pandas 2.2 and later), not {type(data).__name__}"
            )
        if any(p == "-" for p in inputs):
            raise ValueError('"-" (standard input) is for the sluice command; pass a path or Arrow data')
        if isinstance(commit_every, int) and not isinstance(commit_every, bool):
            commit_every = str(commit_every)
        opts = _options(
            schema=schema,
            key=key,
            shards=shards,
            format=format,
            # None: "abort", except that rejects= and max_errors= imply
            # "skip", as on the command line (which refuses "abort" with
            # them).
            on_error=on_error,
            rejects=rejects,
            commit_every=commit_every,
            **dialect,
        )
        draw = _progress_display(progress)
        try:
            return self._load_files(table, inputs, opts, draw)
        finally:
            if draw is not None:
                draw.close()  # type: ignore[attr-defined]


# Keyword arguments of convert beyond those in its signature: the
# reading options of `sluice load` and the file options of `sluice
# convert`, with "_" for "-".
_CONVERT_OPTIONS = (_LOAD_OPTIONS - {"on_duplicate", "shard_by", "shard_paths", "reload", "compression", "page_cache"}) | frozenset(
    "output_format compression row_group_size target_file_size file_prefix overwrite bucket_by check_key".split()
)


def _inputs(data: Any, what: str) -> list:
    if isinstance(data, (str, os.PathLike)):
        inputs = [os.fspath(data)]
    elif isinstance(data, Iterable) and not isinstance(data, (bytes, dict)):
        inputs = [os.fspath(p) for p in data]
    else:
        raise TypeError(f"{what}() takes a path, a glob, a directory or a list of them, not {type(data).__name__}")
    if any(p == "-" for p in inputs):
        raise ValueError('"-" (standard input) is for the sluice command; pass a path')
    return inputs


def _convert_opts(what: str, options: dict) -> dict:
    unknown = sorted(set(options) - _CONVERT_OPTIONS - {"schema", "key", "buckets", "format", "on_error", "rejects"})
    if unknown:
        raise TypeError(
            f"{what}() got an unexpected keyword argument {unknown[0]!r} "
            f"(the options are those of `sluice convert`: {', '.join(sorted(_CONVERT_OPTIONS))})"
        )
    if options.get("on_error") not in (None, "abort", "skip"):
        raise ValueError(f'on_error must be "abort" or "skip", not {options["on_error"]!r}')
    if options.get("tsv") and options.get("delimiter") is not None:
        raise TypeError("tsv=True and delimiter= both give the delimiter; give one")
    extra = {}
    for name in ("buckets", "row_group_size"):
        if options.get(name) is not None:
            extra[name] = int(options.pop(name))
    for name in ("overwrite", "check_key"):
        if options.get(name) is not None:
            extra[name] = bool(options.pop(name))
    opts = _options(**options)
    opts.update(extra)
    return opts


def convert(
    data: Any,
    output: Union[str, os.PathLike],
    *,
    schema: Optional[str] = None,
    key: Optional[str] = None,
    buckets: Optional[int] = None,
    threads: Optional[int] = None,
    progress: bool = False,
    **options: Any,
) -> ConvertSummary:
    """Converts text files (CSV, TSV, JSON) straight into a dataset of
    Parquet files at directory ``output``, as ``sluice convert`` does: no
    table in between, every core, the loader's types, rejects, encodings
    and messages. It is what one task of a Spark or Dask load runs over
    its share of the files (``sluice.spark.load``, ``sluice.dask.load``).

    ``data``: a path, a glob, a directory, or a list of them. ``schema``:
    the columns (default: inferred from samples; a distributed load
    infers once and gives every task the same). ``key``: a column whose
    values must be unique (checked; a repeat raises ``LoadError`` naming
    both files and lines). ``buckets=N``: rows go to ``bucket=NN/``
    directories by the hash of ``bucket_by`` (default: ``key``), the
    hash by which ``sluice load --shards N`` picks a row's shard.

    The other keyword arguments are the long options of ``sluice
    convert`` with ``_`` for ``-``: ``tsv=True``, ``delimiter``,
    ``header``, ``null``, ``types``, ``on_error``, ``rejects``,
    ``check_key=False`` (the files name their key, a later stage checks
    it: what a distributed load's tasks do), ``output_format="parquet"``
    (or ``"csv"``, ``"jsonl"``),
    ``compression="zstd"`` (``"snappy"``, ``"none"``),
    ``target_file_size="512MiB"``, ``file_prefix="part"``,
    ``overwrite=True``, ...

    The dataset appears whole, with ``_SUCCESS``, or not at all. Ctrl-C
    stops the conversion (nothing is written) and raises
    KeyboardInterrupt. Returns a ``ConvertSummary``.
    """
    inputs = _inputs(data, "convert")
    opts = _convert_opts("convert", dict(options, schema=schema, key=key, buckets=buckets))
    draw = _progress_display(progress)
    try:
        return _convert(inputs, os.fspath(output), opts, threads, draw)
    finally:
        if draw is not None:
            draw.close()  # type: ignore[attr-defined]


def infer(data: Any, *, threads: Optional[int] = None, **options: Any) -> str:
    """The schema ``convert`` (or a load into a new table) would use for
    ``data`` with these options, as a ``schema=`` string: types inferred
    from samples of the files, ``key=`` made the key."""
    inputs = _inputs(data, "infer")
    return _infer(inputs, _convert_opts("infer", dict(options)), threads)


def connect(
    path: Union[str, os.PathLike] = "sluice.db",
    threads: Optional[int] = None,
    memory_limit: Union[int, str, None] = None,
    temp_dir: Union[str, os.PathLike, None] = None,
) -> Database:
    """Opens the sluice database in directory ``path`` (created by the
    first load). ``threads`` caps the worker threads of loads and queries
    (default: every usable core). ``memory_limit`` bounds what one query's
    hash tables, aggregates, sorts and result hold, in bytes or as
    ``"2GiB"`` (default: 80% of the machine's memory); past it a GROUP BY
    writes its groups to ``temp_dir`` (default: ``tmp`` in the database
    directory) and finishes, and other operators raise QueryError with
    sqlstate 53200. Use it as a context manager, or keep it: a handle is
    cheap, thread-safe, and sees each new commit."""
    return Database(
        os.fspath(path),
        threads,
        memory_limit,
        None if temp_dir is None else os.fspath(temp_dir),
    )
