"""The partitions of the cluster layer: GPUs (static) and traces (dynamic: a trace is a partition once its files are present).

No asset here, so a command (``python -m pipelines materialize``) can register the traces without
loading the asset definitions.
"""

from pathlib import Path

import dagster as dg
import polars as pl

from pipelines.clusters import tracefiles
from pipelines.home.paths import default_mirror, default_paths
from pipelines.vocabulary import PUBLISHED_GPUS

gpu_partitions = dg.StaticPartitionsDefinition(list(PUBLISHED_GPUS))
#: One partition per trace present (public or a user's own); see ``register_trace_partitions``.
TRACE_DIMENSION = "trace"
trace_partitions = dg.DynamicPartitionsDefinition(name=TRACE_DIMENSION)
#: Keys read ``gpu|trace`` (``v100|itp``): Dagster orders the dimensions by name; the stored files keep that order.
trace_gpu_partitions = dg.MultiPartitionsDefinition({TRACE_DIMENSION: trace_partitions, "gpu": gpu_partitions})
#: Every partitioned asset materializes any set of its partitions in one run (one step, one process: a
#: backfill of all trace x GPU partitions is one run, not one run process each); the step returns
#: {partition key: frame} and the IO manager writes one file per partition.
ONE_RUN = dg.BackfillPolicy.single_run()


def trace_gpu(key: str) -> tuple[str, str]:
    """(trace, gpu) of a trace x GPU partition key."""
    keys = trace_gpu_partitions.get_partition_key_from_str(key).keys_by_dimension
    return keys[TRACE_DIMENSION], keys["gpu"]


def by_partition(frame: pl.DataFrame, keys: list[str]) -> dict[str, pl.DataFrame]:
    """The rows of ``frame`` (trace and gpu columns) of each trace x GPU partition key."""
    out = {}
    for key in keys:
        trace, gpu = trace_gpu(key)
        out[key] = frame.filter((pl.col("trace") == trace) & (pl.col("gpu") == gpu))
    return out


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
