"""The records of a delimited file, found from its bytes: counted, proven well-formed, or split and checked one by one.

A record is one physical line: the bytes up to a ``\\n`` (a ``\\r`` before it is dropped); a last line
without a line break counts, nothing after the last line break does. The header is line 1, so data
record ``i`` (from 0) is line ``i + 2``, the number ``sed -n Np`` shows. A quoted field may hold the
separator and doubled quotes but not a line break: a quote that does not close on its own line makes
that record malformed ("unbalanced quote"), and the next line of a field with an embedded newline is
a second malformed record. Why physical lines: no trace here (nor a ``sacct`` or job-log export)
holds a quoted newline, and a reader that lets a quote run across lines lets one stray quote swallow
the rest of the file into one field; counted this way one bad byte spoils one record at most.

Nothing here parses values; ``pipelines.ingest.common`` types and validates the records.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

LINE = "_line"  # 1-based line number of a data record in its source file (header = line 1)
_CHUNK = 1 << 20  # bytes compared at once when counting (bounds the temporary array, stays in cache)


@dataclass(frozen=True)
class BadRecord:
    """A malformed record: its line, the index of the field at fault (None: the whole record) and why."""

    line: int
    field: int | None
    reason: str


def count_bytes(data: bytes, values: Sequence[int]) -> list[int]:
    """How many bytes of ``data`` equal each of ``values``, in one pass (numpy over 1 MiB chunks, which
    stay in cache while each value is compared: faster than ``bytes.count`` once per value)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    counts = [0] * len(values)
    for start in range(0, buf.size, _CHUNK):
        chunk = buf[start : start + _CHUNK]
        for i, value in enumerate(values):
            counts[i] += int(np.count_nonzero(chunk == value))
    return counts


def line_count(data: bytes, breaks: int) -> int:
    """Lines of ``data`` (or of a file whose last bytes are ``data``) given its count of ``\\n``: a last line without a
    line break is a line; nothing after the last line break is. The one rule every reader counts lines by."""
    return breaks + (0 if not data or data.endswith(b"\n") else 1)


def records_from_breaks(data: bytes, breaks: int) -> int:
    """Data records of ``data`` given its count of ``\\n``: a last line without a break counts, the header does not."""
    return line_count(data, breaks) - 1 if data else 0


def utf8_error(line: bytes) -> UnicodeDecodeError | None:
    """Why ``line`` is not UTF-8 (the error names the first bad byte), or None when it is. The one UTF-8 check of a line."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc
    return None


def count_records(data: bytes) -> int:
    """Data records (physical lines after the header) of ``data``, from its line breaks alone, independently of any parse."""
    return records_from_breaks(data, count_bytes(data, (0x0A,))[0])


def line_bytes(data: bytes, numbers: Sequence[int]) -> list[bytes]:
    """The physical lines ``numbers`` (1-based, header = 1) of ``data``, found by their line breaks, without splitting the rest."""
    if len(numbers) > 1000:  # many: one split is cheaper than a search per line
        lines = data.split(b"\n")
        return [lines[n - 1] for n in numbers]
    buf = np.frombuffer(data, dtype=np.uint8)
    breaks = np.concatenate([np.flatnonzero(buf[i : i + _CHUNK] == 0x0A) + i for i in range(0, buf.size, _CHUNK)] or [np.empty(0, np.int64)])
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [buf.size]])
    return [data[starts[n - 1] : ends[n - 1]] for n in numbers]


def text_lines(data: bytes) -> pl.Series | None:
    """Every physical line of ``data`` as text (``\\r\\n`` or ``\\n`` dropped), one String value each; None when ``data`` is
    not UTF-8.

    Split by polars' CSV reader with a separator that does not occur (one field per line), which holds about the bytes
    once more; a ``\\r`` or that separator in ``data`` takes a string split instead (the same result; it held five times
    the bytes), and so does a text whose blank lines polars would not return. No Python object per line.
    """
    lines = line_count(data, count_bytes(data, (0x0A,))[0])
    if b"\x1f" not in data and b"\r" not in data:
        try:
            text = pl.read_csv(data, separator="\x1f", has_header=False, quote_char=None, infer_schema=False,
                               new_columns=["t"], raise_if_empty=False)["t"].fill_null("").rechunk()
        except pl.exceptions.ComputeError:  # not UTF-8
            return None
        if text.len() == lines:
            return text
    try:
        whole = pl.Series("t", [data], dtype=pl.Binary).cast(pl.String)
    except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError):
        return None
    text = whole.str.split("\n").explode()
    return (text.head(lines) if data.endswith(b"\n") else text).str.strip_suffix("\r")


def split_fields(text: str, separator: str, quote_char: str | None) -> list[str]:
    """One line's fields; quotes handled only when the line holds one. Raises ``csv.Error`` for malformed quoting."""
    if quote_char is None or quote_char not in text:
        return text.split(separator)
    return next(csv.reader([text], delimiter=separator, quotechar=quote_char, strict=True), [""])


def header_fields(data: bytes, separator: str, quote_char: str | None) -> list[str]:
    """The fields of line 1. Raises ``UnicodeDecodeError`` or ``csv.Error``."""
    end = data.find(b"\n")
    line = (data if end < 0 else data[:end]).removesuffix(b"\r")
    return split_fields(line.decode("utf-8"), separator, quote_char)


