"""The public traces' replay in CO2e by region, at the bundled carbon intensities (thin wrapper of
``pipelines.clusters.carbon``; the intensities are ``defs/grid/``)."""

import dagster as dg
import polars as pl

from pipelines.clusters.carbon import DEFAULT_REGIONS, co2e_by_region
from pipelines.defs.own_clusters.assets import FOLLOW_ALL_TRACES  # eager, once the replays are done; the own-trace tables read as present
from pipelines.defs.shared.table_assets import table_asset


class Co2eConfig(dg.Config):
    """The regions of ``zeus_cluster_co2e`` (codes of ``grid_intensity``, as whatif --region takes them)."""

    regions: list[str] = list(DEFAULT_REGIONS)


@table_asset(
    automation_condition=FOLLOW_ALL_TRACES,
    description="The public traces' replay (zeus_cluster_summary, Zeus vs Default, every workload) in CO2e at each region's yearly "
    f"grid intensity (grid_intensity): per trace, GPU and region (config regions; default {', '.join(DEFAULT_REGIONS)}).",
)
def zeus_cluster_co2e(config: Co2eConfig, zeus_cluster_summary: pl.DataFrame, grid_intensity: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    table = co2e_by_region(zeus_cluster_summary, grid_intensity, config.regions)
    return dg.Output(table, metadata={"rows": table.height, "regions": dg.MetadataValue.json(config.regions)})
