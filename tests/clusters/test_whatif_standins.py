"""``whatif`` says where readers look which jobs replay on another GPU's profile (the text's first lines, the page's headline,
JSON ``stand_ins``), and with ``--stand-in-power scaled`` maps their power onto their own GPU's idle draw and TDP."""

from __future__ import annotations

import csv
import json
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.clusters import tracefiles, whatif
from pipelines.clusters.power import POWER_SCHEMA
from pipelines.clusters.profiles import profiles_of
from pipelines.clusters.standins import Spec, parse_specs
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.report import html
from pipelines.report.text import render
from pipelines.zeus.traces import Traces
from tests.support.cli import run_main
from tests.support.sacct_export import write_export

START = datetime(2024, 3, 1)


@pytest.fixture(scope="module")
def traces(mirror: Path) -> Traces:
    return read_trace_dir(mirror / "zeus")


def untyped_jobs(path: Path) -> int:
    """The export's COMPLETED GPU allocations that name no GPU type (``gres/gpu=N``, no ``gres/gpu:TYPE``), counted here from the file."""
    with path.open() as f:
        return sum(1 for row in csv.DictReader(f, delimiter="|")
                   if "." not in row["JobID"] and row["State"] == "COMPLETED" and "gres/gpu=" in row["AllocTRES"] and "gres/gpu:" not in row["AllocTRES"]
                   and row["Elapsed"] != "00:00:00")


def test_a_fallback_only_export_names_its_stand_in_in_the_title_block(tmp_path: Path, mirror: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fallback.sacct"
    write_export(path, 600, seed=9, gpu_types=("a100", "h100"))
    args = ("whatif", str(path), "--timezone", "Europe/Berlin", "--trace-dir", str(mirror / "zeus"), "--samples", "2", "--scheduler", "none")
    done = run_main(capsys, *args, "--json")
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    st = r["stand_ins"]
    jobs = r["simulated_jobs"]
    assert (st["jobs"], st["of_jobs"], st["gpu"]) == (jobs, jobs, "v100")
    assert st["gpu_hours"] == pytest.approx(st["of_gpu_hours"]) and sorted(st["no_profile"]) == ["a100", "h100"]
    assert st["no_type_jobs"] == untyped_jobs(path) == r["gpus"]["untyped"]["jobs"]
    assert st["text"].startswith(f"{jobs:,} of {jobs:,} jobs (")
    assert f"replayed on the v100 profile: no profile for {', '.join(st['no_profile'])}; no type on {st['no_type_jobs']:,}" in st["text"]
    text = run_main(capsys, *args).stdout
    assert text.splitlines()[1].startswith(f"Stand-ins: {jobs:,} of {jobs:,} jobs")  # the line under the title
    page = html.render(r, pl.DataFrame(schema=POWER_SCHEMA), html.Provenance.now(path.name, None, {}))
    lede = page.index("<p class='lede'>Stand-ins:")
    assert lede < page.index('<section') and "replayed on the v100 profile" in page[lede:lede + 2000]


def job_log(path: Path) -> Path:
    """Twelve 2-GPU A100 jobs (no A100 profile: they replay on the V100), three groups, 6 h each, a day apart."""
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["job_id", "submit_time", "start_time", "end_time", "num_gpus", "state", "user", "name", "gpu_type"])
        for k in range(12):
            start = START + timedelta(days=k)
            out.writerow([f"j{k}", start.isoformat(), start.isoformat(), (start + timedelta(hours=6)).isoformat(), 2, "COMPLETED", "ann",
                          f"job{k % 3}", "a100"])
    return path


def test_scaled_stand_in_power_is_the_affine_map_of_the_replayed_power(tmp_path: Path, traces: Traces) -> None:
    """A100 jobs on the V100 profile, both GPUs' TDP and idle draw given here (--gpu-specs): each job's Default power per GPU P
    becomes 50 + (P - 30) x (400 - 50) / (250 - 30); the map is affine, so the row's Default energy is that of its mean."""
    path = job_log(tmp_path / "a100.csv")
    result = tracefiles.read_trace(path, "lab", "csv", "UTC", source_file=path.name)
    specs = tuple(parse_specs(["a100=400:50,v100=250:30"]).items())
    plain = whatif.run(result, profiles_of(traces), whatif.Options(samples=1, gpu_specs=specs))[0]
    scaled = whatif.run(result, profiles_of(traces), whatif.Options(samples=1, gpu_specs=specs, stand_in_power="scaled"))[0]
    before, after = plain["gpus"]["a100"], scaled["gpus"]["a100"]
    hours = before["gpu_hours"]
    assert hours == pytest.approx(12 * 2 * 6)
    watts = 1000 * before["default_kwh"] / hours
    expected = 50 + (watts - 30) * 350 / 220
    assert 1000 * after["default_kwh"] / hours == pytest.approx(expected, rel=1e-9)
    assert after["stand_in_power"] == {"replayed_tdp_w": 250.0, "replayed_idle_w": 30.0, "exported_tdp_w": 400.0, "exported_idle_w": 50.0,
                                       "exported_source": "--gpu-specs"}
    assert scaled["stand_ins"]["power_text"] == "power scaled onto a100's idle draw and TDP"
    assert plain["stand_ins"]["power_text"] == "stand-ins at the v100's power; --stand-in-power scaled: at their own GPU's"
    assert "replayed on (power scaled onto a100's idle draw and TDP)" in render(scaled)
    assert render(scaled).splitlines()[1].startswith("Stand-ins: 12 of 12 jobs (144 of 144 GPU-hours)")


def test_gpu_specs_are_checked() -> None:
    assert parse_specs(["h100=700:60", "b200=1000:100"]) == {"h100": Spec(700.0, 60.0, "--gpu-specs"),
                                                            "b200": Spec(1000.0, 100.0, "--gpu-specs")}
    for bad in ("h100", "h100=700", "h100=60:700", "=700:60", "h100=nan:1"):
        with pytest.raises(ValueError, match="GPU=TDP:IDLE"):
            parse_specs([bad])
