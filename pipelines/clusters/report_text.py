"""The ``whatif`` report for a terminal: counts, the export's GPUs, energy with intervals, measured energy, top groups.

Energies are printed in a unit that fits (``energy_text``): kWh below 1 MWh, MWh below 1 GWh,
GWh above, with three significant digits where they are needed, so a non-zero energy never reads
0.00. An interval is printed in its median's unit, on the line below the medians.
"""

from __future__ import annotations

import textwrap
from typing import Any

from pipelines.terminal import printable_data

#: (unit, kWh in one unit), largest first.
_UNITS: tuple[tuple[str, float], ...] = (("GWh", 1e6), ("MWh", 1e3), ("kWh", 1.0))


def _digits(value: float) -> str:
    """Three significant digits (at least none after the point): 614, 61.4, 6.14, 0.614, 0.000614."""
    size = abs(value)
    if size >= 100 or value == 0:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if size >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def energy_unit(kwh: float) -> tuple[str, float]:
    """(unit, kWh per unit) for an energy of ``kwh``: kWh below 1 MWh, MWh below 1 GWh, else GWh."""
    for unit, scale in _UNITS:
        if abs(kwh) >= scale:
            return unit, scale
    return "kWh", 1.0


def energy_text(kwh: float | None, unit: tuple[str, float] | None = None) -> str:
    """``614 kWh``, ``5.22 MWh``, ``1.31 GWh`` (``unit``: force one); ``-`` for None."""
    if kwh is None:
        return "-"
    name, scale = unit or energy_unit(kwh)
    return f"{_digits(kwh / scale)} {name}"


def interval_text(values: list[float | None] | None, unit: tuple[str, float] | None = None, digits: int | None = None) -> str:
    """``[4.50, 4.70]`` in ``unit`` (an energy in kWh) or with ``digits`` decimals; ``-`` when unknown."""
    if not values or any(v is None for v in values):
        return "-"
    if unit is not None:
        return "[" + ", ".join(_digits(v / unit[1]) for v in values if v is not None) + "]"
    return "[" + ", ".join(f"{v:,.{digits or 0}f}" for v in values if v is not None) + "]"


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


def _states(counts: dict[str, int], limit: int = 6) -> str:
    return ", ".join(f"{n:,} {state}" for state, n in list(counts.items())[:limit])


def _accounting(r: dict[str, Any]) -> list[str]:
    out = [
        f"lines        {r['lines']:>11,} = {r['header_lines']} header + {r['allocations']:,} allocations + {r['steps_skipped']:,} steps "
        f"skipped + {r['quarantined']:,} quarantined",
        f"allocations  {r['allocations']:>11,} = {r['gpu_allocations']:,} GPU + {r['cpu_only']:,} CPU-only + {r['never_started']:,} "
        f"never started + {r['not_ended']:,} not ended (the last three skipped)",
    ]
    if r["never_started"]:
        out.append(f"never started{r['never_started']:>11,} ended before they started: {_states(r['never_started_by_state'])}")
    if r["not_ended"]:
        out.append(f"not ended    {r['not_ended']:>11,} pending, running or held: {_states(r['not_ended_by_state'])}")
    out.append(f"replayed     {r['simulated_jobs']:>11,} COMPLETED GPU jobs in {r['recurring_groups']:,} recurring groups ({_grouping(r)})")
    if r["not_simulated_gpu_allocations"]:
        out.append(f"not replayed {sum(r['not_simulated_gpu_allocations'].values()):>11,} GPU allocations that did not complete: "
                   f"{_states(r['not_simulated_gpu_allocations'])}")
    if r["quarantined"]:
        parts = ", ".join(f"{what} {n:,}" for what, n in list(r["quarantined_by"].items())[:5])
        out.append(f"quarantined  {r['quarantined']:>11,} rows, by column or reason: {parts}")
    return out


def profile_text(key: str, g: dict[str, Any], mode: str) -> str:
    """Where a row's jobs replayed: the GPU, whether its own profile or the fallback, a measured profile's file, its workloads."""
    gpu = g["replayed_on"]
    source = g["profile_source"]
    measured = "" if source == "published" else f", measured: {source}"
    only = f"; workloads {', '.join(g['workloads'])} only" if len(g["workloads"]) < 6 else ""
    if mode != "as-exported":
        return f"{gpu}{measured}{only}"
    kind = "its own profile" if g["own_profile"] else "fallback: no profile of this GPU" if key != "untyped" else "fallback: no type exported"
    return f"{gpu} ({kind}{measured}{only})"


