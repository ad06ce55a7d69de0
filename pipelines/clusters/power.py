"""Cluster power over time from a replay history, and its peak, p99 and GPU headroom per policy.

Input: a replay history (``zeus_cluster_history``: one row per run with start_time_s, end_time_s,
energy_j for the whole job, num_gpu) of one or more (trace, gpu, policy).

How a run draws power (an approximation; the traces give per-epoch averages, not power over time):
a run draws its simulated average power ``energy_j / time_s`` (``num_gpu`` GPUs, each at the
configuration's average draw, at most its power limit) over ``[start_time_s, start_time_s +
time_s)``: it starts where the replay starts it on the trace's clock and lasts as long as the
simulated configuration takes (its TTA scaled by runtime_ratio). That is ``occupancy="simulated"``,
the default and the assets'. It keeps every draw physical, so a lower power limit shows as a lower
draw over a longer time, and longer runs overlap more: both effects reach the cluster's peak. Its
caveat: the replay itself decides concurrency and a retry's start on the trace's slot
``[start_time_s, end_time_s)``, whose length differs from ``time_s`` (0.02x to 150x on the ITP and
ElasticFlow replays), so a retry may start before or after its failed run's simulated end.
``occupancy="trace"`` spreads ``energy_j / (end_time_s - start_time_s)`` over the trace's slot
instead (energy conserved, the replay's own timeline, but a busy GPU may then draw more than its
power limit): a sensitivity check. A run of zero length puts its whole energy into the bin
holding its start.

Bins: ``[k x bin_s, (k + 1) x bin_s)`` on the trace's clock, for every k from the bin holding a
policy's first start to the one holding its last end (so no run ends after the last bin). Each
bin's mean power is the energy of the run parts inside it over bin_s; bins without a run inside
the span are rows of 0 W.

Idle GPUs: given the cluster (``capacity``, trace -> ``pipelines.clusters.capacity.Capacity``: its
GPUs and the trace's window, first job start to last job end, rounded out to whole bins), each
bin inside the window also holds the GPUs not running a job, ``idle_gpus = max(cluster_gpus -
gpus_in_use, 0)`` (time averages over the bin; 0 outside the window), and their draw
``idle_power_w = idle_gpus x`` the GPU's idle draw (``pipelines.vocabulary``), in columns of their own:
``mean_power_w`` stays the jobs' power alone. Fleet power is their sum. ``power_summary`` adds
the whole cluster's idle draw over the part of the window outside a policy's bins, so that every
policy is charged for the same cluster over the same window (simulated runs may end after it:
their energy counts, the cluster's idle time after the window does not).

Invariant, per (trace, gpu, policy): sum(mean_power_w x (bin_end_s - bin_start_s)) equals the sum
of the history's energy_j to within 1e-9 relative (``energy_mismatches``); it holds on the job
column whatever the idle columns hold.

Algorithm: a histogram with partial-bin weights in numpy, O(runs + bins): each run adds its
first and last partial-bin energies with ``bincount`` and its constant power to the full bins in
between through a difference array (+p at the first full bin, -p after the last) summed once
(``power_kernel`` does the same in one compiled pass for a key of ``COMPILED_MIN_RUNS`` runs). The
keys are binned one at a time (their runs' arrays only), the difference arrays' running sums
carried from key to key, so that every bin gets the same floating-point additions, in the same
order, as one pass over all the runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from pipelines.clusters.capacity import Capacity
from pipelines.contracts.power import ClusterPower, ClusterPowerSummary
from pipelines.vocabulary import GPU_BY_NAME
from pipelines.vocabulary.units import KW_PER_W, S_PER_H

#: Default bin length (s).
BIN_S = 300.0
#: Rows are per (trace, gpu, policy).
KEYS: tuple[str, ...] = ("trace", "gpu", "policy")
DEFAULT_POLICY = "default"
#: Percentile of the p99 columns, and the share of Default's peak of the "time above" column.
P99 = 0.99
NEAR_PEAK = 0.9
#: Relative tolerance of the energy invariant.
ENERGY_RTOL = 1e-9
#: Where a run's energy is spread: its simulated duration from its start (default) or the trace's slot.
Occupancy = Literal["trace", "simulated"]

POWER_SCHEMA: pl.Schema = ClusterPower.create_empty().schema
SUMMARY_SCHEMA: pl.Schema = ClusterPowerSummary.create_empty().schema


class HistoryError(ValueError):
    """A history that cannot be turned into power (missing column, negative or non-finite value)."""


def _check_history(history: pl.DataFrame) -> None:
    needed = [*KEYS, "start_time_s", "end_time_s", "energy_j", "num_gpu"]
    missing = [c for c in needed if c not in history.columns]
    if missing:
        raise HistoryError(f"history: missing column(s) {missing}")
    bad = history.select(
        (~pl.col("start_time_s").is_finite() | pl.col("start_time_s").is_null()).any().alias("start_time_s: not finite"),
        (~pl.col("end_time_s").is_finite() | pl.col("end_time_s").is_null()).any().alias("end_time_s: not finite"),
        (pl.col("end_time_s") < pl.col("start_time_s")).any().alias("end_time_s: before start_time_s"),
        (~pl.col("energy_j").is_finite() | (pl.col("energy_j") < 0) | pl.col("energy_j").is_null())
        .any()
        .alias("energy_j: negative or not finite"),
        ((pl.col("num_gpu") < 0) | pl.col("num_gpu").is_null()).any().alias("num_gpu: negative or missing"),
    )
    problems = [name for name, flag in bad.row(0, named=True).items() if flag]
    if problems:
        raise HistoryError(f"history: {'; '.join(problems)}")


@dataclass(frozen=True)
class KeyRuns:
    """The runs of one (trace, gpu, policy) as arrays, in history order: where each starts and stops drawing power (s),
    its energy (J, the whole job) and GPUs."""

    start_s: np.ndarray
    end_s: np.ndarray
    energy_j: np.ndarray
    num_gpu: np.ndarray


def _check_runs(runs: Sequence[KeyRuns]) -> None:
    """``_check_history``'s checks of runs given as arrays (no nulls there), with its message."""
    flags = {"start_time_s: not finite": False, "end_time_s: not finite": False, "end_time_s: before start_time_s": False,
             "energy_j: negative or not finite": False, "num_gpu: negative or missing": False}
    for r in runs:
        for name, bad in (("start_time_s: not finite", ~np.isfinite(r.start_s)), ("end_time_s: not finite", ~np.isfinite(r.end_s)),
                          ("end_time_s: before start_time_s", r.end_s < r.start_s),
                          ("energy_j: negative or not finite", ~np.isfinite(r.energy_j) | (r.energy_j < 0)),
                          ("num_gpu: negative or missing", r.num_gpu < 0)):
            flags[name] = flags[name] or bool(np.any(bad))
    problems = [name for name, flag in flags.items() if flag]
    if problems:
        raise HistoryError(f"history: {'; '.join(problems)}")


