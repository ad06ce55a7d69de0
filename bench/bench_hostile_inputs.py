"""Peak memory of the issue-54 reproductions: each must end in one line, under ``GOAL_GB`` peak RSS, leaving nothing in the
temp folder. Each runs as a child process measured by ``wait4`` (``ru_maxrss``), the temp folder a fresh one of its own.

1. ``whatif /dev/zero`` (the stream read to ``--max-bytes``: 200 MB here) and ``yes ... | whatif /dev/stdin --max-bytes 1000000``;
2. ``whatif A.csv``: a 100 MB file with no newline (the header bounded by ``--max-line-bytes``);
3. ``whatif X --grid-intensity G``: a grid file whose header is 50 MB (past the bound on a header, not parsed);
4. ``sql --memory-limit 500MB "select list(range(100000000)) l"`` (the RSS cap).

Usage: ``.venv/bin/python bench/bench_hostile_inputs.py``; it prints one row per case and exits 1 if one fails its goal.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

from pipelines.home.paths import REPO_ROOT  # noqa: E402 - after the repository is put on sys.path (line above)

GOAL_GB = 1.5
P = [sys.executable, "-m", "pipelines"]


def measured(argv: list[str], work: Path, stdin: int | None = None) -> tuple[float, float, int, str, list[str]]:
    """(wall s, peak RSS GB, exit status, stderr, what is left in its temp folder) of one command in a child process."""
    temp = work / "tmp"
    temp.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(temp), "GPU_ENERGY_HOME": str(work / "home")}
    with tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        child = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO_ROOT, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        err.seek(0)
        return wall, usage.ru_maxrss / 2**20, os.waitstatus_to_exitcode(status), err.read(), sorted(p.name for p in temp.iterdir())


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as folder:
        work = Path(folder)
        (work / "home").mkdir()
        export = work / "x.sacct"
        subprocess.run([*P, "example-export", str(export), "--allocations", "20"], check=True, capture_output=True, cwd=REPO_ROOT)
        no_newline = work / "A.csv"
        with no_newline.open("wb") as fh:
            for _ in range(100):
                fh.write(b"A" * (1 << 20))
        grid = work / "grid.csv"
        grid.write_text(",".join(f"c{i}" for i in range(6_000_000)) + "\n1\n")
        yes = subprocess.Popen(["yes", "JobID|JobName|State"], stdout=subprocess.PIPE)
        cases = [
            ("whatif /dev/zero --max-bytes 200000000", [*P, "whatif", "/dev/zero", "--max-bytes", "200000000"], None),
            ("yes | whatif /dev/stdin --max-bytes 1000000", [*P, "whatif", "/dev/stdin", "--max-bytes", "1000000", "--max-rows", "1000"],
             yes.stdout.fileno() if yes.stdout else None),
            ("whatif A.csv (100 MB, no newline)", [*P, "whatif", str(no_newline)], None),
            ("whatif --grid-intensity (50 MB header)", [*P, "whatif", str(export), "--grid-intensity", str(grid)], None),
            ("sql --memory-limit 500MB list(range(1e8))", [*P, "sql", "--memory-limit", "500MB", "select list(range(100000000)) l"], None),
        ]
        failed = 0
        for name, argv, stdin in cases:
            wall, gb, code, err, left = measured(argv, work, stdin)
            lines = err.strip().splitlines()
            ok = code != 0 and len(lines) == 1 and len(lines[0]) < 1000 and gb < GOAL_GB and not left
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name:45s} {wall:6.1f} s {gb:5.2f} GB rc {code} left {left} | {lines[-1][:150] if lines else ''}")
        yes.kill()
        yes.wait()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
