"""An OpenEI U.S. Utility Rate Database item read offline (the JSON Zeus's OpenEIClient fetches): a flat and a time-of-use
tariff give the figures of the same schedule written out by hand as an hourly series."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from pipelines.clusters import whatif
from pipelines.clusters.profiles import profiles_of
from pipelines.home.paths import REPO_ROOT
from pipelines.ingest.common import IngestError
from pipelines.ingest.grid_files import read_prices
from pipelines.ingest.openei import TIERS_NOTE, read_tariff
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.report.text import render
from pipelines.zeus.traces import Traces
from tests.clusters.test_whatif_anchored import job_log, read

ZONE = "America/New_York"
#: Time of use: off-peak 0.08 + 0.01 adj, peak (weekdays 14:00-19:00 local, June to September) 0.30 + 0.02 adj; a second tier
#: (above 1,000 kWh a month) that is not modelled.
TOU_PERIODS = [[{"max": 1000, "rate": 0.08, "adj": 0.01, "unit": "kWh"}, {"rate": 0.11, "unit": "kWh"}],
               [{"rate": 0.30, "adj": 0.02, "unit": "kWh"}]]
TOU_WEEKDAY = [[1 if 5 <= m <= 8 and 14 <= h < 19 else 0 for h in range(24)] for m in range(12)]
TOU_WEEKEND = [[0] * 24 for _ in range(12)]


@pytest.fixture(scope="module")
def traces(mirror: Path) -> Traces:
    return read_trace_dir(mirror / "zeus")


def item(periods: list, weekday: list, weekend: list, label: str = "5f0c1a2b3c4d5e6f7a8b9c0d") -> dict:
    return {"label": label, "utility": "Example Electric Co", "name": "GS-TOU", "sector": "Commercial", "energyratestructure": periods,
            "energyweekdayschedule": weekday, "energyweekendschedule": weekend}


def by_hand(path: Path, periods: list, weekday: list, weekend: list, start: datetime, hours: int) -> Path:
    """The schedule written out hourly in UTC: each hour's local month, hour and weekday by zoneinfo, its first tier's rate + adj."""
    lines = ["timestamp,price_per_kwh"]
    for k in range(hours):
        t = start + timedelta(hours=k)
        local = t.astimezone(ZoneInfo(ZONE))
        period = (weekend if local.weekday() >= 5 else weekday)[local.month - 1][local.hour]
        tier = periods[period][0]
        lines.append(f"{t:%Y-%m-%dT%H:%M:%S}Z,{tier['rate'] + tier.get('adj', 0.0)!r}")
    path.write_text("\n".join(lines) + "\n")
    return path


#: Jobs from 2024-03-01 (UTC) every 5 days over the summer, some across the peak hours and the weekend.
JOBS = [{"hours": 3 + k % 7, "day": 5 * k + 0.29 * (k % 4)} for k in range(40)]


@pytest.mark.parametrize("kind", ["flat", "time-of-use"])
def test_a_tariff_gives_the_figures_of_its_schedule_written_out_hourly(tmp_path: Path, traces: Traces, kind: str) -> None:
    if kind == "flat":
        periods, weekday, weekend = [[{"rate": 0.1432, "adj": 0.0061, "unit": "kWh"}]], [[0] * 24] * 12, [[0] * 24] * 12
    else:
        periods, weekday, weekend = TOU_PERIODS, TOU_WEEKDAY, TOU_WEEKEND
    tariff_file = tmp_path / "rate.json"
    tariff_file.write_text(json.dumps({"items": [item(periods, weekday, weekend)]}))
    path = job_log(tmp_path / "lab.csv", JOBS)
    tariff = read_tariff(tariff_file, ZONE)
    hourly = read_prices(by_hand(tmp_path / "hourly.csv", periods, weekday, weekend, datetime(2024, 2, 1, tzinfo=UTC), 24 * 320), None, "UTC")
    got = whatif.run(read(path), profiles_of(traces), whatif.Options(samples=2, tariff=tariff))[0]
    want = whatif.run(read(path), profiles_of(traces), whatif.Options(samples=2, prices=hourly))[0]
    for name in ("default_cost", "zeus_cost", "cost_saved", "cost_saved_by_energy", "cost_saved_by_timing", "default_met_price_per_kwh",
                 "zeus_met_price_per_kwh"):
        assert got["total"][name] == pytest.approx(want["total"][name], rel=1e-9, abs=1e-12), name
    assert got["prices"]["currency"] == "USD" and got["prices"]["label"] == "5f0c1a2b3c4d5e6f7a8b9c0d"
    if kind == "flat":
        assert got["total"]["default_met_price_per_kwh"] == pytest.approx(0.1493, rel=1e-12)
        assert "note" not in got["prices"]
    else:
        assert 0.09 < got["total"]["default_met_price_per_kwh"] < 0.32  # some jobs met the peak
        assert got["prices"]["note"] == TIERS_NOTE
        assert TIERS_NOTE in render(got) and " USD over rate.json (OpenEI 5f0c1a2b3c4d5e6f7a8b9c0d" in render(got)


def test_the_item_of_a_label_and_bad_items_name_the_field(tmp_path: Path, mirror: Path) -> None:
    path = tmp_path / "rates.json"
    path.write_text(json.dumps({"items": [item(TOU_PERIODS, TOU_WEEKDAY, TOU_WEEKEND, "a"), item([[{"rate": 0.2}]], [[0] * 24] * 12,
                                                                                                [[0] * 24] * 12, "b")]}))
    with pytest.raises(IngestError, match=r"rates.json: 2 items have a rate \(a, b\): pick one with --price-label"):
        read_tariff(path, ZONE)
    assert read_tariff(path, ZONE, "b").weekday.tolist() == [[0.2] * 24] * 12
    bad = [[0] * 24 for _ in range(12)]
    bad[3][7] = 2
    path.write_text(json.dumps([item(TOU_PERIODS, bad, TOU_WEEKEND)]))
    with pytest.raises(IngestError, match=r"rates.json: \[0\].energyweekdayschedule\[3\]\[7\]: 2 is not a period of energyratestructure \(0..1\)"):
        read_tariff(path, ZONE)
    path.write_text('{"items": [\n  {"label": "a",}\n]}')
    with pytest.raises(IngestError, match=r"rates.json:2: not JSON"):
        read_tariff(path, ZONE)
    log = job_log(tmp_path / "lab.csv", [{"hours": 3, "day": k} for k in range(3)])
    path.write_text(json.dumps(item([[{"rate": 0.2}]], [[0] * 24] * 12, [[0] * 24] * 12)))
    done = subprocess.run([sys.executable, "-m", "pipelines", "whatif", str(log), "--trace-dir", str(mirror / "zeus"), "--samples", "1",
                           "--no-progress", "--timezone", ZONE, "--price", str(path), "--json"], capture_output=True, text=True, check=False,
                          cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["total"]["default_cost"] == pytest.approx(0.2 * report["total"]["default_kwh"], rel=1e-12)
    assert report["prices"]["currency"] == "USD" and report["prices"]["timezone"] == ZONE


def test_a_tariff_is_one_price_and_is_in_usd(tmp_path: Path, mirror: Path) -> None:
    path = tmp_path / "rate.json"
    path.write_text(json.dumps(item([[{"rate": 0.2}]], [[0] * 24] * 12, [[0] * 24] * 12)))
    log = job_log(tmp_path / "lab.csv", [{"hours": 3, "day": k} for k in range(3)])
    common = [sys.executable, "-m", "pipelines", "whatif", str(log), "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--price", str(path)]
    for extra, message in ((["--price-per-kwh", "0.3"], "give one of --price and --price-per-kwh"),
                           (["--price-unit", "EUR/kWh"], "--price-unit: an OpenEI tariff is in USD per kWh")):
        done = subprocess.run([*common, *extra], capture_output=True, text=True, check=False, cwd=REPO_ROOT)
        assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1
