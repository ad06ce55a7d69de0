"""The Dask resource: where the sweeps' replays run (a thin wrapper over ``pipelines.scaleout``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import dagster as dg

from pipelines.scaleout.runners import Runner
from pipelines.scaleout.schedulers import connect


class DaskResource(dg.ConfigurableResource):
    """Dask for the sweeps' tasks.

    ``scheduler``: empty = ``$DASK_SCHEDULER_ADDRESS`` when set at run time, else ``"auto"`` (in the
    step's process, or a LocalCluster started for the step where the measured work pays for it);
    ``"none"`` = in the step's process; ``"local"``; or a scheduler address ``tcp://HOST:PORT``. ``workers``: processes of a local
    cluster (0 = one per core).
    """

    scheduler: str = ""
    workers: int = 0

    @contextlib.contextmanager
    def runner(self, note: Callable[[str], None] | None = None) -> Iterator[Runner]:
        """The runner of this configuration; ``note``: where ``"auto"``'s choice is said (default: stderr)."""
        with connect(self.scheduler or None, workers=self.workers or None, note=note) as runner:
            yield runner
