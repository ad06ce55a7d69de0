"""Slurm accounting exports (``sacct --parsable2`` or ``--parsable``) -> ``own_cluster_jobs`` rows + quarantine.

Export with (every field the reader uses; add ``-X`` to leave the steps out):

    sacct --allusers --starttime 2024-01-01 --endtime now --parsable2 \\
          --format=JobID,JobIDRaw,JobName,User,Account,Partition,Submit,Start,End,Elapsed,State,ExitCode,AllocTRES,NNodes,ConsumedEnergyRaw,TRESUsageInTot

Columns are found by header name (case-insensitive), in any order; others are ignored. Required:
JobID, Submit, Start, End, State, AllocTRES. Optional: JobIDRaw, JobName, User, Account,
Partition, Elapsed, ExitCode, NNodes, and the energy accounting ConsumedEnergyRaw and
TRESUsageInTot. ``--parsable`` ends every line with the delimiter (the header too); ``--parsable2``
does not; both are read. The delimiter is ``|`` unless sacct was given ``--delimiter X``: pass the
same character (``delimiter``). A ``--noheader`` export needs its field list (``fields``), in the
order of ``--format``. A file without the delimiter is refused: when every one of its first lines
holds another character the same number of times, the message names that character and the
option to pass; otherwise it is fixed-width output (sacct without ``--parsable*``, whose values
are cut to the column width) and the message says how to export.

Rules (each tested in tests/ingest/test_slurm.py), besides those of ``pipelines.ingest.own_cluster``:

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
* energy Slurm measured (``measured_energy_j``, J): the allocation row's ConsumedEnergyRaw, else
  ``energy=`` in its AllocTRES (the same number: sacct prints ConsumedEnergyRaw from it), else
  ``energy=`` in its TRESUsageInTot, else its steps' TRESUsageInTot the way Slurm adds a job's
  energy up from its steps (``stepmgr.c``: the ``extern`` step's alone when the job has one, i.e.
  under ``PrologFlags=Contain``; else the sum of the steps). TRESUsageInTot values may carry
  sacct's exact binary prefix (``2.50K`` = 2,560 J; ``--noconvert`` prints them raw). A 0 is what
  Slurm writes when it collects no energy (``AcctGatherEnergyType=acct_gather_energy/none``): it is
  ``energy_status = zero``, never a measurement. GPU utilisation (``gpu_util_pct``): the highest
  ``gres/gpuutil`` in TRESUsageInTot of the row or its steps (Slurm sums it over a step's tasks:
  100 per busy GPU) over the allocation's GPUs. A ConsumedEnergyRaw, or an ``energy=`` of the
  allocation row, that does not parse is quarantined; a step's that does not parse is not used.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.contracts.limits import (
    MAX_ALLOCATION_ENERGY_J,
    MAX_GPU_UTIL_PCT,
    MAX_GPUS_PER_JOB,
    MAX_ID_CHARS,
    MAX_JOB_S,
    MAX_NAME_CHARS,
    MAX_NODE_POWER_W,
    MAX_USER_CHARS,
)
from pipelines.ingest.common import LINE, IngestError
from pipelines.ingest.own_cluster import (
    Check,
    OwnTraceResult,
    Spill,
    apply_checks,
    at_most,
    check_timezone,
    energy_columns,
    finish,
    length_checks,
    normalised_state,
    quoted,
    rejected_lines,
    time_bounds,
    time_checks,
    utc_times,
)
from pipelines.ingest.text_reader import (
    TEXT,
    Block,
    Progress,
    ReadLimits,
    Source,
    block_lines,
    check_header_text,
    empty_rejected,
)

#: Every field the reader uses, as sacct names them, and whether the file must have it.
FIELDS: dict[str, bool] = {
    "JobID": True, "JobIDRaw": False, "JobName": False, "User": False, "Account": False, "Partition": False,
    "Submit": True, "Start": True, "End": True, "Elapsed": False, "State": True, "ExitCode": False, "AllocTRES": True, "NNodes": False,
    "ConsumedEnergyRaw": False, "TRESUsageInTot": False,
}
REQUIRED: tuple[str, ...] = tuple(f for f, needed in FIELDS.items() if needed)
#: The export command the docs and the error messages give.
EXPORT_COMMAND = ("sacct --allusers --starttime YYYY-MM-DD --endtime now --parsable2 "
                  "--format=JobID,JobIDRaw,JobName,User,Account,Partition,Submit,Start,End,Elapsed,State,ExitCode,AllocTRES,NNodes,"
                  "ConsumedEnergyRaw,TRESUsageInTot")
_JOB_ID = r"^\d+(?:_(?:\d+|\[[^\]]*\]))?(?:\+\d+)?$"
_ELAPSED = r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$"
_GPU_UNTYPED = r"(?:^|,)gres/gpu=([^,]*)"
_GPU_TYPED = r"(?:^|,)gres/gpu:[^=,]+=[^,]*"
#: ``energy=`` in a TRES string: a number with sacct's optional exact binary prefix (TRESUsageInTot prints 2.50K for 2560).
_TRES_ENERGY = r"(?:^|,)energy=([^,]*)"
_TRES_NUMBER = r"^(\d+(?:\.\d+)?)([KMGTP]?)$"
_GPUUTIL = r"(?:^|,)gres/gpuutil=(\d+(?:\.\d+)?)"
#: A GPU count of 7 digits or more (leading zeros aside): above MAX_GPUS_PER_JOB, and maybe beyond a 64-bit integer, which
#: a cast would turn into null (and so 0 GPUs).
_GPU_HUGE = r"(?:^|,)gres/gpu(?::[^=,]+)?=0*[1-9]\d{6,}(?:,|$)"
#: The limits of the text fields: sacct column -> (the frame's column, most characters).
_LENGTHS = {"JobID": ("JobID", MAX_ID_CHARS), "JobIDRaw": ("job_id_raw", MAX_ID_CHARS), "JobName": ("job_name", MAX_NAME_CHARS),
            "User": ("user", MAX_USER_CHARS), "Account": ("account", MAX_NAME_CHARS), "Partition": ("slurm_partition", MAX_NAME_CHARS),
            "State": ("State", MAX_NAME_CHARS), "ExitCode": ("exit_code", MAX_NAME_CHARS)}
#: The delimiter sacct writes unless given --delimiter.
DEFAULT_DELIMITER = "|"
#: Characters that occur inside sacct's values (times, TRES, ids, states): never taken for a delimiter.
_VALUE_CHARACTERS = frozenset("-:._/+=[]()%,@ ")
#: Text columns -> the contract's column for those copied as they are (empty -> null).
_TEXT_COLUMNS = {"JobIDRaw": "job_id_raw", "JobName": "job_name", "User": "user", "Account": "account", "Partition": "slurm_partition",
                 "ExitCode": "exit_code"}
_TIMES = {"Submit": "submit_time", "Start": "start_time", "End": "end_time"}


class Layout:
    """Where each field is on a line: canonical name -> field index, the field count, the delimiter and the trailing one."""

    def __init__(self, names: Sequence[str], *, trailing: bool, name: str, header_given: bool, delimiter: str = DEFAULT_DELIMITER) -> None:
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
            shown = list(names) if len(names) <= 12 else [*names[:12], "..."]
            # no field name at all on the first line: a --noheader export (its first job), which only --fields can read
            fix = (f"if the export has no header line (sacct --noheader), give its field list: --fields {','.join(REQUIRED)},... as "
                   f"given to sacct --format; else export with: {EXPORT_COMMAND}") if header_given and not self.index else \
                f"export with: {EXPORT_COMMAND}"
            raise IngestError(name, f"missing column ({where} has {shown}); {fix}", line=1 if header_given else None, column=missing[0])
        self.names = list(names)
        self.fields = len(names)
        self.trailing = trailing
        self.delimiter = delimiter

    @property
    def separators(self) -> int:
        """Delimiters per well-formed line: one between fields, and one more at the end with ``--parsable``."""
        return self.fields - 1 + (1 if self.trailing else 0)


def check_delimiter(delimiter: str) -> str:
    """``delimiter`` if it can be sacct's ``--delimiter`` here: one character, not a line break; else ``ValueError``."""
    if len(delimiter) != 1:
        raise ValueError(f"the delimiter must be one character, got {delimiter!r} ({len(delimiter)} characters)")
    if delimiter in "\r\n":
        raise ValueError("the delimiter cannot be a line break")
    return delimiter


