"""Cluster power figures: power over each trace's time and the load-duration curve, Default vs Zeus.

Input: ``cluster_power`` (all partitions concatenated: mean cluster power per bin, per trace, GPU
and policy; see ``pipelines.clusters.power``). Both figures show one GPU (``FIGURE_GPU``, else the
first GPU present in ``style.GPU_ORDER``), one panel per trace, single-column wide. Each function
returns ``(Figure, data)`` with exactly the rows plotted; raises ``NoData`` when there is nothing
to draw.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from pipelines.clusters.power import P99, load_duration
from pipelines.figures import style
from pipelines.figures.clusters import TRACE_ORDER, trace_label
from pipelines.figures.errors import NoData
from pipelines.vocabulary import REFERENCE_GPU, gpu_label
from pipelines.vocabulary.units import KW_PER_W, S_PER_DAY

#: The GPU drawn (the Zeus paper's reference GPU).
FIGURE_GPU = REFERENCE_GPU
#: (policy value, label), drawn in this order: Default underneath, Zeus on top.
POLICIES: tuple[tuple[str, str], ...] = (("default", "Default"), ("zeus", "Zeus"))


def _select(power: pl.DataFrame) -> tuple[pl.DataFrame, str, list[str]]:
    """The Default and Zeus rows of the figure's GPU, that GPU, and the traces present (in drawing order)."""
    data = power.filter(pl.col("policy").is_in([p for p, _ in POLICIES]))
    if data.height == 0:
        raise NoData("no Default or Zeus power bins (cluster_power is empty)")
    gpus = style.ordered(data["gpu"].unique(), (FIGURE_GPU, *style.GPU_ORDER))
    gpu = gpus[0]
    data = data.filter(pl.col("gpu") == gpu)
    return data, gpu, style.ordered(data["trace"].unique(), TRACE_ORDER)


def _colors() -> dict[str, tuple[float, float, float]]:
    # Default and Zeus keep the colours they have in the other cluster figures (palette order of clusters.POLICIES)
    base = style.palette(3)
    return {"default": base[0], "zeus": base[2]}


