"""Two `clusters add R --replace` at once leave one trace, whole (issue 39, item 14)."""

from __future__ import annotations

import fcntl
import lzma
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from pipelines.sources.fetch import sha256_of
from tests.support.processes import blocked_on
from tests.support.sacct_export import write_export


def add(home: Path, source: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pipelines", "clusters", "add", "lab", str(source), "--replace"],
                            env={**os.environ, "GPU_ENERGY_HOME": str(home)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_an_add_waits_for_the_change_in_progress(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "raw").mkdir(parents=True)
    plain = tmp_path / "lab.sacct"
    write_export(plain, 50, seed=1, timezone="UTC")
    fd = os.open(home / "raw" / ".clusters.lock", os.O_CREAT | os.O_RDWR, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another add or remove holds raw/clusters/
    process = add(home, plain)
    try:
        # the event, not a clock: the add is queued on the lock (the kernel lists it as the lock's waiter)
        while process.pid not in blocked_on(home / "raw" / ".clusters.lock"):
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        assert not (home / "raw" / "clusters" / "lab.sacct").exists()
    finally:
        os.close(fd)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert (home / "raw" / "clusters" / "lab.sacct").is_file()


@pytest.mark.slow  # six `clusters add` processes, two at a time: about 10 s
def test_concurrent_replaces_leave_one_file_and_its_sidecar(tmp_path: Path) -> None:
    home = tmp_path / "home"
    plain = tmp_path / "lab.sacct"
    write_export(plain, 200, seed=2, timezone="UTC")
    compressed = tmp_path / "lab.sacct.xz"
    compressed.write_bytes(lzma.compress(plain.read_bytes()))
    clusters = home / "raw" / "clusters"
    for _ in range(3):
        processes = [add(home, plain), add(home, compressed)]
        for process in processes:
            _, err = process.communicate(timeout=120)
            assert process.returncode == 0, err
        data = sorted(p.name for p in clusters.iterdir() if p.suffix != ".toml")
        assert data in (["lab.sacct"], ["lab.sacct.xz"])
        sidecar = tomllib.loads((clusters / "lab.toml").read_text())
        assert sidecar["sha256"] == sha256_of(clusters / data[0])
