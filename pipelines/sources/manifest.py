"""The manifest of every upstream file: where it comes from, its pinned sha256 and license.

``name`` is a file's path below ``raw/`` and below the mirror (``$TRACES_MIRROR`` or
``../shared/traces``). Fetching, verifying and unpacking are ``pipelines.sources.fetch``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipelines.home.paths import ProjectPaths

_ZEUS = "https://github.com/ml-energy/zeus/raw/master/examples/research_reproducibility/zeus_nsdi23/trace"
_ITP = "https://github.com/microsoft/elasticflow-traces/raw/main/data"
_ACME = "https://github.com/InternLM/AcmeTrace/raw/master/data"
_ZEUS2 = "https://github.com/AditiR-42/zeus_extension/raw/master/trace_aws"


@dataclass(frozen=True)
class Source:
    """One upstream file.

    ``name`` is its path below ``raw/`` and below the mirror. ``sha256`` is None only for files we
    could not pin (not in the mirror); their hash is computed and reported instead of checked.
    ``unpack_to`` names the folder below ``raw/`` that a tarball unpacks into.
    """

    name: str
    url: str
    sha256: str | None
    license: str
    required: bool
    unpack_to: str | None = None

    def raw_path(self, paths: ProjectPaths) -> Path:
        return paths.raw / self.name


SOURCES: tuple[Source, ...] = (
    Source("zeus/summary_train.csv", f"{_ZEUS}/summary_train.csv",
           "076b35615349ee624403006e5ad67fd9ebda92af690c7750f8bb0c2ab92c0cf4", "Apache-2.0", True),
    Source("zeus/summary_power_a40.csv", f"{_ZEUS}/summary_power_a40.csv",
           "f4ec111fc9b06b353182faab9160ecb1236a486b2741ed93383b80497332031e", "Apache-2.0", True),
    Source("zeus/summary_power_p100.csv", f"{_ZEUS}/summary_power_p100.csv",
           "158e9a6784b6e2d26710529b132cf173b227dc8688f4931c19a637bce2b7503b", "Apache-2.0", True),
    Source("zeus/summary_power_rtx6000.csv", f"{_ZEUS}/summary_power_rtx6000.csv",
           "edccecc7f8b7a6102962b03f0f37767dd9cd2f03469ebccadc9805e82901bdc4", "Apache-2.0", True),
    Source("zeus/summary_power_v100.csv", f"{_ZEUS}/summary_power_v100.csv",
           "f0b066dd1a451bd78f730e001ac3a7c411979bc7f0846f12c1a9fb604aa90628", "Apache-2.0", True),
    Source("zeus/alibaba_groups.csv.xz", f"{_ZEUS}/alibaba_groups.csv.xz", None, "Apache-2.0", False),
    Source("itp/raw-traces.tar.gz", f"{_ITP}/raw-traces.tar.gz",
           "67398e1a89245c50ae0881bf997e6cda0c95f9f47980af5bc56d67998965669f", "MIT", True,
           unpack_to="itp/raw-traces"),
    Source("itp/elasticflow-traces.tar.gz", f"{_ITP}/elasticflow-traces.tar.gz",
           "e9c20b73de61d2702aef086aebc995cbc432affbd0f09969cf30879c5d1a83c4", "MIT", True,
           unpack_to="itp/elasticflow-traces"),
    Source("acme/cluster_summary.csv", f"{_ACME}/cluster_summary.csv",
           "cde7a7d4ba1596ea165cf4583137d2095020abebbc26b3cd834284c16e8e6ecf", "CC-BY-4.0", True),
    Source("acme/trace_seren.csv", f"{_ACME}/job_trace/trace_seren.csv", None, "CC-BY-4.0", False),
    Source("acme/trace_kalos.csv", f"{_ACME}/job_trace/trace_kalos.csv", None, "CC-BY-4.0", False),
    # AcmeTrace's measured distributions (DCGM and IPMI, 15 s samples): pickles, read only by
    # pipelines.ingest.pickled (numpy arrays only) after their sha256 is checked.
    *(Source(f"acme/util_pkl/{name}.pkl", f"{_ACME}/utilization/util_pkl/{name}.pkl", sha, "CC-BY-4.0", True) for name, sha in (
        ("gpu_power_seren", "e12bc85ee521b0eb4141b4ab50e68f4965c123ac2c667eb182fe6382090d03aa"),
        ("gpu_power_kalos", "8d37bcbb9e35bb8425c826df33caa2da8dfc1334f1a656bb1a719deb4d341efe"),
        ("server_power", "d04af0ace53cc7ced6e134cbddd4abdc621c8c7386930a307254b059145ba671"),
        ("util_gpu_seren", "1c32e7cc551397f814895c3f93a9e2765c0c0f1e38d251f5b563db33f558cbaf"),
        ("util_gpu_kalos", "de05ff0592a107a602a40ee63a9f3e9f2f13120d2ae999d3aff6bef831918028"),
        ("util_gpu_philly", "c693dbb97c91b4c50d1ef702ad18721c3461caa5ba29240268d1f8d13ac81283"),
    )),
    Source("zeus2/cifar_a10.json", f"{_ZEUS2}/cifar_a10.json",
           "204a1f3adc77c65759e474d157a93d74472fd966ebc7e1f0c2d6531aaa2c62a9", "Apache-2.0", True),
    Source("zeus2/cifar_t4.json", f"{_ZEUS2}/cifar_t4.json",
           "625a44cf8c9459a53b129648338b093d88efe444f5a0aa1f1f9a24b7d810b525", "Apache-2.0", True),
    Source("zeus2/imagenet_a10.json", f"{_ZEUS2}/imagenet_a10.json",
           "c40eba7aaeb67647c5eaea4c0be65d5ce24cf5db1ee3da825124f7cd975095f4", "Apache-2.0", True),
    Source("zeus2/imagenet_t4.json", f"{_ZEUS2}/imagenet_t4.json",
           "734f94e96286484230b27893d3be54a571b749ee2c8ad80f46f29404a28a7641", "Apache-2.0", True),
)

SOURCES_BY_NAME: dict[str, Source] = {s.name: s for s in SOURCES}
