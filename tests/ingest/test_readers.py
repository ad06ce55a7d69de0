"""Readers on small files written here in the documented schemas, and every bad-input case."""

from __future__ import annotations

import lzma
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest import acme, alibaba, itp
from pipelines.ingest.common import IngestError

SEREN_HEADER = "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time"
KALOS_HEADER = ("job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,start_time,"
                "end_time,fail_time,stop_time,duration,queue,gpu_time")
SEREN_EXAMPLE = "5778432,u5907,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,117,32,936.0"
KALOS_EXAMPLE = ("dlctk696s0jbvitv,uf794,8,64,960,1000,100.0,Other,FAILED,2023-05-17 11:00:58+00:00,2023-05-17 11:01:08+00:00,"
                 "2023-05-17 11:01:16+00:00,2023-05-17 11:01:16+00:00,,18,10.0,1152.0")
ITP_HEADER = "job_id,submission_time,duration,num_gpu"


def write(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def itp_folder(tmp_path: Path, cluster01_lines: list[str]) -> Path:
    folder = tmp_path / "raw-traces"
    folder.mkdir()
    for cluster in itp.ITP_CLUSTERS:
        write(folder / f"{cluster}.csv", ITP_HEADER, f"{cluster}-a,10,3600,2")
    write(folder / "cluster01.csv", ITP_HEADER, *cluster01_lines)
    return folder


def test_acme_seren_and_kalos_in_one_schema(tmp_path: Path) -> None:
    seren = write(tmp_path / "trace_seren.csv", SEREN_HEADER, SEREN_EXAMPLE,
                  "5778433,u1,0,0,8,Debug,COMPLETED,2023-03-01 01:00:00+08:00,2023-03-01 01:00:01+08:00,2023-03-01 01:00:11+08:00,10,1,0.0")
    kalos = write(tmp_path / "trace_kalos.csv", KALOS_HEADER, KALOS_EXAMPLE)
    result = acme.read_jobs(seren, kalos)
    jobs = result.table
    assert result.quarantine.height == 0 and jobs.height == 3
    first = jobs.row(0, named=True)
    assert first["cluster"] == "seren"
    assert first["submit_time"] == datetime(2023, 2, 28, 16, 18, 22, tzinfo=UTC)  # +08:00 -> UTC
    assert first["mem_per_pod_gb"] is None and first["fail_time"] is None
    assert first["gpu_time"] == 936.0 and first["duration"] == 117 and first["queue"] == 32.0
    k = jobs.filter(pl.col("cluster") == "kalos").row(0, named=True)
    assert k["mem_per_pod_gb"] == 1000.0 and k["stop_time"] is None
    assert k["fail_time"] == datetime(2023, 5, 17, 11, 1, 16, tzinfo=UTC)
    assert str(jobs.schema["submit_time"]) == "Datetime(time_unit='us', time_zone='UTC')"
    # The Kalos example's duration (18 s) is end - submit, not end - start (8 s): the identity check reports it.
    violations = {r["cluster"]: r for r in acme.identity_violations(jobs).to_dicts()}
    assert violations["kalos"]["duration_ne_end_minus_start"] == 1
    assert violations["seren"]["duration_ne_end_minus_start"] == 0
    assert violations["seren"]["gpu_time_ne_duration_x_gpus"] == 0


def test_acme_bad_rows_are_quarantined_with_line_and_reason(tmp_path: Path) -> None:
    seren = write(
        tmp_path / "trace_seren.csv",
        SEREN_HEADER,
        SEREN_EXAMPLE,
        SEREN_EXAMPLE,  # duplicate job id, line 3
        "7,u1,1,8,128,Other,EXPLODED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,117,32,936.0",
        "8,u1,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,2023-03-01 00:10:51+08:00,117,32,936.0",
        "9,u1,1,eight,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,117,32,936.0",
        "10,u1,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,-5,32,936.0",
    )
    result = acme.read_jobs(seren, None)
    assert result.table["job_id"].to_list() == ["5778432"]
    q = {row["line"]: row for row in result.quarantine.to_dicts()}
    assert sorted(q) == [3, 4, 5, 6, 7]
    assert "duplicate job_id" in q[3]["reason"]
    assert q[4]["column"] == "state" and q[4]["reason"].startswith("state: must be one of COMPLETED,")
    assert q[4]["reason"].endswith("(value EXPLODED)")
    assert q[5]["reason"] == "end_not_before_start: end_time must not be before start_time (where both are known)"
    assert q[5]["column"] == "end_time"  # a row rule names the rule in the reason and a column of the table, never the model
    assert q[6]["column"] == "gpu_num" and "cannot parse eight" in q[6]["reason"]
    assert q[7]["column"] == "duration" and q[7]["reason"] == "duration: must be >= 0 (value -5)"
    assert q[6]["raw"].startswith("9,u1,1,eight,") and q[6]["source_file"] == "trace_seren.csv"
    assert result.lines_in == result.table.height + result.quarantine.height


def test_alibaba_reader_xz(tmp_path: Path) -> None:
    text = "\n".join([
        "group,start_time,end_time,dataset,runtime_ratio",
        "0001086788b7de0f13804d22a12a27db,1427642.0,1446915.0,squad,1.1779405764729405",
        "0001086788b7de0f13804d22a12a27db,1446920.0,1448000.0,squad,0.5",
        "g2,100.0,50.0,imagenet,1.0",
        "g3,100.0,150.0,mnist,1.0",
    ]) + "\n"
    path = tmp_path / "alibaba_groups.csv.xz"
    path.write_bytes(lzma.compress(text.encode()))
    result = alibaba.read_groups(path)
    assert result.table.height == 2
    assert result.table["runtime_ratio"].to_list() == [1.1779405764729405, 0.5]
    reasons = dict(zip(result.quarantine["line"], result.quarantine["reason"], strict=True))
    assert reasons[4].startswith("end_not_before_start: ") and "dataset: must be one of cifar100," in reasons[5]
    assert reasons[5].endswith("(value mnist)")


def test_truncated_xz_names_the_file(tmp_path: Path) -> None:
    data = lzma.compress(b"group,start_time,end_time,dataset,runtime_ratio\n" + b"g,1.0,2.0,squad,1.0\n" * 1000)
    path = tmp_path / "alibaba_groups.csv.xz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(IngestError, match=r"alibaba_groups\.csv\.xz: truncated or corrupt xz"):
        alibaba.read_groups(path)


@pytest.mark.parametrize(
    ("header", "column"),
    [("job_id,submission_time,num_gpu", "duration"), ("job_id,submit_time,duration,num_gpu", "submission_time")],
    ids=["missing", "renamed"],
)
def test_missing_or_renamed_column_fails_naming_file_line_column(tmp_path: Path, header: str, column: str) -> None:
    folder = itp_folder(tmp_path, ["a,1,2,3"])
    write(folder / "cluster03.csv", header, "x,1,2")
    with pytest.raises(IngestError) as info:
        itp.read_itp(folder)
    assert info.value.file == "raw-traces/cluster03.csv" and info.value.line == 1 and info.value.column == column
    assert str(info.value).startswith(f"raw-traces/cluster03.csv:1: column '{column}': missing column")


def test_unreadable_file_fails_naming_it(tmp_path: Path) -> None:
    folder = itp_folder(tmp_path, ["a,1,2,3"])
    (folder / "cluster05.csv").write_bytes(b"\xff\xfe\x00job_id\x00\n\x00\x81\x00")
    with pytest.raises(IngestError, match=r"raw-traces/cluster05\.csv"):
        itp.read_itp(folder)


def test_itp_bad_rows(tmp_path: Path) -> None:
    folder = itp_folder(tmp_path, ["a,10,100,1", "b,1x0,100,1", "c,10,-100,1", "a,11,50,1", "d,12,7.5,1", "e,13,60.0,2"])
    result = itp.read_itp(folder)
    q = result.quarantine.select("line", "column", "reason").to_dicts()
    by_line = {r["line"]: r for r in q}
    assert sorted(by_line) == [3, 4, 5, 6]
    assert by_line[3]["column"] == "submission_time" and "cannot parse 1x0 as Int64" in by_line[3]["reason"]
    assert by_line[4]["column"] == "duration" and by_line[4]["reason"] == "duration: must be >= 0 (value -100)"
    assert "duplicate job_id" in by_line[5]["reason"]
    assert by_line[6]["column"] == "duration"  # 7.5 s is not a whole number of seconds
    cluster01 = result.table.filter(pl.col("cluster") == "cluster01")
    assert cluster01["job_id"].to_list() == ["a", "e"] and cluster01["duration"].to_list() == [100, 60]
    assert result.table.height == 11 and result.lines_in == 15


def test_empty_file_is_quarantined(tmp_path: Path) -> None:
    folder = itp_folder(tmp_path, ["a,1,2,3"])
    (folder / "cluster07.csv").write_text("")
    write(folder / "cluster08.csv", ITP_HEADER)
    result = itp.read_itp(folder)
    empty = result.quarantine.filter(pl.col("reason").str.starts_with("empty file"))
    assert sorted(empty["source_file"].to_list()) == ["raw-traces/cluster07.csv", "raw-traces/cluster08.csv"]
    assert result.table.height == 8  # 10 files, two of them empty
