"""``whatif --meter``: where the cluster's meter is the GPUs' own, a metered job's Default energy is what the meter says and
Zeus's keeps the replay's ratio; the report splits the Default energy into metered and modelled; a node meter stays a
comparison."""

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
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.report import html
from pipelines.report.text import render
from pipelines.zeus.traces import Traces
from tests.support.cli import run_main
from tests.support.sacct_export import write_export

START = datetime(2024, 3, 1)
J_PER_KWH = 3.6e6


@pytest.fixture(scope="module")
def traces(mirror: Path) -> Traces:
    return read_trace_dir(mirror / "zeus")


def job_log(path: Path, energies: list[float | None]) -> Path:
    """One 2-GPU V100 job per entry, each its own group (name g<k>), 5 h, a day apart, with ``energy_j`` (None: no meter)."""
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["job_id", "submit_time", "start_time", "end_time", "num_gpus", "state", "user", "name", "gpu_type", "energy_j"])
        for k, energy in enumerate(energies):
            start = START + timedelta(days=k)
            end = start + timedelta(hours=5)
            out.writerow([f"j{k}", start.isoformat(), start.isoformat(), end.isoformat(), 2, "COMPLETED", "bob", f"g{k}", "v100",
                          "" if energy is None else energy])
    return path


def report(path: Path, traces: Traces, **options: object) -> dict:
    result = tracefiles.read_trace(path, "lab", "csv", "UTC", source_file=path.name)
    return whatif.run(result, profiles_of(traces), whatif.Options(samples=1, **options))[0]  # type: ignore[arg-type]


def test_a_gpu_meter_is_each_metered_jobs_default_energy(tmp_path: Path, traces: Traces) -> None:
    """Six jobs, four metered: with --meter gpu each metered group's Default energy is its meter reading, its Zeus energy that
    times the replay's Zeus/Default ratio; the unmetered groups are as modelled; metered + modelled = Default."""
    meters = [7.2e6, None, 18.0e6, 3.6e6, None, 10.8e6]  # 2, -, 5, 1, -, 3 kWh
    path = job_log(tmp_path / "lab.csv", meters)
    modelled = report(path, traces, top=10)
    metered = report(path, traces, top=10, meter="gpu")
    before = {t["group"]: t for t in modelled["top_groups"]}
    after = {t["group"]: t for t in metered["top_groups"]}
    assert set(before) == set(after) == {f"bob/g{k}/2gpu" for k in range(6)}
    for k, meter_j in enumerate(meters):
        b, a = before[f"bob/g{k}/2gpu"], after[f"bob/g{k}/2gpu"]
        assert a["workload"] == b["workload"]  # the same replay: only the sizes change
        if meter_j is None:
            assert (a["default_kwh"], a["zeus_kwh"]) == (b["default_kwh"], b["zeus_kwh"])
        else:
            assert a["default_kwh"] == pytest.approx(meter_j / J_PER_KWH, rel=1e-12)
            assert a["zeus_kwh"] == pytest.approx(meter_j / J_PER_KWH * b["zeus_kwh"] / b["default_kwh"], rel=1e-12)
    acc = metered["energy_accounting"]
    metered_kwh = sum(m for m in meters if m is not None) / J_PER_KWH
    assert acc["meter"] == "gpu"
    assert acc["metered_kwh"] == pytest.approx(metered_kwh, rel=1e-12)
    assert (acc["metered_jobs"], acc["modelled_jobs"]) == (4, 2)
    assert (acc["metered_gpu_hours"], acc["modelled_gpu_hours"]) == (pytest.approx(40.0), pytest.approx(20.0))  # 4 x 2 GPUs x 5 h
    default = metered["gpus"]["v100"]["default_kwh"]
    assert acc["metered_kwh"] + acc["modelled_kwh"] == pytest.approx(default, abs=1e-9)
    unmetered = sum(before[f"bob/g{k}/2gpu"]["default_kwh"] for k in (1, 4))
    assert acc["modelled_kwh"] == pytest.approx(unmetered, rel=1e-9)
    row = acc["by_row"]["v100"]
    assert row["metered_kwh"] + row["modelled_kwh"] == pytest.approx(default, abs=1e-9)
    # the comparison with the meter is of the model, not of the meter with itself
    assert metered["measured"]["ratio_median"] == pytest.approx(modelled["measured"]["ratio_median"], rel=1e-12)
    text = render(metered)
    assert "anchored to the meter (--meter gpu): 4 of 6 jobs, 40 of 60 GPU-hours metered" in text
    page = html.render(metered, pl.DataFrame(schema=POWER_SCHEMA), html.Provenance.now("lab.csv", None, {}))
    assert "Anchored to the meter (--meter gpu)" in page
    assert f'data-path="[&quot;energy_accounting&quot;, &quot;metered_kwh&quot;]" data-value="{acc["metered_kwh"]!r}"' in page
    # a node meter stays a comparison: the same energies as without one
    node = report(path, traces, top=10, meter="node")
    assert node["gpus"]["v100"]["default_kwh"] == modelled["gpus"]["v100"]["default_kwh"]
    assert node["energy_accounting"]["meter"] == "node" and "meter_note" in node["energy_accounting"]


def sacct_meter_kwh(path: Path) -> float:
    """ConsumedEnergyRaw (J) of the export's COMPLETED GPU allocations that ran, read here from the file, in kWh."""
    total = 0.0
    with path.open() as f:
        for row in csv.DictReader(f, delimiter="|"):
            if "." in row["JobID"] or row["State"] != "COMPLETED" or "gres/gpu" not in row["AllocTRES"]:
                continue
            if row["Elapsed"] in ("00:00:00", "") or row["Start"] in ("Unknown", "None"):
                continue
            total += float(row["ConsumedEnergyRaw"] or 0)
    return total / J_PER_KWH


def test_meter_gpu_on_a_generated_export(tmp_path: Path, mirror: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A generated mixed export with ConsumedEnergyRaw: with --meter gpu, metered + modelled = Default to 1e-9 (the whole and
    each row), and the metered part is the export's meter over the replayed jobs, summed here from the file."""
    path = tmp_path / "metered.sacct"
    write_export(path, 600, seed=4, energy="measured")
    done = run_main(capsys, "whatif", str(path), "--timezone", "Europe/Berlin", "--trace-dir", str(mirror / "zeus"), "--json",
                    "--samples", "3", "--meter", "gpu", "--min-gpu-util", "0", "--scheduler", "none")
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    acc = r["energy_accounting"]
    assert acc["metered_kwh"] + acc["modelled_kwh"] == pytest.approx(r["total"]["default_kwh"], abs=1e-9)
    for key, row in acc["by_row"].items():
        assert row["metered_kwh"] + row["modelled_kwh"] == pytest.approx(r["gpus"][key]["default_kwh"], abs=1e-9), key
    assert acc["metered_kwh"] == pytest.approx(sacct_meter_kwh(path), rel=1e-12)
    assert acc["metered_jobs"] + acc["modelled_jobs"] == r["simulated_jobs"]
