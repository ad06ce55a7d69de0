"""The knob-grid sweep as an asset, partitioned by trace like the other replays, on the Dask resource.

A new trace (a user's ``clusters add``) costs only its own replays: its partition follows its
``cluster_workload_jobs`` partition, and the other traces' grids stay as they are.
"""

import time
from enum import StrEnum

import dagster as dg
import polars as pl

from pipelines.clusters.sweep import GRIDS, present_traces, replays, sweep
from pipelines.contracts.base import empty
from pipelines.contracts.sweep import ZeusKnobGrid
from pipelines.defs.clusters.partitions import trace_partitions
from pipelines.defs.shared.dask import DaskResource
from pipelines.defs.shared.io_manager import partition_tables
from pipelines.defs.shared.table_assets import COMPILED_REPLAY, table_asset
from pipelines.zeus.traces import from_frames


class GridName(StrEnum):
    default = "default"
    paper = "paper"


class KnobGridConfig(dg.Config):
    """``default``: eta {0, .25, .5, .75, 1} x beta 2 x 4 GPUs x seeds 1-3 (what make figures runs);
    ``paper``: eta 0..1 step .1 x beta {1.5, 2, 3, 5} x 4 GPUs x seeds 1-5 (docs: Scaling out)."""

    grid: GridName = GridName.default


@table_asset(
    partitions_def=trace_partitions,
    kinds={"dask"},
    tags=COMPILED_REPLAY,
    # Bound here, so that a job of other assets needs no Dask resource; configure it per run
    # (resources: dask: config: scheduler: tcp://...) or with $DASK_SCHEDULER_ADDRESS.
    resource_defs={"dask": DaskResource()},
    # The longest step of its run: the multiprocess executor starts it first.
    op_tags={"dagster/priority": "10"},
    description="Knob grid at cluster scale, per trace: the trace (if it has jobs) replayed on every GPU for each (eta, beta, seed) under Zeus, "
    "Default (the paper grid adds Grid Search); cluster-wide energy (J) and time (s) and the saving vs Default (%). Runs on the dask resource.",
)
def zeus_knob_grid(
    context: dg.AssetExecutionContext,
    config: KnobGridConfig,
    dask: DaskResource,
    cluster_workload_jobs: pl.DataFrame,
    zeus_train_runs: pl.DataFrame,
    zeus_power_profiles: pl.DataFrame,
) -> dg.Output[dict[str, pl.DataFrame]]:
    grid = GRIDS[config.grid.value]
    traces = present_traces(cluster_workload_jobs)  # of this run's partitions only
    for trace in sorted(set(context.partition_keys) - set(traces)):
        context.log.warning(f"trace {trace} has no job: empty grid")
    if not traces:
        out = {trace: empty(ZeusKnobGrid) for trace in context.partition_keys}
        return dg.Output(partition_tables(context, out), metadata={"grid": config.grid.value, "replays": 0})
    n = len(replays(grid, traces))
    started = time.perf_counter()
    with dask.runner(note=context.log.info) as runner:
        context.log.info(f"{config.grid.value} grid: {n} replays of {', '.join(traces)} on {runner.description}")
        table = sweep(cluster_workload_jobs, from_frames(zeus_train_runs, zeus_power_profiles), grid, runner)
        where = runner.description
    seconds = time.perf_counter() - started
    out = {trace: table.filter(pl.col("trace") == trace) for trace in context.partition_keys}
    return dg.Output(
        partition_tables(context, out),
        metadata={
            "grid": config.grid.value,
            "traces": dg.MetadataValue.json(list(traces)),
            "replays": n,
            "seconds": round(seconds, 2),
            "replays_per_second": round(n / seconds, 3),
            "ran_on": where,
        },
    )
