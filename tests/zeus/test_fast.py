"""The compiled group replay (pipelines.zeus.fast, .kernels) against the pure-Python reference, bit for bit.

* Its parts against what they emulate: numpy's PCG64 seeding and draws, SeedSequence's spawned
  seeds, Lemire's bounded integers, the ziggurat normal, a Thompson step, numpy's pairwise sums,
  CPython's float floor division.
* Whole replays, fast vs reference (``DataFrame.equals``: every float bit for bit, row order):
  every ElasticFlow group of up to 40 jobs under each policy, the retry group, a full ITP replay
  per policy (and with a seed knob), a full ElasticFlow Zeus replay; buffers that overflow and
  progress chunks change nothing. Against zeus==0.16.0: tests/zeus/test_groups*.py run both engines.
* Bad input: every error the reference raises, raised by both with the same type and message, at
  the same group (synthetic traces reach the errors real ones never do).
* Loading: one compiled signature; numba is never imported by ``simulate single`` nor by importing
  the replay's modules; a read-only install caches in numba's user-wide folder; the engine choice.
"""

from __future__ import annotations

import fcntl
import math
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from numba import njit

from pipelines.clusters import mapping, simulate, sweep
from pipelines.clusters.workloads import workloads_by_default_tta
from pipelines.home.paths import REPO_ROOT, ProjectPaths
from pipelines.scaleout.runners import SerialRunner
from pipelines.vocabulary import POLICIES
from pipelines.zeus import fast
from pipelines.zeus import kernels as kern
from pipelines.zeus.bandit import GaussianThompson
from pipelines.zeus.errors import SimulationError
from pipelines.zeus.exact import Uint32Draws
from pipelines.zeus.groups import replay_groups
from pipelines.zeus.reference import group_seed
from pipelines.zeus.traces import Traces, from_frames
from tests.support.zeus_cases import MAX_JOBS, RETRY_JOBS


def both(groups: pl.DataFrame, traces: Traces, gpu: str, eta: float, beta: float, policy: str, seed: int | None = None) -> pl.DataFrame:
    """The reference's table, after asserting the fast path's is identical (bit for bit, same row order)."""
    reference = replay_groups(groups, traces, gpu, eta, beta, policy, seed=seed, engine="reference")
    got = replay_groups(groups, traces, gpu, eta, beta, policy, seed=seed, engine="fast")
    assert got.schema == reference.schema
    if not got.equals(reference):
        rows = [(i, a, b) for i, (a, b) in enumerate(zip(got.iter_rows(), reference.iter_rows(), strict=False)) if a != b]
        raise AssertionError(f"{policy} on {gpu}: {got.height} vs {reference.height} runs; first difference {rows[:1]}")
    return reference


@pytest.fixture(scope="module")
def cluster_jobs(ingested: tuple[ProjectPaths, object], traces: Traces) -> pl.DataFrame:
    """cluster_workload_jobs of ITP and ElasticFlow, as the pipeline maps them."""
    paths, _ = ingested
    return pl.concat([
        mapping.map_itp(pl.read_parquet(paths.table("itp_jobs")), workloads_by_default_tta(traces)),
        mapping.map_elasticflow(pl.read_parquet(paths.table("elasticflow_jobs"))),
    ])  # fmt: skip


def group_table(jobs: pl.DataFrame) -> pl.DataFrame:
    return jobs.select("group", start_time="start_time_s", end_time="end_time_s", dataset="dataset", runtime_ratio="runtime_ratio")


@pytest.fixture(scope="module")
def itp(cluster_jobs: pl.DataFrame) -> pl.DataFrame:
    return group_table(cluster_jobs.filter(pl.col("trace") == "itp"))


# ---------------------------------------------------------------------------------------------
# the parts, against numpy and CPython


@njit(cache=False)
def _raw(seed: np.uint64, n: int) -> np.ndarray:
    st = np.zeros(6, dtype=np.uint64)
    kern.seed_stream(st, seed)
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        out[i] = kern.next64(st)
    return out


@njit(cache=False)
def _bounded(seed: np.uint64, highs: np.ndarray) -> np.ndarray:
    st = np.zeros(6, dtype=np.uint64)
    kern.seed_stream(st, seed)
    out = np.empty(highs.size, dtype=np.int64)
    for i in range(highs.size):
        out[i] = kern.bounded(st, highs[i])
    return out


@njit(cache=False)
def _normals(seed: np.uint64, n: int) -> np.ndarray:
    st = np.zeros(6, dtype=np.uint64)
    kern.seed_stream(st, seed)
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        out[i] = kern.standard_normal(st)
    return out


