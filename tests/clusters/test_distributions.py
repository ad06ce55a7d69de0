"""CDF polylines: the exact KS distance on pairs known in closed form and against scipy, quantiles, shares, the low mode."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest

from pipelines.clusters.distributions import DistributionError, Polyline, ks_distance, mode_window, piecewise_linear, step, upper_share

UNIFORM = piecewise_linear([0, 1], [0, 100])


def test_ks_of_pairs_known_in_closed_form() -> None:
    # U[0,1] vs U[0,2]: F - G = x / 2 on [0, 1], largest at x = 1: 1/2
    assert ks_distance(UNIFORM, piecewise_linear([0, 2], [0, 100])) == pytest.approx(0.5, abs=1e-15)
    # U[0,1] vs U[0.25,1.25]: a shift by 1/4
    assert ks_distance(UNIFORM, piecewise_linear([0.25, 1.25], [0, 100])) == pytest.approx(0.25, abs=1e-15)
    # a point mass at 1/2 vs U[0,1]: the jump meets the uniform at its middle: 1/2 on either side
    assert ks_distance(step([0.5], [1.0]), UNIFORM) == pytest.approx(0.5, abs=1e-15)
    # a 30/70 mixture of atoms at 0 and 2 vs U[0,1]: the step stays at 0.3 while the uniform reaches 1 at x = 1: 0.7
    assert ks_distance(step([0, 2], [3, 7]), UNIFORM) == pytest.approx(0.7, abs=1e-15)
    # a CDF with an atom inside a linear part (the measured curves' repeated x): atom of 0.4 at 0.5 on U[0,1] x 0.6
    mixed = piecewise_linear([0, 0.5, 0.5, 1], [0, 30, 70, 100])
    assert ks_distance(mixed, UNIFORM) == pytest.approx(0.2, abs=1e-15)
    assert ks_distance(UNIFORM, UNIFORM) == 0.0


def test_ks_of_two_samples_is_scipys_statistic(scipy_stats: ModuleType) -> None:
    rng = np.random.default_rng(24)
    for n, m in ((40, 70), (300, 25), (5, 5)):
        a = np.round(rng.normal(0.0, 1.0, n), 1)  # rounded: ties inside and across the samples
        b = np.round(rng.normal(0.3, 1.4, m), 1)
        assert ks_distance(step(a, np.ones(n)), step(b, np.ones(m))) == pytest.approx(scipy_stats.ks_2samp(a, b).statistic, abs=1e-12)


def test_ks_of_a_sample_against_a_continuous_cdf_is_scipys(scipy_stats: ModuleType) -> None:
    rng = np.random.default_rng(7)
    sample = rng.uniform(0, 1, 60)
    assert ks_distance(step(sample, np.ones(60)), UNIFORM) == pytest.approx(scipy_stats.kstest(sample, "uniform").statistic, abs=1e-12)
    # weighted atoms: weight 3 on a value is that value three times
    values, weights = np.array([0.1, 0.4, 0.9]), np.array([3, 1, 2])
    expanded = np.repeat(values, weights)
    assert ks_distance(step(values, weights), UNIFORM) == pytest.approx(scipy_stats.kstest(expanded, "uniform").statistic, abs=1e-12)


def test_cdf_left_limit_quantile_and_scaling() -> None:
    atoms = step([1, 2, 3], [1, 1, 2])
    assert atoms.cdf([0.5, 1, 2.5, 3, 4]).tolist() == [0.0, 0.25, 0.5, 1.0, 1.0]
    assert atoms.cdf_left([1, 2, 3]).tolist() == [0.0, 0.25, 0.5]
    assert [atoms.quantile(q) for q in (0.25, 0.26, 0.5, 0.9, 1.0)] == [1.0, 2.0, 2.0, 3.0, 3.0]
    line = piecewise_linear([10, 20, 20, 40], [0, 50, 80, 100])
    assert line.quantile(0.25) == 15.0 and line.quantile(0.6) == 20.0 and line.quantile(0.9) == 30.0
    assert line.cdf_left(20)[0] == pytest.approx(0.5) and line.cdf(20)[0] == pytest.approx(0.8)
    scaled = line.scaled(100 / 400)
    assert scaled.quantile(0.9) == pytest.approx(7.5) and ks_distance(scaled, line.scaled(0.25)) == 0.0


def test_the_upper_share_of_a_cdf_is_its_top_mass_renormalised() -> None:
    # U[0, 100]: its top quarter is U[75, 100]
    top = upper_share(piecewise_linear([0, 100], [0, 100]), 0.25)
    assert top.x.tolist() == [75.0, 100.0] and top.F.tolist() == [0.0, 1.0]
    assert ks_distance(top, piecewise_linear([75, 100], [0, 100])) == 0.0
    # atoms 10, 20, 30 of weights 1, 1, 2: the top 3/4 is 20 and 30 as 1:2; the top 1/2 is 30 alone
    atoms = step([10, 20, 30], [1, 1, 2])
    assert ks_distance(upper_share(atoms, 0.75), step([20, 30], [1, 2])) == 0.0
    assert ks_distance(upper_share(atoms, 0.5), step([30], [1])) == 0.0
    # the top 0.6 cuts the atom at 20 (0.25 to 0.5): its upper 0.1 stays, 1/6 of the rest; 30 holds 5/6
    assert upper_share(atoms, 0.6).cdf([19.9, 20, 29.9, 30]).tolist() == pytest.approx([0, 1 / 6, 1 / 6, 1])
    # a flat stretch of F at the cut (no mass on [20, 30]) starts the top part at its right end, not its left
    flat = piecewise_linear([0, 20, 30, 40], [0, 50, 50, 100])
    assert upper_share(flat, 0.5).cdf([29.9, 35]).tolist() == [0.0, 0.5]
    # the whole mass is the distribution itself
    line = piecewise_linear([10, 20, 20, 40], [0, 50, 80, 100])
    assert ks_distance(upper_share(line, 1.0), line) == 0.0
    for share in (0.0, 1.5):
        with pytest.raises(ValueError, match="share must be in"):
            upper_share(line, share)


def test_the_densest_window_is_the_mode() -> None:
    # 40% of the mass uniform on [60, 64], the rest spread thinly over [0, 400]
    curve = piecewise_linear([0, 60, 64, 400], [0, 9, 49, 100])
    assert mode_window(curve, 2.5, 200.0, 0.1) == pytest.approx(62.0, abs=0.55)  # any centre whose window holds [60, 64]


@pytest.mark.parametrize("x, F, reason", [
    ([0, 1], [0, 0.9], "end at 1"),
    ([1, 0], [0, 1], "non-decreasing"),
    ([0, 1], [0.6, 0.5], "non-decreasing"),
    ([0, np.nan], [0, 1], "finite"),
    ([], [], "non-zero length"),
])
def test_points_that_are_not_a_cdf_are_refused(x: list[float], F: list[float], reason: str) -> None:
    with pytest.raises(DistributionError, match=reason):
        Polyline(np.array(x, dtype=float), np.array(F, dtype=float))
    with pytest.raises(DistributionError, match="no positive weight"):
        step([1.0], [0.0])
