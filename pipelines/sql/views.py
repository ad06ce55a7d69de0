"""DuckDB over the materialized Parquet: an in-memory database with one view per asset.

Each connection is private and in memory, so ad-hoc SQL never takes a lock that a running
materialization needs; a view reads whatever complete Parquet file is in place (writes are
atomic renames, so a reader sees the old file or the new one, never half of one).
"""

from __future__ import annotations

import sys
from importlib.resources import files
from importlib.resources.abc import Traversable

import duckdb
import polars as pl

from pipelines.home.paths import ProjectPaths, default_paths


def sql_file(name: str) -> Traversable:
    """A file shipped with the package under ``pipelines/sql/`` (``views.sql``, ``examples/*.sql``).

    Read through ``importlib.resources``, so it is found in an installed wheel as in the repository
    (whose top-level ``sql/`` links to the same folder).
    """
    return files("pipelines.sql").joinpath(*name.split("/"))


#: One view per stored table over its Parquet files (``pipelines.home.paths.table_path``'s layout).
VIEWS_FILE = sql_file("views.sql")


def connect(paths: ProjectPaths | None = None, *, quiet: bool = False) -> duckdb.DuckDBPyConnection:
    """An in-memory connection with every view of ``sql/views.sql`` whose Parquet exists.

    A view whose files are not materialized yet is skipped (with a note on stderr unless ``quiet``).
    """
    paths = paths or default_paths()
    con = duckdb.connect(":memory:")
    # Absolute, so a view never resolves against the working directory instead of the data home.
    con.execute("set variable assets = ?", [str(paths.assets.resolve())])
    for statement in con.extract_statements(VIEWS_FILE.read_text()):
        try:
            con.execute(statement)
        except duckdb.IOException as exc:
            if not quiet:
                first = str(exc).splitlines()[0]
                print(f"note: view skipped (not materialized yet): {first}", file=sys.stderr)
    return con


def view_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in con.execute("select view_name from duckdb_views() where not internal order by 1").fetchall()]


def run_sql(con: duckdb.DuckDBPyConnection, text: str) -> pl.DataFrame:
    """Run every statement of ``text`` in order; return the last one's result (empty frame if it has none).

    Earlier statements run to completion (their rows, if any, are read and dropped), so a script of
    ``create``/``set`` statements followed by one query works as in the DuckDB shell.
    """
    statements = con.extract_statements(text)
    if not statements:
        return pl.DataFrame()
    for statement in statements[:-1]:
        con.execute(statement).fetchall()
    relation = con.sql(statements[-1].query)
    return relation.pl() if relation is not None else pl.DataFrame()
