"""Reading a source file that may be compressed (``.gz``, ``.xz``, ``.zst``), streamed, with a cap on what it expands to.

A few kilobytes of compressed data can expand to gigabytes (a "decompression bomb"), so a stream
is decompressed in chunks and stopped as soon as the output passes the cap, with an error naming
the file and the cap, before the memory is spent. Every format is read to its end marker: a file
cut short (an interrupted copy) is an error naming the file, never a silently shorter table.
Concatenated streams (``cat a.gz b.gz``, multi-frame ``.zst``, multi-stream ``.xz``) are read one
after the other; null bytes between or after streams are padding.

``decompressed_chunks`` yields the bytes; ``read_bounded`` joins them under a stated bound (what
``pipelines.ingest.text_reader.read_bytes``, the one read of a table read whole, calls); ``plain_file`` spools a
large one (a cluster export) into a temporary file, so that the readers that scan a file by path read it as they
read an uncompressed one, in bounded memory. A stream (a FIFO, ``whatif <(sacct ...)``) is spooled the same way, read
once from its start: its compression, if any, is told by its first bytes (no seek), since it has no suffix. A stream (a FIFO, a device,
stdin) is read to ``limit`` bytes at most, compressed or not (``/dev/zero`` has no end), and never waits longer than
``STREAM_IDLE_S`` for a byte (a FIFO no process writes to). The spool is removed on every exit: its ``finally``, a
Ctrl-C's watchdog, SIGTERM, SIGHUP and the interpreter's exit (``pipelines.home.interrupt.removed_on_abort``).
"""

from __future__ import annotations

import contextlib
import hashlib
import lzma
import math
import os
import select
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pipelines.home import interrupt
from pipelines.ingest.common import IngestError

#: Most bytes a compressed export or a stream may expand to by default (1 GiB; ``--max-bytes`` raises it). A table read
#: whole has its own, smaller bound (``pipelines.ingest.text_reader.MAX_TABLE_BYTES``).
MAX_DECOMPRESSED_BYTES = 1 << 30
#: Most seconds a stream (a FIFO, a device, stdin) may go without a byte before its read stops with one line: a FIFO no
#: process writes to never ends by itself (sacct may think for minutes before its first line).
STREAM_IDLE_S = 300.0
#: The compressed formats read, by file suffix.
COMPRESSED_SUFFIXES: dict[str, str] = {".gz": "gzip", ".xz": "xz", ".zst": "zstd"}
_READ = 1 << 20  # compressed bytes read from the file at a time
_OUT = 1 << 20  # most decompressed bytes asked for at a time (gzip, xz)
#: zstd's decompressor returns all it can for its input (no output bound), and one 4-byte block can expand
#: to 128 KiB: its input is fed in pieces this small, so one call overshoots the cap by at most 64 MiB.
_ZSTD_PIECE = 2048


#: The first bytes of each compressed format (what ``file`` reads), for a stream without a suffix.
MAGIC: dict[bytes, str] = {b"\x1f\x8b": "gzip", b"\xfd7zXZ\x00": "xz", b"\x28\xb5\x2f\xfd": "zstd"}


def compression_of(path: Path) -> str | None:
    """The compression of ``path`` by its suffix (``gzip``, ``xz``, ``zstd``), or None for a plain file."""
    return COMPRESSED_SUFFIXES.get(path.suffix.lower())


def is_stream(path: Path) -> bool:
    """``path`` is there but is no regular file (a FIFO, ``/dev/fd/N`` of a process substitution, a character device):
    it can be read once, from its start, and not sought."""
    try:
        return path.exists() and not path.is_file() and not path.is_dir()
    except OSError:
        return False


class _Peeked:
    """A binary file whose first bytes were read to tell its format, read again from its start without a seek; every
    byte read is hashed into ``digest`` (when given)."""

    def __init__(self, fh: Any, head: bytes, digest: Any = None) -> None:
        self._fh, self._head, self._digest = fh, head, digest

    def read(self, size: int) -> bytes:
        if self._head:
            piece, self._head = self._head, b""
        else:
            piece = self._fh.read(size)
        if self._digest is not None:
            self._digest.update(piece)
        return bytes(piece)


def uncompressed_name(path: Path) -> Path:
    """``path`` without its compression suffix (``cluster.sacct.zst`` -> ``cluster.sacct``)."""
    return path.with_suffix("") if compression_of(path) else path