def power_timeline(power: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Cluster power (kW, per bin) over days since the trace's first bin, Default vs Zeus; each policy's peak as a dashed line.

    One panel per trace (rows), ``FIGURE_GPU``; the panel title gives both peaks (kW) and Zeus's
    change vs Default.
    """
    data, gpu, traces = _select(power)
    data = timeline_frame(data)
    panels = [(f"{trace_label(trace)}, {gpu_label(gpu)}", data.filter(pl.col("trace") == trace)) for trace in traces]
    return timeline_figure(panels, bin_label(power)), data


def timeline_frame(power: pl.DataFrame) -> pl.DataFrame:
    """``cluster_power`` rows as plotted by ``timeline_figure``: trace, gpu, policy, day (since the trace's first bin), power_kw."""
    t0 = power.group_by("trace").agg(pl.col("bin_start_s").min().alias("t0"))
    return (
        power.join(t0, on="trace")
        .with_columns(
            ((pl.col("bin_start_s") - pl.col("t0")) / S_PER_DAY).alias("day"), (pl.col("mean_power_w") * KW_PER_W).alias("power_kw")
        )
        .select("trace", "gpu", "policy", "day", "power_kw")
        .sort("trace", "gpu", "policy", "day")
    )


def timeline_figure(panels: Sequence[tuple[str, pl.DataFrame]], bin_label: str, width: float = style.SINGLE_COLUMN,
                    panel_height: float = 1.35, peaks_in_title: bool = True, light: bool = False) -> Figure:
    """One panel per (title, ``timeline_frame`` rows of one cluster): each policy's power as steps, its peak dashed; the title
    ends with both peaks (kW) and Zeus's change vs Default unless ``peaks_in_title`` is False (a report whose table gives
    other peaks: the medians over its samples). ``width``, ``panel_height``: inches; ``light``: ``style.new_figure``'s."""
    fig, axes = style.new_figure(width, panel_height * len(panels) + 0.5, len(panels), 1, light=light)
    colors = _colors()
    for row, (name, d) in enumerate(panels):
        ax = axes[row, 0]
        peaks = {}
        for policy, _ in POLICIES:
            p = d.filter(pl.col("policy") == policy)
            if p.height == 0:
                continue
            # steps: each bin's mean holds over the whole bin
            ax.step(p["day"], p["power_kw"], where="post", color=colors[policy], lw=0.5, alpha=0.85 if policy == "zeus" else 0.6)
            peaks[policy] = _max(p["power_kw"])
            ax.axhline(peaks[policy], color=colors[policy], ls="--", lw=0.8)
        title = name
        if peaks_in_title and len(peaks) == len(POLICIES):
            title += f": peak {_kw(peaks['default'])} → {_kw(peaks['zeus'])} kW ({_signed_pct(peaks['zeus'], peaks['default'])})"
        ax.set_title(title)
        ax.set_ylim(0, 1.08 * max(peaks.values()))
        ax.set_xlim(0, _max(d["day"]))
        ax.set_ylabel("cluster power (kW)")
    axes[-1, 0].set_xlabel(f"days since the trace's first job ({bin_label} bins)")
    handles = [Line2D([], [], color=colors[p], label=label) for p, label in POLICIES]
    handles.append(Line2D([], [], color="grey", ls="--", lw=0.8, label="peak"))
    fig.legend(handles=handles, loc="outside upper center", ncols=len(handles))
    return fig


def load_duration_curve(power: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Load-duration curve: bin powers (kW) sorted descending against the hours at or above them, Default vs Zeus.

    One panel per trace (rows), ``FIGURE_GPU``; each policy's p99 as a dot (at 1% of its span) and
    Default's peak (the budget the cluster was built for) as a dotted line: the headroom of
    ``cluster_power_summary`` is the gap between them. The x axis is logarithmic: the hours that
    set the provisioning are the first few.
    """
    data, gpu, traces = _select(power)
    curves = load_duration(data, ("trace", "gpu", "policy")).sort("trace", "policy", "hours")
    panels = [(f"{trace_label(trace)}, {gpu_label(gpu)}", curves.filter(pl.col("trace") == trace)) for trace in traces]
    return load_duration_figure(panels), curves


def load_duration_figure(panels: Sequence[tuple[str, pl.DataFrame]], width: float = style.SINGLE_COLUMN,
                         panel_height: float = 1.35, light: bool = False) -> Figure:
    """One panel per (title, ``power.load_duration`` rows of one cluster: policy, hours, power_kw); see ``load_duration_curve``.
    ``light``: ``style.new_figure``'s."""
    fig, axes = style.new_figure(width, panel_height * len(panels) + 0.5, len(panels), 1, light=light)
    colors = _colors()
    for row, (name, d) in enumerate(panels):
        ax = axes[row, 0]
        for policy, _ in POLICIES:
            p = d.filter(pl.col("policy") == policy)
            if p.height == 0:
                continue
            ax.step(p["hours"], p["power_kw"], where="pre", color=colors[policy])
            # p99 (as in cluster_power_summary): the power exceeded during 1% of the policy's span
            p99 = float(np.quantile(p["power_kw"].to_numpy(), P99))
            ax.plot([(1 - P99) * _max(p["hours"])], [p99], "o", color=colors[policy], mec="white", mew=0.6, ms=4.5, zorder=3)
            if policy == "default":
                ax.axhline(_max(p["power_kw"]), color=colors[policy], ls=":", lw=0.8)
        style.log_scale(ax, "x")
        ax.set_xlim(_min(d["hours"]), _max(d["hours"]))
        ax.set_ylim(0, 1.08 * _max(d["power_kw"]))
        ax.set_ylabel("cluster power (kW)")
        ax.set_title(name)
    axes[-1, 0].set_xlabel("hours at or above this power (log)")
    handles = [Line2D([], [], color=colors[p], label=label) for p, label in POLICIES]
    handles += [Line2D([], [], color=colors["default"], ls=":", lw=0.8, label="Default peak"),
                Line2D([], [], color="grey", marker="o", ls="none", mec="white", mew=0.6, ms=4.5, label="p99 (1% of the time)")]
    fig.legend(handles=handles, loc="outside upper center", ncols=2)
    return fig


def _max(values: pl.Series) -> float:
    return float(values.cast(pl.Float64).max())  # type: ignore[arg-type]  # a float column's max is a float


def _min(values: pl.Series) -> float:
    return float(values.cast(pl.Float64).min())  # type: ignore[arg-type]  # a float column's min is a float


def _kw(value: float) -> str:
    """A power in kW: whole kW from 100 kW up (``1,234``), else three significant digits (``2.73``, ``0.412``)."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _signed_pct(value: float, reference: float) -> str:
    """``value`` relative to ``reference`` as a signed percent change, e.g. "−31%" (a true minus sign)."""
    change = 100 * (value / reference - 1)
    return f"{'−' if change < 0 else '+'}{abs(change):.0f}%"


def bin_label(power: pl.DataFrame) -> str:
    """The bins' length as read in an axis label (``5 min``)."""
    lengths = (power["bin_end_s"] - power["bin_start_s"]).unique()
    seconds = float(lengths[0]) if lengths.len() == 1 else float("nan")
    return f"{seconds / 60:g} min" if seconds % 60 == 0 else f"{seconds:g} s"
