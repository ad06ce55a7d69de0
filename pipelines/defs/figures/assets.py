"""Figures layer: every figure of ``pipelines.figures.catalog`` as an asset, written to figures/.

Each ``FigureFamily`` is one multi-asset (one Dagster step, one process), with one asset key per
``FigureAsset``, ``figures/<name>``: the path of its files without the extension (an asset drawing
one figure per GPU or workload, ``figures/energy_eta_vs_tta``, writes ``energy_eta_vs_tta_<gpu>``).
It can be subset, so selecting one figure asset draws only that one. Inputs come through the
default IO manager as polars frames. Each figure is ``figures/<name>.png`` (for eyes), ``.pdf``
(for papers) and ``.parquet`` (the numbers plotted). The asset's page in the UI (its latest
materialization's metadata) has one ``figure`` entry first: one click on it shows every panel the
asset drew (one per GPU or workload) together, each as a small thumbnail under the absolute paths of
its full PNG and PDF, then the first rows of each panel's plotted data; ``files`` names the files
(short names, under the ``folder`` path). The event log keeps every materialization's metadata (three
copies in the SQLite instance: the run's, the index's, the asset's latest), so the entry is at most
``MAX_ENTRY_BYTES``: thumbnails in a 256-colour palette, narrower until the entry fits
(``figure_page``), the figures themselves on disk. A figure with nothing to draw (an optional trace
absent here) is listed under ``skipped`` with the reason, and writes no file.
Every figure follows its inputs by ``AutomationCondition.eager()``: a new or changed trace (your
own ones included) redraws them once every input partition is there (the ``make dev`` daemon); a
figure that reads every trace waits until the trace's replays are done (``own_clusters.assets.follow``),
so that they are drawn in one run.
"""

import base64
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from pipelines.defs.own_clusters.assets import follow
from pipelines.defs.shared.io_manager import PathsResource
from pipelines.defs.shared.metadata import PREVIEW_ROWS, markdown_preview
from pipelines.figures import catalog

GROUP = "figures"
KEY_PREFIX = "figures"
#: Widths (px) tried in turn for the thumbnails on the asset's page, until its ``figure`` entry fits (the PNG files are 200 dpi).
THUMBNAIL_PX = (720, 560, 480, 400, 320, 240)
#: Most bytes of the ``figure`` entry (UTF-8 markdown, thumbnails base64-encoded in it): every materialization keeps it in the event log.
MAX_ENTRY_BYTES = 256 * 1024
#: The check on every figure asset: WARN when it drew nothing.
DREW_SOMETHING = "drew_something"


def asset_key(asset: catalog.FigureAsset) -> dg.AssetKey:
    return dg.AssetKey([KEY_PREFIX, asset.key])


def _thumbnail(path: Path, width_px: int) -> str:
    """Markdown showing the PNG at ``path`` at most ``width_px`` wide, in a 256-colour palette (a plot's flat colours keep; a
    third of the RGBA's bytes), embedded as a data URI."""
    from PIL import Image  # matplotlib's own dependency; loaded only when a figure is drawn

    with Image.open(path) as image:
        image.thumbnail((width_px, width_px * 4))
        buffer = io.BytesIO()
        image.convert("RGB").quantize(colors=256).save(buffer, format="PNG")
    return f"![{path.stem}](data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode('ascii')})"


def _panel(name: str, files: dict[str, object], width_px: int | None) -> str:
    """A panel's heading, the paths of its full PNG and PDF, and its thumbnail (none when ``width_px`` is None)."""
    heading = f"**{name}**: `{files['png']}` (PDF: `{files['pdf']}`)"
    return heading if width_px is None else f"{heading}\n\n{_thumbnail(Path(str(files['png'])), width_px)}"


def nothing_drawn(report: catalog.Report) -> str:
    """Why ``report`` drew nothing, and what would fill it: each skipped panel's reason (the catalog names the input or file)."""
    return "Nothing drawn: " + "; ".join(f"{name}: {reason}" for name, reason in report.skipped.items())


