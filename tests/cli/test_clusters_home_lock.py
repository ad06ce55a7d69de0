"""`clusters add` and `clusters remove` take the Dagster home's lock (pipelines/orchestration/lock.py), the one a running
`materialize` holds: a run never sees a trace appear or vanish under it. While it is held they refuse in one line naming
its holder, or wait with `--wait` (issue 53). The lock is held here as `materialize`'s driver holds it."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from pipelines.cli import clusters as clusters_cli
from pipelines.orchestration import lock
from tests.support.empty_home import empty_home
from tests.support.processes import blocked_on
from tests.support.sacct_export import write_export


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty data home (no mirror), its Dagster instance in tmp_path/dagster_home; an export to add at tmp_path/lab.sacct."""
    home = empty_home(tmp_path, monkeypatch)
    write_export(tmp_path / "lab.sacct", 20, seed=7)
    return home


def run_behind(dagster_home: Path, args: list[str], while_queued: Callable[[], None], holder: str | None = None) -> tuple[str, str]:
    """Run ``python -m pipelines clusters ARGS`` while this process holds the home's lock (named as ``holder``'s command
    when given); once the command waits on it (the event, not a clock: the kernel lists it as the lock's waiter),
    ``while_queued`` checks the home, then the lock is released. The command's (stdout, stderr), after it succeeded and
    said first that it was waiting."""
    named = click.Context(click.Command("holder"), info_name=holder) if holder else contextlib.nullcontext()
    with named, lock.held(dagster_home, lambda who: None):
        process = subprocess.Popen([sys.executable, "-m", "pipelines", "clusters", *args], env=os.environ,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            while process.pid not in blocked_on(dagster_home / lock.LOCK_FILE):
                assert process.poll() is None, process.communicate()
                time.sleep(0.05)
            while_queued()
        except BaseException:
            process.kill()
            raise
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert err.splitlines()[0].startswith(f"waiting: {dagster_home / lock.LOCK_FILE} is held (pid {os.getpid()}, started "), err
    return out, err


def _refusal(dagster_home: Path) -> str:
    """The line of a refused command while this process holds the lock (what it wrote, up to the start time)."""
    return f"Error: {dagster_home / lock.LOCK_FILE} is held (pid {os.getpid()}, started "


def test_add_and_remove_refuse_in_one_line_while_a_materialize_holds_the_home(home: Path, tmp_path: Path) -> None:
    clusters, dagster_home = home / "raw" / "clusters", tmp_path / "dagster_home"
    runner = CliRunner()
    with lock.held(dagster_home, lambda who: None):
        refused = runner.invoke(clusters_cli.cli, ["add", "lab", str(tmp_path / "lab.sacct")])
        assert refused.exit_code == 2 and len(refused.output.splitlines()) == 1, refused.output
        assert refused.output.startswith(_refusal(dagster_home)), refused.output
        assert refused.output.endswith(": a materialize reads raw/clusters/; run this again once it ends, or add --wait\n")
        assert list(clusters.iterdir()) == []
    assert runner.invoke(clusters_cli.cli, ["add", "lab", str(tmp_path / "lab.sacct")]).exit_code == 0
    assert sorted(p.name for p in clusters.iterdir()) == ["lab.sacct", "lab.toml"]
    with lock.held(dagster_home, lambda who: None):
        refused = runner.invoke(clusters_cli.cli, ["remove", "lab"])
        assert refused.exit_code == 2 and refused.output.startswith(_refusal(dagster_home)), refused.output
    assert sorted(p.name for p in clusters.iterdir()) == ["lab.sacct", "lab.toml"]  # nothing removed


@pytest.mark.parametrize("command", ["add", "remove"])
def test_with_wait_they_wait_for_the_materialize_then_run(home: Path, tmp_path: Path, command: str) -> None:
    clusters, dagster_home = home / "raw" / "clusters", tmp_path / "dagster_home"
    if command == "remove":
        assert CliRunner().invoke(clusters_cli.cli, ["add", "lab", str(tmp_path / "lab.sacct")]).exit_code == 0
    before = sorted(p.name for p in clusters.iterdir())
    args = ["add", "lab", str(tmp_path / "lab.sacct")] if command == "add" else ["remove", "lab"]

    def unchanged() -> None:
        assert sorted(p.name for p in clusters.iterdir()) == before  # nothing changed while the lock is held

    out, _ = run_behind(dagster_home, [*args, "--wait"], unchanged)
    after = sorted(p.name for p in clusters.iterdir())
    assert after == (["lab.sacct", "lab.toml"] if command == "add" else [])
    assert out.startswith(f"{'added' if command == 'add' else 'removed'} trace lab: ")


def test_an_add_waits_without_wait_for_another_add_holding_the_home(home: Path, tmp_path: Path) -> None:
    """Changes to raw/clusters/ queue: an add (seconds) holding the lock is waited for, not refused as a materialize is."""
    clusters, dagster_home = home / "raw" / "clusters", tmp_path / "dagster_home"

    def nothing_added() -> None:
        assert list(clusters.iterdir()) == []

    _, err = run_behind(dagster_home, ["add", "lab", str(tmp_path / "lab.sacct")], nothing_added,
                        holder="python -m pipelines clusters add")
    assert err.splitlines()[0].endswith(": python -m pipelines clusters add)"), err
    assert sorted(p.name for p in clusters.iterdir()) == ["lab.sacct", "lab.toml"]
