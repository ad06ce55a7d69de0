"""``python -m pipelines whatif FILE``: what would Zeus save on your cluster (no Dagster; the parse is kept, nothing else written).

Prints the report of ``pipelines.clusters.whatif`` (``--json``: exactly one JSON object on
stdout; the text by ``pipelines.report.text``). A file that cannot be read at all, or a
bad option, prints one line naming the file, line and column (or the option) and exits with code
2. Progress bars go to stderr when it is a terminal (``--progress`` / ``--no-progress`` to choose).
The samples run where ``--scheduler`` says (``auto``: in this process, or a LocalCluster where the
measured samples say it is sooner; ``none``, ``local``, ``slurm`` or a scheduler's address); the numbers
are the same either way.
``--html FILE`` also writes the report as one self-contained page (``pipelines.report.html``)
with the same numbers.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np
import polars as pl

from pipelines.cli import invoked_as
from pipelines.cli.clusters import delimiter_option, read_limit_options, read_limits
from pipelines.cli.options import F, fail, in_range, note, scheduler_option, slurm_options, slurm_settings
from pipelines.clusters import kept, partition_tasks, tracefiles
from pipelines.clusters import whatif as whatif_report
from pipelines.clusters.profiles import Profiles, power_limit_profiles, with_measured
from pipelines.clusters.whatif_knobs import AS_EXPORTED, DEFAULTS, KNOBS, Knob
from pipelines.home import cache
from pipelines.home.outputs import STDOUT, Output, OutputRefused, check_output, write_output
from pipelines.home.paths import ProjectPaths, find_home
from pipelines.ingest import grid as grid_mod
from pipelines.ingest.common import IngestError
from pipelines.ingest.grid import Rate
from pipelines.ingest.grid_files import PriceUnit, implausible, parse_price_unit, read_grid, read_prices
from pipelines.ingest.openei import Tariff, read_tariff
from pipelines.ingest.own_cluster import check_timezone
from pipelines.ingest.simulator_inputs import resolve_traces
from pipelines.ingest.slurm import DEFAULT_DELIMITER, parse_fields
from pipelines.ingest.text_reader import Progress
from pipelines.report.text import render
from pipelines.scaleout.background import Background, beside
from pipelines.scaleout.schedulers import LOCAL, connect, resolve_scheduler
from pipelines.terminal import json_safe, printable
from pipelines.vocabulary import PAPER_ORDER
from pipelines.zeus.errors import SimulationError
from pipelines.zeus.traces import TraceError


def knob_options(*names: str) -> Callable[[F], F]:
    """The click options of the whatif knobs ``names`` (fields of ``whatif_knobs.Options``), in that order, each made from its
    ``Knob``: the flag, the field's name as the parameter, its default, help, type (a flag, a choice, repeatable), its range
    (``click.IntRange`` for a whole number, else ``in_range``) and its ``parse`` as the callback."""

    def add(command: F) -> F:
        for name in reversed(names):
            command = _knob_option(name, KNOBS[name])(command)
        return command

    return add


def _knob_option(name: str, knob: Knob) -> Callable[[F], F]:
    settings: dict[str, Any] = {"default": DEFAULTS[name], "help": knob.help, "show_default": knob.show_default}
    if knob.type is bool:
        settings["is_flag"] = True
    elif knob.choices:
        settings["type"] = click.Choice(knob.choices)
    elif knob.type is int and knob.range is not None:
        settings["type"] = click.IntRange(min=_bound(knob.range.lo), max=_bound(knob.range.hi))
    else:
        settings["type"] = knob.type
        if knob.range is not None:
            settings["callback"] = in_range(knob.range)
    if knob.parse is not None:
        settings["callback"] = _parsed(knob.parse)
    return click.option(knob.flag, name, multiple=knob.multiple, **settings)


def _bound(value: float) -> int | None:
    return None if math.isinf(value) else int(value)


def _parsed(parse: Callable[[Any], Any]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback of ``parse`` (a knob's text to its value); its ``ValueError`` is the option's one-line error."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        try:
            return parse(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None

    return callback


def _price_unit(ctx: click.Context, param: click.Parameter, value: str | None) -> PriceUnit | None:
    if value is None:
        return None
    unit = parse_price_unit(value)
    if unit is None:
        raise click.BadParameter(f"{value!r} is not a price unit: give an ISO 4217 currency and an energy unit (EUR/MWh, USD/kWh, "
                                 "ct/kWh) or a currency (EUR)")
    return unit


@click.command("whatif")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["sacct", "csv"]), default=None,
              help="sacct (--parsable2 or --parsable export) or csv (the generic job log)  [default: csv for .csv, else sacct]")
@click.option("--timezone", default=None,
              help="IANA time zone of the file's times (the cluster's clock: sacct prints local time)  [default: UTC, assumed, "
                   "and the report says so]")
@click.option("--fields", default=None, help="A sacct --noheader export's field list, as given to --format (JobID,JobName,...).")
@click.option("--delimiter", default=DEFAULT_DELIMITER, show_default=True, callback=delimiter_option,
              help="The character given to sacct's --delimiter (a --parsable/--parsable2 export; \\t for a tab).")
@knob_options("gpus", "fallback_gpu")
@click.option("--profiles", "profile_specs", multiple=True,
              help="A profile measured with `measure profile` (CSV), replayed under its gpu name; or GPU=FILE, Zeus's profile JSON "
                   "or a ZeusMonitor log (or a measure CSV): that GPU's jobs replay power-limit-only, as Zeus's "
                   "GlobalPowerLimitOptimizer runs them; repeatable. The data home's raw/measured/*.csv are read too.")
@knob_options("samples", "seed")
@scheduler_option("auto", "auto")
@click.option("--partition-data", type=click.Choice(partition_tasks.MODES), default=partition_tasks.AUTO, show_default=True,
              help="On a Dask cluster, how each (sample, partition) task gets its partition's jobs: path (files under the data "
                   "home's cache/, which the workers must read: on Slurm a shared file system), task (sent once as task data), "
                   "auto (path where every worker reads a marker file written there, else task); the report's runner line says which.")
@knob_options("eta", "beta", "price_per_kwh", "grid_gco2_per_kwh")
@click.option("--region", default=None,
              help="Where the energy was used: an ISO 3166 country (DE or DEU), a US state (US-CA) or a Nordic zone (SE3): its "
                   "carbon intensity from the table bundled with the package (no network; docs: Carbon).")
@click.option("--grid-intensity", "grid_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A carbon-intensity series at any step: timestamp,gco2_per_kwh, or Electricity Maps' CSV export as downloaded; "
                   "each run's CO2e at the intensity of when it ran.")
@click.option("--grid-column", default=None,
              help="The value column of an Electricity Maps export: direct (the combustion emissions of a GHG Protocol scope 2 "
                   "location-based inventory), lca (life-cycle, as Electricity Maps' app shows) or a column's name  [default: direct]")
@click.option("--price", "price_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A price series matched to each run the same way: timestamp,price_per_kwh, or a market's file with its unit in "
                   "the header (Datetime,Price (EUR/MWh)); negative prices are kept; or an OpenEI U.S. Utility Rate Database "
                   "item (.json, the tariff Zeus's OpenEIClient fetches), its schedule in --timezone.")
@click.option("--price-label", default=None, help="The label of the OpenEI item to read where the --price JSON has several.")
@click.option("--price-unit", default=None, callback=_price_unit,
              help="The unit of prices whose header does not say it, or the currency of --price-per-kwh: EUR/MWh, USD/kWh, "
                   "ct/kWh, EUR, ...")
@click.option("--series-timezone", default=None,
              help="IANA time zone of --grid-intensity / --price times that carry no offset and whose header names no zone  "
                   "[default: --timezone, else UTC, and the report says which]")
@knob_options("fill", "carbon_aware", "eta_clean", "eta_dirty")
@click.option("--trace-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder with Zeus's summary_train.csv and summary_power_{gpu}.csv  [default: the data home's tables, then its "
                   "raw/zeus, then the mirror, then a download]")
@knob_options("top", "cluster_gpus", "energy_model", "min_gpu_util_pct", "meter", "workloads_by", "stand_in_power", "gpu_specs",
              "horizon_days")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout.")
@click.option("--progress/--no-progress", default=None, help="Progress bars on stderr  [default: when stderr is a terminal]")
@click.option("--html", "html_file", type=click.Path(allow_dash=True), default=None,
              help="Also write the report as one self-contained HTML page (figures embedded, nothing fetched) to this file "
                   "(a new file or an earlier report; -: stdout, the text report then on stderr).")
@click.option("--parents", "make_parents", is_flag=True, help="Make --html's missing folders (else a missing folder is an error).")
@click.option("--no-cache", is_flag=True, help="Read the export afresh and keep nothing (else its parse is kept under the data "
                                              "home's cache/ and a run with other knobs reuses it; `cache list|clear`).")
@read_limit_options(kept.WHATIF_LIMITS, "A limit on work, not the memory guard: the parse holds a block of lines at a time, "
                                        "its rows and quarantine wait on disk.")
@slurm_options
def cli(
    file: Path,
    fmt: str | None,
    timezone: str,
    fields: str | None,
    delimiter: str,
    profile_specs: tuple[str, ...],
    scheduler: str | None,
    partition_data: str,
    region: str | None,
    grid_file: Path | None,
    grid_column: str | None,
    price_file: Path | None,
    price_unit: PriceUnit | None,
    price_label: str | None,
    series_timezone: str | None,
    trace_dir: Path | None,
    as_json: bool,
    progress: bool | None,
    html_file: str | None,
    make_parents: bool,
    no_cache: bool,
    max_rows: int,
    max_line_bytes: int,
    max_bytes: int,
    **given: Any,
) -> None:
    """What would Zeus save on your cluster? Replays a Slurm sacct export or a job-log CSV; writes --html and its parse, kept in cache/."""
    profile_files, html_out = _check_files(file, profile_specs, html_file, (grid_file, price_file, trace_dir), make_parents, as_json)
    # the page's figure stack (matplotlib: seconds) imports while the export is read and replayed
    figure_stack = Background(_figure_stack) if html_out is not None else None
    knobs = {name: given.pop(name) for name in KNOBS}  # the rest: the --slurm-* options
    slurm_cluster = slurm_settings(scheduler, given)
    timezone_source = "given" if timezone is not None else "assumed"
    series_timezone, series_source = _series_zone(series_timezone, timezone)
    timezone = timezone or "UTC"
    try:
        check_timezone(timezone)
        check_timezone(series_timezone)
        field_list = parse_fields(fields) if fields else None
    except ValueError as exc:
        fail(f"--timezone/--series-timezone/--fields: {exc}")
    file_format = tracefiles.format_of(file, fmt)
    grid, prices = _rates(Series(region, grid_file, grid_column, knobs["grid_gco2_per_kwh"], price_file, price_unit,
                                 knobs["price_per_kwh"], series_timezone, series_source))
    tariff = _tariff(price_file, price_unit, price_label, timezone)
    options = whatif_report.Options(**knobs, price_currency=None if price_unit is None else price_unit.currency,
                                    progress=sys.stderr.isatty() if progress is None else progress, timezone_source=timezone_source,
                                    grid=grid, prices=prices, tariff=tariff)
    home = find_home()
    # as exported, any published GPU may be some job's own; by name, only those named (measured ones come from their files)
    named = PAPER_ORDER if options.gpus is None or options.gpus == (AS_EXPORTED,) else options.gpus
    published = [g for g in (*named, options.fallback_gpu) if g in PAPER_ORDER]
    kept_lines: list[str] = []  # said once the report is made: a run that fails says one line, its error
    def read() -> tuple[whatif_report.Replayable, Profiles, str | None, str]:
        # only the columns the report reads are kept (the full table never exists); replayable frees the table before
        # its plan: the draws need only the plan
        how = kept.reading(whatif_report.trace_name_for(file), file_format, timezone, field_list, delimiter, whatif_report.REPORT_COLUMNS,
                           read_limits(max_rows, max_line_bytes, max_bytes))
        result, kept_line = kept.read(file, how, source_file=str(file), progress=_read_bar(options.progress),
                                      root=None if no_cache else cache.root(home), digest=html_file is not None)
        if kept_line is not None:
            kept_lines.append(f"[whatif] {kept_line}")
        profiles, origin = _profiles(trace_dir, home, published, profile_files, profile_specs)
        sha256, handed = result.sha256, [result]
        del result  # handed over: replayable frees the table once it has read it, before the plan's copies of the jobs
        return whatif_report.replayable(handed.pop(), profiles, options), profiles, sha256, origin

    try:
        reading = beside(read, overlap=resolve_scheduler(scheduler) == LOCAL)  # the export is read while a LocalCluster starts
        with connect(scheduler, slurm=slurm_cluster, note=note) as runner:
            prepared, profiles, sha256, origin = reading()
            placement = partition_tasks.Placement(partition_data, cache.root(home))
            report, power = whatif_report.run(prepared, profiles, runner=runner, keep_power=html_file is not None, placement=placement)
    except (IngestError, TraceError, tracefiles.TraceFileError, ValueError, SimulationError, partition_tasks.PartitionDataError) as exc:
        fail(str(exc))
    for line in kept_lines:
        note(line)
    report["zeus_traces"] = origin
    if as_json:
        click.echo(json.dumps(json_safe(report), allow_nan=False))
    else:
        click.echo(render(report), err=html_file == STDOUT)
    if html_out is not None:
        if figure_stack is not None:
            figure_stack.result()
        _write_html(html_out, file, sha256, report, power, grid)


def _profiles(trace_dir: Path | None, home: Path, published: list[str], profile_files: list[Path],
              profile_specs: tuple[str, ...]) -> tuple[Profiles, str]:
    """(the profiles whatif replays on: the published ones, the measured ones, ``--profiles`` files and power-limit-only ones;
    where the published traces came from)."""
    traces, origin = resolve_traces(trace_dir, home, published)
    missing = [p for p in profile_files if not p.is_file()]
    if missing:
        fail(f"--profiles {missing[0]}: no such file")
    profiles = with_measured(traces, profile_files, ProjectPaths(home).raw / "measured").with_power_limit(
        power_limit_profiles([spec for spec in profile_specs if "=" in spec]))
    return profiles, origin


def _check_files(file: Path, profile_specs: tuple[str, ...], html_file: str | None, other_inputs: tuple[Path | None, ...],
                 make_parents: bool, as_json: bool) -> tuple[list[Path], Output | None]:
    """The export is a file, and --html a path it may write (``_check_html``; one line and exit 2 if not): the --profiles
    files given without a GPU (Zeus's profile files), and where the page goes (None: no --html)."""
    if not file.exists():
        fail(f"{file}: no such file")
    if file.is_dir():
        fail(f"{file}: is a folder; give the export file")
    profile_files = [Path(spec) for spec in profile_specs if "=" not in spec]
    if html_file is not None:
        inputs = (file, *profile_files, *(Path(spec.partition("=")[2]) for spec in profile_specs if "=" in spec),
                  *(p for p in other_inputs if p is not None))
        return profile_files, _check_html(html_file, inputs, make_parents, as_json)
    return profile_files, None


def _figure_stack() -> None:
    """Import what ``--html`` draws its figures with and set their theme (``Background``: beside the read and the replay; the
    light theme, no seaborn: ``pipelines.figures.style.apply_light_theme``). An
    import that fails here (another thread importing the same module at once) is left to the page's own imports."""
    try:
        from pipelines.figures import style
        from pipelines.report import figures, html  # noqa: F401 - imported for their cost, not used here

        style.apply_light_theme()
    except Exception:  # the page imports them again and reports any real error there
        return


def _read_bar(enabled: bool) -> Progress | None:
    """A progress bar of the bytes read (stderr; ``--progress``, by default when stderr is a terminal), told after each block
    the reader parses (``pipelines.ingest.own_cluster.Source``); None: no bar."""
    if not enabled:
        return None
    from tqdm import tqdm

    bars: list[tqdm] = []

    def update(done: int, total: int) -> None:
        if not bars:
            bars.append(tqdm(total=total, unit="B", unit_scale=True, desc="[whatif] reading", file=sys.stderr, leave=False))
        bars[0].update(done - bars[0].n)
        if done >= total:
            bars[0].close()

    return update


def _series_zone(series_timezone: str | None, timezone: str | None) -> tuple[str, str]:
    """(the zone of a series' bare times, where it came from): --series-timezone, else the export's --timezone, else UTC."""
    if series_timezone is not None:
        return series_timezone, "--series-timezone"
    return (timezone, "--timezone") if timezone is not None else ("UTC", "assumed")


def _is_tariff(price_file: Path | None) -> bool:
    """Whether ``--price`` names an OpenEI item (a .json file), not a CSV series."""
    return price_file is not None and price_file.suffix.lower() == ".json"


def _tariff(price_file: Path | None, unit: PriceUnit | None, label: str | None, timezone: str) -> Tariff | None:
    """The OpenEI tariff of a ``--price`` JSON, its schedule in the cluster's ``timezone``; None for another file."""
    if label is not None and not _is_tariff(price_file):
        fail("--price-label picks an item of an OpenEI --price FILE.json: give the file")
    if price_file is None or not _is_tariff(price_file):
        return None
    if unit is not None:
        fail("--price-unit: an OpenEI tariff is in USD per kWh")
    try:
        return read_tariff(price_file, timezone, label)
    except IngestError as exc:
        fail(str(exc))


@dataclass(frozen=True)
class Series:
    """The options that say the grid's carbon intensity and the price (``_rates``)."""

    region: str | None
    grid_file: Path | None
    grid_column: str | None
    grid_flat: float | None
    price_file: Path | None
    price_unit: PriceUnit | None
    price_flat: float | None
    timezone: str  # of a series' times without an offset or a zone in the header
    timezone_source: str  # --series-timezone, --timezone or assumed


def _rates(s: Series) -> tuple[Rate | None, Rate | None]:
    """The carbon intensity and price series or region given (one of each kind at most); one line and exit 2 on bad input.
    An implausible price (``grid_files.implausible``) is said once on stderr (and in the report)."""
    if sum(x is not None for x in (s.region, s.grid_file, s.grid_flat)) > 1:
        fail("give one of --region, --grid-intensity and --grid-gco2-per-kwh")
    if s.price_file is not None and s.price_flat is not None:
        fail("give one of --price and --price-per-kwh")
    if s.grid_column is not None and s.grid_file is None:
        fail("--grid-column picks a column of --grid-intensity FILE: give the file")
    if s.price_unit is not None and s.price_flat is not None and s.price_unit.per_kwh not in (None, 1.0):
        fail(f"--price-per-kwh is per kWh: give --price-unit as a currency (EUR) or per kWh (EUR/kWh), not {s.price_unit.text()}")
    if s.price_unit is not None and s.price_file is None and s.price_flat is None:
        fail("--price-unit says the unit of --price FILE or the currency of --price-per-kwh: give one")
    try:
        grid = (Rate.constant((r := grid_mod.find_region(s.region)).gco2_per_kwh, r.describe()) if s.region is not None else
                read_grid(s.grid_file, s.grid_column, s.timezone, s.timezone_source) if s.grid_file is not None else None)
        prices = (read_prices(s.price_file, s.price_unit, s.timezone, s.timezone_source)
                  if s.price_file is not None and not _is_tariff(s.price_file) else None)
    except (IngestError, ValueError) as exc:
        fail(str(exc))
    warning = (prices.describe.get("warning") if prices is not None else
               implausible(np.array([s.price_flat])) if s.price_flat is not None else None)
    if warning:
        note(f"Warning: {'--price ' + s.price_file.name if s.price_file is not None else '--price-per-kwh'}: {warning}")
    return grid, prices


#: Parameters that change no number of the report (where it goes, how it is shown).
_PRESENTATION = ("file", "as_json", "progress", "html_file", "make_parents", "no_cache", "max_rows", "max_line_bytes", "max_bytes",
                 "partition_data")


def _check_html(path: str, inputs: tuple[Path, ...], make_parents: bool, as_json: bool) -> Output:
    """Where --html goes; one line and exit 2, before any work, for a path that must not be written (``check_output``)."""
    from pipelines.report.html import REPORT

    if path == STDOUT and as_json:
        fail("--html - and --json both print on stdout: give --html a file name")
    try:
        return check_output(path, "--html", find_home(), kind=REPORT, inputs=inputs, make_parents=make_parents)
    except OutputRefused as exc:
        fail(str(exc))


def _write_html(output: Output, file: Path, sha256: str | None, report: dict[str, Any], power: pl.DataFrame, grid: Rate | None) -> None:
    """The report as its HTML page where --html said (``check_output``'s ``output``); one line if refused meanwhile."""
    from pipelines.report import html as whatif_html  # matplotlib: only for the page

    provenance = whatif_html.Provenance.now(file.name, sha256, _options_used(), _command_line(file))
    try:
        write_output(output, whatif_html.render(report, power, provenance, grid).encode())
    except OutputRefused as exc:
        fail(str(exc))
    click.echo(f"[whatif] report -> {printable(output.shown.removeprefix('--html '))}", err=True)


def _options_used() -> dict[str, str]:
    """Every option that shapes the numbers, with the value used (given or default), for the report's provenance."""
    ctx = click.get_current_context()
    out: dict[str, str] = {}
    for param in ctx.command.params:
        if param.name is None or param.name in _PRESENTATION or param.name.startswith("slurm_"):
            continue
        value = ctx.params.get(param.name)
        if value in (None, ()):
            value = "default"
        elif isinstance(value, tuple):
            value = ",".join(map(str, value))
        out[param.opts[0]] = str(value)
    return out


def _command_line(file: Path) -> str:
    """The command as typed (``sys.argv``), the export named by its file name only (the page may be mailed)."""
    argv = sys.argv[1:]
    words = argv[argv.index("whatif") + 1:] if "whatif" in argv else []
    return shlex.join([*invoked_as("whatif").split(), *(file.name if w == str(file) else w for w in words)])
