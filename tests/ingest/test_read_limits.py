"""Own-trace reads are bounded in rows, line length and decompressed size (issue 39, items 1 and 2).

Each bound is set low here, so the inputs stay small; past it the read stops with one line naming
the file (and the line), and at the bound the file reads as before.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from pipelines.cli import cli
from pipelines.clusters.tracefiles import read_trace
from pipelines.ingest.common import IngestError
from pipelines.ingest.joblog import read_joblog
from pipelines.ingest.slurm import read_sacct
from pipelines.ingest.text_reader import ReadLimits, Source
from tests.ingest.test_slurm import HEADER, row


def export(rows: int, blank: int = 0) -> bytes:
    return ("\n".join([HEADER, *(row(str(i)) for i in range(1, rows + 1))]) + "\n" + "\n" * blank).encode()


def test_rows_are_bounded() -> None:
    data = export(3, blank=50)  # 54 lines: the shape (a header and empty lines), small
    with pytest.raises(IngestError, match=r"t.sacct: more than 53 lines \(the bound on rows per file; --max-rows raises it\)"):
        read_sacct(data, trace="t", source_file="t.sacct", limits=ReadLimits(rows=53))
    result = read_sacct(data, trace="t", source_file="t.sacct", limits=ReadLimits(rows=54))
    assert result.counts.lines == 54 and result.counts.allocations == 3 and result.counts.accounted


def test_blocks_stop_at_the_bound_without_reading_on(tmp_path: Path) -> None:
    path = tmp_path / "t.sacct"
    path.write_bytes(export(1, blank=10_000))
    source = Source(path, "t.sacct", chunk_bytes=4096, digest=False, limits=ReadLimits(rows=5000))
    seen = 0
    with pytest.raises(IngestError, match="more than 5,000 lines"):
        for block in source.blocks():
            seen += block.lines
    assert seen <= 5000


@pytest.mark.parametrize("chunk_bytes", [256, 1 << 20])
def test_one_long_line_is_bounded_and_named(tmp_path: Path, chunk_bytes: int) -> None:
    """A line longer than a block (read on and on before) and one inside a block both stop at the bound, with its number."""
    path = tmp_path / "t.sacct"
    path.write_bytes(HEADER.encode() + b"\n" + row("1").encode() + b"\n" + b"\0" * 5000 + b"\n" + row("2").encode() + b"\n")
    source = Source(path, "t.sacct", chunk_bytes=chunk_bytes, digest=False, limits=ReadLimits(line_bytes=4096))
    with pytest.raises(IngestError) as caught:
        list(source.blocks())
    assert str(caught.value) == "t.sacct:3: a line longer than 4,096 bytes (the bound on one line; --max-line-bytes raises it)"
    ok = Source(path, "t.sacct", chunk_bytes=chunk_bytes, digest=False, limits=ReadLimits(line_bytes=5000))
    assert sum(b.lines for b in ok.blocks()) == 4


def test_job_log_csv_is_bounded_too() -> None:
    data = b"job_id,submit_time,start_time,end_time,num_gpus,state\n" + b"\n" * 30
    with pytest.raises(IngestError, match="more than 10 lines"):
        read_joblog(data, trace="t", source_file="t.csv", limits=ReadLimits(rows=10))


def test_decompressed_size_is_a_limit(tmp_path: Path) -> None:
    path = tmp_path / "t.sacct.gz"
    path.write_bytes(gzip.compress(export(2, blank=2000)))
    with pytest.raises(IngestError, match=r"decompresses to more than 1,000 bytes \(the cap on decompressed size; --max-bytes"):
        read_trace(path, "t", "sacct", "UTC", source_file=str(path), limits=ReadLimits(decompressed_bytes=1000))
    assert read_trace(path, "t", "sacct", "UTC", source_file=str(path)).counts.allocations == 2


def test_whatif_and_clusters_add_take_the_flags(tmp_path: Path) -> None:
    path = tmp_path / "big.sacct.gz"
    path.write_bytes(gzip.compress(export(2, blank=100)))
    env = {"GPU_ENERGY_HOME": str(tmp_path / "home")}
    os.makedirs(tmp_path / "home")
    for args in (["whatif", str(path), "--max-rows", "50"], ["clusters", "add", "big", str(path), "--max-rows", "50"]):
        result = CliRunner().invoke(cli, args, env=env)
        assert result.exit_code == 2, result.output
        assert result.output == f"Error: {path}: more than 50 lines (the bound on rows per file; --max-rows raises it)\n"
    assert not (tmp_path / "home" / "raw" / "clusters").exists() or not list((tmp_path / "home" / "raw" / "clusters").iterdir())
    result = CliRunner().invoke(cli, ["whatif", str(path), "--max-line-bytes", "10"], env=env)
    assert result.exit_code == 2 and "a line longer than 10 bytes" in result.output


@pytest.mark.parametrize("inner", ["gzip", "xz"])
def test_a_compressed_file_inside_a_compressed_file_is_named_so(tmp_path: Path, inner: str) -> None:
    """Issue 39, item 18: a .gz holding a .gz said "must end in .gz, .xz or .zst" of a file that does."""
    import lzma

    path = tmp_path / "t.sacct.gz"
    data = export(1)
    path.write_bytes(gzip.compress(gzip.compress(data) if inner == "gzip" else lzma.compress(data)))
    with pytest.raises(IngestError) as caught:
        read_trace(path, "t", "sacct", "UTC", source_file=str(path))
    assert str(caught.value) == (f"{path}:1: its content is compressed again ({inner} inside the file's own compression): "
                                 "decompress it once (e.g. gunzip, unxz, unzstd) and give the result")


def test_the_second_pass_keeps_the_bounds_given(tmp_path: Path) -> None:
    """``with_raw_text`` (the text of rows quarantined after their line was split) reads with the reader's own bounds: it
    built its reader with the defaults, so ``--max-rows 20000000`` still stopped at 5,000,000 lines (issue 56)."""
    long_line = "x" * (2 << 20)  # twice the default bound on one line
    path = tmp_path / "t.sacct"
    path.write_text(f"{HEADER}\n{row('1')}\n{long_line}\n{row('2')}\n")
    limits = ReadLimits(line_bytes=4 << 20)
    kept = "x" * 2000 + f"… (cut: the line has {2 << 20:,} bytes)"  # the quarantine keeps 2,000 characters of a line
    rows = pl.DataFrame({"_line": [3, 4], "_raw": [None, None]}, schema={"_line": pl.Int64, "_raw": pl.String})
    assert pl.concat(Source(path, "t.sacct", limits=limits).with_raw_text([rows]))["_raw"].to_list() == [kept, row("2")]
    with pytest.raises(IngestError, match="a line longer than 1,048,576 bytes"):
        list(Source(path, "t.sacct").with_raw_text([rows.head(1)]))
