"""Simulation figures: Zeus vs Default vs Grid Search over a job's recurrences, with regret vs Oracle.

Input: ``zeus_single_job_sweep`` (``pipelines.clusters.simulate.single_job_sweep``, where every
per-recurrence value and its comparison with the Oracle is computed). Returns ``(Figure, data)``;
raises ``NoData``.
"""

from __future__ import annotations

import matplotlib as mpl
import polars as pl
from matplotlib.figure import Figure

from pipelines.contracts.base import conform
from pipelines.contracts.figures import ConvergenceRecurrences
from pipelines.figures import style
from pipelines.figures.errors import NoData
from pipelines.vocabulary import DEFAULT_BETA, DEFAULT_ETA, dataset_label, gpu_label
from pipelines.vocabulary.units import J_PER_MJ, S_PER_H

POLICY_LABELS: dict[str, str] = {"zeus": "Zeus", "default": "Default", "grid-search": "Grid Search", "oracle": "Oracle"}
#: (column, scale, axis label) of each row of the figure; y axes are logarithmic where values span 4x.
_ROWS: tuple[tuple[str, float, str], ...] = (
    ("energy_j", J_PER_MJ, "energy per\nrecurrence (MJ)"),
    ("time_s", S_PER_H, "time per\nrecurrence (h)"),
    ("energy_vs_oracle", 1.0, "cumulative energy\n÷ Oracle's (×)"),
    ("time_vs_oracle", 1.0, "cumulative time\n÷ Oracle's (×)"),
)


def _policy_styles() -> dict[str, dict[str, object]]:
    colors = style.palette(4)
    return {
        "zeus": {"color": colors[0], "ls": "-", "lw": 1.1, "zorder": 4},
        "default": {"color": colors[3], "ls": "--", "lw": 1.0, "zorder": 3},
        "grid-search": {"color": colors[2], "ls": "-.", "lw": 1.0, "zorder": 2},
        "oracle": {"color": "black", "ls": ":", "lw": 0.9, "zorder": 1},
    }


def convergence(sweep: pl.DataFrame, gpu: str, eta: float = DEFAULT_ETA, beta: float = DEFAULT_BETA, seed: int = 1) -> tuple[Figure, pl.DataFrame]:
    """Per workload (column) on ``gpu``: energy and time per recurrence, and cumulative energy and time
    relative to the Oracle's expectation (1 + regret / (k x Oracle's expected value per recurrence)).

    The dotted Oracle line shows the spread of its sampled runs around its expectation; the
    absolute regrets (J, s) are in the data.
    """
    data = sweep.filter((pl.col("gpu") == gpu) & (pl.col("eta") == eta) & (pl.col("beta") == beta) & (pl.col("seed") == seed))
    if data.height == 0:
        raise NoData(f"no simulated recurrences for GPU {gpu!r} at eta {eta}, beta {beta}, seed {seed}")
    datasets = style.ordered(data["dataset"].unique(), style.DATASET_ORDER)
    policies = [p for p in POLICY_LABELS if p in set(data["policy"])]
    fig, axes = style.new_figure(style.DOUBLE_COLUMN, 6.2, len(_ROWS), len(datasets), sharex="col")
    styles = _policy_styles()
    for j, dataset in enumerate(datasets):
        d = data.filter(pl.col("dataset") == dataset)
        for i, (column, scale, label) in enumerate(_ROWS):
            ax = axes[i, j]
            for policy in policies:
                p = d.filter(pl.col("policy") == policy).sort("recurrence")
                ax.plot(p["recurrence"] + 1, p[column] / scale, label=POLICY_LABELS[policy], **styles[policy])
            style.auto_log_scale(ax, "y", (d[column] / scale).to_list())
            if column.endswith("_vs_oracle"):
                ax.axhline(1.0, color="grey", lw=0.6, zorder=0)
            if j == 0:
                ax.set_ylabel(label)
        axes[0, j].set_title(dataset_label(dataset))
        axes[-1, j].set_xlim(left=1)
        axes[-1, j].xaxis.set_major_locator(mpl.ticker.MaxNLocator(3, integer=True))
    fig.supxlabel("recurrence of the job", fontsize=style.FONT_SIZE)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=len(policies),
               title=f"{gpu_label(gpu)}: a job recurring back to back, η = {eta:g}, β = {beta:g}")
    return fig, conform(data, ConvergenceRecurrences).sort("dataset", "policy", "recurrence")
