"""The generic job-log CSV reader on small files written here; expected values worked out by hand."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipelines.contracts.base import validate
from pipelines.contracts.owncluster import OwnClusterJobs
from pipelines.ingest.common import IngestError
from pipelines.ingest.joblog import read_joblog
from pipelines.ingest.own_cluster import OwnTraceResult

HEADER = "job_id,submit_time,start_time,end_time,num_gpus,state,user,name,gpu_type"


def read(*lines: str, header: str = HEADER, timezone: str = "UTC") -> OwnTraceResult:
    result = read_joblog(("\n".join([header, *lines]) + "\n").encode(), trace="k8s", source_file="k8s.csv", timezone=timezone)
    assert result.counts.accounted and result.counts.steps_skipped == 0
    validate(result.table, OwnClusterJobs, name="own_cluster_jobs")
    return result


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_columns_by_name_quoted_fields_offsets_fractions_and_aliases() -> None:
    result = read(
        "a1,2024-03-01T09:00:00,2024-03-01T09:05:00,2024-03-01T10:05:00,4,COMPLETED,alice,train,a100",
        'a2,2024-03-01 09:00:00Z,2024-03-01T09:05:00+01:00,2024-03-01T10:05:00.5+0100,2,Succeeded,bob,"eval, big",',
        "a3,2024-03-01T09:00:00,,,1,Pending,carol,x,",
        "a4,2024-03-01T09:00:00,2024-03-01T09:01:00,2024-03-01T09:02:00,0,DONE,,,",
        timezone="Europe/Berlin",
    )
    jobs = {r["job_id"]: r for r in result.table.iter_rows(named=True)}
    # naive times in Europe/Berlin (UTC+1 in March); times with an offset are exact
    assert (jobs["a1"]["submit_time"], jobs["a1"]["end_time"]) == (utc(2024, 3, 1, 8), utc(2024, 3, 1, 9, 5))
    assert jobs["a2"]["submit_time"] == utc(2024, 3, 1, 9)
    assert (jobs["a2"]["start_time"], jobs["a2"]["end_time"]) == (utc(2024, 3, 1, 8, 5), datetime(2024, 3, 1, 9, 5, 0, 500_000, tzinfo=UTC))
    assert (jobs["a2"]["job_name"], jobs["a2"]["state"], jobs["a2"]["state_raw"], jobs["a2"]["gpu_type"]) == ("eval, big", "COMPLETED",
                                                                                                            "Succeeded", None)
    assert (jobs["a3"]["category"], jobs["a3"]["state"]) == ("not_ended", "PENDING")
    assert (jobs["a4"]["category"], jobs["a4"]["state"], jobs["a4"]["user"]) == ("cpu_only", "COMPLETED", None)
    c = result.counts
    assert (c.lines, c.allocations, c.gpu_allocations, c.completed_gpu_allocations, c.not_ended, c.cpu_only) == (5, 4, 2, 2, 1, 1)

    shuffled = read("COMPLETED,x1,2,2024-03-01T10:00:00,2024-03-01T09:00:00,2024-03-01T08:00:00",
                    header="STATE,Job_ID,num_gpus,end_time,start_time,submit_time")
    assert shuffled.table.select("job_id", "num_gpus", "user").row(0) == ("x1", 2, None)


def test_malformed_rows_are_quarantined_with_line_column_and_reason() -> None:
    result = read(
        "a1,2024-03-01T09:00:00,2024-03-01T09:05:00,2024-03-01T10:05:00,4,COMPLETED,alice,train,a100",
        "a2,2024-03-01T09:00:00,2024-03-01T09:05:00,2024-03-01T08:05:00,1,FAILED,carol,x,",
        "a3,yesterday,2024-03-01T09:05:00,2024-03-01T10:05:00,1,FAILED,carol,x,",
        "a1,2024-03-01T09:00:00,2024-03-01T09:05:00,2024-03-01T10:05:00,4,COMPLETED,alice,train,a100",
        "a4,2024-03-01T09:00:00,2024-03-01T09:05:00,2024-03-01T10:05:00,1.5,COMPLETED,alice,train,a100",
        "a5,2024-03-01T09:00:00,2024-03-01T09:05:00",
        '"a6,2024-03-01T09:00:00",2024-03-01T09:05:00,2024-03-01T10:05:00,1,COMPLETED,,,',
        ",2024-03-01T09:00:00,2024-03-01T09:05:00,2024-03-01T10:05:00,1,COMPLETED,,,",
        "a7,2024-03-31T01:00:00,2024-03-31T02:30:00,2024-03-31T04:00:00,1,COMPLETED,,,",
        timezone="Europe/Berlin",
    )
    assert result.table["job_id"].to_list() == ["a1"]
    assert [(r["line"], r["column"], r["reason"]) for r in result.quarantine.iter_rows(named=True)] == [
        (3, "end_time", "end_time: '2024-03-01T08:05:00' is before start_time '2024-03-01T09:05:00'"),
        (4, "submit_time", "submit_time: cannot parse 'yesterday' as ISO 8601 (YYYY-MM-DDTHH:MM:SS, optional .fff and Z or +HH:MM)"),
        (5, "job_id", "job_id: duplicate of line 2 (the first is kept)"),
        (6, "num_gpus", "num_gpus: '1.5' is not a whole number >= 0"),
        (7, None, "wrong number of fields: 3 (the header has 9)"),
        (8, None, "wrong number of fields: 8 (the header has 9)"),
        (9, "job_id", "job_id: empty"),
        (10, "start_time", "start_time: '2024-03-31T02:30:00' does not exist in Europe/Berlin (skipped when clocks went forward); "
                           "is the time zone right?"),
    ]


def test_a_missing_column_or_an_empty_file_fails_naming_the_file() -> None:
    with pytest.raises(IngestError, match=r"^k8s\.csv:1: column 'num_gpus': missing column"):
        read_joblog(b"job_id,submit_time,start_time,end_time,state\n", trace="k8s", source_file="k8s.csv")
    with pytest.raises(IngestError, match=r"^k8s\.csv: empty file"):
        read_joblog(b"", trace="k8s", source_file="k8s.csv")
