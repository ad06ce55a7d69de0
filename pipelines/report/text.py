"""The ``whatif`` report for a terminal: counts, the export's GPUs, energy with intervals, measured energy, top groups.

Energies are printed in a unit that fits (``energy_text``): kWh below 1 MWh, MWh below 1 GWh,
GWh above, with three significant digits where they are needed and never in exponent notation,
so a non-zero energy never reads 0.00 nor 5.4e-05; CO2e in g, kg or t likewise (``co2e_text``).
An interval is printed in its median's unit, on the line below the medians. Counts agree with
their nouns (``plural``: 1 allocation, 2 allocations).
"""

from __future__ import annotations

import math
import textwrap
from pathlib import PurePath
from typing import Any

from pipelines.terminal import printable_data
from pipelines.vocabulary.units import S_PER_H

#: (unit, kWh in one unit), largest first.
_UNITS: tuple[tuple[str, float], ...] = (("GWh", 1e6), ("MWh", 1e3), ("kWh", 1.0))


def _digits(value: float) -> str:
    """Three significant digits (at least none after the point), never an exponent: 614, 61.4, 6.14, 0.614, 0.0000540."""
    size = abs(value)
    if size >= 100 or value == 0:
        return f"{value:,.0f}"
    return f"{value:.{2 - math.floor(math.log10(size))}f}"


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``1 allocation``, ``2 allocations``, ``1,200 jobs`` (``many``: an irregular plural)."""
    return f"{n:,} {noun if n == 1 else many or noun + 's'}"


#: (unit, kg in one unit), largest first.
_CO2E_UNITS: tuple[tuple[str, float], ...] = (("t", 1000.0), ("kg", 1.0), ("g", 0.001))


def co2e_unit(kg: float) -> tuple[str, float]:
    """(unit, kg per unit) for a mass of ``kg``: g below 1 kg, kg below 1 t, else t."""
    return next(((u, f) for u, f in _CO2E_UNITS if abs(kg) >= f), _CO2E_UNITS[-1])


def co2e_text(kg: float | None, unit: tuple[str, float] | None = None) -> str:
    """``68.5 g``, ``4.20 kg``, ``1.31 t`` CO2e by magnitude (three significant digits; ``unit``: force one); ``-`` for None."""
    if kg is None:
        return "-"
    name, scale = unit or co2e_unit(kg)
    return f"{_digits(kg / scale)} {name}"


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


def _and(value: str, interval: str) -> str:
    """A value and its interval, or the value alone where there is no interval (``interval_text``'s ``-``)."""
    return value if interval == "-" else f"{value} {interval}"


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
    return f"{plural(named, 'job')} by user, job name and GPUs, {jobs - named:,} by GPUs and duration"


def _states(counts: dict[str, int], limit: int = 6) -> str:
    return ", ".join(f"{n:,} {state}" for state, n in list(counts.items())[:limit])


def _accounting(r: dict[str, Any]) -> list[str]:
    out = [
        f"lines        {r['lines']:>11,} = {r['header_lines']} header + {plural(r['allocations'], 'allocation')} + "
        f"{plural(r['steps_skipped'], 'step')} skipped + {r['quarantined']:,} quarantined",
        f"allocations  {r['allocations']:>11,} = {r['gpu_allocations']:,} GPU + {r['cpu_only']:,} CPU-only + {r['never_started']:,} "
        f"never started + {r['not_ended']:,} not ended (the last three skipped)",
    ]
    if r["never_started"]:
        out.append(f"never started{r['never_started']:>11,} ended before they started: {_states(r['never_started_by_state'])}")
    if r["not_ended"]:
        out.append(f"not ended    {r['not_ended']:>11,} pending, running or held: {_states(r['not_ended_by_state'])}")
    jobs = "COMPLETED GPU job" if r["simulated_jobs"] == 1 else "COMPLETED GPU jobs"
    out.append(f"replayed     {r['simulated_jobs']:>11,} {jobs} in {plural(r['recurring_groups'], 'recurring group')} ({_grouping(r)})")
    if r["not_simulated_gpu_allocations"]:
        n = sum(r["not_simulated_gpu_allocations"].values())
        what = "GPU allocation that did" if n == 1 else "GPU allocations that did"
        out.append(f"not replayed {n:>11,} {what} not complete: {_states(r['not_simulated_gpu_allocations'])}")
    u = r["utilization"]
    if u["low_util_jobs"]:
        out.append(f"idle         {u['low_util_jobs']:>11,} COMPLETED GPU {'job' if u['low_util_jobs'] == 1 else 'jobs'} below "
                   f"{u['threshold_pct']:g} % GPU utilisation (--min-gpu-util): idle allocations, not replayed; "
                   f"{_n(u['low_util_gpu_hours'], 1)} GPU-hours, {energy_text(u['low_util_kwh'])} at the idle draw")
        if u.get("low_util_top"):
            shown = len(u["low_util_top"])
            which = "all" if shown == u["low_util_jobs"] else f"the {shown} of most GPU-hours"
            listed = "; ".join(f"{t['job_id']} ({t['user'] or '?'}, {_n(t['gpu_hours'], 1)} GPU-hours, {t['gpu_util_pct']:.0f} %)"
                               for t in u["low_util_top"])
            out += textwrap.wrap(f"{'':13}{which} (job ID, user, GPU-hours, utilisation): {listed}", width=158, subsequent_indent=" " * 13)
    if r.get("analogue_rule"):
        groups = [(k, g["analogues"]) for k, g in r["gpus"].items() if g.get("analogues")]
        counts = ", ".join(f"{k} {a['groups_by_utilisation']:,} of {a['groups_by_utilisation'] + a['groups_by_runtime']:,}" for k, a in groups)
        out += textwrap.wrap(f"workloads    by GPU utilisation for the groups that have one ({counts}): {r['analogue_rule']}", width=158,
                             subsequent_indent=" " * 13)
    if u["source"] is None:
        out.append(f"utilisation  {'none':>11} in the export: every COMPLETED GPU job is taken as a training run (TRESUsageInTot tells idle "
                   "ones apart)")
    if r["quarantined"]:
        parts = ", ".join(f"{what} {n:,}" for what, n in list(r["quarantined_by"].items())[:5])
        out.append(f"quarantined  {r['quarantined']:>11,} {'row' if r['quarantined'] == 1 else 'rows'}, by column or reason: {parts}")
    return out


def profile_text(key: str, g: dict[str, Any], mode: str) -> str:
    """Where a row's jobs replayed: the GPU, whether its own profile or the fallback, a measured profile's file, its workloads."""
    gpu = g["replayed_on"]
    source = g["profile_source"]
    if g.get("power_limit_only"):
        return f"{gpu}: {source}"
    measured = "" if source == "published" else f", measured: {source}"
    only = f"; workloads {', '.join(g['workloads'])} only" if len(g["workloads"]) < 6 else ""
    if mode != "as-exported":
        return f"{gpu}{measured}{only}"
    kind = "its own profile" if g["own_profile"] else "fallback: no profile of this GPU" if key != "untyped" else "fallback: no type exported"
    return f"{gpu} ({kind}{measured}{only})"


def _types(r: dict[str, Any]) -> list[str]:
    st = r.get("stand_ins") or {}
    # the stand-ins (the fallback's jobs) are said under the title: here only how their power was taken
    head = [] if st.get("jobs") else [
        f"GPUs as exported: each job on its own GPU's profile where there is one, else on {r['fallback_gpu']} (the fallback); "
        f"{plural(r['fallback_jobs'], 'job')} on the fallback"]
    power = f" ({st['power_text']})" if st.get("power_text") else ""
    out = ["", *head, f"  {'exported':<14} {'jobs':>8} {'GPU-hours':>11}  replayed on{power}"]
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
    if g.get("interval_note"):  # no interval: said above the table (a single replay) or below it (``_no_interval``)
        return [first]
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


def _no_interval(r: dict[str, Any]) -> list[str]:
    """One line naming the rows without an interval and why (a single replay is said above the table)."""
    rows = [*r["gpus"].items(), *([("all GPUs", r["total"])] if r.get("total") else [])]
    notes = [f"{key} ({g['interval_note']})" for key, g in rows if g.get("interval_note") and not g["interval_note"].startswith("a single")]
    return [f"  no interval: {'; '.join(notes)}"] if notes else []


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
    out = ["", f"Energy: {what}", *_table(cells), *_no_interval(r)]
    medians = "; each figure its own median" if n > 1 else ""
    out.append(f"  peak: highest 5-minute mean cluster power; headroom: more GPUs under Default's peak at Zeus's p99{medians}")
    # a mixed cluster: the money and CO2e of the whole (each row's are in the JSON)
    rows = [("all GPUs", r["total"])] if r.get("total") else list(r["gpus"].items())
    for key, g in rows:
        if "cost_saved" not in g and "co2e_saved_kg" not in g:
            continue
        saved = [_and(energy_text(g["energy_saved_kwh"]), interval_text(g["energy_saved_kwh_interval"], _units(g["energy_saved_kwh"])))]
        if "cost_saved" in g:
            cur = currency(r["prices"])
            saved.append(f"{_and(_n(g['cost_saved'], 2), interval_text(g['cost_saved_interval'], digits=2))}{' ' + cur if cur else ''} "
                         f"{rate_text(r['prices'], f'{cur} per kWh'.lstrip())}{'' if cur else ' ' + NO_CURRENCY}")
        if "co2e_saved_kg" in g:
            saved.append(f"{_co2e(g, 'co2e_saved_kg')} CO2e {rate_text(r['grid'], 'g/kWh')}")
        out.append(f"saved on {key}: " + ", ".join(saved))
        if "co2e_saved_kg" in g:
            out.append(f"  CO2e: Default {_co2e(g, 'default_co2e_kg')}, Zeus {_co2e(g, 'zeus_co2e_kg')}")
        out += [f"  {line}" for line in split_lines(r, g)]
        if g.get("carbon_aware") and "co2e_saved_kg" in g["carbon_aware"]:
            a, e = g["carbon_aware"], r["carbon_aware"]
            out.append(f"  carbon-aware Zeus (eta {e['eta_clean']:g} at the cleanest hour to {e['eta_dirty']:g} at the dirtiest): CO2e saved "
                       f"{_co2e(a, 'co2e_saved_kg')} (plain Zeus {_co2e(g, 'co2e_saved_kg')}), energy saved "
                       f"{_and(_pct(a['energy_saved_pct']), interval_text(a['energy_saved_pct_interval'], digits=1))}, time saved "
                       f"{_and(_pct(a['time_saved_pct']), interval_text(a['time_saved_pct_interval'], digits=1))}")
            out.append(f"    {aware_added(a)}")
    out += [f"  {line}" for line in series_notes(r)]
    return out + _steady(r)


#: Where a series' zone came from, in the report's words.
_ZONE_SOURCES = {"header": "from the header", "assumed": "assumed: --series-timezone names it", "--timezone": "the export's --timezone"}


#: Said once beside the money figures of a price that names no currency (a bare --price-per-kwh, a price_per_kwh file).
NO_CURRENCY = "(no currency given: --price-unit EUR names it)"


def currency(prices: dict[str, Any]) -> str:
    """The currency of every money figure: the price's (``EUR``); empty where none was given (``NO_CURRENCY`` says so)."""
    return str(prices.get("currency") or "")


def _money(value: float | None, cur: str) -> str:
    """A sum of money in its currency, to 3 significant digits: ``0.0128 EUR``."""
    return "-" if value is None else f"{_digits(value)} {cur}".rstrip()


def split_lines(r: dict[str, Any], g: dict[str, Any]) -> list[str]:
    """The CO2e and cost saved as their energy part and their timing part (``whatif._split``; each its median over the
    samples: the parts add up to the saving for a single sample), where a series was given (a flat value has no timing part)."""
    out = []
    if g.get("co2e_saved_by_energy_kg") is not None and "file" in r["grid"]:
        timing = g["co2e_saved_by_timing_kg"]
        out.append(f"CO2e saved {co2e_text(g['co2e_saved_kg'])} = {co2e_text(g['co2e_saved_by_energy_kg'])} by energy (the kWh saved at "
                   f"the {_digits(g['default_met_gco2_per_kwh'])} g/kWh Default's energy met) {'-' if timing < 0 else '+'} "
                   f"{co2e_text(abs(timing))} by timing (Zeus's energy met {_digits(g['zeus_met_gco2_per_kwh'])} g/kWh: its runs, longer or shorter, meet "
                   "other hours)")
    if g.get("cost_saved_by_energy") is not None and "file" in r["prices"]:
        cur = currency(r["prices"])
        timing = g["cost_saved_by_timing"]
        out.append(f"cost saved {_money(g['cost_saved'], cur)} = {_money(g['cost_saved_by_energy'], cur)} by energy (at the "
                   f"{_money(g['default_met_price_per_kwh'], cur)} per kWh Default's energy met) {'-' if timing < 0 else '+'} "
                   f"{_money(abs(timing), cur)} "
                   f"by timing (Zeus's met {_money(g['zeus_met_price_per_kwh'], cur)} per kWh)")
    if out and r["samples"] > 1:
        out[-1] += "; each part its median over the samples"
    return out


def aware_added(a: dict[str, Any]) -> str:
    """What the carbon-aware Zeus adds over plain Zeus, in CO2e and in the jobs' time."""
    hours = a["hours_added_over_zeus"]
    return (f"over plain Zeus it saves {co2e_text(a['co2e_added_over_zeus_kg'])} more CO2e ({co2e_text(a['co2e_saved_by_energy_kg'])} "
            f"by energy and {co2e_text(a['co2e_saved_by_timing_kg'])} by timing of its own saving) and its jobs run "
            f"{_n(abs(hours), 1)} h {'longer' if hours >= 0 else 'shorter'} in all")


def series_notes(r: dict[str, Any]) -> list[str]:
    """What the report says of each intensity or price given: the format and column read, the zone of its times, a unit
    converted, gaps, what --fill filled, its year against the jobs', an implausible price."""
    out = []
    for key, what in (("grid", "grid intensity"), ("prices", "prices")):
        rate = r.get(key)
        if not rate:
            continue
        name = rate.get("file") or rate.get("region") or rate.get("source")
        if "file" in rate and "format" in rate:
            read = [f"{what} {name}: {rate['format']}"]
            if "label" in rate:
                read.append(f"{rate['unit']}: {rate.get('note') or 'each period at its first tier’s rate + adj'}")
            elif key == "grid":
                default = " (GHG Protocol scope 2, location-based; --grid-column lca for life-cycle)" if rate["column"] == "direct" else ""
                read.append(f"column {rate['column']}{default}")
            else:
                read.append(f"{rate['unit']} as {currency(rate) or 'money'} per kWh; {plural(rate['negative_points'], 'negative price')} kept")
            zone = _ZONE_SOURCES.get(rate["timezone_source"], rate["timezone_source"])
            read.append(f"{'its schedule' if 'label' in rate else 'times without an offset'} in {rate['timezone']} ({zone})")
            out.append(", ".join(read))
        gaps = rate.get("gaps")
        if gaps and gaps["count"]:
            one = gaps["count"] == 1
            out.append(f"{name}: {plural(gaps['count'], 'gap')} (the longest {_n(gaps['longest_h'], 1)} h): {_n(gaps['job_hours'], 1)} "
                       f"job-hours fell in {'it' if one else 'them'}, at the reading before {'it' if one else 'each'}")
        filled = (rate.get("filled_before_job_hours") or 0.0, rate.get("filled_after_job_hours") or 0.0)
        if any(filled):
            out.append(f"{name}: --fill priced {_n(filled[0], 1)} job-hours before its first reading at its first value and "
                       f"{_n(filled[1], 1)} after its end at its last")
        if rate.get("years_note"):
            out.append(f"{name}: {rate['years_note']}")
        if rate.get("warning"):
            out.append(f"Warning: {name}: {rate['warning']}")
    return out


def _co2e(g: dict[str, Any], name: str) -> str:
    """A CO2e figure (kg in the report) with its interval, in the unit that fits its median."""
    unit = co2e_unit(g[name])
    low, high = g[f"{name}_interval"]
    return co2e_text(g[name], unit) + ("" if low is None or high is None else f" [{_digits(low / unit[1])}, {_digits(high / unit[1])}]")


def rate_text(rate: dict[str, Any], per: str) -> str:
    """Which intensity or price: ``at 300 g/kWh``, ``at DE's 381 g/kWh (2023)``, ``over grid.csv (hourly, 1,608 points)``."""
    if "label" in rate:  # an OpenEI tariff
        return f"over {rate['file']} (OpenEI {rate['label']}: {rate['utility']}, {rate['name']}; hours in {rate['timezone']})"
    if "file" in rate:
        step = rate["step_s"]
        every = "hourly" if step == S_PER_H else f"every {step / 60:g} min" if step < S_PER_H else f"every {step / S_PER_H:g} h"
        return f"over {rate['file']} ({every}, {rate['points']:,} points, {rate['span']})"
    value = rate.get("gco2_per_kwh", rate.get("price_per_kwh"))
    if "region" in rate:
        return f"at {rate['region']}'s {_digits(rate['gco2_per_kwh'])} {per} ({rate['name']}, {rate['year']}; docs: Carbon)"
    return f"at {value:g} {per}"


def _steady(r: dict[str, Any]) -> list[str]:
    """The saving once every group's optimizer has converged, per row and for the whole, beside the period's."""
    rows = [*r["gpus"].items(), *([("all GPUs", r["total"])] if r.get("total") else [])]
    parts = [f"{key} {_and(_pct(g['steady_state_saved_pct']), interval_text(g['steady_state_saved_pct_interval'], digits=1))}"
             for key, g in rows if g.get("steady_state_saved_pct") is not None]
    if not parts:
        return []
    out = [*textwrap.wrap(f"steady state, energy saved: {'; '.join(parts)}", width=158, subsequent_indent="  "),
           *textwrap.wrap(r["steady_state"], width=158, initial_indent="  ", subsequent_indent="  ")]
    if r.get("horizon_days") is not None:
        ahead = [f"{key} {_and(_pct(g['horizon_saved_pct']), interval_text(g['horizon_saved_pct_interval'], digits=1))}, "
                 f"{_and(energy_text(g['horizon_saved_kwh']), interval_text(g['horizon_saved_kwh_interval'], _units(g['horizon_saved_kwh'])))}"
                 for key, g in rows if g.get("horizon_saved_pct") is not None]
        out += textwrap.wrap(f"over {r['horizon_days']:g} days at the export's recurrence rate (--horizon), energy saved: {'; '.join(ahead)}",
                             width=158, subsequent_indent="  ")
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
    return ["", f"Fleet of {plural(c['gpus'], 'GPU')}, idle ones included (size: {c['source']}{busy}):", *_table(cells),
            "  fleet: jobs + the idle draw of every GPU without a job over the trace's window (--cluster-gpus; docs: Cluster power)",
            *per_type]


def meter_text(acc: dict[str, Any]) -> str | None:
    """What ``--meter`` did (``energy_accounting``): the jobs and GPU-hours metered and modelled, or why the meter is compared
    only; None without ``--meter``."""
    if acc.get("meter") == "gpu":
        jobs, hours = acc["metered_jobs"] + acc["modelled_jobs"], acc["metered_gpu_hours"] + acc["modelled_gpu_hours"]
        return (f"anchored to the meter (--meter gpu): {acc['metered_jobs']:,} of {plural(jobs, 'job')}, {_n(acc['metered_gpu_hours'])} of "
                f"{_n(hours)} GPU-hours metered: their Default energy {energy_text(acc['metered_kwh'])} as metered, Zeus's that times "
                f"the replay's ratio; {acc['modelled_jobs']:,} modelled ({_n(acc['modelled_gpu_hours'])} GPU-hours, Default "
                f"{energy_text(acc['modelled_kwh'])})")
    return acc.get("meter_note")


def _measured(r: dict[str, Any]) -> list[str]:
    acc = r["energy_accounting"]
    m = r["measured"]
    metered = meter_text(acc)
    anchored = [] if metered is None else textwrap.wrap(metered, width=158, initial_indent="  ", subsequent_indent="    ")
    if m is None:
        return ["", f"Measured energy: {acc.get('note', 'none for the replayed jobs')}", *anchored]
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
        *anchored,
    ]
    if len(m.get("by_row") or {}) > 1:
        lines += textwrap.wrap("per exported GPU type, median (interquartile range): " + "; ".join(
            f"{key} {b['ratio_median']:.2f} ({b['ratio_p25']:.2f} to {b['ratio_p75']:.2f}, {plural(b['jobs'], 'job')})"
            for key, b in m["by_row"].items()), width=158, initial_indent="  ", subsequent_indent="    ")
    lines += textwrap.wrap(m["caption"], width=118, initial_indent="  ", subsequent_indent="  ")
    return lines


