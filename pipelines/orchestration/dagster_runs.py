"""The runs of ``materialize``: the selection cut into runs of the asset jobs in an asset backfill's order, launched through
Dagster's GraphQL client as what each reads succeeds (docs/scaling.md, Materializing; docs/architecture.md, Orchestration)."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Set
from typing import TYPE_CHECKING, Any, NamedTuple

import click
import dagster as dg

from pipelines.defs.jobs import job_name
from pipelines.defs.shared.io_manager import PARTITIONS_STAND_ALONE
from pipelines.defs.shared.run_tags import launched_by
from pipelines.home.init import LOCATION

if TYPE_CHECKING:
    from dagster_graphql import DagsterGraphQLClient  # the client is made by pipelines.orchestration.webserver

RANGE_START, RANGE_END, PARTITION = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end", "dagster/partition"
#: Groups whose steps are light (fetch a file, read and validate a table): never worth a process of their own.
LIGHT_GROUPS = frozenset({"raw", "ingest", "quarantine"})
POLL_S = 0.5


class SelectionError(click.ClickException):
    """A selection that names nothing, or does not parse: one line (``materialize`` exits 1, nothing launched)."""


class Run(NamedTuple):
    """One run: its asset job, assets, partition tags; ``parallel``: steps that could run side by side; ``isolated``: one partition of
    stand-alone assets (its failure holds back nothing); ``after``: earlier runs (plan indices) holding an ancestor or another partition."""

    job: str
    keys: frozenset[dg.AssetKey]
    tags: dict[str, str]
    parallel: bool
    isolated: bool = False
    after: frozenset[int] = frozenset()

    def label(self) -> str:
        names = sorted(k.to_user_string() for k in self.keys)
        shown = ", ".join(names) if len(names) <= 3 else f"{len(names)} assets ({', '.join(names[:2])}, ...)"
        where = self.tags.get(PARTITION) or (f"{self.tags[RANGE_START]}...{self.tags[RANGE_END]}" if self.tags else "")
        return f"{self.job}: {shown}" + (f" [{where}]" if where else "")


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


def plan_runs(defs: dg.Definitions, keys: set[dg.AssetKey], instance: dg.DagsterInstance,
              per_run: Callable[[str], bool] = lambda partition: True) -> list[Run]:
    """The runs that materialize ``keys``, in launch order; a partitioned asset with no partition yet is left out. Assets
    whose partitions stand alone (``PARTITIONS_STAND_ALONE``) get a run per partition where ``per_run(partition)``, first."""
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
        one_each = {k for k in batch if graph.get(k).metadata.get(PARTITIONS_STAND_ALONE)}
        runs += [Run(job_name(partitions_def), frozenset(one_each), {PARTITION: p}, False, True) for p in partitions if one_each and per_run(p)]
        batch -= one_each
        tags = {RANGE_START: partitions[0], RANGE_END: partitions[-1]} if partitions else {}
        # Light steps (fetch, ingest, and their light descendants) first, in a run of their own: the runs that read them
        # start without waiting for the figures of the same batch.
        light = {k for k in batch if {k, *graph.get_ancestor_asset_keys(k) & batch} <= {a for a in batch if graph.get(a).group_name in LIGHT_GROUPS}}
        for part in (light, batch - light) if light and partitions_def is None else (batch,):
            # Unpartitioned assets downstream of different runs: a run each, started once those runs have succeeded.
            for group in _by_runs_read(part, runs, graph.get_ancestor_asset_keys) if partitions_def is None else (part,):
                heavy = {id(graph.get(k).assets_def) for k in group if graph.get(k).group_name not in LIGHT_GROUPS}
                runs.append(Run(job_name(partitions_def), frozenset(group), tags, partitions_def is None and len(heavy) > 1))
    runs = [run for run in runs if run.keys]
    ancestors = [set().union(*(graph.get_ancestor_asset_keys(k) for k in run.keys)) for run in runs]
    return [run._replace(after=frozenset(i for i in range(j) if runs[i].keys & (ancestors[j] | run.keys))) for j, run in enumerate(runs)]


def _by_runs_read(keys: set[dg.AssetKey], runs: list[Run], ancestors: Callable[[dg.AssetKey], Set[dg.AssetKey]]
                  ) -> list[set[dg.AssetKey]]:
    """``keys`` split by the set of ``runs`` that hold their ancestors, fewest first: an asset's set holds its ancestors'
    sets, so a group comes after the groups it reads from."""
    reads = {k: frozenset(i for i, run in enumerate(runs) if run.keys & ancestors(k)) for k in keys}
    return [{k for k in keys if reads[k] == r} for r in sorted(set(reads.values()), key=lambda r: (len(r), sorted(r)))]


def launch(client: DagsterGraphQLClient, run: Run, concurrency: int) -> str:
    """Submit ``run``; its run id. Its steps run in its process unless ``run.parallel`` and ``concurrency`` > 1 (a step process
    costs about 2 s of CPU to start: docs/benchmarks.md); under ``PIPELINES_EXECUTOR=dask``, the code location's executor."""
    config: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}  # asset logs, step outcomes
    if os.environ.get("PIPELINES_EXECUTOR") != "dask":
        config["execution"] = {"config": {"multiprocess": {"max_concurrent": concurrency}} if run.parallel and concurrency > 1 else {"in_process": {}}}
    return client.submit_job_execution(run.job, repository_location_name=LOCATION, repository_name="__repository__",
                                       run_config=config, tags={**run.tags, **launched_by("materialize")},
                                       asset_selection=sorted(run.keys))


