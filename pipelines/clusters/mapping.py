"""Map every cluster trace onto the six Zeus workloads, as one table: ``cluster_workload_jobs``.

Columns: those of ``pipelines.contracts.clusters.ClusterWorkloadJobs`` (trace, cluster, group,
job_id, start_time_s, end_time_s, num_gpu, dataset, runtime_ratio, and line: a user trace's file line).

The Zeus artifact published this mapping for Alibaba only. For the other traces we derive it
deterministically (no randomness, ties broken by name):

* **alibaba** -- as published (group, start/end, dataset, runtime_ratio recomputed the same way).
  The file has no GPU count: ``num_gpu`` = 1.
* **elasticflow** -- the trace's own model labels: group = cluster/model_name/batch_size/num_gpu,
  dataset by ``ELASTICFLOW_MODEL_TO_DATASET``. Caveat: ElasticFlow drew model_name and batch_size at
  random from templates, so these groups are synthetic; they are what ElasticFlow itself simulated.
* **itp** -- the raw trace has no user or model. A recurring group is the jobs of one cluster with
  the same GPU count and the same power-of-two duration bucket (``floor(log2(duration))``).
* **acme** -- GPU jobs (gpu_num > 0) that COMPLETED (failed/cancelled runs did not train to a
  target, which the Zeus replay assumes); group = cluster/user/type/gpu_num.
* **a user trace** (``own_cluster_jobs``: a Slurm export or a job-log CSV) -- GPU allocations that
  COMPLETED, with end > start (the replay assumes a run reaches its target); group =
  user/job name/GPU count where the row has both a user and a job name, else the ITP rule:
  (Slurm partition/)GPU count/power-of-two duration bucket; cluster = the trace's name; times in
  s since 1970 UTC.

For itp, acme and user traces the workload comes from the group's runtime: groups sorted by mean duration are
cut into six consecutive slices of (nearly) equal job counts, assigned to the workloads in order of
their expected time-to-accuracy at the default configuration (shortest to longest), so short jobs
play short workloads. runtime_ratio = job duration / mean duration of the jobs of that trace
assigned to the same workload (as in the Zeus artifact), so it averages exactly 1 per workload per trace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from pipelines.contracts import base
from pipelines.contracts.clusters import ClusterWorkloadJobs
from pipelines.ingest.own_cluster import replayable
from pipelines.vocabulary import CLUSTER_TRACES, ZEUS_DATASETS
from pipelines.vocabulary.units import duration_s, epoch_s

TRACES = CLUSTER_TRACES

#: ElasticFlow's model templates -> the Zeus workload of the closest kind (vision/speech/language).
ELASTICFLOW_MODEL_TO_DATASET: dict[str, str] = {
    "resnet50": "imagenet",
    "inception3": "imagenet",
    "vgg16": "cifar100",
    "deepspeech2": "librispeech",
    "bert": "squad",
    "gpt2": "sentiment140",
}

class MappingError(ValueError):
    """A job that cannot be mapped to a Zeus workload (names the group)."""


def _finish(jobs: pl.DataFrame, trace: str) -> pl.DataFrame:
    """Add trace and runtime_ratio, check datasets, and order the columns."""
    unknown = jobs.filter(~pl.col("dataset").is_in(ZEUS_DATASETS))
    if unknown.height:
        row = unknown.row(0, named=True)
        raise MappingError(
            f"{trace}: group {row['group']!r} has dataset {row['dataset']!r}, not one of the Zeus workloads {list(ZEUS_DATASETS)}"
        )
    runtime = pl.col("end_time_s") - pl.col("start_time_s")
    ratios = jobs.with_columns(pl.lit(trace).alias("trace"), (runtime / runtime.mean().over("dataset")).alias("runtime_ratio"))
    if "line" not in ratios.columns:  # a public trace: its readers keep no file line
        ratios = ratios.with_columns(pl.lit(None, pl.Int64).alias("line"))
    return base.conform(ratios, ClusterWorkloadJobs).sort("group", "start_time_s", "job_id", maintain_order=True)


def assign_by_runtime(jobs: pl.DataFrame, workload_order: Sequence[str], *, shuffle: np.random.Generator | None = None,
                      subset: bool = False) -> pl.DataFrame:
    """Give each group a dataset: groups by mean duration, cut into equal-job slices, one per workload.

    ``workload_order`` lists the datasets from the shortest to the longest expected TTA: every Zeus
    dataset once, or with ``subset`` some of them (a measured GPU's workloads). ``shuffle`` (a
    random draw of the assignment, ``pipelines.clusters.samples``): the groups are put in an order
    drawn from it instead of by mean duration, then cut the same way, so each workload keeps its
    share of the jobs and which groups play it is drawn.
    """
    groups = group_workloads(group_runtimes(jobs), workload_order, shuffle=shuffle, subset=subset)
    return jobs.join(groups, on="group", how="left")


def group_runtimes(jobs: pl.DataFrame) -> pl.DataFrame:
    """Each group of ``jobs`` with its job count and mean duration (s), by mean duration then name: what ``group_workloads`` cuts."""
    return (
        jobs.group_by("group")
        .agg(pl.len().alias("jobs"), (pl.col("end_time_s") - pl.col("start_time_s")).mean().alias("mean_s"))
        .sort("mean_s", "group")
    )


def group_workloads(groups: pl.DataFrame, workload_order: Sequence[str], *, shuffle: np.random.Generator | None = None,
                    subset: bool = False) -> pl.DataFrame:
    """``assign_by_runtime``'s (group, dataset) of ``group_runtimes``' groups (a draw reuses them: they do not change)."""
    if len(set(workload_order)) != len(workload_order) or not set(workload_order) <= set(ZEUS_DATASETS) or not workload_order \
            or (not subset and sorted(workload_order) != sorted(ZEUS_DATASETS)):
        raise ValueError(f"workload_order must list each Zeus dataset once, got {list(workload_order)}")
    if shuffle is not None:
        groups = groups.sort("group").with_columns(pl.Series("_draw", shuffle.permutation(groups.height))).sort("_draw").drop("_draw")
    groups = groups.with_columns(((pl.col("jobs").cum_sum() - pl.col("jobs")) / pl.col("jobs").sum()).alias("before"))
    k = len(workload_order)
    slot = (pl.col("before") * k).floor().cast(pl.Int64).clip(0, k - 1)
    return groups.select("group", slot.replace_strict(dict(enumerate(workload_order)), return_dtype=pl.String).alias("dataset"))


def map_alibaba(groups: pl.DataFrame) -> pl.DataFrame:
    """alibaba_groups (as published) -> cluster_workload_jobs rows; job_id = group#k in start order."""
    jobs = groups.with_row_index("_order").sort("group", "start_time", "_order").with_columns(
        pl.lit("alibaba-pai").alias("cluster"),
        (pl.col("group") + "#" + pl.int_range(pl.len()).over("group").cast(pl.String)).alias("job_id"),
        pl.col("start_time").alias("start_time_s"),
        pl.col("end_time").alias("end_time_s"),
        pl.lit(1).alias("num_gpu"),
    )
    return _finish(jobs, "alibaba")


