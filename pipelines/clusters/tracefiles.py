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

``python -m pipelines clusters add`` copies a file there once (to a temp file beside it, which it
reads and hashes), then renames the copy into place and then the sidecar (``add_trace``); a failed
add leaves a trace of that name as it was. ``clusters remove`` removes a trace's files
(``remove_trace``). A file dropped in by hand is read with the defaults, or with a sidecar written
beside it. A file that cannot be used (a symbolic link leaving the data home, a FIFO or a device,
a second file of one name, a file whose extension is not its sidecar's format) is named in a
"not used" line by ``user_traces``; one whose sha256 is not its sidecar's is not ingested
(``check_recorded_sha256``). ``<name>`` is the trace's name everywhere (the
Dagster partition, the ``trace`` column): lower-case letters, digits, ``_`` and ``-``, not the
name of a public trace.

A public trace is present when its files are in ``raw/`` or in the local mirror (``fetch``
copies them from there): ``itp`` and ``elasticflow`` (their tarballs), ``acme`` (either job CSV)
and ``alibaba`` (``alibaba_groups.csv.xz``). Nothing here imports Dagster.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import stat
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, cast

from pipelines.clusters.capacity import CapacityError, check_setting, own_slots, resolve
from pipelines.contracts.registry import quarantine_key
from pipelines.home.atomic import atomic_path
from pipelines.ingest import joblog, slurm
from pipelines.ingest.common import IngestError
from pipelines.ingest.compressed import COMPRESSED_SUFFIXES, plain_file, read_at_most, uncompressed_name
from pipelines.ingest.own_cluster import OwnTraceResult, check_timezone
from pipelines.ingest.text_reader import Progress, ReadLimits
from pipelines.sources.fetch import sha256_of
from pipelines.vocabulary import CLUSTER_TRACES, TRACE_NAME_REGEX

Format = Literal["sacct", "csv"]
FOLDER = "clusters"  # below raw/
EXTENSIONS: dict[str, Format] = {".sacct": "sacct", ".csv": "csv"}
SIDECAR = ".toml"
#: Most bytes of a sidecar (``clusters add`` writes a few hundred): one read of a file dropped by hand stays small.
SIDECAR_MAX_BYTES = 64 << 10
#: Files (below raw/ or the mirror) whose presence makes each public trace present; any one suffices.
PUBLIC_FILES: dict[str, tuple[str, ...]] = {
    "alibaba": ("zeus/alibaba_groups.csv.xz",),
    "itp": ("itp/raw-traces.tar.gz",),
    "elasticflow": ("itp/elasticflow-traces.tar.gz",),
    "acme": ("acme/trace_seren.csv", "acme/trace_kalos.csv"),
}
#: The raw assets whose run ingests each public trace's table (for a trace whose files were dropped in).
PUBLIC_TABLES: dict[str, tuple[str, ...]] = {
    trace: (table, quarantine_key(table))
    for trace, table in {"alibaba": "alibaba_groups", "itp": "itp_jobs", "elasticflow": "elasticflow_jobs", "acme": "acme_jobs"}.items()
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
        """The trace's rows, quarantine and counts (``IngestError`` for a file that cannot be read at all), under
        ``ReadLimits``' defaults: 5,000,000 lines, the memory guard of the own-cluster asset, which holds every column of
        the table and the quarantine read whole (``clusters add`` refuses a longer file by the same default)."""
        return read_trace(self.path, self.name, self.format, self.timezone, self.fields, source_file=self.source_file, digest=digest,
                          delimiter=self.delimiter)


def read_trace(path: Path | bytes, name: str, fmt: Format, timezone: str, fields: tuple[str, ...] | list[str] | None = None, *,
               source_file: str, digest: bool = True, delimiter: str = slurm.DEFAULT_DELIMITER,
               columns: Sequence[str] | None = None, limits: ReadLimits | None = None,
               progress: Progress | None = None) -> OwnTraceResult:
    """Read a sacct export or a job-log CSV (``pipelines.ingest.slurm`` / ``pipelines.ingest.joblog``); ``columns``: the
    table's columns (default: all of ``own_cluster_jobs``'s); ``limits``: the bounds on rows, line length and
    decompressed size (``ReadLimits``' defaults).

    A compressed file (``.gz``, ``.xz``, ``.zst``) is streamed into a temporary file under the
    decompressed-size cap (``pipelines.ingest.compressed.plain_file``) and read from there; its
    sha256 is the compressed file's, as ``clusters add`` records it. ``progress``: told the bytes read after each block.
    """
    if fmt != "sacct" and fields:
        raise TraceFileError("fields are for a sacct --noheader export only; a job-log CSV has a header")
    if fmt != "sacct" and delimiter != slurm.DEFAULT_DELIMITER:
        raise TraceFileError("a delimiter is for a sacct export written with --delimiter; a job-log CSV is comma-separated")
    if isinstance(path, bytes):
        return _read_plain(path, name, fmt, timezone, fields, source_file, digest, delimiter, columns, limits, progress)
    limits = limits or ReadLimits()
    with plain_file(path, name=source_file, digest=digest, limit=limits.decompressed_bytes) as (plain, sha):
        result = _read_plain(plain, name, fmt, timezone, fields, source_file, digest and sha is None, delimiter, columns, limits,
                             progress)
    if sha is not None:
        result.sha256 = sha
    return result


def _read_plain(path: Path | bytes, name: str, fmt: Format, timezone: str, fields: tuple[str, ...] | list[str] | None,
                source_file: str, digest: bool, delimiter: str, columns: Sequence[str] | None,
                limits: ReadLimits | None, progress: Progress | None = None) -> OwnTraceResult:
    if fmt == "sacct":
        return slurm.read_sacct(path, trace=name, source_file=source_file, timezone=timezone, fields=fields, digest=digest,
                                delimiter=delimiter, columns=columns, limits=limits, progress=progress)
    return joblog.read_joblog(path, trace=name, source_file=source_file, timezone=timezone, digest=digest, columns=columns,
                              limits=limits, progress=progress)


def folder(raw: Path) -> Path:
    return raw / FOLDER


def _sidecar_options(path: Path, name: str,
                     fmt_default: Format) -> tuple[Format, str, tuple[str, ...] | None, str | None, str, int | None]:
    sidecar = path.parent / f"{name}{SIDECAR}"
    if not sidecar.is_file():
        return fmt_default, "UTC", None, None, slurm.DEFAULT_DELIMITER, None
    try:
        raw = read_at_most(sidecar, SIDECAR_MAX_BYTES + 1)
        if len(raw) > SIDECAR_MAX_BYTES:
            raise TraceFileError(f"{sidecar}: larger than {SIDECAR_MAX_BYTES:,} bytes (the bound on a trace's options file)")
        options = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, IngestError) as exc:
        raise TraceFileError(f"{sidecar}: not readable TOML ({exc})") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise TraceFileError(f"{sidecar}: not readable TOML (nested too deeply)") from None
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


