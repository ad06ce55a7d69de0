"""``python -m pipelines dev``: the Dagster UI and daemons (``dg dev``), every process of them ended within 5 s of Ctrl-C or SIGTERM."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click

from pipelines.orchestration.processes import end_group, group_alive

#: Seconds Dagster's processes get to shut down after a Ctrl-C before they are terminated, then killed (at most 2.5 s more).
GRACE_S = 2.0


@click.command("dev")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address the UI listens on (loopback: see docs/getting-started.md).")
@click.option("--port", default=3000, show_default=True, type=int, help="Port of the UI.")
def cli(host: str, port: int) -> None:
    """Start the Dagster UI and daemons (dg dev); Ctrl-C or SIGTERM ends every process of them within 5 s (make dev runs this).

    ``dg dev`` runs in a process group of its own; on Ctrl-C or SIGTERM the group gets a Ctrl-C, and what is left of it
    after a grace of a few seconds (Dagster's own shutdown waits a minute for each service) is terminated, then killed.
    A run in progress is ended with it; the next ``make dev`` marks it failed (``recover``).
    """
    dg = Path(sys.executable).parent / "dg"  # installed with dagster-dg-cli beside this interpreter
    sys.exit(supervise([str(dg), "dev", "--host", host, "--port", str(port)], GRACE_S))


def supervise(argv: list[str], grace_s: float) -> int:
    """Run ``argv`` in a process group of its own until it exits, or until this process gets SIGINT or SIGTERM; its exit status
    (130 or 143 when stopped by a signal).

    On either signal the group gets SIGINT (a Ctrl-C: Dagster's processes start their own shutdown), then, after
    ``grace_s``, ``end_group``'s SIGTERM and SIGKILL: Dagster's ``dev`` waits up to 60 s for its webserver and daemon, and
    a ``dev`` started with SIGINT ignored (``make dev &`` from a script) ignores SIGTERM too, as Dagster maps SIGTERM to
    SIGINT's handler. The handlers are ours before ``argv`` starts, so it starts with SIGINT's default, not an inherited
    ignore. A group left behind by a command that exited by itself is ended too.
    """
    stopped: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: stopped.append(signum)) for sig in (signal.SIGINT, signal.SIGTERM)}
    child = None
    try:
        child = subprocess.Popen(argv, start_new_session=True)
        while child.poll() is None and not stopped:
            time.sleep(0.1)
        if stopped:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGINT)
            deadline = time.monotonic() + grace_s
            # child.poll() reaps it: a zombie would keep its group alive
            while (child.poll() is None or group_alive(child.pid)) and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        if child is not None:
            child.poll()
            end_group(child.pid, 0.5)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    code = child.wait()
    return 128 + stopped[0] if stopped else code
