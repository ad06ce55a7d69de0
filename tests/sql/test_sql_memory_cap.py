"""SQL memory really capped (issue 54, build item 4; reproduction 8): past DuckDB's ``memory_limit`` and a slack, the
process's resident memory ends the query with one line. ``sql --memory-limit 500MB "select list(range(100000000)) l"``
reached 4.09 GB in 17 s before DuckDB's own out-of-memory error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import psutil
import pytest

from pipelines.home.paths import REPO_ROOT
from pipelines.sql.watchdog import MEMORY_SLACK_BYTES, memory_cap


def test_the_cap_is_what_the_process_holds_the_limit_and_the_slack() -> None:
    con = duckdb.connect(":memory:", config={"memory_limit": "500MB"})  # DuckDB shows it as 476.8 MiB
    before = psutil.Process().memory_info().rss
    cap = memory_cap(con)
    after = psutil.Process().memory_info().rss
    assert before + 476.8 * 2**20 + MEMORY_SLACK_BYTES - 2**20 <= cap <= after + 476.8 * 2**20 + MEMORY_SLACK_BYTES + 2**20


@pytest.mark.slow  # holds about 1 GB for a second
def test_a_query_past_the_cap_is_ended_with_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pipelines", "sql", "--memory-limit", "100MB", "select list(range(30000000)) l"],
                          capture_output=True, text=True, check=False, cwd=REPO_ROOT, env={"GPU_ENERGY_HOME": str(tmp_path),
                                                                                          "PATH": "/usr/bin:/bin"})
    assert done.returncode == 1 and done.stdout == "", done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("Error: the query used more than ") and "(this process's cap: --memory-limit and 512 MiB more)" in line