def not_a_file(path: Path, home: Path) -> str | None:
    """Why the entry ``path`` of ``raw/clusters`` cannot be read as a trace file, or None.

    A symbolic link may point anywhere inside the data home ``home``, not outside it (it could
    expose ``/etc/passwd`` to the event log); a named pipe, a device, a socket or a folder is not a
    file to read (a FIFO would block the sensor).
    """
    if path.is_symlink():
        target = path.resolve()
        if not target.is_relative_to(home.resolve()):
            return f"a symbolic link leaving the data home (to {target}); copy the file in with `clusters add`"
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    kinds = {stat.S_ISFIFO: "a named pipe (FIFO)", stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device",
             stat.S_ISSOCK: "a socket", stat.S_ISDIR: "a folder"}
    kind = next((what for test, what in kinds.items() if test(mode)), None)
    return None if kind is None else f"{kind}, not a regular file"


def user_traces(raw: Path) -> tuple[list[TraceFile], list[str]]:
    """(the user traces in ``raw/clusters``, sorted by name; a line per file that cannot be used, and why).

    Not used: a bad name or sidecar, a symbolic link leaving the data home, anything but a regular
    file (``not_a_file``), and a second file of one name. Of two files of one name, the one whose
    extension is the sidecar's ``format`` is read (a stray ``mycl.csv`` beside an added
    ``mycl.sacct`` never wins); a file whose extension is not its sidecar's format is not used.
    """
    base = folder(raw)
    if not base.is_dir():
        return [], []
    candidates: dict[str, list[TraceFile]] = {}
    problems: list[str] = []
    for path in sorted(base.iterdir()):
        parts = split_file_name(path)
        if parts is None or path.name.startswith("."):
            continue
        name, ext, _ = parts
        why = not_a_file(path, raw.parent)
        if why is not None:
            problems.append(f"{path.name}: {why}")
            continue
        try:
            check_name(name)
            fmt, timezone, fields, sha, delimiter, gpus = _sidecar_options(path, name, EXTENSIONS[ext])
        except TraceFileError as exc:
            problems.append(f"{path.name}: {exc}")
            continue
        candidates.setdefault(name, []).append(TraceFile(name, path, fmt, timezone, fields, sha, delimiter, gpus))
    found: list[TraceFile] = []
    for name, files in candidates.items():
        matching = [t for t in files if format_of(t.path) == t.format]
        if not matching:
            problems.extend(f"{t.path.name}: its sidecar {name}{SIDECAR} is for a {t.format} file (format = {t.format!r}), "
                            f"this is a {format_of(t.path)} file" for t in files)
            continue
        found.append(matching[0])
        problems.extend(f"{t.path.name}: trace {name!r} has two files ({matching[0].path.name} is used); remove one"
                        for t in files if t is not matching[0])
    return found, problems


