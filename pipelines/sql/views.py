"""DuckDB over the materialized Parquet: an in-memory database with one view per asset.

Each connection is private and in memory, so ad-hoc SQL never takes a lock that a running
materialization needs; a view reads whatever complete Parquet file is in place (writes are
atomic renames, so a reader sees the old file or the new one, never half of one).

The session is read-only on disk: it reads files only through ``ReadOnlyFiles`` (the protocol
``readonly://``, which opens files for reading and nothing else), DuckDB's own local file system
is disabled, extensions are neither installed nor loaded, and the configuration is locked. So no
statement (``COPY ... TO``, ``ATTACH``, ``EXPORT DATABASE``, ``INSTALL``/``LOAD``, a ``SET`` that
would undo this) can write a file: a validated table is never replaced from a SQL prompt.
DuckDB's own ``enable_external_access = false`` is not used: it turns off reading through a
registered file system too, and its ``allowed_directories`` lets writes into those directories.
"""

from __future__ import annotations

import glob
import io
import os
import re
import sys
import threading
from collections.abc import Iterator, Sequence
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem

from pipelines.home.paths import ProjectPaths, default_mirror, default_paths
from pipelines.terminal import printable


def sql_file(name: str) -> Traversable:
    """A file shipped with the package under ``pipelines/sql/`` (``views.sql``, ``examples/*.sql``).

    Read through ``importlib.resources``, so it is found in an installed wheel as in the repository
    (whose top-level ``sql/`` links to the same folder).
    """
    return files("pipelines.sql").joinpath(*name.split("/"))


#: One view per stored table over its Parquet files (``pipelines.home.paths.table_path``'s layout).
VIEWS_FILE = sql_file("views.sql")


#: The protocol of ``ReadOnlyFiles``: ``readonly:///abs/path`` reads the local file ``/abs/path``.
READ_ONLY = "readonly"
#: Connection settings that keep DuckDB from fetching, installing or loading extensions, and from spilling to disk
#: (spilling writes files; a query larger than DuckDB's memory_limit fails instead).
SESSION_CONFIG: dict[str, Any] = {"autoinstall_known_extensions": False, "autoload_known_extensions": False,
                                  "allow_community_extensions": False, "allow_persistent_secrets": False, "temp_directory": ""}
#: Run after the views exist: the only way left to files is ``readonly://``, and no SET can change that.
LOCK = ("set disabled_filesystems = 'LocalFileSystem'", "set lock_configuration = true")


class ReadRefused(Exception):
    """A path outside the folders a session reads. Not an ``OSError``: fsspec's ``walk`` (under ``glob``) treats an
    ``OSError`` as an empty folder, and a refused ``glob('readonly:///**')`` must say so rather than list nothing."""


class ReadOnlyFiles(AbstractFileSystem):
    """Local files under ``roots``, for reading only: the one file system a ``connect`` session has.

    It lists, describes and opens files for reading (``rb``); opening in any other mode raises
    ``PermissionError``, and it has no way to copy, move, remove or create anything
    (``AbstractFileSystem`` implements none of those). A path whose real path (symbolic links
    followed) is under none of ``roots`` is refused with ``ReadRefused``, for listing as for
    reading: ``glob('readonly:///**')`` lists nothing outside them.
    """

    protocol = (READ_ONLY,)
    root_marker = "/"

    def __init__(self, roots: Sequence[Path]) -> None:
        super().__init__()
        self._local = LocalFileSystem()
        self.roots = tuple(dict.fromkeys(Path(os.path.realpath(r)) for r in roots))

    def _allowed(self, path: str) -> str:
        """``path`` without the protocol, if its real path is under one of ``roots``; else ``ReadRefused``."""
        local = self._strip_protocol(path)
        real = Path(os.path.realpath(local))
        if not any(real.is_relative_to(root) for root in self.roots):
            raise ReadRefused(f"{local}: outside the folders the SQL session reads ({', '.join(map(str, self.roots))}; "
                                  "--allow-read PATH adds one)")
        return local

    def glob(self, path: str, maxdepth: int | None = None, **kwargs: Any) -> Any:
        # fsspec answers a pattern without wildcards through exists(), which reads a refusal as "no such file".
        if not glob.has_magic(path):
            self._allowed(path)
        return super().glob(path, maxdepth=maxdepth, **kwargs)

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> Any:
        return self._local.ls(self._allowed(path), detail=detail, **kwargs)

    def info(self, path: str, **kwargs: Any) -> Any:
        return self._local.info(self._allowed(path), **kwargs)

    def modified(self, path: str) -> Any:
        return self._local.modified(self._allowed(path))

    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        if mode != "rb":
            raise PermissionError(f"{path}: the SQL session is read-only (no file is written)")
        return PositionalReader(self._allowed(path))


