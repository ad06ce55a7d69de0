"""whatif's parse, kept: an export read once into Parquet under the data home, partitioned by recurring group, reused.

A second ``whatif`` of the same file with other knobs (eta, beta, samples, carbon, price, meter: anything but how the
file is read) loads the kept parse instead of reading the export again. The entry (``pipelines.home.cache``) is keyed
by the sha256 of the file as given (compressed or not) and every reading option (``Reading``), so another file, a
changed file or another reading is another entry. It holds:

* ``rows.parquet``: the table's rows (the columns read, ``line`` among them) in file order, each with its
  ``partition``: ``hash(recurring group) mod partitions`` (the group of ``mapping.own_group``), so a group never
  spans two partitions (``partition`` reads one: a filter of the file, streamed); the draws replay a row's groups by
  these partitions (``mapping.group_partition``, ``replayed.replay_partitions``);
* ``quarantine.parquet``: the quarantined rows, as the read made them (written and loaded streamed);
* ``meta.json``: the reading, the counts (``TraceCounts``), the partitions and when the file was parsed (UTC).

Loaded, the rows are the table the read made, row for row (a test checks it), so the report is the same from a kept
parse as from a fresh read. The rows are kept in file order rather than in one file per partition: putting
partitions' rows back in file order took a sort (1M allocations, a 0.11 GB table: 0.58 GB peak RSS, against 0.27 GB
for reading the rows alone), and a second run then peaked above the fresh read's. Invariants: the partitions' rows add
up to ``counts.allocations``; no group is in two partitions.

A kept parse is of the day it was read: the read's bound on times in the future (a day after the read) was applied then.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.clusters import tracefiles
from pipelines.clusters.mapping import group_partition, own_group
from pipelines.home import cache
from pipelines.ingest.common import IngestError
from pipelines.ingest.own_cluster import OwnTraceResult, TraceCounts
from pipelines.ingest.text_reader import Progress, ReadLimits
from pipelines.sources.fetch import sha256_of

KIND = "whatif"
#: Bumped when the layout or the parse's output changes: older entries are then never read (nor their key made).
VERSION = 2
#: Allocations per partition (at least one partition).
PARTITION_ALLOCATIONS = 250_000
ROWS = "rows.parquet"
QUARANTINE = "quarantine.parquet"
LINE = "line"
#: Each kept row's partition (``partition_of``).
PARTITION = "partition"
#: whatif's bounds (its ``--max-rows``' default, and ``reading``'s and ``read``'s where none are given): 100,000,000
#: lines, a limit on work, not the memory guard. The parse holds a block of lines at a time, its typed rows and its
#: quarantine on disk (``own_cluster.Spill``, ``quarantine_spill``), and the table it keeps is whatif's few columns:
#: 12M lines (3.75M allocations) ran within 1.5 GB, and so did 12M delimiter-only lines, every one quarantined
#: (docs/benchmarks.md). ``clusters add`` and a materialization keep ``ReadLimits``' lower default (they hold more).
WHATIF_LIMITS = ReadLimits(rows=100_000_000)


@dataclass(frozen=True)
class Reading:
    """How an export is read: everything but its bytes that decides the read's result."""

    trace: str
    format: tracefiles.Format
    timezone: str
    fields: tuple[str, ...] | None
    delimiter: str
    columns: tuple[str, ...]
    rows: int
    line_bytes: int
    decompressed_bytes: int

    @property
    def limits(self) -> ReadLimits:
        """The read's bounds, as ``reading`` was given them (whatif sets no other: ``field_bytes`` and ``flags`` its defaults)."""
        return ReadLimits(rows=self.rows, line_bytes=self.line_bytes, decompressed_bytes=self.decompressed_bytes)

    def key(self, sha256: str) -> str:
        """The entry's name: a digest of the file's sha256, this reading, the layout's version and polars' (its hash and
        Parquet writer make the partitions)."""
        what = {"sha256": sha256, "reading": asdict(self), "version": VERSION, "polars": pl.__version__}
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def reading(trace: str, fmt: tracefiles.Format, timezone: str, fields: tuple[str, ...] | list[str] | None, delimiter: str,
            columns: tuple[str, ...], limits: ReadLimits | None) -> Reading:
    limits = limits or WHATIF_LIMITS
    with_line = columns if LINE in columns else (*columns, LINE)
    return Reading(trace, fmt, timezone, None if fields is None else tuple(fields), delimiter, with_line, limits.rows,
                   limits.line_bytes, limits.decompressed_bytes)


def partitions_for(allocations: int) -> int:
    """How many partitions an export of ``allocations`` rows is kept in (``PARTITION_ALLOCATIONS`` each, at least one)."""
    return max(1, math.ceil(allocations / PARTITION_ALLOCATIONS))


