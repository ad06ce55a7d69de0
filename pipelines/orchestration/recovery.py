"""Start-up clean-up after a killed materialization: runs whose process is gone, and temp files left behind.

A run is *stale* when the instance says it is in progress (STARTING, STARTED, CANCELING) but the
process executing it is gone: the pid of its RUN_START event (the run worker, or the process
that executed it in-process) is dead or now belongs to a process started after the run. A run
that never started is stale when the command that launched it (tag ``pipelines/launcher_pid``)
is gone. Stale runs are marked FAILURE (CANCELED if a cancel was asked for), so the queue of
``dagster dev`` (``max_concurrent_runs``) does not wait on them. Runs launched by ``dagster dev``
that have not started yet are left to Dagster's run monitoring (``run_monitoring`` in
``.dagster_home/dagster.yaml``). The instance is taken to be this machine's (sqlite under
``$DAGSTER_HOME``, as the Makefile sets it up): a pid is checked on this machine.

A ``.tmp_*`` file under assets/ or figures/ (``pipelines.home.storage`` writes there, then renames) is
stale when no run is in progress, or it is older than the oldest run still in progress.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click
import dagster as dg

from pipelines.home.paths import ProjectPaths, default_paths
from pipelines.orchestration.processes import still_running

LAUNCHER_PID_TAG = "pipelines/launcher_pid"
LAUNCHER_STARTED_TAG = "pipelines/launcher_started"
IN_PROGRESS = (dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING)


@dataclass(frozen=True)
class Recovery:
    """What ``recover`` did: runs marked (run id, new status, why) and temp files removed."""

    runs: list[tuple[str, str, str]]
    removed: list[Path]


def run_process(instance: dg.DagsterInstance, run_id: str) -> int | None:
    """The pid of the process that started executing ``run_id`` (its RUN_START event), if it started."""
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_START):
        if entry.dagster_event is not None and entry.dagster_event.pid is not None:
            return int(entry.dagster_event.pid)
    return None


def stale_reason(instance: dg.DagsterInstance, record: dg.RunRecord) -> str | None:
    """Why the in-progress run of ``record`` cannot be running any more, or None if it may be."""
    run = record.dagster_run
    pid = run_process(instance, run.run_id)
    if pid is not None:
        started = record.start_time or record.create_timestamp.timestamp()
        if not still_running(pid, started):
            return f"its process (pid {pid}) is gone"
        return None
    launcher = run.tags.get(LAUNCHER_PID_TAG)
    if launcher is not None:
        launched = float(run.tags.get(LAUNCHER_STARTED_TAG, record.create_timestamp.timestamp()))
        if not still_running(int(launcher), launched):
            return f"the command that launched it (pid {launcher}) is gone and it never started"
    return None


def recover_runs(instance: dg.DagsterInstance) -> list[tuple[str, str, str]]:
    """Mark every stale run (see the module docstring) FAILURE, or CANCELED if it was canceling."""
    marked = []
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=list(IN_PROGRESS))):
        reason = stale_reason(instance, record)
        if reason is None:
            continue
        run = record.dagster_run
        message = f"Marked at start-up by pipelines: {reason} (the command running it was killed)."
        if run.status == dg.DagsterRunStatus.CANCELING:
            instance.report_run_canceled(run, message)
            marked.append((run.run_id, "CANCELED", reason))
        else:
            instance.report_run_failed(run, message)
            marked.append((run.run_id, "FAILURE", reason))
    return marked


def oldest_live_run_start(instance: dg.DagsterInstance) -> float | None:
    """Start (epoch s) of the oldest run still in progress, None when there is none."""
    starts = [
        r.start_time or r.create_timestamp.timestamp()
        for r in instance.get_run_records(filters=dg.RunsFilter(statuses=list(IN_PROGRESS)))
    ]
    return min(starts) if starts else None


def remove_stale_temp_files(paths: ProjectPaths, live_since: float | None) -> list[Path]:
    """Remove ``.tmp_*`` files under assets/ and figures/ written before ``live_since`` (all of them if None)."""
    removed = []
    for folder in (paths.assets, paths.figures):
        if not folder.is_dir():
            continue
        for path in folder.rglob(".tmp_*"):
            try:
                if path.is_file() and (live_since is None or path.stat().st_mtime < live_since):
                    path.unlink()
                    removed.append(path)
            except FileNotFoundError:  # renamed by its writer meanwhile
                continue
    return removed


def recover(instance: dg.DagsterInstance, paths: ProjectPaths | None = None) -> Recovery:
    """Mark stale runs, then remove stale temp files (see the module docstring)."""
    runs = recover_runs(instance)
    removed = remove_stale_temp_files(paths or default_paths(), oldest_live_run_start(instance))
    return Recovery(runs, removed)


def report(recovery: Recovery) -> None:
    for run_id, status, reason in recovery.runs:
        click.echo(f"[recover] run {run_id[:8]} marked {status}: {reason}", err=True)
    if recovery.removed:
        click.echo(f"[recover] removed {len(recovery.removed)} stale temp file(s), e.g. {recovery.removed[0]}", err=True)