def idle_draw_w(gpu: str, idle_w: Mapping[str, float] | None = None) -> float:
    """A GPU's idle draw (W): ``idle_w[gpu]`` if given, else the registry's; ``ValueError`` for a GPU with neither."""
    if idle_w is not None and gpu in idle_w:
        return float(idle_w[gpu])
    known = GPU_BY_NAME.get(gpu)
    if known is None:
        raise ValueError(f"GPU {gpu!r} has no idle draw: add it to pipelines.vocabulary.GPUS or pass idle_w")
    return known.idle_w


def _keyed_runs(history: pl.DataFrame) -> tuple[list[tuple[str, ...]], list[KeyRuns]]:
    """(each (trace, gpu, policy) of a non-empty history, sorted; its runs in history order)."""
    key_ids = history.select(KEYS).unique().sort(KEYS).with_row_index("_key")
    # each run's key as its row in key_ids (sorted keys): the dense rank of its keys' ranks, in integers (a join on the
    # key names would copy them for every run)
    composite = pl.lit(0, pl.Int64)
    for k in KEYS:
        composite = composite * (pl.col(k).n_unique() + 1) + pl.col(k).rank("dense").cast(pl.Int64)
    key = history.select((composite.rank("dense") - 1).cast(pl.UInt32).alias("_key"))["_key"].to_numpy()
    columns = [history[c].to_numpy() for c in ("start_time_s", "end_time_s", "energy_j", "num_gpu")]
    order = np.argsort(key, kind="stable")
    cuts = np.searchsorted(key[order], np.arange(1, key_ids.height))
    runs = [KeyRuns(*(c[part] for c in columns)) for part in np.split(order, cuts)]
    return [tuple(k) for k in key_ids.select(KEYS).iter_rows()], runs


