"""Carbon and cost for where and when the energy was used: the bundled per-region table, a user's intensity or price
series matched to each run, and their bad input (one line naming the file, line and column)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipelines.clusters import tracefiles, whatif
from pipelines.clusters.profiles import profiles_of
from pipelines.home.paths import REPO_ROOT
from pipelines.ingest.common import IngestError
from pipelines.ingest.grid import INTENSITY, PRICE, Rate, find_region, read_series, region_table
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.zeus.traces import Traces
from tests.clusters.test_whatif_anchored import job_log, read
from tests.support.sacct_export import write_export

START = datetime(2024, 3, 1)


@pytest.fixture(scope="module")
def traces(mirror: Path) -> Traces:
    return read_trace_dir(mirror / "zeus")


def series(path: Path, values: list[float], *, start: datetime = START, step_h: float = 1.0, column: str = INTENSITY,
           offset: str = "Z") -> Path:
    lines = [f"timestamp,{column}"] + [f"{(start + timedelta(hours=k * step_h)).isoformat()}{offset},{v}" for k, v in enumerate(values)]
    path.write_text("\n".join(lines) + "\n")
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines", "whatif", *args], capture_output=True, text=True, check=False, cwd=REPO_ROOT)


def test_the_bundled_table_names_its_source_and_finds_codes_in_every_form() -> None:
    table = region_table()
    assert table.height == 274 and table["region"].n_unique() == 274 and (table["gco2_per_kwh"] >= 0).all()
    germany = find_region("de")
    assert (germany.code, germany.gco2_per_kwh, germany.year) == ("DE", 380.95, 2023)
    assert find_region("DEU") == germany and find_region(" us-ca ").code == "US-CA" and find_region("se1").gco2_per_kwh == 25.9
    assert "codecarbon 3.3.2 (MIT licence)" in germany.describe()["source"]  # type: ignore[operator]
    with pytest.raises(ValueError, match=r"--region 'DX': not in the bundled table .*nearest: DE, DJ, DK, DM"):
        find_region("DX")


def test_a_series_is_a_step_function_averaged_over_each_interval() -> None:
    t0 = 1_700_000_000.0
    rate = Rate(np.array([100.0, 300.0, 200.0]), {}, np.array([t0, t0 + 3600, t0 + 7200]), 3600.0)
    start = np.array([t0, t0 + 1800, t0 + 3600, t0 + 5000])
    end = np.array([t0 + 3600, t0 + 5400, t0 + 10_800, t0 + 5000])
    # the first hour; half at 100, half at 300; an hour at 300 then one at 200; a point in the second hour
    assert rate.means(start, end).tolist() == pytest.approx([100.0, 200.0, 250.0, 300.0])
    assert rate.uncovered(np.array([t0 - 1, t0]), np.array([t0 + 60, t0 + 10_801])).tolist() == [0, 1]
    # beyond the span the nearest value holds (--fill)
    assert rate.means(np.array([t0 - 3600]), np.array([t0 + 3600]))[0] == pytest.approx(100.0)
    assert Rate.constant(42.0, {}).means(start, end).tolist() == [42.0] * 4


def test_a_constant_series_gives_the_flat_options_co2e_and_cost(tmp_path: Path, traces: Traces) -> None:
    path = job_log(tmp_path / "lab.csv", [{"hours": 2 + k % 5, "day": k} for k in range(40)])
    hours = 24 * 45
    flat = whatif.run(read(path), profiles_of(traces), whatif.Options(samples=2, grid_gco2_per_kwh=300.0, price_per_kwh=0.2))[0]
    grid = read_series(series(tmp_path / "grid.csv", [300.0] * hours), INTENSITY, "UTC")
    price = read_series(series(tmp_path / "price.csv", [0.2] * hours, column=PRICE), PRICE, "UTC")
    timed = whatif.run(read(path), profiles_of(traces), whatif.Options(samples=2, grid=grid, prices=price))[0]
    for name in ("default_co2e_kg", "zeus_co2e_kg", "co2e_saved_kg", "cost_saved"):
        assert timed["total"][name] == pytest.approx(flat["total"][name], rel=1e-9), name
    assert flat["total"]["default_co2e_kg"] == pytest.approx(0.3 * flat["total"]["default_kwh"], rel=1e-9)
    assert timed["grid"]["file"] == "grid.csv" and timed["grid"]["points"] == hours and flat["grid"]["source"] == "--grid-gco2-per-kwh"


def test_each_run_is_charged_the_intensity_of_when_it_ran(tmp_path: Path, traces: Traces) -> None:
    """One 2-hour job across a change from 150 to 450 g/kWh: its Default run draws half its energy at each, 300 g/kWh."""
    path = job_log(tmp_path / "one.csv", [{"hours": 2, "day": 0.5}])  # noon to 14:00
    grid = read_series(series(tmp_path / "grid.csv", [150.0] * 13 + [450.0] * 11), INTENSITY, "UTC")  # 450 from 13:00
    report = whatif.run(read(path), profiles_of(traces), whatif.Options(samples=1, grid=grid))[0]["total"]
    assert report["default_co2e_kg"] == pytest.approx(report["default_kwh"] * 0.300, rel=1e-9)


def test_naive_timestamps_are_read_in_the_exports_time_zone(tmp_path: Path) -> None:
    utc = read_series(series(tmp_path / "utc.csv", [1.0, 2.0, 3.0], start=datetime(2024, 3, 1, 11)), INTENSITY, "UTC")
    berlin = read_series(series(tmp_path / "berlin.csv", [1.0, 2.0, 3.0], start=datetime(2024, 3, 1, 12), offset=""), INTENSITY,
                         "Europe/Berlin")
    assert berlin.times_s is not None and utc.times_s is not None
    assert berlin.times_s.tolist() == utc.times_s.tolist()
    # the hour that repeats when clocks go back: the second reading is the later instant, in the series' order
    (tmp_path / "back.csv").write_text("timestamp,gco2_per_kwh\n" + "".join(f"2024-10-27T{t},1\n" for t in ("01:00", "02:00", "02:00", "03:00")))
    back = read_series(tmp_path / "back.csv", INTENSITY, "Europe/Berlin")
    assert back.times_s is not None and np.diff(back.times_s).tolist() == [3600.0, 3600.0, 3600.0]  # 23:00Z, 00:00Z, 01:00Z, 02:00Z


@pytest.mark.parametrize(("text", "message"), [
    ("timestamp,gco2_per_kwh\n2024-03-01T00:00Z,100\n2024-03-01T01:00Z,abc\n", r"bad.csv:3: column 'gco2_per_kwh': 'abc' is not a number"),
    ("timestamp,gco2_per_kwh\n2024-03-01T00:00Z,-5\n", r"bad.csv:2: column 'gco2_per_kwh': -5 is negative"),
    ("timestamp,gco2_per_kwh\n2024-03-01T01:00Z,1\n2024-03-01T00:00Z,2\n", r"bad.csv:3: column 'timestamp': '2024-03-01T00:00Z' is not after"),
    ("timestamp,gco2_per_kwh\nyesterday,1\n", r"bad.csv:2: column 'timestamp': cannot parse 'yesterday' as ISO 8601"),
    ("time,value\n2024-03-01T00:00Z,1\n", r"bad.csv:1: missing column 'timestamp'"),
])
def test_bad_series_name_the_file_line_and_column(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(IngestError, match=message):
        read_series(path, INTENSITY, "UTC")


def test_a_series_that_misses_a_job_is_refused_unless_filled(tmp_path: Path, traces: Traces, mirror: Path) -> None:
    path = job_log(tmp_path / "lab.csv", [{"hours": 3, "day": k} for k in range(5)])
    short = series(tmp_path / "short.csv", [200.0] * 48)  # two days: jobs 2 to 4 ran later
    common = (str(path), "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--timezone", "UTC", "--no-progress")
    refused = cli(*common, "--grid-intensity", str(short))
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "covers 2024-03-01T00:00Z to 2024-03-03T00:00Z, not job j2" in refused.stderr and "--fill" in refused.stderr
    filled = cli(*common, "--grid-intensity", str(short), "--fill", "--json")
    assert filled.returncode == 0, filled.stderr
    report = json.loads(filled.stdout)
    assert report["grid"]["filled"] is True
    assert report["total"]["default_co2e_kg"] == pytest.approx(0.2 * report["total"]["default_kwh"], rel=1e-9)
    unknown = cli(*common, "--region", "Germany")
    assert unknown.returncode == 2 and "not in the bundled table" in unknown.stderr and "nearest:" in unknown.stderr
    both = cli(*common, "--region", "DE", "--grid-gco2-per-kwh", "300")
    assert both.returncode == 2 and "one of --region, --grid-intensity and --grid-gco2-per-kwh" in both.stderr


def test_a_job_eta_equal_to_eta_is_plain_zeus_bit_for_bit(tmp_path: Path, traces: Traces) -> None:
    from pipelines.clusters import mapping
    from pipelines.clusters.workloads import workloads_by_default_tta
    from pipelines.zeus.groups import replay_groups

    path = tmp_path / "mixed.sacct"
    write_export(path, 1500, seed=5, span_days=10)
    table = tracefiles.read_trace(path, "mixed", "sacct", "Europe/Berlin", source_file=path.name).table
    jobs = mapping.map_own(table, workloads_by_default_tta(traces), "mixed")
    groups = jobs.select("group", pl.col("start_time_s").alias("start_time"), pl.col("end_time_s").alias("end_time"), "dataset",
                         "runtime_ratio")
    plain = replay_groups(groups, traces, "v100", 0.5, 2.0, engine="reference")
    per_job = replay_groups(groups, traces, "v100", 0.5, 2.0, engine="reference", job_eta=np.full(groups.height, 0.5))
    assert plain.equals(per_job) and plain.height > groups.height  # retries included
    dirty = replay_groups(groups, traces, "v100", 0.5, 2.0, engine="reference", job_eta=np.full(groups.height, 1.0))
    assert dirty["energy"].sum() < plain["energy"].sum()  # every limit chosen for energy alone


def test_carbon_aware_etas_follow_the_grid_and_save_more_co2e_on_a_day_night_series(tmp_path: Path, traces: Traces) -> None:
    from pipelines.clusters.samples import carbon_etas

    t0 = START.timestamp()
    grid = Rate(np.array([150.0, 450.0, 300.0]), {}, np.array([t0, t0 + 3600, t0 + 7200]), 3600.0)
    jobs = pl.DataFrame({"start_time_s": [t0 + 60, t0 + 3700, t0 + 7300]})
    assert carbon_etas(jobs, grid, 0.5, 0.9).tolist() == pytest.approx([0.5, 0.9, 0.7])
    assert carbon_etas(jobs, Rate(np.array([200.0]), {}, np.array([t0]), 3600.0), 0.5, 0.9).tolist() == [0.5] * 3
    path = tmp_path / "lab.sacct"
    write_export(path, 3000, seed=8, span_days=14, timezone="UTC")
    start = datetime(2024, 9, 14)
    day_night = series(tmp_path / "grid.csv", [150.0 if 8 <= k % 24 < 18 else 450.0 for k in range(24 * 40)], start=start)
    options = whatif.Options(samples=3, grid=read_series(day_night, INTENSITY, "UTC"), carbon_aware=True)
    total = whatif.run(tracefiles.read_trace(path, "lab", "sacct", "UTC", source_file=path.name), profiles_of(traces), options)[0]["total"]
    aware = total["carbon_aware"]
    assert aware["co2e_saved_kg"] >= total["co2e_saved_kg"] > 0
    assert aware["energy_saved_kwh"] >= total["energy_saved_kwh"]
    low, high = aware["co2e_saved_kg_interval"]
    assert low <= aware["co2e_saved_kg"] <= high


def test_carbon_aware_needs_a_series(tmp_path: Path, mirror: Path) -> None:
    path = job_log(tmp_path / "lab.csv", [{"hours": 3, "day": k} for k in range(5)])
    done = cli(str(path), "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--timezone", "UTC", "--region", "DE", "--carbon-aware")
    assert done.returncode == 2 and "--carbon-aware takes each job's eta from the grid's intensity" in done.stderr


@pytest.mark.slow
def test_the_html_page_draws_the_series_with_the_hours_the_jobs_ran(tmp_path: Path, mirror: Path) -> None:
    path = job_log(tmp_path / "lab.csv", [{"hours": 3, "day": k / 2} for k in range(8)])
    grid = series(tmp_path / "grid.csv", [150.0 if 8 <= k % 24 < 18 else 450.0 for k in range(24 * 6)])
    page = tmp_path / "report.html"
    done = cli(str(path), "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--timezone", "UTC", "--grid-intensity", str(grid),
               "--html", str(page))
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    section = text[text.index('<section id="grid">'):]
    assert "The grid when the jobs ran" in section and "data:image/png;base64," in section.split("</section>")[0]
    assert '<section id="grid">' not in cli_page(path, mirror, tmp_path)  # a flat intensity has no series to draw


def cli_page(path: Path, mirror: Path, tmp_path: Path) -> str:
    page = tmp_path / "flat.html"
    done = cli(str(path), "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--timezone", "UTC", "--region", "DE", "--html", str(page))
    assert done.returncode == 0, done.stderr
    return page.read_text()
