"""What the own-cluster readers (Slurm ``sacct``, generic CSV) share after the lines: times, states, checks, the finish.

A file is read in bounded blocks of whole lines by the reader engine (``pipelines.ingest.text_reader``), so memory
stays bounded for exports of millions of lines; every block is split into lines and fields with polars string operations
(no Python loop per line); a block's typed rows wait on disk (``Spill``) until ``finish`` checks them a block at a time,
so the whole file's typed rows are never held in memory; the rejected rows go to disk as they are found and come back
as a streamed quarantine (``pipelines.ingest.quarantine_spill``), however many there are. Each line ends in exactly one
of: the header, an allocation row (``own_cluster_jobs``), a skipped step (sacct only) or
``quarantine/own_cluster_jobs_bad_rows``:

    lines = header_lines + allocations + steps_skipped + quarantined

``lines`` is counted from the bytes (``records.line_count``), independently of
the parse; ``finish`` raises ``IngestError`` if the parse lost or invented a line, and the
``own_cluster_traces`` contract (and the asset's blocking check) re-checks the identity.

Rules common to both formats (the docs' page "Your own cluster" lists them all):

* a line that is not valid UTF-8 is quarantined (``line is not valid UTF-8``);
* naive local times are read in the file's IANA time zone and stored in UTC. At the change from
  daylight saving time the hour that repeats is ambiguous: a time in it is read as its earlier
  instant, except that for a Start/End pair whose Elapsed is known the pair of readings that
  gives exactly Elapsed wins, and without Elapsed an End that would otherwise come before its
  Start is read as its later instant. A local time that does not exist (skipped when clocks go
  forward) cannot come from the scheduler's clock: it is quarantined, naming the time zone;
* the state is normalised to its first word, upper case (``CANCELLED by 1234`` -> ``CANCELLED``)
  and the text kept in ``state_raw``;
* an allocation whose end is unknown is ``not_ended`` (pending, running, requeued, suspended);
  else one whose start is unknown ended without starting (``never_started``: cancelled while
  pending, a node failure before the start); else one with no GPU is ``cpu_only``; else ``gpu``.
  The skipped kinds are allocations (they are in the table);
* energy the scheduler measured: ``measured_energy_j`` only when it is > 0; ``energy_status``
  says whether the export had a value (``measured``), a 0 (``zero``: the scheduler collected no
  energy; never a measurement) or none (``not_exported``);
* a later row with the job id of an earlier one is quarantined (the first is kept);
* end before start is quarantined;
* bounds (``pipelines.contracts.limits``, the same as the public tables'): a text field longer than
  its limit (ids 256 characters, names 128, users 64), a GPU or node count above 100,000 (one
  too long for a 64-bit integer included: never read as 0 GPUs), a time before 2000-01-01 or more
  than a day after the read, a job or Elapsed longer than a year, an energy above every node at
  20 kW for a year, are quarantined naming the column and the bound.
"""

from __future__ import annotations

import contextlib
import csv
import io
import shutil
import tempfile
import zoneinfo
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Literal

import numpy as np
import polars as pl

from pipelines.contracts.base import polars_schema, split_valid
from pipelines.contracts.limits import EARLIEST_RECORD_S, FUTURE_SLACK_S, MAX_JOB_S
from pipelines.contracts.owncluster import OwnClusterJobs, OwnClusterTraces
from pipelines.home import interrupt
from pipelines.ingest import quarantine_spill
from pipelines.ingest.common import LINE, IngestError, empty_quarantine, quarantine_frame, raw_texts
from pipelines.ingest.text_reader import RAW, TEXT, Source, empty_rejected
from pipelines.vocabulary.units import S_PER_DAY, US_PER_S

TABLE = "own_cluster_jobs"


#: Rows the contract checks at a time (``finish``): its intermediate columns for that many rows are all it holds beside
#: the table (250,000 at a time held 0.3 GB more at the peak of whatif on 3M allocations).
VALIDATE_ROWS = 62_500
#: Rows per chunk of the table (``finish``, before its quarantined rows are removed): a layout that does not depend on
#: VALIDATE_ROWS, since polars adds a float column up chunk by chunk.
CHUNK_ROWS = 4 * VALIDATE_ROWS
#: Time values that mean "not known" (sacct prints Unknown, or None for a start that never came).
UNKNOWN_TIMES: tuple[str, ...] = ("", "Unknown", "None")
NAIVE_FORMAT = "%Y-%m-%dT%H:%M:%S"
TABLE_SCHEMA = polars_schema(OwnClusterJobs)
#: The state the replay needs: the run reached its end.
COMPLETED = "COMPLETED"
Ambiguous = Literal["earliest", "latest"]


