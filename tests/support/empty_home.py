"""An empty data home for the ``clusters`` commands' tests: no mirror, its Dagster instance beside it."""

from __future__ import annotations

from pathlib import Path

import pytest


def empty_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path/home`` with an empty raw/clusters/, set as $GPU_ENERGY_HOME; $TRACES_MIRROR a folder that does not exist,
    $DAGSTER_HOME ``tmp_path/dagster_home`` (telemetry off)."""
    monkeypatch.setenv("TRACES_MIRROR", str(tmp_path / "no-mirror"))
    monkeypatch.setenv("GPU_ENERGY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    (tmp_path / "dagster_home").mkdir()
    (tmp_path / "dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    (tmp_path / "home" / "raw" / "clusters").mkdir(parents=True)
    return tmp_path / "home"
