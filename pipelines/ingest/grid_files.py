"""Carbon-intensity and price files as operators download them, told apart by their header and read as a ``grid.Rate``.

Carbon intensity (``read_grid``), g CO2e per kWh:

* the generic ``timestamp,gco2_per_kwh``;
* Electricity Maps' CSV export (``Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO₂eq/kWh (direct),Carbon
  Intensity gCO₂eq/kWh (LCA),...``): ``column`` picks the value column, ``direct`` (the default: the combustion emissions
  a GHG Protocol scope 2 location-based inventory reports), ``lca`` (life-cycle, what Electricity Maps' app shows) or a
  column's name.

Prices (``read_prices``), converted to money per kWh: a time column (``timestamp``, ``Datetime``, ``Datetime (UTC)``) and
a price column whose header says its unit and currency (``price_per_kwh``, ``Price (EUR/MWh)``, ``USD/kWh``, ``ct/kWh``;
``PriceUnit``); what the header does not say comes from ``--price-unit``. Negative prices are kept (a market's hours of
surplus). A value above ``IMPLAUSIBLE_PER_KWH`` per kWh is named once in ``warning`` (a per-MWh file read as per kWh).

Times: a zone in the time column's header (``Datetime (UTC)``) is the times' zone; else an offset on each time is exact,
and times without one are read in the zone given (``--series-timezone``). Bad input: ``IngestError`` naming the file, line
and column; a header no format fits names the formats known.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.contracts.limits import MAX_GCO2_PER_KWH, MAX_PRICE_PER_KWH
from pipelines.ingest.common import IngestError
from pipelines.ingest.grid import INTENSITY, PRICE, Rate, read_csv_text, step_series
from pipelines.ingest.own_cluster import check_timezone
from pipelines.vocabulary.units import KWH_PER_MWH

#: The grid-intensity columns of an Electricity Maps export by ``--grid-column`` choice (matched in lower case).
#: Both generations of the export: ``(LCA)`` with ``Low Carbon Percentage`` (the issue's), and ``(Life cycle)`` with
#: ``Carbon-free energy percentage (CFE%)`` (the portal's later yearly files).
ELECTRICITY_MAPS = {"direct": ("carbon intensity gco₂eq/kwh (direct)",),
                    "lca": ("carbon intensity gco₂eq/kwh (lca)", "carbon intensity gco₂eq/kwh (life cycle)")}
#: The default value column of an Electricity Maps export: a carbon accountant's (GHG Protocol scope 2, location-based).
DEFAULT_GRID_COLUMN = "direct"
#: Above this (money per kWh) a price is implausible: the file is per MWh, or its unit was not said.
IMPLAUSIBLE_PER_KWH = 5.0
#: The series' formats each reader knows, for a header that fits none.
GRID_FORMATS = ("timestamp,gco2_per_kwh (generic)", "Electricity Maps' CSV export (Datetime (UTC),...,Carbon Intensity "
                "gCO₂eq/kWh (direct),Carbon Intensity gCO₂eq/kWh (LCA),...)")
PRICE_FORMATS = ("timestamp,price_per_kwh (generic)", "a time column (timestamp, Datetime, Datetime (UTC)) and a price column "
                 "with its unit (Price (EUR/MWh), USD/kWh, ct/kWh)", "an OpenEI U.S. Utility Rate Database item (.json)")

_TIME = re.compile(r"^(timestamp|datetime|date ?time|time)\s*(?:\((?P<zone>[^)]+)\))?$", re.IGNORECASE)
_SYMBOLS = {"€": "EUR", "$": "USD", "£": "GBP"}
_SUBUNITS = {"ct", "cent", "cents", "c", "¢", "p"}  # a hundredth of the currency
_ENERGY_KWH = {"wh": 1e-3, "kwh": 1.0, "mwh": KWH_PER_MWH}  # kWh in one
_PER = {"/kWh": 1.0, "/MWh": 1 / KWH_PER_MWH, " ct/kWh": 0.01, "/Wh": 1000.0}  # a unit's name by its per_kwh
_WORDS = {"price", "prices", "day", "ahead", "spot", "per"}
#: A time column's header zone that is UTC.
_UTC_NAMES = ("UTC", "GMT", "Z")


@dataclass(frozen=True)
class PriceUnit:
    """A price's unit: ``currency`` (ISO 4217 code, None: not said) and ``per_kwh`` (a value times it is in the currency per
    kWh: 1/1000 for per MWh, 1/100 for cents per kWh; None: not said)."""

    currency: str | None
    per_kwh: float | None

    def merged(self, given: PriceUnit | None, where: str) -> PriceUnit:
        """This unit (a header's) completed by ``given`` (``--price-unit``); ``ValueError`` where they disagree."""
        if given is None:
            return self
        currencies = self.currency is not None and given.currency is not None and self.currency != given.currency
        scales = self.per_kwh is not None and given.per_kwh is not None and not math.isclose(self.per_kwh, given.per_kwh)
        if currencies or scales:
            raise ValueError(f"{where} says {self.text()}, --price-unit says {given.text()}")
        return PriceUnit(self.currency or given.currency, self.per_kwh if self.per_kwh is not None else given.per_kwh)

    def text(self) -> str:
        """``EUR/MWh``-like (``?`` for what is not said)."""
        per = ("/?" if self.per_kwh is None else
               next((name for name, scale in _PER.items() if math.isclose(self.per_kwh, scale)), f" x {self.per_kwh:g}/kWh"))
        return f"{self.currency or '?'}{per}"


@functools.cache
def iso_currencies() -> frozenset[str]:
    """The ISO 4217 currency codes (CLDR's, through Babel): what a price's currency may be, so that a typo (``EUE``) is
    refused rather than printed beside every cost."""
    from babel.numbers import list_currencies

    return frozenset(list_currencies())


def parse_price_unit(text: str) -> PriceUnit | None:
    """The unit of ``text`` (a header, or ``--price-unit``): ``EUR/MWh``, ``Price (EUR/MWh)``, ``price_per_kwh``, ``USD/kWh``,
    ``ct/kWh``, ``€/MWh``, or a currency alone (``EUR``); None where it names no unit, or a currency ISO 4217 does not know."""
    inner = re.search(r"\(([^)]*)\)\s*$", text)
    body = (inner.group(1) if inner else text).strip()
    # MWhe, kWhe: of electricity (Ember's wholesale price files)
    match = re.fullmatch(r"(?P<money>.*?)[\s_]*(?:/|\bper\b|_per_)[\s_]*(?P<energy>[kKmM]?[wW][hH])[eE]?", body)
    money, energy = (match.group("money"), match.group("energy")) if match else (body, None)
    currency, scale = None, 1.0
    for token in re.findall(r"[€$£¢]|[A-Za-z]+", money):
        low = token.lower()
        if token in _SYMBOLS:
            currency = _SYMBOLS[token]
        elif low in _SUBUNITS or token == "¢":
            scale = 0.01
        elif low in _WORDS:
            continue
        elif len(token) == 3 and token.isalpha() and token.upper() in iso_currencies():
            currency = token.upper()
        else:
            return None
    if energy is None and (currency is None or scale != 1.0):
        return None
    return PriceUnit(currency, None if energy is None else scale / _ENERGY_KWH[energy.lower()])


def _time_column(frame: pl.DataFrame) -> tuple[str, str | None] | None:
    """(the time column, the zone its header names or None): the UTC one where there are several (Ember's files have
    ``Datetime (UTC)`` and ``Datetime (Local)``), else the first; None without one."""
    found = [(column, match.group("zone")) for column in frame.columns if (match := _TIME.match(column.strip()))]
    utc = [(column, zone) for column, zone in found if zone is not None and zone.strip().upper() in _UTC_NAMES]
    chosen = utc or found
    return chosen[0] if chosen else None


def _zone(path: Path, column: str, header_zone: str | None, timezone: str, source: str) -> tuple[str, str]:
    """(the zone the bare times are read in, where it comes from): the header's, else ``timezone`` (``source``); a header
    saying ``(Local)`` (Ember's ``Datetime (Local)``) names no zone: the place's own, which ``timezone`` gives."""
    if header_zone is None or header_zone.strip().lower() == "local":
        return timezone, source
    zone = "UTC" if header_zone.strip().upper() in _UTC_NAMES else header_zone.strip()
    try:
        return check_timezone(zone), "header"
    except ValueError as exc:
        raise IngestError(str(path), f"the header names the zone {header_zone!r}: {exc}", line=1, column=column) from None


def _unknown(path: Path, frame: pl.DataFrame, formats: tuple[str, ...]) -> IngestError:
    return IngestError(str(path), f"cannot tell the file's format from its header {frame.columns}: the formats known are "
                       + "; ".join(formats), line=1)


def read_grid(path: Path, column: str | None, timezone: str, timezone_source: str = "--series-timezone") -> Rate:
    """A carbon-intensity file (g CO2e per kWh; see the module docstring) as a step series; ``column``: ``direct``, ``lca`` or
    a column's name (None: ``gco2_per_kwh`` of the generic form, ``direct`` of an Electricity Maps export)."""
    frame = read_csv_text(path)
    header = {c.strip().lower(): c for c in frame.columns}
    found = _time_column(frame)
    if found is None:
        raise _unknown(path, frame, GRID_FORMATS)
    time_column, header_zone = found
    if any(name in header for names in ELECTRICITY_MAPS.values() for name in names):
        fmt, choice = "Electricity Maps", column or DEFAULT_GRID_COLUMN
        names = ELECTRICITY_MAPS.get(choice.strip().lower(), (choice.strip().lower(),))
        wanted = next((name for name in names if name in header), names[0])
    elif INTENSITY in header:
        fmt, choice = "generic", column or INTENSITY
        wanted = choice.strip().lower()
    else:
        raise _unknown(path, frame, GRID_FORMATS)
    if wanted not in header:
        raise IngestError(str(path), f"--grid-column {choice!r}: no such column (the header has {frame.columns}); give direct or lca "
                          "(Electricity Maps) or a column's name", line=1)
    zone, zone_source = _zone(path, time_column, header_zone, timezone, timezone_source)
    describe: dict[str, object] = {"format": fmt, "column": choice, "column_header": header[wanted], "timezone_source": zone_source}
    return step_series(frame, path, time_column, header[wanted], zone, describe, label=INTENSITY, timezone_hint="--series-timezone",
                       limit=MAX_GCO2_PER_KWH)


def read_prices(path: Path, unit: PriceUnit | None, timezone: str, timezone_source: str = "--series-timezone") -> Rate:
    """A price file (see the module docstring) as a step series in money per kWh; ``unit``: ``--price-unit``, for what the
    header does not say. ``describe`` has ``currency`` (None: not said), ``unit`` (as read) and, for implausible values,
    ``warning``."""
    frame = read_csv_text(path)
    found = _time_column(frame)
    priced = [(c, u) for c in frame.columns if (found is None or c != found[0]) and (u := parse_price_unit(c)) is not None
              and (u.per_kwh is not None or "price" in c.lower())]
    priced = priced or [(c, PriceUnit(None, None)) for c in frame.columns if c.strip().lower() in ("price", "prices", "value")]
    if found is None or len(priced) != 1:
        raise _unknown(path, frame, PRICE_FORMATS)
    (time_column, header_zone), (price_column, header_unit) = found, priced[0]
    try:
        read_unit = header_unit.merged(unit, f"the header ({price_column!r})")
    except ValueError as exc:
        raise IngestError(str(path), str(exc), line=1, column=price_column) from None
    if read_unit.per_kwh is None:
        raise IngestError(str(path), "the header does not say the price's unit: give --price-unit (EUR/MWh, USD/kWh, ct/kWh, ...)",
                          line=1, column=price_column)
    zone, zone_source = _zone(path, time_column, header_zone, timezone, timezone_source)
    describe: dict[str, object] = {"format": "generic" if price_column.strip().lower() == PRICE else "prices with their unit",
                                   "column": price_column, "unit": read_unit.text(), "currency": read_unit.currency,
                                   "timezone_source": zone_source}
    rate = step_series(frame, path, time_column, price_column, zone, describe, label=PRICE, scale=read_unit.per_kwh, negative_ok=True,
                       timezone_hint="--series-timezone", limit=MAX_PRICE_PER_KWH)
    warning = implausible(rate.values)
    if warning:
        rate.describe["warning"] = warning
    rate.describe["negative_points"] = int(np.sum(rate.values < 0))
    return rate


def implausible(per_kwh: np.ndarray) -> str | None:
    """One line where a price per kWh is above ``IMPLAUSIBLE_PER_KWH`` (a per-MWh value read as per kWh), else None."""
    high = np.flatnonzero(per_kwh > IMPLAUSIBLE_PER_KWH)
    if high.size == 0:
        return None
    return (f"{high.size:,} of {per_kwh.size:,} prices above {IMPLAUSIBLE_PER_KWH:g} per kWh (the highest {float(np.max(per_kwh)):,.4g}): "
            "looks like per MWh: name the unit in the header (Price (EUR/MWh)), or with --price-unit where it names none")
