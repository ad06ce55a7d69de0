"""The JIT profiler's power-limit choice (``BatchSizeTable.epoch_costs`` and ``best_power_limit``) on limits whose epoch costs
are computed by hand: (eta x P_avg + (1 - eta) x P_max,bs) x T_epoch, the lowest wins, a tie goes to the higher limit (Zeus
profiles from the highest limit down and keeps the first of equal costs; tests/zeus/test_tables.py holds the same tie against
zeus 0.16.0's optimizer)."""

from __future__ import annotations

import math

from pipelines.zeus.traces import BatchSizeTable


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