class _Zstd:
    """zstandard's decompression object behind the interface of ``lzma``'s and ``zlib``'s (``max_length`` is not honoured)."""

    def __init__(self) -> None:
        import zstandard

        self._obj: Any = zstandard.ZstdDecompressor().decompressobj()
        self._error: type[Exception] = zstandard.ZstdError

    @property
    def eof(self) -> bool:
        return bool(self._obj.eof)

    @property
    def unused_data(self) -> bytes:
        return bytes(self._obj.unused_data)

    def decompress(self, data: bytes, max_length: int = -1) -> bytes:
        try:
            return bytes(self._obj.decompress(data))
        except self._error as exc:
            raise ValueError(str(exc)) from exc


def _factory(kind: str) -> Callable[[], Any]:
    """A new decompression object of ``kind``: ``eof``, ``unused_data`` and ``decompress(data, max_length)``."""
    if kind == "xz":
        return lzma.LZMADecompressor
    if kind == "gzip":
        return lambda: zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    return _Zstd


def decompressed_chunks(path: Path, *, limit: int = MAX_DECOMPRESSED_BYTES, name: str | None = None,
                        digest: Any = None) -> Iterator[bytes]:
    """The decompressed bytes of ``path`` (by its suffix, or a stream's first bytes; a plain file as it is), in chunks,
    never more than ``limit`` in all (a plain file: no limit). ``digest`` (a hashlib object) takes every byte read as it
    is on disk.

    Raises ``IngestError`` naming the file (``name``, default its name) for a truncated or corrupt
    stream, one that expands past ``limit`` bytes, and an unreadable file.
    """
    display = name or path.name
    stream = is_stream(path)
    try:
        with _Stream(path, display) if stream else open(path, "rb") as raw:
            head = raw.read(8)
            kind = compression_of(path) or (next((k for m, k in MAGIC.items() if head.startswith(m)), None) if stream else None)
            fh = _Peeked(raw, head, digest)
            if kind is None:
                size = 0
                while piece := fh.read(_READ):
                    size += len(piece)
                    if stream and size > limit:  # /dev/zero, `yes |`: a stream has no size to trust
                        raise IngestError(display, f"a stream of more than {limit:,} bytes (the bound on what a FIFO, device or "
                                                   "stdin is read to; --max-bytes raises it)")
                    yield piece
                return
            yield from _decompress(fh, kind, limit, display)
    except OSError as exc:
        raise IngestError(display, f"unreadable file: {exc}") from exc


class _Stream:
    """A non-regular file (a FIFO, a device, stdin) read without ever blocking for longer than ``STREAM_IDLE_S``.

    A FIFO no process opens for writing would block ``open`` and then ``read`` forever: it is opened non-blocking, and
    each ``read`` waits (``poll``) at most ``STREAM_IDLE_S`` seconds for a byte, else stops with one ``IngestError``
    line naming the bound. A writer that closes ends the stream (POLLHUP, then an empty read).
    """

    def __init__(self, path: Path, display: str) -> None:
        self._display, self._idle_s = display, STREAM_IDLE_S
        self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLIN | select.POLLPRI)

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self._fd)

    def read(self, size: int) -> bytes:
        deadline = time.monotonic() + self._idle_s
        while (left := deadline - time.monotonic()) > 0:
            if not self._poll.poll(max(1, math.ceil(left * 1000))):
                continue  # no writer yet (Linux reports no event), or one that writes nothing yet
            try:
                return os.read(self._fd, size)
            except BlockingIOError:
                continue
        raise IngestError(self._display, f"no byte in {self._idle_s:g} s (the wall-time bound on waiting for a FIFO, device or "
                                         "stdin: is a process writing to it?)")


