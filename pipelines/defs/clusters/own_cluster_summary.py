"""What ``whatif`` reports for each of your own traces, as a table (thin wrapper of ``pipelines.clusters.whatif``); the
same replays as pages: ``defs/figures/own_cluster_report.py``."""

import logging
from collections.abc import Iterator
from typing import Any

import dagster as dg
import polars as pl

from pipelines.clusters import whatif
from pipelines.clusters.profiles import Profiles, profiles_of
from pipelines.clusters.whatif_knobs import DEFAULTS
from pipelines.contracts.base import empty
from pipelines.contracts.owncluster import OwnClusterSummary
from pipelines.defs.own_clusters.assets import FOLLOW_ALL_TRACES
from pipelines.defs.shared.dask import DaskResource
from pipelines.defs.shared.table_assets import COMPILED_REPLAY, table_asset
from pipelines.ingest.own_cluster import OwnTraceResult
from pipelines.ingest.zeus import ZEUS_SOURCE
from pipelines.zeus.traces import from_frames


def stored_profiles(zeus_train_runs: pl.DataFrame, zeus_power_profiles: pl.DataFrame) -> Profiles:
    """The GPU profiles of the stored Zeus tables, the measured ones (raw/measured) named so, as ``whatif --profiles`` reads them."""
    return profiles_of(from_frames(zeus_train_runs, zeus_power_profiles),
                       {g: "measured" for g in zeus_power_profiles.filter(pl.col("source") != ZEUS_SOURCE)["gpu"].unique()})


#: Why a trace of yours has no summary or report (its ``own_cluster_jobs`` rows hold nothing to replay).
NOT_REPLAYABLE = "no COMPLETED GPU job to replay"


def replayable(own_cluster_traces: pl.DataFrame, own_cluster_jobs: pl.DataFrame,
               log: logging.Logger) -> Iterator[tuple[dict[str, Any], OwnTraceResult]]:
    """(``own_cluster_traces`` row, the trace as read) of every trace with a COMPLETED GPU job; the others named in ``log``."""
    for trace in own_cluster_traces.iter_rows(named=True):
        result = whatif.result_of(trace, own_cluster_jobs)
        if result.counts.completed_gpu_allocations == 0:
            log.warning(f"trace {trace['trace']}: {NOT_REPLAYABLE}")
            continue
        yield trace, result


#: Draws behind the summaries' medians and intervals (whatif's default), and their base seed.
SUMMARY_SAMPLES: int = DEFAULTS["samples"]
SUMMARY_SEED = 0


@table_asset(
    automation_condition=FOLLOW_ALL_TRACES,
    kinds={"dask"},
    tags=COMPILED_REPLAY,
    # In the step's process by default (the samples of a trace are quick); configure the run's resource
    # (resources: samples_dask: config: scheduler: local, or tcp://...) for a large trace. A key of its own: the
    # knob grid's "dask" defaults to a LocalCluster.
    resource_defs={"samples_dask": DaskResource(scheduler="none")},
    description=f"What `whatif` reports for each of your traces, as exported: a row per exported GPU type (its own profile, "
    f"else the V100) and the cluster's; medians over {SUMMARY_SAMPLES} samples of the workload assignment and the optimizer's "
    "seeds with 90 % intervals, and the scheduler's measured energy against the model where exported.",
)
def own_cluster_summary(
    context: dg.AssetExecutionContext,
    samples_dask: DaskResource,
    own_cluster_jobs: pl.DataFrame,
    own_cluster_traces: pl.DataFrame,
    zeus_train_runs: pl.DataFrame,
    zeus_power_profiles: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    profiles = stored_profiles(zeus_train_runs, zeus_power_profiles)
    options = whatif.Options(samples=SUMMARY_SAMPLES, seed=SUMMARY_SEED)
    frames = []
    preview: dict[str, dict[str, object]] = {}
    with samples_dask.runner() as runner:
        for trace, result in replayable(own_cluster_traces, own_cluster_jobs, context.log):
            report, _ = whatif.run(result, profiles, options, runner)
            frames.append(whatif.summary_frame(report))
            total = report.get("total") or next(iter(report["gpus"].values()))
            preview[trace["trace"]] = {k: total.get(k) for k in ("energy_saved_pct", "energy_saved_pct_interval", "energy_saved_kwh",
                                                                 "energy_saved_kwh_interval")}
    table = pl.concat(frames) if frames else empty(OwnClusterSummary)
    return dg.Output(table, metadata={"energy_saved": dg.MetadataValue.json(preview), "rows": table.height})
