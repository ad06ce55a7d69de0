"""The JIT profiler's power-limit choice (``BatchSizeTable.epoch_costs`` and ``best_power_limit``) on limits whose epoch costs
are computed by hand: (eta x P_avg + (1 - eta) x P_max,bs) x T_epoch, the lowest wins, a tie goes to the higher limit (Zeus
profiles from the highest limit down and keeps the first of equal costs; tests/zeus/test_tables.py holds the same tie against
zeus 0.16.0's optimizer)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from pipelines.zeus.traces import BatchSizeTable, TraceError, from_frames, max_power


def table(limits: tuple[int, ...], power: tuple[float, ...], time: tuple[float, ...]) -> BatchSizeTable:
    """A batch size profiled at ``limits`` (W) with these average powers (W) and epoch times (s); the rest is not read here."""
    return BatchSizeTable(batch_size=32, power_limits=limits, time_per_epoch=time, energy_per_epoch=tuple(p * t for p, t in zip(power, time, strict=True)),
                          max_power_limit=max(limits), profile_average_power=power, profile_time_per_epoch=time,
                          profiling_epoch_energy=math.nan, profiling_epoch_time=math.nan, target_epochs=())


def test_epoch_costs_mix_energy_and_time_at_the_batch_sizes_max_limit() -> None:
    # Limits 200, 300, 250 W (not sorted): P_avg 190, 280, 240 W; T 13, 10, 11 s; P_max,bs = 300 W.
    t = table((200, 300, 250), (190.0, 280.0, 240.0), (13.0, 10.0, 11.0))
    # eta 0.5: (95 + 150) x 13, (140 + 150) x 10, (120 + 150) x 11.
    assert t.epoch_costs(0.5) == [3185.0, 2900.0, 2970.0]
    assert t.best_power_limit(0.5) == 300
    # eta 1 (energy only): 190 x 13, 280 x 10, 240 x 11; eta 0 (time only): 300 x 13, 300 x 10, 300 x 11.
    assert t.epoch_costs(1.0) == [2470.0, 2800.0, 2640.0]
    assert t.best_power_limit(1.0) == 200
    assert t.epoch_costs(0.0) == [3900.0, 3000.0, 3300.0]
    assert t.best_power_limit(0.0) == 300
    # eta 0.75: (142.5 + 75) x 13 = 2827.5, (210 + 75) x 10 = 2850, (180 + 75) x 11 = 2805: the middle limit.
    assert t.epoch_costs(0.75) == [2827.5, 2850.0, 2805.0]
    assert t.best_power_limit(0.75) == 250


def test_a_tie_of_epoch_costs_goes_to_the_higher_limit_in_any_order() -> None:
    # eta 1: 200 W x 15 s = 300 W x 10 s = 3000 J, exactly; the 250 W limit costs more (260 x 12 = 3120 J).
    for limits, power, time in (((200, 300, 250), (200.0, 300.0, 260.0), (15.0, 10.0, 12.0)),
                                ((300, 250, 200), (300.0, 260.0, 200.0), (10.0, 12.0, 15.0))):
        t = table(limits, power, time)
        assert sorted(t.epoch_costs(1.0)) == [3000.0, 3000.0, 3120.0]
        assert t.best_power_limit(1.0) == 300, limits


def test_limit_index_is_the_position_in_trace_order() -> None:
    t = table((200, 300, 250), (190.0, 280.0, 240.0), (13.0, 10.0, 11.0))
    assert [t.limit_index(w) for w in (200, 300, 250)] == [0, 1, 2]


def test_max_power_is_the_largest_limit_of_the_gpus_rows_that_join_a_train_row() -> None:
    """MaxPower of Zeus's cost: g1's 400 W row (batch size 128) joins no train row, so 300 W; g2 has one joining row (250 W);
    g3 has none. Memoized per ``Traces`` (a value in its cache is what it returns)."""
    train = pl.DataFrame({"dataset": ["a", "a"], "network": ["n", "n"], "batch_size": [32, 64], "optimizer": ["o", "o"],
                          "target_metric": [0.5, 0.5], "target_epoch": [3.0, None]})
    power = pl.DataFrame({"gpu": ["g1", "g1", "g1", "g2", "g3"], "dataset": ["a", "a", "a", "a", "b"], "network": ["n"] * 5,
                          "batch_size": [32, 64, 128, 64, 32], "optimizer": ["o"] * 5, "power_limit": [250, 300, 400, 250, 300],
                          "time_per_epoch": [10.0] * 5, "average_power": [200.0] * 5})
    traces = from_frames(train, power)
    assert (max_power(traces, "g1"), max_power(traces, "g2")) == (300, 250)
    assert traces.cache[("max_power", "g1")] == 300
    traces.cache[("max_power", "g1")] = 123
    assert max_power(traces, "g1") == 123
    with pytest.raises(TraceError, match=r"^GPU 'g3': no power rows match the train trace$"):
        max_power(traces, "g3")