def _char_name(char: str) -> str:
    return f"{char!r} (U+{ord(char):04X})" if not char.isprintable() or not char.isascii() else repr(char)


def constant_character(lines: Sequence[str]) -> tuple[str, int] | None:
    """(a character every line holds the same number of times, that number), most frequent first; None if there is none.

    Letters, digits, spaces and the characters of sacct's values (``-:._/+=[]()%,@``) are never
    candidates: a delimiter that occurs inside values could not be split on anyway.
    """
    lines = [line for line in lines if line.strip()]
    if not lines:
        return None
    found = []
    for char in set(lines[0]):
        if char.isalnum() or char in _VALUE_CHARACTERS or char in "\r\n":  # a line break cannot be a delimiter
            continue
        count = lines[0].count(char)
        if all(line.count(char) == count for line in lines[1:]):
            found.append((count, char))
    if not found:
        return None
    count, char = max(found)
    return char, count


def _check_first_lines(head_lines: Sequence[str], name: str, delimiter: str) -> None:
    """Refuse a file whose first line lacks the delimiter: name the character to pass, or explain fixed-width output."""
    head = head_lines[0]
    if delimiter in head:
        return
    other = constant_character(head_lines)
    shown = _char_name(delimiter)
    if other is not None:
        char, count = other
        option = f"--delimiter {char}" if char.isprintable() else f"--delimiter $'{char.encode('unicode_escape').decode('ascii')}'"
        raise IngestError(
            name,
            f"no {shown} in {head[:60]!r}, but each of the first {len([h for h in head_lines if h.strip()])} lines holds "
            f"{_char_name(char)} {count} times: an export written with sacct --delimiter; pass {option}",
            line=1,
        )
    if delimiter != DEFAULT_DELIMITER:
        raise IngestError(name, f"no {shown} (the delimiter given) in {head[:60]!r}: is it the delimiter sacct was given?", line=1)
    raise IngestError(
        name,
        f"no '|' in {head[:60]!r}: this looks like sacct's fixed-width output, whose values are cut to the column "
        f"width (e.g. 22105866.ba+); export with --parsable2: {EXPORT_COMMAND}",
        line=1,
    )