#: Runs of one key from which ``power_kernel`` bins it: there 13 ns a run against numpy's 90 to 130, once the kernel is
#: loaded (0.5 s a process, 1.3 s to compile in a fresh cache), which a whatif on 1M allocations repays many times over
#: (20 draws x a dozen keys of 250,000 to 1M runs); the pipeline's keys (70,000 runs at most) stay in numpy.
COMPILED_MIN_RUNS = 100_000


def _key_bins(runs: KeyRuns, first_bin: int, n_bins: int, bin_s: float,
              carry: tuple[float, float, int]) -> tuple[np.ndarray, np.ndarray, tuple[float, float, int]]:
    """One key's runs (start_time_s, end_time_s, energy_j, num_gpu; bins ``first_bin`` .. ``first_bin + n_bins - 1``) ->
    (energy J, GPU-seconds) per bin, and ``carry`` (the running sums of the rate, count and open-run difference arrays,
    summed over the keys before) carried past this key's bins (see the module docstring: the algorithm). A key of
    ``COMPILED_MIN_RUNS`` runs or more is binned by ``power_kernel`` (the same operations in one compiled pass)."""
    if runs.start_s.size >= COMPILED_MIN_RUNS:
        from pipelines.clusters import power_kernel  # numba: imported only for a key this large

        key_bins: Any = power_kernel.key_bins  # a numba dispatcher, whose call mypy types as the dispatcher's own
        as_float = [np.ascontiguousarray(a, dtype=np.float64) for a in (runs.start_s, runs.end_s, runs.energy_j, runs.num_gpu)]
        energy, gpu_s, *after = key_bins(*as_float, first_bin, n_bins, bin_s, *carry)
        return energy, gpu_s, (float(after[0]), float(after[1]), int(after[2]))
    start, end, energy = runs.start_s, runs.end_s, runs.energy_j
    length = end - start
    k0 = np.floor(start / bin_s).astype(np.int64)
    k1 = np.maximum(np.ceil(end / bin_s).astype(np.int64) - 1, k0)
    point = length <= 0
    power = np.divide(energy, length, out=np.zeros_like(energy), where=~point)
    busy = np.where(point, 0.0, runs.num_gpu.astype(np.float64))  # a zero-length run occupies no GPU-time
    single = k0 == k1
    # Energy (and GPU-seconds) of the first and last partial bins; a run inside one bin puts all in its bin.
    head = np.where(single, length, (k0 + 1) * bin_s - start)
    tail = np.where(single, 0.0, end - k1 * bin_s)
    del start, end, length
    full = k1 > k0 + 1
    first, last = k0 - first_bin, k1 - first_bin  # each run's first and last bins, as rows of this key's bins
    del k0, k1
    bin_energy: np.ndarray = np.bincount(first, weights=np.where(single, energy, power * head), minlength=n_bins) \
        + np.bincount(last, weights=power * tail, minlength=n_bins)
    bin_gpu_s: np.ndarray = np.bincount(first, weights=busy * head, minlength=n_bins) \
        + np.bincount(last, weights=busy * tail, minlength=n_bins)
    del single, head, tail
    # Full bins k0+1 .. k1-1 at constant power: difference array, summed once (from the carried sums).
    opens, closes, power, busy = first[full] + 1, last[full], power[full], busy[full]
    del first, last
    rate = np.bincount(opens, weights=power, minlength=n_bins)[:n_bins]
    rate -= np.bincount(closes, weights=power, minlength=n_bins)[:n_bins]
    count = np.bincount(opens, weights=busy, minlength=n_bins)[:n_bins]
    count -= np.bincount(closes, weights=busy, minlength=n_bins)[:n_bins]
    # Where no full-bin run is open the exact sum is 0: an integer count of open runs zeroes the rounding residue.
    rate_sum, count_sum, open_sum = carry
    open_runs = np.cumsum(np.concatenate(([open_sum], np.bincount(opens, minlength=n_bins)[:n_bins]
                                          - np.bincount(closes, minlength=n_bins)[:n_bins])))[1:]
    rate_cum = np.cumsum(np.concatenate(([rate_sum], rate)))[1:]
    count_cum = np.cumsum(np.concatenate(([count_sum], count)))[1:]
    bin_energy += np.where(open_runs > 0, rate_cum, 0.0) * bin_s
    bin_gpu_s += np.where(open_runs > 0, count_cum, 0.0) * bin_s
    return bin_energy, bin_gpu_s, (float(rate_cum[-1]), float(count_cum[-1]), int(open_runs[-1]))


