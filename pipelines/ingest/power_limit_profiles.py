"""Power-limit profiles from Zeus's own files, and from this package's measured profiles: file -> measurements.

Three formats, told apart by name and header (``profile_format``):

- ``zeus-log``: a ZeusMonitor log (``log_file=``) of GlobalPowerLimitOptimizer's JIT profiling: CSV
  ``start_time, window_name, elapsed_time, gpu<i>_energy...``, one window ``__GlobalPowerLimitOptimizer_<W>``
  per limit (other windows of the same monitor are skipped). As the optimizer does, the energy of a
  window is the sum of its GPUs' (J) and its time is ``elapsed_time`` (s); the world size is the
  number of ``gpu<i>_energy`` columns.
- ``zeus-json``: the profile the optimizer saves (``profile_path=``):
  ``{"measurements": [{"power_limit": W, "energy": J, "time": s}, ...]}``; the world size is not in it.
- ``measured``: a CSV of ``python -m pipelines measure profile`` (one GPU): per power limit, one epoch's
  energy (average_power x time_per_epoch, J) and time (time_per_epoch, s) at one batch size.

Measurements keep the file's order (the optimizer's ties go to the first); a measured CSV's are
ordered from the highest limit down, the order the optimizer profiles in. Bad input raises
``IngestError`` naming the file, line and field: a missing window name, a non-numeric, negative or
zero energy or time, a limit twice, fewer than two limits.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl

from pipelines.contracts.base import polars_schema, split_valid
from pipelines.contracts.measure import PowerLimitProfiles
from pipelines.ingest.bounded_json import check_json_depth, read_json_text
from pipelines.ingest.common import IngestError, IngestResult, TableSpec, empty_quarantine
from pipelines.ingest.text_reader import read_table, refused_file
from pipelines.ingest.zeus import MAX_PROFILE_BYTES, is_zeus_log, measured_files, read_measured_file
from pipelines.ingest.zeus import ZEUS_LOG_COLUMNS as LOG_COLUMNS
from pipelines.zeus.limit_selectors import Measurement

ProfileFormat = Literal["zeus-log", "zeus-json", "measured"]
#: The window name prefix GlobalPowerLimitOptimizer gives each limit's profiling window (the limit in W follows).
WINDOW_PREFIX = "__GlobalPowerLimitOptimizer_"
_GPU_COLUMN = re.compile(r"gpu(\d+)_energy")
#: The fields of one measurement of Zeus's profile JSON.
JSON_FIELDS = ("power_limit", "energy", "time")


@dataclass(frozen=True)
class PowerLimitProfile:
    """A file's measurements, with where they came from.

    ``world_size``: the GPUs whose energy the measurements sum (None: the file does not say, as
    Zeus's JSON); ``label`` says which configuration of a measured CSV it is (empty otherwise);
    ``lines``: the file line of each measurement (a measured CSV's are not kept: empty).
    """

    source: str
    format: ProfileFormat
    world_size: int | None
    measurements: tuple[Measurement, ...]
    label: str = ""
    lines: tuple[int, ...] = ()


def profile_format(path: Path) -> ProfileFormat:
    """``zeus-json`` for a ``.json`` file; a CSV whose header starts like a ZeusMonitor log is ``zeus-log``, any other ``measured``."""
    if path.suffix.lower() == ".json":
        return "zeus-json"
    return "zeus-log" if is_zeus_log(path) else "measured"


def _text(data: bytes, display: str) -> str:
    try:
        return data.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise IngestError(display, f"not UTF-8 text (byte {exc.start})", line=line) from exc


def _number(text: str, display: str, line: int, field: str, what: str) -> float:
    """``text`` as a finite number, else an ``IngestError`` at (line, field)."""
    try:
        value = float(text)
    except ValueError:
        raise IngestError(display, f"{what} is not a number: {text.strip()[:40]!r}", line=line, column=field) from None
    if not math.isfinite(value):
        raise IngestError(display, f"{what} is not finite: {text.strip()!r}", line=line, column=field)
    return value


def _positive(value: float, display: str, line: int | None, field: str, what: str, *, zero: bool = False) -> float:
    """``value`` if > 0 (>= 0 with ``zero``), else an ``IngestError`` at (line, field)."""
    if value < 0:
        raise IngestError(display, f"{what} is negative: {value:g}", line=line, column=field)
    if value == 0 and not zero:
        raise IngestError(display, f"{what} is zero: Zeus needs it > 0", line=line, column=field)
    return value


def _check_limits(found: list[tuple[int | None, int]], display: str, what: str) -> None:
    """``found``: (line, limit W) of each measurement. A limit twice, or fewer than two limits, is an error."""
    first: dict[int, int | None] = {}
    for line, limit in found:
        if limit in first:
            raise IngestError(display, f"power limit {limit} W measured twice (first at line {first[limit]})", line=line, column=what)
        first[limit] = line
    if not found:
        raise IngestError(display, f"no measurement: a profile needs at least two power limits ({WINDOW_PREFIX}<W> windows in a log)")
    if len(found) == 1:
        raise IngestError(display, f"one power limit only ({found[0][1]} W): a profile needs at least two", line=found[0][0], column=what)


def read_zeus_log(path: Path, display: str | None = None) -> PowerLimitProfile:
    """A ZeusMonitor log of GlobalPowerLimitOptimizer's profiling -> its profile (energy summed over the GPUs)."""
    display = display or str(path)
    text = _text(read_table(path, display, max_bytes=MAX_PROFILE_BYTES, what="a profile file"), display)
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:  # a field over the csv module's limit (128 kB), a NUL
        raise IngestError(display, f"not a ZeusMonitor log's CSV: {exc}") from None
    if not rows:
        raise IngestError(display, "empty file: expected the header " + ",".join(LOG_COLUMNS) + ",gpu<i>_energy...", line=1)
    header = [h.strip() for h in rows[0]]
    for column in LOG_COLUMNS:
        if column not in header:
            raise IngestError(display, f"no {column!r} column in the header {','.join(header)!r}", line=1, column=column)
    gpus = [h for h in header if _GPU_COLUMN.fullmatch(h)]
    if not gpus:
        raise IngestError(display, "no gpu<i>_energy column in the header", line=1)
    at = {h: i for i, h in enumerate(header)}
    found: list[tuple[int | None, int]] = []
    measurements: list[Measurement] = []
    for line, fields in enumerate(rows[1:], start=2):
        if not fields or not any(f.strip() for f in fields):
            continue
        if len(fields) != len(header):
            raise IngestError(display, f"{len(fields)} fields where the header has {len(header)}", line=line)
        window = fields[at["window_name"]].strip()
        if not window:
            raise IngestError(display, "missing window name", line=line, column="window_name")
        if not window.startswith(WINDOW_PREFIX):
            continue  # a window of the user's own on the same monitor
        limit_text = window.removeprefix(WINDOW_PREFIX)
        if not limit_text.isdigit() or int(limit_text) <= 0:
            raise IngestError(display, f"window {window!r}: the power limit is not a positive whole number of W", line=line,
                              column="window_name")
        time_s = _positive(_number(fields[at["elapsed_time"]], display, line, "elapsed_time", "time"), display, line, "elapsed_time", "time")
        # one GPU of a window may read 0 J; their sum may not
        energy = [_positive(_number(fields[at[g]], display, line, g, "energy"), display, line, g, "energy", zero=True) for g in gpus]
        total = _positive(sum(energy), display, line, ",".join(gpus), "energy summed over the GPUs")
        found.append((line, int(limit_text)))
        measurements.append(Measurement(int(limit_text), total, time_s))
    _check_limits(found, display, "window_name")
    return PowerLimitProfile(display, "zeus-log", len(gpus), tuple(measurements), lines=tuple(line for line, _ in found if line))


def _line_at(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def _json_elements(text: str, display: str) -> list[tuple[int, int, Any]]:
    """(start, end, value) of each element of the top-level ``measurements`` list, positions in ``text``."""
    decoder = json.JSONDecoder()
    try:
        document = json.loads(check_json_depth(text, display))
    except json.JSONDecodeError as exc:
        raise IngestError(display, f"not JSON: {exc.msg}", line=exc.lineno) from None
    if not isinstance(document, dict) or "measurements" not in document:
        raise IngestError(display, 'expected an object {"measurements": [...]} (Zeus\'s saved profile)', line=1, column="measurements")
    if not isinstance(document["measurements"], list):
        match = re.search(r'"measurements"\s*:', text)
        raise IngestError(display, "measurements is not a list", line=_line_at(text, match.start() if match else 0), column="measurements")
    key = re.search(r'"measurements"\s*:\s*\[', text)
    if key is None:  # the key escaped in the text (\u006d...): no positions, the values are still right
        return [(0, 0, value) for value in document["measurements"]]
    elements: list[tuple[int, int, Any]] = []
    position = key.end()
    for _ in document["measurements"]:
        while text[position] in " \t\r\n,":
            position += 1
        value, end = decoder.raw_decode(text, position)
        elements.append((position, end, value))
        position = end
    return elements


def read_zeus_json(path: Path, display: str | None = None) -> PowerLimitProfile:
    """Zeus's saved profile JSON -> its profile (world size unknown: None)."""
    display = display or str(path)
    text = read_json_text(path, display, "a profile file")
    measurements: list[Measurement] = []
    found: list[tuple[int | None, int]] = []
    for start, end, element in _json_elements(text, display):
        element_line = _line_at(text, start)

        def line_of(field: str, start: int = start, end: int = end, element_line: int = element_line) -> int:
            match = re.search(rf'"{field}"\s*:', text[start:end])
            return _line_at(text, start + match.start()) if match else element_line

        if not isinstance(element, dict):
            raise IngestError(display, f"a measurement is not an object: {json.dumps(element)[:40]}", line=element_line,
                              column="measurements")
        values: dict[str, float] = {}
        for field in JSON_FIELDS:
            if field not in element:
                raise IngestError(display, f"missing field {field!r}", line=element_line, column=field)
            value = element[field]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise IngestError(display, f"{field} is not a number: {json.dumps(value)[:40]}", line=line_of(field), column=field)
            if not math.isfinite(value):
                raise IngestError(display, f"{field} is not finite: {value}", line=line_of(field), column=field)
            values[field] = _positive(float(value), display, line_of(field), field, field)
        limit = element["power_limit"]
        if not isinstance(limit, int):
            raise IngestError(display, f"power_limit is not a whole number of W: {limit}", line=line_of("power_limit"),
                              column="power_limit")
        found.append((line_of("power_limit"), limit))
        measurements.append(Measurement(limit, values["energy"], values["time"]))
    _check_limits(found, display, "power_limit")
    return PowerLimitProfile(display, "zeus-json", None, tuple(measurements), lines=tuple(line for line, _ in found if line))


def measured_configurations(rows: pl.DataFrame) -> pl.DataFrame:
    """The (gpu, dataset, network, optimizer, batch_size) of a measured profile's rows, with the number of limits of each."""
    key = ["gpu", "dataset", "network", "optimizer", "batch_size"]
    return rows.group_by(key, maintain_order=True).agg(limits=pl.col("power_limit").n_unique())


def measured_measurements(rows: pl.DataFrame) -> list[Measurement]:
    """One epoch per power limit of one configuration's rows (``zeus_power_profiles`` columns), highest limit first."""
    ordered = rows.sort("power_limit", descending=True)
    return [Measurement(int(limit), float(power * time), float(time))
            for limit, time, power in ordered.select("power_limit", "time_per_epoch", "average_power").iter_rows()]


def read_measured_profile(path: Path, display: str | None = None, batch_size: int | None = None) -> PowerLimitProfile:
    """One configuration of a ``measure profile`` CSV -> its profile (one GPU): ``batch_size`` picks one when it has several."""
    display = display or str(path)
    result, _ = read_measured_file(path, display)
    if result.quarantine.height:
        bad = result.quarantine.row(0, named=True)
        raise IngestError(display, bad["reason"], line=bad["line"], column=bad["column"])
    rows = result.table if batch_size is None else result.table.filter(pl.col("batch_size") == batch_size)
    configurations = measured_configurations(rows)
    if configurations.height != 1:
        sizes = ", ".join(str(b) for b in measured_configurations(result.table)["batch_size"].unique(maintain_order=True))
        what = "no rows with energy" if result.table.height == 0 else f"batch sizes {sizes}"
        if batch_size is not None and result.table.height:
            what = f"no batch size {batch_size} (it has {sizes})" if configurations.height == 0 else f"several workloads at batch size {batch_size}"
        raise IngestError(display, f"one configuration is needed, the file has {what}: pick one with --batch-size")
    gpu, dataset, network, optimizer, size, _ = configurations.row(0)
    measurements = measured_measurements(rows)
    _check_limits([(None, m.power_limit_w) for m in measurements], display, "power_limit")
    return PowerLimitProfile(display, "measured", 1, tuple(measurements), f"{gpu} {dataset} ({network}, {optimizer}) batch size {size}")


def read_profile(path: Path, display: str | None = None, batch_size: int | None = None) -> PowerLimitProfile:
    """Any of the three formats (``profile_format``) -> its profile."""
    display = display or str(path)
    if path.exists() and not path.is_file():
        raise IngestError(display, "not a regular file (a FIFO, device or stdin): give the profile's file")
    kind = profile_format(path)
    if kind == "zeus-json":
        return read_zeus_json(path, display)
    if kind == "zeus-log":
        return read_zeus_log(path, display)
    return read_measured_profile(path, display, batch_size)


# ---------------------------------------------------------------------------------------------
# the table of raw/measured's Zeus files (``power_limit_profiles``)

#: The table's spec: its rows come from ``read_power_limit_profiles``, not from a CSV reader (``columns`` names its contract's).
SPEC = TableSpec("power_limit_profiles", PowerLimitProfiles, {c: c for c in polars_schema(PowerLimitProfiles)})


def profile_frame(profile: PowerLimitProfile, source: str) -> pl.DataFrame:
    """``profile``'s rows of ``power_limit_profiles`` (source: the file's name)."""
    n = len(profile.measurements)
    return pl.DataFrame({
        "source": [source] * n, "format": [profile.format] * n, "world_size": [profile.world_size] * n, "position": range(n),
        "line": profile.lines, "power_limit": [m.power_limit_w for m in profile.measurements],
        "energy": [m.energy_j for m in profile.measurements], "time": [m.time_s for m in profile.measurements],
    }, schema=SPEC.dtypes())  # fmt: skip



def read_zeus_file(path: Path, display: str) -> IngestResult:
    """One Zeus file of raw/measured -> its rows, or (when it cannot serve as a profile) one quarantine row naming the line."""
    try:
        profile = read_zeus_json(path, display) if path.suffix.lower() == ".json" else read_zeus_log(path, display)
    except IngestError as exc:
        return refused_file(path, display, SPEC, exc)
    good, bad = split_valid(profile_frame(profile, path.name), PowerLimitProfiles)
    if bad.height:  # beyond a bound of the contract: the profile is used whole or not at all
        first = bad.row(0, named=True)
        return refused_file(path, display, SPEC, IngestError(display, f"{first['reason']} (the file's profile is not used)",
                                                             line=profile.lines[0], column=first["column"]))
    return IngestResult(good, empty_quarantine(), lines_in=good.height, files=[display])


def read_power_limit_profiles(folder: Path) -> IngestResult:
    """The Zeus files of ``folder`` (``raw/measured``: ``*.json`` and the ``*.csv`` that are ZeusMonitor logs), by name.

    A file that cannot be read as a profile is one quarantine row (file, line, field, reason) and
    adds no row: ``lines_in`` counts a file's measurements, or 1 for a quarantined file.
    """
    results = [read_zeus_file(path, f"{folder.name}/{path.name}") for path in measured_files(folder)
               if path.suffix == ".json" or is_zeus_log(path)]
    return IngestResult.concat(results, SPEC)
