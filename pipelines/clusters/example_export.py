"""A realistic Slurm ``sacct`` export, written fast (vectorized), with the truth about what is in it.

For trying ``whatif`` with no cluster at hand (``gpu-energy example-export FILE``), and used by the tests
(tests/ingest, tests/clusters, tests/cli) and the benchmarks (bench/bench_whatif.py: 1,000,000 allocations,
about 3M lines). The file looks like
``sacct --allusers --parsable2 --format=JobID,JobIDRaw,JobName,User,Account,Partition,Submit,Start,End,Elapsed,State,ExitCode,AllocTRES,NNodes``
on a GPU cluster whose clock runs in ``timezone`` (default Europe/Berlin; the default span crosses the
end of daylight saving time on 2024-10-27, so some local times are ambiguous):

* plain jobs, array elements (``J_7``, JobIDRaw a number of its own), heterogeneous jobs (``J+0``,
  ``J+1``) and pending arrays not yet split (``J_[0-15]``);
* states COMPLETED, FAILED, ``CANCELLED by <uid>``, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, PREEMPTED,
  RUNNING (End ``Unknown``), PENDING (Start and End ``Unknown``, empty AllocTRES), and allocations
  that ended without starting: ``CANCELLED by <uid>`` while pending (Start ``None``) and NODE_FAIL
  before the start (Start ``Unknown``), both with an End;
* AllocTRES with ``gres/gpu:<type>=N,gres/gpu=N`` (both: the same GPUs), only ``gres/gpu=N``, only
  the typed entry, or no GPU at all (CPU jobs); the types of a mixed cluster (``gpu_types``: by
  default A100, V100, A40 and H100, so some jobs have a published profile and some not);
* after each allocation that started, its steps: ``J.batch``, ``J.extern`` and sometimes ``J.0``;
* recurring jobs: each user reruns a few named jobs with a fixed GPU count;
* with ``energy``: Slurm's energy accounting, ``ConsumedEnergyRaw`` of the allocation (J) and
  ``TRESUsageInTot`` of its steps (``energy=`` of the extern step equals the job's, as under
  ``PrologFlags=Contain``; ``gres/gpuutil`` of the batch step, summed over its GPUs), as a cluster
  with the GPU energy plugin writes them (``measured``: a GPU draw of 130-290 W over the run), or
  0 everywhere as a cluster that collects none writes them (``zero``);
* ``delimiter``: sacct's ``--delimiter``; a file name ending in ``.gz``, ``.xz`` or ``.zst`` is
  written compressed.

``write_export`` returns the counts a correct reader must find (computed here, from the generator's
own arrays, not by reading the file back).
"""

from __future__ import annotations

import gzip
import lzma
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.home.atomic import atomic_path
from pipelines.home.outputs import HEAD_BYTES, OutputKind
from pipelines.ingest.common import IngestError
from pipelines.ingest.compressed import decompressed_chunks

FIELDS = ("JobID", "JobIDRaw", "JobName", "User", "Account", "Partition", "Submit", "Start", "End", "Elapsed", "State", "ExitCode",
          "AllocTRES", "NNodes")
#: The energy fields added with ``energy``.
ENERGY_FIELDS = ("ConsumedEnergyRaw", "TRESUsageInTot")
#: (state, share of allocations); CANCELLED is printed "CANCELLED by <uid>"; the *_PENDING ones ended without starting.
STATES: tuple[tuple[str, float], ...] = (
    ("COMPLETED", 0.62), ("FAILED", 0.12), ("CANCELLED", 0.085), ("TIMEOUT", 0.05), ("OUT_OF_MEMORY", 0.015), ("NODE_FAIL", 0.004),
    ("PREEMPTED", 0.01), ("RUNNING", 0.03), ("PENDING", 0.05), ("CANCELLED_PENDING", 0.015), ("NODE_FAIL_PENDING", 0.001),
)
NEVER_STARTED = ("CANCELLED_PENDING", "NODE_FAIL_PENDING")
JOB_NAMES = ("train_resnet50", "bert-finetune", "lm_pretrain", "eval_sweep", "speech_asr", "recsys_ncf", "jupyter", "preprocess")
GPU_TYPES = ("a100", "v100", "a40", "h100")
EPOCH_START = "2024-09-15T00:00:00"  # UTC
SPAN_DAYS = 60


