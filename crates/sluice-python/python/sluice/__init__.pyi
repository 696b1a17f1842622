"""Type stubs of the sluice package."""

import os
from typing import Any, Callable, Iterable, List, Optional, Tuple, Union

__version__: str

PathLike = Union[str, os.PathLike]

class Error(Exception):
    """Any error of sluice; the message is the one the sluice command prints."""

    file: Optional[str]
    line: Optional[int]
    column: Optional[str]
    byte: Optional[int]
    pid: Optional[int]
    sqlstate: str

class LoadError(Error): ...
class QueryError(Error): ...
class CorruptError(Error): ...
class LockedError(Error): ...

class Result:
    """The rows of a query, as Arrow record batches (PyCapsule interface)."""

    @property
    def num_rows(self) -> int: ...
    @property
    def num_batches(self) -> int: ...
    @property
    def column_names(self) -> List[str]: ...
    @property
    def explain(self) -> Optional[str]: ...
    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def __arrow_c_schema__(self) -> object: ...
    def to_arrow(self) -> Any:
        """A pyarrow.Table over the result's buffers (no copy)."""
    def to_polars(self) -> Any:
        """A polars.DataFrame (pyarrow is not needed)."""
    def to_pandas(self) -> Any:
        """A pandas.DataFrame (through pyarrow)."""
    def __len__(self) -> int: ...

class LoadSummary:
    """What a load did."""

    table: str
    created: bool
    rows: int
    bytes: int
    seconds: float
    rejected: int
    duplicates: int
    files: int
    files_skipped: int
    files_left: int
    commits: int
    threads: int
    schema: str
    inferred: bool
    empty_files: List[str]
    unreadable: List[Tuple[str, str]]
    files_by_bucket: int
    @property
    def mb_per_s(self) -> float: ...

class ConvertSummary:
    """What a conversion did."""

    output: str
    rows: int
    bytes: int
    files: int
    seconds: float
    rejected: int
    threads: int
    schema: str
    inferred: bool
    files_written: int
    bytes_written: int
    buckets: int
    bucket_by: Optional[str]
    empty_files: List[str]
    unreadable: List[Tuple[str, str]]
    @property
    def mb_per_s(self) -> float: ...
    def to_dict(self) -> dict: ...

def convert(
    data: Union[PathLike, Iterable[PathLike]],
    output: PathLike,
    *,
    schema: Optional[str] = None,
    key: Optional[str] = None,
    buckets: Optional[int] = None,
    threads: Optional[int] = None,
    progress: bool = False,
    **options: Any,
) -> ConvertSummary:
    """Converts text files straight into a Parquet dataset at output (as `sluice convert`)."""

def infer(data: Union[PathLike, Iterable[PathLike]], *, threads: Optional[int] = None, **options: Any) -> str:
    """The schema a conversion of data would use, as a schema= string."""

class Database:
    """A sluice database directory."""

    def __init__(
        self,
        path: Optional[PathLike] = None,
        threads: Optional[int] = None,
        memory_limit: Union[int, str, None] = None,
        temp_dir: Optional[PathLike] = None,
    ) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def threads(self) -> Optional[int]: ...
    @property
    def memory_limit(self) -> int:
        """Bytes one query may hold (its hash tables, aggregates, sorts, result)."""
    def load(
        self,
        table: str,
        data: Union[PathLike, Iterable[PathLike], Any],
        *,
        schema: Optional[str] = None,
        key: Optional[str] = None,
        shards: Optional[int] = None,
        format: Optional[str] = None,
        on_error: Optional[str] = None,
        rejects: Optional[PathLike] = None,
        commit_every: Union[str, int, None] = None,
        progress: bool = True,
        **dialect: Any,
    ) -> LoadSummary:
        """Loads files (paths, globs, directories) or Arrow data into table."""
    def query(self, sql: str) -> Result:
        """Runs one SQL statement (the GIL is released while it runs; Ctrl-C stops it)."""
    def get(self, table: str, keys: Union[str, int, Iterable[Union[str, int]]]) -> Result:
        """The rows of a keyed table with these keys, in the order given."""
    def tables(self) -> List[str]: ...
    def schema(self, table: str) -> List[Tuple[str, str]]: ...
    def check(self, table: Optional[str] = None) -> List[dict]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Database": ...
    def __exit__(self, *args: object) -> bool: ...

def connect(
    path: PathLike = "sluice.db",
    threads: Optional[int] = None,
    memory_limit: Union[int, str, None] = None,
    temp_dir: Optional[PathLike] = None,
) -> Database:
    """Opens the sluice database in directory path (created by the first load)."""
