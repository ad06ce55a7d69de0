"""whatif at a large site's scale (issue 56): the parse against a plain CSV read, peak memory by lines, the kept parse.

Writes one generated sacct export (``python -m pipelines example-export --allocations BASE``) and from it larger ones:
the same cluster ``k`` times over, each copy with other job IDs (``<k><id>``) and users (``<user>-c<k>``), so that no
copy's jobs or groups are another's. Then, each in a child process (wall time, peak RSS by ``wait4``):

1. the floor: polars' ``read_csv(separator="|")`` and DuckDB's ``read_csv`` (a count of its rows) of the largest file:
   lines per second, against whatif's parse alone (``tracefiles.read_trace``, the columns whatif reads);
2. for each size: ``whatif FILE --json`` (the defaults: whatif's line bound is 100,000,000; the parse kept in a fresh cache folder), then with
   ``--eta-knob 0.3`` (the parse reused): wall time and peak RSS of each, and the second's ratio to the first;
3. on the smallest kept in more than one partition (else the smallest): ``whatif --scheduler local`` with each
   ``--partition-data`` (path, task: the draws' partitions as the cluster's tasks) against ``--scheduler none`` (the parse
   reused by all): the ratio, and whether the reports are the same but the runner line.

The machine may be shared: the numbers are one run's, printed as they come. The copies are written by a child process:
a child's peak RSS (``wait4``'s ``ru_maxrss``) starts from its parent's high-water mark (Linux keeps it across fork and
exec), so had this process grown to write them, every child measured after would report at least that peak.

Usage: ``.venv/bin/python bench/bench_kept_parse.py [--base N] [--copies K,K,...] [--dir FOLDER]`` (default 250,000
allocations, copies 1,5,15: about 0.8M, 4M and 12M lines).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]

from bench_memory import measured  # noqa: E402 - after the bench folder is put on sys.path (line above)

from pipelines.clusters.kept import PARTITION_ALLOCATIONS  # noqa: E402 - after the repository is put on sys.path
from pipelines.home.paths import REPO_ROOT  # noqa: E402 - after the repository is put on sys.path

MIRROR = Path(os.environ.get("TRACES_MIRROR", REPO_ROOT.parent / "shared" / "traces"))

PARSE = """
import sys, time
from pathlib import Path
from pipelines.clusters import kept, tracefiles, whatif
t = time.perf_counter()
r = tracefiles.read_trace(Path(sys.argv[1]), "x", "sacct", "UTC", None, source_file=sys.argv[1], digest=False,
                          columns=whatif.REPORT_COLUMNS, limits=kept.WHATIF_LIMITS)
print(r.counts.lines, time.perf_counter() - t)
"""
POLARS = """
import sys, time, polars as pl
t = time.perf_counter()
n = pl.read_csv(sys.argv[1], separator="|", infer_schema=False, quote_char=None, truncate_ragged_lines=True).height
print(n + 1, time.perf_counter() - t)
"""
DUCKDB = """
import sys, time, duckdb
t = time.perf_counter()
n = duckdb.sql(f"select count(*) from read_csv('{sys.argv[1]}', delim='|', header=true, all_varchar=true, "
               "null_padding=true, quote='')").fetchall()[0][0]
