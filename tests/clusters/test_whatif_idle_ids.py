"""``whatif`` names its idle allocations (below ``--min-gpu-util``) by job ID, most GPU-hours first: all or the first 100 in
the JSON, the first 10 with user, GPU-hours and utilisation in the text and on the page."""

from __future__ import annotations

import csv
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.clusters import tracefiles, whatif
from pipelines.clusters.power import POWER_SCHEMA
from pipelines.clusters.profiles import profiles_of
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.report import html
from pipelines.report.text import render
from pipelines.zeus.traces import Traces

START = datetime(2024, 3, 1)


@pytest.fixture(scope="module")
def traces(mirror: Path) -> Traces:
    return read_trace_dir(mirror / "zeus")


def write(path: Path, idle: int) -> list[tuple[str, str, float, float]]:
    """``idle`` idle allocations (job idle<k>: user u<k % 7>, k % 4 + 1 GPUs, 1 + k % 9 h, (k % 10) / 2 % utilisation) and six
    busy jobs; returns the idle ones as (job ID, user, GPU-hours, utilisation), computed here."""
    expected = []
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["job_id", "submit_time", "start_time", "end_time", "num_gpus", "state", "user", "name", "gpu_type", "gpu_util_pct"])
        for k in range(idle):
            gpus, hours, util = k % 4 + 1, 1 + k % 9, (k % 10) / 2
            start = START + timedelta(hours=k)
            out.writerow([f"idle{k}", start.isoformat(), start.isoformat(), (start + timedelta(hours=hours)).isoformat(), gpus, "COMPLETED",
                          f"u{k % 7}", "notebook", "v100", util])
            expected.append((f"idle{k}", f"u{k % 7}", float(gpus * hours), util))
        for k in range(6):
            start = START + timedelta(days=k)
            out.writerow([f"busy{k}", start.isoformat(), start.isoformat(), (start + timedelta(hours=3)).isoformat(), 1, "COMPLETED", "ann",
                          "train", "v100", 80])
    expected.sort(key=lambda e: (-e[2], e[0]))
    return expected


def run(path: Path, traces: Traces) -> dict:
    result = tracefiles.read_trace(path, "lab", "csv", "UTC", source_file=path.name)
    return whatif.run(result, profiles_of(traces), whatif.Options(samples=1))[0]


def test_idle_allocations_are_listed_by_id_most_gpu_hours_first(tmp_path: Path, traces: Traces) -> None:
    expected = write(tmp_path / "lab.csv", 105)
    report = run(tmp_path / "lab.csv", traces)
    u = report["utilization"]
    assert u["low_util_jobs"] == 105
    assert u["low_util_job_ids"] == [e[0] for e in expected[:100]]  # the first 100 of 105
    assert [(t["job_id"], t["user"], t["gpu_hours"], t["gpu_util_pct"]) for t in u["low_util_top"]] == \
        [(i, user, pytest.approx(h), pytest.approx(util)) for i, user, h, util in expected[:10]]
    text = render(report)
    first = expected[0]
    assert f"the 10 of most GPU-hours (job ID, user, GPU-hours, utilisation): {first[0]} ({first[1]}, {first[2]:.1f} GPU-hours, " in text
    page = html.render(report, pl.DataFrame(schema=POWER_SCHEMA), html.Provenance.now("lab.csv", None, {}))
    assert all(f"<td class='key group'>{e[0]}</td>" in page for e in expected[:10])
    assert f"<td class='key group'>{expected[10][0]}</td>" not in page  # the eleventh is in the JSON only


def test_a_few_idle_allocations_are_all_listed(tmp_path: Path, traces: Traces) -> None:
    expected = write(tmp_path / "lab.csv", 2)
    u = run(tmp_path / "lab.csv", traces)["utilization"]
    assert u["low_util_job_ids"] == [e[0] for e in expected]
    assert "all (job ID, user, GPU-hours, utilisation): " in render(run(tmp_path / "lab.csv", traces))
