"""The sacct reader, rule by rule, on small exports written here; and the line accounting on a generated one.

Every expected value is worked out by hand from the fixture (UTC offsets of Europe/Berlin: +01:00
in winter, +02:00 in summer; 2024's changes: 2024-03-31 02:00 -> 03:00 and 2024-10-27 03:00 -> 02:00).
"""

from __future__ import annotations

import hashlib
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines.contracts.base import validate
from pipelines.contracts.owncluster import OwnClusterJobs, OwnClusterTraces
from pipelines.ingest import own_cluster, slurm, text_reader
from pipelines.ingest.common import IngestError
from pipelines.ingest.own_cluster import OwnTraceResult
from pipelines.ingest.slurm import parse_fields, read_sacct
from pipelines.ingest.text_reader import Source
from tests.support.sacct_export import write_export

FIELDS = ("JobID", "JobIDRaw", "JobName", "User", "Account", "Partition", "Submit", "Start", "End", "Elapsed", "State", "ExitCode",
          "AllocTRES", "NNodes")
HEADER = "|".join(FIELDS)
GPU4 = "billing=32,cpu=32,gres/gpu:a100=4,gres/gpu=4,mem=256G,node=1"


def row(job: str, *, start: str = "2024-03-01T10:05:00", end: str = "2024-03-01T11:05:00", submit: str = "2024-03-01T10:00:00",
        state: str = "COMPLETED", tres: str = GPU4, name: str = "train", user: str = "alice", elapsed: str = "", nodes: str = "1") -> str:
    return "|".join([job, job, name, user, "acct", "gpu", submit, start, end, elapsed, state, "0:0", tres, nodes])


def step(job: str, suffix: str) -> str:
    return row(f"{job}.{suffix}", name=suffix, user="", tres="cpu=32,mem=256G,node=1", state="CANCELLED")


def read(lines: list[str], *, header: str | None = HEADER, timezone: str = "UTC", trailing: bool = False, **kw: Any) -> OwnTraceResult:
    body = [header] if header is not None else []
    text = "\n".join(line + ("|" if trailing else "") for line in [*body, *lines]) + "\n"
    result = read_sacct(text.encode(), trace="t", source_file="t.sacct", timezone=timezone, **kw)
    assert result.counts.accounted
    validate(result.table, OwnClusterJobs, name="own_cluster_jobs")
    validate(result.summary_row(), OwnClusterTraces, name="own_cluster_traces")
    return result


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def by_id(result: OwnTraceResult) -> dict[str, dict]:
    return {r["job_id"]: r for r in result.table.iter_rows(named=True)}


def quarantined(result: OwnTraceResult) -> list[tuple[int, str | None, str]]:
    return [(r["line"], r["column"], r["reason"]) for r in result.quarantine.iter_rows(named=True)]


def test_steps_are_skipped_and_counted_arrays_and_het_components_are_allocations() -> None:
    lines = [
        row("100"), step("100", "batch"), step("100", "extern"), step("100", "0"),
        row("200_7"), step("200_7", "batch"),
        row("300+0"), row("300+1"), step("300+1", "0"),
        row("400_[0-31]", start="Unknown", end="Unknown", state="PENDING", tres=""),
        row("401_[1,3,5-9%4]", start="Unknown", end="Unknown", state="PENDING", tres=""),
    ]
    result = read(lines)
    assert result.table["job_id"].to_list() == ["100", "200_7", "300+0", "300+1", "400_[0-31]", "401_[1,3,5-9%4]"]
    assert result.table["line"].to_list() == [2, 6, 8, 9, 11, 12]
    c = result.counts
    assert (c.lines, c.header_lines, c.allocations, c.steps_skipped, c.quarantined) == (12, 1, 6, 5, 0)
    assert (c.gpu_allocations, c.cpu_only, c.not_ended, c.completed_gpu_allocations) == (4, 0, 2, 4)


