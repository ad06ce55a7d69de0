"""Energy figures from the Zeus traces: ETA vs TTA, potential savings, eta sensitivity, power-limit response.

Each function takes frames from ``energy_data`` (or ``zeus_power_profiles``) and returns
``(Figure, data)``: the figure and exactly the rows it plots. Raises ``NoData`` when there is
nothing to draw.
"""

from __future__ import annotations

import math

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from pipelines.contracts.base import conform
from pipelines.contracts.figures import EtaVsTta, PowerLimitResponse
from pipelines.figures import style
from pipelines.figures.errors import NoData
from pipelines.vocabulary import WORKLOAD_BY_DATASET, Job, dataset_label, gpu_label
from pipelines.vocabulary.units import J_PER_MJ, S_PER_H

_LINESTYLES = ("-", "--", "-.", ":")


def _grid(n: int, ncols: int) -> tuple[int, int]:
    return math.ceil(n / ncols), min(n, ncols)


def _hide_unused(fig: Figure, axes: np.ndarray, used: int) -> None:
    for ax in axes.flat[used:]:
        fig.delaxes(ax)


def eta_vs_tta(expectations: pl.DataFrame, gpu: str) -> tuple[Figure, pl.DataFrame]:
    """ETA (MJ) vs TTA (h) of every (batch size, power limit) of every workload on ``gpu``.

    Colour = power limit (W); the Pareto front is the black line; the star is Default (b0 at the
    largest limit); hollow markers reached the target in only some runs. One panel per workload;
    an axis is logarithmic where its values span a factor of 4 or more.
    """
    data = expectations.filter(pl.col("gpu") == gpu)
    if data.height == 0:
        raise NoData(f"no configurations for GPU {gpu!r}")
    datasets = style.ordered(data["dataset"].unique(), style.DATASET_ORDER)
    nrows, ncols = _grid(len(datasets), 3)
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 2.0 * nrows + 0.35, nrows, ncols)
    limits = data["power_limit"]
    norm = mpl.colors.Normalize(vmin=float(limits.to_numpy().min()), vmax=float(limits.to_numpy().max()))
    cmap = mpl.colormaps[style.SEQUENTIAL_CMAP]
    default_color = style.palette(4)[3]  # vermillion: stands apart from viridis
    for ax, dataset in zip(axes.flat, datasets, strict=False):
        d = data.filter(pl.col("dataset") == dataset)
        tta, eta = (d["tta_s"] / S_PER_H).to_numpy(), (d["eta_j"] / J_PER_MJ).to_numpy()
        full = (d["reach_rate"] >= 1.0).to_numpy()
        colors = cmap(norm(d["power_limit"].to_numpy()))
        ax.scatter(tta[full], eta[full], c=colors[full], s=10, linewidths=0, zorder=2)
        if (~full).any():
            ax.scatter(tta[~full], eta[~full], facecolors="none", edgecolors=colors[~full], s=10, linewidths=0.7, zorder=2)
        front = d.filter(pl.col("is_pareto")).sort("tta_s")
        ax.plot(front["tta_s"] / S_PER_H, front["eta_j"] / J_PER_MJ, color="black", lw=0.9, zorder=3)
        ax.scatter(front["tta_s"] / S_PER_H, front["eta_j"] / J_PER_MJ, facecolors="none", edgecolors="black", s=18, linewidths=0.7, zorder=3)
        default = d.filter(pl.col("is_default"))
        if default.height:
            ax.scatter(default["tta_s"] / S_PER_H, default["eta_j"] / J_PER_MJ, marker="*", s=90, color=default_color,
                       edgecolors="black", linewidths=0.5, zorder=4)
        style.auto_log_scale(ax, "x", tta)
        style.auto_log_scale(ax, "y", eta)
        ax.set_title(f"{dataset_label(dataset)} (b0 = {d['default_batch_size'][0]})")
        ax.set_xlabel("TTA (h)")
        ax.set_ylabel("ETA (MJ)")
    _hide_unused(fig, axes, len(datasets))
    handles = [
        Line2D([], [], color="black", marker="o", markerfacecolor="none", lw=0.9, markersize=4, label="Pareto front"),
        Line2D([], [], color=default_color, marker="*", markeredgecolor="black", markeredgewidth=0.5, lw=0, markersize=9,
               label="Default (b0, max limit)"),
        Line2D([], [], color="grey", marker="o", markerfacecolor="none", lw=0, markersize=4, label="target reached in some runs only"),
    ]
    if bool((data["reach_rate"] >= 1.0).all()):
        handles = handles[:2]
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles))
    style.colorbar(fig, mpl.cm.ScalarMappable(norm=norm, cmap=cmap), axes, "power limit (W)")
    fig.suptitle(f"{gpu_label(gpu)}: energy vs time to accuracy of every (batch size, power limit)")
    return fig, conform(data, EtaVsTta)


