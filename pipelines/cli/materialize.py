"""``python -m pipelines materialize``: every selected asset and partition, as Dagster runs in ``$DAGSTER_HOME``.

The selection is planned into runs as an asset backfill would (``pipelines.run_plan``: the
unpartitioned assets partitions need, the other unpartitioned ones, one run per partition key,
then what lies downstream), and the runs are launched like UI runs (``pipelines.run_launch``),
at most ``--concurrency`` at a time, each as soon as the runs it needs have succeeded. Inside a
run, Dagster's executor runs the steps: the multiprocess executor (forkserver, the code location
preloaded) where steps can run side by side, in-process otherwise (one partition's chain of
steps); ``--executor dask`` runs every step on a Dask cluster with dagster-dask's
``dask_executor`` (``--scheduler ADDR``, else ``$DASK_SCHEDULER_ADDRESS``, else a LocalCluster
started here). The UI shows these runs with their targets, like its own.

Processes: the command (the *driver*) starts the orchestrator in a new session, so that every
process it starts (the code server, the run workers, their step processes, Dask workers) is in
one process group, and the driver stays in the terminal's group. Ctrl-C (SIGINT) or SIGTERM to
the driver: the orchestrator cancels the runs in flight (they end CANCELED), launches nothing
more, and the group is ended. ``kill -9`` of the driver: the orchestrator gets SIGTERM from the
kernel (parent-death signal) and does the same. ``kill -9`` of the orchestrator: the driver ends
its group and marks its runs failed. ``--exit-with-parent`` (the Makefile passes it) makes the
driver stop when its parent (make) dies. At start, runs whose process is gone are marked failed
and stale temp files removed (``pipelines.run_recovery``).

Exit status: 0 when every run succeeded and no ERROR-severity check failed; 1 otherwise (the
failed steps and checks are named); 130 when interrupted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import click

from pipelines.home.init import use_dagster_home
from pipelines.orchestration.processes import die_with_parent, end_group, end_own_group, process_started_at

#: Set in the orchestrator's environment to the driver's pid.
PARENT_ENV = "PIPELINES_MATERIALIZE_PARENT"
#: ``dask``: the code location's executor is dagster-dask's (see ``pipelines.definitions``, which reads it).
CANCEL_GRACE_S = 20.0
#: A SIGTERM this long after the first is a second request to stop.
REPEAT_S = 1.0
POLL_S = 1.0
#: Dagster's console logger at INFO: asset logs and step outcomes, without the per-event DEBUG lines.
LOGGERS = {"console": {"config": {"log_level": "INFO"}}}


def _echo(message: str) -> None:
    click.echo(f"[materialize] {message}", err=True)


@click.command("materialize")
@click.option("--select", default="*", show_default=True,
              help="Dagster asset selection: '*', 'group:ingest', 'itp_jobs', '+zeus_cluster_summary', 'key:a or key:b'; "
                   "widened to the assets a multi-asset writes together.")
@click.option("--executor", type=click.Choice(["multiprocess", "dask"]), default="multiprocess", show_default=True,
              help="Who runs the steps of each run: Dagster's multiprocess executor here, or dagster-dask's dask_executor.")
@click.option("--scheduler", default=None,
              help="With --executor dask: the scheduler address (default: $DASK_SCHEDULER_ADDRESS, else a LocalCluster here).")
@click.option("--concurrency", type=click.IntRange(min=1), default=None, help="Runs at once (default: one per core).")
@click.option("--exit-with-parent", is_flag=True, help="Stop (canceling the runs) when the parent process exits.")
def cli(select: str, executor: str, scheduler: str | None, concurrency: int | None, exit_with_parent: bool) -> None:
    """Materialize every selected asset and partition (what `make figures` runs)."""
    if scheduler and executor != "dask":
        raise click.UsageError("--scheduler goes with --executor dask")
    if not os.environ.get("DAGSTER_HOME"):
        folder, why = use_dagster_home()
        _echo(f"Dagster instance: {folder} ({why})")
    if os.environ.get(PARENT_ENV) == str(os.getppid()):
        sys.exit(_orchestrate(select, executor, scheduler, concurrency or os.cpu_count() or 1))
    args = ["--select", select, "--executor", executor]
    args += ["--scheduler", scheduler] if scheduler else []
    args += ["--concurrency", str(concurrency)] if concurrency else []
    sys.exit(_drive(args, exit_with_parent))


# ---------------------------------------------------------------------------------------------
# the driver: in the terminal's process group; the orchestrator and all it starts in their own


def _drive(args: list[str], exit_with_parent: bool) -> int:
    if exit_with_parent:
        die_with_parent(signal.SIGTERM, expected_parent=os.getppid())
    env = {**os.environ, PARENT_ENV: str(os.getpid())}
    child = subprocess.Popen([sys.executable, "-m", "pipelines", "materialize", *args], env=env, start_new_session=True)

    def forward(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    try:
        code = child.wait()
    finally:
        end_group(child.pid, grace_s=2.0)  # whatever of its group is left (nothing, after a clean exit)
    if code < 0:
        _echo(f"the orchestrator was killed by signal {-code}: its processes are ended; marking its runs")
        os.environ.pop(PARENT_ENV, None)
        import dagster as dg

        from pipelines.orchestration.recovery import recover, report

        with dg.DagsterInstance.get() as instance:
            report(recover(instance))
        return 128 - code
    return code


# ---------------------------------------------------------------------------------------------
# the orchestrator


class _Stop:
    """Set by SIGINT/SIGTERM; the loop cancels the runs in flight and launches nothing more.

    Asked again (a second Ctrl-C, or a SIGTERM ``REPEAT_S`` or more after the first), it stops
    waiting for the runs: every process is ended at once. The kernel's parent-death signal comes
    once per thread of this process, all at the same moment: that is one request, not several.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.requested = False
        self.first_at = 0.0
        self._clock = clock

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        now = self._clock()
        if self.requested and (signum == signal.SIGINT or now - self.first_at >= REPEAT_S):
            raise KeyboardInterrupt
        if not self.requested:
            self.requested, self.first_at = True, now


