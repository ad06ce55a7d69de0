"""whatif on a large Slurm export: end to end (time, peak RSS), and the parse alone against pandas in the same run.

Writes a sacct export of 1,000,000 allocations with their steps (about 3.3M lines, 550 MB;
bench/_sacct_export.py, Europe/Berlin clock) into a temp folder, then:

1. runs ``python -m pipelines whatif FILE --json`` in a child process (on the V100, the default;
   Zeus traces from the mirror) and prints its wall time and peak RSS (goal: < 30 s, < 2 GB);
   its counts must equal the generator's truth;
2. times the parse alone, ``pipelines.ingest.slurm.read_sacct``, against pandas
   ``read_csv(sep="|")`` (which only splits the fields and infers types: no steps, states, GPUs,
   time zones or quarantine) on the same file, and prints the ratio.

Usage: ``.venv/bin/python bench/bench_whatif.py [--allocations N] [--keep FILE]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import runpy
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pipelines.paths import REPO_ROOT

EXPORT = runpy.run_path(str(REPO_ROOT / "bench" / "_sacct_export.py"))
MIRROR = Path(os.environ.get("TRACES_MIRROR", REPO_ROOT.parent / "shared" / "traces"))
TIMEZONE = "Europe/Berlin"
GOAL_S, GOAL_RSS_GB = 30.0, 2.0


def end_to_end(path: Path) -> tuple[float, float, dict]:
    """(wall s, peak RSS GB, the JSON report) of one whatif run in a child process."""
    argv = [sys.executable, "-m", "pipelines", "whatif", str(path), "--timezone", TIMEZONE, "--json", "--no-progress",
            "--trace-dir", str(MIRROR / "zeus")]
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=REPO_ROOT)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"whatif failed ({done.returncode}): {done.stderr[-2000:]}")
    rss_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024**2  # KiB on Linux
    return wall, rss_gb, json.loads(done.stdout)


def parse_ours(path: Path) -> tuple[float, int]:
    from pipelines.ingest.slurm import read_sacct

    t0 = time.perf_counter()
    result = read_sacct(path, trace="bench", source_file=path.name, timezone=TIMEZONE, digest=False)
    return time.perf_counter() - t0, result.counts.lines


def parse_pandas(path: Path) -> tuple[float, int]:
    import pandas as pd

    t0 = time.perf_counter()
    frame = pd.read_csv(path, sep="|")
    return time.perf_counter() - t0, len(frame) + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allocations", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, default=None, help="write the export here instead of a temp folder (kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-whatif-") as tmp:
        path = args.keep or Path(tmp) / "cluster.sacct"
        t0 = time.perf_counter()
        truth = EXPORT["write_export"](path, args.allocations, timezone=TIMEZONE)
        print(f"export: {truth.lines:,} lines ({path.stat().st_size / 1e6:,.0f} MB), {truth.allocations:,} allocations, "
              f"{truth.steps:,} steps, written in {time.perf_counter() - t0:.1f} s")

        wall, rss, report = end_to_end(path)
        got = {k: report[k] for k in ("lines", "allocations", "steps_skipped", "cpu_only", "not_ended", "quarantined")}
        want = {"lines": truth.lines, "allocations": truth.allocations, "steps_skipped": truth.steps, "cpu_only": truth.cpu_only,
                "not_ended": truth.not_ended, "quarantined": 0}
        if got != want:
            raise SystemExit(f"whatif counts {got} != the generator's truth {want}")
        v100 = report["gpus"]["v100"]
        print(f"whatif end to end: {wall:.1f} s wall, peak RSS {rss:.2f} GB (goal < {GOAL_S:.0f} s, < {GOAL_RSS_GB:.0f} GB); "
              f"{report['simulated_jobs']:,} jobs replayed; V100 Default {v100['default_mwh']:,.1f} MWh vs Zeus {v100['zeus_mwh']:,.1f} MWh "
              f"({v100['energy_saved_pct']:.1f} % saved), peak {v100['default_peak_kw']:,.0f} -> {v100['zeus_peak_kw']:,.0f} kW")

        ours, lines = parse_ours(path)
        gc.collect()
        theirs, rows = parse_pandas(path)
        if (lines, rows) != (truth.lines, truth.lines):
            raise SystemExit(f"line counts differ: ours {lines}, pandas {rows}, truth {truth.lines}")
        print(f"parse alone: read_sacct {ours:.2f} s, pandas read_csv(sep='|') {theirs:.2f} s: ratio pandas / ours = {theirs / ours:.2f}x")


if __name__ == "__main__":
    main()