def savings_bars(savings: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Energy and time saved (%) by the best configuration vs Default, per workload (x) and GPU (hue).

    Panels: energy saving of each criterion of ``savings`` (``energy_data.savings_vs_default``), then
    the time saving of the last criterion (negative: slower than Default).
    """
    if savings.height == 0:
        raise NoData("no (gpu, workload) with a Default configuration")
    criteria = list(dict.fromkeys(savings["criterion"].to_list()))
    gpus = style.ordered(savings["gpu"].unique(), style.GPU_ORDER)
    datasets = style.ordered(savings["dataset"].unique(), style.DATASET_ORDER)
    shown = {c: c.replace("eta =", "η =") for c in criteria}
    panels = [(c, "energy_saving", f"energy saved (%)\n{shown[c]}") for c in criteria]
    panels.append((criteria[-1], "time_saving", f"time saved (%)\n{shown[criteria[-1]]}"))
    fig, axes = style.new_figure(style.SINGLE_COLUMN, 1.45 * len(panels) + 0.6, len(panels), 1, sharex=True)
    colors = style.palette(len(gpus))
    width = 0.8 / len(gpus)
    x = np.arange(len(datasets))
    for ax, (criterion, column, label) in zip(axes[:, 0], panels, strict=True):
        d = savings.filter(pl.col("criterion") == criterion)
        for i, gpu in enumerate(gpus):
            values = {r["dataset"]: r[column] for r in d.filter(pl.col("gpu") == gpu).iter_rows(named=True)}
            ys = np.array([100.0 * values.get(ds, np.nan) for ds in datasets])
            xs = x - 0.4 + width * (i + 0.5)
            ax.bar(xs, ys, width, color=colors[i], label=gpu_label(gpu), linewidth=0)
            for xi, yi in zip(xs, ys, strict=True):
                if yi == 0.0:  # Default is already the best: say so instead of drawing nothing
                    ax.text(xi, 0.0, "0", ha="center", va="bottom", fontsize=style.SMALL_FONT_SIZE - 1, color=colors[i])
        ax.axhline(0.0, color="black", lw=0.6)
        ax.set_ylabel(label)
        ax.grid(axis="x", visible=False)
    energy_axes = [ax for ax, (_, column, _) in zip(axes[:, 0], panels, strict=True) if column == "energy_saving"]
    lo = min(*(ax.get_ylim()[0] for ax in energy_axes), 0.0)
    hi = max(ax.get_ylim()[1] for ax in energy_axes)
    for ax in energy_axes:
        ax.set_ylim(lo, hi)
    axes[-1, 0].set_xticks(x, [dataset_label(d) for d in datasets], rotation=30, ha="right", rotation_mode="anchor")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=len(gpus), title="potential savings vs Default")
    return fig, savings.sort("criterion", "gpu", "dataset")


def eta_sensitivity(sweep: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Energy and time of the least-cost(eta) configuration relative to Default, as eta goes 0 -> 1.

    Rows: ETA / Default ETA, TTA / Default TTA; one column per workload; one line per GPU (steps:
    the optimum changes only at a few eta). Below 1 is a saving.
    """
    if sweep.height == 0:
        raise NoData("empty eta sweep")
    gpus = style.ordered(sweep["gpu"].unique(), style.GPU_ORDER)
    datasets = style.ordered(sweep["dataset"].unique(), style.DATASET_ORDER)
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 3.3, 2, len(datasets), sharex=True, sharey="row")
    colors = style.palette(len(gpus))
    for j, dataset in enumerate(datasets):
        for row, (column, label) in enumerate((("energy_ratio", "ETA / Default ETA"), ("time_ratio", "TTA / Default TTA"))):
            ax = axes[row, j]
            for i, gpu in enumerate(gpus):
                d = sweep.filter((pl.col("gpu") == gpu) & (pl.col("dataset") == dataset)).sort("eta")
                if d.height:
                    ax.plot(d["eta"], d[column], drawstyle="steps-mid", color=colors[i], ls=_LINESTYLES[i % len(_LINESTYLES)],
                            label=gpu_label(gpu))
            ax.axhline(1.0, color="black", lw=0.6)
            ax.set_xlim(0.0, 1.0)
            ax.set_xticks([0.0, 0.5, 1.0], ["0", "0.5", "1"])
            if j == 0:
                ax.set_ylabel(label)
            if row == 0:
                ax.set_title(dataset_label(dataset))
    fig.supxlabel("η (weight of energy in the cost)", fontsize=style.FONT_SIZE)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=len(gpus),
               title="configuration of least cost = η·ETA + (1 − η)·MaxPower·TTA, relative to Default")
    return fig, sweep


