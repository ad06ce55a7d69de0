"""Contracts of the measured fleets and of the power model held against them.

* ``FleetPowerCdf`` (``fleet_power_cdf``): AcmeTrace's measured distributions, one row per point of
  each curve (ingested by ``pipelines.ingest.fleet`` from the pinned pickles).
* ``PowerModelVsMeasured`` (``power_model_vs_measured``): per measured cluster and per simulated
  fleet (trace, GPU, policy), the distribution of per-GPU draw as % of TDP over GPU-time
  (``pipelines.clusters.fleet``).
* ``FleetPowerCdfFigure``: the data of the figure ``clusters_fleet_power_cdf``.
"""

from __future__ import annotations

import dataframely as dy
import polars as pl

from pipelines.contracts.base import one_of
from pipelines.contracts.limits import MAX_GPU_POWER_W, MAX_NAME_CHARS, MAX_NODE_POWER_W, MAX_SOURCE_CHARS

#: The clusters of the measured curves: AcmeTrace's two, and Microsoft's Philly (utilisation only, as AcmeTrace published it).
FLEET_CLUSTERS: tuple[str, ...] = ("seren", "kalos", "philly")
#: Metric -> (unit, upper physical bound of x). Power per GPU (DCGM POWER_USAGE), per GPU node and per CPU node
#: (IPMI Sys_Total_Power), and GPU utilisation (DCGM GPU_UTIL).
FLEET_METRICS: dict[str, tuple[str, float]] = {
    "gpu_power_w": ("W", MAX_GPU_POWER_W),
    "gpu_node_power_w": ("W", MAX_NODE_POWER_W),
    "cpu_node_power_w": ("W", MAX_NODE_POWER_W),
    "gpu_util_pct": ("%", 100.0),
}
SOURCES: tuple[str, ...] = ("measured", "simulated")
#: Which GPU-time a row of ``power_model_vs_measured`` is over: the whole fleet, or its busy GPUs only.
OCCUPANCIES: tuple[str, ...] = ("whole", "busy")


class FleetPowerCdf(dy.Schema):
    """``fleet_power_cdf``: AcmeTrace's measured CDFs over GPU-time (or node-time), 15 s DCGM/IPMI samples pooled over a cluster.

    Each curve is the upstream quantile function at 1,000 evenly spaced probabilities (pandas
    ``quantile``, linear interpolation): read it as piecewise linear between points, a repeated x
    being a vertical step (an atom). Curve rules (non-decreasing in x and cdf_pct along point, from
    0 to 100, every curve present) are the asset's blocking checks.
    """

    cluster = one_of(FLEET_CLUSTERS, primary_key=True, description="measured cluster: seren, kalos (AcmeTrace) or philly (Microsoft)")
    metric = one_of(tuple(FLEET_METRICS), primary_key=True,
                    description="what x measures: gpu_power_w (W per GPU, DCGM POWER_USAGE), gpu_node_power_w and "
                    "cpu_node_power_w (W per server, IPMI Sys_Total_Power), gpu_util_pct (% per GPU, DCGM GPU_UTIL)")
    point = dy.Int64(primary_key=True, min=0, description="index of the point along the curve (0 first), the upstream arrays' order")
    x = dy.Float64(min=0, description="value of the metric at this point (W for the power metrics, % for gpu_util_pct)")
    cdf_pct = dy.Float64(min=0, max=100, description="share of samples (GPU- or node-time) at or below x (%)")

    @dy.rule()
    def x_within_physical_bounds(cls) -> pl.Expr:
        """x must lie within its metric's physical bounds (per GPU 0-2,000 W, per server 0-20,000 W, utilisation 0-100 %)"""
        upper = pl.col("metric").replace_strict({m: float(bound) for m, (_, bound) in FLEET_METRICS.items()}, default=-1.0,
                                                return_dtype=pl.Float64)
        return pl.col("x") <= upper


def _pct_tdp(what: str) -> dy.Float64:
    return dy.Float64(min=0, description=f"{what} of per-GPU draw over the row's GPU-time (occupancy: whole fleet or busy GPUs) "
                      "(% of tdp_w)")


def _ks(cluster: str) -> dy.Float64:
    return dy.Float64(min=0, max=1, description=f"Kolmogorov-Smirnov distance to {cluster}'s measured % TDP distribution of the same "
                      "occupancy: the largest gap between the two CDFs (0 to 1), computed exactly from the curves (docs: Cluster power)")


class PowerModelVsMeasured(dy.Schema):
    """``power_model_vs_measured``: measured fleets (Seren, Kalos) and simulated ones, as distributions of per-GPU draw in % TDP.

    Each fleet has a whole-fleet row and, when it has busy GPU-time, a busy-GPU row (``occupancy``).
    """

    source = one_of(SOURCES, primary_key=True, description="measured (AcmeTrace DCGM) or simulated (this package's power model)")
    cluster_or_trace = dy.String(primary_key=True, max_length=MAX_NAME_CHARS,
                                 description="measured: seren or kalos; simulated: the trace (itp, elasticflow, ...), or "
                                 "trace/cluster for one cluster of a trace (acme/seren)")
    gpu = dy.String(primary_key=True, max_length=MAX_NAME_CHARS, description="GPU measured or simulated (registry name or a measured profile's)")
    policy = dy.String(primary_key=True, max_length=MAX_NAME_CHARS,
                       description="replay policy (zeus, default, grid-search); 'measured' for a measured fleet")
    occupancy = one_of(OCCUPANCIES, primary_key=True,
                       description="GPU-time the row is over: whole (busy and idle GPUs together) or busy (measured: the top "
                       "busy_share_pct of the power CDF, renormalised; simulated: GPUs running a job)")
    tdp_w = dy.Float64(min_exclusive=0, description="TDP the draw is divided by (W): the GPU's in the registry (A100: 400 W)")
    idle_w = dy.Float64(nullable=True, min=0, description="idle draw per GPU the simulation charged to GPUs without a job (W); null: measured")
    cluster_gpus = dy.Int64(nullable=True, min=1, description="GPUs of the simulated fleet (cluster_capacity); null: measured")
    busy_share_pct = dy.Float64(min=0, max=100, description="share of the fleet's GPU-time that is busy (%): measured, DCGM GPU_UTIL "
                                "samples above 0 %; simulated, GPU-seconds running a job; the same on a fleet's whole and busy rows")
    share_below_25pct_tdp = dy.Float64(min=0, max=100, description="GPU-time drawing strictly less than 25% of TDP (%)")
    median_pct_tdp = _pct_tdp("median")
    p90_pct_tdp = _pct_tdp("90th percentile")
    ks_vs_seren = _ks("Seren")
    ks_vs_kalos = _ks("Kalos")
    note = dy.String(max_length=MAX_SOURCE_CHARS, description="how the row was made: the measurement, or the simulated GPU and why it stands in")


class FleetPowerCdfFigure(dy.Schema):
    """Figure data of ``clusters_fleet_power_cdf``: the points of each CDF drawn, per panel (trace)."""

    panel = dy.String(description="panel: the simulated trace the measured curves are drawn beside")
    occupancy = one_of(OCCUPANCIES, description="whole fleet (top row of panels) or busy GPUs only (bottom row)")
    curve = dy.String(description="curve label: a measured cluster, or a simulated policy")
    source = one_of(SOURCES, description="measured or simulated")
    gpu = dy.String(description="GPU measured or simulated")
    pct_tdp = dy.Float64(min=0, description="per-GPU draw (% of the GPU's TDP)")
    cdf_pct = dy.Float64(min=0, max=100, description="share of GPU-time at or below pct_tdp (%); consecutive points are joined by lines")
