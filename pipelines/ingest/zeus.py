"""Zeus NSDI '23 train and power traces, and power profiles measured on our own GPUs (``raw/measured``)."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import polars as pl

from pipelines.contracts.sources import ZeusPowerProfiles, ZeusTrainRuns
from pipelines.ingest.common import (
    IngestError,
    IngestResult,
    TableSpec,
    empty_quarantine,
    empty_table,
    ingest_bytes,
    ingest_files,
    quarantine_frame,
)
from pipelines.ingest.compressed import read_at_most
from pipelines.ingest.text_reader import read_bytes, refused_file
from pipelines.sources.fetch import sha256_of
from pipelines.vocabulary import GPU_BY_NAME, PUBLISHED_GPUS

#: The power limits (W) each GPU of the published power trace was profiled at.
PUBLISHED_POWER_LIMITS_W: dict[str, frozenset[int]] = {name: GPU_BY_NAME[name].power_limits_w for name in PUBLISHED_GPUS}
#: A40's sentiment140 profile was measured at fewer limits.
A40_SENTIMENT140_LIMITS_W = frozenset(range(100, 301, 50))
ZEUS_SOURCE = "zeus-nsdi23"

TRAIN_SPEC = TableSpec(
    "zeus_train_runs",
    ZeusTrainRuns,
    {c: c for c in ("dataset", "network", "batch_size", "optimizer", "learning_rate", "run", "target_metric", "target_epoch")},
    null_tokens=frozenset({"nan"}),  # a run that never reached the target has target_epoch "nan"
)
_POWER_COLUMNS = ("dataset", "network", "batch_size", "optimizer", "power_limit", "time_per_epoch", "average_power")
POWER_SPEC = TableSpec("zeus_power_profiles", ZeusPowerProfiles, {c: c for c in _POWER_COLUMNS})


def read_train(path: Path) -> IngestResult:
    """summary_train.csv -> ``zeus_train_runs``."""
    return ingest_files([(path, path.name)], TRAIN_SPEC)


def power_file(folder: Path, gpu: str) -> Path:
    return folder / f"summary_power_{gpu}.csv"


def read_power(folder: Path, gpus: tuple[str, ...] = PUBLISHED_GPUS) -> IngestResult:
    """summary_power_{gpu}.csv for each GPU -> ``zeus_power_profiles`` (with ``gpu`` and ``source``)."""
    files = [(power_file(folder, gpu), f"summary_power_{gpu}.csv") for gpu in gpus]
    gpu_of = {power_file(folder, gpu): gpu for gpu in gpus}
    return ingest_files(files, POWER_SPEC, extra_columns=lambda p: {"gpu": gpu_of[p], "source": ZEUS_SOURCE})


# ---------------------------------------------------------------------------------------------
# measured profiles (raw/measured/*.csv, written by ``python -m pipelines measure profile``)

MEASURED_SOURCE_PREFIX = "measured:"
#: A measured file with a ``gpu`` column: one GPU name per row, unique per (gpu, workload, bs, limit).
MEASURED_SPEC = TableSpec("zeus_power_profiles", ZeusPowerProfiles, {"gpu": "gpu", **{c: c for c in _POWER_COLUMNS}})
#: The harness's ``method`` column value for a row timed without an energy measurement.
TIME_ONLY_METHOD = "none"
#: The first three columns of a ZeusMonitor log (``gpu<i>_energy`` columns follow): such a CSV of raw/measured is Zeus's
#: profile of a power-limit optimizer, read by ``pipelines.ingest.power_limit_profiles``, not a measured profile.
ZEUS_LOG_COLUMNS = ("start_time", "window_name", "elapsed_time")
#: The files of raw/measured that hold profiles: measured CSVs, ZeusMonitor logs (CSV) and Zeus's saved profiles (JSON).
MEASURED_PATTERNS = ("*.csv", "*.json")
#: Most bytes of one profile file (a measured CSV, a ZeusMonitor log, a Zeus JSON): a profile is some tens of lines; a
#: bigger file is refused by its size in one line before it is read.
MAX_PROFILE_BYTES = 16 << 20
#: Bytes of a profile's first line read at most to tell its format (``is_zeus_log``).
_HEAD_BYTES = 64 << 10


def is_zeus_log(path: Path) -> bool:
    """Whether a CSV's header (its first line) starts like a ZeusMonitor log's (False if it cannot be read: its reader says why)."""
    if not path.is_file():  # a FIFO or a device: not read twice (its reader says what it is)
        return False
    try:
        first = read_at_most(path, _HEAD_BYTES).split(b"\n", 1)[0].decode("utf-8", "replace").strip().lstrip("\ufeff")
    except IngestError:
        return False
    header = next(csv.reader([first]), [])
    return tuple(h.strip() for h in header[: len(ZEUS_LOG_COLUMNS)]) == ZEUS_LOG_COLUMNS


def measured_files(folder: Path) -> list[Path]:
    """The profile files of ``folder`` (``raw/measured``), in name order: ``*.csv`` and ``*.json``."""
    if not folder.is_dir():
        return []
    return sorted((p for pattern in MEASURED_PATTERNS for p in folder.glob(pattern) if p.is_file()), key=lambda p: p.name)


def measured_csvs(folder: Path) -> list[Path]:
    """The measured profiles of ``folder`` (``raw/measured``), in name order: its ``*.csv`` but ZeusMonitor logs."""
    return [p for p in measured_files(folder) if p.suffix == ".csv" and not is_zeus_log(p)]


def _time_only_lines(data: bytes) -> dict[int, str]:
    """Line number -> reason of the rows the harness marked ``method = none`` (timed, no energy measured)."""
    lines = [line.rstrip("\r") for line in data.decode("utf-8", "replace").split("\n")]
    header = _csv_fields(lines[0])
    if "method" not in header:
        return {}
    method_at = header.index("method")
    note_at = header.index("note") if "note" in header else None
    found: dict[int, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        fields = _csv_fields(line)
        if len(fields) > method_at and fields[method_at].strip() == TIME_ONLY_METHOD:
            note = fields[note_at].strip() if note_at is not None and len(fields) > note_at else ""
            found[number] = note or "no energy measurement"
    return found


def _csv_fields(line: str) -> list[str]:
    """One physical line's CSV fields; none for a line the csv module cannot split (a field over its 128 kB limit, a NUL):
    such a line is no time-only row, and the ingest quarantines it with its reason (the bound on one field)."""
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return []


def read_measured_file(path: Path, display: str, seen: dict[tuple, str] | None = None) -> tuple[IngestResult, dict[int, str]]:
    """One measured profile -> (its power rows and quarantine, the time-only rows left out: line -> reason).

    ``gpu`` comes from the file's ``gpu`` column, else from its name (``h100.csv`` -> ``h100``);
    ``source`` is ``measured:<file name>``. Rows the harness marked ``method = none`` carry no
    power and cannot serve the simulator: they are neither table nor quarantine rows (they are
    not malformed) and are returned separately so the caller can report them. Every other line
    goes through the ingest path (typed, validated, quarantined with file, line and reason);
    quarantine line numbers are those of the file. ``seen`` (keys kept by earlier files) turns on
    the cross-file checks of ``read_measured``.

    A file that cannot be read at all (unreadable, over a bound, a missing column) is one quarantine row
    (``text_reader.refused_file``): one bad file of ``raw/measured`` leaves the others usable, and a caller that needs
    every row (``--profiles``) raises that row's one line.
    """
    try:
        return _read_measured_file(path, display, seen)
    except IngestError as exc:
        return refused_file(path, display, POWER_SPEC, exc), {}


def _read_measured_file(path: Path, display: str, seen: dict[tuple, str] | None) -> tuple[IngestResult, dict[int, str]]:
    data = read_bytes(path, display, max_bytes=MAX_PROFILE_BYTES, what="a profile file")
    time_only = _time_only_lines(data)
    lines = data.split(b"\n")
    kept = [n for n in range(1, len(lines) + 1) if n not in time_only]  # file line numbers of the lines passed on
    has_gpu = "gpu" in _csv_fields(lines[0].decode("utf-8", "replace"))
    spec = MEASURED_SPEC if has_gpu else POWER_SPEC
    extras = {"source": f"{MEASURED_SOURCE_PREFIX}{path.name}", **({} if has_gpu else {"gpu": path.stem})}
    if time_only and not any(lines[n - 1].strip() for n in kept[1:]):
        return IngestResult(empty_table(spec), empty_quarantine(), lines_in=0, files=[display]), time_only
    result = ingest_bytes(b"\n".join(lines[n - 1] for n in kept), spec, source_file=display, extras=extras)
    if time_only and result.quarantine.height:
        original = pl.Series([kept[n - 1] for n in result.quarantine["line"]], dtype=pl.Int64)
        result.quarantine = result.quarantine.with_columns(line=original)
    if seen is not None:
        result = _measured_conflicts(result, lines, time_only, seen)
    return result, time_only


def _table_lines(lines: list[bytes], time_only: dict[int, str], result: IngestResult) -> list[int]:
    """File line numbers of ``result.table``'s rows: in order, the non-blank data lines neither time-only nor quarantined."""
    skipped = set(time_only) | set(result.quarantine["line"].to_list())
    numbers = [n for n in range(2, len(lines) + 1) if lines[n - 1].strip() and n not in skipped]
    if len(numbers) != result.table.height:
        raise IngestError(result.files[0], f"cannot map {result.table.height} table rows to file lines ({len(numbers)} candidates)")
    return numbers


