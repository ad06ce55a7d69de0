"""Data homes materialized in-process, each built once per test session: the ``materialized`` fixture of tests/conftest.py.

A home is a temp folder laid out as the command line lays out a data home (``raw/``, ``assets/``,
``figures/``). Its assets are materialized in this process by Dagster, over the code location's
assets and checks, with the Parquet IO manager and the paths resource pointed at the home::

    materialized(INGEST)                                       # raw + ingest from the mirror
    materialized(Step(["hetero_allocations"]), base=materialized(INGEST))   # on a copy of that home
    materialized(*[Step(["cluster_workload_jobs"], t) for t in traces], prepare=write_inputs, traces=traces)

``base`` copies another home first (the copy is the new home's: the base is never written);
``prepare(paths)`` writes files before the first step (raw/measured profiles, hand-made input
tables); ``traces`` are registered as ``trace`` partitions on the instance of the build (an
ephemeral one, in memory, shared by its steps). A home is cached by what built it (its steps, base,
``prepare`` and traces), so asking again, from any test module of the session, returns the same
home without running anything. Tests must not write into a shared home; one that needs to
builds its own (another ``prepare``, or a ``base``).

A caller that passes its own ``instance`` (to evaluate automation conditions on the
materializations afterwards) gets a home of its own, never cached.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from pipelines.home.paths import ProjectPaths


@dataclass(frozen=True, init=False)
class Step:
    """One in-process materialization: the selected assets and the partition it runs for.

    ``select`` holds asset keys as Dagster prints them (``quarantine/itp_jobs_bad_rows``) and groups as
    ``group:<name>``; the checks on the selected assets run with them.
    """

    select: tuple[str, ...]
    partition: str | None

    def __init__(self, select: Iterable[str], partition: str | None = None) -> None:
        if isinstance(select, str):
            raise TypeError("Step(select): a sequence of asset keys or group:<name>, not one string")
        object.__setattr__(self, "select", tuple(select))
        object.__setattr__(self, "partition", partition)

    def selection(self) -> dg.AssetSelection:
        groups = [s.removeprefix("group:") for s in self.select if s.startswith("group:")]
        keys = [dg.AssetKey.from_user_string(s) for s in self.select if not s.startswith("group:")]
        return dg.AssetSelection.groups(*groups) | dg.AssetSelection.assets(*keys)


#: The raw and ingest layers with their quarantine tables, fetched from the mirror and ingested.
INGEST = Step(["group:raw", "group:ingest", "group:quarantine"])


def resources(root: Path) -> dict[str, Any]:
    """The resources of a run writing into the home at ``root``."""
    from pipelines.defs.shared.io_manager import ParquetIOManager, PathsResource

    return {"io_manager": ParquetIOManager(root=str(root)), "paths": PathsResource(root=str(root))}


@dataclass(frozen=True)
class Home:
    """A materialized data home and the result of each of its steps, in order."""

    paths: ProjectPaths
    results: tuple[dg.ExecuteInProcessResult, ...]

    @property
    def root(self) -> Path:
        return self.paths.root

    @property
    def result(self) -> dg.ExecuteInProcessResult:
        """The result of the home's only step."""
        (result,) = self.results
        return result

    def resources(self) -> dict[str, Any]:
        return resources(self.root)


class Homes:
    """``materialized(*steps, base=, prepare=, traces=, instance=, name=)``: see the module's docstring."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._tmp = tmp_path_factory
        self._built: dict[Hashable, Home] = {}
        self._definitions: dg.Definitions | None = None

    def definitions(self) -> dg.Definitions:
        """The code location (``pipelines.definitions.defs()``), loaded once."""
        if self._definitions is None:
            from pipelines.definitions import defs

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._definitions = defs()
        return self._definitions

    def __call__(
        self,
        *steps: Step,
        base: Home | None = None,
        prepare: Callable[[ProjectPaths], object] | None = None,
        traces: Sequence[str] = (),
        instance: dg.DagsterInstance | None = None,
        name: str = "home",
    ) -> Home:
        if not steps:
            raise TypeError("materialized(): no step")
        key = (steps, None if base is None else base.root, prepare, tuple(traces))
        if instance is None and key in self._built:
            return self._built[key]
        root = self._tmp.mktemp(name)
        if base is not None:
            shutil.copytree(base.root, root, symlinks=True, dirs_exist_ok=True)
        paths = ProjectPaths(root)
        if prepare is not None:
            prepare(paths)
        definitions = self.definitions()
        everything = [*(definitions.assets or []), *(definitions.asset_checks or [])]
        # In memory, as dg.materialize's own default: a test instance (SQLite files) costs seconds to create and to log to.
        run_instance = dg.DagsterInstance.ephemeral() if instance is None else instance
        if traces:
            from pipelines.defs.clusters.partitions import TRACE_DIMENSION

            run_instance.add_dynamic_partitions(TRACE_DIMENSION, list(traces))
        results = []
        graph = definitions.resolve_asset_graph()
        for step in steps:
            selection = step.selection()
            if step.partition is None:  # a group's partitioned assets (own_cluster_jobs in group:ingest) need a partition: left out
                selection = dg.AssetSelection.assets(*(k for k in selection.resolve(graph) if graph.get(k).partitions_def is None))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results.append(dg.materialize(everything, selection=selection, partition_key=step.partition,
                                              instance=run_instance, resources=resources(root), raise_on_error=True))
        home = Home(paths, tuple(results))
        if instance is None:
            self._built[key] = home
        return home
