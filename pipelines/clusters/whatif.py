"""What would Zeus save on your cluster: one trace file, read, mapped, replayed and summarized in memory.

The same path as the Dagster asset ``own_cluster_summary``, without Dagster and without writing
anything: the trace is read (``pipelines.ingest.slurm`` / ``joblog``), its COMPLETED GPU jobs are
put in *rows* (``plan``): as exported, one row per exported GPU type replayed on that GPU's
profile where there is one (``pipelines.clusters.profiles``) and on the fallback GPU otherwise,
adding up to one cluster; or, for GPUs given by name, every job on each GPU. Each row is mapped
onto the workloads its profile offers and replayed under Default and Zeus
(``pipelines.clusters.samples``: ``samples`` draws of the workload assignment and the optimizer's
seeds, on the Dask layer when a runner is given), and turned into energy totals and cluster power
(``power.power_bins`` / ``power_summary``, with their defaults). Every figure is the median over
the draws with its 90 % interval. Where the export carries the scheduler's energy accounting, the
jobs it measured are compared with the model (``measured``). The report is a plain dict (what
``--json`` prints); ``pipelines.report.text.render`` writes it for a terminal.

Zeus's power traces come from ``pipelines.ingest.simulator_inputs.resolve_traces`` (the one resolver
every command uses). Energy is anchored to the export's GPU-hours by default, or sized as in the Zeus
artifact (``Options.energy_model``; ``pipelines.clusters.anchoring``). ``Options``, every knob with its
default, unit, range and help, is ``pipelines.clusters.whatif_knobs``'s, imported here for callers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from pipelines.clusters import analogues, anchoring, capacity, coverage, kept, mapping, partition_tasks, standins
from pipelines.clusters.power import POWER_SCHEMA
from pipelines.clusters.profiles import POWER_LIMIT_ONLY, UNTYPED, Profiles
from pipelines.clusters.samples import FLEET, FLEET_TOTALS, INTERVAL_PCT, Plan, Row, spread
from pipelines.clusters.whatif_knobs import AS_EXPORTED, EVERY_GPU, METER_GPU, GpuMode, Options
from pipelines.contracts.base import polars_schema
from pipelines.contracts.owncluster import SUMMARY_FIGURES, OwnClusterSummary
from pipelines.ingest import own_cluster
from pipelines.ingest.common import empty_quarantine
from pipelines.ingest.compressed import uncompressed_name
from pipelines.ingest.grid import Rate
from pipelines.ingest.own_cluster import OwnTraceResult, TraceCounts
from pipelines.scaleout.runners import Runner, SerialRunner
from pipelines.vocabulary import GPU_BY_NAME, ZEUS_DATASETS
from pipelines.vocabulary.units import J_PER_KWH, KWH_PER_MWH, S_PER_DAY, S_PER_H, duration_s
from pipelines.zeus.traces import TraceError

#: A row of fewer replayed jobs than this gets no interval: its few groups cannot vary the workload mapping enough to show
#: what is unknown, and a narrow interval would read as certainty.
MIN_JOBS_FOR_INTERVAL = 30
#: What each of Slurm's energy plugins (AcctGatherEnergyType) measures, for the measured section's caption.
ENERGY_PLUGINS = (
    "What Slurm's meter covers depends on AcctGatherEnergyType: gpu: the GPUs' own counters (the job's GPUs when cgroups "
    "constrain devices, else every GPU of the node), the closest to the model, which counts the job's GPUs only; ipmi, "
    "xcc, pm_counters, ibmaem: the whole node (CPUs, memory, fans, power supplies and every GPU), so measured exceeds "
    "the model; rapl: CPU packages and DRAM only, no GPU at all, not comparable; none: 0 (nothing collected). Only an "
    "exclusive allocation's value is the job's own (sacct(1))."
)


#: A tariff is written out from a day before the first job to this long after the last one ends, or 3 times the longest job
#: if that is longer: Zeus's runs may take longer than the exported jobs did.
TARIFF_MARGIN_S = 7 * S_PER_DAY


def with_tariff(options: Options, keyed: pl.DataFrame) -> Options:
    """``options`` with its OpenEI tariff written out as ``prices`` over the window of ``keyed``'s jobs (``mapping.own_keyed``)."""
    if options.tariff is None:
        return options
    start, end = keyed["start_time_s"].to_numpy(), keyed["end_time_s"].to_numpy()
    if start.size == 0:
        return replace(options, prices=options.tariff.rate(0.0, S_PER_DAY), tariff=None)
    margin = max(TARIFF_MARGIN_S, 3 * float(np.max(end - start)))
    return replace(options, prices=options.tariff.rate(float(np.min(start)) - S_PER_DAY, float(np.max(end)) + margin), tariff=None)


def trace_name_for(path: Path) -> str:
    """A valid trace name from a file name (``My Cluster 2024.sacct`` -> ``my-cluster-2024``)."""
    name = re.sub(r"[^a-z0-9_-]+", "-", uncompressed_name(path).stem.lower()).strip("-_")[:48]
    return name if name and name not in mapping.TRACES else f"own-{name or 'cluster'}"[:48]


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _pct_saved(zeus: float, default: float) -> float | None:
    return _finite(100 * (1 - zeus / default)) if default else None


# ---------------------------------------------------------------------------------------------
# the plan: which jobs replay on which profile


def _gpu_hours(jobs: pl.DataFrame) -> float:
    seconds = duration_s(jobs["end_time"] - jobs["start_time"])
    return float((seconds * jobs["num_gpus"]).sum() or 0.0) / S_PER_H


def gpu_mode(table: pl.DataFrame, options: Options) -> GpuMode:
    """``as-exported`` when asked, or by default when a replay candidate names a GPU type; else ``every-gpu``."""
    if options.gpus == (AS_EXPORTED,):
        return AS_EXPORTED
    if options.gpus:
        return EVERY_GPU
    typed = table.lazy().filter(own_cluster.replayable() & pl.col("gpu_type").is_not_null()).select(pl.len()).collect().item()
    return AS_EXPORTED if typed else EVERY_GPU


#: The ``own_cluster_jobs`` columns the report reads (``for_report`` drops the rest of a read table before the replay).
REPORT_COLUMNS = ("trace", "job_id", "line", "user", "job_name", "slurm_partition", "start_time", "end_time", "state", "num_gpus",
                  "gpu_type", "category", "measured_energy_j", "energy_status", "gpu_util_pct")  # line: a refused job is named by it


def for_report(result: OwnTraceResult) -> OwnTraceResult:
    """``result`` with only the table columns the report reads: the caller drops its own reference to the full table so
    that a multi-GB export's other columns are freed before the replay (issue 25: peak memory)."""
    return replace(result, table=result.table.select(c for c in REPORT_COLUMNS if c in result.table.columns))


def plan(result: OwnTraceResult, profiles: Profiles, options: Options) -> tuple[Plan, list[dict[str, Any]], GpuMode]:
    """(what every draw replays, one record per row: key, GPU, jobs, GPU-hours, own profile or fallback, workloads; the mode).

    Raises ``TraceError`` for a GPU (or fallback) without a profile.
    """
    slim = for_report(result)
    keyed = mapping.own_keyed(slim.table, slim.trace, _KEYED_COLUMNS)
    options = with_tariff(options, keyed)
    return _plan(slim, keyed, profiles, options, gpu_mode(slim.table, options))


