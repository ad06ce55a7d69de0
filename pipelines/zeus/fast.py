"""The fast group replay: the same runs as ``reference.replay_group`` (bit for bit), compiled with numba.

``replay_groups`` (``pipelines.zeus.groups``) validates its input and builds the workload tables,
then hands the replay to one of two engines that give identical tables:

* ``reference``: the pure-Python replay (``reference.replay_group`` per group), the readable
  specification and the test oracle;
* ``fast``: this module: the groups, tables and policy packed into arrays, replayed by
  ``kernels.replay_groups_kernel`` (about 50-100x faster per run, see ``bench/bench_replay.py``).

``replay_totals`` runs many replays of one trace (a sweep's (eta, beta, seed) under one policy) in
one pass of the kernel and returns only their totals, exactly as ``math.fsum`` sums ``replay``'s runs.

The engine is chosen by ``engine=`` or ``$GPU_ENERGY_REPLAY`` (``auto``, ``fast``, ``reference``).
``auto`` (the default) takes the fast path when numba is installed and the call is large enough
to pay for loading the compiled code (``AUTO_MIN_JOBS`` job replays) or that code is loaded
already; smaller calls (a command replaying a trace once) stay in plain Python. The first call in
a process imports numba and loads the compiled kernel from numba's cache (about 0.5 s; compiling
it, once per machine, takes about 20 s of CPU): see ``kernels``.

Errors: the kernel stops at the first group where the reference raises; that group is then
replayed by the reference, which raises the genuine exception with its message. So the fast path
refuses exactly what the reference refuses, with the same words.

This module imports numpy, polars and ``pipelines.zeus`` modules only; numba is imported on first use.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, NamedTuple

import numpy as np
import polars as pl

from pipelines.vocabulary import DEFAULT_BETA, DEFAULT_ETA, PolicyName
from pipelines.zeus.errors import SimulationError
from pipelines.zeus.policies import FixedPolicy, make_policy
from pipelines.zeus.reference import group_seed, replay_group
from pipelines.zeus.traces import WorkloadTable

Engine = Literal["auto", "fast", "reference"]
ENGINES: tuple[Engine, ...] = ("auto", "fast", "reference")
#: The environment variable that picks the engine when a caller does not.
ENGINE_ENV = "GPU_ENERGY_REPLAY"
#: ``auto`` takes the fast path for at least this many job replays (jobs x policies of one call) even
#: before its code is loaded. Loading numba and the cached kernel costs 0.5 to 1 s in a fresh process;
#: the Python replay costs about 6 us per job more under Zeus and 2 us under a baseline, so a command
#: that replays one trace of 70,000 jobs once is faster in Python, and the three policies of
#: ``simulate_trace`` over it (210,000) are faster compiled. Once loaded, every replay is compiled.
AUTO_MIN_JOBS = 150_000
#: With a progress bar, the kernel runs on chunks of about this many jobs (one bar update each).
_PROGRESS_CHUNK_JOBS = 4_096
#: The compiled kernels once loaded in this process (``kernels()``): {"module": pipelines.zeus.kernels}.
_LOADED: dict[str, ModuleType] = {}
_LOADING = threading.Lock()


class FastPathUnavailable(RuntimeError):
    """``engine="fast"`` without numba installed."""


class EngineMismatch(AssertionError):
    """The kernel stopped at a group that the reference replays without error: a bug in the fast path."""


def available() -> bool:
    """Whether numba is installed (the fast path can run)."""
    return importlib.util.find_spec("numba") is not None


def loaded() -> bool:
    """Whether the compiled kernel is loaded in this process already (a further call costs nothing extra)."""
    return "module" in _LOADED


def kernels() -> ModuleType:
    """``pipelines.zeus.kernels`` with its replay kernel compiled or loaded from numba's cache.

    The first call in a process imports numba and calls the kernel once on a tiny input, under a
    lock shared by the processes of this user: on a machine where nothing is cached yet, one
    process compiles (about 20 s) while the others (Dask workers, parallel test workers, Dagster
    steps) wait and then load its cache instead of compiling too. Once a process has compiled or
    loaded this source's kernel under the lock held alone, it says so in a stamp beside the lock;
    while the stamp names this source, processes load side by side (a shared lock: a local
    cluster's workers start at once instead of one after the other, about 1 s each here).
    """
    with _LOADING:  # the threads of one process load it once
        if "module" not in _LOADED:
            stamp = _cache_stamp()
            warm = stamp is not None and _stamped() == stamp
            with _compile_lock(shared=warm):
                from pipelines.zeus import kernels as module

                _warm_up(module)
                if not warm and stamp is not None:
                    _write_stamp(stamp)
            _LOADED["module"] = module
    return _LOADED["module"]


def compile_in_background() -> subprocess.Popen[bytes] | None:
    """Start a process that compiles the kernel into numba's cache (``kernels()``), where numba is installed; it ends by
    itself. A process that replays later loads the kernel (about 0.5 s) instead of compiling it (about 20 s of CPU), or
    waits on the compile lock for this one to finish. Where the cache holds the kernel already, it only loads it.

    Killed midway, it leaves no broken cache: numba writes each cache file whole (a temp file renamed)."""
    if not available():
        return None
    command = [sys.executable, "-c", "from pipelines.zeus.fast import kernels; kernels()"]
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _lock_path() -> Path:
    """The per-user lock file of the kernel's compile, in the temporary folder (its stamp beside it: ``.stamp``)."""
    return Path(tempfile.gettempdir()) / f"gpu-energy-pipelines-numba-{os.getuid()}.lock"


@contextlib.contextmanager
def _compile_lock(shared: bool = False) -> Iterator[None]:
    """A ``flock`` on ``_lock_path()``, exclusive unless ``shared``; no lock where that cannot be had."""
    try:
        import fcntl

        handle = _lock_path().open("a")
    except (ImportError, OSError):  # not POSIX, or no writable temporary folder: compile without the lock
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _cache_stamp() -> str | None:
    """What numba's cache of the kernel is valid for: the source file (path, size, modification time, as numba's index
    checks it), numba, this Python and the cache folder asked for; None where the source cannot be seen."""
    spec = importlib.util.find_spec("pipelines.zeus.kernels")
    if spec is None or spec.origin is None:
        return None
    try:
        st = os.stat(spec.origin)
    except OSError:
        return None
    from importlib.metadata import version

    return f"{spec.origin} {st.st_size} {st.st_mtime_ns} numba {version('numba')} {sys.executable} {os.environ.get('NUMBA_CACHE_DIR', '')}"


def _stamp_path() -> Path:
    return _lock_path().with_suffix(".stamp")


def _stamped() -> str | None:
    """The stamp a process wrote after it compiled or loaded the kernel alone (``kernels``); None when there is none."""
    try:
        return _stamp_path().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _write_stamp(stamp: str) -> None:
    """Write ``stamp`` whole (a temp file renamed over it); where it cannot be written, the next process locks alone again."""
    path = _stamp_path()
    temp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        temp.write_text(stamp, encoding="utf-8")
        os.replace(temp, path)
    with contextlib.suppress(OSError):
        temp.unlink(missing_ok=True)


def _warm_up(module: ModuleType) -> None:
    """Compile (or load) the kernel's one signature: one group of one job, every argument typed as ``replay`` types it."""
    i1, f1, i2, f2 = np.zeros(1, np.int64), np.ones(1, np.float64), np.ones((1, 1), np.int64), np.ones((1, 1), np.float64)
    jobs = module.Jobs(np.array([0, 1], np.int64), i1.copy(), np.ones(1, np.uint64), f1 - 1, f1.copy(), f1.copy(), f1.copy())
    tables = module.Tables(i1 + 1, i1.copy(), f1.copy(), i2.copy(), i2.copy(), f2.copy(), f2.copy(), i2.copy(), np.ones((1, 1, 1), np.int64),
                           np.ones((1, 1, 1), np.float64), np.ones((1, 1, 1), np.float64), i2 - 1, i2.copy(), f1.copy())  # fmt: skip
    policy = module.PolicyArrays(module.POLICY_FIXED, 1.0, np.zeros(2, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), f1 / 2,
                                 f1 * math.inf, np.zeros((1, 1), np.uint64), i1.copy(), np.zeros((1, 1), np.bool_), np.ones((1, 1, 1), np.int64),
                                 i2.copy(), i2.copy())  # fmt: skip
    module.replay_groups_kernel(0, 1, jobs, tables, policy, 1, 1)


def resolve_engine(engine: str | None, jobs: int) -> Literal["fast", "reference"]:
    """The engine for ``jobs`` job replays (jobs x policies): ``engine``, else ``$GPU_ENERGY_REPLAY``, else ``auto``.

    Raises ``ValueError`` for an unknown name and ``FastPathUnavailable`` for ``fast`` without numba.
    """
    chosen = engine or os.environ.get(ENGINE_ENV) or "auto"
    if chosen not in ENGINES:
        source = "engine" if engine else f"${ENGINE_ENV}"
        raise ValueError(f"{source} must be one of {', '.join(ENGINES)}, got {chosen!r}")
    if chosen == "reference":
        return "reference"
    if chosen == "fast":
        if not available():
            raise FastPathUnavailable("the fast replay needs numba (pip install numba), or choose the reference engine")
        return "fast"
    return "fast" if available() and (loaded() or jobs >= AUTO_MIN_JOBS) else "reference"


def batch_engine() -> str:
    """The engine for many replays in one process (a sweep): ``$GPU_ENERGY_REPLAY`` when set, else ``fast`` where numba is installed."""
    return os.environ.get(ENGINE_ENV) or ("fast" if available() else "reference")


@dataclass(frozen=True)
class GroupArrays:
    """A conformed group table as arrays: groups sorted, each group's jobs by start time (ties in table order).

    Group ``g`` (``names[g]``) holds jobs ``bounds[g]:bounds[g + 1]`` of ``start``/``end`` (s) and
    ``ratio`` (runtime_ratio); ``dataset[g]`` indexes ``datasets`` (sorted). The order is
    ``reference.iter_groups``'s, which the reference replays in.
    """

    names: list[str]
    datasets: list[str]
    dataset: np.ndarray  # int64 per group
    bounds: np.ndarray  # int64, groups + 1
    start: np.ndarray  # float64 per job, s
    end: np.ndarray  # float64 per job, s
    ratio: np.ndarray  # float64 per job

    def group(self, g: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, end, ratio) of group ``g``'s jobs."""
        lo, hi = int(self.bounds[g]), int(self.bounds[g + 1])
        return self.start[lo:hi], self.end[lo:hi], self.ratio[lo:hi]


def group_arrays(groups: pl.DataFrame) -> GroupArrays:
    """``groups`` (conformed: ``groups.conform_groups``) as ``GroupArrays``."""
    # Sorting by the rank of the group among the (few) sorted ids is the string sort's order, faster.
    names = groups["group"].unique().sort()
    rank = groups["group"].cast(pl.Enum(names)).to_physical().alias("_rank")
    ordered = groups.with_columns(rank).sort(["_rank", "start_time"], maintain_order=True)  # stable: ties in table order
    ranks = ordered["_rank"].to_numpy().astype(np.int64)
    heads = np.flatnonzero(np.diff(ranks, prepend=-1)).astype(np.int64)
    per_group = ordered["dataset"].gather(heads).to_list()  # one dataset per group (conform_groups)
    datasets = sorted(set(per_group))
    index = {ds: d for d, ds in enumerate(datasets)}
    return GroupArrays(
        names=names.to_list(),
        datasets=datasets,
        dataset=np.array([index[ds] for ds in per_group], dtype=np.int64),
        bounds=np.append(heads, ordered.height).astype(np.int64),
        # copies: numba types a read-only array (polars' zero-copy view) as another signature, compiled again
        start=np.array(ordered["start_time"].to_numpy(), dtype=np.float64),
        end=np.array(ordered["end_time"].to_numpy(), dtype=np.float64),
        ratio=np.array(ordered["runtime_ratio"].to_numpy(), dtype=np.float64),
    )


@dataclass(frozen=True)
class RunArrays:
    """Reported runs in replay order, one entry per run (the columns of ``ZeusGroupRuns`` but ``group``)."""

    group: np.ndarray  # int64: index into GroupArrays.names
    job: np.ndarray  # int64: trace job index in its group (by start time)
    start_time: np.ndarray  # float64, s
    end_time: np.ndarray  # float64, s
    bs: np.ndarray  # int64
    pl: np.ndarray  # int64, W
    energy: np.ndarray  # float64, J, scaled by runtime_ratio
    time: np.ndarray  # float64, s, scaled by runtime_ratio
    reached: np.ndarray  # bool

    @property
    def size(self) -> int:
        return int(self.group.size)


def _uint32_words(value: int) -> list[int]:
    """An int as numpy's SeedSequence coerces it: little-endian 32-bit words, [0] for 0."""
    words = [value & 0xFFFFFFFF]
    value >>= 32
    while value:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
    return words


class Knobs(NamedTuple):
    """One replay's knobs: Zeus's ``eta`` and ``beta``, and its ``seed`` knob (None: the artifact's seeding)."""

    eta: float
    beta: float
    seed: int | None


def _tables(datasets: list[str], tables: dict[str, WorkloadTable]) -> Any:
    """The kernel's ``Tables`` of ``datasets`` (in that order); ValueError for tables of different GPUs."""
    kern = kernels()
    n = len(datasets)
    ordered = [tables[ds] for ds in datasets]
    if len({t.max_power for t in ordered}) != 1:
        raise ValueError(f"tables of different GPUs: MaxPower {sorted({t.max_power for t in ordered})}")
    nb = max(len(t.batch_sizes) for t in ordered)
    nl = max(len(t.by_batch_size[bs].power_limits) for t in ordered for bs in t.batch_sizes)
    i1, f1, i2, f2 = (np.zeros(n, np.int64), np.zeros(n, np.float64), np.zeros((n, nb), np.int64), np.zeros((n, nb), np.float64))
    tab = kern.Tables(
        n_bs=i1.copy(), b0_index=i1 - 1, max_epochs=f1.copy(), bs_value=i2.copy(), max_pl=i2.copy(), first_energy=f2.copy(),
        first_time=f2.copy(), n_lim=i2.copy(), lim_value=np.zeros((n, nb, nl), np.int64), energy_per_epoch=np.zeros((n, nb, nl), np.float64),
        time_per_epoch=np.zeros((n, nb, nl), np.float64), target_offset=i2.copy(), n_targets=i2.copy(), targets=None,
    )  # fmt: skip
    targets: list[float] = []
    for d, table in enumerate(ordered):
        tab.n_bs[d] = len(table.batch_sizes)
        tab.max_epochs[d] = float(table.spec.max_epochs)
        if table.spec.default_bs in table.batch_sizes:
            tab.b0_index[d] = table.batch_sizes.index(table.spec.default_bs)
        for k, bs in enumerate(table.batch_sizes):
            t = table.by_batch_size[bs]
            m = len(t.power_limits)
            tab.bs_value[d, k], tab.max_pl[d, k], tab.n_lim[d, k] = bs, t.max_power_limit, m
            tab.first_energy[d, k], tab.first_time[d, k] = t.profiling_epoch_energy, t.profiling_epoch_time
            tab.lim_value[d, k, :m], tab.energy_per_epoch[d, k, :m], tab.time_per_epoch[d, k, :m] = t.power_limits, t.energy_per_epoch, t.time_per_epoch
            tab.target_offset[d, k], tab.n_targets[d, k] = len(targets), len(t.target_epochs)
            targets.extend(t.target_epochs)
    return tab._replace(targets=np.array(targets, np.float64))


def _policy(datasets: list[str], tables: dict[str, WorkloadTable], policy: PolicyName, knobs: list[Knobs]) -> Any:
    """The kernel's ``PolicyArrays``: ``policy`` on the tables of ``datasets`` (in that order), one state per entry of ``knobs``."""
    kern = kernels()
    ordered = [tables[ds] for ds in datasets]
    n, ns = len(ordered), len(knobs)
    nb = max(len(t.batch_sizes) for t in ordered)
    setup_failed, jit_pl = np.zeros((ns, n), np.bool_), np.zeros((ns, n, nb), np.int64)
    fixed_bs, fixed_pl = np.full((ns, n), -1, np.int64), np.full((ns, n), -1, np.int64)
    words = [_uint32_words(k.seed) if k.seed is not None else [] for k in knobs]
    knob_words = np.zeros((ns, max(1, *(len(w) for w in words))), np.uint64)
    for s, w in enumerate(words):
        knob_words[s, : len(w)] = w
    grid: list[tuple[int, int]] = []
    grid_offset = np.zeros(n + 1, np.int64)
    by_eta: dict[float, int] = {}  # the first state of each eta: what is packed per eta is the same for the others
    for s, eta in enumerate(k.eta for k in knobs):
        if eta in by_eta:
            first = by_eta[eta]
            setup_failed[s], jit_pl[s], fixed_bs[s], fixed_pl[s] = setup_failed[first], jit_pl[first], fixed_bs[first], fixed_pl[first]
            continue
        by_eta[eta] = s
        grid.clear()
        for d, table in enumerate(ordered):
            try:
                # What the reference builds per group; whatever it raises, it raises again when that group is replayed.
                pol = make_policy(policy, table, eta, 0, concurrency=True)
            except Exception:  # the reference raises it at the dataset's first group (_raise_as_reference)
                setup_failed[s, d] = True
                pol = None
            if policy == "zeus":
                for k, bs in enumerate(table.batch_sizes):
                    jit_pl[s, d, k] = table.by_batch_size[bs].best_power_limit(eta)
            if isinstance(pol, FixedPolicy):
                fixed_bs[s, d], fixed_pl[s, d] = pol.config
            if policy == "grid-search" and pol is not None:
                grid.extend(table.configs())  # the same for every eta: configs() does not read it
            grid_offset[d + 1] = len(grid)
    kind = {"zeus": kern.POLICY_ZEUS, "grid-search": kern.POLICY_GRID}.get(policy, kern.POLICY_FIXED)
    return kern.PolicyArrays(
        kind=kind, max_power=float(ordered[0].max_power), grid_offset=grid_offset,
        grid_bs=np.array([bs for bs, _ in grid], np.int64), grid_pl=np.array([limit for _, limit in grid], np.int64),
        eta=np.array([float(k.eta) for k in knobs]), beta=np.array([float(k.beta) if policy == "zeus" else math.inf for k in knobs]),
        knob_words=knob_words, knob_len=np.array([len(w) for w in words], np.int64),
        setup_failed=setup_failed, jit_pl=jit_pl, fixed_bs=fixed_bs, fixed_pl=fixed_pl,
    )  # fmt: skip


def _jobs(arrays: GroupArrays, weight: np.ndarray | None = None) -> Any:
    """The kernel's ``Jobs`` of ``arrays``; ``weight``: each job's energy factor in the totals (num_gpu, replay order)."""
    return kernels().Jobs(
        bounds=arrays.bounds, dataset=arrays.dataset,
        seed=np.array([zlib.adler32(name.encode("utf-8")) for name in arrays.names], np.uint64),
        start=arrays.start, end=arrays.end, ratio=arrays.ratio,
        weight=np.ones(arrays.start.size, np.float64) if weight is None else np.asarray(weight, dtype=np.float64),
    )  # fmt: skip


def replay(
    arrays: GroupArrays,
    tables: dict[str, WorkloadTable],
    eta: float = DEFAULT_ETA,
    beta: float = DEFAULT_BETA,
    seed: int | None = None,
    policy: PolicyName = "zeus",
    progress: bool = False,
    desc: str | None = None,
) -> RunArrays:
    """Every group of ``arrays`` replayed on the tables of its dataset: ``groups.replay_groups``'s runs, as arrays.

    ``tables`` maps each dataset to its ``WorkloadTable`` (one GPU). ``seed``: None is the
    artifact's per-group seed, an int the seed knob (``reference.group_seed``). Raises what the
    reference raises, at the same group.
    """
    kern = kernels()
    if seed is not None:
        group_seed(arrays.names[0], seed)  # the reference's check of the knob (ValueError when negative)
    tab, pol = _tables(arrays.datasets, tables), _policy(arrays.datasets, tables, policy, [Knobs(eta, beta, seed)])
    jobs = _jobs(arrays)
    n_groups = len(arrays.names)
    chunks = _chunks(arrays.bounds, _PROGRESS_CHUNK_JOBS) if progress else [(0, n_groups)]
    parts: list[np.ndarray] = []
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n_groups, unit="group", desc=desc)
    try:
        for chunk_start, g_hi in chunks:
            g_lo = chunk_start
            runs_capacity, history_capacity = _capacities(arrays.bounds, g_lo, g_hi)
            while True:  # a group that outgrows the buffers starts over, with twice the room
                with _ctrl_c_ends_process():
                    runs, n_runs, errors, _, _ = kern.replay_groups_kernel(g_lo, g_hi, jobs, tab, pol, runs_capacity, history_capacity)
                parts.append(runs[:, :n_runs])
                code, group = int(errors[0, 0]), int(errors[0, 1])
                if code == kern.OK:
                    break
                if code != kern.ERR_CAPACITY:
                    _raise_as_reference(arrays, tables, group, code, eta, beta, seed, policy)
                g_lo = group
                runs_capacity, history_capacity = 2 * runs_capacity, 2 * history_capacity
            if bar is not None:
                bar.update(g_hi - chunk_start)
    finally:
        if bar is not None:
            bar.close()
    runs = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
    return RunArrays(
        group=runs[kern.COL_GROUP].astype(np.int64),
        job=runs[kern.COL_JOB].astype(np.int64),
        start_time=np.ascontiguousarray(runs[kern.COL_T0]),
        end_time=np.ascontiguousarray(runs[kern.COL_T1]),
        bs=runs[kern.COL_BS].astype(np.int64),
        pl=runs[kern.COL_PL].astype(np.int64),
        energy=np.ascontiguousarray(runs[kern.COL_ENERGY]),
        time=np.ascontiguousarray(runs[kern.COL_TIME]),
        reached=runs[kern.COL_REACHED] != 0.0,
    )


