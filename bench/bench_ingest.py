"""Ingest benchmark: our readers vs pandas.read_csv (the peer) on the same files, in one run.

(a) every available source end to end (ours: fetch from the mirror into a temp root, unpack, then read,
    type and validate, timed apart from the fetch; pandas: read_csv of the same unpacked files, nothing validated);
(b) a synthetic 1,000,000-row Seren-shaped CSV generated here.
Each measurement runs in a fresh subprocess so its peak RSS is its own. Prints seconds, rows/s,
peak RSS and the ratio. Goals: (a) < 5 s, (b) < 3 s with < 1 GB peak RSS, faster than pandas.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

STATES = np.array(["COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL"])
TYPES = np.array(["Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other"])
HEADER = "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time"


def write_synthetic_seren(path: Path, rows: int, seed: int = 0) -> None:
    """A Seren-shaped CSV (trace_seren.csv schema) with plausible values and +08:00 timestamps."""
    rng = np.random.default_rng(seed)
    base = np.datetime64("2023-03-01T00:00:00")
    submit = base + rng.integers(0, 180 * 86400, rows).astype("timedelta64[s]")
    queue = rng.integers(0, 3600, rows)
    duration = rng.integers(1, 86400, rows)
    start = submit + queue.astype("timedelta64[s]")
    end = start + duration.astype("timedelta64[s]")
    gpus = rng.choice([0, 1, 2, 4, 8, 16, 64], rows)

    def fmt(t: np.ndarray) -> np.ndarray:
        return np.char.add(np.char.replace(np.datetime_as_string(t, unit="s"), "T", " "), "+08:00")

    cols = [
        np.arange(rows).astype(str),
        np.char.add("u", rng.integers(0, 5000, rows).astype(str)),
        np.maximum(1, gpus // 8).astype(str),
        gpus.astype(str),
        (gpus * 16 + 8).astype(str),
        TYPES[rng.integers(0, len(TYPES), rows)],
        STATES[rng.integers(0, len(STATES), rows)],
        fmt(submit),
        fmt(start),
        fmt(end),
        duration.astype(str),
        queue.astype(str),
        np.char.add((duration * gpus).astype(str), ".0"),
    ]
    with open(path, "w") as out:
        out.write(HEADER + "\n")
        chunk = 200_000
        for lo in range(0, rows, chunk):
            lines = [",".join(fields) for fields in zip(*(c[lo : lo + chunk] for c in cols), strict=True)]
            out.write("\n".join(lines) + "\n")


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM; unlike ru_maxrss it does not carry over the forking parent's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def child(task: str, arg: str) -> None:
    """Run one measurement in this (fresh) process and print a JSON line; imports are timed apart."""
    t0 = time.perf_counter()
    if task.startswith("ours"):
        from pipelines.home.paths import ProjectPaths, default_mirror
        from pipelines.ingest import acme, itp, zeus  # polars + dataframely and the contracts
        from pipelines.sources.fetch import fetch
        from pipelines.sources.manifest import SOURCES
    else:
        import pandas as pd
    t_import = time.perf_counter() - t0
    extra: dict[str, float] = {}
    t0 = time.perf_counter()
    if task == "ours_all":
        paths = ProjectPaths(Path(arg))
        for source in SOURCES:
            fetch(source, paths, default_mirror(), download=False)
        extra["fetch_s"] = time.perf_counter() - t0  # copy + sha256 + safe unpack; pandas reads the files this leaves
        t0 = time.perf_counter()
        results = [
            zeus.read_train(paths.raw / "zeus/summary_train.csv"),
            zeus.read_power(paths.raw / "zeus"),
            itp.read_itp(paths.raw / "itp/raw-traces"),
            itp.read_elasticflow(paths.raw / "itp/elasticflow-traces"),
            acme.read_cluster_summary(paths.raw / "acme/cluster_summary.csv"),
        ]
        rows = sum(r.table.height + r.quarantine.height for r in results)
    elif task == "pandas_all":
        raw = Path(arg) / "raw"  # already fetched and unpacked by the "ours" run
        files = [raw / "zeus/summary_train.csv", *sorted((raw / "zeus").glob("summary_power_*.csv")),
                 *sorted((raw / "itp/raw-traces").glob("*.csv")), *sorted((raw / "itp/elasticflow-traces").glob("*.csv")),
                 raw / "acme/cluster_summary.csv"]
        rows = sum(len(pd.read_csv(f)) for f in files)
    elif task == "ours_acme":
        result = acme.read_jobs(Path(arg), None)
        rows = result.table.height + result.quarantine.height
    elif task == "pandas_acme":
        df = pd.read_csv(arg, parse_dates=["submit_time", "start_time", "end_time"])
        rows = len(df)
    else:
        raise SystemExit(f"unknown task {task}")
    seconds = time.perf_counter() - t0
    print(json.dumps({"task": task, "seconds": seconds, "import_s": t_import, "rows": rows, "peak_rss_mb": peak_rss_mb(), **extra}))


def measure(task: str, arg: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--child", task, arg], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(label: str, ours: dict[str, float], peer: dict[str, float]) -> None:
    for name, m in (("ours", ours), ("pandas", peer)):
        total = m["seconds"] + m["import_s"] + m.get("fetch_s", 0.0)
        fetch = f" + {m['fetch_s']:.3f} s fetch" if "fetch_s" in m else ""
        print(f"{label:<26} {name:<7} {m['seconds']:7.3f} s work + {m['import_s']:.3f} s imports{fetch} = {total:6.3f} s  "
              f"{m['rows'] / m['seconds']:>11,.0f} rows/s  peak RSS {m['peak_rss_mb']:7.1f} MB  ({m['rows']:,} rows)")
    work = peer["seconds"] / ours["seconds"]
    total = (peer["seconds"] + peer["import_s"]) / (ours["seconds"] + ours["import_s"] + ours.get("fetch_s", 0.0))
    print(f"{label:<26} speed ratio pandas/ours: {work:.2f}x (work: read, type, validate vs read_csv), {total:.2f}x (all in)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child", nargs=2, metavar=("TASK", "ARG"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        print("rows/s count work only; peak RSS is each measurement's own process (VmHWM)")
        ours = measure("ours_all", tmp)
        peer = measure("pandas_all", tmp)
        report("all available sources", ours, peer)
        csv = Path(tmp) / "trace_seren.csv"
        write_synthetic_seren(csv, args.rows)
        print(f"synthetic Seren CSV: {args.rows:,} rows, {csv.stat().st_size / 1e6:.0f} MB")
        ours = measure("ours_acme", str(csv))
        peer = measure("pandas_acme", str(csv))
        report(f"{args.rows:,}-row Acme CSV", ours, peer)


if __name__ == "__main__":
    main()
