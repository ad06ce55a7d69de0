"""``fleet_power_cdf``: AcmeTrace's measured curves from the pinned pickles; refused files, bad points and bad curves block downstream."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import shutil
import warnings
from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl
import pytest

from pipelines.contracts.fleet import FleetPowerCdf
from pipelines.defs.shared.io_manager import ParquetIOManager, PathsResource
from pipelines.ingest import fleet
from pipelines.sources.manifest import SOURCES_BY_NAME

KALOS = "acme/util_pkl/gpu_power_kalos.pkl"


class RunsCommand:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


@pytest.fixture
def raw(mirror: Path, tmp_path: Path) -> Path:
    """A raw/ folder holding the six pinned pickles (copies from the mirror)."""
    for name in fleet.FILES:
        (tmp_path / "raw" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(mirror / name, tmp_path / "raw" / name)
    return tmp_path / "raw"


def test_the_pinned_files_give_the_seven_curves_the_data_sources_name(raw: Path) -> None:
    result = fleet.read_curves(raw)
    FleetPowerCdf.validate(result.table, cast=False)
    assert result.quarantine.height == 0 and result.unaccounted == 0 and result.lines_in == 7000
    curves = result.table.group_by("cluster", "metric").len().sort("cluster", "metric").rows()
    assert curves == [("kalos", "gpu_power_w", 1000), ("kalos", "gpu_util_pct", 1000), ("philly", "gpu_util_pct", 1000),
                      ("seren", "cpu_node_power_w", 1000), ("seren", "gpu_node_power_w", 1000), ("seren", "gpu_power_w", 1000),
                      ("seren", "gpu_util_pct", 1000)]
    # "medians about 97 W (Seren) and 102 W (Kalos); p90 about 395-404 W" (the data sources, from the upstream notebook)
    for cluster, median, p90 in (("seren", 97, 395), ("kalos", 102, 404)):
        rows = result.table.filter((pl.col("cluster") == cluster) & (pl.col("metric") == "gpu_power_w")).sort("point")
        x, cdf = rows["x"].to_numpy(), rows["cdf_pct"].to_numpy()
        assert abs(np.interp(50, cdf, x) - median) < 1 and abs(np.interp(90, cdf, x) - p90) < 1, cluster
    rules = fleet.curve_rules(result.table)
    assert fleet.missing_curves(result.table) == [] and fleet.curve_problems(rules) == ([], [])


def test_a_hostile_truncated_or_misshapen_file_is_quarantined_whole_and_nothing_runs(raw: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    good = (raw / KALOS).read_bytes()
    x, y = np.linspace(50, 500, 10), np.linspace(0, 100, 10)
    cases = {
        "hostile": (pickle.dumps([x, RunsCommand(marker)]), "names the global posix.system"),
        "truncated": (good[: len(good) // 2], "truncated or corrupt"),
        "unequal": (pickle.dumps([x, y[:-1]]), "pair 0: x has 10 points and cdf 9; arrays of unequal length"),
        "three arrays": (pickle.dumps([x, y, x]), "3 arrays, not 1 (x, CDF %) pairs"),
    }
    for case, (data, reason) in cases.items():
        (raw / KALOS).write_bytes(data)
        result = fleet.read_curves(raw, pins={KALOS: hashlib.sha256(data).hexdigest()})
        q = result.quarantine.row(0, named=True)
        assert result.quarantine.height == 1 and q["source_file"] == KALOS and q["line"] == 1 and reason in q["reason"], (case, q)
        assert result.unaccounted == 0 and result.table.height == 6000, case
        assert fleet.missing_curves(result.table) == ["kalos/gpu_power_w"], case
    assert not marker.exists()


def test_bytes_that_are_not_the_pin_are_never_unpickled(raw: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    (raw / KALOS).write_bytes(pickle.dumps([RunsCommand(marker)]))
    result = fleet.read_curves(raw)  # the manifest's pins
    assert "is not the pinned 8d37bcbb" in result.quarantine["reason"][0] and "not unpickled" in result.quarantine["reason"][0]
    assert not marker.exists()


def test_bad_points_go_to_quarantine_and_bad_curves_are_found(raw: Path) -> None:
    cdf = np.linspace(0, 100, 6)
    cases = {
        "x out of bounds": (np.array([50.0, 60, 70, 80, 90, 2500]), cdf),
        "not finite": (np.array([50.0, 60, np.nan, 80, 90, 100]), cdf),
        "x decreases": (np.array([50.0, 60, 55, 80, 90, 100]), cdf),
        "cdf decreases": (np.array([50.0, 60, 70, 80, 90, 100]), np.array([0, 20, 60, 40, 80, 100.0])),
        "cdf short of 100": (np.array([50.0, 60, 70, 80, 90, 100]), cdf * 0.9),
    }
    outcome = {}
    for case, (x, y) in cases.items():
        data = pickle.dumps([x, y])
        (raw / KALOS).write_bytes(data)
        result = fleet.read_curves(raw, pins={KALOS: hashlib.sha256(data).hexdigest()})
        assert result.unaccounted == 0
        decreasing, span = fleet.curve_problems(fleet.curve_rules(result.table))
        outcome[case] = (result.quarantine.select("line", "column", "reason").rows(), decreasing, span)
    bounds = outcome["x out of bounds"][0]
    assert bounds[0][:2] == (6, "x") and "x_within_physical_bounds" in bounds[0][2] and bounds[0][2].startswith("pair 0 (kalos gpu_power_w)")
    assert outcome["not finite"][0][0][:2] == (3, "x") and "must not be NaN" in outcome["not finite"][0][0][2]
    assert outcome["x decreases"] == ([], ["kalos/gpu_power_w: x decreases at point 2"], [])
    assert outcome["cdf decreases"] == ([], ["kalos/gpu_power_w: cdf_pct decreases at point 3"], [])
    assert outcome["cdf short of 100"] == ([], [], ["kalos/gpu_power_w: cdf_pct runs from 0.0 to 90.0, not 0 to 100"])


# ---------------------------------------------------------------------------------------------
# in Dagster: the blocking checks keep a refused file or a decreasing curve from flowing downstream


def _materialize(root: Path, data: bytes, monkeypatch: pytest.MonkeyPatch) -> dg.ExecuteInProcessResult:
    from pipelines.defs.acme.fleet import fleet_power_cdf

    (root / "raw" / KALOS).write_bytes(data)
    monkeypatch.setitem(SOURCES_BY_NAME, KALOS, dataclasses.replace(SOURCES_BY_NAME[KALOS], sha256=hashlib.sha256(data).hexdigest()))
    monkeypatch.setenv("TRACES_MIRROR", str(root / "no-mirror"))

    @dg.asset(deps=["fleet_power_cdf"], name="after_fleet")
    def after_fleet() -> dg.MaterializeResult:
        return dg.MaterializeResult()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dg.materialize([fleet_power_cdf, after_fleet],
                              resources={"io_manager": ParquetIOManager(root=str(root)), "paths": PathsResource(root=str(root))},
                              raise_on_error=False)


@pytest.mark.parametrize("case", ["hostile", "decreasing"])
def test_a_refused_file_or_a_decreasing_curve_blocks_downstream(case: str, raw: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = raw.parent
    marker = root / "ran"
    if case == "hostile":
        data = pickle.dumps([np.zeros(3), RunsCommand(marker)])
        failing = {"quarantine_share", "every_curve_present", "no_rows_quarantined"}  # the last a warning, on the quarantine
    else:
        data = pickle.dumps([np.array([50.0, 60, 70, 80]), np.array([0, 50, 40, 100.0])])
        failing = {"curves_non_decreasing"}
    result = _materialize(root, data, monkeypatch)
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert {name for name, e in checks.items() if not e.passed} == failing
    assert not result.success and "after_fleet" not in {e.step_key for e in result.get_step_success_events()}
    if case == "hostile":
        quarantine = pl.read_parquet(root / "assets/quarantine/fleet_power_cdf_bad_rows.parquet")
        assert "names the global posix.system" in quarantine["reason"][0] and not marker.exists()
        assert "kalos/gpu_power_w" in checks["every_curve_present"].description
        assert checks["no_rows_quarantined"].description.startswith(f"{quarantine.height} rows quarantined; most frequent reason (")
    else:
        assert checks["curves_non_decreasing"].description == "kalos/gpu_power_w: cdf_pct decreases at point 2"
