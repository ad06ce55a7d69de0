"""Where the energy was used: the bundled carbon-intensity table, and the public traces' replay in CO2e by region.

Thin wrappers: the table is ``pipelines.ingest.grid``, the CO2e ``pipelines.clusters.carbon``.
"""

import hashlib
from importlib import resources

import dagster as dg
import polars as pl

from pipelines.clusters.carbon import DEFAULT_REGIONS, co2e_by_region
from pipelines.defs.own_clusters.assets import FOLLOW_OWN  # eager; the own-trace tables read as present
from pipelines.defs.shared.metadata import contract_metadata
from pipelines.ingest.grid import TABLE, region_table

#: The bundled table's bytes, as the asset's code version: a package with another table re-materializes it.
TABLE_VERSION = hashlib.sha256(resources.files("pipelines.ingest").joinpath("data", TABLE).read_bytes()).hexdigest()[:16]


@dg.asset(
    group_name="ingest",
    code_version=TABLE_VERSION,
    automation_condition=dg.AutomationCondition.on_missing() | dg.AutomationCondition.code_version_changed(),
    kinds={"polars", "parquet"},
    metadata=contract_metadata("grid_intensity"),
    description="Carbon intensity of electricity (g CO2e per kWh, yearly) per country, US state and Nordic bidding zone, from the "
    "table shipped in the package (derived from the codecarbon 3.3.2 package's data, MIT licence; no network). What "
    "whatif --region reads.",
)
def grid_intensity() -> dg.Output[pl.DataFrame]:
    table = region_table()
    return dg.Output(table, metadata={"rows": table.height, "years": dg.MetadataValue.json(sorted(set(table["year"].to_list())))})


class Co2eConfig(dg.Config):
    """The regions of ``zeus_cluster_co2e`` (codes of ``grid_intensity``, as whatif --region takes them)."""

    regions: list[str] = list(DEFAULT_REGIONS)


@dg.asset(
    group_name="clusters",
    automation_condition=FOLLOW_OWN,
    kinds={"polars", "parquet"},
    metadata=contract_metadata("zeus_cluster_co2e"),
    description="The public traces' replay (zeus_cluster_summary, Zeus vs Default, every workload) in CO2e at each region's yearly "
    f"grid intensity (grid_intensity): per trace, GPU and region (config regions; default {', '.join(DEFAULT_REGIONS)}).",
)
def zeus_cluster_co2e(config: Co2eConfig, zeus_cluster_summary: pl.DataFrame, grid_intensity: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    table = co2e_by_region(zeus_cluster_summary, grid_intensity, config.regions)
    return dg.Output(table, metadata={"rows": table.height, "regions": dg.MetadataValue.json(config.regions)})
