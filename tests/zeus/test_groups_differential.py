"""Group replay run by run against the published simulator (zeus==0.16.0), start and end times included.

* Every ElasticFlow-derived group of at most 40 jobs, built as the pipeline builds them
  (``map_elasticflow`` over the ingested ``elasticflow_jobs``: 434 groups, 3,390 jobs; no sampling),
  on V100 at eta 0.5, beta 2 (the cluster layer's knobs) and on A40 at eta 1, beta 1.5.
* The retry path itself: a group of overlapping jobs whose runs miss the target and are retried.

Both replay engines are compared (``engine``: the pure-Python reference and the compiled fast path), and
the sweep's batched replay (many knob states in one pass, totals only); the published runs are computed
once per module.

The published ``HistoryEntry`` carries no times; ``Peer.timed_groups`` (tests/support/zeus_peer.py) reads
them from the simulator's own in-flight records, so a retry's start and duration are compared with
the reference too, not only its configuration and cost.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from pipelines.clusters.mapping import map_elasticflow
from pipelines.zeus import fast
from pipelines.zeus.groups import group_frame, replay_groups, workload_tables
from pipelines.zeus.traces import Traces
from tests.support.zeus_cases import MAX_JOBS, RETRY_JOBS

COLUMNS = ("group", "start_time", "end_time", "bs", "pl", "energy", "time", "reached")
ENGINES = ("reference", "fast")


@pytest.fixture(scope="module")
def small_groups(ingested) -> pl.DataFrame:
    """Every ElasticFlow group of at most MAX_JOBS jobs as a group table, rows in the mapping's order."""
    paths, _ = ingested
    jobs = map_elasticflow(pl.read_parquet(paths.table("elasticflow_jobs")))
    small = jobs.join(jobs.group_by("group").len().filter(pl.col("len") <= MAX_JOBS), on="group", how="semi")
    return small.select("group", start_time="start_time_s", end_time="end_time_s", dataset="dataset", runtime_ratio="runtime_ratio")


def by_group(rows: list[tuple]) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {}
    for group, *run in rows:
        out.setdefault(group, []).append(tuple(run))
    return out


def published_runs(peer, groups: pl.DataFrame, gpu: str, eta: float, beta: float) -> list[tuple]:
    return [(group, *run) for group, runs in peer.timed_groups(groups, gpu, eta, beta) for run in runs]


@pytest.fixture(scope="module")
def published_small(peer, small_groups: pl.DataFrame):
    """``published_runs`` of ``small_groups`` per (gpu, eta, beta), computed once for both engines."""
    memo: dict[tuple[str, float, float], list[tuple]] = {}

    def runs(gpu: str, eta: float, beta: float) -> list[tuple]:
        if (gpu, eta, beta) not in memo:
            memo[gpu, eta, beta] = published_runs(peer, small_groups, gpu, eta, beta)
        return memo[gpu, eta, beta]

    return runs


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("gpu", "eta", "beta"), [("v100", 0.5, 2.0), ("a40", 1.0, 1.5)])
def test_every_elasticflow_group_of_up_to_40_jobs(
    published_small, traces: Traces, small_groups: pl.DataFrame, gpu: str, eta: float, beta: float, engine: str
) -> None:
    assert (small_groups["group"].n_unique(), small_groups.height) == (434, 3_390)
    expected = published_small(gpu, eta, beta)
    got = replay_groups(small_groups, traces, gpu, eta, beta, engine=engine)
    ours, theirs = by_group(list(got.select(COLUMNS).iter_rows())), by_group(expected)
    differing = [g for g in theirs if ours.get(g) != theirs[g]]
    assert list(ours) == list(theirs)  # same groups, in the same (sorted) order
    first = differing[0] if differing else None
    assert not differing, f"{len(differing)} of {len(theirs)} groups differ, first {first}: {ours.get(first)} != {theirs.get(first)}"
    # The retry path is exercised: runs that missed the target and were run again (148 and 340 of them).
    assert got.height - small_groups.height > 100


