"""Profile training throughput and power of a Zeus workload per batch size (and power limit) with torch.

For each (power limit, batch size): build the batch once from synthetic data of the dataset's
shape (in memory, nothing downloaded), run ``warmup`` training iterations (forward, loss,
backward, optimizer step), then ``iters`` measured ones inside one energy window. Then

    samples_per_second = batch_size x iters / window_s
    time_per_epoch     = epoch_size / samples_per_second                     (s)
    average_power      = window_energy_j / window_s                          (W)
    energy_per_epoch   = average_power x time_per_epoch                      (J)

Rows follow the power trace's schema (dataset, network, batch_size, optimizer, power_limit,
time_per_epoch, average_power) plus how they were measured, so they join the train trace like
the published GPUs. Energy: NVML (counter, else polling) on a GPU; RAPL on a CPU when readable;
otherwise ``method = "none"``, ``average_power`` null and the reason in ``note``.

torch is imported inside the functions that use it.
"""

from __future__ import annotations

import platform
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.contracts.base import polars_schema
from pipelines.contracts.measure import MeasuredProfile
from pipelines.home.atomic import atomic_path
from pipelines.home.outputs import OutputKind
from pipelines.measure.monitor import EnergyMonitor, MethodChoice, ShortWindowWarning
from pipelines.measure.nvml import NvmlBackend, NvmlCallError, NvmlNoPermission, NvmlUnavailable
from pipelines.measure.rapl import RAPL_ROOT, RaplMeter, package_power_limit_w, probe_rapl
from pipelines.measure.workloads import OPTIMIZERS, Workload

#: The columns of a measured profile, in file order: the power trace's seven, then provenance (``MeasuredProfile``).
PROFILE_SCHEMA = polars_schema(MeasuredProfile)


class ProfileError(RuntimeError):
    """The profile cannot be taken as asked (bad device, power limits out of range, ...)."""


@dataclass(frozen=True)
class ProfileConfig:
    workload: Workload
    batch_sizes: tuple[int, ...]
    power_limits_w: tuple[int, ...] = ()  # empty: measure at the limit in place
    warmup: int = 3
    iters: int = 10
    device: str = "cuda"
    optimizer: str | None = None  # None: the workload's optimizer in the traces
    gpu: str | None = None  # the ``gpu`` column; None: derived from the device's name
    nvml_gpu: int | str | None = None  # NVML index or UUID of the GPU to measure; None: the torch device's
    method: MethodChoice = "auto"
    poll_interval_s: float = 0.1
    seed: int = 0
    threads: int | None = None  # torch CPU threads (None: torch's default); 1 avoids oversubscription on a busy machine

    def __post_init__(self) -> None:
        if not self.batch_sizes or any(b <= 0 for b in self.batch_sizes):
            raise ProfileError(f"batch sizes must be positive, got {list(self.batch_sizes)}")
        if self.warmup < 0 or self.iters < 1:
            raise ProfileError(f"need warmup >= 0 and iters >= 1, got {self.warmup} and {self.iters}")
        if self.optimizer is not None and self.optimizer not in OPTIMIZERS:
            raise ProfileError(f"unknown optimizer {self.optimizer!r}: one of {', '.join(OPTIMIZERS)}")


@dataclass
class ProfileResult:
    rows: pl.DataFrame
    skipped: list[str] = field(default_factory=list)  # configurations not measured, with the reason
    warnings: list[str] = field(default_factory=list)


def slug(name: str) -> str:
    """A device name as a short lower-case id: ``NVIDIA A100-SXM4-40GB`` -> ``a100-sxm4-40gb``."""
    text = re.sub(r"\((r|tm)\)", " ", name.lower())
    text = re.sub(r"^nvidia\s+", "", text.split("@")[0].strip())
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "unknown"


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


# ---------------------------------------------------------------------------------------------
# energy sources: one interface over NVML, RAPL and "none"


@dataclass(frozen=True)
class Window:
    time_s: float
    energy_j: float | None
    short: bool
    note: str | None = None


