"""DuckDB over the Parquet assets: the CLI, and reading while a materialization rewrites a table."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import polars as pl
import pytest

from pipelines.home.atomic import write_parquet_atomic
from pipelines.sql.views import connect, run_sql, sql_file


def run_cli(root, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPU_ENERGY_HOME": str(root)}
    return subprocess.run([sys.executable, "-m", "pipelines", "sql", *args], capture_output=True, text=True, env=env, check=False)


def test_cli_formats(ingested) -> None:
    paths, _ = ingested
    out = run_cli(paths.root, "--format", "csv", "select count(*) as n from itp_jobs")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["n", "69351"]
    out = run_cli(paths.root, "--format", "json", "select gpu, count(*) as n from zeus_power_profiles group by gpu order by gpu")
    assert out.returncode == 0, out.stderr
    assert pl.read_json(out.stdout.encode())["n"].to_list() == [453, 270, 410, 476]
    example = sql_file("examples/gpu_hours_by_cluster.sql")
    out = run_cli(paths.root, "--format", "csv", "--file", str(example))
    rows = pl.read_csv(out.stdout.encode())
    assert rows.height == 10 and round(rows["gpu_hours"].sum(), 0) == 1_632_720
    bad = run_cli(paths.root, "select * from no_such_table")
    assert bad.returncode == 1 and "no_such_table" in bad.stderr and "materialize" in bad.stderr


@pytest.mark.slow
def test_sql_reads_while_a_materialization_writes(ingested) -> None:
    paths, _ = ingested
    target = paths.table("itp_jobs")
    frame = pl.read_parquet(target)
    stop = threading.Event()
    writes = 0

    def writer() -> None:
        nonlocal writes
        while not stop.is_set():
            write_parquet_atomic(frame, target)
            writes += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        counts = []
        for _ in range(30):
            con = connect(paths, quiet=True)
            counts.append(run_sql(con, "select count(*) as n, sum(duration * num_gpu) as gs from itp_jobs").row(0))
            con.close()
    finally:
        stop.set()
        thread.join()
    assert writes > 0
    assert set(counts) == {(69_351, int((frame["duration"] * frame["num_gpu"]).sum()))}


def test_every_statement_of_a_script_runs_and_the_last_prints(ingested) -> None:
    paths, _ = ingested
    out = run_cli(paths.root, "--format", "csv", "select 1; create table t as select 41 as x; select x + 1 as y from t")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["y", "42"]


def test_consecutive_queries_each_run_to_completion(tmp_path) -> None:
    """The issue's ``select 1; select 2``: an earlier query left unfetched used to block the next (Resource In Use)."""
    out = run_cli(tmp_path, "--format", "csv", "select 1 as a; select * from range(3) t(b); select 2 as c")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["c", "2"]


def test_csv_writes_list_and_struct_columns_as_json(tmp_path) -> None:
    frame = pl.DataFrame({"workload": ["cifar100"], "batch_split": [[1874, 2222]], "fit": [{"a": 1.5, "b": None}]})
    write_parquet_atomic(frame, tmp_path / "assets" / "hetero_allocations.parquet")
    out = run_cli(tmp_path, "--format", "csv", "select * from hetero_allocations")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["workload,batch_split,fit", 'cifar100,"[1874, 2222]","{""a"": 1.5, ""b"": null}"']


def test_views_read_the_data_home_not_the_working_directory(ingested, tmp_path) -> None:
    """A folder with its own assets/ as the working directory must not shadow $GPU_ENERGY_HOME's."""
    paths, _ = ingested
    decoy = pl.read_parquet(paths.table("itp_jobs")).head(5)
    write_parquet_atomic(decoy, tmp_path / "assets" / "itp_jobs.parquet")
    env = {**os.environ, "GPU_ENERGY_HOME": str(paths.root)}
    out = subprocess.run(
        [sys.executable, "-m", "pipelines", "sql", "--format", "csv", "select count(*) as n from itp_jobs"],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["n", "69351"]
