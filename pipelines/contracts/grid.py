"""Contracts of where the energy was used: the bundled carbon-intensity table, and the public traces' CO2e by region."""

from __future__ import annotations

import dataframely as dy

from pipelines.contracts.base import one_of
from pipelines.contracts.clusters import trace_column
from pipelines.contracts.limits import MAX_GCO2_PER_KWH

#: What each ``source`` of the bundled table means (its derivation: pipelines/ingest/data/SOURCES.md).
SOURCES: dict[str, str] = {
    "owid": "codecarbon 3.3.2 (MIT licence), global_energy_mix.json: carbon intensity of electricity per country, in the fields of "
            "Our World in Data's energy dataset",
    "egrid": "codecarbon 3.3.2 (MIT licence), 2023/usa_emissions.json: US EPA eGRID2023 state output emission rate STC2ERTA "
             "(lb CO2e/MWh, at 453.59237 g/lb)",
    "entsoe": "codecarbon 3.3.2 (MIT licence), nordic_emissions.json: ENTSO-E Transparency generation per production type (A75) of "
              "2025, production-based",
}


class GridIntensity(dy.Schema):
    """``grid_intensity``: the per-region carbon intensity of electricity shipped in the package (``pipelines.ingest.grid``)."""

    region = dy.String(primary_key=True, min_length=2, max_length=8, description="the code --region takes: ISO 3166-1 alpha-2 "
                       "(DE), US-XX (a US state, ISO 3166-2) or a Nordic bidding zone (SE1..SE4, NO1..NO5)")
    alpha3 = dy.String(nullable=True, min_length=3, max_length=3, description="a country's ISO 3166-1 alpha-3 code (DEU); null otherwise")
    name = dy.String(min_length=1, description="the region's name")
    gco2_per_kwh = dy.Float64(min=0, max=MAX_GCO2_PER_KWH, description="carbon intensity of electricity (g CO2e per kWh), a yearly average")
    year = dy.Int64(min=2000, max=2100, description="the year it describes")
    source = one_of(tuple(SOURCES), description="where it comes from: " + "; ".join(f"{k}: {v}" for k, v in SOURCES.items()))


class ZeusClusterCo2e(dy.Schema):
    """``zeus_cluster_co2e``: the public traces' replay (``zeus_cluster_summary``, every workload) in CO2e at each region's
    yearly intensity: per trace, GPU and region."""

    trace = trace_column(primary_key=True)
    gpu = dy.String(primary_key=True, description="GPU simulated")
    region = dy.String(primary_key=True, description="grid_intensity.region")
    gco2_per_kwh = dy.Float64(min=0, description="the region's carbon intensity (g CO2e per kWh)")
    year = dy.Int64(description="the year of that intensity")
    jobs = dy.Int64(min=0, description="the trace's jobs replayed")
    default_kwh = dy.Float64(min=0, description="energy under Default (kWh)")
    zeus_kwh = dy.Float64(min=0, description="energy under Zeus (kWh)")
    default_co2e_kg = dy.Float64(min=0, description="CO2e under Default (kg)")
    zeus_co2e_kg = dy.Float64(min=0, description="CO2e under Zeus (kg)")
    co2e_saved_kg = dy.Float64(description="CO2e Zeus saves vs Default (kg; negative: more)")
    co2e_saved_pct = dy.Float64(nullable=True, description="CO2e Zeus saves vs Default (% of Default's)")
