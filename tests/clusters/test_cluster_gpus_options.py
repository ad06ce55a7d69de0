"""The capacity override: ``whatif --cluster-gpus`` and ``clusters add --cluster-gpus`` (recorded in the sidecar)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pipelines.clusters import capacity, tracefiles
from pipelines.home.paths import REPO_ROOT
from pipelines.ingest.slurm import read_sacct
from tests.support.sacct_export import write_export


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A small Slurm export and the peak concurrent GPUs of the allocations the replay uses (worked out here)."""
    path = tmp_path_factory.mktemp("export") / "lab.sacct"
    write_export(path, 200, seed=11, span_days=2)
    table = read_sacct(path, trace="lab", source_file=path.name).table
    slots = capacity.own_slots(table)
    # brute force: GPUs held at every start instant (a job ending there has freed its GPUs)
    starts = slots["start_time_s"].to_list()
    peak = max(sum(g for s, e, g in slots.iter_rows() if s <= t < e) for t in starts)
    assert peak == capacity.peak_concurrent_gpus(slots) > 1
    return path, peak


def run(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"GPU_ENERGY_HOME": str(home)} if home else {})}
    return subprocess.run([sys.executable, "-m", "pipelines", *args], capture_output=True, text=True, check=False, cwd=REPO_ROOT, env=env)


@pytest.mark.slow
def test_whatif_charges_the_idle_draw_of_the_cluster_given_and_refuses_one_below_the_peak(export, mirror: Path) -> None:
    path, peak = export
    # every job on the V100 (the export names GPU types: as exported is the default), one replay (--samples 1)
    common = ("whatif", str(path), "--trace-dir", str(mirror / "zeus"), "--no-progress", "--json", "--top", "0", "--gpu", "v100",
              "--samples", "1")
    low = run(*common, "--cluster-gpus", str(peak - 1))
    assert low.returncode == 2 and low.stdout == "" and len(low.stderr.strip().splitlines()) == 1
    assert f"--cluster-gpus {peak - 1:,} is below the trace's peak of {peak:,} concurrent GPUs" in low.stderr
    reports = {}
    for gpus in (None, peak + 100, peak + 200):
        done = run(*common, *(["--cluster-gpus", str(gpus)] if gpus else []))
        assert done.returncode == 0, done.stderr
        reports[gpus] = json.loads(done.stdout)
    assert reports[None]["cluster_gpus"] == {"gpus": peak, "source": "the trace's peak concurrent GPUs (no published size)",
                                             "peak_concurrent_gpus": peak}
    assert reports[peak + 100]["cluster_gpus"]["gpus"] == peak + 100
    small, big = reports[None]["gpus"]["v100"], reports[peak + 100]["gpus"]["v100"]
    assert small["default_mwh"] == big["default_mwh"]  # the jobs are the same; only the idle GPUs differ
    for report in (small, big):
        fleet = report["fleet"]
        assert fleet["gpu_idle_w"] == 36.0 and fleet["energy_saved_pct"] == pytest.approx(report["energy_saved_pct"], rel=1e-9)
        assert fleet["default_fleet_mwh"] == pytest.approx(report["default_mwh"] + fleet["default_idle_mwh"], rel=1e-12)
        assert fleet["fleet_energy_saved_pct"] == pytest.approx(100 * (1 - fleet["zeus_fleet_mwh"] / fleet["default_fleet_mwh"]), rel=1e-9)
    # once the cluster never runs out of GPUs, 100 more idle over the same window cost both policies the same energy
    bigger = reports[peak + 200]["gpus"]["v100"]["fleet"]
    assert big["fleet"]["over_capacity_gpu_h"] == bigger["over_capacity_gpu_h"] == 0
    extra = bigger["default_idle_mwh"] - big["fleet"]["default_idle_mwh"]
    assert extra == pytest.approx(bigger["zeus_idle_mwh"] - big["fleet"]["zeus_idle_mwh"], rel=1e-9) and extra > 0


def test_clusters_add_records_the_cluster_size_and_refuses_one_below_the_peak(export, tmp_path: Path) -> None:
    path, peak = export
    home = tmp_path / "home"
    home.mkdir()
    low = run("clusters", "add", "lab", str(path), "--cluster-gpus", str(peak - 1), home=home)
    assert low.returncode == 2 and len(low.stderr.strip().splitlines()) == 1 and "below the trace's peak" in low.stderr
    assert not (home / "raw" / "clusters").exists() or not any((home / "raw" / "clusters").iterdir())  # nothing written
    done = run("clusters", "add", "lab", str(path), "--cluster-gpus", str(peak + 5), home=home)
    assert done.returncode == 0, done.stderr
    assert f"{peak + 5:,} GPUs" in done.stdout
    assert tomllib.loads((home / "raw" / "clusters" / "lab.toml").read_text())["cluster_gpus"] == peak + 5
    (trace,), problems = tracefiles.user_traces(home / "raw")
    assert trace.cluster_gpus == peak + 5 and problems == []
    listed = run("clusters", "list", home=home)
    assert f"lab: clusters/lab.sacct (sacct, times in UTC, {peak + 5:,} GPUs)" in listed.stdout
    # a sidecar edited by hand to a size that is no count of GPUs: the trace is not used, and the line says why
    sidecar = home / "raw" / "clusters" / "lab.toml"
    sidecar.write_text(sidecar.read_text().replace(f"cluster_gpus = {peak + 5}", "cluster_gpus = 0"))
    traces, problems = tracefiles.user_traces(home / "raw")
    assert traces == [] and problems == [f"lab.sacct: {sidecar}: cluster_gpus: 0 is not a whole number of GPUs >= 1"]