@njit(cache=False)
def _thompson_steps(seed: np.uint64, arms: np.ndarray, means: np.ndarray, scales: np.ndarray) -> np.ndarray:
    st = np.zeros(6, dtype=np.uint64)
    kern.seed_stream(st, seed)
    out = np.empty(arms.size, dtype=np.int64)
    for i in range(arms.size):
        out[i] = kern._thompson(st, arms[i], means[i], scales[i])
    return out


def test_pcg64_seeding_and_raw_draws_match_numpy() -> None:
    for seed in [0, 1, 2, 7, 12345, 2**31, 2**32 - 1, *(zlib.adler32(f"g{i}".encode()) for i in range(40))]:
        expected = np.random.PCG64(seed).random_raw(300)
        assert np.array_equal(_raw(np.uint64(seed), 300), expected), seed


def test_seed_knob_matches_seedsequence_spawn() -> None:
    k = kern
    for name in ["a", "cluster01/8gpu/2^14s", *(f"g{i}" for i in range(30))]:
        base = np.uint64(zlib.adler32(name.encode()))
        for knob in [0, 1, 2, 5, 99, 2**32 - 1, 2**32 + 7, 2**70 + 3]:
            words = np.array(fast._uint32_words(knob), np.uint64)
            assert int(k.spawned_seed(base, words)) == group_seed(name, knob), (name, knob)


def test_bounded_draws_match_the_python_emulation_with_lemire_rejections() -> None:
    rng = np.random.default_rng(0)
    highs = np.concatenate([rng.integers(0, 12, 2000), np.full(300, 3 * 2**30 + 12345), np.zeros(5, np.int64)]).astype(np.int64)
    rng.shuffle(highs)
    for seed in (3, 11, 2**32 - 5):
        draws = Uint32Draws(np.random.PCG64(seed))
        assert _bounded(np.uint64(seed), highs).tolist() == [draws.bounded(int(h)) for h in highs]


def test_standard_normal_matches_numpy_tail_and_wedges_included() -> None:
    n = 300_000
    got = _normals(np.uint64(5), n)
    expected = np.random.default_rng(5).standard_normal(n)
    assert np.array_equal(got, expected)
    assert (np.abs(expected) > kern.ziggurat_nor_r).sum() > 10  # the tail's slow path ran


def test_thompson_step_matches_the_reference_bandit() -> None:
    """A permutation's draws, then one normal per arm, on one generator: the arm the reference predicts, step after step."""
    rng = np.random.default_rng(1)
    steps = 400
    arms = rng.integers(1, 9, steps).astype(np.int64)
    means = rng.normal(-1e4, 3e3, (steps, 8))
    scales = np.where(rng.random((steps, 8)) < 0.2, 0.0, rng.uniform(0, 5e3, (steps, 8)))
    scales[::37, 0] = math.inf
    for seed in (0, 4242):
        got = _thompson_steps(np.uint64(seed), arms, means, scales)
        bandit = GaussianThompson(list(range(8)), seed)
        expected = []
        for i in range(steps):
            bandit.arms = list(range(arms[i]))
            bandit.mean, bandit.scale = means[i, : arms[i]].tolist(), scales[i, : arms[i]].tolist()
            expected.append(bandit.predict())
        assert got.tolist() == expected


def test_pairwise_sum_and_variance_match_numpy() -> None:
    k = kern
    rng = np.random.default_rng(0)
    for n in [*range(300), 1000, 4097, 9000, 65537]:
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 9, n)
        work = np.full(k.PAIRWISE_WORK, np.nan)
        assert k.pairwise_sum(x, 0, n, work) == np.add.reduce(x), n
        if n:
            padded = np.concatenate([[-1e300] * 3, x, [1e300]])  # a row of the rewards, others before and after it
            assert k.sum_and_var(padded, 3, n, work) == (x.sum(), np.var(x)), n


@njit(cache=False)
def _exact_sum(values: np.ndarray) -> float:
    bins = np.zeros(kern.EXACT_BINS, dtype=np.int64)
    for x in values:
        if not kern._exact_add(bins, x):
            return -1.0
    return kern._exact_total(bins, np.empty(2 * kern.EXACT_BINS))


