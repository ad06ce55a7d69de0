"""AcmeTrace (NSDI '24): Seren and Kalos job traces in one schema, and the published cluster summary."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.contracts.sources import AcmeClusterSummary, AcmeJobs
from pipelines.ingest.common import IngestResult, TableSpec, ingest_files

_COMMON = ("job_id", "user", "node_num", "gpu_num", "cpu_num")
_TAIL = ("duration", "queue", "gpu_time")
SEREN_COLUMNS = (*_COMMON, "type", "state", "submit_time", "start_time", "end_time", *_TAIL)
KALOS_COLUMNS = (*_COMMON, "mem_per_pod_GB", "shared_mem_per_pod", "type", "state", "submit_time", "start_time",
                 "end_time", "fail_time", "stop_time", *_TAIL)
KALOS_ONLY = ("mem_per_pod_gb", "shared_mem_per_pod", "fail_time", "stop_time")

SEREN_SPEC = TableSpec("acme_jobs", AcmeJobs, {c: c for c in SEREN_COLUMNS})
KALOS_SPEC = TableSpec("acme_jobs", AcmeJobs, {c: c.lower() for c in KALOS_COLUMNS})
SUMMARY_COLUMNS = tuple(AcmeClusterSummary.column_names())
SUMMARY_SPEC = TableSpec("acme_cluster_summary", AcmeClusterSummary, {"id": "cluster", **{c: c for c in SUMMARY_COLUMNS[1:]}})
#: Acme counts TIMEOUT and NODE_FAIL as failed.
FAILED_STATES = ("FAILED", "TIMEOUT", "NODE_FAIL")
#: Seconds of slack allowed between ``duration`` and ``end - start`` (timestamps have 1 s resolution).
DURATION_TOLERANCE_S = 1


def read_jobs(seren: Path | None, kalos: Path | None) -> IngestResult:
    """trace_seren.csv and/or trace_kalos.csv -> ``acme_jobs`` (timestamps to UTC, ``cluster`` added)."""
    results = []
    if seren is not None:
        results.append(
            ingest_files([(seren, seren.name)], SEREN_SPEC, extra_columns=lambda p: {"cluster": "seren", **dict.fromkeys(KALOS_ONLY)})
        )
    if kalos is not None:
        results.append(ingest_files([(kalos, kalos.name)], KALOS_SPEC, extra_columns=lambda p: {"cluster": "kalos"}))
    return IngestResult.concat(results, SEREN_SPEC)


def read_cluster_summary(path: Path) -> IngestResult:
    """cluster_summary.csv -> ``acme_cluster_summary`` (``id`` renamed ``cluster``)."""
    return ingest_files([(path, path.name)], SUMMARY_SPEC)


def identity_violations(jobs: pl.DataFrame) -> pl.DataFrame:
    """Per cluster: rows where duration != end - start (beyond 1 s) or gpu_time != duration x gpu_num."""
    span = (pl.col("end_time") - pl.col("start_time")).dt.total_seconds()
    return (
        jobs.group_by("cluster")
        .agg(
            pl.len().alias("rows"),
            ((pl.col("duration") - span).abs() > DURATION_TOLERANCE_S).sum().alias("duration_ne_end_minus_start"),
            ((pl.col("gpu_time") - pl.col("duration") * pl.col("gpu_num")).abs() > 1e-6 * pl.col("gpu_time").abs().clip(1))
            .sum()
            .alias("gpu_time_ne_duration_x_gpus"),
        )
        .sort("cluster")
    )
