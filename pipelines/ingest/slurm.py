"""Slurm accounting exports (``sacct --parsable2`` or ``--parsable``) -> ``own_cluster_jobs`` rows + quarantine.

Export with (every field the reader uses; add ``-X`` to leave the steps out):

    sacct --allusers --starttime 2024-01-01 --endtime now --parsable2 \\
          --format=JobID,JobIDRaw,JobName,User,Account,Partition,Submit,Start,End,Elapsed,State,ExitCode,AllocTRES,NNodes

Columns are found by header name (case-insensitive), in any order; others are ignored. Required:
JobID, Submit, Start, End, State, AllocTRES. Optional: JobIDRaw, JobName, User, Account,
Partition, Elapsed, ExitCode, NNodes. ``--parsable`` ends every line with ``|`` (the header too);
``--parsable2`` does not; both are read. A ``--noheader`` export needs its field list (``fields``),
in the order of ``--format``. Fixed-width output (no ``|``: sacct without ``--parsable*``, whose
values are cut to the column width) is refused with a message saying how to export.

Rules (each tested in tests/test_slurm_reader.py), besides those of ``pipelines.ingest.owntrace``:

* a line with another number of fields than the header is quarantined;
* a row whose JobID has a ``.`` is a step (``J.batch``, ``J.extern``, ``J.0``, ``J_7.batch``,
  ``J+1.0``): counted in ``steps_skipped``, never a job, not parsed further;
* array elements (``J_7``), pending arrays not yet split (``J_[0-31]``) and heterogeneous-job
  components (``J+0``, ``J+1``) are allocations of their own; any other JobID is quarantined;
* GPUs come from AllocTRES: ``gres/gpu=N`` and/or ``gres/gpu:<type>=N``; when both appear they are
  the same GPUs (the untyped total counts); the type goes to ``gpu_type`` (several types: sorted,
  comma-separated). A GPU count that is not a whole number is quarantined;
* Submit, Start and End are local times in the given time zone; ``Unknown``/``None`` (or empty)
  Start or End means not started / not ended. Elapsed (``[D-]HH:MM:SS[.ffffff]`` or ``MM:SS``)
  and NNodes must parse when present.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from pipelines.ingest.common import LINE, IngestError
from pipelines.ingest.owntrace import (
    TEXT,
    Check,
    OwnTraceResult,
    Source,
    apply_checks,
    block_lines,
    check_timezone,
    empty_rejected,
    finish,
    normalised_state,
    quoted,
    rejected_lines,
    time_checks,
    utc_times,
)

#: Every field the reader uses, as sacct names them, and whether the file must have it.
FIELDS: dict[str, bool] = {
    "JobID": True, "JobIDRaw": False, "JobName": False, "User": False, "Account": False, "Partition": False,
    "Submit": True, "Start": True, "End": True, "Elapsed": False, "State": True, "ExitCode": False, "AllocTRES": True, "NNodes": False,
}
REQUIRED: tuple[str, ...] = tuple(f for f, needed in FIELDS.items() if needed)
#: The export command the docs and the error messages give.
EXPORT_COMMAND = ("sacct --allusers --starttime YYYY-MM-DD --endtime now --parsable2 "
                  "--format=JobID,JobIDRaw,JobName,User,Account,Partition,Submit,Start,End,Elapsed,State,ExitCode,AllocTRES,NNodes")
_JOB_ID = r"^\d+(?:_(?:\d+|\[[^\]]*\]))?(?:\+\d+)?$"
_ELAPSED = r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$"
_GPU_UNTYPED = r"(?:^|,)gres/gpu=([^,]*)"
_GPU_TYPED = r"(?:^|,)gres/gpu:[^=,]+=[^,]*"
#: Text columns -> the contract's column for those copied as they are (empty -> null).
_TEXT_COLUMNS = {"JobIDRaw": "job_id_raw", "JobName": "job_name", "User": "user", "Account": "account", "Partition": "slurm_partition",
                 "ExitCode": "exit_code"}
_TIMES = {"Submit": "submit_time", "Start": "start_time", "End": "end_time"}


class Layout:
    """Where each field is on a line: canonical name -> field index, the field count and the trailing ``|``."""

    def __init__(self, names: Sequence[str], *, trailing: bool, name: str, header_given: bool) -> None:
        canonical = {f.lower(): f for f in FIELDS}
        self.index: dict[str, int] = {}
        for i, raw in enumerate(names):
            field = canonical.get(raw.strip().lower())
            if field is None:
                continue
            if field in self.index:
                raise IngestError(name, f"column {field} appears twice (fields {i + 1} and {self.index[field] + 1})", line=1, column=field)
            self.index[field] = i
        missing = [f for f in REQUIRED if f not in self.index]
        if missing:
            where = "the header" if header_given else "the field list given"
            raise IngestError(name, f"missing column ({where} has {list(names)}); export with: {EXPORT_COMMAND}",
                              line=1 if header_given else None, column=missing[0])
        self.fields = len(names)
        self.trailing = trailing

    @property
    def separators(self) -> int:
        """``|`` per well-formed line: one between fields, and one more at the end with ``--parsable``."""
        return self.fields - 1 + (1 if self.trailing else 0)


def _refuse_fixed_width(line: str, name: str, line_no: int) -> None:
    if "|" not in line:
        raise IngestError(
            name,
            f"no '|' in {line[:60]!r}: this looks like sacct's fixed-width output, whose values are cut to the column "
            f"width (e.g. 22105866.ba+); export with --parsable2: {EXPORT_COMMAND}",
            line=line_no,
        )


def layout_of(head: str, name: str, fields: Sequence[str] | None) -> tuple[Layout, int]:
    """(the layout of a file whose first line is ``head``, its header lines: 1, or 0 when ``fields`` is given for a --noheader export)."""
    if not head.strip():
        raise IngestError(name, "the first line is empty: expected the sacct header (JobID|...)", line=1)
    _refuse_fixed_width(head, name, 1)
    if fields is None:
        trailing = head.endswith("|")
        names = head.split("|")[:-1] if trailing else head.split("|")
        return Layout(names, trailing=trailing, name=name, header_given=True), 1
    names = list(fields)
    if [n.lower() for n in head.split("|")[: len(names)]] == [n.lower() for n in names]:
        raise IngestError(name, "the file has a header line but --fields was given: leave --fields out (they are read from the header)",
                          line=1)
    trailing = head.count("|") == len(names)  # --parsable: one | per field
    return Layout(names, trailing=trailing, name=name, header_given=False), 0


def _is_step(job_id_index: int) -> pl.Expr:
    """The line's JobID field (number ``job_id_index``, 0-based) holds a ``.``: a step (J.batch, J.0, J_7.extern, J+1.0)."""
    before = rf"(?:[^|]*\|){{{job_id_index}}}" if job_id_index else ""
    return pl.col(TEXT).str.contains(rf"^{before}[^|]*\.")


