"""Issue 25's hostile own-trace files, each written here: bounds, a BOM, a FIFO, a file cut short while it is read, escapes.

Every bad row must land in the quarantine with its line, the file's column and the reason, while the rest of the file
is read; every file that cannot be read at all must be one IngestError line. The values are the issue's (a
``gres/gpu=9223372036854775807`` allocation, a 300-character JobName, a 1970 start in Europe/Berlin, ...).

The same hostile rows through ``whatif`` and through the pipeline: quarantined, and the rest replayed to the same numbers
as the file without them; a FIFO (``whatif <(...)``) read as a stream; terminal escapes printed escaped.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import warnings
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipelines.clusters import mapping, simulate, tracefiles
from pipelines.clusters.whatif import REPORT_COLUMNS
from pipelines.contracts.base import split_valid, validate
from pipelines.contracts.clusters import ClusterWorkloadJobs
from pipelines.contracts.owncluster import OwnClusterJobs
from pipelines.defs.clusters.partitions import OWN_TRACE_DIMENSION, TRACE_DIMENSION
from pipelines.defs.shared.io_manager import ParquetIOManager, PathsResource
from pipelines.home.paths import REPO_ROOT
from pipelines.ingest import slurm, text_reader
from pipelines.ingest.common import IngestError
from pipelines.ingest.joblog import read_joblog
from pipelines.ingest.own_cluster import OwnTraceResult
from pipelines.ingest.simulator_inputs import conform_groups, read_trace_dir
from pipelines.ingest.slurm import read_sacct
from pipelines.terminal import printable, printable_data
from pipelines.vocabulary import ZEUS_DATASETS
from pipelines.zeus.groups import GroupTableError

HEADER = "JobID|JobIDRaw|JobName|User|Account|Partition|Submit|Start|End|Elapsed|State|ExitCode|AllocTRES|NNodes|ConsumedEnergyRaw"
GPU4 = "cpu=32,gres/gpu:a100=4,gres/gpu=4,node=1"


def sacct_row(job: str, *, submit: str = "2024-03-01T10:00:00", start: str = "2024-03-01T10:05:00", end: str = "2024-03-01T11:05:00",
              name: str = "train", user: str = "alice", tres: str = GPU4, elapsed: str = "", nodes: str = "1", energy: str = "") -> str:
    return "|".join([job, job, name, user, "acct", "gpu", submit, start, end, elapsed, "COMPLETED", "0:0", tres, nodes, energy])


def read(rows: list[str], timezone: str = "UTC") -> OwnTraceResult:
    result = read_sacct(("\n".join([HEADER, sacct_row("1"), *rows]) + "\n").encode(), trace="t", source_file="clusters/t.sacct",
                        timezone=timezone)
    assert result.counts.accounted
    validate(result.table, OwnClusterJobs, name="own_cluster_jobs")
    return result


def quarantined(result: OwnTraceResult) -> list[tuple[int, str | None, str]]:
    return [(r["line"], r["column"], r["reason"]) for r in result.quarantine.iter_rows(named=True)]


BEFORE_2000 = "is before 2000-01-01 UTC (no scheduler recorded it; a reset clock?)"

SACCT_CASES = {
    "int64 max GPUs": (sacct_row("2", tres="cpu=1,gres/gpu=9223372036854775807,node=1"), "AllocTRES",
                       "AllocTRES: the GPU count in 'cpu=1,gres/gpu=9223372036854775807,node=1' is above 100,000 (a job's most GPUs)"),
    "GPUs beyond int64": (sacct_row("2", tres="gres/gpu=99999999999999999999"), "AllocTRES",
                          "AllocTRES: the GPU count in 'gres/gpu=99999999999999999999' is above 100,000 (a job's most GPUs)"),
    "typed GPUs above the bound": (sacct_row("2", tres="gres/gpu:a100=100001"), "AllocTRES",
                                   "AllocTRES: the GPU count in 'gres/gpu:a100=100001' is above 100,000 (a job's most GPUs)"),
    "300-character JobName": (sacct_row("2", name="x" * 300), "JobName", f"JobName: 300 characters, more than 128: '{'x' * 60}'"),
    "65-character User": (sacct_row("2", user="u" * 65), "User", f"User: 65 characters, more than 64: '{'u' * 60}'"),
    "257-character JobID": ("7" * 257 + sacct_row("2")[1:], "JobID", f"JobID: 257 characters, more than 256: '{'7' * 60}'"),
    "year-2100 start": (sacct_row("2", submit="2024-03-01T10:00:00", start="2100-03-01T10:05:00", end="2100-03-01T11:05:00"), "Start",
                        "Start: '2100-03-01T10:05:00' is in the future (after {tomorrow} UTC); "
                        "End: '2100-03-01T11:05:00' is in the future (after {tomorrow} UTC)"),
    "128-year job": (sacct_row("2", end="2152-03-01T10:05:00"), "End",
                     "End: '2152-03-01T10:05:00' is in the future (after {tomorrow} UTC); "
                     "End: the job lasts 46751 days from Start '2024-03-01T10:05:00', more than a year (366 days)"),
    "a 400-day job in the past": (sacct_row("2", start="2020-01-01T00:00:00", end="2021-02-04T00:00:00", submit="2020-01-01T00:00:00"),
                                  "End", "End: the job lasts 400 days from Start '2020-01-01T00:00:00', more than a year (366 days)"),
    "Elapsed of 400 days": (sacct_row("2", elapsed="400-00:00:00"), "Elapsed", "Elapsed: '400-00:00:00' is above a year (366 days)"),
    "100,001 nodes": (sacct_row("2", nodes="100001"), "NNodes", "NNodes: '100001' is above 100,000 (a job's most nodes)"),
    "1e30 J": (sacct_row("2", energy="1e30"), "ConsumedEnergyRaw",
               "ConsumedEnergyRaw: 1e+30 is above 6.32e+16 J (every node at 20 kW for a year)"),
}


@pytest.mark.parametrize("case", SACCT_CASES, ids=list(SACCT_CASES))
def test_a_sacct_row_beyond_the_bounds_is_quarantined_and_the_rest_read(case: str) -> None:
    line, column, reason = SACCT_CASES[case]
    result = read([line, sacct_row("3")])
    assert result.table["job_id"].to_list() == ["1", "3"]
    tomorrow = datetime.now(UTC).timestamp() + 86_400
    shown = {datetime.fromtimestamp(tomorrow + d, UTC).strftime("%Y-%m-%d %H:%M") for d in (-60, 0)}  # the minute may turn
    (got,) = quarantined(result)
    assert got[:2] == (3, column)
    assert any(got[2] == reason.format(tomorrow=t) for t in shown), got[2]


def test_a_1970_start_in_berlin_a_negative_time_is_quarantined_not_replayed() -> None:
    result = read([sacct_row("2", submit="1970-01-01T00:00:00", start="1970-01-01T00:10:00", end="1970-01-01T00:30:00")],
                  timezone="Europe/Berlin")
    assert result.table["job_id"].to_list() == ["1"]
    assert quarantined(result) == [(3, "Submit", f"Submit: '1970-01-01T00:00:00' {BEFORE_2000}; Start: '1970-01-01T00:10:00' "
                                    f"{BEFORE_2000}; End: '1970-01-01T00:30:00' {BEFORE_2000}")]


def test_the_bounds_hold_at_their_limits_and_the_replay_takes_such_a_job() -> None:
    """A job at every limit (64-character user, 128-character name, 100,000 GPUs, a year long, from 2000-01-01) is read, and
    its group, times and GPUs are what the replay accepts (the group contract the fast engine checks)."""
    result = read([sacct_row("2", user="u" * 64, name="n" * 128, tres="gres/gpu=100000", submit="2000-01-01T00:00:00",
                             start="2000-01-01T00:00:00", end="2000-12-31T00:00:00", elapsed="365-00:00:00")])
    assert result.quarantine.height == 0 and result.table["num_gpus"].to_list() == [4, 100_000]
    jobs = mapping.map_own(result.table, ZEUS_DATASETS, "t")
    validate(jobs, ClusterWorkloadJobs, name="cluster_workload_jobs")
    assert max(len(g) for g in jobs["group"]) == 64 + 1 + 128 + 1 + len("100000gpu")
    conform_groups(jobs.select("group", pl.col("start_time_s").alias("start_time"), pl.col("end_time_s").alias("end_time"), "dataset",
                               "runtime_ratio"))


def test_the_contracts_refuse_what_the_readers_quarantine() -> None:
    """OwnClusterJobs and ClusterWorkloadJobs hold the same bounds (a table written some other way is still refused)."""
    good = read([]).table
    rows = pl.concat([good.with_columns(pl.lit(100_001).cast(pl.Int64).alias("num_gpus")),
                      good.with_columns(pl.lit("x" * 129).alias("job_name")),
                      good.with_columns(pl.lit(datetime(1999, 12, 31, tzinfo=UTC)).dt.cast_time_unit("us").alias("submit_time"))])
    rows = rows.with_columns(pl.Series("job_id", ["a", "b", "c"]))
    kept, failed = split_valid(rows, OwnClusterJobs)
    assert kept.height == 0 and sorted(failed["column"].to_list()) == ["job_name", "num_gpus", "submit_time"]
    jobs = mapping.map_own(good, ZEUS_DATASETS, "t")
    bad = pl.concat([jobs.with_columns(pl.lit(-3000.0).alias("start_time_s")).with_columns(pl.lit("a").alias("job_id")),
                     jobs.with_columns(pl.lit("g" * 257).alias("group")).with_columns(pl.lit("b").alias("job_id"))])
    _, failed = split_valid(bad, ClusterWorkloadJobs)
    assert sorted(failed["column"].to_list()) == ["group", "start_time_s"]


JOBLOG_HEADER = "job_id,submit_time,start_time,end_time,num_gpus,state,user,name"


def joblog_row(job: str, *, gpus: str = "2", start: str = "2024-03-01T10:05:00", end: str = "2024-03-01T11:05:00",
               name: str = "train", user: str = "bob") -> str:
    return ",".join([job, "2024-03-01T10:00:00" if start >= "2000" else start, start, end, gpus, "COMPLETED", user, name])


@pytest.mark.parametrize(("line", "column", "reason"), [
    (joblog_row("2", gpus="9223372036854775807"), "num_gpus", "num_gpus: '9223372036854775807' is above 100,000 (a job's most GPUs)"),
    (joblog_row("2", gpus="99999999999999999999"), "num_gpus", "num_gpus: '99999999999999999999' is above 100,000 (a job's most GPUs)"),
    (joblog_row("2", name="n" * 300), "name", f"name: 300 characters, more than 128: '{'n' * 60}'"),
    (joblog_row("2", start="1970-01-01T00:10:00Z", end="1970-01-01T00:30:00Z"), "submit_time",
     f"submit_time: '1970-01-01T00:10:00Z' {BEFORE_2000}; start_time: '1970-01-01T00:10:00Z' {BEFORE_2000}; "
     f"end_time: '1970-01-01T00:30:00Z' {BEFORE_2000}"),
    (joblog_row("2", end="2024-03-01T10:05:00+00:00", start="2023-01-01T00:00:00+00:00"), "end_time",
     "end_time: the job lasts 425 days from start_time '2023-01-01T00:00:00+00:00', more than a year (366 days)"),
], ids=["int64 max GPUs", "GPUs beyond int64", "300-character name", "1970", "425-day job"])
def test_a_joblog_row_beyond_the_bounds_is_quarantined_and_the_rest_read(line: str, column: str, reason: str) -> None:
    data = "\n".join([JOBLOG_HEADER, joblog_row("1"), line, joblog_row("3")]) + "\n"
    result = read_joblog(data.encode(), trace="t", source_file="clusters/t.csv")
    assert result.table["job_id"].to_list() == ["1", "3"]
    assert quarantined(result) == [(3, column, reason)]


def test_a_utf8_bom_before_the_header_is_accepted(tmp_path: Path) -> None:
    plain = read([sacct_row("2")])
    for body in (plain, ):
        assert body.counts.allocations == 2
    with_bom = read_sacct(("\ufeff" + "\n".join([HEADER, sacct_row("1"), sacct_row("2")]) + "\n").encode(), trace="t",
                          source_file="t.sacct")
    assert with_bom.table.drop("line").equals(plain.table.drop("line")) and with_bom.quarantine.height == 0
    path = tmp_path / "noheader.sacct"  # a --noheader export read with its field list: the BOM is before the first row
    path.write_bytes(("\ufeff" + "\n".join([sacct_row("1"), sacct_row("2")]) + "\n").encode())
    noheader = read_sacct(path, trace="t", source_file="t.sacct", fields=HEADER.split("|"))
    assert noheader.table["job_id"].to_list() == ["1", "2"] and noheader.quarantine.height == 0
    csv = read_joblog(("\ufeff" + "\n".join([JOBLOG_HEADER, joblog_row("1")]) + "\n").encode(), trace="t", source_file="t.csv")
    assert csv.table["job_id"].to_list() == ["1"] and csv.counts.header_lines == 1


def _fifo(tmp_path: Path, data: bytes) -> tuple[Path, threading.Thread]:
    fifo = tmp_path / "stream"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as fh:
            fh.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    return fifo, writer


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_a_fifo_is_read_as_a_stream_once(tmp_path: Path, compress: bool) -> None:
    text = ("\n".join([HEADER, sacct_row("1"), sacct_row("2", tres="gres/gpu=999999999")]) + "\n").encode()
    data = gzip.compress(text) if compress else text
    fifo, writer = _fifo(tmp_path, data)
    result = tracefiles.read_trace(fifo, "t", "sacct", "UTC", source_file=str(fifo))
    writer.join()
    expected = read_sacct(text, trace="t", source_file=str(fifo))
    assert result.table.equals(expected.table) and result.quarantine.height == 1
    import hashlib

    assert result.sha256 == hashlib.sha256(data).hexdigest()  # the bytes as given (compressed ones: compressed)


def test_a_file_cut_short_while_it_is_read_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.sacct"
    data = ("\n".join([HEADER, *(sacct_row(str(i)) for i in range(1, 200))]) + "\n").encode()
    path.write_bytes(data)
    scan = pl.collect_all

    def cut_then_scan(frames):  # type: ignore[no-untyped-def]
        with open(path, "r+b") as fh:
            fh.truncate(len(data) // 2)
        raise OSError("failed to fill whole buffer")  # what polars' scan raised when the file shrank under it

    monkeypatch.setattr(slurm.pl, "collect_all", cut_then_scan)
    with pytest.raises(IngestError) as caught:
        read_sacct(path, trace="t", source_file="clusters/t.sacct")
    assert str(caught.value) == (f"clusters/t.sacct: the file changed while it was read ({len(data):,} -> {len(data) // 2:,} bytes): "
                                 "read it again once it is complete")
    monkeypatch.setattr(slurm.pl, "collect_all", scan)
    path.write_bytes(data)
    pieces = text_reader.Source._pieces

    def cut_after_first(self):  # type: ignore[no-untyped-def]
        for i, piece in enumerate(pieces(self)):
            yield piece
            if i == 0:
                with open(path, "ab") as fh:  # grown meanwhile (a copy still running)
                    fh.write(b"more\n")

    monkeypatch.setattr(text_reader.Source, "_pieces", cut_after_first)
    csv = tmp_path / "t.csv"
    csv.write_text("\n".join([JOBLOG_HEADER, *(joblog_row(str(i)) for i in range(1, 200))]) + "\n")
    path = csv
    with pytest.raises(IngestError, match=r"^clusters/t\.csv: the file changed while it was read \(.* -> .* bytes\)"):
        read_joblog(csv, trace="t", source_file="clusters/t.csv")


def test_a_group_the_replay_refuses_names_its_trace_file_line_and_job_not_row_0(mirror: Path) -> None:
    traces = read_trace_dir(mirror / "zeus", gpus=("v100",))
    jobs = pl.DataFrame({"trace": ["lab", "lab"], "cluster": ["lab", "lab"], "group": ["g", "g"], "job_id": ["7", "8"],
                         "start_time_s": [1.0, -5.0], "end_time_s": [2.0, 3.0], "num_gpu": [1, 1], "dataset": ["squad", "squad"],
                         "runtime_ratio": [1.0, 1.0], "line": [11, 12]})
    with pytest.raises(GroupTableError) as caught:
        simulate.trace_totals(jobs, traces, "v100", "zeus", engine="fast")
    assert str(caught.value) == "trace lab: line 12, job 8 of lab: column 'start_time': must be >= 0 (value -5.0)"
    # a public trace's rows have no file line: the job alone
    with pytest.raises(GroupTableError) as caught:
        simulate.trace_totals(jobs.with_columns(pl.lit(None, pl.Int64).alias("line")), traces, "v100", "zeus", engine="fast")
    assert str(caught.value) == "trace lab: job 8 of lab: column 'start_time': must be >= 0 (value -5.0)"


def test_a_user_traces_jobs_keep_their_file_line_into_cluster_workload_jobs() -> None:
    text = "\n".join([JOBLOG_HEADER, *(joblog_row(str(i)) for i in range(1, 6))]) + "\n"
    jobs = read_joblog(text.encode(), trace="lab", source_file="clusters/lab.csv", columns=REPORT_COLUMNS).table  # as whatif reads
    mapped = mapping.map_own(jobs, ZEUS_DATASETS, "lab")
    assert mapped.height == 5
    assert mapped.sort("line")["line"].to_list() == [2, 3, 4, 5, 6]  # the header is line 1
    assert dict(zip(mapped["job_id"], mapped["line"], strict=True)) == dict(zip(jobs["job_id"], jobs["line"], strict=True))


def test_control_characters_are_escaped_for_a_terminal() -> None:
    name = "\x1b[2J\x1b]8;;http://x\x07evil\u202eexe.txt\r\n"
    assert printable(name) == "\\x1b[2J\\x1b]8;;http://x\\x07evil\\u202eexe.txt\\r\\n"
    assert printable("zoë/☃ train") == "zoë/☃ train"  # other text is left as it is
    report = {"top_groups": [{"group": "a/\x1b[31mred/4gpu", "jobs": 1}], "gpu_types": {"\x9bH": 2}}
    assert printable_data(report) == {"top_groups": [{"group": "a/\\x1b[31mred/4gpu", "jobs": 1}], "gpu_types": {"\\x9bH": 2}}


def test_gpu_utilisation_is_bounded_per_gpu_and_a_cpu_job_with_some_is_kept() -> None:
    header = "JobID|Submit|Start|End|State|AllocTRES|TRESUsageInTot"
    times = "2024-03-01T10:00:00|2024-03-01T10:05:00|2024-03-01T11:05:00|COMPLETED"
    data = "\n".join([header, f"1|{times}|cpu=4|gres/gpuutil=50", f"2|{times}|gres/gpu=4|gres/gpuutil=40000",
                      f"3|{times}|gres/gpu=4|gres/gpuutil=40004"]) + "\n"
    result = read_sacct(data.encode(), trace="t", source_file="t.sacct")
    assert result.table.select("job_id", "category", "gpu_util_pct").rows() == [("1", "cpu_only", None), ("2", "gpu", 10_000.0)]
    assert quarantined(result) == [(4, "TRESUsageInTot", "TRESUsageInTot: 40004.0 is above 10,000 % per GPU")]


EXPORT_HEADER = "JobID|JobIDRaw|JobName|User|Account|Partition|Submit|Start|End|Elapsed|State|ExitCode|AllocTRES|NNodes"


def export_row(job: str, *, submit: str = "2024-03-01T10:00:00", start: str = "2024-03-01T10:05:00", end: str = "2024-03-01T11:05:00",
        name: str = "train", tres: str = "cpu=8,gres/gpu:a100=4,gres/gpu=4,node=1") -> str:
    return "|".join([job, job, name, "alice", "acct", "gpu", submit, start, end, "", "COMPLETED", "0:0", tres, "1"])


#: Thirty jobs of three recurring groups, an hour to three apart.
GOOD_ROWS = [export_row(str(100 + i), name=f"train{i % 3}", start=f"2024-03-{1 + i // 10:02d}T{10 + i % 10:02d}:05:00",
            end=f"2024-03-{1 + i // 10:02d}T{11 + i % 10 + i % 3:02d}:05:00") for i in range(30)]
#: The issue's rows (file lines 32..37 after the header and GOOD_ROWS), each with the column it is quarantined for.
HOSTILE_ROWS = {
    export_row("1", tres="cpu=1,gres/gpu=9223372036854775807,node=1"): "AllocTRES",
    export_row("2", tres="cpu=1,gres/gpu=99999999999999999999,node=1"): "AllocTRES",
    export_row("3", name="x" * 300): "JobName",
    export_row("4", submit="1970-01-01T00:00:00", start="1970-01-01T00:10:00", end="1970-01-01T00:30:00"): "Submit",
    export_row("5", end="2152-03-01T10:05:00"): "End",
    export_row("6", submit="2100-03-01T10:00:00", start="2100-03-01T10:05:00", end="2100-03-01T11:05:00"): "Submit",
}


def write_rows(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join([EXPORT_HEADER, *rows]) + "\n")
    return path


def whatif(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines", "whatif", *args], capture_output=True, text=True, check=False, cwd=REPO_ROOT)


def test_whatif_quarantines_the_hostile_rows_and_replays_the_rest_as_without_them(tmp_path: Path, mirror: Path) -> None:
    hostile = write_rows(tmp_path / "hostile.sacct", [*GOOD_ROWS, *HOSTILE_ROWS])
    clean = write_rows(tmp_path / "clean.sacct", GOOD_ROWS)
    options = ("--timezone", "Europe/Berlin", "--samples", "2", "--json", "--no-progress", "--trace-dir", str(mirror / "zeus"))
    got, want = (whatif(str(p), *options) for p in (hostile, clean))
    assert got.returncode == 0 and want.returncode == 0, got.stderr + want.stderr
    bad, good = json.loads(got.stdout), json.loads(want.stdout)
    assert (bad["lines"], bad["allocations"], bad["quarantined"], bad["cpu_only"]) == (37, 30, 6, 0)
    assert bad["quarantined_by"] == {"AllocTRES": 2, "Submit": 2, "End": 1, "JobName": 1}
    assert bad["simulated_jobs"] == good["simulated_jobs"] == 30
    for key in ("gpus", "total", "top_groups", "energy_accounting"):
        assert bad[key] == good[key], key  # the hostile rows change no number (before: 7.5e12 MWh)


@pytest.mark.slow
def test_whatif_reads_a_process_substitution_and_escapes_the_job_names(tmp_path: Path, mirror: Path) -> None:
    export = write_rows(tmp_path / "lab.sacct", [*GOOD_ROWS, export_row("9", name="\x1b[2J\x1b]0;owned\x07x")])
    zeus = str(mirror / "zeus")
    done = subprocess.run(["bash", "-c", '"$0" -m pipelines whatif <(gzip -c "$1") --samples 1 --no-progress --trace-dir "$2" --json',
                           sys.executable, str(export), zeus], capture_output=True, text=True, check=False, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    direct = whatif(str(export), "--samples", "1", "--no-progress", "--trace-dir", zeus, "--json")
    streamed, read = json.loads(done.stdout), json.loads(direct.stdout)
    assert streamed["file"].startswith("/dev/fd/") and (streamed["lines"], streamed["simulated_jobs"]) == (32, 31)
    assert streamed["gpus"] == read["gpus"] and streamed["total"] == read["total"]
    text = whatif(str(export), "--samples", "1", "--no-progress", "--trace-dir", zeus, "--top", "5")
    assert text.returncode == 0 and "\x1b" not in text.stdout and "\x07" not in text.stdout
    assert "alice/\\x1b[2J\\x1b]0;owned\\x07x/4gpu" in text.stdout
    missing = whatif(str(tmp_path / "\x1b[2Jgone.sacct"), "--trace-dir", zeus)
    assert missing.returncode == 2 and "\x1b" not in missing.stderr and "\\x1b[2Jgone.sacct: no such file" in missing.stderr


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_hostile_rows_in_the_pipeline_are_quarantined_and_the_replay_runs(tmp_path: Path, ingested, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue: one such row failed zeus_cluster_history for every partition. Now the history of a trace with them equals that
    of the same trace without them, and the quarantine names each row's line, column and reason."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pipelines.definitions import defs

        definitions = defs()
    home = tmp_path / "home"
    monkeypatch.setenv("TRACES_MIRROR", str(tmp_path / "no-mirror"))
    monkeypatch.setenv("GPU_ENERGY_HOME", str(home))
    src, _ = ingested
    (home / "assets").mkdir(parents=True)
    for table in ("zeus_train_runs", "zeus_power_profiles", "itp_jobs", "elasticflow_jobs", "acme_jobs", "alibaba_groups"):
        shutil.copy(src.table(table), home / "assets" / f"{table}.parquet")
    clusters = home / "raw" / "clusters"
    clusters.mkdir(parents=True)
    write_rows(clusters / "hostile.sacct", [*GOOD_ROWS, *HOSTILE_ROWS])
    write_rows(clusters / "clean.sacct", GOOD_ROWS)
    for name in ("hostile", "clean"):
        (clusters / f"{name}.toml").write_text('timezone = "Europe/Berlin"\n')
    everything = [*definitions.assets, *definitions.asset_checks]
    resources = {"io_manager": ParquetIOManager(root=str(home)), "paths": PathsResource(root=str(home))}
    with dg.DagsterInstance.ephemeral() as instance:
        for dimension in (TRACE_DIMENSION, OWN_TRACE_DIMENSION):
            instance.add_dynamic_partitions(dimension, ["clean", "hostile"])
        for trace in ("clean", "hostile"):
            assert dg.materialize(everything, resources=resources, instance=instance, partition_key=trace,
                                  selection=["own_cluster_jobs", "quarantine/own_cluster_jobs_bad_rows", "own_cluster_traces"]).success
            assert dg.materialize(everything, resources=resources, instance=instance, partition_key=trace,
                                  selection=["cluster_workload_jobs"]).success
            assert dg.materialize(everything, resources=resources, instance=instance, partition_key=f"v100|{trace}",
                                  selection=["zeus_cluster_history", "zeus_cluster_summary"]).success
    quarantine = pl.read_parquet(home / "assets" / "quarantine" / "own_cluster_jobs_bad_rows" / "hostile.parquet")  # one file per trace
    assert quarantine.select("source_file", "line", "column").rows() == [
        ("clusters/hostile.sacct", 32 + i, column) for i, column in enumerate(HOSTILE_ROWS.values())]
    history = {t: pl.read_parquet(home / "assets" / "zeus_cluster_history" / f"v100__{t}.parquet") for t in ("clean", "hostile")}
    assert history["hostile"].drop("trace", "cluster").equals(history["clean"].drop("trace", "cluster"))
    assert history["clean"]["job_id"].n_unique() == 30
