"""Shared fixtures: the upstream mirror (../shared/traces) and data homes materialized in-process (``materialized``)."""

from __future__ import annotations

from pathlib import Path

import pytest

# The shared helpers' asserts report their operands as the tests' own do (registered before any test imports them).
pytest.register_assert_rewrite("tests.support")

from pipelines.home.paths import REPO_ROOT, ProjectPaths  # noqa: E402 - after the registration above
from tests.support.materialize import INGEST, Homes  # noqa: E402 - likewise

MIRROR = REPO_ROOT.parent / "shared" / "traces"


@pytest.fixture(scope="session")
def mirror() -> Path:
    assert MIRROR.is_dir(), f"the upstream mirror {MIRROR} is required by these tests (CI puts ../shared beside the clone)"
    return MIRROR


@pytest.fixture(scope="session")
def materialized(mirror: Path, tmp_path_factory: pytest.TempPathFactory) -> Homes:
    """``materialized(*steps, base=, prepare=, traces=)``: a data home with those assets materialized, built once per session.

    See tests/support/materialize.py: a ``Step`` selects assets (and a partition); homes are cached
    by what built them, so every module asking for the same home shares one build.
    """
    return Homes(tmp_path_factory)


@pytest.fixture(scope="session")
def ingested(materialized: Homes) -> tuple[ProjectPaths, object]:
    """The raw + ingest layers materialized from the mirror into a temp root, once per session: (paths, result)."""
    home = materialized(INGEST, name="project")
    return home.paths, home.result