ENDED = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


def execute_plan(client: DagsterGraphQLClient, plan: list[Run], concurrency: int, max_runs: int,
                 ended: Callable[[int, str, dg.DagsterRunStatus, float], None]) -> None:
    """Launch the runs of ``plan``, each once its ``after`` succeeded, at most ``max_runs`` at once, calling ``ended(index,
    run id, status, seconds)`` as each ends; none starts after a run that did not succeed (an isolated one may fail)."""
    succeeded, pending, halted = set[int](), list(range(len(plan))), False
    running: dict[str, tuple[int, float]] = {}  # run id -> (index in the plan, start time)
    while True:
        for i in [i for i in pending if plan[i].after <= succeeded][:0 if halted else max(0, max_runs - len(running))]:
            pending.remove(i)
            running[launch(client, plan[i], concurrency)] = (i, time.monotonic())
        for run_id, (i, started) in list(running.items()):
            status = client.get_run_status(run_id)
            if status in ENDED:
                del running[run_id]
                ok = status == dg.DagsterRunStatus.SUCCESS or (plan[i].isolated and status == dg.DagsterRunStatus.FAILURE)
                succeeded, halted = succeeded | ({i} if ok else set()), halted or not ok
                ended(i, run_id, status, time.monotonic() - started)
        if not running and (halted or not any(plan[i].after <= succeeded for i in pending)):
            return
        time.sleep(POLL_S)


def problems(instance: dg.DagsterInstance, run_id: str, job: str) -> tuple[list[str], list[str]]:
    """(failed steps and ERROR checks, failed WARN checks with what their descriptions say) of a finished run, one line each."""
    where, failed, warned = f"run {run_id[:8]} ({job})", [], []
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        error = entry.dagster_event.step_failure_data.error  # type: ignore[union-attr]  # every entry of this type holds its event
        if error is not None and error.cls_name == "DagsterAssetCheckFailedError":
            continue  # a blocking check's failure: named below, by the check
        while error is not None and (error.cls_name or "").startswith("Dagster") and error.cause is not None:
            error = error.cause  # past Dagster's wrapper ("Error occurred while executing op ...") to the step's own error
        failed.append(f"{where}: step {entry.step_key}: {(error.message if error else entry.message).strip().splitlines()[0]}")
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
        check = entry.asset_check_evaluation
        if check is None or check.passed:
            continue
        name = f"check {check.check_name} on {check.asset_key.to_user_string()}"
        if check.severity == dg.AssetCheckSeverity.ERROR:
            failed.append(f"{where}: {'blocking ' if check.blocking else ''}ERROR {name} failed")
        else:
            warned.append(f"{where}: {check.severity.value} {name} failed" + (f": {check.description}" if check.description else ""))
    status = instance.get_run_by_id(run_id).status  # type: ignore[union-attr]  # a run that has ended exists
    return failed or ([] if status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.CANCELED) else [f"{where} ended {status.value}"]), warned
