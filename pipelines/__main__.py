from pipelines.allocator import no_decay

no_decay()  # before any import of polars (pipelines.allocator says why)

from pipelines.cli import main  # noqa: E402 - after the allocator's setting, which polars reads when it loads

main(prog_name="python -m pipelines")
