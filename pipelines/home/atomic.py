"""Atomic file writes: a crash never leaves a half-written file where a reader can see it."""

from __future__ import annotations

import contextlib
import io
import os
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path

import polars as pl

from pipelines.home import interrupt


@contextlib.contextmanager
def atomic_path(target: Path, suffix: str = "") -> Iterator[Path]:
    """Yield a temp path beside ``target`` (ending in ``suffix``); on success fsync and rename it over ``target``.

    ``suffix``: for a temp file read before it is renamed, the suffix its reader goes by (``.zst``:
    ``clusters add`` reads its copy of a compressed file decompressed).

    The temp file lives in the same folder, so ``os.replace`` is atomic on POSIX. On any
    exception the temp file is removed and ``target`` is left as it was. After a Ctrl-C (``interrupt.requested``) nothing
    is published: a command whose ``KeyboardInterrupt`` was dropped somewhere raises it again here.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _create_temp(target, suffix)
    try:
        with interrupt.removed_on_abort(tmp):
            yield tmp
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            if interrupt.requested():
                raise KeyboardInterrupt
            os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _create_temp(target: Path, suffix: str = "") -> Path:
    """A new empty file ``.tmp_<name>.<random><suffix>`` beside ``target``, mode 0666 minus the umask.

    Its name never ends as a table's (``*.parquet``), so a reader globbing a folder never sees it.

    ``tempfile.mkstemp`` would make it 0600 whatever the umask, and the rename would carry that
    mode to the published file.
    """
    while True:
        tmp = target.with_name(f".tmp_{target.name}.{secrets.token_hex(6)}{suffix}")
        try:
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except FileExistsError:  # a 48-bit random name taken: try another
            continue
        return tmp


def write_parquet_atomic(df: pl.DataFrame, target: Path) -> Path:
    """Write ``df`` to ``target`` as zstd Parquet, atomically. Returns ``target``."""
    with atomic_path(target) as tmp:
        df.write_parquet(tmp, compression="zstd", statistics=True)
    return target


def parquet_bytes(df: pl.DataFrame) -> bytes:
    """``df`` as the Parquet file ``write_parquet_atomic`` writes (for ``pipelines.home.outputs.write_output``)."""
    buffer = io.BytesIO()
    df.write_parquet(buffer, compression="zstd", statistics=True)
    return buffer.getvalue()


def write_text_atomic(text: str, target: Path) -> Path:
    with atomic_path(target) as tmp:
        tmp.write_text(text)
    return target


def remove_stale_temp_files(folders: Iterable[Path], written_before: float | None) -> list[Path]:
    """Remove the temp files (``atomic_path``'s ``.tmp_*``) under ``folders`` last written before ``written_before`` (epoch s).

    ``None``: every one (no writer is running). A file renamed by its writer meanwhile is skipped.
    """
    removed = []
    for folder in folders:
        for path in folder.rglob(".tmp_*") if folder.is_dir() else ():
            with contextlib.suppress(FileNotFoundError):
                if path.is_file() and (written_before is None or path.stat().st_mtime < written_before):
                    path.unlink()
                    removed.append(path)
    return removed