def _plan(result: OwnTraceResult, keyed: pl.DataFrame, profiles: Profiles, options: Options,
          mode: GpuMode) -> tuple[Plan, list[dict[str, Any]], GpuMode]:
    """``plan`` of ``result``, whose replay candidates are ``keyed`` (``mapping.own_keyed``) and GPU mode ``mode`` (``gpu_mode``
    of its table): ``result.table`` is not read (``replayable`` frees it before)."""
    known = profiles.names()
    for gpu in (*(options.gpus or ()), options.fallback_gpu):
        if gpu != AS_EXPORTED and gpu not in known:
            raise TraceError(f"unknown GPU {gpu!r}: the profiles are {', '.join(known)} (measure one with `measure profile`, "
                             "then pass it with --profiles or put it in raw/measured/)")
    rows: list[Row] = []
    if mode == AS_EXPORTED:
        typed = keyed.select(*_ROW_COLUMNS, pl.col("gpu_type").fill_null(UNTYPED).alias("_type"))
        counts = typed.group_by("_type").len().sort("len", "_type", descending=[True, False])
        for gpu_type, _ in counts.iter_rows():
            gpu = profiles.for_type(None if gpu_type == UNTYPED else gpu_type) or options.fallback_gpu
            rows.append(Row(gpu_type, gpu, typed.filter(pl.col("_type") == gpu_type).drop("_type"), profiles.workloads.get(gpu, ()),
                            profiles.power_limit.get(gpu)))
        del typed
    else:
        rows = [Row(gpu, gpu, keyed.select(_ROW_COLUMNS), profiles.workloads.get(gpu, ()), profiles.power_limit.get(gpu))
                for gpu in (options.gpus or (options.fallback_gpu,))]
    sizes, idle_w, whole = _sizes(result.trace, rows, keyed, mode, options)  # every allocation holds its GPUs, idle ones too
    records: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        low = row.jobs.filter(_low_util(options))
        busy = row.jobs if low.height == 0 else row.jobs.filter(~_low_util(options))  # no copy where none is idle
        rows[i] = replace(row, jobs=busy)  # the row's other jobs freed before the next row's copy
        own = mode == EVERY_GPU or profiles.for_type(None if row.key == UNTYPED else row.key) is not None
        low_hours = _gpu_hours(low)
        idle = GPU_BY_NAME[row.gpu].idle_w if row.gpu in GPU_BY_NAME else None
        records.append({"key": row.key, "gpu": row.gpu, "own_profile": own, "jobs": busy.height, "gpu_hours": _gpu_hours(busy),
                        "profile_source": profiles.sources[row.gpu], "workloads": list(row.workloads), "low_util_jobs": low.height,
                        "power_limit_only": row.power_limit is not None,
                        "low_util_gpu_hours": low_hours, "low_util_kwh": None if idle is None else idle * low_hours / 1000})
    measured_rows = rows if mode == AS_EXPORTED else rows[:1]  # every GPU: compared with the first GPU's model
    measured = pl.concat([r.jobs.filter(pl.col("measured_energy_j").is_not_null()).select(
        "job_id", pl.lit(r.key).alias("row"), "measured_energy_j") for r in measured_rows]) if measured_rows else pl.DataFrame()
    specs = dict(options.gpu_specs)
    rows = [replace(r, analogues=_analogues(r, profiles, specs) if options.workloads_by == analogues.BY_UTILISATION else None,
                    power_scale=_power_scale(r, rec, mode, options, specs))
            for r, rec in zip(rows, records, strict=True)]
    metered_keys = {r.key for r in measured_rows} if options.meter == METER_GPU else set()
    for rec, row in zip(records, rows, strict=True):
        rec["analogues"] = _analogue_record(row)
        rec["metered"] = _metered_record(row) if row.key in metered_keys else None
        rec["power_scale"] = row.power_scale
    # the draws need only what the mapping and the replay read (smaller on the wire to Dask workers, faster to map)
    slim = tuple(replace(r, jobs=r.jobs.select(_REPLAY_COLUMNS)) for r in rows)
    converged = {r.gpu: {POWER_LIMIT_ONLY: r.power_limit.converged_ratio(options.eta)} if r.power_limit is not None else
                 anchoring.converged_ratios(profiles.traces, r.gpu, r.workloads, options.eta) for r in rows if r.jobs.height}
    grid, prices = options.rates()
    if options.carbon_aware and (grid is None or grid.times_s is None):
        raise ValueError("--carbon-aware takes each job's eta from the grid's intensity when it starts: give --grid-intensity FILE")
    for rate, option in ((grid, "--grid-intensity"), (prices, "--price")):
        if rate is not None and not options.fill:
            _check_covered(rate, option, rows)
    return (Plan(result.trace, slim, mode == AS_EXPORTED, options, measured, sizes, idle_w, whole, converged=converged, grid=grid,
                 prices=prices, partitions=kept.partitions_for(result.counts.allocations)),
            records, mode)


def _analogues(row: Row, profiles: Profiles, specs: dict[str, standins.Spec]) -> analogues.Analogues | None:
    """The utilisation rule of ``row`` (``pipelines.clusters.analogues``): None for a row without a job's utilisation, a
    power-limit-only row, or a GPU whose idle draw and TDP neither ``--gpu-specs`` nor the registry gives."""
    spec = standins.spec_for(row.gpu, specs)
    if row.power_limit is not None or spec is None or row.jobs["gpu_util_pct"].is_null().all():
        return None
    return analogues.for_profile(profiles.traces, row.gpu, row.workloads, spec.idle_w, spec.tdp_w)


def _power_scale(row: Row, rec: dict[str, Any], mode: GpuMode, options: Options,
                 specs: dict[str, standins.Spec]) -> standins.PowerScale | None:
    """With ``--stand-in-power scaled``, a stand-in row's mapping onto its exported GPU's power range (``standins``); None
    for a GPU's own profile, an untyped row, a power-limit-only row, or a GPU of unknown TDP (``rec["unscaled"]`` says so)."""
    if options.stand_in_power != standins.SCALED or mode != AS_EXPORTED or rec["own_profile"] or row.key == UNTYPED \
            or row.power_limit is not None:
        return None
    exported, stand_in = standins.spec_for(row.key, specs), standins.spec_for(row.gpu, specs)
    if exported is None or stand_in is None:
        rec["unscaled"] = True
        return None
    same = (exported.tdp_w, exported.idle_w) == (stand_in.tdp_w, stand_in.idle_w)
    return None if same else standins.PowerScale(stand_in, exported)