def test_parsable_and_parsable2_forms_and_allocations_only_read_the_same() -> None:
    lines = [row("100"), step("100", "batch"), row("101", state="FAILED"), step("101", "extern")]
    two = read(lines)
    one = read(lines, trailing=True)  # --parsable: every line ends with |
    allocations_only = read([lines[0], lines[2]])  # -X
    assert two.table.equals(one.table)
    assert two.table.drop("line").equals(allocations_only.table.drop("line"))
    assert (two.counts.steps_skipped, one.counts.steps_skipped, allocations_only.counts.steps_skipped) == (2, 2, 0)
    # A --parsable line without its trailing | has one field too few.
    mixed = read([lines[0] + "|", lines[2]], header=HEADER + "|")
    assert [(line, reason) for line, _, reason in quarantined(mixed)] == [(3, "wrong number of fields: 13 (the header has 14 and a trailing |)")]


def test_columns_by_name_in_any_order_case_insensitive_extra_ignored() -> None:
    fields = ["state", "AllocTRES", "Comment", "End", "Start", "Submit", "JobID"]
    result = read(["COMPLETED|gres/gpu=2|anything|2024-03-01T11:00:00|2024-03-01T10:00:00|2024-03-01T09:00:00|55"], header="|".join(fields))
    job = by_id(result)["55"]
    assert (job["num_gpus"], job["start_time"], job["end_time"], job["submit_time"]) == (2, utc(2024, 3, 1, 10), utc(2024, 3, 1, 11),
                                                                                         utc(2024, 3, 1, 9))
    assert job["job_name"] is None and job["user"] is None and job["elapsed_s"] is None  # optional columns absent


@pytest.mark.parametrize("missing", ["JobID", "Submit", "Start", "End", "State", "AllocTRES"])
def test_a_missing_required_column_fails_naming_file_line_and_column(missing: str) -> None:
    header = "|".join(f for f in FIELDS if f != missing)
    with pytest.raises(IngestError, match=rf"^t\.sacct:1: column '{missing}': missing column"):
        read_sacct(f"{header}\n".encode(), trace="t", source_file="t.sacct")


def test_fixed_width_output_is_refused_with_the_export_command() -> None:
    fixed = ("       JobID    JobName  Partition    Account  AllocCPUS      State ExitCode \n"
             "------------ ---------- ---------- ---------- ---------- ---------- -------- \n"
             "22105866.ba+      batch                 acct         32  COMPLETED      0:0 \n")
    with pytest.raises(IngestError, match=r"^t\.sacct:1: .*fixed-width output.*--parsable2"):
        read_sacct(fixed.encode(), trace="t", source_file="t.sacct")
    with pytest.raises(IngestError, match=r"^t\.sacct: empty file"):
        read_sacct(b"\n\n", trace="t", source_file="t.sacct")


def test_noheader_export_needs_the_field_list() -> None:
    lines = [row("100"), step("100", "batch")]
    result = read(lines, header=None, fields=parse_fields(",".join(f"{f}%20" if f == "JobName" else f for f in FIELDS)))
    c = result.counts
    assert (c.lines, c.header_lines, c.allocations, c.steps_skipped) == (2, 0, 1, 1)
    assert result.table["line"].to_list() == [1]
    with_header = read(lines, fields=list(FIELDS), header=None)  # the same in --parsable form is detected per the first line
    assert with_header.table.equals(result.table)
    with pytest.raises(IngestError, match="has a header line but --fields was given"):
        read(lines, fields=list(FIELDS))
    with pytest.raises(IngestError, match="column 'JobID': missing column"):
        read(lines, header=None, fields=["Start", "End"])


