"""The one way out: every file a command writes where the user says (``whatif --html``, ``sweep --output``, ``measure
profile --out`` and its Zeus JSON, ``example-export FILE``) is checked by ``check_output`` and written by ``write_output``.

``check_output`` runs before any work and refuses, in one line naming the path and why:

* a path ending in ``/`` (it names a folder; ``Path`` would drop the slash and write the file without it);
* a symbolic link (``/dev/stdout`` is one: replacing it replaced the system's link; following it would write
  wherever it points): give the file's own path, or ``-`` for stdout;
* a folder, a device, a FIFO or a socket (``/dev/full`` was replaced by a regular file);
* a file with other hard links (replacing one name would part it from the others, an input among them);
* a path inside the data home's managed folders (``assets/``, ``figures/``, ``raw/``, ``.dagster_home``: a table, a
  figure or an upstream file overwritten by hand would be trusted) or its marker (``gpu-energy-home.toml``);
* one of the command's own inputs (``whatif X --html X``);
* an existing file that is not a previous output of the same kind (``OutputKind``, recognised by its content: the
  report's first bytes, a Parquet table's columns): ``--html victim.csv`` replaced the user's CSV;
* a path whose folder does not exist unless ``make_parents`` (the commands' ``--parents``).

``-`` means stdout, explicitly (a file named ``-`` is ``./-``). ``write_output`` writes a new file or replaces the
previous output atomically (``pipelines.home.atomic.atomic_path``: temp file beside it + rename), checking the
target again just before the rename.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipelines.home.atomic import atomic_path
from pipelines.home.paths import HOME_MARKER

#: The data home's folders only materializations, ``fetch`` and ``clusters add`` write.
MANAGED = ("assets", "figures", "raw", ".dagster_home")
#: The name that means stdout.
STDOUT = "-"
#: Bytes of an existing file a recogniser reads at most (``OutputKind.starting_with``).
HEAD_BYTES = 4096


class OutputRefused(ValueError):
    """A path a command must not write (the message is one line naming it and why)."""


@dataclass(frozen=True)
class OutputKind:
    """What a command writes (``name``, for messages) and how an earlier one is told by its content.

    ``recognise(path)``: whether the regular file ``path`` (not a link) is such an output; it reads no more than it
    needs (a head, a Parquet footer) and returns False on any error.
    """

    name: str
    recognise: Callable[[Path], bool]

    @classmethod
    def starting_with(cls, name: str, *prefixes: bytes) -> OutputKind:
        """A kind told by its first bytes: one of ``prefixes`` (each at most ``HEAD_BYTES``)."""
        return cls(name, lambda path: read_head(path, max(map(len, prefixes))).startswith(prefixes))

    @classmethod
    def parquet_with_columns(cls, name: str, columns: Sequence[str]) -> OutputKind:
        """A kind told by being a Parquet file whose columns are ``columns``, in that order."""
        return cls(name, lambda path: _parquet_columns(path) == list(columns))


@dataclass(frozen=True)
class Output:
    """Where a command writes: ``path``, or stdout (``path`` None); ``shown``: the option and the path, for messages."""

    path: Path | None
    kind: OutputKind
    shown: str

    @property
    def is_stdout(self) -> bool:
        return self.path is None


def read_head(path: Path, n: int) -> bytes:
    """The first ``n`` (<= ``HEAD_BYTES``) bytes of the regular file ``path``, never following a link; b"" on any error."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                return os.read(fd, min(n, HEAD_BYTES))
        finally:
            os.close(fd)
    return b""


def _parquet_columns(path: Path) -> list[str] | None:
    """The column names of the Parquet file ``path``, or None where it is not one (magic bytes checked first)."""
    if read_head(path, 4) != b"PAR1":
        return None
    try:
        with open(path, "rb") as fh:
            fh.seek(-4, os.SEEK_END)
            if fh.read(4) != b"PAR1":
                return None
        import polars as pl

        return list(pl.read_parquet_schema(path))
    except Exception:  # any file polars cannot read as Parquet is not ours
        return None


