"""The parse's typed rows wait on disk (``own_cluster.Spill``, issue 56): read back as written, with the steps' columns
beside them, and the temporary folder gone after the parse (sacct or job log), whether it succeeded or failed."""

from __future__ import annotations

import signal
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.ingest import slurm
from pipelines.ingest.common import IngestError
from pipelines.ingest.joblog import read_joblog
from pipelines.ingest.own_cluster import Spill
from pipelines.ingest.slurm import read_sacct
from tests.support.processes import folder_removed_on_signal
from tests.support.sacct_export import write_export


def _block(start: int, rows: int) -> pl.DataFrame:
    return pl.DataFrame({
        "_line": list(range(start, start + rows)),
        "job_id": [f"{i}_[1-3]" if i % 3 else None for i in range(start, start + rows)],
        "start_time": [datetime(2026, 3, 29, 1, i % 60, tzinfo=UTC) for i in range(rows)],
        "elapsed_s": [i / 7 for i in range(rows)],
        "num_gpus": pl.Series([i % 9 for i in range(rows)], dtype=pl.Int32),
        "_alloc_energy": [i % 2 == 0 for i in range(rows)],
    })


def test_the_blocks_come_back_as_written_in_order_with_the_columns_beside(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    blocks = [_block(0, 5), _block(5, 0), _block(5, 11)]
    beside = pl.DataFrame({"_step_energy": [float(i) * 1.5 for i in range(16)], "_step_util": [None, *range(15)]})
    with Spill() as spill:
        for block in blocks:
            spill.add(block)
        assert len(spill) == 3
        (folder,) = tmp_path.iterdir()
        assert len(list(folder.iterdir())) == 3
        assert spill.columns("job_id", "_line")["_line"].to_list() == list(range(16))
        spill.beside(beside)
        back = list(spill.frames())
        assert not list(folder.iterdir())  # each file removed once read
    assert not folder.exists()
    assert [b.height for b in back] == [5, 0, 11]
    assert_frame_equal(pl.concat(back), pl.concat(blocks).hstack(beside))
    assert back[0].schema == blocks[0].hstack(beside.head(5)).schema  # the time zone, Int32 and the nulls kept


def test_the_parse_leaves_no_spill_behind_when_it_succeeds_or_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    export = tmp_path / "lab.sacct"
    truth = write_export(export, 300, seed=3)
    result = read_sacct(export, trace="lab", source_file=str(export), digest=False)
    assert result.counts.allocations == truth.allocations and result.counts.accounted
    assert not list(scratch.iterdir())
    seen: list[int] = []

    def fails(**kwargs: object) -> None:
        seen.append(len(list(scratch.iterdir())))  # the spill exists while the finish runs
        raise IngestError(str(export), "the finish failed")

    monkeypatch.setattr(slurm, "finish", fails)
    with pytest.raises(IngestError, match="the finish failed"):
        read_sacct(export, trace="lab", source_file=str(export), digest=False)
    assert seen == [1] and not list(scratch.iterdir())


def test_a_job_log_is_spilled_and_cleaned_up_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    text = "job_id,submit_time,start_time,end_time,num_gpus,state,user,name,gpu_type\n" + "".join(
        f"{i},2026-01-01T00:00:00Z,2026-01-01T01:00:00Z,2026-01-01T0{2 + i % 5}:00:00Z,{1 + i % 4},COMPLETED,u{i % 3},n{i % 2},a100\n"
        for i in range(40))
    added: list[int] = []
    real = Spill.add

    def add(self: Spill, frame: pl.DataFrame) -> None:
        added.append(frame.height)
        real(self, frame)

    monkeypatch.setattr(Spill, "add", add)
    result = read_joblog(text.encode(), trace="k8s", source_file="k8s.csv", timezone="UTC")
    assert sum(added) == 40  # every typed row went through the spill
    assert result.table.height == 40 and result.table["num_gpus"].sum() == sum(1 + i % 4 for i in range(40))
    assert result.table["job_id"].to_list() == [str(i) for i in range(40)]
    assert not list(tmp_path.iterdir())


#: Holds a spill with one block, says where, and waits to be ended by a signal.
_HOLDER = ("import signal, sys, time\nsignal.signal(signal.SIGHUP, signal.SIG_DFL)\nimport polars as pl\n"
           "from pipelines.ingest.own_cluster import Spill\n"
           "with Spill() as spill:\n    spill.add(pl.DataFrame({'a': [1]}))\n    print(flush=True)\n    time.sleep(60)\n")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_that_ends_the_parse_removes_its_spill(tmp_path: Path, signum: int) -> None:
    """A SIGTERM or SIGHUP runs no ``with``'s exit: the spill is removed by the same path as a spooled stream's file
    (``interrupt.removed_on_abort``). Without it, the folder stayed in $TMPDIR after each such end."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    folder_removed_on_signal(_HOLDER, "gpu-energy-parse-", signum, temp)