class Meter:
    """Times a window and, where it can, measures its energy. ``method``: counter | polling | rapl | none."""

    method: str = "none"
    name: str = ""
    uuid: str | None = None
    note: str | None = None

    def power_limit_w(self) -> int | None:
        return None

    def set_power_limit(self, watts: int) -> AbstractContextManager[object]:
        raise ProfileError("power limits can be set on an NVIDIA GPU only")

    @contextmanager
    def window(self, name: str) -> Iterator[list[Window]]:
        out: list[Window] = []
        start = time.perf_counter()
        yield out
        out.append(Window(time.perf_counter() - start, None, False, self.note))

    def close(self) -> None:
        pass


class NvmlMeter(Meter):
    def __init__(self, monitor: EnergyMonitor) -> None:
        self.monitor = monitor
        info = monitor.gpus[0]
        self.method, self.name, self.uuid, self.note = info.method, info.name, info.uuid, info.note

    def power_limit_w(self) -> int | None:
        return round(self.monitor.enforced_power_limit_w(0))

    def set_power_limit(self, watts: int) -> AbstractContextManager[object]:
        return self.monitor.power_limit(0, watts)

    def power_limit_range_w(self) -> tuple[float, float]:
        lo, hi = self.monitor.backend.power_limit_range_mw(self.monitor.handle(0))
        return lo / 1000, hi / 1000

    @contextmanager
    def window(self, name: str) -> Iterator[list[Window]]:
        out: list[Window] = []
        self.monitor.begin_window(name)
        try:
            yield out
        except BaseException:
            self.monitor.end_window(name)
            raise
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ShortWindowWarning)  # reported per row in short_window
            m = self.monitor.end_window(name)
        gpu = m.gpus[0]
        out.append(Window(m.time_s, gpu.energy_j, gpu.short_window, "; ".join(n for n in (self.note, gpu.note) if n) or None))

    def close(self) -> None:
        self.monitor.close()


class RaplEnergyMeter(Meter):
    method = "rapl"

    def __init__(self, meter: RaplMeter, limit_w: float | None) -> None:
        self.meter, self._limit = meter, limit_w
        self.note = "CPU package energy (RAPL), all packages"

    def power_limit_w(self) -> int | None:
        return round(self._limit) if self._limit else None

    @contextmanager
    def window(self, name: str) -> Iterator[list[Window]]:
        out: list[Window] = []
        self.meter.begin_window(name)
        yield out
        m = self.meter.end_window(name)
        note = (self.note or "") + ("; a counter wrapped around" if m.wrapped else "")
        # RAPL counters update about every 1 ms; below 10 ms a window is rough
        out.append(Window(m.time_s, m.energy_j, m.time_s < 0.01 or m.energy_j == 0, note))


def _cuda_selectors(torch: Any, device: Any) -> list[int | str]:
    """NVML selectors of a torch CUDA device: its UUID (GPU-... or MIG-...), else its index if no remapping."""
    import os

    selectors: list[int | str] = []
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    if uuid is not None:
        selectors += [f"GPU-{uuid}", f"MIG-{uuid}"]
    if not os.environ.get("CUDA_VISIBLE_DEVICES"):
        selectors.append(device.index or 0)
    return selectors


def open_meter(config: ProfileConfig, device: Any, backend: NvmlBackend | None = None, rapl_root: Path = RAPL_ROOT) -> Meter:
    """The energy source for ``device``: NVML for CUDA, RAPL for CPU, or a timer with the reason in ``note``."""
    if device.type == "cuda":
        import torch

        selectors = [config.nvml_gpu] if config.nvml_gpu is not None else _cuda_selectors(torch, device)
        reasons = []
        for sel in selectors:
            try:
                monitor = EnergyMonitor(
                    [sel], backend=backend, method=config.method, poll_interval_s=config.poll_interval_s
                )
                return NvmlMeter(monitor)
            except NvmlUnavailable as exc:
                reasons.append(str(exc))
                break
            except NvmlCallError as exc:  # that UUID form is not known to NVML: try the next
                reasons.append(str(exc))
        meter = Meter()
        meter.name = torch.cuda.get_device_name(device)
        meter.note = "no energy measurement: " + ("; ".join(reasons) or "no NVML selector for this device")
        return meter
    probe = probe_rapl(rapl_root)
    if probe.available:
        rapl = RaplEnergyMeter(RaplMeter(probe), package_power_limit_w(probe))
        rapl.name = cpu_model()
        return rapl
    meter = Meter()
    meter.name = cpu_model()
    meter.note = f"no energy measurement: {probe.reason}"
    return meter


