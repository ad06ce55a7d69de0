"""Waiting for the processes a test started to end."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

from pipelines.home.paths import REPO_ROOT

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


def folder_removed_on_signal(holder: str, prefix: str, signum: int, temp: Path) -> None:
    """Run ``holder`` (``python -c``; it makes one temp folder named ``prefix...`` holding a file, prints an empty line, then
    sleeps) with ``$TMPDIR`` = ``temp`` (empty), end it by ``signum`` once the line is printed, and check that the signal
    ended it and that its folder is gone (a SIGTERM or SIGHUP runs no ``with``'s exit nor any finalizer)."""
    proc = subprocess.Popen([sys.executable, "-c", holder], env={**os.environ, "TMPDIR": str(temp)}, stdout=subprocess.PIPE,
                            cwd=REPO_ROOT)
    assert proc.stdout is not None and proc.stdout.readline() == b"\n"  # the folder and its file are on disk
    assert [p.name.startswith(prefix) for p in temp.iterdir()] == [True]
    proc.send_signal(signal.Signals(signum))
    assert proc.wait(timeout=30) == -signum
    proc.stdout.close()
    assert list(temp.iterdir()) == []