def test_a_headerless_export_without_fields_is_told_to_give_fields() -> None:
    """A --noheader export read as if its first line were the header (any delimiter): the error names --fields."""
    data = "4034541☃4034541☃train☃ann☃2024-03-01T09:00:00☃2024-03-01T10:00:00☃2024-03-01T11:00:00☃COMPLETED☃gres/gpu=1\n"
    with pytest.raises(IngestError, match=r"^t\.sacct:1: column 'JobID': missing column \(the header has \['4034541', .*"
                                          r"no header line \(sacct --noheader\), give its field list: --fields JobID,"):
        read_sacct(data.encode(), trace="t", source_file="t.sacct", delimiter="☃")
    with pytest.raises(IngestError, match=r"missing column \(the header has \['JobID', 'Start'\]\); export with: sacct"):
        read_sacct(b"JobID|Start\n1|2024-03-01T09:00:00\n", trace="t", source_file="t.sacct")  # a header: no --fields hint


def test_gpus_from_alloctres_counted_once_with_their_type() -> None:
    cases = {
        "1": (GPU4, 4, "a100"),
        "2": ("cpu=8,gres/gpu=2,node=1", 2, None),
        "3": ("cpu=8,gres/gpu:v100=1,node=1", 1, "v100"),
        "4": ("gres/gpu:v100=1,gres/gpu:a100=2,gres/gpu=3", 3, "a100,v100"),
        "5": ("gres/gpu:v100=1,gres/gpu:a100=2", 3, "a100,v100"),
        "6": ("cpu=8,gres/gpumem=40G,node=1", 0, None),  # GPU memory is not a GPU
        "7": ("", 0, None),
    }
    result = read([row(job, tres=tres) for job, (tres, _, _) in cases.items()])
    jobs = by_id(result)
    assert {j: (jobs[j]["num_gpus"], jobs[j]["gpu_type"]) for j in cases} == {j: (n, t) for j, (_, n, t) in cases.items()}
    assert {j: jobs[j]["category"] for j in ("5", "6", "7")} == {"5": "gpu", "6": "cpu_only", "7": "cpu_only"}
    assert (result.counts.cpu_only, result.counts.gpu_allocations) == (2, 5)


def test_states_are_normalised_and_the_text_kept_unknown_ends_are_not_ended_unknown_starts_never_started() -> None:
    lines = [
        row("1", state="CANCELLED by 1234"), row("2", state="RUNNING", end="Unknown"), row("3", state="PENDING", start="Unknown",
                                                                                              end="Unknown", tres=""),
        row("4", state="CANCELLED by 0", start="None", end="2024-03-01T10:01:00", tres=""), row("5", state="OUT_OF_MEMORY"),
        row("6", state="cancelled"),
    ]
    jobs = by_id(read(lines))
    assert [(jobs[j]["state"], jobs[j]["state_raw"]) for j in "15"] == [("CANCELLED", "CANCELLED by 1234"), ("OUT_OF_MEMORY", "OUT_OF_MEMORY")]
    assert jobs["6"]["state"] == "CANCELLED"
    assert [jobs[j]["category"] for j in "1234"] == ["gpu", "not_ended", "not_ended", "never_started"]
    assert jobs["2"]["end_time"] is None and jobs["3"]["start_time"] is None and jobs["4"]["end_time"] == utc(2024, 3, 1, 10, 1)


def test_times_read_in_the_given_zone_and_stored_in_utc() -> None:
    summer = row("1", submit="2024-07-01T09:00:00", start="2024-07-01T10:00:00", end="2024-07-01T12:30:00", elapsed="02:30:00")
    winter = row("2", submit="2024-01-01T09:00:00", start="2024-01-01T10:00:00", end="2024-01-02T10:00:00", elapsed="1-00:00:00")
    jobs = by_id(read([summer, winter], timezone="Europe/Berlin"))
    assert (jobs["1"]["start_time"], jobs["1"]["end_time"], jobs["1"]["elapsed_s"]) == (utc(2024, 7, 1, 8), utc(2024, 7, 1, 10, 30), 9000.0)
    assert (jobs["2"]["submit_time"], jobs["2"]["start_time"], jobs["2"]["elapsed_s"]) == (utc(2024, 1, 1, 8), utc(2024, 1, 1, 9), 86400.0)
    as_utc = by_id(read([summer]))  # the default zone is UTC
    assert as_utc["1"]["start_time"] == utc(2024, 7, 1, 10)
    with pytest.raises(IngestError, match="unknown time zone 'Mars/Olympus'"):
        read([summer], timezone="Mars/Olympus")