def layout_of(head: str, name: str, fields: Sequence[str] | None, delimiter: str = DEFAULT_DELIMITER,
              head_lines: Sequence[str] | None = None) -> tuple[Layout, int]:
    """(the layout of a file whose first line is ``head``, its header lines: 1, or 0 when ``fields`` is given for a --noheader export).

    ``head_lines`` (the first lines, ``head`` first) let the refusal of a file without the
    delimiter name the character it has instead.
    """
    if not head.strip():
        raise IngestError(name, f"the first line is empty: expected the sacct header (JobID{delimiter}...)", line=1)
    if fields is None:
        check_header_text(head, name, "a sacct export")
    _check_first_lines(list(head_lines or [head]), name, delimiter)
    if fields is None:
        trailing = head.endswith(delimiter)
        names = head.split(delimiter)[:-1] if trailing else head.split(delimiter)
        return Layout(names, trailing=trailing, name=name, header_given=True, delimiter=delimiter), 1
    names = list(fields)
    if [n.lower() for n in head.split(delimiter)[: len(names)]] == [n.lower() for n in names]:
        raise IngestError(name, "the file has a header line but --fields was given: leave --fields out (they are read from the header)",
                          line=1)
    trailing = head.count(delimiter) == len(names)  # --parsable: one delimiter per field
    return Layout(names, trailing=trailing, name=name, header_given=False, delimiter=delimiter), 0


def _rx(char: str) -> str:
    """``char`` as a regex literal (``\\x{...}``: the Rust engine of polars takes any code point so)."""
    return f"\\x{{{ord(char):X}}}"


