"""A CSV header is a line like any other (issue 54, reproduction 4): bounded by ``--max-line-bytes``, and read in linear
time. ``whatif A100m.csv`` (100 MB, no newline) took 100 s and 497 MB before its one line; scaled down here."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.ingest.text_reader import ReadLimits, Source


def test_the_first_line_is_bounded_by_the_line_bound(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_bytes(b"A" * 5000)  # no newline
    with pytest.raises(ValueError, match=r"wide.csv:1: a line longer than 1,000 bytes"):
        Source(path, "wide.csv", limits=ReadLimits(line_bytes=1000)).first_line()
    path.write_bytes(b"job_id,state\r\n1,COMPLETED\n")
    assert Source(path, "ok.csv", limits=ReadLimits(line_bytes=13)).first_line() == "job_id,state"


@pytest.mark.parametrize("fmt", [[], ["--format", "csv"]])
def test_whatif_on_a_file_with_no_newline_is_one_line(tmp_path: Path, fmt: list[str]) -> None:
    path = tmp_path / "A.csv"
    path.write_bytes(b"A" * (2 << 20))  # 2 MiB, past the default bound of 1 MiB
    with pytest.MonkeyPatch.context() as env, pytest.raises(SystemExit) as exit_:
        env.setenv("GPU_ENERGY_HOME", str(tmp_path))
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
            main(["whatif", str(path), *fmt], prog_name="gpu-energy")
    assert exit_.value.code == 2 and out.getvalue() == ""
    assert err.getvalue() == (f"Error: {path}:1: a line longer than 1,048,576 bytes (the bound on one line; --max-line-bytes "
                              "raises it)\n")
