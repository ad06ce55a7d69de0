"""Asset keys (docs/architecture.md, "Asset keys"): every leaf unique in the code location, and still unique as the UI cuts it.

The Dagster UI labels a lineage node with the last element of its key only, cut in the middle to
the node's width (``tests.support.ui_labels``): two assets whose leaves, or whose cut leaves, are
equal cannot be told apart there.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections import Counter

import dagster as dg

from pipelines.contracts.registry import QUARANTINE_PREFIX, QUARANTINE_SUFFIX, TABLES, quarantine_key
from pipelines.definitions import defs
from tests.support.ui_labels import ASSET_NODE, LAYOUT, UTIL, installed_ui_source, middle_truncation

#: sha256 of ``export const withMiddleTruncation ... };`` in dagster-webserver 1.13.27's ui-core/src/app/Util.tsx, the
#: function ``middle_truncation`` ports. When it changes, port the new one (read it in the source map) and update this.
PORTED_SHA256 = "eda033655c090438ef5005823b0e54d72cf6f2a7d80494bca45964c1c847e48e"


def _keys() -> list[dg.AssetKey]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sorted(defs().resolve_asset_graph().get_all_asset_keys())


def _label_lengths() -> set[int]:
    """The lengths the installed UI cuts a node's leaf to (read from its TypeScript, not assumed)."""
    source = installed_ui_source()
    constants = {name: int(n) for name, n in re.findall(r"export const (ASSET_\w+_MAX_LENGTH) = (\d+);", source[LAYOUT])}
    used = re.findall(r"withMiddleTruncation\(displayName, \{\s*maxLength: (\w+),?\s*\}\)", source[ASSET_NODE])
    return {constants[n] if n in constants else int(n) for n in used} | {constants["ASSET_LINK_NAME_MAX_LENGTH"]}


def _duplicates(labels: dict[dg.AssetKey, str]) -> dict[str, list[str]]:
    counts = Counter(labels.values())
    return {label: sorted(k.to_user_string() for k, v in labels.items() if v == label) for label, n in counts.items() if n > 1}


def test_port_is_the_installed_ui_function() -> None:
    util = installed_ui_source()[UTIL]
    start = util.index("export const withMiddleTruncation")
    function = util[start : util.index("\n};\n", start) + 3]
    assert hashlib.sha256(function.encode()).hexdigest() == PORTED_SHA256, function
    assert _label_lengths() == {18, 30, 31}  # the zoomed-out global lineage, an asset link, a full node


def test_port_cuts_as_the_ui_does() -> None:
    # What the installed bundle's own (minified) function returns for these, run with node on 2026-11-27; the first
    # two are the labels the issue saw in the global lineage.
    cases = {("clusters_energy_timeline", 18): "clusters…_timeline", ("clusters_power_timeline", 18): "clusters…_timeline",
             ("zeus_train_runs_bad_rows", 18): "zeus_tra…_bad_rows", ("my_great_long_solid_name", 18): "my_gre…_solid_name",
             ("a__b__c__dddddddddddddddddddd", 18): "a__b__c_…ddddddddd", ("abcdefghijklmnopqrstuvwxyz", 18): "abcdefgh…rstuvwxyz",
             ("clusters_power_load_duration", 10): "clusters_…", ("own_cluster_jobs_bad_rows", 31): "own_cluster_jobs_bad_rows"}
    assert {case: middle_truncation(*case) for case in cases} == cases


def test_every_leaf_is_unique() -> None:
    keys = _keys()
    assert _duplicates({k: k.path[-1] for k in keys}) == {}
    assert len(keys) > 50  # the whole code location was read


def test_every_leaf_is_unique_as_the_ui_cuts_it() -> None:
    keys = _keys()
    for length in sorted(_label_lengths()):
        assert _duplicates({k: middle_truncation(k.path[-1], length) for k in keys}) == {}, length


def test_key_path_names_where_the_asset_is_stored() -> None:
    """Tables have no prefix (their SQL view's name), each table's quarantine is ``quarantine/<table>_bad_rows``, figures are
    ``figures/<name>``; no other prefix."""
    keys = [k.to_user_string() for k in _keys()]
    assert {k.split("/")[0] for k in keys if "/" in k} == {"quarantine", "figures"}
    quarantines = [k for k in keys if k.startswith(QUARANTINE_PREFIX)]
    tables = {k.removeprefix(QUARANTINE_PREFIX).removesuffix(QUARANTINE_SUFFIX) for k in quarantines}
    assert len(quarantines) == 11 and tables <= set(keys) and sorted(map(quarantine_key, tables)) == quarantines
    assert {quarantine_key("itp_jobs"), "itp_jobs", "figures/acme_cluster_stats", "acme_cluster_summary"} <= set(keys)
    assert set(TABLES) <= set(keys)
