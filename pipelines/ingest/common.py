"""Reading a delimited source file into a typed, validated table plus a quarantine of bad rows.

Every reader (the traces here, the own-cluster exports) goes through this module, so what it
promises holds for all of them. Records are physical lines (``pipelines.ingest.records``: the
header is line 1; a quoted field may not span lines). The pipeline for one file:

1. check the header: a missing or renamed column raises ``IngestError`` naming file, column, line 1;
   a header that is not UTF-8 raises too (nothing can be read without it). A UTF-8 byte-order mark is dropped;
2. count the records from the bytes alone (``count_records``), within the reader engine's bounds on lines per file,
   bytes of one line and of one field, the header's included (``pipelines.ingest.text_reader.bounded_table``: one
   ``IngestError`` line; a data line with a longer field goes to quarantine unparsed, as in an export). A file's bytes
   come from the engine too (``text_reader.read_bytes``: a stated bound on its size, decompressed or not);
3. structure: when the bytes prove every record well-formed (no quote character, the separator count
   of a full grid) one typed polars read does everything, and must return one row per record
   (the fast path). Otherwise each line is checked on its own: a blank line, bytes that are not
   UTF-8, too few or too many fields, or a quote that does not close on its line send that record to
   quarantine with its line, the column at fault (the first missing one, the one holding the bad
   byte) and the reason; the other records are read as text;
4. values: read as the type the contract declares (nothing inferred); if one does not parse, each
   value is cast on its own and a bad one sends its record to quarantine with the column and value;
5. move later occurrences of a duplicate key (the contract's primary key, rows with a null key part
   excepted: they fail validation with "must not be null") into quarantine (the first one stays);
6. validate the typed rows against the table's contract (``pipelines.contracts``: ranges, lengths,
   allowed values, row rules); each failing row goes to quarantine with the reason, e.g.
   ``duration: must be >= 0 (value -3)``.

Nothing is dropped silently: every record ends in exactly one of the table or the quarantine, and
``IngestResult.lines_in`` is the count of step 2, not a sum of the parse's outputs, so
``table.height + quarantine.height == lines_in`` is a real check (an empty file, or a header with
no record, counts as one record: its quarantine row). The ingest assets enforce it (blocking).
"""

from __future__ import annotations

import codecs
import csv
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.contracts.base import Contract, descriptions, polars_schema, split_valid
from pipelines.contracts.sources import Quarantine
from pipelines.ingest.records import (
    LINE,
    BadRecord,
    count_bytes,
    count_records,
    header_fields,
    line_bytes,
    records_from_breaks,
    split_records,
    text_lines,
    well_formed,
)

__all__ = [
    "FILE",
    "LINE",
    "MAX_RAW_CHARS",
    "QUARANTINE_SCHEMA",
    "TIMESTAMP_FORMAT",
    "IngestError",
    "IngestResult",
    "TableSpec",
    "check_header",
    "count_records",
    "cut_raw",
    "empty_quarantine",
    "empty_table",
    "ingest_bytes",
    "ingest_files",
    "quarantine_frame",
    "raw_text",
    "raw_texts",
    "validate_rows",
]

FILE = "_file"  # index of a row's source file among the files of one table, while they are validated together
_BAD_SCHEMA: dict[str, pl.DataType] = {LINE: pl.Int64(), "column": pl.String(), "reason": pl.String()}
#: A quarantined line longer than this is stored cut, with its full length in bytes (a 50 MB field stays out of the table).
MAX_RAW_CHARS = 2000
#: A value quoted in a reason is cut to this many characters.
_VALUE_CHARS = 80

QUARANTINE_SCHEMA = polars_schema(Quarantine)

#: Timestamps in the traces: ``2023-03-01 00:18:22+08:00``.
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S%:z"


class IngestError(ValueError):
    """A source file that cannot be ingested at all (unreadable, missing or renamed column)."""

    def __init__(self, file: str | Path, message: str, *, line: int | None = None, column: str | None = None):
        where = str(file) + (f":{line}" if line is not None else "")
        col = f" column {column!r}:" if column else ""
        super().__init__(f"{where}:{col} {message}")
        self.file, self.line, self.column, self.message = str(file), line, column, message


