"""``home.interrupt``: a Ctrl-C ends a command even where its ``KeyboardInterrupt`` is dropped (issue 39 item 12, the
CI failure of 2026-11-28: a whatif on a LocalCluster waited 30 s in a scatter after the Ctrl-C had ended its workers)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from pipelines.home import interrupt
from pipelines.home.paths import REPO_ROOT

#: A command that drops its KeyboardInterrupt, as a weakref callback or a library's ``except BaseException`` does.
DROPS_IT = """
import os, signal, sys, time
from pathlib import Path
from pipelines.home.interrupt import ctrl_c_ends_command
from pipelines.home.atomic import atomic_path

out = Path(sys.argv[1])
with ctrl_c_ends_command():
    with atomic_path(out) as tmp:
        tmp.write_text("half")
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except BaseException:
            pass  # dropped
        print("ran on", flush=True)
        {after}
print("ended", flush=True)
"""


def _run(tmp_path: Path, after: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "command.py"
    script.write_text(textwrap.dedent(DROPS_IT).replace("{after}", after))
    return subprocess.run([sys.executable, str(script), str(tmp_path / "out" / "report.html")], check=False, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60)


def test_a_dropped_ctrl_c_ends_the_command_after_the_grace_and_removes_its_temp_file(tmp_path: Path) -> None:
    done = _run(tmp_path, "time.sleep(30)\n        print('slept', flush=True)")
    assert done.returncode == interrupt.SIGINT_STATUS, done.stderr
    # the command ran on after dropping it, and the watchdog ended it during the sleep: "slept" and "ended" never printed
    assert done.stdout == "ran on\n"
    assert done.stderr.strip().endswith("Aborted.")
    assert list((tmp_path / "out").iterdir()) == []  # no report, no .tmp_ file


def test_a_dropped_ctrl_c_publishes_nothing(tmp_path: Path) -> None:
    done = _run(tmp_path, "pass")  # the block ends at once: atomic_path would rename the temp file over the target
    # the script has no CLI's exit 130: an uncaught KeyboardInterrupt ends Python by the signal
    assert done.returncode in (interrupt.SIGINT_STATUS, -signal.SIGINT), done.stderr
    assert "KeyboardInterrupt" in done.stderr  # raised again where it would have published
    assert list((tmp_path / "out").iterdir()) == []


def test_the_previous_handler_is_restored() -> None:
    before = signal.getsignal(signal.SIGINT)
    with interrupt.ctrl_c_ends_command():
        assert getattr(signal.getsignal(signal.SIGINT), "raises_keyboard_interrupt", False)
    assert signal.getsignal(signal.SIGINT) is before


def test_a_deferred_cleanup_finishes_before_the_watchdog_ends_the_command(tmp_path: Path) -> None:
    """A Slurm cluster's close (its jobs cancelled) is such a cleanup: 1.6 s here, past the 1 s grace."""
    after = ("from pipelines.home.interrupt import deferred\n"
             "        with deferred():\n            time.sleep(1.6)\n            print('cleaned', flush=True)\n"
             "        time.sleep(30)\n        print('slept', flush=True)")
    done = _run(tmp_path, after)
    assert done.returncode == interrupt.SIGINT_STATUS, done.stderr
    # order, not a clock: the cleanup ran to its end past the grace, then the watchdog ended the command in the sleep after it
    assert done.stdout == "ran on\ncleaned\n"


def test_the_watchdog_removes_a_decompressed_export_too(tmp_path: Path) -> None:
    """``clusters add`` and ``whatif`` read a compressed export through a decompressed temp file (``plain_file``), which
    its ``finally`` removes; the watchdog removes it where it ends the process first."""
    import gzip

    export = tmp_path / "lab.sacct.gz"
    export.write_bytes(gzip.compress(b"JobID|Start\n1|2026-01-01T00:00:00\n"))
    temp = tmp_path / "tmp"
    temp.mkdir()
    script = tmp_path / "command.py"
    script.write_text(textwrap.dedent("""
        import os, signal, sys, time
        from pathlib import Path
        from pipelines.home.interrupt import ctrl_c_ends_command
        from pipelines.ingest.compressed import plain_file

        with ctrl_c_ends_command(), plain_file(Path(sys.argv[1])) as (plain, _):
            print(plain.read_text().splitlines()[0], flush=True)
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
            except BaseException:
                pass  # dropped
            time.sleep(30)
    """))
    done = subprocess.run([sys.executable, str(script), str(export)], check=False, cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "TMPDIR": str(temp)})
    assert done.returncode == interrupt.SIGINT_STATUS, done.stderr
    assert done.stdout == "JobID|Start\n"
    assert list(temp.iterdir()) == []


#: A Ctrl-C that lands in a ctypes callback (as in numba's compiler, which llvmlite calls back to cache what it compiled):
#: ctypes drops the KeyboardInterrupt and prints it; a callback's other errors are printed as before.
IN_A_CALLBACK = """
import ctypes, os, signal, time
from pipelines.home.interrupt import ctrl_c_ends_command

libc = ctypes.CDLL(None)
compare = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))

def failing(a, b):
    raise ValueError("a callback's own error")

def interrupted(a, b):
    os.kill(os.getpid(), signal.SIGINT)  # its handler runs here, inside the callback
    return a[0] - b[0]

with ctrl_c_ends_command():
    for fn in (failing, interrupted):
        values = (ctypes.c_int * 2)(2, 1)
        libc.qsort(values, 2, ctypes.sizeof(ctypes.c_int), compare(fn))
    print("ran on", flush=True)
    time.sleep(30)
"""


def test_a_ctrl_c_dropped_in_a_ctypes_callback_prints_no_traceback(tmp_path: Path) -> None:
    script = tmp_path / "command.py"
    script.write_text(textwrap.dedent(IN_A_CALLBACK))
    done = subprocess.run([sys.executable, str(script)], check=False, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == interrupt.SIGINT_STATUS and done.stdout == "ran on\n", done.stderr
    assert "ValueError: a callback's own error" in done.stderr and done.stderr.count("Traceback") == 1, done.stderr
    assert "KeyboardInterrupt" not in done.stderr and done.stderr.endswith("Aborted.\n"), done.stderr


#: A command whose temp folder outlives its ``KeyboardInterrupt`` (held by a global, as a parse's frames hold a quarantine's
#: folder in the traceback): the CLI's exit after a Ctrl-C (``os._exit``) runs no finalizer.
HOLDS_A_FOLDER = """
import os, signal, time
from pipelines.cli import cli, main
from pipelines.ingest.quarantine_spill import HeldFolder

@cli.command("hold")
def hold() -> None:
    global held
    held = HeldFolder("gpu-energy-quarantine-")
    (held.path / "x.parquet").write_bytes(b"x")
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)

main(["hold"], prog_name="test")
"""


def test_a_ctrl_c_removes_the_temp_folders_in_flight_before_the_command_exits(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = subprocess.run([sys.executable, "-c", HOLDS_A_FOLDER], check=False, cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "TMPDIR": str(temp)})
    assert done.returncode == interrupt.SIGINT_STATUS and done.stderr.strip().endswith("Aborted."), done.stderr
    assert list(temp.iterdir()) == []