def _analogue_record(row: Row) -> dict[str, Any]:
    """How a row's groups get their workload: by utilisation (how many groups) or by runtime, and why not by utilisation."""
    groups = int(row.jobs["group"].n_unique()) if row.jobs.height else 0
    by_util = 0 if row.analogues is None else analogues.group_utilisation(row.jobs).height
    out: dict[str, Any] = {"groups_by_utilisation": by_util, "groups_by_runtime": groups - by_util}
    if row.analogues is not None:
        out["draw_w"] = dict(row.analogues.draw_w)
        out["idle_w"], out["tdp_w"] = row.analogues.idle_w, row.analogues.tdp_w
    elif row.power_limit is None and row.jobs.height and row.jobs["gpu_util_pct"].is_not_null().any():
        out["note"] = f"no idle draw and TDP known for {row.gpu}: its groups' workloads by runtime"
    return out


def _metered_record(row: Row) -> dict[str, Any]:
    """A row's jobs with a meter reading (``--meter gpu``): how many, their GPU-hours and their metered energy (kWh)."""
    metered = row.jobs.filter(pl.col("measured_energy_j").is_not_null())
    return {"jobs": metered.height, "gpu_hours": _gpu_hours(metered),
            "kwh": float(metered["measured_energy_j"].sort().sum()) / J_PER_KWH}


def _meter_split(records: Sequence[dict[str, Any]], gpus: dict[str, Any], total: dict[str, Any] | None) -> dict[str, Any]:
    """``--meter gpu``: the Default energy split into what the meter measured and what the model gives (kWh), with the jobs
    and GPU-hours of each, overall and per row: metered_kwh + modelled_kwh = default_kwh (the whole's, else the metered row's)."""
    by_row: dict[str, Any] = {}
    for rec in records:
        m, g = rec["metered"], gpus[rec["key"]]
        if m is None or g.get("default_kwh") is None:
            continue
        by_row[rec["key"]] = {"metered_jobs": m["jobs"], "metered_gpu_hours": m["gpu_hours"], "metered_kwh": m["kwh"],
                              "modelled_jobs": rec["jobs"] - m["jobs"], "modelled_gpu_hours": rec["gpu_hours"] - m["gpu_hours"],
                              "modelled_kwh": g["default_kwh"] - m["kwh"]}
    whole = total if total is not None else (gpus[next(iter(by_row))] if by_row else None)
    out: dict[str, Any] = {"meter": METER_GPU, "by_row": by_row}
    for what in ("jobs", "gpu_hours"):
        for part in ("metered", "modelled"):
            out[f"{part}_{what}"] = sum(b[f"{part}_{what}"] for b in by_row.values())
    out["metered_kwh"] = sum(b["metered_kwh"] for b in by_row.values())
    out["modelled_kwh"] = None if whole is None or whole.get("default_kwh") is None else whole["default_kwh"] - out["metered_kwh"]
    return out


def _with_meter(ready: Replayable, gpus: dict[str, Any], total: dict[str, Any] | None) -> dict[str, Any]:
    """The report's ``energy_accounting``: the export's, and what ``--meter`` did with it (nothing added without the option)."""
    meter = ready.plan.options.meter
    if meter == METER_GPU:
        return {**ready.energy_accounting, **_meter_split(ready.records, gpus, total)}
    if meter != "none":
        return {**ready.energy_accounting, "meter": meter,
                "meter_note": f"--meter {meter}: the meter holds the whole node (CPUs, memory, fans): compared with the model, not "
                              "used as the jobs' energy"}
    return ready.energy_accounting


def _check_covered(rate: Rate, option: str, rows: Sequence[Row]) -> None:
    """``ValueError`` naming the first job a series does not cover (``Options.fill`` takes the nearest value instead)."""
    for row in rows:
        jobs = row.jobs
        missed = rate.uncovered(jobs["start_time_s"].to_numpy(), jobs["end_time_s"].to_numpy())
        if missed.size:
            job = jobs.row(int(missed[0]), named=True)
            more = f" (and {missed.size - 1:,} more jobs)" if missed.size > 1 else ""
            raise ValueError(f"{option} {rate.describe.get('file')}: covers {rate.span_text()}, not job {job['job_id']} "
                             f"({job['start_time']:%Y-%m-%dT%H:%MZ} to {job['end_time']:%Y-%m-%dT%H:%MZ}){more}; pass --fill to use "
                             "the nearest value")


def _low_util(options: Options) -> pl.Expr:
    """A job below ``--min-gpu-util`` (an idle allocation); a job without a utilisation is not."""
    return (pl.col("gpu_util_pct") < options.min_gpu_util_pct).fill_null(False)


def _sizes(trace: str, rows: Sequence[Row], keyed: pl.DataFrame, mode: GpuMode,
           options: Options) -> tuple[dict[str, capacity.Capacity], dict[str, float], capacity.Capacity | None]:
    """The cluster size behind each row's idle draw, the idle draw (W) of each row's GPU, the whole cluster's size.

    Every job on each GPU: one cluster, ``--cluster-gpus`` or the trace's peak concurrent GPUs
    (``pipelines.clusters.capacity``), for every row. As exported: each type's GPUs are its own
    jobs' peak concurrent GPUs (a job runs on its own type only), over the whole trace's window;
    the cluster is ``--cluster-gpus``, at least their sum, else their sum, its GPUs beyond them
    idling at the rows' mean idle draw weighted by their GPUs. A row idles at the registry's idle
    draw of the GPU it replays on; a GPU without one (a measured one) has no fleet energy, nor then
    has the whole. ``CapacityError`` for a ``--cluster-gpus`` below the peak (before any replay).
    """
    whole = capacity.resolve(trace, keyed, options.cluster_gpus)
    idle_w = {r.gpu: GPU_BY_NAME[r.gpu].idle_w for r in rows if r.gpu in GPU_BY_NAME}
    if mode == EVERY_GPU:
        return {r.key: whole for r in rows}, idle_w, None
    sizes = {r.key: replace(capacity.resolve(trace, r.jobs), source=f"the {r.key} jobs' peak concurrent GPUs",
                            window_start_s=whole.window_start_s, window_end_s=whole.window_end_s) for r in rows}
    by_type = sum(c.cluster_gpus for c in sizes.values())
    if options.cluster_gpus is None:
        whole = replace(whole, cluster_gpus=by_type, source="each GPU type's peak concurrent GPUs, added up")
    elif options.cluster_gpus < by_type:
        parts = " + ".join(f"{k} {c.cluster_gpus:,}" for k, c in sizes.items())
        raise capacity.CapacityError(f"--cluster-gpus {options.cluster_gpus:,} is below the GPUs the export's types hold at their "
                                     f"peaks ({parts} = {by_type:,}); give at least that")
    if all(r.gpu in idle_w for r in rows):
        idle_w[FLEET] = sum(idle_w[r.gpu] * sizes[r.key].cluster_gpus for r in rows) / max(1, by_type)
    return sizes, idle_w, whole


#: The columns of ``mapping.own_keyed`` rows a draw reads.
_REPLAY_COLUMNS = ("trace", "cluster", "group", "job_id", "start_time_s", "end_time_s", "num_gpu", "gpu_util_pct")
#: The columns of a row's jobs the plan reads (``_plan``: GPU-hours, the measured jobs, the cluster sizes, the draws'):
#: a row copies only these of the keyed jobs.
_ROW_COLUMNS = (*_REPLAY_COLUMNS, "start_time", "end_time", "num_gpus", "measured_energy_j")
#: The columns of ``mapping.own_keyed`` the plan and the report read (the rows', ``gpu_type`` for the rows as exported,
#: ``user`` and ``job_name`` for the idle jobs named and the jobs grouped by name): the keyed copy holds no other.
_KEYED_COLUMNS = (*_ROW_COLUMNS, "gpu_type", "user", "job_name")


