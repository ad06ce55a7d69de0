"""The profiling harness on CPU: the networks, a real end-to-end profile, the CLI, and the GPU logic over a fake NVML."""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from pipelines.cli.measure import cli as measure
from pipelines.measure.harness import PROFILE_SCHEMA, NvmlMeter, ProfileConfig, ProfileError, profile, slug
from pipelines.measure.monitor import EnergyMonitor
from pipelines.measure.workloads import WORKLOADS
from tests.support.measure_fakes import FakeGpu, FakeNvml, rapl_zone

CIFAR = WORKLOADS["cifar100"]


def n_params(module: object) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.slow
def test_networks_match_the_reference_architectures() -> None:
    import torch  # the measure extra (make test installs it); imported here, not when the suite is collected (2 s per worker)

    from pipelines.measure.networks import ResNet50, ShuffleNetV2, build_network

    # torchvision's shufflenet_v2_x1_0 and resnet50 have exactly these parameter counts
    assert n_params(ShuffleNetV2(1000, stem="imagenet")) == 2_278_604
    assert n_params(ResNet50(1000)) == 25_557_032
    net = build_network("shufflenetv2", 100)
    assert n_params(net) == 2_278_604 - 900 * 1024 - 900  # the same body with a 100-class head
    assert net(torch.randn(2, 3, 32, 32)).shape == (2, 100)
    with pytest.raises(ValueError, match="unknown network"):
        build_network("vgg16", 10)


def test_workload_facts() -> None:
    assert (CIFAR.network, CIFAR.optimizer, CIFAR.epoch_size, CIFAR.input_shape) == ("shufflenetv2", "adadelta", 50_000, (3, 32, 32))
    imagenet = WORKLOADS["imagenet"]
    assert (imagenet.network, imagenet.optimizer, imagenet.epoch_size, imagenet.num_classes) == ("resnet50", "adadelta", 1_281_167, 1000)
    assert slug("NVIDIA A100-SXM4-40GB") == "a100-sxm4-40gb" and slug("Intel(R) Xeon(R) Gold 6226R CPU @ 2.90GHz") == "intel-xeon-gold-6226r-cpu"


def test_cpu_profile_end_to_end_without_rapl(tmp_path: Path) -> None:
    config = ProfileConfig(CIFAR, (2, 4), warmup=1, iters=2, device="cpu", threads=1)
    result = profile(config, progress=False, rapl_root=tmp_path / "no-powercap")
    rows = result.rows
    assert rows.schema == pl.Schema(PROFILE_SCHEMA) and rows.height == 2
    assert rows["batch_size"].to_list() == [2, 4] and set(rows["optimizer"]) == {"adadelta"}
    assert rows["time_per_epoch"].to_list() == pytest.approx((50_000 / rows["samples_per_second"]).to_list(), rel=1e-12)
    assert rows["samples_per_second"].to_list() == pytest.approx((rows["batch_size"] * 2 / rows["window_s"]).to_list(), rel=1e-12)
    assert (rows["window_s"] > 0).all() and rows["method"].to_list() == ["none", "none"]
    assert rows["average_power"].is_null().all() and rows["energy_per_epoch"].is_null().all() and rows["power_limit"].is_null().all()
    assert all("no energy measurement: no RAPL" in n for n in rows["note"]) and rows["gpu"][0].startswith("cpu-")
    assert rows["cpu_threads"].to_list() == [1, 1] and not rows["power_limit_set"].any()