def power_bins(history: pl.DataFrame, bin_s: float = BIN_S, occupancy: Occupancy = "simulated",
               capacity: Mapping[str, Capacity] | None = None, idle_w: Mapping[str, float] | None = None) -> pl.DataFrame:
    """Mean cluster power (W) and mean busy GPUs per ``bin_s`` bin, per (trace, gpu, policy); idle GPUs and their draw.

    Columns: ``ClusterPower`` (trace, gpu, policy, bin_start_s, bin_end_s, mean_power_w,
    gpus_in_use, cluster_gpus, idle_gpus, idle_power_w); sorted by trace, gpu, policy,
    bin_start_s; every bin of a key's span, idle ones included. A key whose runs all have zero
    energy and length still gets its one bin. See the module docstring for the spreading rule,
    the idle columns and the energy invariant.

    ``capacity`` (trace -> the cluster's GPUs and window) fills the idle columns, each GPU idling
    at ``idle_draw_w(gpu, idle_w)``; without it they are null (no cluster size known). A trace
    missing from ``capacity`` raises ``ValueError``.

    ``occupancy="simulated"`` (the default, the assets'; needs ``time_s``): a run occupies
    ``[start_time_s, start_time_s + time_s)`` at its simulated average power ``energy_j / time_s``.
    ``"trace"`` (a sensitivity check): it occupies the trace's ``[start_time_s, end_time_s)`` at
    ``energy_j / (end_time_s - start_time_s)``.
    """
    if not (math.isfinite(bin_s) and bin_s > 0):
        raise ValueError(f"bin_s must be a positive number of seconds, got {bin_s!r}")
    if occupancy == "simulated":
        if "time_s" not in history.columns:
            raise HistoryError("history: missing column(s) ['time_s'] (needed by occupancy='simulated')")
        history = history.with_columns((pl.col("start_time_s") + pl.col("time_s")).alias("end_time_s"))
    elif occupancy != "trace":
        raise ValueError(f"occupancy must be 'trace' or 'simulated', got {occupancy!r}")
    _check_history(history)
    if history.height == 0:
        return pl.DataFrame(schema=POWER_SCHEMA)
    return key_power_bins(*_keyed_runs(history), bin_s=bin_s, capacity=capacity, idle_w=idle_w)


