"""Where `make figures`' figure steps spend their time: each figure drawn alone, from the data home's tables.

Run after `make figures` (it reads `assets/` and writes into a temporary folder, never `figures/`):

    .venv/bin/python bench/profile_figures.py [--repeat N]

Prints one row per figure file: the CPU seconds of its plan and draw (data, layout, PNG, PDF, Parquet: `render`
as the figure step runs it), slowest first, and each family's total, which is what one Dagster step of that family
costs on one core once the process has imported matplotlib. Process CPU time, not wall time: it holds on a loaded
machine. The first figure drawn pays for the theme's imports (seaborn, scipy); a warm-up figure is drawn first and
not counted.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import polars as pl

from pipelines.contracts.base import empty
from pipelines.contracts.registry import table_contract
from pipelines.figures import catalog
from pipelines.home.paths import default_paths, table_files


def frames_of(assets: Path, keys: tuple[str, ...]) -> dict[str, pl.DataFrame]:
    """The tables ``keys`` as the IO manager loads them: one file, or every partition stored, concatenated."""
    frames = {}
    for key in keys:
        files = table_files(assets, key)
        contract = table_contract(key)
        if files:
            frames[key] = pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
        elif contract is not None and key.startswith("own_"):  # your own traces: none added is no rows, as the IO manager reads it
            frames[key] = empty(contract)
        else:
            raise SystemExit(f"{key}: not materialized under {assets}; run `make figures` first")
    return frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="draw each figure asset this many times; the least CPU counts")
    parser.add_argument("--out", type=Path, help="keep the figures in this folder (to compare with figures/), not a temporary one")
    args = parser.parse_args()
    assets = default_paths().assets
    rows: list[tuple[str, str, float]] = []
    with tempfile.TemporaryDirectory() as out:
        folder = args.out or Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        first = catalog.FAMILIES[0]
        catalog.render(first.assets[0], frames_of(assets, first.assets[0].inputs), folder)  # warm-up: imports, fonts
        for family in catalog.FAMILIES:
            frames = frames_of(assets, family.inputs)
            for asset in family.assets:
                best = None
                for _ in range(args.repeat):
                    start = time.process_time()
                    report = catalog.render(asset, frames, folder)
                    spent = time.process_time() - start
                    best = spent if best is None else min(best, spent)
                assert best is not None
                rows.append((family.name, f"{asset.key} ({len(report.written)} drawn)", best))
    by_family: dict[str, float] = defaultdict(float)
    for family_name, _, spent in rows:
        by_family[family_name] += spent
    print(f"{'CPU s':>7}  figure asset (family)")
    for family_name, name, spent in sorted(rows, key=lambda r: -r[2]):
        print(f"{spent:7.2f}  {name} ({family_name})")
    print(f"\n{'CPU s':>7}  family (one Dagster step)")
    for family_name, spent in sorted(by_family.items(), key=lambda r: -r[1]):
        print(f"{spent:7.2f}  {family_name}")
    print(f"{sum(by_family.values()):7.2f}  all figures")


if __name__ == "__main__":
    main()
