"""Issue 25, your own trace files: what is not used (and says why), an atomic `clusters add`, `clusters remove`, stale temp files.

The files are real (a FIFO, symbolic links, an export written by tests/support/sacct_export.py); a
failing disk is a fault injected at the copy, as ENOSPC would raise it there.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from click.testing import CliRunner

from pipelines.cli import clusters as clusters_cli
from pipelines.clusters import tracefiles
from pipelines.home.paths import ProjectPaths
from pipelines.orchestration import recovery
from pipelines.sources.fetch import sha256_of
from tests.support.empty_home import empty_home
from tests.support.sacct_export import write_export


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty data home (no mirror), its Dagster instance in tmp_path/dagster_home."""
    return empty_home(tmp_path, monkeypatch)


def test_symlinks_leaving_the_home_fifos_and_folders_are_not_used_and_say_why(home: Path, tmp_path: Path) -> None:
    clusters = home / "raw" / "clusters"
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    (clusters / "passwd.sacct").symlink_to(secret)
    write_export(home / "raw" / "lab-export.sacct", 20, seed=1)
    (clusters / "inside.sacct").symlink_to(home / "raw" / "lab-export.sacct")  # a link that stays in the home: used
    os.mkfifo(clusters / "pipe.sacct")
    (clusters / "folder.csv").mkdir()
    (clusters / "gone.sacct").symlink_to(tmp_path / "home" / "raw" / "nothing-here.sacct")
    traces, problems = tracefiles.user_traces(home / "raw")
    assert [t.name for t in traces] == ["inside"]
    assert problems == [
        "folder.csv: a folder, not a regular file",
        "gone.sacct: cannot be read (No such file or directory)",
        f"passwd.sacct: a symbolic link leaving the data home (to {secret}); copy the file in with `clusters add`",
        "pipe.sacct: a named pipe (FIFO), not a regular file",
    ]
    # A device (making one in raw/clusters/ needs root): /dev/null, in a home that holds it.
    assert tracefiles.not_a_file(Path("/dev/null"), Path("/")) == "a character device, not a regular file"
    assert tracefiles.not_a_file(clusters / "inside.sacct", home) is None


def test_a_stray_file_beside_an_added_trace_never_wins(home: Path, tmp_path: Path) -> None:
    export = tmp_path / "export.sacct"
    write_export(export, 20, seed=2)
    assert CliRunner().invoke(clusters_cli.cli, ["add", "mycl", str(export)]).exit_code == 0
    clusters = home / "raw" / "clusters"
    (clusters / "mycl.csv").write_text("job_id,gpus\n1,1\n")  # sorts before mycl.sacct
    (traces, problems) = tracefiles.user_traces(home / "raw")
    assert [(t.name, t.path.name, t.format) for t in traces] == [("mycl", "mycl.sacct", "sacct")]
    assert problems == ["mycl.csv: trace 'mycl' has two files (mycl.sacct is used); remove one"]
    (clusters / "mycl.sacct").unlink()  # only the stray file is left: not read as the sidecar's sacct
    traces, problems = tracefiles.user_traces(home / "raw")
    assert traces == [] and problems == ["mycl.csv: its sidecar mycl.toml is for a sacct file (format = 'sacct'), this is a csv file"]


def test_a_sidecar_too_large_or_nested_too_deeply_is_its_trace_left_out_in_one_line(home: Path) -> None:
    """A sidecar dropped by hand is read to 64 KiB at most, and tomllib's recursion on nested arrays is one line too."""
    clusters = home / "raw" / "clusters"
    for name in ("big", "deep", "fine"):
        write_export(clusters / f"{name}.sacct", 5, seed=3)
    (clusters / "big.toml").write_text('timezone = "UTC"\n' + "# padding\n" * 7000)  # 70,016 bytes
    (clusters / "deep.toml").write_text("fields = " + "[" * 20_000 + "]" * 20_000 + "\n")  # 40,010 bytes
    (clusters / "fine.toml").write_text('timezone = "UTC"\n')
    traces, problems = tracefiles.user_traces(home / "raw")
    assert [t.name for t in traces] == ["fine"]
    assert problems == [f"big.sacct: {clusters / 'big.toml'}: larger than 65,536 bytes (the bound on a trace's options file)",
                        f"deep.sacct: {clusters / 'deep.toml'}: not readable TOML (nested too deeply)"]


def _trace_state(home: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((home / "raw" / "clusters").iterdir())}


def _added_with_a_replacement(home: Path, tmp_path: Path, timezone: str, seed: int) -> tuple[Path, dict[str, bytes]]:
    """Trace ``lab`` added from a 20-allocation export in ``timezone``; (a 40-allocation replacement file, the stored state)."""
    old, new = tmp_path / "old.sacct", tmp_path / "new.sacct"
    write_export(old, 20, seed=seed)
    write_export(new, 40, seed=seed + 1)
    assert CliRunner().invoke(clusters_cli.cli, ["add", "lab", str(old), "--timezone", timezone]).exit_code == 0
    return new, _trace_state(home)


