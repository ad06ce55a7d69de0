"""The schedulers by name (the package docstring) and ``connect``, which makes the runner of one."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from pipelines.scaleout.auto import AutoRunner
from pipelines.scaleout.local import local_cluster
from pipelines.scaleout.runners import DaskRunner, Runner, SerialRunner

if TYPE_CHECKING:
    from pipelines.scaleout.jobqueue import SlurmOptions

#: The environment variable naming an existing Dask scheduler (read when a runner is made).
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
AUTO = "auto"
LOCAL = "local"
NONE = "none"
SLURM = "slurm"
#: The schedulers named by a word (anything else is an address).
NAMED = (AUTO, LOCAL, NONE, SLURM)
#: How long ``connect`` tries to reach a scheduler address before it gives up (``SchedulerError``).
CONNECT_TIMEOUT = "30s"


class SchedulerError(ValueError):
    """A scheduler address that cannot be reached (the message names it and why)."""


def resolve_scheduler(scheduler: str | None = None) -> str:
    """``scheduler``, or ``$DASK_SCHEDULER_ADDRESS``, or ``"auto"`` (see the package docstring)."""
    if scheduler:
        return scheduler
    return os.environ.get(SCHEDULER_ENV) or AUTO


def _inside_dask_worker() -> bool:
    if "distributed" not in sys.modules:  # a worker has imported it; importing it to ask would cost about 0.4 s
        return False
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return False
    return True


@contextlib.contextmanager
def connect(scheduler: str | None = None, *, workers: int | None = None, slurm: SlurmOptions | None = None,
            note: Callable[[str], None] | None = None) -> Iterator[Runner]:
    """A runner for ``scheduler`` (see the package docstring), closed (cluster stopped) on exit.

    ``workers``: processes of a ``"local"`` (or ``"auto"``'s) cluster (default: one per core); ``slurm``: the jobs of
    a ``"slurm"`` cluster (default: Dask's ``jobqueue.slurm`` config); both ignored otherwise.
    ``note``: where a Slurm cluster's progress lines and ``"auto"``'s choice go (default for the latter: stderr).
    """
    target = resolve_scheduler(scheduler)
    if target == NONE:
        yield SerialRunner()
        return
    if target in (LOCAL, AUTO) and _inside_dask_worker():
        from distributed import worker_client

        with worker_client() as client:
            yield DaskRunner(client, f"the Dask cluster of this worker ({client.scheduler.address})")
        return
    if target == AUTO:
        with contextlib.ExitStack() as stack:
            yield AutoRunner(stack, workers, note)
        return
    from distributed import Client

    if target == LOCAL:
        with local_cluster(workers) as cluster, Client(cluster) as client:
            yield DaskRunner(client, f"local cluster {cluster.scheduler_address}")
        return
    if target == SLURM:
        from pipelines.scaleout.jobqueue import SlurmOptions, slurm_cluster, wait_for_workers

        with slurm_cluster(slurm or SlurmOptions(), note) as cluster, Client(cluster) as client:
            wait_for_workers(client, note)
            yield DaskRunner(client, f"Slurm jobs of scheduler {cluster.scheduler_address}")
        return
    try:
        client = Client(target, timeout=CONNECT_TIMEOUT)
    except (OSError, ValueError) as exc:  # nothing listening, a timeout, a name that does not resolve; a scheme Dask lacks
        raise SchedulerError(f"Dask scheduler {target}: {exc}") from None
    with client:
        yield DaskRunner(client, f"Dask scheduler {target}")
