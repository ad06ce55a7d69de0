"""Property tests (hypothesis) of the own-trace readers: whatever the bytes, the sacct and job-log readers either refuse the
file with their own one-line error (``IngestError``) or account for every line of it.

Three kinds of input: arbitrary bytes; a valid header followed by lines of arbitrary fields (so that the parse goes past
the header and every row rule is reached); and a valid export with one line replaced by arbitrary text. Each example
is read from bytes and from a file (the readers take different paths: the file path tries one polars scan first).
Sized for a 2-core machine: about 400 examples in all, under 15 s (400 of each kind, run once by hand, found nothing more).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.contracts.base import validate
from pipelines.contracts.owncluster import OwnClusterJobs, OwnClusterTraces
from pipelines.ingest.common import IngestError
from pipelines.ingest.joblog import read_joblog
from pipelines.ingest.own_cluster import OwnTraceResult
from pipelines.ingest.slurm import read_sacct

SACCT_HEADER = "JobID|JobIDRaw|JobName|User|Account|Partition|Submit|Start|End|Elapsed|State|ExitCode|AllocTRES|NNodes|ConsumedEnergyRaw"
JOBLOG_HEADER = "job_id,submit_time,start_time,end_time,num_gpus,state,user,name,gpu_type,energy_j,gpu_util_pct"
SACCT_ROW = "12|12|train|alice|acct|gpu|2024-03-01T10:00:00|2024-03-01T10:05:00|2024-03-01T11:05:00|01:00:00|COMPLETED|0:0|" \
            "cpu=8,gres/gpu:a100=2,gres/gpu=2,node=1|1|3600000"
JOBLOG_ROW = "12,2024-03-01T10:00:00,2024-03-01T10:05:00,2024-03-01T11:05:00,2,COMPLETED,alice,train,a100,3600000,80"

PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
#: Arbitrary bytes are mostly refused at the header, in milliseconds: more of them.
BYTES = settings(PROPERTY, max_examples=150)

#: Field values: the characters that matter to the parse (delimiters, quotes, line breaks, digits, signs, a BOM, escapes,
#: bytes of other scripts) and fragments of real values (times, TRES, states, huge numbers).
_CHARS = st.sampled_from(list("|,\"'\r\n\t .:-+=_/[]01239eE") + ["\ufeff", "\x1b", "\x00", "é", "☃", "\u202e"])
_FRAGMENTS = st.sampled_from(["2024-03-01T10:00:00", "1970-01-01T00:00:00", "2100-01-01T00:00:00", "Unknown", "None", "COMPLETED",
                              "CANCELLED by 0", "gres/gpu=4", "gres/gpu:a100=2", "gres/gpu=99999999999999999999",
                              "gres/gpu=9223372036854775807", "energy=12", "1-00:00:00", "99999-00:00:00", "12", "12_[0-3]", "12.batch",
                              "12+1", "-1", "1e400", "nan", "x" * 300, ""])
_FIELD = st.lists(st.one_of(_CHARS, _FRAGMENTS), max_size=6).map("".join)


def _check(data: bytes, tmp_path: Path, read) -> None:  # type: ignore[no-untyped-def]
    """``read(source)`` on the bytes and on a file of them: an IngestError, or a result that accounts for every line."""
    path = tmp_path / "t.in"
    path.write_bytes(data)
    outcomes = []
    for source in (data, path):
        try:
            result: OwnTraceResult = read(source)
        except IngestError as exc:
            assert "\n" not in str(exc) and "\r" not in str(exc), str(exc)
            outcomes.append(("error", exc.line, exc.column))
            continue
        c = result.counts
        lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        assert c.lines == lines
        assert c.lines == c.header_lines + c.allocations + c.steps_skipped + c.quarantined
        assert result.table.height == c.allocations and result.quarantine.height == c.quarantined
        validate(result.table, OwnClusterJobs, name="own_cluster_jobs")
        validate(result.summary_row(), OwnClusterTraces, name="own_cluster_traces")
        kept, refused = set(result.table["line"].to_list()), set(result.quarantine["line"].to_list())
        assert not kept & refused and len(kept | refused) == c.allocations + c.quarantined  # a line lands in one place only
        outcomes.append(("read", c.allocations, c.quarantined, c.steps_skipped))
    assert outcomes[0] == outcomes[1], outcomes  # bytes and file: the same verdict


def _sacct(source: bytes | Path) -> OwnTraceResult:
    return read_sacct(source, trace="t", source_file="t.sacct", timezone="Europe/Berlin")


def _joblog(source: bytes | Path) -> OwnTraceResult:
    return read_joblog(source, trace="t", source_file="t.csv", timezone="Europe/Berlin")


@pytest.mark.parametrize("read", [_sacct, _joblog], ids=["sacct", "joblog"])
@BYTES
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes_are_read_or_refused_in_one_line(read, data: bytes, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _check(data, tmp_path, read)


@pytest.mark.slow
@pytest.mark.parametrize(("read", "header", "sep"), [(_sacct, SACCT_HEADER, "|"), (_joblog, JOBLOG_HEADER, ",")], ids=["sacct", "joblog"])
@PROPERTY
@given(rows=st.lists(st.lists(_FIELD, min_size=1, max_size=17), max_size=8), bom=st.booleans(), crlf=st.booleans())
def test_arbitrary_fields_under_a_valid_header_are_each_accounted_for(read, header: str, sep: str, rows: list[list[str]], bom: bool,  # type: ignore[no-untyped-def]
                                                                        crlf: bool, tmp_path: Path) -> None:
    end = "\r\n" if crlf else "\n"
    text = ("\ufeff" if bom else "") + header + end + "".join(sep.join(fields) + end for fields in rows)
    _check(text.encode("utf-8", "surrogatepass"), tmp_path, read)


@pytest.mark.slow
@pytest.mark.parametrize(("read", "header", "row"), [(_sacct, SACCT_HEADER, SACCT_ROW), (_joblog, JOBLOG_HEADER, JOBLOG_ROW)],
                         ids=["sacct", "joblog"])
@PROPERTY
@given(at=st.integers(0, 5), junk=st.binary(max_size=120))
def test_one_line_of_junk_in_a_valid_export_costs_at_most_that_line(read, header: str, row: str, at: int, junk: bytes,  # type: ignore[no-untyped-def]
                                                                     tmp_path: Path) -> None:
    lines = [header.encode()] + [row.replace("12", str(20 + i), 2).encode() for i in range(5)]
    lines.insert(at + 1, junk)
    data = b"\n".join(lines) + b"\n"
    _check(data, tmp_path, read)
    try:
        result = read(data)
    except IngestError:  # junk that makes the header line no header (a line break before it is not possible here)
        return
    assert result.counts.allocations == 5  # the good rows stay
