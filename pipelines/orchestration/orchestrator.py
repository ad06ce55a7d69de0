"""The orchestrator of ``materialize`` (the driver, ``pipelines.cli.materialize``, starts it): recovery, the plan, the runs,
each failed step and check in one line."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import dagster as dg

from pipelines.clusters import tracefiles
from pipelines.definitions import loaded
from pipelines.defs.clusters.partitions import register_trace_partitions
from pipelines.home.paths import find_home
from pipelines.orchestration import renamed, runs
from pipelines.orchestration.recovery import recover, report

if TYPE_CHECKING:
    from dagster_graphql import DagsterGraphQLClient  # the client is made by pipelines.orchestration.webserver

#: Seconds the orchestrator gives a terminated run to end before it leaves (its processes end with it).
CANCEL_GRACE_S = 30.0


def orchestrate(select: str, executor: str, concurrency: int, parallel_runs: int, connect: Callable[[], DagsterGraphQLClient],
                stopping: Callable[[], bool], echo: Callable[[str], None]) -> int:
    """Materialize ``select`` through the webserver ``connect`` waits for; the exit status.

    ``stopping()`` turns true when the driver asks to stop; ``echo`` prints one progress line.
    """
    started, failed, warned, statuses = time.perf_counter(), list[str](), list[str](), list[dg.DagsterRunStatus]()
    try:
        with dg.DagsterInstance.get() as instance:
            keys, added = runs.resolve_selection(loaded(), select)
            if added:
                echo(f"selection widened to the assets written together with it: {', '.join(sorted(k.to_user_string() for k in added))}")
            report(recover(instance, lock_ours=True))  # the driver holds the lock for us
            renamed.report(renamed.forget_renamed(instance))
            traces, gone = register_trace_partitions(instance)
            echo(f"traces: {', '.join(traces) or 'none present'}"
                 + (f"; partitions removed, their files are gone: {', '.join(gone)}" if gone else ""))
            yours = {t.name for t in tracefiles.user_traces(find_home() / "raw")[0]}
            plan = runs.plan_runs(loaded(), keys, instance, per_run=yours.__contains__)  # your traces' ingest: a run each
            echo(f"{len(keys)} assets in {len(plan)} runs, {min(parallel_runs, len(plan))} at most at once, "
                 f"steps on the {executor} executor")
            client = connect()

            def ended(i: int, run_id: str, status: dg.DagsterRunStatus | None, seconds: float) -> None:
                nonlocal failed, warned
                statuses.append(instance.get_run_by_id(run_id).status)  # type: ignore[union-attr]  # a run launched
                echo(f"({i + 1}/{len(plan)}) {statuses[-1].value} in {seconds:.1f} s: run {run_id[:8]} {plan[i].label()}")
                failed, warned = [a + b for a, b in zip((failed, warned), runs.problems(instance, run_id, plan[i].job), strict=True)]

            removed = runs.execute_plan(client, plan, concurrency, parallel_runs, stopping, CANCEL_GRACE_S, ended, instance)
            failed += removed  # added after the call: ``ended`` rebinds ``failed``
    except runs.SelectionError as exc:
        failed.append(str(exc))
    interrupted = stopping()
    for line in [f"warning: {w}" for w in warned] + ([] if interrupted else [f"FAILED: {f}" for f in failed]):
        echo(line)
    verdict = "interrupted" if interrupted else "FAILED" if failed else "done"
    echo(f"{verdict} in {time.perf_counter() - started:.1f} s: {statuses.count(dg.DagsterRunStatus.SUCCESS)} runs succeeded")
    return 130 if interrupted else 1 if failed else 0