@dataclass
class _Outcome:
    status: dict[int, str] = field(default_factory=dict)  # run index -> SUCCESS, FAILURE, CANCELED, SKIPPED, ...
    problems: list[str] = field(default_factory=list)  # failed steps and ERROR checks (exit 1)
    warnings: list[str] = field(default_factory=list)  # failed WARN checks
    interrupted: bool = False


def _orchestrate(select: str, executor: str, scheduler: str | None, concurrency: int) -> int:
    driver = int(os.environ[PARENT_ENV])
    stop = _Stop()
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    die_with_parent(signal.SIGTERM, expected_parent=driver)
    os.environ.pop(PARENT_ENV)  # not for the processes started from here
    started = time.perf_counter()
    try:
        outcome = _materialize(select, executor, scheduler, concurrency, stop)
    except KeyboardInterrupt:
        _echo("interrupted twice: ending every process now")
        end_own_group(grace_s=2.0)  # the driver may be gone: nobody else would end them
        return 130
    ok = sum(1 for s in outcome.status.values() if s == "SUCCESS")
    for line in outcome.warnings:
        _echo(f"warning: {line}")
    for line in outcome.problems:
        _echo(f"FAILED: {line}")
    verdict = "interrupted" if outcome.interrupted else ("FAILED" if outcome.problems else "done")
    _echo(f"{verdict} in {time.perf_counter() - started:.1f} s: {ok} of {len(outcome.status)} runs succeeded")
    if outcome.interrupted:
        return 130
    return 1 if outcome.problems else 0


def _definitions() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pipelines.definitions import defs

        return defs()