@dataclass(frozen=True)
class TableSpec:
    """How one source file maps onto one table.

    ``columns`` maps each source header name to its column in the table, in header order. The
    table's types, constraints and descriptions come from ``model`` (its contract, a dataframely
    Schema); columns of the contract that are not read from the file are constants per file
    (``extras`` of ``ingest_bytes``, e.g. ``cluster``). ``separator`` is one ASCII character;
    ``quote_char`` None reads quotes as ordinary characters (``sacct --parsable2`` output).
    """

    table: str
    model: Contract
    columns: Mapping[str, str]
    #: Field values that mean "no value" besides the empty string (e.g. "nan" in summary_train.csv).
    null_tokens: frozenset[str] = frozenset()
    separator: str = ","
    quote_char: str | None = '"'

    def __post_init__(self) -> None:
        if len(self.separator) != 1 or not self.separator.isascii() or self.separator in "\r\n":
            raise ValueError(f"{self.table}: separator must be one ASCII character other than a line break, got {self.separator!r}")
        if self.quote_char is not None and (len(self.quote_char) != 1 or self.quote_char == self.separator):
            raise ValueError(f"{self.table}: quote_char must be one character other than the separator, got {self.quote_char!r}")

    def dtypes(self) -> dict[str, pl.DataType]:
        return dict(polars_schema(self.model))

    def descriptions(self) -> dict[str, str]:
        return descriptions(self.model)

    @property
    def unique_key(self) -> tuple[str, ...]:
        """The columns read from the file whose combination must be unique within it: the contract's
        primary key less the per-file constants (unique per file means unique in the table)."""
        read = set(self.columns.values())
        return tuple(c for c in self.model.primary_key() if c in read)


@dataclass
class IngestResult:
    """A typed table and the rows that did not make it, with reasons.

    ``lines_in``: the records of the source files counted from their bytes (``count_records``), an
    empty file or a header without records counting as one; ``table.height + quarantine.height``
    must equal it (``unaccounted`` is the difference).
    """

    table: pl.DataFrame
    quarantine: pl.DataFrame
    lines_in: int = 0
    files: list[str] = field(default_factory=list)

    @staticmethod
    def concat(results: Sequence[IngestResult], spec: TableSpec) -> IngestResult:
        tables = [r.table for r in results if r.table.height] or [empty_table(spec)]
        return IngestResult(
            table=pl.concat(tables, how="vertical"),
            quarantine=pl.concat([r.quarantine for r in results], how="vertical")
            if results
            else empty_quarantine(),
            lines_in=sum(r.lines_in for r in results),
            files=[f for r in results for f in r.files],
        )

    @property
    def quarantined_share(self) -> float:
        total = self.table.height + self.quarantine.height
        return self.quarantine.height / total if total else 0.0

    @property
    def unaccounted(self) -> int:
        """Records counted in the files less the rows in the table and the quarantine (0 when every record is accounted for)."""
        return self.lines_in - self.table.height - self.quarantine.height


def empty_quarantine() -> pl.DataFrame:
    return pl.DataFrame(schema=QUARANTINE_SCHEMA)


def empty_table(spec: TableSpec) -> pl.DataFrame:
    return pl.DataFrame(schema=spec.dtypes())


def raw_text(line: bytes) -> str:
    """A source line as stored in ``quarantine.raw``: bytes that are not UTF-8 as ``\\xNN``, cut to ``MAX_RAW_CHARS``."""
    return cut_raw(line.removesuffix(b"\r").decode("utf-8", "backslashreplace"), len(line))


def cut_raw(text: str, size: int) -> str:
    """A line's ``text`` as stored in ``quarantine.raw``: cut to ``MAX_RAW_CHARS``, with its ``size`` in bytes, when longer."""
    if len(text) <= MAX_RAW_CHARS:
        return text
    return f"{text[:MAX_RAW_CHARS]}… (cut: the line has {size:,} bytes)"


def raw_texts(texts: pl.Series) -> pl.Series:
    """``cut_raw`` of each line's text (its size: the text's UTF-8 bytes); only the (rare) long ones are touched."""
    long = texts.str.len_chars() > MAX_RAW_CHARS
    if not long.any():
        return texts
    at = long.arg_true()
    return texts.scatter(at, [cut_raw(t, len(t.encode())) for t in texts.gather(at).to_list()])


