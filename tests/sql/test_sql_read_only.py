"""The SQL session reads the data home and writes nothing (issue 25, High 2), and the table format prints a bounded preview.

Each statement kind that could write a file (COPY TO, ATTACH, EXPORT DATABASE, INSTALL/LOAD, a SET
that would unlock the session, spilling to a temp folder) is run on ``connect()``'s session; the
data home (and the working directory) must hold exactly the same files, byte for byte, afterwards.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.home.atomic import write_parquet_atomic
from pipelines.home.paths import ProjectPaths
from pipelines.sql.views import connect, run_sql, stream_sql

JOBS = pl.DataFrame({"job_id": ["a", "b", "c"], "num_gpu": [1, 8, 2], "duration": [60, 3600, 5]})


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root``: relative path -> sha256 (a new, removed or changed file shows)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProjectPaths:
    """A data home with one table and one figure's data; the working directory is the home (relative paths land in it)."""
    paths = ProjectPaths(tmp_path)
    write_parquet_atomic(JOBS, paths.table("itp_jobs"))
    write_parquet_atomic(JOBS.head(1), tmp_path / "figures" / "jobs.parquet")
    monkeypatch.chdir(tmp_path)
    return paths


def writes(home: Path, outside: Path) -> list[str]:
    assets = home / "assets"
    return [
        f"copy (select 'x' as job_id) to '{assets}/itp_jobs.parquet'",
        f"copy (select 'x' as job_id) to 'readonly://{assets}/itp_jobs.parquet'",
        "copy (select 1 as a) to 'assets/new.parquet'",
        f"copy (select 1 as a) to '{outside}/out.csv'",
        f"copy itp_jobs to 'readonly://{outside}/out.parquet'",
        f"attach '{assets}/x.duckdb' as x",
        f"attach 'readonly://{assets}/x.duckdb' as x",
        f"export database '{assets}/dump'",
        f"export database 'readonly://{assets}/dump'",
        "install httpfs",
        "load httpfs",
        "force install json",
        "set disabled_filesystems = ''",
        "reset disabled_filesystems",
        "set lock_configuration = false",
        "set autoinstall_known_extensions = true",
        f"set temp_directory = '{outside}'",
    ]


@pytest.mark.parametrize("index", range(len(writes(Path("h"), Path("o")))))
def test_no_statement_writes_a_file(home: ProjectPaths, tmp_path_factory: pytest.TempPathFactory, index: int) -> None:
    outside = tmp_path_factory.mktemp("outside")
    statement = writes(home.root, outside)[index]
    before, before_outside = snapshot(home.root), snapshot(outside)
    con = connect(home, quiet=True)
    with pytest.raises(duckdb.Error):
        con.execute(statement)
    assert run_sql(con, "select sum(num_gpu) as g from itp_jobs").item() == 11  # the session still reads
    con.close()
    assert snapshot(home.root) == before and snapshot(outside) == before_outside


def test_reads_by_path_through_readonly(home: ProjectPaths) -> None:
    con = connect(home, quiet=True)
    got = run_sql(con, "select job_id from read_parquet(getvariable('home') || '/figures/jobs.parquet')")
    assert got["job_id"].to_list() == ["a"]
    with pytest.raises(duckdb.PermissionException, match="LocalFileSystem"):
        con.execute("select * from 'figures/jobs.parquet'")  # DuckDB's own file system is off


def test_a_large_sort_does_not_spill_into_the_working_directory(home: ProjectPaths) -> None:
    before = snapshot(home.root)
    con = connect(home, quiet=True)
    with pytest.raises(duckdb.Error):
        con.execute("set memory_limit = '20MB'")  # locked: the limit cannot be lowered either
    assert run_sql(con, "select count(*) as n from (select * from range(2000000) t(x) order by random())").item() == 2_000_000
    assert snapshot(home.root) == before and not (home.root / ".tmp").exists()


def run_cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPU_ENERGY_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "pipelines", "sql", *args], capture_output=True, text=True, env=env, cwd=home,
                          check=False)


def test_cli_refuses_a_copy_over_a_table_in_one_line(home: ProjectPaths) -> None:
    before = snapshot(home.root)
    out = run_cli(home.root, f"copy (select 'x' as job_id) to '{home.assets}/itp_jobs.parquet'")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "read-only" in out.stderr and "Traceback" not in out.stderr
    out = run_cli(home.root, "copy (select 'x' as job_id) to getvariable('assets') || '/x'; select 1")
    assert out.returncode == 1 and out.stderr.count("\n") == 1
    assert snapshot(home.root) == before


def test_table_format_prints_a_bounded_preview_and_the_row_count(home: ProjectPaths) -> None:
    out = run_cli(home.root, "select * from range(200000) t(x)")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1] == "200,000 rows; the first 50 shown (--rows, or --format csv for all)"
    shown = [int(line.strip("│ ")) for line in lines if line.strip("│ ").isdigit()]
    assert shown == list(range(50))
    out = run_cli(home.root, "--rows", "500", "select * from itp_jobs order by job_id")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "3 rows" and "│ c      ┆ 2       ┆ 5        │" in out.stdout


def test_csv_and_json_stream_every_row(home: ProjectPaths) -> None:
    query = "select x, x * 2 as y, [x, 1] as l from range(70000) t(x)"  # two batches
    csv = run_cli(home.root, "--format", "csv", query)
    frame = pl.read_csv(csv.stdout.encode())
    assert frame.height == 70_000 and frame["y"].sum() == 2 * sum(range(70_000)) and frame["l"][7] == "[7, 1]"
    json = run_cli(home.root, "--format", "json", query)
    rows = pl.read_json(json.stdout.encode())
    assert rows.height == 70_000 and rows["l"][69_999].to_list() == [69_999, 1]
    assert run_cli(home.root, "--format", "json", "select 1 as a where false").stdout == "[]\n"


def test_stream_sql_yields_batches_not_the_result(home: ProjectPaths) -> None:
    con = connect(home, quiet=True)
    assert [f.height for f in stream_sql(con, "select * from range(10)", batch_rows=4)] == [4, 4, 2]
    (empty,) = stream_sql(con, "select job_id from itp_jobs where false")
    assert empty.columns == ["job_id"] and empty.height == 0


def test_the_shell_runs_each_statement_refuses_writes_and_goes_on(home: ProjectPaths) -> None:
    """``make sql`` (``sql --shell``): the same read-only session, statement by statement, from standard input."""
    before = snapshot(home.root)
    script = (f"select count(*) as n from itp_jobs;\ncopy itp_jobs to '{home.assets}/itp_jobs.parquet';\n"
              "select 'a;b' as s,\n  sum(num_gpu) as g from itp_jobs;\nselect 7 as last")
    out = subprocess.run([sys.executable, "-m", "pipelines", "sql", "--shell"], input=script, capture_output=True, text=True,
                         env={**os.environ, "GPU_ENERGY_HOME": str(home.root)}, cwd=home.root, check=False)
    assert out.returncode == 1  # a statement failed (a script, not a terminal)
    assert out.stderr.count("\n") == 1 and "LocalFileSystem has been disabled" in out.stderr
    assert [line for line in out.stdout.splitlines() if line.endswith(("row", "rows"))] == ["1 row"] * 3
    assert re.search(r"│ a;b ┆ 11 +│", out.stdout) and "│ 7    │" in out.stdout
    assert snapshot(home.root) == before
