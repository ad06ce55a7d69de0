"""Knob-grid sweep benchmark: where the sweep's tasks should run, measured in one run with its peers.

Reads the materialized inputs of the sweep command (`make figures` or `make materialize` writes
them) and keeps the public traces. In one run, each line with the load average next to it:

1. a small grid (ITP and ElasticFlow x v100, a40 x eta {0, .5, 1} x beta 2 x seeds 1-2, Zeus and
   Default: 32 replays) in-process and with the default options (``auto``): the ratio (goal <= 1.15);
2. what a LocalCluster of 2 costs before it replays as fast as this process (start, each worker
   loading the compiled replay, the inputs scattered): what ``scaleout.auto.LOCAL_START_SECONDS`` says;
3. the paper grid (2,240 replays) in-process, on 2 single-thread workers of a running scheduler,
   and there again with a worker killed mid-sweep: times, ratio (goal >= 1.5x) and that the three
   tables are identical; and the seconds per job and replay the batches took
   (``sweep.SECONDS_PER_JOB_REPLAY``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from pipelines.clusters import mapping, sweep
from pipelines.home.paths import default_paths
from pipelines.scaleout.auto import LOCAL_START_SECONDS
from pipelines.scaleout.runners import SerialRunner, fan_out
from pipelines.scaleout.schedulers import SCHEDULER_ENV, connect
from pipelines.zeus import fast
from pipelines.zeus.traces import Traces

GRID = sweep.Grid(etas=(0.0, 0.5, 1.0), betas=(2.0,), seeds=(1, 2), gpus=("v100", "a40"), policies=("zeus", "default"))
BIN = Path(sys.executable).parent


def load() -> tuple[pl.DataFrame, Traces]:
    """The public traces' jobs (your own traces left out, so runs compare) and the Zeus traces."""
    jobs, traces = sweep.read_inputs(default_paths().assets)
    return jobs.filter(pl.col("trace").is_in(mapping.TRACES)), traces


def load_note() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def _loaded(_: int) -> bool:
    """A worker's first task: the compiled replay loaded."""
    fast.kernels()
    return True


@contextlib.contextmanager
def running_scheduler(folder: Path) -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    """A ``dask scheduler`` and 2 single-thread ``dask worker`` processes on 127.0.0.1; (address, workers); stopped on exit."""
    from distributed import Client

    env = {k: v for k, v in os.environ.items() if k != SCHEDULER_ENV}
    scheduler_file = folder / "scheduler.json"
    processes: list[subprocess.Popen[bytes]] = []

    def start(args: list[str], log: str) -> subprocess.Popen[bytes]:
        with open(folder / log, "wb") as out:
            process = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        processes.append(process)
        return process

    try:
        start([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)],
              "scheduler.log")  # fmt: skip
        while not scheduler_file.exists():
            time.sleep(0.2)
        time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        workers = [start([str(BIN / "dask"), "worker", address, "--nthreads", "1", "--no-nanny", "--host", "127.0.0.1", "--no-dashboard",
                          "--name", f"w{i}", "--local-directory", str(folder)], f"w{i}.log") for i in range(2)]  # fmt: skip
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        yield address, workers
    finally:
        for process in reversed(processes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def small_grid(jobs: pl.DataFrame, traces: Traces) -> None:
    n = len(sweep.replays(GRID, sweep.present_traces(jobs)))
    fast.kernels()  # loaded in this process for both, as a sweep command's first replay loads it
    t0 = time.perf_counter()
    serial = sweep.sweep(jobs, traces, GRID, SerialRunner())
    in_process = time.perf_counter() - t0
    notes: list[str] = []
    t0 = time.perf_counter()
    with connect(None, note=notes.append) as runner:  # the command's default (no $DASK_SCHEDULER_ADDRESS here)
        table = sweep.sweep(jobs, traces, GRID, runner)
        where = runner.description
    default = time.perf_counter() - t0
    same = "identical" if table.equals(serial) else "DIFFERENT"
    print(f"1. small grid, {n} replays: in-process {in_process:.2f} s; default options {default:.2f} s ({where}; table {same}): "
          f"{default / in_process:.2f}x the in-process time (goal <= 1.15)  [{load_note()}]")  # fmt: skip
    for line in notes:
        print(f"   {line}")


def local_start(jobs: pl.DataFrame, traces: Traces) -> None:
    shared = {"jobs": {t: jobs.filter(pl.col("trace") == t).select(sweep.JOB_COLUMNS) for t in sweep.present_traces(jobs)},
              "traces": Traces(traces.train, traces.power)}  # fmt: skip
    t0 = time.perf_counter()
    with connect("local", workers=2) as runner:
        started = time.perf_counter() - t0
        runner.map(lambda i, **_: _loaded(i), [0, 1], shared)  # both workers: code loaded, inputs scattered
        ready = time.perf_counter() - t0
    print(f"2. local cluster of 2: {started:.1f} s to start, {ready:.1f} s until both workers replay "
          f"(LOCAL_START_SECONDS = {LOCAL_START_SECONDS:g})  [{load_note()}]")


def paper_grid(jobs: pl.DataFrame, traces: Traces) -> None:
    chosen = sweep.present_traces(jobs)
    n = len(sweep.replays(sweep.PAPER_GRID, chosen))
    job_replays = sum(jobs.filter(pl.col("trace") == r.trace).height for r in sweep.replays(sweep.PAPER_GRID, chosen))
    t0 = time.perf_counter()
    serial = sweep.sweep(jobs, traces, sweep.PAPER_GRID, SerialRunner())
    in_process = time.perf_counter() - t0
    print(f"3. paper grid, {n} replays: in-process {in_process:.1f} s ({in_process / job_replays * 1e9:.0f} ns per job "
          f"and replay)  [{load_note()}]")
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as folder, running_scheduler(Path(folder)) as (address, workers):
        with connect(address) as runner:
            fan_out(runner, _loaded, [0, 1], {})  # the running workers' code loaded, as on a cluster in use
            t0 = time.perf_counter()
            table = sweep.sweep(jobs, traces, sweep.PAPER_GRID, runner)
            on_two = time.perf_counter() - t0
        same = "identical" if table.equals(serial) else "DIFFERENT"
        print(f"   2 single-thread workers of a running scheduler: {on_two:.1f} s, {in_process / on_two:.2f}x in-process "
              f"(goal >= 1.5x), table {same}  [{load_note()}]")  # fmt: skip
        with connect(address) as runner:
            victim = workers[0]
            done: list[int] = []

            def kill_after_first(_: int) -> None:
                done.append(1)
                if len(done) == 1:
                    victim.send_signal(signal.SIGKILL)

            original = runner.map
            runner.map = lambda fn, tasks, shared, on_done=None: original(fn, tasks, shared, kill_after_first)  # type: ignore[method-assign]
            t0 = time.perf_counter()
            table = sweep.sweep(jobs, traces, sweep.PAPER_GRID, runner)
            killed = time.perf_counter() - t0
        same = "identical" if table.equals(serial) else "DIFFERENT"
        print(f"   the same with a worker killed after the first task: {killed:.1f} s, table {same}  [{load_note()}]")


def main() -> None:
    jobs, traces = load()
    print(f"{os.cpu_count()} cores here; traces {', '.join(sweep.present_traces(jobs))}")
    small_grid(jobs, traces)
    local_start(jobs, traces)
    paper_grid(jobs, traces)


if __name__ == "__main__":
    main()
