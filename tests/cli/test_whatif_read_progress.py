"""``whatif`` shows the read's progress (bytes) while a long export is read, on stderr where progress is shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.clusters import tracefiles
from tests.support.cli import run_main
from tests.support.sacct_export import write_export


def test_the_reader_tells_the_bytes_read_up_to_the_files_size(tmp_path: Path) -> None:
    path = tmp_path / "c.sacct"
    write_export(path, 800, seed=2)
    seen: list[tuple[int, int]] = []
    tracefiles.read_trace(path, "c", "sacct", "Europe/Berlin", source_file=path.name, progress=lambda done, total: seen.append((done, total)))
    size = path.stat().st_size
    assert seen and seen[-1] == (size, size)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and all(t == size for _, t in seen)


def test_whatif_progress_shows_a_reading_bar(tmp_path: Path, mirror: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.sacct"
    write_export(path, 300, seed=2)
    args = ("whatif", str(path), "--timezone", "Europe/Berlin", "--trace-dir", str(mirror / "zeus"), "--samples", "1", "--scheduler", "none")
    shown = run_main(capsys, *args, "--progress")
    assert shown.returncode == 0, shown.stderr
    assert "[whatif] reading" in shown.stderr and "100%" in shown.stderr
    quiet = run_main(capsys, *args, "--no-progress")
    assert "[whatif] reading" not in quiet.stderr