def test_spring_forward_a_job_across_the_gap_and_a_time_inside_it() -> None:
    across = row("1", submit="2024-03-31T01:40:00", start="2024-03-31T01:50:00", end="2024-03-31T03:10:00", elapsed="00:20:00")
    inside = row("2", submit="2024-03-31T01:00:00", start="2024-03-31T02:30:00", end="2024-03-31T03:30:00")
    result = read([across, inside], timezone="Europe/Berlin")
    job = by_id(result)["1"]
    assert (job["start_time"], job["end_time"]) == (utc(2024, 3, 31, 0, 50), utc(2024, 3, 31, 1, 10))  # 20 minutes, not 80
    assert quarantined(result) == [(3, "Start", "Start: '2024-03-31T02:30:00' does not exist in Europe/Berlin (skipped when clocks "
                                                "went forward); is the time zone right?")]


def test_fall_back_the_repeated_hour_by_elapsed_else_the_earlier_instant() -> None:
    lines = [
        # 02:50 first pass (CEST, 00:50 UTC) to 02:10 second pass (CET, 01:10 UTC): 20 minutes, with or without Elapsed
        row("1", submit="2024-10-27T02:40:00", start="2024-10-27T02:50:00", end="2024-10-27T02:10:00", elapsed="00:20:00"),
        row("2", submit="2024-10-27T02:40:00", start="2024-10-27T02:50:00", end="2024-10-27T02:10:00"),
        # 02:10 to 02:50: Elapsed 01:40:00 says the end is in the second pass; without it both are read in the first
        row("3", submit="2024-10-27T02:00:00", start="2024-10-27T02:10:00", end="2024-10-27T02:50:00", elapsed="01:40:00"),
        row("4", submit="2024-10-27T02:00:00", start="2024-10-27T02:10:00", end="2024-10-27T02:50:00"),
        # from before the change (01:30 CEST, 23:30 UTC) into the repeated hour: Elapsed 2 h picks the second pass
        row("5", submit="2024-10-27T01:00:00", start="2024-10-27T01:30:00", end="2024-10-27T02:30:00", elapsed="02:00:00"),
    ]
    jobs = by_id(read(lines, timezone="Europe/Berlin"))
    span = {j: (jobs[j]["start_time"], jobs[j]["end_time"]) for j in jobs}
    assert span["1"] == span["2"] == (utc(2024, 10, 27, 0, 50), utc(2024, 10, 27, 1, 10))
    assert span["3"] == (utc(2024, 10, 27, 0, 10), utc(2024, 10, 27, 1, 50))
    assert span["4"] == (utc(2024, 10, 27, 0, 10), utc(2024, 10, 27, 0, 50))
    assert span["5"] == (utc(2024, 10, 26, 23, 30), utc(2024, 10, 27, 1, 30))
    assert jobs["1"]["submit_time"] == utc(2024, 10, 27, 0, 40)  # an ambiguous submit: the earlier instant


