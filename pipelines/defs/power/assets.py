"""Cluster power over each trace's timeline, per policy, and its peak, p99 and headroom (partitioned by trace and GPU)."""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from pipelines.clusters import power
from pipelines.defs.clusters.partitions import ONE_RUN, by_partition, trace_gpu_partitions
from pipelines.defs.shared.metadata import contract_metadata
from pipelines.units import KW_PER_W

FOLLOW = dg.AutomationCondition.eager()


class PowerConfig(dg.Config):
    """Bin length of ``cluster_power`` (s), and where a run's energy is spread (see pipelines.clusters.power)."""

    bin_s: float = power.BIN_S
    occupancy: power.Occupancy = "simulated"


@dg.asset(
    group_name="clusters",
    partitions_def=trace_gpu_partitions,
    backfill_policy=ONE_RUN,
    automation_condition=FOLLOW,
    kinds={"polars", "parquet"},
    metadata=contract_metadata("cluster_power"),
    description=f"Cluster power (W) and busy GPUs per bin (default {power.BIN_S:.0f} s, config bin_s) of the trace's timeline, "
    "per policy: each run draws its simulated average power energy_j / time_s from its start for time_s "
    "(config occupancy; docs: Cluster power).",
    check_specs=[dg.AssetCheckSpec("energy_matches_history", asset="cluster_power", blocking=True,
                                   description="Per policy, sum(mean_power_w x bin length) equals the history's energy to 1e-9 relative.")],
)
def cluster_power(
    context: dg.AssetExecutionContext, config: PowerConfig, zeus_cluster_history: pl.DataFrame
) -> Iterator[dg.Output[dict[str, pl.DataFrame]] | dg.AssetCheckResult]:
    bins = power.power_bins(zeus_cluster_history, config.bin_s, config.occupancy)
    per_key = bins.group_by("trace", "gpu", "policy").agg(pl.len().alias("bins"), (pl.col("mean_power_w").max() * KW_PER_W).alias("peak_kw"))
    yield dg.Output(
        by_partition(bins, context.partition_keys),
        metadata={"bin_s": config.bin_s, "occupancy": config.occupancy,
                  "bins_and_peak_kw": dg.MetadataValue.json(per_key.sort("trace", "gpu", "policy").to_dicts())},
    )
    mismatches = power.energy_mismatches(bins, zeus_cluster_history)
    yield dg.AssetCheckResult(
        check_name="energy_matches_history", passed=not mismatches, metadata={"mismatches": dg.MetadataValue.json(mismatches)}
    )


@dg.asset(
    group_name="clusters",
    partitions_def=trace_gpu_partitions,
    backfill_policy=ONE_RUN,
    automation_condition=FOLLOW,
    kinds={"polars", "parquet"},
    metadata=contract_metadata("cluster_power_summary"),
    description="Per policy: peak, p99 and mean cluster power (kW), time above 90% of Default's peak (s), busy GPUs, "
    "p99 per-busy-GPU draw (W) and headroom_gpus (docs: Cluster power, for the formula).",
)
def cluster_power_summary(context: dg.AssetExecutionContext, cluster_power: pl.DataFrame) -> dg.Output[dict[str, pl.DataFrame]]:
    summary = power.power_summary(cluster_power)
    headline = summary.select("trace", "gpu", "policy", "peak_kw", "p99_kw", "headroom_gpus").to_dicts()
    return dg.Output(by_partition(summary, context.partition_keys), metadata={"peak_p99_headroom": dg.MetadataValue.json(headline)})
