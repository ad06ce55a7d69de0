"""``python -m pipelines``: the command line. Subcommands load lazily, so ``--help`` is instant.

Each subcommand lives next to the code it drives; register it in ``SUBCOMMANDS`` as
``name: "module:attribute"`` where the attribute is a ``click.Command`` (or group).
"""

from __future__ import annotations

import importlib
import sys

import click

SUBCOMMANDS: dict[str, str] = {
    "fetch": "pipelines.sources_cli:fetch_cmd",
    "sql": "pipelines.sql_cli:sql",
    "materialize": "pipelines.materialize:materialize",
    "simulate": "pipelines.zeus.cli:simulate",
    "hetero": "pipelines.hetero.cli:hetero",
    "measure": "pipelines.measure.cli:measure",
}


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when that subcommand runs."""

    def __init__(self, *args: object, lazy: dict[str, str], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module_name, attr = self.lazy[cmd_name].split(":")
            module = importlib.import_module(module_name)
            command: click.Command = getattr(module, attr)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, lazy=SUBCOMMANDS)
def cli() -> None:
    """GPU-energy research pipelines (Zeus, ITP/ElasticFlow, AcmeTrace, Zeus²)."""


def main(prog_name: str | None = None) -> None:
    """Run the CLI; usage errors print one line (``Error: ...``) and exit with code 2.

    ``prog_name`` is the name usage lines show: ``python -m pipelines`` from ``__main__``, else the
    script the user typed (``gpu-energy``).
    """
    try:
        code = cli.main(prog_name=prog_name, standalone_mode=False)
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
