"""Which cluster traces are present: the public ones whose files are here, and the user's own in ``raw/clusters/``.

A user trace is ``raw/clusters/<name>.sacct`` (a Slurm export) or ``raw/clusters/<name>.csv`` (the
generic job log), either one possibly compressed (``<name>.sacct.zst``, ``.gz``, ``.xz``: streamed
under the ingest's decompressed-size cap), with an optional sidecar ``raw/clusters/<name>.toml``
holding how to read it:

    format = "sacct"            # or "csv"; default: from the extension
    timezone = "Europe/Berlin"  # IANA name of the cluster's clock; default "UTC"
    fields = ["JobID", ...]     # only for a sacct --noheader export: its --format list
    delimiter = "|"             # only for a sacct export written with --delimiter
    cluster_gpus = 512          # the cluster's GPUs (idle draw in the power model); default: see capacity.py
    sha256 = "..."              # written by `clusters add`: the file as added
    source = "/where/it/came/from.sacct"
    added = "2024-11-23T10:00:00Z"

``python -m pipelines clusters add`` copies a file there and writes the sidecar (first, so that a
reader never sees the file without its options). A file dropped in by hand is read with the
defaults, or with a sidecar written beside it. ``<name>`` is the trace's name everywhere (the
Dagster partition, the ``trace`` column): lower-case letters, digits, ``_`` and ``-``, not the
name of a public trace.

A public trace is present when its files are in ``raw/`` or in the local mirror (``fetch``
copies them from there): ``itp`` and ``elasticflow`` (their tarballs), ``acme`` (either job CSV)
and ``alibaba`` (``alibaba_groups.csv.xz``). Nothing here imports Dagster.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, cast

from pipelines.clusters.capacity import CapacityError, check_setting
from pipelines.home.storage import atomic_path, write_text_atomic
from pipelines.ingest import joblog, slurm
from pipelines.ingest.compressed import COMPRESSED_SUFFIXES, plain_file, uncompressed_name
from pipelines.ingest.owntrace import OwnTraceResult, check_timezone
from pipelines.sources.fetch import sha256_of
from pipelines.vocabulary import CLUSTER_TRACES, TRACE_NAME_REGEX

Format = Literal["sacct", "csv"]
FOLDER = "clusters"  # below raw/
EXTENSIONS: dict[str, Format] = {".sacct": "sacct", ".csv": "csv"}
SIDECAR = ".toml"
#: Files (below raw/ or the mirror) whose presence makes each public trace present; any one suffices.
PUBLIC_FILES: dict[str, tuple[str, ...]] = {
    "alibaba": ("zeus/alibaba_groups.csv.xz",),
    "itp": ("itp/raw-traces.tar.gz",),
    "elasticflow": ("itp/elasticflow-traces.tar.gz",),
    "acme": ("acme/trace_seren.csv", "acme/trace_kalos.csv"),
}
#: The raw assets whose run ingests each public trace's table (for a trace whose files were dropped in).
PUBLIC_TABLES: dict[str, tuple[str, ...]] = {
    "alibaba": ("alibaba_groups", "quarantine/alibaba_groups"),
    "itp": ("itp_jobs", "quarantine/itp_jobs"),
    "elasticflow": ("elasticflow_jobs", "quarantine/elasticflow_jobs"),
    "acme": ("acme_jobs", "quarantine/acme_jobs"),
}


class TraceFileError(ValueError):
    """A trace file or sidecar that cannot be used (bad name, bad option, two files of one name)."""


def check_name(name: str) -> str:
    """``name`` if it can name a user trace; else ``TraceFileError`` saying why."""
    if not re.fullmatch(TRACE_NAME_REGEX, name):
        raise TraceFileError(f"trace name {name!r}: use lower-case letters, digits, '_' and '-' (at most 48, starting with a letter or digit)")
    if name in CLUSTER_TRACES:
        raise TraceFileError(f"trace name {name!r} is a public trace's; choose another")
    return name


def format_of(path: Path, given: str | None = None) -> Format:
    """The format given, else the extension's under any compression suffix (``.csv``, ``.csv.zst``: csv; anything else: sacct)."""
    if given is not None:
        if given not in ("sacct", "csv"):
            raise TraceFileError(f"format {given!r}: use sacct or csv")
        return cast(Format, given)
    return EXTENSIONS.get(uncompressed_name(path).suffix.lower(), "sacct")


