"""Start-up clean-up (no daemon's run monitoring): a run whose RUN_START process is gone, while no ``materialize`` holds the
lock, is marked FAILURE (or CANCELED); temp files older than every live run go, under raw/ once untouched ``RAW_TEMP_AGE_S``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import click
import dagster as dg

from pipelines.home.atomic import remove_stale_temp_files
from pipelines.home.paths import ProjectPaths, default_paths
from pipelines.orchestration import lock
from pipelines.orchestration.processes import still_running
from pipelines.terminal import printable

#: A temp file under raw/ (``clusters add``'s copy, a download) is stale once untouched this long (s): a command writing
#: one keeps it fresh, and the longest pause, validating a multi-GB copy after writing it, is far shorter.
RAW_TEMP_AGE_S = 3600.0
IN_PROGRESS = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


@dataclass(frozen=True)
class Recovery:
    """What ``recover`` did: runs marked (run id, new status, why), temp files removed, and who held the lock (runs left alone)."""
    runs: list[tuple[str, str, str]]
    removed: list[Path]
    held_by: str | None = None


def run_process(instance: dg.DagsterInstance, run_id: str) -> int | None:
    """The pid of the process that started executing ``run_id`` (its RUN_START event), if it started."""
    events = instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_START)
    return next((int(e.dagster_event.pid) for e in events if e.dagster_event and e.dagster_event.pid is not None), None)


def recover(instance: dg.DagsterInstance, paths: ProjectPaths | None = None, lock_ours: bool = False) -> Recovery:
    """Mark stale runs, then remove stale temp files (assets/, figures/, raw/); ``lock_ours``: the caller holds the lock."""
    marked, live = [], []
    held_by = None if lock_ours else lock.holder(Path(instance.root_directory))
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=IN_PROGRESS)):
        run, started = record.dagster_run, record.start_time or record.create_timestamp.timestamp()
        pid = run_process(instance, run.run_id)
        if held_by is not None or pid is None or still_running(pid, started):
            live.append(started)
            continue
        reason, canceling = f"its process (pid {pid}) is gone", run.status == dg.DagsterRunStatus.CANCELING
        message = f"Marked at start-up by pipelines: {reason} (the command running it was killed)."
        instance.report_run_canceled(run, message) if canceling else instance.report_run_failed(run, message)
        marked.append((run.run_id, "CANCELED" if canceling else "FAILURE", reason))
    paths = paths or default_paths()
    oldest_live = min(live) if live else None
    removed = remove_stale_temp_files((paths.assets, paths.figures), oldest_live)
    # raw/ is written outside runs too (`clusters add`, `fetch`): its temp files are stale once untouched for a while as well.
    raw_before = time.time() - RAW_TEMP_AGE_S
    removed += remove_stale_temp_files((paths.raw,), raw_before if oldest_live is None else min(oldest_live, raw_before))
    return Recovery(marked, removed, held_by if live else None)


def report(recovery: Recovery) -> None:
    if recovery.held_by:
        click.echo(f"[recover] runs in progress left alone: a materialize runs them ({printable(recovery.held_by)})", err=True)
    for run_id, status, reason in recovery.runs:
        click.echo(f"[recover] run {run_id[:8]} marked {status}: {printable(reason)}", err=True)
    if recovery.removed:
        click.echo(f"[recover] removed {len(recovery.removed)} stale temp file(s), e.g. {recovery.removed[0]}", err=True)