# ---------------------------------------------------------------------------------------------
# the training step


def make_optimizer(name: str, params: Any) -> Any:
    """A torch optimizer by trace name, with torch's default hyperparameters (they do not change the step's cost)."""
    import torch

    factories: dict[str, Callable[[Any], Any]] = {
        "adadelta": torch.optim.Adadelta,
        "adam": torch.optim.Adam,
        "adamw": torch.optim.AdamW,
        "sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    }
    return factories[name](params)


class _Trainer:
    def __init__(self, workload: Workload, optimizer: str, device: Any, seed: int) -> None:
        import torch

        from pipelines.measure.networks import build_network

        torch.manual_seed(seed)
        self.torch, self.device, self.workload = torch, device, workload
        self.model = build_network(workload.network, workload.num_classes).to(device).train()
        self.optimizer = make_optimizer(optimizer, self.model.parameters())
        self.loss = torch.nn.CrossEntropyLoss()

    def batch(self, batch_size: int) -> tuple[Any, Any]:
        torch, w = self.torch, self.workload
        x = torch.randn(batch_size, *w.input_shape, device=self.device)
        y = torch.randint(0, w.num_classes, (batch_size,), device=self.device)
        return x, y

    def step(self, x: Any, y: Any) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        self.loss(self.model(x), y).backward()
        self.optimizer.step()

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)


# ---------------------------------------------------------------------------------------------
# the profile