def _is_step(job_id_index: int, delimiter: str = DEFAULT_DELIMITER) -> pl.Expr:
    """The line's JobID field (number ``job_id_index``, 0-based) holds a ``.``: a step (J.batch, J.0, J_7.extern, J+1.0)."""
    d = _rx(delimiter)
    before = rf"(?:[^{d}]*{d}){{{job_id_index}}}" if job_id_index else ""
    return pl.col(TEXT).str.contains(rf"^{before}[^{d}]*\.")


#: The fields of a step row the reader keeps: its job (the JobID before the first ``.``), its name, and its usage.
STEP_COLUMNS = ("JobID", "TRESUsageInTot")


def _fields(frame: pl.DataFrame, layout: Layout, wanted: Sequence[str]) -> pl.DataFrame:
    """Lines (``_line``, ``_text``) split into the ``wanted`` fields (empty -> null)."""
    parts = frame.select(LINE, pl.col(TEXT).str.split_exact(layout.delimiter, layout.fields - 1).alias("_f"))
    return parts.select(LINE, *[pl.col("_f").struct.field(f"field_{layout.index[f]}").replace("", None).alias(f) for f in wanted])


def _split_block(lines: pl.DataFrame, layout: Layout) -> tuple[pl.DataFrame, pl.DataFrame, int, pl.DataFrame | None]:
    """One block's lines -> (allocation rows as text fields, empty ones null, + ``_line``; rejected lines; steps skipped;
    the steps' ``STEP_COLUMNS`` when the file has TRESUsageInTot, else None)."""
    d = layout.delimiter
    separators = pl.col(TEXT).str.count_matches(d, literal=True)
    well_formed = separators == layout.separators
    if layout.trailing:
        well_formed = well_formed & pl.col(TEXT).str.ends_with(d)
    lines = lines.with_columns(well_formed.alias("_ok"))
    trailing = f" and a trailing {d}" if layout.trailing else ""
    rejected = [
        rejected_lines(lines, ~pl.col("_utf8"), None, pl.lit("line is not valid UTF-8")),
        rejected_lines(
            lines, pl.col("_utf8") & ~pl.col("_ok"), None,
            pl.when(pl.col(TEXT).str.strip_chars() == "").then(pl.lit("empty line")).otherwise(
                pl.format(f"wrong number of fields: {{}} (the header has {layout.fields}{trailing})",
                          separators + 1 - (1 if layout.trailing else 0))),
        ),
    ]
    usable = lines.filter(pl.col("_utf8") & pl.col("_ok"))
    is_step = _is_step(layout.index["JobID"], d)
    steps = int(usable.select(is_step.sum()).item() or 0)
    text = _fields(usable.filter(~is_step), layout, list(layout.index))
    step_rows = _fields(usable.filter(is_step), layout, STEP_COLUMNS) if "TRESUsageInTot" in layout.index else None
    return text, pl.concat(rejected), steps, step_rows


def _fast_block(block: Block, layout: Layout, skip: int) -> tuple[pl.DataFrame, int, pl.DataFrame | None] | None:
    """(allocation rows as text fields + ``_line``, steps, the steps' ``STEP_COLUMNS`` as ``_split_block``) of a
    well-formed block, read by polars' CSV reader; else None.

    Well-formed: valid UTF-8, and every line has exactly the header's number of fields. The reader
    raises on a line with too many fields or a byte that is not UTF-8; a line with too few cannot
    be told from one with empty fields, so the block's delimiters are counted: every line has at
    most the right number, so a total of exactly lines x separators means every line has exactly
    that. Anything else (a blank line, a withheld line included) returns None, and ``_split_block`` finds and
    quarantines the lines at fault. The reader takes a one-byte delimiter only: a file with
    another (``--delimiter=☃``) takes the block path. ``skip``: the block's first line is the header.
    """
    delimiter = layout.delimiter.encode()
    data_lines = block.lines - skip
    if len(delimiter) != 1 or data_lines <= 0 or block.withheld:
        return None
    if int(np.count_nonzero(np.frombuffer(block.data, dtype=np.uint8) == delimiter[0])) != block.lines * layout.separators:
        return None
    try:
        rows = pl.read_csv(block.data, separator=layout.delimiter, has_header=False, skip_rows=skip, quote_char=None,
                           infer_schema=False, empty_string_is_null=True, raise_if_empty=False)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError, pl.exceptions.ShapeError):
        return None
    if rows.height != data_lines:
        return None
    rows = rows.select(pl.int_range(block.first_line + skip, block.first_line + block.lines, dtype=pl.Int64).alias(LINE),
                       *(pl.nth(i).alias(field) for field, i in layout.index.items()))
    is_step = pl.col("JobID").str.contains(".", literal=True).fill_null(False)
    text = rows.filter(~is_step)
    step_rows = rows.filter(is_step).select(LINE, *STEP_COLUMNS) if "TRESUsageInTot" in layout.index else None
    return text, data_lines - text.height, step_rows


