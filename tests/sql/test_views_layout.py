"""sql/views.sql reads every stored table where the IO manager writes it (``pipelines.home.paths.table_path``)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from pipelines.contracts.registry import table_contract
from pipelines.home.paths import table_path
from pipelines.sql.views import VIEWS_FILE

VIEW = re.compile(r"create or replace view (\w+) as select \* from read_parquet\(getvariable\('assets'\) \|\| '([^']+)'")


def test_every_table_has_a_view_over_its_files() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pipelines.definitions import defs

        graph = defs().resolve_asset_graph()
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
