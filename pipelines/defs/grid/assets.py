"""Where the energy was used: the bundled carbon-intensity table (thin wrapper of ``pipelines.ingest.grid``; the replay in
CO2e by region that reads it is ``defs/clusters/co2e.py``)."""

import hashlib
from importlib import resources

import dagster as dg
import polars as pl

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
