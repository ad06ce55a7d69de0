"""``sql --timeout N`` stops a statement within 1 s of N (issue 54, build item 4): at N the watcher interrupts DuckDB's
connection, and a statement that does not stop then ends the process ``GRACE_S`` (0.9 s) later with one line.

The non-slow tests assert the events and their order (what was interrupted, what was raised or printed); the slow one
measures the time from the statement's start to the process's end against N + 1 s."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from pipelines.home.paths import REPO_ROOT
from pipelines.sql.watchdog import GRACE_S, QueryTimeout, interruptible


class Connection:
    """What ``interruptible`` uses of a DuckDB connection: ``interrupt()``, recorded; the statement it ends waits for it."""

    def __init__(self, events: list[str]) -> None:
        self.events, self.interrupted = events, threading.Event()

    def interrupt(self) -> None:
        self.events.append("interrupt")
        self.interrupted.set()


def test_at_the_timeout_the_statement_is_interrupted_once_then_the_timeout_is_raised() -> None:
    events: list[str] = []
    con = Connection(events)
    timeout = pytest.raises(QueryTimeout, match=r"^the query ran past --timeout 0\.2 s and was interrupted$")
    with timeout, interruptible(con, 0.2):  # type: ignore[arg-type]  # the fake stands for DuckDB's connection
        events.append("statement started")
        assert con.interrupted.wait(60), "never interrupted"
        events.append("statement stopped")
        raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")
    assert events == ["statement started", "interrupt", "statement stopped"]


def test_a_statement_done_before_the_timeout_is_not_interrupted() -> None:
    events: list[str] = []
    with interruptible(Connection(events), 60.0):  # type: ignore[arg-type]  # the fake stands for DuckDB's connection
        events.append("statement done")
    assert events == ["statement done"]


#: A statement that does not stop when interrupted (a call DuckDB cannot interrupt), under ``interruptible``: the process
#: must end with the timeout's line before the statement ends. ``sys.argv[1]``: the timeout (s).
STUCK = """
import sys, time
from pipelines.sql.watchdog import interruptible

class Deaf:
    def interrupt(self):
        print("interrupted", flush=True)

with interruptible(Deaf(), float(sys.argv[1])):
    print("started", flush=True)
    time.sleep(float(sys.argv[2]))
print("the statement ended", flush=True)
"""


def test_a_statement_that_does_not_stop_ends_the_process_with_one_line() -> None:
    done = subprocess.run([sys.executable, "-c", STUCK, "0.2", "120"], capture_output=True, text=True, check=False, cwd=REPO_ROOT,
                          timeout=120)
    assert (done.returncode, done.stdout.splitlines()) == (1, ["started", "interrupted"]), done.stderr
    assert done.stderr.splitlines() == ["Error: the query ran past --timeout 0.2 s and did not stop when interrupted"]


#: Seconds over N the slow test allows a statement to end its process: the 1 s of issue 54. A statement DuckDB interrupts
#: ends in milliseconds; one it cannot ends ``GRACE_S`` (0.9 s) after the interrupt, which leaves 0.1 s for the watcher's
#: wake-up and the exit on a loaded machine.
BOUND_S = 1.0


@pytest.mark.slow
@pytest.mark.parametrize("stuck", [False, True])
def test_timeout_stops_within_1_s_of_its_value(tmp_path: Path, stuck: bool) -> None:
    """From the statement's start (its "started" line) to the process's end: N = 2 s, a range DuckDB interrupts and a
    call it cannot (``STUCK``)."""
    timeout_s = 2.0
    if stuck:
        args = [sys.executable, "-c", STUCK, str(timeout_s), "120"]
    else:
        args = [sys.executable, "-c", STUCK.replace("time.sleep(float(sys.argv[2]))", "con.sql('select count(*) from range(1000000000000)').fetchall()")
                .replace("with interruptible(Deaf()", "import duckdb\ncon = duckdb.connect()\nwith interruptible(con"), str(timeout_s), "0"]
    process = subprocess.Popen(args, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "started\n"
        started = time.monotonic()
        process.wait(timeout=60)
        seconds = time.monotonic() - started
    finally:
        process.kill()
    err = process.stderr.read() if process.stderr else ""
    assert timeout_s <= seconds + 0.05 and seconds < timeout_s + BOUND_S, (seconds, err)
    if stuck:
        assert process.returncode == 1 and seconds > timeout_s + GRACE_S - 0.05, (seconds, err)
    else:  # the interrupt stopped it: QueryTimeout's traceback, not the grace's exit
        assert "QueryTimeout: the query ran past --timeout 2 s and was interrupted" in err and "did not stop" not in err, err
