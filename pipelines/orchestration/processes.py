"""Process supervision: die with the parent, tell a live process from a reused pid, end a process group. No Dagster."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

import psutil

_PR_SET_PDEATHSIG = 1
#: What asks materialize's orchestrator to stop: the driver's forwarded Ctrl-C, or the kernel when the driver dies.
STOP_SIGNAL = signal.SIGUSR1
#: Seconds from a stop (Ctrl-C) to materialize's end, its runs marked and its processes ended (issue 39).
STOP_S = 2.0
#: A process whose start is this many seconds after a run started cannot be that run's process.
_CLOCK_SLACK_S = 1.0


class Stopped(KeyboardInterrupt):
    """Raised in the orchestrator by ``STOP_SIGNAL``, once every other process of its group is killed (``kill_group_but_self``).

    A ``KeyboardInterrupt``: what ends its work at a Ctrl-C (``pipelines.scaleout.local``) ends it at a stop too."""


def die_with_parent(sig: int, expected_parent: int) -> None:
    """Have the kernel send ``sig`` to this process when its parent exits (Linux ``PR_SET_PDEATHSIG``; elsewhere a no-op).

    If the parent is already gone (it is not ``expected_parent``), ``sig`` is raised at once.
    """
    if sys.platform.startswith("linux") and ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0:
        if os.getppid() != expected_parent:
            os.kill(os.getpid(), sig)


def still_running(pid: int, started_by: float) -> bool:
    """True when ``pid`` is a live process that already existed at ``started_by`` (epoch s), not a reused pid."""
    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and process.create_time() <= started_by + _CLOCK_SLACK_S
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def group_alive(pgid: int) -> bool:
    """True while any process of process group ``pgid`` exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def kill_group_but_self() -> None:
    """SIGKILL every other process of this process's group, until none is left: the processes it started, and theirs
    (Dagster starts none in a group of its own), orphaned or not. Multiprocessing's resource trackers are spared: they
    clean up after their killed clients, then exit."""
    me, group, deadline = os.getpid(), os.getpgid(0), time.monotonic() + 1.0
    while time.monotonic() < deadline:  # a process in uninterruptible sleep dies once it leaves it: not waited for
        others = []
        for process in psutil.process_iter(["pid", "status", "cmdline"]):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if process.pid != me and process.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(process.pid) == group \
                        and "resource_tracker" not in " ".join(process.info["cmdline"] or ()):
                    others.append(process)
        if not others:
            break
        for process in others:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()


def end_group(pgid: int, grace_s: float) -> None:
    """SIGTERM every process of group ``pgid``, then SIGKILL whatever is left after ``grace_s``."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + wait
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
