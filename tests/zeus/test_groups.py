"""Group replay: identical runs to the published simulator over ElasticFlow-derived groups, and input checks.

The comparisons with the published simulator run both replay engines (the pure-Python reference and
the compiled fast path) against one computation of the published runs per module.
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.simulator_inputs import conform_groups, read_group_file
from pipelines.zeus.errors import SimulationError
from pipelines.zeus.groups import GroupTableError, replay_groups
from pipelines.zeus.traces import Traces
from tests.support.zeus_cases import MAX_JOBS
from tests.support.zeus_peer import elasticflow_groups

ENGINES = ("reference", "fast")


@pytest.fixture(scope="module")
def all_groups(mirror: Path) -> pl.DataFrame:
    return elasticflow_groups(mirror / "itp" / "elasticflow-traces.tar.gz")


@pytest.fixture(scope="module")
def few_hundred(all_groups: pl.DataFrame) -> pl.DataFrame:
    """274 groups of at most 10 jobs (pruning, concurrency, retries) and two of ~120 (Thompson Sampling)."""
    sizes = all_groups.group_by("group").len()
    chosen = pl.concat([sizes.filter(pl.col("len") <= 10), sizes.filter(pl.col("len").is_between(100, 200)).sort("group").head(2)])
    return all_groups.filter(pl.col("group").is_in(chosen["group"].implode()))


def flatten(published: list[tuple[str, list]]) -> list[tuple]:
    return [(group, *run) for group, runs in published for run in runs]


@pytest.fixture(scope="module")
def published(peer):
    """``flatten(peer.groups(...))``, computed once per input and knobs for both engines (the published simulator is slow)."""
    memo: dict[tuple, list[tuple]] = {}

    def runs(groups: pl.DataFrame, gpu: str, eta: float, beta: float) -> list[tuple]:
        key = (tuple(groups.hash_rows().to_list()), gpu, eta, beta)
        if key not in memo:
            memo[key] = flatten(peer.groups(groups, gpu, eta, beta))
        return memo[key]

    return runs


def ours(frame: pl.DataFrame) -> list[tuple]:
    return list(frame.select("group", "bs", "pl", "energy", "time", "reached").iter_rows())


@pytest.mark.parametrize("engine", ENGINES)
def test_identical_to_published_simulator_on_the_two_long_groups(published, traces: Traces, few_hundred: pl.DataFrame, engine: str) -> None:
    """The two groups of over 100 jobs (Thompson Sampling); every group of up to 40 jobs, these knobs and GPU included, is
    compared run by run in test_groups_differential.py."""
    long = few_hundred.filter(pl.len().over("group") > MAX_JOBS)
    assert long["group"].n_unique() == 2 and few_hundred["group"].n_unique() == 276
    expected = published(long, "v100", 0.5, 2.0)
    got = replay_groups(long, traces, "v100", 0.5, 2.0, engine=engine)
    assert ours(got) == expected
    # Every trace job ends with exactly one run that reached the target; retries share its index.
    reached = got.filter("reached").group_by("group", "job").len()
    assert reached.height == long.height and reached["len"].max() == 1
    assert got.height == long.height  # here each job's first run reached the target (retries: test_groups_differential.py)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("cluster", "gpu", "eta", "beta"),
    [("cluster01", "rtx6000", 1.0, math.inf), ("cluster02", "a40", 0.0, 2.0), ("cluster10", "p100", 0.5, 2.0)],
)
def test_identical_on_other_gpus_and_knobs(
    published, traces: Traces, few_hundred: pl.DataFrame, cluster: str, gpu: str, eta: float, beta: float, engine: str
) -> None:
    subset = few_hundred.filter(pl.col("group").str.starts_with(f"{cluster}-"))
    assert subset["group"].n_unique() >= 25
    assert ours(replay_groups(subset, traces, gpu, eta, beta, engine=engine)) == published(subset, gpu, eta, beta)


def test_order_is_sorted_groups_then_start_time_with_ties_in_table_order(traces: Traces, few_hundred: pl.DataFrame) -> None:
    base = replay_groups(few_hundred, traces, "v100", 0.5, 2.0)
    # Interleave the groups differently but keep each group's rows in their relative order.
    shuffled = few_hundred.with_row_index("i").sort(pl.col("group").hash(7), "i").drop("i")
    assert replay_groups(shuffled, traces, "v100", 0.5, 2.0).equals(base)
    assert base["group"].is_sorted()


def test_group_files_in_every_format_give_the_same_table(few_hundred: pl.DataFrame, tmp_path: Path) -> None:
    import lzma

    frame = few_hundred.head(50)
    frame.write_csv(tmp_path / "g.csv")
    (tmp_path / "g.csv.xz").write_bytes(lzma.compress((tmp_path / "g.csv").read_bytes()))
    frame.write_parquet(tmp_path / "g.parquet")
    tables = [read_group_file(tmp_path / name) for name in ("g.csv", "g.csv.xz", "g.parquet")]
    assert tables[0].equals(tables[1]) and tables[0].equals(tables[2])
    assert tables[0].schema["start_time"] == pl.Float64 and tables[0].height == 50


def test_bad_group_tables_are_rejected_with_their_location(tmp_path: Path) -> None:
    header = "group,start_time,end_time,dataset,runtime_ratio\n"
    cases = {
        "a,1,2,squad,1.0\na,x,5,squad,1.0\n": r"bad.csv:3: column 'start_time': cannot use 'x'",
        "a,1,2,squad,1.0\na,3,2,squad,1.0\n": r"bad.csv:3: column 'end_time': end_not_before_start: end_time must not be before start_time$",
        "a,1,2,squad,0\n": r"bad.csv:2: column 'runtime_ratio': must be > 0 \(value 0.0\)$",
        "a,1,nan,squad,1\n": r"bad.csv:2: column 'end_time': must not be NaN$",
        "a,1,2,squad,1.0\na,3,4,imagenet,1.0\n": r"bad.csv:2: column 'dataset': one_dataset_per_group: every job of a group must have the same dataset$",
        "": r"bad.csv: no jobs",
    }
    for body, message in cases.items():
        (tmp_path / "bad.csv").write_text(header + body)
        with pytest.raises(GroupTableError, match=message):
            read_group_file(tmp_path / "bad.csv")
    with pytest.raises(GroupTableError, match="column 'runtime_ratio' is missing"):
        conform_groups(pl.DataFrame({"group": ["a"], "start_time": [0.0], "end_time": [1.0], "dataset": ["squad"]}))


def test_unknown_dataset_is_rejected(traces: Traces) -> None:
    frame = pl.DataFrame({"group": ["a"], "start_time": [0.0], "end_time": [1.0], "dataset": ["mnist"], "runtime_ratio": [1.0]})
    with pytest.raises(GroupTableError, match=r"group table: row 0: column 'dataset': must be one of cifar100, .* \(value mnist\)$"):
        conform_groups(frame)
    with pytest.raises(GroupTableError, match=r"^unknown dataset 'mnist'; expected one of cifar100, "):
        replay_groups(frame, traces, "v100")


@pytest.mark.parametrize("engine", ENGINES)
def test_tight_early_stopping_fails_like_the_published_simulator(peer, traces: Traces, all_groups: pl.DataFrame, engine: str) -> None:
    """beta 1: pruning discards every batch size; both stop with the same error."""
    group = all_groups.filter(pl.col("group") == "cluster01-resnet50-bs256-gpu64")
    with pytest.raises(ValueError, match="Empty batch size set") as published:
        peer.groups(group, "v100", 0.5, 1.0)
    with pytest.raises(SimulationError) as got:
        replay_groups(group, traces, "v100", 0.5, 1.0, engine=engine)
    assert str(got.value) == str(published.value)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_job_that_never_reaches_the_target_stops_the_replay(traces: Traces, all_groups: pl.DataFrame, engine: str) -> None:
    """beta 1 cuts every retry of job 3 before the target: the published simulator retries forever; we stop at 1000 runs."""
    group = all_groups.filter(pl.col("group") == "cluster02-deepspeech2-bs32-gpu16")
    with pytest.raises(SimulationError, match="job 3 of the group missed the target in 1000 runs"):
        replay_groups(group, traces, "v100", 0.5, 1.0, engine=engine)
