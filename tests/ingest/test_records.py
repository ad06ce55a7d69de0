"""One malformed record never sinks a table: it is quarantined with file, line, column and reason; every line is accounted for.

Records are physical lines (``pipelines.ingest.records``): the expected line numbers below are
those ``sed -n Np`` prints, counted by hand from the bytes written here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dataframely as dy
import pytest

from pipelines.home.paths import REPO_ROOT
from pipelines.ingest import acme
from pipelines.ingest.common import MAX_RAW_CHARS, IngestError, IngestResult, TableSpec, ingest_bytes
from pipelines.ingest.itp import ITP_SPEC
from pipelines.ingest.records import count_records

HEADER = b"job_id,submission_time,duration,num_gpu\n"
SEREN_HEADER = b"job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n"
SEREN_ROW = "{id},u1,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,117,32,936.0"
SEREN_EXTRAS = {"cluster": "seren", **dict.fromkeys(acme.KALOS_ONLY)}


def itp(data: bytes) -> IngestResult:
    return ingest_bytes(data, ITP_SPEC, source_file="cluster01.csv", extras={"cluster": "cluster01"})


def by_line(result: IngestResult) -> dict[int, dict[str, object]]:
    return {row["line"]: row for row in result.quarantine.to_dicts()}


def seren(*rows: str | bytes) -> bytes:
    return SEREN_HEADER + b"".join((r if isinstance(r, bytes) else r.encode()) + b"\n" for r in rows)


def test_extra_field_and_non_utf8_rows_are_quarantined_and_the_rest_kept() -> None:
    data = seren(
        SEREN_ROW.format(id=1),
        SEREN_ROW.format(id=2) + ",surplus",  # line 3: an extra field
        SEREN_ROW.format(id=3).replace("u1", "u\xe9").encode("latin-1"),  # line 4: Latin-1, not UTF-8
        SEREN_ROW.format(id=4),
    )
    result = ingest_bytes(data, acme.SEREN_SPEC, source_file="trace_seren.csv", extras=SEREN_EXTRAS)
    assert result.table["job_id"].to_list() == ["1", "4"]
    q = by_line(result)
    assert sorted(q) == [3, 4]
    assert q[3]["column"] is None and q[3]["reason"] == "14 fields where the header has 13: 1 extra"
    assert q[4]["column"] == "user" and q[4]["reason"] == "not valid UTF-8: byte 0xe9 at byte 4 of the line"
    assert q[4]["raw"].startswith("3,u\\xe9,1,8,") and q[4]["source_file"] == "trace_seren.csv"
    assert result.lines_in == 4 and result.unaccounted == 0


def test_short_rows_blank_lines_and_empty_keys_have_reasons_and_columns() -> None:
    data = HEADER + b"a,1,2,3\nb,1,2\n\n,4,5,6\n,7,8,9\nc,1\n   \nd,1,2,3\n"
    result = itp(data)
    assert result.table["job_id"].to_list() == ["a", "d"]
    q = by_line(result)
    assert {n: (r["column"], r["reason"]) for n, r in q.items()} == {
        3: ("num_gpu", "3 fields where the header has 4: no value for num_gpu"),
        4: (None, "blank line"),
        5: ("job_id", "job_id: must not be null"),  # an empty key is a missing value, not a duplicate of the next one
        6: ("job_id", "job_id: must not be null"),
        7: ("duration", "2 fields where the header has 4: no value for duration, num_gpu"),
        8: (None, "blank line"),
    }
    assert all(r["reason"] for r in q.values())
    assert result.lines_in == 8 and result.unaccounted == 0


def test_unbalanced_quote_spoils_its_own_line_only() -> None:
    data = HEADER + b'a,1,2,3\nb,"1,2,3\nc,1,2,3\n"d",4,5,6\ne,"7,""8""",9,1\n'
    result = itp(data)
    # "d" is a well-quoted key; line 6 quotes a field holding the separator and doubled quotes (not an Int64: value error)
    assert result.table["job_id"].to_list() == ["a", "c", "d"]
    q = by_line(result)
    assert sorted(q) == [3, 6]
    assert q[3]["column"] == "submission_time" and q[3]["reason"].startswith("unbalanced quote: a quoted field must close on its own line")
    assert q[6]["column"] == "submission_time" and q[6]["reason"] == 'column submission_time: cannot parse 7,"8" as Int64'
    assert result.unaccounted == 0


def test_a_quoted_newline_is_two_malformed_records_and_later_lines_keep_their_numbers() -> None:
    """Line numbers are physical lines: a field spanning lines 3-4 is quarantined as both, and line 5 is still line 5."""
    data = HEADER + b'a,1,2,3\nb,"1\n0",2,3\nc,1,2,-3\n'
    assert count_records(data) == 4
    result = itp(data)
    assert result.table["job_id"].to_list() == ["a"]
    q = by_line(result)
    assert sorted(q) == [3, 4, 5]
    assert q[3]["reason"].startswith("unbalanced quote")
    assert q[4]["reason"] == "3 fields where the header has 4: no value for num_gpu"  # '0",2,3' read on its own
    assert q[5]["reason"] == "num_gpu: must be >= 0 (value -3)" and q[5]["raw"] == "c,1,2,-3"
    assert result.lines_in == 4 and result.unaccounted == 0