print(n + 1, time.perf_counter() - t)
"""


def copies(base: Path, k: int, out: Path) -> int:
    """``out``: ``base`` ``k`` times over, copy ``i`` with job IDs ``<i><id>`` and users ``<user>-c<i>``; its lines."""
    text = pl.read_csv(base, separator="\x1f", has_header=False, quote_char=None, infer_schema=False, new_columns=["t"])["t"]
    header, rows = text[0], text.slice(1)
    user = header.split("|").index("User")
    lines = 1
    with open(out, "w") as fh:
        fh.write(header + "\n")
        for i in range(k):
            fields = rows.str.split("|")
            changed = fields.list.eval(pl.when(pl.int_range(pl.len()) == 0).then(pl.lit(str(i + 1)) + pl.element())
                                       .when(pl.int_range(pl.len()) == user).then(pl.element() + pl.lit(f"-c{i + 1}"))
                                       .otherwise(pl.element())).list.join("|")
            fh.write("\n".join(changed.to_list()) + "\n")
            lines += rows.len()
    return lines


def child(code: str, path: Path) -> tuple[float, float, int, float]:
    """(wall s, peak GB, lines, the timed part's s) of ``code`` run on ``path`` in a child process."""
    wall, peak, out = measured([sys.executable, "-c", code, str(path)], REPO_ROOT, dict(os.environ))
    lines, timed = out.splitlines()[-1].split()  # the last line: a library may print before it (a progress bar)
    return wall, peak, int(lines), float(timed)


def whatif(path: Path, cache: Path, *extra: str) -> tuple[float, float, dict[str, object]]:
    env = {**os.environ, "GPU_ENERGY_CACHE": str(cache), "TRACES_MIRROR": str(MIRROR)}
    wall, peak, out = measured([sys.executable, "-m", "pipelines", "whatif", str(path), "--json", "--no-progress", *extra], REPO_ROOT,
                               env)
    return wall, peak, json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=250_000)
    parser.add_argument("--copies", default="1,5,15")
    parser.add_argument("--dir", type=Path, default=None, help="Folder for the exports (kept; default: a temp folder, deleted).")
    parser.add_argument("--copy", nargs=3, metavar=("BASE", "K", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.copy:
        copies(Path(args.copy[0]), int(args.copy[1]), Path(args.copy[2]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        base = folder / f"base-{args.base}.sacct"
        if not base.is_file():
            subprocess.run([sys.executable, "-m", "pipelines", "example-export", str(base), "--allocations", str(args.base)],
                           check=True, cwd=REPO_ROOT, capture_output=True)
        sizes = [int(k) for k in args.copies.split(",")]
        files = {}
        for k in sizes:
            path = folder / f"x{k}.sacct"
            if not path.is_file():  # in a child: a peak here would be every later child's (below)
                subprocess.run([sys.executable, __file__, "--copy", str(base), str(k), str(path)], check=True)
            files[k] = path
        largest = files[max(sizes)]
        allocations: dict[int, int] = {}
        for name, code in (("polars read_csv", POLARS), ("duckdb read_csv", DUCKDB), ("whatif's parse", PARSE)):
            wall, peak, lines, timed = child(code, largest)
            print(f"{name:16} {largest.name}: {lines:,} lines in {timed:.1f} s ({lines / timed / 1e6:.2f}M lines/s), child {wall:.1f} s, "
                  f"peak {peak:.2f} GB", flush=True)
        for k in sizes:
            cache = folder / f"cache-{k}"
            shutil.rmtree(cache, ignore_errors=True)  # an earlier run's (--dir): the first run reads the file
            first_s, first_gb, report = whatif(files[k], cache)
            second_s, second_gb, again = whatif(files[k], cache, "--eta-knob", "0.3")
            print(f"whatif x{k} ({report['lines']:,} lines, {report['allocations']:,} allocations): first {first_s:.1f} s "
                  f"{first_gb:.2f} GB; second (--eta-knob 0.3, parse reused) {second_s:.1f} s {second_gb:.2f} GB: "
                  f"{second_s / first_s:.2f}x; runner {report['runner']!r}", flush=True)
            assert again["lines"] == report["lines"] and again["eta"] == 0.3
            allocations[k] = report["allocations"]
        # the smallest export kept in more than one partition: there the draws' partitions are the cluster's tasks
        split = [k for k in sizes if allocations[k] > PARTITION_ALLOCATIONS]
        k = min(split) if split else min(sizes)
        cache = folder / f"cache-{k}"
        none_s, none_gb, one = whatif(files[k], cache, "--scheduler", "none")
        for mode in ("path", "task"):
            local_s, local_gb, two = whatif(files[k], cache, "--scheduler", "local", "--partition-data", mode)
            same = {n: v for n, v in one.items() if n != "runner"} == {n: v for n, v in two.items() if n != "runner"}
            print(f"whatif x{k} parse reused: --scheduler none {none_s:.1f} s {none_gb:.2f} GB, local --partition-data {mode} "
                  f"{local_s:.1f} s {local_gb:.2f} GB: none/local {none_s / local_s:.2f}x; reports identical but the runner: {same}; "
                  f"runner {two['runner']!r}", flush=True)


if __name__ == "__main__":
    main()
