"""Owners of every asset, and the freshness policies of the assets for which freshness means something.

Applied to the whole code location by ``pipelines.definitions`` (``Definitions.map_asset_specs``).
The public traces are fixed published files: their tables and everything derived from them are as
fresh as they will ever be once materialized. A user's own cluster is not: its export ages as the
cluster runs, so the own-cluster tables (its jobs, its trace accounting and what ``whatif`` reports
on them) carry a ``FreshnessPolicy.time_window``: a warning a week after the last drop-in (``clusters
add`` or a changed file in ``raw/clusters/``), a failure after 30 days.
"""

from datetime import timedelta

import dagster as dg

#: Every asset's owner (Dagster accepts an email address or ``team:<name>``).
OWNERS = ("team:gpu-energy",)
#: The own-cluster assets, whose data ages with the user's cluster.
OWN_CLUSTER = frozenset({"own_cluster_jobs", "own_cluster_traces", "own_cluster_summary"})
OWN_CLUSTER_FRESHNESS = dg.FreshnessPolicy.time_window(fail_window=timedelta(days=30), warn_window=timedelta(days=7))


def with_ownership(spec: dg.AssetSpec) -> dg.AssetSpec:
    """``spec`` with the owners, and the own-cluster freshness policy where it applies."""
    if spec.key.to_user_string() in OWN_CLUSTER:
        return spec.replace_attributes(owners=OWNERS, freshness_policy=OWN_CLUSTER_FRESHNESS)
    return spec.replace_attributes(owners=OWNERS)
