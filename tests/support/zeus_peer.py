"""Shared by tests/zeus/ and bench/bench_simulator.py: the published simulator as a peer,
driven as the artifact's run_single.py / run_alibaba.py drive it, and group tables derived from
the ElasticFlow jobs.

The ElasticFlow-derived groups are a stand-in for the Alibaba groups (not available here), with a
small deterministic rule: each model maps to one Zeus dataset; a group is the jobs of one cluster
with the same model, batch size and GPU count; a job runs from its submission time for its
duration; runtime_ratio is its duration over the mean duration of its dataset's jobs (all clusters).
"""

from __future__ import annotations

import contextlib
import io
import tarfile
import zlib
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    import pandas as pd  # imported where a peer is built: every test worker collects this module, few build a peer

#: ElasticFlow model -> Zeus dataset (an arbitrary, fixed assignment covering all six workloads).
MODEL_TO_DATASET: dict[str, str] = {
    "resnet50": "imagenet",
    "vgg16": "cifar100",
    "inception3": "movielens-1m",
    "gpt2": "sentiment140",
    "bert": "squad",
    "deepspeech2": "librispeech",
}

#: run_alibaba.py's job per dataset: network, optimizer, target metric, max epochs, default b0.
ARTIFACT_JOBS: dict[str, tuple[str, str, float, int, int]] = {
    "cifar100": ("shufflenetv2", "adadelta", 0.6, 100, 1024),
    "imagenet": ("resnet50", "adadelta", 0.65, 100, 256),
    "squad": ("bert_base_uncased", "adamw", 84.0, 6, 32),
    "librispeech": ("deepspeech2", "adamw", 40.0, 16, 256),
    "movielens-1m": ("ncf", "adam", 0.41, 100, 1024),
    "sentiment140": ("bert_base_uncased", "adamw", 0.84, 10, 128),
}
GPUS: tuple[str, ...] = ("v100", "a40", "rtx6000", "p100")


def elasticflow_groups(source: Path) -> pl.DataFrame:
    """Group table (group, start_time, end_time, dataset, runtime_ratio) of all ElasticFlow cluster jobs.

    ``source`` is the unpacked folder or ``elasticflow-traces.tar.gz`` (read in memory). Rows
    are in cluster order (cluster01 first), each cluster in file order; times are integer seconds.
    """
    files: dict[str, bytes] = {}
    if source.is_dir():
        files = {p.stem: p.read_bytes() for p in source.glob("cluster*.csv")}
    else:
        with tarfile.open(source, "r:gz") as tar:
            for member in tar.getmembers():
                name = PurePosixPath(member.name).name
                if member.isfile() and name.startswith("cluster") and name.endswith(".csv"):
                    files[name[: -len(".csv")]] = tar.extractfile(member).read()
    if not files:
        raise FileNotFoundError(f"{source}: no cluster*.csv")
    frames = [
        pl.read_csv(files[cluster], schema_overrides={"submission_time": pl.Int64, "duration": pl.Int64}).with_columns(
            cluster=pl.lit(cluster)
        )
        for cluster in sorted(files)
    ]
    jobs = pl.concat(frames).with_columns(dataset=pl.col("model_name").replace_strict(MODEL_TO_DATASET))
    return jobs.select(
        group=pl.format("{}-{}-bs{}-gpu{}", "cluster", "model_name", "batch_size", "num_gpu"),
        start_time=pl.col("submission_time"),
        end_time=pl.col("submission_time") + pl.col("duration"),
        dataset=pl.col("dataset"),
        runtime_ratio=pl.col("duration") / pl.col("duration").mean().over("dataset"),
    )


def history_rows(history: list) -> list[tuple[int, int, float, float, bool]]:
    """The published ``HistoryEntry`` list as plain (bs, pl, energy, time, reached) tuples."""
    return [(int(h.bs), int(h.pl), float(h.energy), float(h.time), bool(h.reached)) for h in history]


def _categorical(frame: pd.DataFrame) -> pd.DataFrame:
    import pandas as pd

    text = [c for c in frame.columns if frame[c].dtype == object or pd.api.types.is_string_dtype(frame[c])]
    return frame.astype(dict.fromkeys(text, "category"))


