"""Error bars for a cluster's replay: the replay repeated over independent draws of what an export cannot tell.

An export says when each job ran and on how many GPUs, not what it trained. Which Zeus workload a
recurring group plays is therefore a draw, and so are the optimizer's seeds (its exploration and
the run sampled for each configuration). Draw 0 is the replay as documented everywhere else:
groups mapped by mean duration (``pipelines.clusters.mapping.assign_by_runtime``: short groups
play short workloads, each workload an equal share of the jobs) and the artifact's per-group
seeds. Draw ``k >= 1`` puts the groups in a random order instead (each workload keeps its share
of the jobs; which groups play it is drawn) and replays with the seed knob ``knob(base_seed, k)``
(``pipelines.zeus.reference.group_seed``: an independent stream per group and draw). The interval is
then the spread of the answer over what is unknown: the 5th to 95th percentile over the draws.

Each draw depends only on (the plan, the traces, ``base_seed``, ``k``): it runs the same in this
process or on any Dask worker (``pipelines.scaleout.runners.fan_out``), and every total is summed by
numpy in a fixed order (never by a multi-threaded group-by), so results are bit-identical
wherever the draws run. A draw returns totals only (a few numbers per row), never its history.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from pipelines.clusters import anchoring, mapping, power, simulate
from pipelines.clusters.capacity import Capacity
from pipelines.clusters.profiles import POWER_LIMIT_ONLY, PowerLimitOnly
from pipelines.ingest.grid import Rate
from pipelines.scaleout.runners import Runner, fan_out
from pipelines.vocabulary import PolicyName
from pipelines.vocabulary.units import J_PER_KWH
from pipelines.zeus import fast
from pipelines.zeus.power_limit_replay import replay_power_limit_only
from pipelines.zeus.traces import Traces

#: The policies compared: Zeus against Default (b0 at the maximum power limit).
POLICIES: tuple[PolicyName, ...] = ("default", "zeus")
#: Zeus with each job's energy weight from the grid's intensity at its start (``Plan.carbon_aware``), beside plain Zeus.
CARBON_AWARE = "carbon-aware"
#: The interval reported: these percentiles of a figure over the draws.
INTERVAL_PCT: tuple[float, float] = (5.0, 95.0)
#: The key of the whole cluster's row in a mixed cluster.
FLEET = "all"


@dataclass(frozen=True)
class Row:
    """One row of the report: jobs replayed on one profile.

    ``key``: the exported GPU type (``as-exported``) or the GPU (every job on each GPU); ``gpu``:
    the profile replayed on; ``jobs``: ``mapping.own_keyed`` rows (no workload yet);
    ``workloads``: the workloads that profile can replay, shortest default TTA first.
    """

    key: str
    gpu: str
    jobs: pl.DataFrame
    workloads: tuple[str, ...]
    #: Replay the row power-limit-only on this measured profile (``profiles.PowerLimitOnly``), not the Zeus optimizer.
    power_limit: PowerLimitOnly | None = None


@dataclass(frozen=True)
class Plan:
    """What every draw replays: the rows, whether they add up to one cluster (``fleet``), the knobs, the measured jobs."""

    trace: str
    rows: tuple[Row, ...]
    fleet: bool
    eta: float
    beta: float
    measured: pl.DataFrame  # job_id, row key, measured_energy_j: replayed jobs with a measurement
    top: int = 10
    #: The cluster size behind each row's idle draw (by row key), and the idle draw (W) of each row's GPU; a row missing
    #: from either has no fleet energy. ``cluster``: the whole cluster's size (its GPUs beyond the rows' idle at
    #: ``idle_w[FLEET]``, the rows' mean idle draw weighted by their GPUs); None: no fleet for the whole.
    capacities: dict[str, Capacity] = field(default_factory=dict)
    idle_w: dict[str, float] = field(default_factory=dict)
    cluster: Capacity | None = None
    #: The group replay's engine (``pipelines.zeus.fast``): None decides per call; ``engine_for`` picks it for all the draws.
    engine: str | None = None
    #: Draw 0 also returns its cluster power (``draw_power``), for the report's plots.
    keep_power: bool = False
    #: Each job's energy sized to its exported GPU-hours (``pipelines.clusters.anchoring.anchor``), else as the artifact.
    anchored: bool = False
    #: Per profile GPU, Zeus's converged energy over Default's per workload (``anchoring.converged_ratios``): the steady state.
    converged: dict[str, dict[str, float]] = field(default_factory=dict)
    #: Project each row over this many seconds at the export's recurrence rate (``anchoring.horizon_totals``); None: not.
    horizon_s: float | None = None
    #: The grid's carbon intensity (g CO2e per kWh) and the electricity price (per kWh) where and when each run drew its
    #: energy (``pipelines.ingest.grid.Rate``: constant or a series); None: not priced.
    grid: Rate | None = None
    prices: Rate | None = None
    #: (eta at the series' cleanest, eta at its dirtiest): also replay a carbon-aware Zeus (``carbon_etas``); None: not.
    carbon_aware: tuple[float, float] | None = None


def seed_knob(base_seed: int, draw: int) -> int | None:
    """The optimizer's seed knob of draw ``draw``: None (the artifact's seeds) for draw 0, else a uint32 of (base_seed, draw)."""
    if draw == 0:
        return None
    return int(np.random.SeedSequence([base_seed, draw]).generate_state(1, np.uint32)[0])


def _shuffle(base_seed: int, draw: int, row: int) -> np.random.Generator | None:
    return None if draw == 0 else np.random.default_rng(np.random.SeedSequence([base_seed, draw, row, 1]))


def _sums(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys, sum of ``values`` per key), keys sorted; the sums in a fixed order (a stable sort, then reduceat)."""
    if keys.size == 0:
        return keys, values
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[starts], np.add.reduceat(values, starts)