@contextlib.contextmanager
def _ctrl_c_ends_process() -> Iterator[None]:
    """While a compiled kernel runs (up to minutes of no Python bytecode, so Python's handler of a Ctrl-C would wait for
    its end), a Ctrl-C ends the process at once, by the signal (a shell reports 130); nothing is being written then.

    Only where SIGINT's handler in the main thread raises KeyboardInterrupt (Python's own, or the CLI's: a command such as
    sweep or whatif); a process that handles SIGINT itself (a Dagster run, whose cancel is a SIGINT) keeps its handler.
    """
    handler = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not (
            handler is signal.default_int_handler or getattr(handler, "raises_keyboard_interrupt", False)):  # home.interrupt's
        yield
        return
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)


#: A replay's totals: (reported runs, energy J, time s), the error the replay raises, or None where the batch could not
#: sum it (replay it alone).
Totals = tuple[int, float, float] | SimulationError | None


def replay_totals(arrays: GroupArrays, tables: dict[str, WorkloadTable], weight: np.ndarray, policy: PolicyName, knobs: list[Knobs]) -> list[Totals]:
    """Many replays of one trace on one GPU under ``policy``, one per entry of ``knobs``, in one pass over the jobs.

    Each entry is (runs, energy, time) exactly as ``replay`` gives them, summed as ``math.fsum``
    sums them (energy x ``weight``, each job's num_gpu in replay order); or the ``SimulationError``
    that ``replay`` raises, from the reference's replay of the group the batch stopped at (the first
    where it raises, as ``replay`` stops there too; any other exception propagates); or None for a
    replay the batch set aside (a total is not finite, or its buffers stayed too small after
    ``_TOTALS_TRIES`` passes): the caller replays it alone, which sums it as the single replay does.
    """
    kern = kernels()
    for k in knobs:
        if k.seed is not None:
            group_seed(arrays.names[0], k.seed)  # the reference's check of the knob (ValueError when negative)
    tab, jobs = _tables(arrays.datasets, tables), _jobs(arrays, weight)
    _, history_capacity = _capacities(arrays.bounds, 0, len(arrays.names))
    out: list[Totals] = [None] * len(knobs)
    todo = list(range(len(knobs)))
    for _ in range(_TOTALS_TRIES):  # the states whose rewards outgrew the buffer go again, together, with twice the room
        pol = _policy(arrays.datasets, tables, policy, [knobs[s] for s in todo])
        with _ctrl_c_ends_process():
            _, _, errors, counts, sums = kern.replay_groups_kernel(0, len(arrays.names), jobs, tab, pol, 0, history_capacity)
        again = []
        for row, s in enumerate(todo):
            code, group = int(errors[row, 0]), int(errors[row, 1])
            if code == kern.OK:
                out[s] = (int(counts[row]), float(sums[row, 0]), float(sums[row, 1]))
            elif code == kern.ERR_CAPACITY:
                again.append(s)
            elif code != kern.ERR_INEXACT:
                try:
                    _raise_as_reference(arrays, tables, group, code, *knobs[s], policy)
                except SimulationError as exc:
                    out[s] = exc
        if not again:
            break
        todo, history_capacity = again, 2 * history_capacity
    return out


