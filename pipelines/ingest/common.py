"""Reading a delimited source file into a typed, validated table plus a quarantine of bad rows.

The pipeline for one file:

1. read every field as text (nothing inferred) and number the lines (header = line 1);
2. check the header: a missing or renamed column raises ``IngestError`` naming file, column, line 1;
3. cast each column to the type its pandera model declares; a value that does not parse sends
   the row to quarantine with the column and the value;
4. drop later occurrences of a duplicate key into quarantine (the first one stays);
5. validate the typed rows against the table's declarative pandera model (ranges, allowed
   values, row-level rules); each failing row goes to quarantine with the check that failed.

Nothing is dropped silently: every input data line ends in exactly one of the table or the
quarantine (``IngestResult.lines_in == table.height + quarantine.height``, an empty file counting
as one quarantine row).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandera.polars as pa
import polars as pl

LINE = "_line"  # 1-based line number of a data row in its source file (header = line 1)

QUARANTINE_SCHEMA: dict[str, pl.DataType] = {
    "table": pl.String(),
    "source_file": pl.String(),
    "line": pl.Int64(),
    "column": pl.String(),
    "reason": pl.String(),
    "raw": pl.String(),
}

#: Timestamps in the traces: ``2023-03-01 00:18:22+08:00``.
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S%:z"


class IngestError(ValueError):
    """A source file that cannot be ingested at all (unreadable, missing or renamed column)."""

    def __init__(self, file: str | Path, message: str, *, line: int | None = None, column: str | None = None):
        where = str(file) + (f":{line}" if line is not None else "")
        col = f" column {column!r}:" if column else ""
        super().__init__(f"{where}:{col} {message}")
        self.file, self.line, self.column = str(file), line, column


@dataclass(frozen=True)
class TableSpec:
    """How one source file maps onto one table.

    ``columns`` maps each source header name to its column in the table, in header order. The
    table's types, constraints and descriptions come from ``model`` (a pandera DataFrameModel).
    ``unique_key`` names the columns whose combination must be unique within one file.
    """

    table: str
    model: type[pa.DataFrameModel]
    columns: Mapping[str, str]
    unique_key: tuple[str, ...] = ()
    optional_source_columns: frozenset[str] = frozenset()
    #: Field values that mean "no value" besides the empty string (e.g. "nan" in summary_train.csv).
    null_tokens: frozenset[str] = frozenset()

    def dtypes(self) -> dict[str, pl.DataType]:
        return {name: col.dtype.type for name, col in self.model.to_schema().columns.items()}

    def descriptions(self) -> dict[str, str]:
        return {name: col.description or "" for name, col in self.model.to_schema().columns.items()}


@dataclass
class IngestResult:
    """A typed table and the rows that did not make it, with reasons."""

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


def empty_quarantine() -> pl.DataFrame:
    return pl.DataFrame(schema=QUARANTINE_SCHEMA)


def empty_table(spec: TableSpec) -> pl.DataFrame:
    return pl.DataFrame(schema=spec.dtypes())


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


def read_text_table(source: Path | bytes, *, name: str, expected: Sequence[str], optional: frozenset[str] = frozenset()) -> pl.DataFrame:
    """Read a CSV with every field as text, add ``_line`` and check the header.

    ``name`` is the file name used in messages (``source`` may be bytes from a decompressed file).
    Columns in ``optional`` may be absent (they are added as nulls). Raises ``IngestError``.
    """
    data = source if isinstance(source, bytes) else None
    if data is None:
        assert isinstance(source, Path)
        try:
            data = source.read_bytes()
        except OSError as exc:
            raise IngestError(name, f"unreadable file: {exc}") from exc
    if not data.strip():
        return pl.DataFrame(schema={**{c: pl.String() for c in expected}, LINE: pl.Int64()})
    try:
        frame = pl.read_csv(io.BytesIO(data), infer_schema=False, has_header=True, raise_if_empty=False)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError, UnicodeDecodeError) as exc:
        raise IngestError(name, f"unreadable CSV: {exc}") from exc
    found = frame.columns
    missing = [c for c in expected if c not in found and c not in optional]
    if missing:
        extra = [c for c in found if c not in expected]
        hint = f"; unexpected columns {extra}" if extra else ""
        raise IngestError(name, f"missing column (header has {found}){hint}", line=1, column=missing[0])
    for col in optional:
        if col not in found:
            frame = frame.with_columns(pl.lit(None, dtype=pl.String()).alias(col))
    return frame.select(list(expected)).with_row_index(LINE, offset=2).with_columns(pl.col(LINE).cast(pl.Int64))


def _parse_expr(col: str, dtype: pl.DataType, null_tokens: frozenset[str]) -> pl.Expr:
    text = pl.col(col).str.strip_chars()
    text = pl.when(text.is_in(["", *null_tokens])).then(None).otherwise(text)
    if isinstance(dtype, pl.Datetime):
        return text.str.to_datetime(TIMESTAMP_FORMAT, time_unit=dtype.time_unit, time_zone=dtype.time_zone, strict=False)
    if dtype == pl.Int64():
        # Integers written as floats ("117.0") are accepted only when they are whole.
        as_float = text.cast(pl.Float64, strict=False)
        return pl.when(as_float == as_float.floor()).then(as_float.cast(pl.Int64, strict=False))
    if dtype == pl.Boolean():
        return text.str.to_lowercase().replace_strict({"true": True, "false": False, "1": True, "0": False}, default=None)
    return text.cast(dtype, strict=False)


def raw_line(columns: Sequence[str]) -> pl.Expr:
    """The row's fields joined back with commas (the source line, for quarantine)."""
    return pl.concat_str([pl.col(c).fill_null("") for c in columns], separator=",")


