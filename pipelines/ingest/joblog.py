"""The generic job-log CSV (Kubernetes, LSF, PBS, ... exports) -> ``own_cluster_jobs`` rows + quarantine.

One row per job, a header line, comma-separated (RFC 4180 quotes allowed, no line breaks inside a
field). Columns, found by name (case-insensitive), in any order; others are ignored:

=============  ========  ==================================================================
column         required  value
=============  ========  ==================================================================
job_id         yes       any text, unique in the file
submit_time    yes       ISO 8601: ``2024-03-01T09:30:00``, with ``.fff`` and ``Z`` or ``+01:00``
                         optional (a space may replace the ``T``)
start_time     yes       as submit_time; empty, ``Unknown`` or ``None``: never started
end_time       yes       as submit_time; empty, ``Unknown`` or ``None``: not ended
num_gpus       yes       whole number >= 0
state          yes       COMPLETED for a run that finished normally; any other word is kept
                         (SUCCEEDED, SUCCESS and DONE are read as COMPLETED, EXIT as FAILED)
user           no        who ran it
name           no        job name (with user and num_gpus it makes the recurring group)
gpu_type       no        e.g. a100
energy_j       no        energy the scheduler measured for the job (J); 0 or empty: none
gpu_util_pct   no        the job's GPU utilisation over its GPUs (%)
=============  ========  ==================================================================

Times without an offset are read in the given time zone (``pipelines.ingest.own_cluster`` has the
DST rule); times with one are exact. Rows are quarantined for: a wrong number of fields, a time
that does not parse, a GPU count that is not a whole number >= 0, an empty job id or state, end
before start, an energy or utilisation that is not a number >= 0, a duplicate job id, and a value
beyond the bounds of ``pipelines.ingest.own_cluster`` (a GPU count above 100,000, too long to be a
64-bit integer included, a time before 2000 or in the future, a job longer than a year, a text
longer than its limit).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from pipelines.contracts.limits import (
    MAX_ALLOCATION_ENERGY_J,
    MAX_GPU_UTIL_PCT,
    MAX_GPUS_PER_JOB,
    MAX_ID_CHARS,
    MAX_NAME_CHARS,
    MAX_NODE_POWER_W,
    MAX_USER_CHARS,
)
from pipelines.ingest.common import LINE, IngestError, raw_texts
from pipelines.ingest.own_cluster import (
    Check,
    OwnTraceResult,
    Spill,
    apply_checks,
    at_most,
    check_timezone,
    csv_rows,
    energy_columns,
    finish,
    length_checks,
    normalised_state,
    quoted,
    rejected_lines,
    time_bounds,
    unknown_time,
    utc_times,
)
from pipelines.ingest.text_reader import (
    RAW,
    TEXT,
    Progress,
    ReadLimits,
    Source,
    block_lines,
    check_header_text,
)
from pipelines.vocabulary.units import US_PER_S

#: Columns of the generic CSV and whether a file must have them.
COLUMNS: dict[str, bool] = {
    "job_id": True, "submit_time": True, "start_time": True, "end_time": True, "num_gpus": True, "state": True,
    "user": False, "name": False, "gpu_type": False, "energy_j": False, "gpu_util_pct": False,
}
REQUIRED: tuple[str, ...] = tuple(c for c, needed in COLUMNS.items() if needed)
#: Other schedulers' words for a normal end, and for a failure.
STATE_ALIASES: dict[str, str] = {"SUCCEEDED": "COMPLETED", "SUCCESS": "COMPLETED", "DONE": "COMPLETED", "EXIT": "FAILED"}
_ISO = r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})?$"
_TIMES = ("submit_time", "start_time", "end_time")
#: The limits of the text fields: column -> (the frame's column, most characters).
_LENGTHS = {"job_id": ("job_id", MAX_ID_CHARS), "user": ("user", MAX_USER_CHARS), "name": ("job_name", MAX_NAME_CHARS),
            "gpu_type": ("gpu_type", MAX_NAME_CHARS), "state": ("state", MAX_NAME_CHARS)}


def _text(column: str) -> str:
    """The name a time column's text takes while its parsed value takes the column's name."""
    return f"_text_{column}"


def _header(head: str, name: str) -> tuple[dict[str, int], list[str]]:
    """(column -> field index, with ``_fields`` the count of fields; the header's fields)."""
    check_header_text(head, name, "a job-log CSV")
    fields = csv_rows(pl.Series([head]))[0] if '"' in head else head.split(",")
    if isinstance(fields, str):
        raise IngestError(name, f"the header is not CSV ({fields[:200]})", line=1)
    index: dict[str, int] = {}
    for i, field in enumerate(fields):
        column = field.strip().lower()
        if column in COLUMNS:
            if column in index:
                raise IngestError(name, f"column {column} appears twice (fields {index[column] + 1} and {i + 1})", line=1, column=column)
            index[column] = i
    missing = [c for c in REQUIRED if c not in index]
    if missing:
        shown = f"{fields[:12]} and {len(fields) - 12} more" if len(fields) > 12 else str(fields)
        raise IngestError(name, f"missing column (the header has {shown[:300]}); the generic CSV needs {', '.join(REQUIRED)}", line=1,
                          column=missing[0])
    index["_fields"] = len(fields)
    return index, fields


def _split_block(lines: pl.DataFrame, index: dict[str, int]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One block's lines -> (rows as text fields + ``_line``, rejected lines)."""
    n = index["_fields"]
    wanted = {c: i for c, i in index.items() if c != "_fields"}
    usable = lines.filter(pl.col("_utf8"))
    quoted_lines = usable.filter(pl.col(TEXT).str.contains('"', literal=True))
    plain = usable.filter(~pl.col(TEXT).str.contains('"', literal=True))
    plain = plain.with_columns((pl.col(TEXT).str.count_matches(",", literal=True) + 1).alias("_n"))
    parts = plain.filter(pl.col("_n") == n).select(LINE, pl.col(TEXT).str.split_exact(",", n - 1).alias("_f"))
    frames = [parts.select(LINE, *[pl.col("_f").struct.field(f"field_{i}").alias(c) for c, i in wanted.items()])]
    counts = [plain.select(LINE, TEXT, "_n", pl.lit(None, pl.String).alias("_csv_error"))]
    if quoted_lines.height:
        rows = csv_rows(quoted_lines[TEXT])
        counts.append(quoted_lines.select(LINE, TEXT).with_columns(
            pl.Series("_n", [len(r) if isinstance(r, list) else 0 for r in rows], dtype=pl.UInt32),
            pl.Series("_csv_error", [r if isinstance(r, str) else None for r in rows], dtype=pl.String)))
        good = [(line, r) for line, r in zip(quoted_lines[LINE].to_list(), rows, strict=True) if isinstance(r, list) and len(r) == n]
        frames.append(pl.DataFrame({LINE: [line for line, _ in good], **{c: [r[i] for _, r in good] for c, i in wanted.items()}},
                                   schema={LINE: pl.Int64, **dict.fromkeys(wanted, pl.String)}))
    wrong = pl.concat(counts, how="vertical_relaxed").filter((pl.col("_n") != n) | pl.col("_csv_error").is_not_null()).rechunk()
    rejected = [
        rejected_lines(lines, ~pl.col("_utf8"), None, pl.lit("line is not valid UTF-8")),
        wrong.select(LINE, raw_texts(wrong[TEXT]).alias(RAW), pl.lit(None, pl.String).alias("column"),
                     pl.when(pl.col(TEXT).str.strip_chars() == "").then(pl.lit("empty line"))
                     .when(pl.col("_csv_error").is_not_null()).then(pl.lit("cannot split the line as CSV: ") + pl.col("_csv_error"))
                     .otherwise(pl.lit("wrong number of fields: ") + pl.col("_n").cast(pl.String) + pl.lit(f" (the header has {n})"))
                     .alias("reason")),
    ]
    return pl.concat(frames, how="vertical_relaxed"), pl.concat(rejected)


def _iso_parts(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().str.extract_groups(_ISO)


def _times(frame: pl.DataFrame, timezone: str) -> pl.DataFrame:
    """UTC submit/start/end from ISO text: naive ones by the DST rule, ones with an offset exactly."""
    frame = frame.rename({c: _text(c) for c in _TIMES}).with_columns(
        *[_iso_parts(_text(c)).alias(f"_iso_{c}") for c in _TIMES],
    ).with_columns(
        *[pl.concat_str(pl.col(f"_iso_{c}").struct.field("1"), pl.lit("T"), pl.col(f"_iso_{c}").struct.field("2")).alias(f"_naive_text_{c}")
          for c in _TIMES],
    )
    frame = utc_times(frame, {f"_naive_text_{c}": c for c in _TIMES}, timezone, None)
    updates = []
    for c in _TIMES:
        parts = pl.col(f"_iso_{c}")
        offset = parts.struct.field("4")
        sign = pl.when(offset.str.starts_with("-")).then(-1).otherwise(1)
        digits = offset.str.replace_all(r"[^0-9]", "")
        offset_s = pl.when(offset == "Z").then(0).otherwise(sign * (digits.str.slice(0, 2).cast(pl.Int64) * 3600
                                                                    + digits.str.slice(2, 2).cast(pl.Int64) * 60))
        exact = (pl.col(f"_naive_text_{c}").str.to_datetime("%Y-%m-%dT%H:%M:%S", time_unit="us", strict=False).dt.replace_time_zone("UTC")
                 - pl.duration(seconds=offset_s))
        fraction = pl.duration(microseconds=(("0" + parts.struct.field("3")).cast(pl.Float64) * US_PER_S).round().cast(pl.Int64).fill_null(0))
        updates += [
            (pl.when(offset.is_not_null()).then(exact).otherwise(pl.col(c)) + fraction).alias(c),
            (pl.col(f"_gap_{c}") & offset.is_null()).alias(f"_gap_{c}"),
        ]
    return frame.with_columns(updates)


def _typed(text: pl.DataFrame, index: dict[str, int], timezone: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    optional = {"user": "user", "name": "job_name", "gpu_type": "gpu_type"}
    text = text.with_columns(
        *[(pl.col(c).str.strip_chars() if c in index else pl.lit(None, pl.String)).replace("", None).alias(out) for c, out in optional.items()],
        pl.col("job_id").str.strip_chars().alias("job_id"),
        pl.col("num_gpus").str.strip_chars().cast(pl.Int64, strict=False).alias("_gpus"),
        *[(pl.col(c).str.strip_chars().replace("", None) if c in index else pl.lit(None, pl.String)).alias(f"_text_{c}")
          for c in ("energy_j", "gpu_util_pct")],
        normalised_state("state").replace(STATE_ALIASES).alias("_state"),
    )
    text = _times(text, timezone)
    checks = [Check("job_id", pl.col("job_id").fill_null("") == "", pl.lit("job_id: empty"))]
    for c in _TIMES:
        unknown = unknown_time(_text(c))
        if c == "submit_time":
            checks.append(Check(c, unknown, pl.lit("submit_time: missing (a job always has a submit time)")))
        checks.append(Check(c, ~unknown & pl.col(f"_iso_{c}").struct.field("1").is_null(),
                            pl.format(f"{c}: cannot parse {{}} as ISO 8601 (YYYY-MM-DDTHH:MM:SS, optional .fff and Z or +HH:MM)", quoted(_text(c)))))
        checks.append(Check(c, pl.col(f"_gap_{c}"),
                            pl.format(f"{c}: {{}} does not exist in {timezone} (skipped when clocks went forward); is the time zone right?",
                                      quoted(_text(c)))))
    checks += [
        Check("end_time", pl.col("end_time") < pl.col("start_time"),
              pl.format("end_time: {} is before start_time {}", quoted(_text("end_time")), quoted(_text("start_time")))),
        Check("num_gpus", ~_huge("num_gpus") & (pl.col("_gpus").is_null() | (pl.col("_gpus") < 0)),
              pl.format("num_gpus: {} is not a whole number >= 0", quoted("num_gpus"))),
        Check("num_gpus", _huge("num_gpus") | (pl.col("_gpus") > MAX_GPUS_PER_JOB),
              pl.format(f"num_gpus: {{}} is above {MAX_GPUS_PER_JOB:,} (a job's most GPUs)", quoted("num_gpus"))),
        *length_checks(_LENGTHS),
        *time_bounds({c: (_text(c), c) for c in _TIMES}, start="start_time", end="end_time"),
        at_most("energy_j", _number("_text_energy_j"), MAX_ALLOCATION_ENERGY_J, quoted("_text_energy_j"),
                f"{MAX_ALLOCATION_ENERGY_J:.3g} J (every node at {MAX_NODE_POWER_W / 1000:g} kW for a year)"),
        at_most("gpu_util_pct", _number("_text_gpu_util_pct"), MAX_GPU_UTIL_PCT, quoted("_text_gpu_util_pct"),
                f"{MAX_GPU_UTIL_PCT:,.0f} % per GPU"),
        Check("state", pl.col("_state").is_null(), pl.format("state: {} is not a state word", quoted("state"))),
        *[Check(c, _number(f"_text_{c}").is_null() & pl.col(f"_text_{c}").is_not_null(),
                pl.format(f"{c}: {{}} is not a number >= 0", quoted(f"_text_{c}"))) for c in ("energy_j", "gpu_util_pct")],
    ]
    good, bad = apply_checks(text, checks)
    typed = good.select(
        LINE, "job_id", pl.lit(None, pl.String).alias("job_id_raw"), "job_name", "user", pl.lit(None, pl.String).alias("account"),
        pl.lit(None, pl.String).alias("slurm_partition"), pl.lit(None, pl.String).alias("exit_code"), *_TIMES,
        pl.lit(None, pl.Float64).alias("elapsed_s"), pl.col("_state").alias("state"), pl.col("state").alias("state_raw"),
        pl.lit(None, pl.Int64).alias("num_nodes"), pl.col("_gpus").alias("num_gpus"), "gpu_type",
        *energy_columns(_number("_text_energy_j"), _number("_text_gpu_util_pct"), num_gpus="_gpus"),
    )
    return typed, bad


def _huge(column: str) -> pl.Expr:
    """A whole number of 7 digits or more (leading zeros aside): above MAX_GPUS_PER_JOB, maybe too long for a 64-bit integer."""
    return pl.col(column).str.strip_chars().str.contains(r"^\+?0*[1-9]\d{6,}$").fill_null(False)


def _number(column: str) -> pl.Expr:
    """A finite number >= 0 from text; null otherwise."""
    value = pl.col(column).cast(pl.Float64, strict=False)
    return pl.when(value.is_finite() & (value >= 0)).then(value)


def read_joblog(source: Path | bytes, *, trace: str, source_file: str, timezone: str = "UTC", digest: bool = True,
                columns: Sequence[str] | None = None, limits: ReadLimits | None = None,
                progress: Progress | None = None) -> OwnTraceResult:
    """One generic job-log CSV -> its rows, quarantine and line accounting (see the module docstring).

    ``columns``: the table's columns (default: all of ``own_cluster_jobs``'s; fewer hold less memory).

    Raises ``IngestError`` for a file that cannot be read at all: empty, a required column
    missing, an unknown time zone, or a file that changed while it was read.
    """
    try:
        check_timezone(timezone)
    except ValueError as exc:
        raise IngestError(source_file, str(exc)) from None
    reader = Source(source, source_file, digest=digest, limits=limits, progress=progress)
    with reader.whole_read():
        return _read(reader, source_file, trace, timezone, columns)


def _read(reader: Source, source_file: str, trace: str, timezone: str, columns: Sequence[str] | None) -> OwnTraceResult:
    if reader.is_blank():
        raise IngestError(source_file, f"empty file: expected a header line ({','.join(COLUMNS)})")
    index, names = _header(reader.first_line(), source_file)
    reader.bound_fields(",", names, quote_char='"')
    # Block by block: only a block's text is held, never the file's; the typed rows wait on disk (a Spill) for the finish.
    with Spill() as typed_parts:
        for block in reader.blocks():
            lines = block_lines(block)
            if block.first_line == 1:
                lines = lines.slice(1)
            text, bad = _split_block(lines, index)
            block_typed, block_bad = _typed(text, index, timezone)
            typed_parts.add(block_typed)
            del text, block_typed
            typed_parts.reject("blocks", bad, block_bad, reader.take_withheld())  # on disk as they come
        return finish(trace=trace, source=reader, fmt="csv", timezone=timezone, parts=typed_parts, header_lines=1,
                      steps_skipped=0, energy_source="energy_j" if "energy_j" in index else None, columns=columns)