def _split(block: Block, layout: Layout, header_lines: int) -> tuple[pl.DataFrame, pl.DataFrame, int, pl.DataFrame | None]:
    """One block -> ``_split_block``'s four parts: by polars' CSV reader when the block is well-formed, else line by line."""
    skip = 1 if header_lines and block.first_line == 1 else 0
    fast = _fast_block(block, layout, skip)
    if fast is not None:
        text, steps, step_rows = fast
        return text, empty_rejected(), steps, step_rows
    lines = block_lines(block)
    return _split_block(lines.slice(skip) if skip else lines, layout)


def _tres_number(value: pl.Expr) -> pl.Expr:
    """A TRES count as sacct prints it (``12345``, ``2.50K``: binary prefixes) -> float; null when it does not parse."""
    parts = value.str.strip_chars().str.extract_groups(_TRES_NUMBER)
    scale = parts.struct.field("2").replace_strict({"": 1.0, "K": 1024.0, "M": 1024.0**2, "G": 1024.0**3, "T": 1024.0**4,
                                                     "P": 1024.0**5}, default=None, return_dtype=pl.Float64)
    return parts.struct.field("1").cast(pl.Float64) * scale


def _step_usage(steps: pl.DataFrame | None) -> pl.DataFrame | None:
    """One block's steps' TRESUsageInTot -> per job (``_job``, in file order) the parts ``_combine_usage`` adds up:
    whether it has an ``extern`` step and that step's energy, the sum of its steps' energies and whether any has one,
    and the highest GPU utilisation."""
    if steps is None or steps.height == 0:
        return None
    job_and_step = pl.col("JobID").str.splitn(".", 2)  # a step row's JobID has a dot: <job>.<step>, the step after the first
    usage = steps.select(
        job_and_step.struct.field("field_0").alias("_job"),
        (job_and_step.struct.field("field_1") == "extern").alias("_extern"),
        _tres_number(pl.col("TRESUsageInTot").str.extract(_TRES_ENERGY, 1)).alias("_energy"),
        pl.col("TRESUsageInTot").str.extract(_GPUUTIL, 1).cast(pl.Float64, strict=False).alias("_util"),
    )
    energy = pl.col("_energy")
    return usage.group_by("_job", maintain_order=True).agg(
        pl.col("_extern").any().alias("_has_extern"),
        energy.filter(pl.col("_extern")).first().alias("_extern_energy"),
        energy.sum().alias("_sum_energy"),
        energy.is_not_null().any().alias("_any_energy"),
        pl.col("_util").max().alias("_step_util"),
    )


def _combine_usage(parts: Sequence[pl.DataFrame]) -> pl.DataFrame | None:
    """The blocks' ``_step_usage`` -> per job ``_step_energy`` (Slurm's rule: the first ``extern`` step's, else the sum of
    its steps' when any has one) and ``_step_util`` (the highest); a job's steps may lie in two blocks."""
    if not parts:
        return None
    usage = pl.concat(parts, how="vertical").group_by("_job", maintain_order=True).agg(
        pl.col("_has_extern").any(),
        pl.col("_extern_energy").filter(pl.col("_has_extern")).first(),
        pl.col("_sum_energy").sum(),
        pl.col("_any_energy").any(),
        pl.col("_step_util").max(),
    )
    return usage.select(
        "_job",
        pl.when(pl.col("_has_extern")).then(pl.col("_extern_energy"))
        .otherwise(pl.when(pl.col("_any_energy")).then(pl.col("_sum_energy"))).alias("_step_energy"),
        "_step_util",
    )


