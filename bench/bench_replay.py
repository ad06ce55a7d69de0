"""Benchmark: the compiled group replay (pipelines.zeus.fast) against the pure-Python reference, in one run, with ratios.

(a) One replay per trace and policy: the full ITP and ElasticFlow traces (cluster_workload_jobs) on
    the V100 at eta 0.5, beta 2, best of 3 in this process, each engine on the same input:
    * ``replay_groups`` end to end (validation, tables, replay, the runs table), tables identical;
    * the replay alone, on inputs validated and sorted once (the engines' own work);
    * a sweep's replay (``simulate.trace_totals``: totals of energy x GPUs and time), totals identical.
    Goal: >= 10x.
(b) The paper grid (``sweep.PAPER_GRID``, 2,240 replays) on a LocalCluster of this machine's cores
    (``sweep.sweep``, as ``python -m pipelines sweep --grid paper`` runs it). The reference (our own
    pure-Python engine, ``pipelines.zeus.reference``, not the published simulator: bench_simulator.py
    times that) runs every 16th replay on a second cluster of the same size, each replay timed on its
    worker; its time x 16 is its grid, and those rows must equal the fast grid's. The extrapolation's
    error is measured and printed: the sampling error of the reference's own per-replay times (one
    standard error of the x 16 total), and the same every-16th-x-16 rule applied to the fast engine's
    per-replay times over the whole grid against their measured sum. ``--full-reference`` times the
    reference on the whole grid instead. Goal: < 3 min (the reference took ~10 min on 2 workers).
(c) ``make figures`` on a fresh clone of HEAD (``git clone`` into .tmp_bench/, TRACES_MIRROR = the
    mirror): ``make setup`` (the venv) and the materialization, timed apart. Goal: < 2 min in all.
    The compiled kernel is not in the clone's cache yet: the clone compiles it once (~20 s).
(d) The command line's budget: ``simulate single`` (the README example) in a fresh process within
    2.5x of a bare ``import polars, numpy`` (best of 5 each); it never imports numba.

(e) Why compiled rather than vectorised with numpy: any lockstep replay takes, per event and per lane,
    at least one PCG64 step and one bounded draw (a run's training path), vectorised over the lanes.
    Timed here and multiplied by the fewest events each design needs: across groups (lanes: the
    trace's groups; events: its largest group's jobs) and across a grid's configurations sharing
    one job stream (lanes: the paper grid's 44 Zeus (eta, beta) of one trace, GPU and seed; events:
    every job of the trace). Both bounds exceed the compiled replay, before any event selection,
    heap or bandit work (and lanes diverge on every retry).

Reads the materialized inputs (``make materialize SELECT='+cluster_workload_jobs'`` writes them).
Run it on an idle machine; (b) and (c) use every core.

    python bench/bench_replay.py [--skip-grid] [--skip-figures] [--full-reference]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np
import polars as pl

from pipelines.clusters import mapping, simulate, sweep
from pipelines.contracts.base import polars_schema
from pipelines.contracts.zeus import ZeusGroupRuns
from pipelines.home.paths import REPO_ROOT, default_mirror, default_paths
from pipelines.ingest.simulator_inputs import conform_groups
from pipelines.scaleout.runners import fan_out
from pipelines.scaleout.schedulers import connect
from pipelines.vocabulary import DEFAULT_BETA, DEFAULT_ETA, POLICIES, REFERENCE_GPU
from pipelines.zeus import fast
from pipelines.zeus.groups import replay_groups, workload_tables
from pipelines.zeus.reference import group_seed, iter_groups, replay_group
from pipelines.zeus.traces import Traces

GPU, ETA, BETA = REFERENCE_GPU, DEFAULT_ETA, DEFAULT_BETA
SUBSET = 16


def best(fn: Callable[[], object], repeat: int = 3) -> tuple[float, object]:
    """(fastest wall time in s, the last result) of ``repeat`` calls."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def reference_engine(groups: pl.DataFrame, tables: dict, policy: str) -> pl.DataFrame:
    """What ``replay_groups`` does on the reference path after validation: the Python loop and the table."""
    schema = polars_schema(ZeusGroupRuns)
    columns: dict[str, list] = {c: [] for c in schema}
    for group, dataset, start, end, ratio in iter_groups(groups):
        runs = replay_group(tables[dataset], start, end, ratio, ETA, BETA, group_seed(group), policy)  # type: ignore[arg-type]
        columns["group"].extend([group] * len(runs))
        if runs:
            for name, values in zip(list(schema)[1:], zip(*runs, strict=True), strict=True):
                columns[name].extend(values)
    return pl.DataFrame(columns, schema=schema)


