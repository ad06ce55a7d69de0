"""Contracts of the ingested tables (one per upstream trace) and of their quarantine.

Ranges, allowed values, nullability and row rules are those the ingest enforces: a row that
breaks one goes to ``quarantine/<table>_bad_rows`` with the reason (``pipelines.ingest.common``). Primary
keys are checked per source file by the ingest (later duplicates quarantined, the first kept).
Every float is finite (``inf`` and overflowing text such as ``1e400`` are rejected); NaN counts as
a missing value (allowed only where the column is nullable). Every number has a physically sane
upper bound and every text a length limit (``pipelines.contracts.limits``), so a corrupt value is
quarantined with the bound in its reason instead of flowing into the simulations.
"""

from __future__ import annotations

from typing import Any

import dataframely as dy
import polars as pl

from pipelines.contracts.base import one_of
from pipelines.contracts.limits import (
    MAX_BATCH_SIZE,
    MAX_CLUSTER_TOTAL,
    MAX_CPUS_PER_JOB,
    MAX_EPOCH_S,
    MAX_EPOCHS,
    MAX_GPU_POWER_W,
    MAX_GPUS_PER_JOB,
    MAX_ID_CHARS,
    MAX_ITERATIONS,
    MAX_JOB_GPU_S,
    MAX_JOB_S,
    MAX_LEARNING_RATE,
    MAX_MEMORY_GB,
    MAX_NAME_CHARS,
    MAX_RUNTIME_RATIO,
    MAX_SOURCE_CHARS,
    MAX_TIME_S,
    MAX_TRACE_OFFSET_S,
    MAX_WINDOW_ENERGY_J,
)
from pipelines.vocabulary import ZEUS_DATASETS

ACME_CLUSTERS = ("seren", "kalos")
ACME_STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL")
ACME_TYPES = ("Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other")


def _float(*, nullable: bool = False, **kwargs: Any) -> dy.Float64:
    """A trace float: finite (no trace column holds an infinity), NaN only where nulls are."""
    return dy.Float64(nullable=nullable, allow_inf=False, allow_nan=nullable, **kwargs)


def _id(*, primary_key: bool = False, nullable: bool = False, description: str) -> dy.String:
    """An identifier (job id, group tag): at most ``MAX_ID_CHARS`` characters."""
    return dy.String(primary_key=primary_key, nullable=nullable, max_length=MAX_ID_CHARS, description=description)


def _name(*, primary_key: bool = False, nullable: bool = False, description: str) -> dy.String:
    """A name (GPU, model, optimizer, cluster, user): at most ``MAX_NAME_CHARS`` characters."""
    return dy.String(primary_key=primary_key, nullable=nullable, max_length=MAX_NAME_CHARS, description=description)


def _share(description: str) -> dy.Float64:
    return _float(nullable=True, min=0, max=1, description=description)


def _utc(*, nullable: bool, description: str) -> dy.Datetime:
    return dy.Datetime(time_zone="UTC", time_unit="us", nullable=nullable, description=description)


class ZeusTrainRuns(dy.Schema):
    """summary_train.csv: the epoch at which each training run first reached each target metric."""

    dataset = one_of(ZEUS_DATASETS, description="Zeus workload dataset")
    network = _name(description="DNN model")
    batch_size = dy.Int64(min_exclusive=0, max=MAX_BATCH_SIZE, description="training batch size (samples)")
    optimizer = _name(description="optimizer name, lower case")
    learning_rate = _float(min_exclusive=0, max=MAX_LEARNING_RATE, description="learning rate")
    run = dy.Int64(min=0, max=MAX_EPOCHS, description="repetition index of the same configuration")
    target_metric = _float(description="target validation metric (the workload's own unit)")
    target_epoch = dy.Int64(min=1, max=MAX_EPOCHS, nullable=True, description="epoch the target was reached (null: never)")


class ZeusPowerProfiles(dy.Schema):
    """summary_power_{gpu}.csv of every GPU (and measured profiles): one epoch per (batch size, power limit)."""

    gpu = _name(primary_key=True, description="GPU name: v100, a40, rtx6000, p100, or a measured GPU")
    dataset = one_of(ZEUS_DATASETS, primary_key=True, description="Zeus workload dataset (one of the six the train trace has)")
    network = _name(primary_key=True, description="DNN model")
    batch_size = dy.Int64(primary_key=True, min_exclusive=0, max=MAX_BATCH_SIZE, description="training batch size (samples)")
    optimizer = _name(primary_key=True, description="optimizer name, lower case")
    power_limit = dy.Int64(primary_key=True, min_exclusive=0, max=MAX_GPU_POWER_W, description="GPU power limit (W)")
    time_per_epoch = _float(min_exclusive=0, max=MAX_EPOCH_S, description="duration of one epoch (s)")
    average_power = _float(min_exclusive=0, max=MAX_GPU_POWER_W, description="average GPU power draw (W)")
    source = dy.String(max_length=MAX_SOURCE_CHARS, description="origin: zeus-nsdi23 or measured:<file>")


