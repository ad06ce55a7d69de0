"""The orchestrator of ``materialize``: recovery, the plan, the runs, each failed step and check in one line; ``cancel``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import dagster as dg

from pipelines.clusters import tracefiles
from pipelines.definitions import loaded
from pipelines.defs.clusters.partitions import register_trace_partitions
from pipelines.defs.shared.run_tags import launched_by
from pipelines.defs.shared.table_assets import COMPILED_REPLAY
from pipelines.home.paths import find_home
from pipelines.orchestration import dagster_runs
from pipelines.orchestration.recovery import IN_PROGRESS, recover, report
from pipelines.zeus.fast import compile_in_background

if TYPE_CHECKING:
    from dagster_graphql import DagsterGraphQLClient  # the client is made by pipelines.orchestration.webserver


def orchestrate(select: str, executor: str, concurrency: int, parallel_runs: int, connect: Callable[[], DagsterGraphQLClient],
                echo: Callable[[str], None]) -> int:
    """Materialize ``select`` through the webserver ``connect`` waits for (the driver holds the home's lock); the exit status."""
    started, failed, warned, statuses = time.perf_counter(), list[str](), list[str](), list[dg.DagsterRunStatus]()
    with dg.DagsterInstance.get() as instance:
        keys, added = dagster_runs.resolve_selection(loaded(), select)
        graph = loaded().resolve_asset_graph()
        if any(COMPILED_REPLAY.items() <= graph.get(k).tags.items() for k in keys):
            compile_in_background()  # while the webserver loads, on the core it leaves idle
        if added:
            echo(f"selection widened to the assets written together with it: {', '.join(sorted(k.to_user_string() for k in added))}")
        report(recover(instance, lock_ours=True))
        traces, gone = register_trace_partitions(instance)
        echo(f"traces: {', '.join(traces) or 'none present'}"
             + (f"; partitions removed, their files are gone: {', '.join(gone)}" if gone else ""))
        yours = {t.name for t in tracefiles.user_traces(find_home() / "raw")[0]}
        plan = dagster_runs.plan_runs(loaded(), keys, instance, per_run=yours.__contains__)  # your traces' ingest: a run each
        echo(f"{len(keys)} assets in {len(plan)} runs, {min(parallel_runs, len(plan))} at most at once, "
             + ("steps on Dask" if executor == "dask" else f"steps in {concurrency} processes a run" if concurrency > 1
                else "each run's steps in its process"))

        def ended(i: int, run_id: str, status: dg.DagsterRunStatus, seconds: float) -> None:
            statuses.append(status)
            echo(f"({i + 1}/{len(plan)}) {status.value} in {seconds:.1f} s: run {run_id[:8]} {plan[i].label()}")
            for lines, found in zip((failed, warned), dagster_runs.problems(instance, run_id, plan[i].job), strict=True):
                lines.extend(found)

        dagster_runs.execute_plan(connect(), plan, concurrency, parallel_runs, ended)
    for line in [f"warning: {w}" for w in warned] + [f"FAILED: {f}" for f in failed]:
        echo(line)
    echo(f"{'FAILED' if failed else 'done'} in {time.perf_counter() - started:.1f} s: {statuses.count(dg.DagsterRunStatus.SUCCESS)} runs succeeded")
    return 1 if failed else 0


def cancel(echo: Callable[[str], None]) -> None:
    """After a stop ended the group: mark CANCELED materialize's runs not ended (the lock is ours), remove their temp files."""
    with dg.DagsterInstance.get() as instance:
        waiting = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.QUEUED, *IN_PROGRESS]
        for record in instance.get_run_records(filters=dg.RunsFilter(statuses=waiting, tags=launched_by("materialize"))):
            instance.report_run_canceled(record.dagster_run, "Canceled by materialize: stopped (Ctrl-C), its processes ended.")
            echo(f"run {record.dagster_run.run_id[:8]} ({record.dagster_run.job_name}) CANCELED: its processes were ended")
        report(recover(instance, lock_ours=True))