def figure_page(report: catalog.Report) -> str:
    """Markdown of every panel drawn (thumbnails first, all together), then each panel's plotted data (first rows).

    At most ``MAX_ENTRY_BYTES``: the widest thumbnails of ``THUMBNAIL_PX`` that fit, else the panels' paths alone.
    """
    if not report.written:
        return nothing_drawn(report)
    previews = [
        f"**{name}**: {files['rows']} rows of plotted data in `{Path(str(files['data'])).name}`; first {PREVIEW_ROWS}:\n\n"
        + markdown_preview(pl.read_parquet(str(files["data"]), n_rows=PREVIEW_ROWS))
        for name, files in report.written.items()
    ]
    skipped = [f"Not drawn: {name}: {reason}" for name, reason in report.skipped.items()]
    for width in (*THUMBNAIL_PX, None):
        panels = [_panel(name, files, width) for name, files in report.written.items()]
        page = "\n\n".join([*panels, *skipped, "### Plotted data", *previews])
        if len(page.encode()) <= MAX_ENTRY_BYTES:
            break
    return page


def drew_something(asset: catalog.FigureAsset, report: catalog.Report) -> dg.AssetCheckResult:
    """``DREW_SOMETHING``: passes when ``report`` wrote a panel; else fails with WARN severity, saying why (``nothing_drawn``)."""
    drawn = len(report.written)
    return dg.AssetCheckResult(
        asset_key=asset_key(asset),
        check_name=DREW_SOMETHING,
        passed=drawn > 0,
        severity=dg.AssetCheckSeverity.WARN,
        description=f"{drawn} of {drawn + len(report.skipped)} drawn" if drawn else nothing_drawn(report),
        metadata={"figure_count": drawn, "skipped": dg.MetadataValue.json(report.skipped)},
    )


def _result(asset: catalog.FigureAsset, report: catalog.Report, folder: Path, checked: bool) -> dg.MaterializeResult:
    """The asset's materialization; with its ``DREW_SOMETHING`` check's result when ``checked`` (the check is selected)."""
    metadata: dict[str, Any] = {  # in this order on the asset's page: the figure first
        "figure": dg.MetadataValue.md(figure_page(report)),
        "figure_count": len(report.written),
        "folder": dg.MetadataValue.path(str(folder)),
        "files": dg.MetadataValue.json({name: [Path(str(files[kind])).name for kind in ("png", "pdf", "data")]
                                        for name, files in report.written.items()}),
        "skipped": dg.MetadataValue.json(report.skipped),
        "notes": dg.MetadataValue.json(report.notes),
    }
    return dg.MaterializeResult(asset_key=asset_key(asset), metadata=metadata, check_results=[drew_something(asset, report)] if checked else None)


def figure_family(family: catalog.FigureFamily) -> dg.AssetsDefinition:
    """One subsettable multi-asset drawing the figures of ``family``."""
    specs = [
        dg.AssetSpec(asset_key(a), deps=list(a.inputs), group_name=GROUP, description=a.description, kinds={"matplotlib"},
                     automation_condition=follow(a.inputs))
        for a in family.assets
    ]
    check_specs = [
        dg.AssetCheckSpec(DREW_SOMETHING, asset=asset_key(a), description="The asset drew at least one panel. Warns when it drew nothing "
                          "(never blocking), with each panel's reason: the input that is empty or the file to supply.")
        for a in family.assets
    ]

    @dg.multi_asset(
        name=family.name,
        specs=specs,
        check_specs=check_specs,
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
            checked = dg.AssetCheckKey(asset_key(asset), DREW_SOMETHING) in context.selected_asset_check_keys
            yield _result(asset, report, folder, checked)

    return _draw


@dg.definitions
def figures() -> dg.Definitions:
    """One multi-asset per family of the catalog."""
    return dg.Definitions(assets=[figure_family(family) for family in catalog.FAMILIES])
