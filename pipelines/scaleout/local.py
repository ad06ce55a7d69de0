"""A ``distributed.LocalCluster`` started for a command (the ``"local"`` scheduler, and ``"auto"``'s cluster)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def local_cluster(workers: int | None = None) -> Iterator[Any]:
    """A ``distributed.LocalCluster`` for CPU-bound Python: ``workers`` processes (default one per core)
    of one thread each, on 127.0.0.1, no dashboards; closed on exit."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=workers or os.cpu_count() or 1,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        worker_dashboard_address=None,
        # Without a dashboard the scheduler still serves its HTTP routes (health, metrics) on 8787,
        # warning when that port is taken (another cluster, two commands at once): any free port.
        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        silence_logs=logging.ERROR,
    ) as cluster:
        yield cluster
