"""The asset graph against its committed snapshot (``asset_graph.json`` beside this file), as dagster-open-platform keeps one:
a change to a key, group, dependency, partitions definition, check or automation condition shows in review as a diff of
that file.

After a change made on purpose, refresh the snapshot and commit it with the change::

    GPU_ENERGY_UPDATE_SNAPSHOT=1 .venv/bin/python -m pytest -q tests/defs/test_asset_graph_snapshot.py
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import dagster as dg

SNAPSHOT = Path(__file__).with_name("asset_graph.json")
UPDATE_ENV = "GPU_ENERGY_UPDATE_SNAPSHOT"


def condition_text(condition: dg.AutomationCondition) -> str:
    """The whole tree of ``condition``, one node a call (``AND(OR(NEWLY_TRUE(missing), ...), ...)``): its label alone would hide
    a replaced or ignoring operand (an eager condition that ignores some dependencies is still labelled ``eager``)."""
    name = condition.name
    for attribute in ("allow_selection", "ignore_selection"):
        selection = getattr(condition, attribute, None)
        if selection is not None and attribute not in name:
            name += f"[{attribute}={selection}]"
    children = [condition_text(child) for child in condition.children]
    return f"{name}({', '.join(children)})" if children else name


def partitions_text(partitions_def: dg.PartitionsDefinition | None) -> str | None:
    """A partitions definition as a reader names it: ``dynamic:trace``, ``static:a100,v100``, ``multi(gpu=..., trace=...)``."""
    if partitions_def is None:
        return None
    if isinstance(partitions_def, dg.DynamicPartitionsDefinition):
        return f"dynamic:{partitions_def.name}"
    if isinstance(partitions_def, dg.StaticPartitionsDefinition):
        return "static:" + ",".join(partitions_def.get_partition_keys())
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        return "multi(" + ", ".join(f"{d.name}={partitions_text(d.partitions_def)}" for d in partitions_def.partitions_defs) + ")"
    return type(partitions_def).__name__


def mapping_text(graph: dg.AssetGraph, key: dg.AssetKey, parent: dg.AssetKey) -> str | None:
    """How the partitions of ``key`` map to those of ``parent`` (its partition mapping's class), where either is partitioned."""
    if graph.get(key).partitions_def is None and graph.get(parent).partitions_def is None:
        return None
    return type(graph.get_partition_mapping(key, parent)).__name__


def graph_snapshot(definitions: dg.Definitions) -> dict[str, Any]:
    """Every materializable asset (key, group, kinds, deps with their partition mappings, partitions, backfill policy, checks,
    automation condition) and
    every automation condition in full, each once, under the name the assets refer to it by (its label, numbered when two
    differ)."""
    graph = definitions.resolve_asset_graph()
    conditions: dict[str, str] = {}
    assets: dict[str, Any] = {}
    for key in sorted(graph.materializable_asset_keys, key=lambda k: k.to_user_string()):
        node = graph.get(key)
        condition = None
        if node.automation_condition is not None:
            text = condition_text(node.automation_condition)
            label = node.automation_condition.get_label() or node.automation_condition.name
            condition = next((n for n, t in conditions.items() if t == text), None)
            if condition is None:
                same = [n for n in conditions if n == label or n.startswith(f"{label} (")]
                condition = f"{label} ({len(same) + 1})" if same else label
                conditions[condition] = text
        assets[key.to_user_string()] = {
            "group": node.group_name,
            "kinds": sorted(node.kinds),
            "deps": {parent.to_user_string(): mapping_text(graph, key, parent) for parent in sorted(node.parent_keys)},
            "partitions": partitions_text(node.partitions_def),
            "backfill_policy": str(node.backfill_policy.policy_type.value) if node.backfill_policy else None,
            "checks": {c.name: {"blocking": graph.get_check_spec(c).blocking} for c in sorted(node.check_keys, key=lambda c: c.name)},
            "automation_condition": condition,
        }
    return {"assets": assets, "automation_conditions": dict(sorted(conditions.items()))}


def test_the_asset_graph_matches_its_snapshot() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pipelines.definitions import defs

        snapshot = graph_snapshot(defs())
    text = json.dumps(snapshot, indent=1) + "\n"
    if os.environ.get(UPDATE_ENV):
        SNAPSHOT.write_text(text)
    assert json.loads(SNAPSHOT.read_text()) == snapshot, f"the asset graph changed: if on purpose, refresh {SNAPSHOT.name} ({UPDATE_ENV}=1)"