def test_exact_totals_are_math_fsum() -> None:
    """The batch's exact sums against CPython's math.fsum: magnitudes 1e-200..1e300, bins that carry, ties to even."""
    rng = np.random.default_rng(3)
    cases = [
        np.zeros(0),
        np.zeros(5),
        rng.uniform(0, 1e6, 70_000),  # energies of a replay
        rng.uniform(0, 1, 5_000) * 10.0 ** rng.integers(-200, 300, 5_000),
        np.full(100_000, np.nextafter(1.0, 0.0)),  # one bin, carried about 200 times
        np.array([1.0, 2.0**-53, 2.0**-106]),  # rounds up only because of the last value
        np.array([1.0, 2.0**-53]),  # a tie: to even (1.0)
        np.array([1.0 + 2.0**-52, 2.0**-53]),  # a tie: to even (up)
        np.array([2.0**1000] * 3 + [1e-250] * 7),
    ]
    for values in cases:
        assert _exact_sum(values) == math.fsum(values.tolist()), values[:3]
    assert _exact_sum(np.array([1.0, -1.0])) == _exact_sum(np.array([math.inf])) == _exact_sum(np.array([2.0**-1000])) == -1.0  # not taken


def test_float_floor_division_matches_python() -> None:
    k = kern
    rng = np.random.default_rng(2)
    values = [*rng.uniform(-1e6, 1e6, 3000).tolist(), *rng.uniform(0, 50, 3000).tolist(), 0.0, -0.0, 1e-300, 7.0, 6.999999999999999,
              math.inf, -math.inf, math.nan, 1e308]  # fmt: skip
    divisors = [*rng.uniform(-1e3, 1e3, 50).tolist(), 0.1, 1.0, 3.0, 7.0, -7.0, 1e-300, math.inf]
    for v in values:
        for w in divisors:
            expected, got = v // w, k.py_floordiv(v, w)
            assert (math.isnan(expected) and math.isnan(got)) or (expected == got and math.copysign(1, expected) == math.copysign(1, got)), (v, w)


# ---------------------------------------------------------------------------------------------
# whole replays, fast vs reference


@pytest.fixture(scope="module")
def small_groups(cluster_jobs: pl.DataFrame) -> pl.DataFrame:
    """Every ElasticFlow group of at most 40 jobs (434 groups, as tests/zeus/test_groups_differential.py)."""
    jobs = cluster_jobs.filter(pl.col("trace") == "elasticflow")
    small = jobs.join(jobs.group_by("group").len().filter(pl.col("len") <= MAX_JOBS), on="group", how="semi")
    return group_table(small)


@pytest.mark.parametrize("policy", POLICIES)
def test_every_elasticflow_group_of_up_to_40_jobs(traces: Traces, small_groups: pl.DataFrame, policy: str) -> None:
    assert small_groups["group"].n_unique() == 434
    runs = both(small_groups, traces, "v100", 0.5, 2.0, policy)
    assert runs.filter("reached").height == small_groups.height
    if policy == "zeus":
        assert runs.height > small_groups.height + 100  # retries are in
        both(small_groups, traces, "a40", 1.0, 1.5, policy)


def test_the_retry_group(traces: Traces) -> None:
    group = pl.DataFrame({"group": "retry", "start_time": [float(s) for s, _, _ in RETRY_JOBS], "end_time": [float(e) for _, e, _ in RETRY_JOBS],
                          "dataset": "imagenet", "runtime_ratio": [r for _, _, r in RETRY_JOBS]})  # fmt: skip
    runs = both(group, traces, "v100", 0.5, 1.5, "zeus")
    assert runs.filter(~pl.col("reached")).height == 15


