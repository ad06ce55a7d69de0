"""Figures layer: every figure of ``pipelines.figures.catalog`` as an asset, written to figures/.

Each ``FigureFamily`` is one multi-asset (one Dagster step, one process), with one asset key per
``FigureAsset``, ``figures/<name>``: the path of its files without the extension (an asset drawing
one figure per GPU or workload, ``figures/energy_eta_vs_tta``, writes ``energy_eta_vs_tta_<gpu>``).
It can be subset, so selecting one figure asset draws only that one. Inputs come through the
default IO manager as polars frames. Each figure is ``figures/<name>.png`` (for eyes), ``.pdf``
(for papers) and ``.parquet`` (the numbers plotted). The asset's page in the UI (its latest
materialization's metadata) has one ``figure`` entry first: one click on it shows every panel the
asset drew (one per GPU or workload) together, then the first rows of each panel's plotted data;
``files`` names the files (short names, under the ``folder`` path). A figure with nothing to draw
(an optional trace absent here) is listed under ``skipped`` with the reason, and writes no file.
Every figure follows its inputs by ``AutomationCondition.eager()``: a new or changed trace (your
own ones included) redraws them once every input partition is there (the ``make dev`` daemon).
"""

import base64
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from pipelines.defs.own_clusters.assets import FOLLOW_OWN  # eager; the own-trace tables read as present
from pipelines.defs.shared.io_manager import PathsResource
from pipelines.defs.shared.metadata import PREVIEW_ROWS, markdown_preview
from pipelines.figures import catalog

GROUP = "figures"
KEY_PREFIX = "figures"
#: Width (px) of the image shown on the asset's page (the PNG file itself is 200 dpi).
THUMBNAIL_PX = 720


def asset_key(asset: catalog.FigureAsset) -> dg.AssetKey:
    return dg.AssetKey([KEY_PREFIX, asset.key])


def _inline_png(path: Path) -> str:
    """Markdown showing the PNG at ``path`` (downscaled to ``THUMBNAIL_PX`` wide), embedded as a data URI."""
    from PIL import Image  # matplotlib's own dependency; loaded only when a figure is drawn

    with Image.open(path) as image:
        image.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX * 4))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")  # optimize=True: 1.4 % smaller for 2.2x the time (29 figures: 3.1 s vs 1.4 s)
    return f"![{path.stem}](data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode('ascii')})"


def figure_page(report: catalog.Report) -> str:
    """Markdown of every panel drawn (images first, all together), then each panel's plotted data (first rows)."""
    if not report.written:
        return "Nothing drawn: " + "; ".join(f"{name}: {reason}" for name, reason in report.skipped.items())
    images = [f"**{name}**\n\n{_inline_png(Path(str(files['png'])))}" for name, files in report.written.items()]
    previews = [
        f"**{name}**: {files['rows']} rows of plotted data in `{Path(str(files['data'])).name}`; first {PREVIEW_ROWS}:\n\n"
        + markdown_preview(pl.read_parquet(str(files["data"]), n_rows=PREVIEW_ROWS))
        for name, files in report.written.items()
    ]
    skipped = [f"Not drawn: {name}: {reason}" for name, reason in report.skipped.items()]
    return "\n\n".join([*images, *skipped, "### Plotted data", *previews])


def _result(asset: catalog.FigureAsset, report: catalog.Report, folder: Path) -> dg.MaterializeResult:
    metadata: dict[str, Any] = {  # in this order on the asset's page: the figure first
        "figure": dg.MetadataValue.md(figure_page(report)),
        "figure_count": len(report.written),
        "folder": dg.MetadataValue.path(str(folder)),
        "files": dg.MetadataValue.json({name: [Path(str(files[kind])).name for kind in ("png", "pdf", "data")]
                                        for name, files in report.written.items()}),
        "skipped": dg.MetadataValue.json(report.skipped),
        "notes": dg.MetadataValue.json(report.notes),
    }
    return dg.MaterializeResult(asset_key=asset_key(asset), metadata=metadata)


def figure_family(family: catalog.FigureFamily) -> dg.AssetsDefinition:
    """One subsettable multi-asset drawing the figures of ``family``."""
    specs = [
        dg.AssetSpec(asset_key(a), deps=list(a.inputs), group_name=GROUP, description=a.description, kinds={"matplotlib"},
                     automation_condition=FOLLOW_OWN)
        for a in family.assets
    ]

    @dg.multi_asset(
        name=family.name,
        specs=specs,
        ins={k: dg.AssetIn(dg.AssetKey(k)) for k in family.inputs},
        can_subset=True,
        # Dagster's multiprocess executor starts the steps of higher priority first (the slowest figures).
        op_tags={"dagster/priority": "1" if family.slow else "0"},
    )
    def _draw(
        context: dg.AssetExecutionContext, paths: PathsResource, **frames: pl.DataFrame
    ) -> Iterator[dg.MaterializeResult]:
        folder = paths.paths().figures
        for asset in family.assets:
            if asset_key(asset) not in context.selected_asset_keys:
                continue
            report = catalog.render(asset, frames, folder)
            for name, files in report.written.items():
                context.log.info(f"{name}: {files['rows']} rows -> {files['png']}")
            for name, reason in report.skipped.items():
                context.log.warning(f"{name}: skipped, {reason}")
            for note in report.notes:
                context.log.warning(f"{asset.key}: {note}")
            yield _result(asset, report, folder)

    return _draw


@dg.definitions
def figures() -> dg.Definitions:
    """One multi-asset per family of the catalog."""
    return dg.Definitions(assets=[figure_family(family) for family in catalog.FAMILIES])