def well_formed(data: bytes, columns: int, records: int, separator: str, quote_char: str | None, separators: int | None = None) -> bool:
    """True when the bytes prove every line has exactly ``columns`` fields and none is blank.

    Without a quote character in the file, each line holds ``columns - 1`` separators exactly when the
    total is ``(columns - 1) x lines`` and no line holds more; a reader that refuses lines with extra
    fields (polars does) then settles the rest. A blank line holds no separator, so it fails this too.
    ``separators``: the file's separator count, when already known.
    """
    if columns < 2:
        return False
    if quote_char is not None and quote_char.encode() in data:
        return False
    if separators is None:
        separators = count_bytes(data, (ord(separator),))[0]
    return separators == (columns - 1) * (records + 1)


def split_records(data: bytes, header: Sequence[str], separator: str, quote_char: str | None) -> tuple[pl.DataFrame, list[BadRecord]]:
    """Every data line checked on its own: (the well-formed ones as text, one String column per header field,
    with ``_line``; the malformed ones).

    Malformed: blank, not UTF-8, fewer or more fields than the header, or quoting that does not close
    on the line. Lines without a quote are split with polars; the few with one go through ``csv``.
    """
    columns = len(header)
    lines, valid_utf8 = text_lines(data), True
    if lines is None:  # U+FFFD marks the lines to check; never merges lines
        lines, valid_utf8 = pl.Series("t", data.decode("utf-8", "replace").split("\n")), False
        if lines.len() and lines[-1] == "":
            lines = lines.head(-1)
        lines = lines.str.strip_suffix("\r")
    frame = pl.DataFrame({"t": lines.slice(1)}).with_row_index(LINE, offset=2)
    del lines
    frame = frame.with_columns(pl.col(LINE).cast(pl.Int64))
    t = pl.col("t")
    simple = (t.str.count_matches(separator, literal=True) == columns - 1) & (t.str.strip_chars() != "")
    if quote_char is not None:
        simple &= ~t.str.contains(quote_char, literal=True)
    if not valid_utf8:
        simple &= ~t.str.contains("\ufffd", literal=True)
    frame = frame.with_columns(simple.alias("_simple"))
    good = frame.filter("_simple").select(
        LINE, t.str.split_exact(separator, columns - 1).struct.rename_fields(list(header)).alias("_f")
    ).unnest("_f")
    others = frame.filter(~pl.col("_simple")).select(LINE, "t")
    raw_lines = data.split(b"\n") if not valid_utf8 and others.height else None
    bad: list[BadRecord] = []
    rows: list[list[str]] = []
    numbers: list[int] = []
    quoted: list[pl.DataFrame] = []
    for number, line in others.iter_rows():
        problem, fields = _check_line(line, raw_lines[number - 1] if raw_lines is not None else None, header, separator, quote_char)
        if problem is not None:
            bad.append(BadRecord(number, problem[0], problem[1]))
        else:
            rows.append(fields)
            numbers.append(number)
        if len(rows) == _BATCH_ROWS:  # into polars a batch at a time: a list of lists of strings costs ~0.5 kB a line
            quoted.append(_rows_frame(rows, numbers, header))
            rows, numbers = [], []
    if rows:
        quoted.append(_rows_frame(rows, numbers, header))
    if quoted:
        good = pl.concat([good, *quoted], how="vertical").sort(LINE)
    return good, bad


#: Lines split one by one (``csv``) turned into a frame at a time.
_BATCH_ROWS = 65_536


def _rows_frame(rows: list[list[str]], numbers: list[int], header: Sequence[str]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=dict.fromkeys(header, pl.String), orient="row").insert_column(0, pl.Series(LINE, numbers, pl.Int64))


def _check_line(
    line: str, raw: bytes | None, header: Sequence[str], separator: str, quote_char: str | None
) -> tuple[tuple[int | None, str] | None, list[str]]:
    """((field at fault, reason) or None, the fields) of one line that the vectorised split could not vouch for."""
    columns = len(header)
    if raw is not None:
        raw = raw.removesuffix(b"\r")
        if (exc := utf8_error(raw)) is not None:
            field = raw[: exc.start].count(separator.encode())
            return (min(field, columns - 1), f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line"), []
    if not line.strip():
        return (None, "blank line"), []
    try:
        fields = split_fields(line, separator, quote_char)
    except csv.Error as exc:
        if "unexpected end of data" in str(exc):
            opened = len(next(csv.reader([line], delimiter=separator, quotechar=quote_char or '"'), [""])) - 1
            reason = "unbalanced quote: a quoted field must close on its own line (records are physical lines)"
            return (min(opened, columns - 1), reason), []
        return (None, f"malformed quoting: {exc}"), []
    if len(fields) < columns:
        missing = ", ".join(header[len(fields) : len(fields) + 3]) + (", ..." if columns - len(fields) > 3 else "")
        return (len(fields), f"{len(fields)} fields where the header has {columns}: no value for {missing}"), []
    if len(fields) > columns:
        return (None, f"{len(fields)} fields where the header has {columns}: {len(fields) - columns} extra"), []
    return None, fields
