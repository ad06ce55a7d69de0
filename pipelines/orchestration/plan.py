"""Which Dagster runs materialize an asset selection, and in what order (what an asset backfill would launch).

A run materializes unpartitioned assets, or one partition of assets sharing a partitions
definition. For a selection this gives, in launch order:

* ``upstream``: the unpartitioned assets that partitioned ones depend on;
* ``independent``: the other unpartitioned assets with no partitioned ancestor (they can run
  beside the partitions);
* for each partitions definition, one run over all its partitions when its assets say so
  (``BackfillPolicy.single_run()``, as the cluster layer does), else one run per partition key;
* ``downstream``: the unpartitioned assets downstream of partitioned ones.

A run waits for every run holding an ancestor of one of its assets. The selection uses Dagster's
selection syntax (``group:ingest``, ``itp_jobs``, ``+zeus_cluster_summary``, ``*``) and is widened
to the required multi-asset neighbours (an ingest table is written together with its quarantine
table), so any asset can be named alone; every check of a selected asset runs with it.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import dagster as dg

if TYPE_CHECKING:  # Dagster does not export the asset graph's type
    from dagster._core.definitions.assets.graph.asset_graph import AssetGraph

#: Groups whose steps are light (fetch a file, read and validate a table): never worth a process of their own.
LIGHT_GROUPS = frozenset({"raw", "ingest", "quarantine"})
#: The tags of a run over a range of partitions (what a single-run backfill launches).
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


class SelectionError(ValueError):
    """A selection that names nothing, or does not parse."""


@dataclass(frozen=True)
class RunSpec:
    """One run: its assets, its partition (None: unpartitioned) and the runs it waits for."""

    label: str
    assets: tuple[str, ...]
    partition: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    after: tuple[int, ...] = ()
    #: More than one of its steps may run at once (worth the multiprocess executor).
    parallel: bool = False


def resolve_selection(graph: AssetGraph, select: str) -> tuple[set[dg.AssetKey], set[dg.AssetKey]]:
    """(asset keys selected, keys added to complete a multi-asset); ``SelectionError`` if nothing matches."""
    text = select.strip()
    try:
        with warnings.catch_warnings():  # the selection parser's own use of beta parameters
            warnings.simplefilter("ignore", dg.BetaWarning)
            base = dg.AssetSelection.all() if text in ("", "*") else dg.AssetSelection.from_string(text)
            chosen = base.resolve(graph)
    except Exception as exc:  # the selection parser raises several exception types
        raise SelectionError(f"--select {select!r}: {exc}") from exc
    chosen = {k for k in chosen if k in graph.materializable_asset_keys}
    if not chosen:
        raise SelectionError(f"--select {select!r} matches no asset")
    widened = dg.AssetSelection.assets(*chosen).required_multi_asset_neighbors().resolve(graph)
    return set(widened), set(widened) - chosen


def plan_runs(graph: AssetGraph, keys: set[dg.AssetKey], instance: dg.DagsterInstance | None = None) -> list[RunSpec]:
    """The runs that materialize ``keys`` (see the module docstring), each with the indices of the runs it waits for.

    Assets that execute together (one multi-asset) stay in one run; partition runs of one
    partitions definition do not wait for each other (each reads its own partition upstream).
    ``instance`` holds the dynamic partitions (the traces present); a partitioned asset with no
    partition yet is left out.
    """
    order = [k for k in graph.toposorted_asset_keys if k in keys]
    ancestors = {k: graph.get_ancestor_asset_keys(k) for k in order}
    partitioned = {k for k in order if graph.get(k).partitions_def is not None}
    upstream, independent, downstream = 0, 1, 2
    kind: dict[dg.AssetKey, int] = {}
    for k in order:
        if k in partitioned:
            continue
        if any(k in ancestors[p] for p in partitioned):
            kind[k] = upstream
        elif ancestors[k] & partitioned:
            kind[k] = downstream
        else:
            kind[k] = independent
    for k in list(kind):  # a multi-asset runs where its earliest member must
        together = [m for m in graph.get(k).execution_set_asset_keys if m in kind]
        kind[k] = min(kind[m] for m in together)

    specs: list[RunSpec] = []
    members: list[set[dg.AssetKey]] = []
    families: list[str | None] = []

    def add(assets: list[dg.AssetKey], partition: str | None = None, family: str | None = None,
            tags: dict[str, str] | None = None) -> None:
        names = tuple(a.to_user_string() for a in assets)
        needs = set().union(*(ancestors[a] for a in assets))
        after = tuple(i for i, held in enumerate(members) if held & needs and (family is None or families[i] != family))
        label = _label(names) + (f" [{partition}]" if partition else "")
        specs.append(RunSpec(label, names, partition, tags or {}, after, partition is None and _parallel(graph, assets, ancestors)))
        members.append(set(assets))
        families.append(family)

    for group in (upstream, independent):
        assets = [k for k in order if kind.get(k) == group]
        if assets:
            add(assets)
    by_def: dict[str, list[dg.AssetKey]] = {}
    for k in order:
        if k in partitioned:
            by_def.setdefault(repr(graph.get(k).partitions_def), []).append(k)
    for name, assets in by_def.items():
        partitions_def = graph.get(assets[0]).partitions_def
        assert partitions_def is not None
        partition_keys = partitions_def.get_partition_keys(dynamic_partitions_store=instance)
        if not partition_keys:
            continue
        if all(_single_run(graph.get(a).backfill_policy) for a in assets):  # one run over every partition
            tags = {RANGE_START: partition_keys[0], RANGE_END: partition_keys[-1]}
            add(assets, f"{partition_keys[0]}...{partition_keys[-1]}, {len(partition_keys)} partitions", name, tags)
            continue
        for key in partition_keys:
            add(assets, key, name, _partition_tags(partitions_def, key))
    assets = [k for k in order if kind.get(k) == downstream]
    if assets:
        add(assets)
    return specs


def _parallel(graph: AssetGraph, assets: list[dg.AssetKey], ancestors: Mapping[dg.AssetKey, AbstractSet[dg.AssetKey]]) -> bool:
    """True when two of the run's steps (assets definitions) that are not light do not depend on each other.

    Steps of the ``LIGHT_GROUPS`` take well under a second: a process each would cost more than it saves.
    """
    steps: dict[int, set[dg.AssetKey]] = {}
    for a in assets:
        if graph.get(a).group_name not in LIGHT_GROUPS:
            steps.setdefault(id(graph.get(a).assets_def), set()).add(a)
    groups = list(steps.values())
    for i, first in enumerate(groups):
        for second in groups[i + 1:]:
            linked = any(b in ancestors[a] for a in first for b in second) or any(a in ancestors[b] for a in first for b in second)
            if not linked:
                return True
    return False


def _single_run(policy: dg.BackfillPolicy | None) -> bool:
    return policy is not None and policy.max_partitions_per_run is None


def _label(names: tuple[str, ...]) -> str:
    return ", ".join(names) if len(names) <= 3 else f"{len(names)} assets ({', '.join(names[:2])}, ...)"


def _partition_tags(partitions_def: dg.PartitionsDefinition, key: str) -> dict[str, str]:
    """The tags Dagster puts on a run of one partition (``dagster/partition`` and, for multi-partitions, one per dimension)."""
    tags = {"dagster/partition": key}
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        for dimension, value in partitions_def.get_partition_key_from_str(key).keys_by_dimension.items():
            tags[f"dagster/partition/{dimension}"] = value
    return tags