def _split_block(lines: pl.DataFrame, layout: Layout) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """One block's lines -> (allocation rows as text fields, empty ones null, + ``_line``; rejected lines; steps skipped)."""
    separators = pl.col(TEXT).str.count_matches("|", literal=True)
    well_formed = separators == layout.separators
    if layout.trailing:
        well_formed = well_formed & pl.col(TEXT).str.ends_with("|")
    lines = lines.with_columns(well_formed.alias("_ok"))
    rejected = [
        rejected_lines(lines, ~pl.col("_utf8"), None, pl.lit("line is not valid UTF-8")),
        rejected_lines(
            lines, pl.col("_utf8") & ~pl.col("_ok"), None,
            pl.when(pl.col(TEXT).str.strip_chars() == "").then(pl.lit("empty line")).otherwise(
                pl.format(f"wrong number of fields: {{}} (the header has {layout.fields}{' and a trailing |' if layout.trailing else ''})",
                          separators + 1 - (1 if layout.trailing else 0))),
        ),
    ]
    usable = lines.filter(pl.col("_utf8") & pl.col("_ok"))
    is_step = _is_step(layout.index["JobID"])
    steps = int(usable.select(is_step.sum()).item() or 0)
    allocations = usable.filter(~is_step)
    parts = allocations.select(LINE, pl.col(TEXT).str.split_exact("|", layout.fields - 1).alias("_f"))
    wanted = {field: f"field_{i}" for field, i in layout.index.items()}
    text = parts.select(LINE, *[pl.col("_f").struct.field(f).replace("", None).alias(field) for field, f in wanted.items()])
    return text, pl.concat(rejected), steps


