"""AcmeTrace's measured distributions (``raw/acme/util_pkl/*.pkl``) -> ``fleet_power_cdf``.

Each file is a pickled list of float64 arrays in (x, CDF %) pairs (docs: Upstream files). Only the
pairs the data sources name are read (``CURVES``): the GPU power of Seren and Kalos, the GPU-node
and CPU-node power of Seren, and the first pair (GPU utilisation) of each utilisation file.

For each file, in order: its bytes are read once; their sha256 must be the manifest's pin (else
the file is not unpickled); they are unpickled by ``pipelines.ingest.pickled`` (numpy arrays
only); the list must hold the documented number of pairs, each pair of equal length. A file that
fails any step contributes no row: it goes to quarantine as one record (line 1) with the reason,
so a hostile, truncated or reshaped pickle never half-fills the table. Its points are the records
of a file that passes (``line`` = point + 1); a point that breaks a rule of the contract (x and
cdf_pct finite, x within its metric's physical bounds, cdf_pct in 0-100) goes to quarantine alone.
``table.height + quarantine.height == lines_in`` holds as for every reader.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.contracts.base import polars_schema
from pipelines.contracts.fleet import FleetPowerCdf
from pipelines.ingest.common import IngestError, IngestResult, TableSpec, empty_quarantine, empty_table, quarantine_frame, validate_rows
from pipelines.ingest.pickled import PickleRefused, load_arrays
from pipelines.sources.manifest import SOURCES_BY_NAME

TABLE = "fleet_power_cdf"
FOLDER = "acme/util_pkl"
SPEC = TableSpec(TABLE, FleetPowerCdf, {c: c for c in polars_schema(FleetPowerCdf)})


@dataclass(frozen=True)
class Curve:
    """One (x, CDF %) pair of one file: its index among the file's pairs and the (cluster, metric) it is."""

    file: str  # below raw/
    pair: int
    cluster: str
    metric: str


def _file(name: str) -> str:
    return f"{FOLDER}/{name}.pkl"


#: The curves read, from the data sources ("Measured fleet distributions").
CURVES: tuple[Curve, ...] = (
    Curve(_file("gpu_power_seren"), 0, "seren", "gpu_power_w"),
    Curve(_file("gpu_power_kalos"), 0, "kalos", "gpu_power_w"),
    Curve(_file("server_power"), 0, "seren", "gpu_node_power_w"),
    Curve(_file("server_power"), 1, "seren", "cpu_node_power_w"),
    Curve(_file("util_gpu_seren"), 0, "seren", "gpu_util_pct"),
    Curve(_file("util_gpu_kalos"), 0, "kalos", "gpu_util_pct"),
    Curve(_file("util_gpu_philly"), 0, "philly", "gpu_util_pct"),
)
#: How many (x, CDF %) pairs each file holds upstream; a file with another count is refused whole.
PAIRS: dict[str, int] = {
    _file("gpu_power_seren"): 1, _file("gpu_power_kalos"): 1, _file("server_power"): 2,
    _file("util_gpu_seren"): 5, _file("util_gpu_kalos"): 2, _file("util_gpu_philly"): 1,
}
FILES: tuple[str, ...] = tuple(PAIRS)


class FileRefused(ValueError):
    """A file whose bytes cannot become curves (sha256, pickle, shape); the message says why."""