class AlibabaGroups(dy.Schema):
    """alibaba_groups.csv.xz from the Zeus artifact: recurring Alibaba jobs mapped to Zeus workloads."""

    group = _id(description="Alibaba group tag (repeats of the same job)")
    start_time = _float(min=0, max=MAX_TIME_S, description="job start (s since trace start)")
    end_time = _float(min=0, max=MAX_TIME_S, description="job end (s since trace start)")
    dataset = one_of(ZEUS_DATASETS, description="Zeus workload this job is mapped to")
    runtime_ratio = _float(min_exclusive=0, max=MAX_RUNTIME_RATIO, description="runtime / mean runtime of jobs of this dataset (ratio)")

    @dy.rule()
    def end_not_before_start(cls) -> pl.Expr:
        """end_time must not be before start_time"""
        return pl.col("end_time") >= pl.col("start_time")


class ItpJobs(dy.Schema):
    """Microsoft ITP raw traces (cluster01..10.csv)."""

    cluster = _name(primary_key=True, description="ITP cluster: cluster01..cluster10")
    job_id = _id(primary_key=True, description="job UUID (regenerated by the publishers)")
    submission_time = dy.Int64(min=0, max=MAX_TRACE_OFFSET_S, description="submission (s since collection start, 2021-03-04)")
    duration = dy.Int64(min=0, max=MAX_JOB_S, description="job duration (s)")
    num_gpu = dy.Int64(min=0, max=MAX_GPUS_PER_JOB, description="GPUs requested/used")


class ElasticflowJobs(dy.Schema):
    """ElasticFlow traces: ITP jobs plus synthetic model/batch/iteration/deadline labels."""

    cluster = _name(primary_key=True, description="cluster01..cluster10, or testbed (195job.csv)")
    job_id = _id(primary_key=True, description="job UUID (same as the ITP raw trace)")
    submission_time = dy.Int64(min=0, max=MAX_TRACE_OFFSET_S, description="submission (s since collection start)")
    num_iteration = dy.Int64(min=0, max=MAX_ITERATIONS, description="synthetic iteration count (duration x A100 throughput)")
    model_name = _name(description="synthetic model label (random template)")
    deadline = dy.Int64(min=0, max=MAX_TRACE_OFFSET_S, description="synthetic deadline (s since collection start)")
    batch_size = dy.Int64(min_exclusive=0, max=MAX_BATCH_SIZE, description="synthetic batch size label (samples)")
    num_gpu = dy.Int64(min=0, max=MAX_GPUS_PER_JOB, description="GPUs requested/used")
    duration = dy.Int64(min=0, max=MAX_JOB_S, description="job duration (s)")


class AcmeJobs(dy.Schema):
    """AcmeTrace job traces, Seren and Kalos in one schema (Kalos-only columns null for Seren)."""

    cluster = one_of(ACME_CLUSTERS, primary_key=True, description="AcmeTrace cluster")
    job_id = _id(primary_key=True, description="job id")
    user = _name(nullable=True, description="anonymised user")
    node_num = dy.Int64(min=0, max=MAX_GPUS_PER_JOB, description="nodes")
    gpu_num = dy.Int64(min=0, max=MAX_GPUS_PER_JOB, description="GPUs (0: CPU job)")
    cpu_num = dy.Int64(min=0, max=MAX_CPUS_PER_JOB, nullable=True, description="CPU cores")
    mem_per_pod_gb = _float(min=0, max=MAX_MEMORY_GB, nullable=True, description="memory per pod (GB), Kalos only")
    shared_mem_per_pod = _float(min=0, max=MAX_MEMORY_GB, nullable=True, description="shared memory per pod (GB), Kalos only")
    type = one_of(ACME_TYPES, nullable=True, description="workload type")
    state = one_of(ACME_STATES, description="final state")
    submit_time = _utc(nullable=False, description="submission (UTC)")
    start_time = _utc(nullable=True, description="start (UTC)")
    end_time = _utc(nullable=True, description="end (UTC)")
    fail_time = _utc(nullable=True, description="failure (UTC), Kalos only")
    stop_time = _utc(nullable=True, description="stop (UTC), Kalos only")
    duration = dy.Int64(min=0, max=MAX_JOB_S, nullable=True, description="run time (s)")
    queue = _float(min=0, max=MAX_JOB_S, nullable=True, description="queueing delay (s)")
    gpu_time = _float(min=0, max=MAX_JOB_GPU_S, nullable=True, description="GPU time = duration x gpu_num (GPU-s)")

    @dy.rule()
    def end_not_before_start(cls) -> pl.Expr:
        """end_time must not be before start_time (where both are known)"""
        return pl.col("end_time") >= pl.col("start_time")

    @dy.rule()
    def start_not_before_submit(cls) -> pl.Expr:
        """start_time must not be before submit_time (where known)"""
        return pl.col("start_time") >= pl.col("submit_time")