def _key(policy: str) -> str:
    return policy.replace("-", "_")


def _policies(history: pl.DataFrame) -> tuple[str, ...]:
    """The policies of a draw's history: Default and Zeus, and the carbon-aware Zeus where it was replayed."""
    return (*POLICIES, CARBON_AWARE) if (history["policy"] == CARBON_AWARE).any() else POLICIES


def _totals(history: pl.DataFrame) -> dict[str, float]:
    """Energy (J) and time (s) of each policy, summed by numpy in history order."""
    out: dict[str, float] = {}
    energy, time = history["energy_j"].to_numpy(), history["time_s"].to_numpy()
    for p in _policies(history):
        mask = (history["policy"] == p).to_numpy()  # a bool mask, not an object array of the policy names
        out[f"{_key(p)}_j"] = float(np.sum(energy[mask]))
        out[f"{_key(p)}_s"] = float(np.sum(time[mask]))
    return out


def carbon_etas(jobs: pl.DataFrame, grid: Rate, clean: float, dirty: float) -> np.ndarray:
    """Each job's energy weight in a carbon-aware Zeus: the grid's intensity at its start, mapped linearly from ``clean`` at
    the series' lowest value to ``dirty`` at its highest (a flat series: ``clean`` throughout)."""
    start = jobs["start_time_s"].to_numpy()
    now = grid.means(start, start)
    low, high = float(np.min(grid.values)), float(np.max(grid.values))
    share = np.zeros_like(now) if high == low else np.clip((now - low) / (high - low), 0.0, 1.0)
    return clean + (dirty - clean) * share


#: The fleet figures of a row's totals: the idle energy and jobs + idle of each policy (J), the idle draw, the GPU-hours over capacity.
FLEET_TOTALS = ("default_idle_j", "zeus_idle_j", "default_fleet_j", "zeus_fleet_j", "gpu_idle_w", "over_capacity_gpu_h")


