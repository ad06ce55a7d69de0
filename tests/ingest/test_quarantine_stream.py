"""The quarantine streamed (issue 56): an export's rejected rows go to disk as they come and are merged, given their
line's text and kept on disk in line order (``pipelines.ingest.quarantine_spill``), and the rows are exactly those the
parse made when it held them all: checked here against rows worked out by hand, on a file with more quarantined rows
than a block holds (the blocks and batches made small) and with the default sizes; whatif's counts of them by column,
the kept parse's ``quarantine.parquet`` and the line bound's defaults too."""

from __future__ import annotations

import gc
import signal
import tempfile
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

from pipelines.cli import cli
from pipelines.clusters import kept, whatif
from pipelines.ingest import quarantine_spill, text_reader
from pipelines.ingest.slurm import read_sacct
from tests.ingest.test_slurm import HEADER, row
from tests.support.processes import folder_removed_on_signal

REPEATS = 40
LONG_NAME = 70_000  # bytes of a JobName over the bound on one field (65,536): the line is withheld unparsed


def _repeat(k: int) -> list[bytes]:
    """Twelve lines of repeat ``k`` (job ids 1000k + 0..9): one good row, then one of each kind of bad row."""
    j = [str(1000 * k + i) for i in range(10)]
    long_line = "|".join([j[9], j[9], "j" * LONG_NAME, *["x"] * 11])
    return [line.encode() for line in (
        row(j[0]),                                  # kept
        "1|2|3",                                    # too few fields: rejected as the line is split
        "|" * 13,                                   # delimiter only: rejected once typed (its text read back)
        row(j[2], start="notatime"),                # unparsable Start
        row(j[0]),                                  # a later duplicate of the job id
        row(j[3], end="2024-03-01T09:00:00"),       # End before Start
        row(j[4], tres="gres/gpu=-3"),              # an unparsable GPU count
        row(j[5], nodes="-1"),                      # fails the contract (num_nodes >= 0)
        row(j[6], elapsed="abc"),                   # unparsable Elapsed
        row(j[7], name="n" * 300),                  # a JobName over its 128 characters
    )] + [b"\xff\xfe|x", long_line.encode()]       # not UTF-8; a field over the bound


def _export() -> bytes:
    return (HEADER + "\n").encode() + b"".join(line + b"\n" for k in range(REPEATS) for line in _repeat(k))


def _expected() -> list[tuple[int, str | None, str, str]]:
    """(line, column, reason, raw) of every quarantined row, in line order, worked out from the rules by hand."""
    rows = []
    delimiter_only = ("JobID: '' is not a Slurm job id (J, J_7, J_[1-4], J+1); Submit: missing (a job always has a submit "
                      "time); State: '' is not a Slurm state")
    for k in range(REPEATS):
        first = 2 + 12 * k  # the repeat's first line (the header is line 1)
        text = [line.decode("utf-8", "replace") for line in _repeat(k)]
        long_raw = text[11][:2000] + f"… (cut: the line has {len(text[11]):,} bytes)"
        rows += [
            (first + 1, None, "wrong number of fields: 3 (the header has 14)", text[1]),
            (first + 2, "JobID", delimiter_only, text[2]),
            (first + 3, "Start", "Start: cannot parse 'notatime' as a time (YYYY-MM-DDTHH:MM:SS)", text[3]),
            (first + 4, "JobID", f"JobID: duplicate of line {first} (the first is kept)", text[4]),
            (first + 5, "End", "End: '2024-03-01T09:00:00' is before Start '2024-03-01T10:05:00'", text[5]),
            (first + 6, "AllocTRES", "AllocTRES: cannot parse the GPU count in 'gres/gpu=-3'", text[6]),
            (first + 7, "num_nodes", "num_nodes: must be >= 0 (value -1)", text[7]),
            (first + 8, "Elapsed", "Elapsed: cannot parse 'abc' ([D-]HH:MM:SS)", text[8]),
            (first + 9, "JobName", f"JobName: 300 characters, more than 128: '{'n' * 60}'", text[9]),
            (first + 10, None, "line is not valid UTF-8", "\ufffd\ufffd|x"),
            (first + 11, "JobName", f"JobName: {LONG_NAME:,} bytes, more than 65,536 (the bound on one field; the line is not "
             "parsed)", long_raw),
        ]
    return rows


def _quarantined(frame: pl.DataFrame) -> list[tuple[int, str | None, str, str]]:
    return [(r["line"], r["column"], r["reason"], r["raw"]) for r in frame.iter_rows(named=True)]


