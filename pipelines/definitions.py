"""The Dagster code location: every module of ``pipelines.defs`` plus the shared resources.

The multiprocess executor is capped at 2 concurrent processes: the target machines have 2 cores
and each process re-imports this code location.
"""

from __future__ import annotations

import dagster as dg

from pipelines import defs as defs_package
from pipelines.dagster_support import ParquetIOManager, PathsResource

MAX_CONCURRENT_PROCESSES = 2


@dg.definitions
def defs() -> dg.Definitions:
    return dg.Definitions.merge(
        dg.load_definitions_from_package_module(defs_package),
        dg.Definitions(
            resources={"io_manager": ParquetIOManager(), "paths": PathsResource()},
            executor=dg.multiprocess_executor.configured({"max_concurrent": MAX_CONCURRENT_PROCESSES}),
        ),
    )