def test_malformed_rows_go_to_quarantine_with_line_column_and_reason_and_the_run_goes_on() -> None:
    lines = [
        row("1"),
        row("2")[: row("2").rindex("|")],  # one field short
        row("3") + "|extra",
        row("4", start="yesterday"),
        row("5", tres="cpu=8,gres/gpu=two"),
        row("6", start="2024-03-01T12:00:00", end="2024-03-01T11:00:00"),
        row("1", state="FAILED"),  # the JobID of line 2 again
        row("x7"),
        row("8", elapsed="soon", nodes="many"),
        row("9", submit="Unknown"),
        "",
        row("10"),
    ]
    result = read(lines)
    assert result.table["job_id"].to_list() == ["1", "10"]
    assert quarantined(result) == [
        (3, None, "wrong number of fields: 13 (the header has 14)"),
        (4, None, "wrong number of fields: 15 (the header has 14)"),
        (5, "Start", "Start: cannot parse 'yesterday' as a time (YYYY-MM-DDTHH:MM:SS)"),
        (6, "AllocTRES", "AllocTRES: cannot parse the GPU count in 'cpu=8,gres/gpu=two'"),
        (7, "End", "End: '2024-03-01T11:00:00' is before Start '2024-03-01T12:00:00'"),
        (8, "JobID", "JobID: duplicate of line 2 (the first is kept)"),
        (9, "JobID", "JobID: 'x7' is not a Slurm job id (J, J_7, J_[1-4], J+1)"),
        (10, "Elapsed", "Elapsed: cannot parse 'soon' ([D-]HH:MM:SS); NNodes: cannot parse 'many' as a whole number"),
        (11, "Submit", "Submit: missing (a job always has a submit time)"),
        (12, None, "empty line"),
    ]
    raw = dict(zip(result.quarantine["line"].to_list(), result.quarantine["raw"].to_list(), strict=True))
    assert raw[5] == lines[3] and raw[8] == lines[6] and raw[12] == ""  # the line as written, also for rows rejected after the split
    assert set(result.quarantine["source_file"]) == {"t.sacct"} and set(result.quarantine["table"]) == {"own_cluster_jobs"}
    c = result.counts
    assert (c.lines, c.allocations, c.quarantined) == (13, 2, 10)


def test_a_line_that_is_not_utf8_is_quarantined_and_crlf_lines_are_read() -> None:
    good = row("1").encode()
    data = b"\r\n".join([HEADER.encode(), good, b"2|2|caf\xe9|" + row("2").encode().split(b"|", 3)[3], row("3").encode()]) + b"\r\n"
    result = read_sacct(data, trace="t", source_file="t.sacct")
    assert result.table["job_id"].to_list() == ["1", "3"] and result.table["user"].to_list() == ["alice", "alice"]
    assert quarantined(result) == [(3, None, "line is not valid UTF-8")]
    assert result.counts.accounted and result.counts.lines == 4


def test_a_generated_export_counts_as_built_and_blocks_do_not_matter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cluster.sacct"
    truth = write_export(path, 3000, seed=11, timezone="Europe/Berlin", malformed=7)
    result = read_sacct(path, trace="gen", source_file="cluster.sacct", timezone="Europe/Berlin")
    c = result.counts
    assert (c.lines, c.allocations, c.steps_skipped, c.quarantined) == (truth.lines, truth.allocations, truth.steps, truth.malformed)
    assert (c.not_ended, c.cpu_only, c.gpu_allocations, c.completed_gpu_allocations) == (
        truth.not_ended, truth.cpu_only, truth.gpu_allocations, truth.completed_gpu_allocations)
    ids = result.table["job_id"]
    assert ids.str.contains("_").sum() == truth.array_elements + truth.pending_arrays and ids.str.contains(r"\+").sum() == truth.het_components
    assert result.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    small_blocks = Source(path, "cluster.sacct", chunk_bytes=4096)
    assert sum(b.lines for b in small_blocks.blocks()) == truth.lines == small_blocks.lines

    # A well-formed export takes the CSV reader per block; the line-by-line path (taken for the file above) reads it the same.
    clean = tmp_path / "clean.sacct"
    write_export(clean, 2000, seed=12, timezone="Europe/Berlin", parsable=True)
    fast = read_sacct(clean, trace="gen", source_file="clean.sacct", timezone="Europe/Berlin")
    monkeypatch.setattr(slurm, "_fast_block", lambda *args: None)
    blocks = read_sacct(clean, trace="gen", source_file="clean.sacct", timezone="Europe/Berlin")
    assert fast.table.equals(blocks.table) and fast.counts == blocks.counts and fast.sha256 == blocks.sha256