def _types(r: dict[str, Any]) -> list[str]:
    out = ["", f"GPUs as exported: each job on its own GPU's profile where there is one, else on {r['fallback_gpu']} (the fallback); "
               f"{r['fallback_jobs']:,} jobs on the fallback",
           f"  {'exported':<14} {'jobs':>8} {'GPU-hours':>11}  replayed on"]
    for key, g in r["gpus"].items():
        out.append(f"  {key:<14} {g['jobs']:>8,} {_n(g['gpu_hours']):>11}  {profile_text(key, g, r['gpu_mode'])}")
    return out


_COLUMNS = ("GPU", "jobs", "Default", "Zeus", "energy saved", "", "time saved", "Default peak kW", "Zeus peak kW", "headroom")


def _row_cells(key: str, g: dict[str, Any]) -> list[list[str]]:
    """A row's two lines of cells: the medians, then their intervals (in the medians' units)."""
    if g.get("default_kwh") is None:
        return [[key, f"{g['jobs']:,}", "(nothing replayed)", *[""] * (len(_COLUMNS) - 3)]]
    unit, saved_unit = _units(g["default_kwh"]), _units(g["energy_saved_kwh"])
    first = [key, f"{g['jobs']:,}", energy_text(g["default_kwh"], unit), energy_text(g["zeus_kwh"], unit), _pct(g["energy_saved_pct"]),
             energy_text(g["energy_saved_kwh"], saved_unit), _pct(g["time_saved_pct"]), _n(g["default_peak_kw"], 1),
             _n(g["zeus_peak_kw"], 1), _n(g["headroom_gpus"])]
    second = ["", "", interval_text(g["default_kwh_interval"], unit), interval_text(g["zeus_kwh_interval"], unit),
              interval_text(g["energy_saved_pct_interval"], digits=1), interval_text(g["energy_saved_kwh_interval"], saved_unit),
              interval_text(g["time_saved_pct_interval"], digits=1), interval_text(g["default_peak_kw_interval"], digits=1),
              interval_text(g["zeus_peak_kw_interval"], digits=1), interval_text(g["headroom_gpus_interval"])]
    return [first, second]


def _table(lines: list[list[str]]) -> list[str]:
    """Cells padded to their column's width: the first column left-aligned, the others right-aligned."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths, strict=True))).rstrip()
            for line in lines]


def _units(kwh: float | None) -> tuple[str, float] | None:
    return None if kwh is None else energy_unit(kwh)


def _energy(r: dict[str, Any]) -> list[str]:
    n = r["samples"]
    what = ("a single replay (--samples 1)" if n == 1 else
            f"median over {n} samples, {r['interval'].split(' over')[0]} below it; a sample draws each recurring "
            "group's workload and the optimizer's seeds")
    cells = [list(_COLUMNS)]
    for key, g in r["gpus"].items():
        cells += _row_cells(key, g)
    if r.get("total"):
        cells += _row_cells("all GPUs", r["total"])
    out = ["", f"Energy: {what}", *_table(cells)]
    out.append("  peak: highest 5-minute mean cluster power; headroom: more GPUs under Default's peak at Zeus's p99 (docs: Cluster power)")
    if n > 1:
        out.append("  each figure is its own median: Default's and Zeus's medians need not differ by the median saving")
    # a mixed cluster: the money and CO2e of the whole (each row's are in the JSON)
    rows = [("all GPUs", r["total"])] if r.get("total") else list(r["gpus"].items())
    for key, g in rows:
        if "cost_saved" not in g and "co2e_saved_kg" not in g:
            continue
        saved = [f"{energy_text(g['energy_saved_kwh'])} {interval_text(g['energy_saved_kwh_interval'], _units(g['energy_saved_kwh']))}"]
        if "cost_saved" in g:
            saved.append(f"{_n(g['cost_saved'], 2)} {interval_text(g['cost_saved_interval'], digits=2)} at {r['price_per_kwh']:g} per kWh")
        if "co2e_saved_kg" in g:
            t = [None if v is None else v / 1000 for v in g["co2e_saved_kg_interval"]]
            saved.append(f"{_n(g['co2e_saved_kg'] / 1000, 2)} {interval_text(t, digits=2)} t CO2e at {r['grid_gco2_per_kwh']:g} g/kWh")
        out.append(f"saved on {key}: " + ", ".join(saved))
    return out


def _fleet(r: dict[str, Any]) -> list[str]:
    """The jobs plus the cluster's idle GPUs (``pipelines.clusters.capacity``, ``power``), one line per row."""
    c = r.get("cluster_gpus")
    # a mixed cluster: the whole one (each type's fleet is in the JSON)
    rows = [("all GPUs", r["total"])] if r.get("total") else list(r["gpus"].items())
    rows = [(k, g) for k, g in rows if g.get("fleet")]
    if c is None or not rows:
        return []
    busy = f"; at most {c['peak_concurrent_gpus']:,} busy at once" if c["peak_concurrent_gpus"] != c["gpus"] else ""
    cells = [["GPU", "idle W", "Default", "Zeus", "idle: Default", "Zeus", "saved (fleet)", "", "saved (jobs)"]]
    for key, g in rows:
        f = g["fleet"]
        unit = _units(f["default_fleet_kwh"])
        idle_unit = _units(f["default_idle_kwh"])
        cells.append([key, _n(f["gpu_idle_w"], 1), energy_text(f["default_fleet_kwh"], unit), energy_text(f["zeus_fleet_kwh"], unit),
                      energy_text(f["default_idle_kwh"], idle_unit), energy_text(f["zeus_idle_kwh"], idle_unit),
                      _pct(f["fleet_energy_saved_pct"]), interval_text(f["fleet_energy_saved_pct_interval"], digits=1),
                      _pct(f["energy_saved_pct"])])
    per_type = ["  a GPU type's size: its jobs' peak concurrent GPUs; each type's fleet is in the JSON"] if r.get("total") else []
    return ["", f"Fleet of {c['gpus']:,} GPUs, idle ones included (size: {c['source']}{busy}):", *_table(cells),
            "  fleet: jobs + the idle draw of every GPU without a job over the trace's window (--cluster-gpus; docs: Cluster power)",
            *per_type]


