"""The figures of a ``whatif`` report: energy saved per GPU with its interval, and sample 1's cluster power.

Input: the report (``pipelines.clusters.whatif.run``: medians over the samples, each with its
``<figure>_interval`` = [5th, 95th percentile]) and the power of its sample 1
(``run(..., keep_power=True)``: ``ClusterPower`` rows, ``gpu`` = ``all`` for the whole cluster as
exported, else one GPU per row). Each function returns ``(Figure, data)`` with exactly the
numbers plotted, drawn in the package's theme (``pipelines.figures.style``); the power figures are
``pipelines.figures.cluster_power``'s, one panel per cluster. ``NoData`` when there is nothing to draw.
"""

from __future__ import annotations

from typing import Any

import polars as pl
from matplotlib.figure import Figure

from pipelines.clusters.power import load_duration
from pipelines.clusters.samples import FLEET
from pipelines.figures import cluster_power, style
from pipelines.figures.errors import NoData
from pipelines.ingest.grid import Rate
from pipelines.report.text import energy_unit
from pipelines.vocabulary import gpu_label

#: The label of the whole cluster's row.
WHOLE = "all GPUs"
#: Height (in) of one cluster's panel in the power figures (double-column wide).
PANEL_IN = 1.9


def saved_rows(report: dict[str, Any]) -> pl.DataFrame:
    """One row per report row with a replay (each GPU or exported type, then ``all GPUs``): energy saved (%, kWh), each with p05 and p95."""
    rows = [(key, g) for key, g in report["gpus"].items()]
    if report.get("total"):
        rows.append((WHOLE, report["total"]))
    out = []
    for key, g in rows:
        if g.get("energy_saved_kwh") is None or g.get("energy_saved_pct") is None:
            continue
        record: dict[str, Any] = {"row": key}
        for name in ("energy_saved_pct", "energy_saved_kwh"):
            low, high = g[f"{name}_interval"]
            record.update({name: g[name], f"{name}_p05": low, f"{name}_p95": high})
        out.append(record)
    schema = {"row": pl.String, **{f"{n}{s}": pl.Float64 for n in ("energy_saved_pct", "energy_saved_kwh") for s in ("", "_p05", "_p95")}}
    return pl.DataFrame(out, schema=schema, orient="row") if out else pl.DataFrame(schema=schema)


def savings_with_intervals(report: dict[str, Any]) -> tuple[Figure, pl.DataFrame]:
    """Energy Zeus saves vs Default per GPU (%, left; kWh, MWh or GWh, right): the median over the samples as a dot and the 90 %
    interval as a bar; the whole cluster's row (as exported) last, in black."""
    data = saved_rows(report)
    if data.height == 0:
        raise NoData("no row of the report has a replay")
    unit, scale = energy_unit(max(abs(v) for v in data["energy_saved_kwh"].to_list()))
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 0.28 * data.height + 0.85, 1, 2, light=True, sharey=True)
    colors = style.palette(data.height)
    labels = data["row"].to_list()
    y = list(range(data.height))[::-1]  # the first row on top
    for ax, name, factor, xlabel in ((axes[0, 0], "energy_saved_pct", 1.0, "energy saved vs Default (%)"),
                                     (axes[0, 1], "energy_saved_kwh", 1 / scale, f"energy saved vs Default ({unit})")):
        for i, rec in enumerate(data.iter_rows(named=True)):
            color = "black" if rec["row"] == WHOLE else colors[i]
            median = rec[name] * factor
            low, high = (median if rec[f"{name}{q}"] is None else rec[f"{name}{q}"] * factor for q in ("_p05", "_p95"))  # None: no interval
            ax.errorbar([median], [y[i]], xerr=[[median - low], [high - median]], fmt="o", color=color, capsize=3, lw=1.2, ms=4.5)
        ax.axvline(0, color="grey", lw=0.6)
        ax.set_xlabel(xlabel)
    axes[0, 0].set_yticks(y, labels)
    axes[0, 0].set_ylim(-0.6, data.height - 0.4)
    n = report["samples"]
    fig.suptitle("Zeus vs Default: a single replay (--samples 1: no interval)" if n == 1 else
                 f"Zeus vs Default: median over {n} samples, bars the {report['interval'].split(' (')[0]}")
    return fig, data