def test_clusters_add_on_a_full_disk_is_one_line_and_leaves_the_old_trace_as_it_was(home: Path, tmp_path: Path,
                                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    new, before = _added_with_a_replacement(home, tmp_path, "Europe/Berlin", seed=3)
    runner = CliRunner()

    def full_disk(src: Path, dst: Path) -> None:
        Path(dst).write_bytes(Path(src).read_bytes()[:1000])  # part of the copy is written, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tracefiles.shutil, "copyfile", full_disk)
    failed = runner.invoke(clusters_cli.cli, ["add", "lab", str(new), "--replace", "--timezone", "UTC"])
    assert failed.exit_code == 2
    assert failed.output.splitlines() == [f"Error: {new}: not added (No space left on device; free space on the disk of raw/clusters/); "
                                          "trace 'lab' is as it was"]
    assert _trace_state(home) == before  # no temp file left, the old data and sidecar (its time zone) untouched
    assert tomllib.loads((home / "raw" / "clusters" / "lab.toml").read_text())["timezone"] == "Europe/Berlin"


def test_clusters_add_refuses_a_source_changed_during_the_copy_and_a_bad_replacement(home: Path, tmp_path: Path,
                                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    new, before = _added_with_a_replacement(home, tmp_path, "Asia/Tokyo", seed=5)
    runner = CliRunner()
    copy = shutil.copyfile

    def still_written(src: Path, dst: Path) -> None:
        copy(src, dst)
        with open(src, "a") as fh:  # the export is still being written by sacct
            fh.write("123|123|late|u|a|p|2024-09-20T10:00:00|2024-09-20T10:00:00|2024-09-20T11:00:00|01:00:00|COMPLETED|0:0|gres/gpu=1|1\n")

    monkeypatch.setattr(tracefiles.shutil, "copyfile", still_written)
    changed = runner.invoke(clusters_cli.cli, ["add", "lab", str(new), "--replace"])
    assert changed.exit_code == 2
    assert changed.output.splitlines() == [f"Error: {new}: changed while it was being copied; add it again once it is complete"]
    assert _trace_state(home) == before
    monkeypatch.setattr(tracefiles.shutil, "copyfile", copy)
    (tmp_path / "bad.sacct").write_bytes(b"\x00\x01 not an export\n")
    bad = runner.invoke(clusters_cli.cli, ["add", "lab", str(tmp_path / "bad.sacct"), "--replace", "--timezone", "UTC"])
    assert bad.exit_code == 2 and len(bad.output.splitlines()) == 1 and str(tmp_path / "bad.sacct") in bad.output
    assert _trace_state(home) == before
    # What is stored is the copy that was read and hashed: its sha256 is the sidecar's.
    done = runner.invoke(clusters_cli.cli, ["add", "lab", str(new), "--replace"])
    assert done.exit_code == 0, done.output
    options = tomllib.loads((home / "raw" / "clusters" / "lab.toml").read_text())
    assert options["sha256"] == sha256_of(home / "raw" / "clusters" / "lab.sacct") == sha256_of(new)
    assert options["timezone"] == "UTC" and sorted(_trace_state(home)) == ["lab.sacct", "lab.toml"]


def test_recover_removes_stale_temp_files_under_raw(home: Path) -> None:
    clusters = home / "raw" / "clusters"
    stale, fresh = clusters / ".tmp_lab.sacct.0123456789ab", clusters / ".tmp_new.sacct.zst.ba9876543210.zst"
    stale.write_bytes(b"a copy killed halfway")
    fresh.write_bytes(b"a copy still being written")
    hours_ago = time.time() - recovery.RAW_TEMP_AGE_S - 60
    os.utime(stale, (hours_ago, hours_ago))
    with dg.DagsterInstance.ephemeral() as instance:
        result = recovery.recover(instance, ProjectPaths(home))
    assert result.removed == [stale] and fresh.exists()


@pytest.mark.slow
def test_clusters_remove_removes_files_stored_partitions_report_and_partition(home: Path, tmp_path: Path) -> None:
    export = tmp_path / "export.sacct"
    write_export(export, 20, seed=7)
    runner = CliRunner()
    assert runner.invoke(clusters_cli.cli, ["add", "lab", str(export)]).exit_code == 0
    assets = home / "assets"
    stored = [assets / "own_cluster_jobs/lab.parquet", assets / "quarantine/own_cluster_jobs_bad_rows/lab.parquet",
              assets / "cluster_workload_jobs/lab.parquet", assets / "zeus_cluster_history/v100__lab.parquet"]
    kept = [assets / "cluster_workload_jobs/itp.parquet", assets / "zeus_cluster_history/v100__itp.parquet",
            assets / "zeus_single_job_sweep/v100.parquet"]
    for path in stored + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        pl.DataFrame({"x": [1]}).write_parquet(path)
    (home / "figures").mkdir()
    (home / "figures" / "own_cluster_report_lab.html").write_text("<html></html>")
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("trace", ["itp", "lab"])
    done = subprocess.run([sys.executable, "-m", "pipelines", "clusters", "remove", "lab"], capture_output=True, text=True, check=False,
                          cwd=tmp_path, env=os.environ)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["removed trace lab: 2 file(s) in raw/clusters/ (lab.sacct, lab.toml), 4 stored partition file(s), "
                                        "1 report file(s), its trace partition"]
    assert not any(p.exists() for p in stored) and all(p.exists() for p in kept)
    assert list((home / "raw" / "clusters").iterdir()) == [] and list((home / "figures").iterdir()) == []
    with dg.DagsterInstance.get() as instance:
        assert instance.get_dynamic_partitions("trace") == ["itp"]
    again = subprocess.run([sys.executable, "-m", "pipelines", "clusters", "remove", "lab"], capture_output=True, text=True, check=False,
                           cwd=tmp_path, env=os.environ)
    assert again.returncode == 2 and again.stderr.splitlines() == [
        "Error: trace 'lab': nothing to remove (no file raw/clusters/lab.*, no stored partition); `clusters list` names the traces"]
