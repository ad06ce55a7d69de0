"""Cluster-simulation figures: Zeus's savings per trace, workload and GPU; cumulative energy over each trace.

Inputs are the partitioned cluster-simulation tables (``zeus_cluster_summary``,
``zeus_cluster_history``, all partitions concatenated). Each function returns ``(Figure, data)``:
the figure and exactly the rows it plots; raises ``NoData`` when there is nothing to draw (a trace
whose optional source is missing has no rows and is simply absent).
"""

from __future__ import annotations

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from pipelines.contracts.base import conform, empty
from pipelines.contracts.figures import EnergyTimeline, SavingsByTrace
from pipelines.figures import style
from pipelines.figures.errors import NoData
from pipelines.vocabulary import dataset_label, gpu_label
from pipelines.vocabulary.units import J_PER_MWH, S_PER_DAY

#: Traces in drawing order (the mapping's order; anything else after, alphabetically).
TRACE_ORDER: tuple[str, ...] = ("itp", "elasticflow", "acme", "alibaba")
TRACE_LABELS: dict[str, str] = {"itp": "ITP", "elasticflow": "ElasticFlow", "acme": "AcmeTrace", "alibaba": "Alibaba"}
#: Policies of the cluster replay: (history value, label), in drawing order.
POLICIES: tuple[tuple[str, str], ...] = (("default", "Default"), ("grid-search", "Grid Search"), ("zeus", "Zeus"))
#: Points per (trace, GPU, policy) line of the timeline figure: the cumulative sum is sampled at
#: this many evenly spaced times (plus the last), enough for a smooth line at print size.
TIMELINE_POINTS = 400
_LINESTYLES = ("--", ":", "-")
#: Savings (%) whose bar is too short to see are labelled "0".
NEAR_ZERO_PCT = 0.5


def trace_label(trace: str) -> str:
    return TRACE_LABELS.get(trace, trace)


def savings_by_trace(summary: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Energy and time Zeus saves vs Default (%) per workload (x) and GPU (hue); one row of panels per trace.

    ``summary`` is ``zeus_cluster_summary``. Savings are 100 x (1 - Zeus / Default) over all runs of
    the trace's jobs assigned to that workload; negative time saving: Zeus is slower. The x tick
    labels give each workload's job count in that trace; a bar under 0.5 % is marked "0".
    """
    data = summary.filter((pl.col("jobs") > 0) & pl.col("energy_j_default").is_not_null())
    if data.height == 0:
        raise NoData("no simulated cluster jobs (zeus_cluster_summary is empty)")
    traces = style.ordered(data["trace"].unique(), TRACE_ORDER)
    gpus = style.ordered(data["gpu"].unique(), style.GPU_ORDER)
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 1.9 * len(traces) + 0.7, len(traces), 2, sharey="col")
    colors = style.palette(len(gpus))
    width = 0.8 / len(gpus)
    panels = (("energy_savings_vs_default_pct", "energy saved vs Default (%)"), ("time_savings_vs_default_pct", "time saved vs Default (%)"))
    for row, trace in enumerate(traces):
        d = data.filter(pl.col("trace") == trace)
        datasets = style.ordered(d["dataset"].unique(), style.DATASET_ORDER)
        jobs = dict(d.group_by("dataset").agg(pl.col("jobs").max()).iter_rows())
        x = np.arange(len(datasets))
        for col, (column, label) in enumerate(panels):
            ax = axes[row, col]
            for i, gpu in enumerate(gpus):
                values = dict(d.filter(pl.col("gpu") == gpu).select("dataset", column).iter_rows())
                ys = np.array([values.get(ds, np.nan) for ds in datasets], dtype=float)
                xs = x - 0.4 + width * (i + 0.5)
                ax.bar(xs, ys, width, color=colors[i], label=gpu_label(gpu), linewidth=0)
                for xi, yi in zip(xs, ys, strict=True):
                    if abs(yi) < NEAR_ZERO_PCT:  # a bar too small to see: say it is there
                        ax.text(xi, 0.0, "0", ha="center", va="bottom", fontsize=style.SMALL_FONT_SIZE - 1, color=colors[i])
            ax.axhline(0.0, color="black", lw=0.6)
            ax.grid(axis="x", visible=False)
            ax.set_xticks(x, [f"{dataset_label(ds)} ({jobs[ds] / 1000:.1f}k jobs)" for ds in datasets],
                          rotation=25, ha="right", rotation_mode="anchor")
            ax.set_ylabel(label)
            ax.set_title(f"{trace_label(trace)}, {'energy' if col == 0 else 'time'} ({sum(jobs.values()):,} jobs)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=len(gpus),
               title="Zeus (η = 0.5, β = 2) vs Default (b0 at the maximum power limit), cluster-trace replay")
    return fig, conform(data, SavingsByTrace).sort("trace", "dataset", "gpu")


def cumulative_energy_timeline(history: pl.DataFrame, points: int = TIMELINE_POINTS) -> pl.DataFrame:
    """Cumulative energy (MWh) of each (trace, GPU, policy) over the trace's timeline, sampled.

    A run's energy is counted at its simulated start (``start_time_s``: the job's submission for a
    first attempt, the failed attempt's end for a retry, so retries extend past the trace's end). Time is days since the trace's first job. The cumulative
    sum is taken over every run, then read at ``points`` evenly spaced times and at the last run,
    so the last point of each line is the policy's exact total.
    """
    if history.height == 0:
        return empty(EnergyTimeline)
    frames = []
    starts = history.group_by("trace").agg(pl.col("start_time_s").min().alias("t0"))
    timed = history.join(starts, on="trace").with_columns(((pl.col("start_time_s") - pl.col("t0")) / S_PER_DAY).alias("day"))
    for (trace, gpu, policy), d in timed.sort("day").group_by("trace", "gpu", "policy", maintain_order=True):
        day = d["day"].to_numpy()
        cumulative = np.cumsum(d["energy_j"].to_numpy()) / J_PER_MWH
        grid = np.unique(np.append(np.linspace(0.0, day[-1], points), day[-1]))
        # value at each grid time: the cumulative sum over runs started at or before it
        idx = np.searchsorted(day, grid, side="right") - 1
        values = np.where(idx >= 0, cumulative[np.clip(idx, 0, None)], 0.0)
        frames.append(pl.DataFrame({"trace": trace, "gpu": gpu, "policy": policy, "day": grid, "cumulative_energy_mwh": values}))
    return pl.concat(frames)


def energy_timeline(history: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Cumulative energy (MWh) over each trace's timeline (days), Zeus vs Grid Search vs Default.

    One row of panels per trace, one column per GPU; ``history`` is ``zeus_cluster_history``.
    The y axes are per trace (the traces differ by orders of magnitude).
    """
    data = cumulative_energy_timeline(history)
    if data.height == 0:
        raise NoData("no simulated cluster runs (zeus_cluster_history is empty)")
    traces = style.ordered(data["trace"].unique(), TRACE_ORDER)
    gpus = style.ordered(data["gpu"].unique(), style.GPU_ORDER)
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 1.45 * len(traces) + 0.7, len(traces), len(gpus), sharey="row", sharex="row")
    colors = style.palette(len(POLICIES))
    for row, trace in enumerate(traces):
        for col, gpu in enumerate(gpus):
            ax = axes[row, col]
            for i, (policy, label) in enumerate(POLICIES):
                d = data.filter((pl.col("trace") == trace) & (pl.col("gpu") == gpu) & (pl.col("policy") == policy))
                if d.height:
                    ax.plot(d["day"], d["cumulative_energy_mwh"], color=colors[i], ls=_LINESTYLES[i], label=label)
            ax.set_title(f"{trace_label(trace)}, {gpu_label(gpu)}")
            if col == 0:
                ax.set_ylabel("cumulative energy (MWh)")
    for ax in axes.flat:  # after every line is drawn: a shared axis's top must fit all of its row
        ax.set_ylim(bottom=0.0)
        ax.set_xlim(left=0.0)
    fig.supxlabel("days since the trace's first job", fontsize=style.FONT_SIZE)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=len(POLICIES),
               title="energy of every simulated run (x GPUs per job), counted at the run's simulated start "
                     "(a retry starts when its failed run ends, so Grid Search's lines run past the trace)")
    return fig, data.sort("trace", "gpu", "policy", "day")


