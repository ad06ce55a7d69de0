"""Which contract each stored table and each figure's data follows.

``TABLES`` maps an asset key (``zeus_train_runs``) to its contract; every table's quarantine,
``quarantine/<table>_bad_rows`` (``quarantine_key``), follows ``Quarantine``. ``FIGURE_DATA`` maps a figure's file stem, or its prefix for figures
drawn once per GPU or workload (``energy_eta_vs_tta_``), to the contract of its
``figures/<name>.parquet``.
"""

from __future__ import annotations

from pipelines.contracts import clusters, figures, fleet, grid, hetero, measure, owncluster, power, sources, sweep
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

#: Figure name (or prefix ending in ``_``) -> contract of its data file.
FIGURE_DATA: dict[str, Contract] = {
    "energy_eta_vs_tta_": figures.EtaVsTta,
    "energy_savings_vs_default": figures.SavingsVsDefault,
    "energy_eta_sensitivity": figures.EtaSweep,
    "energy_power_limit_response_": figures.PowerLimitResponse,
    "energy_convergence_": figures.ConvergenceRecurrences,
    "measured_profiles": sources.ZeusPowerProfiles,
    "power_limit_choice": measure.PowerLimitChoices,
    "clusters_savings_by_trace": figures.SavingsByTrace,
    "clusters_co2e_by_region": grid.ZeusClusterCo2e,
    "clusters_timeline_energy": figures.EnergyTimeline,
    "clusters_timeline_power": power.PowerTimeline,
    "clusters_power_load_duration": power.LoadDuration,
    "clusters_fleet_power_cdf": fleet.FleetPowerCdfFigure,
    "knob_grid_savings": sweep.KnobSavings,
    "traces_job_duration_cdf": figures.DurationCdf,
    "traces_gpu_count_cdf": figures.GpuCountCdf,
    "traces_submissions": figures.Submissions,
    "acme_final_states": figures.StateShares,
    "acme_queueing_delay_cdf": figures.QueueingDelayCdf,
    "acme_cluster_stats": figures.SummaryStatistics,
    "hetero_cost_split": figures.SplitCurves,
    "hetero_methods": figures.MethodBars,
}


def table_contract(key: str) -> Contract | None:
    """The contract of the table stored under asset key ``key`` (``a/b`` for a multi-part key); None if it has none."""
    if key.startswith(QUARANTINE_PREFIX):
        return sources.Quarantine
    return TABLES.get(key)


def figure_contract(name: str) -> Contract:
    """The contract of ``figures/<name>.parquet``; ``KeyError`` for a figure with none (declare it in ``FIGURE_DATA``)."""
    if name in FIGURE_DATA:
        return FIGURE_DATA[name]
    for prefix, contract in FIGURE_DATA.items():
        if prefix.endswith("_") and name.startswith(prefix):
            return contract
    raise KeyError(f"figure {name!r} has no data contract: add it to pipelines.contracts.registry.FIGURE_DATA")
