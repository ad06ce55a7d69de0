"""Own-cluster exports as operators have them: sacct --delimiter, compressed files, allocations that never started, Slurm's
energy accounting (ConsumedEnergyRaw, energy= and gres/gpuutil of TRESUsageInTot) and the job-log CSV's energy_j.

Expected values are worked out by hand from the rows written here (joules, and Slurm's rules cited in
pipelines/ingest/slurm.py: the extern step's energy is the job's under PrologFlags=Contain, else the
steps add up; TRESUsageInTot prints exact binary prefixes).
"""

from __future__ import annotations

import gzip
import hashlib
import lzma
from pathlib import Path
from typing import Any

import pytest
import zstandard

from pipelines.clusters import tracefiles
from pipelines.contracts.base import validate
from pipelines.contracts.owncluster import OwnClusterJobs, OwnClusterTraces
from pipelines.ingest.common import IngestError
from pipelines.ingest.joblog import read_joblog
from pipelines.ingest.own_cluster import OwnTraceResult
from pipelines.ingest.slurm import read_sacct
from pipelines.ingest.text_reader import read_bytes

FIELDS = ["JobID", "JobName", "User", "Submit", "Start", "End", "State", "AllocTRES", "ConsumedEnergyRaw", "TRESUsageInTot"]
GPU2 = "cpu=16,gres/gpu:a100=2,gres/gpu=2,mem=64G,node=1"


def line(job: str, *, start: str = "2024-03-01T10:00:00", end: str = "2024-03-01T11:00:00", state: str = "COMPLETED",
         tres: str = GPU2, energy: str = "", usage: str = "") -> list[str]:
    return [job, "train", "alice", "2024-03-01T09:00:00", start, end, state, tres, energy, usage]


LINES = [
    line("1", energy="7200000"),                                        # 2 GPUs x 1000 W-ish for an hour: 7.2 MJ
    line("1.batch", energy="7000000", usage="cpu=00:10:00,energy=7000000,gres/gpuutil=150,mem=1G"),
    line("1.extern", energy="7200000", usage="cpu=00:00:01,energy=7200000,mem=1G"),
    line("2", energy="0"),                                              # a cluster that collects nothing writes 0
    line("3", start="None", end="2024-03-01T09:30:00", state="CANCELLED by 1001", tres=""),  # cancelled while pending
    line("4", start="Unknown", end="2024-03-01T09:10:00", state="NODE_FAIL", tres=""),       # a node failure before the start
    line("5", start="Unknown", end="Unknown", state="PENDING", tres=""),
    line("6", end="Unknown", state="RUNNING"),
    line("7", end="Unknown", state="REQUEUED"),
]


def text(lines: list[list[str]], delimiter: str = "|", *, header: bool = True, trailing: bool = False) -> bytes:
    rows = ([FIELDS] if header else []) + lines
    return ("\n".join(delimiter.join(r) + (delimiter if trailing else "") for r in rows) + "\n").encode()


def read(data: bytes, **kw: Any) -> OwnTraceResult:
    result = read_sacct(data, trace="t", source_file="t.sacct", **kw)
    validate(result.table, OwnClusterJobs, name="own_cluster_jobs")
    validate(result.summary_row(), OwnClusterTraces, name="own_cluster_traces")
    return result


def rows(result: OwnTraceResult) -> list[tuple]:
    return result.table.select("job_id", "category", "measured_energy_j", "energy_status", "gpu_util_pct").rows()


def test_never_started_is_its_own_count_and_not_ended_is_pending_running_requeued() -> None:
    result = read(text(LINES))
    c = result.counts
    assert (c.lines, c.allocations, c.steps_skipped, c.gpu_allocations, c.never_started, c.not_ended) == (10, 7, 2, 2, 2, 3)
    assert c.lines == c.header_lines + c.allocations + c.steps_skipped + c.quarantined
    assert c.allocations == c.gpu_allocations + c.cpu_only + c.never_started + c.not_ended
    jobs = {r[0]: r[1] for r in rows(result)}
    assert jobs == {"1": "gpu", "2": "gpu", "3": "never_started", "4": "never_started", "5": "not_ended", "6": "not_ended",
                    "7": "not_ended"}