def test_blocks_cut_at_line_ends_whatever_the_block_size(tmp_path: Path) -> None:
    rng = random.Random(5)
    for trial in range(150):
        data = "\n".join("x" * rng.randint(0, 30) for _ in range(rng.randint(0, 40))).encode() + rng.choice([b"", b"\n"])
        lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        path = tmp_path / f"{trial}.txt"
        path.write_bytes(data)
        for chunk in (1, 5, 64, 10_000):
            for source in (data, path):
                reader = Source(source, "x", chunk_bytes=chunk)
                blocks = list(reader.blocks())
                assert b"".join(b.data for b in blocks) == data and reader.lines == lines
                assert all(b.data.endswith(b"\n") for b in blocks[:-1])
                assert [b.first_line for b in blocks] == [1 + sum(b.lines for b in blocks[:i]) for i in range(len(blocks))]


@pytest.mark.parametrize(("energy", "malformed"), [pytest.param("measured", 0, marks=pytest.mark.slow), (None, 5), ("zero", 0)])
def test_small_blocks_read_the_same_as_one_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, energy: str | None,
                                                 malformed: int) -> None:
    """The reader holds one block's text at a time (issue 25: memory): a job's steps in the next block still give it their
    energy (Slurm's extern-step rule), duplicates across blocks are still found, and every line is accounted for."""
    path = tmp_path / "cluster.sacct"
    truth = write_export(path, 500, seed=21, energy=energy, malformed=malformed)
    with path.open("a") as fh:  # a later duplicate of the first allocation, far from it (another block)
        fh.write(path.read_text().splitlines()[1] + "\n")
    one = read_sacct(path, trace="gen", source_file="cluster.sacct", timezone="Europe/Berlin")
    monkeypatch.setattr(slurm, "Source", lambda *a, **k: Source(*a, **{**k, "chunk_bytes": 4096}))
    many = read_sacct(path, trace="gen", source_file="cluster.sacct", timezone="Europe/Berlin")
    assert many.table.equals(one.table) and many.quarantine.equals(one.quarantine) and many.counts == one.counts
    assert one.counts.lines == truth.lines + 1 and one.counts.quarantined == malformed + 1
    assert "duplicate of line 2" in one.quarantine["reason"][-1]
    if energy == "measured":  # without ConsumedEnergyRaw the energy comes from the extern steps, some in the next block
        lines = [line.split("|") for line in path.read_text().splitlines()]
        drop = lines[0].index("ConsumedEnergyRaw")
        steps_only = tmp_path / "steps_only.sacct"
        steps_only.write_text("".join("|".join(f[:drop] + f[drop + 1:]) + "\n" for f in lines))
        from_steps = read_sacct(steps_only, trace="gen", source_file="cluster.sacct", timezone="Europe/Berlin")
        assert from_steps.counts.energy_source == "TRESUsageInTot of the steps"
        measured = pl.col("energy_status") == "measured"  # a job without steps exported 0 (zero); without the field: none
        assert from_steps.table.filter(measured).select("job_id", "measured_energy_j").equals(
            many.table.filter(measured).select("job_id", "measured_energy_j"))
        assert from_steps.counts.measured_energy_allocations == many.counts.measured_energy_allocations > 0


