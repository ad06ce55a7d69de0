"""Table contracts: every stored table (ingested, derived, figure data) declared once, as a dataframely Schema.

Each column has its type, constraints and a ``description=`` with its unit. Modules, one per layer:

* ``sources``: the ingested tables (Zeus traces, Alibaba groups, ITP, ElasticFlow, AcmeTrace,
  Zeus² profiles) and ``Quarantine``;
* ``clusters``: ``cluster_workload_jobs``, ``zeus_cluster_history``, ``zeus_cluster_summary``,
  ``zeus_single_job_sweep``;
* ``hetero``: ``hetero_allocations``;
* ``owncluster``: a user's own cluster traces, ``own_cluster_jobs`` and ``own_cluster_traces``;
* ``power``: ``cluster_power``, ``cluster_power_summary``, ``cluster_capacity`` and their figures' data;
* ``fleet``: AcmeTrace's measured distributions ``fleet_power_cdf``, ``power_model_vs_measured`` and its figure's data;
* ``sweep``: the knob grid ``zeus_knob_grid`` and its figure's data;
* ``zeus``: the group table the replay reads and the runs it reports;
* ``measure``: a measured power profile (``raw/measured/*.csv``);
* ``figures``: the data written next to each figure;
* ``limits``: the physically sane bounds and text lengths the ingested and measured tables declare;
* ``base``: ``polars_schema``, ``empty``, ``descriptions``, ``conform``, ``split_valid``,
  ``validate``, ``one_of``, ``ContractError``;
* ``registry``: asset key -> contract (``table_contract``); a figure's data contract is declared with the figure, in
  ``pipelines.figures.catalog``.

No module here imports Dagster or pandas.

Importing this package imports dataframely without its optional SQLAlchemy and pydantic
integrations (``to_sqlalchemy_columns``, ``to_pydantic_model``: never used here), when neither is
loaded yet: dataframely imports both eagerly, which costs the command line about 0.2 s per command.
Both stay importable afterwards (Dagster imports them itself); see ``_import_dataframely``.
"""

import sys
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

#: dataframely's optional integrations (top-level package names) that it imports only to offer them.
OPTIONAL_INTEGRATIONS = ("sqlalchemy", "pydantic", "pydantic_core")


class _Absent(MetaPathFinder):
    """Reports the packages ``names`` as not installed, while dataframely is imported."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any = None, target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"{fullname} is left out of dataframely's import", name=fullname)
        return None


def _import_dataframely() -> None:
    """Import dataframely with the optional integrations not loaded yet left out (dataframely falls back to stubs)."""
    if "dataframely" in sys.modules:
        return
    absent = _Absent({name for name in OPTIONAL_INTEGRATIONS if name not in sys.modules})
    sys.meta_path.insert(0, absent)
    try:
        import dataframely  # noqa: F401 - imported for its side effect: it is in sys.modules for every contract module
    finally:
        sys.meta_path.remove(absent)


_import_dataframely()
