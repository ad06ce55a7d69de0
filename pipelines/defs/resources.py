"""The resources and executor every asset of the code location shares.

The executor is chosen per run (``execution: config: in_process`` or ``multiprocess``, Dagster's
``multi_or_in_process_executor``; multiprocess by default, one process per core). With
``PIPELINES_EXECUTOR=dask`` in the environment when the code location loads, every run's steps go
to the Dask cluster at ``$DASK_SCHEDULER_ADDRESS`` instead (dagster-dask's ``dask_executor``;
``python -m pipelines materialize --executor dask`` sets both).
"""

import os

import dagster as dg

from pipelines.defs.shared.io_manager import ParquetIOManager, PathsResource
from pipelines.distributed import SCHEDULER_ENV

EXECUTOR_ENV = "PIPELINES_EXECUTOR"


def executor() -> dg.ExecutorDefinition:
    """The executor the environment asks for (read when the code location loads, not at import)."""
    if os.environ.get(EXECUTOR_ENV) == "dask":
        from dagster_dask import dask_executor

        return dask_executor.configured({"cluster": {"existing": {"address": {"env": SCHEDULER_ENV}}}})
    return dg.multi_or_in_process_executor


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"io_manager": ParquetIOManager(), "paths": PathsResource()}, executor=executor())