# ---------------------------------------------------------------------------------------------
# the figures of a row, from the draws

#: A row's record (``row_report``): the figures of each draw from its totals (``samples.run_draw``: energy J and time s
#: per policy, peaks), then each figure's median and interval. A new figure (idle power, a fleet's energy) is a total in
#: ``run_draw`` and a line here; the JSON, the text and ``own_cluster_summary`` pick it up by name.


def _draw_figures(t: dict[str, Any], options: Options) -> dict[str, float | None]:
    saved_kwh = (t["default_j"] - t["zeus_j"]) / J_PER_KWH
    figures: dict[str, float | None] = {
        "default_kwh": t["default_j"] / J_PER_KWH,
        "zeus_kwh": t["zeus_j"] / J_PER_KWH,
        "energy_saved_kwh": saved_kwh,
        "energy_saved_pct": _pct_saved(t["zeus_j"], t["default_j"]),
        "time_saved_pct": _pct_saved(t["zeus_s"], t["default_s"]),
        "steady_state_saved_pct": None if t.get("steady_default_j") is None else _pct_saved(t["steady_zeus_j"], t["steady_default_j"]),
        "default_hours": t["default_s"] / S_PER_H,
        "zeus_hours": t["zeus_s"] / S_PER_H,
        "default_peak_kw": _finite(t["default_peak_kw"]),
        "zeus_peak_kw": _finite(t["zeus_peak_kw"]),
        "headroom_gpus": _finite(t["headroom_gpus"]),
    }
    if t.get("horizon_default_j") is not None:
        figures["horizon_default_kwh"] = t["horizon_default_j"] / J_PER_KWH
        figures["horizon_zeus_kwh"] = t["horizon_zeus_j"] / J_PER_KWH
        figures["horizon_saved_kwh"] = (t["horizon_default_j"] - t["horizon_zeus_j"]) / J_PER_KWH
        figures["horizon_saved_pct"] = _pct_saved(t["horizon_zeus_j"], t["horizon_default_j"])
    if t.get("default_cost") is not None:
        figures.update(default_cost=t["default_cost"], zeus_cost=t["zeus_cost"], cost_saved=t["default_cost"] - t["zeus_cost"])
        figures.update(_split(t, "zeus", "cost", "price_per_kwh", "cost_saved", 1.0))
    if t.get("default_co2e_g") is not None:
        figures.update(default_co2e_kg=t["default_co2e_g"] / 1000, zeus_co2e_kg=t["zeus_co2e_g"] / 1000,
                       co2e_saved_kg=(t["default_co2e_g"] - t["zeus_co2e_g"]) / 1000)
        figures.update(_split(t, "zeus", "co2e_g", "gco2_per_kwh", "co2e_saved", 1000.0))
    if t.get("carbon_aware_j") is not None:  # nested as ``carbon_aware`` by ``row_report``
        figures.update({f"{CARBON_AWARE_PREFIX}energy_saved_kwh": (t["default_j"] - t["carbon_aware_j"]) / J_PER_KWH,
                        f"{CARBON_AWARE_PREFIX}energy_saved_pct": _pct_saved(t["carbon_aware_j"], t["default_j"]),
                        f"{CARBON_AWARE_PREFIX}time_saved_pct": _pct_saved(t["carbon_aware_s"], t["default_s"])})
        if t.get("carbon_aware_co2e_g") is not None:
            figures[f"{CARBON_AWARE_PREFIX}co2e_kg"] = t["carbon_aware_co2e_g"] / 1000
            figures[f"{CARBON_AWARE_PREFIX}co2e_saved_kg"] = (t["default_co2e_g"] - t["carbon_aware_co2e_g"]) / 1000
            split = _split(t, "carbon_aware", "co2e_g", "gco2_per_kwh", "co2e_saved", 1000.0)
            figures.update({f"{CARBON_AWARE_PREFIX}{k.removeprefix('carbon_aware_')}": v for k, v in split.items()
                            if not k.startswith("default_")})
            # what it adds over plain Zeus: CO2e saved (kg) and the jobs' time (h; positive: longer)
            figures[f"{CARBON_AWARE_PREFIX}co2e_added_over_zeus_kg"] = (t["zeus_co2e_g"] - t["carbon_aware_co2e_g"]) / 1000
            figures[f"{CARBON_AWARE_PREFIX}hours_added_over_zeus"] = (t["carbon_aware_s"] - t["zeus_s"]) / S_PER_H
    return figures


def _split(t: dict[str, Any], policy: str, total: str, per: str, saved: str, scale: float) -> dict[str, float | None]:
    """A draw's saving of ``policy`` against Default in CO2e or money (``total``: ``co2e_g`` or ``cost``), in two parts that add
    up to it: by energy, the kWh saved at the intensity or price Default's energy met; by timing, ``policy``'s energy at the
    difference between what Default's and its own energy met (its runs, longer or shorter, meet other hours). With the
    intensity or price each met (``default_met_<per>``, ``<policy>_met_<per>``: the energy-weighted mean). ``scale``:
    ``total``'s units in the saving's (1000 g in a kg). All None where Default or ``policy`` used no energy."""
    default_kwh, kwh = t["default_j"] / J_PER_KWH, t[f"{policy}_j"] / J_PER_KWH
    names = (f"default_met_{per}", f"{policy}_met_{per}", f"{saved}_by_energy{'_kg' if scale != 1 else ''}",
             f"{saved}_by_timing{'_kg' if scale != 1 else ''}")
    if default_kwh <= 0 or kwh <= 0:
        return dict.fromkeys(names)
    default_met, met = t[f"default_{total}"] / default_kwh, t[f"{policy}_{total}"] / kwh
    values = (default_met, met, (default_kwh - kwh) * default_met / scale, kwh * (default_met - met) / scale)
    return dict(zip(names, values, strict=True))


#: The carbon-aware Zeus's figures of a draw, before ``row_report`` nests them under ``carbon_aware``.
CARBON_AWARE_PREFIX = "carbon_aware."


def _fleet_figures(t: dict[str, Any]) -> dict[str, float | None] | None:
    """A draw's fleet (jobs + the cluster's idle GPUs) from its totals; None without a cluster size and an idle draw."""
    if any(t.get(k) is None for k in FLEET_TOTALS if k != "over_capacity_gpu_h"):
        return None
    return {
        "gpu_idle_w": t["gpu_idle_w"],
        "default_fleet_kwh": t["default_fleet_j"] / J_PER_KWH,
        "zeus_fleet_kwh": t["zeus_fleet_j"] / J_PER_KWH,
        "default_idle_kwh": t["default_idle_j"] / J_PER_KWH,
        "zeus_idle_kwh": t["zeus_idle_j"] / J_PER_KWH,
        "energy_saved_pct": _pct_saved(t["zeus_j"], t["default_j"]),
        "fleet_energy_saved_pct": _pct_saved(t["zeus_fleet_j"], t["default_fleet_j"]),
        "over_capacity_gpu_h": t["over_capacity_gpu_h"],
    }


