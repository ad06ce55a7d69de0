"""The Dask resource: where the sweeps' replays run (a thin wrapper over ``pipelines.distributed``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import dagster as dg

from pipelines.distributed import Runner, connect


class DaskResource(dg.ConfigurableResource):
    """Dask for the sweeps' tasks.

    ``scheduler``: empty = ``$DASK_SCHEDULER_ADDRESS`` when set at run time, else a LocalCluster
    started for the step (one worker process per core); ``"none"`` = in the step's process;
    ``"local"``; or a scheduler address ``tcp://HOST:PORT``. ``workers``: processes of a local
    cluster (0 = one per core).
    """

    scheduler: str = ""
    workers: int = 0

    @contextlib.contextmanager
    def runner(self) -> Iterator[Runner]:
        with connect(self.scheduler or None, workers=self.workers or None) as runner:
            yield runner
