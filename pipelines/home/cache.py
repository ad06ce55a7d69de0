"""Kept data under the data home's ``cache/``: entries published whole, listed, cleared, and bounded in size.

An entry is a folder ``cache/<kind>/<key>/`` (``key``: a hex digest of what the entry was made from) holding a
``meta.json`` and data files. It is written into a temp folder beside it and renamed into place (``publish``), so a
reader sees a whole entry or none; a folder without ``meta.json`` (a run killed before the rename) is no entry and is
removed by the next ``bound``. ``meta.json``'s modification time is the entry's last use (``touch`` on reuse): past
the size bound the least recently used entries are dropped first, never the one just written or used.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.home.paths import ProjectPaths

#: The bound on the bytes kept under ``cache/`` by default (``$GPU_ENERGY_CACHE_BYTES`` sets another).
DEFAULT_MAX_BYTES = 4 << 30
MAX_BYTES_ENV = "GPU_ENERGY_CACHE_BYTES"
#: A folder that holds the kept data instead of the data home's ``cache/`` (a faster disk; the tests' temp folders).
ROOT_ENV = "GPU_ENERGY_CACHE"
META = "meta.json"
TEMP_PREFIX = ".tmp-"


@dataclass(frozen=True)
class Entry:
    """One kept entry: its folder, its ``meta.json``, its size (bytes) and last use (s since 1970)."""

    path: Path
    meta: dict[str, Any]
    size: int
    used_s: float

    @property
    def kind(self) -> str:
        return self.path.parent.name

    @property
    def key(self) -> str:
        return self.path.name


def root(home: Path) -> Path:
    """Where kept data lives: ``$GPU_ENERGY_CACHE``, else the data home's ``cache/`` (``ProjectPaths.cache``)."""
    env = os.environ.get(ROOT_ENV)
    return Path(env).expanduser().resolve() if env else ProjectPaths(home).cache


def max_bytes() -> int:
    """The size bound: ``$GPU_ENERGY_CACHE_BYTES`` (bytes, an integer >= 0), else ``DEFAULT_MAX_BYTES``."""
    value = os.environ.get(MAX_BYTES_ENV)
    if value is None or not value.strip():
        return DEFAULT_MAX_BYTES
    try:
        bound = int(value)
    except ValueError:
        raise ValueError(f"${MAX_BYTES_ENV}={value!r}: give a number of bytes (an integer >= 0)") from None
    if bound < 0:
        raise ValueError(f"${MAX_BYTES_ENV}={value!r}: give a number of bytes (an integer >= 0)")
    return bound


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def load(folder: Path) -> Entry | None:
    """The entry in ``folder``; None when there is none (absent, or no readable ``meta.json``)."""
    try:
        meta_path = folder / META
        meta = json.loads(meta_path.read_text())
        return Entry(folder, meta, _size(folder), meta_path.stat().st_mtime)
    except (OSError, ValueError):
        return None


def touch(entry: Entry) -> None:
    """Mark ``entry`` used now (it is dropped last)."""
    with contextlib.suppress(OSError):
        os.utime(entry.path / META)


def entries(root: Path) -> list[Entry]:
    """Every entry under ``root`` (``cache/``), least recently used first."""
    found = [e for kind in sorted(root.glob("*")) if kind.is_dir() for folder in sorted(kind.glob("*"))
             if not folder.name.startswith(TEMP_PREFIX) and (e := load(folder)) is not None]
    return sorted(found, key=lambda e: (e.used_s, str(e.path)))


@contextlib.contextmanager
def publish(target: Path, meta: dict[str, Any]) -> Iterator[Path]:
    """Yield a temp folder beside ``target``; on success write ``meta`` there and rename the folder to ``target``.

    On any exception the temp folder is removed and ``target`` is left as it was. If ``target`` appeared meanwhile (another
    run kept the same data), that one is kept and the temp folder removed; a ``target`` that is no entry (its ``meta.json``
    unreadable) is replaced.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f"{TEMP_PREFIX}{target.name}-{os.getpid()}-{time.monotonic_ns()}"
    tmp.mkdir()
    try:
        yield tmp
        (tmp / META).write_text(json.dumps(meta, indent=1, sort_keys=True))
        try:
            os.rename(tmp, target)
        except OSError:  # target exists: another run's entry of the same key, as good as ours, or a damaged one: replaced
            if load(target) is None:
                shutil.rmtree(target, ignore_errors=True)
                os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bound(root: Path, limit: int, keep: Path | None = None) -> list[Entry]:
    """Drop the least recently used entries under ``root`` until they hold at most ``limit`` bytes, never ``keep``; also
    remove temp folders older than an hour (a run killed mid-write). Returns the entries dropped."""
    for stale in root.glob(f"*/{TEMP_PREFIX}*"):
        with contextlib.suppress(OSError):
            if time.time() - stale.stat().st_mtime > 3600:
                shutil.rmtree(stale, ignore_errors=True)
    kept = entries(root)
    total = sum(e.size for e in kept)
    dropped = []
    for entry in kept:
        if total <= limit:
            break
        if keep is not None and entry.path == keep:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        total -= entry.size
        dropped.append(entry)
    return dropped


def clear(root: Path, kind: str | None = None) -> list[Entry]:
    """Remove every entry under ``root`` (of ``kind`` only, if given); returns them."""
    gone = [e for e in entries(root) if kind is None or e.kind == kind]
    for entry in gone:
        shutil.rmtree(entry.path, ignore_errors=True)
    return gone
