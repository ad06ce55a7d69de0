"""Profile inputs give one line, never a traceback (issue 54, reproduction 6): ``power-limit`` (and ``whatif --profiles``)
on a ZeusMonitor log with a field over the csv module's 128 kB limit (``_csv.Error``), a deeply nested JSON
(``RecursionError``), a FIFO, and a file over the bound on a profile's size; an OpenEI ``--price`` nested as deep."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.ingest import power_limit_profiles
from tests.support.sacct_export import write_export


def _one_line(args: list[str], home: Path) -> str:
    """The one line ``python -m pipelines ARGS`` prints on stderr (exit code 2, nothing on stdout)."""
    with pytest.MonkeyPatch.context() as env, pytest.raises(SystemExit) as exit_:
        env.setenv("GPU_ENERGY_HOME", str(home))
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
            main(args, prog_name="gpu-energy")
    assert exit_.value.code == 2 and out.getvalue() == "", err.getvalue()
    lines = err.getvalue().splitlines()
    assert len(lines) == 1, err.getvalue()[-2000:]
    return lines[0]


def test_power_limit_on_hostile_profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wide = tmp_path / "log.csv"
    wide.write_text('start_time,window_name,elapsed_time,gpu0_energy\n1,"' + "x" * 140_000 + '",1,1\n')
    assert _one_line(["power-limit", str(wide)], tmp_path) == (
        f"Error: {wide}: not a ZeusMonitor log's CSV: field larger than field limit (131072)")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert _one_line(["power-limit", str(deep)], tmp_path) == (
        f"Error: {deep}: not a Zeus profile: JSON nested deeper than Python's reader follows")
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    assert _one_line(["power-limit", str(fifo)], tmp_path) == (
        f"Error: {fifo}: not a regular file (a FIFO, device or stdin): give the profile's file")
    monkeypatch.setattr(power_limit_profiles, "MAX_PROFILE_BYTES", 100)
    big = tmp_path / "big.json"
    big.write_text('{"measurements": [' + ", ".join('{"power_limit": 300, "energy": 1, "time": 1}' for _ in range(5)) + "]}")
    assert _one_line(["power-limit", str(big)], tmp_path) == f"Error: {big}: larger than 100 bytes (the bound on a profile file)"


def test_whatif_profiles_and_an_openei_price_nested_too_deep(tmp_path: Path) -> None:
    export = tmp_path / "x.sacct"
    write_export(export, 5, seed=1)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert _one_line(["whatif", str(export), "--profiles", f"a100={deep}"], tmp_path) == (
        f"Error: {deep}: not a Zeus profile: JSON nested deeper than Python's reader follows")
    assert _one_line(["whatif", str(export), "--price", str(deep)], tmp_path) == (
        f"Error: {deep}: not an OpenEI item: JSON nested deeper than Python's reader follows")