def _with_interval(out: dict[str, Any], name: str, values: Sequence[float | None]) -> None:
    """``out[name]`` = the median of ``values``, ``out[name + "_interval"]`` = [p05, p95]; kWh figures get their MWh twins."""
    median, p05, p95 = spread(values)
    if name == "headroom_gpus":  # whole GPUs: rounded down, as power.power_summary rounds each draw's
        median, p05, p95 = (None if v is None else math.floor(v) for v in (median, p05, p95))
    out[name] = median
    out[f"{name}_interval"] = [p05, p95]
    if name.endswith("_kwh") and "_per_" not in name:  # an energy, not an intensity or price per kWh
        mwh = name.removesuffix("_kwh") + "_mwh"
        out[mwh] = None if median is None else median / KWH_PER_MWH
        out[f"{mwh}_interval"] = [None if v is None else v / KWH_PER_MWH for v in (p05, p95)]


def row_report(totals: Sequence[dict[str, Any]], options: Options, jobs: int, fixed: str | None = None) -> dict[str, Any]:
    """A row's figures over the draws: each the median, with ``<name>_interval`` = [5th, 95th percentile]; ``fleet``: the
    same for the jobs plus the cluster's idle GPUs (null without a cluster size or an idle draw).

    Honest intervals: a single draw, a row of fewer than ``MIN_JOBS_FOR_INTERVAL`` jobs, or one whose saving did not vary
    over the draws gets no interval (null) and ``interval_note`` says why, never a zero-width interval; ``fixed``: the note of a
    row no draw varies (power limit only).
    """
    out = _medians([_draw_figures(t, options) for t in totals])
    aware = {k.removeprefix(CARBON_AWARE_PREFIX): out.pop(k) for k in [k for k in out if k.startswith(CARBON_AWARE_PREFIX)]}
    if aware:
        out["carbon_aware"] = aware
    fleet = [_fleet_figures(t) for t in totals]
    out["fleet"] = _medians([f for f in fleet if f is not None]) if all(f is not None for f in fleet) else None
    low, high = out["energy_saved_pct_interval"]
    if fixed is not None:
        out["interval_note"] = fixed
    elif len(totals) == 1:
        out["interval_note"] = "a single replay (--samples 1): no interval"
    elif jobs < MIN_JOBS_FOR_INTERVAL or (low is not None and low == high):
        out["interval_note"] = f"too few jobs ({jobs:,}) for an interval"
    if "interval_note" in out:
        for part in (out, out["fleet"] or {}, out.get("carbon_aware") or {}):
            for name in [k for k in part if k.endswith("_interval")]:
                part[name] = [None, None]
    return out


