"""Shared fixtures: the upstream mirror (../shared/traces) and one in-process materialization of the ingest layer."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

# The shared helpers' asserts report their operands as the tests' own do (registered before any test imports them).
pytest.register_assert_rewrite("tests.support")

from pipelines.home.paths import REPO_ROOT, ProjectPaths  # noqa: E402 - after the registration above

MIRROR = REPO_ROOT.parent / "shared" / "traces"


@pytest.fixture(scope="session")
def mirror() -> Path:
    assert MIRROR.is_dir(), f"the upstream mirror {MIRROR} is required by these tests (CI puts ../shared beside the clone)"
    return MIRROR


@pytest.fixture(scope="session")
def ingested(mirror: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[ProjectPaths, object]:
    """Materialize the raw + ingest layers from the mirror into a temp root, once per session."""
    import dagster as dg

    from pipelines.definitions import defs
    from pipelines.defs.shared.io_manager import ParquetIOManager, PathsResource

    root = tmp_path_factory.mktemp("project")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        definitions = defs()
    selection = dg.AssetSelection.groups("raw", "ingest", "quarantine")
    graph = definitions.resolve_asset_graph()
    keys = selection.resolve(graph)
    assets = [a for a in definitions.assets if set(a.keys) & keys]
    checks = [c for c in definitions.asset_checks or [] if {k.asset_key for k in c.check_keys} <= keys]
    result = dg.materialize(
        [*assets, *checks],
        resources={"io_manager": ParquetIOManager(root=str(root)), "paths": PathsResource(root=str(root))},
        raise_on_error=True,
    )
    return ProjectPaths(root), result
