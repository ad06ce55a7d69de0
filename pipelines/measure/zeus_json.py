"""A measured profile as the JSON Zeus's GlobalPowerLimitOptimizer saves and loads (``profile_path=``).

``{"measurements": [{"power_limit": W, "energy": J, "time": s}, ...]}``, one file per batch size
measured at two or more power limits, highest limit first: one epoch's energy (average power x
time per epoch, J) and time (s) on the measured GPU. The optimizer's choice depends only on how the
limits compare, so an epoch serves as its profiling window does. Written atomically beside the CSV:
``NAME.csv`` -> ``NAME.bs<B>.zeus.json``. Rows without energy (``method = none``) are left out.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from pipelines.home.atomic import atomic_path
from pipelines.home.outputs import OutputKind
from pipelines.ingest.power_limit_profiles import measured_measurements


def zeus_profile_path(csv: Path, batch_size: int) -> Path:
    """Where the Zeus profile of ``batch_size`` of the measured ``csv`` goes: ``NAME.bs<B>.zeus.json`` beside it."""
    return csv.with_name(f"{csv.stem}.bs{batch_size}.zeus.json")


def zeus_profiles(rows: pl.DataFrame) -> dict[int, str]:
    """Batch size -> Zeus profile JSON text, for each batch size of ``rows`` (the harness's) with energy at two or more limits."""
    usable = rows.filter(pl.col("average_power").is_not_null() & pl.col("power_limit").is_not_null())
    out: dict[int, str] = {}
    for (batch_size,), by_size in usable.group_by("batch_size", maintain_order=True):
        if by_size["power_limit"].n_unique() < 2:
            continue
        first = by_size.unique("power_limit", keep="first", maintain_order=True)  # a limit measured twice (--power-limits 200 200)
        measurements = [{"power_limit": m.power_limit_w, "energy": m.energy_j, "time": m.time_s} for m in measured_measurements(first)]
        out[int(batch_size)] = json.dumps({"measurements": measurements}, indent=4)
    return out


#: What ``measure profile`` writes beside its CSV: Zeus's profile JSON as ``zeus_profiles`` prints it.
ZEUS_PROFILE_FILE = OutputKind.starting_with("Zeus profile JSON", b'{\n    "measurements": [')


def write_zeus_profiles(rows: pl.DataFrame, csv: Path) -> list[Path]:
    """Write ``zeus_profiles(rows)`` beside ``csv``, each atomically; the paths written."""
    written = []
    for batch_size, text in zeus_profiles(rows).items():
        target = zeus_profile_path(csv, batch_size)
        with atomic_path(target) as tmp:
            tmp.write_text(text + "\n")
        written.append(target)
    return written