def key_power_bins(keys: Sequence[tuple[str, ...]], runs: Sequence[KeyRuns], bin_s: float = BIN_S,
                   capacity: Mapping[str, Capacity] | None = None, idle_w: Mapping[str, float] | None = None) -> pl.DataFrame:
    """``power_bins`` of runs given as arrays: ``keys`` (trace, gpu, policy), sorted and distinct, each with its runs in
    history order (at least one; the end of a run is where it stops drawing power: ``occupancy`` applied).

    The same table, bit for bit, as ``power_bins`` of the history these runs come from, without a frame of the runs
    (a whatif draw keeps its runs as arrays, ``pipelines.clusters.replayed``). ``HistoryError`` as ``power_bins``.
    """
    _check_runs(runs)
    # each key's first bin and the bin holding the last instant of its last run (a zero-length run: the bin of its start)
    first_bin = np.array([int(np.floor(np.min(r.start_s) / bin_s)) for r in runs], dtype=np.int64)
    last_bin = np.array([int(np.max(np.maximum(np.ceil(r.end_s / bin_s) - 1, np.floor(r.start_s / bin_s)))) for r in runs], dtype=np.int64)
    n_bins = last_bin - first_bin + 1
    offset = np.concatenate(([0], np.cumsum(n_bins)[:-1]))  # row of each key's first bin in the output
    n_total = int(n_bins.sum())
    bin_energy, bin_gpu_s = np.zeros(n_total), np.zeros(n_total)
    carry = (0.0, 0.0, 0)  # the running sums of the rate, count and open-run difference arrays before the key's first bin
    for key, key_runs in enumerate(runs):
        at, size = int(offset[key]), int(n_bins[key])
        energy, gpu_s, carry = _key_bins(key_runs, int(first_bin[key]), size, bin_s, carry)
        bin_energy[at : at + size], bin_gpu_s[at : at + size] = energy, gpu_s

    row_key = np.repeat(np.arange(len(n_bins)), n_bins)
    k = np.arange(n_total) - offset[row_key] + first_bin[row_key]
    bin_start = k * bin_s
    bins = pl.DataFrame(
        {
            **{c: pl.Series(c, [key[i] for key in keys], dtype=pl.String).gather(row_key) for i, c in enumerate(KEYS)},
            "bin_start_s": bin_start.astype(np.float64),
            "bin_end_s": (k + 1) * bin_s,
            "mean_power_w": np.maximum(bin_energy / bin_s, 0.0),  # clears rounding residue of order 1e-10 W
            "gpus_in_use": np.maximum(bin_gpu_s / bin_s, 0.0),
        },
    )
    return _with_idle(bins, bin_s, capacity, idle_w).cast(POWER_SCHEMA)


def _windows(capacity: Mapping[str, Capacity], bin_s: float) -> pl.DataFrame:
    """trace, cluster_gpus and the trace's window rounded out to whole bins (``_w0``, ``_w1``, s)."""
    return pl.DataFrame(
        {"trace": list(capacity), "cluster_gpus": [c.cluster_gpus for c in capacity.values()],
         "_w0": [math.floor(c.window_start_s / bin_s) * bin_s for c in capacity.values()],
         "_w1": [math.ceil(c.window_end_s / bin_s) * bin_s for c in capacity.values()]},
        schema={"trace": pl.String, "cluster_gpus": pl.Int64, "_w0": pl.Float64, "_w1": pl.Float64},
    )


def _with_idle(bins: pl.DataFrame, bin_s: float, capacity: Mapping[str, Capacity] | None,
               idle_w: Mapping[str, float] | None) -> pl.DataFrame:
    """``bins`` with cluster_gpus, idle_gpus and idle_power_w (null without ``capacity``)."""
    if capacity is None:
        return bins.with_columns(pl.lit(None, pl.Int64).alias("cluster_gpus"), pl.lit(None, pl.Float64).alias("idle_gpus"),
                                 pl.lit(None, pl.Float64).alias("idle_power_w"))
    missing = sorted(set(bins["trace"].unique()) - set(capacity))
    if missing:
        raise ValueError(f"capacity: no cluster size for trace(s) {missing}")
    draw = {g: idle_draw_w(g, idle_w) for g in bins["gpu"].unique()}
    inside = (pl.col("bin_start_s") >= pl.col("_w0")) & (pl.col("bin_end_s") <= pl.col("_w1"))
    idle = pl.when(inside).then((pl.col("cluster_gpus") - pl.col("gpus_in_use")).clip(lower_bound=0.0)).otherwise(0.0)
    return (
        bins.join(_windows(capacity, bin_s), on="trace", how="left", maintain_order="left")
        .with_columns(idle.alias("idle_gpus"))
        .with_columns((pl.col("idle_gpus") * pl.col("gpu").replace_strict(draw, return_dtype=pl.Float64)).alias("idle_power_w"))
        .drop("_w0", "_w1")
    )


