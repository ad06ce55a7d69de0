"""Benchmark: the Zeus² optimum by vectorised enumeration (pipelines.hetero) against the published nested loops.

The peer (tests/support/hetero_peer.py) is written like the published zeus_heterogeneous_algorithm.py (AditiR-42/zeus):
``scipy.optimize.curve_fit`` quadratics per power limit, lists of (batch, limit index) pairs for
batch sizes range(0, G, step), a double loop over both lists keeping the pairs whose batches sum to
G, scalar costs with negative fitted values clipped to 0, results in a dict and
``sorted(results.items(), key=cost)[0]`` as the optimum. Parameters G and step replace its
hard-coded 4096 and 1, and progress prints are left out; nothing else differs.

For each workload (A10 as GPU 1, T4 as GPU 2) it runs the peer's brute force and heuristic, then
ours, and checks:

1. same optimum: our full pipeline (numpy least-squares fits) picks the same split and limits as the
   peer (curve_fit fits); the costs differ only by the fits' last digits (relative difference printed);
2. bit for bit: our search fed the peer's curve_fit coefficients returns the peer's cost exactly (==);

3. the published baseline as its code computes it (see ``peer_calculate_baseline``): same limits
   and score, bit for bit;

and prints the times and the speed ratio (peer loops / our search; the published code's timer also
covers only the loops). Timings: peer once, ours the median of repeated runs.

    python bench/bench_hetero.py [--quick] [--workloads cifar imagenet] [--profiles-dir raw/zeus2]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path[:0] = [str(REPO)]

from tests.support.hetero_peer import (  # noqa: E402 - importable only once the repository is on sys.path (line above)
    peer_calculate_baseline,
    peer_find_optimal_allocation,
    peer_fitcurve,
    peer_load_json_data,
    peer_top,
)

# ---------------------------------------------------------------------------------------------


def _ours(fits, grid, method):
    from pipelines.hetero.model import CostModel
    from pipelines.hetero.search import brute_force, heuristic

    return (brute_force if method == "brute" else heuristic)(fits, grid, CostModel("published"))


def _median_seconds(fn, repeats: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles-dir", type=Path, default=None, help="folder with {cifar,imagenet}_{a10,t4}.json")
    parser.add_argument("--workloads", nargs="+", default=["cifar", "imagenet"])
    parser.add_argument("--quick", action="store_true", help="global batch 1024 instead of 4096 (~16x fewer peer iterations)")
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()

    from pipelines.hetero.fit import GpuFit, fit_gpu
    from pipelines.hetero.search import Grid, baseline_as_written
    from pipelines.home.paths import default_mirror
    from pipelines.ingest.zeus2 import read_profile

    folder = args.profiles_dir or (REPO / "raw" / "zeus2")
    if not (folder / "cifar_a10.json").is_file():
        mirror = default_mirror()
        if mirror is None:
            sys.exit("no profiles: run `python -m pipelines fetch` or pass --profiles-dir")
        folder = mirror / "zeus2"
    grid = Grid(1024 if args.quick else 4096, 1)
    print(f"profiles: {folder}; global batch {grid.global_batch}, step {grid.granularity}")
    ok, ratios = True, []
    for workload in args.workloads:
        paths = [folder / f"{workload}_a10.json", folder / f"{workload}_t4.json"]
        peer_fits = [peer_fitcurve(peer_load_json_data(p)) for p in paths]
        (pl1, t1, a1), (pl2, t2, a2) = peer_fits
        ours = [fit_gpu(read_profile(p)) for p in paths]
        ours_peer_coef = [
            GpuFit(f.gpu, f.workload, f.power_limits, np.array(t), np.array(a)) for f, (_, t, a) in zip(ours, peer_fits, strict=True)
        ]
        for method in ("brute", "heuristic"):
            results, peer_s = peer_find_optimal_allocation(pl1, pl2, method == "brute", t1, t2, a1, a2, grid.global_batch, grid.granularity)
            ((b1, w1), (b2, w2)), peer_cost = peer_top(results)
            mine = _ours(ours, grid, method)
            exact = _ours(ours_peer_coef, grid, method)
            our_s = _median_seconds(functools.partial(_ours, ours, grid, method), args.repeats)
            same = mine.batch_split == (b1, b2) and mine.power_limits == (int(w1), int(w2))
            bitwise = exact.batch_split == (b1, b2) and exact.power_limits == (int(w1), int(w2)) and exact.cost == peer_cost
            ok &= same and bitwise
            ratio = peer_s / our_s
            ratios.append(ratio)
            print(
                f"{workload:9s} {method:9s} peer: {b1}/{b2} at {int(w1)}/{int(w2)} W, cost {float(peer_cost)!r} ({len(results):,} "
                f"candidates, {peer_s:.2f} s) | ours: {mine.batch_split[0]}/{mine.batch_split[1]} at "
                f"{mine.power_limits[0]}/{mine.power_limits[1]} W, cost {mine.cost!r} (rel. diff "
                f"{abs(mine.cost - peer_cost) / abs(peer_cost):.1e}), {our_s * 1e3:.3f} ms | same optimum: {same}, "
                f"peer's coefficients bit for bit: {bitwise} | speed-up {ratio:,.0f}x"
            )
        ((_, w1), (_, w2)), peer_score = peer_top(peer_calculate_baseline(pl1, pl2, t1, t2, a1, a2))
        found, score = baseline_as_written(ours_peer_coef)
        same = found.power_limits == (int(w1), int(w2)) and score == peer_score
        ok &= same
        print(f"{workload:9s} baseline as written: peer 2048/2048 at {int(w1)}/{int(w2)} W, score {float(peer_score)!r}; ours identical: {same}")
    print(f"min speed-up {min(ratios):,.0f}x (goal >= 1000x); all optima identical: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