def _measured_conflicts(result: IngestResult, lines: list[bytes], time_only: dict[int, str], seen: dict[tuple, str]) -> IngestResult:
    """Quarantine rows named like a published GPU, and rows whose key an earlier measured file already has.

    ``seen`` maps each (gpu, dataset, network, batch_size, optimizer, power_limit) kept so far to
    ``file:line``; it is updated with this file's kept rows.
    """
    table = result.table
    if table.height == 0:
        return result
    display = result.files[0]
    numbers = _table_lines(lines, time_only, result)
    key = ["gpu", *POWER_SPEC.unique_key]
    reasons: list[str | None] = []
    for row, line in zip(table.select(key).iter_rows(), numbers, strict=True):
        if row[0] in PUBLISHED_GPUS:
            reasons.append(f"gpu {row[0]!r} is a GPU of the published trace: give the measured GPU another name")
        elif row in seen:
            reasons.append(f"duplicate {', '.join(key)} of {seen[row]} (first file kept)")
        else:
            seen[row] = f"{display}:{line}"
            reasons.append(None)
    bad = [i for i, r in enumerate(reasons) if r is not None]
    if not bad:
        return result
    moved = quarantine_frame(
        POWER_SPEC.table,
        display,
        [numbers[i] for i in bad],
        "gpu",
        pl.Series([reasons[i] for i in bad], dtype=pl.String),
        pl.Series([lines[numbers[i] - 1].rstrip(b"\r").decode("utf-8", "replace") for i in bad], dtype=pl.String),
    )
    keep = pl.Series([r is None for r in reasons])
    return IngestResult(
        table.filter(keep),
        pl.concat([result.quarantine, moved], how="vertical").sort("line"),
        lines_in=result.lines_in,
        files=result.files,
    )


