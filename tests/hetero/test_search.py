"""The Zeus² search: hand-computed optima, the published tie-break, coarse-grid brute force and N GPUs."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import polars as pl
import pytest

from pipelines.hetero import compositions
from pipelines.hetero.fit import GpuFit, fit_gpu, fit_profiles
from pipelines.hetero.model import CostModel
from pipelines.hetero.search import (
    Grid,
    SearchTooLarge,
    baseline,
    brute_force,
    evaluate,
    heuristic,
    optimise,
)
from pipelines.ingest.zeus2 import read_profile_folder
from tests.support.hetero_peer import peer_find_optimal_allocation, peer_top

BATCHES = (32, 64, 128, 256, 512, 1024)


@pytest.fixture(scope="module")
def hetero_fits(mirror) -> dict[tuple[str, str], GpuFit]:
    return fit_profiles(read_profile_folder(mirror / "zeus2"))


def profile(gpu: str, limits: dict[int, tuple[float, float, float]], power_w: dict[int, float]) -> pl.DataFrame:
    """A profile whose time is exactly c2 b^2 + c1 b + c0 (``limits[p]``) and whose average power is ``power_w[p]``."""
    rows = []
    for b in BATCHES:
        for p, (c2, c1, c0) in limits.items():
            t = c2 * b * b + c1 * b + c0
            rows.append({"gpu": gpu, "workload": "w", "batch_size": b, "power_limit": p, "energy_j": power_w[p] * t, "time_s": t})
    return pl.DataFrame(rows)


def exact_fit(gpu: str, limits: Sequence[int], time_coef: Sequence[Sequence[float]], power_coef: Sequence[Sequence[float]]) -> GpuFit:
    return GpuFit(gpu, "w", np.array(limits, dtype=np.int64), np.array(time_coef, dtype=float), np.array(power_coef, dtype=float))


# ---------------------------------------------------------------------------------------------
# closed forms


def test_published_quadratic_times_split_in_inverse_ratio() -> None:
    """cost_i = k_i b_i^2 with k_i = (P_i / 2 + p_i / 2) c_i: the optimum is b_1 = k_2 G / (k_1 + k_2)."""
    # GPU 1: k(150 W) = (110/2 + 150/2) 1e-6 = 130e-6, k(100 W) = (80/2 + 100/2) 1.5e-6 = 135e-6
    # GPU 2: k(70 W) = (60/2 + 70/2) 6e-6 = 390e-6,   k(60 W) = (50/2 + 60/2) 7.5e-6 = 412.5e-6
    a10 = fit_gpu(profile("a10", {150: (1e-6, 0, 0), 100: (1.5e-6, 0, 0)}, {150: 110.0, 100: 80.0}))
    t4 = fit_gpu(profile("t4", {70: (6e-6, 0, 0), 60: (7.5e-6, 0, 0)}, {70: 60.0, 60: 50.0}))
    k1, k2, g = 130e-6, 390e-6, 4096
    best = brute_force([a10, t4], Grid(), CostModel())
    assert best.batch_split == (3072, 1024)  # k2 / (k1 + k2) = 3/4 of 4096
    assert best.power_limits == (150, 70)  # the smaller k of each GPU
    assert best.cost == pytest.approx(k1 * 3072**2 + k2 * 1024**2, rel=1e-9)
    assert best.candidates == 4095 * 2 * 2
    # heuristic: GPU 1 at 100 W (k1 = 135e-6): b_1 = 390/525 x 4096 = 3042.7 -> 3043 (the parabola's nearest integer)
    pinned = heuristic([a10, t4], Grid(), CostModel())
    assert (pinned.batch_split, pinned.power_limits) == ((3043, 1053), (100, 70))
    assert pinned.cost == pytest.approx(135e-6 * 3043**2 + k2 * 1053**2, rel=1e-9)
    even = baseline([a10, t4], Grid(), CostModel())
    assert (even.batch_split, even.power_limits) == ((2048, 2048), (150, 70))
    assert even.cost == pytest.approx((k1 + k2) * 2048**2, rel=1e-9)
    assert best.cost < pinned.cost < even.cost
    assert best.energy_j == pytest.approx(110 * 1e-6 * 3072**2 + 60 * 6e-6 * 1024**2, rel=1e-9)
    assert g == sum(best.batch_split)


def test_sync_time_only_balances_the_two_gpus() -> None:
    """eta = 0: cost = (p_1 + p_2) max(a_1 b_1, a_2 b_2), lowest where a_1 b_1 = a_2 b_2, i.e. b_1 = a_2 G / (a_1 + a_2)."""
    a10 = fit_gpu(profile("a10", {150: (0, 0.001, 0), 100: (0, 0.0015, 0)}, {150: 120.0, 100: 90.0}))
    t4 = fit_gpu(profile("t4", {70: (0, 0.003, 0), 60: (0, 0.004, 0)}, {70: 65.0, 60: 58.0}))
    model = CostModel("sync", eta=0.0, idle_power_w=(20.0, 10.0))
    best = brute_force([a10, t4], Grid(), model)
    # per limit pair: (150, 70) 220 W x 3.072 s = 675.84 J; (150, 60) 210 x 3.277; (100, 70) 170 x 4.0965; (100, 60) 160 x 4.4685
    assert (best.batch_split, best.power_limits) == ((3072, 1024), (150, 70))
    assert best.time_s == pytest.approx(3.072, rel=1e-12)
    assert best.gpu_time_s == pytest.approx((3.072, 3.072), rel=1e-12)
    assert best.cost == pytest.approx(220 * 3.072, rel=1e-12)
    # balanced: nobody waits, so the energy is the busy energy, and the published model agrees on it
    assert best.energy_j == pytest.approx(120 * 3.072 + 65 * 3.072, rel=1e-9)
    published = evaluate([a10, t4], best.batch_split, best.power_limits, CostModel("published", eta=0.0))
    assert published.cost == pytest.approx(best.cost, rel=1e-12)


def test_sync_energy_only_charges_the_waiting_gpu_its_idle_power() -> None:
    """eta = 1 and one limit each: energy = sum P_i a_i b_i + I_j (T - T_j), piecewise linear in b_1 with a kink at balance."""
    a10 = fit_gpu(profile("a10", {150: (0, 0.001, 0)}, {150: 100.0}))
    t4 = fit_gpu(profile("t4", {70: (0, 0.003, 0)}, {70: 60.0}))
    # b_1 <= 3072 (T4 slower): E = 0.1 b1 + 0.18 (4096 - b1) + 20 (0.003 (4096 - b1) - 0.001 b1) = 983.04 - 0.16 b1: falls
    # b_1 >= 3072 (A10 slower): E = 0.1 b1 + 0.18 (4096 - b1) + 5 (0.001 b1 - 0.003 (4096 - b1)) = 675.84 - 0.06 b1: falls
    model = CostModel("sync", eta=1.0, idle_power_w=(20.0, 5.0))
    best = brute_force([a10, t4], Grid(), model)
    assert best.batch_split == (4095, 1)
    assert best.energy_j == pytest.approx(675.84 - 0.06 * 4095, rel=1e-9)
    assert best.cost == best.energy_j
    at_balance = evaluate([a10, t4], (3072, 1024), (150, 70), model)
    assert at_balance.energy_j == pytest.approx(983.04 - 0.16 * 3072, rel=1e-9)
    below = evaluate([a10, t4], (2000, 2096), (150, 70), model)
    assert below.energy_j == pytest.approx(983.04 - 0.16 * 2000, rel=1e-9)


def test_eta_and_time_price_enter_the_cost_as_documented() -> None:
    a10 = exact_fit("a10", [150, 100], [[0, 0.001, 0.5], [0, 0.002, 0.5]], [[0, 0, 120.0], [0, 0, 90.0]])
    t4 = exact_fit("t4", [70, 60], [[0, 0.003, 0.1], [0, 0.004, 0.1]], [[0, 0, 65.0], [0, 0, 55.0]])
    split, limits = (1000, 3096), (100, 60)
    t1, t2 = 0.002 * 1000 + 0.5, 0.004 * 3096 + 0.1
    for eta in (0.0, 0.3, 1.0):
        published = evaluate([a10, t4], split, limits, CostModel("published", eta=eta))
        assert published.cost == pytest.approx((eta * 90 + (1 - eta) * 100) * t1 + (eta * 55 + (1 - eta) * 60) * t2, rel=1e-12)
        zeus_price = evaluate([a10, t4], split, limits, CostModel("published", eta=eta, time_price="max_power_limit"))
        assert zeus_price.cost == pytest.approx((eta * 90 + (1 - eta) * 150) * t1 + (eta * 55 + (1 - eta) * 70) * t2, rel=1e-12)
        sync = evaluate([a10, t4], split, limits, CostModel("sync", eta=eta))  # default idle: 0.2 x lowest limit = 20 W, 12 W
        energy = 90 * t1 + 55 * t2 + 20 * (t2 - t1)
        assert sync.time_s == pytest.approx(t2)
        assert sync.energy_j == pytest.approx(energy, rel=1e-12)
        assert sync.cost == pytest.approx(eta * energy + (1 - eta) * (100 + 60) * t2, rel=1e-12)


def test_negative_fitted_values_are_clipped_to_zero() -> None:
    falling = exact_fit("a10", [100], [[0, -0.001, 1.0]], [[0, -1.0, 500.0]])  # time < 0 past b = 1000, power < 0 past 500
    other = exact_fit("t4", [60], [[0, 0.001, 0]], [[0, 0, 50.0]])
    clipped = evaluate([falling, other], (2000, 2096), (100, 60), CostModel())
    assert clipped.gpu_time_s[0] == 0.0
    assert clipped.cost == pytest.approx((0.5 * 50 + 0.5 * 60) * 2.096, rel=1e-12)
    assert np.all(falling.power_w(np.array([400, 600])) == np.array([[100.0, 0.0]]))


# ---------------------------------------------------------------------------------------------
# the published semantics: tie-break and the coarse-grid nested loops


def test_ties_go_to_the_smallest_split_and_the_first_limits_in_profile_order() -> None:
    # every candidate costs the same: per GPU (P/2 + p/2) x 1 s with P = 400 - p, i.e. 200 J
    a10 = exact_fit("a10", [300, 100], [[0, 0, 1.0]] * 2, [[0, 0, 100.0], [0, 0, 300.0]])
    t4 = exact_fit("t4", [70, 60], [[0, 0, 1.0]] * 2, [[0, 0, 330.0], [0, 0, 340.0]])
    grid = Grid(4096, 64)
    best = brute_force([a10, t4], grid, CostModel())
    assert (best.batch_split, best.power_limits, best.cost) == ((64, 4032), (300, 70), 400.0)
    loops = _peer_top([a10, t4], grid, naive=True)
    assert loops == ((64, 300.0), (4032, 70.0), 400.0)
    sync = brute_force([a10, t4], grid, CostModel("sync"))
    assert (sync.batch_split, sync.power_limits) == ((64, 4032), (300, 70))


def _peer_top(fits: Sequence[GpuFit], grid: Grid, naive: bool) -> tuple:
    first, second = fits
    results, _ = peer_find_optimal_allocation(
        [float(w) for w in first.power_limits], [float(w) for w in second.power_limits], naive,
        first.time_coef, second.time_coef, first.power_coef, second.power_coef, grid.global_batch, grid.granularity,
    )  # fmt: skip
    (pair_1, pair_2), cost = peer_top(results)
    return pair_1, pair_2, cost


@pytest.mark.parametrize("workload", ["cifar100", "imagenet"])
def test_coarse_grid_matches_the_published_loops_bit_for_bit(hetero_fits: dict, workload: str) -> None:
    fits = [hetero_fits[(workload, "a10")], hetero_fits[(workload, "t4")]]
    for grid in (Grid(4096, 64), Grid(2048, 32), Grid(1000, 8)):
        for method, naive in ((brute_force, True), (heuristic, False)):
            ours = method(fits, grid, CostModel())
            (b1, w1), (b2, w2), cost = _peer_top(fits, grid, naive)
            assert (ours.batch_split, ours.power_limits) == ((b1, b2), (int(w1), int(w2)))
            assert ours.cost == cost  # same float64 operations in the same order


@pytest.mark.parametrize("workload", ["cifar100", "imagenet"])
def test_sync_search_matches_scalar_loops(hetero_fits: dict, workload: str) -> None:
    fits = [hetero_fits[(workload, "a10")], hetero_fits[(workload, "t4")]]
    grid, model = Grid(4096, 64), CostModel("sync", eta=0.4, idle_power_w=(25.0, 9.0))
    best: tuple | None = None
    for b1 in range(64, 4096, 64):  # the published loop order: b1, then limit 1, then limit 2; first minimum kept
        for i, p1 in enumerate(fits[0].power_limits):
            for j, p2 in enumerate(fits[1].power_limits):
                cost = _scalar_sync(fits, (b1, 4096 - b1), (i, j), (p1, p2), model.eta, (25.0, 9.0))
                if best is None or cost < best[0]:
                    best = (cost, (b1, 4096 - b1), (int(p1), int(p2)))
    ours = brute_force(fits, grid, model)
    assert best is not None
    assert (ours.cost, ours.batch_split, ours.power_limits) == best


def _scalar_sync(fits, split, rows, limits, eta, idle) -> float:
    times, powers = [], []
    for f, b, r in zip(fits, split, rows, strict=True):
        t = f.time_coef[r][0] * b**2 + f.time_coef[r][1] * b + f.time_coef[r][2]
        p = f.power_coef[r][0] * b**2 + f.power_coef[r][1] * b + f.power_coef[r][2]
        times.append(max(t, 0.0))
        powers.append(max(p, 0.0))
    slowest = max(times)
    busy = sum(p * t for p, t in zip(powers, times, strict=True))
    waiting = sum(i * (slowest - t) for i, t in zip(idle, times, strict=True))
    price = sum(float(w) for w in limits)
    return eta * (busy + waiting) + (1.0 - eta) * price * slowest


# ---------------------------------------------------------------------------------------------
# N GPUs


def _third_gpu(t4: GpuFit) -> GpuFit:
    """A third GPU: the T4's fits with time x 0.7 and power x 1.3."""
    return GpuFit("t4b", t4.workload, t4.power_limits + 5, t4.time_coef * 0.7, t4.power_coef * 1.3)


