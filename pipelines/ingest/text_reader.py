"""The reader engine of the text tables the package reads: bytes -> bounded blocks of lines.

A file (or bytes) is read in blocks of whole lines (``CHUNK_BYTES``), so memory stays bounded for exports of millions
of lines, with every bound of ``ReadLimits`` checked as the bytes arrive: lines per file, bytes of one line (the
header's included), bytes of one field (a line with a longer field is withheld before it is parsed), bytes a compressed
file expands to. Lines are counted by one rule (``records.line_count``: a last line without a line break is a line),
independently of any parse, and a line that is not UTF-8 is found by one check (``records.utf8_error``).

``sacct`` exports and job logs are parsed block by block (``pipelines.ingest.slurm``, ``pipelines.ingest.joblog``; what
they share after the lines is ``pipelines.ingest.own_cluster``). A table read whole (a public trace, a user's Zeus
trace folder, a measured profile: ``pipelines.ingest.common``; a grid or price series, a group table, a ZeusMonitor log)
comes from one bounded read (``read_bytes``: ``MAX_TABLE_BYTES``, decompressed by its suffix) and is read through the
same blocks under the same bounds (``bounded_table``, ``read_table``); a file of a folder that cannot be read at all is
one quarantine row (``refused_file``).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.contracts.limits import MAX_NAME_CHARS
from pipelines.ingest.common import (
    LINE,
    IngestError,
    IngestResult,
    TableSpec,
    cut_raw,
    empty_table,
    quarantine_frame,
    raw_text,
)
from pipelines.ingest.compressed import COMPRESSED_SUFFIXES, MAGIC, MAX_DECOMPRESSED_BYTES, read_at_most, read_bounded
from pipelines.ingest.records import line_count, split_fields, text_lines, utf8_error

#: Lines are read in blocks of about this many bytes (whole lines; a longer line makes its block longer).
CHUNK_BYTES = 32 << 20
#: And at most this many lines (a block of short lines is cut further): a block's frames cost by the line, not by the byte
#: (12M delimiter-only lines of 14 bytes: 2.4M lines in a 32 MB block, 2.9 GB peak). An export's lines (about 170 bytes)
#: fill a block's bytes first.
BLOCK_LINES = 1 << 18
TEXT = "_text"  # a line's text, without its line break
RAW = "_raw"  # the raw line kept beside a parsed row, for the quarantine
#: The byte order mark some tools (Excel, PowerShell) write before UTF-8 text: not part of the header's first name.
BOM = "\ufeff"


@dataclass(frozen=True)
class ReadLimits:
    """How much of an own-trace file is read at most; past a bound the read stops with one ``IngestError`` line.

    Bytes alone do not bound memory: a 92 kB ``.gz`` of 20,971,520 empty lines held 3.3 GB, and one
    900 MB line 12.9 GB (issue 39). ``rows``: lines of the file (header included); ``line_bytes``:
    bytes of one line; ``decompressed_bytes``: bytes a compressed file may expand to. Each has a flag
    in ``whatif`` and ``clusters add`` (``--max-rows``, ``--max-line-bytes``, ``--max-bytes``).

    ``field_bytes``: bytes of one field. A data line with a longer field is quarantined as it is read, before
    polars sees it (``Source.bound_fields``), and a header with one is refused: no text field of the table
    is longer than 256 characters (``pipelines.contracts.limits``), and 1,401 lines of a 900 kB JobName
    each, every line under ``line_bytes``, peaked at 8.5 GB when they reached the parse (issue 54).

    ``rows``' default (5,000,000 lines) is the memory guard of the reads that hold a whole trace: ``clusters add``, and
    the own-cluster Dagster asset that materializes what it added (every column of the contract, and the quarantine read
    whole, grow with the lines); ``clusters add`` keeps it so that a trace it adds is one the asset reads. ``whatif``,
    whose parse holds a block of lines at a time and keeps only its report's columns, bounds the lines as a limit on work
    instead (``pipelines.clusters.kept.WHATIF_LIMITS``: 100,000,000).
    """

    rows: int = 5_000_000
    line_bytes: int = 1 << 20
    decompressed_bytes: int = MAX_DECOMPRESSED_BYTES
    field_bytes: int = 1 << 16
    #: Whether the command has the flags that raise the bounds (``whatif``, ``clusters add``): the messages name them.
    flags: bool = True

    def check_rows(self, name: str, lines: int) -> None:
        if lines > self.rows:
            raise IngestError(name, f"more than {self.rows:,} lines (the bound on rows per file{self._hint('--max-rows')})")

    def check_line(self, name: str, line: int, length: int) -> None:
        if length > self.line_bytes:
            raise IngestError(name, f"a line longer than {self.line_bytes:,} bytes (the bound on one line"
                                    f"{self._hint('--max-line-bytes')})", line=line)

    def _hint(self, flag: str) -> str:
        return f"; {flag} raises it" if self.flags else ""


#: The bounds on a table a command reads whole without flags to raise them (a public trace, a user's Zeus trace folder,
#: a measured profile): with ``MAX_TABLE_BYTES``, they keep its parse under 1.5 GB (``MAX_TABLE_BYTES``). The largest
#: public tables are well within them: AcmeTrace holds 880,740 jobs in two files, the Alibaba PAI trace 1.26 M.
TABLE_LIMITS = ReadLimits(rows=2_000_000, flags=False)
#: The bounds on a small table (a grid or price series, a group table): every line, the header's included, at most
#: 64 KiB (a header of millions of columns held 7.3 GB for 83 s in polars before its error; issue 54).
SMALL_TABLE_LIMITS = ReadLimits(line_bytes=64 << 10, flags=False)


def _at_most_lines(pieces: Iterator[bytes], lines: int) -> Iterator[bytes]:
    """``pieces`` (each ending at a line break, but the last), each cut after every ``lines``-th line break."""
    for piece in pieces:
        if piece.count(b"\n") <= lines:
            yield piece
            continue
        view, at = memoryview(piece), 0
        for cut in np.flatnonzero(np.frombuffer(piece, np.uint8) == ord("\n"))[lines - 1::lines].tolist():
            yield bytes(view[at:cut + 1])
            at = cut + 1
        if at < len(piece):
            yield bytes(view[at:])


def empty_rejected() -> pl.DataFrame:
    return pl.DataFrame(schema={LINE: pl.Int64(), RAW: pl.String(), "column": pl.String(), "reason": pl.String()})


def check_header_text(head: str, name: str, expected: str) -> None:
    """Refuse a first line that is not UTF-8 text (a binary file, or one compressed another way): ``IngestError`` at line 1.

    ``head`` was decoded with replacement characters; a header (sacct's, a job log's) is ASCII, so one
    is never real. ``expected`` names what the file should be (``a sacct export``).
    """
    at = head.find("\ufffd")
    if at < 0:
        return
    inner = next((kind for start, kind in _COMPRESSED_STARTS.items() if head.startswith(start)), None)
    if inner is not None and name.lower().endswith(tuple(COMPRESSED_SUFFIXES)):
        raise IngestError(name, f"its content is compressed again ({inner} inside the file's own compression): decompress "
                          "it once (e.g. gunzip, unxz, unzstd) and give the result", line=1)
    raise IngestError(name, f"not UTF-8 text (an undecodable byte at character {at + 1}): not {expected}; a compressed "
                      "export must end in .gz, .xz or .zst", line=1)


#: The compressions' magic numbers (``compressed.MAGIC``) as a first line decoded with replacement characters reads them.
_COMPRESSED_STARTS = {magic.decode("utf-8", "replace"): kind for magic, kind in MAGIC.items()}


#: Most bytes of a table read whole (a public trace, a user's Zeus trace folder, a group table), as stored or as it
#: decompresses to. Bytes alone do not bound a parse's memory (typed columns, a quarantine row per bad record: about
#: 0.5 kB a row past its bytes), so ``TABLE_LIMITS`` bounds its lines too. Measured (/usr/bin/time, docs/benchmarks.md):
#: 2,000,000 lines in 133 MB, every one quarantined, quoted (the slow path) peaked at 1.32 GiB; a 1.0 GB group table
#: of short lines had peaked at 2.12 GB under the former 1 GiB cap.
MAX_TABLE_BYTES = 128 << 20


def read_bytes(path: Path, name: str, *, max_bytes: int | None = None, what: str = "a table read whole") -> bytes:
    """The one way a path becomes the bytes of a text table read whole: ``max_bytes`` at most (default
    ``MAX_TABLE_BYTES``), as stored or decompressed (by its suffix; a stream's by its first bytes), a larger plain file
    refused by its size before a byte is read (``compressed.read_bounded``); ``what`` names the bound in the one
    ``IngestError`` line."""
    return read_bounded(path, MAX_TABLE_BYTES if max_bytes is None else max_bytes, what=what, name=name)


def read_table(path: Path, name: str, limits: ReadLimits = TABLE_LIMITS, *, max_bytes: int | None = None,
               what: str = "a table read whole", separator: str = ",", quote_char: str | None = '"') -> bytes:
    """``read_bytes`` of ``path``, a table that is all or nothing (a profile, a series, a group table), once every bound
    of ``limits`` holds for every line (``bounded_table``): a field over the bound, the header's or a data line's, is one
    ``IngestError`` line naming its line and column (the csv module had raised ``_csv.Error`` past its 128 kB)."""
    data, withheld = bounded_table(read_bytes(path, name, max_bytes=max_bytes, what=what), name, separator=separator,
                                   quote_char=quote_char, limits=limits)
    if withheld.height:
        first = withheld.row(0, named=True)
        reason = first["reason"].removeprefix(f"{first['column']}: ").replace("; the line is not parsed", "")
        raise IngestError(name, reason, line=first[LINE], column=first["column"])
    return data


def bounded_table(data: bytes, name: str, *, separator: str, quote_char: str | None, columns: Mapping[str, str] | None = None,
                  limits: ReadLimits = TABLE_LIMITS) -> tuple[bytes, pl.DataFrame]:
    """(``data``, a delimited table read whole, once the engine has read it under every bound of ``limits``; the rejected
    rows of its lines withheld by the bound on one field).

    As for an export read in blocks: more lines than ``rows``, a line over ``line_bytes`` or a header field over
    ``field_bytes`` is one ``IngestError`` line; a data line with a field over ``field_bytes`` is emptied in the bytes
    returned (the parse sees a blank line) and its row (``Source.withheld``) names the field's column: the header's name,
    through ``columns`` (source header name -> table column) where given. ``data`` itself is returned when no line is
    withheld (the common case: no copy).
    """
    header = Source(data, name, digest=False, limits=limits).first_line()
    try:
        names = split_fields(header, separator, quote_char)
    except csv.Error:  # quoting that does not close: the header check says so
        names = header.split(separator)
    names = [(columns or {}).get(n.strip(), n) for n in names]

    def bounded() -> Source:
        source = Source(data, name, digest=False, limits=limits)
        source.bound_fields(separator, names, quote_char=quote_char)
        return source

    first = bounded()
    if not sum(len(block.withheld) for block in first.blocks()):
        return data, first.withheld()
    return b"".join(block.data for block in bounded().blocks()), first.withheld()


#: Bytes of a refused file read back for its quarantine row (``refused_file``): the raw line is kept when it starts in them.
REFUSED_HEAD_BYTES = 1 << 20


def refused_file(path: Path, display: str, spec: TableSpec, exc: IngestError) -> IngestResult:
    """A file of a folder of inputs that cannot be read as ``spec``'s table at all (``exc``: a missing column, a bound) as
    one quarantine row, so that the folder's other files are still read: the error's line (1 when it names none),
    column and reason, and the raw line when it starts in the file's first MiB (a FIFO or device is not read again).
    ``lines_in`` is 1: the file counts as one record, as an empty file does (``common``)."""
    head = b""
    if path.is_file():
        with contextlib.suppress(IngestError):
            head = read_at_most(path, REFUSED_HEAD_BYTES, name=display)
    lines = head.split(b"\n")
    at = exc.line if exc.line is not None and 1 <= exc.line <= len(lines) else 1
    bad = quarantine_frame(spec.table, display, [at], exc.column, exc.message, raw_text(lines[at - 1]))
    return IngestResult(empty_table(spec), bad, lines_in=1, files=[display])


# ---------------------------------------------------------------------------------------------
# bytes -> lines


@dataclass(frozen=True)
class Block:
    """Whole lines of a file: their bytes, the number of the first, and how many there are."""

    data: bytes
    first_line: int
    lines: int
    #: Lines quarantined as they were read (a field over ``ReadLimits.field_bytes``): emptied in ``data``, and left out
    #: by ``block_lines``; their quarantine rows are ``Source.withheld``'s.
    withheld: tuple[int, ...] = ()


#: Told after each block a reader parses: (bytes read so far, bytes of the file); for a progress bar on a terminal.
Progress = Callable[[int, int], None]


class Source:
    """A trace file (or bytes) read in blocks of whole lines, so that a large export never sits in memory whole.

    ``lines`` (counted from the bytes, independently of the parse) and ``sha256`` are known once
    ``blocks`` or ``count`` has run to the end.
    """

    def __init__(self, source: Path | bytes, name: str, *, chunk_bytes: int = CHUNK_BYTES, digest: bool = True,
                 limits: ReadLimits | None = None, progress: Progress | None = None) -> None:
        self.source, self.name, self.chunk_bytes = source, name, chunk_bytes
        self.progress = progress
        self.limits = limits or ReadLimits()
        self._want_digest = digest
        self._digest = hashlib.sha256() if digest else None
        self.lines = 0
        self.size = 0
        self._stat = self._identity()
        self._fields: _FieldBound | None = None
        self._withheld: list[tuple[int, str, str, str]] = []  # (line, raw, column, reason) of lines withheld by the field bound

    def _identity(self) -> tuple[int, int] | None:
        """(size, modification time in ns) of the file; None for bytes or a file that is gone."""
        if isinstance(self.source, bytes):
            return None
        try:
            st = os.stat(self.source)
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns

    def check_unchanged(self) -> None:
        """``IngestError`` (one line) if the file's size or modification time changed since this reader was made."""
        now = self._identity()
        if self._stat is not None and now != self._stat:
            size = "gone" if now is None else f"{self._stat[0]:,} -> {now[0]:,} bytes"
            raise IngestError(self.name, f"the file changed while it was read ({size}): read it again once it is complete")

    @contextlib.contextmanager
    def whole_read(self) -> Iterator[None]:
        """Around a reader's work: a file that changed meanwhile (cut short, grown, replaced) is one ``IngestError`` line,
        whatever the read made of it (a scan that hit the new end raises ``OSError``; a shorter file reads as fewer lines)."""
        try:
            yield
        except Exception as exc:
            self.check_unchanged()
            if isinstance(exc, OSError):
                raise IngestError(self.name, f"unreadable file: {exc}") from exc
            raise
        self.check_unchanged()

    @property
    def sha256(self) -> str | None:
        return self._digest.hexdigest() if self._digest is not None else None

    def _pieces(self) -> Iterator[bytes]:
        """The bytes in pieces of about ``chunk_bytes``, each ending at a line break (but the last)."""
        if isinstance(self.source, bytes):
            data, view, at = self.source, memoryview(self.source), 0
            while at < len(data):
                end = at + self.chunk_bytes
                cut = len(data) if end >= len(data) else data.rfind(b"\n", at, end) + 1
                if cut <= at:  # a line longer than a piece
                    nxt = data.find(b"\n", end)
                    self.limits.check_line(self.name, self.lines + 1, (len(data) if nxt < 0 else nxt) - at)
                    cut = len(data) if nxt < 0 else nxt + 1
                yield bytes(view[at:cut])
                at = cut
            return
        try:
            with open(self.source, "rb") as fh:
                carry = b""
                while piece := fh.read(self.chunk_bytes):
                    cut = piece.rfind(b"\n") + 1
                    if len(piece) < self.chunk_bytes or cut == 0:  # the end, or a line longer than a piece: keep reading
                        carry += piece
                        self.limits.check_line(self.name, self.lines + 1, len(carry) - (carry.rfind(b"\n") + 1))
                        if len(piece) < self.chunk_bytes:
                            break
                        continue
                    if cut < len(piece):
                        fh.seek(cut - len(piece), 1)  # the partial last line is read again with the next piece
                        piece = piece[:cut]
                    if carry:
                        piece, carry = carry + piece, b""
                    yield piece
                if carry:
                    yield carry
        except OSError as exc:
            raise IngestError(self.name, f"unreadable file: {exc}") from exc

    def count(self, needle: bytes) -> int:
        """How often ``needle`` (one character's bytes) occurs in the file; counts the lines (and the sha256) on the way.

        Pieces are cut anywhere, so an occurrence across two pieces is counted at the seam (UTF-8
        is self-synchronising: the bytes of a character never match inside another's).
        """
        found, newlines, self.size = 0, 0, 0
        self._digest = hashlib.sha256() if self._want_digest else None
        last, tail = b"\n", b""
        for piece in self._raw_pieces():
            if self._digest is not None:
                self._digest.update(piece)
            self.size += len(piece)
            if len(needle) == 1:
                found += int(np.count_nonzero(np.frombuffer(piece, dtype=np.uint8) == needle[0]))
            else:
                found += piece.count(needle) + (tail + piece[: len(needle) - 1]).count(needle)
                tail = piece[-(len(needle) - 1):]
            newlines += piece.count(b"\n")
            last = piece[-1:]
        self.lines = line_count(last, newlines)
        return found

    def _raw_pieces(self) -> Iterator[bytes]:
        """The bytes in pieces of ``chunk_bytes``, cut anywhere (for counting)."""
        if isinstance(self.source, bytes):
            view = memoryview(self.source)
            for at in range(0, len(self.source), self.chunk_bytes):
                yield bytes(view[at : at + self.chunk_bytes])
            return
        try:
            with open(self.source, "rb") as fh:
                while piece := fh.read(self.chunk_bytes):
                    yield piece
        except OSError as exc:
            raise IngestError(self.name, f"unreadable file: {exc}") from exc

    def bound_fields(self, separator: str, names: Sequence[str], *, quote_char: str | None = None, header_lines: int = 1) -> None:
        """Check every line's fields against ``ReadLimits.field_bytes`` as ``blocks`` reads it: a data line with a longer field
        is withheld (``Block.withheld``; its quarantine row names the field's column from ``names``, the header's, and keeps
        the line cut to ``MAX_RAW_CHARS``), and a header line with one is an ``IngestError``.

        Fields are split on ``separator``; a line that holds ``quote_char`` is split as CSV (a quoted field may hold the
        separator). Only lines longer than the bound are split, so a file of short lines costs nothing more.
        """
        self._fields = _FieldBound(separator, tuple(names), quote_char, header_lines)

    def withheld(self) -> pl.DataFrame:
        """The rejected rows (``_line``, ``_raw``, column, reason) of the lines ``blocks`` withheld so far."""
        return pl.DataFrame(self._withheld, schema=empty_rejected().schema, orient="row")

    def take_withheld(self) -> pl.DataFrame:
        """``withheld``, then forgotten: a parse takes each block's as it goes (``withheld`` then starts again empty)."""
        taken = self.withheld()
        self._withheld = []
        return taken

    def _withhold(self, data: bytes, first_line: int) -> tuple[bytes, tuple[int, ...]]:
        """(``data`` with the lines that hold a field over the bound emptied, their numbers); their rows go to ``_withheld``."""
        assert self._fields is not None
        bound = self.limits.field_bytes
        breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n"))
        starts, ends = np.concatenate(([0], breaks + 1)), np.append(breaks, len(data))
        kept, withheld, at = [], [], 0
        for i in np.flatnonzero(ends - starts > bound).tolist():
            line, number = data[starts[i] : ends[i]], first_line + i
            found = self._fields.longest(line)
            if found is None or found[1] <= bound:
                continue
            column = self._fields.column(found[0], number)
            if number <= self._fields.header_lines:
                raise IngestError(self.name, f"a header field of {found[1]:,} bytes, more than {bound:,} (the bound on one field)",
                                  line=number, column=column)
            self._withheld.append((number, _raw(line), column,
                                   f"{column}: {found[1]:,} bytes, more than {bound:,} (the bound on one field; the line is not parsed)"))
            kept.append(data[at : starts[i]])
            at = int(ends[i])
            withheld.append(number)
        if not withheld:
            return data, ()
        kept.append(data[at:])
        return b"".join(kept), tuple(withheld)

    def blocks(self) -> Iterator[Block]:
        """The file in blocks of whole lines (a last line without a newline is a line); with ``bound_fields``, the lines
        that hold a field over the bound emptied (``Block.withheld``)."""
        line = 1
        self.lines, self.size = 0, 0
        self._digest = hashlib.sha256() if self._want_digest else None
        for block in _at_most_lines(self._pieces(), BLOCK_LINES):
            if self._digest is not None:
                self._digest.update(block)
            self.size += len(block)
            # the rows first, counted without memory: _lines holds four integers per line (a block of line breaks: 1 GB)
            count = line_count(block, block.count(b"\n"))
            self.limits.check_rows(self.name, line - 1 + count)
            _, longest, at = _lines(block)
            self.limits.check_line(self.name, line + at, longest)
            data, withheld = block, ()  # type: tuple[bytes, tuple[int, ...]]  # a block has none but with a bound on fields
            if self._fields is not None and longest > self.limits.field_bytes:
                data, withheld = self._withhold(block, line)
            yield Block(data, line, count, withheld)
            line += count
            self.lines = line - 1
            if self.progress is not None:
                total = self._stat[0] if self._stat is not None else len(self.source) if isinstance(self.source, bytes) else self.size
                self.progress(self.size, total)
        self.lines = line - 1

    def first_line(self) -> str:
        """The first line as text (``\\r`` stripped; bytes that are not UTF-8 replaced); "" for an empty file.

        Bounded as every line is (``ReadLimits.line_bytes``), and each piece searched once: a 100 MB file with no newline
        took 100 s when the whole head was searched again for each piece."""
        head = bytearray()
        for piece in Source(self.source, self.name, chunk_bytes=1 << 16, digest=False)._raw_pieces():
            end = piece.find(b"\n")
            head += piece if end < 0 else piece[:end]
            self.limits.check_line(self.name, 1, len(head))
            if end >= 0:
                break
        return bytes(head).decode("utf-8", "replace").removesuffix("\r").removeprefix(BOM)

    def head_lines(self, count: int = 20, max_bytes: int = 1 << 16) -> list[str]:
        """Up to ``count`` first lines as text (within the first ``max_bytes``; as ``first_line``), the first always."""
        head = b""
        for piece in Source(self.source, self.name, chunk_bytes=1 << 16, digest=False)._raw_pieces():
            head += piece
            if head.count(b"\n") >= count or len(head) >= max_bytes:
                break
        lines = head.split(b"\n")
        if len(lines) > 1 and len(head) >= max_bytes:
            lines = lines[:-1]  # the last one may be cut
        text = [line.decode("utf-8", "replace").removesuffix("\r") for line in lines[:count]] or [""]
        return [text[0].removeprefix(BOM), *text[1:]]

    def is_blank(self) -> bool:
        """No byte but whitespace (an empty file included)."""
        return all(not piece.strip() for piece in Source(self.source, self.name, chunk_bytes=1 << 16, digest=False)._raw_pieces())

    def with_raw_text(self, rows: Iterable[pl.DataFrame]) -> Iterator[pl.DataFrame]:
        """``rows`` (rejected rows: ``_line``, ``_raw``, ...; in frames sorted by ``_line``) with each null ``_raw`` filled
        with its line's text (``_raw``), by a second pass over the file a block at a time (the rows of one block in one
        frame), under this reader's own bounds; it stops where the rows do. Neither the rows nor the lines are all held."""
        frames = iter(rows)
        held = next(frames, None)
        if held is None:
            return
        for block in Source(self.source, self.name, chunk_bytes=self.chunk_bytes, digest=False, limits=self.limits).blocks():
            end, out = block.first_line + block.lines, []
            while held is not None:
                cut = int(held[LINE].search_sorted(end, side="left"))  # the rows of lines before the block's end
                out.append(held.slice(0, cut))
                if cut < held.height:
                    held = held.slice(cut)
                    break
                held = next(frames, None)
            frame = pl.concat(out, how="vertical")
            missing = frame.filter(pl.col(RAW).is_null())[LINE].to_list()
            if missing:
                split = block.data.split(b"\n")
                text = {n: _raw(split[n - block.first_line]) for n in missing}
                frame = frame.with_columns(pl.col(RAW).fill_null(pl.col(LINE).replace_strict(text, default=None, return_dtype=pl.String)))
            if frame.height:
                yield frame
            if held is None:
                return
        yield held  # rows past the file's last line (none: the lines are the file's)
        yield from frames


@dataclass(frozen=True)
class _FieldBound:
    """How ``Source.bound_fields`` splits a line into fields, and names them."""

    separator: str
    names: tuple[str, ...]
    quote_char: str | None
    header_lines: int

    def longest(self, line: bytes) -> tuple[int, int] | None:
        """(index of the line's longest field, its bytes); None for a line without fields (never: a line has one)."""
        text = line.removesuffix(b"\r").decode("utf-8", "surrogateescape")
        try:
            fields = split_fields(text, self.separator, self.quote_char)
        except csv.Error:  # quoting that does not close: its fields as the separator cuts them (the parse quarantines it anyway)
            fields = text.split(self.separator)
        sizes = [len(f.encode("utf-8", "surrogateescape")) for f in fields]
        return (int(np.argmax(sizes)), max(sizes)) if sizes else None

    def column(self, index: int, number: int) -> str:
        """The header's name of field ``index`` (from 0) of line ``number``; ``field N`` (from 1) in the header, past the
        header's fields, or for a name that is empty or longer than ``MAX_NAME_CHARS`` (messages quote no long input)."""
        name = self.names[index].strip() if index < len(self.names) and number > self.header_lines else ""
        return name if 0 < len(name) <= MAX_NAME_CHARS else f"field {index + 1}"


def _raw(line: bytes) -> str:
    """A line's bytes as its quarantine row keeps them: ``\\r`` dropped, bytes that are not UTF-8 replaced, cut (``cut_raw``)."""
    return cut_raw(line.decode("utf-8", "replace").removesuffix("\r"), len(line))


def _lines(data: bytes) -> tuple[int, int, int]:
    """(lines of non-empty ``data``: a last line without a line break is one; bytes of the longest, line breaks not
    counted; its index among them, from 0)."""
    breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n"))
    ends = np.append(breaks, len(data))
    lengths = ends - np.concatenate(([0], breaks + 1))
    at = int(np.argmax(lengths))
    return line_count(data, breaks.size), int(lengths[at]), at


def block_lines(block: Block) -> pl.DataFrame:
    """The block's lines but those withheld: ``_line`` (number in the file), ``_text`` (without ``\\r\\n``), ``_utf8``
    (valid UTF-8?).

    Split by ``records.text_lines`` (polars, no Python object per line). A block with a byte that is not UTF-8 is
    decoded with replacement characters and split by string operations instead (the same lines; bad lines found one
    by one, only in such a block).
    """
    text, valid = text_lines(block.data), None
    if text is None:  # not UTF-8
        text = pl.Series([block.data.decode("utf-8", "replace")]).str.split("\n").explode()
        if block.data.endswith(b"\n"):
            text = text.head(text.len() - 1)
        text = text.str.strip_suffix("\r")
        valid = pl.Series([utf8_error(b) is None for b in block.data.split(b"\n")[: block.lines]], dtype=pl.Boolean)
    if block.first_line == 1 and block.data.startswith(BOM.encode()):
        text = text.str.strip_prefix(BOM)  # only the first line can start with it
    if text.len() != block.lines:
        raise IngestError("<block>", f"internal error: {text.len()} lines split from a block of {block.lines}", line=block.first_line)
    lines = pl.DataFrame({
        LINE: pl.int_range(block.first_line, block.first_line + block.lines, dtype=pl.Int64, eager=True),
        TEXT: text,
        "_utf8": valid if valid is not None else pl.repeat(True, block.lines, eager=True),
    })
    return lines.filter(~pl.col(LINE).is_in(block.withheld)) if block.withheld else lines