def typed_rows(text: pl.DataFrame, spec: TableSpec, *, source_file: str) -> IngestResult:
    """Cast a text frame (from ``read_text_table``) to the spec's types, then validate it.

    Extra table columns that are not in the source (e.g. ``cluster``) must already be present in
    ``text`` as typed columns; they are passed through.
    """
    dtypes = spec.dtypes()
    if text.height == 0:
        return IngestResult(
            empty_table(spec),
            quarantine_frame(spec.table, source_file, [1], None, "empty file: no data rows", ""),
            lines_in=1,
            files=[source_file],
        )
    source_cols = list(spec.columns)
    renamed = {src: dst for src, dst in spec.columns.items()}
    parsed = text.with_columns(raw_line(source_cols).alias("_raw"))
    parsed = parsed.with_columns(
        [_parse_expr(src, dtypes[dst], spec.null_tokens).alias(f"_p_{dst}") for src, dst in renamed.items()]
    )
    reasons = []
    for src, dst in renamed.items():
        bad = pl.col(f"_p_{dst}").is_null() & ~pl.col(src).str.strip_chars().is_in(["", *spec.null_tokens]) & pl.col(src).is_not_null()
        reasons.append(pl.when(bad).then(pl.format("column {}: cannot parse {} as {}", pl.lit(dst), pl.col(src), pl.lit(str(dtypes[dst])))))
    parsed = parsed.with_columns(pl.coalesce(reasons).alias("_reason") if reasons else pl.lit(None, pl.String).alias("_reason"))
    parsed = parsed.with_columns(
        pl.col("_reason").str.extract(r"^column (\w+):", 1).alias("_column")
    )
    bad_parse = parsed.filter(pl.col("_reason").is_not_null())
    quarantine = [
        quarantine_frame(spec.table, source_file, bad_parse[LINE], None, bad_parse["_reason"], bad_parse["_raw"]).with_columns(
            column=bad_parse["_column"]
        )
    ]
    good = parsed.filter(pl.col("_reason").is_null())
    passthrough = [c for c in dtypes if c not in renamed.values()]
    good = good.select(
        LINE, "_raw", *[pl.col(c).cast(dtypes[c]) for c in passthrough], *[pl.col(f"_p_{d}").alias(d) for d in renamed.values()]
    )
    if spec.unique_key:
        dup = good.select(pl.struct(list(spec.unique_key)).is_first_distinct().not_()).to_series()
        dups = good.filter(dup)
        if dups.height:
            key = ", ".join(spec.unique_key)
            quarantine.append(
                quarantine_frame(spec.table, source_file, dups[LINE], spec.unique_key[0], f"duplicate {key} (first occurrence kept)", dups["_raw"])
            )
            good = good.filter(~dup)
    good, failed = validate_rows(good, spec, source_file)
    quarantine.extend(failed)
    return IngestResult(
        good.select(list(dtypes)),
        pl.concat(quarantine, how="vertical").sort("line"),
        lines_in=text.height,
        files=[source_file],
    )


