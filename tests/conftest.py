"""Shared fixtures: the upstream mirror ($TRACES_MIRROR, else ../shared/traces) and data homes materialized in-process (``materialized``)."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

# The shared helpers' asserts report their operands as the tests' own do (registered before any test imports them).
pytest.register_assert_rewrite("tests.support")

from pipelines.home.paths import REPO_ROOT, ProjectPaths  # noqa: E402 - after the registration above

if TYPE_CHECKING:
    from tests.support.materialize import Homes

# As the package reads it (pipelines.home.paths.default_mirror), but fixed at start: tests that set $TRACES_MIRROR
# to an empty folder (monkeypatch) do so to hide the mirror from the command under test, not from this fixture.
MIRROR = Path(os.environ.get("TRACES_MIRROR") or REPO_ROOT.parent / "shared" / "traces").expanduser().resolve()


@pytest.fixture(scope="session")
def mirror() -> Path:
    assert MIRROR.is_dir(), f"the upstream mirror {MIRROR} is required by these tests ($TRACES_MIRROR, else ../shared beside the clone, as CI puts it)"
    return MIRROR


@pytest.fixture(scope="session")
def materialized(mirror: Path, tmp_path_factory: pytest.TempPathFactory) -> Homes:
    """``materialized(*steps, base=, prepare=, traces=)``: a data home with those assets materialized, built once per session.

    See tests/support/materialize.py: a ``Step`` selects assets (and a partition); homes are cached
    by what built them, so every module asking for the same home shares one build.
    """
    from tests.support.materialize import Homes  # Dagster loads only for the tests that materialize

    return Homes(tmp_path_factory)


@pytest.fixture(scope="session")
def scipy_stats() -> ModuleType:
    """``scipy.stats``, a reference some tests hold ours against; imported by the tests that ask for it, not by every
    test worker as it collects their modules (1 to 2 s of a worker's start)."""
    from scipy import stats

    return stats


@pytest.fixture(scope="session")
def ingested(materialized: Homes) -> tuple[ProjectPaths, object]:
    """The raw + ingest layers materialized from the mirror into a temp root, once per session: (paths, result)."""
    from tests.support.materialize import INGEST

    home = materialized(INGEST, name="project")
    return home.paths, home.result


#: The test files that take longest (seconds of one worker, `--durations`), longest first: first those
#: of `make test-all` (their slow tests), then those of `make test`. Under `-n auto --dist loadfile` each
#: file goes whole to the next free worker, in the order below (then the rest, in collection order), so
#: that the two workers end together instead of one finishing a long file alone at the end. Only the
#: order changes with this list, never what runs.
LONGEST_FIRST = (
    "tests/orchestration/test_materialize.py",
    "tests/zeus/test_groups_differential.py",
    "tests/scaleout/test_distributed.py",
    "tests/home/test_wheel.py",
    "tests/scaleout/test_jobqueue.py",
    "tests/figures/test_figures.py",
    "tests/defs/test_own_clusters.py",
    "tests/cli/test_readme_commands.py",
    "tests/ingest/test_slurm.py",
    "tests/measure/test_harness.py",
    "tests/ingest/test_own_trace_properties.py",
    "tests/clusters/test_whatif_trust.py",
    "tests/zeus/test_single.py",
    "tests/defs/test_automation.py",
    "tests/zeus/test_fast.py",
    "tests/zeus/test_cli.py",
    "tests/ingest/test_own_trace_hardening.py",
    "tests/defs/test_definitions.py",
    "tests/clusters/test_own_cluster_report_asset.py",
    "tests/clusters/test_whatif.py",
    "tests/clusters/test_own_trace_files.py",
    "tests/cli/test_whatif_html_browser.py",
    "tests/clusters/test_own_cluster_summary_asset.py",
    "tests/sql/test_sql_read_only.py",
    "tests/sql/test_sql.py",
    "tests/clusters/test_layer.py",
    "tests/zeus/test_groups.py",
    "tests/clusters/test_cluster_gpus_options.py",
    "tests/clusters/test_sweep.py",
    "tests/defs/test_knob_grid_asset.py",
    "tests/clusters/test_power.py",
)


def pytest_configure(config: pytest.Config) -> None:
    # xdist hands out files by their number of tests, most first; the order of LONGEST_FIRST is better.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {config.rootpath / path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path, len(rank)))  # a stable sort: the rest keep their order


@pytest.fixture(autouse=True)
def kept_data(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """whatif keeps its parse (``pipelines.home.cache``) in a folder of each test's own, never in the clone's ``cache/``
    nor shared between tests."""
    monkeypatch.setenv("GPU_ENERGY_CACHE", str(tmp_path_factory.mktemp("cache")))
