"""Cluster power over each trace's timeline, per policy, and its peak, p99, headroom and fleet energy (partitioned by trace and GPU).

``cluster_capacity`` (per trace) gives each cluster's size, for the idle draw of the GPUs without a job.
"""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from pipelines.clusters import capacity, fleet, power, tracefiles
from pipelines.defs.clusters.assets import BETA, ETA
from pipelines.defs.clusters.partitions import by_partition, trace_gpu_partitions, trace_partitions
from pipelines.defs.own_clusters.assets import FOLLOW_ALL_TRACES  # eager, once the replays are done
from pipelines.defs.shared.io_manager import PathsResource, partition_tables
from pipelines.defs.shared.metadata import markdown_preview
from pipelines.defs.shared.table_assets import table_asset
from pipelines.vocabulary import GPU_BY_NAME
from pipelines.vocabulary.units import KW_PER_W
from pipelines.zeus.traces import from_frames


@table_asset(
    partitions_def=trace_partitions,
    description="Each trace's cluster size (GPUs) for the idle draw of cluster power: a user trace's setting (clusters add "
    "--cluster-gpus), else the published size, else the trace's peak concurrent GPUs; with its source (docs: Cluster power).",
    check_specs=[dg.AssetCheckSpec("setting_covers_peak", asset="cluster_capacity", blocking=True,
                                   description="A user trace's cluster_gpus setting is at least the trace's peak concurrent GPUs.")],
)
def cluster_capacity(
    context: dg.AssetExecutionContext, paths: PathsResource, cluster_workload_jobs: pl.DataFrame
) -> Iterator[dg.Output[dict[str, pl.DataFrame]] | dg.AssetCheckResult]:
    settings = {t.name: t.cluster_gpus for t in tracefiles.user_traces(paths.paths().raw)[0] if t.cluster_gpus is not None}
    out, refused = {}, []
    for trace in context.partition_keys:
        jobs = cluster_workload_jobs.filter(pl.col("trace") == trace)
        try:
            found = capacity.resolve(trace, jobs, settings.get(trace), setting_name=f"raw/clusters/{trace}.toml cluster_gpus")
        except capacity.CapacityError as exc:
            refused.append(str(exc))
            context.log.error(str(exc))
            found = capacity.resolve(trace, jobs)
            found = capacity.Capacity(trace, found.cluster_gpus, f"{found.source} (the setting was refused: {exc})",
                                      found.peak_concurrent_gpus, found.window_start_s, found.window_end_s)
        out[trace] = pl.DataFrame([vars(found)]).select("trace", "cluster_gpus", "source", "peak_concurrent_gpus", "window_start_s",
                                                        "window_end_s")
    yield dg.Output(partition_tables(context, out), metadata={"cluster_gpus": dg.MetadataValue.json({t: f.row(0, named=True) for t, f in out.items()})})
    yield dg.AssetCheckResult(check_name="setting_covers_peak", passed=not refused, metadata={"refused": dg.MetadataValue.json(refused)})


def _sizes(cluster_capacity: pl.DataFrame) -> dict[str, capacity.Capacity]:
    return {r["trace"]: capacity.Capacity(**r) for r in cluster_capacity.iter_rows(named=True)}


class PowerConfig(dg.Config):
    """Bin length of ``cluster_power`` (s), and where a run's energy is spread (see pipelines.clusters.power)."""

    bin_s: float = power.BIN_S
    occupancy: power.Occupancy = "simulated"


@table_asset(
    partitions_def=trace_gpu_partitions,
    description=f"Cluster power (W) and busy GPUs per bin (default {power.BIN_S:.0f} s, config bin_s) of the trace's timeline, "
    "per policy: each run draws its simulated average power energy_j / time_s from its start for time_s "
    "(config occupancy); the GPUs without a job and their idle draw in columns of their own (docs: Cluster power).",
    check_specs=[dg.AssetCheckSpec("energy_matches_history", asset="cluster_power", blocking=True,
                                   description="Per policy, sum(mean_power_w x bin length) equals the history's energy to 1e-9 relative.")],
)
def cluster_power(
    context: dg.AssetExecutionContext, config: PowerConfig, zeus_cluster_history: pl.DataFrame, cluster_capacity: pl.DataFrame
) -> Iterator[dg.Output[dict[str, pl.DataFrame]] | dg.AssetCheckResult]:
    sizes = _sizes(cluster_capacity)
    bins = power.power_bins(zeus_cluster_history, config.bin_s, config.occupancy, capacity=sizes)
    per_key = bins.group_by("trace", "gpu", "policy").agg(pl.len().alias("bins"), (pl.col("mean_power_w").max() * KW_PER_W).alias("peak_kw"))
    yield dg.Output(
        partition_tables(context, by_partition(bins, context.partition_keys)),
        metadata={"bin_s": config.bin_s, "occupancy": config.occupancy,
                  "bins_and_peak_kw": dg.MetadataValue.json(per_key.sort("trace", "gpu", "policy").to_dicts())},
    )
    mismatches = power.energy_mismatches(bins, zeus_cluster_history)
    yield dg.AssetCheckResult(
        check_name="energy_matches_history", passed=not mismatches, metadata={"mismatches": dg.MetadataValue.json(mismatches)}
    )


