"""Per-(workload, GPU) tables against the published simulator's own lookups, and trace reading."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import polars as pl
import pytest

from pipelines.contracts.base import polars_schema
from pipelines.contracts.sources import ZeusTrainRuns
from pipelines.ingest.simulator_inputs import read_materialized, read_trace_dir
from pipelines.zeus.groups import group_job_spec
from pipelines.zeus.single import simulate_single
from pipelines.zeus.traces import TRAIN_COLUMNS, TraceError, Traces, build_table
from tests.support.zeus_peer import ARTIFACT_JOBS, GPUS, Peer

DATASETS: tuple[str, ...] = tuple(ARTIFACT_JOBS)


@pytest.fixture(scope="module")
def traces(mirror: Path) -> Traces:
    return read_trace_dir(mirror / "zeus")


@pytest.fixture(scope="module")
def peer(mirror: Path):
    return Peer(mirror / "zeus")


def test_tables_equal_the_published_lookups(peer, traces: Traces) -> None:
    """JIT profiling costs and choice, the profiling epoch, the runs' order, per batch size."""
    checked = 0
    for gpu in GPUS:
        sim = peer._simulator(gpu, 1, concurrency=False)
        for dataset in DATASETS:
            job = peer.artifact_job(gpu, dataset)
            table = build_table(traces, gpu, group_job_spec(traces, gpu, dataset))
            job_df = job.filter_df(sim.df)
            for bs in table.batch_sizes:
                t = table.by_batch_size[bs]
                power_df = job_df.loc[job_df.batch_size == bs]
                assert t.max_power_limit == power_df.power_limit.max()
                assert t.profiling_epoch_energy == power_df.energy_per_epoch.mean()
                assert t.profiling_epoch_time == power_df.time_per_epoch.mean()
                for limit in t.power_limits:
                    path_rows = power_df.loc[power_df.power_limit == limit]
                    assert list(t.target_epochs) == pytest.approx(path_rows.target_epoch.tolist(), nan_ok=True, rel=0, abs=0)
                    i = t.limit_index(limit)
                    assert (t.energy_per_epoch[i], t.time_per_epoch[i]) == (
                        path_rows.energy_per_epoch.iloc[0],
                        path_rows.time_per_epoch.iloc[0],
                    )
                for eta in (0.0, 0.5, 1.0) if gpu == "v100" else (0.5,):
                    with contextlib.redirect_stdout(io.StringIO()):
                        published = sim._profile_power_limit(job, bs, eta)
                    ordered = sorted(zip(t.power_limits, t.epoch_costs(eta), strict=True), reverse=True)
                    assert list(published.items()) == ordered
                    assert t.best_power_limit(eta) == min(published, key=published.get)
                checked += 1
    assert checked == 192  # every batch size of the 24 workload x GPU tables


def test_materialized_tables_give_the_csv_results(traces: Traces, ingested) -> None:
    """The Parquet assets keep file order, so the engine reads the same runs from them."""
    paths, _ = ingested
    materialized = read_materialized(paths.assets)
    for gpu in GPUS:
        for dataset in DATASETS:
            a = build_table(traces, gpu, group_job_spec(traces, gpu, dataset))
            b = build_table(materialized, gpu, group_job_spec(materialized, gpu, dataset))
            assert a == b
            assert simulate_single(a, 0.5, 2.0, 1, 20) == simulate_single(b, 0.5, 2.0, 1, 20)


def test_bad_csv_values_name_file_line_and_column(tmp_path: Path, mirror: Path) -> None:
    for name in ("summary_power_v100.csv",):
        (tmp_path / name).write_bytes((mirror / "zeus" / name).read_bytes())
    good = "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch\n"
    path = tmp_path / "summary_train.csv"
    path.write_text(good + "cifar100,shufflenetv2,1024,adadelta,1e-1,1,0.6,nan\ncifar100,shufflenetv2,10x,adadelta,1e-1,1,0.6,3\n")
    with pytest.raises(TraceError, match=r"summary_train.csv:3: column batch_size: cannot parse 10x"):
        read_trace_dir(tmp_path)
    path.write_text(good.replace(",run", ",runs") + "cifar100,shufflenetv2,8,adadelta,1e-1,1,0.6,3\n")
    with pytest.raises(TraceError, match=r"summary_train.csv:1: column 'run': missing column"):
        read_trace_dir(tmp_path)
    path.write_text(good + "cifar100,shufflenetv2,8,adadelta,1e-1,1,0.6,2.5\n")
    with pytest.raises(TraceError, match=r":2: column target_epoch"):
        read_trace_dir(tmp_path)
    path.write_text(good + "cifar100,shufflenetv2,8,adadelta,1e-1,1,0.6,nan\ncifar100,shufflenetv2,8,adadelta,1e-1,2,0.6,\n")
    traces = read_trace_dir(tmp_path)
    assert traces.train["target_epoch"].null_count() == 2
    contract = polars_schema(ZeusTrainRuns)
    assert traces.train.schema == pl.Schema({c: contract[c] for c in TRAIN_COLUMNS})


