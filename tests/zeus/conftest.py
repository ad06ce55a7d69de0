"""Fixtures of the simulator's tests: the Zeus traces of the mirror, and the published simulator over them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.zeus.traces import Traces
from tests.support.zeus_peer import Peer


@pytest.fixture(scope="module")
def traces(mirror: Path) -> Traces:
    """The train and power traces of the mirror's Zeus CSVs."""
    return read_trace_dir(mirror / "zeus")


@pytest.fixture(scope="module")
def peer(mirror: Path) -> Peer:
    """The published simulator (zeus==0.16.0) over the same CSVs, text columns read as categories as it reads them."""
    return Peer(mirror / "zeus", categorical=True)