#: Passes of ``replay_totals`` over the states that outgrew its buffer, each with twice the room, before setting them aside.
_TOTALS_TRIES = 4


def _capacities(bounds: np.ndarray, g_lo: int, g_hi: int) -> tuple[int, int]:
    """First buffer sizes for groups ``[g_lo, g_hi)``: (runs, rewards per batch size).

    Every job reports one run that reached the target plus its misses (a few percent); a batch
    size's rewards number at most its group's runs. Retries beyond that make the kernel ask for more.
    """
    jobs = int(bounds[g_hi] - bounds[g_lo])
    return jobs * 9 // 8 + 64, int(np.diff(bounds[g_lo : g_hi + 1]).max()) * 9 // 8 + 64


def _chunks(bounds: np.ndarray, jobs: int) -> list[tuple[int, int]]:
    """Consecutive group ranges of about ``jobs`` jobs each (a group is never split)."""
    out: list[tuple[int, int]] = []
    lo = 0
    n = bounds.size - 1
    while lo < n:
        hi = int(np.searchsorted(bounds, bounds[lo] + jobs, side="left"))
        hi = min(max(hi, lo + 1), n)
        out.append((lo, hi))
        lo = hi
    return out


def _raise_as_reference(
    arrays: GroupArrays, tables: dict[str, WorkloadTable], g: int, code: int, eta: float, beta: float, seed: int | None, policy: PolicyName
) -> None:
    """Replay group ``g`` with the reference, which raises the error the kernel stopped at (``EngineMismatch`` if it does not)."""
    name = arrays.names[g]
    start, end, ratio = arrays.group(g)
    replay_group(tables[arrays.datasets[int(arrays.dataset[g])]], start, end, ratio, eta, beta, group_seed(name, seed), policy)
    raise EngineMismatch(f"the fast replay stopped at group {name!r} (error code {code}) where the reference replays it")


def runs_frame(arrays: GroupArrays, runs: RunArrays, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """The runs as ``replay_groups`` returns them: ``schema``'s columns (group, job, start_time, ..., reached)."""
    names = pl.Series("group", arrays.names, dtype=pl.String)
    columns = {
        "group": names.gather(runs.group),
        "job": runs.job,
        "start_time": runs.start_time,
        "end_time": runs.end_time,
        "bs": runs.bs,
        "pl": runs.pl,
        "energy": runs.energy,
        "time": runs.time,
        "reached": runs.reached,
    }
    return pl.DataFrame({c: columns[c] for c in schema}).cast(schema)  # type: ignore[arg-type]
