"""Outputs never clobber (issue 39, items 3 and 4; issue 54 item 2): links, devices, FIFOs, hard links, the home's managed folders
and marker, the inputs, files of another kind, missing folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipelines.cli import cli
from pipelines.home.outputs import OutputKind, OutputRefused, check_output

#: A kind no test file is (every existing file is refused as not one), and one every file is.
NONE = OutputKind("test output", lambda path: False)
ANY = OutputKind("test output", lambda path: True)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    for folder in ("assets", "raw/clusters", "raw/measured", ".dagster_home", "figures"):
        (root / folder).mkdir(parents=True)
    (root / "assets" / "itp_jobs.parquet").write_bytes(b"PAR1 table")
    (root / "raw" / "clusters" / "mine.sacct").write_text("JobID|State\n")
    return root


def test_refused_paths(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    export = tmp_path / "export.sacct"
    export.write_text("JobID|State\n")
    link = tmp_path / "link.parquet"
    link.symlink_to(home / "assets" / "itp_jobs.parquet")
    cases = {
        Path("/dev/null"): "not a regular file",
        fifo: "not a regular file",
        home / "assets" / "itp_jobs.parquet": "only the pipeline writes",
        home / "assets" / "new.parquet": "only the pipeline writes",
        home / "raw" / "clusters" / "mine.sacct": "only the pipeline writes",
        home / ".dagster_home" / "x": "only the pipeline writes",
        link: "is a symbolic link",
        export: "is an input of this command",
        home / "figures": "is a folder",
        tmp_path / "nonexist" / "out.parquet": "does not exist (--parents makes it)",
    }
    for path, why in cases.items():
        with pytest.raises(OutputRefused, match=why.replace("(", r"\(").replace(")", r"\)")):
            check_output(path, "--output", home, kind=ANY, inputs=[export])
    assert not (tmp_path / "nonexist").exists()
    assert (home / "assets" / "itp_jobs.parquet").read_bytes() == b"PAR1 table"


def test_allowed_paths(home: Path, tmp_path: Path) -> None:
    assert check_output(tmp_path / "x.html", "--html", home, kind=NONE).path == tmp_path / "x.html"
    assert check_output(home / "raw" / "measured" / "x.csv", "--out", home, kind=NONE, allowed=[home / "raw" / "measured"]).path
    existing = tmp_path / "old.parquet"
    existing.write_text("old")
    assert check_output(existing, "--output", home, kind=ANY).path == existing  # an earlier output of the kind is replaced
    made = tmp_path / "a" / "b" / "out.parquet"
    assert check_output(made, "--output", home, kind=NONE, make_parents=True).path == made and made.parent.is_dir()


def test_sweep_output_refuses_before_any_work(home: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    env = {"GPU_ENERGY_HOME": str(home)}
    for output, why in ((fifo, "not a regular file"), (home / "assets" / "itp_jobs.parquet", "only the pipeline writes"),
                        (home / "raw" / "clusters" / "mine.sacct", "only the pipeline writes"),
                        (tmp_path / "nonexist" / "g.parquet", "does not exist")):
        result = CliRunner().invoke(cli, ["sweep", "--scheduler", "none", "--output", str(output)], env=env)
        assert result.exit_code == 2 and why in result.output, result.output
        assert result.output.strip().splitlines()[-1].startswith(f"Error: --output {output}")
    assert (home / "assets" / "itp_jobs.parquet").read_bytes() == b"PAR1 table"
    assert not (tmp_path / "nonexist").exists()


def test_whatif_html_refuses_its_own_input(home: Path, tmp_path: Path) -> None:
    export = tmp_path / "export.sacct"
    export.write_text("JobID|State\n")
    env = {"GPU_ENERGY_HOME": str(home)}
    for html, why in ((export, "is an input of this command"), (home / "assets" / "r.html", "only the pipeline writes"),
                      (home / "figures" / "r.html", "only the pipeline writes"),
                      (Path("/dev/null"), "not a regular file"), (tmp_path / "no" / "r.html", "does not exist")):
        result = CliRunner().invoke(cli, ["whatif", str(export), "--html", str(html)], env=env)
        assert result.exit_code == 2 and why in result.output, result.output
    assert export.read_text() == "JobID|State\n"
