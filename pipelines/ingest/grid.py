"""Where and when the energy was used: grid carbon intensity and electricity prices, offline.

Two kinds of input, both as a ``Rate`` (a value per kWh, constant or over time):

* **The bundled per-region table** (``data/grid_intensity.csv``, shipped in the package: no
  network). Each row: an ISO 3166-1 country (alpha-2 ``DE``, its alpha-3 ``DEU`` accepted too),
  a US state (ISO 3166-2 ``US-CA``) or a Nordic bidding zone (``SE1`` .. ``SE4``, ``NO1`` ..
  ``NO5``), its carbon intensity of electricity (g CO2e per kWh), the year it describes and its
  source (``SOURCES``: all from the ``codecarbon`` 3.3.2 package's data, MIT licence;
  ``data/SOURCES.md`` says how the table was derived). An unknown code is refused with the
  nearest codes.
* **A time series** of the user's (``read_series``: the generic CSV ``timestamp,<value>``,
  ``gco2_per_kwh`` for intensity, ``price_per_kwh`` for prices; ``step_series`` reads the value
  and time columns of any series file, which ``grid_files`` finds in the files operators download
  and ``openei`` writes out from a tariff). Any step. Each value holds from its timestamp to the
  next one; the last for the series' median step (a longer step is a gap: ``Rate.gaps``).
  Timestamps are ISO 8601, with an offset (exact) or without one (read in the zone given; in the
  hour that repeats when clocks go back, the first reading is the earlier instant and a repeat the
  later one, as the series' order says). A value that is not a number, a negative one (but for a
  market's prices), a timestamp that does not parse or is not after the one before raises
  ``IngestError`` naming the file, line and column.

``Rate.means(start_s, end_s)`` is each interval's mean value (time-weighted: a job draws its power
evenly over its run, so this is its energy-weighted intensity); ``Rate.uncovered`` names the
intervals a series does not cover, which a caller refuses unless told to fill them with the
nearest value (a constant covers everything).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.contracts.grid import SOURCES
from pipelines.contracts.limits import MAX_GCO2_PER_KWH, MAX_PRICE_PER_KWH, MAX_TIME_S
from pipelines.ingest.common import IngestError
from pipelines.ingest.text_reader import SMALL_TABLE_LIMITS, read_table
from pipelines.vocabulary.units import S_PER_H, epoch_s

#: The bundled table's file (package data); what each of its ``source`` keys means is ``contracts.grid.SOURCES``.
TABLE = "grid_intensity.csv"
#: The value column of a series file, by what it holds.
INTENSITY, PRICE = "gco2_per_kwh", "price_per_kwh"
#: A step longer than this many usual steps is a gap (``Rate.gaps``): a clock's jitter, or a daily series' 25-hour day when
#: clocks go back, is not.
GAP_STEPS = 1.5
_ISO = r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}:?\d{2})?$"


@dataclass(frozen=True)
class Region:
    """One row of the bundled table."""

    code: str
    name: str
    gco2_per_kwh: float
    year: int
    source: str  # a key of SOURCES

    def describe(self) -> dict[str, object]:
        """The report's ``grid`` entry."""
        return {"region": self.code, "name": self.name, "gco2_per_kwh": self.gco2_per_kwh, "year": self.year, "source": SOURCES[self.source]}


@cache
def region_table() -> pl.DataFrame:
    """The bundled table: region, alpha3 (countries), name, gco2_per_kwh, year, source."""
    text = resources.files("pipelines.ingest").joinpath("data", TABLE).read_bytes()
    return pl.read_csv(text, schema={"region": pl.String, "alpha3": pl.String, "name": pl.String, "gco2_per_kwh": pl.Float64,
                                     "year": pl.Int64, "source": pl.String})


def find_region(code: str) -> Region:
    """The region of ``code`` (case-insensitive; a country's alpha-3 too); ``ValueError`` naming the nearest codes."""
    table = region_table()
    wanted = code.strip().upper()
    found = table.filter((pl.col("region") == wanted) | (pl.col("alpha3") == wanted))
    if found.height == 0:
        codes = table["region"].to_list()
        near = sorted(codes, key=lambda c: (-difflib.SequenceMatcher(None, wanted, c).ratio(), c[:1] != wanted[:1], c))[:4]
        hint = f"; nearest: {', '.join(near)}" if near else ""
        raise ValueError(f"--region {code!r}: not in the bundled table (ISO 3166-1 alpha-2 or alpha-3, US-XX, SE1..SE4, NO1..NO5){hint}")
    row = found.row(0, named=True)
    return Region(row["region"], row["name"], row["gco2_per_kwh"], row["year"], row["source"])


