"""Zeus² figures: cost over the batch split per pair of power limits, and the methods compared.

Each function takes frames from ``pipelines.hetero`` (``curves.split_curves`` rows, the
``allocations`` table) and returns ``(Figure, data)``: the figure and exactly the rows it plots.
Raises ``NoData`` when there is nothing to draw.
"""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from pipelines.figures import style
from pipelines.figures.errors import NoData
from pipelines.vocabulary import dataset_label, gpu_label

MODEL_LABELS: dict[str, str] = {"published": "published cost (sum over GPUs)", "sync": "synchronous model"}
#: Method -> (label, marker) of the optimum markers.
METHOD_MARKS: dict[str, tuple[str, str]] = {
    "brute": ("brute-force optimum", "*"),
    "heuristic": ("heuristic optimum", "D"),
    "baseline": ("baseline (even split)", "s"),
}
#: The y axes of the split figure end at this multiple of the panel's lowest cost (the optima are the point).
Y_SPAN = 2.0
_LINESTYLES = ("-", "--", ":", "-.")
#: Bars of the methods figure: (method, model) -> label, in drawing order.
BARS: tuple[tuple[str, str, str], ...] = (
    ("baseline", "published", "baseline"),
    ("heuristic", "published", "heuristic"),
    ("brute", "published", "brute force"),
    ("brute", "sync", "sync optimum"),
)


def _workloads(frame: pl.DataFrame) -> list[str]:
    return style.ordered(frame["workload"].unique(), style.DATASET_ORDER)


