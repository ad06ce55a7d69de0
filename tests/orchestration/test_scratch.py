"""The temp folder of a materialize's processes (issue 54, reproduction 11: each interrupted materialize left the code
server's socket ``/tmp/tmpXXXXXXXX``). The end-to-end checks are in test_materialize.py (slow)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pipelines.orchestration.scratch import MAX_BASE_BYTES, base_folder, remove_stale, scratch_folder


def test_the_scratch_folder_is_the_homes_and_removed_on_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    home = Path("dh")  # short: a socket fits under it
    with scratch_folder(home) as folder:
        assert folder.parent == home / "scratch" and folder.name.startswith(f"materialize-{os.getpid()}-")
        (folder / "tmpsocket").write_text("")
    assert list((home / "scratch").iterdir()) == []


def test_a_home_too_long_for_a_socket_uses_the_system_temp_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    short_temp = Path("/tmp/short")  # /tmp's length: room for the socket (pytest's tmp_path may have none)
    monkeypatch.setattr(tempfile, "tempdir", str(short_temp))
    long_home = Path("/" + "h" * MAX_BASE_BYTES)
    assert base_folder(long_home) == short_temp


def test_no_scratch_folder_where_the_temp_folder_is_too_long_for_a_socket_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a scratch folder there would put the code server's socket past 107 bytes: its server would not start
    long_temp = tmp_path / ("t" * MAX_BASE_BYTES)
    long_temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(long_temp))
    long_home = Path("/" + "h" * MAX_BASE_BYTES)
    assert base_folder(long_home) is None
    with scratch_folder(long_home) as folder:
        assert folder is None
    assert list(long_temp.iterdir()) == []


def test_the_folders_of_ended_drivers_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    dead = tmp_path / f"materialize-{int(ended.stdout)}-abc"
    live = tmp_path / f"materialize-{os.getpid()}-def"
    other = tmp_path / "tmp12345678"  # not a scratch folder: left alone
    for folder in (dead, live, other):
        (folder / "sub").mkdir(parents=True)
    assert remove_stale(tmp_path) == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])
