"""``python -m pipelines sweep``: the knob grid over the cluster traces, on Dask or in-process.

Reads the materialized ``cluster_workload_jobs``, ``zeus_train_runs`` and ``zeus_power_profiles``
(``make materialize`` writes them) and writes the grid's table (``ZeusKnobGrid``) as Parquet.
No Dagster import.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import click

from pipelines.cli import invoked_as
from pipelines.cli.options import AliasedCommand, note, scheduler_option, slurm_options, slurm_settings
from pipelines.clusters.sweep import GRIDS, TABLE, SweepError, check_inputs, read_inputs, replays, sweep
from pipelines.home.atomic import parquet_bytes
from pipelines.home.outputs import OutputRefused, check_output, write_output
from pipelines.home.paths import default_paths
from pipelines.scaleout.schedulers import SchedulerError, connect
from pipelines.terminal import printable

T = TypeVar("T")


def _values(kind: Callable[[str], T], name: str) -> Callable[[click.Context, click.Parameter, str | None], tuple[T, ...] | None]:
    def parse(ctx: click.Context, param: click.Parameter, text: str | None) -> tuple[T, ...] | None:
        if text is None:
            return None
        try:
            return tuple(kind(v.strip()) for v in text.split(",") if v.strip())
        except ValueError as exc:
            raise click.BadParameter(f"{text!r} is not a comma-separated list of {name}") from exc

    return parse


@click.command("sweep", cls=AliasedCommand, aliases={"--eta": "--eta-knob", "--beta": "--beta-knob"})
@click.option("--grid", "preset", type=click.Choice(["default", "paper"]), default="default", show_default=True,
              help="Knob values to start from; the options below replace its values.")
@click.option("--traces", callback=_values(str, "trace names"), help="e.g. itp,elasticflow (default: every trace with jobs).")
@click.option("--gpus", callback=_values(str, "GPU names"), help="e.g. v100,a40 (default: the grid's, the four published GPUs).")
@click.option("--eta-knob", "etas", callback=_values(float, "numbers"), help="eta knob values, e.g. 0,0.5,1.")
@click.option("--beta-knob", "betas", callback=_values(float, "numbers"), help="beta knob values, e.g. 2 or 1.5,2,inf.")
@click.option("--seeds", callback=_values(int, "integers"), help="seed knob values, e.g. 1,2.")
@click.option("--policies", callback=_values(str, "policy names"), help="default: zeus,default,grid-search (default is required).")
@scheduler_option(None, "$DASK_SCHEDULER_ADDRESS, else auto")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Worker processes of a local cluster (default: one per core).")
@click.option("--assets", "assets_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of the materialized tables (default: the project's assets/).")
@click.option("--output", type=click.Path(allow_dash=True), required=True,
              help="Parquet file to write: a new file or an earlier sweep's table (-: stdout; not a link, a device, an input "
                   "or a file of the data home's assets/, figures/, raw/).")
@click.option("--parents", "make_parents", is_flag=True, help="Make --output's missing folders (else a missing folder is an error).")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Progress bar on stderr.")
@slurm_options
def cli(
    preset: str,
    traces: tuple[str, ...] | None,
    gpus: tuple[str, ...] | None,
    etas: tuple[float, ...] | None,
    betas: tuple[float, ...] | None,
    seeds: tuple[int, ...] | None,
    policies: tuple[str, ...] | None,
    scheduler: str | None,
    workers: int | None,
    assets_dir: Path | None,
    output: str,
    make_parents: bool,
    progress: bool,
    **slurm: Any,
) -> None:
    """Replay every trace on every GPU for every (eta, beta, seed) under Zeus and the baselines.

    One output row per (trace, gpu, eta, beta, seed, policy): jobs, runs, energy_j, time_s and the
    saving vs Default. The table is the same, bit for bit, whatever the scheduler.
    """

    home = default_paths()
    try:
        target = check_output(output, "--output", home.root, kind=TABLE, inputs=[assets_dir or home.assets], make_parents=make_parents)
    except OutputRefused as exc:
        raise click.UsageError(printable(str(exc))) from exc
    slurm_cluster = slurm_settings(scheduler, slurm)
    changes = {k: v for k, v in {"traces": traces, "gpus": gpus, "etas": etas, "betas": betas, "seeds": seeds,
                                  "policies": policies}.items() if v is not None}
    try:
        grid = replace(GRIDS[preset], **changes)  # type: ignore[arg-type]  # values typed per field above
    except SweepError as exc:
        raise click.UsageError(str(exc)) from exc
    try:
        jobs, trace_tables = read_inputs(assets_dir or home.assets)
    except SweepError as exc:
        raise click.ClickException(f"{exc}: run `{invoked_as('materialize')}` first") from exc
    try:
        check_inputs(jobs, trace_tables, grid)  # before a cluster is started for nothing
    except SweepError as exc:
        raise click.ClickException(str(exc)) from exc
    started = time.perf_counter()
    try:
        with connect(scheduler, workers=workers, slurm=slurm_cluster, note=note) as runner:
            click.echo(f"[sweep] on {runner.description}", err=True)
            table = sweep(jobs, trace_tables, grid, runner, progress=progress)
    except SchedulerError as exc:
        raise click.ClickException(str(exc)) from None
    seconds = time.perf_counter() - started
    try:
        write_output(target, parquet_bytes(table))
    except OutputRefused as exc:
        raise click.UsageError(printable(str(exc))) from exc
    n = len(replays(grid, tuple(sorted(table["trace"].unique().to_list()))))
    click.echo(f"[sweep] {n} replays, {table.height} rows -> {printable(str(output))} in {seconds:.1f} s ({n / seconds:.2f} replays/s)", err=True)
