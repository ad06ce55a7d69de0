"""The resources and executor every asset of the code location shares.

The executor is chosen per run (``execution: config: in_process`` or ``multiprocess``, Dagster's
``multi_or_in_process_executor``; multiprocess by default, one process per core). Its step processes fork from a
forkserver that has loaded the code location once (``start_method: forkserver``, unless the run config names another):
a step starts in a fraction of a second instead of importing Dagster, polars and the code location (2 s). With
``PIPELINES_EXECUTOR=dask`` in the environment when the code location loads, every run's steps go
to the Dask cluster at ``$DASK_SCHEDULER_ADDRESS`` instead (dagster-dask's ``dask_executor``;
``python -m pipelines materialize --executor dask`` sets both).
"""

import os
from typing import Any

import dagster as dg

from pipelines.defs.shared.io_manager import ParquetIOManager, PathsResource
from pipelines.scaleout.schedulers import SCHEDULER_ENV

EXECUTOR_ENV = "PIPELINES_EXECUTOR"


def _forkserver_by_default(config: dict[str, Any]) -> dict[str, Any]:
    if "multiprocess" in config and "start_method" not in config["multiprocess"]:
        return {"multiprocess": {**config["multiprocess"], "start_method": {"forkserver": {}}}}
    return config


#: Dagster's multi_or_in_process_executor, with the same run config, forkserver by default.
MULTI_OR_IN_PROCESS = dg.multi_or_in_process_executor.configured(
    _forkserver_by_default, config_schema=dg.multi_or_in_process_executor.config_schema.as_field())


def executor() -> dg.ExecutorDefinition:
    """The executor the environment asks for (read when the code location loads, not at import)."""
    if os.environ.get(EXECUTOR_ENV) == "dask":
        from dagster_dask import dask_executor

        return dask_executor.configured({"cluster": {"existing": {"address": {"env": SCHEDULER_ENV}}}})
    return MULTI_OR_IN_PROCESS


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"io_manager": ParquetIOManager(), "paths": PathsResource()}, executor=executor())
