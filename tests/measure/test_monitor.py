"""The energy monitor against a fake NVML backend, the counter arithmetic, the power-limit option and RAPL."""

from __future__ import annotations

import sys
import threading
import types
import warnings
from pathlib import Path

import pytest

from pipelines.measure.counters import CounterDelta, counter_delta
from pipelines.measure.monitor import EnergyMonitor, ShortWindowWarning, probe_gpus
from pipelines.measure.nvml import NvmlNoPermission, NvmlNotSupported, NvmlUnavailable
from pipelines.measure.polling import trapezoid_energy_j
from pipelines.measure.power_limit_scope import power_limit
from pipelines.measure.rapl import RaplMeter, open_rapl, package_power_limit_w, probe_rapl
from tests.support.measure_fakes import FakeClock, FakeGpu, FakeMig, FakeNvml, rapl_zone


def constant(watts: float):
    return lambda t, limit: watts


def gpu(clock: FakeClock, power: object = None, **kw: object) -> FakeGpu:
    return FakeGpu("NVIDIA A100-SXM4-40GB", "GPU-0000", power or constant(200.0), clock, **kw)


# --- counter path -------------------------------------------------------------------------------


def test_counter_path_energy_time_and_method() -> None:
    clock = FakeClock(100.0)
    a, b = gpu(clock), FakeGpu("Tesla V100-SXM2-16GB", "GPU-0001", constant(120.0), clock)
    backend = FakeNvml([a, b])
    with EnergyMonitor(backend=backend, clock=clock) as monitor:
        assert [(g.name, g.uuid, g.method) for g in monitor.gpus] == [
            ("NVIDIA A100-SXM4-40GB", "GPU-0000", "counter"),
            ("Tesla V100-SXM2-16GB", "GPU-0001", "counter"),
        ]
        monitor.begin_window("epoch")
        clock.advance(2.5)
        monitor.begin_window("inner")  # windows nest
        clock.advance(1.5)
        inner = monitor.end_window("inner")
        m = monitor.end_window("epoch")
    assert m.time_s == pytest.approx(4.0)
    assert [g.energy_j for g in m.gpus] == pytest.approx([800.0, 480.0])  # 200 W x 4 s, 120 W x 4 s
    assert m.energy_j == pytest.approx(1280.0)
    assert m.average_power_w(0) == pytest.approx(200.0) and m.average_power_w() == pytest.approx(320.0)
    assert [g.method for g in m.gpus] == ["counter", "counter"] and not m.short_window
    assert inner.time_s == pytest.approx(1.5) and inner.gpus[0].energy_j == pytest.approx(300.0)
    assert backend.shutdown_calls == 1
    assert a.set_calls == [] and b.set_calls == []  # measuring never touches the power limit


def test_window_names_are_checked() -> None:
    clock = FakeClock()
    with EnergyMonitor(backend=FakeNvml([gpu(clock)]), clock=clock) as monitor:
        monitor.begin_window("a")
        with pytest.raises(ValueError, match="already open"):
            monitor.begin_window("a")
        with pytest.raises(ValueError, match="no open window named 'b'"):
            monitor.end_window("b")


def test_counter_reset_is_flagged_and_never_negative() -> None:
    clock = FakeClock()
    a = gpu(clock)
    with EnergyMonitor(backend=FakeNvml([a]), clock=clock) as monitor:
        monitor.begin_window("w")  # counter at 5,000,000 mJ
        clock.advance(10.0)
        a.counter_mj = 0.0  # the driver reloaded: the counter restarts
        a._last_t = clock.t - 3.0  # ... 3 s before the window ended (200 W -> 600 J since then)
        m = monitor.end_window("w")
    g = m.gpus[0]
    assert g.counter_reset and g.energy_j == pytest.approx(600.0)
    assert "lower bound" in (g.note or "")


