"""``--scheduler slurm``: dask-jobqueue's SLURMCluster for ``whatif``'s samples and ``sweep`` (pipelines/scaleout/jobqueue.py).

No Slurm here. The job script is read as generated (``cluster.job_script()``); the errors found
before anything is submitted are one line with exit code 2; and, with a stand-in ``sbatch`` that
runs each job script on this machine (tests/support/fake_slurm.py), the whole path runs for real:
the job script's worker command reaches the scheduler, the numbers equal the in-process ones bit
for bit, and every job is cancelled when the command ends, by Ctrl-C and SIGTERM included.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dask
import polars as pl
import pytest

from pipelines.cli import main
from pipelines.clusters import mapping, sweep, whatif
from pipelines.clusters.profiles import profiles_of
from pipelines.clusters.workloads import workloads_by_default_tta
from pipelines.home.paths import REPO_ROOT
from pipelines.ingest.simulator_inputs import read_trace_dir
from pipelines.ingest.slurm import read_sacct
from pipelines.scaleout.jobqueue import SlurmError, SlurmOptions, check_walltime, make_cluster
from pipelines.scaleout.runners import SerialRunner
from tests.support import fake_slurm
from tests.support.sacct_export import write_export
from tests.support.sweep_inputs import write_sweep_inputs

#: Every form sbatch --time accepts (Slurm's src/common/parse_time.c: _is_valid_timespec, time_str2secs); fields unbounded.
ACCEPTED = ("90", "0", "10:30", "01:30:00", "1:90:00", "2-12", "2-12:30", "2-12:30:15", "UNLIMITED", "infinite", " 45 ")
#: Forms it refuses: a unit, a fraction, a missing field, a colon before the dash, too many fields.
REFUSED = ("", "1h", "1.5", "90m", ":30", "10:", "1::2", "1:2:3:4", "2-", "-5", "1-2-3", "2-1:2:3:4", "12:30-2", "2 days")
#: No dashboard on a fixed port (tests run side by side).
QUIET = {"scheduler_options": {"dashboard_address": ":0"}}
#: One worker process a job: the jobs run on this (2-core) machine.
SLURM_ARGS = ["--scheduler", "slurm", "--slurm-cores", "1", "--slurm-memory", "2GB", "--slurm-walltime", "15", "--slurm-queue", "fakeq"]


@pytest.mark.parametrize("walltime", ACCEPTED)
def test_walltimes_slurm_accepts(walltime: str) -> None:
    assert check_walltime(walltime) == walltime.strip()


@pytest.mark.parametrize("walltime", REFUSED)
def test_walltimes_slurm_refuses(walltime: str) -> None:
    with pytest.raises(SlurmError, match="is not a time limit Slurm accepts"):
        check_walltime(walltime)


def test_the_job_script_holds_the_options_this_python_and_the_scheduler() -> None:
    options = SlurmOptions(queue="gpu", account="proj42", walltime="2-00:30:00", cores=8, memory="32GB",
                           job_extra_directives=("--gres=gpu:1", "--constraint=a100"))
    with make_cluster(options, **QUIET) as cluster:
        script, address = cluster.job_script(), cluster.scheduler_address
    directives = [line for line in script.splitlines() if line.startswith("#SBATCH")]
    # 32 GB = 29.8 GiB: dask-jobqueue asks for whole GiB
    assert directives == ["#SBATCH -J dask-worker", "#SBATCH -p gpu", "#SBATCH -A proj42", "#SBATCH -n 1", "#SBATCH --cpus-per-task=8",
                          "#SBATCH --mem=30G", "#SBATCH -t 2-00:30:00", "#SBATCH --gres=gpu:1", "#SBATCH --constraint=a100"]
    command = script.strip().splitlines()[-1].split()
    assert command[:3] == [sys.executable, "-m", "distributed.cli.dask_worker"] and command[3] == address
    assert address.startswith("tcp://") and not address.startswith("tcp://127.")  # an address the nodes can reach, not loopback
    flags = dict(zip(command[4::2], command[5::2], strict=False))
    assert flags["--nworkers"] == "8" and flags["--nthreads"] == "1"  # one single-threaded worker per core


def test_dask_config_fills_what_the_options_leave_out() -> None:
    config = {"jobqueue.slurm.queue": "cfgq", "jobqueue.slurm.account": "cfgacct", "jobqueue.slurm.cores": 4, "jobqueue.slurm.memory": "8GiB",
              "jobqueue.slurm.walltime": "45", "jobqueue.slurm.processes": 2, "jobqueue.slurm.job-extra-directives": ["--exclusive"]}
    with dask.config.set(config), make_cluster(SlurmOptions(queue="optq", job_extra_directives=("--gres=gpu:1",)), **QUIET) as cluster:
        script = cluster.job_script()
    for line in ("#SBATCH -p optq", "#SBATCH -A cfgacct", "#SBATCH --cpus-per-task=4", "#SBATCH --mem=8G", "#SBATCH -t 45",
                 "#SBATCH --exclusive", "#SBATCH --gres=gpu:1"):
        assert line in script.splitlines(), line
    assert "--nworkers 2 --nanny" in script and "--nthreads 2" in script  # the config's processes win over one per core
    with dask.config.set({"jobqueue.slurm.walltime": "1:2:3:4"}), pytest.raises(SlurmError, match=r"jobqueue.slurm.walltime \(Dask config\)"):
        make_cluster(SlurmOptions(cores=1, memory="1GB"))


def _one_line_error(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(args)
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == "", (out, err)
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_bad_slurm_input_is_one_line_and_exit_code_2(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    export = tmp_path / "x.sacct"
    write_export(export, 20, seed=1, timezone="UTC")
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # no sbatch here, whatever the machine has
    whatif_args = ["whatif", str(export), "--scheduler", "slurm"]
    sweep_args = ["sweep", "--output", str(tmp_path / "g.parquet"), "--scheduler", "slurm"]
    sized = ["--slurm-cores", "2", "--slurm-memory", "4GB"]
    cases = [
        (whatif_args + sized, "sbatch is not on the PATH; run on a Slurm login node, or use --scheduler local"),
        (sweep_args + sized, "sbatch is not on the PATH"),
        (whatif_args + [*sized, "--slurm-walltime", "1:2:3:4"], "--slurm-walltime '1:2:3:4' is not a time limit Slurm accepts"),
        (sweep_args + [*sized, "--slurm-walltime", "2 days"], "--slurm-walltime '2 days' is not a time limit Slurm accepts"),
        (whatif_args, "needs the cores and memory of a job: --slurm-cores and --slurm-memory"),
        (whatif_args + ["--slurm-cores", "2", "--slurm-memory", "lots"], "--slurm-memory 'lots' is not a size"),
        (["whatif", str(export), "--slurm-queue", "gpu"], "--slurm-queue needs --scheduler slurm"),
    ]
    for args, message in cases:
        assert message in _one_line_error(capsys, args), args
    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)  # the extra not installed: its import fails
    for args in (whatif_args + sized, sweep_args + sized):
        assert "needs dask-jobqueue: pip install 'gpu-energy-pipelines[slurm]'" in _one_line_error(capsys, args)


# ---------------------------------------------------------------------------------------------
# with a stand-in sbatch: the jobs run on this machine


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    folder = tmp_path / "slurm"
    env = {**os.environ, **fake_slurm.install(folder), "GPU_ENERGY_HOME": str(tmp_path / "home"),
           "DASK_JOBQUEUE__SLURM__SCHEDULER_OPTIONS": '{"dashboard_address": ":0"}'}
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    (tmp_path / "home").mkdir()
    try:
        yield folder, env
    finally:
        fake_slurm.kill_all(folder)


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("slurm_export") / "lab.sacct"
    write_export(path, 300, seed=8, timezone="UTC", span_days=6)
    return path


def _gone(folder: Path, job: str, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while fake_slurm.alive(folder, job):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@pytest.mark.slow
def test_whatif_samples_on_slurm_jobs_equal_in_process(fake: tuple[Path, dict[str, str]], export: Path, mirror: Path) -> None:
    folder, env = fake
    done = subprocess.run([sys.executable, "-m", "pipelines", "whatif", str(export), "--timezone", "UTC", "--trace-dir", str(mirror / "zeus"),
                           "--samples", "3", "--json", "--no-progress", *SLURM_ARGS],
                          env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report.pop("runner").startswith("Slurm jobs of scheduler tcp://")
    assert "[slurm] scheduler tcp://" in done.stderr and "(adaptive, 1 to 4 jobs)" in done.stderr

    result = read_sacct(export, trace=report["trace"], source_file=str(export), timezone="UTC")
    expected = whatif.run(result, profiles_of(read_trace_dir(mirror / "zeus")), whatif.Options(samples=3))[0]
    expected.pop("runner")
    expected["zeus_traces"] = str(mirror / "zeus")
    assert json.dumps(report) == json.dumps(expected)  # bit for bit

    jobs = fake_slurm.jobs(folder)
    assert jobs and set(fake_slurm.cancelled(folder)) == set(jobs) and all(_gone(folder, j) for j in jobs)  # every job cancelled
    script = (folder / f"job-{jobs[0]}.sh").read_text()
    # sbatch --test-only saw the script submitted (its worker named as job_script() names it before a job has a name)
    assert (folder / "tested-0.sh").read_text() == script.replace("--name SLURMCluster-0 ", "--name dummy-name ")
    assert "#SBATCH -p fakeq" in script and "#SBATCH -t 15" in script and f"{sys.executable} -m distributed.cli.dask_worker" in script
    assert "Registered to:" in (folder / f"job-{jobs[0]}.out").read_text()  # the job's worker command reached the scheduler


@pytest.mark.slow
def test_sweep_on_slurm_jobs_equals_in_process(fake: tuple[Path, dict[str, str]], export: Path, mirror: Path, tmp_path: Path) -> None:
    folder, env = fake
    traces = read_trace_dir(mirror / "zeus")
    jobs = mapping.map_own(read_sacct(export, trace="lab", source_file="lab.sacct", timezone="UTC").table, workloads_by_default_tta(traces),
                           "lab")
    assets = write_sweep_inputs(tmp_path / "assets", jobs, traces)
    grid = sweep.Grid(etas=(0.0, 1.0), betas=(2.0,), seeds=(1,), gpus=("v100",), policies=("zeus", "default"))
    out = tmp_path / "grid.parquet"
    done = subprocess.run([sys.executable, "-m", "pipelines", "sweep", "--gpus", "v100", "--eta", "0,1", "--beta", "2", "--seeds", "1",
                           "--policies", "zeus,default", "--assets", str(assets), "--output", str(out), "--no-progress", *SLURM_ARGS,
                           "--slurm-fixed", "--slurm-jobs", "1"],
                          env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "(1 jobs)" in done.stderr and "on Slurm jobs of scheduler" in done.stderr
    assert pl.read_parquet(out).equals(sweep.sweep(jobs, traces, grid, SerialRunner()))
    (job,) = fake_slurm.jobs(folder)
    assert set(fake_slurm.cancelled(folder)) == {job} and _gone(folder, job)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_cancel_the_jobs(fake: tuple[Path, dict[str, str]], export: Path, mirror: Path, sig: signal.Signals) -> None:
    folder, env = fake
    process = subprocess.Popen([sys.executable, "-m", "pipelines", "whatif", str(export), "--timezone", "UTC", "--trace-dir",
                                str(mirror / "zeus"), "--samples", "2000", "--json", "--no-progress", *SLURM_ARGS, "--slurm-jobs", "1"],
                               env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not any("Registered to:" in p.read_text() for p in folder.glob("job-*.out")):  # a worker runs the samples
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.2)
        process.send_signal(sig)
        out, err = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130 and out == "" and err.rstrip().endswith("Aborted."), err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    jobs = fake_slurm.jobs(folder)
    assert jobs and set(fake_slurm.cancelled(folder)) == set(jobs) and all(_gone(folder, j) for j in jobs)
