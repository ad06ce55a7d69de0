"""The GPU profiles a replay can run on: the published Zeus power traces and profiles measured here, and which one a
job's exported GPU type replays on.

A *profile* is a GPU of the power trace (``zeus_power_profiles``): the four published ones (v100,
a40, rtx6000, p100) and every GPU measured with ``measure profile`` (``raw/measured/*.csv``, or a
file given to ``whatif --profiles``), under the name in its ``gpu`` column. A measured profile
usually covers some of the six Zeus workloads only: ``workloads`` lists, per profile, those the
simulator can replay on it (a row for the workload's default job), and only those are assigned
to the jobs replayed on it.

An exported GPU type (Slurm's ``gres/gpu:<type>``, the CSV's ``gpu_type``) replays on the profile
of the same GPU when there is one: both names are compared in a normal form (lower case; a
vendor prefix ``nvidia``/``tesla``/``quadro``; a memory, form-factor or memory-kind suffix such as
``-32gb``, ``_80g``, ``-sxm4``, ``-pcie``, ``-hbm3``; and separators dropped), so
``tesla_v100-sxm2-32gb`` is the ``v100`` profile and ``h100_80gb`` a measured ``h100-80gb-hbm3``,
while ``v100s`` or ``rtx6000_ada`` (other GPUs) are not matched. Otherwise, and for an allocation
with several types or none, the job replays on the fallback profile. The report names every
choice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl

from pipelines.clusters.workloads import REFERENCE_GPU, workloads_by_default_tta
from pipelines.ingest.common import IngestError, IngestResult
from pipelines.ingest.power_limit_profiles import read_profile
from pipelines.ingest.zeus import MEASURED_SOURCE_PREFIX, measured_csvs, read_measured_file
from pipelines.vocabulary import PUBLISHED_GPUS
from pipelines.zeus.groups import group_job_spec
from pipelines.zeus.limit_selectors import Measurement, Selector, at_max_limit, choose
from pipelines.zeus.traces import POWER_COLUMNS, TraceError, Traces, build_table

#: The row of a job whose allocation names no GPU type.
UNTYPED = "untyped"
_VENDOR = re.compile(r"^(?:nvidia|tesla|quadro|geforce)[-_ ]*")
_SUFFIX = re.compile(r"[-_ ]*(?:\d+(?:gb|g)|sxm\d*|pcie|nvl|hbm\d*e?|pci-?e)$")


def profile_key(name: str) -> str:
    """The normal form two GPU names are compared in (see the module docstring): ``Tesla_V100-SXM2-32GB`` -> ``v100``."""
    key = name.strip().lower()
    while (shorter := _VENDOR.sub("", key)) != key:
        key = shorter
    while (shorter := _SUFFIX.sub("", key)) != key and shorter:
        key = shorter
    return re.sub(r"[^a-z0-9]", "", key)


#: The workload a power-limit-only row's jobs play in the report (its jobs keep their own work; only the limit changes).
POWER_LIMIT_ONLY = "power-limit-only"


@dataclass(frozen=True)
class PowerLimitOnly:
    """A GPU whose jobs replay power-limit-only on a measured profile, as Zeus's GlobalPowerLimitOptimizer runs them.

    ``measurements``: one profiling window per limit (``pipelines.zeus.limit_selectors``), from Zeus's
    profile JSON, a ZeusMonitor log or a ``measure profile`` CSV; ``world_size``: the GPUs their
    energy sums (a JSON does not say: 1 is assumed, ``assumed_world_size``); ``source``: the file.
    """

    gpu: str
    measurements: tuple[Measurement, ...]
    world_size: int
    source: str
    assumed_world_size: bool = False

    def selector(self, eta: float) -> Selector:
        """The optimizer's default selector, ZeusCost(eta, world size)."""
        return Selector("zeus-cost", eta=eta, world_size=self.world_size)

    def converged_ratio(self, eta: float) -> float:
        """Energy at the chosen limit over energy at the highest (the saving once the group's profile is saved)."""
        limit = choose(self.measurements, self.selector(eta))
        chosen = next(m for m in self.measurements if m.power_limit_w == limit)
        return chosen.energy_j / at_max_limit(self.measurements).energy_j


def power_limit_profiles(specs: Sequence[str]) -> dict[str, PowerLimitOnly]:
    """``GPU=FILE`` (``whatif --profiles``) -> each GPU's power-limit-only profile; ``IngestError``/``ValueError`` on bad input."""
    out: dict[str, PowerLimitOnly] = {}
    for spec in specs:
        gpu, _, file = spec.partition("=")
        gpu = gpu.strip().lower()
        if not gpu or not file:
            raise ValueError(f"--profiles {spec!r}: give GPU=FILE for a Zeus profile (its JSON or a ZeusMonitor log), or a measured CSV")
        if gpu in out:
            raise ValueError(f"--profiles: {gpu} given twice")
        path = Path(file)
        if not path.is_file():
            raise ValueError(f"--profiles {spec}: {file}: " + ("no such file" if not path.exists() else
                                                                "not a regular file (a FIFO, device or stdin): give the profile's file"))
        profile = read_profile(path)
        out[gpu] = PowerLimitOnly(gpu, profile.measurements, profile.world_size or 1, path.name, profile.world_size is None)
    return out


