"""A ``distributed.LocalCluster`` started for a command (the ``"local"`` scheduler, and ``"auto"``'s cluster)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

from pipelines.home import interrupt

#: The warning filter (``-W``) the resource tracker starts with: "resource_tracker: There appear to be N leaked semaphore
#: objects to clean up at shutdown", after the workers were killed.
_TRACKER_QUIET = "ignore:resource_tracker:UserWarning"


@contextlib.contextmanager
def local_cluster(workers: int | None = None) -> Iterator[Any]:
    """A ``distributed.LocalCluster`` for CPU-bound Python: ``workers`` processes (default one per core)
    of one thread each, on 127.0.0.1, no dashboards; closed on exit."""
    import dask
    import psutil
    from distributed import LocalCluster

    before = frozenset(p.pid for p in psutil.Process().children(recursive=True))
    # Started here, not by the first worker's start: multiprocessing starts it with SIGINT blocked and then unblocks SIGINT
    # in the starting thread, which would undo ``worker_setup``'s block in the cluster's thread. After a Ctrl-C it removes
    # the semaphores of the killed workers, as it should, without its warning under the command's one line.
    sys.warnoptions.append(_TRACKER_QUIET)
    try:
        resource_tracker.ensure_running()
    finally:
        sys.warnoptions.remove(_TRACKER_QUIET)
    with contextlib.ExitStack() as stack:
        # The workers' scratch (spill, locks) in a folder of this command's, removed however it ends (closed, a Ctrl-C's
        # watchdog, SIGTERM, SIGHUP): Dask's default is a shared dask-scratch-space/ in the temp folder, left by a Ctrl-C.
        scratch = Path(tempfile.mkdtemp(prefix="gpu-energy-dask-"))
        stack.callback(shutil.rmtree, scratch, ignore_errors=True)
        stack.enter_context(interrupt.removed_on_abort(scratch))
        stack.enter_context(dask.config.set({"temporary-directory": str(scratch)}))  # the scheduler's and nannies' too
        try:
            yield stack.enter_context(LocalCluster(
                local_directory=str(scratch),
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
                preload_nanny=["pipelines.scaleout.worker_setup"],  # a Ctrl-C is the command's to handle, not its workers'
            ))
        except KeyboardInterrupt:
            # A Ctrl-C drops the workers' work: they are killed at once, before the cluster's close (the stack's) would
            # wait seconds on each (issue 39: Ctrl-C stops a command within 2 s). What their end makes Dask log here (closed
            # comms) would only bury the command's one line.
            for name in ("distributed", "asyncio", "tornado"):
                logging.getLogger(name).setLevel(logging.CRITICAL)
            interrupt.kill_children(spare=before)
            raise
