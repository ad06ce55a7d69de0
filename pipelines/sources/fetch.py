"""Fetching every upstream file of the manifest into ``raw/``, verified and atomic.

A file is taken, in order, from ``raw/`` (already fetched, or put there by hand), from the local
mirror (``$TRACES_MIRROR`` or ``../shared/traces``), or from its upstream URL. Every copy is written
to a temp file, checked against the pinned sha256 and only then renamed into place, so a bad
download never replaces a good file. A file in ``raw/`` whose hash is not the pin (edited by hand)
is reported, naming both hashes, before a verified copy replaces it; with no copy to be had the
error says "sha256 mismatch" with both hashes.

Tarballs unpack into their own folder, refusing links and paths that leave it, and record the
sha256 and size of every member in ``<folder>/.manifest.json``. Every ``fetch`` (the raw assets,
``python -m pipelines fetch`` and each ingest before it reads) hashes the unpacked members again
(about 9 MB: tens of milliseconds; size and mtime would miss an edit that keeps them) and restores
a member that is missing or differs from the verified archive, reporting the file and both hashes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tarfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from pipelines.home.atomic import atomic_path
from pipelines.home.paths import ProjectPaths
from pipelines.sources.manifest import Source

#: The record of an unpacked tarball's members, inside the folder it unpacked into.
MANIFEST = ".manifest.json"
_log = logging.getLogger(__name__)
#: Where ``fetch`` reports a file it replaces or restores (the raw assets pass the Dagster log; the CLI, stderr).
Warn = Callable[[str], None]


class FetchError(RuntimeError):
    """A required file could not be fetched or failed its checksum."""


class Status(StrEnum):
    CACHED = "cached"
    REPAIRED = "cached, unpacked members restored"
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
    #: What was replaced or restored on the way, each naming the file and both hashes (also passed to ``warn``).
    notes: tuple[str, ...] = ()

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
    warn: Warn | None = None,
) -> FetchResult:
    """Make ``raw/<source.name>`` present and verified; unpack it if it is a tarball, and verify its members.

    Raises ``FetchError`` for a required source that cannot be had or fails its checksum, and for
    a file in ``raw/`` that differs from its pin when no verified copy can replace it. An optional
    source that cannot be had returns ``Status.MISSING`` with a message saying where to put it.
    ``warn`` (default: this module's logger) hears of every file replaced or restored, before it is.
    """
    notes: list[str] = []

    def note(message: str) -> None:
        notes.append(message)
        (warn or _log.warning)(message)

    target = source.raw_path(paths)
    edited: str | None = None
    if target.exists():
        digest = sha256_of(target)
        if source.sha256 is None or digest == source.sha256:
            restored = _ensure_unpacked(source, paths, digest, note)
            return FetchResult(source, target, Status.REPAIRED if restored else Status.CACHED, digest, notes=tuple(notes))
        edited = digest
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
                if edited is not None:  # said with a verified copy in hand (when none comes, the error below says it)
                    note(
                        f"{source.name}: {target} has sha256 {edited}, not the pinned {source.sha256} (edited by hand?); "
                        f"replacing it with a verified copy from {origin}"
                    )
        except (OSError, FetchError) as exc:
            errors.append(f"{origin}: {exc}")
            continue
        _ensure_unpacked(source, paths, digest, note)
        return FetchResult(source, target, status, digest, notes=tuple(notes))
    tried = "; ".join(errors) if errors else f"no mirror holds it ({mirror or '$TRACES_MIRROR unset'}) and downloads are off"
    if edited is not None:
        raise FetchError(
            f"{source.name}: sha256 mismatch: {target} has {edited}, the pin is {source.sha256}; "
            f"no verified copy to replace it ({tried}). Restore the file, or delete it and fetch again"
        )
    if source.required:
        raise FetchError(f"could not fetch required source {source.name}: {tried}")
    return FetchResult(source, target, Status.MISSING, None, missing_message(source, paths), tuple(notes))


def _ensure_unpacked(source: Source, paths: ProjectPaths, digest: str, note: Warn) -> int:
    """Unpack a verified tarball unless its folder's manifest records this archive; then restore every member
    that is missing or differs from the manifest (``note`` names each, with both hashes). Returns how many were restored."""
    if source.unpack_to is None:
        return 0
    dest = paths.raw / source.unpack_to
    archive = source.raw_path(paths)
    manifest = read_manifest(dest)
    if manifest is None or manifest.get("archive_sha256") != digest:
        safe_unpack_tar(archive, dest, archive_sha256=digest)
        return 0
    problems = changed_members(dest, manifest)
    if not problems:
        return 0
    restore_members(archive, dest, [name for name, _, _ in problems])
    for name, expected, found in problems:
        what = "missing" if found is None else f"sha256 {found}"
        note(
            f"{source.unpack_to}/{name}: {what} instead of {expected} recorded at unpack; "
            f"restored from {source.name} (sha256 {digest})"
        )
    still = changed_members(dest, manifest, only=[name for name, _, _ in problems])
    if still:
        raise FetchError(f"{source.unpack_to}/{still[0][0]}: still differs from the manifest after restoring it from {source.name}")
    return len(problems)


def read_manifest(dest: Path) -> dict | None:
    """The manifest of an unpacked folder (``MANIFEST``), or None when there is none or it is unreadable (then unpack again)."""
    try:
        manifest = json.loads((dest / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and isinstance(manifest.get("members"), dict) else None


def changed_members(dest: Path, manifest: dict, only: list[str] | None = None) -> list[tuple[str, str, str | None]]:
    """(member, sha256 recorded at unpack, sha256 now or None when missing) of every member that differs.

    Every member is hashed: an edit that keeps the size and the mtime is still found.
    """
    problems = []
    for name, recorded in manifest["members"].items():
        if only is not None and name not in only:
            continue
        path = dest / name
        found = sha256_of(path) if path.is_file() else None
        if found != recorded["sha256"]:
            problems.append((name, recorded["sha256"], found))
    return problems


def _member_path(archive: Path, dest: Path, member: tarfile.TarInfo) -> PurePosixPath | None:
    """The relative path of a regular-file member (None for a folder); ``FetchError`` for anything unsafe."""
    rel = PurePosixPath(member.name)
    if rel.is_absolute() or ".." in rel.parts:
        raise FetchError(f"{archive}: member {member.name!r} would leave {dest}")
    if member.isdir():
        return None
    if not member.isfile():
        raise FetchError(f"{archive}: member {member.name!r} is a link or special file; refusing it")
    return rel


def restore_members(archive: Path, dest: Path, names: list[str]) -> None:
    """Extract the members ``names`` of ``archive`` over their copies in ``dest``, each atomically (temp folder + rename)."""
    staging = dest.parent / f".tmp_restore_{dest.name}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    wanted = set(names)
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                rel = _member_path(archive, dest, member)
                if rel is None or str(rel) not in wanted:
                    continue
                tar.extract(member, staging, filter="data")
                target = dest / Path(*rel.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / Path(*rel.parts), target)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise FetchError(f"{archive}: cannot restore members from it: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def safe_unpack_tar(archive: Path, dest: Path, *, archive_sha256: str | None = None) -> list[Path]:
    """Unpack a (gzipped) tarball into ``dest``, replacing it whole; return the files written.

    Only regular files and folders are accepted: links, devices, absolute paths and paths with
    ``..`` raise ``FetchError`` naming the member. Unpacks into a temp folder first, so a corrupt
    or truncated archive leaves ``dest`` as it was. The sha256 and size of every member go into
    ``dest/.manifest.json`` with the archive's sha256 (``archive_sha256``, computed when not given).
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.with_name(f".tmp_{dest.name}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    written: list[Path] = []
    members: dict[str, dict[str, object]] = {}
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                rel = _member_path(archive, dest, member)
                if rel is None:
                    continue
                tar.extract(member, staging, filter="data")
                extracted = staging / Path(*rel.parts)
                members[str(rel)] = {"sha256": sha256_of(extracted), "size": extracted.stat().st_size}
                written.append(dest / Path(*rel.parts))
        manifest = {"archive": archive.name, "archive_sha256": archive_sha256 or sha256_of(archive), "members": members}
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    except (tarfile.TarError, EOFError, OSError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise FetchError(f"{archive}: corrupt or truncated archive: {exc}") from exc
    except FetchError:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)
    return written
