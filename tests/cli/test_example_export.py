"""``example-export``: the generated export of docs/own-cluster.md, written by the package's generator (issue 38 item 8)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.clusters.example_export import write_export


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int | str | None, str, str]:
    with pytest.raises(SystemExit) as exit_:
        main(args, prog_name="gpu-energy")
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


def test_the_command_writes_the_generators_file_and_prints_its_truth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["example-export", str(tmp_path / "lab.sacct.gz"), "--allocations", "400", "--seed", "42", "--malformed", "3",
                           "--energy", "measured", "--timezone", "America/New_York"], capsys)
    assert code == 0, err
    truth = write_export(tmp_path / "peer.sacct.gz", 400, seed=42, malformed=3, energy="measured", timezone="America/New_York")
    assert json.loads(out) == asdict(truth) and truth.malformed == 3 and truth.allocations < 400  # a cut allocation line is lost
    assert (tmp_path / "lab.sacct.gz").read_bytes() == (tmp_path / "peer.sacct.gz").read_bytes()
    assert err == f"[example-export] {truth.allocations:,} allocations, {truth.lines:,} lines -> {tmp_path / 'lab.sacct.gz'}\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp_")] == []  # written atomically, no temp file left


@pytest.mark.parametrize(("args", "message"), [
    (["--delimiter", "||"], "--delimiter '||': give one character"),
    (["--timezone", "Mars/Olympus"], "Mars/Olympus"),
])
def test_bad_options_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, out, err = _run(["example-export", str(tmp_path / "x.sacct"), "--allocations", "5", *args], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and message in err
    assert not (tmp_path / "x.sacct").exists()


def test_a_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["example-export", str(tmp_path)], capsys)
    assert code == 2 and err.startswith(f"Error: FILE {tmp_path}: is a folder")
