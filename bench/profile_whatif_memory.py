"""Where whatif's memory goes, stage by stage (issue 56): the parse's frames, the plan's rows, the draws' arrays.

Runs whatif's stages in this process on one export (in-process, no cache, the defaults) and prints, after each stage, the
size of what it holds (polars ``estimated_size``, numpy ``nbytes``) and the process's resident memory: now (``VmRSS``)
and the stage's peak (``VmHWM``, reset before each stage by writing 5 to ``/proc/self/clear_refs``; Linux only).

1. parse: ``tracefiles.read_trace`` with the columns whatif reads (``whatif.REPORT_COLUMNS``): the table and quarantine;
2. plan: ``whatif.replayable`` (the read table freed after it): each row's jobs (``Plan.rows``), the measured jobs;
3. shared: ``samples.shared_by_draws``: each row's jobs in replay order (``replayed.RowJobs``) and the workload tables;
4. draw 0: ``samples.run_draw`` (its peak is the replay's arrays and the power bins), and the sizes of one replay's runs.

With ``--kept FOLDER`` (an entry of the data home's ``cache/whatif/``: a second run's case) stage 1 loads the kept parse
(``kept.load``) instead of reading the export.

Usage: ``.venv/bin/python bench/profile_whatif_memory.py EXPORT [--max-rows N] [--partitions N] [--kept FOLDER]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

from pipelines.clusters import kept, samples, tracefiles, whatif  # noqa: E402 - after the repository is put on sys.path
from pipelines.clusters.profiles import with_measured  # noqa: E402
from pipelines.home import cache  # noqa: E402
from pipelines.home.paths import ProjectPaths, find_home  # noqa: E402
from pipelines.ingest.simulator_inputs import resolve_traces  # noqa: E402
from pipelines.ingest.text_reader import ReadLimits  # noqa: E402
from pipelines.vocabulary import PAPER_ORDER  # noqa: E402

GB = 1e9


def _status(name: str) -> float:
    """``VmRSS`` or ``VmHWM`` of this process (GB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1]) * 1024 / GB
    return float("nan")


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def _report(stage: str, started: float, held: dict[str, float]) -> None:
    parts = ", ".join(f"{k} {v / GB:.3f} GB" for k, v in held.items())
    print(f"{stage:<8} {time.perf_counter() - started:6.1f} s  rss {_status('VmRSS'):.3f} GB  stage peak {_status('VmHWM'):.3f} GB"
          f"  | {parts}", flush=True)


def _nbytes(value: Any) -> float:
    """The bytes of a dataclass of numpy arrays and polars frames (one level deep)."""
    total = 0.0
    for f in fields(value):
        item = getattr(value, f.name)
        if isinstance(item, np.ndarray):
            total += item.nbytes
        elif isinstance(item, pl.DataFrame):
            total += item.estimated_size()
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", type=Path)
    parser.add_argument("--max-rows", type=int, default=100_000_000)
    parser.add_argument("--partitions", type=int, default=None, help="Replay in this many partitions (default: the plan's).")
    parser.add_argument("--kept", type=Path, default=None, help="Load this kept parse (a cache/whatif/ entry) instead of parsing.")
    args = parser.parse_args()
    print(f"start    rss {_status('VmRSS'):.3f} GB", flush=True)

    _reset_peak()
    t = time.perf_counter()
    entry = None if args.kept is None else cache.load(args.kept)
    if args.kept is not None and entry is None:
        parser.error(f"{args.kept}: not a kept parse")
    if entry is not None:
        result = kept.load(entry, str(args.export), "")
    else:
        result = tracefiles.read_trace(args.export, whatif.trace_name_for(args.export), tracefiles.format_of(args.export, None), "UTC",
                                       None, source_file=str(args.export), digest=False, columns=whatif.REPORT_COLUMNS,
                                       limits=ReadLimits(rows=args.max_rows))
    _report("load" if entry is not None else "parse", t,
            {"table": result.table.estimated_size(),  # the quarantine as held: none once it is on disk (a scan)
             "quarantine": result.quarantine.estimated_size() if result.held is None and entry is None else 0})
    print(f"         {result.counts.lines:,} lines, {result.counts.allocations:,} allocations", flush=True)

    _reset_peak()
    t = time.perf_counter()
    home = find_home()
    traces, _ = resolve_traces(None, home, list(PAPER_ORDER))
    profiles = with_measured(traces, (), ProjectPaths(home).raw / "measured")
    options = whatif.Options()
    handed = [result]
    del result  # handed over as the CLI does: replayable frees the table before the plan's copies
    ready = whatif.replayable(handed.pop(), profiles, options)
    plan = ready.plan
    _report("plan", t, {"rows' jobs": sum(r.jobs.estimated_size() for r in plan.rows), "measured": plan.measured.estimated_size()})

    _reset_peak()
    t = time.perf_counter()
    plan = ready.plan if ready.plan.engine else samples.replace(ready.plan, engine=samples.engine_for(ready.plan, options.samples))
    plan = plan if args.partitions is None else samples.replace(plan, partitions=args.partitions)
    print(f"         {plan.partitions} partition(s)", flush=True)
    shared = samples.shared_by_draws(plan, traces)
    _report("shared", t, {"row jobs": sum(_nbytes(r) for r in shared.rows if r is not None)})

    _reset_peak()
    t = time.perf_counter()
    one = [samples._replay_row(i, r, plan, traces, shared, 0, options.seed) for i, r in enumerate(plan.rows) if r.jobs.height]
    runs = sum(_nbytes(p) for o in one for p in o.runs.values())
    del one
    samples.run_draw(0, plan=plan, traces=traces, base_seed=options.seed, shared=shared)
    _report("draw 0", t, {"runs": runs})


if __name__ == "__main__":
    main()
