"""Process supervision without Dagster: run a command in a process group of its own and stop it on a signal
(``supervise``: ``dev`` and ``materialize``), die with the parent, tell a live process from a reused pid, kill a group."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import psutil

_PR_SET_PDEATHSIG = 1
#: A process whose start is this many seconds after a run started cannot be that run's process.
_CLOCK_SLACK_S = 1.0
#: The signals that stop a supervised command: Ctrl-C, ``kill``, a closed terminal.
STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: Seconds ``supervise`` gives a group's processes between SIGTERM and SIGKILL once its grace is over.
TERM_S = 0.5


def supervise(argv: list[str], stop: Callable[[int], None], grace_s: float, env: dict[str, str] | None = None) -> tuple[int, int | None]:
    """Run ``argv`` in a process group of its own (SIGINT's default) until it exits; (its status, the ``STOPPING`` signal that stopped it
    or None); on a signal ``stop(pid)`` asks it to stop, and its group gets SIGTERM ``grace_s`` later (or once it exited), SIGKILL ``TERM_S`` after."""
    stopped: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: stopped.append(signum)) for sig in STOPPING}
    try:
        child = subprocess.Popen(argv, env=env, start_new_session=True)
        while child.poll() is None and not stopped:
            time.sleep(0.02)
        for act, wait in [*([(stop, grace_s)] if stopped else []), (lambda pid: os.killpg(pid, signal.SIGTERM), TERM_S),
                          (lambda pid: os.killpg(pid, signal.SIGKILL), 2.0)]:
            if child.poll() is not None and not group_alive(child.pid):  # poll() reaps it: a zombie keeps its group
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                act(child.pid)
            deadline = time.monotonic() + wait
            while (child.poll() is None or group_alive(child.pid)) and time.monotonic() < deadline:
                time.sleep(0.02)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return child.wait(), stopped[0] if stopped else None


def die_with_parent(sig: int, expected_parent: int) -> None:
    """Have the kernel send ``sig`` when the parent exits (Linux ``PR_SET_PDEATHSIG``); at once if ``expected_parent`` is gone."""
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
    """True while a process of group ``pgid`` runs: a zombie has ended (only its parent's wait is left, and an orphan's
    waits for an init that may reap late: 1.7 s seen)."""
    return bool(_members(pgid))


def _members(pgid: int) -> list[psutil.Process]:
    """The processes of group ``pgid`` but its zombies, each with its ``info`` status and command line."""
    found = []
    for process in psutil.process_iter(["status", "cmdline"]):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if process.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(process.pid) == pgid:
                found.append(process)
    return found


def kill_group_but_self() -> None:
    """SIGKILL every other process of this process's group (Dagster starts none in a group of its own) but multiprocessing's
    resource trackers (they clean up after their killed clients, then exit), for at most 1 s until none is left."""
    me, group, deadline = os.getpid(), os.getpgid(0), time.monotonic() + 1.0
    while time.monotonic() < deadline:
        others = [p for p in _members(group) if p.pid != me and "resource_tracker" not in " ".join(p.info["cmdline"] or ())]
        for process in others:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        if not others:
            return
