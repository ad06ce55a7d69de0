"""whatif on large Slurm exports with error bars: end to end (time, peak RSS), and the parse alone against pandas.

Writes sacct exports (``python -m pipelines example-export``, Europe/Berlin clock, a mixed A100/V100/A40/H100
cluster with Slurm's energy accounting, steps included) into a temp folder, then:

1. on 100,000 allocations: ``python -m pipelines whatif FILE --json`` with the default 20 samples,
   in the child's own process (``--scheduler none``), beside the same command with
   ``--samples 1`` (the peer: one replay) in the same run; prints both and the ratio
   (goal: the 20 samples under 30 s);
2. on 1,000,000 allocations (about 3.2M lines, 570 MB): the same with ``--samples 20 --scheduler
   local`` (a LocalCluster, one worker per core) and prints wall time and peak RSS (aim: under
   90 s); its counts must equal the generator's truth; then in-process (``--scheduler none``, the
   peer) and the ratio (goal: local >= 1.4x in-process);
3. times the parse alone, ``pipelines.ingest.slurm.read_sacct``, against pandas
   ``read_csv(sep="|")`` on the same file, and prints the ratio. ``read_csv`` only splits the
   fields and infers types (no steps, states, GPUs, time zones, accounting or quarantine), so a
   second peer is timed too: pandas reading the file and doing the core of the same work, written
   plainly here (steps dropped, the three times parsed and localized to UTC, the GPU count and type
   from AllocTRES, the state's first word, Elapsed in seconds), and its result checked against ours.

The export is written by a child process, so that the parent stays small: a child's peak RSS as
the kernel reports it includes what it inherited at fork.

Usage: ``.venv/bin/python bench/bench_whatif.py [--allocations N] [--small N] [--samples N] [--keep FILE]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

from pipelines.home.paths import REPO_ROOT  # noqa: E402 - after the repository is put on sys.path (line above)
from tests.support.sacct_export import Truth  # noqa: E402 - importable only once the repository is on sys.path

MIRROR = Path(os.environ.get("TRACES_MIRROR", REPO_ROOT.parent / "shared" / "traces"))
TIMEZONE = "Europe/Berlin"
GOAL_SMALL_S, GOAL_LARGE_S = 30.0, 90.0


def write(path: Path, allocations: int) -> Any:
    """The export, written by a child process; its truth (``pipelines.clusters.example_export.Truth``)."""
    argv = [sys.executable, "-m", "pipelines", "example-export", str(path), "--allocations", str(allocations), "--timezone", TIMEZONE,
            "--energy", "measured"]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    return Truth(**json.loads(done.stdout))


def load() -> str:
    """The 1-minute load average and the cores (other work on the machine moves every timing)."""
    return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def end_to_end(path: Path, *extra: str) -> tuple[float, float, dict]:
    """(wall s, peak RSS GB, the JSON report) of one whatif run in a child process (its own rusage, by wait4)."""
    argv = [sys.executable, "-m", "pipelines", "whatif", str(path), "--timezone", TIMEZONE, "--json", "--no-progress",
            "--trace-dir", str(MIRROR / "zeus"), *extra]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=err, cwd=REPO_ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise SystemExit(f"whatif failed ({child.returncode}): {err.read()[-2000:]}")
        return wall, usage.ru_maxrss / 1024**2, json.loads(out.read())  # ru_maxrss in KiB on Linux


def parse_ours(path: Path) -> tuple[float, Any]:
    from pipelines.ingest.slurm import read_sacct

    t0 = time.perf_counter()
    result = read_sacct(path, trace="bench", source_file=path.name, timezone=TIMEZONE, digest=False)
    return time.perf_counter() - t0, result


def parse_pandas(path: Path) -> tuple[float, int]:
    import pandas as pd

    t0 = time.perf_counter()
    frame = pd.read_csv(path, sep="|")
    return time.perf_counter() - t0, len(frame) + 1


def parse_pandas_same_work(path: Path) -> tuple[float, Any]:
    """pandas doing the core of read_sacct's work (no quarantine, no accounting, no contract): the fair peer."""
    import numpy as np
    import pandas as pd

    t0 = time.perf_counter()
    frame = pd.read_csv(path, sep="|", dtype=str, keep_default_na=False)
    jobs = frame[~frame["JobID"].str.contains(".", regex=False)].copy()

    def utc(column: str) -> pd.Series:
        naive = pd.to_datetime(jobs[column].where(~jobs[column].isin(["Unknown", "None", ""])), format="%Y-%m-%dT%H:%M:%S",
                               errors="coerce")
        earlier = np.ones(len(naive), dtype=bool)  # an ambiguous time: its first instant (DST)
        return naive.dt.tz_localize(TIMEZONE, ambiguous=earlier, nonexistent="NaT").dt.tz_convert("UTC")

    for column, out in (("Submit", "submit_time"), ("Start", "start_time"), ("End", "end_time")):
        jobs[out] = utc(column)
    untyped = pd.to_numeric(jobs["AllocTRES"].str.extract(r"(?:^|,)gres/gpu=(\d+)", expand=False))
    typed = jobs["AllocTRES"].str.extract(r"(?:^|,)gres/gpu:([^=,]+)=(\d+)")
    jobs["num_gpus"] = untyped.fillna(pd.to_numeric(typed[1])).fillna(0).astype("int64")
    jobs["gpu_type"] = typed[0]
    jobs["state"] = jobs["State"].str.extract(r"^([A-Za-z_]+)", expand=False).str.upper()
    parts = jobs["Elapsed"].str.extract(r"^(?:(\d+)-)?(\d+):(\d+):(\d+)$").astype(float).fillna({0: 0})
    jobs["elapsed_s"] = parts[0] * 86400 + parts[1] * 3600 + parts[2] * 60 + parts[3]
    return time.perf_counter() - t0, jobs