def check_recorded_sha256(trace: TraceFile, sha256: str) -> None:
    """``TraceFileError`` when ``sha256`` (of the file as read) is not the one its sidecar recorded (``clusters add``)."""
    if trace.recorded_sha256 and trace.recorded_sha256 != sha256:
        raise TraceFileError(f"{trace.source_file}: not used: its sha256 {sha256} is not the one recorded in {trace.sidecar.name} "
                             f"({trace.recorded_sha256}); add the file again with `clusters add {trace.name} FILE --replace`")


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


def _identity(path: Path) -> tuple[int, int, int, int]:
    """(device, inode, size, modification time in ns) of ``path``: changes when the file is written or replaced."""
    st = path.stat()
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def trace_files(raw: Path, name: str) -> list[Path]:
    """The files of trace ``name`` in ``raw/clusters`` (data files of any extension and compression, and the sidecar)."""
    base = folder(raw)
    if not base.is_dir():
        return []
    data = [p for p in sorted(base.glob(f"{name}.*")) if (split_file_name(p) or ("",))[0] == name]
    sidecar = base / f"{name}{SIDECAR}"
    return data + ([sidecar] if sidecar.exists() or sidecar.is_symlink() else [])


#: The ``own_cluster_jobs`` columns of ``capacity.own_slots`` (what ``add_trace`` reads of the table).
SLOT_COLUMNS = ("category", "state", "start_time", "end_time", "num_gpus")


def add_trace(raw: Path, name: str, file: Path, *, fmt: Format, timezone: str, fields: tuple[str, ...] | None = None,
              replace: bool = False, delimiter: str = slurm.DEFAULT_DELIMITER,
              cluster_gpus: int | None = None, limits: ReadLimits | None = None) -> tuple[TraceFile, OwnTraceResult]:
    """Copy ``file`` to ``raw/clusters/<name>.<ext>`` (keeping a compression suffix: ``<name>.sacct.zst``), record its
    sha256 and options in ``<name>.toml``; return the trace and the copy as read (its table holds only the columns of
    its replay slots, ``SLOT_COLUMNS``: the full table of a multi-GB export is never held).

    The source is read once: copied to a temp file beside the target, and that copy is read
    (refusing a file that cannot be read, with file, line and column), hashed and checked against
    ``cluster_gpus`` (at least the trace's peak concurrent GPUs); a source changed during the copy
    is refused. Then the copy is renamed over the target, and then the sidecar (written to a temp
    file of its own before). On any failure (a bad file, ENOSPC, an interrupt) the temp files are
    removed and a trace of that name is left as it was, sidecar included. Refuses to overwrite a
    trace of that name unless ``replace``.
    """
    check_name(name)
    check_timezone(timezone)
    slurm.check_delimiter(delimiter)
    if cluster_gpus is not None:
        check_setting(cluster_gpus, "--cluster-gpus")
    base = folder(raw)
    with traces_lock(raw):
        return _add_locked(raw, base, name, file, fmt, timezone, fields, replace, delimiter, cluster_gpus, limits)


