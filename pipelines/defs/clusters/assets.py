"""Cluster traces as Zeus workloads, and the Zeus replay over them (partitioned by trace and GPU).

``trace`` is a dynamic partition dimension: a trace is a partition once its files are present (the
public ones, and every ``raw/clusters/<name>.sacct|.csv``); ``cluster_traces_sensor``
(``sensors.py``) registers them, and ``register_trace_partitions`` does the same for a
command-line materialization. Everything downstream of ``cluster_workload_jobs`` follows by
``AutomationCondition.eager()``, partition by partition (the ``make dev`` daemon runs it).
"""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from pipelines.clusters import mapping, simulate
from pipelines.clusters.workloads import REFERENCE_GPU, workloads_by_default_tta
from pipelines.defs.clusters.partitions import by_partition, trace_gpu, trace_gpu_partitions, trace_partitions
from pipelines.defs.shared.io_manager import partition_tables
from pipelines.defs.shared.table_assets import COMPILED_REPLAY, FOLLOW, table_asset
from pipelines.vocabulary import DEFAULT_BETA, DEFAULT_ETA
from pipelines.zeus.traces import from_frames

ETA = DEFAULT_ETA
BETA = DEFAULT_BETA

#: cluster_workload_jobs follows updates of the ingested tables, own_cluster_jobs included (a partition of yours follows
#: its own trace's ingest: the own-trace partition of its name; a public trace's partition has none). It is ``eager()``
#: without its ``newly_missing()``: a public trace's new partition is cluster_traces_sensor's run to fill, and a run of the
#: automation beside it would read tables not ingested yet.
FOLLOW_TABLES = (
    dg.AutomationCondition.any_deps_updated().since_last_handled()
    & ~dg.AutomationCondition.any_deps_missing()
    & ~dg.AutomationCondition.any_deps_in_progress()
    & ~dg.AutomationCondition.in_progress()
).with_label("eager, but not when newly missing")
#: own_cluster_jobs, partitioned by your own traces: a trace partition depends on the own-trace partition of its name,
#: which a public trace's has not. A dependency, not an input: Dagster refuses to load an input partition that does not
#: exist, so the step reads the partitions present itself (``ParquetIOManager.load_present``).
OWN_JOBS = dg.AssetKey("own_cluster_jobs")
#: zeus_cluster_history follows cluster_workload_jobs, but not before the trace's cluster size is written (unless writing it
#: failed): a trace's jobs are stored before the end of the run that also writes its cluster size and knob grid, and a
#: history started then would leave cluster_power (which reads the cluster size) to a run of its own, after it.
FOLLOW_TRACE_RUN = (FOLLOW & ~dg.AutomationCondition.asset_matches("cluster_capacity", dg.AutomationCondition.in_progress() | (
    dg.AutomationCondition.missing() & ~dg.AutomationCondition.execution_failed()))).with_label("eager, after the cluster size")


@table_asset(
    partitions_def=trace_partitions,
    automation_condition=FOLLOW_TABLES,
    deps=[dg.AssetDep(OWN_JOBS, partition_mapping=dg.IdentityPartitionMapping())],
    description="One trace's jobs as recurring groups of Zeus workloads, with runtime_ratio (docs: Cluster traces and replay); a public trace from its "
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
    zeus_train_runs: pl.DataFrame,
    zeus_power_profiles: pl.DataFrame,
) -> Iterator[dg.Output[dict[str, pl.DataFrame]] | dg.AssetCheckResult]:
    order = workloads_by_default_tta(from_frames(zeus_train_runs, zeus_power_profiles))
    context.log.info(f"runtime-based mapping order (default TTA on {REFERENCE_GPU}, shortest first): {order}")
    own_cluster_jobs = context.resources.io_manager.load_present(OWN_JOBS, context.partition_keys)
    tables = {"alibaba_groups": alibaba_groups, "itp_jobs": itp_jobs, "elasticflow_jobs": elasticflow_jobs, "acme_jobs": acme_jobs,
              "own_cluster_jobs": own_cluster_jobs}
    out = {trace: mapping.map_trace(trace, tables, order) for trace in context.partition_keys}
    for trace, jobs in out.items():
        if jobs.height == 0:
            context.log.warning(f"trace {trace}: no job to replay")
    yield dg.Output(
        partition_tables(context, out),
        metadata={"workload_order": dg.MetadataValue.json(order),
                  "jobs_and_groups": dg.MetadataValue.json({t: [j.height, j["group"].n_unique()] for t, j in out.items()})},
    )
    jobs = pl.concat(list(out.values()), how="vertical_relaxed")
    means = jobs.group_by("trace", "dataset").agg(pl.col("runtime_ratio").mean().alias("mean"))
    worst = float(means.select((pl.col("mean") - 1).abs().max()).item() or 0.0)
    yield dg.AssetCheckResult(check_name="runtime_ratio_means_one", passed=worst < 1e-9, metadata={"max_abs_deviation": worst})


@table_asset(
    partitions_def=trace_gpu_partitions,
    description=f"Per-run history of Zeus, Default and Grid Search replaying every group of a trace on a GPU "
    f"(eta {ETA}, beta {BETA}); energy in J for the whole job (x num_gpu), time in s.",
    automation_condition=FOLLOW_TRACE_RUN,
    tags=COMPILED_REPLAY,
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
        trace, gpu = trace_gpu(key)
        jobs = cluster_workload_jobs.filter(pl.col("trace") == trace)
        if jobs.height == 0:
            context.log.warning(f"trace {trace} has no job to replay: empty history")
        out[key] = simulate.simulate_trace(jobs, traces, gpu, eta=ETA, beta=BETA, log=context.log.info)
    return partition_tables(context, out)


@table_asset(
    partitions_def=trace_gpu_partitions,
    description="Per trace, workload and GPU: energy (J, MWh) and time (s) of Zeus, Default and Grid Search, and Zeus's savings (%).",
    check_specs=[dg.AssetCheckSpec("matches_history", asset="zeus_cluster_summary",
                                   description="Energy and time totals equal the sums over the history.")],
)
def zeus_cluster_summary(
    context: dg.AssetExecutionContext, zeus_cluster_history: pl.DataFrame
) -> Iterator[dg.Output[dict[str, pl.DataFrame]] | dg.AssetCheckResult]:
    out = {key: simulate.summarize(rows) for key, rows in by_partition(zeus_cluster_history, context.partition_keys).items()}
    yield dg.Output(partition_tables(context, out))
    summary = pl.concat(list(out.values()), how="vertical_relaxed")
    mismatches = simulate.summary_mismatches(summary, zeus_cluster_history)
    yield dg.AssetCheckResult(check_name="matches_history", passed=not mismatches, metadata={"mismatches": dg.MetadataValue.json(mismatches)})
