"""Cluster layer: cluster traces as Zeus workloads, and the Zeus simulation over them (partitioned by trace and GPU).

``trace`` is a dynamic partition dimension: a trace is a partition once its files are present (the
public ones, and every ``raw/clusters/<name>.sacct|.csv``); ``cluster_traces_sensor``
(``pipelines/defs/own_clusters.py``) registers them, and ``register_trace_partitions`` does the
same for a command-line materialization. Everything downstream of ``cluster_workload_jobs``
follows by ``AutomationCondition.eager()``, partition by partition (the ``make dev`` daemon runs it).
"""

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import polars as pl

from pipelines.clusters import mapping, power, simulate, tracefiles
from pipelines.clusters.workloads import REFERENCE_GPU, workloads_by_default_tta
from pipelines.dagster_support import contract_metadata
from pipelines.ingest.zeus import PUBLISHED_GPUS
from pipelines.paths import default_mirror, default_paths
from pipelines.zeus.traces import from_frames
from pipelines.zeus.workloads import ZEUS_DATASETS

ETA = 0.5
BETA = 2.0
SWEEP_ETAS = (0.0, 0.25, 0.5, 0.75, 1.0)
SWEEP_BETAS = (2.0, float("inf"))
SWEEP_SEEDS = (1, 2, 3, 4, 5)

gpu_partitions = dg.StaticPartitionsDefinition(list(PUBLISHED_GPUS))
#: One partition per trace present (public or a user's own); see ``register_trace_partitions``.
TRACE_DIMENSION = "trace"
trace_partitions = dg.DynamicPartitionsDefinition(name=TRACE_DIMENSION)
trace_gpu_partitions = dg.MultiPartitionsDefinition({TRACE_DIMENSION: trace_partitions, "gpu": gpu_partitions})
#: Downstream of cluster_workload_jobs: materialized when an upstream partition updates or a partition is new.
FOLLOW = dg.AutomationCondition.eager()


def register_trace_partitions(instance: dg.DagsterInstance, root: Path | None = None) -> list[str]:
    """Add a ``trace`` partition for every trace present in the data home (``root``); return every registered trace.

    What ``python -m pipelines materialize`` calls before planning (the sensor does the same on
    each tick). Partitions are never removed here.
    """
    raw = (default_paths().root if root is None else root) / "raw"
    present = tracefiles.present_traces(raw, default_mirror(raw.parent))
    missing = [t for t in present if not instance.has_dynamic_partition(TRACE_DIMENSION, t)]
    if missing:
        instance.add_dynamic_partitions(TRACE_DIMENSION, missing)
    return list(instance.get_dynamic_partitions(TRACE_DIMENSION))


@dg.asset(
    group_name="clusters",
    partitions_def=trace_partitions,
    kinds={"polars", "parquet"},
    metadata=contract_metadata("cluster_workload_jobs"),
    description="One trace's jobs as recurring groups of Zeus workloads, with runtime_ratio (see README); a public trace from its "
    "ingested table, a user trace from own_cluster_jobs.",
    check_specs=[dg.AssetCheckSpec("runtime_ratio_means_one", asset="cluster_workload_jobs", blocking=True,
                                   description="runtime_ratio averages 1 per workload per trace.")],
)
def cluster_workload_jobs(
    context: dg.AssetExecutionContext,
    alibaba_groups: pl.DataFrame,
    itp_jobs: pl.DataFrame,
    elasticflow_jobs: pl.DataFrame,
    acme_jobs: pl.DataFrame,
    own_cluster_jobs: pl.DataFrame,
    zeus_train_runs: pl.DataFrame,
    zeus_power_profiles: pl.DataFrame,
) -> Iterator[dg.Output[pl.DataFrame] | dg.AssetCheckResult]:
    trace = context.partition_key
    order = workloads_by_default_tta(from_frames(zeus_train_runs, zeus_power_profiles))
    context.log.info(f"runtime-based mapping order (default TTA on {REFERENCE_GPU}, shortest first): {order}")
    tables = {"alibaba_groups": alibaba_groups, "itp_jobs": itp_jobs, "elasticflow_jobs": elasticflow_jobs, "acme_jobs": acme_jobs,
              "own_cluster_jobs": own_cluster_jobs}
    jobs = mapping.map_trace(trace, tables, order)
    if jobs.height == 0:
        context.log.warning(f"trace {trace}: no job to replay")
    yield dg.Output(
        jobs,
        metadata={"workload_order": dg.MetadataValue.json(order), "jobs": jobs.height, "groups": jobs["group"].n_unique()},
    )
    means = jobs.group_by("dataset").agg(pl.col("runtime_ratio").mean().alias("mean"))
    worst = float(means.select((pl.col("mean") - 1).abs().max()).item() or 0.0)
    yield dg.AssetCheckResult(check_name="runtime_ratio_means_one", passed=worst < 1e-9, metadata={"max_abs_deviation": worst})


def _partition(context: dg.AssetExecutionContext) -> tuple[str, str]:
    keys = context.partition_key.keys_by_dimension
    return keys["trace"], keys["gpu"]


