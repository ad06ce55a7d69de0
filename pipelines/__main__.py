import os

# polars' allocator (jemalloc, on Linux) gives freed pages back at once instead of after its default decay (10 s): the
# table whatif frees before its plan is then no longer resident at the plan's peak (12M lines, the parse reused: 1.79 GB
# peak by default, 1.17 GB so, 5% slower). jemalloc reads it when polars loads, so it is set before any import of polars;
# a value already in the environment is kept.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")

from pipelines.cli import main

main(prog_name="python -m pipelines")