def quarantine_frame(
    table: str, source_file: str, lines: pl.Series | Sequence[int], column: str | None, reasons: pl.Series | str, raw: pl.Series | str
) -> pl.DataFrame:
    n = len(lines)
    return pl.DataFrame(
        {
            "table": [table] * n,
            "source_file": [source_file] * n,
            "line": pl.Series(lines, dtype=pl.Int64),
            "column": [column] * n,
            "reason": reasons if isinstance(reasons, pl.Series) else [reasons] * n,
            "raw": raw if isinstance(raw, pl.Series) else [raw] * n,
        },
        schema=QUARANTINE_SCHEMA,
    )


def check_header(data: bytes, *, name: str, expected: Sequence[str], separator: str = ",", quote_char: str | None = '"') -> list[str]:
    """The file's header fields; a missing or renamed expected column, or an unreadable header, raises ``IngestError`` (line 1)."""
    try:
        found = header_fields(data.removeprefix(codecs.BOM_UTF8), separator, quote_char)
    except UnicodeDecodeError as exc:
        raise IngestError(name, f"unreadable CSV: the header is not valid UTF-8 (byte {exc.start + 1})", line=1) from exc
    except csv.Error as exc:
        raise IngestError(name, f"unreadable CSV: malformed quoting in the header ({exc})", line=1) from exc
    missing = [c for c in expected if c not in found]
    if missing:
        extra = [c for c in found if c not in expected]
        hint = f"; unexpected columns {extra}" if extra else ""
        raise IngestError(name, f"missing column (header has {found}){hint}", line=1, column=missing[0])
    return found


def _read_csv(data: bytes, spec: TableSpec, overrides: Mapping[str, pl.DataType], null_tokens: frozenset[str]) -> pl.DataFrame:
    return pl.read_csv(
        data,
        has_header=True,
        separator=spec.separator,
        quote_char=spec.quote_char,
        infer_schema=False,
        schema_overrides=dict(overrides),
        null_values=sorted(null_tokens) or None,
        raise_if_empty=False,
    )


#: Every UTC offset a timestamp may carry ("+08:00", "-03:30", ...), in seconds east of UTC.
UTC_OFFSETS_S: dict[str, int] = {
    f"{sign}{h:02d}:{m:02d}": (1 if sign == "+" else -1) * (h * 3600 + m * 60) for sign in "+-" for h in range(15) for m in (0, 15, 30, 45)
}


def _utc_timestamp(col: str, dtype: pl.Datetime) -> tuple[pl.Expr, pl.Expr]:
    """(well-formed?, parsed) for ``YYYY-mm-dd HH:MM:SS+hh:mm`` text, converted to UTC.

    Parsing the naive part with a fixed format and looking the offset up in ``UTC_OFFSETS_S`` is
    several times faster than a ``%:z`` parse; rows that are not exactly of that shape take the
    per-value path.
    """
    c = pl.col(col)
    seconds = c.str.slice(19, 6).replace_strict(UTC_OFFSETS_S, default=None, return_dtype=pl.Int64)
    well_formed = c.is_null() | ((c.str.len_bytes() == 25) & seconds.is_not_null())
    # cache=False: the values are nearly all distinct, so a lookup cache costs a hash pass and saves nothing
    naive = c.str.slice(0, 19).str.to_datetime("%Y-%m-%d %H:%M:%S", time_unit=dtype.time_unit, strict=True, cache=False)
    return well_formed.all(), (naive - pl.duration(seconds=seconds)).dt.replace_time_zone(dtype.time_zone)


def _fast_parse(data: bytes, spec: TableSpec) -> pl.DataFrame | None:
    """Typed read in one pass; None when any value does not parse (then the per-value path finds which)."""
    dtypes = spec.dtypes()
    overrides = {src: dtypes[dst] for src, dst in spec.columns.items() if not isinstance(dtypes[dst], pl.Datetime)}
    stamps = {src: _utc_timestamp(src, dtype) for src, dst in spec.columns.items() if isinstance(dtype := dtypes[dst], pl.Datetime)}
    try:
        frame = _read_csv(data, spec, overrides, spec.null_tokens)
        if not stamps:
            return frame
        # One pass computes every parsed column and its shape check (polars runs them in parallel).
        frame = frame.with_columns(
            *[parsed.alias(src) for src, (_, parsed) in stamps.items()],
            *[ok.alias(f"_ok_{src}") for src, (ok, _) in stamps.items()],
        )
        flags = [f"_ok_{src}" for src in stamps]
        return frame.drop(flags) if all(frame.select(pl.col(flags).first()).row(0)) else None
    except (pl.exceptions.ComputeError, pl.exceptions.InvalidOperationError, pl.exceptions.SchemaError):
        return None