def _materialize(select: str, executor: str, scheduler: str | None, concurrency: int, stop: _Stop) -> _Outcome:
    import dagster as dg

    from pipelines.defs.clusters.partitions import register_trace_partitions
    from pipelines.orchestration.launch import launcher
    from pipelines.orchestration.plan import SelectionError, plan_runs, resolve_selection
    from pipelines.orchestration.recovery import recover, report

    graph = _definitions().resolve_asset_graph()
    try:
        keys, added = resolve_selection(graph, select)
    except SelectionError as exc:
        return _Outcome(problems=[str(exc)])
    if added:
        _echo(f"selection widened to the assets written together with it: {', '.join(sorted(k.to_user_string() for k in added))}")
    with dg.DagsterInstance.get() as instance:
        report(recover(instance))
        traces = register_trace_partitions(instance)  # a trace is a partition once its files are present
        specs = plan_runs(graph, keys, instance)
    _echo(f"traces: {', '.join(traces) or 'none present'}")
    _echo(f"{len(keys)} assets in {len(specs)} runs, at most {concurrency} at a time, steps on the {executor} executor")
    with ExitStack() as stack:
        if executor == "dask":
            from pipelines.defs.resources import EXECUTOR_ENV
            from pipelines.distributed import SCHEDULER_ENV

            address = scheduler or os.environ.get(SCHEDULER_ENV)
            if not address:
                from pipelines.distributed import local_cluster

                address = stack.enter_context(local_cluster()).scheduler_address
            _echo(f"Dask scheduler {address}")
            os.environ[EXECUTOR_ENV], os.environ[SCHEDULER_ENV] = "dask", address  # for the code server and its runs
        runs = stack.enter_context(launcher())
        return _run_all(runs, specs, graph, executor, concurrency, stop)


#: Imported once by the forkserver that forks each step's process. Only modules whose import runs
#: no polars computation: polars' thread pool, once started in the server, deadlocks a forked child
#: at its first parallel operation (the defs modules build tables at import, so they load per step).
PRELOAD_MODULES: tuple[str, ...] = (
    "dagster._core.executor.multiprocess", "polars", "numpy", "dataframely", "pipelines.definitions", "pipelines.dagster_support",
)


def _run_config(parallel: bool, executor: str) -> dict[str, object]:
    config: dict[str, object] = {"loggers": LOGGERS}
    if executor == "multiprocess":
        if parallel:
            multiprocess = {"max_concurrent": os.cpu_count() or 1, "start_method": {"forkserver": {"preload_modules": list(PRELOAD_MODULES)}}}
            config["execution"] = {"config": {"multiprocess": multiprocess}}
        else:
            config["execution"] = {"config": {"in_process": {}}}
    return config


def _run_all(runs: Any, specs: list[Any], graph: Any, executor: str, concurrency: int, stop: _Stop) -> _Outcome:
    """Launch each run once the runs it needs succeeded, at most ``concurrency`` in flight; report each as it ends.

    Launching blocks until the run worker has started (a second or two), so launches go through
    a thread pool and the loop keeps watching the runs in flight meanwhile.
    """
    from concurrent.futures import Future, ThreadPoolExecutor

    from pipelines.orchestration.launch import LaunchError
    from pipelines.orchestration.recovery import LAUNCHER_PID_TAG, LAUNCHER_STARTED_TAG

    instance = runs.instance
    common = {
        LAUNCHER_PID_TAG: str(os.getpid()),
        LAUNCHER_STARTED_TAG: repr(process_started_at(os.getpid()) or time.time()),
        "pipelines/materialize": uuid.uuid4().hex[:8],
    }
    outcome = _Outcome()
    pending = list(range(len(specs)))
    launching: dict[int, tuple[Future[str], float]] = {}
    active: dict[int, tuple[str, float]] = {}
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="launch") as pool:
        while (pending or launching or active) and not stop.requested:
            for i in list(pending):
                if len(active) + len(launching) >= concurrency:
                    break
                needs = [outcome.status.get(j) for j in specs[i].after]
                if any(s is not None and s != "SUCCESS" for s in needs):
                    pending.remove(i)
                    outcome.status[i] = "SKIPPED"
                    _echo(f"skipped (a run it needs did not succeed): {specs[i].label}")
                    continue
                if any(s is None for s in needs):
                    continue
                pending.remove(i)
                config = _run_config(specs[i].parallel, executor)
                launching[i] = (pool.submit(runs.launch, specs[i].assets, config, {**common, **specs[i].tags}), time.perf_counter())
            for i, (future, t0) in list(launching.items()):
                if not future.done():
                    continue
                del launching[i]
                try:
                    active[i] = (future.result(), t0)
                except LaunchError as exc:
                    outcome.status[i] = "FAILURE"
                    outcome.problems.append(str(exc))
            for i, (run_id, t0) in list(active.items()):
                run = instance.get_run_by_id(run_id)
                if run is None or not run.is_finished:
                    continue
                del active[i]
                outcome.status[i] = run.status.value
                done = len(outcome.status)
                _echo(f"({done}/{len(specs)}) {run.status.value} in {time.perf_counter() - t0:.1f} s: run {run_id[:8]} {specs[i].label}")
                _collect_problems(instance, run_id, specs[i].label, run.status.value, graph, outcome)
            time.sleep(POLL_S)
        if stop.requested:
            outcome.interrupted = True
            for i, (future, t0) in launching.items():  # a launch in progress: wait for its run id, then cancel it too
                try:
                    active[i] = (future.result(timeout=60), t0)
                except Exception:
                    outcome.status[i] = "NOT_LAUNCHED"
            _cancel(runs, active, specs, outcome)
    return outcome


