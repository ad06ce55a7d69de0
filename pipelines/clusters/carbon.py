"""The public traces' replay in CO2e: ``zeus_cluster_summary`` at each region's yearly carbon intensity (``zeus_cluster_co2e``).

The replay is the Zeus artifact's (``runtime_ratio`` sizing, as every table of the public traces);
each trace and GPU's Default and Zeus energy over every workload, times the region's intensity of
the bundled table (``pipelines.ingest.grid``): the same jobs had the cluster stood there. A yearly
average: when the jobs ran within the year is not weighed (``whatif --grid-intensity`` does that
for your own export).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipelines.contracts.base import conform
from pipelines.contracts.grid import ZeusClusterCo2e
from pipelines.vocabulary import CLUSTER_TRACES
from pipelines.vocabulary.units import J_PER_KWH

#: The regions of ``zeus_cluster_co2e`` by default: grids from low to high carbon intensity where GPU clusters stand.
DEFAULT_REGIONS: tuple[str, ...] = ("SE3", "FR", "US-CA", "GB", "DE", "US-VA", "CN", "IN")


def co2e_by_region(summary: pl.DataFrame, intensity: pl.DataFrame, regions: Sequence[str]) -> pl.DataFrame:
    """``zeus_cluster_co2e`` rows: per public trace, GPU and region of ``regions`` (codes of ``intensity``, ``grid_intensity``).

    ``ValueError`` names a region the table does not have.
    """
    wanted = [r.strip().upper() for r in regions]
    unknown = sorted(set(wanted) - set(intensity["region"]))
    if unknown:
        raise ValueError(f"regions {unknown} are not in grid_intensity (codes as whatif --region takes them)")
    totals = (summary.filter(pl.col("trace").is_in(CLUSTER_TRACES) & pl.col("energy_j_default").is_not_null())
              .group_by("trace", "gpu").agg(pl.col("jobs").sum(), (pl.col("energy_j_default").sum() / J_PER_KWH).alias("default_kwh"),
                                             (pl.col("energy_j_zeus").sum() / J_PER_KWH).alias("zeus_kwh")))
    grids = intensity.filter(pl.col("region").is_in(wanted)).select("region", "gco2_per_kwh", "year")
    rows = totals.join(grids, how="cross").with_columns(
        (pl.col("default_kwh") * pl.col("gco2_per_kwh") / 1000).alias("default_co2e_kg"),
        (pl.col("zeus_kwh") * pl.col("gco2_per_kwh") / 1000).alias("zeus_co2e_kg"),
    ).with_columns(
        (pl.col("default_co2e_kg") - pl.col("zeus_co2e_kg")).alias("co2e_saved_kg"),
        pl.when(pl.col("default_co2e_kg") > 0).then(100 * (1 - pl.col("zeus_co2e_kg") / pl.col("default_co2e_kg"))).alias("co2e_saved_pct"),
    )
    order = {r: i for i, r in enumerate(wanted)}
    return conform(rows, ZeusClusterCo2e).sort("trace", "gpu", pl.col("region").replace_strict(order, return_dtype=pl.Int64))
