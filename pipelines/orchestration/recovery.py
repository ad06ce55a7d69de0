"""Start-up clean-up after a killed materialization: runs whose process is gone, and temp files left behind.

Dagster marks a run failed when its process dies only under a run launcher with run monitoring; a
run executed in-process (``materialize``) would stay STARTED. A run in progress is *stale* when the
process of its RUN_START event is dead, or is a newer process under a reused pid (checked on this
machine: the instance is sqlite under ``$DAGSTER_HOME``). Stale runs are marked FAILURE (CANCELED
if a cancel was asked for). Temp files are stale when older than every run still in progress.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click
import dagster as dg

from pipelines.home.paths import ProjectPaths, default_paths
from pipelines.home.storage import remove_stale_temp_files
from pipelines.orchestration.processes import still_running
from pipelines.terminal import printable

IN_PROGRESS = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


@dataclass(frozen=True)
class Recovery:
    """What ``recover`` did: runs marked (run id, new status, why) and temp files removed."""

    runs: list[tuple[str, str, str]]
    removed: list[Path]


def run_process(instance: dg.DagsterInstance, run_id: str) -> int | None:
    """The pid of the process that started executing ``run_id`` (its RUN_START event), if it started."""
    events = instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_START)
    return next((int(e.dagster_event.pid) for e in events if e.dagster_event and e.dagster_event.pid is not None), None)


def recover(instance: dg.DagsterInstance, paths: ProjectPaths | None = None) -> Recovery:
    """Mark stale runs, then remove stale temp files under assets/ and figures/ (see the module docstring)."""
    marked, live = [], []
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=IN_PROGRESS)):
        run, started = record.dagster_run, record.start_time or record.create_timestamp.timestamp()
        pid = run_process(instance, run.run_id)
        if pid is None or still_running(pid, started):
            live.append(started)
            continue
        reason, canceling = f"its process (pid {pid}) is gone", run.status == dg.DagsterRunStatus.CANCELING
        message = f"Marked at start-up by pipelines: {reason} (the command running it was killed)."
        instance.report_run_canceled(run, message) if canceling else instance.report_run_failed(run, message)
        marked.append((run.run_id, "CANCELED" if canceling else "FAILURE", reason))
    paths = paths or default_paths()
    return Recovery(marked, remove_stale_temp_files((paths.assets, paths.figures), min(live) if live else None))


def report(recovery: Recovery) -> None:
    for run_id, status, reason in recovery.runs:
        click.echo(f"[recover] run {run_id[:8]} marked {status}: {printable(reason)}", err=True)
    if recovery.removed:
        click.echo(f"[recover] removed {len(recovery.removed)} stale temp file(s), e.g. {recovery.removed[0]}", err=True)