def _parse_expr(col: str, dtype: pl.DataType, null_tokens: frozenset[str]) -> pl.Expr:
    text = pl.col(col).str.strip_chars()
    text = pl.when(text.is_in(["", *null_tokens])).then(None).otherwise(text)
    if isinstance(dtype, pl.Datetime):
        return text.str.to_datetime(TIMESTAMP_FORMAT, time_unit=dtype.time_unit, time_zone=dtype.time_zone, strict=False)
    if dtype == pl.Int64():
        # Integers written as floats ("117.0") are accepted only when they are whole.
        as_float = text.cast(pl.Float64, strict=False)
        return pl.when(as_float == as_float.floor()).then(as_float.cast(pl.Int64, strict=False))
    return text.cast(dtype, strict=False)


def _slow_parse(text: pl.DataFrame, spec: TableSpec) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-value parse of text records (``_line`` + one String column per source field):
    (typed frame of the good rows with ``_line``, bad rows with ``_line``, column, reason)."""
    dtypes = spec.dtypes()
    parsed = text.with_columns(
        [_parse_expr(src, dtypes[dst], spec.null_tokens).alias(f"_p_{dst}") for src, dst in spec.columns.items()]
    )
    reasons = [
        pl.when(pl.col(f"_p_{dst}").is_null() & ~pl.col(src).str.strip_chars().is_in(["", *spec.null_tokens]))
        .then(pl.format("column {}: cannot parse {} as {}", pl.lit(dst), pl.col(src).str.slice(0, _VALUE_CHARS), pl.lit(str(dtypes[dst]))))
        for src, dst in spec.columns.items()
    ]
    columns = [
        pl.when(pl.col(f"_p_{dst}").is_null() & ~pl.col(src).str.strip_chars().is_in(["", *spec.null_tokens])).then(pl.lit(dst))
        for src, dst in spec.columns.items()
    ]
    parsed = parsed.with_columns(pl.coalesce(reasons).alias("reason"), pl.coalesce(columns).alias("column"))
    bad = parsed.filter(pl.col("reason").is_not_null()).select(LINE, "column", "reason")
    good = parsed.filter(pl.col("reason").is_null()).select(LINE, *[pl.col(f"_p_{dst}").alias(src) for src, dst in spec.columns.items()])
    return good, bad


def _text_records(data: bytes, spec: TableSpec, header: list[str], records: int, proven: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(every well-formed record as text with ``_line``, the malformed ones as ``_line``/column/reason).

    ``proven``: ``well_formed`` holds for ``data``, so one text read gives every record (unless a byte is not UTF-8).
    """
    if proven:
        try:
            text = _read_csv(data, spec, {}, frozenset())
        except pl.exceptions.ComputeError:  # bytes that are not UTF-8: each line is checked below
            text = None
        if text is not None and text.height == records:
            return text.with_row_index(LINE, offset=2).with_columns(pl.col(LINE).cast(pl.Int64)), pl.DataFrame(schema=_BAD_SCHEMA)
    text, malformed = split_records(data, header, spec.separator, spec.quote_char)
    return text, _bad_frame(malformed, header, spec)


def _bad_frame(malformed: Sequence[BadRecord], header: Sequence[str], spec: TableSpec) -> pl.DataFrame:
    """Malformed records as ``_line``/column/reason, the field index turned into the table's column name."""
    names = [spec.columns.get(h, h) for h in header]
    return pl.DataFrame(
        {
            LINE: [b.line for b in malformed],
            "column": [names[b.field] if b.field is not None and b.field < len(names) else None for b in malformed],
            "reason": [b.reason for b in malformed],
        },
        schema=_BAD_SCHEMA,
    )


@dataclass
class _ParsedFile:
    """One file typed and de-duplicated, not yet validated: rows carry ``_line`` (and extras)."""

    source_file: str
    data: bytes
    frame: pl.DataFrame
    bad: pl.DataFrame  # _line, column, reason
    lines_in: int
    #: The raw text of the lines withheld by the bound on one field (emptied in ``data``), by line.
    withheld: Mapping[int, str] = field(default_factory=dict)


