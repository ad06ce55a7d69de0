"""``python -m pipelines whatif FILE``: what would Zeus save on your cluster (no Dagster, nothing written).

Prints the report of ``pipelines.clusters.whatif`` (``--json``: exactly one JSON object on
stdout). A file that cannot be read at all, or a bad option, prints one line naming the file,
line and column (or the option) and exits with code 2. Progress bars go to stderr when it is a
terminal (``--progress`` / ``--no-progress`` to choose).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import NoReturn

import click

from pipelines.cli.simulate import _finite
from pipelines.clusters import tracefiles
from pipelines.clusters import whatif as report_of
from pipelines.clusters.capacity import CapacityError
from pipelines.home.paths import find_home
from pipelines.ingest.common import IngestError
from pipelines.ingest.owntrace import check_timezone
from pipelines.ingest.slurm import parse_fields
from pipelines.vocabulary import PAPER_ORDER
from pipelines.zeus.traces import TraceError


def _fail(message: str) -> NoReturn:
    click.echo(f"Error: {' '.join(message.split())}", err=True)
    sys.exit(2)


def _gpus(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    names = PAPER_ORDER if value.strip().lower() == "all" else tuple(dict.fromkeys(g.strip().lower() for g in value.split(",") if g.strip()))
    if not names:
        raise click.BadParameter("give one GPU or more, comma-separated (v100,a40,rtx6000,p100), or all")
    return names


def _non_negative(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise click.BadParameter(f"{value} is not a number >= 0")
    return value


@click.command("whatif")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["sacct", "csv"]), default=None,
              help="sacct (--parsable2 or --parsable export) or csv (the generic job log)  [default: csv for .csv, else sacct]")
@click.option("--timezone", default="UTC", show_default=True, help="IANA time zone of the file's times (the cluster's clock).")
@click.option("--fields", default=None, help="A sacct --noheader export's field list, as given to --format (JobID,JobName,...).")
@click.option("--gpu", "gpus", default="v100", show_default=True, callback=_gpus,
              help="GPUs to replay on, comma-separated: v100,a40,rtx6000,p100 (or all).")
@click.option("--eta-knob", type=float, default=0.5, show_default=True, callback=_finite(0.0, 1.0),
              help="Energy weight of Zeus's cost, in [0, 1].")
@click.option("--beta-knob", type=float, default=2.0, show_default=True, callback=_finite(1.0, math.inf, inf_ok=True),
              help="Early stopping at beta x the minimum cost, >= 1 (inf: never).")
@click.option("--price-per-kwh", type=float, default=None, callback=_non_negative, help="Electricity price (per kWh): adds cost saved.")
@click.option("--grid-gco2-per-kwh", type=float, default=None, callback=_non_negative,
              help="Grid carbon intensity (g CO2e per kWh): adds CO2e saved.")
@click.option("--trace-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder with Zeus's summary_train.csv and summary_power_{gpu}.csv  [default: the data home's tables, then its "
                   "raw/zeus, then the mirror, then a download]")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, help="Recurring groups listed.")
@click.option("--cluster-gpus", type=click.IntRange(min=1), default=None,
              help="GPUs of your cluster, for the idle draw of fleet energy (at least the trace's peak concurrent GPUs)  "
                   "[default: the trace's peak concurrent GPUs]")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout.")
@click.option("--progress/--no-progress", default=None, help="Progress bars on stderr  [default: when stderr is a terminal]")
def cli(
    file: Path,
    fmt: str | None,
    timezone: str,
    fields: str | None,
    gpus: tuple[str, ...],
    eta_knob: float,
    beta_knob: float,
    price_per_kwh: float | None,
    grid_gco2_per_kwh: float | None,
    trace_dir: Path | None,
    top: int,
    cluster_gpus: int | None,
    as_json: bool,
    progress: bool | None,
) -> None:
    """What would Zeus save on your cluster? Replays a Slurm sacct export or a job-log CSV; writes nothing."""
    if not file.is_file():
        _fail(f"{file}: no such file")
    try:
        check_timezone(timezone)
        field_list = parse_fields(fields) if fields else None
    except ValueError as exc:
        _fail(f"--timezone/--fields: {exc}")
    file_format = tracefiles.format_of(file, fmt)
    options = report_of.Options(gpus=gpus, eta=eta_knob, beta=beta_knob, price_per_kwh=price_per_kwh,
                                grid_gco2_per_kwh=grid_gco2_per_kwh, top=top, cluster_gpus=cluster_gpus,
                                progress=sys.stderr.isatty() if progress is None else progress)
    try:
        result = tracefiles.read_trace(file, report_of.trace_name_for(file), file_format, timezone, field_list, source_file=str(file),
                                       digest=False)
        traces, origin = report_of.load_zeus_traces(trace_dir, find_home(), gpus)
        report = report_of.whatif(result, traces, options)
    except (IngestError, TraceError, tracefiles.TraceFileError, CapacityError) as exc:
        _fail(str(exc))
    report["zeus_traces"] = origin
    if as_json:
        click.echo(json.dumps(report, allow_nan=False))
    else:
        click.echo(report_of.render(report))
