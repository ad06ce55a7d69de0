"""The sql command cannot crash on a type, a bad file, a huge --file, a long query or Ctrl-C (issue 39: 8-11, 17, 19).

Each test runs the command as a user does (click's runner in-process, or a subprocess where a signal
or the process's exit status is what is tested) over a tmp data home.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl
import psutil
import pytest
from click.testing import CliRunner, Result

from pipelines.cli.sql import cli, frame_json, read_sql_file
from pipelines.home.atomic import write_parquet_atomic
from pipelines.home.paths import ProjectPaths
from pipelines.sql.views import connect, half_the_memory, run_sql


def sql(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"GPU_ENERGY_HOME": str(home)}, catch_exceptions=False)


#: Issue 39 item 8's types (the 13 probes that gave tracebacks, and their nested forms): the SQL and DuckDB's text for it.
TYPES = {
    "interval": ("interval 3 day", "3 days"),
    "union": ("union_value(a := 1)::union(a int, b varchar)", "1"),
    "blob": ("'\\x00ab'::blob", "\\x00ab"),
    "bit": ("'0101'::bit", "0101"),
    "varint": ("123456789012345678901234567890::varint", "123456789012345678901234567890"),
    "map": ("map([1, 2], ['a', 'b'])", "{1=a, 2=b}"),
    "time_tz": ("'12:00:00+02'::timetz", "12:00:00+02"),
    "list_of_interval": ("[interval 1 day]", "[1 day]"),
    "struct_of_blob": ("{'x': 'ab'::blob}", "{'x': ab}"),
    "list_of_map": ("[map([1], [2])]", "[{1=2}]"),
}


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
@pytest.mark.parametrize("name", sorted(TYPES))
def test_every_type_is_written_in_every_format(tmp_path: Path, name: str, fmt: str) -> None:
    expr, text = TYPES[name]
    result = sql(tmp_path, "--format", fmt, f"select {expr} as v, 7 as n")
    assert result.exit_code == 0, result.output
    if fmt == "csv":
        assert pl.read_csv(io.StringIO(result.output), infer_schema=False).row(0) == (text, "7")
    elif fmt == "json":
        assert json.loads(result.output) == [{"v": text, "n": 7}]
    else:
        assert text.replace("\\", "\\\\") in result.output or text in result.output
        assert result.output.rstrip().endswith("1 row")


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_duckdb_settings_print_in_every_format(tmp_path: Path, fmt: str) -> None:
    """Its ``typed_value`` column is a VARIANT: cast to text, where polars failed on it (CSV) or panicked (JSON)."""
    result = sql(tmp_path, "--format", fmt, "select name, typed_value from duckdb_settings() where name = 'threads'")
    assert result.exit_code == 0, result.output
    rows = pl.read_csv(io.StringIO(result.output), infer_schema=False).to_dicts() if fmt == "csv" else json.loads(result.output)
    assert rows == [{"name": "threads", "typed_value": str(duckdb.connect().sql("select current_setting('threads')").fetchall()[0][0])}]


def test_duplicate_column_names_are_suffixed_in_place(tmp_path: Path) -> None:
    result = sql(tmp_path, "--format", "csv", "select 1 as a, interval 2 hour as a, 3 as b, 4 as a_2")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["a,a_2,b,a_2_2", "1,02:00:00,3,4"]


def test_json_writes_nan_and_infinities_as_strings(tmp_path: Path) -> None:
    result = sql(tmp_path, "--format", "json",
                 "select 'nan'::double a, 'inf'::double b, '-inf'::double c, 2.5::double d, null::double e, "
                 "[1.0, 'inf'::double] f")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"a": "NaN", "b": "Infinity", "c": "-Infinity", "d": 2.5, "e": None, "f": [1.0, "Infinity"]}]
    # finite floats keep polars' fast path, and its output
    frame = pl.DataFrame({"x": [1.5, None]})
    assert frame_json(frame) == frame.write_json()


def test_a_bad_file_names_its_view_and_the_others_still_work(tmp_path: Path) -> None:
    paths = ProjectPaths(tmp_path)
    paths.assets.mkdir(parents=True)
    paths.table("itp_jobs").write_text("not parquet\n")
    write_parquet_atomic(pl.DataFrame({"gpu": ["v100", "a100"]}), paths.table("hetero_gpu_profiles"))
    (paths.assets / "quarantine").mkdir()
    (paths.assets / "quarantine" / "x_bad_rows.parquet").write_bytes(b"PAR1")
    out = subprocess.run([sys.executable, "-m", "pipelines", "sql", "--format", "csv", "select count(*) as n from hetero_gpu_profiles"],
                         capture_output=True, text=True, env={**os.environ, "GPU_ENERGY_HOME": str(tmp_path)}, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["n", "2"]
    warnings = out.stderr.splitlines()
    assert len(warnings) == 2 and "Traceback" not in out.stderr
    assert warnings[0].startswith("warning: view itp_jobs skipped") and "itp_jobs.parquet" in warnings[0]
    assert warnings[1].startswith("warning: view quarantine skipped")
    assert sql(tmp_path, "--format", "csv", "select 1 as x").output.splitlines()[:2] == ["x", "1"]


def test_reading_file_is_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big.sql"
    big.write_text("select 1;" * 200)
    with pytest.raises(Exception, match="holds more than"):
        read_sql_file(big, limit=1000)
    assert read_sql_file(big, limit=1800) == "select 1;" * 200
    # /dev/zero never ends: read unbounded, this would run until pytest-timeout's limit, not return the message
    result = sql(tmp_path, "--file", "/dev/zero")
    assert result.exit_code == 2 and "/dev/zero holds more than 16 MiB" in result.output


def test_timeout_interrupts_a_long_query(tmp_path: Path) -> None:
    # the message, not a clock: a query that did not stop when interrupted ends the process with "did not stop" instead
    result = sql(tmp_path, "--timeout", "0.5", "select count(*) from range(1000000000000)")
    assert result.exit_code == 1
    assert result.output.strip() == "Error: the query ran past --timeout 0.5 s and was interrupted"


def test_memory_limit_is_half_the_ram_and_a_flag(tmp_path: Path) -> None:
    con = connect(ProjectPaths(tmp_path), quiet=True)
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    limit = run_sql(con, "select current_setting('memory_limit') as m")["m"][0]
    assert half_the_memory() == f"{total // 2 // 2**20}MiB"
    number, unit = limit.split(" ")
    factor = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}[unit]
    assert abs(float(number) * factor - total / 2) < 0.01 * total
    result = sql(tmp_path, "--memory-limit", "64MB", "select string_agg(x::varchar) from range(50000000) t(x)")
    assert result.exit_code == 1 and result.output.startswith("Error: Out of Memory Error") and len(result.output.splitlines()) == 1
    assert sql(tmp_path, "--memory-limit", "lots", "select 1").exit_code == 2


#: ``python -m pipelines sql ARGS`` that says "query started" on stderr once the query's interruptible block is entered.
ANNOUNCED = """
import contextlib, sys
import pipelines.cli.sql as sql
from pipelines.cli import main

