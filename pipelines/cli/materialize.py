"""``python -m pipelines materialize``: every selected asset and partition, as Dagster runs in ``$DAGSTER_HOME``.

Runs of the code location's asset jobs, launched by the *orchestrator* through Dagster's GraphQL
client (``pipelines.orchestration.runs``), each once the runs it reads from have succeeded and at
most ``--parallel-runs`` at once; no daemon needed, and the UI shows them as its own. The command
(the *driver*) starts the orchestrator in a new session, so every process of a run is in its group,
not the terminal's. Ctrl-C or SIGTERM to the driver reaches the orchestrator as ``STOP_SIGNAL``: it
terminates the runs, which end CANCELED; asked again, the driver ends the group at once. ``kill -9``
of the driver: the kernel sends the orchestrator ``STOP_SIGNAL``. ``kill -9`` of the orchestrator:
the driver ends its group and marks its run failed (``pipelines.orchestration.recovery``, run at
every start too). After a run that did not succeed no further run starts; the ones running end as
they would.

Two commands on one Dagster instance do not run side by side: the second says which process holds
the instance (``pipelines.orchestration.lock``, in one line) and waits for it to finish.

Exit status: 0 when every run succeeded and no ERROR check failed; 1 otherwise (each failed step and
check named in one line); 130 when interrupted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import click
import dagster as dg

from pipelines.clusters import tracefiles
from pipelines.definitions import loaded
from pipelines.defs.clusters.partitions import register_trace_partitions
from pipelines.distributed import SCHEDULER_ENV, local_cluster
from pipelines.home.init import use_dagster_home
from pipelines.home.paths import find_home
from pipelines.orchestration import lock, renamed, runs
from pipelines.orchestration.processes import die_with_parent, end_group
from pipelines.orchestration.recovery import recover, report
from pipelines.terminal import printable

#: Set in the orchestrator's environment to the driver's pid.
PARENT_ENV = "PIPELINES_MATERIALIZE_PARENT"
#: Seconds the orchestrator gives a terminated run to end before it leaves (its processes end with it).
CANCEL_GRACE_S = 30.0
#: Runs at once by default: a partitioned run replays in one process (one core) while a run of figures uses the others.
PARALLEL_RUNS = 2


def _echo(message: str) -> None:
    click.echo(f"[materialize] {printable(message)}", err=True)


@click.command("materialize")
@click.option("--select", default="*", show_default=True, help="Dagster asset selection: '*', 'group:ingest', 'itp_jobs', "
              "'+zeus_cluster_summary', 'key:a or key:b'; widened to the assets a multi-asset writes together.")
@click.option("--executor", type=click.Choice(["multiprocess", "dask"]), default="multiprocess", show_default=True,
              help="Who runs the steps of each run: Dagster's multiprocess executor here, or dagster-dask's dask_executor.")
@click.option("--scheduler", help="With --executor dask: the scheduler address (default: $DASK_SCHEDULER_ADDRESS, else a LocalCluster).")
@click.option("--concurrency", type=click.IntRange(min=1), help="Steps at once in a run (default: one per core).")
@click.option("--parallel-runs", type=click.IntRange(min=1), default=PARALLEL_RUNS, show_default=True,
              help="Runs at once (each starts once the runs it reads from have succeeded).")
@click.option("--exit-with-parent", is_flag=True, help="Stop (canceling the run) when the parent process exits.")
def cli(select: str, executor: str, scheduler: str | None, concurrency: int | None, parallel_runs: int, exit_with_parent: bool) -> None:
    """Materialize every selected asset and partition (what `make figures` runs).

    One at a time per Dagster home: a second command says which process holds it and waits. Each of your own traces
    (raw/clusters/) is ingested in a run of its own: one that fails is named, and the others go on.
    """
    if scheduler and executor != "dask":
        raise click.UsageError("--scheduler goes with --executor dask")
    if not os.environ.get("DAGSTER_HOME"):
        _echo("Dagster instance: {} ({})".format(*use_dagster_home()))
    if os.environ.get(PARENT_ENV) == str(os.getppid()):
        sys.exit(_orchestrate(select, executor, scheduler, concurrency or os.cpu_count() or 1, parallel_runs))
    args = ["--select", select, "--executor", executor, *(["--scheduler", scheduler] if scheduler else []),
            *(["--concurrency", str(concurrency)] if concurrency else []), "--parallel-runs", str(parallel_runs)]
    if exit_with_parent:
        die_with_parent(signal.SIGTERM, expected_parent=os.getppid())
    folder = Path(os.environ["DAGSTER_HOME"])
    try:
        with lock.held(folder, lambda who: _echo(f"waiting: another materialize holds {folder / lock.LOCK_FILE} ({who})")):
            code = _drive(args)
    except KeyboardInterrupt:  # Ctrl-C while waiting for the lock: nothing was started
        _echo("interrupted while waiting for the lock; nothing was run")
        code = 130
    sys.exit(code)


def _drive(args: list[str]) -> int:
    child = subprocess.Popen([sys.executable, "-m", "pipelines", "materialize", *args],
                             env={**os.environ, PARENT_ENV: str(os.getpid())}, start_new_session=True)
    asked: list[int] = []

    def forward(signum: int, frame: object) -> None:
        if asked:
            _echo("asked again: ending every process now")
            end_group(child.pid, grace_s=2.0)
        asked.append(signum)
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(runs.STOP_SIGNAL)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    code = child.wait()
    end_group(child.pid, grace_s=2.0)  # whatever of its group is left (nothing, after a clean exit)
    if code < 0:
        _echo(f"the orchestrator ended by signal {-code}: its processes are ended; marking its runs")
        with dg.DagsterInstance.get() as instance:
            report(recover(instance))
    return (130 if asked else 128 - code) if code < 0 else code


def _orchestrate(select: str, executor: str, scheduler: str | None, concurrency: int, parallel_runs: int) -> int:
    stop = threading.Event()
    signal.signal(runs.STOP_SIGNAL, lambda signum, frame: stop.set())
    die_with_parent(runs.STOP_SIGNAL, expected_parent=int(os.environ.pop(PARENT_ENV)))
    started, failed, warned, statuses = time.perf_counter(), list[str](), list[str](), list[dg.DagsterRunStatus]()
    try:
        with ExitStack() as stack:
            if executor == "dask":  # read by the code location's executor (pipelines.defs.resources) where the runs load it
                address = scheduler or os.environ.get(SCHEDULER_ENV) or stack.enter_context(local_cluster()).scheduler_address
                os.environ["PIPELINES_EXECUTOR"], os.environ[SCHEDULER_ENV] = "dask", address
                _echo(f"Dask scheduler {address}")
            connect = stack.enter_context(runs.webserver(find_home(), Path(os.environ["DAGSTER_HOME"])))  # loads while we plan
            keys, added = runs.resolve_selection(loaded(), select)
            if added:
                _echo(f"selection widened to the assets written together with it: {', '.join(sorted(k.to_user_string() for k in added))}")
            instance = stack.enter_context(dg.DagsterInstance.get())
            report(recover(instance))
            renamed.report(renamed.forget_renamed(instance))
            traces, gone = register_trace_partitions(instance)
            _echo(f"traces: {', '.join(traces) or 'none present'}"
                  + (f"; partitions removed, their files are gone: {', '.join(gone)}" if gone else ""))
            yours = {t.name for t in tracefiles.user_traces(find_home() / "raw")[0]}
            plan = runs.plan_runs(loaded(), keys, instance, per_run=yours.__contains__)  # your traces' ingest: a run each
            _echo(f"{len(keys)} assets in {len(plan)} runs, {min(parallel_runs, len(plan))} at most at once, "
                  f"steps on the {executor} executor")
            client = connect()

            def ended(i: int, run_id: str, status: dg.DagsterRunStatus | None, seconds: float) -> None:
                nonlocal failed, warned
                statuses.append(instance.get_run_by_id(run_id).status)  # type: ignore[union-attr]  # a run launched
                _echo(f"({i + 1}/{len(plan)}) {statuses[-1].value} in {seconds:.1f} s: run {run_id[:8]} {plan[i].label()}")
                failed, warned = [a + b for a, b in zip((failed, warned), runs.problems(instance, run_id, plan[i].job), strict=True)]

            runs.execute_plan(client, plan, concurrency, parallel_runs, stop.is_set, CANCEL_GRACE_S, ended)
    except runs.SelectionError as exc:
        failed.append(str(exc))
    interrupted = stop.is_set()
    for line in [f"warning: {w}" for w in warned] + ([] if interrupted else [f"FAILED: {f}" for f in failed]):
        _echo(line)
    verdict = "interrupted" if interrupted else "FAILED" if failed else "done"
    _echo(f"{verdict} in {time.perf_counter() - started:.1f} s: {statuses.count(dg.DagsterRunStatus.SUCCESS)} runs succeeded")
    return 130 if interrupted else 1 if failed else 0