def map_elasticflow(jobs: pl.DataFrame) -> pl.DataFrame:
    """elasticflow_jobs (cluster01..10 and testbed) -> rows, grouped and labelled by the trace's own labels."""
    unknown = sorted(set(jobs["model_name"].unique()) - set(ELASTICFLOW_MODEL_TO_DATASET))
    if unknown:
        raise MappingError(f"elasticflow: model_name {unknown} has no Zeus workload mapping")
    return _finish(
        jobs.with_columns(
            pl.format("{}/{}/bs{}/{}gpu", "cluster", "model_name", "batch_size", "num_gpu").alias("group"),
            pl.col("model_name").replace_strict(ELASTICFLOW_MODEL_TO_DATASET).alias("dataset"),
            pl.col("submission_time").cast(pl.Float64).alias("start_time_s"),
            (pl.col("submission_time") + pl.col("duration")).cast(pl.Float64).alias("end_time_s"),
        ),
        "elasticflow",
    )


def map_itp(jobs: pl.DataFrame, workload_order: Sequence[str]) -> pl.DataFrame:
    """itp_jobs -> rows; groups = cluster x GPU count x power-of-two duration bucket."""
    bucket = pl.col("duration").clip(1).log(2).floor().cast(pl.Int64)
    keyed = jobs.with_columns(
        pl.format("{}/{}gpu/2^{}s", "cluster", "num_gpu", bucket).alias("group"),
        pl.col("submission_time").cast(pl.Float64).alias("start_time_s"),
        (pl.col("submission_time") + pl.col("duration")).cast(pl.Float64).alias("end_time_s"),
    )
    return _finish(assign_by_runtime(keyed, workload_order), "itp")