def energy_mismatches(power: pl.DataFrame, history: pl.DataFrame, rtol: float = ENERGY_RTOL) -> list[str]:
    """Keys whose binned energy differs from the history's total by more than ``rtol`` (relative); [] if none.

    Binned energy = sum(mean_power_w x (bin_end_s - bin_start_s)); a key present in only one of
    the two tables is a mismatch too.
    """
    binned = power.group_by(KEYS).agg(((pl.col("bin_end_s") - pl.col("bin_start_s")) * pl.col("mean_power_w")).sum().alias("binned"))
    total = history.group_by(KEYS).agg(pl.col("energy_j").sum().alias("total"))
    joined = binned.join(total, on=list(KEYS), how="full", coalesce=True)
    problems = []
    for row in joined.sort(KEYS).iter_rows(named=True):
        name = "/".join(str(row[k]) for k in KEYS)
        got, want = row["binned"], row["total"]
        if got is None or want is None:
            problems.append(f"{name}: only in the {'history' if got is None else 'power table'}")
        elif abs(got - want) > rtol * max(abs(want), 1e-300):
            problems.append(f"{name}: binned {got!r} J != history {want!r} J (rel {abs(got - want) / max(abs(want), 1e-300):.2e})")
    return problems


def power_summary(power: pl.DataFrame, capacity: Mapping[str, Capacity] | None = None,
                  idle_w: Mapping[str, float] | None = None) -> pl.DataFrame:
    """Per (trace, gpu, policy): peak, p99 and mean kW, time near Default's peak, busy GPUs, GPU headroom; fleet energy.

    ``power`` is ``power_bins``'s table (every bin of each key's span, all of length ``bin_s``).
    Columns are ``ClusterPowerSummary``'s:

    * peak_kw = max bin mean; p99_kw = 99th percentile of the bin means (linear interpolation;
      bins are of equal length, so it is the power exceeded during at most 1% of the span);
      mean_kw = energy / span.
    * default_peak_kw, peak_vs_default_pct, time_above_90pct_default_peak_s (s, a multiple of
      bin_s): against the Default policy of the same trace and GPU (null where it is absent).
    * gpu_p99_w: per-busy-GPU draw, the 99th percentile over bins of mean_power_w / gpus_in_use,
      each bin weighted by its GPU-seconds (the lowest value whose weighted CDF reaches 0.99):
      what a busy GPU draws under this policy, exceeded in at most 1% of busy GPU-time.
    * headroom_gpus = floor((default_peak_kw x 1000 - p99_kw x 1000) / gpu_p99_w): how many more
      GPUs of this kind fit under Default's peak when the cluster runs this policy, planning the
      existing load at its p99 and each added GPU busy at gpu_p99_w. Default's own row gives the
      headroom of planning at p99 alone; Zeus's row minus Default's is what Zeus adds. All of
      these are on the jobs' power (``mean_power_w``) alone.
    * energy_saved_pct = 100 x (1 - energy_j / Default's): job energy saved vs Default.
    * The fleet, given ``capacity`` (the one ``power_bins`` was given; else null): window_s, the
      trace's window rounded out to whole bins; busy_gpu_h; idle_gpu_h = idle GPU-hours of the policy's bins +
      cluster_gpus x the part of the window outside them; over_capacity_gpu_h; idle_energy_j =
      idle_gpu_h x the GPU's idle draw (``idle_draw_w(gpu, idle_w)``, as in ``power_bins``);
      fleet_energy_j = energy_j + idle_energy_j; fleet_peak_kw (bin means of jobs + idle);
      fleet_mean_kw = fleet energy over the union of the window and the policy's bins;
      fleet_energy_saved_pct against Default's fleet energy.
    """
    if power.height == 0:
        return pl.DataFrame(schema=SUMMARY_SCHEMA)
    lengths = power.select((pl.col("bin_end_s") - pl.col("bin_start_s")).unique())["bin_end_s"]
    if lengths.len() != 1:
        raise ValueError(f"power table: bins of several lengths {sorted(lengths.to_list())[:5]}; summarize one bin length at a time")
    bin_s = float(lengths[0])
    per_gpu = pl.when(pl.col("gpus_in_use") > 0).then(pl.col("mean_power_w") / pl.col("gpus_in_use"))
    weight = pl.col("gpus_in_use") * (pl.col("bin_end_s") - pl.col("bin_start_s"))
    default_peak = (
        power.filter(pl.col("policy") == DEFAULT_POLICY)
        .group_by("trace", "gpu")
        .agg(pl.col("mean_power_w").max().alias("default_peak_w"))
    )
    near_peak = pl.col("mean_power_w") > NEAR_PEAK * pl.col("default_peak_w")
    # Aggregated in W and converted after. Ratios are written as differences over a column: polars divides a
    # column by a scalar as a product with its reciprocal, which would leave Default 1e-14 % off its own peak.
    headroom = ((pl.col("default_peak_w") - pl.col("p99_w")) / pl.col("gpu_p99_w")).floor()
    return (
        power.join(default_peak, on=["trace", "gpu"], how="left")
        .with_columns(per_gpu.alias("_per_gpu"), weight.alias("_weight"))
        .group_by(KEYS)
        .agg(
            pl.lit(bin_s).alias("bin_s"),
            pl.len().cast(pl.Int64).alias("bins"),
            (pl.col("mean_power_w").sum() * bin_s).alias("energy_j"),
            pl.col("mean_power_w").max().alias("peak_w"),
            pl.col("mean_power_w").quantile(P99, interpolation="linear").alias("p99_w"),
            pl.col("mean_power_w").mean().alias("mean_w"),
            pl.col("default_peak_w").first(),
            pl.when(pl.col("default_peak_w").first().is_not_null()).then(near_peak.sum() * bin_s).alias("time_above_90pct_default_peak_s"),
            pl.col("gpus_in_use").max().alias("peak_gpus_in_use"),
            _weighted_quantile("_per_gpu", "_weight", P99).alias("gpu_p99_w"),
            pl.col("bin_start_s").min().alias("_first_s"),
            pl.col("bin_end_s").max().alias("_last_s"),
            pl.col("cluster_gpus").first(),
            (pl.col("gpus_in_use").sum() * bin_s).alias("_busy_gpu_s"),
            (pl.col("idle_gpus").sum() * bin_s).alias("_idle_gpu_s"),
            ((pl.col("gpus_in_use") - pl.col("cluster_gpus")).clip(lower_bound=0.0).sum() * bin_s).alias("_over_gpu_s"),
            (pl.col("idle_power_w").sum() * bin_s).alias("_idle_j"),
            (pl.col("mean_power_w") + pl.col("idle_power_w")).max().alias("_fleet_peak_w"),
        )
        .with_columns(
            *((pl.col(f"{name}_w") * KW_PER_W).alias(f"{name}_kw") for name in ("peak", "p99", "mean", "default_peak")),
            (100 * (pl.col("default_peak_w") - pl.col("peak_w")) / pl.col("default_peak_w")).alias("peak_vs_default_pct"),
            pl.when(pl.col("gpu_p99_w") > 0).then(headroom).alias("headroom_gpus"),
        )
        .pipe(_fleet, bin_s, capacity, idle_w)
        .select(list(SUMMARY_SCHEMA))
        .cast(SUMMARY_SCHEMA)
        .sort(KEYS)
    )