@dataclass(frozen=True)
class Profiles:
    """The trace tables the replay reads (published and measured power rows), and what each profile offers.

    ``sources``: per profile, ``published`` or the measured file(s) it came from; ``workloads``:
    per profile, the workloads it can replay, shortest default TTA (on the V100) first; ``notes``:
    measured rows left out, and why (shown in the report).
    """

    traces: Traces
    sources: dict[str, str]
    workloads: dict[str, tuple[str, ...]]
    notes: tuple[str, ...] = field(default=())
    #: GPUs replayed power-limit-only on a measured profile (``whatif --profiles GPU=FILE``); they take precedence.
    power_limit: dict[str, PowerLimitOnly] = field(default_factory=dict)

    def names(self) -> list[str]:
        return sorted({*self.workloads, *self.power_limit})

    def with_power_limit(self, power_limit: dict[str, PowerLimitOnly]) -> Profiles:
        """These profiles plus GPUs replayed power-limit-only (named so in ``sources``)."""
        sources = {**self.sources, **{g: f"power limit only (measured profile {p.source}"
                                      f"{'; its energy taken as 1 GPU' if p.assumed_world_size else ''})" for g, p in power_limit.items()}}
        return replace(self, sources=sources, power_limit={**self.power_limit, **power_limit})

    def measured(self, gpu: str) -> bool:
        return self.sources.get(gpu, "published") != "published"

    def for_type(self, gpu_type: str | None) -> str | None:
        """The profile of an exported GPU type (see the module docstring), or None (several types, none, or no profile)."""
        if gpu_type is None or "," in gpu_type:
            return None
        names = self.names()
        if gpu_type in names:
            return gpu_type
        key = profile_key(gpu_type)
        matches = sorted(name for name in names if profile_key(name) == key)
        return matches[0] if matches else None


def replayable_workloads(traces: Traces, gpu: str, order: Sequence[str]) -> tuple[str, ...]:
    """The workloads of ``order`` whose default job the simulator can build on ``gpu`` (in ``order``)."""
    found = []
    for dataset in order:
        try:
            build_table(traces, gpu, group_job_spec(traces, gpu, dataset))
        except (TraceError, ValueError):
            continue
        found.append(dataset)
    return tuple(found)


def profiles_of(traces: Traces, sources: dict[str, str] | None = None, notes: Iterable[str] = ()) -> Profiles:
    """The profiles of ``traces`` (every GPU of its power rows; ``sources`` names the measured ones)."""
    order = workloads_by_default_tta(traces, REFERENCE_GPU)
    named = dict(sources or {})
    workloads = {gpu: replayable_workloads(traces, gpu, order) for gpu in traces.gpus()}
    workloads = {gpu: w for gpu, w in workloads.items() if w}
    return Profiles(traces, {gpu: named.get(gpu, "published") for gpu in workloads}, workloads, tuple(notes))


def _strict(result: IngestResult, display: str) -> pl.DataFrame:
    if result.quarantine.height:
        row = result.quarantine.row(0, named=True)
        more = f" ({result.quarantine.height} rows rejected in all)" if result.quarantine.height > 1 else ""
        raise IngestError(row["source_file"] or display, f"{row['reason']}{more}", line=row["line"], column=row["column"])
    return result.table


def with_measured(traces: Traces, files: Sequence[Path], folder: Path | None, *, source_name: str = "measured") -> Profiles:
    """``traces`` plus measured profiles: each of ``files`` (strict: a row that fails validation, a published GPU's name
    or a configuration given twice raises ``IngestError`` naming the file and line), then every ``*.csv`` of ``folder``
    but ZeusMonitor logs (``raw/measured``; its rows that fail are left out and named in ``notes``, as the pipeline quarantines them).

    The same reader and checks as the ingest of ``raw/measured`` (``pipelines.ingest.zeus.read_measured_file``). A GPU
    the traces already have (the materialized ``zeus_power_profiles`` holds the measured rows too) is kept from there.
    """
    seen: dict[tuple, str] = {}
    frames: list[pl.DataFrame] = []
    notes: list[str] = []
    for path in files:
        result, _ = read_measured_file(path, str(path), seen)
        frames.append(_strict(result, str(path)))
    if folder is not None and folder.is_dir():
        for path in measured_csvs(folder):  # ZeusMonitor logs there are not measured profiles
            result, _ = read_measured_file(path, f"{source_name}/{path.name}", seen)
            for row in result.quarantine.iter_rows(named=True):
                notes.append(f"{row['source_file']}:{row['line']}: {row['reason']} (left out)")
            frames.append(result.table)
    known = set(traces.gpus())
    measured = pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()
    sources: dict[str, str] = {}
    if measured.height:
        skipped = sorted(set(measured["gpu"]) & known)
        notes += [f"measured {gpu}: already in the power trace read (kept from there)" for gpu in skipped]
        measured = measured.filter(~pl.col("gpu").is_in(list(known)))
        for gpu, source in measured.group_by("gpu").agg(pl.col("source").unique().sort()).iter_rows():
            sources[gpu] = ", ".join(s.removeprefix(MEASURED_SOURCE_PREFIX) for s in source)
    for gpu in known - set(PUBLISHED_GPUS):
        sources.setdefault(gpu, "measured (in the power trace read)")
    power = pl.concat([traces.power, measured.select(POWER_COLUMNS)], how="vertical_relaxed") if measured.height else traces.power
    return profiles_of(Traces(traces.train, power), sources, notes)