class PositionalReader(io.RawIOBase):
    """A file open for reading whose position is each thread's own.

    DuckDB reads a registered (Python) file system's file as ``seek`` then ``read``, two calls, and
    its reader threads can share one open file: with one shared position, a thread now and then read
    another's bytes (a Parquet footer read as "TProtocolException: Invalid data"). Each read here is
    an ``os.pread`` at the calling thread's own position.
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self._fd = os.open(path, os.O_RDONLY)
        self._size = os.fstat(self._fd).st_size
        self._position = threading.local()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return getattr(self._position, "at", 0)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self.tell(), os.SEEK_END: self._size}[whence]
        self._position.at = base + offset
        return self._position.at

    def read(self, size: int | None = -1) -> bytes:
        at = self.tell()
        count = self._size - at if size is None or size < 0 else size
        data = os.pread(self._fd, max(count, 0), at)
        self._position.at = at + len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


def read_only_path(path: Path) -> str:
    """``path`` (made absolute) as the session reads it: ``readonly:///abs/path``."""
    return f"{READ_ONLY}://{path.resolve()}"


def half_the_memory() -> str:
    """Half this machine's physical memory, in DuckDB's ``memory_limit`` notation (``"11987MiB"``)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return f"{total // 2 // 2**20}MiB"


def read_roots(paths: ProjectPaths, allow_read: Sequence[Path] = ()) -> list[Path]:
    """The folders a session reads: the data home, the upstream mirror (if there is one) and ``allow_read``."""
    mirror = default_mirror(paths.root)
    return [paths.root, *([mirror] if mirror is not None else []), *allow_read]


_VIEW_NAME = re.compile(r"create\s+or\s+replace\s+view\s+(\w+)", re.I)


def connect(paths: ProjectPaths | None = None, *, quiet: bool = False, allow_read: Sequence[Path] = (),
            memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory, read-only connection with every view of ``sql/views.sql`` whose Parquet exists.

    A view whose files are not materialized yet is skipped (with a note on stderr unless ``quiet``);
    a view whose files cannot be read (not Parquet, truncated) is skipped with one warning line on
    stderr that names it, and the other views work. Files are read under ``read_roots`` only (the data
    home, the mirror, ``allow_read``). ``memory_limit``: DuckDB's (``"4GB"``), default half the RAM
    (``half_the_memory``; DuckDB's own default is 80 %).
    The DuckDB variables ``assets`` and ``home`` hold the data home's ``assets/`` and root as
    ``readonly://`` paths (``read_parquet(getvariable('home') || '/figures/x.parquet')``). Then the
    session is locked (the module docstring): files are read through ``readonly://`` only.
    """
    paths = paths or default_paths()
    con = duckdb.connect(":memory:", config={**SESSION_CONFIG, "memory_limit": memory_limit or half_the_memory()})
    con.register_filesystem(ReadOnlyFiles(read_roots(paths, allow_read)))
    # Absolute, so a view never resolves against the working directory instead of the data home.
    con.execute("set variable assets = ?", [read_only_path(paths.assets)])
    con.execute("set variable home = ?", [read_only_path(paths.root)])
    for statement in con.extract_statements(VIEWS_FILE.read_text()):
        try:
            con.execute(statement)
        except duckdb.IOException as exc:
            if not quiet:
                first = str(exc).splitlines()[0]
                print(f"note: view skipped (not materialized yet): {first}", file=sys.stderr)
        except duckdb.Error as exc:
            match = _VIEW_NAME.search(statement.query)
            view = match.group(1) if match else statement.query[:60]
            print(f"warning: view {view} skipped, its files cannot be read: {printable(first_line(exc))}", file=sys.stderr)
    for setting in LOCK:
        con.execute(setting)
    return con


