"""Zeus NSDI '23 traces: the raw files, the train and power tables, and Alibaba's recurring groups."""

import polars as pl

from pipelines.defs.shared.ingest_assets import CheckOutcome, TableCheck, ingest_asset, raw_asset
from pipelines.home.paths import ProjectPaths
from pipelines.ingest import alibaba, power_limit_profiles, zeus
from pipelines.ingest.common import IngestResult
from pipelines.vocabulary import PUBLISHED_GPUS

#: Metadata of zeus_power_profiles: the fingerprint of the raw/measured files it read (``zeus.measured_fingerprint``).
MEASURED_FINGERPRINT = "measured_fingerprint"

raw_zeus_traces = raw_asset("raw_zeus_traces", "zeus", "Zeus NSDI '23 train/power traces and alibaba_groups.csv.xz (optional).")


def _power_limits(power: pl.DataFrame) -> CheckOutcome:
    problems = zeus.power_limit_mismatches(power)
    return CheckOutcome(not problems, "each published GPU's power-limit set matches the trace README", {"mismatches": problems})


def _read_alibaba(p: ProjectPaths) -> IngestResult | None:
    path = p.raw / "zeus/alibaba_groups.csv.xz"
    return alibaba.read_groups(path) if path.exists() else None


zeus_train_runs = ingest_asset(
    zeus.TRAIN_SPEC,
    description="Zeus train trace: epoch at which each (workload, batch size, seed) run reached each target metric.",
    raw=raw_zeus_traces,
    read=lambda p: zeus.read_train(p.raw / "zeus/summary_train.csv"),
    sources=["zeus/summary_train.csv"],
)
zeus_power_profiles = ingest_asset(
    zeus.POWER_SPEC,
    description="Zeus power traces of V100, A40, RTX6000 and P100 (and measured GPUs): epoch time and power per (batch size, power limit).",
    raw=raw_zeus_traces,
    read=lambda p: zeus.read_power_profiles(p.raw / "zeus", p.measured),
    sources=[f"zeus/summary_power_{gpu}.csv" for gpu in PUBLISHED_GPUS],
    checks=[TableCheck("published_power_limits", "Each published GPU's power-limit set is as documented.", _power_limits)],
    # what measured_profiles_sensor compares raw/measured with
    extra_metadata=lambda p: {MEASURED_FINGERPRINT: zeus.measured_fingerprint(p.measured)},
)
power_limit_profiles_table = ingest_asset(
    power_limit_profiles.SPEC,
    description="Zeus's own profiles dropped in raw/measured (ZeusMonitor logs of GlobalPowerLimitOptimizer's profiling, its "
    "saved profile JSON, as `measure profile` writes too): energy and time of each power limit's profiling window.",
    raw=raw_zeus_traces,
    read=lambda p: power_limit_profiles.read_power_limit_profiles(p.measured),
)
alibaba_groups = ingest_asset(
    alibaba.ALIBABA_SPEC,
    description="Alibaba recurring-job groups mapped to Zeus workloads (Zeus artifact). Empty until alibaba_groups.csv.xz is supplied.",
    raw=raw_zeus_traces,
    read=_read_alibaba,
    optional_sources=["zeus/alibaba_groups.csv.xz"],
)
