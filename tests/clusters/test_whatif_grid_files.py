"""Grid and price files as operators download them (Electricity Maps' export, a day-ahead market's EUR/MWh file), each
checked against the same data converted by hand to the generic form; the currency of money; gaps, fills and years; the
saving split into its energy part and its timing part."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pipelines.cli.whatif import cli as whatif_cli
from pipelines.clusters import whatif
from pipelines.clusters.profiles import profiles_of
from pipelines.ingest.common import IngestError
from pipelines.ingest.grid import INTENSITY, PRICE, read_series
from pipelines.ingest.grid_files import parse_price_unit, read_grid, read_prices
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.report.text import render
from pipelines.zeus.traces import Traces
from tests.clusters.test_whatif_anchored import job_log, read
from tests.support.cli import run_main

#: Electricity Maps' hourly CSV export header, as downloaded.
EM_HEADER = ("Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO₂eq/kWh (direct),Carbon Intensity gCO₂eq/kWh (LCA),"
             "Low Carbon Percentage,Renewable Percentage,Data Source,Data Estimated,Data Estimation Method")
T0 = datetime(2024, 3, 1)  # job_log's START: the jobs' times are UTC


@pytest.fixture(scope="module")
def traces(mirror: Path) -> Traces:
    return read_trace_dir(mirror / "zeus")


#: ``python -m pipelines whatif ARGS`` -> its exit status, stdout and stderr.
Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """``python -m pipelines whatif ARGS``, run in this process (tests/support/cli.py)."""
    return lambda *args: run_main(capsys, "whatif", *args)


def hours(n: int, start: datetime = T0) -> list[datetime]:
    return [start + timedelta(hours=k) for k in range(n)]


def write_generic(path: Path, column: str, rows: list[tuple[datetime, float]]) -> Path:
    """The generic form, written by hand: ISO 8601 with Z, the value as given."""
    path.write_text(f"timestamp,{column}\n" + "".join(f"{t:%Y-%m-%dT%H:%M:%S}Z,{v!r}\n" for t, v in rows))
    return path


def electricity_maps(path: Path, rows: list[tuple[datetime, float, float]]) -> Path:
    """An Electricity Maps export of (UTC hour, direct, LCA) as the site writes it: bare times, the zone in the header."""
    path.write_text(EM_HEADER + "\n" + "".join(f"{t:%Y-%m-%d %H:%M:%S},Germany,Germany,DE,{d},{lca},48.1,41.3,entsoe.eu,false,\n"
                                               for t, d, lca in rows), encoding="utf-8")
    return path


def test_the_later_export_headers_life_cycle_column_is_lca(tmp_path: Path) -> None:
    # The portal's later yearly files: "Carbon intensity" in lower case, "(Life cycle)" for LCA, CFE% and RE% columns.
    path = tmp_path / "DE_2025_hourly.csv"
    path.write_text("Datetime (UTC),Country,Zone name,Zone id,Carbon intensity gCO₂eq/kWh (direct),Carbon intensity gCO₂eq/kWh (Life cycle),"
                    "Carbon-free energy percentage (CFE%),Renewable energy percentage (RE%),Data source,Data estimated,"
                    "Data estimation method\n2025-01-01 00:00:00,Germany,Germany,DE,310.5,380.25,52.1,48.0,entsoe.eu,false,\n"
                    "2025-01-01 01:00:00,Germany,Germany,DE,300.0,370.0,53.0,49.0,entsoe.eu,false,\n", encoding="utf-8")
    direct, lca = read_grid(path, None, "UTC"), read_grid(path, "lca", "UTC")
    assert direct.values.tolist() == [310.5, 300.0] and lca.values.tolist() == [380.25, 370.0]
    assert lca.describe["column_header"] == "Carbon intensity gCO₂eq/kWh (Life cycle)" and lca.describe["format"] == "Electricity Maps"
    assert direct.times_s is not None and direct.times_s[0] == datetime(2025, 1, 1, tzinfo=UTC).timestamp()


def day_night(k: int) -> tuple[float, float]:
    return (150.0 + 7 * (k % 5), 210.0 + 3 * (k % 7)) if 8 <= k % 24 < 18 else (420.0 + (k % 3), 480.0 + (k % 4))


JOBS = [{"hours": 2 + k % 5, "day": k + 0.3 * (k % 3)} for k in range(30)]


def test_an_electricity_maps_export_gives_the_generic_forms_figures(tmp_path: Path, traces: Traces) -> None:
    # 40 days over the spring-forward night of Europe/Berlin (2024-03-31 02:00 exists in UTC, the header's zone)
    rows = [(t, *day_night(k)) for k, t in enumerate(hours(24 * 40))]
    export = electricity_maps(tmp_path / "DE_2024_hourly.csv", rows)
    path = job_log(tmp_path / "lab.csv", JOBS)
    for column, index in (("direct", 1), ("lca", 2)):
        # the export read with another zone given: the header's UTC wins
        grid = read_grid(export, None if column == "direct" else column, "Europe/Berlin")
        generic = read_series(write_generic(tmp_path / f"{column}.csv", INTENSITY, [(r[0], r[index]) for r in rows]), INTENSITY, "UTC")
        got = whatif.run(read(path), profiles_of(traces), whatif.Options(samples=2, grid=grid))[0]
        want = whatif.run(read(path), profiles_of(traces), whatif.Options(samples=2, grid=generic))[0]
        for name in ("default_co2e_kg", "zeus_co2e_kg", "co2e_saved_kg", "co2e_saved_by_energy_kg", "co2e_saved_by_timing_kg"):
            assert got["total"][name] == pytest.approx(want["total"][name], rel=1e-6, abs=1e-9), (column, name)
        assert got["grid"]["column"] == column and got["grid"]["format"] == "Electricity Maps"
        assert got["grid"]["timezone"] == "UTC" and got["grid"]["timezone_source"] == "header"
    assert "column direct (GHG Protocol scope 2, location-based" in render(got | {"grid": {**got["grid"], "column": "direct"}})


def test_the_export_on_the_command_line_says_its_column(cli: Cli, tmp_path: Path, mirror: Path) -> None:
    rows = [(t, *day_night(k)) for k, t in enumerate(hours(24 * 8))]
    export = electricity_maps(tmp_path / "em.csv", rows)
    path = job_log(tmp_path / "lab.csv", [{"hours": 3, "day": k} for k in range(5)])
    common = (str(path), "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--no-progress", "--grid-intensity", str(export))
    done = cli(*common, "--grid-column", "lca", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["grid"]["column"] == "lca" and report["grid"]["column_header"] == "Carbon Intensity gCO₂eq/kWh (LCA)"
    assert report["grid"]["mean_gco2_per_kwh"] == pytest.approx(np.mean([r[2] for r in rows]), rel=1e-12)
    wrong = cli(*common, "--grid-column", "scope3")
    assert wrong.returncode == 2 and "em.csv:1: --grid-column 'scope3': no such column" in wrong.stderr


def market(path: Path, rows: list[tuple[datetime, float]]) -> Path:
    path.write_text("Datetime,Price (EUR/MWh)\n" + "".join(f"{t:%Y-%m-%d %H:%M:%S},{v:.2f}\n" for t, v in rows))
    return path


def eur_mwh(k: int) -> float:
    """A day-ahead price: negative at noon on weekend days, as in a sunny German spring."""
    return -12.5 if k % 24 in (12, 13) and (k // 24) % 7 in (1, 2) else 60.0 + 1.5 * (k % 24)


def test_a_market_file_in_eur_per_mwh_with_negative_hours_and_a_missing_day(tmp_path: Path, traces: Traces) -> None:
    missing = range(24 * 9, 24 * 10)  # 2024-03-10 is not in the file: a 25-hour step from 03-09 23:00
    rows = [(t, eur_mwh(k)) for k, t in enumerate(hours(24 * 40)) if k not in missing]
    prices = read_prices(market(tmp_path / "day_ahead.csv", rows), None, "UTC")
    assert prices.describe["currency"] == "EUR" and prices.describe["unit"] == "EUR/MWh"
    assert prices.describe["negative_points"] == sum(v < 0 for _, v in rows) > 0
    # the same hours converted by hand: EUR/MWh / 1000 = EUR/kWh
    generic = read_prices(write_generic(tmp_path / "generic.csv", PRICE, [(t, round(v, 2) / 1000) for t, v in rows]), None, "UTC")
    path = job_log(tmp_path / "lab.csv", JOBS)
    got = whatif.run(read(path), profiles_of(traces), whatif.Options(samples=2, prices=prices))[0]
    want = whatif.run(read(path), profiles_of(traces), whatif.Options(samples=2, prices=generic))[0]
    for name in ("default_cost", "zeus_cost", "cost_saved", "cost_saved_by_energy", "cost_saved_by_timing", "default_met_price_per_kwh"):
        assert got["total"][name] == pytest.approx(want["total"][name], rel=1e-6, abs=1e-12), name
    assert got["prices"]["currency"] == "EUR" and want["prices"]["currency"] is None
    # the gap: one, 24 h, and the jobs' hours inside 2024-03-10 (hand-counted from JOBS)
    gap_start, gap_end = T0 + timedelta(days=9), T0 + timedelta(days=10)
    inside = 0.0
    for job in JOBS:
        start = T0 + timedelta(days=float(job["day"]))
        end = start + timedelta(hours=float(job["hours"]))
        inside += max(0.0, (min(end, gap_end) - max(start, gap_start)).total_seconds()) / 3600
    assert inside > 0
    assert got["prices"]["gaps"] == {"count": 1, "longest_h": 24.0, "job_hours": pytest.approx(inside, rel=1e-12)}
    text = render(got)
    assert "day_ahead.csv: 1 gap (the longest 24.0 h)" in text and " EUR over day_ahead.csv" in text
    assert "cost saved" in text and "EUR by energy" in text


def test_embers_wholesale_price_file_reads_as_downloaded(tmp_path: Path) -> None:
    # Ember's European wholesale electricity prices: two time columns (the UTC one is the series' times) and EUR/MWhe
    path = tmp_path / "Germany.csv"
    path.write_text("Country,ISO3 Code,Datetime (UTC),Datetime (Local),Price (EUR/MWhe)\n"
                    "Germany,DEU,2024-03-30 23:00:00,2024-03-31 00:00:00,12.5\n"
                    "Germany,DEU,2024-03-31 00:00:00,2024-03-31 01:00:00,-3.75\n"
                    "Germany,DEU,2024-03-31 01:00:00,2024-03-31 03:00:00,0.0\n", encoding="utf-8")
    prices = read_prices(path, None, "Europe/Berlin")
    assert prices.describe["currency"] == "EUR" and prices.describe["column"] == "Price (EUR/MWhe)"
    assert prices.values.tolist() == [12.5 / 1000, -3.75 / 1000, 0.0] and prices.describe["negative_points"] == 1
    assert prices.times_s is not None
    assert prices.times_s.tolist() == [datetime(2024, 3, 30, 23, tzinfo=UTC).timestamp() + 3600 * k for k in range(3)]
    # a file of local times only: read in the zone given (--series-timezone), Berlin's spring-forward hour skipped as it is
    local = tmp_path / "local.csv"
    local.write_text("Country,ISO3 Code,Datetime (Local),Price (EUR/MWhe)\nGermany,DEU,2024-03-31 01:00:00,12.5\n"
                     "Germany,DEU,2024-03-31 03:00:00,-3.75\n", encoding="utf-8")
    read_local = read_prices(local, None, "Europe/Berlin")
    assert read_local.times_s is not None
    assert read_local.times_s.tolist() == [datetime(2024, 3, 31, 0, tzinfo=UTC).timestamp(), datetime(2024, 3, 31, 1, tzinfo=UTC).timestamp()]


def test_one_job_meets_the_hand_computed_mean_price_negative_hours_and_the_gap_included(tmp_path: Path, traces: Traces) -> None:
    """A 6-hour job from 2024-03-09 21:00 to 03-10 03:00 UTC, 03-10 missing from the file: it meets 21:00 and 22:00 as read,
    and 23:00 and the missing day's first three hours at the 23:00 price (the reading before a gap holds over it)."""
    missing = range(24 * 9, 24 * 10)
    rows = [(t, eur_mwh(k)) for k, t in enumerate(hours(24 * 12)) if k not in missing]
    prices = read_prices(market(tmp_path / "m.csv", rows), None, "UTC")
    path = job_log(tmp_path / "one.csv", [{"hours": 6, "day": 8 + 21 / 24}])  # 03-09 21:00 to 03-10 03:00 UTC
    total = whatif.run(read(path), profiles_of(traces), whatif.Options(samples=1, prices=prices))[0]["total"]
    by_hour = {t: round(v, 2) / 1000 for t, v in rows}
    met = [by_hour[T0 + timedelta(hours=h)] for h in (8 * 24 + 21, 8 * 24 + 22)] + [by_hour[T0 + timedelta(hours=8 * 24 + 23)]] * 4
    assert total["default_met_price_per_kwh"] == pytest.approx(sum(met) / 6, rel=1e-9)
    assert total["default_cost"] == pytest.approx(total["default_kwh"] * sum(met) / 6, rel=1e-9)


