"""The partitions of the cluster layer: GPUs (static) and traces (dynamic: a trace is a partition once its files are present),
and your own traces (dynamic: the ingest of ``raw/clusters/``, a partition space of its own).

No asset here, so a command (``python -m pipelines materialize``) can register the traces without
loading the asset definitions.
"""

from collections.abc import Iterable, Sequence
from pathlib import Path

import dagster as dg
import polars as pl

from pipelines.clusters import tracefiles
from pipelines.home.paths import ProjectPaths, default_mirror, default_paths, table_path
from pipelines.vocabulary import PUBLISHED_GPUS

gpu_partitions = dg.StaticPartitionsDefinition(list(PUBLISHED_GPUS))
#: One partition per trace present (public or a user's own); see ``register_trace_partitions``.
TRACE_DIMENSION = "trace"
trace_partitions = dg.DynamicPartitionsDefinition(name=TRACE_DIMENSION)
#: Your own traces only (``raw/clusters/<name>``): the partitions of their ingest (``own_cluster_jobs`` and the tables
#: written with it), so that no public trace is a partition of those tables, missing for ever. ``register_trace_partitions``
#: and the sensor keep it equal to the user traces present; each is also a ``trace`` partition (its replays).
OWN_TRACE_DIMENSION = "own_trace"
own_trace_partitions = dg.DynamicPartitionsDefinition(name=OWN_TRACE_DIMENSION)
#: Keys read ``gpu|trace`` (``v100|itp``): Dagster orders the dimensions by name; the stored files keep that order.
trace_gpu_partitions = dg.MultiPartitionsDefinition({TRACE_DIMENSION: trace_partitions, "gpu": gpu_partitions})


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


def sync_partitions(instance: dg.DagsterInstance, dimension: str, present: Sequence[str]) -> list[str]:
    """Make the partitions of the dynamic ``dimension`` the keys ``present``: those missing added, the others removed (returned)."""
    missing = [t for t in present if not instance.has_dynamic_partition(dimension, t)]
    if missing:
        instance.add_dynamic_partitions(dimension, missing)
    gone = [t for t in instance.get_dynamic_partitions(dimension) if t not in present]
    for trace in gone:
        instance.delete_dynamic_partition(dimension, trace)
    return gone


def register_trace_partitions(instance: dg.DagsterInstance, root: Path | None = None) -> tuple[list[str], list[str]]:
    """Make the ``trace`` partitions the traces present in the data home (``root``), and the ``own_trace`` partitions its
    user traces: (every registered trace, those removed).

    What ``python -m pipelines materialize`` calls before planning (the sensor does the same on
    each tick): a trace present gets a partition, and a partition whose trace's files are gone
    (deleted, or no longer usable: ``tracefiles.user_traces``) is removed.
    """
    raw = (default_paths().root if root is None else root) / "raw"
    sync_partitions(instance, OWN_TRACE_DIMENSION, [t.name for t in tracefiles.user_traces(raw)[0]])
    gone = sync_partitions(instance, TRACE_DIMENSION, tracefiles.present_traces(raw, default_mirror(raw.parent)))
    return list(instance.get_dynamic_partitions(TRACE_DIMENSION)), gone


def trace_partition_keys(partitions_def: dg.PartitionsDefinition | None, trace: str) -> list[str]:
    """The keys of ``partitions_def`` that belong to ``trace``: [trace] for the trace and own-trace dimensions, one per other
    key for a multi-dimensional one that has the trace dimension (``v100|lab``, ...); [] for any other."""
    if partitions_def in (trace_partitions, own_trace_partitions):
        return [trace]
    if not isinstance(partitions_def, dg.MultiPartitionsDefinition) or TRACE_DIMENSION not in partitions_def.partition_dimension_names:
        return []
    keys: list[dict[str, str]] = [{TRACE_DIMENSION: trace}]
    for dimension in partitions_def.partitions_defs:
        if dimension.name != TRACE_DIMENSION:
            keys = [{**k, dimension.name: other} for k in keys for other in dimension.partitions_def.get_partition_keys()]
    return [str(dg.MultiPartitionKey(k)) for k in keys]


def forget_trace(instance: dg.DagsterInstance, assets: Iterable[tuple[dg.AssetKey, dg.PartitionsDefinition | None]],
                 paths: ProjectPaths, trace: str) -> list[Path]:
    """Remove the stored partitions of ``trace`` (every table partitioned by trace or own trace) and its ``trace`` and
    ``own_trace`` partitions; the files removed.

    ``assets``: each materializable asset key with its partitions definition (the code location's).
    """
    removed = []
    for key, partitions_def in assets:
        for partition in trace_partition_keys(partitions_def, trace):
            path = table_path(paths.assets, key.to_user_string(), partition)
            if path.is_file():
                path.unlink()
                removed.append(path)
    for dimension in (TRACE_DIMENSION, OWN_TRACE_DIMENSION):
        if instance.has_dynamic_partition(dimension, trace):
            instance.delete_dynamic_partition(dimension, trace)
    return removed