@pytest.mark.slow
@pytest.mark.parametrize("gpu", ["v100", "a40"])
def test_a_batch_of_knobs_in_one_pass_sums_the_published_runs(published_small, traces: Traces, small_groups: pl.DataFrame, gpu: str) -> None:
    """The sweep's batched replay (``fast.replay_totals``: both knob pairs side by side in one pass over the jobs) against
    zeus==0.16.0: per state, the published runs' count and their energy and time summed by ``math.fsum``."""
    groups = group_frame(small_groups)
    arrays = fast.group_arrays(groups)
    knobs = [fast.Knobs(0.5, 2.0, None), fast.Knobs(1.0, 1.5, None)]
    got = fast.replay_totals(arrays, workload_tables(groups, traces, gpu), np.ones(groups.height), "zeus", knobs)
    for (eta, beta, _), totals in zip(knobs, got, strict=True):
        runs = published_small(gpu, eta, beta)
        energy, time = COLUMNS.index("energy"), COLUMNS.index("time")
        assert totals == (len(runs), math.fsum(r[energy] for r in runs), math.fsum(r[time] for r in runs)), (gpu, eta, beta)


@pytest.mark.parametrize("engine", ENGINES)
def test_retry_starts_when_the_failed_run_ends_and_lasts_as_long(peer, traces: Traces, engine: str) -> None:
    group = pl.DataFrame(
        {"group": "retry", "start_time": [float(s) for s, _, _ in RETRY_JOBS], "end_time": [float(e) for _, e, _ in RETRY_JOBS],
         "dataset": "imagenet", "runtime_ratio": [r for _, _, r in RETRY_JOBS]}
    )  # fmt: skip
    got = replay_groups(group, traces, "v100", 0.5, 1.5, engine=engine)
    assert list(got.select(COLUMNS).iter_rows()) == published_runs(peer, group, "v100", 0.5, 1.5)

    # Trace jobs by index: sorted by start time, ties in table order (1527 s: the 9th row before the 11th).
    trace_jobs = sorted(RETRY_JOBS, key=lambda job: job[0])
    runs = got.sort("job", "start_time").rows(named=True)
    attempts: dict[int, list[dict]] = {}
    for run in runs:
        attempts.setdefault(run["job"], []).append(run)
    assert sorted(attempts) == list(range(len(RETRY_JOBS)))
    for job, chain in attempts.items():
        start, end, _ = trace_jobs[job]
        assert (chain[0]["start_time"], chain[0]["end_time"]) == (start, end), job
        for failed, retry in zip(chain, chain[1:], strict=False):
            assert not failed["reached"]
            assert retry["start_time"] == failed["end_time"], (job, failed, retry)
            assert retry["end_time"] - retry["start_time"] == failed["end_time"] - failed["start_time"] == end - start, (job, retry)
        assert chain[-1]["reached"] and not any(r["reached"] for r in chain[:-1])

    # The group exercises what it is for: many retries, chains of them, overlapping other jobs' runs,
    # and a retry that finishes between two arrivals (reaped before the next job is submitted).
    retries = [r for chain in attempts.values() for r in chain[1:]]
    assert len(retries) == 15 and max(len(chain) for chain in attempts.values()) == 4

    def overlaps_another_job(r: dict) -> bool:
        return any(o["job"] != r["job"] and o["start_time"] < r["end_time"] and r["start_time"] < o["end_time"] for o in runs)

    overlapping = [r for r in retries if overlaps_another_job(r)]
    assert len(overlapping) >= 10
    arrivals = [start for start, _, _ in trace_jobs]

    def next_arrival(t: float) -> float:
        return min((a for a in arrivals if a > t), default=math.inf)

    assert any(r["end_time"] < next_arrival(r["start_time"]) < math.inf for r in retries)