@dataclass(frozen=True)
class TraceCounts:
    """Where every line of a trace file went, and how its allocations split (see the module docstring)."""

    lines: int
    header_lines: int
    allocations: int
    steps_skipped: int
    quarantined: int
    cpu_only: int
    not_ended: int
    never_started: int
    gpu_allocations: int
    completed_gpu_allocations: int
    energy_source: str | None = None  # the export's field of energy accounting (ConsumedEnergyRaw, ...), None: none
    zero_energy_allocations: int = 0  # allocations whose exported energy is 0 (not collected)
    measured_energy_allocations: int = 0  # allocations with a measured energy (> 0)

    @property
    def accounted(self) -> bool:
        """lines = header + allocations + steps + quarantined, and allocations = cpu_only + not_ended + never_started + gpu."""
        return (self.lines == self.header_lines + self.allocations + self.steps_skipped + self.quarantined
                and self.allocations == self.cpu_only + self.not_ended + self.never_started + self.gpu_allocations)


@dataclass
class OwnTraceResult:
    """One trace file read: its allocation rows (``OwnClusterJobs``), quarantine and counts."""

    trace: str
    source_file: str
    format: str
    timezone: str
    sha256: str | None  # None when not asked for (whatif)
    table: pl.DataFrame
    #: The quarantine rows (``quarantine/own_cluster_jobs_bad_rows``) in line order, lazily: a scan of Parquet files on
    #: disk when there are many (``quarantine_spill``), so that none is held; read whole by ``quarantine``.
    quarantine_rows: pl.LazyFrame
    counts: TraceCounts
    #: What keeps ``quarantine_rows``' files while the result lives (``quarantine_spill.HeldFolder``; None: none on disk).
    held: quarantine_spill.HeldFolder | None = field(default=None, repr=False, compare=False)

    @property
    def quarantine(self) -> pl.DataFrame:
        """The quarantine rows read whole (``quarantine_rows``; where only their counts are needed, aggregate those)."""
        return self.quarantine_rows.collect()

    def summary_row(self) -> pl.DataFrame:
        """This file's row of ``own_cluster_traces`` (the result must carry its sha256)."""
        if self.sha256 is None:
            raise ValueError(f"{self.source_file}: read without its sha256")
        row = {"trace": self.trace, "source_file": self.source_file, "format": self.format, "timezone": self.timezone,
               "sha256": self.sha256, **vars(self.counts)}
        return pl.DataFrame([row], schema=polars_schema(OwnClusterTraces))


def check_timezone(timezone: str) -> str:
    """``timezone`` if it names an IANA time zone (``Europe/Berlin``, ``UTC``); else ``ValueError`` saying so."""
    try:
        zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {timezone!r}: give an IANA name such as UTC, Europe/Berlin or America/New_York") from None
    return timezone


# ---------------------------------------------------------------------------------------------
# values