def map_acme(jobs: pl.DataFrame, workload_order: Sequence[str]) -> pl.DataFrame:
    """acme_jobs -> rows: COMPLETED GPU jobs; groups = cluster x user x type x GPU count; times in s since 1970 (UTC)."""
    completed = jobs.filter((pl.col("gpu_num") > 0) & (pl.col("state") == "COMPLETED") & pl.col("start_time").is_not_null()
                            & pl.col("end_time").is_not_null())
    keyed = completed.with_columns(
        pl.format("{}/{}/{}/{}gpu", "cluster", pl.col("user").fill_null("?"), pl.col("type").fill_null("?"), "gpu_num").alias("group"),
        epoch_s(pl.col("start_time")).alias("start_time_s"),
        epoch_s(pl.col("end_time")).alias("end_time_s"),
        pl.col("gpu_num").alias("num_gpu"),
    )
    return _finish(assign_by_runtime(keyed, workload_order), "acme")


def own_replay_candidates(jobs: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``own_cluster_jobs`` the replay uses (``pipelines.ingest.own_cluster.replayable``): the same rule as the
    reader's count of completed GPU allocations."""
    return jobs.filter(replayable())


def own_group(jobs: pl.DataFrame) -> pl.Expr:
    """The recurring group of an own-cluster job: user/name/GPUs where both names exist, else the ITP rule."""
    seconds = duration_s(pl.col("end_time") - pl.col("start_time"))
    bucket = seconds.clip(1).log(2).floor().cast(pl.Int64)
    named = pl.col("user").is_not_null() & pl.col("job_name").is_not_null()
    by_size = pl.format("{}gpu/2^{}s", "num_gpus", bucket)
    if "slurm_partition" in jobs.columns:
        by_size = pl.when(pl.col("slurm_partition").is_not_null()).then(pl.format("{}/{}", "slurm_partition", by_size)).otherwise(by_size)
    return pl.when(named).then(pl.format("{}/{}/{}gpu", "user", "job_name", "num_gpus")).otherwise(by_size)


def group_partition(group: pl.Expr, partitions: int) -> pl.Expr:
    """The partition of a recurring group named ``group`` (``own_group``): its hash mod ``partitions``, an Int64 in
    [0, partitions). The kept parse's partitions (``kept.partition_of``) and the replay's (``replayed.row_jobs``) are these,
    so a group is never split and lies in the same partition in both."""
    return (group.hash(seed=0) % partitions).cast(pl.Int64)


def own_keyed(jobs: pl.DataFrame, trace: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """One user trace's replay candidates with their group, cluster, times (s since 1970 UTC) and num_gpu; no workload yet.

    ``columns``: only these of the result, in this order (default: every column of ``jobs`` and the five added); the
    filter then copies only the columns they need (12M lines: the rows kept are most of the table)."""
    keyed = jobs.lazy().filter((pl.col("trace") == trace) & replayable()).with_columns(  # one filter: one copy of the rows kept
        own_group(jobs).alias("group"),
        pl.lit(trace).alias("cluster"),
        epoch_s(pl.col("start_time")).alias("start_time_s"),
        epoch_s(pl.col("end_time")).alias("end_time_s"),
        pl.col("num_gpus").alias("num_gpu"),
    )
    return (keyed if columns is None else keyed.select(columns)).collect()


def finish_own(assigned: pl.DataFrame, trace: str) -> pl.DataFrame:
    """``own_keyed`` rows with a dataset -> ``cluster_workload_jobs`` rows (runtime_ratio per workload among them)."""
    return _finish(assigned, trace)


def map_own(jobs: pl.DataFrame, workload_order: Sequence[str], trace: str) -> pl.DataFrame:
    """One user trace's ``own_cluster_jobs`` rows -> rows (see the module docstring); times in s since 1970 UTC."""
    return _finish(assign_by_runtime(own_keyed(jobs, trace), workload_order), trace)


def map_trace(trace: str, tables: Mapping[str, pl.DataFrame], workload_order: Sequence[str]) -> pl.DataFrame:
    """The rows of one trace: a public one from its ingested table, a user trace from ``own_cluster_jobs``.

    ``tables`` maps table names (alibaba_groups, itp_jobs, elasticflow_jobs, acme_jobs,
    own_cluster_jobs) to frames; only the one the trace needs is read.
    """
    if trace == "alibaba":
        return map_alibaba(tables["alibaba_groups"])
    if trace == "itp":
        return map_itp(tables["itp_jobs"], workload_order)
    if trace == "elasticflow":
        return map_elasticflow(tables["elasticflow_jobs"])
    if trace == "acme":
        return map_acme(tables["acme_jobs"], workload_order)
    return map_own(tables["own_cluster_jobs"], workload_order, trace)


def empty() -> pl.DataFrame:
    return base.empty(ClusterWorkloadJobs)
