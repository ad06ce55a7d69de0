"""Zeus's own profiles dropped in raw/measured: the power_limit_profiles table (bad files quarantined by file, line, field) and its figure."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from pipelines.figures.errors import NoData
from pipelines.figures.power_limit_choice import choices, power_limit_choice
from pipelines.home.paths import ProjectPaths
from pipelines.ingest.power_limit_profiles import read_power_limit_profiles, read_zeus_log
from pipelines.ingest.zeus import measured_csvs, read_measured
from pipelines.measure.harness import write_profile
from pipelines.measure.zeus_json import write_zeus_profiles
from pipelines.zeus.limit_selectors import Selector, choose
from tests.support.materialize import Homes, Step
from tests.support.measured_profiles import profile_rows

LOGS = ("A40+resnet50+gpu0,1,2,3.csv", "V100+bert-base-uncased+gpu0.csv")


def _drop_profiles(folder: Path, mirror: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in LOGS:
        shutil.copy(mirror / "zeus/profile_data" / name, folder / name)
    rows = profile_rows().filter(pl.col("batch_size") == 256)
    write_zeus_profiles(rows, write_profile(rows, folder / "lab.csv"))  # lab.csv and lab.bs256.zeus.json


def test_reader_takes_zeus_files_and_leaves_measured_csvs(mirror: Path, tmp_path: Path) -> None:
    folder = tmp_path / "measured"
    _drop_profiles(folder, mirror)
    (folder / "broken.json").write_text('{"measurements": [\n {"power_limit": 300, "energy": 10.0, "time": 1.0},\n'
                                        ' {"power_limit": 250, "energy": "ten", "time": 1.0}\n]}\n')
    result = read_power_limit_profiles(folder)
    assert dict(result.table.group_by("source").len().iter_rows()) == {LOGS[0]: 9, LOGS[1]: 7, "lab.bs256.zeus.json": 4}
    assert result.quarantine.select("source_file", "line", "column", "reason", "raw").rows() == [
        ("measured/broken.json", 3, "energy", 'energy is not a number: "ten"', ' {"power_limit": 250, "energy": "ten", "time": 1.0}')]
    assert result.lines_in == result.table.height + result.quarantine.height
    # the measured CSV goes to zeus_power_profiles (and whatif's profiles), and the ZeusMonitor logs do not
    assert measured_csvs(folder) == [folder / "lab.csv"]
    measured = read_measured(folder)
    assert set(measured.table["source"]) == {"measured:lab.csv"} and measured.quarantine.height == 0


def test_figure_marks_zeus_choices(mirror: Path, tmp_path: Path) -> None:
    with pytest.raises(NoData, match="no Zeus profile in raw/measured"):
        power_limit_choice(read_power_limit_profiles(tmp_path).table)
    folder = tmp_path / "measured"
    _drop_profiles(folder, mirror)
    fig, data = power_limit_choice(read_power_limit_profiles(folder).table)
    assert len(fig.axes) == 2 * 3 and fig.axes[0].get_ylabel() == "energy (J)" and fig.axes[3].get_ylabel() == "time (s)"
    log = read_zeus_log(mirror / "zeus/profile_data" / LOGS[0]).measurements
    picked = data.filter(pl.col("source") == LOGS[0])
    assert picked.filter("zeus_cost")["power_limit"].to_list() == [choose(log, Selector("zeus-cost", world_size=4))] == [150]
    assert picked.filter("energy_min")["power_limit"].to_list() == [100]
    assert data.group_by("source").agg(pl.col("zeus_cost", "energy_min", "time_min", "max_slowdown").sum()).drop("source").sum().row(0) == (3, 3, 3, 3)
    assert choices(read_power_limit_profiles(folder).table).equals(data)


@pytest.fixture(scope="module")
def zeus_profiles_home(materialized: Homes, mirror: Path) -> tuple[ProjectPaths, object]:
    home = materialized(
        Step(["raw_zeus_traces", "power_limit_profiles", "quarantine/power_limit_profiles_bad_rows", "zeus_power_profiles",
              "quarantine/zeus_power_profiles_bad_rows", "figures/power_limit_choice"]),
        prepare=lambda paths: _drop_profiles(paths.measured, mirror), name="zeus_profiles_project",
    )
    return home.paths, home.result


def test_assets_ingest_zeus_files_and_draw_the_choice(zeus_profiles_home: tuple[ProjectPaths, object]) -> None:
    paths, result = zeus_profiles_home
    checks = {(e.asset_key.path[-1], e.check_name): e.passed for e in result.get_asset_check_evaluations()}
    assert checks[("power_limit_profiles", "records_accounted")] and checks[("power_limit_profiles", "quarantine_share")]
    assert checks[("zeus_power_profiles", "quarantine_share")]  # the logs in raw/measured are not measured CSVs
    table = pl.read_parquet(paths.table("power_limit_profiles"))
    assert table.height == 9 + 7 + 4 and set(table["format"]) == {"zeus-log", "zeus-json"}
    power = pl.read_parquet(paths.table("zeus_power_profiles"))
    assert set(power.filter(pl.col("source") != "zeus-nsdi23")["source"]) == {"measured:lab.csv"}
    assert (paths.figures / "power_limit_choice.png").stat().st_size > 10_000
    assert pl.read_parquet(paths.figures / "power_limit_choice.parquet").height == table.height


def test_an_unreadable_zeus_file_is_one_quarantine_row(tmp_path: Path) -> None:
    folder = tmp_path / "measured"
    folder.mkdir()
    (folder / "dir.json").mkdir()  # globbed like a file name, but is a folder: skipped
    (folder / "log.csv").write_bytes(b"start_time,window_name,elapsed_time,gpu0_energy\n1,__GlobalPowerLimitOptimizer_300,1,\xff\n")
    result = read_power_limit_profiles(folder)
    assert result.table.height == 0
    assert result.quarantine.select("source_file", "line", "reason").rows() == [("measured/log.csv", 2, "not UTF-8 text (byte 84)")]
