"""The Dagster code location: every module of ``pipelines/defs`` (assets, checks, resources, sensors), and the asset jobs.

Every asset gets its owners and, where freshness means something, a freshness policy (``pipelines.defs.ownership``).

Loaded by Dagster's defs-folder loader (``ComponentTree``, what ``dg.load_from_defs_folder`` uses),
with the project root given explicitly (this package's folder) instead of found through
pyproject.toml, so the same code location loads from an installed wheel, where there is none.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import dagster as dg

from pipelines import defs as defs_package
from pipelines.defs.jobs import asset_jobs
from pipelines.defs.ownership import with_ownership


@dg.definitions
def defs() -> dg.Definitions:
    tree = dg.ComponentTree.from_module(defs_module=defs_package, project_root=Path(__file__).resolve().parent)
    with warnings.catch_warnings():
        # The loader calls Dagster's own preview module loaders; dg.load_from_defs_folder silences the same warnings.
        # map_asset_specs (Dagster's documented way to set owners and freshness over many assets) is marked preview too.
        warnings.simplefilter("ignore", dg.PreviewWarning)
        built = tree.build_defs()
        # A module that imports another's asset (the raw assets, read by several families) lists the same object twice;
        # once each, so that mapping the specs makes one copy of it, not two with the same key.
        loaded = dg.Definitions(
            assets=list({id(a): a for a in built.assets or []}.values()), asset_checks=built.asset_checks, sensors=built.sensors,
            schedules=built.schedules, jobs=built.jobs, resources=built.resources, executor=built.executor, loggers=built.loggers,
            metadata=built.metadata,
        ).map_asset_specs(func=with_ownership)
    graph = loaded.resolve_asset_graph()
    jobs = asset_jobs((key, graph.get(key).partitions_def) for key in graph.materializable_asset_keys)
    return dg.Definitions.merge(loaded, dg.Definitions(jobs=jobs))


@functools.cache
def loaded() -> dg.Definitions:
    """The code location's definitions, loaded once per process."""
    return defs()


def job(name: str) -> dg.JobDefinition:
    """The asset job ``name``: what a reconstructable run (``pipelines.orchestration.dagster_runs``) loads in each process."""
    return loaded().resolve_job_def(name)