class AcmeClusterSummary(dy.Schema):
    """AcmeTrace cluster_summary.csv: the published per-cluster statistics (times in s, rates in [0, 1])."""

    cluster = _name(primary_key=True, description="Seren, Kalos, Philly, Helios or PAI")
    job_num = dy.Int64(min=0, max=int(MAX_CLUSTER_TOTAL), description="jobs")
    cpu_job_num = dy.Int64(min=0, max=int(MAX_CLUSTER_TOTAL), description="CPU jobs")
    gpu_job_num = dy.Int64(min=0, max=int(MAX_CLUSTER_TOTAL), description="GPU jobs")
    avg_run_time_gpu = _float(min=0, max=MAX_JOB_S, nullable=True, description="mean GPU-job duration (s)")
    avg_que_time_gpu = _float(min=0, max=MAX_JOB_S, nullable=True, description="mean GPU-job queueing delay (s)")
    avg_gpu_num = _float(min=0, max=MAX_GPUS_PER_JOB, nullable=True, description="mean GPUs per GPU job")
    med_run_time_gpu = _float(min=0, max=MAX_JOB_S, nullable=True, description="median GPU-job duration (s)")
    med_que_time_gpu = _float(min=0, max=MAX_JOB_S, nullable=True, description="median GPU-job queueing delay (s)")
    med_gpu_num = _float(min=0, max=MAX_GPUS_PER_JOB, nullable=True, description="median GPUs per GPU job")
    max_run_time_gpu = _float(min=0, max=MAX_JOB_S, nullable=True, description="longest GPU job (s)")
    max_gpu = _float(min=0, max=MAX_GPUS_PER_JOB, nullable=True, description="most GPUs of one job")
    complete_rate_gpu = _share("completed share of GPU jobs (fraction)")
    cancel_rate_gpu = _share("cancelled share of GPU jobs (fraction)")
    fail_rate_gpu = _share("failed share of GPU jobs (fraction)")
    complete_gpu_time = _float(min=0, max=MAX_CLUSTER_TOTAL, nullable=True, description="GPU time of completed jobs (GPU-s)")
    cancel_gpu_time = _float(min=0, max=MAX_CLUSTER_TOTAL, nullable=True, description="GPU time of cancelled jobs (GPU-s)")
    fail_gpu_time = _float(min=0, max=MAX_CLUSTER_TOTAL, nullable=True, description="GPU time of failed jobs (GPU-s)")
    complete_rate_gpu_time = _share("completed share of GPU time (fraction)")
    cancel_rate_gpu_time = _share("cancelled share of GPU time (fraction)")
    fail_rate_gpu_time = _share("failed share of GPU time (fraction)")
    avg_run_time_cpu = _float(min=0, max=MAX_JOB_S, nullable=True, description="mean CPU-job duration (s)")
    avg_que_time_cpu = _float(min=0, max=MAX_JOB_S, nullable=True, description="mean CPU-job queueing delay (s)")
    med_run_time_cpu = _float(min=0, max=MAX_JOB_S, nullable=True, description="median CPU-job duration (s)")
    med_que_time_cpu = _float(min=0, max=MAX_JOB_S, nullable=True, description="median CPU-job queueing delay (s)")
    complete_rate_cpu = _share("completed share of CPU jobs (fraction)")
    cancel_rate_cpu = _share("cancelled share of CPU jobs (fraction)")
    fail_rate_cpu = _share("failed share of CPU jobs (fraction)")


class HeteroGpuProfiles(dy.Schema):
    """Zeus² profiles (``trace_aws/{workload}_{gpu}.json``): one row per (gpu, workload, batch size, power limit), file order."""

    gpu = _name(primary_key=True, description="GPU profiled (a10, t4), from the file name")
    workload = _name(primary_key=True, description="workload profiled (cifar100, imagenet)")
    batch_size = dy.Int64(primary_key=True, min_exclusive=0, max=MAX_BATCH_SIZE, description="batch size (samples)")
    power_limit = dy.Int64(primary_key=True, min_exclusive=0, max=MAX_GPU_POWER_W, description="GPU power limit (W)")
    energy_j = dy.Float64(min=0, max=MAX_WINDOW_ENERGY_J, description="energy of the profiled window (J)")
    time_s = dy.Float64(min_exclusive=0, max=MAX_JOB_S, description="duration of the profiled window (s)")


class Quarantine(dy.Schema):
    """``quarantine/<table>_bad_rows``: source rows that failed parsing or validation, one row per rejected line."""

    table = dy.String(description="table the row was meant for")
    source_file = dy.String(description="source file, relative to raw/")
    line = dy.Int64(min=1, description="line in the source file (header = line 1)")
    column = dy.String(nullable=True, description="column of the first failed check (null: the whole row or file)")
    reason = dy.String(description="why the row was rejected, e.g. 'duration: must be >= 0 (value -3)'")
    raw = dy.String(description="the source line as read (bytes that are not UTF-8 as \\xNN; a very long line cut, with its length; empty for an empty file)")