def fast_engine(groups: pl.DataFrame, tables: dict, policy: str) -> pl.DataFrame:
    """What ``replay_groups`` does on the fast path after validation."""
    arrays = fast.group_arrays(groups)
    return fast.runs_frame(arrays, fast.replay(arrays, tables, ETA, BETA, None, policy), polars_schema(ZeusGroupRuns))  # type: ignore[arg-type]


def per_replay(jobs: pl.DataFrame, traces: Traces) -> bool:
    """(a); returns whether every table and total was identical."""
    ok = True
    print(f"(a) one replay on {GPU}, eta {ETA}, beta {BETA}: reference / fast, best of 3 (ratio = reference / fast)")
    print(f"  {'trace':<12} {'policy':<12} {'runs':>7}  {'replay_groups':>27}  {'replay alone':>27}  {'sweep replay':>27}  identical")
    for trace in ("itp", "elasticflow"):
        rows = jobs.filter(pl.col("trace") == trace)
        groups = rows.select("group", start_time="start_time_s", end_time="end_time_s", dataset="dataset", runtime_ratio="runtime_ratio")
        conformed = conform_groups(groups)
        tables = workload_tables(conformed, traces, GPU)
        for policy in POLICIES:
            cells, same = [], True
            t_ref, ref = best(lambda: replay_groups(groups, traces, GPU, ETA, BETA, policy, engine="reference"))  # noqa: B023 - called at once
            t_fast, got = best(lambda: replay_groups(groups, traces, GPU, ETA, BETA, policy, engine="fast"))  # noqa: B023
            same &= ref.equals(got)  # type: ignore[union-attr]
            cells.append((t_ref, t_fast))
            t_ref, ref_alone = best(lambda: reference_engine(conformed, tables, policy))  # noqa: B023
            t_fast, fast_alone = best(lambda: fast_engine(conformed, tables, policy))  # noqa: B023
            same &= ref_alone.equals(fast_alone) and ref_alone.equals(ref)  # type: ignore[union-attr]
            cells.append((t_ref, t_fast))
            if policy != "oracle":  # a sweep replays Zeus and the two baselines
                t_ref, tot_ref = best(lambda: simulate.trace_totals(rows, traces, GPU, policy, eta=ETA, beta=BETA, seed=1, engine="reference"))  # noqa: B023
                t_fast, tot_fast = best(lambda: simulate.trace_totals(rows, traces, GPU, policy, eta=ETA, beta=BETA, seed=1, engine="fast"))  # noqa: B023
                same &= tot_ref == tot_fast
                cells.append((t_ref, t_fast))
            text = "  ".join(f"{r * 1e3:8.1f} / {f * 1e3:6.1f} ms {r / f:5.1f}x" for r, f in cells)
            print(f"  {trace:<12} {policy:<12} {ref.height:>7,}  {text:<88}  {same}")  # type: ignore[union-attr]
            ok &= same
    return ok


