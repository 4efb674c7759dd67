"""Tier I/O through fsspec: manifests and files written atomically, read back, removed.

Every write goes to a unique temporary name next to the target and is then moved over
it, so a reader sees the old file or the new one, never half of one; a crash leaves at
most a hidden ``.*.tmp`` file, which nothing reads (Spark skips hidden files). fsspec
errors (``OSError`` and its subclasses, and a few filesystems' own) become
``StorageError`` naming the URL.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import IO, Any, TypeVar

import fsspec

from spark_stream.errors import StorageError
from spark_stream.tier.layout import join, manifest_file
from spark_stream.tier.manifest import TierManifest

__all__ = [
    "TMP_SUFFIX",
    "file_size",
    "load_manifest",
    "remove",
    "save_manifest",
    "write_atomic",
]

TMP_SUFFIX = ".tmp"
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


def write_atomic(url: str, write: Callable[[IO[bytes]], Any]) -> None:
    """Write ``url`` through ``write(sink)`` under a temporary name, then move it in place.

    Raises:
        StorageError: the file system refused (message: the URL and the cause).
    """

    def run() -> None:
        fs, path = fsspec.core.url_to_fs(url)
        folder, name = path.rsplit("/", 1)
        fs.makedirs(folder, exist_ok=True)
        # hidden (a leading dot), so Spark's and Delta's file listings skip a leftover
        tmp = f"{folder}/.{name}.{uuid.uuid4().hex[:12]}{TMP_SUFFIX}"
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


def save_manifest(tier_url: str, manifest: TierManifest) -> None:
    """Write the manifest of ``manifest.partition`` atomically.

    Raises:
        StorageError: the file system refused.
    """
    data = manifest.to_json().encode()
    write_atomic(join(tier_url, manifest_file(manifest.partition)), lambda sink: sink.write(data))
