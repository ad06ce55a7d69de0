"""Errors short (issue 54 item 5): no error line quotes more than 200 characters of the user's input.

Reproductions: a grid file whose header is 50 MB put 50 MB on stderr (the error quoted the header); ``simulate groups``
with a 30 MB header, 30 MB. Scaled down here: a header of 5,000 columns (about 29 kB) is quoted cut to 200 characters;
one of 20,000 (about 150 kB) is past the bound on such a header (64 KiB) and not read at all (a 50 MB one held 7.3 GB).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pipelines.cli import cli
from pipelines.terminal import clip_input
from tests.support.sacct_export import write_export

COLUMNS = [f"c{i}" for i in range(5_000)]


def test_clip_input_cuts_each_long_quote_and_keeps_the_rest() -> None:
    listed = ", ".join(COLUMNS)
    message = f"x.csv: column 'group' is missing (has {listed}); give a group column"
    quoted = f"has {listed}"  # what the parenthesis holds
    assert clip_input(message) == (f"x.csv: column 'group' is missing ({quoted[:200]}... ({len(quoted):,} characters)); "
                                   "give a group column")
    value = "v" * 250
    assert clip_input(f"bad value {value!r} here") == f"bad value '{'v' * 200}... (250 characters)' here"
    assert clip_input(f"a line {'x' * 201}") == f"a line {'x' * 200}... (201 characters)"
    ordinary = "--price-per-kwh is per kWh: give --price-unit as a currency (EUR) or per kWh (EUR/kWh), not EUR/MWh " * 3
    assert clip_input(ordinary) == ordinary  # fixed text, however long, is left whole


@pytest.fixture
def big_header(tmp_path: Path) -> Path:
    path = tmp_path / "wide.csv"
    path.write_text(",".join(COLUMNS) + "\n" + ",".join("1" for _ in COLUMNS) + "\n")
    return path


def _one_short_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), stderr[:500]
    assert len(lines[0]) < 800  # the fixed text and at most 200 characters of each quote
    return lines[0]


def test_a_huge_grid_header_is_not_quoted_whole(big_header: Path, tmp_path: Path) -> None:
    export = tmp_path / "x.sacct"
    write_export(export, 5, seed=1)
    done = CliRunner().invoke(cli, ["whatif", str(export), "--grid-intensity", str(big_header)], env={"GPU_ENERGY_HOME": str(tmp_path)})
    assert done.exit_code == 2
    assert "cannot tell the file's format from its header ['c0', 'c1'," in _one_short_line(done.stderr)


def test_a_huge_group_table_header_is_not_quoted_whole(big_header: Path, tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["simulate", "groups", "--groups", str(big_header)], env={"GPU_ENERGY_HOME": str(tmp_path)})
    assert done.exit_code != 0
    assert "column 'group' is missing (has c0, c1, c2," in _one_short_line(done.stderr)


def test_a_header_past_its_bound_is_not_parsed(tmp_path: Path) -> None:
    wide = tmp_path / "wide.csv"
    wide.write_text(",".join(f"c{i}" for i in range(20_000)) + "\n1\n")
    export = tmp_path / "x.sacct"
    write_export(export, 5, seed=1)
    done = CliRunner().invoke(cli, ["whatif", str(export), "--grid-intensity", str(wide)], env={"GPU_ENERGY_HOME": str(tmp_path)})
    assert done.exit_code == 2
    assert _one_short_line(done.stderr) == f"Error: {wide}:1: a line longer than 65,536 bytes (the bound on one line)"
    done = CliRunner().invoke(cli, ["simulate", "groups", "--groups", str(wide)], env={"GPU_ENERGY_HOME": str(tmp_path)})
    assert _one_short_line(done.stderr) == f"Error: {wide}: a line longer than 65,536 bytes (the bound on one line)"
