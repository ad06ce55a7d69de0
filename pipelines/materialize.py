"""``python -m pipelines materialize``: every asset, every partition, recorded in the Dagster instance.

``dagster asset materialize`` runs one partition per call, so this command plans the graph in
three phases: the unpartitioned assets upstream of any partitioned one, then each partition key
(two worker processes, one per core; each worker loads the code location once), then the
unpartitioned assets downstream (figures). Every run goes into ``$DAGSTER_HOME``'s instance, so
``dagster dev`` shows them.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    import dagster as dg

WORKERS = 2
#: Dagster's console logger at INFO: asset logs and step outcomes, without the per-event DEBUG lines.
RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


@dataclass(frozen=True)
class Plan:
    before: list[str]  # unpartitioned asset keys with no partitioned ancestor
    partitioned: dict[str, list[str]]  # partitions-definition name -> asset keys
    partition_keys: dict[str, list[str]]
    after: list[str]  # unpartitioned asset keys downstream of partitioned ones


def _definitions() -> dg.Definitions:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pipelines.definitions import defs

        return defs()


def plan(selection: str = "*") -> Plan:
    import dagster as dg

    definitions = _definitions()
    graph = definitions.resolve_asset_graph()
    keys = dg.AssetSelection.from_coercible(selection).resolve(graph) if selection != "*" else graph.materializable_asset_keys
    partitioned: dict[str, list[str]] = {}
    partition_keys: dict[str, list[str]] = {}
    before, after = [], []
    for key in graph.toposorted_asset_keys:
        if key not in keys:
            continue
        node = graph.get(key)
        if node.partitions_def is not None:
            name = repr(node.partitions_def)
            partitioned.setdefault(name, []).append(key.to_user_string())
            partition_keys[name] = list(node.partitions_def.get_partition_keys())
        elif any(graph.get(a).partitions_def is not None for a in graph.get_ancestor_asset_keys(key)):
            after.append(key.to_user_string())
        else:
            before.append(key.to_user_string())
    return Plan(before, partitioned, partition_keys, after)


def _run(asset_keys: list[str], partition_key: str | None = None) -> tuple[str, bool, float]:
    """Materialize ``asset_keys`` (one partition, or unpartitioned) in this process; (label, success, seconds)."""
    import dagster as dg

    definitions = _definitions()
    keys = [dg.AssetKey.from_user_string(k) for k in asset_keys]
    job = definitions.resolve_implicit_global_asset_job_def().get_subset(asset_selection=set(keys))
    t0 = time.perf_counter()
    with dg.DagsterInstance.get() as instance:
        result = job.execute_in_process(
            run_config=RUN_CONFIG, instance=instance, partition_key=partition_key, raise_on_error=False
        )
    return partition_key or "unpartitioned", result.success, time.perf_counter() - t0


@click.command("materialize")
@click.option("--select", default="*", show_default=True, help="Dagster asset selection, e.g. 'group:ingest'.")
def materialize(select: str) -> None:
    """Materialize every selected asset and partition (what `make figures` runs)."""
    if not os.environ.get("DAGSTER_HOME"):
        raise click.UsageError("set DAGSTER_HOME (the Makefile sets it to .dagster_home)")
    started = time.perf_counter()
    p = plan(select)
    failed = False
    if p.before:
        label, ok, secs = _run(p.before)
        click.echo(f"[materialize] {len(p.before)} assets: {'ok' if ok else 'FAILED'} in {secs:.1f} s", err=True)
        failed |= not ok
    for name, assets in p.partitioned.items():
        keys = p.partition_keys[name]
        t0 = time.perf_counter()
        # spawn, not fork: a forked child would share the parent's open instance storage. One task per
        # partition (the workers keep the code location loaded), so each partition reports as it ends.
        with ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(_run, assets, key) for key in keys]
            for done, future in enumerate(as_completed(futures), 1):
                label, ok, secs = future.result()
                click.echo(
                    f"[materialize] {', '.join(assets)} [{label}] ({done}/{len(keys)}): {'ok' if ok else 'FAILED'} in {secs:.1f} s",
                    err=True,
                )
                failed |= not ok
        click.echo(f"[materialize] {len(keys)} partitions in {time.perf_counter() - t0:.1f} s", err=True)
    if p.after and not failed:
        label, ok, secs = _run(p.after)
        click.echo(f"[materialize] {len(p.after)} downstream assets: {'ok' if ok else 'FAILED'} in {secs:.1f} s", err=True)
        failed |= not ok
    click.echo(f"[materialize] {'FAILED' if failed else 'done'} in {time.perf_counter() - started:.1f} s", err=True)
    if failed:
        sys.exit(1)