def _parse_file(data: bytes, spec: TableSpec, source_file: str, extras: Mapping[str, object] | None) -> _ParsedFile | IngestResult:
    """Steps 1-5 of the module docstring for one file; an empty file is returned as its finished ``IngestResult``."""
    from pipelines.ingest.text_reader import RAW, bounded_table  # the engine imports this module: imported here, not above

    dtypes = spec.dtypes()
    data, withheld = bounded_table(data, source_file, separator=spec.separator, quote_char=spec.quote_char, columns=spec.columns)
    data = data.removeprefix(codecs.BOM_UTF8)
    if not data[:4096].strip() and not data.strip():  # the full strip (a copy) only for a blank-looking start
        return _empty_file(spec, source_file, "empty file: no header, no rows")
    header = check_header(data, name=source_file, expected=list(spec.columns), separator=spec.separator, quote_char=spec.quote_char)
    breaks, separators = count_bytes(data, (0x0A, ord(spec.separator)))  # one pass over the bytes for both
    records = records_from_breaks(data, breaks)
    if records == 0:
        return _empty_file(spec, source_file, "empty file: header but no data rows")
    proven = well_formed(data, len(header), records, spec.separator, spec.quote_char, separators)
    frame = _fast_parse(data, spec) if proven else None
    if frame is not None and frame.height == records:
        frame = frame.with_row_index(LINE, offset=2).with_columns(pl.col(LINE).cast(pl.Int64))
        bad = pl.DataFrame(schema=_BAD_SCHEMA)
    else:
        text, malformed = _text_records(data, spec, header, records, proven)
        frame, bad = _slow_parse(text, spec)
        bad = pl.concat([malformed, bad], how="vertical")
    frame = frame.select(
        LINE,
        *[pl.col(src).cast(dtypes[dst]).alias(dst) for src, dst in spec.columns.items()],
        *[pl.lit(v, dtype=dtypes[k]).alias(k) for k, v in (extras or {}).items()],
    )
    frame, duplicates = _split_duplicates(frame, spec)
    bad = pl.concat([bad, duplicates], how="vertical")
    if withheld.height:  # emptied lines, each quarantined as a blank line by the parse: their reason is the bound's
        bad = pl.concat([bad.filter(~pl.col(LINE).is_in(withheld[LINE].implode())), withheld.select(list(_BAD_SCHEMA))], how="vertical")
    return _ParsedFile(source_file, data, frame, bad, records, dict(zip(withheld[LINE], withheld[RAW], strict=True)))


