"""Tier I/O through fsspec: manifests and files written atomically, read back, removed.

Every write goes to a unique temporary name next to the target and is then moved over
it, so a reader sees the old file or the new one, never half of one; a crash leaves at
most a hidden ``.*.tmp`` file, which nothing reads (Spark skips hidden files) and the
partition's next leader removes (``remove_stale_temps``, rules in ``layout``). fsspec
errors (``OSError`` and its subclasses, and a few filesystems' own) become
``StorageError`` naming the URL.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import IO, Any, TypeVar

import fsspec

from spark_stream.errors import StorageError
from spark_stream.tier.layout import (
    MANIFEST_DIR,
    join,
    manifest_file,
    partition_dir,
    stale_temps,
    temp_name,
)
from spark_stream.tier.manifest import TierManifest

__all__ = [
    "file_size",
    "load_manifest",
    "remove",
    "remove_stale_temps",
    "save_manifest",
    "write_atomic",
]

T = TypeVar("T")


def _guard(url: str, what: str, action: Callable[[], T]) -> T:
    try:
        return action()
    except StorageError:
        raise
    except OSError as exc:
        # strerror, not str(exc): that names the temporary file, a new name each try,
        # and the error is compared between tries (logged once, shown in the status)
        raise StorageError(f"cannot {what} {url}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise StorageError(f"cannot {what} {url}: {exc}") from exc


def write_atomic(url: str, write: Callable[[IO[bytes]], Any], *, epoch: int | None = None) -> None:
    """Write ``url`` through ``write(sink)`` under a temporary name, then move it in place.

    Args:
        url: the file to write.
        write: writes the content to the sink it is given.
        epoch: the writer's leader epoch, in the temporary name (``layout.temp_name``),
            so a later leader knows the file is abandoned if the writer dies.

    Raises:
        StorageError: the file system refused (message: the URL and the cause).
    """

    def run() -> None:
        fs, path = fsspec.core.url_to_fs(url)
        folder, name = path.rsplit("/", 1)
        fs.makedirs(folder, exist_ok=True)
        # hidden (a leading dot), so Spark's and Delta's file listings skip a leftover
        tmp = f"{folder}/{temp_name(name, epoch, uuid.uuid4().hex[:12])}"
        try:
            with fs.open(tmp, "wb") as sink:
                write(sink)
            fs.mv(tmp, path)
        except BaseException:
            try:
                if fs.exists(tmp):
                    fs.rm(tmp)
            except OSError:
                pass  # the original error says more
            raise

    _guard(url, "write", run)


def file_size(url: str) -> int:
    """The size of the file at ``url``."""
    fs, path = fsspec.core.url_to_fs(url)
    return int(_guard(url, "stat", lambda: fs.size(path)))


def remove(url: str) -> None:
    """Delete ``url`` if it exists."""
    fs, path = fsspec.core.url_to_fs(url)

    def run() -> None:
        if fs.exists(path):
            fs.rm(path)

    _guard(url, "remove", run)


def _names(url: str) -> list[str]:
    """The names in the directory ``url`` (none when it does not exist)."""
    fs, path = fsspec.core.url_to_fs(url)

    def run() -> list[str]:
        try:
            entries = fs.ls(path, detail=False)
        except FileNotFoundError:
            return []
        return [str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries]

    return _guard(url, "list", run)


def remove_stale_temps(tier_url: str, partition: int, epoch: int) -> list[str]:
    """Delete the temporary files that writers of ``partition`` up to ``epoch`` left in
    the tier (its data directory and its manifest's), as its leader of ``epoch`` does
    when it starts tiering.

    Returns:
        The removed files' URLs.

    Raises:
        StorageError: the directory cannot be listed or a file cannot be removed.
    """
    removed = []
    for folder, target in (
        (partition_dir(partition), None),
        (MANIFEST_DIR, manifest_file(partition).rsplit("/", 1)[1]),
    ):
        url = join(tier_url, folder)
        for name in stale_temps(_names(url), epoch, target):
            remove(join(url, name))
            removed.append(join(url, name))
    return removed


def load_manifest(tier_url: str, partition: int) -> TierManifest:
    """The manifest of ``partition`` in the tier at ``tier_url`` (empty when there is none).

    Raises:
        StorageError: it cannot be read or is not a manifest.
    """
    url = join(tier_url, manifest_file(partition))

    def run() -> bytes | None:
        fs, path = fsspec.core.url_to_fs(url)
        try:
            with fs.open(path, "rb") as source:
                data: bytes = source.read()
                return data
        except FileNotFoundError:
            return None

    text = _guard(url, "read", run)
    if text is None:
        return TierManifest(partition=partition)
    manifest = TierManifest.from_json(text, url)
    if manifest.partition != partition:
        raise StorageError(f"{url} is the manifest of partition {manifest.partition}")
    return manifest


def save_manifest(tier_url: str, manifest: TierManifest, *, epoch: int | None = None) -> None:
    """Write the manifest of ``manifest.partition`` atomically.

    Args:
        tier_url: the topic's tier directory.
        manifest: the manifest.
        epoch: the writing leader's epoch (``write_atomic``).

    Raises:
        StorageError: the file system refused.
    """
    data = manifest.to_json().encode()
    url = join(tier_url, manifest_file(manifest.partition))
    write_atomic(url, lambda sink: sink.write(data), epoch=epoch)
