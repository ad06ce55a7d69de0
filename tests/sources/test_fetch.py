"""Fetching: mirror copy, sha256 verification, atomic replacement, safe and complete tarball unpacking."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from pipelines.home.paths import ProjectPaths
from pipelines.sources.fetch import FetchError, Status, fetch, safe_unpack_tar
from pipelines.sources.manifest import SOURCES_BY_NAME, Source


def make_source(mirror: Path, name: str, data: bytes, *, sha: str | None = None, required: bool = True, unpack: str | None = None) -> Source:
    (mirror / name).parent.mkdir(parents=True, exist_ok=True)
    (mirror / name).write_bytes(data)
    return Source(name, "http://127.0.0.1:9/unreachable", sha or hashlib.sha256(data).hexdigest(), "MIT", required, unpack)


def tar_bytes(members: list[tarfile.TarInfo], payloads: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info in members:
            data = payloads.get(info.name)
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def test_real_manifest_file_from_mirror(mirror: Path, tmp_path: Path) -> None:
    paths = ProjectPaths(tmp_path)
    result = fetch(SOURCES_BY_NAME["zeus/summary_power_v100.csv"], paths, mirror, download=False)
    assert result.status is Status.MIRROR and result.path.read_bytes() == (mirror / "zeus/summary_power_v100.csv").read_bytes()
    again = fetch(SOURCES_BY_NAME["zeus/summary_power_v100.csv"], paths, mirror, download=False)
    assert again.status is Status.CACHED


def test_checksum_mismatch_never_replaces_a_good_file(tmp_path: Path) -> None:
    mirror, paths = tmp_path / "mirror", ProjectPaths(tmp_path / "project")
    good = b"job_id,submission_time\n1,2\n"
    source = make_source(mirror, "itp/x.csv", good)
    assert fetch(source, paths, mirror, download=False).status is Status.MIRROR
    # The mirror now holds a corrupted copy and the local file is deleted: the fetch must fail, leaving nothing.
    (mirror / "itp/x.csv").write_bytes(b"tampered")
    source.raw_path(paths).unlink()
    with pytest.raises(FetchError, match="sha256 mismatch"):
        fetch(source, paths, mirror, download=False)
    assert not source.raw_path(paths).exists()
    assert not list(source.raw_path(paths).parent.glob(".tmp_*"))
    # A good local file stays in place (cached) even though the mirror is bad.
    source.raw_path(paths).write_bytes(good)
    assert fetch(source, paths, mirror, download=False).status is Status.CACHED
    assert source.raw_path(paths).read_bytes() == good


def test_missing_optional_source_says_where_to_put_it(tmp_path: Path) -> None:
    paths = ProjectPaths(tmp_path)
    result = fetch(SOURCES_BY_NAME["acme/trace_kalos.csv"], paths, tmp_path / "empty-mirror", download=False)
    assert result.status is Status.MISSING
    assert "acme/trace_kalos.csv" in result.message and str(tmp_path / "raw/acme/trace_kalos.csv") in result.message
    with pytest.raises(FetchError, match="could not fetch required source"):
        fetch(SOURCES_BY_NAME["zeus/summary_train.csv"], paths, tmp_path / "empty-mirror", download=False)


def test_tarball_unpacks_into_its_own_folder(tmp_path: Path) -> None:
    mirror, paths = tmp_path / "mirror", ProjectPaths(tmp_path / "project")
    a = tar_bytes([tarfile.TarInfo("cluster01.csv")], {"cluster01.csv": b"raw\n"})
    b = tar_bytes([tarfile.TarInfo("cluster01.csv")], {"cluster01.csv": b"elasticflow\n"})
    fetch(make_source(mirror, "itp/a.tar.gz", a, unpack="itp/a"), paths, mirror, download=False)
    fetch(make_source(mirror, "itp/b.tar.gz", b, unpack="itp/b"), paths, mirror, download=False)
    assert (paths.raw / "itp/a/cluster01.csv").read_text() == "raw\n"
    assert (paths.raw / "itp/b/cluster01.csv").read_text() == "elasticflow\n"


def _link(name: str, kind: bytes, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


@pytest.mark.parametrize(
    "member",
    [
        tarfile.TarInfo("../escape.csv"),
        tarfile.TarInfo("/abs.csv"),
        _link("link.csv", tarfile.SYMTYPE, "/etc/passwd"),
        _link("hard.csv", tarfile.LNKTYPE, "ok.csv"),
    ],
    ids=["dotdot", "absolute", "symlink", "hardlink"],
)
def test_unsafe_members_are_refused(tmp_path: Path, member: tarfile.TarInfo) -> None:
    archive = tmp_path / "evil.tar.gz"
    archive.write_bytes(tar_bytes([tarfile.TarInfo("ok.csv"), member], {"ok.csv": b"x\n", "../escape.csv": b"x", "/abs.csv": b"x"}))
    dest = tmp_path / "out"
    with pytest.raises(FetchError, match=r"evil\.tar\.gz: member"):
        safe_unpack_tar(archive, dest)
    assert not dest.exists() and not (tmp_path / "escape.csv").exists()


def test_truncated_tarball_leaves_previous_unpack(mirror: Path, tmp_path: Path) -> None:
    dest = tmp_path / "raw-traces"
    safe_unpack_tar(mirror / "itp/raw-traces.tar.gz", dest)
    before = sorted(p.name for p in dest.iterdir())
    truncated = tmp_path / "raw-traces.tar.gz"
    truncated.write_bytes((mirror / "itp/raw-traces.tar.gz").read_bytes()[:500_000])
    with pytest.raises(FetchError, match="corrupt or truncated archive"):
        safe_unpack_tar(truncated, dest)
    assert sorted(p.name for p in dest.iterdir()) == before
    assert len(before) == 12 and before[0] == ".manifest.json"  # cluster01..10.csv + LICENSE, and the members' hashes