def _peaks(history: pl.DataFrame, key: str, plan: Plan) -> dict[str, float | None]:
    """Default and Zeus peak (kW), Zeus's GPU headroom and, where the row has a cluster size and an idle draw, the fleet
    (``power.power_bins`` / ``power_summary`` with their defaults: jobs plus the idle GPUs of the cluster over the trace's window)."""
    found: dict[str, float | None] = {"default_peak_kw": None, "zeus_peak_kw": None, "headroom_gpus": None, **dict.fromkeys(FLEET_TOTALS)}
    if history.height == 0:
        return found
    gpu = str(history["gpu"][0])
    sized = key in plan.capacities and gpu in plan.idle_w
    sizes = {plan.trace: plan.capacities[key]} if sized else None
    idle = {gpu: plan.idle_w[gpu]} if sized else None
    for row in power.power_summary(power.power_bins(history, capacity=sizes, idle_w=idle), sizes, idle).iter_rows(named=True):
        policy = row["policy"]
        found[f"{policy}_peak_kw"] = row["peak_kw"]
        if sized:
            found[f"{policy}_idle_j"], found[f"{policy}_fleet_j"] = row["idle_energy_j"], row["fleet_energy_j"]
            found["gpu_idle_w"] = row["gpu_idle_w"]
        if policy == "zeus":
            found["headroom_gpus"] = row["headroom_gpus"]
            found["over_capacity_gpu_h"] = row["over_capacity_gpu_h"] if sized else None
    return found


#: A row's steady-state totals: its Default energy (J) and the same jobs' once Zeus has converged (J); None without ratios.
STEADY_TOTALS = ("steady_default_j", "steady_zeus_j")


def _steady(history: pl.DataFrame, ratios: dict[str, float] | None) -> dict[str, float | None]:
    if not ratios or history.height == 0:
        return dict.fromkeys(STEADY_TOTALS)
    return dict(zip(STEADY_TOTALS, anchoring.steady_state_totals(history, ratios), strict=True))


#: A row's CO2e (g) and cost of each policy, each run's energy at the intensity and price of when it ran; None: not priced.
PRICED_TOTALS = ("default_co2e_g", "zeus_co2e_g", "carbon_aware_co2e_g", "default_cost", "zeus_cost", "carbon_aware_cost")
#: A row's carbon-aware totals (J, s); None where none was replayed.
CARBON_AWARE_TOTALS = ("carbon_aware_j", "carbon_aware_s")


def _priced(history: pl.DataFrame, plan: Plan) -> dict[str, float | None]:
    out: dict[str, float | None] = dict.fromkeys(PRICED_TOTALS)
    kwh = history["energy_j"].to_numpy() / J_PER_KWH
    start = history["start_time_s"].to_numpy()
    end = start + history["time_s"].to_numpy()
    masks = {p: (history["policy"] == p).to_numpy() for p in _policies(history)}
    for rate, name in ((plan.grid, "co2e_g"), (plan.prices, "cost")):
        if rate is None:
            continue
        weighted = kwh * rate.means(start, end)
        for p, mask in masks.items():
            out[f"{_key(p)}_{name}"] = float(np.sum(weighted[mask]))
    return out


#: A row's totals over ``Plan.horizon_s`` (J): Default's and Zeus's; None without a horizon.
HORIZON_TOTALS = ("horizon_default_j", "horizon_zeus_j")


def _horizon(history: pl.DataFrame, jobs: pl.DataFrame, row: Row, plan: Plan) -> dict[str, float | None]:
    ratios = plan.converged.get(row.gpu)
    if plan.horizon_s is None or not ratios or row.key not in plan.capacities:
        return dict.fromkeys(HORIZON_TOTALS)
    window = plan.capacities[row.key]
    totals = anchoring.horizon_totals(history, jobs, ratios, window.window_end_s - window.window_start_s, plan.horizon_s)
    return dict(zip(HORIZON_TOTALS, totals, strict=True))


def _summed(rows: dict[str, dict[str, Any]], names: tuple[str, ...]) -> dict[str, float | None]:
    """The whole cluster's totals ``names``: each its rows' added up (None where a row has none)."""
    return {k: None if any(r[k] is None for r in rows.values()) else float(np.sum([r[k] for r in rows.values()])) for k in names}