def power_panels(report: dict[str, Any], power: pl.DataFrame) -> list[tuple[str, str]]:
    """(title, ``gpu`` value of ``power``) of each cluster drawn: the whole cluster as exported, else every GPU replayed."""
    present = set(power["gpu"].unique().to_list()) if power.height else set()
    if report["gpu_mode"] == "as-exported":
        wanted = [("whole cluster, every GPU type added up", FLEET)]
    else:
        wanted = [(f"every job on the {gpu_label(g)}", g) for g in report["gpus"]]
    return [(title, gpu) for title, gpu in wanted if gpu in present]


def power_timeline(report: dict[str, Any], power: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Sample 1's cluster power (kW per 5-minute bin) over the trace, Default vs Zeus, peaks dashed: one panel per cluster."""
    panels = power_panels(report, power)
    if not panels:
        raise NoData("no power bins")
    data = cluster_power.timeline_frame(power.filter(pl.col("policy").is_in(["default", "zeus"])))
    figure = cluster_power.timeline_figure([(t, data.filter(pl.col("gpu") == g)) for t, g in panels], cluster_power.bin_label(power),
                                           width=style.DOUBLE_COLUMN, panel_height=PANEL_IN, peaks_in_title=False,
                                           light=True)
    return figure, data


def load_duration_curve(report: dict[str, Any], power: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Sample 1's load-duration curve (bin powers sorted descending vs hours at or above them), Default vs Zeus, per cluster."""
    panels = power_panels(report, power)
    if not panels:
        raise NoData("no power bins")
    curves = load_duration(power.filter(pl.col("policy").is_in(["default", "zeus"])), ("trace", "gpu", "policy")).sort("gpu", "policy", "hours")
    figure = cluster_power.load_duration_figure([(t, curves.filter(pl.col("gpu") == g)) for t, g in panels], width=style.DOUBLE_COLUMN,
                                                panel_height=PANEL_IN, light=True)
    return figure, curves


def grid_timeline(report: dict[str, Any], power: pl.DataFrame, grid: Rate) -> tuple[Figure, pl.DataFrame]:
    """The grid's carbon intensity (g CO2e/kWh, the series given) over the export's window, above the GPUs its jobs held under
    Default in sample 1 (mean per 5-minute bin): when the energy was drawn against how clean the grid was."""
    if grid.times_s is None:
        raise NoData("a constant intensity: no series to draw")
    panels = power_panels(report, power)
    if not panels:
        raise NoData("no power bins")
    busy = power.filter((pl.col("policy") == "default") & (pl.col("gpu") == panels[0][1])).sort("bin_start_s")
    start, end = float(busy["bin_start_s"].min()), float(busy["bin_end_s"].max())  # type: ignore[arg-type]
    inside = (grid.times_s >= start - grid.step_s) & (grid.times_s <= end)
    series = pl.DataFrame({"time_s": grid.times_s[inside], "gco2_per_kwh": grid.values[inside]})
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 2 * PANEL_IN + 0.4, 2, 1, light=True, sharex=True)
    to_time = pl.col("time_s").mul(1e6).cast(pl.Int64).cast(pl.Datetime("us", "UTC"))
    shown = series.with_columns(to_time.alias("time"))
    axes[0, 0].step(shown["time"].to_numpy(), shown["gco2_per_kwh"].to_numpy(), where="post", color=style.palette(2)[1], lw=1.0)
    axes[0, 0].set_ylabel("grid intensity\n(g CO2e/kWh)")
    axes[0, 0].set_title(f"{grid.describe.get('file', 'grid')}: the grid's carbon intensity over the export's window (UTC)")
    times = busy.select(pl.col("bin_start_s").alias("time_s")).with_columns(to_time.alias("time"))["time"].to_numpy()
    axes[1, 0].fill_between(times, busy["gpus_in_use"].to_numpy(), step="post", color=style.palette(2)[0], lw=0, alpha=0.8)
    axes[1, 0].set_ylabel("GPUs busy\n(Default, sample 1)")
    axes[1, 0].set_xlabel("time (UTC)")
    data = series.join(busy.select(pl.col("bin_start_s").alias("time_s"), "gpus_in_use"), on="time_s", how="full", coalesce=True).sort("time_s")
    return fig, data
