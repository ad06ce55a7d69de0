"""The asset jobs: one per partitions definition, since a Dagster run materializes one partitions definition.

``python -m pipelines materialize`` runs these (``pipelines.orchestration.runs``), so every run it
makes is named after its job.
"""

from collections.abc import Iterable
from typing import Any

import dagster as dg

from pipelines.defs.clusters.partitions import gpu_partitions, own_trace_partitions, trace_gpu_partitions, trace_partitions
from pipelines.defs.shared.run_tags import launched_by

JOBS: dict[str, dg.PartitionsDefinition | None] = {
    "unpartitioned_assets": None,
    "trace_assets": trace_partitions,
    "own_trace_assets": own_trace_partitions,
    "trace_gpu_assets": trace_gpu_partitions,
    "gpu_assets": gpu_partitions,
}


def job_name(partitions_def: dg.PartitionsDefinition | None) -> str:
    """The job that materializes assets partitioned by ``partitions_def``."""
    return next(name for name, known in JOBS.items() if known == partitions_def)


def asset_jobs(assets: Iterable[tuple[dg.AssetKey, dg.PartitionsDefinition | None]]) -> list[Any]:  # Dagster does not export the type define_asset_job returns
    """One job per partitions definition over the (asset key, partitions definition) pairs given."""
    keys: dict[str, list[dg.AssetKey]] = {}
    for key, partitions_def in assets:
        keys.setdefault(job_name(partitions_def), []).append(key)
    # Tagged as the UI launches them: a launcher of its own (materialize, a sensor) replaces the tag with its own.
    return [dg.define_asset_job(name, selection=members, run_tags=launched_by("ui")) for name, members in keys.items()]  # partitioned as its assets are
