"""Materialize an asset selection as runs of the code location's asset jobs, one run at a time, in this process.

The selection (Dagster's syntax, widened to the multi-assets it touches) is cut into runs in the
order an asset backfill takes: each run holds the assets of one partitions definition whose
selected ancestors are done (partitioned ones first, so the unpartitioned ones downstream of them
all wait to share one run), over every partition at once (the partitioned assets declare
``BackfillPolicy.single_run()``). A run is ``dagster.execute_job`` of a reconstructable asset job
(``pipelines.definitions.job``) with Dagster's partition-range tags.
"""

from __future__ import annotations

import os
import signal
import threading
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import dagster as dg

from pipelines.defs.jobs import job_name
from pipelines.orchestration.recovery import run_process

RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
#: Groups whose steps are light (fetch a file, read and validate a table): never worth a process of their own.
LIGHT_GROUPS = frozenset({"raw", "ingest", "quarantine"})
#: What asks the orchestrator to stop (``request_stop``): the driver's forwarded Ctrl-C, or the kernel when the driver dies.
STOP_SIGNAL = signal.SIGUSR1


class SelectionError(ValueError):
    """A selection that names nothing, or does not parse."""


class Run(NamedTuple):
    """One run: its asset job, the assets it materializes, its partition-range tags; ``parallel``: steps in processes."""

    job: str
    keys: frozenset[dg.AssetKey]
    tags: dict[str, str]
    parallel: bool

    def label(self) -> str:
        names = sorted(k.to_user_string() for k in self.keys)
        shown = ", ".join(names) if len(names) <= 3 else f"{len(names)} assets ({', '.join(names[:2])}, ...)"
        return f"{self.job}: {shown}" + (f" [{self.tags[RANGE_START]}...{self.tags[RANGE_END]}]" if self.tags else "")


def resolve_selection(defs: dg.Definitions, select: str) -> tuple[set[dg.AssetKey], set[dg.AssetKey]]:
    """(asset keys selected, keys added to complete a multi-asset); ``SelectionError`` if nothing matches."""
    graph = defs.resolve_asset_graph()
    try:
        with warnings.catch_warnings():  # the selection parser's own use of beta parameters
            warnings.simplefilter("ignore", dg.BetaWarning)
            base = dg.AssetSelection.all() if select.strip() in ("", "*") else dg.AssetSelection.from_string(select)
            chosen = {k for k in base.resolve(graph) if k in graph.materializable_asset_keys}
    except Exception as exc:  # the selection parser raises several exception types
        raise SelectionError(f"--select {select!r}: {exc}") from exc
    if not chosen:
        raise SelectionError(f"--select {select!r} matches no asset")
    widened = set(dg.AssetSelection.assets(*chosen).required_multi_asset_neighbors().resolve(graph))
    return widened, widened - chosen


def plan_runs(defs: dg.Definitions, keys: set[dg.AssetKey], instance: dg.DagsterInstance) -> list[Run]:
    """The runs that materialize ``keys``, in launch order. A partitioned asset with no partition yet is left out."""
    graph = defs.resolve_asset_graph()
    order, runs = [k for k in graph.toposorted_asset_keys if k in keys], []
    remaining = set(order)
    while remaining:
        ready = [graph.get(k).partitions_def for k in order if k in remaining and not graph.get_ancestor_asset_keys(k) & remaining]
        partitions_def = next((d for d in ready if d is not None), None)
        batch = {k for k in remaining if graph.get(k).partitions_def == partitions_def
                 and all(graph.get(a).partitions_def == partitions_def for a in graph.get_ancestor_asset_keys(k) & remaining)}
        remaining -= batch
        partitions = partitions_def.get_partition_keys(dynamic_partitions_store=instance) if partitions_def else []
        if partitions_def and not partitions:
            continue
        tags = {RANGE_START: partitions[0], RANGE_END: partitions[-1]} if partitions else {}
        # A partitioned run's steps loop over its partitions after reading their input once: in-process is best.
        heavy = {id(graph.get(k).assets_def) for k in batch if graph.get(k).group_name not in LIGHT_GROUPS}
        runs.append(Run(job_name(partitions_def), frozenset(batch), tags, partitions_def is None and len(heavy) > 1))
    return runs


def execute(run: Run, instance: dg.DagsterInstance, concurrency: int) -> dg.JobExecutionResult:
    """Materialize ``run``: its steps in processes of their own, ``concurrency`` at once, where ``run.parallel``.

    Under ``PIPELINES_EXECUTOR=dask`` the code location's executor is dagster-dask's, configured by itself.
    """
    config: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}  # asset logs, step outcomes
    if os.environ.get("PIPELINES_EXECUTOR") != "dask":
        executor = {"multiprocess": {"max_concurrent": concurrency}} if run.parallel else {"in_process": {}}
        config["execution"] = {"config": executor}
    job = dg.build_reconstructable_job("pipelines.definitions", "job", reconstructable_args=(run.job,))
    return dg.execute_job(job, instance, run_config=config, tags=run.tags, asset_selection=sorted(run.keys), raise_on_error=False)


def problems(result: dg.JobExecutionResult | dg.ExecuteInProcessResult, job: str) -> tuple[list[str], list[str]]:
    """(failed steps and ERROR checks, failed WARN checks) of a finished run, one line each."""
    where, failed, warned = f"run {result.run_id[:8]} ({job})", [], []
    for event in result.get_step_failure_events():
        error = event.step_failure_data.error
        if error is not None and error.cls_name == "DagsterAssetCheckFailedError":
            continue  # a blocking check's failure: named below, by the check
        while error is not None and (error.cls_name or "").startswith("Dagster") and error.cause is not None:
            error = error.cause  # past Dagster's wrapper ("Error occurred while executing op ...") to the step's own error
        failed.append(f"{where}: step {event.step_key}: {(error.message if error else event.message or '').strip().splitlines()[0]}")
    for check in result.get_asset_check_evaluations():
        name = f"check {check.check_name} on {check.asset_key.to_user_string()}"
        if not check.passed and check.severity == dg.AssetCheckSeverity.ERROR:
            failed.append(f"{where}: {'blocking ' if check.blocking else ''}ERROR {name} failed")
        elif not check.passed:
            warned.append(f"{where}: {check.severity.value} {name} failed")
    return failed + ([] if result.success or failed else [f"{where} did not succeed"]), warned


def request_stop(instance_factory: Callable[[], dg.DagsterInstance], grace_s: float) -> Callable[[int, Any], None]:
    """A ``STOP_SIGNAL`` handler: mark the run this process executes CANCELING, then interrupt it (Dagster's SIGINT).

    Not SIGTERM: while a run executes, Dagster maps SIGTERM to its own SIGINT handler. Once: the
    parent-death signal comes once per thread of this process, at the same moment. If the run has
    not ended ``grace_s`` later, every process of this process's group is killed.
    """

    def handler(signum: int, frame: Any) -> None:
        signal.signal(STOP_SIGNAL, signal.SIG_IGN)
        watchdog = threading.Timer(grace_s, os.killpg, args=(os.getpgid(0), signal.SIGKILL))
        watchdog.daemon = True  # gone with this process once the run has ended
        watchdog.start()
        with instance_factory() as instance:
            for record in instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])):
                if run_process(instance, record.dagster_run.run_id) == os.getpid():
                    instance.report_run_canceling(record.dagster_run, "Canceled by pipelines materialize (interrupted).")
        os.kill(os.getpid(), signal.SIGINT)

    return handler
