"""``power._key_bins`` compiled: one pass over a key's runs in place of numpy's two dozen (numba; imported for a key of
``power.COMPILED_MIN_RUNS`` runs or more, so that loading the code location does not import numba).

Every bin gets the floating-point operations numpy's version gives it, in the same order: each ``np.bincount`` is a
sequential sum in run order (one accumulator per bincount here), its results added as numpy adds the arrays, and the
difference arrays' running sums are ``np.cumsum``'s (sequential). The tables are the same, bit for bit (tests/clusters/
test_power.py).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def key_bins(start: np.ndarray, end: np.ndarray, energy: np.ndarray, num_gpu: np.ndarray, first_bin: int, n_bins: int,
             bin_s: float, rate_sum: float, count_sum: float, open_sum: int) -> tuple[np.ndarray, np.ndarray, float, float, int]:
    """(energy J, GPU-seconds) per bin of one key's runs (s, s, J, GPUs: contiguous float64), and the running sums carried
    past its bins (``power._key_bins``: the same arguments, its carry unpacked)."""
    first_e, last_e = np.zeros(n_bins), np.zeros(n_bins)  # the four bincounts over each run's first and last bins
    first_g, last_g = np.zeros(n_bins), np.zeros(n_bins)
    rate_in, rate_out = np.zeros(n_bins), np.zeros(n_bins)  # the four over full-bin runs' opening and closing bins
    count_in, count_out = np.zeros(n_bins), np.zeros(n_bins)
    opened = np.zeros(n_bins, dtype=np.int64)
    for i in range(start.size):
        s, e = start[i], end[i]
        length = e - s
        k0 = np.int64(math.floor(s / bin_s))
        k1 = max(np.int64(math.ceil(e / bin_s)) - 1, k0)
        point = length <= 0
        power = 0.0 if point else energy[i] / length
        busy = 0.0 if point else float(num_gpu[i])
        single = k0 == k1
        head = length if single else (k0 + 1) * bin_s - s
        tail = 0.0 if single else e - k1 * bin_s
        first, last = k0 - first_bin, k1 - first_bin
        first_e[first] += energy[i] if single else power * head
        last_e[last] += power * tail
        first_g[first] += busy * head
        last_g[last] += busy * tail
        if k1 > k0 + 1:
            rate_in[first + 1] += power
            rate_out[last] += power
            count_in[first + 1] += busy
            count_out[last] += busy
            opened[first + 1] += 1
            opened[last] -= 1
    bin_energy, bin_gpu_s = np.empty(n_bins), np.empty(n_bins)
    for j in range(n_bins):
        rate_sum += rate_in[j] - rate_out[j]
        count_sum += count_in[j] - count_out[j]
        open_sum += opened[j]
        bin_energy[j] = (first_e[j] + last_e[j]) + (rate_sum if open_sum > 0 else 0.0) * bin_s
        bin_gpu_s[j] = (first_g[j] + last_g[j]) + (count_sum if open_sum > 0 else 0.0) * bin_s
    return bin_energy, bin_gpu_s, rate_sum, count_sum, open_sum
