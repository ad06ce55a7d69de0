"""Peak memory and time of ``whatif`` and ``clusters add`` on a 3M-allocation sacct export, against the old code, in one run.

Issue 25 measured, on 3,000,000 allocations (a 1.66 GB export): ``whatif`` 3.77 GB peak RSS and
``clusters add`` 3.5 GB (the goal: any export a laptop can hold under 2 GB). This benchmark:

1. writes the export (``python -m pipelines example-export``, Europe/Berlin clock, steps, no energy
   fields: about 9.7M lines, 1.63 GB) into a temp folder, by a child process;
2. checks out the old code (``--baseline``, default: the commit before the streaming readers) as a
   detached git worktree beside it; the same interpreter runs it with that checkout as the working
   directory, so ``python -m pipelines`` imports the old package (the editable install's finder
   comes after the working directory on ``sys.path``);
3. runs, for the old code and for this checkout, each as a child process measured by ``wait4``
   (wall time, ``ru_maxrss``): ``whatif FILE --json --samples N`` and ``clusters add NAME FILE``
   into a fresh data home; checks the two ``whatif`` reports agree (counts and totals) and the
   counts equal the generator's truth; prints both and the ratio new / old;
4. deletes the export, the homes and the worktree.

Usage: ``.venv/bin/python bench/bench_memory.py [--allocations N] [--samples N] [--baseline REF]``; ``--export FILE
--truth JSON`` reuses an export written by ``python -m pipelines example-export`` (its stdout in JSON), which is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

from pipelines.home.paths import REPO_ROOT  # noqa: E402 - after the repository is put on sys.path (line above)
from tests.support.sacct_export import Truth  # noqa: E402 - importable only once the repository is on sys.path

MIRROR = Path(os.environ.get("TRACES_MIRROR", REPO_ROOT.parent / "shared" / "traces"))
TIMEZONE = "Europe/Berlin"
#: The last commit of main before the readers held one block at a time and `sql` streamed (issue 25).
BASELINE = "c00c3adf7ee64cded0b8f56d3f3e3ac135343270"
GOAL_GB = 2.0


def write(path: Path, allocations: int) -> Truth:
    argv = [sys.executable, "-m", "pipelines", "example-export", str(path), "--allocations", str(allocations), "--timezone", TIMEZONE]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    return Truth(**json.loads(done.stdout))


def measured(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, peak RSS GB, stdout) of one command in a child process (its own rusage, by wait4); exits on failure."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=err, cwd=cwd, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(argv[2:4])} in {cwd} failed: {err.read()[-2000:]}")
        return wall, usage.ru_maxrss * 1024 / 1e9, out.read()  # ru_maxrss in KiB on Linux; GB = 1e9 bytes


def run_both(code: Path, export: Path, home: Path, samples: int) -> dict[str, Any]:
    """whatif and clusters add of ``export`` by the package in ``code`` (clusters add into ``home``)."""
    env = {**os.environ, "GPU_ENERGY_HOME": str(home)}
    home.mkdir()
    whatif = [sys.executable, "-m", "pipelines", "whatif", str(export), "--timezone", TIMEZONE, "--json", "--no-progress",
              "--samples", str(samples), "--trace-dir", str(MIRROR / "zeus")]
    wall, rss, out = measured(whatif, code, env)
    add = [sys.executable, "-m", "pipelines", "clusters", "add", "bench", str(export), "--timezone", TIMEZONE]
    add_wall, add_rss, _ = measured(add, code, env)
    return {"whatif": (wall, rss), "add": (add_wall, add_rss), "report": json.loads(out)}


def agree(old: dict[str, Any], new: dict[str, Any], truth: Truth) -> None:
    keys = ("lines", "allocations", "steps_skipped", "cpu_only", "not_ended", "never_started", "quarantined", "simulated_jobs")
    got, was = {k: new[k] for k in keys}, {k: old[k] for k in keys}
    want = {"lines": truth.lines, "allocations": truth.allocations, "steps_skipped": truth.steps, "cpu_only": truth.cpu_only,
            "not_ended": truth.not_ended, "never_started": truth.never_started, "quarantined": 0}
    if got != was or {k: got[k] for k in want} != want or old["total"] != new["total"] or old["gpus"] != new["gpus"]:
        raise SystemExit(f"the reports differ: old {was}, new {got}, truth {want}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allocations", type=int, default=3_000_000)
    parser.add_argument("--samples", type=int, default=1, help="whatif's --samples (1: one replay; the reader dominates memory)")
    parser.add_argument("--baseline", default=BASELINE, help="the git revision of the old code")
    parser.add_argument("--export", type=Path, default=None, help="an export written by python -m pipelines example-export (kept)")
    parser.add_argument("--truth", type=Path, default=None, help="with --export: the generator's stdout (JSON)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp_name:
        tmp = Path(tmp_name)
        export = args.export or tmp / "cluster.sacct"
        t0 = time.perf_counter()
        truth = Truth(**json.loads(args.truth.read_text())) if args.export and args.truth else write(export, args.allocations)
        print(f"export: {truth.lines:,} lines ({export.stat().st_size / 1e9:.2f} GB), {truth.allocations:,} allocations, written in "
              f"{time.perf_counter() - t0:.0f} s; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        old_code = tmp / "baseline"
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", "-q", str(old_code), args.baseline], check=True)
        try:
            old = run_both(old_code, export, tmp / "home-old", args.samples)
            new = run_both(REPO_ROOT, export, tmp / "home-new", args.samples)
        finally:
            subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(old_code)], check=True)
        agree(old["report"], new["report"], truth)
        print(f"whatif --samples {args.samples} and clusters add, old ({args.baseline[:10]}) -> new (this checkout); "
              f"goal < {GOAL_GB:.0f} GB peak; load {os.getloadavg()[0]:.1f}")
        for what, label in (("whatif", f"whatif --samples {args.samples}"), ("add", "clusters add")):
            (t_old, m_old), (t_new, m_new) = old[what], new[what]
            print(f"  {label:<20} old {t_old:6.1f} s, {m_old:.2f} GB peak RSS; new {t_new:6.1f} s, {m_new:.2f} GB; "
                  f"ratio new/old: time {t_new / t_old:.2f}x, memory {m_new / m_old:.2f}x")
        same = old["report"] == new["report"]
        print("  the two whatif reports agree (counts, totals, every GPU row); the counts equal the generator's truth; "
              + ("the whole reports are equal" if same else
                 f"they differ in {sorted(k for k in new['report'] if old['report'].get(k) != new['report'][k])}"))


if __name__ == "__main__":
    main()
