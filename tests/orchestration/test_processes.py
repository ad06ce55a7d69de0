"""``group_alive``: what ``supervise`` (materialize's driver, ``dev``) waits on after a stop. A killed process whose parent
has exited is an orphan zombie until init reaps it, which here took up to 1.7 s: counted alive, it held materialize's
Ctrl-C at 2 s (issue 53, the 2 s row)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

from pipelines.orchestration.processes import group_alive


def test_a_running_group_is_alive_and_a_group_of_zombies_is_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        assert group_alive(child.pid)
        child.kill()
        deadline = time.monotonic() + 30
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:  # killed, not yet waited for
            assert time.monotonic() < deadline, "the killed child never became a zombie"
            time.sleep(0.01)
        os.killpg(child.pid, 0)  # the kernel still counts the zombie in its group: a signal to it succeeds
        assert not group_alive(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not group_alive(child.pid)
