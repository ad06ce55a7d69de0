"""Profile inputs give one line, never a traceback (issue 54, reproduction 6): ``power-limit`` (and ``whatif --profiles``)
on a ZeusMonitor log with a field over the csv module's 128 kB limit (``_csv.Error``; now the engine's bound on one
field, 64 KiB, names its line and column first), a deeply nested JSON
(``RecursionError`` before the bound on JSON depth), a FIFO, and a file over the bound on a profile's size; an OpenEI ``--price`` nested as deep."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipelines.ingest import bounded_json, power_limit_profiles
from tests.support.cli import one_error_line
from tests.support.sacct_export import write_export


def test_power_limit_on_hostile_profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wide = tmp_path / "log.csv"
    wide.write_text('start_time,window_name,elapsed_time,gpu0_energy\n1,"' + "x" * 140_000 + '",1,1\n')
    assert one_error_line(["power-limit", str(wide)], tmp_path) == (
        f"Error: {wide}:2: column 'window_name': 140,002 bytes, more than 65,536 (the bound on one field)")  # the quotes counted
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert one_error_line(["power-limit", str(deep)], tmp_path) == (
        f"Error: {deep}: JSON nested 100,000 levels deep, more than 32 (the bound on JSON depth)")
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    assert one_error_line(["power-limit", str(fifo)], tmp_path) == (
        f"Error: {fifo}: not a regular file (a FIFO, device or stdin): give the profile's file")
    monkeypatch.setattr(bounded_json, "MAX_JSON_BYTES", 100)  # Zeus's JSON: the one bound on a JSON document
    big = tmp_path / "big.json"
    big.write_text('{"measurements": [' + ", ".join('{"power_limit": 300, "energy": 1, "time": 1}' for _ in range(5)) + "]}")
    assert one_error_line(["power-limit", str(big)], tmp_path) == f"Error: {big}: larger than 100 bytes (the bound on a profile file)"
    monkeypatch.setattr(power_limit_profiles, "MAX_PROFILE_BYTES", 100)  # a ZeusMonitor log: the bound on a profile's CSV
    log = tmp_path / "big.csv"
    log.write_text("start_time,window_name,elapsed_time,gpu0_energy\n" + "1,power_limit_300,1,1\n" * 10)
    assert one_error_line(["power-limit", str(log)], tmp_path) == f"Error: {log}: larger than 100 bytes (the bound on a profile file)"


def test_whatif_profiles_and_an_openei_price_nested_too_deep(tmp_path: Path) -> None:
    export = tmp_path / "x.sacct"
    write_export(export, 5, seed=1)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert one_error_line(["whatif", str(export), "--profiles", f"a100={deep}"], tmp_path) == (
        f"Error: {deep}: JSON nested 100,000 levels deep, more than 32 (the bound on JSON depth)")
    assert one_error_line(["whatif", str(export), "--price", str(deep)], tmp_path) == (
        f"Error: {deep}: JSON nested 100,000 levels deep, more than 32 (the bound on JSON depth)")


def test_a_measured_profile_with_a_field_over_the_csv_limit_is_one_quarantine_row(tmp_path: Path) -> None:
    """A CSV of raw/measured with a 140 kB field (over the csv module's 128 kB limit) raised ``_csv.Error`` while its
    time-only rows were looked for, before the engine's bounds; now the engine's bound on one field quarantines the line,
    and a header field that long makes the file one refused row (the folder's other files still read)."""
    from pipelines.ingest.zeus import read_measured_file

    header = "gpu,dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power,method,note"
    wide = tmp_path / "wide.csv"
    wide.write_text(f"{header}\na100,cifar100,{'y' * 140_000},1024,adadelta,300,1,100,zeus,\n")
    result, time_only = read_measured_file(wide, "wide.csv")
    assert (result.table.height, time_only) == (0, {})
    assert result.quarantine.select("line", "column", "reason").rows() == [
        (2, "network", "network: 140,000 bytes, more than 65,536 (the bound on one field; the line is not parsed)")]
    head = tmp_path / "head.csv"
    head.write_text(f"{header},{'h' * 140_000}\na100,cifar100,x,1024,adadelta,300,1,100,zeus,\n")
    result, _ = read_measured_file(head, "head.csv")
    assert result.quarantine.select("line", "column", "reason").rows() == [
        (1, "field 11", "a header field of 140,000 bytes, more than 65,536 (the bound on one field)")]