def partition_of(table: pl.DataFrame, partitions: int) -> pl.Expr:
    """Each row's partition: its recurring group's (``mapping.own_group``, ``mapping.group_partition``)."""
    return group_partition(own_group(table), partitions)


def _partitions(count: int) -> str:
    return f"{count:,} partition{'s' if count != 1 else ''}"


def write(folder: Path, result: OwnTraceResult, partitions: int) -> None:
    """``result``'s table, each row with its ``partition`` (``partition_of``), and its quarantine into ``folder``."""
    result.table.with_columns(partition_of(result.table, partitions).cast(pl.UInt32).alias(PARTITION)).write_parquet(folder / ROWS)
    result.quarantine_rows.sink_parquet(folder / QUARANTINE, engine="streaming")  # streamed: never held whole


def partition(entry: cache.Entry, index: int) -> pl.DataFrame:
    """The rows of partition ``index`` of an entry (every recurring group there whole), in file order."""
    return pl.scan_parquet(entry.path / ROWS).filter(pl.col(PARTITION) == index).drop(PARTITION).collect(engine="streaming")


def load(entry: cache.Entry, source_file: str, sha256: str) -> OwnTraceResult:
    """The read result an entry keeps, named by ``source_file`` (the file as given this time)."""
    meta = entry.meta
    table = pl.read_parquet(entry.path / ROWS, columns=list(meta["reading"]["columns"]))
    pl.read_parquet_schema(entry.path / QUARANTINE)  # a missing or cut file is found here, as the rows' would be
    # lazily, as a fresh read's: whatif only counts its rows by column and reason (a streamed group-by)
    quarantine = pl.scan_parquet(entry.path / QUARANTINE).with_columns(pl.lit(source_file, pl.String).alias("source_file"))
    counts = TraceCounts(**meta["counts"])
    return OwnTraceResult(meta["reading"]["trace"], source_file, meta["reading"]["format"], meta["reading"]["timezone"], sha256,
                          table, quarantine, counts)


def read(path: Path, how: Reading, *, source_file: str, progress: Progress | None = None,
         root: Path | None, partitions: int | None = None, digest: bool = False) -> tuple[OwnTraceResult, str | None]:
    """(the export read, or its kept parse loaded; one line saying which, None when nothing is kept).

    ``root``: the data home's ``cache/`` (None: read afresh and keep nothing, ``--no-cache``, as for a path that is not a
    regular file; ``digest``: with the file's sha256 then, which a kept parse always has). ``partitions``: how many
    (default ``partitions_for`` the allocations). A kept parse whose lines exceed ``limits.rows`` is refused as the read
    would be (``how.limits``). ``IngestError`` for a file that changed between its hash and its read.
    """
    limits = how.limits

    def fresh(digest: bool) -> OwnTraceResult:
        return tracefiles.read_trace(path, how.trace, how.format, how.timezone, how.fields, source_file=source_file, digest=digest,
                                     delimiter=how.delimiter, columns=how.columns, limits=limits, progress=progress)

    if root is None or not path.is_file():  # a FIFO, device or stdin: read once as it streams (its bounds), never kept
        return fresh(digest), None
    try:
        sha256 = sha256_of(path)
    except OSError as exc:
        raise IngestError(source_file, f"unreadable file: {exc}") from exc
    folder = root / KIND / how.key(sha256)
    entry = cache.load(folder)
    damaged = ""
    if entry is not None:
        try:
            result = load(entry, source_file, sha256)
        except (OSError, KeyError, TypeError, ValueError, pl.exceptions.PolarsError) as exc:
            # cut short or edited on disk: dropped, and the file read afresh (the entry can always be made again)
            shutil.rmtree(folder, ignore_errors=True)
            damaged = f" (the parse kept there was unreadable, {type(exc).__name__}: dropped)"
        else:
            cache.touch(entry)
            limits.check_rows(source_file, result.counts.lines)
            return result, (f"parse reused: kept {entry.meta['parsed_at']} in {folder} ({result.counts.allocations:,} allocations, "
                            f"{_partitions(entry.meta['partitions'])}; --no-cache reads the file afresh)")
    result = fresh(digest=True)
    if result.sha256 != sha256:
        raise IngestError(source_file, "the file changed while it was read: read it again once it is complete")
    count = partitions or partitions_for(result.table.height)
    meta: dict[str, Any] = {"reading": asdict(how), "sha256": sha256, "source_file": source_file, "partitions": count,
                            "counts": asdict(result.counts), "parsed_at": f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}", "version": VERSION}
    with cache.publish(folder, meta) as tmp:
        write(tmp, result, count)
    cache.bound(root, cache.max_bytes(), keep=folder)
    return result, f"parse kept in {folder} ({result.table.height:,} allocations, {_partitions(count)}) for the next run{damaged}"
