"""Anchoring and the steady state on cases small enough to compute by hand (pipelines/clusters/anchoring.py).

Every expected number is written out in the test, worked from the module docstring's formulas, so that a change to the
arithmetic (a mutant of ``make mutate``, docs/testing.md) changes a result the test holds. Integers and halves keep the
sums exact in floating point, so most comparisons are ``==``.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipelines.clusters.anchoring import AnchoringError, anchor, converged_ratio, converged_ratios, horizon_totals, job_index, job_scale, steady_state_totals
from pipelines.ingest.simulator_inputs import read_trace_dir
from tests.support import anchoring_peer


def jobs_frame() -> pl.DataFrame:
    """Three jobs, listed out of replay order: replay order is a/1 (start 0), a/2 (start 100), b/1."""
    return pl.DataFrame({"group": ["b", "a", "a"], "job_id": ["1", "2", "1"], "start_time_s": [50.0, 100.0, 0.0],
                         "end_time_s": [7250.0, 1900.0, 3600.0]})


def history_frame() -> pl.DataFrame:
    """Default and Zeus runs of the three jobs; a/1 has two Default runs (1000 s + 800 s)."""
    return pl.DataFrame({
        "group": ["a", "a", "b", "a", "a", "b", "a"],
        "job_id": ["1", "1", "1", "2", "1", "1", "2"],
        "policy": ["default", "default", "default", "default", "zeus", "zeus", "zeus"],
        "time_s": [1000.0, 800.0, 1200.0, 3600.0, 900.0, 1000.0, 3000.0],
        "energy_j": [2e5, 1e5, 3e5, 4e5, 1.5e5, 2e5, 3e5],
    })


def test_job_index_orders_groups_then_starts_and_maps_each_run() -> None:
    keys, index = job_index(history_frame(), jobs_frame())
    assert keys.select("group", "job_id").rows() == [("a", "1"), ("a", "2"), ("b", "1")]
    assert keys["_job"].to_list() == [0, 1, 2]
    assert index.tolist() == [0, 0, 2, 1, 0, 2, 1]


def test_job_index_keeps_table_order_between_jobs_that_start_together() -> None:
    jobs = pl.DataFrame({"group": ["a", "a"], "job_id": ["y", "x"], "start_time_s": [0.0, 0.0], "end_time_s": [1.0, 1.0]})
    history = pl.DataFrame({"group": ["a", "a"], "job_id": ["x", "y"]})
    keys, index = job_index(history, jobs)
    assert keys["job_id"].to_list() == ["y", "x"]
    assert index.tolist() == [1, 0]


def test_job_index_keeps_table_order_between_ties_of_a_hundred_jobs() -> None:
    """Polars' sort is not stable (it reorders ties of a hundred rows): the table's order must break them."""
    groups = [f"g{k % 3}" for k in range(100)]
    starts = [float((k * 7) % 5) for k in range(100)]
    jobs = pl.DataFrame({"group": groups, "job_id": [f"j{k}" for k in range(100)], "start_time_s": starts, "end_time_s": [9.0] * 100})
    keys, _ = job_index(jobs.select("group", "job_id"), jobs)
    assert keys["job_id"].to_list() == [f"j{k}" for k in sorted(range(100), key=lambda k: (groups[k], starts[k]))]


def test_job_index_refuses_a_job_named_twice_or_a_run_of_no_job() -> None:
    twice = pl.DataFrame({"group": ["a", "a"], "job_id": ["1", "1"], "start_time_s": [0.0, 5.0], "end_time_s": [1.0, 6.0]})
    with pytest.raises(AnchoringError, match=r"^a job id appears twice in one recurring group: its runs cannot be told apart$"):
        job_index(pl.DataFrame({"group": ["a"], "job_id": ["1"]}), twice)
    # The same id in two groups is two jobs.
    two_groups = twice.with_columns(pl.Series("group", ["a", "b"]))
    assert job_index(pl.DataFrame({"group": ["b"], "job_id": ["1"]}), two_groups)[1].tolist() == [1]
    with pytest.raises(AnchoringError, match=r"^the history has runs of a job that was not replayed$"):
        job_index(pl.DataFrame({"group": ["a"], "job_id": ["3"]}), jobs_frame())


def test_job_scale_is_elapsed_over_the_summed_default_time() -> None:
    # Job 0: Default runs 100 s + 300 s, elapsed 800 s -> 2; job 1: 50 s, elapsed 25 s -> 0.5; job 2: no Default run -> inf.
    with np.errstate(divide="ignore"):
        scale = job_scale(np.array([0, 1, 0]), np.array([100.0, 50.0, 300.0]), np.array([800.0, 25.0, 10.0]))
    assert scale.tolist() == [2.0, 0.5, float("inf")]
    with pytest.raises(AnchoringError, match=r"^anchoring needs the Default policy's runs$"):
        job_scale(np.array([], dtype=np.int64), np.array([]), np.array([1.0]))


def test_anchor_scales_every_policys_runs_by_elapsed_over_default_time() -> None:
    # a/1: elapsed 3600 s over Default 1000 + 800 s -> x2; a/2: 1800 / 3600 -> x0.5; b/1: 7200 / 1200 -> x6.
    out = anchor(history_frame(), jobs_frame())
    assert out["energy_j"].to_list() == [4e5, 2e5, 1.8e6, 2e5, 3e5, 1.2e6, 1.5e5]
    assert out["time_s"].to_list() == [2000.0, 1600.0, 7200.0, 1800.0, 1800.0, 6000.0, 1500.0]
    assert out.select("group", "job_id", "policy").equals(history_frame().select("group", "job_id", "policy"))


def test_anchor_leaves_an_empty_history_and_needs_the_default_runs() -> None:
    empty = history_frame().clear()
    assert anchor(empty, jobs_frame()).height == 0
    with pytest.raises(AnchoringError, match=r"^anchoring needs the Default policy's runs$"):
        anchor(history_frame().filter(pl.col("policy") == "zeus"), jobs_frame())


def test_steady_state_weights_each_workloads_default_energy_by_its_ratio() -> None:
    # Workload a: 10 + 30 J at 0.5; b: 20 J at 0.8; d has a ratio but no runs; c has runs but no ratio (not counted).
    default, converged = steady_state_totals(np.array([10.0, 20.0, 30.0, 40.0]), np.array([0, 1, 0, 2]), ["a", "b", "c"],
                                             {"b": 0.8, "a": 0.5, "d": 0.25})
    assert (default, converged) == (60.0, 36.0)


def test_horizon_beyond_the_export_adds_each_groups_mean_default_job_at_its_ratio() -> None:
    # Group 0: jobs 0 and 1 (Default 10 + 5 J and 20 J; Zeus 8 J and 15 J), ratio 0.5; group 1: job 2 (30 J; 21 J), ratio 0.9.
    # Period 100 s, horizon 250 s: group 0 recurs 2 x 2.5 = 5 times, 3 beyond the export at its mean Default job 17.5 J;
    # group 1 recurs 2.5 times, 1.5 beyond at 30 J.
    policy_j = {"default": (np.array([0, 1, 2, 0]), np.array([10.0, 20.0, 30.0, 5.0])),
                "zeus": (np.array([0, 1, 2]), np.array([8.0, 15.0, 21.0]))}
    bounds, ratio = np.array([0, 2, 3]), np.array([0.5, 0.9])
    default, zeus = horizon_totals(policy_j, bounds, ratio, 100.0, 250.0)
    assert default == 65.0 + 3 * 17.5 + 1.5 * 30.0  # 162.5
    assert zeus == pytest.approx(44.0 + 3 * 17.5 * 0.5 + 1.5 * 30.0 * 0.9, rel=1e-15)  # 110.75


def test_a_horizon_shorter_than_the_export_counts_the_jobs_it_cuts_in_part() -> None:
    # Horizon 60 s of a 100 s period: group 0 recurs 1.2 times (job 0 whole, job 1 at 0.2), group 1 0.6 times (job 2 at 0.6).
    policy_j = {"default": (np.array([0, 1, 2, 0]), np.array([10.0, 20.0, 30.0, 5.0])),
                "zeus": (np.array([0, 1, 2]), np.array([8.0, 15.0, 21.0]))}
    default, zeus = horizon_totals(policy_j, np.array([0, 2, 3]), np.array([0.5, 0.9]), 100.0, 60.0)
    assert default == pytest.approx(15.0 + 0.2 * 20.0 + 0.6 * 30.0, rel=1e-12)  # 37
    assert zeus == pytest.approx(8.0 + 0.2 * 15.0 + 0.6 * 21.0, rel=1e-12)  # 23.6
    # Horizon 30 s: group 0 recurs 0.6 times (job 0 at 0.6, job 1 not at all: never a negative share), group 1 0.3 times.
    default, zeus = horizon_totals(policy_j, np.array([0, 2, 3]), np.array([0.5, 0.9]), 100.0, 30.0)
    assert default == pytest.approx(0.6 * 15.0 + 0.3 * 30.0, rel=1e-12)  # 18
    assert zeus == pytest.approx(0.6 * 8.0 + 0.3 * 21.0, rel=1e-12)  # 11.1


def test_a_horizon_of_no_jobs_or_no_period_is_zero() -> None:
    policy_j = {"default": (np.array([0]), np.array([10.0])), "zeus": (np.array([0]), np.array([8.0]))}
    assert horizon_totals(policy_j, np.array([0, 1]), np.array([0.5]), 0.0, 60.0) == (0.0, 0.0)
    none = {"default": (np.zeros(0, dtype=np.int64), np.zeros(0)), "zeus": (np.zeros(0, dtype=np.int64), np.zeros(0))}
    assert horizon_totals(none, np.array([0]), np.zeros(0), 100.0, 60.0) == (0.0, 0.0)


def test_converged_ratios_are_each_workloads_against_the_second_implementation(mirror: Path) -> None:
    """Per workload, as tests/support/anchoring_peer.py computes it from the trace CSVs (none of the package's helpers)."""
    ratios = converged_ratios(read_trace_dir(mirror / "zeus"), "v100", ("squad", "cifar100"), 0.5)
    assert list(ratios) == ["squad", "cifar100"]
    for dataset, ratio in ratios.items():
        assert ratio == pytest.approx(anchoring_peer.converged_ratio(mirror / "zeus", "v100", dataset, 0.5), rel=1e-12), dataset
    assert ratios["squad"] != ratios["cifar100"]


def test_a_horizon_of_one_job_over_a_one_second_period() -> None:
    # One job (Default 10 J, Zeus 8 J) in a 1 s period, horizon 2.5 s: it recurs 2.5 times, 1.5 beyond the export at 10 J
    # (Default) and 10 x 0.5 J (Zeus).
    policy_j = {"default": (np.array([0]), np.array([10.0])), "zeus": (np.array([0]), np.array([8.0]))}
    assert horizon_totals(policy_j, np.array([0, 1]), np.array([0.5]), 1.0, 2.5) == (25.0, 15.5)


def test_a_horizon_counts_a_job_a_policy_did_not_run_as_zero() -> None:
    # As in the first horizon case, but Zeus has no run of job 2 (the last): its 21 J are gone, the projection beyond is not.
    policy_j = {"default": (np.array([0, 1, 2, 0]), np.array([10.0, 20.0, 30.0, 5.0])), "zeus": (np.array([0, 1]), np.array([8.0, 15.0]))}
    default, zeus = horizon_totals(policy_j, np.array([0, 2, 3]), np.array([0.5, 0.9]), 100.0, 250.0)
    assert default == 162.5
    assert zeus == pytest.approx(23.0 + 3 * 17.5 * 0.5 + 1.5 * 30.0 * 0.9, rel=1e-15)  # 89.75


def test_on_a_gpu_that_did_not_profile_the_default_batch_size_default_is_the_largest_it_did(mirror: Path) -> None:
    """The P100 profiled imagenet up to 128 and squad up to 24 (the artifact's defaults: 256 and 32): b0 is that largest."""
    traces = read_trace_dir(mirror / "zeus")
    for dataset in ("imagenet", "squad"):
        expected = anchoring_peer.converged_ratio(mirror / "zeus", "p100", dataset, 0.5)
        assert converged_ratios(traces, "p100", (dataset,), 0.5)[dataset] == pytest.approx(expected, rel=1e-12), dataset


def rewritten_v100_traces(mirror: Path, folder: Path, train_rows, power_rows) -> Path:
    """``folder`` with the mirror's summary_train.csv and summary_power_v100.csv, each row through ``train_rows`` /
    ``power_rows`` (a list of dicts -> a list of dicts): traces in the published schema, changed for one case."""
    folder.mkdir()
    for name, change in (("summary_train.csv", train_rows), ("summary_power_v100.csv", power_rows)):
        with (mirror / "zeus" / name).open(newline="") as f:
            reader = csv.DictReader(f)
            fields, rows = reader.fieldnames, change(list(reader))
        with (folder / name).open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
    return folder


def test_a_tie_of_expected_cost_goes_to_the_first_batch_size(mirror: Path, tmp_path: Path) -> None:
    """At eta = 0 the cost is MaxPower x T: cifar100 on the V100 is cheapest at batch size 256 (tests/support/anchoring_peer.py).
    A batch size 384 copied from 256's rows (same epochs, same times per epoch, half the power) ties it exactly in cost
    at half the energy; the converged ratio keeps 256, the first in batch-size order, so it is the mirror's own."""
    def train(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        return rows + [{**r, "batch_size": "384"} for r in rows
                       if (r["dataset"], r["network"], r["batch_size"], r["optimizer"]) == ("cifar100", "shufflenetv2", "256", "adadelta")]

    def power(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        return rows + [{**r, "batch_size": "384", "average_power": repr(float(r["average_power"]) / 2)} for r in rows
                       if (r["dataset"], r["network"], r["batch_size"], r["optimizer"]) == ("cifar100", "shufflenetv2", "256", "adadelta")]

    folder = rewritten_v100_traces(mirror, tmp_path / "zeus", train, power)
    # The peer's choice on the mirror, and the tie on the rewritten traces: batch size 256 and 384, the same expected time.
    by_bs, max_power = anchoring_peer.configs(folder, "v100", "cifar100")
    max_epochs = anchoring_peer.ARTIFACT_JOBS["cifar100"][3]
    found = {bs: anchoring_peer.to_target(by_bs[bs], anchoring_peer.profiled_limit(by_bs[bs], 0.0), max_epochs) for bs in by_bs}
    cost = {bs: max_power * f[1] for bs, f in found.items() if f is not None}
    assert cost[256] == cost[384] == min(cost.values())
    assert found[384][0] == pytest.approx(found[256][0] / 2, rel=1e-12)
    expected = anchoring_peer.converged_ratio(mirror / "zeus", "v100", "cifar100", 0.0)  # 256's energy over Default's
    assert anchoring_peer.converged_ratio(folder, "v100", "cifar100", 0.0) == expected
    # 384, the later of the tie, would give half of it.
    assert converged_ratio(read_trace_dir(folder), "v100", "cifar100", 0.0) == pytest.approx(expected, rel=1e-12)


def test_a_workload_whose_default_never_reaches_the_target_is_refused(mirror: Path, tmp_path: Path) -> None:
    """cifar100's Default on the V100 is batch size 1024 at its top limit; without the train rows of 1024 at the target
    (0.6) it never reaches it, and there is no ratio to give."""
    def train(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        return [r for r in rows if (r["dataset"], r["network"], r["batch_size"], r["optimizer"], r["target_metric"])
                != ("cifar100", "shufflenetv2", "1024", "adadelta", "0.6")]

    folder = rewritten_v100_traces(mirror, tmp_path / "zeus", train, lambda rows: rows)
    traces = read_trace_dir(folder)
    message = "cifar100 on v100: the default configuration never reaches the target"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        converged_ratio(traces, "v100", "cifar100", 0.5)
    # The other workloads still have theirs.
    assert converged_ratio(traces, "v100", "squad", 0.5) == pytest.approx(
        anchoring_peer.converged_ratio(mirror / "zeus", "v100", "squad", 0.5), rel=1e-12)