#: Each energy model in a few words (``pipelines.clusters.anchoring``; --energy).
_MODELS = {"anchored": "anchored to the exported GPU-hours", "runtime-ratio": "sized by runtime_ratio as the Zeus artifact, not by the "
           "exported GPU-hours"}


def render(report: dict[str, Any]) -> str:
    """The report for a terminal (see the module docstring); every text from the file (group, GPU type, state) is ``printable``."""
    r = printable_data(report)
    samples = "a single replay" if r["samples"] == 1 else f"{r['samples']} samples, seed {r['seed']}"
    out = []
    if r["timezone_source"] == "assumed":
        out.append(f"Times read as {r['timezone']} (assumed): sacct prints the cluster's local clock; pass --timezone (e.g. "
                   "--timezone Europe/Berlin) if it is not UTC")
    out += [f"What if Zeus had tuned {PurePath(r['file']).name} ({r['format']}, times in {r['timezone']}; eta {r['eta']:g}, beta {r['beta']:g}; {samples}; "
            f"energy {_MODELS[r['energy_model']]})"]
    if (r.get("stand_ins") or {}).get("jobs"):
        out += textwrap.wrap(f"Stand-ins: {r['stand_ins']['text']}", width=158, subsequent_indent="  ")
    out += ["", *_accounting(r)]
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
        by = "its utilisation, else its runtime" if r.get("analogue_rule") else "its runtime"
        draw = f" (sample 1: each group's workload by {by})" if r["samples"] > 1 else ""
        out += ["", f"The {len(r['top_groups'])} recurring groups that save most {where}{draw}:",
                f"  {'group':<44} {'jobs':>7} {'workload':<13} {'Default':>11} {'saved':>11} {'saved':>8}"]
        for t in r["top_groups"]:
            name = t["group"] if len(t["group"]) <= 44 else t["group"][:43] + "…"
            out.append(f"  {name:<44} {t['jobs']:>7,} {t['workload']:<13} {energy_text(t['default_kwh']):>11} {energy_text(t['saved_kwh']):>11} "
                       f"{_pct(t['saved_pct']):>8}")
    return "\n".join(out)