def _medians(per_draw: Sequence[dict[str, float | None]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in per_draw[0]:
        _with_interval(out, name, [d[name] for d in per_draw])
    return out


# ---------------------------------------------------------------------------------------------
# counts and the measured energy


def _by_state(frame: pl.LazyFrame) -> dict[str, int]:
    return dict(frame.group_by("state").len().sort("len", "state", descending=[True, False]).collect().iter_rows())


def _counts(result: OwnTraceResult, replayed: int, groups: int, named: int) -> dict[str, Any]:
    c = result.counts
    # lazily: each count filters only the columns it reads (a filtered copy of the table's rows, on 12M lines, held
    # 0.45 GB more at the peak)
    table = result.table.lazy()
    gpu = table.filter(pl.col("category") == "gpu")
    zero_length = gpu.select(((pl.col("state") == "COMPLETED") & (pl.col("end_time") <= pl.col("start_time"))).sum()).collect().item()
    not_replayed = _by_state(gpu.filter(pl.col("state") != "COMPLETED"))
    if zero_length:
        not_replayed["COMPLETED, zero length"] = zero_length
    # streamed: a quarantine of millions of rows is never read whole (it may be a scan of Parquet files on disk)
    reasons = result.quarantine_rows.select(pl.coalesce("column", pl.col("reason").str.extract(r"^([^:]*)", 1)).alias("what"))
    by_what = dict(reasons.group_by("what").len().sort("len", "what", descending=[True, False]).collect(engine="streaming").iter_rows())
    return {
        "lines": c.lines,
        "header_lines": c.header_lines,
        "allocations": c.allocations,
        "steps_skipped": c.steps_skipped,
        "cpu_only": c.cpu_only,
        "not_ended": c.not_ended,
        "not_ended_by_state": _by_state(table.filter(pl.col("category") == "not_ended")),
        "never_started": c.never_started,
        "never_started_by_state": _by_state(table.filter(pl.col("category") == "never_started")),
        "quarantined": c.quarantined,
        "gpu_allocations": c.gpu_allocations,
        "simulated_jobs": replayed,
        "not_simulated_gpu_allocations": not_replayed,
        "quarantined_by": by_what,
        "recurring_groups": groups,
        "jobs_grouped_by_user_and_name": named,
        "gpu_allocations_by_type": dict(gpu.group_by(pl.col("gpu_type").fill_null(UNTYPED)).len()
                                        .sort("len", "gpu_type", descending=[True, False]).collect().iter_rows()),
    }


def _energy_accounting(result: OwnTraceResult) -> dict[str, Any]:
    """What the export says about measured energy, over all allocations and over the jobs replayed."""
    c = result.counts
    replayed = result.table.lazy().filter(own_cluster.replayable())  # lazily, as ``_counts``
    status = dict(replayed.group_by("energy_status").len().collect().iter_rows())
    out = {"source": c.energy_source, "zero_allocations": c.zero_energy_allocations, "measured_allocations": c.measured_energy_allocations,
           "replayed_jobs_measured": status.get("measured", 0), "replayed_jobs_zero": status.get("zero", 0)}
    if c.energy_source is None:
        out["note"] = "the export has no energy accounting (add ConsumedEnergyRaw to sacct's --format to compare with the cluster's meter)"
    elif c.measured_energy_allocations == 0:
        out["note"] = (f"{c.energy_source} is 0 for every allocation: the cluster collects no energy "
                       "(AcctGatherEnergyType none); 0 is not a measurement")
    elif out["replayed_jobs_measured"] == 0:
        out["note"] = f"{c.energy_source} has no measurement for any COMPLETED GPU job"
    return out


def _measured_candidates(table: pl.DataFrame, keyed: pl.DataFrame) -> pl.DataFrame:
    """(job_id, gpu_util_pct) of the table's replay candidates (``own_cluster.replayable``) whose job ID is a keyed job's with a
    measured energy: the plan's measured jobs (``Plan.measured``) are among those IDs. Lazily: the filter copies two columns."""
    ids = keyed["job_id"].filter(keyed["measured_energy_j"].is_not_null())
    return (table.lazy().filter(own_cluster.replayable() & pl.col("job_id").is_in(ids.implode()))
            .select("job_id", "gpu_util_pct").collect())


def _measured_util(plan_: Plan, candidates: pl.DataFrame) -> float | None:
    """The median GPU utilisation (%) of the measured jobs the replay compares (``plan_.measured``), from ``candidates``
    (``_measured_candidates``); None without any."""
    if plan_.measured.height == 0:
        return None
    ids = plan_.measured["job_id"]
    util = candidates.filter(pl.col("job_id").is_in(ids.implode()))["gpu_util_pct"].drop_nulls()
    return float(util.median()) if util.len() else None  # type: ignore[arg-type]


def _measured_report(draws: Sequence[dict[str, Any]], ready: Replayable) -> dict[str, Any] | None:
    plan_, mode = ready.plan, ready.mode
    parts = [d["measured"] for d in draws]
    if plan_.measured.height == 0 or any(p is None for p in parts):
        return None
    measured_kwh = float(plan_.measured["measured_energy_j"].sort().sum()) / J_PER_KWH
    out: dict[str, Any] = {"source": ready.energy_accounting["source"], "jobs": parts[0]["jobs"],
                           "replayed_jobs": int(sum(r.jobs.height for r in (plan_.rows if mode == AS_EXPORTED else plan_.rows[:1]))),
                           "measured_kwh": measured_kwh, "measured_mwh": measured_kwh / KWH_PER_MWH,
                           "modelled_on": "each job's own GPU row" if mode == AS_EXPORTED else plan_.rows[0].gpu}
    _with_interval(out, "modelled_default_kwh", [p["modelled_default_j"] / J_PER_KWH for p in parts])
    for name in ("ratio_median", "ratio_p25", "ratio_p75"):
        out[name] = spread([p[name] for p in parts])[0]
    # per row (exported GPU type): each quartile's median over the draws
    out["by_row"] = {row: {"jobs": first["jobs"], **{name: spread([p["by_row"].get(row, {}).get(name) for p in parts])[0]
                                                     for name in ("ratio_median", "ratio_p25", "ratio_p75")}}
                     for row, first in parts[0]["by_row"].items()}
    out["gpu_util_median_pct"] = ready.gpu_util_median_pct
    out["caption"] = ENERGY_PLUGINS
    return out


# ---------------------------------------------------------------------------------------------
# the report


@dataclass(frozen=True)
class Replayable:
    """A read trace made ready for the draws (``replayable``): the plan and every part of the report that reads the trace's
    table, so that a caller can free the table before the replay (issue 25: peak memory)."""

    head: dict[str, Any]  # file, format, timezone, trace
    plan: Plan
    records: list[dict[str, Any]]
    mode: GpuMode
    counts: dict[str, Any]  # ``_counts``
    replayed: int
    gpu_hours: float
    energy_accounting: dict[str, Any]
    gpu_util_median_pct: float | None  # of the measured jobs compared (``_measured_util``)
    utilization: dict[str, Any]  # ``_utilization``


def replayable(result: OwnTraceResult, profiles: Profiles, options: Options) -> Replayable:
    """What the draws and the report need of ``result``: the plan and the report's counts, energy accounting and measured jobs'
    utilisation. Raises ``TraceError`` for a GPU (or fallback) without a profile.

    Everything read of the table is read before the plan, and the table is then dropped: a caller that hands ``result``
    over (keeps no reference to it, as the CLI does) has it freed before the plan's copies of the jobs (12M lines: the
    table held 0.7 GB)."""
    result = for_report(result)
    keyed = mapping.own_keyed(result.table, result.trace, _KEYED_COLUMNS)
    options = with_tariff(options, keyed)
    mode = gpu_mode(result.table, options)
    counts = _counts(result, 0, 0, 0)  # the replayed jobs' counts are filled in below, from the plan's keyed jobs
    energy_accounting = _energy_accounting(result)
    measured = _measured_candidates(result.table, keyed)
    result = replace(result, table=result.table.clear())
    the_plan, records, mode = _plan(result, keyed, profiles, options, mode)
    utilization = _utilization(result, keyed, records, mode, options)
    keyed = keyed.filter(~_low_util(options))  # the jobs replayed
    named = keyed.filter(pl.col("user").is_not_null() & pl.col("job_name").is_not_null()).height
    replayed, groups, gpu_hours = keyed.height, keyed["group"].n_unique() if keyed.height else 0, _gpu_hours(keyed)
    del keyed  # the draws hold their own slim rows (the plan's)
    counts.update(simulated_jobs=replayed, recurring_groups=groups, jobs_grouped_by_user_and_name=named)  # keys kept in place
    head = {"file": result.source_file, "format": result.format, "timezone": result.timezone, "timezone_source": options.timezone_source,
            "trace": result.trace, "energy_model": options.energy_model}
    return Replayable(head, the_plan, records, mode, counts, replayed, gpu_hours, energy_accounting,
                      _measured_util(the_plan, measured), utilization)


def _utilization(result: OwnTraceResult, keyed: pl.DataFrame, records: Sequence[dict[str, Any]], mode: GpuMode,
                 options: Options) -> dict[str, Any]:
    """What the export says of its jobs' GPU utilisation, and the idle allocations left out of the replay (``--min-gpu-util``).

    As exported the rows hold different jobs and add up; on every GPU each row holds them all (the first row's idle draw
    prices them)."""
    with_util = int(keyed["gpu_util_pct"].is_not_null().sum())
    source = None if with_util == 0 else "Slurm's gres/gpuutil (TRESUsageInTot)" if result.format == "sacct" else "the job log's gpu_util_pct"
    counted = records if mode == AS_EXPORTED else records[:1]
    kwh = [r["low_util_kwh"] for r in counted]
    out: dict[str, Any] = {
        "source": source, "threshold_pct": options.min_gpu_util_pct, "jobs_with_util": with_util,
        "low_util_jobs": int(sum(r["low_util_jobs"] for r in counted)),
        "low_util_gpu_hours": float(sum(r["low_util_gpu_hours"] for r in counted)),
        "low_util_kwh": None if any(k is None for k in kwh) else float(sum(kwh)),
    }
    if source is not None:
        out.update(_low_util_jobs(keyed.filter(_low_util(options))))
    if source is None:
        out["note"] = ("the export carries no GPU utilisation: every COMPLETED GPU job is taken as a training run (add TRESUsageInTot "
                       "to sacct's --format, or a gpu_util_pct column to the job log, to tell idle allocations apart)")
    return out


#: The idle allocations named in the JSON (by GPU-hours, most first), and in the text and the page.
LOW_UTIL_IDS = 100
LOW_UTIL_SHOWN = 10


def _low_util_jobs(low: pl.DataFrame) -> dict[str, Any]:
    """The idle allocations by name: ``low_util_job_ids``, the ``LOW_UTIL_IDS`` of most GPU-hours (all where fewer; the count
    is ``low_util_jobs``), and ``low_util_top``: the first ``LOW_UTIL_SHOWN`` with user, GPU type, GPU-hours, utilisation (%)."""
    hours = (duration_s(pl.col("end_time") - pl.col("start_time")) * pl.col("num_gpus") / S_PER_H).alias("gpu_hours")
    ranked = low.select("job_id", "user", "gpu_type", hours, "gpu_util_pct").sort(
        "gpu_hours", "job_id", descending=[True, False]).head(LOW_UTIL_IDS)
    return {"low_util_job_ids": ranked["job_id"].to_list(), "low_util_top": ranked.head(LOW_UTIL_SHOWN).to_dicts()}


def run(trace: OwnTraceResult | Replayable, profiles: Profiles, options: Options | None = None, runner: Runner | None = None, *,
        keep_power: bool = False, placement: partition_tasks.Placement | None = None) -> tuple[dict[str, Any], pl.DataFrame]:
    """The whatif flow's one owner (the CLI, the Dagster assets and the tests call it): the report of one trace (see the module
    docstring; a JSON-ready dict) and, with ``keep_power``, the cluster power of its sample 1 (the replay of draw 0:
    ``ClusterPower`` rows of the jobs' power per 5-minute bin, ``gpu`` = ``all`` for the whole cluster as exported, else one
    GPU per row), else an empty frame. The report is the same, bit for bit, either way.

    ``trace``: a read trace (ready here with ``options``), or one ``replayable`` made (its table may be gone: a caller frees
    a large export's table before the draws). ``runner``: where the draws run (default: in this process); on a Dask runner
    each draw's partitions are tasks, their inputs reaching the workers as ``placement`` says (``partition_tasks``; default:
    as task data) and the report's ``runner`` saying which.
    """
    if isinstance(trace, OwnTraceResult):
        if options is None:
            raise ValueError("a read trace needs its Options")
        trace = replayable(trace, profiles, options)
    report, power = _report_of_draws(trace, profiles, runner, keep_power=keep_power, placement=placement)
    return report, power if power is not None else pl.DataFrame(schema=POWER_SCHEMA)


def _row(rec: dict[str, Any]) -> dict[str, Any]:
    """A row's record as the report gives it (before its figures)."""
    names = ("own_profile", "jobs", "gpu_hours", "profile_source", "workloads", "power_limit_only", "low_util_jobs", "low_util_gpu_hours",
             "low_util_kwh")
    out = {"replayed_on": rec["gpu"], **{k: rec[k] for k in names}}
    if rec["analogues"]["groups_by_utilisation"] or "note" in rec["analogues"]:  # an export without utilisation: as before
        out["analogues"] = rec["analogues"]
    scale: standins.PowerScale | None = rec.get("power_scale")
    if scale is not None:
        out["stand_in_power"] = {"replayed_tdp_w": scale.stand_in.tdp_w, "replayed_idle_w": scale.stand_in.idle_w,
                                 "exported_tdp_w": scale.exported.tdp_w, "exported_idle_w": scale.exported.idle_w,
                                 "exported_source": scale.exported.source}
    return out


def _stand_ins(records: Sequence[dict[str, Any]], mode: GpuMode, options: Options) -> dict[str, Any] | None:
    """The jobs replayed on another GPU's profile (the fallback), how many and why, for the report's title block; None when
    GPUs were named (``--gpu``: every job on each by choice)."""
    if mode == EVERY_GPU and options.gpus:
        return None
    counted = records if mode == AS_EXPORTED else records[:1]
    standing = [r for r in counted if mode == EVERY_GPU or not r["own_profile"]]
    jobs, hours = sum(r["jobs"] for r in standing), sum(r["gpu_hours"] for r in standing)
    of_jobs, of_hours = sum(r["jobs"] for r in counted), sum(r["gpu_hours"] for r in counted)
    no_profile = [r["key"] for r in standing if r["key"] != UNTYPED and mode == AS_EXPORTED]
    no_type = sum(r["jobs"] for r in standing if r["key"] == UNTYPED or mode == EVERY_GPU)
    scaled = [r["key"] for r in standing if r.get("power_scale") is not None]
    unscaled = [r["key"] for r in standing if r.get("unscaled")]
    why = [*([f"no profile for {', '.join(no_profile)}"] if no_profile else []), *([f"no type on {no_type:,}"] if no_type else [])]
    text = (f"{jobs:,} of {of_jobs:,} jobs ({hours:,.0f} of {of_hours:,.0f} GPU-hours) replayed on the {options.fallback_gpu} profile"
            + (f": {'; '.join(why)}" if why else ""))
    power = None
    if jobs and options.stand_in_power == standins.SCALED:
        parts = [*([f"power scaled onto {', '.join(scaled)}'s idle draw and TDP"] if scaled else []),
                 *([f"no TDP known for {', '.join(unscaled)} (--gpu-specs GPU=TDP:IDLE)"] if unscaled else [])]
        power = "; ".join(parts) or None
    elif no_profile:
        power = f"stand-ins at the {options.fallback_gpu}'s power; --stand-in-power scaled: at their own GPU's"
    return {"jobs": jobs, "gpu_hours": hours, "of_jobs": of_jobs, "of_gpu_hours": of_hours, "gpu": options.fallback_gpu,
            "no_profile": no_profile, "no_type_jobs": no_type, "power": options.stand_in_power, "scaled": scaled, "unscaled": unscaled,
            "why": "; ".join(why) or None, "text": text, "power_text": power}


def _report_of_draws(ready: Replayable, profiles: Profiles, runner: Runner | None, keep_power: bool,
                     placement: partition_tasks.Placement | None = None) -> tuple[dict[str, Any], pl.DataFrame | None]:
    """The report of ``ready``'s draws on ``runner`` (``run``), and draw 0's cluster power where ``keep_power``."""
    the_plan, records, mode, options = ready.plan, ready.records, ready.mode, ready.plan.options
    if keep_power:
        the_plan = replace(the_plan, keep_power=True)
    replayed, gpu_hours = ready.replayed, ready.gpu_hours
    runner = runner or SerialRunner()
    draws, by_partition = partition_tasks.run_draws(the_plan, profiles.traces, options.samples, options.seed, runner, placement,
                                                    progress=options.progress)
    report: dict[str, Any] = {
        **ready.head,
        "eta": options.eta, "beta": options.beta, "samples": options.samples, "seed": options.seed,
        "interval": f"{samples_interval()} over the samples",
        "runner": runner.description if by_partition is None else f"{runner.description}; {by_partition}",
        **ready.counts,
        "gpu_mode": mode, "fallback_gpu": options.fallback_gpu,
    }
    whole = the_plan.cluster or next(iter(the_plan.capacities.values()), None)
    if whole is not None:
        report["cluster_gpus"] = {"gpus": whole.cluster_gpus, "source": whole.source, "peak_concurrent_gpus": whole.peak_concurrent_gpus}
    first = draws[0]["rows"]
    gpus: dict[str, Any] = {}
    for rec in records:
        row = _row(rec)
        if rec["key"] in first:
            fixed = "power limit only: one replay, nothing drawn, no interval" if rec["power_limit_only"] else None
            row.update(row_report([d["rows"][rec["key"]] for d in draws], options, rec["jobs"], fixed))
            row["jobs_by_workload"] = first[rec["key"]]["jobs_by_workload"]
        gpus[rec["key"]] = row
    report["gpus"] = gpus
    report["stand_ins"] = _stand_ins(records, mode, options)
    if mode == AS_EXPORTED:
        report["gpu_types"] = {r["key"]: r["jobs"] for r in records}
        report["replayed_on"] = {r["key"]: r["gpu"] for r in records}
        report["fallback_jobs"] = sum(r["jobs"] for r in records if not r["own_profile"])
        report["total"] = ({"jobs": replayed, "gpu_hours": gpu_hours, **row_report([d["fleet"] for d in draws], options, replayed)}
                           if "fleet" in draws[0] else None)
    if any(r["analogues"]["groups_by_utilisation"] for r in records):
        report["analogue_rule"] = analogues.RULE
    report["steady_state"] = _steady_state_note(report)
    report["utilization"] = ready.utilization
    report["measured_workloads"] = {r["gpu"]: r["workloads"] for r in records if len(r["workloads"]) < len(ZEUS_DATASETS)}
    report["profile_notes"] = list(profiles.notes)
    report["energy_accounting"] = _with_meter(ready, gpus, report.get("total"))
    report["measured"] = _measured_report(draws, ready)
    report["top_groups_gpu"] = "as exported" if mode == AS_EXPORTED else the_plan.rows[0].gpu
    report["top_groups"] = [
        {"group": t["group"], "jobs": t["jobs"], "workload": t["workload"], "default_mwh": t["default_j"] / J_PER_KWH / KWH_PER_MWH,
         "default_kwh": t["default_j"] / J_PER_KWH, "zeus_mwh": t["zeus_j"] / J_PER_KWH / KWH_PER_MWH, "zeus_kwh": t["zeus_j"] / J_PER_KWH,
         "saved_mwh": (t["default_j"] - t["zeus_j"]) / J_PER_KWH / KWH_PER_MWH, "saved_kwh": (t["default_j"] - t["zeus_j"]) / J_PER_KWH,
         "saved_pct": _pct_saved(t["zeus_j"], t["default_j"])}
        for t in draws[0].get("top_groups", [])
    ]
    if options.horizon_days is not None:
        report["horizon_days"] = options.horizon_days
    grid, prices = options.rates()
    if options.price_per_kwh is not None:
        report["price_per_kwh"] = options.price_per_kwh
    if options.grid_gco2_per_kwh is not None:
        report["grid_gco2_per_kwh"] = options.grid_gco2_per_kwh
    if grid is not None:
        report["grid"] = {**grid.describe, **({"filled": options.fill} if grid.times_s is not None else {}), **_coverage(grid, the_plan)}
    if the_plan.carbon_aware is not None:
        report["carbon_aware"] = {"eta_clean": the_plan.carbon_aware[0], "eta_dirty": the_plan.carbon_aware[1]}
    if prices is not None:
        report["prices"] = {**prices.describe, **({"filled": options.fill} if prices.times_s is not None else {}),
                            **_coverage(prices, the_plan)}
    return report, draws[0].get("power")


def _coverage(rate: Rate, plan_: Plan) -> dict[str, object]:
    """A series' gaps, fills and years against the replayed jobs (``coverage.series_coverage``), the bundled table's year
    against theirs (``coverage.table_years``); nothing for a flat value. Each job once: every GPU's row holds them all."""
    rows = plan_.rows if plan_.fleet else plan_.rows[:1]
    start = np.concatenate([np.zeros(0), *(r.jobs["start_time_s"].to_numpy() for r in rows)])
    end = np.concatenate([np.zeros(0), *(r.jobs["end_time_s"].to_numpy() for r in rows)])
    if rate.times_s is not None:
        return coverage.series_coverage(rate, start, end)
    year = rate.describe.get("year")
    return coverage.table_years(year, start, end) if isinstance(year, int) else {}


def _steady_state_note(report: dict[str, Any]) -> str:
    """Why the saving over the export's period and the steady state differ (one line)."""
    jobs, groups = report["simulated_jobs"], report["recurring_groups"]
    per_group = f"{jobs / groups:,.1f}" if groups else "0"
    return (f"the steady state is the saving once each group's optimizer has converged; over the export's period Zeus also pays for "
            f"exploring in each group's first jobs ({per_group} jobs per group here)")


def samples_interval() -> str:
    """The interval's name in the report (``90 % interval (5th to 95th percentile)``)."""
    lo, hi = INTERVAL_PCT
    return f"{hi - lo:g} % interval ({lo:g}th to {hi:g}th percentile)"


def result_of(trace: dict[str, Any], jobs: pl.DataFrame) -> OwnTraceResult:
    """A trace as the pipeline stored it (its ``own_cluster_traces`` row, ``own_cluster_jobs``) as a read result (no quarantine rows)."""
    counts = TraceCounts(**{f: trace[f] for f in TraceCounts.__dataclass_fields__})
    return OwnTraceResult(trace["trace"], trace["source_file"], trace["format"], trace["timezone"], trace["sha256"],
                          jobs.filter(pl.col("trace") == trace["trace"]), empty_quarantine().lazy(), counts)


def summary_frame(report: dict[str, Any]) -> pl.DataFrame:
    """The report's rows as ``own_cluster_summary`` rows (``pipelines.contracts.owncluster.OwnClusterSummary``)."""
    schema = polars_schema(OwnClusterSummary)
    rows = [(key, g, g["replayed_on"], g["own_profile"]) for key, g in report["gpus"].items()]
    if report.get("total"):
        u = report["utilization"]
        rows.append(("all", {**report["total"], **{k: u[k] for k in ("low_util_jobs", "low_util_gpu_hours", "low_util_kwh")}}, None, None))
    measured_row = "all" if report.get("total") else (rows[0][0] if rows else None)
    m = report.get("measured")
    out = []
    for key, g, gpu, own in rows:
        record: dict[str, Any] = {"trace": report["trace"], "row": key, "gpu_mode": report["gpu_mode"], "replayed_on": gpu,
                                  "own_profile": own, "energy_model": report["energy_model"], "jobs": g["jobs"], "gpu_hours": g["gpu_hours"],
                                  "low_util_jobs": g["low_util_jobs"], "low_util_gpu_hours": g["low_util_gpu_hours"],
                                  "low_util_kwh": g["low_util_kwh"], "samples": report["samples"], "seed": report["seed"]}
        record["cluster_gpus"] = (report.get("cluster_gpus") or {}).get("gpus")
        for name in SUMMARY_FIGURES:
            source = (g.get("fleet") or {}) if name.startswith("fleet_") else g
            low, high = source.get(f"{name}_interval") or [None, None]
            record.update({name: source.get(name), f"{name}_p05": low, f"{name}_p95": high})
        if m is not None and key == measured_row:
            low, high = m["modelled_default_kwh_interval"]
            record.update({"measured_jobs": m["jobs"], "measured_kwh": m["measured_kwh"], "modelled_default_kwh": m["modelled_default_kwh"],
                           "modelled_default_kwh_p05": low, "modelled_default_kwh_p95": high, "measured_ratio_median": m["ratio_median"],
                           "measured_ratio_p25": m["ratio_p25"], "measured_ratio_p75": m["ratio_p75"]})
        out.append(record)
    return pl.DataFrame(out, schema=schema) if out else pl.DataFrame(schema=schema)