def _whole_fleet(rows: dict[str, dict[str, Any]], plan: Plan) -> dict[str, float | None]:
    """The whole cluster's fleet: its rows' (each type's GPUs) added up, plus its GPUs beyond theirs idle over the trace's
    window (bins of ``power.BIN_S``) at the rows' mean idle draw; all None when a row has none."""
    if plan.cluster is None or FLEET not in plan.idle_w or any(r.get("default_fleet_j") is None for r in rows.values()):
        return dict.fromkeys(FLEET_TOTALS)
    extra = plan.cluster.cluster_gpus - sum(plan.capacities[k].cluster_gpus for k in rows)
    window = (math.ceil(plan.cluster.window_end_s / power.BIN_S) - math.floor(plan.cluster.window_start_s / power.BIN_S)) * power.BIN_S
    extra_j = max(extra, 0) * window * plan.idle_w[FLEET]
    out: dict[str, float | None] = {"gpu_idle_w": plan.idle_w[FLEET],
                                    "over_capacity_gpu_h": float(np.sum([r["over_capacity_gpu_h"] or 0.0 for r in rows.values()]))}
    for p in POLICIES:
        out[f"{p}_idle_j"] = float(np.sum([r[f"{p}_idle_j"] for r in rows.values()])) + extra_j
        out[f"{p}_fleet_j"] = float(np.sum([r[f"{p}_fleet_j"] for r in rows.values()])) + extra_j
    return out


def _top_groups(history: pl.DataFrame, top: int, label: str | None) -> list[dict[str, Any]]:
    """The ``top`` groups saving most energy (J), with their workload and job count (the label prefixes their name)."""
    if history.height == 0 or top == 0:
        return []
    # each group as its rank among the sorted names (the order _sums sorts them in), not as a wide numpy string array
    names = history["group"].unique().sort()
    codes = history["group"].rank("dense").cast(pl.Int64).to_numpy() - 1
    is_default, is_zeus = ((history["policy"] == p).to_numpy() for p in ("default", "zeus"))
    energy = history["energy_j"].to_numpy()
    default_codes, default = _sums(codes[is_default], energy[is_default])
    zeus_codes, zeus = _sums(codes[is_zeus], energy[is_zeus])
    zeus_of = dict(zip(zeus_codes.tolist(), zeus.tolist(), strict=True))
    meta = history.lazy().filter(pl.col("policy") == "default").select("group", "dataset", "job_id").group_by("group").agg(
        pl.col("dataset").first(), pl.col("job_id").n_unique().alias("jobs")).collect()
    info = {g: (d, j) for g, d, j in meta.iter_rows()}
    rows = [(names[c], d, zeus_of.get(c, 0.0)) for c, d in zip(default_codes.tolist(), default.tolist(), strict=True)]
    rows.sort(key=lambda r: (-(r[1] - r[2]), r[0]))
    return [{"group": f"{label}: {g}" if label else g, "jobs": int(info[g][1]), "workload": info[g][0], "default_j": d, "zeus_j": z}
            for g, d, z in rows[:top]]


def _quartiles(model: np.ndarray, measured: np.ndarray) -> dict[str, Any]:
    ratio = np.sort(measured / model)
    q25, q50, q75 = (float(v) for v in np.quantile(ratio, [0.25, 0.5, 0.75]))
    return {"jobs": int(model.size), "modelled_default_j": float(np.sum(model)), "ratio_p25": q25, "ratio_median": q50, "ratio_p75": q75}


def _measured(combined: pl.DataFrame, measured: pl.DataFrame) -> dict[str, Any] | None:
    """The modelled Default energy of the measured jobs (J) and quartiles over them of measured / modelled, over all of them
    and per row (``by_row``: each exported GPU type's, or each GPU's).

    Rows hold different jobs (a job replays in one row as exported; in each row on every GPU), so
    a job is its row and job id.
    """
    if measured.height == 0 or combined.height == 0:
        return None
    default = combined.filter(pl.col("policy") == "default")
    keys = (default["_row"] + "\x1f" + default["job_id"]).to_numpy().astype(str)
    jobs, modelled = _sums(keys, default["energy_j"].to_numpy())
    known = dict(zip(jobs.tolist(), modelled.tolist(), strict=True))
    wanted = (measured["row"] + "\x1f" + measured["job_id"]).to_list()
    pairs = [(row, known[k], m) for k, row, m in zip(wanted, measured["row"].to_list(), measured["measured_energy_j"].to_list(), strict=True)
             if k in known]
    if not pairs:
        return None
    rows = np.array([p[0] for p in pairs], dtype=object)
    model, meter = np.array([p[1] for p in pairs]), np.array([p[2] for p in pairs])
    out = _quartiles(model, meter)
    out["by_row"] = {row: _quartiles(model[rows == row], meter[rows == row]) for row in dict.fromkeys(rows.tolist())}
    return out


