"""Every ``whatif`` option shows in every output: the carbon-aware Zeus with a power-limit-only profile (``--profiles
GPU=FILE``), and for each option the JSON's figures the text and the page show too."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipelines.clusters import whatif
from pipelines.clusters.profiles import power_limit_profiles, profiles_of
from pipelines.clusters.samples import carbon_etas
from pipelines.ingest.grid import INTENSITY, read_series
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.zeus.power_limit_replay import replay_power_limit_only
from pipelines.zeus.traces import Traces
from tests.clusters.test_whatif_anchored import job_log, read

START = datetime(2024, 3, 1)


@pytest.fixture(scope="module")
def traces(mirror: Path) -> Traces:
    return read_trace_dir(mirror / "zeus")


def day_night(path: Path, days: int = 40) -> Path:
    """An hourly intensity series from START: 150 g/kWh from 08:00 to 18:00, 450 otherwise."""
    lines = [f"timestamp,{INTENSITY}"] + [f"{(START + timedelta(hours=k)).isoformat()}Z,{150.0 if 8 <= k % 24 < 18 else 450.0}"
                                          for k in range(24 * days)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_carbon_aware_with_a_power_limit_only_profile(tmp_path: Path, traces: Traces, mirror: Path) -> None:
    """``--carbon-aware --profiles a40=LOG``: the A40 jobs run carbon-aware at the limit their own eta chooses (eta 0.5 at the
    series' cleanest hour, 0.9 at its dirtiest), every figure present in the row and the total; the A40's carbon-aware energy
    is the optimizer's replay with those etas, computed here."""
    log = mirror / "zeus" / "profile_data" / "A40+resnet50+gpu0.csv"
    # A40 jobs starting at 02:00 (dirty) and 12:00 (clean), alternately; V100 jobs beside them
    jobs = [{"hours": 1 + k % 3, "day": k + (2 if k % 2 else 12) / 24, "gpu_type": "a40", "name": f"r{k % 2}"} for k in range(8)]
    jobs += [{"hours": 2, "day": k} for k in range(8)]
    path = job_log(tmp_path / "lab.csv", jobs)
    grid = read_series(day_night(tmp_path / "grid.csv"), INTENSITY, "UTC")
    profiles = profiles_of(traces).with_power_limit(power_limit_profiles([f"a40={log}"]))
    report = whatif.run(read(path), profiles, whatif.Options(samples=2, grid=grid, carbon_aware=True))[0]
    a40, total = report["gpus"]["a40"], report["total"]
    assert a40["power_limit_only"]
    for part in (a40, report["gpus"]["v100"], total):
        aware = part["carbon_aware"]
        assert aware is not None and aware["co2e_saved_kg"] is not None and aware["energy_saved_kwh"] is not None
    plo = profiles.power_limit["a40"]
    mine = [j for j in jobs if j.get("gpu_type") == "a40"]
    starts = np.array([(START + timedelta(days=float(j["day"]))).timestamp() for j in mine])
    etas = carbon_etas(pl.DataFrame({"start_time_s": starts}), grid, 0.5, 0.9)
    assert sorted(set(np.round(etas, 12).tolist())) == [0.5, 0.9]
    runs = replay_power_limit_only(plo.measurements, plo.selector(0.5), pl.DataFrame(
        {"group": [f"alice/{j['name']}/1gpu" for j in mine], "runtime_s": [3600.0 * j["hours"] for j in mine], "gpus": [1] * len(mine)}),
        etas=etas.tolist())
    assert a40["carbon_aware"]["energy_saved_kwh"] == pytest.approx(a40["default_kwh"] - runs["energy_j"].sum() / 3.6e6, rel=1e-9)


def test_the_page_gives_one_peak_and_says_why_an_interval_is_missing(tmp_path: Path, traces: Traces) -> None:
    """The power plot's title holds no peak of its own (sample 1's would differ from the table's medians); a row without an
    interval says why beside its name, and so does every other ``[–, –]`` of it."""
    from pipelines.clusters.power import POWER_SCHEMA
    from pipelines.report import figures, html

    jobs = [{"hours": 2 + k % 3, "day": k / 3, "name": f"n{k % 4}"} for k in range(36)] + [
        {"hours": 3, "day": k, "gpu_type": "a40", "name": "a"} for k in range(5)]
    path = job_log(tmp_path / "lab.csv", jobs)
    report, power = whatif.run(read(path), profiles_of(traces), whatif.Options(samples=3, price_per_kwh=0.2), keep_power=True)
    fig, _ = figures.power_timeline(report, power)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles and not any("peak" in t or "kW" in t for t in titles), titles
    a40 = report["gpus"]["a40"]
    assert a40["interval_note"] == "too few jobs (5) for an interval" and a40["default_kwh_interval"] == [None, None]
    page = html.render(report, pl.DataFrame(schema=POWER_SCHEMA), html.Provenance.now("lab.csv", None, {}))
    assert "<td class='key'>a40<br><span class='iv'>no interval: too few jobs (5) for an interval</span></td>" in page
    assert "<td class='key'>v100</td>" in page  # 36 jobs: an interval, no note
    unknown = [row for row in page.split("<tr>") if "[<span" in row and "–</span>, " in row]  # intervals of unknown ends
    assert unknown and all("no interval" in row or "too few jobs" in row for row in unknown)
