"""The input tables of `python -m pipelines sweep`, written where and how the IO manager writes them."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.home.atomic import write_parquet_atomic
from pipelines.zeus.traces import Traces


def write_sweep_inputs(assets: Path, jobs: pl.DataFrame, traces: Traces) -> Path:
    """cluster_workload_jobs one file per trace partition (``<trace>.parquet``), the Zeus tables one file each."""
    for (trace,), part in jobs.partition_by("trace", as_dict=True).items():
        write_parquet_atomic(part, assets / "cluster_workload_jobs" / f"{trace}.parquet")
    write_parquet_atomic(traces.train, assets / "zeus_train_runs.parquet")
    write_parquet_atomic(traces.power, assets / "zeus_power_profiles.parquet")
    return assets
