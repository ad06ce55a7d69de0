"""What would Zeus save on your cluster: one trace file, read, mapped, replayed and summarized in memory.

The same path as the Dagster assets, without Dagster and without writing anything: the trace is
read (``pipelines.ingest.slurm`` / ``joblog``), mapped onto Zeus workloads
(``mapping.map_own``), replayed under Default and Zeus on each GPU (``simulate.simulate_trace``),
and turned into energy totals and cluster power (``power.power_bins`` / ``power_summary``, with
their defaults). The report is a plain dict (what ``--json`` prints); ``render`` writes it for a
terminal.

Zeus's power traces come from, in order: ``--trace-dir``; the data home's materialized
``zeus_train_runs`` / ``zeus_power_profiles``; its fetched ``raw/zeus/*.csv``; the local mirror
(``$TRACES_MIRROR`` or ``../shared/traces``); else they are downloaded into a temporary folder
(verified by sha256) and read from there. Nothing is kept.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.clusters import capacity, mapping, power, simulate
from pipelines.clusters.workloads import REFERENCE_GPU, workloads_by_default_tta
from pipelines.home.paths import ProjectPaths, default_mirror
from pipelines.ingest.owntrace import OwnTraceResult
from pipelines.ingest.simulator_inputs import read_materialized, read_trace_dir
from pipelines.sources.fetch import FetchError, fetch
from pipelines.sources.manifest import SOURCES_BY_NAME
from pipelines.units import J_PER_MWH, KWH_PER_MWH, S_PER_H
from pipelines.vocabulary import PolicyName
from pipelines.zeus.traces import TraceError, Traces

#: The policies compared: Zeus against Default (b0 at the maximum power limit).
POLICIES: tuple[PolicyName, ...] = ("default", "zeus")


@dataclass(frozen=True)
class Options:
    """What to replay and how to price it."""

    gpus: tuple[str, ...] = (REFERENCE_GPU,)
    eta: float = 0.5
    beta: float = 2.0
    price_per_kwh: float | None = None
    grid_gco2_per_kwh: float | None = None
    top: int = 10
    progress: bool = False
    cluster_gpus: int | None = None  # the cluster's size (idle draw); None: the trace's peak concurrent GPUs


def trace_name_for(path: Path) -> str:
    """A valid trace name from a file name (``My Cluster 2024.sacct`` -> ``my-cluster-2024``)."""
    name = re.sub(r"[^a-z0-9_-]+", "-", path.stem.lower()).strip("-_")[:48]
    return name if name and name not in mapping.TRACES else f"own-{name or 'cluster'}"[:48]


def _has_power_csvs(folder: Path, gpus: Sequence[str]) -> bool:
    return (folder / "summary_train.csv").is_file() and all((folder / f"summary_power_{g}.csv").is_file() for g in gpus)


def load_zeus_traces(trace_dir: Path | None, home: Path, gpus: Sequence[str]) -> tuple[Traces, str]:
    """(Zeus's train and power traces, where they came from), in the order of the module docstring.

    The reference GPU (v100, which orders the workloads) is always read too. Raises
    ``TraceError`` when none of the places has them and the download fails.
    """
    wanted = tuple(dict.fromkeys([REFERENCE_GPU, *gpus]))
    if trace_dir is not None:
        return read_trace_dir(trace_dir, gpus=wanted), str(trace_dir)
    paths = ProjectPaths(home)
    if all(paths.table(t).is_file() for t in ("zeus_train_runs", "zeus_power_profiles")):
        return read_materialized(paths.assets), f"{paths.assets} (materialized tables)"
    for folder in (paths.raw / "zeus", *([m / "zeus"] if (m := default_mirror(home)) else [])):
        if _has_power_csvs(folder, wanted):
            return read_trace_dir(folder, gpus=wanted), str(folder)
    return _download(wanted)


def _download(gpus: Sequence[str]) -> tuple[Traces, str]:
    names = ["zeus/summary_train.csv", *(f"zeus/summary_power_{g}.csv" for g in gpus)]
    unknown = [n for n in names if n not in SOURCES_BY_NAME]
    if unknown:
        raise TraceError(f"no Zeus power trace for {unknown[0].split('_')[-1].removesuffix('.csv')!r} to download: pass --trace-dir")
    with tempfile.TemporaryDirectory(prefix="gpu-energy-zeus-") as tmp:
        paths = ProjectPaths(Path(tmp))
        try:
            for name in names:
                fetch(SOURCES_BY_NAME[name], paths, None, timeout_s=30)
        except FetchError as exc:
            raise TraceError(f"the Zeus traces are not in the data home nor in a mirror, and the download failed ({exc}); "
                             "run `gpu-energy fetch` or pass --trace-dir") from None
        return read_trace_dir(paths.raw / "zeus", gpus=tuple(gpus)), "downloaded from upstream (not kept)"


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _pct_saved(zeus: float, default: float) -> float | None:
    return _finite(100 * (1 - zeus / default)) if default else None


def _gpu_report(history: pl.DataFrame, options: Options, size: capacity.Capacity) -> dict[str, Any]:
    totals = {p: (0.0, 0.0) for p in POLICIES}
    for policy, energy, time in history.group_by("policy").agg(pl.col("energy_j").sum(), pl.col("time_s").sum()).iter_rows():
        totals[policy] = (float(energy), float(time))
    (e_default, t_default), (e_zeus, t_zeus) = totals["default"], totals["zeus"]
    peaks = {p: (None, None) for p in POLICIES}
    summary = None
    if history.height:
        sizes = {size.trace: size}
        summary = power.power_summary(power.power_bins(history, capacity=sizes), sizes)
        for row in summary.iter_rows(named=True):
            peaks[row["policy"]] = (row["peak_kw"], row["headroom_gpus"])
    saved_kwh = (e_default - e_zeus) / J_PER_MWH * KWH_PER_MWH
    report: dict[str, Any] = {
        "default_mwh": e_default / J_PER_MWH,
        "zeus_mwh": e_zeus / J_PER_MWH,
        "energy_saved_pct": _pct_saved(e_zeus, e_default),
        "time_saved_pct": _pct_saved(t_zeus, t_default),
        "default_hours": t_default / S_PER_H,
        "zeus_hours": t_zeus / S_PER_H,
        "default_peak_kw": _finite(peaks["default"][0]),
        "zeus_peak_kw": _finite(peaks["zeus"][0]),
        "headroom_gpus": peaks["zeus"][1],
        "energy_saved_kwh": saved_kwh,
    }
    if options.price_per_kwh is not None:
        report["cost_saved"] = saved_kwh * options.price_per_kwh
    if options.grid_gco2_per_kwh is not None:
        report["co2e_saved_kg"] = saved_kwh * options.grid_gco2_per_kwh / 1000
    report["fleet"] = _fleet_report(summary)
    return report


def _top_groups(history: pl.DataFrame, top: int) -> list[dict[str, Any]]:
    if history.height == 0:
        return []
    per = history.group_by("group", "policy").agg(
        pl.col("energy_j").sum(), pl.col("dataset").first(), pl.col("job_id").n_unique().alias("jobs"))
    wide = per.pivot(on="policy", index=["group", "dataset", "jobs"], values="energy_j")
    for p in POLICIES:
        if p not in wide.columns:
            wide = wide.with_columns(pl.lit(0.0).alias(p))
    best = wide.with_columns((pl.col("default") - pl.col("zeus")).alias("saved")).sort("saved", "group", descending=[True, False]).head(top)
    return [
        {"group": g, "jobs": int(jobs), "workload": ds, "default_mwh": d / J_PER_MWH, "zeus_mwh": z / J_PER_MWH,
         "saved_mwh": (d - z) / J_PER_MWH, "saved_pct": _pct_saved(z, d)}
        for g, ds, jobs, d, z in best.select("group", "dataset", "jobs", "default", "zeus").iter_rows()
    ]


def _counts(result: OwnTraceResult, jobs: pl.DataFrame) -> dict[str, Any]:
    c = result.counts
    table = result.table
    gpu = table.filter(pl.col("category") == "gpu")
    zero_length = gpu.filter((pl.col("state") == "COMPLETED") & (pl.col("end_time") <= pl.col("start_time"))).height
    not_replayed = dict(gpu.filter(pl.col("state") != "COMPLETED").group_by("state").len().sort("len", "state", descending=[True, False])
                        .iter_rows())
    if zero_length:
        not_replayed["COMPLETED, zero length"] = zero_length
    reasons = result.quarantine.with_columns(pl.coalesce("column", pl.col("reason").str.extract(r"^([^:]*)", 1)).alias("what"))
    by_what = dict(reasons.group_by("what").len().sort("len", "what", descending=[True, False]).iter_rows())
    named = mapping.own_replay_candidates(table).filter(pl.col("user").is_not_null() & pl.col("job_name").is_not_null()).height
    return {
        "lines": c.lines,
        "header_lines": c.header_lines,
        "allocations": c.allocations,
        "steps_skipped": c.steps_skipped,
        "cpu_only": c.cpu_only,
        "not_ended": c.not_ended,
        "quarantined": c.quarantined,
        "gpu_allocations": c.gpu_allocations,
        "simulated_jobs": jobs.height,
        "not_simulated_gpu_allocations": not_replayed,
        "quarantined_by": by_what,
        "recurring_groups": jobs["group"].n_unique(),
        "jobs_grouped_by_user_and_name": named,
        "gpu_types": dict(gpu.group_by(pl.col("gpu_type").fill_null("untyped")).len().sort("len", descending=True).iter_rows()),
    }


def whatif(result: OwnTraceResult, traces: Traces, options: Options) -> dict[str, Any]:
    """The report of one read trace (see the module docstring); a JSON-ready dict."""
    unknown = [g for g in options.gpus if g not in traces.gpus()]
    if unknown:
        raise TraceError(f"unknown GPU {unknown[0]!r}: the power traces have {', '.join(traces.gpus())}")
    order = workloads_by_default_tta(traces)
    jobs = mapping.map_own(result.table, order, result.trace)
    size = capacity.resolve(result.trace, jobs, options.cluster_gpus)  # before the replay: a bad --cluster-gpus fails at once
    report: dict[str, Any] = {
        "file": result.source_file, "format": result.format, "timezone": result.timezone, "trace": result.trace,
        "eta": options.eta, "beta": options.beta, **_counts(result, jobs), "gpus": {},
        "cluster_gpus": {"gpus": size.cluster_gpus, "source": size.source, "peak_concurrent_gpus": size.peak_concurrent_gpus},
    }
    top: list[dict[str, Any]] = []
    for gpu in options.gpus:
        history = simulate.simulate_trace(jobs, traces, gpu, eta=options.eta, beta=options.beta, policies=POLICIES, progress=options.progress)
        report["gpus"][gpu] = _gpu_report(history, options, size)
        if gpu == options.gpus[0]:
            top = _top_groups(history, options.top)
    report["top_groups_gpu"] = options.gpus[0]
    report["top_groups"] = top
    if options.price_per_kwh is not None:
        report["price_per_kwh"] = options.price_per_kwh
    if options.grid_gco2_per_kwh is not None:
        report["grid_gco2_per_kwh"] = options.grid_gco2_per_kwh
    return report


# ---------------------------------------------------------------------------------------------
# the terminal report (fits one screen: about 30 lines)


def _n(value: float | int | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} %"


def _grouping(r: dict[str, Any]) -> str:
    named, jobs = r["jobs_grouped_by_user_and_name"], r["simulated_jobs"]
    if named == jobs:
        return "by user, job name and GPUs"
    if named == 0:
        return "no user or job name: by GPUs and duration"
    return f"{named:,} jobs by user, job name and GPUs, {jobs - named:,} by GPUs and duration"


def render(report: dict[str, Any]) -> str:
    """The report for a terminal: counts, per GPU Default vs Zeus, money and CO2e if priced, the top groups."""
    r = report
    out = [
        f"What if Zeus had tuned {r['file']} ({r['format']}, times in {r['timezone']}; eta {r['eta']:g}, beta {r['beta']:g})",
        "",
        f"lines        {r['lines']:>11,} = {r['header_lines']} header + {r['allocations']:,} allocations + {r['steps_skipped']:,} steps "
        f"skipped + {r['quarantined']:,} quarantined",
        f"allocations  {r['allocations']:>11,} = {r['gpu_allocations']:,} GPU + {r['cpu_only']:,} CPU-only (skipped) + "
        f"{r['not_ended']:,} not ended (pending or running; skipped)",
        f"replayed     {r['simulated_jobs']:>11,} COMPLETED GPU jobs in {r['recurring_groups']:,} recurring groups ({_grouping(r)})",
    ]
    if r["not_simulated_gpu_allocations"]:
        parts = ", ".join(f"{n:,} {state}" for state, n in list(r["not_simulated_gpu_allocations"].items())[:6])
        out.append(f"not replayed {sum(r['not_simulated_gpu_allocations'].values()):>11,} GPU allocations that did not complete: {parts}")
    if r["quarantined"]:
        parts = ", ".join(f"{what} {n:,}" for what, n in list(r["quarantined_by"].items())[:5])
        out.append(f"quarantined  {r['quarantined']:>11,} rows, by column or reason: {parts}")
    out += ["", f"{'GPU':<8} {'Default MWh':>12} {'Zeus MWh':>10} {'energy saved':>13} {'time saved':>11} "
                f"{'Default peak kW':>16} {'Zeus peak kW':>13} {'GPU headroom':>13}"]
    for gpu, g in r["gpus"].items():
        out.append(f"{gpu:<8} {_n(g['default_mwh'], 2):>12} {_n(g['zeus_mwh'], 2):>10} {_pct(g['energy_saved_pct']):>13} "
                   f"{_pct(g['time_saved_pct']):>11} {_n(g['default_peak_kw'], 1):>16} {_n(g['zeus_peak_kw'], 1):>13} "
                   f"{_n(g['headroom_gpus']):>13}")
    out.append("  peak: highest 5-minute mean cluster power; headroom: more GPUs under Default's peak at Zeus's p99 (docs: Cluster power)")
    out += _render_fleet(r)
    priced = [(gpu, g) for gpu, g in r["gpus"].items() if "cost_saved" in g or "co2e_saved_kg" in g]
    for gpu, g in priced:
        saved = [f"{_n(g['energy_saved_kwh'])} kWh"]
        if "cost_saved" in g:
            saved.append(f"{_n(g['cost_saved'], 2)} at {r['price_per_kwh']:g} per kWh")
        if "co2e_saved_kg" in g:
            saved.append(f"{_n(g['co2e_saved_kg'] / 1000, 2)} t CO2e at {r['grid_gco2_per_kwh']:g} g/kWh")
        out.append(f"saved on {gpu}: " + ", ".join(saved))
    if r["top_groups"]:
        out += ["", f"The {len(r['top_groups'])} recurring groups that save most on {r['top_groups_gpu']}:",
                f"  {'group':<44} {'jobs':>7} {'workload':<13} {'Default MWh':>11} {'saved MWh':>10} {'saved':>8}"]
        for t in r["top_groups"]:
            name = t["group"] if len(t["group"]) <= 44 else t["group"][:43] + "…"
            out.append(f"  {name:<44} {t['jobs']:>7,} {t['workload']:<13} {_n(t['default_mwh'], 3):>11} {_n(t['saved_mwh'], 3):>10} "
                       f"{_pct(t['saved_pct']):>8}")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# fleet energy: the idle GPUs of the cluster (pipelines.clusters.capacity, power.power_summary)


def _fleet_report(summary: pl.DataFrame | None) -> dict[str, Any]:
    """Per GPU: fleet energy (jobs + idle GPUs) of Default and Zeus, idle energy, and Zeus's saving on each basis."""
    rows = {} if summary is None else {r["policy"]: r for r in summary.iter_rows(named=True)}
    default, zeus = rows.get("default", {}), rows.get("zeus", {})

    def mwh(row: dict[str, Any], column: str) -> float | None:
        value = row.get(column)
        return None if value is None else value / J_PER_MWH

    return {
        "gpu_idle_w": default.get("gpu_idle_w"),
        "default_fleet_mwh": mwh(default, "fleet_energy_j"),
        "zeus_fleet_mwh": mwh(zeus, "fleet_energy_j"),
        "default_idle_mwh": mwh(default, "idle_energy_j"),
        "zeus_idle_mwh": mwh(zeus, "idle_energy_j"),
        "energy_saved_pct": _finite(zeus.get("energy_saved_pct")),
        "fleet_energy_saved_pct": _finite(zeus.get("fleet_energy_saved_pct")),
        "over_capacity_gpu_h": zeus.get("over_capacity_gpu_h"),
    }


def _render_fleet(r: dict[str, Any]) -> list[str]:
    c = r["cluster_gpus"]
    busy = f"; at most {c['peak_concurrent_gpus']:,} busy at once" if c["peak_concurrent_gpus"] != c["gpus"] else ""
    out = ["", f"Fleet of {c['gpus']:,} GPUs, idle ones included (size: {c['source']}{busy}):",
           f"{'GPU':<8} {'idle W':>7} {'Default MWh':>12} {'Zeus MWh':>10} {'idle: Default':>14} {'Zeus':>6} "
           f"{'saved (fleet)':>14} {'saved (jobs)':>13}"]
    for gpu, g in r["gpus"].items():
        f = g["fleet"]
        out.append(f"{gpu:<8} {_n(f['gpu_idle_w'], 1):>7} {_n(f['default_fleet_mwh'], 2):>12} {_n(f['zeus_fleet_mwh'], 2):>10} "
                   f"{_n(f['default_idle_mwh'], 2):>14} {_n(f['zeus_idle_mwh'], 2):>6} {_pct(f['fleet_energy_saved_pct']):>14} "
                   f"{_pct(f['energy_saved_pct']):>13}")
    out.append("  fleet: jobs + the idle draw of every GPU without a job over the trace's window (--cluster-gpus; docs: Cluster power)")
    return out
