"""The partitions of the cluster layer: GPUs (static) and traces (dynamic: a trace is a partition once its files are present).

No asset here, so a command (``python -m pipelines materialize``) can register the traces without
loading the asset definitions.
"""

from pathlib import Path

import dagster as dg

from pipelines.clusters import tracefiles
from pipelines.ingest.zeus import PUBLISHED_GPUS
from pipelines.paths import default_mirror, default_paths

gpu_partitions = dg.StaticPartitionsDefinition(list(PUBLISHED_GPUS))
#: One partition per trace present (public or a user's own); see ``register_trace_partitions``.
TRACE_DIMENSION = "trace"
trace_partitions = dg.DynamicPartitionsDefinition(name=TRACE_DIMENSION)
trace_gpu_partitions = dg.MultiPartitionsDefinition({TRACE_DIMENSION: trace_partitions, "gpu": gpu_partitions})


def register_trace_partitions(instance: dg.DagsterInstance, root: Path | None = None) -> list[str]:
    """Add a ``trace`` partition for every trace present in the data home (``root``); return every registered trace.

    What ``python -m pipelines materialize`` calls before planning (the sensor does the same on
    each tick). Partitions are never removed here.
    """
    raw = (default_paths().root if root is None else root) / "raw"
    present = tracefiles.present_traces(raw, default_mirror(raw.parent))
    missing = [t for t in present if not instance.has_dynamic_partition(TRACE_DIMENSION, t)]
    if missing:
        instance.add_dynamic_partitions(TRACE_DIMENSION, missing)
    return list(instance.get_dynamic_partitions(TRACE_DIMENSION))
