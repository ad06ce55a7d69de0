"""Measured power profiles (``python -m pipelines measure profile``): epoch time and power of our own GPUs.

``measured_profiles`` takes ``zeus_power_profiles`` and draws only the rows whose ``source``
starts with ``measured``. Returns ``(Figure, data)``: the figure and exactly the rows it plots.
Raises ``NoData`` when no measured profile has been ingested.
"""

from __future__ import annotations

import matplotlib as mpl
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pipelines.figures import style
from pipelines.figures.errors import NoData
from pipelines.vocabulary import dataset_label, gpu_label

_COLUMNS = ["gpu", "dataset", "network", "optimizer", "batch_size", "power_limit", "time_per_epoch", "average_power", "source"]


def _batch_size_axis(ax: Axes, batch_sizes: list[int]) -> None:
    """Log-2 x axis labelled at the measured batch sizes (every other one when there are many)."""
    ax.set_xscale("log", base=2)
    ticks = batch_sizes if len(batch_sizes) <= 7 else batch_sizes[::2]
    ax.set_xticks(ticks, [str(b) for b in ticks])
    ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())


def measured_profiles(power: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Time per epoch (s, log) and average power (W) vs batch size (log 2) of every measured GPU and workload.

    One column per (GPU, workload, optimizer); one line per power limit (W), coloured by limit.
    Where some profile has several limits, two more rows draw the same quantities vs power limit
    (W), one line per batch size.
    """
    data = power.filter(pl.col("source").str.starts_with("measured")).select(_COLUMNS)
    if data.height == 0:
        raise NoData(
            "no measured power profiles: run `python -m pipelines measure profile ... --out raw/measured/NAME.csv` and materialize zeus_power_profiles"
        )
    data = data.sort("gpu", "dataset", "optimizer", "power_limit", "batch_size")
    panels = data.select("gpu", "dataset", "network", "optimizer").unique(maintain_order=True).rows()
    several_limits = bool((data.group_by("gpu", "dataset", "optimizer").agg(pl.col("power_limit").n_unique())["power_limit"] > 1).any())
    nrows = 4 if several_limits else 2
    width = style.DOUBLE_COLUMN if len(panels) > 1 else style.SINGLE_COLUMN + 0.7
    fig, axes = style.new_figure(width, 1.6 * nrows + 0.6, nrows, len(panels))
    cmap = mpl.colormaps[style.SEQUENTIAL_CMAP]
    limits = data["power_limit"]
    lowest, highest = float(limits.to_numpy().min()), float(limits.to_numpy().max())
    limit_norm = mpl.colors.Normalize(vmin=lowest, vmax=max(highest, lowest + 1))
    sizes = data["batch_size"]
    smallest, largest = float(sizes.to_numpy().min()), float(sizes.to_numpy().max())
    size_norm = mpl.colors.LogNorm(vmin=smallest, vmax=max(largest, smallest * 2))
    for j, (gpu, dataset, network, optimizer) in enumerate(panels):
        d = data.filter((pl.col("gpu") == gpu) & (pl.col("dataset") == dataset) & (pl.col("optimizer") == optimizer))
        for (limit,), by_limit in d.group_by("power_limit", maintain_order=True):
            color = cmap(limit_norm(limit)) if several_limits else style.palette(1)[0]
            label = f"{limit} W"
            axes[0, j].plot(by_limit["batch_size"], by_limit["time_per_epoch"], marker="o", markersize=2.5, lw=0.9, color=color, label=label)
            axes[1, j].plot(by_limit["batch_size"], by_limit["average_power"], marker="o", markersize=2.5, lw=0.9, color=color, label=label)
        style.log_scale(axes[0, j], "y")
        for ax in axes[:2, j]:
            _batch_size_axis(ax, d["batch_size"].unique().sort().to_list())
        axes[0, j].set_title(f"{gpu_label(gpu)}\n{dataset_label(dataset)} ({network}, {optimizer})")
        axes[1, j].set_xlabel("batch size")
        if several_limits and d["power_limit"].n_unique() == 1:
            for ax in axes[2:, j]:
                ax.axis("off")
            axes[2, j].text(0.5, 0.5, f"one power limit ({d['power_limit'][0]} W)", ha="center", va="center", transform=axes[2, j].transAxes)
        elif several_limits:
            for (bs,), by_size in d.sort("power_limit").group_by("batch_size", maintain_order=True):
                color = cmap(size_norm(bs))
                axes[2, j].plot(by_size["power_limit"], by_size["time_per_epoch"], marker="o", markersize=2.5, lw=0.9, color=color)
                axes[3, j].plot(by_size["power_limit"], by_size["average_power"], marker="o", markersize=2.5, lw=0.9, color=color)
            style.log_scale(axes[2, j], "y")
            axes[3, j].set_xlabel("power limit (W)")
        elif d["power_limit"].n_unique() == 1:
            axes[1, j].legend(title="power limit", loc="best")
    axes[0, 0].set_ylabel("time per epoch (s)")
    axes[1, 0].set_ylabel("average power (W)")
    if several_limits:
        axes[2, 0].set_ylabel("time per epoch (s)")
        axes[3, 0].set_ylabel("average power (W)")
        style.colorbar(fig, mpl.cm.ScalarMappable(norm=limit_norm, cmap=cmap), axes[:2, :], "power limit (W)")
        present = sorted(sizes.unique().to_list())
        ticks = [b for b in present if b & (b - 1) == 0][::2] or present  # every other power of two
        style.colorbar(fig, mpl.cm.ScalarMappable(norm=size_norm, cmap=cmap), axes[2:, :], "batch size", ticks=ticks, format="%d")
    fig.suptitle("Measured profiles: epoch time and average power", fontsize=style.FONT_SIZE)
    return fig, data
