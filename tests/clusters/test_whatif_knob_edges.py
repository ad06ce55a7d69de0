"""Knob edges give a result or one line (issue 39, item 7): whatif as simulate single, and inf as valid JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.home.paths import REPO_ROOT
from tests.support.sacct_export import write_export


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("knobs") / "lab.sacct"
    write_export(path, 200, seed=3, timezone="UTC")
    return path


def whatif(export: Path, mirror: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines", "whatif", str(export), "--trace-dir", str(mirror / "zeus"),
                           "--no-progress", "--samples", "2", *args], capture_output=True, text=True, check=False, cwd=REPO_ROOT)


@pytest.mark.parametrize("beta", ["1", "1.0000001"])
def test_beta_at_its_edge_is_one_line(export: Path, mirror: Path, beta: str) -> None:
    """beta 1 prunes every batch size or misses the target: the simulator's own message (SimulationError), one line, as
    `simulate single` prints it, where it was a traceback."""
    done = whatif(export, mirror, "--beta-knob", beta, "--json")
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert any(m in done.stderr for m in ("Empty batch size set when constructing MAB", "missed the target in 1000 runs"))


def test_beta_inf_is_valid_json(export: Path, mirror: Path) -> None:
    done = whatif(export, mirror, "--beta-knob", "inf", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # strict: json.loads reads NaN/Infinity tokens, the next line would not
    assert "Infinity" not in done.stdout.replace('"Infinity"', "")
    assert report["beta"] == "Infinity"
