"""Measured profiles (raw/measured/*.csv) as rows of zeus_power_profiles, simulated like a published GPU, and drawn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipelines.home.paths import REPO_ROOT, ProjectPaths
from pipelines.ingest.zeus import read_measured, read_power_profiles, read_train
from pipelines.measure.harness import write_profile
from pipelines.vocabulary import Job
from pipelines.zeus.single import simulate_single
from pipelines.zeus.traces import build_table, from_frames
from tests.support.materialize import Homes, Step
from tests.support.measured_profiles import BATCH_SIZES, DRAW_W, GPU, LIMITS_W, profile_rows, time_only_rows


@pytest.fixture(scope="module")
def train(mirror: Path) -> pl.DataFrame:
    return read_train(mirror / "zeus" / "summary_train.csv").table


def test_measured_rows_join_the_published_ones(mirror: Path, tmp_path: Path) -> None:
    folder = tmp_path / "measured"
    write_profile(profile_rows(), folder / "a100.csv")
    write_profile(time_only_rows(), folder / "cpu.csv")
    result = read_power_profiles(mirror / "zeus", folder)
    measured = result.table.filter(pl.col("source").str.starts_with("measured:"))
    assert result.quarantine.height == 0 and result.table.height == 1609 + 24
    assert measured.height == 24 and set(measured["gpu"]) == {GPU} and set(measured["source"]) == {"measured:a100.csv"}
    row = measured.filter((pl.col("batch_size") == 1024) & (pl.col("power_limit") == 200)).row(0, named=True)
    assert row["average_power"] == pytest.approx(190.0) and row["time_per_epoch"] == pytest.approx(5.2 * (271 / 190) ** 0.6)
    assert result.table.columns == ["gpu", "dataset", "network", "batch_size", "optimizer", "power_limit", "time_per_epoch", "average_power", "source"]
    # the time-only rows are not in the table nor in the quarantine, and the report says so
    assert "measured/cpu.csv (2 time-only rows not ingested: no energy measurement: no RAPL" in " ".join(result.files)


def test_bad_measured_rows_are_quarantined_with_file_line_and_reason(tmp_path: Path) -> None:
    folder = tmp_path / "measured"
    good = profile_rows(limits=(250,))
    bad = pl.concat([
        time_only_rows(),                                            # lines 2-3: time-only, left out
        good.head(1).with_columns(time_per_epoch=pl.lit(-1.0)),      # line 4: negative time
        good.slice(1, 1).with_columns(gpu=pl.lit("v100")),           # line 5: a published GPU's name
        good.slice(2, 1).with_columns(power_limit=pl.lit(275, pl.Int64)),  # line 6: fine
        good.slice(3, 1),                                            # line 7: duplicate of a100.csv:5
    ])  # fmt: skip
    write_profile(good, folder / "a100.csv")
    write_profile(bad, folder / "b_mixed.csv")
    (folder / "h100_sxm.csv").write_text(  # a hand-written file in the published schema: gpu from the file name
        "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
        "cifar100,shufflenetv2,1024,adadelta,700,3.1,412.5\n"
        "cifar100,shufflenetv2,512,adadelta,700,,301.0\n"
    )
    result = read_measured(folder)
    q = result.quarantine.sort("source_file", "line")
    assert q.select("source_file", "line", "column").rows() == [
        ("measured/b_mixed.csv", 4, "time_per_epoch"),
        ("measured/b_mixed.csv", 5, "gpu"),
        ("measured/b_mixed.csv", 7, "gpu"),
        ("measured/h100_sxm.csv", 3, "time_per_epoch"),
    ]
    reasons = q["reason"].to_list()
    assert reasons[0] == "time_per_epoch: must be > 0 (value -1.0)" and "published trace" in reasons[1]
    assert reasons[2].startswith("duplicate gpu, dataset, network, batch_size, optimizer, power_limit of measured/a100.csv:5")
    assert q["raw"][0].startswith("cifar100,shufflenetv2,32,adadelta,250,-1.0,")
    assert result.table.height == 6 + 1 + 1  # a100.csv, line 6 of b_mixed.csv, line 2 of h100_sxm.csv
    h100 = result.table.filter(pl.col("gpu") == "h100_sxm").row(0, named=True)
    assert (h100["batch_size"], h100["power_limit"], h100["average_power"], h100["source"]) == (1024, 700, 412.5, "measured:h100_sxm.csv")
    assert result.table.height + result.quarantine.height + 2 == 6 + 6 + 2  # every data line accounted for (2 time-only)
    assert "measured/b_mixed.csv (2 time-only rows not ingested" in result.files[1]


def test_simulator_runs_on_a_measured_gpu(mirror: Path, train: pl.DataFrame, tmp_path: Path) -> None:
    write_profile(profile_rows(), tmp_path / "a100.csv")
    power = read_power_profiles(mirror / "zeus", tmp_path).table
    traces = from_frames(train, power)
    table = build_table(traces, GPU, Job("cifar100", "shufflenetv2", "adadelta", 0.6, 100, 1024))
    assert table.batch_sizes == BATCH_SIZES and table.max_power == 400
    assert table.by_batch_size[1024].power_limits == LIMITS_W
    runs = simulate_single(table, eta=0.5, beta=2.0, seed=1)
    assert len(runs) >= 2 * len(BATCH_SIZES) * len(LIMITS_W)
    assert runs[0].bs == 1024 and runs[0].reached  # Zeus starts from b0
    assert {r.bs for r in runs} <= set(BATCH_SIZES) and {r.pl for r in runs} <= set(LIMITS_W)
    for r in runs:  # every run's average power is one of its batch size's measured powers (or a mix, while profiling)
        powers = [min(DRAW_W[r.bs], 0.95 * limit_w) for limit_w in LIMITS_W]
        assert min(powers) - 1e-6 <= r.energy / r.time <= max(powers) + 1e-6
    # the published GPUs are unaffected by the measured rows
    v100 = build_table(traces, "v100", Job("cifar100", "shufflenetv2", "adadelta", 0.6, 100, 1024))
    assert v100.max_power == 250


def _two_measured_files(paths: ProjectPaths) -> None:
    write_profile(profile_rows(), paths.measured / "a100.csv")
    write_profile(time_only_rows(), paths.measured / "cpu.csv")


@pytest.fixture(scope="module")
def measured_home(materialized: Homes) -> tuple[ProjectPaths, object]:
    """raw_zeus_traces + zeus_train_runs + zeus_power_profiles materialized into a root whose raw/measured holds two files."""
    home = materialized(
        Step(["raw_zeus_traces", "zeus_train_runs", "quarantine/zeus_train_runs_bad_rows", "zeus_power_profiles", "quarantine/zeus_power_profiles_bad_rows"]),
        prepare=_two_measured_files, name="measured_project",
    )
    return home.paths, home.result


def test_asset_reads_raw_measured_and_passes_its_checks(measured_home: tuple[ProjectPaths, object]) -> None:
    paths, result = measured_home
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"quarantine_share": True, "records_accounted": True, "published_power_limits": True, "no_rows_quarantined": True}
    power = pl.read_parquet(paths.table("zeus_power_profiles"))
    assert dict(power.group_by("source").len().iter_rows()) == {"zeus-nsdi23": 1609, "measured:a100.csv": 24}
    materializations = [e for e in result.get_asset_materialization_events() if e.asset_key.path == ["zeus_power_profiles"]]
    files = materializations[0].materialization.metadata["source_files"].value
    assert "measured/a100.csv" in files and any(f.startswith("measured/cpu.csv (2 time-only rows not ingested") for f in files)


def test_simulate_cli_accepts_the_measured_gpu(measured_home: tuple[ProjectPaths, object], train: pl.DataFrame) -> None:
    paths, _ = measured_home
    args = ["single", "--dataset", "cifar100", "--model", "shufflenetv2", "--optimizer", "adadelta", "--target-metric", "0.6",
            "--max-epochs", "100", "--b0", "1024", "--gpu", GPU, "--eta-knob", "0.5", "--beta-knob", "2.0", "--seed", "3"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pipelines", "simulate", *args],
        capture_output=True, text=True, cwd=REPO_ROOT, check=False, env={**os.environ, "GPU_ENERGY_HOME": str(paths.root)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    power = pl.read_parquet(paths.table("zeus_power_profiles"))
    expected = simulate_single(build_table(from_frames(train, power), GPU, Job("cifar100", "shufflenetv2", "adadelta", 0.6, 100, 1024)), 0.5, 2.0, 3)
    assert [(r["bs"], r["pl"], r["energy"], r["time"], r["reached"]) for r in lines] == [(r.bs, r.pl, r.energy, r.time, r.reached) for r in expected]
    assert sum(r["reached"] for r in lines) == 2 * 6 * 4  # 2 x |B| x |P| recurrences, each ending in one run that reached


def test_measured_profiles_figure(mirror: Path, tmp_path: Path) -> None:
    from pipelines.figures.errors import NoData
    from pipelines.figures.measured import measured_profiles

    published = read_power_profiles(mirror / "zeus", tmp_path / "none").table
    with pytest.raises(NoData, match="no measured power profiles"):
        measured_profiles(published)
    write_profile(profile_rows(), tmp_path / "a100.csv")
    power = read_power_profiles(mirror / "zeus", tmp_path).table
    fig, data = measured_profiles(power)
    assert data.height == 24 and set(data["gpu"]) == {GPU}
    assert len(fig.axes) == 4 + 2  # time and power vs batch size, and vs power limit (four limits), plus two colourbars
    top = fig.axes[0]
    assert top.get_ylabel() == "time per epoch (s)" and len(top.get_lines()) == len(LIMITS_W)
    single = measured_profiles(power.filter(pl.col("power_limit") != 200).filter((pl.col("power_limit") == 400) | (pl.col("source") == "zeus-nsdi23")))[0]
    assert len(single.axes) == 2  # one limit: no vs-limit rows, no colourbar
