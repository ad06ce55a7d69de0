"""Every figure of the package: which tables it reads, which files it writes, how it is rendered.

Plain Python (no Dagster): ``pipelines/defs/figures/assets.py`` turns each ``FigureFamily`` into one
Dagster step (a multi-asset, one asset key per ``FigureAsset``), and tests call ``render`` directly.
A ``FigureAsset`` may write several figures (e.g. one per GPU); each is ``<name>.png/.pdf/.parquet``.

Figure modules (matplotlib, seaborn) are imported inside the render functions, so that loading
the Dagster code location stays fast.

To add a figure: write ``fn(frames) -> (Figure, data)`` in a module of this package, add a ``FigureAsset`` whose
``inputs`` are the asset keys of its tables to a family below (or a new family), and it is
materialized by ``make figures``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipelines.contracts import figures as figure_data
from pipelines.contracts import fleet, grid, measure, power, sources, sweep
from pipelines.contracts.base import Contract, validate
from pipelines.figures.errors import NoData
from pipelines.vocabulary import DEFAULT_BETA, DEFAULT_ETA

if TYPE_CHECKING:  # matplotlib loads only when a figure is drawn
    from matplotlib.figure import Figure

#: A figure to draw: its file stem, and a thunk returning (matplotlib Figure, data plotted).
Render = tuple[str, Callable[[], "tuple[Figure, pl.DataFrame]"]]
Frames = Mapping[str, pl.DataFrame]
#: eta values of the sensitivity sweep: 0 to 1 in steps of 0.01.
SWEEP_ETAS: tuple[float, ...] = tuple(i / 100 for i in range(101))


@dataclass(frozen=True)
class Plan:
    """What a ``FigureAsset`` draws from its frames, and notes on what it had to leave out."""

    renders: list[Render]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FigureAsset:
    """One asset of figures: ``key`` (its Dagster asset key below ``figures/``, and the file stem of what it draws),
    ``inputs`` (the asset keys of the tables it reads), ``plan`` (what it draws), ``data`` (the contract of every
    ``figures/<name>.parquet`` it writes) and ``panels`` (one figure per GPU or workload, named ``<key>_<panel>``;
    else the one figure ``<key>``)."""

    key: str
    description: str
    inputs: tuple[str, ...]
    plan: Callable[[Frames], Plan]
    data: Contract
    panels: bool = False


@dataclass(frozen=True)
class FigureFamily:
    """Figures drawn in one process (they share inputs or are cheap).

    ``slow``: drawing takes seconds (many panels or figures): its step starts before the others of its run,
    so that it does not end the run alone.
    """

    name: str
    assets: tuple[FigureAsset, ...]
    slow: bool = False

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(k for a in self.assets for k in a.inputs))


@dataclass
class Report:
    """What ``render`` wrote (name -> file paths and rows) and skipped (name -> reason)."""

    written: dict[str, dict[str, object]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def render(asset: FigureAsset, frames: Frames, folder: Path) -> Report:
    """Draw and save every figure of ``asset`` into ``folder``.

    A figure whose render raises ``NoData`` writes nothing and its files from an earlier run are
    removed, so figures/ never shows a figure of data that is gone. Each figure's data is checked
    against its contract (``FigureAsset.data``) before anything is written.
    """
    from pipelines.figures import style

    plan = asset.plan(frames)
    report = Report(notes=list(plan.notes))
    for name, draw in plan.renders:
        try:
            fig, data = draw()
        except NoData as exc:
            report.skipped[name] = str(exc)
            for suffix in (".png", ".pdf", ".parquet"):
                (folder / f"{name}{suffix}").unlink(missing_ok=True)
            continue
        validate(data, figure_contract(name), name=f"figures/{name}.parquet")
        files = style.save_figure(fig, data, name, folder)
        report.written[name] = {**files.as_dict(), "rows": data.height, "columns": data.columns}
    return report


# ---------------------------------------------------------------------------------------------
# energy: the Zeus traces


def _expectations(frames: Frames) -> pl.DataFrame:
    from pipelines.figures import energy_data

    return energy_data.config_expectations(frames["zeus_train_runs"], frames["zeus_power_profiles"])


def _eta_vs_tta(frames: Frames) -> Plan:
    from pipelines.figures import energy, style

    expectations = _expectations(frames)
    gpus = style.ordered(expectations["gpu"].unique(), style.GPU_ORDER)
    return Plan([(f"energy_eta_vs_tta_{g}", functools.partial(energy.eta_vs_tta, expectations, g)) for g in gpus])


def _savings(frames: Frames) -> Plan:
    from pipelines.figures import energy, energy_data

    savings = energy_data.savings_vs_default(_expectations(frames))
    return Plan([("energy_savings_vs_default", lambda: energy.savings_bars(savings))])


def _eta_sensitivity(frames: Frames) -> Plan:
    from pipelines.figures import energy, energy_data

    sweep = energy_data.eta_sweep(_expectations(frames), SWEEP_ETAS)
    return Plan([("energy_eta_sensitivity", lambda: energy.eta_sensitivity(sweep))])


def _power_limit_response(frames: Frames) -> Plan:
    from pipelines.figures import energy
    from pipelines.vocabulary import WORKLOADS

    power = frames["zeus_power_profiles"]
    return Plan([(f"energy_power_limit_response_{w.dataset}", functools.partial(energy.power_limit_response, power, w.dataset))
                 for w in WORKLOADS])


def _convergence(frames: Frames) -> Plan:
    from pipelines.figures import convergence, style

    sweep = frames["zeus_single_job_sweep"]
    gpus = style.ordered(sweep["gpu"].unique(), style.GPU_ORDER)
    return Plan([(f"energy_convergence_{g}", functools.partial(
        convergence.convergence, sweep, g, CONVERGENCE_ETA, CONVERGENCE_BETA, CONVERGENCE_SEED)) for g in gpus])


#: The artifact's defaults for the single-job runs (run_single.py): one point of zeus_single_job_sweep's grid.
CONVERGENCE_ETA, CONVERGENCE_BETA, CONVERGENCE_SEED = DEFAULT_ETA, DEFAULT_BETA, 1
ZEUS = ("zeus_train_runs", "zeus_power_profiles")
ENERGY = FigureFamily("energy_figures", (
    FigureAsset("energy_eta_vs_tta", "ETA vs TTA of every (batch size, power limit), Pareto front and Default; one figure per GPU.",
                ZEUS, _eta_vs_tta, data=figure_data.EtaVsTta, panels=True),
    FigureAsset("energy_savings_vs_default", "Energy and time saved vs Default by the min-ETA and the min-cost (eta 0.5) configuration.",
                ZEUS, _savings, data=figure_data.SavingsVsDefault),
    FigureAsset("energy_eta_sensitivity", "Energy and time of the least-cost configuration relative to Default as eta goes 0 -> 1.",
                ZEUS, _eta_sensitivity, data=figure_data.EtaSweep),
), slow=True)
def _measured(frames: Frames) -> Plan:
    from pipelines.figures import measured

    return Plan([("measured_profiles", lambda: measured.measured_profiles(frames["zeus_power_profiles"]))])


def _power_limit_choice(frames: Frames) -> Plan:
    from pipelines.figures import power_limit_choice

    return Plan([("power_limit_choice", lambda: power_limit_choice.power_limit_choice(frames["power_limit_profiles"]))])


POWER = FigureFamily("power_profile_figures", (
    FigureAsset("energy_power_limit_response",
                "Time per epoch and average power vs power limit, per batch size; one figure per workload.",
                ("zeus_power_profiles",), _power_limit_response, data=figure_data.PowerLimitResponse, panels=True),
    FigureAsset("measured_profiles",
                "Profiles measured here (raw/measured, `python -m pipelines measure profile`): epoch time and power vs batch size.",
                ("zeus_power_profiles",), _measured, data=sources.ZeusPowerProfiles),
), slow=True)
#: Its own family: the power-limit figures above do not wait for power_limit_profiles, nor this one for zeus_power_profiles.
POWER_LIMIT = FigureFamily("power_limit_figures", (
    FigureAsset("power_limit_choice",
                "Zeus's profiles in raw/measured (ZeusMonitor logs, profile JSON): energy and time per power limit, and the limit "
                "each GlobalPowerLimitOptimizer selector chooses.",
                ("power_limit_profiles",), _power_limit_choice, data=measure.PowerLimitChoices),
))
SIMULATION = FigureFamily("simulation_figures", (
    FigureAsset("energy_convergence",
                "Zeus vs Default vs Grid Search over a job's recurrences (zeus_single_job_sweep at eta 0.5, beta 2, seed 1), "
                "vs Oracle; one figure per GPU.",
                ("zeus_single_job_sweep",), _convergence, data=figure_data.ConvergenceRecurrences, panels=True),
), slow=True)


# ---------------------------------------------------------------------------------------------
# clusters: the Zeus replay over every cluster trace (inputs: all partitions of the trace x GPU tables)


def _cluster_savings(frames: Frames) -> Plan:
    from pipelines.figures import clusters

    return Plan([("clusters_savings_by_trace", lambda: clusters.savings_by_trace(frames["zeus_cluster_summary"]))])


def _cluster_co2e(frames: Frames) -> Plan:
    from pipelines.figures import clusters

    return Plan([("clusters_co2e_by_region", lambda: clusters.co2e_by_region(frames["zeus_cluster_co2e"]))])


def _cluster_timeline(frames: Frames) -> Plan:
    from pipelines.figures import clusters

    return Plan([("clusters_timeline_energy", lambda: clusters.energy_timeline(frames["zeus_cluster_history"]))])


CLUSTERS = FigureFamily("cluster_figures", (
    FigureAsset("clusters_savings_by_trace", "Energy and time Zeus saves vs Default (%), per trace, workload and GPU.",
                ("zeus_cluster_summary",), _cluster_savings, data=figure_data.SavingsByTrace),
    FigureAsset("clusters_co2e_by_region", "CO2e Zeus saves vs Default (kg or t) per region's yearly grid intensity, per public "
                "trace and GPU.", ("zeus_cluster_co2e",), _cluster_co2e, data=grid.ZeusClusterCo2e),
    FigureAsset("clusters_timeline_energy", "Cumulative energy (MWh) over each trace's timeline, Zeus vs Grid Search vs Default, per GPU.",
                ("zeus_cluster_history",), _cluster_timeline, data=figure_data.EnergyTimeline),
))


def _cluster_power_timeline(frames: Frames) -> Plan:
    from pipelines.figures import cluster_power

    return Plan([("clusters_timeline_power", lambda: cluster_power.power_timeline(frames["cluster_power"]))])


def _cluster_power_load_duration(frames: Frames) -> Plan:
    from pipelines.figures import cluster_power

    return Plan([("clusters_power_load_duration", lambda: cluster_power.load_duration_curve(frames["cluster_power"]))])


#: Asset keys equal the figure file names.
CLUSTER_POWER = FigureFamily("cluster_power_figures", (
    FigureAsset("clusters_timeline_power",
                "Cluster power (kW, 5-min bins) over each trace's time on the V100, Default vs Zeus, peaks marked.",
                ("cluster_power",), _cluster_power_timeline, data=power.PowerTimeline),
    FigureAsset("clusters_power_load_duration",
                "Load-duration curve (cluster power sorted descending vs hours at or above it) per trace on the V100, Default vs Zeus.",
                ("cluster_power",), _cluster_power_load_duration, data=power.LoadDuration),
))


def _fleet_power_cdf(frames: Frames) -> Plan:
    from pipelines.figures import fleet_power

    return Plan([("clusters_fleet_power_cdf", lambda: fleet_power.fleet_power_cdfs(
        frames["fleet_power_cdf"], frames["zeus_cluster_history"], frames["cluster_power_summary"]))])


FLEET_POWER = FigureFamily("fleet_power_figures", (
    FigureAsset("clusters_fleet_power_cdf",
                "Per-GPU draw (% TDP) over GPU-time: AcmeTrace's measured Seren and Kalos beside the simulated Default and Zeus "
                "fleets of ITP and ElasticFlow on the V100, idle GPUs included (top row) and busy GPUs only (bottom row).",
                ("fleet_power_cdf", "zeus_cluster_history", "cluster_power_summary"), _fleet_power_cdf, data=fleet.FleetPowerCdfFigure),
))


def _knob_grid(frames: Frames) -> Plan:
    from pipelines.figures import knob_grid

    return Plan([("knob_grid_savings", lambda: knob_grid.savings_vs_knobs(frames["zeus_knob_grid"]))])


KNOB_GRID = FigureFamily("knob_grid_figures", (
    FigureAsset("knob_grid_savings",
                "Energy and time Zeus saves vs Default over each whole trace as eta (and beta) vary, per GPU; spread over seeds.",
                ("zeus_knob_grid",), _knob_grid, data=sweep.KnobSavings),
))


# ---------------------------------------------------------------------------------------------
# traces: ITP, ElasticFlow, AcmeTrace, Alibaba, and your own (raw/clusters/)

JOB_TABLES = ("itp_jobs", "elasticflow_jobs", "acme_jobs", "alibaba_groups", "own_cluster_jobs")


def _trace_plan(name: str, figure: str) -> Callable[[Frames], Plan]:
    def plan(frames: Frames) -> Plan:
        from pipelines.figures import trace_data, traces

        jobs, notes = trace_data.cluster_jobs(frames["itp_jobs"], frames["elasticflow_jobs"], frames["acme_jobs"], frames["alibaba_groups"],
                                              frames.get("own_cluster_jobs"))
        if figure == "gpu_count_cdf":
            notes.append("Alibaba groups carry no GPU count: never drawn here")
        return Plan([(name, lambda: getattr(traces, figure)(jobs))], notes)

    return plan


def _acme_computed(frames: Frames) -> tuple[pl.DataFrame, str | None]:
    from pipelines.figures import trace_data

    computed = trace_data.acme_summary_from_jobs(frames["acme_jobs"])
    note = None if computed.height else f"our ingest: acme_jobs is empty here (needs {trace_data.ACME_FILES})"
    return computed, note


def _acme_final_states(frames: Frames) -> Plan:
    from pipelines.figures import trace_data, traces

    computed, note = _acme_computed(frames)
    shares = trace_data.state_shares(frames["acme_cluster_summary"], computed)
    return Plan([("acme_final_states", lambda: traces.acme_final_states(shares, note))], [note] if note else [])


def _acme_summary(frames: Frames) -> Plan:
    from pipelines.figures import trace_data, traces

    computed, note = _acme_computed(frames)
    stats = trace_data.summary_statistics(frames["acme_cluster_summary"], computed)
    return Plan([("acme_cluster_stats", lambda: traces.acme_cluster_stats(stats, note))], [note] if note else [])


def _acme_queueing(frames: Frames) -> Plan:
    from pipelines.figures import trace_data, traces

    jobs = trace_data.acme_gpu_jobs(frames["acme_jobs"])
    return Plan([("acme_queueing_delay_cdf", lambda: traces.acme_queueing_delay_cdf(jobs))])


TRACES = FigureFamily("trace_figures", (
    FigureAsset("traces_job_duration_cdf", "Job-duration CDF (log s) per trace, and per ITP cluster.",
                JOB_TABLES, _trace_plan("traces_job_duration_cdf", "job_duration_cdf"), data=figure_data.DurationCdf),
    FigureAsset("traces_gpu_count_cdf", "GPUs-per-job CDF by job count and by GPU time, per trace.",
                JOB_TABLES, _trace_plan("traces_gpu_count_cdf", "gpu_count_cdf"), data=figure_data.GpuCountCdf),
    FigureAsset("traces_submissions", "Jobs submitted per day (per hour for short traces), per trace and cluster.",
                JOB_TABLES, _trace_plan("traces_submissions", "submissions_heatmap"), data=figure_data.Submissions),
    FigureAsset("acme_final_states", "AcmeTrace final-state shares by GPU-job count and GPU time: published and from our ingest.",
                ("acme_jobs", "acme_cluster_summary"), _acme_final_states, data=figure_data.StateShares),
    FigureAsset("acme_queueing_delay_cdf", "AcmeTrace queueing-delay CDF of GPU jobs per cluster (needs the job CSVs).",
                ("acme_jobs",), _acme_queueing, data=figure_data.QueueingDelayCdf),
    FigureAsset("acme_cluster_stats", "AcmeTrace's published cluster_summary beside the same statistics computed from acme_jobs.",
                ("acme_jobs", "acme_cluster_summary"), _acme_summary, data=figure_data.SummaryStatistics),
), slow=True)



# ---------------------------------------------------------------------------------------------
# hetero: Zeus² allocations on A10 + T4


def _hetero_cost_split(frames: Frames) -> Plan:
    from pipelines.figures import hetero
    from pipelines.hetero.curves import allocation_curves

    allocations = frames["hetero_allocations"]
    curves = allocation_curves(frames["hetero_gpu_profiles"], allocations)
    return Plan([("hetero_cost_split", lambda: hetero.cost_split(curves, allocations))])


def _hetero_methods(frames: Frames) -> Plan:
    from pipelines.figures import hetero

    return Plan([("hetero_methods", lambda: hetero.methods(frames["hetero_allocations"]))])


HETERO = FigureFamily("hetero_figures", (
    FigureAsset("hetero_cost_split",
                "Zeus² cost over the batch split for every pair of power limits, each method's optimum marked, per workload and cost model.",
                ("hetero_gpu_profiles", "hetero_allocations"), _hetero_cost_split, data=figure_data.SplitCurves),
    FigureAsset("hetero_methods", "Zeus² methods (baseline, heuristic, brute force, synchronous optimum) compared under both cost models.",
                ("hetero_allocations",), _hetero_methods, data=figure_data.MethodBars),
))

#: Every family, each one Dagster step.
FAMILIES: tuple[FigureFamily, ...] = (ENERGY, POWER, POWER_LIMIT, SIMULATION, CLUSTERS, CLUSTER_POWER, FLEET_POWER, KNOB_GRID, TRACES, HETERO)
#: Figure name (or the prefix ``<key>_`` of an asset drawn once per GPU or workload) -> the contract of its data file,
#: read from the assets above.
FIGURE_DATA: dict[str, Contract] = {f"{a.key}_" if a.panels else a.key: a.data for family in FAMILIES for a in family.assets}


def figure_contract(name: str) -> Contract:
    """The contract of ``figures/<name>.parquet``; ``KeyError`` for a figure of no asset (declare it in a ``FigureAsset``)."""
    if name in FIGURE_DATA:
        return FIGURE_DATA[name]
    for prefix, contract in FIGURE_DATA.items():
        if prefix.endswith("_") and name.startswith(prefix):
            return contract
    raise KeyError(f"figure {name!r} has no data contract: no FigureAsset of pipelines.figures.catalog draws it")
