"""Measured fleets beside simulated ones: CDFs of per-GPU draw in % TDP over GPU-time.

Input: ``fleet_power_cdf`` (AcmeTrace's measured per-GPU power), ``zeus_cluster_history`` and
``cluster_power_summary`` (all partitions). One panel per public trace simulated on the figure's
GPU (ITP and ElasticFlow here; ``FIGURE_GPU``, else the first in ``style.GPU_ORDER``), each with the
measured Seren and Kalos curves (A100, % of 400 W) and the simulated Default and Zeus fleets (idle
GPUs included, % of the simulated GPU's TDP); the legend gives each simulated fleet's KS distance
to Seren. Returns ``(Figure, data)`` with exactly the points drawn; ``NoData`` when there is none.
"""

from __future__ import annotations

import polars as pl
from matplotlib.figure import Figure

from pipelines.clusters import fleet
from pipelines.clusters.distributions import Polyline, ks_distance
from pipelines.figures import style
from pipelines.figures.cluster_power import FIGURE_GPU, POLICIES
from pipelines.figures.errors import NoData
from pipelines.vocabulary import gpu_label

#: The simulated traces drawn, one panel each.
TRACES: tuple[tuple[str, str], ...] = (("itp", "ITP"), ("elasticflow", "ElasticFlow"))


def _points(panel: str, curve: str, source: str, gpu: str, dist: Polyline) -> pl.DataFrame:
    return pl.DataFrame({"panel": panel, "curve": curve, "source": source, "gpu": gpu, "pct_tdp": dist.x, "cdf_pct": 100 * dist.F})


def fleet_power_cdfs(fleet_cdf: pl.DataFrame, history: pl.DataFrame, summary: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Per trace: measured Seren and Kalos beside simulated Default and Zeus, % TDP on x, CDF of GPU-time on y."""
    fleets = {(f.trace, f.gpu, f.policy): f for f in fleet.fleets(summary)}
    traces = [(t, label) for t, label in TRACES if any(k[0] == t for k in fleets)]
    if not traces:
        raise NoData("no simulated fleet of ITP or ElasticFlow with a cluster size (cluster_power_summary)")
    gpus = style.ordered({k[1] for k in fleets if k[0] in dict(traces)}, (FIGURE_GPU, *style.GPU_ORDER))
    gpu = gpus[0]
    measured = {c: fleet.measured_pct_tdp(fleet_cdf, c) for c in fleet.MEASURED}
    draws = fleet.busy_draws(history.filter(pl.col("gpu") == gpu))
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 2.6, 1, len(traces), sharey="row")
    colors = style.palette(4)
    measured_style = {"seren": ("0.15", "-"), "kalos": ("0.45", "--")}
    policy_color = {"default": colors[0], "zeus": colors[2]}
    frames = []
    for col, (trace, label) in enumerate(traces):
        ax = axes[0, col]
        for cluster, dist in measured.items():
            name = f"{cluster.title()} (measured, A100)"
            color, ls = measured_style[cluster]
            ax.plot(dist.x, 100 * dist.F, color=color, ls=ls, lw=1.0, label=name)
            frames.append(_points(label, name, "measured", fleet.MEASURED_GPU, dist))
        size = None
        for policy, policy_label in POLICIES:
            f = fleets.get((trace, gpu, policy))
            if f is None:
                continue
            size = f.cluster_gpus
            dist = fleet.simulated_pct_tdp(draws.filter((pl.col("trace") == trace) & (pl.col("policy") == policy)), f)
            name = f"{policy_label} (simulated, {gpu_label(gpu)})"
            ax.plot(dist.x, 100 * dist.F, color=policy_color[policy], lw=1.3,
                    label=f"{name}, KS vs Seren {ks_distance(dist, measured['seren']):.2f}")
            frames.append(_points(label, name, "simulated", gpu, dist))
        ax.axvline(fleet.LOW_PCT_TDP, color="0.6", ls=":", lw=0.8)
        ax.text(fleet.LOW_PCT_TDP + 1, 97, f"{fleet.LOW_PCT_TDP:g}% TDP", color="0.4", fontsize=style.SMALL_FONT_SIZE - 1, va="top")
        ax.set_xlim(0, 150)
        ax.set_ylim(0, 100)
        ax.set_title(f"{label} on the {gpu_label(gpu)}" + (f" ({size:,} GPUs)" if size else "") + " vs AcmeTrace")
        ax.set_xlabel("per-GPU draw (% of TDP)")
        ax.legend(loc="lower right", fontsize=style.SMALL_FONT_SIZE - 1)
    axes[0, 0].set_ylabel("GPU-time at or below (%)")
    return fig, pl.concat(frames)