def paper_grid(jobs: pl.DataFrame, traces: Traces, full_reference: bool) -> bool:
    """(b); returns whether the reference's rows equal the fast grid's."""
    grid = sweep.PAPER_GRID
    chosen = sweep.check_inputs(jobs, traces, grid)
    tasks = sweep.replays(grid, chosen)
    workers = os.cpu_count() or 1
    print(f"(b) the paper grid: {len(tasks):,} replays of {', '.join(chosen)}, LocalCluster of {workers} workers")
    started = time.perf_counter()
    with connect("local") as runner:
        ready = time.perf_counter()
        table = sweep.sweep(jobs, traces, grid, runner)
        done = time.perf_counter()
    print(f"  fast:      {done - ready:7.1f} s for the grid ({(done - ready) / 60:.2f} min; cluster start {ready - started:.1f} s), "
          f"{len(tasks) / (done - ready):.1f} replays/s, {table.height:,} rows, {table['error'].is_not_null().sum()} errors")  # fmt: skip
    subset = tasks if full_reference else tasks[::SUBSET]
    by_trace = {t: jobs.filter(pl.col("trace") == t).select(sweep.JOB_COLUMNS) for t in chosen}
    shared = {"jobs": by_trace, "traces": Traces(traces.train, traces.power)}
    os.environ[fast.ENGINE_ENV] = "reference"  # the reference cluster's workers inherit it
    try:
        with connect("local") as runner:
            t0 = time.perf_counter()
            totals = fan_out(runner, timed_replay_totals, subset, shared)
            t_ref = time.perf_counter() - t0
    finally:
        del os.environ[fast.ENGINE_ENV]
    scale = len(tasks) / len(subset)
    same = all(_row_of(table, t) == (t["runs"], t["energy_j"], t["time_s"], t["error"]) for t in totals)
    what = "the whole grid" if full_reference else f"every {SUBSET}th replay ({len(subset)}), x {scale:.1f}"
    print(f"  reference (our pure-Python engine): {t_ref * scale:7.1f} s for the grid ({t_ref * scale / 60:.2f} min; {what}); "
          f"ratio {t_ref * scale / (done - ready):.1f}x; its rows equal the fast grid's: {same}")
    if not full_reference:
        reference_s = np.array([t["seconds"] for t in totals])
        with connect("local") as runner:  # the fast engine again, each replay timed, over the whole grid
            fast_s = np.array([t["seconds"] for t in fan_out(runner, timed_replay_totals, tasks, shared)])
        sampled, measured = fast_s[::SUBSET].sum() * scale, fast_s.sum()
        print(f"  extrapolation's error: the reference's per-replay times (sum {reference_s.sum():.1f} s of worker time) x {scale:.1f} "
              f"+- {100 * sampling_error(reference_s, len(tasks)):.1f} % (1 standard error); the same rule on the fast engine's "
              f"{len(tasks):,} per-replay times: {sampled:.2f} s against {measured:.2f} s measured ({100 * (sampled / measured - 1):+.1f} %)")
    return same


def timed_replay_totals(task: sweep.Replay, jobs: dict[str, pl.DataFrame], traces: Traces) -> dict[str, object]:
    """``sweep.replay_totals`` with its own time on the worker (``seconds``, wall)."""
    t0 = time.perf_counter()
    row = sweep.replay_totals(task, jobs, traces)
    return {**row, "seconds": time.perf_counter() - t0}


def sampling_error(sample_s: np.ndarray, population: int) -> float:
    """One standard error of ``sum(sample) x population / n``, relative to it: the per-replay times' spread over the sample
    of n, with the finite-population correction (a sample of every replay has none)."""
    n = sample_s.size
    if n < 2:
        return float("nan")
    total = sample_s.mean() * population
    return float(population * sample_s.std(ddof=1) / np.sqrt(n) * np.sqrt(1 - n / population) / total)


