"""Cluster layer: cluster traces as Zeus workloads, and the Zeus simulation over them (partitioned by trace and GPU).

``trace`` is a dynamic partition dimension: a trace is a partition once its files are present (the
public ones, and every ``raw/clusters/<name>.sacct|.csv``); ``cluster_traces_sensor``
(``pipelines/defs/own_clusters.py``) registers them, and ``register_trace_partitions`` does the
same for a command-line materialization. Everything downstream of ``cluster_workload_jobs``
follows by ``AutomationCondition.eager()``, partition by partition (the ``make dev`` daemon runs it).
"""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from pipelines.clusters import mapping, power, simulate
from pipelines.clusters.workloads import REFERENCE_GPU, workloads_by_default_tta
from pipelines.dagster_support import contract_metadata
from pipelines.defs.partitions import gpu_partitions, trace_gpu_partitions, trace_partitions
from pipelines.zeus.traces import from_frames
from pipelines.zeus.workloads import ZEUS_DATASETS

ETA = 0.5
BETA = 2.0
SWEEP_ETAS = (0.0, 0.25, 0.5, 0.75, 1.0)
SWEEP_BETAS = (2.0, float("inf"))
SWEEP_SEEDS = (1, 2, 3, 4, 5)

#: Every partitioned asset here materializes any set of its partitions in one run (one step, one
#: process: a backfill of all 16 trace x GPU partitions is one run, not 16 run processes); the
#: step returns {partition key: frame} and the IO manager writes one file per partition.
ONE_RUN = dg.BackfillPolicy.single_run()
#: Downstream of cluster_workload_jobs: materialized when an upstream partition updates or a partition is new.
FOLLOW = dg.AutomationCondition.eager()
#: cluster_workload_jobs follows the ingested tables, except own_cluster_jobs: every trace partition reads
#: every table, and a user's new trace (which updates own_cluster_jobs) is run, for its own partition
#: only, by cluster_traces_sensor; following it here would replay every other trace again.
FOLLOW_TABLES = dg.AutomationCondition.eager().ignore(dg.AssetSelection.assets("own_cluster_jobs"))


@dg.asset(
    group_name="clusters",
    partitions_def=trace_partitions,
    backfill_policy=ONE_RUN,
    automation_condition=FOLLOW_TABLES,
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
) -> Iterator[dg.Output[dict[str, pl.DataFrame]] | dg.AssetCheckResult]:
    order = workloads_by_default_tta(from_frames(zeus_train_runs, zeus_power_profiles))
    context.log.info(f"runtime-based mapping order (default TTA on {REFERENCE_GPU}, shortest first): {order}")
    tables = {"alibaba_groups": alibaba_groups, "itp_jobs": itp_jobs, "elasticflow_jobs": elasticflow_jobs, "acme_jobs": acme_jobs,
              "own_cluster_jobs": own_cluster_jobs}
    out = {trace: mapping.map_trace(trace, tables, order) for trace in context.partition_keys}
    for trace, jobs in out.items():
        if jobs.height == 0:
            context.log.warning(f"trace {trace}: no job to replay")
    yield dg.Output(
        out,
        metadata={"workload_order": dg.MetadataValue.json(order),
                  "jobs_and_groups": dg.MetadataValue.json({t: [j.height, j["group"].n_unique()] for t, j in out.items()})},
    )
    jobs = pl.concat(list(out.values()), how="vertical_relaxed")
    means = jobs.group_by("trace", "dataset").agg(pl.col("runtime_ratio").mean().alias("mean"))
    worst = float(means.select((pl.col("mean") - 1).abs().max()).item() or 0.0)
    yield dg.AssetCheckResult(check_name="runtime_ratio_means_one", passed=worst < 1e-9, metadata={"max_abs_deviation": worst})


def _trace_gpu(key: str) -> tuple[str, str]:
    keys = trace_gpu_partitions.get_partition_key_from_str(key).keys_by_dimension
    return keys["trace"], keys["gpu"]