class Peer:
    """The published simulator (``zeus._legacy``) over the Zeus CSVs of ``trace_dir``, read with pandas.

    One ``Simulator`` per GPU is built once (its constructor only merges the two traces) and
    given a fresh optimizer pair and seed per simulation, which is what constructing a new one
    per group, as run_alibaba.py does, amounts to: every simulation deep-copies the optimizers
    and seeds its own generator.
    """

    def __init__(self, trace_dir: Path, categorical: bool = False) -> None:
        """``categorical``: text columns as pandas categories (the tests' choice). The simulator's every
        lookup filters these frames by text; categories make that about 1.5x faster with identical
        results. The benchmarks keep ``pd.read_csv``'s own types, as the artifact scripts do."""
        import pandas as pd

        self.train = pd.read_csv(trace_dir / "summary_train.csv")
        self.power = {gpu: pd.read_csv(trace_dir / f"summary_power_{gpu}.csv") for gpu in GPUS}
        if categorical:
            self.train = _categorical(self.train)
            self.power = {gpu: _categorical(frame) for gpu, frame in self.power.items()}
        self._simulators: dict[str, object] = {}

    def _simulator(self, gpu: str, seed: int, concurrency: bool):
        from zeus._legacy.policy import JITPowerLimitOptimizer, PruningGTSBatchSizeOptimizer
        from zeus._legacy.simulate import Simulator

        bso = PruningGTSBatchSizeOptimizer(seed=seed, concurrency=concurrency, verbose=False)
        plo = JITPowerLimitOptimizer(verbose=False)
        sim = self._simulators.get(gpu)
        if sim is None:
            sim = self._simulators[gpu] = Simulator(self.train, self.power[gpu], bso, plo, seed=seed, verbose=False)
        sim.bso, sim.plo, sim.seed = bso, plo, seed
        return sim

    def artifact_job(self, gpu: str, dataset: str):
        """run_alibaba.py's ``get_job_with_defaults``."""
        from zeus._legacy.job import Job

        network, optimizer, target, max_epochs, b0 = ARTIFACT_JOBS[dataset]
        power = self.power[gpu]
        bmax = power.loc[power.dataset == dataset].batch_size.max().item()
        return Job(dataset, network, optimizer, target, max_epochs, min(b0, bmax))

    def default_recurrences(self, gpu: str, job) -> int:
        """run_single.py's 2 x |B| x |P|."""
        job_df = job.filter_df(self.train.merge(self.power[gpu], how="inner"))
        return 2 * len(job_df.batch_size.unique()) * len(job_df.power_limit.unique())

    def single(self, gpu: str, job, eta: float, beta: float, seed: int, num_recurrence: int | None = None) -> list:
        """``simulate_one_job`` as run_single.py calls it; the peer's prints are swallowed."""
        n = self.default_recurrences(gpu, job) if num_recurrence is None else num_recurrence
        with contextlib.redirect_stdout(io.StringIO()):
            return history_rows(self._simulator(gpu, seed, concurrency=False).simulate_one_job(job, n, beta, eta))

    def groups(self, groups: pl.DataFrame, gpu: str, eta: float, beta: float) -> list[tuple[str, list]]:
        """run_alibaba.py's replay: groups in sorted order, each group's jobs in start-time order."""
        frame = groups.to_pandas().sort_values("start_time", kind="stable")
        out = []
        with contextlib.redirect_stdout(io.StringIO()):
            for group_id, group in frame.groupby("group"):
                job = self.artifact_job(gpu, group.dataset.unique().item())
                seed = zlib.adler32(group.group.unique().item().encode("utf-8"))
                sim = self._simulator(gpu, seed, concurrency=True)
                out.append((str(group_id), history_rows(sim.simulate_one_alibaba_group(job, group, beta_knob=beta, eta_knob=eta))))
        return out

    def timed_groups(self, groups: pl.DataFrame, gpu: str, eta: float, beta: float) -> list[tuple[str, list]]:
        """``groups`` with each run's start and end time (s): (start, end, bs, pl, energy, time, reached) per run.

        The published ``HistoryEntry`` has no times. They are read from the simulator's own
        in-flight records, its local ``RunningJob`` dataclass, which ``simulate_one_alibaba_group``
        defines at each call with the module's ``dataclass``: that name is swapped, for the call,
        for a decorator that logs every record the moment ``running_jobs.remove`` matches it
        (dataclass ``__eq__``), which happens once per finished run, in the order runs are reaped.
        Runs the published code does not report (not one epoch affordable) are dropped as it drops them.
        """
        import dataclasses

        import zeus._legacy.simulate as published

        reaped: list = []

        def logging_dataclass(cls: type) -> type:
            made = dataclasses.dataclass(cls)
            if made.__name__ != "RunningJob":
                return made
            equal = made.__eq__

            def eq_and_log(self: object, other: object) -> bool:
                same = equal(self, other)
                if same is True:
                    reaped.append(self)
                return same

            made.__eq__ = eq_and_log  # type: ignore[method-assign, assignment]  # instrumentation of the peer
            return made

        frame = groups.to_pandas().sort_values("start_time", kind="stable")
        out = []
        original = published.dataclass
        published.dataclass = logging_dataclass  # type: ignore[attr-defined]  # restored below
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                for group_id, group in frame.groupby("group"):
                    job = self.artifact_job(gpu, group.dataset.unique().item())
                    seed = zlib.adler32(group.group.unique().item().encode("utf-8"))
                    sim = self._simulator(gpu, seed, concurrency=True)
                    reaped.clear()
                    history = history_rows(sim.simulate_one_alibaba_group(job, group, beta_knob=beta, eta_knob=eta))
                    reported = [r for r in reaped if r.energy != 0 or r.time != 0 or r.reached]
                    runs = []
                    for r, (bs, limit, energy, time, reached) in zip(reported, history, strict=True):
                        if (r.batch_size, r.power_limit, r.energy * r.runtime_ratio, r.reached) != (bs, limit, energy, reached):
                            raise AssertionError(f"{group_id}: reaped record {r} does not match history entry {(bs, limit, energy)}")
                        runs.append((float(r.start_time), float(r.end_time), bs, limit, energy, time, reached))
                    out.append((str(group_id), runs))
        finally:
            published.dataclass = original
        return out
