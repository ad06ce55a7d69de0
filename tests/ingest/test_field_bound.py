"""A field longer than ``ReadLimits.field_bytes`` quarantines its line as the line is read, before polars parses it
(issue 54 item 3): the row names file, line and column, keeps the line cut to 2,000 characters, and the other lines read
as before. The memory this holds is measured in ``test_memory_bounds``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.ingest.common import IngestError
from pipelines.ingest.joblog import read_joblog
from pipelines.ingest.slurm import read_sacct
from pipelines.ingest.text_reader import ReadLimits
from tests.ingest.test_slurm import HEADER, row

BOUND = 65_536  # ReadLimits' default, written out: the docs state it


def sacct(*lines: str) -> bytes:
    return ("\n".join([HEADER, *lines]) + "\n").encode()


def test_the_default_bound_is_64_kib() -> None:
    assert ReadLimits().field_bytes == BOUND


@pytest.mark.parametrize("chunk_bytes_file", [False, True])
def test_a_field_over_the_bound_quarantines_its_line_only(tmp_path: Path, chunk_bytes_file: bool) -> None:
    long_name = "é" * (BOUND // 2) + "x"  # 65,537 bytes in 32,769 characters: the bound is on bytes
    data = sacct(row("1"), row("2", name=long_name), row("3"))
    source: Path | bytes = data
    if chunk_bytes_file:
        source = tmp_path / "t.sacct"
        source.write_bytes(data)
    result = read_sacct(source, trace="t", source_file="t.sacct")
    assert result.table["job_id"].to_list() == ["1", "3"]
    assert result.counts.lines == 4 and result.counts.quarantined == 1 and result.counts.accounted
    q = result.quarantine.row(0, named=True)
    line = row("2", name=long_name)
    assert (q["source_file"], q["line"], q["column"]) == ("t.sacct", 3, "JobName")
    assert q["reason"] == "JobName: 65,537 bytes, more than 65,536 (the bound on one field; the line is not parsed)"
    # the raw line cut to 2,000 characters, with its size in bytes (65,537 of the name, 157 of the rest)
    assert q["raw"] == line[:2000] + "… (cut: the line has 65,694 bytes)"


def test_a_field_at_the_bound_is_parsed_and_checked_by_the_contract() -> None:
    result = read_sacct(sacct(row("1", name="n" * BOUND)), trace="t", source_file="t.sacct")
    assert result.quarantine["column"].to_list() == ["JobName"]
    assert result.quarantine["reason"][0].startswith("JobName: 65536 characters, more than 128: 'nnn")


def test_a_lower_bound_is_a_limit_and_names_the_column_past_the_header() -> None:
    """With a 100-byte bound AllocTRES (57 bytes) passes; a 15th field, beyond the header's 14, is ``field 15``."""
    limits = ReadLimits(field_bytes=100)
    result = read_sacct(sacct(row("1", user="u" * 101), row("2") + "|" + "z" * 101, row("3")), trace="t", source_file="t.sacct",
                        limits=limits)
    assert result.table["job_id"].to_list() == ["3"]
    assert [(q["line"], q["column"], q["reason"]) for q in result.quarantine.iter_rows(named=True)] == [
        (2, "User", "User: 101 bytes, more than 100 (the bound on one field; the line is not parsed)"),
        (3, "field 15", "field 15: 101 bytes, more than 100 (the bound on one field; the line is not parsed)"),
    ]


def test_a_header_field_over_the_bound_is_refused() -> None:
    data = (HEADER + "|" + "h" * 200 + "\n" + row("1") + "|x\n").encode()
    with pytest.raises(IngestError) as caught:
        read_sacct(data, trace="t", source_file="t.sacct", limits=ReadLimits(field_bytes=100))
    assert str(caught.value) == "t.sacct:1: column 'field 15': a header field of 200 bytes, more than 100 (the bound on one field)"


def test_a_noheader_export_names_the_column_from_its_field_list() -> None:
    fields = HEADER.split("|")
    data = (row("1") + "\n" + row("2", name="n" * 150) + "\n").encode()
    result = read_sacct(data, trace="t", source_file="t.sacct", fields=fields, limits=ReadLimits(field_bytes=100))
    assert result.table["job_id"].to_list() == ["1"]
    assert result.quarantine.select("line", "column").rows() == [(2, "JobName")]


def test_a_job_log_s_quoted_field_is_measured_whole() -> None:
    """Commas inside quotes do not cut a field: a 120-byte quoted name made of 12-byte pieces is over a 100-byte bound."""
    header = "job_id,user,name,submit_time,start_time,end_time,num_gpus,state"
    times = "2024-03-01T10:00:00,2024-03-01T10:05:00,2024-03-01T11:05:00"
    name = ",".join(["abcdefghijk"] * 10)  # 119 characters: 10 of 11 and 9 commas
    data = "\n".join([header, f"1,alice,train,{times},4,COMPLETED", f'2,alice,"{name}x",{times},4,COMPLETED',
                      f"3,alice,train,{times},4,COMPLETED"]).encode() + b"\n"
    result = read_joblog(data, trace="t", source_file="t.csv", limits=ReadLimits(field_bytes=100))
    assert result.table["job_id"].to_list() == ["1", "3"]
    assert [(q["line"], q["column"], q["reason"]) for q in result.quarantine.iter_rows(named=True)] == [
        (3, "name", "name: 120 bytes, more than 100 (the bound on one field; the line is not parsed)"),
    ]
    assert result.counts.accounted
