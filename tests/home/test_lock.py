"""uv.lock agrees with pyproject.toml: `make setup` installs with `uv sync --locked`, which refuses a stale lock.

`uv lock --check --offline` resolves the project's requirements against the lock alone (no index, no
network, no build: setuptools' static metadata) and fails where a requirement of pyproject.toml is
not what the lock was made from.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from pipelines.home.paths import REPO_ROOT


def _check(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "uv", "lock", "--check", "--offline", "--directory", str(project)],
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_committed_lock_matches_pyproject() -> None:
    done = _check(REPO_ROOT)
    assert done.returncode == 0, f"uv.lock is out of date with pyproject.toml (run `uv lock` and commit it):\n{done.stderr[-2000:]}"


def test_the_check_fails_when_a_requirement_changes(tmp_path: Path) -> None:
    for name in ("pyproject.toml", "uv.lock", "README.md", "LICENSE"):
        shutil.copy(REPO_ROOT / name, tmp_path / name)
    pyproject = tmp_path / "pyproject.toml"
    text = pyproject.read_text()
    # A dependency dropped: the lock holds everything the new resolution needs, so the check fails for the stale lock
    # alone (a changed version would need the index, and fail offline for that reason instead).
    assert text.count('"seaborn==0.13.2",') == 1
    pyproject.write_text(text.replace('"seaborn==0.13.2",', ""))

    done = _check(tmp_path)

    assert done.returncode != 0
    assert "needs to be updated" in done.stderr, done.stderr[-2000:]
