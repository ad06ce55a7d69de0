"""Figures layer: every figure of ``pipelines.figures.catalog`` as an asset, written to figures/.

Each ``FigureFamily`` is one multi-asset (one Dagster step, one process), with one asset key per
``FigureAsset``; it can be subset, so selecting one figure asset draws only that one. Inputs come
through the default IO manager as polars frames. Each figure is ``figures/<name>.png`` (for eyes),
``.pdf`` (for papers) and ``.parquet`` (the numbers plotted). A figure with nothing to draw (an
optional trace absent here) is listed under ``skipped`` with the reason, and writes no file.
Every figure follows its inputs by ``AutomationCondition.eager()``: a new or changed trace (your
own ones included) redraws them once every input partition is there (the ``make dev`` daemon).
"""

from collections.abc import Iterator
from typing import Any

import dagster as dg
import polars as pl

from pipelines.dagster_support import PathsResource
from pipelines.figures import catalog

GROUP = "figures"


def _result(asset: catalog.FigureAsset, report: catalog.Report) -> dg.MaterializeResult:
    metadata: dict[str, Any] = {
        "figures": dg.MetadataValue.json(report.written),
        "figure_count": len(report.written),
        "skipped": dg.MetadataValue.json(report.skipped),
        "notes": dg.MetadataValue.json(report.notes),
    }
    if report.written:
        metadata["png"] = dg.MetadataValue.path(str(next(iter(report.written.values()))["png"]))
    return dg.MaterializeResult(asset_key=asset.key, metadata=metadata)


def figure_family(family: catalog.FigureFamily) -> dg.AssetsDefinition:
    """One subsettable multi-asset drawing the figures of ``family``."""
    specs = [
        dg.AssetSpec(a.key, deps=list(a.inputs), group_name=GROUP, description=a.description, kinds={"matplotlib"},
                     automation_condition=dg.AutomationCondition.eager())
        for a in family.assets
    ]

    @dg.multi_asset(
        name=family.name,
        specs=specs,
        ins={k: dg.AssetIn(dg.AssetKey(k)) for k in family.inputs},
        can_subset=True,
    )
    def _draw(
        context: dg.AssetExecutionContext, paths: PathsResource, **frames: pl.DataFrame
    ) -> Iterator[dg.MaterializeResult]:
        folder = paths.paths().figures
        selected = {k.to_user_string() for k in context.selected_asset_keys}
        for asset in family.assets:
            if asset.key not in selected:
                continue
            report = catalog.render(asset, frames, folder)
            for name, files in report.written.items():
                context.log.info(f"{name}: {files['rows']} rows -> {files['png']}")
            for name, reason in report.skipped.items():
                context.log.warning(f"{name}: skipped, {reason}")
            for note in report.notes:
                context.log.warning(f"{asset.key}: {note}")
            yield _result(asset, report)

    return _draw


energy_figures = figure_family(catalog.ENERGY)
power_profile_figures = figure_family(catalog.POWER)
simulation_figures = figure_family(catalog.SIMULATION)
cluster_figures = figure_family(catalog.CLUSTERS)
cluster_power_figures = figure_family(catalog.CLUSTER_POWER)
trace_figures = figure_family(catalog.TRACES)