entered = sql.interruptible

@contextlib.contextmanager
def announced(*args, **kwargs):
    with entered(*args, **kwargs):
        sys.stderr.write("query started\\n")
        sys.stderr.flush()
        yield

sql.interruptible = announced
main(prog_name="python -m pipelines")
"""


def test_ctrl_c_interrupts_the_query(tmp_path: Path) -> None:
    """Events, not a clock: the query is running (its block entered, then the process burning CPU) when SIGINT is sent;
    the process ends with 130, no output, no traceback, and without the grace's "did not stop when interrupted" line (which
    ``interruptible`` prints where the query ran on ``GRACE_S`` past the signal): the interrupt, not the exit, stopped it."""
    process = subprocess.Popen([sys.executable, "-c", ANNOUNCED, "sql", "select count(*) from range(1000000000000)"],
                               env={**os.environ, "GPU_ENERGY_HOME": str(tmp_path)}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        assert process.stderr.readline() == "query started\n"
        child = psutil.Process(process.pid)
        entered = sum(child.cpu_times()[:2])
        while sum(child.cpu_times()[:2]) < entered + 0.3:  # the query, the only work left, has run a while
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert out == "" and "Traceback" not in err and "did not stop" not in err, err


def test_reads_stay_in_the_home_and_the_mirror_unless_allowed(tmp_path: Path) -> None:
    home, outside = tmp_path / "home", tmp_path / "outside"
    (home / "figures").mkdir(parents=True)
    outside.mkdir()
    (outside / "x.csv").write_text("a\n1\n2\n")
    (home / "figures" / "link.csv").symlink_to(outside / "x.csv")
    (home / "figures" / "own.csv").write_text("a\n5\n")
    own = sql(home, "--format", "csv", "select sum(a) as s from read_csv(getvariable('home') || '/figures/own.csv')")
    assert own.output == "s\n5\n"
    for query in (f"select * from read_csv('readonly://{outside}/x.csv')",
                  "select * from read_csv(getvariable('home') || '/figures/link.csv')",
                  "select count(*) from glob('readonly:///**')",
                  "select * from read_text('readonly:///etc/passwd')"):
        result = sql(home, query)
        assert result.exit_code == 1 and "outside the folders the SQL session reads" in result.output, query
        assert len(result.output.splitlines()) == 1
    allowed = sql(home, "--allow-read", str(outside), "--format", "csv", f"select sum(a) as s from read_csv('readonly://{outside}/x.csv')")
    assert allowed.output == "s\n3\n"
