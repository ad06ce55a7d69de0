"""Trace-characterization figures: job durations, GPU counts, submissions, AcmeTrace states, queueing and summary.

Inputs are ``trace_data`` frames (``cluster_jobs`` and the summary helpers). Each function returns
``(Figure, data)`` with exactly the rows it plots, and raises ``NoData`` when none of its traces
has rows, so an absent trace never leaves an empty axes.
"""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from pipelines.figures import style
from pipelines.figures import trace_data as td
from pipelines.figures.errors import NoData

_LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)))
_STATE_LABELS = {"COMPLETED": "completed", "CANCELLED": "cancelled", "FAILED": "failed"}


def _trace_styles(traces: list[str]) -> dict[str, dict[str, Any]]:
    """One colour and line style per trace, fixed by ``TRACE_ORDER`` so a trace looks the same in every figure."""
    order = list(td.TRACE_ORDER) + sorted(set(traces) - set(td.TRACE_ORDER))
    colors = style.palette(len(order))
    return {t: {"color": colors[order.index(t)], "ls": _LINESTYLES[order.index(t) % len(_LINESTYLES)]} for t in traces}


def _step(ax: Axes, cdf: pl.DataFrame, value: str, x_end: float | None = None, **kw: Any) -> None:
    """A CDF as a right-continuous step line, in percent, held at its last level up to ``x_end``."""
    x = cdf[value].to_numpy()
    y = 100.0 * cdf["cdf"].to_numpy()
    xs, ys = np.concatenate([[x[0]], x]), np.concatenate([[0.0], y])
    if x_end is not None and x_end > x[-1]:
        xs, ys = np.append(xs, x_end), np.append(ys, ys[-1])
    ax.step(xs, ys, where="post", **kw)


def _cdf_axes(ax: Axes, xlabel: str, ylabel: str = "CDF (% of jobs)") -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(-1.5, 101.5)  # lines at 0 and 100 % stay off the frame
    ax.set_yticks([0, 25, 50, 75, 100])


def _label(trace: str, n: int) -> str:
    return f"{trace} ({n:,})"


