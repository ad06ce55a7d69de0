"""The Dagster code location: every module of ``pipelines.defs`` plus the shared resources.

The executor is chosen per run (``execution: config: in_process`` or ``multiprocess``, Dagster's
``multi_or_in_process_executor``; multiprocess by default, one process per core). With
``PIPELINES_EXECUTOR=dask`` in the environment when the code location loads, every run's steps go
to the Dask cluster at ``$DASK_SCHEDULER_ADDRESS`` instead (dagster-dask's ``dask_executor``;
``python -m pipelines materialize --executor dask`` sets both).
"""

from __future__ import annotations

import os
import warnings

import dagster as dg

from pipelines import defs as defs_package
from pipelines.dagster_support import ParquetIOManager, PathsResource

EXECUTOR_ENV = "PIPELINES_EXECUTOR"
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"


def executor() -> dg.ExecutorDefinition:
    """The executor the environment asks for (read when the code location loads, not at import)."""
    if os.environ.get(EXECUTOR_ENV) == "dask":
        from dagster_dask import dask_executor

        return dask_executor.configured({"cluster": {"existing": {"address": {"env": SCHEDULER_ENV}}}})
    return dg.multi_or_in_process_executor


@dg.definitions
def defs() -> dg.Definitions:
    with warnings.catch_warnings():  # "in preview"/"in beta" notices, printed by every process that loads the location
        warnings.simplefilter("ignore", dg.PreviewWarning)
        warnings.simplefilter("ignore", dg.BetaWarning)
        loaded = dg.load_definitions_from_package_module(defs_package)
    return dg.Definitions.merge(
        loaded,
        dg.Definitions(
            resources={"io_manager": ParquetIOManager(), "paths": PathsResource()},
            executor=executor(),
        ),
    )