def co2e_by_region(co2e: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """CO2e Zeus saves vs Default per region (x, low to high carbon intensity) and GPU (hue); one panel per public trace.

    ``co2e`` is ``zeus_cluster_co2e``: each trace's replay at each region's yearly intensity, so a
    region's bar is the same kWh saved times its g CO2e per kWh (the x tick labels give both the
    region and its intensity). Masses in kg or t, whichever the largest bar needs.
    """
    data = co2e.filter(pl.col("jobs") > 0)
    if data.height == 0:
        raise NoData("no public trace replayed (zeus_cluster_co2e is empty)")
    traces = style.ordered(data["trace"].unique(), TRACE_ORDER)
    gpus = style.ordered(data["gpu"].unique(), style.GPU_ORDER)
    grids = data.select("region", "gco2_per_kwh").unique().sort("gco2_per_kwh", "region")
    regions = grids["region"].to_list()
    unit, scale = ("t", 1000.0) if np.max(np.abs(data["co2e_saved_kg"].to_numpy())) >= 1000 else ("kg", 1.0)
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 1.9 * len(traces) + 0.7, len(traces), 1)
    colors = style.palette(len(gpus))
    width = 0.8 / len(gpus)
    x = np.arange(len(regions))
    for row, trace in enumerate(traces):
        ax = axes[row, 0]
        d = data.filter(pl.col("trace") == trace)
        for i, gpu in enumerate(gpus):
            values = dict(d.filter(pl.col("gpu") == gpu).select("region", "co2e_saved_kg").iter_rows())
            ys = np.array([values.get(r, np.nan) for r in regions], dtype=float) / scale
            ax.bar(x - 0.4 + width * (i + 0.5), ys, width, color=colors[i], label=gpu_label(gpu), linewidth=0)
        ax.axhline(0.0, color="black", lw=0.6)
        ax.grid(axis="x", visible=False)
        ax.set_xticks(x, [f"{r}\n{g:,.0f} g/kWh" for r, g in grids.iter_rows()])
        ax.set_ylabel(f"CO2e saved vs Default ({unit})")
        ax.set_title(f"{trace_label(trace)} ({int(np.max(d['jobs'].to_numpy())):,} jobs), at each region's yearly grid intensity")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=len(gpus), title="Zeus (η = 0.5, β = 2) vs Default, cluster-trace replay")
    return fig, data.sort("trace", "gpu", "gco2_per_kwh", "region")