def test_records_are_counted_from_the_bytes() -> None:
    assert count_records(HEADER) == 0
    assert count_records(HEADER + b"a,1,2,3") == 1  # no final line break
    assert count_records(HEADER + b"a,1,2,3\n") == 1
    assert count_records(HEADER + b"a,1,2,3\r\n\r\n") == 2  # a blank line is a record (quarantined)
    assert count_records(HEADER + b"a,1,2,3\n" * 100_000) == 100_000


def test_crlf_bom_and_a_missing_final_line_break() -> None:
    data = b"\xef\xbb\xbf" + HEADER.replace(b"\n", b"\r\n") + b"a,1,2,3\r\nb,1,x,3\r\nc,4,5,6"
    result = itp(data)
    assert result.table["job_id"].to_list() == ["a", "c"] and result.table["num_gpu"].to_list() == [3, 6]
    q = by_line(result)
    assert list(q) == [3] and q[3]["raw"] == "b,1,x,3" and q[3]["column"] == "duration"
    assert result.unaccounted == 0


def test_extra_and_short_rows_that_balance_the_separator_count_are_both_caught() -> None:
    result = itp(HEADER + b"a,1,2,3\nb,1,2,3,4\nc,1,2\nd,1,2,3\n")
    assert result.table["job_id"].to_list() == ["a", "d"]
    assert sorted(by_line(result)) == [3, 4]


def test_a_huge_field_is_quarantined_and_stored_cut() -> None:
    """60,000 characters: under the bound on one field (64 KiB), so the contract's bound on a name rejects it."""
    job_id = "x" * 60_000
    result = itp(HEADER + b"a,1,2,3\n" + job_id.encode() + b",1,2,3\n")
    assert result.table["job_id"].to_list() == ["a"]
    row = result.quarantine.row(0, named=True)
    assert row["line"] == 3 and row["column"] == "job_id"
    assert row["reason"].startswith("job_id: must have at most 256 characters (value xxx") and row["reason"].endswith(", 60000 characters)")
    assert len(row["raw"]) < MAX_RAW_CHARS + 100 and row["raw"].endswith("(cut: the line has 60,006 bytes)")


def test_a_field_over_the_field_bound_is_quarantined_before_the_parse() -> None:
    """500,000 characters: under the bound on one line (1 MiB; a longer line stops the read, ``test_public_bounds``) but over
    the engine's bound on one field (64 KiB), as in an export: the line is withheld unparsed, its row names the column."""
    job_id = "x" * 500_000
    result = itp(HEADER + b"a,1,2,3\n" + job_id.encode() + b",1,2,3\nc,1,2,6\n")
    assert result.table["job_id"].to_list() == ["a", "c"]
    row = result.quarantine.row(0, named=True)
    assert (row["line"], row["column"]) == (3, "job_id")
    assert row["reason"] == "job_id: 500,000 bytes, more than 65,536 (the bound on one field; the line is not parsed)"
    assert row["raw"] == "x" * MAX_RAW_CHARS + "… (cut: the line has 500,006 bytes)"
    assert result.quarantine.height == 1 and result.unaccounted == 0


def test_a_header_field_over_the_field_bound_stops_the_read() -> None:
    with pytest.raises(IngestError) as caught:
        itp(b"job_id,submission_time,duration,num_gpu," + b"h" * 70_000 + b"\na,1,2,3\n")
    assert str(caught.value) == "cluster01.csv:1: column 'field 5': a header field of 70,000 bytes, more than 65,536 (the bound on one field)"


class Pipe(dy.Schema):
    """A ``|``-separated export with quotes as ordinary characters (sacct --parsable2)."""

    job = dy.String(primary_key=True, description="job id")
    name = dy.String(description="job name")


def test_other_separators_and_literal_quotes() -> None:
    spec = TableSpec("pipe", Pipe, {"JobID": "job", "JobName": "name"}, separator="|", quote_char=None)
    result = ingest_bytes(b'JobID|JobName\n1|say "hi\n2|a,b|c\n3|x\n', spec, source_file="sacct.txt")
    assert result.table.rows() == [("1", 'say "hi'), ("3", "x")]
    assert by_line(result)[3]["reason"] == "3 fields where the header has 2: 1 extra"


def test_simulate_trace_dir_with_a_ragged_row_says_file_and_line(tmp_path: Path, mirror: Path) -> None:
    (tmp_path / "summary_power_v100.csv").write_bytes((mirror / "zeus/summary_power_v100.csv").read_bytes())
    train = (mirror / "zeus/summary_train.csv").read_bytes().split(b"\n")
    train[4] += b",surplus"
    (tmp_path / "summary_train.csv").write_bytes(b"\n".join(train))
    done = subprocess.run(
        [sys.executable, "-m", "pipelines", "simulate", "single", "--gpu", "v100", "--trace-dir", str(tmp_path)],
        capture_output=True, text=True, cwd=REPO_ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1].endswith("summary_train.csv:5: 9 fields where the header has 8: 1 extra")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("rows", [1, 3])
def test_well_formed_files_take_one_typed_read(rows: int) -> None:
    """The fast path and the per-record path agree on every well-formed file."""
    data = HEADER + b"".join(f"j{i},{i},{10 * i},{i % 4}\n".encode() for i in range(rows))
    fast = itp(data)
    slow = itp(data.replace(b"j0,", b'"j0",'))  # a quote sends the file through the per-record path
    assert fast.table.equals(slow.table) and fast.quarantine.height == slow.quarantine.height == 0
    assert fast.table.height == rows == fast.lines_in
