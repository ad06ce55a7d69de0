"""``python -m pipelines`` (``gpu-energy``): the command line. Subcommands load lazily, so ``--help`` is instant.

Each subcommand lives next to the code it drives; register it in ``SUBCOMMANDS`` as
``name: ("module:attribute", "short help")``, where the attribute is a ``click.Command`` (or group)
and the short help is its docstring's first line (a test keeps the two equal). ``--help`` lists
the commands from this table without importing any of them.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from pipelines.paths import resolve_home

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "init": ("pipelines.home_cli:init", "Make FOLDER (default: here) a data home; existing files are kept."),
    "fetch": ("pipelines.sources_cli:fetch_cmd", "Fetch every upstream file into raw/, verified by sha256."),
    "sql": ("pipelines.sql_cli:sql", "Run QUERY (or --file, or --example) over in-memory DuckDB views of every materialized table."),
    "materialize": ("pipelines.materialize:materialize", "Materialize every selected asset and partition (what `make figures` runs)."),
    "simulate": ("pipelines.zeus.cli:simulate", "Trace-driven Zeus simulation (identical results to the published simulator)."),
    "whatif": ("pipelines.clusters.whatif_cli:whatif",
               "What would Zeus save on your cluster? Replays a Slurm sacct export or a job-log CSV; writes nothing."),
    "clusters": ("pipelines.clusters.clusters_cli:clusters",
                 "Your own cluster traces (raw/clusters/): add a Slurm export or job-log CSV, list them."),
    "hetero": ("pipelines.hetero.cli:hetero", "Split a global batch over heterogeneous GPUs and pick their power limits (Zeus²)."),
    "measure": ("pipelines.measure.cli:measure", "Measure time and energy of training on this machine (NVML on GPUs, RAPL on CPUs)."),
    "recover": ("pipelines.run_recovery:recover_cmd", "Mark runs whose process is gone as failed and remove stale temp files (make dev runs this first)."),
    "sweep": ("pipelines.clusters.sweep_cli:sweep_cmd", "Replay every trace on every GPU for every (eta, beta, seed) under Zeus and the baselines."),
}


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when that subcommand runs."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module_name, attr = self.lazy[cmd_name][0].split(":")
            module = importlib.import_module(module_name)
            command: click.Command = getattr(module, attr)
            return command
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from ``SUBCOMMANDS``' short help, importing nothing."""
        rows = [(name, help_text) for name, (_, help_text) in sorted(self.lazy.items())]
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
        code = cli.main(args=args, prog_name=prog_name, standalone_mode=False)
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        click.echo(f"Error: {exc.format_message()}{hint}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
