"""Benchmark: the Zeus simulator of pipelines.zeus against the published one (zeus==0.16.0), same inputs, one run.

(a) single-job runs: the 6 workloads x 4 GPUs at the artifact's job specs, eta 0.5, beta 2, seed 1,
    2 x |B| x |P| recurrences each;
(b) group replay: every ElasticFlow-derived group (69,351 jobs) on a V100, eta 0.5, beta 2.

Each side runs in its own child process, so the peak resident memory it reports (ru_maxrss) is
its own; timings cover the simulations from in-memory traces (the published side constructs its
Simulators, our side builds its tables), not reading files or importing modules. The parent
checks that both sides produced identical runs (batch size, power limit, reached, and float64
energy and time bit for bit) and prints the speed ratios.

    python bench/bench_simulator.py [--quick] [--gpu v100]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path[:0] = [str(REPO), str(BENCH)]

from tests.support.zeus_peer import ARTIFACT_JOBS, GPUS, Peer, elasticflow_groups  # noqa: E402 - importable only once the repository is on sys.path (line above)

RUN_SCHEMA = {"case": pl.String, "bs": pl.Int64, "pl": pl.Int64, "energy": pl.Float64, "time": pl.Float64, "reached": pl.Boolean}


def trace_sources(mirror: Path | None) -> tuple[Path, Path]:
    """The Zeus CSV folder and the ElasticFlow traces (raw/ if fetched, else the mirror)."""
    raw = REPO / "raw"
    if (raw / "zeus" / "summary_train.csv").is_file() and (raw / "itp" / "elasticflow-traces").is_dir():
        return raw / "zeus", raw / "itp" / "elasticflow-traces"
    from pipelines.home.paths import default_mirror

    mirror = mirror or default_mirror()
    if mirror is None:
        sys.exit("no traces: run `python -m pipelines fetch` or set TRACES_MIRROR")
    return mirror / "zeus", mirror / "itp" / "elasticflow-traces.tar.gz"


def groups_input(elasticflow: Path, quick: bool) -> pl.DataFrame:
    groups = elasticflow_groups(elasticflow)
    if quick:
        groups = groups.filter(pl.col("group").str.starts_with("cluster01-") | pl.col("group").str.starts_with("cluster10-"))
    return groups


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(side: str, part: str, quick: bool, gpu: str, zeus_dir: Path, elasticflow: Path, out: Path) -> None:
    """Run one side of one part; write its runs (Parquet) and a JSON line of measurements to stdout."""
    recurrences = 20 if quick else None
    rows: list[tuple] = []
    if side == "published":
        peer = Peer(zeus_dir)
        groups = groups_input(elasticflow, quick) if part == "groups" else None
        base = rss_mib()
        start = time.perf_counter()
        if part == "single":
            for g in GPUS:
                for dataset in ARTIFACT_JOBS:
                    runs = peer.single(g, peer.artifact_job(g, dataset), 0.5, 2.0, 1, recurrences)
                    rows += [(f"{g}/{dataset}", *r) for r in runs]
        else:
            rows = [(group, *r) for group, runs in peer.groups(groups, gpu, 0.5, 2.0) for r in runs]
        seconds = time.perf_counter() - start
    else:
        from pipelines.ingest.simulator_inputs import read_trace_dir
        from pipelines.zeus.groups import group_job_spec, replay_groups
        from pipelines.zeus.single import simulate_single
        from pipelines.zeus.traces import build_table

        traces = read_trace_dir(zeus_dir)
        groups = groups_input(elasticflow, quick) if part == "groups" else None
        base = rss_mib()
        start = time.perf_counter()
        if part == "single":
            for g in GPUS:
                for dataset in ARTIFACT_JOBS:
                    table = build_table(traces, g, group_job_spec(traces, g, dataset))
                    rows += [(f"{g}/{dataset}", r.bs, r.pl, r.energy, r.time, r.reached) for r in simulate_single(table, 0.5, 2.0, 1, recurrences)]
        else:
            result = replay_groups(groups, traces, gpu, 0.5, 2.0)
            rows = list(result.select("group", "bs", "pl", "energy", "time", "reached").iter_rows())
        seconds = time.perf_counter() - start
    pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row").write_parquet(out)
    jobs = groups.height if groups is not None else None
    print(json.dumps({"seconds": seconds, "rss_base_mib": base, "rss_peak_mib": rss_mib(), "runs": len(rows), "jobs": jobs}))


def run_side(side: str, part: str, args: argparse.Namespace, zeus_dir: Path, elasticflow: Path, out: Path) -> dict:
    cmd = [sys.executable, __file__, "--child", side, part, "--gpu", args.gpu, "--zeus-dir", str(zeus_dir), "--elasticflow", str(elasticflow),
           "--out", str(out)]
    if args.quick:
        cmd.append("--quick")
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=REPO)
    if done.returncode != 0:
        sys.exit(f"{side} {part} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(published: pl.DataFrame, ours: pl.DataFrame) -> tuple[bool, float]:
    """(identical, largest relative difference of energy or time)."""
    if published.height != ours.height:
        return False, math.inf
    same_keys = published.select("case", "bs", "pl", "reached").equals(ours.select("case", "bs", "pl", "reached"))
    rel = 0.0
    for column in ("energy", "time"):
        a, b = published[column].to_numpy(), ours[column].to_numpy()
        diff = abs(a - b) / abs(a).clip(min=1e-300)
        rel = max(rel, float(diff.max()) if diff.size else 0.0)
    return same_keys and published.equals(ours), rel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="20 recurrences per single job; groups of clusters 01 and 10 only")
    parser.add_argument("--gpu", default="v100", help="GPU of the group replay")
    parser.add_argument("--child", nargs=2, metavar=("SIDE", "PART"), help=argparse.SUPPRESS)
    parser.add_argument("--zeus-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--elasticflow", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.quick, args.gpu, args.zeus_dir, args.elasticflow, args.out)
        return
    zeus_dir, elasticflow = trace_sources(None)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for part, label in (("single", "(a) 6 workloads x 4 GPUs, single job"), ("groups", f"(b) ElasticFlow group replay on {args.gpu}")):
            measured = {}
            for side in ("published", "ours"):
                measured[side] = run_side(side, part, args, zeus_dir, elasticflow, Path(tmp) / f"{side}-{part}.parquet")
            identical, rel = compare(pl.read_parquet(Path(tmp) / f"published-{part}.parquet"), pl.read_parquet(Path(tmp) / f"ours-{part}.parquet"))
            ok &= identical
            pub, our = measured["published"], measured["ours"]
            jobs = f", {pub['jobs']:,} jobs" if pub["jobs"] else ""
            print(f"{label}{' [quick]' if args.quick else ''}: {pub['runs']:,} job runs{jobs}")
            for side, m in (("published zeus 0.16.0", pub), ("pipelines.zeus", our)):
                print(
                    f"  {side:22s} {m['seconds']:9.3f} s  {1e6 * m['seconds'] / max(m['runs'], 1):9.1f} us/run"
                    f"  peak RSS {m['rss_peak_mib']:7.1f} MiB (+{m['rss_peak_mib'] - m['rss_base_mib']:.1f} during the run)"
                )
            print(f"  speed ratio {pub['seconds'] / our['seconds']:.1f}x; outputs identical: {identical} (max relative diff {rel:.1e})")
    if not ok:
        sys.exit("outputs differ")


if __name__ == "__main__":
    main()
