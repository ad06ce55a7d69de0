"""Cluster layer: cluster traces as Zeus workloads, and the Zeus simulation over them (partitioned)."""

import dagster as dg
import polars as pl

from pipelines.clusters import mapping, simulate
from pipelines.clusters.workloads import REFERENCE_GPU, workloads_by_default_tta
from pipelines.ingest.zeus import PUBLISHED_GPUS
from pipelines.zeus.groups import WORKLOAD_DEFAULTS
from pipelines.zeus.traces import from_frames

ETA = 0.5
BETA = 2.0
SWEEP_ETAS = (0.0, 0.25, 0.5, 0.75, 1.0)
SWEEP_BETAS = (2.0, float("inf"))
SWEEP_SEEDS = (1, 2, 3, 4, 5)

gpu_partitions = dg.StaticPartitionsDefinition(list(PUBLISHED_GPUS))
trace_gpu_partitions = dg.MultiPartitionsDefinition(
    {"trace": dg.StaticPartitionsDefinition(list(mapping.TRACES)), "gpu": gpu_partitions}
)


@dg.asset(
    group_name="clusters",
    kinds={"polars", "parquet"},
    description="Every cluster trace's jobs as recurring groups of Zeus workloads, with runtime_ratio (see README).",
)
def cluster_workload_jobs(
    context: dg.AssetExecutionContext,
    alibaba_groups: pl.DataFrame,
    itp_jobs: pl.DataFrame,
    elasticflow_jobs: pl.DataFrame,
    acme_jobs: pl.DataFrame,
    zeus_train_runs: pl.DataFrame,
    zeus_power_profiles: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    order = workloads_by_default_tta(from_frames(zeus_train_runs, zeus_power_profiles))
    context.log.info(f"runtime-based mapping order (default TTA on {REFERENCE_GPU}, shortest first): {order}")
    jobs = pl.concat(
        [
            mapping.map_alibaba(alibaba_groups),
            mapping.map_itp(itp_jobs, order),
            mapping.map_elasticflow(elasticflow_jobs),
            mapping.map_acme(acme_jobs, order),
        ]
    )
    counts = jobs.group_by("trace").agg(pl.len(), pl.col("group").n_unique().alias("groups")).sort("trace")
    return dg.Output(
        jobs,
        metadata={
            "workload_order": dg.MetadataValue.json(order),
            "jobs_and_groups_by_trace": dg.MetadataValue.json(counts.to_dicts()),
        },
    )


@dg.asset_check(asset=cluster_workload_jobs, blocking=True, description="runtime_ratio averages 1 per workload per trace.")
def runtime_ratio_means_one(cluster_workload_jobs: pl.DataFrame) -> dg.AssetCheckResult:
    means = cluster_workload_jobs.group_by("trace", "dataset").agg(pl.col("runtime_ratio").mean().alias("mean"))
    worst = float((means["mean"] - 1).abs().max() or 0.0)
    return dg.AssetCheckResult(passed=worst < 1e-9, metadata={"max_abs_deviation": worst})


#: Every partitioned asset here materializes any set of its partitions in one run (one step, one
#: process: a backfill of all 16 trace x GPU partitions is one run, not 16 run processes); the
#: step returns {partition key: frame} and the IO manager writes one file per partition.
ONE_RUN = dg.BackfillPolicy.single_run()


def _trace_gpu(key: str) -> tuple[str, str]:
    keys = trace_gpu_partitions.get_partition_key_from_str(key).keys_by_dimension
    return keys["trace"], keys["gpu"]


@dg.asset(
    group_name="clusters",
    partitions_def=trace_gpu_partitions,
    backfill_policy=ONE_RUN,
    kinds={"polars", "parquet"},
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
            context.log.warning(f"trace {trace} has no jobs (its optional source is missing): empty history")
        out[key] = simulate.simulate_trace(jobs, traces, gpu, eta=ETA, beta=BETA, log=context.log.info)
    return out


@dg.asset(
    group_name="clusters",
    partitions_def=trace_gpu_partitions,
    backfill_policy=ONE_RUN,
    kinds={"polars", "parquet"},
    description="Per trace, workload and GPU: energy (J, MWh) and time (s) of Zeus, Default and Grid Search, and Zeus's savings (%).",
    check_specs=[dg.AssetCheckSpec("matches_history", asset="zeus_cluster_summary",
                                   description="Energy and time totals equal the sums over the history.")],
)
def zeus_cluster_summary(context: dg.AssetExecutionContext, zeus_cluster_history: pl.DataFrame):
    out = {}
    for key in context.partition_keys:
        trace, gpu = _trace_gpu(key)
        out[key] = simulate.summarize(zeus_cluster_history.filter((pl.col("trace") == trace) & (pl.col("gpu") == gpu)))
    yield dg.Output(out)
    summary = pl.concat(list(out.values()), how="vertical_relaxed")
    mismatches = simulate.summary_mismatches(summary, zeus_cluster_history)
    yield dg.AssetCheckResult(check_name="matches_history", passed=not mismatches, metadata={"mismatches": dg.MetadataValue.json(mismatches)})


@dg.asset(
    group_name="clusters",
    partitions_def=gpu_partitions,
    backfill_policy=ONE_RUN,
    kinds={"polars", "parquet"},
    description="Single recurring jobs: 6 workloads x eta {0..1} x beta {2, inf} x 5 seeds under Zeus, Default and Grid "
    "Search, one row per recurrence, with cumulative regret against the Oracle.",
)
def zeus_single_job_sweep(
    context: dg.AssetExecutionContext, zeus_train_runs: pl.DataFrame, zeus_power_profiles: pl.DataFrame
) -> dg.Output[dict[str, pl.DataFrame]]:
    traces = from_frames(zeus_train_runs, zeus_power_profiles)
    out, errors = {}, []
    for gpu in context.partition_keys:
        out[gpu], skipped = simulate.single_job_sweep(traces, [gpu], sorted(WORKLOAD_DEFAULTS), SWEEP_ETAS, SWEEP_BETAS, SWEEP_SEEDS)
        errors += skipped
    for error in errors:
        context.log.warning(f"not simulated (the published simulator raises here): {error}")
    return dg.Output(out, metadata={"skipped_combinations": len(errors), "skipped": dg.MetadataValue.json(errors[:50])})
