"""Zeus² heterogeneous-GPU profiles: ``trace_aws/{workload}_{gpu}.json`` -> one long table.

A profile file is one JSON object ``{"<batch size>": [{"power_limit": W, "energy": J, "time": s}, ...]}``
measured on one GPU for one workload (the upstream files are listed in ``pipelines.sources``). The reader keeps the
file's order (batch-size keys, then entries), because the published algorithm takes the order of
first appearance of the power limits as its tie-break order (``pipelines.hetero.fit``).

Every structural or value error raises ``ProfileFormatError`` naming the file, the line and column,
and the key path, e.g. ``cifar_a10.json:3:47: key "64"[2].energy: expected a number, got "abc"``.
Nothing is dropped: a file either yields one row per entry or raises. The ingest
(``ingest_profile_folder``) turns a file that raises into one quarantine row and keeps the other
files: a profile is all or nothing, since the fits need every entry of it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from pipelines.contracts.base import polars_schema
from pipelines.contracts.sources import HeteroGpuProfiles
from pipelines.ingest.bounded_json import check_json_depth, read_json_text
from pipelines.ingest.common import IngestError, IngestResult, TableSpec, empty_quarantine, empty_table, quarantine_frame, raw_text
from pipelines.ingest.compressed import read_at_most
from pipelines.ingest.text_reader import REFUSED_HEAD_BYTES

#: The table of all profiles (``hetero_gpu_profiles``); one row per (gpu, workload, batch_size, power_limit).
SCHEMA = polars_schema(HeteroGpuProfiles)
#: The four published files, in the order ``read_profile_folder`` reads them.
PROFILE_FILES: tuple[str, ...] = ("cifar_a10.json", "cifar_t4.json", "imagenet_a10.json", "imagenet_t4.json")
#: File-name prefix -> workload. The Zeus² README profiles CIFAR-100 (examples/ZeusDataLoader/cifar100)
#: and ImageNet; the Zeus traces call these datasets ``cifar100`` and ``imagenet``.
WORKLOADS: dict[str, str] = {"cifar": "cifar100", "cifar100": "cifar100", "imagenet": "imagenet"}
_ENTRY_KEYS = ("power_limit", "energy", "time")
_NAME = re.compile(r"^(?P<workload>[A-Za-z0-9-]+)_(?P<gpu>[A-Za-z0-9-]+)$")
_WS = re.compile(r"[ \t\n\r]*")
#: The table's spec for the ingest layer (no CSV columns: a profile is JSON).
HETERO_SPEC = TableSpec("hetero_gpu_profiles", HeteroGpuProfiles, {})
#: Key in a profile entry -> the table column it fills.
_ENTRY_COLUMNS = {"power_limit": "power_limit", "energy": "energy_j", "time": "time_s"}

KeyPath = tuple[str | int, ...]  # a key path inside the document: object keys and list indices


class ProfileFormatError(ValueError):
    """A profile file that is not the documented shape; the message names file, line:column and key path."""

    def __init__(self, file: str | Path, message: str, *, path: KeyPath = (), line: int | None = None, column: int | None = None):
        where = Path(file).name + (f":{line}:{column}" if line is not None else "")
        key = f" key {format_path(path)}:" if path else ""
        super().__init__(f"{where}:{key} {message}")
        self.file, self.path, self.line, self.column, self.message = str(file), path, line, column, message


def format_path(path: KeyPath) -> str:
    """``("64", 2, "energy")`` -> ``"64"[2].energy`` (first key quoted: it is a batch size as text)."""
    out = ""
    for i, part in enumerate(path):
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += json.dumps(part) if i == 0 else f".{part}"
    return out


def profile_name(path: str | Path) -> tuple[str, str]:
    """``.../cifar_a10.json`` -> ``("cifar100", "a10")``: (workload, gpu), both lower case.

    Unknown workload prefixes are kept as written (lower case). Raises ``ProfileFormatError`` for a
    name that is not ``<workload>_<gpu>.json``.
    """
    stem = Path(path).name.removesuffix(".json")
    match = _NAME.match(stem)
    if not match:
        raise ProfileFormatError(path, "file name is not <workload>_<gpu>.json (e.g. cifar_a10.json)")
    prefix = match["workload"].lower()
    return WORKLOADS.get(prefix, prefix), match["gpu"].lower()


class _Located:
    """JSON text parsed with the (line, column) of every value, for error messages."""

    def __init__(self, file: str | Path, text: str) -> None:
        self.file, self.text = file, text
        self.positions: dict[KeyPath, int] = {}
        self.key_positions: dict[KeyPath, int] = {}
        self._decoder = json.JSONDecoder(parse_constant=self._reject_constant)

    def _reject_constant(self, name: str) -> float:
        raise ValueError(f"{name} is not a JSON number")

    def line_col(self, offset: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, offset) + 1
        return line, offset - (self.text.rfind("\n", 0, offset) + 1) + 1

    def error(self, message: str, path: KeyPath, offset: int | None = None, *, at_key: bool = False) -> ProfileFormatError:
        if offset is None:
            offset = (self.key_positions if at_key else self.positions).get(path, 0)
        line, col = self.line_col(offset)
        return ProfileFormatError(self.file, message, path=path, line=line, column=col)

    def _skip(self, i: int) -> int:
        spaces = _WS.match(self.text, i)
        assert spaces is not None  # the pattern matches the empty string
        return spaces.end()

    def _expect(self, i: int, chars: str, path: KeyPath) -> tuple[str, int]:
        i = self._skip(i)
        ch = self.text[i : i + 1]
        if not ch or ch not in chars:
            found = repr(ch) if ch else "end of file"
            raise self.error(f"invalid JSON: expected {' or '.join(repr(c) for c in chars)}, found {found}", path, i)
        return ch, i + 1

    def parse(self) -> object:
        value, end = self._value(0, ())
        if self._skip(end) != len(self.text):
            raise self.error("invalid JSON: extra data after the top-level object", (), self._skip(end))
        return value

    def _value(self, i: int, path: KeyPath) -> tuple[object, int]:
        i = self._skip(i)
        self.positions[path] = i
        ch = self.text[i : i + 1]
        if ch == "{":
            obj: dict[str, object] = {}
            if self.text[self._skip(i + 1) : self._skip(i + 1) + 1] == "}":
                return obj, self._skip(i + 1) + 1
            i += 1
            while True:
                i = self._skip(i)
                if self.text[i : i + 1] != '"':
                    raise self.error("invalid JSON: expected a quoted key", path, i)
                start = i
                key, i = self._scalar(i, path)
                assert isinstance(key, str)  # a quoted token decodes to a string
                self.key_positions[(*path, key)] = start
                if key in obj:
                    raise self.error("duplicate key (JSON keeps only the last; the file is ambiguous)", (*path, key), start)
                _, i = self._expect(i, ":", (*path, key))
                obj[key], i = self._value(i, (*path, key))
                ch, i = self._expect(i, ",}", path)
                if ch == "}":
                    return obj, i
        if ch == "[":
            items: list[object] = []
            if self.text[self._skip(i + 1) : self._skip(i + 1) + 1] == "]":
                return items, self._skip(i + 1) + 1
            i += 1
            while True:
                item, i = self._value(i, (*path, len(items)))
                items.append(item)
                ch, i = self._expect(i, ",]", path)
                if ch == "]":
                    return items, i
        return self._scalar(i, path)

    def _scalar(self, i: int, path: KeyPath) -> tuple[object, int]:
        try:
            return self._decoder.raw_decode(self.text, i)
        except json.JSONDecodeError as exc:
            message = "the file is empty" if not self.text.strip() else f"invalid JSON: {exc.msg}"
            raise self.error(message, path, exc.pos) from None
        except ValueError as exc:  # NaN / Infinity
            raise self.error(f"invalid JSON: {exc}", path, i) from None


def _number(doc: _Located, value: object, path: KeyPath, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise doc.error(f"expected a number, got {json.dumps(value)}", path)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise doc.error(f"expected a {'positive' if positive else 'non-negative'} finite number, got {value!r}", path)
    return float(value)


def read_profile(path: str | Path, *, workload: str | None = None, gpu: str | None = None) -> pl.DataFrame:
    """One profile file -> a frame with ``SCHEMA`` (file order kept).

    ``workload`` and ``gpu`` default to those in the file name (``profile_name``). Units: power_limit
    in W (an integer), energy_j in J (>= 0), time_s in s (> 0) for the profiled window at that batch
    size. Invariants (else ``ProfileFormatError``): the top level is a non-empty object whose keys
    are positive integers written in decimal; each value is a non-empty list of objects with
    ``power_limit``, ``energy`` and ``time`` (other keys are ignored); one entry per
    (batch size, power limit).
    """
    path = Path(path)
    if workload is None or gpu is None:
        named_workload, named_gpu = profile_name(path)
        workload, gpu = workload or named_workload, gpu or named_gpu
    try:  # the bounds on a JSON document a user gives: its bytes, then its depth (before the parse recurses into it)
        text = check_json_depth(read_json_text(path, path.name, "a Zeus² profile"), path.name)
    except IngestError as exc:
        raise ProfileFormatError(path, exc.message, line=exc.line, column=1 if exc.line is not None else None) from None
    doc = _Located(path, text)
    data = doc.parse()
    if not isinstance(data, dict) or not data:
        raise doc.error("expected a non-empty object {batch size: [entries]}", ())
    rows: dict[str, list[object]] = {name: [] for name in ("batch_size", "power_limit", "energy_j", "time_s")}
    for key, entries in data.items():
        if not key.isdigit() or int(key) <= 0 or not key.isascii():
            raise doc.error(f"batch size must be a positive integer, got {json.dumps(key)}", (key,), at_key=True)
        if not isinstance(entries, list) or not entries:
            raise doc.error("expected a non-empty list of {power_limit, energy, time}", (key,))
        seen: set[int] = set()
        for i, entry in enumerate(entries):
            where: KeyPath = (key, i)
            if not isinstance(entry, dict):
                raise doc.error(f"expected an object with {', '.join(_ENTRY_KEYS)}, got {json.dumps(entry)}", where)
            missing = [k for k in _ENTRY_KEYS if k not in entry]
            if missing:
                raise doc.error(f"missing {', '.join(missing)}", where)
            limit = _number(doc, entry["power_limit"], (*where, "power_limit"), positive=True)
            if not limit.is_integer():
                raise doc.error(f"power limit must be a whole number of watts, got {entry['power_limit']!r}", (*where, "power_limit"))
            if int(limit) in seen:
                raise doc.error(f"power limit {int(limit)} W appears twice for batch size {key}", (*where, "power_limit"))
            seen.add(int(limit))
            rows["batch_size"].append(int(key))
            rows["power_limit"].append(int(limit))
            rows["energy_j"].append(_number(doc, entry["energy"], (*where, "energy"), positive=False))
            rows["time_s"].append(_number(doc, entry["time"], (*where, "time"), positive=True))
    n = len(rows["batch_size"])
    return pl.DataFrame({"gpu": [gpu] * n, "workload": [workload] * n, **rows}, schema=SCHEMA)


def read_profiles(paths: Sequence[str | Path]) -> pl.DataFrame:
    """Several profile files -> one frame (``SCHEMA``), in the order given; names from the file names.

    Two files for the same (workload, gpu) raise ``ProfileFormatError`` (naming the second).
    """
    frames, seen = [], set()
    for path in paths:
        name = profile_name(path)
        if name in seen:
            raise ProfileFormatError(path, f"a second profile for workload {name[0]!r} on GPU {name[1]!r}")
        seen.add(name)
        frames.append(read_profile(path))
    return pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=SCHEMA)


def read_profile_folder(folder: str | Path, names: Sequence[str] = PROFILE_FILES) -> pl.DataFrame:
    """The published profiles (``PROFILE_FILES``) in ``folder`` (e.g. ``raw/zeus2``) -> one frame (``SCHEMA``)."""
    return read_profiles([Path(folder) / name for name in names])


def ingest_profile_folder(folder: str | Path, names: Sequence[str] = PROFILE_FILES) -> IngestResult:
    """The profiles ``names`` of ``folder`` as ``hetero_gpu_profiles`` rows plus a quarantine.

    A file that raises ``ProfileFormatError`` (or repeats a workload and GPU) becomes one quarantine
    row: its file (``<folder name>/<file>``), line, the table column the failing key fills
    (``batch_size`` for a batch-size key) and the reason with the key path; its entries are left
    out. Records: the entries of a good file, one for a rejected file.
    """
    folder = Path(folder)
    results: list[IngestResult] = []
    seen: set[tuple[str, str]] = set()
    for name in names:
        path, display = folder / name, f"{folder.name}/{name}"
        try:
            ident = profile_name(path)
            if ident in seen:
                raise ProfileFormatError(path, f"a second profile for workload {ident[0]!r} on GPU {ident[1]!r}")
            seen.add(ident)
            frame = read_profile(path)
        except ProfileFormatError as exc:
            results.append(IngestResult(empty_table(HETERO_SPEC), _quarantine_file(exc, path, display), lines_in=1, files=[display]))
            continue
        results.append(IngestResult(frame, empty_quarantine(), lines_in=frame.height, files=[display]))
    return IngestResult.concat(results, HETERO_SPEC)


def _quarantine_file(exc: ProfileFormatError, path: Path, display: str) -> pl.DataFrame:
    line = exc.line or 1
    try:  # the raw line when it starts in the file's head (as ``text_reader.refused_file`` keeps it)
        lines = read_at_most(path, REFUSED_HEAD_BYTES, name=display).split(b"\n")
        raw = raw_text(lines[line - 1]) if line <= len(lines) else ""
    except IngestError:
        raw = ""
    last = next((p for p in reversed(exc.path) if isinstance(p, str)), None)
    column = "batch_size" if len(exc.path) == 1 else _ENTRY_COLUMNS.get(last or "")
    reason = f"key {format_path(exc.path)}: {exc.message}" if exc.path else exc.message
    return quarantine_frame(HETERO_SPEC.table, display, [line], column, reason, raw)