def test_unknown_gpu_and_missing_assets_are_clear(traces: Traces, tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="unknown GPU 'h100'"):
        build_table(traces, "h100", group_job_spec(traces, "v100", "squad"))
    with pytest.raises(TraceError, match="materialize zeus_train_runs and zeus_power_profiles first"):
        read_materialized(tmp_path)


def test_the_simulators_columns_are_the_contracts() -> None:
    """The simulator reads columns by name from tables validated against these contracts: the names must exist there."""
    from pipelines.contracts.sources import ZeusPowerProfiles
    from pipelines.zeus.traces import POWER_COLUMNS

    assert set(TRAIN_COLUMNS) <= set(polars_schema(ZeusTrainRuns))
    assert set(POWER_COLUMNS) <= set(polars_schema(ZeusPowerProfiles))


#: A written tie case (the traces have none: no two limits of the 576 cost rows cost the same). One batch size, four limits;
#: the epoch cost is (eta x P + (1 - eta) x 250 W) x T (Zeus's Equation 7, P_max,bs = 250 W), by hand:
#:   limit  T (s)  P (W)   eta 1: P x T   eta 0: 250 x T
#:   250    2      125     250            500   <- ties with 200 at eta 0
#:   200    2      100     200 (tie)      500   <- ties with 250 at eta 0
#:   150    2.5    80      200 (tie)      625
#:   100    4      60      240            1000
#: Zeus profiles from the highest limit down and keeps a later limit only if strictly cheaper: eta 1 picks 200 W (not 150 W,
#: not the top), eta 0 picks 250 W. Every number is exact in binary floating point, and so is each mean of copies of it.
TIE_POWER = [(250, 2.0, 125.0), (200, 2.0, 100.0), (150, 2.5, 80.0), (100, 4.0, 60.0)]


@pytest.mark.parametrize(("eta", "chosen"), [(1.0, 200), (0.0, 250)])
def test_a_tie_of_epoch_costs_goes_to_the_higher_limit_as_in_zeus(eta: float, chosen: int) -> None:
    import pandas as pd
    from zeus._legacy.job import Job as ZeusJob
    from zeus._legacy.policy import JITPowerLimitOptimizer, PruningGTSBatchSizeOptimizer
    from zeus._legacy.simulate import Simulator

    from pipelines.vocabulary import Job
    from pipelines.zeus.traces import from_frames

    key = {"dataset": "toy", "network": "net", "batch_size": 32, "optimizer": "sgd"}
    # three runs of the batch size reach the target (0.5) at epochs 3, 4, 5: the merge holds each power row three times
    train = [{**key, "learning_rate": 0.1, "run": run, "target_metric": 0.5, "target_epoch": epoch} for run, epoch in ((1, 3), (2, 4), (3, 5))]
    power = [{**key, "power_limit": limit, "time_per_epoch": t, "average_power": w} for limit, t, w in TIE_POWER]
    sim = Simulator(pd.DataFrame(train), pd.DataFrame(power), PruningGTSBatchSizeOptimizer(seed=1, verbose=False),
                    JITPowerLimitOptimizer(verbose=False), seed=1, verbose=False)
    zeus_job = ZeusJob("toy", "net", "sgd", 0.5, 10, 32)
    costs = sim._profile_power_limit(zeus_job, 32, eta)
    tied = 200.0 if eta == 1.0 else 500.0
    assert sorted(costs.values()).count(tied) == 2 and min(costs.values()) == tied  # the tie is real in zeus's own numbers
    plo = sim.plo
    for limit, cost in costs.items():  # as Simulator.simulate_one_job feeds its JIT optimizer
        plo.observe(zeus_job, 32, limit, cost)
    assert plo.predict(zeus_job, 32) == chosen

    traces = from_frames(pl.DataFrame(train).drop("learning_rate", "run"), pl.DataFrame([{"gpu": "toy-gpu", **row} for row in power]))
    table = build_table(traces, "toy-gpu", Job("toy", "net", "sgd", 0.5, 10, 32)).by_batch_size[32]
    assert table.best_power_limit(eta) == chosen