def _split_duplicates(frame: pl.DataFrame, spec: TableSpec) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows but later occurrences of a key, those occurrences as ``_line``/column/reason); rows with a null key part stay."""
    if not spec.unique_key:
        return frame, pl.DataFrame(schema=_BAD_SCHEMA)
    key = pl.col(spec.unique_key[0]) if len(spec.unique_key) == 1 else pl.struct(list(spec.unique_key))
    # Equal keys hash equal, so distinct hashes prove the keys distinct (the common case, ~5x cheaper than
    # an exact n_unique on strings); only a hash collision or a real duplicate takes the exact pass.
    if frame.select(key.hash().n_unique()).item() == frame.height:
        return frame, pl.DataFrame(schema=_BAD_SCHEMA)
    complete = pl.all_horizontal([pl.col(c).is_not_null() for c in spec.unique_key])
    dup = frame.select(complete & key.is_first_distinct().not_()).to_series()
    if not dup.any():
        return frame, pl.DataFrame(schema=_BAD_SCHEMA)
    first = frame.select(LINE, pl.col(LINE).first().over(key).alias("_first")).filter(dup)
    reason = pl.format(f"duplicate {', '.join(spec.unique_key)} (first occurrence, line {{}}, kept)", pl.col("_first"))
    duplicates = first.select(LINE, pl.lit(spec.unique_key[0]).alias("column"), reason.alias("reason"))
    return frame.filter(~dup), duplicates


def _validate_files(parsed: Sequence[_ParsedFile | IngestResult], spec: TableSpec) -> IngestResult:
    """Step 6 over every file of a table at once (one validation pass, not one per file), then split back per file."""
    files = [p for p in parsed if isinstance(p, _ParsedFile)]
    good: dict[int, pl.DataFrame] = {}
    failed = pl.DataFrame(schema={**_BAD_SCHEMA, FILE: pl.Int32()})
    if files:
        rows = pl.concat([f.frame.with_columns(pl.lit(i, pl.Int32).alias(FILE)) for i, f in enumerate(files)], how="vertical")
        rows, failed = validate_rows(rows, spec)
        good = {k[0]: v for k, v in rows.partition_by(FILE, as_dict=True, maintain_order=True).items()}
    results, columns, i = [], list(spec.dtypes()), 0
    for p in parsed:  # in input order; empty files are already finished results
        if isinstance(p, IngestResult):
            results.append(p)
            continue
        bad = pl.concat([p.bad, failed.filter(pl.col(FILE) == i).select(list(_BAD_SCHEMA))], how="vertical").sort(LINE)
        table = good[i].select(columns) if i in good else empty_table(spec)
        quarantine = _quarantine_rows(bad, p.data, spec.table, p.source_file, p.withheld)
        results.append(IngestResult(table, quarantine, lines_in=p.lines_in, files=[p.source_file]))
        i += 1
    return IngestResult.concat(results, spec)


def ingest_bytes(data: bytes, spec: TableSpec, *, source_file: str, extras: Mapping[str, object] | None = None) -> IngestResult:
    """One source file's bytes -> typed, validated rows and the quarantine of the rest.

    Fast path: one typed ``read_csv`` when the bytes prove the file well-formed; otherwise each
    record is checked, then each value (module docstring). Line numbers are physical lines.
    """
    return _validate_files([_parse_file(data, spec, source_file, extras)], spec)


def _empty_file(spec: TableSpec, source_file: str, reason: str) -> IngestResult:
    return IngestResult(empty_table(spec), quarantine_frame(spec.table, source_file, [1], None, reason, ""), lines_in=1, files=[source_file])


def _quarantine_rows(bad: pl.DataFrame, data: bytes, table: str, source_file: str, withheld: Mapping[int, str]) -> pl.DataFrame:
    """Attach each bad row's source line (read back from the bytes, only when there are bad rows; a ``withheld`` line's
    text as the engine kept it, since it is emptied in ``data``)."""
    if bad.height == 0:
        return empty_quarantine()
    raw = _raw_lines(data, bad[LINE])
    if withheld:
        raw = raw.scatter(bad[LINE].is_in(list(withheld)).arg_true(), [withheld[n] for n in bad[LINE] if n in withheld])
    return quarantine_frame(table, source_file, bad[LINE], None, bad["reason"], raw).with_columns(column=bad["column"])


def _raw_lines(data: bytes, numbers: pl.Series) -> pl.Series:
    """``raw_text`` of the physical lines ``numbers`` of ``data``, as one String column: split by polars when ``data`` is
    UTF-8 (``records.text_lines``: no Python object per line, where a quarantine of millions of rows held two lists of
    them), and only the lines that are not, or that ``raw_text`` cuts, one by one."""
    text = text_lines(data)
    if text is None:  # not UTF-8: each line on its own
        return pl.Series("raw", [raw_text(line) for line in line_bytes(data, numbers.to_list())], dtype=pl.String)
    lines = text.gather(numbers - 1)
    del text
    long = lines.str.len_chars() > MAX_RAW_CHARS
    if not long.any():
        return lines.rename("raw")
    at = long.arg_true()
    return lines.scatter(at, [raw_text(line) for line in line_bytes(data, numbers.gather(at).to_list())]).rename("raw")


def validate_rows(frame: pl.DataFrame, spec: TableSpec) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Validate typed rows with the spec's contract; return (good rows, bad ``_line``/column/reason).

    ``frame`` carries ``_line`` (and ``_file``) beside the table's columns; both frames keep them.
    """
    return split_valid(frame, spec.model)


def ingest_files(
    files: Sequence[tuple[Path, str]],
    spec: TableSpec,
    *,
    extra_columns: Callable[[Path], Mapping[str, object]] | None = None,
) -> IngestResult:
    """Ingest several files of one table (e.g. one per cluster) and concatenate them.

    ``files`` holds ``(path, display_name)`` pairs; ``extra_columns(path)`` gives constant columns
    (such as ``cluster``) for the rows of that file. Each file's bytes come from the reader engine's one bounded read
    (``text_reader.read_bytes``: ``MAX_TABLE_BYTES`` at most, decompressed by its suffix).
    """
    from pipelines.ingest.text_reader import read_bytes  # the engine imports this module: imported here, not above

    parsed = [
        _parse_file(
            read_bytes(path, display),
            spec,
            display,
            extra_columns(path) if extra_columns else None,
        )
        for path, display in files
    ]
    return _validate_files(parsed, spec)
