"""`make mutate`: mutation testing (mutmut, the dev extra) of the modules that carry the published claims, each with the
fast test files that exercise it; prints each target's score and its surviving mutants (docs/testing.md).

    .venv/bin/python -m tests.mutation.run [TARGET ...] [--work DIR]

Each target runs in its own scratch copy (``--work``, default ``$TMPDIR/gpu-energy-mutate/<target>``: the package, the
tests, pyproject.toml with a ``[tool.mutmut]`` section added), so the work tree is never rewritten and a stopped run
leaves nothing in it. In that copy ``mutmut show NAME`` prints a mutant's diff, ``mutmut tests-for-mutant NAME`` the
tests it ran.

Why ``process_isolation = "forkserver"`` with ``forkserver_warmup = "import"`` (``PRELOAD``): mutmut 3 forks one child
per mutant, by default from its main process, which has run the tests in-process to map tests to functions. Polars'
thread pool (rayon) does not survive a fork: the child's first parallel polars operation waits forever for worker
threads it does not have, and mutmut's limit then reports "timeout" whatever the mutant did (a surviving mutant always
reaches that operation). Importing ``pipelines.ingest.common`` (so any reader, ``pipelines.ingest.grid``,
``pipelines.clusters.samples``, ``pipelines.clusters.whatif``) starts the pool. So the workers are forked from a server
that has imported pytest and the slow third-party imports of ``PRELOAD`` but nothing of ours: each worker imports the
package anew, and its polars starts its own pool. That import is not in mutmut's per-test time estimate, hence
``timeout_constant``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Target:
    """One module under mutation: its file, which of its functions (mutmut's mutant-name globs), the test files run."""

    module: str  # the source file, relative to the repository
    names: tuple[str, ...]  # mutant-name globs: ``pipelines.x.y.x_f*`` a function, ``pipelines.x.y.xǁClassǁ*`` a class's methods
    tests: tuple[str, ...]  # the fast test files that exercise it (mutmut runs, per mutant, those of them that call its function)


#: The targets, in the order the report lists them. Mutant names: mutmut 3's, ``<module>.x_<function>__mutmut_<n>`` and
#: ``<module>.xǁ<Class>ǁ<method>__mutmut_<n>``.
TARGETS: dict[str, Target] = {
    # Anchoring and the steady state (each job's scale, the converged ratio, the steady-state and horizon totals).
    "anchoring": Target("pipelines/clusters/anchoring.py", ("pipelines.clusters.anchoring.*",),
                        ("tests/clusters/test_anchoring_by_hand.py",
                         "tests/clusters/test_whatif_anchored.py::test_converged_ratio_is_the_cost_optimal_batch_size_at_its_profiled_limit")),
    # The power-limit choice: the JIT profiler's epoch costs and its pick at a batch size, and MaxPower of the cost. The rest
    # of the module (reading the traces into lookup tables) is held bit for bit against zeus 0.16.0 by tests/zeus/.
    "traces": Target("pipelines/zeus/traces.py", ("pipelines.zeus.traces.xǁBatchSizeTableǁ*", "pipelines.zeus.traces.x_max_power__mutmut_*"),
                     ("tests/zeus/test_power_limit_choice.py", "tests/zeus/test_tables.py::test_tables_equal_the_published_lookups",
                      "tests/zeus/test_tables.py::test_unknown_gpu_and_missing_assets_are_clear",
                      "tests/zeus/test_tables.py::test_a_tie_of_epoch_costs_goes_to_the_higher_limit_as_in_zeus")),
    # Zeus's cost, both forms (against zeus.utils.metric.zeus_cost and the artifact's JIT epoch cost).
    "cost": Target("pipelines/zeus/cost.py", ("pipelines.zeus.cost.*",), ("tests/zeus/test_cost.py",)),
    # The grid and price series whatif weighs each run's energy with (time-weighted means over a step series).
    "grid-series": Target("pipelines/ingest/grid.py", ("pipelines.ingest.grid.xǁRateǁ*",), ("tests/clusters/test_rate_series.py",)),
    # The public traces' CO2e per region.
    "carbon": Target("pipelines/clusters/carbon.py", ("pipelines.clusters.carbon.*",), ("tests/clusters/test_co2e_by_region.py",)),
    # The report's totals: each draw's energy, time, steady state, CO2e and cost summed over its runs and rows.
    "totals": Target("pipelines/clusters/samples.py",
                     tuple(f"pipelines.clusters.samples.x_{f}__mutmut_*" for f in ("_sums", "_runs", "_totals", "_steady", "_priced", "_summed")),
                     ("tests/clusters/test_report_totals.py",)),
}

#: What mutmut's fork server imports before it forks a worker per mutant: the test peers and plugins, slow to import (zeus
#: pulls in scikit-learn: 5 to 8 s) and safe to fork (none starts a thread). Nothing of the package: its readers start
#: polars' thread pool as they import (see the module docstring), and the mutated package is the worker's to import.
PRELOAD: tuple[str, ...] = ("numpy", "polars", "pandas", "scipy.stats", "sklearn.metrics", "zeus.utils.metric", "zeus._legacy.simulate",
                            "zeus._legacy.policy", "hypothesis", "xdist", "pytest_timeout", "dagster")

#: mutmut 3's exit codes of a mutant's test run, as its ``mutmut results`` names them; "killed" counts toward the score.
KILLED = "killed"


def _copy(work: Path, target: Target) -> None:
    """A scratch copy: the package and the tests, pyproject.toml with mutmut's section, the upstream mirror beside it."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for name in ("pipelines", "tests"):
        shutil.copytree(REPO / name, work / name, ignore=ignore, symlinks=True)
    for name in ("uv.lock", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, work / name)
    mirror = Path(os.environ.get("TRACES_MIRROR", REPO.parent / "shared" / "traces")).resolve()
    # The tests find the mirror beside the package's root (pipelines.home.paths.REPO_ROOT), which is mutmut's mutants/.
    (work / "shared").mkdir()
    (work / "shared" / "traces").symlink_to(mirror)
    config = "\n".join([
        "", "[tool.mutmut]",
        'source_paths = ["pipelines"]',
        f"only_mutate = [{_toml(target.module)}]",
        f"pytest_add_cli_args_test_selection = [{', '.join(_toml(t) for t in target.tests)}]",
        # -m "not slow": the fast tests only; no cache directory written into the copy.
        'pytest_add_cli_args = ["-m", "not slow", "-p", "no:cacheprovider"]',
        'process_isolation = "forkserver"',
        'forkserver_warmup = "import"',
        f"preload_modules_file = {_toml(str(work.resolve() / 'mutmut-preload.txt'))}",
        # Seconds: each worker's own imports (a few s on a loaded machine) are outside mutmut's estimate of its tests' time.
        "timeout_constant = 20.0",
        "timeout_multiplier = 5.0",
        "use_git_change_detection = false",
        "",
    ])
    (work / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text() + config)
    (work / "mutmut-preload.txt").write_text("\n".join(PRELOAD) + "\n")


def _toml(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _mutmut(work: Path, *args: str, capture: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRACES_MIRROR": str((work / "shared" / "traces").resolve()), "PYTHONDONTWRITEBYTECODE": "1"}
    command = ["nice", "-n", "19", str(Path(sys.executable).parent / "mutmut"), *args]
    return subprocess.run(command, cwd=work, env=env, text=True, capture_output=capture, check=False)


def results(work: Path, target: Target) -> dict[str, str]:
    """Each mutant of ``target``'s functions and its status (killed, survived, timeout, no tests, ...)."""
    listed = _mutmut(work, "results", "--all", "true", capture=True)
    if listed.returncode:
        raise SystemExit(f"mutmut results failed in {work}:\n{listed.stdout}{listed.stderr}")
    patterns = [re.compile(re.escape(n).replace(r"\*", ".*") + "$") for n in target.names]
    out = {}
    for line in listed.stdout.splitlines():
        name, _, status = line.strip().rpartition(": ")
        if name and any(p.match(name) for p in patterns):
            out[name] = status
    return out


def run(name: str, target: Target, work: Path) -> dict[str, str]:
    _copy(work, target)
    started = time.monotonic()
    done = _mutmut(work, "run", "--max-children", "1", *target.names)
    found = results(work, target)
    print(f"== {name}: {target.module}, {len(found)} mutants in {time.monotonic() - started:.0f} s (mutmut exit {done.returncode})", flush=True)
    if not found:
        raise SystemExit(f"{name}: no mutant matches {target.names}: was a function renamed or moved?")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", choices=[[], *TARGETS], default=[], metavar="TARGET", help=f"of {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "gpu-energy-mutate")
    parser.add_argument("--min-score", type=float, default=0.0, metavar="PCT",
                        help="exit 1 if a target kills fewer than PCT %% of its mutants (CI's subset: 85)")
    args = parser.parse_args(argv)
    chosen = args.targets or list(TARGETS)
    started = time.monotonic()
    table = []
    for name in chosen:
        found = run(name, TARGETS[name], args.work / name)
        counts = Counter(found.values())
        table.append((name, counts, len(found)))
        for mutant, status in sorted(found.items()):
            if status != KILLED:
                print(f"   {status}: {mutant}")
    print(f"\nmutation score ({time.monotonic() - started:.0f} s in all; mutmut show NAME in {args.work}/<target> gives a diff)")
    print(f"{'target':<12} {'killed':>7} {'survived':>9} {'timeout':>8} {'other':>6} {'total':>6}  score")
    for name, counts, total in table:
        other = total - counts[KILLED] - counts["survived"] - counts["timeout"]
        print(f"{name:<12} {counts[KILLED]:>7} {counts['survived']:>9} {counts['timeout']:>8} {other:>6} {total:>6}  {100 * counts[KILLED] / total:.1f} %")
    low = [name for name, counts, total in table if 100 * counts[KILLED] / total < args.min_score]
    if low:
        print(f"below {args.min_score:g} % killed: {', '.join(low)} (a test, or a survivor explained in docs/testing.md)")
    return 1 if low else 0


if __name__ == "__main__":
    raise SystemExit(main())
