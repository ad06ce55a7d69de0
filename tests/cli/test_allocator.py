"""The export-reading commands return polars' freed memory at once (pipelines/allocator.py); other processes keep the default."""

from __future__ import annotations

import os
import subprocess
import sys

import polars as pl
import pytest

from pipelines.allocator import ENV, PROMPT_RETURN, is_export_reader, return_freed_memory_promptly
from pipelines.home.paths import REPO_ROOT

MAIN = str(REPO_ROOT / "pipelines" / "__main__.py")


@pytest.mark.parametrize(("argv", "expected"), [
    (["-m", "whatif", "x.sacct"], True),  # python -m pipelines, while the package is imported
    ([MAIN, "whatif", "x.sacct"], True),
    (["/venv/bin/gpu-energy", "clusters", "add", "lab", "x.sacct"], True),
    (["-m", "materialize"], False),
    (["-m", "sql", "select 1"], False),
    (["/venv/bin/dagster", "api", "grpc"], False),  # a Dagster process loading the code location
    (["-c", "whatif"], False),
    ([MAIN], False),
])
def test_which_commands_read_a_whole_export(argv: list[str], expected: bool) -> None:
    assert is_export_reader(argv) is expected


def test_a_users_own_setting_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "polars", pl)
    monkeypatch.delenv(ENV, raising=False)
    return_freed_memory_promptly(["-m", "whatif"])  # polars already loaded: too late to matter, so nothing is set
    assert ENV not in os.environ
    monkeypatch.delitem(sys.modules, "polars")
    monkeypatch.setenv(ENV, "dirty_decay_ms:5000")
    return_freed_memory_promptly(["-m", "whatif"])
    assert os.environ[ENV] == "dirty_decay_ms:5000"
    monkeypatch.delenv(ENV)
    return_freed_memory_promptly(["-m", "whatif"])
    assert os.environ[ENV] == PROMPT_RETURN


def test_python_m_pipelines_sets_it_before_polars_loads() -> None:
    probe = "import sys; sys.argv = ['-m', 'whatif']; import pipelines, os; print(os.environ.get('{}'), 'polars' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if k != ENV}
    done = subprocess.run([sys.executable, "-c", probe.format(ENV)], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.split() == [PROMPT_RETURN, "False"]
