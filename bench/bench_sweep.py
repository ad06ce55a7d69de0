"""Knob-grid sweep benchmark: one grid in-process, on a LocalCluster of 1 worker and of 2 workers, in one run.

Reads the materialized inputs of the sweep command (`make figures` or `make materialize` writes
them), keeps the public traces present, and sweeps one grid (Zeus and Default, 2 GPUs, eta
{0, 0.5, 1}, beta 2, seeds 1-2) three ways. Prints replays per second, the scaling ratios, the
cost of one replay per policy, checks the three tables are identical, and extrapolates the
paper grid (``sweep.PAPER_GRID``) from the measured per-replay costs.
"""

from __future__ import annotations

import os
import time

import polars as pl

from pipelines.clusters import mapping, sweep
from pipelines.distributed import SerialRunner, connect
from pipelines.home.paths import default_paths
from pipelines.zeus.traces import Traces

GRID = sweep.Grid(etas=(0.0, 0.5, 1.0), betas=(2.0,), seeds=(1, 2), gpus=("v100", "a40"), policies=("zeus", "default"))


def load() -> tuple[pl.DataFrame, Traces]:
    """The public traces' jobs (your own traces left out, so runs compare) and the Zeus traces."""
    jobs, traces = sweep.read_inputs(default_paths().assets)
    return jobs.filter(pl.col("trace").is_in(mapping.TRACES)), traces


def per_replay_seconds(jobs: pl.DataFrame, traces: Traces, chosen: tuple[str, ...]) -> dict[str, float]:
    """Mean seconds of one replay per policy, in this process (one of each per trace on v100)."""
    by_trace = {t: jobs.filter(pl.col("trace") == t).select(sweep.JOB_COLUMNS) for t in chosen}
    knobs = {"zeus": (0.5, 2.0), "grid-search": (0.5, None), "default": (None, None)}
    cost = {}
    for policy, (eta, beta) in knobs.items():
        t0 = time.perf_counter()
        for trace in chosen:
            sweep.replay_totals(sweep.Replay(trace, "v100", policy, 1, eta, beta), by_trace, traces)
        cost[policy] = (time.perf_counter() - t0) / len(chosen)
    return cost


def main() -> None:
    jobs, traces = load()
    chosen = sweep.present_traces(jobs)
    n = len(sweep.replays(GRID, chosen))
    print(f"grid: {', '.join(chosen)} x {len(GRID.gpus)} GPUs x {len(GRID.etas)} etas x {len(GRID.seeds)} seeds, "
          f"Zeus + Default: {n} replays ({os.cpu_count()} cores here)")
    results: dict[str, tuple[float, pl.DataFrame]] = {}
    t0 = time.perf_counter()
    table = sweep.sweep(jobs, traces, GRID, SerialRunner())
    results["in-process"] = (time.perf_counter() - t0, table)
    for workers in (1, 2):
        started = time.perf_counter()
        with connect("local", workers=workers) as runner:
            ready = time.perf_counter()
            table = sweep.sweep(jobs, traces, GRID, runner)
            results[f"{workers} worker{'s' if workers > 1 else ''}"] = (time.perf_counter() - ready, table)
        print(f"  (local cluster of {workers}: {ready - started:.1f} s to start)")
    base = results["in-process"][1]
    for name, (seconds, table) in results.items():
        same = "identical" if table.equals(base) else "DIFFERENT"
        print(f"{name:>11}: {seconds:6.1f} s, {n / seconds:5.2f} replays/s, table {same}")
    one, two = results["1 worker"][0], results["2 workers"][0]
    print(f"scaling: 2 workers vs 1 worker {one / two:.2f}x, vs in-process {results['in-process'][0] / two:.2f}x")
    cost = per_replay_seconds(jobs, traces, chosen)
    print("one replay (in-process, per trace): " + ", ".join(f"{p} {s:.2f} s" for p, s in cost.items()))
    paper = sweep.replays(sweep.PAPER_GRID, chosen)
    serial = sum(cost[r.policy] for r in paper)
    efficiency = one / two / 2
    print(f"paper grid: {len(paper)} replays ({sum(r.policy == 'zeus' for r in paper)} Zeus): about {serial / 60:.1f} min "
          f"in-process, {serial / 2 / efficiency / 60:.1f} min on 2 workers (at the {efficiency:.0%} efficiency measured here), "
          f"{serial / 16 / 60:.1f} min on 16 workers if they scale as well")


if __name__ == "__main__":
    main()
