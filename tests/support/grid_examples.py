"""The carbon-intensity and price files of docs/own-cluster.md's examples, shaped as operators download them: an Electricity
Maps hourly export, a day-ahead market's EUR/MWh file (negative hours, a missing day) and an OpenEI rate item. Synthetic
values (a day/night and seasonal pattern), so that the documented commands run as written (tests/cli/test_readme_commands.py).
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from pathlib import Path

#: The files' names, as the docs' commands give them.
ELECTRICITY_MAPS = "DE_2024_hourly.csv"
MARKET = "day_ahead_DE_2024.csv"
OPENEI = "openei_rate.json"
HEADER = ("Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO₂eq/kWh (direct),Carbon Intensity gCO₂eq/kWh (LCA),"
          "Low Carbon Percentage,Renewable Percentage,Data Source,Data Estimated,Data Estimation Method")
YEAR_START = datetime(2024, 1, 1)
HOURS = 366 * 24
MISSING_DAY = datetime(2024, 10, 13)  # not in the market file: a 25-hour step


def _direct(k: int) -> float:
    """g CO2e/kWh at hour ``k`` of 2024: cleaner at midday (sun) and in summer."""
    hour, day = k % 24, k // 24
    return round(420 - 140 * max(0.0, math.sin(math.pi * (hour - 6) / 12)) - 60 * math.sin(2 * math.pi * (day - 80) / 366), 2)


def write_electricity_maps(path: Path) -> Path:
    rows = []
    for k in range(HOURS):
        direct = _direct(k)
        rows.append(f"{YEAR_START + timedelta(hours=k):%Y-%m-%d %H:%M:%S},Germany,Germany,DE,{direct},{round(1.1 * direct + 45, 2)},"
                    f"{round(100 - direct / 6, 2)},{round(90 - direct / 6, 2)},entsoe.eu,false,")
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def write_market(path: Path) -> Path:
    """Hourly EUR/MWh, bare times in UTC; negative at midday on sunny weekends (Saturdays and Sundays of May to August)."""
    rows = []
    for k in range(HOURS):
        t = YEAR_START + timedelta(hours=k)
        if t.date() == MISSING_DAY.date():
            continue
        price = round(_direct(k) / 4 - 10, 2)
        if t.weekday() >= 5 and 5 <= t.month <= 8 and 11 <= t.hour <= 14:
            price = -round(5 + 3 * (t.hour - 11), 2)
        rows.append(f"{t:%Y-%m-%d %H:%M:%S},{price}")
    path.write_text("Datetime,Price (EUR/MWh)\n" + "\n".join(rows) + "\n")
    return path


def write_openei(path: Path) -> Path:
    """A commercial time-of-use rate: off-peak and peak (weekdays 12:00-20:00 local, June to September), a second tier."""
    weekday = [[1 if 5 <= m <= 8 and 12 <= h < 20 else 0 for h in range(24)] for m in range(12)]
    item = {"label": "66a0b1c2d3e4f5a6b7c8d9e0", "utility": "Example Power & Light", "name": "GS-2 Time of Use", "sector": "Commercial",
            "energyratestructure": [[{"max": 50000, "rate": 0.0912, "adj": 0.0043, "unit": "kWh"}, {"rate": 0.0841, "unit": "kWh"}],
                                    [{"rate": 0.2135, "adj": 0.0043, "unit": "kWh"}]],
            "energyweekdayschedule": weekday, "energyweekendschedule": [[0] * 24 for _ in range(12)]}
    path.write_text(json.dumps({"items": [item]}, indent=1))
    return path


def write_all(folder: Path) -> None:
    write_electricity_maps(folder / ELECTRICITY_MAPS)
    write_market(folder / MARKET)
    write_openei(folder / OPENEI)
