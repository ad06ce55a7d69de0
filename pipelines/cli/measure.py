"""``python -m pipelines measure``: profile a Zeus workload on this machine's GPU (or CPU), list what can be measured.

Bad input (unknown workload, no CUDA for ``--device cuda``, a power limit out of range) prints
one line to stderr and exits with code 2. Warnings (limits that could not be set, windows shorter
than the meter's resolution, out-of-memory batch sizes) go to stderr; the CSV is written
atomically and only when at least one configuration was measured.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pipelines.cli.options import fail
from pipelines.home.outputs import OutputRefused, check_output, write_output
from pipelines.home.paths import default_paths
from pipelines.measure.harness import PROFILE_FILE, ProfileConfig, ProfileError, profile_csv
from pipelines.measure.harness import profile as run_profile
from pipelines.measure.monitor import probe_gpus
from pipelines.measure.nvml import NvmlNotSupported, NvmlUnavailable
from pipelines.measure.rapl import probe_rapl
from pipelines.measure.workloads import OPTIMIZERS, WORKLOADS
from pipelines.measure.zeus_json import ZEUS_PROFILE_FILE, zeus_profile_path, zeus_profiles
from pipelines.terminal import printable
from pipelines.vocabulary import PUBLISHED_GPUS

if TYPE_CHECKING:  # the monitor (and NVML) load only when a subcommand runs
    from pipelines.measure.monitor import MethodChoice


class _ListOptions(click.Command):
    """A command whose ``multiple`` options also take several values after one flag: ``--batch-sizes 32 64 128``.

    The arguments are rewritten to click's repeated form (``--batch-sizes 32 --batch-sizes 64 ...``)
    before parsing: values run up to the next token that starts with ``-`` and is not a number.
    """

    list_options: tuple[str, ...] = ("--batch-sizes", "--power-limits")

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rewritten: list[str] = []
        current: str | None = None  # the list option whose values are being read
        first = False
        for arg in args:
            if arg in self.list_options:
                current, first = arg, True
                rewritten.append(arg)
            elif current is not None and not (arg.startswith("-") and not _is_number(arg)):
                rewritten.extend([arg] if first else [current, arg])
                first = False
            else:
                current = None
                rewritten.append(arg)
        return super().parse_args(ctx, rewritten)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@click.group("measure")
def cli() -> None:
    """Measure time and energy of training on this machine (NVML on GPUs, RAPL on CPUs)."""


@cli.command()
def devices() -> None:
    """List the GPUs NVML sees and the method each would be measured with, and whether RAPL is readable."""
    gpus = probe_gpus()
    if gpus.available:
        for g in gpus.gpus:
            click.echo(f"gpu {g.position}: {g.name} {g.uuid} method={g.method}" + (f" ({g.note})" if g.note else ""))
    else:
        click.echo(f"gpu: unavailable: {gpus.reason}")
    rapl = probe_rapl()
    if rapl.available:
        click.echo("rapl: " + ", ".join(z.name for z in rapl.zones))
    else:
        click.echo(f"rapl: unavailable: {rapl.reason}")


@cli.command(cls=_ListOptions)
@click.option("--workload", type=click.Choice(sorted(WORKLOADS)), required=True, help="Zeus workload (dataset).")
@click.option("--batch-sizes", type=int, multiple=True, required=True, help="Batch sizes, e.g. --batch-sizes 32 64 128.")
@click.option("--power-limits", type=int, multiple=True, help="Power limits (W) to set in turn (needs root); default: the limit in place.")
@click.option("--warmup", type=int, default=3, show_default=True, help="Unmeasured iterations per configuration.")
@click.option("--iters", type=int, default=10, show_default=True, help="Measured iterations per configuration.")
@click.option("--device", default="cuda", show_default=True, help="torch device: cuda, cuda:N or cpu.")
@click.option("--optimizer", type=click.Choice(OPTIMIZERS), default=None, help="Default: the workload's optimizer in the traces.")
@click.option("--gpu-name", default=None, help="The gpu column (the simulator's --gpu); default: from the device name.")
@click.option("--nvml-gpu", default=None, help="NVML index or UUID of the GPU to measure; default: the torch device's.")
@click.option("--method", type=click.Choice(["auto", "counter", "polling"]), default="auto", show_default=True,
              help="auto: the energy counter where supported, else power polling.")
@click.option("--poll-interval", type=float, default=0.1, show_default=True, help="Power polling interval (s).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice).")
@click.option("--out", type=click.Path(allow_dash=True), required=True,
              help="CSV to write, e.g. raw/measured/NAME.csv (the one folder of raw/ it may write): a new file or an earlier "
                   "profile (-: stdout, and no Zeus profile JSON).")
@click.option("--parents", "make_parents", is_flag=True, help="Make --out's missing folders (else a missing folder is an error).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def profile(
    workload: str,
    batch_sizes: tuple[int, ...],
    power_limits: tuple[int, ...],
    warmup: int,
    iters: int,
    device: str,
    optimizer: str | None,
    gpu_name: str | None,
    nvml_gpu: str | None,
    method: MethodChoice,
    poll_interval: float,
    seed: int,
    threads: int | None,
    out: str,
    make_parents: bool,
    quiet: bool,
) -> None:
    """Profile time per epoch (s) and average power (W) per batch size (and power limit) into a CSV.

    Each batch size measured at two or more power limits also goes to Zeus's profile JSON beside
    the CSV (``NAME.bs<B>.zeus.json``), which GlobalPowerLimitOptimizer loads.
    """
    home = default_paths()
    try:
        target = check_output(out, "--out", home.root, kind=PROFILE_FILE, make_parents=make_parents, allowed=[home.measured])
        zeus_targets = {} if target.path is None or len(set(power_limits)) < 2 else {
            b: check_output(zeus_profile_path(target.path, b), "--out", home.root, kind=ZEUS_PROFILE_FILE, allowed=[home.measured])
            for b in batch_sizes}
    except OutputRefused as exc:
        fail(str(exc))
    if importlib.util.find_spec("torch") is None:
        fail("measure profile needs torch, which is not installed: run `make setup-measure` "
              "(pip install -e '.[measure]', torch==2.13.0)")

    if gpu_name in PUBLISHED_GPUS:
        fail(f"--gpu-name {gpu_name!r} is a GPU of the published trace: pick another name")
    try:
        config = ProfileConfig(
            WORKLOADS[workload],
            tuple(batch_sizes),
            tuple(power_limits),
            warmup=warmup,
            iters=iters,
            device=device,
            optimizer=optimizer,
            gpu=gpu_name,
            nvml_gpu=int(nvml_gpu) if nvml_gpu is not None and nvml_gpu.isdigit() else nvml_gpu,
            method=method,
            poll_interval_s=poll_interval,
            seed=seed,
            threads=threads,
        )
        result = run_profile(config, progress=not quiet)
    except (ProfileError, ValueError, NvmlNotSupported, NvmlUnavailable) as exc:
        fail(str(exc))
    for message in [*result.warnings, *result.skipped]:
        click.echo(f"Warning: {message}", err=True)
    if result.rows.height == 0:
        fail("no configuration could be measured; nothing written", code=1)
    try:
        write_output(target, profile_csv(result.rows))
        energy = result.rows["method"][0]
        click.echo(f"wrote {result.rows.height} rows to {printable(out)} (energy: {energy})", err=True)
        for batch_size, text in zeus_profiles(result.rows).items() if target.path is not None else ():
            zeus_target = zeus_targets.get(batch_size) or check_output(
                zeus_profile_path(Path(out), batch_size), "--out", home.root, kind=ZEUS_PROFILE_FILE, allowed=[home.measured])
            path = write_output(zeus_target, (text + "\n").encode())
            click.echo(f"wrote {printable(str(path))}: Zeus's profile JSON (GlobalPowerLimitOptimizer(profile_path=...); "
                       "python -m pipelines power-limit)", err=True)
    except OutputRefused as exc:
        fail(str(exc))