def _workload(dataset: str) -> Job:
    if dataset not in WORKLOAD_BY_DATASET:
        raise NoData(f"unknown workload {dataset!r}")
    return WORKLOAD_BY_DATASET[dataset]


def power_limit_response(power: pl.DataFrame, dataset: str) -> tuple[Figure, pl.DataFrame]:
    """Time per epoch (s, log) and average power (W) vs power limit (W) of ``dataset``, one line per batch size.

    ``power`` is ``zeus_power_profiles``; only the workload's optimizer is drawn. One column per GPU;
    the dashed diagonal in the power row is power = limit.
    """
    w = _workload(dataset)
    data = power.filter((pl.col("dataset") == w.dataset) & (pl.col("network") == w.network) & (pl.col("optimizer") == w.optimizer))
    if data.height == 0:
        raise NoData(f"no power rows for {dataset}")
    gpus = style.ordered(data["gpu"].unique(), style.GPU_ORDER)
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 3.6, 2, len(gpus), sharex="col", sharey="row")
    sizes = data["batch_size"]
    smallest, largest = float(sizes.to_numpy().min()), float(sizes.to_numpy().max())
    norm = mpl.colors.LogNorm(vmin=smallest, vmax=max(largest, smallest * 2))
    cmap = mpl.colormaps[style.SEQUENTIAL_CMAP]
    for j, gpu in enumerate(gpus):
        d = data.filter(pl.col("gpu") == gpu)
        for bs in sorted(d["batch_size"].unique().to_list()):
            b = d.filter(pl.col("batch_size") == bs).sort("power_limit")
            color = cmap(norm(bs))
            axes[0, j].plot(b["power_limit"], b["time_per_epoch"], color=color, marker="o", markersize=2.2, lw=0.9)
            axes[1, j].plot(b["power_limit"], b["average_power"], color=color, marker="o", markersize=2.2, lw=0.9)
        lo, hi = int(d["power_limit"].to_numpy().min()), int(d["power_limit"].to_numpy().max())
        axes[1, j].plot([lo, hi], [lo, hi], color="grey", ls="--", lw=0.7, zorder=0)
        axes[0, j].set_title(gpu_label(gpu))
        style.log_scale(axes[0, j], "y")
        axes[1, j].set_xlabel("power limit (W)")
        for ax in axes[:, j]:
            ax.set_xlim(lo - 8, hi + 8)
    axes[0, 0].set_ylabel("time per epoch (s)")
    axes[1, 0].set_ylabel("average power (W)")
    present = sorted(sizes.unique().to_list())
    ticks = [b for b in present if b & (b - 1) == 0][::2] or present  # every other power of two
    style.colorbar(fig, mpl.cm.ScalarMappable(norm=norm, cmap=cmap), axes, "batch size", ticks=ticks, format="%d")
    fig.suptitle(f"{dataset_label(dataset)} ({w.network}, {w.optimizer}): epoch time and power vs power limit "
                 "(dashed: power = limit)", fontsize=style.FONT_SIZE)
    return fig, conform(data, PowerLimitResponse).sort("gpu", "batch_size", "power_limit")
