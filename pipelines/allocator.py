"""Polars' allocator for the commands that read a whole export: freed memory handed back to the system at once.

Polars allocates through its own jemalloc, which by default keeps freed pages for 10 s before it
returns them, so the peak resident memory of ``whatif`` and ``clusters add`` counted every block
and intermediate table the reader had already dropped: 0.95 GB on a 1M-allocation export against
0.74 GB with the pages returned at once (docs/benchmarks.md), for about 15 % more time. jemalloc
reads its options once, when polars loads; so this runs from the package's ``__init__``, before
any import of polars, and only for those commands of this package's CLI (a Dagster run keeps the
default: its steps hold small tables and would only pay the time). A setting of the user's wins.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: jemalloc's options (prefixed ``_RJEM_`` in polars' build): no decay of dirty or muzzy pages.
ENV = "_RJEM_MALLOC_CONF"
PROMPT_RETURN = "dirty_decay_ms:0,muzzy_decay_ms:0"
#: The commands (first CLI argument) that stream a whole scheduler export.
EXPORT_READERS = frozenset({"whatif", "clusters"})


def is_export_reader(argv: list[str]) -> bool:
    """Whether ``argv`` runs ``python -m pipelines`` or ``gpu-energy`` with one of ``EXPORT_READERS``.

    While ``python -m`` imports the package, before it runs ``__main__``, ``argv[0]`` is ``-m``.
    """
    if len(argv) < 2 or argv[1] not in EXPORT_READERS:
        return False
    return argv[0] == "-m" or Path(argv[0]).name == "gpu-energy" or Path(argv[0]).parts[-2:] == ("pipelines", "__main__.py")


def return_freed_memory_promptly(argv: list[str] | None = None) -> None:
    """Set ``PROMPT_RETURN`` for an export-reading command, unless the user set jemalloc's options."""
    if is_export_reader(sys.argv if argv is None else argv) and "polars" not in sys.modules:
        os.environ.setdefault(ENV, PROMPT_RETURN)
