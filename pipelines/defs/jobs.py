"""The asset jobs: one per partitions definition, since a Dagster run materializes one partitions definition.

``python -m pipelines materialize`` runs these (``pipelines.orchestration.dagster_runs``), so every run it
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


#: What each job is for and when it runs (the UI's job page shows it, above the assets it materializes, which are listed there).
DESCRIPTIONS: dict[str, str] = {
    "unpartitioned_assets": "Every asset with no partition: the ingest of the public traces (Zeus, ITP, ElasticFlow, AcmeTrace, "
    "Alibaba, the fleet curves), the simulations and tables that read them whole, and every figure. Runs: first in `make figures` "
    "(`gpu-energy materialize`), and last for the figures that read every trace; from the UI; by the automation sensor when an "
    "input changed.",
    "trace_assets": "A trace's cluster jobs, capacity and knob grid: one partition per trace (each public trace present in raw/ or "
    "the mirror, and each of yours). Runs: in `make figures` after the ingest, all traces in one run; by the automation sensor "
    "after a trace's ingest.",
    "own_trace_assets": "The ingest of your own traces (raw/clusters/): own_cluster_jobs, its quarantine and own_cluster_traces, one "
    "partition per trace of yours. Runs: in `make figures`, a run per trace (one that fails stops no other); the sensor "
    "cluster_traces_sensor runs the same assets as the job own_trace_ingest when a file is added or changes.",
    "trace_gpu_assets": "The replays: the cluster history and summary and the cluster power of each trace on each GPU (a partition "
    "per GPU x trace). Runs: in `make figures` after trace_assets; by the automation sensor after a trace's jobs.",
    "gpu_assets": "The single-job sweep: one partition per GPU of the Zeus traces. Runs: in `make figures`, every GPU in one run; "
    "from the UI.",
}


def asset_jobs(assets: Iterable[tuple[dg.AssetKey, dg.PartitionsDefinition | None]]) -> list[Any]:  # Dagster does not export the type define_asset_job returns
    """One job per partitions definition over the (asset key, partitions definition) pairs given."""
    keys: dict[str, list[dg.AssetKey]] = {}
    for key, partitions_def in assets:
        keys.setdefault(job_name(partitions_def), []).append(key)
    # Tagged as the UI launches them: a launcher of its own (materialize, a sensor) replaces the tag with its own.
    return [dg.define_asset_job(name, selection=members, run_tags=launched_by("ui"), description=DESCRIPTIONS[name])  # partitioned as its assets are
            for name, members in keys.items()]
