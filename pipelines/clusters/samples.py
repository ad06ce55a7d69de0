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
What no draw changes (each row's jobs in replay order, the workload tables, the measured jobs) is
built once (``shared_by_draws``) and sent with the plan; a draw keeps its runs as arrays
(``pipelines.clusters.replayed``) and sums every figure over them in the history's order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from pipelines.clusters import analogues, anchoring, mapping, power, replayed, simulate, standins
from pipelines.clusters.analogues import Analogues
from pipelines.clusters.capacity import Capacity
from pipelines.clusters.profiles import POWER_LIMIT_ONLY, PowerLimitOnly
from pipelines.clusters.replayed import RowRuns
from pipelines.clusters.standins import PowerScale
from pipelines.clusters.whatif_knobs import METER_GPU, Options
from pipelines.ingest.grid import Rate
from pipelines.scaleout.runners import Runner, fan_out
from pipelines.vocabulary import PolicyName
from pipelines.vocabulary.units import J_PER_KWH, S_PER_DAY
from pipelines.zeus import fast
from pipelines.zeus.groups import group_job_spec
from pipelines.zeus.power_limit_replay import replay_power_limit_only
from pipelines.zeus.traces import Traces, WorkloadTable, build_table

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
    #: Groups with a GPU utilisation play a workload of a consistent Default draw (``analogues``); None: all by runtime.
    analogues: Analogues | None = None
    #: A stand-in row's power mapped onto its exported GPU's idle draw and TDP (``standins``); None: as replayed.
    power_scale: PowerScale | None = None


@dataclass(frozen=True)
class Plan:
    """What every draw replays: the rows, whether they add up to one cluster (``fleet``), the knobs, the measured jobs."""

    trace: str
    rows: tuple[Row, ...]
    fleet: bool
    #: The knobs replayed under (``eta``, ``beta``, ``top``, ...) and what the rest of the plan is derived from.
    options: Options
    measured: pl.DataFrame  # job_id, row key, measured_energy_j: replayed jobs with a measurement
    #: The cluster size behind each row's idle draw (by row key), and the idle draw (W) of each row's GPU; a row missing
    #: from either has no fleet energy. ``cluster``: the whole cluster's size (its GPUs beyond the rows' idle at
    #: ``idle_w[FLEET]``, the rows' mean idle draw weighted by their GPUs); None: no fleet for the whole.
    capacities: dict[str, Capacity] = field(default_factory=dict)
    idle_w: dict[str, float] = field(default_factory=dict)
    cluster: Capacity | None = None
    #: The group replay's engine (``pipelines.zeus.fast``): None decides per call; ``engine_for`` picks it for all the draws.
    engine: str | None = None
    #: Draw 0 also returns its cluster power (``power.power_bins`` of its runs), for the report's plots.
    keep_power: bool = False
    #: Per profile GPU, Zeus's converged energy over Default's per workload (``anchoring.converged_ratios``): the steady state.
    converged: dict[str, dict[str, float]] = field(default_factory=dict)
    #: The grid's carbon intensity (g CO2e per kWh) and the electricity price (per kWh) where and when each run drew its
    #: energy (``pipelines.ingest.grid.Rate``: constant or a series; ``Options.rates``); None: not priced.
    grid: Rate | None = None
    prices: Rate | None = None
    #: The rows' groups replayed in this many partitions, each alone (``replayed.replay_partitions``: the same runs, bit for
    #: bit, so the same figures), on the compiled replay; another engine replays a row whole.
    partitions: int = 1

    @property
    def anchored(self) -> bool:
        """Each job's energy sized to its exported GPU-hours (``pipelines.clusters.anchoring.anchor``), else as the artifact."""
        return self.options.energy_model == anchoring.ANCHORED

    @property
    def horizon_s(self) -> float | None:
        """Project each row over this many seconds at the export's recurrence rate (``anchoring.horizon_totals``); None: not."""
        return None if self.options.horizon_days is None else self.options.horizon_days * S_PER_DAY

    @property
    def carbon_aware(self) -> tuple[float, float] | None:
        """(eta at the series' cleanest, eta at its dirtiest): also replay a carbon-aware Zeus (``carbon_etas``); None: not."""
        return (self.options.clean_eta, self.options.eta_dirty) if self.options.carbon_aware else None

    @property
    def metered(self) -> bool:
        """The cluster's meter is the GPUs' own (``whatif --meter gpu``): each ``measured`` job's Default energy is its metered
        energy and every other policy's the same times the replay's ratio to Default for that job (``meter``)."""
        return self.options.meter == METER_GPU


def seed_knob(base_seed: int, draw: int) -> int | None:
    """The optimizer's seed knob of draw ``draw``: None (the artifact's seeds) for draw 0, else a uint32 of (base_seed, draw)."""
    if draw == 0:
        return None
    return int(np.random.SeedSequence([base_seed, draw]).generate_state(1, np.uint32)[0])


def draw_shuffle(base_seed: int, draw: int, row: int) -> np.random.Generator | None:
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


def _policies(rows: Sequence[RowRuns]) -> tuple[str, ...]:
    """The policies of a draw's rows: Default and Zeus, and the carbon-aware Zeus where it was replayed."""
    return (*POLICIES, CARBON_AWARE) if any(CARBON_AWARE in r.runs for r in rows) else POLICIES


def _runs(rows: Sequence[RowRuns], policy: str, column: str) -> np.ndarray:
    """A column of ``policy``'s runs over ``rows``, in history order (the rows' histories one after the other)."""
    parts = [getattr(r.runs[policy], column) for r in rows if policy in r.runs]
    return np.concatenate(parts) if parts else np.zeros(0)


def _totals(rows: Sequence[RowRuns]) -> dict[str, float]:
    """Energy (J) and time (s) of each policy, summed by numpy in history order."""
    out: dict[str, float] = {}
    for p in _policies(rows):
        out[f"{_key(p)}_j"] = float(np.sum(_runs(rows, p, "energy_j")))
        out[f"{_key(p)}_s"] = float(np.sum(_runs(rows, p, "time_s")))
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


def _peaks(rows: Sequence[RowRuns], gpu: str, key: str, plan: Plan) -> dict[str, float | None]:
    """Default and Zeus peak (kW), Zeus's GPU headroom and, where the row has a cluster size and an idle draw, the fleet
    (``power.power_bins`` / ``power_summary`` with their defaults: jobs plus the idle GPUs of the cluster over the trace's window),
    of ``rows`` on ``gpu`` (a row's GPU, or ``FLEET``)."""
    found: dict[str, float | None] = {"default_peak_kw": None, "zeus_peak_kw": None, "headroom_gpus": None, **dict.fromkeys(FLEET_TOTALS)}
    if not rows:
        return found
    sized = key in plan.capacities and gpu in plan.idle_w
    sizes = {plan.trace: plan.capacities[key]} if sized else None
    idle = {gpu: plan.idle_w[gpu]} if sized else None
    for row in power.power_summary(_power(plan.trace, [(gpu, rows)], sizes, idle), sizes, idle).iter_rows(named=True):
        policy = row["policy"]
        found[f"{policy}_peak_kw"] = row["peak_kw"]
        if sized:
            found[f"{policy}_idle_j"], found[f"{policy}_fleet_j"] = row["idle_energy_j"], row["fleet_energy_j"]
            found["gpu_idle_w"] = row["gpu_idle_w"]
        if policy == "zeus":
            found["headroom_gpus"] = row["headroom_gpus"]
            found["over_capacity_gpu_h"] = row["over_capacity_gpu_h"] if sized else None
    return found


def _power(trace: str, labelled: Sequence[tuple[str, Sequence[RowRuns]]], capacity: dict[str, Capacity] | None = None,
           idle_w: dict[str, float] | None = None) -> pl.DataFrame:
    """``power.power_bins`` of the Default and Zeus runs of each (gpu label, rows) (distinct labels), a run drawing over its
    simulated time: the table ``power_bins`` makes of their histories, the rows' relabelled and one after the other.

    Invariant: the cluster's power series is the sum, bin by bin, of its partitions' series (each job's runs lie in one
    partition, its recurring group's). It is computed here once over every run, in the one replay's order whether the
    partitions replayed here or as Dask tasks (``replayed.merged``), so it is the in-process series bit for bit; summed
    from per-partition series it agrees to float rounding only (each series accumulates its own runs' rates), which a
    test checks to 1e-9 of the peak."""
    keys, runs = [], []
    for gpu, rows in labelled:
        for policy in POLICIES:
            start = _runs(rows, policy, "start_s")
            if start.size:
                num_gpu = np.concatenate([r.jobs.num_gpu[r.runs[policy].job] for r in rows if policy in r.runs])
                keys.append((trace, gpu, policy))
                runs.append(power.KeyRuns(start, start + _runs(rows, policy, "time_s"), _runs(rows, policy, "energy_j"), num_gpu))
    if not keys:
        return pl.DataFrame(schema=power.POWER_SCHEMA)
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return power.key_power_bins([keys[i] for i in order], [runs[i] for i in order], capacity=capacity, idle_w=idle_w)


#: A row's steady-state totals: its Default energy (J) and the same jobs' once Zeus has converged (J); None without ratios.
STEADY_TOTALS = ("steady_default_j", "steady_zeus_j")


def _steady(row: RowRuns, ratios: dict[str, float] | None) -> dict[str, float | None]:
    if not ratios:
        return dict.fromkeys(STEADY_TOTALS)
    default = row.runs["default"]
    totals = anchoring.steady_state_totals(default.energy_j, row.dataset[default.job], row.datasets, ratios)
    return dict(zip(STEADY_TOTALS, totals, strict=True))


#: A row's CO2e (g) and cost of each policy, each run's energy at the intensity and price of when it ran; None: not priced.
PRICED_TOTALS = ("default_co2e_g", "zeus_co2e_g", "carbon_aware_co2e_g", "default_cost", "zeus_cost", "carbon_aware_cost")
#: A row's carbon-aware totals (J, s); None where none was replayed.
CARBON_AWARE_TOTALS = ("carbon_aware_j", "carbon_aware_s")


def _priced(row: RowRuns, plan: Plan) -> dict[str, float | None]:
    out: dict[str, float | None] = dict.fromkeys(PRICED_TOTALS)
    for rate, name in ((plan.grid, "co2e_g"), (plan.prices, "cost")):
        if rate is None:
            continue
        for p in _policies([row]):
            runs = row.runs[p]
            weighted = runs.energy_j / J_PER_KWH * rate.means(runs.start_s, runs.start_s + runs.time_s)
            out[f"{_key(p)}_{name}"] = float(np.sum(weighted))
    return out


#: A row's totals over ``Plan.horizon_s`` (J): Default's and Zeus's; None without a horizon.
HORIZON_TOTALS = ("horizon_default_j", "horizon_zeus_j")


def _horizon(runs: RowRuns, row: Row, plan: Plan) -> dict[str, float | None]:
    ratios = plan.converged.get(row.gpu)
    if plan.horizon_s is None or not ratios or row.key not in plan.capacities:
        return dict.fromkeys(HORIZON_TOTALS)
    window = plan.capacities[row.key]
    heads = runs.dataset[runs.jobs.bounds[:-1]]  # each group's workload
    ratio = np.array([ratios[runs.datasets[d]] for d in heads.tolist()])
    totals = anchoring.horizon_totals({p: (runs.runs[p].job, runs.runs[p].energy_j) for p in POLICIES}, runs.jobs.bounds, ratio,
                                      window.window_end_s - window.window_start_s, plan.horizon_s)
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


def _top_groups(row: RowRuns, top: int, label: str | None) -> list[dict[str, Any]]:
    """The ``top`` groups saving most energy (J), with their workload and job count (the label prefixes their name)."""
    if top == 0:
        return []
    jobs = row.jobs
    default, zeus = row.runs["default"], row.runs["zeus"]
    default_codes, default_j = _sums(jobs.group[default.job], default.energy_j)
    zeus_codes, zeus_j = _sums(jobs.group[zeus.job], zeus.energy_j)
    zeus_of = dict(zip(zeus_codes.tolist(), zeus_j.tolist(), strict=True))
    # each group's distinct job ids among its Default runs, and its workload
    pairs = np.unique(np.stack([jobs.group[default.job], jobs.job[default.job]]), axis=1)
    counts = np.bincount(pairs[0], minlength=len(jobs.names))
    rows = [(jobs.names[c], d, zeus_of.get(c, 0.0), c) for c, d in zip(default_codes.tolist(), default_j.tolist(), strict=True)]
    rows.sort(key=lambda r: (-(r[1] - r[2]), r[0]))
    return [{"group": f"{label}: {g}" if label else g, "jobs": int(counts[c]), "workload": row.datasets[int(row.dataset[jobs.bounds[c]])],
             "default_j": d, "zeus_j": z} for g, d, z, c in rows[:top]]


def _quartiles(model: np.ndarray, measured: np.ndarray) -> dict[str, Any]:
    q25, q50, q75 = (float(v) for v in np.quantile(measured / model, [0.25, 0.5, 0.75]))
    return {"jobs": int(model.size), "modelled_default_j": float(np.sum(model)), "ratio_p25": q25, "ratio_median": q50, "ratio_p75": q75}


def _measured(rows: Sequence[tuple[int, RowRuns]], measured: Measured | None) -> dict[str, Any] | None:
    """The modelled Default energy of the measured jobs (J) and quartiles over them of measured / modelled, over all of them
    and per row (``by_row``: each exported GPU type's, or each GPU's).

    Rows hold different jobs (a job replays in one row as exported; in each row on every GPU), so
    a job is its row (its place in the plan, ``i`` of ``rows``) and job id.
    """
    if measured is None or not rows:
        return None
    keys = np.concatenate([i * measured.stride + r.jobs.job[r.runs["default"].job] for i, r in rows])
    jobs, modelled = _sums(keys, np.concatenate([r.runs["default"].energy_j for _, r in rows]))
    at = np.minimum(np.searchsorted(jobs, measured.keys), max(jobs.size - 1, 0))
    known = (jobs.size > 0) & (jobs[at] == measured.keys)
    if not known.any():
        return None
    labels, model, meter = measured.rows[known], modelled[at[known]], measured.energy_j[known]
    out = _quartiles(model, meter)
    codes, first = np.unique(labels, return_index=True)
    out["by_row"] = {measured.row_names[row]: _quartiles(model[labels == row], meter[labels == row])
                     for row in codes[np.argsort(first)].tolist()}  # in the order the rows first appear among these jobs
    return out


@dataclass(frozen=True)
class Measured:
    """The plan's measured jobs as ``_measured`` finds them among a draw's runs: each as its row's place in the plan x
    ``stride`` + its id's index among the row's sorted job ids (``replayed.RowJobs.job``), its row key (as an index in
    ``row_names``) and measured energy (J); in the plan's order, a job whose row or id the plan does not hold as -1."""

    stride: int
    keys: np.ndarray
    rows: np.ndarray
    row_names: tuple[str, ...]
    energy_j: np.ndarray


def measured_jobs(plan: Plan) -> Measured | None:
    """``Measured`` of ``plan`` (None: no measured job)."""
    if plan.measured.height == 0:
        return None
    ids = [r.jobs["job_id"].unique().sort() for r in plan.rows]
    stride = max((len(i) for i in ids), default=0) + 1
    keys = np.full(plan.measured.height, -1, dtype=np.int64)
    where = {r.key: i for i, r in enumerate(plan.rows)}
    row_keys = plan.measured["row"]
    for key in row_keys.unique().to_list():
        if key not in where:
            continue
        i = where[key]
        mask = (row_keys == key).to_numpy()
        wanted = plan.measured["job_id"].filter(mask)
        at = np.minimum(ids[i].search_sorted(wanted).to_numpy(), max(len(ids[i]) - 1, 0))
        found = ids[i].gather(at) == wanted if len(ids[i]) else pl.Series([False] * len(wanted))
        keys[mask] = np.where(found.to_numpy(), i * stride + at, -1)
    names = tuple(row_keys.unique(maintain_order=True).to_list())
    rows = row_keys.replace_strict(names, list(range(len(names))), return_dtype=pl.Int64).to_numpy()
    return Measured(stride, keys, rows, names, plan.measured["measured_energy_j"].to_numpy())


#: The history columns a draw reads (totals, power, top groups, the measured jobs); the rest is dropped at once.
_HISTORY_COLUMNS = ("trace", "gpu", "policy", "group", "job_id", "dataset", "num_gpu", "start_time_s", "time_s", "energy_j")


def power_limit_history(profile: PowerLimitOnly, jobs: pl.DataFrame, trace: str, eta: float,
                        etas: np.ndarray | None = None) -> pl.DataFrame:
    """A power-limit-only row's runs as a history (``_HISTORY_COLUMNS``): Default at the highest limit for each job's elapsed
    time, Zeus as its GlobalPowerLimitOptimizer (``replay_power_limit_only``: the first job of each recurring group profiles,
    then the chosen limit). Anchored by construction: a job's work is its exported elapsed time at the highest limit.
    ``etas``: each job's carbon-aware eta (in ``jobs``' order): a carbon-aware Zeus too, each job after profiling at the
    limit its own eta chooses."""
    ordered = jobs.with_row_index("_row").sort("start_time_s", "_row")
    work = ordered.select(
        "group", (pl.col("end_time_s") - pl.col("start_time_s")).alias("runtime_s"), pl.col("num_gpu").cast(pl.Int64).alias("gpus"))
    runs = replay_power_limit_only(profile.measurements, profile.selector(eta), work)
    base = ordered.select(pl.lit(trace).alias("trace"), pl.lit(profile.gpu).alias("gpu"), "group", "job_id", "dataset", "num_gpu",
                          "start_time_s")
    parts = [
        base.with_columns(pl.lit("default").alias("policy"), runs["runtime_s"].alias("time_s"), runs["default_energy_j"].alias("energy_j")),
        base.with_columns(pl.lit("zeus").alias("policy"), runs["time_s"].alias("time_s"), runs["energy_j"].alias("energy_j")),
    ]
    if etas is not None:
        aware = replay_power_limit_only(profile.measurements, profile.selector(eta), work,
                                        etas=etas[ordered["_row"].to_numpy()].tolist())
        parts.append(base.with_columns(pl.lit(CARBON_AWARE).alias("policy"), aware["time_s"].alias("time_s"),
                                       aware["energy_j"].alias("energy_j")))
    return pl.concat(parts).select(_HISTORY_COLUMNS)


@dataclass(frozen=True)
class DrawShared:
    """What every draw of a plan reuses (``shared_by_draws``): each row's jobs in replay order (``replayed.row_jobs``; None for a row
    the compiled replay does not run), the workload tables of each GPU replayed, the measured jobs."""

    rows: tuple[replayed.RowJobs | None, ...]
    tables: dict[str, dict[str, WorkloadTable]]
    measured: Measured | None


def compiled(plan: Plan, row: Row) -> bool:
    """Whether ``row`` replays on the compiled replay straight into arrays (``replayed.replay_row``): not power-limit-only, no
    carbon-aware Zeus (the reference replay), and the engine ``simulate_trace`` would take is the compiled one."""
    return (row.power_limit is None and plan.carbon_aware is None and row.jobs.height > 0
            and fast.resolve_engine(plan.engine, row.jobs.height * len(POLICIES)) == "fast")


def shared_by_draws(plan: Plan, traces: Traces) -> DrawShared:
    """``DrawShared`` of ``plan``: built once for all its draws (``run_draws``), here or on each worker."""
    compiled_rows = [compiled(plan, r) for r in plan.rows]
    tables = {r.gpu: {w: build_table(traces, r.gpu, group_job_spec(traces, r.gpu, w)) for w in r.workloads}
              for r, c in zip(plan.rows, compiled_rows, strict=True) if c}
    return DrawShared(tuple(replayed.row_jobs(r.jobs, plan.partitions) if c else None for r, c in zip(plan.rows, compiled_rows, strict=True)), tables,
                    measured_jobs(plan))


def _replay_row(i: int, row: Row, plan: Plan, traces: Traces, shared: DrawShared, draw: int, base_seed: int) -> replayed.RowRuns:
    """Row ``i``'s runs in ``draw``: on the compiled replay straight into arrays where it can (``compiled``), else its history."""
    knob, shuffle = seed_knob(base_seed, draw), draw_shuffle(base_seed, draw, i)
    jobs_of = shared.rows[i]
    if jobs_of is not None:
        return replayed.replay_row(row.jobs, jobs_of, row.workloads, shared.tables[row.gpu], eta=plan.options.eta, beta=plan.options.beta, seed=knob,
                                   policies=POLICIES, shuffle=shuffle, anchored=plan.anchored, by_util=row.analogues)
    if row.power_limit is not None:
        jobs = row.jobs.with_columns(pl.lit(POWER_LIMIT_ONLY).alias("dataset"))
        etas = carbon_etas(jobs, plan.grid, *plan.carbon_aware) if plan.carbon_aware is not None and plan.grid is not None else None
        return replayed.from_history(power_limit_history(row.power_limit, jobs, plan.trace, plan.options.eta, etas), jobs)
    assigned = analogues.group_datasets(mapping.group_runtimes(row.jobs), analogues.group_utilisation(row.jobs), row.workloads,
                                        row.analogues, shuffle)
    jobs = mapping.finish_own(row.jobs.join(assigned, on="group", how="left"), plan.trace)
    history = simulate.simulate_trace(jobs, traces, row.gpu, eta=plan.options.eta, beta=plan.options.beta, policies=POLICIES, seed=knob,
                                      engine=plan.engine).select(_HISTORY_COLUMNS)
    if plan.carbon_aware is not None and plan.grid is not None:  # the reference replay: one energy weight per job
        weighted = jobs.with_columns(pl.Series("_eta", carbon_etas(jobs, plan.grid, *plan.carbon_aware)))
        aware = simulate.simulate_trace(weighted, traces, row.gpu, eta=plan.options.eta, beta=plan.options.beta, policies=("zeus",), seed=knob,
                                        engine="reference", job_eta="_eta").select(_HISTORY_COLUMNS)
        history = pl.concat([history, aware.with_columns(pl.lit(CARBON_AWARE).alias("policy"))])
    runs = replayed.from_history(history, jobs)
    return replace(runs, runs=replayed.anchor(runs.runs, runs.jobs)) if plan.anchored else runs


def meter(runs: RowRuns, i: int, measured: Measured) -> RowRuns:
    """``runs`` of the plan's row ``i`` with each of its metered jobs' energies scaled by metered / replayed Default energy: its
    Default energy is then the meter's and every policy keeps its ratio to Default for that job (times unchanged). A job
    without a meter, or whose replayed Default energy is 0, keeps its runs."""
    mine = (measured.keys >= 0) & (measured.keys // max(measured.stride, 1) == i)
    if not mine.any() or "default" not in runs.runs:
        return runs
    codes = measured.keys[mine] % measured.stride  # the job ids' indices among the row's sorted ids (``RowJobs.job``)
    default = runs.runs["default"]
    modelled = np.bincount(runs.jobs.job[default.job], weights=default.energy_j, minlength=measured.stride)
    scale = np.ones(measured.stride)
    known = modelled[codes] > 0
    scale[codes[known]] = measured.energy_j[mine][known] / modelled[codes[known]]
    scaled = {p: replace(r, energy_j=r.energy_j * scale[runs.jobs.job[r.job]]) for p, r in runs.runs.items()}
    return replace(runs, runs=scaled)


def run_draw(draw: int, *, plan: Plan, traces: Traces, base_seed: int, shared: DrawShared | None = None,
             ran: dict[int, RowRuns] | None = None) -> dict[str, Any]:
    """One draw (see the module docstring): per row its totals and peaks; the fleet's; the measured comparison; for draw 0
    also the top groups and the jobs per workload. ``shared``: ``shared_by_draws(plan, traces)`` (None: built here);
    ``ran``: rows' runs of this draw replayed elsewhere (by the plan's row index: the partitions' Dask tasks merged,
    ``partition_tasks``), the other rows replayed here."""
    shared = shared or shared_by_draws(plan, traces)
    rows: dict[str, dict[str, Any]] = {}
    replays: list[tuple[int, Row, replayed.RowRuns]] = []
    modelled: list[tuple[int, replayed.RowRuns]] = []  # as replayed, before the meter: what the measured comparison compares
    for i, row in enumerate(plan.rows):
        if row.jobs.height == 0:
            continue
        runs = ran[i] if ran is not None and i in ran else _replay_row(i, row, plan, traces, shared, draw, base_seed)
        if row.power_scale is not None:
            runs = standins.scale_runs(runs, row.power_scale)
        modelled.append((i, runs))
        if plan.metered and shared.measured is not None:
            runs = meter(runs, i, shared.measured)
        rows[row.key] = {**dict.fromkeys(CARBON_AWARE_TOTALS), **_totals([runs]), **_peaks([runs], row.gpu, row.key, plan),
                         **_steady(runs, plan.converged.get(row.gpu)), **_horizon(runs, row, plan), **_priced(runs, plan)}
        if draw == 0:
            counts = np.bincount(runs.dataset, minlength=len(runs.datasets)).tolist()
            rows[row.key]["jobs_by_workload"] = dict(zip(runs.datasets, counts, strict=True))
        replays.append((i, row, runs))
    out: dict[str, Any] = {"draw": draw, "rows": rows, "measured": None}
    if not replays:
        return out
    every = [r for _, _, r in replays]
    if plan.fleet:
        whole = {**_totals(every), **_peaks(every, FLEET, FLEET, plan), **_summed(rows, STEADY_TOTALS),
                 **_summed(rows, HORIZON_TOTALS), **_summed(rows, PRICED_TOTALS), **_summed(rows, CARBON_AWARE_TOTALS)}
        out["fleet"] = {**whole, **_whole_fleet(rows, plan)}
    out["measured"] = _measured(modelled, shared.measured)
    if draw == 0 and plan.keep_power:
        out["power"] = _power(plan.trace, [(FLEET, every)] if plan.fleet else [(row.key, [r]) for _, row, r in replays])
    if draw == 0:
        if plan.fleet:
            label = len(replays) > 1
            tops = [t for _, row, r in replays for t in _top_groups(r, plan.options.top, row.key if label else None)]
            tops.sort(key=lambda t: (-(t["default_j"] - t["zeus_j"]), t["group"]))
            out["top_groups"] = tops[: plan.options.top]
        else:
            out["top_groups"] = _top_groups(every[0], plan.options.top, None)
    return out


def engine_for(plan: Plan, samples: int) -> str | None:
    """``fast`` (the compiled replay) when all the draws together replay at least ``fast.AUTO_MIN_JOBS`` jobs, else None.

    ``auto`` decides per call, and one row of one draw is often below the threshold although the
    draws together are far above it; both engines give the same runs, bit for bit.
    """
    replays = samples * len(POLICIES) * sum(r.jobs.height for r in plan.rows)
    return "fast" if fast.available() and replays >= fast.AUTO_MIN_JOBS else None


def run_draws(plan: Plan, traces: Traces, samples: int, base_seed: int, runner: Runner, *, progress: bool = False) -> list[dict[str, Any]]:
    """Draws ``0 .. samples - 1`` on ``runner`` (in order); the traces go to the workers without memoized lookups."""
    plan = replace(plan, engine=engine_for(plan, samples)) if plan.engine is None else plan
    lean = Traces(traces.train, traces.power)
    common = {"plan": plan, "traces": lean, "base_seed": base_seed, "shared": shared_by_draws(plan, lean)}
    return fan_out(runner, run_draw, list(range(samples)), common, progress=progress, label="samples")


def spread(values: Sequence[float | None]) -> tuple[float | None, float | None, float | None]:
    """(median, 5th, 95th percentile) of ``values`` (linear interpolation; None when a value is missing)."""
    if not values or any(v is None or not np.isfinite(v) for v in values):
        return None, None, None
    array = np.sort(np.asarray(values, dtype=np.float64))
    lo, hi = INTERVAL_PCT
    median, p05, p95 = np.quantile(array, [0.5, lo / 100, hi / 100])
    return float(median), float(p05), float(p95)