@table_asset(
    partitions_def=trace_gpu_partitions,
    description="Per policy: peak, p99 and mean cluster power (kW), time above 90% of Default's peak (s), busy GPUs, "
    "p99 per-busy-GPU draw (W), headroom_gpus; energy and fleet energy (idle GPUs included) and what Zeus saves on each basis "
    "(docs: Cluster power).",
)
def cluster_power_summary(
    context: dg.AssetExecutionContext, cluster_power: pl.DataFrame, cluster_capacity: pl.DataFrame
) -> dg.Output[dict[str, pl.DataFrame]]:
    summary = power.power_summary(cluster_power, _sizes(cluster_capacity))
    headline = summary.select("trace", "gpu", "policy", "peak_kw", "p99_kw", "headroom_gpus", "energy_saved_pct",
                              "fleet_energy_saved_pct").to_dicts()
    return dg.Output(partition_tables(context, by_partition(summary, context.partition_keys)), metadata={"peak_p99_headroom": dg.MetadataValue.json(headline)})


@table_asset(
    description="Measured fleets (AcmeTrace's Seren and Kalos, DCGM) against every simulated one (trace, GPU, policy; idle GPUs "
    "included): per-GPU draw in % TDP over GPU-time: share below 25% TDP, median, p90, exact KS distance to each measured "
    "fleet; then the same for busy GPUs only (occupancy busy: measured, the top busy share of the power CDF, the busy share "
    "from DCGM GPU_UTIL above 0 %; simulated, the running GPUs); Seren's own jobs when AcmeTrace's job CSVs are present "
    "(docs: Cluster power).",
    check_specs=[dg.AssetCheckSpec("a100_idle_is_the_measured_low_mode", asset="power_model_vs_measured",
                                   description="The registry's A100 idle draw is the low mode of the measured distributions. Warns when "
                                               "they differ (the registry's cited draw disagrees with the curves).")],
    automation_condition=FOLLOW_ALL_TRACES,
)
def power_model_vs_measured(
    context: dg.AssetExecutionContext,
    fleet_power_cdf: pl.DataFrame,
    zeus_cluster_history: pl.DataFrame,
    cluster_power_summary: pl.DataFrame,
    cluster_workload_jobs: pl.DataFrame,
    zeus_train_runs: pl.DataFrame,
    zeus_power_profiles: pl.DataFrame,
) -> Iterator[dg.Output[pl.DataFrame] | dg.AssetCheckResult]:
    gpu, is_a100 = fleet.a100_stand_in(zeus_power_profiles["gpu"].unique())
    traces = from_frames(zeus_train_runs, zeus_power_profiles) if is_a100 else None
    seren = fleet.same_cluster(cluster_workload_jobs, zeus_cluster_history, traces, eta=ETA, beta=BETA)
    if not seren:
        context.log.info("no Seren jobs (AcmeTrace's trace_seren.csv absent): no same-cluster comparison")
    table = fleet.compare(fleet_power_cdf, zeus_cluster_history, cluster_power_summary, seren)
    yield dg.Output(table, metadata={"rows": table.height, "same_cluster_gpu": gpu if seren else "-",
                                     "comparison": dg.MetadataValue.md(markdown_preview(table))})
    measured = fleet.measured_idle_w(fleet_power_cdf)
    registry = GPU_BY_NAME[fleet.MEASURED_GPU].idle_w
    yield dg.AssetCheckResult(check_name="a100_idle_is_the_measured_low_mode", passed=measured == registry,
                              severity=dg.AssetCheckSeverity.WARN,
                              metadata={"measured_low_mode_w": measured, "registry_idle_w": registry})
