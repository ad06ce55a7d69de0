"""The unit helpers: polars datetimes and durations as the seconds the tables store, to the microsecond."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

from pipelines.vocabulary.units import S_PER_DAY, S_PER_H, duration_s, epoch_s


def test_epoch_s_counts_instants_to_the_microsecond() -> None:
    frame = pl.DataFrame({"t": [datetime(1970, 1, 1, 1, 0, 0, 250_000), datetime(2024, 3, 10, 12, 30, 0, 1)]},
                         schema={"t": pl.Datetime("us")})
    assert frame.select(epoch_s(pl.col("t"))).to_series().to_list() == [3600.25, 1710073800.000001]
    # a zoned datetime is its instant: 09:00 in Berlin (UTC+1 in January) is 08:00 UTC
    berlin = pl.Series([datetime(2024, 1, 2, 9)]).dt.replace_time_zone("Europe/Berlin")
    assert epoch_s(berlin).to_list() == [datetime(2024, 1, 2, 8, tzinfo=UTC).timestamp()]


def test_duration_s_of_series_and_expressions() -> None:
    spans = pl.Series([timedelta(days=1), timedelta(hours=1, microseconds=5), timedelta(0)])
    assert duration_s(spans).to_list() == [S_PER_DAY, S_PER_H + 5e-6, 0.0]
    frame = pl.DataFrame({"a": [datetime(2024, 1, 1)], "b": [datetime(2024, 1, 1, 0, 0, 1, 500_000)]})
    assert frame.select(duration_s(pl.col("b") - pl.col("a"))).item() == 1.5
