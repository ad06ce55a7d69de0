"""The peak resident memory of one child process, measured by the kernel."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from pipelines.home.paths import REPO_ROOT


def peak_rss_mib(code: str, *args: str) -> tuple[int, str, float]:
    """(exit status, stdout and stderr, peak RSS in MiB) of ``python -c CODE ARGS`` run in a child of its own.

    The peak is the child's alone: ``os.wait4``'s rusage of that one child (``ru_maxrss``, KiB on Linux), which is what
    ``getrusage(RUSAGE_CHILDREN)`` reports for a process whose only child it is; this test process's earlier children
    do not count.
    """
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen([sys.executable, "-c", code, *args], stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT)
        try:
            _, status, usage = os.wait4(child.pid, 0)
        except BaseException:  # a test's timeout: the child goes too
            child.kill()
            child.wait()
            raise
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return child.returncode, out.read().decode(errors="replace"), usage.ru_maxrss / 1024
