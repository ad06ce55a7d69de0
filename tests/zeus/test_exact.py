"""The bit-exact emulations of pipelines.zeus.exact against the numpy and pandas calls they replace."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipelines.zeus.exact import Uint32Draws, kahan_mean_of_copies, pairwise_sum, sum_and_var, tiled_mean


@pytest.mark.parametrize("prefetch", [0, 7])
def test_choice_one_matches_generator_choice(prefetch: int) -> None:
    for seed in range(40):
        numpy_rng = np.random.default_rng(seed)
        draws = Uint32Draws(np.random.PCG64(seed), prefetch=prefetch)
        for k in range(150):
            n = 1 + (k * 7) % 11
            assert draws.choice_one(n) == numpy_rng.choice(n, size=1, replace=False)[0]


def test_choice_one_matches_with_lemire_rejections() -> None:
    # Near 2**32 about a quarter of 32-bit draws are rejected and redrawn.
    n = 3 * 2**30 + 12345
    numpy_rng = np.random.default_rng(3)
    draws = Uint32Draws(np.random.PCG64(3))
    assert [draws.choice_one(n) for _ in range(300)] == [int(numpy_rng.choice(n, 1, replace=False)[0]) for _ in range(300)]


def test_dataframe_sample_consumes_one_bounded_draw() -> None:
    frame = pd.DataFrame({"x": range(10)})
    numpy_rng = np.random.default_rng(11)
    draws = Uint32Draws(np.random.PCG64(11), prefetch=64)
    for k in range(200):
        n = 1 + k % 10
        assert frame.head(n).sample(n=1, random_state=numpy_rng).index[0] == draws.choice_one(n)


def test_permutation_draws_interleave_with_normals_as_in_numpy() -> None:
    """A bandit step: a full permutation of the arms, then one normal per arm, on one generator."""
    for seed in range(60):
        numpy_rng = np.random.default_rng(seed)
        rng = np.random.default_rng(seed)
        draws = Uint32Draws(rng.bit_generator)
        for k in range(60):
            arms = np.arange(1 + (k + seed) % 9) * 32
            numpy_rng.choice(arms, len(arms), replace=False)
            draws.skip_permutation(len(arms))
            loc = [float(i) * 1.7 - 3.0 for i in range(len(arms))]
            scale = [0.25 * i for i in range(len(arms))]  # includes 0: still one draw
            expected = [numpy_rng.normal(m, s) for m, s in zip(loc, scale, strict=True)]
            z = rng.standard_normal(len(arms)).tolist()
            assert [m + s * zi for m, s, zi in zip(loc, scale, z, strict=True)] == expected


def test_skip_permutation_redraws_after_rejection() -> None:
    """Forced rejections: skip_permutation consumes exactly what the step-by-step draws consume."""

    class Scripted:
        def __init__(self, values: list[int]) -> None:
            self.values, self.pos = values, 0

        def random_raw(self, size: int | None = None):
            if size is None:
                self.pos += 1
                return self.values[self.pos - 1]
            self.pos += size
            return np.array(self.values[self.pos - size : self.pos], dtype=np.uint64)

    # A low half of 0 makes (0 * span) & mask = 0 < threshold for any span that does not divide 2**32.
    raws = [0, 5 << 32, 0, (7 << 32) | 3, 123456789, 2**63 + 11, 42, 99, 2**40 + 1, 17, 23, 31]
    for n in (3, 5, 6):
        bulk_source = Scripted(raws)
        step, bulk = Uint32Draws(Scripted(raws)), Uint32Draws(bulk_source)
        for j in range(1, n):
            step.bounded(j)
        for i in range(n - 1, 0, -1):
            step.bounded(i)
        bulk.skip_permutation(n)
        assert bulk_source.pos > n - 1  # without rejections, 2 (n - 1) halves take n - 1 outputs
        assert [step.next32() for _ in range(3)] == [bulk.next32() for _ in range(3)]


def test_pairwise_sum_and_var_match_numpy() -> None:
    rng = np.random.default_rng(0)
    for n in [*range(1, 140), 257, 1000, 9000]:
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 9, n)
        assert pairwise_sum(x.tolist()) == np.add.reduce(x)
        total, var = sum_and_var(x, n)
        assert (total, var) == (x.sum(), np.var(x))
        padded = np.concatenate([x, rng.standard_normal(5)])
        assert sum_and_var(padded, n) == (total, var)


def test_kahan_and_tiled_means_match_pandas() -> None:
    rng = np.random.default_rng(1)
    for copies in range(1, 12):
        block = rng.uniform(50, 400, size=7)
        tiled = pd.DataFrame({"k": np.tile(np.arange(7), copies), "v": np.tile(block, copies)})
        grouped = tiled.groupby("k").mean()["v"].to_numpy()
        assert [kahan_mean_of_copies(float(v), copies) for v in block] == grouped.tolist()
        assert tiled_mean(block, copies) == tiled["v"].mean()