def test_short_and_empty_windows_still_give_a_value() -> None:
    clock = FakeClock()
    with EnergyMonitor(backend=FakeNvml([gpu(clock, constant(200.0))]), clock=clock, counter_resolution_s=0.1) as monitor:
        monitor.begin_window("short")
        clock.advance(0.02)
        with pytest.warns(ShortWindowWarning, match="'short' lasted 0.0200 s"):
            short = monitor.end_window("short")
        monitor.begin_window("empty")
        with pytest.warns(ShortWindowWarning):
            empty = monitor.end_window("empty")
        monitor.begin_window("long")
        clock.advance(1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            long = monitor.end_window("long")
    assert short.short_window and short.gpus[0].energy_j == pytest.approx(4.0) and short.average_power_w(0) == pytest.approx(200.0)
    assert empty.time_s == 0.0 and empty.gpus[0].energy_j == 0.0 and empty.average_power_w(0) is None and empty.short_window
    assert not long.short_window and long.gpus[0].energy_j == pytest.approx(200.0)


def test_counter_delta() -> None:
    assert counter_delta(10, 25) == CounterDelta(15)
    assert counter_delta(262_143_328_000, 1_000, wrap_range=262_143_328_850) == CounterDelta(1_850, "wraparound")
    assert counter_delta(5_000, 40) == CounterDelta(40, "reset")
    with pytest.raises(ValueError):
        counter_delta(-1, 3)


# --- polling path -------------------------------------------------------------------------------


def test_trapezoid_integral_with_edge_interpolation() -> None:
    samples = [(0.0, 100.0), (1.0, 200.0), (2.0, 200.0), (3.0, 50.0)]
    assert trapezoid_energy_j(samples, 0.0, 3.0) == pytest.approx(150.0 + 200.0 + 125.0)
    # power at 0.5 s is 150 W, at 2.5 s 125 W: 0.5 x 175 + 200 + 0.5 x 162.5
    assert trapezoid_energy_j(samples, 0.5, 2.5) == pytest.approx(368.75)
    assert trapezoid_energy_j(samples, 3.0, 5.0) == pytest.approx(100.0)  # the last sample's 50 W held
    assert trapezoid_energy_j(samples, 2.0, 2.0) == 0.0 and trapezoid_energy_j([], 0.0, 1.0) == 0.0


def test_not_supported_falls_back_to_polling_with_a_known_integral() -> None:
    clock = FakeClock()
    series = {0.0: 100.0, 1.0: 200.0, 2.0: 200.0, 3.0: 50.0}
    old = gpu(clock, lambda t, limit: series[t], has_counter=False)
    with EnergyMonitor(backend=FakeNvml([old]), clock=clock, background_polling=False) as monitor:
        info = monitor.gpus[0]
        assert info.method == "polling" and "NOT_SUPPORTED" in (info.note or "")
        monitor.begin_window("w")  # samples 100 W at t=0
        for _ in range(2):
            clock.advance(1.0)
            monitor.sample()
        clock.advance(1.0)
        m = monitor.end_window("w")  # samples 50 W at t=3
    assert m.time_s == 3.0 and m.gpus[0].method == "polling"
    assert m.gpus[0].energy_j == pytest.approx(475.0) and m.average_power_w(0) == pytest.approx(475.0 / 3)
    assert not m.short_window  # 3 s >= the 1 s power averaging of recent GPUs


def test_polling_can_be_forced_and_counter_can_be_required() -> None:
    clock = FakeClock()
    with EnergyMonitor(backend=FakeNvml([gpu(clock)]), method="polling", clock=clock, background_polling=False) as monitor:
        assert monitor.gpus[0].method == "polling"
    backend = FakeNvml([gpu(clock, has_counter=False)])
    with pytest.raises(NvmlNotSupported):
        EnergyMonitor(backend=backend, method="counter", clock=clock)
    assert backend.shutdown_calls == 1


def test_background_thread_samples_between_the_window_edges() -> None:
    """The polling thread's samples, on the fake clock: the thread itself moves the clock 1 s before each
    of its reads, from the window's start (0 s) to 8 s, so every sample lands at a known time and power."""
    clock = FakeClock()
    started, done = threading.Event(), threading.Event()
    thread_reads: list[float] = []

    def power(t: float, limit: float) -> float:
        # A reading asks for the power now (t == clock.t); the fake's counter bookkeeping asks for earlier times.
        if threading.current_thread() is not threading.main_thread() and started.is_set() and not done.is_set() and t == clock.t:
            clock.advance(1.0)  # the poller reads the clock after the power: this sample is at the new time
            t = clock.t
            thread_reads.append(t)
            if t == 8.0:
                done.set()
        return 100.0 if t < 3.0 else 300.0  # a step from 100 W to 300 W at 3 s

    g = FakeGpu("Tesla P100-PCIE-16GB", "GPU-p100", power, clock, has_counter=False)
    with EnergyMonitor(backend=FakeNvml([g]), poll_interval_s=0.001, power_averaging_s=1.0, clock=clock) as monitor:
        monitor.begin_window("w")  # the main thread's edge sample: 100 W at 0 s
        started.set()
        assert done.wait(timeout=30.0), "the polling thread took no samples"
        m = monitor.end_window("w")  # the edge sample at 8 s: 300 W
    assert thread_reads == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    # Samples at every second: 100 W up to 2 s, 300 W from 3 s, linear in between:
    # 100 W x 2 s + (100 + 300) / 2 W x 1 s + 300 W x 5 s = 200 + 200 + 1500 = 1900 J.
    # The two edge samples alone would give (100 + 300) / 2 W x 8 s = 1600 J.
    assert m.time_s == 8.0 and m.gpus[0].method == "polling"
    assert m.gpus[0].energy_j == pytest.approx(1900.0, rel=1e-12)
    assert not m.short_window


# --- no driver, MIG -----------------------------------------------------------------------------


def test_no_driver_or_no_gpu_is_a_clear_typed_error() -> None:
    with pytest.raises(NvmlUnavailable, match="Driver Not Loaded"):
        EnergyMonitor(backend=FakeNvml([], unavailable="Driver Not Loaded"))
    empty = FakeNvml([])
    with pytest.raises(NvmlUnavailable, match="no GPU"):
        EnergyMonitor(backend=empty)
    assert empty.shutdown_calls == 1
    probe = probe_gpus(FakeNvml([], unavailable="Driver Not Loaded"))
    assert not probe.available and probe.gpus == () and "Driver Not Loaded" in (probe.reason or "")


def test_missing_pynvml_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    probe = probe_gpus()
    assert not probe.available and probe.gpus == ()
    assert probe.reason == "the Python module pynvml (package nvidia-ml-py) is not installed"


def test_nvml_that_cannot_start_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    class NVMLError(Exception):
        pass

    def nvml_init() -> None:
        raise NVMLError("Driver Not Loaded")

    stub = types.ModuleType("pynvml")
    stub.NVMLError = NVMLError  # type: ignore[attr-defined]  # a stand-in module
    stub.nvmlInit = nvml_init  # type: ignore[attr-defined]  # likewise
    monkeypatch.setitem(sys.modules, "pynvml", stub)
    probe = probe_gpus()
    assert not probe.available and probe.gpus == ()
    assert probe.reason == "NVML could not start: Driver Not Loaded (is an NVIDIA driver installed and loaded?)"


def test_real_backend_on_this_machine() -> None:
    """The real pynvml: the GPUs when the NVIDIA driver's control device exists, else NVML's own failure.

    Whether a GPU is present is read from /dev/nvidiactl, which the driver creates (and container
    runtimes pass in only with a GPU), not from the code under test.
    """
    probe = probe_gpus()
    if Path("/dev/nvidiactl").exists():
        assert probe.available and probe.reason is None, probe.reason
        assert probe.gpus and all(g.uuid.startswith("GPU-") for g in probe.gpus)
        assert {g.method for g in probe.gpus} <= {"counter", "polling"}
    else:
        assert not probe.available and probe.gpus == ()
        assert (probe.reason or "").startswith("NVML could not start: "), probe.reason


def test_mig_instance_measures_its_parent() -> None:
    clock = FakeClock()
    parent = FakeGpu("NVIDIA A100-SXM4-80GB", "GPU-parent", constant(250.0), clock)
    backend = FakeNvml([parent], [FakeMig("MIG-3g.40gb-1", parent)])
    with EnergyMonitor(["MIG-3g.40gb-1"], backend=backend, clock=clock) as monitor:
        info = monitor.gpus[0]
        monitor.begin_window("w")
        clock.advance(2.0)
        m = monitor.end_window("w")
    assert (info.uuid, info.mig_uuid, info.name) == ("GPU-parent", "MIG-3g.40gb-1", "NVIDIA A100-SXM4-80GB")
    assert "parent GPU GPU-parent" in (info.note or "") and "all its instances" in (info.note or "")
    assert m.gpus[0].energy_j == pytest.approx(500.0)


# --- power limit --------------------------------------------------------------------------------


def test_power_limit_is_restored_even_on_error() -> None:
    clock = FakeClock()
    g = gpu(clock)
    backend = FakeNvml([g])
    with pytest.raises(RuntimeError, match="training crashed"), power_limit(backend, g, 150):
        assert g.limit_mw == 150_000
        raise RuntimeError("training crashed")
    assert g.limit_mw == 250_000 and g.set_calls == [150_000, 250_000]
    with pytest.raises(ValueError, match="outside this GPU's range 100-300 W"), power_limit(backend, g, 350):
        pass
    assert g.set_calls == [150_000, 250_000]  # nothing changed for an out-of-range limit


def test_power_limit_through_the_monitor_and_without_permission() -> None:
    clock = FakeClock()
    g = gpu(clock, lambda t, limit: 0.8 * limit)
    with EnergyMonitor(backend=FakeNvml([g]), clock=clock) as monitor:
        with monitor.power_limit(0, 200) as set_mw:
            assert set_mw == 200_000 and monitor.enforced_power_limit_w(0) == 200.0
            monitor.begin_window("w")
            clock.advance(10.0)
            m = monitor.end_window("w")
        assert monitor.enforced_power_limit_w(0) == 250.0
    assert m.gpus[0].energy_j == pytest.approx(1600.0)  # 0.8 x 200 W x 10 s
    locked = gpu(clock, can_set_limit=False)
    with pytest.raises(NvmlNoPermission, match="CAP_SYS_ADMIN"), power_limit(FakeNvml([locked]), locked, 200):
        pass
    assert locked.limit_mw == 250_000


# --- RAPL ---------------------------------------------------------------------------------------


def test_rapl_packages_with_wraparound(tmp_path: Path) -> None:
    p0 = rapl_zone(tmp_path, "intel-rapl:0", "package-0", 262_143_000_000)
    p1 = rapl_zone(tmp_path, "intel-rapl:1", "package-1", 1_000_000)
    rapl_zone(tmp_path, "intel-rapl:0:0", "core", 5)  # part of package 0: not added again
    rapl_zone(tmp_path, "intel-rapl:2", "psys", 7)  # the whole platform: overlaps the packages
    probe = probe_rapl(tmp_path)
    assert [z.name for z in probe.zones] == ["package-0", "package-1"] and package_power_limit_w(probe) == 250.0
    clock = FakeClock()
    meter = RaplMeter(probe, clock)
    meter.begin_window("w")
    (p0 / "energy_uj").write_text("671150\n")  # wrapped: 328,850 + 671,150 uJ = 1 J
    (p1 / "energy_uj").write_text("3000000\n")  # 2 J
    clock.advance(0.5)
    m = meter.end_window("w")
    assert m.energy_j == pytest.approx(3.0) and m.wrapped and m.average_power_w == pytest.approx(6.0)


def test_rapl_unreadable_gives_none_and_a_reason(tmp_path: Path) -> None:
    meter, reason = open_rapl(tmp_path / "missing")
    assert meter is None and "does not exist" in (reason or "")
    (tmp_path / "empty").mkdir()
    meter, reason = open_rapl(tmp_path / "empty")
    assert meter is None and "no RAPL package zone" in (reason or "")
