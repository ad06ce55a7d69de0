"""Waiting for the processes a test started to end."""

from __future__ import annotations

import contextlib
import os
import textwrap
import time
from pathlib import Path

import psutil

#: A script (``python -c``) whose run stays STARTED in ``$DAGSTER_HOME``'s instance for 5 minutes, until its process is killed.
SLOW_RUN = textwrap.dedent("""
    import time
    import dagster as dg

    @dg.asset
    def slow() -> int:
        time.sleep(300)
        return 1

    dg.materialize([slow], instance=dg.DagsterInstance.get())
""")


def survivors(processes: list[psutil.Process], limit_s: float) -> tuple[float, list[str]]:
    """(seconds until every process of ``processes`` ended, at most ``limit_s``; the command lines of those left)."""
    started = time.monotonic()

    def alive() -> list[psutil.Process]:
        live = []
        for process in processes:
            with contextlib.suppress(psutil.NoSuchProcess):
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    live.append(process)
        return live

    while alive() and time.monotonic() - started < limit_s:
        time.sleep(0.1)
    left = []
    for process in alive():
        with contextlib.suppress(psutil.NoSuchProcess):
            left.append(" ".join(process.cmdline())[:120])
    return time.monotonic() - started, left


def blocked_on(lock: Path) -> list[int]:
    """The ids of the processes waiting for a lock (flock or fcntl) on the file ``lock``: /proc/locks's "->" lines (Linux)."""
    stat = lock.stat()
    device = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    waiting = []
    for line in Path("/proc/locks").read_text().splitlines():
        words = line.split()
        if len(words) > 6 and words[1] == "->" and words[6] == device:
            waiting.append(int(words[5]))
    return waiting