#: The history columns a draw reads (totals, power, top groups, the measured jobs); the rest is dropped at once.
_HISTORY_COLUMNS = ("trace", "gpu", "policy", "group", "job_id", "dataset", "num_gpu", "start_time_s", "time_s", "energy_j")


def power_limit_history(profile: PowerLimitOnly, jobs: pl.DataFrame, trace: str, eta: float) -> pl.DataFrame:
    """A power-limit-only row's runs as a history (``_HISTORY_COLUMNS``): Default at the highest limit for each job's elapsed
    time, Zeus as its GlobalPowerLimitOptimizer (``replay_power_limit_only``: the first job of each recurring group profiles,
    then the chosen limit). Anchored by construction: a job's work is its exported elapsed time at the highest limit."""
    ordered = jobs.with_row_index("_row").sort("start_time_s", "_row")
    runs = replay_power_limit_only(profile.measurements, profile.selector(eta), ordered.select(
        "group", (pl.col("end_time_s") - pl.col("start_time_s")).alias("runtime_s"), pl.col("num_gpu").cast(pl.Int64).alias("gpus")))
    base = ordered.select(pl.lit(trace).alias("trace"), pl.lit(profile.gpu).alias("gpu"), "group", "job_id", "dataset", "num_gpu",
                          "start_time_s")
    return pl.concat([
        base.with_columns(pl.lit("default").alias("policy"), runs["runtime_s"].alias("time_s"), runs["default_energy_j"].alias("energy_j")),
        base.with_columns(pl.lit("zeus").alias("policy"), runs["time_s"].alias("time_s"), runs["energy_j"].alias("energy_j")),
    ]).select(_HISTORY_COLUMNS)


def run_draw(draw: int, *, plan: Plan, traces: Traces, base_seed: int) -> dict[str, Any]:
    """One draw (see the module docstring): per row its totals and peaks; the fleet's; the measured comparison; for draw 0
    also the top groups and the jobs per workload."""
    knob = seed_knob(base_seed, draw)
    rows: dict[str, dict[str, Any]] = {}
    histories: list[pl.DataFrame] = []
    for i, row in enumerate(plan.rows):
        if row.jobs.height == 0:
            continue
        if row.power_limit is not None:
            jobs = row.jobs.with_columns(pl.lit(POWER_LIMIT_ONLY).alias("dataset"))
            history = power_limit_history(row.power_limit, jobs, plan.trace, plan.eta)
        else:
            assigned = mapping.assign_by_runtime(row.jobs, row.workloads, shuffle=_shuffle(base_seed, draw, i), subset=True)
            jobs = mapping.finish_own(assigned, plan.trace)
            history = simulate.simulate_trace(jobs, traces, row.gpu, eta=plan.eta, beta=plan.beta, policies=POLICIES, seed=knob,
                                              engine=plan.engine).select(_HISTORY_COLUMNS)
            if plan.carbon_aware is not None and plan.grid is not None:  # the reference replay: one energy weight per job
                weighted = jobs.with_columns(pl.Series("_eta", carbon_etas(jobs, plan.grid, *plan.carbon_aware)))
                aware = simulate.simulate_trace(weighted, traces, row.gpu, eta=plan.eta, beta=plan.beta, policies=("zeus",), seed=knob,
                                                engine="reference", job_eta="_eta").select(_HISTORY_COLUMNS)
                history = pl.concat([history, aware.with_columns(pl.lit(CARBON_AWARE).alias("policy"))])
            if plan.anchored:
                history = anchoring.anchor(history, jobs)
        rows[row.key] = {**dict.fromkeys(CARBON_AWARE_TOTALS), **_totals(history), **_peaks(_compared(history), row.key, plan),
                         **_steady(history, plan.converged.get(row.gpu)),
                         **_horizon(history, jobs, row, plan), **_priced(history, plan)}
        if draw == 0:
            rows[row.key]["jobs_by_workload"] = dict(jobs.group_by("dataset").len().sort("dataset").iter_rows())
        histories.append(history.with_columns(pl.lit(row.key).alias("_row")))
    out: dict[str, Any] = {"draw": draw, "rows": rows, "measured": None}
    if not histories:
        return out
    combined = pl.concat(histories)
    if plan.fleet:
        # relabelled per history: a column added to the concatenated frame would rechunk (copy) all of it
        fleet = pl.concat([h.drop("_row").with_columns(pl.lit(FLEET).alias("gpu")) for h in histories])
        whole = {**_totals(combined), **_peaks(_compared(fleet), FLEET, plan), **_summed(rows, STEADY_TOTALS),
                 **_summed(rows, HORIZON_TOTALS), **_summed(rows, PRICED_TOTALS), **_summed(rows, CARBON_AWARE_TOTALS)}
        del fleet
        out["fleet"] = {**whole, **_whole_fleet(rows, plan)}
    out["measured"] = _measured(combined, plan.measured)
    if draw == 0 and plan.keep_power:
        out["power"] = draw_power(histories, plan)
    if draw == 0:
        if plan.fleet:
            label = len(histories) > 1
            tops = [t for h in histories for t in _top_groups(h, plan.top, str(h["_row"][0]) if label else None)]
            tops.sort(key=lambda t: (-(t["default_j"] - t["zeus_j"]), t["group"]))
            out["top_groups"] = tops[: plan.top]
        else:
            out["top_groups"] = _top_groups(histories[0], plan.top, None)
    return out