def check_output(path: str | Path, option: str, home: Path, *, kind: OutputKind, inputs: Sequence[Path] = (),
                 make_parents: bool = False, allowed: Sequence[Path] = ()) -> Output:
    """Where the command may write ``path`` (its missing parent folders made when ``make_parents``); else
    ``OutputRefused``.

    ``path``: as the user gave it (a ``str`` keeps a trailing ``/``); ``-`` is stdout. ``option``: the flag that named it
    (``--html``), for the message. ``home``: the data home, whose ``MANAGED`` folders, marker (and ``$DAGSTER_HOME``)
    are refused, except under ``allowed`` (``measure --out`` writes raw/measured/). ``kind``: an existing file is
    replaced only if it is one. ``inputs``: files or folders the command reads; ``path`` may be none of them nor inside
    one.
    """
    raw = os.fspath(path)
    shown = f"{option} {raw}"
    if raw == STDOUT:
        return Output(None, kind, shown)
    if raw.endswith(("/", os.sep)) or Path(raw).name in ("", ".", ".."):
        raise OutputRefused(f"{shown}: names a folder (it ends in /); give a file name")
    target = Path(raw)
    mode = _check_existing(target, kind, shown)
    real = Path(os.path.realpath(target.parent)) / target.name
    if not any(real.is_relative_to(os.path.realpath(a)) for a in allowed):
        managed = [Path(os.path.realpath(home / name)) for name in MANAGED]
        if os.environ.get("DAGSTER_HOME"):
            managed.append(Path(os.path.realpath(os.environ["DAGSTER_HOME"])))
        for folder in managed:
            if real.is_relative_to(folder):
                raise OutputRefused(f"{shown}: is inside {folder}, which only the pipeline writes; write it elsewhere")
    if real == Path(os.path.realpath(home)) / HOME_MARKER:
        raise OutputRefused(f"{shown}: is the data home's marker; write it elsewhere")
    for given in inputs:
        source = Path(os.path.realpath(given))
        if real == source or real.is_relative_to(source):
            raise OutputRefused(f"{shown}: is {'an input' if real == source else 'inside an input'} of this command ({given})")
    if mode is not None and not kind.recognise(target):
        raise OutputRefused(f"{shown}: exists and is not a {kind.name}; give a new name (or remove it first)")
    if not target.parent.is_dir():
        if target.parent.exists():
            raise OutputRefused(f"{shown}: {target.parent} is not a folder")
        if not make_parents:
            raise OutputRefused(f"{shown}: the folder {target.parent} does not exist (--parents makes it)")
        target.parent.mkdir(parents=True, exist_ok=True)
    return Output(target, kind, shown)


def _check_existing(target: Path, kind: OutputKind, shown: str) -> int | None:
    """The mode of ``target`` (None: there is none), if it is a file a command may replace; else ``OutputRefused``."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OutputRefused(f"{shown}: cannot be checked ({exc.strerror})") from exc
    if stat.S_ISLNK(st.st_mode):
        raise OutputRefused(f"{shown}: is a symbolic link; give the file's own path, or - for stdout")
    if stat.S_ISDIR(st.st_mode):
        raise OutputRefused(f"{shown}: is a folder; give a file name, e.g. {target / 'out'}")
    if not stat.S_ISREG(st.st_mode):
        raise OutputRefused(f"{shown}: is not a regular file (a device, FIFO or socket); give a file name, or - for stdout")
    if st.st_nlink > 1:
        raise OutputRefused(f"{shown}: has {st.st_nlink - 1} other hard link(s); give a new name")
    return st.st_mode


def write_output(output: Output, data: bytes) -> Path | None:
    """Write ``data`` where ``output`` says (from ``check_output``): stdout, or the file, atomically; the path written.

    The file is checked again (``_check_existing``) just before the rename: a link, a device or another file put there
    meanwhile is refused, and the temp file removed.
    """
    if output.path is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return None
    with atomic_path(output.path) as tmp:
        tmp.write_bytes(data)
        if _check_existing(output.path, output.kind, output.shown) is not None and not output.kind.recognise(output.path):
            raise OutputRefused(f"{output.shown}: exists and is not a {output.kind.name}; give a new name (or remove it first)")
    return output.path
