"""The sql command's bounds hold memory, measured: a child's peak RSS (``tests.support.peak_rss``) against a child that ran a
trivial statement, as tests/ingest/test_memory_bounds.py does for the readers. Each docstring says what the bound's removal
gave (measured once by hand, bound removed in a scratch edit: the test failed)."""

from __future__ import annotations

from pathlib import Path

from tests.support.peak_rss import peak_rss_mib

#: QUERY in a session of the data home HOME with DuckDB's memory limit LIMIT (``connect``, as the command opens it).
SESSION = """
import sys, duckdb
from pathlib import Path
from pipelines.home.paths import ProjectPaths
from pipelines.sql.views import connect, run_sql

con = connect(ProjectPaths(Path(sys.argv[1])), quiet=True, memory_limit=sys.argv[2])
try:
    print(run_sql(con, sys.argv[3]).height)
except duckdb.OutOfMemoryException as exc:
    print(str(exc).splitlines()[0])
"""

#: ``--file PATH``'s read (``read_sql_file``): the length of the text, or its one error line.
SQL_FILE = """
import sys, click
from pathlib import Path
from pipelines.cli.sql import read_sql_file

try:
    print(len(read_sql_file(Path(sys.argv[1]))))
except click.BadParameter as exc:
    print(exc.message)
"""


def test_the_memory_limit_holds_the_sessions_memory(tmp_path: Path) -> None:
    """A string of 20,000,000 numbers aggregated under a 64 MB limit: DuckDB refuses it within the limit. With ``connect``
    setting half the RAM whatever ``memory_limit`` it is given, the query ran to its end and this test failed (peak 1,239 MiB
    against 148 MiB)."""
    code, out, baseline = peak_rss_mib(SESSION, str(tmp_path), "64MB", "select 1")
    assert (code, out) == (0, "1\n")
    code, out, peak = peak_rss_mib(SESSION, str(tmp_path), "64MB", "select string_agg(x::varchar) from range(20000000) t(x)")
    assert code == 0, out
    assert peak - baseline < 96, (peak, baseline)  # the 64 MB limit and DuckDB's own allocations outside it
    assert out.startswith("Out of Memory Error: "), out


def test_a_huge_sql_file_is_read_no_further_than_its_bound(tmp_path: Path) -> None:
    """A 1 GiB sparse file (no disk) given as ``--file``: read 16 MiB and one byte, then refused. Read whole (``fh.read()``),
    this test failed (peak 1,103 MiB against 95 MiB)."""
    small = tmp_path / "one.sql"
    small.write_text("select 1;")
    code, out, baseline = peak_rss_mib(SQL_FILE, str(small))
    assert (code, out) == (0, "9\n")
    huge = tmp_path / "huge.sql"
    with huge.open("wb") as f:
        f.truncate(1 << 30)
    code, out, peak = peak_rss_mib(SQL_FILE, str(huge))
    assert code == 0, out
    assert peak - baseline < 48, (peak, baseline)  # the 16 MiB read and the allocator's slack
    assert out == f"{huge} holds more than 16 MiB: a SQL script, not data, is read with --file\n"