def _cancel(runs: Any, active: dict[int, tuple[str, float]], specs: list[Any], outcome: _Outcome) -> None:
    """Cancel the runs in flight, wait for them to end CANCELED; mark CANCELED those that do not end in time.

    A run whose worker has not started it yet is marked CANCELED at once (its worker then leaves
    it alone); a started one is terminated through the run launcher (its worker stops it).
    """
    import dagster as dg

    _echo(f"stopping: canceling {len(active)} run(s) in flight, launching nothing more")
    instance = runs.instance
    for run_id, _ in active.values():
        run = instance.get_run_by_id(run_id)
        if run is None or run.is_finished:
            continue
        try:
            if run.status in (dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING):
                instance.report_run_canceled(run, "Canceled by pipelines materialize before it started.")
            else:
                runs.cancel(run_id)
        except Exception as exc:  # the worker may be gone already; the run is marked below
            _echo(f"cancel {run_id[:8]}: {exc}")
    deadline = time.monotonic() + CANCEL_GRACE_S
    while active and time.monotonic() < deadline:
        for i, (run_id, _) in list(active.items()):
            run = instance.get_run_by_id(run_id)
            if run is None or run.is_finished:
                del active[i]
                outcome.status[i] = run.status.value if run else "CANCELED"
        time.sleep(POLL_S / 4)
    for i, (run_id, _) in active.items():
        run = instance.get_run_by_id(run_id)
        if run is not None and not run.is_finished:
            instance.report_run_canceled(run, "Canceled by pipelines materialize (its worker did not stop in time and was killed).")
        outcome.status[i] = "CANCELED"
    for i in range(len(specs)):
        outcome.status.setdefault(i, "NOT_LAUNCHED")


def _collect_problems(instance: Any, run_id: str, label: str, status: str, graph: Any, outcome: _Outcome) -> None:
    """Failed steps (first line of the error the step raised) and failed checks of a finished run, into ``outcome``."""
    import dagster as dg

    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        event = entry.dagster_event
        error = getattr(event.event_specific_data, "error", None)
        while error is not None and error.cls_name.startswith("Dagster") and error.cause is not None:
            error = error.cause  # past Dagster's wrapper ("Error occurred while executing op ...") to the step's own error
        message = (error.message if error else entry.message).strip().splitlines()[0]
        outcome.problems.append(f"run {run_id[:8]} ({label}): step {event.step_key}: {message}")
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = entry.dagster_event.event_specific_data
        if evaluation.passed:
            continue
        name = f"check {evaluation.check_name} on {evaluation.asset_key.to_user_string()}"
        blocking = evaluation.blocking
        if blocking is None:
            spec = graph.get_check_spec(dg.AssetCheckKey(evaluation.asset_key, evaluation.check_name))
            blocking = bool(spec and spec.blocking)
        if evaluation.severity == dg.AssetCheckSeverity.ERROR:
            kind = "blocking ERROR" if blocking else "ERROR"
            outcome.problems.append(f"run {run_id[:8]} ({label}): {kind} {name} failed")
        else:
            outcome.warnings.append(f"run {run_id[:8]} ({label}): {evaluation.severity.value} {name} failed")
    if status != "SUCCESS" and not any(run_id[:8] in p for p in outcome.problems):
        outcome.problems.append(f"run {run_id[:8]} ({label}) ended {status}")
