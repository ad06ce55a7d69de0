"""``python -m pipelines`` (``gpu-energy``): the command line. Subcommands load lazily, so ``--help`` is instant.

Every command ``NAME`` is the module ``pipelines/cli/NAME.py`` (``-`` written ``_``: ``power-limit`` is
``power_limit.py``), whose click command (or group) is named ``cli``. Register it in ``SUBCOMMANDS`` as ``NAME: "short help"``, the short help being its
docstring's first line (a test keeps the two equal): ``--help`` lists the commands from this
table without importing any of them. ``options.py`` is no command: it holds the options the commands share.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, NoReturn

import click

from pipelines.home.interrupt import SIGINT_STATUS, ctrl_c_ends_command, remove_temporary
from pipelines.home.paths import resolve_home

SUBCOMMANDS: dict[str, str] = {
    "init": "Make FOLDER (default: here) a data home; existing files are kept (but the instance's storage, with --postgres-url).",
    "fetch": "Fetch every upstream file into raw/, verified by sha256.",
    "sql": "Run QUERY (or --file, or --example) over in-memory DuckDB views of every materialized table.",
    "materialize": "Materialize every selected asset and partition (what `make figures` runs).",
    "simulate": "Trace-driven Zeus simulation (identical results to the published simulator).",
    "whatif": "What would Zeus save on your cluster? Replays a Slurm sacct export or a job-log CSV; writes --html and its parse, kept in cache/.",
    "example-export": "Write a generated Slurm sacct export to FILE, to try whatif on; print what it holds as JSON.",
    "cache": "Kept data under the data home's cache/ (whatif's parsed exports): list it, clear it.",
    "clusters": "Your own cluster traces (raw/clusters/): add a Slurm export or job-log CSV, list them, remove one.",
    "hetero": "Split a global batch over heterogeneous GPUs and pick their power limits (Zeus²).",
    "measure": "Measure time and energy of training on this machine (NVML on GPUs, RAPL on CPUs).",
    "recover": "Mark runs whose process is gone as failed and remove stale temp files under assets/, figures/ and raw/ (make dev runs this first).",
    "dev": "Start the Dagster UI and daemons (dg dev); Ctrl-C or SIGTERM ends every process of them within 5 s (make dev runs this).",
    "sweep": "Replay every trace on every GPU for every (eta, beta, seed) under Zeus and the baselines.",
    "power-limit": "The power limit Zeus's GlobalPowerLimitOptimizer would choose from a profile (ZeusMonitor log, Zeus JSON, measured CSV).",
}


def load(name: str) -> click.Command:
    """The click command of subcommand ``name`` (imports ``pipelines.cli.<name>``, ``-`` as ``_``)."""
    command: click.Command = importlib.import_module(f"pipelines.cli.{name.replace('-', '_')}").cli
    return command


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when that subcommand runs."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            return load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from ``SUBCOMMANDS``' short help, importing nothing."""
        rows = sorted(self.lazy.items())
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        home, why = resolve_home()
        formatter.write_paragraph()
        formatter.write_text(f"Data home: {home} ({why}). Order: $GPU_ENERGY_HOME, the nearest marked home "
                             "at or above the working directory, the working directory.")


@click.group(cls=LazyGroup, lazy=SUBCOMMANDS)
@click.option("-v", "--verbose", is_flag=True, help="Print the data home in use (to stderr) before the command runs.")
def cli(verbose: bool) -> None:
    """GPU-energy research pipelines (Zeus, ITP/ElasticFlow, AcmeTrace, Zeus²)."""
    if verbose:
        home, why = resolve_home()
        click.echo(f"data home: {home} ({why})", err=True)


def invoked_as(subcommand: str) -> str:
    """``subcommand`` as the user types it here: ``gpu-energy materialize`` or ``python -m pipelines materialize``."""
    ctx = click.get_current_context(silent=True)
    return f"{ctx.find_root().command_path if ctx is not None else 'gpu-energy'} {subcommand}"


def main(args: list[str] | None = None, prog_name: str | None = None) -> None:
    """Run the CLI on ``args`` (default: ``sys.argv[1:]``); usage errors print one line and exit with code 2.

    ``prog_name`` is the name usage lines show: ``python -m pipelines`` from ``__main__``, else the
    script the user typed (``gpu-energy``).
    """
    try:
        with ctrl_c_ends_command():  # materialize, dev and sql install their own handlers within it
            code = cli.main(args=args, prog_name=prog_name, standalone_mode=False)
    except click.UsageError as exc:
        from pipelines.terminal import clip_input  # only for an error: `--help` imports no more than it needs

        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        click.echo(f"Error: {clip_input(exc.format_message())}{hint}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        from pipelines.terminal import clip_input

        click.echo(f"Error: {clip_input(exc.format_message())}", err=True)
        sys.exit(exc.exit_code)
    except click.Abort:
        _interrupted()
    except SystemError as exc:  # numba's dispatcher, when a Ctrl-C lands as a compiled kernel returns its result
        if not isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
            raise
        _interrupted()
    sys.exit(code if isinstance(code, int) else 0)


def _interrupted() -> NoReturn:
    """Exit 130 at once after a Ctrl-C, the temp files in flight removed first (``interrupt.remove_temporary``: a parse's
    spill or quarantine folder, which a finalizer would remove and ``os._exit`` runs none; a Ctrl-C in whatif's parse of
    4M bad lines had left both in $TMPDIR). The interpreter's own shutdown would join threads and close Dask clusters,
    seconds more, and can end by the signal (rc -2) instead of 130 (issue 39: Ctrl-C stops a command within 2 s, rc 130)."""
    remove_temporary()
    click.echo("Aborted.", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(SIGINT_STATUS)