def file_curves(data: bytes, name: str, pin: str | None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The (x, cdf %) pairs of one file's bytes, by pair index; ``FileRefused`` naming the step that failed.

    The sha256 is checked against ``pin`` before anything is unpickled (None: not checked, for tests).
    """
    digest = hashlib.sha256(data).hexdigest()
    if pin is not None and digest != pin:
        raise FileRefused(f"sha256 {digest} is not the pinned {pin}; not unpickled")
    try:
        arrays = load_arrays(data)
    except PickleRefused as exc:
        raise FileRefused(f"pickle refused: {exc}") from None
    expected = PAIRS.get(name)
    if len(arrays) % 2 or (expected is not None and len(arrays) != 2 * expected):
        want = f"{expected} (x, CDF %) pairs" if expected is not None else "(x, CDF %) pairs"
        raise FileRefused(f"{len(arrays)} arrays, not {want}")
    pairs = {}
    for i in range(len(arrays) // 2):
        x, cdf = arrays[2 * i], arrays[2 * i + 1]
        if len(x) != len(cdf):
            raise FileRefused(f"pair {i}: x has {len(x):,} points and cdf {len(cdf):,}; arrays of unequal length")
        if len(x) == 0:
            raise FileRefused(f"pair {i}: no point")
        pairs[i] = (x, cdf)
    return pairs


def _points(curve: Curve, x: np.ndarray, cdf: np.ndarray) -> pl.DataFrame:
    n = len(x)
    return pl.DataFrame({
        "cluster": [curve.cluster] * n, "metric": [curve.metric] * n, "point": np.arange(n, dtype=np.int64),
        "x": x.astype(np.float64), "cdf_pct": cdf.astype(np.float64), "_line": np.arange(1, n + 1, dtype=np.int64),
    })


def read_curves(raw: Path, *, pins: dict[str, str | None] | None = None) -> IngestResult:
    """Every curve of ``CURVES`` from ``raw/acme/util_pkl`` -> ``fleet_power_cdf`` and its quarantine.

    ``pins`` overrides the manifest's sha256 per file (tests; None: not checked). A file that
    cannot be read at all (missing: fetch makes it present) raises ``IngestError``.
    """
    tables: list[pl.DataFrame] = []
    quarantines: list[pl.DataFrame] = [empty_quarantine()]
    lines = 0
    for name in FILES:
        path = raw / name
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise IngestError(name, f"unreadable file: {exc}") from exc
        pin = pins[name] if pins is not None and name in pins else SOURCES_BY_NAME[name].sha256
        try:
            pairs = file_curves(data, name, pin)
        except FileRefused as exc:
            lines += 1
            quarantines.append(quarantine_frame(TABLE, name, [1], None, f"whole file: {exc}", f"<pickle, {len(data):,} bytes>"))
            continue
        for curve in (c for c in CURVES if c.file == name):
            x, cdf = pairs[curve.pair]
            points = _points(curve, x, cdf)
            lines += points.height
            good, failed = validate_rows(points, SPEC)
            if failed.height:
                rows = points.join(failed.select("_line"), on="_line", how="semi").sort("_line")
                reasons = (f"pair {curve.pair} ({curve.cluster} {curve.metric}) " + failed["reason"]).rename("reason")
                quarantines.append(quarantine_frame(TABLE, name, failed["_line"], None, reasons, _raw(rows))
                                   .with_columns(failed["column"].alias("column")))
            tables.append(good.drop("_line"))
    table = pl.concat(tables, how="vertical") if tables else empty_table(SPEC)
    return IngestResult(table, pl.concat(quarantines, how="vertical"), lines_in=lines, files=list(FILES))


def _raw(points: pl.DataFrame) -> pl.Series:
    return points.select(pl.format("{} {} point {}: x={}, cdf_pct={}", "cluster", "metric", "point", "x", "cdf_pct")).to_series()


# ---------------------------------------------------------------------------------------------
# the curve rules (the asset's blocking checks): evaluated on the table, in the upstream point order

#: Tolerance of the 0 and 100 % endpoints (the upstream y is linspace(0, 1, 1000) x 100).
ENDPOINT_TOL_PCT = 1e-9


def missing_curves(table: pl.DataFrame) -> list[str]:
    """``cluster/metric`` of every curve of ``CURVES`` with fewer than two points in ``table``."""
    counts = dict(table.group_by("cluster", "metric").len().select(pl.format("{}/{}", "cluster", "metric"), "len").iter_rows())
    return [f"{c.cluster}/{c.metric}" for c in CURVES if counts.get(f"{c.cluster}/{c.metric}", 0) < 2]


def curve_rules(table: pl.DataFrame) -> pl.DataFrame:
    """Per curve: points, the first point where x or cdf_pct decreases (null: none), and the first and last cdf_pct.

    A curve keeps the rules when both ``first_*_decrease`` are null, ``first_cdf_pct`` is 0 and
    ``last_cdf_pct`` is 100 (within ``ENDPOINT_TOL_PCT``): ``curve_problems`` lists the others.
    """
    ordered = table.sort("cluster", "metric", "point")
    return (
        ordered.with_columns(
            (pl.col("x").diff().over("cluster", "metric") < 0).alias("_x_down"),
            (pl.col("cdf_pct").diff().over("cluster", "metric") < 0).alias("_cdf_down"),
        )
        .group_by("cluster", "metric", maintain_order=True)
        .agg(
            pl.len().alias("points"),
            pl.col("point").filter(pl.col("_x_down")).first().alias("first_x_decrease"),
            pl.col("point").filter(pl.col("_cdf_down")).first().alias("first_cdf_decrease"),
            pl.col("cdf_pct").first().alias("first_cdf_pct"),
            pl.col("cdf_pct").last().alias("last_cdf_pct"),
        )
    )


def curve_problems(rules: pl.DataFrame) -> tuple[list[str], list[str]]:
    """(curves that decrease, curves that do not run from 0 to 100 %), each ``cluster/metric: why``, from ``curve_rules``."""
    decreasing, span = [], []
    for r in rules.iter_rows(named=True):
        name = f"{r['cluster']}/{r['metric']}"
        for what in ("x", "cdf"):
            point = r[f"first_{what}_decrease"]
            if point is not None:
                decreasing.append(f"{name}: {'x' if what == 'x' else 'cdf_pct'} decreases at point {point}")
        if abs(r["first_cdf_pct"]) > ENDPOINT_TOL_PCT or abs(r["last_cdf_pct"] - 100) > ENDPOINT_TOL_PCT:
            span.append(f"{name}: cdf_pct runs from {r['first_cdf_pct']!r} to {r['last_cdf_pct']!r}, not 0 to 100")
    return decreasing, span
