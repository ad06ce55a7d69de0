"""Process supervision for long commands: die with the parent, tell a live process from a reused pid, end a group.

Linux specifics (``prctl``) degrade to no-ops elsewhere. No Dagster import.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1
#: A process whose start is this many seconds after a run started cannot be that run's process.
_CLOCK_SLACK_S = 1.0


def die_with_parent(sig: int = signal.SIGTERM, expected_parent: int | None = None) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent exits (Linux ``PR_SET_PDEATHSIG``).

    Returns False where unsupported. If the parent is already gone (it is not ``expected_parent``),
    ``sig`` is raised at once: there is no parent left to wait for.
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        return False
    if expected_parent is not None and os.getppid() != expected_parent:
        os.kill(os.getpid(), sig)
    return True


def process_started_at(pid: int) -> float | None:
    """Start time (epoch s) of the live process ``pid``; None if there is none (or only a zombie)."""
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return float(process.create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return None


def still_running(pid: int, started_by: float) -> bool:
    """True when ``pid`` is a live process that already existed at ``started_by`` (epoch s), not a reused pid."""
    started = process_started_at(pid)
    return started is not None and started <= started_by + _CLOCK_SLACK_S


def group_alive(pgid: int) -> bool:
    """True while any process of process group ``pgid`` exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def end_group(pgid: int, grace_s: float = 5.0) -> None:
    """SIGTERM every process of group ``pgid``, then SIGKILL whatever is left after ``grace_s``."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and group_alive(pgid):
            time.sleep(0.05)
        if not group_alive(pgid):
            return


def _others_in_group(pgid: int) -> list[int]:
    """Live processes of group ``pgid`` other than this one (zombies left out)."""
    import psutil

    others = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if process.pid != os.getpid() and os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                others.append(process.pid)
    return others


def end_own_group(grace_s: float = 5.0) -> None:
    """End every other process of this process's group (SIGTERM, then SIGKILL after ``grace_s``); this one goes on.

    SIGTERM is ignored here from then on: the group's SIGTERM reaches this process too.
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pgid = os.getpgid(0)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _others_in_group(pgid):
        time.sleep(0.05)
    for pid in _others_in_group(pgid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