def _with_step_usage(parts: Spill, usage: pl.DataFrame | None) -> None:
    """The blocks' typed rows to be read back each with ``_step_energy`` and ``_step_util`` (``_combine_usage``: null for a
    job without steps), where any step reported usage. One join of every row's job id, not one a batch: each join hashes
    ``usage`` whole (on a million allocations, 16 joins took 1.2 s and this one 0.2 s)."""
    if usage is None or not len(parts):
        return
    keys = parts.columns("job_id")
    parts.beside(keys.join(usage, left_on="job_id", right_on="_job", how="left", maintain_order="left").select("_step_energy", "_step_util"))


def _energy_columns(typed: pl.DataFrame) -> pl.DataFrame:
    """Typed rows (with their own ``_energy`` and ``_util``, and their steps' from ``_with_step_usage`` where any step reported
    usage) -> the contract's energy columns, a row's own energy first, else its steps'; the utilisation the highest of
    both, over the allocation's GPUs."""
    if "_step_energy" in typed.columns:
        typed = typed.with_columns(
            pl.coalesce("_energy", "_step_energy").alias("_energy"), pl.max_horizontal("_util", "_step_util").alias("_util"),
        )
    energy = energy_columns(pl.col("_energy"), pl.col("_util") / pl.col("num_gpus"))
    return typed.with_columns(energy).select(*typed.columns[: typed.columns.index("_energy")], *(e.meta.output_name() for e in energy),
                                             "_alloc_energy")


def _energy(text: pl.DataFrame, layout: Layout) -> pl.DataFrame:
    """Add the row's own ``_energy`` (J as reported: may be 0; null: none), ``_raw_bad``/``_tres_bad`` (a row's value that
    does not parse) and ``_util`` (its steps' come in later: ``_with_step_usage``)."""
    has = layout.index
    raw = pl.col("ConsumedEnergyRaw").str.strip_chars() if "ConsumedEnergyRaw" in has else pl.lit(None, pl.String)
    tres = pl.col("TRESUsageInTot") if "TRESUsageInTot" in has else pl.lit(None, pl.String)
    raw_value = raw.cast(pl.Float64, strict=False)
    tres_text = tres.str.extract(_TRES_ENERGY, 1)
    tres_value = _tres_number(tres_text)
    alloc_value = pl.col("AllocTRES").str.extract(r"(?:^|,)energy=(\d+)(?:,|$)", 1).cast(pl.Float64)
    frame = text.with_columns(
        ((raw.is_not_null() & (raw_value.is_null() | (raw_value < 0) | ~raw_value.is_finite()))).fill_null(False).alias("_raw_bad"),
        (tres_text.is_not_null() & tres_value.is_null()).fill_null(False).alias("_tres_bad"),
        pl.coalesce(raw_value, alloc_value, tres_value).alias("_energy"),
        alloc_value.is_not_null().alias("_alloc_energy"),
        tres.str.extract(_GPUUTIL, 1).cast(pl.Float64, strict=False).alias("_util"),
    )
    return frame


def _energy_field(has: dict[str, int]) -> str:
    """The column an allocation's energy is read from first (named in a quarantine row)."""
    return "ConsumedEnergyRaw" if "ConsumedEnergyRaw" in has else "TRESUsageInTot" if "TRESUsageInTot" in has else "AllocTRES"


def _energy_source(layout: Layout, alloc_energy: bool, step_usage: bool) -> str | None:
    """Which field of the export carries Slurm's energy accounting (named in the report), or None (``alloc_energy``: some
    allocation row had ``energy=`` in its AllocTRES; ``step_usage``: some step row had TRESUsageInTot)."""
    if "ConsumedEnergyRaw" in layout.index:
        return "ConsumedEnergyRaw"
    if alloc_energy:
        return "AllocTRES"
    if "TRESUsageInTot" in layout.index:
        return "TRESUsageInTot of the steps" if step_usage else "TRESUsageInTot"
    return None


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
        tres.str.contains(_GPU_HUGE).fill_null(False).alias("_gpu_huge"),
    ).drop("_untyped", "_n_typed", "_typed", "_types", "_total", "_bad_typed")