def tied_groups() -> pl.DataFrame:
    """Groups on a coarse clock, so that runs end together: first runs of several jobs, and retries with first runs (whole
    seconds, a retry lasting what its run lasted); jobs that end as they start; and one group with a job that ends before
    it starts, whose runs the kernel cannot take in end order."""
    rng = np.random.default_rng(20261128)
    frames = []
    for g, dataset in enumerate(("imagenet", "librispeech", "squad", "cifar100", "sentiment140", "movielens-1m") * 4):
        n = int(rng.integers(8, 60))
        start = np.sort(rng.integers(0, 40, n)) * 10.0
        end = start + rng.integers(0, 20, n) * 10.0
        if g == 5:
            end[n // 2] = start[n // 2] - 30.0
        frames.append(pl.DataFrame({"group": f"tied-{g}", "start_time": start, "end_time": end, "dataset": dataset,
                                    "runtime_ratio": rng.choice([0.5, 1.0, 1.5], n)}))
    return pl.concat(frames)


@pytest.mark.parametrize("policy", POLICIES)
def test_runs_that_end_together_end_in_heapqs_order(traces: Traces, policy: str) -> None:
    """The event order where ends tie (the earlier submission first) and where a job ends before it starts."""
    groups = tied_groups()
    assert groups.filter(pl.col("end_time") == pl.col("start_time")).height > 20
    assert groups.filter(pl.col("end_time") < pl.col("start_time")).height == 1
    for eta, beta in ((0.5, 1.5), (1.0, 2.0)):
        runs = both(groups, traces, "v100", eta, beta, policy)
        assert runs.group_by("group", "end_time").len().filter(pl.col("len") > 1).height > 150  # (group, end) pairs shared
        if policy == "zeus" and beta == 1.5:  # retries (a run starting as its job's missed run ended) that end with other runs
            missed = runs.filter(~pl.col("reached")).select("group", "job", missed_end="end_time")
            retries = runs.join(missed, on=["group", "job"]).filter(pl.col("start_time") == pl.col("missed_end"))
            assert retries.height > 20
            assert retries.join(runs, on=["group", "end_time"]).filter(pl.col("job") != pl.col("job_right")).height > 10


@pytest.mark.parametrize("policy", POLICIES)
def test_a_full_itp_replay(traces: Traces, itp: pl.DataFrame, policy: str) -> None:
    runs = both(itp, traces, "v100", 0.5, 2.0, policy)
    assert runs.filter("reached").height == itp.height == 69_351
    if policy == "zeus":  # a seed knob: each group's seed from SeedSequence(adler32, spawn_key=(3,))
        both(itp, traces, "v100", 0.5, 2.0, policy, seed=3)


def test_a_full_elasticflow_replay_on_another_gpu(traces: Traces, cluster_jobs: pl.DataFrame) -> None:
    both(group_table(cluster_jobs.filter(pl.col("trace") == "elasticflow")), traces, "p100", 0.25, 3.0, "zeus")


def test_buffer_restarts_and_progress_chunks_change_nothing(traces: Traces, itp: pl.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    subset = itp.filter(pl.col("group").str.starts_with("cluster0"))
    expected = replay_groups(subset, traces, "a40", 0.5, 2.0, engine="reference")
    monkeypatch.setattr(fast, "_capacities", lambda bounds, g_lo, g_hi: (1, 1))  # every group outgrows them, repeatedly
    monkeypatch.setattr(fast, "_PROGRESS_CHUNK_JOBS", 500)
    assert replay_groups(subset, traces, "a40", 0.5, 2.0, engine="fast").equals(expected)
    assert replay_groups(subset, traces, "a40", 0.5, 2.0, engine="fast", progress=True).equals(expected)


def test_the_sweep_totals_are_the_reference_totals(traces: Traces, cluster_jobs: pl.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = cluster_jobs.filter(pl.col("cluster").is_in(["cluster10", "testbed"]))
    for trace in ("itp", "elasticflow"):
        rows = jobs.filter(pl.col("trace") == trace)
        for policy, seed in (("zeus", None), ("zeus", 2), ("grid-search", 1), ("default", 1)):
            reference = simulate.trace_totals(rows, traces, "v100", policy, seed=seed, engine="reference")
            assert simulate.trace_totals(rows, traces, "v100", policy, seed=seed, engine="fast") == reference
            assert simulate.trace_totals(rows, traces, "v100", policy, seed=seed, engine="fast") == reference  # memoized inputs
    grid = sweep.Grid(etas=(0.0, 1.0), betas=(2.0,), seeds=(1,), gpus=("v100",), policies=("zeus", "default", "grid-search"))
    assert len(sweep.batches(sweep.replays(grid, ("itp", "elasticflow")), {"itp": 10, "elasticflow": 10}, 1)) == 6  # a pass per policy
    fast_table = sweep.sweep(jobs, traces, grid, SerialRunner())
    monkeypatch.setenv(fast.ENGINE_ENV, "reference")
    assert sweep.sweep(jobs, traces, grid, SerialRunner()).equals(fast_table)


def test_a_batch_of_replays_side_by_side_is_each_replay_alone(traces: Traces, cluster_jobs: pl.DataFrame) -> None:
    """``fast.replay_totals``: many (eta, beta, seed) in one pass, each state's totals those of its own replay (the
    reference's for some), and the very error (type and message) where the replay alone raises; the knobs in any order
    change nothing."""
    # cluster10 and testbed, and two groups that prune every batch size on a40 at beta 1.5 (eta 0.3; ElasticFlow's at 0.9 too)
    failing = ["cluster03/1gpu/2^12s", "cluster02/vgg16/bs256/1gpu"]
    jobs = cluster_jobs.filter(pl.col("cluster").is_in(["cluster10", "testbed"]) | pl.col("group").is_in(failing))
    knobs = [fast.Knobs(eta, beta, seed) for eta in (0.0, 0.3, 0.9, 1.0) for beta in (1.5, 5.0) for seed in (None, 2)]
    for trace, policy in (("itp", "zeus"), ("elasticflow", "zeus"), ("itp", "grid-search"), ("elasticflow", "default")):
        rows = jobs.filter(pl.col("trace") == trace)
        got = [_comparable(t) for t in simulate.trace_totals_batch(rows, traces, "a40", policy, knobs)]
        for i, (eta, beta, seed) in enumerate(knobs):
            engine = "reference" if i % 7 == 0 else "fast"
            try:
                alone: object = simulate.trace_totals(rows, traces, "a40", policy, eta=eta, beta=beta, seed=seed, engine=engine)
            except SimulationError as exc:
                alone = _comparable(exc)
            assert got[i] == alone, (trace, policy, eta, beta, seed)
        assert [_comparable(t) for t in simulate.trace_totals_batch(rows, traces, "a40", policy, knobs[::-1])] == got[::-1]
        if policy == "zeus":
            assert 0 < sum(isinstance(t, str) for t in got) < len(knobs)  # states stopped while the others went on


def test_states_that_outgrow_the_rewards_buffer_go_again_together(traces: Traces, cluster_jobs: pl.DataFrame,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A state whose batch size's rewards outgrow the buffer is replayed again with twice the room, with the others
    that did (not set aside for a replay alone): the same totals as each replay alone, and one more kernel pass per
    doubling, over those states only."""
    jobs = cluster_jobs.filter((pl.col("trace") == "itp") & pl.col("cluster").is_in(["cluster10", "testbed"]))
    knobs = [fast.Knobs(eta, 2.0, seed) for eta in (0.2, 0.8) for seed in (1, 2)]
    alone = [simulate.trace_totals(jobs, traces, "v100", "zeus", eta=eta, beta=beta, seed=seed) for eta, beta, seed in knobs]
    states: list[int] = []
    kernel = fast.kernels().replay_groups_kernel

    def counted(*args: object) -> object:
        states.append(args[4].eta.size)  # type: ignore[attr-defined]  # the PolicyArrays
        return kernel(*args)

    monkeypatch.setattr(fast, "_capacities", lambda bounds, lo, hi: (64, 16))  # 16 rewards per batch size at first
    monkeypatch.setattr(fast.kernels(), "replay_groups_kernel", counted)
    assert simulate.trace_totals_batch(jobs, traces, "v100", "zeus", knobs) == alone
    assert states[0] == len(knobs) and len(states) > 1 and states[1:] == sorted(states[1:], reverse=True)


def _comparable(totals: fast.Totals) -> object:
    """Totals as they are, an error as its type's name and message."""
    return f"{type(totals).__name__}: {totals}" if isinstance(totals, Exception) else totals


# ---------------------------------------------------------------------------------------------
# bad input: the same refusals


def raised(call: Callable[[], object]) -> BaseException:
    try:
        call()
    except Exception as exc:  # compared by the caller
        return exc
    raise AssertionError("nothing raised")


def refuse_alike(groups: pl.DataFrame, traces: Traces, gpu: str, eta: float, beta: float, policy: str, seed: int | None = None) -> BaseException:
    """The reference's error, after asserting that the fast path raises the same type with the same message."""
    reference = raised(lambda: replay_groups(groups, traces, gpu, eta, beta, policy, seed=seed, engine="reference"))
    got = raised(lambda: replay_groups(groups, traces, gpu, eta, beta, policy, seed=seed, engine="fast"))
    assert (type(got), str(got)) == (type(reference), str(reference))
    return reference


TRAIN = {"dataset": pl.String, "network": pl.String, "batch_size": pl.Int64, "optimizer": pl.String, "target_metric": pl.Float64,
         "target_epoch": pl.Float64}  # fmt: skip
POWER = {"gpu": pl.String, "dataset": pl.String, "network": pl.String, "batch_size": pl.Int64, "optimizer": pl.String,
         "power_limit": pl.Int64, "time_per_epoch": pl.Float64, "average_power": pl.Float64}  # fmt: skip
SQUAD = ("squad", "bert_base_uncased", "adamw", 84.0)  # 6 epochs at most, b0 32
IMAGENET = ("imagenet", "resnet50", "adadelta", 0.65)  # b0 256


def synthetic(
    train: dict[tuple[str, int], list[float | None]], power: dict[tuple[str, int], dict[int, float]], target_of: dict[str, float] | None = None
) -> Traces:
    """Traces on GPU 'x': train[(dataset, bs)] = target epochs; power[(dataset, bs)] = {limit W: time per epoch s} (power = limit)."""
    spec = {"squad": SQUAD, "imagenet": IMAGENET}
    rows = [(*spec[ds][:2], bs, spec[ds][2], (target_of or {}).get(f"{ds}/{bs}", spec[ds][3]), e) for (ds, bs), epochs in train.items() for e in epochs]
    prows = [("x", *spec[ds][:2], bs, spec[ds][2], limit, tpe, float(limit)) for (ds, bs), limits in power.items() for limit, tpe in limits.items()]
    return from_frames(pl.DataFrame(rows, schema=TRAIN, orient="row"), pl.DataFrame(prows, schema=POWER, orient="row"))


def jobs_of(group: str, dataset: str, spans: list[tuple[float, float]]) -> pl.DataFrame:
    return pl.DataFrame({"group": group, "start_time": [s for s, _ in spans], "end_time": [e for _, e in spans], "dataset": dataset, "runtime_ratio": 1.0})


SEQUENTIAL = [(0.0, 10.0), (1000.0, 1010.0), (2000.0, 2010.0)]
OVERLAPPING = [(0.0, 100.0), (10.0, 110.0)]
LIMITS = {100: 10.0, 200: 8.0}


def test_b0_that_never_reaches_the_target() -> None:
    """Round one: b0 misses (the walk down stops), so does the next size up: no survivor holds b0 for round two."""
    traces = synthetic({("squad", 16): [3, 4, 5], ("squad", 32): [None, None], ("squad", 64): [None, 9]},
                       {("squad", bs): LIMITS for bs in (16, 32, 64)})  # fmt: skip
    groups = jobs_of("g", "squad", SEQUENTIAL)
    error = refuse_alike(groups, traces, "x", 0.5, 2.0, "zeus")
    assert str(error) == "pruning kept no batch size that reached the target (b0 32 missed it)"
    error = refuse_alike(groups, traces, "x", 0.5, 2.0, "default")
    assert str(error) == "job 0 of the group missed the target in 1000 runs"
    both(groups, traces, "x", 0.5, 2.0, "grid-search")
    both(groups, traces, "x", 0.5, 2.0, "oracle")


def test_a_batch_size_without_runs_at_the_target() -> None:
    traces = synthetic({("imagenet", 128): [5], ("imagenet", 256): [10, 12]}, {("imagenet", bs): LIMITS for bs in (128, 256)},
                       target_of={"imagenet/128": 0.5})  # fmt: skip
    groups = jobs_of("g", "imagenet", SEQUENTIAL)
    for policy in ("zeus", "grid-search"):
        error = refuse_alike(groups, traces, "x", 0.5, 2.0, policy)
        assert str(error).startswith("no train-trace run of Job(dataset='imagenet'") and str(error).endswith("at batch size 128 on x")


def test_b0_not_among_the_batch_sizes_and_no_configuration_that_reaches() -> None:
    traces = synthetic({("squad", 16): [3, 4]}, {("squad", 16): LIMITS, ("squad", 24): LIMITS})  # b0 = 24: profiled, never trained
    sequential, overlapping = jobs_of("g", "squad", SEQUENTIAL), jobs_of("g", "squad", OVERLAPPING)
    assert str(refuse_alike(sequential, traces, "x", 0.5, 2.0, "zeus")) == "Default batch size 24 not in [16]."
    for policy in ("default", "grid-search"):
        assert isinstance(refuse_alike(sequential, traces, "x", 0.5, 2.0, policy), KeyError)
    both(sequential, traces, "x", 0.5, 2.0, "oracle")
    assert isinstance(refuse_alike(overlapping, traces, "x", 0.5, 2.0, "oracle"), KeyError)  # a concurrent run at b0
    never = synthetic({("squad", 32): [None, None]}, {("squad", 32): LIMITS})
    assert "ever reaches the target" in str(refuse_alike(sequential, never, "x", 0.5, 2.0, "oracle"))


def test_a_concurrent_run_at_a_limit_b0_was_not_profiled_at() -> None:
    traces = synthetic({("imagenet", 256): [10], ("imagenet", 512): [5]},
                       {("imagenet", 256): LIMITS, ("imagenet", 512): {**LIMITS, 300: 0.5}})  # fmt: skip
    error = refuse_alike(jobs_of("g", "imagenet", OVERLAPPING), traces, "x", 0.5, 2.0, "oracle")
    assert isinstance(error, ValueError) and "not in tuple" in str(error)


def test_the_first_group_in_order_that_fails_is_the_one_reported() -> None:
    traces = synthetic({("imagenet", 128): [5], ("imagenet", 256): [10, 12], ("squad", 16): [3, 4]},
                       {("imagenet", 128): LIMITS, ("imagenet", 256): LIMITS, ("squad", 16): LIMITS, ("squad", 24): LIMITS},
                       target_of={"imagenet/128": 0.5})  # fmt: skip
    fine = jobs_of("a-fine", "imagenet", [(0.0, 10.0)])
    no_run, no_b0 = jobs_of("b", "imagenet", SEQUENTIAL), jobs_of("c", "squad", SEQUENTIAL)
    assert "no train-trace run" in str(refuse_alike(pl.concat([no_b0, no_run, fine]), traces, "x", 0.5, 2.0, "zeus"))
    renamed = pl.concat([no_b0.with_columns(group=pl.lit("b")), no_run.with_columns(group=pl.lit("c")), fine])
    assert "Default batch size" in str(refuse_alike(renamed, traces, "x", 0.5, 2.0, "zeus"))


def test_real_groups_that_fail(traces: Traces, itp: pl.DataFrame) -> None:
    """beta 1 on ITP: pruning empties the batch sizes of one group, a job of another misses forever; the whole trace stops at the first."""
    empty = itp.filter(pl.col("group") == "cluster03/64gpu/2^17s")
    assert "Empty batch size set" in str(refuse_alike(empty, traces, "v100", 0.5, 1.0, "zeus"))
    stuck = itp.filter(pl.col("group") == "cluster08/4gpu/2^14s")
    assert str(refuse_alike(stuck, traces, "v100", 0.5, 1.0, "zeus")) == "job 11 of the group missed the target in 1000 runs"
    refuse_alike(itp, traces, "v100", 0.5, 1.0, "zeus")


def test_bad_tables_and_knobs(traces: Traces) -> None:
    unknown = pl.DataFrame({"group": ["a"], "start_time": [0.0], "end_time": [1.0], "dataset": ["mnist"], "runtime_ratio": [1.0]})
    assert str(refuse_alike(unknown, traces, "v100", 0.5, 2.0, "zeus")).startswith("unknown dataset 'mnist'; expected one of cifar100")
    ok = unknown.with_columns(dataset=pl.lit("squad"))
    assert str(refuse_alike(ok, traces, "v100", 0.5, 2.0, "zeus", seed=-1)) == "seed knob must be >= 0, got -1"
    assert "unknown GPU" in str(refuse_alike(ok, traces, "h100", 0.5, 2.0, "zeus"))
    with pytest.raises(ValueError, match="engine must be one of auto, fast, reference, got 'gpu'"):
        replay_groups(ok, traces, "v100", engine="gpu")


# ---------------------------------------------------------------------------------------------
# loading and the engine choice


def test_one_compiled_signature(traces: Traces, small_groups: pl.DataFrame) -> None:
    """Every call types the kernel the same way: one compilation (or cache load) per process."""
    for policy in POLICIES:
        replay_groups(small_groups.head(500), traces, "rtx6000", 0.0, math.inf, policy, seed=4, engine="fast", progress=True)
    assert len(fast.kernels().replay_groups_kernel.signatures) == 1


def test_engine_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fast.ENGINE_ENV, raising=False)
    fast.kernels()
    assert fast.resolve_engine("reference", 10**6) == "reference" and fast.resolve_engine("fast", 1) == "fast"
    assert fast.resolve_engine(None, 1) == "fast"  # loaded in this process already
    monkeypatch.setattr(fast, "_LOADED", {})
    assert (fast.resolve_engine(None, fast.AUTO_MIN_JOBS - 1), fast.resolve_engine(None, fast.AUTO_MIN_JOBS)) == ("reference", "fast")
    monkeypatch.setenv(fast.ENGINE_ENV, "reference")
    assert fast.resolve_engine(None, 10**6) == "reference" and fast.batch_engine() == "reference"
    monkeypatch.setenv(fast.ENGINE_ENV, "numba")
    with pytest.raises(ValueError, match=r"\$GPU_ENERGY_REPLAY must be one of"):
        fast.resolve_engine(None, 1)
    monkeypatch.delenv(fast.ENGINE_ENV)
    monkeypatch.setattr(fast, "available", lambda: False)
    assert fast.resolve_engine(None, 10**6) == "reference" and fast.batch_engine() == "reference"
    with pytest.raises(fast.FastPathUnavailable, match="needs numba"):
        fast.resolve_engine("fast", 1)


def test_simulate_single_never_imports_numba(mirror: Path, tmp_path: Path) -> None:
    """Nor does the code location (tests/defs/test_definitions.py lists numba among its heavy modules)."""
    code = (
        "import sys\nfrom pipelines.cli import main\n"
        f"try:\n    main(['simulate', 'single', '--trace-dir', {str(mirror / 'zeus')!r}, '--num-recurrence', '2'])\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "import pipelines.zeus.groups, pipelines.zeus.fast, pipelines.clusters.simulate\n"
        "print('NUMBA', 'numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=tmp_path,
                         env={**os.environ, "GPU_ENERGY_HOME": str(tmp_path)})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "NUMBA False"


def _make_read_only(folder: Path) -> None:
    """No new entry in ``folder``, for this user: chmod; for root, which chmod does not stop, the immutable flag."""
    folder.chmod(0o555)
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(folder)], check=True, capture_output=True)
    with pytest.raises(PermissionError):
        (folder / "probe").mkdir()


@pytest.mark.slow
def test_a_read_only_install_caches_in_the_user_wide_folder() -> None:
    """numba's cache beside kernels.py cannot be written: it goes to $XDG_CACHE_HOME/numba, and the next process loads it."""
    root = Path(tempfile.mkdtemp(prefix="gpu-energy-readonly-"))
    package = root / "site" / "pipelines" / "zeus"
    try:
        package.mkdir(parents=True)
        (package.parent / "__init__.py").write_text("")
        (package / "__init__.py").write_text("")
        shutil.copy(REPO_ROOT / "pipelines" / "zeus" / "kernels.py", package)
        _make_read_only(package)
        cache = root / "cache"
        code = (
            f"import pipelines.zeus.kernels as k\nassert k.__file__.startswith({str(root)!r}), k.__file__\n"
            "assert k.py_floordiv(7.0, 2.0) == 3.0\nprint(k.py_floordiv.stats.cache_hits.get(k.py_floordiv.signatures[0], 0))"
        )
        env = {**os.environ, "PYTHONPATH": str(root / "site"), "XDG_CACHE_HOME": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("NUMBA_CACHE_DIR", None)
        runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=root, env=env) for _ in range(2)]
        for run in runs:
            assert run.returncode == 0, run.stderr
        assert [r.stdout.strip() for r in runs] == ["0", "1"]  # compiled, then loaded from the cache
        assert not (package / "__pycache__").exists()
        assert list((cache / "numba").glob("*/kernels.py_floordiv-*.nbi"))
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(package)], check=False, capture_output=True)
        package.chmod(0o755)
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_a_kernel_compiled_in_the_background_is_loaded_by_the_next_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``materialize`` starts while its webserver loads: the replays of its runs then load the kernel, not compile it."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))  # an empty cache: the background process compiles
    process = fast.compile_in_background()
    assert process is not None and process.wait(timeout=600) == 0
    assert list(tmp_path.glob("*/kernels.replay_groups_kernel-*.nbi"))
    code = ("from pipelines.zeus import fast\nk = fast.kernels().replay_groups_kernel\n"
            "print(sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values()))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.split() == ["1", "0"]  # loaded from the cache, nothing compiled


@pytest.mark.slow
def test_processes_load_a_stamped_cache_side_by_side(tmp_path: Path) -> None:
    """Once a process has loaded the kernel under the lock held alone, it stamps the cache: the next ones load under a
    shared lock (beside another loader, not after it); a stamp of another source sends them back to locking alone."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the lock and its stamp in this test's folder
    load = [sys.executable, "-c", "from pipelines.zeus import fast\nfast.kernels()\nprint('loaded')"]
    fast.kernels()  # the cache holds the kernel: the children load it
    assert subprocess.run(load, env=env, capture_output=True, text=True, check=True, timeout=120).stdout == "loaded\n"
    lock = tmp_path / f"gpu-energy-pipelines-numba-{os.getuid()}.lock"
    stamp = lock.with_suffix(".stamp")
    written = stamp.read_text()
    assert written.startswith(str(REPO_ROOT / "pipelines" / "zeus" / "kernels.py"))
    with lock.open("a") as another:
        fcntl.flock(another, fcntl.LOCK_SH)  # a process loading the kernel
        beside = subprocess.run(load, env=env, capture_output=True, text=True, check=False, timeout=30)
        assert beside.returncode == 0 and beside.stdout == "loaded\n", beside.stderr
        stamp.write_text("another source")
        alone = subprocess.Popen(load, env=env, stdout=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):  # it waits for the loader to finish
            alone.wait(timeout=3)
        fcntl.flock(another, fcntl.LOCK_UN)
        assert alone.wait(timeout=120) == 0
    assert stamp.read_text() == written