def unknown_time(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().is_in(list(UNKNOWN_TIMES)) | pl.col(column).is_null()


def naive_time(column: str) -> pl.Expr:
    """``YYYY-MM-DDTHH:MM:SS`` text (sacct's form) -> naive datetime; null when it is not of that form."""
    return pl.col(column).str.strip_chars().str.to_datetime(NAIVE_FORMAT, time_unit="us", strict=False, cache=False)


def localize(naive: pl.Expr, timezone: str, ambiguous: Ambiguous) -> pl.Expr:
    """Naive local times in ``timezone`` -> UTC; a time that does not exist there (a DST gap) -> null."""
    if timezone == "UTC":
        return naive.dt.replace_time_zone("UTC")
    local = naive.dt.replace_time_zone(timezone, ambiguous=ambiguous, non_existent="null")
    return local.dt.convert_time_zone("UTC")


def utc_times(frame: pl.DataFrame, columns: dict[str, str], timezone: str, elapsed: str | None) -> pl.DataFrame:
    """Add UTC columns for the naive local ``columns`` (text column -> output name), by the module's DST rule.

    ``columns`` maps the text columns of submit, start and end (in that order) to their outputs;
    ``elapsed`` names a column of seconds (or None). A value that does not exist in ``timezone``
    becomes null with ``_gap_<output>`` set.
    """
    (submit, submit_out), (start, start_out), (end, end_out) = columns.items()
    frame = frame.with_columns(naive_time(c).alias(f"_naive_{c}") for c in columns)
    naive = {c: pl.col(f"_naive_{c}") for c in columns}
    frame = frame.with_columns(
        localize(naive[submit], timezone, "earliest").alias(submit_out),
        *(localize(naive[c], timezone, "earliest").alias(f"_early_{c}") for c in (start, end)),
        *(localize(naive[c], timezone, "latest").alias(f"_late_{c}") for c in (start, end)),
    )
    s_e, s_l, e_e, e_l = (pl.col(f"_{when}_{c}") for c in (start, end) for when in ("early", "late"))
    fallback_end = pl.when(s_e.is_null() | (e_e >= s_e)).then(e_e).otherwise(e_l)
    if elapsed is not None:
        spent = pl.duration(microseconds=(pl.col(elapsed) * US_PER_S).round().cast(pl.Int64))
        pairs = [(s_e, e_e), (s_e, e_l), (s_l, e_e), (s_l, e_l)]
        ambiguous = (s_e != s_l) | (e_e != e_l)  # only these rows need the pairs
        start_expr = pl.when(ambiguous).then(pl.coalesce([*(pl.when((e - s) == spent).then(s) for s, e in pairs), s_e])).otherwise(s_e)
        end_expr = pl.when(ambiguous).then(pl.coalesce([*(pl.when((e - s) == spent).then(e) for s, e in pairs), fallback_end])).otherwise(e_e)
    else:
        start_expr, end_expr = s_e, fallback_end
    gaps = [(naive[c].is_not_null() & pl.col(out if c == submit else f"_early_{c}").is_null()).alias(f"_gap_{out}")
            for c, out in columns.items()]
    helpers = [f"_{kind}_{c}" for c in (start, end) for kind in ("early", "late")] + [f"_naive_{c}" for c in columns]
    return frame.with_columns(start_expr.alias(start_out), end_expr.alias(end_out), *gaps).drop(helpers)


def normalised_state(column: str) -> pl.Expr:
    """First word of the state, upper case (``CANCELLED by 1234`` -> ``CANCELLED``); null when there is none."""
    return pl.col(column).str.strip_chars().str.extract(r"^([A-Za-z][A-Za-z_]*)", 1).str.to_uppercase()


def category() -> pl.Expr:
    """not_ended / never_started / cpu_only / gpu, from start_time, end_time and num_gpus (the contract's rule)."""
    return (pl.when(pl.col("end_time").is_null()).then(pl.lit("not_ended"))
            .when(pl.col("start_time").is_null()).then(pl.lit("never_started"))
            .when(pl.col("num_gpus") == 0).then(pl.lit("cpu_only")).otherwise(pl.lit("gpu")))


def energy_columns(energy_j: pl.Expr, gpu_util_pct: pl.Expr, num_gpus: str = "num_gpus") -> list[pl.Expr]:
    """``measured_energy_j``, ``energy_status`` and ``gpu_util_pct`` from the energy as exported (J; 0: not collected;
    null: none) and the GPU utilisation over the allocation's GPUs (%)."""
    status = pl.when(energy_j.is_null()).then(pl.lit("not_exported")).when(energy_j > 0).then(pl.lit("measured")).otherwise(pl.lit("zero"))
    return [
        pl.when(energy_j > 0).then(energy_j).alias("measured_energy_j"),
        status.alias("energy_status"),
        pl.when(pl.col(num_gpus) > 0).then(gpu_util_pct).alias("gpu_util_pct"),
    ]


@dataclass(frozen=True)
class Check:
    """A value rule applied while parsing: rows where ``failed`` holds go to quarantine with ``reason``."""

    column: str  # the file's column name, for the quarantine's column
    failed: pl.Expr
    reason: pl.Expr


def apply_checks(frame: pl.DataFrame, checks: Sequence[Check]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows passing every check, failing rows as ``_line``, ``_raw`` (null), column, reason: every failed reason, ``; ``-joined).

    The flags are computed on every row, the reasons only on the (few) failing ones.
    """
    flags = [f"_failed_{i}" for i in range(len(checks))]
    flagged = frame.with_columns(c.failed.fill_null(False).alias(f) for c, f in zip(checks, flags, strict=True))
    any_failed = pl.any_horizontal(flags)
    # rechunked (only the failing rows): polars 2.1 panicked ("i < self.len()" in binview) slicing the text of the rows
    # filtered out of a block's many chunks (an export on the Berlin clock read as UTC, 20,000 allocations: 4 rows, 8 chunks).
    bad = flagged.filter(any_failed).rechunk().select(
        LINE,
        pl.lit(None, pl.String).alias(RAW),
        pl.coalesce([pl.when(pl.col(f)).then(pl.lit(c.column)) for c, f in zip(checks, flags, strict=True)]).alias("column"),
        pl.concat_str([pl.when(pl.col(f)).then(c.reason) for c, f in zip(checks, flags, strict=True)], separator="; ",
                      ignore_nulls=True).alias("reason"),
    )
    return flagged.filter(~any_failed).drop(flags), bad


def quoted(column: str) -> pl.Expr:
    """The value of ``column`` for a reason: ``'text'`` (first 60 characters)."""
    return pl.format("'{}'", pl.col(column).fill_null("").str.slice(0, 60))


def time_checks(columns: dict[str, str], timezone: str, *, required: str) -> list[Check]:
    """Checks of the time columns (file column -> output): unparsable text, a time in a DST gap, a missing ``required`` one."""
    checks = []
    for column, out in columns.items():
        unknown = unknown_time(column)
        if column == required:
            checks.append(Check(column, unknown, pl.lit(f"{column}: missing (a job always has a submit time)")))
        checks.append(Check(column, ~unknown & naive_time(column).is_null(),
                            pl.format(f"{column}: cannot parse {{}} as a time (YYYY-MM-DDTHH:MM:SS)", quoted(column))))
        checks.append(Check(column, pl.col(f"_gap_{out}"),
                            pl.format(f"{column}: {{}} does not exist in {timezone} (skipped when clocks went forward); "
                                      "is the time zone right?", quoted(column))))
    return checks


def length_checks(columns: dict[str, tuple[str, int]]) -> list[Check]:
    """Checks that no text is longer than its limit: file column -> (frame column, most characters)."""
    return [Check(name, pl.col(column).str.len_chars() > limit,
                  pl.format(f"{name}: {{}} characters, more than {limit:,}: {{}}", pl.col(column).str.len_chars(), quoted(column)))
            for name, (column, limit) in columns.items()]


def at_most(name: str, value: pl.Expr, limit: float, shown: pl.Expr, what: str) -> Check:
    """A check that ``value`` is at most ``limit``; the reason shows ``shown`` and says ``what`` the bound is."""
    return Check(name, value > limit, pl.format(f"{name}: {{}} is above {what}", shown))


def time_bounds(times: dict[str, tuple[str, str]], *, start: str, end: str, now: datetime | None = None) -> list[Check]:
    """Checks of UTC times: none before 2000-01-01 nor more than a day after ``now`` (the read), and end - start at most a year.

    ``times``: file column -> (its text column, its UTC column); ``start`` and ``end`` name the
    file's start and end columns (the duration is reported on the end's).
    """
    earliest = datetime.fromtimestamp(EARLIEST_RECORD_S, UTC)
    latest = (now or datetime.now(UTC)) + timedelta(seconds=FUTURE_SLACK_S)
    checks = []
    for name, (text, utc) in times.items():
        checks.append(Check(name, pl.col(utc) < earliest,
                            pl.format(f"{name}: {{}} is before {earliest:%Y-%m-%d} UTC (no scheduler recorded it; a reset clock?)",
                                      quoted(text))))
        checks.append(Check(name, pl.col(utc) > latest,
                            pl.format(f"{name}: {{}} is in the future (after {latest:%Y-%m-%d %H:%M} UTC)", quoted(text))))
    length = (pl.col(times[end][1]) - pl.col(times[start][1])).dt.total_seconds()
    checks.append(Check(end, length > MAX_JOB_S,
                        pl.format(f"{end}: the job lasts {{}} days from {start} {{}}, more than a year (366 days)",
                                  (length / S_PER_DAY).round(0).cast(pl.Int64), quoted(times[start][0]))))
    return checks


# ---------------------------------------------------------------------------------------------
# the finish: duplicates, contract, counts


def quarantine_rows(bad: pl.DataFrame, source_file: str) -> pl.DataFrame:
    """``_line``, ``_raw``, column, reason rows -> ``quarantine/own_cluster_jobs_bad_rows`` rows."""
    if bad.height == 0:
        return empty_quarantine()
    return quarantine_frame(TABLE, source_file, bad[LINE], None, bad["reason"], bad[RAW]).with_columns(column=bad["column"])


def _later_duplicates(keys: pl.DataFrame, column: str) -> tuple[pl.Series | None, pl.DataFrame]:
    """(a mask of the rows repeating an earlier row's job id, None when none does; those rows as rejected rows naming the
    first's line). ``keys``: ``job_id`` and ``_line`` of every typed row, in file order."""
    key = pl.col("job_id")
    if keys.select(key.hash().n_unique()).item() == keys.height:  # distinct hashes prove distinct ids (the common case)
        return None, empty_rejected()
    later = keys.select(key.is_first_distinct().not_()).to_series()
    if not later.any():
        return None, empty_rejected()
    repeated = keys.filter(later).select("job_id").unique()
    first = keys.join(repeated, on="job_id", how="semi").group_by("job_id").agg(pl.col(LINE).min().alias("_first"))
    rejected = keys.filter(later).join(first, on="job_id").select(
        LINE, pl.lit(None, pl.String).alias(RAW), pl.lit(column).alias("column"),
        pl.format(f"{column}: duplicate of line {{}} (the first is kept)", "_first").alias("reason"),
    )
    return later, rejected


class Spill:
    """A parse's typed rows held on disk until ``finish`` checks them, rather than in memory: one Parquet file per block
    (``add``), in a temporary folder (``$TMPDIR``) removed on ``close`` (the parse's ``with``). ``finish`` reads one block back
    at a time (``frames``), so the typed rows of the whole file (all the contract's columns, wider than the table whatif
    keeps) never exist in memory at once. Parquet keeps every dtype and value, so the rows read back are those written.
    The rejected rows wait beside them (``reject``), in runs each sorted by line, for ``quarantine_spill.quarantine``."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        folder = Path(tempfile.mkdtemp(prefix="gpu-energy-parse-"))
        self._stack.callback(shutil.rmtree, folder, ignore_errors=True)
        # also where a SIGTERM, a SIGHUP or Ctrl-C's watchdog ends the process before ``close`` (as a spooled stream's file)
        self._folder = self._stack.enter_context(interrupt.removed_on_abort(folder))
        self._files: list[Path] = []
        self._beside: pl.DataFrame | None = None
        self._runs: dict[str, list[Path]] = {}
        self.raw_missing = False  # whether a rejected row kept so far lacks its line's text (``reject``)

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()

    def __len__(self) -> int:
        return len(self._files)

    def add(self, frame: pl.DataFrame) -> None:
        """Keep ``frame`` (a block's typed rows) as the next block."""
        path = self._folder / f"{len(self._files):06d}.parquet"
        frame.write_parquet(path, compression="lz4", statistics=False)
        self._files.append(path)

    def reject(self, run: str, *frames: pl.DataFrame, rows: int = VALIDATE_ROWS) -> None:
        """Keep rejected rows (``_line``, ``_raw``, column, reason), sorted by line, as the next files of ``run`` (one
        Parquet file per ``rows`` rows): a run's rows are added in file order, each after the run's earlier ones."""
        frame = pl.concat([f.select(LINE, RAW, pl.col("column", "reason").cast(pl.String)) for f in frames], how="vertical").sort(LINE)
        self.raw_missing = self.raw_missing or bool(frame[RAW].null_count())
        files = self._runs.setdefault(run, [])
        for at in range(0, frame.height, rows):
            files.append(self._folder / f"{run}-{len(files):06d}.parquet")
            frame.slice(at, rows).write_parquet(files[-1], compression="lz4", statistics=False)

    def rejected(self) -> list[Iterator[pl.DataFrame]]:
        """Each run's rejected rows (``reject``), a file at a time in order, each file removed once read."""
        def run(files: list[Path]) -> Iterator[pl.DataFrame]:
            for path in files:
                frame = pl.read_parquet(path)
                path.unlink()
                yield frame

        return [run(files) for files in self._runs.values()]

    def columns(self, *names: str) -> pl.DataFrame:
        """Only ``names`` of every block's rows, in order."""
        return pl.concat([pl.read_parquet(f, columns=list(names)) for f in self._files], how="vertical")

    def beside(self, columns: pl.DataFrame) -> None:
        """Columns to put beside the rows as ``frames`` reads them back (one row of ``columns`` per row, in order)."""
        self._beside = columns

    def frames(self) -> Iterator[pl.DataFrame]:
        """Each block's rows in order (with the ``beside`` columns), each file removed once read."""
        offset = 0
        for path in self._files:
            frame = pl.read_parquet(path)
            path.unlink()
            if self._beside is not None:
                frame = frame.hstack(self._beside.slice(offset, frame.height))
            offset += frame.height
            yield frame
        self._files = []


def _batches(parts: Iterator[pl.DataFrame], later: pl.Series | None, rows: int) -> Iterator[pl.DataFrame]:
    """The rows of ``parts`` (in order; but where ``later`` holds, if given) in batches of ``rows`` rows (the last shorter),
    each one chunk; ``parts`` yields each frame once, so that none outlives its rows' batch."""
    pending: list[pl.DataFrame] = []
    held = offset = 0
    for frame in parts:
        part = frame if later is None else frame.filter(~later.slice(offset, frame.height))
        offset += frame.height
        del frame
        pending.append(part)
        held += part.height
        while held >= rows:
            batch = pl.concat(pending, how="vertical_relaxed", rechunk=False)
            yield batch.slice(0, rows).rechunk()
            rest = batch.slice(rows).rechunk()
            pending, held = [rest], rest.height
            del batch
    if held:
        yield pl.concat(pending, how="vertical_relaxed").rechunk()


def finish(
    *,
    trace: str,
    source: Source,
    fmt: str,
    timezone: str,
    parts: Spill,
    header_lines: int,
    steps_skipped: int,
    energy_source: str | None = None,
    prepare: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
    columns: Sequence[str] | None = None,
) -> OwnTraceResult:
    """Typed allocation rows (the contract's columns but trace/category/line, plus ``_line``; after ``prepare``, applied to
    batches of rows, if given), block by block -> the result.

    ``parts`` (the blocks' typed rows, in file order, and their rejected rows, on disk) is read back a block at a time
    as they are checked: each block is freed once its rows are, so the typed rows and the table never both exist whole.
    ``source`` has been read to the end (its line count and sha256 are known). Moves later duplicates of a job id and
    rows failing the contract to the quarantine (on disk too), adds ``trace``, ``line`` and ``category``, and makes the
    quarantine streamed (``quarantine_spill.quarantine``: the raw text of rows rejected after their line was split read
    back, in line order, never all held); the table is in line order. ``columns``: the table's columns (default: all
    the contract's); the counts are of every row whichever are kept. Raises ``IngestError`` if the lines do not add up
    (a parser bug, never the file's fault).
    """
    keys = parts.columns("job_id", LINE) if len(parts) else None
    later, duplicates = _later_duplicates(keys, "JobID" if fmt == "sacct" else "job_id") if keys is not None else (None, empty_rejected())
    del keys
    parts.reject("duplicates", duplicates)
    del duplicates
    kept = list(TABLE_SCHEMA if columns is None else columns)
    # The contract's rules are checked a batch of rows at a time (the keys are distinct by now), so that their
    # intermediate columns never exist for the whole table at once.
    goods, tallies, pending = [], [], []
    for part in _batches(parts.frames(), later, VALIDATE_ROWS):
        rows = (prepare(part) if prepare is not None else part).with_columns(
            pl.lit(trace).alias("trace"), category().alias("category"), pl.col(LINE).alias("line"))
        del part
        good, failed = split_valid(rows.select(*TABLE_SCHEMA, LINE).cast(TABLE_SCHEMA), OwnClusterJobs)
        del rows
        tallies.append(_tally(good))
        pending.append(good.select(*kept, LINE))
        parts.reject("contract", failed.select(LINE, pl.lit(None, pl.String).alias(RAW), "column", "reason"))
        if len(pending) == CHUNK_ROWS // VALIDATE_ROWS:
            goods.append(pl.concat(pending, how="vertical").rechunk())
            pending = []
    if pending:
        goods.append(pl.concat(pending, how="vertical").rechunk())
    good = (pl.concat(goods, how="vertical", rechunk=False) if goods
            else pl.DataFrame(schema={**{c: TABLE_SCHEMA[c] for c in kept}, LINE: pl.Int64()}))
    table = (good if good[LINE].is_sorted() else good.sort(LINE)).select(*kept)  # read in file order: sorted already
    del good, goods
    quarantine, quarantined, held = quarantine_spill.quarantine(
        parts.rejected(), source, lambda bad: quarantine_rows(bad, source.name), raw_missing=parts.raw_missing)
    counts = _counts(np.sum(tallies, axis=0) if tallies else np.zeros(len(_TALLIES), dtype=np.int64), table.height, source.lines,
                     header_lines, steps_skipped, quarantined, energy_source)
    if not counts.accounted:
        raise IngestError(source.name, f"internal error: lines do not add up ({counts})")
    return OwnTraceResult(trace, source.name, fmt, timezone, source.sha256, table, quarantine, counts, held)


def replayable() -> pl.Expr:
    """Whether an ``own_cluster_jobs`` row is one the replay uses: a GPU allocation that COMPLETED, with end > start."""
    return (pl.col("category") == "gpu") & (pl.col("state") == COMPLETED) & (pl.col("end_time") > pl.col("start_time"))


#: What ``_tally`` counts of a batch of table rows, in order.
_TALLIES = ("cpu_only", "not_ended", "never_started", "gpu", "completed", "zero", "measured")


def _tally(table: pl.DataFrame) -> np.ndarray:
    """Rows of ``table`` (the contract's columns) in each of ``_TALLIES``: the categories, the replayable COMPLETED GPU
    allocations, and the energy statuses zero and measured."""
    row = table.select(
        *((pl.col("category") == c).sum().alias(c) for c in _TALLIES[:4]),
        replayable().sum().alias("completed"),
        *((pl.col("energy_status") == s).sum().alias(s) for s in _TALLIES[5:]),
    ).row(0)
    return np.array([int(v or 0) for v in row], dtype=np.int64)


def _counts(tally: np.ndarray, allocations: int, lines: int, header_lines: int, steps: int, quarantined: int,
            energy_source: str | None) -> TraceCounts:
    cpu_only, not_ended, never_started, gpu, completed, zero, measured = (int(v) for v in tally)
    return TraceCounts(lines, header_lines, allocations, steps, quarantined, cpu_only, not_ended, never_started, gpu, completed,
                       energy_source, zero, measured)


def rejected_lines(lines: pl.DataFrame, mask: pl.Expr, column: str | None, reason: pl.Expr) -> pl.DataFrame:
    """Whole lines (``_line``, ``_text``) where ``mask`` holds, as rejected rows with ``reason``."""
    rejected = lines.filter(mask).select(LINE, pl.col(TEXT).alias(RAW), pl.lit(column, pl.String).alias("column"), reason.alias("reason"))
    return rejected.with_columns(raw_texts(rejected[RAW]))


def csv_rows(text: pl.Series) -> list[list[str] | str]:
    """Fields of CSV lines with quotes, by the csv module (only lines that contain a quote come here); for a line the
    module cannot split (a bare ``\r`` in an unquoted field), its error instead."""

    def split(line: str) -> list[str] | str:
        try:
            return next(csv.reader(io.StringIO(line, newline="")), [])
        except csv.Error as exc:
            return str(exc)

    return [split(line) for line in text.to_list()]
