"""The manifest of every upstream file, and fetching it into ``raw/``, verified and atomic.

A file is taken, in order, from ``raw/`` (already fetched, or put there by hand), from the local
mirror (``$TRACES_MIRROR`` or ``../shared/traces``), or from its upstream URL. Every copy is written
to a temp file, checked against the pinned sha256 and only then renamed into place, so a bad
download never replaces a good file. Tarballs unpack into their own folder, refusing links and
paths that leave it.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import urllib.request
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from pipelines.paths import ProjectPaths
from pipelines.storage import atomic_path

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


class FetchError(RuntimeError):
    """A required file could not be fetched or failed its checksum."""


class Status(StrEnum):
    CACHED = "cached"
    MIRROR = "copied from mirror"
    DOWNLOADED = "downloaded"
    MISSING = "missing"


@dataclass(frozen=True)
class FetchResult:
    source: Source
    path: Path
    status: Status
    sha256: str | None
    message: str = ""

    @property
    def available(self) -> bool:
        return self.status is not Status.MISSING


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def missing_message(source: Source, paths: ProjectPaths) -> str:
    return (
        f"optional source {source.name} is not available: put the file at {source.raw_path(paths)} "
        f"(upstream: {source.url}) or in the mirror folder ($TRACES_MIRROR/{source.name}); "
        "the tables that need it are written empty until then"
    )


def _verify(source: Source, candidate: Path, origin: str) -> str:
    digest = sha256_of(candidate)
    if source.sha256 is not None and digest != source.sha256:
        raise FetchError(
            f"{source.name}: sha256 mismatch for the copy from {origin}: expected {source.sha256}, got {digest}"
        )
    return digest


def _download(url: str, target: Path, timeout_s: float) -> None:
    with urllib.request.urlopen(url, timeout=timeout_s) as response, open(target, "wb") as out:
        shutil.copyfileobj(response, out, length=1 << 20)


def fetch(
    source: Source,
    paths: ProjectPaths,
    mirror: Path | None = None,
    *,
    download: bool = True,
    timeout_s: float = 60.0,
) -> FetchResult:
    """Make ``raw/<source.name>`` present and verified; unpack it if it is a tarball.

    Raises ``FetchError`` for a required source that cannot be had or fails its checksum. An
    optional source that cannot be had returns ``Status.MISSING`` with a message saying where to put it.
    """
    target = source.raw_path(paths)
    if target.exists():
        digest = sha256_of(target)
        if source.sha256 is None or digest == source.sha256:
            _maybe_unpack(source, paths, digest)
            return FetchResult(source, target, Status.CACHED, digest)
    errors: list[str] = []
    attempts: list[tuple[Status, str]] = []
    if mirror is not None and (mirror / source.name).is_file():
        attempts.append((Status.MIRROR, str(mirror / source.name)))
    if download:
        attempts.append((Status.DOWNLOADED, source.url))
    for status, origin in attempts:
        try:
            with atomic_path(target) as tmp:
                if status is Status.MIRROR:
                    shutil.copyfile(origin, tmp)
                else:
                    _download(origin, tmp, timeout_s)
                digest = _verify(source, tmp, origin)
        except (OSError, FetchError) as exc:
            errors.append(f"{origin}: {exc}")
            continue
        _maybe_unpack(source, paths, digest)
        return FetchResult(source, target, status, digest)
    if source.required:
        raise FetchError(f"could not fetch required source {source.name}: " + "; ".join(errors or ["no origin"]))
    return FetchResult(source, target, Status.MISSING, None, missing_message(source, paths))


def _maybe_unpack(source: Source, paths: ProjectPaths, digest: str) -> None:
    if source.unpack_to is None:
        return
    dest = paths.raw / source.unpack_to
    stamp = dest / ".sha256"
    if stamp.is_file() and stamp.read_text().strip() == digest:
        return
    safe_unpack_tar(source.raw_path(paths), dest)
    stamp.write_text(digest + "\n")


def safe_unpack_tar(archive: Path, dest: Path) -> list[Path]:
    """Unpack a (gzipped) tarball into ``dest``, replacing it whole; return the files written.

    Only regular files and folders are accepted: links, devices, absolute paths and paths with
    ``..`` raise ``FetchError`` naming the member. Unpacks into a temp folder first, so a corrupt
    or truncated archive leaves ``dest`` as it was.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.with_name(f".tmp_{dest.name}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    written: list[Path] = []
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                rel = PurePosixPath(member.name)
                if rel.is_absolute() or ".." in rel.parts:
                    raise FetchError(f"{archive}: member {member.name!r} would leave {dest}")
                if member.isdir():
                    continue
                if not member.isfile():
                    raise FetchError(f"{archive}: member {member.name!r} is a link or special file; refusing it")
                tar.extract(member, staging, filter="data")
                written.append(dest / Path(*rel.parts))
    except (tarfile.TarError, EOFError, OSError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise FetchError(f"{archive}: corrupt or truncated archive: {exc}") from exc
    except FetchError:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)
    return written
