"""``python -m pipelines hetero``: the optimal batch split and power limits for two or more GPUs.

    python -m pipelines hetero --profiles raw/zeus2/cifar_a10.json raw/zeus2/cifar_t4.json

Profiles are given strongest GPU first (the published heuristic pins the first GPU to its lowest
limit). ``--method``: brute, heuristic or baseline under the published cost; sync (the exact
optimum under the synchronous model); all (every method under both models, plus the published
baseline as its code scores it). Prints the rows of the allocations table
(``pipelines.hetero.allocations``) as a text table or as JSON lines (full-precision floats).
A malformed profile prints one line naming the file, line:column and key, and exits with code 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from pipelines.cli.options import AliasedCommand, eta_knob_option, fail, finite
from pipelines.contracts.limits import MAX_GPU_POWER_W
from pipelines.hetero import compositions
from pipelines.hetero.allocations import allocation_rows
from pipelines.hetero.fit import FitError, fit_gpu
from pipelines.hetero.search import Grid, Progress
from pipelines.ingest.zeus2 import ProfileFormatError, profile_name, read_profile
from pipelines.vocabulary import ModelKind, TimePrice

_METHODS = ("all", "brute", "heuristic", "baseline", "sync")
#: Show a progress bar for searches with more splits than this (two GPUs never need one).
_PROGRESS_MIN_SPLITS = 200_000


def _selection(method: str) -> tuple[tuple[str, ...], tuple[ModelKind, ...], bool]:
    """(methods, models, include baseline_as_written) for ``--method``."""
    if method == "all":
        return ("brute", "heuristic", "baseline"), ("published", "sync"), True
    if method == "sync":
        return ("brute",), ("sync",), False
    return (method,), ("published",), False


def _table(rows: list[dict[str, Any]]) -> str:
    header = ("method", "model", "batch split", "power limits (W)", "time (s)", "energy (J)", "cost (J)", "sync cost (J)")
    body = [
        (
            str(r["method"]),
            str(r["model"]),
            " / ".join(str(b) for b in r["batch_split"]),
            " / ".join(str(w) for w in r["power_limits"]),
            f"{r['time_s']:.4f}",
            f"{r['energy_j']:.2f}",
            f"{r['cost']:.2f}",
            f"{r['sync_cost']:.2f}",
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(line[i]) for line in body)) for i, h in enumerate(header)]

    def fmt(cells: Sequence[str]) -> str:  # method and model left-aligned, numbers right-aligned
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

    return "\n".join([fmt(header), fmt(["-" * w for w in widths]), *(fmt(line) for line in body)])


@click.command("hetero", cls=AliasedCommand, aliases={"--eta": "--eta-knob"})
@click.option("--profiles", "profiles", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Profile JSON files, strongest GPU first (<workload>_<gpu>.json); the files may also follow as arguments.")
@click.argument("more_profiles", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--global-batch", type=int, default=4096, show_default=True, help="Global batch (samples) to split.")
@click.option("--granularity", type=int, default=1, show_default=True, help="Each GPU's share is a positive multiple of this.")
@click.option("--method", type=click.Choice(_METHODS), default="all", show_default=True)
@eta_knob_option("Energy weight of the cost (Zeus's eta), in [0, 1].")
@click.option("--time-price", type=click.Choice(["power_limit", "max_power_limit"]), default="power_limit", show_default=True,
              help="Watts charged per second of time: the chosen limit (published) or the GPU's highest (Zeus MaxPower).")
@click.option("--idle-power", "idle_power", type=float, multiple=True, callback=finite(0.0, MAX_GPU_POWER_W),
              help="Idle power (W) of each GPU while it waits (sync model), once per GPU in order; default 0.2 x lowest limit.")
@click.option("--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True)
def cli(
    profiles: tuple[Path, ...],
    more_profiles: tuple[Path, ...],
    global_batch: int,
    granularity: int,
    method: str,
    eta_knob: float,
    time_price: TimePrice,
    idle_power: tuple[float, ...],
    output_format: str,
) -> None:
    """Split a global batch over heterogeneous GPUs and pick their power limits (Zeus²)."""
    from tqdm import tqdm


    paths = [*profiles, *more_profiles]
    if len(paths) < 2:
        fail("give at least two profiles (--profiles A.json B.json), strongest GPU first")
    try:
        fits = []
        for path in paths:
            try:
                workload, gpu = profile_name(path)
            except ProfileFormatError:  # any other name: the GPU is the file's stem, the workload unknown
                workload, gpu = "-", path.stem
            fits.append(fit_gpu(read_profile(path, workload=workload, gpu=gpu)))
        if len({f.workload for f in fits}) > 1:
            fail(f"profiles of different workloads: {', '.join(f'{p.name} ({f.workload})' for p, f in zip(paths, fits, strict=True))}")
        if len({f.gpu for f in fits}) < len(fits):
            fail(f"the same GPU twice: {[f.gpu for f in fits]}")
        if idle_power and len(idle_power) != len(fits):
            fail(f"{len(idle_power)} --idle-power values for {len(fits)} GPUs: give one per GPU, in order")
        grid = Grid(global_batch, granularity)
        methods, models, as_written = _selection(method)
        big = compositions.count(grid.units, len(fits)) > _PROGRESS_MIN_SPLITS
        bars: list[tqdm] = []

        def progress(label: str) -> Progress | None:
            if not big:
                return None
            bar = tqdm(total=compositions.count(grid.units, len(fits)), desc=label, unit="split", file=sys.stderr, leave=False)
            bars.append(bar)
            return bar.update

        try:
            rows = allocation_rows(
                fits, grid, eta=eta_knob, time_price=time_price, idle_power_w=idle_power or None,
                methods=methods, models=models, as_written=as_written, progress=progress,
            )
        finally:
            for bar in bars:
                bar.close()
    except (ProfileFormatError, FitError, ValueError) as exc:
        fail(str(exc))
    if output_format == "json":
        for row in rows:
            sys.stdout.write(json.dumps(row) + "\n")
    else:
        gpus = " + ".join(fits[i].gpu for i in range(len(fits)))
        click.echo(f"{fits[0].workload}: {gpus}, global batch {global_batch} in steps of {granularity}, eta {eta_knob}")
        click.echo(_table(rows))