def read_measured(folder: Path) -> IngestResult:
    """Every ``*.csv`` of ``folder`` (``raw/measured``) but ZeusMonitor logs, sorted by name -> ``zeus_power_profiles`` rows.

    Besides each file's own validation: a measured GPU may not take a published GPU's name, and a
    (gpu, workload, batch size, power limit) measured in two files is kept from the first file
    only (the simulator needs one row per configuration). Time-only rows are left out and named
    in ``files`` (the asset's ``source_files`` metadata) with their count and reason.
    """
    if not folder.is_dir():
        return IngestResult(empty_table(POWER_SPEC), empty_quarantine())
    results: list[IngestResult] = []
    seen: dict[tuple, str] = {}
    for path in measured_csvs(folder):
        display = f"{folder.name}/{path.name}"
        result, time_only = read_measured_file(path, display, seen)
        if time_only:
            reasons = sorted(set(time_only.values()))
            result.files = [f"{display} ({len(time_only)} time-only rows not ingested: {'; '.join(reasons)})"]
        results.append(result)
    return IngestResult.concat(results, POWER_SPEC)


def measured_fingerprint(folder: Path) -> str:
    """sha256 over the name and the sha256 of every profile file of ``folder`` (``raw/measured``: ``measured_files``).

    Equal fingerprints mean the same measured profiles: ``zeus_power_profiles`` records the one it
    read, and the sensor compares it with the folder's (and re-ingests ``power_limit_profiles`` too). An absent or empty folder has the
    fingerprint of no file.
    """
    digest = hashlib.sha256()
    for path in measured_files(folder):
        digest.update(f"{path.name}\0{sha256_of(path)}\n".encode())  # read a MiB at a time: a file of any size
    return digest.hexdigest()


def read_power_profiles(zeus_folder: Path, measured_folder: Path) -> IngestResult:
    """The published power traces of ``zeus_folder`` followed by the measured profiles of ``measured_folder``."""
    return IngestResult.concat([read_power(zeus_folder), read_measured(measured_folder)], POWER_SPEC)


def power_limit_mismatches(power: pl.DataFrame) -> dict[str, str]:
    """Per published GPU and workload, the difference from the published power-limit set (empty: all match)."""
    problems: dict[str, str] = {}
    published = power.filter(pl.col("source") == ZEUS_SOURCE)
    for gpu, dataset, limits in published.group_by("gpu", "dataset").agg(pl.col("power_limit").unique()).iter_rows():
        expected = PUBLISHED_POWER_LIMITS_W.get(gpu)
        if gpu == "a40" and dataset == "sentiment140":
            expected = A40_SENTIMENT140_LIMITS_W
        if expected is None:
            problems[f"{gpu}/{dataset}"] = "unknown published GPU"
        elif set(limits) != expected:
            problems[f"{gpu}/{dataset}"] = f"limits {sorted(limits)} != published {sorted(expected)}"
    for gpu in PUBLISHED_GPUS:
        if published.filter(pl.col("gpu") == gpu).height == 0:
            problems[gpu] = "no rows"
    return problems
