"""Reading a source file that may be xz-compressed, streamed, with a cap on what it expands to.

A few kilobytes of xz can expand to gigabytes (a "decompression bomb"), so the stream is
decompressed in chunks and stopped as soon as the output passes the cap, with an error naming the
file and the cap, before the memory is spent.
"""

from __future__ import annotations

import lzma
from pathlib import Path

from pipelines.ingest.common import IngestError

#: Most bytes one compressed source may expand to (1 GiB; the upstream alibaba_groups.csv is far smaller).
MAX_DECOMPRESSED_BYTES = 1 << 30
_READ = 1 << 20  # compressed bytes read at a time


def read_compressed(path: Path, *, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """The bytes of ``path``, decompressed when its name ends in ``.xz``.

    Raises ``IngestError`` naming the file for a truncated or corrupt stream and for one that
    expands past ``limit`` bytes; concatenated xz streams are read one after the other.
    """
    try:
        if path.suffix != ".xz":
            return path.read_bytes()
        return _decompress_xz(path, limit)
    except OSError as exc:
        raise IngestError(path.name, f"unreadable file: {exc}") from exc


def _decompress_xz(path: Path, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    decompressor = lzma.LZMADecompressor()
    pending = b""
    with open(path, "rb") as fh:
        while True:
            if decompressor.eof:
                pending = decompressor.unused_data + pending
                if not pending.strip(b"\0"):  # stream padding or nothing: done
                    pending = fh.read(_READ)
                    if not pending.strip(b"\0"):
                        break
                pending = pending.lstrip(b"\0")
                decompressor = lzma.LZMADecompressor()
            if not pending and decompressor.needs_input:
                pending = fh.read(_READ)
                if not pending:
                    raise IngestError(path.name, "truncated or corrupt xz stream: it ends before its end marker")
            try:
                out = decompressor.decompress(pending, max_length=limit + 1 - size)
            except lzma.LZMAError as exc:
                raise IngestError(path.name, f"truncated or corrupt xz stream: {exc}") from exc
            pending = b""
            size += len(out)
            if size > limit:
                raise IngestError(
                    path.name,
                    f"decompresses to more than {limit:,} bytes (the cap, pipelines.ingest.compressed.MAX_DECOMPRESSED_BYTES); "
                    "refusing it as a possible decompression bomb",
                )
            chunks.append(out)
    return b"".join(chunks)
