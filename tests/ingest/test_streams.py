"""Non-regular inputs (issue 54 item 1): a FIFO, a device or stdin is read as a bounded stream. Its spool holds at most
``--max-bytes``, is removed on every exit (an error, SIGTERM, SIGHUP, the interpreter's exit), and a FIFO no process
writes to ends with one line naming the wall-time bound instead of hanging.

Reproductions: ``whatif /dev/zero`` left a 5.3 GB spool after ``timeout 5``; ``yes ... | whatif /dev/stdin --max-bytes
1000000`` spooled 3.0 GB; SIGTERM left the spool; a FIFO with no writer hung whatif.
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipelines.cli import cli
from pipelines.home.paths import REPO_ROOT
from pipelines.ingest import compressed, grid
from pipelines.ingest.common import IngestError
from pipelines.ingest.compressed import plain_file
from tests.support.cli import one_error_line
from tests.support.sacct_export import write_export


@pytest.fixture
def spool_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder the spool goes to (``tempfile``'s), empty."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_a_device_is_read_to_max_bytes_at_most_and_its_spool_removed(spool_dir: Path) -> None:
    with pytest.raises(IngestError, match="a stream of more than 100,000 bytes .*--max-bytes raises it"), \
            plain_file(Path("/dev/zero"), limit=100_000):
        pass
    assert list(spool_dir.iterdir()) == []


def test_whatif_on_dev_zero_is_one_line(spool_dir: Path, tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["whatif", "/dev/zero", "--max-bytes", "100000"], env={"GPU_ENERGY_HOME": str(tmp_path)})
    assert done.exit_code == 2 and done.stdout == "", done.output
    assert done.stderr.splitlines() == ["Error: /dev/zero: a stream of more than 100,000 bytes (the bound on what a FIFO, device "
                                        "or stdin is read to; --max-bytes raises it)"]
    assert list(spool_dir.iterdir()) == []


def test_a_fifo_with_no_writer_ends_with_the_wall_time_bound(spool_dir: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "export.sacct"
    os.mkfifo(fifo)
    monkeypatch.setattr(compressed, "STREAM_IDLE_S", 0.2)
    with pytest.raises(IngestError, match=r"no byte in 0.2 s \(the wall-time bound on waiting for a FIFO"), plain_file(fifo):
        pass
    assert list(spool_dir.iterdir()) == []


def test_a_fifo_is_read_whole_when_its_writer_closes(spool_dir: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "export.sacct"
    os.mkfifo(fifo)
    data = b"JobID|State\n" + b"".join(b"%d|COMPLETED\n" % i for i in range(50_000))  # several pipe buffers

    def write() -> None:
        with open(fifo, "wb") as fh:
            fh.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    with plain_file(fifo, limit=len(data)) as (plain, sha):  # exactly the bound: not over it
        assert plain.parent == spool_dir and plain.read_bytes() == data and sha is not None
    writer.join()
    assert list(spool_dir.iterdir()) == []


#: A process that spools a FIFO whose writer holds it open (its spool grows as bytes come), until a signal ends it. Its
#: SIGHUP starts at the default action: under nohup (SIGHUP ignored, inherited) the package rightly leaves it ignored.
_SPOOLER = ("import signal, sys\nsignal.signal(signal.SIGHUP, signal.SIG_DFL)\nfrom pathlib import Path\n"
            "from pipelines.ingest.compressed import plain_file\nwith plain_file(Path(sys.argv[1])):\n    pass\n")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_the_spool_is_removed_when_a_signal_ends_the_process(tmp_path: Path, signum: int) -> None:
    fifo = tmp_path / "export.sacct"
    os.mkfifo(fifo)
    spool = tmp_path / "tmp"
    spool.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", _SPOOLER, str(fifo)], env={**os.environ, "TMPDIR": str(spool)}, cwd=REPO_ROOT)
    with open(fifo, "wb") as writer:  # opens once the process opened its end
        writer.write(b"JobID|State\n")
        writer.flush()
        while not list(spool.iterdir()) and proc.poll() is None:
            pass  # until the spool is made (the line is then in its buffer, the stream held open)
        assert [p.name.startswith("gpu-energy-") for p in spool.iterdir()] == [True]
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == -signum  # ended by the signal, as its default action ends it
    assert list(spool.iterdir()) == []


def test_the_spool_is_removed_at_the_interpreters_exit(tmp_path: Path) -> None:
    """A spool a thread holds when the main thread returns (no ``finally`` of its runs): the ``atexit`` removal."""
    fifo = tmp_path / "export.sacct"
    os.mkfifo(fifo)
    spool = tmp_path / "tmp"
    spool.mkdir()
    script = ("import sys, threading\nfrom pathlib import Path\nfrom pipelines.ingest.compressed import plain_file\n"
              "def hold():\n    with plain_file(Path(sys.argv[1])) as (plain, _):\n        print(plain, flush=True)\n"
              "        threading.Event().wait()\n"
              "threading.Thread(target=hold, daemon=True).start()\nsys.stdin.readline()\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(fifo)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(spool)}, cwd=REPO_ROOT)
    assert proc.stdin is not None and proc.stdout is not None
    with open(fifo, "wb") as writer:
        writer.write(b"JobID|State\n")
    spooled = Path(proc.stdout.readline().strip())
    assert spooled.parent == spool
    proc.stdin.write("\n")
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    proc.stdout.close()
    assert list(spool.iterdir()) == []



def test_price_and_sql_file_on_a_fifo_with_no_writer_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    monkeypatch.setattr(compressed, "STREAM_IDLE_S", 0.2)
    export = tmp_path / "x.sacct"
    write_export(export, 5, seed=1)
    bound = "no byte in 0.2 s (the wall-time bound on waiting for a FIFO, device or stdin: is a process writing to it?)"
    assert one_error_line(["whatif", str(export), "--price", str(fifo), "--price-unit", "EUR/kWh"], tmp_path) == f"Error: {fifo}: {bound}"
    assert one_error_line(["sql", "--file", str(fifo)], tmp_path).startswith(f"Error: Invalid value for '--file': {fifo}: {bound}")


def test_an_empty_sql_file_and_a_fifo_to_keep_are_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sql"
    empty.write_text("  \n")
    assert one_error_line(["sql", "--file", str(empty)], tmp_path).startswith(f"Error: Invalid value for '--file': {empty} is empty: no SQL to run")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert one_error_line(["clusters", "add", "lab", str(fifo)], tmp_path) == (
        f"Error: {fifo}: not a regular file (a FIFO, device or stdin): clusters add keeps a copy of a file; save the export to a file first")
    export = tmp_path / "x.sacct"
    write_export(export, 5, seed=1)
    assert "not a regular file (a FIFO, device or stdin): give the profile's file" in one_error_line(
        ["whatif", str(export), "--profiles", f"a100={fifo}"], tmp_path)


def test_a_series_file_is_read_to_its_bound_at_most(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grid, "MAX_SERIES_BYTES", 1000)
    export = tmp_path / "x.sacct"
    write_export(export, 5, seed=1)
    big = tmp_path / "grid.csv"
    big.write_text("timestamp,gco2_per_kwh\n" + "".join(f"2024-09-15T{h:02d}:00,300\n" for h in range(24)) * 3)  # 1,678 bytes
    assert one_error_line(["whatif", str(export), "--grid-intensity", str(big)], tmp_path) == (
        f"Error: {big}: larger than 1,000 bytes (the bound on a grid or price series)")
    packed = tmp_path / "grid.csv.gz"
    packed.write_bytes(gzip.compress(big.read_bytes()))
    assert one_error_line(["whatif", str(export), "--grid-intensity", str(packed)], tmp_path) == (
        f"Error: {packed}: decompresses to more than 1,000 bytes (the cap on decompressed size; the bound on a grid or price series); "
        "refusing it as a possible decompression bomb")