@dg.asset(
    group_name="clusters",
    partitions_def=trace_gpu_partitions,
    automation_condition=FOLLOW,
    kinds={"polars", "parquet"},
    metadata=contract_metadata("zeus_cluster_history"),
    description=f"Per-run history of Zeus, Default and Grid Search replaying every group of a trace on a GPU "
    f"(eta {ETA}, beta {BETA}); energy in J for the whole job (x num_gpu), time in s.",
)
def zeus_cluster_history(
    context: dg.AssetExecutionContext,
    cluster_workload_jobs: pl.DataFrame,
    zeus_train_runs: pl.DataFrame,
    zeus_power_profiles: pl.DataFrame,
) -> pl.DataFrame:
    trace, gpu = _partition(context)
    jobs = cluster_workload_jobs.filter(pl.col("trace") == trace)
    if jobs.height == 0:
        context.log.warning(f"trace {trace} has no job to replay: empty history")
    traces = from_frames(zeus_train_runs, zeus_power_profiles)
    return simulate.simulate_trace(jobs, traces, gpu, eta=ETA, beta=BETA, log=context.log.info)


@dg.asset(
    group_name="clusters",
    partitions_def=trace_gpu_partitions,
    automation_condition=FOLLOW,
    kinds={"polars", "parquet"},
    metadata=contract_metadata("zeus_cluster_summary"),
    description="Per trace, workload and GPU: energy (J, MWh) and time (s) of Zeus, Default and Grid Search, and Zeus's savings (%).",
    check_specs=[dg.AssetCheckSpec("matches_history", asset="zeus_cluster_summary",
                                   description="Energy and time totals equal the sums over the history.")],
)
def zeus_cluster_summary(zeus_cluster_history: pl.DataFrame) -> Iterator[dg.Output[pl.DataFrame] | dg.AssetCheckResult]:
    summary = simulate.summarize(zeus_cluster_history)
    yield dg.Output(summary)
    mismatches = simulate.summary_mismatches(summary, zeus_cluster_history)
    yield dg.AssetCheckResult(check_name="matches_history", passed=not mismatches, metadata={"mismatches": dg.MetadataValue.json(mismatches)})


@dg.asset(
    group_name="clusters",
    partitions_def=gpu_partitions,
    kinds={"polars", "parquet"},
    metadata=contract_metadata("zeus_single_job_sweep"),
    description="Single recurring jobs: 6 workloads x eta {0..1} x beta {2, inf} x 5 seeds under Zeus, Default and Grid "
    "Search, one row per recurrence, with cumulative regret against the Oracle.",
)
def zeus_single_job_sweep(
    context: dg.AssetExecutionContext, zeus_train_runs: pl.DataFrame, zeus_power_profiles: pl.DataFrame
) -> dg.Output[pl.DataFrame]:
    traces = from_frames(zeus_train_runs, zeus_power_profiles)
    rows, errors = simulate.single_job_sweep(
        traces, [context.partition_key], sorted(ZEUS_DATASETS), SWEEP_ETAS, SWEEP_BETAS, SWEEP_SEEDS
    )
    for error in errors:
        context.log.warning(f"not simulated (the published simulator raises here): {error}")
    return dg.Output(rows, metadata={"skipped_combinations": len(errors), "skipped": dg.MetadataValue.json(errors[:50])})


class PowerConfig(dg.Config):
    """Bin length of ``cluster_power`` (s)."""

    bin_s: float = power.BIN_S


@dg.asset(
    group_name="clusters",
    partitions_def=trace_gpu_partitions,
    automation_condition=FOLLOW,
    kinds={"polars", "parquet"},
    metadata=contract_metadata("cluster_power"),
    description=f"Cluster power (W) and busy GPUs per bin (default {power.BIN_S:.0f} s, config bin_s) of the trace's timeline, "
    "per policy: each run draws energy_j / (end - start) over its [start, end) (see README, Cluster power).",
    check_specs=[dg.AssetCheckSpec("energy_matches_history", asset="cluster_power", blocking=True,
                                   description="Per policy, sum(mean_power_w x bin length) equals the history's energy to 1e-9 relative.")],
)
def cluster_power(config: PowerConfig, zeus_cluster_history: pl.DataFrame) -> Iterator[dg.Output[pl.DataFrame] | dg.AssetCheckResult]:
    bins = power.power_bins(zeus_cluster_history, config.bin_s)
    per_policy = bins.group_by("policy").agg(pl.len().alias("bins"), (pl.col("mean_power_w").max() * power.KW_PER_W).alias("peak_kw"))
    yield dg.Output(
        bins, metadata={"bin_s": config.bin_s, "bins_and_peak_kw": dg.MetadataValue.json(per_policy.sort("policy").to_dicts())}
    )
    mismatches = power.energy_mismatches(bins, zeus_cluster_history)
    yield dg.AssetCheckResult(
        check_name="energy_matches_history", passed=not mismatches, metadata={"mismatches": dg.MetadataValue.json(mismatches)}
    )


@dg.asset(
    group_name="clusters",
    partitions_def=trace_gpu_partitions,
    automation_condition=FOLLOW,
    kinds={"polars", "parquet"},
    metadata=contract_metadata("cluster_power_summary"),
    description="Per policy: peak, p99 and mean cluster power (kW), time above 90% of Default's peak (s), busy GPUs, "
    "p99 per-busy-GPU draw (W) and headroom_gpus (see README for the formula).",
)
def cluster_power_summary(cluster_power: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    summary = power.power_summary(cluster_power)
    headline = summary.select("policy", "peak_kw", "p99_kw", "headroom_gpus").to_dicts()
    return dg.Output(summary, metadata={"peak_p99_headroom": dg.MetadataValue.json(headline)})