def test_energy_as_slurm_accounts_it_zero_is_never_a_measurement() -> None:
    result = read(text(LINES))
    by = {r[0]: r[2:] for r in rows(result)}
    assert by["1"] == (7_200_000.0, "measured", 75.0)  # gres/gpuutil 150 summed over 2 GPUs: 75 % each
    assert by["2"] == (None, "zero", None)
    assert by["3"] == (None, "not_exported", None)  # an empty field: nothing exported
    c = result.counts
    assert (c.energy_source, c.measured_energy_allocations, c.zero_energy_allocations) == ("ConsumedEnergyRaw", 1, 1)


def test_energy_from_the_steps_follows_slurms_rule_and_binary_prefixes() -> None:
    fields = [f for f in FIELDS if f != "ConsumedEnergyRaw"]
    drop = FIELDS.index("ConsumedEnergyRaw")
    lines = [
        line("10"), line("10.batch", usage="energy=2.50K,gres/gpuutil=180"), line("10.0", usage="energy=1000"),   # no extern: the sum
        line("11"), line("11.batch", usage="energy=5000"), line("11.extern", usage="energy=6M"),                 # extern: the job's
        line("12"), line("12.batch", usage="energy=0"),
    ]
    data = ("\n".join("|".join(r[:drop] + r[drop + 1:]) for r in [FIELDS, *lines]) + "\n").encode()
    assert data.splitlines()[0].decode() == "|".join(fields)
    by = {r[0]: r[2:] for r in rows(read(data))}
    assert by["10"] == (2.5 * 1024 + 1000, "measured", 90.0)
    assert by["11"] == (6 * 1024**2, "measured", None)
    assert by["12"] == (None, "zero", None)


def test_alloctres_energy_is_read_and_a_bad_consumed_energy_is_quarantined() -> None:
    lines = [line("20", tres=GPU2 + ",energy=360000"), line("21", energy="lots")]
    fields = [f for f in FIELDS if f not in ("ConsumedEnergyRaw", "TRESUsageInTot")]
    plain = ("\n".join("|".join(r[:8]) for r in [fields, lines[0]]) + "\n").encode()
    result = read(plain)
    assert rows(result)[0][2:4] == (360000.0, "measured") and result.counts.energy_source == "AllocTRES"
    bad = read(text(lines))
    assert bad.quarantine.select("line", "column").rows() == [(3, "ConsumedEnergyRaw")]
    assert "cannot parse 'lots' as joules" in bad.quarantine["reason"][0]


@pytest.mark.parametrize("delimiter", ["☃", "\t", ";"])
def test_a_custom_delimiter_reads_as_the_default_one(delimiter: str) -> None:
    expected = rows(read(text(LINES)))
    assert rows(read(text(LINES, delimiter), delimiter=delimiter)) == expected
    assert rows(read(text(LINES, delimiter, trailing=True), delimiter=delimiter)) == expected  # --parsable
    noheader = read(text(LINES, delimiter, header=False), delimiter=delimiter, fields=FIELDS)
    assert rows(noheader) == expected and noheader.counts.header_lines == 0


def test_a_file_with_another_delimiter_is_refused_naming_it() -> None:
    with pytest.raises(IngestError, match=r"t\.sacct:1: no '\|' .* holds '☃' \(U\+2603\) 9 times: an export written with sacct "
                                          r"--delimiter; pass --delimiter ☃"):
        read(text(LINES, "☃"))
    with pytest.raises(IngestError, match="fixed-width"):  # sacct's own fixed-width output is still told apart
        read(b"       JobID    JobName \n------------ ---------- \n    22105866      batch \n")
    with pytest.raises(IngestError, match="one character"):
        read(text(LINES), delimiter="||")


