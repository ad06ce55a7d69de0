"""Issue 25's hostile own-trace rows through ``whatif`` and through the pipeline: quarantined, and the rest replayed to the
same numbers as the file without them; a FIFO (``whatif <(...)``) read as a stream; terminal escapes printed escaped."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipelines.defs.clusters.partitions import OWN_TRACE_DIMENSION, TRACE_DIMENSION
from pipelines.defs.shared.io_manager import ParquetIOManager, PathsResource
from pipelines.home.paths import REPO_ROOT

HEADER = "JobID|JobIDRaw|JobName|User|Account|Partition|Submit|Start|End|Elapsed|State|ExitCode|AllocTRES|NNodes"


def row(job: str, *, submit: str = "2024-03-01T10:00:00", start: str = "2024-03-01T10:05:00", end: str = "2024-03-01T11:05:00",
        name: str = "train", tres: str = "cpu=8,gres/gpu:a100=4,gres/gpu=4,node=1") -> str:
    return "|".join([job, job, name, "alice", "acct", "gpu", submit, start, end, "", "COMPLETED", "0:0", tres, "1"])


#: Thirty jobs of three recurring groups, an hour to three apart.
GOOD = [row(str(100 + i), name=f"train{i % 3}", start=f"2024-03-{1 + i // 10:02d}T{10 + i % 10:02d}:05:00",
            end=f"2024-03-{1 + i // 10:02d}T{11 + i % 10 + i % 3:02d}:05:00") for i in range(30)]
#: The issue's rows (file lines 32..37 after the header and GOOD), each with the column it is quarantined for.
HOSTILE = {
    row("1", tres="cpu=1,gres/gpu=9223372036854775807,node=1"): "AllocTRES",
    row("2", tres="cpu=1,gres/gpu=99999999999999999999,node=1"): "AllocTRES",
    row("3", name="x" * 300): "JobName",
    row("4", submit="1970-01-01T00:00:00", start="1970-01-01T00:10:00", end="1970-01-01T00:30:00"): "Submit",
    row("5", end="2152-03-01T10:05:00"): "End",
    row("6", submit="2100-03-01T10:00:00", start="2100-03-01T10:05:00", end="2100-03-01T11:05:00"): "Submit",
}


def write(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def whatif(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines", "whatif", *args], capture_output=True, text=True, check=False, cwd=REPO_ROOT)


def test_whatif_quarantines_the_hostile_rows_and_replays_the_rest_as_without_them(tmp_path: Path, mirror: Path) -> None:
    hostile = write(tmp_path / "hostile.sacct", [*GOOD, *HOSTILE])
    clean = write(tmp_path / "clean.sacct", GOOD)
    options = ("--timezone", "Europe/Berlin", "--samples", "2", "--json", "--no-progress", "--trace-dir", str(mirror / "zeus"))
    got, want = (whatif(str(p), *options) for p in (hostile, clean))
    assert got.returncode == 0 and want.returncode == 0, got.stderr + want.stderr
    bad, good = json.loads(got.stdout), json.loads(want.stdout)
    assert (bad["lines"], bad["allocations"], bad["quarantined"], bad["cpu_only"]) == (37, 30, 6, 0)
    assert bad["quarantined_by"] == {"AllocTRES": 2, "Submit": 2, "End": 1, "JobName": 1}
    assert bad["simulated_jobs"] == good["simulated_jobs"] == 30
    for key in ("gpus", "total", "top_groups", "energy_accounting"):
        assert bad[key] == good[key], key  # the hostile rows change no number (before: 7.5e12 MWh)


def test_whatif_reads_a_process_substitution_and_escapes_the_job_names(tmp_path: Path, mirror: Path) -> None:
    export = write(tmp_path / "lab.sacct", [*GOOD, row("9", name="\x1b[2J\x1b]0;owned\x07x")])
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
    write(clusters / "hostile.sacct", [*GOOD, *HOSTILE])
    write(clusters / "clean.sacct", GOOD)
    for name in ("hostile", "clean"):
        (clusters / f"{name}.toml").write_text('timezone = "Europe/Berlin"\n')
    everything = [*definitions.assets, *definitions.asset_checks]
    resources = {"io_manager": ParquetIOManager(root=str(home)), "paths": PathsResource(root=str(home))}
    with dg.instance_for_test() as instance:
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
        ("clusters/hostile.sacct", 32 + i, column) for i, column in enumerate(HOSTILE.values())]
    history = {t: pl.read_parquet(home / "assets" / "zeus_cluster_history" / f"v100__{t}.parquet") for t in ("clean", "hostile")}
    assert history["hostile"].drop("trace", "cluster").equals(history["clean"].drop("trace", "cluster"))
    assert history["clean"]["job_id"].n_unique() == 30
