"""Benchmark: the command line, whole process against whole process, in one run.

Three commands, each timed as the user runs it (interpreter start, imports, reading the traces,
the simulation, printing), best of ``--repeat`` runs:

1. ``python -m pipelines --help`` vs the artifact script's ``--help`` (``tests/support/zeus_scripts.py``,
   which imports pandas and zeus at the top as run_single.py does);
2. the README's ``simulate single`` example (run_single.py's job: librispeech, b0 192, V100,
   eta 0.5, beta 2, seed 1) vs the same job through zeus==0.16.0;
3. ``simulate groups`` on 40 ElasticFlow-derived groups (the first by name of 100 to 300 jobs: about
   5,900 jobs, 6,000 runs) vs the same groups through zeus==0.16.0.

Ours reads the Zeus tables of a data home materialized here first (as ``make materialize``
leaves them); the peer reads the CSVs, as the artifact does. Both sides' outputs are compared line
for line (they must be identical) and the ratio peer / ours is printed with the target time.

    python bench/bench_cli.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path[:0] = [str(REPO), str(BENCH)]

from bench_simulator import trace_sources  # noqa: E402 - importable only once bench/ is on sys.path (line above)

from tests.support.zeus_peer import elasticflow_groups  # noqa: E402 - likewise (the repository)

#: run_single.py's example, as the README gives it.
SINGLE = ["--dataset", "librispeech", "--model", "deepspeech2", "--optimizer", "adamw", "--target_metric", "40.0",
          "--max_epochs", "16", "--b_0", "192", "--gpu", "v100", "--eta_knob", "0.5", "--beta_knob", "2.0", "--seed", "1"]
GROUPS = 40
GROUP_JOBS = (100, 300)
#: The targets of the first-commands issue, on this 2-core machine (s).
TARGETS = {"--help": 0.3, "simulate single": 0.45, f"simulate groups ({GROUPS} groups)": 0.6}


def materialize_zeus_tables(zeus_dir: Path, home: Path) -> None:
    """The two Zeus tables of ``home`` as ``make materialize`` writes them (ingested, validated)."""
    from pipelines.home.atomic import write_parquet_atomic
    from pipelines.ingest.zeus import read_power_profiles, read_train

    write_parquet_atomic(read_train(zeus_dir / "summary_train.csv").table, home / "assets" / "zeus_train_runs.parquet")
    write_parquet_atomic(read_power_profiles(zeus_dir, home / "raw" / "measured").table, home / "assets" / "zeus_power_profiles.parquet")


def best_of(argv: list[str], repeat: int, env: dict[str, str]) -> tuple[float, str]:
    """The fastest wall time (s) of ``repeat`` runs of ``argv``, and its stdout (checked equal across runs)."""
    times, outputs = [], set()
    for _ in range(repeat):
        t0 = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        times.append(time.perf_counter() - t0)
        if done.returncode != 0:
            sys.exit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
        outputs.add(done.stdout)
    assert len(outputs) == 1, f"{' '.join(argv)}: output differs between runs"
    return min(times), outputs.pop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    zeus_dir, elasticflow = trace_sources(None)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        materialize_zeus_tables(zeus_dir, home)
        groups = elasticflow_groups(elasticflow)
        sizes = groups.group_by("group").len().sort("group")
        lo, hi = GROUP_JOBS
        chosen = sizes.filter((sizes["len"] >= lo) & (sizes["len"] <= hi))["group"].head(GROUPS)
        groups_csv = home / "groups.csv"
        groups.filter(groups["group"].is_in(chosen.implode())).write_csv(groups_csv)
        env = {**os.environ, "GPU_ENERGY_HOME": str(home)}
        ours = [sys.executable, "-m", "pipelines"]
        peer = [sys.executable, str(REPO / "tests" / "support" / "zeus_scripts.py")]
        cases = [
            ("--help", [*ours, "--help"], [*peer, "--help"], False),
            ("simulate single", [*ours, "simulate", "single", *SINGLE], [*peer, "single", "--trace-dir", str(zeus_dir), *SINGLE], True),
            (f"simulate groups ({GROUPS} groups)", [*ours, "simulate", "groups", "--groups", str(groups_csv)],
             [*peer, "groups", "--trace-dir", str(zeus_dir), "--groups", str(groups_csv)], True),
        ]
        print(f"{'command':<28} {'ours (s)':>9} {'target':>7} {'zeus (s)':>9} {'ratio':>7}  output")
        for name, mine, theirs, compare in cases:
            ours_s, ours_out = best_of(mine, args.repeat, env)
            peer_s, peer_out = best_of(theirs, args.repeat, env)
            same = "identical" if ours_out == peer_out else "DIFFERENT"
            note = f"{same}, {len(ours_out.splitlines())} runs" if compare else "-"
            print(f"{name:<28} {ours_s:>9.3f} {TARGETS[name]:>7.2f} {peer_s:>9.3f} {peer_s / ours_s:>6.1f}x  {note}")
            if compare and ours_out != peer_out:
                sys.exit(f"{name}: our output differs from the published simulator's")


if __name__ == "__main__":
    main()
