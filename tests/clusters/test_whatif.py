"""``whatif``: the report of a generated Slurm export, its JSON, its errors, its imports, and the replay against zeus==0.16.0."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipelines.clusters import mapping, whatif
from pipelines.clusters.anchoring import RUNTIME_RATIO
from pipelines.clusters.profiles import profiles_of
from pipelines.clusters.workloads import workloads_by_default_tta
from pipelines.home.paths import REPO_ROOT
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.ingest.slurm import read_sacct
from pipelines.zeus.groups import replay_groups
from pipelines.zeus.traces import Traces
from tests.support.cli import run_main
from tests.support.sacct_export import write_export
from tests.support.zeus_peer import Peer

HEAVY = ("pandas", "pandera", "dagster")
#: The keys the issue asks of --json, and those of each GPU (energy, time and power).
KEYS = {"lines", "allocations", "steps_skipped", "cpu_only", "not_ended", "quarantined", "simulated_jobs", "gpus"}
GPU_KEYS = {"default_mwh", "zeus_mwh", "energy_saved_pct", "time_saved_pct", "default_peak_kw", "zeus_peak_kw", "headroom_gpus"}


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("whatif") / "lab cluster.sacct"
    truth = write_export(path, 1500, seed=5, timezone="America/New_York", malformed=4)
    return path, truth


def test_json_is_one_object_with_the_counts_of_the_file(export, mirror: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, truth = export
    done = run_main(capsys, "whatif", str(path), "--timezone", "America/New_York", "--gpu", "v100,a40", "--trace-dir", str(mirror / "zeus"),
                    "--json", "--price-per-kwh", "0.2", "--grid-gco2-per-kwh", "400", "--samples", "1")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # the whole of stdout is one JSON object
    assert isinstance(report, dict) and set(report) >= KEYS
    assert {k: report[k] for k in ("lines", "allocations", "steps_skipped", "cpu_only", "not_ended", "quarantined")} == {
        "lines": truth.lines, "allocations": truth.allocations, "steps_skipped": truth.steps, "cpu_only": truth.cpu_only,
        "not_ended": truth.not_ended, "quarantined": truth.malformed}
    assert report["lines"] == 1 + report["allocations"] + report["steps_skipped"] + report["quarantined"]
    assert report["simulated_jobs"] == truth.completed_gpu_allocations
    assert set(report["gpus"]) == {"v100", "a40"}
    for gpu in report["gpus"].values():
        assert set(gpu) >= GPU_KEYS
        assert gpu["energy_saved_pct"] == pytest.approx(100 * (1 - gpu["zeus_mwh"] / gpu["default_mwh"]), rel=1e-12)
        assert gpu["zeus_peak_kw"] > 0 and gpu["default_peak_kw"] > 0 and isinstance(gpu["headroom_gpus"], int)
        saved_kwh = (gpu["default_mwh"] - gpu["zeus_mwh"]) * 1000
        assert gpu["cost_saved"] == pytest.approx(0.2 * saved_kwh, rel=1e-12)
        assert gpu["co2e_saved_kg"] == pytest.approx(0.4 * saved_kwh, rel=1e-12)
    assert len(report["top_groups"]) == 10
    saved = [g["saved_mwh"] for g in report["top_groups"]]
    assert saved == sorted(saved, reverse=True)


def test_the_terminal_report_fits_one_screen(export, mirror: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, truth = export
    done = run_main(capsys, "whatif", str(path), "--timezone", "America/New_York", "--trace-dir", str(mirror / "zeus"), "--no-progress",
                    "--price-per-kwh", "0.2", "--samples", "3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) <= 60 and max(map(len, lines)) <= 160
    text = done.stdout
    assert f"{truth.lines:,} = 1 header + {truth.allocations:,} allocations + {truth.steps:,} steps skipped + {truth.malformed} quarantined" \
        in text
    assert "saved on all GPUs:" in text and "recurring groups that save most as exported" in text and "CO2e" not in text


def test_bad_input_is_one_line_and_exit_code_2(tmp_path: Path, mirror: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fixed = tmp_path / "fixed.txt"
    fixed.write_text("       JobID    JobName \n------------ ---------- \n    22105866      batch \n")
    cases = [
        ([str(fixed)], f"{fixed}:1: no '|'"),
        ([str(tmp_path / "nope.sacct")], "no such file"),
        ([str(fixed), "--timezone", "Europe/Atlantis"], "unknown time zone 'Europe/Atlantis'"),
        ([str(fixed), "--eta-knob", "2"], "--eta-knob"),
    ]
    for args, message in cases:
        done = run_main(capsys, "whatif", *args, "--trace-dir", str(mirror / "zeus"))
        assert done.returncode == 2 and done.stdout == "", args
        assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr


def test_whatif_imports_no_pandas_pandera_or_dagster(export, mirror: Path) -> None:
    path, _ = export
    code = (
        "import atexit, sys\n"
        f"atexit.register(lambda: print('HEAVY:' + ','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr))\n"
        "from pipelines.cli import main\n"
        f"main(['whatif', {str(path)!r}, '--trace-dir', {str(mirror / 'zeus')!r}, '--json', '--no-progress', '--samples', '2'])\n"  # 2: the spread's path too
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "HEAVY:"


@pytest.fixture(scope="module")
def traces(mirror: Path) -> Traces:
    return read_trace_dir(mirror / "zeus")


def test_a_user_trace_replays_as_zeus_0_16_0_replays_it(tmp_path: Path, traces: Traces, mirror: Path) -> None:
    """A small generated export, mapped as whatif maps it: every Zeus run equals the published simulator's, times included."""
    path = tmp_path / "small.sacct"
    truth = write_export(path, 400, seed=21, timezone="Europe/Berlin", span_days=2)
    result = read_sacct(path, trace="small", source_file="small.sacct", timezone="Europe/Berlin")
    jobs = mapping.map_own(result.table, workloads_by_default_tta(traces), "small")
    assert jobs.height == truth.completed_gpu_allocations and jobs["num_gpu"].min() >= 1
    groups = jobs.select("group", start_time="start_time_s", end_time="end_time_s", dataset="dataset", runtime_ratio="runtime_ratio")
    # concurrency within groups is exercised: some jobs start before an earlier job of their group ended
    overlapping = groups.sort("group", "start_time").filter(pl.col("start_time") < pl.col("end_time").shift().over("group"))
    assert overlapping.height > 10
    peer = Peer(mirror / "zeus")
    expected = [(g, *run) for g, runs in peer.timed_groups(groups, "v100", 0.5, 2.0) for run in runs]
    ours = replay_groups(groups, traces, "v100", 0.5, 2.0).select("group", "start_time", "end_time", "bs", "pl", "energy", "time", "reached")
    assert list(ours.iter_rows()) == expected
    assert not ours["reached"].all()  # and the retry path: runs that missed the target and were run again

    # whatif's Zeus total is the published runs' energy x the job's GPUs (constant within a group: its key has the GPU count)
    gpus = dict(jobs.group_by("group").agg(pl.col("num_gpu").first()).iter_rows())
    published_j = sum(energy * gpus[group] for group, _, _, _, _, energy, _, _ in expected)
    report = whatif.run(result, profiles_of(traces), whatif.Options(gpus=("v100",), samples=1, energy_model=RUNTIME_RATIO))[0]
    assert report["gpus"]["v100"]["zeus_mwh"] == pytest.approx(published_j / 3.6e9, rel=1e-12)
    assert report["simulated_jobs"] == jobs.height