def _fleet(summary: pl.DataFrame, bin_s: float, capacity: Mapping[str, Capacity] | None,
           idle_w: Mapping[str, float] | None) -> pl.DataFrame:
    """The fleet columns of ``power_summary`` from its per-key aggregates (null without ``capacity``)."""
    if capacity is None:
        fleet = summary.with_columns(pl.lit(None, pl.Float64).alias(c) for c in (
            "gpu_idle_w", "window_s", "busy_gpu_h", "idle_gpu_h", "over_capacity_gpu_h", "idle_energy_j", "fleet_peak_kw",
            "fleet_energy_j", "fleet_mean_kw")).with_columns(pl.lit(None, pl.Int64).alias("cluster_gpus"))
    else:
        if summary["cluster_gpus"].null_count():
            raise ValueError("power_summary: capacity given, but the power bins were made without it (cluster_gpus is null)")
        missing = sorted(set(summary["trace"]) - set(capacity))
        if missing:
            raise ValueError(f"capacity: no cluster size for trace(s) {missing}")
        windows = _windows(capacity, bin_s).drop("cluster_gpus")
        draws = {g: idle_draw_w(g, idle_w) for g in summary["gpu"].unique()}
        covered = (pl.min_horizontal("_last_s", "_w1") - pl.max_horizontal("_first_s", "_w0")).clip(lower_bound=0.0)
        outside_gpu_s = (pl.col("_w1") - pl.col("_w0") - covered) * pl.col("cluster_gpus")
        fleet = (
            summary.join(windows, on="trace", how="left")
            .with_columns(pl.col("gpu").replace_strict(draws, return_dtype=pl.Float64).alias("gpu_idle_w"),
                          (pl.col("_w1") - pl.col("_w0")).alias("window_s"))
            .with_columns(
                (pl.col("_busy_gpu_s") / S_PER_H).alias("busy_gpu_h"),
                ((pl.col("_idle_gpu_s") + outside_gpu_s) / S_PER_H).alias("idle_gpu_h"),
                (pl.col("_over_gpu_s") / S_PER_H).alias("over_capacity_gpu_h"),
                (pl.col("_idle_j") + outside_gpu_s * pl.col("gpu_idle_w")).alias("idle_energy_j"),
                (pl.col("_fleet_peak_w") * KW_PER_W).alias("fleet_peak_kw"),
            )
            .with_columns((pl.col("energy_j") + pl.col("idle_energy_j")).alias("fleet_energy_j"))
            .with_columns((pl.col("fleet_energy_j") * KW_PER_W
                           / (pl.max_horizontal("_last_s", "_w1") - pl.min_horizontal("_first_s", "_w0"))).alias("fleet_mean_kw"))
        )
    baseline = fleet.filter(pl.col("policy") == DEFAULT_POLICY).select(
        "trace", "gpu", pl.col("energy_j").alias("_default_j"), pl.col("fleet_energy_j").alias("_default_fleet_j"))
    return fleet.join(baseline, on=["trace", "gpu"], how="left").with_columns(
        pl.when(pl.col("_default_j") > 0).then(100 * (pl.col("_default_j") - pl.col("energy_j")) / pl.col("_default_j"))
        .alias("energy_saved_pct"),
        pl.when(pl.col("_default_fleet_j") > 0)
        .then(100 * (pl.col("_default_fleet_j") - pl.col("fleet_energy_j")) / pl.col("_default_fleet_j"))
        .alias("fleet_energy_saved_pct"),
    )


def _weighted_quantile(value: str, weight: str, q: float) -> pl.Expr:
    """Lowest ``value`` whose ``weight``-weighted CDF reaches ``q`` (null values and zero weights ignored)."""
    keep = pl.col(value).is_not_null() & (pl.col(weight) > 0)
    v = pl.col(value).filter(keep)
    w = pl.col(weight).filter(keep)
    cdf = w.sort_by(v).cum_sum()
    return v.sort().filter(cdf >= q * w.sum()).first()


def load_duration(power: pl.DataFrame, keys: Sequence[str] = KEYS) -> pl.DataFrame:
    """The load-duration curve per key: bin powers sorted descending against the time at or above them.

    Columns: keys, hours (time at or above this power: (rank + 1) x bin length / 3600, h), power_kw.
    """
    return (
        power.sort([*keys, "mean_power_w"], descending=[False] * len(keys) + [True])
        .with_columns(
            ((pl.col("bin_end_s") - pl.col("bin_start_s")).cum_sum().over(keys) / S_PER_H).alias("hours"),
            (pl.col("mean_power_w") * KW_PER_W).alias("power_kw"),
        )
        .select(*keys, "hours", "power_kw")
    )
