"""``measure profile`` also writes Zeus's profile JSON, and zeus 0.16.0's optimizer loads it and chooses what we choose."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from pipelines.cli.measure import cli as measure
from pipelines.ingest.power_limit_profiles import read_profile, read_zeus_json
from pipelines.measure.harness import ProfileResult, write_profile
from pipelines.measure.zeus_json import write_zeus_profiles, zeus_profiles
from pipelines.zeus.limit_selectors import Selector, choose
from tests.support.measured_profiles import BATCH_SIZES, LIMITS_W, profile_rows, time_only_rows
from tests.support.zeus_plo import load_profile
from tests.zeus.test_limit_selectors import every_selector, zeus_selector


def test_zeus_loads_each_batch_size_and_chooses_as_we_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = profile_rows()
    csv = write_profile(rows, tmp_path / "lab-a100.csv")
    written = write_zeus_profiles(rows, csv)
    assert [p.name for p in written] == [f"lab-a100.bs{bs}.zeus.json" for bs in BATCH_SIZES]
    chosen: set[int] = set()
    for bs, path in zip(BATCH_SIZES, written, strict=True):
        from_csv = read_profile(csv, batch_size=bs).measurements
        assert read_zeus_json(path).measurements == from_csv  # the JSON is the CSV's profile, to the bit
        assert [m.power_limit_w for m in from_csv] == sorted(LIMITS_W, reverse=True)
        for selector in every_selector(1):
            limit = choose(from_csv, selector)
            assert limit == load_profile(monkeypatch, path, zeus_selector(selector)), (bs, selector)
            chosen.add(limit)
    assert len(chosen) >= 3  # the profile is not one where every selector picks the same limit


def test_one_limit_or_no_energy_writes_no_json(tmp_path: Path) -> None:
    one_limit = profile_rows(limits=(300,))
    assert zeus_profiles(one_limit) == {}
    assert zeus_profiles(pl.concat([time_only_rows(), time_only_rows().with_columns(power_limit=pl.lit(250, pl.Int64))])) == {}
    # a limit measured twice: the first measurement is kept, as one per limit
    twice = pl.concat([profile_rows(limits=(200, 300)), profile_rows(limits=(300,)).with_columns(pl.col("time_per_epoch") * 2)])
    measurements = json.loads(zeus_profiles(twice)[32])["measurements"]
    assert [m["power_limit"] for m in measurements] == [300, 200]
    assert measurements[0]["time"] == profile_rows(limits=(300,))["time_per_epoch"][0]


def test_cli_writes_the_json_beside_the_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.cli import measure as measure_cli

    monkeypatch.setattr(measure_cli, "run_profile", lambda config, progress: ProfileResult(profile_rows().filter(pl.col("batch_size") == 64)))
    out = tmp_path / "measured" / "lab.csv"
    result = CliRunner().invoke(measure, ["profile", "--workload", "cifar100", "--batch-sizes", "64", "--power-limits", "200", "250",
                                          "300", "400", "--device", "cpu", "--quiet", "--out", str(out), "--parents"])
    assert result.exit_code == 0, result.output
    path = out.with_name("lab.bs64.zeus.json")
    assert f"wrote {path}: Zeus's profile JSON" in result.stderr
    assert choose(read_zeus_json(path).measurements, Selector()) == choose(read_profile(out).measurements, Selector())
    assert sorted(p.name for p in out.parent.iterdir()) == ["lab.bs64.zeus.json", "lab.csv"]  # atomic: no temp file left