def test_blocks_of_many_short_lines_are_cut_by_lines_and_read_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A block holds at most ``text_reader.BLOCK_LINES`` lines (a block's frames cost by the line, not the byte: 12M
    delimiter-only lines peaked at 2.9 GB, issue 56); cut so, an export with such lines reads the same."""
    path = tmp_path / "cluster.sacct"
    write_export(path, 300, seed=5, energy=None, malformed=3)
    fields = path.read_text().splitlines()[0].count("|") + 1
    with path.open("a") as fh:
        fh.write(("|" * (fields - 1) + "\n") * 50)  # delimiter-only rows: quarantined
    one = read_sacct(path, trace="gen", source_file="cluster.sacct", timezone="UTC")
    monkeypatch.setattr(text_reader, "BLOCK_LINES", 37)
    blocks = list(Source(path, "cluster.sacct").blocks())
    total = len(path.read_bytes().splitlines())
    assert [b.lines for b in blocks] == [37] * (total // 37) + ([total % 37] if total % 37 else [])
    assert [b.first_line for b in blocks] == list(range(1, total + 1, 37))
    assert b"".join(b.data for b in blocks) == path.read_bytes()
    many = read_sacct(path, trace="gen", source_file="cluster.sacct", timezone="UTC")
    assert many.table.equals(one.table) and many.quarantine.equals(one.quarantine) and many.counts == one.counts
    assert one.counts.quarantined >= 53 and one.counts.lines == total


@pytest.mark.parametrize("energy", ["measured", pytest.param(None, marks=pytest.mark.slow)])
def test_small_check_batches_and_fewer_columns_read_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, energy: str | None) -> None:
    """``finish`` checks the contract ``VALIDATE_ROWS`` rows at a time and frees each block's typed rows as it goes (issue 25:
    memory): batches of 7 rows across blocks, with malformed rows and a duplicate in between, give the same table, quarantine
    and counts as one batch; a read keeping fewer columns has those columns of the same rows, and the same counts."""
    path = tmp_path / "cluster.sacct"
    write_export(path, 200, seed=23, energy=energy, malformed=4)
    with path.open("a") as fh:  # a later duplicate of the first allocation, in another block
        fh.write(path.read_text().splitlines()[1] + "\n")
    whole = read_sacct(path, trace="gen", source_file="cluster.sacct", timezone="Europe/Berlin")
    assert whole.counts.quarantined == 5 and "duplicate of line 2" in whole.quarantine["reason"][-1]
    monkeypatch.setattr(own_cluster, "VALIDATE_ROWS", 7)
    monkeypatch.setattr(own_cluster, "CHUNK_ROWS", 28)
    monkeypatch.setattr(slurm, "Source", lambda *a, **k: Source(*a, **{**k, "chunk_bytes": 4096}))
    batched = read_sacct(path, trace="gen", source_file="cluster.sacct", timezone="Europe/Berlin")
    assert batched.table.equals(whole.table) and batched.quarantine.equals(whole.quarantine) and batched.counts == whole.counts
    assert batched.table.n_chunks() > 1 and max(len(c) for c in batched.table["job_id"].get_chunks()) <= 28
    columns = ("job_id", "state", "num_gpus", "measured_energy_j")
    narrow = read_sacct(path, trace="gen", source_file="cluster.sacct", timezone="Europe/Berlin", columns=columns)
    assert narrow.table.columns == list(columns) and narrow.table.equals(whole.table.select(columns))
    assert narrow.quarantine.equals(whole.quarantine) and narrow.counts == whole.counts


def test_an_export_on_the_berlin_clock_read_as_utc_quarantines_its_end_before_start_rows(tmp_path: Path) -> None:
    """The generator writes local (Europe/Berlin) times; read as UTC, the allocations that span the end of daylight saving
    time end before they start. Their reasons are built from the text of rows filtered out of a block of many chunks,
    where polars 2.1 panicked ("i < self.len()") until apply_checks rechunked the failing rows."""
    path = tmp_path / "berlin.sacct"
    truth = write_export(path, 20_000)
    result = read_sacct(path, trace="berlin", source_file="berlin.sacct", timezone="UTC")
    reasons = result.quarantine["reason"].to_list()
    assert reasons and all(r.startswith("End: '2024-10-27T02:") and "is before Start '2024-10-27T02:" in r for r in reasons), reasons
    assert result.counts.accounted and result.counts.lines == truth.lines and result.table.height == truth.allocations - len(reasons)