def _typed(text: pl.DataFrame, layout: Layout, timezone: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Text fields of the allocation rows (an empty field null) -> (typed rows with ``_line``, rejected rows).

    The typed rows end in the row's own ``_energy`` and ``_util`` and ``_alloc_energy``; ``_energy_columns`` turns them
    into the contract's energy columns once the steps of the whole file are known.
    """
    has = layout.index
    text = text.with_columns(
        *[(pl.col(c) if c in has else pl.lit(None, pl.String)).alias(out) for c, out in _TEXT_COLUMNS.items()],
        (pl.col("Elapsed") if "Elapsed" in has else pl.lit(None, pl.String)).alias("Elapsed"),
        *[(pl.col(c) if c in has else pl.lit(None, pl.String)).alias(c) for c in ("NNodes", "ConsumedEnergyRaw", "TRESUsageInTot")],
        normalised_state("State").alias("state"),
        pl.col("JobID").str.strip_chars().fill_null("").alias("JobID"),
        pl.col("State").fill_null("").alias("State"),
        pl.col("AllocTRES").fill_null("").alias("AllocTRES"),
    ).with_columns(_elapsed_seconds("Elapsed").alias("elapsed_s"), pl.col("NNodes").cast(pl.Int64, strict=False).alias("num_nodes"))
    text = utc_times(_energy(_gpus(text), layout), _TIMES, timezone, "elapsed_s")
    checks = [
        Check("JobID", ~pl.col("JobID").str.contains(_JOB_ID), pl.format("JobID: {} is not a Slurm job id (J, J_7, J_[1-4], J+1)", quoted("JobID"))),
        *time_checks(_TIMES, timezone, required="Submit"),
        Check("End", pl.col("end_time") < pl.col("start_time"),
              pl.format("End: {} is before Start {}", quoted("End"), quoted("Start"))),
        Check("State", pl.col("state").is_null(), pl.format("State: {} is not a Slurm state", quoted("State"))),
        Check("AllocTRES", pl.col("_gpu_bad"), pl.format("AllocTRES: cannot parse the GPU count in {}", quoted("AllocTRES"))),
        Check("AllocTRES", ~pl.col("_gpu_bad") & (pl.col("_gpu_huge") | (pl.col("num_gpus") > MAX_GPUS_PER_JOB)),
              pl.format(f"AllocTRES: the GPU count in {{}} is above {MAX_GPUS_PER_JOB:,} (a job's most GPUs)", quoted("AllocTRES"))),
        Check("AllocTRES", pl.col("gpu_type").str.len_chars() > MAX_NAME_CHARS,
              pl.format(f"AllocTRES: the GPU type in {{}} is longer than {MAX_NAME_CHARS} characters", quoted("AllocTRES"))),
        *length_checks(_LENGTHS),
        *time_bounds({c: (c, out) for c, out in _TIMES.items()}, start="Start", end="End"),
        at_most("Elapsed", pl.col("elapsed_s"), MAX_JOB_S, quoted("Elapsed"), "a year (366 days)"),
        at_most("NNodes", pl.col("num_nodes"), MAX_GPUS_PER_JOB, quoted("NNodes"), f"{MAX_GPUS_PER_JOB:,} (a job's most nodes)"),
        at_most(_energy_field(has), pl.col("_energy"), MAX_ALLOCATION_ENERGY_J, pl.col("_energy").cast(pl.String),
                f"{MAX_ALLOCATION_ENERGY_J:.3g} J (every node at {MAX_NODE_POWER_W / 1000:g} kW for a year)"),
        at_most("TRESUsageInTot", pl.when(pl.col("num_gpus") > 0).then(pl.col("_util") / pl.col("num_gpus")), MAX_GPU_UTIL_PCT, pl.col("_util").cast(pl.String),
                f"{MAX_GPU_UTIL_PCT:,.0f} % per GPU"),
        Check("Elapsed", pl.col("Elapsed").is_not_null() & pl.col("elapsed_s").is_null(),
              pl.format("Elapsed: cannot parse {} ([D-]HH:MM:SS)", quoted("Elapsed"))),
        Check("NNodes", pl.col("NNodes").is_not_null() & pl.col("num_nodes").is_null(),
              pl.format("NNodes: cannot parse {} as a whole number", quoted("NNodes"))),
        Check("ConsumedEnergyRaw", pl.col("_raw_bad"),
              pl.format("ConsumedEnergyRaw: cannot parse {} as joules (a whole number >= 0)", quoted("ConsumedEnergyRaw"))),
        Check("TRESUsageInTot", pl.col("_tres_bad"),
              pl.format("TRESUsageInTot: cannot parse the energy in {}", quoted("TRESUsageInTot"))),
    ]
    good, bad = apply_checks(text, checks)
    typed = good.select(
        LINE, pl.col("JobID").alias("job_id"), *_TEXT_COLUMNS.values(), "submit_time", "start_time", "end_time", "elapsed_s",
        "state", pl.col("State").alias("state_raw"), "num_nodes", "num_gpus", "gpu_type",
        "_energy", "_util", "_alloc_energy",
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
    delimiter: str = DEFAULT_DELIMITER,
    columns: Sequence[str] | None = None,
    limits: ReadLimits | None = None,
    progress: Progress | None = None,
) -> OwnTraceResult:
    """One sacct export -> its allocation rows, quarantine and line accounting (see the module docstring).

    ``source_file`` names the file in messages and quarantine rows. ``timezone`` is the cluster's
    (IANA name); ``fields`` the ``--format`` list of a ``--noheader`` export; ``delimiter`` the
    character given to sacct's ``--delimiter`` (default ``|``); ``digest=False`` skips the sha256;
    ``columns``: the table's columns (default: all of ``own_cluster_jobs``'s; fewer hold less memory).
    Raises ``IngestError`` (file, line, column) for a file that cannot be read at all: empty,
    without the delimiter (fixed-width, or another delimiter: named), a required column missing, a
    delimiter that is not one character, an unknown time zone, or a file that changed while it was read.
    """
    try:
        check_timezone(timezone)
        check_delimiter(delimiter)
    except ValueError as exc:
        raise IngestError(source_file, str(exc)) from None
    reader = Source(source, source_file, digest=digest, limits=limits, progress=progress)
    with reader.whole_read():
        return _read(reader, source_file, trace, timezone, fields, delimiter, columns)


def _read(reader: Source, source_file: str, trace: str, timezone: str, fields: Sequence[str] | None, delimiter: str,
          columns: Sequence[str] | None) -> OwnTraceResult:
    if reader.is_blank():
        raise IngestError(source_file, f"empty file: expected a sacct export with a header line (JobID{delimiter}...)")
    head = reader.head_lines()
    layout, header_lines = layout_of(head[0], source_file, fields, delimiter, head)
    reader.bound_fields(delimiter, layout.names, header_lines=header_lines)
    # Block by block (CHUNK_BYTES of whole lines): only a block's text is held, never the file's; the typed rows wait on
    # disk (a Spill) for the steps of the whole file and the finish, which reads them back a block at a time.
    with Spill() as typed_parts:
        steps, usage_parts, alloc_energy = 0, [], False
        for block in reader.blocks():
            text, bad, block_steps, step_rows = _split(block, layout, header_lines)
            block_typed, block_bad = _typed(text, layout, timezone)
            alloc_energy = alloc_energy or bool(block_typed["_alloc_energy"].any())
            typed_parts.add(block_typed)
            del text, block_typed
            typed_parts.reject("blocks", bad, block_bad, reader.take_withheld())  # on disk as they come
            steps += block_steps
            if (usage := _step_usage(step_rows)) is not None:
                usage_parts.append(usage)
        _with_step_usage(typed_parts, _combine_usage(usage_parts))
        return finish(trace=trace, source=reader, fmt="sacct", timezone=timezone, parts=typed_parts,
                      header_lines=header_lines, steps_skipped=steps,
                      energy_source=_energy_source(layout, alloc_energy, bool(usage_parts)), prepare=_energy_columns, columns=columns)


def parse_fields(text: str) -> list[str]:
    """``JobID,JobName,...`` (a ``--format`` list, ``%width`` suffixes allowed) -> field names."""
    names = [re.sub(r"%-?\d+$", "", f.strip()) for f in text.split(",")]
    if not all(names):
        raise ValueError(f"empty name in the field list {text!r}")
    return names