@dataclass(frozen=True)
class Rate:
    """A value per kWh (g CO2e or money), constant (``times_s`` None) or a step series over UTC epoch seconds.

    ``describe`` is what the report says of it. Invariants: ``times_s`` strictly increasing,
    ``values`` finite (>= 0 but for a market's prices, which go negative), ``step_s`` > 0 (the series' usual step: how long
    the last value holds; a longer step is a gap, ``gaps``).
    """

    values: np.ndarray
    describe: dict[str, object]
    times_s: np.ndarray | None = None
    step_s: float = math.inf
    _cumulative: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.times_s is not None:
            widths = np.diff(np.r_[self.times_s, self.times_s[-1] + self.step_s])
            object.__setattr__(self, "_cumulative", np.r_[0.0, np.cumsum(self.values * widths)])

    @staticmethod
    def constant(value: float, describe: dict[str, object]) -> Rate:
        return Rate(np.array([float(value)]), describe)

    def _edges(self) -> np.ndarray:
        assert self.times_s is not None
        return np.r_[self.times_s, self.times_s[-1] + self.step_s]

    def _integral(self, t: np.ndarray) -> np.ndarray:
        """The value integrated from the series' start to ``t`` (value x s), the first and last values extended beyond it."""
        edges = self._edges()
        inside = np.interp(t, edges, self._cumulative)
        before = np.minimum(t - edges[0], 0.0) * self.values[0]
        after = np.maximum(t - edges[-1], 0.0) * self.values[-1]
        return inside + before + after

    def means(self, start_s: np.ndarray, end_s: np.ndarray) -> np.ndarray:
        """Each interval's mean value (time-weighted); a zero-length interval takes the value at its start."""
        if self.times_s is None:
            return np.full(len(start_s), float(self.values[0]))
        length = end_s - start_s
        at_start = self.values[np.clip(np.searchsorted(self.times_s, start_s, side="right") - 1, 0, len(self.values) - 1)]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (self._integral(end_s) - self._integral(start_s)) / length
        return np.where(length > 0, mean, at_start)

    def uncovered(self, start_s: np.ndarray, end_s: np.ndarray) -> np.ndarray:
        """The intervals (indices) not inside the series' span (none for a constant)."""
        if self.times_s is None:
            return np.array([], dtype=np.int64)
        edges = self._edges()
        return np.flatnonzero((start_s < edges[0]) | (end_s > edges[-1]))

    def gaps(self) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) UTC epoch seconds of each gap: a step longer than ``GAP_STEPS`` usual steps (``step_s``) has no
        reading from the usual step after its reading to the next (an hourly series missing a day: a 25 h step, a 24 h gap).
        The reading before a gap holds over it (``means``). None for a constant."""
        if self.times_s is None:
            return np.zeros(0), np.zeros(0)
        long = np.flatnonzero(np.diff(self.times_s) > GAP_STEPS * self.step_s)
        return self.times_s[long] + self.step_s, self.times_s[long + 1]

    def span_text(self) -> str:
        """``2024-03-01T00:00Z to 2024-03-08T00:00Z`` (UTC)."""
        edges = self._edges()
        return " to ".join(datetime.fromtimestamp(float(e), UTC).strftime("%Y-%m-%dT%H:%MZ") for e in (edges[0], edges[-1]))


def read_series(path: Path, column: str, timezone: str) -> Rate:
    """A ``timestamp,<column>`` CSV as a step series (see the module docstring); ``IngestError`` names file, line and column."""
    frame = read_csv_text(path)
    header = {c.strip().lower(): c for c in frame.columns}
    for wanted in ("timestamp", column):
        if wanted not in header:
            raise IngestError(str(path), f"missing column {wanted!r} (the header has {frame.columns}); expected timestamp,{column}", line=1)
    return step_series(frame, path, header["timestamp"], header[column], timezone, {}, label=column,
                       limit=MAX_PRICE_PER_KWH if column == PRICE else MAX_GCO2_PER_KWH)


#: Most bytes a grid or price series may hold (decompressed): a year of one-minute values is about 20 MB.
MAX_SERIES_BYTES = 64 << 20


def read_csv_text(path: Path) -> pl.DataFrame:
    """A series CSV (compressed by its suffix, or a stream: a FIFO waits ``STREAM_IDLE_S`` at most), ``MAX_SERIES_BYTES`` at
    most, every field as text (a byte-order mark dropped from the header); ``IngestError`` if it is not CSV."""
    try:
        data = read_table(path, str(path), SMALL_TABLE_LIMITS, max_bytes=MAX_SERIES_BYTES, what="a grid or price series")
        frame = pl.read_csv(data, infer_schema=False, raise_if_empty=True)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise IngestError(str(path), f"cannot read it as CSV ({' '.join(str(exc).split())[:200]})") from None
    return frame.rename({frame.columns[0]: frame.columns[0].lstrip("\ufeff")}) if frame.columns else frame


def step_series(frame: pl.DataFrame, path: Path, time_column: str, value_column: str, timezone: str, describe: dict[str, object], *,
                label: str, scale: float = 1.0, negative_ok: bool = False, timezone_hint: str = "--timezone",
                limit: float) -> Rate:
    """Columns ``time_column`` and ``value_column`` of a series file read as text (``read_csv_text``) as a step series.

    Each value times ``scale`` (a unit's conversion to per kWh); a negative one refused unless ``negative_ok`` (a market's
    price); times without an offset read in ``timezone``. ``describe`` (what the report says of the file's format) comes first
    in the ``Rate``'s description, then ``file``, ``points``, ``step_s``, ``timezone``, ``mean_<label>`` and ``span``.
    ``IngestError`` names the file, line and column of the first bad field (``timezone_hint``: the option that sets the zone),
    a value per kWh beyond ``limit`` (its physical range, ``pipelines.contracts.limits``: no sum over it overflows) and a
    time outside 1970-2200 included.
    """
    name = str(path)
    frame = frame.select(pl.col(time_column).str.strip_chars().alias("text"), pl.col(value_column).str.strip_chars().alias("v"))
    frame = frame.with_row_index("line", offset=2)
    if frame.height == 0:
        raise IngestError(name, "no rows after the header")
    value = frame["v"].cast(pl.Float64, strict=False)
    bad = frame.filter(value.is_null() | ~value.is_finite())
    if bad.height:
        raise IngestError(name, f"{bad['v'][0]!r} is not a number", line=int(bad["line"][0]), column=value_column)
    negative = frame.filter(value < 0)
    if negative.height and not negative_ok:
        raise IngestError(name, f"{negative['v'][0]} is negative", line=int(negative["line"][0]), column=value_column)
    over = frame.filter((value * scale).abs() > limit)
    if over.height:
        span = f"[{-limit if negative_ok else 0:,g}, {limit:,g}]{'' if scale == 1 else ' per kWh, once converted'}"
        raise IngestError(name, f"{over['v'][0]} is outside the physical range of {label}, {span}", line=int(over["line"][0]),
                          column=value_column)
    times = _utc_seconds(frame, timezone, name, time_column, timezone_hint)
    outside = np.flatnonzero(~((times >= 0) & (times < MAX_TIME_S)))  # NaN (before year 1) included
    if outside.size:
        i = int(outside[0])
        raise IngestError(name, f"{frame['text'][i]!r} is outside 1970-2199, the times a series may hold", line=int(frame["line"][i]),
                          column=time_column)
    order = np.flatnonzero(np.diff(times) <= 0)
    if order.size:
        i = int(order[0]) + 1
        raise IngestError(name, f"{frame['text'][i]!r} is not after the timestamp before it ({frame['text'][i - 1]!r}): the series must "
                          "be in time order, each timestamp once", line=int(frame["line"][i]), column=time_column)
    step = float(np.median(np.diff(times))) if len(times) > 1 else S_PER_H
    values = value.to_numpy().astype(np.float64) * scale
    describe = {**describe, "file": path.name, "points": len(times), "step_s": step, "timezone": timezone, f"mean_{label}": float(np.mean(values))}
    rate = Rate(values, describe, times, step)
    describe["span"] = rate.span_text()
    return rate


def _utc_seconds(frame: pl.DataFrame, timezone: str, name: str, column: str, hint: str) -> np.ndarray:
    """UTC epoch seconds of the ISO texts: with an offset exactly, without one in ``timezone`` (repeats by order)."""
    parts = frame["text"].str.extract_groups(_ISO)
    unparsed = frame.filter(parts.struct.field("1").is_null())
    if unparsed.height:
        raise IngestError(name, f"cannot parse {unparsed['text'][0]!r} as ISO 8601 (YYYY-MM-DDTHH:MM[:SS], optional Z or +HH:MM)",
                          line=int(unparsed["line"][0]), column=column)
    clock = parts.struct.field("2")
    clock = pl.select(pl.when(clock.str.len_chars() == 5).then(clock + ":00").otherwise(clock)).to_series()
    naive = (parts.struct.field("1") + "T" + clock).str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", time_unit="us", strict=False)
    offset = parts.struct.field("3")
    digits = offset.str.replace_all(r"[^0-9]", "")
    sign = pl.select(pl.when(offset.str.starts_with("-")).then(-1).otherwise(1)).to_series()
    offset_s = pl.select(pl.when(offset == "Z").then(0).otherwise(
        sign * (digits.str.slice(0, 2).cast(pl.Int64, strict=False) * 3600 + digits.str.slice(2, 2).cast(pl.Int64, strict=False) * 60))).to_series()
    exact = epoch_s(naive) - offset_s.cast(pl.Float64)
    early = epoch_s(naive.dt.replace_time_zone(timezone, ambiguous="earliest", non_existent="null"))
    late = epoch_s(naive.dt.replace_time_zone(timezone, ambiguous="latest", non_existent="null"))
    gap = frame.filter(offset.is_null() & early.is_null())
    if gap.height:
        raise IngestError(name, f"{gap['text'][0]!r} does not exist in {timezone} (the hour skipped when clocks go forward): the wrong "
                          f"{hint}?", line=int(gap["line"][0]), column=column)
    local = early.to_numpy().copy()
    late_np = late.to_numpy()
    for i in np.flatnonzero(late_np != local):  # the repeated hour: a reading not after the one before is the later instant
        if i > 0 and local[i] <= local[i - 1]:
            local[i] = late_np[i]
    has_offset = offset.is_not_null().to_numpy()
    return np.where(has_offset, exact.to_numpy(), local)
