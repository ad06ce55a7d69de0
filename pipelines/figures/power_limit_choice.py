"""Zeus's profiles in raw/measured: energy and time per power limit, and the limit each of Zeus's selectors chooses.

``power_limit_choice`` takes ``power_limit_profiles`` and draws, per profile file, the energy (J)
and the time (s) of each limit's profiling window (one epoch's, for a JSON ``measure profile`` wrote), with a marker on the limit that each selector of
GlobalPowerLimitOptimizer chooses (``pipelines.zeus.limit_selectors``: ZeusCost at eta 0.5 on the
file's GPUs, Energy, Time, MaxSlowdownConstraint(1.1)). Returns ``(Figure, data)``: the figure
and exactly the rows it plots (contract ``PowerLimitChoices``). Raises ``NoData`` when
raw/measured holds no Zeus profile.
"""

from __future__ import annotations

import math

import polars as pl
from matplotlib.figure import Figure

from pipelines.figures import style
from pipelines.figures.errors import NoData
from pipelines.vocabulary import DEFAULT_ETA
from pipelines.zeus.limit_selectors import Measurement, Selector, choose

#: The slowdown factor of the MaxSlowdownConstraint drawn.
MAX_SLOWDOWN = 1.1
#: Data column, legend label, marker and size of each selector (largest first: markers on the same limit stay visible).
MARKS = (
    ("zeus_cost", f"ZeusCost (eta {DEFAULT_ETA:g})", "o", 9.0),
    ("energy_min", "Energy", "s", 6.5),
    ("time_min", "Time", "D", 4.5),
    ("max_slowdown", f"MaxSlowdown ({MAX_SLOWDOWN:g} x)", "^", 3.0),
)
#: Profiles per row of panels.
PER_ROW = 4


def choices(profiles: pl.DataFrame) -> pl.DataFrame:
    """Each limit of each profile (file order) with the selectors that choose it (``PowerLimitChoices``)."""
    out = []
    for _, rows in profiles.sort("source", "position").group_by("source", maintain_order=True):
        world_size = rows["world_size"][0] or 1
        measurements = [Measurement(*r) for r in rows.select("power_limit", "energy", "time").iter_rows()]
        chosen = {
            "zeus_cost": choose(measurements, Selector("zeus-cost", world_size=world_size)),
            "energy_min": choose(measurements, Selector("energy")),
            "time_min": choose(measurements, Selector("time")),
            "max_slowdown": choose(measurements, Selector("max-slowdown", max_slowdown=MAX_SLOWDOWN)),
        }
        out.append(rows.select("source", "format", "power_limit", "energy", "time").with_columns(
            world_size=pl.lit(world_size, pl.Int64), **{k: pl.col("power_limit") == v for k, v in chosen.items()}))
    return pl.concat(out).select("source", "format", "world_size", "power_limit", "energy", "time", *(m[0] for m in MARKS))


def power_limit_choice(profiles: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Energy (J) and time (s) vs power limit (W) of every Zeus profile in raw/measured, with each selector's choice marked."""
    if profiles.height == 0:
        raise NoData("no Zeus profile in raw/measured: drop a ZeusMonitor log (CSV) or GlobalPowerLimitOptimizer's profile JSON "
                     "there, or run `python -m pipelines measure profile` at several --power-limits")
    data = choices(profiles)
    sources = data["source"].unique(maintain_order=True).to_list()
    ncols = min(len(sources), PER_ROW)
    bands = math.ceil(len(sources) / ncols)
    width = style.DOUBLE_COLUMN if ncols > 1 else style.SINGLE_COLUMN + 0.4
    fig, axes = style.new_figure(width, 2.7 * bands + 0.5, 2 * bands, ncols, sharex="col")
    line_color, mark_colors = style.palette(1)[0], style.palette(len(MARKS) + 1)[1:]
    for i, source in enumerate(sources):
        d = data.filter(pl.col("source") == source).sort("power_limit")
        top, bottom = axes[2 * (i // ncols), i % ncols], axes[2 * (i // ncols) + 1, i % ncols]
        for ax, column in ((top, "energy"), (bottom, "time")):
            ax.plot(d["power_limit"], d[column], color=line_color, lw=0.9, marker=".", markersize=3)
            ax.margins(x=0.08, y=0.15)  # room for the markers of a choice at the edge
            for (flag, label, marker, size), color in zip(MARKS, mark_colors, strict=True):
                picked = d.filter(pl.col(flag))
                ax.plot(picked["power_limit"], picked[column], linestyle="none", marker=marker, markersize=size, markerfacecolor="none",
                        markeredgewidth=1.1, color=color, label=label)
        gpus = d["world_size"][0]
        gpu_text = f"{gpus} GPU{'s' if gpus > 1 else ''}"
        top.set_title(f"{source}\n({'JSON: ' + gpu_text + ' assumed' if d['format'][0] == 'zeus-json' else gpu_text})",
                      fontsize=style.SMALL_FONT_SIZE)
        bottom.set_xlabel("power limit (W)")
        if i % ncols == 0:
            top.set_ylabel("energy (J)")
            bottom.set_ylabel("time (s)")
    for j in range(len(sources), bands * ncols):
        for ax in axes[2 * (j // ncols): 2 * (j // ncols) + 2, j % ncols]:
            ax.axis("off")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(MARKS), title="limit chosen by GlobalPowerLimitOptimizer's selector")
    fig.suptitle("Zeus profiles in raw/measured: energy and time at each power limit", fontsize=style.FONT_SIZE)
    return fig, data
