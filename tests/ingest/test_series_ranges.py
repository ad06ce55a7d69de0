"""Numbers that cannot overflow (issue 54, build item 3; reproduction 7, and 10's year-0001 grid): each numeric option and
series value has a physical range, and a value outside it is one line naming the file, line and column.

Reproductions: ``--grid-gco2-per-kwh 1e308`` (or a 1e308 series with ``--fill``) ended in ``TypeError: bad operand type
for abs()`` after numpy's overflow warnings; ``--price-per-kwh 1e308`` printed "-" with warnings, rc 0; a year-0001 grid
gave ``Invalid value NaN`` with no file or line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import one_error_line
from tests.support.sacct_export import write_export


@pytest.fixture
def export(tmp_path: Path) -> Path:
    path = tmp_path / "x.sacct"
    write_export(path, 5, seed=1)
    return path



@pytest.mark.parametrize(("option", "value", "message"), [
    ("--grid-gco2-per-kwh", "1e308", "Error: Invalid value for '--grid-gco2-per-kwh': 1e+308 is not in [0, 2000]"),
    ("--grid-gco2-per-kwh", "2000.5", "Error: Invalid value for '--grid-gco2-per-kwh': 2000.5 is not in [0, 2000]"),
    ("--price-per-kwh", "1e308", "Error: Invalid value for '--price-per-kwh': 1e+308 is not in [0, 1e+06]"),
    ("--price-per-kwh", "nan", "Error: Invalid value for '--price-per-kwh': nan is not in [0, 1e+06]"),
])
def test_flat_rates_out_of_range(export: Path, tmp_path: Path, option: str, value: str, message: str) -> None:
    assert one_error_line(["whatif", str(export), option, value], tmp_path).startswith(message)


def test_grid_and_price_series_values_out_of_range(export: Path, tmp_path: Path) -> None:
    grid = tmp_path / "grid.csv"
    grid.write_text("timestamp,gco2_per_kwh\n2024-09-15T00:00,300\n2024-09-15T01:00,1e308\n")
    assert one_error_line(["whatif", str(export), "--grid-intensity", str(grid), "--fill"], tmp_path) == (
        f"Error: {grid}:3: column 'gco2_per_kwh': 1e308 is outside the physical range of gco2_per_kwh, [0, 2,000]")
    prices = tmp_path / "prices.csv"
    prices.write_text("timestamp,price_per_kwh\n2024-09-15T00:00,-1e308\n")
    assert one_error_line(["whatif", str(export), "--price", str(prices), "--price-unit", "EUR"], tmp_path) == (
        f"Error: {prices}:2: column 'price_per_kwh': -1e308 is outside the physical range of price_per_kwh, [-1e+06, 1e+06]")
    per_mwh = tmp_path / "mwh.csv"  # 2e9 EUR/MWh is 2e6 EUR/kWh: over the bound once converted
    per_mwh.write_text("timestamp,price EUR/MWh\n2024-09-15T00:00,2e9\n")
    assert one_error_line(["whatif", str(export), "--price", str(per_mwh)], tmp_path) == (
        f"Error: {per_mwh}:2: column 'price EUR/MWh': 2e9 is outside the physical range of price_per_kwh, [-1e+06, 1e+06] per kWh, "
        "once converted")


def test_a_series_time_before_1970_is_one_line(export: Path, tmp_path: Path) -> None:
    grid = tmp_path / "grid.csv"
    grid.write_text("timestamp,gco2_per_kwh\n0001-01-01T00:00,300\n")
    assert one_error_line(["whatif", str(export), "--grid-intensity", str(grid)], tmp_path) == (
        f"Error: {grid}:2: column 'timestamp': '0001-01-01T00:00' is outside 1970-2199, the times a series may hold")


def test_watts_and_factors_out_of_range(tmp_path: Path) -> None:
    assert one_error_line(["hetero", "--idle-power", "50", "--idle-power", "1e308"], tmp_path).startswith(
        "Error: Invalid value for '--idle-power': 1e+308 is not in [0, 2000]")
    assert one_error_line(["power-limit", "--max-slowdown", "nan", "/dev/null"], tmp_path).startswith(
        "Error: Invalid value for '--max-slowdown': nan is not >= 1 and finite")
