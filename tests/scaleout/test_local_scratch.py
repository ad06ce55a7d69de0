"""The LocalCluster's scratch (issue 54, reproduction 11): the workers' dask-scratch-space is a folder of the command's,
removed when the cluster ends, a Ctrl-C included (SIGINT to ``sweep --scheduler local`` in its first second left
``dask-scratch-space`` folders in the temp folder)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from pipelines.scaleout.local import local_cluster


@pytest.mark.slow  # starts a real cluster (seconds)
def test_the_scratch_is_the_commands_and_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(KeyboardInterrupt), local_cluster(workers=1) as cluster:
        (scratch,) = tmp_path.iterdir()
        assert scratch.name.startswith("gpu-energy-dask-")
        assert cluster.workers  # the worker started in it
        assert any(scratch.rglob("*")), list(scratch.iterdir())
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
