"""An own-cluster parse's quarantine, streamed: never all its rows in memory, whatever their number (issue 56).

The parse writes its rejected rows (``_line``, ``_raw``, column, reason) to disk as they come, in runs each sorted by
line (the blocks' rows, the later duplicates of a job id, the rows failing the contract: ``own_cluster.Spill.reject``);
the runs' lines are distinct. ``quarantine`` merges the runs into one sequence sorted by line (``merged``), fills the
raw text of the rows rejected after their line was split by one more pass over the file, a block at a time
(``text_reader.Source.with_raw_text``), and makes them quarantine rows in batches of ``BATCH_ROWS``. A quarantine of
one batch or less is held as a frame (an export's few bad rows: nothing left on disk); a longer one stays on disk, one
Parquet file per batch, in a temporary folder (``HeldFolder``) that lives as long as the read's result holds it and is
removed as the parse's spill is (``interrupt.removed_on_abort``; at the interpreter's exit). Either way the result
gives them as a ``LazyFrame`` in line order: the same rows, columns and values as the whole frame the parse made
before (4M delimiter-only lines, every one quarantined, had peaked at 2.42 GB holding them).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import polars as pl

from pipelines.home import interrupt
from pipelines.ingest.common import LINE, empty_quarantine
from pipelines.ingest.text_reader import Source

#: Quarantine rows per batch written (and the most a result holds in memory: more stay on disk).
BATCH_ROWS = 1 << 16


class HeldFolder:
    """A temporary folder (``$TMPDIR``) removed once no object refers to this one any more (a read result holds it), at
    the interpreter's exit, or where a signal or Ctrl-C's watchdog ends the process (``interrupt.removed_on_abort``)."""

    def __init__(self, prefix: str) -> None:
        stack = contextlib.ExitStack()
        folder = Path(tempfile.mkdtemp(prefix=prefix))
        stack.callback(shutil.rmtree, folder, ignore_errors=True)
        self.path = stack.enter_context(interrupt.removed_on_abort(folder))
        self._finalizer = weakref.finalize(self, stack.close)


def merged(runs: Sequence[Iterable[pl.DataFrame]]) -> Iterator[pl.DataFrame]:
    """The rows of ``runs`` (each run's frames sorted by ``_line``, in order; no line in two runs) as frames sorted by
    ``_line``, each run read a frame at a time: every frame yielded holds the rows up to the least of the runs' last
    lines held, so a row is yielded once every row before it has been."""
    frames = [iter(run) for run in runs]
    heads: dict[int, pl.DataFrame] = {}

    def refill(i: int) -> None:
        for frame in frames[i]:
            if frame.height:
                heads[i] = frame
                return
        heads.pop(i, None)

    for i in range(len(frames)):
        refill(i)
    while heads:
        bound = min(frame[LINE][-1] for frame in heads.values())
        out = []
        for i in list(heads):
            cut = int(heads[i][LINE].search_sorted(bound, side="right"))
            out.append(heads[i].slice(0, cut))
            if cut < heads[i].height:
                heads[i] = heads[i].slice(cut)
            else:
                refill(i)
        yield pl.concat(out, how="vertical").sort(LINE) if len(out) > 1 else out[0]


def quarantine(runs: Sequence[Iterable[pl.DataFrame]], source: Source, rows_of: Callable[[pl.DataFrame], pl.DataFrame],
               *, raw_missing: bool) -> tuple[pl.LazyFrame, int, HeldFolder | None]:
    """(the quarantine, lazily, in line order; its rows; the folder holding it, None when held in memory).

    ``runs``: the rejected rows (see the module docstring); ``rows_of`` makes a batch of them quarantine rows;
    ``raw_missing``: whether some row's ``_raw`` is null (its line's text is then read again from ``source``, which has
    been read to the end; else the file is not read again).
    """
    rows: Iterator[pl.DataFrame] = merged(runs)
    if raw_missing:
        rows = source.with_raw_text(rows)
    pending: list[pl.DataFrame] = []
    held = count = 0
    folder: HeldFolder | None = None
    files: list[Path] = []
    for frame in rows:
        pending.append(frame)
        held += frame.height
        count += frame.height
        if held > BATCH_ROWS:
            folder = folder or HeldFolder("gpu-energy-quarantine-")
            files.append(folder.path / f"{len(files):06d}.parquet")
            rows_of(pl.concat(pending, how="vertical")).write_parquet(files[-1], compression="lz4", statistics=False)
            pending, held = [], 0
    if folder is None:
        return (rows_of(pl.concat(pending, how="vertical")) if pending else empty_quarantine()).lazy(), count, None
    if pending:
        files.append(folder.path / f"{len(files):06d}.parquet")
        rows_of(pl.concat(pending, how="vertical")).write_parquet(files[-1], compression="lz4", statistics=False)
    return pl.scan_parquet(files), count, folder