def _decompress(fh: Any, kind: str, limit: int, display: str) -> Iterator[bytes]:
    make = _factory(kind)
    errors: tuple[type[Exception], ...] = (lzma.LZMAError, zlib.error, ValueError, EOFError)
    piece = _ZSTD_PIECE if kind == "zstd" else _READ
    bounded = kind != "zstd"  # lzma and zlib bound their output by max_length and keep the input they did not use
    decompressor = make()
    pending, exhausted, size = b"", False, 0
    while True:
        if decompressor.eof:  # a stream ended: padding, the end of the file, or another stream
            pending = decompressor.unused_data + pending
            while not pending.strip(b"\0") and not exhausted:
                more = fh.read(_READ)
                exhausted = not more
                pending = pending.lstrip(b"\0") + more
            pending = pending.lstrip(b"\0")
            if not pending:
                return
            decompressor = make()
        if not pending and not exhausted:
            pending = fh.read(_READ)
            exhausted = not pending
        if getattr(decompressor, "needs_input", True):
            feed, pending = pending[:piece], pending[piece:]
        else:  # lzma holds input it has not expanded yet: more would pile up behind it
            feed = b""
        try:
            # _OUT at a time: 1 MiB of xz input expanded to the whole cap in one call (2.2 GB held for a 1 GiB cap)
            out = decompressor.decompress(feed, min(_OUT, limit + 1 - size)) if bounded else decompressor.decompress(feed)
        except errors as exc:
            raise IngestError(display, f"truncated or corrupt {kind} stream: {exc}") from exc
        tail = getattr(decompressor, "unconsumed_tail", b"")
        if tail:
            pending = tail + pending
        if not feed and not out and not decompressor.eof:
            raise IngestError(display, f"truncated or corrupt {kind} stream: it ends before its end marker")
        size += len(out)
        if size > limit:
            raise IngestError(
                display,
                f"decompresses to more than {limit:,} bytes (the cap on decompressed size; --max-bytes raises it); "
                "refusing it as a possible decompression bomb",
            )
        if out:
            yield out


def read_at_most(path: Path, n: int, *, name: str | None = None) -> bytes:
    """The first ``n`` bytes of ``path`` as stored (all of it if shorter); a stream waits ``STREAM_IDLE_S`` at most for a
    byte. ``IngestError`` for an unreadable file."""
    display = name or str(path)
    data = bytearray()
    try:
        with _Stream(path, display) if is_stream(path) else open(path, "rb") as fh:
            while len(data) < n and (piece := fh.read(min(_READ, n - len(data)))):
                data += piece
    except OSError as exc:
        raise IngestError(display, f"unreadable file: {exc}") from exc
    return bytes(data)


def read_bounded(path: Path, limit: int, *, what: str, name: str | None = None) -> bytes:
    """The bytes of ``path`` (decompressed by its suffix, a stream's as read: ``decompressed_chunks``), ``limit`` at most.

    A plain regular file larger than ``limit`` is refused by its size before a byte is read; ``what`` names the bound in
    the one ``IngestError`` line (``a grid or price series``).
    """
    display = name or str(path)
    with contextlib.suppress(OSError):
        if compression_of(path) is None and path.is_file() and path.stat().st_size > limit:
            raise IngestError(display, f"larger than {limit:,} bytes (the bound on {what})")
    try:
        return b"".join(decompressed_chunks(path, limit=limit, name=display))
    except IngestError as exc:  # the bound is not --max-bytes (an export's) here: say which it is
        raise IngestError(display, exc.message.replace("--max-bytes raises it", f"the bound on {what}")) from None


@contextlib.contextmanager
def plain_file(path: Path, *, limit: int = MAX_DECOMPRESSED_BYTES, name: str | None = None,
               digest: bool = True) -> Iterator[tuple[Path, str | None]]:
    """(a path to the uncompressed bytes of ``path``, the sha256 of ``path`` as it is on disk, or None without ``digest``).

    A plain file is yielded as it is (its sha256 is left to the reader: None). A compressed one, or
    a stream (``is_stream``), is read once into a temporary file (removed on exit), under ``limit``
    when compressed, while the bytes read are hashed, so the sha256 is that of the file as given
    (what ``clusters add`` records).
    """
    if compression_of(path) is None and not is_stream(path):
        yield path, None
        return
    digester = hashlib.sha256() if digest else None
    fd, tmp = tempfile.mkstemp(prefix="gpu-energy-", suffix=uncompressed_name(path).suffix)
    try:
        with interrupt.removed_on_abort(Path(tmp)):  # a Ctrl-C's watchdog ends the process without this finally
            with os.fdopen(fd, "wb") as out:
                for chunk in decompressed_chunks(path, limit=limit, name=name, digest=digester):
                    out.write(chunk)
            yield Path(tmp), digester.hexdigest() if digester is not None else None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