def test_the_saving_is_its_energy_part_plus_its_timing_part(tmp_path: Path, traces: Traces) -> None:
    rows = [(t, day_night(k)[0]) for k, t in enumerate(hours(24 * 40))]
    grid = read_series(write_generic(tmp_path / "g.csv", INTENSITY, rows), INTENSITY, "UTC")
    prices = read_prices(market(tmp_path / "m.csv", [(t, eur_mwh(k)) for k, t in enumerate(hours(24 * 40))]), None, "UTC")
    path = job_log(tmp_path / "lab.csv", JOBS)
    total = whatif.run(read(path), profiles_of(traces), whatif.Options(samples=1, grid=grid, prices=prices, carbon_aware=True))[0]["total"]
    # the identity of a single sample: saved = kWh saved x Default's met + Zeus's kWh x (Default's met - Zeus's met)
    assert total["co2e_saved_by_energy_kg"] + total["co2e_saved_by_timing_kg"] == pytest.approx(total["co2e_saved_kg"], rel=1e-12)
    assert total["cost_saved_by_energy"] + total["cost_saved_by_timing"] == pytest.approx(total["cost_saved"], rel=1e-12)
    assert total["default_met_gco2_per_kwh"] == pytest.approx(1000 * total["default_co2e_kg"] / total["default_kwh"], rel=1e-12)
    assert total["zeus_met_gco2_per_kwh"] == pytest.approx(1000 * total["zeus_co2e_kg"] / total["zeus_kwh"], rel=1e-12)
    assert total["co2e_saved_by_energy_kg"] == pytest.approx(total["energy_saved_kwh"] * total["default_met_gco2_per_kwh"] / 1000, rel=1e-12)
    assert min(r[1] for r in rows) <= total["default_met_gco2_per_kwh"] <= max(r[1] for r in rows)
    aware = total["carbon_aware"]
    assert aware["co2e_saved_by_energy_kg"] + aware["co2e_saved_by_timing_kg"] == pytest.approx(aware["co2e_saved_kg"], rel=1e-12)
    assert aware["co2e_added_over_zeus_kg"] == pytest.approx(aware["co2e_saved_kg"] - total["co2e_saved_kg"], rel=1e-9, abs=1e-12)
    report = whatif.run(read(path), profiles_of(traces), whatif.Options(samples=1, grid=grid, carbon_aware=True))[0]
    text = render(report)
    assert "CO2e saved" in text and " by energy (the kWh saved at the " in text and "over plain Zeus it saves" in text


