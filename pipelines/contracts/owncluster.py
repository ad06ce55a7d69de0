"""Contracts of a user's own cluster traces: Slurm ``sacct`` exports and generic job-log CSVs.

``own_cluster_jobs`` holds every valid allocation row of every file in ``raw/clusters/`` (pending,
running and CPU-only ones included, told apart by ``category``); ``own_cluster_traces`` holds one
row per file with its line accounting. Rejected rows go to ``quarantine/own_cluster_jobs``
(``pipelines.contracts.sources.Quarantine``). Times are UTC (read in the file's time zone).
The rules that produce these rows are in ``pipelines.ingest.slurm`` and ``pipelines.ingest.joblog``.
"""

from __future__ import annotations

import dataframely as dy
import polars as pl

from pipelines.contracts.base import one_of
from pipelines.contracts.clusters import trace_column

#: How an allocation counts: replay candidate (GPUs, started and ended), CPU-only, or not ended (pending or running).
CATEGORIES: tuple[str, ...] = ("gpu", "cpu_only", "not_ended")
#: The formats a trace file can have.
FORMATS: tuple[str, ...] = ("sacct", "csv")


def _utc(*, nullable: bool, description: str) -> dy.Datetime:
    return dy.Datetime(time_zone="UTC", time_unit="us", nullable=nullable, description=description)


class OwnClusterJobs(dy.Schema):
    """``own_cluster_jobs``: one row per allocation (Slurm job, array element or het-job component) of a user trace."""

    trace = trace_column(primary_key=True)
    job_id = dy.String(
        primary_key=True,
        description="job id: Slurm JobID (123, array element 123_7, pending array 123_[0-31], het component 123+1) or the CSV's job_id",
    )
    line = dy.Int64(min=1, description="line of the row in its source file (the header is line 1)")
    job_id_raw = dy.String(nullable=True, description="Slurm JobIDRaw (an array element's own number); null if not exported")
    job_name = dy.String(nullable=True, description="job name (sacct JobName, CSV name)")
    user = dy.String(nullable=True, description="user who ran the job")
    account = dy.String(nullable=True, description="Slurm account")
    slurm_partition = dy.String(nullable=True, description="Slurm partition (queue)")
    submit_time = _utc(nullable=False, description="submission (UTC)")
    start_time = _utc(nullable=True, description="start (UTC); null: never started (Unknown/None, pending)")
    end_time = _utc(nullable=True, description="end (UTC); null: not ended (Unknown, running)")
    elapsed_s = dy.Float64(nullable=True, min=0, description="Slurm Elapsed (s); null if not exported")
    state = dy.String(regex=r"^[A-Z][A-Z_]*$", description="state normalised to its first word, upper case (CANCELLED by 12 -> CANCELLED)")
    state_raw = dy.String(description="state as written in the file")
    exit_code = dy.String(nullable=True, description="Slurm ExitCode (code:signal)")
    num_nodes = dy.Int64(nullable=True, min=0, description="nodes allocated (Slurm NNodes)")
    num_gpus = dy.Int64(min=0, description="GPUs allocated (AllocTRES gres/gpu, counted once; CSV num_gpus); 0: none")
    gpu_type = dy.String(nullable=True, description="GPU type from gres/gpu:<type>=N (several types comma-separated); null: untyped")
    category = one_of(CATEGORIES, description="not_ended: start or end unknown; cpu_only: ended, no GPU; gpu: ended, with GPUs")

    @dy.rule()
    def end_not_before_start(cls) -> pl.Expr:
        """end_time must not be before start_time"""
        return pl.col("end_time") >= pl.col("start_time")

    @dy.rule()
    def category_matches_times_and_gpus(cls) -> pl.Expr:
        """category is not_ended exactly when a time is unknown, else cpu_only exactly when num_gpus is 0"""
        unknown = pl.col("start_time").is_null() | pl.col("end_time").is_null()
        expected = pl.when(unknown).then(pl.lit("not_ended")).when(pl.col("num_gpus") == 0).then(pl.lit("cpu_only")).otherwise(pl.lit("gpu"))
        return pl.col("category") == expected


def _count(description: str) -> dy.Int64:
    return dy.Int64(min=0, description=description)


class OwnClusterTraces(dy.Schema):
    """``own_cluster_traces``: one row per user trace file, with the account of every one of its lines."""

    trace = trace_column(primary_key=True)
    source_file = dy.String(description="file, relative to raw/ (clusters/<trace>.sacct or .csv)")
    format = one_of(FORMATS, description="sacct (--parsable or --parsable2) or csv (the generic job log)")
    timezone = dy.String(description="IANA time zone the file's naive times were read in (UTC: the default)")
    sha256 = dy.String(regex=r"^[0-9a-f]{64}$", description="sha256 of the file as read")
    lines = _count("lines in the file (a last line without a newline counts)")
    header_lines = dy.Int64(min=0, max=1, description="1, or 0 for a sacct --noheader export read with the field list given")
    allocations = _count("valid allocation rows: every row of own_cluster_jobs of this trace (cpu_only and not_ended included)")
    steps_skipped = _count("Slurm step rows (J.batch, J.extern, J.0, ...): skipped, never jobs")
    quarantined = _count("rows sent to quarantine/own_cluster_jobs")
    cpu_only = _count("ended allocations without GPUs (skipped)")
    not_ended = _count("allocations with an unknown start (pending) or end (running) (skipped)")
    gpu_allocations = _count("ended GPU allocations, any state")
    completed_gpu_allocations = _count("ended GPU allocations in state COMPLETED with end > start: the jobs the replay can use")

    @dy.rule()
    def every_line_accounted_for(cls) -> pl.Expr:
        """lines = header_lines + allocations + steps_skipped + quarantined"""
        return pl.col("lines") == pl.col("header_lines") + pl.col("allocations") + pl.col("steps_skipped") + pl.col("quarantined")

    @dy.rule()
    def allocations_split_into_categories(cls) -> pl.Expr:
        """allocations = cpu_only + not_ended + gpu_allocations"""
        return pl.col("allocations") == pl.col("cpu_only") + pl.col("not_ended") + pl.col("gpu_allocations")
