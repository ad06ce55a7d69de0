"""Unit conversions, declared once. Every table stores SI base units (J, s, W); these scale them for readers.

A leaf: imports nothing of the package. Names read as "how many of the first unit in one of the second":
``J_PER_MWH`` joules in one megawatt-hour, so ``energy_j / J_PER_MWH`` is MWh. ``epoch_s`` and ``duration_s``
turn polars datetimes and durations into the seconds the tables store.
"""

from typing import TypeVar

import polars as pl

#: Seconds in an hour and in a day.
S_PER_H = 3_600.0
S_PER_DAY = 86_400.0
#: Joules in a megajoule, a kilowatt-hour and a megawatt-hour.
J_PER_MJ = 1e6
J_PER_KWH = 3.6e6
J_PER_MWH = 3.6e9
#: Kilowatt-hours in a megawatt-hour.
KWH_PER_MWH = 1_000.0
#: Kilowatts in a watt.
KW_PER_W = 1e-3
#: Microseconds in a second (polars' datetimes and durations count microseconds here).
US_PER_S = 1e6

T = TypeVar("T", pl.Expr, pl.Series)


def epoch_s(datetimes: T) -> T:
    """Datetimes as seconds since the Unix epoch (Float64, to the microsecond); a time zone's instants, not its wall clock."""
    return datetimes.dt.epoch("us") / US_PER_S


def duration_s(durations: T) -> T:
    """Durations as seconds (Float64, to the microsecond)."""
    return durations.dt.total_microseconds() / US_PER_S
