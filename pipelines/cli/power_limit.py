"""``python -m pipelines power-limit PROFILE``: the power limit Zeus's GlobalPowerLimitOptimizer would choose from a profile.

PROFILE is a ZeusMonitor log of the optimizer's profiling, the profile JSON it saves, or a CSV of
``measure profile`` (``pipelines.ingest.power_limit_profiles``). The choice is
``pipelines.zeus.limit_selectors.choose``'s, the same as zeus 0.16.0's selectors. Bad input prints one
line (file, line, field) to stderr and exits with code 2.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import click

from pipelines.cli.options import eta_knob_option, fail, finite
from pipelines.ingest.common import IngestError
from pipelines.ingest.power_limit_profiles import PowerLimitProfile, read_profile
from pipelines.terminal import printable
from pipelines.zeus.limit_selectors import SELECTORS, Compared, Selector, SelectorName, at_max_limit, choose, compare

FORMATS = {"zeus-log": "ZeusMonitor log", "zeus-json": "Zeus profile JSON", "measured": "measure profile CSV"}


def _world_size(profile: PowerLimitProfile, gpus: int | None) -> int:
    """``--gpus`` for a JSON profile (default 1); a log's or a measured CSV's own, which ``--gpus`` may only repeat."""
    if profile.world_size is None:
        return gpus or 1
    if gpus is not None and gpus != profile.world_size:
        fail(f"--gpus {gpus}: {profile.source} holds the energy of {profile.world_size} GPU(s); --gpus is for a JSON profile")
    return profile.world_size


def _as_json(profile: PowerLimitProfile, selector: Selector, chosen: Compared, rows: list[Compared]) -> str:
    def limit(row: Compared) -> dict[str, float | int]:
        m = row.measurement
        return {"power_limit_w": m.power_limit_w, "energy_j": m.energy_j, "time_s": m.time_s, "cost_j": row.cost_j,
                "saved_vs_max_pct": row.saved_vs_max_pct, "slowdown": row.slowdown}

    return json.dumps({
        "profile": profile.source, "format": profile.format, "label": profile.label, "selector": selector.name,
        "eta_knob": selector.eta, "world_size": selector.world_size, "max_slowdown": selector.max_slowdown,
        **{k: v for k, v in limit(chosen).items() if k != "cost_j"}, "cost_j": chosen.cost_j,
        "measurements": [limit(r) for r in rows],
    }, indent=2)


def _knobs(selector: Selector) -> str:
    if selector.name == "zeus-cost":
        return f" (eta {selector.eta:g}, {selector.world_size} GPU(s))"
    return f" (at most {selector.max_slowdown:g} x the time at the highest limit)" if selector.name == "max-slowdown" else ""


def _as_text(profile: PowerLimitProfile, selector: Selector, chosen: Compared, rows: list[Compared]) -> str:
    top = at_max_limit([r.measurement for r in rows]).power_limit_w
    m = chosen.measurement
    lines = [
        f"profile: {printable(profile.source)} ({FORMATS[profile.format]}{', ' + printable(profile.label) if profile.label else ''})",
        f"selector: {selector.name}{_knobs(selector)}",
        f"chosen power limit: {m.power_limit_w} W: energy {m.energy_j:,.1f} J ({chosen.saved_vs_max_pct:.1f} % saved vs {top} W), "
        f"time {m.time_s:,.2f} s (x{chosen.slowdown:.3f})",
        "",
        f"{'limit (W)':>9}  {'energy (J)':>12}  {'time (s)':>10}  {'cost (J)':>12}  {'saved vs ' + str(top) + ' W':>16}  {'slowdown':>8}",
    ]
    for r in rows:
        mark = "  <- chosen" if r is chosen else ""
        lines.append(f"{r.measurement.power_limit_w:>9}  {r.measurement.energy_j:>12,.1f}  {r.measurement.time_s:>10,.2f}  "
                     f"{r.cost_j:>12,.1f}  {r.saved_vs_max_pct:>14.1f} %  {r.slowdown:>8.3f}{mark}")
    lines.append(f"cost: eta x energy + (1 - eta) x {top} W x {selector.world_size} GPU(s) x time, eta {selector.eta:g}")
    return "\n".join(lines)


@click.command("power-limit")
@click.argument("profile", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--selector", "name", type=click.Choice(SELECTORS), default="zeus-cost", show_default=True,
              help="Zeus's optimum selector: ZeusCost, Energy, Time or MaxSlowdownConstraint.")
@eta_knob_option("eta of the Zeus cost, 0 (time) to 1 (energy); also the cost column for the other selectors.")
@click.option("--max-slowdown", type=float, default=1.1, show_default=True, callback=finite(1.0, math.inf),
              help="max-slowdown: the lowest limit whose time is at most this factor x the time at the highest limit.")
@click.option("--gpus", type=click.IntRange(min=1), default=None,
              help="GPUs whose energy a JSON profile sums (ZeusCost's world size; default 1). A log's are its gpu columns.")
@click.option("--batch-size", type=int, default=None, help="For a measure profile CSV with several batch sizes: the one to use.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: power_limit_w, selector, energy_j, time_s, saved_vs_max_pct, measurements.")
def cli(profile: Path, name: SelectorName, eta_knob: float, max_slowdown: float, gpus: int | None, batch_size: int | None,
        as_json: bool) -> None:
    """The power limit Zeus's GlobalPowerLimitOptimizer would choose from a profile (ZeusMonitor log, Zeus JSON, measured CSV).

    Prints the chosen limit and, per limit, the energy (J), time (s), Zeus cost (J) and the energy
    saved against the highest limit. A log's and the JSON's energy is summed over the job's GPUs, its
    time is one profiling window's; a measured CSV's are one epoch's, on one GPU.
    """
    try:
        read = read_profile(profile, str(profile), batch_size)
    except IngestError as exc:
        fail(str(exc))
    if batch_size is not None and read.format != "measured":
        fail(f"--batch-size {batch_size}: {profile} is a {FORMATS[read.format]}, which has no batch sizes")
    try:
        selector = Selector(name, eta=eta_knob, world_size=_world_size(read, gpus), max_slowdown=max_slowdown)
    except ValueError as exc:
        fail(str(exc))
    rows = compare(read.measurements, selector)
    limit = choose(read.measurements, selector)
    chosen = next(r for r in rows if r.measurement.power_limit_w == limit)
    click.echo(_as_json(read, selector, chosen, rows) if as_json else _as_text(read, selector, chosen, rows))