@contextlib.contextmanager
def traces_lock(raw: Path) -> Iterator[None]:
    """Held while ``raw/clusters/`` changes (``add_trace``, ``remove_trace``): one change at a time, across processes.

    Two ``clusters add R --replace`` at once, one with ``R.sacct`` and one with ``R.sacct.xz``, each
    listed the old files before the other renamed its own, and could leave both files and a sidecar
    hashing the unused one (issue 39). The lock is ``raw/.clusters.lock`` (``flock``; released when
    its process ends, however it ends).
    """
    raw.mkdir(parents=True, exist_ok=True)
    fd = os.open(raw / ".clusters.lock", os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _add_locked(raw: Path, base: Path, name: str, file: Path, fmt: Format, timezone: str, fields: tuple[str, ...] | None,
                replace: bool, delimiter: str, cluster_gpus: int | None,
                limits: ReadLimits | None) -> tuple[TraceFile, OwnTraceResult]:
    ext = ".csv" if fmt == "csv" else ".sacct"
    compression = file.suffix.lower() if file.suffix.lower() in COMPRESSED_SUFFIXES else ""
    target = base / f"{name}{ext}{compression}"
    existing = [p for p in trace_files(raw, name) if p.suffix != SIDECAR]
    if existing and not replace:
        raise TraceFileError(f"trace {name!r} exists ({existing[0]}); pass --replace to replace it")
    before = _identity(file)
    # Entered sidecar first, so that the data's temp file is renamed first when both blocks end without an error.
    with atomic_path(base / f"{name}{SIDECAR}") as sidecar_tmp, atomic_path(target, suffix=compression) as data_tmp:
        shutil.copyfile(file, data_tmp)
        if _identity(file) != before:
            raise TraceFileError(f"{file}: changed while it was being copied; add it again once it is complete")
        result = read_trace(data_tmp, name, fmt, timezone, fields, source_file=str(file), delimiter=delimiter, columns=SLOT_COLUMNS,
                            limits=limits)
        if cluster_gpus is not None:
            resolve(name, own_slots(result.table), cluster_gpus)
        sha = result.sha256 or sha256_of(data_tmp)
        options = {"format": fmt, "timezone": timezone, **({"fields": list(fields)} if fields else {}),
                   **({"delimiter": delimiter} if delimiter != slurm.DEFAULT_DELIMITER else {}),
                   **({"cluster_gpus": cluster_gpus} if cluster_gpus is not None else {}), "sha256": sha,
                   "source": str(file.resolve()), "added": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
        text = "# How to read this trace (written by `gpu-energy clusters add`; see the docs, \"Your own cluster\").\n"
        sidecar_tmp.write_text(text + "".join(f"{key} = {_toml_value(value)}\n" for key, value in options.items()))
    for stale in existing:
        if stale != target:
            stale.unlink(missing_ok=True)
    return TraceFile(name, target, fmt, timezone, fields, sha, delimiter, cluster_gpus), result


def remove_trace(raw: Path, name: str) -> list[Path]:
    """Remove the files of user trace ``name`` (data files, then the sidecar); the paths removed ([] when there was none)."""
    check_name(name)
    with traces_lock(raw):
        files = trace_files(raw, name)
        for path in files:
            path.unlink(missing_ok=True)
    return files


# ---------------------------------------------------------------------------------------------
# what the sensor does on a tick (Dagster-free; pipelines/defs/clusters/sensors.py wraps it)


@dataclass(frozen=True)
class TickPlan:
    """Partitions to add, runs to request (trace, run key, assets to run), files that cannot be used, and partitions to remove."""

    add: list[str]
    runs: list[tuple[str, str, tuple[str, ...]]]
    problems: list[str]
    remove: list[str]


#: What a run for a user trace materializes: the trace's partitions of the own-trace ingest (its file only; partitioned by
#: your own traces, so a run of their own). Its jobs and cluster size (which the sidecar may set) follow the ingest by their
#: automation conditions.
USER_TRACE_ASSETS: tuple[str, ...] = ("own_cluster_jobs", quarantine_key("own_cluster_jobs"), "own_cluster_traces")
#: The raw asset of each public trace's files.
PUBLIC_RAW: dict[str, str] = {"alibaba": "raw_zeus_traces", "itp": "raw_itp_traces", "elasticflow": "raw_itp_traces", "acme": "raw_acme_traces"}


def _newest_change_s(trace: TraceFile) -> float:
    times = [p.stat().st_mtime for p in (trace.path, trace.sidecar) if p.exists()]
    return max(times)


def plan_tick(raw: Path, mirror: Path | None, registered: set[str], materialized_at: Callable[[str], float | None]) -> TickPlan:
    """What the sensor does now.

    * every present trace (``present_traces``) that is not a partition yet is added, and every
      partition whose trace is not present (its files deleted, or no longer usable) is removed;
    * a run is requested for a trace whose ``cluster_workload_jobs`` partition was never
      materialized (``materialized_at(trace)`` is None), and for a user trace whose file or
      sidecar changed after that (its modification time is later). A public trace's run
      ingests its table first (its raw and ingest assets), a user trace's run ingests its own
      file (its partition of the own-trace tables; its jobs follow by automation). The run key names the trace and the change, so a run is requested once
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
    present = {*public, *(u.name for u in users)}
    return TickPlan(add, runs, problems, sorted(registered - present))
