"""Every ``whatif`` option shows in every output: the carbon-aware Zeus with a power-limit-only profile (``--profiles
GPU=FILE``), and for each option the JSON's figures the text and the page show too."""

from __future__ import annotations

import json
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


def _at(report: dict, path: tuple) -> object:
    for key in path:
        report = report[key]  # type: ignore[index]
    return report


def test_every_option_the_text_shows_the_json_and_the_page_show(tmp_path: Path, traces: Traces) -> None:
    """Each option run on one export: the figures the text shows for it are in the JSON (not null) and on the page (each a
    ``data-path`` to that JSON key), and its notes are in all three; the text and the page both change with the option."""
    import html as html_text
    import re

    from pipelines.clusters import tracefiles
    from pipelines.clusters.example_export import write_export
    from pipelines.clusters.power import POWER_SCHEMA
    from pipelines.report import html
    from pipelines.report.text import render

    path = tmp_path / "c.sacct"
    write_export(path, 500, seed=3, energy="measured", span_days=10, timezone="UTC")
    start = datetime(2024, 9, 10)
    grid_csv = tmp_path / "grid.csv"
    grid_csv.write_text(f"timestamp,{INTENSITY}\n" + "\n".join(
        f"{(start + timedelta(hours=k)).isoformat()}Z,{150 if 8 <= k % 24 < 18 else 450}" for k in range(24 * 60)) + "\n")
    result = tracefiles.read_trace(path, "c", "sacct", "UTC", source_file=path.name)
    profiles = profiles_of(traces)

    def outputs(**options: object) -> tuple[dict, str, str, set[tuple]]:
        report = whatif.run(result, profiles, whatif.Options(samples=2, **options))[0]  # type: ignore[arg-type]
        page = html.render(report, pl.DataFrame(schema=POWER_SCHEMA), html.Provenance.now("c.sacct", None, {}))
        shown = {tuple(json.loads(html_text.unescape(p))) for p in re.findall(r'data-path="([^"]*)"', page)}
        return report, render(report), page.split('<section id="provenance">')[0], shown

    figures = ("jobs", "gpu_hours", "kwh")
    options: dict[str, tuple[dict[str, object], list[tuple], list[tuple]]] = {  # option: (Options, figures shown, notes shown)
        "--price-per-kwh": ({"price_per_kwh": 0.2}, [("total", "cost_saved")], []),
        "--grid-gco2-per-kwh": ({"grid_gco2_per_kwh": 300.0}, [("total", k) for k in ("co2e_saved_kg", "default_co2e_kg", "zeus_co2e_kg")], []),
        "--horizon": ({"horizon_days": 365.0}, [("horizon_days",), ("total", "horizon_saved_pct"), ("total", "horizon_saved_kwh")], []),
        "--cluster-gpus": ({"cluster_gpus": 300}, [("cluster_gpus", "gpus")], []),
        "--meter gpu": ({"meter": "gpu"}, [("energy_accounting", f"{part}_{f}") for part in ("metered", "modelled") for f in figures], []),
        "--meter node": ({"meter": "node"}, [], [("energy_accounting", "meter_note")]),
        "--stand-in-power": ({"stand_in_power": "scaled"}, [("stand_ins", "jobs"), ("stand_ins", "of_jobs")], [("stand_ins", "power_text")]),
        "--min-gpu-util": ({"min_gpu_util_pct": 60.0}, [("utilization", k) for k in ("low_util_jobs", "low_util_gpu_hours", "low_util_kwh")]
                           + [("utilization", "low_util_top", 0, "gpu_hours")], []),
        "--carbon-aware": ({"grid": read_series(grid_csv, INTENSITY, "UTC"), "carbon_aware": True},
                           [("carbon_aware", "eta_clean"), ("carbon_aware", "eta_dirty")]
                           + [("total", "carbon_aware", k) for k in ("co2e_saved_kg", "energy_saved_pct", "time_saved_pct")], []),
    }
    base, base_text, base_page, _ = outputs()
    for option, (given, shown, notes) in options.items():
        report, text, page, paths = outputs(**given)
        assert text != base_text and page != base_page, option
        for key in shown:
            assert _at(report, key) is not None, (option, key)
            assert key in paths, (option, key)
        for key in notes:
            note = _at(report, key)
            assert isinstance(note, str) and note, (option, key)
            assert note in text.replace("\n  ", " ").replace("\n    ", " ") or note[:60] in text, (option, key)
            assert html_text.escape(note, quote=True)[:60] in page, (option, key)
    assert base["energy_accounting"].get("meter") is None  # without --meter: as before