def _compared(history: pl.DataFrame) -> pl.DataFrame:
    """The Default and Zeus runs of a history (its power, peaks and headroom compare those two)."""
    return history.filter(pl.col("policy").is_in(POLICIES))


def draw_power(histories: Sequence[pl.DataFrame], plan: Plan) -> pl.DataFrame:
    """A draw's cluster power (``power.power_bins``, jobs only, ``ClusterPower`` columns): the whole cluster's when the rows add
    up to one (``gpu`` = ``FLEET``), else each row's (``gpu`` = the row's key)."""
    label = pl.lit(FLEET) if plan.fleet else pl.col("_row")
    return power.power_bins(_compared(pl.concat(histories)).with_columns(label.alias("gpu")).drop("_row"))


def engine_for(plan: Plan, samples: int) -> str | None:
    """``fast`` (the compiled replay) when all the draws together replay at least ``fast.AUTO_MIN_JOBS`` jobs, else None.

    ``auto`` decides per call, and one row of one draw is often below the threshold although the
    draws together are far above it; both engines give the same runs, bit for bit.
    """
    replays = samples * len(POLICIES) * sum(r.jobs.height for r in plan.rows)
    return "fast" if fast.available() and replays >= fast.AUTO_MIN_JOBS else None


def run_draws(plan: Plan, traces: Traces, samples: int, base_seed: int, runner: Runner, *, progress: bool = False) -> list[dict[str, Any]]:
    """Draws ``0 .. samples - 1`` on ``runner`` (in order); the traces go to the workers without memoized lookups."""
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    plan = replace(plan, engine=engine_for(plan, samples)) if plan.engine is None else plan
    shared = {"plan": plan, "traces": Traces(traces.train, traces.power), "base_seed": base_seed}
    return fan_out(runner, run_draw, list(range(samples)), shared, progress=progress, label="samples")


def spread(values: Sequence[float | None]) -> tuple[float | None, float | None, float | None]:
    """(median, 5th, 95th percentile) of ``values`` (linear interpolation; None when a value is missing)."""
    if not values or any(v is None or not np.isfinite(v) for v in values):
        return None, None, None
    array = np.sort(np.asarray(values, dtype=np.float64))
    lo, hi = INTERVAL_PCT
    median, p05, p95 = np.quantile(array, [0.5, lo / 100, hi / 100])
    return float(median), float(p05), float(p95)
