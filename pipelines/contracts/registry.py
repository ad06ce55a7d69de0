"""Which contract each stored table follows.

``TABLES`` maps an asset key (``zeus_train_runs``) to its contract; every table's quarantine,
``quarantine/<table>_bad_rows`` (``quarantine_key``), follows ``Quarantine``. A figure's data file follows the
contract its ``FigureAsset`` declares (``pipelines.figures.catalog.FIGURE_DATA``).
"""

from __future__ import annotations

from pipelines.contracts import clusters, fleet, grid, hetero, measure, owncluster, power, sources, sweep
from pipelines.contracts.base import Contract

TABLES: dict[str, Contract] = {
    "zeus_train_runs": sources.ZeusTrainRuns,
    "zeus_power_profiles": sources.ZeusPowerProfiles,
    "power_limit_profiles": measure.PowerLimitProfiles,
    "alibaba_groups": sources.AlibabaGroups,
    "itp_jobs": sources.ItpJobs,
    "elasticflow_jobs": sources.ElasticflowJobs,
    "acme_jobs": sources.AcmeJobs,
    "acme_cluster_summary": sources.AcmeClusterSummary,
    "hetero_gpu_profiles": sources.HeteroGpuProfiles,
    "cluster_workload_jobs": clusters.ClusterWorkloadJobs,
    "zeus_cluster_history": clusters.ZeusClusterHistory,
    "zeus_cluster_summary": clusters.ZeusClusterSummary,
    "grid_intensity": grid.GridIntensity,
    "zeus_cluster_co2e": grid.ZeusClusterCo2e,
    "zeus_single_job_sweep": clusters.ZeusSingleJobSweep,
    "hetero_allocations": hetero.HeteroAllocations,
    "cluster_power": power.ClusterPower,
    "cluster_power_summary": power.ClusterPowerSummary,
    "cluster_capacity": power.ClusterCapacity,
    "fleet_power_cdf": fleet.FleetPowerCdf,
    "power_model_vs_measured": fleet.PowerModelVsMeasured,
    "zeus_knob_grid": sweep.ZeusKnobGrid,
    "own_cluster_jobs": owncluster.OwnClusterJobs,
    "own_cluster_traces": owncluster.OwnClusterTraces,
    "own_cluster_summary": owncluster.OwnClusterSummary,
}
QUARANTINE_PREFIX = "quarantine/"
#: A quarantine's leaf is its table's name and this: unique beside the table, and kept when the UI cuts a label short
#: (it keeps the end from an underscore on: ``zeus_tra…_bad_rows``).
QUARANTINE_SUFFIX = "_bad_rows"


def quarantine_key(table: str) -> str:
    """The asset key (``a/b`` form) of the rows ``table``'s ingest rejected: ``quarantine/<table>_bad_rows``."""
    return f"{QUARANTINE_PREFIX}{table}{QUARANTINE_SUFFIX}"


def table_contract(key: str) -> Contract | None:
    """The contract of the table stored under asset key ``key`` (``a/b`` for a multi-part key); None if it has none."""
    if key.startswith(QUARANTINE_PREFIX):
        return sources.Quarantine
    return TABLES.get(key)
