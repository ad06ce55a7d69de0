"""The ``whatif`` report as one self-contained HTML file, for people who will not read a terminal.

``render(report, power, provenance)`` returns the page: the line accounting, the savings table
(each median with its interval below it), the plot of energy saved per GPU with its interval, the
cluster power timeline and the load-duration curve of sample 1 (``pipelines.report.figures``), the
fleet with its idle GPUs, the measured energy where the export has it, the recurring groups that
save most, and how the report was made (the file's name and sha256, the options, the package
version, the date). The numbers are the report's, the same as ``--json`` prints.

Self-contained: the images are PNGs embedded as base64 data URIs, the style is inline, and there is
no script, no font and no link to fetch; a Content-Security-Policy forbids any fetch but the
embedded images. Every text that comes from the export (file name, GPU types, groups: users and
job names, states, quarantine reasons) is escaped with ``html.escape``.

Every number shown is a ``<span data-path=... data-value=... data-scale=...>``: ``data-path`` is
its place in the report's JSON (a JSON array of keys), ``data-value`` the value there (JSON), and
the visible text the value divided by ``data-scale`` (the unit shown: 1000 for MWh of a kWh
figure), rounded; the browser test reads them back against ``--json``.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.figures.errors import NoData
from pipelines.home.atomic import write_text_atomic
from pipelines.home.outputs import OutputKind
from pipelines.ingest.grid import Rate
from pipelines.report.text import (
    NO_CURRENCY,
    aware_added,
    co2e_text,
    co2e_unit,
    currency,
    energy_text,
    energy_unit,
    profile_text,
    rate_text,
    series_notes,
    split_lines,
)
from pipelines.terminal import printable

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The distribution whose version the report names.
DISTRIBUTION = "gpu-energy-pipelines"
#: Inches of a figure -> CSS pixels on the page (figures are drawn at print size; 1.5 x reads well on screen).
CSS_PX_PER_IN = 150
Path_ = Sequence[str | int]


@dataclass(frozen=True)
class Provenance:
    """How a report was made: the export (its name as given and sha256), the options, the package version and the date (UTC)."""

    file: str
    sha256: str | None
    options: Mapping[str, str]
    command: str | None = None
    version: str = ""
    created: str = ""

    @staticmethod
    def now(file: str, sha256: str | None, options: Mapping[str, str], command: str | None = None) -> Provenance:
        """A provenance stamped with this package's version and the current time."""
        return Provenance(file, sha256, dict(options), command, package_version(), datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"))


def package_version() -> str:
    """This package's installed version (``unknown`` when it is not installed, e.g. run from a bare checkout)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


# ---------------------------------------------------------------------------------------------
# numbers: each one a span that names its place in the report


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def num(path: Path_, value: float | None, text: str | None = None, scale: float = 1.0, digits: int = 0, suffix: str = "") -> str:
    """``value`` (at ``path`` in the report) shown as ``text``, else with ``digits`` decimals and thousands separators."""
    shown = "–" if value is None else text if text is not None else f"{value / scale:,.{digits}f}"
    return (f'<span class="n" data-path="{_e(json.dumps(list(path)))}" data-value="{_e(json.dumps(value))}" '
            f'data-scale="{scale!r}">{_e(shown)}{_e(suffix) if value is not None else ""}</span>')


def energy(path: Path_, kwh: float | None, unit: tuple[str, float] | None = None) -> str:
    """An energy (kWh in the report) in ``unit`` or the one that fits: ``614 kWh``, ``5.22 MWh``."""
    if kwh is None:
        return num(path, None)
    unit = unit or energy_unit(kwh)
    return num(path, kwh, energy_text(kwh, unit), scale=unit[1])


def pct(path: Path_, value: float | None) -> str:
    """A percentage with one decimal: ``12.3 %``."""
    return num(path, value, digits=1, suffix=" %")


#: Shows a number at a path: ``show(path, value, bare)``; ``bare``: without its unit (an interval's ends, in the median's unit).
Show = Callable[[Path_, float | None, bool], str]


def interval(path: Path_, values: Sequence[float | None] | None, show: Show) -> str:
    """``[low, high]``, each shown by ``show`` without its unit; ``–`` when unknown."""
    if not values:
        return "–"
    return f'<span class="iv">[{show([*path, 0], values[0], True)}, {show([*path, 1], values[1], True)}]</span>'


def _with_interval(g: Mapping[str, Any], base: Path_, name: str, show: Show, sep: str = "<br>", why: bool = True) -> str:
    """A figure and its interval; an interval the report does not give (``[–, –]``) with the row's reason beside it (``why``;
    the savings table says it once, beside the row's name)."""
    values = g.get(f"{name}_interval")
    iv = interval([*base, f"{name}_interval"], values, show)
    if why and values and all(v is None for v in values) and g.get("interval_note"):
        iv += f" <span class='iv'>({_e(g['interval_note'])})</span>"
    return f'{show([*base, name], g.get(name), False)}{sep}{iv}'


def _energy_in(unit: tuple[str, float] | None) -> Show:
    def show(path: Path_, kwh: float | None, bare: bool) -> str:
        if kwh is None or not bare:
            return energy(path, kwh, unit)
        name, scale = unit or energy_unit(kwh)
        return num(path, kwh, energy_text(kwh, (name, scale)).removesuffix(f" {name}"), scale=scale)

    return show


def _decimals(digits: int, suffix: str = "") -> Show:
    return lambda path, value, bare: num(path, value, digits=digits, suffix="" if bare else suffix)


_PCT = _decimals(1, " %")


def _co2e_in(kg: float | None) -> Show:
    """CO2e (kg in the report) in the unit that fits ``kg`` (g, kg or t: ``co2e_text``), an interval's ends in the same unit."""
    name, scale = co2e_unit(kg or 0.0)

    def show(path: Path_, value: float | None, bare: bool) -> str:
        if value is None:
            return num(path, None)
        text = co2e_text(value, (name, scale))
        return num(path, value, text.removesuffix(f" {name}") if bare else text, scale=scale)

    return show


# ---------------------------------------------------------------------------------------------
# images


def png_uri(fig: Figure) -> tuple[str, float]:
    """(the figure as a ``data:image/png;base64`` URI at the theme's dpi, its width in inches)."""
    from pipelines.figures.style import PNG_DPI

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=PNG_DPI)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii"), float(fig.get_figwidth())