@pytest.mark.parametrize("rapl", ["missing", "readable"])
def test_cli_writes_the_profile_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rapl: str) -> None:
    """On CPU the energy comes from RAPL: here a powercap folder that is missing, or one package zone whose
    counter does not move (0 J) and whose long-term limit is 125 W, instead of this machine's /sys/class/powercap."""
    from pipelines.measure import harness
    from pipelines.measure import rapl as rapl_module

    root = tmp_path / "powercap"
    if rapl == "readable":
        rapl_zone(root, "intel-rapl:0", "package-0", 1_000_000)
    monkeypatch.setattr(harness, "probe_rapl", lambda _root=None: rapl_module.probe_rapl(root))
    out = tmp_path / "measured" / "cpu.csv"
    result = CliRunner().invoke(
        measure,
        ["profile", "--workload", "cifar100", "--batch-sizes", "2", "4", "--device", "cpu", "--warmup", "1", "--iters", "2",
         "--threads", "1", "--quiet", "--gpu-name", "my-cpu", "--out", str(out), "--parents"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = pl.read_csv(out)
    assert rows.columns == list(PROFILE_SCHEMA)
    assert rows["batch_size"].to_list() == [2, 4] and set(rows["gpu"]) == {"my-cpu"}
    assert rows["time_per_epoch"].to_list() == pytest.approx((50_000 / rows["samples_per_second"]).to_list(), rel=1e-12)
    if rapl == "missing":
        assert rows["method"].to_list() == ["none", "none"] and rows["average_power"].is_null().all()
        assert rows["note"].str.starts_with(f"no energy measurement: no RAPL: {root} does not exist").all()
    else:
        assert rows["method"].to_list() == ["rapl", "rapl"] and rows["average_power"].to_list() == [0.0, 0.0]
        assert rows["power_limit"].to_list() == [125, 125] and rows["short_window"].all()  # 0 J: flagged
    assert not list(out.parent.glob(".tmp_*"))  # written atomically: no temp file left


def test_cli_rejects_bad_input(tmp_path: Path) -> None:
    runner = CliRunner()
    published = runner.invoke(measure, ["profile", "--workload", "cifar100", "--batch-sizes", "8", "--gpu-name", "v100", "--out", str(tmp_path / "x.csv")])
    assert published.exit_code == 2 and "published trace" in published.stderr
    bad = runner.invoke(measure, ["profile", "--workload", "cifar100", "--batch-sizes", "0", "--device", "cpu", "--out", str(tmp_path / "x.csv")])
    assert bad.exit_code == 2 and "batch sizes must be positive" in bad.stderr
    with pytest.raises(ProfileError):
        ProfileConfig(CIFAR, (8,), iters=0)


def _fake_gpu_meter(can_set_limit: bool = True) -> tuple[NvmlMeter, FakeGpu]:
    # draws 80% of its power limit; the counter integrates that over real time
    g = FakeGpu("NVIDIA H100 80GB HBM3", "GPU-h100", lambda t, limit: 0.8 * limit, time.monotonic, limit_mw=300_000,
                limit_range_mw=(200_000, 700_000), can_set_limit=can_set_limit)  # fmt: skip
    return NvmlMeter(EnergyMonitor(backend=FakeNvml([g]))), g


def test_power_limits_are_set_measured_and_restored() -> None:
    meter, g = _fake_gpu_meter()
    config = ProfileConfig(CIFAR, (2, 4), (200, 250), warmup=1, iters=2, device="cpu", threads=1)
    result = profile(config, progress=False, meter=meter)
    rows = result.rows
    assert rows.select("power_limit", "batch_size").rows() == [(200, 2), (200, 4), (250, 2), (250, 4)]
    assert rows["method"].to_list() == ["counter"] * 4 and rows["power_limit_set"].all()
    # 80% of each limit; within 2%: the harness reads the counter and its clock one after the other, and a busy machine
    # can run another process between the two (198.5 W for 200 W once, in a window of milliseconds, 3 test workers on 2 cores)
    assert rows["average_power"].to_list() == pytest.approx([160.0, 160.0, 200.0, 200.0], rel=0.02)
    assert rows["energy_per_epoch"].to_list() == pytest.approx((rows["average_power"] * rows["time_per_epoch"]).to_list(), rel=1e-12)
    assert set(rows["gpu"]) == {"h100-80gb-hbm3"} and set(rows["gpu_uuid"]) == {"GPU-h100"}
    assert g.set_calls == [200_000, 300_000, 250_000, 300_000] and g.limit_mw == 300_000  # each limit restored


def test_without_permission_the_limit_in_place_is_measured() -> None:
    meter, g = _fake_gpu_meter(can_set_limit=False)
    config = ProfileConfig(CIFAR, (2,), (200, 250), warmup=0, iters=1, device="cpu", threads=1)
    result = profile(config, progress=False, meter=meter)
    assert result.rows.select("power_limit", "power_limit_set").rows() == [(300, False)]
    assert result.rows["average_power"][0] == pytest.approx(240.0, abs=0.5)
    assert any("cannot set power limit 200 W" in w for w in result.warnings) and g.set_calls == []


def test_power_limits_outside_the_range_fail_before_measuring() -> None:
    meter, g = _fake_gpu_meter()
    config = ProfileConfig(CIFAR, (2,), (250, 800), warmup=0, iters=1, device="cpu", threads=1)
    with pytest.raises(ProfileError, match=r"power limits \[800\] W are outside NVIDIA H100 80GB HBM3's range 200-700 W"):
        profile(config, progress=False, meter=meter)
    assert g.set_calls == []
