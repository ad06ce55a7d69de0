"""sql/views.sql is generated (``pipelines.sql.generate``) from the table registry and the code location's partitions, and
reads every stored table where the IO manager writes it (``pipelines.home.paths.table_path``).

After a table is added or partitioned, refresh the file and commit it with the change::

    GPU_ENERGY_UPDATE_SNAPSHOT=1 .venv/bin/python -m pytest -q tests/sql/test_views_layout.py
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import dagster as dg

from pipelines.contracts.registry import table_contract
from pipelines.home.paths import REPO_ROOT, table_path
from pipelines.sql.generate import views_sql
from pipelines.sql.views import VIEWS_FILE

VIEW = re.compile(r"create or replace view (\w+) as select \* from read_parquet\(getvariable\('assets'\) \|\| '([^']+)'")


def _graph() -> dg.AssetGraph:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pipelines.definitions import defs

        return defs().resolve_asset_graph()


def test_views_sql_is_generated_from_the_registry_and_the_partitions() -> None:
    graph = _graph()
    partitioned = {k.to_user_string() for k in graph.materializable_asset_keys if graph.get(k).partitions_def is not None}
    text = views_sql(partitioned)
    if os.environ.get("GPU_ENERGY_UPDATE_SNAPSHOT"):
        (REPO_ROOT / "pipelines" / "sql" / "views.sql").write_text(text)
    assert VIEWS_FILE.read_text() == text, "sql/views.sql is not the generated text: refresh it (see this module's docstring)"


def test_every_table_has_a_view_over_its_files() -> None:
    graph = _graph()
    views = dict(VIEW.findall(VIEWS_FILE.read_text()))
    root = Path("/assets")
    expected = {"quarantine": "/quarantine/**/*.parquet"}  # one view over every table's quarantine, partitioned ones included
    for key in graph.materializable_asset_keys:
        name = key.to_user_string()
        if table_contract(name) is None or name.startswith("quarantine/"):
            continue
        partitioned = graph.get(key).partitions_def is not None
        expected[name] = "/" + str(table_path(root, name, "*" if partitioned else None).relative_to(root))
    assert views == expected