def test_a_flat_intensity_has_no_timing_part(tmp_path: Path, traces: Traces) -> None:
    total = whatif.run(read(job_log(tmp_path / "lab.csv", JOBS)), profiles_of(traces),
                       whatif.Options(samples=1, grid_gco2_per_kwh=250.0))[0]["total"]
    assert total["default_met_gco2_per_kwh"] == pytest.approx(250.0, rel=1e-12)
    assert total["zeus_met_gco2_per_kwh"] == pytest.approx(250.0, rel=1e-12)
    assert total["co2e_saved_by_timing_kg"] == pytest.approx(0.0, abs=1e-9)
    assert total["co2e_saved_by_energy_kg"] == pytest.approx(0.25 * total["energy_saved_kwh"], rel=1e-12)


def test_a_series_of_another_year_is_named_and_fill_says_what_it_filled(cli: Cli, tmp_path: Path, mirror: Path) -> None:
    late = [(t, 300.0) for t in hours(24 * 3, datetime(2023, 12, 29))]  # 2023-12-29 to 2024-01-01 00:00
    grid = write_generic(tmp_path / "old.csv", INTENSITY, late)
    jobs = [{"hours": 3, "day": k} for k in range(4)]  # 2024-03-01 .. 03-04, 3 h each: all after the series' end
    path = job_log(tmp_path / "lab.csv", jobs)
    done = cli(str(path), "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--no-progress", "--grid-intensity", str(grid), "--fill",
               "--json")
    assert done.returncode == 0, done.stderr
    g = json.loads(done.stdout)["grid"]
    assert g["series_years"] == "2023" and g["jobs_years"] == "2024" and g["years_note"] == "series 2023, jobs 2024"
    assert g["filled_before_job_hours"] == 0.0 and g["filled_after_job_hours"] == pytest.approx(4 * 3.0)
    text = cli(str(path), "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--no-progress", "--grid-intensity", str(grid), "--fill")
    assert "old.csv: series 2023, jobs 2024" in text.stdout
    assert "old.csv: --fill priced 0.0 job-hours before its first reading at its first value and 12.0 after its end at its last" in text.stdout
    region = cli(str(path), "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--no-progress", "--region", "DE")
    assert "at DE's 381 g/kWh (Germany, 2023" in region.stdout and "DE: table 2023, jobs 2024" in region.stdout


