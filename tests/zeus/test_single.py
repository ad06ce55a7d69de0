"""Single recurring jobs: identical runs to the published simulator (zeus==0.16.0, test-only).

All 6 workloads x 4 GPUs x eta in {0, 0.5, 1} x beta in {2, inf}, seeds 1, 7 and 42 spread over
the knobs (`make test`: three of the six knob pairs, each eta and beta once; `make test-all`: all
six). Each comparison is exact: same batch size, power limit and reached flag, and the same
float64 energy and time (bit for bit, tighter than the required 1e-9 relative).
"""

from __future__ import annotations

import math

import pytest

from pipelines.zeus.errors import SimulationError
from pipelines.zeus.groups import group_job_spec
from pipelines.zeus.single import simulate_single
from pipelines.zeus.traces import Traces, build_table
from tests.support.zeus_peer import ARTIFACT_JOBS, GPUS

#: tests/support/zeus_peer.py: the published simulator driven as the artifact scripts drive it.
DATASETS: tuple[str, ...] = tuple(ARTIFACT_JOBS)
KNOBS = [(eta, beta) for eta in (0.0, 0.5, 1.0) for beta in (2.0, math.inf)]
SEEDS = (1, 7, 42)
#: The knob pairs (indices in KNOBS) that `make test` compares: every eta and every beta once. `make test-all`
#: compares the other three too (marked slow: the published simulator's 0.1 s a run, 72 runs more).
QUICK_KNOBS = (0, 3, 4)
#: Enough recurrences to finish both pruning rounds and run Thompson Sampling for most workloads.
RECURRENCES = 32


def ours(traces: Traces, gpu: str, dataset: str, eta: float, beta: float, seed: int, n: int | None) -> list[tuple]:
    table = build_table(traces, gpu, group_job_spec(traces, gpu, dataset))
    return [(r.bs, r.pl, r.energy, r.time, r.reached) for r in simulate_single(table, eta, beta, seed, n)]


@pytest.mark.parametrize("knobs", [pytest.param(QUICK_KNOBS, id="quick"),
                                   pytest.param(tuple(k for k in range(len(KNOBS)) if k not in QUICK_KNOBS), id="rest", marks=pytest.mark.slow)])
@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("dataset", DATASETS)
def test_identical_to_published_simulator(peer, traces: Traces, gpu: str, dataset: str, knobs: tuple[int, ...]) -> None:
    job = peer.artifact_job(gpu, dataset)
    for k in knobs:
        (eta, beta), seed = KNOBS[k], SEEDS[k % len(SEEDS)]
        expected = peer.single(gpu, job, eta, beta, seed, RECURRENCES)
        got = ours(traces, gpu, dataset, eta, beta, seed, RECURRENCES)
        assert len(got) >= RECURRENCES
        assert got == expected, f"{gpu} {dataset} eta={eta} beta={beta} seed={seed}"


@pytest.mark.parametrize(
    ("gpu", "dataset", "eta", "beta", "seed"),
    [("v100", "librispeech", 0.5, 2.0, 3), ("a40", "movielens-1m", 1.0, 2.0, 5), ("p100", "cifar100", 0.0, math.inf, 9)],
)
def test_identical_over_the_papers_recurrence_count(peer, traces: Traces, gpu: str, dataset: str, eta: float, beta: float, seed: int) -> None:
    """Full length (2 x |B| x |P| recurrences): deep into Thompson Sampling."""
    job = peer.artifact_job(gpu, dataset)
    expected = peer.single(gpu, job, eta, beta, seed)
    assert len(expected) >= peer.default_recurrences(gpu, job)
    assert ours(traces, gpu, dataset, eta, beta, seed, None) == expected


def test_default_recurrences_and_batch_sizes_match_the_artifact(peer, traces: Traces) -> None:
    for gpu in GPUS:
        for dataset in DATASETS:
            job = peer.artifact_job(gpu, dataset)
            table = build_table(traces, gpu, group_job_spec(traces, gpu, dataset))
            assert table.spec.default_bs == job.default_bs
            assert table.default_recurrences == peer.default_recurrences(gpu, job)
            sim = peer._simulator(gpu, 1, concurrency=False)
            assert list(table.batch_sizes) == [int(b) for b in sim._profile_batch_size_range(job)]
            assert table.max_power == sim.df.power_limit.max()


def test_first_recurrence_miss_raises_like_the_published_simulator(peer, traces: Traces) -> None:
    """b0 missing the target in recurrence 1 is an error in both (here: imagenet capped at 1 epoch)."""
    from zeus._legacy.job import Job

    spec = group_job_spec(traces, "v100", "imagenet")
    short = type(spec)(spec.dataset, spec.network, spec.optimizer, spec.target_metric, 1, spec.default_bs)
    with pytest.raises(RuntimeError, match="did not converge"):
        peer.single("v100", Job(spec.dataset, spec.network, spec.optimizer, spec.target_metric, 1, spec.default_bs), 0.5, 2.0, 1, 4)
    with pytest.raises(SimulationError, match="did not converge"):
        simulate_single(build_table(traces, "v100", short), 0.5, 2.0, 1, 4)


@pytest.mark.parametrize(("gpu", "dataset"), [("v100", "squad"), ("a40", "cifar100"), ("v100", "imagenet")])
def test_too_tight_early_stopping_fails_like_the_published_simulator(peer, traces: Traces, gpu: str, dataset: str) -> None:
    """beta 0.3: runs are cut before reaching the target; both simulators stop with the same error."""
    with pytest.raises((ValueError, RuntimeError)) as published:
        peer.single(gpu, peer.artifact_job(gpu, dataset), 0.5, 0.3, 3, 40)
    with pytest.raises(SimulationError) as got:
        ours(traces, gpu, dataset, 0.5, 0.3, 3, 40)
    assert str(got.value) == str(published.value)
