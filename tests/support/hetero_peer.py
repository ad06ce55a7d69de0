"""The published Zeus² allocation code as a peer (bench/bench_hetero.py and tests/hetero/).

Written like the published zeus_heterogeneous_algorithm.py (AditiR-42/zeus): ``scipy.optimize.curve_fit``
quadratics per power limit, lists of (batch, limit index) pairs for batch sizes range(0, G, step), a
double loop over both lists keeping the pairs whose batches sum to G, scalar costs with negative
fitted values clipped to 0, results in a dict and ``sorted(results.items(), key=cost)[0]`` as the
optimum. Parameters G and step replace its hard-coded 4096 and 1, and progress prints are left out;
nothing else differs. ``published_optimum`` is the same cost, vectorised, for the full grid.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from pipelines.hetero.fit import GpuFit


def peer_load_json_data(filename: str | Path) -> list[dict[str, float]]:
    with open(filename) as f:
        data = json.load(f)
    rows = []
    for k, val in data.items():
        for v in val:
            rows.append({"batch_size": int(k), "power_limit": v["power_limit"], "time_per_epoch": v["time"], "average_power": v["energy"] / v["time"]})
    return rows


def peer_fitcurve(rows: list[dict[str, float]]) -> tuple[list[float], list[np.ndarray], list[np.ndarray]]:
    """(power limits in first-appearance order, time params per limit, power params per limit): curve_fit as published."""
    from scipy.optimize import curve_fit

    power_limits = list(dict.fromkeys(r["power_limit"] for r in rows))

    def func(x, c, d, e):
        return c * x**2 + d * x + e

    fitted: dict[str, list[np.ndarray]] = {"time_per_epoch": [], "average_power": []}
    for column, out in fitted.items():
        for p in power_limits:
            x_values = [r["batch_size"] for r in rows if r["power_limit"] == p]
            y_values = [r[column] for r in rows if r["power_limit"] == p]
            x_values, y_values = zip(*sorted(zip(x_values, y_values, strict=True)), strict=True)
            params, _ = curve_fit(func, np.array(x_values), np.array(y_values), maxfev=100000)
            out.append(params)
    return [float(p) for p in power_limits], fitted["time_per_epoch"], fitted["average_power"]


def peer_find_optimal_allocation(
    power_limits_df1, power_limits_df2, naive_version, time_per_epoch_df1, time_per_epoch_df2, avg_power_df1, avg_power_df2,
    global_batch_size: int = 4096, step: int = 1,
) -> tuple[dict, float]:
    start_time = time.perf_counter()
    batchsizes = range(0, global_batch_size, step)
    batch_and_power_df1 = []
    batch_and_power_df2 = []
    # GPU 1 is the stronger one (gpuStrengths = [1, 2]): the heuristic pins it to its lowest limit.
    if not naive_version:
        min_power = min(power_limits_df1)
        for b in batchsizes:
            batch_and_power_df1.append((b, list(power_limits_df1).index(min_power)))
    else:
        for b in batchsizes:
            for i in range(len(power_limits_df1)):
                batch_and_power_df1.append((b, i))
    for b in batchsizes:
        for i in range(len(power_limits_df2)):
            batch_and_power_df2.append((b, i))
    results5 = {}
    for b1, p1 in batch_and_power_df1:
        for b2, p2 in batch_and_power_df2:
            b = [b1, b2]
            if sum(b) == global_batch_size:
                result = 0
                for i, batch in enumerate(b):
                    if i % 4 == 0:
                        time_per_epoch = time_per_epoch_df1[p1][0] * batch**2 + time_per_epoch_df1[p1][1] * batch + time_per_epoch_df1[p1][2]
                        time_per_epoch = max(time_per_epoch, 0)
                        average_power = avg_power_df1[p1][0] * batch**2 + avg_power_df1[p1][1] * batch + avg_power_df1[p1][2]
                        average_power = max(average_power, 0)
                        power_limit = power_limits_df1[p1]
                    elif i % 4 == 1:
                        time_per_epoch = time_per_epoch_df2[p2][0] * batch**2 + time_per_epoch_df2[p2][1] * batch + time_per_epoch_df2[p2][2]
                        time_per_epoch = max(time_per_epoch, 0)
                        average_power = avg_power_df2[p2][0] * batch**2 + avg_power_df2[p2][1] * batch + avg_power_df2[p2][2]
                        average_power = max(average_power, 0)
                        power_limit = power_limits_df2[p2]
                    result += (0.5 * average_power + 0.5 * power_limit) * time_per_epoch
                results5[((b1, power_limits_df1[p1]), (b2, power_limits_df2[p2]))] = result
    return results5, time.perf_counter() - start_time


def peer_calculate_baseline(power_limits_df1, power_limits_df2, time_per_epoch_df1, time_per_epoch_df2, avg_power_df1, avg_power_df2) -> dict:
    """The published even split as its code computes it: ``result +=`` sits after the loop over the GPUs."""
    global_batch_size = 4096
    temp_results = {}
    for p1 in range(len(power_limits_df1)):
        for p2 in range(len(power_limits_df2)):
            b = [2048, 2048]
            if sum(b) == global_batch_size:
                result = 0
                for i, batch in enumerate(b):
                    if i % 4 == 0:
                        time_per_epoch = time_per_epoch_df1[p1][0] * batch**2 + time_per_epoch_df1[p1][1] * batch + time_per_epoch_df1[p1][2]
                        average_power = avg_power_df1[p1][0] * batch**2 + avg_power_df1[p1][1] * batch + avg_power_df1[p1][2]
                        power_limit = power_limits_df1[p1]
                    elif i % 4 == 1:
                        time_per_epoch = time_per_epoch_df2[p2][0] * batch**2 + time_per_epoch_df2[p2][1] * batch + time_per_epoch_df2[p2][2]
                        average_power = avg_power_df2[p2][0] * batch**2 + avg_power_df2[p2][1] * batch + avg_power_df2[p2][2]
                        power_limit = power_limits_df2[p2]
                result += (0.5 * average_power + 0.5 * power_limit) * time_per_epoch
            temp_results[((2048, power_limits_df1[p1]), (2048, power_limits_df2[p2]))] = result
    return temp_results


def peer_top(results: dict) -> tuple[tuple, float]:
    """The published optimum: ``sorted(results.items(), key=lambda item: item[1])[0]`` (first of equal costs)."""
    return sorted(results.items(), key=lambda item: item[1])[0]


def published_optimum(fits: list[GpuFit], pin_first: bool) -> tuple[tuple[int, int], tuple[int, int], float]:
    """The published cost for b1 = 1..4095 and every limit pair, first minimum in (b1, p1, p2) order."""
    b1 = np.arange(0, 4096)[:, None, None]  # batchsizes = range(0, 4096): b1 = 0 would need b2 = 4096, not in range
    b2 = 4096 - b1
    first, second = fits
    rows1 = [first.min_limit_index()] if pin_first else range(first.n_limits)
    def term(fit: GpuFit, b: np.ndarray, rows, axis: int) -> np.ndarray:
        c, a = fit.time_coef[list(rows)], fit.power_coef[list(rows)]
        shape = [1, 1, 1]
        shape[axis] = len(rows)
        t = c[:, 0].reshape(shape) * b**2 + c[:, 1].reshape(shape) * b + c[:, 2].reshape(shape)
        p = a[:, 0].reshape(shape) * b**2 + a[:, 1].reshape(shape) * b + a[:, 2].reshape(shape)
        return (0.5 * np.where(p < 0, 0, p) + 0.5 * fit.power_limits[list(rows)].reshape(shape).astype(float)) * np.where(t < 0, 0, t)
    cost = term(first, b1, rows1, 1) + term(second, b2, range(second.n_limits), 2)
    cost[0] = np.inf
    i, j, k = np.unravel_index(int(np.argmin(cost)), cost.shape)
    return (int(i), 4096 - int(i)), (int(first.power_limits[list(rows1)[j]]), int(second.power_limits[k])), float(cost[i, j, k])