def _measured(r: dict[str, Any]) -> list[str]:
    acc = r["energy_accounting"]
    m = r["measured"]
    if m is None:
        return ["", f"Measured energy: {acc.get('note', 'none for the replayed jobs')}"]
    unit = _units(m["modelled_default_kwh"])
    util = f"; GPU utilisation (Slurm's gres/gpuutil) median {m['gpu_util_median_pct']:.0f} %" if m["gpu_util_median_pct"] is not None else ""
    zero = f" ({acc['replayed_jobs_zero']:,} more exported 0: not collected, not counted)" if acc["replayed_jobs_zero"] else ""
    lines = [
        "", f"Measured energy ({m['source']}): {m['jobs']:,} of {m['replayed_jobs']:,} replayed jobs have a measurement{zero}",
        f"  measured by the cluster   {energy_text(m['measured_kwh'])}",
        f"  modelled Default          {energy_text(m['modelled_default_kwh'], unit)} {interval_text(m['modelled_default_kwh_interval'], unit)} "
        f"(the same jobs, modelled on {m['modelled_on']})",
        f"  measured / modelled       per job: median {m['ratio_median']:.2f}, interquartile range {m['ratio_p25']:.2f} to "
        f"{m['ratio_p75']:.2f}{util}",
    ]
    lines += textwrap.wrap(m["caption"], width=118, initial_indent="  ", subsequent_indent="  ")
    return lines


def render(report: dict[str, Any]) -> str:
    """The report for a terminal (see the module docstring); every text from the file (group, GPU type, state) is ``printable``."""
    r = printable_data(report)
    samples = "a single replay" if r["samples"] == 1 else f"{r['samples']} samples, seed {r['seed']}"
    out = [f"What if Zeus had tuned {r['file']} ({r['format']}, times in {r['timezone']}; eta {r['eta']:g}, beta {r['beta']:g}; {samples})",
           "", *_accounting(r)]
    if r["gpu_mode"] == "as-exported":
        out += _types(r)
    elif any(len(g["workloads"]) < 6 or g["profile_source"] != "published" for g in r["gpus"].values()):
        out += ["", "Profiles: " + "; ".join(f"{k}: {profile_text(k, g, r['gpu_mode'])}" for k, g in r["gpus"].items())]
    out += [f"  note: {note}" for note in r["profile_notes"][:5]]
    out += _energy(r)
    out += _fleet(r)
    out += _measured(r)
    if r["top_groups"]:
        where = "as exported" if r["gpu_mode"] == "as-exported" else f"on {r['top_groups_gpu']}"
        draw = " (sample 1: each group's workload by its runtime)" if r["samples"] > 1 else ""
        out += ["", f"The {len(r['top_groups'])} recurring groups that save most {where}{draw}:",
                f"  {'group':<44} {'jobs':>7} {'workload':<13} {'Default':>11} {'saved':>11} {'saved':>8}"]
        for t in r["top_groups"]:
            name = t["group"] if len(t["group"]) <= 44 else t["group"][:43] + "…"
            out.append(f"  {name:<44} {t['jobs']:>7,} {t['workload']:<13} {energy_text(t['default_kwh']):>11} {energy_text(t['saved_kwh']):>11} "
                       f"{_pct(t['saved_pct']):>8}")
    return "\n".join(out)