def split_file_name(path: Path) -> tuple[str, str, str] | None:
    """(trace name, extension, compression suffix or "") of a trace file in ``raw/clusters``; None for another file."""
    plain = uncompressed_name(path)
    compression = path.name[len(plain.name):]
    if plain.suffix.lower() not in EXTENSIONS:
        return None
    return plain.stem, plain.suffix.lower(), compression.lower()


@dataclass(frozen=True)
class TraceFile:
    """A user trace in ``raw/clusters/`` and how to read it."""

    name: str
    path: Path
    format: Format
    timezone: str
    fields: tuple[str, ...] | None
    recorded_sha256: str | None  # from the sidecar (None: dropped in by hand)
    delimiter: str = slurm.DEFAULT_DELIMITER
    cluster_gpus: int | None = None  # the sidecar's cluster size (None: published or the trace's peak; pipelines.clusters.capacity)

    @property
    def source_file(self) -> str:
        """The file's name relative to raw/ (in messages and the quarantine)."""
        return f"{FOLDER}/{self.path.name}"

    @property
    def sidecar(self) -> Path:
        return self.path.parent / f"{self.name}{SIDECAR}"

    def fingerprint(self) -> str:
        """Changes when the file or its sidecar changes (size and modification time; no hashing)."""
        parts = []
        for path in (self.path, self.sidecar):
            try:
                st = path.stat()
                parts.append(f"{st.st_size}:{st.st_mtime_ns}")
            except FileNotFoundError:
                parts.append("-")
        return "/".join(parts)

    def read(self, *, digest: bool = True) -> OwnTraceResult:
        """The trace's rows, quarantine and counts (``IngestError`` for a file that cannot be read at all)."""
        return read_trace(self.path, self.name, self.format, self.timezone, self.fields, source_file=self.source_file, digest=digest,
                          delimiter=self.delimiter)


def read_trace(path: Path | bytes, name: str, fmt: Format, timezone: str, fields: tuple[str, ...] | list[str] | None = None, *,
               source_file: str, digest: bool = True, delimiter: str = slurm.DEFAULT_DELIMITER) -> OwnTraceResult:
    """Read a sacct export or a job-log CSV (``pipelines.ingest.slurm`` / ``pipelines.ingest.joblog``).

    A compressed file (``.gz``, ``.xz``, ``.zst``) is streamed into a temporary file under the
    decompressed-size cap (``pipelines.ingest.compressed.plain_file``) and read from there; its
    sha256 is the compressed file's, as ``clusters add`` records it.
    """
    if fmt != "sacct" and fields:
        raise TraceFileError("fields are for a sacct --noheader export only; a job-log CSV has a header")
    if fmt != "sacct" and delimiter != slurm.DEFAULT_DELIMITER:
        raise TraceFileError("a delimiter is for a sacct export written with --delimiter; a job-log CSV is comma-separated")
    if isinstance(path, bytes):
        return _read_plain(path, name, fmt, timezone, fields, source_file, digest, delimiter)
    with plain_file(path, name=source_file, digest=digest) as (plain, sha):
        result = _read_plain(plain, name, fmt, timezone, fields, source_file, digest and sha is None, delimiter)
    if sha is not None:
        result.sha256 = sha
    return result


def _read_plain(path: Path | bytes, name: str, fmt: Format, timezone: str, fields: tuple[str, ...] | list[str] | None,
                source_file: str, digest: bool, delimiter: str) -> OwnTraceResult:
    if fmt == "sacct":
        return slurm.read_sacct(path, trace=name, source_file=source_file, timezone=timezone, fields=fields, digest=digest,
                                delimiter=delimiter)
    return joblog.read_joblog(path, trace=name, source_file=source_file, timezone=timezone, digest=digest)


def folder(raw: Path) -> Path:
    return raw / FOLDER


