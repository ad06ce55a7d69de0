"""Atomic writes: the published file takes the mode the umask gives a new file (0666 & ~umask), never a fixed 0600."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

from pipelines.home.atomic import atomic_path, write_text_atomic


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_writes_respect_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    old = os.umask(umask)
    try:
        written = write_text_atomic("x\n", tmp_path / "a.txt")
        with atomic_path(tmp_path / "b.parquet") as tmp:
            pl.DataFrame({"a": [1]}).write_parquet(tmp)
    finally:
        os.umask(old)
    assert written.stat().st_mode & 0o777 == mode and (tmp_path / "b.parquet").stat().st_mode & 0o777 == mode
