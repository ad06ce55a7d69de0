"""The knob-grid figure: cluster-wide energy and time Zeus saves vs Default as eta and beta vary.

Input: ``zeus_knob_grid`` (one row per trace, GPU, eta, beta, seed and policy). One row of panels
per trace; columns: energy and time saved vs eta (at the reference beta), then, when the grid has
more than one beta, energy and time saved vs beta (at the reference eta). One line per GPU: the
mean over seeds, with a band from the lowest to the highest seed. Replays the published simulator
cannot run (``error`` set) are left out of the mean; ``seeds`` counts those that ran.
"""

from __future__ import annotations

from typing import cast

import polars as pl
from matplotlib.figure import Figure

from pipelines.contracts.base import conform, empty
from pipelines.contracts.sweep import KnobSavings
from pipelines.figures import style
from pipelines.figures.clusters import TRACE_ORDER, trace_label
from pipelines.figures.errors import NoData
from pipelines.vocabulary import DEFAULT_BETA, DEFAULT_ETA, gpu_label

#: The knob held fixed while the other varies: beta 2 and eta 0.5 (the artifact's defaults), else the closest value in the grid.
REFERENCE_BETA, REFERENCE_ETA = DEFAULT_BETA, DEFAULT_ETA
METRICS: tuple[tuple[str, str], ...] = (
    ("energy_savings_vs_default_pct", "energy saved vs Default (%)"),
    ("time_savings_vs_default_pct", "time saved vs Default (%)"),
)
_MARKERS = ("o", "s", "^", "D", "v", "P")
NO_RUN_LABEL = "no run (the published simulator fails there)"


def _closest(values: list[float], target: float) -> float:
    return min(values, key=lambda v: (abs(v - target), v))


def knob_savings(grid: pl.DataFrame, policy: str = "zeus") -> pl.DataFrame:
    """Per trace, GPU, knob (eta or beta) value and metric: mean, min and max over seeds of ``policy``'s saving.

    Columns: trace, gpu, knob ("eta"/"beta"), value, fixed_eta, fixed_beta, metric, mean_pct,
    min_pct, max_pct, seeds (that ran; 0 with null statistics where every seed's replay failed).
    The eta series is at the reference beta, the beta series at the reference eta; a beta series
    is there only when the grid has several betas.
    """
    rows = grid.filter(pl.col("policy") == policy)
    if rows.height == 0:
        return empty(KnobSavings)
    betas = sorted(rows["beta"].unique().to_list())
    etas = sorted(rows["eta"].unique().to_list())
    beta0, eta0 = _closest(betas, REFERENCE_BETA), _closest(etas, REFERENCE_ETA)
    series = [("eta", rows.filter(pl.col("beta") == beta0))]
    if len(betas) > 1:
        series.append(("beta", rows.filter(pl.col("eta") == eta0)))
    frames = []
    for knob, subset in series:
        ran = pl.col("error").is_null()
        for metric, _ in METRICS:
            frames.append(
                subset.group_by("trace", "gpu", knob)
                .agg(
                    pl.col(metric).filter(ran).mean().alias("mean_pct"), pl.col(metric).filter(ran).min().alias("min_pct"),
                    pl.col(metric).filter(ran).max().alias("max_pct"), pl.col("seed").filter(ran).n_unique().cast(pl.Int64).alias("seeds"),
                )
                .select(
                    "trace", "gpu", pl.lit(knob).alias("knob"), pl.col(knob).alias("value"),
                    pl.lit(eta0 if knob == "beta" else None, pl.Float64).alias("fixed_eta"),
                    pl.lit(beta0 if knob == "eta" else None, pl.Float64).alias("fixed_beta"),
                    pl.lit(metric).alias("metric"), "mean_pct", "min_pct", "max_pct", "seeds",
                )
            )
    return conform(pl.concat(frames), KnobSavings).sort("trace", "gpu", "knob", "metric", "value")


def savings_vs_knobs(grid: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    """Zeus's energy and time saving vs Default against eta (and beta), per trace (rows) and GPU (lines).

    A knob value where no seed's replay ran (the published simulator raises there) has no point;
    the panel says which.
    """
    data = knob_savings(grid)
    if data.height == 0 or data["seeds"].max() == 0:
        raise NoData("no Zeus replay in zeus_knob_grid (no cluster trace has jobs here, or every replay failed)")
    traces = style.ordered(data["trace"].unique(), TRACE_ORDER)
    gpus = style.ordered(data["gpu"].unique(), style.GPU_ORDER)
    knobs = [k for k in ("eta", "beta") if k in set(data["knob"].to_list())]
    columns = [(knob, metric, label) for knob in knobs for metric, label in METRICS]
    fig, grid_axes = style.new_figure(style.DOUBLE_COLUMN, 1.6 * len(traces) + 0.9, len(traces), len(columns), sharex="col")
    axes = grid_axes
    colors = style.palette(len(gpus))
    for row, trace in enumerate(traces):
        for col, (knob, metric, label) in enumerate(columns):
            ax = axes[row, col]
            d = data.filter((pl.col("trace") == trace) & (pl.col("knob") == knob) & (pl.col("metric") == metric))
            for i, gpu in enumerate(gpus):
                g = d.filter((pl.col("gpu") == gpu) & (pl.col("seeds") > 0)).sort("value")
                if g.height == 0:
                    continue
                x = g["value"].to_numpy()
                ax.fill_between(x, g["min_pct"].to_numpy(), g["max_pct"].to_numpy(), color=colors[i], alpha=0.25, linewidth=0)
                ax.plot(x, g["mean_pct"].to_numpy(), color=colors[i], marker=_MARKERS[i % len(_MARKERS)], markersize=3,
                        label=gpu_label(gpu))
            ax.axhline(0.0, color="black", lw=0.6)
            values = sorted(set(d["value"].to_list()))
            if knob == "beta":
                ax.set_xticks(values, [style.plain_number(v) for v in values])
            failed = sorted(set(d.filter(pl.col("seeds") == 0)["value"].to_list()))
            if failed:  # marked on the x axis: no seed's replay ran there
                ax.plot(failed, [0.04] * len(failed), ls="none", marker="x", color="0.3", markersize=5, clip_on=False,
                        transform=ax.get_xaxis_transform(), label=NO_RUN_LABEL)
            if row == 0:
                fixed = d["fixed_beta"][0] if knob == "eta" else d["fixed_eta"][0]
                at = f"β = {style.plain_number(fixed)}" if knob == "eta" else f"η = {style.plain_number(fixed)}"
                ax.set_title(f"{label.split(' vs ')[0]}, vs {'η' if knob == 'eta' else 'β'} ({at})")
            if row == len(traces) - 1:
                ax.set_xlabel("η" if knob == "eta" else "β")
            if col == 0:
                ax.set_ylabel(f"{trace_label(trace)}\nsaved vs Default (%)")
    legend = {label: handle for ax in axes.flat for handle, label in zip(*ax.get_legend_handles_labels(), strict=True)}
    seeds = int(cast(int, data["seeds"].max() or 0))
    fig.legend(list(legend.values()), list(legend), loc="outside upper center", ncols=len(legend),
               title=f"Zeus vs Default over each whole trace; line = mean of {seeds} seeds, band = lowest to highest seed\n"
                     "η: weight of energy in the cost; β: early-stop threshold (x cheapest run so far)")
    return fig, data