def _fast_split(reader: Source, layout: Layout, header_lines: int) -> tuple[pl.DataFrame, int] | None:
    """(allocation rows as text fields + ``_line``, steps) for a well-formed file in one polars CSV scan; else None.

    Well-formed: valid UTF-8, and every data line has exactly the header's number of fields. The
    scan raises on a line with too many fields or a byte that is not UTF-8; a line with too few
    cannot be told from one with empty fields, so the ``|`` of the whole file are counted (a pass
    over the bytes that also counts the lines): every line has at most the right number, so a
    total of exactly lines x separators means every line has exactly that. Anything else (a blank
    line included) returns None, and the block path finds and quarantines the lines at fault.
    """
    separators = reader.count(b"|")
    data_lines = reader.lines - header_lines
    if data_lines <= 0 or separators != (data_lines + header_lines) * layout.separators:
        return None
    fields = {field: pl.nth(i).alias(field) for field, i in layout.index.items()}
    try:
        scan = pl.scan_csv(reader.source, separator="|", has_header=bool(header_lines), quote_char=None, infer_schema=False,
                           empty_string_is_null=True, raise_if_empty=False)
        scan = scan.select(*fields.values()).with_row_index(LINE, offset=1 + header_lines).with_columns(pl.col(LINE).cast(pl.Int64))
        is_step = pl.col("JobID").str.contains(".", literal=True).fill_null(False)
        text, rows = pl.collect_all([scan.filter(~is_step), scan.select(pl.len())])
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError, pl.exceptions.ShapeError):
        return None
    if rows.item() != data_lines:
        return None
    return text, data_lines - text.height


def _elapsed_seconds(column: str) -> pl.Expr:
    parts = pl.col(column).str.extract_groups(_ELAPSED)
    days, hours = parts.struct.field("1").cast(pl.Float64), parts.struct.field("2").cast(pl.Float64)
    return (days.fill_null(0) * 86_400 + hours.fill_null(0) * 3600 + parts.struct.field("3").cast(pl.Float64) * 60
            + parts.struct.field("4").cast(pl.Float64))


def _gpus(frame: pl.DataFrame) -> pl.DataFrame:
    """num_gpus, gpu_type and ``_gpu_bad`` (a count that is not a whole number) from AllocTRES.

    The common shapes (no typed entry, or one) are read with one regex each; the rare rows with
    several typed entries (``gres/gpu:a100=2,gres/gpu:v100=1``) take a list path.
    """
    tres = pl.col("AllocTRES")
    digits = r"^\d+$"
    frame = frame.with_columns(
        tres.str.extract(_GPU_UNTYPED, 1).alias("_untyped"),
        tres.str.count_matches(_GPU_TYPED).alias("_n_typed"),
        tres.str.extract(r"(?:^|,)gres/gpu:([^=,]+)=", 1).alias("gpu_type"),
        tres.str.extract(r"(?:^|,)gres/gpu:[^=,]+=([^,]*)", 1).alias("_typed"),
    )
    several = frame.filter(pl.col("_n_typed") > 1)
    if several.height:
        entries = pl.col("AllocTRES").str.extract_all(_GPU_TYPED)
        several = several.select(
            LINE,
            entries.list.eval(pl.element().str.extract(r"gres/gpu:([^=]+)=", 1)).list.unique().list.sort().list.join(",").alias("_types"),
            entries.list.eval(pl.element().str.extract(r"=(.*)$", 1).cast(pl.Int64, strict=False)).list.sum().alias("_total"),
            entries.list.eval(~pl.element().str.extract(r"=(.*)$", 1).str.contains(digits)).list.any().alias("_bad_typed"),
        )
        frame = frame.join(several, on=LINE, how="left")
    else:
        frame = frame.with_columns(pl.lit(None, pl.String).alias("_types"), pl.lit(None, pl.Int64).alias("_total"),
                                   pl.lit(None, pl.Boolean).alias("_bad_typed"))
    untyped, typed = pl.col("_untyped"), pl.col("_typed")
    bad = (untyped.is_not_null() & ~untyped.str.contains(digits)) | (typed.is_not_null() & ~typed.str.contains(digits)) \
        | pl.col("_bad_typed").fill_null(False)
    return frame.with_columns(
        pl.coalesce(untyped.cast(pl.Int64, strict=False), pl.col("_total"), typed.cast(pl.Int64, strict=False), pl.lit(0)).alias("num_gpus"),
        pl.coalesce("_types", "gpu_type").alias("gpu_type"),
        bad.fill_null(False).alias("_gpu_bad"),
    ).drop("_untyped", "_n_typed", "_typed", "_types", "_total", "_bad_typed")