@pytest.mark.parametrize("kind", ["published", "sync"])
def test_three_gpus_match_scalar_enumeration(hetero_fits: dict, kind: str) -> None:
    a10, t4 = hetero_fits[("cifar100", "a10")], hetero_fits[("cifar100", "t4")]
    fits = [a10, t4, _third_gpu(t4)]
    grid, model = Grid(1024, 64), CostModel(kind, eta=0.6)
    best = None
    for split_units in itertools.product(range(1, 16), repeat=3):
        if sum(split_units) != 16:
            continue
        split = tuple(u * 64 for u in split_units)
        for limits in itertools.product(*(f.power_limits.tolist() for f in fits)):
            cost = evaluate(fits, split, limits, model).cost
            if best is None or cost < best[0]:
                best = (cost, split, limits)
    ours = brute_force(fits, grid, model)
    assert best is not None
    assert (ours.cost, ours.batch_split, ours.power_limits) == best
    assert ours.candidates == math.comb(15, 2) * 5 * 3 * 3


@pytest.mark.parametrize("n", [3, 4])
def test_dynamic_programme_finds_the_enumerated_optimum(hetero_fits: dict, n: int) -> None:
    a10, t4 = hetero_fits[("imagenet", "a10")], hetero_fits[("imagenet", "t4")]
    fits = [a10, t4, _third_gpu(t4), _third_gpu(_third_gpu(t4))][:n]
    grid = Grid(2048, 16)
    enumerated = brute_force(fits, grid, CostModel())
    programmed = brute_force(fits, grid, CostModel(), max_candidates=1)  # too many to enumerate -> min-plus DP
    assert programmed.batch_split == enumerated.batch_split
    assert programmed.power_limits == enumerated.power_limits
    assert programmed.cost == pytest.approx(enumerated.cost, rel=1e-12)


