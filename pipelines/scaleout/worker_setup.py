"""Preloaded into each nanny of a local cluster (``local.local_cluster``): its worker process starts with SIGINT blocked.

A terminal's Ctrl-C reaches the command's whole process group, its workers included. The command ends its workers
itself (``local_cluster`` on its ``KeyboardInterrupt``, or ``home.interrupt``'s watchdog), so a worker's own
``KeyboardInterrupt`` (Python's handler, or polars' own of a query) would only print tracebacks of its threads under the
command's one line. A nanny lives in the command's process, on the cluster's event-loop thread, and starts its worker
from a thread that thread creates: a signal blocked in the loop thread stays blocked in those threads, across the fork
and the exec, and from the worker's first instruction on. The command's main thread still takes the Ctrl-C.
"""

from __future__ import annotations

import signal
import threading
from typing import Any


def dask_setup(nanny: Any) -> None:
    """Dask's preload hook, run as the nanny starts, before it starts its worker process."""
    if threading.current_thread() is not threading.main_thread():  # never the command's own Ctrl-C
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