def _row_of(table: pl.DataFrame, totals: dict) -> tuple:
    """(runs, energy, time, error) of the grid row of one replay (a knob the policy does not read: any of its values)."""
    match = table.filter(
        (pl.col("trace") == totals["trace"]) & (pl.col("gpu") == totals["gpu"]) & (pl.col("policy") == totals["policy"])
        & (pl.col("seed") == totals["seed"])
        & (pl.col("eta") == totals["eta"] if totals["eta"] is not None else pl.lit(True))
        & (pl.col("beta") == totals["beta"] if totals["beta"] is not None else pl.lit(True))
    ).row(0, named=True)  # fmt: skip
    return match["runs"], match["energy_j"], match["time_s"], match["error"]


def fresh_clone_figures() -> None:
    """(c)."""
    mirror = default_mirror()
    if mirror is None:
        sys.exit("no trace mirror: set TRACES_MIRROR")
    work = REPO_ROOT / ".tmp_bench"
    shutil.rmtree(work, ignore_errors=True)
    clone = work / "clone"
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO_ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "GPU_ENERGY_HOME", "DAGSTER_HOME", "PYTHONPATH", "NUMBA_CACHE_DIR")}
    env["TRACES_MIRROR"] = str(mirror)
    print(f"(c) make figures on a fresh clone of {head} ({clone}):")
    t0 = time.perf_counter()
    setup = subprocess.run(["make", "setup"], cwd=clone, env=env, capture_output=True, text=True, check=False)
    t1 = time.perf_counter()
    figures = subprocess.run(["make", "figures"], cwd=clone, env=env, capture_output=True, text=True, check=False)
    t2 = time.perf_counter()
    for name, done in (("make setup", setup), ("make figures", figures)):
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-3000:])
            sys.exit(f"{name} failed in {clone}")
    rendered = len(list((clone / "figures").glob("*.png")))
    steps = [line for line in (figures.stdout + figures.stderr).splitlines() if line.startswith("[materialize] (")]
    print(f"  make setup (venv, pip install):  {t1 - t0:6.1f} s")
    print(f"  make figures (materialize):      {t2 - t1:6.1f} s, {rendered} figures")
    for line in steps:
        print(f"    {line}")
    print(f"  in all:                          {t2 - t0:6.1f} s ({(t2 - t0) / 60:.2f} min)")
    shutil.rmtree(work, ignore_errors=True)


def cli_budget() -> None:
    """(d)."""
    mirror = default_mirror()
    home = default_paths().root
    single = [sys.executable, "-m", "pipelines", "simulate", "single", "--dataset", "librispeech", "--model", "deepspeech2",
              "--optimizer", "adamw", "--target-metric", "40.0", "--max-epochs", "16", "--b0", "192", "--gpu", "v100",
              "--eta-knob", "0.5", "--beta-knob", "2.0", "--seed", "1"]  # fmt: skip
    if not (home / "assets" / "zeus_train_runs.parquet").is_file() and mirror is not None:
        single += ["--trace-dir", str(mirror / "zeus")]
    bare = [sys.executable, "-c", "import polars, numpy"]
    probe = [sys.executable, "-c", "import runpy, sys; sys.argv = ['pipelines', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('pipelines', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print('numba' in sys.modules, file=sys.stderr)", *single[3:]]  # fmt: skip

    def timed(argv: list[str]) -> float:
        t0 = time.perf_counter()
        subprocess.run(argv, cwd=home, capture_output=True, check=True)
        return time.perf_counter() - t0

    t_bare = min(timed(bare) for _ in range(5))
    t_single = min(timed(single) for _ in range(5))
    numba = subprocess.run(probe, cwd=home, capture_output=True, text=True, check=True).stderr.strip().splitlines()[-1]
    print(f"(d) simulate single {t_single:.3f} s vs import polars, numpy {t_bare:.3f} s: {t_single / t_bare:.2f}x (goal <= 2.5x); "
          f"numba imported: {numba}")


_M32, _S32 = np.uint64(0xFFFFFFFF), np.uint64(32)
_MULT_HI, _MULT_LO = np.uint64(0x2360ED051FC65DA4), np.uint64(0x4385DF649FCCF645)


