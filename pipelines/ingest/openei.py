"""An OpenEI U.S. Utility Rate Database item, read offline: the tariff Zeus's ``OpenEIClient`` fetches, as a price series.

The JSON of the API (``{"items": [...]}``), a list of items, or one item; the item of ``label`` where there are several.
An item's ``energyratestructure`` lists periods, each a list of tiers (``rate``, ``adj``: USD per kWh);
``energyweekdayschedule`` and ``energyweekendschedule`` give each ``[month][hour]`` (0-based, 12 x 24) its period, in the
cluster's local time, a weekend by its local date (Saturday, Sunday). The price of a period is its first tier's ``rate`` +
``adj``, the total OpenEI defines (Zeus's ``EnergyCostMonitor`` takes ``rate`` alone); tiers by monthly consumption (a
tier's ``max``) are not modelled, and ``describe["note"]`` says so where an item has them. Currency: USD.

``Tariff.rate`` writes the schedule out as a step series over a window (every ``STEP_S``, so that a zone's half-hour offset
falls on a step). Bad input: ``IngestError`` naming the file and the JSON path of the field (a syntax error: its line).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from pipelines.ingest.bounded_json import check_json_depth, read_json_text
from pipelines.ingest.common import IngestError
from pipelines.ingest.grid import Rate

#: The series' step (s): a quarter hour, so that every zone's local hours begin on a step.
STEP_S = 900.0
#: What the report says of the tariff's tiers where it has more than one.
TIERS_NOTE = "each period at its first tier's rate + adj; tiers by monthly consumption are not modelled"


@dataclass(frozen=True)
class Tariff:
    """A rate's price (USD per kWh) by ``[month][hour]`` on weekdays and weekends, in ``timezone`` (local time)."""

    weekday: np.ndarray  # 12 x 24
    weekend: np.ndarray  # 12 x 24
    timezone: str
    describe: dict[str, object]

    def rate(self, start_s: float, end_s: float) -> Rate:
        """The schedule as a step series every ``STEP_S`` from ``start_s`` to ``end_s`` (UTC epoch seconds, widened to whole steps)."""
        first, last = np.floor(start_s / STEP_S) * STEP_S, np.ceil(end_s / STEP_S) * STEP_S
        times = np.arange(first, max(last, first + STEP_S), STEP_S)
        local = pl.Series(times * 1e6).cast(pl.Int64).cast(pl.Datetime("us", "UTC")).dt.convert_time_zone(self.timezone)
        month, hour = (local.dt.month() - 1).to_numpy(), local.dt.hour().to_numpy()
        weekend = (local.dt.weekday() >= 6).to_numpy()  # polars: Monday 1 .. Sunday 7
        values = np.where(weekend, self.weekend[month, hour], self.weekday[month, hour])
        describe = {**self.describe, "points": len(times), "step_s": STEP_S, "timezone": self.timezone,
                    "mean_price_per_kwh": float(np.mean(values))}
        rate = Rate(values.astype(np.float64), describe, times.astype(np.float64), STEP_S)
        describe["span"] = rate.span_text()
        return rate


def _item(data: Any, label: str | None, name: str) -> tuple[dict[str, Any], str]:
    """(the item, its JSON path)."""
    items = data.get("items") if isinstance(data, dict) and "items" in data else data if isinstance(data, list) else [data]
    where = "items" if isinstance(data, dict) and "items" in data else ""
    rated = [(i, it) for i, it in enumerate(items or []) if isinstance(it, dict) and "energyratestructure" in it]
    if label is not None:
        rated = [(i, it) for i, it in rated if it.get("label") == label]
    if len(rated) != 1:
        labels = ", ".join(str(it.get("label")) for _, it in rated[:5])
        raise IngestError(name, (f"no item has energyratestructure{f' and label {label!r}' if label else ''}" if not rated else
                                 f"{len(rated)} items have a rate ({labels}{', ...' if len(rated) > 5 else ''}): pick one with "
                                 "--price-label"))
    i, item = rated[0]
    return item, f"{where}[{i}]" if where or isinstance(data, list) else ""


def _number(value: Any, path: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        raise IngestError(name, f"{path}: {value!r} is not a number")
    return float(value)


def read_tariff(path: Path, timezone: str, label: str | None = None) -> Tariff:
    """The OpenEI item of ``path`` (see the module docstring), its schedules read in ``timezone`` (the cluster's local time)."""
    name = str(path)
    text = check_json_depth(read_json_text(path, name, "an OpenEI tariff"), name)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IngestError(name, f"not JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None
    item, at = _item(data, label, name)
    structure = item["energyratestructure"]
    if not isinstance(structure, list) or not structure:
        raise IngestError(name, f"{at}.energyratestructure: not a list of periods")
    prices = []
    for p, tiers in enumerate(structure):
        where = f"{at}.energyratestructure[{p}]"
        if not isinstance(tiers, list) or not tiers or not isinstance(tiers[0], dict):
            raise IngestError(name, f"{where}: not a list of tiers")
        prices.append(_number(tiers[0].get("rate"), f"{where}[0].rate", name) + _number(tiers[0].get("adj", 0.0), f"{where}[0].adj", name))
    tables = []
    for key in ("energyweekdayschedule", "energyweekendschedule"):
        table = item.get(key)
        if not (isinstance(table, list) and len(table) == 12 and all(isinstance(m, list) and len(m) == 24 for m in table)):
            raise IngestError(name, f"{at}.{key}: not 12 months of 24 hours")
        for m, month in enumerate(table):
            for h, period in enumerate(month):
                if isinstance(period, bool) or not isinstance(period, int) or not 0 <= period < len(prices):
                    raise IngestError(name, f"{at}.{key}[{m}][{h}]: {period!r} is not a period of energyratestructure "
                                      f"(0..{len(prices) - 1})")
        tables.append(np.array(prices)[np.array(table)])
    describe: dict[str, object] = {"format": "OpenEI U.S. Utility Rate Database", "file": path.name, "label": item.get("label"),
                                   "utility": item.get("utility"), "name": item.get("name"), "currency": "USD", "unit": "USD/kWh",
                                   "timezone_source": "the cluster's --timezone"}
    if any(isinstance(t, list) and len(t) > 1 for t in structure):
        describe["note"] = TIERS_NOTE
    return Tariff(tables[0], tables[1], timezone, describe)
