"""Cluster layer benchmark: every available trace x 4 GPUs, Zeus + Default + Grid Search, on 2 processes.

Reads the materialized ingest tables (run `make materialize SELECT='group:ingest'` first), maps the
traces to Zeus workloads, replays every (trace, GPU) partition, runs the single-job sweep per GPU,
and prints per-partition times and the wall total. The domain code only: Dagster's per-run
overhead comes on top (see `make materialize`'s per-partition lines). Goal: under 60 s on this 2-core machine.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

import polars as pl

from pipelines.clusters import mapping, simulate
from pipelines.clusters.workloads import workloads_by_default_tta
from pipelines.home.paths import default_paths
from pipelines.vocabulary import PUBLISHED_GPUS
from pipelines.zeus.traces import from_frames


def _load() -> tuple[pl.DataFrame, object]:
    paths = default_paths()

    def read(name: str) -> pl.DataFrame:
        return pl.read_parquet(paths.table(name))

    traces = from_frames(read("zeus_train_runs"), read("zeus_power_profiles"))
    order = workloads_by_default_tta(traces)
    jobs = pl.concat([
        mapping.map_alibaba(read("alibaba_groups")),
        mapping.map_itp(read("itp_jobs"), order),
        mapping.map_elasticflow(read("elasticflow_jobs")),
        mapping.map_acme(read("acme_jobs"), order),
    ])
    return jobs, traces


def _partition(args: tuple[str, str]) -> tuple[str, str, int, float]:
    trace, gpu = args
    jobs, traces = _load()
    t0 = time.perf_counter()
    history = simulate.simulate_trace(jobs.filter(pl.col("trace") == trace), traces, gpu)
    simulate.summarize(history)
    return trace, gpu, history.height, time.perf_counter() - t0


def _sweep(gpu: str) -> tuple[str, int, float]:
    from pipelines.defs.zeus.single_job_sweep import SWEEP_BETAS, SWEEP_ETAS, SWEEP_SEEDS
    from pipelines.vocabulary import ZEUS_DATASETS

    _, traces = _load()
    t0 = time.perf_counter()
    rows, _ = simulate.single_job_sweep(traces, [gpu], sorted(ZEUS_DATASETS), SWEEP_ETAS, SWEEP_BETAS, SWEEP_SEEDS)
    return gpu, rows.height, time.perf_counter() - t0


def main() -> None:
    t0 = time.perf_counter()
    jobs, _ = _load()
    traces = [t for t in mapping.TRACES if jobs.filter(pl.col("trace") == t).height]
    print(f"jobs per trace: {dict(jobs.group_by('trace').len().iter_rows())}; mapping took {time.perf_counter() - t0:.2f} s")
    work = [(t, g) for t in traces for g in PUBLISHED_GPUS]
    # spawn: forking a process that already ran polars can deadlock its thread pool.
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        for trace, gpu, runs, secs in pool.map(_partition, work):
            print(f"  {trace:<12} {gpu:<8} {runs:>8,} runs  {secs:6.2f} s")
        for gpu, rows, secs in pool.map(_sweep, PUBLISHED_GPUS):
            print(f"  single-job sweep {gpu:<8} {rows:>8,} recurrences  {secs:6.2f} s")
    wall = time.perf_counter() - t0
    print(f"whole layer ({len(work)} trace x GPU partitions x 3 policies + 4 sweep partitions, 2 processes): {wall:.1f} s wall (goal < 60 s)")


if __name__ == "__main__":
    main()