def profile(
    config: ProfileConfig,
    *,
    progress: bool = True,
    backend: NvmlBackend | None = None,
    rapl_root: Path = RAPL_ROOT,
    meter: Meter | None = None,
) -> ProfileResult:
    """Measure every (power limit, batch size) of ``config``; rows in ``PROFILE_SCHEMA``.

    ``meter`` (default: ``open_meter`` for the device, with ``backend`` / ``rapl_root``) is
    closed when the profile ends.
    """
    import torch
    from tqdm import tqdm

    device = torch.device(config.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ProfileError(f"device {config.device!r}: torch sees no CUDA GPU (torch {torch.__version__}); use --device cpu")
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    w = config.workload
    optimizer = config.optimizer or w.optimizer
    result = ProfileResult(pl.DataFrame(schema=PROFILE_SCHEMA))
    rows: list[dict[str, object]] = []
    meter = meter if meter is not None else open_meter(config, device, backend, rapl_root)
    with ExitStack() as stack:
        stack.callback(meter.close)
        limits: Sequence[int | None] = config.power_limits_w or [None]
        if config.power_limits_w and not isinstance(meter, NvmlMeter):
            result.warnings.append(f"cannot set power limits on {config.device} ({meter.note or 'no NVML'}): measured at the limit in place")
            limits = [None]
        elif config.power_limits_w and isinstance(meter, NvmlMeter):
            lo, hi = meter.power_limit_range_w()
            outside = [w for w in config.power_limits_w if not lo <= w <= hi]
            if outside:
                raise ProfileError(f"power limits {outside} W are outside {meter.name}'s range {lo:g}-{hi:g} W")
        on_gpu = isinstance(meter, NvmlMeter) or device.type == "cuda"
        gpu = config.gpu or (slug(meter.name) if on_gpu else f"cpu-{slug(meter.name)}")
        trainer = _Trainer(w, optimizer, device, config.seed)
        bar = stack.enter_context(
            tqdm(total=len(limits) * len(config.batch_sizes), desc=f"{w.dataset}/{w.network}", unit="config", file=sys.stderr, disable=not progress)
        )
        for limit in limits:
            try:
                setting = meter.set_power_limit(limit) if limit is not None else nullcontext()
                with setting:
                    for bs in config.batch_sizes:
                        row = _measure(trainer, meter, config, bs, optimizer, gpu, limit, result)
                        if row is not None:
                            rows.append(row)
                        bar.update(1)
            except NvmlNoPermission as exc:
                result.warnings.append(f"cannot set power limit {limit} W ({exc}): measured at the limit in place only")
                if not rows:
                    for bs in config.batch_sizes:
                        row = _measure(trainer, meter, config, bs, optimizer, gpu, None, result)
                        if row is not None:
                            rows.append(row)
                break
    result.rows = pl.DataFrame(rows, schema=PROFILE_SCHEMA) if rows else result.rows
    if result.rows.height and result.rows["short_window"].any():
        result.warnings.append("some windows were shorter than the energy meter's resolution (short_window): raise --iters")
    return result


def _measure(
    trainer: _Trainer, meter: Meter, config: ProfileConfig, bs: int, optimizer: str, gpu: str, limit: int | None, result: ProfileResult
) -> dict[str, object] | None:
    torch = trainer.torch
    w = config.workload
    try:
        x, y = trainer.batch(bs)
        for _ in range(config.warmup):
            trainer.step(x, y)
        trainer.synchronize()
        with meter.window(f"{w.dataset}/bs{bs}/pl{limit}") as out:
            for _ in range(config.iters):
                trainer.step(x, y)
            trainer.synchronize()
        del x, y
    except torch.OutOfMemoryError:
        result.skipped.append(f"batch size {bs}" + (f" at {limit} W" if limit else "") + ": out of memory")
        out = []
    if not out:
        if trainer.device.type == "cuda":
            torch.cuda.empty_cache()
        return None
    window = out[0]
    if window.time_s <= 0:
        raise ProfileError(f"batch size {bs}: the measured window lasted {window.time_s} s")
    samples_per_second = bs * config.iters / window.time_s
    time_per_epoch = w.epoch_size / samples_per_second
    average_power = window.energy_j / window.time_s if window.energy_j is not None else None
    return {
        "dataset": w.dataset,
        "network": w.network,
        "batch_size": bs,
        "optimizer": optimizer,
        "power_limit": _first_not_none(meter.power_limit_w(), limit),
        "time_per_epoch": time_per_epoch,
        "average_power": average_power,
        "gpu": gpu,
        "gpu_name": meter.name,
        "gpu_uuid": meter.uuid,
        "device": str(trainer.device),
        "method": meter.method if window.energy_j is not None else "none",
        "samples_per_second": samples_per_second,
        "energy_per_epoch": average_power * time_per_epoch if average_power is not None else None,
        "cpu_threads": torch.get_num_threads(),
        "iterations": config.iters,
        "warmup_iterations": config.warmup,
        "window_s": window.time_s,
        "window_energy_j": window.energy_j,
        "short_window": window.short,
        "power_limit_set": limit is not None,
        "note": window.note,
        "torch_version": torch.__version__,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _first_not_none(*values: int | None) -> int | None:
    return next((v for v in values if v is not None), None)


def profile_csv(rows: pl.DataFrame) -> bytes:
    """A profile as the CSV ``measure profile --out`` writes (the harness's rows: its header is ``PROFILE_SCHEMA``'s)."""
    return rows.write_csv().encode()


def write_profile(rows: pl.DataFrame, target: Path) -> Path:
    """Write a profile as CSV atomically (temp file + rename): a reader never sees half a file."""
    with atomic_path(target) as tmp:
        tmp.write_bytes(profile_csv(rows))
    return target


#: What ``measure profile --out`` writes: a CSV whose first line is the profile's header (an earlier one may be replaced).
PROFILE_FILE = OutputKind.starting_with("measured profile (CSV)", (",".join(PROFILE_SCHEMA.names()) + "\n").encode())