def _sidecar_options(path: Path, name: str,
                     fmt_default: Format) -> tuple[Format, str, tuple[str, ...] | None, str | None, str, int | None]:
    sidecar = path.parent / f"{name}{SIDECAR}"
    if not sidecar.is_file():
        return fmt_default, "UTC", None, None, slurm.DEFAULT_DELIMITER, None
    try:
        options = tomllib.loads(sidecar.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise TraceFileError(f"{sidecar}: not readable TOML ({exc})") from None
    fmt = format_of(path, options.get("format")) if "format" in options else fmt_default
    timezone = options.get("timezone", "UTC")
    fields = options.get("fields")
    if not isinstance(timezone, str):
        raise TraceFileError(f"{sidecar}: timezone must be a string")
    try:
        check_timezone(timezone)
    except ValueError as exc:
        raise TraceFileError(f"{sidecar}: {exc}") from None
    if fields is not None and not (isinstance(fields, list) and all(isinstance(f, str) and f for f in fields)):
        raise TraceFileError(f"{sidecar}: fields must be a list of sacct field names")
    sha = options.get("sha256")
    delimiter = options.get("delimiter", slurm.DEFAULT_DELIMITER)
    try:
        slurm.check_delimiter(delimiter if isinstance(delimiter, str) else "")
    except ValueError as exc:
        raise TraceFileError(f"{sidecar}: {exc}") from None
    gpus = options.get("cluster_gpus")
    if gpus is not None:
        try:
            check_setting(gpus, f"{sidecar}: cluster_gpus")
        except CapacityError as exc:
            raise TraceFileError(str(exc)) from None
    return fmt, timezone, tuple(fields) if fields else None, sha if isinstance(sha, str) else None, delimiter, gpus


def user_traces(raw: Path) -> tuple[list[TraceFile], list[str]]:
    """(the user traces in ``raw/clusters``, sorted by name; a line per file that cannot be used, and why)."""
    base = folder(raw)
    if not base.is_dir():
        return [], []
    found: dict[str, TraceFile] = {}
    problems: list[str] = []
    for path in sorted(base.iterdir()):
        parts = split_file_name(path)
        if parts is None or not path.is_file() or path.name.startswith("."):
            continue
        name, ext, _ = parts
        try:
            check_name(name)
            fmt, timezone, fields, sha, delimiter, gpus = _sidecar_options(path, name, EXTENSIONS[ext])
        except TraceFileError as exc:
            problems.append(f"{path.name}: {exc}")
            continue
        if name in found:
            problems.append(f"{path.name}: trace {name!r} has two files ({found[name].path.name} is used); remove one")
            continue
        found[name] = TraceFile(name, path, fmt, timezone, fields, sha, delimiter, gpus)
    return list(found.values()), problems


def public_traces(raw: Path, mirror: Path | None) -> list[str]:
    """The public traces whose files are in ``raw/`` or in the mirror, in the mapping's order."""
    roots = [raw] + ([mirror] if mirror is not None else [])
    return [t for t in CLUSTER_TRACES if any((root / f).is_file() for root in roots for f in PUBLIC_FILES[t])]


def present_traces(raw: Path, mirror: Path | None) -> list[str]:
    """Every trace that should be a partition: the public ones present, then the user's (sorted)."""
    return public_traces(raw, mirror) + [t.name for t in user_traces(raw)[0]]


def _toml_value(value: object) -> str:
    """A TOML value for a string, an integer or a list of strings (JSON's string escapes are TOML's)."""
    return json.dumps(value, ensure_ascii=True)


def add_trace(raw: Path, name: str, file: Path, *, fmt: Format, timezone: str, fields: tuple[str, ...] | None = None,
              replace: bool = False, delimiter: str = slurm.DEFAULT_DELIMITER, cluster_gpus: int | None = None) -> TraceFile:
    """Copy ``file`` to ``raw/clusters/<name>.<ext>`` (keeping a compression suffix: ``<name>.sacct.zst``) and record its
    sha256 and options in ``<name>.toml``.

    ``cluster_gpus`` (the cluster's size, for the idle draw of the power model) is recorded as
    given; the caller checks it against the trace's peak concurrent GPUs (``clusters add`` does).

    The sidecar is written before the file (both atomically), so a sensor never sees the file
    without its options. Refuses to overwrite a trace of that name unless ``replace``.
    """
    check_name(name)
    check_timezone(timezone)
    slurm.check_delimiter(delimiter)
    base = folder(raw)
    ext = ".csv" if fmt == "csv" else ".sacct"
    compression = file.suffix.lower() if file.suffix.lower() in COMPRESSED_SUFFIXES else ""
    target = base / f"{name}{ext}{compression}"
    existing = [p for p in sorted(base.glob(f"{name}.*")) if (split_file_name(p) or ("",))[0] == name] if base.is_dir() else []
    if existing and not replace:
        raise TraceFileError(f"trace {name!r} exists ({existing[0]}); pass --replace to replace it")
    sha = sha256_of(file)
    if cluster_gpus is not None:
        check_setting(cluster_gpus, "--cluster-gpus")
    options = {"format": fmt, "timezone": timezone, **({"fields": list(fields)} if fields else {}),
               **({"delimiter": delimiter} if delimiter != slurm.DEFAULT_DELIMITER else {}),
               **({"cluster_gpus": cluster_gpus} if cluster_gpus is not None else {}), "sha256": sha,
               "source": str(file.resolve()), "added": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    text = "# How to read this trace (written by `gpu-energy clusters add`; see the docs, \"Your own cluster\").\n"
    text += "".join(f"{key} = {_toml_value(value)}\n" for key, value in options.items())
    base.mkdir(parents=True, exist_ok=True)
    write_text_atomic(text, base / f"{name}{SIDECAR}")
    with atomic_path(target) as tmp:
        shutil.copyfile(file, tmp)
    for stale in existing:
        if stale != target:
            stale.unlink()
    return TraceFile(name, target, fmt, timezone, fields, sha, delimiter, cluster_gpus)


# ---------------------------------------------------------------------------------------------
# what the sensor does on a tick (Dagster-free; pipelines/defs/clusters/sensors.py wraps it)


@dataclass(frozen=True)
class TickPlan:
    """Partitions to add, runs to request (trace, run key, assets to run), and files that cannot be used."""

    add: list[str]
    runs: list[tuple[str, str, tuple[str, ...]]]
    problems: list[str]


#: What a run for a user trace materializes: the own-trace ingest (every file; cheap) and the trace's partitions (its jobs and
#: its cluster size, which the sidecar may set).
USER_TRACE_ASSETS: tuple[str, ...] = ("own_cluster_jobs", "quarantine/own_cluster_jobs", "own_cluster_traces", "cluster_workload_jobs",
                                      "cluster_capacity")
#: The raw asset of each public trace's files.
PUBLIC_RAW: dict[str, str] = {"alibaba": "raw_zeus_traces", "itp": "raw_itp_traces", "elasticflow": "raw_itp_traces", "acme": "raw_acme_traces"}


def _newest_change_s(trace: TraceFile) -> float:
    times = [p.stat().st_mtime for p in (trace.path, trace.sidecar) if p.exists()]
    return max(times)


def plan_tick(raw: Path, mirror: Path | None, registered: set[str], materialized_at: Callable[[str], float | None]) -> TickPlan:
    """What the sensor does now.

    * every present trace (``present_traces``) that is not a partition yet is added;
    * a run is requested for a trace whose ``cluster_workload_jobs`` partition was never
      materialized (``materialized_at(trace)`` is None), and for a user trace whose file or
      sidecar changed after that (its modification time is later). A public trace's run
      ingests its table first (its raw and ingest assets), a user trace's run ingests every
      own trace. The run key names the trace and the change, so a run is requested once
      per change (a failed run is not retried until the file changes).
    """
    users, problems = user_traces(raw)
    public = public_traces(raw, mirror)
    add = [t for t in [*public, *(u.name for u in users)] if t not in registered]
    runs: list[tuple[str, str, tuple[str, ...]]] = []
    for name in public:
        if materialized_at(name) is None:
            runs.append((name, f"{name}:first", (PUBLIC_RAW[name], *PUBLIC_TABLES[name], "cluster_workload_jobs", "cluster_capacity")))
    for trace in users:
        changed = _newest_change_s(trace)
        done = materialized_at(trace.name)
        if done is None or changed > done:
            runs.append((trace.name, f"{trace.name}:{changed:.6f}", USER_TRACE_ASSETS))
    return TickPlan(add, runs, problems)
