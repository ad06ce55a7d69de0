"""The report's totals (pipelines/clusters/samples.py: each draw's energy, time, steady state, CO2e and cost summed over its
runs and rows) on runs small enough to add up by hand; every expected number is written out here."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from pipelines.clusters import samples
from pipelines.clusters.replayed import RowJobs, RowRuns, Runs
from pipelines.ingest.grid import Rate

KWH = 3.6e6  # J


def runs(energy_j: list[float], time_s: list[float], start_s: list[float] | None = None, job: list[int] | None = None) -> Runs:
    n = len(energy_j)
    return Runs(np.array(job if job is not None else range(n), dtype=np.int64), np.array(start_s or [0.0] * n), np.array(time_s),
                np.array(energy_j))


def row(policies: dict[str, Runs], dataset: list[int] | None = None, datasets: list[str] | None = None) -> RowRuns:
    n = max(len(r.job) for r in policies.values())
    jobs = RowJobs(order=np.arange(n), names=["g"], group=np.zeros(n, dtype=np.int64), bounds=np.array([0, n]),
                   start_s=np.zeros(n), end_s=np.ones(n), num_gpu=np.ones(n), job=np.arange(n))
    return RowRuns(jobs, datasets or ["a"], np.array(dataset or [0] * n, dtype=np.int64), policies)


def test_sums_adds_values_per_key_keys_sorted() -> None:
    keys, sums = samples._sums(np.array([3, 1, 3, 2, 1]), np.array([1.0, 2.0, 4.0, 8.0, 16.0]))
    assert keys.tolist() == [1, 2, 3]
    assert sums.tolist() == [18.0, 8.0, 5.0]
    keys, sums = samples._sums(np.array([7]), np.array([2.5]))
    assert (keys.tolist(), sums.tolist()) == ([7], [2.5])
    keys, sums = samples._sums(np.zeros(0, dtype=np.int64), np.zeros(0))
    assert keys.size == 0 and sums.size == 0


def test_sums_add_each_keys_values_in_their_given_order() -> None:
    """Bit for bit wherever a draw runs: each key's values are added in the order given (a stable sort). Floating-point
    addition is not associative, so an unstable sort (numpy's default, which reorders equal keys of a long array) changes the
    last bits; the expectation adds each key's values, picked out in order by a mask, with the same reduction."""
    rng = np.random.default_rng(0)
    keys, values = rng.integers(0, 3, size=200), rng.lognormal(0.0, 3.0, size=200)
    found, sums = samples._sums(keys, values)
    assert found.tolist() == [0, 1, 2]
    assert sums.tolist() == [float(np.add.reduceat(values[keys == k], [0])[0]) for k in (0, 1, 2)]


def test_totals_sum_each_policy_over_every_row() -> None:
    first = row({"default": runs([1e6, 2e6], [10.0, 20.0]), "zeus": runs([0.5e6, 1.5e6], [12.0, 22.0])})
    second = row({"default": runs([3e6], [30.0]), "zeus": runs([2e6], [35.0]), "carbon-aware": runs([1.8e6], [40.0])})
    assert samples._totals([first]) == {"default_j": 3e6, "default_s": 30.0, "zeus_j": 2e6, "zeus_s": 34.0}
    assert samples._totals([first, second]) == {"default_j": 6e6, "default_s": 60.0, "zeus_j": 4e6, "zeus_s": 69.0,
                                                "carbon_aware_j": 1.8e6, "carbon_aware_s": 40.0}


def test_runs_of_no_row_are_empty_and_total_zero() -> None:
    assert samples._runs([], "default", "energy_j").tolist() == []
    only_default = row({"default": runs([5.0], [1.0])})
    assert samples._runs([only_default], "zeus", "time_s").tolist() == []
    assert samples._totals([]) == {"default_j": 0.0, "default_s": 0.0, "zeus_j": 0.0, "zeus_s": 0.0}


def test_steady_totals_weigh_default_energy_by_each_workloads_ratio() -> None:
    # Jobs 0..2 play workloads b, a, b; Default's runs are of jobs 2, 0, 1 (10, 20, 30 J): b has 30 J, a 30 J.
    r = row({"default": runs([10.0, 20.0, 30.0], [1.0, 1.0, 1.0], job=[2, 0, 1]), "zeus": runs([1.0], [1.0])},
            dataset=[1, 0, 1], datasets=["a", "b"])
    assert samples._steady(r, {"a": 0.5, "b": 0.25}) == {"steady_default_j": 60.0, "steady_zeus_j": 22.5}
    assert samples._steady(r, None) == {"steady_default_j": None, "steady_zeus_j": None}
    assert samples._steady(r, {}) == {"steady_default_j": None, "steady_zeus_j": None}


def test_priced_weighs_each_runs_kwh_by_the_rate_while_it_ran() -> None:
    grid = Rate(np.array([100.0, 300.0]), {}, times_s=np.array([0.0, 3600.0]), step_s=3600.0)  # g CO2e per kWh
    # Default: 1 kWh in the first hour (100 g), 2 kWh in the second (600 g). Zeus: 0.5 kWh over 00:00-00:30 (50 g) and 1 kWh
    # over 00:30-01:30 at a mean (100 + 300) / 2 (200 g). Price 0.25 per kWh throughout.
    r = row({"default": runs([KWH, 2 * KWH], [3600.0, 3600.0], [0.0, 3600.0]),
             "zeus": runs([0.5 * KWH, KWH], [1800.0, 3600.0], [0.0, 1800.0])})
    plan = SimpleNamespace(grid=grid, prices=Rate.constant(0.25, {}))
    assert samples._priced(r, plan) == {"default_co2e_g": 700.0, "zeus_co2e_g": 250.0, "carbon_aware_co2e_g": None,
                                        "default_cost": 0.75, "zeus_cost": 0.375, "carbon_aware_cost": None}
    unpriced = samples._priced(r, SimpleNamespace(grid=None, prices=Rate.constant(0.5, {})))
    assert unpriced == {"default_co2e_g": None, "zeus_co2e_g": None, "carbon_aware_co2e_g": None,
                        "default_cost": 1.5, "zeus_cost": 0.75, "carbon_aware_cost": None}


def test_priced_covers_the_carbon_aware_runs_where_replayed() -> None:
    r = row({"default": runs([KWH], [60.0]), "zeus": runs([KWH], [60.0]), "carbon-aware": runs([0.5 * KWH], [60.0])})
    out = samples._priced(r, SimpleNamespace(grid=Rate.constant(400.0, {}), prices=None))
    assert (out["carbon_aware_co2e_g"], out["default_co2e_g"], out["carbon_aware_cost"]) == (200.0, 400.0, None)


def test_summed_adds_up_the_rows_or_is_none_where_a_row_has_none() -> None:
    rows = {"a": {"x": 1.0, "y": None, "z": 2.0}, "b": {"x": 2.5, "y": 3.0, "z": 0.5}}
    assert samples._summed(rows, ("x", "y", "z")) == {"x": 3.5, "y": None, "z": 2.5}
    assert samples._summed({"a": {"x": 4.0}}, ("x",)) == {"x": 4.0}