def test_large_sync_searches_are_refused_with_a_suggestion(hetero_fits: dict) -> None:
    t4 = hetero_fits[("cifar100", "t4")]
    fits = [hetero_fits[("cifar100", "a10")], t4, _third_gpu(t4)]
    with pytest.raises(SearchTooLarge, match=r"8,382,465 splits x 45 limit combinations.*--granularity"):
        brute_force(fits, Grid(), CostModel("sync"), max_candidates=10**8)


def test_compositions_are_every_split_in_lexicographic_order() -> None:
    for total, parts, chunk in [(9, 2, 3), (9, 3, 4), (12, 4, 7), (10, 5, 1000), (3, 4, 2)]:
        got = [tuple(int(v) for v in row) for block in compositions.chunks(total, parts, chunk) for row in block]
        expected = [s for s in itertools.product(range(1, total + 1), repeat=parts) if sum(s) == total]
        assert got == expected
        assert len(got) == compositions.count(total, parts)


def test_bad_grids_and_splits_are_refused(hetero_fits: dict) -> None:
    fits = [hetero_fits[("cifar100", "a10")], hetero_fits[("cifar100", "t4")]]
    with pytest.raises(ValueError, match="not a multiple of the granularity 3"):
        Grid(4096, 3)
    with pytest.raises(ValueError, match="need 2 positive multiples of 64 summing to 4096"):
        optimise(fits, Grid(4096, 64), CostModel(), fixed_split=(2000, 2096))
    with pytest.raises(ValueError, match="cannot give 2 GPUs a share each"):
        brute_force(fits, Grid(64, 64), CostModel())
    with pytest.raises(ValueError, match="eta 1.5: must be in"):
        CostModel(eta=1.5)
    with pytest.raises(ValueError, match="no power limit 90 W"):
        evaluate(fits, (2048, 2048), (90, 60), CostModel())
    with pytest.raises(ValueError, match="3 idle powers for 2 GPUs"):
        evaluate(fits, (2048, 2048), (100, 60), CostModel("sync", idle_power_w=(1.0, 2.0, 3.0)))