def test_every_money_figure_carries_its_currency(cli: Cli, tmp_path: Path, mirror: Path) -> None:
    path = job_log(tmp_path / "lab.csv", [{"hours": 3, "day": k} for k in range(5)])
    common = (str(path), "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--no-progress", "--price-per-kwh", "0.25")
    named = cli(*common, "--price-unit", "EUR")
    assert named.returncode == 0, named.stderr
    saved = next(line for line in named.stdout.splitlines() if line.startswith("saved on"))
    assert " EUR at 0.25 EUR per kWh" in saved
    assert json.loads(cli(*common, "--price-unit", "EUR/kWh", "--json").stdout)["prices"]["currency"] == "EUR"
    unnamed = cli(*common)
    assert "(no currency given: --price-unit EUR names it)" in unnamed.stdout
    refused = cli(*common, "--price-unit", "EUR/MWh")
    assert refused.returncode == 2 and "--price-per-kwh is per kWh" in refused.stderr
    high = cli(*(c if c != "0.25" else "85" for c in common))
    assert high.returncode == 0 and high.stderr.count("looks like per MWh") == 1 and "looks like per MWh" in high.stdout


@pytest.mark.parametrize(("text", "unit", "message"), [
    ("when,what\n2024-03-01T00:00Z,1\n", None, r"bad.csv:1: cannot tell the file's format from its header \['when', 'what'\]: the "
     r"formats known are timestamp,price_per_kwh \(generic\); a time column"),
    ("Datetime,Price\n2024-03-01 00:00:00,1\n", None, r"bad.csv:1: column 'Price': the header does not say the price's unit: give "
     r"--price-unit"),
    ("Datetime,Price (EUR/MWh)\n2024-03-01 00:00:00,1\n", "USD/MWh", r"bad.csv:1: column 'Price \(EUR/MWh\)': the header \('Price "
     r"\(EUR/MWh\)'\) says EUR/MWh, --price-unit says USD/MWh"),
    ("Datetime,Price (EUR/MWh)\n2024-03-01 00:00:00,1\n2024-03-01 01:00:00,x\n", None, r"bad.csv:3: column 'Price \(EUR/MWh\)': 'x' is "
     "not a number"),
    ("Datetime,Price (EUR/MWh)\n2024-03-31 01:00:00,1\n2024-03-31 02:00:00,1\n", None, r"bad.csv:3: column 'Datetime': '2024-03-31 "
     r"02:00:00' does not exist in Europe/Berlin .*--series-timezone\?"),
])
def test_bad_price_files_name_the_file_line_and_column(tmp_path: Path, text: str, unit: str | None, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(IngestError, match=message):
        read_prices(path, parse_price_unit(unit) if unit else None, "Europe/Berlin")


def test_a_grid_file_of_no_known_format_names_the_formats(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("Datetime (UTC),Zone Id,Intensity\n2024-03-01 00:00:00,DE,100\n")
    with pytest.raises(IngestError, match=r"bad.csv:1: cannot tell .* timestamp,gco2_per_kwh \(generic\); Electricity Maps' CSV export"):
        read_grid(path, None, "UTC")


@pytest.mark.parametrize(("text", "currency", "per_kwh"), [
    ("price_per_kwh", None, 1.0), ("Price (EUR/MWh)", "EUR", 0.001), ("USD/kWh", "USD", 1.0), ("ct/kWh", None, 0.01),
    ("€/MWh", "EUR", 0.001), ("EUR", "EUR", None), ("GBP p/kWh", "GBP", 0.01),
])
def test_price_units_as_headers_write_them(text: str, currency: str | None, per_kwh: float | None) -> None:
    unit = parse_price_unit(text)
    assert unit is not None and unit.currency == currency
    assert unit.per_kwh == (None if per_kwh is None else pytest.approx(per_kwh, rel=1e-15))
    assert parse_price_unit("Datetime") is None and parse_price_unit("Zone Name") is None


@pytest.mark.parametrize("text", ["XYZ", "EUE", "Price (XYZ/MWh)", "ABC/kWh"])
def test_a_currency_iso_4217_does_not_know_is_no_unit(text: str) -> None:
    assert parse_price_unit(text) is None
    refused = CliRunner().invoke(whatif_cli, ["x.sacct", "--price-unit", text])
    assert refused.exit_code == 2 and f"{text!r} is not a price unit: give an ISO 4217 currency" in refused.output, refused.output


def test_bare_times_follow_the_series_timezone(tmp_path: Path) -> None:
    berlin = [datetime(2024, 3, 1, 12, tzinfo=UTC) + timedelta(hours=k) for k in range(3)]
    path = tmp_path / "m.csv"
    path.write_text("Datetime,Price (EUR/MWh)\n2024-03-01 13:00:00,1\n2024-03-01 14:00:00,2\n2024-03-01 15:00:00,3\n")
    rate = read_prices(path, None, "Europe/Berlin")
    assert rate.times_s is not None and rate.times_s.tolist() == [t.timestamp() for t in berlin]
    assert rate.values.tolist() == pytest.approx([0.001, 0.002, 0.003], rel=1e-15)


def test_the_html_page_carries_the_currency_the_split_and_the_gaps(tmp_path: Path, traces: Traces) -> None:
    import polars as pl

    from pipelines.report import html as whatif_html

    missing = range(24 * 9, 24 * 10)
    rows = [(t, eur_mwh(k)) for k, t in enumerate(hours(24 * 40)) if k not in missing]
    prices = read_prices(market(tmp_path / "day_ahead.csv", rows), None, "UTC")
    report = whatif.run(read(job_log(tmp_path / "lab.csv", JOBS)), profiles_of(traces), whatif.Options(samples=1, prices=prices))[0]
    provenance = whatif_html.Provenance.now("lab.csv", "ab" * 32, {"--samples": "1"}, "gpu-energy whatif lab.csv --html r.html")
    page = whatif_html.render(report, pl.DataFrame(), provenance)
    money = page[page.index("<ul class='money'>"):]
    money = money[:money.index("</ul>")]
    assert " EUR over day_ahead.csv" in money and "cost saved" in money and "EUR by energy" in money
    assert "day_ahead.csv: 1 gap (the longest 24.0 h)" in money


def test_a_per_mwh_file_read_as_per_kwh_is_said_once(tmp_path: Path) -> None:
    rows = [(t, 40.0 + k) for k, t in enumerate(hours(48))]  # EUR/MWh values under a per-kWh header
    rate = read_prices(write_generic(tmp_path / "p.csv", PRICE, rows), None, "UTC")
    assert rate.describe["warning"] == ("48 of 48 prices above 5 per kWh (the highest 87): looks like per MWh: name the unit in "
                                        "the header (Price (EUR/MWh)), or with --price-unit where it names none")
    assert "warning" not in read_prices(write_generic(tmp_path / "ok.csv", PRICE, [(t, 0.04) for t in hours(48)]), None, "UTC").describe
