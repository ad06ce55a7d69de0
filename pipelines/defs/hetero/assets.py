"""Zeus² (heterogeneous GPUs): the A10/T4 profiles, fetched and ingested (their allocations: ``defs/zeus/hetero_allocations.py``)."""

from pipelines.defs.shared.ingest_assets import ingest_asset, raw_asset
from pipelines.ingest import zeus2

raw_zeus2_profiles = raw_asset("raw_zeus2_profiles", "zeus2", "Zeus² A10/T4 profiles (JSON).")

hetero_gpu_profiles = ingest_asset(
    zeus2.HETERO_SPEC,
    description="Zeus² A10/T4 profiles (cifar, imagenet): energy (J) and time (s) per batch size and power limit (W). "
    "A malformed file is one quarantine row (file, line, key path, reason) and none of its entries.",
    raw=raw_zeus2_profiles,
    read=lambda p: zeus2.ingest_profile_folder(p.raw / "zeus2"),
    sources=[f"zeus2/{name}" for name in zeus2.PROFILE_FILES],
)
