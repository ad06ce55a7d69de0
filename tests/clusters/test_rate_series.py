"""The grid and price series' arithmetic (``pipelines.ingest.grid.Rate``) on a three-hour series whose means are computed by
hand: a run's intensity or price is the time-weighted mean of the step series over the run, the first and last values
extended beyond the series, a zero-length run takes the value in force at its start."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

from pipelines.ingest.grid import Rate


def hourly() -> Rate:
    """100 from 00:00, 300 from 01:00, 200 from 02:00 to 03:00 (UTC, 1970-01-01), an hourly step."""
    return Rate(np.array([100.0, 300.0, 200.0]), {}, times_s=np.array([0.0, 3600.0, 7200.0]), step_s=3600.0)


def test_means_are_time_weighted_over_each_run() -> None:
    start = np.array([0.0, 1800.0, 0.0, 3600.0])
    end = np.array([10800.0, 9000.0, 3600.0, 5400.0])
    # (100 + 300 + 200) x 3600 / 10800; (100 x 1800 + 300 x 3600 + 200 x 1800) / 7200; 100 over its hour; 300 over half of its.
    assert hourly().means(start, end).tolist() == [200.0, 225.0, 100.0, 300.0]


def test_beyond_the_series_the_first_and_last_values_hold() -> None:
    start = np.array([-3600.0, 9000.0, -7200.0, 10800.0])
    end = np.array([3600.0, 12600.0, -3600.0, 14400.0])
    # 100 x 7200 / 7200; (200 x 1800 + 200 x 1800) / 3600; wholly before: 100; wholly after: 200.
    assert hourly().means(start, end).tolist() == [100.0, 200.0, 100.0, 200.0]
    # Straddling both ends: (100 x 3600 before + (100 + 300 + 200) x 3600 inside + 200 x 3600 after) / 18000 = 180.
    assert hourly().means(np.array([-3600.0]), np.array([14400.0])).tolist() == [180.0]


def test_a_zero_length_run_takes_the_value_in_force_at_its_start() -> None:
    at = np.array([3600.0, 5400.0, 0.0, -10.0, 7199.0, 20000.0])
    assert hourly().means(at, at).tolist() == [300.0, 300.0, 100.0, 100.0, 300.0, 200.0]


def test_a_run_of_a_second_or_less_is_still_a_mean() -> None:
    # Half a second at 100, half at 300 (1 s in all); a quarter second at 100, a quarter at 300.
    rate = hourly()
    assert rate.means(np.array([3599.5, 3599.75]), np.array([3600.5, 3600.25])).tolist() == [200.0, 200.0]


def test_a_zero_length_run_warns_of_nothing() -> None:
    """0 / 0 for a zero-length run is replaced by the value at its start: numpy is told so, and says nothing."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hourly().means(np.array([100.0, 0.0]), np.array([100.0, 3600.0])).tolist() == [100.0, 100.0]


def test_a_constant_is_its_value_for_any_run() -> None:
    rate = Rate.constant(42, {"what": "x"})
    assert rate.describe == {"what": "x"} and rate.times_s is None
    assert rate.means(np.array([0.0, 5.0, -1.0]), np.array([10.0, 5.0, 1e9])).tolist() == [42.0, 42.0, 42.0]
    none = rate.uncovered(np.array([-1.0]), np.array([1e12]))
    assert none.tolist() == [] and np.array([5.0])[none].tolist() == []  # indices: an empty float array cannot index
    starts, ends = rate.gaps()
    assert starts.tolist() == [] and ends.tolist() == []


def test_uncovered_are_the_runs_reaching_outside_the_series() -> None:
    start = np.array([-1.0, 0.0, 100.0, 10000.0, 0.0])
    end = np.array([10.0, 10800.0, 10801.0, 10800.0, 0.0])
    assert hourly().uncovered(start, end).tolist() == [0, 2]


def test_a_gap_is_a_step_longer_than_one_and_a_half_usual_steps() -> None:
    # Steps of 3600, 5400 (1.5 steps: not a gap) and 90000 s (a gap from one step after 9000 s to 99000 s).
    rate = Rate(np.array([1.0, 2.0, 3.0, 4.0]), {}, times_s=np.array([0.0, 3600.0, 9000.0, 99000.0]), step_s=3600.0)
    starts, ends = rate.gaps()
    assert starts.tolist() == [12600.0]
    assert ends.tolist() == [99000.0]


def test_the_span_runs_to_one_step_after_the_last_reading() -> None:
    assert hourly().span_text() == "1970-01-01T00:00Z to 1970-01-01T03:00Z"


def test_the_span_is_utc_whatever_the_machines_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert hourly().span_text() == "1970-01-01T00:00Z to 1970-01-01T03:00Z"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_series_that_starts_later_extends_its_first_value_back() -> None:
    # 100 from 1970-01-02T00:00 (86400 s), 300 from 01:00: a run from 23:00 the day before to 01:00 holds 100 throughout; one
    # from 23:00 to 02:00 averages (100 x 7200 + 300 x 3600) / 10800 = 166.66...
    rate = Rate(np.array([100.0, 300.0]), {}, times_s=np.array([86400.0, 90000.0]), step_s=3600.0)
    assert rate.means(np.array([82800.0, 82800.0]), np.array([90000.0, 93600.0])).tolist() == [100.0, 1800000.0 / 10800.0]