def first_line(exc: BaseException) -> str:
    """The first non-blank line of ``exc``'s message (its type's name when it has none)."""
    return next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def view_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in con.execute("select view_name from duckdb_views() where not internal order by 1").fetchall()]


#: Rows per frame ``stream_sql`` yields: a batch, not the result, is what is held in memory.
BATCH_ROWS = 65_536


def stream_sql(con: duckdb.DuckDBPyConnection, text: str, batch_rows: int = BATCH_ROWS) -> Iterator[pl.DataFrame]:
    """Run every statement of ``text`` in order; yield the last one's result in frames of at most ``batch_rows`` rows.

    Earlier statements run to completion (their rows, if any, are read and dropped), so a script of
    ``create``/``set`` statements followed by one query works as in the DuckDB shell. The result is
    streamed from DuckDB (Arrow record batches), never held whole; at least one frame is yielded
    (an empty one with the result's columns when it has no rows, with none when there is no result).
    """
    statements = con.extract_statements(text)
    if not statements:
        yield pl.DataFrame()
        return
    for statement in statements[:-1]:
        con.execute(statement).fetchall()
    relation = con.sql(statements[-1].query)
    if relation is None:
        yield pl.DataFrame()
        return
    reader = as_text_where_needed(relation).to_arrow_reader(batch_rows)
    empty = True
    for batch in reader:
        empty = False
        yield pl.DataFrame(pl.from_arrow(batch))
    if empty:
        yield pl.DataFrame(pl.from_arrow(reader.schema.empty_table()))


#: DuckDB type ids whose values polars reads from Arrow and writes in every format (table, CSV, JSON) as they are.
PLAIN_TYPES = frozenset({
    "boolean", "tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint", "uinteger", "ubigint",
    "uhugeint", "float", "double", "decimal", "varchar", "date", "time", "timestamp", "timestamp_s", "timestamp_ms",
    "timestamp_ns", "timestamp with time zone", "uuid", "enum", "null",
})
#: Nested type ids that stay nested when each of their children is plain (CSV writes them as JSON text).
NESTED_TYPES = frozenset({"list", "array", "struct"})


def is_plain(dtype: duckdb.sqltypes.DuckDBPyType) -> bool:
    """Whether a column of ``dtype`` goes to every output format as it is: a ``PLAIN_TYPES`` type, or a list, array or
    struct of them. Any other type (interval, union, blob, bit, bignum, map, time with time zone, variant, and any type
    DuckDB adds later) is cast to text."""
    if dtype.id in NESTED_TYPES:
        # children: (name, type) pairs; an array's also holds ("size", n)
        return all(is_plain(child) for _, child in dtype.children if isinstance(child, duckdb.sqltypes.DuckDBPyType))
    return dtype.id in PLAIN_TYPES


def as_text_where_needed(relation: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    """``relation`` with each column that is not ``is_plain`` cast to VARCHAR (DuckDB's text for it), and a name
    that repeats an earlier column's suffixed ``_2``, ``_3``... (a frame's names are unique); the same relation when
    every column is plain and every name unique. Columns are selected by position."""
    kinds = [is_plain(t) for t in relation.types]
    names = unique_names(relation.columns)
    if all(kinds) and names == relation.columns:
        return relation
    columns = [f"#{i} as {quoted(name)}" if plain else f"cast(#{i} as varchar) as {quoted(name)}"
               for i, (name, plain) in enumerate(zip(names, kinds, strict=True), start=1)]
    return relation.project(", ".join(columns))


def unique_names(names: Sequence[str]) -> list[str]:
    """``names`` with each repeat of an earlier one suffixed ``_2``, ``_3``... (a suffixed name taken too: the next)."""
    taken: set[str] = set()
    out = []
    for name in names:
        candidate, n = name, 1
        while candidate in taken:
            n += 1
            candidate = f"{name}_{n}"
        taken.add(candidate)
        out.append(candidate)
    return out


def quoted(name: str) -> str:
    """``name`` as a SQL identifier."""
    return '"' + name.replace('"', '""') + '"'



def run_sql(con: duckdb.DuckDBPyConnection, text: str) -> pl.DataFrame:
    """``stream_sql``'s frames as one frame: the whole result of the last statement (an empty frame if it has none)."""
    return pl.concat(list(stream_sql(con, text)), how="vertical")
