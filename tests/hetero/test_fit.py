"""Quadratic least-squares fits per GPU and power limit."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines.hetero.fit import FitError, evaluate, fit_gpu, fit_profiles


def frame(rows: list[tuple[int, int, float, float]], gpu: str = "a10", workload: str = "w") -> pl.DataFrame:
    return pl.DataFrame(
        [(gpu, workload, b, p, e, t) for b, p, e, t in rows],
        schema={"gpu": pl.String, "workload": pl.String, "batch_size": pl.Int64, "power_limit": pl.Int64, "energy_j": pl.Float64, "time_s": pl.Float64},
        orient="row",
    )


def test_recovers_exact_quadratics_and_keeps_limit_order() -> None:
    rows = []
    for b in (16, 48, 100, 300, 700):
        for p, (c2, c1, c0), power in ((250, (2e-7, 1e-3, 0.2), 180.0), (100, (5e-7, 3e-3, 0.1), 95.0)):
            t = c2 * b * b + c1 * b + c0
            rows.append((b, p, power * t, t))
    fit = fit_gpu(frame(rows[::-1]))  # reversed: 100 W appears first now
    assert fit.power_limits.tolist() == [100, 250]
    assert np.allclose(fit.time_coef, [[5e-7, 3e-3, 0.1], [2e-7, 1e-3, 0.2]], rtol=1e-8, atol=1e-14)
    assert np.allclose(fit.power_coef, [[0, 0, 95.0], [0, 0, 180.0]], atol=1e-9)
    assert fit.min_limit_index() == 0


def test_least_squares_on_noisy_points_equals_the_normal_equations() -> None:
    b = np.array([32.0, 64, 128, 256, 512])
    t = np.array([0.41, 0.69, 1.52, 2.9, 6.3])
    fit = fit_gpu(frame([(int(x), 70, 60.0 * y, y) for x, y in zip(b, t, strict=True)], gpu="t4"))
    vander = np.stack([b**2, b, np.ones_like(b)], axis=1)
    expected = np.linalg.solve(vander.T @ vander, vander.T @ t)
    assert np.allclose(fit.time_coef[0], expected, rtol=1e-7)


def test_evaluate_clips_and_keeps_shape() -> None:
    coef = np.array([[0.0, -1.0, 10.0], [1.0, 0.0, 0.0]])
    values = evaluate(coef, np.array([5, 20]))
    assert values.tolist() == [[5.0, 0.0], [25.0, 400.0]]
    assert evaluate(coef, np.array([20]), clip=False).tolist() == [[-10.0], [400.0]]


def test_too_few_batch_sizes_and_mixed_frames_are_refused() -> None:
    with pytest.raises(FitError, match="a10/w at 70 W: 2 batch sizes, a quadratic needs 3"):
        fit_gpu(frame([(32, 70, 1.0, 0.1), (64, 70, 2.0, 0.2)]))
    mixed = pl.concat([frame([(32, 70, 1.0, 0.1)]), frame([(32, 70, 1.0, 0.1)], gpu="t4")])
    with pytest.raises(FitError, match="one GPU on one workload"):
        fit_gpu(mixed)
    with pytest.raises(FitError, match="empty profile"):
        fit_gpu(frame([]))


def test_fit_profiles_keys(mirror) -> None:
    from pipelines.ingest.zeus2 import read_profile_folder

    fits = fit_profiles(read_profile_folder(mirror / "zeus2"))
    assert list(fits) == [("cifar100", "a10"), ("cifar100", "t4"), ("imagenet", "a10"), ("imagenet", "t4")]
    assert [f.n_limits for f in fits.values()] == [5, 3, 5, 3]
