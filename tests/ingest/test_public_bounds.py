"""The public traces' reader (``pipelines.ingest.common``) and the series' (``grid.read_csv_text``) read under the reader
engine's bounds, the header's line included: one ``IngestError`` line naming file, line and bound, before any parse
(issue 53 item 4)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.common import IngestError, ingest_bytes
from pipelines.ingest.grid import read_csv_text
from pipelines.ingest.power_limit_profiles import read_zeus_log
from pipelines.ingest.zeus import TRAIN_SPEC

HEADER = b"dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch"
ROW = b"cifar100,shufflenetv2,128,adadelta,0.1,0,0.6,17"


def test_a_well_formed_table_reads_as_before() -> None:
    result = ingest_bytes(HEADER + b"\n" + ROW + b"\n", TRAIN_SPEC, source_file="summary_train.csv")
    assert result.table.height == 1 and result.quarantine.height == 0 and result.lines_in == 1


def test_a_line_over_one_mebibyte_stops_the_read_naming_its_line() -> None:
    long_row = b"cifar100," + b"n" * (1 << 20) + b",128,adadelta,0.1,0,0.6,17"  # 1,048,611 bytes: over 1,048,576
    with pytest.raises(IngestError) as caught:
        ingest_bytes(HEADER + b"\n" + ROW + b"\n" + long_row + b"\n" + ROW + b"\n", TRAIN_SPEC, source_file="summary_train.csv")
    assert str(caught.value) == "summary_train.csv:3: a line longer than 1,048,576 bytes (the bound on one line)"


def test_a_header_over_one_mebibyte_is_the_same_bound_at_line_1() -> None:
    with pytest.raises(IngestError) as caught:
        ingest_bytes(HEADER + b"," + b"h" * (1 << 20) + b"\n" + ROW + b"\n", TRAIN_SPEC, source_file="summary_train.csv")
    assert str(caught.value).startswith("summary_train.csv:1: a line longer than 1,048,576 bytes")


def test_more_than_two_million_lines_stop_before_they_are_split() -> None:
    """2,000,001 lines (a header and empty lines: 2 MB) pass the bound on rows of a table read whole by one
    (``text_reader.TABLE_LIMITS``: with ``MAX_TABLE_BYTES``, what keeps its parse under 1.5 GB)."""
    with pytest.raises(IngestError) as caught:
        ingest_bytes(HEADER + b"\n" * 2_000_001, TRAIN_SPEC, source_file="summary_train.csv")
    assert str(caught.value) == "summary_train.csv: more than 2,000,000 lines (the bound on rows per file)"
    from pipelines.ingest.text_reader import bounded_table  # the engine's pass alone: parsing 2M empty lines costs 5 s of make test

    data = HEADER + b"\n" * 2_000_000
    kept, withheld = bounded_table(data, "summary_train.csv", separator=TRAIN_SPEC.separator, quote_char=TRAIN_SPEC.quote_char)
    assert kept is data and withheld.height == 0


def test_a_trace_folder_file_over_the_table_bound_is_refused_by_its_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``whatif --trace-dir`` and ``simulate`` read a user's summary_train.csv through the engine's one bounded read
    (``text_reader.read_bytes``): a larger file is one line before a byte is read, compressed or not."""
    import lzma

    from pipelines.ingest import text_reader
    from pipelines.ingest.zeus import read_train

    monkeypatch.setattr(text_reader, "MAX_TABLE_BYTES", 1000)
    path = tmp_path / "summary_train.csv"
    path.write_bytes(HEADER + b"\n" + (ROW + b"\n") * 30)  # 83 + 1 + 30 x 48 = 1,524 bytes
    with pytest.raises(IngestError) as caught:
        read_train(path)
    assert str(caught.value) == "summary_train.csv: larger than 1,000 bytes (the bound on a table read whole)"
    packed = tmp_path / "summary_train.csv.xz"
    packed.write_bytes(lzma.compress(path.read_bytes()))
    with pytest.raises(IngestError) as caught:
        read_train(packed)
    assert str(caught.value).startswith("summary_train.csv.xz: decompresses to more than 1,000 bytes")
    path.write_bytes(HEADER + b"\n" + (ROW + b"\n") * 10)
    under = read_train(path)  # 563 bytes: under the bound, read as ever
    assert (under.table.height, under.quarantine.height, under.lines_in) == (10, 0, 10)


def test_a_series_line_over_64_kib_is_one_line_naming_it(tmp_path: Path) -> None:
    """A grid or price series (``grid.read_csv_text``) is a small table: every line, not only its header, within 64 KiB."""
    path = tmp_path / "grid.csv"
    path.write_bytes(b"timestamp,gco2_per_kwh\n2024-01-01T00:00:00Z,300\n2024-01-01T01:00:00Z," + b"3" * (64 << 10) + b"\n")
    with pytest.raises(IngestError) as caught:
        read_csv_text(path)
    assert str(caught.value) == f"{path}:3: a line longer than 65,536 bytes (the bound on one line)"


def test_a_zeusmonitor_log_s_line_over_one_mebibyte_is_one_line_naming_it(tmp_path: Path) -> None:
    """A ZeusMonitor log (``power-limit``, ``--profiles``) is read through the same bounds before the csv module splits it."""
    path = tmp_path / "log.csv"
    path.write_bytes(b"start_time,window_name,elapsed_time,gpu0_energy\n1,\"" + b"x" * (1 << 20) + b"\",1,1\n")
    with pytest.raises(IngestError) as caught:
        read_zeus_log(path)
    assert str(caught.value) == f"{path}:2: a line longer than 1,048,576 bytes (the bound on one line)"


def test_a_parquet_group_table_within_a_csv_ones_bounds_from_its_footer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``read_table_file`` reads a .parquet group table only once its footer says its rows and uncompressed bytes are within
    the bounds of a CSV one (a 10 GB Parquet file was read whole by polars); a file that is not Parquet is one line."""
    from pipelines.ingest import simulator_inputs, text_reader
    from pipelines.ingest.simulator_inputs import read_table_file
    from pipelines.ingest.text_reader import ReadLimits
    from pipelines.zeus.traces import TraceError

    path = tmp_path / "groups.parquet"
    frame = pl.DataFrame({"group": [f"g{i}" for i in range(11)], "start_time": [float(i) for i in range(11)], "note": [f"{'x' * 200}{i}" for i in range(11)]})
    frame.write_parquet(path, compression="zstd")
    assert read_table_file(path).equals(frame)
    monkeypatch.setattr(simulator_inputs, "SMALL_TABLE_LIMITS", ReadLimits(rows=10, flags=False))
    with pytest.raises(TraceError) as caught:
        read_table_file(path)
    assert str(caught.value) == f"{path}: 11 rows, more than 10 (the bound on rows per file)"
    monkeypatch.setattr(simulator_inputs, "SMALL_TABLE_LIMITS", ReadLimits(rows=11, flags=False))
    monkeypatch.setattr(text_reader, "MAX_TABLE_BYTES", 2000)  # 11 x 201 bytes of note alone, uncompressed; less stored
    assert path.stat().st_size < 2000
    with pytest.raises(TraceError, match=rf"^{re.escape(str(path))}: decompresses to [\d,]+ bytes, more than 2,000 \(the bound on a table read whole\)$"):
        read_table_file(path)
    path.write_bytes(b"PAR1 not a footer")
    with pytest.raises(TraceError, match=rf"^{re.escape(str(path))}: unreadable \("):
        read_table_file(path)
