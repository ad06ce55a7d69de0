"""Zeus's cost in its two forms (pipelines/zeus/cost.py), each bit for bit its published peer's, on numbers, numpy
arrays and polars expressions alike; and the compiled replay's inlined copy the same as ``zeus_cost``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
from zeus.utils.metric import zeus_cost as published_zeus_cost

from pipelines.zeus.cost import power_cost, zeus_cost

RNG = np.random.default_rng(20261207)
ETAS = np.concatenate([[0.0, 0.5, 1.0, 0.1, 0.3, 0.7, 0.9], RNG.uniform(0, 1, 25)])
ENERGY_J = RNG.uniform(1e3, 1e9, 200)
TIME_S = RNG.uniform(1.0, 1e6, 200)
POWER_W = RNG.uniform(50.0, 400.0, 200)
MAX_POWER_W = RNG.choice([175, 250, 300, 400], 200)


def test_zeus_cost_is_zeus_utils_metric_zeus_cost_bit_for_bit() -> None:
    for eta in ETAS:
        ours = [zeus_cost(float(eta), float(e), int(m), float(t)) for e, m, t in zip(ENERGY_J, MAX_POWER_W, TIME_S, strict=True)]
        theirs = [published_zeus_cost(float(e), float(t), float(eta), int(m)) for e, m, t in zip(ENERGY_J, MAX_POWER_W, TIME_S, strict=True)]
        assert ours == theirs
        # the same arithmetic on arrays and on polars columns
        assert zeus_cost(float(eta), ENERGY_J, MAX_POWER_W.astype(float), TIME_S).tolist() == theirs
        frame = pl.DataFrame({"e": ENERGY_J, "m": MAX_POWER_W.astype(float), "t": TIME_S})
        assert frame.select(zeus_cost(float(eta), pl.col("e"), pl.col("m"), pl.col("t")).alias("cost"))["cost"].to_list() == theirs


def test_power_cost_is_the_artifacts_jit_epoch_cost_bit_for_bit() -> None:
    # zeus 0.16.0, zeus/_legacy/simulate.py, _profile_power_limit: (eta * average_power + (1 - eta) * max_pl) * time_per_epoch
    for eta in ETAS:
        df = pd.DataFrame({"average_power": POWER_W, "time_per_epoch": TIME_S})
        max_pl = 300
        theirs = ((float(eta) * df["average_power"] + (1 - float(eta)) * max_pl) * df["time_per_epoch"]).tolist()
        assert [power_cost(float(eta), float(p), max_pl, float(t)) for p, t in zip(POWER_W, TIME_S, strict=True)] == theirs
        assert power_cost(float(eta), POWER_W, np.full_like(POWER_W, max_pl), TIME_S).tolist() == theirs


def test_the_two_forms_differ_only_in_rounding() -> None:
    # Same formula (E = P x T), another order of evaluation: equal to 1e-15 relative, not always to the bit, which is
    # why each site calls the form its peer computes.
    energy = POWER_W * TIME_S
    a = zeus_cost(0.3, energy, MAX_POWER_W.astype(float), TIME_S)
    b = power_cost(0.3, POWER_W, MAX_POWER_W.astype(float), TIME_S)
    assert np.allclose(a, b, rtol=1e-14, atol=0.0)
    assert (a != b).any()


def test_the_compiled_replays_copy_is_zeus_cost_bit_for_bit() -> None:
    from pipelines.zeus import kernels

    for eta in ETAS:
        for e, m, t in zip(ENERGY_J, MAX_POWER_W, TIME_S, strict=True):
            assert kernels.zeus_cost(float(eta), float(e), float(m), float(t)) == zeus_cost(float(eta), float(e), int(m), float(t))
