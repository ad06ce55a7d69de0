"""Dask workers as Slurm jobs: dask-jobqueue's ``SLURMCluster`` for ``--scheduler slurm`` (``sweep``, ``whatif``'s samples).

The scheduler runs in this process (on the login node); each Slurm job runs ``processes`` worker
processes of one thread each (the replay is pure-Python CPU work), with this very Python
(``sys.executable``) and a worker command that connects back to the scheduler's address. The
workers need this package importable in that environment (the same clone or wheel, so a shared
filesystem or the same install on every node), nothing more: the tasks' inputs travel through
Dask.

Settings come, as dask-jobqueue users expect, from the options given (``SlurmOptions``), else
from Dask's configuration ``jobqueue.slurm`` (``~/.config/dask/jobqueue.yaml``, ``DASK_JOBQUEUE__SLURM__*``):
queue, account, walltime, cores, memory and job_extra_directives, and every other key of that
section (interface, log-directory, job-script-prologue, scheduler-options, ...). When neither
sets ``processes``, a job runs one worker process per core. Scaling is adaptive by default:
between one job and ``jobs`` jobs as the work asks (``SlurmOptions.adaptive`` False: exactly
``jobs`` jobs). The cluster is closed, and its jobs cancelled with ``scancel``, when the block
ends: normally, on an error, on Ctrl-C and on SIGTERM.

dask-jobqueue is the optional extra ``slurm`` (``pip install 'gpu-energy-pipelines[slurm]'``),
imported only here and only when a Slurm cluster is asked for. Every problem found before
anything is submitted is a ``SlurmError`` of one line: the extra missing, no ``sbatch`` on the
PATH, a walltime Slurm would refuse, no cores or memory, or a job script ``sbatch --test-only``
refuses (an unknown partition or account, a limit exceeded).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from pipelines.home import interrupt

#: The ``--scheduler`` value.
SLURM = "slurm"
#: The optional extra holding dask-jobqueue.
EXTRA = "slurm"
#: Jobs at most (adaptive) or exactly (fixed) when not given.
DEFAULT_JOBS = 4
#: Seconds between two notes while no worker has joined (the jobs wait in Slurm's queue).
WAIT_NOTE_S = 60.0
#: The time formats sbatch's --time accepts (Slurm's ``time_str2secs``, src/common/parse_time.c).
WALLTIME_FORMATS = "minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"
_WALLTIME = re.compile(r"\d+(:\d+){0,2}|\d+-\d+(:\d+){0,2}")
_UNLIMITED = ("INFINITE", "UNLIMITED")


class SlurmError(ValueError):
    """A Slurm cluster that cannot be started as asked: one line saying what to change."""


@dataclass(frozen=True)
class SlurmOptions:
    """What the jobs ask Slurm for; None (or empty) takes the value of Dask's ``jobqueue.slurm`` config.

    ``walltime``: a time sbatch's ``--time`` accepts; ``memory``: per job, e.g. ``32GB``;
    ``job_extra_directives``: more ``#SBATCH`` lines (``--gres=gpu:1``, ``--constraint=...``);
    ``jobs``: at most that many jobs (adaptive) or exactly that many (``adaptive`` False).
    """

    queue: str | None = None
    account: str | None = None
    walltime: str | None = None
    cores: int | None = None
    memory: str | None = None
    job_extra_directives: tuple[str, ...] = field(default_factory=tuple)
    jobs: int | None = None
    adaptive: bool = True


def check_walltime(text: str, where: str = "--slurm-walltime") -> str:
    """``text`` stripped when sbatch's ``--time`` accepts it (``WALLTIME_FORMATS``, or UNLIMITED / INFINITE), else ``SlurmError``.

    The forms are Slurm's own (``_is_valid_timespec`` and ``time_str2secs``): digits only, at most
    one ``-`` before at most two ``:``, every field present; fields are not range-checked (Slurm
    reads ``90`` as 90 minutes and ``1:90:00`` as 2 h 30 min).
    """
    value = str(text).strip()
    if _WALLTIME.fullmatch(value) or value.upper() in _UNLIMITED:
        return value
    raise SlurmError(f"{where} {text!r} is not a time limit Slurm accepts: give {WALLTIME_FORMATS} (e.g. 90, 01:30:00, 2-00)")


def _config(key: str) -> Any:
    import dask

    return dask.config.get(f"jobqueue.slurm.{key}", None)


def cluster_kwargs(options: SlurmOptions) -> dict[str, Any]:
    """``SLURMCluster``'s keyword arguments: the options given, this Python, and one process per core unless configured.

    Raises ``SlurmError`` for a bad walltime (given or configured), no cores or memory, or a memory that is no size.
    """
    from dask.utils import parse_bytes

    kwargs: dict[str, Any] = {k: v for k, v in (("queue", options.queue), ("account", options.account), ("cores", options.cores),
                                                ("memory", options.memory)) if v is not None}
    if options.walltime is not None:
        kwargs["walltime"] = check_walltime(options.walltime)
    elif _config("walltime") is not None:
        check_walltime(_config("walltime"), "jobqueue.slurm.walltime (Dask config)")
    if options.job_extra_directives:
        kwargs["job_extra_directives"] = [*(_config("job-extra-directives") or []), *options.job_extra_directives]
    cores, memory = kwargs.get("cores", _config("cores")), kwargs.get("memory", _config("memory"))
    if cores is None or memory is None:
        raise SlurmError("--scheduler slurm needs the cores and memory of a job: --slurm-cores and --slurm-memory, or cores and "
                         "memory under jobqueue.slurm in the Dask config (~/.config/dask/jobqueue.yaml)")
    try:
        parse_bytes(memory)
    except (ValueError, TypeError):
        raise SlurmError(f"--slurm-memory {memory!r} is not a size (e.g. 32GB, 64GiB)") from None
    if _config("processes") is None:
        kwargs["processes"] = int(cores)  # one single-threaded worker per core
    if _config("python") is None:
        kwargs["python"] = sys.executable  # the workers run this very environment
    return kwargs


def _import_cluster_class() -> Any:
    """``dask_jobqueue.SLURMCluster``, leaving this process's SIGINT handler as it was.

    dask-jobqueue 0.9.0 sets ``signal.signal(SIGINT, lambda *_: sys.exit())`` when imported
    (``dask_jobqueue/runner.py``; dask/dask-jobqueue#696, fixed after 0.9.0 by #697): Ctrl-C would
    then end the command with exit code 0, silently. The handler in place before is put back.
    """
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGINT) if main else None
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise SlurmError(f"--scheduler slurm needs dask-jobqueue: pip install 'gpu-energy-pipelines[{EXTRA}]' (in this environment), "
                         "or use --scheduler local or a scheduler address tcp://HOST:PORT") from None
    finally:
        if main and before is not None:
            signal.signal(signal.SIGINT, before)
    return SLURMCluster


def check(options: SlurmOptions) -> dict[str, Any]:
    """Every check that needs no Slurm job (see the package docstring); the cluster's keyword arguments. ``SlurmError`` else."""
    _import_cluster_class()
    kwargs = cluster_kwargs(options)
    if shutil.which("sbatch") is None:
        raise SlurmError("--scheduler slurm: sbatch is not on the PATH; run on a Slurm login node, or use --scheduler local "
                         "(this machine) or a scheduler address tcp://HOST:PORT")
    return kwargs


def make_cluster(options: SlurmOptions, **kwargs: Any) -> Any:
    """A ``SLURMCluster`` for ``options`` (its scheduler started here), no job submitted yet; ``kwargs`` add to or override its
    arguments (tests: ``scheduler_options``). Needs no Slurm: its ``job_script()`` is the script each job runs."""
    cls = _import_cluster_class()
    return cls(**{**cluster_kwargs(options), **kwargs})


def validate_job_script(script: str) -> None:
    """``sbatch --test-only`` on ``script``: Slurm validates it (partition, account, limits) without submitting; ``SlurmError`` with
    Slurm's own message when it refuses."""
    with tempfile.NamedTemporaryFile("w", suffix=".sh", prefix="gpu-energy-slurm-", delete=False) as f:
        f.write(script)
    try:
        done = subprocess.run(["sbatch", "--test-only", f.name], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SlurmError(f"--scheduler slurm: sbatch --test-only failed: {exc}") from None
    finally:
        os.unlink(f.name)
    if done.returncode != 0:
        message = " ".join((done.stderr or done.stdout).split()) or f"exit code {done.returncode}"
        raise SlurmError(f"--scheduler slurm: Slurm refuses the job script (sbatch --test-only): {message}")


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt in this block (main thread only), so that a killed command still cancels its jobs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def slurm_cluster(options: SlurmOptions, note: Callable[[str], None] | None = None) -> Iterator[Any]:
    """A started ``SLURMCluster``: checked, its job script tested by Slurm, scaled (adaptive: 1 to ``jobs`` jobs; fixed:
    ``jobs``); closed on exit, its jobs cancelled, Ctrl-C and SIGTERM included. ``note``: where progress lines go."""
    check(options)
    jobs = options.jobs or DEFAULT_JOBS
    with _sigterm_as_interrupt():
        cluster = make_cluster(options)
        try:
            validate_job_script(cluster.job_script())
            if options.adaptive:
                cluster.adapt(minimum_jobs=1, maximum_jobs=jobs)
            else:
                cluster.scale(jobs=jobs)
            if note is not None:
                how = f"adaptive, 1 to {jobs} jobs" if options.adaptive else f"{jobs} jobs"
                note(f"[slurm] scheduler {cluster.scheduler_address} ({how}); dashboard {cluster.dashboard_link}")
            yield cluster
        except BaseException:
            # interrupted or failed: the teardown's own complaints (closed comms, lost scattered data) would bury the one line that matters
            for name in ("distributed", "asyncio", "tornado"):
                logging.getLogger(name).setLevel(logging.CRITICAL)
            raise
        finally:
            with interrupt.deferred():  # its jobs cancelled, even where a Ctrl-C's watchdog would end the command first
                cluster.close()


def wait_for_workers(client: Any, note: Callable[[str], None] | None = None, every_s: float = WAIT_NOTE_S) -> None:
    """Block until a worker has joined (its job left Slurm's queue and connected), noting every ``every_s`` seconds."""
    started = time.monotonic()
    last = started
    while not client.scheduler_info().get("workers"):
        now = time.monotonic()
        if note is not None and now - last >= every_s:
            note(f"[slurm] waiting for a job to start ({now - started:.0f} s; squeue --me shows the queue)")
            last = now
        time.sleep(0.5)