def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 50 lines and quarantine batches of 60 rows: 440 quarantined rows over 10 blocks, kept on disk."""
    monkeypatch.setattr(text_reader, "BLOCK_LINES", 50)
    monkeypatch.setattr(quarantine_spill, "BATCH_ROWS", 60)


@pytest.mark.parametrize("small", [True, False], ids=["small blocks, on disk", "default sizes, in memory"])
def test_the_quarantine_rows_and_counts_are_those_worked_out(small: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    if small:
        _small(monkeypatch)
    result = read_sacct(_export(), trace="t", source_file="t.sacct", timezone="UTC")
    expected = _expected()
    got = _quarantined(result.quarantine)
    assert got == expected
    assert result.quarantine["table"].unique().to_list() == ["own_cluster_jobs"]
    assert result.quarantine["source_file"].unique().to_list() == ["t.sacct"]
    assert result.counts.quarantined == 11 * REPEATS and result.counts.allocations == REPEATS and result.counts.accounted
    assert result.table["job_id"].to_list() == [str(1000 * k) for k in range(REPEATS)]
    # whatif's counts by column (or the reason's head): a streamed group-by, largest first, then by name
    by = whatif._counts(result, 0, 0, 0)["quarantined_by"]
    assert list(by.items()) == [("JobID", 2 * REPEATS), ("JobName", 2 * REPEATS), ("AllocTRES", REPEATS), ("Elapsed", REPEATS),
                                ("End", REPEATS), ("Start", REPEATS), ("line is not valid UTF-8", REPEATS),
                                ("num_nodes", REPEATS), ("wrong number of fields", REPEATS)]
    if small:  # more rows than a batch: on disk while the result lives, removed once it is gone
        assert result.held is not None
        folder = result.held.path
        files = sorted(folder.iterdir())
        assert len(files) > 1 and pl.scan_parquet(files).select(pl.len()).collect().item() == 11 * REPEATS
        del result, by
        gc.collect()
        assert not folder.exists()
    else:
        assert result.held is None
    assert not list(tmp_path.iterdir())  # the parse's spill and the quarantine's folder both gone


def test_small_blocks_read_the_same_quarantine_and_table_as_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = read_sacct(_export(), trace="t", source_file="t.sacct", timezone="UTC")
    _small(monkeypatch)
    cut = read_sacct(_export(), trace="t", source_file="t.sacct", timezone="UTC")
    assert isinstance(cut.quarantine_rows, pl.LazyFrame) and cut.held is not None and whole.held is None
    assert_frame_equal(cut.quarantine, whole.quarantine)
    assert_frame_equal(cut.table, whole.table)
    assert cut.counts == whole.counts


def _run(lines: list[int], tag: str) -> pl.DataFrame:
    return pl.DataFrame({"_line": lines, "_raw": [None] * len(lines), "column": [tag] * len(lines), "reason": [f"{tag}{n}" for n in lines]},
                        schema={"_line": pl.Int64, "_raw": pl.String, "column": pl.String, "reason": pl.String})


def test_merged_runs_come_out_in_line_order_a_frame_of_each_at_a_time() -> None:
    runs = [[_run([1, 4], "a"), _run([], "a"), _run([7, 20], "a")], [_run([2, 3], "b"), _run([8, 9, 10], "b")], [], [_run([5], "c")]]
    frames = list(quarantine_spill.merged(runs))
    merged = pl.concat(frames)
    assert merged["_line"].to_list() == [1, 2, 3, 4, 5, 7, 8, 9, 10, 20]
    assert merged["reason"].to_list() == ["a1", "b2", "b3", "a4", "c5", "a7", "b8", "b9", "b10", "a20"]
    assert all(f.height for f in frames) and len(frames) > 1


def test_the_kept_parse_quarantine_file_is_the_fresh_reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _small(monkeypatch)
    path = tmp_path / "hostile.sacct"
    path.write_bytes(_export())
    how = kept.reading(whatif.trace_name_for(path), "sacct", "UTC", None, "|", whatif.REPORT_COLUMNS, None)
    fresh, line = kept.read(path, how, source_file=str(path), root=None)
    assert line is None
    first, line = kept.read(path, how, source_file=str(path), root=tmp_path / "cache")
    assert line is not None and "parse kept" in line
    (folder,) = (tmp_path / "cache" / "whatif").iterdir()
    assert_frame_equal(pl.read_parquet(folder / kept.QUARANTINE), fresh.quarantine)
    again, line = kept.read(path, how, source_file=str(path), root=tmp_path / "cache")
    assert line is not None and "parse reused" in line
    assert_frame_equal(again.quarantine, fresh.quarantine)
    assert whatif._counts(again, 0, 0, 0)["quarantined_by"] == whatif._counts(fresh, 0, 0, 0)["quarantined_by"]


def test_the_line_bounds_defaults_show_in_help() -> None:
    """whatif's line bound is a limit on work (100,000,000 lines); ``clusters add`` keeps the memory guard's 5,000,000."""
    whatif_help = CliRunner().invoke(cli, ["whatif", "--help"], terminal_width=2000)
    add_help = CliRunner().invoke(cli, ["clusters", "add", "--help"], terminal_width=2000)
    assert whatif_help.exit_code == 0 and add_help.exit_code == 0
    whatif_line = next(line for line in whatif_help.output.splitlines() if "--max-rows" in line)
    add_line = next(line for line in add_help.output.splitlines() if "--max-rows" in line)
    assert "[default: 100000000; x>=1]" in whatif_line and "A limit on work" in whatif_line
    assert "[default: 5000000; x>=1]" in add_line and "The memory guard" in add_line


#: Holds a quarantine folder with one file, says where, and waits to be ended by a signal.
_HOLDER = ("import signal, sys, time\nsignal.signal(signal.SIGHUP, signal.SIG_DFL)\n"
           "from pipelines.ingest.quarantine_spill import HeldFolder\n"
           "held = HeldFolder('gpu-energy-quarantine-')\n(held.path / 'x.parquet').write_bytes(b'x')\nprint(flush=True)\n"
           "time.sleep(60)\n")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_that_ends_the_run_removes_the_quarantines_folder(tmp_path: Path, signum: int) -> None:
    """As the parse's spill: a SIGTERM or SIGHUP runs no finalizer, and the folder is removed all the same
    (``interrupt.removed_on_abort``)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    folder_removed_on_signal(_HOLDER, "gpu-energy-quarantine-", signum, temp)