def agrees(jobs: Any, table: pl.DataFrame) -> bool:
    """The pandas peer's allocations, GPU counts and UTC submit times equal ours (file order)."""
    import numpy as np

    theirs = jobs["submit_time"].dt.tz_localize(None).to_numpy().astype("datetime64[us]")
    mine = table["submit_time"].dt.replace_time_zone(None).to_numpy()
    same_times = bool((np.isnat(theirs) == np.isnat(mine)).all() and (theirs[~np.isnat(theirs)] == mine[~np.isnat(mine)]).all())
    return len(jobs) == table.height and int(jobs["num_gpus"].sum()) == int(table["num_gpus"].sum()) and same_times


def check_counts(report: dict, truth: Any) -> None:
    got = {k: report[k] for k in ("lines", "allocations", "steps_skipped", "cpu_only", "not_ended", "never_started", "quarantined")}
    want = {"lines": truth.lines, "allocations": truth.allocations, "steps_skipped": truth.steps, "cpu_only": truth.cpu_only,
            "not_ended": truth.not_ended, "never_started": truth.never_started, "quarantined": 0}
    if got != want:
        raise SystemExit(f"whatif counts {got} != the generator's truth {want}")


def saving(report: dict) -> str:
    t = report["total"]
    low, high = t["energy_saved_pct_interval"]
    return (f"{report['simulated_jobs']:,} jobs replayed; all GPUs: Default {t['default_mwh']:,.1f} MWh, Zeus saves {t['energy_saved_pct']:.1f} % "
            f"[{low:.1f}, {high:.1f}], peak {t['default_peak_kw']:,.0f} -> {t['zeus_peak_kw']:,.0f} kW")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allocations", type=int, default=1_000_000, help="the large export (0: skip it)")
    parser.add_argument("--small", type=int, default=100_000, help="the export timed with the default samples in-process (0: skip it)")
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--keep", type=Path, default=None, help="write the large export here instead of a temp folder (kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-whatif-") as tmp:
        if args.small:
            path = Path(tmp) / "small.sacct"
            truth = write(path, args.small)
            print(f"small export: {truth.lines:,} lines ({path.stat().st_size / 1e6:,.0f} MB), {truth.allocations:,} allocations; {load()}")
            one, _, report_one = end_to_end(path, "--samples", "1", "--scheduler", "none")
            many, rss, report = end_to_end(path, "--samples", str(args.samples), "--scheduler", "none")
            check_counts(report, truth)
            print(f"  whatif --samples 1 (the peer): {one:.1f} s; --samples {args.samples} in-process: {many:.1f} s wall, peak RSS "
                  f"{rss:.2f} GB (goal < {GOAL_SMALL_S:.0f} s); ratio {many / one:.1f}x; {load()}")
            print(f"  {saving(report)}")
        if not args.allocations:
            return
        path = args.keep or Path(tmp) / "cluster.sacct"
        t0 = time.perf_counter()
        truth = write(path, args.allocations)
        print(f"large export: {truth.lines:,} lines ({path.stat().st_size / 1e6:,.0f} MB), {truth.allocations:,} allocations, "
              f"{truth.steps:,} steps, written in {time.perf_counter() - t0:.1f} s; {load()}")
        wall, rss, report = end_to_end(path, "--samples", str(args.samples), "--scheduler", "local")
        check_counts(report, truth)
        print(f"  whatif --samples {args.samples} --scheduler local ({report['runner']}): {wall:.1f} s wall, peak RSS of the command "
              f"{rss:.2f} GB (aim < {GOAL_LARGE_S:.0f} s); {load()}")
        here, rss_here, report_here = end_to_end(path, "--samples", str(args.samples), "--scheduler", "none")
        same = "the same report" if {**report_here, "runner": ""} == {**report, "runner": ""} else "a DIFFERENT report"
        print(f"  the same in-process (--scheduler none, the peer): {here:.1f} s wall, peak RSS {rss_here:.2f} GB; local is "
              f"{here / wall:.2f}x in-process (goal >= 1.4x), {same}; {load()}")
        print(f"  {saving(report)}")

        ours, result = parse_ours(path)
        table = result.table
        del result
        gc.collect()
        theirs, rows = parse_pandas(path)
        if (table.height, rows) != (truth.allocations, truth.lines):
            raise SystemExit(f"counts differ: ours {table.height} allocations, pandas {rows} lines; truth {truth.allocations}, {truth.lines}")
        gc.collect()
        same_work, jobs = parse_pandas_same_work(path)
        print(f"parse alone: read_sacct {ours:.2f} s; pandas read_csv(sep='|') {theirs:.2f} s: ratio pandas / ours = {theirs / ours:.2f}x; "
              f"pandas read_csv + the same core work {same_work:.2f} s: ratio {same_work / ours:.2f}x (results agree: {agrees(jobs, table)})")


if __name__ == "__main__":
    main()
