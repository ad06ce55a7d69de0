"""The text of ``views.sql``: one view per table of the registry (``pipelines.contracts.registry.TABLES``, in its order) over
the files the IO manager writes (``pipelines.home.paths.table_path``), and one over every quarantine.

Which tables are partitioned is the code location's knowledge (their partitions definitions), which this layer does not
import: ``tests/sql/test_views_layout.py`` passes it in from the loaded code location and checks that the shipped file is
this text (and rewrites it, with ``GPU_ENERGY_UPDATE_SNAPSHOT=1``, after a table is added or partitioned).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from pipelines.contracts.registry import QUARANTINE_PREFIX, TABLES
from pipelines.home.paths import table_path

HEADER = """\
-- Generated from the table registry (pipelines/contracts/registry.py) and the code location's partitions by
-- pipelines/sql/generate.py: do not edit; refresh with
--   GPU_ENERGY_UPDATE_SNAPSHOT=1 .venv/bin/python -m pytest -q tests/sql/test_views_layout.py
-- One view per asset over its Parquet. `assets` is a DuckDB variable holding the absolute path of
-- the assets folder: the Python entry point (python -m pipelines sql) and `make sql` set it first
-- (set variable assets = '/path/to/home/assets').
-- In-memory DuckDB over Parquet: an ad-hoc session never holds a lock a materialization needs.
"""
#: The view over every table's quarantine (a partitioned table's: one file per partition).
QUARANTINE_VIEW = "quarantine"


def summary(table: str) -> str:
    """The first paragraph of the table's contract's docstring, on one line, without a leading "``table``: "."""
    doc = (TABLES[table].__doc__ or "").strip().split("\n\n")[0]
    return " ".join(doc.split()).removeprefix(f"``{table}``: ")


def view(name: str, files: str, partitioned: bool) -> str:
    """``create or replace view`` of ``name`` over ``files`` (relative to the assets folder)."""
    options = ", union_by_name = true" if partitioned else ""
    return f"create or replace view {name} as select * from read_parquet(getvariable('assets') || '/{files}'{options});"


def views_sql(partitioned: Collection[str]) -> str:
    """The file: a view of each table of the registry (``partitioned``: the names of those stored one file per partition),
    each under its contract's summary, then the quarantine view."""
    root = Path("/assets")
    blocks = [HEADER]
    for table in TABLES:
        path = table_path(root, table, "*" if table in partitioned else None).relative_to(root)
        blocks.append(f"-- {table}: {summary(table)}\n{view(table, str(path), table in partitioned)}\n")
    blocks.append("-- every quarantined row of every table: table, source_file, line, column, reason, raw (a partitioned table's: one "
                  f"file per partition)\n{view(QUARANTINE_VIEW, QUARANTINE_PREFIX + '**/*.parquet', True)}\n")
    return "\n".join(blocks)
