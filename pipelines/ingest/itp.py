"""Microsoft ITP raw traces and the ElasticFlow traces derived from them."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.contracts.sources import ElasticflowJobs, ItpJobs
from pipelines.ingest.common import IngestResult, TableSpec, ingest_files
from pipelines.vocabulary.units import S_PER_H

#: Published totals (elasticflow-traces README): 10 clusters, 69,351 jobs, 1,632,719.7 GPU-hours.
ITP_CLUSTERS = tuple(f"cluster{i:02d}" for i in range(1, 11))
ITP_JOBS = 69_351
ITP_GPU_HOURS = 1_632_719.7
TESTBED_FILE = "195job.csv"
TESTBED_CLUSTER = "testbed"

ITP_SPEC = TableSpec("itp_jobs", ItpJobs, {c: c for c in ("job_id", "submission_time", "duration", "num_gpu")})
ELASTICFLOW_SPEC = TableSpec(
    "elasticflow_jobs",
    ElasticflowJobs,
    {c: c for c in ("job_id", "submission_time", "num_iteration", "model_name", "deadline", "batch_size", "num_gpu", "duration")},
)


def _cluster_files(folder: Path, names: list[str]) -> list[tuple[Path, str]]:
    return [(folder / n, f"{folder.name}/{n}") for n in names]


def read_itp(folder: Path) -> IngestResult:
    """raw-traces/cluster01..10.csv -> ``itp_jobs`` (``cluster`` from the file name)."""
    files = _cluster_files(folder, [f"{c}.csv" for c in ITP_CLUSTERS])
    return ingest_files(files, ITP_SPEC, extra_columns=lambda p: {"cluster": p.stem})


def read_elasticflow(folder: Path) -> IngestResult:
    """elasticflow-traces/cluster01..10.csv and 195job.csv (cluster ``testbed``) -> ``elasticflow_jobs``."""
    files = _cluster_files(folder, [f"{c}.csv" for c in ITP_CLUSTERS] + [TESTBED_FILE])
    return ingest_files(
        files, ELASTICFLOW_SPEC, extra_columns=lambda p: {"cluster": TESTBED_CLUSTER if p.name == TESTBED_FILE else p.stem}
    )


def gpu_hours(jobs: pl.DataFrame) -> float:
    """Sum of duration x num_gpu, in GPU-hours."""
    return float((jobs["duration"] * jobs["num_gpu"]).sum()) / S_PER_H


def elasticflow_vs_itp(elasticflow: pl.DataFrame, itp: pl.DataFrame) -> dict[str, int]:
    """Jobs on one side only, comparing (cluster, job_id, submission_time, duration, num_gpu); testbed excluded."""
    key = ["cluster", "job_id", "submission_time", "duration", "num_gpu"]
    ef = elasticflow.filter(pl.col("cluster") != TESTBED_CLUSTER).select(key)
    raw = itp.select(key)
    return {
        "only_in_elasticflow": ef.join(raw, on=key, how="anti").height,
        "only_in_itp": raw.join(ef, on=key, how="anti").height,
    }