def cost_split(curves: pl.DataFrame, allocations: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Cost (J) over GPU 1's share of the global batch, one line per pair of power limits.

    Rows: the cost model (published, sync); columns: workloads. Colour = GPU 1's power limit,
    line style = GPU 2's; markers: each method's optimum under that row's model. A panel's y axis
    is logarithmic where its costs span a factor of 4 or more.
    """
    if curves.height == 0:
        raise NoData("no split curves (need a workload profiled on two GPUs)")
    workloads = _workloads(curves)
    models = [m for m in ("published", "sync") if m in set(curves["model"])]
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 2.2 * len(models) + 0.6, len(models), len(workloads), sharex="col")
    first = curves.row(0, named=True)
    limits_1 = sorted(curves["power_limit_1"].unique())
    limits_2 = sorted(curves["power_limit_2"].unique(), reverse=True)
    norm = mpl.colors.Normalize(vmin=min(limits_1) - 0.15 * (max(limits_1) - min(limits_1)), vmax=max(limits_1))
    cmap = mpl.colormaps[style.SEQUENTIAL_CMAP]
    marks = allocations.filter(pl.col("method").is_in(list(METHOD_MARKS)))
    star = style.palette(4)[3]  # vermillion: stands apart from viridis
    for r, model in enumerate(models):
        for c, workload in enumerate(workloads):
            ax = axes[r][c]
            data = curves.filter((pl.col("model") == model) & (pl.col("workload") == workload))
            for (l1, l2), line in data.group_by("power_limit_1", "power_limit_2", maintain_order=True):
                ls = _LINESTYLES[limits_2.index(l2) % len(_LINESTYLES)]
                ax.plot(line["batch_1"], line["cost"], color=cmap(norm(l1)), ls=ls, lw=0.8)
            for method, (_, marker) in METHOD_MARKS.items():
                hit = marks.filter((pl.col("model") == model) & (pl.col("workload") == workload) & (pl.col("method") == method))
                if hit.height:
                    row = hit.row(0, named=True)
                    ax.scatter(row["batch_split"][0], row["cost"], zorder=5, **_mark_style(marker, star, scatter=True))
            low = float(data["cost"].to_numpy().min())
            ax.set_ylim(low - 0.05 * (Y_SPAN - 1) * low, Y_SPAN * low)
            g1, g2 = gpu_label(data["gpu_1"][0]), gpu_label(data["gpu_2"][0])
            ax.set_title(f"{dataset_label(workload)}, {MODEL_LABELS[model]}")
            ax.set_ylabel("cost per profiled window (J)")
            if r == len(models) - 1:
                global_batch = data.select(pl.col("batch_1").max() + pl.col("batch_1").min()).item()
                ax.set_xlabel(f"samples on {g1} (the {g2} gets the rest of {global_batch})")
    g1, g2 = gpu_label(first["gpu_1"]), gpu_label(first["gpu_2"])
    columns = [
        [Line2D([], [], color=cmap(norm(l1)), lw=1.2, label=f"{g1} at {l1} W") for l1 in limits_1],
        [Line2D([], [], color="grey", ls=_LINESTYLES[i % len(_LINESTYLES)], lw=1.0, label=f"{g2} at {l2} W") for i, l2 in enumerate(limits_2)],
        [Line2D([], [], lw=0, label=label, **_mark_style(marker, star)) for label, marker in METHOD_MARKS.values()],
    ]
    rows = max(len(col) for col in columns)
    handles = [h for col in columns for h in col + [Line2D([], [], lw=0, label=" ")] * (rows - len(col))]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(columns))
    fig.suptitle(f"Cost over the split of the global batch (y axes end at {Y_SPAN:g} x each panel's lowest cost)")
    return fig, curves


def _mark_style(marker: str, star_color: tuple[float, float, float], scatter: bool = False) -> dict[str, Any]:
    """The brute-force star filled; the other optima as hollow black outlines drawn around it."""
    size = {"*": 9.0, "D": 7.0, "s": 6.0}[marker]
    filled = marker == "*"
    if scatter:
        return {"marker": marker, "s": size**2, "facecolor": star_color if filled else "none", "edgecolor": "black",
                "linewidths": 0.4 if filled else 0.9}
    return {"marker": marker, "markersize": size, "markerfacecolor": star_color if filled else "none",
            "markeredgecolor": "black", "markeredgewidth": 0.4 if filled else 0.9}


def methods_data(allocations: pl.DataFrame) -> pl.DataFrame:
    """The bars of ``methods``: per workload and bar, the allocation and its cost under both models (J)."""
    rows = []
    for method, model, label in BARS:
        hit = allocations.filter((pl.col("method") == method) & (pl.col("model") == model))
        for row in hit.iter_rows(named=True):
            rows.append(
                {
                    "workload": row["workload"],
                    "bar": label.replace("\n", " "),
                    "method": method,
                    "model": model,
                    "batch_split": row["batch_split"],
                    "power_limits": row["power_limits"],
                    "published_cost": row["published_cost"],
                    "sync_cost": row["sync_cost"],
                    "sync_time_s": row["sync_time_s"],
                    "sync_energy_j": row["sync_energy_j"],
                }
            )
    return pl.DataFrame(rows)


def methods(allocations: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Baseline, heuristic and brute force (published cost) next to the synchronous optimum, per workload.

    Each bar pair is one allocation: its published cost (light) and its cost under the synchronous
    model (dark), in J; the split and limits are written under the bars.
    """
    data = methods_data(allocations)
    if data.height == 0:
        raise NoData("no allocations to compare")
    workloads = _workloads(data)
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 2.6, 1, len(workloads))
    light, dark = style.palette(2)
    width = 0.38
    for ax, workload in zip(axes[0], workloads, strict=True):
        d = data.filter(pl.col("workload") == workload)
        x = np.arange(d.height)
        ax.bar(x - width / 2, d["published_cost"], width, color=light)
        ax.bar(x + width / 2, d["sync_cost"], width, color=dark)
        labels = [
            f"{b}\n{' / '.join(map(str, s))}\n{' / '.join(map(str, w))} W"
            for b, s, w in zip(d["bar"], d["batch_split"], d["power_limits"], strict=True)
        ]
        ax.set_xticks(x, labels)
        ax.set_ylabel("cost per profiled window (J)")
        gpus = allocations.filter(pl.col("workload") == workload)["gpus"][0]
        ax.set_title(f"{dataset_label(workload)} on {' + '.join(gpu_label(g) for g in gpus)}")
        ax.set_xlabel("method: batch split (samples) and power limits")
        ax.set_ylim(0, 1.08 * d.select(pl.max_horizontal(pl.col("published_cost").max(), pl.col("sync_cost").max())).item())
    idle = allocations["idle_power_w"][0].to_list()
    gpus = allocations["gpus"][0].to_list()
    waiting = ", ".join(f"{gpu_label(g)} {w:g} W" for g, w in zip(gpus, idle, strict=True))
    fig.legend(handles=[Patch(color=light, label="published cost (sum over GPUs)"),
                        Patch(color=dark, label=f"cost in synchronous training (idle while waiting: {waiting})")],
               loc="outside lower center", ncol=2)
    return fig, data