def job_duration_cdf(jobs: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """CDF of job duration (s, log) per trace; with ITP present, a second panel per ITP cluster.

    Jobs with a duration of 0 s cannot sit on a log axis: they count in the CDF and the axis
    starts at 1 s.
    """
    data = jobs.filter(pl.col("duration_s").is_not_null())
    if data.height == 0:
        raise NoData("no job durations in any trace")
    traces = td.traces_present(data)
    per_trace = td.ecdf(data, "duration_s", ["trace"]).with_columns(pl.lit("all").alias("cluster"))
    itp = data.filter(pl.col("trace") == "ITP")
    per_cluster = td.ecdf(itp, "duration_s", ["trace", "cluster"]) if itp.height else per_trace.clear()
    ncols = 2 if itp.height else 1
    width = style.DOUBLE_COLUMN if ncols == 2 else style.SINGLE_COLUMN
    fig, axes = style.new_figure(width, 3.3, 1, ncols, sharey=True)
    styles = _trace_styles(traces)
    for trace in traces:
        c = per_trace.filter(pl.col("trace") == trace)
        _step(axes[0, 0], c, "duration_s", label=_label(trace, int(c["n"][0])), **styles[trace])
    # CDFs rise from lower left to upper right: the lower right corner is free
    axes[0, 0].legend(loc="lower right", title="trace (jobs)")
    axes[0, 0].set_title("(a) per trace")
    if ncols == 2:
        clusters = sorted(per_cluster["cluster"].unique().to_list())
        colors = style.palette(len(clusters))
        for i, cluster in enumerate(clusters):
            c = per_cluster.filter(pl.col("cluster") == cluster)
            _step(axes[0, 1], c, "duration_s", color=colors[i], ls=_LINESTYLES[i % len(_LINESTYLES)], lw=0.9,
                  label=f"{cluster.removeprefix('cluster')} ({int(c['n'][0]):,})")
        fig.legend(*axes[0, 1].get_legend_handles_labels(), loc="outside lower center", ncols=5, title="(b) ITP cluster (jobs)",
                   columnspacing=1.0, handlelength=1.8)
        axes[0, 1].set_title("(b) ITP, per cluster")
    for ax, shown in zip(axes[0], (data, itp), strict=False):
        low = max(1.0, float(shown.filter(pl.col("duration_s") > 0)["duration_s"].to_numpy().min()))
        high = float(shown["duration_s"].to_numpy().max())
        style.log_scale(ax, "x")
        ax.set_xlim(10 ** np.floor(np.log10(low)), 10 ** np.ceil(np.log10(high)))
        _cdf_axes(ax, "job duration (s)")
    return fig, pl.concat([per_trace, per_cluster], how="diagonal").select("trace", "cluster", "duration_s", "cdf", "n")


def gpu_count_cdf(jobs: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """CDF of GPUs per job (log2 axis) by job count and by GPU time (GPUs x duration), per trace.

    Traces without a GPU count (Alibaba) are left out.
    """
    data = jobs.filter(pl.col("num_gpu").is_not_null() & (pl.col("num_gpu") > 0)).with_columns(
        (pl.col("num_gpu") * pl.col("duration_s")).alias("gpu_time_s")
    )
    if data.height == 0:
        raise NoData("no trace with a GPU count")
    traces = td.traces_present(data)
    by_jobs = td.ecdf(data, "num_gpu", ["trace"]).with_columns(pl.lit("jobs").alias("basis"))
    by_time = td.ecdf(data, "num_gpu", ["trace"], weight="gpu_time_s").with_columns(pl.lit("GPU time").alias("basis"))
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 2.8, 1, 2, sharey=True)
    styles = _trace_styles(traces)
    most, fewest = float(data["num_gpu"].to_numpy().max()), float(data["num_gpu"].to_numpy().min())
    right = 2 ** (np.floor(np.log2(most)) + 1)
    for ax, frame, ylabel, title in (
        (axes[0, 0], by_jobs, "CDF (% of jobs)", "(a) by job count"),
        (axes[0, 1], by_time, "CDF (% of GPU time)", "(b) by GPU time"),
    ):
        for trace in traces:
            c = frame.filter(pl.col("trace") == trace)
            if c.height:
                _step(ax, c, "num_gpu", x_end=right, label=_label(trace, int(c["n"][0])), **styles[trace])
        ax.set_xscale("log", base=2)
        ticks = [2**k for k in range(0, int(np.log2(right)) + 1)]
        ticks = ticks[:: -(-len(ticks) // 10)]
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())
        ax.set_xlim(min(1.0, fewest), right)
        _cdf_axes(ax, "GPUs per job", ylabel)
        ax.set_title(title)
    axes[0, 1].tick_params(labelleft=True)
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=len(traces), title="trace (jobs)")
    return fig, pl.concat([by_jobs, by_time]).select("trace", "basis", "num_gpu", "cdf", "n")


def submissions_heatmap(jobs: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Jobs submitted per day (per hour for traces shorter than a week), one heat-map row per cluster.

    One panel per trace, its own time axis (days or hours since the trace's origin) and colour
    scale (log); empty bins are blank.
    """
    counts = td.submissions(jobs)
    if counts.height == 0:
        raise NoData("no submission times in any trace")
    traces = td.traces_present(counts)
    rows = [counts.filter(pl.col("trace") == t)["cluster"].n_unique() for t in traces]
    height = 0.45 + sum(0.55 + 0.17 * r for r in rows)
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, height, len(traces), 1, height_ratios=[0.55 / 0.17 + r for r in rows])
    cmap = mpl.colormaps[style.SEQUENTIAL_CMAP].with_extremes(bad="white")
    for ax, trace in zip(axes[:, 0], traces, strict=True):
        c = counts.filter(pl.col("trace") == trace)
        clusters = sorted(c["cluster"].unique().to_list())
        lo, hi = int(c["bin_start"].to_numpy().min()), int(c["bin_start"].to_numpy().max())
        grid = np.full((len(clusters), hi - lo + 1), np.nan)
        for cluster, b, n in c.select("cluster", "bin_start", "jobs").iter_rows():
            grid[clusters.index(cluster), b - lo] = n
        norm = mpl.colors.LogNorm(vmin=1, vmax=max(2.0, float(np.nanmax(grid))))
        mesh = ax.pcolormesh(np.arange(lo, hi + 2), np.arange(len(clusters) + 1), np.ma.masked_invalid(grid), cmap=cmap, norm=norm)
        ax.set_yticks(np.arange(len(clusters)) + 0.5, clusters)
        ax.invert_yaxis()
        ax.grid(False)
        unit = c["bin"][0]
        ax.set_xlabel(f"{unit}s since {c['origin'][0]}")
        ax.set_title(f"{trace}: jobs submitted per {unit} ({c['jobs'].sum():,} jobs; blank: none)")
        cbar = fig.colorbar(mesh, ax=ax, pad=0.01, aspect=max(4, 4 * len(clusters)))
        cbar.set_label(f"jobs / {unit}")
        cbar.ax.tick_params(labelsize=style.SMALL_FONT_SIZE)
        cbar.ax.yaxis.set_major_formatter(style.LogTickLabels(minor=False))
        cbar.ax.minorticks_off()
    return fig, counts


def acme_final_states(shares: pl.DataFrame, note: str | None = None) -> tuple[Figure, pl.DataFrame]:
    """Final-state shares (%) of GPU jobs and of GPU time per cluster, published beside our ingest.

    ``shares`` is ``trace_data.state_shares``: one stacked horizontal bar per (cluster, source).
    ``note`` is printed under the panels (e.g. why our side is absent).
    """
    if shares.height == 0:
        raise NoData("no final-state shares (neither the published summary nor acme_jobs)")
    bars = shares.select("cluster", "source").unique(maintain_order=True)
    published_order = shares.filter(pl.col("source") == td.PUBLISHED)["cluster"].unique(maintain_order=True).to_list()
    clusters = published_order + [c for c in bars["cluster"].unique(maintain_order=True).to_list() if c not in published_order]
    labels = [(c, s) for c in clusters for s in (td.PUBLISHED, td.INGEST) if bars.filter((pl.col("cluster") == c) & (pl.col("source") == s)).height]
    colors = dict(zip(td.STATES, [style.palette(3)[2], style.palette(8)[7], style.palette(4)[3]], strict=True))
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 0.9 + 0.22 * len(labels), 1, 2, sharey=True)
    for ax, basis, title in ((axes[0, 0], "GPU jobs", "(a) share of GPU jobs (%)"), (axes[0, 1], "GPU time", "(b) share of GPU time (%)")):
        for y, (cluster, source) in enumerate(labels):
            left = 0.0
            for state in td.STATES:
                row = shares.filter((pl.col("cluster") == cluster) & (pl.col("source") == source) & (pl.col("basis") == basis)
                                    & (pl.col("state") == state))
                if row.height == 0:
                    continue
                width = 100.0 * float(row["share"][0])
                ax.barh(y, width, left=left, color=colors[state], height=0.75, linewidth=0)
                if width >= 8:
                    ax.text(left + width / 2, y, f"{width:.0f}", ha="center", va="center", fontsize=style.SMALL_FONT_SIZE - 0.5,
                            color="white" if state != "CANCELLED" else "black")
                left += width
        ax.set_xlim(0, 100)
        ax.set_xlabel(title)
        ax.grid(axis="y", visible=False)
    axes[0, 0].set_yticks(range(len(labels)), [f"{c} ({s})" for c, s in labels])
    axes[0, 0].set_ylim(len(labels) - 0.5, -0.5)  # first bar on top (the y axis is shared)
    handles = [Patch(color=colors[s], label=_STATE_LABELS[s]) for s in td.STATES]
    fig.legend(handles=handles, loc="outside upper center", ncols=3, title="final state (timeout and node failure count as failed)")
    if note:
        fig.supxlabel(note, fontsize=style.SMALL_FONT_SIZE, color="dimgray")
    return fig, shares.sort("cluster", "source", "basis", "state")


def acme_queueing_delay_cdf(jobs: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """CDF of the queueing delay (s, symlog: 0 s is common) of AcmeTrace GPU jobs, per cluster."""
    data = jobs.filter(pl.col("trace").is_in(list(td.ACME_TRACES)) & pl.col("queue_s").is_not_null())
    if data.height == 0:
        raise NoData(f"no AcmeTrace jobs with a queueing delay ({td.ACME_FILES} missing)")
    traces = td.traces_present(data)
    cdf = td.ecdf(data, "queue_s", ["trace"])
    fig, axes = style.new_figure(style.SINGLE_COLUMN, 2.4)
    ax = axes[0, 0]
    styles = _trace_styles(traces)
    for trace in traces:
        c = cdf.filter(pl.col("trace") == trace)
        _step(ax, c, "queue_s", label=_label(trace, int(c["n"][0])), **styles[trace])
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(0, max(10.0, float(data["queue_s"].to_numpy().max())))
    ax.xaxis.set_major_formatter(mpl.ticker.FuncFormatter(lambda x, _: style.plain_number(x)))
    _cdf_axes(ax, "queueing delay (s)", "CDF (% of GPU jobs)")
    ax.legend(loc="lower right", title="cluster (GPU jobs)")
    return fig, cdf


def acme_cluster_stats(stats: pl.DataFrame, note: str | None = None) -> tuple[Figure, pl.DataFrame]:
    """The published cluster_summary statistics per cluster (dots), and ours from ``acme_jobs`` (crosses).

    ``stats`` is ``trace_data.summary_statistics``; one panel per statistic, log axes (symlog for
    times, where a median of 0 s occurs). ``note`` is printed under the panels (e.g. why our side is absent).
    """
    if stats.height == 0:
        raise NoData("no AcmeTrace summary statistics")
    statistics = [s for s, _, _ in td.SUMMARY_STATISTICS if stats.filter(pl.col("statistic") == s).height]
    clusters = stats.filter(pl.col("source") == td.PUBLISHED)["cluster"].unique(maintain_order=True).to_list()
    clusters += [c for c in stats["cluster"].unique(maintain_order=True).to_list() if c not in clusters]
    ncols = 5
    nrows = -(-len(statistics) // ncols)
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 0.55 + 1.45 * nrows + (0.2 if note else 0.0), nrows, ncols, sharey=True)
    marker: dict[str, dict[str, Any]] = {td.PUBLISHED: dict(marker="o", s=22, color=style.palette(1)[0], zorder=3),
              td.INGEST: dict(marker="x", s=26, color=style.palette(4)[3], linewidths=1.2, zorder=4)}
    for ax, statistic in zip(axes.flat, statistics, strict=False):
        s = stats.filter(pl.col("statistic") == statistic)
        for source in (td.PUBLISHED, td.INGEST):
            d = s.filter(pl.col("source") == source)
            ys = [clusters.index(c) for c in d["cluster"].to_list()]
            ax.scatter(d["value"], ys, label=source, **marker[source])
        unit = s["unit"][0]
        values = s["value"].to_numpy()
        if unit == "s":  # times: symlog, so that a median of 0 s has a place
            ax.set_xscale("symlog", linthresh=1.0)
            ax.xaxis.set_major_locator(mpl.ticker.SymmetricalLogLocator(base=100, linthresh=1.0))
            ax.xaxis.set_major_formatter(mpl.ticker.FuncFormatter(lambda x, _: "0" if x == 0 else style.power_of_ten(x)))
            ax.set_xlim(0, max(10.0, float(values.max()) * 4))
        elif style.auto_log_scale(ax, "x", values.tolist(), min_ratio=10.0):
            positive = values[values > 0]
            ax.set_xlim(float(positive.min()) / 3, float(positive.max()) * 3)
        else:
            ax.margins(x=0.15)
        ax.set_title(s["label"][0], fontsize=style.SMALL_FONT_SIZE)
        ax.set_xlabel(unit)
    for ax in axes.flat[len(statistics):]:
        fig.delaxes(ax)
    for ax in axes[:, 0]:
        ax.set_yticks(range(len(clusters)), clusters)
        ax.set_ylim(len(clusters) - 0.5, -0.5)
    handles = [mpl.lines.Line2D([], [], lw=0, marker=m["marker"], color=m["color"], label=src) for src, m in marker.items()]
    fig.legend(handles=handles, loc="outside upper center", ncols=2, title="AcmeTrace cluster_summary: per-cluster GPU-job statistics")
    if note:
        fig.supxlabel(note, fontsize=style.SMALL_FONT_SIZE, color="dimgray")
    return fig, stats