@dataclass(frozen=True)
class Truth:
    """What the file holds, by construction."""

    lines: int
    allocations: int
    steps: int
    pending_arrays: int
    array_elements: int
    het_components: int
    not_ended: int
    never_started: int
    cpu_only: int
    gpu_allocations: int
    completed_gpu_allocations: int
    malformed: int


def _choice(rng: np.random.Generator, values: tuple, p: list[float] | None, n: int) -> np.ndarray:
    return np.asarray(values, dtype=object)[rng.choice(len(values), size=n, p=p)]


def _local(epoch_s: np.ndarray, timezone: str) -> pl.Series:
    """Epoch seconds -> local wall-clock text as sacct prints it (no offset)."""
    utc = pl.Series(epoch_s.astype(np.int64) * 1_000_000).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    return utc.dt.convert_time_zone(timezone).dt.strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(seconds: np.ndarray) -> pl.Series:
    """Seconds -> Slurm Elapsed: [D-]HH:MM:SS."""
    s = pl.Series(seconds.astype(np.int64))
    days, rest = s // 86_400, s % 86_400
    hms = pl.format("{}:{}:{}", (rest // 3600).cast(pl.String).str.zfill(2), ((rest % 3600) // 60).cast(pl.String).str.zfill(2),
                    (rest % 60).cast(pl.String).str.zfill(2))
    frame = pl.DataFrame({"d": days, "hms": pl.select(hms).to_series()})
    return frame.select(pl.when(pl.col("d") > 0).then(pl.format("{}-{}", "d", "hms")).otherwise("hms")).to_series()


def allocations_frame(n: int, seed: int = 7, timezone: str = "Europe/Berlin", span_days: float = SPAN_DAYS,
                      gpu_types: tuple[str, ...] = GPU_TYPES, energy: str | None = None) -> pl.DataFrame:
    """``n`` allocation rows (every column as sacct text) plus helper columns (_kind, _started, _gpus, _state, _order, _energy, _util)."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(4, size=n, p=[0.80, 0.14, 0.05, 0.01])  # plain, array element, het component, pending array
    base = 4_000_000 + np.cumsum(rng.integers(1, 3, size=n))
    index = np.arange(n)
    array_id, element = 9_000_000 + index // 16, index % 16  # arrays of up to 16 elements (the rows of kind 1 in a block)
    het_id, component = 8_000_000 + index // 2, index % 2
    jobid = np.where(kind == 0, base.astype(str), "")
    jobid = np.where(kind == 1, np.char.add(np.char.add(array_id.astype(str), "_"), element.astype(str)), jobid)
    jobid = np.where(kind == 2, np.char.add(np.char.add(het_id.astype(str), "+"), component.astype(str)), jobid)
    jobid = np.where(kind == 3, np.char.add(base.astype(str), "_[0-15]"), jobid)
    raw = np.where(kind == 1, (20_000_000 + index).astype(str), np.where(kind == 2, (30_000_000 + index).astype(str), base.astype(str)))

    state = _choice(rng, tuple(s for s, _ in STATES), [p for _, p in STATES], n).astype(str)
    state = np.where(kind == 3, "PENDING", state)
    never = np.isin(state, NEVER_STARTED)
    pending, running = (state == "PENDING") | never, state == "RUNNING"
    user_i = np.minimum(rng.zipf(1.6, size=n), 400)
    name_i = (user_i * 7 + rng.integers(0, 3, size=n)) % len(JOB_NAMES)  # each user reruns about three named jobs
    user = np.char.add("u", np.char.zfill(user_i.astype(str), 4))
    name = np.asarray(JOB_NAMES, dtype=object)[name_i].astype(str)
    gpu_job = (rng.random(n) < 0.75) & ~pending
    gpus = np.where(gpu_job, np.asarray([1, 2, 4, 8])[(user_i + name_i) % 4], 0)  # a recurring job keeps its GPU count
    gpu_type = np.asarray(gpu_types, dtype=object)[(user_i // 3) % len(gpu_types)].astype(str)
    form = rng.choice(3, size=n, p=[0.6, 0.3, 0.1])  # typed + untyped, untyped only, typed only
    cpus = np.where(gpu_job, gpus * 8, rng.choice([1, 2, 4, 16, 32], size=n))
    cpu_tres = np.char.add(np.char.add(np.char.add("billing=", cpus.astype(str)), np.char.add(",cpu=", cpus.astype(str))),
                           np.char.add(np.char.add(",mem=", (cpus * 8).astype(str)), "G,node=1"))
    typed = np.char.add(np.char.add(np.char.add(",gres/gpu:", gpu_type), "="), gpus.astype(str))
    untyped = np.char.add(",gres/gpu=", gpus.astype(str))
    gres = np.where(form == 0, np.char.add(typed, untyped), np.where(form == 1, untyped, typed))
    tres = np.where(pending, "", np.where(gpu_job, np.char.add(cpu_tres, gres), cpu_tres))

    t0 = pl.Series([EPOCH_START]).str.to_datetime().dt.epoch("s")[0]
    submit = t0 + rng.random(n) * span_days * 86_400
    start = submit + rng.exponential(900, size=n)
    base_duration = np.exp(rng.normal(np.log(1800), 1.6, size=n)).clip(5, 7 * 86_400)
    duration = (base_duration * (0.5 + (name_i + 1) / len(JOB_NAMES))).round()  # a named job has a typical length
    end = start + duration
    submit_text, start_text, end_text = _local(submit, timezone), _local(start, timezone), _local(end, timezone)
    cancelled_by = np.char.add("CANCELLED by ", (1000 + user_i).astype(str))
    state_text = np.where(np.isin(state, ["CANCELLED", "CANCELLED_PENDING"]), cancelled_by, np.where(state == "NODE_FAIL_PENDING",
                                                                                                   "NODE_FAIL", state))
    draw_w = rng.uniform(130, 290, size=n)  # per GPU, while the job runs
    job_energy = np.where(gpu_job & ~pending & ~running, (duration * gpus * draw_w).round(), 0).astype(np.int64)
    util = np.where(gpu_job & ~pending, (draw_w / 3.1).round() * gpus, 0).astype(np.int64)  # gres/gpuutil: % summed over GPUs
    exit_code = np.where(np.isin(state, ["COMPLETED", "RUNNING", "PENDING"]), "0:0", np.where(state == "CANCELLED", "0:15", "1:0"))
    frame = pl.DataFrame(
        {
            "JobID": jobid, "JobIDRaw": raw, "JobName": name, "User": user, "Account": np.char.add("acct", (user_i % 20).astype(str)),
            "Partition": np.where(gpu_job, "gpu", "cpu"), "Submit": submit_text, "Start": start_text, "End": end_text,
            "Elapsed": _elapsed(np.where(pending, 0, np.where(running, duration / 2, duration))), "State": state_text,
            "ExitCode": exit_code, "AllocTRES": tres, "NNodes": np.where(pending, "1", np.maximum(1, gpus // 8).astype(str)),
            "_kind": kind, "_gpus": gpus, "_state": state, "_order": np.arange(n, dtype=np.int64),
            "_steps": np.where(pending, 0, 2 + (rng.random(n) < 0.4)),
            "_energy": job_energy if energy == "measured" else np.zeros(n, dtype=np.int64), "_util": util,
            "_submit": submit,
        }
    )
    start_unknown = pl.when(pl.col("_state") == "CANCELLED_PENDING").then(pl.lit("None")).otherwise(pl.lit("Unknown"))
    # ended without starting: an End some minutes after the submission, nothing allocated
    never_end = _local(submit + 60 + rng.exponential(1800, size=n), timezone)
    frame = frame.with_columns(never_end.alias("_never_end"))
    return frame.with_columns(
        pl.when(pl.col("_state").is_in(["PENDING", *NEVER_STARTED])).then(start_unknown).otherwise(pl.col("Start")).alias("Start"),
        pl.when(pl.col("_state").is_in(["PENDING", "RUNNING"])).then(pl.lit("Unknown"))
        .when(pl.col("_state").is_in(NEVER_STARTED)).then(pl.col("_never_end")).otherwise(pl.col("End")).alias("End"),
        pl.when(pl.col("_state").is_in(NEVER_STARTED)).then(pl.lit("00:00:00")).otherwise(pl.col("Elapsed")).alias("Elapsed"),
    ).drop("_never_end")


def _steps(alloc: pl.DataFrame) -> pl.DataFrame:
    """Each started allocation's steps: .batch and .extern, and .0 for some; steps carry their own state."""
    started = alloc.filter(pl.col("_steps") > 0)
    parts = []
    for k, suffix in enumerate((".batch", ".extern", ".0")):
        rows = started.filter(pl.col("_steps") > k) if k == 2 else started
        parts.append(rows.with_columns(
            (pl.col("JobID") + suffix).alias("JobID"), (pl.col("JobIDRaw") + suffix).alias("JobIDRaw"),
            pl.lit(suffix.strip(".") if k < 2 else "python").alias("JobName"), pl.lit("").alias("User"), pl.lit("").alias("Partition"),
            pl.when(pl.col("_state") == "CANCELLED").then(pl.lit("CANCELLED")).otherwise(pl.col("State")).alias("State"),
            pl.col("AllocTRES").str.replace(r",gres/gpu:[^,]*", "").alias("AllocTRES"),
            (pl.col("_order") * 4 + k + 1).alias("_order"),
            pl.format("cpu=00:01:00,energy={},fs/disk=1024,{}mem=1024K", _step_energy(k),
                      pl.when((k == 0) & (pl.col("_gpus") > 0)).then(pl.format("gres/gpuutil={},", "_util")).otherwise(pl.lit("")))
            .alias("TRESUsageInTot"),
        ))
    return pl.concat(parts)


def _step_energy(k: int) -> pl.Expr:
    """A step's energy=: the extern step spans the job (its energy is the job's); the others a share of it."""
    return pl.col("_energy") if k == 1 else (pl.col("_energy") * (0.97 if k == 0 else 0.9)).round().cast(pl.Int64)


def write_export(path: Path, allocations: int, *, seed: int = 7, timezone: str = "Europe/Berlin", steps: bool = True,
                 parsable: bool = False, malformed: int = 0, span_days: float = SPAN_DAYS, gpu_types: tuple[str, ...] = GPU_TYPES,
                 energy: str | None = None, delimiter: str = "|") -> Truth:
    """Write the export to ``path`` (``--parsable`` form with ``parsable``: every line ends with the delimiter); return its truth.

    Submissions are spread evenly over ``span_days`` days from 2024-09-15 (UTC). ``energy``:
    None, ``measured`` or ``zero`` (see the module docstring). A ``path`` ending in ``.gz``,
    ``.xz`` or ``.zst`` is written compressed.
    """
    return generate_export(lambda text: _write(path, text), allocations, seed=seed, timezone=timezone, steps=steps,
                           parsable=parsable, malformed=malformed, span_days=span_days, gpu_types=gpu_types, energy=energy,
                           delimiter=delimiter)


def generate_export(write: Callable[[bytes], object], allocations: int, *, seed: int = 7, timezone: str = "Europe/Berlin",
                    steps: bool = True, parsable: bool = False, malformed: int = 0, span_days: float = SPAN_DAYS,
                    gpu_types: tuple[str, ...] = GPU_TYPES, energy: str | None = None, delimiter: str = "|") -> Truth:
    """``write_export``'s export, uncompressed, given to ``write`` (``example-export``: to ``write_output``); its truth."""
    alloc = allocations_frame(allocations, seed, timezone, span_days, gpu_types, energy)
    fields = FIELDS + (ENERGY_FIELDS if energy else ())
    rows = alloc.with_columns((pl.col("_order") * 4).alias("_order"), pl.col("_energy").cast(pl.String).alias("ConsumedEnergyRaw"),
                              pl.lit("").alias("TRESUsageInTot"))
    step_rows = (_steps(alloc).with_columns(pl.col("TRESUsageInTot").str.extract(r"energy=(\d+)", 1).alias("ConsumedEnergyRaw"))
                 if steps else rows.clear())
    every = pl.concat([rows, step_rows.select(rows.columns)]).sort("_order")
    end = delimiter if parsable else ""
    lines = every.select(pl.concat_str([pl.col(f) for f in fields], separator=delimiter) + end).to_series()
    if malformed:
        rng = np.random.default_rng(seed + 1)
        at = np.sort(rng.choice(lines.len(), size=malformed, replace=False))
        cut = re.escape(delimiter)
        broken = lines.gather(at).str.replace(rf"{cut}[^{cut}]*$", "")  # one field short
        lines = lines.scatter(at, broken)
    header = delimiter.join(fields) + end
    text = (header + "\n" + "\n".join(lines.to_list()) + "\n").encode()
    write(text)
    broken_alloc = 0
    if malformed:
        is_alloc = every.select(~pl.col("JobID").str.contains(".", literal=True)).to_series()
        broken_alloc = int(is_alloc.gather(at).sum())
    kept = alloc
    if malformed:
        kept = alloc.join(every.with_row_index("_row").filter(pl.col("_row").is_in(at.tolist())).select("_order"),
                          left_on=pl.col("_order") * 4, right_on="_order", how="anti")
    state, gpus = kept["_state"], kept["_gpus"]
    not_ended = state.is_in(["PENDING", "RUNNING"])
    never = state.is_in(list(NEVER_STARTED))
    return Truth(
        lines=every.height + 1,
        allocations=kept.height,
        steps=step_rows.height - (malformed - broken_alloc),
        pending_arrays=int((kept["_kind"] == 3).sum()),
        array_elements=int((kept["_kind"] == 1).sum()),
        het_components=int((kept["_kind"] == 2).sum()),
        not_ended=int(not_ended.sum()),
        never_started=int(never.sum()),
        cpu_only=int((~not_ended & ~never & (gpus == 0)).sum()),
        gpu_allocations=int((~not_ended & ~never & (gpus > 0)).sum()),
        completed_gpu_allocations=int(((state == "COMPLETED") & (gpus > 0)).sum()),
        malformed=malformed,
    )


def _write(path: Path, data: bytes) -> None:
    """``data`` to ``path``, compressed by its suffix (.gz, .xz, .zst), atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(compressed(data, path.suffix))


def compressed(data: bytes, suffix: str) -> bytes:
    """``data`` compressed as a file ending in ``suffix`` is (.gz, .xz, .zst; else as it is)."""
    suffix = suffix.lower()
    if suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    elif suffix == ".xz":
        data = lzma.compress(data)
    elif suffix == ".zst":
        import zstandard

        data = zstandard.ZstdCompressor().compress(data)
    return data


def _is_export(path: Path) -> bool:
    """Whether ``path`` starts as ``write_export`` writes (compressed or not): a header of ``FIELDS``, one delimiter."""
    head = b""
    try:
        for chunk in decompressed_chunks(path):
            head += chunk
            if b"\n" in head or len(head) > HEAD_BYTES:
                break
    except (IngestError, OSError):
        return False
    line = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    delimiter = line[len(FIELDS[0])] if len(line) > len(FIELDS[0]) else ""
    return bool(delimiter) and any(line.rstrip(delimiter) == delimiter.join(FIELDS + extra) for extra in ((), ENERGY_FIELDS))


#: What ``example-export FILE`` writes: an export as ``write_export`` writes it (an earlier one may be replaced).
EXPORT_FILE = OutputKind("generated sacct export (example-export)", _is_export)
