"""Measured fleets beside simulated ones: CDFs of per-GPU draw in % TDP over GPU-time, whole fleets and busy GPUs.

Input: ``fleet_power_cdf`` (AcmeTrace's measured per-GPU power and GPU utilisation),
``zeus_cluster_history`` and ``cluster_power_summary`` (all partitions). One column of panels per
public trace simulated on the figure's GPU (ITP and ElasticFlow here; ``FIGURE_GPU``, else the first
in ``style.GPU_ORDER``). Top row, whole fleets: the measured Seren and Kalos curves (A100, % of
400 W) and the simulated Default and Zeus fleets (idle GPUs included, % of the simulated GPU's TDP).
Bottom row, busy GPUs only (``power_model_vs_measured``'s busy rows): the measured curves' top busy
share, renormalised, and the simulated running GPUs. Each simulated curve's legend entry gives its
busy share and its KS distance to Seren of the same row. Returns ``(Figure, data)`` with exactly
the points drawn; ``NoData`` when there is none.
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

#: The simulated traces drawn, one column of panels each.
TRACES: tuple[tuple[str, str], ...] = (("itp", "ITP"), ("elasticflow", "ElasticFlow"))
#: The rows of panels: (occupancy of ``power_model_vs_measured``, label).
ROWS: tuple[tuple[str, str], ...] = (("whole", "whole fleet"), ("busy", "busy GPUs only"))


def _points(panel: str, occupancy: str, curve: str, source: str, gpu: str, dist: Polyline) -> pl.DataFrame:
    return pl.DataFrame({"panel": panel, "occupancy": occupancy, "curve": curve, "source": source, "gpu": gpu,
                         "pct_tdp": dist.x, "cdf_pct": 100 * dist.F})


def fleet_power_cdfs(fleet_cdf: pl.DataFrame, history: pl.DataFrame, summary: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Per trace (column) and occupancy (row): measured Seren and Kalos beside simulated Default and Zeus, % TDP on x, CDF of GPU-time on y."""
    fleets = {(f.trace, f.gpu, f.policy): f for f in fleet.fleets(summary)}
    traces = [(t, label) for t, label in TRACES if any(k[0] == t for k in fleets)]
    if not traces:
        raise NoData("no simulated fleet of ITP or ElasticFlow with a cluster size (cluster_power_summary)")
    gpus = style.ordered({k[1] for k in fleets if k[0] in dict(traces)}, (FIGURE_GPU, *style.GPU_ORDER))
    gpu = gpus[0]
    measured = {occupancy: fleet.measured_dists(fleet_cdf, occupancy) for occupancy, _ in ROWS}
    shares = {c: fleet.measured_busy_share(fleet_cdf, c) for c in fleet.MEASURED}
    draws = fleet.busy_draws(history.filter(pl.col("gpu") == gpu))
    runs_of = {(str(t), str(p)): runs for (t, p), runs in draws.group_by("trace", "policy")}
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 6.6, len(ROWS), len(traces), sharey="row")
    colors = style.palette(4)
    measured_style = {"seren": ("0.15", "-"), "kalos": ("0.45", "--")}
    policy_color = {"default": colors[0], "zeus": colors[2]}
    frames = []
    for row, (occupancy, row_label) in enumerate(ROWS):
        for col, (trace, label) in enumerate(traces):
            ax = axes[row, col]
            for cluster, dist in measured[occupancy].items():
                name = f"{cluster.title()} (measured, A100)"
                busy = f", busy {100 * shares[cluster]:.0f}% of GPU-time" if occupancy == "busy" else ""
                color, ls = measured_style[cluster]
                ax.plot(dist.x, 100 * dist.F, color=color, ls=ls, lw=1.0, label=name + busy)
                frames.append(_points(label, occupancy, name, "measured", fleet.MEASURED_GPU, dist))
            size = None
            for policy, policy_label in POLICIES:
                f = fleets.get((trace, gpu, policy))
                runs = runs_of.get((trace, policy), draws.clear())
                if f is None or (occupancy == "busy" and runs.height == 0):
                    continue
                size = f.cluster_gpus
                dist = fleet.simulated_dist(runs, f, occupancy)
                name = f"{policy_label} (simulated, {gpu_label(gpu)})"
                busy = f", busy {100 * fleet.simulated_busy_share(runs, f):.0f}% of GPU-time" if occupancy == "busy" else ""
                ax.plot(dist.x, 100 * dist.F, color=policy_color[policy], lw=1.3,
                        label=f"{name}{busy}, KS vs Seren {ks_distance(dist, measured[occupancy]['seren']):.2f}")
                frames.append(_points(label, occupancy, name, "simulated", gpu, dist))
            ax.axvline(fleet.LOW_PCT_TDP, color="0.6", ls=":", lw=0.8)
            ax.text(fleet.LOW_PCT_TDP + 1, 97, f"{fleet.LOW_PCT_TDP:g}% TDP", color="0.4", fontsize=style.SMALL_FONT_SIZE - 1, va="top")
            ax.set_xlim(0, 150)
            ax.set_ylim(0, 100)
            ax.set_title(f"{label} on the {gpu_label(gpu)}" + (f" ({size:,} GPUs)" if size else "") + f", {row_label}")
            ax.set_xlabel("per-GPU draw (% of TDP)")
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=style.SMALL_FONT_SIZE - 1)
        axes[row, 0].set_ylabel("GPU-time at or below (%)")
    fig.suptitle("Simulated fleets vs AcmeTrace's measured A100 fleets", fontsize=style.FONT_SIZE)
    return fig, pl.concat(frames)