#: A PNG's first bytes and random bytes: files that are not text, which no delimiter can split.
NOT_TEXT = [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", bytes(range(128, 256)) * 3 + b"|x\n"]


@pytest.mark.parametrize("data", NOT_TEXT)
def test_a_file_that_is_not_text_is_refused_as_such_not_given_a_delimiter(data: bytes) -> None:
    with pytest.raises(IngestError, match=r"^t\.sacct:1: not UTF-8 text \(an undecodable byte at character 1\): not a sacct export; "
                                          r"a compressed export must end in \.gz, \.xz or \.zst$"):
        read(data)
    with pytest.raises(IngestError, match=r"^t\.csv:1: not UTF-8 text \(an undecodable byte at character 1\): not a job-log CSV"):
        read_joblog(data, trace="t", source_file="t.csv")


def _compress(kind: str, data: bytes) -> bytes:
    return {"gz": lambda d: gzip.compress(d, mtime=0), "xz": lzma.compress, "zst": zstandard.ZstdCompressor().compress}[kind](data)


@pytest.mark.parametrize("kind", ["gz", "xz", "zst"])
def test_compressed_exports_read_as_the_plain_file_with_the_files_sha256(tmp_path: Path, kind: str) -> None:
    data = text(LINES, "☃")
    path = tmp_path / f"lab.sacct.{kind}"
    path.write_bytes(_compress(kind, data[:200]) + _compress(kind, data[200:]))  # two streams: one file
    result = tracefiles.read_trace(path, "lab", tracefiles.format_of(path), "UTC", source_file=path.name, delimiter="☃")
    assert rows(result) == rows(read(text(LINES)))
    assert result.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()  # what `clusters add` records
    assert tracefiles.format_of(path) == "sacct" and tracefiles.format_of(tmp_path / "x.csv.zst") == "csv"


def test_a_truncated_or_oversized_zst_is_refused(tmp_path: Path) -> None:
    whole = zstandard.ZstdCompressor().compress(text(LINES) * 50)
    cut = tmp_path / "cut.sacct.zst"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(IngestError, match=r"^cut\.sacct\.zst: truncated or corrupt zstd stream"):
        tracefiles.read_trace(cut, "cut", "sacct", "UTC", source_file=cut.name)
    bomb = tmp_path / "bomb.csv.zst"
    bomb.write_bytes(zstandard.ZstdCompressor(level=19).compress(b"0" * 50_000_000))
    assert bomb.stat().st_size < 10_000
    with pytest.raises(IngestError, match=r"decompresses to more than 1,000,000 bytes"):
        read_bytes(bomb, bomb.name, max_bytes=1_000_000)


def test_clusters_add_keeps_compression_and_delimiter_and_the_pipeline_reads_it_back(tmp_path: Path) -> None:
    source = tmp_path / "export.sacct.zst"
    source.write_bytes(_compress("zst", text(LINES, "☃")))
    raw = tmp_path / "raw"
    added, _ = tracefiles.add_trace(raw, "lab", source, fmt="sacct", timezone="UTC", delimiter="☃")
    assert added.path.name == "lab.sacct.zst" and (raw / "clusters" / "lab.toml").is_file()
    (found,), problems = tracefiles.user_traces(raw)
    assert problems == [] and (found.name, found.delimiter, found.recorded_sha256) == ("lab", "☃", added.recorded_sha256)
    result = found.read()
    assert result.sha256 == found.recorded_sha256 and rows(result) == rows(read(text(LINES)))


def test_the_job_log_csv_carries_measured_energy_and_utilisation() -> None:
    csv = (b"job_id,submit_time,start_time,end_time,num_gpus,state,energy_j,gpu_util_pct\n"
           b"a,2024-03-01T09:00:00,2024-03-01T10:00:00,2024-03-01T11:00:00,4,COMPLETED,3600000,81.5\n"
           b"b,2024-03-01T09:00:00,2024-03-01T10:00:00,2024-03-01T11:00:00,4,COMPLETED,0,\n"
           b"c,2024-03-01T09:00:00,,2024-03-01T09:05:00,4,CANCELLED,,\n"
           b"d,2024-03-01T09:00:00,2024-03-01T10:00:00,2024-03-01T11:00:00,4,COMPLETED,-5,\n")
    result = read_joblog(csv, trace="t", source_file="t.csv")
    assert rows(result) == [("a", "gpu", 3_600_000.0, "measured", 81.5), ("b", "gpu", None, "zero", None),
                            ("c", "never_started", None, "not_exported", None)]
    assert result.quarantine.select("line", "column").rows() == [(5, "energy_j")]
    assert result.counts.energy_source == "energy_j"
