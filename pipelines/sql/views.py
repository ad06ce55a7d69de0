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

import io
import os
import sys
import threading
from collections.abc import Iterator
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem

from pipelines.home.paths import ProjectPaths, default_paths


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


class ReadOnlyFiles(AbstractFileSystem):
    """Local files, for reading only: the one file system a ``connect`` session has.

    It lists, describes and opens files for reading (``rb``); opening in any other mode raises
    ``PermissionError``, and it has no way to copy, move, remove or create anything
    (``AbstractFileSystem`` implements none of those).
    """

    protocol = (READ_ONLY,)
    root_marker = "/"

    def __init__(self) -> None:
        super().__init__()
        self._local = LocalFileSystem()

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> Any:
        return self._local.ls(self._strip_protocol(path), detail=detail, **kwargs)

    def info(self, path: str, **kwargs: Any) -> Any:
        return self._local.info(self._strip_protocol(path), **kwargs)

    def modified(self, path: str) -> Any:
        return self._local.modified(self._strip_protocol(path))

    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        if mode != "rb":
            raise PermissionError(f"{path}: the SQL session is read-only (no file is written)")
        return PositionalReader(self._strip_protocol(path))


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


def connect(paths: ProjectPaths | None = None, *, quiet: bool = False) -> duckdb.DuckDBPyConnection:
    """An in-memory, read-only connection with every view of ``sql/views.sql`` whose Parquet exists.

    A view whose files are not materialized yet is skipped (with a note on stderr unless ``quiet``).
    The DuckDB variables ``assets`` and ``home`` hold the data home's ``assets/`` and root as
    ``readonly://`` paths (``read_parquet(getvariable('home') || '/figures/x.parquet')``). Then the
    session is locked (the module docstring): files are read through ``readonly://`` only.
    """
    paths = paths or default_paths()
    con = duckdb.connect(":memory:", config=SESSION_CONFIG)
    con.register_filesystem(ReadOnlyFiles())
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
    for setting in LOCK:
        con.execute(setting)
    return con


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
    reader = relation.to_arrow_reader(batch_rows)
    empty = True
    for batch in reader:
        empty = False
        yield pl.DataFrame(pl.from_arrow(batch))
    if empty:
        yield pl.DataFrame(pl.from_arrow(reader.schema.empty_table()))


def run_sql(con: duckdb.DuckDBPyConnection, text: str) -> pl.DataFrame:
    """``stream_sql``'s frames as one frame: the whole result of the last statement (an empty frame if it has none)."""
    return pl.concat(list(stream_sql(con, text)), how="vertical")