def _lockstep_draw(hi: np.ndarray, lo: np.ndarray, inc_hi: np.ndarray, inc_lo: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, ...]:
    """One PCG64 step per lane (128-bit LCG in uint64 halves, XSL-RR output) and a Lemire draw in [0, n) (no rejection)."""
    a_lo, a_hi, b_lo, b_hi = lo & _M32, lo >> _S32, _MULT_LO & _M32, _MULT_LO >> _S32
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mulhi = p3 + (p1 >> _S32) + (p2 >> _S32) + (((p0 >> _S32) + (p1 & _M32) + (p2 & _M32)) >> _S32)
    new_lo = lo * _MULT_LO + inc_lo
    new_hi = mulhi + hi * _MULT_LO + lo * _MULT_HI + inc_hi + (new_lo < lo * _MULT_LO).astype(np.uint64)
    xored, rot = new_hi ^ new_lo, new_hi >> np.uint64(58)
    out = (xored >> rot) | (xored << ((np.uint64(64) - rot) & np.uint64(63)))
    return new_hi, new_lo, ((out & _M32) * n) >> _S32


def lockstep_bounds(jobs: pl.DataFrame, traces: Traces) -> None:
    """(e)."""
    def per_event(lanes: int) -> float:
        rng = np.random.default_rng(0)
        state = [rng.integers(0, 2**63, lanes, dtype=np.uint64) for _ in range(4)]
        n = rng.integers(1, 20, lanes).astype(np.uint64)
        t0 = time.perf_counter()
        for _ in range(2000):
            state[0], state[1], _ = _lockstep_draw(*state, n)
        return (time.perf_counter() - t0) / 2000

    zeus_configs = len(sweep.PAPER_GRID.etas) * len(sweep.PAPER_GRID.betas)
    print("(e) numpy lockstep, draws alone (a lower bound) vs the compiled replay, Zeus, one replay:")
    for trace in ("itp", "elasticflow"):
        rows = jobs.filter(pl.col("trace") == trace)
        sizes = rows.group_by("group").len()["len"]
        across_groups = int(sizes.max()) * per_event(sizes.len())
        across_configs = rows.height * per_event(zeus_configs) / zeus_configs
        groups = rows.select("group", start_time="start_time_s", end_time="end_time_s", dataset="dataset", runtime_ratio="runtime_ratio")
        conformed = conform_groups(groups)
        tables = workload_tables(conformed, traces, GPU)
        compiled, _ = best(lambda: fast_engine(conformed, tables, "zeus"))  # noqa: B023 - called at once
        print(f"  {trace:<12} across {sizes.len()} groups ({int(sizes.max()):,} events): >= {across_groups * 1e3:6.1f} ms;  "
              f"across {zeus_configs} configurations ({rows.height:,} events): >= {across_configs * 1e3:5.1f} ms per replay;  "
              f"compiled: {compiled * 1e3:5.1f} ms")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-grid", action="store_true", help="leave out (b)")
    parser.add_argument("--skip-figures", action="store_true", help="leave out (c)")
    parser.add_argument("--full-reference", action="store_true", help="(b): the reference replays the whole grid (~10 min on 2 cores)")
    args = parser.parse_args()
    jobs, traces = sweep.read_inputs(default_paths().assets)
    jobs = jobs.filter(pl.col("trace").is_in(mapping.TRACES))
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; jobs per trace: {dict(jobs.group_by('trace').len().sort('trace').iter_rows())}")
    t0 = time.perf_counter()
    fast.kernels()
    print(f"compiled kernel ready in {time.perf_counter() - t0:.2f} s (numba import and cache load; a first compile takes ~20 s)")
    ok = per_replay(jobs, traces)
    if not args.skip_grid:
        ok &= paper_grid(jobs, traces, args.full_reference)
    if not args.skip_figures:
        fresh_clone_figures()
    cli_budget()
    lockstep_bounds(jobs, traces)
    if not ok:
        sys.exit("the engines differ")


if __name__ == "__main__":
    main()
