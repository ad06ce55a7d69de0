"""Single recurring jobs under Zeus and the baselines, swept over the knobs (partitioned by GPU)."""

import dagster as dg
import polars as pl

from pipelines.clusters import simulate
from pipelines.defs.clusters.partitions import gpu_partitions
from pipelines.defs.shared.io_manager import partition_tables
from pipelines.defs.shared.table_assets import table_asset
from pipelines.vocabulary import ZEUS_DATASETS
from pipelines.zeus.traces import from_frames

SWEEP_ETAS = (0.0, 0.25, 0.5, 0.75, 1.0)
SWEEP_BETAS = (2.0, float("inf"))
SWEEP_SEEDS = (1, 2, 3, 4, 5)


@table_asset(
    partitions_def=gpu_partitions,
    description="Single recurring jobs: 6 workloads x eta {0..1} x beta {2, inf} x 5 seeds under Zeus, Default, Grid "
    "Search and the Oracle, one row per recurrence, with regret and ratio against the Oracle's expectation.",
)
def zeus_single_job_sweep(
    context: dg.AssetExecutionContext, zeus_train_runs: pl.DataFrame, zeus_power_profiles: pl.DataFrame
) -> dg.Output[dict[str, pl.DataFrame]]:
    traces = from_frames(zeus_train_runs, zeus_power_profiles)
    out, errors = {}, []
    for gpu in context.partition_keys:
        out[gpu], skipped = simulate.single_job_sweep(traces, [gpu], sorted(ZEUS_DATASETS), SWEEP_ETAS, SWEEP_BETAS, SWEEP_SEEDS)
        errors += skipped
    for error in errors:
        context.log.warning(f"not simulated (the published simulator raises here): {error}")
    return dg.Output(partition_tables(context, out), metadata={"skipped_combinations": len(errors), "skipped": dg.MetadataValue.json(errors[:50])})
