"""``python -m pipelines``: the command line. Subcommands load lazily, so ``--help`` is instant.

Each subcommand lives next to the code it drives; register it in ``SUBCOMMANDS`` as
``name: "module:attribute"`` where the attribute is a ``click.Command`` (or group).
"""

from __future__ import annotations

import importlib

import click

SUBCOMMANDS: dict[str, str] = {
    "fetch": "pipelines.sources_cli:fetch_cmd",
    "sql": "pipelines.sql_cli:sql",
    "materialize": "pipelines.materialize:materialize",
    "recover": "pipelines.run_recovery:recover_cmd",
    "simulate": "pipelines.zeus.cli:simulate",
    "hetero": "pipelines.hetero.cli:hetero",
    "measure": "pipelines.measure.cli:measure",
    "sweep": "pipelines.clusters.sweep_cli:sweep_cmd",
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
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as exc:  # a subcommand whose module is not built yet
                if exc.name and module_name.startswith(exc.name):
                    return None
                raise
            return getattr(module, attr)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, lazy=SUBCOMMANDS)
def cli() -> None:
    """GPU-energy research pipelines (Zeus, ITP/ElasticFlow, AcmeTrace, Zeus²)."""


def main() -> None:
    cli(prog_name="python -m pipelines")