def _by_partition(frame: pl.DataFrame, keys: list[str]) -> dict[str, pl.DataFrame]:
    """The rows of ``frame`` (trace and gpu columns) of each trace x GPU partition key."""
    out = {}
    for key in keys:
        trace, gpu = _trace_gpu(key)
        out[key] = frame.filter((pl.col("trace") == trace) & (pl.col("gpu") == gpu))
    return out


@dg.asset(
    group_name="clusters",
    partitions_def=trace_gpu_partitions,
    backfill_policy=ONE_RUN,
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
) -> dict[str, pl.DataFrame]:
    traces = from_frames(zeus_train_runs, zeus_power_profiles)
    out = {}
    for key in context.partition_keys:
        trace, gpu = _trace_gpu(key)
        jobs = cluster_workload_jobs.filter(pl.col("trace") == trace)
        if jobs.height == 0:
            context.log.warning(f"trace {trace} has no job to replay: empty history")
        out[key] = simulate.simulate_trace(jobs, traces, gpu, eta=ETA, beta=BETA, log=context.log.info)
    return out


@dg.asset(
    group_name="clusters",
    partitions_def=trace_gpu_partitions,
    backfill_policy=ONE_RUN,
    automation_condition=FOLLOW,
    kinds={"polars", "parquet"},
    metadata=contract_metadata("zeus_cluster_summary"),
    description="Per trace, workload and GPU: energy (J, MWh) and time (s) of Zeus, Default and Grid Search, and Zeus's savings (%).",
    check_specs=[dg.AssetCheckSpec("matches_history", asset="zeus_cluster_summary",
                                   description="Energy and time totals equal the sums over the history.")],
)
def zeus_cluster_summary(
    context: dg.AssetExecutionContext, zeus_cluster_history: pl.DataFrame
) -> Iterator[dg.Output[dict[str, pl.DataFrame]] | dg.AssetCheckResult]:
    out = {key: simulate.summarize(rows) for key, rows in _by_partition(zeus_cluster_history, context.partition_keys).items()}
    yield dg.Output(out)
    summary = pl.concat(list(out.values()), how="vertical_relaxed")
    mismatches = simulate.summary_mismatches(summary, zeus_cluster_history)
    yield dg.AssetCheckResult(check_name="matches_history", passed=not mismatches, metadata={"mismatches": dg.MetadataValue.json(mismatches)})


@dg.asset(
    group_name="clusters",
    partitions_def=gpu_partitions,
    backfill_policy=ONE_RUN,
    automation_condition=FOLLOW,
    kinds={"polars", "parquet"},
    metadata=contract_metadata("zeus_single_job_sweep"),
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
    return dg.Output(out, metadata={"skipped_combinations": len(errors), "skipped": dg.MetadataValue.json(errors[:50])})


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
    "(config occupancy; see README, Cluster power).",
    check_specs=[dg.AssetCheckSpec("energy_matches_history", asset="cluster_power", blocking=True,
                                   description="Per policy, sum(mean_power_w x bin length) equals the history's energy to 1e-9 relative.")],
)
def cluster_power(
    context: dg.AssetExecutionContext, config: PowerConfig, zeus_cluster_history: pl.DataFrame
) -> Iterator[dg.Output[dict[str, pl.DataFrame]] | dg.AssetCheckResult]:
    bins = power.power_bins(zeus_cluster_history, config.bin_s, config.occupancy)
    per_key = bins.group_by("trace", "gpu", "policy").agg(pl.len().alias("bins"), (pl.col("mean_power_w").max() * power.KW_PER_W).alias("peak_kw"))
    yield dg.Output(
        _by_partition(bins, context.partition_keys),
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
    "p99 per-busy-GPU draw (W) and headroom_gpus (see README for the formula).",
)
def cluster_power_summary(context: dg.AssetExecutionContext, cluster_power: pl.DataFrame) -> dg.Output[dict[str, pl.DataFrame]]:
    summary = power.power_summary(cluster_power)
    headline = summary.select("trace", "gpu", "policy", "peak_kw", "p99_kw", "headroom_gpus").to_dicts()
    return dg.Output(_by_partition(summary, context.partition_keys), metadata={"peak_p99_headroom": dg.MetadataValue.json(headline)})
