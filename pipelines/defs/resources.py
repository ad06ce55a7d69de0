"""The resources and executor every asset of the code location shares.

The multiprocess executor is capped at 2 concurrent processes: the target machines have 2 cores
and each process re-imports this code location.
"""

import dagster as dg

from pipelines.dagster_support import ParquetIOManager, PathsResource

MAX_CONCURRENT_PROCESSES = 2


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={"io_manager": ParquetIOManager(), "paths": PathsResource()},
        executor=dg.multiprocess_executor.configured({"max_concurrent": MAX_CONCURRENT_PROCESSES}),
    )