def _figure(draw: Callable[[], tuple[Figure, pl.DataFrame]], alt: str, caption: str) -> str:
    try:
        fig, _ = draw()
    except NoData as exc:
        return f'<p class="note">{_e(alt)}: nothing to draw ({_e(exc)}).</p>'
    uri, width_in = png_uri(fig)
    return (f'<figure><img src="{uri}" alt="{_e(alt)}" style="width:{round(width_in * CSS_PX_PER_IN)}px">'
            f"<figcaption>{caption}</figcaption></figure>")


# ---------------------------------------------------------------------------------------------
# sections


def _states(path: Path_, counts: Mapping[str, int]) -> str:
    return ", ".join(f"{num([*path, state], n)} {_e(state)}" for state, n in counts.items()) or "none"


def _accounting(r: Mapping[str, Any]) -> str:
    rows = [
        ("lines", f"{num(['lines'], r['lines'])} = {num(['header_lines'], r['header_lines'])} header + "
                  f"{num(['allocations'], r['allocations'])} allocations + {num(['steps_skipped'], r['steps_skipped'])} steps skipped + "
                  f"{num(['quarantined'], r['quarantined'])} quarantined"),
        ("allocations", f"{num(['gpu_allocations'], r['gpu_allocations'])} GPU + {num(['cpu_only'], r['cpu_only'])} CPU-only + "
                        f"{num(['never_started'], r['never_started'])} never started + {num(['not_ended'], r['not_ended'])} not ended "
                        "(the last three are not replayed)"),
    ]
    if r["never_started"]:
        rows.append(("never started", "ended before they started: " + _states(["never_started_by_state"], r["never_started_by_state"])))
    if r["not_ended"]:
        rows.append(("not ended", "pending, running or held: " + _states(["not_ended_by_state"], r["not_ended_by_state"])))
    rows.append(("replayed", f"{num(['simulated_jobs'], r['simulated_jobs'])} COMPLETED GPU jobs in "
                             f"{num(['recurring_groups'], r['recurring_groups'])} recurring groups "
                             f"({num(['jobs_grouped_by_user_and_name'], r['jobs_grouped_by_user_and_name'])} of them grouped by user, "
                             "job name and GPUs)"))
    if r["not_simulated_gpu_allocations"]:
        rows.append(("not replayed", "GPU allocations that did not complete: "
                     + _states(["not_simulated_gpu_allocations"], r["not_simulated_gpu_allocations"])))
    if r["quarantined"]:
        rows.append(("quarantined", "rows, by column or reason: " + _states(["quarantined_by"], r["quarantined_by"])))
    body = "".join(f"<tr><th scope='row'>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<section id="accounting"><h2>What the export holds</h2><table class="kv">{body}</table></section>'


def _types(r: Mapping[str, Any]) -> str:
    head = "<tr><th>exported</th><th>jobs</th><th>GPU-hours</th><th class='text'>replayed on</th></tr>"
    body = "".join(f"<tr><td class='key'>{_e(k)}</td><td>{num(['gpus', k, 'jobs'], g['jobs'])}</td>"
                   f"<td>{num(['gpus', k, 'gpu_hours'], g['gpu_hours'])}</td><td class='text'>{_e(profile_text(k, g, r['gpu_mode']))}</td></tr>"
                   for k, g in r["gpus"].items())
    lede = (f"Each job replays on its own GPU's profile where there is one, else on {_e(r['fallback_gpu'])} (the fallback): "
            f"{num(['fallback_jobs'], r['fallback_jobs'])} jobs on the fallback.")
    return f'<h3>The export\'s GPUs</h3><p>{lede}</p><table class="grid">{head}{body}</table>'


_SAVINGS_HEAD = ("GPU", "jobs", "Default", "Zeus", "energy saved", "energy saved", "time saved", "Default peak", "Zeus peak", "headroom (GPUs)")


def _saving_row(label: str, base: Path_, g: Mapping[str, Any]) -> str:
    if g.get("default_kwh") is None:
        return f"<tr><td class='key'>{_e(label)}</td><td>{num([*base, 'jobs'], g['jobs'])}</td><td colspan='8' class='text'>nothing replayed</td></tr>"
    unit, saved = energy_unit(g["default_kwh"]), energy_unit(g["energy_saved_kwh"])
    cells = [
        num([*base, "jobs"], g["jobs"]),
        _with_interval(g, base, "default_kwh", _energy_in(unit), why=False),
        _with_interval(g, base, "zeus_kwh", _energy_in(unit), why=False),
        _with_interval(g, base, "energy_saved_pct", _PCT, why=False),
        _with_interval(g, base, "energy_saved_kwh", _energy_in(saved), why=False),
        _with_interval(g, base, "time_saved_pct", _PCT, why=False),
        _with_interval(g, base, "default_peak_kw", _decimals(1, " kW"), why=False),
        _with_interval(g, base, "zeus_peak_kw", _decimals(1, " kW"), why=False),
        _with_interval(g, base, "headroom_gpus", _decimals(0), why=False),
    ]
    note = g.get("interval_note")
    why = f"<br><span class='iv'>no interval: {_e(note)}</span>" if note and not note.startswith("a single") else ""
    return f"<tr><td class='key'>{_e(label)}{why}</td>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _money(r: Mapping[str, Any]) -> str:
    rows = [("all GPUs", ["total"], r["total"])] if r.get("total") else [(k, ["gpus", k], g) for k, g in r["gpus"].items()]
    out = []
    for label, base, g in rows:
        parts = []
        if "cost_saved" in g:
            cur = currency(r["prices"])
            parts.append(f"{_with_interval(g, base, 'cost_saved', _decimals(2), ' ')} {_e(cur)} "
                         f"{_e(rate_text(r['prices'], f'{cur} per kWh'.lstrip()))}{'' if cur else ' ' + _e(NO_CURRENCY)}")
        if "co2e_saved_kg" in g:
            co2e = _co2e_in(g["co2e_saved_kg"])
            parts.append(f"{_with_interval(g, base, 'co2e_saved_kg', co2e, ' ')} CO2e {_e(rate_text(r['grid'], 'g/kWh'))} (Default "
                         f"{_with_interval(g, base, 'default_co2e_kg', co2e, ' ')}, Zeus {_with_interval(g, base, 'zeus_co2e_kg', co2e, ' ')})")
        if parts:
            out.append(f"<li>saved on {_e(label)}: {'; '.join(parts)}</li>")
        out += [f"<li>{_e(line)}</li>" for line in split_lines(dict(r), dict(g))]
        aware = g.get("carbon_aware")
        if aware and "co2e_saved_kg" in aware:
            e, ab = r["carbon_aware"], [*base, "carbon_aware"]
            clean, dirty = (num(["carbon_aware", k], e[k], text=f"{e[k]:g}") for k in ("eta_clean", "eta_dirty"))
            out.append(f"<li>carbon-aware Zeus on {_e(label)} (eta {clean} at the cleanest hour to {dirty} at the "
                       f"dirtiest): CO2e saved {_with_interval(aware, ab, 'co2e_saved_kg', _co2e_in(aware['co2e_saved_kg']), ' ')}, "
                       f"energy saved {_with_interval(aware, ab, 'energy_saved_pct', _PCT, ' ')}, time saved "
                       f"{_with_interval(aware, ab, 'time_saved_pct', _PCT, ' ')}; {_e(aware_added(aware))}</li>")
    out += [f"<li>{_e(line)}</li>" for line in series_notes(dict(r))]
    return f"<ul class='money'>{''.join(out)}</ul>" if out else ""


def _savings(r: Mapping[str, Any], figure: str) -> str:
    n = r["samples"]
    what = ("a single replay (--samples 1): no interval" if n == 1 else
            f"each figure is the median over {n} samples, with its {_e(r['interval'].split(' over')[0])} below it; a sample draws "
            "each recurring group's workload and the optimizer's seeds")
    head = "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in _SAVINGS_HEAD) + "</tr>"
    rows = [_saving_row(k, ["gpus", k], g) for k, g in r["gpus"].items()]
    if r.get("total"):
        rows.append(_saving_row("all GPUs", ["total"], r["total"]))
    notes = ("peak: the highest 5-minute mean cluster power; headroom: GPUs more under Default's peak at Zeus's p99. "
             + ("Each figure is its own median: Default's and Zeus's medians need not differ by the median saving." if n > 1 else ""))
    return (f'<section id="savings"><h2>Energy: Default vs Zeus</h2><p>{what}.</p>'
            f'<div class="wide"><table class="grid savings">{head}{"".join(rows)}</table></div><p class="note">{notes}</p>{_money(r)}'
            f"{_steady(r)}{figure}</section>")


def _steady(r: Mapping[str, Any]) -> str:
    """The steady-state saving per row (and the horizon's, when asked), beside the period's."""
    rows = [(k, ["gpus", k], g) for k, g in r["gpus"].items()] + ([("all GPUs", ["total"], r["total"])] if r.get("total") else [])
    days = r.get("horizon_days")
    horizon = "" if days is None else f"; over {num(['horizon_days'], days, text=f'{days:g}')} days at the export's recurrence rate: "
    items = [f"<li>{_e(label)}: {_with_interval(g, base, 'steady_state_saved_pct', _PCT, ' ')}"
             + (f"{horizon}{_with_interval(g, base, 'horizon_saved_pct', _PCT, ' ')}, "
                f"{_with_interval(g, base, 'horizon_saved_kwh', _energy_in(energy_unit(g['horizon_saved_kwh'])), ' ')}"
                if g.get("horizon_saved_pct") is not None else "")
             + "</li>" for label, base, g in rows if g.get("steady_state_saved_pct") is not None]
    if not items:
        return ""
    return (f"<h3>Steady state: energy saved once every group's optimizer has converged</h3><ul>{''.join(items)}</ul>"
            f"<p class='note'>{_e(r['steady_state'])}.</p>")


def _fleet(r: Mapping[str, Any]) -> str:
    c = r.get("cluster_gpus")
    rows = [("all GPUs", ["total"], r["total"])] if r.get("total") else [(k, ["gpus", k], g) for k, g in r["gpus"].items()]
    rows = [(k, b, g) for k, b, g in rows if g.get("fleet")]
    if c is None or not rows:
        return ""
    head = "<tr><th>GPU</th><th>idle draw</th><th>Default</th><th>Zeus</th><th>idle: Default</th><th>idle: Zeus</th>" \
           "<th>saved (fleet)</th><th>saved (jobs)</th></tr>"
    body = []
    for label, base, g in rows:
        f, fb = g["fleet"], [*base, "fleet"]
        unit, idle = energy_unit(f["default_fleet_kwh"]), energy_unit(f["default_idle_kwh"])
        cells = [num([*fb, "gpu_idle_w"], f["gpu_idle_w"], digits=1, suffix=" W"), energy([*fb, "default_fleet_kwh"], f["default_fleet_kwh"], unit),
                 energy([*fb, "zeus_fleet_kwh"], f["zeus_fleet_kwh"], unit), energy([*fb, "default_idle_kwh"], f["default_idle_kwh"], idle),
                 energy([*fb, "zeus_idle_kwh"], f["zeus_idle_kwh"], idle), _with_interval(f, fb, "fleet_energy_saved_pct", _PCT),
                 pct([*fb, "energy_saved_pct"], f["energy_saved_pct"])]
        body.append(f"<tr><td class='key'>{_e(label)}</td>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    busy = f"; at most {num(['cluster_gpus', 'peak_concurrent_gpus'], c['peak_concurrent_gpus'])} busy at once"
    return (f'<section id="fleet"><h2>The fleet, idle GPUs included</h2><p>{num(["cluster_gpus", "gpus"], c["gpus"])} GPUs '
            f'(size: {_e(c["source"])}{busy}). Fleet energy: the jobs plus the idle draw of every GPU without a job over the '
            f'trace\'s window.</p><div class="wide"><table class="grid">{head}{"".join(body)}</table></div></section>')


def _meter(acc: Mapping[str, Any]) -> str:
    """What ``--meter`` did: the jobs and GPU-hours metered and modelled (``--meter gpu``), or why the meter is compared only."""
    b = ["energy_accounting"]
    if acc.get("meter") == "gpu":
        return (f"<p>Anchored to the meter (--meter gpu): {num([*b, 'metered_jobs'], acc['metered_jobs'])} jobs, "
                f"{num([*b, 'metered_gpu_hours'], acc['metered_gpu_hours'])} GPU-hours metered: their Default energy "
                f"{energy([*b, 'metered_kwh'], acc['metered_kwh'])} as metered, Zeus's that times the replay's ratio; "
                f"{num([*b, 'modelled_jobs'], acc['modelled_jobs'])} jobs ({num([*b, 'modelled_gpu_hours'], acc['modelled_gpu_hours'])} "
                f"GPU-hours) modelled, Default {energy([*b, 'modelled_kwh'], acc['modelled_kwh'])}.</p>")
    return f"<p>{_e(acc['meter_note'])}.</p>" if acc.get("meter_note") else ""


def _measured(r: Mapping[str, Any]) -> str:
    acc, m = r["energy_accounting"], r["measured"]
    if m is None:
        return (f'<section id="measured"><h2>Measured energy</h2><p>{_e(acc.get("note", "none for the replayed jobs"))}.</p>'
                f'{_meter(acc)}</section>')
    unit = energy_unit(m["modelled_default_kwh"])
    zero = (f" ({num(['energy_accounting', 'replayed_jobs_zero'], acc['replayed_jobs_zero'])} more exported 0: not collected, "
            "not counted)") if acc["replayed_jobs_zero"] else ""
    util = (f"; GPU utilisation (Slurm's gres/gpuutil) median {num(['measured', 'gpu_util_median_pct'], m['gpu_util_median_pct'], suffix=' %')}"
            if m["gpu_util_median_pct"] is not None else "")
    rows = [
        ("measured by the cluster", energy(["measured", "measured_kwh"], m["measured_kwh"])),
        ("modelled Default", f"{energy(['measured', 'modelled_default_kwh'], m['modelled_default_kwh'], unit)} "
                             f"{interval(['measured', 'modelled_default_kwh_interval'], m['modelled_default_kwh_interval'], _energy_in(unit))} "
                             f"(the same jobs, modelled on {_e(m['modelled_on'])})"),
        ("measured / modelled", f"per job: median {num(['measured', 'ratio_median'], m['ratio_median'], digits=2)}, interquartile range "
                                f"{num(['measured', 'ratio_p25'], m['ratio_p25'], digits=2)} to {num(['measured', 'ratio_p75'], m['ratio_p75'], digits=2)}"
                                f"{util}"),
        *[(f"  {key}", f"median {num(['measured', 'by_row', key, 'ratio_median'], b['ratio_median'], digits=2)}, interquartile range "
                       f"{num(['measured', 'by_row', key, 'ratio_p25'], b['ratio_p25'], digits=2)} to "
                       f"{num(['measured', 'by_row', key, 'ratio_p75'], b['ratio_p75'], digits=2)} "
                       f"({num(['measured', 'by_row', key, 'jobs'], b['jobs'])} jobs)")
          for key, b in (m.get("by_row") or {}).items() if len(m["by_row"]) > 1],
    ]
    body = "".join(f"<tr><th scope='row'>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return (f'<section id="measured"><h2>Measured energy ({_e(m["source"])})</h2><p>{num(["measured", "jobs"], m["jobs"])} of '
            f'{num(["measured", "replayed_jobs"], m["replayed_jobs"])} replayed jobs have a measurement{zero}.</p>'
            f'<table class="kv">{body}</table>{_meter(acc)}<p class="note">{_e(m["caption"])}</p></section>')


def _groups(r: Mapping[str, Any]) -> str:
    if not r["top_groups"]:
        return ""
    where = "as exported" if r["gpu_mode"] == "as-exported" else f"on {r['top_groups_gpu']}"
    by = "its utilisation, else its runtime" if r.get("analogue_rule") else "its runtime"
    draw = f" (sample 1: each group's workload by {by})" if r["samples"] > 1 else ""
    head = "<tr><th>group</th><th>jobs</th><th class='text'>workload</th><th>Default</th><th>saved</th><th>saved</th></tr>"
    body = "".join(
        f"<tr><td class='key group'>{_e(t['group'])}</td><td>{num(['top_groups', i, 'jobs'], t['jobs'])}</td><td class='text'>{_e(t['workload'])}</td>"
        f"<td>{energy(['top_groups', i, 'default_kwh'], t['default_kwh'])}</td><td>{energy(['top_groups', i, 'saved_kwh'], t['saved_kwh'])}</td>"
        f"<td>{pct(['top_groups', i, 'saved_pct'], t['saved_pct'])}</td></tr>"
        for i, t in enumerate(r["top_groups"]))
    return (f'<section id="groups"><h2>The {len(r["top_groups"])} recurring groups that save most {_e(where)}{_e(draw)}</h2>'
            f'<div class="wide"><table class="grid">{head}{body}</table></div></section>')


def _provenance(r: Mapping[str, Any], p: Provenance) -> str:
    rows = [("file", _e(p.file)), ("sha256", f"<code>{_e(p.sha256 or 'not computed')}</code>"),
            ("read as", f"{_e(r['format'])}, times in {_e(r['timezone'])}"),
            ("options", ", ".join(f"<code>{_e(k)} {_e(v)}</code>" for k, v in p.options.items()) or "the defaults")]
    if p.command:
        rows.append(("command", f"<code>{_e(p.command)}</code>"))
    rows += [("Zeus traces", _e(r.get("zeus_traces", "the pipeline's tables"))), ("samples ran", _e(r["runner"])),
             ("package", f"{_e(DISTRIBUTION)} {_e(p.version)}"), ("made", _e(p.created))]
    body = "".join(f"<tr><th scope='row'>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<section id="provenance"><h2>How this report was made</h2><table class="kv">{body}</table></section>'


def _utilization(r: Mapping[str, Any]) -> str:
    """The idle allocations left out of the replay (``--min-gpu-util``), or that the export carries no utilisation."""
    u = r["utilization"]
    if u["source"] is None:
        return f"<p class='note'>GPU utilisation: {_e(u['note'])}.</p>"
    by_util = [(k, g["analogues"]) for k, g in r["gpus"].items() if g.get("analogues")]
    rule = "" if not r.get("analogue_rule") else (
        "<p class='note'>Workloads by GPU utilisation: " + ", ".join(
            f"{_e(k)} {num(['gpus', k, 'analogues', 'groups_by_utilisation'], a['groups_by_utilisation'])} of "
            f"{a['groups_by_utilisation'] + a['groups_by_runtime']:,} groups" for k, a in by_util)
        + f" ({_e(r['analogue_rule'])}).</p>")
    return _utilization_counts(u) + rule


def _utilization_counts(u: Mapping[str, Any]) -> str:
    """The idle allocations left out of the replay, or that none is below the threshold."""
    b, threshold = ["utilization"], u["threshold_pct"]
    if u["low_util_jobs"] == 0:
        return (f"<p class='note'>GPU utilisation ({_e(u['source'])}): no COMPLETED GPU job below "
                f"{num([*b, 'threshold_pct'], threshold, text=f'{threshold:g}', suffix=' %')}; every one is replayed.</p>")
    return (f"<p>{num([*b, 'low_util_jobs'], u['low_util_jobs'])} COMPLETED GPU jobs below "
            f"{num([*b, 'threshold_pct'], threshold, text=f'{threshold:g}', suffix=' %')} GPU utilisation "
            f"({_e(u['source'])}) are idle allocations, not replayed: {num([*b, 'low_util_gpu_hours'], u['low_util_gpu_hours'], digits=1)} "
            f"GPU-hours, {energy([*b, 'low_util_kwh'], u['low_util_kwh'])} at the idle draw.</p>{_low_util_top(u)}")


def _low_util_top(u: Mapping[str, Any]) -> str:
    """The idle allocations of most GPU-hours, by job ID, for the operator to ask their users."""
    top = u.get("low_util_top") or []
    if not top:
        return ""
    b = ["utilization", "low_util_top"]
    head = "<tr><th>job ID</th><th class='text'>user</th><th class='text'>GPU type</th><th>GPU-hours</th><th>utilisation</th></tr>"
    body = "".join(
        f"<tr><td class='key group'>{_e(t['job_id'])}</td><td class='text'>{_e(t['user'] or '–')}</td>"
        f"<td class='text'>{_e(t['gpu_type'] or 'untyped')}</td><td>{num([*b, i, 'gpu_hours'], t['gpu_hours'], digits=1)}</td>"
        f"<td>{num([*b, i, 'gpu_util_pct'], t['gpu_util_pct'], suffix=' %')}</td></tr>" for i, t in enumerate(top))
    which = "All" if len(top) == u["low_util_jobs"] else f"The {len(top)} of most GPU-hours"
    return f"<p class='note'>{which} (the JSON lists up to 100 job IDs):</p><table class='grid'>{head}{body}</table>"


def _stand_ins(r: Mapping[str, Any]) -> str:
    """The jobs replayed on another GPU's profile, said beside the headline."""
    st = r.get("stand_ins") or {}
    if not st.get("jobs"):
        return ""
    hours = f"{num(['stand_ins', 'gpu_hours'], st['gpu_hours'])} of {num(['stand_ins', 'of_gpu_hours'], st['of_gpu_hours'])} GPU-hours"
    return (f"<p class='lede'>Stand-ins: {num(['stand_ins', 'jobs'], st['jobs'])} of {num(['stand_ins', 'of_jobs'], st['of_jobs'])} "
            f"jobs ({hours}) replayed on the {_e(st['gpu'])} profile{': ' + _e(st['why']) if st.get('why') else ''}"
            f"{'; ' + _e(st['power_text']) if st.get('power_text') else ''}.</p>")


def _headline(r: Mapping[str, Any]) -> str:
    first = next(iter(r["gpus"]), None)
    base: list[str] = ["total"] if r.get("total") else ["gpus", first] if first is not None else []
    g: Mapping[str, Any] = r["total"] if r.get("total") else r["gpus"][first] if first is not None else {}
    if not g or g.get("energy_saved_kwh") is None:
        return "<p class='lede'>No COMPLETED GPU job to replay.</p>"
    where = "the whole cluster" if r.get("total") else f"the {_e(base[-1])}"
    iv = "" if r["samples"] == 1 else (f" (90 % interval {interval([*base, 'energy_saved_pct_interval'], g['energy_saved_pct_interval'], _PCT)} %)")
    return (f"<p class='lede'>On {where}, Zeus would have saved {energy([*base, 'energy_saved_kwh'], g['energy_saved_kwh'])}, "
            f"{pct([*base, 'energy_saved_pct'], g['energy_saved_pct'])}{iv} of the {energy([*base, 'default_kwh'], g['default_kwh'])} "
            f"the {num([*base, 'jobs'], g['jobs'])} replayed jobs drew under Default.</p>")


_CSS = """
*{box-sizing:border-box}
body{margin:0;background:#fff;color:#1a1a1a;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif}
main{max-width:1120px;margin:0 auto;padding:8px 20px 40px}
h1{font-size:1.55em;margin:.8em 0 .3em;overflow-wrap:anywhere}
h2{font-size:1.2em;margin:1.6em 0 .5em;border-bottom:1px solid #ddd;padding-bottom:.2em}
h3{font-size:1.05em;margin:1.2em 0 .4em}
.lede{font-size:1.1em}
.note,figcaption{color:#555;font-size:.88em}
table{border-collapse:collapse;margin:.4em 0}
.wide{max-width:100%}
table.grid{width:100%}
.grid th,.grid td{border-bottom:1px solid #e4e4e4;padding:4px 7px;text-align:right;vertical-align:top}
.grid th{background:#f4f5f7;font-weight:600;font-size:.88em}
.grid td{white-space:nowrap}
.grid td.key,.grid th:first-child,.grid .text{text-align:left}
.grid td.text,.grid td.group{white-space:normal}
.kv th{text-align:left;padding:3px 14px 3px 0;vertical-align:top;font-weight:600;white-space:nowrap}
.kv td{padding:3px 0}
td.text,td.group,th,li,p{overflow-wrap:anywhere}
.savings td{font-size:.92em}
.iv{color:#666;font-size:.85em;white-space:nowrap}
.group{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.85em}
code{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.85em;overflow-wrap:anywhere}
figure{margin:1em 0}
img{display:block;max-width:100%;height:auto}
"""


def render(report: Mapping[str, Any], power: pl.DataFrame, provenance: Provenance, grid: Rate | None = None) -> str:
    """The report as one HTML page (see the module docstring); ``grid``: the carbon-intensity series given, drawn with the hours
    the jobs ran."""
    from pipelines.report import figures

    r = dict(report)
    sample1 = "sample 1 (the replay with each group's first-choice workload and the artifact's seeds)" if r["samples"] > 1 else "the replay"
    # the file's name only (the page may be mailed, its path is the sender's), its control characters written as escapes
    title = f"What if Zeus had tuned {printable(PurePath(r['file']).name)}?"
    samples = "a single replay" if r["samples"] == 1 else f"{r['samples']} samples, seed {r['seed']}"
    parts = [
        f"<h1>{_e(title)}</h1>",
        f"<p>{_e(r['format'])} export, times in {_e(r['timezone'])}{' (assumed)' if r.get('timezone_source') == 'assumed' else ''}; "
        f"eta {r['eta']:g}, beta {r['beta']:g}; {_e(samples)}; energy {_e(r.get('energy_model', 'runtime-ratio'))}.</p>",
        _headline(r),
        _stand_ins(r),
        _accounting(r),
        _utilization(r),
        _types(r) if r["gpu_mode"] == "as-exported" else "",
        _savings(r, _figure(lambda: figures.savings_with_intervals(r), "Energy saved per GPU with its interval",
                            "Energy Zeus saves vs Default per row of the table: the median over the samples (dot) and its interval (bar).")),
        '<section id="power"><h2>Cluster power</h2>',
        _figure(lambda: figures.power_timeline(r, power), "Cluster power over the trace, Default vs Zeus",
                f"Cluster power (kW, mean of each 5-minute bin) of {_e(sample1)}: Default vs Zeus, that sample's peaks dashed. "
                "The peaks in kW are the table's: each the median over the samples."),
        _figure(lambda: figures.load_duration_curve(r, power), "Load-duration curve, Default vs Zeus",
                f"Load-duration curve of {_e(sample1)}: each bin's power, sorted from the highest, against the hours the cluster "
                "drew at least that much; dots: p99, dotted: Default's peak. The gap between Default's peak and Zeus's p99 is the headroom."),
        "</section>",
        "" if grid is None or grid.times_s is None else (
            '<section id="grid"><h2>The grid when the jobs ran</h2>'
            + _figure(lambda: figures.grid_timeline(r, power, grid), "Grid carbon intensity and busy GPUs over time",
                      f"The carbon intensity of {_e(grid.describe.get('file'))} (top) and the GPUs the jobs held under Default in "
                      f"{_e(sample1)} (bottom, mean per 5-minute bin): each run's CO2e is its energy at the intensity of when it ran.")
            + "</section>"),
        _fleet(r),
        _measured(r),
        _groups(r),
        _provenance(r, provenance),
    ]
    return (PAGE_START + f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body><main>\n" + "\n".join(p for p in parts if p)
            + "\n</main></body></html>\n")


_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
#: Every report's first characters: how ``whatif --html`` tells a report it may replace from any other file.
PAGE_START = f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="{_CSP}">'
#: What ``whatif --html`` writes (``pipelines.home.outputs``).
REPORT = OutputKind.starting_with("whatif HTML report", PAGE_START.encode())


def write(path: Path, report: Mapping[str, Any], power: pl.DataFrame, provenance: Provenance, grid: Rate | None = None) -> Path:
    """Render the report and write it to ``path`` atomically (temp file + rename); ``grid``: the intensity series to draw."""
    return write_text_atomic(render(report, power, provenance, grid), path)
