"""``python -m pipelines dev``: the Dagster UI and daemons (``dg dev``), every process of them ended within 5 s of Ctrl-C or SIGTERM."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import click

from pipelines.orchestration.processes import supervise

#: Seconds Dagster's processes get to shut down after a Ctrl-C before they are terminated, then killed (at most 2.5 s more: ``supervise``).
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
    # On a stop the group gets SIGINT (a Ctrl-C: Dagster's processes start their own shutdown), then, after GRACE_S,
    # SIGTERM and SIGKILL: Dagster's ``dev`` waits up to 60 s for its webserver and daemon, and one started with SIGINT
    # ignored ignores SIGTERM too, as Dagster maps SIGTERM to SIGINT's handler.
    code, stopped_by = supervise([str(dg), "dev", "--host", host, "--port", str(port)], lambda pid: os.killpg(pid, signal.SIGINT), GRACE_S)
    sys.exit(code if stopped_by is None else 128 + stopped_by)
