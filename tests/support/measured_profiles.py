"""Measured power profiles as the harness writes them (``measure profile``), made up for the tests: an A100-like GPU and a CPU."""

from __future__ import annotations

import polars as pl

from pipelines.measure.harness import PROFILE_SCHEMA

GPU = "a100-sxm4-40gb"
BATCH_SIZES = (32, 64, 128, 256, 512, 1024)
LIMITS_W = (200, 250, 300, 400)
#: time per epoch (s) at 400 W and power drawn unconstrained (W) of cifar100/shufflenetv2, A100-like.
TPE_400 = {32: 41.7, 64: 21.9, 128: 11.8, 256: 7.1, 512: 5.6, 1024: 5.2}
DRAW_W = {32: 118.0, 64: 151.0, 128: 197.0, 256: 243.0, 512: 262.0, 1024: 271.0}


def profile_rows(gpu: str = GPU, limits: tuple[int, ...] = LIMITS_W) -> pl.DataFrame:
    """A measured A100 profile in the harness's schema: lower limits slow the big batches that draw more than the limit."""
    rows = []
    for limit in limits:
        for bs in BATCH_SIZES:
            power = min(DRAW_W[bs], 0.95 * limit)
            tpe = TPE_400[bs] * (DRAW_W[bs] / power) ** 0.6
            sps = 50_000 / tpe
            rows.append({
                "dataset": "cifar100", "network": "shufflenetv2", "batch_size": bs, "optimizer": "adadelta", "power_limit": limit,
                "time_per_epoch": tpe, "average_power": power, "gpu": gpu, "gpu_name": "NVIDIA A100-SXM4-40GB",
                "gpu_uuid": "GPU-5c6a8d1e-0000-0000-0000-000000000000", "device": "cuda:0", "method": "counter",
                "samples_per_second": sps, "energy_per_epoch": power * tpe, "cpu_threads": 8, "iterations": 50,
                "warmup_iterations": 10, "window_s": 50 * bs / sps, "window_energy_j": power * 50 * bs / sps, "short_window": False,
                "power_limit_set": True, "note": None, "torch_version": "2.13.0", "measured_at": "2026-11-20T10:00:00+00:00",
            })  # fmt: skip
    return pl.DataFrame(rows, schema=PROFILE_SCHEMA)


def time_only_rows() -> pl.DataFrame:
    rows = profile_rows("cpu-amd-epyc", (200,)).head(2)
    reason = "no energy measurement: no RAPL: /sys/class/powercap does not exist"
    return rows.with_columns(
        average_power=pl.lit(None, pl.Float64), energy_per_epoch=pl.lit(None, pl.Float64), window_energy_j=pl.lit(None, pl.Float64),
        power_limit=pl.lit(None, pl.Int64), method=pl.lit("none"), note=pl.lit(reason), device=pl.lit("cpu"),
    )  # fmt: skip