def validate_rows(frame: pl.DataFrame, spec: TableSpec, source_file: str) -> tuple[pl.DataFrame, list[pl.DataFrame]]:
    """Validate typed rows with the spec's pandera model; failing rows move to quarantine.

    ``frame`` carries ``_line`` and ``_raw`` beside the table's columns. A failure that names no
    row (a schema-level error) raises ``IngestError``: it means the code, not the data, is wrong.
    """
    if frame.height == 0:
        return frame, []
    table_cols = list(spec.dtypes())
    try:
        spec.model.validate(frame.select(table_cols), lazy=True)
        return frame, []
    except pa.errors.SchemaErrors as exc:
        cases = exc.failure_cases
    row_cases = cases.filter(pl.col("index").is_not_null())
    if row_cases.height < cases.height:
        first = cases.filter(pl.col("index").is_null()).row(0, named=True)
        raise IngestError(source_file, f"schema check {first['check']} failed: {first['failure_case']}", column=first["column"])
    reasons = (
        row_cases.with_columns(
            pl.format("{} failed check {} (value {})", pl.col("column"), pl.col("check"), pl.col("failure_case").str.slice(0, 80)).alias("reason")
        )
        .group_by("index", maintain_order=True)
        .agg(pl.col("reason").str.join("; "), pl.col("column").first())
        .with_columns(pl.col("index").cast(pl.UInt32))
    )
    indexed = frame.with_row_index("_idx")
    bad = indexed.join(reasons, left_on="_idx", right_on="index", how="inner")
    quarantine = quarantine_frame(spec.table, source_file, bad[LINE], None, bad["reason"], bad["_raw"]).with_columns(column=bad["column"])
    good = indexed.join(reasons.select("index"), left_on="_idx", right_on="index", how="anti").drop("_idx")
    return good, [quarantine]


def ingest_files(
    files: Sequence[tuple[Path, str]],
    spec: TableSpec,
    *,
    extra_columns: Callable[[Path], Mapping[str, object]] | None = None,
    reader: Callable[[Path], bytes] | None = None,
) -> IngestResult:
    """Ingest several files of one table (e.g. one per cluster) and concatenate them.

    ``files`` holds ``(path, display_name)`` pairs; ``extra_columns(path)`` gives constant columns
    (such as ``cluster``) for the rows of that file; ``reader`` turns a path into bytes (e.g. xz).
    """
    dtypes = spec.dtypes()
    results = []
    for path, display in files:
        source: Path | bytes = reader(path) if reader else path
        text = read_text_table(source, name=display, expected=list(spec.columns), optional=spec.optional_source_columns)
        extras = extra_columns(path) if extra_columns else {}
        text = text.with_columns([pl.lit(v, dtype=dtypes[k]).alias(k) for k, v in extras.items()])
        results.append(typed_rows(text, spec, source_file=display))
    return IngestResult.concat(results, spec)