def _typed(text: pl.DataFrame, layout: Layout, timezone: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Text fields of the allocation rows (an empty field null) -> (typed rows with ``_line``, rejected rows)."""
    has = layout.index
    text = text.with_columns(
        *[(pl.col(c) if c in has else pl.lit(None, pl.String)).alias(out) for c, out in _TEXT_COLUMNS.items()],
        (pl.col("Elapsed") if "Elapsed" in has else pl.lit(None, pl.String)).alias("Elapsed"),
        (pl.col("NNodes") if "NNodes" in has else pl.lit(None, pl.String)).alias("NNodes"),
        normalised_state("State").alias("state"),
        pl.col("JobID").str.strip_chars().fill_null("").alias("JobID"),
        pl.col("State").fill_null("").alias("State"),
        pl.col("AllocTRES").fill_null("").alias("AllocTRES"),
    ).with_columns(_elapsed_seconds("Elapsed").alias("elapsed_s"), pl.col("NNodes").cast(pl.Int64, strict=False).alias("num_nodes"))
    text = utc_times(_gpus(text), _TIMES, timezone, "elapsed_s")
    checks = [
        Check("JobID", ~pl.col("JobID").str.contains(_JOB_ID), pl.format("JobID: {} is not a Slurm job id (J, J_7, J_[1-4], J+1)", quoted("JobID"))),
        *time_checks(_TIMES, timezone, required="Submit"),
        Check("End", pl.col("end_time") < pl.col("start_time"),
              pl.format("End: {} is before Start {}", quoted("End"), quoted("Start"))),
        Check("State", pl.col("state").is_null(), pl.format("State: {} is not a Slurm state", quoted("State"))),
        Check("AllocTRES", pl.col("_gpu_bad"), pl.format("AllocTRES: cannot parse the GPU count in {}", quoted("AllocTRES"))),
        Check("Elapsed", pl.col("Elapsed").is_not_null() & pl.col("elapsed_s").is_null(),
              pl.format("Elapsed: cannot parse {} ([D-]HH:MM:SS)", quoted("Elapsed"))),
        Check("NNodes", pl.col("NNodes").is_not_null() & pl.col("num_nodes").is_null(),
              pl.format("NNodes: cannot parse {} as a whole number", quoted("NNodes"))),
    ]
    good, bad = apply_checks(text, checks)
    typed = good.select(
        LINE, pl.col("JobID").alias("job_id"), *_TEXT_COLUMNS.values(), "submit_time", "start_time", "end_time", "elapsed_s",
        "state", pl.col("State").alias("state_raw"), "num_nodes", "num_gpus", "gpu_type",
    )
    return typed, bad


def read_sacct(
    source: Path | bytes,
    *,
    trace: str,
    source_file: str,
    timezone: str = "UTC",
    fields: Sequence[str] | None = None,
    digest: bool = True,
) -> OwnTraceResult:
    """One sacct export -> its allocation rows, quarantine and line accounting (see the module docstring).

    ``source_file`` names the file in messages and quarantine rows. ``timezone`` is the cluster's
    (IANA name); ``fields`` the ``--format`` list of a ``--noheader`` export; ``digest=False``
    skips the sha256. Raises ``IngestError`` (file, line, column) for a file that cannot be read
    at all: empty, fixed-width, a required column missing, or an unknown time zone.
    """
    try:
        check_timezone(timezone)
    except ValueError as exc:
        raise IngestError(source_file, str(exc)) from None
    reader = Source(source, source_file, digest=digest)
    if reader.is_blank():
        raise IngestError(source_file, "empty file: expected a sacct export with a header line (JobID|...)")
    layout, header_lines = layout_of(reader.first_line(), source_file, fields)
    rejected = [empty_rejected()]
    fast = _fast_split(reader, layout, header_lines)
    if fast is not None:
        text, steps = fast
    else:
        texts, steps = [], 0
        for block in reader.blocks():
            lines = block_lines(block)
            if header_lines and block.first_line == 1:
                lines = lines.slice(1)
            block_text, bad, block_steps = _split_block(lines, layout)
            texts.append(block_text)
            rejected.append(bad)
            steps += block_steps
        text = pl.concat(texts)
    typed, bad = _typed(text, layout, timezone)
    return finish(trace=trace, source=reader, fmt="sacct", timezone=timezone, typed=typed,
                  rejected=[*rejected, bad], header_lines=header_lines, steps_skipped=steps)


def parse_fields(text: str) -> list[str]:
    """``JobID,JobName,...`` (a ``--format`` list, ``%width`` suffixes allowed) -> field names."""
    names = [re.sub(r"%-?\d+$", "", f.strip()) for f in text.split(",")]
    if not all(names):
        raise ValueError(f"empty name in the field list {text!r}")
    return names
