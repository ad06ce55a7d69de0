"""The ``whatif --html`` report of each of your traces, as a file under figures/ (thin wrapper).

``figures/own_cluster_report`` (its key names the folder of its files, as a figure's does) replays every trace
of ``own_cluster_traces`` as ``own_cluster_summary`` does (as exported, the V100 as the fallback, its samples
and seed: the same numbers, bit for bit) and writes ``figures/own_cluster_report_<trace>.html``
(``pipelines.report.html``: one self-contained page) and ``figures/own_cluster_report_<trace>.json``
(the report's numbers, as ``whatif --json`` prints them). Reports of traces that are gone are removed. The
asset's page in the UI names each file (path and file:// link) beside the trace's saving and its plot.
"""

import base64
import io
import json
from pathlib import Path

import dagster as dg
import polars as pl

from pipelines.clusters import whatif
from pipelines.defs.clusters.own_cluster_summary import (
    NOT_REPLAYABLE,
    SUMMARY_SAMPLES,
    SUMMARY_SEED,
    own_cluster_summary,
    replayable,
    stored_profiles,
)
from pipelines.defs.own_clusters.assets import FOLLOW_ALL_TRACES
from pipelines.defs.shared.dask import DaskResource
from pipelines.defs.shared.io_manager import PathsResource
from pipelines.defs.shared.table_assets import COMPILED_REPLAY
from pipelines.home.atomic import write_text_atomic

#: The files' stem: figures/<PREFIX><trace>.html and .json.
PREFIX = "own_cluster_report_"
#: Resolution (dpi) of the plot shown on the asset's page.
THUMBNAIL_DPI = 80
#: The check: WARN when no report was written.
WROTE_REPORTS = "wrote_reports"
#: Why there is no report when no trace of yours is registered, and what would make one.
NO_TRACE = ("no trace of yours: add a Slurm sacct export or a job-log CSV (`gpu-energy clusters add NAME FILE`, or drop it "
            "into raw/clusters/ while `make dev` runs)")


KEY = dg.AssetKey(["figures", "own_cluster_report"])


def no_report(traces: list[str]) -> str:
    """Why no report was written for ``traces`` (those of ``own_cluster_traces``), and what would make one."""
    return "No report: " + ("; ".join(f"{trace}: {NOT_REPLAYABLE}" for trace in traces) if traces else NO_TRACE)


def _thumbnail(report: dict[str, object]) -> str:
    """Markdown showing the report's plot of energy saved per GPU, embedded as a PNG data URI ('' when there is none)."""
    from pipelines.figures.errors import NoData
    from pipelines.report import figures

    try:
        fig, _ = figures.savings_with_intervals(report)
    except NoData:
        return ""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=THUMBNAIL_DPI)
    return f"![energy saved]({'data:image/png;base64,' + base64.b64encode(buffer.getvalue()).decode('ascii')})\n\n"


def _stale(folder: Path, traces: set[str]) -> list[Path]:
    return [p for p in (*folder.glob(f"{PREFIX}*.html"), *folder.glob(f"{PREFIX}*.json"))
            if p.stem.removeprefix(PREFIX) not in traces]


@dg.asset(
    key_prefix="figures",
    group_name="figures",
    check_specs=[dg.AssetCheckSpec(WROTE_REPORTS, asset=KEY,
                                   description="A report was written for a trace of yours. Warns when none was "
                                   "(never blocking), saying why: no trace added yet, or none with a COMPLETED GPU job.")],
    automation_condition=FOLLOW_ALL_TRACES,
    kinds={"html", "matplotlib", "dask"},  # a page of figures, not a table
    tags=COMPILED_REPLAY,
    # own_cluster_summary's own resource (Dagster wants one definition per key): in the step's process unless the run
    # configures samples_dask.
    resource_defs={"samples_dask": own_cluster_summary.resource_defs["samples_dask"]},
    description="The `whatif --html` report of each of your traces (`figures/own_cluster_report_<trace>.html`, one self-contained "
    "page: accounting, savings with intervals, cluster power, load-duration curve, fleet, measured energy, top groups), with "
    "the numbers of own_cluster_summary, and its JSON beside it.",
)
def own_cluster_report(
    context: dg.AssetExecutionContext,
    paths: PathsResource,
    samples_dask: DaskResource,
    own_cluster_jobs: pl.DataFrame,
    own_cluster_traces: pl.DataFrame,
    zeus_train_runs: pl.DataFrame,
    zeus_power_profiles: pl.DataFrame,
) -> dg.MaterializeResult:
    from pipelines.report import html as whatif_html  # matplotlib: only when the step runs

    folder = paths.paths().figures
    folder.mkdir(parents=True, exist_ok=True)
    profiles = stored_profiles(zeus_train_runs, zeus_power_profiles)  # own_cluster_summary's, so that the numbers are its
    options = whatif.Options(samples=SUMMARY_SAMPLES, seed=SUMMARY_SEED)
    used = {"--gpu": "as-exported", "--fallback-gpu": options.fallback_gpu, "--samples": str(options.samples), "--seed": str(options.seed),
            "--eta-knob": f"{options.eta:g}", "--beta-knob": f"{options.beta:g}",
            "--energy": options.energy_model, "--min-gpu-util": f"{options.min_gpu_util_pct:g}"}
    metadata: dict[str, dg.MetadataValue] = {}
    written: set[str] = set()
    with samples_dask.runner() as runner:
        for trace, result in replayable(own_cluster_traces, own_cluster_jobs, context.log):
            report, power = whatif.run(result, profiles, options, runner, keep_power=True)
            report["zeus_traces"] = "the data home's zeus_train_runs and zeus_power_profiles tables"
            provenance = whatif_html.Provenance.now(trace["source_file"], trace["sha256"], {"--timezone": trace["timezone"], **used})
            page = whatif_html.write(folder / f"{PREFIX}{trace['trace']}.html", report, power, provenance)
            write_text_atomic(json.dumps(report, allow_nan=False), folder / f"{PREFIX}{trace['trace']}.json")
            written.add(trace["trace"])
            context.log.info(f"{trace['trace']}: report -> {page}")
            whole = report.get("total") or next(iter(report["gpus"].values()))
            low, high = whole.get("energy_saved_pct_interval") or [None, None]
            saved = "-" if whole.get("energy_saved_pct") is None else f"{whole['energy_saved_pct']:.1f} %"
            interval = "" if low is None or high is None else f" (90 % interval {low:.1f} to {high:.1f} %)"
            metadata[trace["trace"]] = dg.MetadataValue.md(
                f"{_thumbnail(report)}Energy saved: {saved}{interval}.\n\nReport: `{page}` "
                f"([open]({page.resolve().as_uri()}); open the file in a browser: it is self-contained)")
            metadata[f"{trace['trace']}_path"] = dg.MetadataValue.path(str(page))
    for path in _stale(folder, written):
        path.unlink(missing_ok=True)
        context.log.info(f"removed {path}: its trace has no report now")
    why = no_report(sorted(own_cluster_traces["trace"])) if not written else None
    check = dg.AssetCheckResult(check_name=WROTE_REPORTS, passed=bool(written), severity=dg.AssetCheckSeverity.WARN,
                                description=why or f"{len(written)} report(s): {', '.join(sorted(written))}", metadata={"reports": len(written)})
    return dg.MaterializeResult(
        metadata={"reports": dg.MetadataValue.json(sorted(written)), **({"no_report": dg.MetadataValue.text(why)} if why else {}), **metadata},
        check_results=[check] if dg.AssetCheckKey(KEY, WROTE_REPORTS) in context.selected_asset_check_keys else None)
